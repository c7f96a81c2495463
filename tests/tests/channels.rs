//! Games played off-chain and settled on-chain (docs/channels.md): every behaviour of the
//! lobby and the channel, and every attack on them we know, one test each, on the real runtime
//! through signed transactions (`gamechain_tests::channel_net`): the built `channel`,
//! `ttt_rules`, `rps_rules` and `moveboard` guests, moves signed by real keys over the canonical
//! texts, block times chosen by the test (windows are block time), escrow checked after every
//! block (the channel holds exactly the stakes it owes), payouts checked by balance, and the
//! whole chain replayed on a second runtime where it matters. Run with `--nocapture` to see the
//! fuel figures.

use gamechain_runtime::chain::SecretKey;
use gamechain_tests::channel_net::{key, Net, OffChain, BLOCK_MS, START};
use rps_rules::{commitment, reveal, RpsRules};
use serde_json::{json, Value};
use tictactoe_rules::TicTacToeRules;

const STAKE: u128 = 100;
/// The shortest window: 5 minutes of block time.
const WINDOW_MS: u64 = 300_000;

struct Players {
    alice: SecretKey,
    bob: SecretKey,
    carol: SecretKey,
}

fn players() -> Players {
    Players {
        alice: key(2),
        bob: key(3),
        carol: key(4),
    }
}

fn new_net(p: &Players) -> Net {
    Net::new(&[&p.alice, &p.bob, &p.carol])
}

/// Alice offers `rules`, Bob joins: the game id.
fn open_game(net: &mut Net, p: &Players, rules: &str) -> String {
    net.ok(
        &p.alice,
        json!({"kind":"offer","rules":rules,"stake":STAKE.to_string(),"window_ms":WINDOW_MS}),
    );
    let id = format!("{:016x}", count_offers(net) - 1);
    net.ok(&p.bob, json!({"kind":"join","offer":id}));
    id
}

fn count_offers(net: &Net) -> u64 {
    serde_json::from_slice(&net.state.map["m/channel/next_offer"]).unwrap()
}

fn ttt<'r>(net: &Net, p: &Players, game: &str) -> OffChain<'r> {
    OffChain::new(
        &TicTacToeRules,
        net,
        game,
        [&p.alice, &p.bob],
        [&p.alice, &p.bob],
    )
}

/// X (Alice) wins on the top row: moves 0 4 1 8 2.
fn x_wins(g: &mut OffChain<'_>) {
    for cell in [0u8, 4, 1, 8, 2] {
        g.play(&[cell]);
    }
}

fn settle(game: &str, moves: &[Value]) -> Value {
    json!({"kind":"settle","game":game,"moves":moves})
}

fn withdraw(net: &mut Net, who: &SecretKey, game: &str) {
    net.ok(who, json!({"kind":"withdraw","game":game}));
}

#[test]
fn offer_join_cancel_statuses_and_refund_at_once() {
    let p = players();
    let mut net = new_net(&p);
    let offer = json!({"kind":"offer","rules":"ttt_rules","stake":"100","window_ms":WINDOW_MS});
    net.ok(&p.alice, offer.clone());
    assert_eq!(net.record("offer/0000000000000000")["status"], "open");
    assert_eq!(net.balance(&p.alice.address()), START - 100);
    let e = net.refused(&p.alice, json!({"kind":"join","offer":"0000000000000000"}));
    assert!(e.contains("your own offer"), "{e}");
    let e = net.refused(&p.bob, json!({"kind":"cancel","offer":"0000000000000000"}));
    assert!(e.contains("only the creator"), "{e}");
    net.ok(
        &p.alice,
        json!({"kind":"cancel","offer":"0000000000000000"}),
    );
    assert_eq!(net.record("offer/0000000000000000")["status"], "cancelled");
    assert_eq!(net.balance(&p.alice.address()), START, "refunded at once");
    let e = net.refused(&p.bob, json!({"kind":"join","offer":"0000000000000000"}));
    assert!(e.contains("is cancelled"), "{e}");
    // A filled offer: the game opens in the same transaction; the lobby keeps no funds for it.
    let id = open_game(&mut net, &p, "ttt_rules");
    assert_eq!(net.record(&format!("offer/{id}"))["status"], "filled");
    let g = net.record(&format!("game/{id}"));
    assert_eq!(g["status"], "open");
    assert_eq!(g["players"], json!([p.alice.address(), p.bob.address()]));
    let e = net.refused(&p.carol, json!({"kind":"join","offer":id}));
    assert!(e.contains("is filled"), "{e}");
}

#[test]
fn rules_that_fail_the_usability_check_and_bad_windows_are_refused() {
    let p = players();
    let mut net = new_net(&p);
    for rules in ["moveboard", "nobody", "guard_yes"] {
        let e = net.refused(
            &p.alice,
            json!({"kind":"offer","rules":rules,"stake":"10","window_ms":WINDOW_MS}),
        );
        assert!(
            e.contains(&format!("rules module {rules} is not usable")),
            "{rules}: {e}"
        );
    }
    let e = net.refused(
        &p.alice,
        json!({"kind":"offer","rules":"nobody","stake":"10","window_ms":WINDOW_MS}),
    );
    assert_eq!(
        e,
        "invalid: rules module nobody is not usable: no such module"
    );
    let e = net.refused(
        &p.alice,
        json!({"kind":"offer","rules":"bad_rules","stake":"10","window_ms":WINDOW_MS}),
    );
    assert!(
        e.contains("is not usable: rules module bad_rules named no seat for move 0"),
        "{e}"
    );
    for window in [WINDOW_MS - 1, 259_200_001] {
        let e = net.refused(
            &p.alice,
            json!({"kind":"offer","rules":"ttt_rules","stake":"10","window_ms":window}),
        );
        assert_eq!(
            e,
            "invalid: window_ms must be 300000-259200000 (5 minutes to 3 days)"
        );
    }
    // The old window in blocks is not a window.
    let e = net.refused(
        &p.alice,
        json!({"kind":"offer","rules":"ttt_rules","stake":"10","window":20}),
    );
    assert!(
        e.contains("window_ms must be a non-negative integer"),
        "{e}"
    );
    let e = net.refused(
        &p.alice,
        json!({"kind":"offer","stake":"10","window_ms":WINDOW_MS}),
    );
    assert_eq!(
        e,
        "invalid: name the rules: rules (a module id) or rules_code (a code hash)"
    );
    for bad in ["abc", &"zz".repeat(32)] {
        let e = net.refused(
            &p.alice,
            json!({"kind":"offer","rules_code":bad,"stake":"10","window_ms":WINDOW_MS}),
        );
        assert_eq!(e, "invalid: rules_code must be 64 hex digits");
    }
    let e = net.refused(
        &p.alice,
        json!({"kind":"offer","rules_code":"00".repeat(32),"stake":"10","window_ms":WINDOW_MS}),
    );
    assert!(
        e.starts_with("invalid: rules code 0000000000000000… is not usable: ")
            && e.contains("initial_state: no such module, code or pure entry point"),
        "{e}"
    );
    assert_eq!(net.balance(&p.alice.address()), START);
}

#[test]
fn a_guard_that_traps_blocks_only_its_own_offer() {
    let p = players();
    let mut net = new_net(&p);
    let guarded = |guard: &str| {
        json!({"kind":"offer","rules":"ttt_rules","stake":"10","window_ms":WINDOW_MS,
               "guard":{"module":guard,"entry":"admit"}})
    };
    net.ok(&p.alice, guarded("guard_trap"));
    net.ok(&p.alice, guarded("guard_yes"));
    let e = net.refused(&p.bob, json!({"kind":"join","offer":"0000000000000000"}));
    assert!(
        e.contains("guard guard_trap.admit failed: the callee trapped"),
        "{e}"
    );
    net.ok(&p.bob, json!({"kind":"join","offer":"0000000000000001"}));
    assert_eq!(net.record("game/0000000000000001")["status"], "open");
}

