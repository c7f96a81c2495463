//! [`StateProof`]: the proof that a key holds a value, or is absent, in a state whose sparse
//! Merkle root is known (`sparse_merkle.rs` defines the tree), and its check,
//! [`StateProof::verify`]. The JavaScript SDK checks the same JSON (`node/web/sdk/src/verify/
//! state_proof.js`).
//!
//! JSON (`GET /v1/state/{key}?proof`):
//! `{"siblings": ["<64 hex>", …], "leaf": null | {"key_hash": "<64 hex>", "value_hash": "<64 hex>"}}`.
//! `siblings` are the hashes beside the key's path from the root down (one per depth, at most
//! 256); `leaf` is the leaf met where the path ends (`null`: an empty subtree).
//!
//! The check: with `k = SHA-256(key)`, the node at the path's end is
//! * for a present key with value `value`: the leaf `(k, SHA-256(value))`;
//! * for an absent key: an empty subtree, or another key's leaf whose path shares the first
//!   `siblings.len()` bits with `k` (that subtree holds one entry, not `key`).
//!
//! Folding the siblings up from the deepest (`branch_hash(sibling, h)` when `k`'s bit at that
//! depth is 1, `branch_hash(h, sibling)` when 0) must give the root. The tree's shape is
//! canonical and its hashes domain-separated, so a root has one set of entries and a proof
//! that checks shows that set's answer for `key`.

use serde::{Deserialize, Serialize};

use super::tree_hash::{bit, branch_hash, key_hash, leaf_hash, value_hash, Hash, EMPTY};
use crate::hash::hex32;

/// Most siblings a proof can have: one per bit of a path.
pub const MAX_PROOF_DEPTH: usize = 256;

/// A leaf named by a proof: its path and the hash of its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProofLeaf {
    /// `SHA-256(key)`.
    #[serde(with = "hex32")]
    pub key_hash: Hash,
    /// `SHA-256(value)`.
    #[serde(with = "hex32")]
    pub value_hash: Hash,
}

/// A proof of one key's entry against a sparse Merkle root (module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateProof {
    /// Sibling hashes from the root down, lowercase hex in JSON.
    #[serde(with = "hex_list")]
    pub siblings: Vec<Hash>,
    /// The leaf at the path's end (`None`: an empty subtree).
    #[serde(with = "leaf_pair", default)]
    pub leaf: Option<(Hash, Hash)>,
}

/// Why a [`StateProof`] does not show the claimed answer (fixed texts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProofError {
    /// More than [`MAX_PROOF_DEPTH`] siblings.
    TooDeep,
    /// The proof ends at no leaf or at another key's, but a value was claimed.
    ShowsAbsent,
    /// The proof ends at `key`'s leaf, but absence was claimed.
    ShowsPresent,
    /// The proof ends at `key`'s leaf with another value's hash.
    OtherValue,
    /// The leaf at the path's end does not share the path's prefix.
    LeafOffPath,
    /// The siblings do not fold to the root.
    WrongRoot,
}

impl std::fmt::Display for ProofError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ProofError::TooDeep => "the proof has more than 256 siblings",
            ProofError::ShowsAbsent => "the proof shows the key absent",
            ProofError::ShowsPresent => "the proof shows the key present",
            ProofError::OtherValue => "the proof shows the key with another value",
            ProofError::LeafOffPath => "the proof's leaf is not on the key's path",
            ProofError::WrongRoot => "the proof does not lead to the state root",
        })
    }
}

impl std::error::Error for ProofError {}

