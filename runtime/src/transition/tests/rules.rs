//! The transition's rules one at a time: invalid transactions named by index, the same block
//! giving the same output, end-of-block writes, node actions, the builder, the parent, the
//! context checks, parallel signature checks, canonical nonces.

use super::*;

#[test]
fn invalid_transactions_name_their_index() {
    let chain = Chain::new(&[], Some(FAUCET));
    let good = tx(&ALICE, 0, faucet_action());
    let invalid = |txs: Vec<SignedTx>| match chain.try_block(txs) {
        Err(TransitionError::InvalidTx {
            index,
            txid,
            reason,
        }) => (index, txid, reason),
        other => panic!("expected InvalidTx, got {other:?}"),
    };

    let wrong_nonce = tx(&ALICE, 5, faucet_action());
    assert_eq!(
        invalid(vec![good.clone(), wrong_nonce.clone()]),
        (
            1,
            wrong_nonce.txid(),
            TxRejection::Nonce {
                expected: 1,
                found: 5
            }
        )
    );
    assert_eq!(
        invalid(vec![good.clone(), good.clone()]).2,
        TxRejection::Nonce {
            expected: 1,
            found: 0
        },
        "a replayed transaction has a used nonce"
    );

    let wrong_chain = sign_tx(&ALICE, "other-chain", 0, faucet_action());
    let (index, txid, reason) = invalid(vec![wrong_chain.clone(), good.clone()]);
    assert_eq!((index, txid), (0, wrong_chain.txid()));
    assert!(
        matches!(reason, TxRejection::Check(TxError::WrongChain { .. })),
        "{reason}"
    );

    let body = TxBody {
        chain_id: CHAIN.into(),
        from: ALICE.address(),
        nonce: 1,
        action: faucet_action(),
    }
    .to_json();
    let signature = sign_message(&BOB, body.as_bytes());
    let forged = SignedTx::new(body, signature);
    let (index, _, reason) = invalid(vec![good.clone(), forged]);
    assert_eq!(index, 1);
    assert!(
        matches!(reason, TxRejection::Check(TxError::BadSignature(_))),
        "{reason}"
    );

    // The first invalid transaction in block order is named, whatever kind of check fails.
    assert_eq!(invalid(vec![good.clone(), wrong_nonce, wrong_chain]).0, 1);
}

#[test]
fn the_same_block_gives_the_same_output() {
    let mut chain = Chain::new(&[&TICTACTOE, &TICKER, &FAILER], Some(FAUCET));
    chain.block(vec![tx(&ALICE, 0, faucet_action())]);
    let txs = vec![
        tx(&ALICE, 1, ttt(json!({"kind": "create", "stake": "250"}))),
        tx(&BOB, 0, ttt(json!({"kind": "create"}))),
        tx(&BOB, 1, pay(&ALICE.address(), 1)),
        tx(&CAROL, 0, pay(&BOB.address(), 1)),
    ];
    let first = chain.try_block(txs.clone()).unwrap();
    let second = chain.try_block(txs.clone()).unwrap();
    assert_eq!(first, second);
    assert!(first.receipts.iter().filter(|r| r.ok).count() == 3 && first.receipts[0].fuel_used > 0);
    assert_eq!(
        first.receipts[2].error.as_deref(),
        Some("insufficient GOLD: need 1, have 0")
    );

    // One thread or several, or the builder one by one: the same block.
    let single = execute_block(
        &context(&[&TICTACTOE, &TICKER, &FAILER], Some(FAUCET)).with_verify_threads(1),
        &chain.state,
        &chain.hash,
        &chain.head,
        &chain.input(txs.clone()),
    );
    // (A second context has other Arc<WasmModule>s but the same code: identical output.)
    assert_eq!(single.unwrap(), first);
    let input = chain.input(txs.clone());
    let mut builder = BlockBuilder::new(
        &chain.ctx,
        &chain.state,
        &chain.hash,
        &chain.head,
        input.time_ms,
        input.checkpoint,
        None,
    )
    .unwrap();
    for t in &txs {
        builder.push(t).unwrap();
    }
    assert_eq!(builder.finish().unwrap(), first);
}

