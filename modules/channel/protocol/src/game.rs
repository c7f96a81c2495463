//! The records the channel keeps: offers (`offer/<id>`), games (`game/<id>`) and the results of
//! unstaked games per player (`player/<address>`), as JSON (its views serve them, clients decode
//! them), and the constants bounding them. Times are block times in milliseconds
//! (`Ctx::block_time_ms`, consensus).

use gamechain_sdk::Amount;
use serde::{Deserialize, Serialize};

/// Shortest response window: 5 minutes, in milliseconds (the seed's `MIN_RESPONSE_WINDOW`).
pub const MIN_WINDOW_MS: u64 = 5 * 60 * 1_000;
/// Longest response window: 3 days, in milliseconds (the seed's `MAX_RESPONSE_WINDOW`).
pub const MAX_WINDOW_MS: u64 = 3 * 24 * 60 * 60 * 1_000;
/// Most signed moves one op may carry (use checkpoints for longer games).
pub const MAX_MOVES_PER_OP: usize = 64;
/// Largest rules state the channel accepts, in bytes.
pub const MAX_STATE_BYTES: usize = 4_096;
/// Largest move data, in bytes.
pub const MAX_MOVE_BYTES: usize = 1_024;
/// Fuel given to each call of a rules entry point.
pub const RULES_FUEL: u64 = 500_000;
/// Fuel given to a join guard.
pub const GUARD_FUEL: u64 = 1_000_000;

/// A join guard: a pure entry point of a module, asked (read-only, `call_pure`) whether someone
/// may join.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Guard {
    /// The guard's module id.
    pub module: String,
    /// Its pure entry point's name (`gc_pure_<entry>`).
    pub entry: String,
}

/// A lobby offer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Offer {
    /// The offer id (16 hex digits); also the id of the game it opens.
    pub id: String,
    /// Who made it (seat 0).
    pub creator: String,
    /// The creator's game key (the address whose signatures count for seat 0).
    pub signer: String,
    /// The rules module id the offer named, if it named one (informational: the game plays by
    /// `rules_code`, whatever that module runs later).
    pub rules: Option<String>,
    /// SHA-256 (lowercase hex) of the rules code the game plays by, fixed at the offer: every
    /// rules call is `call_code` of this hash.
    pub rules_code: String,
    /// Each player's stake in GOLD base units; `0`: an unstaked game (nothing escrowed, a
    /// result without payout).
    pub stake: Amount,
    /// The response window, in milliseconds of block time.
    pub window_ms: u64,
    /// The join guard, if any.
    pub guard: Option<Guard>,
    /// `open`, `filled` or `cancelled`.
    pub status: String,
}

/// How a game ended.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Outcome {
    /// The winning seat; `None` for a draw.
    pub winner: Option<u8>,
    /// How it ended: `history`, `cooperative`, `forfeit` or `equivocation`.
    pub how: String,
    /// The block time (ms) from which it is final (a history settlement: one window after it;
    /// the others: at once).
    pub final_at_ms: u64,
    /// Hex SHA-256 of the final rules state: the state the history reached (`history`), the
    /// state both signed (`cooperative`), the challenged state the staller did not move from
    /// (`forfeit`); `None` after `equivocation` (no state was agreed).
    pub state_hash: Option<String>,
}

/// A co-signed checkpoint: the state after `moves` moves.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Snapshot {
    /// Moves made at the checkpoint (the next move's number).
    pub moves: u64,
    /// The rules state, hex.
    pub state: String,
}

/// An open challenge.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Challenge {
    /// The seat that must move.
    pub due: u8,
    /// The number of the move it owes.
    pub moves: u64,
    /// The state it must move from, hex.
    pub state: String,
    /// The last block time (ms) at which it may answer: the challenge's block time plus the
    /// window.
    pub deadline_ms: u64,
}

/// A game.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Game {
    /// The game id (= its offer's id).
    pub id: String,
    /// The rules module id its offer named, if any (informational).
    pub rules: Option<String>,
    /// SHA-256 (lowercase hex) of the rules code the game plays by, fixed at the offer.
    pub rules_code: String,
    /// The game tag (hex): SHA-256 of the text naming the chain, the channel and the game
    /// (`Domain::game_tag`), the input of the rules' `initial_state`.
    pub tag: String,
    /// Each player's stake; `0`: unstaked.
    pub stake: Amount,
    /// The response window, in milliseconds of block time.
    pub window_ms: u64,
    /// Seat 0 (the offer's creator) and seat 1 (the joiner).
    pub players: [String; 2],
    /// The game keys whose signatures count for each seat.
    pub signers: [String; 2],
    /// `open`, `challenged`, `concluding` or `settled`.
    pub status: String,
    /// The latest co-signed checkpoint.
    pub checkpoint: Option<Snapshot>,
    /// The open challenge (status `challenged`).
    pub challenge: Option<Challenge>,
    /// The result (status `concluding` or `settled`).
    pub outcome: Option<Outcome>,
    /// Whether the stakes were paid out (never, for an unstaked game).
    pub paid: bool,
}

impl Game {
    /// Whether the result stands at block time `now_ms`: settled, or concluding and its window
    /// over.
    pub fn is_final(&self, now_ms: u64) -> bool {
        match (&self.status[..], &self.outcome) {
            ("settled", Some(_)) => true,
            ("concluding", Some(o)) => now_ms >= o.final_at_ms,
            _ => false,
        }
    }

    /// The seat of `who`, if a player.
    pub fn seat_of(&self, who: &str) -> Option<u8> {
        self.players.iter().position(|p| p == who).map(|s| s as u8)
    }

    /// Whether the game has no stakes (a result without payout).
    pub fn unstaked(&self) -> bool {
        self.stake.0 == 0
    }
}

/// One player's results in unstaked games (`player/<address>`), the leaderboard's entry: each
/// result counts when it is recorded (a history settlement at once, and moved if an
/// equivocation proof reverses it within its window).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Standing {
    /// Games won.
    pub wins: u64,
    /// Games lost.
    pub losses: u64,
    /// Games drawn.
    pub draws: u64,
}
