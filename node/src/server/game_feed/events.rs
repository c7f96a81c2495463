//! The events of a block as one module's subscribers see them ([`BlockEvents`]), what one
//! subscription asks for ([`EventFilter`]), and the messages that carry them.
//!
//! An event belongs to module `M` when the transaction that emitted it names `M`: a `game`
//! action on `M` (its op's events), or a `deploy`, `activate_upgrade`, `cancel_upgrade` or
//! `set_policy` of `M`, or a `session_game` on `M` (docs/session-keys.md); and the end-block
//! receipt of `M`, and the receipts of `M`'s scheduled calls (which run first in their block:
//! their events come first, each with `call`, the call's id). A failed transaction or call
//! emits nothing. Its **sender** is the account the
//! transaction acts for (`TxBody::account`: the body's `from`, or a session game's `account`, not
//! the session key that signed it); end-block events have none.
//!
//! A filter's `game` matches an event whose data has a string field `id` or `game` equal to it
//! (the games of this repository name their game so: tic-tac-toe and m,n,k `id`, the channel
//! `game` or `id`); its `player` matches an event whose sender is that address, or whose data
//! holds it as a top-level string field or an element of a top-level array (`x`, `o`, `winner`,
//! `players`). Both given: both must match.

use std::sync::Arc;

use gamechain_chain::wire::{Block, GameEvent};
use gamechain_runtime::chain::address::check_address;
use gamechain_runtime::chain::genesis::check_module_id;
use gamechain_runtime::chain::{Action, Network, TxBody};
use serde_json::Value;

/// Longest `game` a filter takes, in bytes.
pub const MAX_GAME_ID_BYTES: usize = 128;

/// Most bytes of events one `events` message carries (about; one event more than this is sent
/// alone): a block with more is sent as several messages, the last with `"last": true`.
pub const MAX_MESSAGE_EVENT_BYTES: usize = 64 * 1024;

/// One event of a module: the module it belongs to (never sent: a subscription names it), and
/// the event as the feed sends it.
#[derive(Debug, Clone, PartialEq)]
pub struct ModuleEvent {
    /// The module it belongs to.
    pub module: String,
    /// The event.
    pub event: GameEvent,
}

/// Every module event of one committed block, made once per block for all subscribers.
#[derive(Debug, Clone, Default)]
pub struct BlockEvents {
    /// The block's height.
    pub height: u64,
    /// The block's time, ms.
    pub time_ms: u64,
    /// Its events, in block order (scheduled calls, transactions, then end-block receipts).
    pub events: Vec<ModuleEvent>,
}

/// The module a transaction names, and its sender (`None` for a body that does not parse:
/// never in a committed block).
fn module_of(body: &str) -> Option<(String, String)> {
    let body = TxBody::parse(body).ok()?;
    let sender = body.account().to_string();
    let module = match body.action {
        Action::Game { game, .. } | Action::SessionGame { game, .. } => game,
        Action::Deploy { module, .. }
        | Action::ActivateUpgrade { module }
        | Action::CancelUpgrade { module }
        | Action::SetPolicy { module, .. } => module,
        _ => return None,
    };
    Some((module, sender))
}

impl BlockEvents {
    /// The module events of `block`.
    pub fn of(block: &Block) -> Arc<BlockEvents> {
        let mut events = Vec::new();
        for s in &block.scheduled {
            if !s.receipt.ok {
                continue;
            }
            for (index, e) in s.receipt.events.iter().enumerate() {
                events.push(ModuleEvent {
                    module: s.module.clone(),
                    event: GameEvent {
                        txid: None,
                        tx_index: None,
                        sender: None,
                        call: Some(s.id),
                        index: index as u32,
                        kind: e.kind.clone(),
                        data: e.data.clone(),
                    },
                });
            }
        }
        for (i, t) in block.txs.iter().enumerate() {
            if !t.receipt.ok || t.receipt.events.is_empty() {
                continue;
            }
            let Some((module, sender)) = module_of(t.tx.body()) else {
                continue;
            };
            let txid = t.tx.txid();
            for (index, e) in t.receipt.events.iter().enumerate() {
                events.push(ModuleEvent {
                    module: module.clone(),
                    event: GameEvent {
                        txid: Some(txid.clone()),
                        tx_index: Some(i as u32),
                        sender: Some(sender.clone()),
                        call: None,
                        index: index as u32,
                        kind: e.kind.clone(),
                        data: e.data.clone(),
                    },
                });
            }
        }
        for (module, receipt) in &block.end_block {
            for (index, e) in receipt.events.iter().enumerate() {
                events.push(ModuleEvent {
                    module: module.clone(),
                    event: GameEvent {
                        txid: None,
                        tx_index: None,
                        sender: None,
                        call: None,
                        index: index as u32,
                        kind: e.kind.clone(),
                        data: e.data.clone(),
                    },
                });
            }
        }
        Arc::new(BlockEvents {
            height: block.height(),
            time_ms: block.header.header.time_ms,
            events,
        })
    }
}

