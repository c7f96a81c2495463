//! Helpers of the replay tests (`verify.rs`, `follower.rs`): a game workload sent to a node
//! over HTTP, and running `gamechain verify` / `export` and reading their JSON.

#![allow(dead_code, reason = "each test file uses a different part")]

use std::path::Path;
use std::process::Output;

use gamechain_node::client::Client;
use gamechain_runtime::chain::{Action, Network, SecretKey};
use gamechain_sdk::Amount;
use serde_json::{json, Value};

use crate::common::gamechain;

fn game(op: Value) -> Action {
    Action::game("tictactoe", &op)
}

/// One game between two fresh keys, every transaction sent without waiting (the mempool keeps
/// arrival order, and each key's nonces follow): faucets, a staked create, a join, a rejected
/// move out of turn, a move on a taken cell, moves until `x` wins on the top row, a transfer
/// back and a move after the end. Returns the txid of the last transaction.
pub async fn play_one_game(client: &Client, stake: u32) -> String {
    let (x, o) = (
        SecretKey::generate(Network::Testnet),
        SecretKey::generate(Network::Testnet),
    );
    let faucet = || Action::Faucet {
        token: "GOLD".into(),
    };
    client.send(&x, faucet()).await.unwrap();
    client.send(&o, faucet()).await.unwrap();
    let create = client
        .send(
            &x,
            game(json!({"kind": "create", "stake": stake.to_string()})),
        )
        .await
        .unwrap();
    let id = &create[..16];
    let mv = |cell: u32| game(json!({"kind": "move", "id": id, "cell": cell}));
    client
        .send(&o, game(json!({"kind": "join", "id": id})))
        .await
        .unwrap();
    client.send(&o, mv(4)).await.unwrap(); // not your turn
    client.send(&x, mv(0)).await.unwrap();
    client.send(&o, mv(0)).await.unwrap(); // cell is taken
    client.send(&o, mv(4)).await.unwrap();
    client.send(&x, mv(1)).await.unwrap();
    client.send(&o, mv(8)).await.unwrap();
    client.send(&x, mv(2)).await.unwrap(); // x wins
    client
        .send(
            &x,
            Action::Transfer {
                to: o.address(),
                token: "GOLD".into(),
                amount: Amount(5),
            },
        )
        .await
        .unwrap();
    client.send(&o, mv(6)).await.unwrap() // game is over
}

/// `games` games at once, then waits until the last transaction of each is included.
pub async fn workload(client: &Client, games: usize) {
    let mut tasks = Vec::new();
    for i in 0..games {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            play_one_game(&client, 10 + i as u32).await
        }));
    }
    for t in tasks {
        let last = t.await.unwrap();
        let included = client
            .wait_for_receipt(&last, std::time::Duration::from_secs(30))
            .await
            .unwrap();
        assert!(!included.receipt.ok, "the move after the end fails");
    }
}

/// Runs `gamechain <args>` on a blocking thread.
pub async fn run(cwd: &Path, args: &[&str]) -> Output {
    let (cwd, args) = (
        cwd.to_path_buf(),
        args.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
    );
    tokio::task::spawn_blocking(move || {
        gamechain(
            &cwd,
            None,
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
        )
    })
    .await
    .unwrap()
}

/// `gamechain verify <source...> --json`: the exit code and the report.
pub async fn verify_json(cwd: &Path, source: &[&str]) -> (i32, Value) {
    let mut args = vec!["verify"];
    args.extend_from_slice(source);
    args.push("--json");
    let out = run(cwd, &args).await;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let report = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "verify {source:?}: stdout is not JSON ({e}): {stdout}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), report)
}
