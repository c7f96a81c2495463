//! The first state commitment ([`StateCommitment::LtHash16`](super::StateCommitment)), the one
//! of every chain whose genesis names none: [`LtHash`], an LtHash (lattice-based homomorphic
//! multiset hash) of every `(key, value)` entry of the state, updated in time proportional to a
//! block's writes.
//!
//! # Construction
//!
//! * Each entry `(key, value)` maps to a vector of [`LANES`] = 1024 lanes of `u16`:
//!   `SHAKE128(DOMAIN ‖ borsh((key, value)))` read for 2048 bytes, each lane the little-endian
//!   `u16` of two consecutive bytes. `DOMAIN` is `"gamechain.state.lthash16.v1"`; borsh of
//!   `(String, Vec<u8>)` is `u32 LE len ‖ key UTF-8 ‖ u32 LE len ‖ value`, so distinct entries
//!   have distinct inputs.
//! * The state's hash is the lane-wise sum, mod 2^16, of the vectors of all its entries (the
//!   empty state is all zeros). Adding an entry adds its vector; removing it subtracts it;
//!   changing a value subtracts the old entry and adds the new one. The sum does not depend on
//!   the order in which entries were added, so a node applying writes block by block and a
//!   verifier summing a full state snapshot ([`LtHash::from_entries`]) reach the same lanes.
//! * `state_root` = SHA-256 of the 2048 lane bytes (each lane little-endian), 32 bytes.
//!
//! It commits to the set of `(key, value)` pairs: module state (`m/...`), balances (`bal/...`),
//! token records (`token/...`), nonces and every other key the node stores, with their exact
//! bytes.
//!
//! # Against a Merkle tree
//!
//! A Merkle (Patricia/sparse) tree over the state costs O(writes × log(state)) hashing per block
//! and needs its internal nodes stored (or recomputed from the whole state) to be updated. An
//! LtHash costs one XOF call and a 1024-lane add per write, and its whole running state is 2 KiB
//! ([`LtHash::to_bytes`]), so a block's root is computed in O(writes) regardless of the state's
//! size. What it gives up: it has no inclusion proofs, so a light client cannot check one key
//! against the root; verifiers replay blocks or recompute from a full snapshot. Chains that want
//! those proofs name [`StateCommitment::SparseMerkle`](super::StateCommitment) in their genesis
//! (`sparse_merkle.rs`).
//!
//! # Security
//!
//! This is Bellare and Micciancio's "randomize then combine" paradigm for incremental hashing
//! (*A New Paradigm for Collision-free Hashing: Incrementality at Reduced Cost*, EUROCRYPT
//! 1997) with a lattice combiner: vectors over Z_(2^16) added component-wise. Lewi, Kim, Maykov
//! and Weis (*Securing Update Propagation with Homomorphic Hashing*, IACR ePrint 2019/227)
//! analyse this "LtHash" instantiation, reducing collision resistance (with the XOF modelled as
//! a random oracle) to the Short Integer Solution problem, and estimate about 200 bits of
//! security for exactly these parameters (n = 1024 lanes of 16 bits, "lthash16"). It is a
//! multiset hash: an entry added twice counts twice (and 2^16 copies cancel), so the caller
//! must keep the state a set (one value per key) and pass the true old value to
//! [`LtHash::apply`]; a wrong `old` makes the root diverge from any honest node's, which
//! [`LtHash::from_entries`] detects.

use super::element::{element, LANES};
use super::element_cache::ElementCache;
use crate::hash::sha256;

/// The running LtHash of a state (see the module docs). 2 KiB; `Default` is the empty state.
#[derive(Clone, PartialEq, Eq)]
pub struct LtHash {
    lanes: Box<[u16; LANES]>,
}

impl Default for LtHash {
    fn default() -> Self {
        Self {
            lanes: Box::new([0u16; LANES]),
        }
    }
}

impl std::fmt::Debug for LtHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LtHash({})", hex::encode(self.root()))
    }
}

impl LtHash {
    /// The hash of the empty state (all lanes zero).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the entry `(key, value)`.
    pub fn insert(&mut self, key: &str, value: &[u8]) {
        self.add_element(&element(key, value));
    }

    /// Removes the entry `(key, value)` (which must be in the state).
    pub fn remove(&mut self, key: &str, value: &[u8]) {
        self.sub_element(&element(key, value));
    }

    fn add_element(&mut self, e: &[u16; LANES]) {
        for (lane, e) in self.lanes.iter_mut().zip(e) {
            *lane = lane.wrapping_add(*e);
        }
    }

