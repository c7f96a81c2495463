//! # The m,n,k game, with an optional GOLD stake and a hash-chained game log
//!
//! `docs/mnk.md`: two players take turns marking cells of a board of `rows` × `cols` chosen at
//! create; the first with `k` marks in a row (horizontally, vertically or diagonally) wins.
//! Tic-tac-toe is `rows = cols = k = 3`; gomoku is 15, 15, 5. Stakes, escrow, timeouts, events
//! and views follow our tic-tac-toe (`docs/tictactoe.md`; the table is `gamechain_sdk::table`)
//! with these additions: cells as `{row, col}`, a `resign` op, and every start, move and
//! resignation appended to a per-game log whose records chain by SHA-256. Module id `mnk`,
//! installed by a `deploy` transaction (not at genesis). Amounts are GOLD base units (2
//! decimals, `"100"` = 1.00 GOLD) as decimal strings. Written only against the public SDK
//! (`gamechain-sdk`), as any third-party author would.
//!
//! ## Ops
//!
//! An op is the `op` of an action `{"type":"game","game":"mnk","op":{"kind":…}}`. Checks run in
//! the order listed; the first that fails is the op's error and nothing is written.
//!
//! Every op: `kind` missing or not a string → ``invalid: missing string field `kind` ``; an
//! unknown kind → ``invalid: unknown mnk op `<kind>` ``. Every op with an `id` loads the game
//! first: `id` missing or not a string → ``invalid: missing string field `id` ``; no such game →
//! `not found: game <id>`.
//!
//! - **`create`** `{rows, cols, k, stake?, opponent?}`. `rows`, `cols`: JSON numbers from 1 to
//!   19. `k`: a JSON number from 1 to the larger of `rows` and `cols` (a longer line could never
//!   fit). `stake`: decimal string of base units, default `"0"` (a free game). `opponent`: an
//!   invited address, or `null`/absent for anyone.
//!   1. `rows` missing or not a number 1–19 → ``invalid: `rows` must be a number from 1 to 19``
//!   2. `cols` likewise → ``invalid: `cols` must be a number from 1 to 19``
//!   3. `k` missing or not a number from 1 to max(rows, cols) →
//!      ``invalid: `k` must be a number from 1 to <max(rows, cols)>``
//!   4. `stake` not a string → ``invalid: missing string field `stake` ``; not a canonical
//!      decimal → ``invalid: `stake` must be a decimal string of base units``
//!   5. `stake` > 100000 → `invalid: stake is at most 100000 base units`
//!   6. `opponent` not a string → ``invalid: missing string field `opponent` ``; empty or the
//!      sender → `invalid: opponent must be another address`
//!   7. the game exists → `conflict: game <id> exists`
//!   8. the sender cannot pay → `insufficient GOLD: need <stake>, have <balance>`
//!
//!   Effect: game `<id>` = first 16 hex of the txid, status `open`, the creator plays `x`; the
//!   stake moves into escrow `module:mnk`; writes `game/`, `open/`, `player/` and the log's
//!   `start` record (seq 0); emits `mnk.created`.
//! - **`join`** `{id}`.
//!   1. not `open` → `invalid: game is not open`
//!   2. the sender is `x` → `invalid: cannot join your own game`
//!   3. another address was invited → `not allowed: game is reserved for another player`
//!   4. the sender cannot pay the stake → `insufficient GOLD: need <stake>, have <balance>`
//!
//!   Effect: the sender plays `o`, status `playing`, `last_move_height` = now (the timeout clock
//!   starts); the same stake moves into escrow; `open/<id>` is deleted; emits `mnk.joined`.
//! - **`move`** `{id, row, col}`. `row`, `col`: JSON numbers, 0-indexed from the top-left.
//!   1. not `playing` → `invalid: game is not in play`
//!   2. the sender is not `x` or `o` → `not allowed: not a player in this game`
//!   3. not the sender's turn → `not allowed: not your turn`
//!   4. `row` missing or not a number from 0 to rows − 1 (the string `"1"` too) →
//!      ``invalid: `row` must be a number from 0 to <rows − 1>``
//!   5. `col` likewise → ``invalid: `col` must be a number from 0 to <cols − 1>``
//!   6. the cell is occupied → `invalid: cell is taken`
//!
//!   Effect: the mark is placed, `moves` + 1, `last_move_height` = now, the turn passes, a
//!   `move` record is logged; emits `mnk.moved`. `k` in a row through the new mark finishes the
//!   game for the mover (`reason` `line`), else a full board finishes it as a draw (`reason`
//!   `draw`).
//! - **`resign`** `{id}`: concede (the only way to concede; silence is not).
//!   1. not `playing` → `invalid: game is not in play`
//!   2. the sender is not `x` or `o` → `not allowed: not a player in this game`
//!
//!   Effect: a `resign` record is logged; the other player wins (`reason` `resign`), on either
//!   player's turn.
//! - **`cancel`** `{id}`.
//!   1. the sender is not `x` → `not allowed: only the creator can cancel`
//!   2. not `open` → `invalid: only an open game can be cancelled`
//!
//!   Effect: status `cancelled`, `result` and `reason` `cancelled`, the stake goes back to `x`,
//!   `open/<id>` is deleted; emits `mnk.finished` (`payout` = the stake).
//! - **`claim_timeout`** `{id}`.
//!   1. not `playing` → `invalid: game is not in play`
//!   2. the sender is not `x` or `o` → `not allowed: not a player in this game`
//!   3. it is the sender's turn → `invalid: it is your turn`
//!   4. height < `last_move_height` + 150 → `invalid: timeout can be claimed from height <h>`
//!
//!   Effect: the sender wins (`reason` `timeout`).
//!
//! Finishing: a winner receives both stakes (`result` `x_won`/`o_won`, `winner` set); a draw
//! gives each player its stake back (`result` `draw`); status `finished`; emits `mnk.finished`.
//! Every ending (line, draw, resign, timeout, cancel) empties the game's escrow.
//!
//! ## The game log (`docs/mnk.md`, "The game log")
//!
//! Each game keeps a hash-chained log: record `seq` 0 is X's `start` (written by `create`,
//! never carrying a move), then one record per `move` (X on odd seq, O on even) and a final
//! `resign` if a player resigns. A record is the JSON object
//! `{"game": <id>, "seq": n, "prevHash": h, "player": "X"|"O", "action": "start"|"move"|"resign",
//! "status": "in_progress"|"win"|"draw"}` plus `"move": {"row", "col"}` on moves and
//! `"protocol": "gamechain:mnk", "rules": {"rows", "cols", "winLength"}` on the start.
//! `prevHash` is the lowercase hex SHA-256 of the previous record's canonical JSON (keys sorted
//! at every level, no whitespace; `docs/mnk.md`), `""` for the start. `status` is the
//! game after the record: `win` on the winning move and on a resignation (the resigner's
//! opponent won), `draw` on the move that fills the board. Timeouts and cancels are chain
//! endings, not log records. The game's `log_head` is the hash of its last record, so editing,
//! reordering or dropping any record breaks every later `prevHash` and the head.
//!
//! ## State keys (under `m/mnk/`)
//!
//! | key | value |
//! |---|---|
//! | `game/<id>` | the game, JSON [`Game`] |
//! | `open/<id>` | `1` while the game waits for an opponent (deleted on join and cancel) |
//! | `player/<address>/<id>` | `1` for every game `<address>` created or joined |
//! | `log/<id>/<seq>` | a log entry `{"event": <record>, "hash": <its SHA-256>}`, `seq` as 4 digits |
//!
//! ## Events (kind: `data` fields)
//!
//! - `mnk.created`: `id`, `x` (the creator), `stake` (string), `opponent` (address or `null`),
//!   `rows`, `cols`, `k` (numbers)
//! - `mnk.joined`: `id`, `o` (the joiner)
//! - `mnk.moved`: `id`, `by` (the mover), `row`, `col` (numbers), `board` (after the move),
//!   `turn` (`"x"`/`"o"`, who moves next), `seq` (the move's log record), `hash` (its hash)
//! - `mnk.resigned`: `id`, `by` (the resigner), `seq`, `hash`
//! - `mnk.finished`: `id`, `result` (`x_won`, `o_won`, `draw`, `cancelled`), `winner` (address
//!   or `null`), `reason` (`line`, `draw`, `resign`, `timeout`, `cancelled`), `payout` (string:
//!   what the winner received, or what each player got back)
//!
//! ## Views (`GET /v1/games/mnk?…`)
//!
//! - `?id=<id>`: the game, JSON [`Game`] with every field (`null` when unset); else
//!   `not found: game <id>`.
//! - `?log=<id>[&after=<seq>]`: `{"id", "head", "entries": [{"event", "hash"}, …]}`, the game's
//!   log records in `seq` order, at most 100, after record `after` when given; `head` is the
//!   game's `log_head`. Unknown game → `not found: game <id>`; `after` not a number →
//!   ``invalid: `after` must be a number``.
//! - `?open=<any>`: `{"games":[…]}`, the games waiting for any opponent (invitations are left
//!   out) among one page of `open/` keys, sorted by `created_height`.
//! - `?player=<address>`: `{"games":[…]}`, one page of the games the address created or
//!   joined, sorted by `created_height`.
//! - Both lists page (`gamechain_sdk::table::list_view`): `&limit=<n>` keys per page (1 to 50,
//!   default 50) in game-id order, `&after=<id>` to start after a game id. A full page adds
//!   `"next":"<id>"`, the `after` of the next page; a shorter one has no `next`.
//! - no parameter: `{"game":"mnk","timeout_blocks":150,"max_stake":"100000","max_side":19}`.
//!
//! ## Schema
//!
//! The ops, events and views above are declared once in `src/schema.rs` ([`SCHEMA`]), embedded
//! in the `.wasm` as the custom section `gamechain.schema` (`docs/modules.md`, "Schema").

