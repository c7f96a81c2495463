//! The real `gamechain node` process, killed and stopped:
//!
//! - `sigkill_under_load_loses_no_receipt`: a stream of faucet, transfer and tic-tac-toe
//!   transactions from several keys; every txid whose receipt was seen is recorded; the process
//!   gets SIGKILL at a random moment while it commits; restarted on the same data directory,
//!   every recorded txid is still included with the same height, index and receipt, the chain
//!   is intact from the head back to genesis, and the node accepts new transactions. Three
//!   kill/restart rounds.
//! - `sigterm_stops_cleanly_and_restarts_where_it_was`: SIGTERM makes the process exit 0 within
//!   seconds, and a restart serves the same head, state root, receipts and balances.
//!
//! They live in `node/tests/` because only there does cargo build the binary and name it
//! (`CARGO_BIN_EXE_gamechain`). Loopback only; every wait is bounded.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::{check_chain, random_below, NodeProcess};
use gamechain_client::client::{Client, Included};
use gamechain_runtime::chain::{Action, Network, SecretKey};
use gamechain_sdk::Amount;
use serde_json::json;

/// Concurrent senders of the load.
const SENDERS: usize = 4;
/// Kill/restart rounds.
const ROUNDS: usize = 3;
/// A receipt is waited for this long before the sender gives up.
const RECEIPT_WAIT: Duration = Duration::from_secs(20);
/// The longest a round's load may run before the kill (a bound, never reached in practice).
const MAX_LOAD: Duration = Duration::from_secs(60);

/// The i-th transaction of a sender's cycle: faucet, transfer to the next sender, create a
/// one-unit table, cancel it (its id is the create's txid prefix), and again.
fn next_action(i: usize, to: &str, last_create: &Option<String>) -> Action {
    match i % 4 {
        0 => Action::Faucet {
            token: "GOLD".into(),
        },
        1 => Action::Transfer {
            to: to.to_string(),
            token: "GOLD".into(),
            amount: Amount(7),
        },
        2 => Action::game("tictactoe", &json!({"kind": "create", "stake": "1"})),
        _ => {
            let id = last_create
                .as_deref()
                .map(|t| &t[..16])
                .unwrap_or("0000000000000000");
            Action::game("tictactoe", &json!({"kind": "cancel", "id": id}))
        }
    }
}

/// Sends `key`'s transactions one after the other until a request fails (the node was killed)
/// or `MAX_LOAD` runs out, recording every receipt seen.
async fn send_until_killed(
    client: Client,
    key: SecretKey,
    to: String,
    seen: Arc<Mutex<Vec<Included>>>,
) {
    let start = Instant::now();
    let mut last_create = None;
    for i in 0.. {
        if start.elapsed() > MAX_LOAD {
            return;
        }
        let action = next_action(i, &to, &last_create);
        let Ok(included) = client.send_and_wait(&key, action, RECEIPT_WAIT).await else {
            return;
        };
        if i % 4 == 2 {
            last_create = Some(included.txid.clone());
        }
        seen.lock().unwrap().push(included);
    }
}

/// Asserts every recorded transaction is included exactly as its receipt said.
async fn check_recorded(client: &Client, seen: &[Included]) {
    for want in seen {
        let got = client
            .tx(&want.txid)
            .await
            .unwrap_or_else(|e| panic!("tx {} after restart: {e}", want.txid));
        assert_eq!(
            (got.height(), got.index(), got.receipt()),
            (Some(want.height), Some(want.index), Some(&want.receipt)),
            "tx {} changed after the restart",
            want.txid
        );
    }
}

