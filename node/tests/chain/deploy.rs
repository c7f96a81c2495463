//! Module deploys through an in-process node: a deploy over the 64 KiB body limit is admitted,
//! the module is live at once (transactions, views, its escrow account), `GET /v1/modules`,
//! `/v1/modules/<id>`, `/v1/modules/<id>/schema` and `/v1/code/<hash>` show what runs, the operator's deploy policy refuses
//! other senders with `403 deploy_forbidden`, and after a restart the deployed module is served
//! from the compiled-module cache without recompiling.

use std::net::SocketAddr;
use std::time::Duration;

use gamechain_client::client::{Client, ClientError};
use gamechain_ledger::genesis_setup::{tictactoe_code_hash, TICTACTOE_WASM};
use gamechain_node::config::DeployPolicy;
use gamechain_node::server::node::NodeHandle;
use gamechain_node::NodeConfig;
use gamechain_runtime::chain::{Action, Network, SecretKey, UpgradePolicy, MAX_BODY_BYTES};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(60);

fn config(dir: &std::path::Path) -> NodeConfig {
    NodeConfig {
        data_dir: dir.to_path_buf(),
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        block_interval_ms: 3_600_000,
        rate_limit_per_sec: 0,
        min_block_interval_ms: 5,
        // Tic-tac-toe alone at genesis: these tests count modules and compiles.
        genesis_modules: vec!["tictactoe".into()],
        ..NodeConfig::default()
    }
}

