//! [`ModuleCache`]: compiled guest modules on disk, so a node that restarts (or loads the same
//! code again) deserialises machine code instead of compiling it with Cranelift.
//!
//! Not consensus: a cache hit and a fresh compile give the same `wasmtime::Module`, so every
//! result, fuel figure and load error is the same with or without the cache. Only time differs
//! ([`CodeSource`]).
//!
//! ## Key
//!
//! One file per (code, engine): `<dir>/<key>.gcm`, `key` = lowercase hex SHA-256 of the text
//!
//! ```text
//! gamechain.module-cache.v1
//! code=<SHA-256 of the instrumented wasm bytes that are compiled>
//! config=<RuntimeConfig::config_hash: ABI, features, limits, gas, instrumentation version>
//! opt_level=<RuntimeConfig::opt_level: none | speed | speed_and_size>
//! compiler=<cranelift | winch>
//! backend=<pooled | on_demand>
//! wasmtime=<WASMTIME_VERSION>
//! engine=<SHA-256 of wasmtime's Engine::precompile_compatibility_hash>
//! target=<arch>-<os>
//! ```
//!
//! The instrumented bytes are a function of the module's code hash and the instrumentation
//! version (which the config hash covers), so this is "code hash × engine configuration", and
//! any change of wasmtime, compiler settings, CPU features or host selects another file.
//!
//! ## Entry file (the envelope)
//!
//! | bytes | content |
//! |---|---|
//! | 0–7 | magic `GCMCACH1` |
//! | 8–39 | the key (32 bytes), which must equal the file's own key |
//! | 40–47 | payload length, u64 little-endian; the file is exactly 80 + this long |
//! | 48–79 | SHA-256 of the payload |
//! | 80– | the payload: `wasmtime::Module::serialize` |
//!
//! **Never trusted.** A file that is truncated, has another magic, key, length or checksum, or
//! whose payload wasmtime refuses (another engine, a stale format) is logged, deleted and
//! rebuilt from the code; it never crashes the node and never reaches a call. The payload is
//! deserialised from the very bytes whose checksum was verified (`Module::deserialize` of the
//! in-memory copy, not `deserialize_file`, so nothing can change between check and use).
//! `Module::deserialize` runs machine code it is given: the checksum catches corruption, not
//! forgery, so the cache directory must be as trusted as the node's binary (it lives in the
//! data directory, next to the sequencer key).
//!
//! Entries are written to a temporary file and renamed into place, so a crash leaves either
//! no entry or a whole one (and a torn one is detected anyway). A failure to write is logged and
//! counted; the module still loads.

use std::fs;
use std::hash::{Hash, Hasher};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use wasmtime::{Engine, Module};

use crate::config::{Compiler, OptLevel, WASMTIME_VERSION};

/// First bytes of every entry file.
pub const MAGIC: &[u8; 8] = b"GCMCACH1";
/// Extension of entry files.
pub const EXTENSION: &str = "gcm";
/// Bytes before the payload: magic, key, length, checksum.
const HEADER_LEN: usize = 8 + 32 + 8 + 32;

/// Where a [`crate::WasmModule`]'s machine code came from, and how long getting it took
/// (wall-clock time: for logs and benches only, never consensus).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeSource {
    /// Compiled from the wasm now (with a cache: after a miss or a rejected entry).
    Compiled(Duration),
    /// Read and deserialised from a valid cache entry.
    Cached(Duration),
}

impl CodeSource {
    /// Compiles with `f`, timing it.
    pub(crate) fn time(
        f: impl FnOnce() -> wasmtime::Result<Module>,
    ) -> wasmtime::Result<(Module, CodeSource)> {
        let start = Instant::now();
        let module = f()?;
        Ok((module, CodeSource::Compiled(start.elapsed())))
    }

    /// Whether the code came from the cache.
    pub fn is_cached(&self) -> bool {
        matches!(self, CodeSource::Cached(_))
    }

    /// The time taken.
    pub fn duration(&self) -> Duration {
        match *self {
            CodeSource::Compiled(d) | CodeSource::Cached(d) => d,
        }
    }
}

/// Counters of a [`ModuleCache`] since it was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Valid entries used.
    pub hits: u64,
    /// Lookups that found no entry.
    pub misses: u64,
    /// Entries found invalid (corrupt, truncated, stale, mismatched), deleted and rebuilt.
    pub rejected: u64,
    /// Entries written.
    pub stored: u64,
    /// Entries that could not be written (the module loaded anyway).
    pub store_failures: u64,
}

