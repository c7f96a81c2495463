//! Four validators on four "machines": one Linux network namespace each, started from the
//! folders `gamechain testnet --hosts v0.gamechain.test,…` writes (peers named by DNS name,
//! listening on 0.0.0.0, the production p2p preset), over a network with 50 ms of delay and 1 %
//! packet loss on every packet between two validators.
//!
//! Needs root, iproute2 and `/dev/net/tun`: it runs wherever they are (so in `.ci/run`, about
//! 45 s) and prints why it skipped and passes where they are not; `GAMECHAIN_NETNS=0` skips it,
//! `GAMECHAIN_NETNS=1` makes a missing prerequisite a failure. `GAMECHAIN_NETNS_INTERVAL_MS` sets the chain's `min_block_interval_ms`
//! (default 1000, the default of a new chain) and `GAMECHAIN_NETNS_SAMPLES` the number of
//! finality samples (default 60).
//!
//! The network: `tc qdisc … netem` is what one would use, but kernels built without
//! `CONFIG_NET_SCH_NETEM` (as this project's CI machine: a VM booted with `nomodule`) have no
//! netem, so the test carries the packets itself: each namespace gets a TUN device
//! (`10.X.Y.<i+1>/24`), the test's own namespace one more (`10.X.Y.100`, the client), and a
//! router in this process reads every IPv4 packet from the device it left by, drops 1 % of
//! those between two validators at random, holds the others 50 ms, and writes them to the
//! device of their destination: the kernels' TCP stacks see real delay and real loss, as under
//! netem on each host's interface. The client's own link is clean, so what it measures is the
//! validators' work. Names: each namespace gets `/etc/netns/<ns>/hosts` naming the four
//! (`ip netns exec` mounts it over `/etc/hosts` inside only; the machine's own file is never
//! touched), so the validators find each other by DNS name through the system resolver.
//!
//! Checked: the four connect and finalize blocks; `gamechain demo --node <validator 1>` plays
//! the seed's game through while the chain runs; finality latency, from a transaction's submit
//! to the block holding it arriving on the validator's WebSocket (validators commit, and push,
//! only final blocks with their certificate), over faucet transactions sent in turn to each
//! validator, printed as p50 / p99; the four end at one head whose finality record is served.
//! Namespaces, devices and hosts files are removed however the test ends (and left-overs of a
//! killed run are removed by the next).

use crate::common;

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read as _, Write as _};
use std::os::fd::{AsRawFd, FromRawFd};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use gamechain_client::client::{BlockRef, Client};
use gamechain_runtime::chain::{Network, SecretKey};

use crate::common::{faucet_tx, heavy, BIN};

const N: usize = 4;
const API_PORT: u16 = 8645;
const P2P_PORT: u16 = 9645;
/// One-way delay of a packet between two validators.
const DELAY: Duration = Duration::from_millis(50);
/// Packets between two validators that are lost, per million.
const LOSS_PER_MILLION: u64 = 10_000;
/// What every namespace of this test is called: `gcnet<pid>v<i>`.
const PREFIX: &str = "gcnet";
/// The client's host number in the subnet.
const CLIENT: u8 = 100;

fn sh(args: &[&str]) -> Result<(), String> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| format!("{}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`{}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn sh_ok(args: &[&str]) {
    sh(args).unwrap_or_else(|e| panic!("{e}"));
}

/// Why this test cannot run here, if it cannot (module docs); panics instead when
/// `GAMECHAIN_NETNS=1` demands it.
fn unavailable() -> Option<String> {
    let setting = std::env::var("GAMECHAIN_NETNS").unwrap_or_default();
    if setting == "0" {
        return Some("GAMECHAIN_NETNS=0".into());
    }
    // SAFETY: no preconditions.
    let why = if unsafe { libc::geteuid() } != 0 {
        Some("not root: network namespaces need root".to_string())
    } else if let Err(e) = sh(&["ip", "-V"]) {
        Some(format!("no iproute2: {e}"))
    } else if !Path::new("/dev/net/tun").exists() {
        Some("no /dev/net/tun".to_string())
    } else {
        None
    };
    if let (Some(why), "1") = (&why, setting.as_str()) {
        panic!("GAMECHAIN_NETNS=1 but {why}");
    }
    why
}

