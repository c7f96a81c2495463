//! `gamechain node --follow URL`: a read replica of the sequencer at `URL`. It pulls blocks
//! (catching up over `GET /v1/blocks/<height>`, then live over `GET /v1/ws`), verifies each
//! exactly as `gamechain verify` does ([`verify_block`]), commits it to its own SQLite, and
//! serves the same read API and WebSocket. `POST /v1/tx` is forwarded to the sequencer
//! unchanged ([`forward_tx`]; its answer is passed back), so the follower's mempool stays empty.
//!
//! Batches. A follower that is behind commits runs of blocks, one SQLite transaction and so one
//! fsync each, not one per block ([`apply_blocks`]): each block is verified on the head's state under the net
//! writes of the blocks before it in the run (a [`Layer`], as the pipelined sequencer builds on
//! a block still being written), until [`BATCH_BLOCKS`] blocks, [`BATCH_WORK`] of verification
//! or [`BATCH_BYTES`] (whichever first), and only while the next block is already at hand; then
//! the run is one SQLite transaction ([`Chain::commit_blocks`]: all of it or none after a crash;
//! the head record names its last block), the head moves to its last block, and the WebSocket
//! feed is told of each block in order, only now that they are durable. Catching up, blocks are
//! fetched [`FETCH_REQUESTS`] at a time and their signatures checked ([`check_block`]) ahead of
//! verification, at most [`FETCH_AHEAD`] held ([`fetch_ahead`]); live, the blocks the
//! subscription has already received form the run. A follower that is caught up gets one block
//! at a time and commits each at once: no waiting is added. A block that does not verify ends the
//! run: the blocks before it are committed, and it is reported at its own height. The rows
//! stored are exactly those of committing the blocks one by one (the tests compare them).
//!
//! Chains with validators. A follower checks finality before anything else: each block is
//! fetched with the record the followed node serves for it (`GET /v1/blocks/<height>/finality`),
//! and the [`FinalityGate`] passes it on only once a certificate by a quorum of the genesis
//! validators covers it (`follower_finality.rs`); the records that passed are stored beside
//! the blocks. Live blocks from the WebSocket only say how far to fetch. A record that
//! contradicts its block, or a certificate that does not verify, stops following as a
//! divergence does.
//!
//! First start on an empty data directory: the sequencer's genesis (`GET /v1/genesis`, written
//! to `<data>/genesis.json`), its module code (`GET /v1/code/<hash>`) and block 0, checked
//! against the genesis ([`verify_genesis`]), become the local chain. Every start checks that
//! the directory's genesis is the sequencer's and that the saved running state hash hashes to
//! the head's state root; like a sequencer's, a start after a run that did not stop cleanly
//! (`<data>/node.running` left behind) or with `integrity_check = "always"` also runs `PRAGMA
//! quick_check` and rehashes the whole stored state; the
//! state is read from SQLite on demand through the same bounded cache as a sequencer's
//! (`node/ledger/src/store/state_store.rs`), so a start reads none of it; a restarted follower catches up from its own head. Modules compile through the
//! same compiled-module cache as a sequencer's (`<data>/compiled/`), so a restart deserialises
//! them, and the log says for each module whether it was compiled or read from the cache.
//!
//! With `--snapshot-from PEER`, a first start takes the newest state snapshot `PEER` serves
//! instead of block 0 (`snapshot_join.rs`): the follower's chain then starts at that height,
//! blocks below it are not stored (`410 pruned`), and it follows from there.
//!
//! A block that does not verify is never applied: the follower logs the divergence (height,
//! field, expected and got), stops following and keeps serving what it has verified. A block
//! for a height it already has is compared with its own: the same hash is skipped; another
//! hash with a valid signature by the genesis sequencer is proof that the sequencer
//! equivocated: the follower logs `equivocation at height <h>` with both signed headers (JSON),
//! stops following and keeps serving (one with an invalid signature is ignored, with a
//! warning). A node
//! failure while executing (the wasm engine) is retried; a database failure stops the node.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::{FutureExt, StreamExt};
use gamechain_runtime::chain::{Genesis, SignedHeader};
use gamechain_runtime::{ChainContext, Layer, WriteSet};
use tokio::sync::{mpsc, watch};

