//! The connection and subscriber caps, on an in-process node: a connection over
//! `max_connections` gets `503 too_many_connections` (JSON) and is closed, and is counted back
//! when one closes; an upgrade over `max_ws_subscribers`, or over `max_ws_per_ip` from one
//! address, gets `503 too_many_subscribers`; both
//! counts are in `/v1/status`.

use std::time::{Duration, Instant};

use gamechain_node::cli::local_node::LocalNode;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Reads what the node sends on `stream` until it closes (at most 10 s).
async fn read_to_close(stream: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

/// The JSON body of an HTTP answer.
fn body(answer: &str) -> Value {
    serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap_or("")).unwrap_or(Value::Null)
}

async fn get_status(url: &str) -> Value {
    reqwest::get(format!("{url}/v1/status"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_and_subscribers_are_capped_and_counted() {
    let config = gamechain_node::NodeConfig {
        max_connections: 4,
        max_ws_subscribers: 1,
        ..LocalNode::config()
    };
    let node = LocalNode::start_with(config)
        .await
        .expect("the node starts");
    let url = node.url().trim_end_matches('/').to_string();
    let client = node.client();

    // One subscriber: the second upgrade is refused.
    let first = client.subscribe_blocks().await.unwrap();
    let mut second = TcpStream::connect(node.addr()).await.unwrap();
    second
        .write_all(
            format!(
                "GET /v1/ws HTTP/1.1\r\nHost: {}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
                 Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
                 Connection: close\r\n\r\n",
                node.addr()
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let answer = read_to_close(&mut second).await;
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert_eq!(
        body(&answer)["error"]["code"],
        "too_many_subscribers",
        "{answer}"
    );
    drop(second);

    // The subscriber's connection and up to the cap: the next one is refused with JSON.
    let mut held = Vec::new();
    let mut refused = None;
    for _ in 0..8 {
        let mut s = TcpStream::connect(node.addr()).await.unwrap();
        // Closed by the node at once, or kept open (a request may follow).
        let mut buf = vec![0u8; 4096];
        match tokio::time::timeout(Duration::from_millis(300), s.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => {
                refused = Some(String::from_utf8_lossy(&buf[..n]).into_owned());
                break;
            }
            _ => held.push(s),
        }
    }
    let answer = refused.expect("a connection over max_connections is refused");
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert_eq!(
        body(&answer)["error"]["code"],
        "too_many_connections",
        "{answer}"
    );
    assert_eq!(
        held.len(),
        3,
        "the subscriber's connection and three more fit in 4"
    );

    // Closing connections makes room again; the status counts what is open.
    drop(held);
    let started = Instant::now();
    let status = loop {
        // Until the closed connections are counted back, the status request itself may be one
        // too many (`503 too_many_connections`, a JSON body too): only a 200 is the status.
        if let Ok(answer) = reqwest::get(format!("{url}/v1/status")).await {
            if answer.status().is_success() {
                if let Ok(v) = answer.json::<Value>().await {
                    break v;
                }
            }
        }
        assert!(started.elapsed() < Duration::from_secs(10), "no room made");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(status["ws_subscribers"], 1, "{status}");
    let connections = status["connections"].as_u64().unwrap();
    assert!((2..=4).contains(&connections), "{status}");
    drop(first);
    let started = Instant::now();
    while get_status(&url).await["ws_subscribers"] != 0 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the subscriber is still counted"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    node.stop().await.unwrap();
}

/// Sends a WebSocket upgrade of `path` on a new connection and returns the answer's head and
/// the connection (open when the upgrade was accepted).
async fn upgrade(addr: std::net::SocketAddr, path: &str) -> (String, TcpStream) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(
        format!(
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(10), s.read(&mut buf))
        .await
        .expect("an answer")
        .unwrap();
    (String::from_utf8_lossy(&buf[..n]).into_owned(), s)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_client_ip_holds_at_most_max_ws_per_ip_subscriptions() {
    let config = gamechain_node::NodeConfig {
        max_ws_subscribers: 10,
        max_ws_per_ip: 2,
        ..LocalNode::config()
    };
    let node = LocalNode::start_with(config)
        .await
        .expect("the node starts");
    // Two from this address, on either feed; the third is refused though the node has room.
    let (a, first) = upgrade(node.addr(), "/v1/ws").await;
    assert!(a.starts_with("HTTP/1.1 101"), "{a}");
    let (b, _second) = upgrade(node.addr(), "/v1/ws/events?module=tictactoe").await;
    assert!(b.starts_with("HTTP/1.1 101"), "{b}");
    let (c, _) = upgrade(node.addr(), "/v1/ws").await;
    assert!(c.starts_with("HTTP/1.1 503"), "{c}");
    assert_eq!(body(&c)["error"]["code"], "too_many_subscribers", "{c}");
    assert!(
        body(&c)["error"]["message"]
            .as_str()
            .unwrap()
            .contains("max_ws_per_ip"),
        "{c}"
    );
    // One closed: room again for this address (once the node has seen the close).
    drop(first);
    let started = Instant::now();
    loop {
        let (d, fourth) = upgrade(node.addr(), "/v1/ws/events?module=tictactoe").await;
        if d.starts_with("HTTP/1.1 101") {
            drop(fourth);
            break;
        }
        assert!(d.contains("max_ws_per_ip"), "{d}");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the slot is still held: {d}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    node.stop().await.unwrap();
}
