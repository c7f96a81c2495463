//! The move relay (`GET /v1/relay/<game>`, `node/src/server/relay/`) against a real
//! `gamechain node` process: a channel game's two players exchange signed moves through it; every
//! connection is one seat's, proved by a hello its game key signed, so a stranger holds no
//! connection at all; the node forwards only moves signed by the connection's seat's game key for
//! that game, to the other seat's connections only, tells each seat how many the other has, and
//! holds every bound (frame size, rate, connections per seat, unknown games). Nothing it relays
//! reaches the chain.

use std::time::Duration;

use crate::common::NodeProcess;
use gamechain_channel_protocol::Domain;
use gamechain_client::client::Client;
use gamechain_client::relay::{Relay, RelayEvent, RelayHello, RelayMove, RelaySeat};
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

    /// Seat `seat` of the game, as its game key (`alice` for 0, `bob` for 1).
    fn seat(&self, seat: u8) -> RelaySeat {
        RelaySeat {
            chain: self.domain.chain.clone(),
            seat,
            key: [&self.alice, &self.bob][seat as usize].clone(),
        }
    }

    /// A hello for `seat` signed by `key` at `time_ms`.
    fn hello(&self, key: &SecretKey, seat: u8, time_ms: u64) -> RelayHello {
        RelayHello::sign(key, &self.domain.chain, &self.id, seat, time_ms)
    }

    /// A relay connection of `seat`; returns it with the other seat's connections it was told
    /// of on joining.
    async fn connect_seat(&self, seat: u8) -> (Relay, u64) {
        let mut r = self
            .node
            .client()
            .relay(&self.id, &self.seat(seat))
            .await
            .unwrap();
        // Every connection is told how many the other seat has as it joins.
        match r.next_within(WAIT).await.unwrap() {
            Some(RelayEvent::Peers { count }) => (r, count),
            other => panic!("expected the peer count first, got {other:?}"),
        }
    }

    async fn connect(&self, seat: u8) -> Relay {
        self.connect_seat(seat).await.0
    }
}

