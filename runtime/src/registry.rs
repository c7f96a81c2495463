//! [`Modules`]: the compiled guest modules of a chain, resolved from state.
//!
//! Which module an id names is consensus and lives in the state: the record `module/<id>`
//! ([`ModuleRecord`]) names its code hash, and `code/<hash>` holds the wasm bytes (`transition.rs`
//! documents both keys). This registry only holds what is expensive to rebuild: the compiled
//! [`WasmModule`]s, by (id, code hash), shared as `Arc`s. A module compiles once per (id, code
//! hash) for the life of the process (a `WasmModule` runs under one id, its state prefix; the
//! same code under two ids compiles twice in memory but once on disk, since the optional
//! [`ModuleCache`] is keyed by code alone). [`Modules::resolve`] reads the record from the state it
//! is given, so a module deployed by a transaction is live for the next transaction, with no
//! restart and no registry update: the registry has no opinion about which modules exist.
//!
//! Which modules export `gc_end_block` and `gc_migrate` is read from the module's export
//! section here (ABI.md: both exports are optional).

use core::fmt;
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use sha2::{Digest, Sha256};

use crate::cache::ModuleCache;
use crate::chain::Genesis;
use crate::engine::Runtime;
use crate::module::{LoadError, WasmModule};
use crate::state::State;
use crate::transition::{module_record_key, ModuleRecord, MODULE_RECORD_PREFIX};
use crate::trap::HostError;

/// The optional end-of-block export of ABI v1.
const END_BLOCK_EXPORT: &str = "gc_end_block";
/// The optional migration export of ABI v1 (run once by an upgrade).
const MIGRATE_EXPORT: &str = "gc_migrate";
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

/// The compiled modules by (id, code hash), and the optional on-disk cache new ones are
/// compiled through. Shared by the block executor and views (`&self` everywhere).
#[derive(Debug, Default)]
pub struct Modules {
    loaded: RwLock<BTreeMap<(String, String), ModuleEntry>>,
    cache: Option<Arc<ModuleCache>>,
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
    /// The code is not a wasm binary whose export section can be read.
    Malformed(String),
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
            Self::Malformed(id) => write!(f, "module `{id}`: not a readable wasm binary"),
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
            self.load(runtime, &m.id, wasm)
                .map_err(|error| RegistryError::Load {
                    id: m.id.clone(),
                    error,
                })?;
        }
        Ok(())
    }

    /// Registers an already loaded `module` under its id and code hash; `wasm` must be the bytes
    /// it was loaded from (they are checked against its code hash, and its exports are read
    /// from them).
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
        let entry = entry(module, wasm).ok_or_else(|| RegistryError::Malformed(id.clone()))?;
        let mut loaded = self.loaded.write().unwrap_or_else(|p| p.into_inner());
        let key = (id.clone(), found);
        if loaded.contains_key(&key) {
            return Err(RegistryError::Duplicate(id));
        }
        loaded.insert(key, entry);
        Ok(())
    }

    /// The module `id` running `wasm`: the loaded one, or `wasm` compiled now (through the
    /// cache) into `runtime` and kept. The [`LoadError`] is the module's fault (a deploy's
    /// receipt says it) except [`LoadError::Host`].
    pub fn load(
        &self,
        runtime: &Arc<Runtime>,
        id: &str,
        wasm: &[u8],
    ) -> Result<ModuleEntry, LoadError> {
        let key = (id.to_string(), hex::encode(Sha256::digest(wasm)));
        if let Some(e) = self.read().get(&key) {
            return Ok(e.clone());
        }
        // Compiled without the lock (it takes a while); a racing load of the same key keeps the
        // first entry.
        let module = WasmModule::load(runtime, id, wasm, self.cache.as_deref())?;
        let source = module.code_source();
        tracing::info!(module = id, code_hash = %key.1, ?source, "module loaded");
        let entry = entry(Arc::new(module), wasm)
            .ok_or_else(|| LoadError::Invalid("the export section cannot be read".to_string()))?;
        let mut loaded = self.loaded.write().unwrap_or_else(|p| p.into_inner());
        Ok(loaded.entry(key).or_insert(entry).clone())
    }

    /// The loaded module `id` with code `code_hash`, if it is loaded.
    pub fn get(&self, id: &str, code_hash: &str) -> Option<ModuleEntry> {
        self.read()
            .get(&(id.to_string(), code_hash.to_string()))
            .cloned()
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
        self.load(runtime, id, &wasm).map_err(|e| match e {
            LoadError::Host(e) => ResolveError::Host(e),
            other => ResolveError::Host(HostError::Engine(format!(
                "module `{id}` (code {}) was accepted by the chain but this node refuses it: {other}",
                record.code_hash
            ))),
        })
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
        self.read().values().cloned().collect()
    }

    /// Number of loaded modules.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// Whether none is loaded.
    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<(String, String), ModuleEntry>> {
        self.loaded.read().unwrap_or_else(|p| p.into_inner())
    }
}

