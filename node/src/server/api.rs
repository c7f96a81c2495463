//! The HTTP API of `node/API.md`: the axum router, its handlers, and the layers around them
//! (body limit, per-IP rate limit, CORS, panic catcher, request timeout, request tracing).
//!
//! Handlers parse and validate the request, then run the work on a blocking thread
//! (`spawn_blocking`: SQLite, locks, wasm views) and answer JSON. Every failure, including
//! axum's own rejections, unknown paths and wrong methods, a panic and a request over
//! [`REQUEST_TIMEOUT`], is an [`ApiError`] JSON body; hyper's own answers to requests it
//! cannot read (URI or headers too large) are rewritten to JSON by `http_io.rs`.

use futures_util::StreamExt as _;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{ConnectInfo, DefaultBodyLimit, Path, RawQuery, Request, State};
use axum::handler::Handler;
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post, MethodRouter};
use axum::{middleware, Json, Router};
use gamechain_chain::wire::{BatchResult, ErrorBody, TxBatch, TxBatchAnswer, TxidAnswer};
use gamechain_runtime::chain::{SignedTx, MAX_DEPLOY_BODY_BYTES};
use serde_json::Value;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::cors::{Any, CorsLayer};
use tower_http::trace::TraceLayer;

use crate::config::NodeConfig;
use crate::server::admission::MAX_BATCH_TXS;
use crate::server::api_error::ApiError;
use crate::server::http_io::{ConnectionLimit, JsonListener, PeerAddr};
use crate::server::rate_limit::{self, RateLimiter};
use crate::server::state::AppState;
use crate::server::{feed, game_feed, openapi, relay, transcript, web, ws};
use gamechain_chain::wire::query::parse_query;
use gamechain_ledger::error::ChainError;
use gamechain_ledger::NodeError;

type ApiResult = Result<Json<Value>, ApiError>;

/// Largest `POST /v1/tx` request, bytes: a deploy body of [`MAX_DEPLOY_BODY_BYTES`] inside the
/// `{"body": …, "signature": …}` JSON (its quotes escaped) with room to spare. Other endpoints
/// keep the configuration's `max_body_bytes`; the transaction checks still refuse any body over
/// its action's limit.
pub const MAX_TX_REQUEST_BYTES: usize = MAX_DEPLOY_BODY_BYTES + (64 << 10);

/// The request body limit of `POST /v1/tx` under `config`, bytes: [`MAX_TX_REQUEST_BYTES`] or
/// the configuration's `max_body_bytes`, whichever is larger.
fn tx_request_limit(config: &NodeConfig) -> usize {
    MAX_TX_REQUEST_BYTES.max(config.max_body_bytes)
}

/// How long a request may take before the node answers `503 timeout` in its place (the
/// follower's forwarding of `POST /v1/tx` gives up after 30 s, before this).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// The router of the whole API (`/v1/...`), with its layers.
pub fn router(app: AppState) -> Router {
    let config = &app.config;
    let limiter = Arc::new(RateLimiter::new(
        config.rate_limit_per_sec,
        config.rate_limit_burst,
    ));
    let cors = CorsLayer::new()
        .allow_origin(Any)
        .allow_methods([Method::GET, Method::POST])
        .allow_headers([header::CONTENT_TYPE])
        .expose_headers([header::RETRY_AFTER]);
    let mut router = Router::new();
    for endpoint in endpoints(config) {
        router = router.route(endpoint.path, endpoint.handler);
    }
    let router = router
        .merge(web::routes())
        .fallback(unknown_path)
        .method_not_allowed_fallback(wrong_method)
        .layer(DefaultBodyLimit::max(config.max_body_bytes));
    json_layers(router, REQUEST_TIMEOUT)
        .layer(middleware::from_fn_with_state(limiter, rate_limit::limit))
        .layer(cors)
        .layer(TraceLayer::new_for_http())
        .with_state(app)
}

/// One endpoint of the API: its method, its path (axum's syntax, `{param}` for a path segment,
/// the same as the OpenAPI document's) and its handler.
pub struct Endpoint {
    /// The HTTP method.
    pub method: Method,
    /// The path, e.g. `/v1/tx/{txid}`.
    pub path: &'static str,
    handler: MethodRouter<AppState>,
}

impl Endpoint {
    /// `GET path` answered by `handler`.
    fn get<H: Handler<T, AppState>, T: 'static>(path: &'static str, handler: H) -> Self {
        Endpoint {
            method: Method::GET,
            path,
            handler: get(handler),
        }
    }

    /// `POST path` answered by `handler`, reading a body of at most `limit` bytes.
    fn post<H: Handler<T, AppState>, T: 'static>(
        path: &'static str,
        handler: H,
        limit: usize,
    ) -> Self {
        Endpoint {
            method: Method::POST,
            path,
            handler: post(handler).layer(DefaultBodyLimit::max(limit)),
        }
    }
}

