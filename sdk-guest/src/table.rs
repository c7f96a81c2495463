//! The staked two-player table: the life of a game that two players sit at for a GOLD stake,
//! written once for every module that has one (tic-tac-toe, m,n,k). Owns the seats ([`Mark`]),
//! the life cycle ([`Status`]), the state key layout (`game/`, `open/`, `player/`), escrow in on
//! create and join, the invited-opponent and join-stake checks, cancel (refund while open),
//! claim_timeout (a timeout in blocks), the payout at the end (winner takes both stakes, a draw
//! refunds both) and the `?id=`, `?open=` and `?player=` views. What happens between join and
//! finish (the board, the moves, a log) stays in the module.
//!
//! The rules and every error text are those of `docs/tictactoe.md` ("Checks", "Payouts",
//! "Timeout", "Views"); `docs/mnk.md` uses the same table. A module:
//!
//! 1. keeps its own `Game` record (its JSON layout is the module's) and implements
//!    [`TableGame`] for it, which lends the helper the shared fields;
//! 2. describes itself in one [`TableRules`] constant (module id, event kinds, timeout, limits);
//! 3. in `create`, runs its own checks, then [`new_table`] (stake, opponent, id, escrow), builds
//!    its `Game` from the [`NewTable`], [`open_table`] writes the keys, and it emits its own
//!    `<module>.created`;
//! 4. delegates `join`, `cancel` and `claim_timeout` to [`join`], [`cancel`], [`claim_timeout`];
//! 5. in `move`, starts with [`player_to_move`] and ends with [`finish`] or [`save`].
//!
//! Amounts are GOLD base units (`u128`, 2 decimals: `100` = 1.00 GOLD); heights are block
//! heights. Each function either fails before writing anything or succeeds, so a failing op
//! leaves no writes and no events even outside the chain's rollback.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::keys::{module_key, GOLD};
use crate::{
    op_amount_or_zero, op_str, ActionError, Amount, Ctx, CtxExt, Query, StateRead, StateReadExt,
};

/// A player's seat. Serialised as `"x"` / `"o"`.
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

    /// The character on a board: `'x'` / `'o'`.
    pub fn as_char(self) -> char {
        match self {
            Mark::X => 'x',
            Mark::O => 'o',
        }
    }

    /// The upper-case letter, `"X"` / `"O"` (the `player` of an m,n,k log record).
    pub fn player(self) -> &'static str {
        match self {
            Mark::X => "X",
            Mark::O => "O",
        }
    }

    /// The game's `result` when this mark wins: `"x_won"` / `"o_won"`.
    pub fn won(self) -> &'static str {
        match self {
            Mark::X => "x_won",
            Mark::O => "o_won",
        }
    }
}

/// Where a game is in its life. Serialised in lowercase: `"open"`, `"playing"`, `"finished"`,
/// `"cancelled"`.
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

/// What distinguishes one module's table from another's. Error texts are the same for every
/// module; event kinds and limits are not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableRules {
    /// The module id: the state prefix `m/<module>/` the views read under.
    pub module: &'static str,
    /// Event kind emitted by [`join`], e.g. `"tictactoe.joined"`.
    pub joined_event: &'static str,
    /// Event kind emitted by [`cancel`] and [`finish`], e.g. `"tictactoe.finished"`.
    pub finished_event: &'static str,
    /// Blocks the player to move may take before the other can [`claim_timeout`].
    pub timeout_blocks: u64,
    /// Largest stake, in GOLD base units.
    pub max_stake: u128,
    /// Most keys one `?open=` / `?player=` view scans.
    pub list_limit: usize,
}

