//! Fixtures shared by the end-to-end tests and benchmarks: guest modules built from the current
//! source (never a stale copy: `gamechain_sdk::guest_build` runs cargo, which rebuilds only what
//! changed) and loaded into one shared runtime.

pub mod channel_net;
pub mod game_chain;

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock, Mutex};

use gamechain_client::{Client, Included};
use gamechain_runtime::chain::{Action, SecretKey};
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

/// How long the end-to-end tests wait for one transaction's receipt.
pub const RECEIPT_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Sends `action` signed by `key` and waits for its receipt ([`RECEIPT_WAIT`]); panics unless
/// the node accepts and includes it (the receipt itself may say `ok: false`).
pub async fn send_included(client: &Client, key: &SecretKey, action: Action) -> Included {
    client
        .send_and_wait(key, action, RECEIPT_WAIT)
        .await
        .expect("the node accepts and includes the transaction")
}
