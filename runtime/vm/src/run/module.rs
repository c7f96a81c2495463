//! [`WasmModule`]: one guest module, compiled and validated once, called many times.
//!
//! Owns the load path (validation by `validate.rs` first, then instrumentation by
//! `instrument/`, compilation, and the check that `gc_abi_version` returns 1), the per-call
//! driver (a fresh
//! instance from the prebuilt `InstancePre`, inputs placed through `gc_alloc`, the entry point's
//! return code and `output` interpreted), and `impl GameModule`, so the same test body can run a
//! module natively against `MockCtx` or through wasm. Also [`ModuleResolver`], how a call finds
//! the modules and code its `call_pure`s and `call_code`s name, and the two traits through which
//! the host functions of `pure.rs` reach a `WasmModule` and a resolver (`nesting.rs`).
//!
//! Every call starts from the state of a fresh instance (ABI.md). Everything that can be done
//! once per module (instrumentation, compilation, import resolution, export lookup by index, the
//! pristine snapshot) is done in [`WasmModule::new`]. A call then runs in one of:
//!
//! - **a fresh instance** (`Store` + instance from the pool, dropped after the call): always for
//!   a module `instrument/` cannot reset, and for every module with
//!   [`RuntimeConfig::reuse_instances`](crate::RuntimeConfig) off;
//! - **a warm instance**: an instance an earlier call of this module left, reset to pristine.
//!   After a call that returned normally (return code 0 or 1) the host restores the memory
//!   chunks the module marked in its `dirty` global plus those the host itself wrote (inputs
//!   placed through `gc_alloc`, output buffers), every mutable global, and `dirty`, from the
//!   snapshot taken right after the module's first instantiation; then the instance waits on
//!   the runtime's idle list (`engine.rs`, [`Instances`](crate::run::engine::Instances)). An instance
//!   whose call trapped (including running out of fuel and every host trap) or whose memory
//!   grew is dropped instead, so the next call instantiates afresh. Tables and passive segments
//!   need no reset: a reusable module cannot change them (`instrument/`).
//!
//! **Identical results.** The same instrumented code runs both ways, from the same state, with
//! the same fuel left when the entry point starts: a fresh instance is given `fuel` and its
//! start function uses some; a warm one is given `fuel - start_fuel`, the start function's fuel
//! measured at load. (That is deterministic: a reusable module's start function cannot reach a
//! host import or an indirect call, so it computes the same thing every time.) A call with no
//! more fuel than that runs in a fresh instance. [`RuntimeConfig::verify_reuse`](crate::RuntimeConfig)
//! checks every reset against the whole snapshot.

use core::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use gamechain_sdk::{ActionError, Ctx, GameModule, Migration, Query, StateRead};
use serde_json::Value;
use sha2::{Digest, Sha256};
use wasmtime::{
    Extern, Global, Instance, InstancePre, Memory, Module, ModuleExport, Store, TypedFunc,
    WasmParams, WasmResults,
};

use crate::abi::ABI_VERSION;
use crate::cache::{Build, CodeSource, ModuleCache};
use crate::config::{Compiler, Origin};
use crate::load::instrument::{self, Plan};
use crate::load::stack::STACK_LIMIT;
use crate::load::validate;
use crate::run::engine::Runtime;
use crate::run::fuel;
use crate::run::host::{span, HostState, Target};
pub use crate::run::load_error::LoadError;
use crate::run::nesting::{
    Callee, Nesting, PureError, PureOutcome, Resolve, MAX_PURE_OUTPUT_BYTES,
};
use crate::run::pool::Lease;
use crate::run::trap::{classify, HostError, HostTrap};
use crate::run::warm::{reset, verify, Handles, Pristine, Warm, NEW_INSTANCE};

/// Finds the module an id names, as of the state the calling entry point sees. The node's is
/// `gamechain_runtime::ChainContext` (module records in state, compiled modules in its registry).
pub trait ModuleResolver {
    /// The module `id` as of `state`; `Ok(None)` when there is none. `Err` is a node failure
    /// (no receipt).
    fn resolve(
        &self,
        state: &dyn StateRead,
        id: &str,
    ) -> Result<Option<Arc<WasmModule>>, HostError>;

    /// The code whose SHA-256 is `code_hash`, as of `state` (the content-addressed code store
    /// `code/<hex>`: what a hash names never changes, only whether it is stored yet), compiled,
    /// and its length in bytes; `Ok(None)` when `state` holds no such code or it does not load
    /// as a module (both are `call_code`'s `-1`). `Err` is a node failure (no receipt). The
    /// default finds no code.
    fn resolve_code(
        &self,
        state: &dyn StateRead,
        code_hash: &[u8; 32],
    ) -> Result<Option<(Arc<WasmModule>, usize)>, HostError> {
        let _ = (state, code_hash);
        Ok(None)
    }
}

/// A resolver as the host functions see it: its modules as [`Callee`]s.
impl Resolve for &dyn ModuleResolver {
    fn resolve(
        &self,
        state: &dyn StateRead,
        id: &str,
    ) -> Result<Option<Arc<dyn Callee>>, HostError> {
        let module = ModuleResolver::resolve(*self, state, id)?;
        Ok(module.map(|m| m as Arc<dyn Callee>))
    }

    fn resolve_code(
        &self,
        state: &dyn StateRead,
        code_hash: &[u8; 32],
    ) -> Result<Option<(Arc<dyn Callee>, usize)>, HostError> {
        let code = ModuleResolver::resolve_code(*self, state, code_hash)?;
        Ok(code.map(|(m, len)| (m as Arc<dyn Callee>, len)))
    }
}

/// The nesting of a call the node (or a test) makes with `resolver`: depth 0.
///
/// # Safety
/// As [`Nesting::top`]: the value must not be used after the borrow of `resolver` (the caller's
/// argument, which the nesting points at) ends.
unsafe fn top(resolver: &Option<&dyn ModuleResolver>) -> Nesting {
    // SAFETY: passed on to the caller.
    unsafe { Nesting::top(resolver.as_ref().map(|r| r as &dyn Resolve)) }
}