use gamechain_sdk::prelude::*;
use gamechain_sdk::table::{self, NewTable, TableGame, TableRules};
pub use gamechain_sdk::table::{game_key, open_key, player_key, Mark, Status};
use sha2::{Digest, Sha256};

mod schema;
pub use schema::SCHEMA;

/// The module id: `action.game` and the state prefix `m/mnk/`.
pub const ID: &str = "mnk";
/// Blocks a player may take to move before the other player can claim the game.
pub const TIMEOUT_BLOCKS: u64 = 150;
/// Largest stake, in GOLD base units (1000 GOLD).
pub const MAX_STAKE: u128 = 100_000;
/// Largest `rows` and `cols` (a 19×19 go board).
pub const MAX_SIDE: u64 = 19;
/// The `protocol` of the log's start record (`docs/mnk.md`, "The game log").
pub const PROTOCOL: &str = "gamechain:mnk";
/// Most keys a list view scans.
const LIST_LIMIT: usize = 50;
/// The table this module seats its players at (`gamechain_sdk::table`).
pub const RULES: TableRules = TableRules {
    module: ID,
    joined_event: "mnk.joined",
    finished_event: "mnk.finished",
    timeout_blocks: TIMEOUT_BLOCKS,
    max_stake: MAX_STAKE,
    list_limit: LIST_LIMIT,
};
/// Most records one `?log=` view returns.
pub const LOG_PAGE: usize = 100;
/// The four line directions (row step, col step): across, down, and both diagonals.
const DIRECTIONS: [(i64, i64); 4] = [(0, 1), (1, 0), (1, 1), (1, -1)];

