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
//!    given running state hash must have the parent's `state_root`, and the block time may not be
//!    before the parent's ([`TransitionError::BadParent`]).
//! 2. The stateless checks of every transaction ([`SignedTx::check`]: size, shape, chain id,
//!    sender address, signature), run in parallel ([`check_txs`]); results keep block order.
//! 3. For each transaction in order, over one block overlay of the state:
//!    - its check result, then `body.nonce == nonce/<from>` (absent = 0). A transaction failing
//!      either makes the whole block invalid ([`TransitionError::InvalidTx`], naming the first
//!      such index): such a transaction is never included;
//!    - `nonce/<from>` is incremented, whatever the action does (a failed transaction is
//!      included and uses its nonce); the action already sees the incremented value;
//!    - the action runs in its own overlay over the block overlay; on success its writes are
//!      merged into the block overlay, on failure they are dropped and the receipt is
//!      `{"ok": false, "error": "<text>", "events": []}`:
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
//!      - `deploy` (see "Deploy and upgrade" below).
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
//! `{"type": "deploy", "module": "<id>", "code": "<base64>"}` installs `code` as module `<id>`.
//! Who may send one is the sequencer operator's policy, enforced at mempool admission, not here
//! (a follower accepts whatever the sequencer included). Checks, in order; each failure is a
//! receipt `{"ok": false}` with this fixed text, no writes and the nonce used:
//!
//! 1. the id ([`check_module_id`]: 1–32 of `a-z0-9_`, starting with a letter, not in
//!    `RESERVED_MODULE_IDS`): ``invalid: module id `<id>` must be 1 to 32 of a-z, 0-9 and _,
//!    starting with a letter`` / ``invalid: module id `<id>` is reserved``;
//! 2. an existing `module/<id>` makes this an **upgrade**: ``invalid: module <id> is a genesis
//!    module and cannot be upgraded`` when its owner is `system`; ``invalid: only the owner
//!    <owner> may upgrade module <id>`` for anybody else; ``invalid: module <id> already runs
//!    code <hash>`` for the same code;
//! 3. the code loads under the runtime's load-time rules (`WasmModule::new`, ABI.md):
//!    `invalid: module code: <LoadError>` (a [`LoadError::Host`] is a node failure instead).
//!
//! Then it writes `code/<hash>` (when absent; one copy however many ids run it) and
//! `module/<id>`: a new module gets `{"abi_version": 1, "code_hash", "deployed_height": <this
//! block>, "owner": <sender>}`; an upgrade keeps `deployed_height` and `owner`, sets the new
//! `code_hash` and `"upgraded_height": <this block>`. The module's state `m/<id>/…`, escrow and
//! tokens are untouched. The event is `deploy {"code_hash", "module", "owner", "upgrade":
//! <bool>}`. The old code stays under `code/` (earlier blocks ran it; replay needs it).
//!
//! **Migration.** When an upgrade's new code exports `gc_migrate` (ABI.md, "Upgrades"), it runs
//! once, in this transaction, after the writes above (it sees the new record): sender the owner,
//! input `{"from_code_hash":"<old>","to_code_hash":"<new>"}`, `fuel_apply` fuel, the module's
//! own context and state. Its events follow `deploy`. If it fails (error, trap, out of fuel),
//! the whole deploy fails with its error text: the old code stays, nothing is written, the nonce
//! is used. A new module's `gc_migrate` is not run.
//!
//! **Fuel.** A deploy's receipt fuel is its migration's (0 without one): loading is the node's
//! work, bounded by the code size limit (`MAX_CODE_BYTES`) and the load-time rules.
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
//! | `module/<id>` | JSON [`ModuleRecord`]: `{"abi_version":1,"code_hash":"<hex>","deployed_height":0,"owner":"system"}`, plus `"upgraded_height":<n>` after an upgrade | genesis, `deploy` |
//! | `code/<hash>` | the raw wasm bytes whose lowercase hex SHA-256 is `<hash>` (stored once, whatever number of ids run it) | genesis, `deploy` |
//! | `chain/genesis` | lowercase hex of [`Genesis::hash`] (64 chars) | genesis |
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
use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::Digest;

