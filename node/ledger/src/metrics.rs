//! [`Metrics`]: what a node counts for its operator, served by `GET /metrics` in the Prometheus
//! text format (`node/API.md`, "Metrics"). One registry per node (tests run several nodes in
//! one process). Label values come from fixed sets (API codes) or from module ids the chain
//! already holds, so a client cannot grow them.
//!
//! Nothing here reaches state, receipts or hashes: these are node policy figures only.
//!
//! A validator adds [`ConsensusMetrics`] (`gamechain_consensus_*`, `gamechain_evidence_*`) when
//! its consensus starts ([`Metrics::consensus`]); other nodes do not show them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use prometheus::{
    Encoder, Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, Opts, Registry,
    TextEncoder,
};

/// The node's metrics. Cheap to update from any thread.
pub struct Metrics {
    registry: Registry,
    /// `gamechain_height`: the head block's height.
    pub height: IntGauge,
    /// `gamechain_blocks_committed_total`.
    pub blocks: IntCounter,
    /// `gamechain_txs_committed_total`: transactions in committed blocks (failed ones included).
    pub txs: IntCounter,
    /// `gamechain_admission_total{code}`: `POST /v1/tx` outcomes, `accepted` or the refusal code.
    pub admission: IntCounterVec,
    /// `gamechain_block_build_seconds`: executing a block's transactions and end-of-block calls
    /// (sequencer).
    pub build_seconds: Histogram,
    /// `gamechain_block_commit_seconds`: writing a block to SQLite and applying it to memory (a
    /// follower's run of blocks committed in one transaction counts once).
    pub commit_seconds: Histogram,
    /// `gamechain_fuel_used_total{module}`: fuel of committed game transactions by module
    /// (sequencer).
    pub fuel: IntCounterVec,
    /// `gamechain_head_ahead_ms` (followers): how far the head block's time runs ahead of this
    /// node's clock beyond the chain's `max_clock_drift_ms`; 0 within it.
    pub head_ahead_ms: IntGauge,
    /// `gamechain_ws_lagged_closes_total`: WebSocket subscribers closed for falling behind.
    pub ws_lagged: IntCounter,
    /// `gamechain_ws_stalled_drops_total`: WebSocket subscribers dropped because a block message
    /// could not be sent within `ws_send_timeout_ms` (they stopped reading).
    pub ws_stalled: IntCounter,
    /// `gamechain_gossip_dropped_total{queue}` (validators): gossiped transactions dropped
    /// because the admission queue (`all`) or the deploy queue (`deploy`) was full.
    pub gossip_dropped: IntCounterVec,
    /// `gamechain_tier_up_total{result}`: uploads' background Cranelift compiles (`tier_up.rs`):
    /// `tiered`, `cached`, `abandoned` (past the time or memory budget), `failed`, `stale`,
    /// `deferred` (its code not in the head state yet: queued again).
    pub tier_up: IntCounterVec,
    mempool_txs: IntGauge,
    mempool_bytes: IntGauge,
    ws_subscribers: IntGauge,
    connections: IntGauge,
    resident_bytes: IntGauge,
    consensus: OnceLock<ConsensusMetrics>,
}

