//! [`ViewProof`]: `GET /v1/games/{module}/proof?<query>`, a module's view answered together
//! with every state entry it read, each proven against one block's state root, and the check a
//! light client makes of that data ([`ViewProof::check`]). What the check leaves to the caller:
//! that the header is a block of its chain (its signer, or its finality certificate, checked
//! against the genesis), and that the view, re-executed over the proven reads with the code the
//! module's record names, gives the answer (`node/src/verify/view.rs`; the JS SDK's
//! `verifyView`).
//!
//! JSON (`node/API.md`, "Views with proofs"):
//! `{"module": "tictactoe", "query": {"id": "…"}, "header": {…}, "signature": "…",
//! "commitment": "sparse_merkle", "value": <the view's JSON> | "error": "<its display text>",
//! "code_hash": "<64 hex>", "reads": [{"key", "value": "<base64>" | null, "proof": {…}}, …],
//! "finality": {…}}` (`finality` on a chain with validators: a transcript step's record).
//! `reads` holds each key the view read once, sorted by key (byte order), and the module's
//! record `module/<module>`, which names the code: at most [`MAX_VIEW_PROOF_READS`] entries and
//! [`MAX_VIEW_PROOF_BYTES`] of keys and values.
//! A view that scans a range cannot be proven (the tree's paths are key hashes, so no proof
//! shows a range complete): the node refuses it with `409 no_proofs`.

use std::collections::BTreeMap;

use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::block::{Header, SignedHeader};
use crate::state_root::{StateCommitment, StateProof};
use crate::wire::transcript::StepFinality;

/// Most entries a view proof carries, the module's record included: a view that reads more
/// keys is refused with `409 no_proofs`.
pub const MAX_VIEW_PROOF_READS: usize = 256;

/// Most bytes of keys and values a view proof carries (the sum over its reads): over it,
/// `409 no_proofs`.
pub const MAX_VIEW_PROOF_BYTES: usize = 4 << 20;

/// One state entry a view read, with its proof against the answer's state root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProvenRead {
    /// The raw key (`m/<module>/…`, `bal/<account>/<TOKEN>`, `module/<id>`).
    pub key: String,
    /// The value's bytes in standard padded base64; `None` when the key is absent.
    pub value: Option<String>,
    /// The proof of this entry (or its absence) against the header's state root.
    pub proof: StateProof,
}

/// A view's answer with the state it read (module docs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ViewProof {
    /// The module whose view this is.
    pub module: String,
    /// The view's query, as the node parsed it.
    pub query: BTreeMap<String, String>,
    /// The block whose state the view read: its header carries the state root.
    pub header: Header,
    /// The block signer's base64 signed message of the header hash hex.
    pub signature: String,
    /// The chain's state commitment (`sparse_merkle`: chains without proofs answer `409`).
    pub commitment: StateCommitment,
    /// The view's JSON value (`null` included); absent when the view answered an error.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub value: Option<Value>,
    /// The view's error as its display text (`not found: game 7`); absent when it answered a
    /// value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The module's code hash (lowercase hex SHA-256 of its wasm), as its record names it.
    pub code_hash: String,
    /// Every key the view read and the module's record, sorted by key, each once.
    pub reads: Vec<ProvenRead>,
    /// On a chain with validators, what proves the block final (as a transcript step's);
    /// absent on a single sequencer's chain, or while no certificate close enough is held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finality: Option<StepFinality>,
}

/// A key as an error names it: at most 200 characters.
fn short(key: &str) -> String {
    key.chars().take(200).collect()
}

/// A field that is present: `Some`, even when it is JSON `null` (absent is the `default`).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// What [`ViewProof::check`] proved: the block, the code and the state the view may read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProvenReads {
    /// The block's height.
    pub height: u64,
    /// The module's code hash at that block.
    pub code_hash: String,
    /// Each proven key and its value (`None`: proven absent). A read of any other key is one
    /// the answer does not prove.
    pub reads: BTreeMap<String, Option<Vec<u8>>>,
}

