//! The m,n,k game's scenarios, each written once and run twice by the author kit's harness
//! (`gamechain_runtime::native_and_wasm_tests!`): `native::<name>` against [`Mnk`] and
//! [`MockCtx`], `wasm::<name>` against the crate's built `mnk.wasm` in the runtime, with a check
//! that both runs leave identical state, balances and events.
//!
//! Each scenario starts from [`setup`] (Alice and Bob hold 1_000 GOLD base units, Carol none,
//! height 10), panics on the first failed assertion and returns the final context.

use gamechain_sdk::prelude::*;
use gamechain_sdk::MockCtx;
use mnk::{
    game_key, log_key, open_key, player_key, record_hash, Cell, Game, Mark, Mnk, Status, ID,
    LOG_PAGE, MAX_STAKE, TIMEOUT_BLOCKS,
};

gamechain_runtime::native_and_wasm_tests!(Mnk;
    bad_ops_are_invalid,
    x_wins_a_row_and_takes_the_pot,
    lines_in_every_direction,
    draw_refunds_both_players,
    resign_pays_the_opponent,
    timeout_after_150_blocks,
    cancel_refunds_and_only_while_open,
    invited_opponent_is_enforced,
    bad_or_taken_cells_and_turns,
    join_without_enough_gold_fails,
    game_log_chains_hashes,
    views_by_id_log_open_and_player,
);

const ALICE: &str = "alice";
const BOB: &str = "bob";
const CAROL: &str = "carol";

// ---------------------------------------------------------------------------------------------
// Helpers.

/// Alice and Bob with 1_000 GOLD base units each, at height 10.
fn setup() -> MockCtx {
    let mut ctx = MockCtx::new(ID);
    ctx.set_balance(ALICE, GOLD, 1_000);
    ctx.set_balance(BOB, GOLD, 1_000);
    ctx.height = 10;
    ctx
}

fn run(ctx: &mut MockCtx, m: &dyn GameModule, sender: &str, op: Value) -> Result<(), ActionError> {
    ctx.submit(m, sender, op)
}

/// Creates a game and returns its id (the first 16 hex of the create's txid).
fn create_game(ctx: &mut MockCtx, m: &dyn GameModule, sender: &str, op: Value) -> String {
    run(ctx, m, sender, op).expect("create");
    ctx.txid[..16].to_string()
}

/// Alice creates a `rows`×`cols`, `k` game with `stake`; Bob joins.
fn started(ctx: &mut MockCtx, m: &dyn GameModule, board: (u32, u32, u32), stake: &str) -> String {
    let (rows, cols, k) = board;
    let op = json!({ "kind": "create", "rows": rows, "cols": cols, "k": k, "stake": stake });
    let id = create_game(ctx, m, ALICE, op);
    run(ctx, m, BOB, json!({ "kind": "join", "id": id })).expect("join");
    id
}

/// `sender` marks (`row`, `col`) of game `id`.
fn mv(
    ctx: &mut MockCtx,
    m: &dyn GameModule,
    sender: &str,
    id: &str,
    (row, col): (u32, u32),
) -> Result<(), ActionError> {
    let op = json!({ "kind": "move", "id": id, "row": row, "col": col });
    run(ctx, m, sender, op)
}

/// Plays `moves` alternately, Alice first, each one required to succeed.
fn play(ctx: &mut MockCtx, m: &dyn GameModule, id: &str, moves: &[(u32, u32)]) {
    for (n, &cell) in moves.iter().enumerate() {
        let sender = if n % 2 == 0 { ALICE } else { BOB };
        mv(ctx, m, sender, id, cell).unwrap_or_else(|e| panic!("move {n} {cell:?}: {e}"));
    }
}

fn game(ctx: &MockCtx, id: &str) -> Game {
    ctx.get_json::<Game>(&game_key(id))
        .expect("a valid game")
        .expect("the game exists")
}

fn gold(ctx: &MockCtx, who: &str) -> u128 {
    ctx.balance(who, GOLD)
}

fn escrow(ctx: &MockCtx) -> u128 {
    ctx.balance(&escrow_account(ID), GOLD)
}