/// Every endpoint of the API (`node/API.md`; `node/openapi.json` describes the same set, and
/// `server::openapi`'s test holds them in step): the one table [`router`] is built from.
/// `config` gives `POST /v1/tx` its body limit. Static pages served beside the API are not
/// endpoints of it and are not listed here.
pub fn endpoints(config: &NodeConfig) -> Vec<Endpoint> {
    vec![
        Endpoint::post("/v1/tx", post_tx, tx_request_limit(config)),
        Endpoint::post("/v1/txs", post_txs, MAX_BATCH_REQUEST_BYTES),
        Endpoint::get("/v1/tx/{txid}", get_tx),
        Endpoint::get("/v1/account/{account}", get_account),
        Endpoint::get("/v1/account/{account}/sessions", get_account_sessions),
        Endpoint::get("/v1/state/{key}", get_state),
        Endpoint::get("/v1/games/{module}", get_view),
        Endpoint::get("/v1/games/{module}/proof", get_view_proof),
        Endpoint::get(
            "/v1/games/{module}/{id}/transcript",
            transcript::get_transcript,
        ),
        Endpoint::get("/v1/blocks/{height}", get_block),
        Endpoint::get("/v1/blocks/{height}/finality", get_block_finality),
        Endpoint::get("/v1/headers", get_headers),
        Endpoint::get("/v1/evidence", get_evidence),
        Endpoint::get("/v1/status", get_status),
        Endpoint::get("/v1/genesis", get_genesis),
        Endpoint::get("/v1/modules", get_modules),
        Endpoint::get("/v1/modules/{id}", get_module),
        Endpoint::get("/v1/modules/{id}/schema", get_module_schema),
        Endpoint::get("/v1/code/{code_hash}", get_code),
        Endpoint::get("/v1/snapshots", get_snapshots),
        Endpoint::get("/v1/snapshots/{height}", get_snapshot),
        Endpoint::get("/v1/snapshots/{height}/chunks/{index}", get_snapshot_chunk),
        Endpoint::get("/v1/ws", ws::subscribe),
        Endpoint::get("/v1/ws/events", game_feed::subscribe),
        Endpoint::get("/v1/relay/{game}", relay::connect),
        Endpoint::get("/v1/openapi.json", openapi::get_openapi),
        Endpoint::post("/v1/dev/clock", post_dev_clock, config.max_body_bytes),
        Endpoint::get("/metrics", get_metrics),
    ]
}

/// `router` with the layers that keep failures in the API's JSON: a panic in a handler is
/// `500 internal`, a request that takes longer than `timeout` is `503 timeout`.
pub fn json_layers<S: Clone + Send + Sync + 'static>(
    router: Router<S>,
    timeout: Duration,
) -> Router<S> {
    router
        .layer(middleware::from_fn(
            move |request: Request, next: middleware::Next| async move {
                match tokio::time::timeout(timeout, next.run(request)).await {
                    Ok(response) => response,
                    Err(_) => ApiError::timeout(timeout).into_response(),
                }
            },
        ))
        .layer(CatchPanicLayer::custom(|_| {
            ApiError::internal("the node failed on this request").into_response()
        }))
}

/// Runs `f` (a call into the core) on a blocking thread; its [`ChainError`] becomes the API's.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ChainError> + Send + 'static,
) -> Result<T, ApiError> {
    match tokio::task::spawn_blocking(f).await {
        Ok(result) => result.map_err(ApiError::from),
        Err(e) => {
            tracing::error!("a request handler failed: {e}");
            Err(ApiError::internal("the node failed on this request"))
        }
    }
}

/// The JSON answer of a wire type. Every answer goes through `serde_json::Value`, whose maps
/// sort their keys, so every object the API serves has its keys in one (sorted) order.
pub fn sorted_json<T: serde::Serialize>(value: &T) -> Json<Value> {
    Json(serde_json::to_value(value).expect("the wire types always serialise"))
}

fn path_param(p: Result<Path<String>, PathRejection>) -> Result<String, ApiError> {
    p.map(|Path(s)| s)
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "invalid", e.body_text()))
}

/// `POST /v1/tx` `{"body", "signature"}` → `{"txid"}`.
async fn post_tx(
    State(app): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<axum::response::Response, ApiError> {
    require_json(&headers, "POST /v1/tx")?;
    let bytes = body.map_err(|r| {
        if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::body_over(tx_request_limit(&app.config), "POST /v1/tx")
        } else {
            ApiError::from(r)
        }
    })?;
    if let Some(upstream) = &app.upstream {
        return forward_tx(upstream, bytes).await;
    }
    // serde reads a struct from a JSON array too (`["<body>", "<signature>"]`); the API takes
    // only the object it documents.
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(ApiError::bad_json(
            "expected {\"body\": \"<body JSON>\", \"signature\": \"<base64>\"}: the request body is not a JSON object",
        ));
    }
    let tx: SignedTx = serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::bad_json(format!(
            "expected {{\"body\": \"<body JSON>\", \"signature\": \"<base64>\"}}: {e}"
        ))
    })?;
    let txid = app.admission.submit(tx).await?;
    Ok(sorted_json(&TxidAnswer { txid }).into_response())
}

