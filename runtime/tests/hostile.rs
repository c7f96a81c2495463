//! The hostile corpus (`wat/hostile/`, its README.md is the table of cases and outcomes): every
//! case run through the runtime four times (instance reuse on and off, twice each) with the
//! exact fixed outcome, no surviving writes, unchanged state, identical results, and a good
//! module served right after. Plus the limits that are easier to build in Rust than to write as
//! WAT (code, data, functions, operand stack, module size), the exact stack-depth boundary, the
//! largest frames against the native stack (under both compilers), and the NaN bits. Modules
//! load as uploads (compiled by Winch), as a deploy's code would.

use std::sync::{Arc, OnceLock};

use gamechain_runtime::{
    execute_apply, execute_end_block, run_view, Allocation, MemState, Origin, Overlay, Runtime,
    RuntimeConfig, State, TxOutcome, WasmModule, WriteSet, FRAME_OVERHEAD, MAX_CODE_BYTES,
    MAX_DATA_BYTES, MAX_FUNCTIONS, MAX_LOCALS, MAX_MODULE_BYTES, MAX_OPERAND_STACK, STACK_LIMIT,
};
use gamechain_sdk::{ledger, Query};

const TXID: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
const ID: &str = "hostile";
const SENDER: &str = "alice";

/// Reuse on (with every reset verified) and reuse off; otherwise the default configuration.
fn runtimes() -> &'static [Arc<Runtime>; 2] {
    static RTS: OnceLock<[Arc<Runtime>; 2]> = OnceLock::new();
    RTS.get_or_init(|| {
        let rt = |reuse: bool| {
            Runtime::new(RuntimeConfig {
                reuse_instances: reuse,
                verify_reuse: reuse,
                allocation: Allocation::Pooling { instances: 8 },
                ..RuntimeConfig::default()
            })
            .unwrap()
        };
        [rt(true), rt(false)]
    })
}

use crate::wasm_host::env;

/// The corpus's base state (README.md, "The state every call runs over").
fn base_state() -> MemState {
    let mut state = MemState::new();
    for i in 0..2000 {
        state.map.insert(format!("m/{ID}/k/{i:04}"), b"v".to_vec());
    }
    state.map.insert("m/other/k".into(), b"theirs".to_vec());
    let writes = {
        let mut overlay = Overlay::new(&state);
        ledger::create_token(&mut overlay, "module:other", "GEM", "Gem", 0, None).unwrap();
        overlay.into_writes()
    };
    state.apply(writes);
    state
}

fn corpus_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/wat/hostile")
}

fn corpus_wasm(file: &str) -> Vec<u8> {
    let path = corpus_dir().join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    wat::parse_str(&text).unwrap_or_else(|e| panic!("{file}: bad WAT: {e}"))
}

fn wasm(text: &str) -> Vec<u8> {
    wat::parse_str(text).unwrap_or_else(|e| panic!("bad test WAT: {e}"))
}

/// One row of the corpus table.
#[derive(Debug)]
struct Case {
    name: String,
    file: String,
    call: Call,
    expected: String,
}

#[derive(Debug)]
enum Call {
    Load,
    Apply(Vec<u8>),
    EndBlock,
    View,
}

/// The rows of README.md's case table: `| case | `file` | `call` | `outcome` |`.
fn cases() -> Vec<Case> {
    let readme = std::fs::read_to_string(corpus_dir().join("README.md")).unwrap();
    let table = readme
        .split("| case | file | call | outcome |")
        .nth(1)
        .expect("README.md has the case table");
    let cases: Vec<Case> = table
        .lines()
        .filter(|l| l.starts_with("| ") && l.contains(".wat`"))
        .map(|line| {
            let cells: Vec<&str> = line
                .trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().trim_matches('`'))
                .collect();
            let [name, file, call, expected] = cells[..] else {
                panic!("bad row: {line}");
            };
            let call = match call.split_once(' ') {
                None if call == "load" => Call::Load,
                None if call == "apply" => Call::Apply(b"{}".to_vec()),
                None if call == "end_block" => Call::EndBlock,
                None if call == "view" => Call::View,
                Some(("apply", op)) => Call::Apply(op.as_bytes().to_vec()),
                _ => panic!("bad call in row: {line}"),
            };
            Case {
                name: name.into(),
                file: file.into(),
                call,
                expected: expected.into(),
            }
        })
        .collect();
    assert!(cases.len() > 40, "only {} cases parsed", cases.len());
    cases
}

