//! What the randomness beacon and scheduled calls cost a block (`docs/randomness.md`): prints
//! the µs to sign one beacon, to check one (what every node and verifier does per block), the
//! bytes it adds to a header, and the time and fuel of a block that runs the most scheduled calls
//! one block runs (64 dice rolls), against the same block without them; then sealed moves
//! (`docs/sealed-moves.md`): the envelope's size, the µs to seal, check and open one, and the
//! time of a round's block that opens the most sealed moves a round takes (32, from 16 sealed
//! rock-paper-scissors games) against the block before it.
//! `cargo bench -p gamechain-runtime --bench beacon`.

use std::time::Instant;

use gamechain_runtime::chain::{
    BeaconConfig, BeaconSecretKey, Genesis, GenesisModule, Header, Network, SecretKey,
};
use gamechain_runtime::{
    execute_block, genesis_state, sign_tx, BlockInput, ChainContext, MemState, Modules, Runtime,
    RuntimeConfig, WasmModule,
};
use gamechain_sdk::schedule::MAX_SCHEDULED_PER_BLOCK;
use gamechain_sdk::{Amount, Checkpoint};
use serde_json::json;
use sha2::Digest;

const CHAIN: &str = "gamechain-bench";

fn main() {
    let key = BeaconSecretKey::from_seed(b"bench");
    let public = key.public_key();
    let n = 300u64;
    let t = Instant::now();
    let beacons: Vec<_> = (0..n).map(|h| key.sign(CHAIN, h)).collect();
    let sign_us = t.elapsed().as_secs_f64() * 1e6 / n as f64;
    let t = Instant::now();
    for (h, b) in beacons.iter().enumerate() {
        public.verify(CHAIN, h as u64, b).unwrap();
    }
    let verify_us = t.elapsed().as_secs_f64() * 1e6 / n as f64;
    let plain = Header {
        height: 1,
        prev_hash: [0; 32],
        time_ms: 0,
        sequencer: "x".repeat(34),
        checkpoint: Checkpoint::default(),
        tx_root: [0; 32],
        receipt_root: [0; 32],
        state_root: [0; 32],
        beacon: None,
    };
    let with = Header {
        beacon: Some(beacons[1]),
        ..plain.clone()
    };
    println!("beacon: sign {sign_us:.0} µs, verify {verify_us:.0} µs (one per block, every node)");
    println!(
        "header: {} bytes without a beacon, {} with (format 2: 9 marker bytes + 48); JSON +{} bytes",
        plain.to_borsh().len(),
        with.to_borsh().len(),
        serde_json::to_string(&with).unwrap().len() - serde_json::to_string(&plain).unwrap().len()
    );

    // A chain with the dice module: 64 duels joined in one block, rolled in the next.
    let wasm = gamechain_sdk::guest_build::build_guest("dice")
        .unwrap()
        .wasm;
    let (ctx, g) = chain_of("dice", &wasm, &public);
    let mut state = MemState {
        map: g.entries.into_iter().collect(),
    };
    let mut hash = g.state_hash;
    let mut head = g.header;
    let players: Vec<SecretKey> = (0..2 * MAX_SCHEDULED_PER_BLOCK as u8)
        .map(|i| SecretKey::from_bytes(Network::Testnet, [i + 10; 32]).unwrap())
        .collect();
    let block = |txs, state: &mut MemState, hash: &mut _, head: &mut Header| {
        let input = BlockInput {
            time_ms: head.time_ms + 1_000,
            checkpoint: Checkpoint::default(),
            beacon: Some(key.sign(CHAIN, head.height + 1)),
            txs,
        };
        let t = Instant::now();
        let out = execute_block(&ctx, state, hash, head, &input).unwrap();
        let ms = t.elapsed().as_secs_f64() * 1e3;
        state.apply(out.writes.clone());
        *hash = out.state_hash.clone();
        *head = out.header.clone();
        (out, ms)
    };
    let game = |op: serde_json::Value| gamechain_runtime::chain::Action::game("dice", &op);
    let faucets = players
        .iter()
        .map(|p| {
            sign_tx(
                p,
                CHAIN,
                0,
                gamechain_runtime::chain::Action::Faucet {
                    token: "GOLD".into(),
                },
            )
        })
        .collect();
    block(faucets, &mut state, &mut hash, &mut head);
    let creates: Vec<_> = players[..MAX_SCHEDULED_PER_BLOCK]
        .iter()
        .map(|p| sign_tx(p, CHAIN, 1, game(json!({"kind": "create", "stake": "100"}))))
        .collect();
    let ids: Vec<String> = creates.iter().map(|t| t.txid()[..16].to_string()).collect();
    block(creates, &mut state, &mut hash, &mut head);
    let joins = players[MAX_SCHEDULED_PER_BLOCK..]
        .iter()
        .zip(&ids)
        .map(|(p, id)| sign_tx(p, CHAIN, 1, game(json!({"kind": "join", "id": id}))))
        .collect();
    let (joined, join_ms) = block(joins, &mut state, &mut hash, &mut head);
    let (rolled, roll_ms) = block(Vec::new(), &mut state, &mut hash, &mut head);
    let (_, idle_ms) = block(Vec::new(), &mut state, &mut hash, &mut head);
    let fuel: u64 = rolled.scheduled.iter().map(|s| s.receipt.fuel_used).sum();
    assert!(joined.scheduled.is_empty());
    assert_eq!(rolled.scheduled.len(), MAX_SCHEDULED_PER_BLOCK);
    assert!(rolled.scheduled.iter().all(|s| s.receipt.ok));
    println!(
        "a block of {} joins (each paying its roll's 2,000,000 fuel): {join_ms:.1} ms",
        MAX_SCHEDULED_PER_BLOCK
    );
    println!(
        "the next block, running {} scheduled rolls (the per-block bound): {roll_ms:.1} ms, {fuel} fuel ({} per roll); an empty block: {idle_ms:.1} ms",
        rolled.scheduled.len(),
        fuel / rolled.scheduled.len() as u64
    );
    sealed(&key);
}

