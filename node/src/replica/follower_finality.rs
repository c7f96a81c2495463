//! What a follower of a chain with validators asks of a block before it verifies and commits
//! it: proof that the validators finalized it. [`FinalityGate`] takes the blocks in height order
//! with the finality record the followed node serves for each (`GET
//! /v1/blocks/<height>/finality`), chains their consensus digests from the follower's own head
//! ([`proposal_digest`]), and lets a block through only once a finality certificate by a quorum
//! of the genesis validator set covers it: its own, or a descendant's (a descendant's digest
//! chains its ancestors', so one certificate proves every block below it).
//!
//! A block without a certificate of its own (finalized through a descendant's, or one whose
//! record the node lacks) is not kept: only its digest is, at most [`MAX_UNCERTIFIED`] of them
//! (32 bytes each). When a certificate arrives, the gate names the blocks it covers for the
//! follower to fetch again, each checked against its kept digest ([`check_refetched`]). Every
//! block's header must be signed by a validator of the genesis set before anything of it is
//! kept.
//!
//! So a followed node cannot make a follower commit anything the validators did not finalize: a
//! block it made up, a fork it was shown, or a copy with other signatures all fail here. (The
//! genesis itself is taken from the first node followed, or from `genesis.json` placed in the
//! data directory beforehand.) The records that passed are stored beside the blocks
//! (`validator_finality`), so the follower serves them in turn and `gamechain verify --data`
//! checks its directory as it checks a validator's.

use std::sync::Arc;

use gamechain_runtime::chain::Genesis;

use crate::proof::digest::proposal_digest;
use crate::proof::finality::FinalityChecker;
use crate::verify::replay::CheckedBlock;
use crate::verify::source::Finality;
use gamechain_chain::wire::Block;

/// A block's consensus digest (`proof/digest.rs`).
type Digest = [u8; 32];

/// Most blocks a follower waits through without a certificate of their own (their digests are
/// kept; the blocks are fetched again once a descendant's certificate covers them).
pub const MAX_UNCERTIFIED: usize = 4096;

/// Why the gate refused a block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateError {
    /// The followed node serves something the validators did not finalize: a record that
    /// contradicts its block, a certificate that does not verify, a header not signed by a
    /// validator, or another block the second time. Following stops.
    Diverged(String),
    /// A block out of order, or too many without a certificate: try again later.
    Retry(String),
}

/// A block the gate has proven final, and the blocks below it that its certificate covers.
#[derive(Debug)]
pub struct Proven {
    /// Blocks below [`block`](Self::block) whose digests the gate kept, in height order:
    /// `(height, parent's digest, digest)`. Fetch each again and check it with
    /// [`check_refetched`] before it is committed; its record is `(digest, no certificate)`.
    pub refetch: Vec<(u64, Digest, Digest)>,
    /// The certified block.
    pub block: CheckedBlock,
    /// Its record.
    pub finality: Finality,
}

/// Checks the finality of a follower's next blocks (module docs).
pub struct FinalityGate {
    checker: Arc<FinalityChecker>,
    genesis: Arc<Genesis>,
    /// The consensus digest of the last block taken in.
    digest: Digest,
    /// The height of that block.
    height: u64,
    /// Blocks taken in whose certificate is still to come: `(height, parent's digest, digest)`.
    waiting: Vec<(u64, Digest, Digest)>,
}

impl FinalityGate {
    /// A gate after the block at `height` whose consensus digest is `digest` (the follower's
    /// head), checking signers against `genesis` and certificates with `checker`.
    pub fn new(
        checker: Arc<FinalityChecker>,
        genesis: Arc<Genesis>,
        height: u64,
        digest: Digest,
    ) -> FinalityGate {
        FinalityGate {
            checker,
            genesis,
            digest,
            height,
            waiting: Vec::new(),
        }
    }

    /// Takes in `block` (the next height) and the record `finality` served for it (`None`: the
    /// node has none). `Some` once `block` carries a valid certificate: it and the blocks it
    /// covers ([`Proven`]); `None` while it waits for a descendant's. Errors: see
    /// [`GateError`]; a refused block is not taken in.
    pub fn admit(
        &mut self,
        block: CheckedBlock,
        finality: Option<Finality>,
    ) -> Result<Option<Proven>, GateError> {
        let height = block.block.height();
        if height != self.height + 1 {
            return Err(GateError::Retry(format!(
                "block {height} arrived after block {}",
                self.height
            )));
        }
        self.genesis
            .check_block_signer(&block.block.header)
            .map_err(|e| GateError::Diverged(format!("block {height}: {e}")))?;
        let digest = block_digest(&self.digest, &block.block);
        if let Some(f) = &finality {
            if f.digest != digest {
                return Err(GateError::Diverged(format!(
                    "block {height}: the node records consensus digest {}, the block's is {}",
                    hex::encode(f.digest),
                    hex::encode(digest)
                )));
            }
        }
        match finality {
            Some(Finality {
                certificate: Some(certificate),
                ..
            }) => {
                self.checker.check(&digest, &certificate).map_err(|e| {
                    GateError::Diverged(format!("block {height}'s finality certificate: {e}"))
                })?;
                self.digest = digest;
                self.height = height;
                Ok(Some(Proven {
                    refetch: std::mem::take(&mut self.waiting),
                    block,
                    finality: Finality {
                        digest: digest,
                        certificate: Some(certificate),
                    },
                }))
            }
            _ if self.waiting.len() >= MAX_UNCERTIFIED => Err(GateError::Retry(format!(
                "the node serves {MAX_UNCERTIFIED} blocks before block {height} without a \
                 finality certificate"
            ))),
            _ => {
                self.waiting.push((height, self.digest, digest));
                self.digest = digest;
                self.height = height;
                Ok(None)
            }
        }
    }
}

/// The consensus digest of `block` after a block of digest `parent`.
fn block_digest(parent: &Digest, block: &Block) -> Digest {
    proposal_digest(
        parent,
        &block.header,
        block.txs.iter().map(|t| t.tx.signature()),
    )
}

/// Checks a block fetched again for [`Proven::refetch`]: it must be the block whose digest the
/// gate kept (`digest`, after `parent`). Errors: [`GateError::Diverged`] otherwise.
pub fn check_refetched(parent: &Digest, digest: &Digest, block: &Block) -> Result<(), GateError> {
    let got = block_digest(parent, block);
    if got != *digest {
        return Err(GateError::Diverged(format!(
            "block {}: the node served another block the second time (digest {}, then {})",
            block.height(),
            hex::encode(digest),
            hex::encode(got)
        )));
    }
    Ok(())
}
