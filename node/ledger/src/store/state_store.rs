//! [`StoredState`]: the committed state of a running node, read from the `state` table of
//! `chain.sqlite` through a bounded in-memory cache, so the state may be far larger than memory
//! and a start reads none of it. It is the head's `state` ([`crate::chain::Head`]): the
//! sequencer, a follower, views, admission and the account API all read it as a
//! [`State`](gamechain_runtime::State).
//!
//! Consistency with the head. Every read of a `StoredState` is made while holding the head it
//! belongs to (the head lock's read side, or `&mut Head`), and [`StoredState::apply`] runs with
//! the write side, after the block's SQLite commit. SQLite alone would show a reader the next
//! block's state between that commit and the head's update, so a commit first *pins* the head
//! ([`StoredState::pin`], before the SQLite commit; pins stay until the next `apply`): it opens a
//! read transaction on a connection of its own, whose snapshot is the head's state whatever is
//! committed meanwhile, and records the keys the block writes. A read of a pinned key, and every
//! scan while a pin stands, reads that snapshot; a key the block does not write reads the same in
//! both states. A read checks the pins after its SQLite read too (they may have been added
//! meanwhile: the pin counter says so), so it never returns a value newer than the head it holds.
//! Hence a reader sees exactly the state after the head header it holds, never a newer or an
//! older one. A pin holds keys only (bounded by the block's write limit), never values: a block
//! that deletes or overwrites large values costs no memory for them.
//!
//! The cache: values (and absences) by key, bounded by `state_cache_mb` (node configuration)
//! counted as key + value + [`ENTRY_OVERHEAD`] bytes, in two generations (a hit in the old one
//! moves the entry to the new one; when the new one holds half the bound, the old one is
//! dropped): least recently used entries go first, in O(1). A commit writes its values through
//! (its keys are the ones read next: nonces, balances, games in play). Entries larger than a
//! sixteenth of the bound are not cached. Scans always read SQLite (one indexed range read of at
//! most `limit + 1` rows).
//!
//! SQLite reads go through at most [`MAX_READERS`] read-only connections ([`Storage::open_reader`],
//! each with its own page cache of [`READER_PAGE_CACHE_KB`]; the pin's snapshot is one of them),
//! opened on demand and kept: a read when all are busy waits for one, so no number of concurrent
//! requests opens more files or page caches. A read that SQLite fails (I/O
//! error, a damaged file) panics with the error: the [`State`] trait has no error, and answering
//! "absent" would make a wrong block. The block task, a follower's verification or the API request
//! that read it fails with the panic; nothing is signed or committed with it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard};

use std::collections::BTreeSet;

use gamechain_runtime::{State, WriteSet};

use crate::storage::{Storage, StorageError};

/// Bytes counted per cached entry beside its key and value (map slot, two `Vec` headers,
/// allocator rounding).
pub const ENTRY_OVERHEAD: usize = 96;

/// Most SQLite read connections open for state reads (the pin's snapshot included).
pub const MAX_READERS: usize = 8;

/// The state read connections: the idle ones, and how many are open (idle or in use).
#[derive(Default)]
struct Pool {
    idle: Vec<Storage>,
    open: usize,
}

/// SQLite page cache of each state read connection, KiB (the interior pages of the `state`
/// index, so a lookup costs about one leaf read).
pub const READER_PAGE_CACHE_KB: u32 = 8 * 1024;

/// A bounded cache of state values by key (`None`: known absent), in two generations.
#[derive(Debug, Default)]
struct Cache {
    /// Bytes the cache may hold (both generations).
    bound: usize,
    young: HashMap<String, Option<Vec<u8>>>,
    young_bytes: usize,
    old: HashMap<String, Option<Vec<u8>>>,
    old_bytes: usize,
}

fn cost(key: &str, value: &Option<Vec<u8>>) -> usize {
    key.len() + value.as_ref().map_or(0, Vec::len) + ENTRY_OVERHEAD
}

impl Cache {
    fn new(bound: usize) -> Cache {
        Cache {
            bound,
            ..Cache::default()
        }
    }

