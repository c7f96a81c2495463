//! `GET /v1/games/<module>/<id>/transcript` and `gamechain verify --game` against a
//! `gamechain node` process: a full 9-move tic-tac-toe game (a draw) verifies, also with
//! `--complete`; an m,n,k game in play, played with session keys, verifies (each step's session
//! record proven before its block; a changed, missing or misplaced one refused) but not with
//! `--complete`; a transcript file
//! tampered in each way a lying node could (a receipt's event data, error or fuel; two moves
//! swapped; a move removed from the middle; another code hash; another wasm; a forged header
//! signature; a wrong inclusion proof; an edited op) is caught, and the report names the
//! check that caught it; the endpoint's errors are the API's. A dice duel (version 2: the roll is a
//! scheduled call's step) verifies, and forged dice, a beacon for another height under a re-signed
//! header, an unscheduled call and a dropped roll are caught.

use std::path::Path;
use std::time::Duration;

use crate::common::cli::{run, text};
use crate::common::NodeProcess;
use gamechain_client::client::Client;
use gamechain_runtime::chain::{Action, Network, SecretKey, SignedHeader};
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(30);

/// Sends game `op` of `game` signed by `key`, waits for its receipt (which must be ok) and
/// returns its events as JSON.
pub(super) async fn op(client: &Client, key: &SecretKey, game: &str, op: Value) -> Value {
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
    serde_json::to_value(&included.receipt.events).unwrap()
}

async fn get(url: &str) -> (u16, Value) {
    let r = reqwest::get(url).await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap())
}

/// Two new keys, each funded by the faucet.
async fn funded_players(client: &Client) -> [SecretKey; 2] {
    let keys = [0; 2].map(|_| SecretKey::generate(Network::Testnet));
    for k in &keys {
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
    keys
}

/// Runs `gamechain verify --game <game> --json <extra…> --node <url>`: exit code and report.
async fn verify(dir: &Path, url: &str, game: &str, extra: &[&str]) -> (i32, Value) {
    let mut args = vec!["verify", "--game", game, "--json", "--node", url];
    args.extend_from_slice(extra);
    let out = run(dir, &args).await;
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?}: not JSON ({e}): {}\nstderr: {}",
            text(&out.stdout),
            text(&out.stderr)
        )
    });
    (out.status.code().unwrap(), report)
}

