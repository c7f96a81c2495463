//! The consensus engine's view of a validator: [`App`], the `Application` that marshal's
//! inline wrapper calls to build a block (`propose`) and to check one before voting
//! (`verify`), and [`Finalizer`], the reporter that receives finalized blocks in height order
//! and commits them ([`run_committer`]).
//!
//! Execution is blocking work (wasm, SQLite): it runs on the runtime's blocking pool
//! (`shared(true)`), never on the engine's tasks.
//!
//! Verdicts (the engine's rules): `verify` answers `false` only for a block that can never be
//! valid (a wrong proposer, signature, parent link, time, beacon, transaction or root); while a
//! parent is missing, or this machine failed, it abstains (never answers), as `propose` then
//! declines. On a chain with a beacon, `propose` also declines when the beacon of the height it
//! must propose has not been recovered within its wait (`beacon/`).

use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use commonware_actor::Feedback;
use commonware_codec::Encode as _;
use commonware_consensus::marshal::ancestry::Ancestry;
use commonware_consensus::marshal::core::Mailbox;
use commonware_consensus::marshal::standard::Standard;
use commonware_consensus::marshal::Update;
use commonware_consensus::simplex::scheme::ed25519::Scheme;
use commonware_consensus::simplex::types::Context;
use commonware_consensus::types::Height;
use commonware_consensus::{Application, Heightable as _, Reporter};
use commonware_cryptography::ed25519::PublicKey;
use commonware_cryptography::sha256::Digest;
use commonware_cryptography::{Digested, Digestible as _};
use commonware_runtime::{Clock, Metrics, Spawner, Supervisor};
use commonware_utils::Acknowledgement as _;
use futures_util::StreamExt as _;
use tokio::sync::{mpsc, watch};

use crate::validator::block::ProposedBlock;
use crate::validator::ledger::{ExecError, Ledger, MAX_SPECULATIVE_DEPTH};
use crate::validator::observer::AsConsensus;
use gamechain_ledger::schedule_wake::{scheduled_wake, Wake};
use gamechain_ledger::sequencer::HeadState;

/// Blocks per section of marshal's archives: what one prune removes at most.
pub const ARCHIVE_SECTION: u64 = 1024;

/// The `Application` of a validator (module docs). Cheap to clone.
#[derive(Clone)]
pub struct App {
    ledger: Arc<Ledger>,
    /// How long a leader waits for transactions before it gives up its view (see
    /// [`App::new`]).
    propose_wait: Duration,
    /// Longest time between two blocks when no transaction comes (the node's
    /// `block_interval_ms`).
    block_interval_ms: u64,
}

impl App {
    /// The application over `ledger`. Pacing: a leader proposes as soon as it has
    /// transactions to include; without any it waits up to `propose_wait` (less than the
    /// engine's leader timeout) for one, and then proposes an empty block only when its parent
    /// is `block_interval_ms` old, else declines (the view passes without a block). So an idle
    /// chain makes one empty block per interval, not one per view.
    pub fn new(ledger: Arc<Ledger>, propose_wait: Duration, block_interval_ms: u64) -> App {
        App {
            ledger,
            propose_wait,
            block_interval_ms,
        }
    }
}

