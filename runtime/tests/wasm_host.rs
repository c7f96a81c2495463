//! The runtime end to end with hand-written WAT modules: the ABI-v1 counter (`wat/counter.wat`),
//! fuel, rollback, the fixed error texts, key scoping, the bank, views, load-time validation and
//! the allocation modes.

use std::sync::{Arc, OnceLock};

use gamechain_runtime::{
    execute_apply, execute_end_block, run_view, Allocation, Event, LoadError, MemState, Runtime,
    RuntimeConfig, State, TxOutcome, WasmModule,
};
use gamechain_sdk::prelude::*;
use gamechain_sdk::{BlockEnv, MockCtx};

const TXID: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
const FUEL: u64 = 1_000_000;

/// The shared runtime of these tests: pooling, 1M fuel per call, the default 16 MiB memory.
fn rt() -> &'static Arc<Runtime> {
    static RT: OnceLock<Arc<Runtime>> = OnceLock::new();
    RT.get_or_init(|| {
        Runtime::new(RuntimeConfig {
            fuel_apply: FUEL,
            fuel_view: FUEL,
            fuel_end_block: FUEL,
            ..RuntimeConfig::default()
        })
        .unwrap()
    })
}

fn env() -> BlockEnv {
    BlockEnv {
        height: 7,
        block_time_ms: 1_700_000_000_123,
        checkpoint: Checkpoint {
            height: 42,
            hash: "abcd".into(),
        },
        sequencer: "seq1".into(),
    }
}

fn wasm(wat: &str) -> Vec<u8> {
    wat::parse_str(wat).unwrap_or_else(|e| panic!("bad test WAT: {e}\n{wat}"))
}

fn load_in(rt: &Arc<Runtime>, id: &str, wat: &str) -> WasmModule {
    WasmModule::new(rt, id, &wasm(wat)).unwrap_or_else(|e| panic!("load failed: {e}"))
}

fn load(id: &str, wat: &str) -> WasmModule {
    load_in(rt(), id, wat)
}

fn load_err(wat: &str) -> LoadError {
    WasmModule::new(rt(), "bad", &wasm(wat)).expect_err("module should be refused")
}

fn counter_wat() -> String {
    std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/wat/counter.wat"
    ))
    .unwrap()
}

