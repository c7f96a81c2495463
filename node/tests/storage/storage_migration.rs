//! Storage schema 2 ("slim storage", `node/ledger/src/store/storage.rs`) against databases of schema
//! 1 as the gamechain before it wrote them. [`v1`] is that gamechain's write and read code for
//! schema 1 (its `MIGRATIONS[0]`, which schema 2 keeps as step 1, and its insert and select
//! statements, copied), the fixture generator of these tests:
//!
//! - `a_version_1_database_migrates_in_place_and_reads_the_same`: a chain of varied blocks
//!   (transfers, failed and fee-paying receipts, odd event data, end-block receipts, a deploy-sized
//!   body, a signature that is not canonical base64, empty blocks) written by `v1`; the node
//!   migrates it on open; every block and transaction reads back as the same JSON, byte for
//!   byte, as `v1` read it before; the head, its state hash, the state and the code are the same;
//!   the same blocks written by schema 2 directly read the same; the migrated database takes new
//!   blocks.
//! - `a_damaged_version_1_database_is_not_migrated`: a txid that is not its body's hash refuses
//!   the migration, and the database stays at version 1, untouched.
//! - `a_migrated_data_directory_keeps_serving_and_verifies`: a real node's data directory,
//!   turned back into schema 1 by `v1`; the node restarts on it (migrating), serves every block
//!   and transaction as the same JSON as before, makes new blocks, and `verify --data` passes.
//! - `a_data_directory_of_the_schema_1_binary_migrates`: the same with a data directory a real
//!   schema 1 binary made and served (`GAMECHAIN_SCHEMA1_BIN`; skipped without it).
//! - `bytes_per_transaction` (ignored: `cargo test -p gamechain-node --release --test node
//!   storage::storage_migration::bytes_per -- --ignored --nocapture`): an in-process node runs `gamechain
//!   bench` workloads (transfers, tic-tac-toe games); their blocks are written to a schema 1 and
//!   a schema 2 database, and it prints the bytes per transaction of each, after `VACUUM`, by
//!   table (`dbstat`).

use crate::common;

use gamechain_ledger::rusqlite;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use crate::common::replay::{verify_json, workload};
use crate::common::NodeProcess;
use gamechain_chain::wire::{Block, IncludedTx, TxRecord};
use gamechain_client::client::BlockRef;
use gamechain_ledger::rusqlite::Connection;
use gamechain_ledger::storage::MIGRATIONS;
use gamechain_node::Storage;
use gamechain_runtime::chain::{
    receipt_root, tx_root, Action, Event, Header, Network, Receipt, SecretKey, SignedHeader,
    SignedTx, StateCommitment, StateHash, TxBody,
};
use gamechain_runtime::WriteSet;
use gamechain_sdk::{Amount, Checkpoint};
use serde_json::json;

/// The schema 1 code of the gamechain before schema 2, kept to make fixtures.
mod v1 {
    use super::*;
    use gamechain_chain::wire::TxStatus;
    use gamechain_ledger::rusqlite::{params, OptionalExtension, Transaction};

