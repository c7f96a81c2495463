//! Tests of `deploy` transactions: new modules, code stored once, upgrades by the owner only,
//! migrations (run once, rolled back on failure), refusals with their fixed texts, and deployed
//! modules being live for the next transaction and for end of block.

use std::collections::BTreeSet;

use super::*;
use crate::registry::CODE_PREFIX;

/// `gc_migrate` counts its runs in `runs` (one digit), stores its input under `input` and emits
/// it as `migrated`; `gc_apply` writes `v` = `2`, so the new code is seen to run.
pub(super) const MIGRATOR_WAT: &str = r#"
(module
  (import "gamechain_v1" "get" (func $get (param i32 i32 i32 i32) (result i64)))
  (import "gamechain_v1" "put" (func $put (param i32 i32 i32 i32)))
  (import "gamechain_v1" "emit" (func $emit (param i32 i32 i32 i32)))
  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 4096))
  (data (i32.const 16) "runs")
  (data (i32.const 24) "input")
  (data (i32.const 32) "migrated")
  (data (i32.const 48) "v")
  (data (i32.const 52) "2")
  (func (export "gc_abi_version") (result i32) (i32.const 1))
  (func (export "gc_alloc") (param $len i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.add (local.get $p) (local.get $len)))
    (local.get $p))
  (func (export "gc_apply") (param i32 i32 i32 i32) (result i32)
    (call $put (i32.const 48) (i32.const 1) (i32.const 52) (i32.const 1))
    (i32.const 0))
  (func (export "gc_view") (param i32 i32) (result i32) (i32.const 1))
  (func (export "gc_migrate") (param $s i32) (param $sl i32) (param $i i32) (param $il i32) (result i32)
    (if (i64.lt_s (call $get (i32.const 16) (i32.const 4) (i32.const 64) (i32.const 1)) (i64.const 0))
      (then (i32.store8 (i32.const 64) (i32.const 48))))
    (i32.store8 (i32.const 64) (i32.add (i32.load8_u (i32.const 64)) (i32.const 1)))
    (call $put (i32.const 16) (i32.const 4) (i32.const 64) (i32.const 1))
    (call $put (i32.const 24) (i32.const 5) (local.get $i) (local.get $il))
    (call $emit (i32.const 32) (i32.const 8) (local.get $i) (local.get $il))
    (i32.const 0)))
"#;

