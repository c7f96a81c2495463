//! Traps and rollback: fixed texts for wasm and host traps, nothing survives a failed call.

use super::*;

#[test]
fn a_trap_after_writes_rolls_everything_back() {
    let body = r#"(call $put (i32.const 1024) (i32.const 3) (i32.const 1024) (i32.const 3))
                  (call $emit (i32.const 1024) (i32.const 3) (i32.const 1030) (i32.const 2))
                  unreachable"#;
    let module = load(
        "trapper",
        &apply_guest(
            r#"(data (i32.const 1024) "key") (data (i32.const 1030) "{}")"#,
            body,
        ),
    );
    let out = apply(&module, &MemState::new());
    assert_eq!(err_text(&out), "internal: trap: unreachable");
    assert!(out.writes.is_empty() && out.events.is_empty());
    // A trap is charged the whole limit (ABI.md, "Gas table").
    assert_eq!(out.fuel_used, FUEL);

    // Through MockCtx: the mock rolls back like the chain.
    let mut ctx = MockCtx::new("trapper");
    let err = ctx.submit(&module, "alice", json!({})).unwrap_err();
    assert_eq!(err.to_string(), "internal: trap: unreachable");
    assert!(ctx.kv.state.is_empty() && ctx.events.is_empty());
}

#[test]
fn wasm_traps_have_fixed_texts() {
    let cases = [
        (
            "(drop (i32.div_u (i32.const 1) (i32.const 0))) (i32.const 0)",
            "internal: trap: integer divide by zero",
        ),
        (
            "(drop (i32.div_s (i32.const 0x80000000) (i32.const -1))) (i32.const 0)",
            "internal: trap: integer overflow",
        ),
        (
            "(drop (i32.trunc_f32_s (f32.const nan))) (i32.const 0)",
            "internal: trap: invalid conversion to integer",
        ),
        (
            "(drop (i32.load (i32.const 70000))) (i32.const 0)",
            "internal: trap: out of bounds memory access",
        ),
        (
            "(call $recurse) (i32.const 0)",
            "internal: trap: stack limit exceeded",
        ),
        (
            "(call_indirect (type $t) (i32.const 5)) (i32.const 0)",
            "internal: trap: indirect call",
        ),
    ];
    let extra = r#"(type $t (func))
                   (table 1 funcref)
                   (func $recurse (call $recurse))"#;
    for (body, text) in cases {
        let module = load("traps", &apply_guest(extra, body));
        assert_eq!(err_text(&apply(&module, &MemState::new())), text, "{body}");
    }
}

#[test]
fn host_traps_have_fixed_texts() {
    let data = r#"(data (i32.const 1024) "key") (data (i32.const 1030) "\ff\fe") (data (i32.const 1040) "{not json")
                  (data (i32.const 1060) "boom")"#;
    let cases = [
        // Key range past the end of memory.
        ("(drop (call $get (i32.const 65535) (i32.const 2) (i32.const 0) (i32.const 0))) (i32.const 0)", "internal: bad pointer from module"),
        // Output buffer past the end of memory.
        ("(drop (call $get (i32.const 1024) (i32.const 3) (i32.const 65000) (i32.const 1000))) (i32.const 0)", "internal: bad pointer from module"),
        // Negative length.
        ("(call $put (i32.const 1024) (i32.const -1) (i32.const 0) (i32.const 0)) (i32.const 0)", "internal: bad pointer from module"),
        // Pointer that wraps: 0xFFFFFFFF + 2.
        ("(call $put (i32.const -1) (i32.const 2) (i32.const 0) (i32.const 0)) (i32.const 0)", "internal: bad pointer from module"),
        ("(call $emit (i32.const 1024) (i32.const 3) (i32.const 65530) (i32.const 10)) (i32.const 0)", "internal: bad pointer from module"),
        ("(call $output (i32.const 65530) (i32.const 100)) (i32.const 1)", "internal: bad pointer from module"),
        ("(call $public_random (i32.const 65530)) (i32.const 0)", "internal: bad pointer from module"),
        ("(call $balance (i32.const 1024) (i32.const 3) (i32.const 1024) (i32.const 3) (i32.const 65530)) (i32.const 0)", "internal: bad pointer from module"),
        ("(drop (call $scan (i32.const 0) (i32.const 0) (i32.const 0) (i32.const -2) (i32.const 1) (i32.const 0) (i32.const 0))) (i32.const 0)", "internal: bad pointer from module"),
        ("(drop (call $scan (i32.const 0) (i32.const 0) (i32.const 0) (i32.const -1) (i32.const -1) (i32.const 0) (i32.const 0))) (i32.const 0)", "internal: bad pointer from module"),
        // Invalid UTF-8 key and event kind.
        ("(call $put (i32.const 1030) (i32.const 2) (i32.const 0) (i32.const 0)) (i32.const 0)", "internal: invalid UTF-8 from module"),
        ("(call $emit (i32.const 1030) (i32.const 2) (i32.const 1040) (i32.const 2)) (i32.const 0)", "internal: invalid UTF-8 from module"),
        ("(call $emit (i32.const 1024) (i32.const 3) (i32.const 1040) (i32.const 9)) (i32.const 0)", "internal: event data is not valid JSON"),
        ("(call $abort (i32.const 1060) (i32.const 4)) (i32.const 0)", "internal: module panicked"),
        // Return codes and outputs.
        ("(i32.const 2)", "internal: malformed module output"),
        ("(i32.const 1)", "internal: malformed module output"),
        ("(call $output (i32.const 1040) (i32.const 9)) (i32.const 1)", "internal: malformed module output"),
        // Memory.
        ("(drop (memory.grow (i32.const 1000))) (i32.const 0)", "internal: memory limit exceeded"),
    ];
    for (body, text) in cases {
        let module = load("host", &apply_guest(data, body));
        let out = apply(&module, &MemState::new());
        assert_eq!(err_text(&out), text, "{body}");
        assert!(out.writes.is_empty() && out.events.is_empty());
    }
}