/// A directory of compiled modules (see the module docs). Shared by every module load of a
/// node; safe to use from many threads and by several processes at once.
#[derive(Debug)]
pub struct ModuleCache {
    dir: PathBuf,
    hits: AtomicU64,
    misses: AtomicU64,
    rejected: AtomicU64,
    stored: AtomicU64,
    store_failures: AtomicU64,
    next_tmp: AtomicU64,
}

/// Feeds `Hash` output into SHA-256, so wasmtime's compatibility hash becomes stable bytes.
struct ShaHasher(Sha256);

impl Hasher for ShaHasher {
    fn finish(&self) -> u64 {
        0
    }
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}

/// What a compiled module depends on besides its code and wasmtime's engine: the runtime's
/// config hash, its Cranelift optimisation level and the compiler (not consensus, but they
/// change the machine code) and the backend (`pooled` or `on_demand`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Build<'a> {
    pub(crate) config_hash: &'a str,
    pub(crate) opt_level: OptLevel,
    pub(crate) compiler: Compiler,
    pub(crate) backend: &'a str,
}

/// The key of `wasm` compiled for `engine` as `build` says (see the module docs), 32 bytes.
pub(crate) fn entry_key(engine: &Engine, build: Build<'_>, wasm: &[u8]) -> [u8; 32] {
    let mut compat = ShaHasher(Sha256::new());
    engine.precompile_compatibility_hash().hash(&mut compat);
    let text = format!(
        "gamechain.module-cache.v1\ncode={}\nconfig={}\nopt_level={}\ncompiler={}\nbackend={}\nwasmtime={WASMTIME_VERSION}\nengine={}\ntarget={}-{}\n",
        hex::encode(Sha256::digest(wasm)),
        build.config_hash,
        build.opt_level.name(),
        build.compiler.name(),
        build.backend,
        hex::encode(compat.0.finalize()),
        std::env::consts::ARCH,
        std::env::consts::OS,
    );
    Sha256::digest(text.as_bytes()).into()
}

/// The entry file bytes for `payload` under `key`.
fn envelope(key: &[u8; 32], payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(key);
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&Sha256::digest(payload));
    out.extend_from_slice(payload);
    out
}

/// The payload of an entry file, or why the file is not a valid entry for `key`.
fn open_envelope<'a>(key: &[u8; 32], file: &'a [u8]) -> Result<&'a [u8], &'static str> {
    if file.len() < HEADER_LEN {
        return Err("shorter than the header");
    }
    if &file[..8] != MAGIC {
        return Err("wrong magic");
    }
    if file[8..40] != key[..] {
        return Err("made for another key");
    }
    let len = u64::from_le_bytes(file[40..48].try_into().expect("8 bytes"));
    let payload = &file[HEADER_LEN..];
    if payload.len() as u64 != len {
        return Err("truncated or extended");
    }
    if Sha256::digest(payload)[..] != file[48..80] {
        return Err("checksum mismatch");
    }
    Ok(payload)
}

impl ModuleCache {
    /// Opens (creating it if needed) the cache directory `dir`. Errors: the directory cannot be
    /// created.
    pub fn open(dir: impl Into<PathBuf>) -> io::Result<Self> {
        let dir = dir.into();
        fs::create_dir_all(&dir)?;
        Ok(Self {
            dir,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            stored: AtomicU64::new(0),
            store_failures: AtomicU64::new(0),
            next_tmp: AtomicU64::new(0),
        })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The counters so far.
    pub fn stats(&self) -> CacheStats {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        CacheStats {
            hits: get(&self.hits),
            misses: get(&self.misses),
            rejected: get(&self.rejected),
            stored: get(&self.stored),
            store_failures: get(&self.store_failures),
        }
    }

    /// The entry file of `key`.
    pub(crate) fn path(&self, key: &[u8; 32]) -> PathBuf {
        self.dir.join(format!("{}.{EXTENSION}", hex::encode(key)))
    }

    /// `wasm` compiled for `engine` as `build` says: from a valid entry, or compiled (and
    /// stored). Errors are the compiler's (the same as without a cache); cache trouble is never
    /// an error.
    pub(crate) fn get_or_compile(
        &self,
        engine: &Engine,
        build: Build<'_>,
        wasm: &[u8],
    ) -> wasmtime::Result<(Module, CodeSource)> {
        self.get_or_build(engine, build, wasm, || Module::from_binary(engine, wasm))
    }

    /// [`ModuleCache::get_or_compile`] with the machine code made by `make` on a miss (a tier-up
    /// compiled elsewhere, `run/tier.rs`); what `make` returns is stored like a compile.
    pub(crate) fn get_or_build(
        &self,
        engine: &Engine,
        build: Build<'_>,
        wasm: &[u8],
        make: impl FnOnce() -> wasmtime::Result<Module>,
    ) -> wasmtime::Result<(Module, CodeSource)> {
        let start = Instant::now();
        let key = entry_key(engine, build, wasm);
        let path = self.path(&key);
        match fs::read(&path) {
            Ok(file) => match self.deserialize(engine, &key, &file) {
                Ok(module) => {
                    self.hits.fetch_add(1, Ordering::Relaxed);
                    return Ok((module, CodeSource::Cached(start.elapsed())));
                }
                Err(why) => {
                    self.rejected.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(path = %path.display(), "compiled-module cache entry rejected ({why}); deleting and recompiling");
                    if let Err(e) = fs::remove_file(&path) {
                        if e.kind() != io::ErrorKind::NotFound {
                            tracing::warn!(path = %path.display(), "cannot delete the rejected cache entry: {e}");
                        }
                    }
                }
            },
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                self.misses.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                self.misses.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(path = %path.display(), "cannot read the compiled-module cache entry: {e}");
            }
        }
        let (module, source) = CodeSource::time(make)?;
        self.store(&key, &path, &module);
        Ok((module, source))
    }

