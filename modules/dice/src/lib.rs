//! # A dice duel, with an optional GOLD stake: chance nobody can steer
//!
//! Two players sit at the SDK's staked table (`gamechain_sdk::table`); once the second joins, the
//! module schedules one call of itself for the **next** block, and in that call the chain rolls
//! two dice for each player from the block's randomness beacon (`docs/randomness.md`). The higher
//! total takes both stakes; equal totals give each stake back. Module id `dice`.
//!
//! Why this is fair: when the `join` that fixes the duel is included, the beacon of the next
//! block does not exist yet (on a single sequencer only its key holds it; on validators no
//! coalition short of the threshold can make it). The roll runs before that block's
//! transactions, over the state the previous block left, so nothing a player sends later, and
//! no field of the `join` (a salt, a nonce, a re-signed body), changes what is drawn: the draw
//! is `SHA-256(beacon ‖ module ‖ call id ‖ n)` and the beacon is a unique signature nobody can
//! choose. Waiting does not help either: the roll's height is fixed by the join, and the beacon
//! of every later height is as unknown as the first.
//!
//! ## Ops
//!
//! Every op: `kind` missing or not a string → ``invalid: missing string field `kind` ``; an
//! unknown kind → ``invalid: unknown dice op `<kind>` ``; ops with an `id` load the game first
//! (``invalid: missing string field `id` ``, `not found: game <id>`).
//!
//! - **`create`** `{stake?, opponent?}`: the table's checks and texts (stake a decimal string of
//!   base units, at most 100000; `opponent` another address or null). The creator plays `x`;
//!   the stake moves into escrow `module:dice`; emits `dice.created`.
//! - **`join`** `{id}`: the table's checks (`invalid: game is not open`, `invalid: cannot join
//!   your own game`, `not allowed: game is reserved for another player`, `insufficient GOLD:
//!   …`); the same stake moves into escrow; status `playing`; emits `dice.joined`, then
//!   schedules the roll at the next height with [`ROLL_FUEL`] fuel (paid by this transaction) and
//!   emits `dice.roll_scheduled {id, call, height}`. A join that cannot schedule fails whole
//!   (`invalid: <the schedule error>`) and nothing is escrowed.
//! - **`cancel`** `{id}`: the creator cancels an open duel (`not allowed: only the creator can
//!   cancel`, `invalid: only an open game can be cancelled`); the stake goes back; emits
//!   `dice.finished` (`reason` `cancelled`).
//! - **`claim_refund`** `{id}`: a safety valve that should never be needed: a duel still in play
//!   [`REFUND_AFTER_BLOCKS`] blocks after its roll was due (`invalid: game is not in play`, `not
//!   allowed: not a player in this game`, `invalid: a refund can be claimed from height <h>`)
//!   refunds both stakes (`result` `draw`, `reason` `refund`).
//!
//! ## The roll (a scheduled call)
//!
//! Payload: the game id. The call fails (`invalid: stale roll`) unless the game is in play and
//! its `roll_call` is this call. Then `x` rolls two dice, then `o` (each die
//! `1 + draw_below(6)`), `dice.rolled {id, x_dice, o_dice, x_total, o_total}` is emitted and the
//! duel finishes through the table: the higher total wins both stakes (`reason` `roll`), equal
//! totals are a draw.
//!
//! ## State keys (under `m/dice/`)
//!
//! The table's: `game/<id>` (JSON [`Game`]), `open/<id>`, `player/<address>/<id>`.
//!
//! ## Views (`GET /v1/games/dice?…`)
//!
//! The table's `?id=`, `?open=`, `?player=` (paged like tic-tac-toe's); no parameter:
//! `{"game":"dice","max_stake":"100000","roll_fuel":2000000,"refund_after_blocks":150}`.

use gamechain_sdk::prelude::*;
use gamechain_sdk::table::{self, NewTable, TableRules};
pub use gamechain_sdk::table::{Mark, Status};

mod schema;
pub use schema::SCHEMA;

