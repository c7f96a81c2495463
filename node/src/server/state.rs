//! [`AppState`]: what every HTTP and WebSocket handler of the API gets.

use std::sync::Arc;

use tokio::sync::watch;

use crate::ledger::chain::Chain;
use crate::server::feed::BlockFeed;

/// What every handler gets: the chain, and the shutdown signal (for WebSocket subscribers).
#[derive(Clone)]
pub struct AppState {
    /// The running chain.
    pub chain: Arc<Chain>,
    /// The committed blocks, for WebSocket subscribers (the chain's [`BlockSink`](crate::ledger::chain::BlockSink)).
    pub feed: Arc<BlockFeed>,
    /// Turns true when the node shuts down.
    pub shutdown: watch::Receiver<bool>,
    /// A follower's sequencer: `POST /v1/tx` is forwarded there (`follower.rs`). `None` on
    /// the sequencer itself.
    pub upstream: Option<gamechain_client::client::Client>,
}
