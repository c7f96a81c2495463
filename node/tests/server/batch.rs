//! `POST /v1/txs` on the real binary: a batch is admitted in order (one sender's consecutive
//! nonces all pass), each transaction answered as `POST /v1/tx` would have (refusals carry
//! their code and status and do not stop the rest), every accepted one reaches a block; a batch
//! over 1,000 transactions is `413 too_large`, a malformed one `400 bad_json`; with a rate
//! limit a batch costs one token per transaction.

use std::time::Duration;

use crate::common::{faucet, NodeProcess};
use gamechain_client::client::ClientError;
use gamechain_runtime::chain::{Action, Network, SecretKey, SignedTx, TxBody};
use gamechain_sdk::Amount;

fn signed(key: &SecretKey, chain_id: &str, nonce: u64, action: Action) -> SignedTx {
    TxBody {
        chain_id: chain_id.into(),
        from: key.address(),
        nonce,
        action,
    }
    .sign(key)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_is_admitted_in_order_with_one_result_each() {
    let tmp = tempfile::tempdir().unwrap();
    let mut node = NodeProcess::new(tmp.path(), "block_interval_ms = 200");
    node.start().await;
    let client = node.client();
    let chain_id = client.chain_id().await.unwrap();
    let (a, b) = (
        SecretKey::generate(Network::Testnet),
        SecretKey::generate(Network::Testnet),
    );
    let pay = |to: &SecretKey| Action::Transfer {
        to: to.address(),
        token: "GOLD".into(),
        amount: Amount(7),
    };
    let mut forged = signed(&b, &chain_id, 1, pay(&a));
    forged = SignedTx::new(
        forged.body().to_string(),
        signed(&a, &chain_id, 1, pay(&b)).signature().to_string(),
    );
    let batch = vec![
        signed(&a, &chain_id, 0, faucet()),
        signed(&a, &chain_id, 1, pay(&b)),
        signed(&a, &chain_id, 5, pay(&b)), // a gap: bad_nonce
        signed(&b, &chain_id, 0, faucet()),
        forged,                             // b's body, a's signature
        signed(&a, &chain_id, 2, pay(&b)),  // still in order after the refusals
        signed(&a, &chain_id, 0, faucet()), // the first one again
    ];
    let results = client.post_txs(&batch).await.unwrap();
    let codes: Vec<Result<String, (u16, String)>> = results
        .into_iter()
        .map(|r| {
            r.map_err(|e| match e {
                ClientError::Api { status, code, .. } => (status, code),
                other => panic!("{other}"),
            })
        })
        .collect();
    assert_eq!(codes[0], Ok(batch[0].txid()));
    assert_eq!(codes[1], Ok(batch[1].txid()));
    assert_eq!(codes[2], Err((409, "bad_nonce".into())));
    assert_eq!(codes[3], Ok(batch[3].txid()));
    assert_eq!(codes[4], Err((401, "bad_signature".into())));
    assert_eq!(codes[5], Ok(batch[5].txid()));
    assert_eq!(codes[6], Err((409, "duplicate".into())));
    for i in [0, 1, 3, 5] {
        let included = client
            .wait_for_receipt(&batch[i].txid(), Duration::from_secs(30))
            .await
            .unwrap();
        assert!(included.receipt.ok, "{i}: {:?}", included.receipt);
    }
    assert_eq!(
        client.account(&b.address()).await.unwrap().balances["GOLD"].0,
        100_014
    );

    // An empty batch has no results; over 1,000 is too large; not the shape is bad_json.
    assert!(client.post_txs(&[]).await.unwrap().is_empty());
    let many = vec![batch[0].clone(); 1001];
    match client.post_txs(&many).await {
        Err(ClientError::Api {
            status: 413,
            code,
            message,
        }) => {
            assert_eq!(code, "too_large");
            assert!(
                message.contains("1001") && message.contains("1000"),
                "{message}"
            );
        }
        other => panic!("expected 413, got {other:?}"),
    }
    let http = reqwest::Client::new();
    let answer = http
        .post(format!("{}/v1/txs", node.url()))
        .header("content-type", "application/json")
        .body(r#"{"txs": 5}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status().as_u16(), 400);
    let body: serde_json::Value = answer.json().await.unwrap();
    assert_eq!(body["error"]["code"], "bad_json");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_rate_limit_a_batch_costs_a_token_per_transaction() {
    let tmp = tempfile::tempdir().unwrap();
    let mut node = NodeProcess::new(tmp.path(), "rate_limit_per_sec = 5\nrate_limit_burst = 20");
    node.start().await;
    let client = node.client();
    let chain_id = client.chain_id().await.unwrap();
    let keys: Vec<SecretKey> = (0..21)
        .map(|_| SecretKey::generate(Network::Testnet))
        .collect();
    let txs: Vec<SignedTx> = keys
        .iter()
        .map(|k| signed(k, &chain_id, 0, faucet()))
        .collect();
    // A full bucket (20 tokens at 5 a second) takes a batch of 20, and then nothing more.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let results = client.post_txs(&txs[..20]).await.unwrap();
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    match client.post_txs(&txs[20..]).await {
        Err(ClientError::Api {
            status: 429, code, ..
        }) => assert_eq!(code, "rate_limited"),
        other => panic!("expected 429, got {other:?}"),
    }
    // 21 > the burst of 20 never fits, whatever the bucket holds.
    tokio::time::sleep(Duration::from_secs(5)).await;
    match client.post_txs(&txs).await {
        Err(ClientError::Api {
            status: 413,
            message,
            ..
        }) => {
            assert!(message.contains("rate_limit_burst"), "{message}")
        }
        other => panic!("expected 413, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_must_be_the_documented_objects() {
    let tmp = tempfile::tempdir().unwrap();
    let mut node = NodeProcess::new(tmp.path(), "");
    node.start().await;
    let http = reqwest::Client::new();
    // serde alone would read these as a batch (arrays in place of objects).
    for body in [
        "[[]]",
        r#"{"txs": [["b", "s"]]}"#,
        r#"[[["b", "s"]]]"#,
        r#"{"txs": [1]}"#,
        "{}",
    ] {
        let answer = http
            .post(format!("{}/v1/txs", node.url()))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status().as_u16(), 400, "{body}");
        let error: serde_json::Value = answer.json().await.unwrap();
        assert_eq!(error["error"]["code"], "bad_json", "{body}");
    }
}
