//! TypeScript in the tests: `tsc` from node/web/sdk's lockfile with the settings generated
//! clients document, a work folder where `@gamechain/sdk` resolves to the SDK's sources, and
//! running a tool to its end under a time limit.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::cli::text;
use super::{require_node_packages, sdk_dir};

/// A folder for TypeScript files that import `@gamechain/sdk` (a link to node/web/sdk) as ES
/// modules (`package.json` says `"type": "module"`). Creates `dir`.
pub fn ts_work_dir(dir: &Path) {
    std::fs::create_dir_all(dir.join("node_modules/@gamechain")).unwrap();
    std::os::unix::fs::symlink(sdk_dir(), dir.join("node_modules/@gamechain/sdk")).unwrap();
    std::fs::write(dir.join("package.json"), "{\"type\":\"module\"}\n").unwrap();
}

/// `tsc` of node/web/sdk (installed from its lockfile when missing), after checking Node.js 20+.
pub fn tsc() -> PathBuf {
    require_node_packages(".bin/tsc");
    let tsc = sdk_dir().join("node_modules/.bin/tsc");
    assert!(tsc.exists(), "no {} after `npm ci`", tsc.display());
    tsc
}

/// Runs `command` to its end (at most `limit`), panicking with its output unless it succeeds;
/// returns its stdout.
pub fn run_tool(mut command: Command, what: &str, limit: Duration) -> String {
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    let pid = child.id();
    let (done, output) = std::sync::mpsc::channel();
    std::thread::spawn(move || done.send(child.wait_with_output()));
    let started = Instant::now();
    let out = match output.recv_timeout(limit) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            // SAFETY: no memory-safety preconditions; the child is not reaped yet.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            panic!("{what} did not finish in {limit:?}");
        }
    };
    assert!(
        out.status.success(),
        "{what} failed ({}) after {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        started.elapsed(),
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// `tsc --strict` with the settings the generated file documents (ES2020+ for bigint; Node's
/// ES modules), on `files` in `dir`, with `extra` flags.
pub fn tsc_command(dir: &Path, extra: &[&str], files: &[&str]) -> Command {
    let mut command = Command::new(tsc());
    command
        .current_dir(dir)
        .args([
            "--strict",
            "--target",
            "es2022",
            "--module",
            "nodenext",
            "--moduleResolution",
            "nodenext",
        ])
        .args(extra)
        .args(files);
    command
}
