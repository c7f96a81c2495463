//! A WebSocket subscriber that stops reading cannot hold the node's memory: once one block
//! message has waited `ws_send_timeout_ms` to be sent, the node drops it (counted in
//! `/metrics`), while a subscriber that reads gets every block in order.

use std::time::{Duration, Instant};

use gamechain_ledger::genesis_setup::TICTACTOE_WASM;
use gamechain_node::cli::local_node::LocalNode;
use gamechain_runtime::chain::{Action, Network, SecretKey};
use tokio::io::AsyncReadExt;

use crate::common::silent_subscriber;

const WAIT: Duration = Duration::from_secs(60);

/// The tic-tac-toe guest plus a custom section named `p` of bytes varying with `i`: a valid
/// module of 1,000,000 bytes.
fn padded_module(i: u8) -> Vec<u8> {
    let mut code = TICTACTOE_WASM.to_vec();
    let payload = 1_000_000 - code.len() - 6;
    let mut section = vec![1u8, b'p'];
    section.extend((0..payload as u32 - 2).map(|n| (n as u8) ^ i));
    code.push(0);
    let mut len = section.len();
    loop {
        let byte = (len & 0x7f) as u8;
        len >>= 7;
        if len == 0 {
            code.push(byte);
            break;
        }
        code.push(byte | 0x80);
    }
    code.extend(section);
    code
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_that_stops_reading_is_dropped_and_a_reader_misses_nothing() {
    let config = gamechain_node::NodeConfig {
        ws_send_timeout_ms: 500,
        ..LocalNode::config()
    };
    let node = LocalNode::start_with(config)
        .await
        .expect("the node starts");
    let client = node.client();
    let mut reader = client.subscribe_blocks().await.unwrap();
    // The reader reads all along, on its own task.
    let (heights_tx, mut heights_rx) = tokio::sync::mpsc::unbounded_channel();
    let reading = tokio::spawn(async move {
        while let Ok(Some(block)) = reader.next().await {
            if heights_tx.send(block.height()).is_err() {
                break;
            }
        }
    });
    let mut silent = silent_subscriber(node.addr()).await;

    // Blocks of about 1.4 MB each (a deploy carries its code: tic-tac-toe padded with a custom
    // section to 1 MB): a few fill the kernel's buffers towards the silent client.
    let key = SecretKey::generate(Network::Testnet);
    let mut heights = Vec::new();
    for i in 0..8u8 {
        let code = padded_module(i);
        let action = Action::deploy(format!("junk{i}"), code);
        let included = client.send_and_wait(&key, action, WAIT).await.unwrap();
        heights.push(included.height);
    }

    // The reader saw every block up to the last deploy's, in order, none twice.
    let last = *heights.last().unwrap();
    let mut seen = Vec::new();
    while seen.last().is_none_or(|h| *h < last) {
        let height = tokio::time::timeout(WAIT, heights_rx.recv())
            .await
            .expect("a block in time")
            .expect("the reader is still subscribed");
        seen.push(height);
    }
    assert!(seen.windows(2).all(|w| w[1] == w[0] + 1), "{seen:?}");
    for h in &heights {
        assert!(seen.contains(h), "block {h} missing from {seen:?}");
    }

    // The silent client was dropped: draining its socket now ends (EOF or reset) in time.
    let started = Instant::now();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match tokio::time::timeout(WAIT, silent.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => break,
            Ok(Ok(_)) => {}
            Err(_) => panic!("the silent subscriber is still connected after {WAIT:?}"),
        }
        assert!(started.elapsed() < WAIT, "still reading after {WAIT:?}");
    }
    let metrics = reqwest::get(format!("{}/metrics", node.url().trim_end_matches('/')))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics
            .lines()
            .any(|l| l == "gamechain_ws_stalled_drops_total 1"),
        "{metrics}"
    );
    reading.abort();
    node.stop().await.unwrap();
}
