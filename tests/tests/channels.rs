//! Games played off-chain and settled on-chain (docs/channels.md): every behaviour of the
//! lobby and the channel, one test each, on the real runtime through signed transactions
//! (`gamechain_tests::channel_net`): the built `channel`, `ttt_rules`, `rps_rules` and
//! `moveboard` guests, moves signed by real keys over the canonical texts, escrow checked after
//! every block (the channel holds exactly the stakes it owes), payouts checked by balance, and
//! the whole chain replayed on a second runtime where it matters. Run with `--nocapture` to see
//! the fuel figures.

use gamechain_runtime::chain::SecretKey;
use gamechain_tests::channel_net::{key, Net, OffChain, START};
use rps_rules::{commitment, reveal, RpsRules};
use serde_json::{json, Value};
use tictactoe_rules::TicTacToeRules;

const STAKE: u128 = 100;
const WINDOW: u64 = 5;

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
        json!({"kind":"offer","rules":rules,"stake":STAKE.to_string(),"window":WINDOW}),
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
    let offer = json!({"kind":"offer","rules":"ttt_rules","stake":"100","window":WINDOW});
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
            json!({"kind":"offer","rules":rules,"stake":"10","window":WINDOW}),
        );
        assert!(e.contains("is not usable"), "{rules}: {e}");
    }
    let e = net.refused(
        &p.alice,
        json!({"kind":"offer","rules":"bad_rules","stake":"10","window":WINDOW}),
    );
    assert!(
        e.contains("is not usable: rules module bad_rules named no seat for move 0"),
        "{e}"
    );
    for window in [WINDOW - 1, 259_201] {
        let e = net.refused(
            &p.alice,
            json!({"kind":"offer","rules":"ttt_rules","stake":"10","window":window}),
        );
        assert!(e.contains("window must be 5-259200 blocks"), "{e}");
    }
    assert_eq!(net.balance(&p.alice.address()), START);
}

