//! The HTTP API of `node/API.md`: the axum router, its handlers, and the layers around them
//! (body limit, per-IP rate limit, CORS, panic catcher, request tracing).
//!
//! Handlers parse and validate the request, then run the work on a blocking thread
//! (`spawn_blocking`: SQLite, locks, wasm views) and answer JSON. Every failure, including
//! axum's own rejections, unknown paths and wrong methods, is an [`ApiError`] JSON body.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::{header, Method, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{middleware, Json, Router};
use gamechain_chain::wire::TxidAnswer;
use gamechain_runtime::chain::{SignedTx, MAX_DEPLOY_BODY_BYTES};
use serde_json::Value;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::cors::{Any, CorsLayer};
use tower_http::trace::TraceLayer;

use crate::config::NodeConfig;
use crate::error::NodeError;
use crate::ledger::error::ChainError;
use crate::server::api_error::ApiError;
use crate::server::rate_limit::{self, RateLimiter};
use crate::server::state::AppState;
use crate::server::ws;

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

/// The router of the whole API (`/v1/...`), with its layers.
pub fn router(app: AppState) -> Router {
    let config = &app.chain.config;
    let limiter = Arc::new(RateLimiter::new(
        config.rate_limit_per_sec,
        config.rate_limit_burst,
    ));
    let cors = CorsLayer::new()
        .allow_origin(Any)
        .allow_methods([Method::GET, Method::POST])
        .allow_headers([header::CONTENT_TYPE])
        .expose_headers([header::RETRY_AFTER]);
    Router::new()
        .route(
            "/v1/tx",
            post(post_tx).layer(DefaultBodyLimit::max(tx_request_limit(config))),
        )
        .route("/v1/tx/{txid}", get(get_tx))
        .route("/v1/account/{account}", get(get_account))
        .route("/v1/games/{module}", get(get_view))
        .route("/v1/blocks/{height}", get(get_block))
        .route("/v1/status", get(get_status))
        .route("/v1/genesis", get(get_genesis))
        .route("/v1/modules", get(get_modules))
        .route("/v1/modules/{id}", get(get_module))
        .route("/v1/code/{code_hash}", get(get_code))
        .route("/v1/ws", get(ws::subscribe))
        .fallback(unknown_path)
        .method_not_allowed_fallback(wrong_method)
        .layer(DefaultBodyLimit::max(config.max_body_bytes))
        .layer(CatchPanicLayer::custom(|_| {
            ApiError::internal("the node failed on this request").into_response()
        }))
        .layer(middleware::from_fn_with_state(limiter, rate_limit::limit))
        .layer(cors)
        .layer(TraceLayer::new_for_http())
        .with_state(app)
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
    body: Result<Bytes, BytesRejection>,
) -> Result<axum::response::Response, ApiError> {
    let bytes = body.map_err(|r| {
        if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::body_over(tx_request_limit(&app.chain.config), "POST /v1/tx")
        } else {
            ApiError::from(r)
        }
    })?;
    if let Some(upstream) = &app.upstream {
        return forward_tx(upstream, bytes).await;
    }
    let tx: SignedTx = serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::bad_json(format!(
            "expected {{\"body\": \"<body JSON>\", \"signature\": \"<base64>\"}}: {e}"
        ))
    })?;
    let txid = blocking(move || app.chain.submit(tx)).await?;
    Ok(sorted_json(&TxidAnswer { txid }).into_response())
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

/// `GET /v1/games/<module>?<query>`.
async fn get_view(
    State(app): State<AppState>,
    module: Result<Path<String>, PathRejection>,
    query: Result<Query<gamechain_sdk::Query>, QueryRejection>,
) -> ApiResult {
    let module = path_param(module)?;
    let Query(query) =
        query.map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "invalid", e.body_text()))?;
    blocking(move || app.chain.view(&module, &query))
        .await
        .map(Json)
}

/// `GET /v1/blocks/<height | latest>`.
async fn get_block(
    State(app): State<AppState>,
    height: Result<Path<String>, PathRejection>,
) -> ApiResult {
    let height = path_param(height)?;
    let height = match height.as_str() {
        "latest" => None,
        h => Some(h.parse::<u64>().map_err(|_| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid",
                format!("`{h}` is not a block height or `latest`"),
            )
        })?),
    };
    let block = blocking(move || app.chain.block(height)).await?;
    Ok(sorted_json(&block))
}

/// `GET /v1/status`.
async fn get_status(State(app): State<AppState>) -> ApiResult {
    let status = blocking(move || Ok(app.chain.status())).await?;
    Ok(sorted_json(&status))
}

/// `GET /v1/genesis`: the genesis file.
async fn get_genesis(State(app): State<AppState>) -> ApiResult {
    Ok(Json(
        serde_json::to_value(app.chain.genesis()).expect("a genesis serialises"),
    ))
}

/// `GET /v1/modules`.
async fn get_modules(State(app): State<AppState>) -> ApiResult {
    let modules = blocking(move || app.chain.modules()).await?;
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

/// `GET /v1/code/<code_hash>`: the raw wasm bytes, `application/wasm`.
async fn get_code(
    State(app): State<AppState>,
    hash: Result<Path<String>, PathRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let hash = path_param(hash)?;
    let wasm = blocking(move || app.chain.code(&hash)).await?;
    Ok(([(header::CONTENT_TYPE, "application/wasm")], wasm))
}

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
    let url = upstream.url(&["v1", "tx"]);
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
/// requests finish and new connections are refused).
pub async fn serve(listener: tokio::net::TcpListener, app: AppState) -> Result<(), NodeError> {
    let mut stop = app.shutdown.clone();
    axum::serve(
        listener,
        router(app).into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(async move {
        let _ = stop.wait_for(|s| *s).await;
    })
    .await
    .map_err(|e| NodeError::Bind(format!("the API server failed: {e}")))
}
