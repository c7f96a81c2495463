//! Fuzz target `compilers`: the differential check behind "the compiler is node policy"
//! (`runtime/vm/src/config.rs`, `tier.rs`). Each ABI module `wasm-smith` generates (as
//! `validate_instrument`'s `SmithAbi` inputs) is loaded three ways: compiled by Cranelift
//! without optimisation (as a genesis module; the fuzzing runtime's `opt_level` is `None`), by
//! Winch (as an upload), and Winch's module tiered up to Cranelift at `OptLevel::Speed`
//! (`WasmModule::tier_up`, compiled in this process): three code generators. Then `gc_apply` (with an op from the
//! input), `gc_view` and `gc_end_block` run on each from the same state.
//!
//! Invariants: the three loads succeed or fail alike (the same `LoadError`); every call gives
//! the same result, fuel and log under all three, and leaves the same state writes, events
//! and balances.
//!
//! A fourth load runs Winch's code under instrumentation revision 1 (`runtime_r1`), the
//! metering of older chains: it loads alike, and every call gives exactly what revision 2
//! gives, fuel included (ABI.md, "Instrumentation revisions").
#![no_main]

use arbitrary::Unstructured;
use gamechain_fuzz::{generate, reason, runtime, runtime_r1, stat};
use gamechain_sdk::{MockCtx, MockKv, Query};
use gamechain_vm::{precompile, LoadError, OptLevel, Origin, WasmModule};
use libfuzzer_sys::fuzz_target;

const SENDER: &str = "y1111111111111111111111111111111";

fn ctx() -> MockCtx {
    let mut ctx = MockCtx::new("fuzz");
    ctx.set_balance(SENDER, "GOLD", 1_000);
    ctx
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Some(wasm) = generate(&mut u, true) else {
        return;
    };
    let op: Vec<u8> = u.arbitrary().unwrap_or_default();
    let rt = runtime();
    let cranelift = WasmModule::load(rt, "fuzz", &wasm, None, Origin::Genesis);
    let winch = WasmModule::load(rt, "fuzz", &wasm, None, Origin::Upload);
    let r1 = WasmModule::load(runtime_r1(), "fuzz", &wasm, None, Origin::Upload);
    assert_eq!(
        r1.as_ref().err(),
        winch.as_ref().err(),
        "the revisions load alike"
    );
    let (cranelift, winch) = match (cranelift, winch) {
        (Ok(c), Ok(w)) => (c, w),
        (Err(c), Err(w)) => {
            assert_eq!(c, w, "the compilers refuse alike");
            stat(match &c {
                LoadError::Invalid(_) => "refused: invalid",
                LoadError::Engine => "refused: engine",
                LoadError::Instantiate(_) => "refused: instantiation",
                LoadError::AbiVersion(_) => "refused: abi version",
                LoadError::Host(_) => "refused: host",
            });
            return;
        }
        (c, w) => panic!("one compiler loads, the other not: {c:?} / {w:?}"),
    };
    let tiered = winch
        .tier_up(&wasm, None, |b| precompile(OptLevel::Speed, b))
        .unwrap_or_else(|e| panic!("tier-up failed: {e}"));
    stat("loaded");
    let r1 = r1.expect("loads as revision 2 did");
    let modules = [&cranelift, &winch, &tiered];

    let applies: Vec<_> = modules
        .iter()
        .map(|m| {
            let mut c = ctx();
            let out = m.call_apply(&mut c, SENDER, &op).expect("no host error");
            (out, c.kv.state, c.events)
        })
        .collect();
    assert_eq!(applies[0], applies[1], "apply: Cranelift and Winch differ");
    assert_eq!(
        applies[1], applies[2],
        "apply: Winch and the tiered module differ"
    );
    let r1_apply = {
        let mut c = ctx();
        let out = r1.call_apply(&mut c, SENDER, &op).expect("no host error");
        (out, c.kv.state, c.events)
    };
    assert_eq!(r1_apply, applies[1], "apply: revision 1 and 2 differ");
    stat(match &applies[0].0.result {
        Ok(()) => "apply ok",
        Err(e) => reason(e),
    });

    let kv = MockKv::default();
    let views: Vec<_> = modules
        .iter()
        .map(|m| m.call_view(&kv, &Query::new()).expect("no host error"))
        .collect();
    assert_eq!(views[0], views[1], "view: Cranelift and Winch differ");
    assert_eq!(
        views[1], views[2],
        "view: Winch and the tiered module differ"
    );
    let r1_view = r1.call_view(&kv, &Query::new()).expect("no host error");
    assert_eq!(r1_view, views[1], "view: revision 1 and 2 differ");

    let ends: Vec<_> = modules
        .iter()
        .map(|m| {
            let mut c = ctx();
            let out = m.call_end_block(&mut c).expect("no host error");
            (out, c.kv.state, c.events)
        })
        .collect();
    assert_eq!(ends[0], ends[1], "end_block: Cranelift and Winch differ");
    assert_eq!(
        ends[1], ends[2],
        "end_block: Winch and the tiered module differ"
    );
    let r1_end = {
        let mut c = ctx();
        let out = r1.call_end_block(&mut c).expect("no host error");
        (out, c.kv.state, c.events)
    };
    assert_eq!(r1_end, ends[1], "end_block: revision 1 and 2 differ");
});