/// Runs `op` expecting an error and returns it; a failed op leaves no events.
fn fails(ctx: &mut MockCtx, m: &dyn GameModule, sender: &str, op: Value) -> ActionError {
    let before = ctx.events.len();
    let err = run(ctx, m, sender, op.clone()).expect_err(&format!("{op} by {sender} must fail"));
    assert_eq!(ctx.events.len(), before, "a failed op leaves no events");
    err
}

fn assert_invalid(err: &ActionError, text: &str) {
    assert!(matches!(err, ActionError::Invalid(_)), "{err:?}");
    assert_eq!(err.to_string(), text);
}

fn assert_unauthorized(err: &ActionError, text: &str) {
    assert!(matches!(err, ActionError::Unauthorized(_)), "{err:?}");
    assert_eq!(err.to_string(), text);
}

fn view(ctx: &MockCtx, m: &dyn GameModule, query: &[(&str, &str)]) -> Result<Value, ActionError> {
    let query: Query = query
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    ctx.view(m, &query)
}

fn listed(ctx: &MockCtx, m: &dyn GameModule, query: &[(&str, &str)]) -> Vec<String> {
    view(ctx, m, query).expect("list view")["games"]
        .as_array()
        .expect("games")
        .iter()
        .map(|g| g["id"].as_str().expect("id").to_string())
        .collect()
}

fn last_event(ctx: &MockCtx) -> (&str, &Value) {
    let (kind, data) = ctx.events.last().expect("an event");
    (kind.as_str(), data)
}

// ---------------------------------------------------------------------------------------------
// The scenarios.

