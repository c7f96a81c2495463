//! # gamechain-sdk: what a module author links
//!
//! A gamechain module is one Rust type implementing [`GameModule`]. It is compiled to
//! `wasm32-unknown-unknown` and run by the node under wasmtime; natively the same code runs
//! against [`MockCtx`] in unit tests. The host/guest boundary is the versioned ABI in `ABI.md`.
//!
//! | item | what it is |
//! |---|---|
//! | [`GameModule`], [`Ctx`], [`StateRead`], [`CtxExt`], [`StateReadExt`] | the module interface (`module.rs`) |
//! | [`Migration`], [`GameModule::migrate`] | an upgrade's migration step (`migration.rs`; exported by `export_module!(M, migrate)`) |
//! | [`ActionError`] | the six error kinds (`error.rs`) |
//! | [`Amount`], [`op_str`], [`op_amount`], [`op_amount_or_zero`], [`Query`] | op and amount helpers |
//! | [`keys`] | the state key layout (`m/<module>/<key>`, `bal/<account>/<TOKEN>`, …) |
//! | [`PureError`], [`Ctx::call_pure`], [`Ctx::verify_signed`] | calls into other modules, signatures (`pure.rs`) |
//! | [`schedule`], [`Ctx::schedule`], [`Ctx::draw`], [`draw_below`] | calls the chain makes on time, and the only randomness a module may draw (`schedule.rs`) |
//! | [`rules`], [`export_rules!`] | rules modules: the pure, import-free game rules a channel runs (`rules.rs`) |
//! | [`table`] | the staked two-player table: escrow, join, cancel, timeout, payout, list views (`table.rs`) |
//! | [`export_module!`], [`export_schema!`] | exports a type as the wasm entry points, and its schema as a custom section (`export.rs`; expands to nothing natively) |
//! | [`schema!`], [`schema`] | a module's ops, events and views declared once; the format, its reader (in declaration order) and validator, and the rule `gc_apply` enforces ops by (`schema/`: `macros.rs`, `mod.rs`, `json.rs`, `op_text.rs`) |
//! | [`MockCtx`] (native) | an in-memory `Ctx` for unit tests (`native/mock.rs`) |
//! | [`KvCtx`], [`Kv`], [`ledger`] (native) | the one implementation of `Ctx` semantics, shared by the mock and the runtime (`native/`) |
//! | [`guest_build`] (native) | builds a module crate to a reproducible `.wasm` (`native/guest_build.rs`) |
//!
//! ```
//! use gamechain_sdk::prelude::*;
//!
//! pub struct Counter;
//! impl GameModule for Counter {
//!     fn id(&self) -> &'static str { "counter" }
//!     fn apply(&self, ctx: &mut dyn Ctx, _sender: &str, _op: &Value) -> Result<(), ActionError> {
//!         let n: u64 = ctx.get_json("n")?.unwrap_or(0);
//!         ctx.put_json("n", &(n + 1));
//!         Ok(())
//!     }
//!     fn view(&self, state: &dyn StateRead, _q: &Query) -> Result<Value, ActionError> {
//!         Ok(json!({ "n": state.module_json::<u64>("counter", "n")?.unwrap_or(0) }))
//!     }
//! }
//! gamechain_sdk::export_module!(Counter);
//!
//! # fn main() {
//! // Natively, the same type runs against `MockCtx`:
//! let mut ctx = gamechain_sdk::MockCtx::new("counter");
//! ctx.submit(&Counter, "alice", json!({ "kind": "inc" })).unwrap();
//! ctx.submit(&Counter, "bob", json!({ "kind": "inc" })).unwrap();
//! assert_eq!(ctx.view(&Counter, &Query::new()).unwrap(), json!({ "n": 2 }));
//! # }
//! ```

// `guest.rs`, `module.rs`, `table.rs` and `rules.rs` stay where they are: a guest's panic
// locations name the SDK files (and lines) it was built from, so moving them would change the
// code hash of every module.
mod amount;
mod error;
mod export;
pub mod keys;
mod migration;
mod module;
mod op;
mod pure;
pub mod rules;
pub mod schedule;
pub mod schema;
pub mod table;

#[cfg(target_arch = "wasm32")]
#[doc(hidden)]
pub mod guest;

#[cfg(not(target_arch = "wasm32"))]
mod native;

pub use amount::{Amount, AmountParseError};
pub use error::ActionError;
pub use keys::GOLD;
pub use migration::Migration;
pub use module::{draw_below, Checkpoint, Ctx, CtxExt, GameModule, Query, StateRead, StateReadExt};
pub use op::{op_amount, op_amount_or_zero, op_str};
pub use pure::{PureError, DEFAULT_PURE_FUEL};
pub use schedule::{At, ScheduleError, ScheduledCall, SealBinding, Unsealed};

#[cfg(not(target_arch = "wasm32"))]
pub use native::kv::{Kv, MAX_SCAN_LIMIT};
#[cfg(not(target_arch = "wasm32"))]
pub use native::kv_ctx::{public_random, BlockEnv, CallEnv, KvCtx};
#[cfg(not(target_arch = "wasm32"))]
pub use native::ledger::TokenInfo;
#[cfg(not(target_arch = "wasm32"))]
pub use native::mock::{MockCtx, MockKv, NativeCode, NativeEntry, Trace};
#[cfg(not(target_arch = "wasm32"))]
pub use native::mock_seal;
#[cfg(not(target_arch = "wasm32"))]
pub use native::scheduler;
#[cfg(not(target_arch = "wasm32"))]
pub use native::{guest_build, ledger};

/// Re-exported so modules and the export macro use the SDK's versions.
pub use serde;
pub use serde_json;

/// Everything a module file needs: `use gamechain_sdk::prelude::*;`.
pub mod prelude {
    pub use crate::keys::{escrow_account, module_key, GOLD};
    pub use crate::{
        draw_below, op_amount, op_amount_or_zero, op_str, ActionError, Amount, At, Checkpoint, Ctx,
        CtxExt, GameModule, Migration, PureError, Query, ScheduleError, ScheduledCall, StateRead,
        StateReadExt, Unsealed,
    };
    pub use serde::{Deserialize, Serialize};
    pub use serde_json::{json, Value};
}
