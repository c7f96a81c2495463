//! Re-executing a game's ops with the runtime's own executor, from an empty module state plus
//! the transcript's starting balances (proven on a chain with state proofs, `start.rs`), and comparing each receipt with the transcript's. The calls
//! the game's ops schedule land in the replay's own queue (the chain's `sched/` layout, written
//! by the same code), and a call step runs the queued call with its block's beacon.

use gamechain_runtime::chain::{genesis_writes, Genesis, GenesisBalance, Receipt};
use gamechain_runtime::{
    execute_apply_metered, execute_scheduled, runtime_config, Allocation, MemState, Origin,
    Overlay, Runtime, ScheduledRun, State, WasmModule,
};
use gamechain_sdk::keys::GOLD;
use gamechain_sdk::schedule::{self, QueuedCall};
use gamechain_sdk::{scheduler, Amount, At, BlockEnv};
use std::collections::BTreeMap;

use super::report::GameDivergence;
use gamechain_chain::wire::transcript::{CallRef, Step, Transcript};

/// The module compiled as the chain compiles it, and the state its game runs over.
pub struct GameReplay {
    module: WasmModule,
    state: MemState,
    sequencer: String,
    /// The genesis beacon key: sealed moves are checked against it.
    beacon_key: Option<[u8; 96]>,
}

impl GameReplay {
    /// Loads `wasm` as module `module` under the runtime configuration of `genesis` (fuel,
    /// memory), with the compiler the chain uses for it (a genesis module's when `genesis`
    /// names this id with this code hash, an upload's otherwise), over a state holding only the
    /// GOLD token and `balances` (GOLD base units by account: the transcript's starting
    /// balances, proven or declared).
    pub fn new(
        genesis: &Genesis,
        transcript: &Transcript,
        balances: &BTreeMap<String, Amount>,
        wasm: &[u8],
    ) -> Result<GameReplay, GameDivergence> {
        let runtime = Runtime::new(runtime_config(genesis, Allocation::OnDemand))
            .map_err(|e| GameDivergence::whole("runtime", "a runtime", e.to_string()))?;
        let origin = if genesis
            .modules
            .iter()
            .any(|m| m.id == transcript.module && m.code_hash == transcript.code_hash)
        {
            Origin::Genesis
        } else {
            Origin::Upload
        };
        let module = WasmModule::load(&runtime, &transcript.module, wasm, None, origin)
            .map_err(|e| GameDivergence::whole("code", "code that loads", e.to_string()))?;
        let mut start = genesis.clone();
        start.balances = balances
            .iter()
            .filter(|(_, a)| a.0 > 0)
            .map(|(account, amount)| GenesisBalance {
                account: account.clone(),
                token: GOLD.to_string(),
                amount: Amount(amount.0),
            })
            .collect();
        let writes = genesis_writes(&start).map_err(|e| {
            GameDivergence::whole(
                "start_balances",
                "balances of this chain's addresses",
                e.to_string(),
            )
        })?;
        let mut state = MemState::new();
        state.map.extend(writes);
        Ok(GameReplay {
            module,
            state,
            sequencer: genesis.sequencer.clone(),
            beacon_key: genesis.beacon.as_ref().map(|b| b.public_key.to_bytes()),
        })
    }

    /// Sets `account`'s GOLD balance to `amount` base units (a proven balance, `start.rs`), as
    /// the bank stores it (0: no entry).
    pub fn set_balance(&mut self, account: &str, amount: Amount) {
        let key = gamechain_sdk::keys::balance_key(account, GOLD);
        if amount.0 == 0 {
            self.state.map.remove(&key);
        } else {
            self.state
                .map
                .insert(key, amount.0.to_string().into_bytes());
        }
    }

    /// Runs step `i` (`sender`, `op`) in its block's environment and compares its receipt
    /// with the transcript's: `ok`, `error`, `events`, `fuel_used` (the fee is not compared:
    /// it is the chain's, not the module's). On a match the step's writes are kept.
    ///
    /// `session_key`: the key that signed a `session_game` acting for `sender`. The chain
    /// appends to such a successful op's events `session {"account", "key", "session"}`
    /// (`runtime/src/transition/session.rs`); the account and key must be the step's, the
    /// session's id is taken from the receipt (it is state: the authorization's nonce). Also
    /// returns the GOLD the op moved for `sender` as the chain counts it against a session's
    /// cap (`execute_apply_metered`).
    pub fn run(
        &mut self,
        i: usize,
        step: &Step,
        sender: &str,
        session_key: Option<&str>,
        op: &[u8],
    ) -> Result<(Receipt, u128), GameDivergence> {
        let header = &step.header.header;
        let env = BlockEnv {
            height: header.height,
            block_time_ms: header.time_ms,
            checkpoint: header.checkpoint.clone(),
            sequencer: self.sequencer.clone(),
            beacon: header.beacon.map(|b| b.0),
            beacon_key: self.beacon_key,
        };
        let at = |field: &str, expected: String, got: String| {
            GameDivergence::at(i, &step.txid, field, expected, got)
        };
        let (out, debited) = execute_apply_metered(
            &self.module,
            &self.state,
            &env,
            &step.txid,
            sender,
            op,
            None,
        )
        .map_err(|e| at("execution", "a run of the op".into(), e.to_string()))?;
        let mut got = match &out.result {
            Ok(()) => Receipt::success(out.events.clone(), out.fuel_used),
            Err(e) => Receipt::failure(e.clone(), out.fuel_used),
        };
        if let (Some(key), true) = (session_key, got.ok) {
            let last = step.receipt.events.last().filter(|e| {
                e.kind == "session"
                    && e.data.get("account").and_then(|a| a.as_str()) == Some(sender)
                    && e.data.get("key").and_then(|k| k.as_str()) == Some(key)
                    && e.data.get("session").is_some_and(|s| s.is_u64())
                    && e.data.as_object().is_some_and(|o| o.len() == 3)
            });
            if let Some(event) = last {
                got.events.push(event.clone());
            } else {
                got.events.push(gamechain_runtime::chain::Event {
                    kind: "session".into(),
                    data: serde_json::json!({"account": sender, "key": key, "session": "<id>"}),
                });
            }
        }
        self.compare(i, step, &got)?;
        if out.result.is_ok() {
            self.state.apply(out.writes);
        }
        Ok((got, debited))
    }