/// A chain of one module `id` (code `wasm`) with a faucet and the beacon key `public`.
fn chain_of(
    id: &str,
    wasm: &[u8],
    public: &gamechain_runtime::chain::BeaconPublicKey,
) -> (ChainContext, gamechain_runtime::GenesisState) {
    let rt = Runtime::new(RuntimeConfig::default()).unwrap();
    let module = std::sync::Arc::new(WasmModule::new(&rt, id, wasm).unwrap());
    let seq = SecretKey::from_bytes(Network::Testnet, [1; 32]).unwrap();
    let cfg = rt.config();
    let genesis = Genesis {
        chain_id: CHAIN.into(),
        network: Network::Testnet,
        sequencer: seq.address(),
        time_ms: 1_790_000_000_000,
        faucet: Some(Amount(100_000)),
        modules: vec![GenesisModule {
            id: id.into(),
            code_hash: hex::encode(sha2::Sha256::digest(wasm)),
        }],
        balances: vec![],
        fuel_apply: cfg.fuel_apply,
        fuel_view: cfg.fuel_view,
        fuel_end_block: cfg.fuel_end_block,
        memory_limit_bytes: cfg.memory_limit_bytes as u64,
        engine_config_hash: cfg.config_hash(),
        fees: None,
        validators: None,
        min_block_interval_ms: Some(1_000),
        max_clock_drift_ms: None,
        max_block_deploys: None,
        max_block_code_bytes: None,
        beacon: Some(BeaconConfig::single(public.clone())),
        state_commitment: None,
    };
    let registry = Modules::new();
    registry.insert(module, wasm).unwrap();
    let ctx = ChainContext::new(genesis.clone(), rt.clone(), registry).unwrap();
    let codes = [(genesis.modules[0].code_hash.clone(), wasm.to_vec())].into();
    let g = genesis_state(&genesis, &codes).unwrap();
    (ctx, g)
}

