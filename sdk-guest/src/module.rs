//! The module interface: `GameModule` (what an author implements), `Ctx` (what `apply` and
//! `end_block` may touch), `StateRead` (what `view` may read), and the JSON helpers on both.
//!
//! The interface every module is written against (`docs/tictactoe.md` shows one module end to
//! end; `docs/modules.md` the author's workflow). [`Ctx::checkpoint`] is the parent-chain anchor;
//! beyond the plain state, balance, token and event calls there are [`Ctx::public_random`],
//! [`CtxExt::get_json`]/[`CtxExt::put_json`], [`StateReadExt::module_json`].
//!
//! In a wasm guest these calls cross the ABI (ABI.md); natively they run against [`crate::MockCtx`]
//! or the runtime's host context. Both share one implementation ([`crate::KvCtx`]) so a module
//! behaves the same in unit tests and on the chain.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::pure::PureError;
use crate::ActionError;

/// A view's query: the HTTP query string as a sorted map (`?id=80566b04265ced78` →
/// `{"id": "80566b04265ced78"}`). Crosses the ABI as a JSON object of strings.
pub type Query = BTreeMap<String, String>;

/// The parent-chain anchor a block carries (named `DiviCheckpoint` in the reference design): the height and block
/// hash (lowercase hex) of a block of the parent chain that the sequencer had seen when it made
/// this block. A dev chain without a parent chain uses height 0 and an empty hash.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Parent-chain block height.
    pub height: u64,
    /// Parent-chain block hash, lowercase hex; empty when there is none.
    pub hash: String,
}

/// A game (or any other on-chain module) the node can run.
pub trait GameModule: Send + Sync {
    /// Stable id used in `action.game` and state keys, e.g. `"tictactoe"`. On a chain the id a
    /// module is deployed under wins; this is the id its author intends.
    fn id(&self) -> &'static str;
    /// Apply one op. Must be deterministic. Return `Err` to fail the transaction: every write,
    /// event and balance change it made is rolled back (its nonce is still used).
    fn apply(&self, ctx: &mut dyn Ctx, sender: &str, op: &Value) -> Result<(), ActionError>;
    /// Read-only query for the HTTP API (`GET /v1/games/<id>?…`).
    fn view(&self, state: &dyn StateRead, query: &Query) -> Result<Value, ActionError>;
    /// Runs once per block after every transaction, e.g. to expire stale games. Writes are kept
    /// on `Ok` and discarded on `Err`.
    fn end_block(&self, _ctx: &mut dyn Ctx) -> Result<(), ActionError> {
        Ok(())
    }
    /// Runs once when an upgrade puts this code in effect, before any op reaches it, to rewrite
    /// the state the previous code left (`from`: the owner it runs as, the old and new code
    /// hashes). Writes and events are kept on `Ok`; on `Err` the whole upgrade is refused and
    /// the old code keeps running. Exported as `gc_migrate` only with
    /// `export_module!(M, migrate)`: without it the chain runs nothing at an upgrade, whatever
    /// this method does. The default does nothing.
    fn migrate(&self, _ctx: &mut dyn Ctx, _from: &crate::Migration) -> Result<(), ActionError> {
        Ok(())
    }
    /// The module's schema (`docs/modules.md`, "Schema"): the JSON text [`crate::schema!`]
    /// made, the same const `export_module!(M, schema = …)` embeds in the `.wasm`; `None`
    /// (the default) when the module declares none. A loaded wasm module answers its
    /// `gamechain.schema` section. The author kit's harness checks every op, event and view of
    /// a scenario against it.
    fn schema(&self) -> Option<&str> {
        None
    }
    /// Runs a call this module scheduled with [`Ctx::schedule`], in the block it was due
    /// (`schedule.rs`): no sender and no txid; [`Ctx::draw`] works here (and only here) on a
    /// chain with a beacon. Writes and events are kept on `Ok` and discarded on `Err`; the call
    /// has its own receipt either way. The default refuses every call (a module that schedules
    /// nothing never gets one).
    fn scheduled(
        &self,
        _ctx: &mut dyn Ctx,
        _call: &crate::ScheduledCall,
    ) -> Result<(), ActionError> {
        Err(ActionError::invalid("this module takes no scheduled calls"))
    }
}

