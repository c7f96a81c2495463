//! # Rock-paper-scissors with sealed moves: nobody can refuse to reveal
//!
//! Two players sit at the SDK's staked table (`gamechain_sdk::table`). When the second joins,
//! the module fixes a **round** (a block height `seal_blocks` ahead) and reserves one sealed call
//! per seat in it ([`Ctx::schedule_sealed`]), plus a settling call at the same height. Each
//! player then hands in a move sealed to that round (`move {id, sealed}`; an envelope from
//! `gamechain seal` or the JS SDK's `sealMove`). In the round's block the chain opens both
//! envelopes with that block's beacon, before anything else runs, and hands the moves to the
//! module; the settling call then pays out. Module id `sealed_rps` (`docs/sealed-moves.md`).
//!
//! Why this is fair: until the round's beacon exists nobody can open a sealed move (on
//! validators no coalition short of the threshold; on a single sequencer only the sequencer, see
//! the docs), so neither player can answer the other's move. A sealed move cannot be changed
//! (one per seat), copied (its proof binds it to this module, the sender, the game and seat,
//! and the round: a copy is refused) or withheld to the other's loss: a seat with no move, or
//! with an envelope that does not open, is **void**, and a void seat loses to any valid move.
//! Both void: a draw, stakes back. The seats were reserved at the join, so nobody can fill the
//! round with other sealed calls to keep a move out.
//!
//! ## Plaintext
//!
//! 32 bytes: byte 0 is the move, `1` rock, `2` paper, `3` scissors; the rest is ignored (the
//! encryption is randomised, so equal moves give unrelated envelopes). Any other byte 0 is void.
//!
//! ## Ops
//!
//! Every op: `kind` missing or not a string → ``invalid: missing string field `kind` ``; an
//! unknown kind → ``invalid: unknown sealed_rps op `<kind>` ``; ops with an `id` load the game
//! first (``invalid: missing string field `id` ``, `not found: game <id>`).
//!
//! - **`create`** `{stake?, opponent?, seal_blocks?}`: the table's checks and texts;
//!   `seal_blocks` (default [`DEFAULT_SEAL_BLOCKS`]) not an integer from [`MIN_SEAL_BLOCKS`] to
//!   [`MAX_SEAL_BLOCKS`] → `invalid: seal_blocks must be an integer from 2 to 600`. Emits
//!   `sealed_rps.created`.
//! - **`join`** `{id}`: the table's checks; then the round is `height + seal_blocks`; reserves
//!   both seats and the settling call (paid by this transaction) and emits `sealed_rps.round {id,
//!   round, x_call, o_call}`. A join that cannot reserve fails whole (`invalid: <the schedule
//!   error>`; a full round: join again a block later, which picks the next round).
//! - **`move`** `{id, sealed}`: `invalid: game is not in play` (also once the round's block has
//!   settled it: a move must land in a block before the round, so hand it in at least two
//!   blocks ahead), `not allowed: not a player in this game`, `invalid: the round has come:
//!   moves are closed` (height ≥ round, a game the round has not settled yet); ``invalid:
//!   `sealed` must be 448 lowercase hex characters``; then the chain's seal refusals as
//!   `invalid: <text>` (`… holds a sealed move already`, `… malformed`, `… not bound to this
//!   game, seat, round and player`). The tag is `<id>/<x|o>`. Emits `sealed_rps.sealed {id,
//!   seat}` (never the move).
//! - **`cancel`** `{id}`: the creator cancels an open game (the table's texts).
//!
//! ## The round
//!
//! Each seat's sealed call records `x_move` / `o_move` (`rock`, `paper`, `scissors` or `void`)
//! and emits `sealed_rps.opened {id, seat, move}`. The settling call (payload: the game id;
//! `invalid: stale settle` unless the game is in play and this is its settling call) emits
//! `sealed_rps.revealed {id, x_move, o_move}` and finishes: rock beats scissors, scissors paper,
//! paper rock; a void seat loses to a valid one (`reason` `void`); equal moves or both void are
//! a draw (`reason` `reveal`).
//!
//! ## Views (`GET /v1/games/sealed_rps?…`)
//!
//! The table's `?id=`, `?open=`, `?player=`; no parameter: `{"game":"sealed_rps",
//! "max_stake":"100000","default_seal_blocks":20}`.