/// What one entry-point call produced.
#[derive(Debug, Clone, PartialEq)]
pub struct CallOutcome<T> {
    /// The entry point's result, or the receipt error (a module error object, or one of the
    /// fixed `internal: …` texts of ABI.md).
    pub result: Result<T, ActionError>,
    /// Fuel consumed: instantiation (start function), `gc_alloc`, the entry point and its host
    /// calls, counting the instructions `instrument/` added. Equal to the limit when the call
    /// ran out of fuel. A call served by a reused instance is charged exactly the same: the
    /// start function's fuel (measured once at load) is charged to it as if it had run.
    pub fuel_used: u64,
    /// Lines the module sent to `log` (and an `abort` message), for the node's log only: never
    /// part of a receipt or a hash. At most 64 lines of 1 KiB.
    pub log: Vec<String>,
}

/// Export indices resolved once at load.
struct Exports {
    memory: ModuleExport,
    abi_version: ModuleExport,
    alloc: ModuleExport,
    apply: ModuleExport,
    view: ModuleExport,
    end_block: Option<ModuleExport>,
    migrate: Option<ModuleExport>,
    scheduled: Option<ModuleExport>,
    /// The instrumentation's `dirty` global and the module's mutable globals.
    dirty: ModuleExport,
    globals: Vec<ModuleExport>,
    /// The stack-height global (`stack.rs`).
    stack: ModuleExport,
    /// The fuel counter global (`meter.rs`).
    fuel: ModuleExport,
    /// The module's start function, called right after instantiation.
    start: Option<ModuleExport>,
}

/// Source of [`WasmModule`]'s `uid`s.
static NEXT_UID: AtomicU64 = AtomicU64::new(1);

/// Which entry point a call runs, with its inputs.
enum Entry<'a> {
    AbiVersion,
    Apply {
        sender: &'a [u8],
        op: &'a [u8],
    },
    View {
        query: &'a [u8],
    },
    EndBlock,
    /// `gc_scheduled(id, payload)`: a call the module scheduled.
    Scheduled {
        id: u64,
        payload: &'a [u8],
    },
    Migrate {
        sender: &'a [u8],
        input: &'a [u8],
    },
    /// `gc_pure_<name>` (export name given whole), called by `call_pure` (`pure.rs`).
    Pure {
        export: &'a str,
        input: &'a [u8],
    },
}

/// Return codes of a pure entry point's call inside [`Raw`] (the export's own `i64` is decoded
/// in `invoke`): 0 ok (output set), 1 refused, 3 output too large, 4 output range outside memory.
const PURE_OK: i32 = 0;
const PURE_REFUSED: i32 = 1;
const PURE_TOO_LARGE: i32 = 3;
const PURE_BAD_RANGE: i32 = 4;

/// The raw result of a call: the entry point's return value and `output` bytes, or the error.
struct Raw {
    result: Result<(i32, Option<Vec<u8>>), ActionError>,
    fuel_used: u64,
    log: Vec<String>,
}

/// A loaded guest module. Cheap to share (`Arc`); calls may run concurrently from many threads.
pub struct WasmModule {
    pub(crate) runtime: Arc<Runtime>,
    /// Whether the module runs on the pooled engine (else on the on-demand one).
    pooled: bool,
    /// The compiler of its machine code.
    compiler: Compiler,
    pub(crate) id: &'static str,
    code_hash: String,
    pre: InstancePre<HostState>,
    exports: Exports,
    /// Identifies this module's warm instances in the runtime's idle list.
    uid: u64,
    /// How instances are reset.
    pub(crate) plan: Plan,
    /// The pristine snapshot; `Some` exactly when instances of this module may be reused.
    pristine: Option<Pristine>,
    /// Instances created so far (see [`WasmModule::instantiations`]).
    instantiations: AtomicU64,
    /// Whether the machine code was compiled or read from a [`ModuleCache`], and how long it took.
    source: CodeSource,
    /// The module's schema, its valid `gamechain.schema` section (validation rule 9).
    schema: Option<Arc<str>>,
}

impl Drop for WasmModule {
    fn drop(&mut self) {
        self.runtime.forget_module(self.uid);
    }
}

impl fmt::Debug for WasmModule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WasmModule")
            .field("id", &self.id)
            .field("code_hash", &self.code_hash)
            .finish()
    }
}

impl WasmModule {
    /// Validates (`validate.rs`), instruments (`instrument/`) and compiles `wasm` (a binary
    /// module) as module `id`, and checks `gc_abi_version` in a first instance.
    ///
    /// Errors: see [`LoadError`]; each names the rule broken, in a fixed text.
    /// The code is treated as uploaded ([`Origin::Upload`]: compiled by the runtime's
    /// `upload_compiler`).
    pub fn new(runtime: &Arc<Runtime>, id: &str, wasm: &[u8]) -> Result<Self, LoadError> {
        Self::load(runtime, id, wasm, None, Origin::Upload)
    }

    /// [`WasmModule::new`], taking the compiled machine code from `cache` when it holds a valid
    /// entry for these bytes and this engine, and storing it there after compiling otherwise
    /// (`cache.rs`). Validation always runs first, cache or not. The result, including every
    /// [`LoadError`], is the same with or without a cache: only [`WasmModule::code_source`]
    /// differs. `origin` picks the compiler ([`crate::RuntimeConfig::compiler_for`]); neither the
    /// result nor any fuel figure depends on it.
    pub fn load(
        runtime: &Arc<Runtime>,
        id: &str,
        wasm: &[u8],
        cache: Option<&ModuleCache>,
        origin: Origin,
    ) -> Result<Self, LoadError> {
        let (instrumented, plan, schema) = instrumented(runtime, wasm)?;
        let compiler = runtime.config.compiler_for(origin);
        let (module, pooled, source) = compile(runtime, compiler, &instrumented, cache)?;
        let code_hash = hex::encode(Sha256::digest(wasm));
        Self::assemble(
            runtime,
            id,
            code_hash,
            Compiled {
                module,
                compiler,
                pooled,
                source,
            },
            plan,
            schema,
        )
    }

