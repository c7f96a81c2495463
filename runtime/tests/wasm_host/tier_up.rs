//! Tier-up (`runtime/vm/src/tier.rs`): an upload loaded with Winch, then replaced by the same
//! module compiled with Cranelift, gives exactly the same outcomes and fuel; the machine code
//! comes from the disk cache when it holds it; a failed or refused tier-up changes nothing.

use super::*;
use gamechain_runtime::{precompile, Compiler, ModuleCache, OptLevel, Origin, TierUpError};

/// A module whose `gc_apply` loops, writes, fills memory and emits: every kind of charge.
fn busy() -> String {
    apply_guest(
        "(func $f (param i32) (result i32) (i32.mul (local.get 0) (i32.const 3)))",
        "(local $i i32)
         (block $done (loop $again
           (br_if $done (i32.ge_u (local.get $i) (i32.const 500)))
           (drop (call $f (local.get $i)))
           (local.set $i (i32.add (local.get $i) (i32.const 1)))
           (br $again)))
         (memory.fill (i32.const 4096) (i32.const 7) (i32.const 1000))
         (i32.const 0)",
    )
}

fn tiered(module: &WasmModule, code: &[u8], cache: Option<&ModuleCache>) -> WasmModule {
    module
        .tier_up(code, cache, |bytes| precompile(OptLevel::Speed, bytes))
        .unwrap_or_else(|e| panic!("tier-up failed: {e}"))
}

#[test]
fn a_tiered_module_gives_the_same_outcomes_and_fuel_in_either_engine() {
    let on_demand = Runtime::new(RuntimeConfig {
        allocation: Allocation::OnDemand,
        fuel_apply: FUEL,
        ..RuntimeConfig::default()
    })
    .unwrap();
    for (runtime, pooled) in [(rt(), true), (&on_demand, false)] {
        for wat in [busy(), counter_wat()] {
            let code = wasm(&wat);
            let winch = WasmModule::load(runtime, "m", &code, None, Origin::Upload).unwrap();
            assert_eq!(winch.compiler(), Compiler::Winch);
            assert_eq!(winch.pooled(), pooled);
            let cranelift = tiered(&winch, &code, None);
            assert_eq!(cranelift.compiler(), Compiler::Cranelift);
            assert_eq!(cranelift.pooled(), pooled);
            assert_eq!(
                (cranelift.id(), cranelift.code_hash()),
                (winch.id(), winch.code_hash())
            );
            let mut state = MemState::new();
            for _ in 0..3 {
                let (w, c) = (apply(&winch, &state), apply(&cranelift, &state));
                assert!(w.result.is_ok(), "{:?}", w.result);
                assert_eq!(
                    (&w.result, &w.writes, &w.events, w.fuel_used),
                    (&c.result, &c.writes, &c.events, c.fuel_used)
                );
                state.apply(w.writes.clone());
            }
        }
    }
}

#[test]
fn a_trap_and_running_out_of_fuel_are_the_same_after_tier_up() {
    let spin = apply_guest("", "(loop $l (br $l)) (i32.const 0)");
    let trap = apply_guest("", "(unreachable)");
    for wat in [spin, trap] {
        let code = wasm(&wat);
        let winch = WasmModule::load(rt(), "m", &code, None, Origin::Upload).unwrap();
        let cranelift = tiered(&winch, &code, None);
        let (w, c) = (
            apply(&winch, &MemState::new()),
            apply(&cranelift, &MemState::new()),
        );
        assert!(w.result.is_err());
        assert_eq!((w.result, w.fuel_used), (c.result, c.fuel_used));
    }
}

#[test]
fn a_tier_up_that_fails_or_is_refused_changes_nothing() {
    let code = wasm(&busy());
    let winch = WasmModule::load(rt(), "m", &code, None, Origin::Upload).unwrap();
    let failed = winch.tier_up(&code, None, |_| Err("over budget".into()));
    assert_eq!(
        failed.unwrap_err(),
        TierUpError::Compile("over budget".into())
    );
    let other = wasm(&counter_wat());
    let wrong = winch.tier_up(&other, None, |_| panic!("nothing is compiled"));
    assert_eq!(wrong.unwrap_err(), TierUpError::WrongCode);
    let cranelift = tiered(&winch, &code, None);
    let again = cranelift.tier_up(&code, None, |_| panic!("nothing is compiled"));
    assert_eq!(again.unwrap_err(), TierUpError::AlreadyCranelift);
    // Garbage where machine code should be: wasmtime refuses the artifact.
    // SAFETY: wasmtime rejects these bytes at the header; nothing runs.
    let garbage = winch.tier_up(&code, None, |_| {
        Ok(unsafe { gamechain_runtime::Precompiled::from_trusted(vec![0; 64]) })
    });
    assert!(matches!(garbage, Err(TierUpError::Load(_))), "{garbage:?}");
    assert!(apply(&winch, &MemState::new()).result.is_ok());
}

#[test]
fn the_second_tier_up_of_the_same_code_reads_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let cache = ModuleCache::open(dir.path()).unwrap();
    let code = wasm(&busy());
    let winch = WasmModule::load(rt(), "m", &code, Some(&cache), Origin::Upload).unwrap();
    let first = tiered(&winch, &code, Some(&cache));
    assert!(!first.code_source().is_cached());
    let second = winch
        .tier_up(&code, Some(&cache), |_| panic!("the cache holds it"))
        .unwrap();
    assert!(second.code_source().is_cached());
    assert_eq!(second.compiler(), Compiler::Cranelift);
    let (a, b) = (
        apply(&first, &MemState::new()),
        apply(&second, &MemState::new()),
    );
    assert_eq!((a.writes, a.fuel_used), (b.writes, b.fuel_used));
}
