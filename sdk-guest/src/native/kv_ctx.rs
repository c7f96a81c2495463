//! `KvCtx`: the one implementation of [`Ctx`] semantics over a key-value store ([`Kv`]).
//!
//! [`crate::MockCtx`] is a `KvCtx` over an in-memory map; the runtime's host context is a
//! `KvCtx` over a per-transaction overlay of the chain state. Sharing this code is what makes a
//! module behave the same in a native unit test and on the chain: module key scoping
//! (`m/<module>/<key>`), the bank ([`crate::ledger`]), the escrow rule (`escrow_in` only from
//! the sender), events and [`public_random`].

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::keys::{escrow_account, module_key, module_prefix};
use crate::native::kv::{Kv, MAX_SCAN_LIMIT};
use crate::native::ledger;
use crate::native::scheduler;
use crate::{ActionError, Checkpoint, Ctx, StateRead};

/// The block a call runs in.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BlockEnv {
    /// Block height (genesis is 0).
    pub height: u64,
    /// Block time, milliseconds since the Unix epoch.
    pub block_time_ms: u64,
    /// Parent-chain anchor.
    pub checkpoint: Checkpoint,
    /// The sequencer's address.
    pub sequencer: String,
    /// The block's randomness beacon (`None` on a chain without one): draws of its scheduled
    /// calls.
    pub beacon: Option<[u8; 48]>,
    /// The chain's beacon public key (genesis `beacon.public_key`; `None` on a chain without a
    /// beacon): sealed moves are checked against it, and refused without one.
    pub beacon_key: Option<[u8; 96]>,
}

/// A [`Ctx`] for one module and one call, over the store `kv`.
#[derive(Debug, Clone)]
pub struct KvCtx<K> {
    /// The store: every write of the call lands here.
    pub kv: K,
    /// The module's id: the scope of `get`/`put`/`delete`/`scan` and the escrow `module:<id>`.
    pub module: String,
    /// Block height.
    pub height: u64,
    /// Block time, milliseconds since the Unix epoch.
    pub block_time_ms: u64,
    /// Transaction id (64 lowercase hex); empty in `end_block` and views.
    pub txid: String,
    /// Parent-chain anchor.
    pub checkpoint: Checkpoint,
    /// The sequencer's address.
    pub sequencer: String,
    /// The transaction's signer; `None` in `end_block`, where `escrow_in` is refused.
    pub sender: Option<String>,
    /// Events emitted so far, `(kind, data)`, in order.
    pub events: Vec<(String, Value)>,
    /// How many times `public_random` was called in this call.
    pub random_counter: u64,
    /// The scheduled call this is, when it is one (`None` in apply, end_block, migrate).
    pub call: Option<CallEnv>,
    /// Calls scheduled so far in this call (each one's id is derived from its position).
    pub scheduled_count: u32,
    /// The chain's beacon public key, when it has a beacon: sealed calls and moves are refused
    /// otherwise, and a move's proof must be made under it.
    pub beacon_key: Option<[u8; 96]>,
    /// The check of a sealed move's envelope: the chain's proof check in the runtime, the
    /// mock's in [`crate::MockCtx`], and by default one that refuses every envelope.
    pub seal_check: crate::schedule::SealCheck,
}

/// What a scheduled call knows of itself: its id, the beacon of the block running it (`None`
/// on a chain without one), and how many draws it made so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallEnv {
    /// The call id.
    pub id: u64,
    /// The 48 beacon bytes of the block that runs the call.
    pub beacon: Option<[u8; 48]>,
    /// Draws so far in this call.
    pub draws: u64,
}

impl<K: Kv> KvCtx<K> {
    /// A context for `module` in block `env`, for transaction `txid` signed by `sender`.
    pub fn for_call(kv: K, module: &str, env: &BlockEnv, txid: &str, sender: Option<&str>) -> Self {
        Self {
            kv,
            module: module.to_string(),
            height: env.height,
            block_time_ms: env.block_time_ms,
            txid: txid.to_string(),
            checkpoint: env.checkpoint.clone(),
            sequencer: env.sequencer.clone(),
            sender: sender.map(str::to_string),
            events: Vec::new(),
            random_counter: 0,
            call: None,
            scheduled_count: 0,
            beacon_key: env.beacon_key,
            seal_check: crate::schedule::no_seal_check,
        }
    }

    fn escrow(&self) -> String {
        escrow_account(&self.module)
    }
}

impl<K: Kv> Ctx for KvCtx<K> {
    fn module(&self) -> &str {
        &self.module
    }
    fn height(&self) -> u64 {
        self.height
    }
    fn block_time_ms(&self) -> u64 {
        self.block_time_ms
    }
    fn txid(&self) -> &str {
        &self.txid
    }
    fn checkpoint(&self) -> &Checkpoint {
        &self.checkpoint
    }
    fn sequencer(&self) -> &str {
        &self.sequencer
    }