/// The module: `gamechain_sdk::export_module!(Mnk)` exports it as wasm.
#[derive(Debug, Clone, Copy, Default)]
pub struct Mnk;

/// A cell, 0-indexed from the top-left. JSON `{"row": r, "col": c}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cell {
    /// 0 is the top row.
    pub row: u32,
    /// 0 is the left column.
    pub col: u32,
}

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
    /// Board height, 1–19.
    pub rows: u32,
    /// Board width, 1–19.
    pub cols: u32,
    /// Marks in a row that win, 1 to max(rows, cols).
    pub k: u32,
    /// `rows × cols` characters row by row, `.` empty, `x`/`o` marks; index `row * cols + col`.
    pub board: String,
    /// Who moves next.
    pub turn: Mark,
    /// Life-cycle state.
    pub status: Status,
    /// The winner's address; `null` unless won.
    pub winner: Option<String>,
    /// `x_won`, `o_won`, `draw` or `cancelled`; `null` while not over.
    pub result: Option<String>,
    /// `line`, `draw`, `resign`, `timeout` or `cancelled`; `null` while not over.
    pub reason: Option<String>,
    /// Height of the block that created the game.
    pub created_height: u64,
    /// Height of the last move (or of the join, or the creation).
    pub last_move_height: u64,
    /// Marks placed so far.
    pub moves: u32,
    /// The last mark placed; `null` before the first move.
    pub last_move: Option<Cell>,
    /// Records in the game log (the next record's `seq`).
    pub log_len: u32,
    /// Lowercase hex SHA-256 of the last log record (the next record's `prevHash`).
    pub log_head: String,
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

    /// The character at (`row`, `col`): `.`, `x` or `o`; `.` outside the board.
    pub fn cell(&self, row: i64, col: i64) -> char {
        if row < 0 || col < 0 || row >= i64::from(self.rows) || col >= i64::from(self.cols) {
            return '.';
        }
        let index = (row * i64::from(self.cols) + col) as usize;
        self.board.as_bytes().get(index).map_or('.', |&b| b as char)
    }

    /// Puts `mark` at `cell` (inside the board).
    pub fn place(&mut self, cell: Cell, mark: Mark) {
        let index = (cell.row * self.cols + cell.col) as usize;
        self.board
            .replace_range(index..index + 1, mark.as_char().encode_utf8(&mut [0; 4]));
    }

    /// Whether the mark at `cell` is part of `k` or more same marks in a row in any of the four
    /// directions.
    pub fn line_through(&self, cell: Cell) -> bool {
        let (row, col) = (i64::from(cell.row), i64::from(cell.col));
        let mark = self.cell(row, col);
        if mark == '.' {
            return false;
        }
        let run = |dr: i64, dc: i64| {
            (1..)
                .take_while(|&n| self.cell(row + n * dr, col + n * dc) == mark)
                .count()
        };
        DIRECTIONS
            .iter()
            .any(|&(dr, dc)| 1 + run(dr, dc) + run(-dr, -dc) >= self.k as usize)
    }

    /// Whether no cell is empty.
    pub fn is_full(&self) -> bool {
        !self.board.contains('.')
    }
}

