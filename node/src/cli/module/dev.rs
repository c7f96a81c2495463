//! `gamechain dev`: the author's edit loop for a module crate made by `gamechain module new`.
//!
//! Owns: starting an embedded dev node in-process (fast blocks, a throwaway data directory
//! under the crate's `target/`, a deployer key made and funded by the faucet), building the
//! crate with the one guest recipe (`gamechain_sdk::guest_build`, as `module build` does),
//! deploying it under policy `owner`, watching `src/` and `Cargo.toml` (mtimes polled every
//! [`POLL_MS`], debounced by [`SETTLE_MS`]), and on every save rebuilding, upgrading (the
//! chain runs the module's `gc_migrate` if it exports one), regenerating the TypeScript client
//! (`codegen_ts.rs`), printing one progress line per step; stopping on SIGINT/SIGTERM. The page
//! at `/dev/?module=<id>` is a static file of the site (`node/web/site/dev/`), served by every
//! node; this command only prints its address.

use std::collections::BTreeMap;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use clap::Args;
use gamechain_chain::key_file::write_key_file;
use gamechain_client::client::Client;
use gamechain_runtime::chain::{Action, Network, SecretKey, UpgradePolicy};

use crate::cli::codegen_ts;
use crate::config::NodeConfig;
use crate::server::node::NodeHandle;

/// How often the watched files' mtimes are read, ms.
pub const POLL_MS: u64 = 300;
/// How long the files must stay unchanged after a change before a rebuild starts, ms (an
/// editor's save may touch several files, or write one in several steps).
pub const SETTLE_MS: u64 = 250;
/// The dev node's longest wait between blocks, ms (a transaction gets its block at once).
pub const DEV_BLOCK_INTERVAL_MS: u64 = 200;

/// `gamechain dev --help`'s text (the variant's doc comment is the short one).
pub const LONG_ABOUT: &str =
    "Run a module crate (made by `gamechain module new`) on an embedded dev node and \
redeploy it on every save.\n\n\
Starts a node in-process (a block at least every 200 ms, a throwaway data directory, a deployer \
key funded by the faucet), builds the crate to .wasm exactly as `gamechain module build` does, \
deploys it under policy `owner`, writes its TypeScript client, then watches src/ and Cargo.toml: \
each save rebuilds; a build error prints the compiler's errors and keeps the old code running; a \
good build is deployed as an owner upgrade (running the module's gc_migrate if it exports one) \
and the client is regenerated. One line per step:\n\n  \
built <size> B sha256 <12 hex> in <ms> ms; deployed <id> at block <h>\n  \
rebuilt <size> B sha256 <12 hex> in <ms> ms; upgraded at block <h> (migration ran|none)\n\n\
The page http://<addr>/dev/?module=<id> has the module's ops as forms, its views and its live \
events. Ctrl-C (SIGINT) or SIGTERM stops it (exit 0). See docs/modules.md, \"The dev loop\".";

/// `gamechain dev`.
#[derive(Debug, Args)]
pub struct DevArgs {
    /// The module crate (the directory of its Cargo.toml).
    #[arg(long, value_name = "CRATE", default_value = ".")]
    pub path: PathBuf,
    /// The dev node's listen address (default: 127.0.0.1 and a free port).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<SocketAddr>,
    /// The dev node's data directory, emptied at start (default: <crate>/target/gamechain-dev);
    /// a non-empty directory without the deployer.wif of an earlier session is refused.
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,
    /// Where the TypeScript client is written (default: <crate>/client/<id>.ts).
    #[arg(long, value_name = "OUT")]
    pub ts: Option<PathBuf>,
}

/// The watched files and their (mtime, size).
pub type Snapshot = BTreeMap<PathBuf, (SystemTime, u64)>;

/// The files of `crate_dir/src/` (recursively) and `crate_dir/Cargo.toml` with their mtimes and
/// sizes; unreadable entries are left out.
pub fn snapshot(crate_dir: &Path) -> Snapshot {
    let mut files = Snapshot::new();
    let mut stack = vec![crate_dir.join("src")];
    add_file(&mut files, &crate_dir.join("Cargo.toml"));
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                add_file(&mut files, &path);
            }
        }
    }
    files
}

fn add_file(files: &mut Snapshot, path: &Path) {
    if let Ok(meta) = std::fs::metadata(path) {
        if let Ok(modified) = meta.modified() {
            files.insert(path.to_path_buf(), (modified, meta.len()));
        }
    }
}