    /// The cached value of `key` (`Some(None)`: known absent), `None` when not cached.
    fn get(&mut self, key: &str) -> Option<Option<Vec<u8>>> {
        if let Some(v) = self.young.get(key) {
            return Some(v.clone());
        }
        let (key, value) = self.old.remove_entry(key)?;
        self.old_bytes -= cost(&key, &value);
        let out = value.clone();
        self.insert(key, value);
        Some(out)
    }

    /// Caches `value` at `key` (replacing what was cached), unless it is too large.
    fn insert(&mut self, key: String, value: Option<Vec<u8>>) {
        let c = cost(&key, &value);
        if let Some(gone) = self.old.remove(&key) {
            self.old_bytes -= cost(&key, &gone);
        }
        if c > self.bound / 16 {
            if let Some(gone) = self.young.remove(&key) {
                self.young_bytes -= cost(&key, &gone);
            }
            return;
        }
        if let Some(gone) = self.young.remove(&key) {
            self.young_bytes -= cost(&key, &gone);
        }
        // Each generation holds at most half the bound.
        if self.young_bytes + c > self.bound / 2 {
            self.old = std::mem::take(&mut self.young);
            self.old_bytes = std::mem::take(&mut self.young_bytes);
        }
        self.young_bytes += c;
        self.young.insert(key, value);
    }

    /// Entries and counted bytes held (both generations).
    fn size(&self) -> (usize, usize) {
        (
            self.young.len() + self.old.len(),
            self.young_bytes + self.old_bytes,
        )
    }
}

/// What readers and the committer share, under one short lock (never held during SQLite I/O).
#[derive(Debug, Default)]
struct Shared {
    cache: Cache,
    /// The keys a commit in flight writes: their head values are read from the snapshot.
    pinned: BTreeSet<String>,
    /// Counts [`StoredState::pin`] calls: a read whose SQLite access spanned a pin checks the
    /// pins again.
    pins: u64,
}

/// The committed state read from `chain.sqlite` through a bounded cache (see the module docs).
pub struct StoredState {
    db_path: PathBuf,
    readers: Mutex<Pool>,
    /// Told when a connection goes back to the pool.
    returned: Condvar,
    shared: Mutex<Shared>,
    /// While a pin stands: a connection in a read transaction whose snapshot is the head's state.
    snapshot: Mutex<Option<Storage>>,
}

impl std::fmt::Debug for StoredState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredState")
            .field("db_path", &self.db_path)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The raw stored state: SQLite only, no cache and no pins (reads while no pin stands).
struct Sqlite<'a>(&'a StoredState);

impl State for Sqlite<'_> {
    fn get(&self, key: &str) -> Option<Vec<u8>> {
        self.0.with_reader(|r| r.state_get(key))
    }

    fn scan(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> Vec<(String, Vec<u8>)> {
        self.0
            .with_reader(|r| r.state_scan(prefix, start_after, limit))
    }
}

impl StoredState {
    /// The state stored in the database at `db_path` (which [`Storage::open`] created and
    /// migrated), with a cache of at most `cache_bytes`. Opens one read connection to check the
    /// file; reads no state. Errors: SQLite cannot open it, or its schema is not this node's.
    pub fn open(db_path: &Path, cache_bytes: usize) -> Result<StoredState, StorageError> {
        let first = Self::reader(db_path)?;
        Ok(StoredState {
            db_path: db_path.to_path_buf(),
            readers: Mutex::new(Pool {
                idle: vec![first],
                open: 1,
            }),
            returned: Condvar::new(),
            shared: Mutex::new(Shared {
                cache: Cache::new(cache_bytes),
                ..Shared::default()
            }),
            snapshot: Mutex::new(None),
        })
    }

    fn reader(db_path: &Path) -> Result<Storage, StorageError> {
        let r = Storage::open_reader(db_path)?;
        r.set_page_cache_kb(READER_PAGE_CACHE_KB)?;
        Ok(r)
    }

