//! Benchmark: a node on a state larger than memory (issue 12 part 5). It makes a chain with
//! `STATE_BENCH_KEYS` state keys through real transactions, then prints the node's memory
//! (RSS), its restart-to-serving time and its tx/s on that state.
//!
//! The node runs as a child process (this benchmark's own binary, re-run with
//! `STATE_BENCH_NODE_DIR` set: `NodeHandle::start` on that directory, stopped cleanly when its
//! stdin closes), so its RSS is its own and a restart is a real process start:
//!
//! 1. fill: a hand-written module `bulk` (deployed by a transaction) whose op `{"b":"<n>"}` puts
//!    `STATE_BENCH_KEYS_PER_TX` keys `s/<n>/<4 hex digits>` of 32-byte values (about 45 bytes
//!    each, within the 256 KiB a call may write, `docs/limits.md`), driven by `gamechain
//!    bench`'s own code (`--workload module`) until the state holds the asked-for keys; prints
//!    the fill's tx/s and keys/s and the node's RSS after it;
//! 2. restart: stops the node cleanly, starts it again and times from the process start to the
//!    first `GET /v1/status` answered (to serving), and to the first transaction included
//!    (the modules loaded, the sequencer running); prints the RSS just after;
//! 3. load on that state: signed transfers and tic-tac-toe games flat out (`gamechain bench`
//!    workloads, 2,000 accounts, 32 connections): committed tx/s counted from blocks and node CPU
//!    per transaction; prints the RSS and peak RSS (`VmHWM`) after;
//! 4. the stored state is counted and rehashed (`Storage::state_hash`) against the head's state
//!    root.
//!
//! Run: `cargo bench -p gamechain-tests --bench state`. `STATE_BENCH_KEYS` (default 10,000,000)
//! keys to make, `STATE_BENCH_KEYS_PER_TX` (2,000), `STATE_BENCH_TXS` (20,000) transactions per
//! load row, `STATE_BENCH_CACHE_MB` (the node's default `state_cache_mb`),
//! `STATE_BENCH_BLOCK_TXS` the node's `max_block_txs` (default 5,000: a fill block is then bounded
//! by the 32 MiB a block may write, about 340 fill transactions, and the node holds such a
//! block's writes in memory while it makes and commits it, most of its peak RSS during the
//! fill), `STATE_BENCH_DIR` a data directory to keep (a rerun on it makes only the keys it lacks; default a temporary
//! directory, deleted).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use gamechain_chain::{Action, Network, SecretKey};
use gamechain_client::client::Client;
use gamechain_ledger::storage::Storage;
use gamechain_node::cli::bench::report::Report;
use gamechain_node::cli::bench::workload::Kind;
use gamechain_node::cli::bench::{bench_config, run_with, BenchArgs, Target};
use gamechain_node::server::node::NodeHandle;
use gamechain_node::NodeConfig;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[path = "support/bulk.rs"]
mod bulk;
use bulk::bulk_wat;

/// The child: a node on `dir` until its stdin closes, then a clean stop. Prints `URL <url>`
/// once serving.
fn child_node(dir: &str) {
    let rt = tokio::runtime::Runtime::new().expect("a runtime");
    rt.block_on(async {
        let mut config = NodeConfig {
            data_dir: PathBuf::from(dir),
            block_interval_ms: 1_000,
            ..bench_config()
        };
        if let Ok(mb) = std::env::var("STATE_BENCH_CACHE_MB") {
            config.state_cache_mb = mb.parse().expect("STATE_BENCH_CACHE_MB is a number");
        }
        if let Ok(txs) = std::env::var("STATE_BENCH_BLOCK_TXS") {
            config.max_block_txs = txs.parse().expect("STATE_BENCH_BLOCK_TXS is a number");
        }
        let node = NodeHandle::start(config).await.expect("the node starts");
        println!("URL {}", node.url());
        std::io::stdout().flush().unwrap();
        tokio::task::spawn_blocking(|| {
            let mut sink = Vec::new();
            let _ = std::io::stdin().read_to_end(&mut sink);
        })
        .await
        .unwrap();
        node.shutdown().await.expect("a clean stop");
    });
}

