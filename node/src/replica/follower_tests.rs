//! Tests of the follower (`follower.rs`) against a real sequencer started in-process: batches
//! commit exactly what single blocks commit, and a bad block in a batch is reported at its height.

use super::*;
use gamechain_ledger::rusqlite;
use std::path::Path;
use std::sync::Mutex;

use gamechain_chain::key_file::read_key_file;
use gamechain_ledger::rusqlite::types::Value as Sql;
use gamechain_runtime::chain::{Action, Network, SecretKey};
use gamechain_sdk::Amount;
use serde_json::json;

use crate::server::node::NodeHandle;
use gamechain_ledger::chain::BlockSink;

fn config(dir: &Path) -> NodeConfig {
    NodeConfig {
        data_dir: dir.to_path_buf(),
        listen: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        rate_limit_per_sec: 0,
        wasm_instances: 4,
        min_block_interval_ms: 5,
        compiled_dir: crate::test_compiled_dir(),
        ..NodeConfig::default()
    }
}

/// The heights the feed was told of, in order.
#[derive(Default)]
struct Heights(Mutex<Vec<u64>>);

impl BlockSink for Heights {
    fn committed(&self, block: &Block) {
        self.0.lock().unwrap().push(block.height());
    }
}

/// A sequencer with blocks of transactions of every kind (faucets, transfers, a failing
/// transfer, games with events), and its blocks `1..=head`.
async fn sequencer(dir: &Path) -> (NodeHandle, Client, Vec<Block>) {
    let node = NodeHandle::start(config(dir)).await.unwrap();
    node.ready().await;
    let client = Client::new(&node.url()).unwrap();
    let mut before: Option<SecretKey> = None;
    for round in 0..8u32 {
        let key = SecretKey::generate(Network::Testnet);
        let faucet = Action::Faucet {
            token: "GOLD".into(),
        };
        client.send(&key, faucet).await.unwrap();
        let game = json!({"kind": "create", "stake": (round + 1).to_string()});
        client
            .send(&key, Action::game("tictactoe", &game))
            .await
            .unwrap();
        let to = before.as_ref().unwrap_or(&key).address();
        let transfer = |amount| Action::Transfer {
            to: to.clone(),
            token: "GOLD".into(),
            amount: Amount(amount),
        };
        client.send(&key, transfer(5)).await.unwrap();
        let last = client.send(&key, transfer(u128::MAX / 2)).await.unwrap();
        let included = client
            .wait_for_receipt(&last, Duration::from_secs(30))
            .await
            .unwrap();
        assert!(!included.receipt.ok, "too much to transfer");
        before = Some(key);
    }
    let head = client.status().await.unwrap().height;
    let mut blocks = Vec::new();
    for h in 1..=head {
        blocks.push(client.block(BlockRef::Height(h)).await.unwrap());
    }
    assert!(blocks.len() >= 8, "{} blocks", blocks.len());
    (node, client, blocks)
}

/// A follower of `upstream` in `dir`, its feed, and its writer.
async fn follower(dir: &Path, upstream: &Client) -> (Arc<Chain>, Arc<Heights>, Storage) {
    let (config, upstream) = (config(dir), upstream.clone());
    let rt = tokio::runtime::Handle::current();
    let open = config.clone();
    let opened = tokio::task::spawn_blocking(move || open_replica(&open, &upstream, &rt))
        .await
        .unwrap()
        .unwrap();
    let heights = Arc::new(Heights::default());
    let chain = Chain::new(
        config.ledger(),
        opened.ctx,
        opened.genesis_hash,
        opened.head,
        config.ledger().db_path(),
        heights.clone(),
    );
    (Arc::new(chain), heights, opened.storage)
}

/// Applies `blocks` through [`apply_blocks`], each call with the blocks left at hand;
/// returns the calls' outcomes.
fn apply_all(
    chain: &Chain,
    storage: &mut Storage,
    blocks: &[Block],
    bounds: BatchBounds,
) -> Vec<Applied> {
    let ctx = &chain.ctx;
    let mut queue: VecDeque<Block> = blocks.iter().cloned().collect();
    let mut calls = Vec::new();
    while let Some(first) = queue.pop_front() {
        let first = check_block(ctx, first, 1);
        let mut more = || queue.pop_front().map(|b| check_block(ctx, b, 1));
        let applied = apply_blocks(chain, storage, first, &mut more, bounds).unwrap();
        let stop = applied.end.is_some();
        calls.push(applied);
        if stop {
            break;
        }
    }
    calls
}

/// Every row of every table of the database at `path`, table by table.
fn rows(path: &Path) -> Vec<(String, Vec<Vec<Sql>>)> {
    let db = rusqlite::Connection::open(path).unwrap();
    let tables: Vec<String> = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    tables
        .into_iter()
        .map(|t| {
            let mut stmt = db
                .prepare(&format!("SELECT * FROM {t} ORDER BY 1"))
                .unwrap();
            let n = stmt.column_count();
            let all = stmt
                .query_map([], |r| (0..n).map(|i| r.get::<_, Sql>(i)).collect())
                .unwrap()
                .collect::<Result<Vec<Vec<Sql>>, _>>()
                .unwrap();
            (t, all)
        })
        .collect()
}

fn no_bound() -> BatchBounds {
    BatchBounds {
        blocks: usize::MAX,
        work: Duration::from_secs(3600),
        bytes: usize::MAX,
    }
}