fn apply(module: &WasmModule, state: &MemState) -> TxOutcome {
    execute_apply(module, state, &env(), TXID, "alice", br#"{"kind":"go"}"#).unwrap()
}

fn err_text(outcome: &TxOutcome) -> String {
    outcome
        .result
        .clone()
        .expect_err("call should fail")
        .to_string()
}

/// Every import of ABI v1, named `$<import>`.
const IMPORTS: &str = r#"
  (import "gamechain_v1" "height" (func $height (result i64)))
  (import "gamechain_v1" "block_time_ms" (func $block_time_ms (result i64)))
  (import "gamechain_v1" "module_id" (func $module_id (param i32 i32) (result i32)))
  (import "gamechain_v1" "txid" (func $txid (param i32 i32) (result i32)))
  (import "gamechain_v1" "sequencer" (func $sequencer (param i32 i32) (result i32)))
  (import "gamechain_v1" "checkpoint" (func $checkpoint (param i32 i32) (result i32)))
  (import "gamechain_v1" "get" (func $get (param i32 i32 i32 i32) (result i64)))
  (import "gamechain_v1" "put" (func $put (param i32 i32 i32 i32)))
  (import "gamechain_v1" "delete" (func $delete (param i32 i32)))
  (import "gamechain_v1" "scan" (func $scan (param i32 i32 i32 i32 i32 i32 i32) (result i64)))
  (import "gamechain_v1" "read_raw" (func $read_raw (param i32 i32 i32 i32) (result i64)))
  (import "gamechain_v1" "scan_raw" (func $scan_raw (param i32 i32 i32 i32 i32 i32 i32) (result i64)))
  (import "gamechain_v1" "balance" (func $balance (param i32 i32 i32 i32 i32)))
  (import "gamechain_v1" "escrow_in" (func $escrow_in (param i32 i32 i32 i32 i64 i64) (result i32)))
  (import "gamechain_v1" "escrow_out" (func $escrow_out (param i32 i32 i32 i32 i64 i64) (result i32)))
  (import "gamechain_v1" "create_token" (func $create_token (param i32 i32 i32 i32 i32 i32 i64 i64) (result i32)))
  (import "gamechain_v1" "mint" (func $mint (param i32 i32 i32 i32 i64 i64) (result i32)))
  (import "gamechain_v1" "burn" (func $burn (param i32 i32 i32 i32 i64 i64) (result i32)))
  (import "gamechain_v1" "last_error" (func $last_error (param i32 i32) (result i32)))
  (import "gamechain_v1" "emit" (func $emit (param i32 i32 i32 i32)))
  (import "gamechain_v1" "public_random" (func $public_random (param i32)))
  (import "gamechain_v1" "output" (func $output (param i32 i32)))
  (import "gamechain_v1" "abort" (func $abort (param i32 i32)))
  (import "gamechain_v1" "log" (func $log (param i32 i32)))
"#;

/// A module with every import, one page of memory, a bump `gc_alloc` from 4096, and the given
/// `gc_apply` / `gc_view` bodies (each must leave an `i32` return code). `extra` adds data
/// segments and functions.
fn guest(extra: &str, apply: &str, view: &str) -> String {
    format!(
        r#"(module
  {IMPORTS}
  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 4096))
  (func (export "gc_abi_version") (result i32) (i32.const 1))
  (func (export "gc_alloc") (param $len i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.add (global.get $heap) (local.get $len)))
    (local.get $p))
  (func (export "gc_apply") (param $sp i32) (param $sl i32) (param $op i32) (param $ol i32) (result i32)
    {apply})
  (func (export "gc_view") (param $qp i32) (param $ql i32) (result i32)
    {view})
  {extra}
)"#
    )
}

/// [`guest`] with a trivial view.
fn apply_guest(extra: &str, apply: &str) -> String {
    guest(extra, apply, "(i32.const 0)")
}

// ---------------------------------------------------------------------------------------------
// The counter.

/// The counter of `wat/counter.wat`, natively: the same state encoding and event.
struct NativeCounter;

impl GameModule for NativeCounter {
    fn id(&self) -> &'static str {
        "counter"
    }
    fn apply(&self, ctx: &mut dyn Ctx, _sender: &str, _op: &Value) -> Result<(), ActionError> {
        let n: u64 = ctx.get_json("n")?.unwrap_or(0) + 1;
        ctx.put_json("n", &n);
        ctx.emit("counter.incremented", json!({ "n": n }));
        Ok(())
    }
    fn view(&self, state: &dyn StateRead, _q: &Query) -> Result<Value, ActionError> {
        Ok(json!({ "n": state.module_json::<u64>("counter", "n")?.unwrap_or(0) }))
    }
}

/// One test body, run against any `GameModule`: native or wasm.
fn counter_scenario(module: &dyn GameModule) -> MockCtx {
    let mut ctx = MockCtx::new("counter");
    for _ in 0..3 {
        ctx.submit(module, "alice", json!({ "kind": "inc" }))
            .unwrap();
    }
    assert_eq!(ctx.view(module, &Query::new()).unwrap(), json!({ "n": 3 }));
    ctx
}

#[test]
fn counter_runs_the_same_natively_and_through_wasm() {
    let wasm = load("counter", &counter_wat());
    let native = counter_scenario(&NativeCounter);
    let through_wasm = counter_scenario(&wasm);
    assert_eq!(native.kv.state, through_wasm.kv.state);
    assert_eq!(native.events, through_wasm.events);
    assert_eq!(
        through_wasm.kv.state.get("m/counter/n").map(Vec::as_slice),
        Some(&b"3"[..])
    );
}