/// A validator's consensus figures (`docs/validators.md`, "Metrics"), fed by the engine's
/// reporter (`validator/observer.rs`), marshal's finalized tips and the p2p network.
pub struct ConsensusMetrics {
    /// `gamechain_consensus_view`: the view this validator is in (one past the highest view
    /// it saw a notarization, nullification or finalization of).
    pub view: IntGauge,
    /// `gamechain_consensus_timeouts_total`: views this validator voted to skip (its own
    /// nullify votes: the leader's proposal or the view's certificate did not come in time).
    pub timeouts: IntCounter,
    /// `gamechain_consensus_nullifications_total`: views skipped by a quorum (nullification
    /// certificates).
    pub nullifications: IntCounter,
    /// `gamechain_consensus_notarization_seconds`: from entering a view to its notarization.
    pub notarization_seconds: Histogram,
    /// `gamechain_consensus_finalization_seconds`: from entering a view to its finalization.
    pub finalization_seconds: Histogram,
    /// `gamechain_consensus_peers`: other validators connected over p2p.
    pub peers: IntGauge,
    /// `gamechain_consensus_finalized_height`: the highest finalized height this validator
    /// has seen (committed or not).
    pub finalized_height: IntGauge,
    /// `gamechain_consensus_blocks_behind`: finalized height seen minus the committed head
    /// (set at scrape time).
    blocks_behind: IntGauge,
    finalized_seen: AtomicU64,
    /// `gamechain_evidence_records`: pieces of evidence stored.
    pub evidence_records: IntGauge,
    /// `gamechain_evidence_refused_total`: conflicting votes reported by the engine and not
    /// stored (they did not verify, or the bound per validator was reached, or the queue was
    /// full).
    pub evidence_refused: IntCounter,
    /// `gamechain_beacon_shares_total{result}` (chains with a threshold beacon): beacon share
    /// messages received from peers, by what became of them: `valid` (verified and kept),
    /// `invalid` (malformed, another validator's index, or not verifying against the public
    /// polynomial), `duplicate` (one of that height and validator is kept), `stale` (outside
    /// the heights kept: committed already, or too far ahead).
    pub beacon_shares: IntCounterVec,
    /// `gamechain_beacon_released_total`: heights this validator released its own share of.
    pub beacon_released: IntCounter,
    /// `gamechain_beacon_sealed_waits_total`: certificates of a block whose next height is a
    /// sealed round, on which this validator held its share back until that block was final.
    pub beacon_sealed_waits: IntCounter,
    /// `gamechain_beacon_recovered_total`: beacons recovered from a threshold of shares.
    pub beacon_recovered: IntCounter,
    /// `gamechain_beacon_recovery_seconds`: from the first share of a height seen here (its own
    /// or a peer's) to the beacon's recovery.
    pub beacon_recovery_seconds: Histogram,
    /// `gamechain_beacon_missing_total`: views this validator led and gave up because the
    /// beacon of the height to propose did not come within its wait.
    pub beacon_missing: IntCounter,
}

impl ConsensusMetrics {
    /// Notes a finalized height seen (marshal's tip).
    pub fn finalized(&self, height: u64) {
        let before = self.finalized_seen.fetch_max(height, Ordering::Relaxed);
        self.finalized_height.set(before.max(height) as i64);
    }
}

fn register<T: prometheus::core::Collector + Clone + 'static>(registry: &Registry, m: T) -> T {
    registry
        .register(Box::new(m.clone()))
        .expect("every metric name is registered once");
    m
}

