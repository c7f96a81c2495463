//! Sealed moves in the state transition, with real envelopes (`chain::seal`) and the sealed
//! rock-paper-scissors guest built from the current source: the chain opens both moves in the
//! block of their round, before the settling call and before any transaction, with that block's
//! beacon; a copied, replayed, re-bound or malformed envelope is refused when it is handed in;
//! one sealed to another round opens void; a chain without a beacon refuses to reserve.

use super::*;
use crate::chain::seal::{self, SealContext};
use crate::chain::{BeaconConfig, BeaconSecretKey};

static RPS: LazyLock<Loaded> = LazyLock::new(|| {
    Loaded::new(
        "sealed_rps",
        build_guest("sealed_rps")
            .unwrap_or_else(|e| panic!("{e}"))
            .wasm,
    )
});

fn beacon_key() -> BeaconSecretKey {
    BeaconSecretKey::from_seed(b"sealed-tests")
}

fn sealed_chain() -> Chain {
    let mut g = genesis_with(&[&RPS], Some(FAUCET));
    g.beacon = Some(BeaconConfig::single(beacon_key().public_key()));
    Chain::of(&[&RPS], g)
}

impl Chain {
    fn sealed_block(&mut self, txs: Vec<SignedTx>) -> BlockOutput {
        let input = BlockInput {
            beacon: Some(beacon_key().sign(CHAIN, self.head.height + 1)),
            ..self.input(txs)
        };
        let out = execute_block(&self.ctx, &self.state, &self.hash, &self.head, &input)
            .unwrap_or_else(|e| panic!("{e}"));
        self.commit(out)
    }

    fn rps(&self, who: &SecretKey, op: Value) -> SignedTx {
        sign_tx(
            who,
            CHAIN,
            self.nonce(who),
            Action::Game {
                game: "sealed_rps".into(),
                op: serde_json::value::to_raw_value(&op).unwrap(),
            },
        )
    }

    fn rps_game(&self, id: &str) -> Value {
        let raw = self
            .state
            .map
            .get(&format!("m/sealed_rps/game/{id}"))
            .expect("the game exists");
        serde_json::from_slice(raw).unwrap()
    }
}

/// A move sealed by `who` into seat `seat` of game `id` for `round` (chain `chain_id`).
fn envelope(who: &SecretKey, id: &str, seat: &str, round: u64, mv: u8, chain_id: &str) -> String {
    let tag = format!("{id}/{seat}");
    let address = who.address();
    let ctx = SealContext {
        module: "sealed_rps",
        sender: &address,
        tag: tag.as_bytes(),
        round,
    };
    let mut plaintext = [0u8; 32];
    plaintext[0] = mv;
    hex::encode(seal::seal(
        &beacon_key().public_key(),
        chain_id,
        &ctx,
        &plaintext,
    ))
}

/// Bob's move for seat `o` of `id`, sealed under a beacon key that is not the chain's.
fn fake_key_envelope(who: &SecretKey, id: &str, round: u64) -> String {
    let tag = format!("{id}/o");
    let address = who.address();
    let ctx = SealContext {
        module: "sealed_rps",
        sender: &address,
        tag: tag.as_bytes(),
        round,
    };
    let fake = BeaconSecretKey::from_seed(b"a lying node's key").public_key();
    hex::encode(seal::seal(&fake, CHAIN, &ctx, &[1; 32]))
}

/// Funds Alice and Bob, opens a game for 100 whose round is `blocks` after the join and has Bob
/// join. Returns the game id and its round.
fn seated(chain: &mut Chain, blocks: u64) -> (String, u64) {
    let funds = vec![
        sign_tx(&ALICE, CHAIN, chain.nonce(&ALICE), faucet_action()),
        sign_tx(&BOB, CHAIN, chain.nonce(&BOB), faucet_action()),
    ];
    chain.sealed_block(funds);
    let create = chain.rps(
        &ALICE,
        json!({"kind": "create", "stake": "100", "seal_blocks": blocks}),
    );
    let id = create.txid()[..16].to_string();
    chain.sealed_block(vec![create]);
    let join = chain.rps(&BOB, json!({"kind": "join", "id": id}));
    let out = chain.sealed_block(vec![join]);
    assert!(out.receipts[0].ok, "{:?}", out.receipts[0]);
    let round = chain.rps_game(&id)["round"].as_u64().unwrap();
    assert_eq!(round, out.header.height + blocks);
    (id, round)
}

fn error_of(out: &BlockOutput, i: usize) -> String {
    out.receipts[i].error.clone().unwrap_or_default()
}

