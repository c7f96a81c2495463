//! The engine: the chain's runtime configuration ([`RuntimeConfig`]), its consensus hash
//! ([`RuntimeConfig::config_hash`]), and the [`Runtime`] that owns the `wasmtime::Engine`s (pooled,
//! plus an on-demand fallback), their `Linker`s with every host import, the pool's slots and idle
//! warm instances ([`Instances`]) and the per-store resource limiter.
//!
//! Determinism choices (each one is in the config hash):
//! - fuel metering on (`consume_fuel`), wasmtime 48's default per-operator costs; no epoch
//!   interruption, no clock, no WASI;
//! - NaN canonicalisation on, so float results have the same bits everywhere;
//! - the wasm feature set is spelled out rather than taken from wasmtime's defaults: exactly
//!   ABI.md's "Wasm features" (no SIMD, relaxed SIMD, threads, memory64, exceptions, GC, tail
//!   calls, multi-memory, component model, …);
//! - one memory, at most `memory_limit_bytes`; one table of at most [`MAX_TABLE_ELEMENTS`]
//!   entries; a fixed native stack budget for wasm ([`MAX_WASM_STACK`]);
//! - every module is validated at load (`validate.rs`, its limits are in the config hash) and
//!   instrumented (`instrument.rs` and `stack.rs`, their version and the stack limit are in the
//!   config hash); the instrumented module is what runs, so fuel counts the inserted
//!   instructions too.
//!
//! Allocation (pooling or on demand) is not consensus: both enforce the same limits through the
//! same [`Limits`]; a module too large for a pool slot runs on the on-demand engine; a caller
//! waits for a free slot ([`Instances`]), and a slot wasmtime still refuses is a [`HostError`],
//! never a receipt. Neither is instance reuse ([`RuntimeConfig::reuse_instances`]): a reused
//! instance is reset to exactly the state of a fresh one and charged the same fuel
//! (`module.rs`). Nor is the Cranelift optimisation level ([`RuntimeConfig::opt_level`]):
//! fuel is counted per wasm operator, before Cranelift sees the code, and NaNs are canonicalised
//! at every level, so only the machine code (and its speed) differs; it is part of the
//! compiled-module cache key (`cache.rs`), not of the config hash. The determinism matrix
//! (`tests/tests/determinism.rs`) replays a chain under every level.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use sha2::{Digest, Sha256};
use wasmtime::{
    Config, Engine, InstanceAllocationStrategy, Linker, PoolingAllocationConfig, ResourceLimiter,
    WasmBacktraceDetails, WasmFeatures,
};

use crate::gas::GAS_V1;
use crate::host::{self, HostState};
use crate::module::Warm;
use crate::trap::{HostError, HostTrap};

/// The ABI version this runtime serves (the `gamechain_v1` import module).
pub const ABI_VERSION: u32 = 1;

/// The wasmtime release fuel and trap semantics come from. Pinned with `=` in `Cargo.toml`; a
/// test checks `Cargo.lock` agrees.
pub const WASMTIME_VERSION: &str = "48.0.8";

/// Most entries in the module's one table (a Rust module's table holds its address-taken
/// functions, usually a few hundred). Same bound as wasmtime's pooling default.
pub const MAX_TABLE_ELEMENTS: usize = 20_000;

/// Native stack, in bytes, that wasm code may use before `internal: trap: stack overflow`.
/// A backstop only: the deterministic logical limit (`stack.rs`, [`crate::STACK_LIMIT`]) is
/// reached first by every valid module (its worst case needs 590 KB on x86-64). Calls run on
/// the calling thread's stack, so a thread that calls into wasm needs this much plus its own
/// frames: Rust's default 2 MiB for spawned threads (and tokio's blocking threads) is enough.
pub const MAX_WASM_STACK: usize = 1 << 20;

/// Bytes of each pooled linear memory kept resident (reset with `memset`, not `madvise`) between
/// instances: covers a Rust guest's 32 KiB stack, its static data and a typical call's heap
/// (`shared/notes/measured-facts.md`).
const MEMORY_KEEP_RESIDENT: usize = 1 << 20;

/// Bytes of each pooled table kept resident between instances (8192 entries).
const TABLE_KEEP_RESIDENT: usize = 64 << 10;

