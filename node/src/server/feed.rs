//! [`BlockFeed`]: the committed blocks, serialised once each, for every WebSocket subscriber;
//! and their module events, extracted once each, for the events subscriptions
//! (`game_feed/`).
//!
//! Each block message is one shared buffer ([`FeedItem::text`]): subscribers send slices of it
//! (`ws.rs` fragments it), never a copy of their own, so what a subscriber holds is bounded by
//! the feed's retained blocks (shared by all) plus one fragment. The feed also counts the
//! bytes it has published ([`BlockFeed::published_bytes`]), so a subscriber can tell how far
//! behind it is in bytes, not only in blocks.
//!
//! The message is written straight from the block ([`block_message`]; [`block_json`], the block
//! alone, is also `GET /v1/blocks/<height>`'s answer), with every object's keys
//! in sorted order: exactly the bytes of the `BlockMessage` JSON taken through
//! `serde_json::Value` (sorted maps), the form of every API answer, without building that tree
//! (a `Value` per field, a copy of every body) on the commit path. The tests compare the two.

use bytes::Bytes;
use gamechain_chain::wire::Block;
use gamechain_runtime::chain::{Header, Receipt};
use serde::Serialize;
use tokio::sync::{broadcast, watch};

use std::sync::Arc;

use crate::server::game_feed::events::BlockEvents;
use gamechain_ledger::chain::BlockSink;

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
    /// Each block's module events (made only while an events subscription is open).
    events: broadcast::Sender<Arc<BlockEvents>>,
}

impl BlockFeed {
    /// A feed that buffers at most `capacity` blocks per subscriber (`ws_buffer_blocks`).
    pub fn new(capacity: usize) -> Self {
        let (sender, _) = broadcast::channel(capacity.max(1));
        BlockFeed {
            sender,
            published: watch::channel(0).0,
            events: broadcast::channel(capacity.max(1)).0,
        }
    }

    /// The module events of every block committed from now on (at most `capacity` blocks
    /// buffered per subscriber: a slower one gets `Lagged`).
    pub fn subscribe_events(&self) -> broadcast::Receiver<Arc<BlockEvents>> {
        self.events.subscribe()
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
        if self.events.receiver_count() > 0 {
            let _ = self.events.send(BlockEvents::of(block));
        }
        if self.sender.receiver_count() == 0 {
            return;
        }
        let text = block_message(block);
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

/// The WebSocket message of `block`: `{"block": <the block as GET /v1/blocks/<height> serves it>,
/// "type": "block"}` (`gamechain_chain::wire::BlockMessage`), every object's keys sorted, byte for
/// byte what `serde_json::to_value` of the block then `to_string` of the message gives.
pub fn block_message(block: &Block) -> Vec<u8> {
    let mut out = block_buffer(block);
    out.extend_from_slice(b"{\"block\":");
    write_block(&mut out, block);
    out.extend_from_slice(b",\"type\":\"block\"}");
    out
}

/// The answer of `GET /v1/blocks/<height>`: `block` as JSON, every object's keys sorted, byte for
/// byte what `serde_json::to_value` of the block then `to_string` gives (the form of every API
/// answer), without building that tree.
pub fn block_json(block: &Block) -> Vec<u8> {
    let mut out = block_buffer(block);
    write_block(&mut out, block);
    out
}

/// An empty buffer with room for `block`'s JSON.
fn block_buffer(block: &Block) -> Vec<u8> {
    let bodies: usize = block
        .txs
        .iter()
        .map(|t| t.tx.body().len() + t.tx.signature().len())
        .sum();
    Vec::with_capacity(1024 + bodies * 5 / 4 + block.txs.len() * 256)
}

/// `block`'s JSON, keys sorted, appended to `out`. Written field by field: a field added to the
/// block, header, checkpoint, receipt or event JSON must be added here too (the tests compare
/// both encodings on blocks that use every field).
fn write_block(out: &mut Vec<u8>, block: &Block) {
    out.extend_from_slice(b"{\"end_block\":[");
    for (i, (module, receipt)) in block.end_block.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"module\":");
        json(out, module);
        out.extend_from_slice(b",\"receipt\":");
        write_receipt(out, receipt);
        out.push(b'}');
    }
    out.extend_from_slice(b"],\"hash\":");
    json(out, &block.hash_hex());
    out.extend_from_slice(b",\"header\":");
    write_header(out, &block.header.header);
    out.extend_from_slice(b",\"height\":");
    json(out, &block.height());
    if !block.scheduled.is_empty() {
        out.extend_from_slice(b",\"scheduled\":[");
        for (i, s) in block.scheduled.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b"{\"id\":");
            json(out, &s.id);
            out.extend_from_slice(b",\"module\":");
            json(out, &s.module);
            out.extend_from_slice(b",\"receipt\":");
            write_receipt(out, &s.receipt);
            out.push(b'}');
        }
        out.push(b']');
    }
    out.extend_from_slice(b",\"signature\":");
    json(out, &block.header.signature);
    out.extend_from_slice(b",\"txs\":[");
    for (i, t) in block.txs.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"body\":");
        json(out, t.tx.body());
        out.extend_from_slice(b",\"receipt\":");
        write_receipt(out, &t.receipt);
        out.extend_from_slice(b",\"signature\":");
        json(out, t.tx.signature());
        out.extend_from_slice(b",\"txid\":");
        json(out, &t.tx.txid());
        out.push(b'}');
    }
    out.extend_from_slice(b"]}");
}

