//! # gamechain-ledger: the chain a node keeps
//!
//! Its SQLite storage, the mempool, the shared core the API reads ([`chain::Chain`]), the
//! block-making sequencer, the committed state read from SQLite through a bounded cache, and
//! the one routine that opens a data directory and the one that commits a block (to SQLite,
//! then the head). This is the only crate of the workspace that links SQLite. No HTTP and no
//! consensus engine here: errors are domain errors ([`error::ChainError`] for what a client
//! asked, [`NodeError`] for why a node cannot start); the node's `server/` maps them to
//! statuses, and its validator, verifier and follower build on this crate in one direction.
//! Configured by [`LedgerConfig`] (the node's TOML file makes one).
//!
//! Opening a new data directory (its sequencer key, `genesis.json` and block 0 are made) and
//! reading the chain through the shared core the API serves from:
//!
//! ```
//! use std::sync::Arc;
//! use gamechain_ledger::chain::{Chain, NoSink};
//! use gamechain_ledger::genesis_setup::open_chain;
//! use gamechain_ledger::LedgerConfig;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let config = LedgerConfig {
//!     data_dir: dir.path().to_path_buf(),
//!     genesis_modules: vec!["tictactoe".into()],
//!     ..LedgerConfig::default()
//! };
//! // No snapshot to join from: `None`.
//! let opened = open_chain(&config, None).unwrap();
//! let db = config.db_path();
//! let chain = Chain::new(config, opened.ctx, opened.genesis_hash, opened.head, db, Arc::new(NoSink));
//! let status = chain.status();
//! assert_eq!((status.chain_id.as_str(), status.height), ("gamechain-dev", 0));
//! assert!(chain.genesis().modules.iter().any(|m| m.id == "tictactoe"));
//! ```
//!
//! | folder / file | owns |
//! |---|---|
//! | `config.rs` | [`LedgerConfig`]: what the ledger is configured with (the node's TOML file makes one) |
//! | `node_error.rs` | [`NodeError`]: why a node could not start or had to stop |
//! | `metrics.rs` | [`metrics::Metrics`]: the node's counters, gauges and timings for `GET /metrics` |
//! | `store/storage.rs` | [`storage::Storage`]: the SQLite schema, migrations, the one-transaction block commit; `store/storage/codec.rs`: the compact column encodings |
//! | `store/state_store.rs` | [`state_store::StoredState`]: the committed state read from SQLite through a bounded cache (`state_cache_mb`), consistent with the head |
//! | `store/sign_state.rs` | [`sign_state::SignStateFile`]: `<data>/sign-state.json`, the highest block signed; the start-up check of the head against it |
//! | `store/head_record.rs` | [`head_record::HeadRecord`]: `<data>/chain.sqlite.head`, the last block committed, written after each commit, checked at start |
//! | `store/run_marker.rs` | `<data>/node.running`: whether the previous run stopped cleanly (decides the start's `quick_check`) |
//! | `store/rejoin_record.rs` | [`rejoin_record::Rejoin`]: `<data>/rejoin.json`, a validator's join or rejoin in progress, and setting earlier files aside |
//! | `store/snapshot.rs` | [`snapshot::Snapshots`]: state snapshots taken every `snapshot_every_blocks` at the commit point, their chunk files and manifest, served to joining nodes |
//! | `start/genesis_modules.rs` | [`genesis_modules::GENESIS_MODULES`]: the guests this crate embeds for a new chain's genesis (the games, the channel, its rules) |
//! | `start/genesis_setup.rs` | first start (key, `genesis.json`, block 0), the start-up checks, opening a data directory |
//! | `start/open.rs` | what opening a data directory shares: the node's runtime, the genesis modules through the compiled cache, the checked head |
//! | `mempool.rs` | [`mempool::Mempool`]: pending transactions, the nonce and duplicate rules |
//! | `error.rs` | [`error::ChainError`]: the core's refusals and failures |
//! | `reads/modules.rs` | the module records and code the API serves, from the committed state |
//! | `reads/view_proof.rs` | `GET /v1/games/<module>/proof`: a view with every state entry it read, proven against the head's root |
//! | `chain.rs` | [`chain::Chain`]: head (header, hash, state), mempool and readers shared by API and sequencer |
//! | `compile.rs` | deploys compiled at admission, off the sequencer, within `compile_budget_ms`, one at a time |
//! | `tier_up.rs` | [`tier_up::spawn`]: uploads recompiled by Cranelift in a child process under a time and memory budget, swapped in when done |
//! | `clock.rs` | [`clock::NodeClock`]: the clock blocks are stamped by (system clock, or the dev clock tests advance); [`clock::Arrivals`]: the sequencer's wake-up signal |
//! | `upgrade_admission.rs` | [`upgrade_admission::admission_refusal`]: the upgrades `POST /v1/tx` refuses (`403 upgrade_refused`) because the transition certainly would, and why each is safe to decide early |
//! | `sequencer.rs` | the block-making thread: blocks no closer than the chain's interval, transactions executed as they arrive (records each block in the sign state before committing it) |
//!
//! Layers, each importing only downwards (`tests/tests/source_tree.rs` checks there is no
//! cycle): `sequencer`, `tier_up`, `start/` (opening) and `reads/` → `chain` (the shared core and its `Head`) →
//! `mempool`, `compile`, `upgrade_admission`, `store/` → `node_error`, `config`, `error`.

pub mod chain;
pub mod clock;
pub mod compile;
pub mod config;
pub mod error;
pub mod mempool;
pub mod metrics;
pub mod node_error;
pub mod reads;
pub mod schedule_wake;
pub mod sequencer;
pub mod start;
pub mod store;
pub mod tier_up;
pub mod upgrade_admission;

pub use config::{ConfigError, DeployPolicy, IntegrityCheck, LedgerConfig};
pub use node_error::NodeError;
pub use start::{genesis_modules, genesis_setup, open};
pub use store::storage::{GameStart, Storage, StorageError};
pub use store::{
    head_record, rejoin_record, run_marker, sign_state, snapshot, state_store, storage,
};

/// The SQLite bindings, for tests that damage a database by hand (feature `fault-injection`).
#[cfg(feature = "fault-injection")]
pub use rusqlite;
