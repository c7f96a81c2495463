//! Session keys (`transition/session.rs`, `docs/session-keys.md`): a session plays for its
//! account within its scope, until its expiry, within its cap (stakes and fees), not after
//! revocation, not on another chain, never twice; a session key that is somebody's main account
//! keeps the two apart; a whole tic-tac-toe game played with session keys conserves GOLD and pays
//! the main accounts.

use super::*;
use crate::chain::session::{session_key, SessionRecord, MAX_SESSION_HORIZON_MS};
use crate::chain::{FeeSchedule, SessionRefusal};

/// Session keys (nobody else in these tests uses keys 20 and up).
static SA: LazyLock<SecretKey> = LazyLock::new(|| key(20));
static SB: LazyLock<SecretKey> = LazyLock::new(|| key(21));

fn chain() -> Chain {
    Chain::new(&[&TICTACTOE, &COUNTER], Some(FAUCET))
}

/// `authorize_session` of `key` by `main` at `nonce` (the session's id).
fn authorize(
    main: &SecretKey,
    nonce: u64,
    key: &SecretKey,
    modules: &[&str],
    expires_at_ms: u64,
    cap: u128,
) -> SignedTx {
    tx(
        main,
        nonce,
        Action::AuthorizeSession {
            key: key.address(),
            modules: modules.iter().map(|m| m.to_string()).collect(),
            expires_at_ms,
            cap: Amount(cap),
        },
    )
}

fn revoke(main: &SecretKey, nonce: u64, key: &SecretKey) -> SignedTx {
    tx(main, nonce, Action::RevokeSession { key: key.address() })
}

/// A `session_game` of `game` signed by `key` for `main` under session `id`, with `main`'s
/// `nonce`, for chain `chain_id`.
fn session_on(
    chain_id: &str,
    key: &SecretKey,
    main: &SecretKey,
    id: u64,
    nonce: u64,
    game: &str,
    op: Value,
) -> SignedTx {
    TxBody {
        chain_id: chain_id.into(),
        from: key.address(),
        nonce,
        action: Action::SessionGame {
            account: main.address(),
            session: id,
            game: game.into(),
            op: serde_json::value::to_raw_value(&op).unwrap(),
        },
    }
    .sign(key)
}

fn session(key: &SecretKey, main: &SecretKey, id: u64, nonce: u64, op: Value) -> SignedTx {
    session_on(CHAIN, key, main, id, nonce, "tictactoe", op)
}

/// The refusal of the block's transaction `index`.
fn refusal(chain: &Chain, txs: Vec<SignedTx>) -> (usize, TxRejection) {
    match chain.try_block(txs) {
        Err(TransitionError::InvalidTx { index, reason, .. }) => (index, reason),
        other => panic!("expected InvalidTx, got {other:?}"),
    }
}

fn session_refusal(chain: &Chain, txs: Vec<SignedTx>) -> SessionRefusal {
    match refusal(chain, txs) {
        (_, TxRejection::Session(r)) => r,
        other => panic!("expected a session refusal, got {other:?}"),
    }
}

fn record(chain: &Chain, main: &SecretKey, key: &SecretKey) -> Option<SessionRecord> {
    chain
        .state
        .get(&session_key(&main.address(), &key.address()))
        .map(|b| SessionRecord::from_bytes(&b).unwrap())
}

/// Sum of every GOLD balance in the state (escrow included).
fn gold_held(chain: &Chain) -> u128 {
    chain
        .state
        .map
        .iter()
        .filter(|(k, _)| k.starts_with("bal/") && k.ends_with("/GOLD"))
        .map(|(_, v)| std::str::from_utf8(v).unwrap().parse::<u128>().unwrap())
        .sum()
}

fn escrow(chain: &Chain) -> u128 {
    chain.balance("module:tictactoe")
}

/// Faucet for Alice and Bob, and a session each (`SA`, `SB`, id 1) over tic-tac-toe with `cap`,
/// for an hour of block time.
fn funded_with_sessions(cap: u128) -> Chain {
    let mut c = chain();
    let until = c.head.time_ms + 3_600_000;
    let out = c.block(vec![
        tx(&ALICE, 0, faucet_action()),
        tx(&BOB, 0, faucet_action()),
        authorize(&ALICE, 1, &SA, &["tictactoe"], until, cap),
        authorize(&BOB, 1, &SB, &["tictactoe"], until, cap),
    ]);
    assert!(out.receipts.iter().all(|r| r.ok), "{:?}", out.receipts);
    assert_eq!(
        out.receipts[2].events,
        [ev(
            "session_authorized",
            json!({"account": ALICE.address(), "cap": cap.to_string(), "expires_at_ms": until,
                   "key": SA.address(), "modules": ["tictactoe"], "session": 1})
        )]
    );
    c
}

