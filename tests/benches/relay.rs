//! Benchmark: a signed channel move from one player's client to the other's through the node's
//! move relay (`GET /v1/relay/<game>`), on loopback, in one run.
//!
//! A node starts in-process (the embedded defaults, no rate limit); `RELAY_GAMES` channel games
//! (default 16) are opened between fresh key pairs; each game's two players connect to the
//! relay, and each sends `RELAY_RATE` signed moves a second (default 10, under the relay's 20 per
//! connection) for `RELAY_SECS` seconds (default 15). Every move the other side receives is timed
//! from just before its sender wrote it to just after the receiver decoded it (the same process,
//! the monotonic clock), so the figure includes the node's signature check (key recovery on a
//! blocking thread), JSON, both WebSocket frames and the loopback.
//!
//! Run: `cargo bench -p gamechain-tests --bench relay`. Prints the count, p50, p90, p99 and the
//! maximum, and whether p99 meets the goal of 20 ms. Uses the channel and rules modules of the
//! embedded genesis when present, else deploys them built from this source.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gamechain_client::relay::{RelayEvent, RelayMove, RelaySeat};
use gamechain_client::Client;
use gamechain_node::cli::local_node::LocalNode;
use gamechain_runtime::chain::{sign_message, Action, Network, SecretKey};
use serde_json::json;

/// p99 goal of the issue, ms.
const GOAL_P99_MS: f64 = 20.0;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

const WAIT: Duration = Duration::from_secs(60);

async fn ok(client: &Client, key: &SecretKey, action: Action) {
    let r = client.send_and_wait(key, action, WAIT).await.unwrap();
    assert!(r.receipt.ok, "{:?}", r.receipt);
}

/// Opens a tic-tac-toe channel game between two new keys; returns its id and the keys.
async fn open_game(client: &Client, offer: u64) -> (String, SecretKey, SecretKey) {
    let (a, b) = (
        SecretKey::generate(Network::Testnet),
        SecretKey::generate(Network::Testnet),
    );
    let faucet = || Action::Faucet {
        token: "GOLD".into(),
    };
    ok(client, &a, faucet()).await;
    ok(client, &b, faucet()).await;
    let ch = |op: serde_json::Value| Action::game("channel", &op);
    ok(
        client,
        &a,
        ch(json!({"kind": "offer", "rules": "ttt_rules", "stake": "100", "window_ms": 300_000})),
    )
    .await;
    let id = format!("{offer:016x}");
    ok(client, &b, ch(json!({"kind": "join", "offer": id}))).await;
    (id, a, b)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn main() {
    let games = env("RELAY_GAMES", 16) as usize;
    let rate = env("RELAY_RATE", 10).max(1);
    let secs = env("RELAY_SECS", 15);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let config = gamechain_node::NodeConfig {
            log: "warn".into(),
            ..LocalNode::config()
        };
        let node = LocalNode::start_with(config).await.unwrap();
        let client = node.client();
        let deployer = SecretKey::generate(Network::Testnet);
        ok(&client, &deployer, Action::Faucet { token: "GOLD".into() }).await;
        for (id, package) in [("channel", "channel"), ("ttt_rules", "tictactoe_rules")] {
            if client.module(id).await.is_ok() {
                continue;
            }
            let wasm = gamechain_tests::guest(package).wasm;
            let txid = client.deploy(&deployer, id, &wasm).await.unwrap();
            let r = client.wait_for_receipt(&txid, WAIT).await.unwrap();
            assert!(r.receipt.ok, "deploy {id}: {:?}", r.receipt);
        }
        let chain = client.view("channel", &[]).await.unwrap()["chain"]
            .as_str()
            .unwrap()
            .to_string();
        // Offers are numbered from 0 on a fresh chain.
        let first_offer = 0u64;
        let mut opened = Vec::new();
        for g in 0..games {
            opened.push(open_game(&client, first_offer + g as u64).await);
        }
        // Send instants by (game, seat, n); latencies in ms.
        let sent: Arc<Mutex<HashMap<(String, u8, u64), Instant>>> = Arc::default();
        let latencies: Arc<Mutex<Vec<f64>>> = Arc::default();
        let until = Instant::now() + Duration::from_secs(secs);
        let mut tasks = Vec::new();
        for (id, a, b) in opened {
            let domain = channel::Domain {
                chain: chain.clone(),
                module: "channel".into(),
            };
            // Each player's connection is its seat's, opened with a hello its key signs.
            let seat = |seat: u8, key: &SecretKey| RelaySeat {
                chain: chain.clone(),
                seat,
                key: key.clone(),
            };
            let relays = [
                client.relay(&id, &seat(0, &a)).await.unwrap(),
                client.relay(&id, &seat(1, &b)).await.unwrap(),
            ];
            for (seat, (mut relay, key)) in relays.into_iter().zip([a.clone(), b.clone()]).enumerate() {
                let (id, domain, sent, latencies) =
                    (id.clone(), domain.clone(), sent.clone(), latencies.clone());
                tasks.push(tokio::spawn(async move {
                    let prev = "00".repeat(32);
                    let period = Duration::from_micros(1_000_000 / rate);
                    let mut next_send = Instant::now() + period;
                    let mut n = 0u64;
                    loop {
                        let now = Instant::now();
                        if now >= until + Duration::from_secs(1) {
                            return;
                        }
                        if now >= next_send && now < until {
                            let data = n.to_le_bytes();
                            let text = domain.move_message(&id, n, &prev, &key.address(), &data);
                            let mv = RelayMove {
                                n,
                                data: hex::encode(data),
                                sig: sign_message(&key, text),
                            };
                            sent.lock().unwrap().insert((id.clone(), seat as u8, n), Instant::now());
                            relay.send(&mv, &prev).await.unwrap();
                            n += 1;
                            next_send += period;
                            continue;
                        }
                        let wait = next_send.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
                        match relay.next_within(wait).await.unwrap() {
                            Some(RelayEvent::Move { game, seat, mv, .. }) => {
                                let at = Instant::now();
                                if let Some(t) = sent.lock().unwrap().remove(&(game, seat, mv.n)) {
                                    latencies.lock().unwrap().push((at - t).as_secs_f64() * 1e3);
                                }
                            }
                            Some(RelayEvent::Error { error, message }) => {
                                panic!("the relay refused a move: {error}: {message}")
                            }
                            _ => {}
                        }
                    }
                }));
            }
        }
        for t in tasks {
            t.await.unwrap();
        }
        let mut l = latencies.lock().unwrap().clone();
        l.sort_by(|a, b| a.total_cmp(b));
        let lost = sent.lock().unwrap().len();
        let p99 = percentile(&l, 0.99);
        println!(
            "relay: {games} games x 2 players, {rate} moves/s each for {secs} s on loopback: {} moves received ({lost} not received)",
            l.len()
        );
        println!(
            "send -> other player's receipt: p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms (goal p99 <= {GOAL_P99_MS} ms: {})",
            percentile(&l, 0.5),
            percentile(&l, 0.9),
            p99,
            l.last().copied().unwrap_or(f64::NAN),
            if p99 <= GOAL_P99_MS { "met" } else { "NOT met" }
        );
        node.stop().await.ok();
    });
}
