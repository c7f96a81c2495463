//! The beacon channel's message and the shares a validator keeps: plain, synchronous state
//! that the beacon task (`beacon/mod.rs`) drives, with no network or clock of its own.
//!
//! **Message** (channel 6), fixed size [`SHARE_MESSAGE_BYTES`] = 60 bytes: `u64 BE height` ‖
//! `u32 BE index` ‖ the 48-byte compressed G1 partial signature. Anything of another length, or
//! whose last 48 bytes are not a point of G1's prime-order subgroup, is not a message.
//!
//! **Kept** ([`Pool`]): verified partials only, at most one per (height, index), only for
//! heights in `(head, head + WINDOW]` where `head` is the committed head, so at most
//! `WINDOW × n` partials of 48 bytes (and their indices) at once; heights at or below the head
//! are forgotten as it moves.

use std::collections::BTreeMap;
use std::time::SystemTime;

use commonware_codec::{Copying, DecodeExt as _, Encode as _};
use commonware_cryptography::bls12381::primitives::group::G1;

/// Heights above the committed head whose shares are released, kept and gossiped. A beacon
/// is needed for the next height only, but the notarized chain may run a few blocks ahead of
/// what this validator has committed.
pub const WINDOW: u64 = 8;

/// Bytes of one share message (module docs).
pub const SHARE_MESSAGE_BYTES: usize = 8 + 4 + 48;

/// One share message: the partial signature of `height` by share `index`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareMessage {
    /// The height whose beacon it is a share of.
    pub height: u64,
    /// The share's index (its validator's participant position).
    pub index: u32,
    /// The partial signature.
    pub partial: G1,
}

impl ShareMessage {
    /// The 60 bytes (module docs).
    pub fn encode(&self) -> [u8; SHARE_MESSAGE_BYTES] {
        let mut out = [0u8; SHARE_MESSAGE_BYTES];
        out[..8].copy_from_slice(&self.height.to_be_bytes());
        out[8..12].copy_from_slice(&self.index.to_be_bytes());
        out[12..].copy_from_slice(self.partial.encode().as_ref());
        out
    }

    /// The message in `bytes`; `None` for anything else (another length, not a point).
    pub fn decode(bytes: &[u8]) -> Option<ShareMessage> {
        if bytes.len() != SHARE_MESSAGE_BYTES {
            return None;
        }
        let height = u64::from_be_bytes(bytes[..8].try_into().ok()?);
        let index = u32::from_be_bytes(bytes[8..12].try_into().ok()?);
        let partial = G1::decode(Copying(&bytes[12..])).ok()?;
        Some(ShareMessage {
            height,
            index,
            partial,
        })
    }
}

/// What becomes of a share offered to the pool before it is verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offer {
    /// Worth verifying: a height in the window, no share of that index kept yet.
    Fresh,
    /// A height outside the window.
    Stale,
    /// One of that height and index is kept, or that height's beacon is recovered already
    /// (no share of it is needed any more).
    Duplicate,
}

/// The shares of one height.
#[derive(Debug)]
struct Round {
    /// When the first share of this height was seen here (the runtime's clock).
    first_seen: SystemTime,
    /// Verified partials by index.
    partials: BTreeMap<u32, G1>,
    /// Whether its beacon was recovered.
    recovered: bool,
}

/// The verified shares of the heights in the window (module docs).
#[derive(Debug)]
pub struct Pool {
    threshold: usize,
    rounds: BTreeMap<u64, Round>,
}

impl Pool {
    /// An empty pool recovering beacons from `threshold` shares.
    pub fn new(threshold: u32) -> Pool {
        Pool {
            threshold: threshold as usize,
            rounds: BTreeMap::new(),
        }
    }

    /// Whether `height` is in the window above `head`.
    pub fn in_window(height: u64, head: u64) -> bool {
        height > head && height <= head.saturating_add(WINDOW)
    }

    /// What a share of `height` by `index` would be, with the committed head at `head`.
    pub fn offer(&self, height: u64, index: u32, head: u64) -> Offer {
        if !Self::in_window(height, head) {
            return Offer::Stale;
        }
        match self.rounds.get(&height) {
            Some(r) if r.recovered || r.partials.contains_key(&index) => Offer::Duplicate,
            _ => Offer::Fresh,
        }
    }

    /// Keeps a verified share, forgetting the heights at or below `head`. `false` when it is
    /// not [`Offer::Fresh`] (then nothing is kept).
    pub fn insert(&mut self, m: &ShareMessage, head: u64, now: SystemTime) -> bool {
        self.prune(head);
        if self.offer(m.height, m.index, head) != Offer::Fresh {
            return false;
        }
        self.rounds
            .entry(m.height)
            .or_insert_with(|| Round {
                first_seen: now,
                partials: BTreeMap::new(),
                recovered: false,
            })
            .partials
            .insert(m.index, m.partial);
        true
    }