/// A node child process.
struct Node {
    child: Child,
    stdin: Option<ChildStdin>,
    url: String,
}

impl Node {
    /// Starts a node on `dir`; returns it once its API answers, with the time that took.
    async fn start(dir: &Path) -> (Node, Duration) {
        let started = Instant::now();
        let mut child = Command::new(std::env::current_exe().unwrap())
            .env("STATE_BENCH_NODE_DIR", dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the node process starts");
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let url = loop {
            let line = lines
                .next()
                .expect("the node prints its URL")
                .expect("a line");
            if let Some(url) = line.strip_prefix("URL ") {
                break url.to_string();
            }
        };
        // Whatever else it prints is read (and dropped) so it never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        let client = Client::new(&url).unwrap();
        client.status().await.expect("the node serves");
        let took = started.elapsed();
        let stdin = child.stdin.take();
        (Node { child, stdin, url }, took)
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `(VmRSS, VmHWM)` in MiB.
    fn rss_mb(&self) -> (f64, f64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
                .map_or(f64::NAN, |kb| kb / 1024.0)
        };
        (field("VmRSS:"), field("VmHWM:"))
    }

    /// Stops the node cleanly (closes its stdin) and waits for it.
    fn stop(mut self) {
        drop(self.stdin.take());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "the node stopped with {status}");
    }
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
        wait: 300,
        json: false,
    }
}

fn target(node: &Node, dir: &Path) -> Target {
    Target {
        url: node.url.clone(),
        label: "child".into(),
        pid: Some(node.pid()),
        in_process: false,
        data_dir: Some(dir.to_path_buf()),
    }
}

fn row(name: &str, r: &Report) {
    println!(
        "{name:<26} {:>7} committed {:>8.0} tx/s  node CPU {:>6} µs/tx ({:.2} cores)  failed {} missing {} refused {}  load {:.2}",
        r.committed,
        r.committed_per_sec,
        r.node_cpu_us_per_tx.map_or("-".into(), |v| format!("{v:.0}")),
        r.node_cores.unwrap_or(f64::NAN),
        r.failed_receipts,
        r.missing,
        r.refused.values().sum::<usize>(),
        r.load_average.unwrap_or(f64::NAN),
    );
}

/// `(state entries, whether they hash to the head's state root, ms)`: a full read of the state.
fn count_state(db: &Path) -> (u64, bool, u128) {
    let started = Instant::now();
    let storage = Storage::open_reader(db).expect("the database opens");
    let head = storage.head().unwrap().expect("a head");
    let (hash, entries) = storage.state_hash(head.state_hash.kind()).unwrap();
    (
        entries,
        hash.root() == head.header.header.state_root,
        started.elapsed().as_millis(),
    )
}

/// State entries, by a count of the `state` table (a full read of its index).
fn state_entries(db: &Path) -> u64 {
    count_state(db).0
}

fn main() {
    match std::env::var("STATE_BENCH_NODE_DIR") {
        Ok(dir) => child_node(&dir),
        Err(_) => tokio::runtime::Runtime::new()
            .expect("a runtime")
            .block_on(bench()),
    }
}

