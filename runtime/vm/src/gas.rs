//! The gas table of ABI version 1 (ABI.md, "Gas table"): the fuel every host call is charged on
//! top of the per-operator fuel the instrumentation counts (`load/instrument/meter.rs`). Host functions charge from [`GAS_V1`] only; the table is
//! part of [`crate::RuntimeConfig::config_hash`].

/// Fuel charged by host calls. All values are fuel units (the same units as the per-operator
/// fuel of `meter.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GasTable {
    /// Charged by every host call before it does anything.
    pub host_call_base: u64,
    /// Per byte the host reads from guest memory (keys, values, op text, …).
    pub per_byte_in: u64,
    /// Per byte the host writes into guest memory (only bytes actually written).
    pub per_byte_out: u64,
    /// Per byte of key (as the module passed it, relative) and value written by `put`.
    pub per_byte_stored: u64,
    /// Per byte of event kind and data (as the module passed them).
    pub per_byte_event: u64,
    /// Per entry in a scan result (charged whether or not the result fits the buffer).
    pub per_scan_entry: u64,
    /// `verify_signed`: the public-key recovery of one Divi signed message (secp256k1
    /// recovery, SHA-256d of the message, hash160 of the key), charged whatever the signature.
    pub verify_signed: u64,
    /// `call_pure`: the callee's instance (lease, instantiation or reset, input placement),
    /// charged on top of the fuel the callee itself uses.
    pub pure_call_base: u64,
}

/// The gas table of ABI version 1.
pub const GAS_V1: GasTable = GasTable {
    host_call_base: 200,
    per_byte_in: 1,
    per_byte_out: 1,
    per_byte_stored: 10,
    per_byte_event: 5,
    per_scan_entry: 50,
    verify_signed: 60_000,
    pure_call_base: 10_000,
};

impl GasTable {
    /// Canonical text of the table for [`crate::RuntimeConfig::config_hash`]: one
    /// `gas.<name>=<value>` line per entry, in table order.
    pub fn canonical(&self) -> String {
        let GasTable {
            host_call_base,
            per_byte_in,
            per_byte_out,
            per_byte_stored,
            per_byte_event,
            per_scan_entry,
            verify_signed,
            pure_call_base,
        } = self;
        format!(
            "gas.host_call_base={host_call_base}\ngas.per_byte_in={per_byte_in}\ngas.per_byte_out={per_byte_out}\n\
             gas.per_byte_stored={per_byte_stored}\ngas.per_byte_event={per_byte_event}\n\
             gas.per_scan_entry={per_scan_entry}\ngas.verify_signed={verify_signed}\n\
             gas.pure_call_base={pure_call_base}\n"
        )
    }
}

/// `schedule`'s charge on top of the base, the payload's bytes and the fuel the scheduled call
/// gets: the queue record, its index and count written, and the instance the block will run it
/// in (as `pure_call_base`). Part of ABI revision 2 (`abi.rs`): a line of the configuration's
/// canonical description from that revision on (`config.rs`), not of [`GasTable::canonical`],
/// so revision 1's text, and the hash of every chain made before it, is unchanged.
pub const SCHEDULE_BASE: u64 = 20_000;

/// `cancel_scheduled`'s charge on top of the base: the index read and the three keys removed.
pub const CANCEL_SCHEDULED_BASE: u64 = 2_000;

/// Charged to every `seal` call, accepted or refused, once its buffers are read: the
/// envelope's proof check (two G2 multiplications, 0.42 ms here, charged about as much as that
/// long a run of wasm). Part of ABI revision 3.
pub const SEAL_CHECK_BASE: u64 = 2_500_000;

/// Charged when a sealed call is scheduled (`schedule_sealed`), on top of `SCHEDULE_BASE` and
/// the call's fuel: its opening in the block of its round (a pairing and a G2 multiplication,
/// 0.9 ms here; the work a block does on openings is bounded by the 32 sealed calls a round
/// takes, not by this charge, which keeps a two-seat game's start within `fuel_apply`). Part of
/// ABI revision 3.
pub const SEAL_OPEN_BASE: u64 = 2_000_000;

/// `len` bytes at `per_byte` fuel each, saturating (a saturated charge always runs out of fuel).
pub(crate) fn bytes(per_byte: u64, len: usize) -> u64 {
    per_byte.saturating_mul(len as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_matches_abi_md() {
        assert_eq!(
            GAS_V1.canonical(),
            "gas.host_call_base=200\ngas.per_byte_in=1\ngas.per_byte_out=1\ngas.per_byte_stored=10\n\
             gas.per_byte_event=5\ngas.per_scan_entry=50\ngas.verify_signed=60000\n\
             gas.pure_call_base=10000\n"
        );
        assert_eq!(bytes(10, 3), 30);
        assert_eq!(bytes(u64::MAX, 2), u64::MAX);
    }
}
