//! `GET /v1/evidence` (chains with validators): proof that a validator signed two conflicting
//! consensus messages, as the answering node recorded it. [`Evidence`] is one record,
//! [`EvidencePage`] one page of them. The record's `data` is the proof itself; every other
//! field is the node's reading of it, which a reader checks against `data` and the genesis set
//! (`gamechain verify`, `docs/validators.md`, "Evidence"): the node's word is not proof.

use serde::{Deserialize, Serialize};

/// The kinds of evidence, as `kind` names them.
pub const EVIDENCE_KINDS: [&str; 3] = [
    "conflicting_notarize",
    "conflicting_finalize",
    "nullify_finalize",
];

/// One piece of evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Evidence {
    /// The node's sequence number of the record (1, 2, …, in the order it stored them).
    pub id: u64,
    /// One of [`EVIDENCE_KINDS`]: two notarize votes for different proposals in one view,
    /// two finalize votes for different proposals in one view, or a nullify and a finalize
    /// vote in one view.
    pub kind: String,
    /// The consensus view (round) both messages are for.
    pub view: u64,
    /// The signer's index in the genesis validator set.
    pub signer: u32,
    /// That validator's block-signing address.
    pub validator: String,
    /// That validator's consensus key, 64 lowercase hex.
    pub consensus_key: String,
    /// When the node stored it, ms since the Unix epoch by the node's clock (not consensus).
    pub received_ms: u64,
    /// The two signed messages, lowercase hex of their engine encodings one after the other
    /// (Commonware simplex's `ConflictingNotarize`, `ConflictingFinalize` or
    /// `NullifyFinalize`).
    pub data: String,
}

/// `GET /v1/evidence?after=<id>&limit=<n>`: the records with `id > after`, oldest first, at
/// most `limit` (1 to 100, default 100).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvidencePage {
    /// The records.
    pub evidence: Vec<Evidence>,
    /// How many records the node holds in all.
    pub total: u64,
    /// The `after` of the next page, `None` when this is the last.
    pub next: Option<u64>,
}
