//! Benchmark: replay throughput beside the sequencer's own execution rate, measured in one run
//! on one generated chain (`gamechain_tests::game_chain`: waves of concurrent tic-tac-toe
//! games, signed transactions, some failing moves).
//!
//! - sequencer: `BlockBuilder::push` per transaction (its signature check, then execution),
//!   `finish`, header signature — one thread, as the node's sequencer does it;
//! - replay: what `gamechain verify` runs: `check_block` (signature checks, on
//!   `REPLAY_BENCH_THREADS` threads) of the next blocks on a second thread while
//!   `Replayer::apply_checked` executes the current one, compares every receipt and header field
//!   and checks the sequencer's header signature; then the final state is compared with the
//!   sequencer's.
//!
//! The machine is shared: the load average at the end is printed beside the figures.
//!
//! Run: `cargo bench -p gamechain-tests --bench replay`. `REPLAY_BENCH_TXS` (default 100000)
//! sets the chain's size in transactions, `REPLAY_BENCH_GAMES` (default 500) the games per wave
//! (the transactions per block), `REPLAY_BENCH_THREADS` (default 2) the replay's signature
//! threads. Prints both rates in transactions per second and their ratio.

use std::time::Instant;

use gamechain_node::record::BlockRecord;
use gamechain_node::replay::{check_block, Replayer};
use gamechain_runtime::Allocation;
use gamechain_tests::game_chain::{context, game_chain, FAIL_EVERY};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let want_txs = env("REPLAY_BENCH_TXS", 100_000);
    let games = env("REPLAY_BENCH_GAMES", 500).max(1);
    let threads = env("REPLAY_BENCH_THREADS", 2).max(1);
    // Transactions per game: 9, plus one failing move every FAIL_EVERY-th game.
    let per_wave = games * 9 + games.div_ceil(FAIL_EVERY);
    let waves = want_txs.div_ceil(per_wave).max(1);

    let made = Instant::now();
    let chain = game_chain(games, waves);
    let made = made.elapsed();
    let head = chain.blocks.len() - 1;

    let ctx = context(
        &chain.genesis,
        &chain.wasm,
        Allocation::Pooling { instances: 4 },
    );
    let ctx = std::sync::Arc::new(
        std::sync::Arc::try_unwrap(ctx)
            .expect("one owner")
            .with_verify_threads(threads),
    );
    let blocks: Vec<BlockRecord> = chain.blocks[1..].to_vec();
    let start = Instant::now();
    let mut replayer = Replayer::new(ctx.clone(), &chain.blocks[0]).unwrap();
    // As `gamechain verify` does it: the next blocks' signature checks on a second thread (a
    // few blocks ahead) while this one executes.
    let (send, receive) = std::sync::mpsc::sync_channel(4);
    std::thread::scope(|s| {
        s.spawn(move || {
            for block in blocks {
                if send.send(check_block(&ctx, block, threads)).is_err() {
                    return;
                }
            }
        });
        for checked in receive {
            replayer
                .apply_checked(&checked)
                .unwrap_or_else(|e| panic!("block {}: {e}", checked.block.height()));
        }
    });
    let replay_time = start.elapsed();
    assert_eq!(
        replayer.state(),
        &chain.state,
        "the replay ends on the sequencer's state"
    );

    let seq_rate = chain.txs as f64 / chain.sequencer_time.as_secs_f64();
    let replay_rate = chain.txs as f64 / replay_time.as_secs_f64();
    println!(
        "chain: {} txs in {head} blocks ({games} concurrent games per wave, {waves} waves), \
         made in {:.1} s including client signing",
        chain.txs,
        made.as_secs_f64()
    );
    println!(
        "sequencer (push with signature check, finish, sign; 1 thread): {:>8.1} s  {seq_rate:>8.0} tx/s",
        chain.sequencer_time.as_secs_f64()
    );
    println!(
        "replay    (verify every block, {threads} signature threads):    {:>8.1} s  {replay_rate:>8.0} tx/s",
        replay_time.as_secs_f64()
    );
    println!(
        "replay / sequencer: {:.2}x; final state root {}; load average {}",
        replay_rate / seq_rate,
        hex::encode(replayer.head().state_root),
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
}
