//! Fuzz target `cache_entry`: the compiled-module cache (`gamechain-vm`'s `cache.rs`,
//! `ModuleCache`) fed damaged entry files. A good entry of `runtime/tests/wat/counter.wat` is
//! made once; each input damages it (byte 0 picks how, the rest says where and with what) and
//! loads the module through the cache.
//!
//! Damage: bit flips anywhere, flips in the 80-byte header, truncation, overwriting a range,
//! appending, a whole file of garbage, a valid envelope (correct magic, key, length and
//! checksum) around garbage that is not an ELF file or around a prefix of the real payload, a
//! directory where the file should be.
//!
//! Invariants: the load always succeeds; the entry is used only when its bytes are exactly the
//! good ones, otherwise it is rejected (counted), the module recompiled and the good entry
//! written back (a directory in the way is left alone and the module still loads); the loaded
//! module answers a view and an apply exactly as a module compiled without a cache (result,
//! fuel, writes). Never a crash, never another module.
#![no_main]

use std::fs;
use std::path::PathBuf;
use std::sync::OnceLock;

use gamechain_fuzz::runtime;
use gamechain_sdk::{MockCtx, MockKv, Query};
use gamechain_vm::{CallOutcome, ModuleCache, Origin, WasmModule};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

const COUNTER: &str = include_str!("../../../runtime/tests/wat/counter.wat");
const HEADER: usize = 80;

struct Fixture {
    _dir: tempfile::TempDir,
    cache: ModuleCache,
    wasm: Vec<u8>,
    path: PathBuf,
    good: Vec<u8>,
    expected: (CallOutcome<Value>, CallOutcome<()>, MockCtx),
}

/// What the module answers: a view and an apply (`{"by": 3}` on an empty state).
fn behaviour(m: &WasmModule) -> (CallOutcome<Value>, CallOutcome<()>, MockCtx) {
    let view = m
        .call_view(&MockKv::default(), &Query::new())
        .expect("no host error");
    let mut ctx = MockCtx::new("counter");
    let apply = m
        .call_apply(&mut ctx, "ySender", br#"{"by":3}"#)
        .expect("no host error");
    (view, apply, ctx)
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temporary directory");
        let cache = ModuleCache::open(dir.path()).expect("cache directory");
        let wasm = wat::parse_str(COUNTER).expect("counter.wat");
        let uncached = WasmModule::new(runtime(), "counter", &wasm).expect("counter loads");
        let expected = behaviour(&uncached);
        let m = WasmModule::load(runtime(), "counter", &wasm, Some(&cache), Origin::Upload)
            .expect("loads");
        assert!(!m.code_source().is_cached());
        let entries: Vec<PathBuf> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(entries.len(), 1, "{entries:?}");
        let path = entries[0].clone();
        let good = fs::read(&path).unwrap();
        Fixture {
            _dir: dir,
            cache,
            wasm,
            path,
            good,
            expected,
        }
    })
}

/// The envelope of `cache.rs` around `payload`, for the entry's key.
fn envelope(good: &[u8], payload: &[u8]) -> Vec<u8> {
    use gamechain_chain::hash::sha256;
    let mut out = good[..40].to_vec();
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&sha256(payload));
    out.extend_from_slice(payload);
    out
}

fn u32_at(data: &[u8], i: usize) -> usize {
    let mut b = [0u8; 4];
    for (k, x) in b.iter_mut().enumerate() {
        *x = data.get(i + k).copied().unwrap_or(0);
    }
    u32::from_le_bytes(b) as usize
}

/// The damaged file (or `None` for a directory in the file's place).
fn damage(good: &[u8], data: &[u8]) -> Option<Vec<u8>> {
    let (mode, rest) = data.split_first().map_or((0, &[][..]), |(m, r)| (*m, r));
    let mut file = good.to_vec();
    match mode % 10 {
        0 => {
            for c in rest.chunks(5) {
                let at = u32_at(c, 0) % file.len();
                file[at] ^= c.get(4).copied().unwrap_or(1);
            }
        }
        1 => {
            for c in rest.chunks(2) {
                file[c[0] as usize % HEADER] ^= c.get(1).copied().unwrap_or(1);
            }
        }
        2 => file.truncate(u32_at(rest, 0) % file.len()),
        3 => {
            let at = u32_at(rest, 0) % file.len();
            let bytes = rest.get(4..).unwrap_or(&[]);
            for (k, b) in bytes.iter().enumerate() {
                match file.get_mut(at + k) {
                    Some(x) => *x = *b,
                    None => file.push(*b),
                }
            }
        }
        4 => file.extend_from_slice(rest),
        5 => file = rest.to_vec(),
        6 => {
            // A well-formed envelope around garbage (not an ELF file: a forged machine-code
            // payload is outside what the cache defends against, see cache.rs).
            if rest.starts_with(b"\x7fELF") {
                return Some(good.to_vec());
            }
            file = envelope(good, rest);
        }
        7 => {
            // A well-formed envelope around a prefix of the real payload.
            let payload = &good[HEADER..];
            file = envelope(good, &payload[..u32_at(rest, 0) % (payload.len() + 1)]);
        }
        8 => {
            // The header of one entry, the payload cut and padded with the input.
            file.truncate(HEADER + u32_at(rest, 0) % (good.len() - HEADER));
            file.extend_from_slice(rest.get(4..).unwrap_or(&[]));
        }
        _ => return None,
    }
    Some(file)
}

fuzz_target!(|data: &[u8]| {
    let f = fixture();
    let damaged = damage(&f.good, data);
    match &damaged {
        Some(bytes) => fs::write(&f.path, bytes).unwrap(),
        None => {
            fs::remove_file(&f.path).unwrap();
            fs::create_dir(&f.path).unwrap();
        }
    }
    let before = f.cache.stats();
    let m = WasmModule::load(
        runtime(),
        "counter",
        &f.wasm,
        Some(&f.cache),
        Origin::Upload,
    )
    .expect("a damaged cache entry never fails a load");
    let after = f.cache.stats();
    match &damaged {
        Some(bytes) if *bytes == f.good => {
            assert!(m.code_source().is_cached(), "a good entry is used");
            assert_eq!(after.hits, before.hits + 1);
        }
        Some(_) => {
            assert!(!m.code_source().is_cached(), "a damaged entry was used");
            assert_eq!(
                after.rejected,
                before.rejected + 1,
                "the damaged entry is counted"
            );
            assert_eq!(fs::read(&f.path).unwrap(), f.good, "the entry is rebuilt");
        }
        None => {
            assert!(!m.code_source().is_cached());
            fs::remove_dir(&f.path).unwrap();
            fs::write(&f.path, &f.good).unwrap();
        }
    }
    let got = behaviour(&m);
    assert_eq!(got.0, f.expected.0, "view differs from the uncached module");
    assert_eq!(
        got.1, f.expected.1,
        "apply differs from the uncached module"
    );
    assert_eq!(
        got.2.kv.state, f.expected.2.kv.state,
        "apply wrote differently"
    );
    assert_eq!(
        got.2.events, f.expected.2.events,
        "apply emitted differently"
    );
});