/// `gc_migrate` writes `x`, then fails with `invalid: migration refused`.
pub(super) const REFUSING_MIGRATOR_WAT: &str = r#"
(module
  (import "gamechain_v1" "put" (func $put (param i32 i32 i32 i32)))
  (import "gamechain_v1" "output" (func $output (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "x")
  (data (i32.const 64) "{\"code\":\"invalid\",\"message\":\"migration refused\"}")
  (func (export "gc_abi_version") (result i32) (i32.const 1))
  (func (export "gc_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "gc_apply") (param i32 i32 i32 i32) (result i32) (i32.const 0))
  (func (export "gc_view") (param i32 i32) (result i32) (i32.const 1))
  (func (export "gc_migrate") (param i32 i32 i32 i32) (result i32)
    (call $put (i32.const 16) (i32.const 1) (i32.const 16) (i32.const 1))
    (call $output (i32.const 64) (i32.const 48))
    (i32.const 1)))
"#;

/// `gc_migrate` writes `x`, then loops until its fuel runs out.
pub(super) const ENDLESS_MIGRATOR_WAT: &str = r#"
(module
  (import "gamechain_v1" "put" (func $put (param i32 i32 i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "x")
  (func (export "gc_abi_version") (result i32) (i32.const 1))
  (func (export "gc_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "gc_apply") (param i32 i32 i32 i32) (result i32) (i32.const 0))
  (func (export "gc_view") (param i32 i32) (result i32) (i32.const 1))
  (func (export "gc_migrate") (param i32 i32 i32 i32) (result i32)
    (call $put (i32.const 16) (i32.const 1) (i32.const 16) (i32.const 1))
    (loop $forever (br $forever))
    (i32.const 0)))
"#;

/// A module without `gc_view`: refused at load.
pub(super) const NO_VIEW_WAT: &str = r#"
(module
  (memory (export "memory") 1)
  (func (export "gc_abi_version") (result i32) (i32.const 1))
  (func (export "gc_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "gc_apply") (param i32 i32 i32 i32) (result i32) (i32.const 0)))
"#;

/// `gc_migrate` of the wrong type: refused at load.
const BAD_MIGRATE_WAT: &str = r#"
(module
  (memory (export "memory") 1)
  (func (export "gc_abi_version") (result i32) (i32.const 1))
  (func (export "gc_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "gc_apply") (param i32 i32 i32 i32) (result i32) (i32.const 0))
  (func (export "gc_view") (param i32 i32) (result i32) (i32.const 1))
  (func (export "gc_migrate") (result i32) (i32.const 0)))
"#;

pub(super) fn wasm(wat: &str) -> Vec<u8> {
    wat::parse_str(wat).unwrap()
}

pub(super) fn hash(code: &[u8]) -> String {
    hex::encode(Sha256::digest(code))
}

pub(super) fn deploy(sk: &SecretKey, nonce: u64, module: &str, code: &[u8]) -> SignedTx {
    tx(sk, nonce, Action::deploy(module, code.to_vec()))
}

pub(super) fn call(sk: &SecretKey, nonce: u64, module: &str) -> SignedTx {
    tx(sk, nonce, Action::game(module, &json!({})))
}

fn deploy_event(module: &str, code: &[u8], owner: &str, upgrade: bool) -> Event {
    ev(
        "deploy",
        json!({"code_hash": hash(code), "module": module, "owner": owner, "upgrade": upgrade}),
    )
}

impl Chain {
    pub(super) fn get(&self, key: &str) -> Option<Vec<u8>> {
        self.state.map.get(key).cloned()
    }

    pub(super) fn record(&self, id: &str) -> ModuleRecord {
        serde_json::from_slice(&self.get(&module_record_key(id)).expect("a record")).unwrap()
    }

    fn code_keys(&self) -> usize {
        self.state.scan(CODE_PREFIX, None, 100).len()
    }
}

pub(super) fn error(r: &Receipt) -> &str {
    assert!(!r.ok && r.events.is_empty(), "{r:?}");
    r.error.as_deref().unwrap()
}

#[test]
fn a_deployed_module_is_live_for_the_next_transaction() {
    let mut chain = Chain::new(&[&TICKER], None);
    let a = ALICE.address();
    assert_eq!(chain.code_keys(), 1, "genesis stores its module's code");
    let out = chain.block(vec![
        call(&ALICE, 0, "counter"),
        deploy(&ALICE, 1, "counter", &COUNTER.wasm),
        call(&BOB, 0, "counter"),
        call(&BOB, 1, "counter"),
    ]);
    let r = &out.receipts;
    assert_eq!(error(&r[0]), "not found: module counter");
    assert_eq!(
        r[1],
        Receipt::success(vec![deploy_event("counter", &COUNTER.wasm, &a, false)], 0)
    );
    assert!(r[2].ok && r[3].ok, "{r:?}");
    assert_eq!(r[3].events, [ev("counter.incremented", json!({"n": 2}))]);
    assert_eq!(chain.get("m/counter/n").unwrap(), b"2");
    assert_eq!(
        chain.record("counter"),
        ModuleRecord {
            abi_version: 1,
            code_hash: COUNTER.hash(),
            deployed_height: 1,
            owner: a.clone(),
            pending_upgrade: None,
            policy: None,
            upgraded_height: None,
        }
    );
    assert_eq!(
        chain.get(&module_record_key("counter")).unwrap(),
        format!(
            r#"{{"abi_version":1,"code_hash":"{}","deployed_height":1,"owner":"{a}"}}"#,
            COUNTER.hash()
        )
        .into_bytes()
    );
    assert_eq!(chain.get(&code_key(&COUNTER.hash())).unwrap(), COUNTER.wasm);
    assert_eq!(chain.code_keys(), 2);
    // Escrow accounts of deployed modules work like genesis ones.
    let kv = Overlay::new(&chain.state);
    assert_eq!(ledger::balance(&kv, "module:counter", GOLD), 0);
}

#[test]
fn the_same_code_under_two_ids_is_stored_once_and_keeps_separate_state() {
    let mut chain = Chain::new(&[&TICKER], None);
    let out = chain.block(vec![
        deploy(&ALICE, 0, "c1", &COUNTER.wasm),
        deploy(&BOB, 0, "c2", &COUNTER.wasm),
        call(&CAROL, 0, "c1"),
        call(&CAROL, 1, "c1"),
        call(&CAROL, 2, "c2"),
    ]);
    assert!(out.receipts.iter().all(|r| r.ok), "{:?}", out.receipts);
    let code = code_key(&COUNTER.hash());
    assert_eq!(out.writes.keys().filter(|k| **k == code).count(), 1);
    assert_eq!(
        chain.code_keys(),
        2,
        "genesis code + one copy of the counter"
    );
    assert_eq!(chain.get("m/c1/n").unwrap(), b"2");
    assert_eq!(chain.get("m/c2/n").unwrap(), b"1");
    assert_eq!(chain.record("c2").owner, BOB.address());
    // Redeploying the same code under a third id in a later block writes no code.
    let out = chain.block(vec![deploy(&ALICE, 1, "c3", &COUNTER.wasm)]);
    assert!(out.receipts[0].ok);
    assert!(!out.writes.contains_key(&code));
}

#[test]
fn refusals_have_fixed_texts_write_nothing_and_use_the_nonce() {
    let mut chain = Chain::new(&[&TICKER], None);
    chain.block(vec![deploy(&ALICE, 0, "mine", &COUNTER.wasm)]);
    let before = chain.state.clone();
    let long = "a".repeat(33);
    let cases: Vec<(SignedTx, String)> = vec![
        (
            deploy(&BOB, 0, "Chess", &COUNTER.wasm),
            "invalid: module id `Chess` must be 1 to 32 of a-z, 0-9 and _, starting with a letter"
                .into(),
        ),
        (
            deploy(&BOB, 1, "9lives", &COUNTER.wasm),
            "invalid: module id `9lives` must be 1 to 32 of a-z, 0-9 and _, starting with a letter"
                .into(),
        ),
        (
            deploy(&BOB, 2, &long, &COUNTER.wasm),
            format!("invalid: module id `{long}` must be 1 to 32 of a-z, 0-9 and _, starting with a letter"),
        ),
        (
            deploy(&BOB, 3, "deploy", &COUNTER.wasm),
            "invalid: module id `deploy` is reserved".into(),
        ),
        (
            deploy(&BOB, 4, "code", &COUNTER.wasm),
            "invalid: module id `code` is reserved".into(),
        ),
        (
            deploy(&BOB, 5, "ticker", &COUNTER.wasm),
            "invalid: module ticker is a genesis module and cannot be upgraded".into(),
        ),
        (
            deploy(&BOB, 6, "mine", &TICKER.wasm),
            format!(
                "invalid: only the owner {} may upgrade module mine",
                ALICE.address()
            ),
        ),
        (
            deploy(&ALICE, 1, "mine", &COUNTER.wasm),
            format!("invalid: module mine already runs code {}", COUNTER.hash()),
        ),
        (
            deploy(&BOB, 7, "fresh", &wasm(NO_VIEW_WAT)),
            "invalid: module code: export gc_view is missing, ABI v1 requires it".into(),
        ),
        (
            deploy(&ALICE, 2, "mine", &wasm(NO_VIEW_WAT)),
            "invalid: module code: export gc_view is missing, ABI v1 requires it".into(),
        ),
        (
            deploy(&ALICE, 3, "mine", &wasm(BAD_MIGRATE_WAT)),
            "invalid: module code: export gc_migrate has type () -> i32, ABI v1 requires (i32, i32, i32, i32) -> i32".into(),
        ),
    ];
    let (txs, texts): (Vec<_>, Vec<_>) = cases.into_iter().unzip();
    let out = chain.block(txs);
    for (r, text) in out.receipts.iter().zip(&texts) {
        assert_eq!(error(r), text);
        assert_eq!(r.fuel_used, 0);
    }
    // Only the nonces moved.
    let mut keys: BTreeSet<String> = out.writes.keys().cloned().collect();
    assert!(keys.remove("m/ticker/n"), "the genesis ticker's end_block");
    assert_eq!(
        keys,
        BTreeSet::from([nonce_key(&ALICE.address()), nonce_key(&BOB.address())])
    );
    assert_eq!(chain.nonce(&BOB), 8);
    assert_eq!(chain.record("mine"), {
        let r: ModuleRecord =
            serde_json::from_slice(&before.map[&module_record_key("mine")]).unwrap();
        r
    });
}

#[test]
fn the_owner_upgrades_state_stays_and_the_migration_runs_once() {
    let mut chain = Chain::new(&[&TICKER], None);
    let a = ALICE.address();
    chain.block(vec![
        deploy(&ALICE, 0, "ctr", &COUNTER.wasm),
        call(&BOB, 0, "ctr"),
        call(&BOB, 1, "ctr"),
    ]);
    assert_eq!(chain.get("m/ctr/n").unwrap(), b"2");
    let v2 = wasm(MIGRATOR_WAT);
    let out = chain.block(vec![deploy(&ALICE, 1, "ctr", &v2), call(&BOB, 2, "ctr")]);
    let input = json!({"from_code_hash": COUNTER.hash(), "to_code_hash": hash(&v2)});
    let r = &out.receipts[0];
    assert!(r.ok, "{r:?}");
    assert_eq!(
        r.events,
        [
            deploy_event("ctr", &v2, &a, true),
            ev("migrated", input.clone())
        ]
    );
    assert!(r.fuel_used > 0, "the migration's fuel");
    assert!(out.receipts[1].ok, "the new code runs the next transaction");
    assert_eq!(
        chain.get("m/ctr/n").unwrap(),
        b"2",
        "state under the id stays"
    );
    assert_eq!(chain.get("m/ctr/runs").unwrap(), b"1");
    assert_eq!(
        chain.get("m/ctr/input").unwrap(),
        input.to_string().into_bytes()
    );
    assert_eq!(chain.get("m/ctr/v").unwrap(), b"2");
    assert_eq!(
        chain.record("ctr"),
        ModuleRecord {
            abi_version: 1,
            code_hash: hash(&v2),
            deployed_height: 1,
            owner: a.clone(),
            pending_upgrade: None,
            policy: None,
            upgraded_height: Some(2),
        }
    );
    assert!(
        chain.get(&code_key(&COUNTER.hash())).is_some(),
        "old code stays for replay"
    );
    // Later transactions do not migrate again.
    chain.block(vec![call(&BOB, 3, "ctr"), call(&CAROL, 0, "ctr")]);
    assert_eq!(chain.get("m/ctr/runs").unwrap(), b"1");
    // A new module's gc_migrate is not run.
    chain.block(vec![deploy(&BOB, 4, "fresh", &v2)]);
    assert_eq!(chain.get("m/fresh/runs"), None);
}

#[test]
fn a_failed_migration_rolls_the_upgrade_back() {
    let mut chain = Chain::new(&[&TICKER], None);
    chain.block(vec![
        deploy(&ALICE, 0, "ctr", &COUNTER.wasm),
        call(&BOB, 0, "ctr"),
    ]);
    let record = chain.record("ctr");
    let refusing = wasm(REFUSING_MIGRATOR_WAT);
    let endless = wasm(ENDLESS_MIGRATOR_WAT);
    let out = chain.block(vec![
        deploy(&ALICE, 1, "ctr", &refusing),
        deploy(&ALICE, 2, "ctr", &endless),
        call(&BOB, 1, "ctr"),
    ]);
    let r = &out.receipts;
    assert_eq!(error(&r[0]), "invalid: migration refused");
    assert!(r[0].fuel_used > 0);
    assert_eq!(error(&r[1]), "internal: out of fuel");
    assert_eq!(r[1].fuel_used, RUNTIME.config().fuel_apply);
    assert_eq!(
        r[2].events,
        [ev("counter.incremented", json!({"n": 2}))],
        "the old code still runs"
    );
    assert_eq!(chain.record("ctr"), record);
    assert_eq!(chain.get("m/ctr/x"), None);
    for code in [&refusing, &endless] {
        assert_eq!(chain.get(&code_key(&hash(code))), None);
    }
    assert_eq!(chain.nonce(&ALICE), 3, "failed deploys use their nonce");
}

#[test]
fn end_block_runs_for_deployed_modules_in_id_order() {
    let mut chain = Chain::new(&[&TICKER], None);
    // `aticker` sorts before the genesis `ticker`, `zticker` after; both run from this block.
    let out = chain.block(vec![
        deploy(&ALICE, 0, "zticker", &TICKER.wasm),
        deploy(&ALICE, 1, "aticker", &TICKER.wasm),
        deploy(&ALICE, 2, "counter", &COUNTER.wasm),
    ]);
    let ids: Vec<&str> = out.end_block.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(
        ids,
        ["aticker", "ticker", "zticker"],
        "counter has no gc_end_block"
    );
    assert!(out.end_block.iter().all(|(_, r)| r.ok));
    chain.block(vec![]);
    for id in ["aticker", "zticker"] {
        assert_eq!(chain.get(&format!("m/{id}/n")).unwrap(), b"2");
    }
    assert_eq!(chain.get("m/ticker/n").unwrap(), b"2");
}

#[test]
fn deploys_replay_to_the_same_block_on_a_fresh_context() {
    let txs = vec![
        deploy(&ALICE, 0, "ctr", &COUNTER.wasm),
        call(&BOB, 0, "ctr"),
        deploy(&ALICE, 1, "ctr", &wasm(MIGRATOR_WAT)),
        call(&BOB, 1, "ctr"),
    ];
    let mut a = Chain::new(&[&TICKER], None);
    let input = a.input(txs.clone());
    let out = a.block(txs);
    // A verifier with nothing preloaded compiles everything from the state it replays.
    let genesis = a.ctx.genesis().clone();
    let verifier = ChainContext::new(genesis.clone(), RUNTIME.clone(), Modules::new()).unwrap();
    let g = genesis_state(&genesis, &codes(&[&TICKER])).unwrap();
    let state = MemState {
        map: g.entries.into_iter().collect(),
    };
    let replay = execute_block(&verifier, &state, &g.state_hash, &g.header, &input).unwrap();
    assert_eq!(replay.receipts, out.receipts);
    assert_eq!(replay.writes, out.writes);
    assert_eq!(replay.header.state_root, out.header.state_root);
}

/// `MIGRATOR_WAT` with a custom section of about `bytes` bytes whose contents depend on `n`.
fn padded(n: u8, bytes: usize) -> Vec<u8> {
    let mut code = wasm(MIGRATOR_WAT);
    let mut section = vec![1u8, b'p'];
    section.extend((0..bytes as u32).map(|i| (i as u8) ^ n));
    code.push(0);
    let mut len = section.len();
    loop {
        let byte = (len & 0x7f) as u8;
        len >>= 7;
        if len == 0 {
            code.push(byte);
            break;
        }
        code.push(byte | 0x80);
    }
    code.extend(section);
    code
}

#[test]
fn a_block_stops_at_its_bounds_and_a_block_over_them_is_invalid() {
    let chain = Chain::new(&[], Some(1_000));
    let author = key(9);
    // Deploys of ~1 MB of code: bodies of ~1.33 MB, so the 26th crosses 32 MiB of bodies.
    let txs: Vec<SignedTx> = (0..30u8)
        .map(|i| {
            deploy(
                &author,
                u64::from(i),
                &format!("m{i}"),
                &padded(i, 1_000_000),
            )
        })
        .collect();
    let mut builder = BlockBuilder::new(
        &chain.ctx,
        &chain.state,
        &chain.hash,
        &chain.head,
        chain.input(vec![]).time_ms,
        chain.input(vec![]).checkpoint,
        None,
    )
    .unwrap();
    let mut included = Vec::new();
    let mut full = None;
    for t in &txs {
        match builder.push(t) {
            Ok(r) => {
                assert!(r.ok, "{:?}", r.error);
                included.push(t.clone());
            }
            Err(TransitionError::InvalidTx { reason, .. }) => {
                full = Some(reason);
                break;
            }
            Err(e) => panic!("{e}"),
        }
    }
    let body_bytes: usize = included.iter().map(|t| t.body().len()).sum();
    assert_eq!(
        full,
        Some(TxRejection::BlockFull {
            what: "bytes of transaction bodies",
            limit: MAX_BLOCK_BODY_BYTES
        })
    );
    assert!(body_bytes as u64 <= MAX_BLOCK_BODY_BYTES);
    assert!(body_bytes as u64 + txs[included.len()].body().len() as u64 > MAX_BLOCK_BODY_BYTES);
    // What the builder made is a valid block; one more transaction makes it invalid.
    let made = builder.finish().unwrap();
    let replayed = chain.try_block(included.clone()).unwrap();
    assert_eq!(made.header, replayed.header);
    let mut over = included.clone();
    over.push(txs[included.len()].clone());
    match chain.try_block(over) {
        Err(TransitionError::InvalidTx { index, reason, .. }) => {
            assert_eq!(index, included.len());
            assert!(matches!(reason, TxRejection::BlockFull { .. }), "{reason}");
        }
        other => panic!(
            "a block over its bounds must be invalid: {:?}",
            other.map(|o| o.header)
        ),
    }
}

#[test]
fn genesis_caps_deploys_per_block_before_compiling_them() {
    let mut genesis = genesis_with(&[], Some(1_000));
    genesis.max_block_deploys = Some(3);
    genesis.max_block_code_bytes = Some(1_200_000 + 3 * 4_000);
    let chain = Chain::of(&[], genesis);
    let author = key(9);
    // Three small deploys, then a fourth: over the count cap.
    let small: Vec<SignedTx> = (0..4u8)
        .map(|i| deploy(&author, u64::from(i), &format!("s{i}"), &padded(i, 1_000)))
        .collect();
    let out = chain.try_block(small[..3].to_vec()).unwrap();
    assert!(out.receipts.iter().all(|r| r.ok));
    match chain.try_block(small.clone()) {
        Err(TransitionError::InvalidTx {
            index: 3, reason, ..
        }) => assert_eq!(
            reason,
            TxRejection::BlockFull {
                what: "deploys",
                limit: 3
            }
        ),
        other => panic!("{:?}", other.map(|o| o.header)),
    }
    // A large one and a second large one: over the bytes cap, checked before any compile (the
    // second is not even valid wasm, so a compile would fail with another text).
    let mut junk = padded(1, 1_000_000);
    junk[0] = b'x';
    let big = vec![
        deploy(&author, 0, "b0", &padded(0, 1_000_000)),
        deploy(&author, 1, "b1", &junk),
    ];
    match chain.try_block(big.clone()) {
        Err(TransitionError::InvalidTx {
            index: 1, reason, ..
        }) => assert_eq!(
            reason,
            TxRejection::BlockFull {
                what: "bytes of deploy code",
                limit: 1_212_000
            }
        ),
        other => panic!("{:?}", other.map(|o| o.header)),
    }
    // A builder leaves the one over the cap for the next block; what it made replays.
    let mut builder = BlockBuilder::new(
        &chain.ctx,
        &chain.state,
        &chain.hash,
        &chain.head,
        chain.input(vec![]).time_ms,
        chain.input(vec![]).checkpoint,
        None,
    )
    .unwrap();
    assert!(builder.push(&big[0]).unwrap().ok);
    assert!(matches!(
        builder.push(&big[1]),
        Err(TransitionError::InvalidTx {
            reason: TxRejection::BlockFull { .. },
            ..
        })
    ));
    let made = builder.finish().unwrap();
    assert_eq!(
        made.header,
        chain.try_block(big[..1].to_vec()).unwrap().header
    );
    // A genesis without the fields has no caps: the same four small deploys are one block.
    let legacy = Chain::new(&[], Some(1_000));
    assert_eq!(
        legacy.ctx.genesis().block_caps(),
        crate::chain::BlockCaps::NONE
    );
    assert!(legacy.try_block(small).is_ok());
}
