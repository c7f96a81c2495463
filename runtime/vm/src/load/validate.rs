//! Load-time validation of a guest module: the first thing [`crate::WasmModule::new`] does, so
//! every load path (genesis, deploy, the compiled-module cache) refuses the same modules with
//! the same text. ABI.md, "Validation rules", is the normative list; this file implements it.
//!
//! [`validate`] parses the binary once with `wasmparser` (the version wasmtime itself uses,
//! pinned) and checks, in this fixed order, stopping at the first rule broken:
//!
//! 1. the module's size ([`MAX_MODULE_BYTES`]);
//! 2. well-formedness and the wasm feature set: the module is validated with exactly the
//!    chain's features (`abi.rs`, `allowed_features`); when that fails it is validated again
//!    with every feature wasmparser knows: if that fails too the module is
//!    [`ValidationError::Malformed`] (only the byte offset is kept, never wasmparser's text),
//!    otherwise the first refused feature it uses, in [`REFUSED_FEATURES`] order, is named;
//! 3. counts and sizes: types, imports, functions, globals, exports, tables, data and element
//!    segments, table elements in element segments, code and data bytes;
//! 4. the memory (exactly one, initial size within the chain's memory limit) and the table
//!    (initial size within [`MAX_TABLE_ELEMENTS`]);
//! 5. imports (only `gamechain_v1` functions of ABI v1 with exactly their types), in order;
//! 6. exports (`memory`, `gc_abi_version`, `gc_alloc`, `gc_apply`, `gc_view`, optional
//!    `gc_end_block` and `gc_migrate`, with the ABI types);
//! 7. each function, in index order: parameters plus locals ([`MAX_LOCALS`]) and the height of
//!    its operand stack ([`MAX_OPERAND_STACK`]);
//! 8. the start function: it may not reach a host import (directly or through other
//!    functions) nor a `call_indirect` (whose target cannot be known);
//! 9. the module's schema, the custom section `gamechain.schema` (optional): at most one such
//!    section, of at most [`MAX_SCHEMA_BYTES`], UTF-8, a schema of format version 1
//!    (`gamechain_sdk::schema::Schema::parse`); refused with one of [`SCHEMA_ERRORS`]. A valid
//!    one is kept ([`ModuleInfo::schema`], served as [`crate::WasmModule::schema`]).
//!
//! Every error's `Display` is a fixed text built from this file's words and the module's own
//! names and numbers: it is the same on every node and across wasmtime upgrades, so it can go
//! into a receipt. What the validator learns on the way (each function's frame) is returned in
//! [`ModuleInfo`] for the stack-height instrumentation (`stack.rs`).

use wasmparser::{
    ElementItems, ExternalKind, FuncType, FuncValidatorAllocations, OperatorsReader, Parser,
    Payload, TypeRef, ValType, Validator, WasmFeatures,
};

use crate::abi::{
    abi_type, EXPORTS, IMPORTS, IMPORT_MODULE, SCHEDULING_EXPORTS, SCHEDULING_IMPORTS,
    SCHEDULING_REVISION, SEALING_IMPORTS, SEALING_REVISION,
};
use crate::abi::{allowed_features, ABI_VERSION, MAX_TABLE_ELEMENTS};

/// Largest module binary, bytes (all sections, custom ones included). Bounds the work of
/// parsing and compiling before any other rule is checked.
pub const MAX_MODULE_BYTES: usize = 4 << 20;

/// Largest code section, bytes. A Rust guest with `serde_json` is ~200 KB of code; 1 MiB bounds
/// the compile time (and memory) of an upload: Winch, which compiles uploads, is linear in it.
pub const MAX_CODE_BYTES: usize = 1 << 20;

/// Most bytes in all data segments together (the tic-tac-toe guest has 38 KB).
pub const MAX_DATA_BYTES: usize = 1 << 20;

/// Most functions, imported and defined (the tic-tac-toe guest has 454).
pub const MAX_FUNCTIONS: u32 = 10_000;

/// Most parameters plus declared locals of one function (the largest tic-tac-toe function has
/// about 50). Bounds the frame of one call (see `stack.rs`).
pub const MAX_LOCALS: u32 = 1_024;