/// Change detection with debouncing: feed it a [`Snapshot`] at each poll; it answers `true`
/// once, when the files changed and then stayed the same for `settle`.
#[derive(Debug)]
pub struct Debounce {
    last: Snapshot,
    changed_at: Option<Instant>,
    settle: Duration,
}

impl Debounce {
    /// Starts from `current` (what was built last).
    pub fn new(current: Snapshot, settle: Duration) -> Self {
        Debounce {
            last: current,
            changed_at: None,
            settle,
        }
    }

    /// `true` when a rebuild is due at `now`: a change was seen and nothing changed since for
    /// `settle`.
    pub fn observe(&mut self, current: Snapshot, now: Instant) -> bool {
        if current != self.last {
            self.last = current;
            self.changed_at = Some(now);
            return false;
        }
        match self.changed_at {
            Some(at) if now.duration_since(at) >= self.settle => {
                self.changed_at = None;
                true
            }
            _ => false,
        }
    }
}

/// What a build produced, for the progress line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildSummary {
    /// Bytes of wasm.
    pub size: usize,
    /// Its SHA-256, hex.
    pub sha256: String,
    /// How long the build took, ms.
    pub ms: u128,
}

impl BuildSummary {
    fn head(&self, verb: &str) -> String {
        let short: String = self.sha256.chars().take(12).collect();
        format!("{verb} {} B sha256 {short} in {} ms", self.size, self.ms)
    }
}

/// `built <size> B sha256 <12 hex> in <ms> ms; deployed <id> at block <h>`.
pub fn deployed_line(build: &BuildSummary, id: &str, height: u64) -> String {
    format!("{}; deployed {id} at block {height}", build.head("built"))
}

/// `rebuilt … in <ms> ms; upgraded at block <h> (migration ran|none)`.
pub fn upgraded_line(build: &BuildSummary, height: u64, migration: bool) -> String {
    let migration = if migration { "migration ran" } else { "none" };
    format!(
        "{}; upgraded at block {height} ({migration})",
        build.head("rebuilt")
    )
}

/// `rebuilt … in <ms> ms; upgrade refused at block <h>: <error>`.
pub fn refused_line(build: &BuildSummary, verb: &str, height: u64, error: &str) -> String {
    format!(
        "{}; {verb} refused at block {height}: {error}",
        build.head("rebuilt")
    )
}

/// Whether `wasm` exports a function named `gc_migrate` (ABI.md, "Upgrades"). A malformed
/// module answers `false` (the chain refuses it anyway).
pub fn exports_migrate(wasm: &[u8]) -> bool {
    fn leb(bytes: &[u8], at: &mut usize) -> Option<u32> {
        let mut value: u32 = 0;
        for shift in (0..35).step_by(7) {
            let b = *bytes.get(*at)?;
            *at += 1;
            value |= u32::from(b & 0x7f).checked_shl(shift)?;
            if b & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }
    if wasm.len() < 8 || &wasm[..4] != b"\0asm" {
        return false;
    }
    let mut at = 8;
    while at < wasm.len() {
        let id = wasm[at];
        at += 1;
        let Some(size) = leb(wasm, &mut at) else {
            return false;
        };
        let end = at + size as usize;
        if end > wasm.len() {
            return false;
        }
        if id == 7 {
            let mut p = at;
            let Some(count) = leb(wasm, &mut p) else {
                return false;
            };
            for _ in 0..count {
                let Some(len) = leb(wasm, &mut p) else {
                    return false;
                };
                let name_end = p + len as usize;
                if name_end > end {
                    return false;
                }
                let name = &wasm[p..name_end];
                p = name_end;
                let kind = wasm.get(p).copied();
                p += 1;
                if leb(wasm, &mut p).is_none() {
                    return false;
                }
                if name == b"gc_migrate" && kind == Some(0) {
                    return true;
                }
            }
            return false;
        }
        at = end;
    }
    false
}

/// Runs `gamechain dev` until SIGINT/SIGTERM. Errors: no crate at `--path`, the node does not
/// start, the faucet fails. A failed build or a refused upgrade is printed, not an error.
pub async fn run(args: DevArgs, out: &mut dyn Write) -> Result<(), String> {
    let crate_dir = args
        .path
        .canonicalize()
        .map_err(|e| format!("no module crate at {}: {e}", args.path.display()))?;
    if !crate_dir.join("Cargo.toml").is_file() {
        return Err(format!(
            "no Cargo.toml in {} (run `gamechain dev` in a crate made by `gamechain module new`, or pass --path CRATE)",
            crate_dir.display()
        ));
    }
    let package = gamechain_sdk::guest_build::crate_package(&crate_dir)?.package;
    let data_dir = args
        .data
        .clone()
        .unwrap_or_else(|| crate_dir.join("target/gamechain-dev"));
    if may_empty(&data_dir)? {
        std::fs::remove_dir_all(&data_dir)
            .map_err(|e| format!("cannot empty {}: {e}", data_dir.display()))?;
    }
    std::fs::create_dir_all(&data_dir)
        .map_err(|e| format!("cannot create {}: {e}", data_dir.display()))?;
    let config = NodeConfig {
        listen: args
            .listen
            .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0))),
        block_interval_ms: DEV_BLOCK_INTERVAL_MS,
        min_block_interval_ms: crate::cli::local_node::LOCAL_MIN_BLOCK_INTERVAL_MS,
        rate_limit_per_sec: 0,
        data_dir: data_dir.join("node"),
        ..NodeConfig::default()
    };
    let node = NodeHandle::start(config)
        .await
        .map_err(|e| format!("the dev node did not start: {e}"))?;
    let url = node.url();
    let result = session(&args, &crate_dir, &package, &data_dir, &url, out).await;
    let stopped = node.shutdown().await.map_err(|e| e.to_string());
    result?;
    stopped?;
    line(out, "stopped");
    Ok(())
}