    /// A new database of schema 1, as `Storage::open` made it then.
    pub fn create(path: &Path) -> Connection {
        let mut conn = Connection::open(path).unwrap();
        conn.busy_timeout(Duration::from_secs(5)).unwrap();
        conn.execute_batch("PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;")
            .unwrap();
        let mode: String = conn
            .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value BLOB NOT NULL)",
        )
        .unwrap();
        let tx = conn.transaction().unwrap();
        tx.execute_batch(MIGRATIONS[0]).unwrap();
        set_meta(&tx, "schema_version", b"1");
        tx.commit().unwrap();
        conn
    }

    fn set_meta(tx: &Transaction<'_>, key: &str, value: &[u8]) {
        tx.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)",
            params![key, value],
        )
        .unwrap();
    }

    pub fn commit_genesis(
        conn: &mut Connection,
        block: &Block,
        entries: &[(String, Vec<u8>)],
        state_hash: &StateHash,
        code: &BTreeMap<String, Vec<u8>>,
        genesis_hash: &str,
        engine_config_hash: &str,
    ) {
        let tx = conn.transaction().unwrap();
        for (hash, wasm) in code {
            tx.execute(
                "INSERT OR REPLACE INTO code (hash, wasm) VALUES (?1, ?2)",
                params![hash, wasm],
            )
            .unwrap();
        }
        set_meta(&tx, "genesis_hash", genesis_hash.as_bytes());
        set_meta(&tx, "engine_config_hash", engine_config_hash.as_bytes());
        let writes: WriteSet = entries
            .iter()
            .map(|(k, v)| (k.clone(), Some(v.clone())))
            .collect();
        write_block(&tx, block, &[], &writes, state_hash);
        tx.commit().unwrap();
    }

    pub fn commit_block(
        conn: &mut Connection,
        block: &Block,
        senders: &[(&str, u64)],
        writes: &WriteSet,
        state_hash: &StateHash,
    ) {
        let tx = conn.transaction().unwrap();
        write_block(&tx, block, senders, writes, state_hash);
        tx.commit().unwrap();
    }

    /// Schema 1's `write_block`, verbatim but for its error handling.
    fn write_block(
        tx: &Transaction<'_>,
        block: &Block,
        senders: &[(&str, u64)],
        writes: &WriteSet,
        state_hash: &StateHash,
    ) {
        let h = &block.header.header;
        assert_eq!(senders.len(), block.txs.len());
        let height = h.height as i64;
        let header_json = serde_json::to_string(h).expect("a header serialises");
        tx.execute(
            "INSERT INTO blocks (height, hash, header, header_json, signature, tx_count) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![height, h.hash().as_slice(), h.to_borsh(), header_json, block.header.signature, block.txs.len() as i64],
        ).unwrap();
        let mut insert_tx = tx.prepare_cached(
            "INSERT INTO txs (txid, height, idx, body, signature, sender, nonce) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        ).unwrap();
        let mut insert_receipt = tx
            .prepare_cached(
                "INSERT INTO receipts (height, idx, txid, ok, receipt) VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .unwrap();
        for (idx, (t, (sender, nonce))) in block.txs.iter().zip(senders).enumerate() {
            let txid = t.tx.txid();
            let nonce = *nonce as i64;
            insert_tx
                .execute(params![
                    txid,
                    height,
                    idx as i64,
                    t.tx.body(),
                    t.tx.signature(),
                    sender,
                    nonce
                ])
                .unwrap();
            let receipt = serde_json::to_string(&t.receipt).expect("a receipt serialises");
            insert_receipt
                .execute(params![height, idx as i64, txid, t.receipt.ok, receipt])
                .unwrap();
        }
        let mut insert_end =
            tx.prepare_cached("INSERT INTO end_block_receipts (height, idx, module, ok, receipt) VALUES (?1, ?2, ?3, ?4, ?5)").unwrap();
        for (idx, (module, receipt)) in block.end_block.iter().enumerate() {
            let text = serde_json::to_string(receipt).expect("a receipt serialises");
            insert_end
                .execute(params![height, idx as i64, module, receipt.ok, text])
                .unwrap();
        }
        let mut put = tx
            .prepare_cached("INSERT OR REPLACE INTO state (key, value) VALUES (?1, ?2)")
            .unwrap();
        let mut delete = tx
            .prepare_cached("DELETE FROM state WHERE key = ?1")
            .unwrap();
        for (key, value) in writes {
            match value {
                Some(v) => put.execute(params![key, v]).unwrap(),
                None => delete.execute([key]).unwrap(),
            };
        }
        set_meta(tx, "lthash", &state_hash.to_bytes());
        set_meta(tx, "lthash_height", h.height.to_string().as_bytes());
    }

    fn signed_header(conn: &Connection, height: u64) -> Option<SignedHeader> {
        let (borsh_bytes, hash, signature): (Vec<u8>, Vec<u8>, String) = conn
            .query_row(
                "SELECT header, hash, signature FROM blocks WHERE height = ?1",
                [height as i64],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()
            .unwrap()?;
        let header: Header = borsh::from_slice(&borsh_bytes).unwrap();
        assert_eq!(header.hash().as_slice(), hash.as_slice());
        Some(SignedHeader { header, signature })
    }

    /// Schema 1's `Storage::block`.
    pub fn block(conn: &Connection, height: u64) -> Option<Block> {
        let header = signed_header(conn, height)?;
        let mut stmt = conn
            .prepare_cached(
                "SELECT t.body, t.signature, r.receipt FROM txs t JOIN receipts r ON r.txid = t.txid
                 WHERE t.height = ?1 ORDER BY t.idx",
            )
            .unwrap();
        let txs = stmt
            .query_map([height as i64], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .unwrap()
            .map(|row| {
                let (body, signature, receipt) = row.unwrap();
                IncludedTx {
                    tx: SignedTx::new(body, signature),
                    receipt: serde_json::from_str(&receipt).unwrap(),
                }
            })
            .collect();
        let mut stmt = conn
            .prepare_cached(
                "SELECT module, receipt FROM end_block_receipts WHERE height = ?1 ORDER BY idx",
            )
            .unwrap();
        let end_block = stmt
            .query_map([height as i64], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
            })
            .unwrap()
            .map(|row| {
                let (module, receipt) = row.unwrap();
                (module, serde_json::from_str(&receipt).unwrap())
            })
            .collect();
        Some(Block {
            header,
            scheduled: Vec::new(),
            txs,
            end_block,
        })
    }

    /// Schema 1's `Storage::tx`.
    pub fn tx(conn: &Connection, txid: &str) -> Option<TxRecord> {
        let (body, signature, height, index, receipt): (String, String, i64, i64, String) = conn
            .query_row(
                "SELECT t.body, t.signature, t.height, t.idx, r.receipt FROM txs t JOIN receipts r ON r.txid = t.txid
                 WHERE t.txid = ?1",
                [txid],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
            )
            .optional()
            .unwrap()?;
        Some(TxRecord {
            tx: SignedTx::new(body, signature),
            status: TxStatus::Included {
                height: height as u64,
                index: index as u32,
                receipt: serde_json::from_str(&receipt).unwrap(),
            },
        })
    }

    /// Every state entry.
    pub fn state(conn: &Connection) -> BTreeMap<String, Vec<u8>> {
        let mut stmt = conn.prepare("SELECT key, value FROM state").unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    }
}

fn key(n: u8) -> SecretKey {
    SecretKey::from_bytes(Network::Testnet, [n; 32]).unwrap()
}

fn sign_block(height: u64, prev: [u8; 32], txs: Vec<IncludedTx>, state_root: [u8; 32]) -> Block {
    let seq = key(99);
    let receipts: Vec<Receipt> = txs.iter().map(|t| t.receipt.clone()).collect();
    let signed: Vec<SignedTx> = txs.iter().map(|t| t.tx.clone()).collect();
    let header = Header {
        height,
        prev_hash: prev,
        time_ms: 1_000 + height,
        sequencer: seq.address(),
        checkpoint: Checkpoint::default(),
        tx_root: tx_root(&signed),
        receipt_root: receipt_root(&receipts),
        state_root,
        beacon: None,
    };
    Block {
        header: SignedHeader::sign(header, &seq),
        scheduled: Vec::new(),
        txs,
        end_block: if height % 2 == 1 {
            vec![
                ("tictactoe".into(), Receipt::success(vec![], 7 + height)),
                (
                    "zz".into(),
                    Receipt::failure("invalid: end of the world", 3),
                ),
            ]
        } else {
            vec![]
        },
    }
}

/// A block with its senders `(from, nonce)`, its state writes and the state hash after it.
type FixtureBlock = (Block, Vec<(String, u64)>, WriteSet, StateHash);

/// A varied chain: its blocks, the genesis entries and the code.
struct Fixture {
    genesis_entries: Vec<(String, Vec<u8>)>,
    code: BTreeMap<String, Vec<u8>>,
    blocks: Vec<FixtureBlock>,
}

fn fixture() -> Fixture {
    use sha2::Digest;
    let genesis_entries = vec![
        ("token/GOLD".to_string(), b"{}".to_vec()),
        ("bal/a/GOLD".to_string(), b"5".to_vec()),
    ];
    let mut hash = StateHash::from_entries(
        StateCommitment::LtHash16,
        genesis_entries
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_slice())),
    );
    let wasm = b"\0asm\x01\0\0\0 some module".to_vec();
    let code = BTreeMap::from([(hex::encode(sha2::Sha256::digest(&wasm)), wasm)]);
    let g = sign_block(0, [0; 32], vec![], hash.root());
    let mut blocks = vec![(g, vec![], WriteSet::new(), hash.clone())];
    let keys: Vec<SecretKey> = (1..=4).map(key).collect();
    let mut nonces = [0u64; 4];
    let send = |nonces: &mut [u64; 4], who: usize, action: Action| {
        let body = TxBody {
            chain_id: "gamechain-dev".into(),
            from: keys[who].address(),
            nonce: nonces[who],
            action,
        };
        nonces[who] += 1;
        (body.sign(&keys[who]), (keys[who].address(), body.nonce))
    };
    let transfer = |to: &SecretKey, amount: u128| Action::Transfer {
        to: to.address(),
        token: "GOLD".into(),
        amount: Amount(amount),
    };
    for height in 1..=12u64 {
        let mut txs = Vec::new();
        let mut senders = Vec::new();
        let count = match height {
            4 | 9 => 0,
            7 => 40,
            _ => 1 + height as usize % 5,
        };
        for i in 0..count {
            let who = (i + height as usize) % 4;
            let (tx, sender) = match i % 4 {
                0 => send(
                    &mut nonces,
                    who,
                    Action::Faucet {
                        token: "GOLD".into(),
                    },
                ),
                1 => send(
                    &mut nonces,
                    who,
                    transfer(&key(1 + (who as u8 + 1) % 4), 1 + i as u128),
                ),
                _ => send(
                    &mut nonces,
                    who,
                    Action::game(
                        "tictactoe",
                        &json!({"kind": "move", "id": format!("{:016x}", height * 1000 + i as u64), "cell": i % 9}),
                    ),
                ),
            };
            let receipt = match i % 5 {
                0 => Receipt::success(
                    vec![Event {
                        kind: "transfer".into(),
                        data: json!({"amount": (1 + i).to_string(), "from": sender.0, "to": "xx", "token": "GOLD"}),
                    }],
                    0,
                ),
                1 => Receipt::failure("invalid: cell is taken", 58_000 + i as u64),
                2 => Receipt {
                    fee: Amount(1_000 + i as u128),
                    ..Receipt::success(
                        vec![
                            Event {
                                kind: "tictactoe.moved".into(),
                                data: json!({"board": "x...o....", "by": sender.0, "cell": i, "id": "0123456789abcdef", "turn": "xxsomeone"}),
                            },
                            Event {
                                kind: "odd".into(),
                                data: json!({"f": 1.5, "g": -2.5e-300, "big": 18446744073709551615u64, "neg": -9223372036854775807i64, "s": "é \"q\" \\ \u{1}", "n": null, "a": [[], {}, [true, false]]}),
                            },
                        ],
                        58_123,
                    )
                },
                3 => Receipt::success(vec![], u64::MAX),
                _ => Receipt::failure("node: ünïcode error\nline 2", 1),
            };
            txs.push(IncludedTx { tx, receipt });
            senders.push(sender);
        }
        if height == 5 {
            // A body too long to compress and a signature that is not canonical base64 (the
            // storage keeps whatever a block holds).
            let body = format!(
                "{{\"chain_id\":\"gamechain-dev\",\"from\":\"{}\",\"nonce\":{},\"action\":{{\"type\":\"deploy\",\"module\":\"m\",\"code\":\"{}\"}}}}",
                keys[0].address(),
                nonces[0],
                "QUJD".repeat(20_000)
            );
            senders.push((keys[0].address(), nonces[0]));
            nonces[0] += 1;
            txs.push(IncludedTx {
                tx: SignedTx::new(body, "not a base64 signature!".into()),
                receipt: Receipt::failure("deploy_forbidden", 0),
            });
        }
        let mut writes = WriteSet::new();
        writes.insert(format!("k/{height}"), Some(height.to_string().into_bytes()));
        hash.apply(
            &format!("k/{height}"),
            None,
            Some(height.to_string().as_bytes()),
        );
        if height == 3 {
            writes.insert("bal/a/GOLD".into(), None);
            hash.apply("bal/a/GOLD", Some(b"5"), None);
        }
        let prev = blocks.last().unwrap().0.header.header.hash();
        let b = sign_block(height, prev, txs, hash.root());
        blocks.push((b, senders, writes, hash.clone()));
    }
    Fixture {
        genesis_entries,
        code,
        blocks,
    }
}