use crate::chain::address::{check_address, Network, SecretKey};
use crate::chain::genesis::{check_module_id, SYSTEM_ACCOUNT};
use crate::chain::merkle::merkle_root;
use crate::chain::{
    genesis_writes, Action, Genesis, GenesisError, Header, Receipt, SignedTx, StateHash, TxBody,
    TxError,
};
use crate::engine::{Allocation, Runtime, RuntimeConfig, ABI_VERSION};
use crate::execute::{execute_apply, execute_end_block, execute_migrate, Event, TxOutcome};
use crate::module::LoadError;
use crate::registry::{code_key, read_record, ModuleEntry, Modules, ResolveError};
use crate::state::{Overlay, State, WriteSet};
use crate::trap::HostError;

/// Prefix of the nonce keys: `nonce/<address>`.
pub const NONCE_PREFIX: &str = "nonce/";
/// Prefix of the module records: `module/<id>`.
pub const MODULE_RECORD_PREFIX: &str = "module/";
/// The key holding the genesis hash (lowercase hex).
pub const GENESIS_HASH_KEY: &str = "chain/genesis";
/// Most threads [`ChainContext`] uses for signature checks by default.
pub const MAX_VERIFY_THREADS: usize = 8;
/// Fewest transactions per thread for which [`check_txs`] starts a thread (a signature check is
/// ~25 µs, starting a scoped thread ~20 µs).
pub const MIN_TXS_PER_THREAD: usize = 8;

/// `nonce/<address>`.
pub fn nonce_key(address: &str) -> String {
    format!("{NONCE_PREFIX}{address}")
}

/// `module/<id>`.
pub fn module_record_key(id: &str) -> String {
    format!("{MODULE_RECORD_PREFIX}{id}")
}

/// A deployed module's record at `module/<id>`. JSON with the fields in this (sorted) order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModuleRecord {
    /// The guest ABI version it was deployed for (1).
    pub abi_version: u32,
    /// Lowercase hex SHA-256 of its wasm bytes.
    pub code_hash: String,
    /// The height it was deployed at (0 for genesis modules).
    pub deployed_height: u64,
    /// Who deployed it: `system` for genesis modules, else an address. Only the owner may
    /// upgrade it; genesis modules cannot be upgraded.
    pub owner: String,
    /// The height of its last upgrade; absent (not `null`) when never upgraded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgraded_height: Option<u64>,
}

impl ModuleRecord {
    /// The stored bytes: compact JSON.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a ModuleRecord always serialises")
    }
}

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

// ---------------------------------------------------------------------------------------------
// Genesis

/// What genesis creates: the full state, its running hash and the (unsigned) genesis header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenesisState {
    /// Every entry of the genesis state, sorted by key.
    pub entries: Vec<(String, Vec<u8>)>,
    /// The running state hash of `entries`.
    pub state_hash: StateHash,
    /// Block 0, for the sequencer to sign ([`genesis_header`]).
    pub header: Header,
}

