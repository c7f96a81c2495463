//! Prices the host work of `verify_signed` and `call_pure` in fuel (ABI.md, "Gas table"): prints
//! the µs of one Divi signed-message verification (secp256k1 key recovery, SHA-256d, hash160),
//! of one pure call of a trivial entry point (instance lease, input placement, reset), and the
//! fuel per µs of plain wasm code on this machine, then what each costs at that rate against
//! what the gas table charges. `cargo bench -p gamechain-runtime --bench pure_calls`.

use std::time::Instant;

use gamechain_runtime::chain::{sign_message, verify_message, Network, SecretKey};
use gamechain_runtime::{MemState, Overlay, Runtime, RuntimeConfig, WasmModule, GAS_V1};

fn main() {
    let sk = SecretKey::from_bytes(Network::Testnet, [5; 32]).unwrap();
    let addr = sk.address();
    let msg = "gamechain channel move v1\nchain: ab\nmodule: channel\ngame: 0\nmove: 0\nprev: cd\nmover: x\ndata: 04";
    let sig = sign_message(&sk, msg);
    let n = 4_000;
    let t = Instant::now();
    for _ in 0..n {
        assert!(verify_message(&addr, msg, &sig).is_ok());
    }
    let verify_us = t.elapsed().as_secs_f64() * 1e6 / n as f64;

    let rt = Runtime::new(RuntimeConfig::default()).unwrap();
    let wat = wat::parse_file(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/wat/hostile/pure/callee.wat"
    ))
    .unwrap();
    let callee = WasmModule::new(&rt, "callee", &wat).unwrap();
    let committed = MemState::new();
    let state = Overlay::new(&committed);
    // Plain wasm: the looping entry point burns exactly its fuel.
    let spin_fuel = 200_000_000u64;
    let t = Instant::now();
    let out = callee
        .call_pure(&state, "spin", b"", spin_fuel, None)
        .unwrap();
    let spin_us = t.elapsed().as_secs_f64() * 1e6;
    assert!(out.result.is_err());
    let fuel_per_us = spin_fuel as f64 / spin_us;

    let calls = 20_000;
    let mut fuel = 0;
    let t = Instant::now();
    for _ in 0..calls {
        let out = callee
            .call_pure(&state, "echo", b"in", 1_000_000, None)
            .unwrap();
        assert_eq!(out.result.unwrap(), b"echo:in");
        fuel = out.fuel_used;
    }
    let call_us = t.elapsed().as_secs_f64() * 1e6 / calls as f64;

    println!("plain wasm: {fuel_per_us:.0} fuel per µs ({spin_fuel} fuel in {spin_us:.0} µs)");
    println!(
        "verify_signed: {verify_us:.1} µs per verification = {:.0} fuel at that rate; charged {}",
        verify_us * fuel_per_us,
        GAS_V1.verify_signed
    );
    println!(
        "call_pure of a trivial entry point: {call_us:.1} µs per call ({fuel} fuel of wasm) = {:.0} fuel at that rate; charged {} + the callee's fuel",
        call_us * fuel_per_us,
        GAS_V1.pure_call_base
    );
}