/// Most bytes of a `POST /v1/txs` request (8 MiB).
pub const MAX_BATCH_REQUEST_BYTES: usize = 8 << 20;

/// `POST /v1/txs` `{"txs": [{"body", "signature"}, …]}` → `{"results": [{"txid"} | {"error",
/// "status"}, …]}`: up to [`MAX_BATCH_TXS`] transactions admitted in order, each answered as
/// `POST /v1/tx` would have. With a rate limit, a batch takes one token per transaction (so it
/// holds at most `rate_limit_burst`).
async fn post_txs(
    State(app): State<AppState>,
    charge: Option<axum::Extension<rate_limit::Charge>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<axum::response::Response, ApiError> {
    require_json(&headers, "POST /v1/txs")?;
    let bytes = body.map_err(|r| {
        if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::body_over(MAX_BATCH_REQUEST_BYTES, "POST /v1/txs")
        } else {
            ApiError::from(r)
        }
    })?;
    if let Some(upstream) = &app.upstream {
        return forward(upstream, "txs", bytes).await;
    }
    let shape = |e: &dyn std::fmt::Display| {
        ApiError::bad_json(format!(
            "expected {{\"txs\": [{{\"body\": \"<body JSON>\", \"signature\": \"<base64>\"}}, …]}}: {e}"
        ))
    };
    // serde reads a struct from a JSON array too; the API takes only the objects it documents,
    // so the shape is checked on the parsed value first.
    let value: Value = serde_json::from_slice(&bytes).map_err(|e| shape(&e))?;
    let objects = value
        .as_object()
        .and_then(|o| o.get("txs"))
        .and_then(Value::as_array)
        .is_some_and(|txs| txs.iter().all(Value::is_object));
    if !objects {
        return Err(shape(
            &"the request or one of its transactions is not a JSON object",
        ));
    }
    let batch: TxBatch = serde_json::from_value(value).map_err(|e| shape(&e))?;
    let n = batch.txs.len();
    if n > MAX_BATCH_TXS {
        return Err(ApiError::too_large(format!(
            "a batch holds {n} transactions, the limit is {MAX_BATCH_TXS}"
        )));
    }
    if let Some(axum::Extension(charge)) = charge.filter(|c| c.limiter.enabled()) {
        let burst = charge.limiter.burst();
        if n as u64 > burst {
            return Err(ApiError::too_large(format!(
                "a batch holds {n} transactions; with this node's rate limit a batch may hold at most {burst} (rate_limit_burst)"
            )));
        }
        charge
            .take((n as u64).saturating_sub(1))
            .map_err(ApiError::rate_limited)?;
    }
    let results = app
        .admission
        .submit_batch(batch.txs)
        .await?
        .into_iter()
        .map(|r| match r {
            Ok(txid) => BatchResult::Accepted { txid },
            Err(e) => {
                let e = ApiError::from(e);
                BatchResult::Refused {
                    status: e.status.as_u16(),
                    error: ErrorBody {
                        code: e.code.to_string(),
                        message: e.message,
                    },
                }
            }
        })
        .collect();
    Ok(sorted_json(&TxBatchAnswer { results }).into_response())
}

/// `415 bad_content_type` unless `headers` say `content-type: application/json` (any case,
/// parameters such as `; charset=utf-8` allowed).
fn require_json(headers: &HeaderMap, route: &str) -> Result<(), ApiError> {
    let sent = headers
        .get(header::CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let is_json = sent.as_deref().is_some_and(|v| {
        v.split(';')
            .next()
            .unwrap_or("")
            .trim()
            .eq_ignore_ascii_case("application/json")
    });
    if is_json {
        return Ok(());
    }
    let sent = match sent {
        Some(v) => format!("`{v}`"),
        None => "none".to_string(),
    };
    Err(ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "bad_content_type",
        format!("{route} takes `content-type: application/json`; this request sent {sent}"),
    ))
}

/// A development endpoint answers only requests without an `Origin` header (the CLI, curl, test
/// harnesses) or from this node's own origin (its pages): a web page of another origin that a
/// developer happens to open must not drive the node on their machine, though the API's CORS
/// lets any origin *read* it. `403 cross_origin` otherwise, before anything changes. The
/// comparison is of the `Origin`'s authority with the request's `Host`.
fn same_origin_only(headers: &HeaderMap, route: &str) -> Result<(), ApiError> {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let origin = String::from_utf8_lossy(origin.as_bytes()).into_owned();
    let host = headers
        .get(header::HOST)
        .map(|h| String::from_utf8_lossy(h.as_bytes()).into_owned());
    let authority = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    if authority.is_some() && authority == host.as_deref() {
        return Ok(());
    }
    Err(ApiError::new(
        StatusCode::FORBIDDEN,
        "cross_origin",
        format!(
            "{route} answers only this node's own pages and clients that send no Origin, not a page of {origin}"
        ),
    ))
}

