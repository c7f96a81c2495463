//! Calls into other modules and signatures, as a module sees them (ABI.md, "Calls into other
//! modules" and "Signatures"): [`PureError`], the fixed reasons a `call_pure` or `call_code`
//! returns no bytes, shared by the host (`gamechain-vm`) and guests so both read the same codes.

use core::fmt;

/// Fuel a module gives a pure call when it names no limit of its own: 1,000,000 (a tenth of a
/// transaction's default budget).
pub const DEFAULT_PURE_FUEL: u64 = 1_000_000;

/// Why a pure call (`Ctx::call_pure`, `Ctx::call_code`) returned no bytes. The host function
/// returns [`PureError::code`]; nothing of the callee's own failure text crosses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PureError {
    /// No module with that id (`call_pure`), no stored code with that hash or code that does
    /// not load (`call_code`), no `gc_pure_<name>` export of type `(i32, i32) -> i64`, or an
    /// invalid name (1–64 of `a-z`, `0-9`, `_`). Code `-1`.
    NotFound,
    /// The entry point returned a negative value: it refused the input. Code `-2`.
    Refused,
    /// The callee trapped: a wasm trap, a write (it is read-only), a state, bank or context
    /// import inside a call by code hash, a stack or memory limit, or a result range outside
    /// its memory. Code `-3`.
    Trapped,
    /// The callee used up the fuel it was given. Code `-4`.
    OutOfFuel,
    /// The call would be nested deeper than the host allows (2). Code `-5`.
    TooDeep,
    /// The result is over 65,536 bytes. Code `-6`.
    OutputTooLarge,
}

impl PureError {
    /// The `i64` the `call_pure` import returns for this error.
    pub fn code(self) -> i64 {
        match self {
            Self::NotFound => -1,
            Self::Refused => -2,
            Self::Trapped => -3,
            Self::OutOfFuel => -4,
            Self::TooDeep => -5,
            Self::OutputTooLarge => -6,
        }
    }

    /// The error of a negative `call_pure` result; `None` for other values.
    pub fn from_code(code: i64) -> Option<Self> {
        Some(match code {
            -1 => Self::NotFound,
            -2 => Self::Refused,
            -3 => Self::Trapped,
            -4 => Self::OutOfFuel,
            -5 => Self::TooDeep,
            -6 => Self::OutputTooLarge,
            _ => return None,
        })
    }

    /// A fixed text (receipts may carry it).
    pub fn message(self) -> &'static str {
        match self {
            Self::NotFound => "no such module, code or pure entry point",
            Self::Refused => "the entry point refused the input",
            Self::Trapped => "the callee trapped",
            Self::OutOfFuel => "the callee ran out of fuel",
            Self::TooDeep => "calls nested too deep",
            Self::OutputTooLarge => "the callee's result is over 65536 bytes",
        }
    }
}

impl fmt::Display for PureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        for e in [
            PureError::NotFound,
            PureError::Refused,
            PureError::Trapped,
            PureError::OutOfFuel,
            PureError::TooDeep,
            PureError::OutputTooLarge,
        ] {
            assert_eq!(PureError::from_code(e.code()), Some(e));
        }
        assert_eq!(PureError::from_code(0), None);
        assert_eq!(PureError::from_code(-7), None);
    }
}
