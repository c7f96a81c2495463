//! [`ProposedBlock`]: what validators send each other and order under consensus — a block's
//! signed header and its transactions, without receipts (every validator computes those by
//! executing the block) — with its consensus digest and its binary encoding.
//!
//! **Digest** (what consensus votes on and a finality certificate signs):
//! [`proposal_digest`] (`proof/digest.rs`): the parent's digest, the header hash, the
//! header's signature and the transactions' signatures, so a peer can change no byte of a
//! block under the same digest (the header's `tx_root` covers the transactions' bodies).
//! Followers and `gamechain verify` compute it from stored blocks to check certificates.
//!
//! **Encoding** (the commonware codec, used on the wire and in the engine's archives): u32 LE
//! length ‖ the borsh encoding of `(SignedHeader, Vec<(body, signature)>)`. Reading refuses,
//! with a codec error and before any allocation past the bound: a length over the configured
//! bound ([`BlockBound`]), more than `max_txs` transactions, and transactions whose txids do
//! not give the header's `tx_root` (so the digest binds every byte the block carries).

use std::sync::Arc;

use borsh::{BorshDeserialize, BorshSerialize};
use bytes::{Buf, BufMut};
use commonware_codec::{EncodeSize, Error as CodecError, Read, Write};
use commonware_consensus::types::Height;
use commonware_consensus::{Block as ConsensusBlockTrait, Heightable};
use commonware_cryptography::sha256::Digest;
use commonware_cryptography::Digestible;

use gamechain_runtime::chain::{tx_root, SignedHeader, SignedTx};

/// [`crate::proof::digest::proposal_digest`] over the engine's digest type.
pub fn proposal_digest<'a>(
    parent: &Digest,
    header: &SignedHeader,
    signatures: impl IntoIterator<Item = &'a str>,
) -> Digest {
    Digest(crate::proof::digest::proposal_digest(
        &parent.0, header, signatures,
    ))
}

/// Bounds on a [`ProposedBlock`] read from a peer or an archive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockBound {
    /// Most encoded bytes (the length prefix's limit).
    pub max_bytes: usize,
    /// Most transactions.
    pub max_txs: usize,
}

/// A proposed (or finalized) block as consensus carries it: the signed header and the
/// transactions. Cheap to clone (shared).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProposedBlock {
    inner: Arc<Inner>,
}

#[derive(Debug, PartialEq, Eq)]
struct Inner {
    header: SignedHeader,
    txs: Vec<SignedTx>,
    digest: Digest,
    parent: Digest,
}

/// The borsh shape of the encoding.
#[derive(BorshSerialize, BorshDeserialize)]
struct Wire {
    header: SignedHeader,
    txs: Vec<(String, String)>,
}

impl ProposedBlock {
    /// A block of `header` and `txs`; `parent_digest` is the parent's [`proposal_digest`]
    /// (block 0's is 32 zero bytes).
    pub fn new(header: SignedHeader, txs: Vec<SignedTx>, parent_digest: Digest) -> ProposedBlock {
        let digest = proposal_digest(&parent_digest, &header, txs.iter().map(SignedTx::signature));
        ProposedBlock {
            inner: Arc::new(Inner {
                header,
                txs,
                digest,
                parent: parent_digest,
            }),
        }
    }

    /// The signed header.
    pub fn header(&self) -> &SignedHeader {
        &self.inner.header
    }

    /// The transactions, in block order.
    pub fn txs(&self) -> &[SignedTx] {
        &self.inner.txs
    }

    /// The block's height.
    pub fn number(&self) -> u64 {
        self.inner.header.header.height
    }

    fn wire_bytes(&self) -> Vec<u8> {
        let wire = WireRef {
            header: &self.inner.header,
            txs: self
                .inner
                .txs
                .iter()
                .map(|t| (t.body(), t.signature()))
                .collect(),
        };
        borsh::to_vec(&wire).expect("writing to a Vec cannot fail")
    }
}

