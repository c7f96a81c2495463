//! [`ApiError`]: every error the HTTP API answers, as `{"error": {"code", "message"}}` with the
//! status `node/API.md` gives its code, and the mappings from the errors it comes from
//! (transaction checks, mempool refusals, view errors, axum's body rejections).

use axum::extract::rejection::BytesRejection;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use gamechain_chain::wire::{ErrorAnswer, ErrorBody};
use gamechain_runtime::chain::TxError;
use gamechain_sdk::ActionError;

use gamechain_ledger::error::ChainError;
use gamechain_ledger::mempool::Refusal;

/// An API error: HTTP status, machine code, message for a person, and for `rate_limited` the
/// seconds to wait.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// Machine code (`bad_json`, `not_found`, …).
    pub code: &'static str,
    /// What went wrong.
    pub message: String,
    /// Seconds for the `retry-after` header, when set.
    pub retry_after_s: Option<u64>,
}

impl ApiError {
    /// An error with this status, code and message.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            retry_after_s: None,
        }
    }

    /// `400 invalid`: a request value that cannot be used (the message says which and why).
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid", message)
    }

    /// `400 bad_json`.
    pub fn bad_json(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_json", message)
    }

    /// `413 too_large`.
    pub fn too_large(message: impl Into<String>) -> Self {
        Self::new(StatusCode::PAYLOAD_TOO_LARGE, "too_large", message)
    }

    /// `400 bad_address`.
    pub fn bad_address(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_address", message)
    }

    /// `404 not_found`.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    /// `429 rate_limited` with `retry-after: <seconds>`.
    pub fn rate_limited(retry_after_s: u64) -> Self {
        ApiError {
            retry_after_s: Some(retry_after_s),
            ..Self::new(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limited",
                format!("too many requests from this address; retry in {retry_after_s} s"),
            )
        }
    }

    /// `500 internal`: the node failed (the details go to the log, not to the client).
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }

    /// `503 timeout`: the request took longer than `limit`.
    pub fn timeout(limit: std::time::Duration) -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "timeout",
            format!(
                "the node did not answer within {} s; retry later",
                limit.as_secs_f64()
            ),
        )
    }

    /// The error a transaction's stateless check gives (`too_large` 413, `bad_json` 400,
    /// `wrong_chain` 400, `bad_address` 400, `bad_signature` 401).
    pub fn from_tx_error(e: &TxError) -> Self {
        let status = match e {
            TxError::TooLarge { .. } | TxError::CodeTooLarge { .. } => {
                StatusCode::PAYLOAD_TOO_LARGE
            }
            TxError::BadSignature(_) => StatusCode::UNAUTHORIZED,
            TxError::BadJson(_) | TxError::WrongChain { .. } | TxError::BadAddress(_) => {
                StatusCode::BAD_REQUEST
            }
        };
        Self::new(status, e.code(), e.to_string())
    }

    /// `413 too_large` for a request body over `limit` bytes on `route` (e.g. `POST /v1/tx`):
    /// `the request body is more than <limit> bytes (the limit for <route>)`.
    pub fn body_over(limit: usize, route: &str) -> Self {
        Self::too_large(format!(
            "the request body is more than {limit} bytes (the limit for {route})"
        ))
    }

    /// The error a mempool refusal gives (`duplicate` 409, `bad_nonce` 409 naming the expected
    /// nonce, `mempool_full` 503, also when too many deploys are pending).
    pub fn from_refusal(r: &Refusal) -> Self {
        let status = match r {
            Refusal::Duplicate | Refusal::BadNonce { .. } => StatusCode::CONFLICT,
            Refusal::Full { .. } | Refusal::BytesFull { .. } | Refusal::DeploysFull { .. } => {
                StatusCode::SERVICE_UNAVAILABLE
            }
        };
        Self::new(status, r.code(), r.to_string())
    }

    /// The error a view refused its query with: its code, with status 400 (`invalid`,
    /// `insufficient`), 403 (`unauthorized`), 404 (`not_found`), 409 (`conflict`) or 500
    /// (`internal`: trap, out of fuel), and its display text.
    pub fn from_action_error(e: &ActionError) -> Self {
        let status = match e {
            ActionError::Invalid(_) | ActionError::Insufficient { .. } => StatusCode::BAD_REQUEST,
            ActionError::Unauthorized(_) => StatusCode::FORBIDDEN,
            ActionError::NotFound(_) => StatusCode::NOT_FOUND,
            ActionError::Conflict(_) => StatusCode::CONFLICT,
            ActionError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        };
        Self::new(status, e.code(), e.to_string())
    }
}

impl From<ChainError> for ApiError {
    /// The status of each of the core's errors: a transaction check's (`from_tx_error`),
    /// `deploy_forbidden` 403, `upgrade_refused` 403, `session_refused` 403, `escrow_recipient` 400, `module_refused` 400, `too_costly` 503, a mempool refusal's (`from_refusal`), `not_found` 404, `pruned` 410,
    /// `bad_address` 400, `invalid` 400, a view's own (`from_action_error`), `internal` 500.
    fn from(e: ChainError) -> Self {
        match &e {
            ChainError::Tx(t) => Self::from_tx_error(t),
            ChainError::DeployForbidden { .. }
            | ChainError::UpgradeRefused(_)
            | ChainError::Session(_) => Self::new(StatusCode::FORBIDDEN, e.code(), e.to_string()),
            ChainError::EscrowRecipient { .. } => {
                Self::new(StatusCode::BAD_REQUEST, e.code(), e.to_string())
            }
            ChainError::CannotPayFee { .. } => {
                Self::new(StatusCode::PAYMENT_REQUIRED, e.code(), e.to_string())
            }
            ChainError::Refused(r) => Self::from_refusal(r),
            ChainError::NotFound(m) => Self::not_found(m.clone()),
            ChainError::Pruned(m) => Self::new(StatusCode::GONE, "pruned", m.clone()),
            ChainError::BadAddress(m) => Self::bad_address(m.clone()),
            ChainError::Invalid(m) => Self::new(StatusCode::BAD_REQUEST, "invalid", m.clone()),
            ChainError::NoProofs(m) => Self::new(StatusCode::CONFLICT, "no_proofs", m.clone()),
            ChainError::ModuleRefused(_) => {
                Self::new(StatusCode::BAD_REQUEST, e.code(), e.to_string())
            }
            ChainError::TooCostly(_) => {
                Self::new(StatusCode::SERVICE_UNAVAILABLE, e.code(), e.to_string())
            }
            ChainError::View(a) => Self::from_action_error(a),
            ChainError::Internal(m) => Self::internal(m.clone()),
        }
    }
}

impl From<BytesRejection> for ApiError {
    /// A body over `max_body_bytes` is `too_large` (in our words: endpoints that know their
    /// limit name it, see [`ApiError::body_over`]); any other failure to read it `bad_json`.
    fn from(r: BytesRejection) -> Self {
        if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::too_large("the request body is more than this endpoint's limit")
        } else {
            ApiError::bad_json(format!("cannot read the request body: {}", r.body_text()))
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorAnswer {
            error: ErrorBody {
                code: self.code.to_string(),
                message: self.message,
            },
        };
        let mut response = (self.status, Json(body)).into_response();
        if let Some(s) = self.retry_after_s {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(s));
        }
        response
    }
}
