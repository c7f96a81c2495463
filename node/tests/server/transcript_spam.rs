//! Issue 45, #4: a spammer of one game's transcript cannot deny everyone transcripts. A
//! `gamechain node` child process holds a game of [`EVENTS`] move-board posts of
//! [`PAYLOAD_BYTES`] each (anyone may post under any game id); then, for [`ATTACK_SECS`],
//! [`SPAMMERS`] loops from loopback addresses of their own networks (127.0.10.1, 127.0.11.1, …:
//! the node counts budgets per /24) fetch its transcript
//! back to back — half the same URL, half with an ever new `from` so that no answer repeats —
//! while blocks keep coming (a post every 250 ms, so answers valid "while the head does not
//! move" keep going stale). A legitimate client at 127.0.0.2 fetching another game's transcript
//! every 300 ms must be served (at least 90 % `200`). Before the fix (two builds node-wide, one
//! per address, refused at once) the spammers held both build slots and the legitimate client
//! got `503 busy` nearly every time.
//!
//! The test prints its figures: requests and answers of each side, bytes sent to the spammers,
//! the node's CPU seconds and resident memory (`VmRSS`) before, during and 3 s after. The game
//! size and the attack's length can be changed: `GAMECHAIN_SPAM_EVENTS`,
//! `GAMECHAIN_SPAM_SECS`.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::{env_count, heavy, rss, NodeProcess};
use gamechain_client::client::Client;
use gamechain_runtime::chain::{Action, Network, SecretKey, SignedTx, TxBody};
use serde_json::json;

/// Posts in the spammed game (the issue used 700).
const EVENTS: usize = 400;
/// Bytes of each post's payload (the move board takes up to 8,192).
const PAYLOAD_BYTES: usize = 8_000;
/// Seconds of attack.
const ATTACK_SECS: usize = 12;
/// Spamming addresses.
const SPAMMERS: usize = 4;

/// CPU seconds (user and system) process `pid` has used.
fn cpu_secs(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which ends at the last `)`): utime is the 12th, stime
    // the 13th.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // SAFETY: sysconf only reads a configuration value.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    (ticks(11) + ticks(12)) as f64 / hz
}

/// Posts `n` move-board events of `payload` under `game`, signed by a new key, in batches;
/// waits for the last. Returns its height.
async fn post_game(client: &Client, game: &str, n: usize, payload: &str) -> u64 {
    let key = SecretKey::generate(Network::Testnet);
    let chain_id = client.chain_id().await.unwrap();
    let txs: Vec<SignedTx> = (0..n as u64)
        .map(|nonce| {
            let op = json!({"kind": "post", "game": game, "type": 1, "payload": payload});
            TxBody {
                chain_id: chain_id.clone(),
                from: key.address(),
                nonce,
                action: Action::game("moveboard", &op),
            }
            .sign(&key)
        })
        .collect();
    let mut last = String::new();
    for batch in txs.chunks(100) {
        for r in client.post_txs(batch).await.unwrap() {
            last = r.unwrap();
        }
    }
    let included = client
        .wait_for_receipt(&last, Duration::from_secs(120))
        .await
        .unwrap();
    assert!(included.receipt.ok, "{:?}", included.receipt);
    included.height
}

/// What one loop got: answers by status (0: no answer), body bytes, the longest wait.
#[derive(Default, Debug)]
struct Tally {
    statuses: BTreeMap<u16, u64>,
    bytes: u64,
    slowest: Duration,
}

impl Tally {
    fn count(&self, status: u16) -> u64 {
        self.statuses.get(&status).copied().unwrap_or(0)
    }
    fn total(&self) -> u64 {
        self.statuses.values().sum()
    }
}

