//! [`ChunkVerifier`]: checks a sparse Merkle state (`sparse_merkle.rs`) handed over in chunks,
//! each chunk on its own against the state root as it arrives, so that a lying peer is caught
//! at its first false chunk rather than after the whole state has been fetched (state
//! snapshots, `node/ledger/src/store/snapshot.rs`).
//!
//! The state's leaves `(k, v)` (`k = SHA-256(key)`, `v = SHA-256(value)`) travel sorted by
//! path `k`, split into chunks. Each chunk carries the sibling hashes of its last leaf's path
//! (the membership proof of that leaf, [`SparseMerkleTree::prove`](super::SparseMerkleTree::prove)).
//! A chunk checks when:
//!
//! * its leaves ascend strictly and come after every leaf of the chunks before it;
//! * its last leaf's proof folds to the root: the last leaf is in the state;
//! * every sibling on the **left** of that path (where the path goes right) is the hash of
//!   exactly the leaves received so far that lie under it. Every leaf before the last one lies
//!   under one such sibling, so the leaves received are exactly the state's leaves up to the
//!   last one: none left out, none added, none changed.
//!
//! The siblings on the right are the part of the state still to come; after the last chunk
//! they must all be empty ([`ChunkVerifier::finish`]).
//!
//! Memory stays small: after each chunk the verifier keeps only its frontier, the left
//! siblings' subtrees (as a hash, or as the one leaf a subtree holds, which may still move up
//! in the canonical shape) and the last leaf: at most 257 items, whatever the state's size.
//! Each chunk costs about one hash per leaf and per level above it.
//!
//! This is the restore of Diem/Aptos's Jellyfish Merkle tree (a chunk of sorted leaves with
//! the proof of its rightmost leaf, the left part kept as frozen subtrees), for our binary
//! tree.

use super::tree_hash::{bit, branch_hash, leaf_hash, Hash, EMPTY};

/// Most sibling hashes a chunk's proof may have (one per bit of a path).
pub const MAX_CHUNK_PROOF_DEPTH: usize = 256;

/// Why a chunk does not check (fixed texts; `leaf` is the index of a leaf in the chunk).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChunkError {
    /// The chunk holds no leaf.
    Empty,
    /// More than [`MAX_CHUNK_PROOF_DEPTH`] siblings.
    TooDeep,
    /// A leaf does not come after the one before it (in this chunk or the chunks before).
    NotAscending { leaf: usize },
    /// The last leaf's proof does not fold to the root.
    WrongRoot,
    /// A leaf lies on the last leaf's path below where its proof ends (no proof of a present
    /// leaf can end above another leaf).
    UnderLastLeaf { leaf: usize },
    /// The leaves under the left sibling at this depth do not hash to it: a leaf left out,
    /// added or changed before the chunk's last leaf.
    LeftSibling { depth: usize },
    /// [`ChunkVerifier::finish`] with a sibling on the right of the last leaf's path that is
    /// not empty: the state goes on.
    Incomplete,
    /// A chunk after the state's last leaf (or any chunk of the empty state).
    Finished,
}

impl std::fmt::Display for ChunkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChunkError::Empty => write!(f, "the chunk holds no entry"),
            ChunkError::TooDeep => write!(f, "the chunk's proof has more than 256 siblings"),
            ChunkError::NotAscending { leaf } => write!(
                f,
                "entry {leaf}'s key hash does not come after the one before it (entries ascend \
                 by SHA-256 of the key, each once)"
            ),
            ChunkError::WrongRoot => {
                write!(
                    f,
                    "the proof of its last entry does not lead to the state root"
                )
            }
            ChunkError::UnderLastLeaf { leaf } => write!(
                f,
                "entry {leaf} lies under its last entry's leaf: the proof cannot be that entry's"
            ),
            ChunkError::LeftSibling { depth } => write!(
                f,
                "the entries up to its last one do not hash to the proof's sibling at depth \
                 {depth}: an entry is missing, added or changed"
            ),
            ChunkError::Incomplete => write!(
                f,
                "the state root holds entries after the last chunk's last entry"
            ),
            ChunkError::Finished => write!(f, "a chunk after the state's last entry"),
        }
    }
}

impl std::error::Error for ChunkError {}

/// One complete subtree left of the verified part's end: a single leaf (which may still move
/// up in a larger subtree), or the hash of a subtree of two or more leaves whose first `depth`
/// path bits are `path`'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Item {
    Leaf {
        k: Hash,
        v: Hash,
    },
    Sub {
        path: Hash,
        depth: usize,
        hash: Hash,
    },
}

impl Item {
    /// The path it sorts and splits by: a leaf's own, a subtree's prefix (the rest zeros).
    fn path(&self) -> &Hash {
        match self {
            Item::Leaf { k, .. } => k,
            Item::Sub { path, .. } => path,
        }
    }
}

