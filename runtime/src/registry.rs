//! [`Modules`]: the compiled guest modules of a chain, resolved from state.
//!
//! Which module an id names is consensus and lives in the state: the record `module/<id>`
//! ([`ModuleRecord`]) names its code hash, and `code/<hash>` holds the wasm bytes (`transition/mod.rs`
//! documents both keys). This registry only holds what is expensive to rebuild: the compiled
//! [`WasmModule`]s, by (id, code hash), shared as `Arc`s. A module compiles once per (id, code
//! hash) while it is kept (a `WasmModule` runs under one id, its state prefix; the
//! same code under two ids compiles twice in memory but once on disk, since the optional
//! [`ModuleCache`] is keyed by code alone). [`Modules::resolve`] reads the record from the state it
//! is given, so a module deployed by a transaction is live for the next transaction, with no
//! restart and no registry update: the registry has no opinion about which modules exist.
//!
//! Every list of compiled modules is bounded by count and by memory (the final map, LRU:
//! [`MAX_LOADED`]; the stage: [`MAX_STAGED`]; the modules of blocks not final yet on a validator:
//! [`MAX_UNFINAL`]; calls by code: [`MAX_BY_CODE`]), so a flood of distinct deploys cannot grow
//! a node's memory without bound. A module dropped from any of them and needed again is compiled
//! again (through the disk cache): where a module is kept changes time, never a result.
//!
//! Whether a module exports `gc_end_block` and `gc_migrate` (both optional, ABI.md) is what the
//! loaded module found at load ([`WasmModule::has_end_block`], [`WasmModule::has_migrate`]).

use core::fmt;
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::chain::Genesis;
use crate::layout::{module_record_key, ModuleRecord, MODULE_RECORD_PREFIX};
use crate::state::State;
use gamechain_vm::HostError;
use gamechain_vm::ModuleCache;
use gamechain_vm::Runtime;
use gamechain_vm::{Compiler, LoadError, Origin, WasmModule};

/// Prefix of the code keys: `code/<lowercase hex SHA-256 of the wasm>`.
pub const CODE_PREFIX: &str = "code/";
/// Records read per page by [`Modules::records`].
const RECORD_PAGE: usize = 256;

/// `code/<code_hash>`.
pub fn code_key(code_hash: &str) -> String {
    format!("{CODE_PREFIX}{code_hash}")
}

/// One loaded module.
#[derive(Debug, Clone)]
pub struct ModuleEntry {
    /// The compiled module (its id and code hash are [`WasmModule::id`] and
    /// [`WasmModule::code_hash`]).
    pub module: Arc<WasmModule>,
    /// Whether it exports `gc_end_block` (only such modules run at end of block).
    pub has_end_block: bool,
    /// Whether it exports `gc_migrate` (run once when an upgrade installs this code).
    pub has_migrate: bool,
}

/// Most modules compiled ahead of the transaction that deploys them ([`Modules::prepare`]) and
/// not used yet; past it (or past [`MAX_STAGED_BYTES`]) the oldest is dropped (it compiles
/// again if its deploy still runs). Twice a node's bound on pending deploys, so staging memory
/// is bounded whatever is uploaded.
pub const MAX_STAGED: usize = 32;

/// Most memory ([`WasmModule::footprint_bytes`]) the staged modules hold together: 256 MiB.
pub const MAX_STAGED_BYTES: usize = 256 << 20;

/// Most modules compiled for blocks that are not final yet ([`Modules::hold_until_final`]);
/// past it (or past [`MAX_UNFINAL_BYTES`]) the least recently used is dropped (compiled again
/// if needed).
pub const MAX_UNFINAL: usize = 32;

/// Most memory the modules of blocks that are not final hold together: 256 MiB.
pub const MAX_UNFINAL_BYTES: usize = 256 << 20;

/// Most modules of the final state kept compiled; past it (or past [`MAX_LOADED_BYTES`]) the
/// least recently used is dropped (compiled again, through the disk cache, when next needed).
pub const MAX_LOADED: usize = 1_024;

/// Most memory the kept modules of the final state hold together: 1 GiB.
pub const MAX_LOADED_BYTES: usize = 1 << 30;

/// Most codes kept compiled for calls by code hash (`call_code`); past it one is dropped.
pub const MAX_BY_CODE: usize = 256;

/// Most refusals remembered ([`Modules::load`] answers a refused upload again without
/// compiling it).
pub const MAX_REFUSED: usize = 256;

/// Most modules waiting for a tier-up ([`Modules::next_tier_up`]): every module the registry
/// keeps can wait, so none is forgotten; past it (never, while the bounds above hold) the
/// oldest waits no more.
pub const MAX_TIER_UP_QUEUE: usize = MAX_LOADED + MAX_BY_CODE;

/// Most code hashes remembered as not to tier up ([`Modules::tier_up_abandoned`]); past it the
/// oldest is forgotten (and may be tried once more).
pub const MAX_TIER_UP_ABANDONED: usize = 4_096;

/// Key of a compiled module: (id, code hash).
type Key = (String, String);

/// A module of the final state, with its memory and when it was last used.
struct Slot {
    entry: ModuleEntry,
    bytes: usize,
    used: std::sync::atomic::AtomicU64,
}

/// A compiled module waiting in a bounded list, with the height it belongs to (unfinal ones) and
/// its memory.
struct Held {
    key: Key,
    module: Arc<WasmModule>,
    height: u64,
    bytes: usize,
}

/// A bounded list of [`Held`] modules, oldest (or least recently used) first.
#[derive(Default)]
struct HeldList {
    list: VecDeque<Held>,
    bytes: usize,
}

