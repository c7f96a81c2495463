//! Tests of upgrade policies: immutable modules refuse every change, a timelocked module's
//! upgrade is announced and takes effect only once its delay has passed in block time (activated
//! by anyone, cancellable by the owner, its migration run then), policies only tighten, and the
//! refusals the transition makes are exactly what [`upgrade_refusal`] (a node's admission check)
//! refuses.

use super::deploy::{call, deploy, error, hash, wasm, MIGRATOR_WAT};
use super::*;
use crate::chain::{PendingUpgrade, UpgradePolicy};

const DELAY: u64 = 60_000;

fn timelocked(delay_ms: u64) -> UpgradePolicy {
    UpgradePolicy::Timelocked { delay_ms }
}

fn deploy_with(
    sk: &SecretKey,
    nonce: u64,
    module: &str,
    code: &[u8],
    policy: UpgradePolicy,
) -> SignedTx {
    tx(
        sk,
        nonce,
        Action::Deploy {
            module: module.into(),
            code: code.to_vec(),
            policy: Some(policy),
        },
    )
}

fn activate(sk: &SecretKey, nonce: u64, module: &str) -> SignedTx {
    tx(
        sk,
        nonce,
        Action::ActivateUpgrade {
            module: module.into(),
        },
    )
}

fn cancel(sk: &SecretKey, nonce: u64, module: &str) -> SignedTx {
    tx(
        sk,
        nonce,
        Action::CancelUpgrade {
            module: module.into(),
        },
    )
}

fn set_policy(sk: &SecretKey, nonce: u64, module: &str, policy: UpgradePolicy) -> SignedTx {
    tx(
        sk,
        nonce,
        Action::SetPolicy {
            module: module.into(),
            policy,
        },
    )
}

/// Every refused transaction of `out` must be refused by `upgrade_refusal` on the record
/// `before` with the same text (`invalid: ` and the text), so admission and the transition agree.
fn admission_agrees(tx: &SignedTx, record: Option<&ModuleRecord>, receipt: &Receipt) {
    let body = TxBody::parse(tx.body()).unwrap();
    let refused = upgrade_refusal(&body.action, &body.from, record);
    assert_eq!(
        refused.map(|m| format!("invalid: {m}")).as_deref(),
        receipt.error.as_deref(),
        "{body:?}"
    );
}

#[test]
fn an_immutable_module_refuses_every_change_from_anybody() {
    let mut chain = Chain::new(&[&TICKER], None);
    let out = chain.block(vec![deploy_with(
        &ALICE,
        0,
        "fixed",
        &COUNTER.wasm,
        UpgradePolicy::Immutable,
    )]);
    let r = &out.receipts[0];
    assert!(r.ok, "{r:?}");
    assert_eq!(
        r.events,
        [ev(
            "deploy",
            json!({"code_hash": COUNTER.hash(), "module": "fixed", "owner": ALICE.address(),
                   "policy": {"kind": "immutable"}, "upgrade": false})
        )]
    );
    let record = chain.record("fixed");
    assert_eq!(record.policy(), UpgradePolicy::Immutable);
    assert_eq!(
        chain.get(&module_record_key("fixed")).unwrap(),
        format!(
            r#"{{"abi_version":1,"code_hash":"{}","deployed_height":1,"owner":"{}","policy":{{"kind":"immutable"}}}}"#,
            COUNTER.hash(),
            ALICE.address()
        )
        .into_bytes()
    );
    let v2 = wasm(MIGRATOR_WAT);
    let txs = vec![
        deploy(&ALICE, 1, "fixed", &v2),
        deploy(&BOB, 0, "fixed", &v2),
        set_policy(&ALICE, 2, "fixed", UpgradePolicy::Owner),
        cancel(&ALICE, 3, "fixed"),
        activate(&BOB, 1, "fixed"),
        deploy(&BOB, 2, "ticker", &v2),
        set_policy(&BOB, 3, "ticker", timelocked(5)),
    ];
    let out = chain.block(txs.clone());
    let texts = [
        "invalid: module fixed is immutable and cannot be upgraded".to_string(),
        "invalid: module fixed is immutable and cannot be upgraded".to_string(),
        "invalid: module fixed is immutable: its policy cannot change".to_string(),
        "invalid: module fixed is immutable and has no upgrades".to_string(),
        "invalid: module fixed has no pending upgrade".to_string(),
        "invalid: module ticker is a genesis module and cannot be upgraded".to_string(),
        "invalid: module ticker is immutable: its policy cannot change".to_string(),
    ];
    for (i, (r, text)) in out.receipts.iter().zip(&texts).enumerate() {
        assert_eq!(error(r), text, "tx {i}");
    }
    for (i, tx) in txs.iter().enumerate() {
        if i == 4 {
            continue; // activate_upgrade: anyone may send it; refused by the chain's state only.
        }
        let id = TxBody::parse(tx.body())
            .unwrap()
            .action
            .upgrade_module()
            .unwrap()
            .to_string();
        let record = read_record(&chain.state, &id).unwrap();
        admission_agrees(tx, record.as_ref(), &out.receipts[i]);
    }
    assert_eq!(chain.record("fixed"), record, "nothing changed");
    assert_eq!(chain.get(&code_key(&hash(&v2))), None, "no code stored");
    assert_eq!(chain.record("ticker").policy(), UpgradePolicy::Immutable);
}