#[test]
fn counter_through_the_executor() {
    let module = load("counter", &counter_wat());
    let mut state = MemState::new();
    for n in 1..=12u64 {
        let out = apply(&module, &state);
        assert_eq!(out.result, Ok(()));
        assert!(out.fuel_used > 0 && out.fuel_used < FUEL);
        assert_eq!(
            out.events,
            vec![Event {
                kind: "counter.incremented".into(),
                data: json!({ "n": n })
            }]
        );
        assert_eq!(out.writes.len(), 1);
        state.apply(out.writes);
        assert_eq!(state.get("m/counter/n"), Some(n.to_string().into_bytes()));
    }
    let (view, fuel) = run_view(&module, &state, &Query::new()).unwrap();
    assert_eq!(view, Ok(json!({ "n": 12 })));
    assert!(fuel > 0);
    // Events serialise as {"kind", "data"}.
    let event = Event {
        kind: "k".into(),
        data: json!({ "b": 1, "a": 2 }),
    };
    assert_eq!(
        serde_json::to_string(&event).unwrap(),
        r#"{"kind":"k","data":{"a":2,"b":1}}"#
    );
}

#[test]
fn fuel_used_is_identical_across_runs_and_allocation_modes() {
    let pooled = load("counter", &counter_wat());
    let state = MemState::new();
    let first = apply(&pooled, &state);
    let second = apply(&pooled, &state);
    assert_eq!(first, second);

    let on_demand_rt = Runtime::new(RuntimeConfig {
        fuel_apply: FUEL,
        allocation: Allocation::OnDemand,
        ..RuntimeConfig::default()
    })
    .unwrap();
    let on_demand = load_in(&on_demand_rt, "counter", &counter_wat());
    assert_eq!(apply(&on_demand, &state), first);
}

#[test]
fn every_call_starts_from_a_pristine_instance() {
    // A global and a memory cell incremented per call: both must read 1 every time.
    let module = load(
        "fresh",
        &apply_guest(
            r#"(global $g (mut i32) (i32.const 0))
               (data (i32.const 1024) "k")"#,
            r#"(global.set $g (i32.add (global.get $g) (i32.const 1)))
               (i32.store8 (i32.const 2000) (i32.add (i32.load8_u (i32.const 2000)) (i32.const 1)))
               (i32.store8 (i32.const 2001) (i32.add (i32.const 48) (global.get $g)))
               (i32.store8 (i32.const 2002) (i32.add (i32.const 48) (i32.load8_u (i32.const 2000))))
               (call $put (i32.const 1024) (i32.const 1) (i32.const 2001) (i32.const 2))
               (i32.const 0)"#,
        ),
    );
    let state = MemState::new();
    for _ in 0..3 {
        let out = apply(&module, &state);
        assert_eq!(out.writes.get("m/fresh/k"), Some(&Some(b"11".to_vec())));
    }
}

// ---------------------------------------------------------------------------------------------
// Fuel.

#[test]
fn an_infinite_loop_runs_out_of_fuel_and_writes_nothing() {
    let module = load(
        "loop",
        &apply_guest(
            r#"(data (i32.const 1024) "key") (data (i32.const 1030) "{}")"#,
            r#"(call $put (i32.const 1024) (i32.const 3) (i32.const 1024) (i32.const 3))
               (call $emit (i32.const 1024) (i32.const 3) (i32.const 1030) (i32.const 2))
               (loop $forever (br $forever))
               (i32.const 0)"#,
        ),
    );
    let out = apply(&module, &MemState::new());
    assert_eq!(err_text(&out), "internal: out of fuel");
    assert_eq!(out.fuel_used, FUEL);
    assert!(out.writes.is_empty() && out.events.is_empty());
}

#[test]
fn a_host_call_that_cannot_be_paid_runs_out_of_fuel() {
    let rt = Runtime::new(RuntimeConfig {
        fuel_apply: 5_000,
        ..RuntimeConfig::default()
    })
    .unwrap();
    // A 1000-byte value costs 200 + 11 * 1001 fuel.
    let module = load_in(
        &rt,
        "pricey",
        &apply_guest(
            "",
            "(call $put (i32.const 0) (i32.const 1) (i32.const 0) (i32.const 1000)) (i32.const 0)",
        ),
    );
    let out = apply(&module, &MemState::new());
    assert_eq!(err_text(&out), "internal: out of fuel");
    assert_eq!(out.fuel_used, 5_000);
    assert!(out.writes.is_empty());
}

