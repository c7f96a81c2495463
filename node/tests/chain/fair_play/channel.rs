//! Attacks on channel games (`modules/channel`, `docs/channels.md`), against a real node.
//!
//! - Pumping blocks to shorten a response window. Windows used to be counted in blocks, so a
//!   challenger who sent 21 cheap transactions after challenging could claim the forfeit of a
//!   20-block window 0.8 s later. Windows are block time now (`window_ms`, 5 minutes to 3 days;
//!   the deadline is the challenge block's time plus the window), and block time advances by at
//!   least the interval per block but never ahead of the sequencer's clock
//!   (`runtime/chain/src/genesis/clock.rs`): however many blocks the challenger makes, the forfeit is
//!   refused until the window has passed in time.
//! - Copying the other seat's commit-reveal commitment to force a draw. The commitment is now
//!   `sha256(domain ‖ game tag ‖ seat ‖ choice ‖ salt)` (`modules/rps_rules`): the copier cannot
//!   open it, so his reveal is an illegal move, refused in every history, and he forfeits.
//!
//! Both check GOLD conservation after every block they make ([`Ledger`]).

use std::time::{Duration, Instant};

use gamechain_channel_protocol::{state_hash, Domain};
use gamechain_client::client::{BlockRef, Client};
use gamechain_player::LocalRules;
use gamechain_runtime::chain::{sign_message, Action, Network, SecretKey};
use gamechain_sdk::guest_build::build_guest;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::support::{node_with, pump_all, Ledger, FAUCET, INTERVAL_MS, PUMP};

const STAKE: u128 = 100;
/// The shortest window the channel takes: 5 minutes of block time.
const WINDOW_MS: u64 = 300_000;

fn ch(op: Value) -> Action {
    Action::game("channel", &op)
}

/// Deploys `channel`, `ttt_rules` and `rps_rules` built from this source, unless the chain has
/// them already (at genesis).
async fn channel_modules(client: &Client, key: &SecretKey) {
    for (id, package) in [
        ("channel", "channel"),
        ("ttt_rules", "tictactoe_rules"),
        ("rps_rules", "rps_rules"),
    ] {
        if client.module(id).await.is_ok() {
            continue;
        }
        let wasm = tokio::task::spawn_blocking(move || build_guest(package).unwrap().wasm)
            .await
            .unwrap();
        let txid = client.deploy(key, id, &wasm).await.unwrap();
        let r = client
            .wait_for_receipt(&txid, Duration::from_secs(60))
            .await
            .unwrap();
        assert!(r.receipt.ok, "deploy {id}: {:?}", r.receipt);
    }
}

/// Alice offers a game of `rules` with the shortest window; Bob joins. The game id.
async fn open_game(ledger: &mut Ledger, alice: &SecretKey, bob: &SecretKey, rules: &str) -> String {
    let r = ledger
        .send(
            alice,
            ch(json!({"kind": "offer", "rules": rules, "stake": STAKE.to_string(), "window_ms": WINDOW_MS})),
        )
        .await;
    assert!(r.receipt.ok, "{:?}", r.receipt);
    let offer = r
        .receipt
        .events
        .iter()
        .find(|e| e.kind.ends_with("offer_created"))
        .map(|e| e.data["offer"].as_str().unwrap().to_string())
        .unwrap_or_else(|| panic!("no offer_created event: {:?}", r.receipt.events));
    let r = ledger
        .send(bob, ch(json!({"kind": "join", "offer": offer})))
        .await;
    assert!(r.receipt.ok, "{:?}", r.receipt);
    offer
}

async fn block_time(client: &Client, height: u64) -> u64 {
    client
        .block(BlockRef::Height(height))
        .await
        .unwrap()
        .header
        .header
        .time_ms
}