/// What `apply` and `end_block` may touch: scoped to one module and one transaction.
///
/// Keys given to `get`/`put`/`delete`/`scan` are relative to the module: `put("game/1", …)` is
/// stored as `m/<module>/game/1`. Amounts are base units. Accounts are addresses or
/// `module:<id>` escrow accounts; tokens are symbols such as `GOLD`.
pub trait Ctx {
    /// This module's id.
    fn module(&self) -> &str;
    /// Height of the block being built (genesis is 0).
    fn height(&self) -> u64;
    /// The block's timestamp in milliseconds since the Unix epoch, as the sequencer set it.
    fn block_time_ms(&self) -> u64;
    /// The transaction id: lowercase hex SHA-256 of the signed body (64 chars). Empty in
    /// `end_block`.
    fn txid(&self) -> &str;
    /// The parent-chain anchor the block carries.
    fn checkpoint(&self) -> &Checkpoint;
    /// The sequencer's address.
    fn sequencer(&self) -> &str;

    /// Module-scoped read; `key` is read from `m/<module>/<key>`.
    fn get(&self, key: &str) -> Option<Vec<u8>>;
    /// Module-scoped write to `m/<module>/<key>`.
    fn put(&mut self, key: &str, value: Vec<u8>);
    /// Module-scoped delete of `m/<module>/<key>`; deleting a missing key does nothing.
    fn delete(&mut self, key: &str);
    /// Module-scoped scan in ascending key order: keys under `prefix`, strictly after
    /// `start_after` when given (both relative to the module), at most `limit` entries. Returned
    /// keys have the module prefix removed.
    fn scan(&self, prefix: &str, start_after: Option<&str>, limit: usize)
        -> Vec<(String, Vec<u8>)>;
    /// Read any key, including other modules' state (`m/other/...`, `bal/...`). Read-only.
    fn read_raw(&self, key: &str) -> Option<Vec<u8>>;
    /// Scan raw keys (any module's state, balances, …) as [`StateRead::scan_raw`]: keys under
    /// `prefix`, strictly after `start_after` (a raw key), at most `limit`, returned whole.
    fn scan_raw(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> Vec<(String, Vec<u8>)>;

    /// Balance of `account` in `token`, base units; 0 when it holds none.
    fn balance(&self, account: &str, token: &str) -> u128;
    /// Move `amount` of `token` from `from` into this module's escrow account `module:<id>`.
    /// `from` must be the transaction's sender (`not allowed` otherwise, and always in
    /// `end_block`); `insufficient` when it holds less than `amount`.
    fn escrow_in(&mut self, from: &str, token: &str, amount: u128) -> Result<(), ActionError>;
    /// Move `amount` of `token` from `module:<id>` to `to`; `insufficient` when the escrow holds
    /// less than `amount`.
    fn escrow_out(&mut self, to: &str, token: &str, amount: u128) -> Result<(), ActionError>;
    /// Create a token whose issuer is `module:<id>`. `symbol`: 1–12 of `A-Z0-9`, starting with a
    /// letter; `invalid` otherwise; `conflict` when it exists. `max_supply` caps minting.
    fn create_token(
        &mut self,
        symbol: &str,
        name: &str,
        decimals: u8,
        max_supply: Option<u128>,
    ) -> Result<(), ActionError>;
    /// Mint a token this module issued to `to`: `not_found` for an unknown token, `not allowed`
    /// when another account issued it, `invalid` past its max supply.
    fn mint(&mut self, to: &str, token: &str, amount: u128) -> Result<(), ActionError>;
    /// Burn a token this module issued from `from`'s balance: errors as `mint`, plus
    /// `insufficient` when `from` holds less than `amount`.
    fn burn(&mut self, from: &str, token: &str, amount: u128) -> Result<(), ActionError>;

    /// Record an event `{kind, data}` in the transaction's receipt. Discarded if the transaction
    /// fails.
    fn emit(&mut self, kind: &str, data: Value);
    /// 32 bytes that anyone can compute and nobody but the sender can steer: SHA-256 over
    /// `"gamechain.public_random.v1"`, the txid, the height and a per-call counter (see ABI.md,
    /// `public_random`). Public: never use it to hide anything.
    fn public_random(&mut self) -> [u8; 32];

    /// Whether `sig` (base64, 88 chars) is a Divi signed message of `msg` by the key of
    /// `address` (ABI.md `verify_signed`; charged `gas.verify_signed` whatever the answer). A
    /// bad signature, address or encoding is `false`, never an error. Natively (`MockCtx`,
    /// `KvCtx`) this default answers `false`: signatures are checked on the runtime.
    fn verify_signed(&self, address: &str, msg: &[u8], sig: &str) -> bool {
        let _ = (address, msg, sig);
        false
    }

    /// Runs the pure entry point `gc_pure_<entry>` of module `module` on `input`, read-only,
    /// with at most `fuel` of this call's fuel (ABI.md `call_pure`). Natively this default
    /// answers [`PureError::NotFound`]: other modules run on the runtime.
    fn call_pure(
        &self,
        module: &str,
        entry: &str,
        input: &[u8],
        fuel: u64,
    ) -> Result<Vec<u8>, PureError> {
        let _ = (module, entry, input, fuel);
        Err(PureError::NotFound)
    }

    /// Runs the pure entry point `gc_pure_<entry>` of the code whose SHA-256 is `code_hash`
    /// (the chain's content-addressed code store keeps every code ever deployed, whatever module
    /// ids run now) on `input`, with at most `fuel` of this call's fuel and **no state at all**:
    /// inside it every state, bank, context and module import traps (the caller sees
    /// [`PureError::Trapped`]), so the answer depends only on the code and `input` (ABI.md
    /// `call_code`). A game pinned to its rules' code calls them this way. Natively this
    /// default answers [`PureError::NotFound`]; [`crate::MockCtx`] runs code registered with
    /// [`crate::MockKv::add_code`].
    fn call_code(
        &self,
        code_hash: &[u8; 32],
        entry: &str,
        input: &[u8],
        fuel: u64,
    ) -> Result<Vec<u8>, PureError> {
        let _ = (code_hash, entry, input, fuel);
        Err(PureError::NotFound)
    }

    /// The SHA-256 of the code module `module` runs as of this call (its `module/<id>` record:
    /// an upgrade changes it), `None` when there is no such module (ABI.md `module_code_hash`).
    /// A module that relies on another's behaviour (a channel on its rules) resolves the id
    /// once and then calls the code by hash ([`Ctx::call_code`]), which no upgrade changes.
    /// Natively this default answers `None`; [`crate::MockCtx`] answers what
    /// [`crate::MockKv::set_module_code`] set.
    fn module_code_hash(&self, module: &str) -> Option<[u8; 32]> {
        let _ = module;
        None
    }

    /// Asks the chain to call this module's [`GameModule::scheduled`] with `payload` when `at`
    /// is due, with `fuel` fuel (1 to the chain's `fuel_apply`), and returns the call's id
    /// (`schedule.rs`: when it runs, the bounds, what it costs). The whole `fuel` is charged to
    /// this call now. Errors are [`crate::ScheduleError`]s (fixed texts; `?` turns them into
    /// `invalid: …`). A call fixed this way is the only place a draw is allowed: whatever it
    /// draws comes from the beacon of the block that runs it, which nobody knows now.
    fn schedule(
        &mut self,
        at: crate::At,
        payload: &[u8],
        fuel: u64,
    ) -> Result<u64, crate::ScheduleError> {
        let _ = (at, payload, fuel);
        Err(crate::ScheduleError::NotHere)
    }

    /// Reserves a seat for one sealed move (`docs/sealed-moves.md`): a call of this module's
    /// [`GameModule::scheduled`] in the block of height `round`, before its other calls, with
    /// `payload`, `fuel` and what the move later sealed into it with [`Ctx::seal`] opens to under
    /// that block's beacon ([`crate::ScheduledCall::sealed`]; void when none was). From `apply`,
    /// `migrate` or a scheduled call, paid as [`Ctx::schedule`] plus the opening (ABI.md). A
    /// round opens at most [`crate::schedule::MAX_SEALED_PER_ROUND`] sealed calls
    /// ([`ScheduleError::RoundFull`](crate::ScheduleError::RoundFull): choose a later one);
    /// reserve every seat of a game when it starts, so nobody can fill the round later to keep
    /// a player's move out. Returns the call's id; errors: [`crate::ScheduleError`].
    fn schedule_sealed(
        &mut self,
        round: u64,
        payload: &[u8],
        fuel: u64,
    ) -> Result<u64, crate::ScheduleError> {
        let _ = (round, payload, fuel);
        Err(crate::ScheduleError::NotHere)
    }

    /// Seals `sealed` (an envelope of [`crate::schedule::SEALED_BYTES`] made by `gamechain seal`
    /// or the JS SDK's `sealMove`) into this module's waiting sealed call `id`. Only from a
    /// transaction: the envelope's proof must bind it to this module, the transaction's sender,
    /// `tag` (the module's choice, at most 64 bytes: its game and seat, say) and the call's
    /// round, so a move copied from another game, seat, round or player is refused
    /// ([`ScheduleError::SealUnbound`](crate::ScheduleError::SealUnbound)); a call takes one
    /// move. Costs the proof check (ABI.md). Errors: `NotHere`, `NotSealable`, `AlreadySealed`,
    /// `SealMalformed`, `SealUnbound`.
    fn seal(&mut self, id: u64, sealed: &[u8], tag: &[u8]) -> Result<(), crate::ScheduleError> {
        let _ = (id, sealed, tag);
        Err(crate::ScheduleError::NotHere)
    }

    /// Removes this module's waiting call `id`; `false` when no such call of this module waits
    /// (it ran already, was cancelled, or is another module's). Nothing is refunded.
    fn cancel_scheduled(&mut self, id: u64) -> bool {
        let _ = id;
        false
    }

    /// 32 random bytes nobody could know or steer when the running call was scheduled: SHA-256
    /// over this block's beacon, the module, the call id and a per-call counter (ABI.md `draw`).
    /// Only in [`GameModule::scheduled`] on a chain with a beacon; anywhere else the call traps
    /// on chain with `internal: no draw here: …` ([`crate::schedule::NO_DRAW`]) and this
    /// returns `None` natively. Use [`crate::draw_below`] for a number in a range.
    fn draw(&mut self) -> Option<[u8; 32]> {
        None
    }
}

/// A uniform number in `0..n` (`n >= 1`) from [`Ctx::draw`], without modulo bias (rejection
/// sampling over 64-bit words; each try is one draw). Panics (traps on chain) where `draw` is
/// not allowed, with [`crate::schedule::NO_DRAW`]'s text.
pub fn draw_below(ctx: &mut dyn Ctx, n: u64) -> u64 {
    assert!(n > 0, "draw_below needs n >= 1");
    // The largest multiple of n that fits in u64's range, as a bound for unbiased results.
    let zone = u64::MAX - (u64::MAX % n);
    loop {
        let bytes = ctx.draw().expect(crate::schedule::NO_DRAW);
        for chunk in bytes.chunks_exact(8) {
            let v = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
            if v < zone {
                return v % n;
            }
        }
    }
}

/// What `view` may read: the whole state, raw keys, read-only.
pub trait StateRead {
    /// The value at a raw key (`m/<module>/<key>`, `bal/<account>/<TOKEN>`, …).
    fn read_raw(&self, key: &str) -> Option<Vec<u8>>;
    /// Raw keys under `prefix` in ascending order, strictly after `start_after` when given (a raw
    /// key), at most `limit` entries. Keys are returned whole.
    fn scan_raw(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> Vec<(String, Vec<u8>)>;
}

/// JSON helpers for every [`Ctx`], concrete or `dyn`.
pub trait CtxExt: Ctx {
    /// Read and decode a module-scoped JSON value. `Ok(None)` when the key is missing;
    /// `internal` when the stored bytes are not a valid `T`.
    fn get_json<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, ActionError> {
        decode_json(key, self.get(key))
    }
    /// Encode `value` as JSON and write it to the module-scoped `key`.
    fn put_json<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) {
        let bytes = serde_json::to_vec(value)
            .expect("serialising to JSON in memory cannot fail for plain data");
        self.put(key, bytes);
    }
}

impl<C: Ctx + ?Sized> CtxExt for C {}

/// JSON helpers for every [`StateRead`].
pub trait StateReadExt: StateRead {
    /// Read and decode `m/<module>/<key>` as JSON. `Ok(None)` when missing; `internal` when the
    /// bytes are not a valid `T`.
    fn module_json<T: DeserializeOwned>(
        &self,
        module: &str,
        key: &str,
    ) -> Result<Option<T>, ActionError> {
        decode_json(key, self.read_raw(&crate::keys::module_key(module, key)))
    }
}

impl<S: StateRead + ?Sized> StateReadExt for S {}

fn decode_json<T: DeserializeOwned>(
    key: &str,
    bytes: Option<Vec<u8>>,
) -> Result<Option<T>, ActionError> {
    match bytes {
        None => Ok(None),
        Some(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            ActionError::internal(format!("stored value at `{key}` is not valid: {e}"))
        }),
    }
}
