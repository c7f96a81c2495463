//! [`Block`]: a committed block (signed header, transactions with receipts, end-of-block
//! receipts) as the node stores it in memory and serves it as JSON.
//!
//! JSON (`GET /v1/blocks/<height>`, and `block` in a WebSocket message):
//! `{"height", "hash", "header", "signature", "scheduled": [{"module", "id", "receipt"}],
//! "txs": [{"txid", "body", "signature", "receipt"}], "end_block": [{"module", "receipt"}]}`
//! (`scheduled`: the calls modules scheduled that ran at the start of the block, in that order;
//! absent when there were none). `height` and `hash` repeat the header's (lowercase
//! hex block hash); `txid` is the lowercase hex SHA-256 of `body`. Reading checks both.

use serde::{Deserialize, Serialize};

use crate::block::receipt::{Receipt, ScheduledReceipt};
use crate::block::tx::SignedTx;
use crate::block::{Header, SignedHeader};

/// One transaction of a block and its receipt. JSON: `{"txid", "body", "signature",
/// "receipt"}`; reading fails when `txid` is not the hash of `body`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncludedTx {
    /// The transaction as sent (exact body bytes and signature).
    pub tx: SignedTx,
    /// Its receipt.
    pub receipt: Receipt,
}

#[derive(Serialize, Deserialize)]
struct IncludedTxFields {
    txid: String,
    body: String,
    signature: String,
    receipt: Receipt,
}

impl Serialize for IncludedTx {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        IncludedTxFields {
            txid: self.tx.txid(),
            body: self.tx.body().to_string(),
            signature: self.tx.signature().to_string(),
            receipt: self.receipt.clone(),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for IncludedTx {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let f = IncludedTxFields::deserialize(deserializer)?;
        let tx = SignedTx::new(f.body, f.signature);
        if tx.txid() != f.txid {
            return Err(serde::de::Error::custom(format!(
                "txid {} is not the hash of its body ({})",
                f.txid,
                tx.txid()
            )));
        }
        Ok(IncludedTx {
            tx,
            receipt: f.receipt,
        })
    }
}

/// One module's end-of-block outcome on the wire: `{"module", "receipt"}`.
#[derive(Serialize, Deserialize)]
struct EndBlockFields {
    module: String,
    receipt: Receipt,
}

/// A committed block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The header and the sequencer's signature.
    pub header: SignedHeader,
    /// The scheduled calls the block ran before its transactions, in order, with receipts.
    pub scheduled: Vec<ScheduledReceipt>,
    /// The transactions in block order, each with its receipt.
    pub txs: Vec<IncludedTx>,
    /// End-of-block receipts, `(module id, receipt)`, in ascending module id order.
    pub end_block: Vec<(String, Receipt)>,
}

impl Block {
    /// The block height.
    pub fn height(&self) -> u64 {
        self.header.header.height
    }

    /// The block hash, lowercase hex (SHA-256 of the header's borsh encoding).
    pub fn hash_hex(&self) -> String {
        self.header.header.hash_hex()
    }
}

#[derive(Serialize)]
struct FieldsOut<'a> {
    height: u64,
    hash: String,
    header: &'a Header,
    signature: &'a str,
    #[serde(skip_serializing_if = "<[ScheduledReceipt]>::is_empty")]
    scheduled: &'a [ScheduledReceipt],
    txs: &'a [IncludedTx],
    end_block: Vec<EndBlockFields>,
}

#[derive(Deserialize)]
struct FieldsIn {
    height: u64,
    hash: String,
    header: Header,
    signature: String,
    #[serde(default)]
    scheduled: Vec<ScheduledReceipt>,
    txs: Vec<IncludedTx>,
    #[serde(default)]
    end_block: Vec<EndBlockFields>,
}

impl Serialize for Block {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        FieldsOut {
            height: self.height(),
            hash: self.hash_hex(),
            header: &self.header.header,
            signature: &self.header.signature,
            scheduled: &self.scheduled,
            txs: &self.txs,
            end_block: self
                .end_block
                .iter()
                .map(|(module, receipt)| EndBlockFields {
                    module: module.clone(),
                    receipt: receipt.clone(),
                })
                .collect(),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Block {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let b = FieldsIn::deserialize(deserializer)?;
        if b.header.height != b.height || b.header.hash_hex() != b.hash {
            return Err(serde::de::Error::custom(format!(
                "block {}: its `height` or `hash` does not match its header",
                b.height
            )));
        }
        Ok(Block {
            header: SignedHeader {
                header: b.header,
                signature: b.signature,
            },
            scheduled: b.scheduled,
            txs: b.txs,
            end_block: b
                .end_block
                .into_iter()
                .map(|e| (e.module, e.receipt))
                .collect(),
        })
    }
}

/// A WebSocket message of `GET /v1/ws`: `{"type": "block", "block": {...}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum BlockMessage {
    /// A newly committed block.
    Block {
        /// The block.
        block: Block,
    },
}

/// `GET /v1/blocks/<height>/finality` (chains with validators): how block `height` was
/// finalized. `digest` is the block's consensus digest (64 lowercase hex; it chains the
/// parent's digest, the header hash and every signature the block carries: `docs/validators.md`),
/// `certificate` the finality certificate the answering node stored (lowercase hex of the
/// engine's encoded finalization: a quorum of the genesis validators' ed25519 signatures over
/// the digest), or `None` for a block finalized through a descendant's certificate. A reader
/// checks both itself (`gamechain verify`, a follower); the node's word is not proof.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockFinality {
    /// The block's height.
    pub height: u64,
    /// The block's hash (its header's), lowercase hex.
    pub hash: String,
    /// Its consensus digest, lowercase hex (32 bytes).
    pub digest: String,
    /// Its finality certificate, lowercase hex; `None` when only a descendant's certifies it.
    pub certificate: Option<String>,
}
