//! Instance reuse (`RuntimeConfig::reuse_instances`): a call served by a reset warm instance
//! must be indistinguishable from one served by a fresh instance — same result, same fuel, same
//! writes, events and log — and must start from the module's pristine memory and globals.
//!
//! Every test runs the same call sequence on two runtimes, one with reuse off and one with reuse
//! and `verify_reuse` on (which also compares the whole memory and every global with the
//! snapshot after each reset and panics on a difference), and compares every outcome. The
//! modules check their own state at the start of each call as well and fail the call when it is
//! not pristine.

use std::sync::Arc;

use gamechain_runtime::{
    execute_apply, execute_end_block, run_view, Allocation, MemState, Runtime, RuntimeConfig,
    State, TxOutcome, WasmModule,
};
use gamechain_sdk::prelude::*;
use gamechain_sdk::BlockEnv;

const TXID: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
const FUEL: u64 = 2_000_000;
const MEMORY: usize = 2 << 16;

fn config(reuse: bool, allocation: Allocation) -> RuntimeConfig {
    RuntimeConfig {
        fuel_apply: FUEL,
        fuel_view: FUEL,
        fuel_end_block: FUEL,
        allocation,
        reuse_instances: reuse,
        verify_reuse: reuse,
        ..RuntimeConfig::default()
    }
}

/// A runtime without reuse and one with reuse (and verification), same limits.
fn runtimes(allocation: Allocation) -> (Arc<Runtime>, Arc<Runtime>) {
    (
        Runtime::new(config(false, allocation)).unwrap(),
        Runtime::new(config(true, allocation)).unwrap(),
    )
}

fn pooled() -> Allocation {
    Allocation::Pooling { instances: 4 }
}

fn load(rt: &Arc<Runtime>, id: &str, wat: &str) -> WasmModule {
    let wasm = wat::parse_str(wat).unwrap_or_else(|e| panic!("bad test WAT: {e}\n{wat}"));
    WasmModule::new(rt, id, &wasm).unwrap_or_else(|e| panic!("load failed: {e}"))
}

fn env() -> BlockEnv {
    BlockEnv {
        height: 9,
        block_time_ms: 1_700_000_000_000,
        ..BlockEnv::default()
    }
}

/// Applies `op` on both modules over their own states, checks the outcomes are identical and
/// commits the writes of a successful call to both states.
fn apply_both(
    fresh: &WasmModule,
    reuse: &WasmModule,
    states: &mut (MemState, MemState),
    op: &str,
) -> TxOutcome {
    let a = execute_apply(fresh, &states.0, &env(), TXID, "alice", op.as_bytes()).unwrap();
    let b = execute_apply(reuse, &states.1, &env(), TXID, "alice", op.as_bytes()).unwrap();
    assert_eq!(a, b, "fresh and reused instances differ on {op}");
    if a.result.is_ok() {
        states.0.apply(a.writes.clone());
        states.1.apply(b.writes);
    }
    a
}

/// Every import the test modules use, a bump `gc_alloc` over [4096, 8192) reset with the
/// instance, and `gc_abi_version`.
const PRELUDE: &str = r#"
  (import "gamechain_v1" "get" (func $get (param i32 i32 i32 i32) (result i64)))
  (import "gamechain_v1" "put" (func $put (param i32 i32 i32 i32)))
  (import "gamechain_v1" "emit" (func $emit (param i32 i32 i32 i32)))
  (import "gamechain_v1" "output" (func $output (param i32 i32)))
  (import "gamechain_v1" "log" (func $log (param i32 i32)))
  (import "gamechain_v1" "public_random" (func $public_random (param i32)))
  (memory (export "memory") 2 4)
  (global $heap (mut i32) (i32.const 4096))
  (func (export "gc_abi_version") (result i32) (i32.const 1))
  (func (export "gc_alloc") (param $len i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.add (global.get $heap) (local.get $len)))
    (local.get $p))
"#;

/// The pristine memory of [`scribbler`]: zeros and its data segments.
fn scribbler_memory() -> Vec<u8> {
    let mut m = vec![0u8; MEMORY];
    for (at, bytes) in SCRIBBLER_DATA {
        m[*at..*at + bytes.len()].copy_from_slice(bytes);
    }
    m
}

