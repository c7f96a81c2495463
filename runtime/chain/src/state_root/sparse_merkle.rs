//! The sparse Merkle tree state commitment ([`StateCommitment::SparseMerkle`](super::StateCommitment)):
//! [`SparseMerkleTree`], a binary Merkle tree over every state entry that proves, against one
//! 32-byte root, that a key holds a value or that it is absent ([`StateProof`], `proof.rs`).
//!
//! # Construction
//!
//! * An entry `(key, value)` is the leaf `(k, v)` with `k = SHA-256(key's UTF-8 bytes)` and
//!   `v = SHA-256(value)`; `k`'s bits, most significant bit of byte 0 first, are its path from
//!   the root (0 = left, 1 = right).
//! * Hashes, each 32 bytes: a leaf is `SHA-256(0x00 ‖ k ‖ v)`; a branch is
//!   `SHA-256(0x01 ‖ left ‖ right)`; an empty subtree is 32 zero bytes ([`EMPTY`]).
//! * The tree is the one canonical shape of its set of leaves: a subtree holding no leaf is
//!   empty, a subtree holding exactly one leaf is that leaf (so a leaf sits at the shallowest
//!   depth where its path parts from every other key's), and a subtree holding two or more is a
//!   branch. This is the compact sparse Merkle tree of Diem/Aptos's Jellyfish Merkle tree and of
//!   the `jmt` crate, with a binary branching and our own hashes.
//! * The state root is the root's hash; the empty state's is [`EMPTY`].
//!
//! With `n` random keys a leaf sits at depth about `log2(n) + 1`, so a proof carries about
//! that many sibling hashes (17–18 at 100,000 entries) and an update hashes that many nodes,
//! fewer when a block's writes share the upper branches: [`SparseMerkleTree::update`] takes a
//! block's writes sorted by path and hashes each touched node once.
//!
//! # Memory and persistence
//!
//! The tree is immutable and shares structure ([`Arc`] children): an update copies only the
//! paths it changes, so cloning a tree (a proposal executed beside the committed head, a proof
//! served while the next block is built) costs one reference count. A node of the chain keeps
//! the head's tree in memory, about 240 bytes per state entry, and persists only its root; at
//! start it rebuilds the tree from the stored state in one pass (sorting the leaves, then
//! hashing each node once) and checks the rebuilt root against the saved one.

use std::sync::Arc;

use super::proof::StateProof;
pub use super::tree_hash::{bit, branch_hash, key_hash, leaf_hash, value_hash, Hash, EMPTY};

/// Updates with at least this many writes split their two halves between two threads (below
/// it the thread costs more than it saves).
const MIN_WRITES_PER_THREAD: usize = 2048;

/// A node of the tree (see the module docs for the canonical shape).
#[derive(Debug)]
enum Node {
    Empty,
    Leaf {
        key: Hash,
        value: Hash,
        hash: Hash,
    },
    Branch {
        left: Arc<Node>,
        right: Arc<Node>,
        hash: Hash,
    },
}

impl Node {
    fn hash(&self) -> Hash {
        match self {
            Node::Empty => EMPTY,
            Node::Leaf { hash, .. } | Node::Branch { hash, .. } => *hash,
        }
    }

    fn leaf(key: Hash, value: Hash) -> Arc<Node> {
        Arc::new(Node::Leaf {
            key,
            value,
            hash: leaf_hash(&key, &value),
        })
    }

    /// The node over two subtrees, in canonical shape: nothing under both is empty, one leaf
    /// alone moves up.
    fn branch(left: Arc<Node>, right: Arc<Node>) -> Arc<Node> {
        match (&*left, &*right) {
            (Node::Empty, Node::Empty) => left,
            (Node::Leaf { .. }, Node::Empty) => left,
            (Node::Empty, Node::Leaf { .. }) => right,
            _ => Arc::new(Node::Branch {
                hash: branch_hash(&left.hash(), &right.hash()),
                left,
                right,
            }),
        }
    }
}

/// The sparse Merkle tree of a state (module docs). `Default` is the empty state's. Equality is
/// equality of roots.
#[derive(Clone, Debug)]
pub struct SparseMerkleTree {
    root: Arc<Node>,
    leaves: u64,
}

impl Default for SparseMerkleTree {
    fn default() -> Self {
        Self {
            root: Arc::new(Node::Empty),
            leaves: 0,
        }
    }
}

impl PartialEq for SparseMerkleTree {
    fn eq(&self, other: &Self) -> bool {
        self.root() == other.root()
    }
}

impl Eq for SparseMerkleTree {}

/// Builds the subtree at `depth` of `leaves` (sorted by path, distinct paths).
fn build(depth: usize, leaves: &[(Hash, Hash)]) -> Arc<Node> {
    match leaves {
        [] => Arc::new(Node::Empty),
        [(k, v)] => Node::leaf(*k, *v),
        _ => {
            let split = leaves.partition_point(|(k, _)| !bit(k, depth));
            Node::branch(
                build(depth + 1, &leaves[..split]),
                build(depth + 1, &leaves[split..]),
            )
        }
    }
}

