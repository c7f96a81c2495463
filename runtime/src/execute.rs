//! The per-transaction executor: runs a module's entry point over an [`Overlay`] of committed
//! state and returns what the node needs for a receipt and a state update.
//!
//! Each call builds the sdk's `KvCtx<Overlay>` (the one implementation of `Ctx` semantics), so
//! scoping, the bank and events behave exactly as under `MockCtx`. On failure everything the call
//! did is dropped with the overlay: the outcome has no writes and no events.

use gamechain_sdk::keys::{balance_key, escrow_account, GOLD};
use gamechain_sdk::ledger::stored_balance;
use gamechain_sdk::{ActionError, BlockEnv, CallEnv, Kv, KvCtx, Query};
use serde_json::Value;

pub use gamechain_chain::Event;

use crate::state::{Overlay, State, WriteSet};
use gamechain_vm::HostError;
use gamechain_vm::{ModuleResolver, WasmModule};

/// The result of one transaction (or one end-of-block call).
#[derive(Debug, Clone, PartialEq)]
pub struct TxOutcome {
    /// `Ok` or the receipt error.
    pub result: Result<(), ActionError>,
    /// Fuel consumed (see [`crate::CallOutcome::fuel_used`]).
    pub fuel_used: u64,
    /// Events in emission order; empty when `result` is `Err`.
    pub events: Vec<Event>,
    /// Raw-key writes to apply to state; empty when `result` is `Err`.
    pub writes: WriteSet,
    /// The module's `log` lines (node log only, never hashed).
    pub log: Vec<String>,
}

/// Runs one `gc_apply` of `module` for transaction `txid` signed by `sender`, over `base`, in
/// block `env`. `op` is the op's JSON bytes as in the transaction.
///
/// `Err(HostError)` only for node-side failures (see [`HostError`]); every failure of the module
/// is an `Ok` outcome with `result: Err(…)`.
pub fn execute_apply(
    module: &WasmModule,
    base: &dyn State,
    env: &BlockEnv,
    txid: &str,
    sender: &str,
    op: &[u8],
) -> Result<TxOutcome, HostError> {
    execute_apply_with(module, base, env, txid, sender, op, None)
}

/// [`execute_apply`] with `resolver` serving the module's `call_pure`s (the block executor
/// passes its [`crate::ChainContext`]; without one every module id is unknown to them).
pub fn execute_apply_with(
    module: &WasmModule,
    base: &dyn State,
    env: &BlockEnv,
    txid: &str,
    sender: &str,
    op: &[u8],
    resolver: Option<&dyn ModuleResolver>,
) -> Result<TxOutcome, HostError> {
    let mut ctx = KvCtx::for_call(Overlay::new(base), module.id(), env, txid, Some(sender));
    ctx.seal_check = crate::sealed::chain_seal_check;
    let outcome = module.call_apply_with(&mut ctx, sender, op, resolver)?;
    Ok(finish(ctx, outcome.result, outcome.fuel_used, outcome.log))
}

/// [`execute_apply_with`] for a transaction acting for `sender` through a session key: also
/// returns the GOLD base units the call moved on `sender`'s behalf, the sum of
///
/// - every decrease of `bal/<sender>/GOLD` (a stake taken with `escrow_in`), and
/// - every increase of another account's `bal/<a>/GOLD` (`a` neither `sender` nor the module's
///   escrow `module:<id>`): GOLD the module's escrow paid to someone else during an op signed
///   in `sender`'s name (resigning a table the main key staked pays the other player).
///
/// Gross, write by write: a payout to `sender` in the same call does not offset a stake, and a
/// draw's refund of the other player's own stake counts too. Counting at the balance keys
/// instead of at the host calls means nothing a module can do escapes the count. 0 when the call
/// failed (nothing it did is kept).
pub fn execute_apply_metered(
    module: &WasmModule,
    base: &dyn State,
    env: &BlockEnv,
    txid: &str,
    sender: &str,
    op: &[u8],
    resolver: Option<&dyn ModuleResolver>,
) -> Result<(TxOutcome, u128), HostError> {
    let kv = Metered {
        overlay: Overlay::new(base),
        sender: balance_key(sender, GOLD),
        escrow: balance_key(&escrow_account(module.id()), GOLD),
        moved: 0,
    };
    let mut ctx = KvCtx::for_call(kv, module.id(), env, txid, Some(sender));
    ctx.seal_check = crate::sealed::chain_seal_check;
    let outcome = module.call_apply_with(&mut ctx, sender, op, resolver)?;
    let debited = if outcome.result.is_ok() {
        ctx.kv.moved
    } else {
        0
    };
    let KvCtx { kv, events, .. } = ctx;
    Ok((
        finish_parts(
            events,
            kv.overlay.into_writes(),
            outcome.result,
            outcome.fuel_used,
            outcome.log,
        ),
        debited,
    ))
}

