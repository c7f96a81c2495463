//! # The state transition
//!
//! One pure function from (state, block input) to (receipts, writes, state root, header):
//! [`execute_block`]. The node's sequencer builds blocks with it (through [`BlockBuilder`], which
//! lets it drop a transaction that would make the block invalid), and a replay verifier re-runs
//! it on the blocks it is given and compares the header. No I/O, no clock, no randomness: the
//! only inputs are the arguments.
//!
//! ## Steps of a block
//!
//! 1. The parent: the block's height is the parent's + 1, `prev_hash` the parent's hash; the
//!    given running state hash must have the parent's `state_root`, and the block time must be at
//!    least the parent's plus genesis's `min_block_interval_ms` (`chain::clock`; on a chain made
//!    before that rule, not before the parent's) ([`TransitionError::BadParent`]).
//! 2. The stateless checks of every transaction ([`SignedTx::check`]: size, shape, chain id,
//!    sender address, signature), run in parallel ([`check_txs`]); results keep block order.
//! 3. For each transaction in order, over one block overlay of the state:
//!    - its check result, then `body.nonce == nonce/<account>` (absent = 0), where the account
//!      is `from`, or a `session_game`'s `account`. A transaction failing
//!      either makes the whole block invalid ([`TransitionError::InvalidTx`], naming the first
//!      such index): such a transaction is never included;
//!    - `nonce/<account>` is incremented, whatever the action does (a failed transaction is
//!      included and uses its nonce); the action already sees the incremented value;
//!    - the action runs in its own overlay over the block overlay; on success its writes are
//!      merged into the block overlay, on failure they are dropped and the receipt is
//!      `{"ok": false, "error": "<text>", "events": []}`; on a chain with fees the sender then
//!      pays the transaction's fee, ok or not (`fees.rs`; a sender left below the minimum fee
//!      makes the block invalid, [`TxRejection::CannotPayFee`]); a transaction that would take
//!      the block over one of its bounds makes it invalid too ([`TxRejection::BlockFull`]):
//!      - `faucet`: `invalid: this chain has no faucet` when genesis has none; `invalid: the
//!        faucet pays only GOLD` for another token; else mints `genesis.faucet` GOLD base units to
//!        the sender (issuer `system`, through `gamechain_sdk::ledger::mint`, so GOLD's supply
//!        grows) and emits `faucet {"amount": "<base units>", "to": <sender>, "token": "GOLD"}`.
//!        Fuel 0.
//!      - `transfer`: `to` must be an address of the chain's network (not a `module:<id>`
//!        escrow: funds a module did not take through `escrow_in` would be stranded) and
//!        `amount` more than 0, both `invalid` otherwise; then `ledger::transfer` (its
//!        `insufficient …` / `invalid …` errors); emits `transfer {"amount", "from", "to",
//!        "token"}`. Fuel 0.
//!      - `game`: `not found: module <id>` when the block overlay has no `module/<id>`; else the
//!        module running the recorded code hash ([`Modules::resolve`]: a module deployed by an
//!        earlier transaction of the same block is live) gets `gc_apply` with the sender and the
//!        op's bytes exactly as sent ([`execute_apply`]); the receipt has its result, events
//!        and fuel.
//!      - `deploy`, `activate_upgrade`, `cancel_upgrade`, `set_policy` (see "Deploy and
//!        upgrade" below).
//!      - `authorize_session`, `revoke_session`, `session_game`: session keys
//!        (`session.rs`, `docs/session-keys.md`). A `session_game` carries and increments the
//!        nonce of the account it acts for (`TxBody::account`), not its signer's; before that,
//!        a session that does not allow it makes the block invalid
//!        ([`TxRejection::Session`]); its op runs as a `game` op with that account as the sender,
//!        then its session's cap is applied, and its fee is paid by that account.
//! 4. `end_block` of every module in the block overlay's `module/` records (genesis and
//!    deployed alike) that exports `gc_end_block`, in ascending id order, over the block
//!    overlay; writes kept on success, dropped on failure; one receipt each.
//! 5. The net writes: every key the block overlay wrote whose value differs from the state's
//!    (writes that end where they started are left out). The state root is updated with exactly
//!    those, `StateHash::apply(key, old, new)`: time proportional to the block's writes.
//! 6. The header: `tx_root` over the txids; `receipt_root` over the transaction receipts in
//!    block order **followed by** the end-of-block receipts in module id order (the count of
//!    transactions is fixed by `tx_root`, so the split is unambiguous); `state_root`; the
//!    sequencer is genesis's. The caller signs it.
//!
//! A [`HostError`] (a failure of the node, e.g. the wasm engine) is never a receipt: it aborts the
//! block ([`TransitionError::Host`]) and nothing may be committed. That includes code in the
//! state that this node cannot load although the chain accepted it at deploy time.
//!
//! ## Deploy and upgrade
//!
//! Every module has an upgrade policy (`chain::policy`): `immutable` (nobody may change its
//! code), `timelocked {delay_ms}` (the owner announces an upgrade; anyone may activate it once
//! block time reaches the announcement's time plus `delay_ms`; the owner may cancel it before)
//! or `owner` (the owner upgrades at once; for development). Genesis modules are immutable. A
//! policy can only be tightened. Who may send these actions to a node is also its operator's
//! policy (`deploy` at mempool admission, not here; a follower accepts whatever the sequencer
//! included); a node also refuses at admission, `403 upgrade_refused`, what
//! [`upgrade_refusal`] refuses here and no earlier transaction can change (the node's
//! `node/ledger/src/upgrade_admission.rs`), so a refused upgrade normally costs no nonce.
//!
//! Each failure below is a receipt `{"ok": false}` with this fixed text, no writes and the nonce
//! used.
//!
//! **`deploy {module, code, policy?}`** installs `code` as module `<id>`:
//!
//! 1. the id ([`check_module_id`]: 1–32 of `a-z0-9_`, starting with a letter, not in
//!    `RESERVED_MODULE_IDS`): ``invalid: module id `<id>` must be 1 to 32 of a-z, 0-9 and _,
//!    starting with a letter`` / ``invalid: module id `<id>` is reserved``;
//! 2. an existing `module/<id>` makes this an **upgrade** ([`upgrade_refusal`]): ``invalid: module
//!    <id> is a genesis module and cannot be upgraded`` (owner `system`, no recorded policy);
//!    ``invalid: module <id> is immutable and cannot be upgraded``; ``invalid: only the owner
//!    <owner> may upgrade module <id>``; ``invalid: module <id> has policy <policy>: a deploy
//!    cannot change it (send set_policy)`` when `policy` is given and is not the current one;
//!    then ``invalid: module <id> already runs code <hash>`` for the same code and ``invalid:
//!    module <id> has a pending upgrade to code <hash> already: cancel it first``;
//! 3. the code loads under the runtime's load-time rules (`WasmModule::new`, ABI.md):
//!    `invalid: module code: <LoadError>` (a [`LoadError::Host`] is a node failure instead).
//!
//! Then it writes `code/<hash>` (when absent; one copy however many ids run it), and:
//! - a **new module** gets `{"abi_version": 1, "code_hash", "deployed_height": <this block>,
//!   "owner": <sender>}` plus `"policy"` unless it is `owner` (a deploy without `policy` is an
//!   `owner` deploy; the record is then byte for byte what deploys wrote before policies
//!   existed). Event `deploy {"code_hash", "module", "owner", "upgrade": false}`, plus
//!   `"policy"` when the transaction names one.
//! - an upgrade of an **`owner`** module keeps `deployed_height`, `owner` and `policy`, sets the
//!   new `code_hash` and `"upgraded_height": <this block>`. Event `deploy {…, "upgrade": true}`,
//!   then its migration's.
//! - an upgrade of a **`timelocked`** module is only announced: the record gains
//!   `"pending_upgrade": {"activates_at_ms": <block time + delay_ms>, "announced_at_ms": <block
//!   time>, "code_hash"}` and the module keeps running its code. Event `upgrade_announced
//!   {"activates_at_ms", "announced_at_ms", "code_hash", "from_code_hash", "module"}`. Fuel 0.
//!
//! **`activate_upgrade {module}`**, from anyone: `not found: module <id>`; ``invalid: module
//! <id> has no pending upgrade``; ``invalid: the upgrade of module <id> to code <hash> may be
//! activated from block time <t> ms; this block's is <now> ms``. Then the pending code becomes
//! the module's as an `owner` upgrade does (`upgraded_height`, the migration), and
//! `pending_upgrade` is removed. Event `upgrade_activated {"code_hash", "from_code_hash",
//! "module"}`, then its migration's.
//!
//! **`cancel_upgrade {module}`**, from the owner: `not found: module <id>`; ``invalid: module
//! <id> is immutable and has no upgrades``; ``invalid: only the owner <owner> may cancel an
//! upgrade of module <id>``; ``invalid: module <id> has no pending upgrade``. Removes
//! `pending_upgrade` (the code stays in the code store). Event `upgrade_cancelled {"code_hash",
//! "module"}`.
//!
//! **`set_policy {module, policy}`**, from the owner: `not found: module <id>`; ``invalid: module
//! <id> is immutable: its policy cannot change``; ``invalid: only the owner <owner> may change
//! the policy of module <id>``; ``invalid: module <id> has policy <current>: a policy can only be
//! tightened (owner, then timelocked with a longer delay, then immutable), not changed to
//! <new>``. Records the policy. Event `policy_set {"module", "policy", "previous"}`; a pending
//! upgrade is then cancelled when the module becomes immutable (event `upgrade_cancelled`), or
//! rescheduled to its announcement time plus the new delay (event `upgrade_rescheduled
//! {"activates_at_ms", "code_hash", "module"}`).
//!
//! The module's state `m/<id>/…`, escrow and tokens are untouched by all of these. Old code
//! stays under `code/` (earlier blocks ran it; replay and calls by code hash need it).
//!
//! **Migration.** When the code an upgrade puts in effect (an `owner` upgrade, or an
//! activation) exports `gc_migrate` (ABI.md, "Upgrades"), it runs once, in that transaction,
//! after the record is written (it sees the new record): sender the module's owner, input
//! `{"from_code_hash":"<old>","to_code_hash":"<new>"}`, `fuel_apply` fuel, the module's own
//! context and state. Its events follow the upgrade's. If it fails (error, trap, out of fuel),
//! the whole action fails with its error text: the old code stays (and a pending upgrade stays
//! pending), nothing is written, the nonce is used. A new module's `gc_migrate` is not run, nor
//! is an announced one's before it takes effect.
//!
//! **Fuel.** These actions' receipt fuel is their migration's (0 without one): loading is the
//! node's work, bounded by the code size limit (`MAX_CODE_BYTES`) and the load-time rules.
//!
//! A deployed module is live from the next transaction (even in the same block): every game
//! transaction and every end of block reads `module/<id>` from the block overlay. Compiled code
//! is kept in memory by (id, code hash) and optionally on disk ([`Modules`], `cache.rs`).
//!
//! ## State keys
//!
//! The sdk's layout (`sdk-guest/src/keys.rs`) plus the chain's own:
//!
//! | key | value | written by |
//! |---|---|---|
//! | `m/<module>/<key>` | module state, bytes chosen by the module | the module (`put`) |
//! | `bal/<account>/<TOKEN>` | canonical decimal base units; absent = 0 | the bank (`ledger`) |
//! | `token/<TOKEN>` | JSON `TokenInfo` (GOLD: issuer `system`, 2 decimals) | genesis, the bank |
//! | `nonce/<address>` | canonical decimal u64, absent = 0: transactions of `address` included so far (the next valid nonce) | [`BlockBuilder`] |
//! | `module/<id>` | JSON [`ModuleRecord`]: `{"abi_version":1,"code_hash":"<hex>","deployed_height":0,"owner":"system"}`, plus `"pending_upgrade":{…}` while an upgrade is announced, `"policy":{…}` unless the policy is what its absence means (`owner`; `immutable` for owner `system`), `"upgraded_height":<n>` after an upgrade | genesis, the upgrade actions |
//! | `code/<hash>` | the raw wasm bytes whose lowercase hex SHA-256 is `<hash>` (stored once, whatever number of ids run it) | genesis, `deploy` |
//! | `chain/genesis` | lowercase hex of [`Genesis::hash`] (64 chars) | genesis |
//! | `session/<account>/<key>` | JSON `SessionRecord` (`chain::session`): `{"cap","expires_at_ms","id","modules","spent"}` | `authorize_session`, `revoke_session`, each included `session_game` (`session.rs`) |
//!
//! `chain/genesis` makes every state root, and so every block hash, commit to the genesis file
//! (chain id, fuel limits, engine configuration, faucet), not only to the state it created.
//! The state alone names (`module/<id>`) and holds (`code/<hash>`) every module's code, genesis
//! modules included, so anyone holding the state can check what runs.