#[test]
fn join_with_a_separate_game_key_counts_only_that_key() {
    let p = players();
    let mut net = new_net(&p);
    let (alice_key, bob_key) = (key(20), key(21));
    net.ok(
        &p.alice,
        json!({"kind":"offer","rules":"ttt_rules","stake":"100","window_ms":WINDOW_MS,
               "signer":alice_key.address()}),
    );
    net.ok(
        &p.bob,
        json!({"kind":"join","offer":"0000000000000000","signer":bob_key.address()}),
    );
    let id = "0000000000000000";
    // Moves signed by the players' own account keys do not count.
    let mut wrong = ttt(&net, &p, id);
    x_wins(&mut wrong);
    let e = net.refused(&p.carol, settle(id, &wrong.moves));
    assert!(e.contains("is not signed by"), "{e}");
    let mut g = OffChain::new(
        &TicTacToeRules,
        &net,
        id,
        [&p.alice, &p.bob],
        [&alice_key, &bob_key],
    );
    x_wins(&mut g);
    net.ok(&p.carol, settle(id, &g.moves));
    net.advance(WINDOW_MS);
    withdraw(&mut net, &p.carol, id);
    assert_eq!(
        net.balance(&p.alice.address()),
        START + STAKE,
        "paid to the player, not the key"
    );
}

#[test]
fn full_tictactoe_game_settles_by_history_after_the_window_and_pays_once() {
    let p = players();
    let mut net = new_net(&p);
    let id = open_game(&mut net, &p, "ttt_rules");
    let mut g = ttt(&net, &p, &id);
    x_wins(&mut g);
    // Anyone may submit the history.
    let r = net.ok(&p.carol, settle(&id, &g.moves));
    println!("fuel: settle with a 5-move history: {}", r.fuel_used);
    let rec = net.record(&format!("game/{id}"));
    assert_eq!(rec["status"], "concluding");
    let final_at = rec["outcome"]["final_at_ms"].as_u64().unwrap();
    assert_eq!(final_at, net.time_ms() + WINDOW_MS);
    let e = net.refused(&p.alice, json!({"kind":"withdraw","game":id}));
    assert!(
        e.contains(&format!("final at block time {final_at}")),
        "{e}"
    );
    // A block before the window ends: not final yet; the block at its end: final. (Blocks are
    // at least one second apart.)
    let gap = final_at - net.time_ms() - BLOCK_MS;
    let e = net
        .send_after(&p.alice, gap, json!({"kind":"withdraw","game":id}))
        .error
        .unwrap();
    assert!(e.contains("final at block time"), "{e}");
    let r = net.send_after(&p.bob, BLOCK_MS, json!({"kind":"withdraw","game":id}));
    assert!(r.ok, "{:?}", r.error);
    assert_eq!(net.time_ms(), final_at, "final exactly at final_at_ms");
    assert_eq!(net.balance(&p.alice.address()), START + STAKE);
    assert_eq!(net.balance(&p.bob.address()), START - STAKE);
    let e = net.refused(&p.alice, json!({"kind":"withdraw","game":id}));
    assert!(e.contains("paid out already"), "{e}");
    net.assert_replays();
}

#[test]
fn nine_move_draw_settles_by_history_and_refunds_both() {
    let p = players();
    let mut net = new_net(&p);
    let id = open_game(&mut net, &p, "ttt_rules");
    let mut g = ttt(&net, &p, &id);
    for cell in [0u8, 1, 2, 4, 3, 5, 7, 6, 8] {
        g.play(&[cell]);
    }
    let r = net.ok(&p.alice, settle(&id, &g.moves));
    println!("fuel: settle with a 9-move history: {}", r.fuel_used);
    let bytes = serde_json::to_vec(&g.moves[0]).unwrap().len();
    println!("bytes: one signed move as JSON in an op: {bytes}");
    net.advance(WINDOW_MS);
    withdraw(&mut net, &p.alice, &id);
    assert_eq!(net.balance(&p.alice.address()), START);
    assert_eq!(net.balance(&p.bob.address()), START);
    net.assert_replays();
}

#[test]
fn empty_or_unfinished_history_is_refused() {
    let p = players();
    let mut net = new_net(&p);
    let id = open_game(&mut net, &p, "ttt_rules");
    let e = net.refused(&p.bob, settle(&id, &[]));
    assert!(e.contains("the history does not end the game"), "{e}");
    let mut g = ttt(&net, &p, &id);
    g.play(&[0]);
    g.play(&[4]);
    let e = net.refused(&p.bob, settle(&id, &g.moves));
    assert!(e.contains("the history does not end the game"), "{e}");
    // Moves out of order, a move after the end and a forged signature are refused too.
    let mut done = ttt(&net, &p, &id);
    x_wins(&mut done);
    let mut extra = done.moves.clone();
    let after = done.sign(&[5]);
    extra.push(after);
    let e = net.refused(&p.bob, settle(&id, &extra));
    assert!(e.contains("move 5 comes after the game is over"), "{e}");
    let mut forged = done.moves.clone();
    forged[2]["sig"] = forged[1]["sig"].clone();
    let e = net.refused(&p.bob, settle(&id, &forged));
    assert!(e.contains("move 2 is not signed"), "{e}");
    assert_eq!(net.record(&format!("game/{id}"))["status"], "open");
}

#[test]
fn cooperative_settlement_is_final_at_once() {
    let p = players();
    let mut net = new_net(&p);
    let id = open_game(&mut net, &p, "ttt_rules");
    let mut g = ttt(&net, &p, &id);
    x_wins(&mut g);
    let until = net.time_ms() + 3_000;
    let op = json!({"kind":"settle_cooperative","game":id,"state":hex::encode(&g.state),
                    "valid_until_ms":until,"sigs":[g.sign_final(0, until), g.sign_final(1, until)]});
    net.ok(&p.bob, op);
    let rec = net.record(&format!("game/{id}"));
    assert_eq!(rec["status"], "settled");
    assert_eq!(rec["outcome"]["how"], "cooperative");
    assert_eq!(rec["outcome"]["state_hash"], g.hash());
    withdraw(&mut net, &p.alice, &id);
    assert_eq!(net.balance(&p.alice.address()), START + STAKE);
}

#[test]
fn draw_offer_accepted_before_valid_until_is_a_draw() {
    let p = players();
    let mut net = new_net(&p);
    let id = open_game(&mut net, &p, "ttt_rules");
    let mut g = ttt(&net, &p, &id);
    g.play(&[4]);
    let until = net.time_ms() + 2_000;
    // Alice offers a draw on an unfinished board; Bob co-signs and submits in time.
    let op = json!({"kind":"settle_cooperative","game":id,"state":hex::encode(&g.state),
                    "valid_until_ms":until,"sigs":[g.sign_final(0, until), g.sign_final(1, until)]});
    net.ok(&p.bob, op);
    assert_eq!(
        net.record(&format!("game/{id}"))["outcome"]["winner"],
        Value::Null
    );
    withdraw(&mut net, &p.bob, &id);
    assert_eq!(net.balance(&p.alice.address()), START);
    assert_eq!(net.balance(&p.bob.address()), START);
}