/// A subtree's node as its parent sees it: nothing, one leaf (moves up), or a branch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Empty,
    Leaf(Hash),
    Branch(Hash),
}

impl Shape {
    fn hash(self) -> Hash {
        match self {
            Shape::Empty => EMPTY,
            Shape::Leaf(h) | Shape::Branch(h) => h,
        }
    }

    /// The node over `left` and `right` in the tree's canonical shape.
    fn join(left: Shape, right: Shape) -> Shape {
        match (left, right) {
            (Shape::Empty, Shape::Empty) => Shape::Empty,
            (Shape::Leaf(h), Shape::Empty) | (Shape::Empty, Shape::Leaf(h)) => Shape::Leaf(h),
            (l, r) => Shape::Branch(branch_hash(&l.hash(), &r.hash())),
        }
    }
}

/// The node at `depth` over `items` (sorted by path, all sharing the first `depth` bits, each
/// a disjoint part of the subtree). `None`: a subtree item is not below `depth` while others
/// share its place (the items overlap; only a false frontier could do that).
fn shape(depth: usize, items: &[Item]) -> Option<Shape> {
    match items {
        [] => Some(Shape::Empty),
        [Item::Leaf { k, v }] => Some(Shape::Leaf(leaf_hash(k, v))),
        [Item::Sub { depth: d, hash, .. }] if *d == depth => Some(Shape::Branch(*hash)),
        _ => {
            if depth >= 256
                || items
                    .iter()
                    .any(|i| matches!(i, Item::Sub { depth: d, .. } if *d <= depth))
            {
                return None;
            }
            let split = items.partition_point(|i| !bit(i.path(), depth));
            Some(Shape::join(
                shape(depth + 1, &items[..split])?,
                shape(depth + 1, &items[split..])?,
            ))
        }
    }
}

/// `path`'s first `depth` bits, the rest zeros.
fn prefix(path: &Hash, depth: usize) -> Hash {
    let mut out = [0u8; 32];
    for d in 0..depth {
        if bit(path, d) {
            out[d / 8] |= 0x80 >> (d % 8);
        }
    }
    out
}

/// Checks a sparse Merkle state chunk by chunk against its root (module docs).
#[derive(Debug, Clone)]
pub struct ChunkVerifier {
    root: Hash,
    /// The complete subtrees left of the last leaf, then the last leaf, sorted by path.
    frontier: Vec<Item>,
    /// The last leaf's path.
    last: Option<Hash>,
    /// The siblings on the right of the last leaf's path are all empty: the state is complete.
    complete: bool,
    /// Leaves checked so far.
    leaves: u64,
}

impl ChunkVerifier {
    /// A verifier of the state whose root is `root`.
    pub fn new(root: Hash) -> Self {
        ChunkVerifier {
            root,
            frontier: Vec::new(),
            last: None,
            complete: root == EMPTY,
            leaves: 0,
        }
    }

    /// Leaves checked so far.
    pub fn leaves(&self) -> u64 {
        self.leaves
    }

