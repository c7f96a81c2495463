//! `GET /v1/relay/<game>`: the move relay. Signed moves of a channel game (`docs/channels.md`)
//! travel peer to peer, as seed 001 intends: the node forwards each signed move a player sends
//! over this WebSocket to the other player's connections of the same game, at once, off-chain.
//! It checks the signature and that the signer is the game key of the sender's seat before
//! forwarding, bounds what each connection and each game may send, and stores nothing: nothing
//! of it reaches state, blocks or consensus. Clients use it first and the move board as the
//! fallback (a move the opponent was not connected to receive is lost here; the board keeps it
//! in the chain's events).
//!
//! **The seat hello.** Every connection is one seat's, proved before the upgrade: the request's
//! query is `?seat=<0|1>&time=<ms>&sig=<base64>`, `sig` the seat's game key's signature of
//! `gamechain_client::relay::hello_text` (chain, game, seat, time; the Divi signed-message
//! scheme of moves). The node takes it when `time` is within `HELLO_SKEW_MS` (60 s) of its
//! clock (node policy, nothing of it reaches consensus), the signature recovers to
//! `signers[seat]` of the game record, and the same hello was not taken before
//! ([`rooms::Hellos`]); else `401 hello_required` (no hello) or `403 bad_hello`. So a stranger
//! holds no connection at all, and `to` and `peers` count the opponent's connections only.
//!
//! The game must exist in the `channel` module's state (`m/channel/game/<id>`: its players and
//! game keys are read once, when the connection opens; they never change afterwards).
//!
//! Messages (text frames of JSON, at most [`MAX_FRAME_BYTES`]):
//!
//! | direction | message |
//! |---|---|
//! | client → node | `{"move": {"n": <u64>, "data": "<hex>", "sig": "<base64>"}, "prev": "<64 hex: state hash before the move>"}` |
//! | node → sender | `{"type": "relayed", "n": <u64>, "seat": 0\|1, "to": <connections of the other seat it went to>}` |
//! | node → the other seat | `{"type": "move", "game": "<id>", "seat": 0\|1, "move": {...as sent}, "prev": "<hex>"}` |
//! | node → each connection | `{"type": "peers", "count": <connections of the other seat>}` once on connecting, then whenever that count changes |
//! | node → sender | `{"type": "error", "error": "<code>", "message": "<text>"}` for a refused frame: `bad_json`, `bad_signature` (the connection's seat's game key did not sign this move text), `rate_limited` |
//!
//! The move text checked is exactly the one the chain checks
//! (`gamechain_channel_protocol::Domain::move_message` with the chain's genesis hash, module
//! `channel`, the game id, `n`, `prev`, the seat's player address and `data`), for the
//! connection's own seat. A text `ping` is answered `{"type": "pong"}`.
//!
//! Bounds (refusals answer an error frame; the connection stays): [`FRAMES_PER_SEC`] per
//! connection (burst [`FRAMES_BURST`]), [`rooms::GAME_FRAMES_PER_SEC`] per game over all its
//! connections; at most [`rooms::MAX_PER_SEAT`] connections per seat (a seat's next one closes
//! its oldest with [`CLOSE_REPLACED`]) and `max_relay_connections` in all (`503
//! too_many_subscribers`); [`rooms::QUEUE`] messages waiting to be sent per connection, past
//! which that connection is closed ([`CLOSE_SLOW`]: it does not read). A larger frame, or a
//! binary one, closes the connection (1009 / 1003).

