//! Tests of the SQLite storage: migrations, the writer lock, blocks, state and receipts round-trip.

use super::*;
use gamechain_runtime::chain::{
    receipt_root, tx_root, Action, Event, Network, SecretKey, StateCommitment, TxBody,
};
use gamechain_sdk::Checkpoint;
use serde_json::json;

fn key(n: u8) -> SecretKey {
    SecretKey::from_bytes(Network::Testnet, [n; 32]).unwrap()
}

fn block(height: u64, prev: [u8; 32], txs: Vec<IncludedTx>, state_root: [u8; 32]) -> Block {
    let seq = key(9);
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
        end_block: vec![("tictactoe".into(), Receipt::success(vec![], 7))],
    }
}

#[test]
fn migrations_run_once_from_an_empty_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chain.sqlite");
    let s = Storage::open(&path).unwrap();
    assert_eq!(s.schema_version().unwrap() as usize, MIGRATIONS.len());
    assert!(s.head().unwrap().is_none());
    assert!(s.chain_identity().unwrap().is_none());
    let mode: String = s
        .conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let sync: i64 = s
        .conn
        .query_row("PRAGMA synchronous", [], |r| r.get(0))
        .unwrap();
    assert_eq!(sync, 2, "FULL");
    drop(s);
    // Reopening applies nothing new; a newer schema is refused.
    let s = Storage::open(&path).unwrap();
    assert_eq!(s.schema_version().unwrap() as usize, MIGRATIONS.len());
    s.conn
        .execute(
            "UPDATE meta SET value = CAST('99' AS BLOB) WHERE key = 'schema_version'",
            [],
        )
        .unwrap();
    drop(s);
    assert!(matches!(
        Storage::open(&path),
        Err(StorageError::TooNew { found: 99, .. })
    ));
}

#[test]
fn a_second_writer_is_refused_until_the_first_closes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chain.sqlite");
    let first = Storage::open(&path).unwrap();
    assert!(matches!(Storage::open(&path), Err(StorageError::InUse(p)) if p == path));
    let reader = Storage::open_reader(&path).expect("readers need no lock");
    drop(reader);
    drop(first);
    Storage::open(&path).expect("the lock went with the first writer");
}

