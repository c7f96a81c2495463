//! `ActionError`: why an op, a view or a host call failed.
//!
//! Owns the six error kinds (`docs/tictactoe.md`, "Errors"), their
//! exact display texts (which receipts carry), their short machine codes (which the API and tests
//! match on), and the JSON form in which an error crosses the host/guest boundary (ABI.md,
//! "Errors").

use core::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// Why an op, a view or a host call failed. A transaction whose `apply` returns one is still
/// included in its block with `ok: false` and this error's [`Display`](fmt::Display) text; every
/// write it made is discarded and its nonce is used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ActionError {
    /// The op is malformed or not possible now. Text: `invalid: <msg>`; code `invalid`.
    Invalid(String),
    /// The sender may not do this. Text: `not allowed: <msg>`; code `unauthorized`.
    Unauthorized(String),
    /// A named thing does not exist. Text: `not found: <msg>`; code `not_found`.
    NotFound(String),
    /// An account holds less than it must pay. Text: `insufficient <token>: need <need>, have
    /// <have>` (amounts in base units); code `insufficient`.
    Insufficient {
        token: String,
        need: u128,
        have: u128,
    },
    /// The op collides with existing state. Text: `conflict: <msg>`; code `conflict`.
    Conflict(String),
    /// A fault of the module or the runtime (trap, out of fuel, bad pointer, …). Text:
    /// `internal: <msg>`; code `internal`. Runtime faults use the fixed texts listed in ABI.md.
    Internal(String),
}

impl ActionError {
    /// `ActionError::Invalid(msg)`.
    pub fn invalid(msg: impl Into<String>) -> Self {
        Self::Invalid(msg.into())
    }
    /// `ActionError::Unauthorized(msg)`.
    pub fn unauthorized(msg: impl Into<String>) -> Self {
        Self::Unauthorized(msg.into())
    }
    /// `ActionError::NotFound(msg)`.
    pub fn not_found(msg: impl Into<String>) -> Self {
        Self::NotFound(msg.into())
    }
    /// `ActionError::Conflict(msg)`.
    pub fn conflict(msg: impl Into<String>) -> Self {
        Self::Conflict(msg.into())
    }
    /// `ActionError::Internal(msg)`.
    pub fn internal(msg: impl Into<String>) -> Self {
        Self::Internal(msg.into())
    }

    /// Short machine-readable code for receipts and the API: one of `invalid`, `unauthorized`,
    /// `not_found`, `insufficient`, `conflict`, `internal`.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Invalid(_) => "invalid",
            Self::Unauthorized(_) => "unauthorized",
            Self::NotFound(_) => "not_found",
            Self::Insufficient { .. } => "insufficient",
            Self::Conflict(_) => "conflict",
            Self::Internal(_) => "internal",
        }
    }

    /// The error as it crosses the ABI: `{"code": "<code>", "message": "<msg>"}`, and for
    /// `insufficient` `{"code": "insufficient", "token": "GOLD", "need": "<u128>", "have": "<u128>"}`
    /// (amounts as decimal strings of base units).
    pub fn to_json(&self) -> Value {
        match self {
            Self::Insufficient { token, need, have } => json!({
                "code": "insufficient", "token": token, "need": need.to_string(), "have": have.to_string(),
            }),
            Self::Invalid(m)
            | Self::Unauthorized(m)
            | Self::NotFound(m)
            | Self::Conflict(m)
            | Self::Internal(m) => {
                json!({ "code": self.code(), "message": m })
            }
        }
    }

    /// Parses the ABI form written by [`ActionError::to_json`]. Returns `None` for anything else
    /// (an unknown code, a missing field, an amount that is not a decimal u128).
    pub fn from_json(value: &Value) -> Option<Self> {
        let text = |field: &str| value.get(field).and_then(Value::as_str).map(str::to_string);
        let amount = |field: &str| {
            text(field)
                .and_then(|s| s.parse::<crate::Amount>().ok())
                .map(|a| a.0)
        };
        Some(match value.get("code")?.as_str()? {
            "invalid" => Self::Invalid(text("message")?),
            "unauthorized" => Self::Unauthorized(text("message")?),
            "not_found" => Self::NotFound(text("message")?),
            "conflict" => Self::Conflict(text("message")?),
            "internal" => Self::Internal(text("message")?),
            "insufficient" => Self::Insufficient {
                token: text("token")?,
                need: amount("need")?,
                have: amount("have")?,
            },
            _ => return None,
        })
    }
}

impl fmt::Display for ActionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Invalid(m) => write!(f, "invalid: {m}"),
            Self::Unauthorized(m) => write!(f, "not allowed: {m}"),
            Self::NotFound(m) => write!(f, "not found: {m}"),
            Self::Insufficient { token, need, have } => {
                write!(f, "insufficient {token}: need {need}, have {have}")
            }
            Self::Conflict(m) => write!(f, "conflict: {m}"),
            Self::Internal(m) => write!(f, "internal: {m}"),
        }
    }
}

impl std::error::Error for ActionError {}

/// Serialised as its display text, e.g. `"invalid: cell is taken"`, as receipts carry it.
impl Serialize for ActionError {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Accepts the ABI JSON object form (see [`ActionError::to_json`]).
impl<'de> Deserialize<'de> for ActionError {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        Self::from_json(&v).ok_or_else(|| serde::de::Error::custom("not an ActionError object"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_texts_and_codes_follow_the_errors_table() {
        let cases = [
            (
                ActionError::invalid("cell is taken"),
                "invalid: cell is taken",
                "invalid",
            ),
            (
                ActionError::unauthorized("not your turn"),
                "not allowed: not your turn",
                "unauthorized",
            ),
            (
                ActionError::not_found("game 1"),
                "not found: game 1",
                "not_found",
            ),
            (
                ActionError::Insufficient {
                    token: "GOLD".into(),
                    need: 100,
                    have: 5,
                },
                "insufficient GOLD: need 100, have 5",
                "insufficient",
            ),
            (
                ActionError::conflict("game 1 exists"),
                "conflict: game 1 exists",
                "conflict",
            ),
            (
                ActionError::internal("out of fuel"),
                "internal: out of fuel",
                "internal",
            ),
        ];
        for (err, text, code) in cases {
            assert_eq!(err.to_string(), text);
            assert_eq!(err.code(), code);
            assert_eq!(ActionError::from_json(&err.to_json()), Some(err));
        }
    }

    #[test]
    fn malformed_abi_errors_are_refused() {
        assert_eq!(
            ActionError::from_json(&json!({"code": "nope", "message": "x"})),
            None
        );
        assert_eq!(ActionError::from_json(&json!({"code": "invalid"})), None);
        assert_eq!(
            ActionError::from_json(
                &json!({"code": "insufficient", "token": "G", "need": "-1", "have": "0"})
            ),
            None
        );
    }
}
