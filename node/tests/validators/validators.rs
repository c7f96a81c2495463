//! Four validators as four `gamechain` processes on loopback, made by `gamechain testnet`
//! and each started with `gamechain node --validator --config node.toml` from its folder:
//!
//! 1. the seed's tic-tac-toe game (`gamechain demo`) played through validator 1;
//! 2. SIGKILL of one validator: blocks go on (a transaction sent to another is included); it
//!    catches up after a restart;
//! 3. SIGKILL of two of four: the chain halts (a transaction stays pending, no validator moves
//!    its head) and resumes when one returns, with the pending transaction;
//! 4. a partition of the four into two halves: neither has a quorum, no validator moves its
//!    head and transactions sent to either side stay pending; once healed, blocks resume with
//!    them and all four are at one head. Every p2p connection goes through a forwarder of the
//!    test ([`Link`]), which cuts it;
//! 5. a validator restarted to propose blocks with a wrong state root
//!    (`GAMECHAIN_TEST_FAULT=bad_state_root`, a test facility of every build, logged loudly):
//!    the others vote against its proposals, so no block of it is final, and the chain goes on
//!    without it;
//! 6. the certificates served: `GET /v1/blocks/<height>/finality`, a follower (`gamechain node
//!    --follow`) of validator 1 that checks every block's certificate before it commits it and
//!    reaches the validators' head, `gamechain verify --node` and an export checked with
//!    `verify --file` (a damaged certificate in the file is a divergence), and `gamechain status
//!    --net` showing the four side by side;
//! 7. every validator's data directory, and the follower's, passes `gamechain verify` with the
//!    same head and state root, every block up to the head covered by a finality certificate
//!    that verifies against the genesis set; a damaged certificate or digest in the database is
//!    a divergence naming the height and `finality.certificate` / `finality.digest`.
//!
//! A second test, `an_equivocating_validator_is_recorded_served_verified_and_measured`, runs a
//! validator that signs conflicting votes: the evidence the others store and serve, the
//! consensus metrics, and `verify` demanding finality (exit 5) and checking evidence (exit 6).
//!
//! A fourth, in `sealed.rs`, plays sealed rock-paper-scissors and a sealed-bid auction on the
//! threshold beacon against a player who tries every way to learn or change a move early.
//!
//! A third, `threshold_beacons_survive_a_kill_and_a_restart`, runs the threshold randomness
//! beacon `gamechain testnet` deals (3 of 4) through a SIGKILL and a restart of one validator
//! under load: every data directory verifies, and all four serve the same beacon in every
//! header, each the genesis group key's signature of its height.

use crate::common;
// `validators/sealed.rs`: a child of this module, which is `validators::validators`.
#[path = "sealed.rs"]
mod sealed;

use gamechain_ledger::rusqlite;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gamechain_client::client::Client;
use gamechain_runtime::chain::{Action, Network, SecretKey};
use serde_json::Value;

use crate::common::replay::{verify_json, Follower};
use crate::common::{faucet_tx, gamechain, heavy, BIN};

const N: usize = 4;

/// The p2p link from one validator to another: a TCP forwarder on its own port that the test
/// can cut (open connections shut, new ones refused) and restore.
struct Link {
    /// Whether it is cut, and the sockets of the connections through it.
    state: Arc<Mutex<(bool, Vec<TcpStream>)>>,
}

impl Link {
    /// A forwarder to `127.0.0.1:target`; returns its port and itself.
    fn start(target: u16) -> (u16, Link) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let state: Arc<Mutex<(bool, Vec<TcpStream>)>> = Arc::default();
        let shared = state.clone();
        std::thread::spawn(move || {
            for inbound in listener.incoming() {
                let Ok(inbound) = inbound else { continue };
                let Ok(outbound) = TcpStream::connect(("127.0.0.1", target)) else {
                    continue;
                };
                {
                    let mut s = shared.lock().unwrap();
                    if s.0 {
                        let _ = inbound.shutdown(Shutdown::Both);
                        let _ = outbound.shutdown(Shutdown::Both);
                        continue;
                    }
                    s.1.push(inbound.try_clone().unwrap());
                    s.1.push(outbound.try_clone().unwrap());
                }
                let pairs = [
                    (inbound.try_clone().unwrap(), outbound.try_clone().unwrap()),
                    (outbound, inbound),
                ];
                for (mut from, mut to) in pairs {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = from.shutdown(Shutdown::Both);
                        let _ = to.shutdown(Shutdown::Both);
                    });
                }
            }
        });
        (port, Link { state })
    }

    /// Cuts the link (`true`) or restores it.
    fn cut(&self, cut: bool) {
        let mut s = self.state.lock().unwrap();
        s.0 = cut;
        if cut {
            for socket in s.1.drain(..) {
                let _ = socket.shutdown(Shutdown::Both);
            }
        }
    }
}

struct Validator {
    index: usize,
    dir: PathBuf,
    url: String,
    child: Option<Child>,
    starts: u32,
}