/// `GET /v1/tx/<txid>`.
async fn get_tx(
    State(app): State<AppState>,
    txid: Result<Path<String>, PathRejection>,
) -> ApiResult {
    let txid = path_param(txid)?.to_ascii_lowercase();
    if txid.len() != 64 || !txid.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(ApiError::not_found(format!(
            "`{txid}` is not a txid (64 hex characters)"
        )));
    }
    let record = blocking(move || app.chain.tx(&txid)).await?;
    Ok(sorted_json(&record))
}

/// `GET /v1/account/<address | module:id>`.
async fn get_account(
    State(app): State<AppState>,
    account: Result<Path<String>, PathRejection>,
) -> ApiResult {
    let account = path_param(account)?;
    let account = blocking(move || app.chain.account(&account)).await?;
    Ok(sorted_json(&account))
}

/// `GET /v1/account/<address>/sessions`.
async fn get_account_sessions(
    State(app): State<AppState>,
    account: Result<Path<String>, PathRejection>,
) -> ApiResult {
    let account = path_param(account)?;
    let sessions = blocking(move || app.chain.sessions(&account)).await?;
    Ok(sorted_json(&sessions))
}

/// `GET /v1/state/<key>[?proof]`: the key (percent-encoded, `/` as `%2F`) at the head block,
/// with the proof against its state root when `proof` (or `proof=true`, `proof=1`) is asked,
/// and then on a chain with validators what proves that block final.
async fn get_state(
    State(app): State<AppState>,
    key: Result<Path<String>, PathRejection>,
    RawQuery(query): RawQuery,
) -> ApiResult {
    let key = path_param(key)?;
    let proof = match query.as_deref() {
        None | Some("") => false,
        Some("proof") | Some("proof=true") | Some("proof=1") => true,
        Some(other) => {
            return Err(ApiError::invalid(format!(
                "`{}` is not a query of GET /v1/state: only `proof` is",
                other.chars().take(64).collect::<String>()
            )))
        }
    };
    let entry = blocking(move || {
        let mut entry = app.chain.state_entry(&key, proof)?;
        if proof && app.chain.genesis().validators.is_some() {
            let block = app.chain.block(Some(entry.header.height))?;
            entry.finality = crate::server::transcript::build::block_finality(&app.chain, &block)?;
        }
        Ok(entry)
    })
    .await?;
    Ok(sorted_json(&entry))
}

/// A view slot (`max_concurrent_views`): waits for one (bounded by the request timeout); the
/// caller holds it until its view returns.
async fn view_slot(app: &AppState) -> Result<tokio::sync::OwnedSemaphorePermit, ApiError> {
    app.views
        .clone()
        .acquire_owned()
        .await
        .map_err(|_| ApiError::internal("the node is shutting down".to_string()))
}

/// `GET /v1/games/<module>?<query>`.
async fn get_view(
    State(app): State<AppState>,
    module: Result<Path<String>, PathRejection>,
    RawQuery(query): RawQuery,
) -> ApiResult {
    let module = path_param(module)?;
    let query = parse_query(query.as_deref()).map_err(ApiError::invalid)?;
    let slot = view_slot(&app).await?;
    let result = blocking(move || app.chain.view(&module, &query)).await;
    drop(slot);
    result.map(Json)
}

/// `GET /v1/games/<module>/proof?<query>`: the view of `query` with every state entry it read,
/// proven against the head block's state root (`gamechain_chain::wire::view`), and on a chain
/// with validators what proves that block final. Takes a view slot as `GET /v1/games/<module>`
/// does.
async fn get_view_proof(
    State(app): State<AppState>,
    module: Result<Path<String>, PathRejection>,
    RawQuery(query): RawQuery,
) -> ApiResult {
    let module = path_param(module)?;
    let query = parse_query(query.as_deref()).map_err(ApiError::invalid)?;
    let slot = view_slot(&app).await?;
    let result = blocking(move || {
        let mut proof = app.chain.view_proof(&module, &query)?;
        if app.chain.genesis().validators.is_some() {
            let block = app.chain.block(Some(proof.header.height))?;
            proof.finality = crate::server::transcript::build::block_finality(&app.chain, &block)?;
        }
        Ok(proof)
    })
    .await;
    drop(slot);
    Ok(sorted_json(&result?))
}

/// The `<height>` of `GET /v1/blocks/<height>`: `latest` (`None`) or a height written as
/// decimal digits without a sign or leading zeros (`0`, `12`), at most `u64::MAX`; anything
/// else (`+1`, `01`, `-0`, ` 1`) is `400 invalid`, so each block has one URL.
pub fn parse_height(h: &str) -> Result<Option<u64>, ApiError> {
    if h == "latest" {
        return Ok(None);
    }
    let canonical =
        !h.is_empty() && h.bytes().all(|b| b.is_ascii_digit()) && (h == "0" || !h.starts_with('0'));
    canonical
        .then(|| h.parse::<u64>().ok())
        .flatten()
        .map(Some)
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid",
                format!(
                    "`{h}` is not a block height (decimal digits, no leading zeros) or `latest`"
                ),
            )
        })
}

