//! The second game, end to end: `modules/mnk` (written with the public kit only) is built to
//! `.wasm` with the reproducible recipe, installed on a running in-process node by a signed
//! `deploy` transaction (it is not in genesis), then played over HTTP to a win, a draw and a
//! resignation, each with a stake; balances, escrow, receipts, events and the views (`?id`,
//! `?log` with its hash chain, `?player`, `?open`) are checked after every game.

use gamechain_client::client::Client;
use gamechain_node::cli::local_node::LocalNode;
use gamechain_runtime::chain::{Action, Network, SecretKey};
use gamechain_sdk::GOLD;
use gamechain_tests::send_included as send;
use serde_json::{json, Value};

/// What one faucet call pays on a default chain.
const FAUCET: u128 = 100_000;

/// Sends the mnk op `op` and returns the receipt's events as `(kind, data)`; panics unless it
/// succeeded.
async fn play(client: &Client, key: &SecretKey, op: Value) -> Vec<(String, Value)> {
    let included = send(client, key, Action::game("mnk", &op)).await;
    assert!(
        included.receipt.ok,
        "{op}: {:?}",
        included.receipt.error.as_deref()
    );
    included
        .receipt
        .events
        .into_iter()
        .map(|e| (e.kind, e.data))
        .collect()
}

/// Sends the mnk op `op` expecting a failed receipt; returns its error text.
async fn refused(client: &Client, key: &SecretKey, op: Value) -> String {
    let included = send(client, key, Action::game("mnk", &op)).await;
    assert!(!included.receipt.ok, "{op} must fail");
    assert!(included.receipt.events.is_empty());
    included
        .receipt
        .error
        .expect("a failed receipt has an error")
}

/// Creates a game as `key` and returns its id.
async fn create(
    client: &Client,
    key: &SecretKey,
    (rows, cols, k): (u32, u32, u32),
    stake: &str,
) -> String {
    let op = json!({ "kind": "create", "rows": rows, "cols": cols, "k": k, "stake": stake });
    let events = play(client, key, op).await;
    assert_eq!(events[0].0, "mnk.created");
    events[0].1["id"].as_str().expect("an id").to_string()
}

/// Plays `moves` of game `id` alternately, `x` first; returns the last move's events.
async fn moves(
    client: &Client,
    (x, o): (&SecretKey, &SecretKey),
    id: &str,
    moves: &[(u32, u32)],
) -> Vec<(String, Value)> {
    let mut last = Vec::new();
    for (n, &(row, col)) in moves.iter().enumerate() {
        let key = if n % 2 == 0 { x } else { o };
        let op = json!({ "kind": "move", "id": id, "row": row, "col": col });
        last = play(client, key, op).await;
    }
    last
}

/// GOLD of `account`, base units.
async fn gold(client: &Client, account: &str) -> u128 {
    client
        .account(account)
        .await
        .expect("the account")
        .balance(GOLD)
        .0
}

/// `(alice, bob, escrow)` GOLD.
async fn balances(client: &Client, alice: &SecretKey, bob: &SecretKey) -> (u128, u128, u128) {
    (
        gold(client, &alice.address()).await,
        gold(client, &bob.address()).await,
        gold(client, "module:mnk").await,
    )
}

async fn view(client: &Client, query: &[(&str, &str)]) -> Value {
    client.view("mnk", query).await.expect("the mnk view")
}

