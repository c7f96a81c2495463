//! `gamechain bench` as an operator runs it, on the real binary: short runs that must complete
//! with counts that add up (never a speed): in-process with a mix of transfers and tic-tac-toe
//! games at a fixed rate, and against a separate node process (`--node` and `--node-pid`) flat
//! out, where the node's CPU per transaction is measured from its process.

use crate::common::cli::{json_ok, run};
use crate::common::NodeProcess;
use serde_json::Value;

/// The counts of a report add up: every post accepted or refused, every accepted transaction
/// committed or missing, one latency sample per committed transaction.
fn check_counts(report: &Value, want: u64) {
    let n = |k: &str| {
        report[k]
            .as_u64()
            .unwrap_or_else(|| panic!("{k} in {report}"))
    };
    let refused: u64 = report["refused"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(n("submitted"), n("accepted") + refused, "{report}");
    assert_eq!(n("accepted"), n("committed") + n("missing"), "{report}");
    assert_eq!(report["latency"]["samples"].as_u64(), Some(n("committed")));
    assert!(n("submitted") >= want, "{report}");
    assert_eq!(
        (refused, n("missing"), n("failed_receipts")),
        (0, 0, 0),
        "{report}"
    );
    assert!(n("blocks") >= 1 && report["committed_per_sec"].as_f64().unwrap() > 0.0);
    let l = &report["latency"];
    assert!(
        l["p50_ms"].as_f64() <= l["p99_ms"].as_f64()
            && l["p99_ms"].as_f64() <= l["max_ms"].as_f64()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_in_process_run_of_a_mix_adds_up() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(
        tmp.path(),
        &[
            "bench",
            "--workload",
            "mix",
            "--accounts",
            "12",
            "--connections",
            "3",
            "--txs",
            "210",
            "--rate",
            "400",
            "--json",
        ],
    )
    .await;
    let report = json_ok("bench", &out);
    check_counts(&report, 210);
    assert_eq!(report["node"], "in-process");
    assert!(
        report["node_cpu_us_per_tx"].as_f64().unwrap() > 0.0,
        "{report}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_against_a_node_process_measures_its_cpu() {
    let tmp = tempfile::tempdir().unwrap();
    let mut node = NodeProcess::new(tmp.path(), "max_block_txs = 5000\nmax_pending = 100000");
    node.start().await;
    let pid = node.pid().to_string();
    let url = node.url();
    let out = run(
        tmp.path(),
        &[
            "bench",
            "--node",
            &url,
            "--node-pid",
            &pid,
            "--workload",
            "tictactoe",
            "--accounts",
            "8",
            "--connections",
            "4",
            "--txs",
            "140",
            "--json",
        ],
    )
    .await;
    let report = json_ok("bench", &out);
    check_counts(&report, 140);
    assert_eq!(report["node"], url.as_str());
    assert!(
        report["node_cpu_us_per_tx"].as_f64().unwrap() > 0.0,
        "{report}"
    );
    // The text form names every figure.
    let out = run(
        tmp.path(),
        &[
            "bench",
            "--node",
            &url,
            "--accounts",
            "4",
            "--connections",
            "2",
            "--txs",
            "20",
        ],
    )
    .await;
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for part in [
        "committed 20 in",
        "tx/s (counted from blocks)",
        "p99",
        "blocks:",
        "node CPU: not measured",
    ] {
        assert!(text.contains(part), "{part} in:\n{text}");
    }
}