/// The entry of `module` loaded from `wasm`; `None` when its export section cannot be read.
fn entry(module: Arc<WasmModule>, wasm: &[u8]) -> Option<ModuleEntry> {
    Some(ModuleEntry {
        module,
        has_end_block: exports_function(wasm, END_BLOCK_EXPORT)?,
        has_migrate: exports_function(wasm, MIGRATE_EXPORT)?,
    })
}

/// Reads an unsigned LEB128 `u32` at `*pos`.
fn leb_u32(bytes: &[u8], pos: &mut usize) -> Option<u32> {
    let mut result: u32 = 0;
    for shift in (0..35).step_by(7) {
        let b = *bytes.get(*pos)?;
        *pos += 1;
        result |= u32::from(b & 0x7f).checked_shl(shift)?;
        if b & 0x80 == 0 {
            return Some(result);
        }
    }
    None
}

/// Whether the wasm binary `wasm` exports a function named `name`; `None` when the header or the
/// section layout cannot be read.
pub(crate) fn exports_function(wasm: &[u8], name: &str) -> Option<bool> {
    if wasm.len() < 8 || &wasm[..4] != b"\0asm" || wasm[4..8] != [1, 0, 0, 0] {
        return None;
    }
    let mut pos = 8;
    while pos < wasm.len() {
        let id = wasm[pos];
        pos += 1;
        let size = leb_u32(wasm, &mut pos)? as usize;
        let end = pos.checked_add(size).filter(|&e| e <= wasm.len())?;
        if id == 7 {
            let section = &wasm[..end];
            let mut p = pos;
            let count = leb_u32(section, &mut p)?;
            for _ in 0..count {
                let len = leb_u32(section, &mut p)? as usize;
                let field = section.get(p..p.checked_add(len)?)?;
                p += len;
                let kind = *section.get(p)?;
                p += 1;
                leb_u32(section, &mut p)?;
                if kind == 0 && field == name.as_bytes() {
                    return Some(true);
                }
            }
            return Some(false);
        }
        pos = end;
    }
    Some(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_function_exports() {
        let with = wat::parse_str(
            r#"(module (memory (export "memory") 1) (func (export "gc_end_block") (result i32) i32.const 0)
                (func (export "gc_apply") (result i32) i32.const 0))"#,
        )
        .unwrap();
        assert_eq!(exports_function(&with, "gc_end_block"), Some(true));
        assert_eq!(exports_function(&with, "gc_apply"), Some(true));
        assert_eq!(
            exports_function(&with, "memory"),
            Some(false),
            "a memory is not a function"
        );
        assert_eq!(exports_function(&with, "gc_view"), Some(false));
        let without =
            wat::parse_str(r#"(module (func (export "gc_end_blocks") (result i32) i32.const 0))"#)
                .unwrap();
        assert_eq!(exports_function(&without, "gc_end_block"), Some(false));
        assert_eq!(exports_function(b"(module)", "gc_end_block"), None);
        assert_eq!(exports_function(&with[..6], "gc_end_block"), None);
        let mut bad_size = with[..8].to_vec();
        bad_size.extend_from_slice(&[7, 0x7f, 1]);
        assert_eq!(
            exports_function(&bad_size, "gc_end_block"),
            None,
            "a section longer than the binary"
        );
    }

    #[test]
    fn leb_reads_multi_byte_values() {
        let mut p = 0;
        assert_eq!(leb_u32(&[0xe5, 0x8e, 0x26], &mut p), Some(624_485));
        assert_eq!(p, 3);
        let mut p = 0;
        assert_eq!(leb_u32(&[0x80, 0x80], &mut p), None);
    }
}