/// The shared fields of a game, read-only (borrowed from the module's record by
/// [`TableGame::seats`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seats<'a> {
    /// The game id: the first 16 hex characters of the creating txid.
    pub id: &'a str,
    /// The creator's address; plays `x`.
    pub x: &'a str,
    /// The joiner's address; plays `o`. `None` while open.
    pub o: Option<&'a str>,
    /// The only address that may join, when the creator invited one.
    pub opponent: Option<&'a str>,
    /// Each player's stake, GOLD base units.
    pub stake: u128,
    /// Who moves next.
    pub turn: Mark,
    /// Life-cycle state.
    pub status: Status,
    /// The winner's address; `None` unless won.
    pub winner: Option<&'a str>,
    /// `x_won`, `o_won`, `draw` or `cancelled`; `None` while not over.
    pub result: Option<&'a str>,
    /// Why the game ended; `None` while not over.
    pub reason: Option<&'a str>,
    /// Height of the block that created the game.
    pub created_height: u64,
    /// Height of the last move (or of the join, or the creation): the timeout clock.
    pub last_move_height: u64,
}

impl<'a> Seats<'a> {
    /// The mark `address` plays in this game, if it is a player.
    pub fn mark_of(&self, address: &str) -> Option<Mark> {
        if address == self.x {
            Some(Mark::X)
        } else if self.o == Some(address) {
            Some(Mark::O)
        } else {
            None
        }
    }

    /// The address playing `mark` (empty for `o` before anyone joined).
    pub fn address(&self, mark: Mark) -> &'a str {
        match mark {
            Mark::X => self.x,
            Mark::O => self.o.unwrap_or_default(),
        }
    }
}

/// The shared fields the helper writes, borrowed mutably by [`TableGame::seats_mut`].
#[derive(Debug)]
pub struct SeatsMut<'a> {
    /// The joiner's address (set by [`join`]).
    pub o: &'a mut Option<String>,
    /// Life-cycle state.
    pub status: &'a mut Status,
    /// The winner's address (set by [`finish`] when someone won).
    pub winner: &'a mut Option<String>,
    /// `x_won`, `o_won`, `draw` or `cancelled` once over.
    pub result: &'a mut Option<String>,
    /// Why the game ended (`line`, `draw`, `timeout`, `cancelled`, or the module's own).
    pub reason: &'a mut Option<String>,
    /// The timeout clock (set by [`join`]).
    pub last_move_height: &'a mut u64,
}

/// A module's game record, stored as JSON at `game/<id>`. The record keeps its own layout; this
/// trait lends the helper the fields every table has.
pub trait TableGame: Serialize + DeserializeOwned {
    /// The shared fields, read-only.
    fn seats(&self) -> Seats<'_>;
    /// The shared fields the helper updates.
    fn seats_mut(&mut self) -> SeatsMut<'_>;
}

/// Implements [`TableGame`] for a game record struct whose shared fields carry the helper's
/// names and types: `id: String`, `x: String`, `o: Option<String>`, `opponent: Option<String>`,
/// `stake: Amount`, `turn: Mark`, `status: Status`, `winner`, `result`, `reason`:
/// `Option<String>`, `created_height: u64`, `last_move_height: u64`. Any other field is the
/// module's own. Use `impl TableGame` by hand for another layout.
///
/// ```
/// use gamechain_sdk::table::{Mark, Status, TableGame};
/// use gamechain_sdk::Amount;
///
/// #[derive(serde::Serialize, serde::Deserialize)]
/// struct Game {
///     id: String, x: String, o: Option<String>, opponent: Option<String>, stake: Amount,
///     turn: Mark, status: Status, winner: Option<String>, result: Option<String>,
///     reason: Option<String>, created_height: u64, last_move_height: u64,
///     board: String,
/// }
/// gamechain_sdk::impl_table_game!(Game);
/// ```
#[macro_export]
macro_rules! impl_table_game {
    ($game:ty) => {
        impl $crate::table::TableGame for $game {
            fn seats(&self) -> $crate::table::Seats<'_> {
                $crate::table::Seats {
                    id: &self.id,
                    x: &self.x,
                    o: self.o.as_deref(),
                    opponent: self.opponent.as_deref(),
                    stake: self.stake.0,
                    turn: self.turn,
                    status: self.status,
                    winner: self.winner.as_deref(),
                    result: self.result.as_deref(),
                    reason: self.reason.as_deref(),
                    created_height: self.created_height,
                    last_move_height: self.last_move_height,
                }
            }

            fn seats_mut(&mut self) -> $crate::table::SeatsMut<'_> {
                $crate::table::SeatsMut {
                    o: &mut self.o,
                    status: &mut self.status,
                    winner: &mut self.winner,
                    result: &mut self.result,
                    reason: &mut self.reason,
                    last_move_height: &mut self.last_move_height,
                }
            }
        }
    };
}

