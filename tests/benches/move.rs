//! Benchmark: one tic-tac-toe move, natively and through the wasm runtime, in one run.
//!
//! Both sides run the same move (`{"kind":"move","id":…,"cell":0}` by x on a joined game) over
//! the same committed state with the same `Ctx` implementation (`KvCtx` over an `Overlay`):
//! - native: parse the op bytes, `TicTacToe::apply`;
//! - wasm: `execute_apply` — pristine memory, `gc_alloc` + `gc_apply`, host calls, fuel metering,
//!   trap mapping, events converted for the receipt; in three setups:
//!   - `pooling`: a fresh pooled instance per move (`reuse_instances: false`);
//!   - `reuse`: a warm pooled instance reset to pristine after each move (the default);
//!   - `on-demand`: a fresh `mmap`ed instance per move;
//!   - `winch`: as `reuse`, but compiled by Winch, as an uploaded module is (the three above are
//!     compiled by Cranelift, as genesis modules are);
//!   - `tiered`: an upload after its tier-up: loaded with Winch, then replaced by its Cranelift
//!     compile (`WasmModule::tier_up`, compiled in this process here, in a child process on a
//!     node), run as `reuse`;
//!   - `reuse-r1`, `winch-r1`: as `reuse` and `winch`, under instrumentation revision 1 (every
//!     charge through the counter's global, a block ended at every control-flow operator), the
//!     metering older chains run: the cost of metering, before and after revision 2, in one run.
//!   Fuel is the instrumentation's own count, so every setup must use exactly the same fuel
//!   (checked before timing), under either revision.
//!
//! Run: `cargo bench -p gamechain-tests --bench move [--features peers]`. Prints the median time per move of each
//! side over interleaved rounds (so machine noise hits both alike) and their ratio.
//! - peers, with `--features peers`, each with its own metering and a new instance per move:
//!   - `wasmi`: the same guest on wasmi (the interpreter of Substrate's contracts and Soroban),
//!     with its fuel (`support/wasmi_peer.rs`);
//!   - `cosmwasm`: the same `TicTacToe::apply` as a CosmWasm contract
//!     (`tests/peers/cosmwasm-tictactoe`) on `cosmwasm-vm` (Wasmer singlepass), pinned in its
//!     cache, with its gas (`support/cosmwasm_peer.rs`).
//!
//! `MOVE_BENCH_ONLY=<setup>[,<setup>…]` (`native`, `pooling`, `reuse`, `on-demand`, `winch`, `tiered`,
//! `reuse-r1`, `winch-r1`, `wasmi`, `cosmwasm`) times only
//! those setups (e.g. one alone for `perf stat` / `strace -c`); `MOVE_BENCH_ROUNDS` sets the
//! number of rounds.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Instant;

use gamechain_runtime::{
    execute_apply, precompile, Allocation, MemState, OptLevel, Origin, Overlay, Runtime,
    RuntimeConfig, WasmModule, WriteSet,
};
use gamechain_sdk::{BlockEnv, GameModule, KvCtx, MockCtx, GOLD};
use serde_json::{json, Value};
use tictactoe::TicTacToe;

const ROUNDS: usize = 30;
const PER_ROUND: usize = 2_000;
const ALICE: &str = "xxURsC5wFbNzCrKzzQjeTqkLfEoZT6Y8F7";
const BOB: &str = "xysuzCS9FmeSvPjxZHcZXkK8cwj9iEQBki";
const TXID: &str = "20167c28639734f078564e520cd6197c2d4b40c55a22548c8e34c3c39963317c";

/// A state holding one staked game that Bob has joined, and the op bytes of x's first move.
fn joined_game() -> (MemState, Vec<u8>, BTreeMap<String, Vec<u8>>) {
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
    let raw = mock.kv.state.clone();
    let mut state = MemState::new();
    state.apply(
        mock.kv
            .state
            .into_iter()
            .map(|(k, v)| (k, Some(v)))
            .collect::<WriteSet>(),
    );
    let op = serde_json::to_vec(&json!({ "kind": "move", "id": id, "cell": 0 })).unwrap();
    (state, op, raw)
}

/// A move's writes (`None`: deleted) and events, in order: what every peer must produce alike.
#[cfg(feature = "peers")]
type Effects = (BTreeMap<String, Option<Vec<u8>>>, Vec<(String, Value)>);

