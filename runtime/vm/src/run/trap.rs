//! Every way a call can fail, and the one place that turns a failure into a receipt text.
//!
//! - [`HostTrap`]: a trap raised by the host (a host function, the resource limiter or the call
//!   driver), carried through `wasmtime::Error` and downcast at the end of the call.
//! - `wasmtime::Trap`: a trap raised by wasm code.
//! - [`HostError`]: a failure of the node, not of the module (pool exhausted, engine bug). It
//!   never becomes a receipt: the caller must not commit the block it was building.
//!
//! [`classify`] maps a `wasmtime::Error` to the fixed ABI.md text (`ActionError::Internal`) or to
//! a `HostError`. No wasmtime `Display` text ever reaches an `ActionError`.

use core::fmt;

use gamechain_sdk::ActionError;
use wasmtime::Trap;

/// A trap raised by the host. Each maps to one fixed text of ABI.md ("Fixed error texts").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostTrap {
    /// The fuel ran out during a host call's charge.
    OutOfFuel,
    /// `memory.grow` past the memory limit (raised by the resource limiter).
    MemoryLimit,
    /// The guest called `abort`.
    Panicked,
    /// A `(ptr, len)` outside the memory, or a negative length.
    BadPointer,
    /// Text that is not UTF-8.
    InvalidUtf8,
    /// `emit` with data that is not JSON.
    BadEventJson,
    /// A write from `gc_view`.
    ReadOnly,
    /// A bad return code, output or error object.
    MalformedOutput,
    /// `gc_alloc` returned 0 or a range outside the memory.
    AllocFailed,
    /// The logical stack height passed [`crate::STACK_LIMIT`] (`stack.rs`): raised by the host
    /// when an instrumented stack check trapped.
    StackLimit,
    /// A `put` or `delete` key over `bounds::MAX_KEY_BYTES`.
    KeyTooLong,
    /// One call's writes over `bounds::MAX_CALL_WRITE_BYTES`.
    WriteLimit,
    /// One call's events over `bounds::MAX_CALL_EVENTS` or `bounds::MAX_CALL_EVENT_BYTES`.
    EventLimit,
    /// An `output` over `bounds::MAX_OUTPUT_BYTES`.
    OutputLimit,
    /// A state, bank, context or module import called inside a call by code hash
    /// (`call_code`), which runs with no state at all.
    NoState,
    /// `draw` outside a scheduled call of a chain with a beacon.
    NoDraw,
}

impl HostTrap {
    /// The fixed receipt text, without the `internal: ` prefix.
    pub fn message(self) -> &'static str {
        match self {
            Self::OutOfFuel => "out of fuel",
            Self::MemoryLimit => "memory limit exceeded",
            Self::Panicked => "module panicked",
            Self::BadPointer => "bad pointer from module",
            Self::InvalidUtf8 => "invalid UTF-8 from module",
            Self::BadEventJson => "event data is not valid JSON",
            Self::ReadOnly => "state is read-only in a view",
            Self::MalformedOutput => "malformed module output",
            Self::AllocFailed => "guest allocation failed",
            Self::StackLimit => "trap: stack limit exceeded",
            Self::KeyTooLong => "key longer than 1024 bytes",
            Self::WriteLimit => "state writes over 262144 bytes in one call",
            Self::EventLimit => "more than 256 events or 65536 bytes of events in one call",
            Self::OutputLimit => "output over 1048576 bytes",
            Self::NoState => "no state in a call by code hash",
            Self::NoDraw => gamechain_sdk::schedule::NO_DRAW,
        }
    }

    /// The error a receipt carries: `ActionError::Internal(self.message())`.
    pub fn to_action_error(self) -> ActionError {
        ActionError::internal(self.message())
    }
}

impl fmt::Display for HostTrap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for HostTrap {}

/// A failure of the node rather than of the module: the transaction has no receipt and the
/// block being built must not be committed (or the call must be retried later).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostError {
    /// The pooling allocator refused an instance (all slots in use).
    PoolExhausted(String),
    /// Instantiation or a call failed for a reason that is not the module's fault (an engine
    /// bug, the OS refusing memory, …). The text is wasmtime's, for the node's log only.
    Engine(String),
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::PoolExhausted(e) => write!(f, "wasm instance pool exhausted: {e}"),
            Self::Engine(e) => write!(f, "wasm engine failure: {e}"),
        }
    }
}

impl std::error::Error for HostError {}