fn write_v1(path: &Path, f: &Fixture) -> Connection {
    let mut conn = v1::create(path);
    for (i, (b, senders, writes, hash)) in f.blocks.iter().enumerate() {
        if i == 0 {
            v1::commit_genesis(
                &mut conn,
                b,
                &f.genesis_entries,
                hash,
                &f.code,
                &"11".repeat(32),
                &"22".repeat(32),
            );
        } else {
            let senders: Vec<(&str, u64)> = senders.iter().map(|(s, n)| (s.as_str(), *n)).collect();
            v1::commit_block(&mut conn, b, &senders, writes, hash);
        }
    }
    conn
}

fn write_v2(path: &Path, f: &Fixture) -> Storage {
    let mut s = Storage::open(path).unwrap();
    for (i, (b, senders, writes, hash)) in f.blocks.iter().enumerate() {
        if i == 0 {
            s.commit_genesis(
                b,
                &f.genesis_entries,
                hash,
                &f.code,
                &"11".repeat(32),
                &"22".repeat(32),
            )
            .unwrap();
        } else {
            let senders: Vec<(&str, u64)> = senders.iter().map(|(s, n)| (s.as_str(), *n)).collect();
            s.commit_block(b, &senders, writes, hash, &[]).unwrap();
        }
    }
    s
}

