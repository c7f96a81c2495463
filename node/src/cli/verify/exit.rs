//! The exit codes of `gamechain verify` (also `verify --game`), one per outcome a script can
//! act on; 0 is a verified chain.

/// Exit code of `gamechain verify` when the chain diverges from its replay.
pub const EXIT_DIVERGED: u8 = 4;
/// Exit code of `gamechain verify` when the replay could not run.
pub const EXIT_ERROR: u8 = 1;
/// Exit code of `gamechain verify` when a chain with validators replays but blocks up to its
/// head are not covered by any finality certificate.
pub const EXIT_NOT_FINAL: u8 = 5;
/// Exit code of `gamechain verify` when the source holds evidence of a faulty validator that
/// does not verify or does not show a conflict.
pub const EXIT_BAD_EVIDENCE: u8 = 6;