/// Most values on one function's operand stack at any point (all blocks together). Bounds the
/// frame of one call with [`MAX_LOCALS`].
pub const MAX_OPERAND_STACK: u32 = 1_024;

/// Most types in the type section.
pub const MAX_TYPES: u32 = 1_024;

/// Most imports (ABI v1 has 24 functions; importing one twice is allowed).
pub const MAX_IMPORTS: u32 = 256;

/// Most globals (a Rust guest has 1 to 3). Each mutable global is reset after every call of a
/// reused instance.
pub const MAX_GLOBALS: u32 = 1_024;

/// Most exports.
pub const MAX_EXPORTS: u32 = 1_024;

/// Most data segments, and most element segments.
pub const MAX_SEGMENTS: u32 = 1_024;

/// Most tables and memories: exactly one memory (ABI.md, "Guest exports"), at most one table.
pub const MAX_TABLES: u32 = 1;

/// The refused wasm features, as named in errors, most specific first: the first one a
/// module uses is the one reported. See ABI.md, "Validation rules", for why each is refused.
pub const REFUSED_FEATURES: &[(&str, WasmFeatures)] = &[
    ("relaxed_simd", WasmFeatures::RELAXED_SIMD),
    ("simd", WasmFeatures::SIMD),
    (
        "shared_everything_threads",
        WasmFeatures::SHARED_EVERYTHING_THREADS,
    ),
    ("threads", WasmFeatures::THREADS),
    ("memory64", WasmFeatures::MEMORY64),
    ("multi_memory", WasmFeatures::MULTI_MEMORY),
    ("custom_page_sizes", WasmFeatures::CUSTOM_PAGE_SIZES),
    ("memory_control", WasmFeatures::MEMORY_CONTROL),
    ("legacy_exceptions", WasmFeatures::LEGACY_EXCEPTIONS),
    ("exceptions", WasmFeatures::EXCEPTIONS),
    ("tail_call", WasmFeatures::TAIL_CALL),
    ("gc", WasmFeatures::GC),
    ("function_references", WasmFeatures::FUNCTION_REFERENCES),
    ("gc_types", WasmFeatures::GC_TYPES),
    ("stack_switching", WasmFeatures::STACK_SWITCHING),
    ("extended_const", WasmFeatures::EXTENDED_CONST),
    ("wide_arithmetic", WasmFeatures::WIDE_ARITHMETIC),
    ("custom_descriptors", WasmFeatures::CUSTOM_DESCRIPTORS),
    ("compact_imports", WasmFeatures::COMPACT_IMPORTS),
    ("component_model", WasmFeatures::COMPONENT_MODEL),
];

mod error;
pub use error::ValidationError;

pub use gamechain_sdk::schema::{MAX_SCHEMA_BYTES, SECTION as SCHEMA_SECTION};

/// The fixed texts of a refused `gamechain.schema` section (each follows
/// `custom section gamechain.schema `), in the order they are checked.
pub const SCHEMA_ERRORS: [&str; 4] = [
    "appears more than once",
    "is larger than 65536 bytes",
    "is not UTF-8",
    "is not a valid module schema",
];

/// The frame of one defined function, in values (see `stack.rs` for its cost).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Frame {
    /// Parameters plus declared locals.
    pub(crate) locals: u32,
    /// Highest operand stack height.
    pub(crate) max_stack: u32,
}

/// What validation learned that the instrumentation needs.
#[derive(Debug, Clone, Default)]
pub(crate) struct ModuleInfo {
    /// Imported functions (they come first in the function index space).
    pub(crate) func_imports: u32,
    /// Type index of every function, imports first.
    pub(crate) func_types: Vec<u32>,
    /// The frame of every defined function.
    pub(crate) frames: Vec<Frame>,
    /// Each type's signature (`None`: not a function type).
    pub(crate) types: Vec<Option<FuncType>>,
    /// What each defined function calls.
    pub(crate) calls: Vec<Calls>,
    /// The module's schema text (its valid `gamechain.schema` section), if it has one.
    pub(crate) schema: Option<String>,
}