/// The wasm features a module may use (ABI.md, "Wasm features"): the MVP (with floats), mutable
/// globals, sign extension, non-trapping float-to-int, multi-value, bulk memory and reference
/// types, which is what `rustc` emits for `wasm32-unknown-unknown`.
pub(crate) fn allowed_features() -> WasmFeatures {
    WasmFeatures::FLOATS
        | WasmFeatures::MUTABLE_GLOBAL
        | WasmFeatures::SIGN_EXTENSION
        | WasmFeatures::SATURATING_FLOAT_TO_INT
        | WasmFeatures::MULTI_VALUE
        | WasmFeatures::BULK_MEMORY
        | WasmFeatures::REFERENCE_TYPES
}

/// The features in [`allowed_features`], as named in the config hash.
const FEATURE_NAMES: &str =
    "floats,mutable_global,sign_extension,saturating_float_to_int,multi_value,bulk_memory,reference_types";

/// How instances get their memory and tables. Not consensus: both give identical results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allocation {
    /// Preallocated slots, reused across calls (fast). At most `instances` calls run at once; a
    /// further call waits for a slot.
    Pooling {
        /// Concurrent instances (and memories, and tables) the pool holds.
        instances: u32,
    },
    /// `mmap` per instance (slower, no preallocation); for tools and tests.
    OnDemand,
}

/// The Cranelift optimisation level modules are compiled at. Not consensus (see the module
/// docs): it changes the machine code and its speed, never a result, a fuel figure or a load
/// error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OptLevel {
    /// No optimisation (fastest compile).
    None,
    /// Optimise for speed (the default).
    #[default]
    Speed,
    /// Optimise for speed and code size.
    SpeedAndSize,
}

impl OptLevel {
    /// Every level, for tests that must not see a difference.
    pub const ALL: [OptLevel; 3] = [OptLevel::None, OptLevel::Speed, OptLevel::SpeedAndSize];

    /// The name used in the compiled-module cache key: `none`, `speed` or `speed_and_size`.
    pub fn name(self) -> &'static str {
        match self {
            OptLevel::None => "none",
            OptLevel::Speed => "speed",
            OptLevel::SpeedAndSize => "speed_and_size",
        }
    }

    fn wasmtime(self) -> wasmtime::OptLevel {
        match self {
            OptLevel::None => wasmtime::OptLevel::None,
            OptLevel::Speed => wasmtime::OptLevel::Speed,
            OptLevel::SpeedAndSize => wasmtime::OptLevel::SpeedAndSize,
        }
    }
}

/// The chain's runtime parameters. `fuel_apply`, `fuel_end_block` and `memory_limit_bytes` are
/// consensus rules recorded in genesis through [`RuntimeConfig::config_hash`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeConfig {
    /// Fuel for one `gc_apply` call, including instantiation, `gc_alloc` and host calls.
    pub fuel_apply: u64,
    /// Fuel for one `gc_view` call. Not consensus (views never touch state), so not hashed.
    pub fuel_view: u64,
    /// Fuel for one `gc_end_block` call.
    pub fuel_end_block: u64,
    /// Largest linear memory of an instance, bytes (a multiple of 64 KiB makes sense).
    pub memory_limit_bytes: usize,
    /// Instance allocation strategy (not consensus).
    pub allocation: Allocation,
    /// Serve calls from warm instances reset to the module's pristine state instead of a new
    /// instance each time (not consensus: results, state writes and fuel are identical either
    /// way; a module whose state this host cannot reset runs in fresh instances regardless).
    pub reuse_instances: bool,
    /// Check every reset: after each reset of a reused instance compare its whole memory and
    /// every mutable global with the module's pristine snapshot, and check each new instance of
    /// a reusable module against the snapshot; panic on any difference. For tests and
    /// verifiers (it costs a full memory comparison per call). Not consensus.
    pub verify_reuse: bool,
    /// The Cranelift optimisation level (default [`OptLevel::Speed`]). Not consensus, so not in
    /// [`config_hash`](Self::config_hash): every level gives the same results, state writes,
    /// fuel and load errors (the determinism matrix checks it); it is part of the
    /// compiled-module cache key, since the machine code differs.
    pub opt_level: OptLevel,
}

