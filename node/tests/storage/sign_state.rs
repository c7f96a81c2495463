//! The sequencer never equivocates, on the real binary: a sequencer and a follower started
//! before the damage; the sequencer's database then loses blocks it had signed and published
//! (its write-ahead log deleted after a SIGKILL; its main file replaced by an older copy).
//! Each time the restart refuses (non-zero exit, the message names `sign-state.json` and
//! `--restore-from`) and signs nothing; `--restore-from <follower>` fetches, verifies and
//! commits the lost blocks, the node resumes at the signed block, and the follower follows
//! the new blocks (no second block at a published height). A follower that is shown a
//! second signed block at a height it has names the equivocation and stops following.

use std::path::Path;
use std::time::Duration;

use crate::common::replay::Follower;
use crate::common::{faucet_blocks, gamechain, NodeProcess};
use gamechain_client::client::{BlockRef, Client};
use serde_json::Value;

const WAIT: Duration = Duration::from_secs(30);

/// The database's files.
const DB_FILES: [&str; 3] = ["chain.sqlite", "chain.sqlite-wal", "chain.sqlite-shm"];

/// `<data>/sign-state.json` as JSON.
fn sign_state(node: &NodeProcess) -> Value {
    let text = std::fs::read_to_string(node.dir.join("data").join("sign-state.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Runs `gamechain node --config <dir>/node.toml` expecting it to refuse to start; returns its
/// exit code and stderr.
async fn refused_start(dir: &Path) -> (Option<i32>, String) {
    let dir = dir.to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        let config = dir.join("node.toml");
        gamechain(&dir, None, &["node", "--config", config.to_str().unwrap()])
    })
    .await
    .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The header hash of block `height` at `client`'s node.
async fn hash_at(client: &Client, height: u64) -> String {
    client
        .block(BlockRef::Height(height))
        .await
        .unwrap()
        .header
        .header
        .hash_hex()
}

/// Stops `node` with SIGTERM; it must exit cleanly within [`WAIT`] (else its status and log).
fn stop(node: &mut NodeProcess) {
    let status = node.terminate(WAIT);
    assert!(
        status.success(),
        "the node exited with {status}:\n{}",
        node.log()
    );
}

/// Asserts the refusal of a damaged database, that it signed nothing, then restores from
/// `follower` and checks the node resumes where it had signed.
async fn refused_then_restored(
    sequencer: &mut NodeProcess,
    follower: &Follower,
    what: &str,
    damaged_head: u64,
) {
    let signed = sign_state(sequencer);
    let (code, stderr) = refused_start(&sequencer.dir).await;
    assert_ne!(code, Some(0), "{what}: the damaged node started:\n{stderr}");
    assert!(
        stderr.contains("sign-state.json")
            && stderr.contains("--restore-from")
            && stderr.contains("lost the blocks")
            && stderr.contains(&format!("the database's head is block {damaged_head}:")),
        "{what}: {stderr}"
    );
    assert_eq!(sign_state(sequencer), signed, "{what}: the refusal signed");

    // The follower (started before the damage) has every signed block.
    let height = signed["height"].as_u64().unwrap();
    let fclient = follower.node.client();
    assert_eq!(
        hash_at(&fclient, height).await,
        signed["hash"].as_str().unwrap()
    );
    sequencer
        .start_with(&["--restore-from", &follower.node.url()])
        .await;
    let client = sequencer.client();
    let status = client.status().await.unwrap();
    assert_eq!(
        (status.height, status.head_hash.as_str()),
        (height, signed["hash"].as_str().unwrap()),
        "{what}: {}",
        sequencer.log()
    );
    assert!(sequencer.log().contains("restored up to the signed block"));
    for h in 1..=height {
        assert_eq!(
            hash_at(&client, h).await,
            hash_at(&fclient, h).await,
            "{what}: block {h}"
        );
    }
    // It resumes: a new block, which the follower verifies and follows.
    let next = faucet_blocks(&client, 1).await;
    assert_eq!(next, height + 1);
    follower.reach(next).await;
    assert_eq!(hash_at(&fclient, next).await, hash_at(&client, next).await);
    assert!(
        !follower.log().contains("equivocation"),
        "{}",
        follower.log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_that_lost_signed_blocks_is_refused_and_restored_from_a_follower() {
    let tmp = tempfile::tempdir().unwrap();
    let (seq_dir, f_dir) = (tmp.path().join("seq"), tmp.path().join("f"));
    for d in [&seq_dir, &f_dir] {
        std::fs::create_dir_all(d).unwrap();
    }
    // Blocks only when transactions arrive, so the follower has every block signed.
    let mut sequencer = NodeProcess::new(&seq_dir, "block_interval_ms = 3600000");
    sequencer.start().await;
    let data = seq_dir.join("data");
    assert!(data.join("sign-state.json").exists());
    let mut follower = Follower::new(&f_dir, &sequencer.url());
    follower.start().await;

    // A backup of the database files, taken after a clean stop.
    faucet_blocks(&sequencer.client(), 2).await;
    stop(&mut sequencer);
    let backup = tmp.path().join("backup");
    std::fs::create_dir_all(&backup).unwrap();
    for f in DB_FILES {
        let _ = std::fs::copy(data.join(f), backup.join(f));
    }
    sequencer.start().await;
    let height = faucet_blocks(&sequencer.client(), 3).await;
    follower.reach(height).await;

    // 1. SIGKILL, and the write-ahead log is lost: the blocks since the last checkpoint go
    //    (here every block: the database is back to block 0).
    sequencer.kill();
    let wal = data.join("chain.sqlite-wal");
    assert!(std::fs::metadata(&wal).unwrap().len() > 0, "no WAL to lose");
    std::fs::remove_file(&wal).unwrap();
    let _ = std::fs::remove_file(data.join("chain.sqlite-shm"));
    refused_then_restored(&mut sequencer, &follower, "WAL deleted", 0).await;

    // 2. The database replaced by the older copy (the backup, at block 2).
    let height = faucet_blocks(&sequencer.client(), 1).await;
    follower.reach(height).await;
    stop(&mut sequencer);
    for f in DB_FILES {
        let _ = std::fs::remove_file(data.join(f));
        if backup.join(f).exists() {
            std::fs::copy(backup.join(f), data.join(f)).unwrap();
        }
    }
    refused_then_restored(&mut sequencer, &follower, "older copy", 2).await;

    // 3. A directory from before sign states: the file is recreated from the head.
    let status = sequencer.client().status().await.unwrap();
    stop(&mut sequencer);
    std::fs::remove_file(data.join("sign-state.json")).unwrap();
    sequencer.start().await;
    assert!(
        sequencer.log().contains("recreating it from the head"),
        "{}",
        sequencer.log()
    );
    assert_eq!(
        sign_state(&sequencer),
        serde_json::json!({"height": status.height, "hash": status.head_hash})
    );
    stop(&mut sequencer);
}

/// A follower that sees a second block, signed by the sequencer, at a height it already has
/// logs the equivocation with both signed headers, stops following, and keeps serving. (The
/// sequencer is made to equivocate by deleting its write-ahead log *and* its sign state.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_names_an_equivocation_and_stops_following() {
    let tmp = tempfile::tempdir().unwrap();
    let (seq_dir, f_dir) = (tmp.path().join("seq"), tmp.path().join("f"));
    for d in [&seq_dir, &f_dir] {
        std::fs::create_dir_all(d).unwrap();
    }
    let mut sequencer = NodeProcess::new(&seq_dir, "block_interval_ms = 3600000");
    sequencer.start().await;
    let mut follower = Follower::new(&f_dir, &sequencer.url());
    follower.start().await;
    let height = faucet_blocks(&sequencer.client(), 3).await;
    follower.reach(height).await;

    sequencer.kill();
    let data = seq_dir.join("data");
    // Everything that remembers the lost blocks goes: the WAL, the sign state and the head
    // record (with either left, the start refuses; `storage_faults.rs`).
    for f in [
        "chain.sqlite-wal",
        "chain.sqlite-shm",
        "sign-state.json",
        "chain.sqlite.head",
    ] {
        let _ = std::fs::remove_file(data.join(f));
    }
    sequencer.start().await;
    let client = sequencer.client();
    let fclient = follower.node.client();
    // New blocks at heights the follower has, until it has seen one (it reconnects within a
    // second, so it sees block 1 or a later one live).
    let mut seen = None;
    for _ in 0..height {
        faucet_blocks(&client, 1).await;
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_secs(5) && seen.is_none() {
            let log = follower.log();
            seen = log.find("equivocation at height ").map(|at| {
                let rest = &log[at + "equivocation at height ".len()..];
                let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                digits.parse::<u64>().unwrap()
            });
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        if seen.is_some() {
            break;
        }
    }
    let at = seen.unwrap_or_else(|| panic!("no equivocation logged:\n{}", follower.log()));
    assert!(at <= height);
    let ours = fclient.block(BlockRef::Height(at)).await.unwrap().header;
    let theirs = client.block(BlockRef::Height(at)).await.unwrap().header;
    assert_ne!(ours.header.hash_hex(), theirs.header.hash_hex());
    let log = follower.log();
    for header in [&ours, &theirs] {
        assert!(
            log.contains(&serde_json::to_string(header).unwrap()),
            "{log}"
        );
    }
    // It no longer follows (the sequencer passes its height), and still serves its own chain.
    let past = faucet_blocks(&client, height as usize + 1).await;
    assert!(past > height);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let status = fclient.status().await.unwrap();
    assert_eq!(status.height, height, "{}", follower.log());
    assert_eq!(
        fclient.block(BlockRef::Height(at)).await.unwrap().header,
        ours
    );
}