/// Removes namespaces and hosts files of earlier runs whose process is gone.
fn remove_leftovers() {
    let listed = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let text = String::from_utf8_lossy(&listed.stdout).to_string();
    let mut names: Vec<String> = text
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(String::from)
        .collect();
    if let Ok(dir) = std::fs::read_dir("/etc/netns") {
        names.extend(
            dir.flatten()
                .map(|e| e.file_name().to_string_lossy().to_string()),
        );
    }
    for name in names {
        let Some(rest) = name.strip_prefix(PREFIX) else {
            continue;
        };
        let Some(pid) = rest.split('v').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let _ = sh(&["ip", "netns", "del", &name]);
        let _ = std::fs::remove_dir_all(Path::new("/etc/netns").join(&name));
    }
}

/// A TUN device (IPv4 packets without a header), opened in this namespace.
fn open_tun(name: &str) -> File {
    const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
    const IFF_TUN: libc::c_short = 0x0001;
    const IFF_NO_PI: libc::c_short = 0x1000;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/net/tun")
        .unwrap();
    let mut ifreq = [0u8; 40];
    ifreq[..name.len()].copy_from_slice(name.as_bytes());
    ifreq[16..18].copy_from_slice(&(IFF_TUN | IFF_NO_PI).to_ne_bytes());
    // SAFETY: `ifreq` is a 40-byte `struct ifreq` the ioctl reads and writes in place.
    let rc = unsafe { libc::ioctl(file.as_raw_fd(), TUNSETIFF, ifreq.as_mut_ptr()) };
    assert_eq!(
        rc,
        0,
        "TUNSETIFF {name}: {}",
        std::io::Error::last_os_error()
    );
    file
}

