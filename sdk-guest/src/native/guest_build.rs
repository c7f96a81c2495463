//! Builds a module crate of this workspace to a reproducible `.wasm` (native only).
//!
//! Owns the one recipe every guest is built with, used by `build-guest` (`src/bin`) and by tests
//! that load a module into the runtime:
//!
//! ```text
//! cargo build --profile guest --target wasm32-unknown-unknown -p <package> \
//!     --target-dir <root>/target/guest
//! CARGO_ENCODED_RUSTFLAGS = -C link-arg=-zstack-size=32768
//!                           --remap-path-prefix <root>=/gamechain
//!                           --remap-path-prefix <CARGO_HOME>=/cargo
//!                           [--remap-path-prefix <path dependency>=/path-deps/<its name>]…
//! ```
//!
//! - The `guest` profile (root `Cargo.toml`) is release + LTO, one codegen unit, `panic = "abort"`.
//! - A 32 KiB stack instead of rustc's 1 MiB keeps the initial memory small, which makes a fresh
//!   instance cheap (the `move` bench in `tests/benches/move.rs` measures it).
//! - The path remapping removes the checkout's location from the binary (panic locations carry
//!   source paths), so two checkouts of one commit build byte-identical modules. A crate outside
//!   this repository (`gamechain module new`) has its path dependencies outside its root, e.g.
//!   `gamechain-sdk`: each is remapped to `/path-deps/<package name>` for the same reason.
//! - Its own target directory: the caller may be a `cargo test` that holds the main target
//!   directory's lock, and different rustflags would otherwise rebuild the host's dependencies.
//!   Inherited `RUSTFLAGS`, `CARGO_ENCODED_RUSTFLAGS`, `CARGO_TARGET_DIR` and `CARGO_BUILD_TARGET`
//!   are removed from cargo's environment so the recipe is always the same.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

/// The wasm target every guest is compiled for.
pub const GUEST_TARGET: &str = "wasm32-unknown-unknown";
/// The cargo profile guests are built with (defined in the workspace's `Cargo.toml`).
pub const GUEST_PROFILE: &str = "guest";
/// The guest's stack size in bytes (`-zstack-size`).
pub const GUEST_STACK_SIZE: u32 = 32_768;
/// What the workspace root is renamed to inside the binary.
pub const REMAPPED_ROOT: &str = "/gamechain";
/// What `$CARGO_HOME` (registry sources) is renamed to inside the binary.
pub const REMAPPED_CARGO_HOME: &str = "/cargo";

/// A built guest module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltGuest {
    /// Where cargo left the `.wasm`:
    /// `<root>/target/guest/wasm32-unknown-unknown/guest/<crate_name>.wasm`.
    pub path: PathBuf,
    /// The module's bytes.
    pub wasm: Vec<u8>,
    /// SHA-256 of `wasm`, 64 lowercase hex characters.
    pub sha256: String,
}

/// Builds the workspace package `package` (e.g. `"tictactoe"`, whose library must have the
/// `cdylib` crate type) for `wasm32-unknown-unknown` with the recipe above and reads the result.
///
/// The workspace is found from `CARGO_MANIFEST_DIR` when set (as under `cargo test` and
/// `cargo run`), else from the current directory. Cargo is `$CARGO` when set, else `cargo` on
/// the `PATH`. Errors: no workspace found, cargo could not start, the build failed (the message
/// ends with cargo's stderr), or the build produced no `.wasm` for `package`.
pub fn build_guest(package: &str) -> Result<BuiltGuest, String> {
    build_guest_in(&workspace_root()?, package)
}

/// Builds the module crate whose directory (holding its `Cargo.toml`) is `crate_dir`, inside or
/// outside this repository, with the recipe above: `cargo metadata` names its package and its
/// workspace root (a standalone crate made by `gamechain module new` is its own workspace, with
/// the `guest` profile in its `Cargo.toml`), then [`build_guest_in`]. Used by
/// `gamechain module build` and the test harness (`gamechain_runtime::testkit`).
///
/// Errors: as [`build_guest_in`], plus `cargo metadata` failing (its stderr) or no package at
/// `crate_dir`.
pub fn build_guest_crate(crate_dir: &Path) -> Result<BuiltGuest, String> {
    let krate = crate_package(crate_dir)?;
    let remaps: Vec<(PathBuf, String)> = krate
        .path_deps
        .iter()
        .filter(|(dir, _)| !dir.starts_with(&krate.root))
        .map(|(dir, name)| (dir.clone(), format!("/path-deps/{name}")))
        .collect();
    build(&krate.root, &krate.package, &remaps)
}

/// A crate as `cargo metadata --no-deps` describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CratePackage {
    /// Its workspace root (the crate's own directory for a standalone crate).
    pub root: PathBuf,
    /// Its package name.
    pub package: String,
    /// Its non-dev path dependencies: (directory, package name).
    pub path_deps: Vec<(PathBuf, String)>,
}

