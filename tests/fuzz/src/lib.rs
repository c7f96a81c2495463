//! gamechain-fuzz: what the cargo-fuzz targets (`fuzz_targets/`) share: the oracles for error
//! texts (ABI.md "Fixed error texts" and "Validation rules") and the runtime configuration the
//! targets load modules with. See `README.md` for the targets and their invariants.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use arbitrary::Unstructured;
use gamechain_sdk::ActionError;
use gamechain_vm::fuzzing;
use gamechain_vm::{Allocation, OptLevel, Runtime, RuntimeConfig};

/// Memory limit of every runtime here, bytes: the chain's default (16 MiB).
pub const MEMORY_LIMIT: u64 = 16 << 20;

/// Fuel of every entry-point call of the fuzzing runtime: small, so a looping module costs
/// milliseconds, not the chain's 10,000,000.
pub const FUEL: u64 = 1_000_000;

/// The receipt texts of ABI.md, "Fixed error texts": the only `internal: …` texts the host may
/// produce.
pub const FIXED_TEXTS: &[&str] = &[
    "internal: out of fuel",
    "internal: memory limit exceeded",
    "internal: module panicked",
    "internal: bad pointer from module",
    "internal: invalid UTF-8 from module",
    "internal: event data is not valid JSON",
    "internal: state is read-only in a view",
    "internal: malformed module output",
    "internal: guest allocation failed",
    "internal: key longer than 1024 bytes",
    "internal: state writes over 262144 bytes in one call",
    "internal: more than 256 events or 65536 bytes of events in one call",
    "internal: output over 1048576 bytes",
    "internal: no state in a call by code hash",
    "internal: trap: unreachable",
    "internal: trap: integer divide by zero",
    "internal: trap: integer overflow",
    "internal: trap: invalid conversion to integer",
    "internal: trap: out of bounds memory access",
    "internal: trap: indirect call",
    "internal: trap: stack limit exceeded",
    "internal: trap: stack overflow",
    "internal: trap",
];

/// Whether `text` is one of [`FIXED_TEXTS`].
pub fn is_fixed_text(text: &str) -> bool {
    FIXED_TEXTS.contains(&text)
}

/// Panics unless `err` is an `internal` error with a fixed text, or an error of another code
/// (those only come from a module's own error object or from the bank's rules).
pub fn assert_fixed(err: &ActionError) {
    if let ActionError::Internal(_) = err {
        let text = err.to_string();
        assert!(is_fixed_text(&text), "not a fixed error text: {text:?}");
    }
}

/// The validator's texts (ABI.md, "Validation rules"): `#` stands for a decimal number, `*`
/// for any text, empty included (a name or a type taken from the module), `{…|…}` for one of the listed words.
const VALIDATOR_TEXTS: &[&str] = &[
    "module is # bytes, the limit is 4194304",
    "code is # bytes, the limit is 1048576",
    "data is # bytes, the limit is 1048576",
    "not a valid wasm module (at byte offset #)",
    "not a valid wasm module",
    "feature {relaxed_simd|simd|shared_everything_threads|threads|memory64|multi_memory|custom_page_sizes|memory_control|legacy_exceptions|exceptions|tail_call|gc|function_references|gc_types|stack_switching|extended_const|wide_arithmetic|custom_descriptors|compact_imports|component_model|unknown} is not allowed",
    "module has # {types|imports|functions|globals|exports|tables|data segments|element segments|table elements in segments}, the limit is #",
    "module has # memories, exactly 1 is required",
    "memory starts at # bytes, the limit is 16777216",
    "table starts at # elements, the limit is 20000",
    "import *.* is not in ABI v1: only gamechain_v1 functions may be imported",
    "import gamechain_v1.* is not in ABI v1",
    "import gamechain_v1.* has type *, ABI v1 requires *",
    "export {memory|gc_abi_version|gc_alloc|gc_apply|gc_view} is missing, ABI v1 requires it",
    "export {memory|gc_abi_version|gc_alloc|gc_apply|gc_view|gc_end_block|gc_migrate} has type *, ABI v1 requires *",
    "function # has # locals, the limit is 1024",
    "function # has an operand stack of # values, the limit is 1024",
    "start function # may call host import gamechain_v1.* (in function #); a start function may not call the host",
    "start function # may call call_indirect (in function #); a start function may not call the host",
];

