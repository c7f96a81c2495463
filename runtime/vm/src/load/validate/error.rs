//! [`ValidationError`]: why a module is refused at load, and its fixed text (ABI.md,
//! "Validation rules"): the rule and the offending item, never a parser's own words.

use core::fmt;

use super::*;

/// Why a module is refused. `Display` gives the fixed text naming the rule and the offending
/// item (ABI.md, "Validation rules").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValidationError {
    /// Not a wasm binary module at all (bad bytes, a text module, a malformed section): the
    /// byte offset wasmparser stopped at, when it gave one.
    Malformed {
        /// Offset of the first bad byte.
        offset: Option<usize>,
    },
    /// A wasm feature the chain does not allow (a name from [`REFUSED_FEATURES`]), or
    /// `"unknown"` when no single refused feature explains the failure.
    Feature(&'static str),
    /// Something measured in bytes is too large: `what` is `module`, `code` or `data`.
    TooLarge {
        /// What was measured.
        what: &'static str,
        /// Its size, bytes.
        bytes: u64,
        /// The limit, bytes.
        limit: u64,
    },
    /// Too many items of a kind (`types`, `imports`, `functions`, `globals`, `exports`,
    /// `tables`, `data segments`, `element segments`, `table elements`).
    TooMany {
        /// The kind, plural.
        what: &'static str,
        /// How many the module has.
        count: u64,
        /// The limit.
        limit: u64,
    },
    /// Not exactly one memory.
    MemoryCount(u32),
    /// The memory's initial size is above the chain's memory limit.
    MemoryTooLarge {
        /// The module's initial memory, bytes.
        initial_bytes: u64,
        /// The chain's memory limit, bytes.
        limit_bytes: u64,
    },
    /// The table's initial size is above [`MAX_TABLE_ELEMENTS`].
    TableTooLarge {
        /// Initial entries.
        initial: u64,
        /// The limit.
        limit: u64,
    },
    /// An import from another module than `gamechain_v1` (e.g. WASI).
    ForeignImport {
        /// The import's module.
        module: String,
        /// The import's name.
        name: String,
    },
    /// `gamechain_v1.<name>` is not in ABI v1.
    UnknownImport(String),
    /// An ABI import that is not a function, or has another type.
    ImportType {
        /// The import's name.
        name: String,
        /// What the module declares, e.g. `(i32) -> i32` or `a global`.
        found: String,
        /// The ABI type, e.g. `(i32, i32, i32, i32) -> i64`.
        expected: String,
    },
    /// A required export is missing.
    MissingExport(&'static str),
    /// An ABI export of the wrong kind or type.
    ExportType {
        /// The export's name.
        name: &'static str,
        /// What the module exports under it.
        found: String,
        /// What ABI v1 requires.
        expected: String,
    },
    /// A function with too many parameters plus locals.
    Locals {
        /// Function index (imports first).
        func: u32,
        /// Parameters plus declared locals.
        count: u64,
        /// [`MAX_LOCALS`].
        limit: u32,
    },
    /// A function whose operand stack grows too high.
    OperandStack {
        /// Function index.
        func: u32,
        /// Highest operand stack, values.
        height: u32,
        /// [`MAX_OPERAND_STACK`].
        limit: u32,
    },
    /// The `gamechain.schema` custom section (the module's schema, `docs/modules.md`,
    /// "Schema") is malformed; the text is one of [`SCHEMA_ERRORS`](super::SCHEMA_ERRORS).
    Schema(&'static str),
    /// The start function can reach a host import or an indirect call.
    StartCallsOut {
        /// The start function's index.
        start: u32,
        /// The function that makes the call (the start function itself or one it calls).
        via: u32,
        /// `host import gamechain_v1.<name>` or `call_indirect`.
        what: String,
    },
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Malformed { offset: Some(o) } => {
                write!(f, "not a valid wasm module (at byte offset {o})")
            }
            Self::Malformed { offset: None } => f.write_str("not a valid wasm module"),
            Self::Feature(name) => write!(f, "feature {name} is not allowed"),
            Self::TooLarge { what, bytes, limit } => {
                write!(f, "{what} is {bytes} bytes, the limit is {limit}")
            }
            Self::TooMany { what, count, limit } => {
                write!(f, "module has {count} {what}, the limit is {limit}")
            }
            Self::MemoryCount(n) => {
                write!(f, "module has {n} memories, exactly 1 is required")
            }
            Self::MemoryTooLarge {
                initial_bytes,
                limit_bytes,
            } => write!(
                f,
                "memory starts at {initial_bytes} bytes, the limit is {limit_bytes}"
            ),
            Self::TableTooLarge { initial, limit } => {
                write!(f, "table starts at {initial} elements, the limit is {limit}")
            }
            Self::ForeignImport { module, name } => write!(
                f,
                "import {module}.{name} is not in ABI v{ABI_VERSION}: only {IMPORT_MODULE} functions may be imported"
            ),
            Self::UnknownImport(name) => {
                write!(f, "import {IMPORT_MODULE}.{name} is not in ABI v{ABI_VERSION}")
            }
            Self::ImportType {
                name,
                found,
                expected,
            } => write!(
                f,
                "import {IMPORT_MODULE}.{name} has type {found}, ABI v{ABI_VERSION} requires {expected}"
            ),
            Self::MissingExport(name) => {
                write!(f, "export {name} is missing, ABI v{ABI_VERSION} requires it")
            }
            Self::ExportType {
                name,
                found,
                expected,
            } => write!(
                f,
                "export {name} has type {found}, ABI v{ABI_VERSION} requires {expected}"
            ),
            Self::Locals { func, count, limit } => {
                write!(f, "function {func} has {count} locals, the limit is {limit}")
            }
            Self::OperandStack {
                func,
                height,
                limit,
            } => write!(
                f,
                "function {func} has an operand stack of {height} values, the limit is {limit}"
            ),
            Self::Schema(what) => write!(f, "custom section gamechain.schema {what}"),
            Self::StartCallsOut { start, via, what } => write!(
                f,
                "start function {start} may call {what} (in function {via}); a start function may not call the host"
            ),
        }
    }
}

impl std::error::Error for ValidationError {}
