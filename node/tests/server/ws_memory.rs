//! 2,000 WebSocket subscribers that never read cannot grow the node: a `gamechain node` child
//! process (so the resident memory measured is the node's alone) holds 2,000 `/v1/ws`
//! subscriptions whose clients never read (4 KiB receive buffers), while signed transactions
//! of ~60 KB each fill at least 100 blocks and 100 MB of block messages. Its resident memory
//! (`VmRSS` of `/proc/<pid>/status`, sampled every 50 ms) must stay under [`RSS_BOUND`]: the
//! node never copies a block message per subscriber (16 KiB fragments of one shared buffer)
//! and closes a subscriber more than `ws_buffer_bytes` behind. One subscriber that reads
//! receives every block, in order, none missing. `/v1/status` counts the subscribers and
//! connections, and `/metrics` the closes. The kernel's TCP memory (`/proc/net/sockstat`, the
//! whole machine's) may rise by at most [`TCP_MEM_BOUND`] meanwhile: each subscriber's socket
//! has a fixed send buffer (`server/http_io.rs`); left to autotuning, 2,000 of them once
//! passed the kernel's limit and it reset every connection.
//!
//! The test raises its soft file-descriptor limit to the hard one (the node inherits it) and
//! uses fewer silent clients, saying so, when the hard limit is too low for 2,000.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::{heavy, rss, silent_subscriber, NodeProcess};
use futures_util::StreamExt;
use gamechain_client::client::Client;
use gamechain_node::server::http_io::WS_SOCKET_SEND_BUFFER_BYTES;
use gamechain_runtime::chain::{Action, Network, SecretKey};
use serde_json::{json, Value};

/// Silent subscribers wanted.
const SILENT: usize = 2000;
/// The node's resident memory may not exceed this while they are connected: its own baseline
/// (~60–90 MB in a debug build) plus, per subscriber, one 16 KiB fragment, a 4 KiB read buffer
/// and its task and socket state, plus the feed's shared blocks (`ws_buffer_bytes`, 16 MiB).
const RSS_BOUND: u64 = 400 << 20;
/// The kernel's TCP memory may rise by at most this while the silent subscribers are held:
/// per subscriber, twice the node's fixed WebSocket send buffer (Linux doubles `SO_SNDBUF`)
/// and its 4 KiB receive buffer, plus 256 MiB for the rest of the machine (other tests).
const TCP_MEM_BOUND: u64 =
    SILENT as u64 * (2 * WS_SOCKET_SEND_BUFFER_BYTES as u64 + (8 << 10)) + (256 << 20);
/// Blocks and bytes of block messages to push past the subscribers.
const BLOCKS: u64 = 100;
const BYTES: u64 = 100 << 20;
/// Concurrent transaction senders (each its own key).
const SENDERS: usize = 16;

/// Raises the soft `RLIMIT_NOFILE` to the hard limit; returns it.
fn raise_fd_limit() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid rlimit for the kernel to fill and read.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim), 0);
        lim.rlim_cur = lim.rlim_max;
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &lim), 0);
    }
    lim.rlim_cur
}

/// The machine's TCP memory in bytes: the `mem` pages of the `TCP:` line of
/// `/proc/net/sockstat`.
fn tcp_mem() -> u64 {
    let text = std::fs::read_to_string("/proc/net/sockstat").unwrap();
    let line = text.lines().find(|l| l.starts_with("TCP:")).unwrap();
    let mut words = line.split_whitespace();
    let pages: u64 = loop {
        match words.next() {
            Some("mem") => break words.next().unwrap().parse().unwrap(),
            Some(_) => {}
            None => panic!("no TCP mem in {line}"),
        }
    };
    // SAFETY: sysconf has no preconditions.
    pages * unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64
}