#[test]
fn a_timelocked_upgrade_is_announced_and_takes_effect_only_after_its_delay() {
    let mut chain = Chain::new(&[&TICKER], None);
    let (a, b) = (ALICE.address(), BOB.address());
    chain.block(vec![
        deploy_with(&ALICE, 0, "ctr", &COUNTER.wasm, timelocked(DELAY)),
        call(&BOB, 0, "ctr"),
    ]);
    assert_eq!(chain.record("ctr").policy(), timelocked(DELAY));
    let v2 = wasm(MIGRATOR_WAT);
    let t1 = chain.head.time_ms + 1_000;
    let out = chain.block_at(
        t1,
        vec![deploy(&ALICE, 1, "ctr", &v2), call(&BOB, 1, "ctr")],
    );
    let due = t1 + DELAY;
    assert_eq!(
        out.receipts[0],
        Receipt::success(
            vec![ev(
                "upgrade_announced",
                json!({"activates_at_ms": due, "announced_at_ms": t1, "code_hash": hash(&v2),
                       "from_code_hash": COUNTER.hash(), "module": "ctr"})
            )],
            0
        )
    );
    assert_eq!(
        out.receipts[1].events,
        [ev("counter.incremented", json!({"n": 2}))],
        "the old code still runs"
    );
    let record = chain.record("ctr");
    assert_eq!(record.code_hash, COUNTER.hash());
    assert_eq!(
        record.pending_upgrade,
        Some(PendingUpgrade {
            activates_at_ms: due,
            announced_at_ms: t1,
            code_hash: hash(&v2),
        })
    );
    assert_eq!(
        chain.get(&code_key(&hash(&v2))).unwrap(),
        v2,
        "the announced code is stored"
    );
    assert_eq!(
        chain.get("m/ctr/runs"),
        None,
        "no migration at the announcement"
    );

    // Before the delay: refused, for the owner too; a second announcement is refused.
    let early = due - 1_000;
    let out = chain.block_at(
        early,
        vec![
            activate(&BOB, 2, "ctr"),
            activate(&ALICE, 2, "ctr"),
            deploy(&ALICE, 3, "ctr", &TICKER.wasm),
        ],
    );
    let not_yet = format!(
        "invalid: the upgrade of module ctr to code {} may be activated from block time {due} ms; this block's is {early} ms",
        hash(&v2)
    );
    assert_eq!(error(&out.receipts[0]), not_yet);
    assert_eq!(error(&out.receipts[1]), not_yet);
    assert_eq!(
        error(&out.receipts[2]),
        format!(
            "invalid: module ctr has a pending upgrade to code {} already: cancel it first",
            hash(&v2)
        )
    );
    assert_eq!(chain.record("ctr"), record);

    // Once due, anyone activates it: the migration runs (sender the owner), the new code runs.
    let out = chain.block_at(due, vec![activate(&CAROL, 0, "ctr"), call(&BOB, 3, "ctr")]);
    let input = json!({"from_code_hash": COUNTER.hash(), "to_code_hash": hash(&v2)});
    let r = &out.receipts[0];
    assert!(r.ok, "{r:?}");
    assert_eq!(
        r.events,
        [
            ev(
                "upgrade_activated",
                json!({"code_hash": hash(&v2), "from_code_hash": COUNTER.hash(), "module": "ctr"})
            ),
            ev("migrated", input)
        ]
    );
    assert!(r.fuel_used > 0);
    assert_eq!(chain.get("m/ctr/runs").unwrap(), b"1");
    assert_eq!(chain.get("m/ctr/v").unwrap(), b"2", "the new code ran");
    let after = chain.record("ctr");
    assert_eq!(
        after,
        ModuleRecord {
            abi_version: 1,
            code_hash: hash(&v2),
            deployed_height: 1,
            owner: a,
            pending_upgrade: None,
            policy: Some(timelocked(DELAY)),
            upgraded_height: Some(chain.head.height),
        }
    );
    let out = chain.block(vec![activate(&CAROL, 1, "ctr")]);
    assert_eq!(
        error(&out.receipts[0]),
        "invalid: module ctr has no pending upgrade"
    );
    assert_ne!(b, after.owner);
}

