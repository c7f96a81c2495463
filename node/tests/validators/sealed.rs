//! Sealed moves on four validators with the threshold beacon (`docs/sealed-moves.md`): a sealed
//! rock-paper-scissors game and a sealed-bid auction, played through different validators, with
//! a player who tries every way to learn or change the other's move before the round:
//!
//! - **learn**: open the other's envelope (public in its transaction) with every beacon that
//!   exists before the round, and ask every validator for the round's block: nothing opens, no
//!   block;
//! - **copy**: hand the other's envelope in as his own (`not bound …`);
//! - **replay**: post the other's signed transaction again (refused as a duplicate);
//! - **change**: hand in a second move for a seat (`… holds a sealed move already`);
//! - **malformed**: zeros, and an envelope sealed to another round (refused);
//! - **withhold**: never seal (the seat opens void and loses).
//!
//! Both games' moves open in the block of their round, before anything else, from that block's
//! threshold beacon; results and payouts follow the rules. Afterwards every validator's data
//! directory is re-executed block by block here, checking its state roots and that the GOLD
//! held (every balance) equals GOLD's supply after **every** block, and `verify --game`
//! re-executes both games from a validator's transcript.

use super::*;
use gamechain_ledger::storage::Storage;
use gamechain_runtime::chain::seal::{self, SealContext};
use gamechain_runtime::chain::{Beacon, BeaconPublicKey, Genesis};
use gamechain_runtime::{
    genesis_state, runtime_config, Allocation, BlockBuilder, ChainContext, MemState, Modules,
    Runtime,
};

/// A move or bid of `who` sealed for `module`, `tag` and `round` of chain `chain_id`.
fn sealed(
    key: &BeaconPublicKey,
    chain_id: &str,
    module: &str,
    who: &SecretKey,
    tag: &str,
    round: u64,
    plaintext: [u8; 32],
) -> String {
    let sender = who.address();
    let ctx = SealContext {
        module,
        sender: &sender,
        tag: tag.as_bytes(),
        round,
    };
    hex::encode(seal::seal(key, chain_id, &ctx, &plaintext))
}

fn byte(b: u8) -> [u8; 32] {
    let mut p = [0u8; 32];
    p[0] = b;
    p
}

fn bid(amount: u64) -> [u8; 32] {
    let mut p = [0u8; 32];
    p[..8].copy_from_slice(&amount.to_be_bytes());
    p
}

/// The round an included op's events name (`sealed_rps.round`, `auction.created`).
fn round_of(included: &gamechain_client::Included) -> u64 {
    included
        .receipt
        .events
        .iter()
        .find_map(|e| e.data.get("round").and_then(Value::as_u64))
        .expect("an event names the round")
}

/// Sends `op` to `module` from `who` through `client`; the receipt.
async fn op(
    client: &Client,
    who: &SecretKey,
    module: &str,
    op: Value,
) -> gamechain_client::Included {
    client
        .send_and_wait(who, Action::game(module, &op), Duration::from_secs(30))
        .await
        .unwrap_or_else(|e| panic!("{module} {op}: {e}"))
}

/// The error text of a refused op (panics when it succeeded).
async fn refused(client: &Client, who: &SecretKey, module: &str, body: Value) -> String {
    let r = op(client, who, module, body.clone()).await;
    assert!(!r.receipt.ok, "{module} {body} was accepted");
    r.receipt.error.clone().unwrap_or_default()
}

