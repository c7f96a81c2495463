//! [`LocalNode`]: a node started in-process on a fresh temporary data directory and a free
//! loopback port, for `gamechain demo` and the end-to-end tests. Stopping it shuts the node
//! down and deletes the directory.

use std::net::SocketAddr;
use std::path::Path;

use crate::config::NodeConfig;
use crate::server::node::NodeHandle;
use gamechain_client::client::Client;

/// Longest wait between two blocks of a local node, milliseconds: an empty block at least this
/// often (a transaction gets its block at once).
pub const LOCAL_BLOCK_INTERVAL_MS: u64 = 1000;

/// `min_block_interval_ms` of a local node's chain: 10 ms, so `gamechain demo` and the tests
/// that play whole games stay quick. The embedded default chain spaces blocks 1,000 ms apart
/// (`runtime/chain/src/genesis/clock.rs`); a local chain keeps the same rule at a faster rate, and the
/// demo says so.
pub const LOCAL_MIN_BLOCK_INTERVAL_MS: u64 = 10;

/// A running in-process node and its temporary data directory.
pub struct LocalNode {
    handle: NodeHandle,
    data_dir: tempfile::TempDir,
}

impl LocalNode {
    /// [`LocalNode::start_with`] the default configuration.
    pub async fn start() -> Result<LocalNode, String> {
        Self::start_with(Self::config()).await
    }

    /// The configuration [`LocalNode::start`] uses: the embedded defaults, listening on
    /// `127.0.0.1:0`, a block at least every [`LOCAL_BLOCK_INTERVAL_MS`] and blocks at least
    /// [`LOCAL_MIN_BLOCK_INTERVAL_MS`] apart, no rate limit. `data_dir` is replaced by the
    /// temporary directory.
    pub fn config() -> NodeConfig {
        NodeConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            block_interval_ms: LOCAL_BLOCK_INTERVAL_MS,
            min_block_interval_ms: LOCAL_MIN_BLOCK_INTERVAL_MS,
            rate_limit_per_sec: 0,
            ..NodeConfig::default()
        }
    }

    /// Starts a node with `config` on a new temporary data directory. Errors: the directory
    /// cannot be made or the node does not start (the node's message).
    pub async fn start_with(config: NodeConfig) -> Result<LocalNode, String> {
        let data_dir = tempfile::Builder::new()
            .prefix("gamechain-local-")
            .tempdir()
            .map_err(|e| format!("cannot make a temporary data directory: {e}"))?;
        let config = NodeConfig {
            data_dir: data_dir.path().to_path_buf(),
            ..config
        };
        let handle = NodeHandle::start(config).await.map_err(|e| e.to_string())?;
        Ok(LocalNode { handle, data_dir })
    }

    /// The API's base URL, `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        self.handle.url()
    }

    /// A client of this node.
    pub fn client(&self) -> Client {
        Client::new(&self.url()).expect("a loopback http URL is valid")
    }

    /// The node's data directory (deleted by [`LocalNode::stop`]).
    pub fn data_dir(&self) -> &Path {
        self.data_dir.path()
    }

    /// The address the API listens on.
    pub fn addr(&self) -> SocketAddr {
        self.handle.bound_addr()
    }

    /// Shuts the node down cleanly, waits for it to stop and deletes the data directory.
    /// Returns the error that stopped the node earlier, if one did (logged, not fatal here).
    pub async fn stop(self) -> Result<(), String> {
        let result = self.handle.shutdown().await.map_err(|e| e.to_string());
        drop(self.data_dir);
        result
    }
}
