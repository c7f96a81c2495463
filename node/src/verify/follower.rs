//! `gamechain node --follow URL`: a read replica of the sequencer at `URL`. It pulls blocks
//! (catching up over `GET /v1/blocks/<height>`, then live over `GET /v1/ws`), verifies each
//! exactly as `gamechain verify` does ([`verify_block`]), commits it to its own SQLite in one
//! transaction, and serves the same read API and WebSocket. `POST /v1/tx` is forwarded to the
//! sequencer unchanged ([`forward_tx`]; its answer is passed back), so the follower's mempool
//! stays empty.
//!
//! First start on an empty data directory: the sequencer's genesis (`GET /v1/genesis`, written
//! to `<data>/genesis.json`), its module code (`GET /v1/code/<hash>`) and block 0, checked
//! against the genesis ([`verify_genesis`]), become the local chain. Every start checks that
//! the directory's genesis is the sequencer's and that the saved running state hash hashes to
//! the head's state root; like a sequencer's, a start after a run that did not stop cleanly
//! (`<data>/node.running` left behind) or with `integrity_check = "always"` also runs `PRAGMA
//! quick_check` and rehashes the whole stored state; the
//! state is read from SQLite on demand through the same bounded cache as a sequencer's
//! (`ledger/state_store.rs`), so a start reads none of it; a restarted follower catches up from its own head. Modules compile through the
//! same compiled-module cache as a sequencer's (`<data>/compiled/`), so a restart deserialises
//! them, and the log says for each module whether it was compiled or read from the cache.
//!
//! A block that does not verify is never applied: the follower logs the divergence (height,
//! field, expected and got), stops following and keeps serving what it has verified. A block
//! for a height it already has is compared with its own: the same hash is skipped; another
//! hash with a valid signature by the genesis sequencer is proof that the sequencer
//! equivocated: the follower logs `equivocation at height <h>` with both signed headers (JSON),
//! stops following and keeps serving (one with an invalid signature is ignored, with a
//! warning). A node
//! failure while executing (the wasm engine) is retried; a database failure stops the node.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use gamechain_runtime::chain::{Genesis, SignedHeader};
use gamechain_runtime::ChainContext;
use tokio::sync::watch;

use crate::config::NodeConfig;
use crate::error::NodeError;
use crate::ledger::chain::{Chain, Head};
use crate::ledger::genesis_setup::start_check;
use crate::ledger::open::{chain_context, node_runtime_config, open_head, preload_modules};
use crate::ledger::run_marker::mark_running;
use crate::ledger::storage::Storage;
use crate::verify::replay::{check_block, verify_block, verify_genesis, ReplayError};
use crate::verify::source::{fetch_code, fetch_genesis};
use gamechain_chain::wire::Block;
use gamechain_client::client::{BlockRef, Client};

/// Wait before trying the sequencer again after it could not be reached.
pub const RECONNECT: Duration = Duration::from_secs(1);

/// A [`NodeError::Refused`] with `m`.
pub fn refused(m: impl Into<String>) -> NodeError {
    NodeError::Refused(m.into())
}

fn upstream_error(e: impl std::fmt::Display) -> NodeError {
    NodeError::Runtime(format!("the sequencer: {e}"))
}

/// The follower's chain opened: what [`Chain::new`] needs, and its writer.
pub struct Opened {
    /// Genesis, runtime and loaded modules.
    pub ctx: Arc<ChainContext>,
    /// Lowercase hex of the genesis hash.
    pub genesis_hash: String,
    /// The head, its state and running hash.
    pub head: Head,
    /// The database, open for writing.
    pub storage: Storage,
}

