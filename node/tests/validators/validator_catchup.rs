//! Four validators as four `gamechain` processes (`gamechain testnet`), under a steady load of
//! transactions sent to three of them:
//!
//! - **catch-up**: validator 3 is stopped (SIGKILL) while the others make
//!   `GAMECHAIN_CATCHUP_BLOCKS` blocks (default 300: past the 64 executed blocks that made a
//!   validator crash-loop before, and past the 256-block depth of speculative execution;
//!   `GAMECHAIN_CATCHUP_BLOCKS=1000` or more for the long run), then restarted with the load
//!   still going. It must reach the head without exiting, and after the load stops all four
//!   data directories pass `gamechain verify --data` with one head hash and state root. It
//!   prints blocks behind, time to catch up and the restarted process's peak memory (`VmHWM`).
//! - **disk** (a measurement, ignored by default: `cargo test -p gamechain-node --test node
//!   validators::validator_catchup::disk_per_block -- --ignored --nocapture`): the same workload
//!   (`GAMECHAIN_DISK_BLOCKS` blocks of one transaction each, default 150) on a sequencer and on
//!   four validators whose consensus archives keep 64 blocks; prints each data directory's
//!   growth in bytes per block and asserts the validators' at most 1.2 times the sequencer's
//!   once `consensus/` (bounded by the retention) is left aside (`docs/validators.md`,
//!   "Catching up, retention and disk").

use std::path::Path;
use std::time::{Duration, Instant};

use gamechain_runtime::chain::{Network, SecretKey};
use serde_json::Value;

use crate::common::validator_nodes::{
    head, same_head, validator_processes, verify_data, FaucetLoad,
};
use crate::common::{env_count, faucet_tx, heavy, NodeProcess};

const N: usize = 4;

/// `gamechain testnet` of four validators in `dir/net`, blocks at least `interval_ms` apart,
/// each `node.toml` given an absolute data directory, `log = "info"` and `extra` lines in its
/// `[validator]` table; the four as (not started) processes.
fn testnet(dir: &Path, interval_ms: u64, extra: &str) -> Vec<NodeProcess> {
    validator_processes(
        dir,
        N,
        interval_ms,
        |_| String::new(),
        |_| extra.to_string(),
    )
}

