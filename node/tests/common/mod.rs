//! The one helper module of `node/tests` (`crate::common` of the `node` test binary, declared
//! once in `tests/main.rs`): starting the real `gamechain` binary as a child process on a data
//! directory and a loopback port, stopping it with SIGKILL or SIGTERM, checking a node's whole
//! chain through the API, the faucet transactions most tests send, and [`heavy`], which keeps the
//! multi-validator tests and the browser suites from running at the same time; `cli.rs` runs CLI
//! commands and checks their output, `replay.rs` sends game workloads and runs `verify` (and a
//! follower process), `typescript.rs` compiles and runs TypeScript against the SDK,
//! `validator_nodes.rs` runs the validators of a `gamechain testnet` as [`NodeProcess`]es under a
//! steady load.

#![allow(dead_code, reason = "each test file uses a different part")]

pub mod cli;
pub mod replay;
pub mod typescript;
pub mod validator_nodes;

use std::fs::File;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use gamechain_client::client::{Block, BlockRef, Client};
use gamechain_runtime::chain::{
    receipt_root, tx_root, Action, Network, SecretKey, SignedTx, TxBody,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The `gamechain` binary cargo built for these tests.
pub const BIN: &str = env!("CARGO_BIN_EXE_gamechain");

/// How long a started node may take to answer `/v1/status`.
pub const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// Held for its whole run by every test that runs several validator processes at once (the
/// four-validator testnets of `validators/`, the code flood, the network namespaces), by the
/// snapshot join's three processes, and by the
/// JavaScript and TypeScript suites of `web/` (nodes, Node.js, `tsc` and browsers whose pages race
/// block times): their timeouts are seconds, so two of them must not share the machine's cores.
/// Every test of this crate runs in one process (the `node` test binary) on `cargo test`'s
/// threads, so this one lock keeps them one at a time, whatever else runs beside them. A failed
/// test's poisoned lock still counts.
pub fn heavy() -> MutexGuard<'static, ()> {
    static HEAVY: Mutex<()> = Mutex::new(());
    HEAVY.lock().unwrap_or_else(|p| p.into_inner())
}

/// A free loopback port (bound once and released; the node binds it right after).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A run of `2 * n` free consecutive loopback ports (checked by binding each once): the API and
/// p2p ports of `n` validators, for `gamechain testnet --base-port B --p2p-port B+n`. Taken below
/// the kernel's ephemeral range (32768 and up by default), which outgoing connections draw
/// from: a run chosen there could be taken by a client's or a peer's connection before the
/// validators bind it. Runs handed out by this process never overlap (a counter), and the
/// process id spreads concurrent test processes (other `cargo test` runs) apart.
pub fn free_ports(n: usize) -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    const LOW: u32 = 20_000;
    const SPAN: u32 = 12_000;
    static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);
    let width = 2 * n as u32;
    let _ = NEXT.compare_exchange(
        u32::MAX,
        (std::process::id() * 211) % SPAN,
        Ordering::SeqCst,
        Ordering::SeqCst,
    );
    for _ in 0..200 {
        let offset = NEXT.fetch_add(width, Ordering::SeqCst) % SPAN;
        if offset + width > SPAN {
            continue;
        }
        let base = (LOW + offset) as u16;
        if (0..width as u16).all(|i| TcpListener::bind(("127.0.0.1", base + i)).is_ok()) {
            return base;
        }
    }
    panic!("no run of {} free ports", 2 * n);
}

/// `gamechain testnet --validators n --dir net` in `cwd`, chain `gamechain-dev`, blocks at least
/// `interval_ms` apart, on a run of free ports ([`free_ports`]); panics with its stderr if it
/// fails. Returns the API port of validator 0 (validator `i` has `base + i`, its p2p port
/// `base + n + i`); the folders are `cwd/net/<i>`.
pub fn testnet(cwd: &Path, n: usize, interval_ms: u64) -> u16 {
    let base = free_ports(n);
    let out = gamechain(
        cwd,
        None,
        &[
            "testnet",
            "--validators",
            &n.to_string(),
            "--dir",
            "net",
            "--base-port",
            &base.to_string(),
            "--p2p-port",
            &(base + n as u16).to_string(),
            "--chain-id",
            "gamechain-dev",
            "--min-block-interval-ms",
            &interval_ms.to_string(),
            "--compiled-dir",
            shared_compiled_dir().to_str().unwrap(),
        ],
    );
    assert!(
        out.status.success(),
        "testnet: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    base
}

/// The compiled-module cache the nodes of these tests share (`compiled_dir`, under cargo's
/// temporary directory for tests): each genesis module is compiled once for the whole run, not
/// once per node started. Entries are keyed by code and engine configuration and written whole,
/// so sharing changes no result (`gamechain_vm::cache`); tests of the cache itself set their own.
pub fn shared_compiled_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("compiled-modules")
}

