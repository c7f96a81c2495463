//! Session keys as data: the record a session keeps in state ([`SessionRecord`] at
//! `session/<account>/<key>`), the limits of a session, and the fixed texts of every refusal of a
//! transaction sent through one ([`SessionRefusal`]). The rules themselves (authorize, revoke,
//! admit, count against the cap) are the state transition's (`runtime/src/transition/session.rs`);
//! the whole design is `docs/session-keys.md`.
//!
//! A session key acts for an account (its *main key*'s address) only through a
//! `session_game` action (`block/tx.rs`): a game op of a module in the session's *scope*, before
//! its *expiry* (block time, ms), moving at most its *cap* of GOLD base units out of the account
//! over the session's life (stakes and fees alike).

use core::fmt;

use serde::{Deserialize, Serialize};

use gamechain_sdk::Amount;

/// Prefix of the session records: `session/<account>/<key>`.
pub const SESSION_PREFIX: &str = "session/";

/// Most module ids in one session's scope (16).
pub const MAX_SESSION_MODULES: usize = 16;

/// Most sessions one account holds at once (8; expired ones are dropped by the next
/// `authorize_session` of the account, revoked ones at once).
pub const MAX_SESSIONS_PER_ACCOUNT: usize = 8;

/// Longest a session may live: its expiry is at most this many ms of block time after the
/// block that authorizes it (30 days).
pub const MAX_SESSION_HORIZON_MS: u64 = 30 * 24 * 60 * 60 * 1000;

/// `session/<account>/<key>`: the record of `key`'s session for `account`.
pub fn session_key(account: &str, key: &str) -> String {
    format!("{SESSION_PREFIX}{account}/{key}")
}

/// `session/<account>/`: the prefix of every session record of `account`.
pub fn session_prefix(account: &str) -> String {
    format!("{SESSION_PREFIX}{account}/")
}

/// A session as stored at `session/<account>/<key>`: compact JSON with the fields in this
/// (sorted) order, e.g. `{"cap":"1000","expires_at_ms":1700003600000,"id":4,
/// "modules":["mnk","tictactoe"],"spent":"100"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionRecord {
    /// Most GOLD base units the session may move out of the account over its life (stakes
    /// escrowed by its game ops plus the fees of its transactions).
    pub cap: Amount,
    /// Block time (ms) from which the session is expired: a session transaction is valid only
    /// in a block whose `time_ms` is less.
    pub expires_at_ms: u64,
    /// The session's id: the account's nonce of the `authorize_session` transaction that made
    /// it. Every session transaction names it, so a transaction signed for one session of a
    /// key is void in any later session of the same key.
    pub id: u64,
    /// The scope: module ids whose game ops the session may send, sorted, no duplicates.
    pub modules: Vec<String>,
    /// GOLD base units moved out of the account through the session so far.
    pub spent: Amount,
}

impl SessionRecord {
    /// The stored bytes: compact JSON.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a SessionRecord always serialises")
    }

    /// Parses stored bytes; `None` when they are not a record this code writes.
    pub fn from_bytes(bytes: &[u8]) -> Option<SessionRecord> {
        serde_json::from_slice(bytes).ok()
    }

    /// Base units the session may still move: `cap - spent`, 0 when spent reached it.
    pub fn remaining(&self) -> u128 {
        self.cap.0.saturating_sub(self.spent.0)
    }

    /// Whether the session is live in a block of time `time_ms`.
    pub fn is_active(&self, time_ms: u64) -> bool {
        time_ms < self.expires_at_ms
    }
}

/// One session of an account as the API lists it (`GET /v1/accounts/<addr>/sessions`): the
/// record plus its key and whether it is live at the head's block time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionInfo {
    /// The session key's address.
    pub key: String,
    /// The session id (the account's nonce of its `authorize_session`).
    pub id: u64,
    /// The scope: module ids.
    pub modules: Vec<String>,
    /// Expiry, block time ms.
    pub expires_at_ms: u64,
    /// Cap, GOLD base units.
    pub cap: Amount,
    /// Moved so far, GOLD base units.
    pub spent: Amount,
    /// Whether the head's block time is before the expiry.
    pub active: bool,
}

/// `GET /v1/accounts/<addr>/sessions`: every session record of the account, sorted by key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionList {
    /// The account.
    pub account: String,
    /// Its sessions (at most [`MAX_SESSIONS_PER_ACCOUNT`]).
    pub sessions: Vec<SessionInfo>,
}

/// Why a session transaction cannot be in a block: the account has no such session, it
/// expired, the module is outside its scope, or its cap is used up. Such a transaction is never
/// included (it uses no nonce and pays nothing); a node refuses it at admission with the code
/// `session_refused` and this text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionRefusal {
    /// No record `session/<account>/<key>` with this id: never authorized, revoked, or replaced
    /// by a later authorization of the same key.
    NoSession {
        /// The account.
        account: String,
        /// The signing key.
        key: String,
        /// The id the transaction names.
        id: u64,
    },
    /// The block's time is at or past the session's expiry.
    Expired {
        /// The session's expiry, block time ms.
        expires_at_ms: u64,
        /// This block's time.
        now_ms: u64,
    },
    /// The op's module is not in the session's scope.
    OutOfScope {
        /// The module the transaction names.
        module: String,
        /// The scope.
        modules: Vec<String>,
    },
    /// What the session may still move is less than the chain's minimum fee (on a chain
    /// with fees): its cap is used up.
    CapUsedUp {
        /// The cap, base units.
        cap: u128,
        /// Spent so far.
        spent: u128,
        /// The chain's minimum fee.
        minimum_fee: u128,
    },
}

impl SessionRefusal {
    /// The API code of every session refusal: `session_refused`.
    pub fn code(&self) -> &'static str {
        "session_refused"
    }
}

impl fmt::Display for SessionRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoSession { account, key, id } => write!(
                f,
                "session: {key} has no session {id} for {account} (never authorized, revoked or \
                 replaced)"
            ),
            Self::Expired {
                expires_at_ms,
                now_ms,
            } => write!(
                f,
                "session: expired at block time {expires_at_ms} ms; this block's is {now_ms} ms"
            ),
            Self::OutOfScope { module, modules } => write!(
                f,
                "session: module {module} is not in the session's scope ({})",
                modules.join(", ")
            ),
            Self::CapUsedUp {
                cap,
                spent,
                minimum_fee,
            } => write!(
                f,
                "session: the cap of {cap} GOLD base units is used up ({spent} spent; a \
                 transaction costs at least {minimum_fee})"
            ),
        }
    }
}

impl std::error::Error for SessionRefusal {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_record_has_one_encoding() {
        let r = SessionRecord {
            cap: Amount(1000),
            expires_at_ms: 5,
            id: 4,
            modules: vec!["mnk".into(), "tictactoe".into()],
            spent: Amount(100),
        };
        let bytes = r.to_bytes();
        assert_eq!(
            std::str::from_utf8(&bytes).unwrap(),
            r#"{"cap":"1000","expires_at_ms":5,"id":4,"modules":["mnk","tictactoe"],"spent":"100"}"#
        );
        assert_eq!(SessionRecord::from_bytes(&bytes), Some(r.clone()));
        assert_eq!(r.remaining(), 900);
        assert!(r.is_active(4) && !r.is_active(5));
        assert_eq!(SessionRecord::from_bytes(b"{\"cap\":\"1\"}"), None);
        assert_eq!(session_key("A", "K"), "session/A/K");
    }
}
