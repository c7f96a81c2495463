//! [`StartWitness`]: the GOLD balance a game step's account had when the step began, with its
//! proof against the parent block's state root. A node's record, not consensus: no hash or
//! receipt holds it. The node keeps one per game and account (its `game_starts` table): the
//! first step's, replaced once by the first step that moves the account's GOLD itself (an
//! escrow, a payout to it), so the balance a game first takes from is the proven one even when
//! the player joined first and funded later. A game's transcript carries it, and a verifier sets
//! the player's balance to it before that step (`docs/verify-a-match.md`, "The starting
//! balances").
//!
//! A `session_game` step also records the session record it was admitted under
//! ([`SessionWitness`]), proven the same way, which a transcript carries per step.
//!
//! The parent's root shows what a step found only when no earlier transaction of the block
//! wrote that balance: then [`StartWitness::proven`] is `None` and the node has nothing to show
//! for that step (a verifier refuses a transcript whose player's first step is such a step).

use crate::chain::StateProof;

/// One account's balance at the start of one step of one game (module docs). Made by the block
/// builder for each transaction step whose receipt names games it logs (chains that keep game
/// logs only), one per game named, in block order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartWitness {
    /// The module of the step.
    pub module: String,
    /// The game id, as its log names it (`chain::game_log`).
    pub game: String,
    /// The account the step acts for (a `session_game`'s `account`).
    pub account: String,
    /// The step's block height; the proof is against block `height - 1`'s state root.
    pub height: u64,
    /// Whether the step's own writes (before any fee) change the account's GOLD balance.
    pub moves_balance: bool,
    /// `bal/<account>/GOLD` in the parent's state (its stored bytes, `None`: absent) with the
    /// proof of that entry against the parent's root; `None` when an earlier transaction of
    /// the block had written the balance.
    pub proven: Option<(Option<Vec<u8>>, StateProof)>,
    /// The step's txid (lowercase hex).
    pub txid: String,
    /// For a `session_game` step: the session record it was admitted under
    /// ([`SessionWitness`]); `None` for a step signed by the account itself.
    pub session: Option<SessionWitness>,
}

/// The session record (`session/<account>/<key>`) of a `session_game` step as the parent's
/// state holds it, with its proof against the parent's root: what shows that the account's main
/// key authorized the step's key, before the step's block, for this module, live at the step's
/// block time, with cap left then. A node's record beside [`StartWitness`], per step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionWitness {
    /// `session/<account>/<key>`.
    pub key: String,
    /// The record's stored bytes in the parent's state (`None`: absent) with their proof (always
    /// given on a chain with proofs: an earlier transaction of the block may have written the
    /// record since, which a verifier reads as "the session before the block"; a record of
    /// another id, or none, means it was authorized within the block).
    pub proven: Option<(Option<Vec<u8>>, StateProof)>,
}
