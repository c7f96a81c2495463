//! [`ElementCache`]: a bounded memo of the state hash's per-entry lane vectors, so that a key
//! written again costs one XOF call (its new value's) instead of two.
//!
//! Every write of a block changes the running [`LtHash`](crate::state_root::LtHash) by
//! subtracting the vector of the key's old entry and adding the new one's; each vector is a
//! 2 KiB SHAKE128 output, the largest cost of finishing a block and of replaying one. The old
//! entry is, almost always, the new entry of an earlier write of the same key (a balance, a
//! nonce, a game's state), so this cache keeps, per key, the vector of the value last added and
//! hands it back when that value is removed.
//!
//! It changes no result: a vector is a pure function of `(key, value)`, and an entry is used
//! only when its value is byte-for-byte the one asked for. It changes only speed and memory:
//! at most `capacity` keys (least recently used evicted), only values up to
//! [`MAX_CACHED_VALUE_BYTES`], so at most `capacity × (2 KiB + 256 B + key + ~100 B of map
//! overhead)` bytes: a state key is at most about 1.1 KiB, so under 3.5 KiB per key. It is safe
//! to share between threads (one lock, held for a lookup or an insert, never during hashing).

use std::sync::Mutex;

use hashlink::LruCache;

use crate::state_root::element::{element, LANES};

/// Values longer than this are never cached (their XOF is recomputed; a block rarely rewrites a
/// large value, and keeping them would multiply the cache's memory).
pub const MAX_CACHED_VALUE_BYTES: usize = 256;

/// Keys kept by [`ElementCache::default`]: 8,192 (at most about 28 MiB with the longest keys,
/// about 19 MiB with keys like balances' and nonces').
pub const DEFAULT_CAPACITY: usize = 8192;

/// One cached entry: the value whose vector it is, and the vector.
struct Entry {
    value: Vec<u8>,
    lanes: Box<[u16; LANES]>,
}

/// The memo (module docs). Counters say how often it helped.
pub struct ElementCache {
    entries: Mutex<LruCache<String, Entry>>,
    hits: std::sync::atomic::AtomicU64,
    misses: std::sync::atomic::AtomicU64,
}

impl Default for ElementCache {
    fn default() -> Self {
        Self::new(DEFAULT_CAPACITY)
    }
}

impl std::fmt::Debug for ElementCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (hits, misses) = self.counts();
        write!(
            f,
            "ElementCache {{ len: {}, hits: {hits}, misses: {misses} }}",
            self.len()
        )
    }
}

impl ElementCache {
    /// A cache of at most `capacity` keys (at least one).
    pub fn new(capacity: usize) -> Self {
        Self {
            entries: Mutex::new(LruCache::new(capacity.max(1))),
            hits: Default::default(),
            misses: Default::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LruCache<String, Entry>> {
        // A panic while the lock was held left at most one entry half-replaced, and an entry
        // is only ever used after its value compared equal: the cache stays correct.
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The vector of the entry `(key, value)` as it is removed from the state: from the cache
    /// when `key` was last added with exactly `value` (the entry is then dropped: the key is
    /// getting another value), else computed.
    pub fn take(&self, key: &str, value: &[u8]) -> Box<[u16; LANES]> {
        use std::sync::atomic::Ordering::Relaxed;
        let found = {
            let mut entries = self.lock();
            match entries.get(key) {
                Some(e) if e.value == value => entries.remove(key),
                _ => None,
            }
        };
        match found {
            Some(e) => {
                self.hits.fetch_add(1, Relaxed);
                e.lanes
            }
            None => {
                self.misses.fetch_add(1, Relaxed);
                Box::new(element(key, value))
            }
        }
    }

    /// The vector of the entry `(key, value)` as it is added to the state: computed, and kept
    /// for `key` (when `value` is small enough) until the key's next write.
    pub fn put(&self, key: &str, value: &[u8]) -> Box<[u16; LANES]> {
        let lanes = Box::new(element(key, value));
        // Built before the lock is taken, and a replaced entry freed after it is released.
        if value.len() <= MAX_CACHED_VALUE_BYTES {
            let entry = Entry {
                value: value.to_vec(),
                lanes: lanes.clone(),
            };
            let key = key.to_string();
            let replaced = self.lock().insert(key, entry);
            drop(replaced);
        } else {
            let old = self.lock().remove(key);
            drop(old);
        }
        lanes
    }

    /// Keys held now.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no key is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `(hits, misses)` of [`take`](Self::take) since the cache was made.
    pub fn counts(&self) -> (u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        (self.hits.load(Relaxed), self.misses.load(Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state_root::LtHash as StateHash;

    /// Applies `writes` (key, new) to `state`, hashing with and without `cache`.
    fn run(cache: &ElementCache, writes: &[(&str, Option<&[u8]>)]) {
        let mut state: std::collections::BTreeMap<String, Vec<u8>> = Default::default();
        let (mut plain, mut cached) = (StateHash::new(), StateHash::new());
        for (key, new) in writes {
            let old = state.get(*key).cloned();
            plain.apply(key, old.as_deref(), *new);
            cached.apply_cached(key, old.as_deref(), *new, cache);
            assert_eq!(plain, cached, "after writing {key}");
            match new {
                Some(v) => state.insert(key.to_string(), v.to_vec()),
                None => state.remove(*key),
            };
        }
        assert_eq!(cached, StateHash::from_entries(&state));
    }

    #[test]
    fn the_same_hash_as_without_it_and_one_xof_per_rewrite() {
        let cache = ElementCache::new(16);
        let big = vec![7u8; MAX_CACHED_VALUE_BYTES + 1];
        run(
            &cache,
            &[
                ("bal/a", Some(b"10")),
                ("bal/b", Some(b"5")),
                ("bal/a", Some(b"9")),
                ("bal/b", Some(b"6")),
                ("bal/a", Some(b"9")), // no change
                ("bal/a", None),
                ("bal/a", Some(b"1")),
                ("m/big", Some(&big)),
                ("m/big", Some(b"small")),
                ("m/big", Some(&big)),
                ("m/big", None),
            ],
        );
        // Removals of bal/a 10, bal/b 5, bal/a 9, m/big small were hits; the two big values
        // were never kept.
        assert_eq!(cache.counts(), (4, 2));
    }

    #[test]
    fn bounded_and_still_right_when_entries_were_evicted() {
        let cache = ElementCache::new(2);
        run(
            &cache,
            &[
                ("k1", Some(b"1")),
                ("k2", Some(b"2")),
                ("k3", Some(b"3")),
                ("k1", Some(b"4")), // k1 was evicted: computed again
                ("k3", Some(b"5")),
            ],
        );
        assert_eq!(cache.len(), 2);
        assert_eq!(cache.counts(), (1, 1));
    }

    #[test]
    fn a_value_other_than_the_cached_one_is_never_used() {
        let cache = ElementCache::new(4);
        cache.put("k", b"one");
        assert_eq!(*cache.take("k", b"two"), element("k", b"two"));
        assert_eq!(*cache.take("k", b"one"), element("k", b"one"));
        assert_eq!(cache.counts(), (1, 1));
        assert!(cache.is_empty());
    }
}