/// Buckets of the timing histograms, seconds: 0.25 ms to about 8 s, doubling.
fn time_buckets() -> Vec<f64> {
    prometheus::exponential_buckets(0.000_25, 2.0, 16).expect("valid buckets")
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Every metric at zero.
    pub fn new() -> Self {
        let r = Registry::new();
        let gauge =
            |name: &str, help: &str| register(&r, IntGauge::new(name, help).expect("valid gauge"));
        let counter = |name: &str, help: &str| {
            register(&r, IntCounter::new(name, help).expect("valid counter"))
        };
        let histogram = |name: &str, help: &str| {
            let opts = HistogramOpts::new(name, help).buckets(time_buckets());
            register(&r, Histogram::with_opts(opts).expect("valid histogram"))
        };
        Metrics {
            height: gauge("gamechain_height", "Height of the head block."),
            blocks: counter("gamechain_blocks_committed_total", "Blocks committed."),
            txs: counter(
                "gamechain_txs_committed_total",
                "Transactions in committed blocks, failed ones included.",
            ),
            admission: register(
                &r,
                IntCounterVec::new(
                    Opts::new(
                        "gamechain_admission_total",
                        "POST /v1/tx outcomes: accepted, or the refusal's API code.",
                    ),
                    &["code"],
                )
                .expect("valid counter"),
            ),
            build_seconds: histogram(
                "gamechain_block_build_seconds",
                "Time to execute a block's transactions and end-of-block calls (sequencer).",
            ),
            commit_seconds: histogram(
                "gamechain_block_commit_seconds",
                "Time to write a block to SQLite and apply it to memory.",
            ),
            fuel: register(
                &r,
                IntCounterVec::new(
                    Opts::new(
                        "gamechain_fuel_used_total",
                        "Fuel of committed game transactions by module (sequencer).",
                    ),
                    &["module"],
                )
                .expect("valid counter"),
            ),
            head_ahead_ms: gauge(
                "gamechain_head_ahead_ms",
                "Followers: how far the head block's time runs ahead of this node's clock beyond the chain's max_clock_drift_ms, ms (0 within it).",
            ),
            ws_lagged: counter(
                "gamechain_ws_lagged_closes_total",
                "WebSocket subscribers closed for falling too far behind.",
            ),
            ws_stalled: counter(
                "gamechain_ws_stalled_drops_total",
                "WebSocket subscribers dropped because they stopped reading (ws_send_timeout_ms).",
            ),
            gossip_dropped: register(
                &r,
                IntCounterVec::new(
                    Opts::new(
                        "gamechain_gossip_dropped_total",
                        "Validators: gossiped transactions dropped because an admission queue was full (all, deploy).",
                    ),
                    &["queue"],
                )
                .expect("valid counter"),
            ),
            tier_up: register(
                &r,
                IntCounterVec::new(
                    Opts::new(
                        "gamechain_tier_up_total",
                        "Uploads' background Cranelift compiles: tiered, cached, abandoned (past tier_up_budget_ms or tier_up_memory_mib), failed, stale, deferred (code not in the head state yet; queued again).",
                    ),
                    &["result"],
                )
                .expect("valid counter"),
            ),
            mempool_txs: gauge("gamechain_mempool_txs", "Transactions in the mempool."),
            mempool_bytes: gauge(
                "gamechain_mempool_bytes",
                "Bytes (bodies and signatures) of the transactions in the mempool.",
            ),
            ws_subscribers: gauge("gamechain_ws_subscribers", "Open WebSocket subscriptions."),
            connections: gauge(
                "gamechain_connections",
                "Open TCP connections of the API (requests and WebSocket subscriptions).",
            ),
            resident_bytes: gauge(
                "gamechain_process_resident_bytes",
                "Resident memory of the node process (VmRSS), bytes.",
            ),
            consensus: OnceLock::new(),
            registry: r,
        }
    }

    /// The consensus metrics, registered the first time (a validator's start). Later calls
    /// return the same.
    pub fn consensus(&self) -> &ConsensusMetrics {
        self.consensus.get_or_init(|| {
            let r = &self.registry;
            let gauge = |name: &str, help: &str| {
                register(r, IntGauge::new(name, help).expect("valid gauge"))
            };
            let counter = |name: &str, help: &str| {
                register(r, IntCounter::new(name, help).expect("valid counter"))
            };
            let histogram = |name: &str, help: &str| {
                let opts = HistogramOpts::new(name, help).buckets(
                    prometheus::exponential_buckets(0.005, 2.0, 14).expect("valid buckets"),
                );
                register(r, Histogram::with_opts(opts).expect("valid histogram"))
            };
            ConsensusMetrics {
                view: gauge(
                    "gamechain_consensus_view",
                    "The consensus view this validator is in.",
                ),
                timeouts: counter(
                    "gamechain_consensus_timeouts_total",
                    "Views this validator voted to skip (its own nullify votes).",
                ),
                nullifications: counter(
                    "gamechain_consensus_nullifications_total",
                    "Views skipped by a quorum (nullification certificates seen).",
                ),
                notarization_seconds: histogram(
                    "gamechain_consensus_notarization_seconds",
                    "Time from entering a view to its notarization certificate.",
                ),
                finalization_seconds: histogram(
                    "gamechain_consensus_finalization_seconds",
                    "Time from entering a view to its finalization certificate.",
                ),
                peers: gauge(
                    "gamechain_consensus_peers",
                    "Other validators connected over p2p.",
                ),
                finalized_height: gauge(
                    "gamechain_consensus_finalized_height",
                    "Highest finalized block height seen by consensus.",
                ),
                blocks_behind: gauge(
                    "gamechain_consensus_blocks_behind",
                    "Finalized height seen minus the committed head.",
                ),
                finalized_seen: AtomicU64::new(0),
                evidence_records: gauge(
                    "gamechain_evidence_records",
                    "Pieces of evidence of faulty validators stored.",
                ),
                evidence_refused: counter(
                    "gamechain_evidence_refused_total",
                    "Conflicting votes reported by the engine and not stored.",
                ),
                beacon_shares: register(
                    r,
                    IntCounterVec::new(
                        Opts::new(
                            "gamechain_beacon_shares_total",
                            "Beacon shares received from peers: valid, invalid, duplicate, stale.",
                        ),
                        &["result"],
                    )
                    .expect("valid counter"),
                ),
                beacon_released: counter(
                    "gamechain_beacon_released_total",
                    "Heights this validator released its beacon share of.",
                ),
                beacon_sealed_waits: counter(
                    "gamechain_beacon_sealed_waits_total",
                    "Certificates of a block before a sealed round on which this validator held its beacon share back until that block was final.",
                ),
                beacon_recovered: counter(
                    "gamechain_beacon_recovered_total",
                    "Beacons recovered from a threshold of shares.",
                ),
                beacon_recovery_seconds: register(
                    r,
                    Histogram::with_opts(
                        HistogramOpts::new(
                            "gamechain_beacon_recovery_seconds",
                            "Time from the first share of a height seen to its beacon's recovery.",
                        )
                        .buckets(time_buckets()),
                    )
                    .expect("valid histogram"),
                ),
                beacon_missing: counter(
                    "gamechain_beacon_missing_total",
                    "Views this validator led and gave up for want of the height's beacon.",
                ),
            }
        })
    }

    /// The text exposition of every metric, with the gauges read at scrape time set first:
    /// `gauges`, and the process's resident memory (Linux `VmRSS`; 0 where unknown).
    pub fn render(&self, gauges: ScrapeGauges) -> String {
        self.mempool_txs.set(gauges.mempool_txs as i64);
        self.mempool_bytes.set(gauges.mempool_bytes as i64);
        self.ws_subscribers.set(gauges.ws_subscribers as i64);
        self.connections.set(gauges.connections as i64);
        self.resident_bytes
            .set(resident_bytes().unwrap_or(0) as i64);
        if let Some(c) = self.consensus.get() {
            let seen = c.finalized_seen.load(Ordering::Relaxed);
            let head = self.height.get().max(0) as u64;
            c.blocks_behind.set(seen.saturating_sub(head) as i64);
        }
        let mut out = Vec::new();
        TextEncoder::new()
            .encode(&self.registry.gather(), &mut out)
            .expect("the text encoder writes to memory");
        String::from_utf8(out).expect("the text format is UTF-8")
    }
}

