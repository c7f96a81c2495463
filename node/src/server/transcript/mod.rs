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
//! - **The log** (a chain with state proofs): the game's log (`gamechain_chain::game_log`) is
//!   read first with its proof against the head, and blocks are read past the finishing step up
//!   to the log's last step; the answer's `log` lets verifiers check that no step was left out.
//! - **Starting balances** (a chain with state proofs): `start` proves each player's GOLD
//!   balance before their first step (`start.rs`), and `start_balances` holds those amounts.
//! - **Sessions** (a chain with state proofs): each `session_game` step's `session` proves the
//!   session record it was admitted under against the state before its block (`session.rs`).
//! - **Bounds**: at most [`MAX_TRANSCRIPT_TXS`] transactions and [`MAX_TRANSCRIPT_BYTES`] of
//!   steps (`413 too_large` beyond).
//! - **Cost**: answers are kept (`cache.rs`: up to [`CACHE_BYTES`] in [`CACHE_ENTRIES`]
//!   answers, least recently used out), keyed by module, id and `from`: an unfinished game's
//!   transcript, `404` and `410` while the head does not move, a finished game's while its
//!   module is not upgraded (on a chain without validators; with them while the head does not
//!   move, as a step's finality proof may come later), `413` and `409` for good. A request for an answer being built
//!   waits for that build (one build per key and head). A build takes one of
//!   [`TRANSCRIPTS_AT_ONCE`] slots node-wide (waiting at most [`BUILD_SLOT_WAIT`] for one,
//!   `503 busy` after; a freed slot goes to the waiting client IP with the most budget left,
//!   `slots.rs`) and one per client IP (`503 busy` at once for a second). Each
//!   client network (a /24 or /64) has a budget of work (`budget.rs`): [`BUDGET_BURST_MS`] milliseconds,
//!   refilled [`BUDGET_MS_PER_SEC`] a second; a build costs the milliseconds it took, an
//!   answer served from the cache or another request's build 1 ms per 16 KiB; below 1 ms
//!   left the answer is `429 rate_limited` (with `retry-after`). So a client repeating one
//!   game's request costs the node one build per new block at most, and one network asking
//!   for ever new transcripts at most a fifth of a core. A large answer is counted while it is
//!   sent and its sending cut at a deadline (`sending.rs`), so clients that never read hold a
//!   bounded amount of memory. A request whose build was abandoned (its starter went away)
//!   looks the answer up again and builds it itself.
//! - **Code**: the module's code hash, served only when no upgrade took effect at or after the
//!   game's first block: otherwise `409 conflict` (one code hash per transcript).
//! - **Errors**: `404 not_found` for an unknown module or game (no transaction with that txid
//!   prefix and no `from`, or no event of the game), `400 invalid` for a bad id or query,
//!   `410 pruned` when a block is not kept here.

pub mod budget;
pub mod build;
pub mod cache;
pub mod sending;
pub mod session;
pub mod slots;
pub mod start;
pub mod work;

use axum::extract::rejection::PathRejection;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Path, RawQuery, Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse as _, Response};
use bytes::Bytes;

use crate::server::api_error::ApiError;
use crate::server::game_feed::events::EventFilter;
use crate::server::state::AppState;
use crate::server::ws::client_ip;
use budget::Budget;
use build::TranscriptError;
use cache::{Answer, Flight, HeadId, Key, Validity};
use gamechain_chain::wire::query::parse_query;
use gamechain_ledger::error::ChainError;
use sending::SendRefused;

pub use build::{MAX_BUILD_TIME, MAX_SCAN_BLOCKS, MAX_TRANSCRIPT_BYTES, MAX_TRANSCRIPT_TXS};
use work::PerIp;
pub use work::{
    Transcripts, BUDGET_BURST_MS, BUDGET_MS_PER_SEC, BUILD_SLOT_WAIT, CACHE_BYTES, CACHE_ENTRIES,
    TRANSCRIPTS_AT_ONCE,
};
fn invalid(message: String) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, "invalid", message)
}

fn busy(message: String) -> ApiError {
    ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "busy", message)
}

/// `429 rate_limited` for an IP over its transcript budget.
fn over_budget(retry_after_s: u64) -> ApiError {
    ApiError {
        message: format!(
            "this address has used its transcript budget ({BUDGET_BURST_MS} ms of work, {BUDGET_MS_PER_SEC} ms more a second); retry in {retry_after_s} s"
        ),
        ..ApiError::rate_limited(retry_after_s)
    }
}

/// Serves `answer` to `ip`, charging its size to the IP's budget (refused when it is spent).
fn serve(t: &Transcripts, ip: IpAddr, answer: &Answer) -> Result<Response, ApiError> {
    let now = Instant::now();
    t.budget.check(ip, now).map_err(over_budget)?;
    t.budget.charge(ip, now, Budget::send_cost(answer.len()));
    send(t, ip, answer)
}