    /// Checks the next chunk: its leaves `(k, v)` in order and the sibling hashes of its last
    /// leaf's path, from the root down. Nothing changes when it does not check.
    pub fn push(&mut self, leaves: &[(Hash, Hash)], siblings: &[Hash]) -> Result<(), ChunkError> {
        if self.complete {
            return Err(ChunkError::Finished);
        }
        let Some(&(last_k, last_v)) = leaves.last() else {
            return Err(ChunkError::Empty);
        };
        if siblings.len() > MAX_CHUNK_PROOF_DEPTH {
            return Err(ChunkError::TooDeep);
        }
        let mut before = self.last;
        for (i, (k, _)) in leaves.iter().enumerate() {
            if before.is_some_and(|b| b >= *k) {
                return Err(ChunkError::NotAscending { leaf: i });
            }
            before = Some(*k);
        }
        // The last leaf is in the state.
        let folded =
            siblings
                .iter()
                .enumerate()
                .rev()
                .fold(leaf_hash(&last_k, &last_v), |h, (d, s)| {
                    if bit(&last_k, d) {
                        branch_hash(s, &h)
                    } else {
                        branch_hash(&h, s)
                    }
                });
        if folded != self.root {
            return Err(ChunkError::WrongRoot);
        }
        // Everything before it: the frontier and this chunk's other leaves, each under one
        // left sibling of its path.
        let items: Vec<Item> = self
            .frontier
            .iter()
            .copied()
            .chain(
                leaves[..leaves.len() - 1]
                    .iter()
                    .map(|&(k, v)| Item::Leaf { k, v }),
            )
            .collect();
        let depth = siblings.len();
        // Where each item leaves the last leaf's path: the first bit where they differ (an
        // item is left of the path there). A subtree item that contains the path, or any item
        // that does not leave it above `depth`, cannot be.
        let mut new_frontier = Vec::with_capacity(depth + 1);
        let mut start = 0;
        let chunk_start = self.frontier.len();
        let parted = |item: &Item| -> usize {
            let p = item.path();
            (0..256)
                .find(|&d| bit(p, d) != bit(&last_k, d))
                .unwrap_or(256)
        };
        for d in 0..depth {
            // Items parting at depth d come next (sorted by path, the earliest partings first).
            let end = start + items[start..].partition_point(|it| parted(it) == d);
            let group = &items[start..end];
            if bit(&last_k, d) {
                let got = shape(d + 1, group).ok_or(ChunkError::LeftSibling { depth: d })?;
                if got.hash() != siblings[d] {
                    return Err(ChunkError::LeftSibling { depth: d });
                }
                match group {
                    [] => {}
                    [leaf @ Item::Leaf { .. }] => new_frontier.push(*leaf),
                    _ => new_frontier.push(Item::Sub {
                        path: prefix(&last_k, d),
                        depth: d + 1,
                        hash: siblings[d],
                    }),
                }
            } else if !group.is_empty() {
                // Items right of the path: they would come after the last leaf.
                let at = start.max(chunk_start) - chunk_start;
                return Err(ChunkError::NotAscending { leaf: at });
            }
            start = end;
        }
        if start < items.len() {
            let leaf = start.max(chunk_start) - chunk_start;
            return Err(ChunkError::UnderLastLeaf { leaf });
        }
        new_frontier.push(Item::Leaf {
            k: last_k,
            v: last_v,
        });
        self.frontier = new_frontier;
        self.last = Some(last_k);
        self.leaves += leaves.len() as u64;
        self.complete = (0..depth).all(|d| bit(&last_k, d) || siblings[d] == EMPTY);
        Ok(())
    }