/// `game/<id>`: the game record.
pub fn game_key(id: &str) -> String {
    format!("game/{id}")
}

/// `open/<id>`: `1` while the game waits for an opponent.
pub fn open_key(id: &str) -> String {
    format!("open/{id}")
}

/// `player/<address>/<id>`: `1` for every game `<address>` created or joined.
pub fn player_key(address: &str, id: &str) -> String {
    format!("player/{address}/{id}")
}

/// A table [`new_table`] has checked and paid for; the module builds its record from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewTable {
    /// The game id: the first 16 hex characters of the txid.
    pub id: String,
    /// The creator (the sender); plays `x`.
    pub x: String,
    /// The invited opponent, if any.
    pub opponent: Option<String>,
    /// Each player's stake, GOLD base units (already in escrow for the creator).
    pub stake: Amount,
    /// The current height: the game's `created_height` and first `last_move_height`.
    pub height: u64,
}

/// The table part of `create` `{stake?, opponent?}`, after the module's own checks. In order:
///
/// 1. `stake` not a string → ``invalid: missing string field `stake` ``; not a canonical decimal
///    → ``invalid: `stake` must be a decimal string of base units``; absent means 0
/// 2. `stake` > `rules.max_stake` → `invalid: stake is at most <max_stake> base units`
/// 3. `opponent` (absent or `null` for anyone) not a string →
///    ``invalid: missing string field `opponent` ``; empty or the sender →
///    `invalid: opponent must be another address`
/// 4. `game/<id>` exists → `conflict: game <id> exists` (`id` = first 16 hex of the txid)
/// 5. the sender cannot pay → `insufficient GOLD: need <stake>, have <balance>`
///
/// On success the stake (if not 0) is in the module's escrow and nothing else is written: the
/// module builds its record and calls [`open_table`].
pub fn new_table(
    ctx: &mut dyn Ctx,
    sender: &str,
    op: &Value,
    rules: &TableRules,
) -> Result<NewTable, ActionError> {
    let stake = op_amount_or_zero(op, "stake")?;
    if stake > rules.max_stake {
        return Err(ActionError::invalid(format!(
            "stake is at most {} base units",
            rules.max_stake
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
    Ok(NewTable {
        id,
        x: sender.to_string(),
        opponent,
        stake: Amount(stake),
        height: ctx.height(),
    })
}

/// Writes a newly created game: `game/<id>`, `open/<id>` and `player/<x>/<id>`. Emits nothing
/// (the module's `<module>.created` carries module fields).
pub fn open_table<G: TableGame>(ctx: &mut dyn Ctx, game: &G) {
    save(ctx, game);
    let seats = game.seats();
    ctx.put(&open_key(seats.id), b"1".to_vec());
    ctx.put(&player_key(seats.x, seats.id), b"1".to_vec());
}

/// The game named by the op's `id`: ``invalid: missing string field `id` `` when `id` is
/// missing or not a string; `not found: game <id>` when there is no such game.
pub fn load<G: TableGame>(ctx: &dyn Ctx, op: &Value) -> Result<G, ActionError> {
    let id = op_str(op, "id")?;
    ctx.get_json::<G>(&game_key(id))?
        .ok_or_else(|| ActionError::not_found(format!("game {id}")))
}

/// Stores `game` at `game/<id>`.
pub fn save<G: TableGame>(ctx: &mut dyn Ctx, game: &G) {
    ctx.put_json(&game_key(game.seats().id), game);
}

/// The `join` op `{id}`. After [`load`], in order:
///
/// 1. not `open` → `invalid: game is not open`
/// 2. the sender is `x` → `invalid: cannot join your own game`
/// 3. another address was invited → `not allowed: game is reserved for another player`
/// 4. the sender cannot pay the stake → `insufficient GOLD: need <stake>, have <balance>`
///
/// Effect: the sender plays `o`, status `playing`, `last_move_height` = now (the timeout clock
/// starts); the stake moves into escrow; `open/<id>` is deleted, `player/<sender>/<id>` written;
/// emits `rules.joined_event` `{id, o}`.
pub fn join<G: TableGame>(
    ctx: &mut dyn Ctx,
    sender: &str,
    op: &Value,
    rules: &TableRules,
) -> Result<(), ActionError> {
    let mut game: G = load(ctx, op)?;
    let seats = game.seats();
    if seats.status != Status::Open {
        return Err(ActionError::invalid("game is not open"));
    }
    if sender == seats.x {
        return Err(ActionError::invalid("cannot join your own game"));
    }
    if seats.opponent.is_some_and(|invited| invited != sender) {
        return Err(ActionError::unauthorized(
            "game is reserved for another player",
        ));
    }
    if seats.stake > 0 {
        ctx.escrow_in(sender, GOLD, seats.stake)?;
    }
    let height = ctx.height();
    let seats = game.seats_mut();
    *seats.o = Some(sender.to_string());
    *seats.status = Status::Playing;
    *seats.last_move_height = height;
    save(ctx, &game);
    let id = game.seats().id;
    ctx.delete(&open_key(id));
    ctx.put(&player_key(sender, id), b"1".to_vec());
    ctx.emit(rules.joined_event, json!({ "id": id, "o": sender }));
    Ok(())
}

/// The sender's mark in a game in play: `invalid: game is not in play` when the status is not
/// `playing`; `not allowed: not a player in this game` when the sender is neither `x` nor `o`.
pub fn player_in_play<G: TableGame>(game: &G, sender: &str) -> Result<Mark, ActionError> {
    let seats = game.seats();
    if seats.status != Status::Playing {
        return Err(ActionError::invalid("game is not in play"));
    }
    seats
        .mark_of(sender)
        .ok_or_else(|| ActionError::unauthorized("not a player in this game"))
}

/// [`player_in_play`], then `not allowed: not your turn` unless it is the sender's turn: the
/// first three checks of every `move`.
pub fn player_to_move<G: TableGame>(game: &G, sender: &str) -> Result<Mark, ActionError> {
    let mark = player_in_play(game, sender)?;
    if mark != game.seats().turn {
        return Err(ActionError::unauthorized("not your turn"));
    }
    Ok(mark)
}

/// The `cancel` op `{id}`. After [`load`], in order:
///
/// 1. the sender is not `x` → `not allowed: only the creator can cancel`
/// 2. not `open` → `invalid: only an open game can be cancelled`
///
/// Effect: status `cancelled`, `result` and `reason` `cancelled`, the stake goes back to `x`,
/// `open/<id>` is deleted; emits `rules.finished_event` with `payout` = the stake.
pub fn cancel<G: TableGame>(
    ctx: &mut dyn Ctx,
    sender: &str,
    op: &Value,
    rules: &TableRules,
) -> Result<(), ActionError> {
    let mut game: G = load(ctx, op)?;
    let seats = game.seats();
    if sender != seats.x {
        return Err(ActionError::unauthorized("only the creator can cancel"));
    }
    if seats.status != Status::Open {
        return Err(ActionError::invalid("only an open game can be cancelled"));
    }
    let stake = seats.stake;
    if stake > 0 {
        ctx.escrow_out(seats.x, GOLD, stake)?;
    }
    let seats = game.seats_mut();
    *seats.status = Status::Cancelled;
    *seats.result = Some("cancelled".to_string());
    *seats.reason = Some("cancelled".to_string());
    save(ctx, &game);
    ctx.delete(&open_key(game.seats().id));
    emit_finished(ctx, &game, stake, rules);
    Ok(())
}

/// The `claim_timeout` op `{id}`. After [`load`], in order:
///
/// 1. not `playing` → `invalid: game is not in play`
/// 2. the sender is neither `x` nor `o` → `not allowed: not a player in this game`
/// 3. it is the sender's turn → `invalid: it is your turn`
/// 4. height < `last_move_height` + `rules.timeout_blocks` →
///    `invalid: timeout can be claimed from height <last_move_height + timeout_blocks>`
///
/// Effect: the sender wins, [`finish`] with reason `timeout`.
pub fn claim_timeout<G: TableGame>(
    ctx: &mut dyn Ctx,
    sender: &str,
    op: &Value,
    rules: &TableRules,
) -> Result<(), ActionError> {
    let game: G = load(ctx, op)?;
    let mark = player_in_play(&game, sender)?;
    let seats = game.seats();
    if mark == seats.turn {
        return Err(ActionError::invalid("it is your turn"));
    }
    let due = seats.last_move_height.saturating_add(rules.timeout_blocks);
    if ctx.height() < due {
        return Err(ActionError::invalid(format!(
            "timeout can be claimed from height {due}"
        )));
    }
    finish(ctx, game, Some(mark), "timeout", rules)
}

/// Ends a game in play and pays out. `winner` `Some(mark)`: that player receives both stakes
/// (`2 × stake`), `result` `x_won`/`o_won`, `winner` = its address. `None`: a draw, each player
/// gets its stake back, `result` `draw`. Then status `finished`, `reason` = `reason`, the game is
/// saved and `rules.finished_event` `{id, result, winner, reason, payout}` is emitted (`payout`:
/// what the winner received, or what each player got back, as a decimal string). The escrow of
/// the game is empty afterwards; errors only if the escrow lacks the stakes (`insufficient`).
pub fn finish<G: TableGame>(
    ctx: &mut dyn Ctx,
    mut game: G,
    winner: Option<Mark>,
    reason: &str,
    rules: &TableRules,
) -> Result<(), ActionError> {
    let seats = game.seats();
    let stake = seats.stake;
    let (payout, winner_address, result) = match winner {
        Some(mark) => {
            let address = seats.address(mark).to_string();
            let pot = 2 * stake;
            if pot > 0 {
                ctx.escrow_out(&address, GOLD, pot)?;
            }
            (pot, Some(address), mark.won())
        }
        None => {
            if stake > 0 {
                ctx.escrow_out(seats.address(Mark::X), GOLD, stake)?;
                ctx.escrow_out(seats.address(Mark::O), GOLD, stake)?;
            }
            (stake, None, "draw")
        }
    };
    let seats = game.seats_mut();
    if winner_address.is_some() {
        *seats.winner = winner_address;
    }
    *seats.result = Some(result.to_string());
    *seats.status = Status::Finished;
    *seats.reason = Some(reason.to_string());
    save(ctx, &game);
    emit_finished(ctx, &game, payout, rules);
    Ok(())
}

/// `rules.finished_event` for a game that has just ended; `payout` in base units.
fn emit_finished<G: TableGame>(ctx: &mut dyn Ctx, game: &G, payout: u128, rules: &TableRules) {
    let seats = game.seats();
    let data = json!({
        "id": seats.id,
        "result": seats.result,
        "winner": seats.winner,
        "reason": seats.reason,
        "payout": Amount(payout),
    });
    ctx.emit(rules.finished_event, data);
}

/// `?id=<id>`: the stored game `id`, or `not found: game <id>`.
pub fn view_game<G: TableGame>(
    state: &dyn StateRead,
    rules: &TableRules,
    id: &str,
) -> Result<G, ActionError> {
    state
        .module_json::<G>(rules.module, &game_key(id))?
        .ok_or_else(|| ActionError::not_found(format!("game {id}")))
}

/// The games whose ids are the last path segment of the keys under `m/<module>/<prefix>` (at
/// most `limit` keys scanned, in key order), kept by `keep`, sorted (stably) by `sort_key`.
/// Errors only when a stored game is not valid JSON (`internal`).
pub fn list<G: TableGame, K: Ord>(
    state: &dyn StateRead,
    module: &str,
    prefix: &str,
    limit: usize,
    keep: impl Fn(&G) -> bool,
    sort_key: impl Fn(&G) -> K,
) -> Result<Vec<G>, ActionError> {
    Ok(list_page(state, module, prefix, None, limit, keep, sort_key)?.0)
}

/// One page of [`list`]: the keys under `m/<module>/<prefix>` after `<prefix><after>` (from the
/// first when `after` is `None`), at most `limit` scanned. Also returns the id of the last key
/// scanned when the page is full (`limit` keys), the `after` of the next page; `None` when the
/// scan ran out of keys, so there is no next page.
pub fn list_page<G: TableGame, K: Ord>(
    state: &dyn StateRead,
    module: &str,
    prefix: &str,
    after: Option<&str>,
    limit: usize,
    keep: impl Fn(&G) -> bool,
    sort_key: impl Fn(&G) -> K,
) -> Result<(Vec<G>, Option<String>), ActionError> {
    let prefix = module_key(module, prefix);
    let start = after.map(|id| format!("{prefix}{id}"));
    let keys = state.scan_raw(&prefix, start.as_deref(), limit);
    let next = (limit > 0 && keys.len() == limit)
        .then(|| keys.last().map(|(key, _)| key[prefix.len()..].to_string()))
        .flatten();
    let mut games = Vec::new();
    for (key, _) in keys {
        if let Some(game) = state.module_json::<G>(module, &game_key(&key[prefix.len()..]))? {
            if keep(&game) {
                games.push(game);
            }
        }
    }
    games.sort_by_key(|g| sort_key(g));
    Ok((games, next))
}

/// Longest `after=` a list view accepts: a game id is 16 hex digits.
pub const MAX_AFTER_LEN: usize = 64;

/// The paging parameters of a list view: `after=<id>` (absent: from the first game) and
/// `limit=<n>` (1 to `max`, absent: `max`). Errors: `invalid: limit must be an integer from 1
/// to <max>`, `invalid: after must be a game id (at most 64 characters: 0-9, a-f)`.
pub fn page_params(query: &Query, max: usize) -> Result<(Option<&str>, usize), ActionError> {
    let limit = match query.get("limit") {
        None => max,
        Some(text) => match text.parse::<usize>() {
            Ok(n) if (1..=max).contains(&n) && !text.starts_with('+') => n,
            _ => {
                return Err(ActionError::invalid(format!(
                    "limit must be an integer from 1 to {max}"
                )))
            }
        },
    };
    let after = match query.get("after") {
        None => None,
        Some(id)
            if !id.is_empty()
                && id.len() <= MAX_AFTER_LEN
                && id
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) =>
        {
            Some(id.as_str())
        }
        Some(_) => {
            return Err(ActionError::invalid(format!(
                "after must be a game id (at most {MAX_AFTER_LEN} characters: 0-9, a-f)"
            )))
        }
    };
    Ok((after, limit))
}

/// The table's list views, `{"games": [<game>, …]}`, one page of keys in game-id order, each
/// page sorted by `created_height`: `?open=<any>` lists the games waiting for any opponent
/// (invitations left out); `?player=<address>` the games the address created or joined. Pages
/// ([`page_params`]): `&limit=<n>` keys per page (1 to `rules.list_limit`, the default), and
/// `&after=<id>` to start after a game id. A full page (as many keys scanned as the limit)
/// carries `"next": "<id>"`, the `after` of the next page; a page that ran out of keys has no
/// `next` (so a list shorter than the limit answers exactly `{"games": […]}`). `None` when the
/// query has neither `open` nor `player` (`open` wins when both are given).
pub fn list_view<G: TableGame>(
    state: &dyn StateRead,
    rules: &TableRules,
    query: &Query,
) -> Option<Result<Value, ActionError>> {
    let by_height = |g: &G| g.seats().created_height;
    let prefix = if query.contains_key("open") {
        "open/".to_string()
    } else {
        format!("player/{}/", query.get("player")?)
    };
    let page = page_params(query, rules.list_limit).and_then(|(after, limit)| {
        if query.contains_key("open") {
            let waiting = |g: &G| g.seats().opponent.is_none();
            list_page(
                state,
                rules.module,
                &prefix,
                after,
                limit,
                waiting,
                by_height,
            )
        } else {
            list_page(
                state,
                rules.module,
                &prefix,
                after,
                limit,
                |_| true,
                by_height,
            )
        }
    });
    Some(page.map(|(games, next)| match next {
        None => json!({ "games": games }),
        Some(next) => json!({ "games": games, "next": next }),
    }))
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests;