/// What one defined function calls (for the start function rule and `stack.rs`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Calls {
    /// Functions it calls directly (imports included), in code order.
    pub(crate) direct: Vec<u32>,
    /// Whether it has a `call_indirect`.
    pub(crate) indirect: bool,
}

/// Everything the rules need, collected in one pass.
#[derive(Default)]
struct Collected<'a> {
    info: ModuleInfo,
    imports: Vec<(&'a str, &'a str, TypeRef)>,
    exports: Vec<(&'a str, ExternalKind, u32)>,
    memories: Vec<wasmparser::MemoryType>,
    tables: Vec<wasmparser::TableType>,
    globals: u32,
    global_imports: u32,
    data_segments: u32,
    data_bytes: u64,
    element_segments: u32,
    element_items: u64,
    code_bytes: u64,
    start: Option<u32>,
    /// The data of every `gamechain.schema` custom section, in order.
    schemas: Vec<&'a [u8]>,
}

/// Validates `wasm` against the chain's rules (see the module documentation); `memory_limit` is
/// the chain's memory limit in bytes. On success, returns what the instrumentation needs.
///
/// Errors: the first rule broken, in the documented order.
pub(crate) fn validate(
    wasm: &[u8],
    memory_limit: u64,
    revision: u32,
) -> Result<ModuleInfo, ValidationError> {
    if wasm.len() > MAX_MODULE_BYTES {
        return Err(ValidationError::TooLarge {
            what: "module",
            bytes: wasm.len() as u64,
            limit: MAX_MODULE_BYTES as u64,
        });
    }
    let c = match collect(wasm) {
        Ok(c) => c,
        Err(_) => return Err(diagnose(wasm)),
    };
    // wasmparser reads exact function imports and exports (the custom-descriptors proposal)
    // without that feature, and wasmtime cannot compile them: refused here, with the
    // feature's text, not by the engine.
    let exact_import = c
        .imports
        .iter()
        .any(|i| matches!(i.2, TypeRef::FuncExact(_)));
    let exact_export = c
        .exports
        .iter()
        .any(|e| matches!(e.1, ExternalKind::FuncExact));
    if exact_import || exact_export {
        return Err(ValidationError::Feature("custom_descriptors"));
    }
    check_counts(&c)?;
    check_memory_and_table(&c, memory_limit)?;
    check_imports(&c, revision)?;
    check_exports(&c, revision)?;
    check_frames(&c)?;
    check_start(&c)?;
    let schema = check_schema(&c.schemas)?;
    let mut info = c.info;
    info.schema = schema;
    Ok(info)
}

/// The schema of a module binary (its `gamechain.schema` custom section), checked by rule 9,
/// without the other rules (for tools: `gamechain module schema --wasm`, the node's
/// `GET /v1/modules/<id>/schema` on code validated at deploy). `Ok(None)`: no such section.
///
/// Errors: [`ValidationError::Malformed`] when the sections cannot be read, else rule 9's
/// [`ValidationError::Schema`].
pub fn read_schema(wasm: &[u8]) -> Result<Option<String>, ValidationError> {
    let mut schemas = Vec::new();
    for payload in Parser::new(0).parse_all(wasm) {
        match payload {
            Ok(Payload::CustomSection(r)) if r.name() == SCHEMA_SECTION => schemas.push(r.data()),
            Ok(_) => {}
            Err(e) => {
                return Err(ValidationError::Malformed {
                    offset: Some(e.offset()),
                })
            }
        }
    }
    check_schema(&schemas)
}

/// Rule 9: the `gamechain.schema` section, when there is one, is a valid schema of at most
/// [`MAX_SCHEMA_BYTES`]; returns its text.
fn check_schema(schemas: &[&[u8]]) -> Result<Option<String>, ValidationError> {
    let data = match schemas {
        [] => return Ok(None),
        [data] => *data,
        _ => return Err(ValidationError::Schema(SCHEMA_ERRORS[0])),
    };
    if data.len() > MAX_SCHEMA_BYTES {
        return Err(ValidationError::Schema(SCHEMA_ERRORS[1]));
    }
    let text = std::str::from_utf8(data).map_err(|_| ValidationError::Schema(SCHEMA_ERRORS[2]))?;
    gamechain_sdk::schema::Schema::parse(text)
        .map_err(|_| ValidationError::Schema(SCHEMA_ERRORS[3]))?;
    Ok(Some(text.to_string()))
}