impl StateProof {
    /// Checks that `key` holds `value` (`None`: is absent) in the state whose root is `root`.
    pub fn verify(&self, root: &Hash, key: &str, value: Option<&[u8]>) -> Result<(), ProofError> {
        let depth = self.siblings.len();
        if depth > MAX_PROOF_DEPTH {
            return Err(ProofError::TooDeep);
        }
        let k = key_hash(key);
        let at_end = match (value, &self.leaf) {
            (Some(value), Some((lk, lv))) if *lk == k => {
                if *lv != value_hash(value) {
                    return Err(ProofError::OtherValue);
                }
                leaf_hash(lk, lv)
            }
            (Some(_), _) => return Err(ProofError::ShowsAbsent),
            (None, Some((lk, _))) if *lk == k => return Err(ProofError::ShowsPresent),
            (None, Some((lk, lv))) => {
                if (0..depth).any(|d| bit(lk, d) != bit(&k, d)) {
                    return Err(ProofError::LeafOffPath);
                }
                leaf_hash(lk, lv)
            }
            (None, None) => EMPTY,
        };
        let folded = self
            .siblings
            .iter()
            .enumerate()
            .rev()
            .fold(at_end, |h, (d, sibling)| {
                if bit(&k, d) {
                    branch_hash(sibling, &h)
                } else {
                    branch_hash(&h, sibling)
                }
            });
        if folded == *root {
            Ok(())
        } else {
            Err(ProofError::WrongRoot)
        }
    }

    /// The proof's size in its binary form: 32 bytes per sibling and 64 for a leaf.
    pub fn size_bytes(&self) -> usize {
        self.siblings.len() * 32 + if self.leaf.is_some() { 64 } else { 0 }
    }
}

