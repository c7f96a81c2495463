//! # The m,n,k game, with an optional GOLD stake and a hash-chained game log
//!
//! Seed `003_e100614d79d04bdb.txt`: two players take turns marking cells of a board of `rows` ×
//! `cols` chosen at create; the first with `k` marks in a row (horizontally, vertically or
//! diagonally) wins. Tic-tac-toe is `rows = cols = k = 3`; gomoku is 15, 15, 5. Stakes, escrow,
//! timeouts, events and views follow our tic-tac-toe (seed `000_a84a33e6fd262b23.txt`, sections
//! 2–4) with the seed-003 additions: cells as `{row, col}`, a `resign` op, and every start, move
//! and resignation appended to a per-game log whose records chain by SHA-256. Module id `mnk`,
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
//! - **`resign`** `{id}`: concede (seed 003: the only way to concede; silence is not).
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
//! ## The game log (seed 003)
//!
//! Each game keeps the seed's event chain: record `seq` 0 is X's `start` (written by `create`,
//! never carrying a move), then one record per `move` (X on odd seq, O on even) and a final
//! `resign` if a player resigns. A record is the JSON object
//! `{"game": <id>, "seq": n, "prevHash": h, "player": "X"|"O", "action": "start"|"move"|"resign",
//! "status": "in_progress"|"win"|"draw"}` plus `"move": {"row", "col"}` on moves and
//! `"protocol": "gamechain:mnk", "rules": {"rows", "cols", "winLength"}` on the start.
//! `prevHash` is the lowercase hex SHA-256 of the previous record's canonical JSON (keys sorted
//! at every level, no whitespace; the seed's JCS rule), `""` for the start. `status` is the
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
//!   out) among the first 50 `open/` keys, sorted by `created_height`.
//! - `?player=<address>`: `{"games":[…]}`, the first 50 games the address created or joined,
//!   sorted by `created_height`.
//! - no parameter: `{"game":"mnk","timeout_blocks":150,"max_stake":"100000","max_side":19}`.

use gamechain_sdk::prelude::*;
use sha2::{Digest, Sha256};

/// The module id: `action.game` and the state prefix `m/mnk/`.
pub const ID: &str = "mnk";
/// Blocks a player may take to move before the other player can claim the game.
pub const TIMEOUT_BLOCKS: u64 = 150;
/// Largest stake, in GOLD base units (1000 GOLD).
pub const MAX_STAKE: u128 = 100_000;
/// Largest `rows` and `cols` (a 19×19 go board).
pub const MAX_SIDE: u64 = 19;
/// The seed-003 `protocol` of the log's start record.
pub const PROTOCOL: &str = "gamechain:mnk";
/// Most keys a list view scans.
const LIST_LIMIT: usize = 50;
/// Most records one `?log=` view returns.
pub const LOG_PAGE: usize = 100;
/// The four line directions (row step, col step): across, down, and both diagonals.
const DIRECTIONS: [(i64, i64); 4] = [(0, 1), (1, 0), (1, 1), (1, -1)];

/// The module: `gamechain_sdk::export_module!(Mnk)` exports it as wasm.
#[derive(Debug, Clone, Copy, Default)]
pub struct Mnk;

/// A player's mark. Serialised as `"x"` / `"o"` (the log writes `"X"` / `"O"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mark {
    /// The creator; moves first.
    X,
    /// The joiner.
    O,
}

impl Mark {
    /// The opponent's mark.
    pub fn other(self) -> Mark {
        match self {
            Mark::X => Mark::O,
            Mark::O => Mark::X,
        }
    }

    /// The character on the board.
    pub fn as_char(self) -> char {
        match self {
            Mark::X => 'x',
            Mark::O => 'o',
        }
    }

    /// The seed-003 `player` of a log record: `"X"` / `"O"`.
    pub fn player(self) -> &'static str {
        match self {
            Mark::X => "X",
            Mark::O => "O",
        }
    }

    /// The game's `result` when this mark wins: `x_won` / `o_won`.
    pub fn won(self) -> &'static str {
        match self {
            Mark::X => "x_won",
            Mark::O => "o_won",
        }
    }
}