    fn sub_element(&mut self, e: &[u16; LANES]) {
        for (lane, e) in self.lanes.iter_mut().zip(e) {
            *lane = lane.wrapping_sub(*e);
        }
    }

    /// Records one write: `key` held `old` (`None`: absent) and now holds `new` (`None`:
    /// deleted). `old` must be the value the state really held. Equal `old` and `new` change
    /// nothing.
    pub fn apply(&mut self, key: &str, old: Option<&[u8]>, new: Option<&[u8]>) {
        if old == new {
            return;
        }
        if let Some(old) = old {
            self.remove(key, old);
        }
        if let Some(new) = new {
            self.insert(key, new);
        }
    }

    /// [`apply`](Self::apply) through `cache`: the same result, with the old entry's vector
    /// taken from the cache when this key's last write left it there (one XOF call, not two).
    pub fn apply_cached(
        &mut self,
        key: &str,
        old: Option<&[u8]>,
        new: Option<&[u8]>,
        cache: &ElementCache,
    ) {
        if old == new {
            return;
        }
        if let Some(old) = old {
            self.sub_element(&cache.take(key, old));
        }
        if let Some(new) = new {
            self.add_element(&cache.put(key, new));
        }
    }

    /// Adds `other`'s lanes to this hash's: the hash of both multisets of entries. A hash of
    /// some writes' changes (a [`LtHash::new`] to which [`apply`](Self::apply) was called,
    /// possibly "negative") added to a running hash is the same as applying those writes to it,
    /// so the changes of one block can be hashed on several threads and summed in any order.
    pub fn add(&mut self, other: &LtHash) {
        for (lane, o) in self.lanes.iter_mut().zip(other.lanes.iter()) {
            *lane = lane.wrapping_add(*o);
        }
    }

    /// The hash of a whole state given as its entries (each key once), in any order.
    pub fn from_entries<I, K, V>(entries: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<[u8]>,
    {
        let mut h = Self::new();
        for (k, v) in entries {
            h.insert(k.as_ref(), v.as_ref());
        }
        h
    }

    /// The 32-byte state root: SHA-256 of the lanes as 2048 little-endian bytes.
    pub fn root(&self) -> [u8; 32] {
        sha256(&self.to_bytes())
    }

    /// The lanes as 2048 little-endian bytes (to persist the running hash).
    pub fn to_bytes(&self) -> Vec<u8> {
        self.lanes.iter().flat_map(|l| l.to_le_bytes()).collect()
    }

    /// The running hash persisted by [`LtHash::to_bytes`]; `None` unless exactly 2048 bytes.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        if bytes.len() != LANES * 2 {
            return None;
        }
        let mut h = Self::new();
        for (lane, pair) in h.lanes.iter_mut().zip(bytes.chunks_exact(2)) {
            *lane = u16::from_le_bytes([pair[0], pair[1]]);
        }
        Some(h)
    }
}

/// Net changes per thread below which hashing them on one thread is cheaper.
const MIN_CHANGES_PER_THREAD: usize = 256;