/// Verifies `transcript` (written to a file) and returns the divergence, asserting exit 4.
async fn diverges(dir: &Path, url: &str, game: &str, transcript: &Value, extra: &[&str]) -> Value {
    let file = dir.join("tampered.json");
    std::fs::write(&file, transcript.to_string()).unwrap();
    let mut args = vec!["--transcript", file.to_str().unwrap()];
    args.extend_from_slice(extra);
    let (code, report) = verify(dir, url, game, &args).await;
    assert_eq!(code, 4, "{report}");
    assert_eq!(report["result"], "diverged", "{report}");
    report["divergence"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn games_verify_and_every_tampering_is_caught() {
    let tmp = tempfile::tempdir().unwrap();
    let mut node = NodeProcess::new(tmp.path(), "");
    node.start().await;
    let url = node.url();
    let client = node.client();
    let [alice, bob] = funded_players(&client).await;

    // Tic-tac-toe, staked, nine moves to a draw.
    let created = op(
        &client,
        &alice,
        "tictactoe",
        json!({"kind": "create", "stake": "250"}),
    )
    .await;
    let id = created[0]["data"]["id"].as_str().unwrap().to_string();
    op(
        &client,
        &bob,
        "tictactoe",
        json!({"kind": "join", "id": id}),
    )
    .await;
    for (i, cell) in [0, 1, 2, 4, 3, 5, 7, 6, 8].into_iter().enumerate() {
        let who = if i % 2 == 0 { &alice } else { &bob };
        op(
            &client,
            who,
            "tictactoe",
            json!({"kind": "move", "id": id, "cell": cell}),
        )
        .await;
    }
    let (status, transcript) = get(&format!("{url}/v1/games/tictactoe/{id}/transcript")).await;
    assert_eq!(status, 200, "{transcript}");
    assert_eq!(transcript["finished"], true);
    let steps = transcript["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 11, "create, join, nine moves");
    let last = &steps[10]["receipt"]["events"];
    assert!(last
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["kind"] == "tictactoe.finished"));
    // Each player's starting balance is proven (every new chain has state proofs): its GOLD in
    // the block before its first step, what the faucet gave it.
    let start = transcript["start"].as_array().unwrap();
    assert_eq!(start.len(), 2, "{transcript}");
    assert_eq!(start[0]["account"], alice.address());
    assert_eq!(start[1]["account"], bob.address());
    let faucet = client
        .account(&alice.address())
        .await
        .unwrap()
        .balances
        .get("GOLD")
        .cloned()
        .unwrap();
    assert_eq!(
        transcript["start_balances"],
        json!({alice.address(): faucet.0.to_string(), bob.address(): faucet.0.to_string()}),
        "a draw gives both stakes back: the balance now is the balance before"
    );
    assert_eq!(
        start[0]["value"],
        transcript["start_balances"][alice.address()]
    );
    println!(
        "tic-tac-toe transcript: {} steps, {} bytes",
        steps.len(),
        transcript.to_string().len()
    );

    let game = format!("tictactoe:{id}");
    let dir = tmp.path();
    let (code, report) = verify(dir, &url, &game, &["--complete"]).await;
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["result"], "verified");
    assert_eq!(report["code_origin"], "genesis", "{report}");
    assert_eq!(
        report["complete_as_of"], transcript["log"]["header"]["header"]["height"],
        "{report}"
    );
    assert_eq!(report["steps"].as_array().unwrap().len(), 11);
    assert_eq!(report["steps"][0]["kind"], "create");
    assert_eq!(
        report["steps"][10]["events"],
        json!(["tictactoe.moved", "tictactoe.finished"])
    );
    println!("verified tic-tac-toe in {} ms (CLI)", report["elapsed_ms"]);
    // Text output names every step.
    let out = run(dir, &["verify", "--game", &game, "--node", &url]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    assert_eq!(shown.matches('✓').count(), 11, "{shown}");
    assert!(shown.contains("verified: tictactoe game"), "{shown}");

    // Cut short: the node keeps "finished": true without the finishing move. The report's
    // finished is what the steps show, so this is a divergence; honestly labelled unfinished it
    // is still caught: the chain's own log of the game (proven against a signed state root;
    // every new chain has state proofs) holds one step more.
    let mut short = transcript.clone();
    short["steps"].as_array_mut().unwrap().pop();
    let file = dir.join("short.json");
    std::fs::write(&file, short.to_string()).unwrap();
    let (code, report) = verify(dir, &url, &game, &["--transcript", file.to_str().unwrap()]).await;
    let d = &report["divergence"];
    assert_eq!(
        (code, d["index"].as_u64(), d["field"].as_str()),
        (4, None, Some("finished")),
        "{d}"
    );
    assert_eq!(
        report["finished"], false,
        "a diverged transcript is never reported finished"
    );
    short["finished"] = json!(false);
    let d = diverges(dir, &url, &game, &short, &[]).await;
    assert_eq!(d["field"], "log.steps", "{d}");
    assert!(
        d["got"]
            .as_str()
            .unwrap()
            .contains("the chain logged 11 steps of the game"),
        "{d}"
    );
    let d = diverges(dir, &url, &game, &short, &["--complete"]).await;
    assert_eq!(d["field"], "finished", "{d}");
    // A step left out of the middle, the rest kept: caught by order or by the log.
    let mut gap = transcript.clone();
    gap["steps"].as_array_mut().unwrap().remove(5);
    let d = diverges(dir, &url, &game, &gap, &[]).await;
    assert!(d["field"].as_str().is_some(), "{d}");
    // The log itself: dropped, moved to another key, its value or proof changed, or signed by
    // another key: each refused.
    let mut no_log = transcript.clone();
    no_log.as_object_mut().unwrap().remove("log");
    assert_eq!(
        diverges(dir, &url, &game, &no_log, &[]).await["field"],
        "log"
    );
    let mut lie = transcript.clone();
    let value = lie["log"]["value"].as_str().unwrap().to_string();
    let forged = format!(
        "{}{}",
        if value.starts_with('0') { "1" } else { "0" },
        &value[1..]
    );
    lie["log"]["value"] = json!(forged);
    assert_eq!(
        diverges(dir, &url, &game, &lie, &[]).await["field"],
        "log.proof"
    );
    let mut lie = transcript.clone();
    lie["log"]["header"]["header"]["state_root"] = json!("00".repeat(32));
    assert_eq!(
        diverges(dir, &url, &game, &lie, &[]).await["field"],
        "log.header"
    );
    let mut lie = transcript.clone();
    lie["log"]["key"] = json!("log/tictactoe/0000000000000000");
    assert_eq!(diverges(dir, &url, &game, &lie, &[]).await["field"], "log");
    // The starting balances: a changed amount, the amount with its proven value changed, the
    // header of another block, or a player's proof left out: each refused.
    let richer = (faucet.0 * 10).to_string();
    let mut lie = transcript.clone();
    lie["start_balances"][alice.address()] = json!(richer);
    let d = diverges(dir, &url, &game, &lie, &[]).await;
    assert_eq!(d["field"], "start_balances", "{d}");
    lie["start"][0]["value"] = json!(richer);
    assert_eq!(
        diverges(dir, &url, &game, &lie, &[]).await["field"],
        "start.proof"
    );
    let mut lie = transcript.clone();
    lie["start"][1]["header"] = transcript["start"][0]["header"].clone();
    assert_eq!(
        diverges(dir, &url, &game, &lie, &[]).await["field"],
        "start.header"
    );
    let mut lie = transcript.clone();
    lie["start"].as_array_mut().unwrap().pop();
    assert_eq!(
        diverges(dir, &url, &game, &lie, &[]).await["field"],
        "start"
    );
    // A node may say it cannot prove one (the balance moved earlier in the block of the
    // player's first step): that player starts from the declared amount, and the report names
    // it, so a node that withholds a proof it has is seen doing so.
    let mut withheld = transcript.clone();
    withheld["start"][1] = json!({"account": bob.address(), "unproven": "not shown"});
    let file = dir.join("withheld.json");
    std::fs::write(&file, withheld.to_string()).unwrap();
    let (code, report) = verify(dir, &url, &game, &["--transcript", file.to_str().unwrap()]).await;
    assert_eq!(code, 0, "{report}");
    assert_eq!(
        report["start_unproven"],
        json!([{"account": bob.address(), "why": "not shown"}])
    );
    let out = run(
        dir,
        &[
            "verify",
            "--game",
            &game,
            "--node",
            &url,
            "--transcript",
            file.to_str().unwrap(),
        ],
    )
    .await;
    assert!(text(&out.stdout).contains(&format!(
        "! the starting balance of {} is declared by the node, not proven: not shown",
        bob.address()
    )));
    // A reason a terminal would act on (an escape sequence that erases the warning) is refused.
    withheld["start"][1]["unproven"] = json!("\u{1b}[2K\rall proven");
    let d = diverges(dir, &url, &game, &withheld, &[]).await;
    assert_eq!(d["field"], "start", "{d}");
    let (_, report) = verify(dir, &url, &game, &[]).await;
    assert_eq!(report["start_unproven"], json!([]), "{report}");
    // Another game's real, signed, proven steps shown as this game's: a second game of Alice's,
    // relabelled as the first, or its creation appended to the first game's transcript.
    let other = op(&client, &alice, "tictactoe", json!({"kind": "create"})).await;
    let other_id = other[0]["data"]["id"].as_str().unwrap().to_string();
    let (status, other_t) = get(&format!("{url}/v1/games/tictactoe/{other_id}/transcript")).await;
    assert_eq!(status, 200, "{other_t}");
    let mut relabelled = other_t.clone();
    relabelled["game"] = json!(id);
    let d = diverges(dir, &url, &game, &relabelled, &[]).await;
    assert_eq!(
        (d["index"].as_u64(), d["field"].as_str()),
        (Some(0), Some("game")),
        "{d}"
    );
    let mut appended = short.clone();
    appended["steps"]
        .as_array_mut()
        .unwrap()
        .push(other_t["steps"][0].clone());
    let d = diverges(dir, &url, &game, &appended, &[]).await;
    assert_eq!(
        (d["index"].as_u64(), d["field"].as_str()),
        (Some(10), Some("game")),
        "{d}"
    );

    // Tampering: each case names the check that catches it.
    let tamper = |f: &dyn Fn(&mut Value)| {
        let mut t = transcript.clone();
        f(&mut t);
        t
    };
    // A changed receipt (event data, error, fuel): its hash is no longer the signed root's leaf.
    for (what, edit) in [
        (
            "event data",
            (|t: &mut Value| t["steps"][4]["receipt"]["events"][0]["data"]["cell"] = json!(8))
                as fn(&mut Value),
        ),
        ("error", |t: &mut Value| {
            t["steps"][4]["receipt"]["ok"] = json!(false);
            t["steps"][4]["receipt"]["error"] = json!("invalid: cell is taken");
            t["steps"][4]["receipt"]["events"] = json!([]);
        }),
        ("fuel", |t: &mut Value| {
            let f = t["steps"][4]["receipt"]["fuel_used"].as_u64().unwrap();
            t["steps"][4]["receipt"]["fuel_used"] = json!(f + 1);
        }),
    ] {
        let d = diverges(dir, &url, &game, &tamper(&edit), &[]).await;
        assert_eq!(
            (d["index"].as_u64(), d["field"].as_str()),
            (Some(4), Some("receipt_proof")),
            "{what}: {d}"
        );
    }
    // Two moves swapped: the first of them now moves out of turn (the state diverges) before
    // the second is seen to be in an earlier block (order).
    let d = diverges(
        dir,
        &url,
        &game,
        &tamper(&|t| t["steps"].as_array_mut().unwrap().swap(5, 6)),
        &[],
    )
    .await;
    assert_eq!(
        (d["index"].as_u64(), d["field"].as_str()),
        (Some(5), Some("ok")),
        "{d}"
    );
    // Swapped with the same ops (both receipts' blocks exchanged): caught by the order.
    let d = diverges(
        dir,
        &url,
        &game,
        &tamper(&|t| {
            let steps = t["steps"].as_array_mut().unwrap();
            let (a, b) = (steps[3].clone(), steps[4].clone());
            steps[3] = b;
            steps[4] = a;
            steps.truncate(4);
        }),
        &[],
    )
    .await;
    assert_eq!(d["index"].as_u64(), Some(3), "{d}");
    // A move removed from the middle: the next move is out of turn, the state diverges.
    let d = diverges(
        dir,
        &url,
        &game,
        &tamper(&|t| {
            t["steps"].as_array_mut().unwrap().remove(5);
        }),
        &[],
    )
    .await;
    assert_eq!(d["index"].as_u64(), Some(5), "{d}");
    assert_eq!(d["field"], "ok", "{d}");
    assert!(d["got"] == "false", "{d}");
    // Another code hash (m,n,k's code, served by the node): the ops run differently.
    let (_, mnk_info) = get(&format!("{url}/v1/modules/mnk")).await;
    let mnk_hash = mnk_info["code_hash"].as_str().unwrap().to_string();
    let d = diverges(
        dir,
        &url,
        &game,
        &tamper(&|t| t["code_hash"] = json!(mnk_hash)),
        &[],
    )
    .await;
    assert_eq!(d["index"].as_u64(), Some(0), "{d}");
    // Another wasm for the same code hash.
    let mnk_wasm = reqwest::get(format!("{url}/v1/code/{mnk_hash}"))
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let wasm_file = dir.join("other.wasm");
    std::fs::write(&wasm_file, &mnk_wasm).unwrap();
    let d = diverges(
        dir,
        &url,
        &game,
        &transcript,
        &["--code", wasm_file.to_str().unwrap()],
    )
    .await;
    assert_eq!(d["field"], "code_hash", "{d}");
    // A forged header signature.
    let forger = SecretKey::generate(Network::Testnet);
    let d = diverges(
        dir,
        &url,
        &game,
        &tamper(&|t| {
            let signed: SignedHeader =
                serde_json::from_value(t["steps"][3]["header"].clone()).unwrap();
            let forged = SignedHeader::sign(signed.header.clone(), &forger);
            t["steps"][3]["header"]["signature"] = json!(forged.signature);
        }),
        &[],
    )
    .await;
    assert_eq!(
        (d["index"].as_u64(), d["field"].as_str()),
        (Some(3), Some("header_signature")),
        "{d}"
    );
    // A header edited under its signature.
    let d = diverges(
        dir,
        &url,
        &game,
        &tamper(&|t| {
            let time = t["steps"][3]["header"]["header"]["time_ms"]
                .as_u64()
                .unwrap();
            t["steps"][3]["header"]["header"]["time_ms"] = json!(time + 1);
        }),
        &[],
    )
    .await;
    assert_eq!(d["field"], "header_signature", "{d}");
    // A wrong inclusion proof.
    let d = diverges(
        dir,
        &url,
        &game,
        &tamper(&|t| {
            t["steps"][2]["tx_proof"]
                .as_array_mut()
                .unwrap()
                .push(json!("00".repeat(32)));
        }),
        &[],
    )
    .await;
    assert_eq!(
        (d["index"].as_u64(), d["field"].as_str()),
        (Some(2), Some("tx_proof")),
        "{d}"
    );
    let d = diverges(
        dir,
        &url,
        &game,
        &tamper(&|t| t["steps"][2]["tx_count"] = json!(7)),
        &[],
    )
    .await;
    assert_eq!(d["field"], "tx_proof", "{d}");
    // One block shown by two steps with different tree sizes (which could reorder them).
    let d = diverges(
        dir,
        &url,
        &game,
        &tamper(&|t| {
            let before = t["steps"][2].clone();
            let step = &mut t["steps"][3];
            step["height"] = before["height"].clone();
            step["header"] = before["header"].clone();
            step["index"] = json!(before["index"].as_u64().unwrap() + 1);
            step["tx_count"] = json!(before["tx_count"].as_u64().unwrap() + 1);
        }),
        &[],
    )
    .await;
    assert_eq!(
        (d["index"].as_u64(), d["field"].as_str()),
        (Some(3), Some("block")),
        "{d}"
    );
    // An edited op (another cell): its txid is no longer its body's hash.
    let d = diverges(
        dir,
        &url,
        &game,
        &tamper(&|t| {
            let body = t["steps"][5]["body"]
                .as_str()
                .unwrap()
                .replace("\"cell\":4", "\"cell\":6");
            assert_ne!(body, t["steps"][5]["body"].as_str().unwrap());
            t["steps"][5]["body"] = json!(body);
        }),
        &[],
    )
    .await;
    assert_eq!(
        (d["index"].as_u64(), d["field"].as_str()),
        (Some(5), Some("txid")),
        "{d}"
    );
    // Another chain's genesis is refused at once.
    let d = diverges(
        dir,
        &url,
        &game,
        &tamper(&|t| t["genesis_hash"] = json!("11".repeat(32))),
        &[],
    )
    .await;
    assert_eq!(d["field"], "genesis_hash", "{d}");
    // Offline: the transcript, the wasm and a pinned genesis from files (the node is not asked).
    let (_, genesis) = get(&format!("{url}/v1/genesis")).await;
    let (genesis_file, transcript_file, code_file) = (
        dir.join("genesis.json"),
        dir.join("transcript.json"),
        dir.join("tictactoe.wasm"),
    );
    std::fs::write(&genesis_file, genesis.to_string()).unwrap();
    std::fs::write(&transcript_file, transcript.to_string()).unwrap();
    let code_hash = transcript["code_hash"].as_str().unwrap();
    std::fs::write(&code_file, client.code(code_hash).await.unwrap()).unwrap();
    let offline = [
        "--transcript",
        transcript_file.to_str().unwrap(),
        "--code",
        code_file.to_str().unwrap(),
        "--genesis",
        genesis_file.to_str().unwrap(),
    ];
    let (code, report) = verify(dir, "http://127.0.0.1:1", &game, &offline).await;
    assert_eq!(code, 0, "{report}");
    // Another chain's genesis pinned: refused before any step.
    let mut other = genesis.clone();
    other["chain_id"] = json!("another-chain");
    std::fs::write(&genesis_file, other.to_string()).unwrap();
    let (code, report) = verify(dir, "http://127.0.0.1:1", &game, &offline).await;
    assert_eq!(code, 4, "{report}");
    assert_eq!(report["divergence"]["field"], "genesis_hash", "{report}");

    // m,n,k in play, every op signed by a session key for its player: verifies (each step acts
    // for the account), but not as a complete game.
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let mut sessions = Vec::new();
    for main in [&bob, &alice] {
        let (txid, session) = client
            .authorize_session(
                main,
                SecretKey::generate(Network::Testnet),
                &["mnk".to_string()],
                now_ms + 3_600_000,
                1_000,
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
        sessions.push(session);
    }
    let session_op = |i: usize, op: Value| {
        let (client, session) = (client.clone(), &sessions[i]);
        async move {
            let txid = client.send_session(session, "mnk", &op).await.unwrap();
            let r = client.wait_for_receipt(&txid, WAIT).await.unwrap();
            assert!(r.receipt.ok, "{op}: {:?}", r.receipt.error);
            serde_json::to_value(&r.receipt.events).unwrap()
        }
    };
    let created = session_op(
        0,
        json!({"kind": "create", "rows": 6, "cols": 7, "k": 4, "stake": "10"}),
    )
    .await;
    let mid = created[0]["data"]["id"].as_str().unwrap().to_string();
    session_op(1, json!({"kind": "join", "id": mid})).await;
    for (i, (row, col)) in [(0, 0), (5, 6), (1, 1), (4, 5)].into_iter().enumerate() {
        session_op(
            i % 2,
            json!({"kind": "move", "id": mid, "row": row, "col": col}),
        )
        .await;
    }
    let (status, t) = get(&format!("{url}/v1/games/mnk/{mid}/transcript")).await;
    assert_eq!(status, 200, "{t}");
    assert_eq!(t["finished"], false);
    assert_eq!(t["steps"].as_array().unwrap().len(), 6);
    assert!(t["steps"].as_array().unwrap().iter().all(|s| s["body"]
        .as_str()
        .unwrap()
        .contains("\"type\":\"session_game\"")));
    // Proven: each player's balance before its first step (a session game acts for the account).
    assert_eq!(
        t["start_balances"],
        json!({alice.address(): faucet.0.to_string(), bob.address(): faucet.0.to_string()})
    );
    let mgame = format!("mnk:{mid}");
    let (code, report) = verify(dir, &url, &mgame, &[]).await;
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["steps"].as_array().unwrap().len(), 6);
    // Each step's session authorization is proven: its record before the step's block.
    let steps = t["steps"].as_array().unwrap();
    assert!(
        steps.iter().all(|s| s["session"]["proof"].is_object()
            && s["session"]["value"]
                .as_str()
                .unwrap()
                .contains("\"modules\":[\"mnk\"]")),
        "{t}"
    );
    assert_eq!(report["session_unproven"], json!([]), "{report}");
    // Each lie about a session is refused, naming the check.
    let session_lie = |edit: &dyn Fn(&mut Value)| {
        let mut lie = t.clone();
        edit(&mut lie["steps"][2]);
        lie
    };
    type Edit<'a> = &'a dyn Fn(&mut Value);
    let lies: [(Edit, &str); 5] = [
        // Another record (a larger cap) under the same proof.
        (
            &|s| {
                s["session"]["value"] = json!(s["session"]["value"]
                    .as_str()
                    .unwrap()
                    .replace("1000", "9000"))
            },
            "session.proof",
        ),
        // No record at all.
        (
            &|s| {
                s.as_object_mut().unwrap().remove("session");
            },
            "session",
        ),
        // Another block's header (and its proof) for this step.
        (
            &|s| s["session"] = t["steps"][0]["session"].clone(),
            "session.header",
        ),
        // The record proven absent is not a proof: a value removed.
        (
            &|s| {
                s["session"].as_object_mut().unwrap().remove("value");
            },
            "session.proof",
        ),
        // A reason a terminal would act on.
        (
            &|s| s["session"] = json!({"unproven": "\u{1b}[2Kfine"}),
            "session",
        ),
    ];
    for (edit, field) in lies {
        let d = diverges(dir, &url, &mgame, &session_lie(edit), &[]).await;
        assert_eq!(
            (d["index"].as_u64(), d["field"].as_str()),
            (Some(2), Some(field)),
            "{d}"
        );
    }
    // A node that cannot prove it says why, and the step is reported, not refused.
    let withheld =
        session_lie(&|s| s["session"] = json!({"unproven": "the node did not execute that block"}));
    let file = dir.join("withheld.json");
    std::fs::write(&file, withheld.to_string()).unwrap();
    let (code, report) = verify(dir, &url, &mgame, &["--transcript", file.to_str().unwrap()]).await;
    assert_eq!(code, 0, "{report}");
    assert_eq!(
        report["session_unproven"],
        json!([{"step": 2, "why": "the node did not execute that block"}])
    );
    let (code, report) = verify(dir, &url, &mgame, &["--complete"]).await;
    assert_eq!(code, 4, "{report}");
    assert_eq!(report["divergence"]["field"], "finished");

    // The endpoint's errors.
    let (s, e) = get(&format!(
        "{url}/v1/games/tictactoe/0123456789abcdef/transcript"
    ))
    .await;
    assert_eq!(
        (s, e["error"]["code"].as_str()),
        (404, Some("not_found")),
        "{e}"
    );
    let (s, e) = get(&format!("{url}/v1/games/nosuchmodule/{id}/transcript")).await;
    assert_eq!(
        (s, e["error"]["code"].as_str()),
        (404, Some("not_found")),
        "{e}"
    );
    let (s, e) = get(&format!("{url}/v1/games/tictactoe/{id}/transcript?limit=3")).await;
    assert_eq!(
        (s, e["error"]["code"].as_str()),
        (400, Some("invalid")),
        "{e}"
    );
    let (s, e) = get(&format!("{url}/v1/games/tictactoe/a%20b/transcript")).await;
    assert_eq!(
        (s, e["error"]["code"].as_str()),
        (400, Some("invalid")),
        "{e}"
    );
    // A tic-tac-toe id read as mnk's: no event of that game there.
    let (s, e) = get(&format!("{url}/v1/games/mnk/{id}/transcript")).await;
    assert_eq!(
        (s, e["error"]["code"].as_str()),
        (404, Some("not_found")),
        "{e}"
    );
}

/// A game of an uploaded module (tic-tac-toe's code deployed as `ttt2`, compiled as an upload)
/// verifies; once its owner upgrades `ttt2` (to m,n,k's code) the node cannot name one code hash
/// for the game and answers `409 conflict`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_uploaded_module_verifies_and_an_upgrade_during_the_game_is_a_conflict() {
    use gamechain_ledger::genesis_setup::TICTACTOE_WASM;
    let tmp = tempfile::tempdir().unwrap();
    let mut node = NodeProcess::new(tmp.path(), "");
    node.start().await;
    let url = node.url();
    let client = node.client();
    let [alice, bob] = [0; 2].map(|_| SecretKey::generate(Network::Testnet));
    let txid = client.deploy(&alice, "ttt2", TICTACTOE_WASM).await.unwrap();
    assert!(
        client
            .wait_for_receipt(&txid, WAIT)
            .await
            .unwrap()
            .receipt
            .ok
    );
    let created = op(&client, &alice, "ttt2", json!({"kind": "create"})).await;
    let id = created[0]["data"]["id"].as_str().unwrap().to_string();
    op(&client, &bob, "ttt2", json!({"kind": "join", "id": id})).await;
    op(
        &client,
        &alice,
        "ttt2",
        json!({"kind": "move", "id": id, "cell": 4}),
    )
    .await;
    let game = format!("ttt2:{id}");
    let (code, report) = verify(tmp.path(), &url, &game, &[]).await;
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["steps"].as_array().unwrap().len(), 3);
    // The upload's code is anchored: the module's record, proven at the log's block, names it.
    assert_eq!(report["code_origin"], "module record", "{report}");

    // A swapped upload: the same game logic under other bytes (a custom section appended), so
    // every step re-executes alike. The node names that code; the proven record names the real
    // one, so it is refused (before records were proven, it verified as "named by the node").
    let mut swapped = TICTACTOE_WASM.to_vec();
    swapped.extend_from_slice(&[0x00, 0x06, 0x01, b'x', b's', b'w', b'a', b'p']);
    let swapped_hash = hex::encode(gamechain_runtime::chain::hash::sha256(&swapped));
    let (_, mut t) = get(&format!("{url}/v1/games/ttt2/{id}/transcript")).await;
    assert!(t["log"]["module_record"]["value"].is_string(), "{t}");
    t["code_hash"] = json!(swapped_hash);
    let code_file = tmp.path().join("swapped.wasm");
    std::fs::write(&code_file, &swapped).unwrap();
    let d = diverges(
        tmp.path(),
        &url,
        &game,
        &t,
        &["--code", code_file.to_str().unwrap()],
    )
    .await;
    assert_eq!(d["field"], "code_hash", "{d}");
    assert!(
        d["expected"]
            .as_str()
            .unwrap()
            .contains("the module's record at block"),
        "{d}"
    );
    // A record of another module, or another record text under the real proof: refused.
    let (_, mut t) = get(&format!("{url}/v1/games/ttt2/{id}/transcript")).await;
    let text = t["log"]["module_record"]["value"]
        .as_str()
        .unwrap()
        .to_string();
    t["log"]["module_record"]["value"] =
        json!(text.replace("\"deployed_height\":", "\"deployed_height\":1"));
    assert_eq!(
        diverges(tmp.path(), &url, &game, &t, &[]).await["field"],
        "code.record"
    );
    t["log"].as_object_mut().unwrap().remove("module_record");
    assert_eq!(
        diverges(tmp.path(), &url, &game, &t, &[]).await["field"],
        "code.record"
    );

    let (_, mnk) = get(&format!("{url}/v1/modules/mnk")).await;
    let mnk_wasm = client
        .code(mnk["code_hash"].as_str().unwrap())
        .await
        .unwrap();
    let txid = client.deploy(&alice, "ttt2", &mnk_wasm).await.unwrap();
    let upgraded = client.wait_for_receipt(&txid, WAIT).await.unwrap();
    assert!(upgraded.receipt.ok, "{:?}", upgraded.receipt);
    let (status, e) = get(&format!("{url}/v1/games/ttt2/{id}/transcript")).await;
    assert_eq!(
        (status, e["error"]["code"].as_str()),
        (409, Some("conflict")),
        "{e}"
    );
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("was upgraded at height"),
        "{e}"
    );
}