#[test]
fn abort_messages_go_to_the_log_only() {
    let module = load(
        "aborts",
        &apply_guest(
            r#"(data (i32.const 1024) "panicked at src/lib.rs:1")"#,
            "(call $log (i32.const 1024) (i32.const 8)) (call $abort (i32.const 1024) (i32.const 24)) (i32.const 0)",
        ),
    );
    let out = apply(&module, &MemState::new());
    assert_eq!(err_text(&out), "internal: module panicked");
    assert_eq!(out.log, ["panicked", "panicked at src/lib.rs:1"]);
}

#[test]
fn a_memory_grow_within_the_limit_works_and_past_the_declared_maximum_returns_minus_one() {
    let module = load(
        "grow",
        r#"(module
             (import "gamechain_v1" "put" (func $put (param i32 i32 i32 i32)))
             (memory (export "memory") 1 3)
             (func (export "gc_abi_version") (result i32) (i32.const 1))
             (func (export "gc_alloc") (param i32) (result i32) (i32.const 4096))
             (func (export "gc_apply") (param i32 i32 i32 i32) (result i32)
               (i32.store8 (i32.const 100) (i32.add (i32.const 48) (memory.grow (i32.const 2))))
               (i32.store8 (i32.const 101) (i32.add (i32.const 48) (i32.add (i32.const 1) (memory.grow (i32.const 1)))))
               (call $put (i32.const 100) (i32.const 1) (i32.const 100) (i32.const 2))
               (i32.const 0))
             (func (export "gc_view") (param i32 i32) (result i32) (i32.const 0)))"#,
    );
    let out = apply(&module, &MemState::new());
    // grow(2) returned the old size 1; grow(1) past the declared maximum of 3 returned -1.
    assert_eq!(
        out.writes.get("m/grow/1"),
        Some(&Some(b"10".to_vec())),
        "{out:?}"
    );
}

#[test]
fn a_failing_gc_alloc_is_a_fixed_error() {
    let wat = r#"(module
      (memory (export "memory") 1)
      (func (export "gc_abi_version") (result i32) (i32.const 1))
      (func (export "gc_alloc") (param i32) (result i32) (i32.const ALLOC))
      (func (export "gc_apply") (param i32 i32 i32 i32) (result i32) (i32.const 0))
      (func (export "gc_view") (param i32 i32) (result i32) (i32.const 0)))"#;
    for ptr in ["0", "65530"] {
        let module = load("alloc", &wat.replace("ALLOC", ptr));
        assert_eq!(
            err_text(&apply(&module, &MemState::new())),
            "internal: guest allocation failed"
        );
    }
}