#[test]
fn host_calls_are_charged_from_the_gas_table() {
    let plain = load(
        "plain",
        &apply_guest("", "(drop (i64.const 0)) (i32.const 0)"),
    );
    let height = load(
        "height",
        &apply_guest("", "(drop (call $height)) (i32.const 0)"),
    );
    let state = MemState::new();
    // `call` and `i64.const` both cost one operator: the difference is the host call's base.
    assert_eq!(
        apply(&height, &state).fuel_used - apply(&plain, &state).fuel_used,
        200
    );

    // put of a 3-byte key and 5-byte value: base + (1 + 10) per byte.
    let put = load(
        "put",
        &apply_guest(
            "",
            "(call $put (i32.const 0) (i32.const 3) (i32.const 0) (i32.const 5)) (i32.const 0)",
        ),
    );
    let put_ops = load(
        "put_ops",
        &apply_guest(
            "",
            "(drop (i32.const 0)) (drop (i32.const 3)) (drop (i32.const 0)) (drop (i32.const 5)) (i32.const 0)",
        ),
    );
    // `drop` is free, so the bodies differ by the `call` operator and the host's charge.
    let diff = apply(&put, &state).fuel_used - apply(&put_ops, &state).fuel_used;
    assert_eq!(diff, 1 + 200 + 11 * 8);
}

// ---------------------------------------------------------------------------------------------
// Traps and rollback.

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
    assert!(out.fuel_used > 0 && out.fuel_used < FUEL);

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

// ---------------------------------------------------------------------------------------------
// Context, state scoping, scans, the bank.