    /// The module in `file`, after every envelope check; the reason otherwise.
    fn deserialize(&self, engine: &Engine, key: &[u8; 32], file: &[u8]) -> Result<Module, String> {
        let payload = open_envelope(key, file).map_err(str::to_string)?;
        // SAFETY: `payload` is exactly the bytes a `Module::serialize` of this key wrote (its
        // SHA-256 was just checked against the envelope, in this same buffer), for an engine
        // with the same compatibility hash (part of the key); wasmtime checks its own header
        // and engine compatibility again. See the module docs on trusting the directory.
        unsafe { Module::deserialize(engine, payload) }
            .map_err(|e| format!("wasmtime refused the payload: {e}"))
    }

    /// Writes `module`'s entry (temporary file, then rename); failures are logged and counted.
    fn store(&self, key: &[u8; 32], path: &Path, module: &Module) {
        let result = module
            .serialize()
            .map_err(|e| io::Error::other(e.to_string()))
            .and_then(|payload| {
                let n = self.next_tmp.fetch_add(1, Ordering::Relaxed);
                let tmp = self.dir.join(format!(
                    ".{}.{}.{n}.tmp",
                    hex::encode(key),
                    std::process::id()
                ));
                fs::write(&tmp, envelope(key, &payload))
                    .and_then(|()| fs::rename(&tmp, path))
                    .inspect_err(|_| {
                        let _ = fs::remove_file(&tmp);
                    })
            });
        match result {
            Ok(()) => {
                self.stored.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                self.store_failures.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(path = %path.display(), "cannot write the compiled-module cache entry: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::{Allocation, Runtime, RuntimeConfig, WasmModule};

    fn runtime() -> Arc<Runtime> {
        Runtime::new(RuntimeConfig {
            allocation: Allocation::OnDemand,
            ..RuntimeConfig::default()
        })
        .unwrap()
    }

    fn counter() -> Vec<u8> {
        wat::parse_str(include_str!("../../tests/wat/counter.wat")).unwrap()
    }

    /// The one entry file in `dir`.
    fn entry(dir: &Path) -> PathBuf {
        let files: Vec<PathBuf> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(files.len(), 1, "{files:?}");
        assert_eq!(files[0].extension().unwrap(), EXTENSION);
        files[0].clone()
    }

    /// Loads `wasm` through `cache` and checks the module works (its ABI check ran at load; a
    /// view call runs it again).
    fn load(rt: &Arc<Runtime>, cache: &ModuleCache, wasm: &[u8]) -> CodeSource {
        let m = WasmModule::load(rt, "counter", wasm, Some(cache), crate::Origin::Upload).unwrap();
        let state = gamechain_sdk::MockKv::default();
        let out = m.call_view(&state, &Default::default()).unwrap();
        assert!(out.fuel_used > 0, "the view ran");
        m.code_source()
    }

    #[test]
    fn a_second_load_comes_from_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let rt = runtime();
        let cache = ModuleCache::open(dir.path().join("compiled")).unwrap();
        let wasm = counter();
        assert!(!load(&rt, &cache, &wasm).is_cached());
        assert!(load(&rt, &cache, &wasm).is_cached());
        assert_eq!(
            cache.stats(),
            CacheStats {
                hits: 1,
                misses: 1,
                stored: 1,
                ..CacheStats::default()
            }
        );
        // Another cache over the same directory (a restarted node) hits too.
        let reopened = ModuleCache::open(cache.dir()).unwrap();
        assert!(load(&rt, &reopened, &wasm).is_cached());
        // Other code is another entry.
        let src = include_str!("../../tests/wat/counter.wat");
        let end = src.rfind(')').unwrap();
        let other = wat::parse_str(format!("{} (global i32 (i32.const 5)))", &src[..end])).unwrap();
        assert!(!load(&rt, &reopened, &other).is_cached());
        assert_eq!(fs::read_dir(cache.dir()).unwrap().count(), 2);
    }

    #[test]
    fn bad_entries_are_deleted_and_rebuilt() {
        let dir = tempfile::tempdir().unwrap();
        let rt = runtime();
        let cache = ModuleCache::open(dir.path()).unwrap();
        let wasm = counter();
        load(&rt, &cache, &wasm);
        let path = entry(dir.path());
        let good = fs::read(&path).unwrap();
        let key: [u8; 32] = good[8..40].try_into().unwrap();

        let mut flipped = good.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        let mut flipped_header = good.clone();
        flipped_header[3] ^= 0x20;
        let mut wrong_key = good.clone();
        wrong_key[8] ^= 1;
        // A valid envelope around bytes wasmtime does not accept.
        let not_wasmtime = envelope(&key, b"definitely not a serialized module");
        let mut long = good.clone();
        long.push(0);
        let cases: [(&str, Vec<u8>); 7] = [
            ("payload byte flipped", flipped),
            ("magic byte flipped", flipped_header),
            ("truncated", good[..good.len() / 2].to_vec()),
            ("extended", long),
            ("another key", wrong_key),
            ("garbage", b"garbage".to_vec()),
            ("payload wasmtime refuses", not_wasmtime),
        ];
        for (rejected, (what, bytes)) in (1..).zip(cases) {
            fs::write(&path, &bytes).unwrap();
            assert!(!load(&rt, &cache, &wasm).is_cached(), "{what}: recompiled");
            assert_eq!(cache.stats().rejected, rejected, "{what}");
            assert_eq!(fs::read(&path).unwrap(), good, "{what}: rebuilt in place");
            assert!(load(&rt, &cache, &wasm).is_cached(), "{what}: then served");
        }
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary files left"
        );
    }

    #[test]
    fn an_entry_for_another_engine_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let wasm = counter();
        let rt = runtime();
        let cache = ModuleCache::open(dir.path()).unwrap();
        load(&rt, &cache, &wasm);
        // Other consensus limits: another config hash, so another key; the first entry stays.
        let other = Runtime::new(RuntimeConfig {
            allocation: Allocation::OnDemand,
            fuel_apply: 1_234_567,
            ..RuntimeConfig::default()
        })
        .unwrap();
        assert!(!load(&other, &cache, &wasm).is_cached());
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2);
        // Another optimisation level (not consensus, same config hash): other machine code, so
        // another entry, which the next load at that level uses.
        let unoptimised = Runtime::new(RuntimeConfig {
            allocation: Allocation::OnDemand,
            opt_level: crate::OptLevel::None,
            ..RuntimeConfig::default()
        })
        .unwrap();
        assert_eq!(
            unoptimised.config().config_hash(),
            rt.config().config_hash()
        );
        let files = || -> Vec<PathBuf> {
            let mut v: Vec<PathBuf> = fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            v.sort();
            v
        };
        let before = files();
        assert!(!load(&unoptimised, &cache, &wasm).is_cached());
        assert!(load(&unoptimised, &cache, &wasm).is_cached());
        let added: Vec<PathBuf> = files()
            .into_iter()
            .filter(|f| !before.contains(f))
            .collect();
        assert_eq!(added.len(), 1, "{added:?}");
        // (Removed again: the copy below needs exactly the two entries of `rt` and `other`.)
        fs::remove_file(&added[0]).unwrap();
        // An entry copied under another key's name is refused (its embedded key differs).
        let mut names: Vec<PathBuf> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        names.sort();
        fs::copy(&names[0], &names[1]).unwrap();
        let before = cache.stats().rejected;
        assert!(!load(&other, &cache, &wasm).is_cached() || !load(&rt, &cache, &wasm).is_cached());
        assert_eq!(cache.stats().rejected, before + 1);
    }

    #[test]
    fn an_unwritable_cache_still_loads() {
        let dir = tempfile::tempdir().unwrap();
        let rt = runtime();
        let cache = ModuleCache::open(dir.path().join("gone")).unwrap();
        fs::remove_dir(cache.dir()).unwrap();
        let wasm = counter();
        assert!(!load(&rt, &cache, &wasm).is_cached());
        assert!(!load(&rt, &cache, &wasm).is_cached());
        let stats = cache.stats();
        assert_eq!((stats.stored, stats.store_failures), (0, 2));
    }
}