/// Issue 22's second attack: Bob challenges Alice (she owes move 0), then he and his helper keys
/// pump transactions for 10 s, claiming the forfeit all along. Every claim is refused: the
/// blocks came (more than the old 20-block window), the window's time did not. Once the node's
/// clock has really passed the deadline (moved by the operator's dev clock here, as 5 minutes
/// would), the forfeit stands and the rules pay.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_channel_forfeit_cannot_be_claimed_by_pumping_blocks() {
    let tmp = tempfile::tempdir().unwrap();
    let node = node_with(tmp.path(), "dev_clock = true").await;
    let client = node.client();
    let mut ledger = Ledger::new(&client, &["module:channel"]);
    let (alice, bob) = (
        SecretKey::generate(Network::Testnet),
        SecretKey::generate(Network::Testnet),
    );
    let helpers: Vec<SecretKey> = (0..3)
        .map(|_| SecretKey::generate(Network::Testnet))
        .collect();
    for k in [&alice, &bob].into_iter().chain(&helpers) {
        ledger.fund(k).await;
    }
    channel_modules(&client, &alice).await;
    let game = open_game(&mut ledger, &alice, &bob, "ttt_rules").await;

    let challenged = ledger
        .send(
            &bob,
            ch(json!({"kind": "challenge", "game": game, "moves": []})),
        )
        .await;
    assert!(challenged.receipt.ok, "{:?}", challenged.receipt);
    let view = client.view("channel", &[("game", &game)]).await.unwrap();
    let deadline = view["challenge"]["deadline_ms"].as_u64().unwrap();
    let challenged_at = block_time(&client, challenged.height).await;
    assert_eq!(deadline, challenged_at + WINDOW_MS);

    let pumping = {
        let (client, helpers) = (client.clone(), helpers.clone());
        tokio::spawn(async move { pump_all(&client, &helpers).await })
    };
    let started = Instant::now();
    let claim = ch(json!({"kind": "claim_forfeit", "game": game}));
    let mut refused = 0;
    while started.elapsed() < PUMP {
        let r = ledger.send(&bob, claim.clone()).await;
        assert!(
            !r.receipt.ok,
            "the forfeit was claimed after {:?}",
            started.elapsed()
        );
        let error = r.receipt.error.clone().unwrap_or_default();
        assert!(
            error.contains(&format!(
                "the due player may answer until block time {deadline}"
            )),
            "{error}"
        );
        refused += 1;
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let sent = pumping.await.unwrap();
    let head = client.status().await.unwrap().height;
    let blocks = head - challenged.height;
    println!(
        "{sent} transactions pumped, {blocks} blocks made, {refused} forfeit claims refused; \
         block time {} ms after the challenge, the window is {WINDOW_MS} ms",
        block_time(&client, head).await - challenged_at
    );
    assert!(
        blocks > 20,
        "the old 20-block window would have passed: {blocks} blocks"
    );
    assert!(
        blocks <= PUMP.as_millis() as u64 / INTERVAL_MS + 20,
        "{blocks} blocks in {PUMP:?}"
    );

    // The window passes in time: the forfeit stands and the rules pay Bob both stakes.
    node.advance_clock(WINDOW_MS).await;
    let won = loop {
        let r = ledger.send(&bob, claim.clone()).await;
        if r.receipt.ok {
            break r;
        }
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "{:?}",
            r.receipt
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(block_time(&client, won.height).await > deadline);
    let r = ledger
        .send(&bob, ch(json!({"kind": "withdraw", "game": game})))
        .await;
    assert!(r.receipt.ok, "{:?}", r.receipt);
    assert_eq!(ledger.gold(&bob.address()).await, FAUCET + STAKE);
    assert_eq!(ledger.gold(&alice.address()).await, FAUCET - STAKE);
    assert_eq!(ledger.gold("module:channel").await, 0);
}

/// Signs channel moves for one game as the clients do: the rules run locally from the very code
/// the game pins (`rules_code`, fetched from the node by hash), as `gamechain-player` runs them.
struct Moves {
    rules: LocalRules,
    domain: Domain,
    game: String,
    tag: [u8; 32],
    state: Vec<u8>,
    signed: Vec<Value>,
}

impl Moves {
    async fn new(client: &Client, game: &str) -> Moves {
        let view = client.view("channel", &[]).await.unwrap();
        let domain = Domain {
            chain: view["chain"].as_str().unwrap().to_string(),
            module: "channel".into(),
        };
        let view = client.view("channel", &[("game", game)]).await.unwrap();
        let code_hash = view["rules_code"].as_str().unwrap();
        let wasm = client.code(code_hash).await.unwrap();
        let rules =
            LocalRules::from_code(view["rules"].as_str().unwrap(), code_hash, &wasm).unwrap();
        let tag = domain.game_tag(game);
        let state = rules.initial_state(&tag).unwrap();
        Moves {
            rules,
            domain,
            game: game.to_string(),
            tag,
            state,
            signed: Vec::new(),
        }
    }

    /// The next move, `data`, signed by `key` (the mover's game key is its account key here).
    fn sign(&self, key: &SecretKey, data: &[u8]) -> Value {
        let n = self.signed.len() as u64;
        let prev = state_hash(&self.state);
        let msg = self
            .domain
            .move_message(&self.game, n, &prev, &key.address(), data);
        json!({"n": n, "data": hex::encode(data), "sig": sign_message(key, msg)})
    }

    /// Signs and applies the next move (it must be legal).
    fn play(&mut self, key: &SecretKey, data: &[u8]) {
        let n = self.signed.len() as u64;
        let seat = self.rules.mover_at(n).unwrap();
        assert!(self
            .rules
            .validate_move(&self.state, n, seat, data)
            .unwrap());
        let m = self.sign(key, data);
        self.state = self.rules.apply_move(&self.state, n, seat, data).unwrap();
        self.signed.push(m);
    }
}

/// The commitment seat `seat` signs as its move 0 or 1 of a rock-paper-scissors game tagged
/// `tag` (`rps_rules::commitment`, docs/channels.md): `sha256("gamechain rps commit v2" ‖ tag ‖
/// seat ‖ choice ‖ salt)`. Written out here so that the node's tests need no game crate; the
/// rules' own code checks it (the honest reveal below is a legal move only if it matches).
fn rps_commitment(tag: &[u8; 32], seat: u8, choice: u8, salt: &[u8; 32]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"gamechain rps commit v2");
    h.update(tag);
    h.update([seat, choice]);
    h.update(salt);
    h.finalize().into()
}