/// Where a game is in its life. Serialised in lowercase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Waiting for an opponent.
    Open,
    /// Both players seated.
    Playing,
    /// Won, drawn, resigned or timed out.
    Finished,
    /// Cancelled by the creator before anyone joined.
    Cancelled,
}

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
        if address == self.x {
            Some(Mark::X)
        } else if self.o.as_deref() == Some(address) {
            Some(Mark::O)
        } else {
            None
        }
    }

    /// The address playing `mark` (empty for `o` before anyone joined).
    pub fn address(&self, mark: Mark) -> &str {
        match mark {
            Mark::X => &self.x,
            Mark::O => self.o.as_deref().unwrap_or_default(),
        }
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

/// `game/<id>`: the game record.
pub fn game_key(id: &str) -> String {
    format!("game/{id}")
}

/// `open/<id>`: present while the game waits for an opponent.
pub fn open_key(id: &str) -> String {
    format!("open/{id}")
}

/// `player/<address>/<id>`: one per game the address created or joined.
pub fn player_key(address: &str, id: &str) -> String {
    format!("player/{address}/{id}")
}

/// `log/<id>/<seq>`: one log entry; `seq` zero-padded to 4 digits so keys sort by `seq`.
pub fn log_key(id: &str, seq: u32) -> String {
    format!("log/{id}/{seq:04}")
}

/// Lowercase hex SHA-256 of `record`'s canonical JSON: keys sorted at every level (serde_json's
/// map is a `BTreeMap`), no whitespace. Seed 003's `prevHash` rule for records of small integers
/// and ASCII strings.
pub fn record_hash(record: &Value) -> String {
    let bytes = serde_json::to_vec(record).expect("a JSON value always serialises");
    hex::encode(Sha256::digest(&bytes))
}

impl GameModule for Mnk {
    fn id(&self) -> &'static str {
        ID
    }

    fn apply(&self, ctx: &mut dyn Ctx, sender: &str, op: &Value) -> Result<(), ActionError> {
        match op_str(op, "kind")? {
            "create" => create(ctx, sender, op),
            "join" => join(ctx, sender, op),
            "move" => play(ctx, sender, op),
            "resign" => resign(ctx, sender, op),
            "cancel" => cancel(ctx, sender, op),
            "claim_timeout" => claim_timeout(ctx, sender, op),
            other => Err(ActionError::invalid(format!("unknown mnk op `{other}`"))),
        }
    }

    fn view(&self, state: &dyn StateRead, query: &Query) -> Result<Value, ActionError> {
        if let Some(id) = query.get("id") {
            return serde_json::to_value(view_game(state, id)?)
                .map_err(|e| ActionError::Internal(e.to_string()));
        }
        if let Some(id) = query.get("log") {
            return view_log(state, id, query.get("after").map(String::as_str));
        }
        if query.contains_key("open") {
            return list_games(state, "open/", |g| g.opponent.is_none());
        }
        if let Some(player) = query.get("player") {
            return list_games(state, &format!("player/{player}/"), |_| true);
        }
        Ok(json!({
            "game": ID,
            "timeout_blocks": TIMEOUT_BLOCKS,
            "max_stake": Amount(MAX_STAKE),
            "max_side": MAX_SIDE,
        }))
    }
}

gamechain_sdk::export_module!(Mnk);

/// The game named by the op's `id`; `not found: game <id>` when there is none.
fn load(ctx: &dyn Ctx, op: &Value) -> Result<Game, ActionError> {
    let id = op_str(op, "id")?;
    ctx.get_json::<Game>(&game_key(id))?
        .ok_or_else(|| ActionError::not_found(format!("game {id}")))
}

fn save(ctx: &mut dyn Ctx, game: &Game) {
    ctx.put_json(&game_key(&game.id), game);
}

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

