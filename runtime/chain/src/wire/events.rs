//! [`GameEvent`]: one module event as `GET /v1/ws/events` sends it (`node/API.md`, "One
//! module's events"): which transaction or scheduled call emitted it, its position, its kind
//! and data. The node writes it, `gamechain-client`'s game subscription reads it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One event of a module's feed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GameEvent {
    /// The transaction's id; `None` for an end-block or scheduled-call event.
    pub txid: Option<String>,
    /// The transaction's position in its block; `None` for an end-block or scheduled-call event.
    pub tx_index: Option<u32>,
    /// The account the transaction acts for (a session game's account, not the session key);
    /// `None` for an end-block or scheduled-call event.
    pub sender: Option<String>,
    /// The scheduled call that emitted it (absent from the JSON otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<u64>,
    /// The event's position in its receipt.
    pub index: u32,
    /// Its kind (`tictactoe.moved`).
    pub kind: String,
    /// Its data, as the receipt holds it.
    pub data: Value,
}
