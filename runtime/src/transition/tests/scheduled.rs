//! Beacons and scheduled calls in the state transition: a beacon chain refuses a missing, wrong
//! or misplaced beacon; a call scheduled in one block runs at the start of the block it is due
//! in, with its own receipt first in `receipt_root`, drawing from that block's beacon; a draw
//! anywhere else traps; the per-block bounds hold. The dice guest (built from the current
//! source) is the module that schedules and draws.

use super::*;
use crate::chain::{Beacon, BeaconConfig, BeaconSecretKey};
use gamechain_sdk::scheduler::{call_id, draw_bytes, Origin};

static DICE: LazyLock<Loaded> = LazyLock::new(|| {
    Loaded::new(
        "dice",
        build_guest("dice").unwrap_or_else(|e| panic!("{e}")).wasm,
    )
});

fn beacon_key() -> BeaconSecretKey {
    BeaconSecretKey::from_seed(b"scheduled-tests")
}

/// A chain with the dice module, a faucet and a beacon key.
fn beacon_chain() -> Chain {
    let mut g = genesis_with(&[&DICE], Some(FAUCET));
    g.beacon = Some(BeaconConfig::single(beacon_key().public_key()));
    Chain::of(&[&DICE], g)
}

impl Chain {
    /// The next block's input with its proper beacon.
    fn beacon_input(&self, txs: Vec<SignedTx>) -> BlockInput {
        BlockInput {
            beacon: Some(beacon_key().sign(CHAIN, self.head.height + 1)),
            ..self.input(txs)
        }
    }

    fn beacon_block(&mut self, txs: Vec<SignedTx>) -> BlockOutput {
        let input = self.beacon_input(txs);
        let out = execute_block(&self.ctx, &self.state, &self.hash, &self.head, &input)
            .unwrap_or_else(|e| panic!("{e}"));
        self.commit(out)
    }

    fn op(&self, who: &SecretKey, op: Value) -> SignedTx {
        sign_tx(
            who,
            CHAIN,
            self.nonce(who),
            Action::Game {
                game: "dice".into(),
                op: serde_json::value::to_raw_value(&op).unwrap(),
            },
        )
    }

    fn faucet(&self, who: &SecretKey) -> SignedTx {
        sign_tx(
            who,
            CHAIN,
            self.nonce(who),
            Action::Faucet { token: GOLD.into() },
        )
    }
}

/// Funds Alice and Bob, opens a duel for 100 and has Bob join it. Returns the join's output and
/// the game id.
fn duel(chain: &mut Chain) -> (BlockOutput, String) {
    let funds = vec![chain.faucet(&ALICE), chain.faucet(&BOB)];
    chain.beacon_block(funds);
    let create = chain.op(&ALICE, json!({"kind": "create", "stake": "100"}));
    let id = create.txid()[..16].to_string();
    chain.beacon_block(vec![create]);
    let join = chain.op(&BOB, json!({"kind": "join", "id": id}));
    let out = chain.beacon_block(vec![join]);
    assert!(out.receipts[0].ok, "{:?}", out.receipts[0]);
    (out, id)
}