#[test]
fn the_owner_cancels_a_pending_upgrade_and_nobody_else_can() {
    let mut chain = Chain::new(&[&TICKER], None);
    chain.block(vec![deploy_with(
        &ALICE,
        0,
        "ctr",
        &COUNTER.wasm,
        timelocked(DELAY),
    )]);
    let v2 = wasm(MIGRATOR_WAT);
    chain.block(vec![deploy(&ALICE, 1, "ctr", &v2)]);
    let pending = chain.record("ctr");
    let txs = vec![cancel(&BOB, 0, "ctr"), deploy(&BOB, 1, "ctr", &v2)];
    let out = chain.block(txs.clone());
    assert_eq!(
        error(&out.receipts[0]),
        format!(
            "invalid: only the owner {} may cancel an upgrade of module ctr",
            ALICE.address()
        )
    );
    assert_eq!(
        error(&out.receipts[1]),
        format!(
            "invalid: only the owner {} may upgrade module ctr",
            ALICE.address()
        )
    );
    for (tx, r) in txs.iter().zip(&out.receipts) {
        admission_agrees(tx, Some(&pending), r);
    }
    let out = chain.block(vec![cancel(&ALICE, 2, "ctr"), cancel(&ALICE, 3, "ctr")]);
    assert_eq!(
        out.receipts[0].events,
        [ev(
            "upgrade_cancelled",
            json!({"code_hash": hash(&v2), "module": "ctr"})
        )]
    );
    assert_eq!(
        error(&out.receipts[1]),
        "invalid: module ctr has no pending upgrade"
    );
    let record = chain.record("ctr");
    assert_eq!(
        (record.pending_upgrade, &record.code_hash),
        (None, &COUNTER.hash())
    );
    // Long after, nothing is left to activate.
    let later = chain.head.time_ms + 10 * DELAY;
    let out = chain.block_at(later, vec![activate(&BOB, 2, "ctr")]);
    assert_eq!(
        error(&out.receipts[0]),
        "invalid: module ctr has no pending upgrade"
    );
    assert_eq!(chain.record("ctr").code_hash, COUNTER.hash());
}

#[test]
fn policies_only_tighten_and_a_tighter_one_governs_the_pending_upgrade() {
    let mut chain = Chain::new(&[&TICKER], None);
    chain.block(vec![deploy(&ALICE, 0, "ctr", &COUNTER.wasm)]);
    assert_eq!(chain.record("ctr").policy(), UpgradePolicy::Owner);
    assert_eq!(
        chain.record("ctr").policy,
        None,
        "owner is the legacy record"
    );
    let out = chain.block(vec![
        set_policy(&BOB, 0, "ctr", timelocked(DELAY)),
        set_policy(&ALICE, 1, "ctr", UpgradePolicy::Owner),
        set_policy(&ALICE, 2, "ctr", timelocked(DELAY)),
        deploy_with(&ALICE, 3, "ctr", &TICKER.wasm, UpgradePolicy::Owner),
        set_policy(&ALICE, 4, "ctr", timelocked(DELAY - 1)),
        set_policy(&ALICE, 5, "ctr", UpgradePolicy::Owner),
        set_policy(&ALICE, 6, "ctr", timelocked(DELAY)),
    ]);
    let r = &out.receipts;
    assert_eq!(
        error(&r[0]),
        format!(
            "invalid: only the owner {} may change the policy of module ctr",
            ALICE.address()
        )
    );
    assert_eq!(
        error(&r[1]),
        "invalid: module ctr has policy owner: a policy can only be tightened (owner, then timelocked with a longer delay, then immutable), not changed to owner"
    );
    assert_eq!(
        r[2].events,
        [ev(
            "policy_set",
            json!({"module": "ctr", "policy": {"kind": "timelocked", "delay_ms": DELAY},
                   "previous": {"kind": "owner"}})
        )]
    );
    assert_eq!(
        error(&r[3]),
        "invalid: module ctr has policy timelocked 60000 ms: a deploy cannot change it (send set_policy)"
    );
    for (i, shorter) in [
        (4, "timelocked 59999 ms"),
        (5, "owner"),
        (6, "timelocked 60000 ms"),
    ] {
        assert_eq!(
            error(&r[i]),
            format!(
                "invalid: module ctr has policy timelocked 60000 ms: a policy can only be tightened (owner, then timelocked with a longer delay, then immutable), not changed to {shorter}"
            )
        );
    }

    // A longer delay reschedules the pending upgrade from its announcement.
    let v2 = wasm(MIGRATOR_WAT);
    let t = chain.head.time_ms + 1_000;
    chain.block_at(t, vec![deploy(&ALICE, 7, "ctr", &v2)]);
    let out = chain.block(vec![set_policy(&ALICE, 8, "ctr", timelocked(3 * DELAY))]);
    assert_eq!(
        out.receipts[0].events[1],
        ev(
            "upgrade_rescheduled",
            json!({"activates_at_ms": t + 3 * DELAY, "code_hash": hash(&v2), "module": "ctr"})
        )
    );
    let out = chain.block_at(t + DELAY, vec![activate(&BOB, 1, "ctr")]);
    assert!(error(&out.receipts[0]).contains("may be activated from block time"));

    // Immutable cancels it, and is final.
    let out = chain.block(vec![
        set_policy(&ALICE, 9, "ctr", UpgradePolicy::Immutable),
        set_policy(&ALICE, 10, "ctr", timelocked(10 * DELAY)),
    ]);
    assert_eq!(
        out.receipts[0].events,
        [
            ev(
                "policy_set",
                json!({"module": "ctr", "policy": {"kind": "immutable"},
                       "previous": {"kind": "timelocked", "delay_ms": 3 * DELAY}})
            ),
            ev(
                "upgrade_cancelled",
                json!({"code_hash": hash(&v2), "module": "ctr"})
            )
        ]
    );
    assert_eq!(
        error(&out.receipts[1]),
        "invalid: module ctr is immutable: its policy cannot change"
    );
    let record = chain.record("ctr");
    assert_eq!(
        (record.policy(), record.pending_upgrade),
        (UpgradePolicy::Immutable, None)
    );
    let out = chain.block_at(t + 10 * DELAY, vec![activate(&BOB, 2, "ctr")]);
    assert_eq!(
        error(&out.receipts[0]),
        "invalid: module ctr has no pending upgrade"
    );
    assert_eq!(chain.record("ctr").code_hash, COUNTER.hash());
}