#[test]
fn blocks_state_and_receipts_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chain.sqlite");
    let mut s = Storage::open(&path).unwrap();

    let entries = vec![
        ("token/GOLD".to_string(), b"{}".to_vec()),
        ("bal/a/GOLD".to_string(), b"5".to_vec()),
    ];
    let mut hash = StateHash::from_entries(
        StateCommitment::LtHash16,
        entries.iter().map(|(k, v)| (k.as_str(), v.as_slice())),
    );
    let g = block(0, [0; 32], vec![], hash.root());
    let code = BTreeMap::from([("ab".repeat(32), vec![0u8, 97, 115, 109])]);
    s.commit_genesis(
        &g,
        &entries,
        &hash,
        &code,
        &"11".repeat(32),
        &"22".repeat(32),
    )
    .unwrap();
    assert!(
        s.commit_genesis(&g, &entries, &hash, &code, "x", "y")
            .is_err(),
        "genesis twice"
    );

    let alice = key(1);
    let t = TxBody {
        chain_id: "c".into(),
        from: alice.address(),
        nonce: 0,
        action: Action::Faucet {
            token: "GOLD".into(),
        },
    }
    .sign(&alice);
    let receipt = Receipt::success(
        vec![Event {
            kind: "faucet".into(),
            data: json!({"b": 1, "a": "x"}),
        }],
        0,
    );
    let mut writes = WriteSet::new();
    writes.insert("bal/a/GOLD".into(), None);
    writes.insert("nonce/x".into(), Some(b"1".to_vec()));
    hash.apply("bal/a/GOLD", Some(b"5"), None);
    hash.apply("nonce/x", None, Some(b"1"));
    let b1 = block(
        1,
        g.header.header.hash(),
        vec![IncludedTx {
            tx: t.clone(),
            receipt: receipt.clone(),
        }],
        hash.root(),
    );
    let from = alice.address();
    s.commit_block(&b1, &[(&from, 0)], &writes, &hash, &[])
        .unwrap();
    // A block that does not extend the head is refused and changes nothing.
    let stray = block(5, [1; 32], vec![], hash.root());
    assert!(s
        .commit_block(&stray, &[], &WriteSet::new(), &hash, &[])
        .is_err());
    drop(s);

    let r = Storage::open_reader(&path).unwrap();
    assert_eq!(
        r.chain_identity().unwrap(),
        Some(("11".repeat(32), "22".repeat(32)))
    );
    let head = r.head().unwrap().unwrap();
    assert_eq!(head.header, b1.header);
    assert_eq!(head.state_hash.root(), hash.root());
    assert_eq!(r.block(0).unwrap().unwrap(), g);
    assert_eq!(r.block(1).unwrap().unwrap(), b1);
    assert!(r.block(2).unwrap().is_none());
    let rec = r.tx(&t.txid()).unwrap().unwrap();
    assert_eq!(
        rec.status,
        TxStatus::Included {
            height: 1,
            index: 0,
            receipt
        }
    );
    assert!(r.has_tx(&t.txid()).unwrap());
    assert!(!r.has_tx(&"00".repeat(32)).unwrap());
    let state = r.load_state().unwrap();
    assert_eq!(
        state.map.keys().collect::<Vec<_>>(),
        ["nonce/x", "token/GOLD"],
        "the delete and the put were applied"
    );
    assert_eq!(
        StateHash::from_entries(
            StateCommitment::LtHash16,
            state.map.iter().map(|(k, v)| (k.as_str(), v.as_slice()))
        )
        .root(),
        hash.root()
    );
    assert_eq!(r.code().unwrap(), code);
    assert!(
        r.conn.execute("DELETE FROM state", []).is_err(),
        "the reader is read-only"
    );
}

#[test]
fn a_transaction_is_one_row_of_compact_columns() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chain.sqlite");
    let mut s = Storage::open(&path).unwrap();
    let hash = StateHash::from_entries(
        StateCommitment::LtHash16,
        std::iter::empty::<(&str, &[u8])>(),
    );
    let g = block(0, [0; 32], vec![], hash.root());
    s.commit_genesis(&g, &[], &hash, &BTreeMap::new(), "g", "e")
        .unwrap();
    let alice = key(1);
    let bob = key(2);
    let txs: Vec<IncludedTx> = (0..3)
        .map(|nonce| IncludedTx {
            tx: TxBody {
                chain_id: "gamechain-dev".into(),
                from: alice.address(),
                nonce,
                action: Action::Transfer {
                    to: bob.address(),
                    token: "GOLD".into(),
                    amount: gamechain_sdk::Amount(1),
                },
            }
            .sign(&alice),
            receipt: Receipt::success(
                vec![Event {
                    kind: "transfer".into(),
                    data: json!({"amount": "1", "from": alice.address(), "to": bob.address(), "token": "GOLD"}),
                }],
                0,
            ),
        })
        .collect();
    let b1 = block(1, g.header.header.hash(), txs.clone(), hash.root());
    let from = alice.address();
    let senders: Vec<(&str, u64)> = (0..3).map(|n| (from.as_str(), n)).collect();
    s.commit_block(&b1, &senders, &WriteSet::new(), &hash, &[])
        .unwrap();
    type Row = (i64, Vec<u8>, i64, i64, Vec<u8>, Vec<u8>, Vec<u8>);
    let rows: Vec<Row> = s
        .conn
        .prepare("SELECT id, txid, sender, nonce, body, signature, receipt FROM txs ORDER BY id")
        .unwrap()
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
            ))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(rows.len(), 3);
    for (i, (id, txid, sender, nonce, body, signature, receipt)) in rows.iter().enumerate() {
        let t = &txs[i];
        assert_eq!(*id, (1 << 20) | i as i64, "height << 20 | index");
        assert_eq!(txid.as_slice(), t.tx.txid_bytes().as_slice());
        assert_eq!(
            (*sender, *nonce),
            (1, i as i64),
            "one account id per sender"
        );
        assert!(
            body.len() < t.tx.body().len() * 2 / 3,
            "{} bytes",
            body.len()
        );
        assert_eq!(codec::decode_body(body).unwrap(), t.tx.body());
        assert_eq!(signature.len(), 65);
        assert!(receipt.len() < 32, "{} bytes", receipt.len());
        assert_eq!(
            codec::unpack_receipt(receipt, t.tx.body()).unwrap(),
            t.receipt
        );
    }
    assert_eq!(s.block(1).unwrap().unwrap(), b1);
    let tx2 = s.tx(&txs[2].tx.txid()).unwrap().unwrap();
    assert_eq!(
        tx2.status,
        TxStatus::Included {
            height: 1,
            index: 2,
            receipt: txs[2].receipt.clone()
        }
    );
    // A txid in upper case or of another length is no txid of the store.
    assert!(s.tx(&txs[2].tx.txid().to_uppercase()).unwrap().is_none());
    assert!(!s.has_tx(&txs[2].tx.txid()[..62]).unwrap());
    assert_eq!(tx_position(tx_row_id(7, 5).unwrap()), (7, 5));
    assert!(tx_row_id(1, 1 << 20).is_none());
}