/// `log/<id>/<seq>`: one log entry; `seq` zero-padded to 4 digits so keys sort by `seq`.
pub fn log_key(id: &str, seq: u32) -> String {
    format!("log/{id}/{seq:04}")
}

/// Lowercase hex SHA-256 of `record`'s canonical JSON: keys sorted at every level (serde_json's
/// map is a `BTreeMap`), no whitespace. The `prevHash` rule of `docs/mnk.md` for records of small
/// integers and ASCII strings.
pub fn record_hash(record: &Value) -> String {
    let bytes = serde_json::to_vec(record).expect("a JSON value always serialises");
    hex::encode(Sha256::digest(&bytes))
}

gamechain_sdk::impl_table_game!(Game);

impl GameModule for Mnk {
    fn id(&self) -> &'static str {
        ID
    }

    fn apply(&self, ctx: &mut dyn Ctx, sender: &str, op: &Value) -> Result<(), ActionError> {
        match op_str(op, "kind")? {
            "create" => create(ctx, sender, op),
            "join" => table::join::<Game>(ctx, sender, op, &RULES),
            "move" => play(ctx, sender, op),
            "resign" => resign(ctx, sender, op),
            "cancel" => table::cancel::<Game>(ctx, sender, op, &RULES),
            "claim_timeout" => table::claim_timeout::<Game>(ctx, sender, op, &RULES),
            other => Err(ActionError::invalid(format!("unknown mnk op `{other}`"))),
        }
    }

    fn view(&self, state: &dyn StateRead, query: &Query) -> Result<Value, ActionError> {
        if let Some(id) = query.get("id") {
            let game: Game = table::view_game(state, &RULES, id)?;
            return serde_json::to_value(&game).map_err(|e| ActionError::Internal(e.to_string()));
        }
        if let Some(id) = query.get("log") {
            return view_log(state, id, query.get("after").map(String::as_str));
        }
        if let Some(list) = table::list_view::<Game>(state, &RULES, query) {
            return list;
        }
        Ok(json!({
            "game": ID,
            "timeout_blocks": TIMEOUT_BLOCKS,
            "max_stake": Amount(MAX_STAKE),
            "max_side": MAX_SIDE,
        }))
    }

    fn schema(&self) -> Option<&str> {
        Some(SCHEMA)
    }
}

gamechain_sdk::export_module!(Mnk, schema = SCHEMA);

/// The op's `field` as a JSON number from `min` to `max`, else
/// ``invalid: `<field>` must be a number from <min> to <max>``.
fn op_number(op: &Value, field: &str, min: u64, max: u64) -> Result<u32, ActionError> {
    op.get(field)
        .and_then(Value::as_u64)
        .filter(|n| (min..=max).contains(n))
        .map(|n| n as u32)
        .ok_or_else(|| {
            ActionError::invalid(format!("`{field}` must be a number from {min} to {max}"))
        })
}

/// Appends the log record `{game, seq, prevHash, player, action, status}` + `extra` to the
/// game's log and advances `log_len` / `log_head`. Returns the record's `(seq, hash)`.
fn log(
    ctx: &mut dyn Ctx,
    game: &mut Game,
    mark: Mark,
    action: &str,
    status: &str,
    extra: Value,
) -> (u32, String) {
    let seq = game.log_len;
    let mut record = json!({
        "game": game.id,
        "seq": seq,
        "prevHash": game.log_head,
        "player": mark.player(),
        "action": action,
        "status": status,
    });
    if let (Some(record), Value::Object(extra)) = (record.as_object_mut(), extra) {
        record.extend(extra);
    }
    let hash = record_hash(&record);
    ctx.put_json(
        &log_key(&game.id, seq),
        &json!({ "event": record, "hash": hash }),
    );
    game.log_len += 1;
    game.log_head = hash.clone();
    (seq, hash)
}

