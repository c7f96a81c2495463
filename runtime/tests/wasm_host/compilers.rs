//! The two compilers count fuel exactly alike: fuel is the instrumentation's own count
//! (`runtime/vm/src/load/instrument/meter.rs`), so Cranelift (genesis modules) and Winch
//! (uploads) run the same charges. Bulk memory writes pay 1 per 4 bytes under both, so an
//! upload cannot fill memory for free. Results, writes and events are identical; a trap is
//! charged the whole limit under both.

use super::*;
use gamechain_runtime::Origin;

/// `gc_apply` calls the empty function `$f` `n` times and returns.
fn calls(n: u32) -> String {
    apply_guest(
        "(func $f)",
        &format!(
            "(local $i i32)
             (block $done (loop $again
               (br_if $done (i32.ge_u (local.get $i) (i32.const {n})))
               (call $f)
               (local.set $i (i32.add (local.get $i) (i32.const 1)))
               (br $again)))
             (i32.const 0)"
        ),
    )
}

fn fuel(origin: Origin, wat: &str) -> (TxOutcome, u64) {
    let module = WasmModule::load(rt(), "calls", &wasm(wat), None, origin).unwrap();
    let out = apply(&module, &MemState::new());
    let fuel = out.fuel_used;
    (out, fuel)
}

#[test]
fn the_compilers_use_the_same_fuel() {
    // Calls, returns, branches, loops, stores, memory.grow: the same fuel under both.
    let same = [
        ("(func $f)", "(call $f)"),
        (
            "(func $f (result i32) (return (i32.const 1)))",
            "(drop (call $f))",
        ),
        (
            "(func $f (param i32) (block (block (br_table 0 1 (local.get 0)))))",
            "(call $f (i32.const 1))",
        ),
        (
            "(func $f (param i32) (result i32) (select (i32.const 1) (i32.const 2) (local.get 0)))",
            "(drop (call $f (i32.const 1)))",
        ),
        ("(func $f (drop (memory.grow (i32.const 1))))", "(call $f)"),
        (
            "(func $f (i32.store (i32.const 8) (i32.const 1)))",
            "(call $f)",
        ),
    ];
    for (func, call) in same {
        let wat = apply_guest(func, &format!("{call} (i32.const 0)"));
        assert_eq!(
            fuel(Origin::Genesis, &wat).1,
            fuel(Origin::Upload, &wat).1,
            "{func}"
        );
    }
    for n in [0u32, 1, 10, 100] {
        let (c, c_fuel) = fuel(Origin::Genesis, &calls(n));
        let (w, w_fuel) = fuel(Origin::Upload, &calls(n));
        assert!(c.result.is_ok() && w.result.is_ok());
        assert_eq!((c.writes, c.events, c_fuel), (w.writes, w.events, w_fuel));
    }
    // memory.fill / memory.copy of n bytes: both pay the operator and ceil(n / 4), exactly.
    let mut base = None;
    for n in [0u32, 100, 4096, 4097] {
        for op in [
            "memory.fill (i32.const 0) (i32.const 7)",
            "memory.copy (i32.const 0) (i32.const 4096)",
        ] {
            let wat = apply_guest(
                &format!("(func $f ({op} (i32.const {n})))"),
                "(call $f) (i32.const 0)",
            );
            let (c, w) = (fuel(Origin::Genesis, &wat).1, fuel(Origin::Upload, &wat).1);
            assert_eq!(c, w, "{op} {n}");
            let zero = *base.get_or_insert(c);
            assert_eq!(c - zero, u64::from(n).div_ceil(4), "{op} {n}");
        }
    }
}

#[test]
fn fuel_counts_the_modules_own_operators() {
    // One iteration of `calls`' loop is 10 operators of cost 1 (`local.get`, `i32.const`,
    // `i32.ge_u`, `br_if`; `call`; `local.get`, `i32.const`, `i32.add`, `local.set`; `br`), and
    // `$f` is an `end` (0): nothing the instrumentation adds is charged.
    for origin in [Origin::Genesis, Origin::Upload] {
        let f = |n| fuel(origin, &calls(n)).1;
        assert_eq!(f(11) - f(10), 10, "{origin:?}");
        assert_eq!(f(100) - f(0), 1_000, "{origin:?}");
    }
}

#[test]
fn a_loop_of_large_fills_runs_out_of_fuel_as_an_upload() {
    // 1 MiB memory.fill in an endless loop: without the instrumentation's charge Winch would
    // count ~5 fuel per fill (hours of memset on 1,000,000 fuel).
    let wat = guest_with_memory(
        16,
        "(loop $l (memory.fill (i32.const 0) (i32.const 1) (i32.const 1048576)) (br $l)) (i32.const 0)",
    );
    for origin in [Origin::Upload, Origin::Genesis] {
        let (out, fuel) = fuel(origin, &wat);
        assert_eq!(err_text(&out), "internal: out of fuel", "{origin:?}");
        assert_eq!(fuel, FUEL);
    }
}

/// [`apply_guest`] with a memory of `pages` pages.
fn guest_with_memory(pages: u32, apply: &str) -> String {
    apply_guest("", apply).replace(
        "(memory (export \"memory\") 1)",
        &format!("(memory (export \"memory\") {pages})"),
    )
}

#[test]
fn a_trap_is_charged_the_whole_limit_under_both() {
    let trap = apply_guest(
        "",
        "(drop (i32.div_u (i32.const 1) (i32.const 0))) (i32.const 0)",
    );
    for origin in [Origin::Genesis, Origin::Upload] {
        let (out, fuel) = fuel(origin, &trap);
        assert_eq!(err_text(&out), "internal: trap: integer divide by zero");
        assert_eq!(fuel, FUEL, "{origin:?}");
    }
}
