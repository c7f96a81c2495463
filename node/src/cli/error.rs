//! [`CliError`]: why a `gamechain` command failed, its one stderr line and its exit code.

use std::fmt;

use gamechain_client::client::ClientError;

/// Process exit code of a transaction that is in a block with `ok: false`.
pub const EXIT_TX_FAILED: u8 = 3;

/// Why a command failed; its `Display` is the one line printed on stderr.
#[derive(Debug)]
pub enum CliError {
    /// The node refused or could not be reached (`code: message` for API errors).
    Client(ClientError),
    /// A bad argument or a local file problem.
    Usage(String),
    /// The transaction is in a block but failed; its receipt was printed.
    TxFailed(String),
}

impl CliError {
    /// The process exit code: [`EXIT_TX_FAILED`] for a failed transaction, else 1.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::TxFailed(_) => EXIT_TX_FAILED,
            _ => 1,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Client(e) => e.fmt(f),
            CliError::Usage(m) => f.write_str(m),
            CliError::TxFailed(e) => write!(f, "transaction failed: {e}"),
        }
    }
}

impl From<ClientError> for CliError {
    fn from(e: ClientError) -> Self {
        CliError::Client(e)
    }
}