/// Malformed ops fail as `invalid` with the documented texts and write nothing.
fn bad_ops_are_invalid(m: &dyn GameModule) -> MockCtx {
    let mut ctx = setup();
    let state_before = ctx.kv.state.clone();
    let board = |extra: Value| {
        let mut op = json!({ "kind": "create", "rows": 3, "cols": 4, "k": 3 });
        op.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        op
    };
    let cases = [
        (json!({}), "invalid: missing string field `kind`"),
        (json!({ "kind": 1 }), "invalid: missing string field `kind`"),
        (json!({ "kind": "fly" }), "invalid: unknown mnk op `fly`"),
        (
            json!({ "kind": "create" }),
            "invalid: `rows` must be a number from 1 to 19",
        ),
        (
            board(json!({ "rows": 0 })),
            "invalid: `rows` must be a number from 1 to 19",
        ),
        (
            board(json!({ "rows": 20 })),
            "invalid: `rows` must be a number from 1 to 19",
        ),
        (
            board(json!({ "rows": "3" })),
            "invalid: `rows` must be a number from 1 to 19",
        ),
        (
            board(json!({ "cols": 3.5 })),
            "invalid: `cols` must be a number from 1 to 19",
        ),
        (
            board(json!({ "cols": -1 })),
            "invalid: `cols` must be a number from 1 to 19",
        ),
        (
            board(json!({ "k": 5 })),
            "invalid: `k` must be a number from 1 to 4",
        ),
        (
            board(json!({ "k": 0 })),
            "invalid: `k` must be a number from 1 to 4",
        ),
        (
            board(json!({ "stake": 100 })),
            "invalid: missing string field `stake`",
        ),
        (
            board(json!({ "stake": "0100" })),
            "invalid: `stake` must be a decimal string of base units",
        ),
        (
            board(json!({ "stake": "100001" })),
            "invalid: stake is at most 100000 base units",
        ),
        (
            board(json!({ "opponent": 7 })),
            "invalid: missing string field `opponent`",
        ),
        (
            board(json!({ "opponent": ALICE })),
            "invalid: opponent must be another address",
        ),
        (
            json!({ "kind": "join" }),
            "invalid: missing string field `id`",
        ),
        (
            json!({ "kind": "move", "id": 5, "row": 0, "col": 0 }),
            "invalid: missing string field `id`",
        ),
        (
            json!({ "kind": "resign" }),
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

    let err = fails(
        &mut ctx,
        m,
        BOB,
        json!({ "kind": "resign", "id": "0000000000000000" }),
    );
    assert!(matches!(err, ActionError::NotFound(_)), "{err:?}");
    assert_eq!(err.to_string(), "not found: game 0000000000000000");

    // The bounds themselves are allowed: 19×19 with k 19, 1×1 with k 1, the largest stake.
    ctx.set_balance(CAROL, GOLD, MAX_STAKE);
    let op = json!({ "kind": "create", "rows": 19, "cols": 19, "k": 19, "stake": "100000" });
    let big = create_game(&mut ctx, m, CAROL, op);
    let g = game(&ctx, &big);
    assert_eq!((g.rows, g.cols, g.k, g.board.len()), (19, 19, 19, 361));
    assert_eq!((gold(&ctx, CAROL), escrow(&ctx)), (0, MAX_STAKE));
    run(&mut ctx, m, CAROL, json!({ "kind": "cancel", "id": big })).unwrap();
    assert_eq!((gold(&ctx, CAROL), escrow(&ctx)), (MAX_STAKE, 0));
    let tiny = create_game(
        &mut ctx,
        m,
        ALICE,
        json!({ "kind": "create", "rows": 1, "cols": 1, "k": 1 }),
    );
    assert_eq!(game(&ctx, &tiny).board, ".");
    ctx
}

/// Tic-tac-toe's winning game (`docs/tictactoe.md`, "Tests") on a 3×3, k 3 board: x takes the top row and the whole pot.
fn x_wins_a_row_and_takes_the_pot(m: &dyn GameModule) -> MockCtx {
    let mut ctx = setup();
    let id = started(&mut ctx, m, (3, 3, 3), "100");
    assert_eq!(
        (gold(&ctx, ALICE), gold(&ctx, BOB), escrow(&ctx)),
        (900, 900, 200)
    );
    play(&mut ctx, m, &id, &[(0, 0), (1, 0), (0, 1), (1, 1), (0, 2)]);

    let g = game(&ctx, &id);
    assert_eq!(g.status, Status::Finished);
    assert_eq!(g.board, "xxxoo....");
    assert_eq!(g.winner.as_deref(), Some(ALICE));
    assert_eq!(g.result.as_deref(), Some("x_won"));
    assert_eq!(g.reason.as_deref(), Some("line"));
    assert_eq!((g.moves, g.log_len), (5, 6));
    assert_eq!(g.last_move, Some(Cell { row: 0, col: 2 }));
    assert_eq!(
        (gold(&ctx, ALICE), gold(&ctx, BOB), escrow(&ctx)),
        (1_100, 900, 0)
    );
    let kinds: Vec<&str> = ctx.events.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        kinds,
        ["mnk.created", "mnk.joined"]
            .into_iter()
            .chain(["mnk.moved"; 5])
            .chain(["mnk.finished"])
            .collect::<Vec<_>>()
    );
    assert_eq!(
        ctx.events[0].1,
        json!({
            "id": id, "x": ALICE, "stake": "100", "opponent": null, "rows": 3, "cols": 3, "k": 3,
        })
    );
    let moved = &ctx.events[6].1;
    assert_eq!(
        (&moved["by"], &moved["row"], &moved["col"], &moved["board"]),
        (&json!(ALICE), &json!(0), &json!(2), &json!("xxxoo...."))
    );
    assert_eq!((&moved["turn"], &moved["seq"]), (&json!("o"), &json!(5)));
    assert_eq!(moved["hash"], json!(g.log_head));
    assert_eq!(
        last_event(&ctx).1,
        &json!({ "id": id, "result": "x_won", "winner": ALICE, "reason": "line", "payout": "200" })
    );
    let err = fails(
        &mut ctx,
        m,
        BOB,
        json!({ "kind": "move", "id": id, "row": 2, "col": 2 }),
    );
    assert_invalid(&err, "invalid: game is not in play");
    ctx
}

/// On a 5×6 board with k 4, four in a row wins across, down and along both diagonals; three
/// does not. k 1 wins on the first mark. Free games move no GOLD.
fn lines_in_every_direction(m: &dyn GameModule) -> MockCtx {
    let mut ctx = setup();
    // Each case: Alice's cells (the last completes her line) and Bob's replies, never a line.
    /// (name, x's four cells, o's three replies).
    type Case = (&'static str, [(u32, u32); 4], [(u32, u32); 3]);
    let cases: [Case; 4] = [
        (
            "across",
            [(2, 1), (2, 2), (2, 3), (2, 4)],
            [(0, 0), (0, 1), (0, 2)],
        ),
        (
            "down",
            [(1, 5), (2, 5), (3, 5), (4, 5)],
            [(0, 0), (1, 0), (2, 0)],
        ),
        (
            "diagonal",
            [(1, 1), (2, 2), (3, 3), (4, 4)],
            [(0, 4), (0, 5), (4, 0)],
        ),
        (
            "anti-diagonal",
            [(0, 5), (1, 4), (2, 3), (3, 2)],
            [(0, 0), (1, 0), (2, 0)],
        ),
    ];
    for (name, x, o) in cases {
        let id = started(&mut ctx, m, (5, 6, 4), "0");
        // Played out of order, so the winning mark lands in the middle of the line for two
        // cases: the line is counted through the new mark in both directions.
        let order: [usize; 4] = if name == "across" || name == "diagonal" {
            [0, 1, 3, 2]
        } else {
            [0, 1, 2, 3]
        };
        let mut moves = Vec::new();
        for n in 0..3 {
            moves.push(x[order[n]]);
            moves.push(o[n]);
        }
        play(&mut ctx, m, &id, &moves);
        assert_eq!(
            game(&ctx, &id).status,
            Status::Playing,
            "{name}: three is no line"
        );
        mv(&mut ctx, m, ALICE, &id, x[order[3]]).unwrap();
        let g = game(&ctx, &id);
        assert_eq!(
            (g.status, g.reason.as_deref(), g.winner.as_deref()),
            (Status::Finished, Some("line"), Some(ALICE)),
            "{name}: {}",
            g.board
        );
    }

    // o wins too: Bob's anti-diagonal of three on a 3×3 board.
    let id = started(&mut ctx, m, (3, 3, 3), "0");
    play(
        &mut ctx,
        m,
        &id,
        &[(0, 0), (0, 2), (0, 1), (1, 1), (2, 2), (2, 0)],
    );
    let g = game(&ctx, &id);
    assert_eq!(g.board, "xxo.o.o.x");
    assert_eq!(
        (g.result.as_deref(), g.winner.as_deref()),
        (Some("o_won"), Some(BOB))
    );

    // k 1: the first mark is a line.
    let id = started(&mut ctx, m, (2, 2, 1), "0");
    mv(&mut ctx, m, ALICE, &id, (1, 1)).unwrap();
    let g = game(&ctx, &id);
    assert_eq!(
        (g.board.as_str(), g.result.as_deref()),
        ("...x", Some("x_won"))
    );
    assert_eq!(
        (gold(&ctx, ALICE), gold(&ctx, BOB), escrow(&ctx)),
        (1_000, 1_000, 0)
    );
    ctx
}

/// A full board with no line is a draw: each player gets the stake back.
fn draw_refunds_both_players(m: &dyn GameModule) -> MockCtx {
    let mut ctx = setup();
    // 2×3, k 3: x o x / o x o has no three in a row.
    let id = started(&mut ctx, m, (2, 3, 3), "250");
    assert_eq!(escrow(&ctx), 500);
    play(
        &mut ctx,
        m,
        &id,
        &[(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)],
    );
    let g = game(&ctx, &id);
    assert_eq!(g.board, "xoxoxo");
    assert_eq!(g.status, Status::Finished);
    assert_eq!(
        (
            g.result.as_deref(),
            g.reason.as_deref(),
            g.winner.as_deref()
        ),
        (Some("draw"), Some("draw"), None)
    );
    assert_eq!(
        last_event(&ctx).1,
        &json!({ "id": id, "result": "draw", "winner": null, "reason": "draw", "payout": "250" })
    );
    assert_eq!(
        (gold(&ctx, ALICE), gold(&ctx, BOB), escrow(&ctx)),
        (1_000, 1_000, 0)
    );
    // The last move's log record says `draw`.
    let entry: Value = ctx.get_json(&log_key(&id, 6)).unwrap().unwrap();
    assert_eq!(entry["event"]["status"], "draw");
    ctx
}

/// Either player may resign on either turn; the other wins the pot. Strangers may not, and
/// only a game in play can be resigned.
fn resign_pays_the_opponent(m: &dyn GameModule) -> MockCtx {
    let mut ctx = setup();
    let open = create_game(
        &mut ctx,
        m,
        ALICE,
        json!({ "kind": "create", "rows": 6, "cols": 7, "k": 4, "stake": "100" }),
    );
    let err = fails(&mut ctx, m, ALICE, json!({ "kind": "resign", "id": open }));
    assert_invalid(&err, "invalid: game is not in play");
    run(&mut ctx, m, ALICE, json!({ "kind": "cancel", "id": open })).unwrap();

    let id = started(&mut ctx, m, (6, 7, 4), "100");
    play(&mut ctx, m, &id, &[(5, 3), (5, 2), (4, 3)]);
    let resign = json!({ "kind": "resign", "id": id });
    let err = fails(&mut ctx, m, CAROL, resign.clone());
    assert_unauthorized(&err, "not allowed: not a player in this game");

    // It is Bob's turn; Alice (x) resigns anyway.
    ctx.height = 20;
    run(&mut ctx, m, ALICE, resign.clone()).unwrap();
    let g = game(&ctx, &id);
    assert_eq!(g.status, Status::Finished);
    assert_eq!(
        (
            g.result.as_deref(),
            g.reason.as_deref(),
            g.winner.as_deref()
        ),
        (Some("o_won"), Some("resign"), Some(BOB))
    );
    assert_eq!(g.log_len, 5, "start, three moves, resign");
    let n = ctx.events.len();
    assert_eq!(ctx.events[n - 2].0, "mnk.resigned");
    assert_eq!(
        ctx.events[n - 2].1,
        json!({ "id": id, "by": ALICE, "seq": 4, "hash": g.log_head })
    );
    assert_eq!(
        last_event(&ctx).1,
        &json!({ "id": id, "result": "o_won", "winner": BOB, "reason": "resign", "payout": "200" })
    );
    assert_eq!(
        (gold(&ctx, ALICE), gold(&ctx, BOB), escrow(&ctx)),
        (900, 1_100, 0)
    );
    let entry: Value = ctx.get_json(&log_key(&id, 4)).unwrap().unwrap();
    assert_eq!(
        (
            &entry["event"]["action"],
            &entry["event"]["player"],
            &entry["event"]["status"]
        ),
        (&json!("resign"), &json!("X"), &json!("win"))
    );
    let err = fails(&mut ctx, m, BOB, resign);
    assert_invalid(&err, "invalid: game is not in play");

    // o resigns on its own turn.
    let id = started(&mut ctx, m, (3, 3, 3), "50");
    mv(&mut ctx, m, ALICE, &id, (1, 1)).unwrap();
    run(&mut ctx, m, BOB, json!({ "kind": "resign", "id": id })).unwrap();
    assert_eq!(game(&ctx, &id).winner.as_deref(), Some(ALICE));
    assert_eq!(
        (gold(&ctx, ALICE), gold(&ctx, BOB), escrow(&ctx)),
        (950, 1_050, 0)
    );
    ctx
}

/// The waiting player may claim the game 150 blocks after the last move, not before; the
/// player to move and strangers may not.
fn timeout_after_150_blocks(m: &dyn GameModule) -> MockCtx {
    let mut ctx = setup();
    let id = started(&mut ctx, m, (4, 4, 3), "100");
    mv(&mut ctx, m, ALICE, &id, (0, 0)).unwrap();
    let claim = json!({ "kind": "claim_timeout", "id": id });

    ctx.height = 10 + TIMEOUT_BLOCKS - 1;
    let err = fails(&mut ctx, m, ALICE, claim.clone());
    assert_invalid(&err, "invalid: timeout can be claimed from height 160");
    ctx.height = 10 + TIMEOUT_BLOCKS;
    let err = fails(&mut ctx, m, BOB, claim.clone());
    assert_invalid(&err, "invalid: it is your turn");
    let err = fails(&mut ctx, m, CAROL, claim.clone());
    assert_unauthorized(&err, "not allowed: not a player in this game");
    run(&mut ctx, m, ALICE, claim).unwrap();

    let g = game(&ctx, &id);
    assert_eq!(g.status, Status::Finished);
    assert_eq!(
        (
            g.result.as_deref(),
            g.reason.as_deref(),
            g.winner.as_deref()
        ),
        (Some("x_won"), Some("timeout"), Some(ALICE))
    );
    assert_eq!(g.log_len, 2, "a timeout is not a log record");
    assert_eq!(
        (gold(&ctx, ALICE), gold(&ctx, BOB), escrow(&ctx)),
        (1_100, 900, 0)
    );
    ctx
}

/// Only the creator cancels, only while open; the stake comes back.
fn cancel_refunds_and_only_while_open(m: &dyn GameModule) -> MockCtx {
    let mut ctx = setup();
    let op = json!({ "kind": "create", "rows": 3, "cols": 5, "k": 3, "stake": "100" });
    let id = create_game(&mut ctx, m, ALICE, op);
    assert_eq!((gold(&ctx, ALICE), escrow(&ctx)), (900, 100));
    let cancel = json!({ "kind": "cancel", "id": id });
    let err = fails(&mut ctx, m, BOB, cancel.clone());
    assert_unauthorized(&err, "not allowed: only the creator can cancel");
    run(&mut ctx, m, ALICE, cancel.clone()).unwrap();

    let g = game(&ctx, &id);
    assert_eq!(g.status, Status::Cancelled);
    assert_eq!(
        (g.result.as_deref(), g.reason.as_deref()),
        (Some("cancelled"), Some("cancelled"))
    );
    assert!(ctx.get(&open_key(&id)).is_none());
    assert!(ctx.get(&player_key(ALICE, &id)).is_some());
    assert_eq!(
        last_event(&ctx),
        (
            "mnk.finished",
            &json!({
                "id": id, "result": "cancelled", "winner": null, "reason": "cancelled",
                "payout": "100",
            })
        )
    );
    assert_eq!((gold(&ctx, ALICE), escrow(&ctx)), (1_000, 0));
    let err = fails(&mut ctx, m, ALICE, cancel);
    assert_invalid(&err, "invalid: only an open game can be cancelled");
    let err = fails(&mut ctx, m, BOB, json!({ "kind": "join", "id": id }));
    assert_invalid(&err, "invalid: game is not open");

    let id = started(&mut ctx, m, (3, 3, 3), "100");
    let err = fails(&mut ctx, m, ALICE, json!({ "kind": "cancel", "id": id }));
    assert_invalid(&err, "invalid: only an open game can be cancelled");
    assert_eq!(
        (gold(&ctx, ALICE), gold(&ctx, BOB), escrow(&ctx)),
        (900, 900, 200)
    );
    ctx
}

/// An invitation is joinable by the invited address only and is not an open table.
fn invited_opponent_is_enforced(m: &dyn GameModule) -> MockCtx {
    let mut ctx = setup();
    let op = json!({ "kind": "create", "rows": 3, "cols": 3, "k": 3, "opponent": BOB });
    let id = create_game(&mut ctx, m, ALICE, op);
    assert_eq!(ctx.events[0].1["opponent"], BOB);
    assert!(listed(&ctx, m, &[("open", "1")]).is_empty());
    let join = json!({ "kind": "join", "id": id });
    let err = fails(&mut ctx, m, CAROL, join.clone());
    assert_unauthorized(&err, "not allowed: game is reserved for another player");
    let err = fails(&mut ctx, m, ALICE, join.clone());
    assert_invalid(&err, "invalid: cannot join your own game");
    run(&mut ctx, m, BOB, join).unwrap();
    assert_eq!(last_event(&ctx).1, &json!({ "id": id, "o": BOB }));
    let g = game(&ctx, &id);
    assert_eq!((g.status, g.o.as_deref()), (Status::Playing, Some(BOB)));
    ctx
}

/// Turn order, bounds of `row`/`col` on a non-square board, and occupied cells.
fn bad_or_taken_cells_and_turns(m: &dyn GameModule) -> MockCtx {
    let mut ctx = setup();
    let id = started(&mut ctx, m, (4, 7, 4), "0");
    let at = |row: Value, col: Value| json!({ "kind": "move", "id": id, "row": row, "col": col });

    let err = fails(&mut ctx, m, BOB, at(json!(0), json!(0)));
    assert_unauthorized(&err, "not allowed: not your turn");
    let err = fails(&mut ctx, m, CAROL, at(json!(0), json!(0)));
    assert_unauthorized(&err, "not allowed: not a player in this game");
    for (row, col, text) in [
        (
            json!(4),
            json!(0),
            "invalid: `row` must be a number from 0 to 3",
        ),
        (
            json!("1"),
            json!(0),
            "invalid: `row` must be a number from 0 to 3",
        ),
        (
            json!(null),
            json!(0),
            "invalid: `row` must be a number from 0 to 3",
        ),
        (
            json!(3),
            json!(7),
            "invalid: `col` must be a number from 0 to 6",
        ),
        (
            json!(3),
            json!(-1),
            "invalid: `col` must be a number from 0 to 6",
        ),
    ] {
        let err = fails(&mut ctx, m, ALICE, at(row, col));
        assert_invalid(&err, text);
    }
    mv(&mut ctx, m, ALICE, &id, (3, 6)).unwrap();
    assert_eq!(game(&ctx, &id).board, format!("{}x", ".".repeat(27)));
    let err = fails(&mut ctx, m, ALICE, at(json!(0), json!(0)));
    assert_unauthorized(&err, "not allowed: not your turn");
    let err = fails(&mut ctx, m, BOB, at(json!(3), json!(6)));
    assert_invalid(&err, "invalid: cell is taken");
    mv(&mut ctx, m, BOB, &id, (0, 0)).unwrap();
    let g = game(&ctx, &id);
    assert_eq!((g.moves, g.turn), (2, Mark::X));
    assert_eq!(&g.board[..1], "o");
    ctx
}

/// Creating or joining a staked game without the GOLD fails and changes nothing.
fn join_without_enough_gold_fails(m: &dyn GameModule) -> MockCtx {
    let mut ctx = setup();
    let op = json!({ "kind": "create", "rows": 3, "cols": 3, "k": 3, "stake": "300" });
    let err = fails(&mut ctx, m, CAROL, op.clone());
    assert_eq!(err.to_string(), "insufficient GOLD: need 300, have 0");
    let id = create_game(&mut ctx, m, ALICE, op);
    let err = fails(&mut ctx, m, CAROL, json!({ "kind": "join", "id": id }));
    assert_eq!(err.to_string(), "insufficient GOLD: need 300, have 0");
    assert_eq!(game(&ctx, &id).status, Status::Open);
    assert_eq!(
        (gold(&ctx, ALICE), gold(&ctx, CAROL), escrow(&ctx)),
        (700, 0, 300)
    );
    ctx
}

/// The game log (`docs/mnk.md`): a start record with the rules, one record per move with X on odd and O
/// on even seq, each `prevHash` the SHA-256 of the previous record's canonical JSON, the head
/// the last hash; `?log=` pages with `after`.
fn game_log_chains_hashes(m: &dyn GameModule) -> MockCtx {
    let mut ctx = setup();
    let id = started(&mut ctx, m, (3, 4, 3), "0");
    play(&mut ctx, m, &id, &[(1, 1), (0, 0), (1, 2), (0, 1), (1, 3)]);
    let g = game(&ctx, &id);
    assert_eq!((g.result.as_deref(), g.log_len), (Some("x_won"), 6));

    let log = view(&ctx, m, &[("log", &id)]).unwrap();
    assert_eq!(log["id"], json!(id));
    assert_eq!(log["head"], json!(g.log_head));
    let entries = log["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 6);
    assert_eq!(
        entries[0]["event"],
        json!({
            "game": id, "seq": 0, "prevHash": "", "player": "X", "action": "start",
            "status": "in_progress", "protocol": "gamechain:mnk",
            "rules": { "rows": 3, "cols": 4, "winLength": 3 },
        })
    );
    assert_eq!(
        entries[2]["event"],
        json!({
            "game": id, "seq": 2, "prevHash": entries[1]["hash"], "player": "O",
            "action": "move", "move": { "row": 0, "col": 0 }, "status": "in_progress",
        })
    );
    let mut prev = String::new();
    for (seq, entry) in entries.iter().enumerate() {
        let event = &entry["event"];
        assert_eq!(event["seq"], json!(seq));
        assert_eq!(event["prevHash"], json!(prev), "seq {seq}");
        let player = if seq % 2 == 1 { "X" } else { "O" };
        if seq > 0 {
            assert_eq!(event["player"], player, "seq {seq}");
        }
        // The hash is over the canonical text: sorted keys, no whitespace.
        let canonical = serde_json::to_string(event).unwrap();
        assert!(canonical.starts_with("{\"action\":"), "{canonical}");
        assert_eq!(entry["hash"], json!(record_hash(event)));
        prev = record_hash(event);
    }
    assert_eq!(prev, g.log_head);
    assert_eq!(entries[5]["event"]["status"], "win");

    // Tampering with any record breaks the chain from there on.
    let mut forged = entries[3]["event"].clone();
    forged["move"]["col"] = json!(0);
    assert_ne!(json!(record_hash(&forged)), entries[4]["event"]["prevHash"]);

    let page = view(&ctx, m, &[("log", &id), ("after", "3")]).unwrap();
    let seqs: Vec<&Value> = page["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["event"]["seq"])
        .collect();
    assert_eq!(seqs, [&json!(4), &json!(5)]);
    assert_eq!(LOG_PAGE, 100);
    let err = view(&ctx, m, &[("log", &id), ("after", "x")]).unwrap_err();
    assert_invalid(&err, "invalid: `after` must be a number");
    let err = view(&ctx, m, &[("log", "nope")]).unwrap_err();
    assert_eq!(err.to_string(), "not found: game nope");
    ctx
}

/// `?id=`, `?open=`, `?player=` and the bare view.
fn views_by_id_log_open_and_player(m: &dyn GameModule) -> MockCtx {
    let mut ctx = setup();
    let open = create_game(
        &mut ctx,
        m,
        ALICE,
        json!({ "kind": "create", "rows": 15, "cols": 15, "k": 5 }),
    );
    ctx.height = 11;
    let playing = started(&mut ctx, m, (3, 3, 3), "10");

    let by_id = view(&ctx, m, &[("id", &open)]).unwrap();
    assert_eq!(by_id, serde_json::to_value(game(&ctx, &open)).unwrap());
    assert_eq!(
        (
            &by_id["rows"],
            &by_id["k"],
            &by_id["o"],
            &by_id["last_move"]
        ),
        (&json!(15), &json!(5), &Value::Null, &Value::Null)
    );
    assert_eq!(by_id["board"].as_str().unwrap().len(), 225);
    let err = view(&ctx, m, &[("id", "nope")]).unwrap_err();
    assert!(matches!(err, ActionError::NotFound(_)), "{err:?}");

    assert_eq!(listed(&ctx, m, &[("open", "1")]), [open.as_str()]);
    assert_eq!(
        listed(&ctx, m, &[("player", ALICE)]),
        [open, playing.clone()]
    );
    assert_eq!(listed(&ctx, m, &[("player", BOB)]), [playing]);
    assert!(listed(&ctx, m, &[("player", CAROL)]).is_empty());
    assert_eq!(
        view(&ctx, m, &[]).unwrap(),
        json!({ "game": "mnk", "timeout_blocks": 150, "max_stake": "100000", "max_side": 19 })
    );
    ctx
}
