//! Embeds the tic-tac-toe guest in the `gamechain` binary: builds `modules/tictactoe` for
//! `wasm32-unknown-unknown` with the workspace's one reproducible recipe
//! (`gamechain_sdk::guest_build`, a nested cargo into `target/guest`, like Substrate's
//! wasm-builder) and copies the `.wasm` to `$OUT_DIR/tictactoe.wasm`, which
//! `src/genesis_setup.rs` includes with `include_bytes!`. Also embeds the web pages and the
//! JavaScript SDK's browser bundle (`build_web.rs`).

use std::path::Path;

#[path = "build_web.rs"]
mod build_web;

fn main() {
    // Read at run time, not with `env!`: cargo reuses a compiled build script across checkouts
    // (its hash does not include the workspace's path), so a target directory copied from another
    // worktree would otherwise embed that worktree's pages and SDK.
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let root = Path::new(&manifest).join("..");
    for path in [
        "modules/tictactoe/src",
        "modules/tictactoe/Cargo.toml",
        "sdk-guest/src",
        "sdk-guest/Cargo.toml",
        "Cargo.toml",
        "Cargo.lock",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(path).display());
    }
    // `cargo clippy` runs build scripts with clippy as the workspace wrapper; the guest must be
    // compiled by plain rustc so that its bytes (and code hash) do not depend on the command.
    std::env::remove_var("RUSTC_WORKSPACE_WRAPPER");
    let built = gamechain_sdk::guest_build::build_guest("tictactoe").unwrap_or_else(|e| {
        panic!("cannot build the embedded tic-tac-toe guest (is the wasm32-unknown-unknown target installed? `rustup target add wasm32-unknown-unknown`):\n{e}")
    });
    let out =
        Path::new(&std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("tictactoe.wasm");
    std::fs::write(&out, &built.wasm)
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", out.display()));
    build_web::embed_web(&root, out.parent().expect("OUT_DIR"));
}
