//! The sequencer: the one thread that makes blocks. It owns the database writer and the
//! sequencer key.
//!
//! **When blocks are made.** Block time is consensus (`gamechain_chain::clock`): a block's time is
//! at least its parent's plus the chain's `min_block_interval_ms`, and the sequencer never stamps
//! a time ahead of its own clock ([`NodeClock`](crate::clock::NodeClock)). So it never
//! makes blocks faster than the interval, whatever arrives: transactions that come meanwhile go
//! into the next block, which grows instead. A block is opened when the mempool holds a
//! transaction not in a block yet (or, with none, `block_interval_ms` after the previous block:
//! an empty block), stamped `max(now, parent time + interval)`, and sealed once the clock reads
//! that time and at least `block_coalesce_ms` have passed since the previous block that held
//! transactions (or when shutting down). A transaction arriving after a quiet spell therefore
//! gets its block at once; under a steady stream each block takes one interval's transactions.
//!
//! **Executed as they arrive.** An open block executes each transaction the moment it is taken
//! from the mempool (`BlockBuilder::push_checked`, in arrival order, marked in flight at once,
//! up to `max_block_txs`), so sealing costs only the end-of-block calls, the state hash of the
//! block's writes (on several threads) and the commit: a receipt follows the interval by the
//! seal, not by the block's whole execution. A transaction the builder refuses (`InvalidTx`)
//! is dropped from the mempool with a log line, together with the sender's later transactions;
//! one that would overfill the block goes back to the mempool for the next block. A node failure
//! while executing (`TransitionError::Host`, e.g. the wasm engine) drops the open block, hands its
//! transactions back and retries after [`HOST_RETRY`]; they are executed again in the next block.
//!
//! **Commit** ([`commit_block`], on its own thread): the block is signed, recorded in
//! `<data>/sign-state.json` (durably, `sign_state.rs`: the sequencer never signs another block at
//! that height), committed to SQLite in one transaction (fsynced), applied to the head and
//! broadcast (`Chain::commit`: the WebSocket pushes its receipts only now, once it is durable).
//!
//! **Pipelining** (`pipeline`, default on): block N+1 is opened, and executes what arrives, while
//! block N is being committed. It is built on the state after N: the committed head, read under
//! the head lock one call at a time ([`HeadState`]), under N's net writes (a [`Layer`]), with N's
//! header as parent and N's state hash; so it is exactly the block a sequencer that waits would
//! make from the same transactions. N+1 is signed only once N is durable (its commit starts
//! after that of N has returned), so at most one block is ever signed and not durable: the one
//! the sign state holds, which a restart commits (`sign_state.rs`). Everything else (the API,
//! views, admission's committed nonces, the WebSocket) sees only the durable head. With
//! `pipeline = false` each block is committed before the next is opened.
//!
//! Empty blocks are logged at debug level, blocks with transactions at info; every
//! `log_summary_secs` (default 10) an info line sums up (height, blocks and transactions since
//! the last summary, mempool size).
//!
//! Shutdown seals the open block (its time is already reached or it is stamped now: see
//! [`seal_at`]), commits it and the one in flight, then returns. A database or sign-state failure
//! stops the node (the operator must look), as does a transition error that means the stored
//! chain is corrupt.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use gamechain_runtime::chain::{
    Action, BeaconSecretKey, Header, Receipt, ScheduledReceipt, SecretKey, SignedHeader, StateHash,
};
use gamechain_runtime::{
    BlockBuilder, Layer, StartWitness, State, TransitionError, TxRejection, WriteSet,
};
use gamechain_sdk::Checkpoint;
use tokio::sync::watch;

use crate::chain::Chain;
use crate::mempool::PendingTx;
use crate::node_error::NodeError;
use crate::schedule_wake::{scheduled_wake, Wake};
use crate::sign_state::SignStateFile;
use crate::storage::Storage;
use gamechain_chain::wire::{Block, IncludedTx};

/// Wait before retrying a block whose execution failed in the node (not in a module).
pub const HOST_RETRY: Duration = Duration::from_secs(1);

/// Most transactions taken from the mempool into the open block at once: between two takes the
/// mempool lock is free for admission.
const TAKE_AT_ONCE: usize = 512;

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
pub struct HeadState<'a>(pub &'a Chain);

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