    /// The partials of `height` when there are enough to recover its beacon and it was not
    /// recovered yet (the lowest indices first, as many as the threshold), with when its first
    /// share was seen.
    pub fn ready(&self, height: u64) -> Option<(Vec<(u32, G1)>, SystemTime)> {
        let r = self.rounds.get(&height)?;
        if r.recovered || r.partials.len() < self.threshold {
            return None;
        }
        let partials = r
            .partials
            .iter()
            .take(self.threshold)
            .map(|(i, p)| (*i, *p))
            .collect();
        Some((partials, r.first_seen))
    }

    /// Marks `height`'s beacon recovered (no further recovery is tried).
    pub fn recovered(&mut self, height: u64) {
        if let Some(r) = self.rounds.get_mut(&height) {
            r.recovered = true;
        }
    }

    /// Forgets the heights at or below `head`.
    pub fn prune(&mut self, head: u64) {
        self.rounds.retain(|h, _| *h > head);
    }

    /// Partials kept, over every height.
    pub fn len(&self) -> usize {
        self.rounds.values().map(|r| r.partials.len()).sum()
    }

    /// Whether no partial is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validator::beacon::share::deal;
    use commonware_cryptography::ed25519::PrivateKey;
    use commonware_cryptography::Signer as _;
    use commonware_utils::ordered::Set;

    fn partial(i: u32) -> G1 {
        let keys = (0..4u64).map(|s| PrivateKey::from_seed(s).public_key());
        let dealt = deal(
            &Set::from_iter_dedup(keys),
            commonware_utils::TestRng::new(7),
        )
        .unwrap();
        dealt.shares[i as usize].sign("c", 5)
    }

    #[test]
    fn messages_round_trip_and_garbage_is_refused() {
        let m = ShareMessage {
            height: 5,
            index: 2,
            partial: partial(2),
        };
        let bytes = m.encode();
        assert_eq!(bytes.len(), 60);
        assert_eq!(ShareMessage::decode(&bytes), Some(m));
        assert_eq!(ShareMessage::decode(&bytes[..59]), None);
        assert_eq!(
            ShareMessage::decode(&[bytes.as_slice(), &[0]].concat()),
            None
        );
        let mut bad = bytes;
        bad[12..].fill(0);
        assert_eq!(ShareMessage::decode(&bad), None, "not a point");
        let mut bad = bytes;
        bad[59] ^= 1;
        assert_eq!(ShareMessage::decode(&bad), None, "not on the curve");
    }

    #[test]
    fn the_pool_keeps_one_share_per_height_and_index_within_the_window() {
        let now = SystemTime::UNIX_EPOCH;
        let mut pool = Pool::new(3);
        let m = |height, index| ShareMessage {
            height,
            index,
            partial: partial(index),
        };
        assert_eq!(pool.offer(10, 0, 10), Offer::Stale, "committed");
        assert_eq!(pool.offer(11, 0, 10), Offer::Fresh);
        assert_eq!(pool.offer(18, 0, 10), Offer::Fresh);
        assert_eq!(pool.offer(19, 0, 10), Offer::Stale, "too far ahead");
        assert_eq!(pool.offer(u64::MAX, 0, u64::MAX - 1), Offer::Fresh);
        assert!(pool.insert(&m(11, 0), 10, now));
        assert_eq!(pool.offer(11, 0, 10), Offer::Duplicate);
        assert!(!pool.insert(&m(11, 0), 10, now));
        assert!(pool.insert(&m(11, 1), 10, now));
        assert!(pool.ready(11).is_none(), "two of three");
        assert!(pool.insert(&m(11, 3), 10, now));
        let (ready, _) = pool.ready(11).unwrap();
        assert_eq!(ready.iter().map(|(i, _)| *i).collect::<Vec<_>>(), [0, 1, 3]);
        pool.recovered(11);
        assert!(pool.ready(11).is_none(), "recovered once");
        assert_eq!(pool.offer(11, 2, 10), Offer::Duplicate, "no longer needed");
        assert!(pool.insert(&m(12, 2), 10, now));
        assert_eq!(pool.len(), 4);
        pool.prune(11);
        assert_eq!(pool.len(), 1);
        assert!(!pool.insert(&m(11, 2), 11, now), "at the head");
        pool.prune(12);
        assert!(pool.is_empty());
    }
}