impl Validator {
    fn client(&self) -> Client {
        Client::new(&self.url).unwrap()
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join(format!("node-{}.log", self.starts)))
            .unwrap_or_default()
    }

    /// Starts the validator (with `env` set) and waits until its API answers.
    async fn start(&mut self, env: &[(&str, &str)]) {
        assert!(self.child.is_none());
        self.starts += 1;
        let log =
            std::fs::File::create(self.dir.join(format!("node-{}.log", self.starts))).unwrap();
        let child = Command::new(BIN)
            .args(["node", "--validator", "--config", "node.toml"])
            .current_dir(&self.dir)
            .envs(env.iter().copied())
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        self.child = Some(child);
        let start = Instant::now();
        while self.client().status().await.is_err() {
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!(
                    "validator {} exited with {status}:\n{}",
                    self.index,
                    self.log()
                );
            }
            assert!(
                start.elapsed() < common::READY_TIMEOUT,
                "validator {} does not answer",
                self.index
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn kill(&mut self) {
        let mut child = self.child.take().expect("running");
        child.kill().unwrap();
        child.wait().unwrap();
    }

    fn terminate(&mut self) {
        let mut child = self.child.take().expect("running");
        // SAFETY: no memory-safety preconditions; the child is ours and not reaped.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
        let start = Instant::now();
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                assert!(
                    status.success(),
                    "validator {} exited with {status}:\n{}",
                    self.index,
                    self.log()
                );
                return;
            }
            if start.elapsed() > Duration::from_secs(20) {
                child.kill().unwrap();
                panic!(
                    "validator {} did not stop on SIGTERM:\n{}",
                    self.index,
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    async fn head(&self) -> (u64, String) {
        let s = self.client().status().await.unwrap();
        (s.height, s.head_hash)
    }
}

impl Drop for Validator {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        if std::thread::panicking() {
            // The test failed: the end of this validator's log, which goes with its tempdir.
            let log = self.log();
            let lines: Vec<&str> = log.lines().collect();
            eprintln!(
                "--- validator {} (start {}), last lines of its log:\n{}",
                self.index,
                self.starts,
                lines[lines.len().saturating_sub(40)..].join("\n")
            );
        }
    }
}

/// The `N` validators of a `gamechain testnet` folder `net` whose APIs start at port `base`,
/// none running yet.
fn validators_of(net: &std::path::Path, base: u16) -> Vec<Validator> {
    (0..N)
        .map(|i| Validator {
            index: i,
            dir: net.join(i.to_string()),
            url: format!("http://127.0.0.1:{}", base + i as u16),
            child: None,
            starts: 0,
        })
        .collect()
}

/// Waits (at most `secs`) until `cond` holds, polling every 100 ms; panics with `what`.
async fn eventually<F, Fut>(secs: u64, what: &str, mut cond: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = Instant::now();
    while !cond().await {
        assert!(
            start.elapsed() < Duration::from_secs(secs),
            "not within {secs} s: {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until the running validators in `which` are all at the same head, at least `min`.
async fn same_head(vs: &[Validator], which: &[usize], min: u64) -> (u64, String) {
    let start = Instant::now();
    loop {
        let mut got = Vec::new();
        for i in which {
            got.push(vs[*i].head().await);
        }
        if got.windows(2).all(|w| w[0] == w[1]) && got[0].0 >= min {
            return got[0].clone();
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "validators {which:?} did not reach one head at or above {min}: {got:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn included(client: &Client, txid: &str) -> Option<u64> {
    client.tx(txid).await.ok()?.height()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_validator_processes_survive_crashes_quorum_loss_a_partition_and_a_liar() {
    let _heavy = heavy();
    let tmp = tempfile::tempdir().unwrap();
    // Blocks at least 100 ms apart (timeouts 1.2 s / 2.2 s), so the phases run in seconds; the
    // default chain spaces them 1,000 ms.
    let base = common::testnet(tmp.path(), N, 100);
    let net = tmp.path().join("net");
    // Every p2p connection through a link the test can cut: validator j reaches validator i at
    // the port of link (j, i).
    let p2p_base = base + N as u16;
    let mut links = std::collections::BTreeMap::new();
    for j in 0..N {
        let path = net.join(j.to_string()).join("node.toml");
        let mut config = std::fs::read_to_string(&path).unwrap();
        for i in (0..N).filter(|&i| i != j) {
            let (port, link) = Link::start(p2p_base + i as u16);
            let direct = format!("@127.0.0.1:{}\"", p2p_base + i as u16);
            assert!(config.contains(&direct), "{config}");
            config = config.replace(&direct, &format!("@127.0.0.1:{port}\""));
            links.insert((j, i), link);
        }
        std::fs::write(&path, config).unwrap();
    }
    let mut vs = validators_of(&net, base);
    for v in vs.iter_mut() {
        v.start(&[]).await;
    }
    let genesis: Value =
        serde_json::from_str(&std::fs::read_to_string(net.join("0/data/genesis.json")).unwrap())
            .unwrap();
    let chain_id = genesis["chain_id"].as_str().unwrap().to_string();
    let liar = genesis["validators"]["set"][3]["address"]
        .as_str()
        .unwrap()
        .to_string();

    // 1. The seed's game, through validator 1.
    let demo = gamechain(
        tmp.path(),
        None,
        &["demo", "--node", &vs[1].url, "--timeout", "30"],
    );
    let text = String::from_utf8_lossy(&demo.stdout);
    assert!(
        demo.status.success() && text.contains("every outcome matches the seed"),
        "demo through validator 1:\n{text}\n{}",
        String::from_utf8_lossy(&demo.stderr)
    );
    let (h1, _) = same_head(&vs, &[0, 1, 2, 3], 1).await;
    // A follower of validator 1 from here on: it checks each block's certificate first.
    let follower_dir = tmp.path().join("follower");
    std::fs::create_dir_all(&follower_dir).unwrap();
    let mut follower = Follower::new(&follower_dir, &vs[1].url);
    follower.start().await;

    // 2. One validator killed: a transaction sent to another is still included.
    vs[3].kill();
    let k = SecretKey::generate(Network::Testnet);
    let txid = vs[0]
        .client()
        .post_tx(&faucet_tx(&k, &chain_id))
        .await
        .unwrap();
    let c0 = vs[0].client();
    eventually(
        30,
        "a transaction is included with 3 of 4 validators",
        || {
            let (c0, txid) = (&c0, &txid);
            async move { included(c0, txid).await.is_some() }
        },
    )
    .await;
    let (h2, _) = same_head(&vs, &[0, 1, 2], h1 + 1).await;
    vs[3].start(&[]).await;
    same_head(&vs, &[0, 1, 2, 3], h2).await;

    // 3. Two of four killed: no quorum, the chain halts; it resumes when one returns.
    vs[2].kill();
    vs[3].kill();
    // A block already certified before the kills may still land: settle first.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let k2 = SecretKey::generate(Network::Testnet);
    let txid2 = vs[1]
        .client()
        .post_tx(&faucet_tx(&k2, &chain_id))
        .await
        .unwrap();
    let halted = vs[0].head().await;
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(vs[0].head().await, halted, "no block without a quorum");
    assert_eq!(vs[1].head().await, halted, "no block without a quorum");
    assert_eq!(included(&c0, &txid2).await, None);
    vs[2].start(&[]).await;
    eventually(
        60,
        "the pending transaction is included once a quorum is back",
        || {
            let (c0, txid2) = (&c0, &txid2);
            async move { included(c0, txid2).await.is_some() }
        },
    )
    .await;
    let (h3, _) = same_head(&vs, &[0, 1, 2], halted.0 + 1).await;

    // 4. A partition into {0, 1} and {2, 3}: no quorum on either side. Healed, it goes on.
    vs[3].start(&[]).await;
    let (h3, _) = same_head(&vs, &[0, 1, 2, 3], h3).await;
    let halves = |cut: bool| {
        for (&(j, i), link) in &links {
            if (j < 2) != (i < 2) {
                link.cut(cut);
            }
        }
    };
    halves(true);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let split: Vec<(u64, String)> = {
        let mut heads = Vec::new();
        for v in &vs {
            heads.push(v.head().await);
        }
        heads
    };
    let (ka, kb) = (
        SecretKey::generate(Network::Testnet),
        SecretKey::generate(Network::Testnet),
    );
    let txa = vs[0]
        .client()
        .post_tx(&faucet_tx(&ka, &chain_id))
        .await
        .unwrap();
    let txb = vs[2]
        .client()
        .post_tx(&faucet_tx(&kb, &chain_id))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(4)).await;
    for (i, v) in vs.iter().enumerate() {
        assert_eq!(
            v.head().await,
            split[i],
            "validator {i} moved its head during the partition"
        );
    }
    assert_eq!(included(&c0, &txa).await, None);
    assert_eq!(included(&vs[2].client(), &txb).await, None);
    halves(false);
    for txid in [&txa, &txb] {
        eventually(
            60,
            "the transactions sent during the partition are included once it heals",
            || {
                let (c0, txid) = (&c0, txid);
                async move { included(c0, txid).await.is_some() }
            },
        )
        .await;
    }
    let (h3, _) = same_head(&vs, &[0, 1, 2, 3], h3 + 1).await;
    vs[3].kill();

    // 5. Validator 3 back, proposing wrong state roots: none of its blocks is final, and the
    // chain goes on through the other leaders' views.
    vs[3]
        .start(&[("GAMECHAIN_TEST_FAULT", "bad_state_root")])
        .await;
    // A steady stream of transactions through all four, so every leader (the liar too) has
    // something to propose in its views.
    let mut sent = Vec::new();
    for round in 0..32 {
        let k = SecretKey::generate(Network::Testnet);
        let target = &vs[round % N];
        let txid = target
            .client()
            .post_tx(&faucet_tx(&k, &chain_id))
            .await
            .unwrap();
        sent.push(txid);
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    for txid in &sent {
        eventually(
            60,
            "every transaction is included while one validator lies",
            || {
                let (c0, txid) = (&c0, txid);
                async move { included(c0, txid).await.is_some() }
            },
        )
        .await;
    }
    let (h4, _) = same_head(&vs, &[0, 1, 2], h3 + 1).await;
    for h in h3 + 1..=h4 {
        let block = vs[0]
            .client()
            .block(gamechain_client::client::BlockRef::Height(h))
            .await
            .unwrap();
        assert_ne!(
            block.header.header.sequencer, liar,
            "block {h} is the liar's"
        );
    }
    assert!(
        vs[3].log().contains("misbehaves on purpose"),
        "the liar says loudly that it lies:\n{}",
        vs[3].log()
    );
    let voted_against = (0..3).any(|i| vs[i].log().contains("voting against a proposal"));
    assert!(
        voted_against,
        "the honest validators voted against the liar's proposals"
    );

    // 6. The certificates served, and checked by others.
    let http = reqwest::Client::new();
    for which in ["1", "latest"] {
        let answer = http
            .get(format!("{}/v1/blocks/{which}/finality", vs[0].url))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200, "GET /v1/blocks/{which}/finality");
        let f: Value = answer.json().await.unwrap();
        assert_eq!(f["digest"].as_str().map(str::len), Some(64), "{f}");
        assert!(
            f["certificate"].is_string() || f["certificate"].is_null(),
            "{f}"
        );
    }
    let above = http
        .get(format!("{}/v1/blocks/{}/finality", vs[0].url, h4 + 1000))
        .send()
        .await
        .unwrap();
    assert_eq!(above.status(), 404);
    follower.reach(h4).await;
    let at_h4 = |c: Client| async move {
        c.block(gamechain_client::client::BlockRef::Height(h4))
            .await
            .unwrap()
            .header
            .header
            .hash_hex()
    };
    assert_eq!(
        at_h4(follower.node.client()).await,
        at_h4(vs[0].client()).await,
        "the follower holds the validators' block {h4}"
    );
    assert!(
        follower.log().contains("block verified and committed"),
        "{}",
        follower.log()
    );
    let (code, report) = verify_node(tmp.path(), &vs[1].url).await;
    assert_eq!(code, 0, "verify --node: {report}");
    assert!(
        report["finality"]["certificates_checked"].as_u64().unwrap() > 0,
        "verify --node checks certificates: {report}"
    );
    let export = tmp.path().join("chain.export");
    let out = gamechain(
        tmp.path(),
        None,
        &[
            "export",
            "--node",
            &vs[0].url,
            "--out",
            export.to_str().unwrap(),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (code, report) = verify_json(tmp.path(), &["--file", export.to_str().unwrap()]).await;
    assert_eq!(code, 0, "verify --file: {report}");
    assert!(
        report["finality"]["certificates_checked"].as_u64().unwrap() > 0,
        "verify --file checks certificates: {report}"
    );
    // One certificate of the file damaged (its last hex digit changed).
    let text = std::fs::read_to_string(&export).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let (at, damaged_height) = lines
        .iter()
        .enumerate()
        .find_map(|(i, l)| {
            let v: Value = serde_json::from_str(l).ok()?;
            (v["type"] == "finality" && v["certificate"].is_string() && v["height"] != 0)
                .then(|| (i, v["height"].as_i64().unwrap()))
        })
        .expect("a finality line with a certificate");
    let mut line: Value = serde_json::from_str(&lines[at]).unwrap();
    let mut cert = line["certificate"].as_str().unwrap().to_string();
    let last = cert.pop().unwrap();
    cert.push(if last == '0' { '1' } else { '0' });
    line["certificate"] = Value::String(cert);
    lines[at] = line.to_string();
    std::fs::write(&export, lines.join("\n") + "\n").unwrap();
    let (code, report) = verify_json(tmp.path(), &["--file", export.to_str().unwrap()]).await;
    let d = &report["divergence"];
    assert_eq!(
        (code, d["height"].as_i64(), d["field"].as_str()),
        (4, Some(damaged_height), Some("finality.certificate")),
        "{report}"
    );
    let out = gamechain(tmp.path(), None, &["status", "--net", "net"]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && table.contains("4 of 4 validators answered"),
        "status --net:\n{table}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for v in &vs {
        assert!(
            table.contains(&v.url),
            "status --net names {}:\n{table}",
            v.url
        );
    }

    // 7. Every data directory verifies, to one head.
    for v in vs.iter_mut() {
        v.terminate();
    }
    assert!(follower.terminate(Duration::from_secs(20)).success());
    let (code, report) = verify_json(
        tmp.path(),
        &["--data", follower_dir.join("data").to_str().unwrap()],
    )
    .await;
    assert_eq!(code, 0, "verify the follower's data: {report}");
    assert!(
        report["finality"]["certificates_checked"].as_u64().unwrap() > 0
            && report["head_height"].as_u64().unwrap() >= h4,
        "the follower stored the certificates it checked: {report}"
    );
    let mut heads = Vec::new();
    for v in &vs {
        let out = gamechain(
            tmp.path(),
            None,
            &[
                "verify",
                "--data",
                v.dir.join("data").to_str().unwrap(),
                "--json",
            ],
        );
        assert!(
            out.status.success(),
            "verify validator {}: {}",
            v.index,
            String::from_utf8_lossy(&out.stdout)
        );
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        let finality = &report["finality"];
        assert!(
            finality["certificates_checked"].as_u64().unwrap() > 0
                && finality["last_certified_height"] == report["head_height"],
            "validator {}: every block up to the head is certified: {finality}",
            v.index
        );
        heads.push((report["head_hash"].clone(), report["state_root"].clone()));
    }
    // A damaged certificate, then a wrong digest, in validator 0's database: `verify` names
    // the height and the field.
    let db = vs[0].dir.join("data/chain.sqlite");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let (height, mut cert): (i64, Vec<u8>) = conn
        .query_row(
            "SELECT height, certificate FROM validator_finality WHERE certificate IS NOT NULL \
             AND height > 0 ORDER BY height LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let last = cert.len() - 1;
    cert[last] ^= 1;
    conn.execute(
        "UPDATE validator_finality SET certificate = ?1 WHERE height = ?2",
        rusqlite::params![cert, height],
    )
    .unwrap();
    let data0 = vs[0].dir.join("data");
    let verify0 = || {
        let out = gamechain(
            tmp.path(),
            None,
            &["verify", "--data", data0.to_str().unwrap(), "--json"],
        );
        assert_eq!(
            out.status.code(),
            Some(4),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        report["divergence"].clone()
    };
    let d = verify0();
    assert_eq!(
        (d["height"].as_i64(), d["field"].as_str()),
        (Some(height), Some("finality.certificate")),
        "{d}"
    );
    cert[last] ^= 1;
    conn.execute(
        "UPDATE validator_finality SET certificate = ?1, digest = zeroblob(32) WHERE height = ?2",
        rusqlite::params![cert, height],
    )
    .unwrap();
    let d = verify0();
    assert_eq!(
        (d["height"].as_i64(), d["field"].as_str()),
        (Some(height), Some("finality.digest")),
        "{d}"
    );
    // Validator 3 may stop one block behind; the others are at one head.
    assert_eq!(heads[0], heads[1]);
    assert_eq!(heads[0], heads[2]);
}

/// `gamechain verify --node url --json` of a running network. A head block finalized through
/// a descendant's certificate is committed a moment before that descendant: a replay that
/// starts in between finds the head not final yet (exit 5), so it is tried again then, up to
/// three times.
async fn verify_node(cwd: &std::path::Path, url: &str) -> (i32, Value) {
    let mut attempt = 0;
    loop {
        let (code, report) = verify_json(cwd, &["--node", url]).await;
        attempt += 1;
        if code != 5 || attempt == 3 {
            return (code, report);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The metric `name`'s value in a Prometheus text `scrape` (the line `name value`).
fn metric(scrape: &str, name: &str) -> Option<f64> {
    scrape
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

/// `GET <url>/v1/evidence<query>`: status and JSON body.
async fn evidence(url: &str, query: &str) -> (u16, Value) {
    let answer = reqwest::get(format!("{url}/v1/evidence{query}"))
        .await
        .unwrap();
    let status = answer.status().as_u16();
    (status, answer.json::<Value>().await.unwrap())
}

async fn scrape(url: &str) -> String {
    reqwest::get(format!("{url}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// Four validator processes, validator 3 equivocating (`GAMECHAIN_TEST_FAULT=equivocate`: each
/// of its notarize and finalize votes is followed by a conflicting one, validly signed):
/// 1. the honest three store the evidence and serve it at `GET /v1/evidence`, paged; the chain
///    goes on without validator 3; `gamechain status --net` names it;
/// 2. `/metrics` of an honest validator carries the consensus metrics, and they move (view,
///    finalization latency, peers, finalized height, blocks behind, evidence records);
/// 3. `gamechain verify --node` checks the finality of every block and the served evidence;
///    `verify --data` and an export's `verify --file` check the stored evidence;
/// 4. a record whose signature is damaged makes `verify` exit 6 (`bad_evidence`); certificates
///    stripped from the last blocks (in the database, then in the export file) make it exit 5
///    (`not_final`) naming the uncovered heights; the good chain exits 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_equivocating_validator_is_recorded_served_verified_and_measured() {
    let _heavy = heavy();
    let tmp = tempfile::tempdir().unwrap();
    let base = common::testnet(tmp.path(), N, 100);
    let net = tmp.path().join("net");
    let mut vs = validators_of(&net, base);
    for (i, v) in vs.iter_mut().enumerate() {
        let env: &[(&str, &str)] = if i == 3 {
            &[("GAMECHAIN_TEST_FAULT", "equivocate")]
        } else {
            &[]
        };
        v.start(env).await;
    }
    let genesis: Value =
        serde_json::from_str(&std::fs::read_to_string(net.join("0/data/genesis.json")).unwrap())
            .unwrap();
    let chain_id = genesis["chain_id"].as_str().unwrap().to_string();
    let faulty = genesis["validators"]["set"][3]["address"]
        .as_str()
        .unwrap()
        .to_string();
    let before = scrape(&vs[0].url).await;

    // 1. Evidence on the honest validators; the chain goes on.
    let key = SecretKey::from_bytes(Network::Testnet, [77; 32]).unwrap();
    let txid = vs[0]
        .client()
        .post_tx(&faucet_tx(&key, &chain_id))
        .await
        .unwrap();
    // Conflicting votes are reported as the engine sees them (Commonware: best effort; a
    // validator that blocks the sender for another reason first has no pair). Each honest
    // validator needs one pair, so blocks keep coming (a transaction a second) while it waits.
    let mut extra = 0u8;
    for v in &vs[..3] {
        let url = v.url.clone();
        let client = vs[0].client();
        let chain_id = chain_id.clone();
        let mut polls = 0u32;
        eventually(
            60,
            &format!("validator {} stores evidence", v.index),
            || {
                let url = url.clone();
                polls += 1;
                let send = (polls % 10 == 0).then(|| {
                    extra = extra.wrapping_add(1);
                    SecretKey::from_bytes(Network::Testnet, [200 - extra % 100; 32]).unwrap()
                });
                let client = client.clone();
                let chain_id = chain_id.clone();
                async move {
                    if let Some(k) = send {
                        let _ = client.post_tx(&faucet_tx(&k, &chain_id)).await;
                    }
                    evidence(&url, "").await.1["total"].as_u64().unwrap_or(0) > 0
                }
            },
        )
        .await;
    }
    let (status, page) = evidence(&vs[0].url, "?limit=1").await;
    assert_eq!(status, 200, "{page}");
    let first = &page["evidence"][0];
    assert_eq!(first["validator"], faulty, "{page}");
    assert!(
        ["conflicting_notarize", "conflicting_finalize"].contains(&first["kind"].as_str().unwrap()),
        "{page}"
    );
    assert_eq!(page["evidence"].as_array().unwrap().len(), 1, "{page}");
    if page["total"].as_u64().unwrap() > 1 {
        assert_eq!(page["next"], first["id"], "{page}");
        let (_, second) = evidence(&vs[0].url, &format!("?after={}", first["id"])).await;
        assert!(second["evidence"][0]["id"].as_u64() > first["id"].as_u64());
    } else {
        assert_eq!(page["next"], Value::Null);
    }
    for bad in ["?limit=x", "?after=-1", "?limit=101", "?other=1"] {
        let (status, answer) = evidence(&vs[0].url, bad).await;
        assert_eq!(
            (status, answer["error"]["code"].as_str()),
            (400, Some("invalid")),
            "{bad}: {answer}"
        );
    }
    let client0 = vs[0].client();
    eventually(120, "a transaction is included without validator 3", || {
        let client = client0.clone();
        let txid = txid.clone();
        async move { included(&client, &txid).await.is_some() }
    })
    .await;
    let out = gamechain(tmp.path(), None, &["status", "--net", "net"]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success()
            && table
                .lines()
                .any(|l| l.starts_with(&format!("evidence: {faulty} (validator 3) signed "))),
        "status --net names the equivocating validator:\n{table}"
    );

    // 2. The consensus metrics move.
    let after = scrape(&vs[0].url).await;
    let m =
        |s: &str, name: &str| metric(s, name).unwrap_or_else(|| panic!("{name} missing from\n{s}"));
    assert!(
        m(&after, "gamechain_consensus_view")
            > metric(&before, "gamechain_consensus_view").unwrap_or(0.0),
        "the view moves:\n{after}"
    );
    assert!(m(&after, "gamechain_consensus_finalization_seconds_count") > 0.0);
    assert!(m(&after, "gamechain_consensus_notarization_seconds_count") > 0.0);
    assert!(m(&after, "gamechain_consensus_finalized_height") >= 1.0);
    assert!(m(&after, "gamechain_consensus_blocks_behind") >= 0.0);
    assert!(m(&after, "gamechain_evidence_records") >= 1.0);
    assert!(m(&after, "gamechain_consensus_peers") >= 2.0, "{after}");
    let _ = m(&after, "gamechain_consensus_timeouts_total");
    let _ = m(&after, "gamechain_consensus_nullifications_total");

    // A few more blocks, one after the other, so that several carry their own certificate
    // (step 4 strips the last ones).
    for i in 0..3u8 {
        let k = SecretKey::from_bytes(Network::Testnet, [90 + i; 32]).unwrap();
        let client = vs[0].client();
        let txid = client.post_tx(&faucet_tx(&k, &chain_id)).await.unwrap();
        eventually(30, "a further block", || {
            let client = client.clone();
            let txid = txid.clone();
            async move { included(&client, &txid).await.is_some() }
        })
        .await;
    }

    // 3. verify --node: every block final, the evidence proves validator 3's fault.
    let (code, report) = verify_node(tmp.path(), &vs[0].url).await;
    assert_eq!(code, 0, "verify --node: {report}");
    assert_eq!(report["finality"]["uncovered"], Value::Null, "{report}");
    assert!(
        report["evidence"]["valid"].as_u64().unwrap() >= 1,
        "{report}"
    );
    assert_eq!(report["evidence"]["faulty"][0]["validator"], faulty);
    let export = tmp.path().join("chain.export");
    let out = gamechain(
        tmp.path(),
        None,
        &[
            "export",
            "--node",
            &vs[0].url,
            "--out",
            export.to_str().unwrap(),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    for v in vs.iter_mut() {
        v.terminate();
    }
    let data0 = vs[0].dir.join("data");
    let data = data0.to_str().unwrap();
    let (code, report) = verify_json(tmp.path(), &["--data", data]).await;
    assert_eq!(code, 0, "verify --data: {report}");
    assert!(
        report["evidence"]["valid"].as_u64().unwrap() >= 1,
        "{report}"
    );
    let (code, report) = verify_json(tmp.path(), &["--file", export.to_str().unwrap()]).await;
    assert_eq!(code, 0, "verify --file: {report}");
    assert!(
        report["evidence"]["valid"].as_u64().unwrap() >= 1,
        "{report}"
    );

    // 4. Bad evidence, then blocks without a certificate.
    let conn = rusqlite::Connection::open(data0.join("chain.sqlite")).unwrap();
    let (id, mut bytes): (i64, Vec<u8>) = conn
        .query_row(
            "SELECT id, data FROM validator_evidence ORDER BY id LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    conn.execute(
        "UPDATE validator_evidence SET data = ?1 WHERE id = ?2",
        rusqlite::params![bytes, id],
    )
    .unwrap();
    let (code, report) = verify_json(tmp.path(), &["--data", data]).await;
    assert_eq!(
        (code, report["result"].as_str()),
        (6, Some("bad_evidence")),
        "{report}"
    );
    assert_eq!(report["evidence"]["invalid"][0]["id"], id, "{report}");
    bytes[last] ^= 1;
    conn.execute(
        "UPDATE validator_evidence SET data = ?1 WHERE id = ?2",
        rusqlite::params![bytes, id],
    )
    .unwrap();
    // Every certificate from the last certified block down to some height stripped: the
    // blocks from just above the highest remaining certificate to the head are not final.
    let head: i64 = conn
        .query_row("SELECT MAX(height) FROM blocks", [], |r| r.get(0))
        .unwrap();
    let certified: Vec<i64> = conn
        .prepare(
            "SELECT height FROM validator_finality WHERE certificate IS NOT NULL \
             AND height > 0 ORDER BY height",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(certified.len() >= 2, "{certified:?}");
    let keep = certified[certified.len() - 2];
    conn.execute(
        "UPDATE validator_finality SET certificate = NULL WHERE height > ?1",
        [keep],
    )
    .unwrap();
    let (code, report) = verify_json(tmp.path(), &["--data", data]).await;
    assert_eq!(
        (code, report["result"].as_str()),
        (5, Some("not_final")),
        "{report}"
    );
    assert_eq!(
        (
            report["finality"]["uncovered"]["from"].as_i64(),
            report["finality"]["uncovered"]["to"].as_i64(),
            report["finality"]["last_certified_height"].as_i64()
        ),
        (Some(keep + 1), Some(head), Some(keep)),
        "{report}"
    );
    let out = gamechain(tmp.path(), None, &["verify", "--data", data]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(5), "{text}");
    assert!(
        text.starts_with("NOT FINAL")
            && text.contains(&if keep + 1 == head {
                format!("height {head} is NOT covered")
            } else {
                format!("heights {}..={head} are NOT covered", keep + 1)
            }),
        "{text}"
    );
    // The export file with the certificates of its last blocks stripped.
    let text = std::fs::read_to_string(&export).unwrap();
    let last_certified = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "finality" && v["certificate"].is_string())
        .filter_map(|v| v["height"].as_i64())
        .max()
        .unwrap();
    let stripped: Vec<String> = text
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            if v["type"] == "finality" && v["height"].as_i64() == Some(last_certified) {
                v["certificate"] = Value::Null;
            }
            v.to_string()
        })
        .collect();
    std::fs::write(&export, stripped.join("\n") + "\n").unwrap();
    let (code, report) = verify_json(tmp.path(), &["--file", export.to_str().unwrap()]).await;
    assert_eq!(
        (code, report["result"].as_str()),
        (5, Some("not_final")),
        "{report}"
    );
}

/// Sends `count` faucet transactions (fresh keys), one every 100 ms, round-robin to the APIs
/// `urls`, and waits until the first of them has included them all.
async fn load(urls: Vec<String>, chain_id: String, count: usize) {
    let clients: Vec<Client> = urls.iter().map(|u| Client::new(u).unwrap()).collect();
    let mut sent = Vec::new();
    for i in 0..count {
        let k = SecretKey::generate(Network::Testnet);
        let tx = faucet_tx(&k, &chain_id);
        sent.push(clients[i % clients.len()].post_tx(&tx).await.unwrap());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for txid in &sent {
        eventually(30, "every transaction of the load is included", || {
            let (client, txid) = (&clients[0], txid);
            async move { included(client, txid).await.is_some() }
        })
        .await;
    }
}

/// Four validator processes with the threshold beacon `gamechain testnet` deals (each folder
/// holds its share, the genesis the group key, threshold 3 of 4), under a steady load:
/// 1. blocks carry beacons from the start;
/// 2. one validator SIGKILLed: the three others (exactly the threshold) still recover every
///    beacon, and blocks go on;
/// 3. restarted, it catches up and its shares count again; a dice duel joined on one validator
///    is rolled in the next block (the scheduled call wakes an idle proposer) from that block's
///    threshold beacon, and verifies (`verify --game --complete`) from another's transcript;
///    Every step of that transcript carries its block's finality proof; a certificate with a
///    flipped byte, or one moved to another step's block, is refused (exit 4, `finality.certificate`), a
///    dropped one too (exit 5, `finality`): `finality_lies_are_caught`;
/// 4. all four serve the same beacon in every header (`GET /v1/blocks/<h>`), each the genesis
///    group key's signature of its height, and the beacon metrics moved;
/// 5. stopped, every data directory passes `gamechain verify` (which checks each beacon).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threshold_beacons_survive_a_kill_and_a_restart() {
    let _heavy = heavy();
    let started = Instant::now();
    let tmp = tempfile::tempdir().unwrap();
    let base = common::testnet(tmp.path(), N, 100);
    let net = tmp.path().join("net");
    let mut vs = validators_of(&net, base);
    for v in &vs {
        assert!(
            v.dir.join("data/beacon_share.json").is_file(),
            "testnet deals a share to validator {}",
            v.index
        );
    }
    futures_util::future::join_all(vs.iter_mut().map(|v| v.start(&[]))).await;
    let genesis_text = std::fs::read_to_string(net.join("0/data/genesis.json")).unwrap();
    let genesis = gamechain_runtime::chain::Genesis::from_json(&genesis_text).unwrap();
    let beacon = genesis.beacon.clone().expect("testnet names a beacon");
    assert_eq!(
        (beacon.scheme.as_str(), beacon.threshold),
        ("bls12381-minsig-threshold", Some(3))
    );
    let chain_id = genesis.chain_id.clone();

    // 1. Blocks with beacons.
    let all: Vec<String> = vs.iter().map(|v| v.url.clone()).collect();
    let urls = |which: &[usize]| -> Vec<String> { which.iter().map(|&i| all[i].clone()).collect() };
    let phase = |what: &str| eprintln!("{what}: {:.1} s", started.elapsed().as_secs_f64());
    phase("started");
    load(urls(&[0, 1, 2, 3]), chain_id.clone(), 10).await;
    let (h1, _) = same_head(&vs, &[0, 1, 2, 3], 1).await;
    phase("loaded");

    // 2. Validator 2 killed under load: three shares of four are the threshold.
    let running = tokio::spawn(load(urls(&[0, 1, 3]), chain_id.clone(), 30));
    tokio::time::sleep(Duration::from_secs(1)).await;
    vs[2].kill();
    running.await.unwrap();
    let (h2, _) = same_head(&vs, &[0, 1, 3], h1 + 3).await;
    phase("loaded without validator 2");

    // 3. Restarted under load, it catches up; its shares count again.
    let running = tokio::spawn(load(urls(&[0, 1, 3]), chain_id.clone(), 20));
    vs[2].start(&[]).await;
    running.await.unwrap();
    load(urls(&[2, 0, 1, 3]), chain_id.clone(), 8).await;
    let (h3, _) = same_head(&vs, &[0, 1, 2, 3], h2 + 1).await;
    phase("loaded after its restart");
    eprintln!("heights: {h1}, {h2} (without validator 2), {h3}");

    // A dice duel on the validators: the roll runs in the block after the join, from its
    // threshold beacon, and the game verifies from another validator's transcript.
    let (alice, bob) = (
        SecretKey::generate(gamechain_runtime::chain::Network::Testnet),
        SecretKey::generate(gamechain_runtime::chain::Network::Testnet),
    );
    let (c0, c1) = (vs[0].client(), vs[1].client());
    let wait = Duration::from_secs(30);
    for (c, k) in [(&c0, &alice), (&c1, &bob)] {
        let r = c
            .send_and_wait(
                k,
                Action::Faucet {
                    token: "GOLD".into(),
                },
                wait,
            )
            .await
            .unwrap();
        assert!(r.receipt.ok);
    }
    let created = c0
        .send_and_wait(
            &alice,
            Action::game(
                "dice",
                &serde_json::json!({"kind": "create", "stake": "100"}),
            ),
            wait,
        )
        .await
        .unwrap();
    let id = created.receipt.events[0].data["id"]
        .as_str()
        .unwrap()
        .to_string();
    let joined = c1
        .send_and_wait(
            &bob,
            Action::game("dice", &serde_json::json!({"kind": "join", "id": id})),
            wait,
        )
        .await
        .unwrap();
    assert!(joined.receipt.ok, "{:?}", joined.receipt);
    let join_height = joined.height;
    eventually(30, "the duel is rolled", || {
        let c = vs[2].client();
        let id = id.clone();
        async move {
            c.view("dice", &[("id", &id)])
                .await
                .ok()
                .is_some_and(|g| g["status"] == "finished")
        }
    })
    .await;
    let g = vs[3].client().view("dice", &[("id", &id)]).await.unwrap();
    assert_eq!(g["roll_height"], join_height + 1, "{g}");
    let rolled = vs[2]
        .client()
        .block(gamechain_client::client::BlockRef::Height(join_height + 1))
        .await
        .unwrap();
    assert_eq!(
        rolled.scheduled.len(),
        1,
        "the roll ran in the block after the join"
    );
    let out = common::gamechain(
        tmp.path(),
        Some(&vs[2].url),
        &["verify", "--game", &format!("dice:{id}"), "--complete"],
    );
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    phase("a dice duel rolled from the threshold beacon and verified");
    finality_lies_are_caught(
        tmp.path(),
        &vs[2].url,
        &net.join("0/data/genesis.json"),
        &id,
    )
    .await;
    phase("forged and dropped finality certificates refused");
    a_view_is_proven_final(&vs[2].url, &net.join("0/data/genesis.json"), &id).await;
    phase("the duel's view proven final by a quorum, a forged or dropped certificate refused");
    let (h3, _) = same_head(&vs, &[0, 1, 2, 3], join_height + 1).await;

    // 4. One beacon per height, the same everywhere, each verifying.
    let mut beacons = Vec::new();
    for h in 1..=h3 {
        let mut at_h = Vec::new();
        for v in &vs {
            let block = v
                .client()
                .block(gamechain_client::client::BlockRef::Height(h))
                .await
                .unwrap();
            at_h.push(block.header.header.beacon);
        }
        let b = at_h[0].expect("every block after 0 carries a beacon");
        assert!(
            at_h.iter().all(|x| *x == Some(b)),
            "validators disagree on block {h}'s beacon: {at_h:?}"
        );
        genesis.check_beacon(h, Some(&b)).unwrap();
        beacons.push(b);
    }
    let distinct: std::collections::BTreeSet<_> = beacons.iter().map(|b| b.0).collect();
    assert_eq!(distinct.len(), beacons.len(), "a beacon repeats");
    for (i, v) in vs.iter().enumerate() {
        let m = scrape(&v.url).await;
        let value = |name: &str| metric(&m, name).unwrap_or(0.0);
        assert!(
            value("gamechain_beacon_released_total") > 0.0
                && value("gamechain_beacon_recovered_total") > 0.0
                && value("gamechain_beacon_shares_total{result=\"valid\"}") > 0.0,
            "validator {i}'s beacon metrics:\n{m}"
        );
        assert_eq!(
            value("gamechain_beacon_shares_total{result=\"invalid\"}"),
            0.0,
            "no honest share is refused: validator {i}"
        );
    }

    // 5. Every data directory verifies, beacons included.
    for v in vs.iter_mut() {
        v.terminate();
    }
    phase("stopped");
    let data: Vec<String> = vs
        .iter()
        .map(|v| v.dir.join("data").to_string_lossy().into_owned())
        .collect();
    let cwd = tmp.path();
    let reports = futures_util::future::join_all(
        data.iter()
            .map(|d| async move { verify_json(cwd, &["--data", d.as_str()]).await }),
    )
    .await;
    for (v, (code, report)) in vs.iter().zip(reports) {
        assert_eq!(code, 0, "verify validator {}'s data: {report}", v.index);
        assert!(
            report["head_height"].as_u64().unwrap() >= h3,
            "validator {}: {report}",
            v.index
        );
    }
    eprintln!(
        "threshold beacons: {h3} blocks, {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// `verify --game dice:<id>` of `url`'s transcript against the genesis file: exit code and
/// the JSON report.
fn verify_game_file(
    cwd: &std::path::Path,
    url: &str,
    id: &str,
    genesis: &std::path::Path,
    t: &Value,
    name: &str,
) -> (i32, Value) {
    let file = cwd.join(name);
    std::fs::write(&file, serde_json::to_vec(t).unwrap()).unwrap();
    let out = gamechain(
        cwd,
        Some(url),
        &[
            "verify",
            "--game",
            &format!("dice:{id}"),
            "--transcript",
            file.to_str().unwrap(),
            "--genesis",
            genesis.to_str().unwrap(),
            "--json",
        ],
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "verify --json printed {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), report)
}

/// A lying validator's transcript on a chain with validators (issue 43, item 2): the real
/// transcript of game `id` from `url` verifies with every step's finality proof checked
/// against the genesis set; one whose certificate has a flipped byte, or another block's
/// certificate, is refused with `finality.certificate` (exit 4); one without a step's record
/// with `finality` (exit 5).
async fn finality_lies_are_caught(
    cwd: &std::path::Path,
    url: &str,
    genesis: &std::path::Path,
    id: &str,
) {
    let t: Value = reqwest::get(format!("{url}/v1/games/dice/{id}/transcript"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let steps = t["steps"].as_array().unwrap();
    assert!(steps.len() >= 3, "create, join and the roll: {t}");
    for (i, s) in steps.iter().enumerate() {
        let f = &s["finality"];
        assert!(
            f["certificate"].is_string(),
            "step {i} carries no finality: {s}"
        );
        let bytes = serde_json::to_string(f).unwrap().len();
        eprintln!(
            "step {i} (block {}): finality record {bytes} bytes, {} links",
            s["height"],
            f["links"].as_array().map_or(0, Vec::len)
        );
    }
    let started = Instant::now();
    let (code, report) = verify_game_file(cwd, url, id, genesis, &t, "real.json");
    assert_eq!(
        (code, report["result"].as_str()),
        (0, Some("verified")),
        "{report}"
    );
    assert_eq!(report["final_by_quorum_of"], 4, "{report}");
    eprintln!(
        "verify --game with finality: {} ms in the verifier, {:.0} ms with the process",
        report["elapsed_ms"],
        started.elapsed().as_secs_f64() * 1000.0
    );

    // A flipped byte in the last step's certificate (its last signature).
    let last = steps.len() - 1;
    let mut forged = t.clone();
    let cert = forged["steps"][last]["finality"]["certificate"]
        .as_str()
        .unwrap()
        .to_string();
    let mut bytes = hex::decode(&cert).unwrap();
    *bytes.last_mut().unwrap() ^= 1;
    forged["steps"][last]["finality"]["certificate"] = Value::from(hex::encode(bytes));
    let (code, report) = verify_game_file(cwd, url, id, genesis, &forged, "forged.json");
    assert_eq!(code, 4, "{report}");
    let d = &report["divergence"];
    assert_eq!(
        (d["index"].as_u64(), d["field"].as_str()),
        (Some(last as u64), Some("finality.certificate")),
        "{report}"
    );
    let got = d["got"].as_str().unwrap();
    assert!(
        got.contains("not a quorum") || got.contains("not a finality certificate"),
        "{report}"
    );

    // Another block's real certificate.
    let other = if steps[0]["height"] != steps[last]["height"] {
        0
    } else {
        1
    };
    let mut moved = t.clone();
    moved["steps"][last]["finality"] = t["steps"][other]["finality"].clone();
    moved["steps"][last]["finality"]["tx_count"] = t["steps"][last]["finality"]["tx_count"].clone();
    let (code, report) = verify_game_file(cwd, url, id, genesis, &moved, "moved.json");
    assert_eq!(code, 4, "{report}");
    assert_eq!(
        report["divergence"]["field"], "finality.certificate",
        "{report}"
    );

    // No record at all for the first step.
    let mut dropped = t.clone();
    dropped["steps"][0]
        .as_object_mut()
        .unwrap()
        .remove("finality");
    let (code, report) = verify_game_file(cwd, url, id, genesis, &dropped, "dropped.json");
    assert_eq!(
        (code, report["result"].as_str()),
        (5, Some("not_final")),
        "{report}"
    );
    let d = &report["divergence"];
    assert_eq!(
        (d["index"].as_u64(), d["field"].as_str()),
        (Some(0), Some("finality")),
        "{report}"
    );
    assert!(
        d["got"].as_str().unwrap().starts_with("step 0 (block "),
        "{report}"
    );
}

/// `view --prove`'s check on a validator chain: the dice duel's view, proven against a block
/// whose finality a quorum of the genesis set certified, verifies with `final_at`; the same
/// answer with a flipped certificate byte, or without its finality record, is refused.
async fn a_view_is_proven_final(url: &str, genesis: &std::path::Path, id: &str) {
    use gamechain_node::verify::view::verify_view;
    let genesis: gamechain_chain::Genesis =
        serde_json::from_str(&std::fs::read_to_string(genesis).unwrap()).unwrap();
    let client = gamechain_client::client::Client::new(url).unwrap();
    let pairs = [("id", id)];
    let q: std::collections::BTreeMap<String, String> = [("id".to_string(), id.to_string())].into();
    // The head's certificate may trail its commit by a moment: ask again until it is held.
    let mut tries = 0;
    let (proof, wasm) = loop {
        let (proof, wasm) = client.view_proof("dice", &pairs, &genesis).await.unwrap();
        if proof.finality.is_some() || tries == 50 {
            break (proof, wasm);
        }
        tries += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let verified = verify_view(&genesis, "dice", &q, &proof, &wasm).unwrap();
    assert!(verified.final_at.is_some_and(|h| h >= verified.height));
    assert_eq!(verified.answer.as_ref().unwrap()["id"], id);
    let mut forged = proof.clone();
    let record = forged.finality.as_mut().unwrap();
    let mut bytes = hex::decode(&record.certificate).unwrap();
    *bytes.last_mut().unwrap() ^= 1;
    record.certificate = hex::encode(bytes);
    let e = verify_view(&genesis, "dice", &q, &forged, &wasm).unwrap_err();
    assert!(e.contains("is not proven final"), "{e}");
    let mut dropped = proof.clone();
    dropped.finality = None;
    let e = verify_view(&genesis, "dice", &q, &dropped, &wasm).unwrap_err();
    assert!(e.contains("carries no finality record"), "{e}");

    // The JavaScript SDK's light client on the same testnet: `getViewProven` with the genesis
    // validator set checks the answer's finality record, and the view re-executed in JS; a
    // player's balance (`getStateProven`) is proven final the same way.
    common::require_node_packages("@noble/curves");
    let mut js = std::process::Command::new("node");
    js.args(["--input-type=module", "-e", VIEW_PROVEN_JS])
        .current_dir(common::sdk_dir())
        .env("URL", url)
        .env("ID", id);
    let out = tokio::task::block_in_place(|| {
        common::typescript::run_tool(js, "node (getViewProven)", Duration::from_secs(60))
    });
    let said: Value = serde_json::from_str(out.trim())
        .unwrap_or_else(|e| panic!("the script printed {out:?}: {e}"));
    assert_eq!(said["final"], true, "{said}");
    assert_eq!(said["value"]["id"], id, "{said}");
    assert_eq!(
        said["balance"]["final"], true,
        "a balance proven final too: {said}"
    );
    eprintln!("JS light client on the testnet: {said}");
}

/// A light client in Node.js: the dice duel `$ID`'s view from `$URL`, proven final by the
/// genesis validators (asked again while the node holds no certificate for its head yet).
const VIEW_PROVEN_JS: &str = r#"
import { Chain, getStateProven, getViewProven } from './src/index.js';
const chain = new Chain(process.env.URL);
const g = await chain.genesis();
const { genesis_hash: genesisHash } = await chain.status();
const finality = { validators: g.validators, chainId: g.chain_id, genesisHash };
const again = async (read) => {
  for (let i = 0; ; i++) {
    try { return { ...(await read()), tries: i + 1 }; } catch (e) {
      if (i >= 50 || !/no finality record/.test(e.message)) throw e;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
};
const view = await again(() => getViewProven(chain, 'dice', { id: process.env.ID }, { finality }));
const balance = await again(() => getStateProven(chain, `bal/${view.value.x}/GOLD`, { finality }));
console.log(JSON.stringify({ ...view, balance: { final: balance.final, height: balance.height, tries: balance.tries } }));
"#;
