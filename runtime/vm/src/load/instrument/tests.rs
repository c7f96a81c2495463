//! Tests of the instrumenter: semantics kept, marks complete, the plan's refusals.

use sha2::Digest;
use wasmparser::BinaryReader;
use wasmtime::{Config, Engine, Instance, Module, Store, Val, WasmFeatures};

use super::plan::MAX_RESET_GLOBALS;
use super::*;
use crate::load::encode::*;

/// An engine with exactly the chain's wasm features (no fuel: semantics only).
fn engine() -> Engine {
    let mut c = Config::new();
    c.wasm_features(WasmFeatures::all(), false)
        .wasm_features(crate::abi::allowed_features(), true);
    Engine::new(&c).unwrap()
}

/// [`instrument`] with the call costs of `wasm` (none when it does not parse), under this
/// build's newest instrumentation revision.
fn instr(wasm: &[u8]) -> Instrumented {
    instr_at(wasm, INSTRUMENTATION_REVISION)
}

/// [`instr`] under instrumentation `revision`.
fn instr_at(wasm: &[u8], revision: u32) -> Instrumented {
    let info = crate::load::validate::analyze(wasm).unwrap_or_default();
    instrument(wasm, &info, revision)
}

fn wat(text: &str) -> Vec<u8> {
    wat::parse_str(text).unwrap_or_else(|e| panic!("bad test WAT: {e}"))
}

/// An instance of `wasm` (no imports) and its memory.
fn instance(engine: &Engine, wasm: &[u8]) -> (Store<()>, Instance) {
    let module =
        Module::from_binary(engine, wasm).unwrap_or_else(|e| panic!("does not compile: {e:#}"));
    let mut store = Store::new(engine, ());
    let instance = Instance::new(&mut store, &module, &[]).unwrap();
    (store, instance)
}

fn memory(store: &mut Store<()>, instance: &Instance) -> Vec<u8> {
    instance
        .get_memory(&mut *store, "memory")
        .unwrap()
        .data(&*store)
        .to_vec()
}

fn globals(store: &mut Store<()>, instance: &Instance, names: &[&str]) -> Vec<Option<u64>> {
    names
        .iter()
        .map(|n| {
            let v = instance
                .get_global(&mut *store, n)
                .unwrap()
                .get(&mut *store);
            match v {
                Val::I32(x) => Some(x as u32 as u64),
                Val::I64(x) => Some(x as u64),
                Val::F32(x) => Some(u64::from(x)),
                Val::F64(x) => Some(x),
                _ => None,
            }
        })
        .collect()
}

/// Gives an instance of an instrumented module all the fuel there is (`meter.rs`: the counter
/// starts at 0).
fn fill_fuel(store: &mut Store<()>, instance: &Instance, plan: &Plan) {
    instance
        .get_global(&mut *store, &plan.fuel_export)
        .expect("the fuel counter is exported")
        .set(&mut *store, Val::I64(i64::MAX))
        .unwrap();
}

/// Calls `func(args)` on a fresh instance of the original and of the instrumented module and
/// checks: same outcome, same memory, same exported globals; every byte that differs from
/// the pristine memory lies in a range the `dirty` mask restores.
fn check(original: &[u8], func: &str, args: &[Val], exported_globals: &[&str]) -> u64 {
    let engine = engine();
    let out = instr(original);
    let plan = out.plan.expect("instrumentable");
    let (mut s0, i0) = instance(&engine, original);
    let (mut s1, i1) = instance(&engine, &out.wasm);
    fill_fuel(&mut s1, &i1, &plan);
    let pristine = memory(&mut s1, &i1);
    assert_eq!(pristine, memory(&mut s0, &i0));
    let f0 = i0.get_func(&mut s0, func).unwrap();
    let f1 = i1.get_func(&mut s1, func).unwrap();
    let r0 = f0
        .call(&mut s0, args, &mut [])
        .map_err(|e| format!("{e:#}"));
    let r1 = f1
        .call(&mut s1, args, &mut [])
        .map_err(|e| format!("{e:#}"));
    assert_eq!(r0.is_ok(), r1.is_ok(), "{r0:?} vs {r1:?}");
    let after = memory(&mut s1, &i1);
    assert!(
        memory(&mut s0, &i0) == after,
        "memory differs after {func}{args:?}"
    );
    assert_eq!(
        globals(&mut s0, &i0, exported_globals),
        globals(&mut s1, &i1, exported_globals)
    );
    let dirty = i1
        .get_global(&mut s1, &plan.dirty_export)
        .unwrap()
        .get(&mut s1)
        .i64()
        .unwrap() as u64;
    if r1.is_ok() && after.len() == plan.initial_bytes {
        let mut restored = after.clone();
        for r in plan.restore_ranges(dirty) {
            restored[r.clone()].copy_from_slice(&pristine[r]);
        }
        if let Some(at) = restored.iter().zip(&pristine).position(|(a, b)| a != b) {
            panic!(
                "{func}{args:?}: byte {at} written but its chunk not marked (dirty {dirty:016x})"
            );
        }
    }
    dirty
}