/// The reveal move's data: `choice ‖ salt` (`rps_rules::reveal`).
fn rps_reveal(choice: u8, salt: &[u8; 32]) -> Vec<u8> {
    let mut v = vec![choice];
    v.extend_from_slice(salt);
    v
}

/// Issue 23: a commit-reveal commitment was not bound to its seat, so the second player could
/// copy the first player's commitment, replay her reveal and force a draw. Now the copy cannot
/// be opened: Bob's replayed reveal is an illegal move (in a settlement and in a response), and
/// when he cannot answer the challenge he forfeits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commitment_copied_from_the_other_seat_cannot_force_a_draw() {
    let tmp = tempfile::tempdir().unwrap();
    let node = node_with(tmp.path(), "dev_clock = true").await;
    let client = node.client();
    let mut ledger = Ledger::new(&client, &["module:channel"]);
    let (alice, bob) = (
        SecretKey::generate(Network::Testnet),
        SecretKey::generate(Network::Testnet),
    );
    ledger.fund(&alice).await;
    ledger.fund(&bob).await;
    channel_modules(&client, &alice).await;
    let game = open_game(&mut ledger, &alice, &bob, "rps_rules").await;

    let mut g = Moves::new(&client, &game).await;
    let salt = [11u8; 32];
    let c0 = rps_commitment(&g.tag, 0, 1, &salt);
    g.play(&alice, &c0); // Alice commits to paper
    g.play(&bob, &c0); // Bob copies her commitment
    g.play(&alice, &rps_reveal(1, &salt)); // Alice reveals
    let copied = g.sign(&bob, &rps_reveal(1, &salt)); // Bob replays her reveal
    let mut forced = g.signed.clone();
    forced.push(copied.clone());

    let r = ledger
        .send(
            &bob,
            ch(json!({"kind": "settle", "game": game, "moves": forced})),
        )
        .await;
    let error = r.receipt.error.clone().unwrap_or_default();
    assert!(
        !r.receipt.ok && error.contains("move 3 is not a legal move"),
        "{error}"
    );
    let r = ledger
        .send(
            &alice,
            ch(json!({"kind": "challenge", "game": game, "moves": g.signed})),
        )
        .await;
    assert!(r.receipt.ok, "{:?}", r.receipt);
    let r = ledger
        .send(
            &bob,
            ch(json!({"kind": "respond", "game": game, "moves": [copied]})),
        )
        .await;
    let error = r.receipt.error.clone().unwrap_or_default();
    assert!(
        !r.receipt.ok && error.contains("move 3 is not a legal move"),
        "{error}"
    );

    node.advance_clock(WINDOW_MS + 1).await;
    let claim = ch(json!({"kind": "claim_forfeit", "game": game}));
    let started = Instant::now();
    loop {
        let r = ledger.send(&alice, claim.clone()).await;
        if r.receipt.ok {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{:?}",
            r.receipt
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let r = ledger
        .send(&alice, ch(json!({"kind": "withdraw", "game": game})))
        .await;
    assert!(r.receipt.ok, "{:?}", r.receipt);
    assert_eq!(ledger.gold(&alice.address()).await, FAUCET + STAKE);
    assert_eq!(ledger.gold(&bob.address()).await, FAUCET - STAKE);
}