/// An [`Overlay`] that sums the GOLD an op moves for its sender (see [`execute_apply_metered`]):
/// decreases of `sender`'s balance key and increases of any other GOLD balance key but `escrow`.
struct Metered<'a> {
    overlay: Overlay<'a>,
    /// `bal/<sender>/GOLD`.
    sender: String,
    /// `bal/module:<id>/GOLD`, the escrow of the module called.
    escrow: String,
    /// Base units counted so far.
    moved: u128,
}

impl Metered<'_> {
    fn note(&mut self, key: &str, new: u128) {
        let old = || stored_balance(State::get(&self.overlay, key).as_deref());
        let counted = if key == self.sender {
            old().saturating_sub(new)
        } else if key != self.escrow && is_gold_balance(key) {
            new.saturating_sub(old())
        } else {
            0
        };
        self.moved = self.moved.saturating_add(counted);
    }
}

/// Whether `key` is some account's GOLD balance, `bal/<account>/GOLD`.
fn is_gold_balance(key: &str) -> bool {
    key.strip_prefix("bal/")
        .and_then(|rest| rest.strip_suffix(GOLD)?.strip_suffix('/'))
        .is_some_and(|account| !account.is_empty() && !account.contains('/'))
}

#[cfg(test)]
mod tests {
    use super::is_gold_balance;

    #[test]
    fn gold_balance_keys_are_recognised_and_nothing_else() {
        assert!(is_gold_balance("bal/1abc/GOLD"));
        assert!(is_gold_balance("bal/module:tictactoe/GOLD"));
        assert!(!is_gold_balance("bal/1abc/CHIP"));
        assert!(!is_gold_balance("bal//GOLD"));
        assert!(!is_gold_balance("bal/a/b/GOLD"));
        assert!(!is_gold_balance("m/tictactoe/bal/a/GOLD"));
        assert!(!is_gold_balance("bal/aGOLD"));
    }
}

impl Kv for Metered<'_> {
    fn kv_get(&self, key: &str) -> Option<Vec<u8>> {
        self.overlay.kv_get(key)
    }
    fn kv_put(&mut self, key: &str, value: Vec<u8>) {
        self.note(key, stored_balance(Some(&value)));
        self.overlay.kv_put(key, value);
    }
    fn kv_delete(&mut self, key: &str) {
        self.note(key, 0);
        self.overlay.kv_delete(key);
    }
    fn kv_scan(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> Vec<(String, Vec<u8>)> {
        self.overlay.kv_scan(prefix, start_after, limit)
    }
    fn kv_call_code(
        &self,
        code_hash: &[u8; 32],
        entry: &str,
        input: &[u8],
        fuel: u64,
    ) -> Result<Vec<u8>, gamechain_sdk::PureError> {
        self.overlay.kv_call_code(code_hash, entry, input, fuel)
    }
    fn kv_module_code_hash(&self, module: &str) -> Option<[u8; 32]> {
        self.overlay.kv_module_code_hash(module)
    }
}

/// Runs `gc_end_block` of `module` over `base` in block `env` (empty txid, no sender). Writes are
/// kept on `Ok` and dropped on `Err`, as for a transaction.
pub fn execute_end_block(
    module: &WasmModule,
    base: &dyn State,
    env: &BlockEnv,
) -> Result<TxOutcome, HostError> {
    execute_end_block_with(module, base, env, None)
}

/// [`execute_end_block`] with `resolver` serving the module's `call_pure`s.
pub fn execute_end_block_with(
    module: &WasmModule,
    base: &dyn State,
    env: &BlockEnv,
    resolver: Option<&dyn ModuleResolver>,
) -> Result<TxOutcome, HostError> {
    let mut ctx = KvCtx::for_call(Overlay::new(base), module.id(), env, "", None);
    let outcome = module.call_end_block_with(&mut ctx, resolver)?;
    Ok(finish(ctx, outcome.result, outcome.fuel_used, outcome.log))
}