impl Default for RuntimeConfig {
    /// - `fuel_apply` 10,000,000 and `fuel_end_block` 10,000,000: a tic-tac-toe move (JSON parse,
    ///   a state read, a write, an event) is tens of thousands of fuel, so this leaves room for
    ///   games a hundred times heavier while bounding a transaction to roughly 10–30 ms of wasm.
    /// - `fuel_view` 50,000,000: views may scan and decode many records (a full 1024-entry scan
    ///   page with JSON decoding is a few million), they run off the consensus path, and the
    ///   bound keeps an HTTP request under ~0.1 s.
    /// - `memory_limit_bytes` 16 MiB (256 pages): a Rust guest needs its 32 KiB stack, ~150 KB of
    ///   code data and a bump heap that is never freed within a call; 16 MiB is far above that
    ///   while keeping a full pool of 64 slots at most 1 GiB resident.
    /// - `allocation`: a pool of 64 instances, far above the concurrency of one block executor
    ///   plus the view threads of a 2-core node.
    fn default() -> Self {
        Self {
            fuel_apply: 10_000_000,
            fuel_view: 50_000_000,
            fuel_end_block: 10_000_000,
            memory_limit_bytes: 16 << 20,
            allocation: Allocation::Pooling { instances: 64 },
            reuse_instances: true,
            verify_reuse: false,
            opt_level: OptLevel::Speed,
        }
    }
}

impl RuntimeConfig {
    /// The canonical text [`config_hash`](Self::config_hash) hashes: `key=value` lines covering
    /// everything that changes a receipt, the state or the fuel used: ABI version, wasmtime
    /// version, features, NaN canonicalisation, operator costs, stack, table and memory limits,
    /// fuel limits for apply and end_block, the gas table, the scan cap and the load-time
    /// instrumentation.
    pub fn canonical_description(&self) -> String {
        let mut s = String::new();
        s.push_str("gamechain.runtime.config.v1\n");
        s.push_str(&format!("abi_version={ABI_VERSION}\n"));
        s.push_str(&format!("wasmtime={WASMTIME_VERSION}\n"));
        s.push_str(&format!("features={FEATURE_NAMES}\n"));
        s.push_str("nan_canonicalization=true\n");
        s.push_str("operator_cost=wasmtime-default\n");
        s.push_str(&format!("max_wasm_stack={MAX_WASM_STACK}\n"));
        s.push_str("max_memories=1\nmax_tables=1\n");
        s.push_str(&format!("max_table_elements={MAX_TABLE_ELEMENTS}\n"));
        s.push_str(&format!("memory_limit_bytes={}\n", self.memory_limit_bytes));
        s.push_str(&format!("fuel_apply={}\n", self.fuel_apply));
        s.push_str(&format!("fuel_end_block={}\n", self.fuel_end_block));
        s.push_str(&format!(
            "max_scan_limit={}\n",
            gamechain_sdk::MAX_SCAN_LIMIT
        ));
        s.push_str(&GAS_V1.canonical());
        s.push_str(&format!("instrumentation={}\n", crate::instrument::VERSION));
        s.push_str(&format!(
            "stack_limit={}\nstack_frame_overhead={}\n",
            crate::stack::STACK_LIMIT,
            crate::stack::FRAME_OVERHEAD
        ));
        s.push_str(&crate::validate::canonical());
        s
    }

    /// SHA-256 of [`canonical_description`](Self::canonical_description), lowercase hex (64
    /// chars). Genesis carries it; a node whose runtime hashes differently must not join.
    pub fn config_hash(&self) -> String {
        hex::encode(Sha256::digest(self.canonical_description().as_bytes()))
    }
}

/// One wasmtime engine and its linker (every host import registered).
pub(crate) struct Backend {
    pub(crate) engine: Engine,
    pub(crate) linker: Linker<HostState>,
}

/// The wasm engine of a node: compiled modules of one `Runtime` share its code, host functions
/// and instance pool. Create one per process and share it behind an `Arc`.
///
/// With [`Allocation::Pooling`] it holds two engines with the same configuration apart from the
/// allocator: a module is compiled for the pooled one, and only a module the pool's fixed slot
/// sizes cannot hold (e.g. a very large instance context) falls back to the on-demand one. So
/// which modules load, and how they run, never depends on the allocation strategy.
pub struct Runtime {
    /// Pool slots and idle warm instances (first, so idle stores are dropped before the engines).
    instances: Instances,
    pub(crate) config: RuntimeConfig,
    pooled: Option<Backend>,
    on_demand: Backend,
}

