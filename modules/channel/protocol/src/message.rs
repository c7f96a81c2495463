//! The canonical texts players sign (docs/channels.md, "Signed moves"): a move, a final
//! agreement (cooperative settlement or draw offer) and a checkpoint, and the text whose SHA-256
//! is a game's tag. Each is UTF-8 lines joined by `\n` (no trailing newline), signed as a Divi
//! signed message by the player's game key. Clients build them with these same functions, so a
//! client and the chain cannot disagree.
//!
//! The domain is the chain's genesis hash and the channel module's id: a signature for one
//! chain or one channel deployment is worthless on another.

use sha2::{Digest, Sha256};

/// The head line of a final agreement (`v2`: its expiry is a block time in ms).
const FINAL_HEAD: &str = "gamechain channel final v2";

/// Lowercase hex SHA-256 of a rules state: what every move's `prev` names.
pub fn state_hash(state: &[u8]) -> String {
    hex::encode(Sha256::digest(state))
}

/// Where a signature counts: the chain (its genesis hash) and the channel module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Domain {
    /// The chain's genesis hash (`chain/genesis` in state), as stored.
    pub chain: String,
    /// The channel module's id.
    pub module: String,
}

impl Domain {
    fn head(&self, what: &str, game: &str) -> String {
        format!(
            "gamechain channel {what} v1\nchain: {}\nmodule: {}\ngame: {game}",
            self.chain, self.module
        )
    }

    /// The text signed for move `n` of `game`: `prev` is the state hash before it, `mover` the
    /// player's address (not the game key), `data` the move data.
    pub fn move_message(&self, game: &str, n: u64, prev: &str, mover: &str, data: &[u8]) -> String {
        format!(
            "{}\nmove: {n}\nprev: {prev}\nmover: {mover}\ndata: {}",
            self.head("move", game),
            hex::encode(data)
        )
    }

    /// The text both players sign to end `game` at the state hashing to `state` (a final state
    /// settles by the rules' winner, an unfinished one is a draw), acceptable in blocks whose
    /// time is at most `valid_until_ms` (ms since the Unix epoch).
    pub fn final_message(&self, game: &str, state: &str, valid_until_ms: u64) -> String {
        format!(
            "{FINAL_HEAD}\nchain: {}\nmodule: {}\ngame: {game}\nstate: {state}\nvalid_until_ms: {valid_until_ms}",
            self.chain, self.module
        )
    }

    /// The text whose SHA-256 is `game`'s tag:
    /// `gamechain channel game v1\nchain: <genesis hash>\nmodule: <channel id>\ngame: <id>`.
    pub fn game_tag_text(&self, game: &str) -> String {
        self.head("game", game)
    }

    /// `game`'s tag: SHA-256 of [`Domain::game_tag_text`], 32 bytes naming the chain, the
    /// channel and the game. The rules' `initial_state` gets it, so rules can bind commitments
    /// to the game (a commitment of one game is worthless in another).
    pub fn game_tag(&self, game: &str) -> [u8; 32] {
        Sha256::digest(self.game_tag_text(game)).into()
    }

    /// The text both players sign to checkpoint `game` after `moves` moves at the state hashing
    /// to `state`.
    pub fn checkpoint_message(&self, game: &str, moves: u64, state: &str) -> String {
        format!(
            "{}\nmoves: {moves}\nstate: {state}",
            self.head("checkpoint", game)
        )
    }
}
