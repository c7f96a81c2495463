//! The determinism matrix, in process, on one generated chain (`gamechain_tests::game_chain`:
//! concurrent tic-tac-toe games with moves out of turn, staked escrow and payouts, faucets): the
//! chain is replayed under every setting that must not matter, and every replay verifies every
//! block (so reaches the sequencer's state root at every height) and ends on the sequencer's
//! exact state:
//!
//! - pooling vs on-demand instance allocation, warm-instance reuse on vs off, 1 vs 2 signature
//!   threads (all 8 combinations);
//! - compiled modules cold (a new runtime) vs warm (the same context replayed twice);
//! - both compilers (Cranelift and Winch) for genesis modules and for uploads, in all four
//!   pairings (not consensus: fuel is the instrumentation's), and a tier-up in the middle of
//!   the chain: every module running Winch's code (the genesis modules, among them the rules
//!   the channel calls by code hash) replaced by its Cranelift compile halfway through the
//!   replay;
//! - every Cranelift optimisation level (`RuntimeConfig::opt_level`, not consensus), each
//!   through a disk compiled-module cache (`ModuleCache`) first cold (empty: every module
//!   compiled and stored) then warm (a reopened cache: every module deserialised);
//! - a replay "restarted" at random heights: resumed from the state it had, on a new runtime;
//! - `verify` from an in-memory source vs from an export file of it.
//!
//! The chain also runs the hand-written `chaos` module: trapping calls, calls that run out of
//! fuel, writes, and an `end_block` that writes every block; and one off-chain channel game per
//! wave (docs/channels.md): offer, join, a move on the move board, challenge, respond, a
//! settlement by history, an equivocation proof, payouts: signature checks and read-only calls
//! into the rules module (`verify_signed`, `call_pure`) replayed under every setting.
//!
//! And the checker is not blind: one changed event, one changed fuel figure, one changed
//! transaction byte are each named by height, index and field.
//!
//! Not covered here: tic-tac-toe timeouts (150 blocks).

use std::hash::{BuildHasher, RandomState};
use std::sync::{Arc, LazyLock};

use gamechain_chain::wire::Block;
use gamechain_node::verify::export::{export, FileSource};
use gamechain_node::verify::replay::Replayer;
use gamechain_node::verify::source::{ChainSource, ExpectedState, SourceError};
use gamechain_node::verify::verifier::{verify, VerifyOptions};
use gamechain_runtime::chain::{Genesis, SignedTx};
use gamechain_runtime::{
    precompile, Allocation, ChainContext, Compiler, MemState, ModuleCache, Modules, OptLevel,
};
use gamechain_tests::game_chain::{context, game_chain, GameChain};
use serde_json::json;

static CHAIN: LazyLock<GameChain> = LazyLock::new(|| game_chain(12, 3, true));

/// Replays the whole chain on `ctx`; panics at a divergence; returns the final state.
fn replay(ctx: &Arc<ChainContext>, chain: &GameChain) -> MemState {
    let mut r = Replayer::new(ctx.clone(), &chain.blocks[0], &chain.codes).unwrap();
    for b in &chain.blocks[1..] {
        r.apply(b).unwrap_or_else(|e| panic!("{e}"));
    }
    r.state().clone()
}

fn ctx_with(allocation: Allocation, reuse: bool, threads: usize) -> Arc<ChainContext> {
    let c = &*CHAIN;
    let mut config = gamechain_runtime::runtime_config(&c.genesis, allocation);
    config.reuse_instances = reuse;
    let runtime = gamechain_runtime::Runtime::new(config).unwrap();
    let modules = gamechain_runtime::Modules::from_genesis(&runtime, &c.genesis, &c.codes).unwrap();
    Arc::new(
        ChainContext::new(c.genesis.clone(), runtime, modules)
            .unwrap()
            .with_verify_threads(threads),
    )
}