    /// The module of `compiled` (the machine code of the instrumented code `plan` describes),
    /// run under `id`: exports found, imports resolved, and `gc_abi_version` checked in a first
    /// instance, whose state becomes the pristine snapshot.
    pub(crate) fn assemble(
        runtime: &Arc<Runtime>,
        id: &str,
        code_hash: String,
        compiled: Compiled,
        plan: Plan,
        schema: Option<Arc<str>>,
    ) -> Result<Self, LoadError> {
        let Compiled {
            module,
            compiler,
            pooled,
            source,
        } = compiled;
        let index = |name: &str| module.get_export_index(name);
        let missing = || LoadError::Engine;
        let exports = Exports {
            memory: index("memory").ok_or_else(missing)?,
            abi_version: index("gc_abi_version").ok_or_else(missing)?,
            alloc: index("gc_alloc").ok_or_else(missing)?,
            apply: index("gc_apply").ok_or_else(missing)?,
            view: index("gc_view").ok_or_else(missing)?,
            end_block: index("gc_end_block"),
            migrate: index("gc_migrate"),
            // An entry point only from the ABI revision with scheduled calls (`abi.rs`).
            scheduled: (runtime.config.abi_revision >= crate::abi::SCHEDULING_REVISION)
                .then(|| index("gc_scheduled"))
                .flatten(),
            dirty: index(&plan.dirty_export).ok_or_else(missing)?,
            globals: plan
                .global_exports
                .iter()
                .map(|n| index(n).ok_or_else(missing))
                .collect::<Result<_, _>>()?,
            stack: index(&plan.stack_export).ok_or_else(missing)?,
            fuel: index(&plan.fuel_export).ok_or_else(missing)?,
            start: match &plan.start_export {
                Some(name) => Some(index(name).ok_or_else(missing)?),
                None => None,
            },
        };

        let backends = runtime.backends(compiler);
        let linker = match &backends.pooled {
            Some(backend) if pooled => &backend.linker,
            _ => &backends.on_demand.linker,
        };
        // Every import was validated against the ABI, which the linker serves in full.
        let pre = linker
            .instantiate_pre(&module)
            .map_err(|_| LoadError::Engine)?;
        let mut this = Self {
            runtime: Arc::clone(runtime),
            pooled,
            compiler,
            id: Box::leak(id.to_string().into_boxed_str()),
            code_hash,
            pre,
            exports,
            uid: NEXT_UID.fetch_add(1, Ordering::Relaxed),
            plan,
            pristine: None,
            instantiations: AtomicU64::new(0),
            source,
            schema,
        };

        let raw = this
            .run(
                Target::Detached,
                Nesting::TOP,
                runtime.config.fuel_view,
                Entry::AbiVersion,
            )
            .map_err(LoadError::Host)?;
        match raw.result {
            Ok((v, _)) if v == ABI_VERSION as i32 => {
                this.pristine = this.snapshot().map_err(LoadError::Host)?;
                Ok(this)
            }
            Ok((v, _)) => Err(LoadError::AbiVersion(v)),
            Err(e) => Err(LoadError::Instantiate(e.to_string())),
        }
    }