    /// A read connection: an idle one, a new one while fewer than [`MAX_READERS`] are open, else
    /// the next one returned. Errors: SQLite cannot open one.
    fn take_reader(&self) -> Result<Storage, StorageError> {
        let mut pool = lock(&self.readers);
        loop {
            if let Some(r) = pool.idle.pop() {
                return Ok(r);
            }
            if pool.open < MAX_READERS {
                pool.open += 1;
                drop(pool);
                return Self::reader(&self.db_path).inspect_err(|_| lock(&self.readers).open -= 1);
            }
            pool = self.returned.wait(pool).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Gives a connection back (`None`: it was closed, one fewer is open).
    fn give_back(&self, reader: Option<Storage>) {
        let mut pool = lock(&self.readers);
        match reader {
            Some(r) => pool.idle.push(r),
            None => pool.open -= 1,
        }
        drop(pool);
        self.returned.notify_one();
    }

    /// Runs `f` on a pooled read connection; panics when SQLite fails (see the module docs).
    fn with_reader<T>(&self, f: impl FnOnce(&Storage) -> Result<T, StorageError>) -> T {
        let result = self.take_reader().and_then(|r| match f(&r) {
            Ok(v) => {
                self.give_back(Some(r));
                Ok(v)
            }
            Err(e) => {
                self.give_back(None);
                Err(e)
            }
        });
        match result {
            Ok(value) => value,
            Err(e) => {
                tracing::error!(db = %self.db_path.display(), "reading the committed state failed: {e}");
                panic!(
                    "reading the committed state from {} failed: {e}",
                    self.db_path.display()
                )
            }
        }
    }

    /// Pins the head before `writes` are committed to SQLite (see the module docs): opens a read
    /// transaction whose snapshot is the state now (the head's), and records the keys `writes`
    /// changes. Call it holding the head (read side), then [`StoredState::apply`] the writes after
    /// the commit (holding the write side). When the commit fails the pin stays (and a later pin
    /// keeps its snapshot, adding its keys): the snapshot is the head's state whether or not
    /// SQLite committed (a head record written after a commit can fail), until a later commit's
    /// `apply`. Errors: SQLite cannot open the snapshot (nothing is pinned).
    pub fn pin(&self, writes: &WriteSet) -> Result<(), StorageError> {
        let mut snapshot = lock(&self.snapshot);
        if snapshot.is_none() {
            let conn = self.take_reader()?;
            if let Err(e) = conn.begin_snapshot() {
                self.give_back(None);
                return Err(e);
            }
            *snapshot = Some(conn);
        }
        drop(snapshot);
        let mut shared = lock(&self.shared);
        shared.pinned.extend(writes.keys().cloned());
        shared.pins += 1;
        Ok(())
    }

    /// The state now holds `writes` (`None` deletes), which SQLite has committed: writes them
    /// through the cache, drops the pins and ends the snapshot. Call it holding the head's write
    /// side, in the same critical section that moves the head to the block that made them.
    pub fn apply(&mut self, writes: WriteSet) {
        let shared = self.shared.get_mut().unwrap_or_else(|p| p.into_inner());
        shared.pinned.clear();
        shared.pins += 1;
        for (key, value) in writes {
            shared.cache.insert(key, value);
        }
        let taken = self
            .snapshot
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(conn) = taken {
            // A connection whose transaction does not end is closed (which ends it).
            let ok = conn.end_snapshot().is_ok();
            self.give_back(ok.then_some(conn));
        }
    }

    /// Runs `f` on the pinned snapshot; panics when SQLite fails (see the module docs). Only
    /// called while a pin stands (the head is held, so `apply` cannot end it meanwhile).
    fn at_snapshot<T>(&self, f: impl FnOnce(&Storage) -> Result<T, StorageError>) -> T {
        let snapshot = lock(&self.snapshot);
        let conn = snapshot
            .as_ref()
            .expect("a pinned key is read while its snapshot stands");
        match f(conn) {
            Ok(v) => v,
            Err(e) => {
                tracing::error!(db = %self.db_path.display(), "reading the committed state failed: {e}");
                panic!(
                    "reading the committed state from {} failed: {e}",
                    self.db_path.display()
                )
            }
        }
    }

    /// Cached entries and their counted bytes (key + value + [`ENTRY_OVERHEAD`] each).
    pub fn cache_size(&self) -> (usize, usize) {
        lock(&self.shared).cache.size()
    }
}

impl State for StoredState {
    fn get(&self, key: &str) -> Option<Vec<u8>> {
        let pins = {
            let mut shared = lock(&self.shared);
            if shared.pinned.contains(key) {
                drop(shared);
                return self.at_snapshot(|r| r.state_get(key));
            }
            if let Some(v) = shared.cache.get(key) {
                return v;
            }
            shared.pins
        };
        let value = Sqlite(self).get(key);
        let mut shared = lock(&self.shared);
        if shared.pinned.contains(key) {
            if shared.pins != pins {
                // A pin since the look above: SQLite may hold the next block's value of `key`.
                drop(shared);
                return self.at_snapshot(|r| r.state_get(key));
            }
        } else {
            shared.cache.insert(key.to_string(), value.clone());
        }
        value
    }

    fn scan(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> Vec<(String, Vec<u8>)> {
        loop {
            let (pins, pinned) = {
                let shared = lock(&self.shared);
                (shared.pins, !shared.pinned.is_empty())
            };
            if pinned {
                // A commit in flight: the whole scan at the head's snapshot.
                return self.at_snapshot(|r| r.state_scan(prefix, start_after, limit));
            }
            let out = Sqlite(self).scan(prefix, start_after, limit);
            // A pin during the read: SQLite may have shown the next block's rows; read again
            // at the snapshot.
            if lock(&self.shared).pins == pins {
                return out;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gamechain_runtime::MemState;
    use proptest::prelude::*;

    /// A database holding `entries` as its state (written through `commit_genesis`).
    fn stored(entries: &MemState) -> (tempfile::TempDir, PathBuf, Storage) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chain.sqlite");
        let storage = Storage::open(&path).unwrap();
        write_state(&storage, entries);
        (dir, path, storage)
    }

    fn write_state(storage: &Storage, state: &MemState) {
        storage.replace_state_for_tests(state).unwrap();
    }

    /// The writes of a third state: every key of `writes` put to `x` or deleted.
    fn third_writes(writes: &WriteSet) -> WriteSet {
        writes
            .iter()
            .map(|(k, v)| (k.clone(), v.as_ref().map(|_| b"x".to_vec())))
            .collect()
    }

    const KEYS: [&str; 12] = [
        "", "a", "a/", "a/1", "a/2", "a/2/x", "a0", "b", "b/1", "c", "é", "é/1",
    ];

    fn arb_state() -> impl Strategy<Value = MemState> {
        prop::collection::btree_map(
            prop::sample::select(KEYS.to_vec()).prop_map(String::from),
            prop::collection::vec(any::<u8>(), 0..4),
            0..KEYS.len(),
        )
        .prop_map(|map| MemState { map })
    }

    fn arb_writes() -> impl Strategy<Value = WriteSet> {
        prop::collection::btree_map(
            prop::sample::select(KEYS.to_vec()).prop_map(String::from),
            prop::option::of(prop::collection::vec(any::<u8>(), 0..4)),
            0..6,
        )
    }

    fn arb_start() -> impl Strategy<Value = Option<String>> {
        prop::option::of(
            prop::sample::select(vec!["", "a", "a/1", "a/2", "a0", "b/1", "zz", "é"])
                .prop_map(String::from),
        )
    }

    fn arb_prefix() -> impl Strategy<Value = String> {
        prop::sample::select(vec!["", "a", "a/", "a/2", "b", "z", "é"]).prop_map(String::from)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// Gets and scans answer what a `MemState` of the same entries answers, before and
        /// after a commit's writes (through a cache small enough to evict), and while a commit
        /// is pinned, whatever SQLite holds meanwhile.
        #[test]
        fn reads_match_a_mem_state(
            state in arb_state(),
            writes in arb_writes(),
            queries in prop::collection::vec((arb_prefix(), arb_start(), 0usize..5), 1..12),
            cache_bytes in prop::sample::select(vec![0usize, 2_000, 1 << 20]),
        ) {
            let (_dir, path, storage) = stored(&state);
            let mut s = StoredState::open(&path, cache_bytes).unwrap();
            let check = |s: &StoredState, model: &MemState| -> Result<(), TestCaseError> {
                for k in KEYS {
                    prop_assert_eq!(State::get(s, k), model.get(k), "get {:?}", k);
                }
                for (prefix, start, limit) in &queries {
                    prop_assert_eq!(
                        s.scan(prefix, start.as_deref(), *limit),
                        model.scan(prefix, start.as_deref(), *limit),
                        "scan {:?} after {:?} limit {}", prefix, start, limit
                    );
                }
                Ok(())
            };
            check(&s, &state)?;
            // A commit in flight: pinned, then SQLite moves on, and reads still show the head.
            s.pin(&writes).unwrap();
            let mut next = state.clone();
            next.apply(writes.clone());
            write_state(&storage, &next);
            check(&s, &state)?;
            // The commit lands.
            s.apply(writes.clone());
            check(&s, &next)?;
            // A failed commit stays pinned: the head's values, whether SQLite took it or not.
            let mut third = next.clone();
            third.apply(third_writes(&writes));
            s.pin(&third_writes(&writes)).unwrap();
            check(&s, &next)?;
            write_state(&storage, &third);
            check(&s, &next)?;
        }
    }

    #[test]
    fn the_cache_stays_within_its_bound_and_keeps_recent_entries() {
        let mut c = Cache::new(10_000);
        for i in 0..1_000 {
            c.insert(format!("k{i}"), Some(vec![0; 10]));
            assert!(c.size().1 <= 10_000, "{:?} after {i}", c.size());
        }
        // The last entries are cached; the first are gone.
        assert_eq!(c.get("k999"), Some(Some(vec![0; 10])));
        assert_eq!(c.get("k0"), None);
        // A known absence is cached as such; an entry over a sixteenth of the bound is not.
        c.insert("gone".into(), None);
        assert_eq!(c.get("gone"), Some(None));
        c.insert("big".into(), Some(vec![0; 1_000]));
        assert_eq!(c.get("big"), None);
    }

    #[test]
    fn concurrent_readers_never_open_more_than_the_bound() {
        let map: std::collections::BTreeMap<String, Vec<u8>> = (0..400)
            .map(|i| (format!("k/{i:04}"), vec![i as u8; 64]))
            .collect();
        let (dir, path, _storage) = stored(&MemState { map: map.clone() });
        // No cache: every read goes to SQLite.
        let s = StoredState::open(&path, 0).unwrap();
        let most = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for t in 0..24 {
                let (s, map, most) = (&s, &map, &most);
                scope.spawn(move || {
                    for i in (t..400).step_by(24) {
                        let key = format!("k/{i:04}");
                        assert_eq!(State::get(s, &key).as_ref(), map.get(&key));
                        assert_eq!(s.scan("k/", Some(&key), 2).len(), 2.min(399 - i));
                        let open = lock(&s.readers).open;
                        most.fetch_max(open, std::sync::atomic::Ordering::Relaxed);
                    }
                });
            }
        });
        let most = most.into_inner();
        assert!((1..=MAX_READERS).contains(&most), "{most} connections open");
        let pool = lock(&s.readers);
        assert_eq!(pool.idle.len(), pool.open);
        drop(pool);
        drop(dir);
    }

    #[test]
    fn a_read_failure_panics_instead_of_answering_absent() {
        let (dir, path, _storage) = stored(&MemState {
            map: [("a".to_string(), b"1".to_vec())].into(),
        });
        let s = StoredState::open(&path, 0).unwrap();
        assert_eq!(State::get(&s, "a"), Some(b"1".to_vec()));
        // The pooled connection answers from its open file; a new one finds no table.
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("DROP TABLE state").unwrap();
        drop(conn);
        let got = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| State::get(&s, "b")));
        assert!(got.is_err(), "{got:?}");
        drop(dir);
    }
}