#[test]
fn expired_draw_offer_is_refused() {
    let p = players();
    let mut net = new_net(&p);
    let id = open_game(&mut net, &p, "ttt_rules");
    let mut g = ttt(&net, &p, &id);
    g.play(&[4]);
    let until = net.time_ms() + 1_000;
    let sig0 = g.sign_final(0, until);
    // Bob is about to lose and holds Alice's old draw offer; it expired.
    net.idle(1);
    let op = json!({"kind":"settle_cooperative","game":id,"state":hex::encode(&g.state),
                    "valid_until_ms":until,"sigs":[sig0, g.sign_final(1, until)]});
    let e = net.refused(&p.bob, op);
    assert!(
        e.contains(&format!("the agreement expired at block time {until}")),
        "{e}"
    );
    // One signature alone is no agreement either.
    let until = net.time_ms() + 5_000;
    let op = json!({"kind":"settle_cooperative","game":id,"state":hex::encode(&g.state),
                    "valid_until_ms":until,"sigs":[g.sign_final(1, until), g.sign_final(1, until)]});
    let e = net.refused(&p.bob, op);
    assert!(e.contains("not signed by seat 0"), "{e}");
    assert_eq!(net.record(&format!("game/{id}"))["status"], "open");
}

#[test]
fn challenge_on_your_own_turn_is_refused_and_only_players_challenge() {
    let p = players();
    let mut net = new_net(&p);
    let id = open_game(&mut net, &p, "ttt_rules");
    let mut g = ttt(&net, &p, &id);
    g.play(&[4]);
    // After move 0 it is Bob's turn: Bob may not challenge, Alice may, Carol may not.
    let op = json!({"kind":"challenge","game":id,"moves":g.moves});
    let e = net.refused(&p.bob, op.clone());
    assert!(e.contains("it is your own turn"), "{e}");
    let e = net.refused(&p.carol, op.clone());
    assert!(e.contains("only a player may challenge"), "{e}");
    let e = net.refused(&p.alice, json!({"kind":"challenge","game":id,"moves":[]}));
    assert!(e.contains("it is your own turn"), "{e}");
    net.ok(&p.alice, op);
    assert_eq!(net.record(&format!("game/{id}"))["challenge"]["due"], 1);
}

#[test]
fn challenge_respond_continues_then_the_next_staller_forfeits() {
    let p = players();
    let mut net = new_net(&p);
    let id = open_game(&mut net, &p, "ttt_rules");
    let mut g = ttt(&net, &p, &id);
    g.play(&[4]);
    let r = net.ok(
        &p.alice,
        json!({"kind":"challenge","game":id,"moves":g.moves}),
    );
    println!("fuel: challenge with a 1-move history: {}", r.fuel_used);
    let deadline = net.record(&format!("game/{id}"))["challenge"]["deadline_ms"]
        .as_u64()
        .unwrap();
    assert_eq!(deadline, net.time_ms() + WINDOW_MS);
    let e = net.refused(&p.alice, json!({"kind":"claim_forfeit","game":id}));
    assert!(
        e.contains(&format!("may answer until block time {deadline}")),
        "{e}"
    );
    // Bob answers on-chain with his move; the challenge passes to Alice with a fresh window.
    let answer = g.play(&[0]);
    let r = net.ok(&p.bob, json!({"kind":"respond","game":id,"moves":[answer]}));
    println!("fuel: respond with 1 move: {}", r.fuel_used);
    let rec = net.record(&format!("game/{id}"));
    assert_eq!(rec["status"], "challenged");
    assert_eq!(rec["challenge"]["due"], 0);
    assert_eq!(rec["challenge"]["moves"], 2);
    assert_eq!(rec["challenge"]["deadline_ms"], net.time_ms() + WINDOW_MS);
    // Alice stalls past the deadline: anyone claims the forfeit, Bob wins at once.
    net.advance(WINDOW_MS + 1);
    let e = net.refused(
        &p.alice,
        json!({"kind":"respond","game":id,"moves":[g.sign(&[8])]}),
    );
    assert!(e.contains("deadline passed"), "{e}");
    let mut late = ttt(&net, &p, &id);
    for c in [4u8, 0, 1, 2, 7] {
        late.play(&[c]);
    }
    let e = net.refused(&p.carol, settle(&id, &late.moves));
    assert!(e.contains("the forfeit stands"), "{e}");
    net.ok(&p.carol, json!({"kind":"claim_forfeit","game":id}));
    let rec = net.record(&format!("game/{id}"));
    assert_eq!(rec["outcome"]["how"], "forfeit");
    assert_eq!(rec["outcome"]["winner"], 1);
    withdraw(&mut net, &p.bob, &id);
    assert_eq!(net.balance(&p.bob.address()), START + STAKE);
    net.assert_replays();
}

#[test]
fn a_game_finished_on_chain_through_responses_settles_by_history() {
    let p = players();
    let mut net = new_net(&p);
    let id = open_game(&mut net, &p, "ttt_rules");
    let mut g = ttt(&net, &p, &id);
    g.play(&[0]);
    net.ok(
        &p.alice,
        json!({"kind":"challenge","game":id,"moves":g.moves}),
    );
    for (who, cell) in [(&p.bob, 4u8), (&p.alice, 1), (&p.bob, 8)] {
        let m = g.play(&[cell]);
        net.ok(who, json!({"kind":"respond","game":id,"moves":[m]}));
    }
    let last = g.play(&[2]);
    net.ok(&p.alice, json!({"kind":"respond","game":id,"moves":[last]}));
    let rec = net.record(&format!("game/{id}"));
    assert_eq!(rec["status"], "concluding");
    assert_eq!(rec["outcome"]["winner"], 0);
}

#[test]
fn a_challenge_whose_moves_end_the_game_settles_instead() {
    let p = players();
    let mut net = new_net(&p);
    let id = open_game(&mut net, &p, "ttt_rules");
    let mut g = ttt(&net, &p, &id);
    x_wins(&mut g);
    net.ok(
        &p.bob,
        json!({"kind":"challenge","game":id,"moves":g.moves}),
    );
    assert_eq!(net.record(&format!("game/{id}"))["status"], "concluding");
}

#[test]
fn equivocation_proof_in_the_concluding_window_reverses_the_result() {
    let p = players();
    let mut net = new_net(&p);
    let id = open_game(&mut net, &p, "ttt_rules");
    let mut g = ttt(&net, &p, &id);
    g.play(&[0]);
    g.play(&[4]);
    // At move 2 Alice signed two different moves for the same position.
    let prev = g.hash();
    let other = g.sign(&[6]);
    g.play(&[1]);
    g.play(&[8]);
    g.play(&[2]);
    net.ok(&p.alice, settle(&id, &g.moves));
    assert_eq!(net.record(&format!("game/{id}"))["outcome"]["winner"], 0);
    let proof = json!({"kind":"prove_equivocation","game":id,"a":g.moves[2],"b":other,
                       "prev_a":prev,"prev_b":prev});
    // Two copies of one move are no proof.
    let same = json!({"kind":"prove_equivocation","game":id,"a":g.moves[2],"b":g.moves[2],
                      "prev_a":prev,"prev_b":prev});
    let e = net.refused(&p.bob, same);
    assert!(e.contains("the same move"), "{e}");
    let r = net.ok(&p.bob, proof.clone());
    println!("fuel: prove_equivocation: {}", r.fuel_used);
    let rec = net.record(&format!("game/{id}"));
    assert_eq!(rec["status"], "settled");
    assert_eq!(rec["outcome"]["how"], "equivocation");
    assert_eq!(rec["outcome"]["winner"], 1);
    withdraw(&mut net, &p.bob, &id);
    assert_eq!(net.balance(&p.bob.address()), START + STAKE);
    assert_eq!(net.balance(&p.alice.address()), START - STAKE);
    let e = net.refused(&p.bob, proof);
    assert!(e.contains("final"), "{e}");
}