impl ViewProof {
    /// The block's header and signature as one [`SignedHeader`].
    pub fn signed_header(&self) -> SignedHeader {
        SignedHeader {
            header: self.header.clone(),
            signature: self.signature.clone(),
        }
    }

    /// The view's answer: its value, or its error's display text.
    pub fn answer(&self) -> Result<&Value, &str> {
        match (&self.value, &self.error) {
            (Some(v), _) => Ok(v),
            (None, Some(e)) => Err(e),
            (None, None) => Err(""),
        }
    }

    /// Checks the answer's data for `module` and `query`: exactly one of a value and an error,
    /// at most [`MAX_VIEW_PROOF_READS`] reads sorted by key without repeats, each read's proof
    /// against the header's state root, and the module's record among them naming
    /// `code_hash`. Returns the proven reads. Errors (fixed texts) name the first thing that
    /// does not check. It does not check the header's signer or finality, nor re-execute the
    /// view (module docs).
    pub fn check(
        &self,
        module: &str,
        query: &BTreeMap<String, String>,
    ) -> Result<ProvenReads, String> {
        if self.module != module {
            return Err(format!(
                "the answer is module `{}`'s view, not `{module}`'s",
                self.module
            ));
        }
        if &self.query != query {
            return Err("the answer is for another query".to_string());
        }
        if self.value.is_some() == self.error.is_some() {
            return Err("the answer must carry exactly one of a value and an error".to_string());
        }
        if self.commitment != StateCommitment::SparseMerkle {
            return Err(format!(
                "the chain's state commitment ({}) has no proofs",
                self.commitment.name()
            ));
        }
        if self.reads.len() > MAX_VIEW_PROOF_READS {
            return Err(format!(
                "the answer carries {} reads: at most {MAX_VIEW_PROOF_READS}",
                self.reads.len()
            ));
        }
        let mut reads = BTreeMap::new();
        let mut previous: Option<&str> = None;
        let mut bytes = 0usize;
        for read in &self.reads {
            if previous.is_some_and(|p| p >= read.key.as_str()) {
                return Err(format!(
                    "the reads are not sorted by key without repeats (at `{}`)",
                    short(&read.key)
                ));
            }
            previous = Some(&read.key);
            let value = read
                .value
                .as_ref()
                .map(|v| {
                    base64::engine::general_purpose::STANDARD
                        .decode(v)
                        .map_err(|_| {
                            format!("`{}`: the value is not standard base64", short(&read.key))
                        })
                })
                .transpose()?;
            bytes = bytes
                .saturating_add(read.key.len())
                .saturating_add(value.as_ref().map_or(0, Vec::len));
            if bytes > MAX_VIEW_PROOF_BYTES {
                return Err(format!(
                    "the reads hold over {MAX_VIEW_PROOF_BYTES} bytes of keys and values"
                ));
            }
            read.proof
                .verify(&self.header.state_root, &read.key, value.as_deref())
                .map_err(|e| format!("`{}`: {e}", short(&read.key)))?;
            reads.insert(read.key.clone(), value);
        }
        let record_key = format!("module/{module}");
        let record = match reads.get(&record_key) {
            Some(Some(bytes)) => bytes,
            Some(None) => {
                return Err(format!(
                    "the module's record ({record_key}) is proven absent"
                ))
            }
            None => {
                return Err(format!(
                    "the answer does not prove the module's record ({record_key})"
                ))
            }
        };
        let named = serde_json::from_slice::<Value>(record)
            .ok()
            .and_then(|r| {
                r.get("code_hash")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .ok_or_else(|| format!("{record_key} does not hold a module record"))?;
        if named != self.code_hash {
            return Err(format!(
                "the module's record names code {named}, the answer {}",
                self.code_hash
            ));
        }
        Ok(ProvenReads {
            height: self.header.height,
            code_hash: named,
            reads,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state_root::SparseMerkleTree;
    use gamechain_sdk::Checkpoint;

    const RECORD: &str =
        r#"{"abi_version":1,"code_hash":"ab","deployed_height":0,"owner":"system"}"#;

    /// A view's answer over a two-key state: the game `m/t/game/1` and the record `module/t`.
    fn answer() -> (ViewProof, BTreeMap<String, String>) {
        let entries = [("m/t/game/1", "{\"board\":\"x\"}"), ("module/t", RECORD)];
        let tree = SparseMerkleTree::from_entries(entries);
        let header = Header {
            height: 7,
            prev_hash: [0; 32],
            time_ms: 0,
            sequencer: String::new(),
            checkpoint: Checkpoint::default(),
            tx_root: [0; 32],
            receipt_root: [0; 32],
            state_root: tree.root(),
            beacon: None,
        };
        let b64 = |v: &str| base64::engine::general_purpose::STANDARD.encode(v);
        let reads = entries
            .iter()
            .map(|(k, v)| ProvenRead {
                key: k.to_string(),
                value: Some(b64(v)),
                proof: tree.prove(k),
            })
            .collect();
        let query: BTreeMap<String, String> = [("id".to_string(), "1".to_string())].into();
        let proof = ViewProof {
            module: "t".into(),
            query: query.clone(),
            header,
            signature: String::new(),
            commitment: StateCommitment::SparseMerkle,
            value: Some(serde_json::json!({"board": "x"})),
            error: None,
            code_hash: "ab".into(),
            reads,
            finality: None,
        };
        (proof, query)
    }

    fn refused(edit: impl FnOnce(&mut ViewProof)) -> String {
        let (mut proof, query) = answer();
        edit(&mut proof);
        proof.check("t", &query).unwrap_err()
    }

    #[test]
    fn an_honest_answer_checks_and_each_defect_is_named() {
        let (proof, query) = answer();
        let reads = proof.check("t", &query).unwrap();
        assert_eq!((reads.height, reads.code_hash.as_str()), (7, "ab"));
        assert_eq!(reads.reads.len(), 2);
        let json = serde_json::to_string(&proof).unwrap();
        assert_eq!(serde_json::from_str::<ViewProof>(&json).unwrap(), proof);

        assert!(refused(|p| p.module = "u".into()).contains("module `u`'s view"));
        assert_eq!(
            refused(|p| p.error = Some("x".into())),
            "the answer must carry exactly one of a value and an error"
        );
        assert_eq!(
            refused(|p| p.value = None),
            "the answer must carry exactly one of a value and an error"
        );
        assert!(refused(|p| p.reads.reverse()).starts_with("the reads are not sorted"));
        assert!(refused(|p| {
            let again = p.reads[0].clone();
            p.reads.insert(0, again)
        })
        .starts_with("the reads are not sorted"));
        assert!(refused(|p| p.reads.truncate(1)).contains("does not prove the module's record"));
        assert!(
            refused(|p| p.code_hash = "cd".into()).starts_with("the module's record names code ab")
        );
        assert!(refused(|p| p.reads[0].value = None).starts_with("`m/t/game/1`: "));
        assert!(refused(|p| p.reads[0].value = Some("!".into())).contains("not standard base64"));
        assert!(refused(|p| p.header.state_root[31] ^= 1).starts_with('`'));
        assert!(refused(|p| p.commitment = StateCommitment::LtHash16).contains("has no proofs"));
        let (proof, _) = answer();
        assert_eq!(
            proof.check("t", &BTreeMap::new()).unwrap_err(),
            "the answer is for another query"
        );
        // A view may answer `null`: present, so a value, not an error.
        let (mut null, query) = answer();
        null.value = Some(Value::Null);
        let back: ViewProof = serde_json::from_str(&serde_json::to_string(&null).unwrap()).unwrap();
        assert_eq!(back.value, Some(Value::Null));
        back.check("t", &query).unwrap();
        // Keys count toward the bytes a proof may carry.
        let e = refused(|p| {
            let long = "k".repeat(MAX_VIEW_PROOF_BYTES + 1);
            p.reads.insert(
                0,
                ProvenRead {
                    key: long,
                    value: None,
                    proof: p.reads[0].proof.clone(),
                },
            )
        });
        assert!(
            e.contains("bytes of keys and values"),
            "{}",
            &e[..e.len().min(200)]
        );
    }
}
