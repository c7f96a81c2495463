//! `GET /v1/ws/events?module=<id>[&game=<id>][&player=<address>][&from=<height>]`: a live query
//! of one module's events, optionally one game's or one player's (`events.rs` says which events
//! match), resumable from a height without gaps or repeats.
//!
//! After the upgrade the node sends, in height order:
//! - for each block from `from` (default: the next block) with matching events, one or more
//!   `{"type": "events", "height", "time_ms", "events": [{"txid", "tx_index", "sender", "index",
//!   "kind", "data"}], "last"}` messages (a block's events in block order; `last` true on its
//!   final message);
//! - `{"type": "head", "height", "time_ms"}` once the blocks up to the head when it connected
//!   are sent, then after each new block's events: every matching event up to `height` was sent.
//!
//! A client resumes after a disconnect with `from` = one past the last height it saw complete (a
//! `head`, or an `events` message with `last`): nothing is missed, nothing repeats.
//!
//! Blocks before the connection are read from storage ("replay"): at most [`MAX_REPLAY_BLOCKS`]
//! (`400 too_far_back` beyond: page through `GET /v1/blocks/<height>`), [`REPLAY_STEP`] at a
//! time, at most [`REPLAYS_AT_ONCE`] subscriptions reading at once node-wide; a block this node
//! pruned ends the subscription with close code [`CLOSE_PRUNED`]. A subscriber that falls
//! behind the live feed (`ws_buffer_blocks`) is caught up from storage the same way instead of
//! being closed. Like `GET /v1/ws`: a subscription holds one of `max_ws_subscribers` slots; a
//! message not accepted within `ws_send_timeout_ms` drops the subscriber; a ping frame gets a
//! pong, a text `ping` `{"type": "pong"}`; at shutdown, close code 1001.

pub mod events;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{RawQuery, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use futures_util::{SinkExt, StreamExt};
use tokio::sync::{broadcast, watch, Semaphore};
use tokio_tungstenite::tungstenite::Message;

use crate::server::api_error::ApiError;
use crate::server::state::AppState;
use crate::server::ws::{
    client_ip, close, server_stream, switching_protocols, take_slot, take_upgrade, Ws, WsSlot,
};
use events::{head_message, BlockEvents, EventFilter};
use gamechain_chain::wire::query::parse_query;

/// Most blocks a subscription replays from storage when it connects (`from` to the head).
pub const MAX_REPLAY_BLOCKS: u64 = 100_000;
/// Blocks read from storage per step of a replay.
pub const REPLAY_STEP: u64 = 16;
/// Subscriptions reading storage at once, node-wide (others wait for a step).
pub const REPLAYS_AT_ONCE: usize = 2;
/// Close code when a block to replay is not kept by this node (pruned, or before a snapshot).
pub const CLOSE_PRUNED: u16 = 4001;
/// Largest message a client may send (pings).
const MAX_INCOMING_BYTES: usize = 4096;

static REPLAYS: Semaphore = Semaphore::const_new(REPLAYS_AT_ONCE);

fn invalid(code: &'static str, message: String) -> Response {
    ApiError::new(StatusCode::BAD_REQUEST, code, message).into_response()
}

/// The upgrade handler: checks the query, takes a subscriber slot and subscribes to the live
/// events before the `101`, so no block committed after the request is missed.
pub async fn subscribe(
    State(app): State<AppState>,
    RawQuery(query): RawQuery,
    mut request: Request,
) -> Response {
    let route = "GET /v1/ws/events";
    let query = match parse_query(query.as_deref()) {
        Ok(q) => q,
        Err(e) => return ApiError::invalid(e).into_response(),
    };
    if let Some(key) = query
        .keys()
        .find(|k| !["module", "game", "player", "from"].contains(&k.as_str()))
    {
        return invalid(
            "invalid",
            format!("{route} takes module, game, player and from; not `{key}`"),
        );
    }
    let Some(module) = query.get("module").cloned() else {
        return invalid("invalid", format!("{route} needs `module=<id>`"));
    };
    let filter = match EventFilter::new(
        module,
        query.get("game").cloned(),
        query.get("player").cloned(),
        app.chain.config.network,
    ) {
        Ok(f) => f,
        Err(e) => return invalid("invalid", e),
    };
    let (mut on_upgrade, accept) = match take_upgrade(&mut request, route) {
        Ok(parts) => parts,
        Err(answer) => return answer,
    };
    let live = app.feed.subscribe_events();
    let head = app.chain.head().header.header.height;
    let from = match query.get("from").map(|f| f.parse::<u64>()) {
        None => head + 1,
        Some(Ok(f)) if f <= head + 1 => f,
        Some(Ok(f)) => {
            return invalid(
                "invalid",
                format!("from {f} is above the next block ({})", head + 1),
            )
        }
        Some(Err(_)) => return invalid("invalid", "from must be a height (u64)".into()),
    };
    if head + 1 - from > MAX_REPLAY_BLOCKS {
        return invalid(
            "too_far_back",
            format!(
                "from {from} is {} blocks back; a subscription replays at most {MAX_REPLAY_BLOCKS}: read older blocks with GET /v1/blocks/<height>",
                head + 1 - from
            ),
        );
    }
    let slot = match take_slot(&app, client_ip(&request), "") {
        Ok(slot) => slot,
        Err(answer) => return answer,
    };
    tokio::spawn(async move {
        let upgraded = match (&mut on_upgrade).await {
            Ok(u) => u,
            Err(e) => {
                tracing::debug!("WebSocket upgrade failed: {e}");
                return;
            }
        };
        let ws = server_stream(upgraded, MAX_INCOMING_BYTES, 256 * 1024).await;
        serve(ws, filter, from, live, slot, app).await;
    });
    switching_protocols(&accept)
}

/// Why a subscription ends early.
enum Stop {
    /// The client went, stopped reading, or the node is shutting down (closed already).
    Ended,
    /// A block to replay is not kept here: the reason for [`CLOSE_PRUNED`].
    Pruned(String),
}

/// Sends `text` within `timeout`.
async fn send(ws: &mut Ws, text: String, timeout: Duration) -> Result<(), Stop> {
    match tokio::time::timeout(timeout, ws.send(Message::text(text))).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(_)) => Err(Stop::Ended),
        Err(_) => {
            tracing::debug!("dropping an events subscriber that does not read");
            Err(Stop::Ended)
        }
    }
}

