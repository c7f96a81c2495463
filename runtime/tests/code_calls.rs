//! Calls by code hash (`call_code`, ABI.md): a pure entry point of the code a SHA-256 names, run
//! with no state at all, through the node's own resolver (`ChainContext` over a genesis state
//! holding the code). A call by code reaches no state (each state, bank, context, event and
//! module import traps and the caller sees `-3`), so its answer cannot follow the state; the
//! code stays callable after the module id that ran it is upgraded to other code; missing code,
//! a trap and running out of fuel are fixed codes; the code store is read once per hash per
//! chain of calls. Each case runs with instance reuse on (every reset verified) and off, and
//! must give the same result and fuel both ways.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use gamechain_runtime::chain::{Genesis, Network, SecretKey};
use gamechain_runtime::{
    code_key, execute_apply_with, genesis_state, Allocation, ChainContext, MemState, Modules,
    PureError, Runtime, RuntimeConfig, TxOutcome, GAS_V1,
};
use gamechain_sdk::BlockEnv;
use sha2::{Digest, Sha256};

const TXID: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

fn wat(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/wat/hostile/code/{name}.wat",
        env!("CARGO_MANIFEST_DIR")
    );
    wat::parse_file(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn hash(wasm: &[u8]) -> [u8; 32] {
    Sha256::digest(wasm).into()
}

/// A chain whose genesis holds `code_caller`, `sealed` (v1) and `other` (v2 of the same code),
/// and its state.
struct Chain {
    ctx: ChainContext,
    state: MemState,
}

fn genesis(rt: &Runtime, modules: &[(&str, &[u8])]) -> Genesis {
    let cfg = rt.config();
    let sequencer = SecretKey::from_bytes(Network::Testnet, [1; 32]).unwrap();
    let mods: Vec<_> = modules
        .iter()
        .map(|(id, wasm)| serde_json::json!({"id": id, "code_hash": hex::encode(hash(wasm))}))
        .collect();
    serde_json::from_value(serde_json::json!({
        "chain_id": "code-test",
        "network": "testnet",
        "sequencer": sequencer.address(),
        "time_ms": 1_790_000_000_000u64,
        "modules": mods,
        "balances": [],
        "fuel_apply": cfg.fuel_apply,
        "fuel_view": cfg.fuel_view,
        "fuel_end_block": cfg.fuel_end_block,
        "memory_limit_bytes": cfg.memory_limit_bytes as u64,
        "engine_config_hash": cfg.config_hash(),
    }))
    .unwrap()
}

fn chains() -> &'static [Chain; 2] {
    static C: OnceLock<[Chain; 2]> = OnceLock::new();
    C.get_or_init(|| [make_chain(true), make_chain(false)])
}

/// A new chain (its own runtime and registry), instance reuse on (verified) or off.
fn make_chain(reuse: bool) -> Chain {
    let rt = Runtime::new(RuntimeConfig {
        reuse_instances: reuse,
        verify_reuse: reuse,
        allocation: Allocation::Pooling { instances: 16 },
        ..RuntimeConfig::default()
    })
    .unwrap();
    let (caller, v1, v2) = (wat("code_caller"), wat("sealed"), wat("sealed_v2"));
    let g = genesis(
        &rt,
        &[("code_caller", &caller), ("sealed", &v1), ("other", &v2)],
    );
    let codes: BTreeMap<String, Vec<u8>> = [caller, v1, v2]
        .into_iter()
        .map(|w| (hex::encode(hash(&w)), w))
        .collect();
    let gs = genesis_state(&g, &codes).unwrap();
    let ctx = ChainContext::new(g, rt, Modules::new()).unwrap();
    Chain {
        ctx,
        state: MemState {
            map: gs.entries.into_iter().collect(),
        },
    }
}

/// The code hash of `sealed` (v1) and of `other` (v2).
fn hashes() -> ([u8; 32], [u8; 32]) {
    (hash(&wat("sealed")), hash(&wat("sealed_v2")))
}

