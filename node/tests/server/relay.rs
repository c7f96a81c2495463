//! The move relay (`GET /v1/relay/<game>`, `node/src/server/relay/`) against a real
//! `gamechain node` process: a channel game's two players exchange signed moves through it; the
//! node forwards only moves signed by a seat's game key for that game, tells who is connected,
//! and holds every bound (frame size, rate, connections per game, unknown games). Nothing it
//! relays reaches the chain.

#[path = "../common/mod.rs"]
mod common;

use std::time::Duration;

use common::NodeProcess;
use gamechain_channel_protocol::Domain;
use gamechain_client::client::Client;
use gamechain_client::relay::{Relay, RelayEvent, RelayMove};
use gamechain_runtime::chain::{sign_message, Action, Network, SecretKey};
use gamechain_sdk::guest_build::build_guest;
use serde_json::json;

const WAIT: Duration = Duration::from_secs(30);

/// A node with the channel modules and an open tic-tac-toe game between `alice` (seat 0) and
/// `bob` (seat 1).
struct Game {
    node: NodeProcess,
    id: String,
    alice: SecretKey,
    bob: SecretKey,
    domain: Domain,
    _dir: tempfile::TempDir,
}

async fn send_ok(client: &Client, key: &SecretKey, action: Action) -> String {
    let r = client.send_and_wait(key, action, WAIT).await.unwrap();
    assert!(r.receipt.ok, "{:?}", r.receipt);
    r.txid
}

impl Game {
    async fn open() -> Game {
        let dir = tempfile::tempdir().unwrap();
        let mut node = NodeProcess::new(dir.path(), "");
        node.start().await;
        let client = node.client();
        let (alice, bob) = (
            SecretKey::generate(Network::Testnet),
            SecretKey::generate(Network::Testnet),
        );
        let faucet = || Action::Faucet {
            token: "GOLD".into(),
        };
        send_ok(&client, &alice, faucet()).await;
        send_ok(&client, &bob, faucet()).await;
        for (id, package) in [("channel", "channel"), ("ttt_rules", "tictactoe_rules")] {
            if client.module(id).await.is_ok() {
                continue;
            }
            let wasm = tokio::task::spawn_blocking(move || build_guest(package).unwrap().wasm)
                .await
                .unwrap();
            let txid = client.deploy(&alice, id, &wasm).await.unwrap();
            let r = client.wait_for_receipt(&txid, WAIT).await.unwrap();
            assert!(r.receipt.ok, "deploy {id}: {:?}", r.receipt);
        }
        let ch = |op: serde_json::Value| Action::game("channel", &op);
        send_ok(
            &client,
            &alice,
            ch(json!({"kind": "offer", "rules": "ttt_rules", "stake": "100", "window_ms": 300_000})),
        )
        .await;
        let domain_view = client.view("channel", &[]).await.unwrap();
        let chain = domain_view["chain"].as_str().unwrap().to_string();
        // The first offer of a fresh channel.
        let id = "0000000000000000".to_string();
        send_ok(&client, &bob, ch(json!({"kind": "join", "offer": id}))).await;
        Game {
            node,
            id,
            alice,
            bob,
            domain: Domain {
                chain,
                module: "channel".into(),
            },
            _dir: dir,
        }
    }

    /// Move `n` with `data`, after a state hashing to `prev`, signed by `key` as `mover`.
    fn signed(
        &self,
        key: &SecretKey,
        mover: &SecretKey,
        n: u64,
        prev: &str,
        data: &[u8],
    ) -> RelayMove {
        let text = self
            .domain
            .move_message(&self.id, n, prev, &mover.address(), data);
        RelayMove {
            n,
            data: hex::encode(data),
            sig: sign_message(key, text),
        }
    }

    async fn connect(&self) -> Relay {
        let mut r = self.node.client().relay(&self.id).await.unwrap();
        // Every connection is told how many others there are as it joins.
        assert!(matches!(
            r.next_within(WAIT).await.unwrap(),
            Some(RelayEvent::Peers { .. })
        ));
        r
    }
}

/// The next event that is not a peer count.
async fn next_event(r: &mut Relay) -> RelayEvent {
    loop {
        match r.next_within(WAIT).await.unwrap() {
            Some(RelayEvent::Peers { .. }) => continue,
            Some(e) => return e,
            None => panic!("nothing from the relay in {WAIT:?}: {:?}", r.close_reason()),
        }
    }
}

