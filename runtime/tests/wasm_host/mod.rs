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

/// The block every host test runs in (also `hostile.rs`'s).
pub(crate) fn env() -> BlockEnv {
    BlockEnv {
        height: 7,
        block_time_ms: 1_700_000_000_123,
        checkpoint: Checkpoint {
            height: 42,
            hash: "abcd".into(),
        },
        sequencer: "seq1".into(),
        beacon: None,
        beacon_key: None,
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

mod compilers;
mod state;
mod tier_up;
mod traps;
mod validation;
mod views;

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
