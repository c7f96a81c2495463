//! Block headers: [`Header`] (what a block commits to), its hash, the sequencer's
//! [`SignedHeader`], and the two list roots [`tx_root`] and [`receipt_root`].
//!
//! A header commits to the height, the previous block's hash, the time (ms since the Unix
//! epoch, as the sequencer set it), the sequencer's address, the parent-chain checkpoint, the
//! transactions (`tx_root`: RFC 6962 Merkle root, see [`crate::block::merkle`], over the 32-byte
//! txids in block order), the receipts (`receipt_root`: the same over the scheduled calls'
//! receipts in the order they ran ([`ScheduledReceipt::hash`], call-bound), then
//! SHA-256(borsh(receipt)) of the transaction receipts in block order, then of one end-of-block
//! receipt per module exporting `gc_end_block`, in ascending id order) and the state after the block (`state_root`, see
//! [`crate::state_root`]).
//!
//! Hash: SHA-256 of the borsh encoding, fields in declaration order: `height` u64 LE ‖
//! `prev_hash` 32 bytes ‖ `time_ms` u64 LE ‖ `sequencer` String (u32 LE length ‖ UTF-8) ‖
//! `checkpoint.height` u64 LE ‖ `checkpoint.hash` String ‖ `tx_root` ‖ `receipt_root` ‖
//! `state_root` (32 bytes each). The genesis block's `prev_hash` is 32 zero bytes.
//!
//! A header with a randomness beacon (`beacon`, a chain whose genesis names a beacon key;
//! `keys/beacon.rs`) is encoded as format 2: the marker `u64::MAX` (8 bytes `ff`) ‖ the format
//! byte `2` ‖ the fields above ‖ the 48 beacon bytes. No format-1 header starts with the marker
//! (its first field is the height, and no chain reaches height `u64::MAX`), so the encoding is
//! self-delimiting inside larger records, and a header without a beacon keeps its format-1
//! bytes and hash.
//!
//! Signature: the sequencer signs the 64-character lowercase hex of the header hash as a Divi
//! signed message ([`crate::keys::signed_message`]), so any wallet that can verify a signed
//! message can verify a block.
//!
//! JSON (API): the same fields, hashes and roots as 64 lowercase hex characters;
//! `{"header": {...}, "signature": "..."}` for a signed header.
//!
//! What a block holds has the files of this folder: [`tx`] (transactions), [`receipt`]
//! (receipts and events) and [`merkle`] (the root over both lists).

pub mod merkle;
pub mod receipt;
pub mod tx;

use core::fmt;
use std::io;

use borsh::{BorshDeserialize, BorshSerialize};
use serde::{Deserialize, Serialize};

use gamechain_sdk::Checkpoint;

use crate::block::merkle::merkle_root;
use crate::block::receipt::{Receipt, ScheduledReceipt};
use crate::block::tx::SignedTx;
use crate::hash::{hex32, sha256};
use crate::keys::address::SecretKey;
use crate::keys::beacon::{Beacon, BEACON_BYTES};
use crate::keys::signed_message::{sign_message, verify_message, SigError};

/// What a block commits to. See the module docs for the encoding that is hashed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    /// Block height; genesis is 0.
    pub height: u64,
    /// Hash of the previous header; 32 zero bytes at genesis. JSON: lowercase hex.
    #[serde(with = "hex32")]
    pub prev_hash: [u8; 32],
    /// Block time, milliseconds since the Unix epoch, as the sequencer set it.
    pub time_ms: u64,
    /// The sequencer's address (the key that signs this header).
    pub sequencer: String,
    /// The parent-chain block the sequencer had seen.
    pub checkpoint: Checkpoint,
    /// RFC 6962 Merkle root over the txids (32 bytes each) in block order. JSON: hex.
    #[serde(with = "hex32")]
    pub tx_root: [u8; 32],
    /// RFC 6962 Merkle root over SHA-256(borsh(receipt)) in block order. JSON: hex.
    #[serde(with = "hex32")]
    pub receipt_root: [u8; 32],
    /// The state commitment after this block ([`crate::StateHash::root`]). JSON: hex.
    #[serde(with = "hex32")]
    pub state_root: [u8; 32],
    /// The randomness beacon of this height (`keys/beacon.rs`): present in every block after
    /// 0 of a chain whose genesis names a beacon key, absent otherwise. JSON: 96 hex
    /// characters, or absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beacon: Option<Beacon>,
}