/// Opens (creating it from the sequencer on the first start) the follower's data directory.
/// Blocking: call it off the executor; `rt` runs the HTTP requests.
pub fn open_replica(
    config: &NodeConfig,
    upstream: &Client,
    rt: &tokio::runtime::Handle,
) -> Result<Opened, NodeError> {
    let dir = &config.data_dir;
    std::fs::create_dir_all(dir)
        .map_err(|e| NodeError::Io(format!("cannot create {}: {e}", dir.display())))?;
    let remote = rt
        .block_on(fetch_genesis(upstream))
        .map_err(upstream_error)?;
    let genesis_path = config.genesis_path();
    let genesis = if genesis_path.exists() {
        let text = std::fs::read_to_string(&genesis_path)
            .map_err(|e| NodeError::Io(format!("cannot read {}: {e}", genesis_path.display())))?;
        Genesis::from_json(&text)
            .map_err(|e| refused(format!("{}: {e}", genesis_path.display())))?
    } else {
        remote
            .validate()
            .map_err(|e| refused(format!("the sequencer's genesis: {e}")))?;
        std::fs::write(&genesis_path, remote.to_json_pretty())
            .map_err(|e| NodeError::Io(format!("cannot write {}: {e}", genesis_path.display())))?;
        remote.clone()
    };
    let genesis_hash = hex::encode(genesis.hash());
    if genesis.hash() != remote.hash() {
        return Err(refused(format!(
            "{} hashes to {genesis_hash}, the sequencer's genesis to {}: this directory follows another chain",
            genesis_path.display(),
            hex::encode(remote.hash())
        )));
    }
    let runtime_config = node_runtime_config(config, &genesis);
    let engine_hash = runtime_config.config_hash();
    let db_path = config.db_path();
    let mut storage = Storage::open(&db_path)?;
    let code = match storage.chain_identity()? {
        Some((stored, _)) if stored != genesis_hash => {
            return Err(refused(format!(
                "{} holds the chain of genesis {stored}, not {genesis_hash}",
                db_path.display()
            )))
        }
        Some(_) => storage.code()?,
        None => {
            let http = reqwest::Client::new();
            let mut code = BTreeMap::new();
            for m in &genesis.modules {
                let wasm = rt
                    .block_on(fetch_code(&http, upstream, &m.code_hash))
                    .map_err(upstream_error)?;
                code.insert(m.code_hash.clone(), wasm);
            }
            code
        }
    };
    // The same compiled-module cache as a sequencer's (`<data>/compiled/`): a restart
    // deserialises instead of recompiling.
    let ctx = chain_context(config, &genesis, runtime_config, &code)?;
    if storage.chain_identity()?.is_none() {
        let block0 = rt
            .block_on(upstream.block(BlockRef::Height(0)))
            .map_err(upstream_error)?;
        let (state, state_hash) = verify_genesis(&ctx, &block0, &code)
            .map_err(|d| refused(format!("the sequencer's block 0 does not verify: {d}")))?;
        let entries: Vec<(String, Vec<u8>)> = state.map.into_iter().collect();
        storage.commit_genesis(
            &block0,
            &entries,
            &state_hash,
            &code,
            &genesis_hash,
            &engine_hash,
        )?;
        tracing::info!(hash = %block0.header.header.hash_hex(), "stored the sequencer's genesis block");
    }
    // As a sequencer's start: after a run that did not stop cleanly (the run marker is there),
    // or with `integrity_check = "always"`, `PRAGMA quick_check` and a rehash of the whole
    // stored state; otherwise the saved running hash is checked, and no state is read.
    let rehash = start_check(config, &storage, &db_path)?;
    let head = open_head(&ctx, &storage, &db_path, rehash, config.state_cache_bytes())?;
    preload_modules(&ctx, &head.state)?;
    mark_running(dir)?;
    Ok(Opened {
        ctx,
        genesis_hash,
        head,
        storage,
    })
}

/// What applying one block did.
enum Applied {
    /// Committed.
    Block,
    /// Not the next height (already have it, or a gap): nothing done.
    Skipped,
    /// A second, different block signed by the sequencer at a height already committed:
    /// ours, then the new one.
    Equivocation(Box<(SignedHeader, SignedHeader)>),
}

/// For a block at a height already committed: [`Applied::Equivocation`] when its hash differs
/// from ours and the genesis sequencer signed it, else [`Applied::Skipped`] (the same block,
/// or one not signed by the sequencer: logged and ignored).
fn compare_with_ours(chain: &Chain, block: &Block) -> Applied {
    let height = block.height();
    let ours = match chain.block(Some(height)) {
        Ok(b) => b.header,
        Err(e) => {
            tracing::warn!(
                height,
                "cannot read our block to compare with the sequencer's: {e}"
            );
            return Applied::Skipped;
        }
    };
    if ours.header.hash() == block.header.header.hash() {
        return Applied::Skipped;
    }
    if let Err(e) = chain.ctx.genesis().check_block_signer(&block.header) {
        tracing::warn!(
            height,
            hash = %block.header.header.hash_hex(),
            "ignoring another block at a height we have, not signed by the sequencer: {e}"
        );
        return Applied::Skipped;
    }
    Applied::Equivocation(Box::new((ours, block.header.clone())))
}

/// Verifies `block` on the chain's head and commits it (blocking). A divergence or a node
/// failure is [`ReplayError`]; a database failure is the outer error.
fn apply_block(
    chain: &Chain,
    storage: &mut Storage,
    block: &Block,
) -> Result<Result<Applied, ReplayError>, NodeError> {
    let head = chain.head().header.header.height;
    if block.height() <= head {
        return Ok(Ok(compare_with_ours(chain, block)));
    }
    if block.height() != head + 1 {
        return Ok(Ok(Applied::Skipped));
    }
    let checked = check_block(&chain.ctx, block.clone(), chain.ctx.verify_threads());
    let out = {
        // Only this task commits: the head cannot move between the look above and here.
        let head = chain.head();
        match verify_block(
            &chain.ctx,
            &head.state,
            &head.state_hash,
            &head.header.header,
            &checked,
        ) {
            Ok(out) => out,
            Err(e) => return Ok(Err(e)),
        }
    };
    // A block that verified has only transactions whose checks passed.
    let senders: Vec<(&str, u64)> = checked
        .checks
        .iter()
        .filter_map(|c| c.as_ref().ok())
        .map(|body| (body.from.as_str(), body.nonce))
        .collect();
    chain.commit(storage, block, &senders, out.writes, out.state_hash)?;
    Ok(Ok(Applied::Block))
}

