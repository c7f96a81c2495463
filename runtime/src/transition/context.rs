//! [`ChainContext`]: the genesis, the runtime and the module registry one chain runs with, and
//! the checks that this build can run that chain.

use super::*;
use gamechain_vm::WasmModule;

/// Most threads [`ChainContext`] uses for signature checks by default.
pub const MAX_VERIFY_THREADS: usize = 8;
/// Fewest transactions per thread for which [`check_txs`] starts a thread (a signature check is
/// ~25 µs, starting a scoped thread ~20 µs).
pub const MIN_TXS_PER_THREAD: usize = 8;

/// Everything fixed for a chain: its genesis, the runtime and the loaded modules, checked
/// against each other by [`ChainContext::new`].
pub struct ChainContext {
    pub(super) genesis: Genesis,
    pub(super) runtime: Arc<Runtime>,
    pub(super) modules: Modules,
    pub(super) verify_threads: usize,
    /// The state hash's per-entry vectors of recently written keys (speed only: never a
    /// result; `gamechain_chain::element_cache`).
    pub(super) element_cache: ElementCache,
}

impl fmt::Debug for ChainContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChainContext")
            .field("genesis", &self.genesis)
            .field("runtime_config", self.runtime.config())
            .field("modules", &self.modules)
            .field("verify_threads", &self.verify_threads)
            .field("element_cache", &self.element_cache)
            .finish()
    }
}

/// Why a [`ChainContext`] cannot be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContextError {
    /// The genesis file is not valid.
    Genesis(GenesisError),
    /// The runtime (or a module's runtime) does not run under genesis's configuration.
    Runtime(String),
    /// A loaded module belongs to another runtime.
    Modules(String),
}

impl fmt::Display for ContextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Genesis(e) => write!(f, "{e}"),
            Self::Runtime(m) => write!(f, "runtime does not match genesis: {m}"),
            Self::Modules(m) => write!(f, "modules do not match the context: {m}"),
        }
    }
}

impl std::error::Error for ContextError {}

/// `Err` naming the first consensus setting of `config` that differs from `genesis`.
pub(super) fn check_runtime(genesis: &Genesis, config: &RuntimeConfig) -> Result<(), String> {
    let pairs = [
        ("fuel_apply", genesis.fuel_apply, config.fuel_apply),
        (
            "fuel_end_block",
            genesis.fuel_end_block,
            config.fuel_end_block,
        ),
        (
            "memory_limit_bytes",
            genesis.memory_limit_bytes,
            config.memory_limit_bytes as u64,
        ),
    ];
    for (name, want, have) in pairs {
        if want != have {
            return Err(format!("{name} is {have}, genesis says {want}"));
        }
    }
    let hash = config.config_hash();
    if hash != genesis.engine_config_hash {
        return Err(format!(
            "engine config hash is {hash}, genesis says {} (another wasmtime, gas table, fuel metering or ABI)",
            genesis.engine_config_hash
        ));
    }
    Ok(())
}

/// The default of [`ChainContext::with_verify_threads`]: the machine's parallelism, at most
/// [`MAX_VERIFY_THREADS`].
pub fn default_verify_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(MAX_VERIFY_THREADS)
}

impl ChainContext {
    /// Checks that `genesis` is valid and that `runtime` and every module already loaded in
    /// `modules` run under genesis's fuel and memory limits and `engine_config_hash`. (Which
    /// modules exist is the state's business: `modules` may hold any, or none; see
    /// [`Modules`].)
    pub fn new(
        genesis: Genesis,
        runtime: Arc<Runtime>,
        modules: Modules,
    ) -> Result<Self, ContextError> {
        genesis.validate().map_err(ContextError::Genesis)?;
        check_runtime(&genesis, runtime.config()).map_err(ContextError::Runtime)?;
        for entry in modules.iter() {
            let id = entry.module.id();
            check_runtime(&genesis, entry.module.runtime().config())
                .map_err(|m| ContextError::Runtime(format!("module `{id}`: {m}")))?;
            if !Arc::ptr_eq(entry.module.runtime(), &runtime) {
                return Err(ContextError::Modules(format!(
                    "module `{id}` was loaded into another runtime than the context's"
                )));
            }
        }
        Ok(Self {
            genesis,
            runtime,
            modules,
            verify_threads: default_verify_threads(),
            element_cache: ElementCache::default(),
        })
    }

    /// Sets how many threads [`execute_block`] checks signatures on (at least 1; the result never
    /// depends on it). Default: the machine's parallelism, at most [`MAX_VERIFY_THREADS`].
    pub fn with_verify_threads(mut self, threads: usize) -> Self {
        self.verify_threads = threads.max(1);
        self
    }

    /// The genesis.
    pub fn genesis(&self) -> &Genesis {
        &self.genesis
    }

    /// The runtime.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    /// The compiled modules.
    pub fn modules(&self) -> &Modules {
        &self.modules
    }

    /// The module `id` as of `state` (a block overlay, or a node's committed state): `None`
    /// when `state` has no `module/<id>`. See [`Modules::resolve`].
    pub fn module(
        &self,
        state: &dyn State,
        id: &str,
    ) -> Result<Option<ModuleEntry>, TransitionError> {
        self.modules
            .resolve(&self.runtime, state, id)
            .map_err(TransitionError::from)
    }

    /// Threads used for signature checks.
    pub fn verify_threads(&self) -> usize {
        self.verify_threads
    }

    /// The memo of state-hash vectors every block built or replayed with this context shares.
    pub fn element_cache(&self) -> &ElementCache {
        &self.element_cache
    }
}

// ---------------------------------------------------------------------------------------------
// Errors, inputs, outputs

/// Raw state read through a module's view of it (what `call_pure` hands the resolver).
struct ReadState<'a>(&'a dyn gamechain_sdk::StateRead);

impl State for ReadState<'_> {
    fn get(&self, key: &str) -> Option<Vec<u8>> {
        self.0.read_raw(key)
    }
    fn scan(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> Vec<(String, Vec<u8>)> {
        self.0.scan_raw(prefix, start_after, limit)
    }
}

/// `call_pure` finds modules as a transaction does: the record `module/<id>` in the state the
/// caller sees, the compiled module from this context's registry.
impl gamechain_vm::ModuleResolver for ChainContext {
    fn resolve(
        &self,
        state: &dyn gamechain_sdk::StateRead,
        id: &str,
    ) -> Result<Option<Arc<WasmModule>>, HostError> {
        match self.modules.resolve(&self.runtime, &ReadState(state), id) {
            Ok(entry) => Ok(entry.map(|e| e.module)),
            Err(crate::ResolveError::Host(e)) => Err(e),
            Err(other) => Err(HostError::Engine(other.to_string())),
        }
    }

    /// `call_code` finds code by hash in the code store of the state the caller sees
    /// ([`Modules::resolve_code`]).
    fn resolve_code(
        &self,
        state: &dyn gamechain_sdk::StateRead,
        code_hash: &[u8; 32],
    ) -> Result<Option<(Arc<WasmModule>, usize)>, HostError> {
        let hex = hex::encode(code_hash);
        match self
            .modules
            .resolve_code(&self.runtime, &ReadState(state), &hex)
        {
            Ok(found) => Ok(found),
            Err(crate::ResolveError::Host(e)) => Err(e),
            Err(other) => Err(HostError::Engine(other.to_string())),
        }
    }
}