#[tokio::test]
async fn moves_signed_by_a_seat_reach_the_other_player_and_nothing_else_does() {
    let g = Game::open().await;
    let height = g.node.client().status().await.unwrap().height;
    let mut a = g.connect().await;
    let mut b = g.connect().await;
    // Alice is told Bob joined.
    assert_eq!(
        a.next_within(WAIT).await.unwrap(),
        Some(RelayEvent::Peers { count: 1 })
    );
    let prev = "11".repeat(32);
    let m0 = g.signed(&g.alice, &g.alice, 0, &prev, &[4]);
    a.send(&m0, &prev).await.unwrap();
    assert_eq!(
        next_event(&mut a).await,
        RelayEvent::Relayed {
            n: 0,
            seat: 0,
            to: 1
        }
    );
    assert_eq!(
        next_event(&mut b).await,
        RelayEvent::Move {
            game: g.id.clone(),
            seat: 0,
            mv: m0.clone(),
            prev: prev.clone()
        }
    );
    // Bob answers; seat 1 is found from his key.
    let m1 = g.signed(&g.bob, &g.bob, 1, &"22".repeat(32), &[0]);
    b.send(&m1, &"22".repeat(32)).await.unwrap();
    assert!(matches!(
        next_event(&mut b).await,
        RelayEvent::Relayed { seat: 1, to: 1, .. }
    ));
    assert!(matches!(
        next_event(&mut a).await,
        RelayEvent::Move { seat: 1, .. }
    ));

    // Refused, and never forwarded: a key that is not a seat's, Alice's key signing as Bob, a
    // signature over another `prev` or another game, malformed frames.
    let stranger = SecretKey::generate(Network::Testnet);
    let refusals = [
        (g.signed(&stranger, &g.alice, 2, &prev, &[1]), prev.clone()),
        (g.signed(&g.alice, &g.bob, 2, &prev, &[1]), prev.clone()),
        (
            g.signed(&g.alice, &g.alice, 2, &prev, &[1]),
            "33".repeat(32),
        ),
    ];
    for (mv, sent_prev) in &refusals {
        a.send(mv, sent_prev).await.unwrap();
        match next_event(&mut a).await {
            RelayEvent::Error { error, .. } => assert_eq!(error, "bad_signature"),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }
    let other_game = Domain {
        chain: g.domain.chain.clone(),
        module: "channel".into(),
    }
    .move_message("0000000000000009", 2, &prev, &g.alice.address(), &[1]);
    let forged = RelayMove {
        n: 2,
        data: "01".into(),
        sig: sign_message(&g.alice, other_game),
    };
    a.send(&forged, &prev).await.unwrap();
    assert!(
        matches!(next_event(&mut a).await, RelayEvent::Error { error, .. } if error == "bad_signature")
    );
    for raw in [
        "{",
        r#"{"move":{"n":1},"prev":"x"}"#,
        r#"{"move":{"n":1,"data":"zz","sig":"a"},"prev":"00"}"#,
    ] {
        a.send_raw(raw).await.unwrap();
        assert!(
            matches!(next_event(&mut a).await, RelayEvent::Error { error, .. } if error == "bad_json")
        );
    }
    // Bob got none of them.
    assert_eq!(
        b.next_within(Duration::from_millis(300)).await.unwrap(),
        None
    );
    // Nothing reached the chain.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let client = g.node.client();
    assert_eq!(client.status().await.unwrap().height, height);
    // Alone in the game: a move goes to nobody, which the sender is told.
    drop(b);
    assert_eq!(
        a.next_within(WAIT).await.unwrap(),
        Some(RelayEvent::Peers { count: 0 })
    );
    let m2 = g.signed(&g.alice, &g.alice, 2, &prev, &[8]);
    a.send(&m2, &prev).await.unwrap();
    assert_eq!(
        next_event(&mut a).await,
        RelayEvent::Relayed {
            n: 2,
            seat: 0,
            to: 0
        }
    );
}

#[tokio::test]
async fn the_relay_holds_its_bounds() {
    let g = Game::open().await;
    let client = g.node.client();
    // Unknown and malformed games.
    let err = client.relay("00000000000000ff").await.err().unwrap();
    assert_eq!(err.code(), Some("not_found"), "{err}");
    let err = client.relay("nothex").await.err().unwrap();
    assert_eq!(err.code(), Some("invalid"), "{err}");
    // At most 8 connections per game.
    let mut open = Vec::new();
    for _ in 0..8 {
        open.push(g.connect().await);
    }
    let err = client.relay(&g.id).await.err().unwrap();
    assert_eq!(err.code(), Some("relay_full"), "{err}");
    drop(open);
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Rate: the connection's burst of 40 frames, then `rate_limited`.
    let mut a = g.connect().await;
    let prev = "44".repeat(32);
    let mv = g.signed(&g.alice, &g.alice, 0, &prev, &[4]);
    let mut limited = 0;
    for _ in 0..60 {
        a.send(&mv, &prev).await.unwrap();
    }
    for _ in 0..60 {
        if let RelayEvent::Error { error, .. } = next_event(&mut a).await {
            assert_eq!(error, "rate_limited");
            limited += 1;
        }
    }
    assert!(
        limited >= 15,
        "only {limited} of 60 frames sent at once were refused"
    );
    // A frame over 4,096 bytes closes the connection.
    a.send_raw(&"x".repeat(5000)).await.ok();
    let mut closed = false;
    for _ in 0..5 {
        match a.next_within(Duration::from_secs(5)).await {
            Ok(None) | Err(_) => {
                closed = true;
                break;
            }
            Ok(Some(_)) => {}
        }
    }
    assert!(closed, "an oversized frame did not close the connection");
}
