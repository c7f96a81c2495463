//! [`GameSubscription`]: a live query of one module's events (`GET /v1/ws/events`, node/API.md
//! "One module's events"), optionally one game's or one player's: each block's matching events
//! as one [`GameFeedItem::Events`] (a block the node splits over several messages is put back
//! together), and [`GameFeedItem::Head`] after every block. To resume after a disconnect, open a
//! new subscription with [`GameQuery::from`] = [`GameSubscription::next_height`]: nothing is
//! missed or repeated.

pub use gamechain_chain::wire::GameEvent;
use serde::Deserialize;

use crate::client::{Client, ClientError, ClientResult, WsFeed, KEEPALIVE};

/// Most events one block may bring to a subscription (more is a protocol error).
pub const MAX_BLOCK_EVENTS: usize = 100_000;

/// What to subscribe to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GameQuery {
    /// The module id.
    pub module: String,
    /// Only events whose data `id` or `game` is this.
    pub game: Option<String>,
    /// Only events this address sent or is named in.
    pub player: Option<String>,
    /// The first height (default: the next block; at most 100,000 back).
    pub from: Option<u64>,
}

impl GameQuery {
    /// Every event of `module` from the next block on.
    pub fn module(module: &str) -> GameQuery {
        GameQuery {
            module: module.to_string(),
            ..GameQuery::default()
        }
    }

    /// Only game `id`'s events.
    pub fn game(mut self, id: &str) -> GameQuery {
        self.game = Some(id.to_string());
        self
    }

    /// Only `address`'s events.
    pub fn player(mut self, address: &str) -> GameQuery {
        self.player = Some(address.to_string());
        self
    }

    /// From `height` on.
    pub fn from(mut self, height: u64) -> GameQuery {
        self.from = Some(height);
        self
    }
}

/// What [`GameSubscription::next`] gives.
#[derive(Debug, Clone, PartialEq)]
pub enum GameFeedItem {
    /// A block's matching events, in block order.
    Events {
        height: u64,
        time_ms: u64,
        events: Vec<GameEvent>,
    },
    /// Every matching event up to `height` was given.
    Head { height: u64, time_ms: u64 },
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Message {
    Events {
        height: u64,
        time_ms: u64,
        events: Vec<GameEvent>,
        last: bool,
    },
    Head {
        height: u64,
        time_ms: u64,
    },
    Pong,
}

/// An open events subscription, from [`Client::subscribe_game`].
pub struct GameSubscription {
    feed: WsFeed,
    next_height: Option<u64>,
    /// A block whose messages are not all in yet.
    pending: Option<(u64, u64, Vec<GameEvent>)>,
}

impl GameSubscription {
    /// The next block's events or head. `Ok(None)` once the node closed the subscription
    /// ([`GameSubscription::close_reason`]: 4001 when a replayed block is not kept by the node,
    /// 1001 at its shutdown). Errors: [`ClientError::Transport`] (connection lost or silent past
    /// the keepalive), [`ClientError::Protocol`] (a message that is not the feed's, heights out
    /// of order, a block of over [`MAX_BLOCK_EVENTS`]).
    pub async fn next(&mut self) -> ClientResult<Option<GameFeedItem>> {
        let protocol = |message: String| ClientError::Protocol {
            status: 101,
            message,
        };
        loop {
            let Some(text) = self.feed.next_text("events feed").await? else {
                return Ok(None);
            };
            let message: Message = serde_json::from_str(&text)
                .map_err(|e| protocol(format!("not an events feed message: {e}")))?;
            let height = match &message {
                Message::Events { height, .. } | Message::Head { height, .. } => *height,
                Message::Pong => continue,
            };
            if self.next_height.is_some_and(|next| height + 1 < next) {
                return Err(protocol(format!(
                    "height {height} after the feed had reached {}",
                    self.next_height.unwrap_or(0) - 1
                )));
            }
            match message {
                Message::Events {
                    height,
                    time_ms,
                    events,
                    last,
                } => {
                    let (h, t, mut all) = match self.pending.take() {
                        Some((h, t, all)) if h == height => (h, t, all),
                        Some((h, ..)) => {
                            return Err(protocol(format!(
                                "block {height} began before block {h} ended"
                            )))
                        }
                        None => (height, time_ms, Vec::new()),
                    };
                    if all.len() + events.len() > MAX_BLOCK_EVENTS {
                        return Err(protocol(format!(
                            "block {h} has over {MAX_BLOCK_EVENTS} events for this subscription"
                        )));
                    }
                    all.extend(events);
                    if !last {
                        self.pending = Some((h, t, all));
                        continue;
                    }
                    self.next_height = Some(h + 1);
                    return Ok(Some(GameFeedItem::Events {
                        height: h,
                        time_ms: t,
                        events: all,
                    }));
                }
                Message::Head { height, time_ms } => {
                    if self.pending.is_some() {
                        return Err(protocol(format!(
                            "head {height} in the middle of a block's events"
                        )));
                    }
                    self.next_height = Some(height + 1);
                    return Ok(Some(GameFeedItem::Head { height, time_ms }));
                }
                Message::Pong => {}
            }
        }
    }

    /// The first height not given complete yet: what [`GameQuery::from`] takes to resume.
    /// `None` before the first item.
    pub fn next_height(&self) -> Option<u64> {
        self.next_height
    }

    /// Why the node closed the subscription (close code and reason), once it has.
    pub fn close_reason(&self) -> Option<(u16, &str)> {
        self.feed.close_reason()
    }
}

impl Client {
    /// Opens `GET /v1/ws/events` for `query`. Errors: [`ClientError::Api`] when the node refuses
    /// it (`400 invalid` for a bad query, `400 too_far_back`, `503 too_many_subscribers`), else
    /// [`ClientError::Transport`].
    pub async fn subscribe_game(&self, query: &GameQuery) -> ClientResult<GameSubscription> {
        let mut params = vec![("module", query.module.clone())];
        if let Some(g) = &query.game {
            params.push(("game", g.clone()));
        }
        if let Some(p) = &query.player {
            params.push(("player", p.clone()));
        }
        if let Some(f) = query.from {
            params.push(("from", f.to_string()));
        }
        let ws = self.websocket(&["v1", "ws", "events"], &params).await?;
        Ok(GameSubscription {
            feed: WsFeed::new(ws, KEEPALIVE),
            next_height: query.from,
            pending: None,
        })
    }
}
