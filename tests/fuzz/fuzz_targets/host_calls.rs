//! Fuzz target `host_calls`: a guest module (WAT generated here from the ABI's import table,
//! so it covers every `gamechain_v1` import) that interprets its input as a script of host
//! calls with arbitrary pointers, lengths and values, run through `gamechain-vm`'s host
//! functions (`run/host.rs`, `run/imports.rs`) in every entry point.
//!
//! Script: byte 0 is the entry point's return code (`& 3`); then each call is one byte (the
//! import, modulo the number of imports) and, per parameter, a tag byte and 8 little-endian
//! bytes: the value, plus the script's own address when `tag & 1`, plus the scratch buffer's
//! (0x8000) when `tag & 2` (so pointers land in memory often), wrapped to `i32` where the
//! import takes one. Results are dropped. `gc_apply` and `gc_migrate` run their input as the
//! script; `gc_view` and `gc_end_block` read it from the module key `s`.
//!
//! Fuzz input: byte 0 picks the entry point, the rest is the script.
//!
//! Invariants: no host panic and no `HostError`; every `internal` error is one of ABI.md's
//! "Fixed error texts" (unless the script returned 1, when the error object is the module's
//! own); `Ok` only with return code 0; a call that succeeded changed only keys under
//! `m/fuzz/`, balances and token records, and left the GOLD supply as it was; the same call on
//! the same state gives the same outcome (result, fuel, log) and the same writes, from a new or
//! a reset instance.
#![no_main]

use std::sync::{Arc, OnceLock};

use gamechain_fuzz::{assert_fixed, runtime, stat, FIXED_TEXTS};
use gamechain_sdk::{BlockEnv, Checkpoint, KvCtx, MockKv};
use gamechain_vm::{fuzzing, CallOutcome, WasmModule};
use libfuzzer_sys::fuzz_target;

const MODULE: &str = "fuzz";
const SENDER: &str = "yAliceAliceAliceAliceAliceAlice1";

/// The interpreter's WAT (see the module docs).
fn guest_wat() -> String {
    let imports = fuzzing::abi_imports();
    let n = imports.len();
    let ty = |c: char| if c == 'I' { "i64" } else { "i32" };
    let mut w = String::from("(module\n");
    for (name, params, results) in imports {
        w += &format!("  (import \"gamechain_v1\" \"{name}\" (func ${name}");
        for c in params.chars() {
            w += &format!(" (param {})", ty(c));
        }
        for c in results.chars() {
            w += &format!(" (result {})", ty(c));
        }
        w += "))\n";
    }
    w += r#"  (memory (export "memory") 3)
  (data (i32.const 16) "s")
  (global $heap (mut i32) (i32.const 0x20000))
  (func (export "gc_abi_version") (result i32) i32.const 1)
  (func (export "gc_alloc") (param $n i32) (result i32)
    global.get $heap
    global.get $heap local.get $n i32.add global.set $heap)
  (func (export "gc_apply") (param i32 i32 i32 i32) (result i32)
    local.get 2 local.get 3 call $run)
  (func (export "gc_migrate") (param i32 i32 i32 i32) (result i32)
    local.get 2 local.get 3 call $run)
  (func (export "gc_view") (param i32 i32) (result i32) call $stored)
  (func (export "gc_end_block") (result i32) call $stored)
  (func $stored (result i32) (local $len i64)
    (local.set $len (call $get (i32.const 16) (i32.const 1) (i32.const 0x10000) (i32.const 0x8000)))
    (if (i64.gt_u (local.get $len) (i64.const 0x8000)) (then (local.set $len (i64.const 0))))
    (call $run (i32.const 0x10000) (i32.wrap_i64 (local.get $len))))
  (func $run (param $p i32) (param $n i32) (result i32)
    (local $c i32) (local $end i32) (local $v i64) (local $t i32) (local $rc i32)
    (if (i32.eqz (local.get $n)) (then (return (i32.const 0))))
    (local.set $rc (i32.and (i32.load8_u (local.get $p)) (i32.const 3)))
    (local.set $c (i32.add (local.get $p) (i32.const 1)))
    (local.set $end (i32.add (local.get $p) (local.get $n)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $c) (local.get $end)))
"#;
    w += &format!(
        "        (local.set $t (i32.rem_u (i32.load8_u (local.get $c)) (i32.const {n})))\n"
    );
    w += "        (local.set $c (i32.add (local.get $c) (i32.const 1)))\n";
    // Nested blocks for br_table: block $k0 is innermost.
    for k in (0..n).rev() {
        w += &format!("        (block $k{k}\n");
    }
    w += "          local.get $t\n          br_table";
    for k in 0..n {
        w += &format!(" $k{k}");
    }
    w += " $k0)\n";
    for (k, (name, params, results)) in imports.iter().enumerate() {
        // After block $k{k} ends: the code of import k.
        let need = 9 * params.len();
        w += &format!(";; {name}\n");
        w += &format!(
            "        (br_if $done (i32.gt_u (i32.add (local.get $c) (i32.const {need})) (local.get $end)))\n"
        );
        for c in params.chars() {
            w += "        (local.set $v (i64.load offset=1 (local.get $c)))\n";
            w += "        (if (i32.and (i32.load8_u (local.get $c)) (i32.const 1)) (then (local.set $v (i64.add (local.get $v) (i64.extend_i32_u (local.get $p))))))\n";
            w += "        (if (i32.and (i32.load8_u (local.get $c)) (i32.const 2)) (then (local.set $v (i64.add (local.get $v) (i64.const 0x8000)))))\n";
            w += "        (local.set $c (i32.add (local.get $c) (i32.const 9)))\n";
            w += if c == 'I' {
                "        local.get $v\n"
            } else {
                "        (i32.wrap_i64 (local.get $v))\n"
            };
        }
        w += &format!("        call ${name}\n");
        if !results.is_empty() {
            w += "        drop\n";
        }
        w += "        br $next\n";
        if k + 1 < n {
            w += "        )\n";
        }
    }
    w += "      ))\n    local.get $rc)\n)\n";
    w
}