use gamechain_sdk::prelude::*;
use gamechain_sdk::table::{self, NewTable, TableRules};
pub use gamechain_sdk::table::{Mark, Status};

mod schema;
pub use schema::SCHEMA;

/// The module id.
pub const ID: &str = "sealed_rps";
/// Largest stake, in GOLD base units (1000 GOLD).
pub const MAX_STAKE: u128 = 100_000;
/// Blocks from the join to the round, by default.
pub const DEFAULT_SEAL_BLOCKS: u64 = 20;
/// Fewest blocks from the join to the round.
pub const MIN_SEAL_BLOCKS: u64 = 2;
/// Most blocks from the join to the round.
pub const MAX_SEAL_BLOCKS: u64 = 600;
/// Fuel of each seat's opening call (records one move: a few tens of thousands).
pub const OPEN_FUEL: u64 = 300_000;
/// Fuel of the settling call.
pub const SETTLE_FUEL: u64 = 1_000_000;
/// Most keys a list view scans.
const LIST_LIMIT: usize = 50;
/// The table this module seats its players at.
pub const RULES: TableRules = TableRules {
    module: ID,
    joined_event: "sealed_rps.joined",
    finished_event: "sealed_rps.finished",
    // No turns and no claim_timeout: the round settles every game.
    timeout_blocks: MAX_SEAL_BLOCKS,
    max_stake: MAX_STAKE,
    list_limit: LIST_LIMIT,
};

/// The module: `gamechain_sdk::export_module!(SealedRps)` exports it as wasm.
#[derive(Debug, Clone, Copy, Default)]
pub struct SealedRps;

/// One game, stored as JSON at `game/<id>` and returned by the views.
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
    /// Always `x` (the table's field; moves are simultaneous).
    pub turn: Mark,
    /// Life-cycle state.
    pub status: Status,
    /// The winner's address; `null` unless won.
    pub winner: Option<String>,
    /// `x_won`, `o_won`, `draw` or `cancelled`; `null` while not over.
    pub result: Option<String>,
    /// `reveal`, `void` or `cancelled`; `null` while not over.
    pub reason: Option<String>,
    /// Height of the block that created the game.
    pub created_height: u64,
    /// Height of the join (or the creation).
    pub last_move_height: u64,
    /// Blocks from the join to the round.
    pub seal_blocks: u64,
    /// The height whose beacon opens both moves, once joined.
    pub round: Option<u64>,
    /// The sealed call of `x`'s seat.
    pub x_call: Option<u64>,
    /// The sealed call of `o`'s seat.
    pub o_call: Option<u64>,
    /// The settling call.
    pub settle_call: Option<u64>,
    /// Whether `x` handed in a sealed move.
    pub x_sealed: bool,
    /// Whether `o` handed in a sealed move.
    pub o_sealed: bool,
    /// `x`'s opened move (`rock`, `paper`, `scissors`, `void`), once the round came.
    pub x_move: Option<String>,
    /// `o`'s opened move, once the round came.
    pub o_move: Option<String>,
}

gamechain_sdk::impl_table_game!(Game);