#[test]
fn context_imports_report_the_block_and_transaction() {
    // Writes each context value under its own key.
    let body = r#"
      (call $put (i32.const 1100) (i32.const 1) (i32.const 2000) (call $txid (i32.const 2000) (i32.const 64)))
      (call $put (i32.const 1101) (i32.const 1) (i32.const 2100) (call $module_id (i32.const 2100) (i32.const 64)))
      (call $put (i32.const 1102) (i32.const 1) (i32.const 2200) (call $sequencer (i32.const 2200) (i32.const 64)))
      (call $put (i32.const 1103) (i32.const 1) (i32.const 2300) (call $checkpoint (i32.const 2300) (i32.const 100)))
      (i64.store (i32.const 2400) (call $height))
      (i64.store (i32.const 2408) (call $block_time_ms))
      (call $put (i32.const 1104) (i32.const 1) (i32.const 2400) (i32.const 16))
      (call $public_random (i32.const 2500))
      (call $public_random (i32.const 2532))
      (call $put (i32.const 1105) (i32.const 1) (i32.const 2500) (i32.const 64))
      ;; A buffer too small: the length comes back, nothing is written.
      (i64.store (i32.const 2600) (i64.extend_i32_s (call $txid (i32.const 2608) (i32.const 10))))
      (call $put (i32.const 1106) (i32.const 1) (i32.const 2600) (i32.const 10))
      (i32.const 0)"#;
    let module = load(
        "ctx",
        &apply_guest(r#"(data (i32.const 1100) "tmsckrx")"#, body),
    );
    let out = apply(&module, &MemState::new());
    assert_eq!(out.result, Ok(()));
    let get = |k: &str| {
        out.writes
            .get(&format!("m/ctx/{k}"))
            .cloned()
            .flatten()
            .unwrap()
    };
    assert_eq!(get("t"), TXID.as_bytes());
    assert_eq!(get("m"), b"ctx");
    assert_eq!(get("s"), b"seq1");
    assert_eq!(get("c"), br#"{"hash":"abcd","height":42}"#);
    let mut hb = 7u64.to_le_bytes().to_vec();
    hb.extend_from_slice(&1_700_000_000_123u64.to_le_bytes());
    assert_eq!(get("k"), hb);
    let mut random = gamechain_sdk::public_random(TXID, 7, 0).to_vec();
    random.extend_from_slice(&gamechain_sdk::public_random(TXID, 7, 1));
    assert_eq!(get("r"), random);
    let mut short = 64i64.to_le_bytes().to_vec();
    short.extend_from_slice(&[0, 0]);
    assert_eq!(get("x"), short);
}

#[test]
fn writes_land_only_under_the_modules_own_prefix() {
    let data = r#"(data (i32.const 1024) "../x")
                  (data (i32.const 1030) "/x")
                  (data (i32.const 1040) "m/other/k")
                  (data (i32.const 1050) "bal/alice/GOLD")"#;
    let body = r#"
      (call $put (i32.const 1024) (i32.const 4) (i32.const 1024) (i32.const 1))
      (call $put (i32.const 1030) (i32.const 2) (i32.const 1024) (i32.const 1))
      ;; Read another module's key (allowed) and write it back: it lands in our own prefix.
      (call $put (i32.const 1040) (i32.const 9) (i32.const 2000)
        (i32.wrap_i64 (call $read_raw (i32.const 1040) (i32.const 9) (i32.const 2000) (i32.const 100))))
      (call $put (i32.const 1050) (i32.const 14) (i32.const 1024) (i32.const 1))
      (call $delete (i32.const 1040) (i32.const 9))
      (i32.const 0)"#;
    let module = load("scoped", &apply_guest(data, body));
    let mut state = MemState::new();
    state.map.insert("m/other/k".into(), b"theirs".to_vec());
    let out = apply(&module, &state);
    assert_eq!(out.result, Ok(()));
    let keys: Vec<&str> = out.writes.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "m/scoped/../x",
            "m/scoped//x",
            "m/scoped/bal/alice/GOLD",
            "m/scoped/m/other/k"
        ]
    );
    assert_eq!(
        out.writes["m/scoped/m/other/k"], None,
        "deleted again, in our own prefix"
    );
    assert!(out.writes.keys().all(|k| k.starts_with("m/scoped/")));
    // The read itself saw the other module's value: run without the delete.
    let module = load(
        "scoped",
        &apply_guest(
            data,
            &body.replace("(call $delete (i32.const 1040) (i32.const 9))", ""),
        ),
    );
    assert_eq!(
        apply(&module, &state).writes["m/scoped/m/other/k"],
        Some(b"theirs".to_vec())
    );
}

#[test]
fn scans_return_borsh_records_within_the_module() {
    // scan("a/", after "a/1", limit 2) then scan_raw("m/sc/a/", none, 10); outputs go to keys o1, o2.
    let data = r#"(data (i32.const 1024) "a/") (data (i32.const 1030) "a/1") (data (i32.const 1040) "m/sc/a/")
                  (data (i32.const 1050) "o1o2")"#;
    let body = r#"
      (call $put (i32.const 1050) (i32.const 2) (i32.const 2000)
        (i32.wrap_i64 (call $scan (i32.const 1024) (i32.const 2) (i32.const 1030) (i32.const 3) (i32.const 2) (i32.const 2000) (i32.const 1000))))
      (call $put (i32.const 1052) (i32.const 2) (i32.const 3000)
        (i32.wrap_i64 (call $scan_raw (i32.const 1040) (i32.const 7) (i32.const 0) (i32.const -1) (i32.const 10) (i32.const 3000) (i32.const 1000))))
      (i32.const 0)"#;
    let module = load("sc", &apply_guest(data, body));
    let mut state = MemState::new();
    for (k, v) in [
        ("m/sc/a/1", "x"),
        ("m/sc/a/2", "yy"),
        ("m/sc/a/3", "z"),
        ("m/sc/a/4", "w"),
        ("m/sc/b", "-"),
        ("m/sd/a/1", "-"),
    ] {
        state.map.insert(k.into(), v.as_bytes().to_vec());
    }
    let out = apply(&module, &state);
    assert_eq!(out.result, Ok(()));
    let record = |entries: &[(&str, &str)]| {
        let mut b = (entries.len() as u32).to_le_bytes().to_vec();
        for (k, v) in entries {
            b.extend_from_slice(&(k.len() as u32).to_le_bytes());
            b.extend_from_slice(k.as_bytes());
            b.extend_from_slice(&(v.len() as u32).to_le_bytes());
            b.extend_from_slice(v.as_bytes());
        }
        Some(b)
    };
    assert_eq!(
        out.writes["m/sc/o1"],
        record(&[("a/2", "yy"), ("a/3", "z")])
    );
    assert_eq!(
        out.writes["m/sc/o2"],
        record(&[
            ("m/sc/a/1", "x"),
            ("m/sc/a/2", "yy"),
            ("m/sc/a/3", "z"),
            ("m/sc/a/4", "w")
        ])
    );
}