/// `node` (at `depth`) with `writes` (sorted by path, distinct, all under `node`'s prefix;
/// `None` deletes) applied, and the change in its number of leaves; `threads` bounds the
/// threads it may use.
fn update(
    node: &Arc<Node>,
    depth: usize,
    writes: &[(Hash, Option<Hash>)],
    threads: usize,
) -> (Arc<Node>, i64) {
    if writes.is_empty() {
        return (node.clone(), 0);
    }
    let rebuilt = |leaves: Vec<(Hash, Hash)>, before: i64| {
        let delta = leaves.len() as i64 - before;
        (build(depth, &leaves), delta)
    };
    match &**node {
        Node::Empty => rebuilt(
            writes
                .iter()
                .filter_map(|(k, v)| v.map(|v| (*k, v)))
                .collect(),
            0,
        ),
        Node::Leaf { key, value, .. } => {
            let mut leaves: Vec<(Hash, Hash)> = Vec::with_capacity(writes.len() + 1);
            let at = writes.partition_point(|(k, _)| k < key);
            let overwritten = writes.get(at).is_some_and(|(k, _)| k == key);
            leaves.extend(writes[..at].iter().filter_map(|(k, v)| v.map(|v| (*k, v))));
            if !overwritten {
                leaves.push((*key, *value));
            }
            leaves.extend(writes[at..].iter().filter_map(|(k, v)| v.map(|v| (*k, v))));
            rebuilt(leaves, 1)
        }
        Node::Branch { left, right, .. } => {
            let split = writes.partition_point(|(k, _)| !bit(k, depth));
            let (lw, rw) = writes.split_at(split);
            let ((l, dl), (r, dr)) =
                if threads > 1 && lw.len().min(rw.len()) >= MIN_WRITES_PER_THREAD {
                    let half = threads / 2;
                    std::thread::scope(|s| {
                        let other = s.spawn(|| update(left, depth + 1, lw, half));
                        let r = update(right, depth + 1, rw, threads - half);
                        let l = other
                            .join()
                            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                        (l, r)
                    })
                } else {
                    (
                        update(left, depth + 1, lw, threads),
                        update(right, depth + 1, rw, threads),
                    )
                };
            (Node::branch(l, r), dl + dr)
        }
    }
}

/// `(leaves, branches)` under `node`: a full walk, for figures only.
fn count_nodes(node: &Node) -> (u64, u64) {
    match node {
        Node::Empty => (0, 0),
        Node::Leaf { .. } => (1, 0),
        Node::Branch { left, right, .. } => {
            let (a, b) = (count_nodes(left), count_nodes(right));
            (a.0 + b.0, a.1 + b.1 + 1)
        }
    }
}

impl SparseMerkleTree {
    /// The tree of a whole state given as its entries (each key once), in any order.
    pub fn from_entries<I, K, V>(entries: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<[u8]>,
    {
        Self::from_hashed(
            entries
                .into_iter()
                .map(|(k, v)| (key_hash(k.as_ref()), value_hash(v.as_ref())))
                .collect(),
        )
    }

    /// The tree of leaves already hashed (`(k, v)` of each entry, each `k` once), in any
    /// order: what a node rebuilding its tree from its database passes.
    pub fn from_hashed(mut leaves: Vec<(Hash, Hash)>) -> Self {
        leaves.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        leaves.dedup_by(|a, b| a.0 == b.0);
        Self {
            root: build(0, &leaves),
            leaves: leaves.len() as u64,
        }
    }

    /// The state root: the root node's hash ([`EMPTY`] for the empty state).
    pub fn root(&self) -> Hash {
        self.root.hash()
    }

    /// How many entries the tree holds.
    pub fn len(&self) -> u64 {
        self.leaves
    }

    /// Whether the tree holds no entry.
    pub fn is_empty(&self) -> bool {
        self.leaves == 0
    }

    /// Applies one block's writes: each `(key, new value)` (`None` deletes; a key at most once),
    /// in any order, on up to `threads` threads. The result does not depend on `threads` or on
    /// the order.
    pub fn update<'a>(
        &mut self,
        writes: impl IntoIterator<Item = (&'a str, Option<&'a [u8]>)>,
        threads: usize,
    ) {
        let mut hashed: Vec<(Hash, Option<Hash>)> = writes
            .into_iter()
            .map(|(k, v)| (key_hash(k), v.map(value_hash)))
            .collect();
        hashed.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        // A key given twice keeps its last write.
        hashed.dedup_by(|later, earlier| {
            if later.0 == earlier.0 {
                earlier.1 = later.1;
                true
            } else {
                false
            }
        });
        if hashed.is_empty() {
            return;
        }
        let (root, delta) = update(&self.root, 0, &hashed, threads.max(1));
        self.root = root;
        self.leaves = self.leaves.checked_add_signed(delta).unwrap_or(0);
    }

