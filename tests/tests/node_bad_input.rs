//! Bad input over real HTTP against an in-process node: each bad request gets the code and the
//! status `node/API.md` documents, changes nothing (height, head, state root, the sender's
//! nonces and balance, the mempool), and the node keeps serving afterwards.
//!
//! The node makes a block only when a transaction arrives (its empty-block interval is an
//! hour here), so an unchanged height and state root really mean nothing was accepted.

use std::time::Duration;

use gamechain_client::client::{Account, Client, ClientError, Status};
use gamechain_node::cli::local_node::LocalNode;
use gamechain_runtime::chain::{sign_message, Action, Network, SecretKey, SignedTx, TxBody};
use gamechain_sdk::Amount;
use serde_json::json;

const WAIT: Duration = Duration::from_secs(30);

/// What a refused request must leave as it was.
#[derive(Debug, PartialEq)]
struct Snapshot {
    height: u64,
    head_hash: String,
    state_root: String,
    pending: u64,
    sender: Account,
}

async fn snapshot(client: &Client, sender: &str) -> Snapshot {
    let Status {
        height,
        head_hash,
        state_root,
        pending,
        ..
    } = client.status().await.unwrap();
    Snapshot {
        height,
        head_hash,
        state_root,
        pending,
        sender: client.account(sender).await.unwrap(),
    }
}

/// Asserts `result` is the API error `code` with HTTP `status`.
fn assert_refused<T: std::fmt::Debug>(
    what: &str,
    result: Result<T, ClientError>,
    code: &str,
    status: u16,
) {
    match result {
        Err(ClientError::Api {
            status: s,
            code: c,
            message,
        }) => {
            assert_eq!((c.as_str(), s), (code, status), "{what}: {message}");
            assert!(!message.is_empty(), "{what}: empty message");
        }
        other => panic!("{what}: expected {status} {code}, got {other:?}"),
    }
}