impl Runtime {
    /// Builds the engine(s) and registers the host imports.
    ///
    /// Errors: [`HostError::Engine`] when wasmtime refuses the configuration (e.g. a pool too
    /// large for the address space, a zero memory limit).
    pub fn new(config: RuntimeConfig) -> Result<Arc<Self>, HostError> {
        if config.memory_limit_bytes == 0 {
            return Err(HostError::Engine(
                "memory_limit_bytes must be positive".into(),
            ));
        }
        let pooled = match config.allocation {
            Allocation::Pooling { instances } => {
                // The pool's own `max_memory_size` stays at its default: a slot reserves the
                // 4 GiB static-bounds region anyway, and the memory limit is enforced in one
                // place (`Limits`, plus the load-time check), identically in both engines.
                let mut p = PoolingAllocationConfig::new();
                p.total_core_instances(instances)
                    .total_memories(instances)
                    .total_tables(instances)
                    .max_memories_per_module(1)
                    .max_tables_per_module(1)
                    .table_elements(MAX_TABLE_ELEMENTS)
                    .linear_memory_keep_resident(
                        MEMORY_KEEP_RESIDENT.min(config.memory_limit_bytes),
                    )
                    .table_keep_resident(TABLE_KEEP_RESIDENT);
                Some(backend(
                    InstanceAllocationStrategy::Pooling(p),
                    config.opt_level,
                )?)
            }
            Allocation::OnDemand => None,
        };
        let slots = match config.allocation {
            Allocation::Pooling { instances } => instances as usize,
            Allocation::OnDemand => 0,
        };
        let on_demand = backend(InstanceAllocationStrategy::OnDemand, config.opt_level)?;
        Ok(Arc::new(Self {
            instances: Instances::new(slots),
            config,
            pooled,
            on_demand,
        }))
    }

    /// The configuration this runtime was built with.
    pub fn config(&self) -> &RuntimeConfig {
        &self.config
    }

    /// The pooled backend, if the runtime pools instances.
    pub(crate) fn pooled(&self) -> Option<&Backend> {
        self.pooled.as_ref()
    }

    /// The on-demand backend (the only one without pooling, the fallback with it).
    pub(crate) fn on_demand(&self) -> &Backend {
        &self.on_demand
    }

    /// What one call of module `uid` runs in: an idle warm instance of that module when `reuse`
    /// and there is one, else the right to create a new instance (for a `pooled` module, a pool
    /// slot, waited for). Keep the lease alive while the call's `Store` lives.
    pub(crate) fn lease(&self, uid: u64, pooled: bool, reuse: bool) -> Lease<'_> {
        self.instances.lease(uid, pooled, reuse)
    }

    /// Drops the idle warm instances of module `uid` (the module is going away).
    pub(crate) fn forget_module(&self, uid: u64) {
        self.instances.forget(uid);
    }

    /// Fresh per-store limits for one call.
    pub(crate) fn limits(&self) -> Limits {
        Limits {
            memory_bytes: self.config.memory_limit_bytes,
        }
    }
}

/// An engine with the chain's deterministic configuration, `allocation` and `opt_level`, and its
/// linker.
fn backend(
    allocation: InstanceAllocationStrategy,
    opt_level: OptLevel,
) -> Result<Backend, HostError> {
    let engine_err = |e: wasmtime::Error| HostError::Engine(format!("{e:?}"));
    let mut c = Config::new();
    c.consume_fuel(true)
        .epoch_interruption(false)
        .cranelift_nan_canonicalization(true)
        .cranelift_opt_level(opt_level.wasmtime())
        .max_wasm_stack(MAX_WASM_STACK)
        // Traps carry no backtrace: cheaper, and nothing build-dependent to leak.
        .wasm_backtrace_max_frames(None)
        .wasm_backtrace_details(WasmBacktraceDetails::Disable)
        .generate_address_map(false)
        .parallel_compilation(true)
        // Everything off, then exactly the allowed set on.
        .wasm_features(WasmFeatures::all(), false)
        .wasm_features(allowed_features(), true)
        .allocation_strategy(allocation);
    let engine = Engine::new(&c).map_err(engine_err)?;
    let mut linker = Linker::new(&engine);
    host::register(&mut linker).map_err(engine_err)?;
    Ok(Backend { engine, linker })
}

/// Idle warm instances kept per module, and in all.
const IDLE_PER_MODULE: usize = 8;
const IDLE_TOTAL: usize = 64;