#[test]
fn end_block_writes_are_kept_on_ok_and_dropped_on_err() {
    let mut chain = Chain::new(&[&TICKER, &FAILER, &COUNTER], None);
    let out = chain.block(vec![]);
    let ids: Vec<&str> = out.end_block.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(
        ids,
        ["failer", "ticker"],
        "id order; counter has no gc_end_block"
    );
    let (failer, ticker) = (&out.end_block[0].1, &out.end_block[1].1);
    assert_eq!(failer.error.as_deref(), Some("invalid: end_block refused"));
    assert!(failer.fuel_used > 0 && failer.events.is_empty());
    assert!(ticker.ok && ticker.fuel_used > 0);
    assert_eq!(out.writes.keys().collect::<Vec<_>>(), ["m/ticker/n"]);
    assert!(!chain.state.map.contains_key("m/failer/x"));
    assert_eq!(
        out.header.receipt_root,
        crate::chain::receipt_root(&[failer.clone(), ticker.clone()])
    );

    // Transaction receipts come first in receipt_root, then the end_block ones.
    let t = tx(&ALICE, 0, Action::game("counter", &json!({})));
    let out = chain.block(vec![t]);
    let mut all = out.receipts.clone();
    all.extend(out.end_block.iter().map(|(_, r)| r.clone()));
    assert_eq!(all.len(), 3);
    assert_eq!(out.header.receipt_root, crate::chain::receipt_root(&all));
    assert_eq!(chain.state.map["m/ticker/n"], b"2");
}

#[test]
fn node_actions_fail_with_receipts_and_use_their_nonce() {
    let mut chain = Chain::new(&[&COUNTER], None);
    let c = CAROL.address();
    let mainnet = SecretKey::from_bytes(Network::Mainnet, [9; 32])
        .unwrap()
        .address();
    let cases: Vec<(Action, String)> = vec![
        (faucet_action(), "invalid: this chain has no faucet".into()),
        (
            Action::game("chess", &json!({})),
            "not found: module chess".into(),
        ),
        (
            pay("module:counter", 1),
            "invalid: `module:counter` is not an address of this chain".into(),
        ),
        (
            pay(&mainnet, 1),
            format!("invalid: `{mainnet}` is not an address of this chain"),
        ),
        (
            pay(&ALICE.address(), 0),
            "invalid: amount must be more than 0".into(),
        ),
        (
            pay(&ALICE.address(), 5_001),
            "insufficient GOLD: need 5001, have 5000".into(),
        ),
    ];
    let txs = cases
        .iter()
        .enumerate()
        .map(|(n, (a, _))| tx(&CAROL, n as u64, a.clone()))
        .collect();
    let out = chain.block(txs);
    for ((_, want), r) in cases.iter().zip(&out.receipts) {
        assert!(!r.ok && r.events.is_empty() && r.fuel_used == 0, "{r:?}");
        assert!(
            r.error.as_deref().unwrap().starts_with(want.as_str()),
            "{:?} vs {want}",
            r.error
        );
    }
    assert_eq!(out.writes.keys().collect::<Vec<_>>(), [&nonce_key(&c)]);
    assert_eq!((chain.nonce(&CAROL), chain.balance(&c)), (6, 5_000));

    let mut chain = Chain::new(&[], Some(FAUCET));
    let out = chain.block(vec![tx(
        &ALICE,
        0,
        Action::Faucet {
            token: "GEM".into(),
        },
    )]);
    assert_eq!(
        out.receipts[0].error.as_deref(),
        Some("invalid: the faucet pays only GOLD")
    );
}

#[test]
fn the_builder_lets_a_sequencer_leave_transactions_out() {
    let chain = Chain::new(&[&TICKER], Some(FAUCET));
    let (t0, bad, t1) = (
        tx(&ALICE, 0, faucet_action()),
        tx(&ALICE, 7, faucet_action()),
        tx(&ALICE, 1, pay(&CAROL.address(), 10)),
    );
    let input = chain.input(vec![]);
    let mut b = BlockBuilder::new(
        &chain.ctx,
        &chain.state,
        &chain.hash,
        &chain.head,
        input.time_ms,
        input.checkpoint,
        None,
    )
    .unwrap();
    assert_eq!(b.height(), 1);
    b.push(&t0).unwrap();
    let err = b.push(&bad).unwrap_err();
    assert!(matches!(
        err,
        TransitionError::InvalidTx {
            index: 1,
            reason: TxRejection::Nonce {
                expected: 1,
                found: 7
            },
            ..
        }
    ));
    assert_eq!(b.nonce(&ALICE.address()).unwrap(), 1);
    assert!(b.push(&tx(&ALICE, 1, faucet_action())).is_ok());
    let mut b2 = BlockBuilder::new(
        &chain.ctx,
        &chain.state,
        &chain.hash,
        &chain.head,
        input.time_ms,
        Checkpoint {
            height: 7,
            hash: "ab".repeat(32),
        },
        None,
    )
    .unwrap();
    b2.push(&t0).unwrap();
    assert!(b2.push(&bad).is_err());
    b2.push(&t1).unwrap();
    assert_eq!(b2.len(), 2);
    assert_eq!(b2.finish().unwrap(), chain.try_block(vec![t0, t1]).unwrap());
}