/// Blocks committed in batches leave exactly the rows, head and state hash that blocks
/// committed one at a time leave; each batch stays within its bounds; the feed is told of
/// every block, once, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_commit_exactly_what_single_blocks_commit() {
    let tmp = tempfile::tempdir().unwrap();
    let (node, client, blocks) = sequencer(&tmp.path().join("seq")).await;
    let n = blocks.len();
    let heights: Vec<u64> = (1..=n as u64).collect();
    let mut dbs = Vec::new();
    let mut heads = Vec::new();
    for (name, bounds, most) in [
        // One block at a time (the first block's bound already reached).
        (
            "single",
            BatchBounds {
                blocks: 1,
                ..no_bound()
            },
            1,
        ),
        (
            "three",
            BatchBounds {
                blocks: 3,
                ..no_bound()
            },
            3,
        ),
        ("all", no_bound(), n),
        (
            "work",
            BatchBounds {
                work: Duration::ZERO,
                ..no_bound()
            },
            1,
        ),
        (
            "bytes",
            BatchBounds {
                bytes: 1,
                ..no_bound()
            },
            1,
        ),
    ] {
        let dir = tmp.path().join(name);
        let (chain, told, mut storage) = follower(&dir, &client).await;
        let (c, b) = (chain.clone(), blocks.clone());
        let (calls, storage) = tokio::task::spawn_blocking(move || {
            let calls = apply_all(&c, &mut storage, &b, bounds);
            (calls, storage)
        })
        .await
        .unwrap();
        let committed: Vec<u64> = calls
            .iter()
            .flat_map(|a| a.committed.iter().map(|&(h, _)| h))
            .collect();
        assert_eq!(committed, heights, "{name}");
        for a in &calls {
            assert!(a.end.is_none() && a.leftover.is_none(), "{name}");
            assert!((1..=most).contains(&a.committed.len()), "{name}");
        }
        assert_eq!(calls.len(), n.div_ceil(most), "{name}");
        assert_eq!(*told.0.lock().unwrap(), heights, "{name}");
        let head = chain.head();
        assert_eq!(head.header, blocks[n - 1].header, "{name}");
        heads.push(head.state_hash.to_bytes());
        drop(head);
        drop(storage);
        dbs.push((name, rows(&config(&dir).ledger().db_path())));
    }
    let (first, want) = &dbs[0];
    assert!(
        want.iter().any(|(t, r)| t == "txs" && r.len() > 16),
        "{want:?}"
    );
    for (name, got) in &dbs[1..] {
        assert_eq!(got, want, "{name} against {first}");
    }
    assert!(heads.windows(2).all(|w| w[0] == w[1]));
    node.shutdown().await.unwrap();
}

/// A block that does not verify in the middle of a batch: the blocks before it are
/// committed (and told to the feed), it is reported with its own height, and nothing after
/// it is taken. A second block signed by the sequencer at a committed height is an
/// equivocation; the same block again is nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_block_in_a_batch_is_reported_at_its_height_after_the_good_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let seq_dir = tmp.path().join("seq");
    let (node, client, mut blocks) = sequencer(&seq_dir).await;
    let bad = blocks
        .iter()
        .position(|b| b.height() >= 4 && !b.txs.is_empty())
        .expect("a block with transactions");
    let bad_height = blocks[bad].height();
    blocks[bad].txs[0].receipt.fuel_used += 1;
    let (chain, told, storage) = follower(&tmp.path().join("f"), &client).await;
    let (c, b) = (chain.clone(), blocks.clone());
    let (calls, mut storage) = tokio::task::spawn_blocking(move || {
        let mut storage = storage;
        (apply_all(&c, &mut storage, &b, no_bound()), storage)
    })
    .await
    .unwrap();
    let good: Vec<u64> = (1..bad_height).collect();
    assert_eq!(calls.len(), 1);
    let applied = &calls[0];
    assert_eq!(
        applied
            .committed
            .iter()
            .map(|&(h, _)| h)
            .collect::<Vec<_>>(),
        good
    );
    match &applied.end {
        Some(End::Failed(h, ReplayError::Diverged(d))) => {
            assert_eq!((*h, d.height), (bad_height, bad_height));
            assert_eq!(d.field, "receipt.fuel_used");
        }
        _ => panic!("not a divergence"),
    }
    assert!(applied.leftover.is_none());
    assert_eq!(*told.0.lock().unwrap(), good);
    assert_eq!(chain.head().header.header.height, bad_height - 1);
    let stored = Storage::open_reader(&config(&tmp.path().join("f")).ledger().db_path()).unwrap();
    assert_eq!(stored.head_height().unwrap(), Some(bad_height - 1));

    // The same block again: nothing. Another one signed by the sequencer: equivocation.
    let key = read_key_file(&config(&seq_dir).ledger().key_path()).unwrap();
    let mut other = blocks[1].header.header.clone();
    other.time_ms += 1;
    let mut twin = blocks[1].clone();
    twin.header = SignedHeader::sign(other, &key);
    let c = chain.clone();
    let (same, twin) = tokio::task::spawn_blocking(move || {
        let mut none = || None;
        let mut apply = |b: &Block| {
            let checked = check_block(&c.ctx, b.clone(), 1);
            apply_blocks(&c, &mut storage, checked, &mut none, no_bound()).unwrap()
        };
        (apply(&blocks[1]), apply(&twin))
    })
    .await
    .unwrap();
    assert!(same.committed.is_empty() && same.end.is_none());
    assert!(matches!(twin.end, Some(End::Equivocation(_))));
    node.shutdown().await.unwrap();
}
