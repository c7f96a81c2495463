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
//! `header.tx_root`, `receipt_proof` that of SHA-256(borsh(receipt)) as leaf `index` of the
//! `receipt_count` leaves (the block's transaction receipts, then its end-block receipts) under
//! `header.receipt_root`.

use std::collections::BTreeMap;

use gamechain_runtime::chain::{Receipt, SignedHeader};
use gamechain_sdk::Amount;
use serde::{Deserialize, Serialize};

/// The transcript format's version.
pub const TRANSCRIPT_VERSION: u32 = 1;

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
    /// Whether the game has finished (a `<module>.finished` event of the game).
    pub finished: bool,
    /// The last height the node looked at.
    pub scanned_to: u64,
    /// Declared, not proven: each sender's GOLD balance the re-execution starts from.
    pub start_balances: BTreeMap<String, Amount>,
    /// The game's transactions, in chain order.
    pub steps: Vec<Step>,
}

/// One transaction of the game, where it is, and the proofs that it is there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// The block height.
    pub height: u64,
    /// The transaction's position in its block.
    pub index: u32,
    /// Lowercase hex SHA-256 of `body`.
    pub txid: String,
    /// The signed body, byte for byte as included.
    pub body: String,
    /// Its signature.
    pub signature: String,
    /// Its receipt.
    pub receipt: Receipt,
    /// The block's signed header.
    pub header: SignedHeader,
    /// Transactions in the block (leaves under `tx_root`).
    pub tx_count: u64,
    /// Receipts in the block (leaves under `receipt_root`: transactions' then end-block's).
    pub receipt_count: u64,
    /// Audit path of `txid` under `tx_root`, hex.
    pub tx_proof: Vec<String>,
    /// Audit path of the receipt's hash under `receipt_root`, hex.
    pub receipt_proof: Vec<String>,
}