/// The rules as `key=value` lines for [`crate::RuntimeConfig::canonical_description`]: a
/// change of a limit or of the refused features changes which modules load, so it changes the
/// chain's configuration hash.
pub(crate) fn canonical() -> String {
    let features: Vec<&str> = REFUSED_FEATURES.iter().map(|(n, _)| *n).collect();
    format!(
        "validation=v1\n\
         validation.max_module_bytes={MAX_MODULE_BYTES}\n\
         validation.max_code_bytes={MAX_CODE_BYTES}\n\
         validation.max_data_bytes={MAX_DATA_BYTES}\n\
         validation.max_functions={MAX_FUNCTIONS}\n\
         validation.max_locals={MAX_LOCALS}\n\
         validation.max_operand_stack={MAX_OPERAND_STACK}\n\
         validation.max_types={MAX_TYPES}\n\
         validation.max_imports={MAX_IMPORTS}\n\
         validation.max_globals={MAX_GLOBALS}\n\
         validation.max_exports={MAX_EXPORTS}\n\
         validation.max_segments={MAX_SEGMENTS}\n\
         validation.max_tables={MAX_TABLES}\n\
         validation.start_may_call_host=false\n\
         validation.schema_section=v1,max_bytes={MAX_SCHEMA_BYTES}\n\
         validation.refused_features={}\n",
        features.join(",")
    )
}

/// Why a module that fails validation with the chain's features fails: malformed, or the first
/// refused feature it needs.
fn diagnose(wasm: &[u8]) -> ValidationError {
    let valid_with = |features: WasmFeatures| {
        let mut v = Validator::new_with_features(features);
        v.validate_all(wasm).map(|_| ()).map_err(|e| e.offset())
    };
    if let Err(offset) = valid_with(WasmFeatures::all()) {
        return ValidationError::Malformed {
            offset: Some(offset),
        };
    }
    for &(name, feature) in REFUSED_FEATURES {
        if valid_with(WasmFeatures::all().difference(feature)).is_err() {
            // More than one memory is a rule of its own, with a clearer text.
            if name == "multi_memory" {
                return ValidationError::MemoryCount(count_memories(wasm));
            }
            return ValidationError::Feature(name);
        }
    }
    ValidationError::Feature("unknown")
}

/// Memories a module (valid with every feature) defines or imports.
fn count_memories(wasm: &[u8]) -> u32 {
    let mut n = 0;
    for payload in Parser::new(0).parse_all(wasm).flatten() {
        match payload {
            Payload::MemorySection(s) => n += s.count(),
            Payload::ImportSection(s) => {
                n += s
                    .into_imports()
                    .flatten()
                    .filter(|i| matches!(i.ty, TypeRef::Memory(_)))
                    .count() as u32
            }
            _ => {}
        }
    }
    n
}

/// The frames and types of `wasm` without the ABI rules (for instrumentation tests of modules
/// that are not ABI modules).
#[cfg(test)]
pub(crate) fn analyze(wasm: &[u8]) -> wasmparser::Result<ModuleInfo> {
    collect(wasm).map(|c| c.info)
}