/// Milliseconds since the Unix epoch now.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
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
    let mut a = g.connect(0).await;
    let mut b = g.connect(1).await;
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
    // Bob answers as seat 1.
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
    // signature over another `prev` or another game, Bob's own move sent on Alice's connection
    // (a connection relays its seat's moves only), malformed frames.
    let stranger = SecretKey::generate(Network::Testnet);
    let refusals = [
        (g.signed(&stranger, &g.alice, 2, &prev, &[1]), prev.clone()),
        (g.signed(&g.alice, &g.bob, 2, &prev, &[1]), prev.clone()),
        (
            g.signed(&g.alice, &g.alice, 2, &prev, &[1]),
            "33".repeat(32),
        ),
        (m1.clone(), "22".repeat(32)),
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
    // Issue 41: a second connection of Alice's own seat (her `watch`) is no peer of hers: it is
    // not counted, not told, and gets none of her moves.
    let (mut a2, peers) = g.connect_seat(0).await;
    assert_eq!(peers, 1, "Alice's second connection sees Bob's one");
    assert_eq!(
        a.next_within(Duration::from_millis(300)).await.unwrap(),
        None,
        "Alice's own connection is not announced to her"
    );
    // Bob leaves: the opponent is gone, whatever Alice holds; a move goes to nobody, which the
    // sender is told (and so posts it to the board).
    drop(b);
    assert_eq!(
        a.next_within(WAIT).await.unwrap(),
        Some(RelayEvent::Peers { count: 0 })
    );
    assert_eq!(
        a2.next_within(WAIT).await.unwrap(),
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
    assert_eq!(
        a2.next_within(Duration::from_millis(300)).await.unwrap(),
        None
    );
}

#[tokio::test]
async fn the_relay_holds_its_bounds() {
    let g = Game::open().await;
    let client = g.node.client();
    // Unknown and malformed games.
    let err = client
        .relay("00000000000000ff", &g.seat(0))
        .await
        .err()
        .unwrap();
    assert_eq!(err.code(), Some("not_found"), "{err}");
    let err = client.relay("nothex", &g.seat(0)).await.err().unwrap();
    assert_eq!(err.code(), Some("invalid"), "{err}");
    // Rate: the connection's burst of 40 frames, then `rate_limited`.
    let mut a = g.connect(0).await;
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

/// Issue 45: a stranger used to hold all 8 connections of a game, locking its players out. Now a
/// connection needs a hello signed by a seat's game key: without one, with another key, for the
/// other seat, out of the node's clock window, or used once already, the upgrade is refused with
/// a fixed error and holds nothing, and the players still get in however often a stranger tries.
#[tokio::test]
async fn a_stranger_holds_no_relay_connection_and_the_players_always_get_in() {
    let g = Game::open().await;
    let client = g.node.client();
    let stranger = SecretKey::generate(Network::Testnet);
    let refused = |e: gamechain_client::ClientError| match e {
        gamechain_client::ClientError::Api { status, code, .. } => (Some(status), Some(code)),
        other => panic!("expected an API error, got {other}"),
    };
    for _ in 0..10 {
        let err = client.relay_with(&g.id, None).await.err().unwrap();
        assert_eq!(refused(err), (Some(401), Some("hello_required".into())));
        for seat in [0, 1] {
            let hello = g.hello(&stranger, seat, now_ms());
            let err = client.relay_with(&g.id, Some(&hello)).await.err().unwrap();
            assert_eq!(refused(err), (Some(403), Some("bad_hello".into())));
        }
    }
    // A player's key for the other seat, a hello two minutes old or ahead, another game's.
    let bad = [
        g.hello(&g.alice, 1, now_ms()),
        g.hello(&g.alice, 0, now_ms() - 120_000),
        g.hello(&g.alice, 0, now_ms() + 120_000),
        RelayHello::sign(&g.alice, &g.domain.chain, "0000000000000009", 0, now_ms()),
    ];
    for hello in &bad {
        let err = client.relay_with(&g.id, Some(hello)).await.err().unwrap();
        assert_eq!(
            refused(err),
            (Some(403), Some("bad_hello".into())),
            "{hello:?}"
        );
    }
    // A hello is good once: seen (in a log, say) and sent again, it is refused.
    let hello = g.hello(&g.alice, 0, now_ms());
    let mut a = client.relay_with(&g.id, Some(&hello)).await.unwrap();
    let err = client.relay_with(&g.id, Some(&hello)).await.err().unwrap();
    assert_eq!(refused(err), (Some(403), Some("bad_hello".into())));
    // Both players are in, each seeing the other only.
    assert_eq!(
        a.next_within(WAIT).await.unwrap(),
        Some(RelayEvent::Peers { count: 0 })
    );
    let (_b, peers) = g.connect_seat(1).await;
    assert_eq!(peers, 1);
    assert_eq!(
        a.next_within(WAIT).await.unwrap(),
        Some(RelayEvent::Peers { count: 1 })
    );
}

/// A seat holds at most 4 connections: its fifth closes its oldest (close code 4002), never one
/// of the other seat's, so a player's newest client always gets in.
#[tokio::test]
async fn a_seats_connections_past_four_replace_its_oldest_never_the_other_seats() {
    let g = Game::open().await;
    let mut b = g.connect(1).await;
    let mut alice = Vec::new();
    for _ in 0..4 {
        alice.push(g.connect(0).await);
    }
    for count in 1..=4 {
        assert_eq!(
            b.next_within(WAIT).await.unwrap(),
            Some(RelayEvent::Peers { count })
        );
    }
    let (mut newest, peers) = g.connect_seat(0).await;
    assert_eq!(peers, 1);
    // Alice's oldest is closed: replaced.
    let oldest = &mut alice[0];
    assert_eq!(oldest.next_within(WAIT).await.unwrap(), None);
    assert_eq!(oldest.close_reason().map(|(c, _)| c), Some(4002));
    // Bob's connection stays, still sees four of Alice's, and his move reaches exactly those.
    let prev = "55".repeat(32);
    let m = g.signed(&g.bob, &g.bob, 1, &prev, &[0]);
    b.send(&m, &prev).await.unwrap();
    assert_eq!(
        next_event(&mut b).await,
        RelayEvent::Relayed {
            n: 1,
            seat: 1,
            to: 4
        }
    );
    for r in alice[1..].iter_mut().chain([&mut newest]) {
        assert!(matches!(
            next_event(r).await,
            RelayEvent::Move { seat: 1, .. }
        ));
    }
    // Bob's own extra connections do not touch Alice's: his four, and a fifth replacing his
    // first.
    let mut more = Vec::new();
    for _ in 0..4 {
        more.push(g.connect(1).await);
    }
    assert_eq!(b.next_within(WAIT).await.unwrap(), None);
    assert_eq!(b.close_reason().map(|(c, _)| c), Some(4002));
    let m = g.signed(&g.alice, &g.alice, 0, &prev, &[4]);
    newest.send(&m, &prev).await.unwrap();
    assert!(matches!(
        next_event(&mut newest).await,
        RelayEvent::Relayed { to: 4, .. }
    ));
}
