//! How a channel client that must not give up (the watchtower) waits before asking the node
//! again: which failures are worth retrying ([`transient`]) and how long to wait
//! ([`Backoff`]: exponential, capped, with jitter, at least the node's `retry-after`). This is
//! client policy only: nothing here reaches the chain, so the jitter may come from the OS.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use gamechain_client::client::{Client, ClientError};

use crate::error::ChannelError;

/// The first wait.
pub const BACKOFF_BASE: Duration = Duration::from_millis(250);
/// The longest wait (before the node's `retry-after`, which may ask for more).
pub const BACKOFF_CAP: Duration = Duration::from_secs(30);

/// Whether `e` may go away by itself: the node rate-limited us (`429`), failed or was
/// restarting (`5xx`, an answer that is not the API's, e.g. a proxy's page), could not be
/// reached or dropped the connection, or a receipt did not come in time. A refusal by the node
/// (`4xx`), by the chain (a failed transaction) or by this client is not.
pub fn transient(e: &ChannelError) -> bool {
    match e {
        ChannelError::Client(c) => match c {
            ClientError::Api { status, .. } => *status == 429 || *status >= 500,
            ClientError::Protocol { .. }
            | ClientError::Transport(_)
            | ClientError::Timeout { .. } => true,
            ClientError::Usage(_) => false,
        },
        _ => false,
    }
}

/// Exponential backoff with "equal jitter": the `n`-th wait in a row is half of
/// `min(cap, base · 2ⁿ)` plus a random part of up to the other half, and never less than the
/// `retry-after` the node last asked for. The random part comes from a generator seeded once
/// (from the OS through `RandomState`, or a given seed for tests).
#[derive(Debug, Clone)]
pub struct Backoff {
    base: Duration,
    cap: Duration,
    attempt: u32,
    rng: u64,
}

impl Backoff {
    /// [`BACKOFF_BASE`] to [`BACKOFF_CAP`], seeded from the OS.
    pub fn new() -> Backoff {
        let mut h = RandomState::new().build_hasher();
        h.write_u64(0x0067_616d_6563_686e);
        Backoff::with(BACKOFF_BASE, BACKOFF_CAP, h.finish())
    }

    /// From `base` to `cap`, jitter seeded with `seed`.
    pub fn with(base: Duration, cap: Duration, seed: u64) -> Backoff {
        Backoff {
            base,
            cap,
            attempt: 0,
            rng: seed | 1,
        }
    }

    /// The next wait after a failure; `retry_after`: what the node asked for, if anything.
    pub fn next(&mut self, retry_after: Option<Duration>) -> Duration {
        let ceiling = self
            .base
            .saturating_mul(1u32 << self.attempt.min(20))
            .min(self.cap);
        self.attempt = self.attempt.saturating_add(1);
        let half = ceiling / 2;
        let jitter_ms = half.as_millis() as u64;
        let extra = if jitter_ms == 0 {
            0
        } else {
            self.random() % (jitter_ms + 1)
        };
        let wait = half + Duration::from_millis(extra);
        wait.max(retry_after.unwrap_or_default())
    }

    /// After a success: the next failure waits from the base again.
    pub fn reset(&mut self) {
        self.attempt = 0;
    }

    /// Failures in a row so far.
    pub fn failures(&self) -> u32 {
        self.attempt
    }

    /// xorshift64*.
    fn random(&mut self) -> u64 {
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff::new()
    }
}

/// The node's `retry-after` to honour after `e`: the client's last `429` answer's, when `e` is
/// a `429`.
pub fn retry_after(client: &Client, e: &ChannelError) -> Option<Duration> {
    match e {
        ChannelError::Client(ClientError::Api { status: 429, .. }) => client.last_retry_after(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_backoff_doubles_to_its_cap_with_jitter_and_honours_retry_after() {
        let mut b = Backoff::with(Duration::from_millis(100), Duration::from_secs(2), 7);
        let waits: Vec<Duration> = (0..8).map(|_| b.next(None)).collect();
        for (n, w) in waits.iter().enumerate() {
            let ceiling = Duration::from_millis(100 * (1 << n)).min(Duration::from_secs(2));
            assert!(*w >= ceiling / 2 && *w <= ceiling, "wait {n}: {w:?}");
        }
        assert!(waits[7] <= Duration::from_secs(2), "capped");
        assert_eq!(b.next(Some(Duration::from_secs(9))), Duration::from_secs(9));
        b.reset();
        assert!(b.next(None) <= Duration::from_millis(100));
        // Two generators seeded alike wait alike; seeded apart, they spread.
        let mut c = Backoff::with(Duration::from_millis(100), Duration::from_secs(2), 7);
        let mut d = Backoff::with(Duration::from_millis(100), Duration::from_secs(2), 8);
        let (c5, d5): (Vec<_>, Vec<_>) = (0..5).map(|_| (c.next(None), d.next(None))).unzip();
        assert_eq!(c5, waits[..5]);
        assert_ne!(c5, d5);
    }

    #[test]
    fn channel_errors_worth_retrying_are_told_apart() {
        let api = |status: u16| {
            ChannelError::Client(ClientError::Api {
                status,
                code: "x".into(),
                message: "y".into(),
            })
        };
        assert!(transient(&api(429)));
        assert!(transient(&api(500)));
        assert!(transient(&api(503)));
        assert!(!transient(&api(404)));
        assert!(!transient(&api(409)));
        assert!(transient(&ChannelError::Client(ClientError::Transport(
            "refused".into()
        ))));
        assert!(!transient(&ChannelError::TxFailed("conflict".into())));
        assert!(!transient(&ChannelError::Refused("no".into())));
    }
}