/// `commit_blocks` writes a run of blocks in one transaction: all of them, or none when one of
/// them does not extend the one before; the head record then names the last, its other slot
/// the block before.
#[test]
fn a_run_of_blocks_commits_whole_or_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chain.sqlite");
    let mut s = Storage::open(&path).unwrap();
    let mut hash = StateHash::from_entries(
        StateCommitment::LtHash16,
        std::iter::empty::<(&str, &[u8])>(),
    );
    let g = block(0, [0; 32], vec![], hash.root());
    s.commit_genesis(&g, &[], &hash, &BTreeMap::new(), "g", "e")
        .unwrap();
    let alice = key(1);
    let tx = |nonce: u64| IncludedTx {
        tx: TxBody {
            chain_id: "c".into(),
            from: alice.address(),
            nonce,
            action: Action::Faucet {
                token: "GOLD".into(),
            },
        }
        .sign(&alice),
        receipt: Receipt::success(vec![], 0),
    };
    hash.apply("k", None, Some(b"2"));
    let b1 = block(1, g.header.header.hash(), vec![tx(0)], hash.root());
    let b2 = block(2, b1.header.header.hash(), vec![tx(1)], hash.root());
    let b3 = block(3, b2.header.header.hash(), vec![], hash.root());
    let stray = block(4, [7; 32], vec![], hash.root());
    let from = alice.address();
    let (one, two) = ([(from.as_str(), 0)], [(from.as_str(), 1)]);
    let writes = WriteSet::from([("k".to_string(), Some(b"2".to_vec()))]);
    // A run whose last block does not extend the one before: nothing is written.
    let bad = [(&b1, &one[..]), (&b2, &two[..]), (&stray, &[][..])];
    assert!(s.commit_blocks(&bad, &writes, &hash, &[]).is_err());
    assert_eq!(s.head_height().unwrap(), Some(0));
    assert!(s.load_state().unwrap().map.is_empty());
    assert!(!s.has_tx(&b1.txs[0].tx.txid()).unwrap());
    assert!(s.commit_blocks(&[], &writes, &hash, &[]).is_err());
    // The run as it should be: every block, the state, the hash at the last.
    let good = [(&b1, &one[..]), (&b2, &two[..]), (&b3, &[][..])];
    s.commit_blocks(&good, &writes, &hash, &[]).unwrap();
    let head = s.head().unwrap().unwrap();
    assert_eq!(head.header, b3.header);
    assert_eq!(head.state_hash.root(), hash.root());
    for b in [&b1, &b2, &b3] {
        assert_eq!(&s.block(b.height()).unwrap().unwrap(), b);
    }
    assert_eq!(s.load_state().unwrap().map["k"], b"2");
    drop(s);
    let record = std::fs::read_to_string(crate::head_record::head_record_path(&path)).unwrap();
    assert!(
        record.contains(&format!(" 3 {} ", b3.hash_hex())),
        "{record}"
    );
    assert!(
        record.contains(&format!(" 2 {} ", b2.hash_hex())),
        "{record}"
    );
}