#[test]
fn every_replay_setting_reaches_the_same_roots() {
    let chain = &*CHAIN;
    // 12 games x 9 transactions + 3 failing moves, and 16 chaos calls, per wave; 8 channel
    // transactions per wave and one equivocation proof (wave 1).
    assert_eq!(
        (chain.txs, chain.blocks.len()),
        (3 * (111 + 16 + 8) + 1, 31)
    );
    let events: Vec<&str> = chain
        .blocks
        .iter()
        .flat_map(|b| &b.txs)
        .flat_map(|t| &t.receipt.events)
        .map(|e| e.kind.as_str())
        .collect();
    let events_named = |name: &str| events.iter().filter(|e| **e == name).count();
    for (name, n) in [
        ("game_opened", 3),
        // A response passes the challenge on: a second `game_challenged`.
        ("game_challenged", 6),
        ("game_responded", 3),
        ("game_concluding", 3),
        ("equivocation", 1),
        ("game_settled", 1),
        ("paid", 2),
        ("posted", 1),
    ] {
        assert_eq!(events_named(name), n, "{name}: {events:?}");
    }
    let errors: Vec<&str> = chain
        .blocks
        .iter()
        .flat_map(|b| &b.txs)
        .filter_map(|t| t.receipt.error.as_deref())
        .collect();
    let count = |text: &str| errors.iter().filter(|e| **e == text).count();
    // Every fourth game's move out of turn, 3 waves; chaos traps every other block and
    // runs out of fuel once a wave.
    assert_eq!(count("not allowed: not your turn"), 9, "{errors:?}");
    assert_eq!(count("internal: trap: unreachable"), 15, "{errors:?}");
    assert_eq!(count("internal: out of fuel"), 3, "{errors:?}");
    assert_eq!(errors.len(), 27, "{errors:?}");
    for b in &chain.blocks[1..] {
        let chaos = b.end_block.iter().find(|(m, _)| m == "chaos");
        assert!(
            chaos.is_some_and(|(_, r)| r.ok),
            "block {}: {:?}",
            b.height(),
            b.end_block
        );
    }
    for allocation in [Allocation::Pooling { instances: 2 }, Allocation::OnDemand] {
        for reuse in [true, false] {
            for threads in [1, 2] {
                let ctx = ctx_with(allocation, reuse, threads);
                let what = format!("{allocation:?}, reuse {reuse}, {threads} threads");
                assert_eq!(replay(&ctx, chain), chain.state, "{what}: cold");
                assert_eq!(replay(&ctx, chain), chain.state, "{what}: warm");
            }
        }
    }
}

/// A context at `opt_level` whose modules are compiled through `cache`; with them, whether each
/// module's machine code came from the cache.
fn ctx_cached(opt_level: OptLevel, cache: &Arc<ModuleCache>) -> (Arc<ChainContext>, Vec<bool>) {
    let c = &*CHAIN;
    let mut config =
        gamechain_runtime::runtime_config(&c.genesis, Allocation::Pooling { instances: 2 });
    config.opt_level = opt_level;
    let runtime = gamechain_runtime::Runtime::new(config).unwrap();
    let modules = Modules::new().with_cache(cache.clone());
    modules
        .load_genesis(&runtime, &c.genesis, &c.codes)
        .unwrap();
    let cached = modules
        .iter()
        .iter()
        .map(|e| e.module.code_source().is_cached())
        .collect();
    let ctx = ChainContext::new(c.genesis.clone(), runtime, modules).unwrap();
    (Arc::new(ctx), cached)
}

#[test]
fn every_opt_level_and_a_cold_then_warm_cache_reach_the_same_roots() {
    let chain = &*CHAIN;
    let modules = chain.genesis.modules.len();
    assert_eq!(
        modules, 5,
        "tictactoe, chaos, channel, moveboard and ttt_rules"
    );
    // The channel calls `ttt_rules` by code hash (`call_code`): the genesis module of that code
    // serves (the compiler is not consensus), so nothing more is compiled.
    let compiled = modules;
    let dir = tempfile::tempdir().unwrap();
    for (i, opt_level) in OptLevel::ALL.into_iter().enumerate() {
        // Cold: a level's first use finds no entry (the level is in the cache key), so every
        // module is compiled now and stored.
        let cold_cache = Arc::new(ModuleCache::open(dir.path()).unwrap());
        let (cold, cached) = ctx_cached(opt_level, &cold_cache);
        assert_eq!(cached, vec![false; modules], "{opt_level:?}: cold");
        assert_eq!(replay(&cold, chain), chain.state, "{opt_level:?}: cold");
        let stats = cold_cache.stats();
        assert_eq!(
            (stats.hits, stats.stored),
            (0, compiled as u64),
            "{opt_level:?}"
        );
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            (i + 1) * compiled,
            "{opt_level:?}: one entry per compiled module and level"
        );
        drop(cold);
        // Warm: a reopened cache (a restarted node) serves every module.
        let warm_cache = Arc::new(ModuleCache::open(dir.path()).unwrap());
        let (warm, cached) = ctx_cached(opt_level, &warm_cache);
        assert_eq!(cached, vec![true; modules], "{opt_level:?}: warm");
        assert_eq!(replay(&warm, chain), chain.state, "{opt_level:?}: warm");
        let stats = warm_cache.stats();
        assert_eq!(
            (stats.hits, stats.misses, stats.rejected),
            (compiled as u64, 0, 0)
        );
    }
}

