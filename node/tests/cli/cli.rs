//! The `gamechain` client commands as a user types them, against a `gamechain node` process:
//! key files, sending (faucet, transfer, game, raw action, `--no-wait`), the read commands,
//! `GAMECHAIN_NODE`, and the one-line errors and exit codes (1 failure, 2 bad arguments,
//! 3 transaction included with `ok: false`).

use crate::common;

use crate::common::cli::{failed, json_ok, run_on as run, text};
use crate::common::{free_port, gamechain, NodeProcess};
use serde_json::Value;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_commands_work_and_fail_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let mut node = NodeProcess::new(dir.path(), "");
    node.start().await;
    let url = node.url();
    let cwd = dir.path();

    // Keys: the address on stdout, the WIF only in a 0600 file, never overwritten.
    let mut addresses = Vec::new();
    for name in ["alice.wif", "bob.wif"] {
        let out = tokio::task::spawn_blocking({
            let cwd = cwd.to_path_buf();
            move || gamechain(&cwd, None, &["key", "new", "--out", name])
        })
        .await
        .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        let address = text(&out.stdout).trim().to_string();
        assert!(
            address.starts_with('x') || address.starts_with('y'),
            "{address}"
        );
        let wif = std::fs::read_to_string(cwd.join(name)).unwrap();
        assert!(!text(&out.stdout).contains(wif.trim()) && !text(&out.stderr).contains(wif.trim()));
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(cwd.join(name))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o600
        );
        addresses.push(address);
    }
    let (alice, bob) = (addresses[0].clone(), addresses[1].clone());
    let again = gamechain(cwd, None, &["key", "new", "--out", "alice.wif"]);
    failed("key new over an existing file", &again, 1, "");
    assert!(text(&again.stderr).contains("already exists"));

    // Sending.
    let faucet = json_ok(
        "faucet",
        &run(cwd, &url, &["faucet", "--key", "alice.wif"]).await,
    );
    assert_eq!(
        (faucet["ok"].as_bool(), faucet["events"][0]["kind"].as_str()),
        (Some(true), Some("faucet"))
    );
    assert_eq!(faucet["txid"].as_str().unwrap().len(), 64);
    let transfer = run(
        cwd,
        &url,
        &[
            "transfer",
            "--key",
            "alice.wif",
            "--to",
            &bob,
            "--amount",
            "250",
        ],
    )
    .await;
    assert_eq!(json_ok("transfer", &transfer)["ok"], true);
    let account = json_ok("account", &run(cwd, &url, &["account", &alice]).await);
    assert_eq!(
        (
            account["balances"]["GOLD"].as_str(),
            account["nonce"].as_u64()
        ),
        (Some("99750"), Some(2))
    );
    assert_eq!(
        json_ok("account bob", &run(cwd, &url, &["account", &bob]).await)["balances"]["GOLD"],
        "250"
    );

    let create = run(
        cwd,
        &url,
        &[
            "game",
            "tictactoe",
            "--key",
            "alice.wif",
            r#"{"kind":"create","stake":"100"}"#,
        ],
    )
    .await;
    let create = json_ok("game create", &create);
    let id = create["txid"].as_str().unwrap()[..16].to_string();
    assert_eq!(
        create["events"][0]["data"]["id"].as_str(),
        Some(id.as_str())
    );
    let game = json_ok(
        "view id",
        &run(cwd, &url, &["view", "tictactoe", &format!("id={id}")]).await,
    );
    assert_eq!(game["status"], "open");
    let open = json_ok(
        "view open",
        &run(cwd, &url, &["view", "tictactoe", "open=1"]).await,
    );
    assert!(
        open["games"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["id"] == id.as_str()),
        "{open}"
    );

    // A transaction that is included but fails: its receipt on stdout, exit code 3.
    let mv = format!(r#"{{"kind":"move","id":"{id}","cell":0}}"#);
    let out = run(cwd, &url, &["game", "tictactoe", "--key", "alice.wif", &mv]).await;
    failed(
        "a move in an open game",
        &out,
        3,
        "transaction failed: invalid: game is not in play",
    );
    let receipt: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (receipt["ok"].as_bool(), receipt["error"].as_str()),
        (Some(false), Some("invalid: game is not in play"))
    );

    // A raw action, without waiting; then the read commands.
    let sent = run(
        cwd,
        &url,
        &[
            "send",
            "--key",
            "bob.wif",
            "--no-wait",
            r#"{"type":"faucet","token":"GOLD"}"#,
        ],
    )
    .await;
    let txid = json_ok("send --no-wait", &sent)["txid"]
        .as_str()
        .unwrap()
        .to_string();
    node.client()
        .wait_for_receipt(&txid, std::time::Duration::from_secs(30))
        .await
        .unwrap();
    let tx = json_ok("tx", &run(cwd, &url, &["tx", &txid]).await);
    assert_eq!(
        (tx["status"].as_str(), tx["receipt"]["ok"].as_bool()),
        (Some("included"), Some(true))
    );
    let latest = json_ok("block latest", &run(cwd, &url, &["block"]).await);
    let height = tx["height"].as_u64().unwrap();
    let block = json_ok(
        "block N",
        &run(cwd, &url, &["block", &height.to_string()]).await,
    );
    assert_eq!(block["txs"][0]["txid"].as_str(), Some(txid.as_str()));
    assert!(latest["height"].as_u64().unwrap() >= height);
    let status = json_ok("status", &run(cwd, &url, &["status"]).await);
    assert_eq!(status["chain_id"], "gamechain-dev");
    let by_env = tokio::task::spawn_blocking({
        let (cwd, url) = (cwd.to_path_buf(), url.clone());
        move || gamechain(&cwd, Some(&url), &["status"])
    })
    .await
    .unwrap();
    assert_eq!(
        json_ok("status via GAMECHAIN_NODE", &by_env)["chain_id"],
        "gamechain-dev"
    );

    // One-line errors: the API's `code: message`, unreachable nodes, bad input, bad arguments.
    failed(
        "unknown txid",
        &run(cwd, &url, &["tx", &"0".repeat(64)]).await,
        1,
        "not_found: ",
    );
    failed(
        "bad account",
        &run(cwd, &url, &["account", "nope"]).await,
        1,
        "bad_address: ",
    );
    failed(
        "unknown view",
        &run(cwd, &url, &["view", "tictactoe", "id=0000000000000000"]).await,
        1,
        "not_found: ",
    );
    // The code is said once: `not_found: game …`, not `not_found: not found: game …`.
    let unknown = run(cwd, &url, &["view", "tictactoe", "id=0000000000000000"]).await;
    assert!(
        !text(&unknown.stderr).contains("not_found: not found"),
        "{}",
        text(&unknown.stderr)
    );
    // A bare key is the API's bare `?open`.
    let open = json_ok(
        "view open",
        &run(cwd, &url, &["view", "tictactoe", "open"]).await,
    );
    assert_eq!(
        open,
        json_ok(
            "view open=",
            &run(cwd, &url, &["view", "tictactoe", "open="]).await
        )
    );
    // A reader that closed its end of the pipe (`| head -c 10`) ends the command quietly.
    let closed_pipe = tokio::task::spawn_blocking({
        let (cwd, url) = (cwd.to_path_buf(), url.clone());
        move || {
            let mut child = std::process::Command::new(common::BIN)
                .args(["block", "0", "--node", &url])
                .current_dir(&cwd)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            drop(child.stdout.take());
            child.wait_with_output().unwrap()
        }
    })
    .await
    .unwrap();
    assert_eq!(
        (closed_pipe.status.code(), text(&closed_pipe.stderr)),
        (Some(0), String::new()),
        "a closed stdout pipe"
    );

    let closed = format!("http://127.0.0.1:{}", free_port());
    failed(
        "no node",
        &run(cwd, &closed, &["status"]).await,
        1,
        "cannot reach the node",
    );
    failed(
        "bad action",
        &run(
            cwd,
            &url,
            &["send", "--key", "alice.wif", r#"{"type":"mint"}"#],
        )
        .await,
        1,
        "not an action",
    );
    failed(
        "missing key file",
        &run(cwd, &url, &["faucet", "--key", "missing.wif"]).await,
        1,
        "cannot read key file",
    );
    let bad_args = run(
        cwd,
        &url,
        &[
            "transfer",
            "--key",
            "alice.wif",
            "--to",
            &bob,
            "--amount",
            "1.5",
        ],
    )
    .await;
    assert_eq!(
        bad_args.status.code(),
        Some(2),
        "{}",
        text(&bad_args.stderr)
    );

    assert!(node.terminate(std::time::Duration::from_secs(20)).success());
}

