//! The binary Merkle root of an ordered list, as RFC 6962 (Certificate Transparency) §2.1
//! defines it. Used for a block's `tx_root` (leaves: the 32-byte txids) and `receipt_root`
//! (leaves: the 32-byte receipt hashes).
//!
//! * MTH({}) = SHA-256() (the hash of the empty string);
//! * MTH({d}) = SHA-256(0x00 ‖ d) (leaf);
//! * MTH(D[0..n]) = SHA-256(0x01 ‖ MTH(D[0..k]) ‖ MTH(D[k..n])) for n > 1, k the largest
//!   power of two below n (node).
//!
//! Chosen over Bitcoin's "duplicate the last node" tree, where `[a, b, c]` and `[a, b, c, c]`
//! have the same root (CVE-2012-2459); the 0x00/0x01 prefixes also keep a leaf from passing as
//! an inner node.
//!
//! Inclusion proofs ([`inclusion_proof`], [`verify_inclusion`]) are RFC 6962's audit paths
//! (§2.1.1), checked with RFC 9162 §2.1.3.2's algorithm: `GET /v1/games/<module>/<id>/transcript`
//! serves them for each of a game's txids in `tx_root` and its receipt hashes in `receipt_root`.

use sha2::{Digest, Sha256};

/// SHA-256(0x00 ‖ `data`): the hash of one leaf.
pub fn leaf_hash(data: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update([0x00]);
    h.update(data);
    h.finalize().into()
}