/// Sends ~60 KB game transactions from `key` (the module refuses them; they are included
/// with a failed receipt, their bodies in the block) until `stop` says so.
async fn send_big(client: Client, key: SecretKey, i: usize, stop: Arc<AtomicU64>) {
    let pad: String = std::iter::repeat_n(char::from(b'a' + (i % 26) as u8), 60_000).collect();
    let mut n = 0u64;
    while stop.load(Ordering::SeqCst) == 0 {
        let action = Action::game("tictactoe", &json!({"kind": "pad", "n": n, "pad": pad}));
        match client.send(&key, action).await {
            Ok(_) => n += 1,
            Err(e) if e.code() == Some("mempool_full") => {
                tokio::time::sleep(Duration::from_millis(20)).await
            }
            Err(e) => panic!("sending: {e}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_subscribers_cannot_grow_the_node_and_a_reader_misses_nothing() {
    // 2,000 sockets whose send buffers fill: not beside another test that fills sockets (a
    // loaded full run once hit the kernel's TCP memory limit, `tcp_mem`, and every connection
    // of this test was reset).
    let _heavy = heavy();
    let started = Instant::now();
    let tcp_before = tcp_mem();
    let fds = raise_fd_limit();
    // Each silent client takes a descriptor here and one in the node (which inherits the limit).
    let silent = SILENT.min(fds.saturating_sub(300) as usize);
    if silent < SILENT {
        eprintln!("the file descriptor limit is {fds}: {silent} silent subscribers, not {SILENT}");
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut node = NodeProcess::new(
        tmp.path(),
        &format!(
            "block_interval_ms = 3600000\nmax_block_txs = 16\nmax_ws_subscribers = {}\nmax_ws_per_ip = {}\nmax_connections = {}",
            silent + 10,
            silent + 10,
            silent + 200
        ),
    );
    node.start().await;
    let pid = node.pid();
    let client = node.client();

    // The reader, on its own task: every block's height and size.
    let url = format!("ws://{}/v1/ws", node.addr);
    let (mut reader, _) = tokio_tungstenite::connect_async(url.as_str())
        .await
        .unwrap();
    let (seen_tx, mut seen_rx) = tokio::sync::mpsc::unbounded_channel::<(u64, usize)>();
    let reading = tokio::spawn(async move {
        while let Some(Ok(message)) = reader.next().await {
            if let tokio_tungstenite::tungstenite::Message::Text(text) = message {
                let v: Value = serde_json::from_str(text.as_str()).unwrap();
                let height = v["block"]["height"].as_u64().unwrap();
                if seen_tx.send((height, text.len())).is_err() {
                    break;
                }
            }
        }
    });

    // The silent subscribers, 100 at a time.
    let mut silent_streams = Vec::with_capacity(silent);
    for chunk in (0..silent).collect::<Vec<_>>().chunks(100) {
        let opened =
            futures_util::future::join_all(chunk.iter().map(|_| silent_subscriber(node.addr)))
                .await;
        silent_streams.extend(opened);
    }
    let status = client.status().await.unwrap();
    assert_eq!(status.ws_subscribers, silent as u64 + 1, "{status:?}");
    assert!(status.connections > silent as u64, "{status:?}");
    let rss_connected = rss(pid);

    // One more over max_ws_subscribers would be refused; here: the load.
    let stop = Arc::new(AtomicU64::new(0));
    let senders: Vec<_> = (0..SENDERS)
        .map(|i| {
            tokio::spawn(send_big(
                client.clone(),
                SecretKey::generate(Network::Testnet),
                i,
                stop.clone(),
            ))
        })
        .collect();
    let mut peak = rss_connected;
    let mut tcp_peak = tcp_mem();
    let (mut blocks, mut bytes, mut last) = (0u64, 0u64, None::<u64>);
    let deadline = Instant::now() + Duration::from_secs(100);
    while blocks < BLOCKS || bytes < BYTES {
        assert!(
            Instant::now() < deadline,
            "only {blocks} blocks, {bytes} bytes in time"
        );
        peak = peak.max(rss(pid));
        tcp_peak = tcp_peak.max(tcp_mem());
        match tokio::time::timeout(Duration::from_millis(50), seen_rx.recv()).await {
            Ok(Some((height, size))) => {
                if let Some(prev) = last {
                    assert_eq!(height, prev + 1, "the reader missed a block");
                }
                last = Some(height);
                blocks += 1;
                bytes += size as u64;
            }
            Ok(None) => panic!("the reader was closed:\n{}", node.log()),
            Err(_) => {}
        }
    }
    stop.store(1, Ordering::SeqCst);
    for s in senders {
        s.await.unwrap();
    }
    peak = peak.max(rss(pid));
    let status = client.status().await.unwrap();
    let metrics = reqwest::get(format!("{}/metrics", node.url()))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let closed: u64 = metrics
        .lines()
        .filter(|l| {
            l.starts_with("gamechain_ws_lagged_closes_total ")
                || l.starts_with("gamechain_ws_stalled_drops_total ")
        })
        .map(|l| l.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap())
        .sum();
    eprintln!(
        "{silent} silent subscribers: node RSS {:.0} MB before the blocks, peak {:.0} MB \
         (bound {} MB) over {blocks} blocks of {:.2} MB on average ({:.0} MB); {closed} \
         subscribers closed, {} still subscribed; the reader saw every block; the kernel's TCP \
         memory {:.0} MB before, peak {:.0} MB (rise bound {} MB); {:.1} s",
        rss_connected as f64 / 1e6,
        peak as f64 / 1e6,
        RSS_BOUND >> 20,
        bytes as f64 / blocks as f64 / 1e6,
        bytes as f64 / 1e6,
        status.ws_subscribers,
        tcp_before as f64 / 1e6,
        tcp_peak as f64 / 1e6,
        TCP_MEM_BOUND >> 20,
        started.elapsed().as_secs_f64()
    );
    assert!(
        tcp_peak.saturating_sub(tcp_before) < TCP_MEM_BOUND,
        "the kernel's TCP memory rose from {tcp_before} to {tcp_peak} bytes, over {TCP_MEM_BOUND}"
    );
    assert!(
        peak < RSS_BOUND,
        "peak RSS {peak} bytes over the bound {RSS_BOUND}"
    );
    assert!(
        closed >= silent as u64 * 9 / 10,
        "only {closed} of {silent} silent subscribers were closed:\n{metrics}"
    );
    drop(silent_streams);
    reading.abort();
    assert!(node.terminate(Duration::from_secs(30)).success());
}

/// Sends a WebSocket upgrade for `path` and reads the answer's status line and head: the open
/// stream (its reads are the feed's frames) and the status code.
async fn upgrade(addr: std::net::SocketAddr, path: &str) -> (u16, tokio::net::TcpStream) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        if stream.read_exact(&mut byte).await.is_err() {
            break;
        }
        head.push(byte[0]);
    }
    let text = String::from_utf8_lossy(&head);
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, stream)
}

/// Issue 45, attack 2: a burst of event subscriptions that each replay the chain from block 1
/// fills every slot; the clients then all close at once. Before, each closed subscription kept
/// its slot while it waited for its turn to replay (two replays run at a time), so legitimate
/// subscribers were refused with 503 for tens of seconds; now a subscription notices its client
/// going while it waits, and the slots are free again at once. The node's resident memory
/// before, at the peak and after is printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_burst_of_replaying_subscriptions_frees_its_slots_at_once() {
    let _heavy = heavy();
    const SLOTS: usize = 100;
    let tmp = tempfile::tempdir().unwrap();
    let mut node = NodeProcess::new(
        tmp.path(),
        &format!(
            "block_interval_ms = 5\nmin_block_interval_ms = 5\nmax_ws_subscribers = {SLOTS}\n\
             max_ws_per_ip = {SLOTS}\nmax_connections = {}",
            SLOTS + 50
        ),
    );
    node.start().await;
    let pid = node.pid();
    let client = node.client();
    // A few thousand (empty) blocks, so that each replay from block 1 takes a while.
    let deadline = Instant::now() + Duration::from_secs(120);
    while client.status().await.unwrap().height < 3000 {
        assert!(
            Instant::now() < deadline,
            "the chain did not reach 3,000 blocks"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let rss_before = rss(pid);
    let path = "/v1/ws/events?module=tictactoe&from=1";
    let mut burst = Vec::with_capacity(SLOTS);
    for _ in 0..SLOTS {
        let (code, stream) = upgrade(node.addr, path).await;
        assert_eq!(code, 101, "slot {} of {SLOTS} refused", burst.len());
        burst.push(stream);
    }
    let (code, _) = upgrade(node.addr, path).await;
    assert_eq!(code, 503, "one over max_ws_subscribers");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_peak = rss(pid);
    drop(burst);
    let closed = Instant::now();
    // A legitimate subscriber gets in within a few seconds (before: tens of seconds of 503s).
    loop {
        let (code, _stream) = upgrade(node.addr, "/v1/ws/events?module=tictactoe").await;
        if code == 101 {
            break;
        }
        assert_eq!(code, 503);
        assert!(
            closed.elapsed() < Duration::from_secs(5),
            "subscribers were still refused {:?} after the burst closed",
            closed.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let freed_after = closed.elapsed();
    let deadline = Instant::now() + Duration::from_secs(10);
    while client.status().await.unwrap().ws_subscribers > 1 {
        assert!(
            Instant::now() < deadline,
            "the closed subscriptions are still counted"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    eprintln!(
        "{SLOTS} replaying subscriptions closed at once: a new one got in after {:.0} ms; node \
         RSS {:.0} MB before, {:.0} MB with the burst, {:.0} MB after",
        freed_after.as_secs_f64() * 1000.0,
        rss_before as f64 / 1e6,
        rss_peak as f64 / 1e6,
        rss(pid) as f64 / 1e6
    );
}