/// [`Wire`] by reference, for writing.
#[derive(BorshSerialize)]
struct WireRef<'a> {
    header: &'a SignedHeader,
    txs: Vec<(&'a str, &'a str)>,
}

impl Digestible for ProposedBlock {
    type Digest = Digest;

    fn digest(&self) -> Digest {
        self.inner.digest
    }
}

impl Heightable for ProposedBlock {
    fn height(&self) -> Height {
        Height::new(self.number())
    }
}

impl ConsensusBlockTrait for ProposedBlock {
    fn parent(&self) -> Digest {
        self.inner.parent
    }
}

impl Write for ProposedBlock {
    fn write(&self, buf: &mut impl BufMut) {
        let bytes = self.wire_bytes();
        buf.put_u32_le(bytes.len() as u32);
        // The parent's digest travels too (the digest binds it): marshal checks it against the
        // parent block's.
        buf.put_slice(&self.inner.parent.0);
        buf.put_slice(&bytes);
    }
}

impl EncodeSize for ProposedBlock {
    fn encode_size(&self) -> usize {
        4 + 32 + self.wire_bytes().len()
    }
}

impl Read for ProposedBlock {
    type Cfg = BlockBound;

    fn read_cfg(buf: &mut impl Buf, cfg: &BlockBound) -> Result<Self, CodecError> {
        if buf.remaining() < 4 + 32 {
            return Err(CodecError::EndOfBuffer);
        }
        let len = buf.get_u32_le() as usize;
        if len > cfg.max_bytes {
            return Err(CodecError::InvalidLength(len));
        }
        let mut parent = [0u8; 32];
        buf.copy_to_slice(&mut parent);
        if buf.remaining() < len {
            return Err(CodecError::EndOfBuffer);
        }
        let mut bytes = vec![0u8; len];
        buf.copy_to_slice(&mut bytes);
        let wire: Wire = borsh::from_slice(&bytes)
            .map_err(|_| CodecError::Invalid("ProposedBlock", "not a block's encoding"))?;
        if wire.txs.len() > cfg.max_txs {
            return Err(CodecError::InvalidLength(wire.txs.len()));
        }
        let txs: Vec<SignedTx> = wire
            .txs
            .into_iter()
            .map(|(body, signature)| SignedTx::new(body, signature))
            .collect();
        if tx_root(&txs) != wire.header.header.tx_root {
            return Err(CodecError::Invalid(
                "ProposedBlock",
                "the transactions do not give the header's tx_root",
            ));
        }
        Ok(ProposedBlock::new(wire.header, txs, Digest(parent)))
    }
}