fn module() -> &'static Arc<WasmModule> {
    static M: OnceLock<Arc<WasmModule>> = OnceLock::new();
    M.get_or_init(|| {
        let wat = guest_wat();
        let wasm = wat::parse_str(&wat).unwrap_or_else(|e| panic!("{e}\n{wat}"));
        Arc::new(WasmModule::new(runtime(), MODULE, &wasm).expect("the interpreter loads"))
    })
}

/// The state every call starts from: balances, an escrow, module keys, another module's key.
fn seeded(script_in_state: Option<&[u8]>) -> MockKv {
    let mut kv = MockKv::default();
    let mut put = |k: &str, v: &[u8]| {
        kv.state.insert(k.to_string(), v.to_vec());
    };
    put("m/fuzz/a", b"1");
    put("m/fuzz/b", b"{\"x\":2}");
    put("m/fuzz/game/1", b"game");
    put("m/other/x", b"other");
    if let Some(s) = script_in_state {
        put("m/fuzz/s", s);
    }
    let mut ctx = KvCtx::for_call(kv, MODULE, &BlockEnv::default(), "", None);
    ctx.set_balance(SENDER, "GOLD", 1_000_000);
    ctx.set_balance("module:fuzz", "GOLD", 5_000);
    ctx.kv
}

fn env() -> BlockEnv {
    BlockEnv {
        height: 42,
        block_time_ms: 1_700_000_000_000,
        checkpoint: Checkpoint::default(),
        sequencer: "ySequencerSequencerSequencer1234".to_string(),
        ..BlockEnv::default()
    }
}

fn check<T: PartialEq + std::fmt::Debug>(outcome: &CallOutcome<T>, rc: u8) {
    match &outcome.result {
        Ok(_) => {
            stat("ok");
            assert_eq!(rc, 0, "Ok with return code {rc}");
        }
        Err(e) if rc == 1 => {
            stat("module error");
            let _ = e.to_string();
        }
        Err(e) => {
            assert_fixed(e);
            let text = e.to_string();
            stat(
                FIXED_TEXTS
                    .iter()
                    .find(|t| **t == text)
                    .copied()
                    .unwrap_or("other error"),
            );
        }
    }
}

/// GOLD across every `bal/<account>/GOLD` key.
fn gold(kv: &MockKv) -> u128 {
    kv.state
        .keys()
        .filter_map(|k| k.strip_prefix("bal/")?.strip_suffix("/GOLD"))
        .map(|account| gamechain_sdk::ledger::balance(kv, account, "GOLD"))
        .sum()
}

/// After a call that succeeded: it changed only its own keys (`m/fuzz/…`), balances and token
/// records, and GOLD (which the module did not issue) was only moved, never made or destroyed.
fn check_writes(before: &MockKv, after: &MockKv) {
    for (k, v) in before.state.iter().chain(after.state.iter()) {
        if before.state.get(k) != after.state.get(k) {
            assert!(
                k.starts_with("m/fuzz/") || k.starts_with("bal/") || k.starts_with("token/"),
                "a module call wrote key {k:?} ({} bytes)",
                v.len()
            );
        }
    }
    assert_eq!(
        gold(before),
        gold(after),
        "GOLD made or destroyed by a module"
    );
}

fuzz_target!(|data: &[u8]| {
    let Some((&entry, script)) = data.split_first() else {
        return;
    };
    let rc = script.first().map_or(0, |b| b & 3);
    let m = module();
    let txid = "ab".repeat(32);
    match entry % 4 {
        0 | 1 => {
            let migrate = entry % 4 == 1;
            let mut outs = Vec::new();
            for _ in 0..2 {
                let mut ctx = KvCtx::for_call(seeded(None), MODULE, &env(), &txid, Some(SENDER));
                let out = if migrate {
                    m.call_migrate(&mut ctx, SENDER, script)
                } else {
                    m.call_apply(&mut ctx, SENDER, script)
                }
                .expect("no host error");
                check(&out, if script.is_empty() { 0 } else { rc });
                if out.result.is_ok() {
                    check_writes(&seeded(None), &ctx.kv);
                }
                outs.push((out, ctx.kv.state, ctx.events));
            }
            assert_eq!(outs[0], outs[1], "the same call twice differs");
        }
        2 => {
            let kv = seeded(Some(script));
            let a = m
                .call_view(&kv, &Default::default())
                .expect("no host error");
            let b = m
                .call_view(&kv, &Default::default())
                .expect("no host error");
            check(&a, if script.is_empty() { 0 } else { rc });
            assert_eq!(a, b, "the same view twice differs");
        }
        _ => {
            let mut outs = Vec::new();
            for _ in 0..2 {
                let mut ctx = KvCtx::for_call(seeded(Some(script)), MODULE, &env(), "", None);
                let out = m.call_end_block(&mut ctx).expect("no host error");
                check(&out, if script.is_empty() { 0 } else { rc });
                if out.result.is_ok() {
                    check_writes(&seeded(Some(script)), &ctx.kv);
                }
                outs.push((out, ctx.kv.state, ctx.events));
            }
            assert_eq!(outs[0], outs[1], "the same end_block twice differs");
        }
    }
});