/// Sends the matching events of blocks `from..=to`, read from storage [`REPLAY_STEP`] blocks
/// at a time.
async fn replay(
    ws: &mut Ws,
    filter: &EventFilter,
    from: u64,
    to: u64,
    app: &AppState,
    timeout: Duration,
) -> Result<(), Stop> {
    let mut next = from;
    while next <= to {
        if *app.shutdown.borrow() {
            close(
                ws,
                crate::server::ws::CLOSE_GOING_AWAY,
                "node shutting down",
            )
            .await;
            return Err(Stop::Ended);
        }
        let end = (next + REPLAY_STEP - 1).min(to);
        // Waiting for a replay turn, the client may go: notice it here, so its slot is freed at
        // once rather than when its turn comes (a burst of subscriptions closed together must
        // not hold the slots; issue 45). The wait keeps its place in the queue.
        let acquire = REPLAYS.acquire();
        tokio::pin!(acquire);
        let permit = loop {
            tokio::select! {
                permit = &mut acquire => break permit.map_err(|_| Stop::Ended)?,
                incoming = ws.next() => match incoming {
                    None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return Err(Stop::Ended),
                    // Pings are answered once the replay is done.
                    Some(Ok(_)) => {}
                },
            }
        };
        let chain = app.chain.clone();
        let f = filter.clone();
        let read = tokio::task::spawn_blocking(move || {
            let mut messages = Vec::new();
            for h in next..=end {
                let block = chain.block(Some(h)).map_err(|e| e.to_string())?;
                messages.extend(f.messages(&BlockEvents::of(&block)));
            }
            Ok::<_, String>(messages)
        })
        .await;
        drop(permit);
        let messages = match read {
            Ok(Ok(m)) => m,
            Ok(Err(e)) => return Err(Stop::Pruned(e)),
            Err(_) => return Err(Stop::Pruned("the block could not be read".into())),
        };
        for m in messages {
            send(ws, m, timeout).await?;
        }
        next = end + 1;
    }
    Ok(())
}

async fn serve(
    mut ws: Ws,
    filter: EventFilter,
    mut next: u64,
    mut live: broadcast::Receiver<Arc<BlockEvents>>,
    _slot: WsSlot,
    app: AppState,
) {
    let mut shutdown: watch::Receiver<bool> = app.shutdown.clone();
    let timeout = Duration::from_millis(app.config.ws_send_timeout_ms);
    'catch_up: loop {
        // Storage up to the head, then the head line.
        let (head, time_ms) = {
            let h = app.chain.head();
            (h.header.header.height, h.header.header.time_ms)
        };
        if next <= head {
            match replay(&mut ws, &filter, next, head, &app, timeout).await {
                Ok(()) => next = head + 1,
                Err(Stop::Ended) => return,
                Err(Stop::Pruned(reason)) => {
                    let reason: String = reason.chars().take(120).collect();
                    return close(&mut ws, CLOSE_PRUNED, &reason).await;
                }
            }
        }
        if send(&mut ws, head_message(next - 1, time_ms), timeout)
            .await
            .is_err()
        {
            return;
        }
        // Live: each new block's events, then its head line.
        loop {
            if *shutdown.borrow() {
                return close(
                    &mut ws,
                    crate::server::ws::CLOSE_GOING_AWAY,
                    "node shutting down",
                )
                .await;
            }
            tokio::select! {
                item = live.recv() => match item {
                    Ok(block) if block.height < next => {}
                    Ok(block) if block.height > next => continue 'catch_up,
                    Ok(block) => {
                        for m in filter.messages(&block) {
                            if send(&mut ws, m, timeout).await.is_err() {
                                return;
                            }
                        }
                        next = block.height + 1;
                        if send(&mut ws, head_message(block.height, block.time_ms), timeout).await.is_err() {
                            return;
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => continue 'catch_up,
                    Err(broadcast::error::RecvError::Closed) => {
                        return close(&mut ws, crate::server::ws::CLOSE_GOING_AWAY, "node shutting down").await;
                    }
                },
                incoming = ws.next() => match incoming {
                    None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return,
                    Some(Ok(Message::Ping(payload))) => {
                        if ws.send(Message::Pong(payload)).await.is_err() {
                            return;
                        }
                    }
                    Some(Ok(Message::Text(text))) if text.as_str().trim() == "ping" => {
                        if send(&mut ws, r#"{"type":"pong"}"#.to_string(), timeout).await.is_err() {
                            return;
                        }
                    }
                    Some(Ok(_)) => {}
                },
                _ = shutdown.changed() => {}
            }
        }
    }
}