/// Every block of the data directory `data` re-executed from genesis: each state root must be
/// the header's, and after each block the GOLD held by all accounts must equal GOLD's supply.
/// Returns the number of blocks checked.
fn gold_conserved_after_every_block(data: &std::path::Path) -> u64 {
    let genesis =
        Genesis::from_json(&std::fs::read_to_string(data.join("genesis.json")).unwrap()).unwrap();
    let storage = Storage::open_reader(&data.join("chain.sqlite")).unwrap();
    let codes = storage.code().unwrap();
    let runtime = Runtime::new(runtime_config(&genesis, Allocation::OnDemand)).unwrap();
    let modules = Modules::from_genesis(&runtime, &genesis, &codes).unwrap();
    let ctx = ChainContext::new(genesis.clone(), runtime, modules).unwrap();
    let g = genesis_state(&genesis, &codes).unwrap();
    let mut state = MemState {
        map: g.entries.into_iter().collect(),
    };
    let (mut hash, mut head) = (g.state_hash, g.header);
    let top = storage.head_height().unwrap().unwrap();
    for h in 1..=top {
        let block = storage
            .block(h)
            .unwrap()
            .expect("every block up to the head");
        let header = &block.header.header;
        let mut builder = BlockBuilder::new(
            &ctx,
            &state,
            &hash,
            &head,
            header.time_ms,
            header.checkpoint.clone(),
            header.beacon,
        )
        .unwrap();
        builder.set_proposer(&header.sequencer);
        for t in &block.txs {
            builder.push(&t.tx).unwrap();
        }
        let out = builder.finish().unwrap();
        assert_eq!(out.header.state_root, header.state_root, "block {h}'s root");
        state.apply(out.writes);
        hash = out.state_hash;
        head = out.header;
        let held: u128 = state
            .map
            .iter()
            .filter(|(k, _)| k.starts_with("bal/") && k.ends_with("/GOLD"))
            .map(|(_, v)| gamechain_sdk::ledger::stored_balance(Some(v)))
            .sum();
        let token: Value =
            serde_json::from_slice(state.map.get("token/GOLD").expect("GOLD exists")).unwrap();
        let supply: u128 = token["supply"].as_str().unwrap().parse().unwrap();
        assert_eq!(held, supply, "GOLD held = supply after block {h}");
    }
    top
}