    /// Bytes the tree's nodes hold in memory (each node and its reference count; allocator
    /// overhead not counted): a full walk, for figures and benchmarks, not for the block path.
    pub fn memory_bytes(&self) -> u64 {
        let (leaves, branches) = count_nodes(&self.root);
        (leaves + branches) * (std::mem::size_of::<Node>() as u64 + 16)
    }

    /// The proof of `key`'s entry (present or absent) against [`root`](Self::root): the
    /// sibling hashes on its path from the root down, and the leaf met at its end, if any.
    pub fn prove(&self, key: &str) -> StateProof {
        let k = key_hash(key);
        let mut siblings = Vec::new();
        let mut node = &self.root;
        loop {
            match &**node {
                Node::Empty => {
                    return StateProof {
                        siblings,
                        leaf: None,
                    }
                }
                Node::Leaf { key, value, .. } => {
                    return StateProof {
                        siblings,
                        leaf: Some((*key, *value)),
                    }
                }
                Node::Branch { left, right, .. } => {
                    let depth = siblings.len();
                    if bit(&k, depth) {
                        siblings.push(left.hash());
                        node = right;
                    } else {
                        siblings.push(right.hash());
                        node = left;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::sha256;
    use std::collections::BTreeMap;

    fn sample(n: u32) -> BTreeMap<String, Vec<u8>> {
        (0..n)
            .map(|i| (format!("bal/acct{i}/GOLD"), i.to_le_bytes().to_vec()))
            .collect()
    }

    /// The root computed straight from the definition: a full recursion over the sorted
    /// leaves, with no tree kept.
    fn reference_root(state: &BTreeMap<String, Vec<u8>>) -> Hash {
        fn root(depth: usize, leaves: &[(Hash, Hash)]) -> Hash {
            match leaves {
                [] => EMPTY,
                [(k, v)] => leaf_hash(k, v),
                // Two or more leaves: a branch, even when all of them go one way.
                _ => {
                    let split = leaves.partition_point(|(k, _)| !bit(k, depth));
                    branch_hash(
                        &root(depth + 1, &leaves[..split]),
                        &root(depth + 1, &leaves[split..]),
                    )
                }
            }
        }
        let mut leaves: Vec<(Hash, Hash)> = state
            .iter()
            .map(|(k, v)| (key_hash(k), value_hash(v)))
            .collect();
        leaves.sort();
        root(0, &leaves)
    }

    #[test]
    fn the_empty_state_has_the_zero_root_and_one_entry_its_leaf_hash() {
        assert_eq!(SparseMerkleTree::default().root(), EMPTY);
        let one = SparseMerkleTree::from_entries([("bal/a/GOLD", b"100")]);
        assert_eq!(
            one.root(),
            leaf_hash(&sha256(b"bal/a/GOLD"), &sha256(b"100"))
        );
    }

    #[test]
    fn roots_match_the_definition_and_not_the_order() {
        for n in [2, 3, 17, 500] {
            let state = sample(n);
            let tree = SparseMerkleTree::from_entries(&state);
            assert_eq!(tree.root(), reference_root(&state), "{n} entries");
            assert_eq!(tree.len(), n as u64);
            let backward = SparseMerkleTree::from_entries(state.iter().rev());
            assert_eq!(backward.root(), tree.root());
        }
    }

    #[test]
    fn updates_equal_a_rebuild_on_any_thread_count() {
        let mut state = sample(6000);
        let mut tree = SparseMerkleTree::from_entries(&state);
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        for round in 0..4u32 {
            let mut writes: Vec<(String, Option<Vec<u8>>)> = Vec::new();
            for _ in 0..5000 {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let key = format!("bal/acct{}/GOLD", rng % 7000);
                let value = (rng % 5 != 0).then(|| round.to_le_bytes().to_vec());
                writes.push((key, value));
            }
            for (k, v) in &writes {
                match v {
                    Some(v) => state.insert(k.clone(), v.clone()),
                    None => state.remove(k),
                };
            }
            let mut other = tree.clone();
            tree.update(writes.iter().map(|(k, v)| (k.as_str(), v.as_deref())), 1);
            other.update(writes.iter().map(|(k, v)| (k.as_str(), v.as_deref())), 4);
            assert_eq!(tree.root(), reference_root(&state), "round {round}");
            assert_eq!(other.root(), tree.root());
            assert_eq!(tree.len(), state.len() as u64);
        }
    }

    #[test]
    fn deleting_everything_returns_to_empty_and_a_clone_keeps_its_root() {
        let state = sample(40);
        let tree = SparseMerkleTree::from_entries(&state);
        let before = tree.root();
        let mut emptied = tree.clone();
        emptied.update(state.keys().map(|k| (k.as_str(), None)), 1);
        assert_eq!(emptied.root(), EMPTY);
        assert!(emptied.is_empty());
        assert_eq!(tree.root(), before);
        // Deleting an absent key and writing an equal value change nothing.
        let mut same = tree.clone();
        same.update(
            [
                ("absent", None),
                ("bal/acct3/GOLD", Some(3u32.to_le_bytes().as_slice())),
            ],
            1,
        );
        assert_eq!(same.root(), before);
    }
}
