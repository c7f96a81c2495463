//! Fees (`transition/fees.rs`): a zero schedule changes no outcome; a priced one charges ok,
//! failed and out-of-fuel transactions exactly the documented formula, moves the fee to the
//! collector, conserves GOLD, undoes an action that leaves its sender unable to pay, keeps a
//! sender below the minimum out of every block, and replays to the same block.

use super::*;
use crate::chain::{FeeSchedule, FeeUse};

/// A module whose `gc_apply` loops forever (it runs out of fuel).
const SPINNER_WAT: &str = r#"
(module
  (memory (export "memory") 1)
  (func (export "gc_abi_version") (result i32) (i32.const 1))
  (func (export "gc_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "gc_apply") (param i32 i32 i32 i32) (result i32) (loop $l (br $l)) (i32.const 0))
  (func (export "gc_view") (param i32 i32) (result i32) (i32.const 1)))
"#;
static SPINNER: LazyLock<Loaded> =
    LazyLock::new(|| Loaded::new("spinner", wat::parse_str(SPINNER_WAT).unwrap()));

/// The fee collector (nobody else in these tests uses key 9).
static COLLECTOR: LazyLock<SecretKey> = LazyLock::new(|| key(9));

fn schedule(tx: u128, fuel: u128, write: u128, event: u128) -> FeeSchedule {
    FeeSchedule {
        collector: COLLECTOR.address(),
        tx_micro: Amount(tx),
        fuel_micro: Amount(fuel),
        write_byte_micro: Amount(write),
        event_byte_micro: Amount(event),
    }
}

/// 2 base units per transaction, 0.0001 per fuel, 0.01 per byte written, 0.005 per event byte.
fn priced() -> FeeSchedule {
    schedule(2_000_000, 100, 10_000, 5_000)
}

fn chain_with(fees: Option<FeeSchedule>) -> Chain {
    let modules = [&*TICTACTOE, &*SPINNER];
    let mut genesis = genesis_with(&modules, Some(FAUCET));
    genesis.fees = fees;
    Chain::of(&modules, genesis)
}

/// The seed game's opening, a failed move, and a transfer: every kind of outcome but out of fuel.
fn opening() -> Vec<SignedTx> {
    let create = tx(&ALICE, 1, ttt(json!({"kind": "create", "stake": "100"})));
    let id = create.txid()[..16].to_string();
    vec![
        tx(&ALICE, 0, faucet_action()),
        tx(&BOB, 0, faucet_action()),
        create,
        tx(&BOB, 1, ttt(json!({"kind": "join", "id": id}))),
        tx(&ALICE, 2, ttt(json!({"kind": "move", "id": id, "cell": 0}))),
        tx(&BOB, 2, ttt(json!({"kind": "move", "id": id, "cell": 0}))),
        tx(&BOB, 3, pay(&CAROL.address(), 250)),
    ]
}

/// Sum of every GOLD balance in the state (escrow included).
fn gold_held(chain: &Chain) -> u128 {
    chain
        .state
        .map
        .iter()
        .filter(|(k, _)| k.starts_with("bal/") && k.ends_with("/GOLD"))
        .map(|(_, v)| std::str::from_utf8(v).unwrap().parse::<u128>().unwrap())
        .sum()
}

fn supply(chain: &Chain) -> u128 {
    let kv = Overlay::new(&chain.state);
    ledger::token(&kv, GOLD).unwrap().unwrap().supply.0
}

#[test]
fn zero_fees_change_no_outcome() {
    let mut free = chain_with(None);
    let mut zero = chain_with(Some(schedule(0, 0, 0, 0)));
    let a = free.block(opening());
    let b = zero.block(opening());
    assert_eq!(a.receipts, b.receipts, "same receipts, no fee field");
    assert!(b.receipts.iter().all(|r| r.fee.0 == 0));
    for who in [&*ALICE, &*BOB, &*CAROL, &*COLLECTOR] {
        assert_eq!(free.balance(&who.address()), zero.balance(&who.address()));
    }
    assert_eq!(zero.balance(&COLLECTOR.address()), 0);
    // Only the genesis file differs (it names the schedule), so the roots differ.
    assert_ne!(a.header.state_root, b.header.state_root);
}

#[test]
fn each_outcome_pays_the_documented_fee() {
    let fees = priced();
    let mut free = chain_with(None);
    let mut paid = chain_with(Some(fees.clone()));
    let txs = opening();
    let reference = free.block(txs.clone());
    let out = paid.block(txs);
    let mut total = 0;
    for (i, (r, f)) in out.receipts.iter().zip(&reference.receipts).enumerate() {
        // Outcomes as without fees, plus the fee.
        assert_eq!(
            (r.ok, &r.error, &r.events, r.fuel_used),
            (f.ok, &f.error, &f.events, f.fuel_used),
            "tx {i}"
        );
        assert!(r.fee.0 > 0, "tx {i} pays");
        total += r.fee.0;
    }
    // The failed move (index 5) pays the transaction and its fuel only.
    let failed = &out.receipts[5];
    assert!(!failed.ok);
    assert_eq!(
        failed.fee.0,
        fees.fee(FeeUse {
            fuel: failed.fuel_used,
            ..FeeUse::default()
        })
    );
    // The transfer (index 6) pays for its two balance writes and its event, to the byte.
    let (b, c) = (BOB.address(), CAROL.address());
    let transfer = &out.receipts[6];
    let bytes_of = |key: &str| key.len() as u64 + paid.state.map[key].len() as u64;
    let written = bytes_of(&format!("bal/{b}/GOLD")) + bytes_of(&format!("bal/{c}/GOLD"));
    let event = &transfer.events[0];
    let event_bytes = (event.kind.len() + event.data.to_string().len()) as u64;
    // Bob's balance string after the transfer and before his fee has the same length as after
    // it here (both 5 digits), so the written bytes measured on the final state are exact.
    assert_eq!(
        transfer.fee.0,
        fees.fee(FeeUse {
            fuel: 0,
            bytes_written: written,
            event_bytes,
        })
    );
    // The fees went to the collector, and no GOLD was made or lost.
    assert_eq!(paid.balance(&COLLECTOR.address()), total);
    let alice_fees: u128 = [0, 2, 4].iter().map(|&i| out.receipts[i].fee.0).sum();
    assert_eq!(
        paid.balance(&ALICE.address()),
        free.balance(&ALICE.address()) - alice_fees
    );
    assert_eq!(gold_held(&paid), supply(&paid));
    assert_eq!(gold_held(&paid), gold_held(&free));
}

#[test]
fn out_of_fuel_pays_its_whole_fuel_limit() {
    let fees = priced();
    let mut chain = chain_with(Some(fees.clone()));
    chain.block(vec![tx(&ALICE, 0, faucet_action())]);
    let before = chain.balance(&ALICE.address());
    let out = chain.block(vec![tx(&ALICE, 1, Action::game("spinner", &json!({})))]);
    let r = &out.receipts[0];
    assert!(
        !r.ok && r.error.as_deref().unwrap().contains("fuel"),
        "{r:?}"
    );
    assert_eq!(r.fuel_used, chain.ctx.genesis().fuel_apply);
    assert_eq!(
        r.fee.0,
        fees.fee(FeeUse {
            fuel: r.fuel_used,
            ..FeeUse::default()
        })
    );
    assert_eq!(chain.balance(&ALICE.address()), before - r.fee.0);
    assert_eq!(chain.nonce(&ALICE), 2, "the nonce counts");
}

#[test]
fn a_sender_below_the_minimum_is_never_included() {
    let mut chain = chain_with(Some(priced()));
    // Bob holds nothing: a transfer of nothing cannot be included; the faucet can (it pays
    // first).
    let broke = tx(&BOB, 0, pay(&ALICE.address(), 1));
    match chain.try_block(vec![broke.clone()]) {
        Err(TransitionError::InvalidTx {
            index: 0,
            reason:
                TxRejection::CannotPayFee {
                    minimum: 2,
                    balance: 0,
                },
            ..
        }) => {}
        other => panic!("expected CannotPayFee, got {other:?}"),
    }
    // The builder leaves it out and stays usable.
    let ctx = &chain.ctx;
    let mut builder = BlockBuilder::new(
        ctx,
        &chain.state,
        &chain.hash,
        &chain.head,
        chain.head.time_ms + 1_000,
        Checkpoint::default(),
        None,
    )
    .unwrap();
    assert!(builder.push(&broke).is_err());
    assert_eq!(
        builder.nonce(&BOB.address()).unwrap(),
        0,
        "the nonce write is undone"
    );
    assert!(builder.push(&tx(&BOB, 0, faucet_action())).unwrap().ok);
    // A failed transaction from a sender holding less than its fee pays what it holds: Carol
    // (5,000 at genesis) sends an out-of-fuel call after giving away all but 3.
    chain.block(vec![tx(
        &CAROL,
        0,
        pay(&ALICE.address(), 5_000 - 2 - 3 - 1),
    )]);
    let left = chain.balance(&CAROL.address());
    assert!(left >= 2, "{left}");
    let out = chain.block(vec![tx(&CAROL, 1, Action::game("spinner", &json!({})))]);
    assert_eq!(out.receipts[0].fee.0, left, "it pays everything it holds");
    assert_eq!(chain.balance(&CAROL.address()), 0);
}

#[test]
fn an_action_its_sender_cannot_pay_for_is_undone() {
    let fees = priced();
    let mut chain = chain_with(Some(fees.clone()));
    let carol = CAROL.address();
    // Carol gives away all 5,000: the transfer itself succeeds, but then she cannot pay.
    let out = chain.block(vec![tx(&CAROL, 0, pay(&ALICE.address(), 5_000))]);
    let r = &out.receipts[0];
    assert!(!r.ok);
    assert_eq!(
        r.error.as_deref(),
        Some(
            format!(
                "invalid: the fee of {} base units is more than the sender's GOLD balance after the transaction (0)",
                fees.fee(FeeUse {
                    fuel: 0,
                    bytes_written: {
                        let a = ALICE.address();
                        (format!("bal/{carol}/GOLD").len() + format!("bal/{a}/GOLD").len() + 4) as u64
                    },
                    event_bytes: {
                        let data = json!({"amount": "5000", "from": carol, "to": ALICE.address(), "token": "GOLD"});
                        ("transfer".len() + data.to_string().len()) as u64
                    },
                })
            )
            .as_str()
        )
    );
    assert!(r.events.is_empty());
    assert_eq!(
        r.fee.0,
        fees.minimum(),
        "a failed transfer pays the per-transaction price"
    );
    assert_eq!(
        chain.balance(&ALICE.address()),
        0,
        "the transfer was undone"
    );
    assert_eq!(chain.balance(&carol), 5_000 - fees.minimum());
}

#[test]
fn replay_gives_the_same_block() {
    let mut a = chain_with(Some(priced()));
    let b = chain_with(Some(priced()));
    let txs = opening();
    let first = a.block(txs.clone());
    let again = b.try_block(txs).unwrap();
    assert_eq!(first, again);
}
