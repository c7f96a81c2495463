//! A block's **consensus digest** on a chain with validators ([`proposal_digest`]): what the
//! validators vote on and a finality certificate signs. Pure hashing of what the block
//! carries, so `verify`, followers and joins compute it without the consensus engine; the
//! certificate check is `finality.rs`. [`digest_at`] computes it for a stored block from the
//! database's recorded digests.
//!
//! Digest: `SHA-256("gamechain/proposal/v1" ‖ parent's digest ‖ header hash ‖ u32 LE length ‖
//! header signature text ‖ u32 LE transaction count ‖ SHA-256(per transaction: u32 LE length ‖
//! its signature text))`; block 0's parent digest is 32 zero bytes. The header hash covers the
//! transactions' bodies (`tx_root` over txids); the digest adds their signatures and the
//! header's, so every byte a block carries is bound.

use commonware_cryptography::sha256::Digest;
use sha2::{Digest as _, Sha256};

use gamechain_ledger::storage::Storage;
use gamechain_ledger::NodeError;
use gamechain_runtime::chain::SignedHeader;

/// Domain separation of [`proposal_digest`].
const DIGEST_DOMAIN: &[u8] = b"gamechain/proposal/v1";

/// The consensus digest of the block with this signed header whose parent's digest is
/// `parent` and whose transactions carry `signatures`, in block order (module docs).
pub fn proposal_digest<'a>(
    parent: &[u8; 32],
    header: &SignedHeader,
    signatures: impl IntoIterator<Item = &'a str>,
) -> [u8; 32] {
    // The header's tx_root covers the transactions' bodies (txids) only: their signatures are
    // bound here, so no copy of a block can carry other signatures under the same digest.
    let (sigs, count) = signatures_hash(signatures);
    digest_from_parts(
        parent,
        &header.header.hash(),
        &header.signature,
        count,
        &sigs,
    )
}

/// SHA-256 of a block's transaction signatures in block order, each as u32 LE length ‖ its
/// text, and their count: the part of [`proposal_digest`] that covers the transactions, so a
/// proof of a block's digest (a transcript's `finality`) carries 36 bytes instead of every
/// signature.
pub fn signatures_hash<'a>(signatures: impl IntoIterator<Item = &'a str>) -> ([u8; 32], u32) {
    let mut count: u32 = 0;
    let mut sigs = Sha256::new();
    for s in signatures {
        count += 1;
        sigs.update((s.len() as u32).to_le_bytes());
        sigs.update(s.as_bytes());
    }
    (sigs.finalize().into(), count)
}

/// [`proposal_digest`] from its parts: the parent's digest, the header's hash and signature
/// text, the transaction count and [`signatures_hash`]. Equal to [`proposal_digest`] of the
/// block those parts come from (a unit test keeps it so).
pub fn digest_from_parts(
    parent: &[u8; 32],
    header_hash: &[u8; 32],
    header_signature: &str,
    tx_count: u32,
    signatures_hash: &[u8; 32],
) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(DIGEST_DOMAIN);
    h.update(parent);
    h.update(header_hash);
    h.update((header_signature.len() as u32).to_le_bytes());
    h.update(header_signature.as_bytes());
    h.update(tx_count.to_le_bytes());
    h.update(signatures_hash);
    h.finalize().into()
}

/// The consensus digest of stored block `height` (at or below the head), from the nearest
/// recorded digest below it (or block 0, whose parent digest is 32 zero bytes). Errors: the
/// database failed or lacks a block.
pub fn digest_at(storage: &Storage, height: u64) -> Result<Digest, NodeError> {
    let (mut at, mut digest) = match storage.validator_digest_at_or_below(height)? {
        Some((h, d)) => (h, d),
        None => (0, stored_digest(storage, &[0; 32], 0)?),
    };
    while at < height {
        at += 1;
        digest = stored_digest(storage, &digest, at)?;
    }
    Ok(Digest(digest))
}

/// The consensus digest of stored block `height`, whose parent's digest is `parent`.
fn stored_digest(storage: &Storage, parent: &[u8; 32], height: u64) -> Result<[u8; 32], NodeError> {
    let block = storage.block(height)?.ok_or_else(|| {
        NodeError::Refused(format!(
            "the database has no block {height} at or below its head"
        ))
    })?;
    Ok(proposal_digest(
        parent,
        &block.header,
        block.txs.iter().map(|t| t.tx.signature()),
    ))
}
