//! The engine: the chain's runtime configuration ([`RuntimeConfig`]), its consensus hash
//! ([`RuntimeConfig::config_hash`]), and the [`Runtime`] that owns the `wasmtime::Engine`s (pooled,
//! plus an on-demand fallback), their `Linker`s with every host import, the instance-pool gate and
//! the per-store resource limiter.
//!
//! Determinism choices (each one is in the config hash):
//! - fuel metering on (`consume_fuel`), wasmtime 48's default per-operator costs; no epoch
//!   interruption, no clock, no WASI;
//! - NaN canonicalisation on, so float results have the same bits everywhere;
//! - the wasm feature set is spelled out rather than taken from wasmtime's defaults: exactly
//!   ABI.md's "Wasm features" (no SIMD, relaxed SIMD, threads, memory64, exceptions, GC, tail
//!   calls, multi-memory, component model, …);
//! - one memory, at most `memory_limit_bytes`; one table of at most [`MAX_TABLE_ELEMENTS`]
//!   entries; a fixed native stack budget for wasm ([`MAX_WASM_STACK`]).
//!
//! Allocation (pooling or on demand) is not consensus: both enforce the same limits through the
//! same [`Limits`]; a module too large for a pool slot runs on the on-demand engine; a caller
//! waits for a free slot ([`Gate`]), and a slot wasmtime still refuses is a [`HostError`], never a
//! receipt.

use std::sync::{Arc, Condvar, Mutex};

use sha2::{Digest, Sha256};
use wasmtime::{
    Config, Engine, InstanceAllocationStrategy, Linker, OptLevel, PoolingAllocationConfig,
    ResourceLimiter, WasmBacktraceDetails, WasmFeatures,
};

use crate::gas::GAS_V1;
use crate::host::{self, HostState};
use crate::trap::{HostError, HostTrap};

/// The ABI version this runtime serves (the `gamechain_v1` import module).
pub const ABI_VERSION: u32 = 1;

/// The wasmtime release fuel and trap semantics come from. Pinned with `=` in `Cargo.toml`; a
/// test checks `Cargo.lock` agrees.
pub const WASMTIME_VERSION: &str = "48.0.8";

/// Most entries in the module's one table (a Rust module's table holds its address-taken
/// functions, usually a few hundred). Same bound as wasmtime's pooling default.
pub const MAX_TABLE_ELEMENTS: usize = 20_000;

/// Native stack, in bytes, that wasm code may use before `internal: trap: stack overflow`
/// (wasmtime's default). The depth this allows depends on the machine code Cranelift emits, so
/// it is identical across nodes of one architecture.
pub const MAX_WASM_STACK: usize = 512 * 1024;

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
        }
    }
}

impl RuntimeConfig {
    /// The canonical text [`config_hash`](Self::config_hash) hashes: `key=value` lines covering
    /// everything that changes a receipt, the state or the fuel used: ABI version, wasmtime
    /// version, features, NaN canonicalisation, operator costs, stack, table and memory limits,
    /// fuel limits for apply and end_block, the gas table and the scan cap.
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
    pub(crate) config: RuntimeConfig,
    pooled: Option<(Backend, Gate)>,
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
                Some((
                    backend(InstanceAllocationStrategy::Pooling(p))?,
                    Gate::new(instances as usize),
                ))
            }
            Allocation::OnDemand => None,
        };
        let on_demand = backend(InstanceAllocationStrategy::OnDemand)?;
        Ok(Arc::new(Self {
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
        self.pooled.as_ref().map(|(b, _)| b)
    }

    /// The on-demand backend (the only one without pooling, the fallback with it).
    pub(crate) fn on_demand(&self) -> &Backend {
        &self.on_demand
    }

    /// Waits for a pool slot. Hold the permit while the call's `Store` lives.
    pub(crate) fn slot(&self) -> Option<Permit<'_>> {
        self.pooled.as_ref().map(|(_, gate)| gate.acquire())
    }

    /// Fresh per-store limits for one call.
    pub(crate) fn limits(&self) -> Limits {
        Limits {
            memory_bytes: self.config.memory_limit_bytes,
        }
    }
}

/// An engine with the chain's deterministic configuration and `allocation`, and its linker.
fn backend(allocation: InstanceAllocationStrategy) -> Result<Backend, HostError> {
    let engine_err = |e: wasmtime::Error| HostError::Engine(format!("{e:?}"));
    let mut c = Config::new();
    c.consume_fuel(true)
        .epoch_interruption(false)
        .cranelift_nan_canonicalization(true)
        .cranelift_opt_level(OptLevel::Speed)
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

/// A counting semaphore over the pool's slots: with every call holding a permit while its
/// `Store` lives, the pool can never be exhausted by this runtime's own calls, so a busy node
/// waits for a slot instead of failing a transaction. (Calls never nest: a host function never
/// calls back into wasm, so waiting cannot deadlock.)
struct Gate {
    free: Mutex<usize>,
    freed: Condvar,
}

impl Gate {
    fn new(slots: usize) -> Self {
        Self {
            free: Mutex::new(slots),
            freed: Condvar::new(),
        }
    }

    fn acquire(&self) -> Permit<'_> {
        let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
        while *free == 0 {
            free = self.freed.wait(free).unwrap_or_else(|p| p.into_inner());
        }
        *free -= 1;
        Permit(self)
    }
}

/// One pool slot, released on drop.
pub(crate) struct Permit<'a>(&'a Gate);

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        let mut free = self.0.free.lock().unwrap_or_else(|p| p.into_inner());
        *free += 1;
        self.0.freed.notify_one();
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
        // Not consensus: views and the allocation strategy.
        assert_eq!(
            RuntimeConfig {
                fuel_view: 1,
                allocation: Allocation::OnDemand,
                ..base.clone()
            }
            .config_hash(),
            h
        );
        let text = base.canonical_description();
        for needle in [
            "wasmtime=48.0.8",
            "abi_version=1",
            "gas.host_call_base=200",
            "fuel_apply=10000000",
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
    fn the_gate_blocks_at_zero_and_releases_on_drop() {
        let gate = Gate::new(1);
        let p = gate.acquire();
        assert_eq!(*gate.free.lock().unwrap(), 0);
        drop(p);
        assert_eq!(*gate.free.lock().unwrap(), 1);
    }
}
