//! [`ChannelError`]: why a channel operation failed. A local refusal (the client would not sign,
//! store or send) is told apart from the node's refusal of a transaction and from failures to
//! reach the node, read the store or run the rules.

use std::fmt;

use gamechain_client::client::ClientError;

/// Why a channel operation failed; `Display` is one line for a person.
#[derive(Debug)]
pub enum ChannelError {
    /// The client refused before sending anything (equivocation, an illegal move, a history
    /// that does not end the game, a turn that is not ours, …).
    Refused(String),
    /// The node refused or could not be reached.
    Client(ClientError),
    /// The transaction is in a block with `ok: false`: the chain's error text.
    TxFailed(String),
    /// The local store could not be read or written (the path and the cause).
    Store(String),
    /// The rules module could not be fetched, checked, loaded or run.
    Rules(String),
}

impl fmt::Display for ChannelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChannelError::Refused(m) => f.write_str(m),
            ChannelError::Client(e) => e.fmt(f),
            ChannelError::TxFailed(m) => write!(f, "transaction failed: {m}"),
            ChannelError::Store(m) => write!(f, "move store: {m}"),
            ChannelError::Rules(m) => write!(f, "rules: {m}"),
        }
    }
}

impl std::error::Error for ChannelError {}

impl From<ClientError> for ChannelError {
    fn from(e: ClientError) -> Self {
        ChannelError::Client(e)
    }
}

/// A local refusal.
pub(crate) fn refused(m: impl Into<String>) -> ChannelError {
    ChannelError::Refused(m.into())
}