/// Whether the data directory `dir` is to be emptied before the start: `false` when it does not
/// exist or is empty, `true` when a dev session made it (it holds `deployer.wif`). Errors: any
/// other non-empty directory (never deleted: `--data` may name the wrong folder).
pub fn may_empty(dir: &Path) -> Result<bool, String> {
    let Ok(mut entries) = std::fs::read_dir(dir) else {
        return Ok(false);
    };
    if entries.next().is_none() {
        return Ok(false);
    }
    if dir.join("deployer.wif").is_file() {
        return Ok(true);
    }
    Err(format!(
        "{} is not empty and is not the data directory of a `gamechain dev` session (no \
         deployer.wif): pick another --data DIR (it is emptied at every start)",
        dir.display()
    ))
}

fn line(out: &mut dyn Write, text: &str) {
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
}

/// Everything between the node's start and its shutdown.
async fn session(
    args: &DevArgs,
    crate_dir: &Path,
    package: &str,
    data_dir: &Path,
    url: &str,
    out: &mut dyn Write,
) -> Result<(), String> {
    let client = Client::new(url).map_err(|e| e.to_string())?;
    let key = SecretKey::generate(Network::Testnet);
    let key_file = data_dir.join("deployer.wif");
    write_key_file(&key_file, &key)?;
    let funded = client
        .send_and_wait(
            &key,
            Action::Faucet {
                token: "GOLD".into(),
            },
            Duration::from_secs(30),
        )
        .await
        .map_err(|e| format!("the faucet failed: {e}"))?;
    if !funded.receipt.ok {
        return Err(format!(
            "the faucet failed: {}",
            funded.receipt.error.unwrap_or_default()
        ));
    }
    line(
        out,
        &format!(
            "node {url} (data {}, a block at least every {DEV_BLOCK_INTERVAL_MS} ms)",
            data_dir.display()
        ),
    );
    line(
        out,
        &format!(
            "deployer {} (key {}), funded by the faucet",
            key.address(),
            key_file.display()
        ),
    );

    let mut loop_state = Loop {
        client,
        key,
        crate_dir: crate_dir.to_path_buf(),
        package: package.to_string(),
        ts: args.ts.clone(),
        url: url.to_string(),
        deployed: None,
    };
    let shutdown = crate::cli::signal::shutdown_signal();
    tokio::pin!(shutdown);
    let mut debounce = Debounce::new(snapshot(crate_dir), Duration::from_millis(SETTLE_MS));
    let first = loop_state.build_and_deploy(out);
    tokio::select! {
        _ = &mut shutdown => return Ok(()),
        _ = first => {}
    }
    line(
        out,
        &format!(
            "watching {}/src and Cargo.toml (Ctrl-C to stop)",
            crate_dir.display()
        ),
    );
    let mut tick = tokio::time::interval(Duration::from_millis(POLL_MS));
    loop {
        tokio::select! {
            _ = &mut shutdown => return Ok(()),
            _ = tick.tick() => {}
        }
        if !debounce.observe(snapshot(crate_dir), Instant::now()) {
            continue;
        }
        let again = loop_state.build_and_deploy(out);
        tokio::select! {
            _ = &mut shutdown => return Ok(()),
            _ = again => {}
        }
    }
}