/// One data directory and port, and the node process currently running on them.
pub struct NodeProcess {
    /// The data directory and config file live here.
    pub dir: PathBuf,
    /// The API address.
    pub addr: SocketAddr,
    child: Option<Child>,
    starts: u32,
}

/// The `min_block_interval_ms` of the chains these tests start unless they choose one: short,
/// so that tests sending one transaction after another stay quick, but a real spacing every
/// block keeps (the embedded default is 1,000 ms).
pub const TEST_INTERVAL_MS: u64 = 5;

impl NodeProcess {
    /// Writes `dir/node.toml` (data in `dir/data`, listening on a free loopback port, no rate
    /// limit unless `extra` sets `rate_limit_per_sec`, a chain of [`TEST_INTERVAL_MS`] blocks
    /// unless `extra` sets `min_block_interval_ms`, `extra` TOML lines appended). Does not start
    /// anything.
    pub fn new(dir: &Path, extra: &str) -> NodeProcess {
        let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
        // No rate limit unless `extra` sets one.
        let limit = if extra.contains("rate_limit_per_sec") {
            ""
        } else {
            "rate_limit_per_sec = 0\n"
        };
        let interval = if extra.contains("min_block_interval_ms") {
            String::new()
        } else {
            format!("min_block_interval_ms = {TEST_INTERVAL_MS}\n")
        };
        // One compiled-module cache for every test's nodes unless `extra` sets one.
        let compiled = if extra.contains("compiled_dir") {
            String::new()
        } else {
            format!("compiled_dir = \"{}\"\n", shared_compiled_dir().display())
        };
        let config = format!(
            "data_dir = \"{}\"\nlisten = \"{addr}\"\n{limit}{interval}{compiled}log = \"info\"\n{extra}\n",
            dir.join("data").display()
        );
        std::fs::write(dir.join("node.toml"), config).unwrap();
        NodeProcess {
            dir: dir.to_path_buf(),
            addr,
            child: None,
            starts: 0,
        }
    }

    /// A node whose `dir/node.toml` exists already (e.g. written by `gamechain testnet`, with
    /// an absolute `data_dir`), its API on `addr`. Does not start anything.
    pub fn existing(dir: &Path, addr: SocketAddr) -> NodeProcess {
        NodeProcess {
            dir: dir.to_path_buf(),
            addr,
            child: None,
            starts: 0,
        }
    }

