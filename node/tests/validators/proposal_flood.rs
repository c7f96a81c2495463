//! A faulty proposer floods its blocks with code, and the honest validators keep finalizing
//! within stated bounds of time and memory. Four `gamechain` validator processes on loopback
//! (made by `gamechain testnet`, blocks at least 100 ms apart); validator 3 runs with
//! `GAMECHAIN_TEST_FAULT=deploy_flood`: every block it leads carries deploys of distinct modules
//! of the largest size (about 1 MiB of code each, up to the chain's caps `max_block_deploys` /
//! `max_block_code_bytes`), signed by a key of its own and valid, so honest validators must
//! compile each of them to vote, and commit them when final.
//!
//! While it runs (20 s by default; `GAMECHAIN_FLOOD_SECS=N` for longer), the test polls the head
//! of validator 0 every 20 ms and sends a faucet transaction through validator 1 every second.
//! It asserts, and prints:
//! - the flood happened: every honest validator compiled flood modules (its log), and how many
//!   of validator 3's blocks with them are final (at most the caps each);
//! - the worst gap between two finalized blocks seen by validator 0 is at most
//!   [`MAX_GAP`] (the leader timeouts plus the compile of one block's code, in a debug build);
//! - every faucet transaction is included;
//! - the peak resident memory (`VmHWM`) of each honest validator stays below [`MAX_HWM`].
//!
//! Real processes rather than the simulator: the figures asked for are a real process's peak
//! memory and real compile times.

use crate::common;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use gamechain_client::client::{BlockRef, Client};
use gamechain_runtime::chain::{Network, SecretKey};
use serde_json::Value;

use crate::common::BIN;

const N: usize = 4;

/// Most time between two finalized blocks while the faulty proposer floods (debug build).
const MAX_GAP: Duration = Duration::from_secs(8);

/// Most peak resident memory of an honest validator (debug build): 1.5 GiB.
const MAX_HWM: u64 = 1536 << 20;

struct Validator {
    index: usize,
    dir: PathBuf,
    url: String,
    child: Option<Child>,
}