impl HeldList {
    fn contains(&self, key: &Key) -> bool {
        self.list.iter().any(|h| h.key == *key)
    }

    fn take(&mut self, key: &Key) -> Option<Held> {
        let at = self.list.iter().position(|h| h.key == *key)?;
        let held = self.list.remove(at)?;
        self.bytes -= held.bytes;
        Some(held)
    }

    /// Adds `held` at the back, dropping from the front while over `count` or `bytes` (the
    /// newest always stays).
    fn push(&mut self, held: Held, count: usize, bytes: usize) {
        self.bytes += held.bytes;
        self.list.push_back(held);
        while self.list.len() > 1 && (self.list.len() > count || self.bytes > bytes) {
            if let Some(h) = self.list.pop_front() {
                self.bytes -= h.bytes;
            }
        }
    }

    fn retain(&mut self, mut keep: impl FnMut(&Held) -> bool) {
        self.list.retain(|h| keep(h));
        self.bytes = self.list.iter().map(|h| h.bytes).sum();
    }
}

/// Where the modules of blocks that are not final go (see [`Modules::hold_until_final`]).
#[derive(Default)]
struct Unfinal {
    /// Whether loads for heights above `final_height` are held apart.
    holding: bool,
    /// The highest final height.
    final_height: u64,
    list: HeldList,
}

/// The compiled modules by (id, code hash), and the optional on-disk cache new ones are
/// compiled through. Shared by the block executor and views (`&self` everywhere).
///
/// Memory: `loaded` holds the modules of the final state (genesis's, and deployed by final
/// blocks); modules compiled ahead of their deploy wait in a bounded stage
/// ([`Modules::prepare`]); on a validator, modules of blocks that are not final yet wait in a
/// bounded list and move to `loaded` when their block is final, or are dropped with it
/// ([`Modules::hold_until_final`], [`Modules::finalize`]). Where a module is kept never changes a
/// result: a module dropped and needed again is compiled again, to the same thing.
#[derive(Default)]
pub struct Modules {
    /// The modules of the final state (at most [`MAX_LOADED`], [`MAX_LOADED_BYTES`]).
    loaded: RwLock<BTreeMap<Key, Slot>>,
    /// Counts uses, for `Slot::used`.
    tick: std::sync::atomic::AtomicU64,
    /// Compiled code by hash for calls by code hash (`call_code`), which need no id: any
    /// module compiled from that code serves, since such a call reaches no state. One entry per
    /// distinct code the chain stores and someone called, like `loaded`.
    by_code: RwLock<BTreeMap<String, Arc<WasmModule>>>,
    /// Compiled ahead of their deploy, oldest first (at most [`MAX_STAGED`], [`MAX_STAGED_BYTES`]).
    staged: Mutex<HeldList>,
    /// Compiled for blocks that are not final (at most [`MAX_UNFINAL`], [`MAX_UNFINAL_BYTES`]).
    unfinal: Mutex<Unfinal>,
    /// Uploads refused at load, with their (deterministic) error, newest last (at most
    /// [`MAX_REFUSED`]).
    refused: Mutex<VecDeque<(Key, LoadError)>>,
    cache: Option<Arc<ModuleCache>>,
    /// Modules of the final state and of calls by code running Winch's code, by (id, code
    /// hash), waiting for a tier-up (only once
    /// [`Modules::enable_tier_up`] was called; at most [`MAX_TIER_UP_QUEUE`]).
    tier_up: Mutex<TierUpQueue>,
    /// Signalled when `tier_up` gets a key.
    tier_up_added: Condvar,
}

/// See [`Modules::enable_tier_up`].
#[derive(Default)]
struct TierUpQueue {
    enabled: bool,
    keys: VecDeque<Key>,
    /// Code hashes whose tier-up was abandoned (oldest first): never queued again.
    abandoned: VecDeque<String>,
}

impl fmt::Debug for Modules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Modules")
            .field("loaded", &self.len())
            .field("staged", &self.staged())
            .field("unfinal", &self.unfinal())
            .finish()
    }
}

fn guard<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Why a module could not be registered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegistryError {
    /// Genesis names a code hash for which no code was given.
    MissingCode {
        /// The module id.
        id: String,
        /// The code hash genesis names.
        code_hash: String,
    },
    /// The code bytes do not hash to the expected code hash.
    CodeHash {
        /// The module id.
        id: String,
        /// The expected code hash.
        expected: String,
        /// SHA-256 of the bytes given.
        found: String,
    },
    /// A module with this id and code hash is registered already.
    Duplicate(String),
    /// The runtime refused the module.
    Load {
        /// The module id.
        id: String,
        /// Why.
        error: LoadError,
    },
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MissingCode { id, code_hash } => {
                write!(f, "module `{id}`: no code with hash {code_hash}")
            }
            Self::CodeHash {
                id,
                expected,
                found,
            } => {
                write!(
                    f,
                    "module `{id}`: code hashes to {found}, expected {expected}"
                )
            }
            Self::Duplicate(id) => write!(f, "module `{id}` is registered twice"),
            Self::Load { id, error } => write!(f, "module `{id}` {error}"),
        }
    }
}

impl std::error::Error for RegistryError {}

/// Why a module named by the state could not be resolved. Never a receipt: the block stops.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResolveError {
    /// `module/<id>` is not a [`ModuleRecord`], or `code/<hash>` is missing or does not hash to
    /// its name: the node's state is corrupt.
    CorruptState {
        /// The key.
        key: String,
    },
    /// Code the chain accepted does not load on this node (the engine failed, or this build
    /// refuses what the chain's build accepted): a node failure, never a receipt.
    Host(HostError),
}

