//! # gamechain-node: the gamechain node server
//!
//! One process that sequences, executes, stores and serves one chain. Start one in-process
//! with [`NodeHandle::start`] (tests: `listen` on port 0, then [`NodeHandle::bound_addr`]) or
//! run one until a signal with [`run_node`]; configure it with [`NodeConfig`].
//!
//! | file | owns |
//! |---|---|
//! | `config.rs` | [`NodeConfig`]: the TOML configuration, defaults, validation |
//! | `error.rs` | [`NodeError`]: why a node could not start or stopped |
//! | `genesis_setup.rs` | first start (key, `genesis.json`, block 0), the start-up checks, the embedded tic-tac-toe |
//! | `record.rs` | [`BlockRecord`], [`TxRecord`]: stored blocks and transactions and their API JSON |
//! | `storage.rs` | [`Storage`]: the SQLite schema, migrations, the one-transaction block commit |
//! | `mempool.rs` | [`mempool::Mempool`]: pending transactions, the nonce and duplicate rules |
//! | `chain.rs` | [`chain::Chain`]: state mirror, head, mempool and readers shared by API and sequencer |
//! | `module_info.rs` | `GET /v1/modules`, `/v1/modules/<id>`, `/v1/code/<hash>`: module records and code from the state |
//! | `sequencer.rs` | the block-making task |
//! | `api_error.rs` | [`api_error::ApiError`]: the JSON errors and their status codes |
//! | `api.rs` | the axum router and handlers of `node/API.md` |
//! | `rate_limit.rs` | the per-IP token bucket |
//! | `ws.rs` | `GET /v1/ws`, the block subscription |
//! | `node.rs` | [`NodeHandle`], [`run_node`]: start, run, clean shutdown |
pub mod api;
pub mod api_error;
pub mod chain;
pub mod config;
pub mod error;
pub mod genesis_setup;
pub mod mempool;
pub mod module_info;
pub mod node;
pub mod rate_limit;
pub mod record;
pub mod sequencer;
pub mod storage;
pub mod ws;

pub use config::{ConfigError, NodeConfig};
pub use error::NodeError;
pub use node::{run_node, NodeHandle};
pub use record::{BlockRecord, IncludedTx, TxRecord, TxStatus};
pub use storage::{Storage, StorageError};

// The client side (client library, CLI, demo): see each file's top comment.
pub mod cli;
pub mod cli_commands;
pub mod cli_module;
pub mod cli_node;
pub mod client;
pub mod demo;
pub mod demo_checks;
pub mod keyfile;
pub mod local_node;
