//! The JavaScript suites of `node/web/sdk/`, run by `cargo test` against the `gamechain` binary
//! cargo built for these tests (`GAMECHAIN_BIN`): `npm test` (the Rust side's fixed vectors, the
//! SDK against a node it starts, the off-chain `Channel` against the channel modules it builds and
//! deploys, the seed's `play.mjs`) and `npm run test:browser` (headless Chromium, two players:
//! tic-tac-toe, m,n,k, rock-paper-scissors through the move board, a dice duel rolled from the block beacon and verified on `/verify/`, sealed rock-paper-scissors and a sealed-bid auction opened by the chain and verified, the typed clients the pages use, the dev page). Needs Node.js 20+ with npm, and Chromium at `/usr/bin/chromium` (or
//! `$CHROMIUM`) for the second; `tests/run.sh` (the README's test command) installs them. `node_modules/` comes from the lockfile
//! (`npm ci`, run here when it is missing). Each fails with a message saying what is missing.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{heavy, require_node_packages, sdk_dir};

/// Longest a suite may run.
const SUITE_LIMIT: Duration = Duration::from_secs(900);

fn run_suite(script: &str) {
    // The suites start nodes and browsers, and their pages race block times: one at a time,
    // and never beside another heavy test.
    let _heavy = heavy();
    require_node_packages(".package-lock.json");
    let started = Instant::now();
    let mut child = Command::new("npm")
        .args(["run", "--silent", script])
        .current_dir(sdk_dir())
        .env("GAMECHAIN_BIN", env!("CARGO_BIN_EXE_gamechain"))
        .stdin(Stdio::null())
        .spawn()
        .expect("npm runs");
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(
                status.success(),
                "`npm run {script}` in node/web/sdk failed ({status}); its output is above"
            );
            return;
        }
        if started.elapsed() > SUITE_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`npm run {script}` took over {SUITE_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn sdk_vectors_node_and_play_mjs() {
    run_suite("test");
}

#[test]
fn browser_pages_in_chromium() {
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_string());
    assert!(
        Path::new(&chromium).exists(),
        "Chromium is needed for the browser suite and is not at {chromium}: `apt-get install -y chromium` (`tests/run.sh` does), or set CHROMIUM"
    );
    run_suite("test:browser");
}
