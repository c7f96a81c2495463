//! 2,000 WebSocket subscribers that never read cannot grow the node: a `gamechain node` child
//! process (so the resident memory measured is the node's alone) holds 2,000 `/v1/ws`
//! subscriptions whose clients never read (4 KiB receive buffers), while signed transactions
//! of ~60 KB each fill at least 100 blocks and 100 MB of block messages. Its resident memory
//! (`VmRSS` of `/proc/<pid>/status`, sampled every 50 ms) must stay under [`RSS_BOUND`]: the
//! node never copies a block message per subscriber (16 KiB fragments of one shared buffer)
//! and closes a subscriber more than `ws_buffer_bytes` behind. One subscriber that reads
//! receives every block, in order, none missing. `/v1/status` counts the subscribers and
//! connections, and `/metrics` the closes.
//!
//! The test raises its soft file-descriptor limit to the hard one (the node inherits it) and
//! uses fewer silent clients, saying so, when the hard limit is too low for 2,000.

#[path = "../common/mod.rs"]
mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::NodeProcess;
use futures_util::StreamExt;
use gamechain_client::client::Client;
use gamechain_runtime::chain::{Action, Network, SecretKey};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Silent subscribers wanted.
const SILENT: usize = 2000;
/// The node's resident memory may not exceed this while they are connected: its own baseline
/// (~60–90 MB in a debug build) plus, per subscriber, one 16 KiB fragment, a 4 KiB read buffer
/// and its task and socket state, plus the feed's shared blocks (`ws_buffer_bytes`, 16 MiB).
const RSS_BOUND: u64 = 400 << 20;
/// Blocks and bytes of block messages to push past the subscribers.
const BLOCKS: u64 = 100;
const BYTES: u64 = 100 << 20;
/// Concurrent transaction senders (each its own key).
const SENDERS: usize = 16;

/// `VmRSS` of process `pid`, bytes.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|k| k.parse::<u64>().ok())
        .map_or(0, |k| k * 1024)
}

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

/// A `/v1/ws` upgrade on a socket with a 4 KiB receive buffer, returned once the `101` head is
/// read; never read again.
async fn silent_subscriber(addr: std::net::SocketAddr) -> tokio::net::TcpStream {
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
    let started = Instant::now();
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
    let (mut blocks, mut bytes, mut last) = (0u64, 0u64, None::<u64>);
    let deadline = Instant::now() + Duration::from_secs(100);
    while blocks < BLOCKS || bytes < BYTES {
        assert!(
            Instant::now() < deadline,
            "only {blocks} blocks, {bytes} bytes in time"
        );
        peak = peak.max(rss(pid));
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
         subscribers closed, {} still subscribed; the reader saw every block; {:.1} s",
        rss_connected as f64 / 1e6,
        peak as f64 / 1e6,
        RSS_BOUND >> 20,
        bytes as f64 / blocks as f64 / 1e6,
        bytes as f64 / 1e6,
        status.ws_subscribers,
        started.elapsed().as_secs_f64()
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