/// Why following stopped.
enum Stop {
    /// Shutdown was asked for.
    Shutdown,
    /// A block did not verify (already logged): stop applying, keep serving.
    Diverged,
}

/// Follows the sequencer until shutdown or a divergence. Errors: the database failed.
pub async fn follow(
    chain: Arc<Chain>,
    storage: Storage,
    upstream: Client,
    mut shutdown: watch::Receiver<bool>,
) -> Result<(), NodeError> {
    // The writer moves in and out of blocking tasks through this slot.
    let mut slot = Some(storage);
    loop {
        match follow_once(&chain, &mut slot, &upstream, &mut shutdown).await? {
            Ok(Stop::Shutdown) => return Ok(()),
            Ok(Stop::Diverged) => {
                // Keep serving what was verified until shutdown.
                let _ = shutdown.wait_for(|s| *s).await;
                return Ok(());
            }
            Err(why) => {
                tracing::warn!(
                    "following {}: {why}; retrying in {RECONNECT:?}",
                    upstream.base_url()
                );
                tokio::select! {
                    _ = tokio::time::sleep(RECONNECT) => {}
                    _ = shutdown.changed() => {}
                }
            }
        }
    }
}

/// Verifies and commits one block on a blocking thread; `Ok(None)` to go on, `Ok(Some(stop))`
/// on a divergence, `Err(text)` for a retryable failure.
async fn apply_async(
    chain: &Arc<Chain>,
    storage: &mut Option<Storage>,
    block: Block,
) -> Result<Result<Option<Stop>, String>, NodeError> {
    let (c, mut s) = (chain.clone(), storage.take().expect("the writer is here"));
    let (s, result) = tokio::task::spawn_blocking(move || {
        let r = apply_block(&c, &mut s, &block).map(|r| (r, block.height()));
        (s, r)
    })
    .await
    .map_err(|e| NodeError::Runtime(format!("the block task panicked: {e}")))?;
    *storage = Some(s);
    let (result, height) = result?;
    Ok(match result {
        Ok(Applied::Block) => {
            tracing::info!(height, "block verified and committed");
            Ok(None)
        }
        Ok(Applied::Skipped) => Ok(None),
        Ok(Applied::Equivocation(pair)) => {
            let show = |h: &SignedHeader| serde_json::to_string(h).expect("a header serialises");
            tracing::error!(
                "equivocation at height {height}: the sequencer signed two different blocks; no longer following.\n  ours:       {}\n  sequencer's: {}",
                show(&pair.0),
                show(&pair.1)
            );
            Ok(Some(Stop::Diverged))
        }
        Err(ReplayError::Host(m)) => Err(format!("block {height}: {m}")),
        Err(ReplayError::Diverged(d)) => {
            tracing::error!(
                "the sequencer's block {height} does not verify; no longer following:\n{d}"
            );
            Ok(Some(Stop::Diverged))
        }
    })
}

/// One connection's worth of following: subscribe, catch up over HTTP, then apply live blocks
/// (fetching any gap). `Ok(Err(text))`: the connection failed, reconnect.
async fn follow_once(
    chain: &Arc<Chain>,
    slot: &mut Option<Storage>,
    upstream: &Client,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<Result<Stop, String>, NodeError> {
    // Subscribe first, so nothing committed during the catch-up is missed.
    let mut live = match upstream.subscribe_blocks().await {
        Ok(s) => s,
        Err(e) => return Ok(Err(e.to_string())),
    };
    let mut target = match upstream.status().await {
        Ok(s) => s.height,
        Err(e) => return Ok(Err(e.to_string())),
    };
    loop {
        // Catch up to `target` over HTTP.
        loop {
            if *shutdown.borrow() {
                return Ok(Ok(Stop::Shutdown));
            }
            let next = chain.head().header.header.height + 1;
            if next > target {
                break;
            }
            let block = match upstream.block(BlockRef::Height(next)).await {
                Ok(b) => b,
                Err(e) => return Ok(Err(e.to_string())),
            };
            match apply_async(chain, slot, block).await? {
                Ok(None) => {}
                Ok(Some(stop)) => return Ok(Ok(stop)),
                Err(e) => return Ok(Err(e)),
            }
        }
        // Live.
        let block = tokio::select! {
            b = live.next() => b,
            _ = shutdown.changed() => return Ok(Ok(Stop::Shutdown)),
        };
        let block = match block {
            Ok(Some(b)) => b,
            Ok(None) => {
                let reason = live.close_reason().map(|(c, r)| format!("{c} {r}"));
                return Ok(Err(format!("the subscription closed ({reason:?})")));
            }
            Err(e) => return Ok(Err(e.to_string())),
        };
        let height = block.height();
        let head = chain.head().header.header.height;
        if height > head + 1 {
            // A gap (e.g. blocks committed between the catch-up and the subscription's first
            // message): fetch them, then this one.
            target = height;
            continue;
        }
        match apply_async(chain, slot, block).await? {
            Ok(None) => {}
            Ok(Some(stop)) => return Ok(Ok(stop)),
            Err(e) => return Ok(Err(e)),
        }
    }
}