/// Whether `text` is one of the validator's fixed texts (see `VALIDATOR_TEXTS`).
pub fn is_validator_text(text: &str) -> bool {
    VALIDATOR_TEXTS
        .iter()
        .any(|p| matches(p.as_bytes(), text.as_bytes()))
}

/// `text` matches `pattern` (`#` digits, `*` any text, `{a|b}` one word).
fn matches(pattern: &[u8], text: &[u8]) -> bool {
    match pattern.first() {
        None => text.is_empty(),
        Some(b'#') => {
            let digits = text.iter().take_while(|c| c.is_ascii_digit()).count();
            (1..=digits).any(|n| matches(&pattern[1..], &text[n..]))
        }
        Some(b'*') => (0..=text.len()).any(|n| matches(&pattern[1..], &text[n..])),
        Some(b'{') => {
            let end = pattern
                .iter()
                .position(|&c| c == b'}')
                .expect("closed brace");
            pattern[1..end].split(|&c| c == b'|').any(|word| {
                text.starts_with(word) && matches(&pattern[end + 1..], &text[word.len()..])
            })
        }
        Some(&c) => text.first() == Some(&c) && matches(&pattern[1..], &text[1..]),
    }
}

/// The fixed text of `err` when it has one (for [`stat`]: which receipt an outcome gave), else
/// `"module error"` (a code the module chose) or `"other internal"` (not a fixed text).
pub fn reason(err: &ActionError) -> &'static str {
    match err {
        ActionError::Internal(_) => {
            let text = err.to_string();
            FIXED_TEXTS
                .iter()
                .find(|t| **t == text)
                .copied()
                .unwrap_or("other internal")
        }
        _ => "module error",
    }
}

/// Counts one outcome named `what` (e.g. `refused`, `ran`); every 2,048 counts the tally goes
/// to stderr as `stats: {…}`, so a run's log shows which paths the inputs reach.
pub fn stat(what: &'static str) {
    static STATS: Mutex<(u64, BTreeMap<&'static str, u64>)> = Mutex::new((0, BTreeMap::new()));
    let mut s = STATS.lock().unwrap_or_else(|e| e.into_inner());
    *s.1.entry(what).or_default() += 1;
    s.0 += 1;
    if s.0 % 2048 == 0 {
        eprintln!("stats: {:?}", s.1);
    }
}

/// The runtime the targets load modules into: the chain's configuration with on-demand
/// allocation (no pool to exhaust), [`FUEL`] per call, Cranelift at `OptLevel::None`,
/// instance reuse on and every reset checked against the pristine snapshot (`verify_reuse`
/// panics on a difference).
pub fn runtime() -> &'static Arc<Runtime> {
    static RT: OnceLock<Arc<Runtime>> = OnceLock::new();
    RT.get_or_init(|| {
        Runtime::new(RuntimeConfig {
            fuel_apply: FUEL,
            fuel_view: FUEL,
            fuel_end_block: FUEL,
            memory_limit_bytes: MEMORY_LIMIT as usize,
            allocation: Allocation::OnDemand,
            reuse_instances: true,
            verify_reuse: true,
            // Unoptimised Cranelift (no e-graph pass) for genesis modules and for the
            // trampolines Winch's modules need; `compilers` tiers up at `Speed`, so it
            // compares three code generators.
            opt_level: OptLevel::None,
            ..RuntimeConfig::default()
        })
        .expect("the fuzzing runtime builds")
    })
}

/// [`runtime`] under instrumentation revision 1 (`runtime/vm/src/load/instrument/mod.rs`), the
/// metering older chains run: `compilers` checks that it charges what the newest revision does.
pub fn runtime_r1() -> &'static Arc<Runtime> {
    static RT: OnceLock<Arc<Runtime>> = OnceLock::new();
    RT.get_or_init(|| {
        let config = RuntimeConfig {
            instrumentation_revision: 1,
            ..runtime().config().clone()
        };
        Runtime::new(config).expect("the fuzzing runtime builds")
    })
}

