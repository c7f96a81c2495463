//! What the randomness beacon and scheduled calls cost a block (`docs/randomness.md`): prints
//! the µs to sign one beacon, to check one (what every node and verifier does per block), the
//! bytes it adds to a header, and the time and fuel of a block that runs the most scheduled calls
//! one block runs (64 dice rolls), against the same block without them.
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
    let rt = Runtime::new(RuntimeConfig::default()).unwrap();
    let module = std::sync::Arc::new(WasmModule::new(&rt, "dice", &wasm).unwrap());
    let seq = SecretKey::from_bytes(Network::Testnet, [1; 32]).unwrap();
    let cfg = rt.config();
    let genesis = Genesis {
        chain_id: CHAIN.into(),
        network: Network::Testnet,
        sequencer: seq.address(),
        time_ms: 1_790_000_000_000,
        faucet: Some(Amount(100_000)),
        modules: vec![GenesisModule {
            id: "dice".into(),
            code_hash: hex::encode(sha2::Sha256::digest(&wasm)),
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
    };
    let registry = Modules::new();
    registry.insert(module, &wasm).unwrap();
    let ctx = ChainContext::new(genesis.clone(), rt.clone(), registry).unwrap();
    let codes = [(genesis.modules[0].code_hash.clone(), wasm.clone())].into();
    let g = genesis_state(&genesis, &codes).unwrap();
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
}