/// `GET /v1/blocks/<height | latest>`.
async fn get_block(
    State(app): State<AppState>,
    height: Result<Path<String>, PathRejection>,
) -> Result<axum::response::Response, ApiError> {
    let height = parse_height(&path_param(height)?)?;
    // Written straight from the block, keys sorted, the same bytes as through `Value`.
    let json = blocking(move || app.chain.block(height).map(|b| feed::block_json(&b))).await?;
    Ok(([(header::CONTENT_TYPE, "application/json")], json).into_response())
}

/// `GET /v1/blocks/{height}/finality` (chains with validators).
async fn get_block_finality(
    State(app): State<AppState>,
    height: Result<Path<String>, PathRejection>,
) -> ApiResult {
    let height = parse_height(&path_param(height)?)?;
    let finality = blocking(move || app.chain.finality(height)).await?;
    Ok(sorted_json(&finality))
}

/// `GET /v1/evidence?after=<id>&limit=<n>` (chains with validators): the stored evidence of
/// faulty validators with an id above `after` (default 0), oldest first, at most `limit` (1 to
/// 100, default 100). `400 invalid` for another parameter or a value that is not a number;
/// `404 not_found` on a chain without validators.
async fn get_evidence(State(app): State<AppState>, RawQuery(query): RawQuery) -> ApiResult {
    let query = numbers_query(query.as_deref(), &["after", "limit"])?;
    let after = query_number(&query, "after", 0, 0, i64::MAX as u64)?;
    let page_max = gamechain_ledger::chain::MAX_EVIDENCE_PAGE as u64;
    let limit = query_number(&query, "limit", page_max, 0, page_max)?;
    let page =
        blocking(move || crate::verify::evidence::page(&app.chain, after, limit as usize)).await?;
    Ok(sorted_json(&page))
}

/// A query string of at most the parameters `known` (`400 invalid` for another, or for bytes
/// that do not decode).
fn numbers_query(raw: Option<&str>, known: &[&str]) -> Result<gamechain_sdk::Query, ApiError> {
    let query = parse_query(raw).map_err(ApiError::invalid)?;
    if let Some(other) = query.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid",
            format!("unknown parameter `{other}` ({})", known.join(", ")),
        ));
    }
    Ok(query)
}

/// The decimal parameter `name` of `query`, `default` when absent; `400 invalid` when it is not
/// a number from `min` to `max`.
fn query_number(
    query: &gamechain_sdk::Query,
    name: &str,
    default: u64,
    min: u64,
    max: u64,
) -> Result<u64, ApiError> {
    match query.get(name) {
        None => Ok(default),
        Some(v) => v
            .parse::<u64>()
            .ok()
            .filter(|n| (min..=max).contains(n))
            .ok_or_else(|| {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "invalid",
                    format!("{name} must be a number from {min} to {max}, not `{v}`"),
                )
            }),
    }
}

/// `GET /v1/headers?from=<height>&count=<1 to 1024>`: consecutive block headers in binary
/// (`gamechain_chain::wire::headers`), the proof that a block descends from block 0; `count`
/// defaults to the most. `400 invalid` for another parameter or a bad number, `404 not_found`
/// above the head, `410 pruned` for a height this node keeps no header of.
async fn get_headers(
    State(app): State<AppState>,
    RawQuery(query): RawQuery,
) -> Result<axum::response::Response, ApiError> {
    use gamechain_chain::wire::headers::MAX_HEADERS_PER_REQUEST;
    let query = numbers_query(query.as_deref(), &["from", "count"])?;
    let from = query_number(&query, "from", 0, 0, i64::MAX as u64)?;
    let count = query_number(
        &query,
        "count",
        MAX_HEADERS_PER_REQUEST,
        1,
        MAX_HEADERS_PER_REQUEST,
    )?;
    let body = blocking(move || app.chain.headers(from, count)).await?;
    Ok(([(header::CONTENT_TYPE, "application/octet-stream")], body).into_response())
}

/// `GET /v1/status`.
async fn get_status(State(app): State<AppState>) -> ApiResult {
    let (subscribers, connections) = (
        app.feed.subscribers() as u64,
        app.connections.load(std::sync::atomic::Ordering::Relaxed) as u64,
    );
    let mut status = blocking(move || Ok(app.chain.status())).await?;
    status.ws_subscribers = subscribers;
    status.connections = connections;
    Ok(sorted_json(&status))
}

/// `POST /v1/dev/clock` `{"advance_ms": N}`: moves this sequencer's clock forward by `N` ms
/// (`node/ledger/src/clock.rs`), answering `{"now_ms", "offset_ms"}`; the sequencer then makes a block
/// at the new time without waiting for a transaction or its idle interval. Only on a node started with
/// `dev_clock = true` (else `404 not_found`, as for any unknown path); `403 cross_origin` for a
/// request a page of another origin sent ([`same_origin_only`]); `400 bad_json` for a body of
/// another shape or an `advance_ms` out of range (1 to 30 days).
async fn post_dev_clock(
    State(app): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    if !app.chain.clock.is_dev() {
        return Err(ApiError::not_found(
            "no endpoint POST /v1/dev/clock: this node's clock is the system clock (dev_clock is off)",
        ));
    }
    same_origin_only(&headers, "POST /v1/dev/clock")?;
    require_json(&headers, "POST /v1/dev/clock")?;
    let bytes = body.map_err(ApiError::from)?;
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Advance {
        advance_ms: u64,
    }
    let advance: Advance = serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::bad_json(format!("expected {{\"advance_ms\": <ms>}}: {e}")))?;
    let offset = app
        .chain
        .clock
        .advance(advance.advance_ms)
        .map_err(|e| ApiError::bad_json(e.to_string()))?;
    // The sequencer may be waiting for the clock.
    app.chain.arrivals.notify();
    tracing::warn!(
        advance_ms = advance.advance_ms,
        offset_ms = offset,
        "the dev clock was moved forward"
    );
    Ok(sorted_json(&serde_json::json!({
        "now_ms": app.chain.clock.now_ms(),
        "offset_ms": offset,
    })))
}

