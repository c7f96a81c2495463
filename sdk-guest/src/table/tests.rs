//! Unit tests of the staked two-player table against `MockCtx`, through `Duel`: the smallest
//! module that seats two players at a table (the player to move may `win`, `draw` or `pass`).

use super::*;
use crate::keys::escrow_account;
use crate::{GameModule, MockCtx};

const RULES: TableRules = TableRules {
    module: "duel",
    joined_event: "duel.joined",
    finished_event: "duel.finished",
    timeout_blocks: 10,
    max_stake: 500,
    list_limit: 3,
};

/// The smallest table game: the player to move may `win` or `draw` on the spot, or `pass`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Duel {
    id: String,
    x: String,
    o: Option<String>,
    opponent: Option<String>,
    stake: Amount,
    turn: Mark,
    status: Status,
    winner: Option<String>,
    result: Option<String>,
    reason: Option<String>,
    created_height: u64,
    last_move_height: u64,
}

crate::impl_table_game!(Duel);

struct DuelModule;
impl GameModule for DuelModule {
    fn id(&self) -> &'static str {
        "duel"
    }
    fn apply(&self, ctx: &mut dyn Ctx, sender: &str, op: &Value) -> Result<(), ActionError> {
        match op_str(op, "kind")? {
            "create" => {
                let t = new_table(ctx, sender, op, &RULES)?;
                let game = Duel {
                    id: t.id,
                    x: t.x,
                    o: None,
                    opponent: t.opponent,
                    stake: t.stake,
                    turn: Mark::X,
                    status: Status::Open,
                    winner: None,
                    result: None,
                    reason: None,
                    created_height: t.height,
                    last_move_height: t.height,
                };
                open_table(ctx, &game);
                Ok(())
            }
            "join" => join::<Duel>(ctx, sender, op, &RULES),
            "cancel" => cancel::<Duel>(ctx, sender, op, &RULES),
            "claim_timeout" => claim_timeout::<Duel>(ctx, sender, op, &RULES),
            kind => {
                let mut game: Duel = load(ctx, op)?;
                let mark = player_to_move(&game, sender)?;
                match kind {
                    "win" => finish(ctx, game, Some(mark), "line", &RULES),
                    "draw" => finish(ctx, game, None, "draw", &RULES),
                    _ => {
                        game.turn = mark.other();
                        game.last_move_height = ctx.height();
                        save(ctx, &game);
                        Ok(())
                    }
                }
            }
        }
    }
    fn view(&self, state: &dyn StateRead, query: &Query) -> Result<Value, ActionError> {
        match query.get("id") {
            Some(id) => Ok(json!(view_game::<Duel>(state, &RULES, id)?)),
            None => list_view::<Duel>(state, &RULES, query).unwrap_or(Ok(Value::Null)),
        }
    }
}

fn setup() -> MockCtx {
    let mut ctx = MockCtx::new("duel");
    ctx.set_balance("alice", GOLD, 1_000);
    ctx.set_balance("bob", GOLD, 1_000);
    ctx.height = 10;
    ctx
}

fn run(ctx: &mut MockCtx, sender: &str, op: Value) -> Result<(), String> {
    ctx.submit(&DuelModule, sender, op)
        .map_err(|e| e.to_string())
}

fn create(ctx: &mut MockCtx, sender: &str, op: Value) -> String {
    run(ctx, sender, op).unwrap();
    ctx.txid[..16].to_string()
}

fn game(ctx: &MockCtx, id: &str) -> Duel {
    ctx.get_json(&game_key(id)).unwrap().unwrap()
}

fn escrow(ctx: &MockCtx) -> u128 {
    ctx.balance(&escrow_account("duel"), GOLD)
}

fn op(kind: &str, id: &str) -> Value {
    json!({ "kind": kind, "id": id })
}

/// Alice creates with `stake`, Bob joins.
fn started(ctx: &mut MockCtx, stake: &str) -> String {
    let id = create(ctx, "alice", json!({ "kind": "create", "stake": stake }));
    run(ctx, "bob", op("join", &id)).unwrap();
    id
}