async fn start_validator(v: &mut NodeProcess) {
    v.start_with(&["--validator"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_validator_stopped_for_hundreds_of_blocks_under_load_catches_up() {
    let _heavy = heavy();
    let behind_goal = env_count("GAMECHAIN_CATCHUP_BLOCKS", 300) as u64;
    let tmp = tempfile::tempdir().unwrap();
    let mut vs = testnet(tmp.path(), 20, "");
    for v in vs.iter_mut() {
        start_validator(v).await;
    }
    let genesis: Value = vs[0].client().genesis().await.unwrap();
    let chain_id = genesis["chain_id"].as_str().unwrap().to_string();
    let load = FaucetLoad::start(
        vs[..3].iter().map(NodeProcess::url).collect(),
        &chain_id,
        Duration::from_millis(5),
    );
    let (h0, _) = same_head(&vs, &[0, 1, 2, 3], 5, 60).await;

    // Validator 3 stopped while the others make `behind_goal` blocks.
    vs[3].kill();
    let started = Instant::now();
    let mut last_report = Instant::now();
    loop {
        let (h, _) = head(&vs[0]).await;
        if h >= h0 + behind_goal {
            break;
        }
        if last_report.elapsed() > Duration::from_secs(10) {
            eprintln!(
                "catch-up: {} blocks made without validator 3 in {:?}",
                h - h0,
                started.elapsed()
            );
            last_report = Instant::now();
        }
        assert!(
            started.elapsed() < Duration::from_secs(60 + behind_goal),
            "the three validators did not make {behind_goal} blocks: at {h} from {h0}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let made_in = started.elapsed();

    // Restarted, load still on: it reaches the head the others had at its start.
    start_validator(&mut vs[3]).await;
    let restarted = Instant::now();
    let (own, _) = head(&vs[3]).await;
    let (target, _) = head(&vs[0]).await;
    let behind = target - own;
    loop {
        if let Some(status) = vs[3].exited() {
            panic!(
                "validator 3 exited while catching up ({status}):\n{}",
                vs[3].log()
            );
        }
        if head(&vs[3]).await.0 >= target {
            break;
        }
        assert!(
            restarted.elapsed() < Duration::from_secs(120 + behind / 5),
            "validator 3 did not catch up {behind} blocks: at {:?}, target {target}",
            head(&vs[3]).await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let caught_up_in = restarted.elapsed();
    // It keeps up with the moving head.
    let (now, _) = head(&vs[0]).await;
    eventually_at(&vs[3], now, 60).await;
    let peak = vs[3].peak_memory();
    let sent = load.stop().await;
    let (h, _) = same_head(&vs, &[0, 1, 2, 3], now, 120).await;
    assert!(vs[3].exited().is_none(), "{}", vs[3].log());
    assert!(
        !vs[3].log().contains("evicted"),
        "validator 3's log:\n{}",
        vs[3].log()
    );
    eprintln!(
        "catch-up: {behind} blocks behind (the others made {behind_goal} blocks in {made_in:?}), \
         caught up in {caught_up_in:?} ({:.0} blocks/s), peak memory of the restarted validator \
         {} MiB; {sent} transactions, head {h}",
        behind as f64 / caught_up_in.as_secs_f64().max(0.001),
        peak.map_or("?".into(), |b| format!(
            "{:.1}",
            b as f64 / (1 << 20) as f64
        )),
    );

    // No transaction pending and an idle interval of 60 s: no block comes while they stop.
    // (A block finalized while the first of them stops would leave the others one behind, so
    // the heads must hold still, nothing pending anywhere, before the first is stopped.)
    let settled = Instant::now();
    loop {
        let (at, _) = same_head(&vs, &[0, 1, 2, 3], h, 60).await;
        let mut pending = 0;
        for v in &vs {
            pending += v.client().status().await.map_or(1, |s| s.pending);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        if pending == 0 && same_head(&vs, &[0, 1, 2, 3], at, 60).await.0 == at {
            break;
        }
        assert!(
            settled.elapsed() < Duration::from_secs(60),
            "the validators did not settle: {pending} transactions pending"
        );
    }
    for v in vs.iter_mut() {
        assert!(
            v.terminate(Duration::from_secs(20)).success(),
            "{}",
            v.log()
        );
    }
    let heads: Vec<_> = vs
        .iter()
        .map(|v| verify_data(tmp.path(), &v.dir.join("data"), false))
        .collect();
    for (i, got) in heads.iter().enumerate() {
        assert_eq!(got, &heads[0], "validator {i}'s data directory");
    }
}

/// Waits (at most `secs`) until `v`'s head is at least `height`.
async fn eventually_at(v: &NodeProcess, height: u64, secs: u64) {
    let start = Instant::now();
    while head(v).await.0 < height {
        assert!(
            start.elapsed() < Duration::from_secs(secs),
            "not at {height} within {secs} s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Bytes of the files under `dir`, and of those under `dir/consensus`.
fn disk_usage(dir: &Path) -> (u64, u64) {
    fn walk(p: &Path) -> u64 {
        let Ok(entries) = std::fs::read_dir(p) else {
            return 0;
        };
        entries
            .flatten()
            .map(|e| match e.file_type() {
                Ok(t) if t.is_dir() => walk(&e.path()),
                Ok(_) => e.metadata().map_or(0, |m| m.len()),
                Err(_) => 0,
            })
            .sum()
    }
    (walk(dir), walk(&dir.join("consensus")))
}

/// Sends `blocks` faucet transactions one after the other through `nodes` in turn, each once
/// the previous one is included: `blocks` blocks of one transaction each.
async fn one_tx_per_block(nodes: &[&NodeProcess], chain_id: &str, blocks: u64) {
    for i in 0..blocks {
        let node = nodes[i as usize % nodes.len()];
        let client = node.client();
        let txid = client
            .post_tx(&faucet_tx(&SecretKey::generate(Network::Testnet), chain_id))
            .await
            .unwrap();
        let start = Instant::now();
        while client
            .tx(&txid)
            .await
            .ok()
            .and_then(|t| t.height())
            .is_none()
        {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "tx {i} not included"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: GAMECHAIN_DISK_BLOCKS=N cargo test ... -- --ignored --nocapture"]
async fn disk_per_block_of_four_validators_against_a_sequencer() {
    let _heavy = heavy();
    let blocks = env_count("GAMECHAIN_DISK_BLOCKS", 150) as u64;
    let tmp = tempfile::tempdir().unwrap();
    let per_block =
        |before: u64, after: u64, n: u64| after.saturating_sub(before) as f64 / n as f64;

    // The sequencer: its data directory's growth over `blocks` blocks (measured stopped).
    let seq_dir = tmp.path().join("sequencer");
    std::fs::create_dir_all(&seq_dir).unwrap();
    let mut seq = NodeProcess::new(&seq_dir, "min_block_interval_ms = 20");
    seq.start().await;
    assert!(seq.terminate(Duration::from_secs(20)).success());
    let (seq_before, _) = disk_usage(&seq_dir.join("data"));
    seq.start().await;
    let genesis: Value = seq.client().genesis().await.unwrap();
    let seq_chain = genesis["chain_id"].as_str().unwrap().to_string();
    let seq_start = head(&seq).await.0;
    one_tx_per_block(&[&seq], &seq_chain, blocks).await;
    let seq_blocks = head(&seq).await.0 - seq_start;
    assert!(seq.terminate(Duration::from_secs(20)).success());
    let (seq_after, _) = disk_usage(&seq_dir.join("data"));
    let seq_per = per_block(seq_before, seq_after, seq_blocks);
    eprintln!("disk: sequencer {seq_per:.0} bytes/block over {seq_blocks} blocks");

    // Four validators, the same workload, their consensus archives kept to 64 blocks.
    let vdir = tmp.path().join("validators");
    std::fs::create_dir_all(&vdir).unwrap();
    let mut vs = testnet(&vdir, 20, "archive_retention_blocks = 64\n");
    for v in vs.iter_mut() {
        start_validator(v).await;
    }
    let (v_start, _) = same_head(&vs, &[0, 1, 2, 3], 0, 60).await;
    for v in vs.iter_mut() {
        assert!(
            v.terminate(Duration::from_secs(20)).success(),
            "{}",
            v.log()
        );
    }
    let before: Vec<(u64, u64)> = vs.iter().map(|v| disk_usage(&v.dir.join("data"))).collect();
    for v in vs.iter_mut() {
        start_validator(v).await;
    }
    let genesis: Value = vs[0].client().genesis().await.unwrap();
    let chain_id = genesis["chain_id"].as_str().unwrap().to_string();
    let refs: Vec<&NodeProcess> = vs.iter().collect();
    one_tx_per_block(&refs, &chain_id, blocks).await;
    let (v_head, _) = same_head(&vs, &[0, 1, 2, 3], v_start + blocks, 60).await;
    let v_blocks = v_head - v_start;
    for v in vs.iter_mut() {
        assert!(
            v.terminate(Duration::from_secs(20)).success(),
            "{}",
            v.log()
        );
    }
    for (i, v) in vs.iter().enumerate() {
        let (total, consensus) = disk_usage(&v.dir.join("data"));
        let all = per_block(before[i].0, total, v_blocks);
        let archives = per_block(before[i].1, consensus, v_blocks);
        let rest = all - archives;
        eprintln!(
            "disk: validator {i} {all:.0} bytes/block over {v_blocks} blocks ({:.2}x the \
             sequencer's): consensus/ {archives:.0} (bounded by the retention), the rest {rest:.0} \
             ({:.2}x)",
            all / seq_per,
            rest / seq_per
        );
        assert!(
            rest <= 1.2 * seq_per,
            "validator {i}: {rest:.0} bytes/block outside consensus/ against the sequencer's \
             {seq_per:.0}"
        );
    }
}
