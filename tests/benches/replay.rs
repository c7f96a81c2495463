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
//! The machine may be shared (other builds): besides wall-clock rates it prints each thread's
//! CPU time (`CLOCK_THREAD_CPUTIME_ID`), which other load does not inflate, and the rate the
//! replay pipeline reaches on two free cores (bound by its busier thread), with the load
//! average.
//!
//! Run: `cargo bench -p gamechain-tests --bench replay`. `REPLAY_BENCH_TXS` (default 100000)
//! sets the chain's size in transactions, `REPLAY_BENCH_GAMES` (default 500) the games per wave
//! (the transactions per block), `REPLAY_BENCH_THREADS` (default 1: with the execution thread
//! that is both cores) the replay's signature check threads. Prints the rates in transactions
//! per second and their ratios.

use std::time::Instant;

use gamechain_chain::wire::Block;
use gamechain_node::verify::replay::{check_block, Replayer};
use gamechain_runtime::Allocation;
use gamechain_tests::game_chain::{context, game_chain, thread_cpu, FAIL_EVERY};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let want_txs = env("REPLAY_BENCH_TXS", 100_000);
    let games = env("REPLAY_BENCH_GAMES", 500).max(1);
    let threads = env("REPLAY_BENCH_THREADS", 1).max(1);
    // Transactions per game: 9, plus one failing move every FAIL_EVERY-th game.
    let per_wave = games * 9 + games.div_ceil(FAIL_EVERY);
    let waves = want_txs.div_ceil(per_wave).max(1);

    let made = Instant::now();
    let chain = game_chain(games, waves, false);
    let made = made.elapsed();
    let head = chain.blocks.len() - 1;

    let ctx = context(
        &chain.genesis,
        &chain.codes,
        Allocation::Pooling { instances: 4 },
    );
    let ctx = std::sync::Arc::new(
        std::sync::Arc::try_unwrap(ctx)
            .expect("one owner")
            .with_verify_threads(threads),
    );
    let blocks: Vec<Block> = chain.blocks[1..].to_vec();
    let start = Instant::now();
    let mut replayer = Replayer::new(ctx.clone(), &chain.blocks[0], &chain.codes).unwrap();
    // As `gamechain verify` does it: the next blocks' signature checks on a second thread (a
    // few blocks ahead) while this one executes.
    let (send, receive) = std::sync::mpsc::sync_channel(4);
    let mut busy_apply = std::time::Duration::ZERO;
    let busy_check = std::thread::scope(|s| {
        let checker = s.spawn(move || {
            let mut busy = std::time::Duration::ZERO;
            for block in blocks {
                let t = thread_cpu();
                let checked = check_block(&ctx, block, threads);
                busy += thread_cpu() - t;
                if send.send(checked).is_err() {
                    break;
                }
            }
            busy
        });
        for checked in receive {
            let t = thread_cpu();
            replayer
                .apply_checked(&checked)
                .unwrap_or_else(|e| panic!("block {}: {e}", checked.block.height()));
            busy_apply += thread_cpu() - t;
        }
        checker.join().unwrap()
    });
    let replay_time = start.elapsed();
    assert_eq!(
        replayer.state(),
        &chain.state,
        "the replay ends on the sequencer's state"
    );

    let txs = chain.txs as f64;
    let rate = |d: std::time::Duration| txs / d.as_secs_f64();
    println!(
        "chain: {} txs in {head} blocks ({games} concurrent games per wave, {waves} waves), \
         made in {:.1} s including client signing",
        chain.txs,
        made.as_secs_f64()
    );
    println!(
        "sequencer (push with signature check, finish, sign; 1 thread): wall {:>6.1} s = {:>6.0} tx/s; \
         CPU {:>6.1} s = {:>6.0} tx/s per core",
        chain.sequencer_time.as_secs_f64(),
        rate(chain.sequencer_time),
        chain.sequencer_cpu.as_secs_f64(),
        rate(chain.sequencer_cpu)
    );
    println!(
        "replay    (verify every block; signature checks on a 2nd thread, {threads} check threads): \
         wall {:>6.1} s = {:>6.0} tx/s",
        replay_time.as_secs_f64(),
        rate(replay_time)
    );
    // Checks of the zero-th helper thread only: check_txs's own scoped threads are not counted
    // when `threads` > 1, so the check figure is a lower bound then.
    println!(
        "replay CPU: execution and comparison {:.1} s ({:.0} tx/s), signature checks {:.1} s{}",
        busy_apply.as_secs_f64(),
        rate(busy_apply),
        busy_check.as_secs_f64(),
        if threads > 1 {
            " (first check thread only)"
        } else {
            ""
        }
    );
    let critical = busy_apply.max(busy_check);
    println!(
        "replay on two free cores (pipeline bound by its busiest thread): {:.0} tx/s",
        rate(critical)
    );
    println!(
        "ratio replay / sequencer: wall {:.2}x, two free cores vs one {:.2}x; final state root {}; load average {}",
        rate(replay_time) / rate(chain.sequencer_time),
        rate(critical) / rate(chain.sequencer_cpu),
        hex::encode(replayer.head().state_root),
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
}
