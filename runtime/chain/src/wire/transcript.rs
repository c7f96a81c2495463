//! The transcript's JSON (`GET /v1/games/<module>/<id>/transcript`), read back by
//! `gamechain verify --game` (`verify/game/`) and by the JS SDK's `verifyTranscript`.
//!
//! ```json
//! {"version": 1, "module": "tictactoe", "game": "<id>", "chain_id": "…",
//!  "genesis_hash": "<hex>", "sequencer": "<address>", "code_hash": "<hex>",
//!  "finished": true, "scanned_to": 123, "start_balances": {"<address>": "100"},
//!  "steps": [{"height", "index", "txid", "body", "signature", "receipt", "header",
//!             "tx_count", "receipt_count", "tx_proof": ["<hex>"…], "receipt_proof": […]}]}
//! ```
//!
//! `header` is the block's signed header (`{"header": {...}, "signature"}`), `tx_proof` the
//! RFC 6962 audit path of `txid` (its 32 bytes) as leaf `index` of the `tx_count` leaves under
//! `header.tx_root`, `receipt_proof` that of SHA-256(borsh(receipt)) as leaf `receipt_index`
//! (absent: `index`) of the `receipt_count` leaves (the block's scheduled calls' receipts, then
//! its transaction receipts, then its end-block receipts) under `header.receipt_root`.
//!
//! **Version 2** (a transcript with a step of a scheduled call; one without stays version 1):
//! a call step is `{"height", "index", "call": {"module", "id"}, "receipt", "header",
//! "receipt_count", "tx_proof": [], "receipt_proof"}` — no other transaction field — where `index` is its position
//! among the block's scheduled receipts and its leaf hash is `ScheduledReceipt::hash` (the call
//! and its receipt). A transcript of a chain with a beacon carries `beacon_key`, the genesis
//! beacon key (192 hex), and every step's header its beacon. A verifier re-executes a call step
//! from its own queue (the call an earlier step scheduled), drawing from the header's beacon
//! (`docs/verify-a-match.md`).
//!
//! **Log** (a chain with state proofs, genesis `"state_commitment": "sparse_merkle"`): `"log"`
//! ([`LoggedSteps`]), the game's log kept by the runtime (`game_log.rs`), proven against the
//! state root of a block at or after the last step; a verifier hashes the steps' leaves
//! (txids, calls' receipt hashes) into the same chain and refuses a transcript whose steps are
//! fewer, other or in another order.
//!
//! **Starting balances** (a chain with state proofs): `"start"` ([`ProvenStart`]), for each
//! account a step acts for, its GOLD balance in the state of the block before its first step,
//! proven against that block's state root; the block's header is bound by the first step's
//! `prev_hash`, so it is as signed and as final as that step. `start_balances` then holds those
//! proven amounts, and a verifier refuses any other. Where the node cannot prove one (the
//! balance moved earlier in the same block, before the first step), the entry says why
//! (`unproven`) and that account starts from the declared amount, which verifiers report.
//!
//! **Finality** (a chain with validators; absent on a single sequencer's, so its transcripts
//! are unchanged): every step carries `finality` ([`StepFinality`]), what proves its block
//! final against the genesis validator set — the block's consensus digest recomputed from its
//! parent's digest, the step's signed header and its transactions' signatures (by their hash),
//! then chained through at most [`MAX_FINALITY_LINKS`] descendants ([`FinalityLink`]) to the
//! first block with a finality certificate of its own, which must be a quorum's finalization
//! of that digest (`node/src/proof/finality.rs`, `node/src/proof/step_finality.rs`):
//!
//! ```json
//! "finality": {"parent_digest": "<64 hex>", "tx_count": 3, "signatures_hash": "<64 hex>",
//!              "links": [{"header_hash", "header_signature", "tx_count", "signatures_hash"}…],
//!              "certificate": "<hex of the certificate>"}
//! ```

use std::collections::BTreeMap;

use crate::block::receipt::Receipt;
use crate::block::{Header, SignedHeader};
use crate::state_root::StateProof;
use gamechain_sdk::Amount;
use serde::{Deserialize, Serialize};

/// The transcript format's version: 1 without scheduled calls, 2 with.
pub const TRANSCRIPT_VERSION: u32 = 1;

/// The version of a transcript with a scheduled call's step.
pub const TRANSCRIPT_VERSION_CALLS: u32 = 2;