    /// The id the module runs under (its state prefix `m/<id>/`, its escrow `module:<id>`).
    pub fn id(&self) -> &'static str {
        self.id
    }

    /// SHA-256 of the module's bytes, lowercase hex.
    pub fn code_hash(&self) -> &str {
        &self.code_hash
    }

    /// Where the machine code came from (compiled now, or a cache entry) and how long that
    /// took. Node logs and metrics only: never consensus.
    pub fn code_source(&self) -> CodeSource {
        self.source
    }

    /// Roughly the memory this module holds, bytes: its machine code image plus the pristine
    /// snapshot of its initial memory (warm instances are bounded by the runtime's pool). For
    /// node caches' byte bounds only: never consensus.
    pub fn footprint_bytes(&self) -> usize {
        let image = self.pre.module().image_range();
        let code = (image.end as usize).saturating_sub(image.start as usize);
        code + self.pristine.as_ref().map_or(0, |p| p.memory.len())
    }

    /// The module's schema (`docs/modules.md`, "Schema"): the text of its `gamechain.schema`
    /// custom section, checked at load (a malformed one refuses the module); `None` when it
    /// declares none.
    pub fn schema(&self) -> Option<&str> {
        self.schema.as_deref()
    }

    /// Whether the module exports `gc_migrate` (run once when an upgrade installs it).
    pub fn has_migrate(&self) -> bool {
        self.exports.migrate.is_some()
    }

    /// Whether the module exports `gc_end_block`.
    pub fn has_end_block(&self) -> bool {
        self.exports.end_block.is_some()
    }

    /// Whether the module exports `gc_scheduled` (it can schedule calls of itself).
    pub fn has_scheduled(&self) -> bool {
        self.exports.scheduled.is_some()
    }

    /// Whether calls of this module may run in a reset warm instance (with
    /// [`RuntimeConfig::reuse_instances`](crate::RuntimeConfig) on): `Err` says why not. Not
    /// consensus: results and fuel are the same either way.
    pub fn reusable(&self) -> Result<(), String> {
        match &self.pristine {
            None => self
                .plan
                .reuse
                .clone()
                .and(Err("no pristine snapshot".into())),
            Some(_) => Ok(()),
        }
    }

    /// How many instances of this module were created (for calls, and for the load-time checks):
    /// with instance reuse, far fewer than calls. For tests and metrics.
    pub fn instantiations(&self) -> u64 {
        self.instantiations.load(Ordering::Relaxed)
    }

    /// Whether calls take an instance from the pool: `false` without pooling, and for a module
    /// whose instance does not fit a pool slot (it then runs with on-demand allocation, with the
    /// same results).
    pub fn pooled(&self) -> bool {
        self.pooled
    }

    /// The compiler of its machine code.
    pub fn compiler(&self) -> Compiler {
        self.compiler
    }

    /// The runtime the module was loaded into.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    /// Runs `gc_apply(sender, op)` against `ctx` with `fuel_apply` fuel. `op` is the op's JSON
    /// bytes exactly as in the transaction.
    ///
    /// On `Err` in the outcome, `ctx` may hold the call's partial writes and events: the caller
    /// discards them (as `execute_apply` does by dropping its overlay). `Err(HostError)` means
    /// the node failed, not the module: no receipt.
    pub fn call_apply(
        &self,
        ctx: &mut dyn Ctx,
        sender: &str,
        op: &[u8],
    ) -> Result<CallOutcome<()>, HostError> {
        self.call_apply_with(ctx, sender, op, None)
    }

    /// [`WasmModule::call_apply`] with `resolver` serving the module's `call_pure`s (without
    /// one, every module id is unknown to them).
    pub fn call_apply_with(
        &self,
        ctx: &mut dyn Ctx,
        sender: &str,
        op: &[u8],
        resolver: Option<&dyn ModuleResolver>,
    ) -> Result<CallOutcome<()>, HostError> {
        // SAFETY: `run` drops the store (and with it the target) before returning, and `ctx` is
        // not used until then; the same holds for `resolver` (the argument, which outlives `run`).
        let (target, nesting) = unsafe { (Target::apply(ctx), top(&resolver)) };
        let raw = self.run(
            target,
            nesting,
            self.runtime.config.fuel_apply,
            Entry::Apply {
                sender: sender.as_bytes(),
                op,
            },
        )?;
        Ok(raw.into_unit())
    }

    /// Runs `gc_view(query)` over `state` with `fuel_view` fuel; `query` crosses as a JSON object
    /// of strings. Writes trap `internal: state is read-only in a view`.
    pub fn call_view(
        &self,
        state: &dyn StateRead,
        query: &Query,
    ) -> Result<CallOutcome<Value>, HostError> {
        self.call_view_with(state, query, None)
    }

    /// [`WasmModule::call_view`] with `resolver` serving the view's `call_pure`s.
    pub fn call_view_with(
        &self,
        state: &dyn StateRead,
        query: &Query,
        resolver: Option<&dyn ModuleResolver>,
    ) -> Result<CallOutcome<Value>, HostError> {
        let query = serde_json::to_vec(query).expect("a map of strings always serialises");
        // SAFETY: as in `call_apply_with`.
        let (target, nesting) = unsafe { (Target::view(state), top(&resolver)) };
        let raw = self.run(
            target,
            nesting,
            self.runtime.config.fuel_view,
            Entry::View { query: &query },
        )?;
        Ok(raw.into_value())
    }

    /// Runs `gc_end_block()` against `ctx` with `fuel_end_block` fuel. A module without the
    /// export succeeds without running (0 fuel).
    pub fn call_end_block(&self, ctx: &mut dyn Ctx) -> Result<CallOutcome<()>, HostError> {
        self.call_end_block_with(ctx, None)
    }

    /// [`WasmModule::call_end_block`] with `resolver` serving its `call_pure`s.
    pub fn call_end_block_with(
        &self,
        ctx: &mut dyn Ctx,
        resolver: Option<&dyn ModuleResolver>,
    ) -> Result<CallOutcome<()>, HostError> {
        if self.exports.end_block.is_none() {
            return Ok(CallOutcome {
                result: Ok(()),
                fuel_used: 0,
                log: Vec::new(),
            });
        }
        // SAFETY: as in `call_apply_with`.
        let (target, nesting) = unsafe { (Target::apply(ctx), top(&resolver)) };
        let raw = self.run(
            target,
            nesting,
            self.runtime.config.fuel_end_block,
            Entry::EndBlock,
        )?;
        Ok(raw.into_unit())
    }

    /// Runs `gc_scheduled(id, payload)` against `ctx` with `fuel` fuel (what the call was given
    /// when it was scheduled, at most `fuel_apply`): a call this module scheduled, now due
    /// (ABI.md, "Scheduled calls and draws"). `ctx` carries the call's id and the block's
    /// beacon for `draw`. A module without the export fails with `not found: …` at no fuel
    /// (it could only have lost it to an upgrade).
    pub fn call_scheduled_with(
        &self,
        ctx: &mut dyn Ctx,
        id: u64,
        payload: &[u8],
        fuel: u64,
        resolver: Option<&dyn ModuleResolver>,
    ) -> Result<CallOutcome<()>, HostError> {
        if self.exports.scheduled.is_none() {
            return Ok(CallOutcome {
                result: Err(ActionError::not_found(format!(
                    "gc_scheduled in module {}",
                    self.id
                ))),
                fuel_used: 0,
                log: Vec::new(),
            });
        }
        let fuel = fuel.min(self.runtime.config.fuel_apply);
        // SAFETY: as in `call_apply_with`.
        let (target, nesting) = unsafe { (Target::apply(ctx), top(&resolver)) };
        let raw = self.run(target, nesting, fuel, Entry::Scheduled { id, payload })?;
        Ok(raw.into_unit())
    }

    /// Runs `gc_migrate(sender, input)` against `ctx` with `fuel_apply` fuel: the migration
    /// entry point of an upgrade (ABI.md, "Upgrades"), with `gc_apply`'s calling convention.
    /// A module without the export succeeds without running (0 fuel).
    pub fn call_migrate(
        &self,
        ctx: &mut dyn Ctx,
        sender: &str,
        input: &[u8],
    ) -> Result<CallOutcome<()>, HostError> {
        if self.exports.migrate.is_none() {
            return Ok(CallOutcome {
                result: Ok(()),
                fuel_used: 0,
                log: Vec::new(),
            });
        }
        // SAFETY: as in `call_apply`.
        let target = unsafe { Target::apply(ctx) };
        let raw = self.run(
            target,
            Nesting::TOP,
            self.runtime.config.fuel_apply,
            Entry::Migrate {
                sender: sender.as_bytes(),
                input,
            },
        )?;
        Ok(raw.into_unit())
    }

    /// One entry-point call with `fuel`, host calls acting on `target`: in a warm instance when
    /// the module is reusable, reuse is on and one is idle, else in a new instance (kept for the
    /// next call when reusable).
    fn run(
        &self,
        target: Target,
        nesting: Nesting,
        fuel: u64,
        entry: Entry<'_>,
    ) -> Result<Raw, HostError> {
        let engine_err = |e: wasmtime::Error| HostError::Engine(format!("{e:?}"));
        let reuse = match (&self.pristine, &entry) {
            (_, Entry::AbiVersion) => None,
            (Some(p), _) if self.runtime.config.reuse_instances && fuel > p.start_fuel => Some(p),
            _ => None,
        };
        // Declared before the store: dropped after it, releasing its pool slot.
        let mut lease: Lease<'_> = self.runtime.lease(self.uid, self.pooled, reuse.is_some());
        let (mut store, mut handles, start_fuel) = match lease.take_warm() {
            Some(warm) => {
                let start_fuel = reuse.map_or(0, |p| p.start_fuel);
                (warm.store, Some(warm.handles), start_fuel)
            }
            None => (self.new_store(), None, 0),
        };
        store.data_mut().begin(target, nesting);
        fuel::set(&mut store, fuel - start_fuel).map_err(engine_err)?;

        let called = self.invoke(&mut store, &mut handles, reuse.is_some(), fuel, entry);

        let left = fuel::left(&mut store);
        let st = store.data_mut();
        // The caller's context is unreachable from here on.
        st.detach();
        let output = st.output.take();
        let log = std::mem::take(&mut st.log);
        match (reuse, &called, handles) {
            (Some(pristine), Ok(_), Some(handles)) => {
                if reset(
                    &self.plan,
                    self.id,
                    &self.runtime.config,
                    &mut store,
                    &handles,
                    pristine,
                ) {
                    lease.keep(Warm {
                        uid: self.uid,
                        holds_slot: false,
                        store,
                        handles,
                    });
                }
            }
            // Dropped before the lease, which then frees its pool slot.
            _ => drop(store),
        }

        let mut fuel_used = fuel.saturating_sub(left);
        let result = match called {
            Ok(code) => Ok((code, output)),
            Err(e) => {
                // A trap (running out of fuel included) is charged the whole limit: how much
                // fuel the machine code had counted when a trap hit depends on where the
                // compiler flushes its fuel counter, so only the limit is the same everywhere.
                let err = classify(&e)?;
                fuel_used = fuel;
                Err(err)
            }
        };
        Ok(Raw {
            result,
            fuel_used,
            log,
        })
    }

    /// A new store for this module, detached.
    fn new_store(&self) -> Store<HostState> {
        let engine = self.pre.module().engine();
        let mut state = HostState::new(self.id, Target::Detached, self.runtime.limits());
        state.chunk_shift = self.plan.chunk_shift;
        state.schedulable = self.exports.scheduled.is_some();
        state.max_scheduled_fuel = self.runtime.config.fuel_apply;
        let mut store = Store::new(engine, state);
        store.limiter(|st| &mut st.limits);
        store
    }

    /// Runs `entry`, instantiating first when `handles` is `None` (`fuel` is what the store was
    /// given, for the check of a new reusable instance); the `i32` is the entry point's return.
    fn invoke(
        &self,
        store: &mut Store<HostState>,
        handles: &mut Option<Handles>,
        reusable: bool,
        fuel: u64,
        entry: Entry<'_>,
    ) -> wasmtime::Result<i32> {
        let h = match handles {
            Some(h) => h,
            None => {
                let h = self.instantiate(store, reusable)?;
                if reusable && self.runtime.config.verify_reuse {
                    let pristine = self
                        .pristine
                        .as_ref()
                        .expect("reusable modules have a snapshot");
                    let used = fuel - fuel::left(&mut *store);
                    assert_eq!(
                        used, pristine.start_fuel,
                        "module {}: a new instance used other start fuel",
                        self.id
                    );
                    verify(self.id, store, &h, pristine, NEW_INSTANCE);
                }
                handles.insert(h)
            }
        };
        let stack = h.stack;
        let called = match entry {
            Entry::AbiVersion => h.abi_version.call(&mut *store, ()),
            Entry::Apply { sender, op } => {
                let (sp, sl) = place(store, &h.alloc, h.memory, sender)?;
                let (op_ptr, ol) = place(store, &h.alloc, h.memory, op)?;
                h.apply.call(&mut *store, (sp, sl, op_ptr, ol))
            }
            Entry::View { query } => {
                let (qp, ql) = place(store, &h.alloc, h.memory, query)?;
                h.view.call(&mut *store, (qp, ql))
            }
            Entry::EndBlock => match &h.end_block {
                Some(end_block) => end_block.call(&mut *store, ()),
                None => Ok(0),
            },
            Entry::Scheduled { id, payload } => {
                let (pp, pl) = place(store, &h.alloc, h.memory, payload)?;
                match &h.scheduled {
                    Some(scheduled) => scheduled.call(&mut *store, (id as i64, pp, pl)),
                    None => Ok(0),
                }
            }
            Entry::Migrate { sender, input } => {
                let (sp, sl) = place(store, &h.alloc, h.memory, sender)?;
                let (ip, il) = place(store, &h.alloc, h.memory, input)?;
                match &h.migrate {
                    Some(migrate) => migrate.call(&mut *store, (sp, sl, ip, il)),
                    None => Ok(0),
                }
            }
            Entry::Pure { export, input } => {
                let (ip, il) = place(store, &h.alloc, h.memory, input)?;
                let func = h
                    .instance
                    .get_typed_func::<(i32, i32), i64>(&mut *store, export)?;
                func.call(&mut *store, (ip, il))
                    .map(|r| pure_output(store, h.memory, r))
            }
        };
        called.map_err(|e| trap_checked(store, stack, e))
    }

    /// A new instance in pristine state (data segments applied, start function run), with its
    /// memory attached to the store data; with `resettable`, the handles a reset needs too.
    fn instantiate(
        &self,
        store: &mut Store<HostState>,
        resettable: bool,
    ) -> wasmtime::Result<Handles> {
        self.instantiations.fetch_add(1, Ordering::Relaxed);
        let instance = self.pre.instantiate(&mut *store)?;
        let memory = instance
            .get_module_export(&mut *store, &self.exports.memory)
            .and_then(Extern::into_memory)
            .ok_or_else(|| wasmtime::Error::msg("validated memory export is missing"))?;
        store.data_mut().attach_memory(memory);
        let global = |store: &mut Store<HostState>, export: &ModuleExport| {
            instance
                .get_module_export(&mut *store, export)
                .and_then(Extern::into_global)
                .ok_or_else(|| wasmtime::Error::msg("instrumented global export is missing"))
        };
        let stack = global(store, &self.exports.stack)?;
        let counter = global(store, &self.exports.fuel)?;
        fuel::attach(store, counter)?;
        if let Some(start) = &self.exports.start {
            let start: TypedFunc<(), ()> = self.func(store, &instance, start)?;
            start
                .call(&mut *store, ())
                .map_err(|e| trap_checked(store, stack, e))?;
        }
        let (dirty, globals) = if resettable {
            (
                Some(global(store, &self.exports.dirty)?),
                self.exports
                    .globals
                    .iter()
                    .map(|g| global(store, g))
                    .collect::<wasmtime::Result<_>>()?,
            )
        } else {
            (None, Vec::new())
        };
        Ok(Handles {
            instance,
            memory,
            abi_version: self.func(store, &instance, &self.exports.abi_version)?,
            alloc: self.func(store, &instance, &self.exports.alloc)?,
            apply: self.func(store, &instance, &self.exports.apply)?,
            view: self.func(store, &instance, &self.exports.view)?,
            end_block: match &self.exports.end_block {
                Some(e) => Some(self.func(store, &instance, e)?),
                None => None,
            },
            migrate: match &self.exports.migrate {
                Some(e) => Some(self.func(store, &instance, e)?),
                None => None,
            },
            scheduled: match &self.exports.scheduled {
                Some(e) => Some(self.func(store, &instance, e)?),
                None => None,
            },
            dirty,
            globals,
            stack,
        })
    }

    /// The pristine snapshot of a module whose instances may be reused (`None` otherwise): one
    /// instance, detached, read right after instantiation.
    fn snapshot(&self) -> Result<Option<Pristine>, HostError> {
        let engine_err = |e: wasmtime::Error| HostError::Engine(format!("{e:?}"));
        let plan = &self.plan;
        if plan.reuse.is_err() {
            return Ok(None);
        }
        let config = &self.runtime.config;
        let budget = config
            .fuel_apply
            .max(config.fuel_view)
            .max(config.fuel_end_block);
        let _lease = self.runtime.lease(self.uid, self.pooled, false);
        let mut store = self.new_store();
        fuel::set(&mut store, budget).map_err(engine_err)?;
        let Ok(h) = self.instantiate(&mut store, true) else {
            return Ok(None);
        };
        let start_fuel = budget - fuel::left(&mut store);
        let memory = h.memory.data(&store).to_vec();
        if memory.len() != plan.initial_bytes {
            return Ok(None);
        }
        let globals = h.globals.iter().map(|g| g.get(&mut store)).collect();
        Ok(Some(Pristine {
            memory,
            globals,
            start_fuel,
        }))
    }

    /// A validated function export of `instance`, typed.
    fn func<P: WasmParams, R: WasmResults>(
        &self,
        store: &mut Store<HostState>,
        instance: &Instance,
        export: &ModuleExport,
    ) -> wasmtime::Result<TypedFunc<P, R>> {
        instance
            .get_module_export(&mut *store, export)
            .and_then(Extern::into_func)
            .ok_or_else(|| wasmtime::Error::msg("validated function export is missing"))?
            .typed::<P, R>(&*store)
    }
}