/// The first 8 bytes of a format-2 header (module docs).
const FORMAT_MARKER: u64 = u64::MAX;
/// The format byte of a header with a beacon.
const FORMAT_BEACON: u8 = 2;

impl BorshSerialize for Header {
    fn serialize<W: io::Write>(&self, w: &mut W) -> io::Result<()> {
        if self.beacon.is_some() {
            BorshSerialize::serialize(&FORMAT_MARKER, w)?;
            BorshSerialize::serialize(&FORMAT_BEACON, w)?;
        }
        BorshSerialize::serialize(&self.height, w)?;
        BorshSerialize::serialize(&self.prev_hash, w)?;
        BorshSerialize::serialize(&self.time_ms, w)?;
        BorshSerialize::serialize(&self.sequencer, w)?;
        BorshSerialize::serialize(&self.checkpoint.height, w)?;
        BorshSerialize::serialize(&self.checkpoint.hash, w)?;
        BorshSerialize::serialize(&self.tx_root, w)?;
        BorshSerialize::serialize(&self.receipt_root, w)?;
        BorshSerialize::serialize(&self.state_root, w)?;
        if let Some(b) = &self.beacon {
            w.write_all(&b.0)?;
        }
        Ok(())
    }
}

impl BorshDeserialize for Header {
    fn deserialize_reader<R: io::Read>(r: &mut R) -> io::Result<Self> {
        let first = u64::deserialize_reader(r)?;
        let (height, with_beacon) = if first == FORMAT_MARKER {
            let format = u8::deserialize_reader(r)?;
            if format != FORMAT_BEACON {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("unknown header format {format}"),
                ));
            }
            (u64::deserialize_reader(r)?, true)
        } else {
            (first, false)
        };
        let mut header = Header {
            height,
            prev_hash: <[u8; 32]>::deserialize_reader(r)?,
            time_ms: u64::deserialize_reader(r)?,
            sequencer: String::deserialize_reader(r)?,
            checkpoint: Checkpoint {
                height: u64::deserialize_reader(r)?,
                hash: String::deserialize_reader(r)?,
            },
            tx_root: <[u8; 32]>::deserialize_reader(r)?,
            receipt_root: <[u8; 32]>::deserialize_reader(r)?,
            state_root: <[u8; 32]>::deserialize_reader(r)?,
            beacon: None,
        };
        if with_beacon {
            header.beacon = Some(Beacon(<[u8; BEACON_BYTES]>::deserialize_reader(r)?));
        }
        Ok(header)
    }
}

impl Header {
    /// The canonical binary encoding (borsh, see the module docs).
    pub fn to_borsh(&self) -> Vec<u8> {
        borsh::to_vec(self).expect("writing to a Vec cannot fail")
    }

    /// SHA-256 of [`Header::to_borsh`]: the block hash.
    pub fn hash(&self) -> [u8; 32] {
        sha256(&self.to_borsh())
    }

    /// The block hash as 64 lowercase hex characters (what the sequencer signs).
    pub fn hash_hex(&self) -> String {
        hex::encode(self.hash())
    }
}

/// `tx_root` of a block whose transactions are `txs`, in order.
pub fn tx_root(txs: &[SignedTx]) -> [u8; 32] {
    let ids: Vec<[u8; 32]> = txs.iter().map(SignedTx::txid_bytes).collect();
    merkle_root(&ids)
}

/// `receipt_root` of a block whose receipts are `receipts`, in order (transaction receipts,
/// then end-of-block receipts by module id; see `gamechain_runtime::transition`), on a block
/// that ran no scheduled call.
pub fn receipt_root(receipts: &[Receipt]) -> [u8; 32] {
    let hashes: Vec<[u8; 32]> = receipts.iter().map(Receipt::hash).collect();
    merkle_root(&hashes)
}

/// `receipt_root` of a block: the scheduled calls' receipts in the order they ran
/// ([`ScheduledReceipt::hash`]), then the transactions' in block order, then the end-of-block
/// receipts in module id order. Without scheduled calls it is [`receipt_root`] of the rest.
pub fn block_receipt_root<'a>(
    scheduled: &[ScheduledReceipt],
    txs: impl IntoIterator<Item = &'a Receipt>,
    end_block: impl IntoIterator<Item = &'a Receipt>,
) -> [u8; 32] {
    let hashes: Vec<[u8; 32]> = scheduled
        .iter()
        .map(ScheduledReceipt::hash)
        .chain(txs.into_iter().map(Receipt::hash))
        .chain(end_block.into_iter().map(Receipt::hash))
        .collect();
    merkle_root(&hashes)
}