#[test]
fn a_whole_game_with_session_keys_conserves_gold_and_pays_the_main_accounts() {
    let mut c = funded_with_sessions(100);
    let total = gold_held(&c);
    assert_eq!(total, 5_000 + 2 * FAUCET);
    let create = session(&SA, &ALICE, 1, 2, json!({"kind": "create", "stake": "100"}));
    let id = create.txid()[..16].to_string();
    let join = session(&SB, &BOB, 1, 2, json!({"kind": "join", "id": id}));
    let out = c.block(vec![create, join]);
    assert!(out.receipts.iter().all(|r| r.ok), "{:?}", out.receipts);
    // The guest saw the main accounts as the players; the receipt names the session key last.
    let created = &out.receipts[0].events;
    assert_eq!(created[0].data["x"], json!(ALICE.address()));
    assert_eq!(
        created.last().unwrap(),
        &ev(
            "session",
            json!({"account": ALICE.address(), "key": SA.address(), "session": 1})
        )
    );
    assert_eq!(out.receipts[1].events[0].data["o"], json!(BOB.address()));
    assert_eq!(escrow(&c), 200);
    assert_eq!(
        gold_held(&c),
        total,
        "stakes moved into escrow, nothing made or lost"
    );
    let moves = [(0, true), (3, false), (1, true), (4, false), (2, true)];
    for (i, (cell, alice)) in moves.into_iter().enumerate() {
        let nonce = 3 + (i as u64) / 2;
        let op = json!({"kind": "move", "id": id, "cell": cell});
        let t = if alice {
            session(&SA, &ALICE, 1, nonce, op)
        } else {
            session(&SB, &BOB, 1, nonce, op)
        };
        let out = c.block(vec![t]);
        assert!(out.receipts[0].ok, "{:?}", out.receipts[0]);
        assert_eq!(gold_held(&c), total, "after move {i}");
    }
    // Alice won with her session key: the payout went to her main account.
    assert_eq!(escrow(&c), 0);
    assert_eq!(c.balance(&ALICE.address()), FAUCET + 100);
    assert_eq!(c.balance(&BOB.address()), FAUCET - 100);
    assert_eq!(c.balance(&SA.address()), 0);
    assert_eq!(c.balance(&SB.address()), 0);
    assert_eq!(gold_held(&c), total);
    // The main accounts' nonces moved; the session keys' own never did.
    assert_eq!((c.nonce(&ALICE), c.nonce(&BOB)), (6, 5));
    assert_eq!((c.nonce(&SA), c.nonce(&SB)), (0, 0));
    // The stake counted against the cap; the payout does not give it back.
    assert_eq!(record(&c, &ALICE, &SA).unwrap().spent, Amount(100));
}

#[test]
fn the_scope_is_the_modules_named_and_only_game_ops() {
    let mut c = funded_with_sessions(1_000);
    // Another module: never in a block.
    let counter = session_on(CHAIN, &SA, &ALICE, 1, 2, "counter", json!({}));
    assert_eq!(
        session_refusal(&c, vec![counter]).to_string(),
        "session: module counter is not in the session's scope (tictactoe)"
    );
    // A session key can only express game ops for the account: a transfer, deploy or
    // authorization it signs is its own account's, with its own nonce and funds.
    let out = c.block(vec![
        tx(&SA, 0, pay(&SA.address(), 1)),
        tx(&SA, 1, Action::deploy("mine", vec![0, 97, 115, 109])),
        authorize(&SA, 2, &SB, &["tictactoe"], c.head.time_ms + 60_000, 5),
    ]);
    assert_eq!(
        out.receipts[0].error.as_deref(),
        Some("insufficient GOLD: need 1, have 0")
    );
    assert!(!out.receipts[1].ok);
    assert!(out.receipts[2].ok, "it authorized a session of its own");
    assert!(record(&c, &SA, &SB).is_some());
    assert_eq!(c.nonce(&ALICE), 2, "Alice's nonce untouched");
    assert_eq!(c.nonce(&SA), 3);
    assert_eq!(c.balance(&ALICE.address()), FAUCET);
    // ... and SB, a session of SA's, has no session for Alice.
    let via = session(&SB, &ALICE, 2, 2, json!({"kind": "create", "stake": "1"}));
    assert!(matches!(
        session_refusal(&c, vec![via]),
        SessionRefusal::NoSession { .. }
    ));
    // The wire has no session form of any other action.
    let text = format!(
        r#"{{"chain_id":"{CHAIN}","from":"{}","nonce":2,"action":{{"type":"session_game","account":"{}","session":1,"game":"tictactoe","op":{{}},"to":"x","amount":"5"}}}}"#,
        SA.address(),
        ALICE.address()
    );
    let forged = SignedTx::new(text.clone(), sign_message(&SA, &text));
    assert_eq!(
        forged.check(CHAIN, Network::Testnet).unwrap_err().code(),
        "bad_json"
    );
    // Nor may a key name itself as the account.
    let own = session(&SA, &SA, 1, 0, json!({"kind": "create", "stake": "1"}));
    assert_eq!(
        own.check(CHAIN, Network::Testnet).unwrap_err().to_string(),
        "body is not a valid transaction: a session_game's account is its own signer: send a game action"
    );
}