use crate::config::NodeConfig;
use crate::proof::finality::FinalityChecker;
use crate::replica::follower_finality::{check_refetched, FinalityGate, GateError, Proven};
use crate::replica::snapshot_join::join_from_snapshot;
use crate::verify::replay::{check_block, verify_block, verify_genesis, CheckedBlock, ReplayError};
use crate::verify::source::{
    block_retrying, fetch_code, fetch_genesis, finality_retrying, Finality,
};
use gamechain_chain::wire::Block;
use gamechain_client::client::{BlockRef, BlockSubscription, Client, ClientResult};
use gamechain_ledger::chain::{Chain, Head};
use gamechain_ledger::genesis_setup::start_check;
use gamechain_ledger::open::{chain_context, node_runtime_config, open_head, preload_modules};
use gamechain_ledger::run_marker::mark_running;
use gamechain_ledger::snapshot::tidy_joins;
use gamechain_ledger::storage::Storage;
use gamechain_ledger::NodeError;

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
    let config = &config.ledger();
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
    if genesis.validators.is_some() {
        storage.ensure_validator_tables()?;
    }
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
    let fresh = storage.chain_identity()?.is_none();
    if let (true, Some(peer)) = (fresh, &config.snapshot_from) {
        join_from_snapshot(
            &ctx,
            &mut storage,
            dir,
            peer,
            &code,
            &genesis_hash,
            &engine_hash,
            Some(upstream),
            rt,
        )?;
    } else if !fresh {
        if config.snapshot_from.is_some() {
            tracing::info!("--snapshot-from ignored: this data directory holds the chain already");
        }
        tidy_joins(dir, storage.oldest_height()?.unwrap_or(0));
    }
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

/// Most blocks a follower commits in one SQLite transaction.
pub const BATCH_BLOCKS: usize = 64;

/// Verification time after which a batch is committed (its first block's start to the end of
/// its latest), whatever its size.
pub const BATCH_WORK: Duration = Duration::from_millis(50);

/// Bytes after which a batch is committed: its transactions' bodies and signatures and its
/// net state writes (keys and values), summed over its blocks.
pub const BATCH_BYTES: usize = 16 << 20;

/// Blocks a catching-up follower holds fetched and signature-checked ahead of verification.
pub const FETCH_AHEAD: usize = 16;

/// Block requests a catching-up follower has in flight at once.
pub const FETCH_REQUESTS: usize = 4;

/// When a batch is committed: whichever bound it reaches first (the block that reaches it is in
/// the batch).
#[derive(Debug, Clone, Copy)]
pub struct BatchBounds {
    /// Most blocks.
    pub blocks: usize,
    /// Most verification time.
    pub work: Duration,
    /// Most bytes (see [`BATCH_BYTES`]).
    pub bytes: usize,
}

impl BatchBounds {
    /// [`BATCH_BLOCKS`], [`BATCH_WORK`], [`BATCH_BYTES`].
    pub const DEFAULT: BatchBounds = BatchBounds {
        blocks: BATCH_BLOCKS,
        work: BATCH_WORK,
        bytes: BATCH_BYTES,
    };
}

/// Why [`apply_blocks`] stopped short.
enum End {
    /// A second, different block signed by the sequencer at a height already committed: ours,
    /// then the new one.
    Equivocation(Box<(SignedHeader, SignedHeader)>),
    /// The block at this height did not verify (a divergence), or this node failed while
    /// verifying it (retryable); the blocks before it are committed.
    Failed(u64, ReplayError),
}

/// What one [`apply_blocks`] call did.
#[derive(Default)]
struct Applied {
    /// The blocks committed, `(height, transactions)`, in height order (one SQLite transaction).
    committed: Vec<(u64, usize)>,
    /// The time of the last block committed, ms (what [`report`] compares with the clock).
    head_time_ms: Option<u64>,
    /// Why it stopped before the blocks at hand ran out or a bound was reached.
    end: Option<End>,
    /// A block taken from those at hand that is not the next height after the batch: for the
    /// next call.
    leftover: Option<CheckedBlock>,
}

