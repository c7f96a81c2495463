//! [`StartWitness`]: the GOLD balance a game step's account had when the step began, with its
//! proof against the parent block's state root. A node's record, not consensus: no hash or
//! receipt holds it. The node keeps one per game and account (its `game_starts` table): the
//! first step's, replaced once by the first step that moves the account's GOLD itself (an
//! escrow, a payout to it), so the balance a game first takes from is the proven one even when
//! the player joined first and funded later. A game's transcript carries it, and a verifier sets
//! the player's balance to it before that step (`docs/verify-a-match.md`, "The starting
//! balances").
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
}