#[test]
fn the_parent_must_match() {
    let chain = Chain::new(&[], Some(FAUCET));
    let wrong = StateHash::empty(StateCommitment::SparseMerkle);
    let input = chain.input(vec![]);
    assert!(matches!(
        execute_block(&chain.ctx, &chain.state, &wrong, &chain.head, &input),
        Err(TransitionError::BadParent(_))
    ));
    // Spacing: at least `min_block_interval_ms` (1,000 here) after the parent, whatever is
    // in the block.
    let early = BlockInput {
        time_ms: T0 + 999,
        ..input.clone()
    };
    assert!(matches!(
        execute_block(&chain.ctx, &chain.state, &chain.hash, &chain.head, &early),
        Err(TransitionError::BadParent(m)) if m == format!(
            "block time {} is less than the minimum interval of 1000 ms after the parent's {T0}",
            T0 + 999
        )
    ));
    let on_time = BlockInput {
        time_ms: T0 + 1_000,
        ..input.clone()
    };
    execute_block(&chain.ctx, &chain.state, &chain.hash, &chain.head, &on_time).unwrap();
    // A chain made before the rule (no `min_block_interval_ms`): only not before the parent.
    let mut legacy = genesis_with(&[], Some(FAUCET));
    legacy.min_block_interval_ms = None;
    let old = Chain::of(&[], legacy);
    let early = BlockInput {
        time_ms: T0 - 1,
        ..input.clone()
    };
    assert!(matches!(
        execute_block(&old.ctx, &old.state, &old.hash, &old.head, &early),
        Err(TransitionError::BadParent(m)) if m.contains("before the parent's")
    ));
    let same_time = BlockInput {
        time_ms: T0,
        ..input
    };
    execute_block(&old.ctx, &old.state, &old.hash, &old.head, &same_time).unwrap();
}

#[test]
fn the_context_checks_runtime_and_modules_against_genesis() {
    let registry = |mods: &[&Loaded]| {
        let m = Modules::new();
        for l in mods {
            m.insert(l.module.clone(), &l.wasm).unwrap();
        }
        m
    };
    let genesis = genesis_with(&[&TICKER], None);
    let new = |g: Genesis, m| ChainContext::new(g, RUNTIME.clone(), m);
    // Which modules exist is the state's business: none or extra preloaded ones are fine.
    new(genesis.clone(), registry(&[])).unwrap();
    new(genesis.clone(), registry(&[&TICKER, &FAILER])).unwrap();
    let mut other_fuel = genesis.clone();
    other_fuel.fuel_apply += 1;
    assert!(
        matches!(new(other_fuel, registry(&[&TICKER])), Err(ContextError::Runtime(m)) if m.contains("fuel_apply"))
    );
    let mut other_hash = genesis.clone();
    other_hash.engine_config_hash = "00".repeat(32);
    assert!(matches!(
        new(other_hash, registry(&[&TICKER])),
        Err(ContextError::Runtime(_))
    ));
    // A module of another runtime (same configuration) is refused.
    let elsewhere = Runtime::new(RuntimeConfig::default()).unwrap();
    let foreign = Modules::new();
    foreign
        .insert(
            Arc::new(WasmModule::new(&elsewhere, "ticker", &TICKER.wasm).unwrap()),
            &TICKER.wasm,
        )
        .unwrap();
    assert!(
        matches!(new(genesis.clone(), foreign), Err(ContextError::Modules(m)) if m.contains("another runtime"))
    );
    assert_eq!(
        runtime_config(&genesis, Allocation::OnDemand).config_hash(),
        genesis.engine_config_hash
    );
    let dup = registry(&[&TICKER]);
    assert_eq!(
        dup.insert(TICKER.module.clone(), &TICKER.wasm),
        Err(RegistryError::Duplicate("ticker".into()))
    );
    assert!(matches!(
        dup.insert(FAILER.module.clone(), &TICKER.wasm),
        Err(RegistryError::CodeHash { .. })
    ));
}