#[cfg(feature = "peers")]
fn native_effects(state: &MemState, env: &BlockEnv, op: &[u8]) -> Effects {
    let op: Value = serde_json::from_slice(op).unwrap();
    let mut ctx = KvCtx::for_call(Overlay::new(state), tictactoe::ID, env, TXID, Some(ALICE));
    TicTacToe.apply(&mut ctx, ALICE, &op).unwrap();
    (ctx.kv.writes.into_iter().collect(), ctx.events)
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

/// Median and minimum over rounds of the mean time per call, in microseconds (on a shared
/// machine the minimum is the less noisy of the two).
fn median(mut samples: Vec<f64>) -> (f64, f64) {
    samples.sort_by(f64::total_cmp);
    (samples[samples.len() / 2], samples[0])
}

/// `  ratio …x  (min …, ratio of mins …x)` of a setup's median `t` and minimum `min` against
/// native's `(median, minimum)`; empty when native was not timed.
fn ratio_to(native: Option<(f64, f64)>, t: f64, min: f64) -> String {
    native.map_or(String::new(), |(n, n_min)| {
        format!(
            "  ratio {:.2}x  (min {min:.2}, ratio of mins {:.2}x)",
            t / n,
            min / n_min
        )
    })
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
    let (state, op, raw) = joined_game();
    let env = BlockEnv {
        height: 1414,
        block_time_ms: 1_764_000_000_000,
        ..BlockEnv::default()
    };

    let pooling = Allocation::Pooling { instances: 8 };
    let latest = gamechain_runtime::INSTRUMENTATION_REVISION;
    // (setup, what, allocation, reuse, origin, instrumentation revision)
    let modes = [
        (
            "pooling",
            "fresh instance",
            pooling,
            false,
            Origin::Genesis,
            latest,
        ),
        (
            "reuse",
            "reset warm instance",
            pooling,
            true,
            Origin::Genesis,
            latest,
        ),
        (
            "on-demand",
            "fresh instance",
            Allocation::OnDemand,
            false,
            Origin::Genesis,
            latest,
        ),
        (
            "winch",
            "reset warm instance",
            pooling,
            true,
            Origin::Upload,
            latest,
        ),
        (
            "tiered",
            "reset warm instance",
            pooling,
            true,
            Origin::Upload,
            latest,
        ),
        (
            "reuse-r1",
            "as reuse, metered as revision 1",
            pooling,
            true,
            Origin::Genesis,
            1,
        ),
        (
            "winch-r1",
            "as winch, metered as revision 1",
            pooling,
            true,
            Origin::Upload,
            1,
        ),
    ];
    let only = std::env::var("MOVE_BENCH_ONLY").ok();
    let wanted = |setup: &str| {
        only.as_deref()
            .is_none_or(|o| o.split(',').any(|w| w.trim() == setup))
    };
    let rounds = std::env::var("MOVE_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(ROUNDS);
    let modules: Vec<(&str, &str, WasmModule)> = modes
        .into_iter()
        .filter(|(name, ..)| wanted(name))
        .map(
            |(name, what, allocation, reuse_instances, origin, revision)| {
                let config = RuntimeConfig {
                    allocation,
                    reuse_instances,
                    instrumentation_revision: revision,
                    ..RuntimeConfig::default()
                };
                let runtime = Runtime::new(config).unwrap();
                let module =
                    WasmModule::load(&runtime, tictactoe::ID, &wasm.wasm, None, origin).unwrap();
                let module = if name == "tiered" {
                    module
                        .tier_up(&wasm.wasm, None, |b| precompile(OptLevel::Speed, b))
                        .unwrap()
                } else {
                    module
                };
                (name, what, module)
            },
        )
        .collect();

    // Same results every way before timing anything (twice: the second reuse call runs in a
    // reset instance), and the same fuel under every setup and compiler.
    let mut fuel = std::collections::BTreeMap::new();
    for (name, _, module) in &modules {
        for _ in 0..2 {
            assert_eq!(
                native_move(&state, &env, &op),
                wasm_move(module, &state, &env, &op),
                "{name}"
            );
            let used = execute_apply(module, &state, &env, TXID, ALICE, &op)
                .unwrap()
                .fuel_used;
            fuel.insert(module.compiler().name(), used);
            let first = *fuel.values().next().expect("just inserted");
            assert_eq!(first, used, "{name}: fuel differs");
        }
    }
    let time_native = wanted("native");

    // The peer: wasmi with its own fuel (`--features peers`), checked to make the same move.
    #[cfg(feature = "peers")]
    let peer = wanted("wasmi").then(|| {
        let peer = wasmi_peer::Peer::new(&wasm.wasm);
        let committed = std::sync::Arc::new(raw.clone());
        let context = (tictactoe::ID, TXID, env.height, env.block_time_ms);
        let moved = peer.apply(&committed, context, ALICE, &op);
        let events = moved.events.iter().map(|(kind, data)| {
            (
                kind.clone(),
                serde_json::from_slice(data).expect("event data is JSON"),
            )
        });
        let effects: Effects = (moved.writes.clone(), events.collect());
        assert_eq!(
            effects,
            native_effects(&state, &env, &op),
            "wasmi: not the same move"
        );
        (peer, committed, context, moved.fuel)
    });
    // The second peer: the same logic as a CosmWasm contract on cosmwasm-vm, with its gas.
    #[cfg(feature = "peers")]
    let cosmwasm = wanted("cosmwasm").then(|| {
        let peer = cosmwasm_peer::Peer::new((env.height, env.block_time_ms, TXID), ALICE);
        let committed = cosmwasm_peer::committed(&raw);
        let moved = peer.apply(&committed, &op);
        let writes = moved.writes.iter().map(|(key, value)| {
            (
                String::from_utf8(key.clone()).expect("UTF-8 keys"),
                value.clone(),
            )
        });
        let events = moved.events.iter().map(|event| {
            let data = event
                .attributes
                .iter()
                .find(|a| a.key == "data")
                .expect("a data attribute");
            (
                event.ty.clone(),
                serde_json::from_str(&data.value).expect("event data is JSON"),
            )
        });
        let effects: Effects = (writes.collect(), events.collect());
        assert_eq!(
            effects,
            native_effects(&state, &env, &op),
            "cosmwasm: not the same move"
        );
        (peer, committed, moved.gas)
    });
    #[cfg(feature = "peers")]
    let (mut peer_times, mut cosmwasm_times) = (Vec::new(), Vec::new());
    #[cfg(not(feature = "peers"))]
    let _ = &raw;

    let mut native = Vec::new();
    let mut wasm_times: Vec<Vec<f64>> = vec![Vec::new(); modules.len()];
    for _ in 0..rounds {
        if time_native {
            native.push(time_round(|| native_move(&state, &env, &op)));
        }
        for (i, (_, _, module)) in modules.iter().enumerate() {
            wasm_times[i].push(time_round(|| wasm_move(module, &state, &env, &op)));
        }
        #[cfg(feature = "peers")]
        if let Some((peer, committed, context, _)) = &peer {
            peer_times.push(time_round(|| {
                let moved = peer.apply(committed, *context, ALICE, &op);
                moved.writes.len() + moved.events.len()
            }));
        }
        #[cfg(feature = "peers")]
        if let Some((peer, committed, _)) = &cosmwasm {
            cosmwasm_times.push(time_round(|| {
                let moved = peer.apply(committed, &op);
                moved.writes.len() + moved.events.len()
            }));
        }
    }
    println!("tic-tac-toe move, median of {rounds} interleaved rounds x {PER_ROUND} moves");
    println!(
        "guest: {} bytes, sha256 {}; fuel per move: {}",
        wasm.wasm.len(),
        wasm.sha256,
        if fuel.is_empty() {
            "n/a".to_string()
        } else {
            fuel.iter()
                .map(|(compiler, f)| format!("{f} ({compiler})"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    );
    let native = time_native.then(|| median(native));
    if let Some((native, min)) = native {
        println!("native (MockCtx-equivalent KvCtx, op parsed from bytes): {native:>8.2} us/move  (min {min:.2})");
    }
    for ((name, what, _), times) in modules.iter().zip(wasm_times) {
        let (t, min) = median(times);
        let ratio = ratio_to(native, t, min);
        println!("wasm {name:<10} ({what} + apply + host calls + fuel): {t:>8.2} us/move{ratio}");
    }
    #[cfg(feature = "peers")]
    if let Some((.., fuel)) = &peer {
        let (t, min) = median(peer_times);
        let ratio = ratio_to(native, t, min);
        println!(
            "peer wasmi {} (interpreter, new instance + apply + host calls + its own fuel, {fuel} units): {t:>8.2} us/move{ratio}",
            WASMI_VERSION
        );
    }
    #[cfg(feature = "peers")]
    if let Some((peer, _, gas)) = &cosmwasm {
        let (t, min) = median(cosmwasm_times);
        let ratio = ratio_to(native, t, min);
        println!(
            "peer cosmwasm-vm {} (Wasmer singlepass, contract of {} bytes, pinned; new instance + execute + storage calls + its gas, {gas} gas): {t:>8.2} us/move{ratio}",
            COSMWASM_VM_VERSION, peer.wasm_len
        );
    }
}

#[cfg(feature = "peers")]
#[path = "support/wasmi_peer.rs"]
mod wasmi_peer;

/// The wasmi release the peer is built with (as `tests/Cargo.toml` pins it).
#[cfg(feature = "peers")]
const WASMI_VERSION: &str = "2.0.0";

#[cfg(feature = "peers")]
#[path = "support/cosmwasm_peer.rs"]
mod cosmwasm_peer;

#[cfg(feature = "peers")]
#[path = "support/bulk_memory_lowering.rs"]
mod bulk_memory_lowering;

/// The cosmwasm-vm release the second peer is built with (as `tests/Cargo.toml` pins it).
#[cfg(feature = "peers")]
const COSMWASM_VM_VERSION: &str = "3.0.10";