/// Runs the caller with `op` over each chain's state changed by `edit`, twice per chain;
/// asserts identical outcomes and returns one.
fn run_with(op: &[u8], edit: impl Fn(&mut MemState)) -> TxOutcome {
    let env = BlockEnv {
        height: 5,
        block_time_ms: 1_790_000_005_000,
        ..BlockEnv::default()
    };
    let mut outcomes = Vec::new();
    for chain in chains() {
        let mut state = chain.state.clone();
        edit(&mut state);
        let caller = chain
            .ctx
            .module(&state, "code_caller")
            .unwrap()
            .unwrap()
            .module;
        for _ in 0..2 {
            let out =
                execute_apply_with(&caller, &state, &env, TXID, "x", op, Some(&chain.ctx)).unwrap();
            outcomes.push(out);
        }
    }
    let fuels: Vec<u64> = outcomes.iter().map(|o| o.fuel_used).collect();
    for o in &outcomes[1..] {
        assert_eq!(o.result, outcomes[0].result);
        assert_eq!(
            o.fuel_used, outcomes[0].fuel_used,
            "fuel differs: {fuels:?}"
        );
        assert_eq!(o.writes, outcomes[0].writes);
    }
    outcomes.swap_remove(0)
}

/// `call_code(code, entry)`: the result code, the bytes, the caller's fuel.
fn call_with(
    code: [u8; 32],
    entry: &str,
    edit: impl Fn(&mut MemState),
) -> (i64, Option<Vec<u8>>, u64) {
    let mut op = code.to_vec();
    op.extend_from_slice(entry.as_bytes());
    let out = run_with(&op, edit);
    assert_eq!(out.result, Ok(()), "the caller never fails");
    let get = |k: &str| {
        out.writes
            .get(&format!("m/code_caller/{k}"))
            .cloned()
            .flatten()
    };
    let r = i64::from_le_bytes(get("r").expect("r written").try_into().unwrap());
    (r, get("out"), out.fuel_used)
}

fn call(code: [u8; 32], entry: &str) -> (i64, Option<Vec<u8>>, u64) {
    call_with(code, entry, |_| {})
}

#[test]
fn a_call_by_code_answers_from_the_code_and_its_input() {
    let (v1, v2) = hashes();
    let (r, out, _) = call(v1, "echo");
    assert_eq!((r, out.as_deref()), (5, Some(&b"v1:in"[..])));
    assert_eq!(call(v2, "echo").1.as_deref(), Some(&b"v2:in"[..]));
    // `log` works inside (its line goes to the node's log only).
    assert_eq!(call(v1, "logs").1.as_deref(), Some(&b"logged"[..]));
}

#[test]
fn a_call_by_code_sees_no_state_every_state_import_traps() {
    let (v1, _) = hashes();
    for entry in [
        "read", "height", "time", "balance", "emit", "random", "pure", "hash", "state",
    ] {
        let (r, out, _) = call(v1, entry);
        assert_eq!(
            (r, out),
            (PureError::Trapped.code(), None),
            "{entry} must trap in a call by code"
        );
    }
}

#[test]
fn a_call_by_code_cannot_change_behaviour_when_state_changes() {
    let (v1, _) = hashes();
    let set_flag = |value: &'static [u8]| {
        move |s: &mut MemState| {
            s.map.insert("flag".into(), value.to_vec());
        }
    };
    // Read-only by module id (`call_pure`, what a guard uses), the entry follows the state …
    let state = &chains()[0].state;
    let module = chains()[0]
        .ctx
        .module(state, "sealed")
        .unwrap()
        .unwrap()
        .module;
    let by_id = |value: &'static [u8]| {
        let mut s = state.clone();
        set_flag(value)(&mut s);
        let overlay = gamechain_runtime::Overlay::new(&s);
        module
            .call_pure(&overlay, "state", b"", 1_000_000, Some(&chains()[0].ctx))
            .unwrap()
            .result
    };
    assert_eq!(by_id(b"a"), Ok(b"a".to_vec()));
    assert_eq!(by_id(b"b"), Ok(b"b".to_vec()));
    // … by code it has no state: the same answer whatever the state holds.
    let a = call_with(v1, "state", set_flag(b"a"));
    let b = call_with(v1, "state", set_flag(b"b"));
    assert_eq!(
        (a.0, b.0),
        (PureError::Trapped.code(), PureError::Trapped.code())
    );
    assert_eq!(a, b);
    assert_eq!(
        call_with(v1, "echo", set_flag(b"a")),
        call_with(v1, "echo", set_flag(b"b"))
    );
}