/// The module id.
pub const ID: &str = "dice";
/// Largest stake, in GOLD base units (1000 GOLD).
pub const MAX_STAKE: u128 = 100_000;
/// Fuel the roll is given (and the `join` pays for it): a roll uses about a tenth of it.
pub const ROLL_FUEL: u64 = 2_000_000;
/// Blocks after a roll was due from which either player may claim a refund of a duel still in
/// play (the roll runs in its block unless more than 64 calls are due at once, and then within
/// a few blocks).
pub const REFUND_AFTER_BLOCKS: u64 = 150;
/// Most keys a list view scans.
const LIST_LIMIT: usize = 50;
/// The table this module seats its players at.
pub const RULES: TableRules = TableRules {
    module: ID,
    joined_event: "dice.joined",
    finished_event: "dice.finished",
    // No turns: the table's `claim_timeout` is not an op of this module.
    timeout_blocks: REFUND_AFTER_BLOCKS,
    max_stake: MAX_STAKE,
    list_limit: LIST_LIMIT,
};

/// The module: `gamechain_sdk::export_module!(Dice)` exports it as wasm.
#[derive(Debug, Clone, Copy, Default)]
pub struct Dice;

/// One duel, stored as JSON at `game/<id>` and returned by the views.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Game {
    /// The first 16 hex characters of the creating transaction's txid.
    pub id: String,
    /// The creator's address.
    pub x: String,
    /// The joiner's address; `null` while open.
    pub o: Option<String>,
    /// The only address that may join, when the creator invited one.
    pub opponent: Option<String>,
    /// Each player's stake in GOLD base units.
    pub stake: Amount,
    /// Always `x` (the table's field; a duel has no turns).
    pub turn: Mark,
    /// Life-cycle state.
    pub status: Status,
    /// The winner's address; `null` unless won.
    pub winner: Option<String>,
    /// `x_won`, `o_won`, `draw` or `cancelled`; `null` while not over.
    pub result: Option<String>,
    /// `roll`, `refund` or `cancelled`; `null` while not over.
    pub reason: Option<String>,
    /// Height of the block that created the duel.
    pub created_height: u64,
    /// Height of the join (or the creation).
    pub last_move_height: u64,
    /// The scheduled roll's call id, once joined.
    pub roll_call: Option<u64>,
    /// The height the roll is due at, once joined.
    pub roll_height: Option<u64>,
    /// `x`'s dice once rolled (empty before).
    pub x_dice: Vec<u32>,
    /// `o`'s dice once rolled (empty before).
    pub o_dice: Vec<u32>,
}

gamechain_sdk::impl_table_game!(Game);

impl GameModule for Dice {
    fn id(&self) -> &'static str {
        ID
    }

    fn apply(&self, ctx: &mut dyn Ctx, sender: &str, op: &Value) -> Result<(), ActionError> {
        match op_str(op, "kind")? {
            "create" => create(ctx, sender, op),
            "join" => join(ctx, sender, op),
            "cancel" => table::cancel::<Game>(ctx, sender, op, &RULES),
            "claim_refund" => claim_refund(ctx, sender, op),
            other => Err(ActionError::invalid(format!("unknown dice op `{other}`"))),
        }
    }

    fn view(&self, state: &dyn StateRead, query: &Query) -> Result<Value, ActionError> {
        if let Some(id) = query.get("id") {
            let game: Game = table::view_game(state, &RULES, id)?;
            return serde_json::to_value(&game).map_err(|e| ActionError::Internal(e.to_string()));
        }
        if let Some(list) = table::list_view::<Game>(state, &RULES, query) {
            return list;
        }
        Ok(json!({
            "game": ID,
            "max_stake": Amount(MAX_STAKE),
            "roll_fuel": ROLL_FUEL,
            "refund_after_blocks": REFUND_AFTER_BLOCKS,
        }))
    }

    fn scheduled(&self, ctx: &mut dyn Ctx, call: &ScheduledCall) -> Result<(), ActionError> {
        roll(ctx, call)
    }

    fn schema(&self) -> Option<&str> {
        Some(SCHEMA)
    }
}

gamechain_sdk::export_module!(Dice, schema = SCHEMA);

fn create(ctx: &mut dyn Ctx, sender: &str, op: &Value) -> Result<(), ActionError> {
    let NewTable {
        id,
        x,
        opponent,
        stake,
        height,
    } = table::new_table(ctx, sender, op, &RULES)?;
    let game = Game {
        id,
        x,
        o: None,
        opponent,
        stake,
        turn: Mark::X,
        status: Status::Open,
        winner: None,
        result: None,
        reason: None,
        created_height: height,
        last_move_height: height,
        roll_call: None,
        roll_height: None,
        x_dice: Vec::new(),
        o_dice: Vec::new(),
    };
    table::open_table(ctx, &game);
    ctx.emit(
        "dice.created",
        json!({ "id": game.id, "x": game.x, "stake": game.stake, "opponent": game.opponent }),
    );
    Ok(())
}