#[test]
fn a_session_ends_at_its_expiry_in_block_time() {
    let mut c = chain();
    let t = c.head.time_ms;
    c.block_at(
        t + 1_000,
        vec![
            tx(&ALICE, 0, faucet_action()),
            authorize(&ALICE, 1, &SA, &["tictactoe"], t + 3_000, 500),
        ],
    );
    let op = |n: u64| session(&SA, &ALICE, 1, n, json!({"kind": "create", "stake": "10"}));
    // Block time t + 2000 < expiry: fine.
    let out = c.block_at(t + 2_000, vec![op(2)]);
    assert!(out.receipts[0].ok);
    // Block time t + 3000 = expiry: refused, whatever the wall clock says.
    let input = BlockInput {
        time_ms: t + 3_000,
        ..c.input(vec![op(3)])
    };
    match execute_block(&c.ctx, &c.state, &c.hash, &c.head, &input) {
        Err(TransitionError::InvalidTx {
            reason: TxRejection::Session(r),
            ..
        }) => assert_eq!(
            r.to_string(),
            format!(
                "session: expired at block time {} ms; this block's is {} ms",
                t + 3_000,
                t + 3_000
            )
        ),
        other => panic!("{other:?}"),
    }
    // The horizon: at most 30 days ahead, and after this block's time.
    let now = t + 3_000;
    let out = c.block_at(
        now,
        vec![
            authorize(
                &ALICE,
                3,
                &SB,
                &["tictactoe"],
                now + MAX_SESSION_HORIZON_MS + 1,
                1,
            ),
            authorize(&ALICE, 4, &SB, &["tictactoe"], now, 1),
            authorize(
                &ALICE,
                5,
                &SB,
                &["tictactoe"],
                now + MAX_SESSION_HORIZON_MS,
                1,
            ),
        ],
    );
    let want = |e: u64| {
        format!(
            "invalid: a session must expire after this block's time ({now} ms) and at most \
             2592000000 ms (30 days) after it; expires_at_ms is {e}"
        )
    };
    assert_eq!(
        out.receipts[0].error.as_deref(),
        Some(want(now + MAX_SESSION_HORIZON_MS + 1).as_str())
    );
    assert_eq!(out.receipts[1].error.as_deref(), Some(want(now).as_str()));
    assert!(out.receipts[2].ok);
}

