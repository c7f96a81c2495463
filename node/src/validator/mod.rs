//! Validator mode: blocks made by a set of validators and finalized by BFT consensus
//! (Commonware's simplex, `commonware-consensus`), instead of one sequencer.
//!
//! A chain whose genesis names a validator set (`gamechain_chain::validators`) is run by
//! those validators only. In each view the engine's round-robin leader builds a block from its
//! mempool with the same `BlockBuilder` a sequencer uses and signs its header with its
//! block-signing key; every validator executes the proposal on its parent's state and votes
//! for it only when the header (transactions, receipts, state root), the proposer and the
//! signature are exactly right; a block with votes of 2f+1 validators in two rounds is final,
//! and each validator commits finalized blocks, in height order, through the node's one commit
//! path (SQLite, head, WebSocket), storing the finality certificate beside the block. So the
//! HTTP API, the WebSocket, followers, `verify` and `export` see the same chain on every
//! validator.
//!
//! | file | owns |
//! |---|---|
//! | [`block`] | [`block::ProposedBlock`]: what consensus orders, its digest and encoding |
//! | [`ledger`] | executing proposals on speculative state, committing finalized blocks |
//! | [`app`] | the engine's `Application` (propose / verify) and the finalized-block committer |
//! | [`beacon`] | the threshold randomness beacon: shares, their release and gossip, recovery |
//! | [`engine`] | wiring simplex, marshal and the committer over a network |
//! | [`observer`] | the engine's second reporter: evidence of conflicting votes, consensus metrics |
//! | [`equivocate`] | the vote channel's sender, and the test fault that equivocates |
//! | [`gossip`] | transactions sent to one validator reach the others |
//! | [`flood`] | the deploys of the test fault `deploy_flood` (a proposer that floods blocks with code) |
//! | [`keys`] | the consensus key file and the participant set |
//! | [`p2p`] | the transport's preset; dialling peers by IP or DNS name |
//! | [`rejoin`] | rejoining consensus without a journal: following to a floor the key's old votes cannot reach |
//! | [`run`] | `gamechain node --validator`: the engine over TCP on its own runtime |
//!
//! `docs/validators.md` explains running a network, the genesis fields and the faults.

pub mod app;
pub mod beacon;
pub mod block;
pub mod engine;
pub mod equivocate;
pub mod flood;
pub mod gossip;
pub mod keys;
pub mod ledger;
pub mod observer;
pub mod p2p;
pub mod rejoin;
pub mod run;

#[cfg(test)]
mod sim_tests;

use commonware_cryptography::sha256::Digest;

use crate::proof::digest::digest_at;
use crate::validator::block::{BlockBound, ProposedBlock};
use gamechain_ledger::storage::Storage;
use gamechain_ledger::NodeError;

/// Bounds on blocks validators accept from each other: 16 MiB encoded, 20,000 transactions.
pub const PROPOSAL_BOUND: BlockBound = BlockBound {
    max_bytes: 16 << 20,
    max_txs: 20_000,
};

/// Most bytes of transactions a validator puts in one block it proposes (leaves room in
/// [`PROPOSAL_BOUND`] for the header and the encoding).
pub const MAX_PROPOSAL_TX_BYTES: usize = 12 << 20;

/// Block 0 as consensus carries it (its parent digest is 32 zero bytes).
pub fn genesis_proposal(storage: &Storage) -> Result<ProposedBlock, NodeError> {
    let header = storage
        .signed_header(0)?
        .ok_or_else(|| NodeError::Refused("the database has no block 0".into()))?;
    Ok(ProposedBlock::new(header, Vec::new(), Digest([0; 32])))
}

/// The consensus digest of the stored head (`head_height`): the latest recorded digest,
/// carried forward over the blocks committed after it (blocks committed without their record,
/// by builds that wrote it after the block). Errors: the database failed or lacks a block.
pub fn head_digest(storage: &Storage, head_height: u64) -> Result<Digest, NodeError> {
    storage.ensure_validator_tables()?;
    digest_at(storage, head_height)
}

impl ProposedBlock {
    /// The block's consensus digest.
    pub fn digest_of(&self) -> Digest {
        commonware_cryptography::Digestible::digest(self)
    }
}
