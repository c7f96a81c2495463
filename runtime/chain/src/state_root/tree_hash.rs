//! The sparse Merkle tree's hashes (`sparse_merkle.rs` defines the tree, `proof.rs` checks its
//! proofs; both use these): [`Hash`], [`EMPTY`], a leaf's path [`key_hash`] and value hash
//! [`value_hash`], [`leaf_hash`], [`branch_hash`] and a path's [`bit`].

use sha2::{Digest, Sha256};

use crate::hash::sha256;

/// One 32-byte hash of the tree.
pub type Hash = [u8; 32];

/// The hash of an empty subtree, and the root of the empty state.
pub const EMPTY: Hash = [0u8; 32];

/// `k`: SHA-256 of the key's UTF-8 bytes, the leaf's path.
pub fn key_hash(key: &str) -> Hash {
    sha256(key.as_bytes())
}

/// `v`: SHA-256 of the value's bytes.
pub fn value_hash(value: &[u8]) -> Hash {
    sha256(value)
}

/// A leaf's hash: `SHA-256(0x00 ‖ k ‖ v)`.
pub fn leaf_hash(k: &Hash, v: &Hash) -> Hash {
    let mut h = Sha256::new();
    h.update([0u8]);
    h.update(k);
    h.update(v);
    h.finalize().into()
}

/// A branch's hash: `SHA-256(0x01 ‖ left ‖ right)`.
pub fn branch_hash(left: &Hash, right: &Hash) -> Hash {
    let mut h = Sha256::new();
    h.update([1u8]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// Bit `depth` of `path` (0 = the most significant bit of byte 0): `true` goes right.
pub fn bit(path: &Hash, depth: usize) -> bool {
    (path[depth / 8] >> (7 - depth % 8)) & 1 == 1
}
