//! `GET /v1/ws`: the block subscription. After the upgrade the node sends one text message per
//! committed block, in height order: `{"type": "block", "block": <GET /v1/blocks/<h> object>}`
//! (sent as fragments of [`FRAGMENT_BYTES`]; every WebSocket client reassembles them). Clients
//! send nothing; a ping frame is answered with a pong (and a text `ping` with
//! `{"type": "pong"}`).
//!
//! Bounded per subscriber, never buffered beyond:
//! - more than `ws_buffer_blocks` blocks, or more than `ws_buffer_bytes` bytes of block
//!   messages, behind the feed: closed with code [`CLOSE_LAGGED`] (resume from
//!   `GET /v1/blocks/<height>`); a subscriber stuck in the middle of a message when it crosses
//!   the byte bound cannot be sent a close frame and is dropped;
//! - one fragment not accepted by its socket within `ws_send_timeout_ms`: dropped (it stopped
//!   reading);
//! - the node's memory per subscriber is one fragment plus its share of the feed's retained
//!   blocks (shared by all subscribers, `feed.rs`): block messages are never copied per
//!   subscriber.
//!
//! At most `max_ws_subscribers` subscriptions at once, `max_ws_per_ip` of them from one client
//! IP ([`take_slot`], shared with `GET /v1/ws/events`): further upgrades get `503
//! too_many_subscribers` (JSON). At shutdown subscribers get close code [`CLOSE_GOING_AWAY`].
//!
//! The upgrade is done here (hyper's upgrade, then tokio-tungstenite's stream on it) rather than
//! with axum's `WebSocketUpgrade`, whose messages cannot be sent as fragments of a shared
//! buffer.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::{SinkExt, StreamExt};
use hyper_util::rt::TokioIo;
use tokio::sync::{broadcast, watch, OwnedSemaphorePermit};
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{CloseCode, Data, OpCode};
use tokio_tungstenite::tungstenite::protocol::frame::Frame;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use crate::server::api_error::ApiError;
use crate::server::feed::FeedItem;
use crate::server::state::AppState;

/// Close code sent to a subscriber that fell too far behind (blocks or bytes).
pub const CLOSE_LAGGED: u16 = 4000;
/// Close code sent when the node shuts down (RFC 6455 "going away").
pub const CLOSE_GOING_AWAY: u16 = 1001;
/// Bytes of one fragment of a block message: what a subscriber's connection holds at most of
/// its own (the rest is the feed's shared buffer).
pub const FRAGMENT_BYTES: usize = 16 * 1024;
/// Largest message a client may send (pings, `ping` texts): larger ones close the connection.
const MAX_INCOMING_BYTES: usize = 4096;

/// An upgraded server connection.
pub(crate) type Ws = WebSocketStream<TokioIo<hyper::upgrade::Upgraded>>;

fn invalid(message: String) -> Response {
    ApiError::new(StatusCode::BAD_REQUEST, "invalid", message).into_response()
}

fn header_has(headers: &HeaderMap, name: header::HeaderName, token: &str) -> bool {
    headers.get_all(name).iter().any(|v| {
        v.to_str()
            .map(|s| s.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
            .unwrap_or(false)
    })
}

/// Checks that `request` (to `route`, e.g. `GET /v1/ws`) is a WebSocket upgrade this node can
/// take, and takes its upgrade: the future of the upgraded connection and the
/// `Sec-WebSocket-Accept` value. Errors: a `400 invalid` answer naming what is missing.
pub(crate) fn take_upgrade(
    request: &mut Request,
    route: &str,
) -> Result<(hyper::upgrade::OnUpgrade, String), Response> {
    let headers = request.headers();
    if !header_has(headers, header::CONNECTION, "upgrade")
        || !header_has(headers, header::UPGRADE, "websocket")
    {
        return Err(invalid(format!(
            "{route} must be a WebSocket upgrade: `Connection: upgrade` and `Upgrade: websocket` headers are missing"
        )));
    }
    if headers
        .get(header::SEC_WEBSOCKET_VERSION)
        .map(HeaderValue::as_bytes)
        != Some(b"13")
    {
        return Err(invalid(format!(
            "{route} must be a WebSocket upgrade: `Sec-WebSocket-Version: 13` is missing"
        )));
    }
    let Some(key) = headers.get(header::SEC_WEBSOCKET_KEY) else {
        return Err(invalid(format!(
            "{route} must be a WebSocket upgrade: `Sec-WebSocket-Key` is missing"
        )));
    };
    let accept = derive_accept_key(key.as_bytes());
    let Some(on_upgrade) = request
        .extensions_mut()
        .remove::<hyper::upgrade::OnUpgrade>()
    else {
        return Err(invalid(format!(
            "{route} must be a WebSocket upgrade over HTTP/1.1"
        )));
    };
    Ok((on_upgrade, accept))
}

/// The `101 Switching Protocols` answer to an upgrade whose key gave `accept`.
pub(crate) fn switching_protocols(accept: &str) -> Response {
    let mut answer = StatusCode::SWITCHING_PROTOCOLS.into_response();
    let h = answer.headers_mut();
    h.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
    h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    h.insert(
        header::SEC_WEBSOCKET_ACCEPT,
        HeaderValue::from_str(accept).expect("base64 is a header value"),
    );
    answer
}

/// The server side of an upgraded connection: incoming messages and frames of at most
/// `max_incoming` bytes, at most `max_write` bytes queued for writing.
pub(crate) async fn server_stream(
    upgraded: hyper::upgrade::Upgraded,
    max_incoming: usize,
    max_write: usize,
) -> Ws {
    let mut config = WebSocketConfig::default();
    config.read_buffer_size = 4096;
    config.write_buffer_size = 0;
    config.max_write_buffer_size = max_write;
    config.max_message_size = Some(max_incoming);
    config.max_frame_size = Some(max_incoming);
    WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, Some(config)).await
}