/// `GET /metrics`: the node's metrics in the Prometheus text format (`node/API.md`, "Metrics").
async fn get_metrics(State(app): State<AppState>) -> axum::response::Response {
    let (mempool_txs, mempool_bytes) = {
        let m = app.chain.mempool();
        (m.len(), m.bytes())
    };
    let text = app
        .chain
        .metrics
        .render(gamechain_ledger::metrics::ScrapeGauges {
            mempool_txs,
            mempool_bytes,
            ws_subscribers: app.feed.subscribers(),
            connections: app.connections.load(std::sync::atomic::Ordering::Relaxed),
        });
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    )
        .into_response()
}

/// `GET /v1/genesis`: the genesis file.
async fn get_genesis(State(app): State<AppState>) -> ApiResult {
    Ok(Json(
        serde_json::to_value(app.chain.genesis()).expect("a genesis serialises"),
    ))
}

/// `GET /v1/modules[?pending=1]`. `pending` is `1` (only modules with a pending upgrade) or `0`
/// (all, the default); anything else is `400 invalid`. Other parameters are ignored.
async fn get_modules(State(app): State<AppState>, RawQuery(query): RawQuery) -> ApiResult {
    let query = parse_query(query.as_deref()).map_err(ApiError::invalid)?;
    let pending_only = match query.get("pending").map(String::as_str) {
        None | Some("0") => false,
        Some("1") => true,
        Some(other) => {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid",
                format!("pending must be 1 or 0, not `{other}`"),
            ))
        }
    };
    let modules = blocking(move || app.chain.modules(pending_only)).await?;
    Ok(sorted_json(&modules))
}

/// `GET /v1/modules/<id>`.
async fn get_module(
    State(app): State<AppState>,
    id: Result<Path<String>, PathRejection>,
) -> ApiResult {
    let id = path_param(id)?;
    let module = blocking(move || app.chain.module_record(&id)).await?;
    Ok(sorted_json(&module))
}

/// `GET /v1/modules/<id>/schema`: the module's schema (`docs/modules.md`, "Schema") as it is
/// in its code's `gamechain.schema` section, `application/json`, key order as declared.
/// Errors: `not_found` (404) for no such module and for a module without a schema.
async fn get_module_schema(
    State(app): State<AppState>,
    id: Result<Path<String>, PathRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let id = path_param(id)?;
    let text = blocking(move || app.chain.module_schema(&id)).await?;
    Ok(([(header::CONTENT_TYPE, "application/json")], text))
}

/// `GET /v1/code/<code_hash>`: the raw wasm bytes, `application/wasm`.
async fn get_code(
    State(app): State<AppState>,
    hash: Result<Path<String>, PathRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let hash = path_param(hash)?;
    let wasm = blocking(move || app.chain.code(&hash)).await?;
    Ok(([(header::CONTENT_TYPE, "application/wasm")], wasm))
}

/// `GET /v1/snapshots`: the state snapshots this node serves, newest first
/// (`node/ledger/src/store/snapshot.rs`).
async fn get_snapshots(State(app): State<AppState>) -> ApiResult {
    let list = blocking(move || Ok(app.chain.snapshots.list())).await?;
    Ok(sorted_json(&list))
}

/// The snapshot height of a path: a height, or `latest` (the newest snapshot). Errors:
/// `400 invalid`, `404 not_found` when this node serves no snapshot at all.
fn snapshot_height(app: &AppState, height: &str) -> Result<u64, ApiError> {
    match parse_height(height)? {
        Some(h) => Ok(h),
        None => app
            .chain
            .snapshots
            .heights()
            .first()
            .copied()
            .ok_or_else(|| ApiError::not_found("this node serves no snapshot")),
    }
}

/// `GET /v1/snapshots/<height | latest>`: the snapshot's manifest. `404 not_found` when this
/// node has no snapshot at that height.
async fn get_snapshot(
    State(app): State<AppState>,
    height: Result<Path<String>, PathRejection>,
) -> ApiResult {
    let height = snapshot_height(&app, &path_param(height)?)?;
    let manifest = blocking(move || {
        app.chain.snapshots.manifest(height).ok_or_else(|| {
            ChainError::NotFound(format!("this node has no snapshot at height {height}"))
        })
    })
    .await?;
    Ok(sorted_json(&manifest))
}