/// A block built and not yet signed, with what committing it needs.
struct Built {
    /// The header to sign.
    header: Header,
    /// The scheduled calls' receipts, in the order they ran.
    scheduled: Vec<ScheduledReceipt>,
    /// The transactions with their receipts, in block order.
    txs: Vec<IncludedTx>,
    /// The `end_block` receipts.
    end_block: Vec<(String, Receipt)>,
    /// Each transaction's `(from, nonce)`, in block order.
    senders: Vec<(String, u64)>,
    /// The block's net writes (shared with the next block's build while this one commits).
    writes: Arc<WriteSet>,
    /// The running state hash after it.
    state_hash: StateHash,
    /// Its starting balances (`BlockOutput::start_witnesses`).
    start_witnesses: Vec<StartWitness>,
}

/// A committed block: its height and number of transactions.
struct Committed {
    height: u64,
    txs: usize,
}

/// The database writer and the sign state: moved into each commit, and back.
type Writer = (Storage, SignStateFile);

/// A commit on its own thread; it hands the writer back with its outcome.
type CommitTask = JoinHandle<(Writer, Result<Committed, NodeError>)>;

/// Runs the sequencer until `shutdown` turns true (or its sender goes away). The block open
/// when it does is sealed and committed first, as is the one in flight. Errors: the database or
/// the sign state (`sign_state`) failed, or the chain's state is corrupt.
pub async fn run(
    chain: Arc<Chain>,
    storage: Storage,
    sign_state: SignStateFile,
    key: SecretKey,
    beacon: Option<BeaconSecretKey>,
    mut shutdown: watch::Receiver<bool>,
) -> Result<(), NodeError> {
    let stop = Arc::new(AtomicBool::new(false));
    let (done_tx, mut done) = tokio::sync::oneshot::channel();
    let (c, s) = (chain.clone(), stop.clone());
    std::thread::Builder::new()
        .name("sequencer".into())
        .spawn(move || {
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                Sequencer::new(c, (storage, sign_state), key, beacon, s).run()
            }))
            .unwrap_or_else(|panic| {
                Err(NodeError::Runtime(format!(
                    "the sequencer panicked: {}",
                    panic_text(&panic)
                )))
            });
            let _ = done_tx.send(result);
        })
        .map_err(|e| NodeError::Runtime(format!("cannot start the sequencer thread: {e}")))?;
    loop {
        tokio::select! {
            result = &mut done => {
                return result.unwrap_or_else(|_| Err(NodeError::Runtime(
                    "the sequencer thread ended without an answer".into(),
                )));
            }
            changed = shutdown.changed() => {
                if changed.is_err() || *shutdown.borrow() {
                    stop.store(true, Ordering::SeqCst);
                    chain.arrivals.notify();
                    // Keep waiting for the thread's answer; no further signal is needed.
                    return (&mut done).await.unwrap_or_else(|_| Err(NodeError::Runtime(
                        "the sequencer thread ended without an answer".into(),
                    )));
                }
            }
        }
    }
}

fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

/// The instant an open block stamped `time_ms` may be sealed: once the clock reads its time
/// (never before: no block is stamped ahead of the clock) and `coalesce` after the previous
/// block that held transactions. At shutdown only the first condition holds.
fn seal_at(chain: &Chain, time_ms: u64, last_busy: Option<Instant>, coalesce: Duration) -> Instant {
    let clock = chain.clock.instant_of(time_ms);
    match last_busy {
        Some(t) => clock.max(t + coalesce),
        None => clock,
    }
}

/// The block-making thread's state.
struct Sequencer {
    chain: Arc<Chain>,
    key: Arc<SecretKey>,
    /// Signs each block's randomness beacon (the chain's height, never its content), on a
    /// chain whose genesis names this key.
    beacon: Option<BeaconSecretKey>,
    stop: Arc<AtomicBool>,
    /// The writer while no commit is in flight.
    writer: Option<Writer>,
    /// The commit in flight (pipelined).
    in_flight: Option<CommitTask>,
    summary: Summary,
    /// When the previous block was sealed.
    last_block: Instant,
    /// When the previous block that held transactions was sealed (`None`: none yet).
    last_busy: Option<Instant>,
    /// The dev clock's offset when the previous block was opened: a block is made as soon as
    /// it moves, so the chain shows the new time at once (always 0 off the dev clock).
    clock_offset_seen: u64,
}

/// What one open block came to.
enum Sealed {
    /// A block, ready to sign and commit.
    Block(Box<Built>),
    /// A node failure: nothing made, its transactions handed back; try again later.
    Retry(String),
}

