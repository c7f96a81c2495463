//! What `gamechain bench` reports ([`Report`]): one JSON object with `--json`, else a few
//! lines of text. Every figure is measured by the run itself; nothing is estimated.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use super::workload::Kind;

/// Latency percentiles, milliseconds.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Latency {
    /// Samples (transactions seen in a block).
    pub samples: usize,
    /// Median.
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Largest.
    pub max_ms: f64,
}

impl Latency {
    /// Percentiles of `samples` (nearest rank; all 0 when there are none).
    pub fn of(mut samples: Vec<Duration>) -> Latency {
        if samples.is_empty() {
            return Latency::default();
        }
        samples.sort_unstable();
        let rank = |p: f64| {
            let i = ((p / 100.0) * samples.len() as f64).ceil() as usize;
            samples[i.clamp(1, samples.len()) - 1].as_secs_f64() * 1e3
        };
        Latency {
            samples: samples.len(),
            p50_ms: rank(50.0),
            p90_ms: rank(90.0),
            p99_ms: rank(99.0),
            max_ms: rank(100.0),
        }
    }
}

/// The result of one run.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The node driven (`in-process` when the bench started it).
    pub node: String,
    /// The workload.
    pub workload: Kind,
    /// Accounts used.
    pub accounts: usize,
    /// Connections (lanes) used.
    pub connections: usize,
    /// The target rate, tx/s (0: flat out).
    pub rate: u64,
    /// Transactions posted.
    pub submitted: usize,
    /// Posted and accepted by the node (a txid came back).
    pub accepted: usize,
    /// Refusals by API code (and `transport` for connection failures).
    pub refused: BTreeMap<String, usize>,
    /// Accepted transactions seen in a block over the WebSocket.
    pub committed: usize,
    /// Of those, receipts with `ok: false`.
    pub failed_receipts: usize,
    /// Accepted transactions never seen in a block before the wait ran out.
    pub missing: usize,
    /// From the first post to the block holding the last committed transaction, seconds.
    pub seconds: f64,
    /// `committed / seconds`: committed transactions per second, counted from blocks.
    pub committed_per_sec: f64,
    /// Posting only: `accepted / (last answer - first post)`.
    pub accepted_per_sec: f64,
    /// From just before a transaction's POST to its block's arrival on the WebSocket.
    pub latency: Latency,
    /// Blocks that held at least one of the run's transactions.
    pub blocks: usize,
    /// Median count of the run's transactions in those blocks.
    pub median_txs_per_block: usize,
    /// Node CPU time per committed transaction, microseconds (`None`: not measurable, e.g. a
    /// remote node without `--node-pid`).
    pub node_cpu_us_per_tx: Option<f64>,
    /// Node CPU over the run as a share of one core (1.0 = one core busy).
    pub node_cores: Option<f64>,
    /// Growth of the node's data over the run per committed transaction, bytes (`None`: a
    /// remote node): the database as SQLite counts it, WAL pages included, plus the data
    /// directory's other files but those of bounded size (`bench::data_bytes`).
    pub disk_bytes_per_tx: Option<f64>,
    /// The data directory's files of bounded size at the end, bytes: the WAL, its index and the
    /// sign state, rewritten in place whatever the chain's length (`None`: a remote node).
    pub disk_bounded_bytes: Option<u64>,
    /// The machine's 1-minute load average at the end (a busy machine skews every figure).
    pub load_average: Option<f64>,
}

impl Report {
    /// The text form (several lines).
    pub fn text(&self) -> String {
        let rate = if self.rate == 0 {
            "flat out".to_string()
        } else {
            format!("at {} tx/s", self.rate)
        };
        let mut s = format!(
            "gamechain bench: {:?} on {}, {} accounts, {} connections, {rate}\n",
            self.workload, self.node, self.accounts, self.connections
        )
        .to_lowercase();
        s += &format!(
            "  submitted {}: accepted {} ({:.0} tx/s), refused {}\n",
            self.submitted,
            self.accepted,
            self.accepted_per_sec,
            self.refused.values().sum::<usize>()
        );
        for (code, n) in &self.refused {
            s += &format!("    {code}: {n}\n");
        }
        s += &format!(
            "  committed {} in {:.2} s: {:.0} tx/s (counted from blocks); {} failed receipts, {} missing\n",
            self.committed, self.seconds, self.committed_per_sec, self.failed_receipts, self.missing
        );
        let l = &self.latency;
        s += &format!(
            "  submit -> block over /v1/ws: p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms, max {:.1} ms\n",
            l.p50_ms, l.p90_ms, l.p99_ms, l.max_ms
        );
        s += &format!(
            "  blocks: {}, median {} of the run's transactions each\n",
            self.blocks, self.median_txs_per_block
        );
        match (self.node_cpu_us_per_tx, self.node_cores) {
            (Some(us), Some(cores)) => {
                s += &format!(
                    "  node CPU: {us:.0} µs per transaction ({:.0}% of one core)\n",
                    cores * 100.0
                )
            }
            _ => s += "  node CPU: not measured (a remote node; give --node-pid for a local one)\n",
        }
        if let Some(bytes) = self.disk_bytes_per_tx {
            s += &format!(
                "  disk: {bytes:.0} bytes per transaction ({:.1} MB per 100,000): the database's growth, WAL pages included\n",
                bytes * 1e5 / 1e6
            );
            if let Some(bounded) = self.disk_bounded_bytes {
                s += &format!(
                    "        besides {:.1} MB now in files of bounded size, rewritten in place (the WAL, the sign state)\n",
                    bounded as f64 / 1e6
                );
            }
        }
        if let Some(load) = self.load_average {
            s += &format!("  load average (1 min) at the end: {load:.2}\n");
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let ms = |v: u64| Duration::from_millis(v);
        let l = Latency::of((1..=100).map(ms).collect());
        assert_eq!(
            (l.samples, l.p50_ms, l.p90_ms, l.p99_ms, l.max_ms),
            (100, 50.0, 90.0, 99.0, 100.0)
        );
        let one = Latency::of(vec![ms(7)]);
        assert_eq!((one.p50_ms, one.p99_ms), (7.0, 7.0));
        assert_eq!(Latency::of(vec![]), Latency::default());
    }
}