pub mod rooms;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use axum::extract::{Path, RawQuery, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use futures_util::{SinkExt, StreamExt};
use gamechain_chain::wire::query::parse_query;
use gamechain_client::relay::{hello_text, HELLO_SKEW_MS};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::{mpsc, watch, OwnedSemaphorePermit};
use tokio_tungstenite::tungstenite::Message;

use gamechain_runtime::State as _;

use crate::server::api_error::ApiError;
use crate::server::rate_limit::Bucket;
use crate::server::relay::rooms::{Joined, GAME_FRAMES_PER_SEC};
use crate::server::state::AppState;
use crate::server::ws::{close, server_stream, switching_protocols, take_upgrade, Ws};

/// The module whose games the relay serves.
pub const CHANNEL_MODULE: &str = gamechain_client::relay::RELAY_MODULE;
/// Largest frame a client may send, bytes (a signed move is ~120 bytes plus its data).
pub const MAX_FRAME_BYTES: usize = 4096;
/// Frames one connection may send per second on average.
pub const FRAMES_PER_SEC: f64 = 20.0;
/// Frames one connection may send at once above the average.
pub const FRAMES_BURST: f64 = 40.0;
/// Close code for a connection dropped because it did not read its messages.
pub const CLOSE_SLOW: u16 = 4001;
/// Close code for a connection whose seat opened a newer one past `rooms::MAX_PER_SEAT`.
pub const CLOSE_REPLACED: u16 = 4002;

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

/// A seat hello as the query carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Hello {
    seat: u8,
    time_ms: u64,
    sig: String,
}

/// `401 hello_required`.
fn hello_required() -> Response {
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        "hello_required",
        "a relay connection is one seat's: open it with ?seat=<0|1>&time=<ms>&sig=<base64>, the \
         seat's game key's signature of the hello text (node/API.md, \"Move relay\")",
    )
    .into_response()
}

/// `403 bad_hello` saying why.
fn bad_hello(why: impl Into<String>) -> Response {
    ApiError::new(StatusCode::FORBIDDEN, "bad_hello", why.into()).into_response()
}

/// The node's clock, ms since the Unix epoch (the system clock, never the dev clock: clients
/// sign with theirs).
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The hello of `query` (`seat`, `time`, `sig`) at the node's time `now`: `Ok(None)` when it
/// has none of the three; `Err(why)` when it is malformed or its time is over
/// [`HELLO_SKEW_MS`] off. The signature is checked later, against the game's keys.
fn read_hello(query: &gamechain_sdk::Query, now: u64) -> Result<Option<Hello>, String> {
    let (seat, time, sig) = (query.get("seat"), query.get("time"), query.get("sig"));
    let (seat, time, sig) = match (seat, time, sig) {
        (None, None, None) => return Ok(None),
        (Some(seat), Some(time), Some(sig)) => (seat, time, sig),
        _ => return Err("a hello needs all of seat, time and sig".into()),
    };
    let seat = match seat.as_str() {
        "0" => 0,
        "1" => 1,
        _ => return Err(format!("seat must be 0 or 1, not `{seat}`")),
    };
    let time_ms: u64 = time
        .parse()
        .map_err(|_| format!("time must be ms since the Unix epoch, not `{time}`"))?;
    if time_ms.abs_diff(now) > HELLO_SKEW_MS {
        return Err(format!(
            "the hello's time {time_ms} is {} s from the node's clock ({now}); it must be within {} s: check this computer's clock",
            time_ms.abs_diff(now) / 1000,
            HELLO_SKEW_MS / 1000
        ));
    }
    // Base64 has no spaces: a `+` sent without percent-encoding reads as one.
    Ok(Some(Hello {
        seat,
        time_ms,
        sig: sig.replace(' ', "+"),
    }))
}

