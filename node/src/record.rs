//! What the node stores and serves about blocks and transactions: [`BlockRecord`] (a signed
//! header, its transactions with their receipts, its end-of-block receipts) and [`TxRecord`]
//! (one transaction, pending or included), with their JSON as `node/API.md` defines it.

use gamechain_runtime::chain::{Receipt, SignedHeader, SignedTx};
use serde_json::{json, Value};

/// One transaction of a block and its receipt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncludedTx {
    /// The transaction as sent (exact body bytes and signature).
    pub tx: SignedTx,
    /// Its receipt.
    pub receipt: Receipt,
}

/// A committed block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockRecord {
    /// The header and the sequencer's signature.
    pub header: SignedHeader,
    /// The transactions in block order, each with its receipt.
    pub txs: Vec<IncludedTx>,
    /// End-of-block receipts, `(module id, receipt)`, in ascending module id order.
    pub end_block: Vec<(String, Receipt)>,
}

impl BlockRecord {
    /// The block height.
    pub fn height(&self) -> u64 {
        self.header.header.height
    }

    /// The API object (`GET /v1/blocks/<height>`, and `block` in a WebSocket message):
    /// `{"height", "hash", "header", "signature", "txs": [{"txid", "body", "signature",
    /// "receipt"}], "end_block": [{"module", "receipt"}]}`.
    pub fn to_json(&self) -> Value {
        let txs: Vec<Value> = self
            .txs
            .iter()
            .map(|t| {
                json!({
                    "txid": t.tx.txid(),
                    "body": t.tx.body,
                    "signature": t.tx.signature,
                    "receipt": t.receipt,
                })
            })
            .collect();
        let end_block: Vec<Value> = self
            .end_block
            .iter()
            .map(|(module, receipt)| json!({"module": module, "receipt": receipt}))
            .collect();
        json!({
            "height": self.header.header.height,
            "hash": self.header.header.hash_hex(),
            "header": self.header.header,
            "signature": self.header.signature,
            "txs": txs,
            "end_block": end_block,
        })
    }
}

/// Where a transaction is: waiting in the mempool, or in a block with its receipt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxStatus {
    /// Accepted, not yet in a block.
    Pending,
    /// In block `height` at position `index`, with its receipt.
    Included {
        /// Block height.
        height: u64,
        /// Position in the block, from 0.
        index: u32,
        /// The receipt.
        receipt: Receipt,
    },
}

/// A transaction and its status (`GET /v1/tx/<txid>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxRecord {
    /// The transaction as sent.
    pub tx: SignedTx,
    /// Pending or included.
    pub status: TxStatus,
}

impl TxRecord {
    /// The API object: `{"txid", "status": "pending" | "included", "body", "signature",
    /// "height", "index", "receipt"}` (the last three `null` while pending).
    pub fn to_json(&self) -> Value {
        let (status, height, index, receipt) = match &self.status {
            TxStatus::Pending => ("pending", Value::Null, Value::Null, Value::Null),
            TxStatus::Included {
                height,
                index,
                receipt,
            } => (
                "included",
                json!(height),
                json!(index),
                serde_json::to_value(receipt).expect("a receipt serialises"),
            ),
        };
        json!({
            "txid": self.tx.txid(),
            "status": status,
            "body": self.tx.body,
            "signature": self.tx.signature,
            "height": height,
            "index": index,
            "receipt": receipt,
        })
    }
}