/// `value` as compact JSON (a string, a number, `null`, an event's data), appended to `out`.
fn json<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    serde_json::to_writer(&mut *out, value).expect("the wire types always serialise");
}

/// A header's JSON, keys sorted (`checkpoint` with `hash` before `height`).
fn write_header(out: &mut Vec<u8>, h: &Header) {
    out.push(b'{');
    if let Some(b) = &h.beacon {
        out.extend_from_slice(b"\"beacon\":");
        json(out, b);
        out.push(b',');
    }
    out.extend_from_slice(b"\"checkpoint\":{\"hash\":");
    json(out, &h.checkpoint.hash);
    out.extend_from_slice(b",\"height\":");
    json(out, &h.checkpoint.height);
    out.extend_from_slice(b"},\"height\":");
    json(out, &h.height);
    for (key, bytes) in [
        (&b",\"prev_hash\":"[..], &h.prev_hash),
        (b",\"receipt_root\":", &h.receipt_root),
    ] {
        out.extend_from_slice(key);
        json(out, &hex::encode(bytes));
    }
    out.extend_from_slice(b",\"sequencer\":");
    json(out, &h.sequencer);
    out.extend_from_slice(b",\"state_root\":");
    json(out, &hex::encode(h.state_root));
    out.extend_from_slice(b",\"time_ms\":");
    json(out, &h.time_ms);
    out.extend_from_slice(b",\"tx_root\":");
    json(out, &hex::encode(h.tx_root));
    out.push(b'}');
}

/// A receipt's JSON, keys sorted; `fee` only when it is not 0 (as `Receipt` serialises).
fn write_receipt(out: &mut Vec<u8>, r: &Receipt) {
    out.extend_from_slice(b"{\"error\":");
    json(out, &r.error);
    out.extend_from_slice(b",\"events\":[");
    for (i, e) in r.events.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        // `data` is a `Value`: its maps are sorted already.
        out.extend_from_slice(b"{\"data\":");
        json(out, &e.data);
        out.extend_from_slice(b",\"kind\":");
        json(out, &e.kind);
        out.push(b'}');
    }
    out.push(b']');
    if r.fee.0 != 0 {
        out.extend_from_slice(b",\"fee\":");
        json(out, &r.fee);
    }
    out.extend_from_slice(b",\"fuel_used\":");
    json(out, &r.fuel_used);
    out.extend_from_slice(b",\"ok\":");
    json(out, &r.ok);
    out.push(b'}');
}

#[cfg(test)]
mod tests {
    use super::*;
    use gamechain_chain::wire::IncludedTx;
    use gamechain_runtime::chain::{
        receipt_root, tx_root, Action, Event, Network, SecretKey, SignedHeader, SignedTx, TxBody,
    };
    use gamechain_sdk::{Amount, Checkpoint};
    use serde_json::json;

    /// The message as the feed wrote it before: the block through `serde_json::Value` (sorted
    /// keys), inside the message object.
    fn through_value(block: &Block) -> Vec<u8> {
        let block = serde_json::to_value(block).unwrap();
        serde_json::json!({"type": "block", "block": block})
            .to_string()
            .into_bytes()
    }

    fn key(n: u8) -> SecretKey {
        SecretKey::from_bytes(Network::Testnet, [n; 32]).unwrap()
    }

    fn tx(from: &SecretKey, nonce: u64, action: Action) -> SignedTx {
        TxBody {
            chain_id: "gamechain-dev".into(),
            from: from.address(),
            nonce,
            action,
        }
        .sign(from)
    }