/// The genesis state: [`genesis_writes`] (GOLD and the initial balances), per genesis module a
/// [`ModuleRecord`] (`owner` `system`, `deployed_height` 0, `abi_version` 1) and its code at
/// `code/<hash>`, and `chain/genesis`. `codes` maps code hashes to wasm bytes (extra entries
/// are ignored). Validates `genesis` first; [`GenesisError::Invalid`] when a module's code is
/// missing from `codes` or does not hash to its code hash.
pub fn genesis_state(
    genesis: &Genesis,
    codes: &BTreeMap<String, Vec<u8>>,
) -> Result<GenesisState, GenesisError> {
    let mut map: BTreeMap<String, Vec<u8>> = genesis_writes(genesis)?.into_iter().collect();
    for m in &genesis.modules {
        let wasm = codes.get(&m.code_hash).ok_or_else(|| {
            GenesisError::Invalid(format!(
                "module `{}`: no code with hash {}",
                m.id, m.code_hash
            ))
        })?;
        if hex::encode(sha2::Sha256::digest(wasm)) != m.code_hash {
            return Err(GenesisError::Invalid(format!(
                "module `{}`: the code given does not hash to {}",
                m.id, m.code_hash
            )));
        }
        let record = ModuleRecord {
            abi_version: ABI_VERSION,
            code_hash: m.code_hash.clone(),
            deployed_height: 0,
            owner: SYSTEM_ACCOUNT.to_string(),
            upgraded_height: None,
        };
        map.insert(module_record_key(&m.id), record.to_bytes());
        map.insert(code_key(&m.code_hash), wasm.clone());
    }
    map.insert(
        GENESIS_HASH_KEY.to_string(),
        hex::encode(genesis.hash()).into_bytes(),
    );
    let state_hash = StateHash::from_entries(&map);
    let header = genesis_header(genesis, &state_hash);
    Ok(GenesisState {
        entries: map.into_iter().collect(),
        state_hash,
        header,
    })
}

/// The genesis header: height 0, `prev_hash` 32 zero bytes, `time_ms` genesis's, the sequencer
/// genesis's, checkpoint height 0 with an empty hash, no transactions and no receipts (both
/// roots are the empty-list Merkle root, SHA-256 of nothing), and `state_hash`'s root.
pub fn genesis_header(genesis: &Genesis, state_hash: &StateHash) -> Header {
    let empty = merkle_root::<[u8; 32]>(&[]);
    Header {
        height: 0,
        prev_hash: [0; 32],
        time_ms: genesis.time_ms,
        sequencer: genesis.sequencer.clone(),
        checkpoint: Checkpoint::default(),
        tx_root: empty,
        receipt_root: empty,
        state_root: state_hash.root(),
    }
}

/// The runtime configuration genesis prescribes (fuel and memory limits), with the node's own
/// choice of `allocation` (not consensus). Its `config_hash()` equals
/// `genesis.engine_config_hash` unless this build's runtime differs from the chain's.
pub fn runtime_config(genesis: &Genesis, allocation: Allocation) -> RuntimeConfig {
    RuntimeConfig {
        fuel_apply: genesis.fuel_apply,
        fuel_view: genesis.fuel_view,
        fuel_end_block: genesis.fuel_end_block,
        memory_limit_bytes: usize::try_from(genesis.memory_limit_bytes).unwrap_or(usize::MAX),
        allocation,
        // Not consensus: this build's defaults (instance reuse on, no verification).
        ..RuntimeConfig::default()
    }
}

// ---------------------------------------------------------------------------------------------
// Context

/// Everything fixed for a chain: its genesis, the runtime and the loaded modules, checked
/// against each other by [`ChainContext::new`].
pub struct ChainContext {
    genesis: Genesis,
    runtime: Arc<Runtime>,
    modules: Modules,
    verify_threads: usize,
}

impl fmt::Debug for ChainContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChainContext")
            .field("genesis", &self.genesis)
            .field("runtime_config", self.runtime.config())
            .field("modules", &self.modules)
            .field("verify_threads", &self.verify_threads)
            .finish()
    }
}

/// Why a [`ChainContext`] cannot be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContextError {
    /// The genesis file is not valid.
    Genesis(GenesisError),
    /// The runtime (or a module's runtime) does not run under genesis's configuration.
    Runtime(String),
    /// A loaded module belongs to another runtime.
    Modules(String),
}

impl fmt::Display for ContextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Genesis(e) => write!(f, "{e}"),
            Self::Runtime(m) => write!(f, "runtime does not match genesis: {m}"),
            Self::Modules(m) => write!(f, "modules do not match the context: {m}"),
        }
    }
}

impl std::error::Error for ContextError {}

