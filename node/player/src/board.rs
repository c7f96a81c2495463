//! The move board as transport and the chain as a feed. A signed move travels as a board post
//! (`{"kind":"post","game":<id>,"type":1,"payload":"<the move's JSON>"}` to module `moveboard`),
//! which stores nothing and emits `posted {game, from, type, payload}`. Events carry no module
//! id, so [`seen_in`] reads each transaction of a block: a successful game op to the board
//! module whose `posted` event names the game, or to the channel module whose events name it
//! (and whose op's signed moves, e.g. a `respond`, are read as received moves too).
//! Nothing read here is trusted: posts go through `check.rs`, channel events are only shown
//! (decisions read the channel's view).

use gamechain_channel_protocol as protocol;
use gamechain_client::client::Block;
use gamechain_runtime::chain::{Action, TxBody};
use serde_json::{json, Value};

use crate::{MAX_PAYLOAD_BYTES, MOVE_TYPE};

/// Something the chain said about one game.
#[derive(Debug, Clone, PartialEq)]
pub enum Seen {
    /// A board post of a signed move (type 1) for the game, at most [`MAX_PAYLOAD_BYTES`].
    Post {
        /// The block height.
        height: u64,
        /// Who posted it (anyone may).
        from: String,
        /// The payload text (to be checked).
        payload: String,
    },
    /// A board post for the game too large to be a move: ignored, but told.
    Oversized {
        /// The block height.
        height: u64,
        /// Who posted it.
        from: String,
    },
    /// The signed moves of a channel op about the game (`settle`, `challenge`, `respond`, …):
    /// a move the opponent sent only to the chain is learnt here (at most
    /// `protocol::MAX_MOVES_PER_OP`, checked like posts).
    OpMoves {
        /// The block height.
        height: u64,
        /// Who sent the op.
        from: String,
        /// The moves, as sent.
        moves: Vec<Value>,
    },
    /// An event of the channel about the game (`game_challenged`, `game_responded`,
    /// `game_concluding`, `game_settled`, `equivocation`, `paid`, …).
    Event {
        /// The block height.
        height: u64,
        /// The event kind.
        kind: String,
        /// Its data.
        data: Value,
    },
}

/// The board op posting `payload` (a signed move's JSON) for `game`.
pub fn post_op(game: &str, payload: &str) -> Value {
    json!({ "kind": "post", "game": game, "type": MOVE_TYPE, "payload": payload })
}

/// What `block` says about `game`: board posts (module `board`) and channel events (module
/// `channel`), in block order. Failed transactions and other modules are skipped.
pub fn seen_in(block: &Block, game: &str, channel: &str, board: &str) -> Vec<Seen> {
    let height = block.height();
    let mut out = Vec::new();
    for included in &block.txs {
        if !included.receipt.ok {
            continue;
        }
        let (module, sender, op) = match TxBody::parse(included.tx.body()) {
            Ok(TxBody {
                action: Action::Game { game: module, op },
                from,
                ..
            }) => (module, from, op),
            _ => continue,
        };
        if module == channel {
            if let Ok(op) = serde_json::from_str::<Value>(op.get()) {
                if op.get("game").and_then(Value::as_str) == Some(game) {
                    if let Some(moves) = op.get("moves").and_then(Value::as_array) {
                        if !moves.is_empty() && moves.len() <= protocol::MAX_MOVES_PER_OP {
                            out.push(Seen::OpMoves {
                                height,
                                from: sender.clone(),
                                moves: moves.clone(),
                            });
                        }
                    }
                }
            }
        }
        for event in &included.receipt.events {
            if event.data.get("game").and_then(Value::as_str) != Some(game) {
                continue;
            }
            if module == board && event.kind == "posted" {
                if event.data.get("type").and_then(Value::as_u64) != Some(MOVE_TYPE) {
                    continue;
                }
                let from = event.data["from"].as_str().unwrap_or("").to_string();
                match event.data.get("payload").and_then(Value::as_str) {
                    Some(p) if p.len() <= MAX_PAYLOAD_BYTES => out.push(Seen::Post {
                        height,
                        from,
                        payload: p.to_string(),
                    }),
                    _ => out.push(Seen::Oversized { height, from }),
                }
            } else if module == channel {
                out.push(Seen::Event {
                    height,
                    kind: event.kind.clone(),
                    data: event.data.clone(),
                });
            }
        }
    }
    out
}
