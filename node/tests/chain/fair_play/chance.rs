//! Chance nobody can steer (`docs/randomness.md`): a player who joins dice duels and grinds his
//! join — signing it from each of many accounts of his own, keeping the one that everything
//! public (the newest beacon, his join's txid and so the roll's call id) says wins — and who
//! posts when that prediction looks best, wins no more often than chance. (A salt field in the
//! op, the cheaper way to vary a txid, is refused by the dice module's schema.) Before beacons, a roll from
//! `public_random` (txid and height) was known to the sender before sending, and the same
//! grinder won every duel (issue 40's table: 10 of 10).

use std::time::{Duration, Instant};

use gamechain_client::client::BlockRef;
use gamechain_runtime::chain::{Action, SecretKey, SignedTx, TxBody};
use gamechain_sdk::scheduler::{call_id, Origin};
use gamechain_sdk::{draw_below, CallEnv, MockCtx};
use serde_json::{json, Value};

use super::support::{self, FAUCET};
use crate::common::{env_count, faucet, gamechain};

/// Accounts the cheater holds: variants of each join he signs and ranks.
const GRIND: u64 = 16;

/// Each duel's stake, GOLD base units.
const STAKE: u128 = 100;

fn dice(op: Value) -> Action {
    Action::game("dice", &op)
}

fn key(n: u64) -> SecretKey {
    let mut bytes = [7u8; 32];
    bytes[..8].copy_from_slice(&(n + 1).to_be_bytes());
    SecretKey::from_bytes(gamechain_runtime::chain::Network::Testnet, bytes).unwrap()
}

fn sign(chain_id: &str, key: &SecretKey, nonce: u64, action: Action) -> SignedTx {
    TxBody {
        chain_id: chain_id.to_string(),
        from: key.address(),
        nonce,
        action,
    }
    .sign(key)
}

/// The dice the module would roll for call `id` if the roll's beacon were `beacon`: the SDK's
/// own `draw_below` over a native context holding that beacon (x's two dice, then o's).
fn roll_under(beacon: [u8; 48], id: u64) -> (u32, u32) {
    let mut ctx = MockCtx::new("dice");
    ctx.call = Some(CallEnv {
        id,
        beacon: Some(beacon),
        draws: 0,
    });
    let mut die = || 1 + draw_below(&mut ctx, 6) as u32;
    let x = die() + die();
    let o = die() + die();
    (x, o)
}