/// `GET /v1/snapshots/<height | latest>/chunks/<index>`: the chunk's bytes,
/// `application/octet-stream` (at most `snapshot::MAX_CHUNK_BYTES`). `404 not_found` when this
/// node has no such snapshot or chunk (a snapshot is deleted once `snapshot_keep` newer ones
/// exist).
async fn get_snapshot_chunk(
    State(app): State<AppState>,
    params: Result<Path<(String, String)>, PathRejection>,
) -> Result<axum::response::Response, ApiError> {
    let (height, index) = params
        .map(|Path(p)| p)
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "invalid", e.body_text()))?;
    let height = snapshot_height(&app, &height)?;
    let index = parse_height(&index)?.ok_or_else(|| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid",
            "a chunk index is decimal digits",
        )
    })?;
    // Bounded: chunks in flight at once (a slow reader holds one for at most the deadline).
    let permit = CHUNK_SENDS.try_acquire().map_err(|_| {
        let mut e = ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "busy",
            format!("{MAX_CHUNK_SENDS} snapshot chunks are being sent already; try again shortly"),
        );
        e.retry_after_s = Some(1);
        e
    })?;
    let (file, len) = blocking(move || {
        app.chain
            .snapshots
            .open_chunk(height, index)
            .ok_or_else(|| {
                ChainError::NotFound(format!(
                    "this node has no chunk {index} of a snapshot at height {height}"
                ))
            })
    })
    .await?;
    Ok((
        [
            (header::CONTENT_TYPE, "application/octet-stream".to_string()),
            (header::CONTENT_LENGTH, len.to_string()),
        ],
        axum::body::Body::from_stream(
            file_stream(file)
                .take_until(tokio::time::sleep(CHUNK_SEND_DEADLINE))
                .map(move |piece| {
                    let _held = &permit;
                    piece
                }),
        ),
    )
        .into_response())
}

/// Snapshot chunks sent at once by this process; one more is answered `503 busy` with
/// `Retry-After: 1` (a joining node retries).
pub const MAX_CHUNK_SENDS: usize = 8;

static CHUNK_SENDS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(MAX_CHUNK_SENDS);

/// Longest the sending of one snapshot chunk may take (5 min: a 52 MiB chunk at 180 KB/s); the
/// body is cut there, so a reader that drains slowly on purpose holds its slot no longer.
pub const CHUNK_SEND_DEADLINE: std::time::Duration = std::time::Duration::from_secs(300);

/// Bytes read from `file` at most [`STREAM_PIECE_BYTES`] at a time on a blocking thread, so a
/// chunk being sent holds one piece in memory, not the chunk.
fn file_stream(
    file: std::fs::File,
) -> impl futures_util::Stream<Item = Result<Bytes, std::io::Error>> {
    futures_util::stream::unfold(Some(file), |file| async move {
        let mut file = file?;
        let read = tokio::task::spawn_blocking(move || {
            let mut piece = vec![0u8; STREAM_PIECE_BYTES];
            let n = std::io::Read::read(&mut file, &mut piece)?;
            piece.truncate(n);
            Ok::<_, std::io::Error>((file, piece))
        })
        .await;
        match read {
            Ok(Ok((_, piece))) if piece.is_empty() => None,
            Ok(Ok((file, piece))) => Some((Ok(Bytes::from(piece)), Some(file))),
            Ok(Err(e)) => Some((Err(e), None)),
            Err(e) => Some((Err(std::io::Error::other(e)), None)),
        }
    })
}

/// Bytes of a snapshot chunk read and sent at a time (256 KiB).
pub const STREAM_PIECE_BYTES: usize = 256 << 10;

async fn unknown_path(method: Method, uri: axum::http::Uri) -> ApiError {
    ApiError::not_found(format!("no such endpoint: {method} {}", uri.path()))
}

async fn wrong_method(method: Method, uri: axum::http::Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "not_found",
        format!("{} does not answer {method}", uri.path()),
    )
}

/// A follower's `POST /v1/tx`: the body forwarded to the sequencer at `upstream`, answered with
/// the sequencer's status and JSON body. `502 internal` when the sequencer cannot be reached.
pub async fn forward_tx(
    upstream: &gamechain_client::Client,
    body: Bytes,
) -> Result<axum::response::Response, ApiError> {
    forward(upstream, "tx", body).await
}

