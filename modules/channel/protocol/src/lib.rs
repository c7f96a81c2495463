//! The channel's wire protocol: what the `channel` module (`modules/channel`, the on-chain half)
//! and its clients (`gamechain-player`, the node's move relay, the tests) must agree on, defined
//! once. docs/channels.md is the guide. No ops, no state access, no host calls: the module
//! re-exports all of it (`channel::Domain`, `channel::Game`, …) and links it into its guest, so
//! changing a text, a record field or a bound here is a change of the channel's consensus rules.
//!
//! | file | owns |
//! |---|---|
//! | `message.rs` | the canonical texts players sign ([`Domain`]) and the game tag, [`state_hash`] |
//! | `game.rs` | the records the channel keeps and serves ([`Offer`], [`Game`], [`Challenge`], [`Standing`], …) and the bounds ([`MAX_MOVES_PER_OP`], [`MAX_MOVE_BYTES`], [`RULES_FUEL`], the window's [`MIN_WINDOW_MS`]–[`MAX_WINDOW_MS`], …) |
//!
//! A client signs a move with the very text the chain checks:
//!
//! ```
//! use gamechain_channel_protocol::{state_hash, Domain};
//!
//! // The chain's genesis hash (the channel's `{}` view) and the channel module's id.
//! let domain = Domain { chain: "ab".into(), module: "channel".into() };
//! let prev = state_hash(b"");
//! let text = domain.move_message("0000000000000001", 0, &prev, "yAlice", &[4]);
//! assert_eq!(
//!     text,
//!     format!(
//!         "gamechain channel move v1\nchain: ab\nmodule: channel\ngame: 0000000000000001\n\
//!          move: 0\nprev: {prev}\nmover: yAlice\ndata: 04"
//!     )
//! );
//! ```

pub mod game;
pub mod message;

pub use game::*;
pub use message::{state_hash, Domain};
