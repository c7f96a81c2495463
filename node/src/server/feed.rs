//! [`BlockFeed`]: the committed blocks, serialised once each, for every WebSocket subscriber.

use axum::extract::ws::Utf8Bytes;
use gamechain_chain::wire::Block;
use tokio::sync::broadcast;

use crate::ledger::chain::BlockSink;

/// The committed blocks as WebSocket message text (`gamechain_chain::wire::BlockMessage`), for
/// every subscriber: the chain's
/// [`BlockSink`]. Each block is serialised once, whatever the number of subscribers, and only
/// when there is one; a subscriber more than `capacity` blocks behind misses blocks and is
/// closed by `ws.rs` with its lagged close code.
pub struct BlockFeed {
    sender: broadcast::Sender<Utf8Bytes>,
}

impl BlockFeed {
    /// A feed that buffers at most `capacity` blocks per subscriber (`ws_buffer_blocks`).
    pub fn new(capacity: usize) -> Self {
        let (sender, _) = broadcast::channel(capacity.max(1));
        BlockFeed { sender }
    }

    /// Every block committed from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Utf8Bytes> {
        self.sender.subscribe()
    }

    /// Open subscriptions.
    pub fn subscribers(&self) -> usize {
        self.sender.receiver_count()
    }
}

impl BlockSink for BlockFeed {
    fn committed(&self, block: &Block) {
        if self.sender.receiver_count() == 0 {
            return;
        }
        // The shape of `BlockMessage`, through `Value` as every API answer (keys sorted), without
        // a copy of the block.
        let block = serde_json::to_value(block).expect("the wire types always serialise");
        let text = serde_json::json!({"type": "block", "block": block}).to_string();
        // Every subscriber may have gone since: not an error.
        let _ = self.sender.send(Utf8Bytes::from(text));
    }
}