use core::fmt;
use std::collections::BTreeMap;
use std::sync::Arc;

use gamechain_sdk::keys::GOLD;
use gamechain_sdk::{ledger, ActionError, BlockEnv, Checkpoint};
use serde_json::json;
use sha2::Digest;

use crate::chain::address::{check_address, Network, SecretKey};
use crate::chain::genesis::{check_module_id, SYSTEM_ACCOUNT};
use crate::chain::merkle::merkle_root;
use crate::chain::{
    block_receipt_root, genesis_writes, Action, Beacon, ElementCache, Genesis, GenesisError,
    Header, Receipt, ScheduledReceipt, SessionRefusal, SignedTx, StateHash, TxBody, TxError,
};
use crate::execute::{
    execute_apply_metered, execute_apply_with, execute_end_block_with, execute_migrate,
    execute_scheduled, Event, ScheduledRun, TxOutcome,
};
use crate::registry::{code_key, read_record, ModuleEntry, Modules, ResolveError};
use crate::state::{Overlay, State, WriteSet};
use gamechain_sdk::schedule::MAX_SCHEDULED_PER_BLOCK;
use gamechain_sdk::scheduler;
use gamechain_vm::HostError;
use gamechain_vm::LoadError;
use gamechain_vm::{Allocation, Origin, Runtime, RuntimeConfig, ABI_VERSION};