#[tokio::test]
async fn a_grinding_cheater_wins_dice_duels_only_by_chance() {
    let duels = env_count("GAMECHAIN_DUELS", 240) as u64;
    let dir = tempfile::tempdir().unwrap();
    let node = support::node(dir.path()).await;
    let client = node.client();
    let chain_id = client.chain_id().await.unwrap();
    // One honest creator per ten duels, and the cheater, who joins every duel as `o`.
    let creators: Vec<SecretKey> = (0..duels.div_ceil(10)).map(key).collect();
    let cheaters: Vec<SecretKey> = (0..GRIND).map(|j| key(1_000_000 + j)).collect();
    let fund: Vec<SignedTx> = creators
        .iter()
        .chain(&cheaters)
        .map(|k| sign(&chain_id, k, 0, faucet()))
        .collect();
    let minted = FAUCET * fund.len() as u128;
    wait_all(&client, &fund).await;

    // The honest players open the duels.
    let creates: Vec<SignedTx> = (0..duels)
        .map(|i| {
            let k = &creators[(i / 10) as usize];
            let op = json!({"kind": "create", "stake": STAKE.to_string()});
            sign(&chain_id, k, 1 + i % 10, dice(op))
        })
        .collect();
    wait_all(&client, &creates).await;
    let ids: Vec<String> = creates.iter().map(|t| t.txid()[..16].to_string()).collect();

    // The cheater grinds every join against the newest beacon (the best public guess at the
    // roll's), keeping the variant whose predicted roll he wins.
    let latest = client.block(BlockRef::Latest).await.unwrap();
    let beacon = latest.header.header.beacon.expect("a beacon chain").0;
    let mut joins = Vec::new();
    let mut predicted_wins = 0u64;
    let mut nonces = vec![1u64; cheaters.len()];
    for id in &ids {
        let (j, best) = cheaters
            .iter()
            .enumerate()
            .map(|(j, k)| {
                let op = json!({"kind": "join", "id": id});
                (j, sign(&chain_id, k, nonces[j], dice(op)))
            })
            .max_by_key(|(_, t)| {
                let call = call_id("dice", Origin::Tx(&t.txid()), 0);
                let (x, o) = roll_under(beacon, call);
                (o as i64 - x as i64, t.txid())
            })
            .unwrap();
        nonces[j] += 1;
        let call = call_id("dice", Origin::Tx(&best.txid()), 0);
        let (x, o) = roll_under(beacon, call);
        predicted_wins += u64::from(o > x);
        joins.push(best);
    }
    assert!(
        predicted_wins * 10 >= duels * 9,
        "the grinder's own prediction should say he wins almost every duel: {predicted_wins} of {duels}"
    );
    wait_all(&client, &joins).await;

    // Every duel is rolled by the chain within a few blocks (64 calls a block).
    let started = Instant::now();
    let (mut won, mut lost, mut drawn) = (0u64, 0u64, 0u64);
    let mut pending: Vec<&String> = ids.iter().collect();
    while !pending.is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "{} duels never rolled",
            pending.len()
        );
        let mut still = Vec::new();
        for id in pending {
            let g = client.view("dice", &[("id", id)]).await.unwrap();
            match g["result"].as_str() {
                None => still.push(id),
                Some("o_won") => won += 1,
                Some("x_won") => lost += 1,
                Some("draw") => drawn += 1,
                Some(other) => panic!("duel {id} ended {other}"),
            }
        }
        pending = still;
        if !pending.is_empty() {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    // Chance: 2d6 against 2d6 is a draw 11.3% of the time and otherwise a fair coin. Over the
    // decided duels the cheater's share must be within 4 standard deviations of one half.
    let decided = won + lost;
    let share = won as f64 / decided as f64;
    let sigma = 0.5 / (decided as f64).sqrt();
    eprintln!(
        "grinding cheater: won {won}, lost {lost}, drawn {drawn} of {duels} duels \
         (share {share:.3}, 4σ = {:.3}); his own prediction said {predicted_wins} wins",
        4.0 * sigma
    );
    assert!(
        (share - 0.5).abs() <= 4.0 * sigma,
        "the cheater won {won} of {decided} decided duels: more than chance allows"
    );
    assert!(drawn < duels / 4, "{drawn} draws of {duels}");

    // GOLD is conserved: every stake came out of escrow.
    let mut total = client
        .account("module:dice")
        .await
        .unwrap()
        .balance("GOLD")
        .0;
    assert_eq!(total, 0, "the dice escrow still holds stakes");
    for k in creators.iter().chain(&cheaters) {
        total += client
            .account(&k.address())
            .await
            .unwrap()
            .balance("GOLD")
            .0;
    }
    assert_eq!(total, minted);

    // Any duel verifies from its transcript, beacon included.
    let out = gamechain(
        dir.path(),
        Some(&node.url()),
        &["verify", "--game", &format!("dice:{}", ids[0])],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("scheduled call") && text.contains("dice.rolled"),
        "{text}"
    );
}

/// Posts `txs` and waits until every one is in a block.
async fn wait_all(client: &gamechain_client::client::Client, txs: &[SignedTx]) {
    for chunk in txs.chunks(200) {
        for r in client.post_txs(chunk).await.unwrap() {
            r.unwrap();
        }
    }
    for t in txs {
        let inc = client
            .wait_for_receipt(&t.txid(), Duration::from_secs(60))
            .await
            .unwrap();
        assert!(inc.receipt.ok, "{:?}", inc.receipt);
    }
}