fn join(ctx: &mut dyn Ctx, sender: &str, op: &Value) -> Result<(), ActionError> {
    table::join::<Game>(ctx, sender, op, &RULES)?;
    let mut game: Game = table::load(ctx, op)?;
    let height = ctx.height() + 1;
    let call = ctx.schedule(At::Height(height), game.id.as_bytes(), ROLL_FUEL)?;
    game.roll_call = Some(call);
    game.roll_height = Some(height);
    table::save(ctx, &game);
    ctx.emit(
        "dice.roll_scheduled",
        json!({ "id": game.id, "call": call, "height": height }),
    );
    Ok(())
}

/// Two dice, `1..=6` each.
fn two_dice(ctx: &mut dyn Ctx) -> [u32; 2] {
    [1 + draw_below(ctx, 6) as u32, 1 + draw_below(ctx, 6) as u32]
}

fn roll(ctx: &mut dyn Ctx, call: &ScheduledCall) -> Result<(), ActionError> {
    let id = core::str::from_utf8(&call.payload).map_err(|_| ActionError::invalid("stale roll"))?;
    let mut game: Game = match ctx.get_json(&table::game_key(id))? {
        Some(g) => g,
        None => return Err(ActionError::invalid("stale roll")),
    };
    if game.status != Status::Playing || game.roll_call != Some(call.id) {
        return Err(ActionError::invalid("stale roll"));
    }
    let (x, o) = (two_dice(ctx), two_dice(ctx));
    let (x_total, o_total) = (x[0] + x[1], o[0] + o[1]);
    game.x_dice = x.to_vec();
    game.o_dice = o.to_vec();
    ctx.emit(
        "dice.rolled",
        json!({ "id": game.id, "x_dice": x, "o_dice": o, "x_total": x_total, "o_total": o_total }),
    );
    let winner = match x_total.cmp(&o_total) {
        core::cmp::Ordering::Greater => Some(Mark::X),
        core::cmp::Ordering::Less => Some(Mark::O),
        core::cmp::Ordering::Equal => None,
    };
    table::finish(ctx, game, winner, "roll", &RULES)
}