/// A dice duel (`docs/randomness.md`): its transcript (version 2) holds the roll as a step of a
/// scheduled call, which re-executes from the verifier's own queue with the header's beacon.
/// Other dice, a beacon the sequencer signs for another height (the header re-signed with the
/// sequencer's real key), a call id the game never scheduled and a dropped roll are all caught.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dice_roll_verifies_and_forged_dice_or_beacons_are_caught() {
    let tmp = tempfile::tempdir().unwrap();
    let mut node = NodeProcess::new(tmp.path(), "");
    node.start().await;
    let (dir, url, client) = (tmp.path(), node.url(), node.client());
    let [alice, bob] = funded_players(&client).await;
    let created = op(
        &client,
        &alice,
        "dice",
        json!({"kind": "create", "stake": "300"}),
    )
    .await;
    let id = created[0]["data"]["id"].as_str().unwrap().to_string();
    op(&client, &bob, "dice", json!({"kind": "join", "id": id})).await;
    let game = format!("dice:{id}");
    let started = std::time::Instant::now();
    loop {
        let g = client.view("dice", &[("id", &id)]).await.unwrap();
        if g["status"] == "finished" {
            break;
        }
        assert!(started.elapsed() < WAIT, "the roll never ran: {g}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (status, transcript) = get(&format!("{url}/v1/games/dice/{id}/transcript")).await;
    assert_eq!(status, 200, "{transcript}");
    assert_eq!(transcript["version"], 2, "{transcript}");
    assert!(transcript["beacon_key"].is_string());
    let call = transcript["steps"][2].clone();
    assert_eq!(call["call"]["module"], "dice", "{call}");
    assert!(call.get("txid").is_none(), "{call}");
    let (code, report) = verify(dir, &url, &game, &["--complete"]).await;
    assert_eq!(
        (code, report["result"].as_str()),
        (0, Some("verified")),
        "{report}"
    );
    assert_eq!(report["steps"][2]["call"], call["call"]["id"], "{report}");

    let tamper = |f: &dyn Fn(&mut Value)| {
        let mut t = transcript.clone();
        f(&mut t);
        t
    };
    // Other dice in the roll's receipt: no longer the leaf under the signed receipt root.
    let d = diverges(
        dir,
        &url,
        &game,
        // Each die moved by one ([6, 6] would be no change 1 time in 36).
        &tamper(&|t| {
            let dice = &mut t["steps"][2]["receipt"]["events"][0]["data"]["x_dice"];
            let moved: Vec<u64> = dice
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_u64().unwrap() % 6 + 1)
                .collect();
            *dice = json!(moved);
        }),
        &[],
    )
    .await;
    assert_eq!(
        (d["index"].as_u64(), d["field"].as_str()),
        (Some(2), Some("receipt_proof")),
        "{d}"
    );
    // A lying sequencer: the roll's header carries the beacon of another height, signed with
    // the real beacon key, and the header re-signed with the real sequencer key.
    let data = dir.join("data");
    let seq = gamechain_client::read_key_file(&data.join("sequencer.wif")).unwrap();
    let beacon_hex = std::fs::read_to_string(data.join("beacon.key")).unwrap();
    let beacon_key = gamechain_runtime::chain::BeaconSecretKey::from_bytes(
        &hex::decode(beacon_hex.trim()).unwrap(),
    )
    .unwrap();
    let chain_id = client.chain_id().await.unwrap();
    let d = diverges(
        dir,
        &url,
        &game,
        &tamper(&|t| {
            let mut signed: SignedHeader =
                serde_json::from_value(t["steps"][2]["header"].clone()).unwrap();
            let h = signed.header.height;
            signed.header.beacon = Some(beacon_key.sign(&chain_id, h + 1));
            t["steps"][2]["header"] =
                serde_json::to_value(SignedHeader::sign(signed.header, &seq)).unwrap();
        }),
        &[],
    )
    .await;
    assert_eq!(
        (d["index"].as_u64(), d["field"].as_str()),
        (Some(2), Some("header.beacon")),
        "{d}"
    );
    // A call the game never scheduled.
    let d = diverges(
        dir,
        &url,
        &game,
        &tamper(&|t| {
            let id = t["steps"][2]["call"]["id"].as_u64().unwrap();
            t["steps"][2]["call"]["id"] = json!(id ^ 1);
        }),
        &[],
    )
    .await;
    assert_eq!(d["index"].as_u64(), Some(2), "{d}");
    assert_eq!(d["field"], "receipt_proof", "{d}");
    // The roll dropped: the transcript still says finished.
    let d = diverges(
        dir,
        &url,
        &game,
        &tamper(&|t| {
            t["steps"].as_array_mut().unwrap().pop();
        }),
        &[],
    )
    .await;
    assert_eq!(d["field"], "finished", "{d}");
}