/// Sealed moves: the envelope's costs, and a round's block opening 32 of them.
fn sealed(key: &BeaconSecretKey) {
    use gamechain_runtime::chain::seal::{self, SealContext};
    let public = key.public_key();
    let ctx = SealContext {
        module: "sealed_rps",
        sender: "DBenchSender",
        tag: b"0123456789abcdef/x",
        round: 100,
    };
    let n = 100u32;
    let t = Instant::now();
    let envelopes: Vec<_> = (0..n)
        .map(|i| seal::seal(&public, CHAIN, &ctx, &[i as u8; 32]))
        .collect();
    let seal_us = t.elapsed().as_secs_f64() * 1e6 / n as f64;
    let t = Instant::now();
    for e in &envelopes {
        seal::check(e, &ctx, &public.to_bytes()).unwrap();
    }
    let check_us = t.elapsed().as_secs_f64() * 1e6 / n as f64;
    let beacon = key.sign(CHAIN, 100);
    let t = Instant::now();
    for (i, e) in envelopes.iter().enumerate() {
        assert_eq!(seal::open(e, &beacon), Some([i as u8; 32]));
    }
    let open_us = t.elapsed().as_secs_f64() * 1e6 / n as f64;
    println!(
        "sealed move: {} bytes (plaintext 32); seal {seal_us:.0} µs, check {check_us:.0} µs (each hand-in), open {open_us:.0} µs (each, in its round's block)",
        seal::SEALED_BYTES
    );

    // 16 sealed rock-paper-scissors games: 32 seats in one round, every move handed in.
    let wasm = gamechain_sdk::guest_build::build_guest("sealed_rps")
        .unwrap()
        .wasm;
    let (ctx, g) = chain_of("sealed_rps", &wasm, &public);
    let mut state = MemState {
        map: g.entries.into_iter().collect(),
    };
    let mut hash = g.state_hash;
    let mut head = g.header;
    let per_round = gamechain_sdk::schedule::MAX_SEALED_PER_ROUND as usize;
    let players: Vec<SecretKey> = (0..per_round as u8)
        .map(|i| SecretKey::from_bytes(Network::Testnet, [i + 10; 32]).unwrap())
        .collect();
    let mut block = |txs: Vec<_>, state: &mut MemState| {
        let input = BlockInput {
            time_ms: head.time_ms + 1_000,
            checkpoint: Checkpoint::default(),
            beacon: Some(key.sign(CHAIN, head.height + 1)),
            txs,
        };
        let t = Instant::now();
        let out = execute_block(&ctx, state, &hash, &head, &input).unwrap();
        let ms = t.elapsed().as_secs_f64() * 1e3;
        assert!(out.receipts.iter().all(|r| r.ok), "{:?}", out.receipts);
        state.apply(out.writes.clone());
        hash = out.state_hash.clone();
        head = out.header.clone();
        (out, ms)
    };
    let game = |op: serde_json::Value| gamechain_runtime::chain::Action::game("sealed_rps", &op);
    let faucet = gamechain_runtime::chain::Action::Faucet {
        token: "GOLD".into(),
    };
    block(
        players
            .iter()
            .map(|p| sign_tx(p, CHAIN, 0, faucet.clone()))
            .collect(),
        &mut state,
    );
    let (xs, os) = players.split_at(per_round / 2);
    let creates: Vec<_> = xs
        .iter()
        .map(|p| {
            sign_tx(
                p,
                CHAIN,
                1,
                game(json!({"kind": "create", "stake": "100", "seal_blocks": 3})),
            )
        })
        .collect();
    let ids: Vec<String> = creates.iter().map(|t| t.txid()[..16].to_string()).collect();
    block(creates, &mut state);
    let joins = os
        .iter()
        .zip(&ids)
        .map(|(p, id)| sign_tx(p, CHAIN, 1, game(json!({"kind": "join", "id": id}))))
        .collect();
    let (joined, join_ms) = block(joins, &mut state);
    let round = joined.header.height + 3;
    let mut moves = Vec::new();
    for (seat, group) in [("x", xs), ("o", os)] {
        for (p, id) in group.iter().zip(&ids) {
            let tag = format!("{id}/{seat}");
            let address = p.address();
            let c = SealContext {
                module: "sealed_rps",
                sender: &address,
                tag: tag.as_bytes(),
                round,
            };
            let mut plaintext = [0u8; 32];
            plaintext[0] = 1 + (moves.len() % 3) as u8;
            let sealed = hex::encode(seal::seal(&public, CHAIN, &c, &plaintext));
            moves.push(sign_tx(
                p,
                CHAIN,
                2,
                game(json!({"kind": "move", "id": id, "sealed": sealed})),
            ));
        }
    }
    let (_, moves_ms) = block(moves, &mut state);
    let (_, idle_ms) = block(Vec::new(), &mut state);
    let (opened, round_ms) = block(Vec::new(), &mut state);
    assert_eq!(opened.header.height, round);
    let openings = opened.scheduled.len() - ids.len();
    assert_eq!(openings, per_round);
    assert!(opened.scheduled.iter().all(|s| s.receipt.ok));
    println!(
        "{} sealed-rps joins (each reserving 2 seats): {join_ms:.1} ms; a block of {} sealed moves handed in: {moves_ms:.1} ms",
        ids.len(),
        per_round
    );
    println!(
        "the round's block, opening {openings} sealed moves (the per-round bound) and settling {} games: {round_ms:.1} ms; an empty block: {idle_ms:.1} ms; so about {:.2} ms per sealed move opened",
        ids.len(),
        (round_ms - idle_ms) / openings as f64
    );
}