#[test]
fn code_stays_callable_after_its_module_id_is_upgraded_to_other_code() {
    let (v1, v2) = hashes();
    // `sealed` now runs v2 (an upgrade: its record names the other code; v1 stays stored).
    let upgrade = |s: &mut MemState| {
        let key = "module/sealed".to_string();
        let mut record: serde_json::Value = serde_json::from_slice(&s.map[&key]).unwrap();
        record["code_hash"] = serde_json::json!(hex::encode(v2));
        record["upgraded_height"] = serde_json::json!(4);
        s.map.insert(key, serde_json::to_vec(&record).unwrap());
    };
    let (r, out, _) = call_with(v1, "echo", upgrade);
    assert_eq!(
        (r, out.as_deref()),
        (5, Some(&b"v1:in"[..])),
        "v1 by its hash"
    );
    let mut s = chains()[0].state.clone();
    upgrade(&mut s);
    let now = chains()[0]
        .ctx
        .module(&s, "sealed")
        .unwrap()
        .unwrap()
        .module;
    assert_eq!(now.code_hash(), hex::encode(v2), "the id runs v2");
}

#[test]
fn missing_code_a_trap_and_running_out_of_fuel_are_fixed_codes() {
    let (v1, _) = hashes();
    assert_eq!(call([7; 32], "echo").0, PureError::NotFound.code());
    assert_eq!(call(v1, "nothing").0, PureError::NotFound.code());
    assert_eq!(call(v1, "Bad-Name").0, PureError::NotFound.code());
    let (r, _, fuel) = call(v1, "boom");
    assert_eq!(r, PureError::Trapped.code());
    assert!(fuel > 1_000_000, "a trap is charged the whole cap: {fuel}");
    let (r, _, fuel) = call(v1, "spin");
    assert_eq!(r, PureError::OutOfFuel.code());
    assert!(
        fuel > 1_000_000 && fuel < 1_200_000,
        "the cap, not more: {fuel}"
    );
    // Code stored under its hash that is not a module does not load: not found, no engine text.
    let junk = b"not wasm at all".to_vec();
    let junk_hash = hash(&junk);
    let (r, out, _) = call_with(junk_hash, "echo", |s| {
        s.map
            .insert(code_key(&hex::encode(junk_hash)), junk.clone());
    });
    assert_eq!((r, out), (PureError::NotFound.code(), None));
}

#[test]
fn the_code_store_is_read_once_per_hash_per_chain_of_calls() {
    let (v1, _) = hashes();
    let code_len = wat("sealed").len() as u64;
    let (_, once, _) = {
        let (r, out, fuel) = call(v1, "echo");
        (r, out, fuel)
    };
    let _ = once;
    let one = call(v1, "echo").2;
    let mut op = v1.to_vec();
    op.extend_from_slice(b"twice");
    let two = run_with(&op, |_| {}).fuel_used;
    let second = two - one;
    // The second call pays the base, the bytes, pure_call_base and the callee, not the code.
    assert!(
        second < GAS_V1.pure_call_base + 10_000,
        "a second call of the same code costs {second} (code is {code_len} bytes)"
    );
    assert!(
        one > code_len + GAS_V1.pure_call_base,
        "the first pays for the code: {one}"
    );
}