/// Everything the API, the WebSocket feed, `verify` and `export` read, as JSON text.
fn reads_v2(s: &Storage, txids: &[String]) -> Vec<String> {
    let head = s.head_height().unwrap().unwrap();
    let mut out: Vec<String> = (0..=head)
        .map(|h| serde_json::to_string(&s.block(h).unwrap().unwrap()).unwrap())
        .collect();
    for txid in txids {
        out.push(serde_json::to_string(&s.tx(txid).unwrap().unwrap()).unwrap());
    }
    out
}

#[test]
fn a_version_1_database_migrates_in_place_and_reads_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chain.sqlite");
    let f = fixture();
    let conn = write_v1(&path, &f);
    let txids: Vec<String> = f
        .blocks
        .iter()
        .flat_map(|(b, ..)| b.txs.iter().map(|t| t.tx.txid()))
        .collect();
    assert!(txids.len() > 60);
    // What the gamechain of schema 1 read: every block and transaction, the state.
    let mut before: Vec<String> = f
        .blocks
        .iter()
        .map(|(b, ..)| {
            let read = v1::block(&conn, b.height()).unwrap();
            assert_eq!(&read, b);
            serde_json::to_string(&read).unwrap()
        })
        .collect();
    for txid in &txids {
        before.push(serde_json::to_string(&v1::tx(&conn, txid).unwrap()).unwrap());
    }
    let state_before = v1::state(&conn);
    drop(conn);

    let s = Storage::open(&path).expect("the migration");
    assert_eq!(s.schema_version().unwrap(), 5);
    assert_eq!(s.schema_version().unwrap() as usize, MIGRATIONS.len());
    let after = reads_v2(&s, &txids);
    assert_eq!(before.len(), after.len());
    for (b, a) in before.iter().zip(&after) {
        assert_eq!(b, a, "a read changed in the migration");
    }
    let (last, .., last_hash) = f.blocks.last().unwrap();
    let head = s.head().unwrap().unwrap();
    assert_eq!(head.header, last.header);
    assert_eq!(head.state_hash.root(), last.header.header.state_root);
    assert_eq!(head.state_hash.to_bytes(), last_hash.to_bytes());
    let state = s.load_state().unwrap();
    assert_eq!(state.map, state_before);
    assert_eq!(
        StateHash::from_entries(
            StateCommitment::LtHash16,
            state.map.iter().map(|(k, v)| (k.as_str(), v.as_slice()))
        )
        .root(),
        last.header.header.state_root
    );
    assert_eq!(s.code().unwrap(), f.code);
    let (hash, wasm) = f.code.iter().next().unwrap();
    assert_eq!(s.code_by_hash(hash).unwrap().as_ref(), Some(wasm));
    assert_eq!(
        s.chain_identity().unwrap(),
        Some(("11".repeat(32), "22".repeat(32)))
    );
    for txid in &txids {
        assert!(s.has_tx(txid).unwrap());
    }
    assert!(!s.has_tx(&"00".repeat(32)).unwrap());
    assert!(s.tx(&"00".repeat(32)).unwrap().is_none());
    assert!(s.tx("not a txid").unwrap().is_none());
    assert!(s.block(13).unwrap().is_none());
    // No table or index of schema 1 is left; the damage check still reads the whole file.
    s.quick_check().unwrap();
    drop(s);
    let raw = Connection::open(&path).unwrap();
    let names: Vec<String> = raw
        .prepare("SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        names,
        [
            "accounts",
            "blocks",
            "code",
            "game_starts",
            "meta",
            "old_headers",
            "session_steps",
            "state",
            "txs",
            "txs_by_sender",
            "txs_by_txid"
        ]
    );
    drop(raw);

    // The same blocks written by schema 2 itself read the same.
    let fresh = write_v2(&dir.path().join("fresh.sqlite"), &f);
    assert_eq!(reads_v2(&fresh, &txids), after);
    drop(fresh);

    // Reopened: nothing to migrate; a reader opens it; a new block goes on top.
    let mut s = Storage::open(&path).unwrap();
    assert_eq!(reads_v2(&s, &txids), after);
    let reader = Storage::open_reader(&path).unwrap();
    assert_eq!(reads_v2(&reader, &txids), after);
    let alice = key(1);
    let t = TxBody {
        chain_id: "gamechain-dev".into(),
        from: alice.address(),
        nonce: 1000,
        action: Action::Faucet {
            token: "GOLD".into(),
        },
    }
    .sign(&alice);
    let mut hash = last_hash.clone();
    let mut writes = WriteSet::new();
    writes.insert("k/13".into(), Some(b"13".to_vec()));
    hash.apply("k/13", None, Some(b"13"));
    let b13 = sign_block(
        13,
        last.header.header.hash(),
        vec![IncludedTx {
            tx: t.clone(),
            receipt: Receipt::success(vec![], 0),
        }],
        hash.root(),
    );
    s.commit_block(&b13, &[(&alice.address(), 1000)], &writes, &hash, &[])
        .unwrap();
    assert_eq!(reader.block(13).unwrap().unwrap(), b13);
    assert_eq!(reader.head().unwrap().unwrap().header, b13.header);
    assert!(reader.has_tx(&t.txid()).unwrap());
}