impl Validator {
    fn client(&self) -> Client {
        Client::new(&self.url).unwrap()
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("node.log")).unwrap_or_default()
    }

    async fn start(&mut self, env: &[(&str, &str)]) {
        let log = std::fs::File::create(self.dir.join("node.log")).unwrap();
        let child = Command::new(BIN)
            .args(["node", "--validator", "--config", "node.toml"])
            .current_dir(&self.dir)
            .envs(env.iter().copied())
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        self.child = Some(child);
        let start = Instant::now();
        while self.client().status().await.is_err() {
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!(
                    "validator {} exited with {status}:\n{}",
                    self.index,
                    self.log()
                );
            }
            assert!(
                start.elapsed() < common::READY_TIMEOUT,
                "validator {} does not answer",
                self.index
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// A field of `/proc/<pid>/status` in bytes (`VmHWM`, `VmRSS`).
    fn memory(&self, field: &str) -> u64 {
        let pid = self.child.as_ref().unwrap().id();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let line = status.lines().find(|l| l.starts_with(field)).unwrap();
        line.split_whitespace()
            .nth(1)
            .unwrap()
            .parse::<u64>()
            .unwrap()
            * 1024
    }

    fn alive(&mut self) -> bool {
        self.child.as_mut().unwrap().try_wait().unwrap().is_none()
    }
}

impl Drop for Validator {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proposer_flooding_its_blocks_with_code_cannot_stall_or_bloat_honest_validators() {
    let _heavy = common::heavy();
    let secs = common::env_count("GAMECHAIN_FLOOD_SECS", 20) as u64;
    let tmp = tempfile::tempdir().unwrap();
    let base = common::testnet(tmp.path(), N, 100);
    let net = tmp.path().join("net");
    let genesis: Value =
        serde_json::from_str(&std::fs::read_to_string(net.join("0/data/genesis.json")).unwrap())
            .unwrap();
    let caps = (
        genesis["max_block_deploys"]
            .as_u64()
            .expect("new genesis files have the caps"),
        genesis["max_block_code_bytes"]
            .as_u64()
            .expect("new genesis files have the caps"),
    );
    let chain_id = genesis["chain_id"].as_str().unwrap().to_string();
    let liar = genesis["validators"]["set"][3]["address"]
        .as_str()
        .unwrap()
        .to_string();
    let mut vs: Vec<Validator> = (0..N)
        .map(|i| Validator {
            index: i,
            dir: net.join(i.to_string()),
            url: format!("http://127.0.0.1:{}", base + i as u16),
            child: None,
        })
        .collect();
    for (i, v) in vs.iter_mut().enumerate() {
        let env: &[(&str, &str)] = if i == 3 {
            &[("GAMECHAIN_TEST_FAULT", "deploy_flood")]
        } else {
            &[]
        };
        v.start(env).await;
    }
    let c0 = vs[0].client();
    let c1 = vs[1].client();
    // Wait for the first block, then measure.
    let start = Instant::now();
    while c0.status().await.unwrap().height < 1 {
        assert!(start.elapsed() < Duration::from_secs(60), "no first block");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let began = Instant::now();
    let mut last = (c0.status().await.unwrap().height, Instant::now());
    let first_height = last.0;
    let mut worst = Duration::ZERO;
    let mut faucets = Vec::new();
    let mut next_faucet = Instant::now();
    while began.elapsed() < Duration::from_secs(secs) {
        let h = c0.status().await.unwrap().height;
        let now = Instant::now();
        if h > last.0 {
            worst = worst.max(now - last.1);
            last = (h, now);
        }
        if now >= next_faucet {
            next_faucet = now + Duration::from_secs(1);
            let k = SecretKey::generate(Network::Testnet);
            let tx = common::faucet_tx(&k, &chain_id);
            faucets.push(c1.post_tx(&tx).await.unwrap());
        }
        for v in vs.iter_mut().take(3) {
            assert!(
                v.alive(),
                "honest validator {} exited:\n{}",
                v.index,
                v.log()
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The gap still open at the end counts too.
    worst = worst.max(last.1.elapsed());
    let head = c0.status().await.unwrap().height;
    // What the flood put in final blocks.
    let (mut flood_blocks, mut flood_deploys, mut flood_code) = (0u64, 0u64, 0u64);
    for h in first_height..=head {
        let block = c0.block(BlockRef::Height(h)).await.unwrap();
        if block.header.header.sequencer != liar {
            continue;
        }
        let mut deploys = 0;
        for t in &block.txs {
            let body: Value = serde_json::from_str(t.tx.body()).unwrap();
            if body["action"]["type"] == "deploy" {
                deploys += 1;
                flood_code += body["action"]["code"].as_str().unwrap().len() as u64 * 3 / 4;
            }
        }
        assert!(
            deploys <= caps.0,
            "block {h} has {deploys} deploys, over the cap"
        );
        if deploys > 0 {
            flood_blocks += 1;
            flood_deploys += deploys;
        }
    }
    let hwm: Vec<u64> = vs.iter().take(3).map(|v| v.memory("VmHWM:")).collect();
    let rss: Vec<u64> = vs.iter().take(3).map(|v| v.memory("VmRSS:")).collect();
    let mib = |b: &u64| b >> 20;
    println!(
        "flood: {secs} s, blocks {first_height}..{head}; final blocks of the faulty proposer \
         with deploys: {flood_blocks} ({flood_deploys} deploys, {} MiB of code; caps {} deploys, \
         {} bytes per block); worst gap between finalized blocks {} ms; honest VmHWM MiB {:?}, \
         VmRSS MiB {:?}",
        flood_code >> 20,
        caps.0,
        caps.1,
        worst.as_millis(),
        hwm.iter().map(mib).collect::<Vec<_>>(),
        rss.iter().map(mib).collect::<Vec<_>>(),
    );
    // Every honest validator compiled the flood's code (for its vote, or to commit it).
    let compiled: Vec<usize> = vs
        .iter()
        .take(3)
        .map(|v| {
            v.log()
                .lines()
                .filter(|l| l.contains("deploy compiled") && l.contains("flood_"))
                .count()
        })
        .collect();
    println!("flood modules compiled by each honest validator: {compiled:?}");
    assert!(
        compiled.iter().all(|c| *c >= 4),
        "the honest validators must have compiled the flood's code: {compiled:?}"
    );
    assert!(worst <= MAX_GAP, "worst gap {worst:?} over {MAX_GAP:?}");
    for (i, h) in hwm.iter().enumerate() {
        assert!(*h <= MAX_HWM, "validator {i} peaked at {} MiB", h >> 20);
    }
    for txid in &faucets[..faucets.len().saturating_sub(1)] {
        let deadline = Instant::now() + Duration::from_secs(30);
        while c0.tx(txid).await.ok().and_then(|r| r.height()).is_none() {
            assert!(
                Instant::now() < deadline,
                "faucet transaction {txid} was not included"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}
