//! [`NodeError`]: why a node could not start or had to stop. Every variant carries a message
//! written for the operator (what is wrong and, where there is one, what to do).

use std::fmt;

use crate::config::ConfigError;
use crate::store::storage_error::StorageError;

/// Why a node could not start or stopped.
#[derive(Debug)]
pub enum NodeError {
    /// The configuration is not usable.
    Config(ConfigError),
    /// A file of the data directory could not be read or written.
    Io(String),
    /// The database failed or holds something this node cannot use.
    Storage(StorageError),
    /// The data directory belongs to another chain or another build (genesis hash, engine
    /// configuration, sequencer key, module code or state root disagree); the node refuses to
    /// run on it rather than fork it.
    Refused(String),
    /// The wasm runtime or a module could not be set up, or failed while making a block.
    Runtime(String),
    /// The API could not listen on its address.
    Bind(String),
}

impl fmt::Display for NodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NodeError::Config(e) => write!(f, "configuration: {e}"),
            NodeError::Io(m) => write!(f, "{m}"),
            NodeError::Storage(e) => write!(f, "{e}"),
            NodeError::Refused(m) => write!(f, "refusing to start: {m}"),
            NodeError::Runtime(m) => write!(f, "runtime: {m}"),
            NodeError::Bind(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for NodeError {}

impl From<StorageError> for NodeError {
    fn from(e: StorageError) -> Self {
        NodeError::Storage(e)
    }
}

impl From<ConfigError> for NodeError {
    fn from(e: ConfigError) -> Self {
        NodeError::Config(e)
    }
}
