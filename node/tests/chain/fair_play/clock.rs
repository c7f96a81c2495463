//! Attacks on the clock. Before block time was consensus a block was made as soon as a
//! transaction arrived, so whoever sent transactions moved the clock: the seed's 150-block
//! tic-tac-toe timeout could be claimed 14 s after one's own move. Now every block is at least
//! `min_block_interval_ms` of block time after its parent, and the sequencer never stamps a
//! time ahead of its own clock (`runtime/chain/src/genesis/clock.rs`, `node/ledger/src/sequencer.rs`):
//! N blocks take at least N intervals of real time whatever anyone sends.
//!
//! The chains here use a 100 ms interval so that the tests run in seconds; the default chain's
//! is 1,000 ms.

use std::time::{Duration, Instant};

use gamechain_client::client::BlockRef;
use gamechain_runtime::chain::{Network, SecretKey};
use serde_json::json;

use super::support::{node, pump_all, ttt, wall_ms, Ledger, INTERVAL_MS};
use crate::common::faucet;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pumping_transactions_cannot_make_blocks_faster_than_the_interval() {
    let tmp = tempfile::tempdir().unwrap();
    let node = node(tmp.path()).await;
    let client = node.client();
    let keys: Vec<SecretKey> = (0..4)
        .map(|_| SecretKey::generate(Network::Testnet))
        .collect();
    for k in &keys {
        client
            .send_and_wait(k, faucet(), Duration::from_secs(10))
            .await
            .unwrap();
    }
    let h0 = client.status().await.unwrap().height;
    let started = Instant::now();
    let sent = pump_all(&client, &keys).await;
    let elapsed = started.elapsed();
    let h1 = client.status().await.unwrap().height;
    let most = elapsed.as_millis() as u64 / INTERVAL_MS + 1;
    println!(
        "pumped {sent} transactions in {:.1} s: heights {h0} -> {h1} ({} blocks; at most {most} allowed)",
        elapsed.as_secs_f64(),
        h1 - h0
    );
    assert!(sent > 2_000, "the attacker sent only {sent} transactions");
    assert!(
        h1 - h0 <= most,
        "{} blocks in {elapsed:?}: heights advanced faster than one per {INTERVAL_MS} ms",
        h1 - h0
    );
    // Every block keeps the spacing, and the blocks grew instead: most of what was sent is in
    // them.
    let mut parent = client.block(BlockRef::Height(h0)).await.unwrap();
    let mut included = 0;
    let mut largest = 0;
    for h in h0 + 1..=h1 {
        let b = client.block(BlockRef::Height(h)).await.unwrap();
        let (t, p) = (b.header.header.time_ms, parent.header.header.time_ms);
        assert!(
            t >= p + INTERVAL_MS,
            "block {h} at {t} is less than {INTERVAL_MS} ms after its parent at {p}"
        );
        included += b.txs.len();
        largest = largest.max(b.txs.len());
        parent = b;
    }
    println!("{included} of them included by then, at most {largest} in one block");
    assert!(
        largest > 1,
        "the transactions were not gathered into blocks"
    );
    assert!(
        included as u64 >= sent / 2,
        "only {included} of {sent} accepted transactions were included"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_staked_tictactoe_timeout_cannot_be_claimed_by_pumping_blocks() {
    let tmp = tempfile::tempdir().unwrap();
    let node = node(tmp.path()).await;
    let client = node.client();
    let mut ledger = Ledger::new(&client, &["module:tictactoe"]);
    let (x, o) = (
        SecretKey::generate(Network::Testnet),
        SecretKey::generate(Network::Testnet),
    );
    let helpers: Vec<SecretKey> = (0..3)
        .map(|_| SecretKey::generate(Network::Testnet))
        .collect();
    for k in [&x, &o].into_iter().chain(&helpers) {
        ledger.fund(k).await;
    }
    let create = ledger
        .send(&x, ttt(json!({"kind": "create", "stake": "100"})))
        .await;
    assert!(create.receipt.ok, "{:?}", create.receipt);
    let id = create.txid[..16].to_string();
    let join = ledger
        .send(&o, ttt(json!({"kind": "join", "id": id})))
        .await;
    assert!(join.receipt.ok, "{:?}", join.receipt);
    let moved = ledger
        .send(&x, ttt(json!({"kind": "move", "id": id, "cell": 4})))
        .await;
    assert!(moved.receipt.ok, "{:?}", moved.receipt);
    let moved_at = client
        .block(BlockRef::Height(moved.height))
        .await
        .unwrap()
        .header
        .header
        .time_ms;
    let before = client.account(&x.address()).await.unwrap().balance("GOLD");

    // O goes quiet. X (with helper keys) pumps failing transactions and tries to claim the
    // timeout all along.
    let pumping = {
        let (client, helpers) = (client.clone(), helpers.clone());
        tokio::spawn(async move { pump_all(&client, &helpers).await })
    };
    let claim = ttt(json!({"kind": "claim_timeout", "id": id}));
    let mut early = 0;
    let won = loop {
        let r = ledger.send(&x, claim.clone()).await;
        if r.receipt.ok {
            break r;
        }
        let error = r.receipt.error.clone().unwrap_or_default();
        assert!(
            error.starts_with("invalid: timeout can be claimed from height"),
            "{error}"
        );
        early += 1;
    };
    let claimed_wall = wall_ms();
    let sent = pumping.await.unwrap();
    let won_at = client
        .block(BlockRef::Height(won.height))
        .await
        .unwrap()
        .header
        .header
        .time_ms;
    let needed = 150 * INTERVAL_MS;
    println!(
        "moved at block {} ({moved_at}); {early} early claims refused while {sent} transactions were pumped; \
         claimed at block {} ({won_at}): {} ms of block time, {} ms of real time after the move's block",
        moved.height,
        won.height,
        won_at - moved_at,
        claimed_wall - moved_at
    );
    assert!(won.height >= moved.height + 150);
    assert!(
        won_at - moved_at >= needed,
        "the timeout was claimed {} ms of block time after the move; 150 blocks need {needed}",
        won_at - moved_at
    );
    assert!(
        claimed_wall - moved_at >= needed,
        "the timeout was claimed {} ms of real time after the move; 150 blocks need {needed}",
        claimed_wall - moved_at
    );
    // The rules, not the pump, paid: both stakes to X, nothing left in escrow.
    let after = client.account(&x.address()).await.unwrap().balance("GOLD");
    assert_eq!(after.0, before.0 + 200);
    let escrow = client.account("module:tictactoe").await.unwrap();
    assert_eq!(escrow.balance("GOLD").0, 0);
}

/// Issue 45, attack 5: a web page of another origin, opened by the developer running a node with
/// `dev_clock = true` on loopback, posts `/v1/dev/clock`. The CORS preflight lets any origin read
/// the API, but the clock refuses every request whose `Origin` is not the node's own: `403
/// cross_origin`, and the clock did not move. Requests without an `Origin` (the CLI, curl) and
/// from the node's own pages still move it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_of_another_origin_cannot_move_the_dev_clock() {
    let tmp = tempfile::tempdir().unwrap();
    let node = super::support::node_with(tmp.path(), "dev_clock = true").await;
    let url = node.url();
    let http = reqwest::Client::new();
    let post = |origin: Option<String>| {
        let mut r = http
            .post(format!("{url}/v1/dev/clock"))
            .json(&json!({ "advance_ms": 3_600_000 }));
        if let Some(o) = origin {
            r = r.header("origin", o);
        }
        r.send()
    };
    let offset = || async {
        let r = http
            .post(format!("{url}/v1/dev/clock"))
            .json(&json!({ "advance_ms": 1 }))
            .send()
            .await
            .unwrap();
        let v: serde_json::Value = r.json().await.unwrap();
        v["offset_ms"].as_u64().unwrap()
    };
    let before = offset().await;
    for origin in ["http://evil.example", "null", "http://127.0.0.1:1"] {
        let r = post(Some(origin.to_string())).await.unwrap();
        assert_eq!(r.status(), 403, "{origin}");
        let body: serde_json::Value = r.json().await.unwrap();
        assert_eq!(body["error"]["code"], "cross_origin", "{body}");
    }
    assert_eq!(
        offset().await,
        before + 1,
        "the refused requests did not move the clock"
    );
    // The node's own origin (its pages) and no origin (the CLI) still move it.
    let own = url.clone();
    assert!(post(Some(own)).await.unwrap().status().is_success());
    assert!(post(None).await.unwrap().status().is_success());
    assert_eq!(offset().await, before + 2 + 2 * 3_600_000);
}