#[test]
fn evidence_is_kept_once_per_kind_view_and_signer_and_bounded_per_signer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chain.sqlite");
    let mut s = Storage::open(&path).unwrap();
    // A database written before evidence: no table, nothing stored.
    assert!(!s.has_evidence_table().unwrap());
    assert_eq!(s.evidence_count().unwrap(), 0);
    assert!(s.evidence_page(0, 10).unwrap().is_empty());
    let record = |view: u64, signer: u32| StoredEvidence {
        id: 0,
        kind: "conflicting_notarize".into(),
        view,
        signer,
        data: vec![view as u8, signer as u8],
        received_ms: 1_000 + view,
    };
    assert!(s.put_evidence(&record(1, 3)).unwrap());
    assert!(!s.put_evidence(&record(1, 3)).unwrap(), "the same again");
    for view in 2..(MAX_EVIDENCE_PER_SIGNER as u64 + 10) {
        s.put_evidence(&record(view, 3)).unwrap();
    }
    assert_eq!(s.evidence_count().unwrap(), MAX_EVIDENCE_PER_SIGNER as u64);
    // Another validator's evidence still fits.
    assert!(s.put_evidence(&record(5, 1)).unwrap());
    let page = s.evidence_page(0, 5).unwrap();
    assert_eq!(page.len(), 5);
    assert_eq!((page[0].id, page[0].view, page[0].signer), (1, 1, 3));
    assert_eq!(page[0].data, vec![1, 3]);
    assert_eq!(page[0].received_ms, 1_001);
    let rest = s.evidence_page(page[4].id, 100).unwrap();
    assert_eq!(rest.len(), MAX_EVIDENCE_PER_SIGNER + 1 - 5);
    assert!(rest.windows(2).all(|w| w[0].id < w[1].id));
    assert_eq!(rest.last().unwrap().signer, 1);
    // A reader sees them.
    let r = Storage::open_reader(&path).unwrap();
    assert_eq!(
        r.evidence_count().unwrap(),
        MAX_EVIDENCE_PER_SIGNER as u64 + 1
    );
}

/// A state of `n` entries and its hash.
fn some_state(n: usize) -> (Vec<(String, Vec<u8>)>, StateHash) {
    let entries: Vec<(String, Vec<u8>)> = (0..n)
        .map(|i| (format!("k/{i:05}"), vec![i as u8; i % 7]))
        .collect();
    let hash = StateHash::from_entries(
        StateCommitment::LtHash16,
        entries.iter().map(|(k, v)| (k, v)),
    );
    (entries, hash)
}

