//! [`Budget`]: the transcript work each client IP may cost the node, a token bucket in
//! milliseconds. A build is charged the milliseconds it took (after it ends: the bucket may go
//! below zero, a debt the refill pays back before the IP may build again); an answer sent from
//! the cache (or from a build another request started) is charged for its size
//! ([`BYTES_PER_MS`] bytes a millisecond). An IP whose bucket holds less than one millisecond
//! is refused (`429 rate_limited` with `retry-after`).
//!
//! Buckets are kept per client **network** ([`network`]: an IPv4 address's /24, an IPv6
//! address's /64), not per address: one machine or one provider's block of addresses holds one
//! budget, so an attacker needs addresses in many networks to outweigh one legitimate client
//! (the price: clients behind one /24 share a bucket).
//!
//! The clock used here is the machine's monotonic clock; nothing of it reaches the chain.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Instant;

/// Bytes of a served answer charged as one millisecond of work (16 KiB: a 16 MiB transcript
/// costs 1,024 ms).
pub const BYTES_PER_MS: f64 = 16_384.0;

/// The network `ip` is counted in: its /24 for IPv4 (and an IPv4-mapped IPv6 address), its
/// /64 for IPv6.
pub fn network(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, _] = v4.octets();
            IpAddr::V4(std::net::Ipv4Addr::new(a, b, c, 0))
        }
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => network(IpAddr::V4(v4)),
            None => IpAddr::V6(std::net::Ipv6Addr::from(
                u128::from(v6) & !((1u128 << 64) - 1),
            )),
        },
    }
}

/// Networks tracked before those whose buckets are full again are forgotten.
const MAX_TRACKED_IPS: usize = 10_000;

#[derive(Debug, Clone, Copy)]
struct Bucket {
    /// Milliseconds left (negative: owed).
    ms: f64,
    at: Instant,
}

impl Bucket {
    fn refill(&mut self, per_sec: f64, burst: f64, now: Instant) {
        let secs = now.saturating_duration_since(self.at).as_secs_f64();
        self.ms = (self.ms + secs * per_sec).min(burst);
        self.at = now;
    }
}

/// Every client IP's bucket of transcript work (see the module docs).
#[derive(Debug)]
pub struct Budget {
    per_sec: f64,
    burst: f64,
    buckets: Mutex<HashMap<IpAddr, Bucket>>,
}

impl Budget {
    /// Buckets of `burst_ms` milliseconds (full at first), refilled `ms_per_sec` milliseconds
    /// a second (at least 1).
    pub fn new(ms_per_sec: u64, burst_ms: u64) -> Budget {
        Budget {
            per_sec: ms_per_sec.max(1) as f64,
            burst: burst_ms.max(1) as f64,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Whether `ip` may have work done at `now`: `Ok` when its bucket holds at least one
    /// millisecond, else `Err(seconds until it does)` (at least 1).
    pub fn check(&self, ip: IpAddr, now: Instant) -> Result<(), u64> {
        let ip = network(ip);
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        let Some(b) = buckets.get_mut(&ip) else {
            return Ok(());
        };
        b.refill(self.per_sec, self.burst, now);
        if b.ms >= 1.0 {
            Ok(())
        } else {
            Err(((1.0 - b.ms) / self.per_sec).ceil().max(1.0) as u64)
        }
    }

    /// Milliseconds left in `ip`'s bucket at `now` (negative: owed; the burst for an IP not
    /// seen).
    pub fn left(&self, ip: IpAddr, now: Instant) -> f64 {
        let ip = network(ip);
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        buckets.get_mut(&ip).map_or(self.burst, |b| {
            b.refill(self.per_sec, self.burst, now);
            b.ms
        })
    }

    /// Takes `ms` milliseconds of `ip`'s bucket at `now`, below zero if need be.
    pub fn charge(&self, ip: IpAddr, now: Instant, ms: f64) {
        let ip = network(ip);
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if buckets.len() >= MAX_TRACKED_IPS && !buckets.contains_key(&ip) {
            let (per_sec, burst) = (self.per_sec, self.burst);
            buckets.retain(|_, b| {
                b.ms + now.saturating_duration_since(b.at).as_secs_f64() * per_sec < burst
            });
        }
        let b = buckets.entry(ip).or_insert(Bucket {
            ms: self.burst,
            at: now,
        });
        b.refill(self.per_sec, self.burst, now);
        b.ms -= ms.max(0.0);
    }

    /// The milliseconds charged for sending an answer of `bytes` bytes.
    pub fn send_cost(bytes: usize) -> f64 {
        bytes as f64 / BYTES_PER_MS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_build_may_overdraw_then_the_refill_pays_it_back() {
        let b = Budget::new(250, 1_000);
        let t0 = Instant::now();
        let a: IpAddr = "127.0.0.2".parse().unwrap();
        let other: IpAddr = "127.0.1.3".parse().unwrap();
        // The same /24 shares a's bucket.
        let neighbour: IpAddr = "127.0.0.3".parse().unwrap();
        b.check(a, t0).unwrap();
        b.charge(a, t0, 600.0);
        b.check(a, t0).unwrap();
        // A 3 s build: 2.6 s owed, about 10.4 s of refill to one millisecond.
        b.charge(a, t0, 3_000.0);
        assert_eq!(b.check(a, t0), Err(11));
        assert_eq!(b.check(neighbour, t0), Err(11));
        b.check(other, t0).unwrap();
        assert_eq!(b.left(other, t0), 1_000.0);
        assert_eq!(b.left(a, t0), -2_600.0);
        assert!(b.check(a, t0 + Duration::from_secs(10)).is_err());
        b.check(a, t0 + Duration::from_secs(11)).unwrap();
        // The refill stops at the burst.
        b.charge(a, t0 + Duration::from_secs(100), 999.5);
        b.check(a, t0 + Duration::from_secs(100)).unwrap_err();
    }

    #[test]
    fn networks_are_a_v4_24_and_a_v6_64() {
        let n = |s: &str| network(s.parse().unwrap()).to_string();
        assert_eq!(n("203.0.113.77"), "203.0.113.0");
        assert_eq!(n("2001:db8:1:2:3:4:5:6"), "2001:db8:1:2::");
        assert_eq!(n("::ffff:203.0.113.77"), "203.0.113.0");
    }

    #[test]
    fn sending_costs_by_size() {
        assert_eq!(Budget::send_cost(16 << 20), 1024.0);
        assert!(Budget::send_cost(10_000) < 1.0);
    }
}
