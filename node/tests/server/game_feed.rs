//! `GET /v1/ws/events` against a `gamechain node` process: two tic-tac-toe games and an m,n,k
//! game are played over HTTP; a subscription to one game replayed from height 1 gets exactly
//! that game's events in order (created, joined, each move, finished), each with its sender and
//! txid, and a `head` line; resumed from one past a height it gets only what came after; the
//! whole module's subscription gets both games; a player's gets exactly the events that player
//! sent or is named in; another module's subscription none of these; a live subscription gets a
//! new game as it is included; the Rust client's `subscribe_game`, dropped and resumed from its
//! `next_height` three times, gets the game's events once each; bad queries are `400 invalid`.

use std::time::Duration;

use crate::common::NodeProcess;
use futures_util::StreamExt;
use gamechain_client::client::Client;
use gamechain_client::{GameEvent, GameFeedItem, GameQuery};
use gamechain_runtime::chain::{Action, Network, SecretKey};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

const WAIT: Duration = Duration::from_secs(30);

async fn op(client: &Client, key: &SecretKey, game: &str, op: Value) -> Value {
    let included = client
        .send_and_wait(
            key,
            Action::Game {
                game: game.into(),
                op: serde_json::value::to_raw_value(&op).unwrap(),
            },
            WAIT,
        )
        .await
        .unwrap();
    assert!(included.receipt.ok, "{op}: {:?}", included.receipt.error);
    json!({"height": included.height, "events": included.receipt.events})
}