#[test]
fn both_moves_open_in_their_round_before_the_settling_call() {
    let mut chain = sealed_chain();
    let (id, round) = seated(&mut chain, 3);
    let gold = |c: &Chain| {
        c.balance(&ALICE.address()) + c.balance(&BOB.address()) + c.balance("module:sealed_rps")
    };
    let before = gold(&chain);
    assert_eq!(chain.balance("module:sealed_rps"), 200);
    let x = envelope(&ALICE, &id, "x", round, 2, CHAIN);
    let o = envelope(&BOB, &id, "o", round, 1, CHAIN);
    let out = chain.sealed_block(vec![
        chain.rps(&ALICE, json!({"kind": "move", "id": id, "sealed": x})),
        chain.rps(&BOB, json!({"kind": "move", "id": id, "sealed": o})),
    ]);
    assert!(out.receipts.iter().all(|r| r.ok), "{:?}", out.receipts);
    // The envelope is in state, the move is not known to anyone but the players.
    assert_eq!(chain.rps_game(&id)["x_move"], Value::Null);
    while chain.head.height + 1 < round {
        let out = chain.sealed_block(vec![]);
        assert!(out.scheduled.is_empty());
    }
    let out = chain.sealed_block(vec![]);
    assert_eq!(out.header.height, round);
    assert_eq!(
        out.scheduled.len(),
        3,
        "two openings, then the settling call"
    );
    assert!(
        out.scheduled.iter().all(|c| c.receipt.ok),
        "{:?}",
        out.scheduled
    );
    let opened: Vec<_> = out.scheduled[..2]
        .iter()
        .map(|c| c.receipt.events[0].data["move"].clone())
        .collect();
    assert_eq!(opened, [json!("paper"), json!("rock")]);
    let g = chain.rps_game(&id);
    assert_eq!(g["result"], "x_won");
    assert_eq!(gold(&chain), before, "GOLD is conserved");
    assert_eq!(chain.balance("module:sealed_rps"), 0);
}

#[test]
fn copied_altered_and_misbound_envelopes_are_refused_when_handed_in() {
    let mut chain = sealed_chain();
    let (id, round) = seated(&mut chain, 20);
    let x = envelope(&ALICE, &id, "x", round, 1, CHAIN);
    let mut altered = hex::decode(&x).unwrap();
    altered[130] ^= 1;
    let out = chain.sealed_block(vec![
        chain.rps(&ALICE, json!({"kind": "move", "id": id, "sealed": x}))
    ]);
    assert!(out.receipts[0].ok, "{:?}", out.receipts[0]);
    let bob = |chain: &Chain, sealed: String| {
        chain.rps(&BOB, json!({"kind": "move", "id": id, "sealed": sealed}))
    };
    let unbound = "invalid: the sealed move is not bound to this game, seat, round and player";
    for (sealed, expected) in [
        // Alice's envelope copied into Bob's seat.
        (x.clone(), unbound),
        // Bob's own, but for Alice's seat, another round, or altered in transit.
        (envelope(&BOB, &id, "x", round, 1, CHAIN), unbound),
        (envelope(&BOB, &id, "o", round + 1, 1, CHAIN), unbound),
        (hex::encode(&altered), unbound),
        // Sealed under a key that is not the chain's (a lying node's genesis).
        (fake_key_envelope(&BOB, &id, round), unbound),
        // Not an envelope at all.
        (
            "00".repeat(seal::SEALED_BYTES),
            "invalid: the sealed move is malformed",
        ),
    ] {
        let out = chain.sealed_block(vec![bob(&chain, sealed)]);
        assert_eq!(error_of(&out, 0), expected);
    }
    // Each refusal was charged the proof check, nothing stored: Bob can still seal.
    assert_eq!(chain.rps_game(&id)["o_sealed"], false);
}

#[test]
fn an_envelope_for_another_chain_opens_void_and_loses() {
    let mut chain = sealed_chain();
    let (id, round) = seated(&mut chain, 3);
    // Bound to this game and seat, but encrypted to another chain's round: it opens to nothing.
    let x = envelope(&ALICE, &id, "x", round, 1, "another-chain");
    let o = envelope(&BOB, &id, "o", round, 3, CHAIN);
    chain.sealed_block(vec![
        chain.rps(&ALICE, json!({"kind": "move", "id": id, "sealed": x})),
        chain.rps(&BOB, json!({"kind": "move", "id": id, "sealed": o})),
    ]);
    while chain.head.height < round {
        chain.sealed_block(vec![]);
    }
    let g = chain.rps_game(&id);
    assert_eq!(
        (g["x_move"].clone(), g["o_move"].clone()),
        (json!("void"), json!("scissors"))
    );
    assert_eq!(g["result"], "o_won");
    assert_eq!(g["reason"], "void");
}

#[test]
fn a_chain_without_a_beacon_reserves_no_sealed_call() {
    let mut chain = Chain::new(&[&RPS], Some(FAUCET));
    chain.block(vec![
        sign_tx(&ALICE, CHAIN, 0, faucet_action()),
        sign_tx(&BOB, CHAIN, 0, faucet_action()),
    ]);
    let create = chain.rps(&ALICE, json!({"kind": "create"}));
    let id = create.txid()[..16].to_string();
    chain.block(vec![create]);
    let out = chain.block(vec![chain.rps(&BOB, json!({"kind": "join", "id": id}))]);
    assert_eq!(
        error_of(&out, 0),
        "invalid: this chain has no beacon: no round of it opens a sealed move"
    );
}
