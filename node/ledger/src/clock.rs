//! [`NodeClock`]: the clock this node makes blocks by, and [`Arrivals`], how the block-making
//! thread is woken when a transaction arrives or the clock jumps.
//!
//! A block's time (`Header::time_ms`) is the only clock reading that reaches a chain. The
//! sequencer stamps each block with this clock, never ahead of it, and never less than the
//! chain's `min_block_interval_ms` after the parent (`gamechain_chain::clock`): when the next
//! block may not carry the current time yet, it waits, and what arrives meanwhile goes into that
//! block.
//!
//! The system clock, plus an offset that only a node started with `dev_clock = true` can move,
//! and only forward (`POST /v1/dev/clock`): tests and local play let deadlines pass without
//! waiting for them. A sequencer is trusted with its clock anyway (it could set the machine's),
//! so the offset gives nobody power over the chain that its operator lacks; validators never
//! run with it (`config.rs`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Most a single `advance` may move the dev clock: 30 days, ms.
pub const MAX_DEV_ADVANCE_MS: u64 = 30 * 24 * 3_600_000;

/// This node's block clock (module docs).
#[derive(Debug)]
pub struct NodeClock {
    /// Added to the system clock, ms; only grows.
    offset_ms: AtomicU64,
    /// Whether [`NodeClock::advance`] is allowed (`dev_clock`).
    dev: bool,
}

/// Why the dev clock did not move.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DevClockError {
    /// The node was not started with `dev_clock = true`.
    Disabled,
    /// `advance_ms` is 0 or over [`MAX_DEV_ADVANCE_MS`].
    OutOfRange(u64),
}

impl std::fmt::Display for DevClockError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DevClockError::Disabled => {
                f.write_str("this node's clock is the system clock (dev_clock is off)")
            }
            DevClockError::OutOfRange(ms) => {
                write!(f, "advance_ms must be 1 to {MAX_DEV_ADVANCE_MS}, not {ms}")
            }
        }
    }
}

impl std::error::Error for DevClockError {}

/// Milliseconds since the Unix epoch from the system clock (0 if it is before 1970).
pub fn system_now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl NodeClock {
    /// The system clock; [`NodeClock::advance`] refused when `dev` is false.
    pub fn new(dev: bool) -> NodeClock {
        NodeClock {
            offset_ms: AtomicU64::new(0),
            dev,
        }
    }

    /// Whether the dev clock is on.
    pub fn is_dev(&self) -> bool {
        self.dev
    }

    /// Now, ms since the Unix epoch: the system clock plus the dev offset.
    pub fn now_ms(&self) -> u64 {
        system_now_ms().saturating_add(self.offset_ms())
    }

    /// How far the dev clock runs ahead of the system clock, ms (0 unless advanced).
    pub fn offset_ms(&self) -> u64 {
        self.offset_ms.load(Ordering::Relaxed)
    }

    /// Moves the clock forward by `ms` (dev clock only). Returns the new offset.
    pub fn advance(&self, ms: u64) -> Result<u64, DevClockError> {
        if !self.dev {
            return Err(DevClockError::Disabled);
        }
        if ms == 0 || ms > MAX_DEV_ADVANCE_MS {
            return Err(DevClockError::OutOfRange(ms));
        }
        Ok(self
            .offset_ms
            .fetch_add(ms, Ordering::Relaxed)
            .saturating_add(ms))
    }

    /// The instant (on the monotonic clock) when this clock will read `time_ms`: now when it
    /// reads that already. (Advancing the dev clock meanwhile only makes it come sooner.)
    pub fn instant_of(&self, time_ms: u64) -> Instant {
        Instant::now() + Duration::from_millis(time_ms.saturating_sub(self.now_ms()))
    }
}

/// A wake-up signal for a blocking thread: a counter that [`Arrivals::notify`] bumps and
/// [`Arrivals::wait`] waits on, so a notification between a check and the wait is never lost.
#[derive(Debug, Default)]
pub struct Arrivals {
    count: Mutex<u64>,
    changed: Condvar,
}

impl Arrivals {
    /// The current count: pass it to [`Arrivals::wait`] after checking whatever you wait for.
    pub fn seen(&self) -> u64 {
        *self.count.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wakes every waiter.
    pub fn notify(&self) {
        let mut count = self.count.lock().unwrap_or_else(|p| p.into_inner());
        *count = count.wrapping_add(1);
        self.changed.notify_all();
    }

    /// Blocks until the count differs from `seen` or `until` passes (`None`: no deadline).
    pub fn wait(&self, seen: u64, until: Option<Instant>) {
        let mut count = self.count.lock().unwrap_or_else(|p| p.into_inner());
        while *count == seen {
            match until {
                None => {
                    count = self.changed.wait(count).unwrap_or_else(|p| p.into_inner());
                }
                Some(t) => {
                    let now = Instant::now();
                    if now >= t {
                        return;
                    }
                    count = self
                        .changed
                        .wait_timeout(count, t - now)
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn the_dev_clock_only_moves_forward_and_only_when_enabled() {
        let system = NodeClock::new(false);
        assert_eq!(system.advance(1_000), Err(DevClockError::Disabled));
        assert_eq!(system.offset_ms(), 0);
        let dev = NodeClock::new(true);
        let before = dev.now_ms();
        assert_eq!(dev.advance(60_000), Ok(60_000));
        assert_eq!(dev.advance(1), Ok(60_001));
        assert!(dev.now_ms() >= before + 60_001);
        assert_eq!(dev.advance(0), Err(DevClockError::OutOfRange(0)));
        assert!(dev.advance(MAX_DEV_ADVANCE_MS + 1).is_err());
        assert_eq!(dev.offset_ms(), 60_001);
        // A time already reached is now.
        assert!(dev.instant_of(0) <= Instant::now());
    }

    #[test]
    fn a_notification_between_check_and_wait_is_not_lost() {
        let a = Arc::new(Arrivals::default());
        let seen = a.seen();
        a.notify();
        // Returns at once: the count moved after `seen` was read.
        a.wait(seen, None);
        let seen = a.seen();
        let b = a.clone();
        let t = std::thread::spawn(move || b.notify());
        a.wait(seen, Some(Instant::now() + Duration::from_secs(30)));
        t.join().unwrap();
        assert_ne!(a.seen(), seen);
        // A deadline alone ends the wait.
        let seen = a.seen();
        a.wait(seen, Some(Instant::now() + Duration::from_millis(5)));
    }
}