/// For a block at a height already committed: the equivocation when its hash differs from ours
/// and the genesis sequencer signed it; `None` for the same block, or one not signed by the
/// sequencer (logged and ignored).
fn equivocation(chain: &Chain, block: &Block) -> Option<Box<(SignedHeader, SignedHeader)>> {
    let height = block.height();
    let ours = match chain.block(Some(height)) {
        Ok(b) => b.header,
        Err(e) => {
            tracing::warn!(
                height,
                "cannot read our block to compare with the sequencer's: {e}"
            );
            return None;
        }
    };
    if ours.header.hash() == block.header.header.hash() {
        return None;
    }
    if let Err(e) = chain.ctx.genesis().check_block_signer(&block.header) {
        tracing::warn!(
            height,
            hash = %block.header.header.hash_hex(),
            "ignoring another block at a height we have, not signed by the sequencer: {e}"
        );
        return None;
    }
    Some(Box::new((ours, block.header.clone())))
}

/// Bytes of `block` and `writes` counted against [`BatchBounds::bytes`].
fn batch_bytes(block: &Block, writes: &WriteSet) -> usize {
    let txs: usize = block
        .txs
        .iter()
        .map(|t| t.tx.body().len() + t.tx.signature().len())
        .sum();
    let writes: usize = writes
        .iter()
        .map(|(k, v)| k.len() + v.as_ref().map_or(0, Vec::len))
        .sum();
    txs + writes
}

