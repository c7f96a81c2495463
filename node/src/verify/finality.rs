//! Finality on a chain with validators, outside consensus: each block's **consensus digest**
//! ([`proposal_digest`]: what the validators vote on and a certificate signs) and the check of
//! a **finality certificate** against the genesis validator set ([`FinalityChecker`]), for
//! `gamechain verify` and anyone holding a block and its certificate (`GET
//! /v1/blocks/<height>/finality`).
//!
//! Digest: `SHA-256("gamechain/proposal/v1" ‖ parent's digest ‖ header hash ‖ u32 LE length ‖
//! header signature text ‖ u32 LE transaction count ‖ SHA-256(per transaction: u32 LE length ‖
//! its signature text))`; block 0's parent digest is 32 zero bytes. The header hash covers the
//! transactions' bodies (`tx_root` over txids); the digest adds their signatures and the
//! header's, so every byte a block carries is bound. A certificate is Commonware
//! simplex's encoded `Finalization` (ed25519 scheme): the proposal (epoch, view, parent view,
//! payload = the digest) and the signatures of at least 2f+1 validators, signed under the
//! namespace `gamechain/<chain id>/<genesis hash>`. Bounds: a certificate over
//! [`MAX_CERTIFICATE_BYTES`] is refused before decoding; decoding admits at most as many
//! signers as the set has.

use commonware_codec::{Decode as _, DecodeExt as _};
use commonware_consensus::simplex::scheme::ed25519::Scheme;
use commonware_consensus::simplex::types::Finalization;
use commonware_cryptography::ed25519::PublicKey;
use commonware_cryptography::sha256::Digest;
use commonware_parallel::Sequential;
use commonware_utils::ordered::Set;
use commonware_utils::TryCollect as _;
use sha2::{Digest as _, Sha256};

use gamechain_runtime::chain::{Genesis, SignedHeader, ValidatorSet};

/// Domain separation of [`proposal_digest`].
const DIGEST_DOMAIN: &[u8] = b"gamechain/proposal/v1";

/// Largest certificate accepted for checking (64 ed25519 signatures and a bitmap need about
/// 4.2 KiB).
pub const MAX_CERTIFICATE_BYTES: usize = 16 * 1024;

/// The consensus digest of the block with this signed header whose parent's digest is
/// `parent` and whose transactions carry `signatures`, in block order (module docs).
pub fn proposal_digest<'a>(
    parent: &Digest,
    header: &SignedHeader,
    signatures: impl IntoIterator<Item = &'a str>,
) -> Digest {
    let mut h = Sha256::new();
    h.update(DIGEST_DOMAIN);
    h.update(parent.0);
    h.update(header.header.hash());
    h.update((header.signature.len() as u32).to_le_bytes());
    h.update(header.signature.as_bytes());
    // The header's tx_root covers the transactions' bodies (txids) only: their signatures are
    // bound here, so no copy of a block can carry other signatures under the same digest.
    let mut count: u32 = 0;
    let mut sigs = Sha256::new();
    for s in signatures {
        count += 1;
        sigs.update((s.len() as u32).to_le_bytes());
        sigs.update(s.as_bytes());
    }
    h.update(count.to_le_bytes());
    h.update(sigs.finalize());
    Digest(h.finalize().into())
}

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
