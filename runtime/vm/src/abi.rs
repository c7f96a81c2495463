//! The host/guest boundary of ABI version 1 as data (`sdk-guest/ABI.md`): the version, the
//! import module and every import with its type, the exports a module must or may have, and the
//! wasm features a module may use. Validation (`load/validate.rs`), the instrumenter and the
//! host functions (`run/host.rs`) all read these tables; nothing here depends on wasmtime's
//! engine.

use wasmparser::WasmFeatures;

/// The ABI version this runtime serves (the `gamechain_v1` import module).
pub const ABI_VERSION: u32 = 1;

/// Most entries in the module's one table (a Rust module's table holds its address-taken
/// functions, usually a few hundred). Same bound as wasmtime's pooling default.
pub const MAX_TABLE_ELEMENTS: usize = 20_000;

/// The wasm features a module may use (ABI.md, "Wasm features"): the MVP (with floats), mutable
/// globals, sign extension, non-trapping float-to-int, multi-value, bulk memory and reference
/// types, which is what `rustc` emits for `wasm32-unknown-unknown`.
pub fn allowed_features() -> WasmFeatures {
    WasmFeatures::FLOATS
        | WasmFeatures::MUTABLE_GLOBAL
        | WasmFeatures::SIGN_EXTENSION
        | WasmFeatures::SATURATING_FLOAT_TO_INT
        | WasmFeatures::MULTI_VALUE
        | WasmFeatures::BULK_MEMORY
        | WasmFeatures::REFERENCE_TYPES
}

/// The features in [`allowed_features`], as named in the config hash.
pub(crate) const FEATURE_NAMES: &str =
    "floats,mutable_global,sign_extension,saturating_float_to_int,multi_value,bulk_memory,reference_types";

/// The import module of ABI version 1.
pub(crate) const IMPORT_MODULE: &str = "gamechain_v1";

/// Every import of ABI v1 with its type, for load-time validation: `(name, params, results)`,
/// one letter per value, `i` = `i32`, `I` = `i64`.
pub(crate) const IMPORTS: &[(&str, &str, &str)] = &[
    ("height", "", "I"),
    ("block_time_ms", "", "I"),
    ("module_id", "ii", "i"),
    ("txid", "ii", "i"),
    ("sequencer", "ii", "i"),
    ("checkpoint", "ii", "i"),
    ("get", "iiii", "I"),
    ("put", "iiii", ""),
    ("delete", "ii", ""),
    ("scan", "iiiiiii", "I"),
    ("read_raw", "iiii", "I"),
    ("scan_raw", "iiiiiii", "I"),
    ("balance", "iiiii", ""),
    ("escrow_in", "iiiiII", "i"),
    ("escrow_out", "iiiiII", "i"),
    ("create_token", "iiiiiiII", "i"),
    ("mint", "iiiiII", "i"),
    ("burn", "iiiiII", "i"),
    ("last_error", "ii", "i"),
    ("emit", "iiii", ""),
    ("public_random", "i", ""),
    ("output", "ii", ""),
    ("abort", "ii", ""),
    ("log", "ii", ""),
    // Added in ABI v1 (additive): signatures and read-only calls into other modules.
    ("verify_signed", "iiiiii", "i"),
    ("call_pure", "iiiiiiIii", "I"),
    // Added in ABI v1 (additive): the code a module id runs now (pinning rules modules).
    ("module_code_hash", "iii", "i"),
    // Added in ABI v1 (additive): a pure entry point of the code a SHA-256 names, with no state
    // (rules pinned by code).
    ("call_code", "iiiiiIii", "I"),
];

/// The revision of ABI v1 this build gives new chains ([`crate::RuntimeConfig::abi_revision`]):
/// 1 is everything above; 2 adds scheduled calls and draws ([`SCHEDULING_IMPORTS`],
/// [`SCHEDULING_EXPORTS`]); 3 adds sealed moves ([`SEALING_IMPORTS`]). A chain runs the revision its genesis's configuration hash names
/// (revision 1 hashes as every configuration did before revisions existed), so a chain made
/// before scheduled calls refuses and accepts exactly the modules it always did, and a node of
/// another revision cannot join a chain unnoticed.
pub const ABI_REVISION: u32 = 3;

/// The first revision with scheduled calls and draws.
pub(crate) const SCHEDULING_REVISION: u32 = 2;

/// The first revision with sealed moves.
pub(crate) const SEALING_REVISION: u32 = 3;

/// Imports of revision 3 (`schedule_sealed`, `seal`; ABI.md, "Sealed moves"), in [`IMPORTS`]'s
/// notation.
pub(crate) const SEALING_IMPORTS: &[(&str, &str, &str)] =
    &[("schedule_sealed", "IiiI", "I"), ("seal", "Iiiii", "I")];

/// Imports of revision 2 (`schedule`, `cancel_scheduled`, `draw`; ABI.md, "Scheduled calls and
/// draws"), in [`IMPORTS`]'s notation.
pub(crate) const SCHEDULING_IMPORTS: &[(&str, &str, &str)] = &[
    ("schedule", "iIiiI", "I"),
    ("cancel_scheduled", "I", "i"),
    ("draw", "i", ""),
];

/// The exports of ABI v1: `(name, params, results, required)`, one letter per value as in
/// [`IMPORTS`] (`i` = `i32`, `I` = `i64`).
pub(crate) const EXPORTS: &[(&str, &str, &str, bool)] = &[
    ("gc_abi_version", "", "i", true),
    ("gc_alloc", "i", "i", true),
    ("gc_apply", "iiii", "i", true),
    ("gc_view", "ii", "i", true),
    ("gc_end_block", "", "i", false),
    ("gc_migrate", "iiii", "i", false),
];

/// Exports of revision 2, in [`EXPORTS`]'s notation: `gc_scheduled` (under revision 1 an export
/// of that name is no entry point and may have any type, as before).
pub(crate) const SCHEDULING_EXPORTS: &[(&str, &str, &str, bool)] =
    &[("gc_scheduled", "Iii", "i", false)];

/// The ABI notation of a letter type (`i` = `i32`, `I` = `i64`): `(i32, i32) -> i64`.
pub(crate) fn abi_type(params: &str, results: &str) -> String {
    let name = |c: char| if c == 'I' { "i64" } else { "i32" };
    let params = params.chars().map(name).collect::<Vec<_>>().join(", ");
    match results {
        "" => format!("({params})"),
        r => format!(
            "({params}) -> {}",
            r.chars().map(name).collect::<Vec<_>>().join(", ")
        ),
    }
}