/// Verifies `first` on the chain's head and, while `more` has blocks at hand (it never waits),
/// each next block on top of the ones before (the head's state under their net writes, a
/// [`Layer`]), until a bound of `bounds` is reached; then commits them all in one SQLite
/// transaction and moves the head to the last ([`Chain::commit_blocks`], which tells the
/// WebSocket feed of each, in order, once durable). Blocking.
///
/// A block that does not verify ends the batch: the blocks before it are committed, and it is
/// [`End::Failed`] with its own height. `first` at a height already committed is compared with
/// ours ([`End::Equivocation`], or nothing done); `first` above the next height (a gap) is
/// skipped. A block from `more` that is not the next height ends the batch as
/// [`Applied::leftover`]. Errors: the database failed (nothing of the batch is committed).
fn apply_blocks(
    chain: &Chain,
    storage: &mut Storage,
    first: CheckedBlock,
    more: &mut dyn FnMut() -> Option<CheckedBlock>,
    bounds: BatchBounds,
) -> Result<Applied, NodeError> {
    let mut applied = Applied::default();
    let committed = chain.head().header.header.height;
    let height = first.block.height();
    if height <= committed {
        applied.end = equivocation(chain, &first.block).map(End::Equivocation);
        return Ok(applied);
    }
    if height != committed + 1 {
        return Ok(applied);
    }
    let started = Instant::now();
    let mut run: Vec<CheckedBlock> = Vec::new();
    let mut writes = WriteSet::new();
    let mut witnesses = Vec::new();
    let mut bytes = 0;
    let state_hash = {
        // Only this task commits: the head cannot move while this runs.
        let head = chain.head();
        let mut parent = head.header.header.clone();
        let mut state_hash = head.state_hash.clone();
        let mut next = Some(first);
        while let Some(checked) = next.take() {
            if checked.block.height() != parent.height + 1 {
                applied.leftover = Some(checked);
                break;
            }
            let state = Layer {
                base: &head.state,
                writes: &writes,
            };
            let out = match verify_block(&chain.ctx, &state, &state_hash, &parent, &checked) {
                Ok(out) => out,
                Err(e) => {
                    applied.end = Some(End::Failed(checked.block.height(), e));
                    break;
                }
            };
            bytes += batch_bytes(&checked.block, &out.writes);
            writes.extend(out.writes);
            witnesses.extend(out.start_witnesses);
            state_hash = out.state_hash;
            parent = checked.block.header.header.clone();
            run.push(checked);
            if run.len() >= bounds.blocks
                || bytes >= bounds.bytes
                || started.elapsed() >= bounds.work
            {
                break;
            }
            next = more();
        }
        state_hash
    };
    if run.is_empty() {
        return Ok(applied);
    }
    // A block that verified has only transactions whose checks passed.
    let senders: Vec<Vec<(&str, u64)>> = run
        .iter()
        .map(|c| {
            c.checks
                .iter()
                .filter_map(|c| c.as_ref().ok())
                .map(|body| (body.account(), body.nonce))
                .collect()
        })
        .collect();
    let blocks: Vec<(&Block, &[(&str, u64)])> = run
        .iter()
        .zip(&senders)
        .map(|(c, s)| (&c.block, s.as_slice()))
        .collect();
    chain.commit_blocks(storage, &blocks, writes, state_hash, &witnesses)?;
    applied.committed = run
        .iter()
        .map(|c| (c.block.height(), c.block.txs.len()))
        .collect();
    applied.head_time_ms = run.last().map(|c| c.block.header.header.time_ms);
    Ok(applied)
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
    let finality = finalities(&chain)?;
    let f = finality.as_ref();
    loop {
        if *shutdown.borrow() {
            return Ok(());
        }
        match follow_once(&chain, &mut slot, &upstream, f, &mut shutdown).await? {
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

/// Follows `upstream` as [`follow`] does (catching up over HTTP, every block checked and, on a
/// chain with validators, proven final first), polling its head every [`UNTIL_POLL`], until
/// `reached` (called before each poll, on the chain as committed so far) names a height:
/// `Some((storage, height))`; `None` on shutdown. Used by a validator that rejoins consensus
/// (`validator/rejoin.rs`). Errors: the database failed, `reached` failed, or the followed
/// node served a block the validators did not finalize (already logged;
/// `NodeError::Refused`). An unreachable node is retried every [`RECONNECT`].
pub async fn follow_until(
    chain: &Arc<Chain>,
    storage: Storage,
    upstream: &Client,
    shutdown: &mut watch::Receiver<bool>,
    mut reached: impl FnMut(&Arc<Chain>) -> Result<Option<u64>, NodeError>,
) -> Result<Option<(Storage, u64)>, NodeError> {
    let mut slot = Some(storage);
    let finality = finalities(chain)?;
    loop {
        if *shutdown.borrow() {
            return Ok(None);
        }
        if let Some(height) = reached(chain)? {
            return Ok(Some((slot.take().expect("the writer is back"), height)));
        }
        let outcome = match upstream.status().await {
            Ok(s) => {
                catch_up(
                    chain,
                    &mut slot,
                    upstream,
                    finality.as_ref(),
                    s.height,
                    shutdown,
                )
                .await?
            }
            Err(e) => Err(e.to_string()),
        };
        let pause = match outcome {
            Ok(None) => UNTIL_POLL,
            Ok(Some(Stop::Shutdown)) => return Ok(None),
            Ok(Some(Stop::Diverged)) => {
                return Err(refused(format!(
                    "{} served a block the validators did not finalize (logged above)",
                    upstream.base_url()
                )))
            }
            Err(why) => {
                tracing::warn!(
                    "following {}: {why}; retrying in {RECONNECT:?}",
                    upstream.base_url()
                );
                RECONNECT
            }
        };
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = shutdown.changed() => {}
        }
    }
}

/// How often [`follow_until`] asks the followed node for its head once caught up.
pub const UNTIL_POLL: Duration = Duration::from_millis(200);

/// The finality checking of a follower of `chain`: `None` on a sequencer's chain. Errors: the
/// genesis validator set is not usable.
fn finalities(chain: &Chain) -> Result<Option<Finalities>, NodeError> {
    Ok(match &chain.ctx.genesis().validators {
        None => None,
        Some(_) => Some(Finalities {
            checker: Arc::new(
                FinalityChecker::new(chain.ctx.genesis(), &chain.genesis_hash)
                    .map_err(|e| refused(format!("the genesis validator set: {e}")))?,
            ),
            genesis: Arc::new(chain.ctx.genesis().clone()),
            records: Arc::default(),
        }),
    })
}

/// A follower of a chain with validators: the certificate checker, and the finality records
/// of blocks let through by the gate ([`FinalityGate`]) until they are committed and stored.
struct Finalities {
    checker: Arc<FinalityChecker>,
    genesis: Arc<Genesis>,
    records: Records,
}

/// Finality records by height, from the gate to the database.
type Records = Arc<Mutex<BTreeMap<u64, Finality>>>;

/// Why fetching blocks ahead stopped early.
#[derive(Debug, Clone)]
enum FetchError {
    /// A request failed, or the finality gate asks to wait: reconnect and try again.
    Retry(String),
    /// The followed node serves a block the validators did not finalize (already logged).
    Diverged,
}

impl FetchError {
    /// What [`catch_up`] answers for it.
    fn outcome(&self) -> Result<Option<Stop>, String> {
        match self {
            FetchError::Retry(e) => Err(e.clone()),
            FetchError::Diverged => Ok(Some(Stop::Diverged)),
        }
    }
}

/// The blocks at hand after the first of a batch: [`Ready::next`] never waits.
enum Ready {
    /// Catching up: blocks fetched and signature-checked ahead ([`fetch_ahead`]); a fetch
    /// failure ends them (kept in `failed`).
    Fetched {
        blocks: mpsc::Receiver<Result<CheckedBlock, FetchError>>,
        failed: Option<FetchError>,
    },
    /// Live: blocks the subscription has already received, unchecked.
    Received(VecDeque<Block>),
}

impl Ready {
    /// The next block at hand, checked; `None` when there is none right now.
    fn next(&mut self, ctx: &ChainContext) -> Option<CheckedBlock> {
        match self {
            Ready::Fetched { blocks, failed } => match blocks.try_recv() {
                Ok(Ok(checked)) => Some(checked),
                Ok(Err(e)) => {
                    *failed = Some(e);
                    None
                }
                Err(_) => None,
            },
            Ready::Received(blocks) => blocks
                .pop_front()
                .map(|b| check_block(ctx, b, ctx.verify_threads())),
        }
    }
}

/// [`apply_blocks`] of `first` (else the first block of `ready`) and the blocks `ready` has at
/// hand, on a blocking thread; gives `ready` back.
async fn apply_async(
    chain: &Arc<Chain>,
    storage: &mut Option<Storage>,
    records: Option<&Records>,
    first: Option<CheckedBlock>,
    mut ready: Ready,
) -> Result<(Applied, Ready), NodeError> {
    let (c, mut s) = (chain.clone(), storage.take().expect("the writer is here"));
    let records = records.cloned();
    let (s, ready, result) = tokio::task::spawn_blocking(move || {
        // The finality the gate checked for the blocks it let through, stored before they are
        // committed (they are final whatever our verification finds), so a stored block has
        // its record; records above the head are read by nothing until their block is stored.
        let stored = match &records {
            None => Ok(()),
            Some(records) => {
                let rows: Vec<_> = std::mem::take(&mut *records.lock().expect("records lock"))
                    .into_iter()
                    .map(|(h, f)| (h, (f.digest, f.certificate)))
                    .collect();
                s.put_validator_finalities(&rows)
            }
        };
        let result = match (stored, first.or_else(|| ready.next(&c.ctx))) {
            (Err(e), _) => Err(NodeError::from(e)),
            (Ok(()), Some(first)) => apply_blocks(
                &c,
                &mut s,
                first,
                &mut || ready.next(&c.ctx),
                BatchBounds::DEFAULT,
            ),
            (Ok(()), None) => Ok(Applied::default()),
        };
        (s, ready, result)
    })
    .await
    .map_err(|e| NodeError::Runtime(format!("the block task panicked: {e}")))?;
    *storage = Some(s);
    Ok((result?, ready))
}

/// Logs what [`apply_blocks`] did: `Ok(None)` to go on, `Ok(Some(stop))` on a divergence or an
/// equivocation, `Err(text)` for a retryable failure. A new head whose time runs ahead of this
/// node's clock by more than the chain's drift window is reported (a warning and the
/// `gamechain_head_ahead_ms` gauge): the block is valid (replay never reads a clock), but its
/// maker's clock, or this one, is wrong.
fn report(chain: &Chain, applied: &Applied) -> Result<Option<Stop>, String> {
    for &(height, txs) in &applied.committed {
        tracing::info!(height, txs, "block verified and committed");
    }
    if let (Some(&(height, _)), Some(time)) = (applied.committed.last(), applied.head_time_ms) {
        let now = chain.clock.now_ms();
        let ahead = chain.genesis().clock().ahead_of(time, now);
        chain.metrics.head_ahead_ms.set(ahead.unwrap_or(0) as i64);
        if let Some(ahead) = ahead {
            tracing::warn!(
                height,
                time_ms = time,
                now_ms = now,
                "the head's time is {ahead} ms ahead of this node's clock (more than the chain's \
                 max_clock_drift_ms of {}): the block maker's clock or this one is wrong",
                chain.genesis().clock().max_clock_drift_ms
            );
        }
    }
    match &applied.end {
        None => Ok(None),
        Some(End::Equivocation(pair)) => {
            let show = |h: &SignedHeader| serde_json::to_string(h).expect("a header serialises");
            tracing::error!(
                "equivocation at height {}: the sequencer signed two different blocks; no longer following.\n  ours:       {}\n  sequencer's: {}",
                pair.1.header.height,
                show(&pair.0),
                show(&pair.1)
            );
            Ok(Some(Stop::Diverged))
        }
        Some(End::Failed(height, ReplayError::Host(m))) => Err(format!("block {height}: {m}")),
        Some(End::Failed(height, ReplayError::Diverged(d))) => {
            tracing::error!(
                "the sequencer's block {height} does not verify; no longer following:\n{d}"
            );
            Ok(Some(Stop::Diverged))
        }
    }
}

/// Fetches blocks `from..=to` in order ([`FETCH_REQUESTS`] requests at once), checks their
/// signatures on a blocking thread (while the follower verifies the blocks before them), and
/// sends them to `out`, which holds at most [`FETCH_AHEAD`]. The first failure is sent last.
///
/// On a chain with validators each block's finality record is fetched with it and `gate`
/// passes on only the blocks it proves final ([`FinalityGate`]), their records put in
/// `records`; the blocks a certificate covers below its own block are fetched again and
/// checked against the digests the gate kept. Blocks still waiting for a certificate when `to`
/// is reached are dropped (the next catch-up fetches them again).
async fn fetch_ahead(
    ctx: Arc<ChainContext>,
    upstream: Client,
    from: u64,
    to: u64,
    mut gate: Option<(FinalityGate, Records)>,
    out: mpsc::Sender<Result<CheckedBlock, FetchError>>,
) {
    let threads = ctx.verify_threads();
    let validators = gate.is_some();
    let check = |block: Block| {
        let ctx = ctx.clone();
        async move {
            let height = block.height();
            tokio::task::spawn_blocking(move || check_block(&ctx, block, threads))
                .await
                .map_err(|e| FetchError::Retry(format!("checking block {height} panicked: {e}")))
        }
    };
    let mut fetched = futures_util::stream::iter(from..=to)
        .map(|height| {
            let upstream = upstream.clone();
            async move {
                let block = block_retrying(&upstream, height).await;
                let finality = match (validators, &block) {
                    (true, Ok(_)) => Some(finality_retrying(&upstream, height).await),
                    _ => None,
                };
                (height, block, finality)
            }
        })
        .buffered(FETCH_REQUESTS);
    while let Some((height, block, finality)) = fetched.next().await {
        let item = match block {
            Ok(block) => check(block).await,
            Err(e) => Err(FetchError::Retry(format!("GET /v1/blocks/{height}: {e}"))),
        };
        let items = match (item, &mut gate, finality) {
            (Ok(checked), Some((gate, records)), Some(finality)) => {
                let admitted = finality
                    .map_err(GateError::Retry)
                    .and_then(|f| gate.admit(checked, f));
                match admitted {
                    Ok(None) => Vec::new(),
                    Ok(Some(proven)) => released(&upstream, proven, records, &check).await,
                    Err(e) => vec![Err(gate_failure(e))],
                }
            }
            (item, _, _) => vec![item],
        };
        for item in items {
            let failed = item.is_err();
            if out.send(item).await.is_err() || failed {
                return;
            }
        }
    }
}

/// A [`GateError`] as a [`FetchError`] (a divergence logged).
fn gate_failure(e: GateError) -> FetchError {
    match e {
        GateError::Retry(e) => FetchError::Retry(e),
        GateError::Diverged(e) => {
            tracing::error!(
                "the followed node serves a block the validators did not finalize; no longer following:\n{e}"
            );
            FetchError::Diverged
        }
    }
}

/// The blocks `proven` lets through, in height order, their records put in `records`: the
/// blocks below its certified one fetched again and checked against their kept digests, then
/// the certified one. A failure ends the list.
async fn released<F, Fut>(
    upstream: &Client,
    proven: Proven,
    records: &Records,
    check: &F,
) -> Vec<Result<CheckedBlock, FetchError>>
where
    F: Fn(Block) -> Fut,
    Fut: std::future::Future<Output = Result<CheckedBlock, FetchError>>,
{
    let mut out = Vec::with_capacity(proven.refetch.len() + 1);
    for (height, parent, digest) in proven.refetch {
        let block = match block_retrying(upstream, height).await {
            Ok(block) => block,
            Err(e) => {
                out.push(Err(FetchError::Retry(format!(
                    "GET /v1/blocks/{height}: {e}"
                ))));
                return out;
            }
        };
        if let Err(e) = check_refetched(&parent, &digest, &block) {
            out.push(Err(gate_failure(e)));
            return out;
        }
        match check(block).await {
            Ok(checked) => {
                lock_records(records).insert(
                    height,
                    Finality {
                        digest,
                        certificate: None,
                    },
                );
                out.push(Ok(checked));
            }
            Err(e) => {
                out.push(Err(e));
                return out;
            }
        }
    }
    lock_records(records).insert(proven.block.block.height(), proven.finality);
    out.push(Ok(proven.block));
    out
}

fn lock_records(records: &Records) -> std::sync::MutexGuard<'_, BTreeMap<u64, Finality>> {
    records.lock().unwrap_or_else(|p| p.into_inner())
}

/// Aborts a task when dropped.
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Catches up to `target` over HTTP: blocks fetched and signature-checked ahead
/// ([`fetch_ahead`]), verified and committed in batches ([`apply_blocks`]). `Ok(Ok(None))` once
/// the head is `target`; `Ok(Err(text))`: a request failed, reconnect.
async fn catch_up(
    chain: &Arc<Chain>,
    slot: &mut Option<Storage>,
    upstream: &Client,
    finality: Option<&Finalities>,
    target: u64,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<Result<Option<Stop>, String>, NodeError> {
    let from = chain.head().header.header.height + 1;
    if from > target {
        return Ok(Ok(None));
    }
    let gate = match finality {
        None => None,
        Some(f) => {
            // From our head's consensus digest (chained from the nearest one stored).
            let head = from - 1;
            let c = chain.clone();
            let digest = tokio::task::spawn_blocking(move || {
                c.read_db(|db| Ok(crate::proof::digest::digest_at(db, head).map(|d| d.0)))
                    .map_err(|e| NodeError::Runtime(e.to_string()))
            })
            .await
            .map_err(|e| NodeError::Runtime(format!("the digest task panicked: {e}")))???;
            lock_records(&f.records).clear();
            Some((
                FinalityGate::new(f.checker.clone(), f.genesis.clone(), head, digest),
                f.records.clone(),
            ))
        }
    };
    let (tx, rx) = mpsc::channel(FETCH_AHEAD);
    let fetcher = tokio::spawn(fetch_ahead(
        chain.ctx.clone(),
        upstream.clone(),
        from,
        target,
        gate,
        tx,
    ));
    let _fetcher = AbortOnDrop(fetcher.abort_handle());
    let mut ready = Some(Ready::Fetched {
        blocks: rx,
        failed: None,
    });
    let mut leftover = None;
    loop {
        if *shutdown.borrow() {
            return Ok(Ok(Some(Stop::Shutdown)));
        }
        let first = match leftover.take() {
            Some(block) => block,
            None => {
                let Some(Ready::Fetched { blocks, .. }) = ready.as_mut() else {
                    unreachable!("catching up reads fetched blocks")
                };
                tokio::select! {
                    b = blocks.recv() => match b {
                        Some(Ok(block)) => block,
                        Some(Err(e)) => return Ok(e.outcome()),
                        // Every block up to `target` was applied.
                        None => return Ok(Ok(None)),
                    },
                    _ = shutdown.changed() => return Ok(Ok(Some(Stop::Shutdown))),
                }
            }
        };
        let taken = ready.take().expect("put back after each batch");
        let records = finality.map(|f| &f.records);
        let (mut applied, back) = apply_async(chain, slot, records, Some(first), taken).await?;
        leftover = applied.leftover.take();
        match report(chain, &applied) {
            Ok(None) => {}
            Ok(Some(stop)) => return Ok(Ok(Some(stop))),
            Err(e) => return Ok(Err(e)),
        }
        if let Ready::Fetched {
            failed: Some(e), ..
        } = &back
        {
            return Ok(e.outcome());
        }
        ready = Some(back);
    }
}

/// One connection's worth of following: subscribe, catch up over HTTP, then apply live blocks
/// (fetching any gap). `Ok(Err(text))`: the connection failed, reconnect.
async fn follow_once(
    chain: &Arc<Chain>,
    slot: &mut Option<Storage>,
    upstream: &Client,
    finality: Option<&Finalities>,
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
    'follow: loop {
        match catch_up(chain, slot, upstream, finality, target, shutdown).await? {
            Ok(None) => {}
            Ok(Some(stop)) => return Ok(Ok(stop)),
            Err(e) => return Ok(Err(e)),
        }
        // Live.
        let block = tokio::select! {
            b = live.next() => b,
            _ = shutdown.changed() => return Ok(Ok(Stop::Shutdown)),
        };
        let block = match block {
            Ok(Some(b)) => b,
            other => {
                let failed = subscription_failure(Some(other), &live);
                return Ok(Err(failed.expect("not a block, so a close or a failure")));
            }
        };
        // With it, the blocks the subscription has already received (never waiting for one):
        // a follower that fell behind the live feed commits them together. A close or a
        // failure among them is handled after them.
        let mut received = VecDeque::from([block]);
        let mut after = None;
        while received.len() < BATCH_BLOCKS {
            match live.next().now_or_never() {
                Some(Ok(Some(b))) => received.push_back(b),
                Some(other) => {
                    after = Some(other);
                    break;
                }
                None => break,
            }
        }
        if finality.is_some() {
            // A chain with validators: each block is fetched with its finality record and
            // passes the finality gate first, as when catching up.
            if let Some(failed) = subscription_failure(after, &live) {
                return Ok(Err(failed));
            }
            let head = chain.head().header.header.height;
            target = received.iter().map(Block::height).max().unwrap_or(head);
            continue 'follow;
        }
        while let Some(front) = received.front() {
            let head = chain.head().header.header.height;
            if front.height() > head + 1 {
                // A gap (e.g. blocks committed between the catch-up and the subscription's
                // first message): fetch them, then these.
                target = received.iter().map(Block::height).max().unwrap_or(head);
                continue 'follow;
            }
            let (mut applied, back) =
                apply_async(chain, slot, None, None, Ready::Received(received)).await?;
            let Ready::Received(rest) = back else {
                unreachable!("given back as given")
            };
            received = rest;
            if let Some(left) = applied.leftover.take() {
                received.push_front(left.block);
            }
            match report(chain, &applied) {
                Ok(None) => {}
                Ok(Some(stop)) => return Ok(Ok(stop)),
                Err(e) => return Ok(Err(e)),
            }
        }
        if let Some(failed) = subscription_failure(after, &live) {
            return Ok(Err(failed));
        }
    }
}

/// What the subscription's message read after the blocks at hand (`after`) says: `Some(why)`
/// when it closed or failed (reconnect), `None` when it goes on.
fn subscription_failure(
    after: Option<ClientResult<Option<Block>>>,
    live: &BlockSubscription,
) -> Option<String> {
    match after {
        None | Some(Ok(Some(_))) => None,
        Some(Ok(None)) => {
            let reason = live.close_reason().map(|(c, r)| format!("{c} {r}"));
            Some(format!("the subscription closed ({reason:?})"))
        }
        Some(Err(e)) => Some(e.to_string()),
    }
}

#[cfg(test)]
#[path = "follower_tests.rs"]
mod tests;