const SCRIBBLER_DATA: &[(usize, &[u8])] = &[
    (100, b"SENTINEL-SENTINEL"),
    (2000, br#"{"a":1}"#),
    (3000, br#"{"code":"invalid","message":"not pristine"}"#),
    (130_000, b"the end of the initial memory"),
];

/// `acc = acc * 31 + word` over the 8-byte words of `memory`, skipping [4096, 8192) (where
/// `gc_alloc` puts the current call's inputs), as the module computes it.
fn checksum(memory: &[u8]) -> i64 {
    let mut acc = 0i64;
    for (i, word) in memory.chunks(8).enumerate() {
        if (4096..8192).contains(&(i * 8)) {
            continue;
        }
        acc = acc
            .wrapping_mul(31)
            .wrapping_add(i64::from_le_bytes(word.try_into().unwrap()));
    }
    acc
}

/// A module that, in every `gc_apply`:
/// 1. checks it starts pristine: memory size, every mutable global, a checksum of the whole
///    memory but the input buffer, and zeros after this call's inputs (a longer earlier input
///    must not show through); otherwise fails with `invalid: not pristine`;
/// 2. emits an event, reads state into a buffer at a random place (a host write), draws a
///    random value into memory (another);
/// 3. scribbles: stores of every width at random addresses over the whole memory,
///    `memory.fill` and `memory.copy` of random ranges, new values for every global;
/// 4. then, by the op's seed modulo 4: returns 0; traps; grows the memory, writes the new page
///    and returns 0; or loops until out of fuel.
fn scribbler() -> String {
    let data: String = SCRIBBLER_DATA
        .iter()
        .map(|(at, bytes)| {
            format!(
                "(data (i32.const {at}) \"{}\")\n",
                String::from_utf8_lossy(bytes).replace('"', "\\\"")
            )
        })
        .collect();
    let expected = checksum(&scribbler_memory());
    let not_pristine = SCRIBBLER_DATA[2].1.len();
    format!(
        r#"(module {PRELUDE}
  {data}
  (global $g (mut i32) (i32.const 7))
  (global $h (mut i64) (i64.const -1))
  (global $f (mut f64) (f64.const 0.5))
  (global $seed (mut i32) (i32.const 0))
  (func $rand (result i32)
    (global.set $seed (i32.add (i32.mul (global.get $seed) (i32.const 1103515245)) (i32.const 12345)))
    (i32.shr_u (global.get $seed) (i32.const 4)))
  (func $below (param $n i32) (result i32) (i32.rem_u (call $rand) (local.get $n)))
  (func $checksum (result i64)
    (local $i i32) (local $acc i64)
    (block $done
      (loop $l
        (br_if $done (i32.ge_u (local.get $i) (i32.const {MEMORY})))
        (if (i32.eq (local.get $i) (i32.const 4096)) (then (local.set $i (i32.const 8192))))
        (local.set $acc (i64.add (i64.mul (local.get $acc) (i64.const 31)) (i64.load (local.get $i))))
        (local.set $i (i32.add (local.get $i) (i32.const 8)))
        (br $l)))
    (local.get $acc))
  (func $zeros (param $from i32) (param $to i32) (result i32)
    (block $bad
      (loop $l
        (br_if 2 (i32.const 1) (i32.ge_u (local.get $from) (local.get $to)))
        (br_if $bad (i32.load8_u (local.get $from)))
        (local.set $from (i32.add (local.get $from) (i32.const 1)))
        (br $l)))
    (i32.const 0))
  (func $pristine (param $inputs_end i32) (result i32)
    (i32.and
      (i32.and
        (i32.and (i32.eq (memory.size) (i32.const 2)) (i32.eq (global.get $g) (i32.const 7)))
        (i32.and (i64.eq (global.get $h) (i64.const -1)) (f64.eq (global.get $f) (f64.const 0.5))))
      (i32.and
        (i64.eq (call $checksum) (i64.const {expected}))
        (call $zeros (local.get $inputs_end) (i32.const 8192)))))
  (func (export "gc_apply") (param $sp i32) (param $sl i32) (param $op i32) (param $ol i32) (result i32)
    (local $i i32) (local $s i32)
    (if (i32.eqz (call $pristine (i32.add (local.get $op) (local.get $ol))))
      (then (call $output (i32.const 3000) (i32.const {not_pristine})) (return (i32.const 1))))
    ;; The seed: a hash of the op's bytes.
    (block $done
      (loop $l
        (br_if $done (i32.ge_u (local.get $i) (local.get $ol)))
        (local.set $s (i32.add (i32.mul (local.get $s) (i32.const 31)) (i32.load8_u (i32.add (local.get $op) (local.get $i)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $l)))
    (global.set $seed (local.get $s))
    (call $emit (i32.const 100) (i32.const 8) (i32.const 2000) (i32.const 7))
    (call $log (i32.const 100) (i32.const 17))
    (i32.store8 (i32.const 1000) (i32.const 107))
    (drop (call $get (i32.const 1000) (i32.const 1) (i32.add (i32.const 8192) (call $below (i32.const 120000))) (i32.const 64)))
    (call $public_random (i32.add (i32.const 8192) (call $below (i32.const 120000))))
    (local.set $i (i32.const 0))
    (block $done
      (loop $l
        (br_if $done (i32.ge_u (local.get $i) (i32.const 300)))
        (i64.store (i32.and (call $rand) (i32.const 0x1FFF8)) (i64.extend_i32_u (call $rand)))
        (i32.store8 offset=3 (call $below (i32.const 131060)) (call $rand))
        (i32.store16 (call $below (i32.const 131070)) (call $rand))
        (i64.store32 offset=1 (call $below (i32.const 131060)) (i64.const -1))
        (f32.store (i32.and (call $rand) (i32.const 0x1FFFC)) (f32.const 1.25))
        (f64.store (i32.and (call $rand) (i32.const 0x1FFF8)) (f64.const -2.5))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $l)))
    (memory.fill (call $below (i32.const 120000)) (call $rand) (call $below (i32.const 10000)))
    (memory.copy (call $below (i32.const 120000)) (call $below (i32.const 120000)) (call $below (i32.const 10000)))
    (global.set $g (call $rand))
    (global.set $h (i64.extend_i32_s (call $rand)))
    (global.set $f (f64.convert_i32_u (call $rand)))
    (global.set $heap (call $rand))
    ;; A state write of bytes that depend on the scribbles.
    (i32.store8 (i32.const 1000) (i32.const 107))
    (call $put (i32.const 1000) (i32.const 1) (i32.const 1001) (i32.const 16))
    (block $ok
      (block $grow
        (block $trap
          (block $spin
            (br_table $ok $trap $grow $spin (i32.and (local.get $s) (i32.const 3))))
          (loop $forever (br $forever)))
        (unreachable))
      (drop (memory.grow (i32.const 1)))
      (i64.store (i32.const 140000) (i64.const -1))
      (i64.store (i32.const 50) (i64.const -1)))
    (i32.const 0))
  (func (export "gc_view") (param $qp i32) (param $ql i32) (result i32)
    (if (i32.eqz (call $pristine (i32.add (local.get $qp) (local.get $ql))))
      (then (call $output (i32.const 3000) (i32.const {not_pristine})) (return (i32.const 1))))
    (i64.store (i32.const 100) (i64.const 0))
    ;; {{"a":D}} with D from the view's second random draw (the draw count restarts every call).
    (call $public_random (i32.const 8192))
    (call $public_random (i32.const 8192))
    (i32.store8 (i32.const 2005) (i32.add (i32.const 48) (i32.rem_u (i32.load8_u (i32.const 8192)) (i32.const 10))))
    (call $output (i32.const 2000) (i32.const 7))
    (i32.const 0))
  (func (export "gc_end_block") (result i32)
    (if (i32.eqz (call $pristine (i32.const 4096)))
      (then (call $output (i32.const 3000) (i32.const {not_pristine})) (return (i32.const 1))))
    (memory.fill (i32.const 0) (i32.const 255) (i32.const {MEMORY}))
    (global.set $g (i32.const 0))
    (i32.const 0))
)"#
    )
}

#[test]
fn reuse_and_fresh_instances_give_identical_outcomes_and_reuse_starts_pristine() {
    for allocation in [pooled(), Allocation::OnDemand] {
        let (fresh_rt, reuse_rt) = runtimes(allocation);
        let fresh = load(&fresh_rt, "scribbler", &scribbler());
        let reuse = load(&reuse_rt, "scribbler", &scribbler());
        assert_eq!(reuse.reusable(), Ok(()));
        let mut states = (MemState::new(), MemState::new());
        let mut kinds = [0usize; 4];
        for n in 0..80 {
            // Ops of varying length, so shorter inputs follow longer ones.
            let op = format!(
                r#"{{"kind":"go","n":{n},"pad":"{}"}}"#,
                "x".repeat(n * 37 % 200)
            );
            let seed = op
                .bytes()
                .fold(0i32, |s, b| s.wrapping_mul(31).wrapping_add(b as i32));
            let out = apply_both(&fresh, &reuse, &mut states, &op);
            let kind = (seed & 3) as usize;
            kinds[kind] += 1;
            match kind {
                0 | 2 => {
                    assert_eq!(
                        out.result,
                        Ok(()),
                        "call {n} (kind {kind}) failed: {:?}",
                        out.result
                    );
                    assert_eq!(out.events.len(), 1);
                    assert_eq!(out.writes.len(), 1);
                    assert_eq!(out.log, ["SENTINEL-SENTINEL"]);
                }
                1 => assert_eq!(
                    out.result.unwrap_err().to_string(),
                    "internal: trap: unreachable"
                ),
                _ => {
                    assert_eq!(out.result.unwrap_err().to_string(), "internal: out of fuel");
                    assert_eq!(out.fuel_used, FUEL);
                }
            }
            // Views and end_block calls in between, on the same warm instances.
            if n % 7 == 0 {
                // Twice: the second view runs in the instance the first one left.
                for _ in 0..2 {
                    let q = Query::from([("id".to_string(), "x".repeat(n))]);
                    let a = run_view(&fresh, &states.0, &q).unwrap();
                    let b = run_view(&reuse, &states.1, &q).unwrap();
                    assert_eq!(a, b);
                    assert!(a.0.unwrap()["a"].is_u64());
                }
                let a = execute_end_block(&fresh, &states.0, &env()).unwrap();
                let b = execute_end_block(&reuse, &states.1, &env()).unwrap();
                assert_eq!(a, b);
                assert_eq!(a.result, Ok(()));
            }
        }
        assert!(
            kinds.iter().all(|&k| k >= 8),
            "every behaviour ran: {kinds:?}"
        );
        assert_eq!(states.0.get("m/scribbler/k"), states.1.get("m/scribbler/k"));
        // Reuse really happened: a new instance only after the calls that trapped, ran out of
        // fuel or grew the memory (plus the load-time checks), never after the others.
        let discarded = (kinds[1] + kinds[2] + kinds[3]) as u64;
        assert!(
            reuse.instantiations() <= discarded + 3,
            "{} instances for {kinds:?}",
            reuse.instantiations()
        );
        assert!(fresh.instantiations() >= 80, "{}", fresh.instantiations());
    }
}

#[test]
fn a_start_function_runs_once_per_instance_and_its_fuel_is_charged_every_call() {
    // The start function fills memory and sets globals (no host calls): its effect is part of
    // the pristine state, and its fuel is charged to every call as if it ran.
    let wat = format!(
        r#"(module {PRELUDE}
      (global $g (mut i32) (i32.const 0))
      (func $start
        (local $i i32)
        (block $done
          (loop $l
            (br_if $done (i32.ge_u (local.get $i) (i32.const 50)))
            (i32.store (i32.mul (local.get $i) (i32.const 997)) (i32.add (local.get $i) (i32.const 1)))
            (local.set $i (i32.add (local.get $i) (i32.const 1)))
            (br $l)))
        (global.set $g (i32.const 42)))
      (start $start)
      (func (export "gc_apply") (param i32 i32 i32 i32) (result i32)
        (if (i32.or (i32.ne (global.get $g) (i32.const 42)) (i32.ne (i32.load (i32.const 997)) (i32.const 2)))
          (then (unreachable)))
        (global.set $g (i32.const 0))
        (i32.store (i32.const 997) (i32.const 0))
        (i32.const 0))
      (func (export "gc_view") (param i32 i32) (result i32) (i32.const 1)))"#
    );
    let (fresh_rt, reuse_rt) = runtimes(pooled());
    let fresh = load(&fresh_rt, "start", &wat);
    let reuse = load(&reuse_rt, "start", &wat);
    assert_eq!(reuse.reusable(), Ok(()));
    let mut states = (MemState::new(), MemState::new());
    let first = apply_both(&fresh, &reuse, &mut states, "{}");
    assert_eq!(first.result, Ok(()));
    for _ in 0..5 {
        assert_eq!(apply_both(&fresh, &reuse, &mut states, "{}"), first);
    }
    assert!(reuse.instantiations() <= 3, "{}", reuse.instantiations());
}

#[test]
fn fuel_is_identical_at_every_limit_around_the_start_functions_fuel() {
    // With a limit at or below what the start function needs, the call runs in a fresh
    // instance; just above, in a warm one: every outcome (out of fuel or not, fuel used) must be
    // the same as without reuse.
    let wat = format!(
        r#"(module {PRELUDE}
      (global $g (mut i32) (i32.const 0))
      (func $start (local $i i32)
        (loop $l
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br_if $l (i32.lt_u (local.get $i) (i32.const 10))))
        (global.set $g (local.get $i)))
      (start $start)
      (func (export "gc_apply") (param i32 i32 i32 i32) (result i32)
        (i32.store (i32.const 0) (global.get $g))
        (global.set $g (i32.const 1))
        (i32.const 0))
      (func (export "gc_view") (param i32 i32) (result i32) (i32.const 1)))"#
    );
    let probe_rt = Runtime::new(config(false, Allocation::OnDemand)).unwrap();
    let probe = load(&probe_rt, "fuel", &wat);
    let full = execute_apply(&probe, &MemState::new(), &env(), TXID, "alice", b"")
        .unwrap()
        .fuel_used;
    let mut saw = (false, false);
    for limit in 1..=full + 3 {
        let cfg = |reuse| RuntimeConfig {
            fuel_apply: limit,
            fuel_view: FUEL,
            fuel_end_block: limit,
            ..config(reuse, Allocation::OnDemand)
        };
        let fresh = load(&Runtime::new(cfg(false)).unwrap(), "fuel", &wat);
        let reuse = load(&Runtime::new(cfg(true)).unwrap(), "fuel", &wat);
        let mut states = (MemState::new(), MemState::new());
        for _ in 0..3 {
            let out = apply_both(&fresh, &reuse, &mut states, "");
            match out.result {
                Ok(()) => saw.0 = true,
                Err(_) => {
                    assert_eq!(out.fuel_used, limit);
                    saw.1 = true;
                }
            }
        }
    }
    assert_eq!(saw, (true, true));
}

