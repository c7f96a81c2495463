//! What a validator learns from its consensus engine besides finalized blocks: [`Observer`],
//! a second reporter beside marshal's (the engine reports every activity to both), which
//! - turns the engine's reports of conflicting votes (`ConflictingNotarize`,
//!   `ConflictingFinalize`, `NullifyFinalize`) into evidence: queued (at most
//!   [`EVIDENCE_QUEUE`]; reporting never blocks the engine), then checked against the genesis
//!   set (the engine reports them unverified) and stored by [`run_evidence`]
//!   (`validator_evidence`, at most `MAX_EVIDENCE_PER_SIGNER` per validator);
//! - hands the digest of every notarized or finalized block to the beacon task
//!   (`validator/beacon/`), which releases the share of the height after it (at most
//!   `CERTIFIED_QUEUE` waiting; more are dropped, and the block's commit releases it then);
//! - keeps the consensus metrics (`metrics.rs`, [`ConsensusMetrics`]): the view, this
//!   validator's timeouts, nullifications, and the time from entering a view to its
//!   notarization and finalization (by the runtime's clock; the engine enters view v + 1 on a
//!   certificate of view v). A restart replays the engine's journal, which reports its votes
//!   and certificates again: counters then count them again.
//!
//! Nothing here reaches consensus: a full queue or a failed write loses a report, never a
//! block.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use commonware_actor::Feedback;
use commonware_codec::Encode as _;
use commonware_consensus::simplex::scheme::ed25519::Scheme;
use commonware_consensus::simplex::types::{Activity, Attributable as _};
use commonware_consensus::{Reporter, Viewable as _};
use commonware_cryptography::sha256::Digest;
use commonware_runtime::{Clock, Spawner, Supervisor};
use tokio::sync::mpsc;

use crate::proof::evidence::EvidenceChecker;
use crate::validator::ledger::Ledger;
use gamechain_ledger::metrics::ConsensusMetrics;
use gamechain_ledger::storage::StoredEvidence;

/// Reports of conflicting votes waiting to be checked and stored; more are dropped (and
/// counted in `gamechain_evidence_refused_total`).
pub const EVIDENCE_QUEUE: usize = 256;

/// Views whose entry time is kept for the latency figures.
const VIEWS_KEPT: usize = 64;

/// A conflicting pair the engine reported: kind, view, signer index, the encoded pair.
pub type Reported = (&'static str, u64, u32, Vec<u8>);

/// When this validator entered each recent view, and which got their figures.
#[derive(Default)]
struct Views {
    current: u64,
    /// View → (entered at, notarization measured, finalization measured).
    entered: BTreeMap<u64, (SystemTime, bool, bool)>,
}

/// The engine's second reporter (module docs). Cheap to clone (whatever `E` is: runtime
/// contexts are not `Clone`, so the clock is shared).
pub struct Observer<E> {
    clock: Arc<E>,
    me: u32,
    metrics: Arc<dyn AsConsensus>,
    evidence: mpsc::Sender<Reported>,
    views: Arc<Mutex<Views>>,
    /// Digests of certified blocks, for the beacon task (chains with a threshold beacon).
    beacon: Option<mpsc::Sender<Digest>>,
}

/// Where the consensus metrics live (the node's `Chain`).
pub trait AsConsensus: Send + Sync + 'static {
    /// The metrics.
    fn consensus(&self) -> &ConsensusMetrics;
}

impl AsConsensus for gamechain_ledger::chain::Chain {
    fn consensus(&self) -> &ConsensusMetrics {
        self.metrics.consensus()
    }
}

impl<E> Clone for Observer<E> {
    fn clone(&self) -> Self {
        Observer {
            clock: self.clock.clone(),
            me: self.me,
            metrics: self.metrics.clone(),
            evidence: self.evidence.clone(),
            views: self.views.clone(),
            beacon: self.beacon.clone(),
        }
    }
}

impl<E: Clock> Observer<E> {
    /// An observer for the validator with participant index `me`, timing with `clock`; the
    /// evidence it is told of goes to the returned queue (for [`run_evidence`]).
    pub fn new(
        clock: E,
        me: u32,
        metrics: Arc<dyn AsConsensus>,
    ) -> (Observer<E>, mpsc::Receiver<Reported>) {
        let (tx, rx) = mpsc::channel(EVIDENCE_QUEUE);
        (
            Observer {
                clock: Arc::new(clock),
                me,
                metrics,
                evidence: tx,
                views: Arc::default(),
                beacon: None,
            },
            rx,
        )
    }

    /// The observer, also handing the digest of every notarized or finalized block to
    /// `beacon` (never waiting: a full queue drops it).
    pub fn with_beacon(mut self, beacon: mpsc::Sender<Digest>) -> Self {
        self.beacon = Some(beacon);
        self
    }

