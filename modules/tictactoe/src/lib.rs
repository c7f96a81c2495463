//! # Tic-tac-toe, with an optional GOLD stake
//!
//! The reference gamechain module (`docs/tictactoe.md`): two players, a 3×3 board, the creator
//! is `x` and moves first, the winner takes both stakes. Module id `tictactoe`. Amounts are GOLD
//! base units (2 decimals, `"100"` = 1.00 GOLD) as decimal strings.
//!
//! The table (the stake and opponent checks of `create`, `join`, `cancel`, `claim_timeout`, the
//! payouts and the `?id=`/`?open=`/`?player=` views) is `gamechain_sdk::table`, shared with the
//! m,n,k game; the board, `move` and the `tictactoe.created`/`tictactoe.moved` events are this
//! file's.
//!
//! ## Ops
//!
//! An op is the `op` of an action `{"type":"game","game":"tictactoe","op":{"kind":…}}`. Checks
//! run in the order listed; the first that fails is the op's error and nothing is written.
//!
//! Every op: `kind` missing or not a string → ``invalid: missing string field `kind` ``; an
//! unknown kind → ``invalid: unknown tictactoe op `<kind>` ``. Every op with an `id` loads the
//! game first: `id` missing or not a string → ``invalid: missing string field `id` ``; no such
//! game → `not found: game <id>`.
//!
//! - **`create`** `{stake?, opponent?}`. `stake`: decimal string of base units, default `"0"` (a
//!   free game). `opponent`: an invited address, or `null`/absent for anyone.
//!   1. `stake` not a string → ``invalid: missing string field `stake` ``; not a canonical
//!      decimal → ``invalid: `stake` must be a decimal string of base units``
//!   2. `stake` > 100000 → `invalid: stake is at most 100000 base units`
//!   3. `opponent` not a string → ``invalid: missing string field `opponent` ``; empty or the
//!      sender → `invalid: opponent must be another address`
//!   4. the game exists → `conflict: game <id> exists`
//!   5. the sender cannot pay → `insufficient GOLD: need <stake>, have <balance>`
//!
//!   Effect: game `<id>` = first 16 hex of the txid, status `open`, the creator plays `x`; the
//!   stake moves into escrow `module:tictactoe`; writes all three keys; emits `tictactoe.created`.
//! - **`join`** `{id}`.
//!   1. not `open` → `invalid: game is not open`
//!   2. the sender is `x` → `invalid: cannot join your own game`
//!   3. another address was invited → `not allowed: game is reserved for another player`
//!   4. the sender cannot pay the stake → `insufficient GOLD: need <stake>, have <balance>`
//!
//!   Effect: the sender plays `o`, status `playing`, `last_move_height` = now (the timeout clock
//!   starts); the same stake moves into escrow; `open/<id>` is deleted; emits `tictactoe.joined`.
//! - **`move`** `{id, cell}`. `cell`: a JSON number 0–8 (0 top-left, 8 bottom-right).
//!   1. not `playing` → `invalid: game is not in play`
//!   2. the sender is not `x` or `o` → `not allowed: not a player in this game`
//!   3. not the sender's turn → `not allowed: not your turn`
//!   4. `cell` missing or not a number 0–8 (the string `"1"` too) →
//!      ``invalid: `cell` must be a number from 0 to 8``
//!   5. the cell is occupied → `invalid: cell is taken`
//!
//!   Effect: the mark is placed, `moves` + 1, `last_move_height` = now, the turn passes; emits
//!   `tictactoe.moved`. A line finishes the game for the mover (`reason` `line`), else a full
//!   board finishes it as a draw (`reason` `draw`).
//! - **`cancel`** `{id}`.
//!   1. the sender is not `x` → `not allowed: only the creator can cancel`
//!   2. not `open` → `invalid: only an open game can be cancelled`
//!
//!   Effect: status `cancelled`, `result` and `reason` `cancelled`, the stake goes back to `x`,
//!   `open/<id>` is deleted; emits `tictactoe.finished` (`payout` = the stake).
//! - **`claim_timeout`** `{id}`.
//!   1. not `playing` → `invalid: game is not in play`
//!   2. the sender is not `x` or `o` → `not allowed: not a player in this game`
//!   3. it is the sender's turn → `invalid: it is your turn`
//!   4. height < `last_move_height` + 150 → `invalid: timeout can be claimed from height <h>`
//!
//!   Effect: the sender wins (`reason` `timeout`).
//!
//! Finishing: a winner receives both stakes (`result` `x_won`/`o_won`, `winner` set); a draw
//! gives each player its stake back (`result` `draw`); status `finished`; emits
//! `tictactoe.finished`. Every ending (line, draw, timeout, cancel) empties the game's escrow.
//!
//! ## State keys (under `m/tictactoe/`)
//!
//! | key | value |
//! |---|---|
//! | `game/<id>` | the game, JSON [`Game`] |
//! | `open/<id>` | `1` while the game waits for an opponent (deleted on join and cancel) |
//! | `player/<address>/<id>` | `1` for every game `<address>` created or joined |
//!
//! ## Events (kind: `data` fields)
//!
//! - `tictactoe.created`: `id`, `x` (the creator), `stake` (string), `opponent` (address or
//!   `null`)
//! - `tictactoe.joined`: `id`, `o` (the joiner)
//! - `tictactoe.moved`: `id`, `by` (the mover), `cell` (number), `board` (after the move),
//!   `turn` (`"x"`/`"o"`, who moves next)
//! - `tictactoe.finished`: `id`, `result` (`x_won`, `o_won`, `draw`, `cancelled`), `winner`
//!   (address or `null`), `reason` (`line`, `draw`, `timeout`, `cancelled`), `payout` (string:
//!   what the winner received, or what each player got back)
//!
//! ## Views (`GET /v1/games/tictactoe?…`)
//!
//! - `?id=<id>`: the game, JSON [`Game`] with every field (`null` when unset); else
//!   `not found: game <id>`.
//! - `?open=<any>`: `{"games":[…]}`, the games waiting for any opponent (invitations are left
//!   out) among one page of `open/` keys, sorted by `created_height`.
//! - `?player=<address>`: `{"games":[…]}`, one page of the games the address created or
//!   joined, sorted by `created_height`.
//! - Both lists page (`gamechain_sdk::table::list_view`): `&limit=<n>` keys per page (1 to 50,
//!   default 50) in game-id order, `&after=<id>` to start after a game id. A full page adds
//!   `"next":"<id>"`, the `after` of the next page; a shorter one has no `next`.
//! - no parameter: `{"game":"tictactoe","timeout_blocks":150,"max_stake":"100000"}`.
//!
//! ## Schema
//!
//! The ops, events and views above are declared once in `src/schema.rs` ([`SCHEMA`]), embedded
//! in the `.wasm` as the custom section `gamechain.schema` (`docs/modules.md`, "Schema").