#[test]
fn a_damaged_version_1_database_is_not_migrated() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chain.sqlite");
    let f = fixture();
    let conn = write_v1(&path, &f);
    let txid: String = conn
        .query_row("SELECT txid FROM txs WHERE height = 7 LIMIT 1", [], |r| {
            r.get(0)
        })
        .unwrap();
    conn.execute("UPDATE txs SET body = body || ' ' WHERE txid = ?1", [&txid])
        .unwrap();
    let state_before = v1::state(&conn);
    drop(conn);
    let e = Storage::open(&path).unwrap_err();
    assert!(
        e.to_string().contains("migration 2") && e.to_string().contains("another txid"),
        "{e}"
    );
    let conn = Connection::open(&path).unwrap();
    let version: Vec<u8> = conn
        .query_row(
            "SELECT value FROM meta WHERE key = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(version, b"1");
    assert_eq!(v1::block(&conn, 3).unwrap(), f.blocks[3].0);
    assert_eq!(v1::state(&conn), state_before);
    drop(conn);
    let e = Storage::open_reader(&path).unwrap_err();
    assert!(e.to_string().contains("migrate"), "{e}");
}

/// Rewrites the data directory's database (a node stopped on it) as schema 1 with the same
/// chain, as the gamechain before schema 2 would have stored it. Returns every block and
/// transaction as that gamechain read them.
fn downgrade(data: &Path) -> (Vec<Block>, Vec<TxRecord>) {
    let db = data.join("chain.sqlite");
    let r = Storage::open_reader(&db).unwrap();
    let head = r.head().unwrap().unwrap();
    let (genesis_hash, engine_hash) = r.chain_identity().unwrap().unwrap();
    let blocks: Vec<Block> = (0..=head.header.header.height)
        .map(|h| r.block(h).unwrap().unwrap())
        .collect();
    let state = r.load_state().unwrap();
    let code = r.code().unwrap();
    drop(r);
    for suffix in ["", "-wal", "-shm"] {
        let mut name = db.as_os_str().to_owned();
        name.push(suffix);
        let _ = std::fs::remove_file(name);
    }
    let mut conn = v1::create(&db);
    // Each block with no state writes, then the head's state at once: the same tables.
    for b in &blocks {
        if b.height() == 0 {
            v1::commit_genesis(
                &mut conn,
                b,
                &[],
                &head.state_hash,
                &code,
                &genesis_hash,
                &engine_hash,
            );
            continue;
        }
        let senders: Vec<(String, u64)> = b
            .txs
            .iter()
            .map(|t| {
                let body = TxBody::parse(t.tx.body()).unwrap();
                (body.from, body.nonce)
            })
            .collect();
        let senders: Vec<(&str, u64)> = senders.iter().map(|(s, n)| (s.as_str(), *n)).collect();
        v1::commit_block(&mut conn, b, &senders, &WriteSet::new(), &head.state_hash);
    }
    let writes: WriteSet = state.map.into_iter().map(|(k, v)| (k, Some(v))).collect();
    let tx = conn.transaction().unwrap();
    for (k, v) in &writes {
        tx.execute(
            "INSERT OR REPLACE INTO state (key, value) VALUES (?1, ?2)",
            rusqlite::params![k, v],
        )
        .unwrap();
    }
    tx.commit().unwrap();
    let read_blocks: Vec<Block> = (0..blocks.len() as u64)
        .map(|h| v1::block(&conn, h).unwrap())
        .collect();
    assert_eq!(read_blocks, blocks);
    let records = blocks
        .iter()
        .flat_map(|b| b.txs.iter())
        .map(|t| v1::tx(&conn, &t.tx.txid()).unwrap())
        .collect();
    (read_blocks, records)
}