/// A game's transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Transcript {
    /// [`TRANSCRIPT_VERSION`].
    pub version: u32,
    /// The module id.
    pub module: String,
    /// The game id.
    pub game: String,
    /// The chain id.
    pub chain_id: String,
    /// Lowercase hex of the genesis hash.
    pub genesis_hash: String,
    /// The genesis sequencer (the signer of a single-sequencer chain's headers).
    pub sequencer: String,
    /// Lowercase hex SHA-256 of the code that ran every step.
    pub code_hash: String,
    /// The genesis beacon key (192 hex) of a chain with a beacon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beacon_key: Option<String>,
    /// Whether the game has finished (a `<module>.finished` event of the game).
    pub finished: bool,
    /// The last height the node looked at.
    pub scanned_to: u64,
    /// Each sender's GOLD balance the re-execution starts from: declared by the node on a
    /// chain without state proofs, proven by `start` on one with them.
    pub start_balances: BTreeMap<String, Amount>,
    /// The game's transactions, in chain order.
    pub steps: Vec<Step>,
    /// On a chain with state proofs: the game's log (`game_log.rs`) proven against a block at
    /// or after its last step, so a verifier can check that `steps` are all of the game's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<LoggedSteps>,
    /// On a chain with state proofs: each account's starting balance with its proof
    /// ([`ProvenStart`]), one per account a step acts for, in the order of their first steps.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub start: Vec<ProvenStart>,
}

/// One account's starting balance (`"start"` of a transcript on a chain with state proofs):
/// proven, `{"account", "header": {…}, "value": "<decimal>", "proof": {…}}`, where `header` is the
/// block before the account's first step in the game (its hash is that step's `prev_hash`),
/// `value` the stored `bal/<account>/GOLD` (canonical decimal base units; absent: none, 0), and
/// `proof` its state proof against `header.state_root`; or not provable by this node,
/// `{"account", "unproven": "<why>"}` (the account then starts from `start_balances`' declared
/// amount, and verifiers report it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProvenStart {
    /// The account.
    pub account: String,
    /// The header of the block before the account's first step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<Header>,
    /// The stored balance text; `None`: no entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// The proof of `bal/<account>/GOLD` holding `value` (or being absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proof: Option<StateProof>,
    /// Why the node cannot prove it (then `header`, `value` and `proof` are absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unproven: Option<String>,
}

/// The game's log at a block, with its proof (`"log"` of a transcript on a chain with state
/// proofs): `{"key": "log/<module>/<game>", "value": "<96 hex>", "header": {"header", "signature"},
/// "proof": {…}, "finality": {…}}`. `value` is the log's 48 bytes (`GameLog::to_bytes`),
/// `proof` the state proof of `key` holding it against `header.state_root`, `finality` (a chain
/// with validators) the proof that `header`'s block is final, as a step's; `module_record` the
/// module's record at that block with its proof ([`ProvenRecord`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoggedSteps {
    /// `log/<module>/<game>`.
    pub key: String,
    /// Lowercase hex of the 48-byte log.
    pub value: String,
    /// The block whose state root the proof leads to.
    pub header: SignedHeader,
    /// The proof of `key` holding `value`.
    pub proof: StateProof,
    /// On a chain with validators: the block's finality, as a step's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finality: Option<StepFinality>,
    /// The module's record (`module/<module>`) at the same block with its proof: what anchors
    /// `code_hash` (the record names the code, and when it was deployed or last upgraded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module_record: Option<ProvenRecord>,
}

/// A state entry whose value is text (a module record's compact JSON), with its proof against
/// the [`LoggedSteps`] block's state root: `{"value": "<the stored text>", "proof": {…}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProvenRecord {
    /// The stored bytes, as UTF-8 text.
    pub value: String,
    /// The proof of the entry holding `value`.
    pub proof: StateProof,
}

/// A scheduled call a step ran: `{"module", "id"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallRef {
    /// The module called.
    pub module: String,
    /// The call id.
    pub id: u64,
}

