//! Benchmark: the node end to end under load, every figure of the throughput table in one run,
//! with `gamechain bench`'s own code (`gamechain_node::cli::bench`) against one in-process node
//! (`bench_config`: no rate limit, 5,000 transactions a block, 400,000 pending, log `warn`):
//!
//! 1. signed transfers, flat out: committed tx/s counted from blocks, node CPU per transaction,
//!    disk per 100,000 transfers;
//! 2. tic-tac-toe games, flat out: committed tx/s;
//! 3. a steady rate (default 1,000 tx/s) of transfers: post → block latency over the WebSocket
//!    (p50, p99), blocks made per second and the median transactions per block;
//! 4. replay (`gamechain verify --data` of the node's directory, which holds all of the above)
//!    against the sequencer's committed rate of row 1.
//!
//! The bench's client runs on its own two threads in this process; the node's CPU is this
//! process's minus theirs. The machine's load average is printed with every row: other work on
//! the machine skews every figure, so compare ratios from one run.
//!
//! Run: `cargo bench -p gamechain-tests --bench throughput`. Sizes: `THROUGHPUT_TXS` (default
//! 100000) per flat-out row, `THROUGHPUT_ACCOUNTS` (2000), `THROUGHPUT_CONNECTIONS` (32),
//! `THROUGHPUT_RATE` (1000) and `THROUGHPUT_STEADY_SECS` (10) for row 3, `THROUGHPUT_COALESCE_MS`
//! (5) the node's `block_coalesce_ms`, `THROUGHPUT_PIPELINE` the node's `pipeline`: `on`
//! (default), `off`, or `both` (every row on a fresh node with the pipelined sequencer, then
//! again with one block at a time, and the ratios of the two: compare within one run),
//! `THROUGHPUT_COMMITMENT` the new chain's state commitment: `sparse_merkle` (default, what new
//! chains get), `lthash16`, or `both` (every row on a fresh chain of each, and their ratios).

use gamechain_chain::StateCommitment;
use gamechain_node::cli::bench::report::Report;
use gamechain_node::cli::bench::workload::Kind;
use gamechain_node::cli::bench::{bench_config, local_target, run_with, BenchArgs};
use gamechain_node::cli::local_node::LocalNode;
use gamechain_node::cli::{Cli, Command};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn args(kind: Kind, txs: usize, accounts: usize, connections: usize, rate: u64) -> BenchArgs {
    BenchArgs {
        node: None,
        node_pid: None,
        workload: kind,
        accounts: accounts as u32,
        connections: connections as u32,
        txs: txs as u32,
        rate,
        batch: 1,
        module: None,
        op: None,
        funder: None,
        wait: 120,
        json: false,
    }
}

fn row(name: &str, r: &Report) {
    let l = &r.latency;
    println!(
        "{name:<28} {:>7} committed {:>8.0} tx/s  p50 {:>7.1} ms  p99 {:>7.1} ms  blocks {:>5} (median {:>4} tx)  node CPU {:>6} µs/tx  failed {} missing {} refused {}  load {:.2}",
        r.committed,
        r.committed_per_sec,
        l.p50_ms,
        l.p99_ms,
        r.blocks,
        r.median_txs_per_block,
        r.node_cpu_us_per_tx.map_or("-".into(), |v| format!("{v:.0}")),
        r.failed_receipts,
        r.missing,
        r.refused.values().sum::<usize>(),
        r.load_average.unwrap_or(f64::NAN),
    );
}

/// The figures of one node's rows that the pipeline and commitment comparisons divide.
struct Figures {
    transfers: f64,
    games: f64,
    p50_ms: f64,
    p99_ms: f64,
    cpu_us_per_tx: Option<f64>,
    disk_bytes_per_tx: Option<f64>,
    replay: f64,
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let modes: &[bool] = match std::env::var("THROUGHPUT_PIPELINE").as_deref() {
        Ok("off") => &[false],
        Ok("both") => &[true, false],
        Ok("on") | Err(_) => &[true],
        Ok(other) => panic!("THROUGHPUT_PIPELINE is on, off or both, not {other:?}"),
    };
    let commitments: &[StateCommitment] = match std::env::var("THROUGHPUT_COMMITMENT").as_deref() {
        Ok("lthash16") => &[StateCommitment::LtHash16],
        Ok("both") => &[StateCommitment::SparseMerkle, StateCommitment::LtHash16],
        Ok("sparse_merkle") | Err(_) => &[StateCommitment::SparseMerkle],
        Ok(other) => {
            panic!("THROUGHPUT_COMMITMENT is sparse_merkle, lthash16 or both, not {other:?}")
        }
    };
    if commitments.len() == 2 {
        let pipeline = modes[0];
        let merkle = rows(pipeline, commitments[0]).await;
        let lthash = rows(pipeline, commitments[1]).await;
        println!(
            "sparse_merkle / lthash16: transfers {:.2}x, tic-tac-toe {:.2}x, steady p99 {:.2}x, node CPU per transfer {}, disk per transfer {}, replay {:.2}x",
            merkle.transfers / lthash.transfers.max(f64::EPSILON),
            merkle.games / lthash.games.max(f64::EPSILON),
            merkle.p99_ms / lthash.p99_ms.max(f64::EPSILON),
            match (merkle.cpu_us_per_tx, lthash.cpu_us_per_tx) {
                (Some(a), Some(b)) => format!("{:.2}x", a / b.max(f64::EPSILON)),
                _ => "-".into(),
            },
            match (merkle.disk_bytes_per_tx, lthash.disk_bytes_per_tx) {
                (Some(a), Some(b)) => format!("{:.2}x", a / b.max(f64::EPSILON)),
                _ => "-".into(),
            },
            merkle.replay / lthash.replay.max(f64::EPSILON),
        );
        return;
    }
    let mut figures = Vec::new();
    for &pipeline in modes {
        figures.push(rows(pipeline, commitments[0]).await);
    }
    if let [on, off] = &figures[..] {
        println!(
            "pipeline on / off: transfers {:.2}x, tic-tac-toe {:.2}x, steady p50 {:.2}x, p99 {:.2}x, node CPU per transfer {}",
            on.transfers / off.transfers.max(f64::EPSILON),
            on.games / off.games.max(f64::EPSILON),
            on.p50_ms / off.p50_ms.max(f64::EPSILON),
            on.p99_ms / off.p99_ms.max(f64::EPSILON),
            match (on.cpu_us_per_tx, off.cpu_us_per_tx) {
                (Some(a), Some(b)) => format!("{:.2}x", a / b.max(f64::EPSILON)),
                _ => "-".into(),
            }
        );
    }
}