use gamechain_sdk::prelude::*;
use gamechain_sdk::table::{self, NewTable, TableGame, TableRules};
pub use gamechain_sdk::table::{game_key, open_key, player_key, Mark, Status};

#[cfg(all(not(target_arch = "wasm32"), feature = "scenarios"))]
pub mod scenarios;
mod schema;
pub use schema::SCHEMA;

/// The module id: `action.game` and the state prefix `m/tictactoe/`.
pub const ID: &str = "tictactoe";
/// Blocks a player may take to move before the other player can claim the game.
pub const TIMEOUT_BLOCKS: u64 = 150;
/// Largest stake, in GOLD base units (1000 GOLD).
pub const MAX_STAKE: u128 = 100_000;
/// Most keys a list view scans.
const LIST_LIMIT: usize = 50;
/// The table this module seats its players at (`gamechain_sdk::table`).
pub const RULES: TableRules = TableRules {
    module: ID,
    joined_event: "tictactoe.joined",
    finished_event: "tictactoe.finished",
    timeout_blocks: TIMEOUT_BLOCKS,
    max_stake: MAX_STAKE,
    list_limit: LIST_LIMIT,
};
/// A board with no marks.
const EMPTY_BOARD: &str = ".........";
/// The eight winning lines, as cell indexes of the board
///
/// ```text
/// 0 1 2
/// 3 4 5
/// 6 7 8
/// ```
///
/// defined once in `lines.rs`, which the channel rules of `tictactoe_rules` compile in too.
mod lines;
use lines::LINES;

/// The module: `gamechain_sdk::export_module!(TicTacToe)` exports it as wasm.
#[derive(Debug, Clone, Copy, Default)]
pub struct TicTacToe;