#[test]
fn a_beacon_chain_refuses_a_missing_wrong_or_misplaced_beacon() {
    let chain = beacon_chain();
    let run = |beacon: Option<Beacon>| {
        let input = BlockInput {
            beacon,
            ..chain.input(vec![])
        };
        execute_block(&chain.ctx, &chain.state, &chain.hash, &chain.head, &input)
    };
    let bad = |r: Result<BlockOutput, TransitionError>| match r {
        Err(TransitionError::BadBeacon(why)) => why,
        other => panic!("expected a bad beacon, got {other:?}"),
    };
    assert_eq!(bad(run(None)), "block 1 carries no beacon");
    // Another height's beacon (a sequencer re-using one), another chain's, another key's.
    assert!(bad(run(Some(beacon_key().sign(CHAIN, 2)))).contains("does not check"));
    assert!(bad(run(Some(beacon_key().sign("other-chain", 1)))).contains("does not check"));
    let other = BeaconSecretKey::from_seed(b"not the genesis key");
    assert!(bad(run(Some(other.sign(CHAIN, 1)))).contains("does not check"));
    let mut flipped = beacon_key().sign(CHAIN, 1);
    flipped.0[10] ^= 1;
    bad(run(Some(flipped)));
    let out = run(Some(beacon_key().sign(CHAIN, 1))).unwrap();
    assert_eq!(out.header.beacon, Some(beacon_key().sign(CHAIN, 1)));
    // A chain without a beacon key takes none, and its headers stay format 1.
    let plain = Chain::new(&[&DICE], Some(FAUCET));
    let input = BlockInput {
        beacon: Some(beacon_key().sign(CHAIN, 1)),
        ..plain.input(vec![])
    };
    assert!(matches!(
        execute_block(&plain.ctx, &plain.state, &plain.hash, &plain.head, &input),
        Err(TransitionError::BadBeacon(_))
    ));
    let out = plain.try_block(vec![]).unwrap();
    assert_eq!(out.header.beacon, None);
    assert_ne!(out.header.to_borsh()[..8], [0xff; 8]);
}

#[test]
fn the_roll_runs_first_in_the_next_block_from_its_beacon() {
    let mut chain = beacon_chain();
    let (joined, id) = duel(&mut chain);
    let join_height = joined.header.height;
    let txid = joined.txids[0].clone();
    // The call's id is derived from the join that scheduled it.
    let call = call_id("dice", Origin::Tx(&txid), 0);
    let event = joined.receipts[0]
        .events
        .iter()
        .find(|e| e.kind == "dice.roll_scheduled")
        .unwrap();
    assert_eq!(event.data["call"], json!(call));
    assert_eq!(event.data["height"], json!(join_height + 1));
    // Nothing ran in the join's own block.
    assert!(joined.scheduled.is_empty());

    // The next block runs it before its transactions, even when it has none.
    let faucet = chain.faucet(&CAROL);
    let out = chain.beacon_block(vec![faucet]);
    assert_eq!(out.scheduled.len(), 1);
    let s = &out.scheduled[0];
    assert_eq!((s.module.as_str(), s.id), ("dice", call));
    assert!(s.receipt.ok, "{:?}", s.receipt);
    let rolled = &s.receipt.events[0];
    assert_eq!(rolled.kind, "dice.rolled");
    assert_eq!(rolled.data["id"], json!(id));
    // The dice are exactly the draw formula over this block's beacon: die i is the first
    // 64-bit word of draw i below the bias zone, modulo 6, plus 1.
    let beacon = out.header.beacon.unwrap().0;
    let die = |n: u64| {
        let d = draw_bytes(&beacon, "dice", call, n);
        let zone = u64::MAX - (u64::MAX % 6);
        let v = d
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .find(|v| *v < zone)
            .unwrap();
        (v % 6 + 1) as u32
    };
    assert_eq!(rolled.data["x_dice"], json!([die(0), die(1)]));
    assert_eq!(rolled.data["o_dice"], json!([die(2), die(3)]));
    // The receipt root commits to the scheduled receipt first.
    let end_block: Vec<Receipt> = out.end_block.iter().map(|(_, r)| r.clone()).collect();
    let root = crate::chain::block_receipt_root(&out.scheduled, &out.receipts, &end_block);
    assert_eq!(out.header.receipt_root, root);
    let without: Vec<Receipt> = out.receipts.iter().chain(&end_block).cloned().collect();
    assert_ne!(
        out.header.receipt_root,
        crate::chain::receipt_root(&without)
    );
    // The queue is empty again, and GOLD is where the roll said.
    assert!(chain.state.map.keys().all(|k| !k.starts_with("sched/")));
    let total = chain.balance(&ALICE.address()) + chain.balance(&BOB.address());
    assert_eq!(total, 2 * FAUCET);
    assert_eq!(chain.balance("module:dice"), 0);
}

