//! The per-game log: [`GameLog`], a hash chain over every step of one game (a transaction or a
//! scheduled call whose receipt carries the game's events) that the runtime keeps in state at
//! [`game_log_key`] on chains with state proofs, so a verifier can prove that a transcript
//! shows all of a game's steps: none omitted, none cut from its end (`docs/verify-a-match.md`).
//!
//! # The rule (consensus, on chains whose genesis names `"state_commitment": "sparse_merkle"`)
//!
//! After each step, for each game its receipt's events name (an event's data field `id` or
//! `game`, a string of 1 to [`MAX_GAME_ID_BYTES`] of `A-Z a-z 0-9 _ - . :`, the rule the events
//! feed and transcripts pick a game's steps by; each game once per step, in the order the
//! events first name it, at most [`MAX_LOGGED_GAMES_PER_STEP`]), of the step's module (a
//! transaction's `game` / `session_game` module, a call's own), the entry
//! `log/<module>/<game>` becomes [`GameLog::extend`] of its value (absent: [`GameLog::EMPTY`])
//! with the step's leaf: a transaction's txid (32 bytes), a call's `ScheduledReceipt::hash`.
//! The write is the step's own: on a chain with fees it is charged as the step's writes
//! (`write_byte_micro`), and it counts toward the block's write bounds. A module cannot write
//! a `log/` key itself (its writes are under `m/<module>/`). Chains without state proofs keep
//! no log (their state and roots are unchanged).
//!
//! Value: 48 bytes, `head` (32) ‖ `steps` (u64 LE) ‖ `last_height` (u64 LE), where
//! `head' = SHA-256("gamechain/game-log/v1" ‖ head ‖ leaf)`, `steps' = steps + 1` and
//! `last_height'` the step's block height.

use serde_json::Value;

use crate::block::receipt::Event;
use crate::hash::sha256;

/// The domain of the chain's hash.
pub const GAME_LOG_DOMAIN: &[u8] = b"gamechain/game-log/v1";

/// Most games one step's log writes extend: the first games its events name; a step naming
/// more leaves the others' logs as they were (a bound on the state one step adds).
pub const MAX_LOGGED_GAMES_PER_STEP: usize = 8;

/// Longest game id a log is kept for, bytes (the events feed's bound).
pub const MAX_GAME_ID_BYTES: usize = 128;

/// The state key of `module`'s game `game`: `log/<module>/<game>`.
pub fn game_log_key(module: &str, game: &str) -> String {
    format!("log/{module}/{game}")
}

/// Whether `game` is an id a log is kept for: 1 to [`MAX_GAME_ID_BYTES`] of `A-Z a-z 0-9 _ - . :`.
pub fn is_game_id(game: &str) -> bool {
    (1..=MAX_GAME_ID_BYTES).contains(&game.len())
        && game
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.:".contains(&b))
}

/// The games `events` name (each once, in the order first named; ids that are not
/// [`is_game_id`] left out).
pub fn games_named(events: &[Event]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for e in events {
        for field in ["id", "game"] {
            if let Some(g) = e.data.get(field).and_then(Value::as_str) {
                if is_game_id(g) && !out.contains(&g) {
                    out.push(g);
                }
            }
        }
    }
    out
}

/// One game's log (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GameLog {
    /// The chain's head hash.
    pub head: [u8; 32],
    /// Steps chained.
    pub steps: u64,
    /// The block height of the last step.
    pub last_height: u64,
}

impl GameLog {
    /// The log of a game with no step yet.
    pub const EMPTY: GameLog = GameLog {
        head: [0; 32],
        steps: 0,
        last_height: 0,
    };

    /// The log after one more step, `leaf`, in block `height`.
    pub fn extend(&self, leaf: &[u8; 32], height: u64) -> GameLog {
        let mut input = Vec::with_capacity(GAME_LOG_DOMAIN.len() + 64);
        input.extend_from_slice(GAME_LOG_DOMAIN);
        input.extend_from_slice(&self.head);
        input.extend_from_slice(leaf);
        GameLog {
            head: sha256(&input),
            steps: self.steps + 1,
            last_height: height,
        }
    }

    /// The 48-byte state value.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = self.head.to_vec();
        out.extend_from_slice(&self.steps.to_le_bytes());
        out.extend_from_slice(&self.last_height.to_le_bytes());
        out
    }

    /// The log of a state value; `None` unless exactly 48 bytes.
    pub fn from_bytes(bytes: &[u8]) -> Option<GameLog> {
        if bytes.len() != 48 {
            return None;
        }
        Some(GameLog {
            head: bytes[..32].try_into().ok()?,
            steps: u64::from_le_bytes(bytes[32..40].try_into().ok()?),
            last_height: u64::from_le_bytes(bytes[40..48].try_into().ok()?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ev(data: Value) -> Event {
        Event {
            kind: "m.x".into(),
            data,
        }
    }

    #[test]
    fn games_are_named_once_in_order_and_only_valid_ids() {
        let events = [
            ev(json!({"id": "b1", "game": "a2"})),
            ev(json!({"game": "b1"})),
            ev(json!({"id": 7, "game": "has space"})),
            ev(json!({"id": "x".repeat(129)})),
            ev(json!({"id": "c:3"})),
        ];
        assert_eq!(games_named(&events), ["b1", "a2", "c:3"]);
    }

    #[test]
    fn the_chain_commits_to_every_leaf_in_order() {
        let (a, b) = ([1u8; 32], [2u8; 32]);
        let ab = GameLog::EMPTY.extend(&a, 5).extend(&b, 9);
        let ba = GameLog::EMPTY.extend(&b, 5).extend(&a, 9);
        assert_ne!(ab.head, ba.head);
        assert_eq!((ab.steps, ab.last_height), (2, 9));
        let mut input = GAME_LOG_DOMAIN.to_vec();
        input.extend_from_slice(&[0u8; 32]);
        input.extend_from_slice(&a);
        assert_eq!(GameLog::EMPTY.extend(&a, 5).head, sha256(&input));
        assert_eq!(GameLog::from_bytes(&ab.to_bytes()), Some(ab));
        assert_eq!(GameLog::from_bytes(&[0; 47]), None);
    }
}