#[test]
fn a_base_is_imported_whole_or_not_at_all_and_a_snapshot_of_it_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chain.sqlite");
    let mut s = Storage::open(&path).unwrap();
    let (entries, hash) = some_state(300);
    let base = block(40, [7; 32], vec![], hash.root());
    let code = BTreeMap::new();
    // A root that does not match: refused, nothing written.
    let refused = s
        .import_base(
            &base,
            &[],
            &code,
            "g",
            "e",
            None,
            &mut std::iter::empty(),
            |insert| {
                for (k, v) in entries.iter().skip(1) {
                    insert(k.as_str(), v.as_slice())?;
                }
                Ok(Ok(StateHash::from_entries(
                    StateCommitment::LtHash16,
                    entries.iter().skip(1).map(|(k, v)| (k, v)),
                )))
            },
        )
        .unwrap();
    assert!(refused.unwrap_err().contains("state root"));
    assert!(s.head().unwrap().is_none());
    assert!(s.chain_identity().unwrap().is_none());
    assert!(s.load_state().unwrap().map.is_empty());
    // A refusal by the filler: nothing written either.
    let refused = s
        .import_base(
            &base,
            &[],
            &code,
            "g",
            "e",
            None,
            &mut std::iter::empty(),
            |insert| {
                insert("a", &b"1"[..])?;
                Ok(Err("bad chunk".into()))
            },
        )
        .unwrap();
    assert_eq!(refused, Err("bad chunk".to_string()));
    assert!(s.load_state().unwrap().map.is_empty());
    // A refusal among the old headers: nothing written either.
    let mut bad = [
        Ok((0, vec![1u8])),
        Err("header 1 is not chained".to_string()),
    ]
    .into_iter();
    let refused = s
        .import_base(&base, &[], &code, "g", "e", None, &mut bad, |insert| {
            for (k, v) in &entries {
                insert(k.as_str(), v.as_slice())?;
            }
            Ok(Ok(hash.clone()))
        })
        .unwrap();
    assert_eq!(refused, Err("header 1 is not chained".to_string()));
    assert!(s.headers(0, 100).unwrap().is_empty());
    // The matching state: the chain starts at the base, its old headers below it.
    let mut old = (0..40u64).map(|h| Ok((h, vec![h as u8])));
    s.import_base(&base, &[], &code, "g", "e", None, &mut old, |insert| {
        for (k, v) in &entries {
            insert(k.as_str(), v.as_slice())?;
        }
        Ok(Ok(hash.clone()))
    })
    .unwrap()
    .unwrap();
    let head = s.head().unwrap().unwrap();
    assert_eq!(head.header.header.height, 40);
    assert_eq!(head.state_hash.root(), hash.root());
    assert_eq!(s.oldest_height().unwrap(), Some(40));
    assert_eq!(s.chain_identity().unwrap(), Some(("g".into(), "e".into())));
    assert!(s.block(39).unwrap().is_none());
    let headers = s.headers(38, 4).unwrap();
    assert_eq!(
        headers.iter().map(|(h, _)| *h).collect::<Vec<_>>(),
        vec![38, 39, 40]
    );
    assert_eq!(headers[0].1, vec![38]);
    assert_eq!(headers[2].1, borsh::to_vec(&base.header.header).unwrap());
    // A second import is refused.
    assert!(s
        .import_base(
            &base,
            &[],
            &code,
            "g",
            "e",
            None,
            &mut std::iter::empty(),
            |_| Ok(Ok(hash.clone()))
        )
        .is_err());

    // A snapshot written from a read transaction holds exactly that state.
    let snaps = dir.path().join("snapshots");
    std::fs::create_dir_all(&snaps).unwrap();
    let reader = Storage::open_reader(&path).unwrap();
    reader.begin_snapshot().unwrap();
    let manifest = crate::snapshot::write_snapshot(&reader, &snaps, 40, "g", None).unwrap();
    assert_eq!(manifest.entries, 300);
    assert_eq!(manifest.state_root, hex::encode(hash.root()));
    assert_eq!(manifest.check("g", crate::snapshot::FORMAT_KEYS), Ok(()));
    let loaded = crate::snapshot::load_snapshot(&snaps.join("40")).unwrap();
    let want: BTreeMap<String, Vec<u8>> = entries.into_iter().collect();
    assert_eq!(loaded.map, want);
    // Not at another height than the database's head.
    assert!(crate::snapshot::write_snapshot(&reader, &snaps, 41, "g", None).is_err());
}

