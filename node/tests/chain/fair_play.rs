//! The fair-play suite: attacks a player who wants to win unfairly would try, each its own named
//! test against a real `gamechain node` process, each stopped by a mechanism named in its docs.
//! Every test here failed on the code before that mechanism existed.
//!
//! | file | attacks on |
//! |---|---|
//! | `fair_play/clock.rs` | the clock: making heights, and so block-counted deadlines, pass faster than time |
//! | `fair_play/channel.rs` | channel games: a response window shortened by pumping blocks; a commit-reveal commitment copied from the other seat |
//! | `fair_play/chance.rs` | games of chance: a dice player who grinds and times his join against everything public |
//!
//! Shared: `fair_play/support.rs` (a short-interval node, the pump, and the GOLD conservation
//! check every test runs after each block it makes). Attacks tested elsewhere: the watchtower
//! giving up on a 429 and never sending its equivocation proof (`cli/channel_cli.rs`), rules
//! upgraded mid-game and commitments copied from another game (`tests/tests/channels.rs`).

mod chance;
#[path = "fair_play/channel.rs"]
mod channel_games;
mod clock;
mod support;