/// Validates `wasm` with exactly the chain's features, collecting what the rules need. Any
/// error (its text is dropped) makes [`validate`] diagnose the module.
fn collect(wasm: &[u8]) -> wasmparser::Result<Collected<'_>> {
    let mut v = Validator::new_with_features(allowed_features());
    let mut c = Collected::default();
    let mut allocs = FuncValidatorAllocations::default();
    for payload in Parser::new(0).parse_all(wasm) {
        let payload = payload?;
        let valid = v.payload(&payload)?;
        match payload {
            Payload::TypeSection(s) => {
                for group in s.clone() {
                    for sub in group?.into_types() {
                        c.info.types.push(match sub.composite_type.inner {
                            wasmparser::CompositeInnerType::Func(f) => Some(f),
                            _ => None,
                        });
                    }
                }
            }
            Payload::ImportSection(s) => {
                for import in s.clone().into_imports() {
                    let import = import?;
                    match import.ty {
                        TypeRef::Func(t) | TypeRef::FuncExact(t) => {
                            c.info.func_imports += 1;
                            c.info.func_types.push(t);
                        }
                        TypeRef::Memory(m) => c.memories.push(m),
                        TypeRef::Table(t) => c.tables.push(t),
                        TypeRef::Global(_) => c.global_imports += 1,
                        TypeRef::Tag(_) => {}
                    }
                    c.imports.push((import.module, import.name, import.ty));
                }
            }
            Payload::FunctionSection(s) => {
                for t in s.clone() {
                    c.info.func_types.push(t?);
                }
            }
            Payload::TableSection(s) => {
                for t in s.clone() {
                    c.tables.push(t?.ty);
                }
            }
            Payload::MemorySection(s) => {
                for m in s.clone() {
                    c.memories.push(m?);
                }
            }
            Payload::GlobalSection(s) => c.globals += s.count(),
            Payload::ExportSection(s) => {
                for e in s.clone() {
                    let e = e?;
                    c.exports.push((e.name, e.kind, e.index));
                }
            }
            Payload::StartSection { func, .. } => c.start = Some(func),
            Payload::CustomSection(r) if r.name() == SCHEMA_SECTION => c.schemas.push(r.data()),
            Payload::ElementSection(s) => {
                for e in s.clone() {
                    c.element_segments += 1;
                    c.element_items += u64::from(match e?.items {
                        ElementItems::Functions(r) => r.count(),
                        ElementItems::Expressions(_, r) => r.count(),
                    });
                }
            }
            Payload::DataSection(s) => {
                for d in s.clone() {
                    c.data_segments += 1;
                    c.data_bytes += d?.data.len() as u64;
                }
            }
            Payload::CodeSectionStart { size, .. } => c.code_bytes = u64::from(size),
            Payload::CodeSectionEntry(body) => {
                let wasmparser::ValidPayload::Func(func, _) = valid else {
                    continue;
                };
                let mut fv = func.into_validator(std::mem::take(&mut allocs));
                let mut reader = body.get_binary_reader();
                fv.read_locals(&mut reader)?;
                let locals = fv.len_locals();
                let mut frame = Frame {
                    locals,
                    max_stack: 0,
                };
                let mut calls = Calls::default();
                let mut ops = OperatorsReader::new(reader);
                while !ops.eof() {
                    let offset = ops.original_position();
                    let op = ops.read()?;
                    fv.op(offset, &op)?;
                    frame.max_stack = frame.max_stack.max(fv.operand_stack_height());
                    match op {
                        wasmparser::Operator::Call { function_index } => {
                            calls.direct.push(function_index)
                        }
                        wasmparser::Operator::CallIndirect { .. } => calls.indirect = true,
                        _ => {}
                    }
                }
                ops.get_binary_reader()
                    .finish_expression(&fv.visitor(ops.original_position()))?;
                c.info.frames.push(frame);
                c.info.calls.push(calls);
                allocs = fv.into_allocations();
            }
            _ => {}
        }
    }
    Ok(c)
}

/// Rule 3: counts and sizes.
fn check_counts(c: &Collected<'_>) -> Result<(), ValidationError> {
    let too_many = |what, count: u64, limit: u32| {
        if count > u64::from(limit) {
            Err(ValidationError::TooMany {
                what,
                count,
                limit: u64::from(limit),
            })
        } else {
            Ok(())
        }
    };
    let too_large = |what, bytes: u64, limit: usize| {
        if bytes > limit as u64 {
            Err(ValidationError::TooLarge {
                what,
                bytes,
                limit: limit as u64,
            })
        } else {
            Ok(())
        }
    };
    too_many("types", c.info.types.len() as u64, MAX_TYPES)?;
    too_many("imports", c.imports.len() as u64, MAX_IMPORTS)?;
    too_many("functions", c.info.func_types.len() as u64, MAX_FUNCTIONS)?;
    too_many(
        "globals",
        u64::from(c.globals) + u64::from(c.global_imports),
        MAX_GLOBALS,
    )?;
    too_many("exports", c.exports.len() as u64, MAX_EXPORTS)?;
    too_many("tables", c.tables.len() as u64, MAX_TABLES)?;
    too_many("data segments", u64::from(c.data_segments), MAX_SEGMENTS)?;
    too_many(
        "element segments",
        u64::from(c.element_segments),
        MAX_SEGMENTS,
    )?;
    too_many(
        "table elements in segments",
        c.element_items,
        MAX_TABLE_ELEMENTS as u32,
    )?;
    too_large("code", c.code_bytes, MAX_CODE_BYTES)?;
    too_large("data", c.data_bytes, MAX_DATA_BYTES)
}