#[test]
fn the_cap_counts_every_stake_exactly_across_transactions() {
    let mut c = funded_with_sessions(150);
    let create =
        |n: u64, stake: &str| session(&SA, &ALICE, 1, n, json!({"kind": "create", "stake": stake}));
    // 100 then 50: exactly the cap.
    let out = c.block(vec![create(2, "100"), create(3, "50")]);
    assert!(out.receipts.iter().all(|r| r.ok), "{:?}", out.receipts);
    assert_eq!(record(&c, &ALICE, &SA).unwrap().spent, Amount(150));
    assert_eq!(c.balance(&ALICE.address()), FAUCET - 150);
    // One base unit more: the op is undone, its nonce used, nothing moved.
    let out = c.block(vec![create(4, "1")]);
    assert_eq!(
        out.receipts[0].error.as_deref(),
        Some(
            format!(
                "invalid: session cap: this transaction would move 1 GOLD base units for {} \
                 (1 by the op, 0 in fees); session 1 of {} may move 0 more of its cap of 150",
                ALICE.address(),
                SA.address()
            )
            .as_str()
        )
    );
    assert!(out.receipts[0].events.is_empty());
    assert_eq!(c.balance(&ALICE.address()), FAUCET - 150);
    assert_eq!(c.nonce(&ALICE), 5);
    assert_eq!(record(&c, &ALICE, &SA).unwrap().spent, Amount(150));
    // A op that moves nothing still plays at the cap (a cancel returns the stake to Alice,
    // which does not give the cap back).
    let first = create(2, "100").txid()[..16].to_string();
    let out = c.block(vec![session(
        &SA,
        &ALICE,
        1,
        5,
        json!({"kind": "cancel", "id": first}),
    )]);
    assert!(out.receipts[0].ok, "{:?}", out.receipts[0]);
    assert_eq!(c.balance(&ALICE.address()), FAUCET - 50);
    assert_eq!(record(&c, &ALICE, &SA).unwrap().spent, Amount(150));
    // The main key itself is never capped.
    let out = c.block(vec![tx(
        &ALICE,
        6,
        ttt(json!({"kind": "create", "stake": "500"})),
    )]);
    assert!(out.receipts[0].ok);
    // Over the cap in one op: 151 with a cap of 150 on a fresh session.
    let mut c = funded_with_sessions(150);
    let out = c.block(vec![create(2, "151")]);
    assert!(!out.receipts[0].ok);
    assert_eq!(c.balance(&ALICE.address()), FAUCET);
}

#[test]
fn paying_stakes_already_in_play_to_another_player_counts_against_the_cap() {
    // The main keys stake 100 each; Alice's session (cap 0) then plays the move that ends the
    // game. Its draw pays Bob's stake back to Bob: GOLD moved to somebody else in Alice's name,
    // which a cap-0 session may not do (a module with a `resign` op would pay the whole pot the
    // same way). With a cap of 100 the same move plays.
    for (cap, plays) in [(0u128, false), (99, false), (100, true)] {
        let mut c = funded_with_sessions(cap);
        let create = tx(&ALICE, 2, ttt(json!({"kind": "create", "stake": "100"})));
        let id = create.txid()[..16].to_string();
        let out = c.block(vec![
            create,
            tx(&BOB, 2, ttt(json!({"kind": "join", "id": id}))),
        ]);
        assert!(out.receipts.iter().all(|r| r.ok), "{:?}", out.receipts);
        // X: 0 2 3 7 8, O: 1 4 5 6 — no line; the ninth move (X at 8) draws.
        let cells = [
            (0, true),
            (1, false),
            (2, true),
            (4, false),
            (3, true),
            (5, false),
            (7, true),
            (6, false),
        ];
        for (i, (cell, alice)) in cells.into_iter().enumerate() {
            let nonce = 3 + (i as u64) / 2;
            let who = if alice { &*ALICE } else { &*BOB };
            let out = c.block(vec![tx(
                who,
                nonce,
                ttt(json!({"kind": "move", "id": id, "cell": cell})),
            )]);
            assert!(out.receipts[0].ok, "{:?}", out.receipts[0]);
        }
        let total = gold_held(&c);
        let out = c.block(vec![session(
            &SA,
            &ALICE,
            1,
            7,
            json!({"kind": "move", "id": id, "cell": 8}),
        )]);
        assert_eq!(gold_held(&c), total, "cap {cap}");
        if plays {
            assert!(out.receipts[0].ok, "{:?}", out.receipts[0]);
            assert_eq!(escrow(&c), 0);
            assert_eq!(c.balance(&BOB.address()), FAUCET);
            assert_eq!(record(&c, &ALICE, &SA).unwrap().spent, Amount(100));
        } else {
            assert_eq!(
                out.receipts[0].error.as_deref(),
                Some(
                    format!(
                        "invalid: session cap: this transaction would move 100 GOLD base units \
                         for {} (100 by the op, 0 in fees); session 1 of {} may move {cap} more \
                         of its cap of {cap}",
                        ALICE.address(),
                        SA.address()
                    )
                    .as_str()
                ),
            );
            assert_eq!(escrow(&c), 200, "the stakes stay in play");
            assert_eq!(record(&c, &ALICE, &SA).unwrap().spent, Amount(0));
            assert_eq!(c.nonce(&ALICE), 8, "the nonce still counts");
        }
    }
}

