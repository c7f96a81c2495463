//! The [`Runtime`]: the `wasmtime::Engine`s of a node (for each compiler, Cranelift and Winch:
//! pooled, plus an on-demand fallback) with the chain's deterministic configuration
//! (`config.rs`), their `Linker`s with every host import, and the instance pool (`pool.rs`).

use std::sync::Arc;

use wasmtime::{
    Config, Engine, InstanceAllocationStrategy, Linker, PoolingAllocationConfig, Strategy,
    WasmBacktraceDetails, WasmFeatures,
};

use crate::abi::{allowed_features, MAX_TABLE_ELEMENTS};
use crate::config::{
    Allocation, Compiler, OptLevel, RuntimeConfig, MAX_WASM_STACK, MEMORY_KEEP_RESIDENT,
    TABLE_KEEP_RESIDENT,
};
use crate::run::host::HostState;
use crate::run::imports;
use crate::run::limits::Limits;
use crate::run::pool::{Instances, Lease};
use crate::run::trap::HostError;

/// One wasmtime engine and its linker (every host import registered).
pub(crate) struct Backend {
    pub(crate) engine: Engine,
    pub(crate) linker: Linker<HostState>,
}

/// The engines of one compiler: pooled (when the runtime pools) and on demand.
pub(crate) struct Backends {
    pub(crate) pooled: Option<Backend>,
    pub(crate) on_demand: Backend,
}

/// The wasm engine of a node: compiled modules of one `Runtime` share its code, host functions
/// and instance pool. Create one per process and share it behind an `Arc`.
///
/// With [`Allocation::Pooling`] it holds, for each [`Compiler`], two engines with the same
/// configuration apart from the allocator: a module is compiled for the pooled one, and only a
/// module the pool's fixed slot sizes cannot hold (e.g. a very large instance context) falls
/// back to the on-demand one. So which modules load, and how they run, never depends on the
/// allocation strategy. The pools of the two compilers share one count of slots (`instances`):
/// together they never hold more instances than the configuration allows.
pub struct Runtime {
    /// Pool slots and idle warm instances (first, so idle stores are dropped before the engines).
    instances: Instances,
    pub(crate) config: RuntimeConfig,
    cranelift: Backends,
    winch: Backends,
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
        let slots = match config.allocation {
            Allocation::Pooling { instances } => instances as usize,
            Allocation::OnDemand => 0,
        };
        let cranelift = backends(&config, Compiler::Cranelift)?;
        let winch = backends(&config, Compiler::Winch)?;
        Ok(Arc::new(Self {
            instances: Instances::new(slots),
            config,
            cranelift,
            winch,
        }))
    }

    /// The configuration this runtime was built with.
    pub fn config(&self) -> &RuntimeConfig {
        &self.config
    }

    /// The engines of `compiler`.
    pub(crate) fn backends(&self, compiler: Compiler) -> &Backends {
        match compiler {
            Compiler::Cranelift => &self.cranelift,
            Compiler::Winch => &self.winch,
        }
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

/// The engines of `compiler` for `config`'s allocation.
fn backends(config: &RuntimeConfig, compiler: Compiler) -> Result<Backends, HostError> {
    let pooled = match config.allocation {
        Allocation::Pooling { instances } => {
            // The pool's own `max_memory_size` stays at its default: a slot reserves the
            // 4 GiB static-bounds region anyway, and the memory limit is enforced in one
            // place (`Limits`, plus the load-time check), identically in every engine.
            let mut p = PoolingAllocationConfig::new();
            p.total_core_instances(instances)
                .total_memories(instances)
                .total_tables(instances)
                .max_memories_per_module(1)
                .max_tables_per_module(1)
                .table_elements(MAX_TABLE_ELEMENTS)
                .linear_memory_keep_resident(MEMORY_KEEP_RESIDENT.min(config.memory_limit_bytes))
                .table_keep_resident(TABLE_KEEP_RESIDENT);
            Some(backend(
                InstanceAllocationStrategy::Pooling(p),
                compiler,
                config.opt_level,
            )?)
        }
        Allocation::OnDemand => None,
    };
    let on_demand = backend(
        InstanceAllocationStrategy::OnDemand,
        compiler,
        config.opt_level,
    )?;
    Ok(Backends { pooled, on_demand })
}

/// An engine with the chain's deterministic configuration, `allocation`, `compiler` and (for
/// Cranelift) `opt_level`, and its linker. NaN canonicalisation is a setting both compilers
/// obey.
fn backend(
    allocation: InstanceAllocationStrategy,
    compiler: Compiler,
    opt_level: OptLevel,
) -> Result<Backend, HostError> {
    let engine_err = |e: wasmtime::Error| HostError::Engine(format!("{e:?}"));
    let engine = engine(allocation, compiler, opt_level)?;
    let mut linker = Linker::new(&engine);
    imports::register(&mut linker).map_err(engine_err)?;
    Ok(Backend { engine, linker })
}

/// A bare engine with the chain's deterministic configuration (no linker): what [`backend`]
/// builds on, and what a tier-up compile outside the node's process uses (`tier.rs`).
pub(crate) fn engine(
    allocation: InstanceAllocationStrategy,
    compiler: Compiler,
    opt_level: OptLevel,
) -> Result<Engine, HostError> {
    let engine_err = |e: wasmtime::Error| HostError::Engine(format!("{e:?}"));
    let mut c = Config::new();
    c.strategy(match compiler {
        Compiler::Cranelift => Strategy::Cranelift,
        Compiler::Winch => Strategy::Winch,
    });
    // Fuel is counted by the module's own instrumentation (`load/instrument/meter.rs`), the same
    // under both compilers; wasmtime's own count would differ between them.
    c.consume_fuel(false)
        .epoch_interruption(false)
        .cranelift_nan_canonicalization(true)
        .cranelift_opt_level(opt_level.wasmtime())
        .max_wasm_stack(MAX_WASM_STACK)
        // Traps carry no backtrace: cheaper, and nothing build-dependent to leak.
        .wasm_backtrace_max_frames(None)
        .wasm_backtrace_details(WasmBacktraceDetails::Disable)
        .generate_address_map(false)
        // Functions compile on every core, except in fuzz builds: there each core runs its own
        // fuzzer, and idle compile threads spinning for work took time from the other one.
        .parallel_compilation(!cfg!(feature = "fuzzing"))
        // Everything off, then exactly the allowed set on.
        .wasm_features(WasmFeatures::all(), false)
        .wasm_features(allowed_features(), true)
        .allocation_strategy(allocation);
    Engine::new(&c).map_err(engine_err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Allocation, RuntimeConfig};

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
