//! The records the channel keeps: offers (`offer/<id>`) and games (`game/<id>`), as JSON, and
//! the constants bounding them.

use gamechain_sdk::prelude::*;

/// Fewest blocks a response window may have.
pub const MIN_WINDOW_BLOCKS: u64 = 5;
/// Most blocks a response window may have (3 days of one-second blocks).
pub const MAX_WINDOW_BLOCKS: u64 = 259_200;
/// Most signed moves one op may carry (use checkpoints for longer games).
pub const MAX_MOVES_PER_OP: usize = 64;
/// Largest rules state the channel accepts, in bytes.
pub const MAX_STATE_BYTES: usize = 4_096;
/// Largest move data, in bytes.
pub const MAX_MOVE_BYTES: usize = 1_024;
/// Fuel given to each call of a rules module's entry point.
pub const RULES_FUEL: u64 = 500_000;
/// Fuel given to a join guard.
pub const GUARD_FUEL: u64 = 1_000_000;

/// A join guard: a pure entry point of a module, asked whether someone may join.
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
    /// The rules module id.
    pub rules: String,
    /// The code hash (hex) the rules module ran when the offer was made: the game plays by that
    /// code only (an upgrade voids it). Absent only in records made before pinning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules_code: Option<String>,
    /// Each player's stake in GOLD base units.
    pub stake: Amount,
    /// The response window in blocks.
    pub window: u64,
    /// The join guard, if any.
    pub guard: Option<Guard>,
    /// `open`, `filled` or `cancelled`.
    pub status: String,
}

/// A seat's share of a settled game.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Outcome {
    /// The winning seat; `None` for a draw.
    pub winner: Option<u8>,
    /// How it ended: `history`, `cooperative`, `forfeit`, `equivocation`, or `void` (the rules
    /// module was upgraded before a final result: both stakes refunded).
    pub how: String,
    /// The height from which it is final (a history settlement: one window after it).
    pub final_at: u64,
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
    /// The last height at which it may answer.
    pub deadline: u64,
}

/// A game.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Game {
    /// The game id (= its offer's id).
    pub id: String,
    /// The rules module id.
    pub rules: String,
    /// The code hash (hex) of the rules the game plays by (its offer's): an upgrade of the
    /// rules module voids the game. Absent only in records made before pinning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules_code: Option<String>,
    /// Each player's stake.
    pub stake: Amount,
    /// The response window in blocks.
    pub window: u64,
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
    /// Whether the stakes were paid out.
    pub paid: bool,
}

impl Game {
    /// Whether the result stands: settled, or concluding and its window over.
    pub fn is_final(&self, height: u64) -> bool {
        match (&self.status[..], &self.outcome) {
            ("settled", Some(_)) => true,
            ("concluding", Some(o)) => height >= o.final_at,
            _ => false,
        }
    }

    /// The seat of `who`, if a player.
    pub fn seat_of(&self, who: &str) -> Option<u8> {
        self.players.iter().position(|p| p == who).map(|s| s as u8)
    }
}
