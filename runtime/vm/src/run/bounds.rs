//! The per-call resource bounds of one entry-point call (`gc_apply`, `gc_view`,
//! `gc_end_block`, `gc_migrate`): bytes of state written, events and their bytes, key length,
//! output bytes. Consensus rules (in the config hash, ABI.md "Per-call bounds"): fuel already
//! bounds each of these, but loosely (a transaction could write ~900 KB or emit ~1.6 MB of
//! events on its fuel); these bounds make what one transaction adds to a block, and what one
//! view hands the node, small and fixed. Each is checked before the bytes are charged or
//! copied, and breaking one traps with its fixed text.

use crate::run::trap::HostTrap;

/// Longest key a `put` or `delete` may name, bytes (relative to the module's prefix).
pub const MAX_KEY_BYTES: usize = 1024;

/// Most bytes of state one call may write: the key and value bytes of every `put`, plus the
/// key bytes of every `delete` (256 KiB).
pub const MAX_CALL_WRITE_BYTES: u64 = 256 << 10;

/// Most events one call may emit.
pub const MAX_CALL_EVENTS: u32 = 256;

/// Most bytes of event kind and data one call may emit (64 KiB).
pub const MAX_CALL_EVENT_BYTES: u64 = 64 << 10;

/// Largest `output` (a view's answer, an op's output), bytes (1 MiB).
pub const MAX_OUTPUT_BYTES: usize = 1 << 20;

/// What one call has used of its bounds; reset at the start of every call.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct CallUse {
    written: u64,
    events: u32,
    event_bytes: u64,
}

impl CallUse {
    /// A `put` of `key` and `value` bytes (a `delete`: `value` 0).
    pub(crate) fn write(&mut self, key: usize, value: usize) -> Result<(), HostTrap> {
        if key > MAX_KEY_BYTES {
            return Err(HostTrap::KeyTooLong);
        }
        let written = self.written + (key + value) as u64;
        if written > MAX_CALL_WRITE_BYTES {
            return Err(HostTrap::WriteLimit);
        }
        self.written = written;
        Ok(())
    }

    /// An event of `bytes` bytes (kind and data).
    pub(crate) fn event(&mut self, bytes: usize) -> Result<(), HostTrap> {
        let event_bytes = self.event_bytes + bytes as u64;
        if self.events >= MAX_CALL_EVENTS || event_bytes > MAX_CALL_EVENT_BYTES {
            return Err(HostTrap::EventLimit);
        }
        self.events += 1;
        self.event_bytes = event_bytes;
        Ok(())
    }
}

/// An `output` of `bytes` bytes.
pub(crate) fn output(bytes: usize) -> Result<(), HostTrap> {
    if bytes > MAX_OUTPUT_BYTES {
        return Err(HostTrap::OutputLimit);
    }
    Ok(())
}

/// The bounds as `key=value` lines for the config hash.
pub(crate) fn canonical() -> String {
    format!(
        "bounds.max_key_bytes={MAX_KEY_BYTES}\nbounds.max_call_write_bytes={MAX_CALL_WRITE_BYTES}\n\
         bounds.max_call_events={MAX_CALL_EVENTS}\nbounds.max_call_event_bytes={MAX_CALL_EVENT_BYTES}\n\
         bounds.max_output_bytes={MAX_OUTPUT_BYTES}\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_bound_holds_exactly_at_its_limit() {
        let mut u = CallUse::default();
        assert_eq!(u.write(MAX_KEY_BYTES + 1, 0), Err(HostTrap::KeyTooLong));
        u.write(MAX_KEY_BYTES, MAX_CALL_WRITE_BYTES as usize - MAX_KEY_BYTES)
            .unwrap();
        assert_eq!(u.write(1, 0), Err(HostTrap::WriteLimit));
        let mut u = CallUse::default();
        u.event(MAX_CALL_EVENT_BYTES as usize).unwrap();
        assert_eq!(u.event(0).map_err(|e| e.message()), Ok(()));
        assert_eq!(u.event(1), Err(HostTrap::EventLimit));
        let mut u = CallUse::default();
        for _ in 0..MAX_CALL_EVENTS {
            u.event(1).unwrap();
        }
        assert_eq!(u.event(0), Err(HostTrap::EventLimit));
        assert!(output(MAX_OUTPUT_BYTES).is_ok());
        assert_eq!(output(MAX_OUTPUT_BYTES + 1), Err(HostTrap::OutputLimit));
    }

    #[test]
    fn the_texts_name_the_limits() {
        assert_eq!(
            HostTrap::WriteLimit.message(),
            format!("state writes over {MAX_CALL_WRITE_BYTES} bytes in one call")
        );
        assert_eq!(
            HostTrap::KeyTooLong.message(),
            format!("key longer than {MAX_KEY_BYTES} bytes")
        );
        assert_eq!(
            HostTrap::EventLimit.message(),
            format!(
                "more than {MAX_CALL_EVENTS} events or {MAX_CALL_EVENT_BYTES} bytes of events \
                 in one call"
            )
        );
        assert_eq!(
            HostTrap::OutputLimit.message(),
            format!("output over {MAX_OUTPUT_BYTES} bytes")
        );
    }
}
