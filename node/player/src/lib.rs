//! # gamechain-player: the player's side of channel games
//!
//! A client of the `channel` module (docs/channels.md, "Playing with the CLI"): a player's local
//! store of signed moves, the game's rules run locally from the chain's own `.wasm`, the checks
//! every received move passes before it is kept, the move board and the node's relay as
//! transport, the operations a player sends to the channel, and the watchtower. `gamechain
//! channel …` (the node's `cli/channel.rs`) is a thin printer over [`Player`].
//!
//! It depends on `gamechain-client` (the node's HTTP/WebSocket API), `gamechain-channel-protocol`
//! (the signing texts, records and bounds it shares with the chain, re-exported as [`protocol`])
//! and `gamechain-runtime` (the wasm engine that runs the rules locally); never on a game crate,
//! a server or a database.
//!
//! | file | owns |
//! |---|---|
//! | `error.rs` | [`ChannelError`]: why a channel operation failed (local refusal, node, store, rules) |
//! | `store.rs` | [`MoveStore`], [`GameRecord`], [`HeldMove`]: one JSON file per game, written atomically, locked while in use |
//! | `rules.rs` | [`LocalRules`]: the rules `.wasm` fetched by code hash, checked, run with a fuel cap; [`Replay`] of held moves |
//! | `genesis_rules.rs` | which rules code a player agrees to play: a genesis module's, or the exact hash the player named ([`genesis_rules::refusal`]) |
//! | `check.rs` | [`check_received`]: a received signed move against the store (state hash, turn, signature, legality) |
//! | `board.rs` | the move board and the chain as a feed: [`board::seen_in`] reads posts and channel events from blocks |
//! | `player.rs` | [`Player`]: offer, join, move, sync, settle, challenge, respond, forfeit, prove, withdraw, cancel, show, and the watchtower's steps |
//! | `watch.rs` | [`watch::watch`]: the watchtower's loop over the block feed, reconnecting and catching up |
//! | `backoff.rs` | [`Backoff`]: which failures are retried, and how long to wait (exponential, capped, jittered, `retry-after`) |
//! | `time.rs` | windows typed as durations, deadlines printed as UTC times with the time left |
//!
//! Bounds (a hostile node or opponent cannot make a client hang or grow without limit): at most
//! [`MAX_MOVES_HELD`] moves per game (the channel's per-op cap: this client does not checkpoint),
//! one kept conflicting move per position, payloads of at most [`MAX_PAYLOAD_BYTES`], rules code
//! of at most `MAX_CODE_BYTES` checked against its hash, each rules call with the channel's own
//! fuel ([`protocol::RULES_FUEL`]), every node request with the client's timeout.
//!
//! A [`Player`] is a node's URL, a store directory and (to send) a key; nothing is asked of the
//! node until an operation:
//!
//! ```
//! use std::time::Duration;
//!
//! use gamechain_player::{ChannelError, Player, PlayerOptions, RulesRef};
//! use gamechain_sdk::Amount;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let player = Player::new(PlayerOptions {
//!     node: "http://127.0.0.1:8645".into(),
//!     dir: dir.path().join("games"),
//!     channel: "channel".into(),
//!     board: "moveboard".into(),
//!     key: None, // read-only: offers, moves and settlements need the player's key
//!     receipt_timeout: Duration::from_secs(30),
//! })?;
//! assert!(player.store().load("0000000000000001")?.is_none());
//!
//! /// Offers rock-paper-scissors (genesis rules: no code hash to name) for 100 GOLD base units a
//! /// seat, 10 minutes to answer, then makes the first move (a commitment) once someone joined.
//! async fn play(player: &Player, commitment: &[u8]) -> Result<(), ChannelError> {
//!     let rules = RulesRef::Module("rps_rules".into());
//!     let offered = player.offer(&rules, Amount(100), 600_000, None, None).await?;
//!     player.make_move(&offered.offer, commitment, false, true, None).await?;
//!     Ok(())
//! }
//! # Ok::<(), ChannelError>(())
//! ```

pub mod backoff;
pub mod board;
pub mod check;
pub mod error;
pub mod genesis_rules;
pub mod player;
pub mod rules;
pub mod store;
pub mod time;
pub mod watch;

/// The channel's shared definitions: [`protocol::Domain`], [`protocol::Game`], the bounds.
pub use gamechain_channel_protocol as protocol;

pub use backoff::Backoff;
pub use check::{check_received, Received, Refusal};
pub use error::ChannelError;
pub use player::{Player, PlayerOptions, RulesRef};
pub use rules::{LocalRules, Replay};
pub use store::{GameRecord, HeldMove, MoveStore};

/// Most moves one game's record holds: the channel's limit per op, so every history this client
/// holds can be submitted in one `settle`, `challenge` or `respond` (no checkpoints).
pub const MAX_MOVES_HELD: usize = protocol::MAX_MOVES_PER_OP;

/// Largest move-board payload this client reads, in bytes (a signed move with the largest data
/// the channel accepts is about 2,200 bytes of JSON).
pub const MAX_PAYLOAD_BYTES: usize = 4_096;

/// The move board's `type` for a signed move.
pub const MOVE_TYPE: u64 = 1;