#[test]
fn revocation_is_immediate_and_a_new_session_voids_the_old_ones_transactions() {
    let mut c = funded_with_sessions(1_000);
    let create =
        |id: u64, n: u64| session(&SA, &ALICE, id, n, json!({"kind": "create", "stake": "1"}));
    // Revoked in the same block: the session transaction after it cannot be in the block.
    let (index, reason) = refusal(&c, vec![revoke(&ALICE, 2, &SA), create(1, 3)]);
    assert_eq!(index, 1);
    assert_eq!(
        reason.to_string(),
        format!(
            "session: {} has no session 1 for {} (never authorized, revoked or replaced)",
            SA.address(),
            ALICE.address()
        )
    );
    let out = c.block(vec![revoke(&ALICE, 2, &SA)]);
    assert_eq!(
        out.receipts[0].events,
        [ev(
            "session_revoked",
            json!({"account": ALICE.address(), "key": SA.address(), "session": 1})
        )]
    );
    assert_eq!(record(&c, &ALICE, &SA), None);
    assert!(matches!(
        session_refusal(&c, vec![create(1, 3)]),
        SessionRefusal::NoSession { id: 1, .. }
    ));
    // Revoking again: not found (a receipt; the main key's nonce is used).
    let out = c.block(vec![revoke(&ALICE, 3, &SA)]);
    assert_eq!(
        out.receipts[0].error.as_deref(),
        Some(
            format!(
                "not found: session of {} for {}",
                SA.address(),
                ALICE.address()
            )
            .as_str()
        )
    );
    // The same key authorized again is session 4: a transaction signed for session 1 (with a
    // nonce still to come) is void under it.
    c.block(vec![authorize(
        &ALICE,
        4,
        &SA,
        &["tictactoe"],
        c.head.time_ms + 60_000,
        10,
    )]);
    assert!(matches!(
        session_refusal(&c, vec![create(1, 5)]),
        SessionRefusal::NoSession { id: 1, .. }
    ));
    let out = c.block(vec![create(4, 5)]);
    assert!(out.receipts[0].ok);
}

#[test]
fn a_session_transaction_for_another_chain_or_used_once_is_refused() {
    let mut c = funded_with_sessions(1_000);
    let other = session_on(
        "gamechain-other",
        &SA,
        &ALICE,
        1,
        2,
        "tictactoe",
        json!({"kind": "create", "stake": "1"}),
    );
    assert!(matches!(
        refusal(&c, vec![other]),
        (0, TxRejection::Check(TxError::WrongChain { .. }))
    ));
    let once = session(&SA, &ALICE, 1, 2, json!({"kind": "create", "stake": "1"}));
    c.block(vec![once.clone()]);
    assert_eq!(
        refusal(&c, vec![once.clone()]),
        (
            0,
            TxRejection::Nonce {
                expected: 3,
                found: 2
            }
        )
    );
    // The account's nonce is the one: a main-key transaction with nonce 3 makes a session
    // transaction with nonce 3 stale, and the other way round.
    c.block(vec![tx(&ALICE, 3, pay(&BOB.address(), 1))]);
    let late = session(&SA, &ALICE, 1, 3, json!({"kind": "create", "stake": "1"}));
    assert!(matches!(
        refusal(&c, vec![late]),
        (0, TxRejection::Nonce { .. })
    ));
}

#[test]
fn a_session_key_that_is_somebody_s_main_account_keeps_the_two_apart() {
    let mut c = chain();
    let until = c.head.time_ms + 600_000;
    // Bob's own key is Alice's session key.
    c.block(vec![
        tx(&ALICE, 0, faucet_action()),
        tx(&BOB, 0, faucet_action()),
        authorize(&ALICE, 1, &BOB, &["tictactoe"], until, 300),
    ]);
    let for_alice = session(
        &BOB,
        &ALICE,
        1,
        2,
        json!({"kind": "create", "stake": "200"}),
    );
    let for_bob = tx(&BOB, 1, ttt(json!({"kind": "create", "stake": "70"})));
    let out = c.block(vec![for_alice.clone(), for_bob.clone()]);
    assert!(out.receipts.iter().all(|r| r.ok), "{:?}", out.receipts);
    assert_eq!(out.receipts[0].events[0].data["x"], json!(ALICE.address()));
    assert_eq!(out.receipts[1].events[0].data["x"], json!(BOB.address()));
    assert_eq!(c.balance(&ALICE.address()), FAUCET - 200);
    assert_eq!(c.balance(&BOB.address()), FAUCET - 70);
    assert_eq!((c.nonce(&ALICE), c.nonce(&BOB)), (3, 2));
    assert_eq!(record(&c, &ALICE, &BOB).unwrap().spent, Amount(200));
    // Bob's own transactions never count against Alice's session.
    c.block(vec![tx(
        &BOB,
        2,
        ttt(json!({"kind": "create", "stake": "500"})),
    )]);
    assert_eq!(record(&c, &ALICE, &BOB).unwrap().spent, Amount(200));
}