/// A WebSocket subscription's slot: one of the node's `max_ws_subscribers` (shared by
/// `GET /v1/ws` and `GET /v1/ws/events`) and one of its client IP's `max_ws_per_ip`, both given
/// back when it is dropped (the subscription ended).
pub struct WsSlot {
    _permit: OwnedSemaphorePermit,
    ip: IpAddr,
    per_ip: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

impl Drop for WsSlot {
    fn drop(&mut self) {
        let mut held = self.per_ip.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = held.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                held.remove(&self.ip);
            }
        }
    }
}

/// The client IP of `request` (`0.0.0.0` without one, as in in-process router tests).
pub fn client_ip(request: &Request) -> IpAddr {
    request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |c| c.0.ip())
}

/// Takes a [`WsSlot`] for a client at `ip`; when the node's slots or the IP's are all taken,
/// the answer `503 too_many_subscribers` ("… retry later" and then `alternative`, e.g. how to
/// poll instead).
pub fn take_slot(app: &AppState, ip: IpAddr, alternative: &str) -> Result<WsSlot, Response> {
    let refuse = |message: String| {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "too_many_subscribers",
            message,
        )
        .into_response()
    };
    let mut held = app.ws_per_ip.lock().unwrap_or_else(|e| e.into_inner());
    let mine = held.get(&ip).copied().unwrap_or(0);
    let per_ip = app.config.max_ws_per_ip;
    if mine >= per_ip {
        return Err(refuse(format!(
            "this address holds {per_ip} WebSocket subscriptions already (max_ws_per_ip); close one, or retry later{alternative}"
        )));
    }
    let permit = app.ws_slots.clone().try_acquire_owned().map_err(|_| {
        let max = app.config.max_ws_subscribers;
        refuse(format!("{max} WebSocket subscribers are connected already (max_ws_subscribers); retry later{alternative}"))
    })?;
    held.insert(ip, mine + 1);
    Ok(WsSlot {
        _permit: permit,
        ip,
        per_ip: app.ws_per_ip.clone(),
    })
}

/// The upgrade handler. The subscription starts before the `101` answer, so no block committed
/// after the request is missed.
pub async fn subscribe(State(app): State<AppState>, mut request: Request) -> Response {
    let (on_upgrade, accept) = match take_upgrade(&mut request, "GET /v1/ws") {
        Ok(parts) => parts,
        Err(answer) => return answer,
    };
    let slot = match take_slot(
        &app,
        client_ip(&request),
        ", or poll GET /v1/blocks/<height>",
    ) {
        Ok(slot) => slot,
        Err(answer) => return answer,
    };
    let blocks = app.feed.subscribe();
    tokio::spawn(async move {
        let upgraded = match on_upgrade.await {
            Ok(u) => u,
            Err(e) => {
                tracing::debug!("WebSocket upgrade failed: {e}");
                return;
            }
        };
        let ws = server_stream(upgraded, MAX_INCOMING_BYTES, 4 * FRAGMENT_BYTES).await;
        serve(ws, blocks, slot, app).await;
    });
    switching_protocols(&accept)
}

