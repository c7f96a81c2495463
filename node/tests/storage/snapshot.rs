//! Joining from a state snapshot (`docs/validators.md`, "Joining from a snapshot") on the real
//! binary: a sequencer with some state takes snapshots every 5 blocks; a follower of it (also
//! taking snapshots) serves as a snapshot peer. That peer is made to lie: a chunk altered on
//! its disk (the manifest's hash no longer matches), then the manifest fixed up to the altered
//! chunk (only the signed state root can tell: the chunk's own proof against it, as it
//! arrives): a new follower joining from it is refused both times, names the peer and what it
//! lied about, keeps no false chunk and commits nothing. The same data directory
//! then joins from the sequencer's snapshot (its chunks already on disk, as if an earlier start
//! had died before the import: none is fetched again), follows new blocks and reaches the sequencer's
//! head with the same block hash and state root; blocks below its base answer `410 pruned`.
//! With `retain_blocks` it deletes old blocks as its snapshots move on, and
//! `gamechain verify --data` verifies it from its snapshot base and says so; the sequencer,
//! an archive node, still verifies from genesis.

use gamechain_ledger::rusqlite;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::replay::{verify_json, workload, Follower};
use crate::common::{heavy, snapshot_heights, NodeProcess, BIN};
use gamechain_client::client::{BlockRef, Client};
use gamechain_runtime::chain::{Action, Network, SecretKey};