    /// After the last chunk: the state has nothing after its last leaf. Errors:
    /// [`ChunkError::Incomplete`].
    pub fn finish(&self) -> Result<(), ChunkError> {
        if self.complete {
            Ok(())
        } else {
            Err(ChunkError::Incomplete)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state_root::sparse_merkle::{key_hash, value_hash, SparseMerkleTree};
    use proptest::prelude::*;

    /// A state of `n` entries: the tree and its leaves sorted by path, with their keys.
    fn state(n: u32, salt: u32) -> (SparseMerkleTree, Vec<(String, Hash, Hash)>) {
        let entries: Vec<(String, Vec<u8>)> = (0..n)
            .map(|i| {
                (
                    format!("bal/acct{i}/{salt}"),
                    (i ^ salt).to_le_bytes().to_vec(),
                )
            })
            .collect();
        let tree = SparseMerkleTree::from_entries(entries.iter().map(|(k, v)| (k, v)));
        let mut leaves: Vec<(String, Hash, Hash)> = entries
            .iter()
            .map(|(k, v)| (k.clone(), key_hash(k), value_hash(v)))
            .collect();
        leaves.sort_by(|a, b| a.1.cmp(&b.1));
        (tree, leaves)
    }

    /// The chunks of `leaves` cut at `cuts` (ascending ends), each with its last leaf's proof.
    fn chunks(
        tree: &SparseMerkleTree,
        leaves: &[(String, Hash, Hash)],
        cuts: &[usize],
    ) -> Vec<(Vec<(Hash, Hash)>, Vec<Hash>)> {
        let mut out = Vec::new();
        let mut start = 0;
        for &end in cuts.iter().chain(std::iter::once(&leaves.len())) {
            if end <= start {
                continue;
            }
            let part: Vec<(Hash, Hash)> = leaves[start..end].iter().map(|l| (l.1, l.2)).collect();
            let proof = tree.prove(&leaves[end - 1].0);
            out.push((part, proof.siblings));
            start = end;
        }
        out
    }

    fn verify_all(
        root: Hash,
        chunks: &[(Vec<(Hash, Hash)>, Vec<Hash>)],
    ) -> Result<(), (usize, ChunkError)> {
        let mut v = ChunkVerifier::new(root);
        for (i, (leaves, siblings)) in chunks.iter().enumerate() {
            v.push(leaves, siblings).map_err(|e| (i, e))?;
        }
        v.finish().map_err(|e| (chunks.len(), e))
    }

    #[test]
    fn every_honest_cut_verifies_and_each_lie_fails_at_its_chunk() {
        let (tree, leaves) = state(300, 7);
        let root = tree.root();
        for cuts in [
            vec![],
            vec![1],
            vec![150],
            vec![1, 2, 3, 299],
            vec![10, 100, 200, 250],
        ] {
            let c = chunks(&tree, &leaves, &cuts);
            assert_eq!(verify_all(root, &c), Ok(()), "cuts {cuts:?}");
        }
        let honest = chunks(&tree, &leaves, &[100, 200]);
        // A leaf left out of the second chunk: that chunk fails.
        let mut lie = honest.clone();
        lie[1].0.remove(10);
        assert!(matches!(
            verify_all(root, &lie),
            Err((1, ChunkError::LeftSibling { .. }))
        ));
        // A changed value in the first chunk.
        let mut lie = honest.clone();
        lie[0].0[5].1[0] ^= 1;
        assert!(matches!(
            verify_all(root, &lie),
            Err((0, ChunkError::LeftSibling { .. }))
        ));
        // An entry added.
        let mut lie = honest.clone();
        let mut extra = lie[1].0[3].0;
        extra[31] ^= 1;
        lie[1].0.insert(4, (extra, [9; 32]));
        lie[1].0.sort();
        assert!(matches!(verify_all(root, &lie), Err((1, _))));
        // The last leaf's value changed: its proof no longer leads to the root.
        let mut lie = honest.clone();
        lie[2].0.last_mut().unwrap().1[0] ^= 1;
        assert_eq!(verify_all(root, &lie), Err((2, ChunkError::WrongRoot)));
        // Chunks out of order, or one repeated.
        let lie = vec![honest[1].clone(), honest[0].clone(), honest[2].clone()];
        assert!(matches!(verify_all(root, &lie), Err((0, _)) | Err((1, _))));
        let lie = vec![honest[0].clone(), honest[0].clone()];
        assert!(matches!(
            verify_all(root, &lie),
            Err((1, ChunkError::NotAscending { leaf: 0 }))
        ));
        // The state cut short: every chunk checks, the end does not.
        assert_eq!(
            verify_all(root, &honest[..2]),
            Err((2, ChunkError::Incomplete))
        );
        // A chunk past the end.
        let mut lie = honest.clone();
        lie.push(honest[2].clone());
        assert_eq!(verify_all(root, &lie), Err((3, ChunkError::Finished)));
        // Another state's chunks.
        let (other, other_leaves) = state(300, 8);
        let c = chunks(&other, &other_leaves, &[100]);
        assert_eq!(verify_all(root, &c), Err((0, ChunkError::WrongRoot)));
        // A failed push changes nothing: the honest chunk still goes in after it.
        let mut v = ChunkVerifier::new(root);
        v.push(&honest[0].0, &honest[0].1).unwrap();
        let mut bad = honest[1].0.clone();
        bad.remove(0);
        assert!(v.push(&bad, &honest[1].1).is_err());
        v.push(&honest[1].0, &honest[1].1).unwrap();
        v.push(&honest[2].0, &honest[2].1).unwrap();
        v.finish().unwrap();
        assert_eq!(v.leaves(), 300);
    }

    #[test]
    fn small_states_and_the_empty_one() {
        assert_eq!(ChunkVerifier::new(EMPTY).finish(), Ok(()));
        assert_eq!(
            ChunkVerifier::new(EMPTY).push(&[([1; 32], [2; 32])], &[]),
            Err(ChunkError::Finished)
        );
        let (tree, leaves) = state(1, 3);
        assert_eq!(
            verify_all(tree.root(), &chunks(&tree, &leaves, &[])),
            Ok(())
        );
        let (tree, leaves) = state(2, 3);
        assert_eq!(
            verify_all(tree.root(), &chunks(&tree, &leaves, &[1])),
            Ok(())
        );
        assert_eq!(
            ChunkVerifier::new(tree.root()).push(&[], &[]),
            Err(ChunkError::Empty)
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Any cut of any state verifies; dropping any one leaf fails at its chunk or at the end.
        #[test]
        fn cuts_verify_and_a_dropped_leaf_is_caught(
            n in 1u32..200,
            salt in 0u32..1000,
            cut_points in proptest::collection::vec(0usize..200, 0..6),
            drop_at in 0usize..200,
        ) {
            let (tree, leaves) = state(n, salt);
            let mut cuts: Vec<usize> = cut_points.into_iter().filter(|&c| c > 0 && c < leaves.len()).collect();
            cuts.sort_unstable();
            cuts.dedup();
            let honest = chunks(&tree, &leaves, &cuts);
            prop_assert_eq!(verify_all(tree.root(), &honest), Ok(()));
            let drop_at = drop_at % leaves.len();
            let mut lie = honest.clone();
            let mut seen = 0;
            for (chunk, _) in lie.iter_mut() {
                if drop_at < seen + chunk.len() {
                    chunk.remove(drop_at - seen);
                    break;
                }
                seen += chunk.len();
            }
            prop_assert!(verify_all(tree.root(), &lie).is_err());
        }
    }
}