/// Posts `body` to the sequencer's `POST /v1/<path>` and passes its answer back.
async fn forward(
    upstream: &gamechain_client::Client,
    path: &str,
    body: Bytes,
) -> Result<axum::response::Response, ApiError> {
    let url = upstream.url(&["v1", path]);
    let unreachable = |e: reqwest::Error| {
        ApiError::new(
            StatusCode::BAD_GATEWAY,
            "internal",
            format!("the sequencer cannot be reached: {e}"),
        )
    };
    let answer = reqwest::Client::new()
        .post(url)
        .header(header::CONTENT_TYPE, "application/json")
        .body(body)
        .timeout(std::time::Duration::from_secs(30))
        .send()
        .await
        .map_err(unreachable)?;
    let status = StatusCode::from_u16(answer.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    let bytes = answer.bytes().await.map_err(unreachable)?;
    Ok((status, [(header::CONTENT_TYPE, "application/json")], bytes).into_response())
}

/// Binds `config.listen`. Errors: [`NodeError::Bind`] (the port is taken, the address is not
/// local). Bind first: a busy port fails at once, before a data directory is touched.
pub async fn bind(config: &NodeConfig) -> Result<(tokio::net::TcpListener, SocketAddr), NodeError> {
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|e| NodeError::Bind(format!("cannot listen on {}: {e}", config.listen)))?;
    let addr = listener
        .local_addr()
        .map_err(|e| NodeError::Bind(format!("cannot read the bound address: {e}")))?;
    Ok((listener, addr))
}

/// Serves the API of `app` on `listener` until `app.shutdown` turns true (then in-flight
/// requests finish and new connections are refused). Connections go through
/// [`JsonListener`], so hyper's own error answers are JSON too.
pub async fn serve(listener: tokio::net::TcpListener, app: AppState) -> Result<(), NodeError> {
    let mut stop = app.shutdown.clone();
    let idle = app.config.idle_timeout_secs;
    let idle = (idle > 0).then(|| Duration::from_secs(idle));
    let limits = ConnectionLimit {
        open: app.connections.clone(),
        max: app.config.max_connections,
    };
    serve_router_limited(listener, router(app), idle, Some(limits), async move {
        let _ = stop.wait_for(|s| *s).await;
    })
    .await
}

/// Serves `router` on `listener` through [`JsonListener`] (connections closed after `idle`
/// without an answer, `None`: never) until `stop` resolves; each request carries the peer as
/// `ConnectInfo<SocketAddr>` (the rate limit's key).
pub async fn serve_router(
    listener: tokio::net::TcpListener,
    router: Router,
    idle: Option<Duration>,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), NodeError> {
    serve_router_limited(listener, router, idle, None, stop).await
}

/// [`serve_router`] counting open connections in `limit` and refusing those above its max
/// (`None`: no limit).
pub async fn serve_router_limited(
    listener: tokio::net::TcpListener,
    router: Router,
    idle: Option<Duration>,
    limit: Option<ConnectionLimit>,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), NodeError> {
    let router = router.layer(middleware::from_fn(
        |mut request: Request, next: middleware::Next| async move {
            if let Some(ConnectInfo(PeerAddr(addr))) =
                request.extensions().get::<ConnectInfo<PeerAddr>>().copied()
            {
                request.extensions_mut().insert(ConnectInfo(addr));
            }
            next.run(request).await
        },
    ));
    axum::serve(
        JsonListener {
            listener,
            idle,
            limit,
        },
        router.into_make_service_with_connect_info::<PeerAddr>(),
    )
    .with_graceful_shutdown(stop)
    .await
    .map_err(|e| NodeError::Bind(format!("the API server failed: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boom() -> &'static str {
        panic!("a handler bug")
    }

    /// A panic in a handler and a handler slower than the timeout both answer the API's JSON,
    /// through a real server and connection.
    #[tokio::test]
    async fn panics_and_timeouts_answer_json() {
        let router = Router::new()
            .route("/panic", get(|| async { boom() }))
            .route(
                "/slow",
                get(|| async {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                    "late"
                }),
            )
            .route("/fast", get(|| async { "ok" }));
        let router = json_layers(router, Duration::from_millis(200));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve_router(listener, router, None, async move {
            let _ = stopped.await;
        }));
        let http = reqwest::Client::new();
        let get = |path: &str| http.get(format!("http://{addr}{path}")).send();
        let answer = get("/panic").await.unwrap();
        assert_eq!(answer.status().as_u16(), 500);
        let body: Value = answer.json().await.unwrap();
        assert_eq!(body["error"]["code"], "internal", "{body}");
        let answer = get("/slow").await.unwrap();
        assert_eq!(answer.status().as_u16(), 503);
        let body: Value = answer.json().await.unwrap();
        assert_eq!(body["error"]["code"], "timeout", "{body}");
        assert_eq!(get("/fast").await.unwrap().text().await.unwrap(), "ok");
        let _ = stop.send(());
        server.await.unwrap().unwrap();
    }

    #[test]
    fn heights_are_canonical_decimals_or_latest() {
        assert_eq!(parse_height("latest").unwrap(), None);
        assert_eq!(parse_height("0").unwrap(), Some(0));
        assert_eq!(parse_height("12").unwrap(), Some(12));
        assert_eq!(
            parse_height("18446744073709551615").unwrap(),
            Some(u64::MAX)
        );
        for bad in [
            "",
            "+1",
            "01",
            "00",
            "-0",
            " 1",
            "1 ",
            "0x1",
            "18446744073709551616",
            "Latest",
        ] {
            let e = parse_height(bad).unwrap_err();
            assert_eq!((e.status.as_u16(), e.code), (400, "invalid"), "{bad:?}");
        }
    }
}