/// The hash of a block's net changes (`(key, old, new)` each), on up to `threads` threads:
/// every change costs two XOF calls of 2 KiB (one when `cache` still holds the old entry's
/// vector), the largest part of finishing a big block; the parts are summed ([`LtHash::add`]),
/// so the result depends neither on `threads` nor on the cache.
pub(super) fn changes_hash(
    changes: &[(&str, Option<&[u8]>, Option<&[u8]>)],
    threads: usize,
    cache: &ElementCache,
) -> LtHash {
    let part = |chunk: &[(&str, Option<&[u8]>, Option<&[u8]>)]| {
        let mut h = LtHash::new();
        for (key, old, new) in chunk {
            h.apply_cached(key, *old, *new, cache);
        }
        h
    };
    let threads = threads.min(changes.len() / MIN_CHANGES_PER_THREAD).max(1);
    if threads == 1 {
        return part(changes);
    }
    let mut chunks = changes.chunks(changes.len().div_ceil(threads));
    let first = chunks.next().unwrap_or_default();
    std::thread::scope(|s| {
        let handles: Vec<_> = chunks.map(|c| s.spawn(move || part(c))).collect();
        let mut sum = part(first);
        for h in handles {
            sum.add(
                &h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            );
        }
        sum
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state_root::element::DOMAIN;
    use sha3::digest::{ExtendableOutput, Update, XofReader};
    use sha3::Shake128;
    use std::collections::BTreeMap;

    #[test]
    fn changes_hashed_apart_and_added_equal_applying_them() {
        let mut running = LtHash::from_entries([("a", b"1".as_slice()), ("b", b"2")]);
        let mut whole = running.clone();
        whole.apply("a", Some(b"1"), Some(b"9"));
        whole.apply("b", Some(b"2"), None);
        whole.apply("c", None, Some(b"3"));
        let (mut one, mut two) = (LtHash::new(), LtHash::new());
        one.apply("a", Some(b"1"), Some(b"9"));
        two.apply("b", Some(b"2"), None);
        two.apply("c", None, Some(b"3"));
        running.add(&two);
        running.add(&one);
        assert_eq!(running, whole);
        assert_eq!(
            running,
            LtHash::from_entries([("a", b"9".as_slice()), ("c", b"3")])
        );
    }

    fn sample() -> Vec<(String, Vec<u8>)> {
        (0..50u32)
            .map(|i| (format!("m/game/{i}"), format!("value {i}").into_bytes()))
            .collect()
    }

    #[test]
    fn empty_root_is_the_hash_of_zero_lanes() {
        assert_eq!(LtHash::new().root(), sha256(&[0u8; 2048]));
    }

    #[test]
    fn element_input_is_borsh_of_key_and_value() {
        let encoded = borsh::to_vec(&("bal/x/GOLD".to_string(), b"100".to_vec())).unwrap();
        let mut xof = Shake128::default();
        xof.update(DOMAIN);
        xof.update(&encoded);
        let mut bytes = [0u8; 2048];
        xof.finalize_xof().read(&mut bytes);
        let mut h = LtHash::new();
        h.insert("bal/x/GOLD", b"100");
        assert_eq!(h.to_bytes(), bytes);
    }

    #[test]
    fn order_does_not_matter() {
        let entries = sample();
        let forward = LtHash::from_entries(entries.iter().map(|(k, v)| (k, v)));
        let backward = LtHash::from_entries(entries.iter().rev().map(|(k, v)| (k, v)));
        assert_eq!(forward, backward);
        assert_eq!(forward.root(), backward.root());
    }

    #[test]
    fn incremental_apply_equals_recompute() {
        let mut state: BTreeMap<String, Vec<u8>> = sample().into_iter().collect();
        let mut h = LtHash::from_entries(&state);
        // A "block" of writes: updates, inserts, deletes, a no-op, a key written twice.
        let writes: Vec<(String, Option<Vec<u8>>)> = vec![
            ("m/game/3".into(), Some(b"changed".to_vec())),
            ("m/game/new".into(), Some(b"fresh".to_vec())),
            ("m/game/7".into(), None),
            ("m/game/8".into(), Some(b"value 8".to_vec())),
            ("m/game/3".into(), Some(b"changed again".to_vec())),
            ("m/game/absent".into(), None),
        ];
        for (key, new) in writes {
            let old = state.get(&key).cloned();
            h.apply(&key, old.as_deref(), new.as_deref());
            match new {
                Some(v) => state.insert(key, v),
                None => state.remove(&key),
            };
        }
        assert_eq!(h, LtHash::from_entries(&state));
    }

    #[test]
    fn deleting_restores_the_previous_root() {
        let entries = sample();
        let mut h = LtHash::from_entries(entries.iter().map(|(k, v)| (k, v)));
        let before = h.root();
        h.apply("m/other/x", None, Some(b"1"));
        assert_ne!(h.root(), before);
        h.apply("m/other/x", Some(b"1"), None);
        assert_eq!(h.root(), before);
        let mut empty = LtHash::new();
        empty.apply("k", None, Some(b"v"));
        empty.apply("k", Some(b"v"), None);
        assert_eq!(empty, LtHash::new());
    }

    #[test]
    fn one_bit_changes_the_root() {
        let base = LtHash::from_entries([("bal/a/GOLD", b"100".as_slice())]).root();
        assert_ne!(
            base,
            LtHash::from_entries([("bal/a/GOLD", b"101".as_slice())]).root()
        );
        assert_ne!(
            base,
            LtHash::from_entries([("bal/a/GOLE", b"100".as_slice())]).root()
        );
        // Moving bytes between key and value is a different entry.
        assert_ne!(
            LtHash::from_entries([("ab", b"c".as_slice())]).root(),
            LtHash::from_entries([("a", b"bc".as_slice())]).root()
        );
    }

    #[test]
    fn persists_as_2048_bytes() {
        let h = LtHash::from_entries(sample().iter().map(|(k, v)| (k, v)));
        let bytes = h.to_bytes();
        assert_eq!(bytes.len(), 2048);
        assert_eq!(LtHash::from_bytes(&bytes), Some(h));
        assert_eq!(LtHash::from_bytes(&bytes[1..]), None);
    }
}
