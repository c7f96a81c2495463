//! [`LocalRules`]: a game's rules run by the client from the very `.wasm` the chain runs: the
//! code of the game's `rules_code` (the hash its offer pinned; never what a module id runs now).
//! The code is fetched by that hash (`GET /v1/code/<hash>`, which serves every code ever
//! deployed), refused unless its SHA-256 is that hash and it is at most `MAX_CODE_BYTES`, cached
//! in the store, loaded into a wasm runtime of its own, and called as the channel calls it: by
//! code, with no state (a state import traps) and the channel's own fuel per call
//! ([`protocol::RULES_FUEL`]), so a call that traps or runs out of fuel on the chain does here
//! too. [`Replay`] plays held moves from the game's initial state (`initial_state(tag)`),
//! keeping the state before each move.

use std::sync::Arc;

use gamechain_channel_protocol as protocol;
use gamechain_client::client::Client;
use gamechain_runtime::chain::MAX_CODE_BYTES;
use gamechain_runtime::{Allocation, MemState, Overlay, Runtime, RuntimeConfig, WasmModule};
use gamechain_sdk::rules::{encode_move, DRAW};
use sha2::{Digest, Sha256};

use crate::error::ChannelError;
use crate::store::{HeldMove, MoveStore};

/// A rules module loaded locally.
pub struct LocalRules {
    id: String,
    code_hash: String,
    module: WasmModule,
    _runtime: Arc<Runtime>,
}

impl std::fmt::Debug for LocalRules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalRules")
            .field("id", &self.id)
            .field("code_hash", &self.code_hash)
            .finish()
    }
}

fn rules_error(id: &str, m: impl std::fmt::Display) -> ChannelError {
    ChannelError::Rules(format!("rules module {id}: {m}"))
}

impl LocalRules {
    /// Loads `wasm` as rules module `id` after checking it is at most `MAX_CODE_BYTES` and hashes
    /// to `code_hash`. Errors: [`ChannelError::Rules`] naming what failed.
    pub fn from_code(id: &str, code_hash: &str, wasm: &[u8]) -> Result<LocalRules, ChannelError> {
        if wasm.len() > MAX_CODE_BYTES {
            return Err(rules_error(
                id,
                format!("code of {} bytes, over {MAX_CODE_BYTES}", wasm.len()),
            ));
        }
        let actual = hex::encode(Sha256::digest(wasm));
        if actual != code_hash {
            return Err(rules_error(
                id,
                format!("the node served code hashing to {actual}, not {code_hash}"),
            ));
        }
        let runtime = Runtime::new(RuntimeConfig {
            allocation: Allocation::OnDemand,
            ..RuntimeConfig::default()
        })
        .map_err(|e| rules_error(id, format!("no wasm runtime: {e}")))?;
        let module = WasmModule::new(&runtime, id, wasm)
            .map_err(|e| rules_error(id, format!("cannot load its code: {e}")))?;
        Ok(LocalRules {
            id: id.to_string(),
            code_hash: code_hash.to_string(),
            module,
            _runtime: runtime,
        })
    }

    /// The rules code of hash `code_hash` (a game's `rules_code`), named `name` in messages.
    /// The store's cached copy is used when it hashes right; otherwise the code is fetched from
    /// the node by hash, checked and cached. Errors: the node's (`not_found` for unknown code),
    /// [`ChannelError::Rules`].
    pub async fn fetch(
        client: &Client,
        store: &MoveStore,
        name: &str,
        code_hash: &str,
    ) -> Result<LocalRules, ChannelError> {
        let wasm = match store.cached_code(code_hash) {
            Some(wasm) => wasm,
            None => {
                let wasm = client.code(code_hash).await?;
                let rules = Self::from_code(name, code_hash, &wasm)?;
                store.cache_code(code_hash, &wasm)?;
                return Ok(rules);
            }
        };
        Self::from_code(name, code_hash, &wasm)
    }

    /// The code rules module `id` runs now (for an offer, which then pins that very hash).
    pub async fn fetch_module(
        client: &Client,
        store: &MoveStore,
        id: &str,
    ) -> Result<LocalRules, ChannelError> {
        let code_hash = client.module(id).await?.code_hash;
        Self::fetch(client, store, id, &code_hash).await
    }

    /// The module id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The SHA-256 of the code, lowercase hex.
    pub fn code_hash(&self) -> &str {
        &self.code_hash
    }

    fn call(&self, entry: &str, input: &[u8]) -> Result<Vec<u8>, ChannelError> {
        let committed = MemState::new();
        let state = Overlay::new(&committed);
        let outcome = self
            .module
            .call_code(&state, entry, input, protocol::RULES_FUEL, None)
            .map_err(|e| rules_error(&self.id, format!("{entry}: {e}")))?;
        outcome
            .result
            .map_err(|e| rules_error(&self.id, format!("{entry}: {e}")))
    }