    /// Runs call step `i` (`call`, due at the step's block): the call taken out of the replay's
    /// queue (it must be there: scheduled by an earlier step, of this module, and due by this
    /// height when it is due at a height), `gc_scheduled` with the fuel it was given and the
    /// header's beacon (checked against genesis by the step's checks), and the receipt compared
    /// as [`GameReplay::run`] does.
    pub fn run_call(
        &mut self,
        i: usize,
        step: &Step,
        call: &CallRef,
    ) -> Result<Receipt, GameDivergence> {
        let header = &step.header.header;
        let at = |field: &str, expected: String, got: String| {
            GameDivergence::at(i, &format!("call {}", call.id), field, expected, got)
        };
        let queued = self
            .queued(call.id)
            .filter(|(_, q)| q.module == call.module);
        let Some((key, queued)) = queued else {
            return Err(at(
                "call",
                format!("call {} scheduled by an earlier step of this game", call.id),
                "no such call in the replay's queue".into(),
            ));
        };
        if let At::Height(h) = queued.at {
            // A sealed call opens in the block of its round, never later.
            if queued.sealed.is_some() && h != step.height {
                return Err(at(
                    "call",
                    format!("a sealed call opened at height {}", step.height),
                    format!("a sealed call of round {h}"),
                ));
            }
            if h > step.height {
                return Err(at(
                    "call",
                    format!("a call due by height {}", step.height),
                    format!("a call due at height {h}"),
                ));
            }
        }
        let mut dequeued = Overlay::new(&self.state);
        scheduler::cancel(&mut dequeued, &queued.module, queued.id);
        let _ = key;
        let writes = dequeued.into_writes();
        self.state.apply(writes);
        let env = BlockEnv {
            height: header.height,
            block_time_ms: header.time_ms,
            checkpoint: header.checkpoint.clone(),
            sequencer: self.sequencer.clone(),
            beacon: header.beacon.map(|b| b.0),
            beacon_key: self.beacon_key,
        };
        let payload = hex::decode(&queued.payload).unwrap_or_default();
        let run = ScheduledRun {
            id: queued.id,
            payload: &payload,
            fuel: queued.fuel,
            beacon: header.beacon.map(|b| b.0),
            sealed: queued
                .sealed
                .as_deref()
                .map(|env| gamechain_runtime::sealed::open_sealed(env, header.beacon.as_ref())),
        };
        let out = execute_scheduled(&self.module, &self.state, &env, &run, None)
            .map_err(|e| at("execution", "a run of the call".into(), e.to_string()))?;
        let got = match &out.result {
            Ok(()) => Receipt::success(out.events.clone(), out.fuel_used),
            Err(e) => Receipt::failure(e.clone(), out.fuel_used),
        };
        self.compare(i, step, &got)?;
        if out.result.is_ok() {
            self.state.apply(out.writes);
        }
        Ok(got)
    }

    /// The waiting call `id` in the replay's queue, with its queue key.
    fn queued(&self, id: u64) -> Option<(String, QueuedCall)> {
        let key = self.state.get(&schedule::id_key(id))?;
        let key = String::from_utf8(key).ok()?;
        let call = serde_json::from_slice(&self.state.get(&key)?).ok()?;
        Some((key, call))
    }

    /// Compares a re-executed receipt with step `i`'s: `ok`, `error`, `events`, `fuel_used`.
    fn compare(&self, i: usize, step: &Step, got: &Receipt) -> Result<(), GameDivergence> {
        let id = match &step.call {
            Some(c) => format!("call {}", c.id),
            None => step.txid.clone(),
        };
        let at = |field: &str, expected: String, got: String| {
            GameDivergence::at(i, &id, field, expected, got)
        };
        let want = &step.receipt;
        if got.ok != want.ok {
            return Err(at("ok", want.ok.to_string(), got.ok.to_string()));
        }
        if got.error != want.error {
            let show = |e: &Option<String>| e.clone().unwrap_or_else(|| "no error".into());
            return Err(at("error", show(&want.error), show(&got.error)));
        }
        if got.events != want.events {
            let show = |r: &Receipt| serde_json::to_string(&r.events).unwrap_or_default();
            return Err(at("events", show(want), show(got)));
        }
        if got.fuel_used != want.fuel_used {
            return Err(at(
                "fuel_used",
                want.fuel_used.to_string(),
                got.fuel_used.to_string(),
            ));
        }
        Ok(())
    }
}