mod block_limits;
mod builder;
mod context;
mod error;
mod fees;
mod genesis;
mod session;
mod start_witness;
mod upgrade;

pub use crate::layout::{
    module_record_key, nonce_key, ModuleRecord, GENESIS_HASH_KEY, MODULE_RECORD_PREFIX,
    NONCE_PREFIX,
};
pub use block_limits::*;
pub use builder::*;
pub use context::*;
pub use error::*;
pub use genesis::*;
pub use session::{check_session, SessionUse};
pub use start_witness::{SessionWitness, StartWitness};
pub use upgrade::upgrade_refusal;

/// The nonce of `address` in `state`: the number of its transactions included so far, which is
/// the nonce its next transaction must carry. [`TransitionError::CorruptState`] when the stored
/// value is not a canonical decimal u64.
pub fn account_nonce(state: &dyn State, address: &str) -> Result<u64, TransitionError> {
    read_nonce(state, &nonce_key(address))
}

fn read_nonce(state: &dyn State, key: &str) -> Result<u64, TransitionError> {
    let Some(bytes) = state.get(key) else {
        return Ok(0);
    };
    std::str::from_utf8(&bytes)
        .ok()
        .and_then(|s| s.parse::<u64>().ok().filter(|n| n.to_string() == s))
        .ok_or_else(|| TransitionError::CorruptState {
            key: key.to_string(),
        })
}