/// A sparse Merkle chain's snapshot: entries by key hash, each chunk led by its proof, and
/// each chunk checks on its own against the block's root in order; a chunk from another
/// position, or with an entry changed, does not.
#[test]
fn a_proven_snapshot_checks_chunk_by_chunk_against_the_root() {
    use crate::snapshot::{decode_chunk_of, load_snapshot, write_snapshot, FORMAT_PROVEN};
    use gamechain_chain::state_root::sparse_merkle::{key_hash, value_hash};
    use gamechain_chain::state_root::{ChunkError, ChunkVerifier};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chain.sqlite");
    let mut s = Storage::open(&path).unwrap();
    // About 12.5 MB: three chunks.
    let entries: Vec<(String, Vec<u8>)> = (0..2500)
        .map(|i| (format!("k/{i:05}"), vec![i as u8; 5000]))
        .collect();
    let hash = StateHash::from_entries(
        StateCommitment::SparseMerkle,
        entries.iter().map(|(k, v)| (k, v)),
    );
    let StateHash::SparseMerkle(tree) = &hash else {
        unreachable!()
    };
    let genesis = block(0, [0; 32], vec![], hash.root());
    s.commit_genesis(&genesis, &entries, &hash, &BTreeMap::new(), "g", "e")
        .unwrap();
    let snaps = dir.path().join("snapshots");
    std::fs::create_dir_all(&snaps).unwrap();
    let reader = Storage::open_reader(&path).unwrap();
    reader.begin_snapshot().unwrap();
    // A tree of another state is refused.
    let other = StateHash::from_entries(
        StateCommitment::SparseMerkle,
        some_state(3).0.iter().map(|(k, v)| (k, v)),
    );
    let StateHash::SparseMerkle(other) = other else {
        unreachable!()
    };
    assert!(write_snapshot(&reader, &snaps, 0, "g", Some(&other)).is_err());
    let manifest = write_snapshot(&reader, &snaps, 0, "g", Some(tree)).unwrap();
    assert_eq!(manifest.format, FORMAT_PROVEN);
    assert_eq!(manifest.check("g", FORMAT_PROVEN), Ok(()));
    assert_eq!(manifest.entries, 2500);
    assert_eq!(manifest.chunks.len(), 3, "{manifest:?}");
    let chunk = |i: usize| {
        std::fs::read(snaps.join("0").join(crate::snapshot::chunk_name(i as u64))).unwrap()
    };
    let leaves = |bytes: &[u8]| {
        let (siblings, entries) = decode_chunk_of(FORMAT_PROVEN, bytes, u64::MAX).unwrap();
        let leaves: Vec<_> = entries
            .iter()
            .map(|(k, v)| (key_hash(k), value_hash(v)))
            .collect();
        (leaves, siblings)
    };
    let mut verifier = ChunkVerifier::new(hash.root());
    for i in 0..3 {
        let (l, sib) = leaves(&chunk(i));
        // Each chunk checks on arrival, before the next is seen; one out of place does not.
        if i == 1 {
            let (l2, sib2) = leaves(&chunk(2));
            assert!(verifier.clone().push(&l2, &sib2).is_err());
            let mut changed = l.clone();
            changed[7].1[0] ^= 1;
            assert!(matches!(
                verifier.clone().push(&changed, &sib),
                Err(ChunkError::LeftSibling { .. })
            ));
        }
        verifier.push(&l, &sib).unwrap();
    }
    verifier.finish().unwrap();
    assert_eq!(verifier.leaves(), 2500);
    let loaded = load_snapshot(&snaps.join("0")).unwrap();
    let want: BTreeMap<String, Vec<u8>> = entries.into_iter().collect();
    assert_eq!(loaded.map, want);
}

