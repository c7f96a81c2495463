//! Tic-tac-toe's 11 scenarios (`docs/tictactoe.md`, "Tests"), written once and run against any
//! [`GameModule`]: this crate's `tests/scenarios.rs` runs each natively against
//! [`TicTacToe`](crate::TicTacToe) and on the built `.wasm` (the author kit's
//! `gamechain_runtime::native_and_wasm_tests!`, with the names of
//! [`for_each_scenario!`](crate::for_each_scenario), listed once in `scenarios/list.rs`); other
//! crates take [`SCENARIOS`] (e.g. `gamechain-tests`' instance-reuse test).
//!
//! Each scenario starts from [`setup`] (Alice and Bob hold 1_000 GOLD base units, Carol none,
//! height 10), panics on the first failed assertion and returns the final [`MockCtx`] for further
//! checks. Compiled natively with the `scenarios` feature.

use gamechain_sdk::prelude::*;
use gamechain_sdk::MockCtx;

use crate::{game_key, open_key, player_key, Game, Status, ID, MAX_STAKE, TIMEOUT_BLOCKS};

/// The creator in most scenarios; 1_000 GOLD base units at [`setup`].
pub const ALICE: &str = "alice";
/// The joiner in most scenarios; 1_000 GOLD base units at [`setup`].
pub const BOB: &str = "bob";
/// A third account with no GOLD.
pub const CAROL: &str = "carol";

mod list;
pub use list::{Scenario, SCENARIOS};

// ---------------------------------------------------------------------------------------------
// Helpers (with the module under test passed in).

/// Alice and Bob with 1_000 GOLD base units each, at height 10.
pub fn setup() -> MockCtx {
    let mut ctx = MockCtx::new(ID);
    ctx.set_balance(ALICE, GOLD, 1_000);
    ctx.set_balance(BOB, GOLD, 1_000);
    ctx.height = 10;
    ctx
}

/// Submits `op` signed by `sender`.
pub fn run(
    ctx: &mut MockCtx,
    m: &dyn GameModule,
    sender: &str,
    op: Value,
) -> Result<(), ActionError> {
    ctx.submit(m, sender, op)
}

/// Creates a game and returns its id.
pub fn create_game(ctx: &mut MockCtx, m: &dyn GameModule, sender: &str, op: Value) -> String {
    run(ctx, m, sender, op).expect("create");
    ctx.txid[..16].to_string()
}

/// Alice creates with `stake`, Bob joins.
pub fn started(ctx: &mut MockCtx, m: &dyn GameModule, stake: &str) -> String {
    let id = create_game(ctx, m, ALICE, json!({ "kind": "create", "stake": stake }));
    run(ctx, m, BOB, json!({ "kind": "join", "id": id })).expect("join");
    id
}

/// `sender` marks `cell` of game `id`.
pub fn mv(
    ctx: &mut MockCtx,
    m: &dyn GameModule,
    sender: &str,
    id: &str,
    cell: u64,
) -> Result<(), ActionError> {
    run(
        ctx,
        m,
        sender,
        json!({ "kind": "move", "id": id, "cell": cell }),
    )
}

/// The stored game `id`; panics when it is missing.
pub fn game(ctx: &MockCtx, id: &str) -> Game {
    ctx.get_json::<Game>(&game_key(id))
        .expect("a valid game")
        .expect("the game exists")
}

/// `who`'s GOLD, base units.
pub fn gold(ctx: &MockCtx, who: &str) -> u128 {
    ctx.balance(who, GOLD)
}

/// The GOLD held in escrow by `module:tictactoe`.
pub fn escrow(ctx: &MockCtx) -> u128 {
    ctx.balance(&escrow_account(ID), GOLD)
}

/// Runs `op` expecting an error and returns it.
fn fails(ctx: &mut MockCtx, m: &dyn GameModule, sender: &str, op: Value) -> ActionError {
    let before = ctx.events.len();
    let err = run(ctx, m, sender, op.clone()).expect_err(&format!("{op} by {sender} must fail"));
    assert_eq!(ctx.events.len(), before, "a failed op leaves no events");
    err
}