/// Stores of every width through every kind of address the instrumentation distinguishes
/// (constant, a parameter, a local assigned once at the top level, a local reassigned in a
/// loop, a computed address), bulk operations, calls, and every way out of a function.
const SCRIBBLER: &str = r#"(module
  (memory (export "memory") 2 3)
  (global $g (export "g") (mut i32) (i32.const 7))
  (global $h (export "h") (mut i64) (i64.const -1))
  (global $seed (mut i32) (i32.const 0))
  (data (i32.const 100) "pristine data")
  (data $seg "passive bytes, copied by memory.init")
  (func $rand (result i32)
    (global.set $seed (i32.add (i32.mul (global.get $seed) (i32.const 1103515245)) (i32.const 12345)))
    (i32.shr_u (global.get $seed) (i32.const 8)))
  (func $addr (param $limit i32) (result i32) (i32.rem_u (call $rand) (local.get $limit)))
  ;; One store through a parameter: marks `dirty` directly.
  (func $poke (param $p i32) (param $v i32) (i32.store16 offset=3 (local.get $p) (local.get $v)))
  ;; Several stores through a parameter (one range mark at entry), an early return.
  (func $frame (param $p i32) (param $x i64)
    (i64.store (local.get $p) (local.get $x))
    (if (i32.eqz (i32.and (local.get $p) (i32.const 1))) (then (return)))
    (i32.store8 offset=9 (local.get $p) (i32.const 0xAB))
    (f64.store offset=16 (local.get $p) (f64.const 1.5))
    (f32.store offset=30 (local.get $p) (f32.const 2.5)))
  ;; Exits through br_if and br_table to the function's label.
  (func $exits (param $p i32) (param $k i32)
    (i32.store offset=2 (local.get $p) (local.get $k))
    (i32.store (i32.rem_u (i32.add (local.get $p) (i32.const 60000)) (i32.const 131000)) (local.get $k))
    (br_if 0 (i32.eq (local.get $k) (i32.const 1)))
    (i64.store16 offset=6 (local.get $p) (i64.const 77))
    (block $a (br_table $a 1 (i32.and (local.get $k) (i32.const 1))))
    (i32.store offset=12 (local.get $p) (i32.const 5)))
  (func (export "run") (param $s i32) (param $n i32)
    (local $fp i32) (local $i i32) (local $q i32)
    (global.set $seed (local.get $s))
    (i32.store (local.get $fp) (i32.const 3))
    (local.set $fp (call $addr (i32.const 130000)))
    (i32.store offset=4 (local.get $fp) (i32.const -1))
    (i64.store32 offset=40 (local.get $fp) (i64.const 0x1234))
    (block $out
      (loop $l
        (br_if $out (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $q (call $addr (i32.const 131000)))
        (i64.store8 offset=1 (local.get $q) (i64.const 5))
        (i32.store offset=4 (local.tee $q (call $addr (i32.const 131000))) (i32.const 9))
        (local.set $q (call $addr (i32.const 131000)))
        (i32.store (local.get $q) (local.tee $q (i32.add (i32.mul (local.get $i) (i32.const 7777)) (i32.const 5000))))
        (i32.store (i32.and (call $rand) (i32.const 0x1FFF0)) (local.tee $q (i32.const 5)))
        (i32.store16 (local.get $q) (local.get $q))
        (i32.store offset=1000 (local.get $fp) (local.get $i))
        (i64.store (i32.and (call $rand) (i32.const 0x1FFF8)) (i64.const -7))
        (f32.store (i32.and (call $rand) (i32.const 0x1FFFC)) (f32.const -0.5))
        (f64.store offset=8 (i32.and (call $rand) (i32.const 0x1FFF0)) (f64.const 3.25))
        (i64.store16 (call $addr (i32.const 131070)) (i64.const 0x7777))
        (i32.store16 (call $addr (i32.const 131070)) (i32.const 0x6666))
        (i32.store (i32.const 65536) (local.get $i))
        (i64.store offset=2044 (i32.const 0) (i64.const -1))
        (call $poke (call $addr (i32.const 131000)) (local.get $i))
        (call $frame (call $addr (i32.const 131000)) (i64.extend_i32_u (local.get $i)))
        (call $exits (call $addr (i32.const 131000)) (call $rand))
        (memory.fill (call $addr (i32.const 120000)) (i32.const 0x5A) (i32.rem_u (call $rand) (i32.const 9000)))
        (memory.copy (call $addr (i32.const 120000)) (call $addr (i32.const 120000)) (i32.rem_u (call $rand) (i32.const 9000)))
        (memory.init $seg (call $addr (i32.const 130000)) (i32.const 0) (i32.const 20))
        (global.set $g (i32.add (global.get $g) (i32.const 1)))
        (global.set $h (i64.xor (global.get $h) (i64.extend_i32_u (call $rand))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $l)))
    (i64.store offset=8 (local.get $fp) (i64.const 99)))
  (func (export "oob") (param $a i32)
    (i32.store (i32.const 500) (i32.const 1))
    (i64.store (local.get $a) (i64.const 1)))
  (func (export "grow")
    (drop (memory.grow (i32.const 1)))
    (i64.store (i32.const 131070) (i64.const -1)))
)"#;

#[test]
fn instrumented_code_computes_the_same_and_marks_every_written_chunk() {
    let wasm = wat(SCRIBBLER);
    let mut marked = 0u64;
    for seed in 0..200 {
        let args = [Val::I32(seed * 7919 + 1), Val::I32(seed % 5)];
        marked |= check(&wasm, "run", &args, &["g", "h"]);
    }
    // Writes land all over the memory: nearly every chunk was marked by some run.
    assert!(marked.count_ones() > 60, "{marked:016x}");
    // A trapping store and a growth behave as before (the instance is then never reused).
    check(&wasm, "oob", &[Val::I32(131068)], &["g"]);
    check(&wasm, "grow", &[], &["g"]);
}

#[test]
fn a_call_that_writes_little_marks_little() {
    let wasm = wat(SCRIBBLER);
    // No loop iterations: the frame pointer's two stores, and the constant-address marks at entry.
    let dirty = check(&wasm, "run", &[Val::I32(5), Val::I32(0)], &["g", "h"]);
    assert!(dirty.count_ones() <= 6, "{dirty:016x}");
}

#[test]
fn the_plan_names_the_exports_and_the_chunk_size() {
    let out = instr(&wat(SCRIBBLER));
    let plan = out.plan.unwrap();
    assert_eq!(plan.reuse, Ok(()));
    assert_eq!(plan.initial_bytes, 2 << 16);
    assert_eq!(plan.chunk_shift, 11);
    assert_eq!(plan.dirty_export, "__gamechain_dirty");
    assert_eq!(
        plan.global_exports,
        [
            "__gamechain_global_0",
            "__gamechain_global_1",
            "__gamechain_global_2"
        ]
    );
    // Instrumenting is deterministic.
    assert_eq!(instr(&wat(SCRIBBLER)).wasm, out.wasm);
    // Without stores, the code is untouched; the new global and export are still added.
    let quiet = wat(
        r#"(module (memory (export "memory") 1) (func (export "f") (result i32) (i32.const 1)))"#,
    );
    let out = instr(&quiet);
    let plan = out.plan.unwrap();
    let (mut store, inst) = instance(&engine(), &out.wasm);
    assert!(inst.get_global(&mut store, &plan.dirty_export).is_some());
    assert_eq!(plan.chunk_shift, 10);
}

#[test]
fn reserved_names_never_clash_with_the_modules_exports() {
    let out = instr(&wat(
        r#"(module (memory (export "memory") 1) (global (export "__gamechain_dirty") (mut i32) (i32.const 0)))"#,
    ));
    let plan = out.plan.unwrap();
    assert_eq!(plan.dirty_export, "__gamechain__dirty");
    assert_eq!(plan.global_exports, ["__gamechain__global_0"]);
    let (mut store, inst) = instance(&engine(), &out.wasm);
    assert!(inst.get_global(&mut store, "__gamechain_dirty").is_some());
    assert!(inst
        .get_global(&mut store, "__gamechain__global_0")
        .is_some());
}

#[test]
fn modules_whose_state_cannot_be_reset_are_not_reused() {
    let reuse = |body: &str| {
        instr(&wat(&format!(
            r#"(module {body} (memory (export "memory") 1))"#
        )))
        .plan
        .unwrap()
        .reuse
    };
    let table = "(table 2 funcref) (func $f) (elem declare func $f)";
    assert_eq!(
        reuse(&format!(
            "{table} (func (table.set (i32.const 0) (ref.func $f)))"
        )),
        Err("uses table.set".into())
    );
    assert_eq!(
        reuse(&format!(
            "{table} (func (drop (table.grow (ref.null func) (i32.const 1))))"
        )),
        Err("uses table.grow".into())
    );
    assert_eq!(
        reuse(r#"(data $d "x") (func (data.drop $d))"#),
        Err("uses data.drop".into())
    );
    assert_eq!(
        reuse("(global (mut funcref) (ref.null func))"),
        Err("a mutable global of a reference type".into())
    );
    assert_eq!(
        reuse(
            r#"(import "gamechain_v1" "height" (func $h (result i64))) (func $s (drop (call $h))) (start $s)"#
        ),
        Err("the start function may call the host".into())
    );
    assert_eq!(
        reuse(
            r#"(import "gamechain_v1" "height" (func $h (result i64))) (func $t (drop (call $h))) (func $s (call $t)) (start $s)"#
        ),
        Err("the start function may call the host".into())
    );
    assert_eq!(
        reuse("(type $v (func)) (table 1 funcref) (func $s (call_indirect (type $v) (i32.const 0))) (start $s)"),
        Err("the start function may call the host".into())
    );
    let globals: String = (0..=MAX_RESET_GLOBALS)
        .map(|i| format!("(global (mut i32) (i32.const {i}))"))
        .collect();
    assert_eq!(
        reuse(&globals),
        Err("too many mutable globals to reset cheaply".into())
    );
    // A start function that only computes is fine, and so are memory.init and a host import
    // the start function cannot reach.
    assert_eq!(
        reuse(
            r#"(import "gamechain_v1" "height" (func $h (result i64))) (global $g (mut i32) (i32.const 0))
                 (func $s (global.set $g (i32.const 5)) (i32.store (i32.const 8) (i32.const 1))) (start $s)
                 (func (drop (call $h))) (data $d "x") (func (memory.init $d (i32.const 0) (i32.const 0) (i32.const 1)))"#
        ),
        Ok(())
    );
    // Not instrumentable at all: no memory, or a 64-bit one (refused by the engine anyway).
    assert!(instr(&wat("(module (func))")).plan.is_none());
    assert!(instr(b"not wasm").plan.is_none());
    assert_eq!(instr(b"not wasm").wasm, b"not wasm");
}

#[test]
fn restore_ranges_cover_runs_of_chunks_and_the_spill() {
    let plan = Plan {
        dirty_export: String::new(),
        stack_export: String::new(),
        fuel_export: String::new(),
        start_export: None,
        global_exports: Vec::new(),
        initial_bytes: 128 << 10,
        chunk_shift: 11,
        reuse: Ok(()),
    };
    let ranges: Vec<_> = plan.restore_ranges(0b1011 | 1 << 63).collect();
    assert_eq!(ranges, [0..4096 + 7, 6144..8192 + 7, 63 * 2048..128 << 10]);
    assert_eq!(
        plan.restore_ranges(u64::MAX).collect::<Vec<_>>(),
        vec![0..128 << 10]
    );
    assert_eq!(plan.restore_ranges(0).count(), 0);
    assert_eq!(chunk_mask(&(0..0), 11), 0);
    assert_eq!(chunk_mask(&(2047..2049), 11), 0b11);
    assert_eq!(chunk_mask(&(4096..6144), 11), 0b100);
    assert_eq!(chunk_mask(&(0..usize::MAX), 11), u64::MAX);
    assert_eq!(chunk_mask(&(1 << 30..(1 << 30) + 1), 11), 1 << 63);
}

#[test]
fn leb_encodings_match_the_parser() {
    for v in [
        0i64,
        1,
        -1,
        63,
        64,
        -64,
        -65,
        i32::MAX as i64,
        i32::MIN as i64,
        i64::MAX,
        i64::MIN,
    ] {
        let mut out = Vec::new();
        leb_i64(&mut out, v);
        assert_eq!(BinaryReader::new(&out, 0).read_var_i64().unwrap(), v);
    }
    for v in [0u32, 127, 128, 16_384, u32::MAX] {
        let mut out = Vec::new();
        leb_u32(&mut out, v);
        assert_eq!(BinaryReader::new(&out, 0).read_var_u32().unwrap(), v);
    }
}

#[test]
fn the_counter_pays_for_each_block_and_traps_with_the_sentinel_when_short() {
    // Per iteration: `local.get`, `local.get`, `i32.ge_u`, `br_if` (4) and `local.get`,
    // `i32.const`, `i32.add`, `local.set`, `br` (5); the last check 4 more, the result 1.
    let out = instr(&wat(r#"(module (memory (export "memory") 1)
        (func (export "f") (param i32) (result i32) (local i32)
          (block $done (loop $l
            (br_if $done (i32.ge_u (local.get 1) (local.get 0)))
            (local.set 1 (i32.add (local.get 1) (i32.const 1)))
            (br $l)))
          (local.get 1)))"#));
    let plan = out.plan.unwrap();
    let (mut store, inst) = instance(&engine(), &out.wasm);
    let counter = inst.get_global(&mut store, &plan.fuel_export).unwrap();
    let f = inst.get_typed_func::<i32, i32>(&mut store, "f").unwrap();
    let mut run = |n: i32, given: i64| {
        counter.set(&mut store, Val::I64(given)).unwrap();
        let result = f.call(&mut store, n).ok();
        (result, counter.get(&mut store).unwrap_i64())
    };
    assert_eq!(run(0, 1_000), (Some(0), 1_000 - 5));
    assert_eq!(run(10, 1_000), (Some(10), 1_000 - 95));
    // Exactly enough, then one short: the block that cannot be paid traps before it runs and
    // leaves `OUT_OF_FUEL` for the host.
    assert_eq!(run(10, 95), (Some(10), 0));
    assert_eq!(run(10, 94), (None, meter::OUT_OF_FUEL));
    assert_eq!(run(0, 0), (None, meter::OUT_OF_FUEL));
}

/// An instance of a module whose export `fill(n)` fills `n` bytes with 7 from address 0, its
/// fuel counter and the function.
fn filler() -> (
    Store<()>,
    Instance,
    wasmtime::Global,
    wasmtime::TypedFunc<i32, ()>,
) {
    let out = instr(&wat(r#"(module (memory (export "memory") 1)
        (func (export "fill") (param i32)
          (memory.fill (i32.const 0) (i32.const 7) (local.get 0))))"#));
    let plan = out.plan.unwrap();
    let (mut store, inst) = instance(&engine(), &out.wasm);
    let counter = inst.get_global(&mut store, &plan.fuel_export).unwrap();
    let f = inst.get_typed_func::<i32, ()>(&mut store, "fill").unwrap();
    (store, inst, counter, f)
}

#[test]
fn bulk_writes_pay_a_quarter_of_their_length() {
    let (mut store, _, counter, f) = filler();
    let mut used = |n: i32, given: i64| {
        counter.set(&mut store, Val::I64(given)).unwrap();
        let ok = f.call(&mut store, n).is_ok();
        (ok, given - counter.get(&mut store).unwrap_i64())
    };
    // 4 operators (`i32.const`, `i32.const`, `local.get`, `memory.fill`) and ceil(n / 4).
    assert_eq!(used(0, 100), (true, 4));
    assert_eq!(used(1, 100), (true, 5));
    assert_eq!(used(4096, 10_000), (true, 4 + 1024));
    assert_eq!(used(4097, 10_000), (true, 4 + 1025));
}

#[test]
fn a_bulk_write_the_fuel_cannot_pay_writes_nothing() {
    let (mut store, inst, counter, f) = filler();
    counter.set(&mut store, Val::I64(1_000)).unwrap();
    assert!(f.call(&mut store, 4096).is_err());
    assert_eq!(counter.get(&mut store).unwrap_i64(), meter::OUT_OF_FUEL);
    assert!(memory(&mut store, &inst).iter().all(|&b| b == 0));
}

/// Bytes of the code section's function bodies.
fn code_bytes(wasm: &[u8]) -> usize {
    wasmparser::Parser::new(0)
        .parse_all(wasm)
        .filter_map(|p| match p.unwrap() {
            wasmparser::Payload::CodeSectionEntry(body) => Some(body.range().len()),
            _ => None,
        })
        .sum()
}

#[test]
fn the_shapes_that_grow_most_grow_at_most_sevenfold() {
    // Each body repeats the shortest code that makes a metered block (or, for `br 0`, dead code
    // after it): a charge is about 20 bytes, so 4-byte blocks grow about sixfold; dead code
    // gets none.
    let shapes = [
        ("br 0", "block", "br 0", "end"),
        ("i32.const 0 br_if 0", "block", "i32.const 0 br_if 0", "end"),
        ("local.get 0 br_if 0", "block", "local.get 0 br_if 0", "end"),
        ("local.get 0 if end", "", "local.get 0 if end", ""),
        ("return", "", "return", ""),
        ("call $f", "", "call $f", ""),
        (
            "i32.const 0 call_indirect",
            "",
            "i32.const 0 call_indirect (type $t)",
            "",
        ),
        ("unreachable", "", "unreachable", ""),
    ];
    for (name, open, body, close) in shapes {
        let text = format!(
            "(module (memory 1) (table 1 funcref) (type $t (func)) (func $f)
               (func (param i32) {open} {} {close}))",
            format!("{body}\n").repeat(4_000)
        );
        let original = wat(&text);
        let instrumented = instr(&original);
        assert!(instrumented.plan.is_some(), "{name}");
        let ratio = code_bytes(&instrumented.wasm) as f64 / code_bytes(&original) as f64;
        println!("{name}: instrumented code {ratio:.2}x the original");
        assert!(ratio < 7.0, "{name}: {ratio:.2}x");
        Module::from_binary(&engine(), &instrumented.wasm)
            .unwrap_or_else(|e| panic!("{name}: {e:#}"));
    }
}

/// Fuzz round 2's finding (`tests/fuzz/README.md`): wasmtime counted 49 units for a module's
/// start section against 48 for its instrumented start function, exported and called. The
/// executed code was the same instruction for instruction (the instrumentation only added
/// dirty marks after a `br_table` that leaves the function); the one unit was wasmtime's own
/// charge for instantiating a module with a passive element segment, which the start
/// section's count included. Under our meter instantiation costs nothing, the start function
/// pays for what it runs, and nothing after the `br_table` is charged.
#[test]
fn a_start_function_pays_only_for_what_it_runs_and_instantiation_is_free() {
    let out = instr(&wat(r#"(module (memory (export "memory") 1)
        (table 1 funcref)
        (elem func)
        (elem declare func 0)
        (data "x")
        (func $start (local i64)
          (br_table 0 0 (i32.const 0))
          (i64.const 7) (local.set 0) (i64.store (i32.const 8) (local.get 0)))
        (start $start))"#));
    let plan = out.plan.expect("instrumentable");
    let start = plan
        .start_export
        .clone()
        .expect("the start function is exported");
    let (mut store, inst) = instance(&engine(), &out.wasm);
    let counter = inst.get_global(&mut store, &plan.fuel_export).unwrap();
    assert_eq!(
        counter.get(&mut store).unwrap_i64(),
        0,
        "instantiation is free"
    );
    counter.set(&mut store, Val::I64(1_000)).unwrap();
    let f = inst.get_typed_func::<(), ()>(&mut store, &start).unwrap();
    f.call(&mut store, ()).unwrap();
    // `i32.const` and `br_table`; the store after them never runs and is not charged.
    assert_eq!(counter.get(&mut store).unwrap_i64(), 1_000 - 2);
    assert_eq!(memory(&mut store, &inst)[8], 0);
}

/// Loops, nested blocks left by `br_if`, an `if` with a call in it, an inner loop, a bulk write
/// and an early `return`, in a function that keeps its counter in a local under revision 2 and
/// calls a function that charges the global.
const FUEL_MIX: &str = r#"(module (memory (export "memory") 1)
  (func $h (param i32) (result i32)
    (if (result i32) (i32.and (local.get 0) (i32.const 1))
      (then (i32.mul (local.get 0) (i32.const 3)))
      (else (i32.shr_u (local.get 0) (i32.const 1)))))
  (func (export "mix") (param $n i32) (result i32) (local $i i32) (local $x i32)
    (local.set $x (local.get $n))
    (block $done
      (loop $l
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (block $a
          (block $b
            (br_if $a (i32.and (local.get $i) (i32.const 2)))
            (local.set $x (i32.add (local.get $x) (i32.const 1)))
            (br_if $b (i32.and (local.get $i) (i32.const 4)))
            (local.set $x (i32.xor (local.get $x) (i32.const 5))))
          (local.set $x (i32.rotl (local.get $x) (i32.const 3))))
        (if (i32.eqz (i32.rem_u (local.get $i) (i32.const 3)))
          (then (local.set $x (call $h (local.get $x)))))
        (loop $inner
          (local.set $x (i32.add (local.get $x) (i32.const 1)))
          (br_if $inner (i32.and (local.get $x) (i32.const 1))))
        (memory.fill (i32.const 0) (i32.const 1) (i32.and (local.get $x) (i32.const 255)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $l)))
    (if (i32.gt_u (local.get $x) (i32.const 100)) (then (return (local.get $x))))
    (i32.const 7)))"#;

/// Runs `mix(n)` of `wasm` (instrumented) with `given` fuel: its result (`None`: it trapped)
/// and the counter after.
fn run_mix(wasm: &[u8], plan: &Plan, n: i32, given: i64) -> (Option<i32>, i64) {
    let (mut store, inst) = instance(&engine(), wasm);
    let counter = inst.get_global(&mut store, &plan.fuel_export).unwrap();
    counter.set(&mut store, Val::I64(given)).unwrap();
    let f = inst.get_typed_func::<i32, i32>(&mut store, "mix").unwrap();
    let result = f.call(&mut store, n).ok();
    (result, counter.get(&mut store).unwrap_i64())
}

#[test]
fn every_revision_ends_every_call_alike_at_every_limit() {
    let original = wat(FUEL_MIX);
    let old = instr_at(&original, 1);
    let new = instr_at(&original, 2);
    let (old_plan, new_plan) = (old.plan.unwrap(), new.plan.unwrap());
    for n in 0..40 {
        let (result, left) = run_mix(&old.wasm, &old_plan, n, 1_000_000);
        assert!(result.is_some());
        assert_eq!(
            run_mix(&new.wasm, &new_plan, n, 1_000_000),
            (result, left),
            "mix({n})"
        );
        // Exactly enough, then one short: both revisions run out at the same limit.
        let used = 1_000_000 - left;
        for wasm in [&old.wasm, &new.wasm] {
            assert_eq!(run_mix(wasm, &new_plan, n, used), (result, 0), "mix({n})");
            assert_eq!(
                run_mix(wasm, &new_plan, n, used - 1),
                (None, meter::OUT_OF_FUEL),
                "mix({n})"
            );
        }
        // Every limit below, for the first inputs: the same end, the same counter after.
        if n < 4 {
            for given in 0..used {
                assert_eq!(
                    run_mix(&old.wasm, &old_plan, n, given),
                    run_mix(&new.wasm, &new_plan, n, given),
                    "mix({n}) with {given}"
                );
            }
        }
    }
}

#[test]
fn revision_one_is_what_chains_made_before_revision_two_run() {
    // Revision 2 keeps the counter of `mix` in a local: one more local than revision 1.
    let locals = |wasm: &[u8]| {
        wasmparser::Parser::new(0)
            .parse_all(wasm)
            .filter_map(|p| match p.unwrap() {
                wasmparser::Payload::CodeSectionEntry(body) => Some(
                    body.get_locals_reader()
                        .unwrap()
                        .into_iter()
                        .map(|l| l.unwrap().0)
                        .sum::<u32>(),
                ),
                _ => None,
            })
            .collect::<Vec<u32>>()
    };
    let mix = wat(FUEL_MIX);
    let (old, new) = (instr_at(&mix, 1).wasm, instr_at(&mix, 2).wasm);
    assert_eq!(locals(&new)[1], locals(&old)[1] + 1);
    // Pinned to what the instrumenter wrote before revision 2 existed (commit a3d12cd): any
    // change to revision 1's output would change what older chains accept and run.
    let out = instr_at(&wat(SCRIBBLER), 1);
    let digest = sha2::Sha256::digest(&out.wasm);
    assert_eq!(
        hex::encode(digest),
        "97d6974c1b07afa421d8781df7e4f75b393bf5ad009097fdff4fc79a319fd769"
    );
}
