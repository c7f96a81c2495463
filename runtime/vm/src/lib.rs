//! # gamechain-vm: the wasmtime host of gamechain
//!
//! Loads guest modules (`sdk-guest/ABI.md`) and runs them deterministically: validated and
//! instrumented at load, fuel-metered, reset or fresh instance per call, fixed error texts.
//! It knows the guest SDK's `Ctx` and `StateRead` traits and nothing of blocks, transactions
//! or storage: the state transition (`gamechain-runtime`) drives it.
//!
//! | file | owns |
//! |---|---|
//! | `abi.rs` | the ABI v1 tables: version, imports and their types, exports, wasm features |
//! | `config.rs` | [`RuntimeConfig`] (limits, [`RuntimeConfig::config_hash`]), [`Allocation`], [`OptLevel`] |
//! | `gas.rs` | [`GasTable`], [`GAS_V1`]: fuel per host call |
//! | `load/` | validation ([`ValidationError`]), the stack-height limit, instrumentation |
//! | `run/` | [`Runtime`] (engines, linker, pool), host functions, traps ([`HostTrap`], [`HostError`]), [`WasmModule`] |
//! | `tier.rs` | tier-up: [`precompile`] (Cranelift, in another process), [`WasmModule::tier_up`] |
//! | `cache.rs` | [`ModuleCache`]: compiled modules on disk, keyed by code and engine, checked before use |
//! | `fuzzing.rs` | feature `fuzzing` only (hidden): the validator and instrumenter for `tests/fuzz/` |
//!
//! Layers: `abi`, `gas` → `load` → `config` → `cache` → `run` → `tier`; one arrow runs back up:
//! `config` reads `run::bounds` for the configuration's hashed text.
//!
//! ```
//! use gamechain_vm::{Runtime, RuntimeConfig, WasmModule};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let runtime = Runtime::new(RuntimeConfig::default())?;
//! // A module that does not parse is refused with a fixed text, before anything runs.
//! let err = WasmModule::new(&runtime, "broken", b"not wasm").unwrap_err();
//! assert!(err.to_string().contains("not a valid wasm module"), "{err}");
//! # Ok(())
//! # }
//! ```

mod abi;
pub mod cache;
mod config;
/// Validator and instrumenter for the cargo-fuzz targets (`tests/fuzz/`); feature `fuzzing`.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod gas;
mod load;
mod run;
mod tier;

pub use abi::{ABI_REVISION, ABI_VERSION, MAX_TABLE_ELEMENTS};
pub use cache::{CacheStats, CodeSource, ModuleCache};
pub use config::{
    Allocation, Compiler, OptLevel, Origin, RuntimeConfig, MAX_WASM_STACK, WASMTIME_VERSION,
};
pub use gas::{GasTable, GAS_V1};
pub use load::instrument::INSTRUMENTATION_REVISION;
pub use load::stack::{FRAME_OVERHEAD, STACK_LIMIT};
pub use load::validate::{
    read_schema, ValidationError, MAX_CODE_BYTES, MAX_DATA_BYTES, MAX_EXPORTS, MAX_FUNCTIONS,
    MAX_GLOBALS, MAX_IMPORTS, MAX_LOCALS, MAX_MODULE_BYTES, MAX_OPERAND_STACK, MAX_SCHEMA_BYTES,
    MAX_SEGMENTS, MAX_TABLES, MAX_TYPES, REFUSED_FEATURES, SCHEMA_ERRORS,
};
pub use run::bounds::{
    MAX_CALL_EVENTS, MAX_CALL_EVENT_BYTES, MAX_CALL_WRITE_BYTES, MAX_KEY_BYTES, MAX_OUTPUT_BYTES,
};
pub use run::engine::Runtime;
pub use run::module::{CallOutcome, LoadError, ModuleResolver, WasmModule};
pub use run::nesting::{PureError, PureOutcome, MAX_PURE_DEPTH, MAX_PURE_OUTPUT_BYTES};
pub use run::pure::MAX_PURE_NAME_BYTES;
pub use run::trap::{HostError, HostTrap};
pub use tier::{precompile, Precompiled, TierUpError};
