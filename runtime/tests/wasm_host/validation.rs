//! Load-time validation: every rule's fixed text, and the instance pool.

use super::*;

/// A valid minimal module with `extra` spliced in.
fn minimal(extra: &str) -> String {
    format!(
        r#"(module
             {extra}
             (memory (export "memory") 1)
             (func (export "gc_abi_version") (result i32) (i32.const 1))
             (func (export "gc_alloc") (param i32) (result i32) (i32.const 4096))
             (func (export "gc_apply") (param i32 i32 i32 i32) (result i32) (i32.const 0))
             (func (export "gc_view") (param i32 i32) (result i32) (i32.const 0)))"#
    )
}

#[test]
fn modules_that_break_the_abi_are_refused_at_load() {
    WasmModule::new(rt(), "ok", &wasm(&minimal(""))).unwrap();
    WasmModule::new(
        rt(),
        "all",
        &wasm(&guest("", "(i32.const 0)", "(i32.const 0)")),
    )
    .unwrap();

    // Each refusal names the rule in a fixed text (ABI.md, "Validation rules").
    let cases: &[(String, &str)] = &[
        (
            minimal(r#"(import "wasi_snapshot_preview1" "fd_write" (func (param i32 i32 i32 i32) (result i32)))"#),
            "import wasi_snapshot_preview1.fd_write is not in ABI v1: only gamechain_v1 functions may be imported",
        ),
        (
            minimal(r#"(import "gamechain_v1" "get" (func (param i32 i32) (result i32)))"#),
            "import gamechain_v1.get has type (i32, i32) -> i32, ABI v1 requires (i32, i32, i32, i32) -> i64",
        ),
        (
            minimal(r#"(import "gamechain_v1" "clock" (func (result i64)))"#),
            "import gamechain_v1.clock is not in ABI v1",
        ),
        (
            minimal(r#"(import "gamechain_v1" "height" (global i64))"#),
            "import gamechain_v1.height has type a global, ABI v1 requires () -> i64",
        ),
        (
            minimal("").replace(r#"(func (export "gc_view") (param i32 i32) (result i32) (i32.const 0))"#, ""),
            "export gc_view is missing, ABI v1 requires it",
        ),
        (
            minimal("").replace(r#"(memory (export "memory") 1)"#, "(memory 1)"),
            "export memory is missing, ABI v1 requires it",
        ),
        (
            minimal("").replace(
                r#"(func (export "gc_alloc") (param i32) (result i32) (i32.const 4096))"#,
                r#"(func (export "gc_alloc") (param i64) (result i32) (i32.const 4096))"#,
            ),
            "export gc_alloc has type (i64) -> i32, ABI v1 requires (i32) -> i32",
        ),
        (
            minimal("(memory $second 1)"),
            "module has 2 memories, exactly 1 is required",
        ),
        (
            minimal("(func $f (drop (i32x4.splat (i32.const 1))))"),
            "feature simd is not allowed",
        ),
        (
            minimal("").replace(r#"(memory (export "memory") 1)"#, r#"(memory (export "memory") 1 1 shared)"#),
            "feature threads is not allowed",
        ),
        (
            minimal("(func $f (return_call $f))"),
            "feature tail_call is not allowed",
        ),
        (
            minimal("").replace(r#"(memory (export "memory") 1)"#, r#"(memory (export "memory") 300)"#),
            "memory starts at 19660800 bytes, the limit is 16777216",
        ),
        (
            minimal("(table 30000 funcref)"),
            "table starts at 30000 elements, the limit is 20000",
        ),
        (
            minimal("(table 1 funcref) (table 1 funcref)"),
            "module has 2 tables, the limit is 1",
        ),
    ];
    for (wat, text) in cases {
        assert_eq!(load_err(wat).to_string(), *text, "{wat}");
    }

    let version = load_err(
        &minimal("").replace("(result i32) (i32.const 1))", "(result i32) (i32.const 2))"),
    );
    assert_eq!(version, LoadError::AbiVersion(2));
    assert_eq!(
        version.to_string(),
        "gc_abi_version returned 2, this runtime serves 1"
    );

    let trapping_start = load_err(&minimal("(func $start unreachable) (start $start)"));
    assert_eq!(
        trapping_start,
        LoadError::Instantiate("internal: trap: unreachable".into())
    );

    assert_eq!(
        WasmModule::new(rt(), "text", b"(module)")
            .unwrap_err()
            .to_string(),
        "not a valid wasm module (at byte offset 0)"
    );
}

#[test]
fn a_start_function_may_not_call_the_host() {
    let direct = load_err(&minimal(
        r#"(import "gamechain_v1" "height" (func $height (result i64)))
           (func $start (drop (call $height)))
           (start $start)"#,
    ));
    assert_eq!(
        direct.to_string(),
        "start function 1 may call host import gamechain_v1.height (in function 1); a start function may not call the host"
    );
    let through = load_err(&minimal(
        r#"(import "gamechain_v1" "log" (func $log (param i32 i32)))
           (func $start (call $helper))
           (func $helper (call $log (i32.const 0) (i32.const 1)))
           (start $start)"#,
    ));
    assert_eq!(
        through.to_string(),
        "start function 1 may call host import gamechain_v1.log (in function 2); a start function may not call the host"
    );
    let indirect = load_err(&minimal(
        r#"(type $v (func)) (table 1 funcref)
           (func $start (call_indirect (type $v) (i32.const 0)))
           (start $start)"#,
    ));
    assert_eq!(
        indirect.to_string(),
        "start function 0 may call call_indirect (in function 0); a start function may not call the host"
    );
    // A start function that only computes is fine.
    let module = load(
        "start",
        &minimal(
            r#"(global $g (mut i32) (i32.const 0))
               (func $start (global.set $g (i32.const 5)))
               (start $start)"#,
        ),
    );
    assert_eq!(apply(&module, &MemState::new()).result, Ok(()));
}

#[test]
fn a_full_pool_makes_callers_wait_instead_of_failing() {
    let rt = Runtime::new(RuntimeConfig {
        allocation: Allocation::Pooling { instances: 1 },
        ..RuntimeConfig::default()
    })
    .unwrap();
    let module = Arc::new(load_in(&rt, "counter", &counter_wat()));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let module = Arc::clone(&module);
            std::thread::spawn(move || {
                let state = MemState::new();
                (0..25)
                    .map(|_| apply(&module, &state).result)
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    for t in threads {
        assert!(t.join().unwrap().iter().all(Result::is_ok));
    }
}

#[test]
fn a_module_too_big_for_a_pool_slot_is_refused_by_the_validator() {
    // 66,000 globals (16 bytes each) would need more instance context than a pool slot's 1 MiB
    // (the on-demand fallback); the validator's globals limit refuses such a module first, so
    // no valid module depends on the allocation strategy.
    let globals: String = (0..66_000)
        .map(|i| format!("(global $g{i} (mut i32) (i32.const {i}))\n"))
        .collect();
    let body = r#"(global.set $g65999 (i32.add (global.get $g65999) (i32.const 1))) (i32.const 0)"#;
    assert_eq!(
        load_err(&apply_guest(&globals, body)).to_string(),
        "module has 66001 globals, the limit is 1024"
    );
    assert!(load("counter", &counter_wat()).pooled());
}

/// A WAT string literal of `text` (every byte escaped).
fn wat_bytes(text: &[u8]) -> String {
    text.iter().map(|b| format!("\\{b:02x}")).collect()
}

#[test]
fn the_schema_section_is_read_and_a_malformed_one_refused() {
    let good = r#"{"schema_version":1,"module":"m","ops":[{"kind":"go","fields":{}}],"events":[],"views":[]}"#;
    let section = |data: &[u8]| format!(r#"(@custom "gamechain.schema" "{}")"#, wat_bytes(data));
    let module = WasmModule::new(rt(), "m", &wasm(&minimal(&section(good.as_bytes())))).unwrap();
    assert_eq!(module.schema(), Some(good));
    assert_eq!(load("counter", &counter_wat()).schema(), None);
    // Another custom section's name is not looked at.
    let other = r#"(@custom "gamechain.other" "x")"#;
    assert_eq!(
        WasmModule::new(rt(), "m", &wasm(&minimal(other)))
            .unwrap()
            .schema(),
        None
    );

    let too_large = format!("{good}{}", " ".repeat(64 << 10));
    let cases: [(String, &str); 5] = [
        (
            format!("{}{}", section(good.as_bytes()), section(good.as_bytes())),
            "custom section gamechain.schema appears more than once",
        ),
        (
            section(too_large.as_bytes()),
            "custom section gamechain.schema is larger than 65536 bytes",
        ),
        (
            section(b"{\xff}"),
            "custom section gamechain.schema is not UTF-8",
        ),
        (
            section(b"{"),
            "custom section gamechain.schema is not a valid module schema",
        ),
        (
            section(br#"{"schema_version":2,"module":"m","ops":[],"events":[],"views":[]}"#),
            "custom section gamechain.schema is not a valid module schema",
        ),
    ];
    for (extra, text) in cases {
        assert_eq!(load_err(&minimal(&extra)).to_string(), text);
    }
}