#[test]
fn escrow_out_cannot_spend_more_than_the_modules_escrow() {
    let data = r#"(data (i32.const 1024) "alice") (data (i32.const 1030) "GOLD")"#;
    let body = r#"
      (if (result i32) (call $escrow_out (i32.const 1024) (i32.const 5) (i32.const 1030) (i32.const 4) (i64.const 100) (i64.const 0))
        (then (call $output (i32.const 2000) (call $last_error (i32.const 2000) (i32.const 500))) (i32.const 1))
        (else (i32.const 0)))"#;
    let module = load("esc", &apply_guest(data, body));
    let mut state = MemState::new();
    state
        .map
        .insert("bal/module:esc/GOLD".into(), b"5".to_vec());
    state
        .map
        .insert("bal/module:other/GOLD".into(), b"1000".to_vec());
    let out = apply(&module, &state);
    assert_eq!(err_text(&out), "insufficient GOLD: need 100, have 5");
    assert!(out.writes.is_empty());

    // 5 is fine, and moves from the module's own escrow only.
    let module = load(
        "esc",
        &apply_guest(data, &body.replace("(i64.const 100)", "(i64.const 5)")),
    );
    let out = apply(&module, &state);
    assert_eq!(out.result, Ok(()));
    let keys: Vec<&str> = out.writes.keys().map(String::as_str).collect();
    assert_eq!(keys, ["bal/alice/GOLD", "bal/module:esc/GOLD"]);
    assert_eq!(out.writes["bal/alice/GOLD"], Some(b"5".to_vec()));
    assert_eq!(out.writes["bal/module:esc/GOLD"], None);
}

