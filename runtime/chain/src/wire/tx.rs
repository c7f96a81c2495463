//! [`TxRecord`]: one transaction and where it is (`GET /v1/tx/<txid>`), and [`TxidAnswer`],
//! the answer to `POST /v1/tx`.
//!
//! JSON: `{"txid", "status": "pending" | "included", "body", "signature", "height", "index",
//! "receipt"}`, the last three `null` while pending. Reading fails when `txid` is not the hash
//! of `body`, or when `status` and the last three disagree.

use serde::{Deserialize, Serialize};

use crate::block::receipt::Receipt;
use crate::block::tx::SignedTx;

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

/// A transaction and its status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxRecord {
    /// The transaction as sent.
    pub tx: SignedTx,
    /// Pending or included.
    pub status: TxStatus,
}

impl TxRecord {
    /// The txid, lowercase hex.
    pub fn txid(&self) -> String {
        self.tx.txid()
    }

    /// The block height, once included.
    pub fn height(&self) -> Option<u64> {
        match &self.status {
            TxStatus::Pending => None,
            TxStatus::Included { height, .. } => Some(*height),
        }
    }

    /// The position in its block (from 0), once included.
    pub fn index(&self) -> Option<u64> {
        match &self.status {
            TxStatus::Pending => None,
            TxStatus::Included { index, .. } => Some(u64::from(*index)),
        }
    }

    /// The receipt, once included.
    pub fn receipt(&self) -> Option<&Receipt> {
        match &self.status {
            TxStatus::Pending => None,
            TxStatus::Included { receipt, .. } => Some(receipt),
        }
    }
}

#[derive(Serialize, Deserialize)]
struct TxRecordFields {
    txid: String,
    status: String,
    body: String,
    signature: String,
    height: Option<u64>,
    index: Option<u32>,
    receipt: Option<Receipt>,
}

impl Serialize for TxRecord {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (status, height, index, receipt) = match &self.status {
            TxStatus::Pending => ("pending", None, None, None),
            TxStatus::Included {
                height,
                index,
                receipt,
            } => (
                "included",
                Some(*height),
                Some(*index),
                Some(receipt.clone()),
            ),
        };
        TxRecordFields {
            txid: self.tx.txid(),
            status: status.to_string(),
            body: self.tx.body().to_string(),
            signature: self.tx.signature().to_string(),
            height,
            index,
            receipt,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for TxRecord {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let f = TxRecordFields::deserialize(deserializer)?;
        let tx = SignedTx::new(f.body, f.signature);
        if tx.txid() != f.txid {
            return Err(D::Error::custom(format!(
                "txid {} is not the hash of its body ({})",
                f.txid,
                tx.txid()
            )));
        }
        let status = match (f.status.as_str(), f.height, f.index, f.receipt) {
            ("pending", None, None, None) => TxStatus::Pending,
            ("included", Some(height), Some(index), Some(receipt)) => TxStatus::Included {
                height,
                index,
                receipt,
            },
            (status, ..) => {
                return Err(D::Error::custom(format!(
                    "status `{status}` with height, index and receipt that do not fit it"
                )))
            }
        };
        Ok(TxRecord { tx, status })
    }
}

/// The answer to `POST /v1/tx`: `{"txid": "<64 hex>"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxidAnswer {
    /// The accepted transaction's txid.
    pub txid: String,
}