/// The response of `answer` to `ip`, a large one counted while it is sent (`sending.rs`):
/// `503 busy` when the node sends too much already, `429 rate_limited` when `ip`'s network
/// does.
fn send(t: &Transcripts, ip: IpAddr, answer: &Answer) -> Result<Response, ApiError> {
    let Answer::Json(bytes) = answer else {
        return Ok(answer.response());
    };
    match t.sending.body(budget::network(ip), bytes.clone()) {
        Ok(body) => Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response()),
        Err(SendRefused::Node) => {
            let mut e = busy(format!(
                "{} MiB of transcripts are being sent already; retry shortly",
                sending::MAX_SENDING_BYTES >> 20
            ));
            e.retry_after_s = Some(1);
            Err(e)
        }
        Err(SendRefused::Network) => Err(ApiError {
            message: format!(
                "this address's network is being sent {} MiB of transcripts already; retry when \
                 they are read",
                sending::MAX_SENDING_BYTES_PER_NETWORK >> 20
            ),
            ..ApiError::rate_limited(1)
        }),
    }
}

/// The answer of a build and how long it stays right (`None`: not kept). `upgraded`: the
/// module's `upgraded_height` read before the build, `None` when a finished game's answer must
/// not outlive the head either (the module is gone, or the chain has validators).
fn answer_of(
    built: Result<gamechain_chain::wire::transcript::Transcript, TranscriptError>,
    head: HeadId,
    upgraded: Option<Option<u64>>,
) -> (Answer, Option<Validity>) {
    match built {
        Ok(t) => {
            // Through `Value`, as every answer of the API: keys sorted.
            let value = serde_json::to_value(&t).expect("a transcript serialises");
            let valid = match (t.finished, upgraded) {
                (true, Some(upgraded)) => Validity::Code { head, upgraded },
                _ => Validity::Head(head),
            };
            (Answer::Json(Bytes::from(value.to_string())), Some(valid))
        }
        Err(TranscriptError::Chain(e)) => {
            let valid = matches!(e, ChainError::NotFound(_) | ChainError::Pruned(_))
                .then_some(Validity::Head(head));
            (Answer::Error(e.into()), valid)
        }
        Err(TranscriptError::TooLarge(m)) => (
            Answer::Error(ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "too_large", m)),
            Some(Validity::Forever),
        ),
        Err(TranscriptError::CodeChanged(m)) => (
            Answer::Error(ApiError::new(StatusCode::CONFLICT, "conflict", m)),
            Some(Validity::Forever),
        ),
    }
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
    let filter = EventFilter::new(module, Some(game.clone()), None, app.chain.config.network)
        .map_err(|e| match e.starts_with("module:") {
            true => ApiError::not_found(e),
            false => invalid(e),
        })?;
    let t = app.transcripts.clone();
    let chain = app.chain.clone();
    let key = Key {
        module: filter.module.clone(),
        game,
        from,
    };
    let upgraded = {
        let chain = chain.clone();
        let module = key.module.clone();
        move || chain.module_record(&module).ok().map(|r| r.upgraded_height)
    };
    // Kept already, or being built at this head: no build of this request's own. A build
    // abandoned by the request that started it (its client went away while it waited for a
    // slot) is looked up again, and then started by this request.
    let mut head = HeadId::of(&chain);
    let mut lookups = 0;
    loop {
        let kept = cache::lock(&t.cache).get(&key, head, upgraded.clone());
        if let Some(answer) = kept {
            return serve(&t, ip, &answer);
        }
        let flying = cache::lock(&t.cache).join(&key, head);
        let Some(mut rx) = flying else {
            break;
        };
        let waited = rx
            .wait_for(Option::is_some)
            .await
            .map(|a| a.clone().expect("waited for"));
        match waited {
            Ok(answer) => return serve(&t, ip, &answer),
            Err(_) if lookups < 3 => {
                lookups += 1;
                head = HeadId::of(&chain);
            }
            Err(_) => {
                return Err(busy(
                    "the build of this transcript was abandoned; retry".to_string(),
                ))
            }
        }
    }
    t.budget.check(ip, Instant::now()).map_err(over_budget)?;
    // One build per client IP at a time (a second is refused at once), and a node-wide slot
    // waited for at most BUILD_SLOT_WAIT, the IPs with the most budget left first: an address
    // that builds much waits behind one that builds little, and cannot hold the slots for
    // long (its budget).
    let mine = PerIp::take(&t, ip).ok_or_else(|| {
        busy("a transcript for this address is being built already; retry when it is done".into())
    })?;
    let flight = Flight::start(&t.cache, key, head);
    let rank = t.budget.left(ip, Instant::now());
    let Some(permit) = t.building.acquire(rank, BUILD_SLOT_WAIT).await else {
        let e = busy(format!(
            "{TRANSCRIPTS_AT_ONCE} transcripts are being built; retry in a few seconds"
        ));
        flight.done(Arc::new(Answer::Error(e.clone())), None);
        return Err(e);
    };
    // The slot goes with the work: a request that times out (its future dropped) keeps its
    // slot until the blocking read it started ends, and the answer is kept for the next.
    let budget_t = t.clone();
    let built = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        let _mine = mine;
        let started = Instant::now();
        // A finished game's answer outlives the head only on a chain without validators: on
        // one with them a step's finality proof may come with later blocks.
        let upgraded = chain
            .genesis()
            .validators
            .is_none()
            .then(upgraded)
            .flatten();
        let built = build::build(&chain, &filter, from);
        let (answer, valid) = answer_of(built, head, upgraded);
        let answer = Arc::new(answer);
        flight.done(answer.clone(), valid);
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        budget_t.budget.charge(ip, Instant::now(), ms);
        answer
    })
    .await
    .map_err(|_| ApiError::internal("the node failed on this request"))?;
    send(&t, ip, &built)
}