#[test]
fn both_compilers_for_either_origin_reach_the_same_roots() {
    // Fuel is counted by the instrumentation, so the compiler is node policy: genesis modules
    // and uploads (the channel's `call_code` of `ttt_rules` runs as an upload) under Cranelift
    // or Winch, in all four pairings, replay every block to the sequencer's roots, receipts and
    // fuel, under the same engine configuration hash.
    let c = &*CHAIN;
    for genesis_compiler in Compiler::ALL {
        for upload_compiler in Compiler::ALL {
            let mut config = gamechain_runtime::runtime_config(&c.genesis, Allocation::OnDemand);
            config.genesis_compiler = genesis_compiler;
            config.upload_compiler = upload_compiler;
            assert_eq!(config.config_hash(), c.genesis.engine_config_hash);
            let runtime = gamechain_runtime::Runtime::new(config).unwrap();
            let modules = Modules::from_genesis(&runtime, &c.genesis, &c.codes).unwrap();
            for e in modules.iter() {
                assert_eq!(e.module.compiler(), genesis_compiler);
            }
            let ctx = Arc::new(ChainContext::new(c.genesis.clone(), runtime, modules).unwrap());
            assert_eq!(
                replay(&ctx, c),
                c.state,
                "genesis {genesis_compiler:?}, uploads {upload_compiler:?}"
            );
        }
    }
}

#[test]
fn a_tier_up_in_the_middle_of_the_chain_changes_no_root() {
    // Every module starts on Winch; halfway through the replay each one waiting for a tier-up
    // (the genesis modules, among them the rules the channel calls by code hash) is compiled
    // by Cranelift and swapped in, as a node's tier-up thread does; the replay goes on to the
    // sequencer's roots, receipts and fuel at every height.
    let c = &*CHAIN;
    let mut config =
        gamechain_runtime::runtime_config(&c.genesis, Allocation::Pooling { instances: 4 });
    config.genesis_compiler = Compiler::Winch;
    config.upload_compiler = Compiler::Winch;
    let runtime = gamechain_runtime::Runtime::new(config).unwrap();
    let modules = Modules::from_genesis(&runtime, &c.genesis, &c.codes).unwrap();
    let ctx = Arc::new(ChainContext::new(c.genesis.clone(), runtime, modules).unwrap());
    let mut r = Replayer::new(ctx.clone(), &c.blocks[0], &c.codes).unwrap();
    let half = c.blocks.len() / 2;
    for b in &c.blocks[1..half] {
        r.apply(b).unwrap_or_else(|e| panic!("{e}"));
    }
    ctx.modules().enable_tier_up();
    let mut tiered = Vec::new();
    while let Some(m) = ctx.modules().next_tier_up(std::time::Duration::ZERO) {
        let code = &c.codes[m.code_hash()];
        let t = m
            .tier_up(code, None, |b| precompile(OptLevel::Speed, b))
            .unwrap_or_else(|e| panic!("{}: {e}", m.id()));
        assert!(ctx.modules().install_tiered(Arc::new(t)), "{}", m.id());
        tiered.push(m.id());
    }
    tiered.sort();
    let genesis_ids = c.genesis.modules.iter().map(|m| m.id.as_str());
    assert!(
        genesis_ids.clone().all(|id| tiered.contains(&id)),
        "tiered up: {tiered:?}"
    );
    for e in ctx.modules().iter() {
        assert_eq!(
            e.module.compiler(),
            Compiler::Cranelift,
            "{}",
            e.module.id()
        );
        // Calls by code hash (the channel's calls into its rules) run the tiered code too.
        let (by_code, _) = ctx
            .modules()
            .resolve_code(ctx.runtime(), r.state(), e.module.code_hash())
            .unwrap()
            .unwrap();
        assert_eq!(by_code.compiler(), Compiler::Cranelift, "{}", e.module.id());
    }
    for b in &c.blocks[half..] {
        r.apply(b).unwrap_or_else(|e| panic!("{e}"));
    }
    assert_eq!(r.state(), &c.state);
}