/// The compiler is consensus (it decides the fuel of bulk memory operations): code called by
/// hash always runs as the upload compiler compiled it, so its fuel is the same whether or not
/// a genesis module (compiled by the genesis compiler) ran that code in this process before.
#[test]
fn a_call_by_code_costs_the_same_whatever_ran_that_code_before() {
    let (v1, _) = hashes();
    let mut op = v1.to_vec();
    op.extend_from_slice(b"echo");
    let fuel = |chain: &Chain| {
        let caller = chain
            .ctx
            .module(&chain.state, "code_caller")
            .unwrap()
            .unwrap()
            .module;
        let env = BlockEnv::default();
        execute_apply_with(
            &caller,
            &chain.state,
            &env,
            TXID,
            "x",
            &op,
            Some(&chain.ctx),
        )
        .unwrap()
        .fuel_used
    };
    let cold = make_chain(false);
    let first = fuel(&cold);
    let warm = make_chain(false);
    // `sealed` is a genesis module: loaded by id it is compiled by the genesis compiler.
    let by_id = warm
        .ctx
        .module(&warm.state, "sealed")
        .unwrap()
        .unwrap()
        .module;
    assert_eq!(
        by_id.compiler(),
        warm.ctx.runtime().config().genesis_compiler
    );
    assert_eq!(fuel(&warm), first);
    assert_eq!(fuel(&cold), first);
}

/// A module whose `gc_pure_nest` calls `call_code(<hash>, "echo" | "nest", its input, …)` and
/// answers the callee's bytes, or the callee's negative code as 8 little-endian bytes.
fn nester(target: &[u8; 32], entry: &str) -> Vec<u8> {
    let hash: String = target.iter().map(|b| format!("\\{b:02x}")).collect();
    let text = format!(
        r#"(module
  (import "gamechain_v1" "call_code"
    (func $call_code (param i32 i32 i32 i32 i32 i64 i32 i32) (result i64)))
  (memory (export "memory") 2)
  (global $heap (mut i32) (i32.const 8192))
  (data (i32.const 16) "{hash}")
  (data (i32.const 64) "{entry}")
  (func (export "gc_abi_version") (result i32) (i32.const 1))
  (func (export "gc_alloc") (param $len i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.add (local.get $p) (local.get $len)))
    (local.get $p))
  (func (export "gc_apply") (param i32 i32 i32 i32) (result i32) (i32.const 0))
  (func (export "gc_view") (param i32 i32) (result i32) (i32.const 1))
  (func (export "gc_pure_nest") (param $p i32) (param $l i32) (result i64)
    (local $r i64)
    (local.set $r (call $call_code (i32.const 16) (i32.const 64) (i32.const {len})
      (local.get $p) (local.get $l) (i64.const 200000) (i32.const 4096) (i32.const 1024)))
    (if (i64.lt_s (local.get $r) (i64.const 0))
      (then
        (i64.store (i32.const 4096) (local.get $r))
        (return (i64.or (i64.shl (i64.const 4096) (i64.const 32)) (i64.const 8)))))
    (i64.or (i64.shl (i64.const 4096) (i64.const 32)) (local.get $r))))"#,
        len = entry.len()
    );
    wat::parse_str(&text).unwrap()
}

/// A call by code inside a call by code finds its code in the top caller's state and counts
/// toward the same depth limit as `call_pure`.
#[test]
fn calls_by_code_nest_up_to_the_depth_limit() {
    let (_, v2) = hashes();
    let inner = nester(&v2, "echo");
    let inner_hash = hash(&inner);
    let outer = nester(&inner_hash, "nest");
    let outer_hash = hash(&outer);
    let store = |s: &mut MemState| {
        for code in [&inner, &outer] {
            s.map
                .insert(code_key(&hex::encode(hash(code))), code.clone());
        }
    };
    // caller (0) → inner (1) → v2 echo (2).
    let (r, out, _) = call_with(inner_hash, "nest", store);
    assert_eq!((r, out.as_deref()), (5, Some(&b"v2:in"[..])));
    // caller (0) → outer (1) → inner (2), whose call is one level too deep.
    let (r, out, _) = call_with(outer_hash, "nest", store);
    assert_eq!(r, 8);
    assert_eq!(
        i64::from_le_bytes(out.unwrap().try_into().unwrap()),
        PureError::TooDeep.code()
    );
    // Code nobody stored is not found, even by a nested call.
    let (r, _, _) = call_with(outer_hash, "nest", |_| {});
    assert_eq!(r, PureError::NotFound.code());
}