/// The ABI's exports, for `wasm-smith`'s `exports` option (bodies are generated).
const ABI_EXPORTS: &str = r#"(module
  (memory (export "memory") 1)
  (func (export "gc_abi_version") (result i32) i32.const 1)
  (func (export "gc_alloc") (param i32) (result i32) i32.const 0)
  (func (export "gc_apply") (param i32 i32 i32 i32) (result i32) i32.const 0)
  (func (export "gc_view") (param i32 i32) (result i32) i32.const 0)
  (func (export "gc_end_block") (result i32) i32.const 0))"#;

/// `(params, results)` of an ABI type in letters (`i` = `i32`, `I` = `i64`), as WAT.
fn wat_sig(params: &str, results: &str) -> String {
    let ty = |c: char| if c == 'I' { "i64" } else { "i32" };
    let mut s = String::new();
    for c in params.chars() {
        s += &format!(" (param {})", ty(c));
    }
    for c in results.chars() {
        s += &format!(" (result {})", ty(c));
    }
    s
}

pub fn abi_exports() -> &'static [u8] {
    static W: OnceLock<Vec<u8>> = OnceLock::new();
    W.get_or_init(|| wat::parse_str(ABI_EXPORTS).expect("valid WAT"))
}

/// Every `gamechain_v1` import, for `wasm-smith`'s `available_imports` option.
pub fn abi_imports() -> &'static [u8] {
    static W: OnceLock<Vec<u8>> = OnceLock::new();
    W.get_or_init(|| {
        let mut wat = String::from("(module\n");
        for (name, params, results) in fuzzing::abi_imports() {
            wat += &format!(
                "  (import \"gamechain_v1\" \"{name}\" (func{}))\n",
                wat_sig(params, results)
            );
        }
        wat += ")";
        wat::parse_str(&wat).expect("valid WAT")
    })
}

/// A module from `wasm-smith` with the chain's features; `abi`: with the ABI exports and
/// imports.
pub fn generate(u: &mut Unstructured<'_>, abi: bool) -> Option<Vec<u8>> {
    let mut c = wasm_smith::Config::default();
    c.simd_enabled = false;
    c.relaxed_simd_enabled = false;
    c.threads_enabled = false;
    c.shared_everything_threads_enabled = false;
    c.memory64_enabled = false;
    c.exceptions_enabled = false;
    c.tail_call_enabled = false;
    c.gc_enabled = false;
    c.compact_imports_enabled = false;
    c.custom_descriptors_enabled = false;
    c.custom_page_sizes_enabled = false;
    c.wide_arithmetic_enabled = false;
    c.extended_const_enabled = false;
    c.reference_types_enabled = u.arbitrary().ok()?;
    c.bulk_memory_enabled = true;
    c.multi_value_enabled = true;
    c.saturating_float_to_int_enabled = true;
    c.sign_extension_ops_enabled = true;
    c.allow_floats = u.arbitrary().ok()?;
    c.disallow_traps = u.arbitrary().ok()?;
    c.min_memories = 1;
    c.max_memories = 1;
    c.max_memory32_bytes = MEMORY_LIMIT;
    c.max_tables = 1;
    c.max_table_elements = 1_000;
    c.max_funcs = 12;
    c.max_instructions = 120;
    c.max_types = 16;
    c.max_globals = 8;
    c.max_imports = 8;
    c.max_exports = 12;
    c.max_data_segments = 6;
    c.max_element_segments = 6;
    c.max_elements = 32;
    c.max_nesting_depth = 6;
    if abi {
        // The required `memory` export brings the one memory.
        c.min_memories = 0;
        c.max_memories = 0;
        c.exports = Some(abi_exports().to_vec());
        c.available_imports = Some(abi_imports().to_vec());
    }
    let wasm = wasm_smith::Module::new(c, u).ok()?.to_bytes();
    if !abi {
        return Some(wasm);
    }
    // Three in four ABI modules get a working `gc_alloc` (see `abi_fixups`); an input with no
    // bytes left gets one too.
    let alloc = u.arbitrary::<u8>().map_or(true, |b| b % 4 != 3);
    Some(abi_fixups(&wasm, alloc))
}