/// The test (module docs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sealed_moves_on_four_validators_resist_a_player_who_tries_every_way_in() {
    let _heavy = heavy();
    let started = Instant::now();
    let phase = |what: &str| eprintln!("{what}: {:.1} s", started.elapsed().as_secs_f64());
    let tmp = tempfile::tempdir().unwrap();
    let base = common::testnet(tmp.path(), N, 100);
    let net = tmp.path().join("net");
    let mut vs = validators_of(&net, base);
    futures_util::future::join_all(vs.iter_mut().map(|v| v.start(&[]))).await;
    let genesis =
        Genesis::from_json(&std::fs::read_to_string(net.join("0/data/genesis.json")).unwrap())
            .unwrap();
    let chain_id = genesis.chain_id.clone();
    let key = genesis
        .beacon
        .clone()
        .expect("testnet names a beacon")
        .public_key;
    phase("started");

    let keys: Vec<SecretKey> = (0..4)
        .map(|_| SecretKey::generate(Network::Testnet))
        .collect();
    let (alice, bob, carol, mallory) = (&keys[0], &keys[1], &keys[2], &keys[3]);
    let clients: Vec<Client> = vs.iter().map(|v| v.client()).collect();
    for (i, k) in keys.iter().enumerate() {
        let r = clients[i]
            .send_and_wait(
                k,
                Action::Faucet {
                    token: "GOLD".into(),
                },
                Duration::from_secs(30),
            )
            .await
            .unwrap();
        assert!(r.receipt.ok);
    }

    // --- Sealed rock-paper-scissors: Alice (x, via validator 0) against Bob (o, via 1). ---
    let created = op(
        &clients[0],
        alice,
        "sealed_rps",
        serde_json::json!({"kind": "create", "stake": "100", "seal_blocks": 40}),
    )
    .await;
    let id = created.receipt.events[0].data["id"]
        .as_str()
        .unwrap()
        .to_string();
    let joined = op(
        &clients[1],
        bob,
        "sealed_rps",
        serde_json::json!({"kind": "join", "id": id}),
    )
    .await;
    assert!(joined.receipt.ok, "{:?}", joined.receipt);
    let round = round_of(&joined);
    // Carol's game with Mallory, who will withhold: same round length, other validators.
    let created = op(
        &clients[2],
        carol,
        "sealed_rps",
        serde_json::json!({"kind": "create", "stake": "100", "seal_blocks": 40}),
    )
    .await;
    let id2 = created.receipt.events[0].data["id"]
        .as_str()
        .unwrap()
        .to_string();
    let joined2 = op(
        &clients[3],
        mallory,
        "sealed_rps",
        serde_json::json!({"kind": "join", "id": id2}),
    )
    .await;
    assert!(joined2.receipt.ok, "{:?}", joined2.receipt);
    let round2 = round_of(&joined2);

    let x_move = sealed(
        &key,
        &chain_id,
        "sealed_rps",
        alice,
        &format!("{id}/x"),
        round,
        byte(2),
    );
    let alice_move = op(
        &clients[0],
        alice,
        "sealed_rps",
        serde_json::json!({"kind": "move", "id": id, "sealed": x_move}),
    )
    .await;
    assert!(alice_move.receipt.ok, "{:?}", alice_move.receipt);
    let carol_move = sealed(
        &key,
        &chain_id,
        "sealed_rps",
        carol,
        &format!("{id2}/x"),
        round2,
        byte(1),
    );
    assert!(
        op(
            &clients[2],
            carol,
            "sealed_rps",
            serde_json::json!({"kind": "move", "id": id2, "sealed": carol_move})
        )
        .await
        .receipt
        .ok
    );
    phase("both games seated, Alice and Carol sealed");

    // Bob tries to learn Alice's move: her envelope is public in her transaction.
    let tx = clients[1].tx(&alice_move.txid).await.unwrap();
    let body = serde_json::to_value(&tx).unwrap();
    assert!(body.to_string().contains(&x_move), "the envelope is public");
    let envelope = hex::decode(&x_move).unwrap();
    let head = clients[1].status().await.unwrap().height;
    assert!(head < round, "the round is still ahead ({head} < {round})");
    for h in 1..=head {
        let b = clients[1]
            .block(gamechain_client::client::BlockRef::Height(h))
            .await
            .unwrap();
        let beacon: Beacon = b.header.header.beacon.expect("every block has a beacon");
        assert_eq!(
            seal::open(&envelope, &beacon),
            None,
            "beacon of {h} opens nothing"
        );
    }
    for c in &clients {
        assert!(
            c.block(gamechain_client::client::BlockRef::Height(round))
                .await
                .is_err(),
            "no validator has the round's block yet"
        );
    }
    // Copy, replay, wrong round, malformed: all refused; Alice cannot change hers.
    let unbound = "invalid: the sealed move is not bound to this game, seat, round and player";
    assert_eq!(
        refused(
            &clients[1],
            bob,
            "sealed_rps",
            serde_json::json!({"kind": "move", "id": id, "sealed": x_move})
        )
        .await,
        unbound
    );
    let replay = clients[3].post_tx(&tx.tx).await;
    assert!(
        replay.is_err(),
        "a replayed transaction is refused: {replay:?}"
    );
    let later = sealed(
        &key,
        &chain_id,
        "sealed_rps",
        bob,
        &format!("{id}/o"),
        round + 1,
        byte(3),
    );
    assert_eq!(
        refused(
            &clients[1],
            bob,
            "sealed_rps",
            serde_json::json!({"kind": "move", "id": id, "sealed": later})
        )
        .await,
        unbound
    );
    assert_eq!(
        refused(
            &clients[2],
            bob,
            "sealed_rps",
            serde_json::json!({"kind": "move", "id": id, "sealed": "00".repeat(224)})
        )
        .await,
        "invalid: the sealed move is malformed"
    );
    let again = sealed(
        &key,
        &chain_id,
        "sealed_rps",
        alice,
        &format!("{id}/x"),
        round,
        byte(1),
    );
    assert_eq!(
        refused(
            &clients[0],
            alice,
            "sealed_rps",
            serde_json::json!({"kind": "move", "id": id, "sealed": again})
        )
        .await,
        "invalid: this sealed call holds a sealed move already"
    );
    // Bob plays rock (Alice sealed paper); Mallory withholds.
    let o_move = sealed(
        &key,
        &chain_id,
        "sealed_rps",
        bob,
        &format!("{id}/o"),
        round,
        byte(1),
    );
    assert!(
        op(
            &clients[1],
            bob,
            "sealed_rps",
            serde_json::json!({"kind": "move", "id": id, "sealed": o_move})
        )
        .await
        .receipt
        .ok
    );
    phase("every attack refused, Bob sealed");

    // --- A sealed-bid auction by Carol (via validator 3): Alice 300, Bob 200, Mallory copies. ---
    let created = op(
        &clients[3],
        carol,
        "auction",
        serde_json::json!({"kind": "create", "lot": "a sword", "deposit": "500", "reserve": "50", "seats": 3, "seal_blocks": 30}),
    )
    .await;
    assert!(created.receipt.ok, "{:?}", created.receipt);
    let aid = created.receipt.events[0].data["id"]
        .as_str()
        .unwrap()
        .to_string();
    let around = round_of(&created);
    let alice_bid = sealed(&key, &chain_id, "auction", alice, &aid, around, bid(300));
    assert!(
        op(
            &clients[0],
            alice,
            "auction",
            serde_json::json!({"kind": "bid", "id": aid, "sealed": alice_bid})
        )
        .await
        .receipt
        .ok
    );
    let bob_bid = sealed(&key, &chain_id, "auction", bob, &aid, around, bid(200));
    assert!(
        op(
            &clients[1],
            bob,
            "auction",
            serde_json::json!({"kind": "bid", "id": aid, "sealed": bob_bid})
        )
        .await
        .receipt
        .ok
    );
    let before = clients[2].account(&mallory.address()).await.unwrap();
    assert_eq!(
        refused(
            &clients[2],
            mallory,
            "auction",
            serde_json::json!({"kind": "bid", "id": aid, "sealed": alice_bid})
        )
        .await,
        unbound
    );
    assert_eq!(
        clients[2]
            .account(&mallory.address())
            .await
            .unwrap()
            .balances,
        before.balances,
        "a refused bid escrows nothing"
    );
    phase("auction: two bids, the copy refused");

    // The rounds come: every opening in the block of its round.
    let last = round.max(round2).max(around);
    same_head(&vs, &[0, 1, 2, 3], last).await;
    for (module, game, r, openings) in [
        ("sealed_rps", &id, round, 2usize),
        ("sealed_rps", &id2, round2, 2),
        ("auction", &aid, around, 3),
    ] {
        let b = clients[0]
            .block(gamechain_client::client::BlockRef::Height(r))
            .await
            .unwrap();
        let opened = b
            .scheduled
            .iter()
            .filter(|s| {
                s.module == module
                    && s.receipt
                        .events
                        .iter()
                        .any(|e| e.data["id"] == **game && e.kind.ends_with(".opened"))
            })
            .count();
        assert_eq!(opened, openings, "{module} {game}: openings in block {r}");
    }
    let g = clients[3].view("sealed_rps", &[("id", &id)]).await.unwrap();
    assert_eq!(
        (
            g["x_move"].clone(),
            g["o_move"].clone(),
            g["result"].clone()
        ),
        (
            Value::from("paper"),
            Value::from("rock"),
            Value::from("x_won")
        ),
        "{g}"
    );
    let g2 = clients[1]
        .view("sealed_rps", &[("id", &id2)])
        .await
        .unwrap();
    assert_eq!(
        (
            g2["o_move"].clone(),
            g2["result"].clone(),
            g2["reason"].clone()
        ),
        (
            Value::from("void"),
            Value::from("x_won"),
            Value::from("void")
        ),
        "{g2}"
    );
    let a = clients[2].view("auction", &[("id", &aid)]).await.unwrap();
    assert_eq!(a["winner"], alice.address(), "{a}");
    assert_eq!(a["price"], "300", "{a}");
    let gold = |addr: String| {
        let c = clients[0].clone();
        async move { c.account(&addr).await.unwrap().balance("GOLD").0 }
    };
    assert_eq!(gold(alice.address()).await, 100_000 + 100 - 300);
    assert_eq!(gold(bob.address()).await, 100_000 - 100);
    assert_eq!(gold(carol.address()).await, 100_000 + 100 + 300);
    assert_eq!(gold(mallory.address()).await, 100_000 - 100);
    assert_eq!(gold("module:sealed_rps".into()).await, 0);
    assert_eq!(gold("module:auction".into()).await, 0);
    phase("both games settled by their rounds");
    // Each validator held its share of a sealed round back on a certificate of the block
    // before it, and released it at that block's commit (`beacon/mod.rs`).
    for v in &vs {
        let text = reqwest::get(format!("{}/metrics", v.url))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let waits = text
            .lines()
            .find_map(|l| l.strip_prefix("gamechain_beacon_sealed_waits_total "))
            .and_then(|n| n.parse::<f64>().ok())
            .unwrap_or(0.0);
        assert!(waits >= 1.0, "validator {}: sealed waits {waits}", v.index);
    }

    for (game, _) in [
        (format!("sealed_rps:{id}"), ()),
        (format!("auction:{aid}"), ()),
    ] {
        let out = common::gamechain(
            tmp.path(),
            Some(&vs[2].url),
            &["verify", "--game", &game, "--complete"],
        );
        assert!(
            out.status.success(),
            "verify --game {game}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    phase("both games verified from a transcript");

    for v in vs.iter_mut() {
        v.terminate();
    }
    for v in &vs {
        let n = gold_conserved_after_every_block(&v.dir.join("data"));
        assert!(n >= last, "{n} blocks re-executed, the last round {last}");
    }
    phase("every block of every validator re-executed, GOLD conserved after each");
}
