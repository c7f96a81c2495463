//! Fixtures shared by the end-to-end tests and benchmarks: guest modules built from the current
//! source (never a stale copy: `gamechain_sdk::guest_build` runs cargo, which rebuilds only what
//! changed) and loaded into one shared runtime.

pub mod game_chain;

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock, Mutex};

use gamechain_runtime::{Runtime, RuntimeConfig};
use gamechain_sdk::guest_build::{build_guest, BuiltGuest};

/// The guest `package` built for wasm32 from the current source, once per test process.
/// Panics with cargo's output when the build fails.
pub fn guest(package: &str) -> BuiltGuest {
    static BUILT: LazyLock<Mutex<BTreeMap<String, BuiltGuest>>> = LazyLock::new(Default::default);
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(guest) = built.get(package) {
        return guest.clone();
    }
    let guest = build_guest(package).unwrap_or_else(|e| panic!("{e}"));
    built.insert(package.to_string(), guest.clone());
    guest
}

/// One runtime with the default configuration, shared by every test of a process.
pub fn runtime() -> Arc<Runtime> {
    static RUNTIME: LazyLock<Arc<Runtime>> = LazyLock::new(|| {
        Runtime::new(RuntimeConfig::default()).expect("the default runtime configuration is valid")
    });
    RUNTIME.clone()
}
