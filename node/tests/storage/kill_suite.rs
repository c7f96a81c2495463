//! The crash suite: the real `gamechain node` SIGKILLed again and again under a steady load of
//! signed transactions, restarted each time on the same data directory.
//!
//! The load runs on its own OS thread with its own async runtime and HTTP client (it does not
//! share the test's runtime or connections): a few keys send faucet calls and transfers one
//! after the other, retrying while the node is down; every `200` answer is counted as
//! acknowledged, every receipt it sees is recorded.
//!
//! - `sigkill_loop_loses_nothing_acknowledged_in_a_block`: `GAMECHAIN_KILLS` kills (default
//!   50) of the sequencer at random moments (20–400 ms after it answers). After each restart:
//!   the head never went back, every block hash seen before is unchanged, every recorded
//!   receipt is still there, identical (same height, index, receipt). At the end `gamechain
//!   verify --data` passes on the directory.
//! - `sigkill_loop_with_a_follower`: the same with a follower attached (`--follow`), killing
//!   the sequencer and the follower in turn; the follower's head never goes back, its blocks
//!   are the sequencer's, and both directories verify.
//!
//! Long mode (not in CI): `GAMECHAIN_KILLS=1000 cargo test -p gamechain-node --test node
//! storage::kill_suite -- --nocapture`. Each test prints its figures (kills, acknowledged, receipts seen, lost).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::replay::{verify_json, Follower};
use crate::common::{env_count, load_action, random_below, NodeProcess};
use gamechain_client::client::{BlockRef, Client, Included};
use gamechain_runtime::chain::{Network, SecretKey};

/// Concurrent senders of the load.
const SENDERS: usize = 4;
/// How long one receipt is waited for before the sender moves on (a transaction acknowledged
/// but lost with the mempool at a kill is never included: its sender resubmits).
const RECEIPT_WAIT: Duration = Duration::from_millis(1500);

/// Kills per test: `GAMECHAIN_KILLS`, default 50.
fn kills() -> usize {
    env_count("GAMECHAIN_KILLS", 50)
}

/// What the load saw.
#[derive(Default)]
struct Seen {
    /// Receipts seen and not yet checked after a restart.
    fresh: Vec<Included>,
    /// Every receipt seen.
    all: Vec<Included>,
}

/// The load: `SENDERS` keys sending one transaction after the other to `url` until stopped.
struct Load {
    stop: Arc<AtomicBool>,
    acknowledged: Arc<AtomicU64>,
    seen: Arc<Mutex<Seen>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Load {
    fn start(url: String) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let acknowledged = Arc::new(AtomicU64::new(0));
        let seen = Arc::new(Mutex::new(Seen::default()));
        let (s, a, v) = (stop.clone(), acknowledged.clone(), seen.clone());
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let client = Client::new(&url).unwrap();
                let keys: Vec<SecretKey> = (0..SENDERS)
                    .map(|_| SecretKey::generate(Network::Testnet))
                    .collect();
                let tasks: Vec<_> = (0..SENDERS)
                    .map(|k| {
                        let (client, key) = (client.clone(), keys[k].clone());
                        let to = keys[(k + 1) % SENDERS].address();
                        let (s, a, v) = (s.clone(), a.clone(), v.clone());
                        tokio::spawn(async move { send_loop(client, key, to, s, a, v).await })
                    })
                    .collect();
                for t in tasks {
                    t.await.unwrap();
                }
            });
        });
        Load {
            stop,
            acknowledged,
            seen,
            thread: Some(thread),
        }
    }

    /// Receipts seen since the last call.
    fn take_fresh(&self) -> Vec<Included> {
        std::mem::take(&mut self.seen.lock().unwrap().fresh)
    }

    fn seen_count(&self) -> usize {
        self.seen.lock().unwrap().all.len()
    }

    /// Stops the senders; returns the count of acknowledged transactions and every receipt
    /// seen.
    fn finish(mut self) -> (u64, Vec<Included>) {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.take().unwrap().join().unwrap();
        let seen = std::mem::take(&mut self.seen.lock().unwrap().all);
        (self.acknowledged.load(Ordering::SeqCst), seen)
    }
}