/// What one subscription asks for: a module's events, optionally one game's or one player's.
#[derive(Debug, Clone, PartialEq)]
pub struct EventFilter {
    /// The module id.
    pub module: String,
    /// Only events of this game (`id` or `game` in their data).
    pub game: Option<String>,
    /// Only events this address sent or is named in.
    pub player: Option<String>,
}

impl EventFilter {
    /// Checks the fields: `module` a module id, `game` 1–[`MAX_GAME_ID_BYTES`] of ASCII
    /// letters, digits, `_`, `-`, `.` and `:`, `player` an address of `network`. Errors are the
    /// message of a `400 invalid`.
    pub fn new(
        module: String,
        game: Option<String>,
        player: Option<String>,
        network: Network,
    ) -> Result<EventFilter, String> {
        check_module_id(&module).map_err(|e| format!("module: {e}"))?;
        if let Some(g) = &game {
            let ok = (1..=MAX_GAME_ID_BYTES).contains(&g.len())
                && g.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_-.:".contains(&b));
            if !ok {
                return Err(format!(
                    "game must be 1 to {MAX_GAME_ID_BYTES} of A-Z, a-z, 0-9, _, -, . and :"
                ));
            }
        }
        if let Some(p) = &player {
            check_address(p, network).map_err(|e| format!("player `{p}`: {e}"))?;
        }
        Ok(EventFilter {
            module,
            game,
            player,
        })
    }

    /// Whether `event` is one this subscription wants.
    pub fn matches(&self, event: &ModuleEvent) -> bool {
        if event.module != self.module {
            return false;
        }
        if let Some(game) = &self.game {
            let named = ["id", "game"]
                .iter()
                .any(|f| event.event.data.get(f).and_then(Value::as_str) == Some(game.as_str()));
            if !named {
                return false;
            }
        }
        if let Some(player) = &self.player {
            let p = player.as_str();
            let sent = event.event.sender.as_deref() == Some(p);
            let named = event.event.data.as_object().is_some_and(|fields| {
                fields.values().any(|v| match v {
                    Value::String(s) => s == p,
                    Value::Array(items) => items.iter().any(|i| i.as_str() == Some(p)),
                    _ => false,
                })
            });
            if !sent && !named {
                return false;
            }
        }
        true
    }

    /// The `events` messages of `block` for this subscription (none when nothing matches): JSON
    /// `{"type": "events", "height", "time_ms", "events": [...], "last"}`, the block's matching
    /// events in block order, split so each message holds about [`MAX_MESSAGE_EVENT_BYTES`] of
    /// events at most; only the last has `"last": true`.
    pub fn messages(&self, block: &BlockEvents) -> Vec<String> {
        let mut chunks: Vec<Vec<String>> = Vec::new();
        let mut size = 0;
        for e in block.events.iter().filter(|e| self.matches(e)) {
            let text = serde_json::to_string(&e.event).expect("events serialise");
            if chunks.is_empty() || size + text.len() > MAX_MESSAGE_EVENT_BYTES {
                chunks.push(Vec::new());
                size = 0;
            }
            size += text.len();
            chunks.last_mut().expect("pushed").push(text);
        }
        let n = chunks.len();
        chunks
            .into_iter()
            .enumerate()
            .map(|(i, events)| {
                format!(
                    r#"{{"type":"events","height":{},"time_ms":{},"events":[{}],"last":{}}}"#,
                    block.height,
                    block.time_ms,
                    events.join(","),
                    i + 1 == n
                )
            })
            .collect()
    }
}

