//! State as the runtime sees it: the read-only [`State`] a node provides (its `StoredState`:
//! SQLite through a bounded cache, `node/ledger/src/store/state_store.rs`; [`MemState`] in tests and the
//! verifier), and the [`Overlay`] a transaction writes into, whose [`WriteSet`] the node applies on
//! success and drops on failure. The overlay is the sdk's [`Kv`], so `KvCtx<Overlay>` gives every
//! host call the same `Ctx` semantics as `MockCtx`. [`Layer`] is the read-only view of a borrowed
//! write set over a base (a pipelined sequencer builds the next block on the committed state under
//! the write set of the block still being written).

use std::collections::BTreeMap;
use std::ops::Bound;

use gamechain_sdk::Kv;

/// Pending writes of one call, keyed by raw key: `Some(value)` puts, `None` deletes. Sorted, so
/// iterating it is canonical.
pub type WriteSet = BTreeMap<String, Option<Vec<u8>>>;

/// Read access to committed state (raw keys, see `gamechain_sdk::keys`).
pub trait State {
    /// The value at `key`, `None` when absent.
    fn get(&self, key: &str) -> Option<Vec<u8>>;
    /// Keys starting with `prefix`, ascending (byte order), strictly after `start_after` (a full
    /// key) when given, at most `limit` entries.
    fn scan(&self, prefix: &str, start_after: Option<&str>, limit: usize)
        -> Vec<(String, Vec<u8>)>;
}

/// The range of a map's keys that a scan visits: from `prefix` (or just after `start_after`,
/// whichever is later), in ascending order. Callers stop at the first key without `prefix`.
fn scan_start<'k>(
    prefix: &'k str,
    start_after: Option<&'k str>,
) -> (Bound<&'k str>, Bound<&'k str>) {
    match start_after {
        Some(s) if s >= prefix => (Bound::Excluded(s), Bound::Unbounded),
        _ => (Bound::Included(prefix), Bound::Unbounded),
    }
}

/// Committed state in memory: a sorted map from raw key to value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemState {
    /// Every key and its value.
    pub map: BTreeMap<String, Vec<u8>>,
}

impl MemState {
    /// An empty state.
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies a write set: `Some` values are inserted, `None` keys removed.
    pub fn apply(&mut self, writes: WriteSet) {
        for (key, value) in writes {
            match value {
                Some(v) => {
                    self.map.insert(key, v);
                }
                None => {
                    self.map.remove(&key);
                }
            }
        }
    }
}

impl State for MemState {
    fn get(&self, key: &str) -> Option<Vec<u8>> {
        self.map.get(key).cloned()
    }

    fn scan(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> Vec<(String, Vec<u8>)> {
        self.map
            .range::<str, _>(scan_start(prefix, start_after))
            .take_while(|(k, _)| k.starts_with(prefix))
            .take(limit)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}

/// Uncommitted writes over a read-only base. Reads see the writes first; scans merge both in key
/// order (a pending delete hides a base key).
pub struct Overlay<'a> {
    /// The committed state underneath.
    pub base: &'a dyn State,
    /// The pending writes.
    pub writes: WriteSet,
}

impl<'a> Overlay<'a> {
    /// An overlay with no writes yet.
    pub fn new(base: &'a dyn State) -> Self {
        Self {
            base,
            writes: WriteSet::new(),
        }
    }

    /// The pending writes, consuming the overlay.
    pub fn into_writes(self) -> WriteSet {
        self.writes
    }
}

impl State for Overlay<'_> {
    fn get(&self, key: &str) -> Option<Vec<u8>> {
        layered_get(self.base, &self.writes, key)
    }

    fn scan(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> Vec<(String, Vec<u8>)> {
        layered_scan(self.base, &self.writes, prefix, start_after, limit)
    }
}

/// A borrowed write set over a read-only base, read-only itself: what [`Overlay`] reads, without
/// owning the writes (e.g. the state after a block whose writes are not yet applied to `base`).
/// Reads see `writes` first (`None`: deleted); scans merge both in key order.
#[derive(Clone, Copy)]
pub struct Layer<'a> {
    /// The state underneath.
    pub base: &'a dyn State,
    /// The writes on top of it.
    pub writes: &'a WriteSet,
}

impl State for Layer<'_> {
    fn get(&self, key: &str) -> Option<Vec<u8>> {
        layered_get(self.base, self.writes, key)
    }

    fn scan(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> Vec<(String, Vec<u8>)> {
        layered_scan(self.base, self.writes, prefix, start_after, limit)
    }
}

/// `key` in `writes` over `base`.
fn layered_get(base: &dyn State, writes: &WriteSet, key: &str) -> Option<Vec<u8>> {
    match writes.get(key) {
        Some(pending) => pending.clone(),
        None => base.get(key),
    }
}

