//! The determinism matrix, in process, on one generated chain (`gamechain_tests::game_chain`:
//! concurrent tic-tac-toe games with failing moves, staked escrow and payouts, faucets): the
//! chain is replayed under every setting that must not matter, and every replay verifies every
//! block (so reaches the sequencer's state root at every height) and ends on the sequencer's
//! exact state:
//!
//! - pooling vs on-demand instance allocation, warm-instance reuse on vs off, 1 vs 2 signature
//!   threads (all 8 combinations);
//! - compiled modules cold (a new runtime) vs warm (the same context replayed twice);
//! - a replay "restarted" at random heights: resumed from the state it had, on a new runtime;
//! - `verify` from an in-memory source vs from an export file of it.
//!
//! And the checker is not blind: one changed event, one changed fuel figure, one changed
//! transaction byte are each named by height, index and field.
//!
//! Not covered here: Cranelift optimisation levels (the runtime fixes `OptLevel::Speed`; no
//! setting exists), out-of-fuel and trapping transactions and `end_block` writes (tic-tac-toe
//! has none; the runtime's own tests cover them), timeouts (150 blocks).

use std::hash::{BuildHasher, RandomState};
use std::sync::{Arc, LazyLock};

use gamechain_node::export::{export, FileSource};
use gamechain_node::record::BlockRecord;
use gamechain_node::replay::Replayer;
use gamechain_node::replay_source::{ChainSource, ExpectedState, SourceError};
use gamechain_node::verify::{verify, VerifyOptions};
use gamechain_runtime::chain::Genesis;
use gamechain_runtime::{Allocation, ChainContext, MemState};
use gamechain_tests::game_chain::{context, game_chain, GameChain};
use serde_json::json;

static CHAIN: LazyLock<GameChain> = LazyLock::new(|| game_chain(12, 3));

/// Replays the whole chain on `ctx`; panics at a divergence; returns the final state.
fn replay(ctx: &Arc<ChainContext>, chain: &GameChain) -> MemState {
    let mut r = Replayer::new(ctx.clone(), &chain.blocks[0]).unwrap();
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
    let codes = [(c.genesis.modules[0].code_hash.clone(), c.wasm.clone())]
        .into_iter()
        .collect();
    let modules = gamechain_runtime::Modules::from_genesis(&runtime, &c.genesis, &codes).unwrap();
    Arc::new(
        ChainContext::new(c.genesis.clone(), runtime, modules)
            .unwrap()
            .with_verify_threads(threads),
    )
}

#[test]
fn every_replay_setting_reaches_the_same_roots() {
    let chain = &*CHAIN;
    assert!(chain.txs > 300 && chain.blocks.len() == 31, "{}", chain.txs);
    let failed = chain
        .blocks
        .iter()
        .flat_map(|b| &b.txs)
        .filter(|t| !t.receipt.ok)
        .count();
    assert_eq!(
        failed, 9,
        "every fourth game's move on a taken cell fails, 3 waves"
    );
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
        context(&chain.genesis, &chain.wasm, Allocation::OnDemand),
        &chain.blocks[0],
    )
    .unwrap();
    for b in &chain.blocks[1..] {
        r.apply(b).unwrap_or_else(|e| panic!("{e}"));
        if restarts.contains(&b.height()) {
            let ctx = context(
                &chain.genesis,
                &chain.wasm,
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
type Tamper = Box<dyn Fn(&mut BlockRecord)>;

/// The generated chain as a [`ChainSource`].
struct MemSource {
    genesis: Genesis,
    wasm: Vec<u8>,
    blocks: Vec<BlockRecord>,
    state: Option<MemState>,
}

impl MemSource {
    fn of(chain: &GameChain) -> MemSource {
        MemSource {
            genesis: chain.genesis.clone(),
            wasm: chain.wasm.clone(),
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
        assert_eq!(hash, self.genesis.modules[0].code_hash);
        Ok(self.wasm.clone())
    }
    fn head_height(&mut self) -> Result<u64, SourceError> {
        Ok(self.blocks.len() as u64 - 1)
    }
    fn block(&mut self, height: u64) -> Result<BlockRecord, SourceError> {
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
                b.txs[i].tx.body = b.txs[i].tx.body.replacen("\"nonce\":", "\"nonce\": ", 1)
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
