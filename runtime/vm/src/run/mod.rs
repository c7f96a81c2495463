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
//! | `host.rs` | the per-call store data and the helpers every host function uses |
//! | `imports.rs` | the `gamechain_v1` host functions, registered on the linker |
//! | `pure.rs` | `call_pure` (read-only calls into other modules), `verify_signed`, [`ModuleResolver`](pure::ModuleResolver) |
//! | `trap.rs` | [`HostTrap`](trap::HostTrap), [`HostError`](trap::HostError), the fixed texts |
//! | `load_error.rs` | [`LoadError`](load_error::LoadError): why a module was refused at load |
//! | `module.rs` | [`WasmModule`](module::WasmModule): load, call, reset, `impl GameModule` |

pub(crate) mod bounds;
pub(crate) mod engine;
pub(crate) mod host;
pub(crate) mod imports;
pub(crate) mod limits;
pub(crate) mod load_error;
pub(crate) mod module;
pub(crate) mod pool;
pub(crate) mod pure;
pub(crate) mod trap;
pub(crate) mod warm;