impl Sequencer {
    fn new(
        chain: Arc<Chain>,
        writer: Writer,
        key: SecretKey,
        beacon: Option<BeaconSecretKey>,
        stop: Arc<AtomicBool>,
    ) -> Self {
        let every = chain.config.log_summary_secs;
        Sequencer {
            summary: Summary::new((every > 0).then(|| Duration::from_secs(every))),
            chain,
            key: Arc::new(key),
            beacon,
            stop,
            writer: Some(writer),
            in_flight: None,
            last_block: Instant::now(),
            last_busy: None,
            clock_offset_seen: 0,
        }
    }

    fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Lands the commit in flight if it is done (`wait`: waits for it). Returns whether none
    /// is in flight any more.
    fn land(&mut self, tip: &mut Tip, wait: bool) -> Result<bool, NodeError> {
        let Some(task) = self.in_flight.take() else {
            return Ok(true);
        };
        if !wait && !task.is_finished() {
            self.in_flight = Some(task);
            return Ok(false);
        }
        let (w, committed) = task
            .join()
            .map_err(|p| NodeError::Runtime(format!("the commit panicked: {}", panic_text(&p))))?;
        self.writer = Some(w);
        let Committed { height, txs } = committed?;
        if tip.header.height == height {
            tip.pending = None;
        }
        if txs == 0 {
            tracing::debug!(height, txs, "block committed");
        } else {
            tracing::info!(height, txs, "block committed");
        }
        self.summary.block(&self.chain, height, txs);
        Ok(true)
    }

    fn run(mut self) -> Result<(), NodeError> {
        let mut tip = Tip::of_head(&self.chain);
        let result = self.make_blocks(&mut tip);
        // Whatever ended the loop, the block in flight is landed (so its outcome is logged and
        // the writer closed cleanly).
        let landed = self.land(&mut tip, true);
        result.and(landed.map(|_| ()))?;
        tracing::info!("sequencer stopped");
        Ok(())
    }

    fn make_blocks(&mut self, tip: &mut Tip) -> Result<(), NodeError> {
        loop {
            if !self.wait_for_work(tip)? {
                return Ok(());
            }
            match self.make_block(tip)? {
                Sealed::Block(built) => {
                    // The block before must be durable before this one is signed.
                    self.land(tip, true)?;
                    self.last_block = Instant::now();
                    if !built.txs.is_empty() {
                        self.last_busy = Some(self.last_block);
                    }
                    *tip = Tip {
                        header: built.header.clone(),
                        state_hash: built.state_hash.clone(),
                        pending: Some(built.writes.clone()),
                    };
                    let mut w = self.writer.take().expect("no commit is in flight");
                    let (c, k) = (self.chain.clone(), self.key.clone());
                    let task = std::thread::Builder::new()
                        .name("commit".into())
                        .spawn(move || {
                            let committed = commit_block(&c, &mut w, &k, *built);
                            // Wake the block-making thread to land it.
                            c.arrivals.notify();
                            (w, committed)
                        })
                        .map_err(|e| {
                            NodeError::Runtime(format!("cannot start a commit thread: {e}"))
                        })?;
                    self.in_flight = Some(task);
                    if !self.chain.config.pipeline {
                        self.land(tip, true)?;
                    }
                }
                Sealed::Retry(why) => {
                    tracing::error!("block not made, retrying in {HOST_RETRY:?}: {why}");
                    let until = Instant::now() + HOST_RETRY;
                    while !self.stopping() && Instant::now() < until {
                        let seen = self.chain.arrivals.seen();
                        self.land(tip, false)?;
                        self.chain.arrivals.wait(seen, Some(until));
                    }
                }
            }
        }
    }

    /// Waits until there is something to make a block of: a transaction not in a block yet,
    /// `block_interval_ms` since the last block (an empty block), a dev clock moved forward
    /// (an empty block at the new time), or a scheduled call that needs a block (`Wake`,
    /// `schedule_wake.rs`: one due in the next block, or at a time the clock reaches). Lands the
    /// commit in flight when it returns meanwhile. `false`: stop.
    fn wait_for_work(&mut self, tip: &mut Tip) -> Result<bool, NodeError> {
        let idle = Duration::from_millis(self.chain.config.block_interval_ms);
        loop {
            let seen = self.chain.arrivals.seen();
            self.land(tip, false)?;
            if self.stopping() {
                return Ok(false);
            }
            let offset = self.chain.clock.offset_ms();
            let mut until = self.last_block + idle;
            let scheduled = match self.scheduled_wake(tip) {
                Wake::Now => true,
                Wake::At(t) => {
                    until = until.min(self.chain.clock.instant_of(t));
                    self.chain.clock.now_ms() >= t
                }
                Wake::Never => false,
            };
            if self.chain.mempool().ready_len() > 0
                || Instant::now() >= self.last_block + idle
                || offset != self.clock_offset_seen
                || scheduled
            {
                self.clock_offset_seen = offset;
                return Ok(true);
            }
            self.chain.arrivals.wait(seen, Some(until));
        }
    }