/// Rule 7: each function's frame, in index order.
fn check_frames(c: &Collected<'_>) -> Result<(), ValidationError> {
    for (i, frame) in c.info.frames.iter().enumerate() {
        let func = c.info.func_imports + i as u32;
        if frame.locals > MAX_LOCALS {
            return Err(ValidationError::Locals {
                func,
                count: u64::from(frame.locals),
                limit: MAX_LOCALS,
            });
        }
        if frame.max_stack > MAX_OPERAND_STACK {
            return Err(ValidationError::OperandStack {
                func,
                height: frame.max_stack,
                limit: MAX_OPERAND_STACK,
            });
        }
    }
    Ok(())
}

/// Rule 4.
fn check_memory_and_table(c: &Collected<'_>, memory_limit: u64) -> Result<(), ValidationError> {
    let [memory] = c.memories[..] else {
        return Err(ValidationError::MemoryCount(c.memories.len() as u32));
    };
    let initial_bytes = memory.initial.saturating_mul(1 << 16);
    if initial_bytes > memory_limit {
        return Err(ValidationError::MemoryTooLarge {
            initial_bytes,
            limit_bytes: memory_limit,
        });
    }
    if let Some(t) = c
        .tables
        .iter()
        .find(|t| t.initial > MAX_TABLE_ELEMENTS as u64)
    {
        return Err(ValidationError::TableTooLarge {
            initial: t.initial,
            limit: MAX_TABLE_ELEMENTS as u64,
        });
    }
    Ok(())
}

/// Rule 5, under ABI revision `revision` (`abi.rs`).
fn check_imports(c: &Collected<'_>, revision: u32) -> Result<(), ValidationError> {
    let scheduling: &[(&str, &str, &str)] = if revision >= SCHEDULING_REVISION {
        SCHEDULING_IMPORTS
    } else {
        &[]
    };
    let sealing: &[(&str, &str, &str)] = if revision >= SEALING_REVISION {
        SEALING_IMPORTS
    } else {
        &[]
    };
    for &(module, name, ty) in &c.imports {
        if module != IMPORT_MODULE {
            return Err(ValidationError::ForeignImport {
                module: module.to_string(),
                name: name.to_string(),
            });
        }
        let Some(&(_, params, results)) = IMPORTS
            .iter()
            .chain(scheduling)
            .chain(sealing)
            .find(|(n, _, _)| *n == name)
        else {
            return Err(ValidationError::UnknownImport(name.to_string()));
        };
        let found = match ty {
            TypeRef::Func(t) | TypeRef::FuncExact(t) => c.func_type(t),
            other => kind_name(&other).to_string(),
        };
        let expected = abi_type(params, results);
        if found != expected {
            return Err(ValidationError::ImportType {
                name: name.to_string(),
                found,
                expected,
            });
        }
    }
    Ok(())
}

/// Rule 6, under ABI revision `revision` (`abi.rs`).
fn check_exports(c: &Collected<'_>, revision: u32) -> Result<(), ValidationError> {
    let scheduling: &[(&str, &str, &str, bool)] = if revision >= SCHEDULING_REVISION {
        SCHEDULING_EXPORTS
    } else {
        &[]
    };
    let find = |name: &str| c.exports.iter().find(|e| e.0 == name);
    match find("memory") {
        None => return Err(ValidationError::MissingExport("memory")),
        Some(&(_, ExternalKind::Memory, _)) => {}
        Some(&(_, kind, _)) => {
            return Err(ValidationError::ExportType {
                name: "memory",
                found: export_kind_name(kind).to_string(),
                expected: "a memory".into(),
            })
        }
    }
    for &(name, params, results, required) in EXPORTS.iter().chain(scheduling) {
        let expected = abi_type(params, results);
        let found = match find(name) {
            None if !required => continue,
            None => return Err(ValidationError::MissingExport(name)),
            Some(&(_, ExternalKind::Func, f)) => c
                .info
                .func_types
                .get(f as usize)
                .map_or_else(|| "an unknown function".to_string(), |&t| c.func_type(t)),
            Some(&(_, kind, _)) => export_kind_name(kind).to_string(),
        };
        if found != expected {
            return Err(ValidationError::ExportType {
                name,
                found,
                expected,
            });
        }
    }
    Ok(())
}