async fn send_loop(
    client: Client,
    key: SecretKey,
    to: String,
    stop: Arc<AtomicBool>,
    acknowledged: Arc<AtomicU64>,
    seen: Arc<Mutex<Seen>>,
) {
    let mut i = 0u64;
    while !stop.load(Ordering::SeqCst) {
        let action = load_action(i, &to);
        let Ok(txid) = client.send(&key, action).await else {
            // Down, restarting, or a nonce race: try again shortly.
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        };
        acknowledged.fetch_add(1, Ordering::SeqCst);
        i += 1;
        if let Ok(included) = client.wait_for_receipt(&txid, RECEIPT_WAIT).await {
            let mut s = seen.lock().unwrap();
            s.fresh.push(included.clone());
            s.all.push(included);
        }
    }
}

/// Block hashes seen, by height.
#[derive(Default)]
struct Hashes(BTreeMap<u64, String>);

impl Hashes {
    /// Records the head `client` serves now (if it answers); returns its height.
    async fn record_head(&mut self, client: &Client) -> Option<u64> {
        let s = client.status().await.ok()?;
        self.0.insert(s.height, s.head_hash);
        Some(s.height)
    }

    /// Asserts `client` serves the recorded hash at every recorded height (at most the 32
    /// latest and 32 others at random when there are more).
    async fn check(&self, client: &Client, what: &str) {
        let heights: Vec<u64> = self.0.keys().copied().collect();
        let picked: Vec<u64> = if heights.len() <= 64 {
            heights
        } else {
            let mut p: Vec<u64> = heights[heights.len() - 32..].to_vec();
            for salt in 0..32 {
                p.push(heights[random_below(heights.len() as u64 - 32, salt) as usize]);
            }
            p
        };
        for h in picked {
            let block = client
                .block(BlockRef::Height(h))
                .await
                .unwrap_or_else(|e| panic!("{what}: block {h}: {e}"));
            assert_eq!(&block.hash_hex(), &self.0[&h], "{what}: block {h} changed");
        }
    }
}

/// Asserts every receipt in `seen` is served by `client` exactly as it was seen.
async fn check_receipts(client: &Client, seen: &[Included], what: &str) {
    for want in seen {
        let got = client
            .tx(&want.txid)
            .await
            .unwrap_or_else(|e| panic!("{what}: tx {}: {e}", want.txid));
        assert_eq!(
            (got.height(), got.index(), got.receipt()),
            (Some(want.height), Some(want.index), Some(&want.receipt)),
            "{what}: tx {} changed",
            want.txid
        );
    }
}