/// The pool's slots and the idle warm instances, under one lock.
///
/// Every live `Store` of a pooled module holds one slot, whether its call is running or it
/// waits idle for the next call, so the pool can never be exhausted by this runtime's own
/// instances: a call that finds no free slot takes one from an idle instance (of any module,
/// oldest first, dropping it), and only when every slot is held by a running call does it wait,
/// for a call to end. (Calls never nest: a host function never calls back into wasm, so waiting
/// cannot deadlock.) Instances of on-demand modules hold no slot; only the idle caps bound them.
pub(crate) struct Instances {
    state: Mutex<Slots>,
    freed: Condvar,
}

struct Slots {
    /// Pool slots not held by any instance.
    free: usize,
    /// Idle warm instances, oldest first.
    idle: Vec<Warm>,
    /// Callers waiting in [`Instances::lease`] (a `Condvar` notification is a system call, so it
    /// is made only when someone waits).
    waiting: usize,
}

impl Instances {
    fn new(slots: usize) -> Self {
        Self {
            state: Mutex::new(Slots {
                free: slots,
                idle: Vec::new(),
                waiting: 0,
            }),
            freed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Slots> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lease(&self, uid: u64, pooled: bool, reuse: bool) -> Lease<'_> {
        let mut lease = Lease {
            instances: self,
            slot: false,
            warm: None,
        };
        let mut state = self.lock();
        let evicted = loop {
            if reuse {
                if let Some(i) = state.idle.iter().rposition(|w| w.uid == uid) {
                    let warm = state.idle.remove(i);
                    lease.slot = warm.holds_slot;
                    lease.warm = Some(warm);
                    return lease;
                }
            }
            if !pooled {
                return lease;
            }
            if state.free > 0 {
                state.free -= 1;
                lease.slot = true;
                return lease;
            }
            if let Some(i) = state.idle.iter().position(|w| w.holds_slot) {
                // Its slot becomes this call's.
                lease.slot = true;
                break state.idle.remove(i);
            }
            state.waiting += 1;
            state = self.freed.wait(state).unwrap_or_else(|p| p.into_inner());
            state.waiting -= 1;
        };
        drop(state);
        // The evicted instance's slot returns to wasmtime's pool before the caller instantiates.
        drop(evicted);
        lease
    }

    /// Puts `warm` (reset, pristine) on the idle list; drops the oldest idle instance beyond the
    /// caps.
    fn keep(&self, warm: Warm) {
        let mut state = self.lock();
        let uid = warm.uid;
        state.idle.push(warm);
        let mut dropped = Vec::new();
        if state.idle.iter().filter(|w| w.uid == uid).count() > IDLE_PER_MODULE {
            let i = state
                .idle
                .iter()
                .position(|w| w.uid == uid)
                .expect("counted above");
            dropped.push(state.idle.remove(i));
        }
        if state.idle.len() > IDLE_TOTAL {
            dropped.push(state.idle.remove(0));
        }
        let waiting = state.waiting > 0;
        drop(state);
        self.release(dropped);
        if waiting {
            // A waiter may take this instance's slot.
            self.freed.notify_one();
        }
    }

    fn forget(&self, uid: u64) {
        let mut state = self.lock();
        let (gone, kept): (Vec<Warm>, Vec<Warm>) = std::mem::take(&mut state.idle)
            .into_iter()
            .partition(|w| w.uid == uid);
        state.idle = kept;
        drop(state);
        self.release(gone);
    }

    /// Drops `instances` (their stores first), then frees the slots they held.
    fn release(&self, instances: Vec<Warm>) {
        let slots = instances.iter().filter(|w| w.holds_slot).count();
        drop(instances);
        self.free_slots(slots);
    }

    fn free_slots(&self, n: usize) {
        if n > 0 {
            let mut state = self.lock();
            state.free += n;
            let waiting = state.waiting.min(n);
            drop(state);
            for _ in 0..waiting {
                self.freed.notify_one();
            }
        }
    }
}

/// What one call runs in (see [`Runtime::lease`]). Dropping it frees the slot it holds (drop the
/// call's `Store` first); [`Lease::keep`] instead hands the slot to an idle warm instance.
pub(crate) struct Lease<'a> {
    instances: &'a Instances,
    /// Whether this call holds a pool slot.
    slot: bool,
    /// The idle warm instance this call was given.
    warm: Option<Warm>,
}