#[test]
fn create_checks_in_order_then_escrows_and_writes_three_keys() {
    let mut ctx = setup();
    let cases = [
        (
            json!({ "stake": 5 }),
            "invalid: missing string field `stake`",
        ),
        (
            json!({ "stake": "1.5" }),
            "invalid: `stake` must be a decimal string of base units",
        ),
        (
            json!({ "stake": "501", "opponent": 3 }),
            "invalid: stake is at most 500 base units",
        ),
        (
            json!({ "opponent": 3 }),
            "invalid: missing string field `opponent`",
        ),
        (
            json!({ "opponent": "alice" }),
            "invalid: opponent must be another address",
        ),
        (
            json!({ "opponent": "" }),
            "invalid: opponent must be another address",
        ),
        (
            json!({ "stake": "500", "opponent": "bob" }),
            "insufficient GOLD: need 500, have 20",
        ),
    ];
    let cases = cases.map(|(mut op, text)| {
        op["kind"] = json!("create");
        (op, text)
    });
    ctx.set_balance("alice", GOLD, 20);
    for (op, text) in cases {
        assert_eq!(run(&mut ctx, "alice", op.clone()), Err(text.into()), "{op}");
    }
    ctx.set_balance("alice", GOLD, 1_000);
    assert!(ctx.events.is_empty());

    let id = create(
        &mut ctx,
        "alice",
        json!({ "kind": "create", "stake": "500" }),
    );
    assert_eq!((ctx.balance("alice", GOLD), escrow(&ctx)), (500, 500));
    let g = game(&ctx, &id);
    assert_eq!(
        (g.status, g.stake, g.created_height),
        (Status::Open, Amount(500), 10)
    );
    assert_eq!(ctx.get(&open_key(&id)), Some(b"1".to_vec()));
    assert_eq!(ctx.get(&player_key("alice", &id)), Some(b"1".to_vec()));
    assert!(
        ctx.events.is_empty(),
        "the module emits its own created event"
    );
}

#[test]
fn join_checks_the_seat_the_invitation_and_the_stake() {
    let mut ctx = setup();
    ctx.set_balance("carol", GOLD, 10);
    let invite = json!({ "kind": "create", "stake": "100", "opponent": "carol" });
    let id = create(&mut ctx, "alice", invite);
    assert_eq!(
        run(&mut ctx, "nobody", op("join", "nope")),
        Err("not found: game nope".into())
    );
    assert_eq!(
        run(&mut ctx, "nobody", json!({ "kind": "join" })),
        Err("invalid: missing string field `id`".into())
    );
    assert_eq!(
        run(&mut ctx, "alice", op("join", &id)),
        Err("invalid: cannot join your own game".into())
    );
    assert_eq!(
        run(&mut ctx, "bob", op("join", &id)),
        Err("not allowed: game is reserved for another player".into())
    );
    assert_eq!(
        run(&mut ctx, "carol", op("join", &id)),
        Err("insufficient GOLD: need 100, have 10".into())
    );
    ctx.set_balance("carol", GOLD, 100);
    ctx.height = 12;
    run(&mut ctx, "carol", op("join", &id)).unwrap();
    let g = game(&ctx, &id);
    assert_eq!(g.o.as_deref(), Some("carol"));
    assert_eq!((g.status, g.last_move_height), (Status::Playing, 12));
    assert_eq!(escrow(&ctx), 200);
    assert_eq!(ctx.get(&open_key(&id)), None);
    assert_eq!(ctx.get(&player_key("carol", &id)), Some(b"1".to_vec()));
    let joined = ctx.events.last().unwrap();
    assert_eq!(joined.0, "duel.joined");
    assert_eq!(joined.1, json!({ "id": id, "o": "carol" }));
    assert_eq!(
        run(&mut ctx, "bob", op("join", &id)),
        Err("invalid: game is not open".into())
    );
}

#[test]
fn cancel_refunds_the_creator_only_while_open() {
    let mut ctx = setup();
    let id = create(
        &mut ctx,
        "alice",
        json!({ "kind": "create", "stake": "70" }),
    );
    assert_eq!(
        run(&mut ctx, "bob", op("cancel", &id)),
        Err("not allowed: only the creator can cancel".into())
    );
    run(&mut ctx, "alice", op("cancel", &id)).unwrap();
    assert_eq!((ctx.balance("alice", GOLD), escrow(&ctx)), (1_000, 0));
    let g = game(&ctx, &id);
    assert_eq!(g.status, Status::Cancelled);
    assert_eq!(g.result.as_deref(), Some("cancelled"));
    assert_eq!(ctx.get(&open_key(&id)), None);
    let finished = ctx.events.last().unwrap();
    assert_eq!(finished.0, "duel.finished");
    assert_eq!(
        finished.1,
        json!({ "id": id, "result": "cancelled", "winner": null, "reason": "cancelled",
                "payout": "70" })
    );
    assert_eq!(
        run(&mut ctx, "alice", op("cancel", &id)),
        Err("invalid: only an open game can be cancelled".into())
    );
}

