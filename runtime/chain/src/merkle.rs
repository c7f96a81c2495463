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
//! an inner node. Inclusion proofs, should the API ever serve them, are RFC 6962's.

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

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6962 reference vectors from the Certificate Transparency implementation
    /// (transparency-dev/merkle, `testonly/constants.go`: `LeafInputs()` and `RootHashes()`).
    #[test]
    fn rfc6962_reference_roots() {
        let leaves: Vec<Vec<u8>> = [
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
        .collect();
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
}