/// Every block and transaction of `blocks` as the node's API serves them (the response text).
async fn api_texts(url: &str, blocks: &[Block]) -> Vec<String> {
    let http = reqwest::Client::new();
    let mut out = Vec::new();
    let get = |path: String| {
        let http = http.clone();
        async move {
            let r = http.get(format!("{url}{path}")).send().await.unwrap();
            assert_eq!(r.status().as_u16(), 200, "{path}");
            r.text().await.unwrap()
        }
    };
    for b in blocks {
        out.push(get(format!("/v1/blocks/{}", b.height())).await);
        for t in &b.txs {
            out.push(get(format!("/v1/tx/{}", t.tx.txid())).await);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_migrated_data_directory_keeps_serving_and_verifies() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let data = dir.join("data");
    let mut node = NodeProcess::new(dir, "block_interval_ms = 60000");
    node.start().await;
    let client = node.client();
    workload(&client, 3).await;
    // What the node serves before: every block and transaction, as text.
    let head = client.status().await.unwrap().height;
    let mut served_blocks = Vec::new();
    for h in 0..=head {
        served_blocks.push(client.block(BlockRef::Height(h)).await.unwrap());
    }
    let served_before = api_texts(&node.url(), &served_blocks).await;
    assert!(node.terminate(Duration::from_secs(20)).success());
    let (blocks, records) = downgrade(&data);
    assert_eq!(blocks, served_blocks);
    assert!(records.len() >= 3 * 13, "{}", records.len());

    node.start().await;
    assert!(node.log().contains("database migrated"), "{}", node.log());
    let served = api_texts(&node.url(), &blocks).await;
    // The same JSON as schema 1's reads gave (as values: the API's text is its own rendering).
    let mut want = Vec::new();
    for b in &blocks {
        want.push(serde_json::to_value(b).unwrap());
        for t in &b.txs {
            let record = records.iter().find(|r| r.tx == t.tx).unwrap();
            want.push(serde_json::to_value(record).unwrap());
        }
    }
    assert_eq!(served.len(), want.len());
    for (text, want) in served.iter().zip(&want) {
        let got: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(&got, want);
    }
    // And byte for byte what the node served before its database went through schema 1.
    assert_eq!(served, served_before);
    common::check_chain(&client).await;

    // New blocks on the migrated database, and the API's text for the old ones is what the
    // node served before it was stopped again.
    let alice = SecretKey::generate(Network::Testnet);
    let txid = client
        .send(
            &alice,
            Action::Faucet {
                token: "GOLD".into(),
            },
        )
        .await
        .unwrap();
    let included = client
        .wait_for_receipt(&txid, Duration::from_secs(30))
        .await
        .unwrap();
    assert!(included.receipt.ok);
    assert!(included.height > blocks.last().unwrap().height());
    assert!(node.terminate(Duration::from_secs(20)).success());
    node.start().await;
    assert!(!node.log().contains("database migrated"));
    assert_eq!(api_texts(&node.url(), &blocks).await, served);
    let head = common::check_chain(&node.client()).await;
    assert!(node.terminate(Duration::from_secs(20)).success());

    let (code, report) = verify_json(dir, &["--data", data.to_str().unwrap()]).await;
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["result"], "verified", "{report}");
    assert_eq!(report["head_height"], head.height(), "{report}");
    assert_eq!(
        report["state_root"],
        hex::encode(head.header.header.state_root),
        "{report}"
    );
}

/// With `GAMECHAIN_SCHEMA1_BIN` set to a `gamechain` binary of schema 1 (e.g. built from the
/// commit before schema 2): that binary makes and serves a chain, then this one migrates its data
/// directory, serves every block and transaction as the same text, makes new blocks, and `verify
/// --data` passes. Without the variable it checks nothing (the fixture generator `v1` covers
/// the same in the tests above).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_data_directory_of_the_schema_1_binary_migrates() {
    let Ok(old_bin) = std::env::var("GAMECHAIN_SCHEMA1_BIN") else {
        eprintln!("GAMECHAIN_SCHEMA1_BIN is not set: nothing to check");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let data = dir.join("data");
    let mut node = NodeProcess::new(dir, "block_interval_ms = 60000");
    let log = std::fs::File::create(dir.join("old.log")).unwrap();
    let mut old = std::process::Command::new(&old_bin)
        .arg("node")
        .arg("--config")
        .arg(dir.join("node.toml"))
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    let client = node.client();
    let started = std::time::Instant::now();
    while client.status().await.is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the old node did not start"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    workload(&client, 3).await;
    let head = client.status().await.unwrap().height;
    let mut blocks = Vec::new();
    for h in 0..=head {
        blocks.push(client.block(BlockRef::Height(h)).await.unwrap());
    }
    let served_before = api_texts(&node.url(), &blocks).await;
    // SAFETY: no memory-safety preconditions; `old` is our child, not reaped yet.
    unsafe { libc::kill(old.id() as libc::pid_t, libc::SIGTERM) };
    assert!(old.wait().unwrap().success());
    let version: Vec<u8> = Connection::open(data.join("chain.sqlite"))
        .unwrap()
        .query_row(
            "SELECT value FROM meta WHERE key = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(version, b"1", "GAMECHAIN_SCHEMA1_BIN wrote another schema");

    node.start().await;
    assert!(node.log().contains("database migrated"), "{}", node.log());
    assert_eq!(api_texts(&node.url(), &blocks).await, served_before);
    common::check_chain(&client).await;
    let alice = SecretKey::generate(Network::Testnet);
    let txid = client
        .send(
            &alice,
            Action::Faucet {
                token: "GOLD".into(),
            },
        )
        .await
        .unwrap();
    let included = client
        .wait_for_receipt(&txid, Duration::from_secs(30))
        .await
        .unwrap();
    assert!(included.height > head);
    let head = common::check_chain(&client).await;
    assert!(node.terminate(Duration::from_secs(20)).success());
    let (code, report) = verify_json(dir, &["--data", data.to_str().unwrap()]).await;
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["head_height"], head.height(), "{report}");
    eprintln!(
        "a chain of {} blocks made by {old_bin} migrated, served the same text, went on to block {} and verified",
        blocks.len(),
        head.height()
    );
}

/// The database at `path`: its size as written (WAL checkpointed), then after `VACUUM` its
/// size and the bytes of each table and index (`dbstat`).
fn table_bytes(path: &Path) -> (u64, BTreeMap<String, u64>, u64) {
    let conn = Connection::open(path).unwrap();
    let size = |conn: &Connection| {
        let pages: i64 = conn
            .query_row("PRAGMA page_count", [], |r| r.get(0))
            .unwrap();
        let size: i64 = conn
            .query_row("PRAGMA page_size", [], |r| r.get(0))
            .unwrap();
        (pages * size) as u64
    };
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .unwrap();
    let written = size(&conn);
    conn.execute_batch("VACUUM; PRAGMA wal_checkpoint(TRUNCATE);")
        .unwrap();
    let mut stmt = conn
        .prepare("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name")
        .unwrap();
    let tables = stmt
        .query_map([], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    (written, tables, size(&conn))
}

fn print_sizes(label: &str, path: &Path, txs: usize) -> f64 {
    let (written, tables, total) = table_bytes(path);
    let per = |b: u64| b as f64 / txs as f64;
    println!(
        "  {label}: {:.0} bytes per transaction after VACUUM ({:.1} MB per 100,000); {:.0} as written",
        per(total),
        per(total) * 1e5 / 1e6,
        per(written)
    );
    for (name, bytes) in tables.iter().filter(|(_, b)| **b > 4096) {
        println!(
            "      {name:<20} {:>6.0} bytes per transaction ({:>4.1}%)",
            per(*bytes),
            *bytes as f64 * 100.0 / total as f64
        );
    }
    per(total)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: run it with --ignored --nocapture (release build recommended)"]
async fn bytes_per_transaction() {
    use gamechain_node::cli::bench::{self, workload::Kind, BenchArgs};
    let txs: u32 = std::env::var("BYTES_BENCH_TXS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    for kind in [Kind::Transfer, Kind::Tictactoe] {
        let node = gamechain_node::cli::local_node::LocalNode::start_with(bench::bench_config())
            .await
            .unwrap();
        let args = BenchArgs {
            node: None,
            node_pid: None,
            workload: kind.clone(),
            accounts: 200,
            connections: 16,
            txs,
            batch: 100,
            rate: 0,
            module: None,
            op: None,
            funder: None,
            wait: 120,
            json: true,
        };
        let report = bench::run_with(&args, &bench::local_target(&node))
            .await
            .unwrap();
        // The blocks of the run, less the funding faucet calls.
        let r = Storage::open_reader(&node.data_dir().join("chain.sqlite")).unwrap();
        let head = r.head_height().unwrap().unwrap();
        let mut blocks = Vec::new();
        for h in 1..=head {
            let mut b = r.block(h).unwrap().unwrap();
            b.txs.retain(|t| {
                !matches!(
                    TxBody::parse(t.tx.body()).unwrap().action,
                    Action::Faucet { .. }
                )
            });
            if !b.txs.is_empty() {
                blocks.push(b);
            }
        }
        drop(r);
        node.stop().await.unwrap();
        let n: usize = blocks.iter().map(|b| b.txs.len()).sum();
        let tmp = tempfile::tempdir().unwrap();
        let (old, new) = (tmp.path().join("v1.sqlite"), tmp.path().join("v2.sqlite"));
        let mut conn = v1::create(&old);
        let mut s = Storage::open(&new).unwrap();
        let hash = StateHash::from_entries(
            StateCommitment::LtHash16,
            std::iter::empty::<(&str, &[u8])>(),
        );
        let genesis = sign_block(0, [0; 32], vec![], hash.root());
        v1::commit_genesis(&mut conn, &genesis, &[], &hash, &BTreeMap::new(), "g", "e");
        s.commit_genesis(&genesis, &[], &hash, &BTreeMap::new(), "g", "e")
            .unwrap();
        let mut prev = genesis.header.header.hash();
        let (mut v1_time, mut v2_time) = (Duration::ZERO, Duration::ZERO);
        for (i, b) in blocks.into_iter().enumerate() {
            // Renumbered to follow one another (the funding blocks are left out).
            let b = Block {
                header: sign_block(i as u64 + 1, prev, vec![], hash.root()).header,
                ..b
            };
            prev = b.header.header.hash();
            let senders: Vec<(String, u64)> = b
                .txs
                .iter()
                .map(|t| {
                    let body = TxBody::parse(t.tx.body()).unwrap();
                    (body.from, body.nonce)
                })
                .collect();
            let senders: Vec<(&str, u64)> = senders.iter().map(|(s, n)| (s.as_str(), *n)).collect();
            let t = std::time::Instant::now();
            v1::commit_block(&mut conn, &b, &senders, &WriteSet::new(), &hash);
            v1_time += t.elapsed();
            let t = std::time::Instant::now();
            s.commit_block(&b, &senders, &WriteSet::new(), &hash, &[])
                .unwrap();
            v2_time += t.elapsed();
        }
        drop((conn, s));
        println!(
            "{kind:?}: {n} transactions in {} blocks (bench: {:.0} committed tx/s, disk {:?} bytes per tx incl. WAL and state)",
            report.blocks, report.committed_per_sec, report.disk_bytes_per_tx.map(|b| b.round())
        );
        println!(
            "  writing the blocks (this build): schema 1 {:.1} µs per transaction, schema 2 {:.1}",
            v1_time.as_secs_f64() * 1e6 / n as f64,
            v2_time.as_secs_f64() * 1e6 / n as f64
        );
        let before = print_sizes("schema 1", &old, n);
        let after = print_sizes("schema 2", &new, n);
        println!("  schema 2 / schema 1: {:.2}", after / before);
        // The migration of that schema 1 file (conversion, then VACUUM).
        let started = std::time::Instant::now();
        let migrated = Storage::open(&old).unwrap();
        let ms = started.elapsed().as_secs_f64() * 1e3;
        assert_eq!(migrated.schema_version().unwrap(), 2);
        drop(migrated);
        let (_, _, size) = table_bytes(&old);
        println!(
            "  migrating the schema 1 file: {ms:.0} ms ({:.1} µs per transaction); then {:.0} bytes per transaction",
            ms * 1e3 / n as f64,
            size as f64 / n as f64
        );
    }
}