/// SHA-256(0x01 ‖ `left` ‖ `right`): the hash of an inner node.
pub fn node_hash(left: &[u8; 32], right: &[u8; 32]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update([0x01]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// The RFC 6962 Merkle tree hash of `leaves`, in order.
pub fn merkle_root<T: AsRef<[u8]>>(leaves: &[T]) -> [u8; 32] {
    if leaves.is_empty() {
        return Sha256::digest([]).into();
    }
    let hashes: Vec<[u8; 32]> = leaves.iter().map(|l| leaf_hash(l.as_ref())).collect();
    subtree(&hashes)
}

fn subtree(hashes: &[[u8; 32]]) -> [u8; 32] {
    if hashes.len() == 1 {
        return hashes[0];
    }
    // The largest power of two strictly below len (len >= 2).
    let k = 1usize << (usize::BITS - 1 - (hashes.len() - 1).leading_zeros());
    node_hash(&subtree(&hashes[..k]), &subtree(&hashes[k..]))
}

/// The RFC 6962 §2.1.1 audit path of leaf `index` in the tree of `leaves` (hashes of the
/// sibling subtrees, bottom up). `None` when `index` is not below `leaves.len()`.
///
/// PATH(0, {d0}) = {}; for n > 1 and k the largest power of two below n:
/// PATH(m, D[n]) = PATH(m, D[0:k]) : MTH(D[k:n]) for m < k, PATH(m − k, D[k:n]) : MTH(D[0:k]) else.
pub fn inclusion_proof<T: AsRef<[u8]>>(leaves: &[T], index: usize) -> Option<Vec<[u8; 32]>> {
    if index >= leaves.len() {
        return None;
    }
    let hashes: Vec<[u8; 32]> = leaves.iter().map(|l| leaf_hash(l.as_ref())).collect();
    let mut path = Vec::new();
    audit_path(&hashes, index, &mut path);
    Some(path)
}

fn audit_path(hashes: &[[u8; 32]], index: usize, path: &mut Vec<[u8; 32]>) {
    if hashes.len() <= 1 {
        return;
    }
    let k = 1usize << (usize::BITS - 1 - (hashes.len() - 1).leading_zeros());
    if index < k {
        audit_path(&hashes[..k], index, path);
        path.push(subtree(&hashes[k..]));
    } else {
        audit_path(&hashes[k..], index - k, path);
        path.push(subtree(&hashes[..k]));
    }
}

/// Whether `proof` shows that `leaf` (the leaf's data, hashed here as [`leaf_hash`]) is leaf
/// `index` of a tree of `size` leaves whose root is `root` (RFC 9162 §2.1.3.2). False for an
/// index not below `size`, a proof too short or too long, or any other hash.
pub fn verify_inclusion(
    leaf: &[u8],
    index: u64,
    size: u64,
    proof: &[[u8; 32]],
    root: &[u8; 32],
) -> bool {
    if index >= size {
        return false;
    }
    let (mut f, mut s) = (index, size - 1);
    let mut r = leaf_hash(leaf);
    for p in proof {
        if s == 0 {
            return false;
        }
        if f & 1 == 1 || f == s {
            r = node_hash(p, &r);
            while f & 1 == 0 && f != 0 {
                f >>= 1;
                s >>= 1;
            }
        } else {
            r = node_hash(&r, p);
        }
        f >>= 1;
        s >>= 1;
    }
    s == 0 && r == *root
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The leaves of the RFC 6962 reference vectors (transparency-dev/merkle `LeafInputs()`).
    fn reference_leaves() -> Vec<Vec<u8>> {
        [
            "",
            "00",
            "10",
            "2021",
            "3031",
            "40414243",
            "5051525354555657",
            "606162636465666768696a6b6c6d6e6f",
        ]
        .iter()
        .map(|h| hex::decode(h).unwrap())
        .collect()
    }

    /// RFC 6962 reference vectors from the Certificate Transparency implementation
    /// (transparency-dev/merkle, `testonly/constants.go`: `LeafInputs()` and `RootHashes()`).
    #[test]
    fn rfc6962_reference_roots() {
        let leaves = reference_leaves();
        let roots = [
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
            "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
            "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
            "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
            "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
            "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
            "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
        ];
        for (n, want) in roots.iter().enumerate() {
            assert_eq!(
                hex::encode(merkle_root(&leaves[..n])),
                *want,
                "tree of {n} leaves"
            );
        }
    }

    #[test]
    fn no_duplicate_last_ambiguity() {
        let l = |b: u8| [b; 32];
        assert_ne!(
            merkle_root(&[l(1), l(2), l(3)]),
            merkle_root(&[l(1), l(2), l(3), l(3)])
        );
        assert_ne!(merkle_root(&[l(1), l(2)]), merkle_root(&[l(2), l(1)]));
    }

    /// RFC 6962 audit paths of the reference tree (Certificate Transparency's
    /// `merkle_tree_test.cc`, transparency-dev/merkle `testonly`: leaf index 0-based).
    #[test]
    fn rfc6962_reference_inclusion_proofs() {
        let leaves = reference_leaves();
        let cases: [(usize, usize, &[&str]); 5] = [
            (0, 1, &[]),
            (
                0,
                8,
                &[
                    "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
                    "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
                    "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
                ],
            ),
            (
                5,
                8,
                &[
                    "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
                    "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
                    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
                ],
            ),
            (
                2,
                3,
                &["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"],
            ),
            (
                1,
                5,
                &[
                    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
                    "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
                    "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
                ],
            ),
        ];
        for (index, size, want) in cases {
            let proof = inclusion_proof(&leaves[..size], index).unwrap();
            let hexes: Vec<String> = proof.iter().map(hex::encode).collect();
            assert_eq!(hexes, want, "leaf {index} of {size}");
            let root = merkle_root(&leaves[..size]);
            assert!(verify_inclusion(
                &leaves[index],
                index as u64,
                size as u64,
                &proof,
                &root
            ));
        }
        assert!(inclusion_proof(&leaves[..3], 3).is_none());
        let empty: [[u8; 0]; 0] = [];
        assert!(inclusion_proof(&empty, 0).is_none());
    }

    /// Every leaf of every tree of 1 to 64 leaves verifies with its proof, and nothing else
    /// does: another index, an index at or past the size, a flipped bit of the leaf, of any
    /// proof hash or of the root, a proof with a hash missing or one too many. (Exhaustive rather than sampled:
    /// every size and index up to 64, every bit of every proof hash for trees up to 16 leaves,
    /// one bit per hash chosen by position above.)
    #[test]
    fn every_index_of_every_size_verifies_and_any_flipped_bit_fails() {
        let leaves: Vec<[u8; 32]> = (0..64u8).map(|i| crate::hash::sha256(&[i])).collect();
        for size in 1..=64usize {
            let root = merkle_root(&leaves[..size]);
            for index in 0..size {
                let proof = inclusion_proof(&leaves[..size], index).unwrap();
                let (i, n) = (index as u64, size as u64);
                assert!(
                    verify_inclusion(&leaves[index], i, n, &proof, &root),
                    "{index}/{size}"
                );
                assert!(!verify_inclusion(&leaves[index], n, n, &proof, &root));
                if size > 1 {
                    let other = (index + 1) % size;
                    assert!(!verify_inclusion(
                        &leaves[index],
                        other as u64,
                        n,
                        &proof,
                        &root
                    ));
                    assert!(!verify_inclusion(&leaves[other], i, n, &proof, &root));
                }
                // (A larger size whose path to this index has the same shape verifies too:
                // RFC 6962 proofs authenticate the leaf's position, not the tree's size, which
                // the header does not commit to either. Leaf and index are what is proven.)
                for bit in 0..256 {
                    if size > 16 && bit != (index * 7 + size) % 256 {
                        continue;
                    }
                    let (byte, mask) = (bit / 8, 1u8 << (bit % 8));
                    let mut leaf = leaves[index];
                    leaf[byte] ^= mask;
                    assert!(!verify_inclusion(&leaf, i, n, &proof, &root));
                    let mut r = root;
                    r[byte] ^= mask;
                    assert!(!verify_inclusion(&leaves[index], i, n, &proof, &r));
                    for h in 0..proof.len() {
                        let mut bad = proof.clone();
                        bad[h][byte] ^= mask;
                        assert!(!verify_inclusion(&leaves[index], i, n, &bad, &root));
                    }
                }
                if !proof.is_empty() {
                    let short = &proof[..proof.len() - 1];
                    assert!(!verify_inclusion(&leaves[index], i, n, short, &root));
                }
                let mut long = proof.clone();
                long.push(root);
                assert!(!verify_inclusion(&leaves[index], i, n, &long, &root));
            }
        }
    }
}