fn api_code(e: ClientError) -> (u16, String) {
    match e {
        ClientError::Api { status, code, .. } => (status, code),
        other => panic!("not an API error: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployed_module_is_live_listed_served_and_cached_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let node = NodeHandle::start(config(dir.path())).await.unwrap();
    let client = Client::new(&node.url()).unwrap();
    let alice = SecretKey::generate(Network::Testnet);
    let bob = SecretKey::generate(Network::Testnet);
    let hash = tictactoe_code_hash();
    assert!(
        TICTACTOE_WASM.len() * 4 / 3 > MAX_BODY_BYTES,
        "the deploy body is over the ordinary limit"
    );

    let txid = client.deploy(&alice, "ttt2", TICTACTOE_WASM).await.unwrap();
    let included = client.wait_for_receipt(&txid, WAIT).await.unwrap();
    assert!(included.receipt.ok, "{:?}", included.receipt);
    assert_eq!(included.receipt.events[0].kind, "deploy");
    assert_eq!(
        included.receipt.events[0].data,
        json!({"code_hash": hash, "module": "ttt2", "owner": alice.address(), "upgrade": false})
    );

    // Listed, in id order, with the genesis module.
    let modules = client.modules().await.unwrap();
    let ids: Vec<&str> = modules.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["tictactoe", "ttt2"]);
    let ttt2 = client.module("ttt2").await.unwrap();
    assert_eq!(ttt2, modules[1]);
    assert_eq!(
        (
            ttt2.code_hash.as_str(),
            ttt2.owner.as_str(),
            ttt2.deployed_height
        ),
        (hash.as_str(), alice.address().as_str(), included.height)
    );
    assert_eq!(ttt2.upgraded_height, None);
    assert_eq!(
        ttt2.policy,
        UpgradePolicy::Owner,
        "a deploy without a policy"
    );
    assert_eq!(modules[0].owner, "system");
    assert_eq!(modules[0].policy, UpgradePolicy::Immutable, "genesis");
    assert_eq!(
        api_code(client.module("nope").await.unwrap_err()),
        (404, "not_found".into())
    );
    assert_eq!(
        api_code(client.module("Bad-Id").await.unwrap_err()),
        (404, "not_found".into())
    );

    // The code itself, once for both ids.
    assert_eq!(client.code(&hash).await.unwrap(), TICTACTOE_WASM);
    assert_eq!(
        client.code(&hash.to_uppercase()).await.unwrap(),
        TICTACTOE_WASM
    );
    let response = reqwest::get(client.url(&["v1", "code", &hash]))
        .await
        .unwrap();
    assert_eq!(response.headers()["content-type"], "application/wasm");
    assert_eq!(
        api_code(client.code("zz").await.unwrap_err()),
        (400, "invalid".into())
    );
    assert_eq!(
        api_code(client.code(&"0".repeat(64)).await.unwrap_err()),
        (404, "not_found".into())
    );
    // Its schema, the code's `gamechain.schema` section byte for byte (docs/modules.md).
    let schema = client.module_schema("ttt2").await.unwrap();
    assert_eq!(
        Some(schema.clone()),
        gamechain_runtime::read_schema(TICTACTOE_WASM).unwrap()
    );
    assert!(
        schema.starts_with(r#"{"schema_version":1,"module":"tictactoe","ops":[{"kind":"create""#)
    );
    let response = reqwest::get(client.url(&["v1", "modules", "ttt2", "schema"]))
        .await
        .unwrap();
    assert_eq!(response.headers()["content-type"], "application/json");
    assert_eq!(
        api_code(client.module_schema("nope").await.unwrap_err()),
        (404, "not_found".into())
    );

    // Live: a game, a view and the escrow account of the new id.
    client
        .send_and_wait(
            &bob,
            Action::Faucet {
                token: "GOLD".into(),
            },
            WAIT,
        )
        .await
        .unwrap();
    let create = client
        .send_and_wait(
            &bob,
            Action::game("ttt2", &json!({"kind": "create", "stake": "100"})),
            WAIT,
        )
        .await
        .unwrap();
    assert!(create.receipt.ok, "{:?}", create.receipt);
    let game_id = create.txid[..16].to_string();
    // (tictactoe's views read `m/tictactoe/…` by name, so only its transactions follow the id.)
    let escrow = client.account("module:ttt2").await.unwrap();
    assert_eq!(escrow.balance("GOLD").0, 100);
    let genesis_escrow = client.account("module:tictactoe").await.unwrap();
    assert_eq!(genesis_escrow.balance("GOLD").0, 0, "state is per id");

    // An upgrade by a non-owner (of valid code: invalid code is refused at admission too) is
    // refused at admission: `403 upgrade_refused` with the receipt's text, no nonce used, nothing
    // compiled. The code: tic-tac-toe plus an empty custom section `xyz`.
    let mut other_code = TICTACTOE_WASM.to_vec();
    other_code.extend_from_slice(&[0, 4, 3, b'x', b'y', b'z']);
    let bob_nonce = client.account(&bob.address()).await.unwrap().next_nonce;
    let refused = client.deploy(&bob, "ttt2", &other_code).await.unwrap_err();
    match refused {
        ClientError::Api {
            status,
            code,
            message,
            ..
        } => assert_eq!(
            (status, code.as_str(), message),
            (
                403,
                "upgrade_refused",
                format!("only the owner {} may upgrade module ttt2", alice.address())
            )
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        client.account(&bob.address()).await.unwrap().next_nonce,
        bob_nonce
    );

    let before = node.chain().ctx.modules().cache().unwrap().stats();
    assert_eq!(
        before.stored, 2,
        "genesis tic-tac-toe (Cranelift) and ttt2 (the same code uploaded: Winch) are two \
         compiled entries; bob's refused upgrade was never compiled"
    );
    node.shutdown().await.unwrap();

    // Restart: the same data directory; both modules come from the cache, none is compiled.
    let node = NodeHandle::start(config(dir.path())).await.unwrap();
    node.ready().await;
    let modules = node.chain().ctx.modules();
    let stats = modules.cache().unwrap().stats();
    assert_eq!(
        (stats.hits, stats.misses, stats.rejected, stats.stored),
        (2, 0, 0, 0),
        "{stats:?}"
    );
    let entry = modules.get("ttt2", &hash).expect("preloaded at start");
    assert!(entry.module.code_source().is_cached());
    let client = Client::new(&node.url()).unwrap();
    let carol = SecretKey::generate(Network::Testnet);
    client
        .send_and_wait(
            &carol,
            Action::Faucet {
                token: "GOLD".into(),
            },
            WAIT,
        )
        .await
        .unwrap();
    let join = client
        .send_and_wait(
            &carol,
            Action::game("ttt2", &json!({"kind": "join", "id": game_id})),
            WAIT,
        )
        .await
        .unwrap();
    assert!(
        join.receipt.ok,
        "the game survived the restart: {:?}",
        join.receipt
    );
    node.shutdown().await.unwrap();

    // A corrupt cache entry is detected, deleted and rebuilt: the node starts and runs.
    let compiled = dir.path().join("compiled");
    for entry in std::fs::read_dir(&compiled).unwrap() {
        let path = entry.unwrap().path();
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        std::fs::write(&path, bytes).unwrap();
    }
    let node = NodeHandle::start(config(dir.path())).await.unwrap();
    node.ready().await;
    let stats = node.chain().ctx.modules().cache().unwrap().stats();
    assert_eq!(
        (stats.rejected, stats.stored, stats.hits),
        (2, 2, 0),
        "rebuilt for tictactoe (Cranelift) and for ttt2 (Winch): {stats:?}"
    );
    let client = Client::new(&node.url()).unwrap();
    let r#move = client
        .send_and_wait(
            &bob,
            Action::game("ttt2", &json!({"kind": "move", "id": game_id, "cell": 4})),
            WAIT,
        )
        .await
        .unwrap();
    assert!(r#move.receipt.ok, "{:?}", r#move.receipt);
    node.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deploy_policy_refuses_unlisted_senders() {
    let dir = tempfile::tempdir().unwrap();
    let alice = SecretKey::generate(Network::Testnet);
    let bob = SecretKey::generate(Network::Testnet);
    let node = NodeHandle::start(NodeConfig {
        deploy: DeployPolicy::Allowlist,
        deploy_allow: vec![alice.address()],
        ..config(dir.path())
    })
    .await
    .unwrap();
    let client = Client::new(&node.url()).unwrap();
    let err = client
        .deploy(&bob, "bobs", TICTACTOE_WASM)
        .await
        .unwrap_err();
    assert_eq!(api_code(err), (403, "deploy_forbidden".into()));
    assert_eq!(
        client.account(&bob.address()).await.unwrap().next_nonce,
        0,
        "nothing was admitted"
    );
    // Bob's other transactions are admitted as usual.
    client
        .send_and_wait(
            &bob,
            Action::Faucet {
                token: "GOLD".into(),
            },
            WAIT,
        )
        .await
        .unwrap();
    let ok = client
        .wait_for_receipt(
            &client
                .deploy(&alice, "alices", TICTACTOE_WASM)
                .await
                .unwrap(),
            WAIT,
        )
        .await
        .unwrap();
    assert!(ok.receipt.ok, "{:?}", ok.receipt);
    node.shutdown().await.unwrap();

    // Nobody: the same refusal for everyone.
    let dir = tempfile::tempdir().unwrap();
    let node = NodeHandle::start(NodeConfig {
        deploy: DeployPolicy::Nobody,
        ..config(dir.path())
    })
    .await
    .unwrap();
    let client = Client::new(&node.url()).unwrap();
    let err = client
        .deploy(&alice, "alices", TICTACTOE_WASM)
        .await
        .unwrap_err();
    assert_eq!(api_code(err), (403, "deploy_forbidden".into()));
    node.shutdown().await.unwrap();
}
