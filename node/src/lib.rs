//! # gamechain-node: the `gamechain` binary's library
//!
//! One process that sequences, executes, stores and serves one chain, verifies chains, and is
//! the command-line client. Start a node in-process with [`NodeHandle::start`] (tests: `listen`
//! on port 0, then [`NodeHandle::bound_addr`]) or run one until a signal with [`run_node`];
//! configure it with [`NodeConfig`].
//!
//! | folder | owns |
//! |---|---|
//! | `cli/` | the command line: arguments, client commands, `gamechain node`, `verify`, the module kit, the demo |
//! | `server/` | the HTTP/WebSocket API, its errors and rate limit, and the node's lifecycle ([`NodeHandle`]): the process's composition root |
//! | `validator/` | validator mode: blocks made by a validator set and finalized by Commonware's simplex consensus (propose, verify by re-execution, commit finalized blocks, the engine's wiring) |
//! | `replica/` | a node that keeps a verified copy of a chain made elsewhere: the follower, `--restore-from`, the snapshot join |
//! | `verify/` | replaying a chain or one game's transcript from genesis, offline: one block's check, the sources, the whole-chain report, export files |
//! | `proof/` | what validators sign, checked against the genesis set: consensus digests, finality certificates, evidence of faults |
//! | `config/` | [`NodeConfig`]: the TOML configuration, defaults, validation; peers' addresses |
//!
//! The folders are a strict stack, in the order of this table: a file imports only from its own
//! folder and the folders below it (`tests/tests/source_tree.rs` checks it; a `*_tests.rs` file,
//! compiled only for tests, may use any folder). The wire types are `gamechain-chain`'s, the
//! client is `gamechain-client`, the storage and the state transition's driver
//! `gamechain-ledger`, the player's side of channel games (`gamechain channel …`)
//! `gamechain-player` (`node/player/`).

pub mod cli;
pub mod config;
pub mod proof;
pub mod replica;
pub mod server;
pub mod validator;
pub mod verify;

pub use config::{ConfigError, NodeConfig};
pub use gamechain_ledger::{NodeError, Storage, StorageError};
pub use server::node::{run_node, NodeHandle};

/// The compiled-module cache the in-process nodes of this crate's unit tests share
/// (`compiled_dir`; the integration tests' own, `target/tmp/compiled-modules`), so each genesis
/// module is compiled once per run, not once per node started.
#[cfg(test)]
pub(crate) fn test_compiled_dir() -> Option<std::path::PathBuf> {
    Some(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/tmp/compiled-modules"))
}
