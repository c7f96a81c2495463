//! The fee schedule: what a chain charges a transaction's sender, in GOLD, for the resources the
//! transaction used. Part of the genesis file (`"fees"`, absent on a chain without fees, the
//! dev default) and so of the genesis hash and of every state root.
//!
//! Every price is in **micro base units**: millionths of one GOLD base unit (1 GOLD = 100 base
//! units = 100,000,000 micro units), so that a price per fuel unit or per byte can be small. A
//! transaction's fee is
//!
//! ```text
//! fee = ceil((tx_micro + fuel_used × fuel_micro + bytes_written × write_byte_micro
//!             + event_bytes × event_byte_micro) / 1,000,000)   base units
//! ```
//!
//! in exact u128 arithmetic (saturating at `u128::MAX`, which no balance reaches). `fuel_used`
//! is the receipt's; `bytes_written` is key + value of every state write the transaction keeps
//! (key of a delete), `event_bytes` is kind + compact JSON data of every event in its receipt:
//! the same measures as the per-block bounds. A failed transaction keeps no writes and no events,
//! so it pays `tx_micro` and its fuel. The **minimum fee** (`ceil(tx_micro / 1,000,000)`) is what
//! a transaction costs at the least; the rules of charging are in the transition
//! (`runtime/src/transition/fees.rs`).

use std::io;

use borsh::BorshSerialize;
use serde::{Deserialize, Serialize};

use gamechain_sdk::Amount;

/// Micro base units per base unit.
pub const MICRO_PER_BASE_UNIT: u128 = 1_000_000;

/// A chain's prices (see the module docs); every price a decimal string of micro base units.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeeSchedule {
    /// The account credited with every fee: an address of the chain's network.
    pub collector: String,
    /// Price of one transaction, micro base units.
    pub tx_micro: Amount,
    /// Price of one unit of fuel, micro base units.
    pub fuel_micro: Amount,
    /// Price of one byte of state written, micro base units.
    pub write_byte_micro: Amount,
    /// Price of one byte of events, micro base units.
    pub event_byte_micro: Amount,
}

/// What a transaction used that has a price.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FeeUse {
    /// The receipt's `fuel_used`.
    pub fuel: u64,
    /// Bytes of state written (kept writes only).
    pub bytes_written: u64,
    /// Bytes of events in the receipt.
    pub event_bytes: u64,
}

impl FeeSchedule {
    /// The fee of a transaction that used `u`, base units (rounded up).
    pub fn fee(&self, u: FeeUse) -> u128 {
        let micro = self
            .tx_micro
            .0
            .saturating_add(u128::from(u.fuel).saturating_mul(self.fuel_micro.0))
            .saturating_add(u128::from(u.bytes_written).saturating_mul(self.write_byte_micro.0))
            .saturating_add(u128::from(u.event_bytes).saturating_mul(self.event_byte_micro.0));
        micro.div_ceil(MICRO_PER_BASE_UNIT)
    }

    /// The least any transaction pays: [`fee`](Self::fee) of nothing used, base units.
    pub fn minimum(&self) -> u128 {
        self.fee(FeeUse::default())
    }

    /// Whether every price is zero (such a schedule charges nothing).
    pub fn is_free(&self) -> bool {
        [
            self.tx_micro,
            self.fuel_micro,
            self.write_byte_micro,
            self.event_byte_micro,
        ]
        .iter()
        .all(|a| a.0 == 0)
    }
}

impl BorshSerialize for FeeSchedule {
    /// `collector` String ‖ `tx_micro` ‖ `fuel_micro` ‖ `write_byte_micro` ‖ `event_byte_micro`
    /// (u128 LE each).
    fn serialize<W: io::Write>(&self, w: &mut W) -> io::Result<()> {
        BorshSerialize::serialize(&self.collector, w)?;
        for a in [
            self.tx_micro,
            self.fuel_micro,
            self.write_byte_micro,
            self.event_byte_micro,
        ] {
            BorshSerialize::serialize(&a.0, w)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schedule(tx: u128, fuel: u128, write: u128, event: u128) -> FeeSchedule {
        FeeSchedule {
            collector: "x".into(),
            tx_micro: Amount(tx),
            fuel_micro: Amount(fuel),
            write_byte_micro: Amount(write),
            event_byte_micro: Amount(event),
        }
    }

    #[test]
    fn the_fee_is_the_documented_sum_rounded_up() {
        let s = schedule(1_000_000, 10, 1_000, 500);
        let u = FeeUse {
            fuel: 58_000,
            bytes_written: 300,
            event_bytes: 200,
        };
        // 1,000,000 + 580,000 + 300,000 + 100,000 = 1,980,000 micro → 2 base units.
        assert_eq!(s.fee(u), 2);
        assert_eq!(s.minimum(), 1);
        assert_eq!(
            schedule(1, 0, 0, 0).minimum(),
            1,
            "any part of a unit rounds up"
        );
        assert_eq!(schedule(0, 0, 0, 0).fee(u), 0);
        assert!(schedule(0, 0, 0, 0).is_free() && !s.is_free());
    }

    #[test]
    fn huge_prices_saturate_instead_of_wrapping() {
        let s = schedule(u128::MAX, u128::MAX, u128::MAX, u128::MAX);
        let u = FeeUse {
            fuel: u64::MAX,
            bytes_written: u64::MAX,
            event_bytes: u64::MAX,
        };
        assert_eq!(s.fee(u), u128::MAX.div_ceil(MICRO_PER_BASE_UNIT));
    }

    #[test]
    fn json_shape() {
        let s = schedule(2_000_000, 1, 0, 7);
        let text = serde_json::to_string(&s).unwrap();
        assert_eq!(
            text,
            r#"{"collector":"x","tx_micro":"2000000","fuel_micro":"1","write_byte_micro":"0","event_byte_micro":"7"}"#
        );
        assert_eq!(serde_json::from_str::<FeeSchedule>(&text).unwrap(), s);
        assert!(serde_json::from_str::<FeeSchedule>(r#"{"collector":"x"}"#).is_err());
    }
}