#[test]
fn equivocation_after_the_concluding_window_is_too_late() {
    let p = players();
    let mut net = new_net(&p);
    let id = open_game(&mut net, &p, "ttt_rules");
    let mut g = ttt(&net, &p, &id);
    g.play(&[0]);
    let prev = g.hash();
    let other = g.sign(&[7]);
    for c in [4u8, 1, 8, 2] {
        g.play(&[c]);
    }
    net.ok(&p.alice, settle(&id, &g.moves));
    net.advance(WINDOW_MS);
    let proof = json!({"kind":"prove_equivocation","game":id,"a":g.moves[1],"b":other,
                       "prev_a":prev,"prev_b":prev});
    let e = net.refused(&p.alice, proof);
    assert!(e.contains("final"), "{e}");
}

#[test]
fn stale_challenge_is_answered_from_the_checkpoint() {
    let p = players();
    let mut net = new_net(&p);
    let id = open_game(&mut net, &p, "ttt_rules");
    let mut g = ttt(&net, &p, &id);
    g.play(&[0]);
    let stale = g.moves.clone();
    g.play(&[4]);
    g.play(&[1]);
    // Both co-sign a checkpoint after 3 moves (Bob to move) …
    let cp = json!({"kind":"checkpoint","game":id,"moves":g.n,"state":hex::encode(&g.state),
                    "sigs":[g.sign_checkpoint(0), g.sign_checkpoint(1)]});
    // … but Alice challenges with the stale one-move history first.
    net.ok(
        &p.alice,
        json!({"kind":"challenge","game":id,"moves":stale}),
    );
    net.ok(&p.bob, cp);
    // Zero moves answer from the checkpoint: the challenge passes to whoever is due there (Bob).
    net.ok(
        &p.bob,
        json!({"kind":"respond_from_checkpoint","game":id,"moves":[]}),
    );
    let rec = net.record(&format!("game/{id}"));
    assert_eq!(
        (
            rec["challenge"]["moves"].as_u64(),
            rec["challenge"]["due"].as_u64()
        ),
        (Some(3), Some(1))
    );
    let e = net.refused(
        &p.bob,
        json!({"kind":"respond_from_checkpoint","game":id,"moves":[]}),
    );
    assert!(
        e.contains("no checkpoint later than the challenged move"),
        "{e}"
    );
    // Bob answers with his next move.
    let m = g.play(&[2]);
    let r = net.ok(&p.bob, json!({"kind":"respond","game":id,"moves":[m]}));
    println!(
        "fuel: respond with 1 move after a checkpoint: {}",
        r.fuel_used
    );
    let rec = net.record(&format!("game/{id}"));
    assert_eq!(rec["challenge"]["moves"], 4);
    assert_eq!(rec["challenge"]["due"], 0);
    // Later histories may start at the checkpoint; a challenge must reach it.
    let e = net.refused(&p.alice, json!({"kind":"challenge","game":id,"moves":[]}));
    assert!(e.contains("the game is challenged"), "{e}");
    let mut rest = vec![];
    for c in [5u8, 8, 3] {
        rest.push(g.play(&[c]));
    }
    // Alice answers with three moves (X 5, O 8, X 3): not over, so Bob is due at move 7.
    net.ok(&p.alice, json!({"kind":"respond","game":id,"moves":rest}));
    let rec = net.record(&format!("game/{id}"));
    assert_eq!(rec["challenge"]["moves"], 7);
    assert_eq!(rec["challenge"]["due"], 1);
    net.assert_replays();
}

#[test]
fn checkpoint_needs_both_signatures_and_moves_forward() {
    let p = players();
    let mut net = new_net(&p);
    let id = open_game(&mut net, &p, "ttt_rules");
    let mut g = ttt(&net, &p, &id);
    g.play(&[0]);
    g.play(&[4]);
    let cp = |g: &OffChain<'_>, s: [String; 2]| json!({"kind":"checkpoint","game":id,"moves":g.n,"state":hex::encode(&g.state),"sigs":s});
    let e = net.refused(
        &p.alice,
        cp(&g, [g.sign_checkpoint(0), g.sign_checkpoint(0)]),
    );
    assert!(e.contains("not signed by seat 1"), "{e}");
    net.ok(
        &p.alice,
        cp(&g, [g.sign_checkpoint(0), g.sign_checkpoint(1)]),
    );
    let e = net.refused(
        &p.alice,
        cp(&g, [g.sign_checkpoint(0), g.sign_checkpoint(1)]),
    );
    assert!(e.contains("a checkpoint at move 2 exists already"), "{e}");
    // A history from the checkpoint settles.
    for c in [1u8, 8, 2] {
        g.play(&[c]);
    }
    let op = json!({"kind":"settle","game":id,"from_checkpoint":true,"moves":g.moves[2..]});
    net.ok(&p.bob, op);
    assert_eq!(net.record(&format!("game/{id}"))["outcome"]["winner"], 0);
}

fn rps<'r>(net: &Net, p: &Players, game: &str) -> OffChain<'r> {
    OffChain::new(&RpsRules, net, game, [&p.alice, &p.bob], [&p.alice, &p.bob])
}

#[test]
fn rps_full_game_commit_reveal_settles_by_history() {
    let p = players();
    let mut net = new_net(&p);
    let id = open_game(&mut net, &p, "rps_rules");
    let mut g = rps(&net, &p, &id);
    let (s0, s1) = ([11u8; 32], [22u8; 32]);
    g.play(&commitment(&g.tag, 0, 1, &s0)); // Alice: paper
    g.play(&commitment(&g.tag, 1, 0, &s1)); // Bob: rock
    g.play(&reveal(1, &s0));
    g.play(&reveal(0, &s1));
    net.ok(&p.bob, settle(&id, &g.moves));
    net.advance(WINDOW_MS);
    withdraw(&mut net, &p.alice, &id);
    assert_eq!(net.balance(&p.alice.address()), START + STAKE);
}

#[test]
fn rps_withhold_the_losing_reveal_and_forfeit() {
    let p = players();
    let mut net = new_net(&p);
    let id = open_game(&mut net, &p, "rps_rules");
    let mut g = rps(&net, &p, &id);
    let (s0, s1) = ([11u8; 32], [22u8; 32]);
    g.play(&commitment(&g.tag, 0, 2, &s0)); // Alice: scissors
    g.play(&commitment(&g.tag, 1, 1, &s1)); // Bob: paper, and loses
    g.play(&reveal(2, &s0));
    // Bob sees he lost and withholds his reveal; Alice challenges.
    net.ok(
        &p.alice,
        json!({"kind":"challenge","game":id,"moves":g.moves}),
    );
    net.advance(WINDOW_MS + 1);
    net.ok(&p.alice, json!({"kind":"claim_forfeit","game":id}));
    withdraw(&mut net, &p.alice, &id);
    assert_eq!(net.balance(&p.alice.address()), START + STAKE);
    assert_eq!(net.balance(&p.bob.address()), START - STAKE);
}

#[test]
fn rps_recommit_with_another_salt_is_equivocation() {
    let p = players();
    let mut net = new_net(&p);
    let id = open_game(&mut net, &p, "rps_rules");
    let g = rps(&net, &p, &id);
    let prev = g.hash();
    let first = g.sign(&commitment(&g.tag, 0, 0, &[1; 32]));
    let second = g.sign(&commitment(&g.tag, 0, 0, &[2; 32]));
    let proof = json!({"kind":"prove_equivocation","game":id,"a":first,"b":second,
                       "prev_a":prev,"prev_b":prev});
    net.ok(&p.bob, proof);
    let rec = net.record(&format!("game/{id}"));
    assert_eq!(rec["outcome"]["how"], "equivocation");
    assert_eq!(rec["outcome"]["winner"], 1);
}