/// Runs `gamechain node --config <dir>/node.toml --follow <upstream> --snapshot-from <peer>`
/// and expects it to exit within 60 s (a refused join): returns its exit code and output.
fn refused_join(dir: &Path, upstream: &str, peer: &str) -> (i32, String) {
    let mut child = Command::new(BIN)
        .arg("node")
        .arg("--config")
        .arg(dir.join("node.toml"))
        .args(["--follow", upstream, "--snapshot-from", peer])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            let out = child.wait_with_output().unwrap();
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            return (out.status.code().unwrap_or(-1), text);
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "the join did not end within 60 s:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The blocks stored in the database at `db`.
fn stored_blocks(db: &Path) -> i64 {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row("SELECT COUNT(*) FROM blocks", [], |r| r.get(0))
        .unwrap_or(0)
}

/// Waits until `client` and `want` have the same head hash at a height of at least `min`;
/// returns it.
async fn same_head(client: &Client, want: &Client, min: u64) -> u64 {
    let start = Instant::now();
    loop {
        if let (Ok(a), Ok(b)) = (client.status().await, want.status().await) {
            if a.height >= min && a.height == b.height && a.head_hash == b.head_hash {
                assert_eq!(a.state_root, b.state_root);
                return a.height;
            }
            if a.height >= min && a.height < b.height {
                // Compare at our height: the same block.
                let (x, y) = (
                    client.block(BlockRef::Height(a.height)).await.unwrap(),
                    want.block(BlockRef::Height(a.height)).await.unwrap(),
                );
                if x == y && start.elapsed() > Duration::from_secs(2) {
                    return a.height;
                }
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no common head at or above {min}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits up to 60 s for the node at `url` to serve a snapshot.
async fn await_snapshot(url: &str) {
    let start = Instant::now();
    while snapshot_heights(url).await.is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{url} serves no snapshot"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The body of `GET url`.
async fn get_bytes(url: String) -> bytes::Bytes {
    reqwest::get(url).await.unwrap().bytes().await.unwrap()
}

/// Sends faucet transactions until `client`'s chain is at least at `height` (a workload's
/// transactions may share blocks, so how many blocks it makes depends on timing).
async fn reach_height(client: &Client, height: u64) {
    let start = Instant::now();
    while client.status().await.unwrap().height < height {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "not at height {height}"
        );
        client
            .send_and_wait(
                &SecretKey::generate(Network::Testnet),
                Action::Faucet {
                    token: "GOLD".into(),
                },
                Duration::from_secs(30),
            )
            .await
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_joins_from_a_snapshot_and_a_lying_peer_is_refused() {
    // Three node processes with waits in seconds: not beside a testnet of four (a loaded full
    // run once starved the peer of its first snapshot for 120 s).
    let _heavy = heavy();
    let tmp = tempfile::tempdir().unwrap();
    let (seq_dir, peer_dir, joiner_dir) = (
        tmp.path().join("seq"),
        tmp.path().join("peer"),
        tmp.path().join("joiner"),
    );
    for d in [&seq_dir, &peer_dir, &joiner_dir] {
        std::fs::create_dir_all(d).unwrap();
    }
    // Blocks only for transactions (the chain stands still between workloads), a snapshot
    // every 5 blocks.
    let mut sequencer = NodeProcess::new(
        &seq_dir,
        "block_interval_ms = 600000\nsnapshot_every_blocks = 5\nsnapshot_keep = 2",
    );
    sequencer.start().await;
    let seq = sequencer.client();
    workload(&seq, 3).await;
    // A snapshot every 5 blocks: past the first.
    reach_height(&seq, 6).await;

    // The peer: a follower that takes snapshots of its own.
    let mut peer = Follower::new(&peer_dir, &sequencer.url());
    std::fs::write(
        peer_dir.join("node.toml"),
        std::fs::read_to_string(peer_dir.join("node.toml")).unwrap()
            + "snapshot_every_blocks = 5\n",
    )
    .unwrap();
    peer.start().await;
    let peer_url = peer.node.url();
    // 15 s alone; one loaded full run once took over 60 s (the follower's log follows a miss).
    let start = Instant::now();
    while snapshot_heights(&peer_url).await.is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "not within 120 s: the peer serves a snapshot; its log:\n{}",
            peer.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Stopped, altered on disk, restarted serving what it has (and taking no new snapshot).
    assert!(peer.terminate(Duration::from_secs(30)).success());
    let snaps = peer_dir.join("data").join("snapshots");
    let liar_height = *snapshot_heights_on_disk(&snaps).first().unwrap();
    let chunk = snaps.join(liar_height.to_string()).join("chunk-000000");
    let mut bytes = std::fs::read(&chunk).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&chunk, &bytes).unwrap();
    let toml = std::fs::read_to_string(peer_dir.join("node.toml"))
        .unwrap()
        .replace("snapshot_every_blocks = 5", "snapshot_every_blocks = 0");
    std::fs::write(peer_dir.join("node.toml"), toml).unwrap();
    peer.start().await;

    // A joiner is refused: the chunk does not hash to the manifest's hash.
    NodeProcess::new(&joiner_dir, "");
    let (code, out) = refused_join(&joiner_dir, &sequencer.url(), &peer_url);
    assert_ne!(code, 0, "{out}");
    assert!(
        out.contains(&format!("the snapshot served by {peer_url} is refused"))
            && out.contains("chunk 0 hashes to"),
        "{out}"
    );
    let db = joiner_dir.join("data").join("chain.sqlite");
    assert_eq!(stored_blocks(&db), 0, "a refused join commits nothing");

    // The manifest made to match the altered chunk: only the signed state root tells.
    let manifest_path = snaps.join(liar_height.to_string()).join("manifest.json");
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest_path).unwrap()).unwrap();
    let sha = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&bytes));
    manifest["chunks"][0]["sha256"] = serde_json::Value::String(sha);
    std::fs::write(&manifest_path, serde_json::to_vec(&manifest).unwrap()).unwrap();
    let (code, out) = refused_join(&joiner_dir, &sequencer.url(), &peer_url);
    assert_ne!(code, 0, "{out}");
    // The chain has proofs: the chunk itself is checked against the root as it arrives (not
    // the whole state after every chunk is in), and it is not kept.
    assert!(
        out.contains(&format!("the snapshot served by {peer_url} is refused"))
            && out.contains("chunk 0: against the block's state root"),
        "{out}"
    );
    assert!(
        !joiner_dir
            .join("data/snapshots")
            .join(format!(".join-{liar_height}"))
            .join("chunk-000000")
            .exists(),
        "a chunk that does not check is not kept"
    );
    assert_eq!(stored_blocks(&db), 0, "a refused join commits nothing");
    drop(peer);

    // The same directory joins from the sequencer's snapshot, and then follows. As if an
    // earlier start had fetched every chunk and died before the import: the chunks on disk are
    // checked and kept, none is fetched again.
    let seq_snapshot = *snapshot_heights(&sequencer.url()).await.first().unwrap();
    let from = seq_dir
        .join("data/snapshots")
        .join(seq_snapshot.to_string());
    let partial = joiner_dir
        .join("data/snapshots")
        .join(format!(".join-{seq_snapshot}"));
    std::fs::create_dir_all(&partial).unwrap();
    for e in std::fs::read_dir(&from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), partial.join(e.file_name())).unwrap();
    }
    let mut joiner = Follower::new(&joiner_dir, &sequencer.url());
    std::fs::write(
        joiner_dir.join("node.toml"),
        std::fs::read_to_string(joiner_dir.join("node.toml")).unwrap()
            + "snapshot_every_blocks = 5\nsnapshot_keep = 1\nretain_blocks = 2\n",
    )
    .unwrap();
    joiner
        .start_with(&["--snapshot-from", &sequencer.url()])
        .await;
    let jc = joiner.node.client();
    let base = {
        let log = joiner.log();
        assert!(
            log.contains("joined from a state snapshot") && log.contains("fetched=0"),
            "{log}"
        );
        let status = jc.status().await.unwrap();
        assert!(status.height >= seq_snapshot, "{status:?}");
        // Its oldest block is the snapshot's: everything below answers 410 pruned.
        let r = reqwest::get(format!("{}/v1/blocks/0", joiner.node.url()))
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 410);
        let v: serde_json::Value = r.json().await.unwrap();
        assert_eq!(v["error"]["code"], "pruned", "{v}");
        let mut base = seq_snapshot;
        while jc.block(BlockRef::Height(base - 1)).await.is_ok() {
            base -= 1;
        }
        base
    };
    assert!(base >= seq_snapshot);
    workload(&seq, 2).await;
    let head = seq.status().await.unwrap().height;
    let at = same_head(&jc, &seq, head).await;
    assert!(at >= head);

    // Retention: the joiner's snapshots move on and blocks below its oldest one go.
    workload(&seq, 2).await;
    let joiner_url = joiner.node.url();
    let start = Instant::now();
    loop {
        let kept = snapshot_heights(&joiner_url).await;
        if matches!(kept.last(), Some(&s) if s > base)
            && jc.block(BlockRef::Height(base)).await.is_err()
        {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the joiner does not prune below its snapshot ({kept:?}):\n{}",
            joiner.log()
        );
        // One more block: the joiner deletes old blocks when it commits one.
        seq.send_and_wait(
            &SecretKey::generate(Network::Testnet),
            Action::Faucet {
                token: "GOLD".into(),
            },
            Duration::from_secs(30),
        )
        .await
        .unwrap();
    }
    assert!(joiner.terminate(Duration::from_secs(30)).success());
    let (code, report) = verify_json(
        &joiner_dir,
        &["--data", joiner_dir.join("data").to_str().unwrap()],
    )
    .await;
    assert_eq!(code, 0, "{report}");
    assert!(report["base_height"].as_u64().unwrap() > base, "{report}");

    // The sequencer (an archive node) still verifies from genesis.
    assert!(sequencer.terminate(Duration::from_secs(30)).success());
    let (code, report) = verify_json(
        &seq_dir,
        &["--data", seq_dir.join("data").to_str().unwrap()],
    )
    .await;
    assert_eq!(code, 0, "{report}");
    assert!(report["base_height"].is_null(), "{report}");
}