/// Asserts `err` is `invalid` with exactly `text` as its display.
fn assert_invalid(err: &ActionError, text: &str) {
    assert!(matches!(err, ActionError::Invalid(_)), "{err:?}");
    assert_eq!(err.to_string(), text);
}

/// Asserts `err` is `unauthorized` with exactly `text` as its display.
fn assert_unauthorized(err: &ActionError, text: &str) {
    assert!(matches!(err, ActionError::Unauthorized(_)), "{err:?}");
    assert_eq!(err.to_string(), text);
}

/// A view's answer.
fn view(ctx: &MockCtx, m: &dyn GameModule, query: &[(&str, &str)]) -> Result<Value, ActionError> {
    let query: Query = query
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    ctx.view(m, &query)
}

/// The ids of a list view's `games`, in order.
fn listed(ctx: &MockCtx, m: &dyn GameModule, query: &[(&str, &str)]) -> Vec<String> {
    let answer = view(ctx, m, query).expect("list view");
    answer["games"]
        .as_array()
        .expect("games")
        .iter()
        .map(|g| g["id"].as_str().expect("id").to_string())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The scenarios, in the order of `docs/tictactoe.md`, "Tests".

/// Malformed ops fail as `invalid` with the texts of `docs/tictactoe.md`, and write nothing.
pub fn bad_ops_are_invalid(m: &dyn GameModule) -> MockCtx {
    let mut ctx = setup();
    let state_before = ctx.kv.state.clone();
    let cases = [
        (json!({}), "invalid: missing string field `kind`"),
        (json!("create"), "invalid: missing string field `kind`"),
        (json!({ "kind": 1 }), "invalid: missing string field `kind`"),
        (
            json!({ "kind": "fly" }),
            "invalid: unknown tictactoe op `fly`",
        ),
        (
            json!({ "kind": "create", "stake": 100 }),
            "invalid: missing string field `stake`",
        ),
        (
            json!({ "kind": "create", "stake": "1.5" }),
            "invalid: `stake` must be a decimal string of base units",
        ),
        (
            json!({ "kind": "create", "stake": "-1" }),
            "invalid: `stake` must be a decimal string of base units",
        ),
        (
            json!({ "kind": "create", "stake": "0100" }),
            "invalid: `stake` must be a decimal string of base units",
        ),
        (
            json!({ "kind": "create", "stake": "100001" }),
            "invalid: stake is at most 100000 base units",
        ),
        (
            json!({ "kind": "create", "opponent": 7 }),
            "invalid: missing string field `opponent`",
        ),
        (
            json!({ "kind": "create", "opponent": "" }),
            "invalid: opponent must be another address",
        ),
        (
            json!({ "kind": "create", "opponent": ALICE }),
            "invalid: opponent must be another address",
        ),
        (
            json!({ "kind": "join" }),
            "invalid: missing string field `id`",
        ),
        (
            json!({ "kind": "move", "id": 5, "cell": 0 }),
            "invalid: missing string field `id`",
        ),
        (
            json!({ "kind": "cancel" }),
            "invalid: missing string field `id`",
        ),
        (
            json!({ "kind": "claim_timeout" }),
            "invalid: missing string field `id`",
        ),
    ];
    for (op, text) in cases {
        let err = fails(&mut ctx, m, ALICE, op.clone());
        assert!(matches!(err, ActionError::Invalid(_)), "{op}: {err:?}");
        assert_eq!(err.to_string(), text, "{op}");
    }
    assert_eq!(ctx.kv.state, state_before, "failed ops write nothing");
    assert!(ctx.events.is_empty());

    // An op naming a game that does not exist is `not_found`.
    let err = fails(
        &mut ctx,
        m,
        BOB,
        json!({ "kind": "join", "id": "0000000000000000" }),
    );
    assert!(matches!(err, ActionError::NotFound(_)), "{err:?}");
    assert_eq!(err.to_string(), "not found: game 0000000000000000");

    // The largest stake itself is allowed.
    ctx.set_balance(CAROL, GOLD, MAX_STAKE);
    let id = create_game(
        &mut ctx,
        m,
        CAROL,
        json!({ "kind": "create", "stake": MAX_STAKE.to_string() }),
    );
    assert_eq!(game(&ctx, &id).stake, Amount(MAX_STAKE));
    assert_eq!((gold(&ctx, CAROL), escrow(&ctx)), (0, MAX_STAKE));
    run(&mut ctx, m, CAROL, json!({ "kind": "cancel", "id": id })).unwrap();
    assert_eq!(
        (
            gold(&ctx, ALICE),
            gold(&ctx, BOB),
            gold(&ctx, CAROL),
            escrow(&ctx)
        ),
        (1_000, 1_000, MAX_STAKE, 0)
    );
    ctx
}

/// Only the creator cancels, only while open; the stake comes back and the game leaves `open/`.
pub fn cancel_refunds_and_only_while_open(m: &dyn GameModule) -> MockCtx {
    let mut ctx = setup();
    let id = create_game(
        &mut ctx,
        m,
        ALICE,
        json!({ "kind": "create", "stake": "100" }),
    );
    assert_eq!((gold(&ctx, ALICE), escrow(&ctx)), (900, 100));
    let cancel = json!({ "kind": "cancel", "id": id });

    let err = fails(&mut ctx, m, BOB, cancel.clone());
    assert_unauthorized(&err, "not allowed: only the creator can cancel");
    run(&mut ctx, m, ALICE, cancel.clone()).unwrap();

    let g = game(&ctx, &id);
    assert_eq!(g.status, Status::Cancelled);
    assert_eq!(g.result.as_deref(), Some("cancelled"));
    assert_eq!(g.reason.as_deref(), Some("cancelled"));
    assert_eq!(g.winner, None);
    assert!(ctx.get(&open_key(&id)).is_none());
    assert!(
        ctx.get(&player_key(ALICE, &id)).is_some(),
        "the creator still lists the game"
    );
    assert_eq!((gold(&ctx, ALICE), escrow(&ctx)), (1_000, 0));
    let (kind, finished) = ctx.events.last().unwrap();
    assert_eq!(kind, "tictactoe.finished");
    assert_eq!(
        finished,
        &json!({
            "id": id, "result": "cancelled", "winner": null, "reason": "cancelled", "payout": "100",
        })
    );

    // Not twice, and a cancelled game cannot be joined.
    let err = fails(&mut ctx, m, ALICE, cancel);
    assert_invalid(&err, "invalid: only an open game can be cancelled");
    let err = fails(&mut ctx, m, BOB, json!({ "kind": "join", "id": id }));
    assert_invalid(&err, "invalid: game is not open");

    // Once joined, the game is no longer cancellable, by either side.
    let id = started(&mut ctx, m, "100");
    let cancel = json!({ "kind": "cancel", "id": id });
    let err = fails(&mut ctx, m, ALICE, cancel.clone());
    assert_invalid(&err, "invalid: only an open game can be cancelled");
    let err = fails(&mut ctx, m, BOB, cancel);
    assert_unauthorized(&err, "not allowed: only the creator can cancel");
    assert_eq!(game(&ctx, &id).status, Status::Playing);
    assert_eq!(
        (gold(&ctx, ALICE), gold(&ctx, BOB), escrow(&ctx)),
        (900, 900, 200)
    );

    // A free game cancels without moving GOLD.
    let free = create_game(&mut ctx, m, BOB, json!({ "kind": "create" }));
    run(&mut ctx, m, BOB, json!({ "kind": "cancel", "id": free })).unwrap();
    assert_eq!(ctx.events.last().unwrap().1["payout"], "0");
    assert_eq!((gold(&ctx, BOB), escrow(&ctx)), (900, 200));
    ctx
}

/// A game created for an invited opponent can be joined by that opponent only, and is not
/// listed among the open tables.
pub fn invited_opponent_is_enforced(m: &dyn GameModule) -> MockCtx {
    let mut ctx = setup();
    let id = create_game(
        &mut ctx,
        m,
        ALICE,
        json!({ "kind": "create", "stake": "100", "opponent": BOB }),
    );
    let (_, created) = &ctx.events[0];
    assert_eq!(
        created,
        &json!({ "id": id, "x": ALICE, "stake": "100", "opponent": BOB })
    );
    assert_eq!(game(&ctx, &id).opponent.as_deref(), Some(BOB));
    assert!(ctx.get(&open_key(&id)).is_some());
    assert!(
        listed(&ctx, m, &[("open", "1")]).is_empty(),
        "an invitation is not an open table"
    );

    let join = json!({ "kind": "join", "id": id });
    let err = fails(&mut ctx, m, CAROL, join.clone());
    assert_unauthorized(&err, "not allowed: game is reserved for another player");
    let err = fails(&mut ctx, m, ALICE, join.clone());
    assert_invalid(&err, "invalid: cannot join your own game");
    assert_eq!(game(&ctx, &id).status, Status::Open);

    run(&mut ctx, m, BOB, join.clone()).unwrap();
    let g = game(&ctx, &id);
    assert_eq!((g.status, g.o.as_deref()), (Status::Playing, Some(BOB)));
    assert_eq!(ctx.events.last().unwrap().1, json!({ "id": id, "o": BOB }));
    assert_eq!(
        (gold(&ctx, ALICE), gold(&ctx, BOB), escrow(&ctx)),
        (900, 900, 200)
    );

    let err = fails(&mut ctx, m, CAROL, join);
    assert_invalid(&err, "invalid: game is not open");

    // Finish it (Bob resigns by timeout) so the escrow empties.
    mv(&mut ctx, m, ALICE, &id, 4).unwrap();
    ctx.height += TIMEOUT_BLOCKS;
    run(
        &mut ctx,
        m,
        ALICE,
        json!({ "kind": "claim_timeout", "id": id }),
    )
    .unwrap();
    assert_eq!(
        (gold(&ctx, ALICE), gold(&ctx, BOB), escrow(&ctx)),
        (1_100, 900, 0)
    );
    ctx
}

/// A game without a stake (or with `"0"`) moves no GOLD on create, join or payout, and players
/// without GOLD can play it.
pub fn free_game_moves_no_gold(m: &dyn GameModule) -> MockCtx {
    let mut ctx = setup();
    let id = create_game(&mut ctx, m, ALICE, json!({ "kind": "create" }));
    let g = game(&ctx, &id);
    assert_eq!(g.stake, Amount(0));
    assert_eq!(ctx.events[0].1["stake"], "0");
    run(&mut ctx, m, CAROL, json!({ "kind": "join", "id": id })).unwrap();

    // o wins with the middle row.
    for (sender, cell) in [
        (ALICE, 0),
        (CAROL, 3),
        (ALICE, 1),
        (CAROL, 4),
        (ALICE, 8),
        (CAROL, 5),
    ] {
        mv(&mut ctx, m, sender, &id, cell).unwrap();
    }
    let g = game(&ctx, &id);
    assert_eq!(g.status, Status::Finished);
    assert_eq!(g.board, "xx.ooo..x");
    assert_eq!(g.winner.as_deref(), Some(CAROL));
    assert_eq!(g.result.as_deref(), Some("o_won"));
    assert_eq!(g.reason.as_deref(), Some("line"));
    let (_, finished) = ctx.events.last().unwrap();
    assert_eq!(finished["payout"], "0");
    assert_eq!(
        (
            gold(&ctx, ALICE),
            gold(&ctx, BOB),
            gold(&ctx, CAROL),
            escrow(&ctx)
        ),
        (1_000, 1_000, 0, 0)
    );

    // An explicit "0" is free too.
    let id = create_game(&mut ctx, m, BOB, json!({ "kind": "create", "stake": "0" }));
    assert_eq!(game(&ctx, &id).stake, Amount(0));
    run(&mut ctx, m, CAROL, json!({ "kind": "join", "id": id })).unwrap();
    assert_eq!(
        (gold(&ctx, BOB), gold(&ctx, CAROL), escrow(&ctx)),
        (1_000, 0, 0)
    );
    ctx
}

/// A cell that is taken, out of range or not a JSON number is `invalid`, and changes nothing.
pub fn occupied_or_bad_cell_is_invalid(m: &dyn GameModule) -> MockCtx {
    let mut ctx = setup();
    let id = started(&mut ctx, m, "100");
    mv(&mut ctx, m, ALICE, &id, 0).unwrap();
    let before = game(&ctx, &id);

    let err = mv(&mut ctx, m, BOB, &id, 0).unwrap_err();
    assert_invalid(&err, "invalid: cell is taken");
    for cell in [
        json!(9),
        json!(100),
        json!(-1),
        json!(1.5),
        json!("1"),
        json!(null),
    ] {
        let err = fails(
            &mut ctx,
            m,
            BOB,
            json!({ "kind": "move", "id": id, "cell": cell }),
        );
        assert_invalid(&err, "invalid: `cell` must be a number from 0 to 8");
    }
    let err = fails(&mut ctx, m, BOB, json!({ "kind": "move", "id": id }));
    assert_invalid(&err, "invalid: `cell` must be a number from 0 to 8");
    assert_eq!(game(&ctx, &id), before, "failed moves change nothing");
    assert_eq!(before.board, "x........");

    mv(&mut ctx, m, BOB, &id, 8).unwrap();
    let g = game(&ctx, &id);
    assert_eq!(
        (g.board.as_str(), g.moves, g.turn),
        ("x.......o", 2, crate::Mark::X)
    );
    ctx
}

/// A full board without a line is a draw: each player gets the stake back.
pub fn draw_refunds_both_players(m: &dyn GameModule) -> MockCtx {
    let mut ctx = setup();
    let id = started(&mut ctx, m, "100");
    assert_eq!(
        (gold(&ctx, ALICE), gold(&ctx, BOB), escrow(&ctx)),
        (900, 900, 200)
    );
    let moves = [
        (ALICE, 0),
        (BOB, 1),
        (ALICE, 2),
        (BOB, 4),
        (ALICE, 3),
        (BOB, 5),
        (ALICE, 7),
        (BOB, 6),
        (ALICE, 8),
    ];
    for (sender, cell) in moves {
        mv(&mut ctx, m, sender, &id, cell).unwrap();
    }

    let g = game(&ctx, &id);
    assert_eq!(g.status, Status::Finished);
    assert_eq!(g.board, "xoxxoooxx");
    assert_eq!(g.moves, 9);
    assert_eq!(g.winner, None);
    assert_eq!(g.result.as_deref(), Some("draw"));
    assert_eq!(g.reason.as_deref(), Some("draw"));
    assert_eq!(
        (gold(&ctx, ALICE), gold(&ctx, BOB), escrow(&ctx)),
        (1_000, 1_000, 0)
    );
    let (kind, finished) = ctx.events.last().unwrap();
    assert_eq!(kind, "tictactoe.finished");
    assert_eq!(
        finished,
        &json!({ "id": id, "result": "draw", "winner": null, "reason": "draw", "payout": "100" })
    );

    let err = mv(&mut ctx, m, BOB, &id, 0).unwrap_err();
    assert_invalid(&err, "invalid: game is not in play");
    ctx
}

/// Creating or joining with a stake the player cannot pay fails as `insufficient` and stores
/// nothing; once the player has the GOLD, the join succeeds.
pub fn join_without_enough_gold_fails(m: &dyn GameModule) -> MockCtx {
    let mut ctx = setup();
    let id = create_game(
        &mut ctx,
        m,
        ALICE,
        json!({ "kind": "create", "stake": "100" }),
    );

    let err = fails(&mut ctx, m, CAROL, json!({ "kind": "join", "id": id }));
    assert_eq!(
        err,
        ActionError::Insufficient {
            token: GOLD.to_string(),
            need: 100,
            have: 0
        }
    );
    assert_eq!(err.to_string(), "insufficient GOLD: need 100, have 0");
    let g = game(&ctx, &id);
    assert_eq!((g.status, g.o.as_deref()), (Status::Open, None));
    assert!(ctx.get(&open_key(&id)).is_some());
    assert!(ctx.get(&player_key(CAROL, &id)).is_none());
    assert_eq!(escrow(&ctx), 100);

    // Alice has 900 left: a 1000 stake is refused and leaves no game behind.
    let err = fails(
        &mut ctx,
        m,
        ALICE,
        json!({ "kind": "create", "stake": "1000" }),
    );
    assert_eq!(err.to_string(), "insufficient GOLD: need 1000, have 900");
    assert!(ctx.get(&game_key(&ctx.txid[..16])).is_none());
    assert_eq!((gold(&ctx, ALICE), escrow(&ctx)), (900, 100));

    ctx.set_balance(CAROL, GOLD, 150);
    run(&mut ctx, m, CAROL, json!({ "kind": "join", "id": id })).unwrap();
    assert_eq!(game(&ctx, &id).o.as_deref(), Some(CAROL));
    assert_eq!((gold(&ctx, CAROL), escrow(&ctx)), (50, 200));
    ctx
}

/// The reference timeout test: one block too early is invalid; the player whose turn it
/// is cannot claim; a stranger is unauthorized; then the claim pays the pot.
pub fn timeout_after_150_blocks(m: &dyn GameModule) -> MockCtx {
    let mut ctx = setup();
    let id = started(&mut ctx, m, "100");
    mv(&mut ctx, m, ALICE, &id, 0).unwrap();
    let claim = json!({ "kind": "claim_timeout", "id": id });

    ctx.height = 10 + TIMEOUT_BLOCKS - 1;
    assert!(matches!(
        run(&mut ctx, m, ALICE, claim.clone()),
        Err(ActionError::Invalid(_))
    ));
    ctx.height = 10 + TIMEOUT_BLOCKS;
    assert!(matches!(
        run(&mut ctx, m, BOB, claim.clone()),
        Err(ActionError::Invalid(_))
    ));
    assert!(matches!(
        run(&mut ctx, m, CAROL, claim.clone()),
        Err(ActionError::Unauthorized(_))
    ));
    run(&mut ctx, m, ALICE, claim).unwrap();

    let g = game(&ctx, &id);
    assert_eq!(g.status, Status::Finished);
    assert_eq!(g.winner.as_deref(), Some(ALICE));
    assert_eq!(g.result.as_deref(), Some("x_won"));
    assert_eq!(g.reason.as_deref(), Some("timeout"));
    assert_eq!(
        (gold(&ctx, ALICE), gold(&ctx, BOB), escrow(&ctx)),
        (1_100, 900, 0)
    );

    // The texts behind the matches above, replayed on a fresh game.
    let id = started(&mut ctx, m, "0");
    mv(&mut ctx, m, ALICE, &id, 0).unwrap();
    let claim = json!({ "kind": "claim_timeout", "id": id });
    let err = fails(&mut ctx, m, ALICE, claim.clone());
    assert_invalid(
        &err,
        &format!(
            "invalid: timeout can be claimed from height {}",
            ctx.height + TIMEOUT_BLOCKS
        ),
    );
    let err = fails(&mut ctx, m, BOB, claim.clone());
    assert_invalid(&err, "invalid: it is your turn");
    let err = fails(&mut ctx, m, CAROL, claim);
    assert_unauthorized(&err, "not allowed: not a player in this game");
    let open = create_game(&mut ctx, m, ALICE, json!({ "kind": "create" }));
    let err = fails(
        &mut ctx,
        m,
        ALICE,
        json!({ "kind": "claim_timeout", "id": open }),
    );
    assert_invalid(&err, "invalid: game is not in play");
    ctx
}

/// Moves alternate, x first; only the two players move, and only on their turn.
pub fn only_the_player_to_move_may_move(m: &dyn GameModule) -> MockCtx {
    let mut ctx = setup();
    let id = create_game(
        &mut ctx,
        m,
        ALICE,
        json!({ "kind": "create", "stake": "100" }),
    );
    let err = mv(&mut ctx, m, ALICE, &id, 0).unwrap_err();
    assert_invalid(&err, "invalid: game is not in play");
    run(&mut ctx, m, BOB, json!({ "kind": "join", "id": id })).unwrap();

    let err = mv(&mut ctx, m, BOB, &id, 0).unwrap_err();
    assert_unauthorized(&err, "not allowed: not your turn");
    let err = mv(&mut ctx, m, CAROL, &id, 0).unwrap_err();
    assert_unauthorized(&err, "not allowed: not a player in this game");
    assert_eq!(game(&ctx, &id).moves, 0);

    ctx.height = 12;
    mv(&mut ctx, m, ALICE, &id, 4).unwrap();
    let g = game(&ctx, &id);
    assert_eq!(
        (g.turn, g.moves, g.last_move_height),
        (crate::Mark::O, 1, 12)
    );
    let (kind, moved) = ctx.events.last().unwrap();
    assert_eq!(kind, "tictactoe.moved");
    assert_eq!(
        moved,
        &json!({ "id": id, "by": ALICE, "cell": 4, "board": "....x....", "turn": "o" })
    );

    let err = mv(&mut ctx, m, ALICE, &id, 0).unwrap_err();
    assert_unauthorized(&err, "not allowed: not your turn");
    mv(&mut ctx, m, BOB, &id, 0).unwrap();
    assert_eq!(game(&ctx, &id).board, "o...x....");
    assert_eq!(game(&ctx, &id).turn, crate::Mark::X);
    ctx
}

/// `?id=` returns one game with every field (`not_found` for an unknown id); `?open=` lists the
/// tables waiting for anyone and drops joined ones; `?player=` lists an address's games; both
/// sorted by `created_height`; no query returns the limits.
pub fn view_by_id_open_and_player(m: &dyn GameModule) -> MockCtx {
    let mut ctx = setup();
    assert_eq!(
        view(&ctx, m, &[]).unwrap(),
        json!({ "game": "tictactoe", "timeout_blocks": 150, "max_stake": "100000" })
    );
    assert_eq!(listed(&ctx, m, &[("open", "1")]), Vec::<String>::new());

    // Four open tables at heights 10..=13, one invitation at 14. Ids come from txids, so key
    // order is unrelated to creation order: the views must sort.
    let mut open = Vec::new();
    for (height, creator) in [(10, ALICE), (11, BOB), (12, ALICE), (13, BOB)] {
        ctx.height = height;
        open.push(create_game(
            &mut ctx,
            m,
            creator,
            json!({ "kind": "create", "stake": "10" }),
        ));
    }
    ctx.height = 14;
    let invite = create_game(
        &mut ctx,
        m,
        ALICE,
        json!({ "kind": "create", "opponent": CAROL }),
    );
    assert_eq!(listed(&ctx, m, &[("open", "1")]), open);

    // A join drops the table from ?open=; the joiner lists it.
    ctx.height = 15;
    run(&mut ctx, m, BOB, json!({ "kind": "join", "id": open[0] })).unwrap();
    assert_eq!(listed(&ctx, m, &[("open", "1")]), open[1..].to_vec());
    assert_eq!(
        listed(&ctx, m, &[("player", ALICE)]),
        [&open[0], &open[2], &invite].map(String::clone)
    );
    assert_eq!(
        listed(&ctx, m, &[("player", BOB)]),
        [&open[0], &open[1], &open[3]].map(String::clone)
    );
    assert_eq!(listed(&ctx, m, &[("player", CAROL)]), Vec::<String>::new());

    // ?id= is the stored game with all its fields.
    let one = view(&ctx, m, &[("id", &open[0])]).unwrap();
    assert_eq!(one, serde_json::to_value(game(&ctx, &open[0])).unwrap());
    assert_eq!(
        one,
        json!({
            "id": open[0], "x": ALICE, "o": BOB, "opponent": null, "stake": "10",
            "board": ".........", "turn": "x", "status": "playing", "winner": null, "result": null,
            "reason": null,
            "created_height": 10, "last_move_height": 15, "moves": 0,
        })
    );
    let listed_game = &view(&ctx, m, &[("player", BOB)]).unwrap()["games"][0];
    assert_eq!(listed_game, &one, "lists carry whole games");

    let err = view(&ctx, m, &[("id", "0000000000000000")]).unwrap_err();
    assert!(matches!(err, ActionError::NotFound(_)), "{err:?}");
    assert_eq!(err.code(), "not_found");
    assert_eq!(err.to_string(), "not found: game 0000000000000000");
    ctx
}

/// The reference winning game (`docs/tictactoe.md`, "Tests"), the game of the live transcript, checking balances, board,
/// events and payout along the way.
pub fn x_wins_a_row_and_takes_the_pot(m: &dyn GameModule) -> MockCtx {
    let mut ctx = setup();
    let id = create_game(
        &mut ctx,
        m,
        ALICE,
        json!({ "kind": "create", "stake": "100" }),
    );
    assert_eq!((gold(&ctx, ALICE), escrow(&ctx)), (900, 100));
    assert!(ctx.get(&open_key(&id)).is_some());

    run(&mut ctx, m, BOB, json!({ "kind": "join", "id": id })).unwrap();
    assert_eq!((gold(&ctx, BOB), escrow(&ctx)), (900, 200));
    assert!(ctx.get(&open_key(&id)).is_none());

    for (sender, cell) in [(ALICE, 0), (BOB, 3), (ALICE, 1), (BOB, 4), (ALICE, 2)] {
        mv(&mut ctx, m, sender, &id, cell).unwrap();
    }

    let g = game(&ctx, &id);
    assert_eq!(g.status, Status::Finished);
    assert_eq!(g.board, "xxxoo....");
    assert_eq!(g.winner.as_deref(), Some(ALICE));
    assert_eq!(g.result.as_deref(), Some("x_won"));
    assert_eq!(g.reason.as_deref(), Some("line"));
    assert_eq!(g.moves, 5);
    assert_eq!(
        (gold(&ctx, ALICE), gold(&ctx, BOB), escrow(&ctx)),
        (1_100, 900, 0)
    );

    let kinds: Vec<&str> = ctx.events.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        kinds,
        ["tictactoe.created", "tictactoe.joined"]
            .into_iter()
            .chain(["tictactoe.moved"; 5])
            .chain(["tictactoe.finished"])
            .collect::<Vec<_>>()
    );
    let (_, created) = &ctx.events[0];
    assert_eq!(created["stake"], "100");
    assert_eq!(created["opponent"], Value::Null);
    let (_, finished) = ctx.events.last().unwrap();
    assert_eq!(finished["result"], "x_won");
    assert_eq!(finished["winner"], ALICE);
    assert_eq!(finished["payout"], "200");

    assert!(mv(&mut ctx, m, BOB, &id, 8).is_err());
    ctx
}
