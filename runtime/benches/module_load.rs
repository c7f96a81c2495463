//! Benchmark: what loading the tic-tac-toe guest costs, with and without the compiled-module
//! cache, and what one instance costs afterwards.
//!
//! Prints medians of:
//! - `compile`: Cranelift compiling the (instrumented) module, `Module::from_binary`, i.e.
//!   `CodeSource::Compiled`'s time, and the whole `WasmModule::load` around it (which also
//!   instruments, checks imports and exports, instantiates once for `gc_abi_version` and takes
//!   the pristine snapshot);
//! - `cache load`: reading, checking (envelope, SHA-256) and deserialising a cache entry,
//!   `CodeSource::Cached`'s time, and the whole `WasmModule::load` around it;
//! - `instantiate`: one `gc_view` call in a fresh instance (`reuse_instances: false`: pooled
//!   instantiation, data segments, start function, the call, teardown) against the same call
//!   in a warm reset instance (the default); the difference is what creating an instance costs.
//!
//! Run: `cargo bench -p gamechain-runtime --bench module_load`. `MODULE_LOAD_ROUNDS` sets the
//! number of loads of each kind (default 10).

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gamechain_runtime::{
    run_view, MemState, ModuleCache, Origin, Runtime, RuntimeConfig, WasmModule,
};
use gamechain_sdk::guest_build::build_guest;

const CALLS: usize = 2_000;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:8.3} ms", d.as_secs_f64() * 1e3)
}

fn us(d: Duration) -> String {
    format!("{:8.2} µs", d.as_secs_f64() * 1e6)
}

/// Loads `wasm` `rounds` times, each through the cache `cache()` returns (none for `None`),
/// checking each load's code came from the cache exactly when `want_cached`; returns (code
/// source times, whole load times).
fn loads(
    rt: &Arc<Runtime>,
    wasm: &[u8],
    rounds: usize,
    mut cache: impl FnMut() -> Option<Arc<ModuleCache>>,
    want_cached: bool,
) -> (Vec<Duration>, Vec<Duration>) {
    let (mut source, mut whole) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let cache = cache();
        let start = Instant::now();
        let m = WasmModule::load(rt, "tictactoe", wasm, cache.as_deref(), Origin::Genesis).unwrap();
        whole.push(start.elapsed());
        let s = m.code_source();
        assert_eq!(s.is_cached(), want_cached, "{s:?}");
        source.push(s.duration());
        drop(black_box(m));
    }
    (source, whole)
}

/// Median time of one view call over `CALLS` calls.
fn view_call(rt: &Arc<Runtime>, wasm: &[u8]) -> Duration {
    let m = WasmModule::new(rt, "tictactoe", wasm).unwrap();
    let state = MemState::new();
    let query = Default::default();
    let mut times = Vec::with_capacity(CALLS);
    for _ in 0..CALLS {
        let start = Instant::now();
        let out = run_view(&m, &state, &query).unwrap();
        times.push(start.elapsed());
        assert!(out.0.is_ok(), "{:?}", out.0);
    }
    median(times)
}

fn main() {
    let rounds = std::env::var("MODULE_LOAD_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10usize);
    let wasm = build_guest("tictactoe")
        .unwrap_or_else(|e| panic!("{e}"))
        .wasm;
    let rt = Runtime::new(RuntimeConfig::default()).unwrap();
    let dirs = tempfile::tempdir().unwrap();

    // Compile: no cache at all, then a miss in an empty cache (compile + write the entry).
    let (compile, compile_load) = loads(&rt, &wasm, rounds, || None, false);
    let mut n = 0;
    let (_, miss_load) = loads(
        &rt,
        &wasm,
        rounds,
        || {
            n += 1;
            Some(Arc::new(
                ModuleCache::open(dirs.path().join(format!("empty-{n}"))).unwrap(),
            ))
        },
        false,
    );
    // Cache loads: a warm directory, a new `ModuleCache` per load (as after a restart).
    let warm = dirs.path().join("warm");
    loads(
        &rt,
        &wasm,
        1,
        || Some(Arc::new(ModuleCache::open(&warm).unwrap())),
        false,
    );
    let (cached, cached_load) = loads(
        &rt,
        &wasm,
        rounds,
        || Some(Arc::new(ModuleCache::open(&warm).unwrap())),
        true,
    );
    let entry_bytes: u64 = std::fs::read_dir(&warm)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();

    let fresh_rt = Runtime::new(RuntimeConfig {
        reuse_instances: false,
        ..RuntimeConfig::default()
    })
    .unwrap();
    let fresh = view_call(&fresh_rt, &wasm);
    let reused = view_call(&rt, &wasm);

    println!(
        "tictactoe: {} bytes of wasm, cache entry {} bytes; medians of {rounds} loads, {CALLS} calls",
        wasm.len(),
        entry_bytes
    );
    println!(
        "compile     (Module::from_binary)           {}   whole WasmModule::load {}",
        ms(median(compile)),
        ms(median(compile_load))
    );
    println!(
        "cache miss  (compile + write the entry)                  whole WasmModule::load {}",
        ms(median(miss_load))
    );
    println!(
        "cache load  (read, check, deserialize)      {}   whole WasmModule::load {}",
        ms(median(cached)),
        ms(median(cached_load))
    );
    println!(
        "instantiate (fresh-instance view call {} − warm-instance view call {}) = {}",
        us(fresh),
        us(reused),
        us(fresh.saturating_sub(reused))
    );
}
