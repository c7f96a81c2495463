//! The sequencer: the one task that makes blocks. It owns the database writer and the
//! sequencer key.
//!
//! A block is made as soon as the mempool holds transactions that are not in a block yet (up to
//! `max_block_txs`, in arrival order), but not sooner than `block_coalesce_ms` after the
//! execution of the previous block with transactions ended (unless the mempool already fills a
//! block), and otherwise `block_interval_ms` after the previous one (an empty block).
//! Its time is `max(now_ms, parent.time_ms + 1)`: the only clock reading that reaches the chain.
//!
//! A block goes through two stages, each on a blocking thread (wasm and SQLite never run on the
//! async executor):
//!
//! 1. **Build** ([`build_block`]): each transaction goes through `BlockBuilder::push_checked`;
//!    one the builder refuses (`InvalidTx`) is dropped from the mempool with a log line, together
//!    with the sender's later transactions, and the block goes on without them. `finish` runs the
//!    `end_block` calls and hashes the block's changes on several threads (the state hash is a sum
//!    of per-write terms). The included transactions are marked in flight in the mempool
//!    (`mempool.rs`): they stay pending, but the next block does not take them again.
//! 2. **Commit** ([`commit_block`]): the block is signed, recorded in `<data>/sign-state.json`
//!    (durably, `sign_state.rs`: the sequencer never signs another block at that height),
//!    committed to SQLite in one transaction (fsynced), applied to the head and broadcast
//!    (`Chain::commit`: the WebSocket pushes its receipts only now, once it is durable).
//!
//! **Pipelining** (`pipeline`, default on): block N+1 is built while block N is being
//! committed. It is built on the state after N: the committed head, read under the head lock one
//! call at a time ([`HeadState`]), under N's net writes (a [`Layer`]), with N's header as parent
//! and N's state hash; so it is exactly the block a sequencer that waits would make from the
//! same transactions. N+1 is signed only once N is durable (the commit of N+1 starts after that
//! of N has returned), so at most one block is ever signed and not durable: the one the sign
//! state holds, which a restart commits (`sign_state.rs`). Everything else (the API, views,
//! admission's committed nonces, the WebSocket) sees only the durable head. With `pipeline =
//! false` each block is committed before the next is built.
//!
//! Empty blocks are logged at debug level, blocks with transactions at info; every
//! `log_summary_secs` (default 10) an info line sums up (height, blocks and transactions since
//! the last summary, mempool size).
//!
//! Shutdown finishes the block being built, commits it and the one in flight, then returns. A
//! node failure while executing (`TransitionError::Host`, e.g. the wasm engine) commits
//! nothing of that block and is retried after [`HOST_RETRY`]; a database or sign-state failure
//! stops the node (the operator must look), as does a transition error that means the stored
//! chain is corrupt.

use std::sync::Arc;
use std::time::Duration;

use gamechain_runtime::chain::{Action, Header, SecretKey, SignedHeader, StateHash};
use gamechain_runtime::{BlockBuilder, Layer, State, TransitionError, TxRejection, WriteSet};
use gamechain_sdk::Checkpoint;
use tokio::sync::watch;
use tokio::task::{JoinError, JoinHandle};
use tokio::time::Instant;

use crate::error::NodeError;
use crate::ledger::chain::Chain;
use crate::ledger::genesis_setup::now_ms;
use crate::ledger::sign_state::SignStateFile;
use crate::ledger::storage::Storage;
use gamechain_chain::wire::{Block, IncludedTx};

/// Wait before retrying a block whose execution failed in the node (not in a module).
pub const HOST_RETRY: Duration = Duration::from_secs(1);

/// Blocks and transactions since the last summary line, which is due every `every`
/// (`None`: never).
struct Summary {
    every: Option<Duration>,
    since: Instant,
    blocks: u64,
    txs: u64,
}

impl Summary {
    fn new(every: Option<Duration>) -> Summary {
        Summary {
            every,
            since: Instant::now(),
            blocks: 0,
            txs: 0,
        }
    }

    /// Counts a block; logs the summary line when it is due.
    fn block(&mut self, chain: &Chain, height: u64, txs: usize) {
        self.blocks += 1;
        self.txs += txs as u64;
        let Some(every) = self.every else { return };
        if self.since.elapsed() >= every {
            tracing::info!(
                height,
                blocks = self.blocks,
                txs = self.txs,
                mempool = chain.mempool().len(),
                "summary: {} blocks, {} transactions in the last {:.0} s",
                self.blocks,
                self.txs,
                self.since.elapsed().as_secs_f64()
            );
            *self = Summary::new(self.every);
        }
    }
}

