//! No receipt pushed over the WebSocket is lost across SIGKILL with the pipelined commit
//! (`pipeline = true`, `sequencer.rs`): the node pushes a block only once it is durable, so
//! whatever a subscriber got survives a kill, with the same block hash.
//!
//! The real `gamechain node` runs under a steady load (a few keys posting batches of faucet
//! calls and transfers through `POST /v1/txs`, resyncing their nonces after each restart), so
//! that one block is committed while the next executes. A WebSocket subscriber records
//! every block pushed to it. The node is SIGKILLed `GAMECHAIN_WS_KILLS` times (default 10): every
//! other kill lands 0–15 ms after a block with transactions reached the subscriber (just
//! after a commit, while the next block is being written), the others 20–400 ms into the load.
//! After each restart every block pushed since the last kill (and 32 older ones at random) is
//! served again, identical (same hash, same transactions and receipts), the first and last
//! transaction of each is found at its height and index with its receipt, and no block pushed
//! at a height differs from one pushed before; at the end every block pushed is checked. At the end `gamechain verify --data` replays the whole
//! chain (the pipelined blocks are exactly what replay makes).
//!
//! The test fails on a node that pushes a block before it is durable: with the push moved
//! before the sign-state record and the SQLite commit (3 ms before it), it failed at the second
//! kill ("block 10 is not the one pushed"). A push after the sign-state record but before the
//! SQLite commit is safe (a restart commits the recorded block), and passes.
//!
//! `cargo test -p gamechain-node --test node storage::ws_crash -- --nocapture` prints the figures.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::replay::verify_json;
use crate::common::{env_count, load_action, random_below, NodeProcess};
use gamechain_client::client::{Block, BlockRef, Client};
use gamechain_runtime::chain::{Network, SecretKey, TxBody};

use tokio::sync::Notify;

/// Concurrent senders of the load.
const SENDERS: usize = 4;
/// Transactions per `POST /v1/txs` of one sender.
const BATCH: u64 = 10;
/// Pause of a sender between two batches (the load stays below what a debug build on a busy
/// machine commits, so the mempool does not grow without end).
const PAUSE: Duration = Duration::from_millis(40);
/// Older blocks checked again after each restart, at random, beside those pushed since the
/// last one.
const OLDER_CHECKED: u64 = 32;

/// Kills: `GAMECHAIN_WS_KILLS`, default 10.
fn kills() -> usize {
    env_count("GAMECHAIN_WS_KILLS", 10)
}

/// What the subscriber got.
#[derive(Default)]
struct Pushed {
    /// Every block pushed, by height (the first one pushed at each height).
    blocks: BTreeMap<u64, Block>,
    /// Heights of the blocks pushed since the last [`Pushed::take_fresh`].
    fresh: Vec<u64>,
    /// A block pushed at a height where another one had been pushed before.
    conflicts: Vec<String>,
    /// Transactions in the blocks pushed.
    receipts: usize,
}

/// The subscriber: reconnects to `/v1/ws` whenever the connection drops, records every block.
async fn subscribe(
    client: Client,
    pushed: Arc<Mutex<Pushed>>,
    busy_blocks: Arc<AtomicU64>,
    busy: Arc<Notify>,
    stop: Arc<AtomicBool>,
) {
    while !stop.load(Ordering::SeqCst) {
        let Ok(mut sub) = client.subscribe_blocks().await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        while let Ok(Some(block)) = sub.next().await {
            let has_txs = !block.txs.is_empty();
            {
                let mut p = pushed.lock().unwrap();
                let height = block.height();
                match p.blocks.get(&height) {
                    Some(before) if before.hash_hex() != block.hash_hex() => {
                        let conflict = format!(
                            "block {height} was pushed as {} and then as {}",
                            before.hash_hex(),
                            block.hash_hex()
                        );
                        p.conflicts.push(conflict);
                    }
                    Some(_) => {}
                    None => {
                        p.receipts += block.txs.len();
                        p.fresh.push(height);
                        p.blocks.insert(height, block);
                    }
                }
            }
            if has_txs {
                busy_blocks.fetch_add(1, Ordering::SeqCst);
                busy.notify_waiters();
            }
        }
    }
}

/// One sender: batches of `BATCH` transactions at its next nonces, again and again; after a
/// refusal or a lost connection it waits a little and asks for its nonce again.
async fn send_loop(client: Client, key: SecretKey, to: String, stop: Arc<AtomicBool>) {
    let mut i = 0u64;
    while !stop.load(Ordering::SeqCst) {
        let (Ok(chain_id), Ok(account)) = (
            client.chain_id().await,
            client.account(&key.address()).await,
        ) else {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        };
        let txs: Vec<_> = (0..BATCH)
            .map(|n| {
                i += 1;
                let action = load_action(i, &to);
                TxBody {
                    chain_id: chain_id.clone(),
                    from: key.address(),
                    nonce: account.next_nonce + n,
                    action,
                }
                .sign(&key)
            })
            .collect();
        let _ = client.post_txs(&txs).await;
        tokio::time::sleep(PAUSE).await;
    }
}

/// Waits (at most 60 s) until the subscriber has got `n` more blocks with transactions than
/// `from`; returns the count then.
async fn busy_after(counter: &AtomicU64, busy: &Notify, from: u64, node: &NodeProcess) -> u64 {
    let start = Instant::now();
    loop {
        let notified = busy.notified();
        let now = counter.load(Ordering::SeqCst);
        if now > from {
            return now;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no block with transactions reaches the subscriber:\n{}",
            node.log()
        );
        let _ = tokio::time::timeout(Duration::from_millis(100), notified).await;
    }
}