#[test]
fn bank_calls_follow_the_ledger() {
    // escrow_in from the sender, then balance of the escrow as 16 LE bytes under key "b".
    let data = r#"(data (i32.const 1024) "alice") (data (i32.const 1030) "GOLD") (data (i32.const 1040) "module:bank")
                  (data (i32.const 1060) "b") (data (i32.const 1070) "TOK") (data (i32.const 1080) "Token")"#;
    let body = r#"
      (if (call $escrow_in (i32.const 1024) (i32.const 5) (i32.const 1030) (i32.const 4) (i64.const 30) (i64.const 0))
        (then (return (i32.const 9))))
      (call $balance (i32.const 1040) (i32.const 11) (i32.const 1030) (i32.const 4) (i32.const 2000))
      (call $put (i32.const 1060) (i32.const 1) (i32.const 2000) (i32.const 16))
      (if (call $create_token (i32.const 1070) (i32.const 3) (i32.const 1080) (i32.const 5) (i32.const 2) (i32.const 1) (i64.const 1000) (i64.const 0))
        (then (return (i32.const 9))))
      (if (call $mint (i32.const 1024) (i32.const 5) (i32.const 1070) (i32.const 3) (i64.const 700) (i64.const 0))
        (then (return (i32.const 9))))
      (if (call $burn (i32.const 1024) (i32.const 5) (i32.const 1070) (i32.const 3) (i64.const 200) (i64.const 0))
        (then (return (i32.const 9))))
      ;; Past the max supply of 1000: fails with the ledger's error.
      (if (result i32) (call $mint (i32.const 1024) (i32.const 5) (i32.const 1070) (i32.const 3) (i64.const 501) (i64.const 0))
        (then (call $output (i32.const 3000) (call $last_error (i32.const 3000) (i32.const 500))) (i32.const 1))
        (else (i32.const 0)))"#;
    let module = load("bank", &apply_guest(data, body));
    let mut state = MemState::new();
    state.map.insert("bal/alice/GOLD".into(), b"100".to_vec());
    let out = apply(&module, &state);
    assert_eq!(
        err_text(&out),
        "invalid: minting 501 would exceed the max supply of TOK"
    );

    let module = load(
        "bank",
        &apply_guest(data, &body.replace("(i64.const 501)", "(i64.const 500)")),
    );
    let out = apply(&module, &state);
    assert_eq!(out.result, Ok(()));
    assert_eq!(out.writes["m/bank/b"], Some(30u128.to_le_bytes().to_vec()));
    assert_eq!(out.writes["bal/alice/GOLD"], Some(b"70".to_vec()));
    assert_eq!(out.writes["bal/alice/TOK"], Some(b"1000".to_vec()));

    // escrow_in from someone other than the sender is refused.
    let other = apply_guest(
        data,
        r#"(if (result i32) (call $escrow_in (i32.const 1040) (i32.const 11) (i32.const 1030) (i32.const 4) (i64.const 1) (i64.const 0))
             (then (call $output (i32.const 3000) (call $last_error (i32.const 3000) (i32.const 500))) (i32.const 1))
             (else (i32.const 0)))"#,
    );
    let out = apply(&load("bank", &other), &state);
    assert_eq!(out.result.unwrap_err().code(), "unauthorized");
}

// ---------------------------------------------------------------------------------------------
// Views and end of block.

#[test]
fn views_are_read_only() {
    let data = r#"(data (i32.const 1024) "alice") (data (i32.const 1030) "GOLD") (data (i32.const 1040) "{}")"#;
    let writes = [
        "(call $put (i32.const 1024) (i32.const 1) (i32.const 1024) (i32.const 1)) (i32.const 0)",
        "(call $delete (i32.const 1024) (i32.const 1)) (i32.const 0)",
        "(drop (call $escrow_in (i32.const 1024) (i32.const 5) (i32.const 1030) (i32.const 4) (i64.const 1) (i64.const 0))) (i32.const 0)",
        "(drop (call $escrow_out (i32.const 1024) (i32.const 5) (i32.const 1030) (i32.const 4) (i64.const 1) (i64.const 0))) (i32.const 0)",
        "(drop (call $mint (i32.const 1024) (i32.const 5) (i32.const 1030) (i32.const 4) (i64.const 1) (i64.const 0))) (i32.const 0)",
    ];
    for body in writes {
        let module = load("viewer", &guest(data, "(i32.const 0)", body));
        let (result, _) = run_view(&module, &MemState::new(), &Query::new()).unwrap();
        assert_eq!(
            result.unwrap_err().to_string(),
            "internal: state is read-only in a view",
            "{body}"
        );
    }
}

