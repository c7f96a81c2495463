//! Upgrade policies against a real `gamechain node` process: on the default chain nobody (not
//! even the sequencer's key) can upgrade the channel that holds the stakes (the issue's first
//! attack: the key that deployed `channel` upgraded it to code whose migration sent every
//! escrowed stake to itself); an immutable module refuses every upgrade; a timelocked module's
//! upgrade is announced, listed (`?pending=1`) and evented, cannot take effect before its delay
//! of block time (the node's dev clock moves it, no test waits in real time), can be cancelled,
//! and takes effect after; a policy only tightens; the CLI refuses to escrow a stake in a module
//! whose owner can change it at once unless told `--allow-mutable`. After every block these tests
//! make, the GOLD of every account they know plus every module's escrow equals what the faucet
//! minted (the chains have no fees): nothing moves money but the games.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use crate::common::cli::{failed, json_ok, run, run_on, text};
use crate::common::{faucet, NodeProcess};
use gamechain_client::client::{BlockRef, Client, ClientError, Included};
use gamechain_client::read_key_file;
use gamechain_ledger::genesis_modules::{genesis_code, GENESIS_MODULES};
use gamechain_ledger::genesis_setup::TICTACTOE_WASM;
use gamechain_runtime::chain::{Action, Network, SecretKey, UpgradePolicy};
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(30);
const HOUR_MS: u64 = 3_600_000;

/// `code` with a custom section carrying `n` appended: valid wasm that loads and plays like
/// `code`, under another code hash.
fn variant(code: &[u8], n: u8) -> Vec<u8> {
    let mut out = code.to_vec();
    // Custom section (id 0), 3 bytes: name length 1, name "v", payload n.
    out.extend_from_slice(&[0, 3, 1, b'v', n]);
    out
}

/// What the chain's GOLD must add up to: the faucet's mints, read from every block.
struct Conservation {
    checked: u64,
    minted: u128,
    accounts: BTreeSet<String>,
}

impl Conservation {
    fn new() -> Self {
        Conservation {
            checked: 0,
            minted: 0,
            accounts: BTreeSet::new(),
        }
    }

    /// Reads the blocks since the last check (senders, recipients, faucet mints), then checks
    /// that the balances of every account seen and every module's escrow add up to the mints.
    async fn check(&mut self, client: &Client) {
        let head = client.status().await.unwrap().height;
        for h in self.checked + 1..=head {
            let block = client.block(BlockRef::Height(h)).await.unwrap();
            for tx in &block.txs {
                let body = gamechain_runtime::chain::TxBody::parse(tx.tx.body()).unwrap();
                self.accounts.insert(body.from.clone());
                for e in &tx.receipt.events {
                    if e.kind == "faucet" {
                        self.minted += e.data["amount"].as_str().unwrap().parse::<u128>().unwrap();
                    }
                    for field in ["to", "from", "winner", "player"] {
                        if let Some(a) = e.data.get(field).and_then(Value::as_str) {
                            if a.starts_with('x') || a.starts_with('y') {
                                self.accounts.insert(a.to_string());
                            }
                        }
                    }
                }
            }
        }
        self.checked = head;
        let mut total = 0u128;
        for a in &self.accounts {
            total += client.account(a).await.unwrap().balance("GOLD").0;
        }
        for m in client.modules().await.unwrap() {
            let escrow = format!("module:{}", m.id);
            total += client.account(&escrow).await.unwrap().balance("GOLD").0;
        }
        assert_eq!(
            total, self.minted,
            "at height {head}, the GOLD of every account and escrow is what the faucet minted"
        );
    }
}

/// Sends `action` from `key` and waits for its block; the receipt.
async fn send(client: &Client, key: &SecretKey, action: Action) -> Included {
    client.send_and_wait(key, action, WAIT).await.unwrap()
}

async fn send_ok(client: &Client, key: &SecretKey, action: Action) -> Included {
    let included = send(client, key, action).await;
    assert!(included.receipt.ok, "{:?}", included.receipt);
    included
}