/// One transaction (or scheduled call) of the game, where it is, and the proofs that it is
/// there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// The block height.
    pub height: u64,
    /// The transaction's position in its block; a call's among the block's scheduled calls.
    pub index: u32,
    /// A scheduled call's step: which call (then the transaction fields are absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<CallRef>,
    /// Lowercase hex SHA-256 of `body`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub txid: String,
    /// The signed body, byte for byte as included.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub body: String,
    /// Its signature.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub signature: String,
    /// Its receipt.
    pub receipt: Receipt,
    /// The block's signed header.
    pub header: SignedHeader,
    /// Transactions in the block (leaves under `tx_root`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tx_count: u64,
    /// Receipts in the block (leaves under `receipt_root`: scheduled calls', transactions',
    /// then end-block's).
    pub receipt_count: u64,
    /// The receipt's leaf under `receipt_root` when it is not `index` (a transaction of a
    /// block that ran scheduled calls first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt_index: Option<u64>,
    /// Audit path of `txid` under `tx_root`, hex (empty for a call).
    #[serde(default)]
    pub tx_proof: Vec<String>,
    /// Audit path of the receipt's hash under `receipt_root`, hex.
    pub receipt_proof: Vec<String>,
    /// On a chain with validators: the proof that the step's block is final (absent on a
    /// single sequencer's chain, and when the node holds no certificate within
    /// [`MAX_FINALITY_LINKS`] blocks of it: then a verifier refuses the step).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finality: Option<StepFinality>,
    /// A `session_game` step on a chain with state proofs: the session record it was admitted
    /// under, proven against the state before its block ([`ProvenSession`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<ProvenSession>,
}

/// A `session_game` step's authorization (`"session"` of a step): the record
/// `session/<account>/<key>` (the step's account, its signing key) in the state of the block
/// before the step's, `{"header": {…}, "value": "<the record's JSON text>" | null, "proof":
/// {…}}`, `header` being that block's (unsigned: it must hash to the step header's
/// `prev_hash`), `proof` the entry's state proof against its `state_root`; or, where the node
/// has no proof to give, `{"unproven": "<why>"}` (the record was written earlier in the step's
/// block, or the node did not execute that block).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProvenSession {
    /// The header of the block before the step's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<Header>,
    /// The stored record's text; `None`: no record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// The proof of the record holding `value` (or being absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proof: Option<StateProof>,
    /// Why the node cannot prove it (then `header`, `value` and `proof` are absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unproven: Option<String>,
}

/// Most descendants a [`StepFinality`] chains through to a certificate: a block further than
/// that from the nearest certified block gets no finality record in a transcript (bounds a
/// step's record to at most about 46 KiB of links beside its certificate of at most 16 KiB, 32
/// KiB as hex; a real one on a 4-validator testnet is 673 bytes, a link about 230).
pub const MAX_FINALITY_LINKS: usize = 64;

/// Largest header signature text a [`FinalityLink`] may carry (a block signer's signature is
/// 88 base64 characters).
pub const MAX_LINK_SIGNATURE_CHARS: usize = 512;

/// What proves a step's block final on a chain with validators. The block's consensus digest
/// is `SHA-256("gamechain/proposal/v1" ‖ parent_digest ‖ header hash ‖ u32 LE length ‖ header
/// signature text ‖ u32 LE tx_count ‖ signatures_hash)` (`node/src/proof/digest.rs`), the
/// header being the step's; each link then gives the next block's digest from the one before;
/// `certificate` must finalize the last digest (the step's own block's when `links` is
/// empty).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepFinality {
    /// Lowercase hex of the consensus digest of the block's parent (32 bytes).
    pub parent_digest: String,
    /// Transactions in the block (equal to the step's `tx_count` for a transaction's step).
    pub tx_count: u32,
    /// Lowercase hex SHA-256 of the block's transactions' signatures in block order, each as
    /// u32 LE length ‖ its text.
    pub signatures_hash: String,
    /// The descendants from the block's child to the certified block, in height order (empty:
    /// the block has a certificate of its own); at most [`MAX_FINALITY_LINKS`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<FinalityLink>,
    /// Lowercase hex of the finality certificate of the last block (Commonware simplex's
    /// encoded ed25519 `Finalization`, at most 16 KiB).
    pub certificate: String,
}

/// One descendant block in a [`StepFinality`]: what its consensus digest covers beside its
/// parent's digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FinalityLink {
    /// Lowercase hex of its header hash (32 bytes).
    pub header_hash: String,
    /// Its header's signature text (at most [`MAX_LINK_SIGNATURE_CHARS`]).
    pub header_signature: String,
    /// Its transaction count.
    pub tx_count: u32,
    /// Lowercase hex SHA-256 of its transactions' signatures (as in [`StepFinality`]).
    pub signatures_hash: String,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