#[test]
fn moveboard_post_only_emits_an_event() {
    let p = players();
    let mut net = new_net(&p);
    let before = net.state.map.clone();
    let payload = json!({"n":0,"data":"04","sig":"x"}).to_string();
    let r = net.send_to(
        &p.alice,
        "moveboard",
        json!({"kind":"post","game":"0000000000000000","type":1,"payload":payload}),
    );
    assert!(r.ok, "{:?}", r.error);
    assert_eq!(r.events[0].kind, "posted");
    assert_eq!(r.events[0].data["from"], p.alice.address());
    let changed: Vec<_> = net
        .state
        .map
        .keys()
        .filter(|k| k.starts_with("m/moveboard/") && before.get(*k) != net.state.map.get(*k))
        .collect();
    assert!(changed.is_empty(), "the board stores nothing: {changed:?}");
}

/// Whether a wasm binary has an import section (id 2).
fn has_import_section(wasm: &[u8]) -> bool {
    let mut i = 8;
    while i < wasm.len() {
        let id = wasm[i];
        i += 1;
        let (mut size, mut shift) = (0usize, 0);
        loop {
            let b = wasm[i];
            i += 1;
            size |= ((b & 0x7f) as usize) << shift;
            shift += 7;
            if b & 0x80 == 0 {
                break;
            }
        }
        if id == 2 {
            return true;
        }
        i += size;
    }
    false
}

#[test]
fn rules_wasm_imports_nothing_and_answers_as_natively() {
    use gamechain_runtime::{MemState, Overlay, WasmModule};
    use gamechain_sdk::rules::{dispatch, encode_move, GameRules};
    for pkg in ["tictactoe_rules", "rps_rules"] {
        let wasm = gamechain_tests::guest(pkg).wasm;
        assert!(
            !has_import_section(&wasm),
            "{pkg} must import nothing (browser: empty imports)"
        );
    }
    assert!(has_import_section(&gamechain_tests::guest("channel").wasm));
    let rt = gamechain_tests::runtime();
    let wasm = gamechain_tests::guest("tictactoe_rules").wasm;
    let m = WasmModule::new(&rt, "ttt_rules", &wasm).unwrap();
    let committed = MemState::new();
    let state = Overlay::new(&committed);
    let call = |entry: &str, input: &[u8]| {
        m.call_pure(&state, entry, input, 1_000_000, None)
            .unwrap()
            .result
            .ok()
    };
    let rules = TicTacToeRules;
    let tag = [8u8; 32];
    let mut s = rules.initial_state(&tag);
    assert_eq!(call("initial_state", &tag), Some(s.clone()));
    assert_eq!(call("initial_state", b""), None, "the input is the tag");
    for (n, cell) in [0u8, 4, 1, 8, 2, 3].iter().enumerate() {
        let n = n as u64;
        let mover = rules.mover_at(n);
        assert_eq!(call("mover_at", &n.to_le_bytes()), Some(vec![mover]));
        let input = encode_move(n, mover, &s, &[*cell]);
        for entry in ["validate_move", "apply_move"] {
            assert_eq!(
                call(entry, &input),
                dispatch(&rules, entry, &input),
                "{entry} {n}"
            );
        }
        for entry in ["is_over", "winner"] {
            assert_eq!(call(entry, &s), dispatch(&rules, entry, &s), "{entry} {n}");
        }
        if let Some(next) = dispatch(&rules, "apply_move", &input) {
            s = next;
        }
    }
    assert!(
        rules.is_over(&s),
        "X won at move 4; move 5 was refused by both"
    );
}