/// Asserts `client` serves the pushed blocks identically (those at `fresh` heights, and
/// [`OLDER_CHECKED`] others at random, all of them with `all`), and the first and last
/// transaction of each block at `fresh` heights at its place with its receipt.
async fn check_pushed(
    client: &Client,
    pushed: &Mutex<Pushed>,
    fresh: &[u64],
    all: bool,
    what: &str,
) {
    let blocks: Vec<Block> = {
        let p = pushed.lock().unwrap();
        let older: Vec<u64> = p
            .blocks
            .keys()
            .copied()
            .filter(|h| !fresh.contains(h))
            .collect();
        let mut picked: Vec<u64> = fresh.to_vec();
        if all || older.len() as u64 <= OLDER_CHECKED {
            picked.extend(&older);
        } else {
            for salt in 0..OLDER_CHECKED {
                picked.push(older[random_below(older.len() as u64, salt) as usize]);
            }
        }
        picked.iter().map(|h| p.blocks[h].clone()).collect()
    };
    for want in &blocks {
        let h = want.height();
        let got = client
            .block(BlockRef::Height(h))
            .await
            .unwrap_or_else(|e| panic!("{what}: block {h}, pushed before, is gone: {e}"));
        assert_eq!(
            got.hash_hex(),
            want.hash_hex(),
            "{what}: block {h} is not the one pushed"
        );
        assert_eq!(&got, want, "{what}: block {h} differs from the one pushed");
        if !fresh.contains(&h) {
            continue;
        }
        let last = want.txs.len().saturating_sub(1);
        for (index, t) in want.txs.iter().enumerate() {
            if index != 0 && index != last {
                continue;
            }
            let txid = t.tx.txid();
            let record = client
                .tx(&txid)
                .await
                .unwrap_or_else(|e| panic!("{what}: tx {txid} of block {h}: {e}"));
            assert_eq!(
                (record.height(), record.index(), record.receipt()),
                (Some(h), Some(index as u64), Some(&t.receipt)),
                "{what}: tx {txid} of block {h}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_receipt_pushed_over_the_websocket_is_lost_across_sigkill() {
    let started = Instant::now();
    let tmp = tempfile::tempdir().unwrap();
    let mut node = NodeProcess::new(
        tmp.path(),
        "block_interval_ms = 200\npipeline = true\nmax_pending = 100000",
    );
    node.start().await;
    let client = node.client();
    let stop = Arc::new(AtomicBool::new(false));
    let pushed = Arc::new(Mutex::new(Pushed::default()));
    let busy_blocks = Arc::new(AtomicU64::new(0));
    let busy = Arc::new(Notify::new());
    let subscriber = tokio::spawn(subscribe(
        client.clone(),
        pushed.clone(),
        busy_blocks.clone(),
        busy.clone(),
        stop.clone(),
    ));
    let keys: Vec<SecretKey> = (0..SENDERS)
        .map(|_| SecretKey::generate(Network::Testnet))
        .collect();
    let senders: Vec<_> = (0..SENDERS)
        .map(|k| {
            let to = keys[(k + 1) % SENDERS].address();
            tokio::spawn(send_loop(client.clone(), keys[k].clone(), to, stop.clone()))
        })
        .collect();
    let kills = kills();
    let mut seen = 0;
    for round in 0..kills {
        // The load reaches the restarted node and the subscriber got a block of it.
        seen = busy_after(&busy_blocks, &busy, seen, &node).await;
        if round % 2 == 0 {
            // Right after a push: the next block is being built or written.
            busy_after(&busy_blocks, &busy, seen, &node).await;
            tokio::time::sleep(Duration::from_millis(random_below(16, round as u64))).await;
        } else {
            tokio::time::sleep(Duration::from_millis(20 + random_below(380, round as u64))).await;
        }
        node.kill();
        let what = format!("kill {round}");
        node.start().await;
        let fresh = std::mem::take(&mut pushed.lock().unwrap().fresh);
        check_pushed(&client, &pushed, &fresh, false, &what).await;
        seen = busy_blocks.load(Ordering::SeqCst);
    }
    stop.store(true, Ordering::SeqCst);
    for s in senders {
        s.await.unwrap();
    }
    let status = client.status().await.unwrap();
    let fresh = std::mem::take(&mut pushed.lock().unwrap().fresh);
    check_pushed(&client, &pushed, &fresh, true, "at the end").await;
    assert!(node.terminate(Duration::from_secs(30)).success());
    subscriber.await.unwrap();
    let (blocks, receipts, conflicts) = {
        let p = pushed.lock().unwrap();
        (p.blocks.len(), p.receipts, p.conflicts.clone())
    };
    assert!(
        conflicts.is_empty(),
        "blocks pushed twice, differently: {conflicts:?}"
    );
    assert!(
        receipts >= kills * BATCH as usize && blocks > kills,
        "only {receipts} receipts in {blocks} blocks were pushed"
    );
    let data = tmp.path().join("data");
    let (code, report) = verify_json(tmp.path(), &["--data", data.to_str().unwrap()]).await;
    assert_eq!(code, 0, "verify: {report}");
    assert!(
        report["head_height"].as_u64().unwrap() >= status.height,
        "{report}"
    );
    eprintln!(
        "ws_crash: kills {kills}, blocks pushed {blocks}, receipts pushed {receipts} (all still \
         there, identical: lost 0), head {}, in {:.1} s",
        status.height,
        started.elapsed().as_secs_f64()
    );
}
