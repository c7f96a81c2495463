//! The ABI's calls into other modules (`call_pure`) and signatures (`verify_signed`), with the
//! hostile callees of `wat/hostile/pure/` (README.md there, "Calls into other modules"):
//! mutual recursion, a looping callee, a trapping callee, a writing callee, huge and
//! out-of-memory results, a refusal, a wrong export type, unknown modules and names. Each runs
//! with instance reuse on (every reset verified) and off, and must give the same fixed result
//! and fuel both ways. The caller never traps: every failure is a negative result code.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use gamechain_runtime::chain::{sign_message, Network, SecretKey};
use gamechain_runtime::{
    execute_apply_with, Allocation, HostError, MemState, ModuleResolver, PureError, Runtime,
    RuntimeConfig, TxOutcome, WasmModule, GAS_V1, MAX_PURE_OUTPUT_BYTES,
};
use gamechain_sdk::{BlockEnv, StateRead};

const TXID: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

/// Modules by id: the test's resolver.
struct Registry(BTreeMap<String, Arc<WasmModule>>);

impl ModuleResolver for Registry {
    fn resolve(
        &self,
        _state: &dyn StateRead,
        id: &str,
    ) -> Result<Option<Arc<WasmModule>>, HostError> {
        Ok(self.0.get(id).cloned())
    }
}