    /// What the scheduled calls need after `tip` (over the head and the block in flight).
    fn scheduled_wake(&self, tip: &Tip) -> Wake {
        let head = HeadState(&self.chain);
        match &tip.pending {
            Some(writes) => scheduled_wake(
                &Layer {
                    base: &head,
                    writes,
                },
                &tip.header,
            ),
            None => scheduled_wake(&head, &tip.header),
        }
    }

    /// Opens the block after `tip`, executes transactions into it as they arrive until its seal
    /// time, and finishes it (module docs). Nothing is signed, written or applied.
    fn make_block(&mut self, tip: &mut Tip) -> Result<Sealed, NodeError> {
        let chain = self.chain.clone();
        let config = &chain.config;
        let ctx = &chain.ctx;
        let head = HeadState(&chain);
        let pending = tip.pending.clone();
        let layer;
        let state: &dyn State = match &pending {
            Some(writes) => {
                layer = Layer {
                    base: &head,
                    writes,
                };
                &layer
            }
            None => &head,
        };
        let parent = tip.header.clone();
        let earliest = ctx.genesis().clock().earliest_child_time(parent.time_ms);
        let time_ms = chain.clock.now_ms().max(earliest);
        let beacon = self
            .beacon
            .as_ref()
            .map(|k| k.sign(&ctx.genesis().chain_id, parent.height + 1));
        let mut builder = BlockBuilder::new(
            ctx,
            state,
            &tip.state_hash,
            &parent,
            time_ms,
            Checkpoint::default(),
            beacon,
        )
        .map_err(|e| {
            NodeError::Refused(format!("cannot start block {}: {e}", parent.height + 1))
        })?;
        let coalesce = Duration::from_millis(config.block_coalesce_ms);
        let mut open = OpenBlock::default();
        loop {
            let seen = chain.arrivals.seen();
            if !open.full {
                match open.take(&chain, &mut builder, config.max_block_txs) {
                    Ok(()) => {}
                    Err(TakeError::Host(why)) => {
                        open.hand_back(&chain);
                        return Ok(Sealed::Retry(why));
                    }
                    Err(TakeError::Fatal(why)) => {
                        open.hand_back(&chain);
                        return Err(NodeError::Refused(format!(
                            "block {}: {why}",
                            parent.height + 1
                        )));
                    }
                }
            }
            // At shutdown the block is sealed as soon as its time is reached (at most one
            // interval away); otherwise also not before the coalescing window. Recomputed each
            // time: the dev clock may have jumped.
            let due = if self.stopping() {
                chain.clock.instant_of(time_ms)
            } else {
                seal_at(&chain, time_ms, self.last_busy, coalesce)
            };
            if Instant::now() >= due {
                break;
            }
            // Land the commit in flight when it returns meanwhile (its writer is needed next).
            self.land(tip, false)?;
            if open.full {
                // Nothing more fits: arrivals need not wake this thread until the seal.
                std::thread::sleep(due.saturating_duration_since(Instant::now()));
            } else {
                chain.arrivals.wait(seen, Some(due));
            }
        }
        let build = Instant::now();
        let out = match builder.finish() {
            Ok(out) => out,
            Err(TransitionError::Host(e)) => {
                open.hand_back(&chain);
                return Ok(Sealed::Retry(e.to_string()));
            }
            Err(e) => {
                return Err(NodeError::Refused(format!(
                    "block {}: {e}",
                    parent.height + 1
                )))
            }
        };
        chain
            .metrics
            .build_seconds
            .observe((open.executing + build.elapsed()).as_secs_f64());
        for log in &out.logs {
            for line in &log.lines {
                tracing::debug!(module = %log.module, tx_index = ?log.tx_index, "{line}");
            }
        }
        let txs: Vec<IncludedTx> = open
            .included
            .into_iter()
            .zip(out.receipts)
            .map(|(tx, receipt)| IncludedTx { tx, receipt })
            .collect();
        for (t, game) in txs.iter().zip(&open.games) {
            if let Some(module) = game {
                chain
                    .metrics
                    .fuel
                    .with_label_values(&[module.as_str()])
                    .inc_by(t.receipt.fuel_used);
            }
        }
        Ok(Sealed::Block(Box::new(Built {
            header: out.header,
            scheduled: out.scheduled,
            txs,
            end_block: out.end_block,
            senders: open.senders,
            writes: Arc::new(out.writes),
            state_hash: out.state_hash,
            start_witnesses: out.start_witnesses,
        })))
    }
}