/// Sends a close frame with `code` and `reason` (within 1 s: a client that does not read
/// cannot get it).
pub(crate) async fn close(ws: &mut Ws, code: u16, reason: &str) {
    let frame = CloseFrame {
        code: CloseCode::from(code),
        reason: reason.into(),
    };
    // A client that does not read cannot get it: bounded like any send.
    let _ =
        tokio::time::timeout(Duration::from_secs(1), ws.send(Message::Close(Some(frame)))).await;
}

/// Why sending a block stopped.
enum SendFailed {
    /// The socket failed or the client went.
    Gone,
    /// A fragment waited `ws_send_timeout_ms`.
    Stalled,
    /// The feed got more than `ws_buffer_bytes` ahead in the middle of the message.
    Lagged,
}

/// Sends `item` as fragments of [`FRAGMENT_BYTES`] (slices of the shared buffer), each within
/// `timeout`, and gives up as soon as the feed's published bytes run more than `max_behind`
/// past what this subscriber has sent.
async fn send_block(
    ws: &mut Ws,
    item: &FeedItem,
    published: &mut watch::Receiver<u64>,
    timeout: Duration,
    max_behind: u64,
) -> Result<(), SendFailed> {
    let total = item.text.len();
    let mut offset = 0;
    loop {
        let end = (offset + FRAGMENT_BYTES).min(total);
        let opcode = if offset == 0 {
            OpCode::Data(Data::Text)
        } else {
            OpCode::Data(Data::Continue)
        };
        let frame = Frame::message(item.text.slice(offset..end), opcode, end == total);
        let sent_before = item.start + offset as u64;
        let send = ws.send(Message::Frame(frame));
        tokio::pin!(send);
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                r = &mut send => {
                    r.map_err(|_| SendFailed::Gone)?;
                    break;
                }
                () = &mut deadline => return Err(SendFailed::Stalled),
                changed = published.changed() => {
                    if changed.is_err() {
                        return Err(SendFailed::Gone);
                    }
                    if published.borrow().saturating_sub(sent_before) > max_behind {
                        return Err(SendFailed::Lagged);
                    }
                }
            }
        }
        offset = end;
        if offset >= total {
            return Ok(());
        }
    }
}

async fn serve(
    mut ws: Ws,
    mut blocks: broadcast::Receiver<FeedItem>,
    _slot: WsSlot,
    app: AppState,
) {
    let mut shutdown: watch::Receiver<bool> = app.shutdown.clone();
    let mut published = app.feed.published_bytes();
    let config = &app.config;
    let timeout = Duration::from_millis(config.ws_send_timeout_ms);
    let max_behind = config.ws_buffer_bytes;
    let metrics = &app.chain.metrics;
    loop {
        if *shutdown.borrow() {
            return close(&mut ws, CLOSE_GOING_AWAY, "node shutting down").await;
        }
        tokio::select! {
            block = blocks.recv() => match block {
                Ok(item) => {
                    let behind = published.borrow().saturating_sub(item.start);
                    if behind > max_behind {
                        metrics.ws_lagged.inc();
                        let reason = format!("{behind} bytes behind; resume from GET /v1/blocks/<height>");
                        return close(&mut ws, CLOSE_LAGGED, &reason).await;
                    }
                    match send_block(&mut ws, &item, &mut published, timeout, max_behind).await {
                        Ok(()) => {}
                        Err(SendFailed::Gone) => return,
                        Err(SendFailed::Stalled) => {
                            // The client stopped reading: no close frame can reach it either.
                            tracing::debug!("dropping a WebSocket subscriber that does not read");
                            metrics.ws_stalled.inc();
                            return;
                        }
                        Err(SendFailed::Lagged) => {
                            tracing::debug!("dropping a WebSocket subscriber over ws_buffer_bytes behind");
                            metrics.ws_lagged.inc();
                            return;
                        }
                    }
                }
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::debug!(missed, "closing a WebSocket subscriber that fell behind");
                    metrics.ws_lagged.inc();
                    let reason = format!("{missed} blocks behind; resume from GET /v1/blocks/<height>");
                    return close(&mut ws, CLOSE_LAGGED, &reason).await;
                }
                Err(broadcast::error::RecvError::Closed) => {
                    return close(&mut ws, CLOSE_GOING_AWAY, "node shutting down").await;
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
                    if ws.send(Message::text(r#"{"type":"pong"}"#)).await.is_err() {
                        return;
                    }
                }
                Some(Ok(_)) => {}
            },
            _ = shutdown.changed() => {}
        }
    }
}
