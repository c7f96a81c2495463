//! `GET /v1/ws`: the block subscription. After the upgrade the node sends one text message per
//! committed block, in height order: `{"type": "block", "block": <GET /v1/blocks/<h> object>}`.
//! Clients send nothing; a ping frame is answered with a pong (and a text `ping` with
//! `{"type": "pong"}`). A client more than `ws_buffer_blocks` blocks behind is closed with code
//! [`CLOSE_LAGGED`] and should resume from `GET /v1/blocks/<height>`; at shutdown clients get
//! close code 1001 (going away).

use std::time::Duration;

use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use tokio::sync::{broadcast, watch};

use crate::server::api_error::ApiError;
use crate::server::state::AppState;

/// Close code sent to a subscriber that fell too far behind.
pub const CLOSE_LAGGED: u16 = 4000;
/// Close code sent when the node shuts down (RFC 6455 "going away").
pub const CLOSE_GOING_AWAY: u16 = 1001;

/// The upgrade handler. The subscription starts before the upgrade completes, so no block
/// committed after the request is missed.
pub async fn subscribe(
    State(app): State<AppState>,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    let upgrade = match upgrade {
        Ok(u) => u,
        Err(e) => {
            return ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid",
                format!("GET /v1/ws must be a WebSocket upgrade: {}", e.body_text()),
            )
            .into_response()
        }
    };
    let blocks = app.feed.subscribe();
    let shutdown = app.shutdown.clone();
    upgrade.on_upgrade(move |socket| serve(socket, blocks, shutdown, app))
}

async fn close(mut socket: WebSocket, code: u16, reason: &str) {
    let frame = CloseFrame {
        code,
        reason: Utf8Bytes::from(reason),
    };
    let _ = socket.send(Message::Close(Some(frame))).await;
}

async fn serve(
    mut socket: WebSocket,
    mut blocks: broadcast::Receiver<Utf8Bytes>,
    mut shutdown: watch::Receiver<bool>,
    app: AppState,
) {
    loop {
        if *shutdown.borrow() {
            return close(socket, CLOSE_GOING_AWAY, "node shutting down").await;
        }
        tokio::select! {
            block = blocks.recv() => match block {
                Ok(text) => {
                    let limit = Duration::from_millis(app.chain.config.ws_send_timeout_ms);
                    match tokio::time::timeout(limit, socket.send(Message::Text(text))).await {
                        Ok(Ok(())) => {}
                        Ok(Err(_)) => return,
                        Err(_) => {
                            // The client stopped reading: no close frame can reach it either.
                            tracing::debug!("dropping a WebSocket subscriber that does not read");
                            app.chain.metrics.ws_stalled.inc();
                            return;
                        }
                    }
                }
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::debug!(missed, "closing a WebSocket subscriber that fell behind");
                    app.chain.metrics.ws_lagged.inc();
                    let reason = format!("{missed} blocks behind; resume from GET /v1/blocks/<height>");
                    return close(socket, CLOSE_LAGGED, &reason).await;
                }
                Err(broadcast::error::RecvError::Closed) => {
                    return close(socket, CLOSE_GOING_AWAY, "node shutting down").await;
                }
            },
            incoming = socket.recv() => match incoming {
                None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return,
                Some(Ok(Message::Ping(payload))) => {
                    if socket.send(Message::Pong(payload)).await.is_err() {
                        return;
                    }
                }
                Some(Ok(Message::Text(text))) if text.as_str().trim() == "ping" => {
                    if socket.send(Message::Text(Utf8Bytes::from_static(r#"{"type":"pong"}"#))).await.is_err() {
                        return;
                    }
                }
                Some(Ok(_)) => {}
            },
            _ = shutdown.changed() => {}
        }
    }
}
