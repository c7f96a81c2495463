//! `GET /v1/relay/<game>`: the move relay. Signed moves of a channel game (`docs/channels.md`)
//! travel peer to peer, as seed 001 intends: the node forwards each signed move a player sends
//! over this WebSocket to the other connections of the same game, at once, off-chain. It checks
//! the signature and that the signer is the game key of one of the game's two seats before
//! forwarding, bounds what each connection and each game may send, and stores nothing: nothing
//! of it reaches state, blocks or consensus. Clients use it first and the move board as the
//! fallback (a move nobody was connected to receive is lost here; the board keeps it in the
//! chain's events).
//!
//! The game must exist in the `channel` module's state (`m/channel/game/<id>`: its players and
//! game keys are read once, when the connection opens; they never change afterwards).
//!
//! Messages (text frames of JSON, at most [`MAX_FRAME_BYTES`]):
//!
//! | direction | message |
//! |---|---|
//! | client → node | `{"move": {"n": <u64>, "data": "<hex>", "sig": "<base64>"}, "prev": "<64 hex: state hash before the move>"}` |
//! | node → sender | `{"type": "relayed", "n": <u64>, "seat": 0\|1, "to": <connections it went to>}` |
//! | node → others | `{"type": "move", "game": "<id>", "seat": 0\|1, "move": {...as sent}, "prev": "<hex>"}` |
//! | node → all | `{"type": "peers", "count": <other connections of the game>}` when one joins or leaves (and once on connecting) |
//! | node → sender | `{"type": "error", "error": "<code>", "message": "<text>"}` for a refused frame: `bad_json`, `bad_signature` (no seat's game key signed this move text), `rate_limited` |
//!
//! The move text checked is exactly the one the chain checks
//! (`gamechain_channel_protocol::Domain::move_message` with the chain's genesis hash, module
//! `channel`, the game id, `n`, `prev`, the seat's player address and `data`), tried for seat 0
//! then seat 1. A text `ping` is answered `{"type": "pong"}`.
//!
//! Bounds (refusals answer an error frame; the connection stays): [`FRAMES_PER_SEC`] per
//! connection (burst [`FRAMES_BURST`]), [`rooms::GAME_FRAMES_PER_SEC`] per game over all its
//! connections; at most [`rooms::MAX_PER_GAME`] connections per game (`503 relay_full` at the upgrade)
//! and `max_relay_connections` in all (`503 too_many_subscribers`); [`rooms::QUEUE`] messages waiting
//! to be sent per connection, past which that connection is closed (4001: it does not read). A
//! larger frame, or a binary one, closes the connection (1009 / 1003).

pub mod rooms;

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use futures_util::{SinkExt, StreamExt};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::{mpsc, watch, OwnedSemaphorePermit};
use tokio_tungstenite::tungstenite::Message;

use gamechain_runtime::State as _;

use crate::server::api_error::ApiError;
use crate::server::rate_limit::Bucket;
use crate::server::relay::rooms::{GAME_FRAMES_PER_SEC, MAX_PER_GAME};
use crate::server::state::AppState;
use crate::server::ws::{close, server_stream, switching_protocols, take_upgrade, Ws};

/// The module whose games the relay serves.
pub const CHANNEL_MODULE: &str = "channel";
/// Largest frame a client may send, bytes (a signed move is ~120 bytes plus its data).
pub const MAX_FRAME_BYTES: usize = 4096;
/// Frames one connection may send per second on average.
pub const FRAMES_PER_SEC: f64 = 20.0;
/// Frames one connection may send at once above the average.
pub const FRAMES_BURST: f64 = 40.0;
/// Close code for a connection dropped because it did not read its messages.
pub const CLOSE_SLOW: u16 = 4001;

/// The players and game keys of a game, as its record holds them.
#[derive(Debug, Clone, Deserialize)]
struct Seats {
    players: [String; 2],
    signers: [String; 2],
}

/// Whether `id` is a channel game id: 16 lowercase hex digits.
fn game_id_ok(id: &str) -> bool {
    id.len() == 16
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The upgrade handler: checks the game and the bounds before answering `101`.
pub async fn connect(
    State(app): State<AppState>,
    Path(game): Path<String>,
    mut request: Request,
) -> Response {
    if !game_id_ok(&game) {
        return ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid",
            format!("`{game}` is not a channel game id (16 lowercase hex digits)"),
        )
        .into_response();
    }
    let (on_upgrade, accept) = match take_upgrade(&mut request, "GET /v1/relay/<game>") {
        Ok(parts) => parts,
        Err(answer) => return answer,
    };
    let chain = app.chain.clone();
    let key = format!("m/{CHANNEL_MODULE}/game/{game}");
    let record = tokio::task::spawn_blocking(move || chain.head().state.get(&key)).await;
    let seats: Seats = match record {
        Ok(Some(bytes)) => match serde_json::from_slice(&bytes) {
            Ok(seats) => seats,
            Err(_) => {
                return ApiError::internal("the game's record does not name two players")
                    .into_response()
            }
        },
        Ok(None) => {
            return ApiError::not_found(format!("no channel game {game}")).into_response();
        }
        Err(e) => return ApiError::internal(format!("reading the game: {e}")).into_response(),
    };
    let Ok(slot) = app.relay_slots.clone().try_acquire_owned() else {
        let max = app.config.max_relay_connections;
        return ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "too_many_subscribers",
            format!("{max} relay connections are open already (max_relay_connections); retry later, or use the move board"),
        )
        .into_response();
    };
    let Some((id, outgoing)) = app.relay.join(&game) else {
        return ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "relay_full",
            format!("game {game} has {MAX_PER_GAME} relay connections already"),
        )
        .into_response();
    };
    tokio::spawn(async move {
        let upgraded = match on_upgrade.await {
            Ok(u) => u,
            Err(e) => {
                tracing::debug!("relay upgrade failed: {e}");
                app.relay.leave(&game, id);
                return;
            }
        };
        let ws = server_stream(upgraded, MAX_FRAME_BYTES, 64 * 1024).await;
        let relay = app.relay.clone();
        Connection {
            app,
            game: game.clone(),
            id,
            seats,
            bucket: Bucket::full(FRAMES_BURST, Instant::now()),
            _slot: slot,
        }
        .serve(ws, outgoing)
        .await;
        relay.leave(&game, id);
    });
    switching_protocols(&accept)
}