/// Signs a transaction of `sk`'s address with `nonce` and `action` for chain `chain_id` (for
/// clients and tests): [`TxBody::sign`] of `{chain_id, from: sk.address(), nonce, action}`.
pub fn sign_tx(sk: &SecretKey, chain_id: &str, nonce: u64, action: Action) -> SignedTx {
    TxBody {
        chain_id: chain_id.to_string(),
        from: sk.address(),
        nonce,
        action,
    }
    .sign(sk)
}

/// What the sequencer chooses for a block (height and `prev_hash` come from the parent header,
/// the sequencer from genesis).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockInput {
    /// Block time, ms since the Unix epoch; at least the parent's plus the chain's
    /// `min_block_interval_ms`.
    pub time_ms: u64,
    /// The parent-chain anchor.
    pub checkpoint: Checkpoint,
    /// The block's randomness beacon: the genesis beacon key's signature of its height, on a
    /// chain with one (`chain::beacon`); `None` otherwise.
    pub beacon: Option<Beacon>,
    /// The transactions, in block order.
    pub txs: Vec<SignedTx>,
}

/// `log` lines a module wrote during a block (node log only; not hashed, not consensus).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleLog {
    /// The module.
    pub module: String,
    /// The transaction's index, or `None` for `end_block`.
    pub tx_index: Option<usize>,
    /// The lines.
    pub lines: Vec<String>,
}