/// The loop's state between builds.
struct Loop {
    client: Client,
    key: SecretKey,
    crate_dir: PathBuf,
    package: String,
    ts: Option<PathBuf>,
    url: String,
    /// The module id once deployed.
    deployed: Option<String>,
}

impl Loop {
    /// One build, then a deploy (the first time) or an upgrade; every outcome printed.
    async fn build_and_deploy(&mut self, out: &mut dyn Write) {
        let started = Instant::now();
        let dir = self.crate_dir.clone();
        let built = tokio::task::spawn_blocking(move || {
            gamechain_sdk::guest_build::build_guest_crate(&dir)
        })
        .await
        .unwrap_or_else(|e| Err(format!("the build task failed: {e}")));
        let built = match built {
            Ok(built) => built,
            Err(e) => {
                let _ = writeln!(std::io::stderr(), "{e}");
                let kept = if self.deployed.is_some() {
                    "the previous code keeps running"
                } else {
                    "nothing deployed yet"
                };
                line(
                    out,
                    &format!("build failed; {kept} (fix and save to retry)"),
                );
                return;
            }
        };
        let summary = BuildSummary {
            size: built.wasm.len(),
            sha256: built.sha256.clone(),
            ms: started.elapsed().as_millis(),
        };
        let schema = codegen_ts::schema_from_wasm(&built.wasm).ok();
        let id = self.deployed.clone().unwrap_or_else(|| {
            schema
                .as_deref()
                .and_then(|s| codegen_ts::parse_schema(s).ok())
                .map(|s| s.module)
                .unwrap_or_else(|| self.package.clone())
        });
        let upgrade = self.deployed.is_some();
        let action = Action::Deploy {
            module: id.clone(),
            code: built.wasm.clone(),
            policy: Some(UpgradePolicy::Owner),
        };
        let verb = if upgrade { "upgrade" } else { "deploy" };
        let included = match self
            .client
            .send_and_wait(&self.key, action, Duration::from_secs(60))
            .await
        {
            Ok(included) => included,
            Err(e) => {
                line(
                    out,
                    &format!(
                        "{}; {verb} refused: {e}",
                        summary.head(if upgrade { "rebuilt" } else { "built" })
                    ),
                );
                return;
            }
        };
        if !included.receipt.ok {
            let error = included.receipt.error.unwrap_or_default();
            line(out, &refused_line(&summary, verb, included.height, &error));
            return;
        }
        if upgrade {
            let migration = exports_migrate(&built.wasm);
            line(out, &upgraded_line(&summary, included.height, migration));
        } else {
            line(out, &deployed_line(&summary, &id, included.height));
            line(out, &format!("page {}/dev/?module={id}", self.url));
            self.deployed = Some(id.clone());
        }
        let ts = self
            .ts
            .clone()
            .unwrap_or_else(|| self.crate_dir.join("client").join(format!("{id}.ts")));
        match schema.map(|s| codegen_ts::generate(&s)) {
            Some(Ok(text)) => {
                let written = ts
                    .parent()
                    .map(std::fs::create_dir_all)
                    .transpose()
                    .and_then(|_| std::fs::write(&ts, text));
                match written {
                    Ok(()) => line(out, &format!("client {}", ts.display())),
                    Err(e) => line(out, &format!("cannot write {}: {e}", ts.display())),
                }
            }
            Some(Err(e)) => line(out, &format!("no TypeScript client: {e}")),
            None => line(out, "no TypeScript client: the module declares no schema"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(entries: &[(&str, u64, u64)]) -> Snapshot {
        entries
            .iter()
            .map(|(p, secs, len)| {
                (
                    PathBuf::from(p),
                    (SystemTime::UNIX_EPOCH + Duration::from_secs(*secs), *len),
                )
            })
            .collect()
    }

    #[test]
    fn a_change_rebuilds_once_after_it_settles() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let a = snap(&[("src/lib.rs", 1, 10)]);
        let mut d = Debounce::new(a.clone(), ms(250));
        assert!(!d.observe(a.clone(), t0), "nothing changed");
        assert!(!d.observe(a.clone(), t0 + ms(1000)), "still nothing");
        let b = snap(&[("src/lib.rs", 2, 10)]);
        assert!(
            !d.observe(b.clone(), t0 + ms(1300)),
            "changed: wait to settle"
        );
        let c = snap(&[("src/lib.rs", 2, 12)]);
        assert!(
            !d.observe(c.clone(), t0 + ms(1400)),
            "changed again: restart"
        );
        assert!(!d.observe(c.clone(), t0 + ms(1600)), "not settled yet");
        assert!(d.observe(c.clone(), t0 + ms(1700)), "settled: rebuild");
        assert!(!d.observe(c.clone(), t0 + ms(2000)), "once");
        let added = snap(&[("src/lib.rs", 2, 12), ("src/more.rs", 3, 1)]);
        assert!(!d.observe(added.clone(), t0 + ms(2300)));
        assert!(d.observe(added.clone(), t0 + ms(2600)), "a new file counts");
        let removed = snap(&[("src/lib.rs", 2, 12)]);
        assert!(!d.observe(removed.clone(), t0 + ms(2900)));
        assert!(d.observe(removed, t0 + ms(3200)), "a removed file counts");
    }

    #[test]
    fn snapshot_sees_src_and_the_manifest_only() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        std::fs::create_dir_all(dir.join("src/deep")).unwrap();
        std::fs::create_dir_all(dir.join("target")).unwrap();
        std::fs::write(dir.join("Cargo.toml"), "x").unwrap();
        std::fs::write(dir.join("src/lib.rs"), "x").unwrap();
        std::fs::write(dir.join("src/deep/a.rs"), "xy").unwrap();
        std::fs::write(dir.join("target/out"), "x").unwrap();
        std::fs::write(dir.join("README.md"), "x").unwrap();
        let files: Vec<PathBuf> = snapshot(dir)
            .keys()
            .map(|p| p.strip_prefix(dir).unwrap().to_path_buf())
            .collect();
        assert_eq!(
            files,
            [
                PathBuf::from("Cargo.toml"),
                PathBuf::from("src/deep/a.rs"),
                PathBuf::from("src/lib.rs")
            ]
        );
    }

    #[test]
    fn only_a_dev_data_directory_is_emptied() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("data");
        assert_eq!(may_empty(&dir), Ok(false), "missing");
        std::fs::create_dir(&dir).unwrap();
        assert_eq!(may_empty(&dir), Ok(false), "empty");
        std::fs::write(dir.join("notes.txt"), "keep me").unwrap();
        let err = may_empty(&dir).unwrap_err();
        assert!(
            err.contains("is not the data directory of a `gamechain dev` session"),
            "{err}"
        );
        std::fs::write(dir.join("deployer.wif"), "x").unwrap();
        assert_eq!(may_empty(&dir), Ok(true));
    }

