//! The fair-play suite: attacks a player who wants to win unfairly would try, each its own named
//! test against a real `gamechain node` process, each stopped by a mechanism named in its docs.
//! Every test here failed on the code before that mechanism existed.
//!
//! | file | attacks on |
//! |---|---|
//! | `fair_play/clock.rs` | the clock: making heights, and so block-counted deadlines, pass faster than time |

mod common;

#[path = "fair_play/clock.rs"]
mod clock;