fn wat(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/wat/hostile/pure/{name}.wat",
        env!("CARGO_MANIFEST_DIR")
    );
    wat::parse_file(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Reuse on (verified) and off, and reuse on under instrumentation revision 1 (the metering of
/// older chains, which must give every call the same fuel: a callee's limit is taken from the
/// fuel left at the call).
fn registries() -> &'static [Registry; 3] {
    static R: OnceLock<[Registry; 3]> = OnceLock::new();
    R.get_or_init(|| {
        let make = |reuse: bool, instrumentation_revision: u32| {
            let rt = Runtime::new(RuntimeConfig {
                reuse_instances: reuse,
                verify_reuse: reuse,
                allocation: Allocation::Pooling { instances: 16 },
                instrumentation_revision,
                ..RuntimeConfig::default()
            })
            .unwrap();
            let mut map = BTreeMap::new();
            for id in [
                "caller", "callee", "ping", "pong", "sigcheck", "greedy", "ladder",
            ] {
                let m = WasmModule::new(&rt, id, &wat(id)).unwrap_or_else(|e| panic!("{id}: {e}"));
                map.insert(id.to_string(), Arc::new(m));
            }
            Registry(map)
        };
        let latest = gamechain_runtime::INSTRUMENTATION_REVISION;
        [make(true, latest), make(false, latest), make(true, 1)]
    })
}

/// Runs `module`'s `gc_apply` with `sender` and `op`, over an empty state, under both
/// registries (twice each); asserts identical outcomes and returns one.
fn run(module: &str, sender: &str, op: &[u8]) -> TxOutcome {
    let state = MemState::new();
    let env = BlockEnv::default();
    let mut outcomes = Vec::new();
    for reg in registries() {
        for _ in 0..2 {
            let m = &reg.0[module];
            let out = execute_apply_with(m, &state, &env, TXID, sender, op, Some(reg)).unwrap();
            outcomes.push(out);
        }
    }
    for o in &outcomes[1..] {
        assert_eq!(o.result, outcomes[0].result);
        assert_eq!(
            o.fuel_used, outcomes[0].fuel_used,
            "fuel differs between runs"
        );
        assert_eq!(o.writes, outcomes[0].writes);
    }
    outcomes.swap_remove(0)
}

/// The caller's `r` (the `call_pure` result) and `out` (the bytes) after calling `module.entry`.
fn call(module: &str, entry: &str) -> (i64, Option<Vec<u8>>, u64) {
    let out = run("caller", module, entry.as_bytes());
    assert_eq!(out.result, Ok(()), "the caller never fails");
    let get = |k: &str| out.writes.get(&format!("m/caller/{k}")).cloned().flatten();
    let r = i64::from_le_bytes(get("r").expect("r written").try_into().unwrap());
    (r, get("out"), out.fuel_used)
}

#[test]
fn a_pure_call_returns_the_callee_bytes() {
    let (r, out, _) = call("callee", "echo");
    assert_eq!(r, 7);
    assert_eq!(out.as_deref(), Some(&b"echo:in"[..]));
}

#[test]
fn mutual_recursion_stops_at_the_depth_limit() {
    // caller (depth 0) -> ping (1) -> pong (2): pong's own call is refused as too deep.
    let (r, out, _) = call("ping", "bounce");
    assert_eq!(r, 8);
    let inner = i64::from_le_bytes(out.unwrap().try_into().unwrap());
    assert_eq!(inner, PureError::TooDeep.code());
}

#[test]
fn a_looping_callee_uses_only_its_fuel_cap() {
    let (r, _, fuel) = call("callee", "spin");
    assert_eq!(r, PureError::OutOfFuel.code());
    assert!(
        fuel > 1_000_000 && fuel < 1_100_000,
        "the cap was charged, not more: {fuel}"
    );
}

#[test]
fn a_callee_given_all_the_fuel_left_leaves_the_same_under_every_revision() {
    // `greedy` hands `spin` every unit it has left, then runs a `block`: under instrumentation
    // revision 1 that block is charged after the call and cannot be paid. Revision 2 must
    // not have charged it before the call (`run` compares both revisions' outcomes).
    let out = run("greedy", "callee", b"spin");
    assert_eq!(
        out.result.unwrap_err().to_string(),
        "internal: out of fuel",
        "the caller runs out after its callee took the rest"
    );
}

#[test]
fn a_callee_at_every_small_limit_ends_the_same_under_every_revision() {
    // `ladder` offers `divz` 0 to 63 units and records each result code; `run` compares the
    // writes under both instrumentation revisions. Below the division's own charge the callee
    // runs out (-4); from there on it traps (-3).
    let out = run("ladder", "callee", b"divz");
    assert!(out.result.is_ok());
    let codes = out
        .writes
        .iter()
        .find(|(k, _)| k.ends_with("/codes"))
        .and_then(|(_, v)| v.clone())
        .expect("the codes are written");
    assert_eq!(codes.len(), 64);
    let first_trap = codes.iter().position(|&c| c as i8 == -3).expect("a trap");
    assert!(first_trap > 0, "a limit of 0 runs out");
    assert!(
        codes[..first_trap].iter().all(|&c| c as i8 == -4),
        "{codes:?}"
    );
    assert!(
        codes[first_trap..].iter().all(|&c| c as i8 == -3),
        "{codes:?}"
    );
}

#[test]
fn a_trapping_callee_is_a_result_not_a_trap() {
    assert_eq!(call("callee", "boom").0, PureError::Trapped.code());
    // A trap is charged the whole cap, as any trap is charged its whole limit.
    assert!(call("callee", "boom").2 > 1_000_000);
}

#[test]
fn a_callee_cannot_write() {
    assert_eq!(call("callee", "write").0, PureError::Trapped.code());
}

#[test]
fn huge_outputs_are_refused_and_the_bound_itself_passes() {
    assert_eq!(call("callee", "huge").0, PureError::OutputTooLarge.code());
    let (r, out, _) = call("callee", "max");
    assert_eq!(r as usize, MAX_PURE_OUTPUT_BYTES);
    assert_eq!(out.unwrap().len(), MAX_PURE_OUTPUT_BYTES);
    assert_eq!(call("callee", "outside").0, PureError::Trapped.code());
}

#[test]
fn refusals_unknown_modules_names_and_types_are_fixed_codes() {
    assert_eq!(call("callee", "no").0, PureError::Refused.code());
    assert_eq!(call("callee", "typed").0, PureError::NotFound.code());
    assert_eq!(call("callee", "missing").0, PureError::NotFound.code());
    assert_eq!(call("nobody", "echo").0, PureError::NotFound.code());
    assert_eq!(call("callee", "Bad-Name").0, PureError::NotFound.code());
}

#[test]
fn without_a_resolver_every_module_is_unknown() {
    let reg = &registries()[0];
    let state = MemState::new();
    let out = execute_apply_with(
        &reg.0["caller"],
        &state,
        &BlockEnv::default(),
        TXID,
        "callee",
        b"echo",
        None,
    )
    .unwrap();
    let r = out.writes.get("m/caller/r").cloned().flatten().unwrap();
    assert_eq!(
        i64::from_le_bytes(r.try_into().unwrap()),
        PureError::NotFound.code()
    );
}

#[test]
fn verify_signed_answers_and_never_traps() {
    let sk = SecretKey::from_bytes(Network::Testnet, [5; 32]).unwrap();
    let other = SecretKey::from_bytes(Network::Testnet, [6; 32]).unwrap();
    let sig = sign_message(&sk, "hello gamechain");
    let ok = |sender: &str, op: &[u8]| {
        let out = run("sigcheck", sender, op);
        assert_eq!(out.result, Ok(()));
        (
            out.writes.get("m/sigcheck/ok").cloned().flatten().unwrap()[0],
            out.fuel_used,
        )
    };
    let (good, fuel_good) = ok(&sk.address(), sig.as_bytes());
    assert_eq!(good, 1);
    assert!(fuel_good >= GAS_V1.verify_signed, "{fuel_good}");
    assert_eq!(ok(&other.address(), sig.as_bytes()).0, 0, "another key");
    let mut tampered = sig.clone().into_bytes();
    tampered[10] = if tampered[10] == b'A' { b'B' } else { b'A' };
    assert_eq!(ok(&sk.address(), &tampered).0, 0, "a tampered signature");
    assert_eq!(ok(&sk.address(), &[0xff, 0xfe]).0, 0, "not UTF-8");
    assert_eq!(ok("not an address", sig.as_bytes()).0, 0, "not an address");
    assert_eq!(ok(&sk.address(), b"").0, 0, "an empty signature");
    let (bad, fuel_bad) = ok(&sk.address(), &[b'A'; 88]);
    assert_eq!(bad, 0);
    assert_eq!(
        fuel_bad, fuel_good,
        "a bad signature is charged as a good one"
    );
}
