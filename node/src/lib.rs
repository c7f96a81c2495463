//! # gamechain-node: the `gamechain` binary's library
//!
//! One process that sequences, executes, stores and serves one chain, verifies chains, and is
//! the command-line client. Start a node in-process with [`NodeHandle::start`] (tests: `listen`
//! on port 0, then [`NodeHandle::bound_addr`]) or run one until a signal with [`run_node`];
//! configure it with [`NodeConfig`].
//!
//! | folder / file | owns |
//! |---|---|
//! | `config.rs` | [`NodeConfig`]: the TOML configuration, defaults, validation |
//! | `server/` | the HTTP/WebSocket API, its errors and rate limit, and the node's lifecycle ([`NodeHandle`]) |
//! | `validator/` | validator mode: blocks made by a validator set and finalized by Commonware's simplex consensus (propose, verify by re-execution, commit finalized blocks, the engine's wiring) |
//! | `verify/` | replaying a chain from genesis: one block's check, the sources, the whole-chain report, export files, the follower, `--restore-from` |
//! | `cli/` | the command line: arguments, client commands, `gamechain node`, `verify`, the module kit, the demo |
//!
//! Layers: `cli` → `server` → `validator` → `verify` → `ledger`; nothing imports upwards. The wire
//! types are `gamechain-chain`'s, the client is `gamechain-client`, the player's side of channel
//! games (`gamechain channel …`) is `gamechain-player` (`node/player/`).

pub mod cli;
pub mod config;
pub mod server;
pub mod validator;
pub mod verify;

pub use config::{ConfigError, NodeConfig};
pub use gamechain_ledger::{NodeError, Storage, StorageError};
pub use server::node::{run_node, NodeHandle};
