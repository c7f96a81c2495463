//! Native tests of sealed rock-paper-scissors over `MockCtx`, with the SDK's stand-in envelopes
//! (`gamechain_sdk::mock_seal`): the chain's envelopes and their proofs are tested in the runtime
//! and in the process tests.

use super::*;
use gamechain_sdk::{mock_seal, MockCtx, SealBinding};

const ALICE: &str = "alice";
const BOB: &str = "bob";
const EVE: &str = "eve";

fn seated(stake: &str) -> (MockCtx, String) {
    let mut ctx = MockCtx::new(ID);
    for who in [ALICE, BOB, EVE] {
        ctx.set_balance(who, GOLD, 1_000);
    }
    ctx.height = 10;
    ctx.submit(
        &SealedRps,
        ALICE,
        json!({"kind": "create", "stake": stake, "seal_blocks": 5}),
    )
    .unwrap();
    let id = ctx.txid[..16].to_string();
    ctx.submit(&SealedRps, BOB, json!({"kind": "join", "id": id}))
        .unwrap();
    (ctx, id)
}

fn game(ctx: &MockCtx, id: &str) -> Game {
    serde_json::from_value(
        ctx.view(&SealedRps, &Query::from([("id".into(), id.into())]))
            .unwrap(),
    )
    .unwrap()
}

fn sealed(sender: &str, id: &str, seat: Mark, round: u64, mv: u8) -> String {
    let tag = seal_tag(id, seat);
    let binding = SealBinding {
        module: ID,
        sender,
        tag: tag.as_bytes(),
        round,
        beacon_key: &mock_seal::MOCK_BEACON_KEY,
    };
    let mut plaintext = [0u8; 32];
    plaintext[0] = mv;
    hex::encode(mock_seal::seal(&binding, &plaintext))
}

fn play(ctx: &mut MockCtx, id: &str, who: &str, hex: &str) -> Result<(), ActionError> {
    ctx.submit(
        &SealedRps,
        who,
        json!({"kind": "move", "id": id, "sealed": hex}),
    )
}

fn run_round(ctx: &mut MockCtx, round: u64) -> Vec<(u64, Result<(), ActionError>)> {
    ctx.height = round;
    ctx.run_scheduled(&SealedRps, 0, Some([7; 48]))
}

#[test]
fn both_moves_open_in_the_round_and_the_winner_takes_the_pot() {
    let (mut ctx, id) = seated("100");
    let g = game(&ctx, &id);
    assert_eq!(g.round, Some(15));
    play(&mut ctx, &id, ALICE, &sealed(ALICE, &id, Mark::X, 15, 1)).unwrap();
    play(&mut ctx, &id, BOB, &sealed(BOB, &id, Mark::O, 15, 3)).unwrap();
    // Nothing opens before the round.
    ctx.height = 14;
    assert!(ctx.run_scheduled(&SealedRps, 0, Some([7; 48])).is_empty());
    let ran = run_round(&mut ctx, 15);
    assert_eq!(ran.len(), 3, "two openings, then the settling call");
    assert!(ran.iter().all(|(_, r)| r.is_ok()), "{ran:?}");
    let g = game(&ctx, &id);
    assert_eq!(
        (g.x_move.as_deref(), g.o_move.as_deref()),
        (Some("rock"), Some("scissors"))
    );
    assert_eq!(g.result.as_deref(), Some("x_won"));
    assert_eq!(g.reason.as_deref(), Some("reveal"));
    assert_eq!(
        (ctx.balance(ALICE, GOLD), ctx.balance(BOB, GOLD)),
        (1_100, 900)
    );
    assert_eq!(ctx.balance("module:sealed_rps", GOLD), 0);
}

#[test]
fn a_withheld_or_invalid_move_is_void_and_loses() {
    let (mut ctx, id) = seated("100");
    // Bob seals an invalid move byte; Alice withholds.
    play(&mut ctx, &id, BOB, &sealed(BOB, &id, Mark::O, 15, 9)).unwrap();
    run_round(&mut ctx, 15);
    let g = game(&ctx, &id);
    assert_eq!(
        (g.x_move.as_deref(), g.o_move.as_deref()),
        (Some("void"), Some("void"))
    );
    assert_eq!(g.result.as_deref(), Some("draw"));

    let (mut ctx, id) = seated("100");
    play(&mut ctx, &id, BOB, &sealed(BOB, &id, Mark::O, 15, 2)).unwrap();
    run_round(&mut ctx, 15);
    let g = game(&ctx, &id);
    assert_eq!(g.result.as_deref(), Some("o_won"));
    assert_eq!(g.reason.as_deref(), Some("void"));
    assert_eq!(
        (ctx.balance(ALICE, GOLD), ctx.balance(BOB, GOLD)),
        (900, 1_100)
    );
}