/// Why an open block is lost.
enum TakeError {
    /// The node failed (the wasm engine, say): retried after [`HOST_RETRY`].
    Host(String),
    /// The chain's state is corrupt: the node stops.
    Fatal(String),
}

/// What an open block holds so far (the builder holds its effects).
#[derive(Default)]
struct OpenBlock {
    included: Vec<gamechain_runtime::chain::SignedTx>,
    txids: Vec<String>,
    /// Each included transaction's `(from, nonce)`.
    senders: Vec<(String, u64)>,
    /// The game module of each included transaction (`None`: a node action), for the fuel
    /// metric.
    games: Vec<Option<String>>,
    /// Whether the block is full (`max_block_txs` or one of the block's byte bounds).
    full: bool,
    /// Time spent executing its transactions.
    executing: Duration,
}

impl OpenBlock {
    /// Takes the transactions waiting in the mempool (up to the block's room) and executes
    /// each into `builder`. `Err`: the block is lost ([`TakeError`]).
    fn take(
        &mut self,
        chain: &Chain,
        builder: &mut BlockBuilder<'_>,
        max_block_txs: usize,
    ) -> Result<(), TakeError> {
        loop {
            let room = max_block_txs.saturating_sub(self.included.len());
            if room == 0 {
                self.full = true;
                return Ok(());
            }
            let batch = chain.mempool().take_ready(room.min(TAKE_AT_ONCE));
            if batch.is_empty() {
                return Ok(());
            }
            let started = Instant::now();
            let result = self.push_all(chain, builder, batch);
            self.executing += started.elapsed();
            result?;
            if self.full {
                return Ok(());
            }
        }
    }

    fn push_all(
        &mut self,
        chain: &Chain,
        builder: &mut BlockBuilder<'_>,
        batch: Vec<PendingTx>,
    ) -> Result<(), TakeError> {
        let mut rest = batch.into_iter();
        let mut evict = Vec::new();
        let mut failure = None;
        for p in rest.by_ref() {
            let sender = (p.body.account().to_string(), p.body.nonce);
            let game = match &p.body.action {
                Action::Game { game, .. } | Action::SessionGame { game, .. } => Some(game.clone()),
                _ => None,
            };
            match builder.push_checked(&p.tx, p.body) {
                Ok(_) => {
                    self.included.push(p.tx);
                    self.txids.push(p.txid);
                    self.senders.push(sender);
                    self.games.push(game);
                }
                Err(TransitionError::InvalidTx {
                    reason: TxRejection::BlockFull { what, limit },
                    ..
                }) => {
                    // Full: this one and the rest wait for the next block.
                    tracing::debug!(what, limit, "block full");
                    self.full = true;
                    chain.mempool().release([p.txid.as_str()]);
                    break;
                }
                Err(TransitionError::InvalidTx { txid, reason, .. }) => {
                    tracing::warn!(%txid, %reason, "dropping a pending transaction that can no longer be included");
                    evict.push(txid);
                }
                Err(TransitionError::Host(e)) => {
                    chain.mempool().release([p.txid.as_str()]);
                    failure = Some(TakeError::Host(e.to_string()));
                    break;
                }
                Err(e) => {
                    // The stored state is corrupt (or the builder broke): not retried.
                    chain.mempool().release([p.txid.as_str()]);
                    failure = Some(TakeError::Fatal(e.to_string()));
                    break;
                }
            }
        }
        let mut mempool = chain.mempool();
        let left: Vec<PendingTx> = rest.collect();
        mempool.release(left.iter().map(|p| p.txid.as_str()));
        for txid in &evict {
            for gone in mempool.evict_from(txid).iter().skip(1) {
                tracing::warn!(txid = %gone, "dropping a pending transaction whose predecessor was dropped");
            }
        }
        failure.map_or(Ok(()), Err)
    }

    /// Gives the block's transactions back to the mempool (the block will not be made).
    fn hand_back(&self, chain: &Chain) {
        chain
            .mempool()
            .release(self.txids.iter().map(String::as_str));
    }
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
        scheduled: built.scheduled,
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
    chain.commit(
        storage,
        &block,
        &senders,
        writes,
        built.state_hash,
        &built.start_witnesses,
    )?;
    Ok(Committed {
        height,
        txs: block.txs.len(),
    })
}