/// One game, stored as JSON at `game/<id>` and returned by the views. Every field is always
/// present; unset optional fields are `null`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Game {
    /// The first 16 hex characters of the creating transaction's txid.
    pub id: String,
    /// The creator's address; plays `x`.
    pub x: String,
    /// The joiner's address; plays `o`. `null` while open.
    pub o: Option<String>,
    /// The only address that may join, when the creator invited one.
    pub opponent: Option<String>,
    /// Each player's stake in GOLD base units (`"0"` for a free game).
    pub stake: Amount,
    /// Nine characters, `.` empty, `x`/`o` marks; index 0 top-left, 8 bottom-right.
    pub board: String,
    /// Who moves next.
    pub turn: Mark,
    /// Life-cycle state.
    pub status: Status,
    /// The winner's address; `null` unless won.
    pub winner: Option<String>,
    /// `x_won`, `o_won`, `draw` or `cancelled`; `null` while not over.
    pub result: Option<String>,
    /// `line`, `draw`, `timeout` or `cancelled`; `null` while not over.
    pub reason: Option<String>,
    /// Height of the block that created the game.
    pub created_height: u64,
    /// Height of the last move (or of the join, or the creation).
    pub last_move_height: u64,
    /// Marks placed so far.
    pub moves: u32,
}

impl Game {
    /// The mark `address` plays in this game, if it is a player.
    pub fn mark_of(&self, address: &str) -> Option<Mark> {
        self.seats().mark_of(address)
    }

    /// The address playing `mark` (empty for `o` before anyone joined).
    pub fn address(&self, mark: Mark) -> &str {
        self.seats().address(mark)
    }

    /// The character at `cell` (0–8): `.`, `x` or `o`.
    pub fn cell(&self, cell: usize) -> char {
        self.board.as_bytes().get(cell).map_or('.', |&b| b as char)
    }

    /// Puts `mark` at `cell` (0–8).
    pub fn place(&mut self, cell: usize, mark: Mark) {
        self.board
            .replace_range(cell..cell + 1, mark.as_char().encode_utf8(&mut [0; 4]));
    }

    /// Whether `mark` holds one of the eight winning lines.
    pub fn has_line(&self, mark: Mark) -> bool {
        LINES
            .iter()
            .any(|line| line.iter().all(|&c| self.cell(c) == mark.as_char()))
    }

    /// Whether no cell is empty.
    pub fn is_full(&self) -> bool {
        !self.board.contains('.')
    }
}

gamechain_sdk::impl_table_game!(Game);

impl GameModule for TicTacToe {
    fn id(&self) -> &'static str {
        ID
    }

    fn apply(&self, ctx: &mut dyn Ctx, sender: &str, op: &Value) -> Result<(), ActionError> {
        match op_str(op, "kind")? {
            "create" => create(ctx, sender, op),
            "join" => table::join::<Game>(ctx, sender, op, &RULES),
            "move" => play(ctx, sender, op),
            "cancel" => table::cancel::<Game>(ctx, sender, op, &RULES),
            "claim_timeout" => table::claim_timeout::<Game>(ctx, sender, op, &RULES),
            other => Err(ActionError::invalid(format!(
                "unknown tictactoe op `{other}`"
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
        Ok(json!({ "game": ID, "timeout_blocks": TIMEOUT_BLOCKS, "max_stake": Amount(MAX_STAKE) }))
    }

    fn schema(&self) -> Option<&str> {
        Some(SCHEMA)
    }
}

#[rustfmt::skip] #[cfg(not(feature = "logic-only"))] gamechain_sdk::export_module!(TicTacToe, schema = SCHEMA);

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
        board: EMPTY_BOARD.to_string(),
        turn: Mark::X,
        status: Status::Open,
        winner: None,
        result: None,
        reason: None,
        created_height: height,
        last_move_height: height,
        moves: 0,
    };
    table::open_table(ctx, &game);
    ctx.emit(
        "tictactoe.created",
        json!({ "id": game.id, "x": game.x, "stake": game.stake, "opponent": game.opponent }),
    );
    Ok(())
}

/// The `move` op (`move` is a Rust keyword).
fn play(ctx: &mut dyn Ctx, sender: &str, op: &Value) -> Result<(), ActionError> {
    let mut game: Game = table::load(ctx, op)?;
    let mark = table::player_to_move(&game, sender)?;
    let cell = op
        .get("cell")
        .and_then(Value::as_u64)
        .filter(|&c| c <= 8)
        .ok_or_else(|| ActionError::invalid("`cell` must be a number from 0 to 8"))?
        as usize;
    if game.cell(cell) != '.' {
        return Err(ActionError::invalid("cell is taken"));
    }

    game.place(cell, mark);
    game.moves += 1;
    game.last_move_height = ctx.height();
    game.turn = mark.other();
    let data = json!({
        "id": game.id, "by": sender, "cell": cell, "board": game.board, "turn": game.turn,
    });
    ctx.emit("tictactoe.moved", data);

    if game.has_line(mark) {
        table::finish(ctx, game, Some(mark), "line", &RULES)
    } else if game.is_full() {
        table::finish(ctx, game, None, "draw", &RULES)
    } else {
        table::save(ctx, &game);
        Ok(())
    }
}
