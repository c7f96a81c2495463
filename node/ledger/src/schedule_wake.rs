//! When a node must make a block for the chain's scheduled calls (`sdk-guest/src/schedule.rs`),
//! on a chain that is otherwise idle: node policy, never consensus (which blocks run a call is
//! decided by the state and the blocks themselves). A call due at the next height, or at a time
//! the last block's time has reached, needs a block now; a call due at a later time needs a
//! block at that time (then, its parent's time having reached it, the block after runs it).
//! Calls due at a later height wait for the chain to get there at its own pace: a timeout counted
//! in blocks counts the blocks the chain makes anyway, and one call far ahead must not make an
//! idle chain race to it. Sealed calls are the exception (`docs/sealed-moves.md`): players have
//! sealed moves to a round and wait for it to open them, so a round at most
//! [`SEALED_WAKE_BLOCKS`] ahead makes the chain advance at its minimum interval until it comes
//! (20 blocks of a sealed game take 20 minimum intervals, not 20 heartbeats of an idle chain).

use gamechain_runtime::chain::Header;
use gamechain_runtime::State;
use gamechain_sdk::schedule::{
    due_of, SCHED_HEIGHT_PREFIX, SCHED_SEALED_PREFIX, SCHED_TIME_PREFIX,
};

/// How far ahead a sealed call's round may be and still make an idle chain advance to it.
pub const SEALED_WAKE_BLOCKS: u64 = 1_000;

/// What the scheduled calls need of the block maker after block `tip`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// A call is due in the next block: make it as soon as the clock rules allow.
    Now,
    /// The earliest time a waiting call is due at (ms since the Unix epoch): make a block then.
    At(u64),
    /// Nothing to do for them.
    Never,
}

/// [`Wake`] for the chain whose state after `tip` is `state` (three scans of one key each).
pub fn scheduled_wake(state: &dyn State, tip: &Header) -> Wake {
    let first = |prefix: &str| {
        state
            .scan(prefix, None, 1)
            .first()
            .and_then(|(k, _)| due_of(k))
    };
    if first(SCHED_HEIGHT_PREFIX).is_some_and(|h| h <= tip.height.saturating_add(1)) {
        return Wake::Now;
    }
    if first(SCHED_SEALED_PREFIX)
        .is_some_and(|r| r <= tip.height.saturating_add(1 + SEALED_WAKE_BLOCKS))
    {
        return Wake::Now;
    }
    match first(SCHED_TIME_PREFIX) {
        Some(t) if t <= tip.time_ms => Wake::Now,
        Some(t) => Wake::At(t),
        None => Wake::Never,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gamechain_runtime::MemState;
    use gamechain_sdk::schedule::{queue_key, At};

    fn tip(height: u64, time_ms: u64) -> Header {
        Header {
            height,
            prev_hash: [0; 32],
            time_ms,
            sequencer: String::new(),
            checkpoint: Default::default(),
            tx_root: [0; 32],
            receipt_root: [0; 32],
            state_root: [0; 32],
            beacon: None,
        }
    }

    #[test]
    fn wakes_for_the_next_height_or_a_reached_time_only() {
        let mut s = MemState::new();
        assert_eq!(scheduled_wake(&s, &tip(5, 1000)), Wake::Never);
        s.map.insert(queue_key(At::Height(9), 1), b"{}".to_vec());
        assert_eq!(scheduled_wake(&s, &tip(5, 1000)), Wake::Never);
        assert_eq!(scheduled_wake(&s, &tip(8, 1000)), Wake::Now);
        s.map.insert(queue_key(At::TimeMs(5000), 2), b"{}".to_vec());
        assert_eq!(scheduled_wake(&s, &tip(5, 1000)), Wake::At(5000));
        assert_eq!(scheduled_wake(&s, &tip(5, 5000)), Wake::Now);
    }

    #[test]
    fn a_sealed_round_within_reach_makes_the_chain_advance() {
        use gamechain_sdk::schedule::sealed_queue_key;
        let mut s = MemState::new();
        s.map.insert(
            sealed_queue_key(5 + 2 + SEALED_WAKE_BLOCKS, 1),
            b"{}".to_vec(),
        );
        assert_eq!(scheduled_wake(&s, &tip(5, 1000)), Wake::Never);
        assert_eq!(scheduled_wake(&s, &tip(6, 1000)), Wake::Now);
        s.map.insert(sealed_queue_key(20, 2), b"{}".to_vec());
        assert_eq!(scheduled_wake(&s, &tip(5, 1000)), Wake::Now);
    }
}