impl commonware_consensus::BoundedBlock for ProposedBlock {
    fn max_encode_size(cfg: &BlockBound) -> usize {
        4 + 32 + cfg.max_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use commonware_codec::{Decode, Encode};
    use gamechain_runtime::chain::{Header, Network, SecretKey};
    use gamechain_sdk::Checkpoint;

    fn key() -> SecretKey {
        SecretKey::from_bytes(Network::Testnet, [7; 32]).unwrap()
    }

    fn tx(i: u8) -> SignedTx {
        SignedTx::new(format!("{{\"n\":{i}}}"), format!("sig{i}"))
    }

    fn block(txs: Vec<SignedTx>) -> ProposedBlock {
        let header = Header {
            height: 5,
            prev_hash: [1; 32],
            time_ms: 99,
            sequencer: key().address(),
            checkpoint: Checkpoint::default(),
            tx_root: tx_root(&txs),
            receipt_root: [2; 32],
            state_root: [3; 32],
            beacon: None,
        };
        ProposedBlock::new(SignedHeader::sign(header, &key()), txs, Digest([9; 32]))
    }

    const BOUND: BlockBound = BlockBound {
        max_bytes: 1 << 20,
        max_txs: 100,
    };

    #[test]
    fn round_trip_keeps_digest_parent_and_height() {
        let b = block(vec![tx(1), tx(2)]);
        let bytes = b.encode();
        assert_eq!(bytes.len(), b.encode_size());
        let back = ProposedBlock::decode_cfg(bytes, &BOUND).unwrap();
        assert_eq!(back, b);
        assert_eq!(
            back.digest(),
            proposal_digest(
                &Digest([9; 32]),
                b.header(),
                b.txs().iter().map(SignedTx::signature)
            )
        );
        assert_eq!(back.parent(), Digest([9; 32]));
        assert_eq!(back.height(), Height::new(5));
    }

    #[test]
    fn the_digest_binds_every_byte_of_the_block() {
        let b = block(vec![tx(1), tx(2)]);
        let p = b.parent();
        let sigs = |txs: &[SignedTx]| {
            txs.iter()
                .map(SignedTx::signature)
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        let ours = sigs(b.txs());
        let d = |parent: &Digest, h: &SignedHeader, s: &[String]| {
            proposal_digest(parent, h, s.iter().map(String::as_str))
        };
        assert_eq!(d(&p, b.header(), &ours), b.digest());
        let mut h = b.header().clone();
        h.signature = "other".into();
        assert_ne!(d(&p, &h, &ours), b.digest());
        let mut h = b.header().clone();
        h.header.time_ms += 1;
        assert_ne!(d(&p, &h, &ours), b.digest());
        assert_ne!(d(&Digest([8; 32]), b.header(), &ours), b.digest());
        // One transaction's signature swapped (its txid, and so tx_root, unchanged).
        let swapped = vec![ours[0].clone(), "garbage".to_string()];
        assert_ne!(d(&p, b.header(), &swapped), b.digest());
        let copy = ProposedBlock::new(
            b.header().clone(),
            vec![
                tx(1),
                SignedTx::new(tx(2).body().to_string(), "garbage".into()),
            ],
            p,
        );
        assert_eq!(copy.header(), b.header());
        assert_ne!(
            copy.digest(),
            b.digest(),
            "a copy with another signature is another block"
        );
    }

    #[test]
    fn hostile_encodings_are_refused() {
        let b = block(vec![tx(1), tx(2)]);
        // Transactions that do not give tx_root.
        let swapped = ProposedBlock::new(b.header().clone(), vec![tx(2), tx(1)], b.parent());
        assert!(matches!(
            ProposedBlock::decode_cfg(swapped.encode(), &BOUND),
            Err(CodecError::Invalid(_, _))
        ));
        // Over the byte bound, refused from the prefix alone.
        let small = BlockBound {
            max_bytes: 10,
            max_txs: 100,
        };
        assert!(matches!(
            ProposedBlock::decode_cfg(b.encode(), &small),
            Err(CodecError::InvalidLength(_))
        ));
        // Over the transaction bound.
        let few = BlockBound {
            max_bytes: 1 << 20,
            max_txs: 1,
        };
        assert!(matches!(
            ProposedBlock::decode_cfg(b.encode(), &few),
            Err(CodecError::InvalidLength(2))
        ));
        // A length prefix claiming 4 GiB, truncated input, garbage.
        let mut huge = vec![0xff, 0xff, 0xff, 0xff];
        huge.extend([0; 40]);
        assert!(ProposedBlock::decode_cfg(bytes::BytesMut::from(&huge[..]), &BOUND).is_err());
        let bytes = b.encode();
        assert!(ProposedBlock::decode_cfg(
            bytes::BytesMut::from(&bytes[..bytes.len() - 1]),
            &BOUND
        )
        .is_err());
        let mut junk = 8u32.to_le_bytes().to_vec();
        junk.extend([0; 32]);
        junk.extend([0xAB; 8]);
        assert!(ProposedBlock::decode_cfg(bytes::BytesMut::from(&junk[..]), &BOUND).is_err());
    }
}