/// Waits (at most 60 s) until the load has seen `n` more receipts than `from`.
async fn load_flows(load: &Load, from: usize, n: usize, node: &NodeProcess) {
    let start = Instant::now();
    while load.seen_count() < from + n {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no load reaches the node:\n{}",
            node.log()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// `gamechain verify --data <dir>/data` passes and reaches at least `height`.
async fn verifies(dir: &Path, height: u64, what: &str) {
    let data = dir.join("data");
    let (code, report) = verify_json(dir, &["--data", data.to_str().unwrap()]).await;
    assert_eq!(code, 0, "{what}: {report}");
    assert!(
        report["head_height"].as_u64().unwrap() >= height,
        "{what}: {report}"
    );
}

/// Prints a test's figures.
fn report(
    what: &str,
    kills: usize,
    acknowledged: u64,
    receipts: usize,
    head: u64,
    started: Instant,
) {
    eprintln!(
        "{what}: kills {kills}, transactions acknowledged {acknowledged}, receipts seen {receipts} \
         (all still there, identical: lost 0), head {head}, in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_loop_loses_nothing_acknowledged_in_a_block() {
    let started = Instant::now();
    let tmp = tempfile::tempdir().unwrap();
    let mut node = NodeProcess::new(tmp.path(), "block_interval_ms = 200");
    node.start().await;
    let client = node.client();
    let load = Load::start(node.url());
    let mut hashes = Hashes::default();
    let mut head = 0;
    let kills = kills();
    for round in 0..kills {
        let before = load.seen_count();
        load_flows(&load, before, 1, &node).await;
        tokio::time::sleep(Duration::from_millis(20 + random_below(380, round as u64))).await;
        if let Some(h) = hashes.record_head(&client).await {
            head = head.max(h);
        }
        node.kill();
        node.start().await;
        let what = format!("kill {round}");
        let status = client.status().await.unwrap();
        assert!(
            status.height >= head,
            "{what}: the head went back from {head} to {}",
            status.height
        );
        let fresh = load.take_fresh();
        head = head.max(fresh.iter().map(|i| i.height).max().unwrap_or(0));
        check_receipts(&client, &fresh, &what).await;
        hashes.check(&client, &what).await;
    }
    let (acknowledged, seen) = load.finish();
    check_receipts(&client, &seen, "at the end").await;
    hashes.check(&client, "at the end").await;
    assert!(seen.len() >= kills, "{} receipts", seen.len());
    let status = client.status().await.unwrap();
    assert!(node.terminate(Duration::from_secs(30)).success());
    verifies(tmp.path(), status.height, "the sequencer").await;
    report(
        "sequencer",
        kills,
        acknowledged,
        seen.len(),
        status.height,
        started,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_loop_with_a_follower() {
    let started = Instant::now();
    let tmp = tempfile::tempdir().unwrap();
    let (seq_dir, f_dir) = (tmp.path().join("seq"), tmp.path().join("f"));
    for d in [&seq_dir, &f_dir] {
        std::fs::create_dir_all(d).unwrap();
    }
    let mut node = NodeProcess::new(&seq_dir, "block_interval_ms = 200");
    node.start().await;
    let mut follower = Follower::new(&f_dir, &node.url());
    follower.start().await;
    let (client, fclient) = (node.client(), follower.node.client());
    let load = Load::start(node.url());
    let mut hashes = Hashes::default();
    let (mut head, mut fhead) = (0, 0);
    let kills = kills();
    for round in 0..kills {
        let before = load.seen_count();
        load_flows(&load, before, 1, &node).await;
        tokio::time::sleep(Duration::from_millis(20 + random_below(380, round as u64))).await;
        if let Some(h) = hashes.record_head(&client).await {
            head = head.max(h);
        }
        if let Ok(s) = fclient.status().await {
            fhead = fhead.max(s.height);
        }
        let what = if round % 2 == 0 {
            node.kill();
            node.start().await;
            format!("kill {round} (sequencer)")
        } else {
            follower.kill();
            follower.start().await;
            format!("kill {round} (follower)")
        };
        let status = client.status().await.unwrap();
        assert!(
            status.height >= head,
            "{what}: the sequencer's head went back"
        );
        let fstatus = fclient.status().await.unwrap();
        assert!(
            fstatus.height >= fhead,
            "{what}: the follower's head went back from {fhead} to {}",
            fstatus.height
        );
        let fresh = load.take_fresh();
        head = head.max(fresh.iter().map(|i| i.height).max().unwrap_or(0));
        check_receipts(&client, &fresh, &what).await;
        hashes.check(&client, &what).await;
        // The follower catches up with what the sequencer had and serves the same blocks.
        follower.reach(head).await;
        hashes.check(&fclient, &format!("{what}, follower")).await;
        assert!(
            !follower.log().contains("equivocation"),
            "{what}: {}",
            follower.log()
        );
    }
    let (acknowledged, seen) = load.finish();
    let status = client.status().await.unwrap();
    follower.reach(status.height).await;
    for c in [&client, &fclient] {
        check_receipts(c, &seen, "at the end").await;
        hashes.check(c, "at the end").await;
    }
    assert!(node.terminate(Duration::from_secs(30)).success());
    follower.kill();
    verifies(&seq_dir, status.height, "the sequencer").await;
    verifies(&f_dir, status.height, "the follower").await;
    report(
        "sequencer and follower",
        kills,
        acknowledged,
        seen.len(),
        status.height,
        started,
    );
}
