//! The node's transcript work (`mod.rs` serves it): the answers kept, the build slots, each
//! client network's budget, each client IP's one build at a time and the large answers being
//! sent, with their bounds.

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::budget::Budget;
use super::cache::Cache;
use super::sending::Sending;
use super::slots::Slots;

/// Transcripts being built at once, node-wide (others wait up to [`BUILD_SLOT_WAIT`], the
/// client IPs with the most budget left first: `slots.rs`).
pub const TRANSCRIPTS_AT_ONCE: usize = 2;
/// Longest a build waits for a slot (then `503 busy`).
pub const BUILD_SLOT_WAIT: Duration = Duration::from_secs(5);
/// Most bytes of answers kept (their bodies).
pub const CACHE_BYTES: usize = 64 << 20;
/// Most answers kept.
pub const CACHE_ENTRIES: usize = 1024;
/// Milliseconds of work a client IP may cost at once (its budget when full).
pub const BUDGET_BURST_MS: u64 = 4_000;
/// Milliseconds of work a client IP's budget gets back a second.
pub const BUDGET_MS_PER_SEC: u64 = 200;

/// A node's transcript answers, builds and budgets (one per `AppState`).
pub struct Transcripts {
    pub(super) cache: Arc<Mutex<Cache>>,
    pub(super) budget: Budget,
    pub(super) building: Arc<Slots>,
    building_for: Mutex<BTreeSet<IpAddr>>,
    /// Large answers being sent (`sending.rs`).
    pub(super) sending: Arc<Sending>,
}

impl Default for Transcripts {
    /// An empty cache of [`CACHE_BYTES`] and [`CACHE_ENTRIES`], full budgets, free slots.
    fn default() -> Self {
        Transcripts {
            cache: Arc::new(Mutex::new(Cache::new(CACHE_BYTES, CACHE_ENTRIES))),
            budget: Budget::new(BUDGET_MS_PER_SEC, BUDGET_BURST_MS),
            building: Slots::new(TRANSCRIPTS_AT_ONCE),
            building_for: Mutex::new(BTreeSet::new()),
            sending: Arc::default(),
        }
    }
}

/// A client IP's one build, given back when dropped.
pub(super) struct PerIp(Arc<Transcripts>, IpAddr);

impl PerIp {
    pub(super) fn take(t: &Arc<Transcripts>, ip: IpAddr) -> Option<PerIp> {
        let mut held = t.building_for.lock().unwrap_or_else(|e| e.into_inner());
        held.insert(ip).then(|| PerIp(t.clone(), ip))
    }
}

impl Drop for PerIp {
    fn drop(&mut self) {
        let mut held = self
            .0
            .building_for
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        held.remove(&self.1);
    }
}