/// The committed head's state, read under the head lock one call at a time: the lock is never
/// held across a block's execution, so a commit can apply the block before meanwhile. Written
/// against [`State`], whatever the head keeps its state in. Validators read the head the same
/// way (`validator/ledger.rs`).
pub(crate) struct HeadState<'a>(pub(crate) &'a Chain);

impl State for HeadState<'_> {
    fn get(&self, key: &str) -> Option<Vec<u8>> {
        self.0.head().state.get(key)
    }

    fn scan(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> Vec<(String, Vec<u8>)> {
        self.0.head().state.scan(prefix, start_after, limit)
    }
}

/// The newest block made, durable or still being committed: what the next block is built on.
#[derive(Clone)]
struct Tip {
    /// Its header (the next block's parent).
    header: Header,
    /// The running state hash after it.
    state_hash: StateHash,
    /// Its net writes while it may not be applied to the head yet (its commit is in flight);
    /// `None` once the head is this block. Read over the head, whether or not the head has
    /// applied them meanwhile, they give the state after this block: the head only ever moves
    /// to this block, and only on these keys.
    pending: Option<Arc<WriteSet>>,
}

impl Tip {
    /// The durable head.
    fn of_head(chain: &Chain) -> Tip {
        let head = chain.head();
        Tip {
            header: head.header.header.clone(),
            state_hash: head.state_hash.clone(),
            pending: None,
        }
    }
}

/// A block built and not yet signed ([`build_block`]), with what committing it needs.
struct Built {
    /// The header to sign.
    header: Header,
    /// The transactions with their receipts, in block order.
    txs: Vec<IncludedTx>,
    /// The `end_block` receipts.
    end_block: Vec<(String, gamechain_runtime::chain::Receipt)>,
    /// Each transaction's `(from, nonce)`, in block order.
    senders: Vec<(String, u64)>,
    /// The block's net writes (shared with the next block's build while this one commits).
    writes: Arc<WriteSet>,
    /// The running state hash after it.
    state_hash: StateHash,
}

/// What one attempt at building a block did.
enum Made {
    /// A block, ready to sign and commit.
    Block(Box<Built>),
    /// A node failure: nothing made, try again later.
    Retry(String),
}

/// A committed block: its height and number of transactions.
struct Committed {
    height: u64,
    txs: usize,
}

/// The database writer and the sign state: moved into each commit, and back.
type Writer = (Storage, SignStateFile);

/// A commit on a blocking thread; it hands the writer back with its outcome.
type CommitTask = JoinHandle<(Writer, Result<Committed, NodeError>)>;

/// Waits for the commit in flight; never returns when there is none (for `select!`).
async fn landing(
    task: &mut Option<CommitTask>,
) -> Result<(Writer, Result<Committed, NodeError>), JoinError> {
    match task {
        Some(t) => t.await,
        None => std::future::pending().await,
    }
}

