//! A validator joins from a state snapshot with a key that has voted (`docs/validators.md`,
//! "Joining from a snapshot" and "Rejoining"), four validators as four `gamechain` processes
//! (`gamechain testnet`):
//!
//! All four run, 0 to 2 taking snapshots every 5 blocks, under a steady load of faucet
//! transactions until validator 0 serves a snapshot. Validator 3, which has voted all along,
//! is killed and loses its database (its keys, `genesis.json`, sign state and consensus storage
//! are left, as after a lost disk restored from an old backup), and starts with
//! `--snapshot-from` validator 0: it must import the snapshot (its chain starts there: block 1
//! answers `410 pruned`), set the old sign state and consensus storage aside, follow the chain
//! until a block finalized after the join began, and start consensus from a certificate two views
//! past it, in a view above the one it was in when it was killed; then vote: validator 0 is
//! stopped, and 1, 2 and 3 (a quorum only with 3) must still make blocks. Validator 3 is then
//! restarted (`--snapshot-from` given again is ignored, and says so) and the three make blocks
//! again. Then it loses only its consensus journal: a start without `--snapshot-from` is
//! refused, saying why; one with `--snapshot-from` validator 1 rejoins in place, and the three
//! make blocks again. No validator records evidence against validator 3 at any point.
//! Finally, the load stopped and the heads settled, the three running validators are stopped
//! and their data directories pass `gamechain verify --data` with one head hash and state root
//! (validator 3's from its snapshot base); validator 0's passes too.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::validator_nodes::{
    head, same_head, validator_processes, verify_data, FaucetLoad,
};
use crate::common::{gamechain, heavy, snapshot_heights, NodeProcess};

const N: usize = 4;

/// `gamechain testnet` of four validators in `dir/net` (blocks at least 20 ms apart), each
/// `node.toml` given an absolute data directory, `log = "info"`, and for validators 0 to 2
/// `snapshot_every_blocks = 5`; the four as (not started) processes.
fn testnet(dir: &Path) -> Vec<NodeProcess> {
    let snapshots = |i| {
        if i < 3 {
            "snapshot_every_blocks = 5\n".to_string()
        } else {
            String::new()
        }
    };
    validator_processes(dir, N, 20, snapshots, |_| String::new())
}

