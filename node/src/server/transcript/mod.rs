//! `GET /v1/games/<module>/<id>/transcript[?from=<height>]`: everything a client needs to
//! re-execute one game and check it against the chain's signed headers (`node/API.md`,
//! "Transcripts"; `docs/verify-a-match.md`).
//!
//! - **Which transactions**: those whose receipts carry events of `<module>` for game `<id>`,
//!   by the rule of the events feed (`game_feed/events.rs`: the transaction names the module, its
//!   event's data has `id` or `game` equal to `<id>`); failed transactions emit nothing and are
//!   not part of a game. In chain order.
//! - **Where the game starts**: the block of the transaction whose txid begins with `<id>` (the
//!   table games' id is the first 16 hex characters of the creating txid), or `from` for games
//!   named otherwise. Blocks are read from there to the head, at most [`MAX_SCAN_BLOCKS`], and
//!   no further than the block of the game's `<module>.finished` event (`"finished": true`)
//!   nor than [`MAX_BUILD_TIME`] of reading;
//!   an unfinished game's answer is the transcript so far (`"finished": false`, `scanned_to`
//!   the last height read).
//! - **Bounds**: at most [`MAX_TRANSCRIPT_TXS`] transactions and [`MAX_TRANSCRIPT_BYTES`] of
//!   steps (`413 too_large` beyond), [`TRANSCRIPTS_AT_ONCE`] built at once node-wide and one
//!   per client IP (`503 busy` at once for more).
//! - **Code**: the module's code hash, served only when no upgrade took effect at or after the
//!   game's first block: otherwise `409 conflict` (one code hash per transcript).
//! - **Errors**: `404 not_found` for an unknown module or game (no transaction with that txid
//!   prefix and no `from`, or no event of the game), `400 invalid` for a bad id or query,
//!   `410 pruned` when a block is not kept here.

pub mod build;

use axum::extract::rejection::PathRejection;
use std::collections::BTreeSet;
use std::net::IpAddr;
use std::sync::Mutex;

use axum::extract::{Path, RawQuery, Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use tokio::sync::Semaphore;

use crate::server::api_error::ApiError;
use crate::server::game_feed::events::EventFilter;
use crate::server::state::AppState;
use crate::server::ws::client_ip;
use build::TranscriptError;
use gamechain_chain::wire::query::parse_query;

pub use build::{MAX_BUILD_TIME, MAX_SCAN_BLOCKS, MAX_TRANSCRIPT_BYTES, MAX_TRANSCRIPT_TXS};
/// Transcripts being built at once, node-wide (others are refused: `503 busy`).
pub const TRANSCRIPTS_AT_ONCE: usize = 2;

static BUILDING: Semaphore = Semaphore::const_new(TRANSCRIPTS_AT_ONCE);

/// Client IPs with a transcript being built (one each).
static BUILDING_FOR: Mutex<BTreeSet<IpAddr>> = Mutex::new(BTreeSet::new());

/// A client IP's one build, given back when dropped.
struct PerIp(IpAddr);

impl PerIp {
    fn take(ip: IpAddr) -> Option<PerIp> {
        let mut held = BUILDING_FOR.lock().unwrap_or_else(|e| e.into_inner());
        held.insert(ip).then_some(PerIp(ip))
    }
}

impl Drop for PerIp {
    fn drop(&mut self) {
        let mut held = BUILDING_FOR.lock().unwrap_or_else(|e| e.into_inner());
        held.remove(&self.0);
    }
}

fn invalid(message: String) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, "invalid", message)
}

/// The handler.
pub async fn get_transcript(
    State(app): State<AppState>,
    path: Result<Path<(String, String)>, PathRejection>,
    RawQuery(query): RawQuery,
    request: Request,
) -> Result<Response, ApiError> {
    let ip = client_ip(&request);
    let Path((module, game)) = path.map_err(|e| invalid(e.body_text()))?;
    let query = parse_query(query.as_deref()).map_err(ApiError::invalid)?;
    if let Some(key) = query.keys().find(|k| k.as_str() != "from") {
        return Err(invalid(format!(
            "GET /v1/games/<module>/<id>/transcript takes from; not `{key}`"
        )));
    }
    let from = match query.get("from") {
        None => None,
        Some(f) => Some(
            f.parse::<u64>()
                .map_err(|_| invalid("from must be a height (u64)".into()))?,
        ),
    };
    let filter = EventFilter::new(module, Some(game), None, app.chain.config.network).map_err(
        |e| match e.starts_with("module:") {
            true => ApiError::not_found(e),
            false => invalid(e),
        },
    )?;
    // One build per client IP at a time, and refused at once when every build slot is taken:
    // a queue would let a few slow requests hold everybody else's until the request timeout.
    let mine = PerIp::take(ip).ok_or_else(|| {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "busy",
            "a transcript for this address is being built already; retry when it is done"
                .to_string(),
        )
    })?;
    let permit = BUILDING.try_acquire().map_err(|_| {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "busy",
            format!("{TRANSCRIPTS_AT_ONCE} transcripts are being built; retry in a few seconds"),
        )
    })?;
    let chain = app.chain.clone();
    // The permit goes with the work: a request that times out (its future dropped) keeps its
    // slot until the blocking read it started ends.
    let built = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        let _mine = mine;
        build::build(&chain, &filter, from)
    })
    .await
    .map_err(|_| ApiError::internal("the node failed on this request"))?;
    match built {
        Ok(t) => {
            // Through `Value`, as every answer of the API: keys sorted.
            let value = serde_json::to_value(&t).expect("a transcript serialises");
            let text = value.to_string();
            Ok(([(header::CONTENT_TYPE, "application/json")], text).into_response())
        }
        Err(TranscriptError::Chain(e)) => Err(e.into()),
        Err(TranscriptError::TooLarge(m)) => {
            Err(ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "too_large", m))
        }
        Err(TranscriptError::CodeChanged(m)) => {
            Err(ApiError::new(StatusCode::CONFLICT, "conflict", m))
        }
    }
}
