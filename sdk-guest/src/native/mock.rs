//! `MockCtx`: an in-memory [`Ctx`](crate::Ctx) for native unit tests of a module, as the tests of
//! `docs/tictactoe.md` ("Tests") use it: a BTreeMap for state, balances at
//! `bal/<account>/<TOKEN>`, a settable height, recorded events, and `submit`, which gives each op
//! a fresh txid and rolls every write and event back when `apply` fails, as the chain does.
//!
//! `MockCtx` is [`KvCtx`] over [`MockKv`], the same code the runtime runs, so balances, escrow,
//! tokens, scoping and error texts match the chain.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::native::kv::Kv;
use crate::native::kv_ctx::{BlockEnv, KvCtx};
use crate::native::ledger;
use crate::{ActionError, GameModule, Migration, PureError, Query};

/// A pure entry point registered natively with [`MockKv::add_code`]: `(entry, input)` to the
/// answer, `None` for a refusal ([`PureError::Refused`]).
pub type NativeEntry = dyn Fn(&str, &[u8]) -> Option<Vec<u8>> + Send + Sync;

/// Code registered natively for [`Ctx::call_code`](crate::Ctx::call_code) in unit tests.
#[derive(Clone)]
pub struct NativeCode(pub Arc<NativeEntry>);

impl std::fmt::Debug for NativeCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NativeCode")
    }
}

/// An in-memory sorted store with an undo journal, so a failed op can be rolled back in time
/// proportional to its writes; plus code registered natively by hash ([`MockKv::add_code`]) and
/// the code hash module ids run ([`MockKv::set_module_code`]), for modules that call code.
#[derive(Debug, Clone, Default)]
pub struct MockKv {
    /// The whole state, raw keys.
    pub state: BTreeMap<String, Vec<u8>>,
    journal: Option<Vec<(String, Option<Vec<u8>>)>>,
    submitted: u64,
    /// Native code by hash, answering `call_code`.
    pub codes: BTreeMap<[u8; 32], NativeCode>,
    /// The code hash each module id runs, answering `module_code_hash`.
    pub module_codes: BTreeMap<String, [u8; 32]>,
    /// Every op [`MockCtx::submit`] ran and every view [`MockCtx::view`] answered, for the
    /// author kit's schema check.
    pub trace: Trace,
}

/// What a [`MockCtx`] was asked: each submitted op with whether it succeeded, each view query
/// with its answer (`Err` answers are not kept). Views take `&self`, so they are kept behind
/// a lock; cloning copies both lists.
#[derive(Debug, Default)]
pub struct Trace {
    /// Submitted ops in order, `(op, succeeded)`.
    pub ops: Vec<(Value, bool)>,
    views: std::sync::Mutex<Vec<(Query, Value)>>,
}

impl Clone for Trace {
    fn clone(&self) -> Self {
        Trace {
            ops: self.ops.clone(),
            views: std::sync::Mutex::new(self.views()),
        }
    }
}

impl Trace {
    /// The views answered so far, `(query, answer)`, in order.
    pub fn views(&self) -> Vec<(Query, Value)> {
        self.views.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn view(&self, query: &Query, answer: &Value) {
        self.views
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((query.clone(), answer.clone()));
    }
}

impl MockKv {
    /// Registers `entry` as the code of hash `code_hash`: `call_code(code_hash, e, input, _)`
    /// answers `entry(e, input)` (`None`: [`PureError::Refused`]). Natively there is no fuel and
    /// no state to forbid; test those on the runtime.
    pub fn add_code(
        &mut self,
        code_hash: [u8; 32],
        entry: impl Fn(&str, &[u8]) -> Option<Vec<u8>> + Send + Sync + 'static,
    ) {
        self.codes.insert(code_hash, NativeCode(Arc::new(entry)));
    }

    /// Makes module `id` run the code of `code_hash` (what `module_code_hash(id)` answers); an
    /// upgrade in a test is another call.
    pub fn set_module_code(&mut self, id: &str, code_hash: [u8; 32]) {
        self.module_codes.insert(id.to_string(), code_hash);
    }
}

impl MockKv {
    fn record(&mut self, key: &str, previous: Option<Vec<u8>>) {
        if let Some(journal) = &mut self.journal {
            journal.push((key.to_string(), previous));
        }
    }

    fn begin(&mut self) {
        self.journal = Some(Vec::new());
    }