/// Where a rewritten `gc_alloc` places every input (`abi_fixups`): past the first KiB.
pub const ALLOC_AT: i32 = 1024;

/// `wasm` with the body of its exported `gc_abi_version` replaced by `i32.const 1`, so the
/// chain's load gets past its ABI version check (`run/module.rs`), and with `alloc`, the body
/// of its exported `gc_alloc` replaced by `i32.const ALLOC_AT`, so the host can place an
/// entry point's input (`place` in `run/module.rs`) when the memory is large enough.
/// wasm-smith writes these bodies like any other: in round 5 of `compilers` most generated
/// modules returned another version and were refused before a single call, and in round 6 a
/// third of the applies that loaded ended at `internal: guest allocation failed` before
/// `gc_apply` ran. `wasm` unchanged when it has no such export or does not parse.
pub fn abi_fixups(wasm: &[u8], alloc: bool) -> Vec<u8> {
    use wasm_encoder::reencode::{utils, Error, Reencode};
    use wasmparser_263::{ExternalKind, Parser, Payload, TypeRef};

    struct Fix {
        /// (index among the module's own functions, imports not counted; the constant its
        /// body becomes).
        targets: Vec<(u32, i32)>,
        next: u32,
    }
    impl Reencode for Fix {
        type Error = std::convert::Infallible;
        fn parse_function_body(
            &mut self,
            code: &mut wasm_encoder::CodeSection,
            func: wasmparser_263::FunctionBody<'_>,
        ) -> Result<(), Error<Self::Error>> {
            let index = self.next;
            self.next += 1;
            let Some(&(_, value)) = self.targets.iter().find(|(t, _)| *t == index) else {
                return utils::parse_function_body(self, code, func);
            };
            let mut f = wasm_encoder::Function::new([]);
            f.instructions().i32_const(value).end();
            code.function(&f);
            Ok(())
        }
    }

    let mut imported = 0u32;
    let mut exports = Vec::new();
    for payload in Parser::new(0).parse_all(wasm) {
        match payload {
            Ok(Payload::ImportSection(r)) => {
                for imports in r {
                    let Ok(imports) = imports else {
                        return wasm.to_vec();
                    };
                    for import in imports {
                        let Ok((_, import)) = import else {
                            return wasm.to_vec();
                        };
                        imported += matches!(import.ty, TypeRef::Func(_)) as u32;
                    }
                }
            }
            Ok(Payload::ExportSection(r)) => {
                for e in r.into_iter().flatten() {
                    let value = match e.name {
                        "gc_abi_version" => 1,
                        "gc_alloc" if alloc => ALLOC_AT,
                        _ => continue,
                    };
                    if e.kind == ExternalKind::Func {
                        exports.push((e.index, value));
                    }
                }
            }
            Ok(_) => {}
            Err(_) => return wasm.to_vec(),
        }
    }
    // An export of an imported function keeps its import.
    let targets: Vec<(u32, i32)> = exports
        .into_iter()
        .filter_map(|(i, v)| Some((i.checked_sub(imported)?, v)))
        .collect();
    if targets.is_empty() {
        return wasm.to_vec();
    }
    let mut module = wasm_encoder::Module::new();
    let mut fix = Fix { targets, next: 0 };
    match fix.parse_core_module(&mut module, Parser::new(0), wasm) {
        Ok(()) => module.finish(),
        Err(_) => wasm.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validator_patterns_match_their_texts() {
        assert!(is_validator_text(
            "not a valid wasm module (at byte offset 8)"
        ));
        assert!(is_validator_text(
            "module has 2 memories, exactly 1 is required"
        ));
        assert!(is_validator_text("feature simd is not allowed"));
        assert!(is_validator_text(
            "import gamechain_v1.get has type (i32) -> i64, ABI v1 requires (i32, i32, i32, i32) -> i64"
        ));
        assert!(is_validator_text("module has 3 tables, the limit is 1"));
        assert!(!is_validator_text(
            "type mismatch: expected i32 (at offset 0x20)"
        ));
        assert!(!is_validator_text("feature foo is not allowed"));
    }
}
