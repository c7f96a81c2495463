//! [`Chain`]: what the API handlers and the sequencer of one running node share: the chain
//! context, the committed state (read from SQLite through a bounded cache,
//! [`StoredState`]) with the head block, the mempool, read-only database connections and the
//! block broadcast.
//!
//! Locking: the mempool lock is always taken before the state lock. Admission holds the
//! mempool lock while it reads the committed nonce; the sequencer holds it while it moves the
//! head to a committed block and removes the block's transactions from the mempool, so a
//! reader never sees a transaction both pending and committed, or neither.
//!
//! The head is only ever a durable block: the sequencer builds the next block while one is
//! being committed (`sequencer.rs`), reading the head one call at a time under that block's
//! writes, and the API, views and admission never see a block before [`Chain::commit`] made it
//! durable.
//!
//! All methods block (locks, SQLite, wasm): async callers run them on `spawn_blocking`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

use gamechain_runtime::chain::address::check_address;
use gamechain_runtime::chain::session::{
    session_prefix, SessionInfo, SessionList, SessionRecord, MAX_SESSIONS_PER_ACCOUNT,
};
use gamechain_runtime::chain::{
    genesis::check_module_id, Action, Genesis, SignedHeader, SignedTx, StateHash, TxBody, TxError,
};
use gamechain_runtime::registry::read_record;
use gamechain_runtime::{
    account_nonce, check_session, run_view_with, ChainContext, Overlay, StartWitness, State,
    WriteSet,
};
use gamechain_sdk::keys::GOLD;
use gamechain_sdk::Query;
use gamechain_sdk::{ledger, Amount};
use serde_json::Value;
use tokio::sync::Notify;

use crate::clock::{Arrivals, NodeClock};
use crate::compile::{prepare_deploy, CompileGate};
use crate::config::LedgerConfig;
use crate::error::ChainError;
use crate::mempool::{Mempool, PendingTx};
use crate::metrics::Metrics;
use crate::snapshot::Snapshots;
use crate::state_store::StoredState;
use crate::storage::{Storage, StorageError, StoredEvidence};
use crate::upgrade_admission::admission_refusal;
use base64::Engine;
use gamechain_chain::wire::state::MAX_STATE_KEY_BYTES;
use gamechain_chain::wire::{
    Account, Block, BlockFinality, StateEntry, Status, TxRecord, TxStatus,
};

/// Most evidence records one `GET /v1/evidence` answers.
pub const MAX_EVIDENCE_PAGE: usize = 100;

/// Most idle read-only connections kept for reuse.
const MAX_IDLE_READERS: usize = 4;

/// The committed state and the head block, moved together by each commit.
pub struct Head {
    /// The committed state after `header`, read from the database through a bounded cache.
    /// Read it only while holding this `Head` (see `state_store.rs`).
    pub state: StoredState,
    /// The head block's signed header.
    pub header: SignedHeader,
    /// The running state hash after it.
    pub state_hash: StateHash,
}