/// Every row against a fresh in-process node with `pipeline`, on a new chain of `commitment`.
async fn rows(pipeline: bool, commitment: StateCommitment) -> Figures {
    let txs = env("THROUGHPUT_TXS", 100_000);
    let accounts = env("THROUGHPUT_ACCOUNTS", 2_000);
    let connections = env("THROUGHPUT_CONNECTIONS", 32);
    let rate = env("THROUGHPUT_RATE", 1_000) as u64;
    let steady = env("THROUGHPUT_STEADY_SECS", 10);
    let config = gamechain_node::NodeConfig {
        block_coalesce_ms: env("THROUGHPUT_COALESCE_MS", 5) as u64,
        pipeline,
        state_commitment: commitment,
        ..bench_config()
    };
    let node = LocalNode::start_with(config)
        .await
        .expect("the node starts");
    let target = local_target(&node);
    println!(
        "throughput (pipeline {}, state commitment {}): {txs} transactions per flat-out row, {accounts} accounts, {connections} connections",
        if pipeline { "on" } else { "off" },
        commitment.name()
    );

    let transfers = run_with(
        &args(Kind::Transfer, txs, accounts, connections, 0),
        &target,
    )
    .await
    .expect("transfers");
    row("transfers, flat out", &transfers);
    let games = run_with(
        &args(Kind::Tictactoe, txs, accounts, connections, 0),
        &target,
    )
    .await
    .expect("tic-tac-toe");
    row("tic-tac-toe, flat out", &games);
    let steady_txs = rate as usize * steady;
    let trickle = run_with(
        &args(
            Kind::Transfer,
            steady_txs,
            accounts.min(steady_txs),
            connections,
            rate,
        ),
        &target,
    )
    .await
    .expect("steady rate");
    row(&format!("transfers at {rate} tx/s"), &trickle);
    println!(
        "  at {rate} tx/s: {:.1} blocks per second, median {} transactions per block",
        trickle.blocks as f64 / trickle.seconds.max(f64::EPSILON),
        trickle.median_txs_per_block
    );
    if let Some(bytes) = transfers.disk_bytes_per_tx {
        println!(
            "  disk: {bytes:.0} bytes per transfer = {:.1} MB per 100,000 transfers (the database's growth, WAL pages included; besides {:.1} MB in files of bounded size: the WAL, the sign state)",
            bytes * 1e5 / 1e6,
            transfers.disk_bounded_bytes.unwrap_or(0) as f64 / 1e6
        );
    }

    // Replay of everything the node committed, against the sequencer's transfer rate.
    let data = node.data_dir().to_str().expect("a UTF-8 path").to_string();
    let cli =
        <Cli as clap::Parser>::try_parse_from(["gamechain", "verify", "--data", &data, "--json"])
            .expect("verify arguments");
    let Command::Verify(verify) = cli.command else {
        unreachable!("parsed as verify")
    };
    let mut out = Vec::new();
    let code = gamechain_node::cli::verify::run_verify(verify, &mut out)
        .await
        .expect("verify runs");
    let report: serde_json::Value = serde_json::from_slice(&out).expect("verify's JSON");
    assert_eq!(code, 0, "the chain verifies: {report}");
    let replay_rate = report["txs_per_sec"].as_f64().unwrap_or(0.0);
    println!(
        "replay: {} transactions in {:.2} s = {replay_rate:.0} tx/s; {:.2}x the sequencer's committed transfer rate",
        report["txs"],
        report["seconds"].as_f64().unwrap_or(0.0),
        replay_rate / transfers.committed_per_sec.max(f64::EPSILON)
    );
    node.stop().await.expect("the node stops");
    Figures {
        transfers: transfers.committed_per_sec,
        games: games.committed_per_sec,
        p50_ms: trickle.latency.p50_ms,
        p99_ms: trickle.latency.p99_ms,
        cpu_us_per_tx: transfers.node_cpu_us_per_tx,
        disk_bytes_per_tx: transfers.disk_bytes_per_tx,
        replay: replay_rate,
    }
}
