//! [`CliError`]: why a `gamechain` command failed, its one stderr line and its exit code.

use std::fmt;

use gamechain_client::client::ClientError;

/// Process exit code of a transaction that is in a block with `ok: false`.
pub const EXIT_TX_FAILED: u8 = 3;

/// Why a command failed; its `Display` is the one line printed on stderr.
#[derive(Debug)]
pub enum CliError {
    /// The node refused or could not be reached (`code: message` for API errors, the code
    /// said once).
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
            // The API's `code: message`, without the code said twice when the message
            // starts with it in words (`not_found: not found: game …` → `not_found: game …`).
            CliError::Client(ClientError::Api { code, message, .. }) => {
                let words = format!("{}: ", code.replace('_', " "));
                let message = message.strip_prefix(words.as_str()).unwrap_or(message);
                write!(f, "{code}: {message}")
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_api_error_says_its_code_once() {
        let api = |code: &str, message: &str| {
            CliError::Client(ClientError::Api {
                status: 404,
                code: code.into(),
                message: message.into(),
            })
            .to_string()
        };
        assert_eq!(api("not_found", "not found: game 00"), "not_found: game 00");
        assert_eq!(api("bad_nonce", "expected 1"), "bad_nonce: expected 1");
    }
}