impl GameModule for SealedRps {
    fn id(&self) -> &'static str {
        ID
    }

    fn apply(&self, ctx: &mut dyn Ctx, sender: &str, op: &Value) -> Result<(), ActionError> {
        match op_str(op, "kind")? {
            "create" => create(ctx, sender, op),
            "join" => join(ctx, sender, op),
            "move" => seal_move(ctx, sender, op),
            "cancel" => table::cancel::<Game>(ctx, sender, op, &RULES),
            other => Err(ActionError::invalid(format!(
                "unknown sealed_rps op `{other}`"
            ))),
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
            "default_seal_blocks": DEFAULT_SEAL_BLOCKS,
        }))
    }

    fn scheduled(&self, ctx: &mut dyn Ctx, call: &ScheduledCall) -> Result<(), ActionError> {
        match call.sealed {
            Some(opened) => record_opening(ctx, call, opened),
            None => settle(ctx, call),
        }
    }

    fn schema(&self) -> Option<&str> {
        Some(SCHEMA)
    }
}

gamechain_sdk::export_module!(SealedRps, schema = SCHEMA);

/// The tag a seat's sealed move is bound to: `<id>/<x|o>`.
pub fn seal_tag(id: &str, seat: Mark) -> String {
    format!("{id}/{}", seat.as_char())
}

/// The move byte 0 of a plaintext stands for.
pub fn move_name(byte: u8) -> &'static str {
    match byte {
        1 => "rock",
        2 => "paper",
        3 => "scissors",
        _ => "void",
    }
}

fn create(ctx: &mut dyn Ctx, sender: &str, op: &Value) -> Result<(), ActionError> {
    let seal_blocks = match op.get("seal_blocks") {
        None | Some(Value::Null) => DEFAULT_SEAL_BLOCKS,
        Some(v) => v
            .as_u64()
            .filter(|b| (MIN_SEAL_BLOCKS..=MAX_SEAL_BLOCKS).contains(b))
            .ok_or_else(|| ActionError::invalid("seal_blocks must be an integer from 2 to 600"))?,
    };
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
        seal_blocks,
        round: None,
        x_call: None,
        o_call: None,
        settle_call: None,
        x_sealed: false,
        o_sealed: false,
        x_move: None,
        o_move: None,
    };
    table::open_table(ctx, &game);
    ctx.emit(
        "sealed_rps.created",
        json!({ "id": game.id, "x": game.x, "stake": game.stake, "opponent": game.opponent,
                "seal_blocks": seal_blocks }),
    );
    Ok(())
}

fn join(ctx: &mut dyn Ctx, sender: &str, op: &Value) -> Result<(), ActionError> {
    table::join::<Game>(ctx, sender, op, &RULES)?;
    let mut game: Game = table::load(ctx, op)?;
    // One round, fixed by the join's height: never chosen by looking at how full rounds are
    // (other games' state), so `verify --game` re-executes the join exactly. A full round
    // refuses the join whole; joining again a block later picks the next round.
    let round = ctx.height() + game.seal_blocks;
    let x_call = ctx.schedule_sealed(round, seal_tag(&game.id, Mark::X).as_bytes(), OPEN_FUEL)?;
    let o_call = ctx.schedule_sealed(round, seal_tag(&game.id, Mark::O).as_bytes(), OPEN_FUEL)?;
    let settle = ctx.schedule(At::Height(round), game.id.as_bytes(), SETTLE_FUEL)?;
    game.round = Some(round);
    game.x_call = Some(x_call);
    game.o_call = Some(o_call);
    game.settle_call = Some(settle);
    table::save(ctx, &game);
    ctx.emit(
        "sealed_rps.round",
        json!({ "id": game.id, "round": round, "x_call": x_call, "o_call": o_call }),
    );
    Ok(())
}

