//! What the fair-play attacks share: a node on a short-interval chain, the pump (an attacker
//! sending cheap transactions as fast as the node takes them, to make blocks), and [`Ledger`],
//! the GOLD conservation check run after every block a test makes.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use gamechain_client::client::{Client, Included};
use gamechain_runtime::chain::{Action, SecretKey, TxBody};
use serde_json::json;

use crate::common::{faucet, NodeProcess};

/// The test chains' `min_block_interval_ms`.
pub const INTERVAL_MS: u64 = 100;

/// How long the attacker pumps.
pub const PUMP: Duration = Duration::from_secs(10);

/// Transactions per batch the attacker posts (`POST /v1/txs`).
const BATCH: usize = 200;

/// What the faucet pays (the node's default), GOLD base units.
pub const FAUCET: u128 = 100_000;

/// Wall-clock time, ms since the Unix epoch.
pub fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// A node on a chain with blocks at least [`INTERVAL_MS`] apart, plus `extra` config lines.
pub async fn node_with(dir: &std::path::Path, extra: &str) -> NodeProcess {
    let mut node = NodeProcess::new(
        dir,
        &format!("min_block_interval_ms = {INTERVAL_MS}\nblock_interval_ms = 60000\n{extra}"),
    );
    node.start().await;
    node
}

/// [`node_with`] nothing else.
pub async fn node(dir: &std::path::Path) -> NodeProcess {
    node_with(dir, "").await
}

pub fn ttt(op: serde_json::Value) -> Action {
    Action::game("tictactoe", &op)
}

/// Sends failing transactions (a move in a game that does not exist: cheap, included, and a
/// block each when blocks followed transactions) from `key` as fast as the node takes them,
/// until `until`; returns how many the node accepted.
async fn pump(client: Client, chain_id: String, key: SecretKey, until: Instant) -> u64 {
    let mut nonce = client.account(&key.address()).await.unwrap().next_nonce;
    let mut accepted = 0;
    while Instant::now() < until {
        let txs: Vec<_> = (0..BATCH as u64)
            .map(|i| {
                TxBody {
                    chain_id: chain_id.clone(),
                    from: key.address(),
                    nonce: nonce + i,
                    action: ttt(json!({"kind": "move", "id": "ffffffffffffffff", "cell": 0})),
                }
                .sign(&key)
            })
            .collect();
        let results = client.post_txs(&txs).await.unwrap();
        let ok = results.iter().filter(|r| r.is_ok()).count() as u64;
        accepted += ok;
        if ok == BATCH as u64 {
            nonce += ok;
        } else {
            // A full mempool refused some: carry on from the nonce the node expects.
            nonce = client.account(&key.address()).await.unwrap().next_nonce;
        }
    }
    accepted
}

/// Pumps from `keys` in parallel for [`PUMP`]; returns the transactions accepted.
pub async fn pump_all(client: &Client, keys: &[SecretKey]) -> u64 {
    let chain_id = client.chain_id().await.unwrap();
    let until = Instant::now() + PUMP;
    let total = Arc::new(AtomicU64::new(0));
    let tasks: Vec<_> = keys
        .iter()
        .map(|k| {
            let (client, chain_id, key, total) =
                (client.clone(), chain_id.clone(), k.clone(), total.clone());
            tokio::spawn(async move {
                let n = pump(client, chain_id, key, until).await;
                total.fetch_add(n, Ordering::Relaxed);
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    total.load(Ordering::Relaxed)
}

/// GOLD conservation on a chain where only the test's own accounts hold GOLD (a free chain:
/// no fees): the balances of every account the test funded plus every escrow it names always
/// add up to what the faucet paid. [`Ledger::send`] checks it after each block it waits for.
pub struct Ledger {
    client: Client,
    accounts: BTreeSet<String>,
    minted: u128,
}

impl Ledger {
    /// A ledger watching the escrows `escrows` (`module:<id>`).
    pub fn new(client: &Client, escrows: &[&str]) -> Ledger {
        Ledger {
            client: client.clone(),
            accounts: escrows.iter().map(|e| e.to_string()).collect(),
            minted: 0,
        }
    }

    /// Funds `key` from the faucet.
    pub async fn fund(&mut self, key: &SecretKey) {
        let r = self.send(key, faucet()).await;
        assert!(r.receipt.ok, "{:?}", r.receipt);
    }

    /// Sends `action` from `key`, waits for its block, then checks conservation.
    pub async fn send(&mut self, key: &SecretKey, action: Action) -> Included {
        let is_faucet = matches!(action, Action::Faucet { .. });
        self.accounts.insert(key.address());
        let r = self
            .client
            .send_and_wait(key, action, Duration::from_secs(60))
            .await
            .unwrap();
        if is_faucet && r.receipt.ok {
            self.minted += FAUCET;
        }
        self.check().await;
        r
    }

    /// Sum of the watched balances == minted, or panics naming each balance.
    pub async fn check(&self) {
        let mut total = 0u128;
        let mut seen = Vec::new();
        for a in &self.accounts {
            let b = self.client.account(a).await.unwrap().balance("GOLD").0;
            total += b;
            seen.push(format!("{a}: {b}"));
        }
        assert_eq!(
            total, self.minted,
            "GOLD not conserved: {} minted, balances {seen:?}",
            self.minted
        );
    }

    /// The GOLD balance of `account`.
    pub async fn gold(&self, account: &str) -> u128 {
        self.client
            .account(account)
            .await
            .unwrap()
            .balance("GOLD")
            .0
    }
}
