//! Running the `gamechain` binary as a user types it, from async tests: [`run`], [`run_on`]
//! (with `--node URL`), and the assertions on its output ([`json_ok`], [`failed`]).

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use super::gamechain;

/// Runs `gamechain <args>` in `cwd` on a blocking thread (the test's runtime keeps going).
pub async fn run(cwd: &Path, args: &[&str]) -> Output {
    let cwd = cwd.to_path_buf();
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        gamechain(
            &cwd,
            None,
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
        )
    })
    .await
    .unwrap()
}

/// [`run`] with `--node <url>` appended.
pub async fn run_on(cwd: &Path, url: &str, args: &[&str]) -> Output {
    let mut args = args.to_vec();
    args.extend(["--node", url]);
    run(cwd, &args).await
}

/// Bytes of a child's output as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Asserts success and parses stdout as JSON.
pub fn json_ok(what: &str, out: &Output) -> Value {
    assert!(
        out.status.success(),
        "{what}: {}\nstderr: {}",
        out.status,
        text(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{what}: stdout is not JSON ({e}): {}", text(&out.stdout)))
}

/// Asserts exit `code` and one stderr line starting with `error: <prefix>`.
pub fn failed(what: &str, out: &Output, code: i32, prefix: &str) {
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{what}: stderr {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{what}: {stderr}");
    assert!(
        stderr.starts_with(&format!("error: {prefix}")),
        "{what}: {stderr}"
    );
}