#[test]
fn timeout_is_counted_in_blocks_from_the_last_move() {
    let mut ctx = setup();
    let id = create(
        &mut ctx,
        "alice",
        json!({ "kind": "create", "stake": "40" }),
    );
    assert_eq!(
        run(&mut ctx, "bob", op("claim_timeout", &id)),
        Err("invalid: game is not in play".into())
    );
    ctx.height = 20;
    run(&mut ctx, "bob", op("join", &id)).unwrap();
    ctx.height = 29;
    assert_eq!(
        run(&mut ctx, "carol", op("claim_timeout", &id)),
        Err("not allowed: not a player in this game".into())
    );
    assert_eq!(
        run(&mut ctx, "alice", op("claim_timeout", &id)),
        Err("invalid: it is your turn".into())
    );
    assert_eq!(
        run(&mut ctx, "bob", op("claim_timeout", &id)),
        Err("invalid: timeout can be claimed from height 30".into())
    );
    ctx.height = 30;
    run(&mut ctx, "bob", op("claim_timeout", &id)).unwrap();
    let g = game(&ctx, &id);
    assert_eq!(g.winner.as_deref(), Some("bob"));
    assert_eq!(
        (g.result.as_deref(), g.reason.as_deref()),
        (Some("o_won"), Some("timeout"))
    );
    assert_eq!((ctx.balance("bob", GOLD), escrow(&ctx)), (1_040, 0));
}

#[test]
fn a_win_takes_both_stakes_and_a_draw_refunds_both() {
    let mut ctx = setup();
    let won = started(&mut ctx, "100");
    assert_eq!(
        run(&mut ctx, "bob", op("win", &won)),
        Err("not allowed: not your turn".into())
    );
    run(&mut ctx, "alice", op("pass", &won)).unwrap();
    run(&mut ctx, "bob", op("win", &won)).unwrap();
    assert_eq!(ctx.balance("alice", GOLD), 900);
    assert_eq!(ctx.balance("bob", GOLD), 1_100);
    let g = game(&ctx, &won);
    assert_eq!(
        (g.status, g.result.as_deref()),
        (Status::Finished, Some("o_won"))
    );
    assert_eq!(ctx.events.last().unwrap().1["payout"], "200");
    assert_eq!(
        run(&mut ctx, "alice", op("win", &won)),
        Err("invalid: game is not in play".into())
    );

    let drawn = started(&mut ctx, "50");
    assert_eq!(escrow(&ctx), 100);
    run(&mut ctx, "alice", op("draw", &drawn)).unwrap();
    assert_eq!(ctx.balance("alice", GOLD), 900);
    assert_eq!(ctx.balance("bob", GOLD), 1_100);
    assert_eq!(escrow(&ctx), 0);
    let finished = ctx.events.last().unwrap();
    assert_eq!(
        finished.1,
        json!({ "id": drawn, "result": "draw", "winner": null, "reason": "draw",
                "payout": "50" })
    );

    let free = started(&mut ctx, "0");
    run(&mut ctx, "alice", op("win", &free)).unwrap();
    assert_eq!(ctx.events.last().unwrap().1["payout"], "0");
    assert_eq!(ctx.balance("alice", GOLD), 900);
}