fn create(ctx: &mut dyn Ctx, sender: &str, op: &Value) -> Result<(), ActionError> {
    let rows = op_number(op, "rows", 1, MAX_SIDE)?;
    let cols = op_number(op, "cols", 1, MAX_SIDE)?;
    let k = op_number(op, "k", 1, u64::from(rows.max(cols)))?;
    let NewTable {
        id,
        x,
        opponent,
        stake,
        height,
    } = table::new_table(ctx, sender, op, &RULES)?;
    let mut game = Game {
        id,
        x,
        o: None,
        opponent,
        stake,
        rows,
        cols,
        k,
        board: ".".repeat((rows * cols) as usize),
        turn: Mark::X,
        status: Status::Open,
        winner: None,
        result: None,
        reason: None,
        created_height: height,
        last_move_height: height,
        moves: 0,
        last_move: None,
        log_len: 0,
        log_head: String::new(),
    };
    let rules = json!({
        "protocol": PROTOCOL,
        "rules": { "rows": rows, "cols": cols, "winLength": k },
    });
    log(ctx, &mut game, Mark::X, "start", "in_progress", rules);
    table::open_table(ctx, &game);
    let data = json!({
        "id": game.id, "x": game.x, "stake": game.stake, "opponent": game.opponent,
        "rows": rows, "cols": cols, "k": k,
    });
    ctx.emit("mnk.created", data);
    Ok(())
}

/// The `move` op (`move` is a Rust keyword).
fn play(ctx: &mut dyn Ctx, sender: &str, op: &Value) -> Result<(), ActionError> {
    let mut game: Game = table::load(ctx, op)?;
    let mark = table::player_to_move(&game, sender)?;
    let row = op_number(op, "row", 0, u64::from(game.rows) - 1)?;
    let col = op_number(op, "col", 0, u64::from(game.cols) - 1)?;
    if game.cell(i64::from(row), i64::from(col)) != '.' {
        return Err(ActionError::invalid("cell is taken"));
    }

    let cell = Cell { row, col };
    game.place(cell, mark);
    game.moves += 1;
    game.last_move = Some(cell);
    game.last_move_height = ctx.height();
    game.turn = mark.other();
    let won = game.line_through(cell);
    let drawn = !won && game.is_full();
    let status = match (won, drawn) {
        (true, _) => "win",
        (_, true) => "draw",
        _ => "in_progress",
    };
    let (seq, hash) = log(
        ctx,
        &mut game,
        mark,
        "move",
        status,
        json!({ "move": cell }),
    );
    let data = json!({
        "id": game.id, "by": sender, "row": row, "col": col, "board": game.board,
        "turn": game.turn, "seq": seq, "hash": hash,
    });
    ctx.emit("mnk.moved", data);

    if won {
        table::finish(ctx, game, Some(mark), "line", &RULES)
    } else if drawn {
        table::finish(ctx, game, None, "draw", &RULES)
    } else {
        table::save(ctx, &game);
        Ok(())
    }
}

fn resign(ctx: &mut dyn Ctx, sender: &str, op: &Value) -> Result<(), ActionError> {
    let mut game: Game = table::load(ctx, op)?;
    let mark = table::player_in_play(&game, sender)?;
    let (seq, hash) = log(ctx, &mut game, mark, "resign", "win", json!({}));
    ctx.emit(
        "mnk.resigned",
        json!({ "id": game.id, "by": sender, "seq": seq, "hash": hash }),
    );
    table::finish(ctx, game, Some(mark.other()), "resign", &RULES)
}

/// `?log=<id>[&after=<seq>]`: up to [`LOG_PAGE`] log entries in `seq` order.
fn view_log(state: &dyn StateRead, id: &str, after: Option<&str>) -> Result<Value, ActionError> {
    let game: Game = table::view_game(state, &RULES, id)?;
    let after = match after {
        None => None,
        Some(text) => Some(
            text.parse::<u32>()
                .map_err(|_| ActionError::invalid("`after` must be a number"))?,
        ),
    };
    let prefix = module_key(ID, &format!("log/{id}/"));
    let start_after = after.map(|seq| module_key(ID, &log_key(id, seq)));
    let mut entries = Vec::new();
    for (key, bytes) in state.scan_raw(&prefix, start_after.as_deref(), LOG_PAGE) {
        let entry: Value = serde_json::from_slice(&bytes).map_err(|e| {
            ActionError::internal(format!("stored value at `{key}` is not valid: {e}"))
        })?;
        entries.push(entry);
    }
    Ok(json!({ "id": id, "head": game.log_head, "entries": entries }))
}