    fn beacon(&self, digest: Digest) {
        if let Some(b) = &self.beacon {
            let _ = b.try_send(digest);
        }
    }

    fn m(&self) -> &ConsensusMetrics {
        self.metrics.consensus()
    }

    /// A certificate of `view` arrived: the engine moves to `view + 1`.
    fn certified(&self, view: u64, kind: Certified) {
        let now = self.clock.current();
        let mut v = self.views.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(entry) = v.entered.get_mut(&view) {
            let since = now.duration_since(entry.0).unwrap_or(Duration::ZERO);
            match kind {
                Certified::Notarized if !entry.1 => {
                    entry.1 = true;
                    self.m().notarization_seconds.observe(since.as_secs_f64());
                }
                Certified::Finalized if !entry.2 => {
                    entry.2 = true;
                    self.m().finalization_seconds.observe(since.as_secs_f64());
                }
                _ => {}
            }
        }
        if view + 1 > v.current {
            v.current = view + 1;
            v.entered.entry(view + 1).or_insert((now, false, false));
            self.m().view.set(v.current as i64);
            while v.entered.len() > VIEWS_KEPT {
                v.entered.pop_first();
            }
        }
    }

    fn evidence(&self, kind: &'static str, view: u64, signer: u32, data: Vec<u8>) {
        tracing::warn!(kind, view, signer, "a validator signed conflicting votes");
        if self.evidence.try_send((kind, view, signer, data)).is_err() {
            self.m().evidence_refused.inc();
        }
    }
}

enum Certified {
    Notarized,
    Nullified,
    Finalized,
}

impl<E: Clock + Send + Sync + 'static> Reporter for Observer<E> {
    type Activity = Activity<Scheme, Digest>;

    fn report(&mut self, activity: Self::Activity) -> Feedback {
        match activity {
            Activity::Notarization(n) => {
                self.beacon(n.proposal.payload);
                self.certified(n.view().get(), Certified::Notarized)
            }
            Activity::Nullification(n) => {
                self.m().nullifications.inc();
                self.certified(n.view().get(), Certified::Nullified)
            }
            Activity::Finalization(f) => {
                self.beacon(f.proposal.payload);
                self.certified(f.view().get(), Certified::Finalized)
            }
            Activity::Nullify(n) if n.signer().get() == self.me => self.m().timeouts.inc(),
            Activity::ConflictingNotarize(c) => self.evidence(
                "conflicting_notarize",
                c.view().get(),
                c.signer().get(),
                c.encode().to_vec(),
            ),
            Activity::ConflictingFinalize(c) => self.evidence(
                "conflicting_finalize",
                c.view().get(),
                c.signer().get(),
                c.encode().to_vec(),
            ),
            Activity::NullifyFinalize(c) => self.evidence(
                "nullify_finalize",
                c.view().get(),
                c.signer().get(),
                c.encode().to_vec(),
            ),
            _ => {}
        }
        Feedback::Ok
    }
}

/// Checks and stores the evidence of `queue` (module docs) until the queue closes: each
/// report is checked with `checker` and written through `ledger` on the runtime's blocking
/// pool. A report that does not verify is dropped and counted.
pub async fn run_evidence<E>(
    rt: E,
    ledger: Arc<Ledger>,
    checker: Arc<EvidenceChecker>,
    mut queue: mpsc::Receiver<Reported>,
) where
    E: Spawner + Clock + Supervisor,
{
    let metrics = ledger.chain.metrics.consensus();
    if let Ok(n) = ledger.chain.read_db(|db| db.evidence_count()) {
        metrics.evidence_records.set(n as i64);
    }
    while let Some((kind, view, signer, data)) = queue.recv().await {
        let now = rt
            .current()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let l = ledger.clone();
        let c = checker.clone();
        let stored = rt
            .child("evidence_write")
            .shared(true)
            .spawn(move |_| async move {
                let record = StoredEvidence {
                    id: 0,
                    kind: kind.into(),
                    view,
                    signer,
                    data,
                    received_ms: now,
                };
                if let Err(e) = c.check_record(&record) {
                    tracing::warn!(kind, view, signer, "evidence refused: {e}");
                    return Ok(false);
                }
                l.record_evidence(&record)
            })
            .await;
        match stored {
            Ok(Ok(true)) => {
                tracing::warn!(kind, view, signer, "stored evidence of a faulty validator");
                metrics.evidence_records.inc();
            }
            Ok(Ok(false)) => metrics.evidence_refused.inc(),
            Ok(Err(e)) => {
                tracing::error!("cannot store evidence: {e}");
                metrics.evidence_refused.inc();
            }
            Err(_) => metrics.evidence_refused.inc(),
        }
    }
}