/// Runs scheduled call `id` of `module` (`gc_scheduled(id, payload)`, at most `fuel`) over
/// `base` in block `env`, with `beacon` (the block's, `None` on a chain without one) as the
/// source of its draws. No sender, no txid; writes and events kept on `Ok`, dropped on `Err`.
pub fn execute_scheduled(
    module: &WasmModule,
    base: &dyn State,
    env: &BlockEnv,
    call: &ScheduledRun<'_>,
    resolver: Option<&dyn ModuleResolver>,
) -> Result<TxOutcome, HostError> {
    let mut ctx = KvCtx::for_call(Overlay::new(base), module.id(), env, "", None);
    ctx.call = Some(CallEnv {
        id: call.id,
        beacon: call.beacon,
        draws: 0,
    });
    // A sealed call gets its id flagged and its opening after the payload (`schedule.rs`).
    let (id, input) = match call.sealed {
        Some(opened) => (
            call.id | gamechain_sdk::schedule::SEALED_CALL_FLAG,
            std::borrow::Cow::Owned(gamechain_sdk::schedule::sealed_call_input(
                call.payload,
                opened,
            )),
        ),
        None => (call.id, std::borrow::Cow::Borrowed(call.payload)),
    };
    let outcome = module.call_scheduled_with(&mut ctx, id, &input, call.fuel, resolver)?;
    Ok(finish(ctx, outcome.result, outcome.fuel_used, outcome.log))
}

/// One scheduled call as the block runs it ([`execute_scheduled`]).
#[derive(Debug, Clone, Copy)]
pub struct ScheduledRun<'a> {
    /// The call id.
    pub id: u64,
    /// Its payload.
    pub payload: &'a [u8],
    /// Its fuel (paid for when it was scheduled).
    pub fuel: u64,
    /// The running block's beacon.
    pub beacon: Option<[u8; 48]>,
    /// For a sealed call, what its envelope opened to (`None` for an ordinary call).
    pub sealed: Option<gamechain_sdk::Unsealed>,
}

/// Runs `gc_migrate` of `module` over `base` for the upgrade transaction `txid` signed by
/// `sender` (the owner), with `input` (the migration input JSON, see `transition/mod.rs`). Writes
/// and events are kept on `Ok` and dropped on `Err`, as for a transaction.
pub fn execute_migrate(
    module: &WasmModule,
    base: &dyn State,
    env: &BlockEnv,
    txid: &str,
    sender: &str,
    input: &[u8],
) -> Result<TxOutcome, HostError> {
    let mut ctx = KvCtx::for_call(Overlay::new(base), module.id(), env, txid, Some(sender));
    let outcome = module.call_migrate(&mut ctx, sender, input)?;
    Ok(finish(ctx, outcome.result, outcome.fuel_used, outcome.log))
}

/// Answers a view of `module` over `state`: the JSON value or the error, and the fuel used.
pub fn run_view(
    module: &WasmModule,
    state: &dyn State,
    query: &Query,
) -> Result<(Result<Value, ActionError>, u64), HostError> {
    run_view_with(module, state, query, None)
}

/// [`run_view`] with `resolver` serving the view's `call_pure`s.
pub fn run_view_with(
    module: &WasmModule,
    state: &dyn State,
    query: &Query,
    resolver: Option<&dyn ModuleResolver>,
) -> Result<(Result<Value, ActionError>, u64), HostError> {
    let reader = Overlay::new(state);
    let outcome = module.call_view_with(&reader, query, resolver)?;
    Ok((outcome.result, outcome.fuel_used))
}

fn finish(
    ctx: KvCtx<Overlay<'_>>,
    result: Result<(), ActionError>,
    fuel_used: u64,
    log: Vec<String>,
) -> TxOutcome {
    finish_parts(ctx.events, ctx.kv.into_writes(), result, fuel_used, log)
}

fn finish_parts(
    events: Vec<(String, Value)>,
    writes: WriteSet,
    result: Result<(), ActionError>,
    fuel_used: u64,
    log: Vec<String>,
) -> TxOutcome {
    match result {
        Ok(()) => TxOutcome {
            result,
            fuel_used,
            events: events
                .into_iter()
                .map(|(kind, data)| Event { kind, data })
                .collect(),
            writes,
            log,
        },
        Err(_) => TxOutcome {
            result,
            fuel_used,
            events: Vec::new(),
            writes: WriteSet::new(),
            log,
        },
    }
}