/// Rule 8: the start function reaches neither a host import nor a `call_indirect`.
fn check_start(c: &Collected<'_>) -> Result<(), ValidationError> {
    let Some(start) = c.start else {
        return Ok(());
    };
    let imports = c.info.func_imports;
    let mut seen = vec![false; c.info.calls.len()];
    // Functions to visit, in a fixed (depth-first) order so the error names the same function
    // every time.
    let mut todo = vec![start];
    while let Some(f) = todo.pop() {
        let Some(i) = f.checked_sub(imports) else {
            // The start function itself is an import.
            return Err(start_error(c, start, start, f));
        };
        let i = i as usize;
        if std::mem::replace(&mut seen[i], true) {
            continue;
        }
        let calls = &c.info.calls[i];
        if let Some(&host) = calls.direct.iter().find(|&&g| g < imports) {
            return Err(start_error(c, start, f, host));
        }
        if calls.indirect {
            return Err(ValidationError::StartCallsOut {
                start,
                via: f,
                what: "call_indirect".into(),
            });
        }
        todo.extend(calls.direct.iter().rev());
    }
    Ok(())
}

fn start_error(c: &Collected<'_>, start: u32, via: u32, host: u32) -> ValidationError {
    let name = c
        .imports
        .iter()
        .filter(|i| matches!(i.2, TypeRef::Func(_) | TypeRef::FuncExact(_)))
        .nth(host as usize)
        .map_or("?", |i| i.1);
    ValidationError::StartCallsOut {
        start,
        via,
        what: format!("host import {IMPORT_MODULE}.{name}"),
    }
}

impl Collected<'_> {
    /// Type `t` in ABI notation, e.g. `(i32, i32) -> i64`.
    fn func_type(&self, t: u32) -> String {
        match self.info.types.get(t as usize) {
            Some(Some(ty)) => {
                let list = |vs: &[ValType]| vs.iter().map(val_name).collect::<Vec<_>>().join(", ");
                match ty.results() {
                    [] => format!("({})", list(ty.params())),
                    r => format!("({}) -> {}", list(ty.params()), list(r)),
                }
            }
            _ => "a non-function type".into(),
        }
    }
}

/// A value type's name in the ABI notation (fixed here, not wasmparser's `Display`).
fn val_name(v: &ValType) -> &'static str {
    match v {
        ValType::I32 => "i32",
        ValType::I64 => "i64",
        ValType::F32 => "f32",
        ValType::F64 => "f64",
        ValType::V128 => "v128",
        ValType::Ref(r) if r.is_func_ref() => "funcref",
        ValType::Ref(r) if r.is_extern_ref() => "externref",
        ValType::Ref(_) => "ref",
    }
}

fn kind_name(ty: &TypeRef) -> &'static str {
    match ty {
        TypeRef::Func(_) | TypeRef::FuncExact(_) => "a function",
        TypeRef::Table(_) => "a table",
        TypeRef::Memory(_) => "a memory",
        TypeRef::Global(_) => "a global",
        TypeRef::Tag(_) => "a tag",
    }
}

fn export_kind_name(kind: ExternalKind) -> &'static str {
    match kind {
        ExternalKind::Func | ExternalKind::FuncExact => "a function",
        ExternalKind::Table => "a table",
        ExternalKind::Memory => "a memory",
        ExternalKind::Global => "a global",
        ExternalKind::Tag => "a tag",
    }
}

#[cfg(test)]
mod tests;