/// Compiles `wasm` (validated and instrumented) for the pooled engine, or, when the pool's
/// slots cannot hold it (or there is no pool), for the on-demand one; `true` when pooled. The
/// engine's reason for refusing a module is never reported (it is wasmtime's text):
/// [`LoadError::Engine`].
///
/// With a `cache`, each engine's machine code is looked up there first (`cache.rs`).
/// Machine code for one module: the wasmtime module, its compiler, whether it was compiled for
/// the pooled engine, and where it came from.
pub(crate) struct Compiled {
    pub(crate) module: Module,
    pub(crate) compiler: Compiler,
    pub(crate) pooled: bool,
    pub(crate) source: CodeSource,
}

/// `wasm` validated (`validate.rs`) and instrumented (`instrument/`) for `runtime`: the bytes to
/// compile, their plan and the module's schema. Errors: the validation rule broken, or
/// [`LoadError::Engine`] when instrumentation found no plan.
pub(crate) fn instrumented(
    runtime: &Runtime,
    wasm: &[u8],
) -> Result<(Vec<u8>, Plan, Option<Arc<str>>), LoadError> {
    let info = validate::validate(
        wasm,
        runtime.config.memory_limit_bytes as u64,
        runtime.config.abi_revision,
    )?;
    let schema = info.schema.as_deref().map(Arc::from);
    let instrumented = instrument::instrument(wasm, &info, runtime.config.instrumentation_revision);
    let plan = instrumented.plan.ok_or(LoadError::Engine)?;
    Ok((instrumented.wasm, plan, schema))
}