#[test]
fn modules_that_change_their_table_run_in_fresh_instances_with_the_same_results() {
    let wat = format!(
        r#"(module {PRELUDE}
      (table 2 funcref)
      (type $r (func (result i32)))
      (func $zero (result i32) (i32.const 0))
      (func $one (result i32) (i32.const 1))
      (elem (i32.const 0) $zero)
      (elem declare func $one)
      (func (export "gc_apply") (param i32 i32 i32 i32) (result i32)
        (local $r i32)
        (local.set $r (call_indirect (type $r) (i32.const 0)))
        (table.set (i32.const 0) (ref.func $one))
        (if (local.get $r) (then (call $output (i32.const 0) (i32.const 0))))
        (local.get $r))
      (func (export "gc_view") (param i32 i32) (result i32) (i32.const 1)))"#
    );
    let (fresh_rt, reuse_rt) = runtimes(pooled());
    let fresh = load(&fresh_rt, "table", &wat);
    let reuse = load(&reuse_rt, "table", &wat);
    assert_eq!(reuse.reusable(), Err("uses table.set".to_string()));
    let mut states = (MemState::new(), MemState::new());
    for _ in 0..4 {
        assert_eq!(apply_both(&fresh, &reuse, &mut states, "").result, Ok(()));
    }
}