/// [`State::scan`] of `writes` over `base`.
fn layered_scan(
    base: &dyn State,
    writes: &WriteSet,
    prefix: &str,
    start_after: Option<&str>,
    limit: usize,
) -> Vec<(String, Vec<u8>)> {
    if limit == 0 {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(limit.min(64));
    let mut pending = writes
        .range::<str, _>(scan_start(prefix, start_after))
        .take_while(|(k, _)| k.starts_with(prefix))
        .peekable();
    // Fetch the base in pages: a page can be eaten by pending deletes, so ask again after the
    // last key seen until the base runs dry or `limit` entries are out.
    let mut base_after: Option<String> = start_after.map(str::to_string);
    let mut base_page = base
        .scan(prefix, base_after.as_deref(), limit)
        .into_iter()
        .peekable();
    let mut base_dry = base_page.len() < limit;
    while out.len() < limit {
        if base_page.peek().is_none() && !base_dry {
            let page = base.scan(prefix, base_after.as_deref(), limit);
            base_dry = page.len() < limit;
            base_page = page.into_iter().peekable();
        }
        let take_pending = match (pending.peek(), base_page.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some((pk, _)), Some((bk, _))) => pk.as_str() <= bk.as_str(),
        };
        if take_pending {
            let (pk, pv) = pending.next().expect("peeked");
            if base_page.peek().is_some_and(|(bk, _)| bk == pk) {
                let (bk, _) = base_page.next().expect("peeked");
                base_after = Some(bk);
            }
            if let Some(v) = pv {
                out.push((pk.clone(), v.clone()));
            }
        } else {
            let (bk, bv) = base_page.next().expect("peeked");
            base_after = Some(bk.clone());
            out.push((bk, bv));
        }
    }
    out
}

impl Kv for Overlay<'_> {
    fn kv_get(&self, key: &str) -> Option<Vec<u8>> {
        State::get(self, key)
    }
    fn kv_put(&mut self, key: &str, value: Vec<u8>) {
        self.writes.insert(key.to_string(), Some(value));
    }
    fn kv_delete(&mut self, key: &str) {
        self.writes.insert(key.to_string(), None);
    }
    fn kv_scan(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> Vec<(String, Vec<u8>)> {
        State::scan(self, prefix, start_after, limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The model: a plain map with the writes applied.
    fn model(base: &MemState, writes: &WriteSet) -> MemState {
        let mut m = base.clone();
        m.apply(writes.clone());
        m
    }

    /// A tiny deterministic generator (no extra dev-dependency).
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self, n: u64) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 33) % n
        }
    }

    const KEYS: [&str; 10] = ["", "a", "a/", "a/1", "a/2", "a/2/x", "a0", "b", "b/1", "c"];

    #[test]
    fn overlay_scan_matches_a_model_map() {
        let mut rng = Lcg(7);
        for round in 0..3000 {
            let mut base = MemState::new();
            let mut writes = WriteSet::new();
            for k in KEYS {
                match rng.next(3) {
                    0 => {}
                    _ => {
                        base.map
                            .insert(k.to_string(), format!("base{round}{k}").into_bytes());
                    }
                }
                match rng.next(4) {
                    0 => {
                        writes.insert(k.to_string(), None);
                    }
                    1 => {
                        writes.insert(k.to_string(), Some(format!("new{k}").into_bytes()));
                    }
                    _ => {}
                }
            }
            let expected = model(&base, &writes);
            let overlay = Overlay {
                base: &base,
                writes: writes.clone(),
            };
            let layer = Layer {
                base: &base,
                writes: &writes,
            };
            for k in KEYS {
                assert_eq!(overlay.get(k), expected.get(k), "get {k:?}");
                assert_eq!(layer.get(k), expected.get(k), "layer get {k:?}");
            }
            for prefix in ["", "a", "a/", "a/2", "b", "z"] {
                for start in [
                    None,
                    Some(""),
                    Some("a"),
                    Some("a/1"),
                    Some("a/2"),
                    Some("a0"),
                    Some("b/1"),
                    Some("zz"),
                ] {
                    for limit in [0, 1, 2, 3, 20] {
                        assert_eq!(
                            layer.scan(prefix, start, limit),
                            expected.scan(prefix, start, limit),
                            "layer scan {prefix:?} after {start:?} limit {limit}"
                        );
                        assert_eq!(
                            overlay.scan(prefix, start, limit),
                            expected.scan(prefix, start, limit),
                            "scan {prefix:?} after {start:?} limit {limit} base {:?} writes {writes:?}",
                            base.map.keys().collect::<Vec<_>>()
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn mem_state_scan_respects_prefix_start_and_limit() {
        let mut s = MemState::new();
        for k in ["a/1", "a/2", "a/3", "b/1"] {
            s.map.insert(k.into(), k.as_bytes().to_vec());
        }
        let keys = |v: Vec<(String, Vec<u8>)>| v.into_iter().map(|(k, _)| k).collect::<Vec<_>>();
        assert_eq!(keys(s.scan("a/", None, 10)), ["a/1", "a/2", "a/3"]);
        assert_eq!(keys(s.scan("a/", Some("a/1"), 1)), ["a/2"]);
        assert_eq!(keys(s.scan("a/", Some("0"), 10)), ["a/1", "a/2", "a/3"]);
        assert!(s.scan("a/", Some("a/3"), 10).is_empty());
        let mut w = WriteSet::new();
        w.insert("a/2".into(), None);
        w.insert("c".into(), Some(b"x".to_vec()));
        s.apply(w);
        assert_eq!(keys(s.scan("", None, 10)), ["a/1", "a/3", "b/1", "c"]);
    }
}