fn compile(
    runtime: &Runtime,
    compiler: Compiler,
    wasm: &[u8],
    cache: Option<&ModuleCache>,
) -> Result<(Module, bool, CodeSource), LoadError> {
    let config_hash = runtime.config.config_hash();
    let build = |engine: &wasmtime::Engine, backend: &str| match cache {
        Some(cache) => {
            let build = Build {
                config_hash: &config_hash,
                opt_level: runtime.config.opt_level,
                compiler,
                backend,
            };
            cache.get_or_compile(engine, build, wasm)
        }
        None => CodeSource::time(|| Module::from_binary(engine, wasm)),
    };
    let backends = runtime.backends(compiler);
    if let Some(backend) = &backends.pooled {
        if let Ok((module, source)) = build(&backend.engine, "pooled") {
            return Ok((module, true, source));
        }
    }
    build(&backends.on_demand.engine, "on_demand")
        .map(|(module, source)| (module, false, source))
        .map_err(|_| LoadError::Engine)
}

/// `err`, or [`HostTrap::OutOfFuel`] when the fuel counter holds `OUT_OF_FUEL` (the trap was a
/// charge's `unreachable`, `meter.rs`), or [`HostTrap::StackLimit`] when the stack-height global
/// is above the limit: the trap was the stack check's `unreachable` (`stack.rs`). Only that
/// code leaves either global so.
fn trap_checked(
    store: &mut Store<HostState>,
    stack: Global,
    err: wasmtime::Error,
) -> wasmtime::Error {
    if fuel::ran_out(&mut *store) {
        return wasmtime::Error::new(HostTrap::OutOfFuel);
    }
    match stack.get(&mut *store).i32() {
        Some(height) if height as u32 > STACK_LIMIT => wasmtime::Error::new(HostTrap::StackLimit),
        _ => err,
    }
}