/// `Err` naming the first consensus setting of `config` that differs from `genesis`.
fn check_runtime(genesis: &Genesis, config: &RuntimeConfig) -> Result<(), String> {
    let pairs = [
        ("fuel_apply", genesis.fuel_apply, config.fuel_apply),
        (
            "fuel_end_block",
            genesis.fuel_end_block,
            config.fuel_end_block,
        ),
        (
            "memory_limit_bytes",
            genesis.memory_limit_bytes,
            config.memory_limit_bytes as u64,
        ),
    ];
    for (name, want, have) in pairs {
        if want != have {
            return Err(format!("{name} is {have}, genesis says {want}"));
        }
    }
    let hash = config.config_hash();
    if hash != genesis.engine_config_hash {
        return Err(format!(
            "engine config hash is {hash}, genesis says {} (another wasmtime, gas table or ABI)",
            genesis.engine_config_hash
        ));
    }
    Ok(())
}

fn default_verify_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(MAX_VERIFY_THREADS)
}

impl ChainContext {
    /// Checks that `genesis` is valid and that `runtime` and every module already loaded in
    /// `modules` run under genesis's fuel and memory limits and `engine_config_hash`. (Which
    /// modules exist is the state's business: `modules` may hold any, or none; see
    /// [`Modules`].)
    pub fn new(
        genesis: Genesis,
        runtime: Arc<Runtime>,
        modules: Modules,
    ) -> Result<Self, ContextError> {
        genesis.validate().map_err(ContextError::Genesis)?;
        check_runtime(&genesis, runtime.config()).map_err(ContextError::Runtime)?;
        for entry in modules.iter() {
            let id = entry.module.id();
            check_runtime(&genesis, entry.module.runtime().config())
                .map_err(|m| ContextError::Runtime(format!("module `{id}`: {m}")))?;
            if !Arc::ptr_eq(entry.module.runtime(), &runtime) {
                return Err(ContextError::Modules(format!(
                    "module `{id}` was loaded into another runtime than the context's"
                )));
            }
        }
        Ok(Self {
            genesis,
            runtime,
            modules,
            verify_threads: default_verify_threads(),
        })
    }

    /// Sets how many threads [`execute_block`] checks signatures on (at least 1; the result never
    /// depends on it). Default: the machine's parallelism, at most [`MAX_VERIFY_THREADS`].
    pub fn with_verify_threads(mut self, threads: usize) -> Self {
        self.verify_threads = threads.max(1);
        self
    }

    /// The genesis.
    pub fn genesis(&self) -> &Genesis {
        &self.genesis
    }

    /// The runtime.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    /// The compiled modules.
    pub fn modules(&self) -> &Modules {
        &self.modules
    }

    /// The module `id` as of `state` (a block overlay, or a node's committed state): `None`
    /// when `state` has no `module/<id>`. See [`Modules::resolve`].
    pub fn module(
        &self,
        state: &dyn State,
        id: &str,
    ) -> Result<Option<ModuleEntry>, TransitionError> {
        self.modules
            .resolve(&self.runtime, state, id)
            .map_err(TransitionError::from)
    }

    /// Threads used for signature checks.
    pub fn verify_threads(&self) -> usize {
        self.verify_threads
    }
}

// ---------------------------------------------------------------------------------------------
// Errors, inputs, outputs

/// Why a transaction cannot be in a block (it makes the block invalid; the sequencer leaves it
/// out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxRejection {
    /// A stateless check failed: size, shape, chain id, sender address or signature.
    Check(TxError),
    /// The nonce is not the sender's current nonce (`found < expected`: already used;
    /// `found > expected`: too early).
    Nonce {
        /// The sender's current nonce.
        expected: u64,
        /// The transaction's.
        found: u64,
    },
    /// The sender's nonce is `u64::MAX`: it can send nothing more.
    NonceExhausted,
}

impl fmt::Display for TxRejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Check(e) => write!(f, "{e}"),
            Self::Nonce { expected, found } => {
                write!(f, "nonce is {found}, the sender's next nonce is {expected}")
            }
            Self::NonceExhausted => f.write_str("the sender's nonce is exhausted"),
        }
    }
}