impl Lease<'_> {
    /// The warm instance to run in, if one was idle.
    pub(crate) fn take_warm(&mut self) -> Option<Warm> {
        self.warm.take()
    }

    /// Whether this call holds a pool slot (its new instance then holds it while idle).
    #[cfg(test)]
    pub(crate) fn holds_slot(&self) -> bool {
        self.slot
    }

    /// Returns `warm` (this call's instance, reset) to the idle list, with this call's slot.
    pub(crate) fn keep(mut self, mut warm: Warm) {
        warm.holds_slot = std::mem::replace(&mut self.slot, false);
        self.instances.keep(warm);
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        drop(self.warm.take());
        if self.slot {
            self.instances.free_slots(1);
        }
    }
}

/// The resource limiter of one store, identical in both allocation modes:
/// - a memory may not start or grow past `memory_bytes` (`internal: memory limit exceeded`; a
///   growth past the module's own declared maximum is refused with `-1` as wasm specifies);
/// - a table may not start or grow past [`MAX_TABLE_ELEMENTS`] (`table.grow` returns `-1`);
/// - one instance, one memory, one table per store.
pub(crate) struct Limits {
    memory_bytes: usize,
}

impl ResourceLimiter for Limits {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.memory_bytes {
            return Err(wasmtime::Error::new(HostTrap::MemoryLimit));
        }
        Ok(maximum.is_none_or(|max| desired <= max))
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS && maximum.is_none_or(|max| desired <= max))
    }

    fn instances(&self) -> usize {
        1
    }

    fn tables(&self) -> usize {
        1
    }

    fn memories(&self) -> usize {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_hash_is_stable_and_covers_consensus_fields() {
        let base = RuntimeConfig::default();
        let h = base.config_hash();
        assert_eq!(h.len(), 64);
        assert_eq!(h, RuntimeConfig::default().config_hash());
        let changed = [
            RuntimeConfig {
                fuel_apply: 1,
                ..base.clone()
            },
            RuntimeConfig {
                fuel_end_block: 1,
                ..base.clone()
            },
            RuntimeConfig {
                memory_limit_bytes: 1 << 20,
                ..base.clone()
            },
        ];
        for c in changed {
            assert_ne!(c.config_hash(), h, "{c:?}");
        }
        // Not consensus: views, the allocation strategy, instance reuse and the opt level.
        let not_consensus = RuntimeConfig {
            fuel_view: 1,
            allocation: Allocation::OnDemand,
            reuse_instances: !base.reuse_instances,
            verify_reuse: !base.verify_reuse,
            opt_level: OptLevel::None,
            ..base.clone()
        };
        assert_eq!(not_consensus.config_hash(), h);
        let text = base.canonical_description();
        for needle in [
            "wasmtime=48.0.8",
            "abi_version=1",
            "gas.host_call_base=200",
            "fuel_apply=10000000",
            "instrumentation=dirty-chunks-v1,stack-height-v1\n",
            "stack_limit=32768\n",
            "max_wasm_stack=1048576\n",
            "validation.max_code_bytes=1048576\n",
            "validation.refused_features=relaxed_simd,simd,",
        ] {
            assert!(text.contains(needle), "{needle} missing from\n{text}");
        }
    }

    #[test]
    fn wasmtime_version_matches_the_lock_file() {
        let lock =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.lock")).unwrap();
        let expected = format!("name = \"wasmtime\"\nversion = \"{WASMTIME_VERSION}\"");
        assert!(
            lock.contains(&expected),
            "Cargo.lock has another wasmtime than {WASMTIME_VERSION}"
        );
    }

    #[test]
    fn both_allocation_strategies_build() {
        Runtime::new(RuntimeConfig::default()).unwrap();
        Runtime::new(RuntimeConfig {
            allocation: Allocation::OnDemand,
            ..RuntimeConfig::default()
        })
        .unwrap();
    }

    #[test]
    fn a_lease_holds_a_slot_until_dropped() {
        let instances = Instances::new(1);
        let lease = instances.lease(1, true, true);
        assert!(lease.holds_slot());
        assert_eq!(instances.lock().free, 0);
        drop(lease);
        assert_eq!(instances.lock().free, 1);
        // On-demand modules take no slot.
        let lease = instances.lease(1, false, true);
        assert!(!lease.holds_slot());
        assert_eq!(instances.lock().free, 1);
    }
}