#[test]
fn a_replay_restarted_at_random_heights_ends_the_same() {
    let chain = &*CHAIN;
    let seed = RandomState::new().hash_one(0u8);
    let head = chain.blocks.len() as u64 - 1;
    // Three restart heights from a random seed (printed, so a failure can be reproduced).
    let mut restarts: Vec<u64> = (0..3u64)
        .map(|i| 1 + seed.rotate_left(i as u32 * 21) % (head - 1))
        .collect();
    restarts.sort();
    println!("restarts after heights {restarts:?} (seed {seed})");
    let mut r = Replayer::new(
        context(&chain.genesis, &chain.codes, Allocation::OnDemand),
        &chain.blocks[0],
        &chain.codes,
    )
    .unwrap();
    for b in &chain.blocks[1..] {
        r.apply(b).unwrap_or_else(|e| panic!("{e}"));
        if restarts.contains(&b.height()) {
            let ctx = context(
                &chain.genesis,
                &chain.codes,
                Allocation::Pooling { instances: 3 },
            );
            r = Replayer::resume(
                ctx,
                r.state().clone(),
                r.state_hash().clone(),
                r.head().clone(),
            );
        }
    }
    assert_eq!(r.state(), &chain.state);
}

/// One change to a block.
type Tamper = Box<dyn Fn(&mut Block)>;

/// The generated chain as a [`ChainSource`].
struct MemSource {
    genesis: Genesis,
    codes: std::collections::BTreeMap<String, Vec<u8>>,
    blocks: Vec<Block>,
    state: Option<MemState>,
}

impl MemSource {
    fn of(chain: &GameChain) -> MemSource {
        MemSource {
            genesis: chain.genesis.clone(),
            codes: chain.codes.clone(),
            blocks: chain.blocks.clone(),
            state: Some(chain.state.clone()),
        }
    }
}

impl ChainSource for MemSource {
    fn describe(&self) -> String {
        "memory".into()
    }
    fn genesis(&mut self) -> Result<Genesis, SourceError> {
        Ok(self.genesis.clone())
    }
    fn code(&mut self, hash: &str) -> Result<Vec<u8>, SourceError> {
        Ok(self.codes[hash].clone())
    }
    fn head_height(&mut self) -> Result<u64, SourceError> {
        Ok(self.blocks.len() as u64 - 1)
    }
    fn block(&mut self, height: u64) -> Result<Block, SourceError> {
        Ok(self.blocks[height as usize].clone())
    }
    fn expected_state(&mut self) -> Result<Option<ExpectedState>, SourceError> {
        Ok(self.state.take().map(|state| ExpectedState {
            height: self.blocks.len() as u64 - 1,
            state,
        }))
    }
}

#[test]
fn verify_from_memory_and_from_an_export_agree_and_name_tampering() {
    let chain = &*CHAIN;
    let options = VerifyOptions::default();
    let direct = verify(Box::new(MemSource::of(chain)), &options, &mut |_| {}).unwrap();
    assert_eq!(direct.divergence, None);
    assert_eq!(direct.txs as usize, chain.txs);
    assert_eq!(direct.state_entries_checked, Some(chain.state.map.len()));

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chain.export");
    let summary = export(&mut MemSource::of(chain), &path, |_, _| {}).unwrap();
    assert_eq!(summary.blocks as usize, chain.blocks.len());
    let from_file = verify(
        Box::new(FileSource::open(&path).unwrap()),
        &VerifyOptions {
            allocation: Allocation::OnDemand,
            verify_threads: Some(1),
            reuse_instances: false,
        },
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(from_file.divergence, None);
    assert_eq!(
        (&from_file.state_root, from_file.blocks),
        (&direct.state_root, direct.blocks)
    );

    // One field changed each time: the replay names the block, the transaction and the field.
    let (h, i) = (5usize, 3usize);
    let cases: [(&str, Tamper); 3] = [
        (
            "receipt.events",
            Box::new(move |b| b.txs[i].receipt.events[0].data = json!({"forged": true})),
        ),
        (
            "receipt.fuel_used",
            Box::new(move |b| b.txs[i].receipt.fuel_used += 1),
        ),
        (
            "tx.signature",
            Box::new(move |b| {
                let tx = &b.txs[i].tx;
                let body = tx.body().replacen("\"nonce\":", "\"nonce\": ", 1);
                b.txs[i].tx = SignedTx::new(body, tx.signature().to_string());
            }),
        ),
    ];
    for (field, tamper) in cases {
        let mut source = MemSource::of(chain);
        assert!(!source.blocks[h].txs[i].receipt.events.is_empty());
        tamper(&mut source.blocks[h]);
        let report = verify(Box::new(source), &options, &mut |_| {}).unwrap();
        let d = report
            .divergence
            .unwrap_or_else(|| panic!("{field}: not found"));
        assert_eq!(
            (d.height, d.tx_index, d.field.as_str()),
            (h as u64, Some(i), field)
        );
        assert_eq!(report.blocks, h as u64, "{field}: blocks below verified");
    }
}