/// The outcome's text: `ok` or the receipt error.
fn outcome_text(out: &TxOutcome) -> String {
    match &out.result {
        Ok(()) => "ok".into(),
        Err(e) => e.to_string(),
    }
}

/// Runs `case` in `rt`, twice on one loaded module; the outcomes.
fn run_case(rt: &Arc<Runtime>, case: &Case, state: &MemState) -> Vec<TxOutcome> {
    let module = WasmModule::new(rt, ID, &corpus_wasm(&case.file))
        .unwrap_or_else(|e| panic!("{}: load failed: {e}", case.name));
    (0..2)
        .map(|_| match &case.call {
            Call::Apply(op) => execute_apply(&module, state, &env(), TXID, SENDER, op).unwrap(),
            Call::EndBlock => execute_end_block(&module, state, &env()).unwrap(),
            Call::View => {
                // A view has no writes or events; its outcome in the same shape.
                let (result, fuel_used) = run_view(&module, state, &Query::new()).unwrap();
                TxOutcome {
                    result: result.map(|_| ()),
                    fuel_used,
                    events: Vec::new(),
                    writes: WriteSet::new(),
                    log: Vec::new(),
                }
            }
            Call::Load => unreachable!(),
        })
        .collect()
}

/// The counter still loads and counts in `rt`.
fn assert_serving(rt: &Arc<Runtime>, after: &str) {
    let counter = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/wat/counter.wat"
    ))
    .unwrap();
    let module = WasmModule::new(rt, "counter", &wasm(&counter)).unwrap();
    let out = execute_apply(&module, &MemState::new(), &env(), TXID, SENDER, b"{}").unwrap();
    assert_eq!(out.result, Ok(()), "not serving after {after}");
    assert_eq!(out.writes["m/counter/n"], Some(b"1".to_vec()));
}

#[test]
fn every_corpus_case_has_its_fixed_outcome_everywhere() {
    let state = base_state();
    let before = state.clone();
    for case in cases() {
        if let Call::Load = case.call {
            for rt in runtimes() {
                for _ in 0..2 {
                    let err = WasmModule::new(rt, ID, &corpus_wasm(&case.file))
                        .expect_err(&case.name)
                        .to_string();
                    assert_eq!(err, case.expected, "{}", case.name);
                }
                assert_serving(rt, &case.name);
            }
            continue;
        }
        let mut outcomes = Vec::new();
        for rt in runtimes() {
            outcomes.extend(run_case(rt, &case, &state));
            assert_serving(rt, &case.name);
        }
        let first = &outcomes[0];
        assert_eq!(outcome_text(first), case.expected, "{}", case.name);
        for other in &outcomes[1..] {
            assert_eq!(other, first, "{}: outcomes differ between runs", case.name);
        }
        if first.result.is_err() {
            assert!(
                first.writes.is_empty() && first.events.is_empty(),
                "{}: a failed call kept writes or events",
                case.name
            );
        }
        assert!(first.fuel_used > 0, "{}", case.name);
        assert_eq!(state, before, "{}: the base state changed", case.name);
    }
}

/// Runs the corpus module `file`'s `gc_apply` with `{}` over the base state; checks it succeeds.
fn apply_ok(file: &str) -> TxOutcome {
    let state = base_state();
    let module = WasmModule::new(&runtimes()[0], ID, &corpus_wasm(file)).unwrap();
    let out = execute_apply(&module, &state, &env(), TXID, SENDER, b"{}").unwrap();
    assert_eq!(out.result, Ok(()), "{file}");
    out
}

#[test]
fn nan_producing_float_code_stores_canonical_nans() {
    // Floats are allowed with NaN canonicalisation: every NaN an operation produces has the
    // same bits on every machine (positive quiet NaN, no payload), whatever x86 or ARM would
    // have produced natively.
    let out = apply_ok("nan.wat");
    let bytes = out.writes[&format!("m/{ID}/nan")].clone().unwrap();
    let f32_at = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap());
    let f64_at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap());
    assert_eq!(f32_at(0), 0x7fc0_0000, "0/0");
    assert_eq!(f64_at(4), 0x7ff8_0000_0000_0000, "sqrt(-1)");
    assert_eq!(f64_at(12), 0x7ff8_0000_0000_0000, "inf - inf");
    assert_eq!(f32_at(20), 0x7fc0_0000, "NaN with a payload + 1");
}