#[test]
fn fees_count_against_the_cap_and_a_used_up_session_is_refused() {
    let fees = FeeSchedule {
        collector: key(9).address(),
        tx_micro: Amount(2_000_000),
        fuel_micro: Amount(100),
        write_byte_micro: Amount(10_000),
        event_byte_micro: Amount(5_000),
    };
    let modules = [&*TICTACTOE, &*COUNTER];
    let mut genesis = genesis_with(&modules, Some(FAUCET));
    genesis.fees = Some(fees.clone());
    let mut c = Chain::of(&modules, genesis);
    let until = c.head.time_ms + 600_000;
    c.block(vec![
        tx(&ALICE, 0, faucet_action()),
        authorize(&ALICE, 1, &SA, &["tictactoe"], until, 120),
    ]);
    let before = c.balance(&ALICE.address());
    let out = c.block(vec![session(
        &SA,
        &ALICE,
        1,
        2,
        json!({"kind": "create", "stake": "100"}),
    )]);
    let r = &out.receipts[0];
    assert!(r.ok, "{r:?}");
    assert!(r.fee.0 > 0);
    let spent = record(&c, &ALICE, &SA).unwrap().spent.0;
    assert_eq!(spent, 100 + r.fee.0, "stake and fee");
    assert_eq!(c.balance(&ALICE.address()), before - spent);
    // Use the rest with failing ops (each pays its fee) until less than the minimum is left.
    let mut nonce = 3;
    loop {
        let left = 120 - record(&c, &ALICE, &SA).unwrap().spent.0.min(120);
        let t = session(&SA, &ALICE, 1, nonce, json!({"kind": "nope"}));
        if left < fees.minimum() {
            assert!(matches!(
                session_refusal(&c, vec![t]),
                SessionRefusal::CapUsedUp { cap: 120, .. }
            ));
            break;
        }
        let out = c.block(vec![t]);
        assert!(!out.receipts[0].ok);
        nonce += 1;
    }
}

