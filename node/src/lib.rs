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
//! Layers, as intended: `cli` → `server` → `validator` → `verify` → `ledger`. Between folders this
//! is not yet true (issue 39; `tests/tests/source_tree.rs` checks cycles between files only):
//! `verify` and `validator` use each other (`verify/evidence.rs` → `validator::proof`,
//! `validator/rejoin.rs` → `verify::follower`), so do `verify` and `server` (`verify/game/` →
//! `server::transcript::wire`, `server/node.rs` → `verify::restore`), and `config.rs` names
//! `validator::p2p::PeerAddr`. The wire
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