/// Runs the sequencer until `shutdown` turns true. The block being built when it does is
/// finished and committed first, as is the one in flight. Errors: the database or the sign
/// state (`sign_state`) failed, or the chain's state is corrupt.
pub async fn run(
    chain: Arc<Chain>,
    storage: Storage,
    sign_state: SignStateFile,
    key: SecretKey,
    mut shutdown: watch::Receiver<bool>,
) -> Result<(), NodeError> {
    let every = chain.config.log_summary_secs;
    let mut summary = Summary::new((every > 0).then(|| Duration::from_secs(every)));
    let mut writer: Option<Writer> = Some((storage, sign_state));
    let mut in_flight: Option<CommitTask> = None;
    let pipeline = chain.config.pipeline;
    let interval = Duration::from_millis(chain.config.block_interval_ms);
    let coalesce = Duration::from_millis(chain.config.block_coalesce_ms).min(interval);
    let key = Arc::new(key);
    let mut tip = Tip::of_head(&chain);
    let mut last_block = Instant::now();
    // The end of the build of the last block that held transactions: the coalescing window
    // counts from it (an empty block never delays the next transaction).
    let mut last_busy_block = last_block;
    // A commit that returned: its writer is back; its block is the head now.
    let mut landed = |joined: Result<(Writer, Result<Committed, NodeError>), JoinError>,
                      writer: &mut Option<Writer>,
                      tip: &mut Tip|
     -> Result<(), NodeError> {
        let (w, committed) =
            joined.map_err(|e| NodeError::Runtime(format!("the commit task panicked: {e}")))?;
        *writer = Some(w);
        let Committed { height, txs } = committed?;
        if tip.header.height == height {
            tip.pending = None;
        }
        if txs == 0 {
            tracing::debug!(height, txs, "block committed");
        } else {
            tracing::info!(height, txs, "block committed");
        }
        summary.block(&chain, height, txs);
        Ok(())
    };
    loop {
        // Wait for a transaction, the interval, or shutdown; land the commit in flight if it
        // returns meanwhile.
        loop {
            if *shutdown.borrow() {
                if let Some(task) = in_flight.take() {
                    landed(task.await, &mut writer, &mut tip)?;
                }
                tracing::info!("sequencer stopped");
                return Ok(());
            }
            if chain.mempool().ready_len() > 0 || Instant::now() >= last_block + interval {
                break;
            }
            tokio::select! {
                _ = chain.wake.notified() => {}
                _ = tokio::time::sleep_until(last_block + interval) => {}
                _ = shutdown.changed() => {}
                joined = landing(&mut in_flight) => {
                    in_flight = None;
                    landed(joined, &mut writer, &mut tip)?;
                }
            }
        }
        // The coalescing window: while transactions keep arriving, at most one block per
        // window, so that a trickle fills blocks instead of making one per transaction.
        let window = last_busy_block + coalesce;
        if Instant::now() < window && chain.mempool().ready_len() < chain.config.max_block_txs {
            tokio::select! {
                _ = tokio::time::sleep_until(window) => {}
                _ = shutdown.changed() => {}
            }
        }
        // Build the next block on the tip, while the one before commits.
        let (c, t) = (chain.clone(), tip.clone());
        let made = match tokio::task::spawn_blocking(move || build_block(&c, &t)).await {
            Ok(made) => made,
            Err(e) => {
                // (A state read that SQLite failed panics in the build.) The block before is
                // landed first, so its outcome is logged and the writer closed cleanly.
                if let Some(task) = in_flight.take() {
                    landed(task.await, &mut writer, &mut tip)?;
                }
                return Err(NodeError::Runtime(format!("the block task panicked: {e}")));
            }
        };
        // The block before must be durable before this one is signed.
        if let Some(task) = in_flight.take() {
            landed(task.await, &mut writer, &mut tip)?;
        }
        match made? {
            Made::Block(built) => {
                last_block = Instant::now();
                if !built.txs.is_empty() {
                    last_busy_block = last_block;
                }
                tip = Tip {
                    header: built.header.clone(),
                    state_hash: built.state_hash.clone(),
                    pending: Some(built.writes.clone()),
                };
                let mut w = writer.take().expect("no commit is in flight");
                let (c, k) = (chain.clone(), key.clone());
                let task = tokio::task::spawn_blocking(move || {
                    let committed = commit_block(&c, &mut w, &k, *built);
                    (w, committed)
                });
                if pipeline {
                    in_flight = Some(task);
                } else {
                    landed(task.await, &mut writer, &mut tip)?;
                }
            }
            Made::Retry(why) => {
                tracing::error!("block not made, retrying in {HOST_RETRY:?}: {why}");
                tokio::select! {
                    _ = tokio::time::sleep(HOST_RETRY) => {}
                    _ = shutdown.changed() => {}
                }
            }
        }
    }
}