/// Waits up to 100 ms for `file` to be readable.
fn readable(file: &File) -> bool {
    let mut fd = libc::pollfd {
        fd: file.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    unsafe { libc::poll(&mut fd, 1, 100) > 0 }
}

/// The test's network: namespaces, TUN devices, the router's threads, the validators.
struct Lab {
    tag: String,
    /// `10.X.Y.` of the subnet.
    net: String,
    namespaces: Vec<String>,
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
    validators: Vec<Option<Child>>,
    /// Packets forwarded and dropped between validators.
    forwarded: Arc<AtomicU64>,
    dropped: Arc<AtomicU64>,
}

impl Lab {
    fn new() -> Lab {
        remove_leftovers();
        let pid = std::process::id();
        let net = format!("10.{}.{}.", 200 + pid % 50, (pid / 50) % 250);
        let mut lab = Lab {
            tag: format!("{PREFIX}{pid}"),
            net,
            namespaces: Vec::new(),
            stop: Arc::default(),
            threads: Vec::new(),
            validators: Vec::new(),
            forwarded: Arc::default(),
            dropped: Arc::default(),
        };
        // From here on, `Drop` removes whatever was made, even if a step below panics.
        let mut devices = Vec::new();
        for i in 0..N {
            let ns = format!("{}v{i}", lab.tag);
            sh(&["ip", "netns", "add", &ns])
                .unwrap_or_else(|e| panic!("cannot make a network namespace: {e}"));
            lab.namespaces.push(ns.clone());
            let hosts_dir = Path::new("/etc/netns").join(&ns);
            std::fs::create_dir_all(&hosts_dir).unwrap();
            let mut hosts = String::from("127.0.0.1 localhost\n");
            for j in 0..N {
                hosts += &format!("{}{} v{j}.gamechain.test\n", lab.net, j + 1);
            }
            std::fs::write(hosts_dir.join("hosts"), hosts).unwrap();
            let dev = format!("{}t{i}", lab.tag);
            let tun = open_tun(&dev);
            sh_ok(&["ip", "link", "set", &dev, "netns", &ns]);
            let addr = format!("{}{}/24", lab.net, i + 1);
            sh_ok(&["ip", "-n", &ns, "addr", "add", &addr, "dev", &dev]);
            sh_ok(&["ip", "-n", &ns, "link", "set", &dev, "up"]);
            sh_ok(&["ip", "-n", &ns, "link", "set", "lo", "up"]);
            devices.push((i as u8 + 1, tun));
        }
        let dev = format!("{}tc", lab.tag);
        let tun = open_tun(&dev);
        sh_ok(&[
            "ip",
            "addr",
            "add",
            &format!("{}{CLIENT}/24", lab.net),
            "dev",
            &dev,
        ]);
        sh_ok(&["ip", "link", "set", &dev, "up"]);
        devices.push((CLIENT, tun));
        lab.route(devices);
        lab
    }

    /// Starts the router (module docs) over `devices` (host number, device).
    fn route(&mut self, devices: Vec<(u8, File)>) {
        type Packet = (Instant, Vec<u8>);
        // Per destination, two queues with a writer each: packets held for `DELAY`, and the
        // client's packets, which must not wait behind them.
        let mut outboxes: HashMap<u8, [mpsc::Sender<Packet>; 2]> = HashMap::new();
        let mut readers = Vec::new();
        for (host, file) in devices {
            let mut queues = Vec::new();
            for _ in 0..2 {
                // SAFETY: a fresh descriptor of the same device, owned by the writer's File.
                let mut writer = unsafe { File::from_raw_fd(libc::dup(file.as_raw_fd())) };
                let (tx, rx) = mpsc::channel::<Packet>();
                queues.push(tx);
                let stop = self.stop.clone();
                self.threads.push(std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let Ok((at, packet)) = rx.recv_timeout(Duration::from_millis(100)) else {
                            continue;
                        };
                        let now = Instant::now();
                        if at > now {
                            std::thread::sleep(at - now);
                        }
                        let _ = writer.write(&packet);
                    }
                }));
            }
            let [slow, fast]: [mpsc::Sender<Packet>; 2] = queues.try_into().unwrap();
            outboxes.insert(host, [slow, fast]);
            readers.push((host, file));
        }
        let outboxes = Arc::new(outboxes);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let seed = Arc::new(Mutex::new(
            ((u64::from(std::process::id()) << 32) | u64::from(nanos)) ^ 0x9e37_79b9_7f4a_7c15,
        ));
        for (host, mut file) in readers {
            let (stop, outboxes, seed) = (self.stop.clone(), outboxes.clone(), seed.clone());
            let (forwarded, dropped) = (self.forwarded.clone(), self.dropped.clone());
            let net = self.net.clone();
            let prefix: Vec<u8> = net
                .trim_end_matches('.')
                .split('.')
                .map(|p| p.parse().unwrap())
                .collect();
            self.threads.push(std::thread::spawn(move || {
                let mut buf = vec![0u8; 65_536];
                while !stop.load(Ordering::Relaxed) {
                    if !readable(&file) {
                        continue;
                    }
                    let Ok(n) = file.read(&mut buf) else { break };
                    if n < 20 || buf[0] >> 4 != 4 || buf[16..19] != prefix[..] {
                        continue; // IPv6 chatter, or not for the subnet
                    }
                    let to = buf[19];
                    let Some([slow, fast]) = outboxes.get(&to) else {
                        continue;
                    };
                    if host == CLIENT || to == CLIENT {
                        let _ = fast.send((Instant::now(), buf[..n].to_vec()));
                        continue;
                    }
                    {
                        let r = {
                            let mut s = seed.lock().unwrap();
                            *s ^= *s << 13;
                            *s ^= *s >> 7;
                            *s ^= *s << 17;
                            *s
                        };
                        if r % 1_000_000 < LOSS_PER_MILLION {
                            dropped.fetch_add(1, Ordering::Relaxed);
                            continue;
                        }
                        forwarded.fetch_add(1, Ordering::Relaxed);
                    }
                    let _ = slow.send((Instant::now() + DELAY, buf[..n].to_vec()));
                }
            }));
        }
    }

    fn ip(&self, i: usize) -> String {
        format!("{}{}", self.net, i + 1)
    }

    /// Starts validator `i` in its namespace from `folder`, logging to `folder/node.log`.
    fn start(&mut self, i: usize, folder: &Path) {
        let log = File::create(folder.join("node.log")).unwrap();
        let child = Command::new("ip")
            .args(["netns", "exec", self.namespaces[i].as_str(), BIN])
            .args(["node", "--validator", "--config", "node.toml"])
            .current_dir(folder)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        self.validators.push(Some(child));
    }

    fn stop_validators(&mut self) {
        for child in self.validators.iter_mut().filter_map(Option::take) {
            let mut child = child;
            // SAFETY: no memory-safety preconditions; the child is ours and not reaped.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
            let start = Instant::now();
            while child.try_wait().ok().flatten().is_none() {
                if start.elapsed() > Duration::from_secs(10) {
                    let _ = child.kill();
                    let _ = child.wait();
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        self.stop_validators();
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        for ns in &self.namespaces {
            if let Err(e) = sh(&["ip", "netns", "del", ns]) {
                eprintln!("cleanup: {e}");
            }
            let _ = std::fs::remove_dir_all(Path::new("/etc/netns").join(ns));
        }
        // /etc/netns itself only if this test left it empty.
        let _ = std::fs::remove_dir("/etc/netns");
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_validators_in_four_namespaces_over_a_lossy_slow_network() {
    if let Some(why) = unavailable() {
        eprintln!("netns test skipped: {why}");
        return;
    }
    let _heavy = heavy();
    let interval = common::env_count("GAMECHAIN_NETNS_INTERVAL_MS", 1000);
    let samples = common::env_count("GAMECHAIN_NETNS_SAMPLES", 60).max(1);
    let mut lab = Lab::new();
    let tmp = tempfile::tempdir().unwrap();
    let hosts: Vec<String> = (0..N).map(|i| format!("v{i}.gamechain.test")).collect();
    let out = common::gamechain(
        tmp.path(),
        None,
        &[
            "testnet",
            "--hosts",
            &hosts.join(","),
            "--dir",
            "net",
            "--base-port",
            &API_PORT.to_string(),
            "--p2p-port",
            &P2P_PORT.to_string(),
            "--chain-id",
            "gamechain-dev",
            "--min-block-interval-ms",
            &interval.to_string(),
        ],
    );
    assert!(
        out.status.success(),
        "testnet --hosts: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        printed.contains("copy to host v3.gamechain.test"),
        "{printed}"
    );
    let folders: Vec<PathBuf> = (0..N)
        .map(|i| tmp.path().join("net").join(i.to_string()))
        .collect();
    for folder in &folders {
        let path = folder.join("node.toml");
        let config = std::fs::read_to_string(&path).unwrap();
        assert!(config.contains("listen = \"0.0.0.0:8645\""), "{config}");
        assert!(
            config.contains("@v1.gamechain.test:9645\"")
                || config.contains("@v0.gamechain.test:9645\"")
        );
        // One client address sends every sample: no per-IP rate limit for it.
        let config = config.replacen("data_dir", "rate_limit_per_sec = 0\ndata_dir", 1);
        std::fs::write(&path, config).unwrap();
    }
    for (i, folder) in folders.iter().enumerate() {
        lab.start(i, folder);
    }
    let log = |i: usize| std::fs::read_to_string(folders[i].join("node.log")).unwrap_or_default();
    let clients: Vec<Client> = (0..N)
        .map(|i| Client::new(&format!("http://{}:{API_PORT}", lab.ip(i))).unwrap())
        .collect();
    let started = Instant::now();
    for (i, c) in clients.iter().enumerate() {
        while c.status().await.is_err() {
            assert!(
                started.elapsed() < common::READY_TIMEOUT,
                "validator {i} does not answer:\n{}",
                log(i)
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    // Connected (by name) and finalizing: a transaction sent to validator 0 is final on all four.
    let chain_id = clients[0].chain_id().await.unwrap();
    let first = faucet_tx(&SecretKey::generate(Network::Testnet), &chain_id);
    let first_id = clients[0].post_tx(&first).await.unwrap();
    let connect = Instant::now();
    for (i, c) in clients.iter().enumerate() {
        while c
            .tx(&first_id)
            .await
            .ok()
            .and_then(|t| t.height())
            .is_none()
        {
            assert!(
                connect.elapsed() < Duration::from_secs(120),
                "validator {i}: a transaction not final within 120 s\n{}",
                log(i)
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    for i in 0..N {
        assert!(log(i).contains("preset=production"), "{}", log(i));
    }
    eprintln!(
        "netns: four validators finalizing {:.1} s after start",
        started.elapsed().as_secs_f64()
    );

    // The WebSocket feed of each validator: when each transaction's final block arrived.
    let arrived: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let mut feeds = Vec::new();
    for c in &clients {
        let mut sub = c.subscribe_blocks().await.unwrap();
        let arrived = arrived.clone();
        feeds.push(tokio::spawn(async move {
            while let Ok(Some(block)) = sub.next().await {
                let now = Instant::now();
                let mut a = arrived.lock().unwrap();
                for tx in &block.txs {
                    a.entry(tx.tx.txid()).or_insert(now);
                }
            }
        }));
    }

    // The demo through validator 1 while the chain runs and the samples are sent.
    let demo_url = format!("http://{}:{API_PORT}", lab.ip(1));
    let demo = tokio::process::Command::new(BIN)
        .args(["demo", "--node", demo_url.as_str(), "--timeout", "60"])
        .current_dir(tmp.path())
        .env_remove("GAMECHAIN_NODE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let demo = tokio::spawn(demo.wait_with_output());

    // Finality samples: one faucet transaction from a fresh key every 200 ms, to each
    // validator in turn; a sample's latency is from its POST to its block on that validator's
    // feed.
    let mut sent: Vec<(usize, String, Instant)> = Vec::new();
    let mut posts = Vec::new();
    for k in 0..samples {
        let key = SecretKey::generate(Network::Testnet);
        let tx = faucet_tx(&key, &chain_id);
        let client = clients[k % N].clone();
        let t0 = Instant::now();
        sent.push((k % N, tx.txid(), t0));
        posts.push(tokio::spawn(async move { client.post_tx(&tx).await }));
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for p in posts {
        p.await.unwrap().unwrap();
    }
    let wait = Instant::now();
    let latencies: Vec<(usize, Duration)> = loop {
        let done: Vec<Option<(usize, Duration)>> = {
            let a = arrived.lock().unwrap();
            sent.iter()
                .map(|(v, id, t0)| a.get(id).map(|t| (*v, t.saturating_duration_since(*t0))))
                .collect()
        };
        if done.iter().all(Option::is_some) {
            break done.into_iter().flatten().collect();
        }
        assert!(
            wait.elapsed() < Duration::from_secs(120),
            "{} of {samples} samples not final within 120 s",
            done.iter().filter(|d| d.is_none()).count()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let demo = tokio::time::timeout(Duration::from_secs(180), demo)
        .await
        .expect("demo within 180 s")
        .unwrap()
        .unwrap();
    assert!(
        demo.status.success(),
        "demo through validator 1: {}\n{}",
        String::from_utf8_lossy(&demo.stdout),
        String::from_utf8_lossy(&demo.stderr)
    );

    // One head on all four, with its finality record served.
    let head = loop {
        let mut heads = Vec::new();
        for c in &clients {
            let s = c.status().await.unwrap();
            heads.push((s.height, s.head_hash));
        }
        if heads.windows(2).all(|w| w[0] == w[1]) {
            break heads[0].clone();
        }
        assert!(
            wait.elapsed() < Duration::from_secs(240),
            "no one head: {heads:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let finality = clients[2]
        .block_finality(BlockRef::Height(head.0))
        .await
        .unwrap();
    assert_eq!(finality.hash, head.1);
    for f in feeds {
        f.abort();
    }

    let mut all: Vec<Duration> = latencies.iter().map(|l| l.1).collect();
    all.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    eprintln!(
        "netns finality ({samples} samples, min_block_interval_ms {interval}, {} ms one-way, \
         {}% loss; packets between validators forwarded {}, dropped {}): p50 {:.0} ms, p99 {:.0} \
         ms, min {:.0} ms, max {:.0} ms; chain at height {}",
        DELAY.as_millis(),
        LOSS_PER_MILLION as f64 / 10_000.0,
        lab.forwarded.load(Ordering::Relaxed),
        lab.dropped.load(Ordering::Relaxed),
        ms(percentile(&all, 0.5)),
        ms(percentile(&all, 0.99)),
        ms(all[0]),
        ms(all[all.len() - 1]),
        head.0
    );
    assert!(
        lab.dropped.load(Ordering::Relaxed) > 0,
        "the network lost no packet"
    );
    lab.stop_validators();
}