/// A header and the sequencer's signature of it. JSON: `{"header": {...}, "signature": "..."}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, BorshSerialize, BorshDeserialize)]
#[serde(deny_unknown_fields)]
pub struct SignedHeader {
    /// The header.
    pub header: Header,
    /// Base64 Divi signed message of `header.hash_hex()` by `header.sequencer`'s key.
    pub signature: String,
}

impl SignedHeader {
    /// Signs `header` with `sk`. It verifies only if `header.sequencer` is `sk`'s address.
    pub fn sign(header: Header, sk: &SecretKey) -> Self {
        let signature = sign_message(sk, header.hash_hex());
        Self { header, signature }
    }

    /// `Ok` when the signature is `header.sequencer`'s signature of the header hash.
    /// [`BlockError::BadSignature`] otherwise.
    pub fn verify(&self) -> Result<(), BlockError> {
        verify_message(
            &self.header.sequencer,
            self.header.hash_hex(),
            &self.signature,
        )
        .map_err(BlockError::BadSignature)
    }

    /// [`SignedHeader::verify`], also requiring the chain's sequencer to be `sequencer`
    /// ([`BlockError::WrongSequencer`] otherwise).
    pub fn verify_from(&self, sequencer: &str) -> Result<(), BlockError> {
        if self.header.sequencer != sequencer {
            return Err(BlockError::WrongSequencer {
                expected: sequencer.to_string(),
                found: self.header.sequencer.clone(),
            });
        }
        self.verify()
    }
}

/// Why a signed header is not valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockError {
    /// The header names another sequencer than the chain's.
    WrongSequencer {
        /// The chain's sequencer.
        expected: String,
        /// The header's.
        found: String,
    },
    /// The signature is not the header's sequencer's signature of its hash.
    BadSignature(SigError),
}

impl fmt::Display for BlockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BlockError::WrongSequencer { expected, found } => {
                write!(
                    f,
                    "header names sequencer {found}, the chain's is {expected}"
                )
            }
            BlockError::BadSignature(e) => write!(f, "bad header signature: {e}"),
        }
    }
}

impl std::error::Error for BlockError {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::receipt::Event;
    use crate::hash::sha256;
    use crate::keys::address::Network;
    use serde_json::json;

    fn header(seq: &SecretKey) -> Header {
        Header {
            height: 1416,
            prev_hash: sha256(b"prev"),
            time_ms: 1_792_000_000_000,
            sequencer: seq.address(),
            checkpoint: Checkpoint {
                height: 2_000_000,
                hash: "ab".repeat(32),
            },
            tx_root: sha256(b"txs"),
            receipt_root: sha256(b"receipts"),
            state_root: sha256(b"state"),
            beacon: None,
        }
    }

    #[test]
    fn borsh_layout_and_hash() {
        let seq = SecretKey::from_bytes(Network::Testnet, [3; 32]).unwrap();
        let h = header(&seq);
        let mut want = Vec::new();
        want.extend_from_slice(&1416u64.to_le_bytes());
        want.extend_from_slice(&h.prev_hash);
        want.extend_from_slice(&1_792_000_000_000u64.to_le_bytes());
        want.extend_from_slice(&34u32.to_le_bytes());
        want.extend_from_slice(seq.address().as_bytes());
        want.extend_from_slice(&2_000_000u64.to_le_bytes());
        want.extend_from_slice(&64u32.to_le_bytes());
        want.extend_from_slice("ab".repeat(32).as_bytes());
        want.extend_from_slice(&h.tx_root);
        want.extend_from_slice(&h.receipt_root);
        want.extend_from_slice(&h.state_root);
        assert_eq!(h.to_borsh(), want);
        assert_eq!(h.hash(), sha256(&want));
        assert_eq!(borsh::from_slice::<Header>(&want).unwrap(), h);
        let mut later = h.clone();
        later.time_ms += 1;
        assert_ne!(later.hash(), h.hash());
    }