/// A tic-tac-toe game between `x` and `o` to x's win on the top row; the game id and the
/// heights of its transactions.
async fn game(client: &Client, x: &SecretKey, o: &SecretKey) -> (String, Vec<u64>) {
    let created = op(
        client,
        x,
        "tictactoe",
        json!({"kind": "create", "stake": "3"}),
    )
    .await;
    let id = created["events"][0]["data"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut heights = vec![created["height"].as_u64().unwrap()];
    let joined = op(client, o, "tictactoe", json!({"kind": "join", "id": id})).await;
    heights.push(joined["height"].as_u64().unwrap());
    for (i, cell) in [0, 3, 1, 4, 2].into_iter().enumerate() {
        let who = if i % 2 == 0 { x } else { o };
        let moved = op(
            client,
            who,
            "tictactoe",
            json!({"kind": "move", "id": id, "cell": cell}),
        )
        .await;
        heights.push(moved["height"].as_u64().unwrap());
    }
    (id, heights)
}

/// Reads messages of `/v1/ws/events?<query>` until a `head` line at `until` or above; the
/// events in order (each with its block height) and the last head.
async fn collect(url: &str, query: &str, until: u64) -> (Vec<Value>, u64) {
    let ws_url = format!("{}/v1/ws/events?{query}", url.replace("http://", "ws://"));
    let (mut ws, _) = tokio_tungstenite::connect_async(ws_url.as_str())
        .await
        .unwrap_or_else(|e| panic!("{ws_url}: {e}"));
    let mut events = Vec::new();
    let mut last_complete = 0;
    loop {
        let message = tokio::time::timeout(WAIT, ws.next())
            .await
            .unwrap_or_else(|_| panic!("{query}: nothing for {WAIT:?} (head {last_complete})"))
            .unwrap()
            .unwrap();
        let Message::Text(text) = message else {
            continue;
        };
        let m: Value = serde_json::from_str(text.as_str()).unwrap();
        match m["type"].as_str().unwrap() {
            "events" => {
                let h = m["height"].as_u64().unwrap();
                assert!(h >= last_complete, "height {h} after {last_complete}");
                for e in m["events"].as_array().unwrap() {
                    let mut e = e.clone();
                    e["height"] = json!(h);
                    events.push(e);
                }
                if m["last"] == true {
                    last_complete = h;
                }
            }
            "head" => {
                let h = m["height"].as_u64().unwrap();
                assert!(h >= last_complete);
                last_complete = h;
                if h >= until {
                    return (events, h);
                }
            }
            other => panic!("unexpected message type {other}: {m}"),
        }
    }
}

fn kinds(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["kind"].as_str().unwrap()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn game_player_and_module_subscriptions_replay_resume_and_go_live() {
    let tmp = tempfile::tempdir().unwrap();
    let mut node = NodeProcess::new(tmp.path(), "block_interval_ms = 200\ndev_clock = true");
    node.start().await;
    let url = node.url();
    let client = node.client();
    let [alice, bob, carol] = [0; 3].map(|_| SecretKey::generate(Network::Testnet));
    for k in [&alice, &bob, &carol] {
        let r = client
            .send_and_wait(
                k,
                Action::Faucet {
                    token: "GOLD".into(),
                },
                WAIT,
            )
            .await
            .unwrap();
        assert!(r.receipt.ok);
    }

    // alice v bob, carol v alice, and an m,n,k game of bob's (another module).
    let (g1, h1) = game(&client, &alice, &bob).await;
    let (g2, _) = game(&client, &carol, &alice).await;
    op(
        &client,
        &bob,
        "mnk",
        json!({"kind": "create", "rows": 5, "cols": 5, "k": 4}),
    )
    .await;
    let head = client.status().await.unwrap().height;

    // One game, from height 1: exactly its events, in order, with senders.
    let (events, _) = collect(&url, &format!("module=tictactoe&game={g1}&from=1"), head).await;
    assert_eq!(
        kinds(&events),
        [
            "tictactoe.created",
            "tictactoe.joined",
            "tictactoe.moved",
            "tictactoe.moved",
            "tictactoe.moved",
            "tictactoe.moved",
            "tictactoe.moved",
            "tictactoe.finished"
        ]
    );
    assert!(events.iter().all(|e| e["data"]["id"] == g1.as_str()));
    let senders: Vec<&str> = events
        .iter()
        .map(|e| e["sender"].as_str().unwrap())
        .collect();
    let (a, b) = (alice.address(), bob.address());
    assert_eq!(senders, [&a, &b, &a, &b, &a, &b, &a, &a]);
    let heights: Vec<u64> = events
        .iter()
        .map(|e| e["height"].as_u64().unwrap())
        .collect();
    assert_eq!(
        heights[..7],
        h1[..],
        "each event at its transaction's height"
    );
    for e in &events {
        let record = client.tx(e["txid"].as_str().unwrap()).await.unwrap();
        assert_eq!(
            serde_json::to_value(&record).unwrap()["height"],
            e["height"]
        );
    }

    // Resumed from one past the join: only what came after, nothing twice.
    let (rest, _) = collect(
        &url,
        &format!("module=tictactoe&game={g1}&from={}", h1[1] + 1),
        head,
    )
    .await;
    assert_eq!(rest, events[2..], "resumed without gaps or repeats");

    // The whole module: both games, 16 events. A player: the events the address sent or that
    // name it in their data, from both games (bob is only in g1; his m,n,k game is another
    // module).
    let (all, _) = collect(&url, "module=tictactoe&from=1", head).await;
    assert_eq!(all.len(), 16);
    assert_eq!(
        all.iter()
            .filter(|e| e["data"]["id"] == g1.as_str())
            .cloned()
            .collect::<Vec<_>>(),
        events
    );
    let concerns = |e: &Value, p: &str| {
        e["sender"] == p
            || e["data"]
                .as_object()
                .unwrap()
                .values()
                .any(|v| v == p || v.as_array().is_some_and(|a| a.iter().any(|i| i == p)))
    };
    for (who, address) in [("bob", &b), ("alice", &a)] {
        let (got, _) = collect(
            &url,
            &format!("module=tictactoe&player={address}&from=1"),
            head,
        )
        .await;
        let expected: Vec<Value> = all
            .iter()
            .filter(|e| concerns(e, address))
            .cloned()
            .collect();
        assert!(!expected.is_empty());
        assert_eq!(got, expected, "{who}'s events");
        if who == "bob" {
            assert!(got.iter().all(|e| e["data"]["id"] == g1.as_str()));
        } else {
            assert!(got.iter().any(|e| e["data"]["id"] == g2.as_str()));
        }
    }
    let (mnk, _) = collect(&url, "module=mnk&from=1", head).await;
    assert_eq!(kinds(&mnk), ["mnk.created"]);

    // The Rust client: the same game's events, the subscription dropped after its second item
    // and resumed from `next_height`.
    let mut got: Vec<GameEvent> = Vec::new();
    let mut query = GameQuery::module("tictactoe").game(&g1).from(1);
    let mut reconnects = 0;
    'outer: loop {
        let mut sub = client.subscribe_game(&query).await.unwrap();
        let mut items = 0;
        while let Some(item) = tokio::time::timeout(WAIT, sub.next())
            .await
            .unwrap()
            .unwrap()
        {
            items += 1;
            match item {
                GameFeedItem::Events { events, .. } => got.extend(events),
                GameFeedItem::Head { height, .. } if height >= head => break 'outer,
                GameFeedItem::Head { .. } => {}
            }
            if items == 2 && reconnects < 3 {
                reconnects += 1;
                query = query.clone().from(sub.next_height().unwrap());
                continue 'outer;
            }
        }
        panic!("the feed closed: {:?}", sub.close_reason());
    }
    assert_eq!(reconnects, 3);
    let raw: Vec<Value> = events
        .iter()
        .map(|e| {
            let mut e = e.clone();
            e.as_object_mut().unwrap().remove("height");
            e
        })
        .collect();
    let through_client: Vec<Value> = got
        .iter()
        .map(|e| json!({"txid": e.txid, "tx_index": e.tx_index, "sender": e.sender, "index": e.index, "kind": e.kind, "data": e.data}))
        .collect();
    assert_eq!(
        through_client, raw,
        "the client, resumed three times, got each event once"
    );

    // Live: subscribed at the head, a new game's creation arrives as it is included.
    let live_url = format!(
        "{}/v1/ws/events?module=tictactoe&player={}",
        url.replace("http://", "ws://"),
        carol.address()
    );
    let (mut ws, _) = tokio_tungstenite::connect_async(live_url.as_str())
        .await
        .unwrap();
    let first: Value = match ws.next().await.unwrap().unwrap() {
        Message::Text(t) => serde_json::from_str(t.as_str()).unwrap(),
        other => panic!("{other:?}"),
    };
    assert_eq!(first["type"], "head", "{first}");
    let created = op(&client, &carol, "tictactoe", json!({"kind": "create"})).await;
    let got = loop {
        let m: Value = match tokio::time::timeout(WAIT, ws.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap()
        {
            Message::Text(t) => serde_json::from_str(t.as_str()).unwrap(),
            _ => continue,
        };
        if m["type"] == "events" {
            break m;
        }
    };
    assert_eq!(got["height"], created["height"]);
    assert_eq!(got["events"][0]["kind"], "tictactoe.created");
    assert_eq!(got["events"][0]["sender"], carol.address().as_str());

    // Bad queries.
    let http = reqwest::Client::new();
    for (query, says) in [
        ("", "needs `module=<id>`"),
        ("module=Bad", "module:"),
        ("module=tictactoe&game=a%20b", "game must be"),
        ("module=tictactoe&player=nobody", "player `nobody`"),
        ("module=tictactoe&from=99999999", "is above the next block"),
        ("module=tictactoe&from=x", "from must be a height"),
        ("module=tictactoe&since=1", "not `since`"),
    ] {
        let answer = http
            .get(format!("{url}/v1/ws/events?{query}"))
            .header("connection", "upgrade")
            .header("upgrade", "websocket")
            .header("sec-websocket-version", "13")
            .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 400, "{query}");
        let body: Value = answer.json().await.unwrap();
        assert_eq!(body["error"]["code"], "invalid", "{query}: {body}");
        assert!(
            body["error"]["message"].as_str().unwrap().contains(says),
            "{query}: {body}"
        );
    }
    node.kill();
}