/// Appends the seed-003 record `{game, seq, prevHash, player, action, status}` + `extra` to the
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
    let stake = op_amount_or_zero(op, "stake")?;
    if stake > MAX_STAKE {
        return Err(ActionError::invalid(format!(
            "stake is at most {MAX_STAKE} base units"
        )));
    }
    let opponent = match op.get("opponent") {
        None | Some(Value::Null) => None,
        Some(_) => Some(op_str(op, "opponent")?.to_string()),
    };
    if let Some(opponent) = &opponent {
        if opponent.is_empty() || opponent == sender {
            return Err(ActionError::invalid("opponent must be another address"));
        }
    }
    let id = ctx
        .txid()
        .get(..16)
        .ok_or_else(|| ActionError::Internal("txid is too short".into()))?
        .to_string();
    if ctx.get(&game_key(&id)).is_some() {
        return Err(ActionError::Conflict(format!("game {id} exists")));
    }

    if stake > 0 {
        ctx.escrow_in(sender, GOLD, stake)?;
    }
    let height = ctx.height();
    let mut game = Game {
        id: id.clone(),
        x: sender.to_string(),
        o: None,
        opponent,
        stake: Amount(stake),
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
    save(ctx, &game);
    ctx.put(&open_key(&id), b"1".to_vec());
    ctx.put(&player_key(sender, &id), b"1".to_vec());
    let data = json!({
        "id": id, "x": game.x, "stake": game.stake, "opponent": game.opponent,
        "rows": rows, "cols": cols, "k": k,
    });
    ctx.emit("mnk.created", data);
    Ok(())
}

fn join(ctx: &mut dyn Ctx, sender: &str, op: &Value) -> Result<(), ActionError> {
    let mut game = load(ctx, op)?;
    if game.status != Status::Open {
        return Err(ActionError::invalid("game is not open"));
    }
    if sender == game.x {
        return Err(ActionError::invalid("cannot join your own game"));
    }
    if game
        .opponent
        .as_deref()
        .is_some_and(|invited| invited != sender)
    {
        return Err(ActionError::unauthorized(
            "game is reserved for another player",
        ));
    }

    if game.stake.0 > 0 {
        ctx.escrow_in(sender, GOLD, game.stake.0)?;
    }
    game.o = Some(sender.to_string());
    game.status = Status::Playing;
    game.last_move_height = ctx.height();
    save(ctx, &game);
    ctx.delete(&open_key(&game.id));
    ctx.put(&player_key(sender, &game.id), b"1".to_vec());
    ctx.emit("mnk.joined", json!({ "id": game.id, "o": sender }));
    Ok(())
}

/// The sender's mark in a game in play: `invalid: game is not in play` /
/// `not allowed: not a player in this game`.
fn player_in_play(game: &Game, sender: &str) -> Result<Mark, ActionError> {
    if game.status != Status::Playing {
        return Err(ActionError::invalid("game is not in play"));
    }
    game.mark_of(sender)
        .ok_or_else(|| ActionError::unauthorized("not a player in this game"))
}

/// The `move` op (`move` is a Rust keyword).
fn play(ctx: &mut dyn Ctx, sender: &str, op: &Value) -> Result<(), ActionError> {
    let mut game = load(ctx, op)?;
    let mark = player_in_play(&game, sender)?;
    if mark != game.turn {
        return Err(ActionError::unauthorized("not your turn"));
    }
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
        finish(ctx, game, Some(mark), "line")
    } else if drawn {
        finish(ctx, game, None, "draw")
    } else {
        save(ctx, &game);
        Ok(())
    }
}

fn resign(ctx: &mut dyn Ctx, sender: &str, op: &Value) -> Result<(), ActionError> {
    let mut game = load(ctx, op)?;
    let mark = player_in_play(&game, sender)?;
    let (seq, hash) = log(ctx, &mut game, mark, "resign", "win", json!({}));
    ctx.emit(
        "mnk.resigned",
        json!({ "id": game.id, "by": sender, "seq": seq, "hash": hash }),
    );
    finish(ctx, game, Some(mark.other()), "resign")
}