mod hex_list {
    use super::{Hash, MAX_PROOF_DEPTH};
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(list: &[Hash], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(list.iter().map(hex::encode))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Hash>, D::Error> {
        let texts = Vec::<String>::deserialize(d)?;
        if texts.len() > MAX_PROOF_DEPTH {
            return Err(D::Error::custom("more than 256 siblings"));
        }
        texts
            .iter()
            .map(|t| {
                crate::hash::parse_hex32(t)
                    .ok_or_else(|| D::Error::custom("a sibling is not 64 lowercase hex"))
            })
            .collect()
    }
}

mod leaf_pair {
    use super::{Hash, ProofLeaf};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(leaf: &Option<(Hash, Hash)>, s: S) -> Result<S::Ok, S::Error> {
        leaf.map(|(key_hash, value_hash)| ProofLeaf {
            key_hash,
            value_hash,
        })
        .serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<(Hash, Hash)>, D::Error> {
        Ok(Option::<ProofLeaf>::deserialize(d)?.map(|l| (l.key_hash, l.value_hash)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state_root::SparseMerkleTree;

    fn tree(n: u32) -> SparseMerkleTree {
        SparseMerkleTree::from_entries(
            (0..n).map(|i| (format!("bal/acct{i}/GOLD"), i.to_string().into_bytes())),
        )
    }

    #[test]
    fn present_and_absent_keys_prove_and_lies_do_not() {
        let t = tree(1000);
        let root = t.root();
        for i in [0u32, 7, 999] {
            let key = format!("bal/acct{i}/GOLD");
            let p = t.prove(&key);
            assert_eq!(
                p.verify(&root, &key, Some(i.to_string().as_bytes())),
                Ok(())
            );
            assert_eq!(
                p.verify(&root, &key, Some(b"1000000")),
                Err(ProofError::OtherValue)
            );
            assert_eq!(p.verify(&root, &key, None), Err(ProofError::ShowsPresent));
            // Another key cannot borrow it.
            assert!(p
                .verify(&root, "bal/acct1/GOLD", Some(i.to_string().as_bytes()))
                .is_err());
        }
        for key in ["bal/nobody/GOLD", "", "m/x"] {
            let p = t.prove(key);
            assert_eq!(p.verify(&root, key, None), Ok(()), "{key}");
            assert_eq!(
                p.verify(&root, key, Some(b"1")),
                Err(ProofError::ShowsAbsent)
            );
        }
        // A changed sibling, a dropped sibling or another root is refused.
        let key = "bal/acct5/GOLD";
        let mut p = t.prove(key);
        p.siblings[3][0] ^= 1;
        assert_eq!(p.verify(&root, key, Some(b"5")), Err(ProofError::WrongRoot));
        let mut p = t.prove(key);
        p.siblings.pop();
        assert!(p.verify(&root, key, Some(b"5")).is_err());
        assert_eq!(
            t.prove(key).verify(&tree(999).root(), key, Some(b"5")),
            Err(ProofError::WrongRoot)
        );
    }

    #[test]
    fn an_absence_cannot_be_shown_with_a_leaf_off_the_path() {
        let t = tree(64);
        let root = t.root();
        // A present key's proof, offered as another key's absence: the leaf is off its path
        // unless the two paths share the prefix (then the fold fails instead).
        let p = t.prove("bal/acct1/GOLD");
        assert!(p.verify(&root, "bal/acct2/GOLD", None).is_err());
        let empty = SparseMerkleTree::default();
        assert_eq!(empty.prove("k").verify(&EMPTY, "k", None), Ok(()));
        assert_eq!(
            empty.prove("k").verify(&EMPTY, "k", Some(b"v")),
            Err(ProofError::ShowsAbsent)
        );
    }

    #[test]
    fn json_round_trips_and_bounds_the_siblings() {
        let t = tree(100);
        let p = t.prove("bal/acct42/GOLD");
        let json = serde_json::to_string(&p).unwrap();
        assert!(json.starts_with("{\"siblings\":[\""), "{json}");
        assert_eq!(serde_json::from_str::<StateProof>(&json).unwrap(), p);
        let absent = t.prove("nobody");
        let json = serde_json::to_string(&absent).unwrap();
        assert_eq!(serde_json::from_str::<StateProof>(&json).unwrap(), absent);
        let deep = format!(
            "{{\"siblings\":[{}]}}",
            vec![format!("\"{}\"", "00".repeat(32)); 257].join(",")
        );
        assert!(serde_json::from_str::<StateProof>(&deep).is_err());
        assert!(serde_json::from_str::<StateProof>("{\"siblings\":[\"AB\"]}").is_err());
    }

    /// The JavaScript SDK's vectors (`node/web/sdk/test/fixtures/state_proof_vectors.json`,
    /// `test/state_proof.test.js`): a 200-entry tree's root and proofs of present keys, of an
    /// absent key ending at another key's leaf and of one ending at an empty subtree, and the
    /// empty and one-entry states. `GAMECHAIN_WRITE_FIXTURES=1` rewrites the file; otherwise it
    /// must hold exactly these vectors.
    #[test]
    fn javascript_vectors() {
        use base64::Engine;
        let b64 = |v: &[u8]| base64::engine::general_purpose::STANDARD.encode(v);
        let entries: Vec<(String, Vec<u8>)> = (0..200u32)
            .map(|i| {
                (
                    format!("bal/acct{i}/GOLD"),
                    format!("{}", i * 7).into_bytes(),
                )
            })
            .collect();
        let t = SparseMerkleTree::from_entries(entries.iter().map(|(k, v)| (k, v)));
        let mut cases = Vec::new();
        for (k, v) in entries.iter().step_by(37) {
            cases.push(serde_json::json!({"key": k, "value": b64(v), "proof": t.prove(k)}));
        }
        let (mut with_leaf, mut empty) = (None, None);
        for i in 0.. {
            let k = format!("absent/{i}");
            let p = t.prove(&k);
            match p.leaf {
                Some(_) if with_leaf.is_none() => with_leaf = Some((k, p)),
                None if empty.is_none() => empty = Some((k, p)),
                _ => {}
            }
            if with_leaf.is_some() && empty.is_some() {
                break;
            }
        }
        for (k, p) in [with_leaf.unwrap(), empty.unwrap()] {
            cases.push(serde_json::json!({"key": k, "value": null, "proof": p}));
        }
        let one = SparseMerkleTree::from_entries([("nonce/x", b"1")]);
        let out = serde_json::json!({
            "root": hex::encode(t.root()),
            "cases": cases,
            "empty_root": hex::encode(SparseMerkleTree::default().root()),
            "one": {"root": hex::encode(one.root()), "key": "nonce/x", "value": b64(b"1"),
                    "proof": one.prove("nonce/x")},
        });
        let text = serde_json::to_string_pretty(&out).unwrap() + "\n";
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../node/web/sdk/test/fixtures/state_proof_vectors.json"
        );
        if std::env::var_os("GAMECHAIN_WRITE_FIXTURES").is_some() {
            std::fs::write(path, &text).unwrap();
        }
        assert_eq!(
            std::fs::read_to_string(path).unwrap_or_default(),
            text,
            "{path} is stale: rerun with GAMECHAIN_WRITE_FIXTURES=1"
        );
    }
}