/// Milliseconds since the Unix epoch on the runtime's clock (simulated in tests).
fn now_ms<E: Clock>(rt: &E) -> u64 {
    rt.current()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Never resolves: the application abstains.
async fn abstain<T>() -> T {
    std::future::pending().await
}

/// Runs `f(ledger)` on the runtime's blocking pool.
async fn blocking<E, T>(
    rt: &E,
    ledger: &Arc<Ledger>,
    f: impl FnOnce(&Ledger) -> T + Send + 'static,
) -> Option<T>
where
    E: Spawner + Supervisor,
    T: Send + 'static,
{
    let ledger = ledger.clone();
    rt.child("execute")
        .shared(true)
        .spawn(move |_| async move { f(&ledger) })
        .await
        .ok()
}

impl App {
    /// Makes sure `parent` is the head or an executed block: executes the unknown ancestors
    /// `ancestry` yields (newest first, after `parent`) in height order. `Some(false)`: the
    /// chain cannot be built on (an ancestor conflicts with the committed head, or does not
    /// execute); `None`: abstain (too deep, missing, or this machine failed).
    async fn catch_up<E>(
        &self,
        rt: &E,
        parent: Digested<ProposedBlock>,
        ancestry: &mut (impl Ancestry<ProposedBlock> + 'static),
    ) -> Option<bool>
    where
        E: Spawner + Clock + Supervisor,
    {
        if self.ledger.knows(&parent.digest()) {
            return Some(true);
        }
        if parent.height().get() > self.ledger.head().1 + MAX_SPECULATIVE_DEPTH as u64 {
            // Far ahead of what this validator has committed: abstain without fetching the
            // ancestry (marshal delivers the finalized blocks first).
            return None;
        }
        let mut missing = vec![parent];
        loop {
            let oldest = missing.last().expect("not empty");
            let (_, head_height) = self.ledger.head();
            if oldest.height().get() <= head_height {
                // The walk reached the committed height (the head may have moved meanwhile):
                // the chain is ours when this block is the one committed there.
                let height = oldest.height().get();
                let digest = oldest.digest();
                let committed = blocking(rt, &self.ledger, move |l| {
                    l.chain
                        .read_db(|db| db.validator_digest(height))
                        .ok()
                        .flatten()
                })
                .await?;
                match committed {
                    Some(d) if d == digest.0 => {
                        missing.pop();
                        break;
                    }
                    // Another fork below the committed head: never final.
                    Some(_) => return Some(false),
                    None => return None,
                }
            }
            if missing.len() > MAX_SPECULATIVE_DEPTH {
                return None;
            }
            let next = ancestry.next().await?;
            if self.ledger.knows(&next.digest()) {
                break;
            }
            missing.push(next);
        }
        let now = now_ms(rt);
        for b in missing.into_iter().rev() {
            let block = b.inner().clone();
            match blocking(rt, &self.ledger, move |l| l.verify(&block, None, now)).await? {
                Ok(()) => {}
                Err(ExecError::Invalid(e)) => {
                    tracing::warn!(
                        height = b.height().get(),
                        "an ancestor does not execute: {e}"
                    );
                    return Some(false);
                }
                Err(ExecError::UnknownParent | ExecError::Host(_)) => return None,
            }
        }
        Some(true)
    }

    /// Whether the beacon of `height` is known, waiting for it until `deadline` (the
    /// runtime's clock) on a chain with a beacon (`beacon/`: recovered once `t` validators
    /// released their shares of it). `true` at once on a chain without one.
    async fn wait_for_beacon<E: Clock>(
        &self,
        rt: &E,
        height: u64,
        deadline: std::time::SystemTime,
    ) -> bool {
        if self.ledger.chain.genesis().beacon.is_none() {
            return true;
        }
        loop {
            let added = self.ledger.beacon_added().notified();
            tokio::pin!(added);
            // Registered before the check: a beacon added in between wakes it.
            added.as_mut().enable();
            if self.ledger.beacon_for(height).is_some() {
                return true;
            }
            let Ok(left) = deadline.duration_since(rt.current()) else {
                return false;
            };
            if left.is_zero() {
                return false;
            }
            tokio::select! {
                biased;
                _ = added => {}
                _ = rt.sleep(left) => {}
            }
        }
    }

    /// Whether the chain's scheduled calls want this block although it has no transaction
    /// (node policy, as the sequencer's `schedule_wake`): it runs due calls, or a call waits for
    /// a time `now` has reached (so this block's time makes it due in the next).
    fn scheduled_due(&self, proposal: &Digest, now: u64) -> bool {
        if self
            .ledger
            .executed(proposal)
            .is_some_and(|e| !e.scheduled.is_empty())
        {
            return true;
        }
        let chain = &self.ledger.chain;
        let head = chain.head().header.header.clone();
        match scheduled_wake(&HeadState(chain), &head) {
            Wake::Now => true,
            Wake::At(t) => now >= t,
            Wake::Never => false,
        }
    }

    /// The block-signing address of the validator whose consensus key is `leader`.
    fn leader_address(&self, leader: &PublicKey) -> Option<String> {
        let bytes: [u8; 32] = leader.as_ref().try_into().ok()?;
        self.ledger
            .set()
            .by_consensus_key(&bytes)
            .map(|v| v.address.clone())
    }
}

impl<E> Application<E> for App
where
    E: Spawner + Clock + Metrics + Supervisor + Send + Sync + 'static,
{
    type SigningScheme = Scheme;
    type Context = Context<Digest, PublicKey>;
    type Block = ProposedBlock;
    type Input = ();

    async fn propose(
        &mut self,
        (rt, _context): (E, Self::Context),
        mut ancestry: impl Ancestry<Self::Block>,
        _input: (),
    ) -> Option<Digested<Self::Block>> {
        let parent = ancestry.next().await?;
        let parent_digest = parent.digest();
        let parent_time_ms = parent.inner().header().header.time_ms;
        let height = parent.height().get() + 1;
        if self.catch_up(&rt, parent, &mut ancestry).await != Some(true) {
            return None;
        }
        let parent_time = parent_time_ms;
        let deadline = rt.current() + self.propose_wait;
        // Block time is consensus: never less than the interval after the parent, and never
        // ahead of this validator's clock. A leader whose view starts early waits the interval
        // out (its view lasts more than twice the interval: genesis validation), or gives the
        // view up when it cannot within its wait.
        let earliest = self
            .ledger
            .chain
            .genesis()
            .clock()
            .earliest_child_time(parent_time);
        let early_ms = earliest.saturating_sub(now_ms(&rt));
        if early_ms > 0 {
            let Ok(left) = deadline.duration_since(rt.current()) else {
                return None;
            };
            if Duration::from_millis(early_ms) > left {
                return None;
            }
            rt.sleep(Duration::from_millis(early_ms)).await;
        }
        if !self.wait_for_beacon(&rt, height, deadline).await {
            self.ledger.chain.metrics.consensus().beacon_missing.inc();
            tracing::info!(height, "no beacon for this height yet: giving up the view");
            return None;
        }
        let made = loop {
            let now = now_ms(&rt).max(earliest);
            let made = blocking(&rt, &self.ledger, move |l| l.propose(&parent_digest, now)).await?;
            let Ok(block) = &made else { break made };
            if !block.txs().is_empty()
                || now >= parent_time.saturating_add(self.block_interval_ms)
                || self.scheduled_due(&block.digest(), now)
            {
                break made;
            }
            // Nothing to include yet: wait for a transaction, or give up the view.
            self.ledger.forget(&block.digest());
            let Ok(left) = deadline.duration_since(rt.current()) else {
                return None;
            };
            if left.is_zero() {
                return None;
            }
            let chain = self.ledger.chain.clone();
            tokio::select! {
                biased;
                _ = chain.wake.notified() => {}
                _ = rt.sleep(left) => {}
            }
        };
        match made {
            Ok(block) => {
                tracing::debug!(
                    height = block.number(),
                    txs = block.txs().len(),
                    "proposing a block"
                );
                let digest = block.digest();
                Some(Digested::precomputed(block, digest))
            }
            Err(e) => {
                tracing::warn!("cannot propose: {e:?}");
                None
            }
        }
    }

    async fn verify(
        &mut self,
        (rt, context): (E, Self::Context),
        mut ancestry: impl Ancestry<Self::Block>,
    ) -> bool {
        let Some(block) = ancestry.next().await else {
            return abstain().await;
        };
        let Some(parent) = ancestry.next().await else {
            return abstain().await;
        };
        match self.catch_up(&rt, parent, &mut ancestry).await {
            Some(true) => {}
            Some(false) => return false,
            None => return abstain().await,
        }
        let Some(leader) = self.leader_address(&context.leader) else {
            return false;
        };
        let now = now_ms(&rt);
        let b = block.inner().clone();
        let verdict = blocking(&rt, &self.ledger, move |l| l.verify(&b, Some(&leader), now)).await;
        match verdict {
            Some(Ok(())) => true,
            Some(Err(ExecError::Invalid(reason))) => {
                tracing::warn!(
                    height = block.height().get(),
                    proposer = %block.inner().header().header.sequencer,
                    "voting against a proposal: {reason}"
                );
                false
            }
            Some(Err(e)) => {
                tracing::warn!(height = block.height().get(), "abstaining: {e:?}");
                abstain().await
            }
            None => abstain().await,
        }
    }
}

/// A finalized block and marshal's acknowledgement of it.
pub type Finalized = Update<ProposedBlock>;

/// The reporter marshal delivers finalized blocks to: it queues them for [`run_committer`]
/// (reporting must not block), and notes each finalized tip's height in the consensus metrics
/// (`gamechain_consensus_finalized_height`, `_blocks_behind`).
#[derive(Clone)]
pub struct Finalizer {
    queue: mpsc::UnboundedSender<Finalized>,
    metrics: Arc<dyn AsConsensus>,
}

impl Finalizer {
    /// A reporter and the queue [`run_committer`] reads; tips are noted in `metrics`.
    pub fn new(metrics: Arc<dyn AsConsensus>) -> (Finalizer, mpsc::UnboundedReceiver<Finalized>) {
        let (queue, rx) = mpsc::unbounded_channel();
        (Finalizer { queue, metrics }, rx)
    }
}

impl Reporter for Finalizer {
    type Activity = Finalized;

    fn report(&mut self, activity: Finalized) -> Feedback {
        match activity {
            Update::Block(..) => {
                // At most marshal's `max_pending_acks` blocks wait here unacknowledged.
                let _ = self.queue.send(activity);
            }
            Update::Tip(_, height, _) => self.metrics.consensus().finalized(height.get()),
        }
        Feedback::Ok
    }
}

/// Commits the finalized blocks of `queue` in order, each with its finality certificate from
/// `marshal` when it has one, and acknowledges each once it is durable. A commit that fails
/// stops it and sets `failed` (the node stops: its database or its chain is broken). Every
/// [`ARCHIVE_SECTION`] heights it asks marshal to prune its archives below the head minus
/// `retention` blocks (`0`: never).
pub async fn run_committer<E>(
    rt: E,
    ledger: Arc<Ledger>,
    marshal: Mailbox<Scheme, Standard<ProposedBlock>>,
    mut queue: mpsc::UnboundedReceiver<Finalized>,
    failed: watch::Sender<Option<String>>,
    retention: u64,
) where
    E: Spawner + Clock + Supervisor + Send + 'static,
{
    while let Some(update) = queue.recv().await {
        let Update::Block(block, ack) = update else {
            continue;
        };
        let height = block.height();
        let certificate = marshal
            .get_finalization(height)
            .await
            .filter(|f| f.proposal.payload == block.digest())
            .map(|f| f.encode().to_vec());
        let b = block.inner().clone();
        let result = blocking(&rt, &ledger, move |l| l.commit_finalized(&b, certificate)).await;
        match result {
            Some(Ok(())) => {
                tracing::debug!(height = height.get(), "committed a finalized block");
                ack.acknowledge();
                let h = height.get();
                if retention > 0 && h > retention && h.is_multiple_of(ARCHIVE_SECTION) {
                    // Marshal keeps the block at the height given, and ignores a height above
                    // what it has seen acknowledged (then the next section's prune covers it).
                    marshal.prune(Height::new(h - retention));
                }
            }
            Some(Err(e)) => {
                tracing::error!(
                    height = height.get(),
                    "cannot commit a finalized block: {e}"
                );
                let _ = failed.send(Some(e.to_string()));
                return;
            }
            None => {
                let _ = failed.send(Some("the commit task was dropped".into()));
                return;
            }
        }
        // Yield between blocks so that a long catch-up does not starve the engine.
        rt.sleep(Duration::ZERO).await;
    }
}