/// The fixed text for a trap raised by wasm code (without the `internal: ` prefix).
pub fn wasm_trap_message(trap: Trap) -> &'static str {
    match trap {
        Trap::OutOfFuel => "out of fuel",
        Trap::UnreachableCodeReached => "trap: unreachable",
        Trap::IntegerDivisionByZero => "trap: integer divide by zero",
        Trap::IntegerOverflow => "trap: integer overflow",
        Trap::BadConversionToInteger => "trap: invalid conversion to integer",
        Trap::MemoryOutOfBounds => "trap: out of bounds memory access",
        Trap::TableOutOfBounds | Trap::IndirectCallToNull | Trap::BadSignature => {
            "trap: indirect call"
        }
        Trap::StackOverflow => "trap: stack overflow",
        _ => "trap",
    }
}

/// Maps the error of an instantiation or a call to what the caller reports: `Ok(receipt error)`
/// for anything the module caused, `Err(HostError)` for node-side failures.
///
/// Order: a [`HostTrap`] anywhere in the error chain wins (the host raised it on purpose), then a
/// `wasmtime::Trap`, then pool exhaustion; anything else is an engine failure.
pub fn classify(err: &wasmtime::Error) -> Result<ActionError, HostError> {
    if let Some(t) = err.downcast_ref::<HostTrap>() {
        return Ok(t.to_action_error());
    }
    if let Some(t) = err.downcast_ref::<Trap>() {
        return Ok(ActionError::internal(wasm_trap_message(*t)));
    }
    if err
        .downcast_ref::<wasmtime::PoolConcurrencyLimitError>()
        .is_some()
    {
        return Err(HostError::PoolExhausted(format!("{err:?}")));
    }
    Err(HostError::Engine(format!("{err:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_traps_map_to_the_fixed_texts() {
        let table = [
            (HostTrap::OutOfFuel, "internal: out of fuel"),
            (HostTrap::MemoryLimit, "internal: memory limit exceeded"),
            (HostTrap::Panicked, "internal: module panicked"),
            (HostTrap::BadPointer, "internal: bad pointer from module"),
            (HostTrap::InvalidUtf8, "internal: invalid UTF-8 from module"),
            (
                HostTrap::BadEventJson,
                "internal: event data is not valid JSON",
            ),
            (HostTrap::ReadOnly, "internal: state is read-only in a view"),
            (
                HostTrap::MalformedOutput,
                "internal: malformed module output",
            ),
            (HostTrap::AllocFailed, "internal: guest allocation failed"),
            (HostTrap::StackLimit, "internal: trap: stack limit exceeded"),
            (HostTrap::KeyTooLong, "internal: key longer than 1024 bytes"),
            (
                HostTrap::WriteLimit,
                "internal: state writes over 262144 bytes in one call",
            ),
            (
                HostTrap::EventLimit,
                "internal: more than 256 events or 65536 bytes of events in one call",
            ),
            (HostTrap::OutputLimit, "internal: output over 1048576 bytes"),
            (
                HostTrap::NoState,
                "internal: no state in a call by code hash",
            ),
        ];
        for (trap, text) in table {
            let err = wasmtime::Error::new(trap);
            assert_eq!(classify(&err).unwrap().to_string(), text);
            // Context added on the way out (e.g. a backtrace) does not hide the trap.
            assert_eq!(
                classify(&err.context("while calling gc_apply"))
                    .unwrap()
                    .to_string(),
                text
            );
        }
    }

    #[test]
    fn wasm_traps_map_to_the_fixed_texts() {
        let table = [
            (Trap::OutOfFuel, "internal: out of fuel"),
            (Trap::UnreachableCodeReached, "internal: trap: unreachable"),
            (
                Trap::IntegerDivisionByZero,
                "internal: trap: integer divide by zero",
            ),
            (Trap::IntegerOverflow, "internal: trap: integer overflow"),
            (
                Trap::BadConversionToInteger,
                "internal: trap: invalid conversion to integer",
            ),
            (
                Trap::MemoryOutOfBounds,
                "internal: trap: out of bounds memory access",
            ),
            (Trap::TableOutOfBounds, "internal: trap: indirect call"),
            (Trap::IndirectCallToNull, "internal: trap: indirect call"),
            (Trap::BadSignature, "internal: trap: indirect call"),
            (Trap::StackOverflow, "internal: trap: stack overflow"),
            (Trap::HeapMisaligned, "internal: trap"),
            (Trap::Interrupt, "internal: trap"),
            (Trap::NullReference, "internal: trap"),
        ];
        for (trap, text) in table {
            assert_eq!(
                classify(&wasmtime::Error::new(trap)).unwrap().to_string(),
                text
            );
        }
    }

    #[test]
    fn other_failures_are_host_errors() {
        assert!(matches!(
            classify(&wasmtime::Error::msg("mmap failed")),
            Err(HostError::Engine(_))
        ));
    }
}