/// `key show --key FILE`: the address `key new` printed, alone or with `--json` the network and
/// the compressed public key; never the WIF; a missing or non-WIF file is one line, exit 1.
#[test]
fn key_show_prints_the_address_of_a_key_file() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    let new = gamechain(cwd, None, &["key", "new", "--out", "k.wif"]);
    assert!(new.status.success(), "{}", text(&new.stderr));
    let address = text(&new.stdout).trim().to_string();
    let wif = std::fs::read_to_string(cwd.join("k.wif")).unwrap();

    let show = gamechain(cwd, None, &["key", "show", "--key", "k.wif"]);
    assert!(show.status.success(), "{}", text(&show.stderr));
    assert_eq!(text(&show.stdout), format!("{address}\n"));

    let shown = common::cli::json_ok(
        "key show --json",
        &gamechain(cwd, None, &["key", "show", "--key", "k.wif", "--json"]),
    );
    assert_eq!(shown["address"], address.as_str());
    assert_eq!(shown["network"], "testnet");
    let public_key = shown["public_key"].as_str().unwrap();
    assert_eq!(public_key.len(), 66, "{public_key}");
    assert!(public_key.starts_with("02") || public_key.starts_with("03"));
    assert_eq!(shown.as_object().unwrap().len(), 3, "{shown}");
    assert!(!shown.to_string().contains(wif.trim()));

    let missing = gamechain(cwd, None, &["key", "show", "--key", "none.wif"]);
    failed(
        "key show of a missing file",
        &missing,
        1,
        "cannot read key file none.wif",
    );
    std::fs::write(cwd.join("bad.wif"), "not a key\n").unwrap();
    let bad = gamechain(cwd, None, &["key", "show", "--key", "bad.wif"]);
    failed(
        "key show of a non-WIF file",
        &bad,
        1,
        "bad.wif does not hold a WIF key",
    );
}