fn claim_refund(ctx: &mut dyn Ctx, sender: &str, op: &Value) -> Result<(), ActionError> {
    let game: Game = table::load(ctx, op)?;
    table::player_in_play(&game, sender)?;
    let due = game
        .roll_height
        .unwrap_or(game.last_move_height)
        .saturating_add(REFUND_AFTER_BLOCKS);
    if ctx.height() < due {
        return Err(ActionError::invalid(format!(
            "a refund can be claimed from height {due}"
        )));
    }
    if let Some(call) = game.roll_call {
        ctx.cancel_scheduled(call);
    }
    table::finish(ctx, game, None, "refund", &RULES)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gamechain_sdk::MockCtx;

    const ALICE: &str = "alice";
    const BOB: &str = "bob";

    fn seated(stake: &str) -> (MockCtx, String) {
        let mut ctx = MockCtx::new(ID);
        ctx.set_balance(ALICE, GOLD, 1_000);
        ctx.set_balance(BOB, GOLD, 1_000);
        ctx.height = 10;
        ctx.submit(&Dice, ALICE, json!({"kind": "create", "stake": stake}))
            .unwrap();
        let id = ctx.txid[..16].to_string();
        ctx.submit(&Dice, BOB, json!({"kind": "join", "id": id}))
            .unwrap();
        (ctx, id)
    }

    fn game(ctx: &MockCtx, id: &str) -> Game {
        serde_json::from_value(
            ctx.view(&Dice, &Query::from([("id".into(), id.into())]))
                .unwrap(),
        )
        .unwrap()
    }

    #[test]
    fn the_roll_runs_in_the_next_block_and_pays_the_higher_total() {
        let (mut ctx, id) = seated("100");
        let g = game(&ctx, &id);
        assert_eq!(g.roll_height, Some(11));
        assert_eq!(g.status, Status::Playing);
        // Not in the join's block.
        assert!(ctx.run_scheduled(&Dice, 0, Some([1; 48])).is_empty());
        ctx.height = 11;
        let ran = ctx.run_scheduled(&Dice, 0, Some([1; 48]));
        assert_eq!(ran.len(), 1);
        assert_eq!(ran[0].0, g.roll_call.unwrap());
        ran[0].1.clone().unwrap();
        let g = game(&ctx, &id);
        assert_eq!(g.status, Status::Finished);
        assert_eq!(g.reason.as_deref(), Some("roll"));
        let (x, o): (u32, u32) = (g.x_dice.iter().sum(), g.o_dice.iter().sum());
        assert!(g
            .x_dice
            .iter()
            .chain(&g.o_dice)
            .all(|d| (1..=6).contains(d)));
        let (a, b) = (ctx.balance(ALICE, GOLD), ctx.balance(BOB, GOLD));
        match x.cmp(&o) {
            core::cmp::Ordering::Greater => assert_eq!((a, b), (1_100, 900)),
            core::cmp::Ordering::Less => assert_eq!((a, b), (900, 1_100)),
            core::cmp::Ordering::Equal => assert_eq!((a, b), (1_000, 1_000)),
        }
        assert_eq!(ctx.balance("module:dice", GOLD), 0);
        // Rolled once: the call is gone.
        ctx.height = 12;
        assert!(ctx.run_scheduled(&Dice, 0, Some([1; 48])).is_empty());
    }

    #[test]
    fn the_same_beacon_rolls_the_same_dice_and_another_beacon_others() {
        let mut rolls = std::collections::BTreeSet::new();
        for beacon in 0..20u8 {
            let (mut ctx, id) = seated("0");
            ctx.height = 11;
            ctx.run_scheduled(&Dice, 0, Some([beacon; 48]));
            let g = game(&ctx, &id);
            let (mut again, _) = seated("0");
            again.height = 11;
            again.run_scheduled(&Dice, 0, Some([beacon; 48]));
            assert_eq!(game(&again, &id).x_dice, g.x_dice);
            rolls.insert((g.x_dice, g.o_dice));
        }
        assert!(rolls.len() > 10, "{rolls:?}");
    }

    #[test]
    fn no_beacon_no_roll_and_a_refund_later() {
        let (mut ctx, id) = seated("100");
        ctx.height = 11;
        // A chain without a beacon: the draw fails, the call fails, the duel stays in play.
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            ctx.clone().run_scheduled(&Dice, 0, None)
        }));
        assert!(
            ran.is_err(),
            "a draw without a beacon panics natively (traps on chain)"
        );
        ctx.height = 100;
        let early = ctx
            .submit(&Dice, ALICE, json!({"kind": "claim_refund", "id": id}))
            .unwrap_err();
        assert_eq!(
            early.to_string(),
            "invalid: a refund can be claimed from height 161"
        );
        ctx.height = 161;
        ctx.submit(&Dice, BOB, json!({"kind": "claim_refund", "id": id}))
            .unwrap();
        assert_eq!(
            (ctx.balance(ALICE, GOLD), ctx.balance(BOB, GOLD)),
            (1_000, 1_000)
        );
        // The refund cancelled the roll.
        ctx.height = 162;
        assert!(ctx.run_scheduled(&Dice, 0, Some([3; 48])).is_empty());
    }

    #[test]
    fn a_stale_or_foreign_call_does_nothing() {
        let (mut ctx, id) = seated("100");
        let stale = ScheduledCall {
            id: 12345,
            payload: id.as_bytes().to_vec(),
            sealed: None,
        };
        assert_eq!(
            roll(&mut ctx, &stale).unwrap_err().to_string(),
            "invalid: stale roll"
        );
        let unknown = ScheduledCall {
            id: 1,
            payload: b"0000000000000000".to_vec(),
            sealed: None,
        };
        assert_eq!(
            roll(&mut ctx, &unknown).unwrap_err().to_string(),
            "invalid: stale roll"
        );
    }

    #[test]
    fn table_checks_hold() {
        let mut ctx = MockCtx::new(ID);
        ctx.set_balance(ALICE, GOLD, 50);
        let e = ctx
            .submit(&Dice, ALICE, json!({"kind": "create", "stake": "100"}))
            .unwrap_err();
        assert_eq!(e.to_string(), "insufficient GOLD: need 100, have 50");
        ctx.submit(&Dice, ALICE, json!({"kind": "create"})).unwrap();
        let id = ctx.txid[..16].to_string();
        let e = ctx
            .submit(&Dice, ALICE, json!({"kind": "join", "id": id}))
            .unwrap_err();
        assert_eq!(e.to_string(), "invalid: cannot join your own game");
        let e = ctx
            .submit(&Dice, ALICE, json!({"kind": "roll", "id": id}))
            .unwrap_err();
        assert_eq!(e.to_string(), "invalid: unknown dice op `roll`");
    }
}