/// The shared core of a running node.
pub struct Chain {
    /// Genesis, runtime and modules.
    pub ctx: Arc<ChainContext>,
    /// Lowercase hex of the genesis hash.
    pub genesis_hash: String,
    /// The node's configuration.
    pub config: LedgerConfig,
    head: RwLock<Head>,
    mempool: Mutex<Mempool>,
    db_path: PathBuf,
    readers: Mutex<Vec<Storage>>,
    /// Told of each committed block, in height order (the server's WebSocket feed).
    sink: Arc<dyn BlockSink>,
    /// Woken when a transaction is admitted (validators wait on it).
    pub wake: Notify,
    /// Bumped when a transaction is admitted, a commit lands or the dev clock moves: the
    /// sequencer's thread waits on it.
    pub arrivals: Arrivals,
    /// The clock this node stamps blocks with (`clock.rs`).
    pub clock: NodeClock,
    /// What the node counts for `GET /metrics`.
    pub metrics: Metrics,
    /// One upload compiles at a time at admission (`compile.rs`).
    compile_gate: Arc<CompileGate>,
    /// The state snapshots this node takes and serves (`snapshot.rs`; none unless
    /// `snapshot_every_blocks` is set).
    pub snapshots: Snapshots,
    /// Validator mode: where transactions admitted through the API go to be gossiped to the
    /// other validators (`validator/gossip.rs`); unset on a sequencer.
    gossip: std::sync::OnceLock<tokio::sync::mpsc::Sender<SignedTx>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn storage_error(e: StorageError) -> ChainError {
    tracing::error!("database read failed: {e}");
    ChainError::Internal("the node's database failed; see its log".into())
}

/// What the core tells of each block it commits (the server's WebSocket feed implements it).
/// Called after the block is applied, outside the core's locks; it must not block.
pub trait BlockSink: Send + Sync {
    /// `block` was committed and is the new head.
    fn committed(&self, block: &Block);
}

/// A [`BlockSink`] that tells no one (tools and tests without subscribers).
pub struct NoSink;

impl BlockSink for NoSink {
    fn committed(&self, _block: &Block) {}
}

impl Chain {
    /// The shared core over an opened chain.
    pub fn new(
        config: LedgerConfig,
        ctx: Arc<ChainContext>,
        genesis_hash: String,
        head: Head,
        db_path: PathBuf,
        sink: Arc<dyn BlockSink>,
    ) -> Chain {
        let clock = NodeClock::new(config.dev_clock);
        let snapshots = Snapshots::new(
            &config.data_dir,
            config.snapshot_every_blocks,
            config.snapshot_keep,
            &genesis_hash,
            ctx.genesis().state_commitment(),
        );
        Chain {
            snapshots,
            mempool: Mutex::new(Mempool::with_bytes(
                config.max_pending,
                config.max_pending_bytes,
            )),
            ctx,
            genesis_hash,
            config,
            head: RwLock::new(head),
            db_path,
            readers: Mutex::new(Vec::new()),
            sink,
            wake: Notify::new(),
            arrivals: Arrivals::default(),
            clock,
            metrics: Metrics::new(),
            compile_gate: Arc::new(CompileGate::default()),
            gossip: std::sync::OnceLock::new(),
        }
    }

    /// Validator mode: sends each transaction admitted through [`Chain::submit`] (not those of
    /// [`Chain::submit_from_peer`]) to `gossip` too, dropping it when the queue is full. Set
    /// once; later calls are ignored.
    pub fn set_gossip(&self, gossip: tokio::sync::mpsc::Sender<SignedTx>) {
        let _ = self.gossip.set(gossip);
    }

    /// Compiles the code of a deploy of module `module` that a block to be executed carries,
    /// ahead of its execution and outside every lock of the chain, so the execution finds it
    /// compiled (`Modules::prepare`). With `budget`, through the node's compile gate (one
    /// upload at a time) within that time ([`ChainError::TooCostly`] past it; the compile goes
    /// on and its result is kept); without, at once. Refused code is `Ok` (the deploy's receipt
    /// will say why, and the refusal is remembered); errors: [`ChainError::TooCostly`],
    /// [`ChainError::Internal`] (the engine failed).
    pub fn precompile(
        &self,
        module: &str,
        code: &[u8],
        budget: Option<std::time::Duration>,
    ) -> Result<(), ChainError> {
        let result = match budget {
            Some(budget) => prepare_deploy(&self.compile_gate, &self.ctx, module, code, budget),
            None => match self.ctx.modules().prepare(
                self.ctx.runtime(),
                module,
                code,
                gamechain_runtime::Origin::Upload,
            ) {
                Ok(compiled) => {
                    if compiled {
                        tracing::info!(
                            module,
                            bytes = code.len(),
                            "deploy compiled ahead of its block"
                        );
                    }
                    Ok(())
                }
                Err(gamechain_runtime::LoadError::Host(e)) => Err(ChainError::Internal(format!(
                    "the node could not compile a module: {e}"
                ))),
                Err(e) => Err(ChainError::ModuleRefused(e.to_string())),
            },
        };
        match result {
            Err(ChainError::ModuleRefused(_)) => Ok(()),
            other => other,
        }
    }

    /// [`Chain::submit`] of a transaction another validator gossiped: the same checks, and it
    /// is not gossiped again.
    pub fn submit_from_peer(&self, tx: SignedTx) -> Result<String, ChainError> {
        let genesis = self.genesis();
        let checked = tx.check(&genesis.chain_id, genesis.network);
        self.submit_counted(tx, checked, false)
    }

    /// [`Chain::submit_from_peer`] of `tx` whose stateless checks gave `checked` (what
    /// `tx.check(chain_id, network)` returned).
    pub fn submit_checked_from_peer(
        &self,
        tx: SignedTx,
        checked: Result<TxBody, TxError>,
    ) -> Result<String, ChainError> {
        self.submit_counted(tx, checked, false)
    }

    /// The genesis.
    pub fn genesis(&self) -> &Genesis {
        self.ctx.genesis()
    }