#[test]
fn pruning_deletes_old_blocks_and_their_transactions_never_the_head() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chain.sqlite");
    let mut s = Storage::open(&path).unwrap();
    let (entries, hash) = some_state(3);
    let mut prev = block(0, [0; 32], vec![], hash.root());
    s.commit_genesis(&prev, &entries, &hash, &BTreeMap::new(), "g", "e")
        .unwrap();
    let sender = key(1);
    for h in 1..=10u64 {
        let body = TxBody {
            chain_id: "c".into(),
            from: sender.address(),
            nonce: h - 1,
            action: Action::Faucet {
                token: "GOLD".into(),
            },
        };
        let tx = IncludedTx {
            tx: body.sign(&sender),
            receipt: Receipt::success(vec![], 1),
        };
        let b = block(h, prev.header.header.hash(), vec![tx], hash.root());
        let from = sender.address();
        s.commit_block(&b, &[(from.as_str(), h - 1)], &WriteSet::new(), &hash, &[])
            .unwrap();
        prev = b;
    }
    assert_eq!(s.prune_blocks_below(4, 2).unwrap(), 2, "at most 2 a call");
    assert_eq!(s.prune_blocks_below(4, 100).unwrap(), 4);
    assert_eq!(s.oldest_height().unwrap(), Some(4));
    assert!(s.block(3).unwrap().is_none());
    assert_eq!(s.block(4).unwrap().unwrap().txs.len(), 1);
    let txs: i64 = s
        .conn
        .query_row("SELECT COUNT(*) FROM txs", [], |r| r.get(0))
        .unwrap();
    assert_eq!(txs, 7, "blocks 4..=10 keep theirs");
    // Never the head, whatever asked.
    assert_eq!(s.prune_blocks_below(1000, 1000).unwrap(), 10);
    assert_eq!(s.head().unwrap().unwrap().header.header.height, 10);
    // Every header stays, chained from block 0 to the head.
    let headers = s.headers(0, 100).unwrap();
    assert_eq!(
        headers.iter().map(|(h, _)| *h).collect::<Vec<_>>(),
        (0..=10).collect::<Vec<_>>()
    );
    let mut prev = [0; 32];
    for (_, bytes) in &headers {
        let h: Header = borsh::from_slice(bytes).unwrap();
        assert_eq!(h.prev_hash, prev);
        prev = h.hash();
    }
    assert_eq!(prev, s.head().unwrap().unwrap().header.header.hash());
    assert_eq!(s.headers(3, 2).unwrap().len(), 2);
    assert!(s.headers(11, 5).unwrap().is_empty());
}

#[test]
fn a_base_on_a_validator_chain_keeps_its_parents_digest_to_serve_the_snapshot_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Storage::open(&dir.path().join("chain.sqlite")).unwrap();
    s.ensure_validator_tables().unwrap();
    let (entries, hash) = some_state(10);
    let base = block(40, [7; 32], vec![], hash.root());
    let finality = crate::storage::BaseFinality {
        record: ([1; 32], Some(vec![9, 9])),
        parent_digest: [2; 32],
    };
    s.import_base(
        &base,
        &[],
        &BTreeMap::new(),
        "g",
        "e",
        Some(&finality),
        &mut std::iter::empty(),
        |insert| {
            for (k, v) in &entries {
                insert(k.as_str(), v.as_slice())?;
            }
            Ok(Ok(hash.clone()))
        },
    )
    .unwrap()
    .unwrap();
    assert_eq!(
        s.validator_finality(40).unwrap(),
        Some(([1; 32], Some(vec![9, 9])))
    );
    // The parent: its digest, no certificate, and no block.
    assert_eq!(s.validator_finality(39).unwrap(), Some(([2; 32], None)));
    assert!(s.block(39).unwrap().is_none());
    assert_eq!(s.oldest_height().unwrap(), Some(40));
}