    fn finish(&mut self, keep: bool) {
        let journal = self.journal.take().unwrap_or_default();
        if !keep {
            for (key, previous) in journal.into_iter().rev() {
                match previous {
                    Some(value) => self.state.insert(key, value),
                    None => self.state.remove(&key),
                };
            }
        }
    }
}

impl Kv for MockKv {
    fn kv_get(&self, key: &str) -> Option<Vec<u8>> {
        self.state.get(key).cloned()
    }
    fn kv_put(&mut self, key: &str, value: Vec<u8>) {
        let previous = self.state.insert(key.to_string(), value);
        self.record(key, previous);
    }
    fn kv_delete(&mut self, key: &str) {
        if let Some(previous) = self.state.remove(key) {
            self.record(key, Some(previous));
        }
    }
    fn kv_call_code(
        &self,
        code_hash: &[u8; 32],
        entry: &str,
        input: &[u8],
        _fuel: u64,
    ) -> Result<Vec<u8>, PureError> {
        let code = self.codes.get(code_hash).ok_or(PureError::NotFound)?;
        (code.0)(entry, input).ok_or(PureError::Refused)
    }
    fn kv_module_code_hash(&self, module: &str) -> Option<[u8; 32]> {
        self.module_codes.get(module).copied()
    }
    fn kv_scan(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> Vec<(String, Vec<u8>)> {
        let lower = match start_after {
            Some(after) if after >= prefix => std::ops::Bound::Excluded(after.to_string()),
            _ => std::ops::Bound::Included(prefix.to_string()),
        };
        self.state
            .range((lower, std::ops::Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(prefix))
            .take(limit)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}

/// An in-memory `Ctx` for unit tests: `MockCtx::new("tictactoe")`, set balances and `height`,
/// then [`submit`](KvCtx::submit) ops and inspect `state`, `events` and balances.
pub type MockCtx = KvCtx<MockKv>;

impl KvCtx<MockKv> {
    /// An empty chain at height 0 for `module`, block time 0, sequencer `"sequencer"`.
    pub fn new_mock(module: &str) -> Self {
        let env = BlockEnv {
            sequencer: "sequencer".to_string(),
            ..BlockEnv::default()
        };
        let mut ctx = KvCtx::for_call(MockKv::default(), module, &env, "", None);
        // A mock chain has a beacon, and takes the stand-in sealed moves of `mock_seal`.
        ctx.beacon_key = Some(crate::native::mock_seal::MOCK_BEACON_KEY);
        ctx.seal_check = crate::native::mock_seal::check;
        ctx
    }

    /// Same as [`MockCtx::new_mock`]; the spelling tests use, `MockCtx::new(ID)`.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(module: &str) -> Self {
        Self::new_mock(module)
    }

    /// Set `account`'s balance of `token` to `amount` base units.
    pub fn set_balance(&mut self, account: &str, token: &str, amount: u128) {
        ledger::set_balance(&mut self.kv, account, token, amount);
    }

    /// Run one op as a transaction signed by `sender`: a fresh txid (SHA-256 of a counter,
    /// 64 hex, left in `self.txid`), then `module.apply`. On `Err` every write and event of the
    /// op is rolled back, as on the chain.
    ///
    /// A module with a schema ([`GameModule::schema`]) runs under the rule its wasm build
    /// enforces on chain ([`Schema::enforce_op`](crate::schema::Schema::enforce_op)): an op
    /// `apply` accepts that does not match the schema is refused with the mismatch and rolled
    /// back; `apply`'s own refusals stand. Panics when the schema does not parse (the chain
    /// refuses such a module at load).
    pub fn submit(
        &mut self,
        module: &dyn GameModule,
        sender: &str,
        op: Value,
    ) -> Result<(), ActionError> {
        let schema = module.schema().map(|text| {
            crate::schema::Schema::parse(text)
                .unwrap_or_else(|e| panic!("module {}: {e}", module.id()))
        });
        self.kv.submitted += 1;
        let digest = Sha256::digest(format!("gamechain.mock.tx/{}", self.kv.submitted));
        self.txid = hex::encode(digest);
        self.sender = Some(sender.to_string());
        let result = self.transaction(|ctx| match &schema {
            Some(schema) => schema.enforce_op(&op, || module.apply(ctx, sender, &op)),
            None => module.apply(ctx, sender, &op),
        });
        self.sender = None;
        self.kv.trace.ops.push((op, result.is_ok()));
        result
    }

    /// Run `module`'s migration as the chain does when an upgrade by `owner` from code
    /// `from_code_hash` to `to_code_hash` takes effect: a fresh txid (as [`MockCtx::submit`]),
    /// sender `owner`, then [`GameModule::migrate`]; on `Err` every write and event of it is
    /// rolled back (on a chain the upgrade is then refused). Hashes are any text natively;
    /// height and block time are the context's. The chain runs this only when the module is
    /// exported with `export_module!(M, migrate)`.
    pub fn migrate(
        &mut self,
        module: &dyn GameModule,
        owner: &str,
        from_code_hash: &str,
        to_code_hash: &str,
    ) -> Result<(), ActionError> {
        self.kv.submitted += 1;
        let digest = Sha256::digest(format!("gamechain.mock.tx/{}", self.kv.submitted));
        let txid = hex::encode(digest);
        let migration = Migration::new(owner, from_code_hash, to_code_hash);
        self.migrate_in_tx(module, &txid, &migration)
    }

    /// [`MockCtx::migrate`] in the transaction `txid` (left in `self.txid`): what the harness
    /// uses to give the native run the txid of the chain's upgrade transaction.
    pub fn migrate_in_tx(
        &mut self,
        module: &dyn GameModule,
        txid: &str,
        migration: &Migration,
    ) -> Result<(), ActionError> {
        self.txid = txid.to_string();
        self.sender = Some(migration.owner.clone());
        let result = self.transaction(|ctx| module.migrate(ctx, migration));
        self.sender = None;
        result
    }

    /// Run `module.end_block` as the chain does after a block's transactions: no txid, no
    /// sender; writes kept on `Ok`, rolled back on `Err`.
    pub fn end_block(&mut self, module: &dyn GameModule) -> Result<(), ActionError> {
        self.txid.clear();
        self.sender = None;
        self.transaction(|ctx| module.end_block(ctx))
    }

    /// Runs the scheduled calls due at the start of block `self.height` whose parent's time is
    /// `parent_time_ms`, as the chain does (`schedule.rs`): at most `MAX_SCHEDULED_PER_BLOCK`,
    /// each in its own transaction (no sender, no txid; writes rolled back on `Err`), with
    /// `beacon` as the block's beacon for [`Ctx::draw`](crate::Ctx::draw) (`None`: a chain
    /// without one, where a draw fails). Sealed calls of a round up to `self.height` run first,
    /// with what their stand-in envelopes ([`crate::native::mock_seal`]) open to (void without a
    /// beacon). Calls of other modules than this mock's are taken off the queue without
    /// running. Returns each call's id and result, in order.
    pub fn run_scheduled(
        &mut self,
        module: &dyn GameModule,
        parent_time_ms: u64,
        beacon: Option<[u8; 48]>,
    ) -> Vec<(u64, Result<(), ActionError>)> {
        let mut due = crate::native::scheduler::take_sealed(&mut self.kv, self.height);
        due.extend(crate::native::scheduler::take_due(
            &mut self.kv,
            self.height,
            parent_time_ms,
            crate::schedule::MAX_SCHEDULED_PER_BLOCK,
        ));
        let mut out = Vec::new();
        for queued in due {
            if queued.module != self.module {
                continue;
            }
            let sealed =
                queued
                    .sealed
                    .as_ref()
                    .map(|envelope| match (beacon, hex::decode(envelope)) {
                        (Some(_), Ok(bytes)) => crate::native::mock_seal::open(&bytes),
                        _ => crate::Unsealed::Void,
                    });
            let call = crate::ScheduledCall {
                id: queued.id,
                payload: hex::decode(&queued.payload).unwrap_or_default(),
                sealed,
            };
            self.txid.clear();
            self.sender = None;
            self.call = Some(crate::CallEnv {
                id: queued.id,
                beacon,
                draws: 0,
            });
            let result = self.transaction(|ctx| module.scheduled(ctx, &call));
            self.call = None;
            out.push((queued.id, result));
        }
        out
    }

    /// Answer a view over the current state (a successful answer is kept in `kv.trace`).
    pub fn view(&self, module: &dyn GameModule, query: &Query) -> Result<Value, ActionError> {
        let answer = module.view(&self.kv, query);
        if let Ok(value) = &answer {
            self.kv.trace.view(query, value);
        }
        answer
    }

    fn transaction(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<(), ActionError>,
    ) -> Result<(), ActionError> {
        let events = self.events.len();
        self.random_counter = 0;
        self.scheduled_count = 0;
        self.kv.begin();
        let result = f(self);
        self.kv.finish(result.is_ok());
        if result.is_err() {
            self.events.truncate(events);
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Ctx, StateRead, GOLD};
    use serde_json::json;

    struct Pay;
    impl GameModule for Pay {
        fn id(&self) -> &'static str {
            "pay"
        }
        fn apply(&self, ctx: &mut dyn Ctx, sender: &str, op: &Value) -> Result<(), ActionError> {
            ctx.put("last", sender.as_bytes().to_vec());
            ctx.emit("pay.paid", op.clone());
            ctx.escrow_in(sender, GOLD, crate::op_amount(op, "amount")?)
        }
        fn view(&self, state: &dyn StateRead, _: &Query) -> Result<Value, ActionError> {
            Ok(json!(state.scan_raw("", None, 100).len()))
        }
    }

    #[test]
    fn code_registered_natively_answers_call_code_by_hash() {
        let mut ctx = MockCtx::new("pay");
        let hash = [7u8; 32];
        ctx.kv.add_code(hash, |entry, input| match entry {
            "double" => Some(input.iter().map(|b| b * 2).collect()),
            _ => None,
        });
        ctx.kv.set_module_code("rules", hash);
        assert_eq!(ctx.call_code(&hash, "double", &[1, 2], 10), Ok(vec![2, 4]));
        assert_eq!(
            ctx.call_code(&hash, "other", &[], 10),
            Err(crate::PureError::Refused)
        );
        assert_eq!(
            ctx.call_code(&[8; 32], "double", &[], 10),
            Err(crate::PureError::NotFound)
        );
        assert_eq!(ctx.module_code_hash("rules"), Some(hash));
        assert_eq!(ctx.module_code_hash("nobody"), None);
        // An upgrade in a test: the id runs other code, the old code stays callable by hash.
        ctx.kv.set_module_code("rules", [9; 32]);
        assert_eq!(ctx.call_code(&hash, "double", &[3], 10), Ok(vec![6]));
    }

    /// v2 of `Pay`: `last` becomes `last_sender`; its migration moves the value over.
    struct PayV2;
    impl GameModule for PayV2 {
        fn id(&self) -> &'static str {
            "pay"
        }
        fn apply(&self, _: &mut dyn Ctx, _: &str, _: &Value) -> Result<(), ActionError> {
            Ok(())
        }
        fn view(&self, _: &dyn StateRead, _: &Query) -> Result<Value, ActionError> {
            Ok(Value::Null)
        }
        fn migrate(&self, ctx: &mut dyn Ctx, from: &Migration) -> Result<(), ActionError> {
            let last = ctx.get("last").ok_or(ActionError::internal("no `last`"))?;
            ctx.delete("last");
            ctx.put("last_sender", last);
            ctx.emit(
                "pay.migrated",
                json!({"from": from.from_code_hash, "owner": from.owner}),
            );
            if from.to_code_hash == "refuse" {
                return Err(ActionError::invalid("refused"));
            }
            Ok(())
        }
    }

    #[test]
    fn migrate_runs_as_the_owner_and_rolls_back_on_error() {
        let mut ctx = MockCtx::new("pay");
        ctx.set_balance("alice", GOLD, 10);
        ctx.submit(&Pay, "alice", json!({ "amount": "4" })).unwrap();
        let before = ctx.kv.state.clone();
        let err = ctx.migrate(&PayV2, "owner1", "old", "refuse").unwrap_err();
        assert_eq!(err.to_string(), "invalid: refused");
        assert_eq!(ctx.kv.state, before, "a refused migration writes nothing");
        assert_eq!(ctx.events.len(), 1);
        ctx.migrate(&PayV2, "owner1", "old", "new").unwrap();
        assert_eq!(ctx.get("last"), None);
        assert_eq!(ctx.get("last_sender"), Some(b"alice".to_vec()));
        assert_eq!(
            ctx.events.last().unwrap(),
            &(
                "pay.migrated".to_string(),
                json!({"from": "old", "owner": "owner1"})
            )
        );
        assert_eq!(ctx.txid.len(), 64);
        assert_eq!(ctx.sender, None);
        // A module that does not override `migrate` migrates nothing.
        let before = ctx.kv.state.clone();
        ctx.migrate(&Pay, "owner1", "new", "newer").unwrap();
        assert_eq!(ctx.kv.state, before);
    }

    #[test]
    fn submit_rolls_back_writes_and_events_on_error() {
        let mut ctx = MockCtx::new("pay");
        ctx.set_balance("alice", GOLD, 10);
        ctx.submit(&Pay, "alice", json!({ "amount": "4" })).unwrap();
        let first = ctx.txid.clone();
        let before = ctx.kv.state.clone();
        let err = ctx
            .submit(&Pay, "bob", json!({ "amount": "1" }))
            .unwrap_err();
        assert_eq!(err.to_string(), "insufficient GOLD: need 1, have 0");
        assert_ne!(ctx.txid, first, "each op gets a fresh txid");
        assert_eq!(ctx.txid.len(), 64);
        assert_eq!(ctx.kv.state, before);
        assert_eq!(ctx.events.len(), 1);
        assert_eq!(ctx.balance("module:pay", GOLD), 4);
        assert_eq!(ctx.view(&Pay, &Query::new()).unwrap(), json!(3));
    }
}
