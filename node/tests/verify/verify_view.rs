//! `GET /v1/games/<module>/proof` and `gamechain view --prove` against a `gamechain node`
//! process: a tic-tac-toe game's view is proven from the genesis alone (the client checks the
//! proofs and the signer, `verify_view` re-executes the view over the proven reads) and equals
//! the plain view; a proven "not found" too; each lie a node could tell is refused with the
//! check that caught it (a changed answer, a changed read, a read left out, another key's proof,
//! the module's record left out, another code hash, other wasm, a forged block signature,
//! another query, a changed error); a scanning view answers `409 no_proofs`.

use std::collections::BTreeMap;
use std::time::Duration;

use super::verify_game::op;
use crate::common::cli::{run, text};
use crate::common::NodeProcess;
use gamechain_chain::wire::view::ViewProof;
use gamechain_chain::Genesis;
use gamechain_node::verify::view::verify_view;
use gamechain_runtime::chain::{Action, Network, SecretKey, SignedHeader};
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(30);

fn query(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// `verify_view` of `proof` edited by `edit`: its error text.
fn refused(
    genesis: &Genesis,
    q: &BTreeMap<String, String>,
    proof: &ViewProof,
    wasm: &[u8],
    edit: impl FnOnce(&mut ViewProof),
) -> String {
    let mut lie = proof.clone();
    edit(&mut lie);
    verify_view(genesis, "tictactoe", q, &lie, wasm).expect_err("a lie verified")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_view_is_proven_from_the_genesis_and_every_lie_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let mut node = NodeProcess::new(tmp.path(), "block_interval_ms = 200");
    node.start().await;
    let client = node.client();
    let genesis: Genesis = serde_json::from_value(client.genesis().await.unwrap()).unwrap();
    let keys = [0; 2].map(|_| SecretKey::generate(Network::Testnet));
    for k in &keys {
        let faucet = Action::Faucet {
            token: "GOLD".into(),
        };
        assert!(
            client
                .send_and_wait(k, faucet, WAIT)
                .await
                .unwrap()
                .receipt
                .ok
        );
    }
    let created = op(
        &client,
        &keys[0],
        "tictactoe",
        json!({"kind": "create", "stake": "100"}),
    )
    .await;
    let id = created[0]["data"]["id"].as_str().unwrap().to_string();
    op(
        &client,
        &keys[1],
        "tictactoe",
        json!({"kind": "join", "id": id}),
    )
    .await;
    op(
        &client,
        &keys[0],
        "tictactoe",
        json!({"kind": "move", "id": id, "cell": 4}),
    )
    .await;

    // The view, proven and re-executed, is the plain view.
    let pairs = [("id", id.as_str())];
    let q = query(&pairs);
    let (proof, wasm) = client
        .view_proof("tictactoe", &pairs, &genesis)
        .await
        .unwrap();
    let verified = verify_view(&genesis, "tictactoe", &q, &proof, &wasm).unwrap();
    let plain = client.view("tictactoe", &pairs).await.unwrap();
    assert_eq!(verified.answer.as_ref().unwrap(), &plain);
    assert_eq!(plain["board"], "....x....");
    let game_key = format!("m/tictactoe/game/{id}");
    let keys_read: Vec<&str> = proof.reads.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(keys_read, [game_key.as_str(), "module/tictactoe"]);
    assert_eq!(verified.reads, 2);
    assert_eq!(verified.final_at, None, "a single sequencer's chain");

    // Each lie, and the check that refuses it.
    let lie = |edit: fn(&mut ViewProof)| refused(&genesis, &q, &proof, &wasm, edit);
    let e = lie(|p| p.value.as_mut().unwrap()["board"] = json!("x...x...."));
    assert!(
        e.contains("re-executed over the proven reads answers"),
        "{e}"
    );
    let e = lie(|p| {
        let game = p
            .reads
            .iter_mut()
            .find(|r| r.key.starts_with("m/"))
            .unwrap();
        game.value = Some(base64_of(br#"{"board":"xxx......"}"#));
    });
    assert!(e.starts_with("`m/tictactoe/game/"), "{e}");
    let e = lie(|p| p.reads.retain(|r| !r.key.starts_with("m/")));
    assert_eq!(
        e,
        format!("the answer does not prove `{game_key}`, which the view reads")
    );
    let e = lie(|p| {
        let record = p.reads[1].proof.clone();
        p.reads[0].proof = record;
    });
    assert!(e.starts_with("`m/tictactoe/game/"), "{e}");
    let e = lie(|p| p.reads.retain(|r| r.key != "module/tictactoe"));
    assert!(e.contains("does not prove the module's record"), "{e}");
    let e = lie(|p| p.code_hash = "00".repeat(32));
    assert!(e.starts_with("the module's record names code"), "{e}");
    let e = lie(|p| p.header.state_root[0] ^= 1);
    assert!(e.starts_with('`'), "a proof against a changed root: {e}");
    let other_wasm = client
        .code(&client.module("mnk").await.unwrap().code_hash)
        .await
        .unwrap();
    let e = verify_view(&genesis, "tictactoe", &q, &proof, &other_wasm).unwrap_err();
    assert!(e.starts_with("the code's hash is"), "{e}");
    let e = lie(|p| {
        p.signature =
            SignedHeader::sign(p.header.clone(), &SecretKey::generate(Network::Testnet)).signature
    });
    assert!(
        e.starts_with(&format!("block {}", proof.header.height)),
        "{e}"
    );
    let e = verify_view(&genesis, "tictactoe", &query(&[("id", "0")]), &proof, &wasm).unwrap_err();
    assert_eq!(e, "the answer is for another query");

    // An error is proven as a value is: the game's key proven absent.
    let missing = [("id", "0123456789abcdef")];
    let (absent, wasm) = client
        .view_proof("tictactoe", &missing, &genesis)
        .await
        .unwrap();
    let q = query(&missing);
    let verified = verify_view(&genesis, "tictactoe", &q, &absent, &wasm).unwrap();
    assert_eq!(
        verified.answer,
        Err("not found: game 0123456789abcdef".to_string())
    );
    assert_eq!(absent.reads[0].value, None);
    let e = refused(&genesis, &q, &absent, &wasm, |p| {
        p.error = Some("not found: nothing here".into())
    });
    assert!(
        e.contains("re-executed over the proven reads answers error"),
        "{e}"
    );

    // The CLI, and what cannot be proven.
    let url = node.url();
    let out = run(
        tmp.path(),
        &[
            "view",
            "tictactoe",
            &format!("id={id}"),
            "--prove",
            "--node",
            &url,
        ],
    )
    .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed["value"], plain);
    assert_eq!(printed["proven"]["reads"], 2);
    let out = run(
        tmp.path(),
        &["view", "tictactoe", "open=1", "--prove", "--node", &url],
    )
    .await;
    assert!(!out.status.success());
    let said = text(&out.stderr);
    assert!(
        said.contains("no_proofs") && said.contains("scans keys under `m/tictactoe/open/`"),
        "{said}"
    );
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