    #[test]
    fn progress_lines() {
        let b = BuildSummary {
            size: 41234,
            sha256: "0123456789abcdef0123".into(),
            ms: 912,
        };
        assert_eq!(
            deployed_line(&b, "tally", 3),
            "built 41234 B sha256 0123456789ab in 912 ms; deployed tally at block 3"
        );
        assert_eq!(
            upgraded_line(&b, 9, true),
            "rebuilt 41234 B sha256 0123456789ab in 912 ms; upgraded at block 9 (migration ran)"
        );
        assert_eq!(
            upgraded_line(&b, 9, false),
            "rebuilt 41234 B sha256 0123456789ab in 912 ms; upgraded at block 9 (none)"
        );
        assert_eq!(
            refused_line(&b, "upgrade", 10, "invalid: x"),
            "rebuilt 41234 B sha256 0123456789ab in 912 ms; upgrade refused at block 10: invalid: x"
        );
    }

    #[test]
    fn migrate_export_is_found() {
        // (module (func) (export "gc_migrate" (func 0)))
        let mut with = b"\0asm\x01\0\0\0".to_vec();
        with.extend([1, 4, 1, 0x60, 0, 0]); // type section: () -> ()
        with.extend([3, 2, 1, 0]); // function section
        let name = b"gc_migrate";
        let mut export = vec![1, name.len() as u8];
        export.extend(name);
        export.extend([0, 0]);
        with.push(7);
        with.push(export.len() as u8);
        with.extend(&export);
        with.extend([10, 4, 1, 2, 0, 0x0b]); // code section
        assert!(exports_migrate(&with));
        let without: Vec<u8> = with
            .iter()
            .map(|b| if *b == b'g' { b'h' } else { *b })
            .collect();
        assert!(!exports_migrate(&without));
        assert!(!exports_migrate(b"\0asm\x01\0\0\0"));
        assert!(!exports_migrate(b"nope"));
    }
}
