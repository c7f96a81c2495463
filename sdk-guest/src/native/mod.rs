//! What runs only natively, never in a guest: [`Kv`](kv::Kv), the key-value store a native
//! `Ctx` runs over; [`KvCtx`](kv_ctx::KvCtx), the one implementation of `Ctx` semantics, shared
//! by the mock and the runtime; [`ledger`], the bank; [`MockCtx`](mock::MockCtx) for unit tests;
//! and [`guest_build`], which builds a module crate to a reproducible `.wasm`.
//!
//! | file | owns |
//! |---|---|
//! | `kv.rs` | [`Kv`](kv::Kv), [`MAX_SCAN_LIMIT`](kv::MAX_SCAN_LIMIT), every store as a view's state |
//! | `ledger.rs` | balances, transfers, escrow, module-issued tokens over a `Kv` |
//! | `kv_ctx.rs` | [`KvCtx`](kv_ctx::KvCtx), [`BlockEnv`](kv_ctx::BlockEnv), `public_random` |
//! | `mock.rs` | [`MockCtx`](mock::MockCtx), [`MockKv`](mock::MockKv) |
//! | `scheduler.rs` | the queue of scheduled calls over a `Kv`, and the draw formula |
//! | `mock_seal.rs` | stand-in sealed moves for native tests |
//! | `guest_build.rs` | the reproducible guest build recipe |

pub mod guest_build;
pub(crate) mod kv;
pub(crate) mod kv_ctx;
pub mod ledger;
pub(crate) mod mock;
pub mod mock_seal;
pub mod scheduler;
