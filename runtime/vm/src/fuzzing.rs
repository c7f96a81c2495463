//! The `fuzzing` feature's window onto the load path, for the cargo-fuzz targets in
//! `tests/fuzz/` only: the validator and the instrumenter (`validate_instrument`) and the ABI
//! tables (`allowed_features`, `abi_imports`; `host_calls` builds its guest from the import
//! table), which are crate-private otherwise. Not a stable API: hidden from the docs, compiled
//! only with `--features fuzzing`, and nothing in the node or the runtime enables it.

use std::ops::Range;

use crate::load::instrument::{self, Plan};
use crate::load::validate::{self, ValidationError};

pub use crate::abi::allowed_features;

/// Every import of ABI v1 as `(name, params, results)`, one letter per value (`i` = `i32`,
/// `I` = `i64`): the table the validator and the linker use.
pub fn abi_imports() -> &'static [(&'static str, &'static str, &'static str)] {
    crate::abi::IMPORTS
}

/// Runs the load-time validator (`load/validate.rs`, ABI.md "Validation rules") on `wasm` with
/// a memory limit of `memory_limit` bytes.
///
/// Errors: the first rule broken, as [`ValidationError`] (its `Display` is the fixed text).
pub fn validate(wasm: &[u8], memory_limit: u64) -> Result<(), ValidationError> {
    validate::validate(wasm, memory_limit, crate::abi::ABI_REVISION).map(|_| ())
}

/// A module as the host compiles it (`load/instrument/`): the rewritten bytes and the names
/// and sizes the host uses to run and reset it.
#[derive(Debug, Clone)]
pub struct Instrumented {
    /// The instrumented binary (what the chain compiles).
    pub wasm: Vec<u8>,
    /// Export name of the mutable `i64` global `dirty` (one bit per chunk of initial memory).
    pub dirty_export: String,
    /// Export name of the mutable `i32` stack-height global (`load/stack.rs`).
    pub stack_export: String,
    /// Export name of the mutable `i64` fuel counter (`load/instrument/meter.rs`): set it
    /// before a call (it starts at 0); [`OUT_OF_FUEL`] after a charge it could not pay.
    pub fuel_export: String,
    /// Export name of the former start function (the start section is removed), if any.
    pub start_export: Option<String>,
    /// Export names of the module's own mutable globals, in index order.
    pub global_exports: Vec<String>,
    /// Whether the host may reset and reuse an instance of this module.
    pub reusable: bool,
    plan: Plan,
}

impl Instrumented {
    /// The byte ranges of memory the host restores for the chunks set in `dirty` (each run of
    /// chunks plus the 7-byte spill of a store at its end, clipped to the initial memory).
    pub fn restore_ranges(&self, dirty: u64) -> Vec<Range<usize>> {
        self.plan.restore_ranges(dirty).collect()
    }

    /// The memory's initial size, bytes.
    pub fn initial_bytes(&self) -> usize {
        self.plan.initial_bytes
    }
}

/// What the fuel counter holds after a charge it could not pay (as the `i64` the global holds).
pub const OUT_OF_FUEL: i64 = instrument::meter::OUT_OF_FUEL;

/// Validates `wasm` (as [`validate`]) and, when it is valid, instruments it as
/// `WasmModule::new` does. `Ok(None)`: valid but not instrumentable, which `WasmModule::new`
/// refuses as `LoadError::Engine` and the documentation says cannot happen.
///
/// Errors: the validator's.
pub fn instrument(wasm: &[u8], memory_limit: u64) -> Result<Option<Instrumented>, ValidationError> {
    let info = validate::validate(wasm, memory_limit, crate::abi::ABI_REVISION)?;
    let out = instrument::instrument(
        wasm,
        &info,
        crate::load::instrument::INSTRUMENTATION_REVISION,
    );
    Ok(out.plan.map(|plan| Instrumented {
        wasm: out.wasm,
        dirty_export: plan.dirty_export.clone(),
        stack_export: plan.stack_export.clone(),
        fuel_export: plan.fuel_export.clone(),
        start_export: plan.start_export.clone(),
        global_exports: plan.global_exports.clone(),
        reusable: plan.reuse.is_ok(),
        plan,
    }))
}