    /// Read access to the committed state and head.
    pub fn head(&self) -> RwLockReadGuard<'_, Head> {
        self.head.read().unwrap_or_else(|p| p.into_inner())
    }

    fn head_mut(&self) -> RwLockWriteGuard<'_, Head> {
        self.head.write().unwrap_or_else(|p| p.into_inner())
    }

    /// The mempool (take this lock before [`Chain::head`] when holding both).
    pub fn mempool(&self) -> MutexGuard<'_, Mempool> {
        lock(&self.mempool)
    }

    /// Runs `f` on a read-only database connection (reused, or opened on demand).
    pub fn read_db<T>(
        &self,
        f: impl FnOnce(&Storage) -> Result<T, StorageError>,
    ) -> Result<T, ChainError> {
        let reader = lock(&self.readers).pop();
        let reader = match reader {
            Some(r) => r,
            None => Storage::open_reader(&self.db_path).map_err(storage_error)?,
        };
        let result = f(&reader).map_err(storage_error);
        let mut idle = lock(&self.readers);
        if idle.len() < MAX_IDLE_READERS {
            idle.push(reader);
        }
        result
    }

    /// `POST /v1/tx`: the stateless checks, the deploy policy, then mempool admission. Returns
    /// the txid. Errors: the check's code (`too_large`, `bad_json`, `wrong_chain`,
    /// `bad_address`, `bad_signature`), `deploy_forbidden` (403: a deploy from a sender the
    /// configuration's `deploy` policy does not admit), `upgrade_refused` (403: a `deploy` to an
    /// existing module, `cancel_upgrade` or `set_policy` that the module's record refuses: not
    /// its owner, immutable, or a policy that is not tighter), `escrow_recipient` (400: a transfer to a
    /// module's escrow account), `cannot_pay_fee` (402: on a chain with fees, a sender holding
    /// less GOLD than the minimum fee; never for a faucet call), `module_refused` (400: a deploy whose code the load rules
    /// refuse), `too_costly` (503: a deploy that did not compile within `compile_budget_ms`),
    /// `duplicate`, `bad_nonce`, `mempool_full`, or `internal`. A deploy is compiled here
    /// (`compile.rs`), so the block that includes it never waits for a compiler.
    pub fn submit(&self, tx: SignedTx) -> Result<String, ChainError> {
        let genesis = self.genesis();
        let checked = tx.check(&genesis.chain_id, genesis.network);
        self.submit_checked(tx, checked)
    }

    /// [`Chain::submit`] of `tx` whose stateless checks ([`SignedTx::check`] for this chain)
    /// gave `checked`: lets callers run the signature checks of many transactions in parallel
    /// and admit them in order.
    pub fn submit_checked(
        &self,
        tx: SignedTx,
        checked: Result<TxBody, TxError>,
    ) -> Result<String, ChainError> {
        self.submit_counted(tx, checked, true)
    }

    /// Admits a checked transaction (gossiping it when `gossip` and a gossip queue is set) and
    /// counts its outcome in the `admission` metric.
    fn submit_counted(
        &self,
        tx: SignedTx,
        checked: Result<TxBody, TxError>,
        gossip: bool,
    ) -> Result<String, ChainError> {
        let result = checked
            .map_err(ChainError::Tx)
            .and_then(|body| self.admit(tx, body, gossip));
        let code = match &result {
            Ok(_) => "accepted",
            Err(e) => e.code(),
        };
        self.metrics.admission.with_label_values(&[code]).inc();
        result
    }

    /// [`Chain::submit_checked`] of a checked transaction, without the count of its outcome.
    fn admit(&self, tx: SignedTx, body: TxBody, gossip: bool) -> Result<String, ChainError> {
        let genesis = self.genesis();
        if matches!(body.action, Action::Deploy { .. }) && !self.config.may_deploy(&body.from) {
            return Err(ChainError::DeployForbidden { from: body.from });
        }
        if let Some(module) = body.action.upgrade_module() {
            // What the module's record certainly refuses (immutable, not the owner; a policy
            // the transaction cannot name unless the sender's pending transactions may change
            // it: `upgrade_admission.rs` says why each is safe) is refused here, so it costs no
            // nonce; the transition refuses the same with the same text.
            let record = read_record(&self.head().state, module)
                .map_err(|e| ChainError::Internal(e.to_string()))?;
            let pending = self.mempool().pending_of(&body.from) > 0;
            if let Some(why) = admission_refusal(&body.action, &body.from, record.as_ref(), pending)
            {
                return Err(ChainError::UpgradeRefused(why));
            }
        }
        if let Action::Transfer { to, .. } = &body.action {
            if to.starts_with("module:") {
                return Err(ChainError::EscrowRecipient { to: to.clone() });
            }
        }
        if let Action::SessionGame {
            account,
            session,
            game,
            ..
        } = &body.action
        {
            // The session's rules at the head (`transition/session.rs`): what a block would
            // refuse now is refused here, with the same text. The block's time is later than
            // the head's, so a session that expires meanwhile is dropped by the sequencer.
            let head = self.head();
            let minimum_fee = genesis.fees.as_ref().map_or(0, |f| f.minimum());
            check_session(
                &head.state,
                &body.from,
                account,
                *session,
                game,
                head.header.header.time_ms,
                minimum_fee,
            )
            .map_err(|e| ChainError::Internal(e.to_string()))?
            .map_err(ChainError::Session)?;
        }
        let account = body.account().to_string();
        if let (Some(fees), false) = (&genesis.fees, matches!(body.action, Action::Faucet { .. })) {
            // A sender with pending transactions is not checked again: its first was admitted
            // on its balance or is a faucet call (so a new key can send right after its faucet
            // call); what it cannot pay for when its turn comes, no block includes.
            let minimum = fees.minimum();
            if minimum > 0 && self.mempool().pending_of(&account) == 0 {
                let head = self.head();
                let balance = ledger::balance(&Overlay::new(&head.state), &account, GOLD);
                if balance < minimum {
                    return Err(ChainError::CannotPayFee { minimum, balance });
                }
            }
        }
        if let Action::Deploy { module, code, .. } = &body.action {
            // Only a deploy with the sender's next nonce costs a compile; any other is refused
            // by the mempool below with its own code (`bad_nonce`, `duplicate`).
            let expected = {
                let pending = self.mempool().pending_of(&body.from);
                let head = self.head();
                account_nonce(&head.state, &body.from)
                    .map_err(|e| ChainError::Internal(e.to_string()))?
                    + pending
            };
            if body.nonce == expected {
                let budget = std::time::Duration::from_millis(self.config.compile_budget_ms);
                prepare_deploy(&self.compile_gate, &self.ctx, module, code, budget)?;
            }
        }
        let txid = tx.txid();
        let to_gossip = if gossip {
            self.gossip.get().map(|g| (g, tx.clone()))
        } else {
            None
        };
        let pending = PendingTx {
            tx,
            body,
            txid: txid.clone(),
        };
        let mut mempool = self.mempool();
        let committed = {
            let head = self.head();
            account_nonce(&head.state, pending.body.account())
                .map_err(|e| ChainError::Internal(e.to_string()))?
        };
        // A nonce below the expected one is either a replay (duplicate) or stale (bad_nonce):
        // only then is the database asked.
        let mut db_error = None;
        let admitted = mempool.admit(pending, committed, |txid| {
            match self.read_db(|db| db.has_tx(txid)) {
                Ok(included) => included,
                Err(e) => {
                    db_error = Some(e);
                    false
                }
            }
        });
        if let Some(e) = db_error {
            return Err(e);
        }
        admitted.map_err(ChainError::Refused)?;
        drop(mempool);
        if let Some((queue, tx)) = to_gossip {
            if queue.try_send(tx).is_err() {
                tracing::debug!(%txid, "the gossip queue is full: not gossiping this transaction");
            }
        }
        self.wake.notify_one();
        self.arrivals.notify();
        tracing::debug!(%txid, "transaction accepted");
        Ok(txid)
    }

    /// `GET /v1/tx/<txid>`: pending or included; `not_found` otherwise.
    pub fn tx(&self, txid: &str) -> Result<TxRecord, ChainError> {
        if let Some(p) = self.mempool().get(txid) {
            return Ok(TxRecord {
                tx: p.tx.clone(),
                status: TxStatus::Pending,
            });
        }
        // Not pending: included, or it was committed between the two looks (the database is
        // written before the mempool forgets), or unknown.
        self.read_db(|db| db.tx(txid))?
            .ok_or_else(|| ChainError::NotFound(format!("no transaction {txid}")))
    }

    /// `GET /v1/account/<account>`: balances (token → base units), `nonce` (included
    /// transactions) and `next_nonce` (plus pending ones). `account` is an address of this
    /// chain's network (`bad_address` otherwise) or `module:<id>` of a module of this chain
    /// (`not_found` otherwise).
    pub fn account(&self, account: &str) -> Result<Account, ChainError> {
        let is_address = match account.strip_prefix("module:") {
            Some(id) => {
                let exists = check_module_id(id).is_ok()
                    && read_record(&self.head().state, id)
                        .map_err(|e| ChainError::Internal(e.to_string()))?
                        .is_some();
                if !exists {
                    return Err(ChainError::NotFound(format!("no module account {account}")));
                }
                false
            }
            None => {
                check_address(account, self.genesis().network).map_err(|e| {
                    ChainError::BadAddress(format!(
                        "`{account}` is not an address of this chain: {e}"
                    ))
                })?;
                true
            }
        };
        // The balances and the nonce are read under the head lock alone (a large account's scan
        // reads the database: the mempool lock, which commits and admission take, is not held
        // meanwhile); the pending count is then taken under both locks, from the same head
        // (checked by height; read again when a block landed in between, at most a few times).
        let mut tries = 0;
        loop {
            tries += 1;
            let (height, balances, nonce) = {
                let head = self.head();
                let (balances, nonce) = Self::balances_and_nonce(&head, account, is_address)?;
                (head.header.header.height, balances, nonce)
            };
            let mempool = self.mempool();
            let head = self.head();
            if head.header.header.height != height && tries < 4 {
                continue;
            }
            let (balances, nonce) = if head.header.header.height == height {
                (balances, nonce)
            } else {
                // Blocks keep landing: read everything under both locks.
                Self::balances_and_nonce(&head, account, is_address)?
            };
            let next_nonce = nonce
                + if is_address {
                    mempool.pending_of(account)
                } else {
                    0
                };
            return Ok(Account {
                account: account.to_string(),
                balances,
                nonce,
                next_nonce,
            });
        }
    }

    /// `GET /v1/account/<address>/sessions`: every session record of `account` at the head,
    /// sorted by key, each `active` when the head's block time is before its expiry.
    /// `bad_address` for anything but an address of this chain's network.
    pub fn sessions(&self, account: &str) -> Result<SessionList, ChainError> {
        check_address(account, self.genesis().network).map_err(|e| {
            ChainError::BadAddress(format!("`{account}` is not an address of this chain: {e}"))
        })?;
        let head = self.head();
        let now = head.header.header.time_ms;
        let prefix = session_prefix(account);
        let mut sessions = Vec::new();
        // An account holds at most MAX_SESSIONS_PER_ACCOUNT records (the transition keeps it
        // so); one more is read to be safe against nothing.
        for (key, bytes) in head.state.scan(&prefix, None, MAX_SESSIONS_PER_ACCOUNT + 1) {
            let record = SessionRecord::from_bytes(&bytes)
                .ok_or_else(|| ChainError::Internal(format!("state key `{key}` is corrupt")))?;
            sessions.push(SessionInfo {
                key: key[prefix.len()..].to_string(),
                id: record.id,
                active: record.is_active(now),
                modules: record.modules,
                expires_at_ms: record.expires_at_ms,
                cap: record.cap,
                spent: record.spent,
            });
        }
        Ok(SessionList {
            account: account.to_string(),
            sessions,
        })
    }

    /// The balances (token → base units) and committed nonce of `account` at `head`.
    fn balances_and_nonce(
        head: &Head,
        account: &str,
        is_address: bool,
    ) -> Result<(BTreeMap<String, Amount>, u64), ChainError> {
        let prefix = format!("bal/{account}/");
        let mut balances = BTreeMap::new();
        let mut after: Option<String> = None;
        loop {
            let page = head.state.scan(&prefix, after.as_deref(), 256);
            let done = page.len() < 256;
            for (key, value) in page {
                let token = key[prefix.len()..].to_string();
                let amount = std::str::from_utf8(&value)
                    .ok()
                    .and_then(|v| v.parse::<Amount>().ok())
                    .ok_or_else(|| {
                        tracing::error!(%key, "the committed state holds a malformed balance");
                        ChainError::Internal("the node's state is corrupt; see its log".into())
                    })?;
                balances.insert(token, amount);
                after = Some(key);
            }
            if done {
                break;
            }
        }
        let nonce = if is_address {
            account_nonce(&head.state, account).map_err(|e| ChainError::Internal(e.to_string()))?
        } else {
            0
        };
        Ok((balances, nonce))
    }

    /// `GET /v1/games/<module>?<query>`: the module's view over the committed state, fuel
    /// limited (`fuel_view`). Errors: `not_found` for an unknown module; the view's own error
    /// (its code and status); `internal` when the node failed.
    pub fn view(&self, module: &str, query: &Query) -> Result<Value, ChainError> {
        let head = self.head();
        let entry = self
            .ctx
            .module(&head.state, module)
            .map_err(|e| {
                tracing::error!(module, "cannot load the module: {e}");
                ChainError::Internal(format!("the module could not be loaded: {e}"))
            })?
            .ok_or_else(|| ChainError::NotFound(format!("no module {module}")))?;
        let module = &entry.module;
        // The view's own `call_pure`s resolve other modules of the chain (ABI.md, pure calls).
        match run_view_with(module, &head.state, query, Some(&*self.ctx)) {
            Ok((Ok(value), _fuel)) => Ok(value),
            Ok((Err(e), _fuel)) => Err(ChainError::View(e)),
            Err(e) => {
                tracing::error!(module = module.id(), "view failed in the node: {e}");
                Err(ChainError::Internal(format!("the view could not run: {e}")))
            }
        }
    }

    /// `GET /v1/state/<key>`: `key`'s value at the head block, that block's signed header, and
    /// with `proof` the proof of the entry (or its absence) against the header's state root,
    /// all read under one hold of the head. Errors: `invalid` for a key over
    /// [`MAX_STATE_KEY_BYTES`] bytes, [`ChainError::NoProofs`] for a proof on a chain whose
    /// state commitment has none.
    pub fn state_entry(&self, key: &str, proof: bool) -> Result<StateEntry, ChainError> {
        let mut entries = self.state_entries(&[key], proof)?;
        Ok(entries.remove(0))
    }

    /// [`Chain::state_entry`] of each of `keys` (at most 16), all of the same head block.
    pub fn state_entries(&self, keys: &[&str], proof: bool) -> Result<Vec<StateEntry>, ChainError> {
        if keys.len() > 16 {
            return Err(ChainError::Invalid("at most 16 state keys at once".into()));
        }
        let head = self.head();
        keys.iter()
            .map(|key| Self::entry_at(&head, key, proof))
            .collect()
    }

    /// One key's entry at `head` (see [`Chain::state_entry`]).
    fn entry_at(head: &Head, key: &str, proof: bool) -> Result<StateEntry, ChainError> {
        if key.len() > MAX_STATE_KEY_BYTES {
            return Err(ChainError::Invalid(format!(
                "a state key is at most {MAX_STATE_KEY_BYTES} bytes"
            )));
        }
        let proof = match (proof, head.state_hash.prove(key)) {
            (false, _) => None,
            (true, Some(p)) => Some(p),
            (true, None) => {
                return Err(ChainError::NoProofs(format!(
                    "this chain's state commitment ({}) has no proofs",
                    head.state_hash.kind().name()
                )))
            }
        };
        let value = head
            .state
            .get(key)
            .map(|v| base64::engine::general_purpose::STANDARD.encode(v));
        Ok(StateEntry {
            key: key.to_string(),
            value,
            header: head.header.header.clone(),
            signature: head.header.signature.clone(),
            commitment: head.state_hash.kind(),
            proof,
            finality: None,
        })
    }

    /// `GET /v1/blocks/<height>` (`None`: the head). `not_found` above the head, `pruned` below
    /// this node's oldest block ([`ChainError::Pruned`]).
    pub fn block(&self, height: Option<u64>) -> Result<Block, ChainError> {
        let height = height.unwrap_or_else(|| self.head().header.header.height);
        let (block, oldest) = self.read_db(|db| Ok((db.block(height)?, db.oldest_height()?)))?;
        match block {
            Some(b) => Ok(b),
            None => Err(self.missing(height, oldest)),
        }
    }

    /// `GET /v1/headers?from=&count=`: the headers of blocks `from` to `from + count - 1` (at most
    /// the head), framed as `gamechain_chain::wire::headers` says, from the blocks and the old
    /// headers this node keeps. `not_found` above the head; `pruned` when this node holds no
    /// header at a height in the run (a validator that joined from a snapshot keeps none below
    /// its base).
    pub fn headers(&self, from: u64, count: u64) -> Result<Vec<u8>, ChainError> {
        let head = self.head().header.header.height;
        if from > head {
            return Err(ChainError::NotFound(format!(
                "no block at height {from}: the head is {head}"
            )));
        }
        let rows = self.read_db(|db| db.headers(from, count))?;
        let mut body = Vec::with_capacity(rows.len() * 260);
        for (i, (height, header)) in rows.iter().enumerate() {
            if *height != from + i as u64 {
                break;
            }
            gamechain_chain::wire::headers::encode_header(&mut body, header);
        }
        if body.is_empty() {
            return Err(ChainError::Pruned(format!(
                "this node keeps no header of block {from} (it joined from a snapshot as a \
                 validator); ask another node"
            )));
        }
        Ok(body)
    }

    /// The error for block `height` that the database does not hold, its oldest block being
    /// `oldest`: [`ChainError::Pruned`] below it, `not_found` otherwise (above the head).
    fn missing(&self, height: u64, oldest: Option<u64>) -> ChainError {
        match oldest {
            Some(oldest) if height < oldest => ChainError::Pruned(format!(
                "block {height} is not kept by this node: its oldest block is {oldest} (it \
                 joined from a snapshot or prunes old blocks); ask an archive node"
            )),
            _ => ChainError::NotFound(format!("no block at height {height}")),
        }
    }

    /// `GET /v1/blocks/<height>/finality` (`None`: the head): the block's recorded consensus
    /// digest and finality certificate. `not_found` on a chain without validators (its blocks
    /// are final when the sequencer signs them), above the head, and for a block this node has
    /// no record of (a record is stored before its block; a follower's data directory from
    /// before records were kept lacks them).
    pub fn finality(&self, height: Option<u64>) -> Result<BlockFinality, ChainError> {
        if self.genesis().validators.is_none() {
            return Err(ChainError::NotFound(
                "this chain has no validators: a block is final once its sequencer signs it".into(),
            ));
        }
        let height = height.unwrap_or_else(|| self.head().header.header.height);
        let found = self.read_db(|db| {
            let recorded = if db.has_validator_tables()? {
                db.validator_finality(height)?
            } else {
                None
            };
            let hash = match db.signed_header(height)? {
                Some(header) => header.header.hash_hex(),
                // The parent of this node's oldest block (it joined from a snapshot, or prunes):
                // the block is gone but its digest is kept, named by the child's `prev_hash`.
                None => match (&recorded, db.signed_header(height.saturating_add(1))?) {
                    (Some(_), Some(child)) => hex::encode(child.header.prev_hash),
                    _ => return Ok(Err(db.oldest_height()?)),
                },
            };
            Ok(Ok((hash, recorded)))
        })?;
        match found {
            Err(oldest) => Err(self.missing(height, oldest)),
            Ok((_, None)) => Err(ChainError::NotFound(format!(
                "this node has no finality record of block {height}"
            ))),
            Ok((hash, Some((digest, certificate)))) => Ok(BlockFinality {
                height,
                hash,
                digest: hex::encode(digest),
                certificate: certificate.map(hex::encode),
            }),
        }
    }

    /// The stored evidence with `id > after`, oldest first: at most `limit` rows (clamped to
    /// 1..=[`MAX_EVIDENCE_PAGE`]), whether more follow, and how many are stored in all. The node's
    /// `verify::evidence::page` turns them into `GET /v1/evidence`'s page. Errors: `NotFound`
    /// on a chain without validators.
    pub fn evidence_rows(
        &self,
        after: u64,
        limit: usize,
    ) -> Result<(Vec<StoredEvidence>, bool, u64), ChainError> {
        if self.genesis().validators.is_none() {
            return Err(ChainError::NotFound(
                "this chain has no validators, and no evidence".into(),
            ));
        }
        let limit = limit.clamp(1, MAX_EVIDENCE_PAGE);
        let (mut rows, total) =
            self.read_db(|db| Ok((db.evidence_page(after, limit + 1)?, db.evidence_count()?)))?;
        let more = rows.len() > limit;
        rows.truncate(limit);
        Ok((rows, more, total))
    }

    /// `GET /v1/status`.
    pub fn status(&self) -> Status {
        let (pending, pending_bytes) = {
            let m = self.mempool();
            (m.len() as u64, m.bytes())
        };
        let head = self.head();
        let h = &head.header.header;
        let g = self.genesis();
        Status {
            chain_id: g.chain_id.clone(),
            network: g.network.to_string(),
            height: h.height,
            head_hash: h.hash_hex(),
            state_root: hex::encode(h.state_root),
            sequencer: g.sequencer.clone(),
            genesis_hash: self.genesis_hash.clone(),
            engine_config_hash: g.engine_config_hash.clone(),
            pending,
            pending_bytes,
            ws_subscribers: 0,
            connections: 0,
            version: env!("CARGO_PKG_VERSION").to_string(),
        }
    }

    /// Commits `block`, the next height, the one way both the sequencer and a follower do:
    /// pins the head values of the keys `writes` changes ([`StoredState::pin`], so readers of
    /// the head never see the block's values early), commits to SQLite (its rows, the state
    /// `writes` and `state_hash`, in one transaction; see [`Storage::commit_block`]), then moves
    /// the head (the state's cache, the header and hash, and the removal of its transactions
    /// from the mempool, under both locks), then tells the [`BlockSink`]. `witnesses`: the
    /// block's starting balances (`BlockOutput::start_witnesses`), recorded in the same
    /// transaction. `senders` gives each transaction's `(from, nonce)`, in block order, from
    /// the bodies the caller already parsed. Errors: the database refused the block (nothing
    /// changed).
    pub fn commit(
        &self,
        storage: &mut Storage,
        block: &Block,
        senders: &[(&str, u64)],
        writes: WriteSet,
        state_hash: StateHash,
        witnesses: &[StartWitness],
    ) -> Result<(), StorageError> {
        self.commit_blocks(storage, &[(block, senders)], writes, state_hash, witnesses)
    }

    /// Most blocks one commit deletes under `retain_blocks` (the rest at the next commits).
    pub const PRUNE_BATCH: u64 = 256;

    /// `retain_blocks`: deletes up to [`Chain::PRUNE_BATCH`] blocks below `head -
    /// retain_blocks + 1`, never at or above the oldest snapshot kept (none kept: nothing is
    /// deleted). Failures are logged: pruning is a service, the blocks are committed.
    fn prune(&self, storage: &mut Storage, head: u64) {
        let Some(&oldest_snapshot) = self.snapshots.heights().last() else {
            return;
        };
        let keep_from = (head + 1)
            .saturating_sub(self.config.retain_blocks)
            .min(oldest_snapshot);
        match storage.prune_blocks_below(keep_from, Self::PRUNE_BATCH) {
            Ok(_) => {}
            Err(e) => tracing::warn!("deleting old blocks (retain_blocks) failed: {e}"),
        }
    }

    /// [`Chain::commit`] of consecutive blocks at once (a follower catching up,
    /// `replica/follower.rs`): `writes` are their net state writes (in order, a key's last write
    /// wins) and `state_hash` the running hash after the last. One SQLite transaction
    /// ([`Storage::commit_blocks`]: all of them or none after a crash), then the head moves to
    /// the last block in one step (readers see the head before the run or after it, never in
    /// between), then the [`BlockSink`] is told of each block, in height order. Errors: the
    /// database refused the blocks (nothing changed). No block: nothing done.
    pub fn commit_blocks(
        &self,
        storage: &mut Storage,
        blocks: &[(&Block, &[(&str, u64)])],
        writes: WriteSet,
        state_hash: StateHash,
        witnesses: &[StartWitness],
    ) -> Result<(), StorageError> {
        let Some(&(last, _)) = blocks.last() else {
            return Ok(());
        };
        let timer = self.metrics.commit_seconds.start_timer();
        self.head().state.pin(&writes)?;
        storage.commit_blocks(blocks, &writes, &state_hash, witnesses)?;
        {
            let mut mempool = self.mempool();
            let mut head = self.head_mut();
            head.state.apply(writes);
            head.header = last.header.clone();
            head.state_hash = state_hash;
            let txids: Vec<String> = blocks
                .iter()
                .flat_map(|(b, _)| b.txs.iter().map(|t| t.tx.txid()))
                .collect();
            mempool.remove(txids.iter().map(String::as_str));
        }
        timer.observe_duration();
        let m = &self.metrics;
        m.height.set(last.height() as i64);
        m.blocks.inc_by(blocks.len() as u64);
        m.txs
            .inc_by(blocks.iter().map(|(b, _)| b.txs.len() as u64).sum());
        for (block, _) in blocks {
            self.sink.committed(block);
        }
        // Node policy, after the block is durable: a snapshot of the state at this head (its
        // read transaction opens now, before the next commit), and old blocks deleted.
        // On a chain with validators only a head with its own finality certificate: the one a
        // joining node checks the snapshot's block against (`replica/snapshot_join.rs`).
        let validators = self.genesis().validators.is_some();
        let height = last.height();
        self.snapshots.after_commit(
            &self.db_path,
            height,
            || !validators || matches!(storage.validator_finality(height), Ok(Some((_, Some(_))))),
            || match &self.head().state_hash {
                StateHash::SparseMerkle(tree) => Some(tree.clone()),
                StateHash::LtHash(_) => None,
            },
        );
        if self.config.retain_blocks > 0 {
            self.prune(storage, last.height());
        }
        // The head's snapshot is closed: the WAL can be checkpointed whole (see there). The blocks
        // are durable whatever this does; a failure is only logged.
        if let Err(e) = storage.checkpoint() {
            tracing::warn!("checkpointing the WAL failed: {e}");
        }
        Ok(())
    }
}
