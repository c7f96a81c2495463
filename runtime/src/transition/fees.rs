//! Charging fees: how a block takes a transaction's fee (the chain's [`FeeSchedule`], genesis
//! `fees`) from its sender and credits the collector. Nothing happens on a chain without fees.
//!
//! After the action ran (its writes not yet merged):
//!
//! 1. `fee` = the schedule's fee of what the action used: its receipt's fuel, the bytes of the
//!    state writes it keeps, the bytes of its events (a failed action keeps neither, so it pays
//!    the per-transaction price and its fuel). `available` = the sender's GOLD balance with the
//!    action's writes applied.
//! 2. A successful action whose fee is more than `available` is undone: its receipt becomes
//!    ``invalid: the fee of <fee> base units is more than the sender's GOLD balance after the
//!    transaction (<available>)``, its writes and events are dropped, its fuel is kept, and the
//!    fee and `available` are computed again for the failed transaction.
//! 3. If `available` is less than the schedule's minimum (the price of a transaction that used
//!    nothing), the transaction cannot be in the block at all ([`TxRejection::CannotPayFee`]):
//!    a sequencer leaves it out, a block that includes it is invalid. So a key with no GOLD can
//!    never get a transaction included, and a faucet call from a new key is included (the faucet
//!    pays first).
//! 4. `min(fee, available)` moves from the sender to the collector (nothing moves when they are
//!    the same account) and is the receipt's `fee`: a failed transaction that used more than its
//!    sender holds pays what it holds.

use super::*;
use crate::chain::{FeeSchedule, FeeUse};

/// The priced use of an action's outcome (the same measures as the block bounds).
fn fee_use(outcome: &ActionOutcome) -> FeeUse {
    let u = BlockUse::of(&outcome.receipt, &outcome.writes, 0);
    FeeUse {
        fuel: u.fuel,
        bytes_written: u.written,
        event_bytes: u.event_bytes,
    }
}

/// The fee `outcome` would be charged as it stands (before [`charge`], which may undo it).
pub(super) fn estimate(fees: &FeeSchedule, outcome: &ActionOutcome) -> u128 {
    fees.fee(fee_use(outcome))
}

/// Applies the module docs' rules to `outcome`, the action of `sender` run over `base`: returns
/// the outcome to merge (the fee's balance writes included, `receipt.fee` set), or the reason
/// the transaction cannot be included.
pub(super) fn charge(
    fees: &FeeSchedule,
    base: &dyn State,
    sender: &str,
    mut outcome: ActionOutcome,
) -> Result<ActionOutcome, TxRejection> {
    let mut fee = fees.fee(fee_use(&outcome));
    let mut kv = Overlay::new(base);
    kv.writes = std::mem::take(&mut outcome.writes);
    let mut available = ledger::balance(&kv, sender, GOLD);
    if outcome.receipt.ok && fee > available {
        let fuel = outcome.receipt.fuel_used;
        outcome.receipt = Receipt::failure(
            ActionError::invalid(format!(
                "the fee of {fee} base units is more than the sender's GOLD balance after the \
                 transaction ({available})"
            )),
            fuel,
        );
        kv.writes.clear();
        available = ledger::balance(&kv, sender, GOLD);
        fee = fees.fee(fee_use(&outcome));
    }
    let minimum = fees.minimum();
    if available < minimum {
        return Err(TxRejection::CannotPayFee {
            minimum,
            balance: available,
        });
    }
    let paid = fee.min(available);
    ledger::transfer(&mut kv, sender, &fees.collector, GOLD, paid).map_err(|_| {
        // Unreachable: `paid` ≤ the balance, and a valid genesis names a valid collector.
        TxRejection::CannotPayFee {
            minimum,
            balance: available,
        }
    })?;
    outcome.writes = kv.writes;
    outcome.receipt.fee = gamechain_sdk::Amount(paid);
    Ok(outcome)
}
