//! Helpers of the replay tests (`verify/verify.rs`, `storage/follower.rs`): a game workload sent
//! to a node over HTTP, running `gamechain verify` and reading its JSON, and a follower process.

use std::path::Path;

use gamechain_client::client::Client;
use gamechain_runtime::chain::{Action, Network, SecretKey};
use gamechain_sdk::Amount;
use serde_json::{json, Value};

pub use super::cli::run;

/// One game between two fresh keys, every transaction sent without waiting (the mempool keeps
/// arrival order, and each key's nonces follow): faucets, a staked create, a join, a rejected
/// move out of turn, a move on a taken cell, moves until `x` wins on the top row, a transfer
/// back and a move after the end, on the genesis `tictactoe`. Returns the txid of the last
/// transaction.
pub async fn play_one_game(client: &Client, stake: u32) -> String {
    play_one_game_on(client, "tictactoe", stake).await
}

/// [`play_one_game`] on the tic-tac-toe deployed as `module`.
pub async fn play_one_game_on(client: &Client, module: &str, stake: u32) -> String {
    let game = |op: Value| Action::game(module, &op);
    let (x, o) = (
        SecretKey::generate(Network::Testnet),
        SecretKey::generate(Network::Testnet),
    );
    let faucet = || Action::Faucet {
        token: "GOLD".into(),
    };
    client.send(&x, faucet()).await.unwrap();
    client.send(&o, faucet()).await.unwrap();
    let create = client
        .send(
            &x,
            game(json!({"kind": "create", "stake": stake.to_string()})),
        )
        .await
        .unwrap();
    let id = &create[..16];
    let mv = |cell: u32| game(json!({"kind": "move", "id": id, "cell": cell}));
    client
        .send(&o, game(json!({"kind": "join", "id": id})))
        .await
        .unwrap();
    client.send(&o, mv(4)).await.unwrap(); // not your turn
    client.send(&x, mv(0)).await.unwrap();
    client.send(&o, mv(0)).await.unwrap(); // cell is taken
    client.send(&o, mv(4)).await.unwrap();
    client.send(&x, mv(1)).await.unwrap();
    client.send(&o, mv(8)).await.unwrap();
    client.send(&x, mv(2)).await.unwrap(); // x wins
    client
        .send(
            &x,
            Action::Transfer {
                to: o.address(),
                token: "GOLD".into(),
                amount: Amount(5),
            },
        )
        .await
        .unwrap();
    client.send(&o, mv(6)).await.unwrap() // game is over
}

/// `games` games at once, then waits until the last transaction of each is included.
pub async fn workload(client: &Client, games: usize) {
    let mut tasks = Vec::new();
    for i in 0..games {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            play_one_game(&client, 10 + i as u32).await
        }));
    }
    for t in tasks {
        let last = t.await.unwrap();
        let included = client
            .wait_for_receipt(&last, std::time::Duration::from_secs(30))
            .await
            .unwrap();
        assert!(!included.receipt.ok, "the move after the end fails");
    }
}

/// `gamechain verify <source...> --json`: the exit code and the report.
pub async fn verify_json(cwd: &Path, source: &[&str]) -> (i32, Value) {
    let mut args = vec!["verify"];
    args.extend_from_slice(source);
    args.push("--json");
    let out = run(cwd, &args).await;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let report = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "verify {source:?}: stdout is not JSON ({e}): {stdout}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), report)
}

/// A `gamechain node --follow <upstream>` process on `node`'s configuration (data directory and
/// port), logging to `<dir>/follower-<n>.log`.
pub struct Follower {
    /// Its configuration (the process field of it is unused).
    pub node: super::NodeProcess,
    child: Option<std::process::Child>,
    starts: u32,
    upstream: String,
}

impl Follower {
    /// A follower of `upstream` in `dir` (not started).
    pub fn new(dir: &Path, upstream: &str) -> Follower {
        Self::with_config(dir, upstream, "")
    }

    /// [`new`](Self::new) with `extra` TOML lines in its configuration.
    pub fn with_config(dir: &Path, upstream: &str, extra: &str) -> Follower {
        Follower {
            node: super::NodeProcess::new(dir, extra),
            child: None,
            starts: 0,
            upstream: upstream.to_string(),
        }
    }

    /// The log of the latest start.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.node.dir.join(format!("follower-{}.log", self.starts)))
            .unwrap_or_default()
    }

    /// Starts it and waits (60 s at most) until it answers `/v1/status`.
    pub async fn start(&mut self) {
        self.start_with(&[]).await
    }

    /// [`start`](Self::start) with `extra` arguments after `--follow <upstream>` (e.g.
    /// `--snapshot-from URL`).
    pub async fn start_with(&mut self, extra: &[&str]) {
        use std::process::{Command, Stdio};
        self.starts += 1;
        let log =
            std::fs::File::create(self.node.dir.join(format!("follower-{}.log", self.starts)))
                .unwrap();
        self.child = Some(
            Command::new(crate::common::BIN)
                .arg("node")
                .arg("--config")
                .arg(self.node.dir.join("node.toml"))
                .arg("--follow")
                .arg(&self.upstream)
                .args(extra)
                .stdin(Stdio::null())
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .unwrap(),
        );
        let client = self.node.client();
        let start = std::time::Instant::now();
        while client.status().await.is_err() {
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("the follower exited with {status}:\n{}", self.log());
            }
            assert!(
                start.elapsed() < crate::common::READY_TIMEOUT,
                "the follower does not answer:\n{}",
                self.log()
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }

    /// SIGKILL.
    pub fn kill(&mut self) {
        let mut child = self.child.take().expect("running");
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// SIGTERM, then waits (at most `timeout`) for the process to exit; returns its status.
    pub fn terminate(&mut self, timeout: std::time::Duration) -> std::process::ExitStatus {
        self.node.child = self.child.take();
        self.node.terminate(timeout)
    }

    /// Waits (60 s at most) until its head is at least `height`.
    pub async fn reach(&self, height: u64) {
        let client = self.node.client();
        let start = std::time::Instant::now();
        loop {
            if let Ok(s) = client.status().await {
                if s.height >= height {
                    return;
                }
            }
            assert!(
                start.elapsed() < std::time::Duration::from_secs(60),
                "the follower did not reach height {height}:\n{}",
                self.log()
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