fn cancel(ctx: &mut dyn Ctx, sender: &str, op: &Value) -> Result<(), ActionError> {
    let mut game = load(ctx, op)?;
    if sender != game.x {
        return Err(ActionError::unauthorized("only the creator can cancel"));
    }
    if game.status != Status::Open {
        return Err(ActionError::invalid("only an open game can be cancelled"));
    }

    if game.stake.0 > 0 {
        ctx.escrow_out(&game.x, GOLD, game.stake.0)?;
    }
    game.status = Status::Cancelled;
    game.result = Some("cancelled".to_string());
    game.reason = Some("cancelled".to_string());
    save(ctx, &game);
    ctx.delete(&open_key(&game.id));
    emit_finished(ctx, &game, game.stake.0);
    Ok(())
}

fn claim_timeout(ctx: &mut dyn Ctx, sender: &str, op: &Value) -> Result<(), ActionError> {
    let game = load(ctx, op)?;
    let mark = player_in_play(&game, sender)?;
    if mark == game.turn {
        return Err(ActionError::invalid("it is your turn"));
    }
    let due = game.last_move_height.saturating_add(TIMEOUT_BLOCKS);
    if ctx.height() < due {
        return Err(ActionError::invalid(format!(
            "timeout can be claimed from height {due}"
        )));
    }
    finish(ctx, game, Some(mark), "timeout")
}

/// Pay out, mark the game finished and emit `mnk.finished`. `winner` is `None` for a draw.
fn finish(
    ctx: &mut dyn Ctx,
    mut game: Game,
    winner: Option<Mark>,
    reason: &str,
) -> Result<(), ActionError> {
    let stake = game.stake.0;
    let payout = match winner {
        Some(mark) => {
            let address = game.address(mark).to_string();
            let pot = 2 * stake;
            if pot > 0 {
                ctx.escrow_out(&address, GOLD, pot)?;
            }
            game.winner = Some(address);
            game.result = Some(mark.won().to_string());
            pot
        }
        None => {
            if stake > 0 {
                ctx.escrow_out(game.address(Mark::X), GOLD, stake)?;
                ctx.escrow_out(game.address(Mark::O), GOLD, stake)?;
            }
            game.result = Some("draw".to_string());
            stake
        }
    };
    game.status = Status::Finished;
    game.reason = Some(reason.to_string());
    save(ctx, &game);
    emit_finished(ctx, &game, payout);
    Ok(())
}

/// `mnk.finished` for a game that has just ended; `payout` in base units.
fn emit_finished(ctx: &mut dyn Ctx, game: &Game, payout: u128) {
    let data = json!({
        "id": game.id,
        "result": game.result,
        "winner": game.winner,
        "reason": game.reason,
        "payout": Amount(payout),
    });
    ctx.emit("mnk.finished", data);
}

/// The game `id`, or `not found: game <id>`.
fn view_game(state: &dyn StateRead, id: &str) -> Result<Game, ActionError> {
    state
        .module_json::<Game>(ID, &game_key(id))?
        .ok_or_else(|| ActionError::not_found(format!("game {id}")))
}

/// `?log=<id>[&after=<seq>]`: up to [`LOG_PAGE`] log entries in `seq` order.
fn view_log(state: &dyn StateRead, id: &str, after: Option<&str>) -> Result<Value, ActionError> {
    let game = view_game(state, id)?;
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

/// Games whose ids are the last path segment of the keys under `m/mnk/<prefix>` (at most
/// [`LIST_LIMIT`] keys scanned), kept by `keep`, sorted by `created_height`.
fn list_games(
    state: &dyn StateRead,
    prefix: &str,
    keep: impl Fn(&Game) -> bool,
) -> Result<Value, ActionError> {
    let prefix = module_key(ID, prefix);
    let mut games = Vec::new();
    for (key, _) in state.scan_raw(&prefix, None, LIST_LIMIT) {
        if let Some(game) = state.module_json::<Game>(ID, &game_key(&key[prefix.len()..]))? {
            if keep(&game) {
                games.push(game);
            }
        }
    }
    games.sort_by_key(|g| g.created_height);
    Ok(json!({ "games": games }))
}