fn seal_move(ctx: &mut dyn Ctx, sender: &str, op: &Value) -> Result<(), ActionError> {
    let mut game: Game = table::load(ctx, op)?;
    let seat = table::player_in_play(&game, sender)?;
    let round = game
        .round
        .ok_or_else(|| ActionError::Internal("a game in play has a round".into()))?;
    if ctx.height() >= round {
        return Err(ActionError::invalid("the round has come: moves are closed"));
    }
    let sealed = op_str(op, "sealed")?;
    let bytes = match hex::decode(sealed) {
        Ok(b) if b.len() == gamechain_sdk::schedule::SEALED_BYTES && !has_upper(sealed) => b,
        _ => {
            return Err(ActionError::invalid(
                "`sealed` must be 448 lowercase hex characters",
            ))
        }
    };
    let call = match seat {
        Mark::X => game.x_call,
        Mark::O => game.o_call,
    }
    .ok_or_else(|| ActionError::Internal("a game in play has its seats' calls".into()))?;
    ctx.seal(call, &bytes, seal_tag(&game.id, seat).as_bytes())?;
    match seat {
        Mark::X => game.x_sealed = true,
        Mark::O => game.o_sealed = true,
    }
    table::save(ctx, &game);
    ctx.emit("sealed_rps.sealed", json!({ "id": game.id, "seat": seat }));
    Ok(())
}

fn has_upper(s: &str) -> bool {
    s.bytes().any(|b| b.is_ascii_uppercase())
}

/// A seat's sealed call: records what its move opened to.
fn record_opening(
    ctx: &mut dyn Ctx,
    call: &ScheduledCall,
    opened: Unsealed,
) -> Result<(), ActionError> {
    let stale = || ActionError::invalid("stale opening");
    let tag = core::str::from_utf8(&call.payload).map_err(|_| stale())?;
    let (id, seat) = tag.rsplit_once('/').ok_or_else(stale)?;
    let mut game: Game = ctx.get_json(&table::game_key(id))?.ok_or_else(stale)?;
    let (seat, expected) = match seat {
        "x" => (Mark::X, game.x_call),
        "o" => (Mark::O, game.o_call),
        _ => return Err(stale()),
    };
    if game.status != Status::Playing || expected != Some(call.id) {
        return Err(stale());
    }
    let name = match opened {
        Unsealed::Opened(m) => move_name(m[0]),
        Unsealed::Void => "void",
    };
    match seat {
        Mark::X => game.x_move = Some(name.to_string()),
        Mark::O => game.o_move = Some(name.to_string()),
    }
    table::save(ctx, &game);
    ctx.emit(
        "sealed_rps.opened",
        json!({ "id": game.id, "seat": seat, "move": name }),
    );
    Ok(())
}

/// Which of two opened moves wins: `Some(true)` the first, `Some(false)` the second, `None` a
/// draw (equal moves, or both void). A void move loses to any valid one.
pub fn first_wins(a: &str, b: &str) -> Option<bool> {
    let beats = |p: &str, q: &str| {
        matches!(
            (p, q),
            ("rock", "scissors") | ("scissors", "paper") | ("paper", "rock")
        )
    };
    match (a == "void", b == "void") {
        (true, true) => None,
        (true, false) => Some(false),
        (false, true) => Some(true),
        (false, false) if a == b => None,
        (false, false) => Some(beats(a, b)),
    }
}

fn settle(ctx: &mut dyn Ctx, call: &ScheduledCall) -> Result<(), ActionError> {
    let stale = || ActionError::invalid("stale settle");
    let id = core::str::from_utf8(&call.payload).map_err(|_| stale())?;
    let mut game: Game = ctx.get_json(&table::game_key(id))?.ok_or_else(stale)?;
    if game.status != Status::Playing || game.settle_call != Some(call.id) {
        return Err(stale());
    }
    // The openings ran first in the round's block; a seat without one is void.
    let x = game.x_move.clone().unwrap_or_else(|| "void".into());
    let o = game.o_move.clone().unwrap_or_else(|| "void".into());
    game.x_move = Some(x.clone());
    game.o_move = Some(o.clone());
    ctx.emit(
        "sealed_rps.revealed",
        json!({ "id": game.id, "x_move": x, "o_move": o }),
    );
    let winner = first_wins(&x, &o).map(|x_wins| if x_wins { Mark::X } else { Mark::O });
    let reason = if winner.is_some() && (x == "void" || o == "void") {
        "void"
    } else {
        "reveal"
    };
    table::finish(ctx, game, winner, reason, &RULES)
}

#[cfg(test)]
mod tests;
