//! Embeds the web pages, the JavaScript SDK's browser bundle (`build_web.rs`) and the typed
//! clients the pages play through: builds the module crates of [`PAGE_CLIENTS`] for
//! `wasm32-unknown-unknown` with the workspace's one reproducible recipe
//! (`gamechain_sdk::guest_build`, the same build `gamechain-ledger`'s build script embeds in a
//! genesis, found fresh in well under a second) and generates each one's TypeScript client from
//! the schema its wasm carries. Reruns only when a guest's sources, the guest SDK, the lock file
//! or the web sources change.

use std::path::Path;

#[path = "build_web.rs"]
mod build_web;

// The generator of `gamechain module codegen --ts`, run here on the embedded modules so that the
// pages use typed clients made from exactly the schemas the binary's modules carry.
#[path = "src/cli/module/codegen_ts.rs"]
#[allow(dead_code)]
mod codegen_ts;

/// The genesis modules the pages play through generated typed clients (`/clients/<id>.js`):
/// `/play/tictactoe/`, `/play/mnk/` and `/play/rps/` (the channel's offers).
const PAGE_CLIENTS: [&str; 3] = ["tictactoe", "mnk", "channel"];

fn main() {
    // Read at run time, not with `env!`: cargo reuses a compiled build script across checkouts
    // (its hash does not include the workspace's path), so a target directory copied from another
    // worktree would otherwise embed that worktree's pages and SDK.
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let root = Path::new(&manifest).join("..");
    let mut watched = vec![
        "sdk-guest/src".to_string(),
        "sdk-guest/Cargo.toml".to_string(),
        "Cargo.toml".to_string(),
        "Cargo.lock".to_string(),
    ];
    // Each module's whole folder: the channel's holds its protocol crate (`protocol/`) too.
    for package in PAGE_CLIENTS {
        watched.push(format!("modules/{package}"));
    }
    for path in &watched {
        println!("cargo:rerun-if-changed={}", root.join(path).display());
    }
    // `cargo clippy` runs build scripts with clippy as the workspace wrapper; the guest must be
    // compiled by plain rustc so that its bytes (and code hash) do not depend on the command.
    std::env::remove_var("RUSTC_WORKSPACE_WRAPPER");
    let out_dir = std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR");
    let clients_dir = Path::new(&out_dir).join("clients");
    std::fs::create_dir_all(&clients_dir).expect("create $OUT_DIR/clients");
    let mut clients = Vec::new();
    for package in PAGE_CLIENTS {
        let built = gamechain_sdk::guest_build::build_guest(package).unwrap_or_else(|e| {
            panic!("cannot build the embedded `{package}` guest (is the wasm32-unknown-unknown target installed? `rustup target add wasm32-unknown-unknown`):\n{e}")
        });
        let ts = codegen_ts::schema_from_wasm(&built.wasm)
            .and_then(|schema| codegen_ts::generate(&schema))
            .unwrap_or_else(|e| panic!("cannot generate the `{package}` client: {e}"));
        let file = clients_dir.join(format!("{package}.ts"));
        std::fs::write(&file, ts)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", file.display()));
        clients.push((package.to_string(), file));
    }
    build_web::embed_web(&root, Path::new(&out_dir), &clients);
}