/// Builds the block after `tip` from the mempool's transactions not in flight (blocking), and
/// marks the included ones in flight. Nothing is signed, written or applied.
fn build_block(chain: &Chain, tip: &Tip) -> Result<Made, NodeError> {
    let batch = chain.mempool().batch(chain.config.max_block_txs);
    let build = chain.metrics.build_seconds.start_timer();
    let ctx = &chain.ctx;
    let head = HeadState(chain);
    let layer;
    let state: &dyn State = match &tip.pending {
        Some(writes) => {
            layer = Layer {
                base: &head,
                writes,
            };
            &layer
        }
        None => &head,
    };
    let parent = &tip.header;
    let time_ms = now_ms().max(parent.time_ms + 1);
    let mut builder = match BlockBuilder::new(
        ctx,
        state,
        &tip.state_hash,
        parent,
        time_ms,
        Checkpoint::default(),
    ) {
        Ok(b) => b,
        Err(e) => {
            return Err(NodeError::Refused(format!(
                "cannot start block {}: {e}",
                parent.height + 1
            )))
        }
    };
    let mut included = Vec::with_capacity(batch.len());
    let mut txids: Vec<String> = Vec::with_capacity(batch.len());
    let mut senders: Vec<(String, u64)> = Vec::with_capacity(batch.len());
    // The game module of each included transaction (`None`: a node action), for the fuel
    // metric.
    let mut games: Vec<Option<String>> = Vec::with_capacity(batch.len());
    let mut evict: Vec<String> = Vec::new();
    for p in batch {
        let sender = (p.body.from.clone(), p.body.nonce);
        let game = match &p.body.action {
            Action::Game { game, .. } => Some(game.clone()),
            _ => None,
        };
        match builder.push_checked(&p.tx, p.body) {
            Ok(_) => {
                included.push(p.tx);
                txids.push(p.txid);
                senders.push(sender);
                games.push(game);
            }
            Err(TransitionError::InvalidTx {
                reason: TxRejection::BlockFull { what, limit },
                ..
            }) => {
                // Full: the rest waits for the next block (nothing of this one changed).
                tracing::debug!(what, limit, "block full");
                break;
            }
            Err(TransitionError::InvalidTx { txid, reason, .. }) => {
                tracing::warn!(%txid, %reason, "dropping a pending transaction that can no longer be included");
                evict.push(txid);
            }
            Err(TransitionError::Host(e)) => return Ok(Made::Retry(e.to_string())),
            Err(e) => {
                return Err(NodeError::Refused(format!(
                    "block {}: {e}",
                    parent.height + 1
                )))
            }
        }
    }
    let out = match builder.finish() {
        Ok(out) => out,
        Err(TransitionError::Host(e)) => return Ok(Made::Retry(e.to_string())),
        Err(e) => {
            return Err(NodeError::Refused(format!(
                "block {}: {e}",
                parent.height + 1
            )))
        }
    };
    build.observe_duration();
    {
        let mut mempool = chain.mempool();
        for txid in &evict {
            for gone in mempool.evict_from(txid).iter().skip(1) {
                tracing::warn!(txid = %gone, "dropping a pending transaction whose predecessor was dropped");
            }
        }
        mempool.mark_in_flight(txids.iter().map(String::as_str));
    }
    for log in &out.logs {
        for line in &log.lines {
            tracing::debug!(module = %log.module, tx_index = ?log.tx_index, "{line}");
        }
    }
    let txs: Vec<IncludedTx> = included
        .into_iter()
        .zip(out.receipts)
        .map(|(tx, receipt)| IncludedTx { tx, receipt })
        .collect();
    for (t, game) in txs.iter().zip(&games) {
        if let Some(module) = game {
            chain
                .metrics
                .fuel
                .with_label_values(&[module.as_str()])
                .inc_by(t.receipt.fuel_used);
        }
    }
    Ok(Made::Block(Box::new(Built {
        header: out.header,
        txs,
        end_block: out.end_block,
        senders,
        writes: Arc::new(out.writes),
        state_hash: out.state_hash,
    })))
}

/// Signs `built`, records it in the sign state (durably, before it is committed or leaves the
/// process), commits it to SQLite and applies it to the head (`Chain::commit`, which tells the
/// WebSocket), blocking. Errors: the sign state or the database failed (the node stops).
fn commit_block(
    chain: &Chain,
    (storage, sign_state): &mut Writer,
    key: &SecretKey,
    built: Built,
) -> Result<Committed, NodeError> {
    let height = built.header.height;
    let block = Block {
        header: SignedHeader::sign(built.header, key),
        txs: built.txs,
        end_block: built.end_block,
    };
    sign_state.record_block(&block)?;
    let senders: Vec<(&str, u64)> = built
        .senders
        .iter()
        .map(|(f, n)| (f.as_str(), *n))
        .collect();
    // The next block's build may still read these writes: then the head gets a copy.
    let writes = Arc::try_unwrap(built.writes).unwrap_or_else(|shared| (*shared).clone());
    chain.commit(storage, &block, &senders, writes, built.state_hash)?;
    Ok(Committed {
        height,
        txs: block.txs.len(),
    })
}