impl fmt::Display for ResolveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::CorruptState { key } => write!(f, "state key `{key}` holds a malformed value"),
            Self::Host(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ResolveError {}

/// The record at `module/<id>` in `state`: `None` when absent.
pub fn read_record(state: &dyn State, id: &str) -> Result<Option<ModuleRecord>, ResolveError> {
    let key = module_record_key(id);
    state
        .get(&key)
        .map(|bytes| parse_record(&key, &bytes))
        .transpose()
}

fn parse_record(key: &str, bytes: &[u8]) -> Result<ModuleRecord, ResolveError> {
    serde_json::from_slice(bytes).map_err(|_| ResolveError::CorruptState {
        key: key.to_string(),
    })
}

impl Modules {
    /// An empty registry without a disk cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// This registry compiling new modules through `cache` (module loads are the same with or
    /// without it; only the time differs).
    pub fn with_cache(mut self, cache: Arc<ModuleCache>) -> Self {
        self.cache = Some(cache);
        self
    }

    /// The disk cache, if any.
    pub fn cache(&self) -> Option<&Arc<ModuleCache>> {
        self.cache.as_ref()
    }

    /// Loads every module genesis lists: its code is `codes[code_hash]` (code hash: lowercase hex
    /// SHA-256 of the bytes), checked against the hash, compiled into `runtime` under the
    /// genesis id. (Optional: [`Modules::resolve`] would load them from the state on first use;
    /// this fails early on bad code.)
    pub fn from_genesis(
        runtime: &Arc<Runtime>,
        genesis: &Genesis,
        codes: &BTreeMap<String, Vec<u8>>,
    ) -> Result<Self, RegistryError> {
        let modules = Self::new();
        modules.load_genesis(runtime, genesis, codes)?;
        Ok(modules)
    }

    /// [`Modules::from_genesis`] into this registry (through its cache).
    pub fn load_genesis(
        &self,
        runtime: &Arc<Runtime>,
        genesis: &Genesis,
        codes: &BTreeMap<String, Vec<u8>>,
    ) -> Result<(), RegistryError> {
        for m in &genesis.modules {
            let wasm = codes
                .get(&m.code_hash)
                .ok_or_else(|| RegistryError::MissingCode {
                    id: m.id.clone(),
                    code_hash: m.code_hash.clone(),
                })?;
            let found = hex::encode(Sha256::digest(wasm));
            if found != m.code_hash {
                return Err(RegistryError::CodeHash {
                    id: m.id.clone(),
                    expected: m.code_hash.clone(),
                    found,
                });
            }
            self.load(runtime, &m.id, wasm, Origin::Genesis)
                .map_err(|error| RegistryError::Load {
                    id: m.id.clone(),
                    error,
                })?;
        }
        Ok(())
    }

    /// Registers an already loaded `module` under its id and code hash; `wasm` must be the bytes
    /// it was loaded from (they are checked against its code hash).
    pub fn insert(&self, module: Arc<WasmModule>, wasm: &[u8]) -> Result<(), RegistryError> {
        let id = module.id().to_string();
        let found = hex::encode(Sha256::digest(wasm));
        if found != module.code_hash() {
            return Err(RegistryError::CodeHash {
                id,
                expected: module.code_hash().to_string(),
                found,
            });
        }
        let key = (id.clone(), found);
        if self.read().contains_key(&key) {
            return Err(RegistryError::Duplicate(id));
        }
        self.keep_final(key, module);
        Ok(())
    }

    /// The module `id` running `wasm`: the loaded one, or `wasm` compiled now (through the
    /// cache, by the compiler for `origin`) into `runtime` and kept. The [`LoadError`] is the
    /// module's fault (a deploy's receipt says it) except [`LoadError::Host`]. For a module of
    /// the final state (genesis); a deploy names its block's height ([`Modules::load_at`]).
    pub fn load(
        &self,
        runtime: &Arc<Runtime>,
        id: &str,
        wasm: &[u8],
        origin: Origin,
    ) -> Result<ModuleEntry, LoadError> {
        self.load_at(runtime, id, wasm, origin, 0)
    }

    /// [`Modules::load`] for a block at `height`: while this registry holds the modules of
    /// blocks that are not final ([`Modules::hold_until_final`]) and `height` is above the final
    /// height, a new module is kept in the bounded unfinal list, not in the final map. A refused
    /// upload is remembered (bounded) and answered again without compiling.
    pub fn load_at(
        &self,
        runtime: &Arc<Runtime>,
        id: &str,
        wasm: &[u8],
        origin: Origin,
        height: u64,
    ) -> Result<ModuleEntry, LoadError> {
        let key = (id.to_string(), hex::encode(Sha256::digest(wasm)));
        if let Some(e) = self.get_key(&key) {
            return Ok(e);
        }
        let is_final = {
            let u = guard(&self.unfinal);
            !u.holding || height <= u.final_height
        };
        let mut unfinal = guard(&self.unfinal);
        if let Some(held) = unfinal.list.take(&key) {
            let module = held.module.clone();
            if is_final {
                drop(unfinal);
                return Ok(self.keep_final(key, module));
            }
            // Most recently used: to the back.
            unfinal.list.push(held, MAX_UNFINAL, MAX_UNFINAL_BYTES);
            return Ok(entry(module));
        }
        drop(unfinal);
        if origin == Origin::Upload {
            if let Some((_, e)) = guard(&self.refused).iter().find(|(k, _)| *k == key) {
                return Err(e.clone());
            }
        }
        let module = match guard(&self.staged).take(&key) {
            Some(held) => held.module,
            None => {
                // Compiled without the lock (it takes a while); a racing load of the same key
                // keeps the first entry.
                let module = WasmModule::load(runtime, id, wasm, self.cache.as_deref(), origin)
                    .map_err(|e| self.refuse(&key, origin, e))?;
                let source = module.code_source();
                tracing::info!(module = id, code_hash = %key.1, ?source, "module loaded");
                Arc::new(module)
            }
        };
        if is_final {
            return Ok(self.keep_final(key, module));
        }
        let bytes = module.footprint_bytes();
        guard(&self.unfinal).list.push(
            Held {
                key,
                module: module.clone(),
                height,
                bytes,
            },
            MAX_UNFINAL,
            MAX_UNFINAL_BYTES,
        );
        Ok(entry(module))
    }

    /// Keeps `module` in the final map (the first one for `key` wins).
    /// At most [`MAX_LOADED`] / [`MAX_LOADED_BYTES`] are kept: the least recently used others
    /// are dropped.
    fn keep_final(&self, key: Key, module: Arc<WasmModule>) -> ModuleEntry {
        use std::sync::atomic::Ordering;
        let now = self.tick.fetch_add(1, Ordering::Relaxed);
        let mut loaded = self.loaded.write().unwrap_or_else(|p| p.into_inner());
        let bytes = module.footprint_bytes();
        let new = !loaded.contains_key(&key);
        let kept = loaded
            .entry(key.clone())
            .or_insert_with(|| Slot {
                entry: entry(module),
                bytes,
                used: now.into(),
            })
            .entry
            .clone();
        let tier_up = new && kept.module.compiler() == Compiler::Winch;
        let mut total: usize = loaded.values().map(|s| s.bytes).sum();
        while loaded.len() > 1 && (loaded.len() > MAX_LOADED || total > MAX_LOADED_BYTES) {
            let Some(oldest) = loaded
                .iter()
                .filter(|(k, _)| **k != key)
                .min_by_key(|(_, s)| s.used.load(Ordering::Relaxed))
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some(s) = loaded.remove(&oldest) {
                total -= s.bytes;
            }
        }
        drop(loaded);
        if tier_up {
            // After the map's lock is released: `next_tier_up` takes the two the other way.
            self.want_tier_up(key);
        }
        kept
    }

    /// From now on, modules of the final state compiled by Winch (uploads) wait for a tier-up
    /// ([`Modules::next_tier_up`]), those kept already included. Node policy: without this call
    /// (verifiers, tests) nothing waits.
    pub fn enable_tier_up(&self) {
        use std::sync::atomic::Ordering;
        // The most recently used first.
        let mut winch: Vec<(u64, Key)> = self
            .read()
            .iter()
            .filter(|(_, s)| s.entry.module.compiler() == Compiler::Winch)
            .map(|(k, s)| (s.used.load(Ordering::Relaxed), k.clone()))
            .collect();
        winch.sort_by_key(|w| std::cmp::Reverse(w.0));
        let winch = winch.into_iter().map(|(_, k)| k);
        guard(&self.tier_up).enabled = true;
        for key in winch {
            self.want_tier_up(key);
        }
    }

    fn want_tier_up(&self, key: Key) {
        let mut q = guard(&self.tier_up);
        if !q.enabled || q.keys.contains(&key) || q.abandoned.contains(&key.1) {
            return;
        }
        q.keys.push_back(key);
        while q.keys.len() > MAX_TIER_UP_QUEUE {
            q.keys.pop_front();
        }
        self.tier_up_added.notify_one();
    }

    /// The next module waiting for a tier-up (of the final state or serving calls by code, still
    /// kept, still on Winch), waiting up to `wait` for one; `None` when none came.
    pub fn next_tier_up(&self, wait: Duration) -> Option<Arc<WasmModule>> {
        let deadline = std::time::Instant::now() + wait;
        loop {
            let key = {
                let mut q = guard(&self.tier_up);
                loop {
                    if let Some(key) = q.keys.pop_front() {
                        break key;
                    }
                    let left = deadline.checked_duration_since(std::time::Instant::now())?;
                    q = self
                        .tier_up_added
                        .wait_timeout(q, left)
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                }
            };
            // The queue's lock is released: `keep_final` takes the map's lock first.
            let module = self
                .read()
                .get(&key)
                .map(|s| s.entry.module.clone())
                .or_else(|| {
                    self.code_read()
                        .get(&key.1)
                        .filter(|m| m.id() == key.0)
                        .cloned()
                });
            if let Some(m) = module.filter(|m| m.compiler() == Compiler::Winch) {
                return Some(m);
            }
        }
    }

    /// Queues `module` for a tier-up once more, at the back (a tier-up that could not start
    /// yet: its code had not reached the head state). Nothing when tier-up is off or its code
    /// was abandoned; [`Modules::next_tier_up`] skips it if it is no longer kept or no longer
    /// on Winch by then.
    pub fn requeue_tier_up(&self, module: &WasmModule) {
        self.want_tier_up((module.id().to_string(), module.code_hash().to_string()));
    }

    /// Remembers that the tier-up of the code `code_hash` was abandoned (it ran past the node's
    /// budget): it is not queued again, under any id, while remembered (at most
    /// [`MAX_TIER_UP_ABANDONED`] hashes).
    pub fn tier_up_abandoned(&self, code_hash: &str) {
        let mut q = guard(&self.tier_up);
        if !q.abandoned.iter().any(|h| h == code_hash) {
            q.abandoned.push_back(code_hash.to_string());
            while q.abandoned.len() > MAX_TIER_UP_ABANDONED {
                q.abandoned.pop_front();
            }
        }
        q.keys.retain(|k| k.1 != code_hash);
    }

    /// Puts `tiered` (from [`WasmModule::tier_up`]) in the place of the module of the final
    /// state with its id and code hash, and of the module that serves calls by its code hash
    /// under its id, where those are still kept and still run Winch's code; whether it replaced
    /// one. Calls running on an old module finish on it.
    pub fn install_tiered(&self, tiered: Arc<WasmModule>) -> bool {
        if tiered.compiler() != Compiler::Cranelift {
            return false;
        }
        let key = (tiered.id().to_string(), tiered.code_hash().to_string());
        let winch = |m: &WasmModule| m.compiler() == Compiler::Winch;
        let mut installed = false;
        {
            let mut loaded = self.loaded.write().unwrap_or_else(|p| p.into_inner());
            if let Some(slot) = loaded.get_mut(&key).filter(|s| winch(&s.entry.module)) {
                slot.bytes = tiered.footprint_bytes();
                slot.entry = entry(tiered.clone());
                installed = true;
            }
        }
        let mut by_code = self.by_code.write().unwrap_or_else(|p| p.into_inner());
        if let Some(m) = by_code
            .get_mut(&key.1)
            .filter(|m| m.id() == key.0 && winch(m))
        {
            *m = tiered;
            installed = true;
        }
        installed
    }

    /// The module of the final state `key`, marked used.
    fn get_key(&self, key: &Key) -> Option<ModuleEntry> {
        use std::sync::atomic::Ordering;
        let loaded = self.read();
        let slot = loaded.get(key)?;
        slot.used
            .store(self.tick.fetch_add(1, Ordering::Relaxed), Ordering::Relaxed);
        Some(slot.entry.clone())
    }

    /// Remembers that the upload `key` was refused with `e` (not a host failure); returns `e`.
    fn refuse(&self, key: &Key, origin: Origin, e: LoadError) -> LoadError {
        if origin == Origin::Upload && !matches!(e, LoadError::Host(_)) {
            let mut refused = guard(&self.refused);
            if !refused.iter().any(|(k, _)| k == key) {
                refused.push_back((key.clone(), e.clone()));
                while refused.len() > MAX_REFUSED {
                    refused.pop_front();
                }
            }
        }
        e
    }

    /// From now on, modules loaded for blocks above `final_height` (a validator's committed
    /// head) are kept apart, at most [`MAX_UNFINAL`] / [`MAX_UNFINAL_BYTES`], until
    /// [`Modules::finalize`] keeps or drops them. Without this call (a sequencer, a follower, a
    /// verifier: every block they execute is final) every module is kept.
    pub fn hold_until_final(&self, final_height: u64) {
        let mut u = guard(&self.unfinal);
        u.holding = true;
        u.final_height = final_height;
    }

    /// Block `height` is final and wrote `writes`: the unfinal modules its module records name
    /// (their code, and the code of a pending upgrade) move to the final map; every other
    /// unfinal module of a height at or below it (of a block that lost) is dropped.
    pub fn finalize(&self, height: u64, writes: &crate::WriteSet) {
        let mut named: Vec<Key> = Vec::new();
        for (key, value) in writes.range(MODULE_RECORD_PREFIX.to_string()..) {
            let Some(id) = key.strip_prefix(MODULE_RECORD_PREFIX) else {
                break;
            };
            let Some(Ok(record)) = value.as_deref().map(|v| parse_record(key, v)) else {
                continue;
            };
            named.push((id.to_string(), record.code_hash.clone()));
            if let Some(p) = &record.pending_upgrade {
                named.push((id.to_string(), p.code_hash.clone()));
            }
        }
        let mut promoted = Vec::new();
        {
            let mut u = guard(&self.unfinal);
            u.final_height = u.final_height.max(height);
            for key in &named {
                if let Some(held) = u.list.take(key) {
                    promoted.push(held);
                }
            }
            u.list.retain(|h| h.height > height);
        }
        for held in promoted {
            self.keep_final(held.key, held.module);
        }
    }

    /// How many modules of blocks that are not final are kept.
    pub fn unfinal(&self) -> usize {
        guard(&self.unfinal).list.list.len()
    }

    /// Compiles `wasm` as module `id` (by the compiler for `origin`, through the cache) ahead of
    /// the transaction that deploys it, so that [`Modules::load`] finds it ready: a node calls
    /// this when it admits a deploy, and a validator for the deploys of a proposal before it
    /// executes it, off the thread that makes blocks and outside the lock commits wait for.
    /// Returns whether it compiled (`false`: already loaded, staged or refused). Staged modules
    /// are kept until a `load` takes them, at most [`MAX_STAGED`] / [`MAX_STAGED_BYTES`] (the
    /// oldest is dropped first).
    ///
    /// Errors: the [`LoadError`] the deploy's receipt would carry.
    pub fn prepare(
        &self,
        runtime: &Arc<Runtime>,
        id: &str,
        wasm: &[u8],
        origin: Origin,
    ) -> Result<bool, LoadError> {
        let key = (id.to_string(), hex::encode(Sha256::digest(wasm)));
        if origin == Origin::Upload {
            if let Some((_, e)) = guard(&self.refused).iter().find(|(k, _)| *k == key) {
                return Err(e.clone());
            }
        }
        let known = |staged: &HeldList| {
            self.read().contains_key(&key)
                || staged.contains(&key)
                || guard(&self.unfinal).list.contains(&key)
        };
        if known(&guard(&self.staged)) {
            return Ok(false);
        }
        let module = Arc::new(
            WasmModule::load(runtime, id, wasm, self.cache.as_deref(), origin)
                .map_err(|e| self.refuse(&key, origin, e))?,
        );
        let mut staged = guard(&self.staged);
        if !known(&staged) {
            let bytes = module.footprint_bytes();
            staged.push(
                Held {
                    key,
                    module,
                    height: 0,
                    bytes,
                },
                MAX_STAGED,
                MAX_STAGED_BYTES,
            );
        }
        Ok(true)
    }

    /// How many modules are staged ([`Modules::prepare`]) and not used yet.
    pub fn staged(&self) -> usize {
        guard(&self.staged).list.len()
    }

    /// The loaded module `id` with code `code_hash`, if it is loaded.
    pub fn get(&self, id: &str, code_hash: &str) -> Option<ModuleEntry> {
        self.get_key(&(id.to_string(), code_hash.to_string()))
    }

    /// The module `id` as of `state`: `None` when `state` has no `module/<id>`; else the module
    /// running the recorded code, loaded from `code/<hash>` (and compiled, through the cache)
    /// on first use.
    pub fn resolve(
        &self,
        runtime: &Arc<Runtime>,
        state: &dyn State,
        id: &str,
    ) -> Result<Option<ModuleEntry>, ResolveError> {
        let Some(record) = read_record(state, id)? else {
            return Ok(None);
        };
        self.resolve_record(runtime, state, id, &record).map(Some)
    }

    /// The module `id` whose record (read from `state`) is `record`.
    pub fn resolve_record(
        &self,
        runtime: &Arc<Runtime>,
        state: &dyn State,
        id: &str,
        record: &ModuleRecord,
    ) -> Result<ModuleEntry, ResolveError> {
        if let Some(e) = self.get(id, &record.code_hash) {
            return Ok(e);
        }
        let key = code_key(&record.code_hash);
        let corrupt = || ResolveError::CorruptState { key: key.clone() };
        let wasm = state.get(&key).ok_or_else(corrupt)?;
        if hex::encode(Sha256::digest(&wasm)) != record.code_hash {
            return Err(corrupt());
        }
        let active = record.upgraded_height.unwrap_or(record.deployed_height);
        self.load_at(runtime, id, &wasm, record_origin(record), active)
            .map_err(|e| match e {
            LoadError::Host(e) => ResolveError::Host(e),
            other => ResolveError::Host(HostError::Engine(format!(
                "module `{id}` (code {}) was accepted by the chain but this node refuses it: {other}",
                record.code_hash
            ))),
        })
    }

    /// The code whose hash (lowercase hex) is `code_hash`, as of `state`, compiled, and its
    /// length: `Ok(None)` when `state` does not store `code/<code_hash>` or the code does not
    /// load as a module (a fixed result for `call_code`, never engine text). Code called by hash
    /// always runs as compiled by the runtime's **upload compiler**, whatever origin the modules
    /// running it have (consensus: the compiler decides the fuel of bulk memory operations). A
    /// module already compiled from that code by that compiler under any id serves (a call by
    /// code reaches no state, so the id does not matter); otherwise the code compiles once
    /// (through the cache) and is kept. The
    /// state is read on every call, so code that `state` does not store is never found, even
    /// when this registry compiled it for another state. Errors: stored bytes that do not hash
    /// to their key ([`ResolveError::CorruptState`]), a node failure while compiling
    /// ([`ResolveError::Host`]).
    pub fn resolve_code(
        &self,
        runtime: &Arc<Runtime>,
        state: &dyn State,
        code_hash: &str,
    ) -> Result<Option<(Arc<WasmModule>, usize)>, ResolveError> {
        let key = code_key(code_hash);
        let Some(wasm) = state.get(&key) else {
            return Ok(None);
        };
        let len = wasm.len();
        if let Some(m) = self.code_read().get(code_hash) {
            return Ok(Some((m.clone(), len)));
        }
        if hex::encode(Sha256::digest(&wasm)) != code_hash {
            return Err(ResolveError::CorruptState { key });
        }
        // Any module compiled from this code serves, whatever its compiler (not consensus:
        // fuel is the instrumentation's count) and id (such a call reaches no state).
        let loaded = self
            .read()
            .iter()
            .find(|((_, hash), _)| hash == code_hash)
            .map(|(_, s)| s.entry.module.clone());
        let module = match loaded {
            Some(m) => m,
            None => {
                let id = format!("code_{}", &code_hash[..16]);
                match WasmModule::load(runtime, &id, &wasm, self.cache.as_deref(), Origin::Upload) {
                    Ok(m) => Arc::new(m),
                    Err(LoadError::Host(e)) => return Err(ResolveError::Host(e)),
                    Err(_) => return Ok(None),
                }
            }
        };
        let mut by_code = self.by_code.write().unwrap_or_else(|p| p.into_inner());
        if by_code.len() >= MAX_BY_CODE && !by_code.contains_key(code_hash) {
            by_code.pop_first();
        }
        let new = !by_code.contains_key(code_hash);
        let module = by_code
            .entry(code_hash.to_string())
            .or_insert(module)
            .clone();
        drop(by_code);
        if new && module.compiler() == Compiler::Winch {
            self.want_tier_up((module.id().to_string(), code_hash.to_string()));
        }
        Ok(Some((module, len)))
    }

    /// Every module record in `state`, in ascending id order.
    pub fn records(state: &dyn State) -> Result<Vec<(String, ModuleRecord)>, ResolveError> {
        let mut out = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let page = state.scan(MODULE_RECORD_PREFIX, after.as_deref(), RECORD_PAGE);
            let done = page.len() < RECORD_PAGE;
            for (key, bytes) in page {
                let record = parse_record(&key, &bytes)?;
                out.push((key[MODULE_RECORD_PREFIX.len()..].to_string(), record));
                after = Some(key);
            }
            if done {
                return Ok(out);
            }
        }
    }

    /// Every loaded module, by ascending (id, code hash).
    pub fn iter(&self) -> Vec<ModuleEntry> {
        self.read().values().map(|s| s.entry.clone()).collect()
    }

    /// Number of loaded modules.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// Whether none is loaded.
    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<Key, Slot>> {
        self.loaded.read().unwrap_or_else(|p| p.into_inner())
    }

    fn code_read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Arc<WasmModule>>> {
        self.by_code.read().unwrap_or_else(|p| p.into_inner())
    }
}

