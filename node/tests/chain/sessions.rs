//! Session keys end to end on the real binary (`docs/session-keys.md`): Alice authorizes a
//! session key with the CLI (`gamechain session authorize`), Bob with the Rust client; they play
//! a whole tic-tac-toe game over HTTP with the session keys only; the payout reaches Alice's main
//! account, the escrow is empty and GOLD is conserved; an op outside the scope and one after
//! revocation (`gamechain session revoke`) are refused with `403 session_refused` and the fixed
//! text; `GET /v1/account/<a>/sessions` shows the cap and what was spent; `gamechain verify`
//! replays the chain to the same state root.

use std::time::Duration;

use crate::common::replay::verify_json;
use crate::common::{gamechain, NodeProcess};
use gamechain_client::client::ClientError;
use gamechain_client::write_key_file;
use gamechain_client::Session;
use gamechain_runtime::chain::{Action, Network, SecretKey};
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(30);
const FAUCET: u128 = 100_000;

fn gold(v: &gamechain_client::Account) -> u128 {
    v.balances.get("GOLD").map_or(0, |a| a.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_players_play_tictactoe_with_session_keys() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut node = NodeProcess::new(dir, "block_interval_ms = 100\n");
    node.start().await;
    let url = node.url();
    let client = node.client();
    let cli = |args: &[&str]| {
        let out = gamechain(dir, Some(&url), args);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        (out.status.code(), stdout, stderr)
    };

    let alice = SecretKey::generate(Network::Testnet);
    let bob = SecretKey::generate(Network::Testnet);
    write_key_file(&dir.join("alice.wif"), &alice).unwrap();
    for who in [&alice, &bob] {
        let r = client
            .send_and_wait(
                who,
                Action::Faucet {
                    token: "GOLD".into(),
                },
                WAIT,
            )
            .await
            .unwrap();
        assert!(r.receipt.ok);
    }
    let total_before = FAUCET * 2;

    // Alice: the CLI makes the session key, authorizes it (one main-key signature) and keeps
    // it in a 0600 session file.
    let (code, stdout, stderr) = cli(&[
        "session",
        "authorize",
        "--key",
        "alice.wif",
        "--modules",
        "tictactoe,mnk",
        "--expires-in",
        "1h",
        "--cap",
        "10.00",
        "--out",
        "alice.session",
    ]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let authorized: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(authorized["account"], json!(alice.address()));
    assert_eq!(authorized["modules"], json!(["mnk", "tictactoe"]));
    assert_eq!(authorized["cap"], json!("1000"));
    let alice_session = Session::read_file(&dir.join("alice.session")).unwrap();
    assert_eq!(alice_session.id, 1, "Alice's nonce of the authorization");
    let alice_key = alice_session.key.address();
    // Again with the same --out: refused before anything is signed or posted.
    let (code, stdout, stderr) = cli(&[
        "session",
        "authorize",
        "--key",
        "alice.wif",
        "--modules",
        "tictactoe",
        "--expires-in",
        "1h",
        "--cap",
        "1",
        "--out",
        "alice.session",
    ]);
    assert_ne!(code, Some(0), "{stdout}");
    assert!(stderr.contains("alice.session already exists"), "{stderr}");
    assert_eq!(
        client.account(&alice.address()).await.unwrap().next_nonce,
        2,
        "no second authorization was sent"
    );

    // Bob: the Rust client.
    let head = client
        .block(gamechain_client::BlockRef::Latest)
        .await
        .unwrap();
    let (txid, bob_session) = client
        .authorize_session(
            &bob,
            SecretKey::generate(Network::Testnet),
            &["tictactoe".to_string()],
            head.header.header.time_ms + 3_600_000,
            500,
        )
        .await
        .unwrap();
    assert!(
        client
            .wait_for_receipt(&txid, WAIT)
            .await
            .unwrap()
            .receipt
            .ok
    );

    // The game: Alice's ops through the CLI, Bob's through the client, session keys only.
    let alice_op = |op: Value| {
        let (code, stdout, stderr) = cli(&[
            "session",
            "game",
            "tictactoe",
            "--session",
            "alice.session",
            &op.to_string(),
        ]);
        assert_eq!(code, Some(0), "{op}: {stdout}{stderr}");
        serde_json::from_str::<Value>(&stdout).unwrap()
    };
    let created = alice_op(json!({"kind": "create", "stake": "100"}));
    assert_eq!(created["ok"], json!(true));
    let events = created["events"].as_array().unwrap();
    assert_eq!(events[0]["data"]["x"], json!(alice.address()));
    assert_eq!(
        events.last().unwrap(),
        &json!({"kind": "session", "data": {"account": alice.address(), "key": alice_key, "session": 1}})
    );
    let id = created["txid"].as_str().unwrap()[..16].to_string();
    let bob_op = |op: Value| {
        let client = client.clone();
        let session = bob_session.clone();
        async move {
            let txid = client
                .send_session(&session, "tictactoe", &op)
                .await
                .unwrap();
            let r = client.wait_for_receipt(&txid, WAIT).await.unwrap();
            assert!(r.receipt.ok, "{op}: {:?}", r.receipt);
            r
        }
    };
    let joined = bob_op(json!({"kind": "join", "id": id})).await;
    assert_eq!(joined.receipt.events[0].data["o"], json!(bob.address()));
    for (cell, alice_moves) in [(0, true), (3, false), (1, true), (4, false), (2, true)] {
        let op = json!({"kind": "move", "id": id, "cell": cell});
        if alice_moves {
            assert_eq!(alice_op(op)["ok"], json!(true));
        } else {
            bob_op(op).await;
        }
    }

    // The payout went to Alice's main account; the escrow is empty; nothing made or lost.
    let a = client.account(&alice.address()).await.unwrap();
    let b = client.account(&bob.address()).await.unwrap();
    let escrow = client.account("module:tictactoe").await.unwrap();
    assert_eq!(
        (gold(&a), gold(&b), gold(&escrow)),
        (FAUCET + 100, FAUCET - 100, 0)
    );
    assert_eq!(gold(&a) + gold(&b) + gold(&escrow), total_before);
    for key in [&alice_key, &bob_session.key.address()] {
        let k = client.account(key).await.unwrap();
        assert_eq!(
            (gold(&k), k.nonce),
            (0, 0),
            "a session key holds and sends nothing"
        );
    }
    assert_eq!((a.nonce, b.nonce), (6, 5));

    // Listed with the cap and what was spent.
    let list = client.sessions(&alice.address()).await.unwrap();
    assert_eq!(list.sessions.len(), 1);
    let s = &list.sessions[0];
    assert_eq!(
        (s.key.as_str(), s.id, s.cap.0, s.spent.0, s.active),
        (alice_key.as_str(), 1, 1000, 100, true)
    );
    let (code, stdout, _) = cli(&["session", "list", &alice.address()]);
    assert_eq!(code, Some(0));
    assert_eq!(
        serde_json::from_str::<Value>(&stdout).unwrap()["sessions"][0]["spent"],
        json!("100")
    );

    // Outside the scope: refused at admission with the fixed text, nothing admitted.
    match client
        .send_session(
            &bob_session,
            "mnk",
            &json!({"kind": "create", "stake": "1"}),
        )
        .await
    {
        Err(ClientError::Api {
            status,
            code,
            message,
        }) => {
            assert_eq!((status, code.as_str()), (403, "session_refused"));
            assert_eq!(
                message,
                "session: module mnk is not in the session's scope (tictactoe)"
            );
        }
        other => panic!("expected 403 session_refused, got {other:?}"),
    }
    assert_eq!(client.account(&bob.address()).await.unwrap().next_nonce, 5);

    // Revoked at once: Alice's next op is refused.
    let (code, stdout, stderr) = cli(&["session", "revoke", &alice_key, "--key", "alice.wif"]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let (code, _, stderr) = cli(&[
        "session",
        "game",
        "tictactoe",
        "--session",
        "alice.session",
        r#"{"kind":"create","stake":"1"}"#,
    ]);
    assert_ne!(code, Some(0));
    assert!(
        stderr.contains(&format!(
            "session: {alice_key} has no session 1 for {} (never authorized, revoked or replaced)",
            alice.address()
        )),
        "{stderr}"
    );
    assert!(client
        .sessions(&alice.address())
        .await
        .unwrap()
        .sessions
        .is_empty());

    // Every node replaying the chain agrees.
    let (code, report) = verify_json(dir, &["--node", &url]).await;
    assert_eq!(code, 0, "{report}");
}