/// Fetches `url(i)` for i = 0, 1, … from source address `ip` until `stop`, pausing `pause`
/// after each answer (10 ms at least after one that is not `200`: a refusal is immediate).
async fn fetch_loop(
    ip: IpAddr,
    url: impl Fn(u64) -> String,
    pause: Duration,
    stop: Arc<AtomicBool>,
) -> Tally {
    let http = reqwest::Client::builder()
        .local_address(ip)
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let mut tally = Tally::default();
    let mut i = 0;
    while !stop.load(Ordering::SeqCst) {
        let asked = Instant::now();
        let status = match http.get(url(i)).send().await {
            Ok(r) => {
                let status = r.status().as_u16();
                tally.bytes += r.bytes().await.map_or(0, |b| b.len() as u64);
                status
            }
            Err(_) => 0,
        };
        *tally.statuses.entry(status).or_default() += 1;
        tally.slowest = tally.slowest.max(asked.elapsed());
        i += 1;
        let pause = match status {
            200 => pause,
            _ => pause.max(Duration::from_millis(10)),
        };
        tokio::time::sleep(pause).await;
    }
    tally
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(
    clippy::await_holding_lock,
    reason = "heavy() is held for the whole test on purpose"
)]
async fn a_spammed_game_does_not_deny_other_games_transcripts() {
    // The spammers and the node's builds take both cores.
    let _heavy = heavy();
    let events = env_count("GAMECHAIN_SPAM_EVENTS", EVENTS);
    let attack = Duration::from_secs(env_count("GAMECHAIN_SPAM_SECS", ATTACK_SECS) as u64);
    let tmp = tempfile::tempdir().unwrap();
    let mut node = NodeProcess::new(tmp.path(), "");
    node.start().await;
    let pid = node.pid();
    let client = node.client();
    let base = node.url();

    let started = Instant::now();
    let payload = "x".repeat(PAYLOAD_BYTES);
    post_game(&client, "legit", 3, "a move").await;
    let spam_last = post_game(&client, "spam", events, &payload).await;
    let setup = started.elapsed();

    // The spammed transcript is large and served (or `413` over 16 MiB, the other
    // path, with `GAMECHAIN_SPAM_EVENTS` of 1,000 or more).
    let spam_path = format!("{base}/v1/games/moveboard/spam/transcript");
    let spam_url = format!("{spam_path}?from=1");
    let first = reqwest::get(&spam_url).await.unwrap();
    let spam_status = first.status().as_u16();
    assert!(spam_status == 200 || spam_status == 413, "{spam_status}");
    let spam_size = first.bytes().await.unwrap().len();
    let legit_url = format!("{base}/v1/games/moveboard/legit/transcript?from=1");
    let rss_before = rss(pid);
    let cpu_before = cpu_secs(pid);

    let stop = Arc::new(AtomicBool::new(false));
    // Blocks keep coming: a post every 250 ms.
    let ticking = {
        let (client, stop) = (client.clone(), stop.clone());
        tokio::spawn(async move {
            let key = SecretKey::generate(Network::Testnet);
            while !stop.load(Ordering::SeqCst) {
                let op = json!({"kind": "post", "game": "tick", "type": 1, "payload": "t"});
                let _ = client.send(&key, Action::game("moveboard", &op)).await;
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        })
    };
    let spammers: Vec<_> = (0..SPAMMERS)
        .map(|i| {
            let ip = IpAddr::V4(Ipv4Addr::new(127, 0, 10 + i as u8, 1));
            let path = spam_path.clone();
            // Odd spammers: every `from` up to the game's last block in turn (each a new
            // answer, most of them the whole game or most of it).
            let fresh = i % 2 == 1;
            tokio::spawn(fetch_loop(
                ip,
                move |n| match fresh {
                    true => format!("{path}?from={}", 1 + n % spam_last),
                    false => format!("{path}?from=1"),
                },
                Duration::ZERO,
                stop.clone(),
            ))
        })
        .collect();
    let legit = {
        let url = legit_url.clone();
        tokio::spawn(fetch_loop(
            IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)),
            move |_| url.clone(),
            Duration::from_millis(300),
            stop.clone(),
        ))
    };
    let mut rss_peak = 0;
    let attack_start = Instant::now();
    while attack_start.elapsed() < attack {
        rss_peak = rss_peak.max(rss(pid));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop.store(true, Ordering::SeqCst);
    let cpu_during = cpu_secs(pid) - cpu_before;
    let attack_secs = attack_start.elapsed().as_secs_f64();
    let legit = legit.await.unwrap();
    let mut spam = Tally::default();
    for s in spammers {
        let t = s.await.unwrap();
        for (status, n) in t.statuses {
            *spam.statuses.entry(status).or_default() += n;
        }
        spam.bytes += t.bytes;
    }
    ticking.await.unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let rss_after = rss(pid);
    let mb = |b: u64| b as f64 / (1 << 20) as f64;
    eprintln!(
        "transcript spam: setup {setup:.1?}; spammed game {events} posts of {PAYLOAD_BYTES} B, transcript {spam_status}, {:.1} MiB; \
         {attack_secs:.1} s of attack from {SPAMMERS} addresses\n\
         legitimate: {} of {} served (answers {:?}, slowest {:.1?})\n\
         spammers: answers {:?}, {:.0} MiB sent to them ({:.1} MiB/s)\n\
         node: {cpu_during:.1} CPU s ({:.2} cores); VmRSS before {:.0} MiB, peak {:.0} MiB, 3 s after {:.0} MiB",
        mb(spam_size as u64),
        legit.count(200),
        legit.total(),
        legit.statuses,
        legit.slowest,
        spam.statuses,
        mb(spam.bytes),
        mb(spam.bytes) / attack_secs,
        cpu_during / attack_secs,
        mb(rss_before),
        mb(rss_peak),
        mb(rss_after),
    );
    assert!(legit.total() >= 5, "{legit:?}");
    assert!(
        legit.count(200) * 10 >= legit.total() * 9,
        "the legitimate client was served {} of {} times: {legit:?}",
        legit.count(200),
        legit.total()
    );
    // The spammers' budgets ran out.
    assert!(spam.count(429) > 0, "{spam:?}");
}
