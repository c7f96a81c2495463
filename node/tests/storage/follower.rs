//! `gamechain node --follow URL` on the real binary: one sequencer and two followers on
//! loopback under a game workload. Transactions go to the sequencer and, forwarded, through a
//! follower; one follower is SIGKILLed half-way and restarted (it catches up from its own head),
//! and SIGKILLed again while it catches up (in the middle of a batch of blocks, or near it).
//! Both followers then serve exactly the sequencer's block, and so state root, at every height,
//! and each follower's own data directory passes `gamechain verify`. A follower of a sequencer
//! that serves a block whose receipt was changed stops before it, names the block, the
//! transaction and the field in its log, and keeps serving the blocks it verified. A follower
//! tiers the uploads it replays up to Cranelift in its own background compile, as a sequencer
//! does, and serves the sequencer's blocks before and after.

use crate::common;

use gamechain_ledger::rusqlite;
use std::time::Duration;

use crate::common::replay::{play_one_game_on, verify_json, workload, Follower};
use crate::common::NodeProcess;
use gamechain_client::client::{BlockRef, Client};
use gamechain_ledger::genesis_setup::TICTACTOE_WASM;
use gamechain_ledger::storage::codec;
use gamechain_runtime::chain::{Action, Network, SecretKey};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_followers_reach_the_sequencers_root_at_every_height() {
    let tmp = tempfile::tempdir().unwrap();
    let (seq_dir, a_dir, b_dir) = (
        tmp.path().join("seq"),
        tmp.path().join("a"),
        tmp.path().join("b"),
    );
    for d in [&seq_dir, &a_dir, &b_dir] {
        std::fs::create_dir_all(d).unwrap();
    }
    let mut sequencer = NodeProcess::new(&seq_dir, "block_interval_ms = 200");
    sequencer.start().await;
    let seq = sequencer.client();
    let mut a = Follower::new(&a_dir, &sequencer.url());
    // B keeps its own compiled-module cache (checked below), not the tests' shared one.
    let own_cache = format!(
        "compiled_dir = \"{}\"",
        b_dir.join("data").join("compiled").display()
    );
    let mut b = Follower::with_config(&b_dir, &sequencer.url(), &own_cache);
    a.start().await;
    b.start().await;

    workload(&seq, 4).await;
    // A transaction sent to a follower is forwarded, included, and served by the follower.
    let key = SecretKey::generate(Network::Testnet);
    let via_a = a
        .node
        .client()
        .send_and_wait(
            &key,
            Action::Faucet {
                token: "GOLD".into(),
            },
            Duration::from_secs(30),
        )
        .await
        .unwrap();
    assert!(via_a.receipt.ok);
    assert_eq!(seq.tx(&via_a.txid).await.unwrap().txid(), via_a.txid);

    // B dies; the chain goes on; B restarts and catches up. It compiled the modules through
    // its compiled-module cache, and the restart reads them from there: no entry is rewritten.
    let compiled = b_dir.join("data").join("compiled");
    let entries = || -> Vec<(std::path::PathBuf, std::time::SystemTime)> {
        let mut v: Vec<_> = std::fs::read_dir(&compiled)
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| e.path().extension().is_some_and(|x| x == "gcm"))
            .map(|e| (e.path(), e.metadata().unwrap().modified().unwrap()))
            .collect();
        v.sort();
        v
    };
    let cached = entries();
    assert!(!cached.is_empty(), "{}", compiled.display());
    // A run marker says the follower runs; killed, it stays, and the restart checks the
    // database and rehashes the state as a sequencer's does.
    let marker = b_dir.join("data").join("node.running");
    assert!(marker.exists(), "{}", marker.display());
    assert!(!b.log().contains("database quick_check ok"), "{}", b.log());
    b.kill();
    assert!(marker.exists());
    workload(&seq, 4).await;
    // Killed again while it catches up (it commits the blocks it has fetched in batches, one
    // SQLite transaction each, so it may die in the middle of one): the next start finds a
    // consistent database and head record, and goes on from its own head.
    b.start().await;
    tokio::time::sleep(Duration::from_millis(common::random_below(20, 1))).await;
    b.kill();
    b.start().await;
    assert_eq!(entries(), cached, "the restart recompiled");
    assert!(
        b.log().contains("database quick_check ok") && b.log().contains("unclean=true"),
        "{}",
        b.log()
    );
    workload(&seq, 2).await;

    let head = seq.status().await.unwrap().height;
    a.reach(head).await;
    b.reach(head).await;
    let (ca, cb) = (a.node.client(), b.node.client());
    for h in 0..=head {
        let want = seq.block(BlockRef::Height(h)).await.unwrap();
        for (name, c) in [("a", &ca), ("b", &cb)] {
            let got = c.block(BlockRef::Height(h)).await.unwrap();
            assert_eq!(
                got.header.header.state_root, want.header.header.state_root,
                "follower {name}, height {h}"
            );
            assert_eq!(got, want, "follower {name}, block {h}");
        }
    }
    let account = ca.account(&key.address()).await.unwrap();
    assert_eq!(account.nonce, 1);
    // Followers are caught up and live: new blocks reach them, and their own WebSocket
    // subscribers, as the sequencer makes them.
    let mut sub = cb.subscribe_blocks().await.unwrap();
    let next = seq.status().await.unwrap().height + 2;
    a.reach(next).await;
    b.reach(next).await;
    let pushed = tokio::time::timeout(Duration::from_secs(10), sub.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(pushed.height() > head);
    assert_eq!(
        pushed,
        seq.block(BlockRef::Height(pushed.height())).await.unwrap()
    );

    // A clean stop (SIGTERM) removes the marker: the next start checks nothing.
    assert!(a.terminate(Duration::from_secs(30)).success());
    assert!(!a_dir.join("data").join("node.running").exists());

    // Each follower's own database verifies from genesis.
    for dir in [&a_dir, &b_dir] {
        let (code, report) =
            verify_json(dir, &["--data", dir.join("data").to_str().unwrap()]).await;
        assert_eq!(code, 0, "{report}");
        assert!(report["head_height"].as_u64().unwrap() >= head);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_stops_at_a_block_that_does_not_verify_and_says_why() {
    let tmp = tempfile::tempdir().unwrap();
    let (seq_dir, f_dir) = (tmp.path().join("seq"), tmp.path().join("f"));
    std::fs::create_dir_all(&seq_dir).unwrap();
    std::fs::create_dir_all(&f_dir).unwrap();
    let mut sequencer = NodeProcess::new(&seq_dir, "block_interval_ms = 60000");
    sequencer.start().await;
    workload(&sequencer.client(), 2).await;
    assert!(sequencer.terminate(Duration::from_secs(20)).success());

    // The sequencer now serves one receipt that is not what its transaction does.
    let db = rusqlite::Connection::open(seq_dir.join("data/chain.sqlite")).unwrap();
    // Schema 2 (`storage.rs`): a receipt is stored compressed against its transaction's body.
    let (height, txid, body, mut receipt) = {
        let mut stmt = db
            .prepare("SELECT id, txid, body, receipt FROM txs ORDER BY id")
            .unwrap();
        let mut rows = stmt.query([]).unwrap();
        loop {
            let row = rows.next().unwrap().expect("a stored move");
            let body = match row.get_ref(2).unwrap() {
                rusqlite::types::ValueRef::Text(t) => String::from_utf8(t.to_vec()).unwrap(),
                rusqlite::types::ValueRef::Blob(b) => codec::decode_body(b).unwrap(),
                other => panic!("a body column holds {other:?}"),
            };
            let receipt =
                codec::unpack_receipt(row.get_ref(3).unwrap().as_blob().unwrap(), &body).unwrap();
            if receipt.events.iter().any(|e| e.kind == "tictactoe.moved") {
                let id: i64 = row.get(0).unwrap();
                let txid: Vec<u8> = row.get(1).unwrap();
                break (id >> 20, txid, body, receipt);
            }
        }
    };
    receipt.fuel_used += 7;
    db.execute(
        "UPDATE txs SET receipt = ?1 WHERE txid = ?2",
        rusqlite::params![codec::pack_receipt(&receipt, &body), txid],
    )
    .unwrap();
    drop(db);
    sequencer.start().await;
    assert!(sequencer.client().status().await.unwrap().height >= height as u64);

    let mut f = Follower::new(&f_dir, &sequencer.url());
    f.start().await;
    f.reach(height as u64 - 1).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !f.log().contains("does not verify") {
        assert!(std::time::Instant::now() < deadline, "{}", f.log());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let log = f.log();
    assert!(
        log.contains(&format!("block {height} does not verify"))
            && log.contains("receipt.fuel_used")
            && log.contains(&hex::encode(&txid)),
        "{log}"
    );
    // It applied nothing from that block on, and still serves what it verified.
    let status = f.node.client().status().await.unwrap();
    assert_eq!(status.height, height as u64 - 1);
    let below = f
        .node
        .client()
        .block(BlockRef::Height(height as u64 - 1))
        .await
        .unwrap();
    let want = sequencer
        .client()
        .block(BlockRef::Height(height as u64 - 1))
        .await
        .unwrap();
    assert_eq!(below, want);
}

/// `gamechain_tier_up_total{result}` on `url`'s `/metrics` (0 before the first).
async fn tier_ups(url: &str, result: &str) -> u64 {
    let text = reqwest::get(format!("{}/metrics", url.trim_end_matches('/')))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let name = format!("gamechain_tier_up_total{{result=\"{result}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&name))
        .map_or(0, |v| v.trim().parse::<f64>().unwrap() as u64)
}

/// Sends `action` from `who` and waits for its receipt, which must be ok.
async fn ok(client: &Client, who: &SecretKey, action: Action) {
    let included = client
        .send_and_wait(who, action, Duration::from_secs(30))
        .await
        .unwrap();
    assert!(included.receipt.ok, "{:?}", included.receipt);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_tiers_up_the_uploads_it_replays() {
    let tmp = tempfile::tempdir().unwrap();
    let (seq_dir, f_dir) = (tmp.path().join("seq"), tmp.path().join("f"));
    std::fs::create_dir_all(&seq_dir).unwrap();
    std::fs::create_dir_all(&f_dir).unwrap();
    // The sequencer does not tier up (its compile would compete with the follower's), and the
    // follower's budget is far above tic-tac-toe's compile on a loaded machine: this test is
    // about the follower doing it, not about its budget. The follower keeps its own compiled
    // cache: the tests' shared one may already hold the upload's Cranelift code (another test
    // deploys the same bytes), and then nothing would be compiled here.
    let mut sequencer = NodeProcess::new(&seq_dir, "block_interval_ms = 200\ntier_up = false");
    sequencer.start().await;
    let seq = sequencer.client();
    let own_cache = format!(
        "tier_up_budget_ms = 120000\ncompiled_dir = \"{}\"",
        f_dir.join("own-compiled").display()
    );
    let mut follower = Follower::with_config(&f_dir, &sequencer.url(), &own_cache);
    follower.start().await;
    let f_url = follower.node.url();
    assert_eq!(tier_ups(&f_url, "tiered").await, 0);

    // An upload: the follower loads it (Winch) when it replays the deploy, and tiers it up.
    let author = SecretKey::generate(Network::Testnet);
    let faucet = Action::Faucet {
        token: "GOLD".into(),
    };
    ok(&seq, &author, faucet).await;
    // Tic-tac-toe with a custom section of its own: the same game under another code hash, so
    // the follower's compiled-module cache does not have it (the genesis tic-tac-toe's
    // Cranelift code is there) and the tier-up compiles in a child process.
    let mut wasm = TICTACTOE_WASM.to_vec();
    wasm.extend_from_slice(&[0, 4, 1, b'x', 0xAB, 0xCD]);
    ok(&seq, &author, Action::deploy("ttt2", wasm)).await;
    let first = play_one_game_on(&seq, "ttt2", 10).await;
    seq.wait_for_receipt(&first, Duration::from_secs(30))
        .await
        .unwrap();
    let start = std::time::Instant::now();
    // Until the metric counts it and the log names it (the log line comes after the count).
    let tiered_line = |log: &str| {
        log.lines()
            .any(|l| l.contains("module tiered up to Cranelift") && l.contains("\"ttt2\""))
    };
    loop {
        let log = follower.log();
        if tier_ups(&f_url, "tiered").await == 1 && tiered_line(&log) {
            break;
        }
        let gave_up = [
            tier_ups(&f_url, "abandoned").await,
            tier_ups(&f_url, "failed").await,
        ];
        assert!(
            gave_up == [0, 0] && start.elapsed() < Duration::from_secs(150),
            "no tier-up on the follower ({gave_up:?} abandoned, failed; {:?} since the game); \
             its log:\n{log}",
            start.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Played on the tiered module now: the same blocks, roots and receipts as the sequencer's.
    let last = play_one_game_on(&seq, "ttt2", 20).await;
    seq.wait_for_receipt(&last, Duration::from_secs(30))
        .await
        .unwrap();
    let head = seq.status().await.unwrap().height;
    follower.reach(head).await;
    let fc = follower.node.client();
    for h in 0..=head {
        let want = seq.block(BlockRef::Height(h)).await.unwrap();
        assert_eq!(
            fc.block(BlockRef::Height(h)).await.unwrap(),
            want,
            "height {h}"
        );
    }
    assert!(!follower.log().contains("does not verify"));
    // It stops cleanly with its tier-up thread running (nothing left to compile).
    assert!(follower.terminate(Duration::from_secs(30)).success());
    assert!(!f_dir.join("data").join("node.running").exists());
}