/// The error of sending `action` from `key`, which the node must refuse at admission.
async fn refused(client: &Client, key: &SecretKey, action: Action) -> (u16, String, String) {
    match client.send(key, action).await {
        Err(ClientError::Api {
            status,
            code,
            message,
        }) => (status, code, message),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// `GET <url><path>` as raw JSON.
async fn get_json(url: &str, path: &str) -> Value {
    reqwest::get(format!("{url}{path}"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

async fn funded(client: &Client, books: &mut Conservation) -> SecretKey {
    let key = SecretKey::generate(Network::Testnet);
    send_ok(client, &key, faucet()).await;
    books.check(client).await;
    key
}

fn deploy_with(module: &str, code: &[u8], policy: UpgradePolicy) -> Action {
    Action::Deploy {
        module: module.into(),
        code: code.to_vec(),
        policy: Some(policy),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nobody_can_upgrade_the_channel_on_the_default_chain() {
    let dir = tempfile::tempdir().unwrap();
    let mut node = NodeProcess::new(dir.path(), "");
    node.start().await;
    let (client, url) = (node.client(), node.url());
    let mut books = Conservation::new();

    // Every game is at genesis, immutable, nobody's: nothing was deployed.
    let modules = client.modules().await.unwrap();
    let ids: Vec<&str> = modules.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "auction",
            "channel",
            "dice",
            "mnk",
            "moveboard",
            "rps_rules",
            "sealed_rps",
            "tictactoe",
            "ttt_rules"
        ]
    );
    for m in &modules {
        assert_eq!(m.policy, UpgradePolicy::Immutable, "{}", m.id);
        assert_eq!((m.owner.as_str(), m.deployed_height), ("system", 0));
        assert_eq!(m.code_hash, genesis_code(&m.id).unwrap().code_hash());
        assert!(m.pending_upgrade.is_none());
    }
    let raw = get_json(&url, "/v1/modules/channel").await;
    assert_eq!(raw["policy"], json!({"kind": "immutable"}));
    assert_eq!(raw["pending_upgrade"], Value::Null);
    assert_eq!(
        get_json(&url, "/v1/modules?pending=1").await,
        json!({"modules": []})
    );

    // A player escrows a stake in the channel.
    let alice = funded(&client, &mut books).await;
    let offer =
        json!({"kind": "offer", "rules": "ttt_rules", "stake": "100", "window_ms": 300_000});
    send_ok(&client, &alice, Action::game("channel", &offer)).await;
    books.check(&client).await;
    let escrow = client
        .account("module:channel")
        .await
        .unwrap()
        .balance("GOLD");
    assert_eq!(escrow.0, 100);

    // Any key, the sequencer's too, is refused at admission (no nonce used), whatever it sends.
    let sequencer = read_key_file(&dir.path().join("data/sequencer.wif")).unwrap();
    let mallory = funded(&client, &mut books).await;
    let thief = variant(GENESIS_MODULES[3].wasm, 1);
    for key in [&sequencer, &mallory, &alice] {
        let nonce = client.account(&key.address()).await.unwrap().next_nonce;
        for action in [
            Action::deploy("channel", thief.clone()),
            deploy_with("channel", &thief, UpgradePolicy::Owner),
            Action::SetPolicy {
                module: "channel".into(),
                policy: UpgradePolicy::Owner,
            },
            Action::CancelUpgrade {
                module: "channel".into(),
            },
        ] {
            let (status, code, message) = refused(&client, key, action).await;
            assert_eq!(
                (status, code.as_str()),
                (403, "upgrade_refused"),
                "{message}"
            );
            assert!(message.starts_with("module channel is"), "{message}");
        }
        assert_eq!(
            client.account(&key.address()).await.unwrap().next_nonce,
            nonce,
            "a refused upgrade costs no nonce"
        );
    }
    // The CLI says the same.
    std::fs::write(dir.path().join("thief.wasm"), &thief).unwrap();
    std::fs::write(
        dir.path().join("mallory.wif"),
        format!("{}\n", mallory.to_wif()),
    )
    .unwrap();
    failed(
        "deploy over the genesis channel",
        &run_on(
            dir.path(),
            &url,
            &[
                "module",
                "deploy",
                "thief.wasm",
                "--id",
                "channel",
                "--key",
                "mallory.wif",
            ],
        )
        .await,
        1,
        "upgrade_refused: module channel is a genesis module and cannot be upgraded",
    );
    let activate = send(
        &client,
        &mallory,
        Action::ActivateUpgrade {
            module: "channel".into(),
        },
    )
    .await;
    assert_eq!(
        activate.receipt.error.as_deref(),
        Some("invalid: module channel has no pending upgrade")
    );
    books.check(&client).await;
    let channel = client.module("channel").await.unwrap();
    assert_eq!(channel.code_hash, GENESIS_MODULES[2].code_hash());
    assert_eq!(
        client
            .account("module:channel")
            .await
            .unwrap()
            .balance("GOLD"),
        escrow,
        "the stake is where it was"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_immutable_module_refuses_every_upgrade_even_its_deployers() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    let mut node = NodeProcess::new(cwd, "genesis_modules = []");
    node.start().await;
    let (client, url) = (node.client(), node.url());
    assert!(
        client.modules().await.unwrap().is_empty(),
        "an empty genesis"
    );
    let mut books = Conservation::new();
    let out = run(cwd, &["key", "new", "--out", "carol.wif"]).await;
    let carol = text(&out.stdout).trim().to_string();
    json_ok(
        "faucet",
        &run_on(cwd, &url, &["faucet", "--key", "carol.wif"]).await,
    );
    books.check(&client).await;
    std::fs::write(cwd.join("ttt.wasm"), TICTACTOE_WASM).unwrap();
    std::fs::write(cwd.join("ttt2.wasm"), variant(TICTACTOE_WASM, 2)).unwrap();
    let deploy = |file: &'static str, extra: &'static [&'static str]| {
        let mut args = vec![
            "module",
            "deploy",
            file,
            "--id",
            "fixed",
            "--key",
            "carol.wif",
        ];
        args.extend_from_slice(extra);
        args
    };
    let receipt = json_ok(
        "deploy immutable",
        &run_on(cwd, &url, &deploy("ttt.wasm", &["--policy", "immutable"])).await,
    );
    assert_eq!(
        receipt["events"][0]["data"]["policy"],
        json!({"kind": "immutable"})
    );
    books.check(&client).await;
    let shown = json_ok(
        "module show",
        &run_on(cwd, &url, &["module", "show", "fixed"]).await,
    );
    assert_eq!(shown["policy"], json!({"kind": "immutable"}));
    assert_eq!(shown["owner"], carol.as_str());
    assert_eq!(shown["pending_upgrade"], Value::Null);

    failed(
        "its deployer upgrades it",
        &run_on(cwd, &url, &deploy("ttt2.wasm", &[])).await,
        1,
        "upgrade_refused: module fixed is immutable and cannot be upgraded",
    );
    failed(
        "its deployer loosens it",
        &run_on(
            cwd,
            &url,
            &[
                "module",
                "policy",
                "fixed",
                "timelocked:1h",
                "--key",
                "carol.wif",
            ],
        )
        .await,
        1,
        "upgrade_refused: module fixed is immutable: its policy cannot change",
    );
    failed(
        "its deployer cancels nothing",
        &run_on(
            cwd,
            &url,
            &["module", "cancel-upgrade", "fixed", "--key", "carol.wif"],
        )
        .await,
        1,
        "upgrade_refused: module fixed is immutable and has no upgrades",
    );
    let key = read_key_file(&cwd.join("carol.wif")).unwrap();
    assert_eq!(client.account(&key.address()).await.unwrap().next_nonce, 2);
    books.check(&client).await;
    assert_eq!(
        client.module("fixed").await.unwrap().code_hash,
        hex::encode(<sha2::Sha256 as sha2::Digest>::digest(TICTACTOE_WASM))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timelocked_upgrade_is_listed_evented_cancellable_and_waits_out_its_delay() {
    let dir = tempfile::tempdir().unwrap();
    let mut node = NodeProcess::new(
        dir.path(),
        "genesis_modules = []\ndev_clock = true\nblock_interval_ms = 250",
    );
    node.start().await;
    let (client, url) = (node.client(), node.url());
    let mut books = Conservation::new();
    let (owner, bob) = (
        funded(&client, &mut books).await,
        funded(&client, &mut books).await,
    );
    send_ok(
        &client,
        &owner,
        deploy_with(
            "slow",
            TICTACTOE_WASM,
            UpgradePolicy::Timelocked { delay_ms: HOUR_MS },
        ),
    )
    .await;
    books.check(&client).await;
    // Bob stakes in it: timelocked, so he can leave before any upgrade.
    let create = send_ok(
        &client,
        &bob,
        Action::game("slow", &json!({"kind": "create", "stake": "100"})),
    )
    .await;
    books.check(&client).await;
    let game = create.receipt.events[0].data["id"]
        .as_str()
        .unwrap()
        .to_string();

    // Announced: listed, evented, and the module keeps its code.
    let v2 = variant(TICTACTOE_WASM, 2);
    let v2_hash = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&v2));
    let announce = send_ok(&client, &owner, Action::deploy("slow", v2.clone())).await;
    books.check(&client).await;
    let event = &announce.receipt.events[0];
    assert_eq!(event.kind, "upgrade_announced");
    let announced_at = event.data["announced_at_ms"].as_u64().unwrap();
    let due = announced_at + HOUR_MS;
    assert_eq!(event.data["activates_at_ms"], json!(due));
    assert_eq!(event.data["code_hash"], v2_hash.as_str());
    let pending = get_json(&url, "/v1/modules?pending=1").await;
    assert_eq!(pending["modules"].as_array().unwrap().len(), 1);
    assert_eq!(pending["modules"][0]["id"], "slow");
    assert_eq!(
        pending["modules"][0]["pending_upgrade"],
        json!({"code_hash": v2_hash, "announced_at_ms": announced_at, "activates_at_ms": due})
    );
    assert_eq!(
        pending["modules"][0]["policy"],
        json!({"kind": "timelocked", "delay_ms": HOUR_MS})
    );
    assert_eq!(client.pending_upgrades().await.unwrap().len(), 1);
    let old_hash = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(TICTACTOE_WASM));
    assert_eq!(client.module("slow").await.unwrap().code_hash, old_hash);

    // Too early, for anyone.
    for key in [&bob, &owner] {
        let early = send(
            &client,
            key,
            Action::ActivateUpgrade {
                module: "slow".into(),
            },
        )
        .await;
        let error = early.receipt.error.unwrap();
        assert!(
            error.starts_with(&format!(
                "invalid: the upgrade of module slow to code {v2_hash} may be activated from block time {due} ms"
            )),
            "{error}"
        );
    }
    books.check(&client).await;
    // Bob leaves in time: he cancels his open table and has his stake back.
    send_ok(
        &client,
        &bob,
        Action::game("slow", &json!({"kind": "cancel", "id": game})),
    )
    .await;
    books.check(&client).await;

    node.advance_clock(HOUR_MS).await;
    let activated = send_ok(
        &client,
        &bob,
        Action::ActivateUpgrade {
            module: "slow".into(),
        },
    )
    .await;
    books.check(&client).await;
    assert_eq!(activated.receipt.events[0].kind, "upgrade_activated");
    assert_eq!(
        activated.receipt.events[0].data,
        json!({"code_hash": v2_hash, "from_code_hash": old_hash, "module": "slow"})
    );
    let record = client.module("slow").await.unwrap();
    assert_eq!(
        (record.code_hash.as_str(), record.pending_upgrade),
        (v2_hash.as_str(), None)
    );
    assert_eq!(record.upgraded_height, Some(activated.height));
    assert_eq!(
        get_json(&url, "/v1/modules?pending=1").await,
        json!({"modules": []})
    );

    // Announced again, then cancelled: only by the owner.
    let v3 = variant(TICTACTOE_WASM, 3);
    send_ok(&client, &owner, Action::deploy("slow", v3)).await;
    books.check(&client).await;
    let (status, code, message) = refused(
        &client,
        &bob,
        Action::CancelUpgrade {
            module: "slow".into(),
        },
    )
    .await;
    assert_eq!(
        (status, code.as_str()),
        (403, "upgrade_refused"),
        "{message}"
    );
    let cancelled = send_ok(
        &client,
        &owner,
        Action::CancelUpgrade {
            module: "slow".into(),
        },
    )
    .await;
    books.check(&client).await;
    assert_eq!(cancelled.receipt.events[0].kind, "upgrade_cancelled");
    node.advance_clock(2 * HOUR_MS).await;
    let nothing = send(
        &client,
        &bob,
        Action::ActivateUpgrade {
            module: "slow".into(),
        },
    )
    .await;
    assert_eq!(
        nothing.receipt.error.as_deref(),
        Some("invalid: module slow has no pending upgrade")
    );
    books.check(&client).await;
    assert_eq!(client.module("slow").await.unwrap().code_hash, v2_hash);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_only_tightens() {
    let dir = tempfile::tempdir().unwrap();
    let mut node = NodeProcess::new(dir.path(), "genesis_modules = []");
    node.start().await;
    let client = node.client();
    let mut books = Conservation::new();
    let (owner, other) = (
        funded(&client, &mut books).await,
        funded(&client, &mut books).await,
    );
    send_ok(
        &client,
        &owner,
        Action::deploy("tight", TICTACTOE_WASM.to_vec()),
    )
    .await;
    assert_eq!(
        client.module("tight").await.unwrap().policy,
        UpgradePolicy::Owner
    );
    let set = |policy| Action::SetPolicy {
        module: "tight".into(),
        policy,
    };
    let hour = UpgradePolicy::Timelocked { delay_ms: HOUR_MS };
    let (status, code, _) = refused(&client, &other, set(hour)).await;
    assert_eq!((status, code.as_str()), (403, "upgrade_refused"));
    let r = send_ok(&client, &owner, set(hour)).await;
    books.check(&client).await;
    assert_eq!(r.receipt.events[0].kind, "policy_set");
    assert_eq!(
        r.receipt.events[0].data,
        json!({"module": "tight", "policy": {"kind": "timelocked", "delay_ms": HOUR_MS},
               "previous": {"kind": "owner"}})
    );
    for looser in [
        UpgradePolicy::Owner,
        UpgradePolicy::Timelocked {
            delay_ms: HOUR_MS / 2,
        },
        hour,
    ] {
        let (status, code, message) = refused(&client, &owner, set(looser)).await;
        assert_eq!(
            (status, code.as_str()),
            (403, "upgrade_refused"),
            "{message}"
        );
        assert!(
            message.contains("a policy can only be tightened"),
            "{message}"
        );
    }
    send_ok(
        &client,
        &owner,
        set(UpgradePolicy::Timelocked {
            delay_ms: 2 * HOUR_MS,
        }),
    )
    .await;
    send_ok(&client, &owner, set(UpgradePolicy::Immutable)).await;
    books.check(&client).await;
    let (status, code, message) = refused(&client, &owner, set(hour)).await;
    assert_eq!((status, code.as_str()), (403, "upgrade_refused"));
    assert_eq!(
        message,
        "module tight is immutable: its policy cannot change"
    );
    assert_eq!(
        client.module("tight").await.unwrap().policy,
        UpgradePolicy::Immutable
    );
}

/// `gamechain game <module> <op> --key <who>.wif` in `cwd`, plus `extra`.
async fn game(
    cwd: &Path,
    url: &str,
    who: &str,
    module: &str,
    op: &str,
    extra: &[&str],
) -> std::process::Output {
    let key = format!("{who}.wif");
    let mut args = vec!["game", module, op, "--key", &key];
    args.extend_from_slice(extra);
    run_on(cwd, url, &args).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_refuses_to_stake_in_a_module_its_owner_can_change_at_once() {
    // A chain whose operator deploys tic-tac-toe and the channel itself (its genesis holds the
    // rules and the move board only).
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    let mut node = NodeProcess::new(cwd, r#"genesis_modules = ["ttt_rules", "moveboard"]"#);
    node.start().await;
    let (client, url) = (node.client(), node.url());
    let mut books = Conservation::new();
    for name in ["alice", "bob", "carol"] {
        let file = format!("{name}.wif");
        run(cwd, &["key", "new", "--out", &file]).await;
        json_ok(
            "faucet",
            &run_on(cwd, &url, &["faucet", "--key", &file]).await,
        );
    }
    books.check(&client).await;
    // Carol deploys tic-tac-toe and the channel with the default policy (owner), m,n,k immutable.
    let code = |id: &str| genesis_code(id).unwrap().wasm;
    for id in ["tictactoe", "channel", "mnk"] {
        std::fs::write(cwd.join(format!("{id}.wasm")), code(id)).unwrap();
    }
    for (file, id, policy) in [
        ("tictactoe.wasm", "tictactoe", "owner"),
        ("channel.wasm", "channel", "owner"),
        ("mnk.wasm", "mnk", "immutable"),
        ("tictactoe.wasm", "quick", "timelocked:1m"),
    ] {
        let deploy = [
            "module",
            "deploy",
            file,
            "--id",
            id,
            "--key",
            "carol.wif",
            "--policy",
            policy,
        ];
        json_ok("deploy", &run_on(cwd, &url, &deploy).await);
    }
    books.check(&client).await;
    let carol = read_key_file(&cwd.join("carol.wif")).unwrap().address();
    let alice = read_key_file(&cwd.join("alice.wif")).unwrap().address();

    let create = r#"{"kind":"create","stake":"100"}"#;
    let out = game(cwd, &url, "alice", "tictactoe", create, &[]).await;
    failed(
        "a stake in an owner-policy module",
        &out,
        1,
        &format!("refusing to escrow a stake of 100 in module tictactoe: its policy is `owner`, so its owner {carol}"),
    );
    assert!(text(&out.stderr).contains("--allow-mutable"));
    // A timelock too short to leave in is refused as well (the attacker's 1 ms timelock).
    failed(
        "a stake in a module timelocked for a minute",
        &game(cwd, &url, "alice", "quick", create, &[]).await,
        1,
        "refusing to escrow a stake of 100 in module quick: its policy is `timelocked` with a delay of 60000 ms",
    );
    assert_eq!(
        client.account(&alice).await.unwrap().next_nonce,
        1,
        "nothing was sent"
    );
    // Unstaked, or staked in an immutable module: no question asked.
    json_ok(
        "unstaked",
        &game(cwd, &url, "alice", "tictactoe", r#"{"kind":"create"}"#, &[]).await,
    );
    let mnk = r#"{"kind":"create","rows":3,"cols":3,"k":3,"stake":"100"}"#;
    json_ok(
        "immutable",
        &game(cwd, &url, "alice", "mnk", mnk, &[]).await,
    );
    books.check(&client).await;
    // Said explicitly: allowed.
    let receipt = json_ok(
        "--allow-mutable",
        &game(
            cwd,
            &url,
            "alice",
            "tictactoe",
            create,
            &["--allow-mutable"],
        )
        .await,
    );
    books.check(&client).await;
    assert_eq!(
        client
            .account("module:tictactoe")
            .await
            .unwrap()
            .balance("GOLD")
            .0,
        100
    );
    let id = receipt["events"][0]["data"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let join = format!(r#"{{"kind":"join","id":"{id}"}}"#);
    failed(
        "joining a staked table of an owner-policy module",
        &game(cwd, &url, "bob", "tictactoe", &join, &[]).await,
        1,
        "refusing to escrow a stake of 100 in module tictactoe",
    );
    json_ok(
        "join with --allow-mutable",
        &game(cwd, &url, "bob", "tictactoe", &join, &["--allow-mutable"]).await,
    );
    books.check(&client).await;
    assert_eq!(
        client
            .account("module:tictactoe")
            .await
            .unwrap()
            .balance("GOLD")
            .0,
        200
    );

    // The channel CLI: a staked offer in carol's channel is refused unless said explicitly.
    let offer = |extra: &'static [&'static str]| {
        let mut args = vec![
            "channel",
            "offer",
            "--rules",
            "ttt_rules",
            "--stake",
            "100",
            "--window",
            "10m",
            "--key",
            "alice.wif",
            "--dir",
            "alice-moves",
        ];
        args.extend_from_slice(extra);
        args
    };
    failed(
        "a channel offer in an owner-policy channel",
        &run_on(cwd, &url, &offer(&[])).await,
        1,
        &format!("refusing to escrow a stake of 100 in module channel: its policy is `owner`, so its owner {carol}"),
    );
    assert_eq!(
        client
            .account("module:channel")
            .await
            .unwrap()
            .balance("GOLD")
            .0,
        0
    );
    let out = run_on(cwd, &url, &offer(&["--allow-mutable"])).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    books.check(&client).await;
    assert_eq!(
        client
            .account("module:channel")
            .await
            .unwrap()
            .balance("GOLD")
            .0,
        100
    );
}
