//! The per-block bounds: what all the transactions of one block may use together (fuel, bytes
//! of state written, bytes of events, bytes of transaction bodies). Consensus constants: a
//! block over any of them is invalid ([`TxRejection::BlockFull`] at the transaction that
//! crosses it), so a verifier never executes an unbounded block whatever a sequencer signs; a
//! sequencer's [`BlockBuilder`] leaves such a transaction for the next block. Every single
//! transaction fits in an empty block (the per-call bounds of ABI.md are far below these).

use super::*;

/// Most fuel the transactions of one block may use together (200 calls at the full
/// `fuel_apply`; a tic-tac-toe move is about 58,000).
pub const MAX_BLOCK_FUEL: u64 = 2_000_000_000;

/// Most bytes of state (key + value of every write, key of every delete) the transactions of
/// one block may write together (32 MiB; a deploy writes its code, at most 1 MiB).
pub const MAX_BLOCK_WRITE_BYTES: u64 = 32 << 20;

/// Most bytes of events (kind + compact JSON data) in one block's receipts (8 MiB).
pub const MAX_BLOCK_EVENT_BYTES: u64 = 8 << 20;

/// Most bytes of transaction bodies in one block (32 MiB).
pub const MAX_BLOCK_BODY_BYTES: u64 = 32 << 20;

/// Most fuel the scheduled calls of one block may be given together: half of
/// [`MAX_BLOCK_FUEL`], so transactions always keep the other half. A block takes due calls in
/// order until the next would pass it (the first always runs, so the queue always moves); 64
/// calls at a `fuel_apply` of 10,000,000 use 640,000,000. Their writes (at most 64 × 256 KiB)
/// and events (64 × 64 KiB) stay within half of those bounds by the per-call bounds alone.
pub const MAX_SCHEDULED_BLOCK_FUEL: u64 = MAX_BLOCK_FUEL / 2;

// The sealed calls of a round all run in its block, before the ordinary ones: their bound fits
// in the scheduled calls' half.
const _: () = assert!(gamechain_sdk::schedule::MAX_SEALED_ROUND_FUEL <= MAX_SCHEDULED_BLOCK_FUEL);

/// What a block's transactions have used of the bounds so far.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct BlockUse {
    /// Fuel (receipts' `fuel_used`).
    pub fuel: u64,
    /// Bytes of state written.
    pub written: u64,
    /// Bytes of events.
    pub event_bytes: u64,
    /// Bytes of transaction bodies.
    pub body_bytes: u64,
}

impl BlockUse {
    /// The use of one transaction: its receipt, its writes and its body length.
    pub fn of(receipt: &Receipt, writes: &WriteSet, body_bytes: usize) -> Self {
        let written = writes
            .iter()
            .map(|(k, v)| (k.len() + v.as_ref().map_or(0, Vec::len)) as u64)
            .sum();
        let event_bytes = receipt
            .events
            .iter()
            .map(|e| (e.kind.len() + e.data.to_string().len()) as u64)
            .sum();
        BlockUse {
            fuel: receipt.fuel_used,
            written,
            event_bytes,
            body_bytes: body_bytes as u64,
        }
    }

    /// `self + other` without checking the bounds (scheduled calls: always run, bounded by
    /// [`MAX_SCHEDULED_BLOCK_FUEL`] and the per-call bounds).
    pub fn saturating_add(self, other: BlockUse) -> BlockUse {
        BlockUse {
            fuel: self.fuel.saturating_add(other.fuel),
            written: self.written.saturating_add(other.written),
            event_bytes: self.event_bytes.saturating_add(other.event_bytes),
            body_bytes: self.body_bytes.saturating_add(other.body_bytes),
        }
    }

    /// `self + other`, or the first bound it crosses: `(name, limit)`.
    pub fn add(self, other: BlockUse) -> Result<BlockUse, (&'static str, u64)> {
        let sum = BlockUse {
            fuel: self.fuel.saturating_add(other.fuel),
            written: self.written.saturating_add(other.written),
            event_bytes: self.event_bytes.saturating_add(other.event_bytes),
            body_bytes: self.body_bytes.saturating_add(other.body_bytes),
        };
        for (name, used, limit) in [
            ("fuel", sum.fuel, MAX_BLOCK_FUEL),
            ("bytes written", sum.written, MAX_BLOCK_WRITE_BYTES),
            ("bytes of events", sum.event_bytes, MAX_BLOCK_EVENT_BYTES),
            (
                "bytes of transaction bodies",
                sum.body_bytes,
                MAX_BLOCK_BODY_BYTES,
            ),
        ] {
            if used > limit {
                return Err((name, limit));
            }
        }
        Ok(sum)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_block_bound_holds_at_its_limit() {
        let full = BlockUse {
            fuel: MAX_BLOCK_FUEL,
            written: MAX_BLOCK_WRITE_BYTES,
            event_bytes: MAX_BLOCK_EVENT_BYTES,
            body_bytes: MAX_BLOCK_BODY_BYTES,
        };
        assert_eq!(BlockUse::default().add(full), Ok(full));
        let one = |f: fn(&mut BlockUse)| {
            let mut u = BlockUse::default();
            f(&mut u);
            full.add(u).unwrap_err().0
        };
        assert_eq!(one(|u| u.fuel = 1), "fuel");
        assert_eq!(one(|u| u.written = 1), "bytes written");
        assert_eq!(one(|u| u.event_bytes = 1), "bytes of events");
        assert_eq!(one(|u| u.body_bytes = 1), "bytes of transaction bodies");
    }
}