    fn get(&self, key: &str) -> Option<Vec<u8>> {
        self.kv.kv_get(&module_key(&self.module, key))
    }
    fn put(&mut self, key: &str, value: Vec<u8>) {
        self.kv.kv_put(&module_key(&self.module, key), value);
    }
    fn delete(&mut self, key: &str) {
        self.kv.kv_delete(&module_key(&self.module, key));
    }
    fn scan(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> Vec<(String, Vec<u8>)> {
        let scope = module_prefix(&self.module);
        let start = start_after.map(|s| module_key(&self.module, s));
        let mut entries = self.kv.kv_scan(
            &module_key(&self.module, prefix),
            start.as_deref(),
            limit.min(MAX_SCAN_LIMIT),
        );
        for (key, _) in &mut entries {
            key.replace_range(..scope.len(), "");
        }
        entries
    }
    fn read_raw(&self, key: &str) -> Option<Vec<u8>> {
        self.kv.kv_get(key)
    }
    fn scan_raw(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> Vec<(String, Vec<u8>)> {
        StateRead::scan_raw(&self.kv, prefix, start_after, limit)
    }

    fn balance(&self, account: &str, token: &str) -> u128 {
        ledger::balance(&self.kv, account, token)
    }
    fn escrow_in(&mut self, from: &str, token: &str, amount: u128) -> Result<(), ActionError> {
        if self.sender.as_deref() != Some(from) {
            return Err(ActionError::unauthorized(
                "escrow_in takes funds only from the transaction sender",
            ));
        }
        let escrow = self.escrow();
        ledger::transfer(&mut self.kv, from, &escrow, token, amount)
    }
    fn escrow_out(&mut self, to: &str, token: &str, amount: u128) -> Result<(), ActionError> {
        let escrow = self.escrow();
        ledger::transfer(&mut self.kv, &escrow, to, token, amount)
    }
    fn create_token(
        &mut self,
        symbol: &str,
        name: &str,
        decimals: u8,
        max_supply: Option<u128>,
    ) -> Result<(), ActionError> {
        let issuer = self.escrow();
        ledger::create_token(&mut self.kv, &issuer, symbol, name, decimals, max_supply)
    }
    fn mint(&mut self, to: &str, token: &str, amount: u128) -> Result<(), ActionError> {
        let issuer = self.escrow();
        ledger::mint(&mut self.kv, &issuer, to, token, amount)
    }
    fn burn(&mut self, from: &str, token: &str, amount: u128) -> Result<(), ActionError> {
        let issuer = self.escrow();
        ledger::burn(&mut self.kv, &issuer, from, token, amount)
    }

    fn emit(&mut self, kind: &str, data: Value) {
        self.events.push((kind.to_string(), data));
    }
    fn public_random(&mut self) -> [u8; 32] {
        let n = self.random_counter;
        self.random_counter += 1;
        public_random(&self.txid, self.height, n)
    }

    fn call_code(
        &self,
        code_hash: &[u8; 32],
        entry: &str,
        input: &[u8],
        fuel: u64,
    ) -> Result<Vec<u8>, crate::PureError> {
        self.kv.kv_call_code(code_hash, entry, input, fuel)
    }

    fn module_code_hash(&self, module: &str) -> Option<[u8; 32]> {
        self.kv.kv_module_code_hash(module)
    }

    fn schedule(
        &mut self,
        at: crate::At,
        payload: &[u8],
        fuel: u64,
    ) -> Result<u64, crate::ScheduleError> {
        // Only a call someone paid for may schedule: a transaction (its sender's fuel) or a
        // scheduled call (the fuel its scheduler paid). `end_block` runs every block on nobody's
        // fuel, so a call it scheduled would be free.
        let origin = match (&self.call, self.txid.is_empty()) {
            (Some(call), _) => scheduler::Origin::Call(call.id),
            (None, false) => scheduler::Origin::Tx(&self.txid),
            (None, true) => return Err(crate::ScheduleError::NotHere),
        };
        let from = scheduler::ScheduleFrom {
            module: &self.module,
            height: self.height,
            block_time_ms: self.block_time_ms,
            origin,
            n: self.scheduled_count,
        };
        let id = scheduler::schedule(&mut self.kv, from, at, payload, fuel)?;
        self.scheduled_count += 1;
        Ok(id)
    }

    fn schedule_sealed(
        &mut self,
        round: u64,
        payload: &[u8],
        fuel: u64,
    ) -> Result<u64, crate::ScheduleError> {
        // As `schedule`: only a paid call (a transaction or a scheduled call) may.
        let origin = match (&self.call, self.txid.is_empty()) {
            (Some(call), _) => scheduler::Origin::Call(call.id),
            (None, false) => scheduler::Origin::Tx(&self.txid),
            (None, true) => return Err(crate::ScheduleError::NotHere),
        };
        let from = scheduler::ScheduleFrom {
            module: &self.module,
            height: self.height,
            block_time_ms: self.block_time_ms,
            origin,
            n: self.scheduled_count,
        };
        let id = scheduler::schedule_sealed(
            &mut self.kv,
            from,
            round,
            payload,
            fuel,
            self.beacon_key.is_some(),
        )?;
        self.scheduled_count += 1;
        Ok(id)
    }

    fn seal(&mut self, id: u64, sealed: &[u8], tag: &[u8]) -> Result<(), crate::ScheduleError> {
        // Only a transaction hands in a sealed move: the proof binds it to its sender.
        let (Some(sender), None) = (&self.sender, &self.call) else {
            return Err(crate::ScheduleError::NotHere);
        };
        let Some(key) = self.beacon_key else {
            return Err(crate::ScheduleError::NoBeacon);
        };
        let sender = sender.clone();
        scheduler::seal(
            &mut self.kv,
            &self.module,
            &sender,
            id,
            (sealed, tag, &key),
            self.seal_check,
        )
    }

    fn cancel_scheduled(&mut self, id: u64) -> bool {
        scheduler::cancel(&mut self.kv, &self.module, id)
    }

    fn draw(&mut self) -> Option<[u8; 32]> {
        let call = self.call.as_mut()?;
        let beacon = call.beacon.as_ref()?;
        let n = call.draws;
        call.draws += 1;
        Some(scheduler::draw_bytes(beacon, &self.module, call.id, n))
    }
}

/// The `public_random` formula of ABI.md: SHA-256 of `"gamechain.public_random.v1"`,
/// `u32 LE len(txid)`, txid, `u64 LE height`, `u64 LE n` (`n` counts earlier calls in this call).
pub fn public_random(txid: &str, height: u64, n: u64) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"gamechain.public_random.v1");
    h.update((txid.len() as u32).to_le_bytes());
    h.update(txid.as_bytes());
    h.update(height.to_le_bytes());
    h.update(n.to_le_bytes());
    h.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MockKv, GOLD};

    fn ctx() -> KvCtx<MockKv> {
        let env = BlockEnv {
            height: 7,
            sequencer: "seq".into(),
            ..BlockEnv::default()
        };
        KvCtx::for_call(MockKv::default(), "game", &env, "ab", Some("alice"))
    }

    #[test]
    fn keys_are_scoped_to_the_module() {
        let mut c = ctx();
        c.put("a/1", b"x".to_vec());
        c.put("a/2", b"y".to_vec());
        c.put("b", b"z".to_vec());
        c.kv.kv_put("m/other/a/3", b"w".to_vec());
        assert_eq!(
            c.kv.state.keys().collect::<Vec<_>>(),
            ["m/game/a/1", "m/game/a/2", "m/game/b", "m/other/a/3"]
        );
        let scanned: Vec<String> = c.scan("a/", None, 10).into_iter().map(|(k, _)| k).collect();
        assert_eq!(scanned, ["a/1", "a/2"]);
        assert_eq!(c.scan("a/", Some("a/1"), 10).len(), 1);
        assert_eq!(c.read_raw("m/other/a/3"), Some(b"w".to_vec()));
        assert_eq!(c.get("../other/a/3"), None);
    }

    #[test]
    fn escrow_in_only_from_the_sender_and_out_only_from_own_escrow() {
        let mut c = ctx();
        ledger::set_balance(&mut c.kv, "alice", GOLD, 100);
        ledger::set_balance(&mut c.kv, "bob", GOLD, 100);
        ledger::set_balance(&mut c.kv, "module:other", GOLD, 100);
        assert_eq!(
            c.escrow_in("bob", GOLD, 1).unwrap_err().code(),
            "unauthorized"
        );
        c.escrow_in("alice", GOLD, 60).unwrap();
        assert_eq!(c.balance("module:game", GOLD), 60);
        assert_eq!(
            c.escrow_out("bob", GOLD, 61).unwrap_err().to_string(),
            "insufficient GOLD: need 61, have 60"
        );
        c.escrow_out("bob", GOLD, 60).unwrap();
        assert_eq!(
            (c.balance("bob", GOLD), c.balance("module:other", GOLD)),
            (160, 100)
        );
    }

    #[test]
    fn public_random_is_deterministic_and_advances() {
        let (mut a, mut b) = (ctx(), ctx());
        let (a1, a2) = (a.public_random(), a.public_random());
        assert_eq!(a1, b.public_random());
        assert_ne!(a1, a2);
        assert_eq!(a1, public_random("ab", 7, 0));
    }
}
