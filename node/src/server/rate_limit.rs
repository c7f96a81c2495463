//! A per-client-IP token bucket for the HTTP API: each IP may make `rate_limit_per_sec`
//! requests per second on average and `rate_limit_burst` at once; past that it gets
//! `429 rate_limited` with a `retry-after` header (seconds). A rate of 0 disables the limit.
//!
//! The clock used here is the machine's monotonic clock; nothing of it reaches the chain.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::server::api_error::ApiError;

/// Buckets kept before idle (full) ones are forgotten.
const MAX_TRACKED_IPS: usize = 10_000;

/// One token bucket: `per_sec` tokens a second up to `burst`, taken `n` at a time (also the
/// relay's per-connection and per-game bounds, `relay.rs`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    /// A full bucket of `burst` tokens at `now`.
    pub(crate) fn full(burst: f64, now: Instant) -> Bucket {
        Bucket { tokens: burst, at: now }
    }

    /// Refills at `per_sec` up to `burst`, then takes `n` tokens: `Ok`, or `Err(seconds to
    /// wait)` (at least 1) when too few are left (nothing is taken then).
    pub(crate) fn take(&mut self, per_sec: f64, burst: f64, now: Instant, n: f64) -> Result<(), u64> {
        let refill = now.saturating_duration_since(self.at).as_secs_f64() * per_sec;
        self.tokens = (self.tokens + refill).min(burst);
        self.at = now;
        if self.tokens >= n {
            self.tokens -= n;
            Ok(())
        } else {
            Err(((n - self.tokens) / per_sec).ceil().max(1.0) as u64)
        }
    }
}

/// The buckets of every client IP seen recently.
#[derive(Debug)]
pub struct RateLimiter {
    per_sec: f64,
    burst: f64,
    buckets: Mutex<HashMap<IpAddr, Bucket>>,
}

impl RateLimiter {
    /// `per_sec` requests per second on average (0: unlimited), `burst` at once.
    pub fn new(per_sec: u32, burst: u32) -> Self {
        RateLimiter {
            per_sec: f64::from(per_sec),
            burst: f64::from(burst.max(1)),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one request of `ip` at `now`: `Ok` when allowed, else `Err(seconds to wait)`
    /// (at least 1).
    pub fn check(&self, ip: IpAddr, now: Instant) -> Result<(), u64> {
        self.take(ip, now, 1)
    }

    /// Whether the limit is on (a rate above 0).
    pub fn enabled(&self) -> bool {
        self.per_sec > 0.0
    }

    /// Most tokens one request can take at once (`rate_limit_burst`).
    pub fn burst(&self) -> u64 {
        self.burst as u64
    }

    /// Takes `n` requests' worth of `ip`'s tokens at `now` (a batch of `n` transactions):
    /// `Ok` when allowed, else `Err(seconds to wait)` (at least 1; `n` above the burst never
    /// fits, callers check [`RateLimiter::burst`] first).
    pub fn take(&self, ip: IpAddr, now: Instant, n: u64) -> Result<(), u64> {
        let n = n as f64;
        if self.per_sec <= 0.0 || n == 0.0 {
            return Ok(());
        }
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if buckets.len() >= MAX_TRACKED_IPS && !buckets.contains_key(&ip) {
            let (per_sec, burst) = (self.per_sec, self.burst);
            buckets
                .retain(|_, b| b.tokens + now.duration_since(b.at).as_secs_f64() * per_sec < burst);
        }
        buckets
            .entry(ip)
            .or_insert(Bucket::full(self.burst, now))
            .take(self.per_sec, self.burst, now, n)
    }
}

/// What a handler needs to charge more than the one token the middleware took: the limiter and
/// the request's client IP (a request extension set by [`limit`]).
#[derive(Clone)]
pub struct Charge {
    /// The limiter.
    pub limiter: Arc<RateLimiter>,
    /// The client's IP.
    pub ip: IpAddr,
}

impl Charge {
    /// Takes `n` more tokens now: `Err(seconds to wait)` when they are not there.
    pub fn take(&self, n: u64) -> Result<(), u64> {
        self.limiter.take(self.ip, Instant::now(), n)
    }
}

/// The axum middleware: limits by the peer's IP (connections without one, as in in-process
/// router tests, share the bucket of `0.0.0.0`).
pub async fn limit(
    State(limiter): State<Arc<RateLimiter>>,
    request: Request,
    next: Next,
) -> Response {
    let ip = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |c| c.0.ip());
    match limiter.check(ip, Instant::now()) {
        Ok(()) => {
            // `POST /v1/txs` takes a token per further transaction of its batch.
            let mut request = request;
            request.extensions_mut().insert(Charge { limiter, ip });
            next.run(request).await
        }
        Err(wait_s) => ApiError::rate_limited(wait_s).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn burst_then_the_rate() {
        let l = RateLimiter::new(2, 3);
        let t0 = Instant::now();
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        for _ in 0..3 {
            l.check(a, t0).unwrap();
        }
        assert_eq!(l.check(a, t0), Err(1));
        l.check(b, t0).unwrap();
        // Half a second later one token is back (2 per second).
        l.check(a, t0 + Duration::from_millis(500)).unwrap();
        assert!(l.check(a, t0 + Duration::from_millis(500)).is_err());
        let slow = RateLimiter::new(1, 1);
        slow.check(a, t0).unwrap();
        assert_eq!(slow.check(a, t0), Err(1));
        let off = RateLimiter::new(0, 0);
        for _ in 0..100 {
            off.check(a, t0).unwrap();
        }
    }
}