#[test]
fn a_join_with_an_undeclared_field_is_refused_and_schedules_nothing() {
    // Dice declares `join {id}` (its schema, `gamechain.schema`): a join carrying anything else,
    // here a `salt` (a joiner grinding the join's txid, which the roll's call id derives from),
    // is refused by the guest once the module has taken it (docs/modules.md, "Schema", "On
    // chain"), and everything the module did is undone: no stake moves, no roll is scheduled,
    // only the nonce is used.
    let mut chain = beacon_chain();
    let funds = vec![chain.faucet(&ALICE), chain.faucet(&BOB)];
    chain.beacon_block(funds);
    let create = chain.op(&ALICE, json!({"kind": "create", "stake": "100"}));
    let id = create.txid()[..16].to_string();
    chain.beacon_block(vec![create]);
    let bob = chain.balance(&BOB.address());
    let join = chain.op(&BOB, json!({"kind": "join", "id": id, "salt": "7f"}));
    let out = chain.beacon_block(vec![join]);
    let r = &out.receipts[0];
    assert_eq!(
        r.error.as_deref(),
        Some("invalid: op join: field salt: unknown field")
    );
    assert!(r.events.is_empty());
    assert_eq!(
        out.writes.keys().collect::<Vec<_>>(),
        [&nonce_key(&BOB.address())]
    );
    assert_eq!(chain.balance(&BOB.address()), bob);
    assert!(chain.state.map.keys().all(|k| !k.starts_with("sched/")));
    // The module's own answers are untouched: an undeclared kind is its text.
    let roll = chain.op(&BOB, json!({"kind": "roll", "id": id, "salt": "7f"}));
    let out = chain.beacon_block(vec![roll]);
    assert_eq!(
        out.receipts[0].error.as_deref(),
        Some("invalid: unknown dice op `roll`")
    );
    // The same join as declared is taken.
    let join = chain.op(&BOB, json!({"kind": "join", "id": id}));
    let out = chain.beacon_block(vec![join]);
    assert!(out.receipts[0].ok, "{:?}", out.receipts[0]);
}

#[test]
fn a_draw_outside_a_scheduled_call_traps_and_a_beaconless_roll_fails() {
    // On a chain without a beacon the scheduled roll runs, but its draw traps: the call fails
    // with the fixed text, and the duel stays in play (refundable later).
    let mut chain = Chain::new(&[&DICE], Some(FAUCET));
    let funds = vec![chain.faucet(&ALICE), chain.faucet(&BOB)];
    chain.block(funds);
    let create = chain.op(&ALICE, json!({"kind": "create", "stake": "100"}));
    let id = create.txid()[..16].to_string();
    chain.block(vec![create]);
    let join = chain.op(&BOB, json!({"kind": "join", "id": id}));
    chain.block(vec![join]);
    let out = chain.block(vec![]);
    assert_eq!(out.scheduled.len(), 1);
    assert_eq!(
        out.scheduled[0].receipt.error.as_deref(),
        Some(format!("internal: {}", gamechain_sdk::schedule::NO_DRAW).as_str())
    );
    // A trap is charged the whole fuel the call was given.
    assert_eq!(out.scheduled[0].receipt.fuel_used, 2_000_000);
}

