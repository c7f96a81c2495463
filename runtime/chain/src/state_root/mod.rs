//! The state commitment: [`StateHash`], the running commitment to every `(key, value)` entry
//! of the state whose root each block header carries as `state_root`, in one of two
//! constructions a chain's genesis picks ([`StateCommitment`]):
//!
//! | file | owns |
//! |---|---|
//! | `lthash.rs` | [`LtHash`]: a homomorphic multiset hash; O(writes) per block, no proofs (chains whose genesis names no commitment) |
//! | `sparse_merkle.rs` | [`SparseMerkleTree`]: a binary sparse Merkle tree; proves any key present or absent |
//! | `proof.rs` | [`StateProof`]: a key's proof against a sparse Merkle root and its check |
//! | `chunk_proof.rs` | [`ChunkVerifier`]: a whole state received in chunks sorted by path, each checked against the root on arrival (snapshots) |
//! | `tree_hash.rs` | the tree's hashes (leaf, branch, empty) and a key's path |
//! | `element.rs`, `element_cache.rs` | the LtHash's per-entry vectors and their memo |
//!
//! Both commit to the same entries (module state `m/...`, balances `bal/...`, token records,
//! nonces, every key the node stores) with their exact bytes; a block's root depends only on
//! the state after it, never on the order of its writes or the threads that hashed them.

pub mod chunk_proof;
mod element;
pub mod element_cache;
mod lthash;
pub mod proof;
pub mod sparse_merkle;
mod tree_hash;

pub use chunk_proof::{ChunkError, ChunkVerifier};
pub use element::{DOMAIN, LANES};
pub use lthash::LtHash;
pub use proof::{ProofError, StateProof};
pub use sparse_merkle::SparseMerkleTree;

use element_cache::ElementCache;
use serde::{Deserialize, Serialize};

/// Which construction a chain's state root uses: genesis's `state_commitment` field
/// (`"lthash16"` or `"sparse_merkle"`; absent = `"lthash16"`, the chains made before proofs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum StateCommitment {
    /// [`LtHash`]: no proofs.
    #[default]
    #[serde(rename = "lthash16")]
    LtHash16,
    /// [`SparseMerkleTree`]: membership and non-membership proofs.
    SparseMerkle,
}

impl StateCommitment {
    /// The name genesis JSON and the API use.
    pub fn name(self) -> &'static str {
        match self {
            StateCommitment::LtHash16 => "lthash16",
            StateCommitment::SparseMerkle => "sparse_merkle",
        }
    }
}

/// Builds the commitment to a whole state one entry at a time ([`StateHash::builder`]): an
/// LtHash sums each entry as it comes; a tree keeps each entry's two hashes (64 bytes) and is
/// built once at [`finish`](Self::finish).
pub enum StateBuilder {
    /// Summing.
    LtHash(LtHash),
    /// Gathering `(SHA-256(key), SHA-256(value))`.
    SparseMerkle(Vec<(sparse_merkle::Hash, sparse_merkle::Hash)>),
}

impl StateBuilder {
    /// Adds the entry `(key, value)` (each key once).
    pub fn insert(&mut self, key: &str, value: &[u8]) {
        match self {
            StateBuilder::LtHash(h) => h.insert(key, value),
            StateBuilder::SparseMerkle(leaves) => leaves.push((
                sparse_merkle::key_hash(key),
                sparse_merkle::value_hash(value),
            )),
        }
    }

    /// The commitment to the entries inserted.
    pub fn finish(self) -> StateHash {
        match self {
            StateBuilder::LtHash(h) => StateHash::LtHash(h),
            StateBuilder::SparseMerkle(leaves) => {
                StateHash::SparseMerkle(SparseMerkleTree::from_hashed(leaves))
            }
        }
    }
}

/// The running commitment to a state (module docs): cloning it is cheap (2 KiB for an LtHash,
/// one reference count for a tree).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StateHash {
    /// A chain without proofs.
    LtHash(LtHash),
    /// A chain with proofs.
    SparseMerkle(SparseMerkleTree),
}

impl StateHash {
    /// The commitment to the empty state.
    pub fn empty(kind: StateCommitment) -> Self {
        match kind {
            StateCommitment::LtHash16 => StateHash::LtHash(LtHash::new()),
            StateCommitment::SparseMerkle => StateHash::SparseMerkle(SparseMerkleTree::default()),
        }
    }

    /// The commitment to a whole state given as its entries (each key once), in any order.
    pub fn from_entries<I, K, V>(kind: StateCommitment, entries: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<[u8]>,
    {
        match kind {
            StateCommitment::LtHash16 => StateHash::LtHash(LtHash::from_entries(entries)),
            StateCommitment::SparseMerkle => {
                StateHash::SparseMerkle(SparseMerkleTree::from_entries(entries))
            }
        }
    }

    /// A builder of the commitment to a whole state, fed one entry at a time.
    pub fn builder(kind: StateCommitment) -> StateBuilder {
        match kind {
            StateCommitment::LtHash16 => StateBuilder::LtHash(LtHash::new()),
            StateCommitment::SparseMerkle => StateBuilder::SparseMerkle(Vec::new()),
        }
    }

    /// Which construction this is.
    pub fn kind(&self) -> StateCommitment {
        match self {
            StateHash::LtHash(_) => StateCommitment::LtHash16,
            StateHash::SparseMerkle(_) => StateCommitment::SparseMerkle,
        }
    }

    /// The 32-byte state root a header carries.
    pub fn root(&self) -> [u8; 32] {
        match self {
            StateHash::LtHash(h) => h.root(),
            StateHash::SparseMerkle(t) => t.root(),
        }
    }

    /// Applies one block's net changes: each `(key, old value, new value)` (`None`: absent),
    /// each key once, `old` what the state really held. Uses up to `threads` threads and, for
    /// an LtHash, `cache` for the old entries' vectors; the result depends on neither.
    pub fn apply_changes(
        &mut self,
        changes: &[(&str, Option<&[u8]>, Option<&[u8]>)],
        threads: usize,
        cache: &ElementCache,
    ) {
        match self {
            StateHash::LtHash(h) => h.add(&lthash::changes_hash(changes, threads, cache)),
            StateHash::SparseMerkle(t) => {
                t.update(changes.iter().map(|(k, _, new)| (*k, *new)), threads)
            }
        }
    }

    /// Records one write (`old`: what `key` held), like [`apply_changes`](Self::apply_changes)
    /// of one change on one thread.
    pub fn apply(&mut self, key: &str, old: Option<&[u8]>, new: Option<&[u8]>) {
        match self {
            StateHash::LtHash(h) => h.apply(key, old, new),
            StateHash::SparseMerkle(t) => t.update([(key, new)], 1),
        }
    }

    /// The proof of `key`'s entry against [`root`](Self::root); `None` on an LtHash chain,
    /// which has none.
    pub fn prove(&self, key: &str) -> Option<StateProof> {
        match self {
            StateHash::LtHash(_) => None,
            StateHash::SparseMerkle(t) => Some(t.prove(key)),
        }
    }

    /// What a node saves of it beside its head block: the 2048 lane bytes of an LtHash (from
    /// which it resumes), the 32-byte root of a tree (which it rebuilds from the stored state
    /// and checks against these bytes).
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            StateHash::LtHash(h) => h.to_bytes(),
            StateHash::SparseMerkle(t) => t.root().to_vec(),
        }
    }
}