/// Why a block could not be executed. Nothing of it may be committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransitionError {
    /// Transaction `index` (0-based, block order) cannot be included: the block is invalid.
    InvalidTx {
        /// Its position in the block.
        index: usize,
        /// Its txid.
        txid: String,
        /// Why.
        reason: TxRejection,
    },
    /// The block does not follow the given parent (state hash, time or height).
    BadParent(String),
    /// A chain key holds a value this code never writes (a node's storage is corrupt).
    CorruptState {
        /// The key.
        key: String,
    },
    /// The node failed (wasm engine, instance pool): retry or stop; no receipt is produced.
    Host(HostError),
}

impl fmt::Display for TransitionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidTx {
                index,
                txid,
                reason,
            } => write!(f, "transaction {index} ({txid}) is invalid: {reason}"),
            Self::BadParent(m) => write!(f, "block does not follow its parent: {m}"),
            Self::CorruptState { key } => write!(f, "state key `{key}` holds a malformed value"),
            Self::Host(e) => write!(f, "node failure: {e}"),
        }
    }
}

impl std::error::Error for TransitionError {}

impl From<HostError> for TransitionError {
    fn from(e: HostError) -> Self {
        Self::Host(e)
    }
}

impl From<ResolveError> for TransitionError {
    fn from(e: ResolveError) -> Self {
        match e {
            ResolveError::CorruptState { key } => Self::CorruptState { key },
            ResolveError::Host(e) => Self::Host(e),
        }
    }
}

/// What the sequencer chooses for a block (height and `prev_hash` come from the parent header,
/// the sequencer from genesis).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockInput {
    /// Block time, ms since the Unix epoch; not before the parent's.
    pub time_ms: u64,
    /// The parent-chain anchor.
    pub checkpoint: Checkpoint,
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

/// A block under construction, one transaction at a time: what [`execute_block`] runs, and what
/// a sequencer uses to leave out transactions that would make the block invalid. A rejected
/// [`push`](Self::push) changes nothing; after a [`TransitionError::Host`] the builder refuses
/// everything (drop it). Pushing transactions `t` and then [`finish`](Self::finish) gives exactly
/// `execute_block` of `t`.
pub struct BlockBuilder<'a> {
    ctx: &'a ChainContext,
    state: &'a dyn State,
    state_hash: StateHash,
    env: BlockEnv,
    prev_hash: [u8; 32],
    overlay: Overlay<'a>,
    txids: Vec<[u8; 32]>,
    receipts: Vec<Receipt>,
    logs: Vec<ModuleLog>,
    failed: Option<TransitionError>,
}

/// What one action produced, before it is merged.
struct ActionOutcome {
    receipt: Receipt,
    writes: WriteSet,
    log: Vec<String>,
}

impl ActionOutcome {
    fn from_tx(out: TxOutcome) -> Self {
        let receipt = match out.result {
            Ok(()) => Receipt::success(out.events, out.fuel_used),
            Err(e) => Receipt::failure(e, out.fuel_used),
        };
        let writes = if receipt.ok {
            out.writes
        } else {
            WriteSet::new()
        };
        Self {
            receipt,
            writes,
            log: out.log,
        }
    }

    fn failure(e: ActionError) -> Self {
        Self {
            receipt: Receipt::failure(e, 0),
            writes: WriteSet::new(),
            log: Vec::new(),
        }
    }
}