/// A fresh key's faucet call goes through.
async fn accepts_new_transactions(client: &Client) {
    let key = SecretKey::generate(Network::Testnet);
    let included = client
        .send_and_wait(
            &key,
            Action::Faucet {
                token: "GOLD".into(),
            },
            RECEIPT_WAIT,
        )
        .await
        .unwrap();
    assert!(included.receipt.ok, "{:?}", included.receipt);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_under_load_loses_no_receipt() {
    let dir = tempfile::tempdir().unwrap();
    let mut node = NodeProcess::new(dir.path(), "");
    node.start().await;
    let keys: Vec<SecretKey> = (0..SENDERS)
        .map(|_| SecretKey::generate(Network::Testnet))
        .collect();
    let mut recorded: Vec<Included> = Vec::new();

    for round in 0..ROUNDS {
        let client = node.client();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let senders: Vec<_> = (0..SENDERS)
            .map(|k| {
                let to = keys[(k + 1) % SENDERS].address();
                tokio::spawn(send_until_killed(
                    client.clone(),
                    keys[k].clone(),
                    to,
                    seen.clone(),
                ))
            })
            .collect();

        // Kill once the load is flowing (some receipts seen), after a further random delay.
        let warm_up = 5 + random_below(20, round as u64) as usize;
        let start = Instant::now();
        while seen.lock().unwrap().len() < warm_up {
            assert!(
                start.elapsed() < MAX_LOAD,
                "round {round}: no load reached the node:\n{}",
                node.log()
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tokio::time::sleep(Duration::from_millis(random_below(400, 100 + round as u64))).await;
        let pending_at_kill = client.status().await.map(|s| s.pending).unwrap_or(0);
        node.kill();
        for sender in senders {
            tokio::time::timeout(RECEIPT_WAIT * 2, sender)
                .await
                .expect("a sender stops after the kill")
                .unwrap();
        }
        let seen = std::mem::take(&mut *seen.lock().unwrap());
        eprintln!(
            "round {round}: killed after {} receipts ({pending_at_kill} pending) in {:?}",
            seen.len(),
            start.elapsed()
        );
        recorded.extend(seen);

        node.start().await;
        let client = node.client();
        check_recorded(&client, &recorded).await;
        let head = check_chain(&client).await;
        assert!(head.height() >= recorded.iter().map(|i| i.height).max().unwrap_or(0));
        accepts_new_transactions(&client).await;
    }
    assert!(
        recorded.len() >= ROUNDS * 5,
        "{} receipts recorded",
        recorded.len()
    );
    let status = node.terminate(Duration::from_secs(30));
    assert!(status.success(), "{status}\n{}", node.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_stops_cleanly_and_restarts_where_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let mut node = NodeProcess::new(dir.path(), "");
    node.start().await;
    let client = node.client();
    let (alice, bob) = (
        SecretKey::generate(Network::Testnet),
        SecretKey::generate(Network::Testnet),
    );
    let mut recorded = Vec::new();
    let transfer = Action::Transfer {
        to: bob.address(),
        token: "GOLD".into(),
        amount: Amount(1_234),
    };
    let create = Action::game("tictactoe", &json!({"kind": "create", "stake": "100"}));
    for action in [
        Action::Faucet {
            token: "GOLD".into(),
        },
        transfer,
        create,
    ] {
        let included = client
            .send_and_wait(&alice, action, RECEIPT_WAIT)
            .await
            .unwrap();
        assert!(included.receipt.ok, "{:?}", included.receipt);
        recorded.push(included);
    }
    let before = client.status().await.unwrap();
    let accounts = [
        alice.address(),
        bob.address(),
        "module:tictactoe".to_string(),
    ];
    let mut balances = Vec::new();
    for a in &accounts {
        balances.push(client.account(a).await.unwrap());
    }

    let started = Instant::now();
    let status = node.terminate(Duration::from_secs(20));
    assert!(status.success(), "SIGTERM exit: {status}\n{}", node.log());
    let log = node.log();
    assert!(log.contains("SIGTERM received"), "{log}");
    eprintln!("stopped {:?} after SIGTERM", started.elapsed());

    node.start().await;
    let client = node.client();
    let after = client.status().await.unwrap();
    assert_eq!(
        (after.height, &after.head_hash, &after.state_root),
        (before.height, &before.head_hash, &before.state_root)
    );
    check_recorded(&client, &recorded).await;
    for (a, want) in accounts.iter().zip(&balances) {
        assert_eq!(
            &client.account(a).await.unwrap(),
            want,
            "{a} after the restart"
        );
    }
    check_chain(&client).await;
    accepts_new_transactions(&client).await;
    assert!(node.terminate(Duration::from_secs(20)).success());
}