#[test]
fn copies_replays_late_and_second_moves_are_refused() {
    let (mut ctx, id) = seated("100");
    let alice = sealed(ALICE, &id, Mark::X, 15, 2);
    play(&mut ctx, &id, ALICE, &alice).unwrap();
    // Bob copies Alice's envelope into his seat: bound to Alice and seat x.
    let e = play(&mut ctx, &id, BOB, &alice).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid: the sealed move is not bound to this game, seat, round and player"
    );
    // Alice cannot change her move.
    let e = play(&mut ctx, &id, ALICE, &sealed(ALICE, &id, Mark::X, 15, 1)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid: this sealed call holds a sealed move already"
    );
    // A stranger is not a player.
    let e = play(&mut ctx, &id, EVE, &sealed(EVE, &id, Mark::O, 15, 1)).unwrap_err();
    assert_eq!(e.to_string(), "not allowed: not a player in this game");
    // Sealed to the wrong round: refused before it is stored.
    let e = play(&mut ctx, &id, BOB, &sealed(BOB, &id, Mark::O, 16, 1)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid: the sealed move is not bound to this game, seat, round and player"
    );
    let e = play(&mut ctx, &id, BOB, "ab").unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid: `sealed` must be 448 lowercase hex characters"
    );
    let e = play(&mut ctx, &id, BOB, &"00".repeat(224)).unwrap_err();
    assert_eq!(e.to_string(), "invalid: the sealed move is malformed");
    // At the round, moves are closed.
    ctx.height = 15;
    let e = play(&mut ctx, &id, BOB, &sealed(BOB, &id, Mark::O, 15, 1)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid: the round has come: moves are closed"
    );
}

#[test]
fn another_games_envelope_does_not_bind() {
    let (mut ctx, first) = seated("0");
    ctx.submit(&SealedRps, ALICE, json!({"kind": "create"}))
        .unwrap();
    let second = ctx.txid[..16].to_string();
    ctx.submit(&SealedRps, BOB, json!({"kind": "join", "id": second}))
        .unwrap();
    let round = game(&ctx, &second).round.unwrap();
    let for_first = sealed(BOB, &first, Mark::O, round, 1);
    let e = play(&mut ctx, &second, BOB, &for_first).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid: the sealed move is not bound to this game, seat, round and player"
    );
}

#[test]
fn a_full_round_refuses_the_join_and_the_next_block_takes_the_next_round() {
    let mut ctx = MockCtx::new(ID);
    ctx.height = 10;
    let mut open = Vec::new();
    // 64 sealed calls per round: 32 games fill height 30; the 33rd join fails whole.
    for n in 0..33 {
        let (a, b) = (format!("a{n}"), format!("b{n}"));
        ctx.submit(&SealedRps, &a, json!({"kind": "create"}))
            .unwrap();
        let id = ctx.txid[..16].to_string();
        open.push((b, id));
    }
    for (b, id) in &open[..32] {
        ctx.submit(&SealedRps, b, json!({"kind": "join", "id": id}))
            .unwrap();
        assert_eq!(game(&ctx, id).round, Some(30));
    }
    let (b, id) = &open[32];
    let e = ctx
        .submit(&SealedRps, b, json!({"kind": "join", "id": id}))
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid: this round already holds 64 sealed calls or their fuel: choose a later round"
    );
    assert_eq!(
        game(&ctx, id).status,
        Status::Open,
        "nothing of the join is kept"
    );
    ctx.height = 11;
    ctx.submit(&SealedRps, b, json!({"kind": "join", "id": id}))
        .unwrap();
    assert_eq!(game(&ctx, id).round, Some(31));
}

#[test]
fn who_wins() {
    assert_eq!(first_wins("rock", "scissors"), Some(true));
    assert_eq!(first_wins("rock", "paper"), Some(false));
    assert_eq!(first_wins("paper", "paper"), None);
    assert_eq!(first_wins("void", "paper"), Some(false));
    assert_eq!(first_wins("void", "void"), None);
}