#[test]
fn a_games_start_is_its_first_step_replaced_once_by_its_first_that_moves_gold_and_each_session_step_keeps_its_record(
) {
    use gamechain_runtime::StartWitness;
    let dir = tempfile::tempdir().unwrap();
    let mut s = Storage::open(&dir.path().join("chain.sqlite")).unwrap();
    let hash = StateHash::from_entries(StateCommitment::SparseMerkle, [("bal/a/GOLD", &b"7"[..])]);
    let g = block(0, [0; 32], vec![], hash.root());
    s.commit_genesis(&g, &[], &hash, &BTreeMap::new(), "g", "e")
        .unwrap();
    let proof = hash.prove("bal/a/GOLD").unwrap();
    let w = |height: u64, moves: bool, proven: bool| StartWitness {
        module: "m".into(),
        game: "g1".into(),
        account: "a".into(),
        height,
        moves_balance: moves,
        proven: proven.then(|| (Some(b"7".to_vec()), proof.clone())),
        txid: format!("{height:064x}"),
        session: None,
    };
    let mut prev = g.header.header.hash();
    let mut commit = |s: &mut Storage, height: u64, witnesses: &[StartWitness]| {
        let b = block(height, prev, vec![], hash.root());
        prev = b.header.header.hash();
        s.commit_block(&b, &[], &WriteSet::new(), &hash, witnesses)
            .unwrap();
    };
    let at = |s: &Storage| {
        let rows = s.game_starts("m", "g1").unwrap();
        assert_eq!(rows.len(), 1);
        (rows[0].height, rows[0].proven.is_some())
    };
    // The first step (no GOLD moved) is kept while no step moves GOLD.
    commit(&mut s, 1, &[w(1, false, true)]);
    commit(&mut s, 2, &[w(2, false, true)]);
    assert_eq!(at(&s), (1, true));
    // The first step that moves the player's GOLD replaces it, unproven or not; once.
    commit(&mut s, 3, &[w(3, true, false), w(3, true, true)]);
    assert_eq!(at(&s), (3, false));
    commit(&mut s, 4, &[w(4, true, true)]);
    assert_eq!(at(&s), (3, false));
    assert!(s.game_starts("m", "other").unwrap().is_empty());

    // A session step's record, one per step (a step naming two games witnesses it twice).
    let session = |proven: bool| {
        Some(gamechain_runtime::SessionWitness {
            key: "session/a/k".into(),
            proven: proven.then(|| (None, proof.clone())),
        })
    };
    let mut step = w(5, false, true);
    step.session = session(true);
    let mut other_game = step.clone();
    other_game.game = "g2".into();
    let mut unproven = w(6, false, true);
    unproven.session = session(false);
    commit(&mut s, 5, &[step, other_game]);
    commit(&mut s, 6, &[unproven]);
    let txid = |h: u64| format!("{h:064x}");
    assert_eq!(
        s.session_step(&txid(5)).unwrap(),
        Some(("session/a/k".to_string(), Some((None, proof.clone()))))
    );
    assert_eq!(
        s.session_step(&txid(6)).unwrap(),
        Some(("session/a/k".to_string(), None))
    );
    assert_eq!(
        s.session_step(&txid(4)).unwrap(),
        None,
        "not a session step"
    );
}

#[test]
fn database_bytes_counts_what_the_wal_holds_and_equals_the_file_once_checkpointed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(crate::config::DB_FILE);
    let mut s = Storage::open(&path).unwrap();
    let mut hash = StateHash::from_entries(
        StateCommitment::LtHash16,
        std::iter::empty::<(&str, &[u8])>(),
    );
    let g = block(0, [0; 32], vec![], hash.root());
    s.commit_genesis(&g, &[], &hash, &BTreeMap::new(), "g", "e")
        .unwrap();
    let file = || std::fs::metadata(&path).unwrap().len();
    let (before, file_before) = (s.database_bytes().unwrap(), file());
    // 2,000 keys of 200 bytes: about 400 KB of pages, all in the WAL until a checkpoint.
    let mut writes = WriteSet::new();
    for i in 0..2_000 {
        let key = format!("m/t/k{i:05}");
        hash.apply(&key, None, Some(&[7; 200]));
        writes.insert(key, Some(vec![7; 200]));
    }
    let b1 = block(1, g.header.header.hash(), vec![], hash.root());
    s.commit_blocks(&[(&b1, &[][..])], &writes, &hash, &[])
        .unwrap();
    let after = s.database_bytes().unwrap();
    assert!(after >= before + 400_000, "{before} -> {after}");
    assert_eq!(file(), file_before, "the new pages are still in the WAL");
    // A reader sees the same size; the file reaches it once the WAL is folded in.
    assert_eq!(
        Storage::open_reader(&path)
            .unwrap()
            .database_bytes()
            .unwrap(),
        after
    );
    s.conn
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    assert_eq!(file(), after);
}