#[test]
fn keys_named_like_another_modules_land_under_the_modules_own_prefix() {
    let out = apply_ok("other_module_keys.wat");
    assert_eq!(
        out.writes.keys().collect::<Vec<_>>(),
        [&format!("m/{ID}/m/other/k"), &format!("m/{ID}/m/other/x")]
    );
    assert_eq!(
        out.writes[&format!("m/{ID}/m/other/k")],
        Some(b"mine".to_vec())
    );
    assert_eq!(out.writes[&format!("m/{ID}/m/other/x")], None);
}

#[test]
fn a_scan_with_an_absurd_limit_returns_at_most_1024_entries() {
    let out = apply_ok("scan_absurd_limit.wat");
    let count = out.writes[&format!("m/{ID}/n")].clone().unwrap();
    assert_eq!(count, 1024u32.to_le_bytes());
}

// ---------------------------------------------------------------------------------------------
// Limits built in Rust.

/// A valid ABI module with `extra` added.
fn minimal(extra: &str) -> String {
    format!(
        r#"(module
             (memory (export "memory") 1)
             (func (export "gc_abi_version") (result i32) (i32.const 1))
             (func (export "gc_alloc") (param i32) (result i32) (i32.const 4096))
             (func (export "gc_apply") (param i32 i32 i32 i32) (result i32) (i32.const 0))
             (func (export "gc_view") (param i32 i32) (result i32) (i32.const 0))
             {extra})"#
    )
}

fn refusal(wasm: &[u8]) -> String {
    let texts: Vec<String> = runtimes()
        .iter()
        .map(|rt| WasmModule::new(rt, ID, wasm).unwrap_err().to_string())
        .collect();
    assert_eq!(texts[0], texts[1]);
    texts[0].clone()
}

#[test]
fn oversized_modules_are_refused_with_the_limit_named() {
    // Code: one function of 1,100,000 `nop`s.
    let nops = "nop ".repeat(1_100_000);
    let code = wasm(&minimal(&format!("(func {nops})")));
    let text = refusal(&code);
    assert!(
        text.starts_with("code is 11")
            && text.ends_with(&format!("bytes, the limit is {MAX_CODE_BYTES}")),
        "{text}"
    );

    let data = wasm(&minimal(&format!(
        r#"(data (i32.const 0) "{}")"#,
        "x".repeat(MAX_DATA_BYTES + 1)
    )));
    assert_eq!(
        refusal(&data),
        format!(
            "data is {} bytes, the limit is {MAX_DATA_BYTES}",
            MAX_DATA_BYTES + 1
        )
    );

    let funcs = wasm(&minimal(&"(func)".repeat(MAX_FUNCTIONS as usize)));
    assert_eq!(
        refusal(&funcs),
        format!(
            "module has {} functions, the limit is {MAX_FUNCTIONS}",
            MAX_FUNCTIONS + 4
        )
    );

    let height = MAX_OPERAND_STACK + 1;
    let pushes = "(i32.const 1) ".repeat(height as usize);
    let drops = "drop ".repeat(height as usize);
    let stack = wasm(&minimal(&format!("(func {pushes} {drops})")));
    assert_eq!(
        refusal(&stack),
        format!(
            "function 4 has an operand stack of {height} values, the limit is {MAX_OPERAND_STACK}"
        )
    );

    let params = "i32 ".repeat(10);
    let declared = "i64 ".repeat(MAX_LOCALS as usize - 9);
    let locals = wasm(&minimal(&format!(
        "(func (param {params}) (local {declared}))"
    )));
    assert_eq!(
        refusal(&locals),
        format!(
            "function 4 has {} locals, the limit is {MAX_LOCALS}",
            MAX_LOCALS + 1
        )
    );

    // A custom section makes the module too large before anything is parsed.
    let mut big = wasm(&minimal(""));
    let payload = vec![0u8; MAX_MODULE_BYTES];
    big.push(0); // custom section
    let mut len = payload.len() + 2;
    let mut leb = Vec::new();
    loop {
        let byte = (len & 0x7f) as u8;
        len >>= 7;
        if len == 0 {
            leb.push(byte);
            break;
        }
        leb.push(byte | 0x80);
    }
    big.extend_from_slice(&leb);
    big.extend_from_slice(&[1, b'x']);
    big.extend_from_slice(&payload);
    let text = refusal(&big);
    assert_eq!(
        text,
        format!(
            "module is {} bytes, the limit is {MAX_MODULE_BYTES}",
            big.len()
        )
    );

    // Bytes that are not wasm: only an offset, never wasmparser's words.
    assert_eq!(
        refusal(b"\0asm\x01\0\0\0\x01\x05"),
        "not a valid wasm module (at byte offset 10)"
    );
}

