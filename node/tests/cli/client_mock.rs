//! The HTTP client (`gamechain_client::client`) against a tiny axum mock of `node/API.md`: what
//! `send` signs and posts, how `wait_for_receipt` polls and gives up, and how API errors and
//! non-API answers come back. The real node is exercised by `tests/tests/node_*.rs`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use gamechain_client::client::{Client, ClientError, TxStatus};
use gamechain_runtime::chain::{Action, Network, SecretKey, SignedTx};
use serde_json::{json, Value};

const CHAIN: &str = "mock-chain";
/// The `next_nonce` the mock reports for every account.
const NEXT_NONCE: u64 = 7;
/// Polls of `/v1/tx/<txid>` answered `pending` before the mock says `included`.
const PENDING_POLLS: u32 = 3;

#[derive(Default)]
struct Mock {
    /// txid → (body, signature, polls so far).
    txs: BTreeMap<String, (String, String, u32)>,
}

type Shared = Arc<Mutex<Mock>>;

fn api_error(status: StatusCode, code: &str, message: &str) -> Response {
    (
        status,
        Json(json!({"error": {"code": code, "message": message}})),
    )
        .into_response()
}

async fn status() -> Json<Value> {
    Json(json!({
        "chain_id": CHAIN, "network": "testnet", "height": 3, "head_hash": "00", "state_root": "00",
        "sequencer": "x", "genesis_hash": "00", "engine_config_hash": "00", "pending": 0, "version": "mock",
    }))
}

async fn account(Path(account): Path<String>) -> Json<Value> {
    Json(
        json!({"account": account, "balances": {"GOLD": "5"}, "nonce": NEXT_NONCE, "next_nonce": NEXT_NONCE}),
    )
}

async fn post_tx(State(mock): State<Shared>, body: String) -> Response {
    let Ok(tx) = serde_json::from_str::<SignedTx>(&body) else {
        return api_error(
            StatusCode::BAD_REQUEST,
            "bad_json",
            "not a signed transaction",
        );
    };
    let parsed = match tx.check(CHAIN, Network::Testnet) {
        Ok(parsed) => parsed,
        Err(e) => return api_error(StatusCode::BAD_REQUEST, e.code(), &e.to_string()),
    };
    if parsed.nonce != NEXT_NONCE {
        return api_error(
            StatusCode::CONFLICT,
            "bad_nonce",
            &format!("expected nonce {NEXT_NONCE}"),
        );
    }
    let txid = tx.txid();
    mock.lock().unwrap().txs.insert(
        txid.clone(),
        (tx.body().to_string(), tx.signature().to_string(), 0),
    );
    Json(json!({ "txid": txid })).into_response()
}

async fn get_tx(State(mock): State<Shared>, Path(txid): Path<String>) -> Response {
    let mut mock = mock.lock().unwrap();
    let Some((body, signature, polls)) = mock.txs.get_mut(&txid) else {
        return api_error(
            StatusCode::NOT_FOUND,
            "not_found",
            &format!("no transaction {txid}"),
        );
    };
    *polls += 1;
    let included = *polls > PENDING_POLLS;
    Json(json!({
        "txid": txid, "status": if included { "included" } else { "pending" }, "body": body, "signature": signature,
        "height": if included { json!(4) } else { json!(null) }, "index": if included { json!(0) } else { json!(null) },
        "receipt": if included { json!({"ok": true, "error": null, "events": [], "fuel_used": 12}) } else { json!(null) },
    }))
    .into_response()
}

/// Serves the mock on a free loopback port; returns its URL and the shared state.
async fn start_mock() -> (String, Shared) {
    let shared = Shared::default();
    let app = Router::new()
        .route("/v1/status", get(status))
        .route("/v1/account/{account}", get(account))
        .route("/v1/tx", post(post_tx))
        .route("/v1/tx/{txid}", get(get_tx))
        .route(
            "/v1/blocks/latest",
            get(|| async { (StatusCode::BAD_GATEWAY, "<html>proxy error</html>") }),
        )
        .with_state(shared.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), shared)
}

#[tokio::test]
async fn send_signs_the_next_nonce_and_wait_polls_until_included() {
    let (url, mock) = start_mock().await;
    let client = Client::new(&url).unwrap();
    let key = SecretKey::generate(Network::Testnet);
    let txid = client
        .send(&key, Action::game("tictactoe", &json!({"kind": "create"})))
        .await
        .unwrap();

    let (body, _, _) = mock
        .lock()
        .unwrap()
        .txs
        .get(&txid)
        .cloned()
        .expect("the mock stored the posted tx");
    let parsed: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(parsed["chain_id"], CHAIN);
    assert_eq!(parsed["from"], key.address());
    assert_eq!(parsed["nonce"], NEXT_NONCE);
    assert_eq!(
        parsed["action"],
        json!({"type": "game", "game": "tictactoe", "op": {"kind": "create"}})
    );

    let pending = client.tx(&txid).await.unwrap();
    assert_eq!(
        (pending.status.clone(), pending.receipt()),
        (TxStatus::Pending, None)
    );
    let included = client
        .wait_for_receipt(&txid, Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(
        (included.height, included.index, included.receipt.fuel_used),
        (4, 0, 12)
    );
    assert!(
        mock.lock().unwrap().txs[&txid].2 > PENDING_POLLS,
        "it polled until included"
    );
}

#[tokio::test]
async fn wait_gives_up_at_its_timeout_and_errors_carry_the_api_code() {
    let (url, _mock) = start_mock().await;
    let client = Client::new(&url).unwrap();

    let start = Instant::now();
    let unknown = "ab".repeat(32);
    let err = client
        .wait_for_receipt(&unknown, Duration::from_millis(300))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ClientError::Timeout { txid, .. } if *txid == unknown),
        "{err}"
    );
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_millis(300) && waited < Duration::from_secs(5),
        "{waited:?}"
    );

    let err = client.tx(&unknown).await.unwrap_err();
    assert_eq!(err.code(), Some("not_found"));
    assert!(matches!(err, ClientError::Api { status: 404, .. }));

    let key = SecretKey::generate(Network::Testnet);
    let body = gamechain_runtime::chain::TxBody {
        chain_id: CHAIN.into(),
        from: key.address(),
        nonce: NEXT_NONCE + 1,
        action: Action::Faucet {
            token: "GOLD".into(),
        },
    };
    let err = client.post_tx(&body.sign(&key)).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("bad_nonce: expected nonce {NEXT_NONCE}")
    );
    let err = client.post_tx_bytes(b"{".to_vec()).await.unwrap_err();
    assert_eq!(err.code(), Some("bad_json"));

    let err = client
        .block(gamechain_client::client::BlockRef::Latest)
        .await
        .unwrap_err();
    assert_eq!(
        err,
        ClientError::Protocol {
            status: 502,
            message: "<html>proxy error</html>".into()
        }
    );

    let nobody = Client::new("http://127.0.0.1:9").unwrap();
    assert!(matches!(
        nobody.status().await,
        Err(ClientError::Transport(_))
    ));
}