    fn flag(&self, entry: &str, input: &[u8]) -> Result<bool, ChannelError> {
        match self.call(entry, input)?.as_slice() {
            [0] => Ok(false),
            [1] => Ok(true),
            _ => Err(rules_error(&self.id, format!("{entry}: not a 0/1 answer"))),
        }
    }

    fn bounded_state(&self, s: Vec<u8>) -> Result<Vec<u8>, ChannelError> {
        if s.len() > protocol::MAX_STATE_BYTES {
            return Err(rules_error(
                &self.id,
                format!("a state over {} bytes", protocol::MAX_STATE_BYTES),
            ));
        }
        Ok(s)
    }

    /// `initial_state` of the game tagged `tag`: the state before move 0.
    pub fn initial_state(&self, tag: &[u8; 32]) -> Result<Vec<u8>, ChannelError> {
        let s = self.call("initial_state", tag)?;
        self.bounded_state(s)
    }

    /// `mover_at(n)`: seat 0 or 1. Errors when the rules name no seat (the chain refuses such
    /// rules too).
    pub fn mover_at(&self, n: u64) -> Result<u8, ChannelError> {
        match self.call("mover_at", &n.to_le_bytes())?.as_slice() {
            [s] if *s <= 1 => Ok(*s),
            _ => Err(rules_error(&self.id, format!("named no seat for move {n}"))),
        }
    }

    /// `validate_move`: whether `mover` may make `data` as move `n` in `state`.
    pub fn validate_move(
        &self,
        state: &[u8],
        n: u64,
        mover: u8,
        data: &[u8],
    ) -> Result<bool, ChannelError> {
        self.flag("validate_move", &encode_move(n, mover, state, data))
    }

    /// `apply_move`: the state after a valid move.
    pub fn apply_move(
        &self,
        state: &[u8],
        n: u64,
        mover: u8,
        data: &[u8],
    ) -> Result<Vec<u8>, ChannelError> {
        let s = self.call("apply_move", &encode_move(n, mover, state, data))?;
        self.bounded_state(s)
    }

    /// `is_over`.
    pub fn is_over(&self, state: &[u8]) -> Result<bool, ChannelError> {
        self.flag("is_over", state)
    }

    /// `winner` of a final state: a seat, `None` for a draw.
    pub fn winner(&self, state: &[u8]) -> Result<Option<u8>, ChannelError> {
        match self.call("winner", state)?.as_slice() {
            [s] if *s <= 1 => Ok(Some(*s)),
            [DRAW] => Ok(None),
            _ => Err(rules_error(&self.id, "named no winner")),
        }
    }

    /// The channel's usability check for the game tagged `tag`, run locally before staking:
    /// `mover_at(0)` is a seat and the initial state is not over.
    pub fn check_usable(&self, tag: &[u8; 32]) -> Result<(), ChannelError> {
        let s = self.initial_state(tag)?;
        self.mover_at(0)?;
        if self.is_over(&s)? {
            return Err(rules_error(&self.id, "its initial state is over"));
        }
        Ok(())
    }

    /// Plays `moves` (`moves[i].n == i`, each by `mover_at(i)`, legal, none after the end)
    /// from the initial state of the game tagged `tag`. Errors: [`ChannelError::Store`] naming
    /// the first move that does not replay (a record edited by hand), or the rules' own errors.
    pub fn replay(&self, tag: &[u8; 32], moves: &[HeldMove]) -> Result<Replay, ChannelError> {
        let mut states = vec![self.initial_state(tag)?];
        for (i, m) in moves.iter().enumerate() {
            let n = i as u64;
            let bad = |why: &str| ChannelError::Store(format!("held move {n} {why}"));
            let state = states.last().expect("never empty");
            if m.n != n {
                return Err(bad(&format!("is numbered {}", m.n)));
            }
            if self.is_over(state)? {
                return Err(bad("comes after the end of the game"));
            }
            let seat = self.mover_at(n)?;
            let data = hex::decode(&m.data).map_err(|_| bad("has data that is not hex"))?;
            if m.seat != seat || !self.validate_move(state, n, seat, &data)? {
                return Err(bad("is not a legal move by the seat due"));
            }
            let next = self.apply_move(state, n, seat, &data)?;
            states.push(next);
        }
        Ok(Replay { states })
    }
}

/// Held moves played out: the state before each move and after the last.
#[derive(Debug, Clone)]
pub struct Replay {
    /// `states[i]` is the state before move `i`; the last one is the current state.
    pub states: Vec<Vec<u8>>,
}

impl Replay {
    /// Moves made (the next move's number).
    pub fn n(&self) -> u64 {
        (self.states.len() - 1) as u64
    }

    /// The current state.
    pub fn state(&self) -> &[u8] {
        self.states.last().expect("never empty")
    }

    /// The hex SHA-256 of the state before move `i` (`i == n()`: the current state).
    pub fn hash_before(&self, i: u64) -> Option<String> {
        self.states.get(i as usize).map(|s| protocol::state_hash(s))
    }
}