#[test]
fn a_guard_that_traps_blocks_only_its_own_offer() {
    let p = players();
    let mut net = new_net(&p);
    let guarded = |guard: &str| {
        json!({"kind":"offer","rules":"ttt_rules","stake":"10","window":WINDOW,
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
        json!({"kind":"offer","rules":"ttt_rules","stake":"100","window":WINDOW,
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
    net.idle(WINDOW);
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
    let final_at = rec["outcome"]["final_at"].as_u64().unwrap();
    assert_eq!(final_at, net.height() + WINDOW);
    let e = net.refused(&p.alice, json!({"kind":"withdraw","game":id}));
    assert!(e.contains(&format!("final at height {final_at}")), "{e}");
    net.idle(WINDOW - 1);
    withdraw(&mut net, &p.bob, &id);
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
    net.idle(WINDOW);
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
    let until = net.height() + 3;
    let op = json!({"kind":"settle_cooperative","game":id,"state":hex::encode(&g.state),
                    "valid_until":until,"sigs":[g.sign_final(0, until), g.sign_final(1, until)]});
    net.ok(&p.bob, op);
    let rec = net.record(&format!("game/{id}"));
    assert_eq!(rec["status"], "settled");
    assert_eq!(rec["outcome"]["how"], "cooperative");
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
    let until = net.height() + 2;
    // Alice offers a draw on an unfinished board; Bob co-signs and submits in time.
    let op = json!({"kind":"settle_cooperative","game":id,"state":hex::encode(&g.state),
                    "valid_until":until,"sigs":[g.sign_final(0, until), g.sign_final(1, until)]});
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
    let until = net.height() + 1;
    let sig0 = g.sign_final(0, until);
    // Bob is about to lose and holds Alice's old draw offer; it expired.
    net.idle(2);
    let op = json!({"kind":"settle_cooperative","game":id,"state":hex::encode(&g.state),
                    "valid_until":until,"sigs":[sig0, g.sign_final(1, until)]});
    let e = net.refused(&p.bob, op);
    assert!(
        e.contains(&format!("the agreement expired at height {until}")),
        "{e}"
    );
    // One signature alone is no agreement either.
    let until = net.height() + 5;
    let op = json!({"kind":"settle_cooperative","game":id,"state":hex::encode(&g.state),
                    "valid_until":until,"sigs":[g.sign_final(1, until), g.sign_final(1, until)]});
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
    let deadline = net.record(&format!("game/{id}"))["challenge"]["deadline"]
        .as_u64()
        .unwrap();
    assert_eq!(deadline, net.height() + WINDOW);
    let e = net.refused(&p.alice, json!({"kind":"claim_forfeit","game":id}));
    assert!(
        e.contains(&format!("may answer until height {deadline}")),
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
    assert_eq!(rec["challenge"]["deadline"], net.height() + WINDOW);
    // Alice stalls past the deadline: anyone claims the forfeit, Bob wins at once.
    net.idle(WINDOW);
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
    net.idle(WINDOW);
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
    g.play(&commitment(1, &s0)); // Alice: paper
    g.play(&commitment(0, &s1)); // Bob: rock
    g.play(&reveal(1, &s0));
    g.play(&reveal(0, &s1));
    net.ok(&p.bob, settle(&id, &g.moves));
    net.idle(WINDOW);
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
    g.play(&commitment(2, &s0)); // Alice: scissors
    g.play(&commitment(1, &s1)); // Bob: paper, and loses
    g.play(&reveal(2, &s0));
    // Bob sees he lost and withholds his reveal; Alice challenges.
    net.ok(
        &p.alice,
        json!({"kind":"challenge","game":id,"moves":g.moves}),
    );
    net.idle(WINDOW + 1);
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
    let first = g.sign(&commitment(0, &[1; 32]));
    let second = g.sign(&commitment(0, &[2; 32]));
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
    let mut s = rules.initial_state();
    assert_eq!(call("initial_state", b""), Some(s.clone()));
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

/// The cross-language vector of the JavaScript SDK (`node/web/sdk/test/channel-vectors.test.js`
/// asserts the same strings): the text of RPS move 0 (paper, salt `[7; 32]`) signed by the fixed
/// Divi testnet key of `runtime/chain/src/signed_message.rs`, and its signature.
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
    let prev = channel::state_hash(&RpsRules.initial_state());
    assert_eq!(
        prev,
        "70946541b8f05c3fd84f12ed1bbcbc38165cad85157d1a0a2d21ffa0b13b9f37"
    );
    let data = commitment(1, &[7; 32]);
    let text = domain.move_message("0000000000000003", 0, &prev, &key.address(), &data);
    assert_eq!(
        text,
        "gamechain channel move v1\n\
         chain: 9b5e3e0a7c1d2f4e6a8b0c1d2e3f405162738495a6b7c8d9e0f1a2b3c4d5e6f7\n\
         module: channel\n\
         game: 0000000000000003\n\
         move: 0\n\
         prev: 70946541b8f05c3fd84f12ed1bbcbc38165cad85157d1a0a2d21ffa0b13b9f37\n\
         mover: y115R6b1mLc8CCZCi7iqZZvQMsjArEYWgC\n\
         data: d3907c0247e7e98b72338a00d87244248df71eb313589da290d45adfba44e6d2"
    );
    assert_eq!(
        sign_message(&key, &text),
        "IOBk2Jhx5BLc2fdHldn1sCJowx1awQ5PfkXjt5398/j1eb9ELEhQCM7L4EopLj+c+jPia4cY2RREu8ZHpkFhVmI="
    );
}

/// A rules module uploaded by someone (here carol) can be upgraded by its owner: a game plays
/// by the code its offer recorded, never by a later one. After an upgrade the game's ops that
/// run the rules are refused, no forfeit can be claimed (the due player could not answer), and
/// `withdraw` ends it as void with both stakes back; an offer made before the upgrade cannot be
/// joined after it (its creator cancels).
#[test]
fn rules_upgraded_mid_game_void_the_game_and_refund_both() {
    let p = players();
    let mut net = new_net(&p);
    let ttt_wasm = gamechain_tests::guest("tictactoe_rules").wasm;
    let rps_wasm = gamechain_tests::guest("rps_rules").wasm;
    net.deploy(&p.carol, "carols_rules", &ttt_wasm);
    let id = open_game(&mut net, &p, "carols_rules");
    let pinned = sha256_hex(&ttt_wasm);
    assert_eq!(net.record(&format!("game/{id}"))["rules_code"], pinned);
    // A second offer, open across the upgrade.
    net.ok(
        &p.alice,
        json!({"kind":"offer","rules":"carols_rules","stake":"7","window":WINDOW}),
    );
    let waiting = format!("{:016x}", count_offers(&net) - 1);
    assert_eq!(
        net.record(&format!("offer/{waiting}"))["rules_code"],
        pinned
    );

    let mut g = ttt(&net, &p, &id);
    g.play(&[0]);
    net.ok(
        &p.alice,
        json!({"kind":"challenge","game":id,"moves":g.moves}),
    );
    let answer = g.play(&[4]);
    // Before the upgrade nothing is void: no withdrawal yet.
    let e = net.refused(&p.bob, json!({"kind":"withdraw","game":id}));
    assert!(e.contains("the game has no result"), "{e}");

    net.deploy(&p.carol, "carols_rules", &rps_wasm);
    let e = net.refused(&p.bob, json!({"kind":"respond","game":id,"moves":[answer]}));
    assert!(
        e.contains("the rules module carols_rules was upgraded since the game opened")
            && e.contains("the game is void, withdraw refunds both stakes"),
        "{e}"
    );
    let e = net.refused(&p.alice, settle(&id, &g.moves));
    assert!(e.contains("was upgraded since the game opened"), "{e}");
    net.idle(WINDOW + 1);
    let e = net.refused(&p.alice, json!({"kind":"claim_forfeit","game":id}));
    assert!(e.contains("was upgraded since the game opened"), "{e}");

    let (a0, b0) = (
        net.balance(&p.alice.address()),
        net.balance(&p.bob.address()),
    );
    let r = net.ok(&p.carol, json!({"kind":"withdraw","game":id}));
    assert!(
        r.events.iter().any(|e| e.kind == "game_void"),
        "{:?}",
        r.events
    );
    assert_eq!(net.balance(&p.alice.address()), a0 + STAKE);
    assert_eq!(net.balance(&p.bob.address()), b0 + STAKE);
    let rec = net.record(&format!("game/{id}"));
    assert_eq!(
        (rec["status"].as_str(), rec["outcome"]["how"].as_str()),
        (Some("settled"), Some("void"))
    );
    let e = net.refused(&p.bob, json!({"kind":"withdraw","game":id}));
    assert!(e.contains("paid out already"), "{e}");

    let e = net.refused(&p.bob, json!({"kind":"join","offer":waiting}));
    assert!(
        e.contains("was upgraded since the offer was made (code ")
            && e.ends_with("): its creator may cancel it"),
        "{e}"
    );
    net.ok(&p.alice, json!({"kind":"cancel","offer":waiting}));
    net.assert_replays();
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}