    fn block(
        txs: Vec<IncludedTx>,
        end_block: Vec<(String, Receipt)>,
        checkpoint: Checkpoint,
    ) -> Block {
        let seq = key(9);
        let signed: Vec<SignedTx> = txs.iter().map(|t| t.tx.clone()).collect();
        let receipts: Vec<Receipt> = txs.iter().map(|t| t.receipt.clone()).collect();
        let header = Header {
            height: 4_294_967_301,
            prev_hash: [0xab; 32],
            time_ms: 1_733_000_000_123,
            sequencer: seq.address(),
            checkpoint,
            tx_root: tx_root(&signed),
            receipt_root: receipt_root(&receipts),
            state_root: [7; 32],
            beacon: None,
        };
        Block {
            header: SignedHeader::sign(header, &seq),
            scheduled: Vec::new(),
            txs,
            end_block,
        }
    }

    #[test]
    fn the_message_is_the_bytes_the_value_detour_gave() {
        let (a, b) = (key(1), key(2));
        let events = vec![
            Event {
                kind: "tictactoe.moved".into(),
                data: json!({"z": 1, "a": [1, -2, 3.5, null, true], "m": {"y": "é\"\\\n\u{1}", "b": {}}, "id": "0123"}),
            },
            Event {
                kind: "transfer".into(),
                data: json!("just a string"),
            },
            Event {
                kind: "x\"y".into(),
                data: json!(18_446_744_073_709_551_615u64),
            },
        ];
        let mut paid = Receipt::success(events.clone(), 52_742);
        paid.fee = Amount(u128::MAX);
        let mut failed_paid = Receipt::failure("invalid: cell \"4\" is taken ✗", 17);
        failed_paid.fee = Amount(3);
        let game = Action::game(
            "tictactoe",
            &json!({"kind": "move", "id": "ab\"cd", "cell": 4}),
        );
        let txs = vec![
            IncludedTx {
                tx: tx(
                    &a,
                    0,
                    Action::Faucet {
                        token: "GOLD".into(),
                    },
                ),
                receipt: Receipt::success(vec![], 0),
            },
            IncludedTx {
                tx: tx(&a, 1, game.clone()),
                receipt: paid,
            },
            IncludedTx {
                tx: tx(&b, 0, game),
                receipt: Receipt::failure("not_found: no game", 9),
            },
            IncludedTx {
                tx: tx(
                    &b,
                    1,
                    Action::Transfer {
                        to: a.address(),
                        token: "GOLD".into(),
                        amount: Amount(5),
                    },
                ),
                receipt: failed_paid,
            },
        ];
        let end_block = vec![
            ("channel".to_string(), Receipt::success(events, 3)),
            (
                "tictactoe".to_string(),
                Receipt::failure("trap: unreachable", 1),
            ),
        ];
        let blocks = [
            block(Vec::new(), Vec::new(), Checkpoint::default()),
            block(
                txs.clone(),
                end_block.clone(),
                Checkpoint {
                    height: 812_345,
                    hash: "00000000000000000002a7c4c1e48d76c5a37902165a270156b7a8d72728a054".into(),
                },
            ),
            block(txs[..1].to_vec(), Vec::new(), Checkpoint::default()),
            block(Vec::new(), end_block, Checkpoint::default()),
        ];
        // A block of a beacon chain that ran scheduled calls.
        let mut with_calls = blocks[1].clone();
        with_calls.header.header.beacon = Some(gamechain_runtime::chain::Beacon([0x5a; 48]));
        with_calls.scheduled = vec![
            gamechain_runtime::chain::ScheduledReceipt {
                module: "dice".into(),
                id: (1 << 53) - 1,
                receipt: Receipt::success(vec![], 11),
            },
            gamechain_runtime::chain::ScheduledReceipt {
                module: "a\"b".into(),
                id: 0,
                receipt: Receipt::failure("internal: trap", 7),
            },
        ];
        let blocks = [blocks.to_vec(), vec![with_calls]].concat();
        for b in &blocks {
            let (got, want) = (block_message(b), through_value(b));
            assert_eq!(
                String::from_utf8(got).unwrap(),
                String::from_utf8(want).unwrap()
            );
            // `GET /v1/blocks/<height>`'s answer: the block alone, as the `Value` detour gave.
            let want = serde_json::to_vec(&serde_json::to_value(b).unwrap()).unwrap();
            assert_eq!(
                String::from_utf8(block_json(b)).unwrap(),
                String::from_utf8(want).unwrap()
            );
        }
        // And what the feed publishes is that message.
        let feed = BlockFeed::new(4);
        let mut sub = feed.subscribe();
        feed.committed(&blocks[1]);
        let item = sub.try_recv().unwrap();
        assert_eq!(item.text.as_ref(), through_value(&blocks[1]).as_slice());
        assert_eq!(*feed.published_bytes().borrow(), item.text.len() as u64);
    }
}