/// The `head` message: `{"type": "head", "height", "time_ms"}`, sent after each block's events
/// (live), and once when a replay reaches the head: every event up to `height` was sent.
pub fn head_message(height: u64, time_ms: u64) -> String {
    format!(r#"{{"type":"head","height":{height},"time_ms":{time_ms}}}"#)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(module: &str, sender: Option<&str>, data: Value) -> ModuleEvent {
        ModuleEvent {
            module: module.into(),
            event: GameEvent {
                txid: sender.map(|_| "ab".repeat(32)),
                tx_index: sender.map(|_| 0),
                sender: sender.map(str::to_string),
                call: None,
                index: 0,
                kind: format!("{module}.x"),
                data,
            },
        }
    }

    fn filter(game: Option<&str>, player: Option<&str>) -> EventFilter {
        EventFilter {
            module: "tictactoe".into(),
            game: game.map(str::to_string),
            player: player.map(str::to_string),
        }
    }

    #[test]
    fn module_game_and_player_each_narrow() {
        let e = event(
            "tictactoe",
            Some("alice"),
            json!({"id": "g1", "o": "bob", "players": ["carol"]}),
        );
        assert!(filter(None, None).matches(&e));
        assert!(!filter(None, None).matches(&event("mnk", Some("alice"), json!({}))));
        assert!(filter(Some("g1"), None).matches(&e));
        assert!(!filter(Some("g2"), None).matches(&e));
        assert!(filter(Some("g1"), None).matches(&event("tictactoe", None, json!({"game": "g1"}))));
        for p in ["alice", "bob", "carol"] {
            assert!(filter(None, Some(p)).matches(&e), "{p}");
        }
        assert!(!filter(None, Some("dave")).matches(&e));
        assert!(filter(Some("g1"), Some("bob")).matches(&e));
        assert!(!filter(Some("g2"), Some("bob")).matches(&e));
        // A number equal to the id's text, or an id nested deeper, is not the game.
        assert!(!filter(Some("7"), None).matches(&event("tictactoe", None, json!({"id": 7}))));
        assert!(!filter(Some("g1"), None).matches(&event(
            "tictactoe",
            None,
            json!({"x": {"id": "g1"}})
        )));
    }

    #[test]
    fn filters_check_their_fields() {
        let ok = EventFilter::new(
            "tictactoe".into(),
            Some("00ff".into()),
            None,
            Network::Testnet,
        );
        assert!(ok.is_ok());
        for (module, game, player, says) in [
            ("Bad", None, None, "module:"),
            ("tictactoe", Some(""), None, "game must be"),
            ("tictactoe", Some("a b"), None, "game must be"),
            ("tictactoe", Some(&*"a".repeat(129)), None, "game must be"),
            ("tictactoe", None, Some("nobody"), "player `nobody`"),
        ] {
            let err = EventFilter::new(
                module.into(),
                game.map(str::to_string),
                player.map(str::to_string),
                Network::Testnet,
            )
            .unwrap_err();
            assert!(err.starts_with(says), "{err}");
        }
    }

    #[test]
    fn a_block_is_split_into_messages_and_only_the_last_says_so() {
        let big = "x".repeat(MAX_MESSAGE_EVENT_BYTES / 3);
        let block = BlockEvents {
            height: 7,
            time_ms: 70,
            events: (0..5)
                .map(|i| {
                    event(
                        "tictactoe",
                        Some("a"),
                        json!({"id": "g", "n": i, "pad": big}),
                    )
                })
                .collect(),
        };
        let messages = filter(None, None).messages(&block);
        assert!(messages.len() >= 2, "{}", messages.len());
        let mut seen = Vec::new();
        for (i, m) in messages.iter().enumerate() {
            let v: Value = serde_json::from_str(m).unwrap();
            assert_eq!(v["type"], "events");
            assert_eq!(v["height"], 7);
            assert_eq!(v["time_ms"], 70);
            assert_eq!(v["last"], i + 1 == messages.len());
            for e in v["events"].as_array().unwrap() {
                seen.push(e["data"]["n"].as_u64().unwrap());
            }
        }
        assert_eq!(seen, [0, 1, 2, 3, 4]);
        assert!(filter(Some("other"), None).messages(&block).is_empty());
        let head: Value = serde_json::from_str(&head_message(7, 70)).unwrap();
        assert_eq!(head, json!({"type": "head", "height": 7, "time_ms": 70}));
    }
}
