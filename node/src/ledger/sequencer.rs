//! The sequencer: the one task that makes blocks. It owns the database writer and the
//! sequencer key.
//!
//! A block is made as soon as the mempool holds transactions (up to `max_block_txs`, in
//! arrival order), but not sooner than `block_coalesce_ms` after the previous block with
//! transactions ended
//! (unless the mempool already fills a block), and otherwise `block_interval_ms` after the
//! previous one (an empty block).
//! Its time is `max(now_ms, parent.time_ms + 1)`: the only clock reading that reaches the chain.
//! Making a block runs on a blocking thread (wasm and SQLite never run on the async executor):
//! each transaction goes through `BlockBuilder::push_checked`; one the builder refuses
//! (`InvalidTx`) is dropped from the mempool with a log line, together with the sender's later
//! transactions, and the block goes on without them. The block is signed, recorded in
//! `<data>/sign-state.json` (durably, `sign_state.rs`: the sequencer never signs another block
//! at that height), committed to SQLite in one transaction, applied to the in-memory state and
//! broadcast.
//!
//! Empty blocks are logged at debug level, blocks with transactions at info; every
//! `log_summary_secs` (default 10) an info line sums up (height, blocks and transactions since
//! the last summary, mempool size).
//!
//! A node failure while executing (`TransitionError::Host`, e.g. the wasm engine) commits
//! nothing and is retried after [`HOST_RETRY`]; a database failure stops the node (the
//! operator must look), as does a transition error that means the stored chain is corrupt.

use std::sync::Arc;
use std::time::Duration;

use gamechain_runtime::chain::{Action, SecretKey, SignedHeader};
use gamechain_runtime::{BlockBuilder, TransitionError, TxRejection};
use gamechain_sdk::Checkpoint;
use tokio::sync::watch;
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

/// What one attempt at a block did.
enum Made {
    /// Block committed at this height with this many transactions.
    Block { height: u64, txs: usize },
    /// A node failure: nothing committed, try again later.
    Retry(String),
}

/// Runs the sequencer until `shutdown` turns true. A block being made when it does is finished
/// and committed first. Errors: the database or the sign state (`sign_state`) failed, or the
/// chain's state is corrupt.
pub async fn run(
    chain: Arc<Chain>,
    storage: Storage,
    sign_state: SignStateFile,
    key: SecretKey,
    mut shutdown: watch::Receiver<bool>,
) -> Result<(), NodeError> {
    let every = chain.config.log_summary_secs;
    let mut summary = Summary::new((every > 0).then(|| Duration::from_secs(every)));
    let mut writer = (storage, sign_state);
    let interval = Duration::from_millis(chain.config.block_interval_ms);
    let coalesce = Duration::from_millis(chain.config.block_coalesce_ms).min(interval);
    let key = Arc::new(key);
    let mut last_block = Instant::now();
    // The end of the last block that held transactions: the coalescing window counts from it
    // (an empty block never delays the next transaction).
    let mut last_busy_block = last_block;
    loop {
        // Wait for a transaction, the interval, or shutdown.
        loop {
            if *shutdown.borrow() {
                tracing::info!("sequencer stopped");
                return Ok(());
            }
            if !chain.mempool().is_empty() || Instant::now() >= last_block + interval {
                break;
            }
            tokio::select! {
                _ = chain.wake.notified() => {}
                _ = tokio::time::sleep_until(last_block + interval) => {}
                _ = shutdown.changed() => {}
            }
        }
        // The coalescing window: while transactions keep arriving, at most one block per
        // window, so that a trickle fills blocks instead of making one per transaction.
        let window = last_busy_block + coalesce;
        if Instant::now() < window && chain.mempool().len() < chain.config.max_block_txs {
            tokio::select! {
                _ = tokio::time::sleep_until(window) => {}
                _ = shutdown.changed() => {}
            }
        }
        let (c, k) = (chain.clone(), key.clone());
        let (returned, made) = tokio::task::spawn_blocking(move || {
            let made = make_block(&c, &mut writer.0, &mut writer.1, &k);
            (writer, made)
        })
        .await
        .map_err(|e| NodeError::Runtime(format!("the block task panicked: {e}")))?;
        writer = returned;
        match made? {
            Made::Block { height, txs } => {
                last_block = Instant::now();
                if txs > 0 {
                    last_busy_block = last_block;
                }
                if txs == 0 {
                    tracing::debug!(height, txs, "block committed");
                } else {
                    tracing::info!(height, txs, "block committed");
                }
                summary.block(&chain, height, txs);
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

/// Makes, signs, records (in the sign state), commits and applies one block (blocking).
fn make_block(
    chain: &Chain,
    storage: &mut Storage,
    sign_state: &mut SignStateFile,
    key: &SecretKey,
) -> Result<Made, NodeError> {
    let batch = chain.mempool().batch(chain.config.max_block_txs);
    let build = chain.metrics.build_seconds.start_timer();
    let ctx = &chain.ctx;
    let (out, included, senders, games, evict) = {
        let head = chain.head();
        let parent = &head.header.header;
        let time_ms = now_ms().max(parent.time_ms + 1);
        let mut builder = match BlockBuilder::new(
            ctx,
            &head.state,
            &head.state_hash,
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
        (out, included, senders, games, evict)
    };
    build.observe_duration();
    if !evict.is_empty() {
        let mut mempool = chain.mempool();
        for txid in &evict {
            for gone in mempool.evict_from(txid).iter().skip(1) {
                tracing::warn!(txid = %gone, "dropping a pending transaction whose predecessor was dropped");
            }
        }
    }
    for log in &out.logs {
        for line in &log.lines {
            tracing::debug!(module = %log.module, tx_index = ?log.tx_index, "{line}");
        }
    }
    let height = out.header.height;
    let txs: Vec<IncludedTx> = included
        .into_iter()
        .zip(out.receipts)
        .map(|(tx, receipt)| IncludedTx { tx, receipt })
        .collect();
    let count = txs.len();
    for (t, game) in txs.iter().zip(&games) {
        if let Some(module) = game {
            chain
                .metrics
                .fuel
                .with_label_values(&[module.as_str()])
                .inc_by(t.receipt.fuel_used);
        }
    }
    let block = Block {
        header: SignedHeader::sign(out.header, key),
        txs,
        end_block: out.end_block,
    };
    // Durably recorded before the block is committed or leaves the process.
    sign_state.record_block(&block)?;
    let senders: Vec<(&str, u64)> = senders.iter().map(|(f, n)| (f.as_str(), *n)).collect();
    chain.commit(storage, &block, &senders, out.writes, out.state_hash)?;
    Ok(Made::Block { height, txs: count })
}