#[test]
fn grinding_the_join_changes_nothing_anyone_can_know() {
    // The same duel joined with different salts in the op: every join schedules its roll for
    // the next block; the dice come from that block's beacon, which only the key holder can
    // make. Two different beacon keys roll differently for the very same join bytes, so nothing
    // in the join decides the dice.
    let rolls_under = |seed: &[u8]| {
        let mut g = genesis_with(&[&DICE], Some(FAUCET));
        let key = BeaconSecretKey::from_seed(seed);
        g.beacon = Some(BeaconConfig::single(key.public_key()));
        let mut chain = Chain::of(&[&DICE], g);
        let block = |chain: &mut Chain, txs: Vec<SignedTx>| {
            let input = BlockInput {
                beacon: Some(key.sign(CHAIN, chain.head.height + 1)),
                ..chain.input(txs)
            };
            let out =
                execute_block(&chain.ctx, &chain.state, &chain.hash, &chain.head, &input).unwrap();
            chain.commit(out)
        };
        let funds = vec![chain.faucet(&ALICE), chain.faucet(&BOB)];
        block(&mut chain, funds);
        let create = chain.op(&ALICE, json!({"kind": "create", "stake": "100"}));
        let id = create.txid()[..16].to_string();
        block(&mut chain, vec![create]);
        let join = chain.op(&BOB, json!({"kind": "join", "id": id}));
        block(&mut chain, vec![join]);
        let out = block(&mut chain, vec![]);
        out.scheduled[0].receipt.events[0].data.clone()
    };
    let keys: Vec<Value> = (0..6u8).map(|k| rolls_under(&[k])).collect();
    let distinct: std::collections::BTreeSet<String> = keys.iter().map(|v| v.to_string()).collect();
    assert!(distinct.len() >= 4, "{keys:?}");
}

#[test]
fn scheduling_is_checked_and_paid_for() {
    let mut chain = beacon_chain();
    let (joined, _) = duel(&mut chain);
    // The join paid the roll's 2,000,000 fuel and the scheduling base up front.
    assert!(
        joined.receipts[0].fuel_used > 2_020_000,
        "{:?}",
        joined.receipts[0]
    );
    // The queue holds the call, its index and the module's count while it waits.
    let keys: Vec<&String> = chain
        .state
        .map
        .keys()
        .filter(|k| k.starts_with("sched/"))
        .collect();
    assert_eq!(keys.len(), 3, "{keys:?}");
    assert!(keys.iter().any(|k| k.as_str() == "sched/n/dice"));
}

/// `gc_end_block` schedules a call at the next height every block and records what `schedule`
/// answered (as a decimal in `r`): `end_block` runs on nobody's fuel, so it may not schedule.
const END_BLOCK_SCHEDULER: &str = r#"
(module
  (import "gamechain_v1" "schedule" (func $schedule (param i32 i64 i32 i32 i64) (result i64)))
  (import "gamechain_v1" "height" (func $height (result i64)))
  (import "gamechain_v1" "put" (func $put (param i32 i32 i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "r")
  (func (export "gc_abi_version") (result i32) (i32.const 1))
  (func (export "gc_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "gc_apply") (param i32 i32 i32 i32) (result i32) (i32.const 0))
  (func (export "gc_view") (param i32 i32) (result i32) (i32.const 1))
  (func (export "gc_scheduled") (param i64 i32 i32) (result i32) (i32.const 0))
  (func (export "gc_end_block") (result i32)
    (local $r i64)
    (local.set $r (call $schedule (i32.const 0) (i64.add (call $height) (i64.const 1))
      (i32.const 0) (i32.const 0) (i64.const 1000)))
    ;; store "-1" style answers as the ASCII digit of -r (0 when it scheduled)
    (i32.store8 (i32.const 32) (i32.add (i32.const 48) (i32.wrap_i64 (i64.sub (i64.const 0) (local.get $r)))))
    (call $put (i32.const 16) (i32.const 1) (i32.const 32) (i32.const 1))
    (i32.const 0)))
"#;

#[test]
fn end_block_cannot_schedule_a_call_nobody_paid_for() {
    let loaded = Loaded::new("freeloader", wat::parse_str(END_BLOCK_SCHEDULER).unwrap());
    let mut chain = Chain::new(&[&loaded], Some(FAUCET));
    chain.block(vec![]);
    let out = chain.block(vec![]);
    assert!(out.scheduled.is_empty());
    // `schedule` answered -1 (ScheduleError::NotHere), and nothing waits in the queue.
    assert_eq!(
        chain.state.map.get("m/freeloader/r").map(Vec::as_slice),
        Some(&b"1"[..])
    );
    assert!(chain.state.map.keys().all(|k| !k.starts_with("sched/")));
}