/// The number after `name` (e.g. `height=`) in `line`.
fn field(line: &str, name: &str) -> u64 {
    let at = line
        .find(name)
        .unwrap_or_else(|| panic!("{name} in {line}"))
        + name.len();
    line[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap()
}

/// The height of the `joined from a state snapshot` line of `log`.
fn joined_height(log: &str) -> u64 {
    let line = log
        .lines()
        .find(|l| l.contains("joined from a state snapshot"))
        .unwrap_or_else(|| panic!("validator 3 did not join from the snapshot:\n{log}"));
    field(line, "height=")
}

/// Waits (at most `secs`) until the head of validator `i` is at least `min`.
async fn at_least(vs: &[NodeProcess], i: usize, min: u64, secs: u64) -> u64 {
    let start = Instant::now();
    loop {
        let (h, _) = head(&vs[i]).await;
        if h >= min {
            return h;
        }
        assert!(
            start.elapsed() < Duration::from_secs(secs),
            "validator {i} did not reach {min}: at {h}\nvalidator 3's log:\n{}",
            vs[3].log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The `gamechain_consensus_view` of `v` (the view it is in).
async fn consensus_view(v: &NodeProcess) -> u64 {
    let text = reqwest::get(format!("{}/metrics", v.url()))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("gamechain_consensus_view "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no gamechain_consensus_view in:\n{text}"))
}

/// Waits (at most `secs`) for validator `v`'s `rejoined:` line: (floor height, view).
async fn rejoined(v: &NodeProcess, secs: u64) -> (u64, u64) {
    let start = Instant::now();
    loop {
        let log = v.log();
        if let Some(line) = log
            .lines()
            .find(|l| l.contains("rejoined: consensus starts"))
        {
            return (field(line, "floor="), field(line, "view="));
        }
        assert!(
            start.elapsed() < Duration::from_secs(secs),
            "validator 3 did not rejoin consensus in {secs} s:\n{log}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits (at most `secs`) until `v` logs that its consensus runs.
async fn running(v: &NodeProcess, secs: u64) {
    let start = Instant::now();
    while !v.log().contains("validator consensus running") {
        assert!(
            start.elapsed() < Duration::from_secs(secs),
            "consensus does not run:\n{}",
            v.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The evidence records `v` holds (`GET /v1/evidence`).
async fn evidence(v: &NodeProcess) -> Vec<Value> {
    let page: Value = reqwest::get(format!("{}/v1/evidence", v.url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    page["evidence"].as_array().cloned().unwrap_or_default()
}

/// Names in `dir` starting with `prefix`.
fn named(dir: &Path, prefix: &str) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with(prefix))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_validator_that_voted_rejoins_from_a_snapshot_without_conflicting_votes() {
    let _heavy = heavy();
    let started = Instant::now();
    let tmp = tempfile::tempdir().unwrap();
    let mut vs = testnet(tmp.path());
    for v in vs.iter_mut() {
        v.start_with(&["--validator"]).await;
    }
    let genesis: Value = vs[0].client().genesis().await.unwrap();
    let chain_id = genesis["chain_id"].as_str().unwrap().to_string();
    let load = FaucetLoad::start(
        vs[..3].iter().map(NodeProcess::url).collect(),
        &chain_id,
        Duration::from_millis(10),
    );

    // A snapshot (of a block with its own certificate) served by validator 0, and validator 3
    // voting past it.
    let wait = Instant::now();
    let snapshot = loop {
        if let Some(h) = snapshot_heights(&vs[0].url()).await.into_iter().max() {
            break h;
        }
        assert!(
            wait.elapsed() < Duration::from_secs(40),
            "validator 0 serves no snapshot: head {:?}\n{}",
            head(&vs[0]).await,
            vs[0].log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(snapshot > 0);
    same_head(&vs, &[0, 1, 2, 3], snapshot + 3, 30).await;

    // Validator 3 killed; it loses its database, keeps its keys (its beacon share too), sign
    // state and consensus storage (an old backup), and joins from validator 0's snapshot.
    let view_before = consensus_view(&vs[3]).await;
    vs[3].kill();
    let data3 = vs[3].dir.join("data");
    let kept = [
        "genesis.json",
        "sequencer.wif",
        "consensus.key",
        "beacon_share.json",
        "sign-state.json",
        "consensus",
    ];
    for entry in std::fs::read_dir(&data3).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        if !kept.contains(&name.as_str()) {
            let p = entry.path();
            if p.is_dir() {
                std::fs::remove_dir_all(&p).unwrap();
            } else {
                std::fs::remove_file(&p).unwrap();
            }
        }
    }
    assert!(data3.join("sign-state.json").is_file() && data3.join("consensus").is_dir());
    let peer = vs[0].url();
    vs[3]
        .start_with(&["--validator", "--snapshot-from", &peer])
        .await;
    let log = vs[3].log();
    let base = joined_height(&log);
    assert!(
        base >= snapshot,
        "validator 3 joined at {base}, validator 0 served {snapshot} already"
    );
    // Its chain starts at the snapshot's block.
    for (h, status) in [(base - 1, 410), (base, 200)] {
        let got = reqwest::get(format!("{}/v1/blocks/{h}", vs[3].url()))
            .await
            .unwrap()
            .status()
            .as_u16();
        assert_eq!(got, status, "block {h} on validator 3");
    }
    // What the earlier run left is set aside, and consensus starts past its views.
    assert_eq!(named(&data3, "sign-state.json.before-join-").len(), 1);
    assert_eq!(named(&data3, "consensus.before-join-").len(), 1);
    let (floor, floor_view) = rejoined(&vs[3], 90).await;
    assert!(
        floor > base && floor_view > view_before + 2,
        "validator 3 was in view {view_before} when killed; it rejoined at block {floor}, view \
         {floor_view} (base {base})"
    );
    let (h0, _) = head(&vs[0]).await;
    let (caught, _) = same_head(&vs, &[0, 1, 2, 3], h0, 60).await;
    eprintln!(
        "validator 3 (in view {view_before} when killed) joined at {base}, started consensus at \
         block {floor} (view {floor_view}) and reached the head {caught} in {:?} (total {:?})",
        Instant::now() - wait,
        started.elapsed()
    );
    running(&vs[3], 30).await;
    // Its journal's owner is marked once the journal holds something.
    let marked = Instant::now();
    while !data3.join("consensus.started").is_file() {
        assert!(
            marked.elapsed() < Duration::from_secs(20),
            "no consensus.started"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // Validator 3 loses only its consensus journal: refused without a node to follow, rejoins
    // in place with one (validator 1). Meanwhile validators 0 to 2 make blocks: a rejoin
    // waits for blocks finalized without it.
    assert!(
        vs[3].terminate(Duration::from_secs(20)).success(),
        "{}",
        vs[3].log()
    );
    std::fs::remove_dir_all(data3.join("consensus")).unwrap();
    let config3 = vs[3].dir.join("node.toml");
    let out = gamechain(
        tmp.path(),
        None,
        &["node", "--config", config3.to_str().unwrap(), "--validator"],
    );
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !out.status.success() && text.contains("holds no consensus journal"),
        "a validator without its journal started: {text}"
    );
    let peer1 = vs[1].url();
    vs[3]
        .start_with(&["--validator", "--snapshot-from", &peer1])
        .await;
    let (floor2, view2) = rejoined(&vs[3], 90).await;
    assert!(floor2 > caught && view2 > floor_view, "{floor2} {view2}");
    let (h0, _) = head(&vs[0]).await;
    same_head(&vs, &[0, 1, 2, 3], h0, 60).await;
    running(&vs[3], 30).await;

    // Validator 0 stopped: 1, 2 and 3 are a quorum only if 3 votes.
    assert!(
        vs[0].terminate(Duration::from_secs(20)).success(),
        "{}",
        vs[0].log()
    );
    let load = {
        let _ = load.stop().await;
        FaucetLoad::start(
            vs[1..].iter().map(NodeProcess::url).collect(),
            &chain_id,
            Duration::from_millis(10),
        )
    };
    let (h1, _) = head(&vs[1]).await;
    let made = at_least(&vs, 1, h1 + 10, 30).await;
    same_head(&vs, &[1, 2, 3], made, 30).await;

    // Validator 3 restarted: its directory starts at the snapshot's block.
    assert!(
        vs[3].terminate(Duration::from_secs(20)).success(),
        "{}",
        vs[3].log()
    );
    vs[3]
        .start_with(&["--validator", "--snapshot-from", &peer])
        .await;
    // The API answers before the modules are loaded and consensus decides how to start (which
    // logs the line below): wait for consensus, not just the API.
    running(&vs[3], 60).await;
    assert!(
        vs[3].log().contains("--snapshot-from ignored"),
        "{}",
        vs[3].log()
    );
    let (h1, _) = head(&vs[1]).await;
    let made = at_least(&vs, 1, h1 + 10, 40).await;
    same_head(&vs, &[1, 2, 3], made, 30).await;

    let (h1, _) = head(&vs[1]).await;
    let made = at_least(&vs, 1, h1 + 10, 40).await;
    same_head(&vs, &[1, 2, 3], made, 30).await;
    let sent = load.stop().await;
    for v in &vs[1..] {
        assert_eq!(
            evidence(v).await,
            Vec::<Value>::new(),
            "evidence recorded by {}",
            v.url()
        );
    }
    // Settled (nothing pending, the heads still), then stopped and verified.
    let settled = Instant::now();
    let at = loop {
        let (at, _) = same_head(&vs, &[1, 2, 3], made, 30).await;
        let mut pending = 0;
        for v in &vs[1..] {
            pending += v.client().status().await.map_or(1, |s| s.pending);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        if pending == 0 && same_head(&vs, &[1, 2, 3], at, 30).await.0 == at {
            break at;
        }
        assert!(
            settled.elapsed() < Duration::from_secs(30),
            "the validators did not settle: {pending} transactions pending"
        );
    };
    for v in vs[1..].iter_mut() {
        assert!(
            v.terminate(Duration::from_secs(20)).success(),
            "{}",
            v.log()
        );
    }
    let reports: Vec<_> = vs[1..]
        .iter()
        .map(|v| verify_data(tmp.path(), &v.dir.join("data"), false))
        .collect();
    for (i, r) in reports.iter().enumerate() {
        assert_eq!(
            (&r.0, &r.1, &r.2),
            (&reports[0].0, &reports[0].1, &reports[0].2),
            "validator {}'s data directory",
            i + 1
        );
    }
    assert_eq!(reports[2].3, base, "validator 3 verifies from its snapshot");
    assert_eq!(reports[0].3, 0, "validator 1 verifies from genesis");
    let (h0_final, ..) = verify_data(tmp.path(), &vs[0].dir.join("data"), true);
    assert!(h0_final <= at);
    eprintln!(
        "validator snapshot rejoin: base {base}, floors {floor} and {floor2}, head {at}, {sent} \
         transactions after validator 0 stopped, {:?} in all",
        started.elapsed()
    );
}
