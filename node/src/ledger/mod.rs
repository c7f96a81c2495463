//! The chain a node keeps: its SQLite storage, the mempool, the shared core the API reads, the
//! block-making sequencer, the committed state read from SQLite through a bounded cache, and the
//! one routine that opens a data directory and the one that commits a block (to SQLite, then
//! the head). No HTTP here: errors
//! are domain errors ([`chain::ChainError`]); `server/` maps them to statuses.
//!
//! | file | owns |
//! |---|---|
//! | `storage.rs` | [`storage::Storage`]: the SQLite schema, migrations, the one-transaction block commit; `storage/codec.rs`: the compact column encodings |
//! | `mempool.rs` | [`mempool::Mempool`]: pending transactions, the nonce and duplicate rules |
//! | `error.rs` | [`error::ChainError`]: the core's refusals and failures |
//! | `modules.rs` | the module records and code the API serves, from the committed state |
//! | `chain.rs` | [`chain::Chain`]: head (header, hash, state), mempool and readers shared by API and sequencer |
//! | `state_store.rs` | [`state_store::StoredState`]: the committed state read from SQLite through a bounded cache (`state_cache_mb`), consistent with the head |
//! | `compile.rs` | deploys compiled at admission, off the sequencer, within `compile_budget_ms`, one at a time |
//! | `genesis_modules.rs` | [`genesis_modules::GENESIS_MODULES`]: the guests this binary embeds for a new chain's genesis (the games, the channel, its rules) |
//! | `genesis_setup.rs` | first start (key, `genesis.json`, block 0), the start-up checks, opening a data directory |
//! | `open.rs` | what opening a data directory shares: the node's runtime, the genesis modules through the compiled cache, the checked head |
//! | `sign_state.rs` | [`sign_state::SignStateFile`]: `<data>/sign-state.json`, the highest block signed; the start-up check of the head against it |
//! | `head_record.rs` | [`head_record::HeadRecord`]: `<data>/chain.sqlite.head`, the last block committed, written after each commit, checked at start |
//! | `run_marker.rs` | `<data>/node.running`: whether the previous run stopped cleanly (decides the start's `quick_check`) |
//! | `clock.rs` | [`clock::NodeClock`]: the clock blocks are stamped by (system clock, or the dev clock tests advance); [`clock::Arrivals`]: the sequencer's wake-up signal |
//! | `snapshot.rs` | [`snapshot::Snapshots`]: state snapshots taken every `snapshot_every_blocks` at the commit point, their chunk files and manifest, served to joining nodes |
//! | `upgrade_admission.rs` | [`upgrade_admission::admission_refusal`]: the upgrades `POST /v1/tx` refuses (`403 upgrade_refused`) because the transition certainly would, and why each is safe to decide early |
//! | `sequencer.rs` | the block-making thread: blocks no closer than the chain's interval, transactions executed as they arrive (records each block in the sign state before committing it) |

pub mod chain;
pub mod clock;
pub mod compile;
pub mod error;
pub mod genesis_modules;
pub mod genesis_setup;
pub mod head_record;
pub mod mempool;
pub mod modules;
pub mod open;
pub mod run_marker;
pub mod sequencer;
pub mod sign_state;
pub mod snapshot;
pub mod state_store;
pub mod storage;
pub mod upgrade_admission;