/// Asserts `result` is an API error whose message is exactly `message`.
fn assert_message<T: std::fmt::Debug>(result: &Result<T, ClientError>, message: &str) {
    match result {
        Err(ClientError::Api { message: m, .. }) => assert_eq!(m, message),
        other => panic!("expected an API error saying {message:?}, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_their_code_and_change_nothing() {
    let config = gamechain_node::NodeConfig {
        block_interval_ms: 3_600_000,
        ..LocalNode::config()
    };
    let node = LocalNode::start_with(config)
        .await
        .expect("the in-process node starts");
    let client = node.client();
    let chain_id = client.chain_id().await.unwrap();
    let key = SecretKey::generate(Network::Testnet);
    let other = SecretKey::generate(Network::Testnet);
    let faucet = client
        .send_and_wait(
            &key,
            Action::Faucet {
                token: "GOLD".into(),
            },
            WAIT,
        )
        .await
        .unwrap();
    assert!(faucet.receipt.ok, "{:?}", faucet.receipt);
    let included_faucet = client.tx(&faucet.txid).await.unwrap();
    let body = |nonce: u64, action: Action| TxBody {
        chain_id: chain_id.clone(),
        from: key.address(),
        nonce,
        action,
    };
    let transfer = |amount: u128| Action::Transfer {
        to: other.address(),
        token: "GOLD".into(),
        amount: Amount(amount),
    };

    let before = snapshot(&client, &key.address()).await;
    assert_eq!(
        (
            before.sender.nonce,
            before.sender.next_nonce,
            before.pending
        ),
        (1, 1, 0)
    );
    assert_eq!(before.sender.balance("GOLD"), Amount(100_000));

    // A signature by another key.
    let forged = body(1, transfer(5)).sign(&key);
    let forged = SignedTx::new(
        forged.body().to_string(),
        sign_message(&other, forged.body()),
    );
    assert_refused(
        "bad signature",
        client.post_tx(&forged).await,
        "bad_signature",
        401,
    );
    let garbage = SignedTx::new(
        body(1, transfer(5)).sign(&key).body().to_string(),
        "AAAA".into(),
    );
    assert_refused(
        "garbage signature",
        client.post_tx(&garbage).await,
        "bad_signature",
        401,
    );

    // Another chain's id, correctly signed.
    let foreign = TxBody {
        chain_id: format!("{chain_id}-other"),
        ..body(1, transfer(5))
    };
    assert_refused(
        "wrong chain",
        client.post_tx(&foreign.sign(&key)).await,
        "wrong_chain",
        400,
    );

    // A mainnet sender on this testnet chain.
    let mainnet = SecretKey::generate(Network::Mainnet);
    let wrong_network = TxBody {
        from: mainnet.address(),
        ..body(1, transfer(5))
    };
    assert_refused(
        "mainnet sender",
        client.post_tx(&wrong_network.sign(&mainnet)).await,
        "bad_address",
        400,
    );

    // Replays: the included faucet transaction byte for byte, and a new body at the used nonce.
    let replay = included_faucet.tx.clone();
    assert_refused(
        "replayed transaction",
        client.post_tx(&replay).await,
        "duplicate",
        409,
    );
    assert_refused(
        "replayed nonce",
        client.post_tx(&body(0, transfer(5)).sign(&key)).await,
        "bad_nonce",
        409,
    );

    // A nonce from the future; the message names the expected one.
    let future = client.post_tx(&body(6, transfer(5)).sign(&key)).await;
    match &future {
        Err(ClientError::Api { message, .. }) => {
            assert!(message.contains("expected 1"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    assert_refused("future nonce", future, "bad_nonce", 409);

    // Malformed JSON: the request, and a well-formed request whose body is not a body.
    for (what, bytes) in [
        ("not JSON", b"{\"body\": ".to_vec()),
        ("empty", Vec::new()),
        (
            "unknown field",
            serde_json::to_vec(&json!({"body": "{}", "signature": "x", "txid": "y"})).unwrap(),
        ),
        ("a JSON array", b"[1, 2]".to_vec()),
    ] {
        assert_refused(what, client.post_tx_bytes(bytes).await, "bad_json", 400);
    }
    let text = format!(
        r#"{{"chain_id":"{chain_id}","from":"{}","nonce":"one","action":{{"type":"faucet","token":"GOLD"}}}}"#,
        key.address()
    );
    let signature = sign_message(&key, &text);
    let bad_body = SignedTx::new(text, signature);
    assert_refused(
        "a body of the wrong shape",
        client.post_tx(&bad_body).await,
        "bad_json",
        400,
    );

    // Over the request limit of POST /v1/tx (room for a deploy's 1.5 MiB body).
    let mut huge = serde_json::to_vec(&body(1, transfer(5)).sign(&key)).unwrap();
    huge.extend(std::iter::repeat_n(
        b' ',
        gamechain_node::server::api::MAX_TX_REQUEST_BYTES,
    ));
    let oversize = client.post_tx_bytes(huge).await;
    assert_message(
        &oversize,
        &format!(
            "the request body is more than {} bytes (the limit for POST /v1/tx)",
            gamechain_node::server::api::MAX_TX_REQUEST_BYTES
        ),
    );
    assert_refused("oversize request", oversize, "too_large", 413);
    // A deploy whose code is one byte over MAX_CODE_BYTES (its body is under the body limit):
    // too_large too, in our words, without serde's line and column.
    let code_over = body(
        1,
        Action::Deploy {
            module: "big".into(),
            code: vec![0; gamechain_runtime::chain::MAX_CODE_BYTES + 1],
        },
    )
    .sign(&key);
    let code_over = client.post_tx(&code_over).await;
    assert_message(
        &code_over,
        "a deploy's code is 1048577 bytes, the limit is 1048576 (MAX_CODE_BYTES)",
    );
    assert_refused("oversize code", code_over, "too_large", 413);

    // Unknown transactions, blocks and paths.
    assert_refused(
        "unknown txid",
        client.tx(&"0f".repeat(32)).await,
        "not_found",
        404,
    );
    assert_refused("not a txid", client.tx("nope").await, "not_found", 404);
    assert_refused(
        "block above the head",
        client
            .block(gamechain_client::client::BlockRef::Height(
                before.height + 100,
            ))
            .await,
        "not_found",
        404,
    );
    assert_refused(
        "bad account",
        client.account("not-an-address").await,
        "bad_address",
        400,
    );

    assert_eq!(
        snapshot(&client, &key.address()).await,
        before,
        "a refused request changed something"
    );

    // The node still serves: a good transaction at the expected nonce goes through.
    let sent = client
        .send_and_wait(&key, transfer(250), WAIT)
        .await
        .unwrap();
    assert!(sent.receipt.ok, "{:?}", sent.receipt);
    let after = snapshot(&client, &key.address()).await;
    assert_eq!((after.height, after.sender.nonce), (before.height + 1, 2));
    assert_eq!(after.sender.balance("GOLD"), Amount(100_000 - 250));
    assert_eq!(
        client
            .account(&other.address())
            .await
            .unwrap()
            .balance("GOLD"),
        Amount(250)
    );
    node.stop().await.expect("the node stops cleanly");
}
