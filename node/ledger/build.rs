//! Embeds the genesis guests: builds each module crate of [`GENESIS_PACKAGES`] for
//! `wasm32-unknown-unknown` with the workspace's one reproducible recipe
//! (`gamechain_sdk::guest_build`, a nested cargo into `target/guest`, like Substrate's
//! wasm-builder) and copies each `.wasm` to `$OUT_DIR/<package>.wasm`, which
//! `src/start/genesis_modules.rs` includes with `include_bytes!`. Nothing changed: each nested
//! cargo finds its guest fresh in well under a second, and this script only reruns when a
//! guest's sources, the guest SDK or the lock file change.

use std::path::Path;

/// The module crates a new chain's genesis may hold (`genesis_modules.rs` names their ids).
const GENESIS_PACKAGES: [&str; 9] = [
    "tictactoe",
    "mnk",
    "dice",
    "sealed_rps",
    "auction",
    "channel",
    "moveboard",
    "rps_rules",
    "tictactoe_rules",
];

fn main() {
    // Read at run time, not with `env!`: cargo reuses a compiled build script across checkouts
    // (its hash does not include the workspace's path).
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let root = Path::new(&manifest).join("../..");
    let mut watched = vec![
        "sdk-guest/src".to_string(),
        "sdk-guest/Cargo.toml".to_string(),
        "Cargo.toml".to_string(),
        "Cargo.lock".to_string(),
    ];
    // Each module's whole folder: the channel's holds its protocol crate (`protocol/`) too.
    for package in GENESIS_PACKAGES {
        watched.push(format!("modules/{package}"));
    }
    for path in &watched {
        println!("cargo:rerun-if-changed={}", root.join(path).display());
    }
    // `cargo clippy` runs build scripts with clippy as the workspace wrapper; the guest must be
    // compiled by plain rustc so that its bytes (and code hash) do not depend on the command.
    std::env::remove_var("RUSTC_WORKSPACE_WRAPPER");
    let out_dir = std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR");
    for package in GENESIS_PACKAGES {
        let built = gamechain_sdk::guest_build::build_guest(package).unwrap_or_else(|e| {
            panic!("cannot build the embedded `{package}` guest (is the wasm32-unknown-unknown target installed? `rustup target add wasm32-unknown-unknown`):\n{e}")
        });
        let out = Path::new(&out_dir).join(format!("{package}.wasm"));
        std::fs::write(&out, &built.wasm)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", out.display()));
    }
}