async fn bench() {
    let want_keys = env("STATE_BENCH_KEYS", 10_000_000) as u64;
    let per_tx = env("STATE_BENCH_KEYS_PER_TX", 2_000).clamp(1, 4_000);
    let load_txs = env("STATE_BENCH_TXS", 20_000);
    let kept = std::env::var("STATE_BENCH_DIR").ok().map(PathBuf::from);
    let temp = tempfile::Builder::new()
        .prefix("gamechain-state-bench-")
        .tempdir()
        .unwrap();
    let dir = kept.clone().unwrap_or_else(|| temp.path().to_path_buf());
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("chain.sqlite");
    println!(
        "state: {want_keys} keys ({per_tx} a transaction), {load_txs} transactions per load row, data {}",
        dir.display()
    );

    // 1. Fill.
    let have = if db.exists() { state_entries(&db) } else { 0 };
    let (node, first_start) = Node::start(&dir).await;
    println!(
        "  node started in {:.0} ms over {have} state entries",
        first_start.as_secs_f64() * 1e3
    );
    if have < want_keys {
        let client = Client::new(&node.url).unwrap();
        // One deployer key per directory: a rerun finds the module deployed.
        let key_path = dir.join("bench-deployer.wif");
        let key = match std::fs::read_to_string(&key_path) {
            Ok(text) => SecretKey::from_wif(text.trim()).expect("the deployer key"),
            Err(_) => {
                let key = SecretKey::generate(Network::Testnet);
                std::fs::write(&key_path, key.to_wif()).unwrap();
                key
            }
        };
        if client.module("bulk").await.is_err() {
            let wasm = wat::parse_str(bulk_wat(per_tx)).expect("the bulk module parses");
            let included = client
                .send_and_wait(&key, Action::deploy("bulk", wasm), Duration::from_secs(60))
                .await
                .expect("the deploy is included");
            assert!(
                included.receipt.ok,
                "the deploy failed: {:?}",
                included.receipt
            );
        }
        let txs = (want_keys - have).div_ceil(per_tx as u64) as usize;
        // A distinct name per fill (`r<keys before it>-<i>`), so a rerun adds keys instead of
        // rewriting them.
        let op = format!(r#"{{"b":"r{have}-{{i}}"}}"#);
        let mut fill = args(Kind::Module, txs, 64, 8);
        // Posting outruns the blocks (each writes up to 32 MiB): wait for them all.
        fill.wait = 300 + txs as u64 / 4;
        fill.module = Some("bulk".into());
        fill.op = Some(op);
        let report = run_with(&fill, &target(&node, &dir))
            .await
            .expect("the fill");
        row("fill (bulk module)", &report);
        println!(
            "  fill: {:.0} keys/s over {:.0} s",
            report.committed as f64 * per_tx as f64 / report.seconds.max(f64::EPSILON),
            report.seconds
        );
        assert_eq!(report.failed_receipts, 0, "a fill transaction failed");
    }
    let (rss, peak) = node.rss_mb();
    println!("  after the fill: RSS {rss:.0} MiB (peak {peak:.0} MiB)");
    node.stop();
    let (entries, matches, ms) = count_state(&db);
    println!(
        "  state: {entries} entries, database {:.0} MiB (rehashed in {ms} ms: {})",
        gamechain_node::cli::bench::dir_bytes(&dir) as f64 / (1 << 20) as f64,
        if matches {
            "matches the head's state root"
        } else {
            "DOES NOT MATCH the head's state root"
        }
    );
    assert!(matches, "the stored state does not hash to the head");

    // 2. Restart.
    let (node, to_serving) = Node::start(&dir).await;
    let (rss, _) = node.rss_mb();
    let client = Client::new(&node.url).unwrap();
    let probe = SecretKey::generate(Network::Testnet);
    let restarted = Instant::now();
    client
        .send_and_wait(
            &probe,
            Action::Faucet {
                token: "GOLD".into(),
            },
            Duration::from_secs(60),
        )
        .await
        .expect("a transaction after the restart");
    let to_block = to_serving + restarted.elapsed();
    println!(
        "restart: serving in {:.0} ms (process start to the first /v1/status answer), first transaction included at {:.0} ms; RSS {rss:.0} MiB",
        to_serving.as_secs_f64() * 1e3,
        to_block.as_secs_f64() * 1e3,
    );

    // 3. Load on that state.
    let transfers = run_with(
        &args(Kind::Transfer, load_txs, 2_000, 32),
        &target(&node, &dir),
    )
    .await
    .expect("transfers");
    row("transfers, flat out", &transfers);
    let games = run_with(
        &args(Kind::Tictactoe, load_txs, 2_000, 32),
        &target(&node, &dir),
    )
    .await
    .expect("tic-tac-toe");
    row("tic-tac-toe, flat out", &games);
    let (rss, peak) = node.rss_mb();
    println!("  after the load: RSS {rss:.0} MiB, peak since the restart {peak:.0} MiB");
    node.stop();
    if kept.is_none() {
        drop(temp);
    }
}