#[test]
fn an_account_holds_at_most_eight_live_sessions_and_expired_ones_make_room() {
    use crate::chain::session::MAX_SESSIONS_PER_ACCOUNT;
    let mut c = chain();
    let t = c.head.time_ms;
    let soon = t + 5_000;
    let later = t + 3_600_000;
    // Eight sessions: four expiring soon, four later.
    let mut txs = vec![tx(&ALICE, 0, faucet_action())];
    for i in 0..MAX_SESSIONS_PER_ACCOUNT as u8 {
        let until = if i < 4 { soon } else { later };
        txs.push(authorize(
            &ALICE,
            1 + i as u64,
            &key(30 + i),
            &["tictactoe"],
            until,
            1,
        ));
    }
    let out = c.block_at(t + 1_000, txs);
    assert!(out.receipts.iter().all(|r| r.ok), "{:?}", out.receipts);
    // A ninth is refused while all eight are live; re-authorizing one of them is not a ninth.
    let out = c.block_at(
        t + 2_000,
        vec![
            authorize(&ALICE, 9, &key(40), &["tictactoe"], later, 1),
            authorize(&ALICE, 10, &key(37), &["tictactoe"], later, 2),
        ],
    );
    assert_eq!(
        out.receipts[0].error.as_deref(),
        Some(
            format!(
                "invalid: {} holds 8 live sessions, the limit: revoke one first",
                ALICE.address()
            )
            .as_str()
        )
    );
    assert!(out.receipts[1].ok);
    assert_eq!(record(&c, &ALICE, &key(37)).unwrap().id, 10);
    // Once four expired, the next authorization drops them and fits.
    let out = c.block_at(
        soon,
        vec![authorize(&ALICE, 11, &key(40), &["tictactoe"], later, 1)],
    );
    assert!(out.receipts[0].ok, "{:?}", out.receipts[0]);
    let left: Vec<_> = c
        .state
        .map
        .keys()
        .filter(|k| k.starts_with(&format!("session/{}/", ALICE.address())))
        .collect();
    assert_eq!(left.len(), 5, "{left:?}");
    assert_eq!(record(&c, &ALICE, &key(30)), None);
    // The scope is checked before anything runs: 1 to 16 ids, ascending, no duplicates.
    let scope = |modules: Vec<String>| {
        tx(
            &ALICE,
            12,
            Action::AuthorizeSession {
                key: key(41).address(),
                modules,
                expires_at_ms: later,
                cap: Amount(1),
            },
        )
        .check(CHAIN, Network::Testnet)
        .map(|_| ())
        .map_err(|e| e.to_string())
    };
    let ids = |n: usize| (0..n).map(|i| format!("m{i:02}")).collect::<Vec<_>>();
    assert!(scope(ids(16)).is_ok());
    assert!(scope(ids(17)).unwrap_err().starts_with(
        "body is not a valid transaction: a session's scope names 1 to 16 modules, not 17"
    ));
    assert!(scope(vec![]).is_err());
    for bad in [vec!["tictactoe", "mnk"], vec!["mnk", "mnk"], vec!["Mnk"]] {
        assert_eq!(
            scope(bad.iter().map(|s| s.to_string()).collect())
                .unwrap_err()
                .split(':')
                .next(),
            Some("body is not a valid transaction"),
            "{bad:?}"
        );
    }
    // A session key must not be the account itself, and must be an address.
    let out = c.block(vec![
        authorize(&ALICE, 12, &ALICE, &["tictactoe"], later, 1),
        tx(
            &ALICE,
            13,
            Action::AuthorizeSession {
                key: "module:tictactoe".into(),
                modules: vec!["tictactoe".into()],
                expires_at_ms: later,
                cap: Amount(1),
            },
        ),
    ]);
    assert_eq!(
        out.receipts[0].error.as_deref(),
        Some("invalid: a session key must not be the account's own key")
    );
    assert!(out.receipts[1]
        .error
        .as_deref()
        .unwrap()
        .starts_with("invalid: `module:tictactoe` is not an address of this chain"));
}

#[test]
fn a_session_step_witnesses_its_record_against_the_parent_root() {
    let mut c = funded_with_sessions(1_000);
    let parent_root = c.head.state_root;
    let record_key = session_key(&ALICE.address(), &SA.address());
    let before = c.state.get(&record_key).expect("the session record");
    let create = session(&SA, &ALICE, 1, 2, json!({"kind": "create", "stake": "100"}));
    let out = c.block(vec![create.clone()]);
    assert!(out.receipts[0].ok, "{:?}", out.receipts[0].error);
    let w = &out.start_witnesses[0];
    assert_eq!(w.txid, create.txid());
    let s = w
        .session
        .as_ref()
        .expect("a session step witnesses its session");
    assert_eq!(s.key, record_key);
    let (value, proof) = s
        .proven
        .as_ref()
        .expect("nothing earlier in the block wrote it");
    assert_eq!(value.as_deref(), Some(before.as_slice()));
    proof
        .verify(&parent_root, &record_key, value.as_deref())
        .unwrap();
    // A second step of the same session in one block: the first wrote the record (its spent);
    // the witness is still the record before the block, which a verifier reads as such.
    let id = create.txid()[..16].to_string();
    let out = c.block(vec![
        session(&SA, &ALICE, 1, 3, json!({"kind": "create", "stake": "50"})),
        tx(&BOB, 2, ttt(json!({"kind": "join", "id": id}))),
        session(&SA, &ALICE, 1, 4, json!({"kind": "create"})),
    ]);
    assert!(out.receipts.iter().all(|r| r.ok), "{:?}", out.receipts);
    let sessions: Vec<_> = out
        .start_witnesses
        .iter()
        .map(|w| w.session.as_ref())
        .collect();
    assert!(sessions[0].is_some_and(|s| s.proven.is_some()));
    assert!(sessions[1].is_none(), "Bob signed his own step");
    assert!(sessions[2].is_some_and(|s| s.proven == sessions[0].unwrap().proven));
}
