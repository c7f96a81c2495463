//! `GET /v1/state/<key>?proof` on the real binary: on a new chain (a sparse Merkle state root,
//! what `gamechain node` writes into a new genesis) a balance and an absent key are proven
//! against the head block's signed state root by `Client::state_proven`, trusting only the
//! genesis; a changed value or sibling is refused; the proofs still check after a restart (the
//! tree rebuilt from the database); a chain configured with the older LtHash root answers
//! `409 no_proofs`.

use std::time::Duration;

use crate::common::{faucet_tx, NodeProcess};
use gamechain_chain::wire::StateEntry;
use gamechain_chain::Genesis;
use gamechain_runtime::chain::{Network, SecretKey};

async fn genesis(node: &NodeProcess) -> Genesis {
    serde_json::from_value(node.client().genesis().await.unwrap()).unwrap()
}

async fn raw(node: &NodeProcess, path: &str) -> (u16, serde_json::Value) {
    let r = reqwest::get(format!("{}{path}", node.url())).await.unwrap();
    (r.status().as_u16(), r.json().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn balances_and_absences_are_proven_against_a_signed_root_across_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let mut node = NodeProcess::new(tmp.path(), "block_interval_ms = 200");
    node.start().await;
    let client = node.client();
    let genesis = genesis(&node).await;
    assert_eq!(
        genesis.state_commitment(),
        gamechain_chain::StateCommitment::SparseMerkle
    );
    let (a, b) = (
        SecretKey::generate(Network::Testnet),
        SecretKey::generate(Network::Testnet),
    );
    let tx = faucet_tx(&a, &genesis.chain_id);
    client.post_tx(&tx).await.unwrap();
    let included = client
        .wait_for_receipt(&tx.txid(), Duration::from_secs(30))
        .await
        .unwrap();
    let key_a = format!("bal/{}/GOLD", a.address());
    let key_b = format!("bal/{}/GOLD", b.address());

    let (value, header) = client.state_proven(&key_a, &genesis).await.unwrap();
    assert!(header.header.height >= included.height);
    let unchecked = client.state(&key_a).await.unwrap();
    assert_eq!(unchecked.value_bytes().unwrap(), value);
    assert!(unchecked.proof.is_none(), "no proof unless asked");
    assert!(value.is_some(), "a's balance is stored");
    let (absent, _) = client.state_proven(&key_b, &genesis).await.unwrap();
    assert_eq!(absent, None, "b never received anything");

    // Lies: another value, a changed sibling, the proof of another key.
    let path = format!("/v1/state/{}?proof", key_a.replace('/', "%2F"));
    let (status, json) = raw(&node, &path).await;
    assert_eq!(status, 200, "{json}");
    let entry: StateEntry = serde_json::from_value(json).unwrap();
    assert_eq!(entry.check(&key_a).unwrap(), value);
    let mut lie = entry.clone();
    lie.value = Some("MTIzNDU2Nzg=".into());
    assert_eq!(
        lie.check(&key_a).unwrap_err(),
        "the proof shows the key with another value"
    );
    let mut lie = entry.clone();
    lie.proof.as_mut().unwrap().siblings[0][5] ^= 1;
    assert_eq!(
        lie.check(&key_a).unwrap_err(),
        "the proof does not lead to the state root"
    );
    // a's proof shown for b's absence: it does show it exactly when b's path begins as a's leaf
    // position does (its first `siblings` bits: that subtree holds a alone), which random keys
    // do now and then on a small tree; otherwise it is refused.
    let mut lie = entry.clone();
    lie.key = key_b.clone();
    lie.value = None;
    let depth = entry.proof.as_ref().unwrap().siblings.len();
    let (path_a, path_b) = (
        gamechain_chain::hash::sha256(key_a.as_bytes()),
        gamechain_chain::hash::sha256(key_b.as_bytes()),
    );
    let bit = |p: &[u8; 32], i: usize| (p[i / 8] >> (7 - i % 8)) & 1;
    let shares_position = (0..depth).all(|i| bit(&path_a, i) == bit(&path_b, i));
    assert_eq!(
        lie.check(&key_b).is_ok(),
        shares_position,
        "a's proof shows b absent only where b's path meets a's leaf"
    );
    // A forged header: the root moved, the signature no longer checks.
    let mut forged = entry.signed_header();
    forged.header.state_root[0] ^= 1;
    assert!(genesis.check_block_signer(&forged).is_err());

    // Bounds and queries.
    let (status, json) = raw(&node, &format!("/v1/state/{}", "k".repeat(1101))).await;
    assert_eq!(
        (status, json["error"]["code"].as_str()),
        (400, Some("invalid"))
    );
    let (status, json) = raw(
        &node,
        &format!("/v1/state/{}?proof=maybe", key_a.replace('/', "%2F")),
    )
    .await;
    assert_eq!(
        (status, json["error"]["code"].as_str()),
        (400, Some("invalid"))
    );

    // A restart rebuilds the tree from the database: the same entries prove again.
    let before = header.header.height;
    node.terminate(Duration::from_secs(20));
    node.start().await;
    let client = node.client();
    let (again, header) = client.state_proven(&key_a, &genesis).await.unwrap();
    assert_eq!(again, value);
    assert!(header.header.height >= before);
    assert_eq!(client.state_proven(&key_b, &genesis).await.unwrap().0, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_with_the_lthash_root_has_no_proofs() {
    let tmp = tempfile::tempdir().unwrap();
    let mut node = NodeProcess::new(
        tmp.path(),
        "block_interval_ms = 200\nstate_commitment = \"lthash16\"",
    );
    node.start().await;
    let genesis = genesis(&node).await;
    assert_eq!(
        genesis.state_commitment(),
        gamechain_chain::StateCommitment::LtHash16
    );
    let (status, json) = raw(&node, "/v1/state/token%2FGOLD").await;
    assert_eq!(status, 200, "{json}");
    assert_eq!(json["commitment"], "lthash16");
    assert!(json["value"].is_string());
    let (status, json) = raw(&node, "/v1/state/token%2FGOLD?proof").await;
    assert_eq!(
        (status, json["error"]["code"].as_str()),
        (409, Some("no_proofs"))
    );
    let err = node
        .client()
        .state_proven("token/GOLD", &genesis)
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some("no_proofs"));
}