#[test]
fn upgrade_actions_on_a_missing_module_are_not_found() {
    let mut chain = Chain::new(&[&TICKER], None);
    let out = chain.block(vec![
        activate(&BOB, 0, "ghost"),
        cancel(&BOB, 1, "ghost"),
        set_policy(&BOB, 2, "ghost", UpgradePolicy::Immutable),
    ]);
    for r in &out.receipts {
        assert_eq!(error(r), "not found: module ghost");
    }
    assert_eq!(
        upgrade_refusal(
            &Action::CancelUpgrade {
                module: "ghost".into()
            },
            "x",
            None
        ),
        None
    );
}

#[test]
fn a_timelock_beyond_its_bound_is_not_a_transaction() {
    let body = format!(
        r#"{{"chain_id":"{CHAIN}","from":"{}","nonce":0,"action":{{"type":"set_policy","module":"m","policy":{{"kind":"timelocked","delay_ms":{}}}}}}}"#,
        ALICE.address(),
        crate::chain::MAX_TIMELOCK_DELAY_MS + 1
    );
    assert_eq!(TxBody::parse(&body).unwrap_err().code(), "bad_json");
}

#[test]
fn records_made_before_policies_keep_their_bytes_and_read_as_their_old_rules() {
    // A genesis module: the record every chain made before policies holds, byte for byte, read
    // as immutable; a deploy without a policy: the old record too, read as owner.
    let mut chain = Chain::new(&[&TICKER], None);
    assert_eq!(
        chain.get(&module_record_key("ticker")).unwrap(),
        format!(
            r#"{{"abi_version":1,"code_hash":"{}","deployed_height":0,"owner":"system"}}"#,
            TICKER.hash()
        )
        .into_bytes()
    );
    assert_eq!(chain.record("ticker").policy(), UpgradePolicy::Immutable);
    chain.block(vec![deploy(&ALICE, 0, "ctr", &COUNTER.wasm)]);
    assert_eq!(
        chain.get(&module_record_key("ctr")).unwrap(),
        format!(
            r#"{{"abi_version":1,"code_hash":"{}","deployed_height":1,"owner":"{}"}}"#,
            COUNTER.hash(),
            ALICE.address()
        )
        .into_bytes()
    );
    assert_eq!(chain.record("ctr").policy(), UpgradePolicy::Owner);
    // An explicit `owner` policy writes the same record.
    let mut other = Chain::new(&[&TICKER], None);
    other.block(vec![deploy_with(
        &ALICE,
        0,
        "ctr",
        &COUNTER.wasm,
        UpgradePolicy::Owner,
    )]);
    assert_eq!(
        other.get(&module_record_key("ctr")),
        chain.get(&module_record_key("ctr"))
    );
}