/// The complete snapshot heights under a `snapshots` directory, newest first.
fn snapshot_heights_on_disk(dir: &Path) -> Vec<u64> {
    let mut v: Vec<u64> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.unwrap().file_name().into_string().ok()?.parse().ok())
        .collect();
    v.sort_unstable_by(|a, b| b.cmp(a));
    v
}

/// Issue 45 #1. A relaunched testnet that kept its sequencer key (and beacon key, and chain id)
/// is another chain whose blocks pass every check of a block alone under this chain's genesis.
/// A peer serves that chain's snapshot, blocks and headers but this chain's genesis, and the
/// joiner follows and joins through that one URL (so there is no other node to compare with).
/// The join is refused: the snapshot's block does not descend from this genesis's block 0,
/// which the joiner computes itself. Nothing is committed. (Before the headers' proof, this
/// join succeeded and showed the other chain's balances.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_of_another_chain_signed_by_the_same_key_is_refused_through_one_url() {
    let _heavy = heavy();
    let tmp = tempfile::tempdir().unwrap();
    let (real_dir, other_dir, joiner_dir) = (
        tmp.path().join("real"),
        tmp.path().join("relaunched"),
        tmp.path().join("joiner"),
    );
    for d in [&real_dir, &other_dir, &joiner_dir] {
        std::fs::create_dir_all(d.join("data")).unwrap();
    }
    let config = "block_interval_ms = 600000\nsnapshot_every_blocks = 5\nsnapshot_keep = 2";
    let mut real = NodeProcess::new(&real_dir, config);
    real.start().await;
    workload(&real.client(), 1).await;

    // The relaunch: the same keys, a new genesis (its own time), more blocks and balances.
    let mut other = NodeProcess::new(&other_dir, config);
    for key in ["sequencer.wif", "beacon.key"] {
        std::fs::copy(
            real_dir.join("data").join(key),
            other_dir.join("data").join(key),
        )
        .unwrap();
    }
    std::thread::sleep(Duration::from_millis(5));
    other.start().await;
    let rich = SecretKey::generate(Network::Testnet);
    for _ in 0..3 {
        other
            .client()
            .send_and_wait(
                &rich,
                Action::Faucet {
                    token: "GOLD".into(),
                },
                Duration::from_secs(30),
            )
            .await
            .unwrap();
    }
    workload(&other.client(), 2).await;
    reach_height(&other.client(), 6).await;
    await_snapshot(&other.url()).await;
    let real_genesis = get_bytes(format!("{}/v1/genesis", real.url())).await;
    let other_genesis = get_bytes(format!("{}/v1/genesis", other.url())).await;
    assert_ne!(
        real_genesis, other_genesis,
        "the relaunch has a genesis of its own"
    );

    // The lying peer: this chain's genesis, everything else the relaunched chain's, its
    // genesis hash (in the manifest) replaced by this chain's.
    let (real_hash, other_hash) = (
        real.client().status().await.unwrap().genesis_hash,
        other.client().status().await.unwrap().genesis_hash,
    );
    let upstream = other.url();
    let genesis = real_genesis.clone();
    let app = axum::Router::new().fallback(move |req: axum::extract::Request| {
        let (upstream, genesis) = (upstream.clone(), genesis.clone());
        let (real_hash, other_hash) = (real_hash.clone(), other_hash.clone());
        async move {
            let path = req
                .uri()
                .path_and_query()
                .map(|p| p.as_str().to_string())
                .unwrap_or_default();
            if path == "/v1/genesis" {
                return axum::response::Response::builder()
                    .header("content-type", "application/json")
                    .body(axum::body::Body::from(genesis))
                    .unwrap();
            }
            let r = reqwest::get(format!("{upstream}{path}")).await.unwrap();
            let status = r.status().as_u16();
            let kind = r
                .headers()
                .get("content-type")
                .map(|v| v.to_str().unwrap().to_string())
                .unwrap_or_default();
            let mut body = r.bytes().await.unwrap().to_vec();
            if kind.starts_with("application/json") {
                body = String::from_utf8(body)
                    .unwrap()
                    .replace(&other_hash, &real_hash)
                    .into_bytes();
            }
            axum::response::Response::builder()
                .status(status)
                .header("content-type", kind)
                .body(axum::body::Body::from(body))
                .unwrap()
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let liar = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });

    NodeProcess::new(&joiner_dir, "");
    let joiner = joiner_dir.clone();
    let peer = liar.clone();
    let (code, out) = tokio::task::spawn_blocking(move || refused_join(&joiner, &peer, &peer))
        .await
        .unwrap();
    assert_ne!(code, 0, "{out}");
    assert!(
        out.contains(&format!("the snapshot served by {liar} is refused"))
            && out.contains("its block 0 is")
            && out.contains("another chain"),
        "{out}"
    );
    let db = joiner_dir.join("data").join("chain.sqlite");
    assert_eq!(stored_blocks(&db), 0, "a refused join commits nothing");

    // The real chain's own snapshot is accepted through one URL, with the headers below it.
    workload(&real.client(), 2).await;
    reach_height(&real.client(), 6).await;
    await_snapshot(&real.url()).await;
    let mut joiner = Follower::new(&joiner_dir, &real.url());
    joiner.start_with(&["--snapshot-from", &real.url()]).await;
    assert!(
        joiner
            .log()
            .contains("descends from this genesis's block 0"),
        "{}",
        joiner.log()
    );
    let headers = |url: String| get_bytes(format!("{url}/v1/headers?from=0&count=3"));
    let served = headers(joiner.node.url()).await;
    assert_eq!(
        served,
        headers(real.url()).await,
        "the joiner serves the same proof"
    );
    assert_eq!(
        gamechain_chain::wire::headers::decode_headers(&served)
            .unwrap()
            .len(),
        3
    );
}
