//! [`BlockFeed`]: the committed blocks, serialised once each, for every WebSocket subscriber.
//!
//! Each block message is one shared buffer ([`FeedItem::text`]): subscribers send slices of it
//! (`ws.rs` fragments it), never a copy of their own, so what a subscriber holds is bounded by
//! the feed's retained blocks (shared by all) plus one fragment. The feed also counts the
//! bytes it has published ([`BlockFeed::published_bytes`]), so a subscriber can tell how far
//! behind it is in bytes, not only in blocks.

use bytes::Bytes;
use gamechain_chain::wire::Block;
use tokio::sync::{broadcast, watch};

use crate::ledger::chain::BlockSink;

/// One block message (`gamechain_chain::wire::BlockMessage` as JSON text) and where it sits in
/// the feed's byte stream.
#[derive(Debug, Clone)]
pub struct FeedItem {
    /// The message, UTF-8 JSON, shared by every subscriber.
    pub text: Bytes,
    /// Bytes the feed had published before this message.
    pub start: u64,
}

/// The committed blocks as WebSocket message text for every subscriber: the chain's
/// [`BlockSink`]. Each block is serialised once, whatever the number of subscribers, and only
/// when there is one; a subscriber more than `capacity` blocks behind misses blocks and is
/// closed by `ws.rs` with its lagged close code.
pub struct BlockFeed {
    sender: broadcast::Sender<FeedItem>,
    /// Bytes published so far (the end of the last message).
    published: watch::Sender<u64>,
}

impl BlockFeed {
    /// A feed that buffers at most `capacity` blocks per subscriber (`ws_buffer_blocks`).
    pub fn new(capacity: usize) -> Self {
        let (sender, _) = broadcast::channel(capacity.max(1));
        BlockFeed {
            sender,
            published: watch::channel(0).0,
        }
    }

    /// Every block committed from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<FeedItem> {
        self.sender.subscribe()
    }

    /// Open subscriptions.
    pub fn subscribers(&self) -> usize {
        self.sender.receiver_count()
    }

    /// Bytes published so far, watched: it changes with every message.
    pub fn published_bytes(&self) -> watch::Receiver<u64> {
        self.published.subscribe()
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
        let start = *self.published.borrow();
        let len = text.len() as u64;
        // Every subscriber may have gone since: not an error.
        let _ = self.sender.send(FeedItem {
            text: Bytes::from(text),
            start,
        });
        self.published.send_replace(start + len);
    }
}
