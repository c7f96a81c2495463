//! The integration tests of `gamechain-runtime`: one test binary, `runtime` (`cargo test -p
//! gamechain-runtime --test runtime`; one file's tests by module path, e.g. `… --test runtime
//! hostile::`). The hand-written modules they load are WAT text under `wat/`; `bombs/` makes the
//! compile bombs (shared with `runtime/benches/compile_bombs.rs` and two tests of other crates).

mod bombs;

mod code_calls;
mod compile_bombs;
mod hostile;
mod instance_reuse;
mod pure_calls;
mod wasm_host;