/// What a block did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockOutput {
    /// The header to sign (`SignedHeader::sign`).
    pub header: Header,
    /// The txids, in block order.
    pub txids: Vec<String>,
    /// One receipt per scheduled call the block ran, in the order they ran (before its
    /// transactions).
    pub scheduled: Vec<ScheduledReceipt>,
    /// One receipt per transaction, in block order.
    pub receipts: Vec<Receipt>,
    /// One receipt per module exporting `gc_end_block`, in ascending id order.
    pub end_block: Vec<(String, Receipt)>,
    /// The block's net writes: keys whose value changed (`None`: deleted), sorted.
    pub writes: WriteSet,
    /// The running state hash after the block (persist it with `to_bytes`).
    pub state_hash: StateHash,
    /// Module log lines, in execution order.
    pub logs: Vec<ModuleLog>,
    /// The starting balance of each transaction step of a logged game, in block order (chains
    /// that keep game logs; empty elsewhere): a node's record, in no hash ([`StartWitness`]).
    pub start_witnesses: Vec<StartWitness>,
}

// ---------------------------------------------------------------------------------------------
// Signature checks

/// [`SignedTx::check`] of every transaction, on up to `threads` threads (contiguous chunks, at
/// least [`MIN_TXS_PER_THREAD`] transactions each); results in `txs` order whatever `threads` is.
pub fn check_txs(
    txs: &[SignedTx],
    chain_id: &str,
    network: Network,
    threads: usize,
) -> Vec<Result<TxBody, TxError>> {
    let check = |chunk: &[SignedTx]| {
        chunk
            .iter()
            .map(|tx| tx.check(chain_id, network))
            .collect::<Vec<_>>()
    };
    let threads = threads.min(txs.len() / MIN_TXS_PER_THREAD).max(1);
    if threads == 1 {
        return check(txs);
    }
    let mut chunks = txs.chunks(txs.len().div_ceil(threads));
    let first = chunks.next().unwrap_or_default();
    std::thread::scope(|s| {
        let handles: Vec<_> = chunks.map(|chunk| s.spawn(move || check(chunk))).collect();
        let mut out = check(first);
        for h in handles {
            out.extend(
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            );
        }
        out
    })
}

// ---------------------------------------------------------------------------------------------
// Execution

/// Executes a block on top of `parent` (whose state is `state`, with running hash
/// `state_hash`): checks every transaction's signature (in parallel), then runs the block as the
/// module docs describe. Pure: the same arguments give the same output on every machine.
pub fn execute_block(
    ctx: &ChainContext,
    state: &dyn State,
    state_hash: &StateHash,
    parent: &Header,
    input: &BlockInput,
) -> Result<BlockOutput, TransitionError> {
    let mut builder = BlockBuilder::new(
        ctx,
        state,
        state_hash,
        parent,
        input.time_ms,
        input.checkpoint.clone(),
        input.beacon,
    )?;
    let checks = check_txs(
        &input.txs,
        &ctx.genesis.chain_id,
        ctx.genesis.network,
        ctx.verify_threads,
    );
    for (index, (tx, checked)) in input.txs.iter().zip(checks).enumerate() {
        let body = checked.map_err(|e| TransitionError::InvalidTx {
            index,
            txid: tx.txid(),
            reason: TxRejection::Check(e),
        })?;
        builder.push_checked(tx, body)?;
    }
    builder.finish()
}

#[cfg(test)]
mod tests;