#[test]
fn parallel_checks_keep_block_order() {
    let txs: Vec<SignedTx> = (0..40u64)
        .map(|n| match n % 7 {
            3 => sign_tx(&ALICE, "other", n, faucet_action()),
            5 => SignedTx::new(
                tx(&BOB, n, faucet_action()).body().to_string(),
                "AAAA".into(),
            ),
            _ => tx(&key(10 + n as u8), n, faucet_action()),
        })
        .collect();
    let one = check_txs(&txs, CHAIN, Network::Testnet, 1);
    assert_eq!(one.len(), 40);
    assert_eq!(one.iter().filter(|r| r.is_err()).count(), 11);
    for threads in [2, 3, 5, 64] {
        assert_eq!(
            check_txs(&txs, CHAIN, Network::Testnet, threads),
            one,
            "{threads} threads"
        );
    }
    assert!(check_txs(&[], CHAIN, Network::Testnet, 2).is_empty());
}

#[test]
fn nonces_are_canonical_decimals() {
    let mut state = MemState::new();
    assert_eq!(account_nonce(&state, "x").unwrap(), 0);
    state.map.insert(nonce_key("x"), b"12".to_vec());
    assert_eq!(account_nonce(&state, "x").unwrap(), 12);
    for bad in [&b"012"[..], b"-1", b"", b"1 ", b"18446744073709551616"] {
        state.map.insert(nonce_key("x"), bad.to_vec());
        assert_eq!(
            account_nonce(&state, "x"),
            Err(TransitionError::CorruptState {
                key: "nonce/x".into()
            }),
            "{bad:?}"
        );
    }
}

#[test]
fn a_big_block_hashes_its_changes_on_several_threads_alike() {
    // 300 faucet calls: 600+ changed keys, over the per-thread minimum, so `finish` hashes them
    // on two threads; `Chain::block` checks the root against a full recompute.
    let keys: Vec<SecretKey> = (0..300u32)
        .map(|i| {
            let mut b = [7u8; 32];
            b[..4].copy_from_slice(&i.to_le_bytes());
            SecretKey::from_bytes(Network::Testnet, b).unwrap()
        })
        .collect();
    let txs: Vec<SignedTx> = keys.iter().map(|k| tx(k, 0, faucet_action())).collect();
    let with_threads = |n: usize| {
        let mut c = Chain::new(&[], Some(FAUCET));
        c.ctx = std::mem::replace(&mut c.ctx, context(&[], Some(FAUCET))).with_verify_threads(n);
        c
    };
    let (mut two, mut one) = (with_threads(2), with_threads(1));
    let a = two.block(txs.clone());
    let b = one.block(txs);
    assert!(a.writes.len() > 600, "{}", a.writes.len());
    assert_eq!(a.header, b.header);
}

#[test]
fn each_games_steps_are_logged_on_chains_with_proofs_and_nowhere_else() {
    use crate::chain::game_log::{game_log_key, GameLog};
    let play = |chain: &mut Chain| {
        chain.block(vec![
            tx(&ALICE, 0, faucet_action()),
            tx(&BOB, 0, faucet_action()),
        ]);
        let create = tx(&ALICE, 1, ttt(json!({"kind": "create"})));
        let id = create.txid()[..16].to_string();
        chain.block(vec![create.clone()]);
        let join = tx(&BOB, 1, ttt(json!({"kind": "join", "id": id})));
        // Out of turn: refused, emits nothing, is not a step of the game.
        let refused = tx(&BOB, 2, ttt(json!({"kind": "move", "id": id, "cell": 4})));
        let moved = tx(&ALICE, 2, ttt(json!({"kind": "move", "id": id, "cell": 4})));
        let out = chain.block(vec![join.clone(), refused, moved.clone()]);
        assert!(!out.receipts[1].ok && out.receipts[2].ok);
        (id, [create, join, moved], out.header.height)
    };
    let mut chain = Chain::new(&[&TICTACTOE], Some(FAUCET));
    let (id, steps, height) = play(&mut chain);
    let key = game_log_key("tictactoe", &id);
    let log = GameLog::from_bytes(&chain.state.map[&key]).expect("a 48-byte log");
    let want = steps
        .iter()
        .enumerate()
        .fold(GameLog::EMPTY, |log, (i, t)| {
            log.extend(&t.txid_bytes(), if i == 0 { height - 1 } else { height })
        });
    assert_eq!(log, want);
    assert_eq!((log.steps, log.last_height), (3, height));

    // The older commitment keeps no log: its state is what it was.
    let mut g = genesis_with(&[&TICTACTOE], Some(FAUCET));
    g.state_commitment = None;
    let mut old = Chain::of(&[&TICTACTOE], g);
    let (id, _, _) = play(&mut old);
    assert!(!old.state.map.contains_key(&game_log_key("tictactoe", &id)));
    assert!(old.state.map.keys().all(|k| !k.starts_with("log/")));
}