/// The upgrade handler: checks the game, the hello and the bounds before answering `101`.
pub async fn connect(
    State(app): State<AppState>,
    Path(game): Path<String>,
    RawQuery(query): RawQuery,
    mut request: Request,
) -> Response {
    let route = "GET /v1/relay/<game>";
    if !game_id_ok(&game) {
        return ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid",
            format!("`{game}` is not a channel game id (16 lowercase hex digits)"),
        )
        .into_response();
    }
    let query = match parse_query(query.as_deref()) {
        Ok(q) => q,
        Err(e) => return ApiError::invalid(e).into_response(),
    };
    if let Some(key) = query
        .keys()
        .find(|k| !["seat", "time", "sig"].contains(&k.as_str()))
    {
        return ApiError::invalid(format!("{route} takes seat, time and sig; not `{key}`"))
            .into_response();
    }
    let (on_upgrade, accept) = match take_upgrade(&mut request, route) {
        Ok(parts) => parts,
        Err(answer) => return answer,
    };
    let hello = match read_hello(&query, now_ms()) {
        Ok(Some(h)) => h,
        Ok(None) => return hello_required(),
        Err(why) => return bad_hello(why),
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
    // Key recovery is CPU work: off the async threads.
    let text = hello_text(&app.chain.genesis_hash, &game, hello.seat, hello.time_ms);
    let (signer, sig) = (
        seats.signers[hello.seat as usize].clone(),
        hello.sig.clone(),
    );
    let signed = tokio::task::spawn_blocking(move || {
        gamechain_runtime::chain::verify_message(&signer, text, &sig).is_ok()
    })
    .await
    .unwrap_or(false);
    if !signed {
        return bad_hello(format!(
            "the hello is not signed by seat {}'s game key of game {game} (the hello text of node/API.md, \"Move relay\", with this chain's genesis hash)",
            hello.seat
        ));
    }
    if !app.relay.take_hello(&hello.sig) {
        return bad_hello("this hello was used already: sign a new one for each connection");
    }
    let Ok(slot) = app.relay_slots.clone().try_acquire_owned() else {
        let max = app.config.max_relay_connections;
        return ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "too_many_subscribers",
            format!("{max} relay connections are open already (max_relay_connections); retry later, or use the move board"),
        )
        .into_response();
    };
    let seat = hello.seat;
    let Joined {
        id,
        outgoing,
        replaced,
    } = app.relay.join(&game, seat);
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
            seat,
            seats,
            bucket: Bucket::full(FRAMES_BURST, Instant::now()),
            replaced,
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

/// One relay connection, of one seat.
struct Connection {
    app: AppState,
    game: String,
    seat: u8,
    seats: Seats,
    bucket: Bucket,
    /// Set when a newer connection of the seat replaced this one.
    replaced: Arc<AtomicBool>,
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
                    // Removed from its game: replaced by a newer connection of its seat, or its
                    // queue filled up (it did not read).
                    None if self.replaced.load(Ordering::Relaxed) => {
                        return close(&mut ws, CLOSE_REPLACED, "replaced by a newer connection of this seat").await
                    }
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
        let seat = self.seat;
        let text = domain.move_message(
            &self.game,
            frame.mv.n,
            &frame.prev,
            &self.seats.players[seat as usize],
            &data,
        );
        let (signer, sig) = (
            self.seats.signers[seat as usize].clone(),
            frame.mv.sig.clone(),
        );
        // Key recovery is CPU work: off the async threads.
        let signed = tokio::task::spawn_blocking(move || {
            gamechain_runtime::chain::verify_message(&signer, text, &sig).is_ok()
        })
        .await
        .unwrap_or(false);
        if !signed {
            return error(
                "bad_signature",
                format!("seat {seat}'s game key did not sign this move of this game (move text as in docs/channels.md)"),
            );
        }
        let out: Value = json!({
            "type": "move", "game": self.game, "seat": seat, "move": frame.mv, "prev": frame.prev,
        });
        match self
            .app
            .relay
            .forward(&self.game, seat, out.to_string().into())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn query(pairs: &[(&str, &str)]) -> gamechain_sdk::Query {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_hello_is_read_from_the_query_within_the_clock_window() {
        let now = 1_700_000_000_000;
        assert_eq!(read_hello(&query(&[]), now), Ok(None));
        let t = now - HELLO_SKEW_MS;
        let h = read_hello(
            &query(&[("seat", "1"), ("time", &t.to_string()), ("sig", "H+/a b=")]),
            now,
        )
        .unwrap()
        .unwrap();
        // A `+` sent unencoded arrives as a space: read back as `+`.
        assert_eq!(
            h,
            Hello {
                seat: 1,
                time_ms: t,
                sig: "H+/a+b=".into()
            }
        );
        for bad in [
            query(&[("seat", "0"), ("time", &now.to_string())]),
            query(&[("seat", "2"), ("time", &now.to_string()), ("sig", "x")]),
            query(&[("seat", "0"), ("time", "-1"), ("sig", "x")]),
            query(&[("seat", "0"), ("time", &(t - 1).to_string()), ("sig", "x")]),
            query(&[
                ("seat", "0"),
                ("time", &(now + HELLO_SKEW_MS + 1).to_string()),
                ("sig", "x"),
            ]),
        ] {
            assert!(read_hello(&bad, now).is_err(), "{bad:?}");
        }
    }
}
