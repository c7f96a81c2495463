//! [`Chain`]: what the API handlers and the sequencer of one running node share: the chain
//! context, the in-memory mirror of the committed state with the head block, the mempool,
//! read-only database connections and the block broadcast.
//!
//! Locking: the mempool lock is always taken before the state lock. Admission holds the
//! mempool lock while it reads the committed nonce; the sequencer holds it while it applies a
//! committed block to the mirror and removes the block's transactions from the mempool, so a
//! reader never sees a transaction both pending and committed, or neither.
//!
//! All methods block (locks, SQLite, wasm): async callers run them on `spawn_blocking`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

use axum::extract::ws::Utf8Bytes;
use axum::http::StatusCode;
use gamechain_runtime::chain::address::check_address;
use gamechain_runtime::chain::{
    genesis::check_module_id, Action, Genesis, SignedHeader, SignedTx, StateHash,
};
use gamechain_runtime::registry::read_record;
use gamechain_runtime::{account_nonce, run_view, ChainContext, MemState, State, WriteSet};
use gamechain_sdk::Query;
use serde_json::{json, Value};
use tokio::sync::{broadcast, Notify};

use crate::api_error::ApiError;
use crate::config::NodeConfig;
use crate::mempool::{Mempool, PendingTx};
use crate::record::{BlockRecord, TxRecord, TxStatus};
use crate::storage::{Storage, StorageError};

/// Most idle read-only connections kept for reuse.
const MAX_IDLE_READERS: usize = 4;

/// The committed state and the head block, replaced together by each commit.
pub struct Head {
    /// The committed state after `header`.
    pub state: MemState,
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
    pub config: NodeConfig,
    head: RwLock<Head>,
    mempool: Mutex<Mempool>,
    db_path: PathBuf,
    readers: Mutex<Vec<Storage>>,
    /// Each committed block as its WebSocket message text, in height order.
    pub blocks: broadcast::Sender<Utf8Bytes>,
    /// Woken when a transaction is admitted (the sequencer waits on it).
    pub wake: Notify,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn storage_error(e: StorageError) -> ApiError {
    tracing::error!("database read failed: {e}");
    ApiError::internal("the node's database failed; see its log")
}

impl Chain {
    /// The shared core over an opened chain.
    pub fn new(
        config: NodeConfig,
        ctx: Arc<ChainContext>,
        genesis_hash: String,
        head: Head,
        db_path: PathBuf,
    ) -> Chain {
        let (blocks, _) = broadcast::channel(config.ws_buffer_blocks);
        Chain {
            mempool: Mutex::new(Mempool::new(config.max_pending)),
            ctx,
            genesis_hash,
            config,
            head: RwLock::new(head),
            db_path,
            readers: Mutex::new(Vec::new()),
            blocks,
            wake: Notify::new(),
        }
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
    ) -> Result<T, ApiError> {
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
    /// configuration's `deploy` policy does not admit), `duplicate`, `bad_nonce`,
    /// `mempool_full`, or `internal`.
    pub fn submit(&self, tx: SignedTx) -> Result<String, ApiError> {
        let genesis = self.genesis();
        let body = tx
            .check(&genesis.chain_id, genesis.network)
            .map_err(|e| ApiError::from_tx_error(&e))?;
        if matches!(body.action, Action::Deploy { .. }) && !self.config.may_deploy(&body.from) {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "deploy_forbidden",
                format!(
                    "this node's operator does not admit module deploys from {}",
                    body.from
                ),
            ));
        }
        let txid = tx.txid();
        let pending = PendingTx {
            tx,
            body,
            txid: txid.clone(),
        };
        let mut mempool = self.mempool();
        let committed = {
            let head = self.head();
            account_nonce(&head.state, &pending.body.from)
                .map_err(|e| ApiError::internal(e.to_string()))?
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
        admitted.map_err(|r| ApiError::from_refusal(&r))?;
        drop(mempool);
        self.wake.notify_one();
        tracing::debug!(%txid, "transaction accepted");
        Ok(txid)
    }

    /// `GET /v1/tx/<txid>`: pending or included; `not_found` otherwise.
    pub fn tx(&self, txid: &str) -> Result<TxRecord, ApiError> {
        if let Some(p) = self.mempool().get(txid) {
            return Ok(TxRecord {
                tx: p.tx.clone(),
                status: TxStatus::Pending,
            });
        }
        // Not pending: included, or it was committed between the two looks (the database is
        // written before the mempool forgets), or unknown.
        self.read_db(|db| db.tx(txid))?
            .ok_or_else(|| ApiError::not_found(format!("no transaction {txid}")))
    }

