//! [`StateEntry`]: `GET /v1/state/{key}`, one state entry as of a named block, with (on a
//! sparse Merkle chain, on request) the proof of it against that block's state root, and the
//! check a client makes of it ([`StateEntry::check`]).
//!
//! JSON:
//! `{"key": "bal/<address>/GOLD", "value": "<standard base64, padded>" | null, "header": {…},
//! "signature": "…", "commitment": "sparse_merkle", "proof": {…} | null, "finality": {…}}`
//! (`header` and `signature` as in a block, `block.rs`; `finality` with a proof on a chain with
//! validators, a transcript step's record).
//! `value` is `null` when the key is absent at that block. `proof` is `StateProof`'s JSON
//! (`state_root/proof.rs`). What the check leaves to the caller: that `header` is a block of
//! its chain (its signer, or its finality certificate, checked against the genesis).

use base64::Engine;
use serde::{Deserialize, Serialize};

use crate::block::{Header, SignedHeader};
use crate::state_root::{StateCommitment, StateProof};
use crate::wire::transcript::StepFinality;

/// Longest state key `GET /v1/state/{key}` reads, bytes (module keys are `m/<id>/` and at most
/// 1 KiB more, `docs/limits.md`).
pub const MAX_STATE_KEY_BYTES: usize = 1100;

/// One state entry as of a block (module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateEntry {
    /// The key, as stored.
    pub key: String,
    /// The value's bytes in standard padded base64; `None` when the key is absent.
    pub value: Option<String>,
    /// The block whose state this is: its header carries the state root the proof leads to.
    pub header: Header,
    /// The block signer's base64 signed message of the header hash hex.
    pub signature: String,
    /// The chain's state commitment.
    pub commitment: StateCommitment,
    /// The proof of this entry (or its absence) against `header`'s state root; present when
    /// asked for on a sparse Merkle chain.
    #[serde(default)]
    pub proof: Option<StateProof>,
    /// With `proof`, on a chain with validators: what proves the block final (a transcript
    /// step's record); absent otherwise, or while the node holds no certificate close enough.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finality: Option<StepFinality>,
}

impl StateEntry {
    /// The block's header and signature as one [`SignedHeader`].
    pub fn signed_header(&self) -> SignedHeader {
        SignedHeader {
            header: self.header.clone(),
            signature: self.signature.clone(),
        }
    }

    /// The value's bytes (`None`: absent). Errors on base64 that does not decode.
    pub fn value_bytes(&self) -> Result<Option<Vec<u8>>, String> {
        self.value
            .as_ref()
            .map(|v| {
                base64::engine::general_purpose::STANDARD
                    .decode(v)
                    .map_err(|e| format!("the value is not standard base64: {e}"))
            })
            .transpose()
    }

    /// Checks that `key` is this entry's key and that its proof shows its value (or absence)
    /// against its header's state root, and returns the value's bytes. Errors (fixed texts):
    /// another key, no proof, bad base64, or the proof's [`ProofError`](crate::ProofError).
    /// It does not check the header: see the module docs.
    pub fn check(&self, key: &str) -> Result<Option<Vec<u8>>, String> {
        if self.key != key {
            return Err(format!("the answer is for key `{}`, not `{key}`", self.key));
        }
        let proof = self.proof.as_ref().ok_or("the answer carries no proof")?;
        let value = self.value_bytes()?;
        proof
            .verify(&self.header.state_root, key, value.as_deref())
            .map_err(|e| e.to_string())?;
        Ok(value)
    }
}