    /// The process's peak resident memory (`VmHWM` of `/proc/<pid>/status`), bytes; `None`
    /// when not running or not on Linux.
    pub fn peak_memory(&self) -> Option<u64> {
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", self.child.as_ref()?.id())).ok()?;
        let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
        let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb * 1024)
    }

    /// Whether the process started last has exited (`Some(status)`), reaping it.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.as_mut()?.try_wait().unwrap()
    }

    /// The API's base URL.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A client of the node.
    pub fn client(&self) -> Client {
        Client::new(&self.url()).unwrap()
    }

    /// Moves this node's clock `ms` forward (`POST /v1/dev/clock`: the node needs
    /// `dev_clock = true`) and waits for a block stamped at least that much later than the
    /// head was.
    pub async fn advance_clock(&self, ms: u64) {
        let client = self.client();
        let head_time = || async {
            client
                .block(BlockRef::Latest)
                .await
                .unwrap()
                .header
                .header
                .time_ms
        };
        let before = head_time().await;
        let r = reqwest::Client::new()
            .post(format!("{}/v1/dev/clock", self.url()))
            .json(&serde_json::json!({ "advance_ms": ms }))
            .send()
            .await
            .unwrap();
        assert!(
            r.status().is_success(),
            "POST /v1/dev/clock: {} (the node needs dev_clock = true)",
            r.status()
        );
        let start = Instant::now();
        while head_time().await < before + ms {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "no block after the clock moved"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Starts `gamechain node --config dir/node.toml` (output to `dir/node-<n>.log`) and waits
    /// until it answers `/v1/status`. Panics with the log when it exits or does not answer in
    /// [`READY_TIMEOUT`].
    pub async fn start(&mut self) {
        self.start_with(&[]).await
    }

    /// [`start`](Self::start) with `extra` arguments after `node --config dir/node.toml`
    /// (e.g. `--restore-from URL`).
    pub async fn start_with(&mut self, extra: &[&str]) {
        assert!(self.child.is_none(), "already running");
        self.starts += 1;
        let log_path = self.dir.join(format!("node-{}.log", self.starts));
        let log = File::create(&log_path).unwrap();
        let child = Command::new(BIN)
            .arg("node")
            .arg("--config")
            .arg(self.dir.join("node.toml"))
            .args(extra)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("gamechain starts");
        self.child = Some(child);
        let client = self.client();
        let start = Instant::now();
        loop {
            if client.status().await.is_ok() {
                return;
            }
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!(
                    "gamechain node exited with {status} before answering:\n{}",
                    self.log()
                );
            }
            assert!(
                start.elapsed() < READY_TIMEOUT,
                "gamechain node did not answer in {READY_TIMEOUT:?}:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The running process's id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// The log of the latest start.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join(format!("node-{}.log", self.starts)))
            .unwrap_or_default()
    }

    /// SIGKILL: the process dies at once, wherever it was.
    pub fn kill(&mut self) {
        let mut child = self.child.take().expect("running");
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// SIGTERM, then waits (at most `timeout`) for the process to exit; returns its status.
    /// Panics (after a SIGKILL) if it does not exit in time.
    pub fn terminate(&mut self, timeout: Duration) -> ExitStatus {
        let mut child = self.child.take().expect("running");
        let pid = libc::pid_t::try_from(child.id()).unwrap();
        // SAFETY: `kill` has no memory-safety preconditions; `pid` is our own child, not yet
        // reaped (so the pid cannot have been reused).
        assert_eq!(
            unsafe { libc::kill(pid, libc::SIGTERM) },
            0,
            "kill(SIGTERM)"
        );
        let start = Instant::now();
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status;
            }
            if start.elapsed() > timeout {
                child.kill().unwrap();
                child.wait().unwrap();
                panic!(
                    "gamechain node did not exit within {timeout:?} of SIGTERM:\n{}",
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for NodeProcess {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Runs `gamechain <args>` to completion (at most 60 s) in `cwd`, with `GAMECHAIN_NODE` set to
/// `node_env` (or unset).
pub fn gamechain(cwd: &Path, node_env: Option<&str>, args: &[&str]) -> Output {
    let mut command = Command::new(BIN);
    match node_env {
        Some(url) => command.env("GAMECHAIN_NODE", url),
        None => command.env_remove("GAMECHAIN_NODE"),
    };
    let child = command
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    let (done, output) = std::sync::mpsc::channel();
    // Reading both pipes to the end while waiting (a full pipe would block the child).
    std::thread::spawn(move || done.send(child.wait_with_output()));
    match output.recv_timeout(Duration::from_secs(60)) {
        Ok(output) => output.unwrap(),
        Err(_) => {
            // SAFETY: no memory-safety preconditions; the child is not reaped yet (its waiter
            // thread is still blocked), so the pid is still ours.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("gamechain {args:?} did not finish in 60 s");
        }
    }
}

/// Checks the node's whole chain through the API and returns the head block:
/// - every block from the head down to genesis: its `hash` is its header's hash, its sequencer
///   signature verifies, its `tx_root` and `receipt_root` match its transactions (and
///   `end_block` receipts), and its
///   `prev_hash` is the hash of the block below;
/// - `/v1/status` names the head: same height, hash and state root.
pub async fn check_chain(client: &Client) -> Block {
    let status = client.status().await.unwrap();
    let head = client.block(BlockRef::Latest).await.unwrap();
    assert_eq!(status.height, head.height(), "status height vs head block");
    assert_eq!(
        status.head_hash,
        head.hash_hex(),
        "status head hash vs head block"
    );
    assert_eq!(
        status.state_root,
        hex::encode(head.header.header.state_root),
        "status state root vs head header"
    );
    let mut block = head.clone();
    loop {
        let header = &block.header.header;
        // The client refuses a block whose `height` or `hash` is not its header's (see
        // `gamechain_chain::wire::Block`), so these hold for every block it returns.
        assert_eq!(header.height, block.height());
        assert_eq!(
            block.hash_hex(),
            header.hash_hex(),
            "block {} hash",
            block.height()
        );
        block
            .header
            .verify_from(&status.sequencer)
            .unwrap_or_else(|e| panic!("block {}: {e}", block.height()));
        let txs: Vec<SignedTx> = block.txs.iter().map(|t| t.tx.clone()).collect();
        // Receipts of the transactions, then of each module's end_block, in block order.
        let receipts: Vec<_> = block
            .txs
            .iter()
            .map(|t| &t.receipt)
            .chain(block.end_block.iter().map(|(_, receipt)| receipt))
            .cloned()
            .collect();
        assert_eq!(
            header.tx_root,
            tx_root(&txs),
            "block {} tx_root",
            block.height()
        );
        assert_eq!(
            header.receipt_root,
            receipt_root(&receipts),
            "block {} receipt_root",
            block.height()
        );
        if block.height() == 0 {
            return head;
        }
        let parent = client
            .block(BlockRef::Height(block.height() - 1))
            .await
            .unwrap();
        assert_eq!(
            hex::encode(header.prev_hash),
            parent.hash_hex(),
            "block {} prev_hash",
            block.height()
        );
        block = parent;
    }
}

/// A random number below `n` (0 when `n` is 0), from the process's random hasher keys (seeded by
/// the OS): the moments of the kill tests' SIGKILLs and the blocks they check again.
pub fn random_below(n: u64, salt: u64) -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(salt) % n.max(1)
}

/// A GOLD faucet call.
pub fn faucet() -> Action {
    Action::Faucet {
        token: "GOLD".into(),
    }
}

/// A GOLD faucet call from `key` at nonce 0 (a new account) on chain `chain_id`, signed.
pub fn faucet_tx(key: &SecretKey, chain_id: &str) -> SignedTx {
    TxBody {
        chain_id: chain_id.into(),
        from: key.address(),
        nonce: 0,
        action: faucet(),
    }
    .sign(key)
}

/// `n` faucet transactions from new keys, each waited for (at most 30 s); returns the head
/// height after.
pub async fn faucet_blocks(client: &Client, n: usize) -> u64 {
    let mut height = 0;
    for _ in 0..n {
        let key = SecretKey::generate(Network::Testnet);
        let included = client
            .send_and_wait(&key, faucet(), Duration::from_secs(30))
            .await
            .unwrap();
        assert!(included.receipt.ok);
        height = included.height;
    }
    height
}

/// `GET /v1/snapshots` of `url`: the heights served, newest first (none when it does not
/// answer).
pub async fn snapshot_heights(url: &str) -> Vec<u64> {
    let Ok(r) = reqwest::get(format!("{url}/v1/snapshots")).await else {
        return Vec::new();
    };
    let v: serde_json::Value = r.json().await.unwrap_or_default();
    v["snapshots"]
        .as_array()
        .map(|a| a.iter().filter_map(|s| s["height"].as_u64()).collect())
        .unwrap_or_default()
}

/// A `/v1/ws` upgrade on a socket with a 4 KiB receive buffer; returns it once the `101` head
/// is read. The caller never reads it again (or not until the end of its test).
pub async fn silent_subscriber(addr: SocketAddr) -> tokio::net::TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stream = socket.connect(addr).await.unwrap();
    let request = format!(
        "GET /v1/ws HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        stream.read_exact(&mut byte).await.unwrap();
        head.push(byte[0]);
    }
    assert!(
        head.starts_with(b"HTTP/1.1 101"),
        "{}",
        String::from_utf8_lossy(&head)
    );
    stream
}

/// Copies the folder `from` to `to` (made if missing), with everything under it.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The count in the environment variable `name` (e.g. `GAMECHAIN_KILLS`), else `default`.
pub fn env_count(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The kill tests' load, transaction `i`: a GOLD faucet call for even `i`, else a transfer of 3
/// base units to `to`.
pub fn load_action(i: u64, to: &str) -> Action {
    if i.is_multiple_of(2) {
        faucet()
    } else {
        Action::Transfer {
            to: to.to_string(),
            token: "GOLD".into(),
            amount: gamechain_sdk::Amount(3),
        }
    }
}

/// `node/web/sdk`, the JavaScript SDK's package.
pub fn sdk_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("web/sdk")
}

/// Checks Node.js 20+ is on PATH and that `node/web/sdk/node_modules/<installed>` exists,
/// running `npm ci` there (from its lockfile) when it does not. Panics saying what to install.
/// One caller at a time: the JavaScript and TypeScript tests run in one process, and two
/// `npm ci` in one folder at once would break each other's `node_modules/`.
pub fn require_node_packages(installed: &str) {
    static NPM: Mutex<()> = Mutex::new(());
    let _npm = NPM.lock().unwrap_or_else(|p| p.into_inner());
    let version = Command::new("node").arg("--version").output().unwrap_or_else(|e| {
        panic!("Node.js 20+ is needed for the JavaScript tests (node/web/sdk) and is not on PATH ({e}); `.ci/run` installs it (apt-get install nodejs npm)")
    });
    let text = String::from_utf8_lossy(&version.stdout).trim().to_string();
    let major: u32 = text
        .trim_start_matches('v')
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .unwrap_or(0);
    assert!(
        major >= 20,
        "Node.js 20+ is needed for the JavaScript tests; `node --version` says {text:?}"
    );
    let wanted = sdk_dir().join("node_modules").join(installed);
    if !wanted.exists() {
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(sdk_dir())
            .status()
            .unwrap_or_else(|e| {
                panic!(
                    "npm is needed to install node/web/sdk's dependencies from its lockfile: {e}"
                )
            });
        assert!(
            status.success(),
            "`npm ci` in node/web/sdk failed ({status})"
        );
    }
    assert!(wanted.exists(), "no {} after `npm ci`", wanted.display());
}

/// `VmRSS` of process `pid`, bytes (0 when it cannot be read).
pub fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|k| k.parse::<u64>().ok())
        .map_or(0, |k| k * 1024)
}
