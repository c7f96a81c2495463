//! Benchmark: joining from a state snapshot against replaying from genesis (issue 24 part 8,
//! `docs/validators.md`, "Joining from a snapshot").
//!
//! 1. A sequencer (in this process) gets `SNAPSHOT_BENCH_KEYS` state keys (default 1,000,000)
//!    through real transactions: the hand-written module `bulk` (`support/bulk.rs`, deployed by a
//!    transaction) puts 2,000 keys of 32-byte values per call, driven by `gamechain bench`'s own
//!    code; then `SNAPSHOT_BENCH_TXS` signed transfers (default 10,000) as history.
//! 2. It is restarted with `snapshot_every_blocks` set so that its next block takes a snapshot;
//!    prints the snapshot's size and how long writing it took.
//! 3. A follower joins from that snapshot (`--snapshot-from`): time from its start to serving
//!    the snapshot's height (genesis, code and compiling the modules included).
//! 4. A follower replays from genesis: time from its start to the same height.
//!
//! Both followers run in this process, one after the other, on the same machine as the
//! sequencer (which makes empty blocks only, once a second). Run:
//! `cargo bench -p gamechain-tests --bench snapshot` (`SNAPSHOT_BENCH_KEYS`,
//! `SNAPSHOT_BENCH_TXS` to change the sizes).

#[path = "support/bulk.rs"]
mod bulk;

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use gamechain_chain::{Action, Network, SecretKey};
use gamechain_client::client::Client;
use gamechain_node::cli::bench::workload::Kind;
use gamechain_node::cli::bench::{bench_config, dir_bytes, run_with, BenchArgs, Target};
use gamechain_node::server::node::NodeHandle;
use gamechain_node::NodeConfig;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn args(kind: Kind, txs: usize, accounts: usize, connections: usize) -> BenchArgs {
    BenchArgs {
        node: None,
        node_pid: None,
        workload: kind,
        accounts: accounts as u32,
        connections: connections as u32,
        txs: txs as u32,
        rate: 0,
        batch: 1,
        module: None,
        op: None,
        funder: None,
        wait: 600,
        json: false,
    }
}

fn free_addr() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

fn sequencer_config(dir: &Path, every: u64) -> NodeConfig {
    NodeConfig {
        data_dir: dir.to_path_buf(),
        block_interval_ms: 1_000,
        max_block_txs: 5_000,
        snapshot_every_blocks: every,
        ..bench_config()
    }
}

/// Starts a follower of `upstream` on `dir` in this process (with `--snapshot-from` `peer`
/// when given) and returns the time until it serves `height`, then stops it.
async fn follower_reaches(dir: &Path, upstream: &str, peer: Option<&str>, height: u64) -> Duration {
    let addr = free_addr();
    let config = NodeConfig {
        data_dir: dir.to_path_buf(),
        listen: addr,
        rate_limit_per_sec: 0,
        log: "warn".into(),
        snapshot_from: peer.map(str::to_string),
        ..NodeConfig::default()
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let started = Instant::now();
    let upstream = upstream.to_string();
    let task = tokio::spawn(async move {
        gamechain_node::server::replica::run_follower(config, &upstream, async {
            let _ = stopped.await;
        })
        .await
    });
    let client = Client::new(&format!("http://{addr}")).unwrap();
    loop {
        if let Ok(s) = client.status().await {
            if s.height >= height {
                break;
            }
        }
        assert!(!task.is_finished(), "the follower stopped");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let took = started.elapsed();
    let _ = stop.send(());
    task.await.unwrap().expect("the follower ran");
    took
}

#[tokio::main]
async fn main() {
    let keys = env("SNAPSHOT_BENCH_KEYS", 1_000_000) as u64;
    let history = env("SNAPSHOT_BENCH_TXS", 10_000);
    let per_tx = 2_000usize;
    let temp = tempfile::Builder::new()
        .prefix("gamechain-snapshot-bench-")
        .tempdir()
        .unwrap();
    let seq_dir = temp.path().join("seq");
    println!("snapshot join: {keys} state keys made by transactions, then {history} transfers");

    // 1. State and history.
    let node = NodeHandle::start(sequencer_config(&seq_dir, 0))
        .await
        .expect("the sequencer starts");
    let client = Client::new(&node.url()).unwrap();
    let key = SecretKey::generate(Network::Testnet);
    let wasm = wat::parse_str(bulk::bulk_wat(per_tx)).expect("the bulk module parses");
    let deployed = client
        .send_and_wait(&key, Action::deploy("bulk", wasm), Duration::from_secs(60))
        .await
        .expect("the deploy is included");
    assert!(deployed.receipt.ok, "{:?}", deployed.receipt);
    let target = Target {
        url: node.url(),
        label: "sequencer".into(),
        pid: None,
        in_process: true,
        data_dir: Some(seq_dir.clone()),
    };
    let started = Instant::now();
    let mut fill = args(Kind::Module, keys.div_ceil(per_tx as u64) as usize, 64, 8);
    fill.module = Some("bulk".into());
    fill.op = Some(r#"{"b":"f{i}"}"#.into());
    let report = run_with(&fill, &target).await.expect("the fill");
    assert_eq!(report.failed_receipts, 0, "a fill transaction failed");
    println!(
        "  fill: {} transactions in {:.1} s",
        report.committed,
        started.elapsed().as_secs_f64()
    );
    if history > 0 {
        let report = run_with(&args(Kind::Transfer, history, 500, 16), &target)
            .await
            .expect("the transfers");
        println!(
            "  history: {} transfers, {:.0} tx/s",
            report.committed, report.committed_per_sec
        );
    }
    let head = client.status().await.unwrap().height;
    node.shutdown().await.expect("a clean stop");

    // 2. The snapshot: the next block's height is a multiple of `every`.
    let node = NodeHandle::start(sequencer_config(&seq_dir, head + 1))
        .await
        .expect("the sequencer restarts");
    let url = node.url();
    let snap_started = Instant::now();
    let snaps = gamechain_ledger::snapshot::snapshots_dir(&seq_dir);
    let manifest = loop {
        if let Some(&h) = gamechain_ledger::snapshot::snapshot_heights(&snaps).first() {
            let bytes = std::fs::read(snaps.join(h.to_string()).join("manifest.json")).unwrap();
            break serde_json::from_slice::<gamechain_ledger::snapshot::Manifest>(&bytes).unwrap();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let height = manifest.height;
    println!(
        "  snapshot at height {height}: {} entries, {:.1} MiB in {} chunks, complete {:.1} s after the restart (one block interval included); database {:.0} MiB",
        manifest.entries,
        manifest.bytes as f64 / (1 << 20) as f64,
        manifest.chunks.len(),
        snap_started.elapsed().as_secs_f64(),
        dir_bytes(&seq_dir) as f64 / (1 << 20) as f64,
    );

    // 3. and 4.
    let joined = follower_reaches(&temp.path().join("join"), &url, Some(&url), height).await;
    let replayed = follower_reaches(&temp.path().join("replay"), &url, None, height).await;
    println!(
        "  join from the snapshot: {:.2} s; replay from genesis: {:.2} s ({:.1}x)",
        joined.as_secs_f64(),
        replayed.as_secs_f64(),
        replayed.as_secs_f64() / joined.as_secs_f64().max(1e-9)
    );
    node.shutdown().await.expect("a clean stop");
    drop(temp);
}