/// The cross-language vector of the JavaScript SDK (`node/web/sdk/test/vectors.test.js` asserts
/// the same strings): the tag of game `0000000000000003`, the text of RPS move 0 (seat 0, paper,
/// salt `[7; 32]`, committed under that tag) signed by the fixed Divi testnet key of
/// `runtime/chain/src/keys/signed_message.rs`, and its signature.
#[test]
fn js_sdk_move_vector_text_and_signature() {
    use gamechain_runtime::chain::sign_message;
    use gamechain_sdk::rules::GameRules;
    let key = SecretKey::from_wif("cPyzSehsdPeYU2aqFJ7jhvGmJBiciscQKdVMWkxhhK9pTLQVf7pU").unwrap();
    assert_eq!(key.address(), "y115R6b1mLc8CCZCi7iqZZvQMsjArEYWgC");
    let domain = channel::Domain {
        chain: "9b5e3e0a7c1d2f4e6a8b0c1d2e3f405162738495a6b7c8d9e0f1a2b3c4d5e6f7".into(),
        module: "channel".into(),
    };
    let tag = domain.game_tag("0000000000000003");
    assert_eq!(
        hex::encode(tag),
        "48381642f39e82f5537bcfa8b0a163b83736906f75dbefbb00bd05f07ae3d570"
    );
    let prev = channel::state_hash(&RpsRules.initial_state(&tag));
    assert_eq!(
        prev,
        "196ceaab3c82c2e2b89ada94860cb2820733c139bf49111b43effb7144741c7b"
    );
    let data = commitment(&tag, 0, 1, &[7; 32]);
    let text = domain.move_message("0000000000000003", 0, &prev, &key.address(), &data);
    assert_eq!(
        text,
        "gamechain channel move v1\n\
         chain: 9b5e3e0a7c1d2f4e6a8b0c1d2e3f405162738495a6b7c8d9e0f1a2b3c4d5e6f7\n\
         module: channel\n\
         game: 0000000000000003\n\
         move: 0\n\
         prev: 196ceaab3c82c2e2b89ada94860cb2820733c139bf49111b43effb7144741c7b\n\
         mover: y115R6b1mLc8CCZCi7iqZZvQMsjArEYWgC\n\
         data: c043134a41bb8b0eae3f6946c64649cf26924a02637c82d7621adc5f0c3674d9"
    );
    assert_eq!(
        sign_message(&key, &text),
        "HytL+TaEUMARnZbq7GG61lSMrBA1emhr1EgjUyaIRmU3FbJy1VryZ/9QmWsORNRANDp1Qlxe/maUSkJnp85+3aY="
    );
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

/// Rules named by module id are resolved once, at the offer, to the code that module runs; the
/// game plays by that code hash whatever the module runs later, and an offer may name code by
/// hash alone (or both, which must agree).
#[test]
fn rules_are_called_by_the_code_hash_recorded_at_the_offer() {
    let p = players();
    let mut net = new_net(&p);
    let ttt_wasm = gamechain_tests::guest("tictactoe_rules").wasm;
    let rps_wasm = gamechain_tests::guest("rps_rules").wasm;
    let (ttt_hash, rps_hash) = (sha256_hex(&ttt_wasm), sha256_hex(&rps_wasm));
    net.deploy(&p.carol, "carols_rules", &ttt_wasm);
    let offer = |rules: Value, code: Value| {
        json!({"kind":"offer","rules":rules,"rules_code":code,"stake":STAKE.to_string(),
               "window_ms":WINDOW_MS})
    };
    net.ok(&p.alice, offer(json!("carols_rules"), Value::Null));
    let first = format!("{:016x}", count_offers(&net) - 1);
    let rec = net.record(&format!("offer/{first}"));
    assert_eq!(
        (rec["rules"].as_str(), rec["rules_code"].as_str()),
        (Some("carols_rules"), Some(ttt_hash.as_str()))
    );
    // By hash alone: the code of the genesis `rps_rules`, named by no id.
    net.ok(&p.alice, offer(Value::Null, json!(rps_hash)));
    let by_hash = format!("{:016x}", count_offers(&net) - 1);
    let rec = net.record(&format!("offer/{by_hash}"));
    assert_eq!(
        (rec["rules"].clone(), rec["rules_code"].as_str()),
        (Value::Null, Some(rps_hash.as_str()))
    );
    // Both: they must agree (a client pins the code it checked).
    let e = net.refused(&p.alice, offer(json!("carols_rules"), json!(rps_hash)));
    assert_eq!(
        e,
        format!("conflict: rules module carols_rules runs code {ttt_hash}, not the rules_code given ({rps_hash})")
    );
    net.ok(
        &p.alice,
        offer(json!("carols_rules"), json!(ttt_hash.to_uppercase())),
    );

    // The module's owner upgrades it to other rules before Bob joins the first offer.
    net.deploy(&p.carol, "carols_rules", &rps_wasm);
    net.ok(&p.bob, json!({"kind":"join","offer":first}));
    let game = net.record(&format!("game/{first}"));
    assert_eq!(game["rules_code"], ttt_hash);
    let mut g = ttt(&net, &p, &first);
    x_wins(&mut g);
    net.ok(&p.bob, settle(&first, &g.moves));
    let rec = net.record(&format!("game/{first}"));
    assert_eq!(
        (
            rec["outcome"]["winner"].as_u64(),
            rec["outcome"]["how"].as_str()
        ),
        (Some(0), Some("history")),
        "played by the tic-tac-toe code the offer recorded"
    );
    // A new offer of the module id pins what it runs now.
    net.ok(&p.alice, offer(json!("carols_rules"), Value::Null));
    let later = format!("{:016x}", count_offers(&net) - 1);
    assert_eq!(
        net.record(&format!("offer/{later}"))["rules_code"],
        rps_hash
    );

    // The game by hash plays RPS (the code named), joined and settled like any other.
    net.ok(&p.bob, json!({"kind":"join","offer":by_hash}));
    let mut g = rps(&net, &p, &by_hash);
    let (s0, s1) = ([1u8; 32], [2u8; 32]);
    g.play(&commitment(&g.tag, 0, 0, &s0));
    g.play(&commitment(&g.tag, 1, 2, &s1));
    g.play(&reveal(0, &s0));
    g.play(&reveal(2, &s1));
    net.ok(&p.carol, settle(&by_hash, &g.moves));
    assert_eq!(
        net.record(&format!("game/{by_hash}"))["outcome"]["winner"],
        0
    );
    net.assert_replays();
}

/// The attacks of issue 23 by the owner of a rules module: upgrading it while the victim is
/// challenged (his answer used to be refused: "the game is void"), then back, then claiming the
/// forfeit; and upgrading after losing a game settled by history (it used to end void, the loser
/// refunded). A game plays by the code recorded at its offer, so neither changes anything.
#[test]
fn a_rules_upgrade_mid_game_changes_nothing() {
    let p = players();
    let mut net = new_net(&p);
    let ttt_wasm = gamechain_tests::guest("tictactoe_rules").wasm;
    let bad = wat::parse_str(gamechain_tests::channel_net::BAD_RULES).unwrap();
    // Alice owns the rules module and plays with it.
    net.deploy(&p.alice, "alices_rules", &ttt_wasm);
    let id = open_game(&mut net, &p, "alices_rules");
    let mut g = ttt(&net, &p, &id);
    g.play(&[0]);
    net.ok(
        &p.alice,
        json!({"kind":"challenge","game":id,"moves":g.moves}),
    );
    net.deploy(&p.alice, "alices_rules", &bad);
    // Bob's answer is accepted: the game calls the code it recorded, not the module id.
    let answer = g.play(&[4]);
    net.ok(&p.bob, json!({"kind":"respond","game":id,"moves":[answer]}));
    let rec = net.record(&format!("game/{id}"));
    assert_eq!(
        (
            rec["challenge"]["due"].as_u64(),
            rec["challenge"]["moves"].as_u64()
        ),
        (Some(0), Some(2))
    );
    net.deploy(&p.alice, "alices_rules", &ttt_wasm);
    net.advance(WINDOW_MS + 1);
    // No forfeit of Bob's: he answered. Alice, due since, loses hers.
    net.ok(&p.carol, json!({"kind":"claim_forfeit","game":id}));
    let rec = net.record(&format!("game/{id}"));
    assert_eq!(
        (
            rec["outcome"]["how"].as_str(),
            rec["outcome"]["winner"].as_u64()
        ),
        (Some("forfeit"), Some(1))
    );
    withdraw(&mut net, &p.bob, &id);
    assert_eq!(net.balance(&p.bob.address()), START + STAKE);

    // Bob wins a second game by history; Alice upgrades her rules before it is final.
    let id = open_game(&mut net, &p, "alices_rules");
    let mut g = ttt(&net, &p, &id);
    for cell in [0u8, 4, 1, 2, 8, 6] {
        g.play(&[cell]); // O (Bob) takes the diagonal 2 4 6
    }
    net.ok(&p.bob, settle(&id, &g.moves));
    net.deploy(&p.alice, "alices_rules", &bad);
    let e = net.refused(&p.alice, json!({"kind":"withdraw","game":id}));
    assert!(e.contains("the result is final at block time"), "{e}");
    net.advance(WINDOW_MS);
    withdraw(&mut net, &p.alice, &id);
    let rec = net.record(&format!("game/{id}"));
    assert_eq!(
        (
            rec["outcome"]["how"].as_str(),
            rec["outcome"]["winner"].as_u64()
        ),
        (Some("history"), Some(1))
    );
    assert_eq!(
        net.balance(&p.bob.address()),
        START + 2 * STAKE,
        "the lost game stays lost"
    );
    assert_eq!(net.balance(&p.alice.address()), START - 2 * STAKE);
    net.assert_replays();
}

/// A rules module whose pure entry point reads state could change its answers without its code
/// changing. Called by code hash it has no state at all: the read traps and the offer is
/// refused. (The same entry point answers when called read-only by module id, as a guard is.)
#[test]
fn a_pure_rules_entry_that_reads_state_traps() {
    let p = players();
    let mut net = new_net(&p);
    let e = net.refused(
        &p.alice,
        json!({"kind":"offer","rules":"state_rules","stake":"10","window_ms":WINDOW_MS}),
    );
    assert_eq!(
        e,
        "invalid: rules module state_rules is not usable: rules module state_rules initial_state: the callee trapped"
    );
    net.ok(
        &p.alice,
        json!({"kind":"offer","rules":"ttt_rules","stake":"10","window_ms":WINDOW_MS,
               "guard":{"module":"state_rules","entry":"admit"}}),
    );
    net.ok(&p.bob, json!({"kind":"join","offer":"0000000000000000"}));
    assert_eq!(net.balance(&p.alice.address()), START - 10);
}

/// Issue 22's attack: a challenger sends many cheap transactions after challenging (each in a
/// block of its own) to pass the window. Windows are block time: heights do not count.
#[test]
fn windows_are_block_time_not_heights() {
    let p = players();
    let mut net = new_net(&p);
    let id = open_game(&mut net, &p, "ttt_rules");
    let mut g = ttt(&net, &p, &id);
    g.play(&[4]);
    net.ok(
        &p.alice,
        json!({"kind":"challenge","game":id,"moves":g.moves}),
    );
    let rec = net.record(&format!("game/{id}"));
    let deadline = rec["challenge"]["deadline_ms"].as_u64().unwrap();
    let (h0, t0) = (net.height(), net.time_ms());
    assert_eq!(deadline, t0 + WINDOW_MS);
    for i in 0..40 {
        let post =
            json!({"kind":"post","game":"ffffffffffffffff","type":1,"payload":i.to_string()});
        assert!(net.send_to(&p.alice, "moveboard", post).ok);
        let e = net.refused(&p.alice, json!({"kind":"claim_forfeit","game":id}));
        assert!(
            e.contains(&format!("may answer until block time {deadline}")),
            "{e}"
        );
    }
    assert!(net.height() >= h0 + 80, "many blocks later");
    assert!(net.time_ms() < deadline);
    assert_eq!(
        net.record(&format!("game/{id}"))["challenge"]["deadline_ms"],
        deadline
    );
    // Bob answers late in block height, in time by the clock.
    let answer = g.play(&[0]);
    net.ok(&p.bob, json!({"kind":"respond","game":id,"moves":[answer]}));
    // A block at the deadline itself still belongs to the due player; the next one (blocks
    // are at least a second apart) does not.
    let deadline = net.record(&format!("game/{id}"))["challenge"]["deadline_ms"]
        .as_u64()
        .unwrap();
    net.advance(deadline - net.time_ms() - BLOCK_MS);
    let e = net.refused_after(
        &p.carol,
        BLOCK_MS,
        json!({"kind":"claim_forfeit","game":id}),
    );
    assert_eq!(net.time_ms(), deadline);
    assert!(e.contains("may answer until"), "at the deadline: {e}");
    let r = net.send_after(
        &p.carol,
        BLOCK_MS,
        json!({"kind":"claim_forfeit","game":id}),
    );
    assert!(r.ok, "{:?}", r.error);
    assert_eq!(net.record(&format!("game/{id}"))["outcome"]["winner"], 1);
}

/// A draw offer signed long ago, still valid by its `valid_until_ms`, cannot undo a forfeit:
/// once a challenge's deadline has passed no cooperative settlement is accepted. Before it, an
/// agreement still ends a challenged game.
#[test]
fn cooperative_settlement_refused_after_a_challenge_deadline() {
    let p = players();
    let mut net = new_net(&p);
    let id = open_game(&mut net, &p, "ttt_rules");
    let mut g = ttt(&net, &p, &id);
    g.play(&[4]);
    let until = net.time_ms() + 3_600_000;
    let draw = json!({"kind":"settle_cooperative","game":id,"state":hex::encode(&g.state),
                      "valid_until_ms":until,"sigs":[g.sign_final(0, until), g.sign_final(1, until)]});
    net.ok(
        &p.alice,
        json!({"kind":"challenge","game":id,"moves":g.moves}),
    );
    let deadline = net.record(&format!("game/{id}"))["challenge"]["deadline_ms"]
        .as_u64()
        .unwrap();
    net.advance(WINDOW_MS + 1);
    assert!(
        net.time_ms() < until,
        "the agreement itself has not expired"
    );
    let e = net.refused(&p.bob, draw);
    assert_eq!(
        e,
        format!(
            "conflict: the challenge deadline passed at block time {deadline}: the forfeit stands"
        )
    );
    net.ok(&p.alice, json!({"kind":"claim_forfeit","game":id}));
    assert_eq!(net.record(&format!("game/{id}"))["outcome"]["winner"], 0);

    // Within the deadline an agreement ends a challenged game.
    let id = open_game(&mut net, &p, "ttt_rules");
    let mut g = ttt(&net, &p, &id);
    g.play(&[4]);
    net.ok(
        &p.alice,
        json!({"kind":"challenge","game":id,"moves":g.moves}),
    );
    let until = net.time_ms() + 60_000;
    let draw = json!({"kind":"settle_cooperative","game":id,"state":hex::encode(&g.state),
                      "valid_until_ms":until,"sigs":[g.sign_final(0, until), g.sign_final(1, until)]});
    net.ok(&p.bob, draw);
    let rec = net.record(&format!("game/{id}"));
    assert_eq!(
        (
            rec["outcome"]["how"].as_str(),
            rec["outcome"]["winner"].clone()
        ),
        (Some("cooperative"), Value::Null)
    );
}

/// Stake 0: nothing is escrowed, the game is played and settled as any other, the result is
/// each player's standing (a leaderboard entry, moved when an equivocation proof reverses a
/// concluding result), and `withdraw` has nothing to pay.
#[test]
fn unstaked_game_records_a_result_without_payout() {
    let p = players();
    let mut net = new_net(&p);
    let unstaked = |net: &mut Net| {
        net.ok(
            &p.alice,
            json!({"kind":"offer","rules":"ttt_rules","stake":"0","window_ms":WINDOW_MS}),
        );
        let id = format!("{:016x}", count_offers(net) - 1);
        net.ok(&p.bob, json!({"kind":"join","offer":id}));
        id
    };
    let standing = |net: &Net, who: &SecretKey| {
        let a = who.address();
        let v = net.view(&[("player", a.as_str())]).unwrap();
        (
            v["wins"].as_u64().unwrap(),
            v["losses"].as_u64().unwrap(),
            v["draws"].as_u64().unwrap(),
        )
    };
    let id = unstaked(&mut net);
    assert_eq!(net.balance(&p.alice.address()), START);
    assert_eq!(net.balance(&p.bob.address()), START);
    assert_eq!(net.balance("module:channel"), 0);
    let mut g = ttt(&net, &p, &id);
    x_wins(&mut g);
    net.ok(&p.bob, settle(&id, &g.moves));
    assert_eq!(standing(&net, &p.alice), (1, 0, 0));
    assert_eq!(standing(&net, &p.bob), (0, 1, 0));
    net.advance(WINDOW_MS);
    let e = net.refused(&p.alice, json!({"kind":"withdraw","game":id}));
    assert_eq!(
        e,
        format!("conflict: game {id} is unstaked: there is nothing to pay")
    );
    let at = net.time_ms().to_string();
    let v = net
        .view(&[("game", id.as_str()), ("at_ms", at.as_str())])
        .unwrap();
    assert_eq!(
        (v["final"].as_bool(), v["final_state_hash"].as_str()),
        (Some(true), Some(g.hash().as_str()))
    );

    // A second game Alice wins by history, but she signed two moves for one position.
    let id = unstaked(&mut net);
    let mut g = ttt(&net, &p, &id);
    g.play(&[0]);
    g.play(&[4]);
    let prev = g.hash();
    let other = g.sign(&[6]);
    for cell in [1u8, 8, 2] {
        g.play(&[cell]);
    }
    net.ok(&p.alice, settle(&id, &g.moves));
    assert_eq!(standing(&net, &p.alice), (2, 0, 0));
    net.ok(
        &p.bob,
        json!({"kind":"prove_equivocation","game":id,"a":g.moves[2],"b":other,
                          "prev_a":prev,"prev_b":prev}),
    );
    assert_eq!(standing(&net, &p.alice), (1, 1, 0));
    assert_eq!(standing(&net, &p.bob), (1, 1, 0));
    // A third ends in an agreed draw; the unstaked offer is cancelled like any other.
    let id = unstaked(&mut net);
    let mut g = ttt(&net, &p, &id);
    g.play(&[4]);
    let until = net.time_ms() + 10_000;
    net.ok(&p.bob, json!({"kind":"settle_cooperative","game":id,"state":hex::encode(&g.state),
                         "valid_until_ms":until,"sigs":[g.sign_final(0, until), g.sign_final(1, until)]}));
    assert_eq!(standing(&net, &p.bob), (1, 1, 1));
    net.ok(
        &p.alice,
        json!({"kind":"offer","rules":"ttt_rules","stake":"0","window_ms":WINDOW_MS}),
    );
    let offer = format!("{:016x}", count_offers(&net) - 1);
    net.ok(&p.alice, json!({"kind":"cancel","offer":offer}));
    assert_eq!(net.balance(&p.alice.address()), START);
    assert_eq!(net.balance(&p.bob.address()), START);
    net.assert_replays();
}

/// A guard that refuses, or that loops until its fuel runs out, blocks joins to its own offer
/// only; nothing is escrowed from the refused joiner.
#[test]
fn a_guard_that_refuses_or_runs_out_of_fuel_blocks_only_its_own_offer() {
    let p = players();
    let mut net = new_net(&p);
    for guard in ["guard_no", "guard_loop", "guard_yes"] {
        net.ok(
            &p.alice,
            json!({"kind":"offer","rules":"ttt_rules","stake":"10","window_ms":WINDOW_MS,
                   "guard":{"module":guard,"entry":"admit"}}),
        );
    }
    let e = net.refused(&p.bob, json!({"kind":"join","offer":"0000000000000000"}));
    assert_eq!(
        e,
        format!(
            "not allowed: the offer's guard guard_no.admit refuses {}",
            p.bob.address()
        )
    );
    let r = net.send_to(
        &p.bob,
        "channel",
        json!({"kind":"join","offer":"0000000000000001"}),
    );
    assert_eq!(
        r.error.as_deref(),
        Some("not allowed: the offer's guard guard_loop.admit failed: the callee ran out of fuel")
    );
    println!("fuel: a join whose guard runs out of fuel: {}", r.fuel_used);
    assert_eq!(net.balance(&p.bob.address()), START);
    net.ok(&p.bob, json!({"kind":"join","offer":"0000000000000002"}));
    assert_eq!(net.balance(&p.bob.address()), START - 10);
    assert_eq!(net.record("offer/0000000000000000")["status"], "open");
}

/// The game view says whether the result stands at a block time (`at_ms`) and the hash of the
/// final state: the history's, the agreed one, or for a forfeit the state the staller did not
/// move from.
#[test]
fn the_game_view_says_whether_the_result_is_final_and_its_state_hash() {
    let p = players();
    let mut net = new_net(&p);
    let view = |net: &Net, id: &str, at: Option<u64>| {
        let at = at.map(|t| t.to_string());
        let mut q = vec![("game", id)];
        if let Some(t) = &at {
            q.push(("at_ms", t.as_str()));
        }
        let v = net.view(&q).unwrap();
        (
            v["final"].as_bool().unwrap(),
            v["final_state_hash"].as_str().map(str::to_string),
        )
    };
    let id = open_game(&mut net, &p, "ttt_rules");
    assert_eq!(view(&net, &id, Some(net.time_ms())), (false, None));
    let mut g = ttt(&net, &p, &id);
    x_wins(&mut g);
    net.ok(&p.bob, settle(&id, &g.moves));
    let final_at = net.record(&format!("game/{id}"))["outcome"]["final_at_ms"]
        .as_u64()
        .unwrap();
    assert_eq!(view(&net, &id, Some(final_at - 1)), (false, None));
    assert_eq!(view(&net, &id, Some(final_at)), (true, Some(g.hash())));
    assert_eq!(
        view(&net, &id, None),
        (false, None),
        "without a time only `settled` is final"
    );
    assert!(net
        .view(&[("game", id.as_str()), ("at_ms", "soon")])
        .unwrap_err()
        .contains("at_ms must be"));
    net.advance(WINDOW_MS);
    withdraw(&mut net, &p.alice, &id);
    assert_eq!(view(&net, &id, None), (true, Some(g.hash())));

    // A forfeit's final state is the challenged one.
    let id = open_game(&mut net, &p, "ttt_rules");
    let mut g = ttt(&net, &p, &id);
    g.play(&[4]);
    net.ok(
        &p.alice,
        json!({"kind":"challenge","game":id,"moves":g.moves}),
    );
    net.advance(WINDOW_MS + 1);
    net.ok(&p.alice, json!({"kind":"claim_forfeit","game":id}));
    assert_eq!(view(&net, &id, None), (true, Some(g.hash())));
}

/// Issue 23's commit-reveal attack: the second player copies the first player's commitment
/// (and later its reveal) to force a draw. A commitment is bound to its seat: the copier cannot
/// open it, is challenged and forfeits.
#[test]
fn a_commitment_copied_from_the_other_seat_cannot_be_opened() {
    let p = players();
    let mut net = new_net(&p);
    let id = open_game(&mut net, &p, "rps_rules");
    let mut g = rps(&net, &p, &id);
    let salt = [11u8; 32];
    let c0 = commitment(&g.tag, 0, 1, &salt);
    g.play(&c0); // Alice: paper
    g.play(&c0); // Bob copies her commitment
    g.play(&reveal(1, &salt)); // Alice reveals
    let copied = g.sign(&reveal(1, &salt)); // Bob replays her reveal
    let mut forced = g.moves.clone();
    forced.push(copied.clone());
    let e = net.refused(&p.bob, settle(&id, &forced));
    assert!(e.contains("move 3 is not a legal move"), "{e}");
    net.ok(
        &p.alice,
        json!({"kind":"challenge","game":id,"moves":g.moves}),
    );
    let e = net.refused(&p.bob, json!({"kind":"respond","game":id,"moves":[copied]}));
    assert!(e.contains("move 3 is not a legal move"), "{e}");
    net.advance(WINDOW_MS + 1);
    net.ok(&p.alice, json!({"kind":"claim_forfeit","game":id}));
    withdraw(&mut net, &p.alice, &id);
    assert_eq!(net.balance(&p.alice.address()), START + STAKE);
    assert_eq!(net.balance(&p.bob.address()), START - STAKE);
}

/// A commitment is bound to its game: one copied from another game (same seat, its reveal
/// public there) cannot be opened in this one.
#[test]
fn a_commitment_copied_from_another_game_cannot_be_opened() {
    let p = players();
    let mut net = new_net(&p);
    let first = open_game(&mut net, &p, "rps_rules");
    net.ok(
        &p.alice,
        json!({"kind":"offer","rules":"rps_rules","stake":STAKE.to_string(),"window_ms":WINDOW_MS}),
    );
    let second = format!("{:016x}", count_offers(&net) - 1);
    net.ok(&p.carol, json!({"kind":"join","offer":second}));
    let mut g1 = rps(&net, &p, &first);
    let mut g2 = OffChain::new(
        &RpsRules,
        &net,
        &second,
        [&p.alice, &p.carol],
        [&p.alice, &p.carol],
    );
    assert_ne!(g1.tag, g2.tag);
    let (sa, sb) = ([1u8; 32], [2u8; 32]);
    g1.play(&commitment(&g1.tag, 0, 0, &sa));
    let bobs = commitment(&g1.tag, 1, 1, &sb);
    g1.play(&bobs); // Bob: paper in the first game
    g2.play(&commitment(&g2.tag, 0, 0, &sa));
    g2.play(&bobs); // Carol copies Bob's commitment into the second
    g1.play(&reveal(0, &sa));
    g1.play(&reveal(1, &sb)); // Bob's reveal is public now
    net.ok(&p.bob, settle(&first, &g1.moves));
    g2.play(&reveal(0, &sa));
    let replayed = g2.sign(&reveal(1, &sb));
    let mut moves = g2.moves.clone();
    moves.push(replayed);
    let e = net.refused(&p.carol, settle(&second, &moves));
    assert!(e.contains("move 3 is not a legal move"), "{e}");
    net.ok(
        &p.alice,
        json!({"kind":"challenge","game":second,"moves":g2.moves}),
    );
    net.advance(WINDOW_MS + 1);
    net.ok(&p.alice, json!({"kind":"claim_forfeit","game":second}));
    assert_eq!(
        net.record(&format!("game/{second}"))["outcome"]["winner"],
        0
    );
}