/// A signed move as a client sends it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Frame {
    #[serde(rename = "move")]
    mv: MoveJson,
    prev: String,
}

#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
struct MoveJson {
    n: u64,
    data: String,
    sig: String,
}

fn error(code: &str, message: impl Into<String>) -> Arc<str> {
    json!({"type": "error", "error": code, "message": message.into()})
        .to_string()
        .into()
}

/// One relay connection.
struct Connection {
    app: AppState,
    game: String,
    id: u64,
    seats: Seats,
    bucket: Bucket,
    _slot: OwnedSemaphorePermit,
}

impl Connection {
    async fn serve(mut self, mut ws: Ws, mut outgoing: mpsc::Receiver<Arc<str>>) {
        let mut shutdown: watch::Receiver<bool> = self.app.shutdown.clone();
        loop {
            if *shutdown.borrow() {
                return close(&mut ws, 1001, "node shutting down").await;
            }
            tokio::select! {
                out = outgoing.recv() => match out {
                    Some(text) => {
                        if ws.send(Message::text(text.to_string())).await.is_err() {
                            return;
                        }
                    }
                    // Removed from its game: its queue filled up (it did not read).
                    None => return close(&mut ws, CLOSE_SLOW, "not reading; reconnect").await,
                },
                incoming = ws.next() => match incoming {
                    None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return,
                    Some(Ok(Message::Ping(payload))) => {
                        if ws.send(Message::Pong(payload)).await.is_err() {
                            return;
                        }
                    }
                    Some(Ok(Message::Text(text))) => {
                        let answer = if text.as_str().trim() == "ping" {
                            Arc::from(r#"{"type":"pong"}"#)
                        } else {
                            self.relay(text.as_str()).await
                        };
                        if ws.send(Message::text(answer.to_string())).await.is_err() {
                            return;
                        }
                    }
                    Some(Ok(Message::Binary(_))) => {
                        return close(&mut ws, 1003, "text frames of JSON only").await;
                    }
                    Some(Ok(_)) => {}
                },
                _ = shutdown.changed() => {}
            }
        }
    }

    /// Checks one frame and forwards it: the answer to its sender.
    async fn relay(&mut self, text: &str) -> Arc<str> {
        if let Err(wait) = self
            .bucket
            .take(FRAMES_PER_SEC, FRAMES_BURST, Instant::now(), 1.0)
        {
            return error(
                "rate_limited",
                format!(
                    "over {FRAMES_PER_SEC} frames a second on this connection; retry in {wait} s"
                ),
            );
        }
        let frame: Frame = match serde_json::from_str(text) {
            Ok(f) => f,
            Err(e) => {
                return error(
                    "bad_json",
                    format!(
                    "expected {{\"move\": {{\"n\", \"data\", \"sig\"}}, \"prev\": \"<hex>\"}}: {e}"
                ),
                )
            }
        };
        let Ok(data) = hex::decode(&frame.mv.data) else {
            return error("bad_json", "move.data must be hex");
        };
        if frame.prev.len() != 64 || hex::decode(&frame.prev).is_err() {
            return error("bad_json", "prev must be 64 hex digits (the state hash)");
        }
        let domain = gamechain_channel_protocol::Domain {
            chain: self.app.chain.genesis_hash.clone(),
            module: CHANNEL_MODULE.to_string(),
        };
        let (game, seats, mv, prev) = (
            self.game.clone(),
            self.seats.clone(),
            frame.mv.clone(),
            frame.prev.clone(),
        );
        // Key recovery is CPU work: off the async threads.
        let seat = tokio::task::spawn_blocking(move || {
            (0..2usize).find(|&s| {
                let text = domain.move_message(&game, mv.n, &prev, &seats.players[s], &data);
                gamechain_runtime::chain::verify_message(&seats.signers[s], text, &mv.sig).is_ok()
            })
        })
        .await
        .ok()
        .flatten();
        let Some(seat) = seat else {
            return error(
                "bad_signature",
                "no seat's game key signed this move of this game (move text as in docs/channels.md)",
            );
        };
        let out: Value = json!({
            "type": "move", "game": self.game, "seat": seat, "move": frame.mv, "prev": frame.prev,
        });
        match self
            .app
            .relay
            .forward(&self.game, self.id, out.to_string().into())
        {
            Ok(to) => json!({"type": "relayed", "n": frame.mv.n, "seat": seat, "to": to})
                .to_string()
                .into(),
            Err(wait) => error(
                "rate_limited",
                format!(
                    "over {GAME_FRAMES_PER_SEC} frames a second for this game; retry in {wait} s"
                ),
            ),
        }
    }
}
