//! Loading a module: what happens to uploaded bytes before any of them runs, in this order:
//! [`validate`] (the load-time rules, fixed error texts), [`stack`] (frame costs of the
//! deterministic stack-height limit) and [`instrument`] (the dirty-chunk marks, global exports
//! and stack-height code added to the binary). Depends on the ABI tables (`abi.rs`) only.
//!
//! | file | owns |
//! |---|---|
//! | `validate.rs` | [`ValidationError`](validate::ValidationError), the limits, `ModuleInfo` |
//! | `stack.rs` | [`STACK_LIMIT`](stack::STACK_LIMIT), frame costs, the code counted around calls |
//! | `encode.rs` | the few wasm binary encoders the rewriting needs (LEB128, `i32.const`, sections) |
//! | `instrument/` | the binary rewriter and its plan of marks |

pub(crate) mod encode;
pub(crate) mod instrument;
pub(crate) mod stack;
pub(crate) mod validate;