#[test]
fn a_players_first_balance_in_a_game_is_witnessed_against_the_parent_root() {
    let mut chain = Chain::new(&[&TICTACTOE], Some(FAUCET));
    chain.block(vec![
        tx(&ALICE, 0, faucet_action()),
        tx(&BOB, 0, faucet_action()),
    ]);
    // A clean step: nothing earlier in its block touched Alice's balance, so the parent's
    // root proves what the step found.
    let parent_root = chain.head.state_root;
    let create = tx(&ALICE, 1, ttt(json!({"kind": "create", "stake": "100"})));
    let id = create.txid()[..16].to_string();
    let out = chain.block(vec![create]);
    assert_eq!(out.start_witnesses.len(), 1, "{:?}", out.start_witnesses);
    let w = &out.start_witnesses[0];
    assert_eq!(
        (
            w.module.as_str(),
            w.game.as_str(),
            w.account.as_str(),
            w.height
        ),
        (
            "tictactoe",
            id.as_str(),
            ALICE.address().as_str(),
            out.header.height
        )
    );
    assert!(w.moves_balance, "the create escrowed Alice's stake");
    let (value, proof) = w.proven.as_ref().expect("a clean step is proven");
    assert_eq!(value.as_deref(), Some(FAUCET.to_string().as_bytes()));
    let key = format!("bal/{}/GOLD", ALICE.address());
    proof.verify(&parent_root, &key, value.as_deref()).unwrap();
    assert!(proof
        .verify(&out.header.state_root, &key, value.as_deref())
        .is_err());
    // A step after a transfer that moved the player's balance in the same block: the parent's
    // root cannot show what it found, so it is witnessed without a proof. A failed step and a
    // transfer are no game step: no witness.
    let out = chain.block(vec![
        tx(&ALICE, 2, pay(&BOB.address(), 5)),
        tx(&BOB, 1, ttt(json!({"kind": "join", "id": "nope"}))),
        tx(&BOB, 2, ttt(json!({"kind": "join", "id": id}))),
    ]);
    assert!(out.receipts.iter().map(|r| r.ok).eq([true, false, true]));
    assert_eq!(out.start_witnesses.len(), 1, "{:?}", out.start_witnesses);
    assert_eq!(out.start_witnesses[0].account, BOB.address());
    assert_eq!(out.start_witnesses[0].proven, None);
    assert!(
        out.start_witnesses[0].moves_balance,
        "the join escrowed Bob's stake"
    );
    // A step that moves no GOLD (an unstaked create) is witnessed as such.
    let out = chain.block(vec![tx(&ALICE, 3, ttt(json!({"kind": "create"})))]);
    assert!(out.start_witnesses[0].proven.is_some() && !out.start_witnesses[0].moves_balance);

    // The older commitment has no proofs and keeps no log: no witness.
    let mut g = genesis_with(&[&TICTACTOE], Some(FAUCET));
    g.state_commitment = None;
    let mut old = Chain::of(&[&TICTACTOE], g);
    old.block(vec![tx(&ALICE, 0, faucet_action())]);
    let out = old.block(vec![tx(&ALICE, 1, ttt(json!({"kind": "create"})))]);
    assert!(out.receipts[0].ok && out.start_witnesses.is_empty());
}