// ---------------------------------------------------------------------------------------------
// Stack height.

/// `gc_apply` calls `$r(n)` with `n` the op (a JSON number); `$r` recurses `n` times.
fn recursion_module() -> Vec<u8> {
    wasm(&minimal("").replace(
        r#"(func (export "gc_apply") (param i32 i32 i32 i32) (result i32) (i32.const 0))"#,
        r#"(func $digits (param $p i32) (param $n i32) (result i32)
             (local $v i32)
             (block $done
               (loop $more
                 (br_if $done (i32.eqz (local.get $n)))
                 (local.set $v (i32.add (i32.mul (local.get $v) (i32.const 10))
                                        (i32.sub (i32.load8_u (local.get $p)) (i32.const 48))))
                 (local.set $p (i32.add (local.get $p) (i32.const 1)))
                 (local.set $n (i32.sub (local.get $n) (i32.const 1)))
                 (br $more)))
             (local.get $v))
           (func $r (param $n i32) (result i32)
             (if (result i32) (i32.eqz (local.get $n))
               (then (i32.const 0))
               (else (call $r (i32.sub (local.get $n) (i32.const 1))))))
           (func (export "gc_apply") (param i32 i32 i32 i32) (result i32)
             (drop (call $r (call $digits (local.get 2) (local.get 3))))
             (i32.const 0))"#,
    ))
}

#[test]
fn the_stack_limit_is_an_exact_deterministic_depth() {
    // `$r`'s frame: 1 parameter, an operand stack of 2 (`n`, then `n` and 1 for the subtraction):
    // cost FRAME_OVERHEAD + 3. The `n + 1` nested calls of `$r` fit when their costs sum to at
    // most STACK_LIMIT (the `$digits` call has returned by then).
    let cost = FRAME_OVERHEAD + 3;
    let deepest = STACK_LIMIT / cost - 1;
    let wasm = recursion_module();
    for rt in runtimes() {
        let module = WasmModule::new(rt, ID, &wasm).unwrap();
        for _ in 0..2 {
            let run = |n: u32| {
                execute_apply(
                    &module,
                    &MemState::new(),
                    &env(),
                    TXID,
                    SENDER,
                    n.to_string().as_bytes(),
                )
                .unwrap()
            };
            assert_eq!(run(deepest).result, Ok(()), "depth {deepest}");
            assert_eq!(
                outcome_text(&run(deepest + 1)),
                "internal: trap: stack limit exceeded"
            );
        }
        assert_serving(rt, "the recursion");
    }
}

/// A function with the largest frame the validator allows, every value live across its
/// recursive call: `MAX_LOCALS` `f64` parameters and locals, and `MAX_OPERAND_STACK - 24`
/// `f64`s pushed before the call (floats take Cranelift's largest spill slots, 16 bytes).
fn largest_frame_module() -> Vec<u8> {
    let locals = MAX_LOCALS - 1;
    let pushed = MAX_OPERAND_STACK - 24;
    let mut body = String::new();
    for i in 1..=locals {
        body.push_str(&format!(
            "(local.set {i} (f64.convert_i32_s (i32.add (local.get 0) (i32.const {i}))))\n"
        ));
    }
    for i in 0..pushed {
        body.push_str(&format!(
            "(f64.add (local.get {}) (f64.const 1))\n",
            1 + i % locals
        ));
    }
    body.push_str(
        "(if (result f64) (i32.eqz (local.get 0)) (then (f64.const 0))
           (else (call $w (i32.sub (local.get 0) (i32.const 1)))))\n",
    );
    body.push_str(&"f64.add\n".repeat(pushed as usize));
    for i in 1..=locals {
        body.push_str(&format!("(local.get {i}) f64.add\n"));
    }
    let decl = "f64 ".repeat(locals as usize);
    wasm(&minimal("").replace(
        r#"(func (export "gc_apply") (param i32 i32 i32 i32) (result i32) (i32.const 0))"#,
        &format!(
            r#"(func $w (param i32) (result f64) (local {decl}) {body})
               (func (export "gc_apply") (param i32 i32 i32 i32) (result i32)
                 (drop (call $w (i32.const 1000000)))
                 (i32.const 0))"#
        ),
    ))
}