#[test]
fn views_read_state_and_answer_json_or_errors() {
    // The view outputs the query it was given, or `read_raw` of a key, or an error object.
    let data = r#"(data (i32.const 1024) "m/viewer/x") (data (i32.const 1040) "{\"code\":\"not_found\",\"message\":\"game 1\"}")
                  (data (i32.const 1100) "x")"#;
    let echo = "(call $output (local.get $qp) (local.get $ql)) (i32.const 0)";
    let module = load("viewer", &guest(data, "(i32.const 0)", echo));
    let mut query = Query::new();
    query.insert("id".into(), "80566b04265ced78".into());
    assert_eq!(
        run_view(&module, &MemState::new(), &query).unwrap().0,
        Ok(json!({ "id": "80566b04265ced78" }))
    );

    let mut state = MemState::new();
    state.map.insert("m/viewer/x".into(), br#"[1,2]"#.to_vec());
    let raw = "(call $output (i32.const 2000) (i32.wrap_i64 (call $read_raw (i32.const 1024) (i32.const 10) (i32.const 2000) (i32.const 100)))) (i32.const 0)";
    assert_eq!(
        run_view(
            &load("viewer", &guest(data, "(i32.const 0)", raw)),
            &state,
            &query
        )
        .unwrap()
        .0,
        Ok(json!([1, 2]))
    );
    let get = "(call $output (i32.const 2000) (i32.wrap_i64 (call $get (i32.const 1100) (i32.const 1) (i32.const 2000) (i32.const 100)))) (i32.const 0)";
    assert_eq!(
        run_view(
            &load("viewer", &guest(data, "(i32.const 0)", get)),
            &state,
            &query
        )
        .unwrap()
        .0,
        Ok(json!([1, 2]))
    );

    let error = "(call $output (i32.const 1040) (i32.const 39)) (i32.const 1)";
    let (result, _) = run_view(
        &load("viewer", &guest(data, "(i32.const 0)", error)),
        &state,
        &query,
    )
    .unwrap();
    assert_eq!(result.unwrap_err().to_string(), "not found: game 1");

    for bad in [
        "(i32.const 0)",
        "(call $output (i32.const 1100) (i32.const 1)) (i32.const 0)",
        "(i32.const 3)",
    ] {
        let (result, _) = run_view(
            &load("viewer", &guest(data, "(i32.const 0)", bad)),
            &state,
            &query,
        )
        .unwrap();
        assert_eq!(
            result.unwrap_err().to_string(),
            "internal: malformed module output",
            "{bad}"
        );
    }
}

#[test]
fn end_block_keeps_writes_on_ok_and_is_optional() {
    let counter = load("counter", &counter_wat());
    let out = execute_end_block(&counter, &MemState::new(), &env()).unwrap();
    assert_eq!((out.result, out.fuel_used), (Ok(()), 0));

    let ticker = |code: &str| {
        format!(
            r#"(module
                 (import "gamechain_v1" "put" (func $put (param i32 i32 i32 i32)))
                 (import "gamechain_v1" "txid" (func $txid (param i32 i32) (result i32)))
                 (memory (export "memory") 1)
                 (data (i32.const 16) "tick")
                 (func (export "gc_abi_version") (result i32) (i32.const 1))
                 (func (export "gc_alloc") (param i32) (result i32) (i32.const 4096))
                 (func (export "gc_apply") (param i32 i32 i32 i32) (result i32) (i32.const 0))
                 (func (export "gc_view") (param i32 i32) (result i32) (i32.const 0))
                 (func (export "gc_end_block") (result i32)
                   (call $put (i32.const 16) (i32.const 4) (i32.const 100) (call $txid (i32.const 100) (i32.const 64)))
                   (call $put (i32.const 16) (i32.const 1) (i32.const 16) (i32.const 4))
                   ({code})))"#
        )
    };
    let ok = execute_end_block(
        &load("ticker", &ticker("i32.const 0")),
        &MemState::new(),
        &env(),
    )
    .unwrap();
    assert_eq!(ok.result, Ok(()));
    assert_eq!(
        ok.writes["m/ticker/tick"],
        Some(Vec::new()),
        "txid is empty at end of block"
    );
    assert_eq!(ok.writes["m/ticker/t"], Some(b"tick".to_vec()));
    let failed = execute_end_block(
        &load("ticker", &ticker("i32.const 7")),
        &MemState::new(),
        &env(),
    )
    .unwrap();
    assert_eq!(err_text(&failed), "internal: malformed module output");
    assert!(failed.writes.is_empty());
}

// ---------------------------------------------------------------------------------------------
// Load-time validation.

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

// ---------------------------------------------------------------------------------------------
// The instance pool.

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
