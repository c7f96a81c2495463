//! Finality certificates of a chain with validators, checked outside consensus
//! ([`FinalityChecker`]): for `gamechain verify`, followers, joins and anyone holding a block
//! and its certificate (`GET /v1/blocks/<height>/finality`). Also the chain's consensus
//! [`namespace`] and the set's [`participants`] in the engine's order.
//!
//! A certificate is Commonware simplex's encoded `Finalization` (ed25519 scheme): the proposal
//! (epoch, view, parent view, payload = the block's consensus digest,
//! `proof/digest.rs`'s `proposal_digest`) and the signatures of at least 2f+1 validators,
//! signed under the namespace `gamechain/<chain id>/<genesis hash>`. Bounds: a certificate
//! over [`MAX_CERTIFICATE_BYTES`] is refused before decoding; decoding admits at most as many
//! signers as the set has.

use commonware_codec::{Decode as _, DecodeExt as _};
use commonware_consensus::simplex::scheme::ed25519::Scheme;
use commonware_consensus::simplex::types::Finalization;
use commonware_cryptography::ed25519::PublicKey;
use commonware_cryptography::sha256::Digest;
use commonware_parallel::Sequential;
use commonware_utils::ordered::Set;
use commonware_utils::TryCollect as _;

use gamechain_runtime::chain::{Genesis, ValidatorSet};

/// Largest certificate accepted for checking (64 ed25519 signatures and a bitmap need about
/// 4.2 KiB).
pub const MAX_CERTIFICATE_BYTES: usize = 16 * 1024;

/// The consensus namespace of a chain: votes and certificates are signed under it, so a
/// signature made for one chain is worthless on another.
pub fn namespace(chain_id: &str, genesis_hash: &str) -> Vec<u8> {
    format!("gamechain/{chain_id}/{genesis_hash}").into_bytes()
}

/// The set's consensus keys as an ordered set (the engine's participant order). Errors: a key
/// that is not an ed25519 public key, or one listed twice.
pub fn participants(set: &ValidatorSet) -> Result<Set<PublicKey>, String> {
    let mut keys = Vec::with_capacity(set.set.len());
    for (i, v) in set.set.iter().enumerate() {
        let bytes = hex::decode(&v.consensus_key).unwrap_or_default();
        let key = PublicKey::decode(bytes::BytesMut::from(&bytes[..])).map_err(|_| {
            format!("validators.set[{i}].consensus_key is not an ed25519 public key")
        })?;
        keys.push(key);
    }
    keys.into_iter()
        .try_collect()
        .map_err(|_| "validators.set lists a consensus key twice".to_string())
}

/// [`participants`] as raw 32-byte ed25519 keys, in the engine's participant (signer index)
/// order: what readers outside consensus (`GET /v1/evidence`) need of it. Errors: those of
/// [`participants`].
pub fn participant_keys(set: &ValidatorSet) -> Result<Vec<[u8; 32]>, String> {
    Ok(participants(set)?
        .iter()
        .map(|k| k.as_ref().try_into().expect("ed25519 keys are 32 bytes"))
        .collect())
}

/// Checks finality certificates of one chain.
pub struct FinalityChecker {
    verifier: Scheme,
    signers: usize,
}

impl FinalityChecker {
    /// The checker of the chain of `genesis` (whose hash, hex, is `genesis_hash`). Errors: the
    /// genesis names no validators, or a bad key.
    pub fn new(genesis: &Genesis, genesis_hash: &str) -> Result<FinalityChecker, String> {
        let set = genesis
            .validators
            .as_ref()
            .ok_or("the chain's genesis names no validators")?;
        let participants = participants(set)?;
        let signers = participants.len();
        Ok(FinalityChecker {
            verifier: Scheme::verifier(&namespace(&genesis.chain_id, genesis_hash), participants),
            signers,
        })
    }

    /// The checker of the set `participants` signing under `namespace` (unit tests make sets
    /// of their own keys).
    #[cfg(test)]
    pub(crate) fn from_set(namespace: &[u8], participants: Set<PublicKey>) -> FinalityChecker {
        let signers = participants.len();
        FinalityChecker {
            verifier: Scheme::verifier(namespace, participants),
            signers,
        }
    }

    /// `Ok(view)` when `certificate` is a valid finalization by a quorum of the set of the
    /// block whose consensus digest is `digest`; the error says what is wrong.
    pub fn check(&self, digest: &[u8; 32], certificate: &[u8]) -> Result<u64, String> {
        self.finalization(digest, certificate)
            .map(|f| f.proposal.round.view().get())
    }

    /// [`FinalityChecker::check`], returning the certificate decoded: a finalization of
    /// `digest` by a quorum of the set (a validator's consensus starts from one,
    /// `validator/run.rs`).
    pub fn finalization(
        &self,
        digest: &[u8; 32],
        certificate: &[u8],
    ) -> Result<Finalization<Scheme, Digest>, String> {
        if certificate.len() > MAX_CERTIFICATE_BYTES {
            return Err(format!(
                "a certificate of {} bytes (the limit is {MAX_CERTIFICATE_BYTES})",
                certificate.len()
            ));
        }
        let f = Finalization::<Scheme, Digest>::decode_cfg(
            bytes::BytesMut::from(certificate),
            &self.signers,
        )
        .map_err(|e| format!("not a finality certificate: {e}"))?;
        if f.proposal.payload.0 != *digest {
            return Err(format!(
                "the certificate finalizes digest {}, the block's is {}",
                hex::encode(f.proposal.payload.0),
                hex::encode(digest)
            ));
        }
        let mut rng = rand::rng();
        if !f.verify(&mut rng, &self.verifier, &Sequential) {
            return Err(
                "the certificate's signatures are not a quorum of the validator set".into(),
            );
        }
        Ok(f)
    }
}
