//! Tier-up: a module loaded with Winch (uploads, `config.rs`) replaced by the same module compiled
//! with Cranelift, its machine code made elsewhere ([`precompile`], which a node runs in a
//! child process under a time and memory budget) and brought in by [`WasmModule::tier_up`].
//!
//! Not consensus, like the compiler itself: the tiered module runs the same instrumented code,
//! so every result, receipt, fuel figure and trap is the one Winch gives (fuel is the
//! instrumentation's count, `load/instrument/meter.rs`). Only the speed changes.
//!
//! [`Precompiled`] is machine code wasmtime will run without checking it: it can only be made
//! by [`precompile`] in this build, or declared trusted by `unsafe` code (the node's, for the
//! bytes its own child process wrote on a pipe only it holds).

use std::sync::{Arc, OnceLock};

use sha2::{Digest, Sha256};
use wasmtime::{Engine, InstanceAllocationStrategy, Module};

use crate::cache::{Build, ModuleCache};
use crate::config::{Compiler, OptLevel};
use crate::run::engine::engine;
use crate::run::module::{instrumented, Compiled, WasmModule};

/// Machine code of one instrumented module, as wasmtime's `Engine::precompile_module` writes it.
#[derive(Debug, Clone)]
pub struct Precompiled(Vec<u8>);

impl Precompiled {
    /// Declares `bytes` to be [`precompile`]'s output in a process of this same build.
    ///
    /// # Safety
    /// wasmtime runs the machine code in `bytes` as it is (it checks the artifact's header and
    /// engine, not the code): bytes from anywhere else can do anything the process can.
    pub unsafe fn from_trusted(bytes: Vec<u8>) -> Self {
        Self(bytes)
    }

    /// The artifact's bytes (to send from the compiling process to the node).
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }
}

/// Compiles `instrumented` (the bytes [`WasmModule::tier_up`] hands its `compile`) with Cranelift at `opt_level`, for a
/// [`WasmModule::tier_up`] in another process of this build. Single-threaded callers should set
/// `RAYON_NUM_THREADS` (wasmtime compiles functions in parallel). Errors: wasmtime's text (not
/// consensus: a failed tier-up leaves the module on Winch).
pub fn precompile(opt_level: OptLevel, instrumented: &[u8]) -> Result<Precompiled, String> {
    // One engine per level for the process (building one takes longer than compiling a small
    // module).
    static ENGINES: [OnceLock<Result<Engine, String>>; 3] =
        [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let slot = OptLevel::ALL
        .iter()
        .position(|l| *l == opt_level)
        .expect("every level is in ALL");
    let engine = ENGINES[slot]
        .get_or_init(|| {
            engine(
                InstanceAllocationStrategy::OnDemand,
                Compiler::Cranelift,
                opt_level,
            )
            .map_err(|e| format!("{e:?}"))
        })
        .as_ref()
        .map_err(Clone::clone)?;
    engine
        .precompile_module(instrumented)
        .map(Precompiled)
        .map_err(|e| format!("{e:#}"))
}

/// Why a tier-up did not happen (node logs and metrics only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TierUpError {
    /// The module already runs Cranelift's code.
    AlreadyCranelift,
    /// The bytes given are not the module's code (their SHA-256 is not its code hash).
    WrongCode,
    /// The compile failed or ran out of its budget (the compiler's or the node's text).
    Compile(String),
    /// The compiled code did not load (wasmtime refused the artifact, or the load-time checks
    /// failed, which the Winch module passed: a bug).
    Load(String),
}

impl std::fmt::Display for TierUpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::AlreadyCranelift => f.write_str("the module already runs Cranelift's code"),
            Self::WrongCode => f.write_str("the bytes given are not the module's code"),
            Self::Compile(e) => write!(f, "the Cranelift compile failed: {e}"),
            Self::Load(e) => write!(f, "the Cranelift code did not load: {e}"),
        }
    }
}

impl std::error::Error for TierUpError {}

impl WasmModule {
    /// This module (`wasm` is its code, the bytes it was loaded from) compiled by Cranelift, as
    /// a new module to use in its place: the machine code comes from `cache` when it holds it
    /// (`compiler=cranelift`), else from `compile`, which is given the bytes to compile (`wasm`
    /// validated and instrumented exactly as at load; [`precompile`] them), and is then stored
    /// in `cache`. The new module runs under the same id, in
    /// the same kind of engine (pooled or not), with the same plan, and gives the same results
    /// and fuel as this one. Calls already running on this one finish on it.
    ///
    /// Errors: [`TierUpError`]; the module then stays as it is.
    pub fn tier_up(
        &self,
        wasm: &[u8],
        cache: Option<&ModuleCache>,
        compile: impl FnOnce(&[u8]) -> Result<Precompiled, String>,
    ) -> Result<WasmModule, TierUpError> {
        if self.compiler() == Compiler::Cranelift {
            return Err(TierUpError::AlreadyCranelift);
        }
        let code_hash = hex::encode(Sha256::digest(wasm));
        if code_hash != self.code_hash() {
            return Err(TierUpError::WrongCode);
        }
        let runtime = Arc::clone(self.runtime());
        let (bytes, plan, schema) =
            instrumented(&runtime, wasm).map_err(|e| TierUpError::Load(e.to_string()))?;
        let backends = runtime.backends(Compiler::Cranelift);
        let (engine, backend) = match &backends.pooled {
            Some(b) if self.pooled() => (&b.engine, "pooled"),
            _ => (&backends.on_demand.engine, "on_demand"),
        };
        let compile_error = std::cell::RefCell::new(None);
        let make = || {
            let artifact = compile(&bytes).map_err(|e| {
                *compile_error.borrow_mut() = Some(e.clone());
                wasmtime::Error::msg(e)
            })?;
            // SAFETY: a `Precompiled` is `precompile`'s output in this build, or bytes its maker
            // vouched for (`Precompiled::from_trusted`); wasmtime checks the header and engine.
            unsafe { Module::deserialize(engine, artifact.bytes()) }
        };
        let built = match cache {
            Some(cache) => {
                let config_hash = runtime.config.config_hash();
                let build = Build {
                    config_hash: &config_hash,
                    opt_level: runtime.config.opt_level,
                    compiler: Compiler::Cranelift,
                    backend,
                };
                cache.get_or_build(engine, build, &bytes, make)
            }
            None => crate::cache::CodeSource::time(make),
        };
        let (module, source) = built.map_err(|e| match compile_error.take() {
            Some(text) => TierUpError::Compile(text),
            None => TierUpError::Load(format!("{e:#}")),
        })?;
        WasmModule::assemble(
            &runtime,
            self.id(),
            code_hash,
            Compiled {
                module,
                compiler: Compiler::Cranelift,
                pooled: self.pooled(),
                source,
            },
            plan,
            schema,
        )
        .map_err(|e| TierUpError::Load(e.to_string()))
    }
}