/// Checks game `id`'s log through `?log=`: seq order, `prevHash` chaining with the reference's (`docs/mnk.md`)
/// canonical-JSON SHA-256, the head equal to the game's `log_head`; returns the records.
async fn checked_log(client: &Client, id: &str) -> Vec<Value> {
    let log = view(client, &[("log", id)]).await;
    let game = view(client, &[("id", id)]).await;
    let mut prev = String::new();
    let mut records = Vec::new();
    for (seq, entry) in log["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .enumerate()
    {
        let record = &entry["event"];
        assert_eq!((&record["game"], &record["seq"]), (&json!(id), &json!(seq)));
        assert_eq!(record["prevHash"], json!(prev));
        prev = mnk::record_hash(record);
        assert_eq!(entry["hash"], json!(prev));
        records.push(record.clone());
    }
    assert_eq!(log["head"], json!(prev));
    assert_eq!(game["log_head"], json!(prev));
    assert_eq!(game["log_len"], json!(records.len()));
    records
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mnk_is_deployed_by_a_transaction_then_won_drawn_and_resigned() {
    let built = gamechain_tests::guest("mnk");
    // A chain whose genesis holds tic-tac-toe only (the default genesis holds mnk too).
    let config = gamechain_node::NodeConfig {
        genesis_modules: vec!["tictactoe".into()],
        ..LocalNode::config()
    };
    let node = LocalNode::start_with(config)
        .await
        .expect("the in-process node starts");
    let client = node.client();

    // Not at genesis.
    let err = client.view("mnk", &[]).await.unwrap_err();
    assert_eq!(err.code(), Some("not_found"), "{err}");
    let alice = SecretKey::generate(Network::Testnet);
    let bob = SecretKey::generate(Network::Testnet);
    let op = json!({ "kind": "create", "rows": 3, "cols": 3, "k": 3 });
    let error = refused(&client, &alice, op).await;
    assert_eq!(error, "not found: module mnk");

    // The deploy transaction.
    let deployer = SecretKey::generate(Network::Testnet);
    let deploy = Action::deploy("mnk", built.wasm.clone());
    let included = send(&client, &deployer, deploy).await;
    assert!(included.receipt.ok, "{:?}", included.receipt.error);
    let events = &included.receipt.events;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].kind, "deploy");
    assert_eq!(
        events[0].data,
        json!({
            "code_hash": built.sha256, "module": "mnk", "owner": deployer.address(),
            "upgrade": false,
        })
    );
    let record = client.module("mnk").await.expect("GET /v1/modules/mnk");
    assert_eq!(
        (record.code_hash.as_str(), record.owner.as_str()),
        (built.sha256.as_str(), deployer.address().as_str())
    );
    assert_eq!(record.deployed_height, included.height);
    let code = client
        .code(&built.sha256)
        .await
        .expect("GET /v1/code/<hash>");
    assert!(code == built.wasm, "the chain serves the deployed bytes");
    assert_eq!(
        view(&client, &[]).await,
        json!({ "game": "mnk", "timeout_blocks": 150, "max_stake": "100000", "max_side": 19 })
    );

    for key in [&alice, &bob] {
        let faucet = Action::Faucet {
            token: "GOLD".into(),
        };
        assert!(send(&client, key, faucet).await.receipt.ok);
    }
    assert_eq!(balances(&client, &alice, &bob).await, (FAUCET, FAUCET, 0));
    let players = (&alice, &bob);

    // 1. A win: 7 rows × 6 columns, four in a row, 5.00 GOLD each. Alice takes column 0.
    let won = create(&client, &alice, (7, 6, 4), "500").await;
    let open = view(&client, &[("open", "1")]).await;
    assert_eq!(open["games"][0]["id"], json!(won));
    play(&client, &bob, json!({ "kind": "join", "id": won })).await;
    assert_eq!(
        balances(&client, &alice, &bob).await,
        (FAUCET - 500, FAUCET - 500, 1_000)
    );
    moves(
        &client,
        players,
        &won,
        &[(0, 0), (0, 1), (1, 0), (1, 1), (2, 0)],
    )
    .await;
    let taken = json!({ "kind": "move", "id": won, "row": 0, "col": 0 });
    assert_eq!(
        refused(&client, &bob, taken).await,
        "invalid: cell is taken"
    );
    let off_board = json!({ "kind": "move", "id": won, "row": 7, "col": 0 });
    assert_eq!(
        refused(&client, &bob, off_board).await,
        "invalid: `row` must be a number from 0 to 6"
    );
    let last = moves(&client, (&bob, &alice), &won, &[(2, 1), (3, 0)]).await;
    let kinds: Vec<&str> = last.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(kinds, ["mnk.moved", "mnk.finished"]);
    assert_eq!(
        last[1].1,
        json!({
            "id": won, "result": "x_won", "winner": alice.address(), "reason": "line",
            "payout": "1000",
        })
    );
    let game = view(&client, &[("id", &won)]).await;
    assert_eq!(
        (
            &game["status"],
            &game["moves"],
            &game["board"].as_str().unwrap()[..13]
        ),
        (&json!("finished"), &json!(7), "xo....xo....x")
    );
    assert_eq!(
        balances(&client, &alice, &bob).await,
        (FAUCET + 500, FAUCET - 500, 0)
    );
    let log = checked_log(&client, &won).await;
    assert_eq!(log.len(), 8, "start + 7 moves");
    assert_eq!(
        log[0]["rules"],
        json!({ "rows": 7, "cols": 6, "winLength": 4 })
    );
    assert_eq!(
        (&log[7]["player"], &log[7]["status"]),
        (&json!("X"), &json!("win"))
    );

    // 2. A draw: 2 × 3, three in a row (x o x / o x o), 2.50 GOLD each, both refunded.
    let drawn = create(&client, &bob, (2, 3, 3), "250").await;
    play(&client, &alice, json!({ "kind": "join", "id": drawn })).await;
    let last = moves(
        &client,
        (&bob, &alice),
        &drawn,
        &[(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)],
    )
    .await;
    assert_eq!(
        last[1].1,
        json!({ "id": drawn, "result": "draw", "winner": null, "reason": "draw", "payout": "250" })
    );
    assert_eq!(view(&client, &[("id", &drawn)]).await["board"], "xoxoxo");
    assert_eq!(
        balances(&client, &alice, &bob).await,
        (FAUCET + 500, FAUCET - 500, 0)
    );
    assert_eq!(checked_log(&client, &drawn).await[6]["status"], "draw");

    // 3. A resignation on a 19 × 19 board, five in a row, 10.00 GOLD each: Bob resigns.
    let resigned = create(&client, &alice, (19, 19, 5), "1000").await;
    play(&client, &bob, json!({ "kind": "join", "id": resigned })).await;
    moves(&client, players, &resigned, &[(9, 9), (9, 10), (10, 10)]).await;
    let events = play(&client, &bob, json!({ "kind": "resign", "id": resigned })).await;
    let kinds: Vec<&str> = events.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(kinds, ["mnk.resigned", "mnk.finished"]);
    assert_eq!(
        events[1].1,
        json!({
            "id": resigned, "result": "x_won", "winner": alice.address(), "reason": "resign",
            "payout": "2000",
        })
    );
    let log = checked_log(&client, &resigned).await;
    assert_eq!(
        (&log[4]["action"], &log[4]["player"], &log[4]["status"]),
        (&json!("resign"), &json!("O"), &json!("win"))
    );
    assert_eq!(events[0].1["hash"], json!(mnk::record_hash(&log[4])));
    assert_eq!(
        balances(&client, &alice, &bob).await,
        (FAUCET + 1_500, FAUCET - 1_500, 0)
    );

    // The lists: three finished games for each player, nothing open.
    for key in [&alice, &bob] {
        let listed = view(&client, &[("player", &key.address())]).await;
        let ids: Vec<&str> = listed["games"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["id"].as_str().unwrap())
            .collect();
        let mut expected = vec![won.as_str(), drawn.as_str(), resigned.as_str()];
        let mut sorted = ids.clone();
        sorted.sort();
        expected.sort();
        assert_eq!(sorted, expected);
        assert!(listed["games"]
            .as_array()
            .unwrap()
            .iter()
            .all(|g| g["status"] == "finished"));
    }
    assert_eq!(
        view(&client, &[("open", "1")]).await,
        json!({ "games": [] })
    );

    node.stop().await.expect("the node stops cleanly");
}