/// The gauges read at scrape time ([`Metrics::render`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct ScrapeGauges {
    /// Transactions in the mempool.
    pub mempool_txs: usize,
    /// Their bytes (bodies and signatures).
    pub mempool_bytes: u64,
    /// Open WebSocket subscriptions.
    pub ws_subscribers: usize,
    /// Open API connections.
    pub connections: usize,
}

/// `VmRSS` of `/proc/self/status`, bytes.
fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_every_metric_with_its_labels() {
        let m = Metrics::new();
        m.blocks.inc();
        m.admission.with_label_values(&["bad_nonce"]).inc();
        m.fuel.with_label_values(&["tictactoe"]).inc_by(52_742);
        m.commit_seconds.observe(0.003);
        let text = m.render(ScrapeGauges {
            mempool_txs: 7,
            mempool_bytes: 900,
            ws_subscribers: 2,
            connections: 3,
        });
        for line in [
            "gamechain_blocks_committed_total 1",
            "gamechain_admission_total{code=\"bad_nonce\"} 1",
            "gamechain_fuel_used_total{module=\"tictactoe\"} 52742",
            "gamechain_mempool_txs 7",
            "gamechain_ws_subscribers 2",
            "gamechain_mempool_bytes 900",
            "gamechain_connections 3",
            "gamechain_block_commit_seconds_count 1",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "{line} missing from\n{text}"
            );
        }
        assert!(text.contains("gamechain_process_resident_bytes "), "{text}");
        assert!(!text.contains("gamechain_consensus_"), "{text}");
    }

    #[test]
    fn a_validator_adds_the_consensus_metrics() {
        let m = Metrics::new();
        m.height.set(10);
        let c = m.consensus();
        c.view.set(42);
        c.finalized(14);
        c.finalized(12);
        c.evidence_records.set(2);
        c.notarization_seconds.observe(0.05);
        c.beacon_shares.with_label_values(&["stale"]).inc();
        c.beacon_recovery_seconds.observe(0.01);
        assert!(std::ptr::eq(c, m.consensus()), "registered once");
        let text = m.render(ScrapeGauges::default());
        for line in [
            "gamechain_consensus_view 42",
            "gamechain_consensus_finalized_height 14",
            "gamechain_consensus_blocks_behind 4",
            "gamechain_evidence_records 2",
            "gamechain_consensus_notarization_seconds_count 1",
            "gamechain_consensus_timeouts_total 0",
            "gamechain_consensus_peers 0",
            "gamechain_beacon_shares_total{result=\"stale\"} 1",
            "gamechain_beacon_released_total 0",
            "gamechain_beacon_sealed_waits_total 0",
            "gamechain_beacon_recovered_total 0",
            "gamechain_beacon_recovery_seconds_count 1",
            "gamechain_beacon_missing_total 0",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "{line} missing from\n{text}"
            );
        }
    }
}