#[test]
fn list_views_sort_by_created_height_within_the_limit() {
    let mut ctx = setup();
    let mut ids = Vec::new();
    for height in [40, 20, 30, 10] {
        ctx.height = height;
        ids.push(create(&mut ctx, "alice", json!({ "kind": "create" })));
    }
    ctx.height = 5;
    let invited = json!({ "kind": "create", "opponent": "alice" });
    let bobs = create(&mut ctx, "bob", invited);
    let listed = |ctx: &MockCtx, query: &[(&str, &str)]| -> Vec<(String, u64)> {
        let query: Query = query
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let answer = ctx.view(&DuelModule, &query).unwrap();
        let games: Vec<Duel> = serde_json::from_value(answer["games"].clone()).unwrap();
        games
            .into_iter()
            .map(|g| (g.id, g.created_height))
            .collect()
    };
    // The limit (3) applies to the keys scanned, in key order; the result is then sorted.
    let mut first_keys = ids.clone();
    first_keys.push(bobs.clone());
    first_keys.sort();
    let open = listed(&ctx, &[("open", "")]);
    let mut expected: Vec<(String, u64)> = first_keys[..3]
        .iter()
        .filter(|id| **id != bobs)
        .map(|id| (id.clone(), game(&ctx, id).created_height))
        .collect();
    expected.sort_by_key(|(_, h)| *h);
    assert_eq!(open, expected, "invitations are left out");
    let heights: Vec<u64> = listed(&ctx, &[("player", "alice")])
        .into_iter()
        .map(|(_, h)| h)
        .collect();
    assert_eq!(heights.len(), 3);
    assert!(heights.windows(2).all(|w| w[0] <= w[1]), "{heights:?}");
    assert_eq!(listed(&ctx, &[("player", "bob")]), vec![(bobs, 5)]);
    assert_eq!(ctx.view(&DuelModule, &Query::new()), Ok(Value::Null));
    assert_eq!(
        ctx.view(&DuelModule, &[("id".to_string(), "x".to_string())].into()),
        Err(ActionError::not_found("game x"))
    );
}

#[test]
fn list_views_page_through_every_game_once() {
    let mut ctx = setup();
    ctx.set_balance("carol", GOLD, 1_000);
    let mut ids = Vec::new();
    for (i, who) in ["alice", "bob", "alice", "carol", "alice", "bob", "alice"]
        .iter()
        .enumerate()
    {
        ctx.height = 100 - i as u64;
        ids.push(create(&mut ctx, who, json!({ "kind": "create" })));
    }
    ids.sort();
    let view = |ctx: &MockCtx, query: &[(&str, &str)]| {
        let query: Query = query
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        ctx.view(&DuelModule, &query)
    };
    for limit in ["1", "2", "3"] {
        let mut seen = Vec::new();
        let mut after: Option<String> = None;
        let mut pages = 0;
        loop {
            let mut query = vec![("open", ""), ("limit", limit)];
            if let Some(a) = &after {
                query.push(("after", a));
            }
            let page = view(&ctx, &query).unwrap();
            pages += 1;
            let games = page["games"].as_array().unwrap();
            assert!(games.len() <= limit.parse::<usize>().unwrap());
            seen.extend(games.iter().map(|g| g["id"].as_str().unwrap().to_string()));
            match page.get("next") {
                Some(next) => after = Some(next.as_str().unwrap().to_string()),
                None => break,
            }
            assert!(pages <= 8, "paging must end");
        }
        seen.sort();
        assert_eq!(seen, ids, "limit {limit}: every open game exactly once");
    }
    // A short list has no next: exactly {"games": [...]}.
    let carol = view(&ctx, &[("player", "carol")]).unwrap();
    assert_eq!(carol.as_object().unwrap().len(), 1, "{carol}");
    // A page that scanned the limit says where to go on, even when the next page is empty.
    let full = view(&ctx, &[("player", "carol"), ("limit", "1")]).unwrap();
    let next = full["next"].as_str().unwrap().to_string();
    let last = view(
        &ctx,
        &[("player", "carol"), ("limit", "1"), ("after", &next)],
    )
    .unwrap();
    assert_eq!(last, json!({ "games": [] }));
    // Bad parameters: fixed texts.
    for bad in ["0", "4", "-1", "+2", "x", ""] {
        assert_eq!(
            view(&ctx, &[("open", ""), ("limit", bad)]),
            Err(ActionError::invalid("limit must be an integer from 1 to 3")),
            "limit {bad:?}"
        );
    }
    let long = "a".repeat(65);
    for bad in ["", "XYZ", "g0", "a/b", long.as_str()] {
        assert_eq!(
            view(&ctx, &[("open", ""), ("after", bad)]),
            Err(ActionError::invalid(
                "after must be a game id (at most 64 characters: 0-9, a-f)"
            )),
            "after {bad:?}"
        );
    }
}
