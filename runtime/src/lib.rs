//! # gamechain-runtime: the wasmtime host of gamechain
//!
//! Runs guest modules (ABI.md in `sdk-guest/`) deterministically: fuel-metered, fresh instance
//! per call, fixed error texts, writes into an overlay that the node commits or drops.
//!
//! | file | owns |
//! |---|---|
//! | `engine.rs` | [`RuntimeConfig`] (limits, [`RuntimeConfig::config_hash`]), [`Runtime`] (engine, linker, pool) |
//! | `gas.rs` | [`GasTable`], [`GAS_V1`]: fuel per host call |
//! | `module.rs` | [`WasmModule`]: load-time validation, the call driver (fresh or reset warm instances), `impl GameModule` |
//! | `validate.rs` | [`ValidationError`]: the load-time rules (ABI imports/exports, limits, refused features), checked first |
//! | `instrument.rs` | load-time instrumentation: dirty-chunk marks and global exports, so instances can be reset |
//! | `stack.rs` | the deterministic stack-height limit: frame costs and the code counted around calls |
//! | `host.rs` | the `gamechain_v1` imports and the per-call store data |
//! | `trap.rs` | [`HostTrap`], [`HostError`], the mapping to ABI.md's fixed texts |
//! | `state.rs` | [`State`], [`MemState`], [`Overlay`], [`WriteSet`] |
//! | `execute.rs` | [`execute_apply`], [`execute_end_block`], [`run_view`], [`TxOutcome`], [`Event`] |
//! | `registry.rs` | [`Modules`]: compiled modules by (id, code hash), resolved from `module/<id>` and `code/<hash>` in state |
//! | `cache.rs` | [`ModuleCache`]: compiled modules on disk, keyed by code and engine, checked before use |
//! | `transition.rs` | [`execute_block`], [`BlockBuilder`], [`genesis_state`]: the state transition |
//! | `testkit.rs` (feature `testkit`) | the author kit's harness: one scenario body natively and on the built `.wasm` |
//!
//! ```ignore
//! let rt = Runtime::new(RuntimeConfig::default())?;
//! let module = WasmModule::new(&rt, "tictactoe", &wasm_bytes)?;
//! let out = execute_apply(&module, &state, &env, txid, sender, op_json_bytes)?;
//! if out.result.is_ok() { state.apply(out.writes) }
//! ```

pub mod cache;
pub mod chain;
mod engine;
mod execute;
mod gas;
mod host;
mod instrument;
mod module;
pub mod registry;
mod stack;
mod state;
#[cfg(feature = "testkit")]
pub mod testkit;
pub mod transition;
mod trap;
mod validate;

pub use cache::{CacheStats, CodeSource, ModuleCache};
pub use engine::{
    Allocation, OptLevel, Runtime, RuntimeConfig, ABI_VERSION, MAX_TABLE_ELEMENTS, MAX_WASM_STACK,
    WASMTIME_VERSION,
};
pub use execute::{execute_apply, execute_end_block, execute_migrate, run_view, Event, TxOutcome};
pub use gas::{GasTable, GAS_V1};
pub use module::{CallOutcome, LoadError, WasmModule};
pub use registry::{code_key, ModuleEntry, Modules, RegistryError, ResolveError, CODE_PREFIX};
pub use stack::{FRAME_OVERHEAD, STACK_LIMIT};
pub use state::{MemState, Overlay, State, WriteSet};
pub use transition::{
    account_nonce, check_txs, execute_block, genesis_header, genesis_state, module_record_key,
    nonce_key, runtime_config, sign_tx, BlockBuilder, BlockInput, BlockOutput, ChainContext,
    ContextError, GenesisState, ModuleLog, ModuleRecord, TransitionError, TxRejection,
    GENESIS_HASH_KEY,
};
pub use trap::{HostError, HostTrap};
pub use validate::{
    ValidationError, MAX_CODE_BYTES, MAX_DATA_BYTES, MAX_EXPORTS, MAX_FUNCTIONS, MAX_GLOBALS,
    MAX_IMPORTS, MAX_LOCALS, MAX_MODULE_BYTES, MAX_OPERAND_STACK, MAX_SEGMENTS, MAX_TABLES,
    MAX_TYPES, REFUSED_FEATURES,
};