/// Where the code a record names comes from: genesis modules (owner `system`, never upgraded)
/// are [`Origin::Genesis`], everything deployed or upgraded by a transaction [`Origin::Upload`].
pub fn record_origin(record: &ModuleRecord) -> Origin {
    if record.owner == crate::chain::genesis::SYSTEM_ACCOUNT && record.upgraded_height.is_none() {
        Origin::Genesis
    } else {
        Origin::Upload
    }
}

/// The entry of `module`.
fn entry(module: Arc<WasmModule>) -> ModuleEntry {
    ModuleEntry {
        has_end_block: module.has_end_block(),
        has_migrate: module.has_migrate(),
        module,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::genesis::SYSTEM_ACCOUNT;
    use crate::{Allocation, MemState, RuntimeConfig};

    fn runtime() -> Arc<Runtime> {
        Runtime::new(RuntimeConfig {
            allocation: Allocation::OnDemand,
            ..RuntimeConfig::default()
        })
        .unwrap()
    }

    fn record(code: &[u8]) -> ModuleRecord {
        ModuleRecord {
            abi_version: 1,
            code_hash: hex::encode(Sha256::digest(code)),
            deployed_height: 0,
            owner: SYSTEM_ACCOUNT.into(),
            pending_upgrade: None,
            policy: None,
            upgraded_height: None,
        }
    }

    #[test]
    fn a_prepared_module_is_what_load_returns_and_staging_is_bounded() {
        let rt = runtime();
        let counter = wat::parse_str(include_str!("../tests/wat/counter.wat")).unwrap();
        let modules = Modules::new();
        assert_eq!(
            modules.prepare(&rt, "a", &counter, Origin::Upload),
            Ok(true)
        );
        assert_eq!(
            modules.prepare(&rt, "a", &counter, Origin::Upload),
            Ok(false)
        );
        assert_eq!((modules.staged(), modules.len()), (1, 0));
        let staged_uid = modules.staged.lock().unwrap().list[0]
            .module
            .instantiations();
        let a = modules.load(&rt, "a", &counter, Origin::Upload).unwrap();
        // Taken from the stage (no new compile: its first instance already ran at prepare).
        assert_eq!(a.module.instantiations(), staged_uid);
        assert_eq!((modules.staged(), modules.len()), (0, 1));
        assert_eq!(a.module.compiler(), gamechain_vm::Compiler::Winch);
        // Loaded already: nothing to stage.
        assert_eq!(
            modules.prepare(&rt, "a", &counter, Origin::Upload),
            Ok(false)
        );
        // A refused module is the load error, and nothing is staged.
        assert!(modules
            .prepare(&rt, "bad", b"\0asm", Origin::Upload)
            .is_err());
        // At most MAX_STAGED wait; the oldest goes first.
        for i in 0..MAX_STAGED + 3 {
            let id = format!("m{i}");
            assert_eq!(
                modules.prepare(&rt, &id, &counter, Origin::Upload),
                Ok(true)
            );
        }
        assert_eq!(modules.staged(), MAX_STAGED);
        let first = modules.staged.lock().unwrap().list[0].key.0.clone();
        assert_eq!(first, "m3");
    }

    #[test]
    fn modules_of_unfinal_blocks_are_bounded_and_kept_or_dropped_with_their_block() {
        let rt = runtime();
        let counter = wat::parse_str(include_str!("../tests/wat/counter.wat")).unwrap();
        let hash = record(&counter).code_hash;
        let modules = Modules::new();
        modules.hold_until_final(5);
        // Deployed by a block at height 6, not final: kept apart, and found again.
        let a = modules
            .load_at(&rt, "a", &counter, Origin::Upload, 6)
            .unwrap();
        assert_eq!((modules.len(), modules.unfinal()), (0, 1));
        let again = modules
            .load_at(&rt, "a", &counter, Origin::Upload, 6)
            .unwrap();
        assert!(Arc::ptr_eq(&a.module, &again.module));
        // Another block at height 6 (which loses) deploys `b`.
        modules
            .load_at(&rt, "b", &counter, Origin::Upload, 6)
            .unwrap();
        // Block 6 with `a`'s record is final: `a` joins the final map, `b` is dropped.
        let mut writes = crate::WriteSet::new();
        writes.insert(module_record_key("a"), Some(record(&counter).to_bytes()));
        modules.finalize(6, &writes);
        assert_eq!((modules.len(), modules.unfinal()), (1, 0));
        assert!(Arc::ptr_eq(
            &modules.get("a", &hash).unwrap().module,
            &a.module
        ));
        // At or below the final height a load goes to the final map at once.
        modules
            .load_at(&rt, "c", &counter, Origin::Upload, 6)
            .unwrap();
        assert_eq!((modules.len(), modules.unfinal()), (2, 0));
        // The unfinal list is bounded; the least recently used go first.
        for i in 0..MAX_UNFINAL + 3 {
            modules
                .load_at(&rt, &format!("u{i}"), &counter, Origin::Upload, 7)
                .unwrap();
        }
        assert_eq!(modules.unfinal(), MAX_UNFINAL);
        // A refused upload is answered again from memory, by load and by prepare alike.
        let bad = b"\0asm\x01\0\0\0\x01\x01".to_vec();
        let refused = modules
            .load_at(&rt, "bad", &bad, Origin::Upload, 7)
            .unwrap_err();
        assert_eq!(
            modules.prepare(&rt, "bad", &bad, Origin::Upload),
            Err(refused.clone())
        );
        assert_eq!(modules.refused.lock().unwrap().len(), 1);
        // Without holding (a sequencer), everything is final.
        let plain = Modules::new();
        plain
            .load_at(&rt, "a", &counter, Origin::Upload, 99)
            .unwrap();
        assert_eq!((plain.len(), plain.unfinal()), (1, 0));
    }

    #[test]
    fn modules_resolve_from_state_and_compile_once() {
        let rt = runtime();
        let counter = wat::parse_str(include_str!("../tests/wat/counter.wat")).unwrap();
        let mut state = MemState::new();
        let modules = Modules::new();
        assert_eq!(modules.resolve(&rt, &state, "b").unwrap().map(|_| ()), None);

        for id in ["b", "a"] {
            state
                .map
                .insert(module_record_key(id), record(&counter).to_bytes());
        }
        let hash = record(&counter).code_hash;
        let missing = ResolveError::CorruptState {
            key: code_key(&hash),
        };
        assert_eq!(modules.resolve(&rt, &state, "a").unwrap_err(), missing);
        state.map.insert(code_key(&hash), b"not the code".to_vec());
        assert_eq!(modules.resolve(&rt, &state, "a").unwrap_err(), missing);

        state.map.insert(code_key(&hash), counter.clone());
        let a = modules.resolve(&rt, &state, "a").unwrap().unwrap();
        assert_eq!((a.module.id(), a.module.code_hash()), ("a", hash.as_str()));
        assert!(!a.has_end_block && !a.has_migrate);
        let again = modules.resolve(&rt, &state, "a").unwrap().unwrap();
        assert!(Arc::ptr_eq(&a.module, &again.module), "compiled once");
        let b = modules.resolve(&rt, &state, "b").unwrap().unwrap();
        assert_eq!(b.module.id(), "b", "the same code under another id");
        assert_eq!(modules.len(), 2);
        let ids: Vec<String> = Modules::records(&state)
            .unwrap()
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        assert_eq!(ids, ["a", "b"]);

        // A record that is not a record; code the chain holds but this node refuses.
        state
            .map
            .insert(module_record_key("c"), b"{\"abi_version\":1}".to_vec());
        assert_eq!(
            modules.resolve(&rt, &state, "c").unwrap_err(),
            ResolveError::CorruptState {
                key: module_record_key("c")
            }
        );
        assert!(Modules::records(&state).is_err());
        let refused = b"\0asm\x01\0\0\0".to_vec();
        state
            .map
            .insert(module_record_key("c"), record(&refused).to_bytes());
        state
            .map
            .insert(code_key(&record(&refused).code_hash), refused);
        assert!(matches!(
            modules.resolve(&rt, &state, "c"),
            Err(ResolveError::Host(HostError::Engine(m))) if m.contains("this node refuses it")
        ));
    }

    #[test]
    fn uploads_wait_for_a_tier_up_until_tiered_or_abandoned() {
        let rt = runtime();
        let code = wat::parse_str(include_str!("../tests/wat/counter.wat")).unwrap();
        let hash = hex::encode(Sha256::digest(&code));
        let modules = Modules::new();
        // Nothing waits before tier-up is enabled; an upload loaded before waits after.
        modules.load(&rt, "a", &code, Origin::Upload).unwrap();
        assert!(modules.next_tier_up(Duration::ZERO).is_none());
        modules.enable_tier_up();
        let a = modules.next_tier_up(Duration::ZERO).expect("a waits");
        assert_eq!((a.id(), a.compiler()), ("a", Compiler::Winch));
        assert!(modules.next_tier_up(Duration::ZERO).is_none());
        // Deferred (its code not in the head state yet): queued again, once.
        modules.requeue_tier_up(&a);
        modules.requeue_tier_up(&a);
        let again = modules.next_tier_up(Duration::ZERO).expect("a waits again");
        assert!(Arc::ptr_eq(&again, &a));
        assert!(modules.next_tier_up(Duration::ZERO).is_none());
        // Tiered: the final map holds Cranelift's module; a second install changes nothing.
        let tiered = Arc::new(
            a.tier_up(&code, None, |b| {
                gamechain_vm::precompile(crate::OptLevel::Speed, b)
            })
            .unwrap(),
        );
        assert!(modules.install_tiered(tiered.clone()));
        assert!(!modules.install_tiered(tiered));
        // A requeue of a module tiered meanwhile comes to nothing.
        modules.requeue_tier_up(&a);
        assert!(modules.next_tier_up(Duration::ZERO).is_none());
        assert_eq!(
            modules.get("a", &hash).unwrap().module.compiler(),
            Compiler::Cranelift
        );
        // Abandoned code is never queued again, under any id.
        modules.load(&rt, "b", &code, Origin::Upload).unwrap();
        let b = modules.next_tier_up(Duration::ZERO).expect("b waits");
        modules.tier_up_abandoned(b.code_hash());
        modules.requeue_tier_up(&b);
        modules.load(&rt, "c", &code, Origin::Upload).unwrap();
        assert!(modules.next_tier_up(Duration::ZERO).is_none());
        assert_eq!(
            modules.get("c", &hash).unwrap().module.compiler(),
            Compiler::Winch
        );
    }
}
