//! # gamechain-runtime: the state transition of gamechain
//!
//! Executes blocks: each signed transaction's action (a transfer, a deploy, a game op run in
//! its guest module through `gamechain-vm`) over an overlay of the committed state, rolled back
//! whole on failure; end-of-block calls; receipts, roots and the header. A sequencer builds
//! blocks with [`BlockBuilder`]; a follower or verifier re-executes them with
//! [`execute_block`]. No I/O: storage, networking and clocks belong to the node.
//!
//! | file | owns |
//! |---|---|
//! | `layout.rs` | the state keys the transition writes ([`nonce_key`], [`module_record_key`]) and [`ModuleRecord`] |
//! | `state.rs` | [`State`], [`MemState`], [`Overlay`], [`Layer`], [`WriteSet`] |
//! | `execute.rs` | [`execute_apply`], [`execute_end_block`], [`run_view`], [`TxOutcome`] |
//! | `sealed.rs` | the chain's check of a sealed move's envelope and its opening in the block of its round |
//! | `registry.rs` | [`Modules`]: compiled modules by (id, code hash), resolved from `module/<id>` and `code/<hash>` in state |
//! | `transition/` | [`execute_block`], [`BlockBuilder`], [`genesis_state`]: the state transition |
//! | `testkit.rs` (feature `testkit`) | the author kit's harness: one scenario body natively and on the built `.wasm` |
//!
//! The chain's data types are `gamechain-chain`'s (re-exported as [`chain`]); the wasm host is
//! `gamechain-vm`'s (its public items are re-exported here).
//!
//! ```
//! use gamechain_runtime::{execute_apply, MemState, Runtime, RuntimeConfig, WasmModule};
//! use gamechain_sdk::BlockEnv;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // A module written by hand in the text format: `gc_apply` returns 0 (ok) for every op.
//! let wasm = wat::parse_str(include_str!("../tests/wat/counter.wat"))?;
//! let runtime = Runtime::new(RuntimeConfig::default())?;
//! let module = WasmModule::new(&runtime, "counter", &wasm)?;
//! let state = MemState::new();
//! let env = BlockEnv::default();
//! let out = execute_apply(&module, &state, &env, &"00".repeat(32), "alice", br#"{"kind":"inc"}"#)?;
//! assert!(out.result.is_ok(), "{:?}", out.result);
//! # Ok(())
//! # }
//! ```

pub use gamechain_chain as chain;
mod execute;
pub mod layout;
pub mod registry;
pub mod sealed;
mod state;
#[cfg(feature = "testkit")]
pub mod testkit;
pub mod transition;

pub use execute::{
    execute_apply, execute_apply_metered, execute_apply_with, execute_end_block,
    execute_end_block_with, execute_migrate, execute_scheduled, run_view, run_view_with, Event,
    ScheduledRun, TxOutcome,
};
pub use gamechain_vm::cache;
pub use gamechain_vm::precompile;
pub use gamechain_vm::{
    read_schema, Allocation, CacheStats, CallOutcome, CodeSource, Compiler, GasTable, HostError,
    HostTrap, LoadError, ModuleCache, ModuleResolver, OptLevel, Origin, Precompiled, PureError,
    PureOutcome, Runtime, RuntimeConfig, TierUpError, ValidationError, WasmModule, ABI_REVISION,
    ABI_VERSION, FRAME_OVERHEAD, GAS_V1, INSTRUMENTATION_REVISION, MAX_CODE_BYTES, MAX_DATA_BYTES,
    MAX_EXPORTS, MAX_FUNCTIONS, MAX_GLOBALS, MAX_IMPORTS, MAX_LOCALS, MAX_MODULE_BYTES,
    MAX_OPERAND_STACK, MAX_PURE_DEPTH, MAX_PURE_OUTPUT_BYTES, MAX_SCHEMA_BYTES, MAX_SEGMENTS,
    MAX_TABLES, MAX_TABLE_ELEMENTS, MAX_TYPES, MAX_WASM_STACK, REFUSED_FEATURES, SCHEMA_ERRORS,
    STACK_LIMIT, WASMTIME_VERSION,
};
pub use registry::{
    code_key, record_origin, ModuleEntry, Modules, RegistryError, ResolveError, CODE_PREFIX,
    MAX_TIER_UP_ABANDONED, MAX_TIER_UP_QUEUE,
};
pub use state::{Layer, MemState, Overlay, State, WriteSet};
pub use transition::upgrade_refusal;
pub use transition::{
    account_nonce, check_txs, default_verify_threads, execute_block, genesis_header, genesis_state,
    module_record_key, nonce_key, runtime_config, sign_tx, BlockBuilder, BlockInput, BlockOutput,
    ChainContext, ContextError, GenesisState, ModuleLog, ModuleRecord, SessionWitness,
    StartWitness, TransitionError, TxRejection, GENESIS_HASH_KEY,
};
pub use transition::{check_session, SessionUse};