    /// `GET /v1/account/<account>`: balances (token → base units), `nonce` (included
    /// transactions) and `next_nonce` (plus pending ones). `account` is an address of this
    /// chain's network (`bad_address` otherwise) or `module:<id>` of a module of this chain
    /// (`not_found` otherwise).
    pub fn account(&self, account: &str) -> Result<Value, ApiError> {
        let is_address = match account.strip_prefix("module:") {
            Some(id) => {
                let exists = check_module_id(id).is_ok()
                    && read_record(&self.head().state, id)
                        .map_err(|e| ApiError::internal(e.to_string()))?
                        .is_some();
                if !exists {
                    return Err(ApiError::not_found(format!("no module account {account}")));
                }
                false
            }
            None => {
                check_address(account, self.genesis().network).map_err(|e| {
                    ApiError::bad_address(format!(
                        "`{account}` is not an address of this chain: {e}"
                    ))
                })?;
                true
            }
        };
        let mempool = self.mempool();
        let head = self.head();
        let prefix = format!("bal/{account}/");
        let mut balances = BTreeMap::new();
        let mut after: Option<String> = None;
        loop {
            let page = head.state.scan(&prefix, after.as_deref(), 256);
            let done = page.len() < 256;
            for (key, value) in page {
                let token = key[prefix.len()..].to_string();
                balances.insert(token, String::from_utf8_lossy(&value).into_owned());
                after = Some(key);
            }
            if done {
                break;
            }
        }
        let nonce = if is_address {
            account_nonce(&head.state, account).map_err(|e| ApiError::internal(e.to_string()))?
        } else {
            0
        };
        let next_nonce = nonce
            + if is_address {
                mempool.pending_of(account)
            } else {
                0
            };
        Ok(
            json!({"account": account, "balances": balances, "nonce": nonce, "next_nonce": next_nonce}),
        )
    }

    /// `GET /v1/games/<module>?<query>`: the module's view over the committed state, fuel
    /// limited (`fuel_view`). Errors: `not_found` for an unknown module; the view's own error
    /// (its code and status); `internal` when the node failed.
    pub fn view(&self, module: &str, query: &Query) -> Result<Value, ApiError> {
        let head = self.head();
        let entry = self
            .ctx
            .module(&head.state, module)
            .map_err(|e| {
                tracing::error!(module, "cannot load the module: {e}");
                ApiError::internal(format!("the module could not be loaded: {e}"))
            })?
            .ok_or_else(|| ApiError::not_found(format!("no module {module}")))?;
        let module = &entry.module;
        match run_view(module, &head.state, query) {
            Ok((Ok(value), _fuel)) => Ok(value),
            Ok((Err(e), _fuel)) => Err(ApiError::from_action_error(&e)),
            Err(e) => {
                tracing::error!(module = module.id(), "view failed in the node: {e}");
                Err(ApiError::internal(format!("the view could not run: {e}")))
            }
        }
    }

    /// `GET /v1/blocks/<height>` (`None`: the head). `not_found` above the head.
    pub fn block(&self, height: Option<u64>) -> Result<BlockRecord, ApiError> {
        let height = height.unwrap_or_else(|| self.head().header.header.height);
        self.read_db(|db| db.block(height))?
            .ok_or_else(|| ApiError::not_found(format!("no block at height {height}")))
    }

    /// `GET /v1/status`.
    pub fn status(&self) -> Value {
        let pending = self.mempool().len();
        let head = self.head();
        let h = &head.header.header;
        let g = self.genesis();
        json!({
            "chain_id": g.chain_id,
            "network": g.network,
            "height": h.height,
            "head_hash": h.hash_hex(),
            "state_root": hex::encode(h.state_root),
            "sequencer": g.sequencer,
            "genesis_hash": self.genesis_hash,
            "engine_config_hash": g.engine_config_hash,
            "pending": pending,
            "version": env!("CARGO_PKG_VERSION"),
        })
    }

    /// Applies a block the sequencer has just committed to the database: the state writes, the
    /// new head and state hash, and the removal of its transactions from the mempool, all
    /// under both locks; then broadcasts it to WebSocket subscribers.
    pub fn apply_committed(&self, block: &BlockRecord, writes: WriteSet, state_hash: StateHash) {
        {
            let mut mempool = self.mempool();
            let mut head = self.head_mut();
            head.state.apply(writes);
            head.header = block.header.clone();
            head.state_hash = state_hash;
            let txids: Vec<String> = block.txs.iter().map(|t| t.tx.txid()).collect();
            mempool.remove(txids.iter().map(String::as_str));
        }
        if self.blocks.receiver_count() > 0 {
            let message = json!({"type": "block", "block": block.to_json()}).to_string();
            // Every subscriber may have gone since: not an error.
            let _ = self.blocks.send(Utf8Bytes::from(message));
        }
    }
}
