//! # gamechain-client: talk to a gamechain node from Rust
//!
//! What any Rust program needs to use a node: [`Client`], one typed async method per endpoint
//! of `node/API.md` (answers are `gamechain-chain`'s wire types), [`Client::send`] (next nonce,
//! sign, post), [`Client::wait_for_receipt`], [`Client::subscribe_blocks`] (the `/v1/ws` block
//! stream), [`Client::subscribe_game`] (one module's events, `/v1/ws/events`), [`Client::relay`] (a channel game's move relay, as one seat), and key files ([`write_key_file`], [`read_key_file`], `gamechain-chain`'s `key_file`, re-exported). It links no wasm engine and
//! no database.
//!
//! | file | owns |
//! |---|---|
//! | `client.rs` | [`Client`], [`ClientError`], [`BlockSubscription`], [`Included`], [`BlockRef`] |
//! | `game_feed.rs` | [`GameSubscription`]: one module's events live, resumable from a height |
//! | `session.rs` | [`Session`]: session keys, session files, authorize / use / list / revoke |
//! | `relay.rs` | [`Relay`]: the move relay of a channel game (`GET /v1/relay/<game>`), opened as one seat with a hello its game key signed ([`RelaySeat`], [`RelayHello`]) |
//! | `sealed.rs` | [`Client::seal_move`]: sealed moves to a round of the chain's beacon, [`plaintext_from`] |

pub mod client;
pub mod game_feed;
pub mod relay;
pub mod sealed;
pub mod session;

pub use client::{
    Account, Block, BlockRef, BlockSubscription, Client, ClientError, ClientResult, Included,
    IncludedTx, ModuleInfo, Status, TxRecord, TxStatus, DEFAULT_NODE_URL, REQUEST_TIMEOUT,
};
pub use game_feed::{GameEvent, GameFeedItem, GameQuery, GameSubscription};
pub use gamechain_chain::key_file::{read_key_file, write_key_file};
pub use relay::{hello_text, Relay, RelayEvent, RelayHello, RelayMove, RelaySeat};
pub use sealed::plaintext_from;
pub use session::Session;
