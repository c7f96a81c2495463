//! Benchmark: one tic-tac-toe move, natively and through the wasm runtime, in one run.
//!
//! Both sides run the same move (`{"kind":"move","id":…,"cell":0}` by x on a joined game) over
//! the same committed state with the same `Ctx` implementation (`KvCtx` over an `Overlay`):
//! - native: parse the op bytes, `TicTacToe::apply`;
//! - wasm: `execute_apply` — a fresh instance from pristine memory, `gc_alloc` + `gc_apply`, host
//!   calls, fuel metering, trap mapping, events converted for the receipt.
//!
//! Run: `cargo bench -p gamechain-tests --bench move`. Prints the median time per move of each
//! side over interleaved rounds (so machine noise hits both alike) and their ratio.

use std::hint::black_box;
use std::time::Instant;

use gamechain_runtime::{
    execute_apply, Allocation, MemState, Overlay, Runtime, RuntimeConfig, WasmModule, WriteSet,
};
use gamechain_sdk::{BlockEnv, GameModule, KvCtx, MockCtx, GOLD};
use serde_json::{json, Value};
use tictactoe::TicTacToe;

const ROUNDS: usize = 15;
const PER_ROUND: usize = 4_000;
const ALICE: &str = "xxURsC5wFbNzCrKzzQjeTqkLfEoZT6Y8F7";
const BOB: &str = "xysuzCS9FmeSvPjxZHcZXkK8cwj9iEQBki";
const TXID: &str = "20167c28639734f078564e520cd6197c2d4b40c55a22548c8e34c3c39963317c";

/// A state holding one staked game that Bob has joined, and the op bytes of x's first move.
fn joined_game() -> (MemState, Vec<u8>) {
    let mut mock = MockCtx::new(tictactoe::ID);
    mock.set_balance(ALICE, GOLD, 100_000);
    mock.set_balance(BOB, GOLD, 100_000);
    mock.height = 1412;
    mock.submit(
        &TicTacToe,
        ALICE,
        json!({ "kind": "create", "stake": "100" }),
    )
    .unwrap();
    let id = mock.txid[..16].to_string();
    mock.height = 1413;
    mock.submit(&TicTacToe, BOB, json!({ "kind": "join", "id": id }))
        .unwrap();
    let mut state = MemState::new();
    state.apply(
        mock.kv
            .state
            .into_iter()
            .map(|(k, v)| (k, Some(v)))
            .collect::<WriteSet>(),
    );
    let op = serde_json::to_vec(&json!({ "kind": "move", "id": id, "cell": 0 })).unwrap();
    (state, op)
}

fn native_move(state: &MemState, env: &BlockEnv, op: &[u8]) -> usize {
    let op: Value = serde_json::from_slice(op).unwrap();
    let mut ctx = KvCtx::for_call(Overlay::new(state), tictactoe::ID, env, TXID, Some(ALICE));
    TicTacToe.apply(&mut ctx, ALICE, &op).unwrap();
    ctx.kv.writes.len() + ctx.events.len()
}

fn wasm_move(module: &WasmModule, state: &MemState, env: &BlockEnv, op: &[u8]) -> usize {
    let out = execute_apply(module, state, env, TXID, ALICE, op).unwrap();
    out.result.unwrap();
    out.writes.len() + out.events.len()
}

/// Median over rounds of the mean time per call, in microseconds.
fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn time_round(mut f: impl FnMut() -> usize) -> f64 {
    let start = Instant::now();
    for _ in 0..PER_ROUND {
        black_box(f());
    }
    start.elapsed().as_secs_f64() * 1e6 / PER_ROUND as f64
}

fn main() {
    let wasm =
        gamechain_sdk::guest_build::build_guest("tictactoe").unwrap_or_else(|e| panic!("{e}"));
    let (state, op) = joined_game();
    let env = BlockEnv {
        height: 1414,
        block_time_ms: 1_764_000_000_000,
        ..BlockEnv::default()
    };

    let modes = [
        ("pooling", Allocation::Pooling { instances: 8 }),
        ("on-demand", Allocation::OnDemand),
    ];
    let modules: Vec<(&str, WasmModule)> = modes
        .into_iter()
        .map(|(name, allocation)| {
            let runtime = Runtime::new(RuntimeConfig {
                allocation,
                ..RuntimeConfig::default()
            })
            .unwrap();
            (
                name,
                WasmModule::new(&runtime, tictactoe::ID, &wasm.wasm).unwrap(),
            )
        })
        .collect();

    // Same results both ways before timing anything.
    assert_eq!(
        native_move(&state, &env, &op),
        wasm_move(&modules[0].1, &state, &env, &op)
    );
    let fuel = execute_apply(&modules[0].1, &state, &env, TXID, ALICE, &op)
        .unwrap()
        .fuel_used;

    let mut native = Vec::new();
    let mut wasm_times: Vec<Vec<f64>> = vec![Vec::new(); modules.len()];
    for _ in 0..ROUNDS {
        native.push(time_round(|| native_move(&state, &env, &op)));
        for (i, (_, module)) in modules.iter().enumerate() {
            wasm_times[i].push(time_round(|| wasm_move(module, &state, &env, &op)));
        }
    }
    let native = median(native);
    println!("tic-tac-toe move, median of {ROUNDS} interleaved rounds x {PER_ROUND} moves");
    println!(
        "guest: {} bytes, sha256 {}; fuel per move: {fuel}",
        wasm.wasm.len(),
        wasm.sha256
    );
    println!("native (MockCtx-equivalent KvCtx, op parsed from bytes): {native:>8.2} us/move");
    for ((name, _), times) in modules.iter().zip(wasm_times) {
        let t = median(times);
        println!("wasm {name:<10} (fresh instance + apply + host calls + fuel): {t:>8.2} us/move  ratio {:.2}x", t / native);
    }
}
