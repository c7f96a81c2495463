//! `build-guest`: builds module crates of this workspace to reproducible `.wasm` files with the
//! recipe of `gamechain_sdk::guest_build` and prints, per package, one line:
//! `<path> <size in bytes> <sha256>`.
//!
//! ```text
//! cargo run -p gamechain-sdk --bin build-guest -- tictactoe [more packages…]
//! ```
//!
//! Exits with status 1 (cargo's errors on stderr) when a build fails, 2 on a usage error. On
//! wasm32 (where the SDK is a guest library) `main` does nothing.

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    let packages: Vec<String> = std::env::args().skip(1).collect();
    if packages.is_empty() || packages.iter().any(|p| p.starts_with('-')) {
        eprintln!("usage: build-guest <package>...   (e.g. build-guest tictactoe)");
        std::process::exit(2);
    }
    for package in &packages {
        match gamechain_sdk::guest_build::build_guest(package) {
            Ok(built) => println!(
                "{} {} {}",
                built.path.display(),
                built.wasm.len(),
                built.sha256
            ),
            Err(err) => {
                eprintln!("{err}");
                std::process::exit(1);
            }
        }
    }
}

#[cfg(target_arch = "wasm32")]
fn main() {}
