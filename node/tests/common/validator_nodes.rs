//! The validators of a `gamechain testnet` as [`NodeProcess`]es (`gamechain node --validator
//! --config node.toml` each), as the catch-up and snapshot-rejoin tests run them: made with an
//! absolute data directory and extra configuration lines, their heads (one head for several),
//! a steady load of faucet transactions, and `gamechain verify --data` of a stopped one's
//! directory.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use gamechain_client::client::Client;
use gamechain_runtime::chain::{Network, SecretKey};
use serde_json::Value;

use super::{faucet_tx, gamechain, testnet, NodeProcess};

/// `gamechain testnet` of `n` validators in `dir/net` ([`testnet`]: blocks at least
/// `interval_ms` apart), validator `i`'s `node.toml` given an absolute data directory,
/// `log = "info"`, the lines `top(i)` after them (top-level settings such as
/// `snapshot_every_blocks = 5`) and the lines `table(i)` at the start of its `[validator]`
/// table (each line ending in `\n`); the `n` as (not started) processes.
pub fn validator_processes(
    dir: &Path,
    n: usize,
    interval_ms: u64,
    top: impl Fn(usize) -> String,
    table: impl Fn(usize) -> String,
) -> Vec<NodeProcess> {
    let base = testnet(dir, n, interval_ms);
    (0..n)
        .map(|i| {
            let folder = dir.join("net").join(i.to_string());
            let path = folder.join("node.toml");
            let config = std::fs::read_to_string(&path).unwrap();
            let data = folder.join("data");
            let config = config
                .replace(
                    "data_dir = \"data\"",
                    &format!(
                        "data_dir = \"{}\"\nlog = \"info\"\n{}",
                        data.display(),
                        top(i)
                    ),
                )
                .replace("[validator]\n", &format!("[validator]\n{}", table(i)));
            std::fs::write(&path, config).unwrap();
            NodeProcess::existing(&folder, SocketAddr::from(([127, 0, 0, 1], base + i as u16)))
        })
        .collect()
}

/// The node's head; panics with the end of its log when it does not answer.
pub async fn head(v: &NodeProcess) -> (u64, String) {
    match v.client().status().await {
        Ok(s) => (s.height, s.head_hash),
        Err(e) => {
            let log = v.log();
            let tail: Vec<&str> = log.lines().rev().take(60).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            panic!(
                "{} does not answer: {e}\nthe end of its log:\n{}",
                v.url(),
                tail.join("\n")
            )
        }
    }
}

/// Waits (at most `secs`) until the validators `which` are all at one head of at least `min`;
/// panics with the log of the last of `which` when they are not.
pub async fn same_head(vs: &[NodeProcess], which: &[usize], min: u64, secs: u64) -> (u64, String) {
    let start = Instant::now();
    loop {
        let mut got = Vec::new();
        for i in which {
            got.push(head(&vs[*i]).await);
        }
        if got.windows(2).all(|w| w[0] == w[1]) && got[0].0 >= min {
            return got[0].clone();
        }
        assert!(
            start.elapsed() < Duration::from_secs(secs),
            "validators {which:?} did not reach one head at or above {min}: {got:?}\n\
             validator {}'s log:\n{}",
            which[which.len() - 1],
            vs[which[which.len() - 1]].log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A steady load: one faucet transaction of a new account every `every`, to the nodes of
/// `urls` in turn, until stopped. Transport errors (a node restarting or stopped) are skipped:
/// only accepted transactions are counted.
pub struct FaucetLoad {
    stop: Arc<AtomicBool>,
    sent: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl FaucetLoad {
    pub fn start(urls: Vec<String>, chain_id: &str, every: Duration) -> FaucetLoad {
        let stop = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(AtomicU64::new(0));
        let (s, n, chain_id) = (stop.clone(), sent.clone(), chain_id.to_string());
        let task = tokio::spawn(async move {
            let clients: Vec<Client> = urls.iter().map(|u| Client::new(u).unwrap()).collect();
            let mut i = 0usize;
            while !s.load(Ordering::Relaxed) {
                let k = SecretKey::generate(Network::Testnet);
                if clients[i % clients.len()]
                    .post_tx(&faucet_tx(&k, &chain_id))
                    .await
                    .is_ok()
                {
                    n.fetch_add(1, Ordering::Relaxed);
                }
                i += 1;
                tokio::time::sleep(every).await;
            }
        });
        FaucetLoad { stop, sent, task }
    }

    /// Stops it; returns how many transactions were accepted.
    pub async fn stop(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.task.await.unwrap();
        self.sent.load(Ordering::Relaxed)
    }
}

/// `gamechain verify --data <data> --json`, which must pass: (head height, head hash, state
/// root, base height). `stopped_early`: the directory of a validator stopped while the others
/// went on, whose last committed blocks may be final only through certificates it never
/// received: `not_final` (exit 5) is accepted for heights up to its head, nothing else.
pub fn verify_data(cwd: &Path, data: &Path, stopped_early: bool) -> (u64, String, String, u64) {
    let out = gamechain(
        cwd,
        None,
        &["verify", "--data", data.to_str().unwrap(), "--json"],
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    let head_uncovered = report["result"] == "not_final"
        && report["finality"]["uncovered"]["to"] == report["head_height"]
        && report["divergence"].is_null();
    assert!(
        out.status.success() || (stopped_early && out.status.code() == Some(5) && head_uncovered),
        "verify {}: {}{}",
        data.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (
        report["head_height"].as_u64().unwrap(),
        report["head_hash"].as_str().unwrap().to_string(),
        report["state_root"].to_string(),
        report["base_height"].as_u64().unwrap_or(0),
    )
}