/// Copies `bytes` into a buffer obtained from the guest's `gc_alloc`; `(ptr, len)`. Empty input
/// is passed as `(0, 0)` without calling `gc_alloc`. A null or out-of-memory pointer traps
/// `internal: guest allocation failed`.
fn place(
    store: &mut Store<HostState>,
    alloc: &TypedFunc<i32, i32>,
    memory: Memory,
    bytes: &[u8],
) -> wasmtime::Result<(i32, i32)> {
    if bytes.is_empty() {
        return Ok((0, 0));
    }
    let alloc_failed = || wasmtime::Error::new(HostTrap::AllocFailed);
    let len = i32::try_from(bytes.len()).map_err(|_| alloc_failed())?;
    let ptr = alloc.call(&mut *store, len)?;
    if ptr == 0 {
        return Err(alloc_failed());
    }
    let range = span(ptr, len, memory.data_size(&*store)).map_err(|_| alloc_failed())?;
    store.data_mut().wrote(&range);
    memory.data_mut(&mut *store)[range].copy_from_slice(bytes);
    Ok((ptr, len))
}

/// The error object in an entry point's `output`, or `internal: malformed module output`.
fn error_object(output: Option<Vec<u8>>) -> ActionError {
    output
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
        .and_then(|v| ActionError::from_json(&v))
        .unwrap_or_else(|| HostTrap::MalformedOutput.to_action_error())
}

/// Decodes a pure entry point's `i64` result in the callee's store: negative = refused; else
/// `(ptr << 32) | len` of the result bytes in its memory, copied into the store's `output`.
fn pure_output(store: &mut Store<HostState>, memory: Memory, r: i64) -> i32 {
    if r < 0 {
        return PURE_REFUSED;
    }
    let (ptr, len) = ((r as u64 >> 32) as u32, r as u64 as u32);
    if len as usize > MAX_PURE_OUTPUT_BYTES {
        return PURE_TOO_LARGE;
    }
    let Ok(range) = span(ptr as i32, len as i32, memory.data_size(&*store)) else {
        return PURE_BAD_RANGE;
    };
    let bytes = memory.data(&*store)[range].to_vec();
    store.data_mut().output = Some(bytes);
    PURE_OK
}

impl WasmModule {
    /// Whether the module exports `gc_pure_<name>` with the pure entry point's type
    /// `(i32, i32) -> i64`.
    pub fn has_pure(&self, name: &str) -> bool {
        use wasmtime::{ExternType, ValType};
        let Some(ExternType::Func(f)) = self.pre.module().get_export(&format!("gc_pure_{name}"))
        else {
            return false;
        };
        let params: Vec<ValType> = f.params().collect();
        let results: Vec<ValType> = f.results().collect();
        matches!(params.as_slice(), [ValType::I32, ValType::I32])
            && matches!(results.as_slice(), [ValType::I64])
    }

    /// Runs the pure entry point `gc_pure_<name>(input)` over `state`, read-only, with `fuel`
    /// (ABI.md, "Pure entry points"): what a module's `call_pure` runs, callable by the node and
    /// tests too. `resolver` serves the callee's own `call_pure`s.
    ///
    /// The result is the entry point's bytes, or a [`PureError`] (never a trap of the caller):
    /// `NotFound` without running when there is no such export; a trap is charged all of `fuel`.
    pub fn call_pure(
        &self,
        state: &dyn StateRead,
        name: &str,
        input: &[u8],
        fuel: u64,
        resolver: Option<&dyn ModuleResolver>,
    ) -> Result<PureOutcome, HostError> {
        // SAFETY: as in `call_apply_with`.
        let nesting = unsafe { top(&resolver) };
        self.call_pure_nested(state, name, input, fuel, nesting)
    }

    /// [`WasmModule::call_pure`] at a given nesting (depth and resolver of the caller's chain).
    pub(crate) fn call_pure_nested(
        &self,
        state: &dyn StateRead,
        name: &str,
        input: &[u8],
        fuel: u64,
        nesting: Nesting,
    ) -> Result<PureOutcome, HostError> {
        // SAFETY: as in `call_apply`: `run` detaches the target before returning.
        let target = unsafe { Target::view(state) };
        self.pure_entry(target, name, input, fuel, nesting)
    }

    /// Runs the pure entry point `gc_pure_<name>(input)` with **no state at all** (ABI.md
    /// `call_code`): every state, bank, context and module import traps in it, so its result
    /// depends only on this code and `input`. `code_state` is read only to find code by hash
    /// for the callee's own `call_code`s (at the given nesting). Results as
    /// [`WasmModule::call_pure`].
    pub(crate) fn call_code_nested(
        &self,
        code_state: &dyn StateRead,
        name: &str,
        input: &[u8],
        fuel: u64,
        nesting: Nesting,
    ) -> Result<PureOutcome, HostError> {
        // SAFETY: as in `call_apply`: `run` detaches the target before returning.
        let target = unsafe { Target::sealed(code_state) };
        self.pure_entry(target, name, input, fuel, nesting)
    }

    /// Runs the code of this module by hash, as `call_code` does from a module: no state, with
    /// `fuel`; `resolver` serves the callee's own `call_code`s (found in `code_state`). For the
    /// node and tests.
    pub fn call_code(
        &self,
        code_state: &dyn StateRead,
        name: &str,
        input: &[u8],
        fuel: u64,
        resolver: Option<&dyn ModuleResolver>,
    ) -> Result<PureOutcome, HostError> {
        // SAFETY: as in `call_apply_with`.
        let nesting = unsafe { top(&resolver) };
        self.call_code_nested(code_state, name, input, fuel, nesting)
    }