#[test]
fn the_largest_frames_hit_the_logical_limit_before_the_native_one() {
    // Natively (wasmtime 48, x86-64) this frame takes 16 bytes per value, ~32 KiB: the logical
    // limit stops it after 15 calls (~500 KB), below MAX_WASM_STACK (1 MiB). Were it the other
    // way round, the text would be `internal: trap: stack overflow`.
    let wasm = largest_frame_module();
    for rt in runtimes() {
        // As an upload (Winch) and as a genesis module (Cranelift).
        for origin in [Origin::Upload, Origin::Genesis] {
            let module = WasmModule::load(rt, ID, &wasm, None, origin).unwrap();
            assert_eq!(module.compiler(), rt.config().compiler_for(origin));
            for _ in 0..2 {
                let out =
                    execute_apply(&module, &MemState::new(), &env(), TXID, SENDER, b"{}").unwrap();
                assert_eq!(outcome_text(&out), "internal: trap: stack limit exceeded");
            }
        }
        assert_serving(rt, "the largest frames");
    }
}

#[test]
fn a_thread_with_rusts_default_stack_survives_the_worst_case() {
    // Calls run on the calling thread's stack: a spawned thread (2 MiB, as tokio's blocking
    // threads) must hold a full logical stack of the largest frames plus the host's frames.
    let wasm = largest_frame_module();
    let rt = Arc::clone(&runtimes()[1]);
    std::thread::spawn(move || {
        for origin in [Origin::Upload, Origin::Genesis] {
            let module = WasmModule::load(&rt, ID, &wasm, None, origin).unwrap();
            let out =
                execute_apply(&module, &MemState::new(), &env(), TXID, SENDER, b"{}").unwrap();
            assert_eq!(outcome_text(&out), "internal: trap: stack limit exceeded");
        }
    })
    .join()
    .unwrap();
}

#[test]
fn state_passed_in_is_what_the_calls_read() {
    // Guards the corpus's base state itself: the scan cases depend on it.
    let state = base_state();
    assert_eq!(state.get(&format!("m/{ID}/k/1999")), Some(b"v".to_vec()));
    assert!(state.get("token/GEM").is_some());
}

#[test]
fn mutated_modules_never_panic_the_loader_and_get_fixed_texts() {
    // Byte flips, truncations and insertions of valid modules (a deterministic generator): the
    // loader answers every one with a module or a fixed text, the same text twice, and never
    // with the parser's or the engine's own words.
    let counter = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/wat/counter.wat"
    ))
    .unwrap();
    let seeds = [
        wasm(&counter),
        corpus_wasm("bad_pointers.wat"),
        recursion_module(),
    ];
    let rt = &runtimes()[1];
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = |n: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % n as u64) as usize
    };
    let (mut loaded, mut refused) = (0, 0);
    for seed in &seeds {
        for _ in 0..150 {
            let mut bytes = seed.clone();
            match next(3) {
                0 => {
                    let i = next(bytes.len());
                    bytes[i] ^= 1 << next(8);
                }
                1 => bytes.truncate(next(bytes.len())),
                _ => {
                    let i = next(bytes.len());
                    bytes.insert(i, next(256) as u8);
                }
            }
            let first = WasmModule::new(rt, ID, &bytes).map(|_| ());
            let second = WasmModule::new(rt, ID, &bytes).map(|_| ());
            assert_eq!(first, second);
            if let Err(e) = first {
                let text = e.to_string();
                for word in ["wasmparser", "wasmtime", "\n", "backtrace", "0x"] {
                    assert!(!text.contains(word), "{text:?}");
                }
                refused += 1;
            } else {
                loaded += 1;
            }
        }
    }
    assert!(
        refused > 100 && loaded > 0,
        "{refused} refused, {loaded} loaded"
    );
}
