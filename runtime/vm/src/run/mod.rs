//! Running a loaded module: the [`Runtime`](engine::Runtime) (engines, linker, pool), the host
//! functions of `gamechain_v1` and the per-call store data, fuel and traps, and the
//! [`WasmModule`](module::WasmModule) call driver.
//!
//! | file | owns |
//! |---|---|
//! | `engine.rs` | [`Runtime`](engine::Runtime): the wasmtime engines and their linkers |
//! | `pool.rs` | pool slots, idle warm instances, the lease a call runs in |
//! | `warm.rs` | an instance's export handles, a warm instance, the pristine snapshot |
//! | `limits.rs` | the per-store resource limiter |
//! | `bounds.rs` | the per-call bounds: bytes written, events, key length, output |
//! | `nesting.rs` | a call's place in a chain of `call_pure`s, the callee and resolver as host functions see them, [`PureOutcome`](nesting::PureOutcome) |
//! | `host.rs` | the per-call store data and the helpers every host function uses |
//! | `fuel.rs` | the store's fuel counter: the instrumented module's `fuel` global |
//! | `imports.rs` | the `gamechain_v1` host functions, registered on the linker |
//! | `pure.rs` | `call_pure` (read-only calls into other modules), `call_code`, `verify_signed` |
//! | `trap.rs` | [`HostTrap`](trap::HostTrap), [`HostError`](trap::HostError), the fixed texts |
//! | `load_error.rs` | [`LoadError`](load_error::LoadError): why a module was refused at load |
//! | `module.rs` | [`WasmModule`](module::WasmModule): load, call, reset, `impl GameModule`; [`ModuleResolver`](module::ModuleResolver) |
//!
//! Imports run one way, each file using only files above it here: `trap.rs`; `limits.rs`,
//! `bounds.rs`, `load_error.rs`, `nesting.rs`, `fuel.rs`; `host.rs`; `warm.rs`; `pool.rs`; `pure.rs`;
//! `imports.rs`; `engine.rs`; `module.rs`. The host side reaches a module it calls only through
//! the traits of `nesting.rs` (`tests/tests/source_tree.rs` checks that no file cycle returns).

pub(crate) mod bounds;
pub(crate) mod engine;
pub(crate) mod fuel;
pub(crate) mod host;
pub(crate) mod imports;
pub(crate) mod limits;
pub(crate) mod load_error;
pub(crate) mod module;
pub(crate) mod nesting;
pub(crate) mod pool;
pub(crate) mod pure;
pub(crate) mod trap;
pub(crate) mod warm;