    /// One pure entry-point call acting on `target` (a view's state, or sealed).
    fn pure_entry(
        &self,
        target: Target,
        name: &str,
        input: &[u8],
        fuel: u64,
        nesting: Nesting,
    ) -> Result<PureOutcome, HostError> {
        if !self.has_pure(name) {
            return Ok(PureOutcome {
                result: Err(PureError::NotFound),
                fuel_used: 0,
                log: Vec::new(),
            });
        }
        let export = format!("gc_pure_{name}");
        let raw = self.run(
            target,
            nesting,
            fuel,
            Entry::Pure {
                export: &export,
                input,
            },
        )?;
        let result = match raw.result {
            Ok((PURE_OK, output)) => Ok(output.unwrap_or_default()),
            Ok((PURE_REFUSED, _)) => Err(PureError::Refused),
            Ok((PURE_TOO_LARGE, _)) => Err(PureError::OutputTooLarge),
            Ok(_) => Err(PureError::Trapped),
            Err(e) if e == HostTrap::OutOfFuel.to_action_error() => Err(PureError::OutOfFuel),
            Err(_) => Err(PureError::Trapped),
        };
        Ok(PureOutcome {
            result,
            fuel_used: raw.fuel_used,
            log: raw.log,
        })
    }
}

/// A module as a host function reaches it (`pure.rs`).
impl Callee for WasmModule {
    fn code_hash(&self) -> &str {
        WasmModule::code_hash(self)
    }

    fn call_pure_nested(
        &self,
        state: &dyn StateRead,
        name: &str,
        input: &[u8],
        fuel: u64,
        nesting: Nesting,
    ) -> Result<PureOutcome, HostError> {
        WasmModule::call_pure_nested(self, state, name, input, fuel, nesting)
    }

    fn call_code_nested(
        &self,
        code_state: &dyn StateRead,
        name: &str,
        input: &[u8],
        fuel: u64,
        nesting: Nesting,
    ) -> Result<PureOutcome, HostError> {
        WasmModule::call_code_nested(self, code_state, name, input, fuel, nesting)
    }
}

impl Raw {
    /// `gc_apply` / `gc_end_block`: `0` succeeds (output ignored), `1` fails with the error
    /// object.
    fn into_unit(self) -> CallOutcome<()> {
        let result = self.result.and_then(|(code, output)| match code {
            0 => Ok(()),
            1 => Err(error_object(output)),
            _ => Err(HostTrap::MalformedOutput.to_action_error()),
        });
        CallOutcome {
            result,
            fuel_used: self.fuel_used,
            log: self.log,
        }
    }

    /// `gc_view`: `0` with a JSON value output, `1` with an error object.
    fn into_value(self) -> CallOutcome<Value> {
        let result = self.result.and_then(|(code, output)| match code {
            0 => output
                .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
                .ok_or_else(|| HostTrap::MalformedOutput.to_action_error()),
            1 => Err(error_object(output)),
            _ => Err(HostTrap::MalformedOutput.to_action_error()),
        });
        CallOutcome {
            result,
            fuel_used: self.fuel_used,
            log: self.log,
        }
    }
}

/// Runs the module through wasm behind the `GameModule` interface, for tests and tools that
/// treat native and wasm modules alike. The op is re-encoded from the `Value` (the chain passes
/// the transaction's bytes through [`WasmModule::call_apply`] instead).
///
/// # Panics
/// On a [`HostError`] (instance pool or engine failure): it is a node failure, which has no
/// receipt, so it cannot be returned as an `ActionError`. Consensus code uses
/// [`crate::execute_apply`] and friends, which return it.
impl GameModule for WasmModule {
    fn id(&self) -> &'static str {
        self.id
    }

    fn apply(&self, ctx: &mut dyn Ctx, sender: &str, op: &Value) -> Result<(), ActionError> {
        let op = serde_json::to_vec(op).expect("a JSON value always serialises");
        match self.call_apply(ctx, sender, &op) {
            Ok(outcome) => outcome.result,
            Err(e) => panic!("module {}: node failure, no receipt possible: {e}", self.id),
        }
    }

    fn view(&self, state: &dyn StateRead, query: &Query) -> Result<Value, ActionError> {
        match self.call_view(state, query) {
            Ok(outcome) => outcome.result,
            Err(e) => panic!("module {}: node failure, no receipt possible: {e}", self.id),
        }
    }

    fn end_block(&self, ctx: &mut dyn Ctx) -> Result<(), ActionError> {
        match self.call_end_block(ctx) {
            Ok(outcome) => outcome.result,
            Err(e) => panic!("module {}: node failure, no receipt possible: {e}", self.id),
        }
    }

    /// `gc_migrate` with `from.owner` as sender and the chain's input JSON; succeeds without
    /// running anything when the module does not export it (as on a chain).
    fn migrate(&self, ctx: &mut dyn Ctx, from: &Migration) -> Result<(), ActionError> {
        match self.call_migrate(ctx, &from.owner, &from.input_json()) {
            Ok(outcome) => outcome.result,
            Err(e) => panic!("module {}: node failure, no receipt possible: {e}", self.id),
        }
    }

    fn schema(&self) -> Option<&str> {
        WasmModule::schema(self)
    }

    /// `gc_scheduled` with the chain's `fuel_apply` (the harness does not know what the call was
    /// given when it was scheduled; a chain runs it with exactly that).
    fn scheduled(
        &self,
        ctx: &mut dyn Ctx,
        call: &gamechain_sdk::ScheduledCall,
    ) -> Result<(), ActionError> {
        let fuel = self.runtime.config.fuel_apply;
        match self.call_scheduled_with(ctx, call.id, &call.payload, fuel, None) {
            Ok(outcome) => outcome.result,
            Err(e) => panic!("module {}: node failure, no receipt possible: {e}", self.id),
        }
    }
}