/// Runs an action of the node itself (fuel 0) in an overlay over `base`.
fn native(
    base: &dyn State,
    f: impl FnOnce(&mut Overlay<'_>) -> Result<Vec<Event>, ActionError>,
) -> ActionOutcome {
    let mut overlay = Overlay::new(base);
    match f(&mut overlay) {
        Ok(events) => ActionOutcome {
            receipt: Receipt::success(events, 0),
            writes: overlay.into_writes(),
            log: Vec::new(),
        },
        Err(e) => ActionOutcome::failure(e),
    }
}

fn faucet(
    genesis: &Genesis,
    kv: &mut Overlay<'_>,
    to: &str,
    token: &str,
) -> Result<Vec<Event>, ActionError> {
    let amount = genesis
        .faucet
        .ok_or_else(|| ActionError::invalid("this chain has no faucet"))?;
    if token != GOLD {
        return Err(ActionError::invalid(format!("the faucet pays only {GOLD}")));
    }
    ledger::mint(kv, SYSTEM_ACCOUNT, to, GOLD, amount.0)?;
    let data = json!({"amount": amount.0.to_string(), "to": to, "token": GOLD});
    Ok(vec![Event {
        kind: "faucet".to_string(),
        data,
    }])
}

fn transfer(
    network: Network,
    kv: &mut Overlay<'_>,
    from: &str,
    to: &str,
    token: &str,
    amount: u128,
) -> Result<Vec<Event>, ActionError> {
    check_address(to, network).map_err(|e| {
        ActionError::invalid(format!("`{to}` is not an address of this chain: {e}"))
    })?;
    if amount == 0 {
        return Err(ActionError::invalid("amount must be more than 0"));
    }
    ledger::transfer(kv, from, to, token, amount)?;
    let data = json!({"amount": amount.to_string(), "from": from, "to": to, "token": token});
    Ok(vec![Event {
        kind: "transfer".to_string(),
        data,
    }])
}

impl<'a> BlockBuilder<'a> {
    /// Starts block `parent.height + 1` at `time_ms` with `checkpoint` over `state`, the state
    /// after `parent`, whose running hash is `state_hash`. [`TransitionError::BadParent`] when
    /// `state_hash` does not have `parent.state_root` or `time_ms < parent.time_ms`.
    pub fn new(
        ctx: &'a ChainContext,
        state: &'a dyn State,
        state_hash: &StateHash,
        parent: &Header,
        time_ms: u64,
        checkpoint: Checkpoint,
    ) -> Result<Self, TransitionError> {
        if state_hash.root() != parent.state_root {
            return Err(TransitionError::BadParent(format!(
                "the state hash has root {}, the parent's state root is {}",
                hex::encode(state_hash.root()),
                hex::encode(parent.state_root)
            )));
        }
        if time_ms < parent.time_ms {
            return Err(TransitionError::BadParent(format!(
                "block time {time_ms} is before the parent's {}",
                parent.time_ms
            )));
        }
        let height = parent
            .height
            .checked_add(1)
            .ok_or_else(|| TransitionError::BadParent("height overflows".into()))?;
        let env = BlockEnv {
            height,
            block_time_ms: time_ms,
            checkpoint,
            sequencer: ctx.genesis.sequencer.clone(),
        };
        Ok(Self {
            ctx,
            state,
            state_hash: state_hash.clone(),
            env,
            prev_hash: parent.hash(),
            overlay: Overlay::new(state),
            txids: Vec::new(),
            receipts: Vec::new(),
            logs: Vec::new(),
            failed: None,
        })
    }

    /// The block's height.
    pub fn height(&self) -> u64 {
        self.env.height
    }

    /// Transactions included so far.
    pub fn len(&self) -> usize {
        self.receipts.len()
    }

    /// Whether none is included yet.
    pub fn is_empty(&self) -> bool {
        self.receipts.is_empty()
    }

    /// The current nonce of `address` in the block so far.
    pub fn nonce(&self, address: &str) -> Result<u64, TransitionError> {
        account_nonce(&self.overlay, address)
    }

    /// Checks `tx` ([`SignedTx::check`]) and includes it: see [`push_checked`](Self::push_checked).
    pub fn push(&mut self, tx: &SignedTx) -> Result<&Receipt, TransitionError> {
        let genesis = &self.ctx.genesis;
        match tx.check(&genesis.chain_id, genesis.network) {
            Ok(body) => self.push_checked(tx, body),
            Err(e) => Err(TransitionError::InvalidTx {
                index: self.receipts.len(),
                txid: tx.txid(),
                reason: TxRejection::Check(e),
            }),
        }
    }

    /// Includes `tx`, whose stateless checks passed with `body` (`body` must be what
    /// `tx.check(chain_id, network)` returned). Returns its receipt, or
    /// [`TransitionError::InvalidTx`] with a wrong nonce (nothing changed, the builder is still
    /// usable), or [`TransitionError::Host`] (the block is lost).
    pub fn push_checked(
        &mut self,
        tx: &SignedTx,
        body: TxBody,
    ) -> Result<&Receipt, TransitionError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let index = self.receipts.len();
        let txid = tx.txid_bytes();
        let txid_hex = hex::encode(txid);
        let key = nonce_key(&body.from);
        let current = read_nonce(&self.overlay, &key)?;
        let invalid = |reason| TransitionError::InvalidTx {
            index,
            txid: txid_hex.clone(),
            reason,
        };
        if body.nonce != current {
            return Err(invalid(TxRejection::Nonce {
                expected: current,
                found: body.nonce,
            }));
        }
        let next = current
            .checked_add(1)
            .ok_or_else(|| invalid(TxRejection::NonceExhausted))?;
        self.overlay
            .writes
            .insert(key, Some(next.to_string().into_bytes()));

        let outcome = match self.run_action(&txid_hex, &body) {
            Ok(outcome) => outcome,
            Err(e) => {
                self.failed = Some(e.clone());
                return Err(e);
            }
        };
        self.overlay.writes.extend(outcome.writes);
        if !outcome.log.is_empty() {
            if let Action::Game { game: module, .. } | Action::Deploy { module, .. } = &body.action
            {
                self.logs.push(ModuleLog {
                    module: module.clone(),
                    tx_index: Some(index),
                    lines: outcome.log,
                });
            }
        }
        self.txids.push(txid);
        self.receipts.push(outcome.receipt);
        Ok(self.receipts.last().expect("just pushed"))
    }

    fn run_action(&self, txid: &str, body: &TxBody) -> Result<ActionOutcome, TransitionError> {
        let genesis = &self.ctx.genesis;
        let base: &dyn State = &self.overlay;
        Ok(match &body.action {
            Action::Faucet { token } => native(base, |kv| faucet(genesis, kv, &body.from, token)),
            Action::Transfer { to, token, amount } => native(base, |kv| {
                transfer(genesis.network, kv, &body.from, to, token, amount.0)
            }),
            Action::Game { game, op } => match self.ctx.module(base, game)? {
                None => ActionOutcome::failure(ActionError::not_found(format!("module {game}"))),
                Some(entry) => ActionOutcome::from_tx(execute_apply(
                    &entry.module,
                    base,
                    &self.env,
                    txid,
                    &body.from,
                    op.get().as_bytes(),
                )?),
            },
            Action::Deploy { module, code } => self.deploy(txid, &body.from, module, code)?,
        })
    }

    /// The `deploy` action (see "Deploy and upgrade" in the module docs).
    fn deploy(
        &self,
        txid: &str,
        sender: &str,
        id: &str,
        code: &[u8],
    ) -> Result<ActionOutcome, TransitionError> {
        let refuse = |m: String| Ok(ActionOutcome::failure(ActionError::invalid(m)));
        if let Err(GenesisError::Invalid(m) | GenesisError::Json(m)) = check_module_id(id) {
            return refuse(m);
        }
        let base: &dyn State = &self.overlay;
        let code_hash = hex::encode(sha2::Sha256::digest(code));
        let previous = read_record(base, id)?;
        if let Some(old) = &previous {
            if old.owner == SYSTEM_ACCOUNT {
                return refuse(format!(
                    "module {id} is a genesis module and cannot be upgraded"
                ));
            }
            if old.owner != sender {
                return refuse(format!(
                    "only the owner {} may upgrade module {id}",
                    old.owner
                ));
            }
            if old.code_hash == code_hash {
                return refuse(format!("module {id} already runs code {code_hash}"));
            }
        }
        let entry = match self.ctx.modules.load(&self.ctx.runtime, id, code) {
            Ok(entry) => entry,
            Err(LoadError::Host(e)) => return Err(TransitionError::Host(e)),
            Err(e) => return refuse(format!("module code: {e}")),
        };
        let height = self.env.height;
        let record = match &previous {
            None => ModuleRecord {
                abi_version: ABI_VERSION,
                code_hash: code_hash.clone(),
                deployed_height: height,
                owner: sender.to_string(),
                upgraded_height: None,
            },
            Some(old) => ModuleRecord {
                code_hash: code_hash.clone(),
                upgraded_height: Some(height),
                ..old.clone()
            },
        };
        let mut overlay = Overlay::new(base);
        let code_key = code_key(&code_hash);
        if base.get(&code_key).is_none() {
            overlay.writes.insert(code_key, Some(code.to_vec()));
        }
        overlay
            .writes
            .insert(module_record_key(id), Some(record.to_bytes()));
        let mut events = vec![Event {
            kind: "deploy".to_string(),
            data: json!({
                "code_hash": code_hash,
                "module": id,
                "owner": record.owner,
                "upgrade": previous.is_some(),
            }),
        }];
        let (mut fuel_used, mut log) = (0, Vec::new());
        if let (Some(old), true) = (&previous, entry.has_migrate) {
            let input = json!({"from_code_hash": old.code_hash, "to_code_hash": code_hash});
            let out = execute_migrate(
                &entry.module,
                &overlay,
                &self.env,
                txid,
                sender,
                input.to_string().as_bytes(),
            )?;
            (fuel_used, log) = (out.fuel_used, out.log);
            if let Err(e) = out.result {
                return Ok(ActionOutcome {
                    receipt: Receipt::failure(e, fuel_used),
                    writes: WriteSet::new(),
                    log,
                });
            }
            overlay.writes.extend(out.writes);
            events.extend(out.events);
        }
        Ok(ActionOutcome {
            receipt: Receipt::success(events, fuel_used),
            writes: overlay.into_writes(),
            log,
        })
    }

    /// Runs every module's `end_block`, computes the net writes and the state root, and returns
    /// the block.
    pub fn finish(mut self) -> Result<BlockOutput, TransitionError> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        let mut end_block = Vec::new();
        for (id, record) in Modules::records(&self.overlay)? {
            let entry =
                self.ctx
                    .modules
                    .resolve_record(&self.ctx.runtime, &self.overlay, &id, &record)?;
            if !entry.has_end_block {
                continue;
            }
            let module = &entry.module;
            let outcome =
                ActionOutcome::from_tx(execute_end_block(module, &self.overlay, &self.env)?);
            self.overlay.writes.extend(outcome.writes);
            if !outcome.log.is_empty() {
                self.logs.push(ModuleLog {
                    module: module.id().to_string(),
                    tx_index: None,
                    lines: outcome.log,
                });
            }
            end_block.push((module.id().to_string(), outcome.receipt));
        }

        let mut state_hash = self.state_hash;
        let mut writes = WriteSet::new();
        for (key, new) in std::mem::take(&mut self.overlay.writes) {
            let old = self.state.get(&key);
            if old != new {
                state_hash.apply(&key, old.as_deref(), new.as_deref());
                writes.insert(key, new);
            }
        }

        let receipt_hashes: Vec<[u8; 32]> = self
            .receipts
            .iter()
            .chain(end_block.iter().map(|(_, r)| r))
            .map(Receipt::hash)
            .collect();
        let header = Header {
            height: self.env.height,
            prev_hash: self.prev_hash,
            time_ms: self.env.block_time_ms,
            sequencer: self.env.sequencer,
            checkpoint: self.env.checkpoint,
            tx_root: merkle_root(&self.txids),
            receipt_root: merkle_root(&receipt_hashes),
            state_root: state_hash.root(),
        };
        Ok(BlockOutput {
            header,
            txids: self.txids.iter().map(hex::encode).collect(),
            receipts: self.receipts,
            end_block,
            writes,
            state_hash,
            logs: self.logs,
        })
    }
}

#[cfg(test)]
mod tests;