/// The workspace root, package name and path dependencies of the crate in `crate_dir`, from
/// `cargo metadata --no-deps`. Errors: cargo fails (its stderr) or no package has its manifest
/// in `crate_dir`.
pub fn crate_package(crate_dir: &Path) -> Result<CratePackage, String> {
    let manifest = crate_dir.join("Cargo.toml");
    let manifest = manifest
        .canonicalize()
        .map_err(|e| format!("no crate at {}: {e}", manifest.display()))?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    let output = Command::new(&cargo)
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .arg("--manifest-path")
        .arg(&manifest)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", Path::new(&cargo).display()))?;
    if !output.status.success() {
        return Err(format!(
            "cargo metadata for {} failed ({}):\n{}",
            manifest.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("cargo metadata printed no JSON: {e}"))?;
    let root = metadata["workspace_root"]
        .as_str()
        .map(PathBuf::from)
        .ok_or("cargo metadata printed no workspace_root")?;
    let found = metadata["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| {
            p["manifest_path"]
                .as_str()
                .and_then(|path| Path::new(path).canonicalize().ok())
                .is_some_and(|path| path == manifest)
        })
        .ok_or_else(|| format!("no package has its manifest at {}", manifest.display()))?;
    let path_deps = found["dependencies"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|d| d["kind"].as_str() != Some("dev"))
        .filter_map(|d| Some((PathBuf::from(d["path"].as_str()?), d["name"].as_str()?)))
        .map(|(dir, name)| (dir.canonicalize().unwrap_or(dir), name.to_string()))
        .collect();
    Ok(CratePackage {
        root,
        package: found["name"].as_str().unwrap_or_default().to_string(),
        path_deps,
    })
}

/// Builds `package` of the workspace at `root` (the directory of the `Cargo.toml` with
/// `[workspace]`, which must define the `guest` profile) with the recipe above.
///
/// Errors: cargo could not start, the build failed (the message ends with cargo's stderr), or
/// the build produced no `.wasm` for `package`.
pub fn build_guest_in(root: &Path, package: &str) -> Result<BuiltGuest, String> {
    build(root, package, &[])
}

/// The recipe, with `remaps` (directory, replacement) added to the path remapping.
fn build(root: &Path, package: &str, remaps: &[(PathBuf, String)]) -> Result<BuiltGuest, String> {
    let root = root.to_path_buf();
    ensure_guest_target(&root)?;
    let target_dir = root.join("target").join("guest");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    let output = Command::new(&cargo)
        .current_dir(&root)
        .args([
            "build",
            "--profile",
            GUEST_PROFILE,
            "--target",
            GUEST_TARGET,
            "-p",
            package,
        ])
        .arg("--manifest-path")
        .arg(root.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target_dir)
        .args(["--message-format", "json-render-diagnostics"])
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET")
        .env(
            "CARGO_ENCODED_RUSTFLAGS",
            guest_rustflags(&root, &cargo_home(), remaps),
        )
        .output()
        .map_err(|e| format!("cannot run {}: {e}", Path::new(&cargo).display()))?;
    if !output.status.success() {
        return Err(format!(
            "building guest `{package}` failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let path = wasm_artifact(&output.stdout).ok_or_else(|| {
        format!("building guest `{package}` produced no .wasm (is its crate-type \"cdylib\"?)")
    })?;
    let wasm = std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let sha256 = hex::encode(Sha256::digest(&wasm));
    Ok(BuiltGuest { path, wasm, sha256 })
}

/// Installs the wasm target with `rustup target add` when the toolchain lacks it, so a fresh
/// machine needs nothing typed first (`RUSTUP_AUTO_INSTALL=0` machines do not install the
/// `targets` of `rust-toolchain.toml` by themselves). Runs in `root`, so rustup picks the
/// toolchain that file names. Errors when the target is missing and rustup cannot add it.
pub fn ensure_guest_target(root: &Path) -> Result<(), String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| OsString::from("rustc"));
    let sysroot = Command::new(&rustc)
        .current_dir(root)
        .args(["--print", "sysroot"])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", Path::new(&rustc).display()))?;
    let sysroot = PathBuf::from(String::from_utf8_lossy(&sysroot.stdout).trim());
    if sysroot
        .join("lib/rustlib")
        .join(GUEST_TARGET)
        .join("lib")
        .is_dir()
    {
        return Ok(());
    }
    let status = Command::new("rustup")
        .current_dir(root)
        .args(["target", "add", GUEST_TARGET])
        .status()
        .map_err(|e| format!("the {GUEST_TARGET} target is missing and rustup cannot run: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("the {GUEST_TARGET} target is missing and `rustup target add {GUEST_TARGET}` failed ({status})"))
    }
}

/// The workspace root: the nearest directory, from `CARGO_MANIFEST_DIR` (else the current
/// directory) upwards, whose `Cargo.toml` has a `[workspace]` table.
pub fn workspace_root() -> Result<PathBuf, String> {
    let start = match std::env::var_os("CARGO_MANIFEST_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => std::env::current_dir()
            .map_err(|e| format!("cannot read the current directory: {e}"))?,
    };
    start
        .ancestors()
        .find(|dir| is_workspace_manifest(&dir.join("Cargo.toml")))
        .map(Path::to_path_buf)
        .ok_or_else(|| {
            format!(
                "no Cargo.toml with [workspace] in {} or above",
                start.display()
            )
        })
}

fn is_workspace_manifest(path: &Path) -> bool {
    std::fs::read_to_string(path)
        .is_ok_and(|text| text.lines().any(|line| line.trim() == "[workspace]"))
}

/// `$CARGO_HOME`, else `$HOME/.cargo`.
fn cargo_home() -> PathBuf {
    if let Some(home) = std::env::var_os("CARGO_HOME") {
        return PathBuf::from(home);
    }
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default()
        .join(".cargo")
}

/// The rustflags of the recipe, joined with `0x1f` as `CARGO_ENCODED_RUSTFLAGS` wants. Each
/// directory is remapped as given and, when different, as its canonical path, since either may
/// reach rustc.
fn guest_rustflags(root: &Path, cargo_home: &Path, remaps: &[(PathBuf, String)]) -> OsString {
    let mut flags: Vec<OsString> = vec![
        "-C".into(),
        format!("link-arg=-zstack-size={GUEST_STACK_SIZE}").into(),
    ];
    let fixed = [(cargo_home, REMAPPED_CARGO_HOME), (root, REMAPPED_ROOT)];
    let extra = remaps.iter().map(|(dir, to)| (dir.as_path(), to.as_str()));
    for (dir, to) in fixed.into_iter().chain(extra) {
        let mut dirs = vec![dir.to_path_buf()];
        if let Ok(canonical) = dir.canonicalize() {
            if canonical != dir {
                dirs.push(canonical);
            }
        }
        for dir in dirs {
            let mut mapping = dir.into_os_string();
            mapping.push("=");
            mapping.push(to);
            flags.push("--remap-path-prefix".into());
            flags.push(mapping);
        }
    }
    flags.join(&OsString::from("\u{1f}"))
}

/// The last `.wasm` among the `compiler-artifact` messages of `cargo --message-format json`.
fn wasm_artifact(stdout: &[u8]) -> Option<PathBuf> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|msg| msg["reason"] == "compiler-artifact")
        .flat_map(|msg| {
            let files = msg["filenames"].as_array().cloned().unwrap_or_default();
            files
                .into_iter()
                .filter_map(|f| f.as_str().map(PathBuf::from))
        })
        .rfind(|path| path.extension().is_some_and(|ext| ext == "wasm"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rustflags_remap_both_directories() {
        let flags = guest_rustflags(
            Path::new("/no/such/root"),
            Path::new("/no/such/cargo"),
            &[(PathBuf::from("/no/such/sdk"), "/path-deps/sdk".to_string())],
        );
        let flags: Vec<String> = flags
            .to_string_lossy()
            .split('\u{1f}')
            .map(str::to_string)
            .collect();
        assert_eq!(
            flags,
            [
                "-C",
                "link-arg=-zstack-size=32768",
                "--remap-path-prefix",
                "/no/such/cargo=/cargo",
                "--remap-path-prefix",
                "/no/such/root=/gamechain",
                "--remap-path-prefix",
                "/no/such/sdk=/path-deps/sdk",
            ]
        );
    }

    #[test]
    fn finds_the_wasm_artifact_in_cargo_messages() {
        let stdout = concat!(
            r#"{"reason":"compiler-artifact","filenames":["/t/libserde.rlib","/t/libserde.rmeta"]}"#,
            "\n",
            r#"{"reason":"compiler-artifact","filenames":["/t/libtictactoe.rlib","/t/tictactoe.wasm"]}"#,
            "\n",
            r#"{"reason":"build-finished","success":true}"#,
            "\n"
        );
        assert_eq!(
            wasm_artifact(stdout.as_bytes()),
            Some(PathBuf::from("/t/tictactoe.wasm"))
        );
        assert_eq!(wasm_artifact(b"{\"reason\":\"build-finished\"}\n"), None);
    }

    #[test]
    fn cargo_metadata_names_the_crate_its_root_and_path_deps() {
        let sdk = Path::new(env!("CARGO_MANIFEST_DIR"));
        let krate = crate_package(sdk).unwrap();
        assert_eq!(krate.package, "gamechain-sdk");
        assert_eq!(
            krate.root,
            workspace_root().unwrap().canonicalize().unwrap()
        );
        assert!(krate.path_deps.is_empty(), "{:?}", krate.path_deps);
        let err = crate_package(&sdk.join("src")).unwrap_err();
        assert!(err.starts_with("no crate at "), "{err}");
    }

    #[test]
    fn the_workspace_root_has_the_sdk() {
        let root = workspace_root().unwrap();
        assert!(
            root.join("sdk-guest").join("ABI.md").is_file(),
            "{}",
            root.display()
        );
    }
}
