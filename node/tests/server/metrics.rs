//! `GET /metrics` scraped as Prometheus would, from an in-process node: the head, committed
//! blocks and transactions, admission outcomes by code, fuel by module and the timings move
//! with what the node did.

use std::time::Duration;

use gamechain_node::cli::local_node::LocalNode;
use gamechain_runtime::chain::{Action, Network, SecretKey, TxBody};

const WAIT: Duration = Duration::from_secs(30);

/// The value of the sample line `name` (with its labels, exactly) in `text`.
fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

async fn scrape(url: &str) -> String {
    let response = reqwest::get(format!("{url}/metrics")).await.unwrap();
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        content_type.starts_with("text/plain; version=0.0.4"),
        "{content_type}"
    );
    response.text().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_follow_blocks_admissions_and_fuel() {
    let node = LocalNode::start()
        .await
        .expect("the in-process node starts");
    let client = node.client();
    let url = node.url();
    let url = url.trim_end_matches('/');
    let before = scrape(url).await;
    assert_eq!(
        sample(&before, "gamechain_admission_total{code=\"accepted\"}"),
        None,
        "nothing admitted yet:\n{before}"
    );

    let key = SecretKey::generate(Network::Testnet);
    let faucet = Action::Faucet {
        token: "GOLD".into(),
    };
    client.send_and_wait(&key, faucet, WAIT).await.unwrap();
    let create = Action::game(
        "tictactoe",
        &serde_json::json!({"kind": "create", "stake": "100"}),
    );
    let included = client.send_and_wait(&key, create, WAIT).await.unwrap();
    assert!(included.receipt.ok, "{:?}", included.receipt);
    // A refusal: another action at the nonce the faucet used.
    let stale = TxBody {
        chain_id: client.chain_id().await.unwrap(),
        from: key.address(),
        nonce: 0,
        action: Action::game("tictactoe", &serde_json::json!({"kind": "create"})),
    }
    .sign(&key);
    assert!(client.post_tx(&stale).await.is_err());

    let text = scrape(url).await;
    let value =
        |name: &str| sample(&text, name).unwrap_or_else(|| panic!("{name} missing from\n{text}"));
    assert_eq!(value("gamechain_admission_total{code=\"accepted\"}"), 2.0);
    assert_eq!(value("gamechain_admission_total{code=\"bad_nonce\"}"), 1.0);
    assert!(value("gamechain_height") >= included.height as f64);
    assert!(value("gamechain_blocks_committed_total") >= 2.0);
    assert!(value("gamechain_txs_committed_total") >= 2.0);
    assert_eq!(
        value("gamechain_fuel_used_total{module=\"tictactoe\"}"),
        included.receipt.fuel_used as f64
    );
    assert!(value("gamechain_block_commit_seconds_count") >= 2.0);
    assert!(value("gamechain_block_build_seconds_count") >= 2.0);
    assert!(value("gamechain_process_resident_bytes") > 0.0);
    assert_eq!(value("gamechain_mempool_txs"), 0.0);
    node.stop().await.unwrap();
}