#[test]
fn warm_instances_give_their_pool_slots_to_other_modules() {
    // One pool slot, three reusable modules called in turn from several threads: an idle warm
    // instance of one module must be evicted for a call of another, never wait forever.
    let rt = Runtime::new(RuntimeConfig {
        allocation: Allocation::Pooling { instances: 1 },
        ..config(true, pooled())
    })
    .unwrap();
    let modules: Vec<Arc<WasmModule>> = ["a", "b", "c"]
        .iter()
        .map(|id| Arc::new(load(&rt, id, &scribbler())))
        .collect();
    let threads: Vec<_> = (0..3)
        .map(|t| {
            let modules = modules.clone();
            std::thread::spawn(move || {
                let state = MemState::new();
                for n in 0..12 {
                    let module = &modules[(t + n) % 3];
                    let op = format!(r#"{{"n":{n},"t":{t}}}"#);
                    let out = execute_apply(module, &state, &env(), TXID, "alice", op.as_bytes())
                        .unwrap();
                    assert_ne!(
                        out.result.err().map(|e| e.to_string()).as_deref(),
                        Some("invalid: not pristine")
                    );
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    // Dropping a module drops its idle instances (and frees their slots).
    drop(modules);
    let again = load(&rt, "d", &scribbler());
    let out = execute_apply(&again, &MemState::new(), &env(), TXID, "alice", b"{}").unwrap();
    assert_ne!(
        out.result.err().map(|e| e.to_string()).as_deref(),
        Some("invalid: not pristine")
    );
}

#[test]
fn reuse_is_not_consensus() {
    let base = RuntimeConfig::default();
    assert!(base.reuse_instances);
    assert!(!base.verify_reuse);
    let other = RuntimeConfig {
        reuse_instances: false,
        verify_reuse: true,
        ..base.clone()
    };
    assert_eq!(other.config_hash(), base.config_hash());
    assert!(base.canonical_description().contains("instrumentation="));
}