    #[test]
    fn a_beacon_header_is_format_2_and_self_delimiting() {
        let seq = SecretKey::from_bytes(Network::Testnet, [3; 32]).unwrap();
        let plain = header(&seq);
        let mut h = plain.clone();
        h.beacon = Some(Beacon([7; 48]));
        let bytes = h.to_borsh();
        assert_eq!(
            &bytes[..9],
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2]
        );
        assert_eq!(&bytes[9..], [plain.to_borsh(), vec![7; 48]].concat());
        assert_eq!(borsh::from_slice::<Header>(&bytes).unwrap(), h);
        assert_ne!(h.hash(), plain.hash());
        // Inside a larger record (a signed header: the signature follows).
        let signed = SignedHeader::sign(h.clone(), &seq);
        let enc = borsh::to_vec(&signed).unwrap();
        assert_eq!(borsh::from_slice::<SignedHeader>(&enc).unwrap(), signed);
        signed.verify().unwrap();
        let mut v = serde_json::to_value(&h).unwrap();
        assert_eq!(v["beacon"], json!("07".repeat(48)));
        assert_eq!(serde_json::from_value::<Header>(v.clone()).unwrap(), h);
        v["beacon"] = json!("07".repeat(47));
        assert!(serde_json::from_value::<Header>(v).is_err());
        assert!(serde_json::to_value(&plain)
            .unwrap()
            .get("beacon")
            .is_none());
        let mut unknown = bytes.clone();
        unknown[8] = 3;
        assert!(borsh::from_slice::<Header>(&unknown).is_err());
    }

    #[test]
    fn json_uses_lowercase_hex() {
        let seq = SecretKey::from_bytes(Network::Testnet, [3; 32]).unwrap();
        let h = header(&seq);
        let v = serde_json::to_value(&h).unwrap();
        assert_eq!(v["prev_hash"], json!(hex::encode(sha256(b"prev"))));
        assert_eq!(
            v["checkpoint"],
            json!({"height": 2_000_000, "hash": "ab".repeat(32)})
        );
        assert_eq!(serde_json::from_value::<Header>(v.clone()).unwrap(), h);
        let mut upper = v;
        upper["state_root"] = json!(hex::encode(h.state_root).to_uppercase());
        assert!(serde_json::from_value::<Header>(upper).is_err());
    }

    #[test]
    fn signed_header_verifies_only_for_its_sequencer() {
        let seq = SecretKey::from_bytes(Network::Testnet, [3; 32]).unwrap();
        let signed = SignedHeader::sign(header(&seq), &seq);
        signed.verify().unwrap();
        signed.verify_from(&seq.address()).unwrap();
        let other = SecretKey::from_bytes(Network::Testnet, [4; 32]).unwrap();
        assert!(matches!(
            signed.verify_from(&other.address()),
            Err(BlockError::WrongSequencer { .. })
        ));
        let mut tampered = signed.clone();
        tampered.header.height += 1;
        assert!(matches!(
            tampered.verify(),
            Err(BlockError::BadSignature(SigError::AddressMismatch { .. }))
        ));
        let forged = SignedHeader::sign(header(&seq), &other);
        assert!(forged.verify().is_err());
        let json = serde_json::to_string(&signed).unwrap();
        assert_eq!(serde_json::from_str::<SignedHeader>(&json).unwrap(), signed);
    }

    #[test]
    fn roots_follow_the_lists() {
        let sk = SecretKey::from_bytes(Network::Testnet, [5; 32]).unwrap();
        let tx = |n: u64| {
            crate::block::tx::TxBody {
                chain_id: "c".into(),
                from: sk.address(),
                nonce: n,
                action: crate::block::tx::Action::Faucet {
                    token: "GOLD".into(),
                },
            }
            .sign(&sk)
        };
        let txs = [tx(0), tx(1)];
        assert_eq!(
            tx_root(&txs),
            merkle_root(&[txs[0].txid_bytes(), txs[1].txid_bytes()])
        );
        assert_eq!(tx_root(&[]), sha256(b""));
        let receipts = [
            Receipt::success(
                vec![Event {
                    kind: "faucet".into(),
                    data: json!({}),
                }],
                0,
            ),
            Receipt::failure("invalid: x", 7),
        ];
        assert_eq!(
            receipt_root(&receipts),
            merkle_root(&[receipts[0].hash(), receipts[1].hash()])
        );
        assert_ne!(
            receipt_root(&receipts),
            receipt_root(&[receipts[1].clone(), receipts[0].clone()])
        );
    }
}
