//! Session keys in the state transition: the `authorize_session` and `revoke_session` actions of
//! a main key, the stateful checks a `session_game` must pass to be in a block at all
//! ([`check_session`], also run by a node at admission), and how the cap counts what the
//! transaction moved ([`SessionUse`]). The record and the refusal texts are
//! `gamechain_chain::session`; the design is `docs/session-keys.md`.
//!
//! Order of a `session_game` in a block (after the stateless checks and the account's nonce):
//!
//! 1. [`check_session`]: the record `session/<account>/<from>` exists with the transaction's
//!    session id, the block's time is before its expiry, the module is in its scope, and it may
//!    still move the chain's minimum fee. Any failure is a [`SessionRefusal`]: the transaction
//!    cannot be in the block (it uses no nonce, pays nothing, writes nothing).
//! 2. The op runs as `account`'s (the guest's sender is `account`), counting every decrease of
//!    `bal/<account>/GOLD` (`execute_apply_metered`).
//! 3. [`SessionUse::cap`]: a successful op gets the event `session {"account", "key",
//!    "session"}` (last), then, when what it moved plus its fee (as priced before it is charged)
//!    is more than the session may still move, it is undone: the receipt is `invalid: session
//!    cap: …` (fixed text below), its fuel kept.
//! 4. The fee, as for every transaction (paid by `account`).
//! 5. [`SessionUse::record`]: `spent` grows by what the included transaction moved (nothing for
//!    a failed op) plus its fee, and the record is written back.

use super::*;
use crate::chain::session::{
    session_key, session_prefix, SessionRecord, SessionRefusal, MAX_SESSIONS_PER_ACCOUNT,
    MAX_SESSION_HORIZON_MS,
};
use crate::chain::FeeSchedule;
use gamechain_sdk::Kv;

/// A `session_game` that passed [`check_session`]: its record, to count the transaction against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionUse {
    /// `session/<account>/<key>`.
    pub state_key: String,
    /// The account acted for.
    pub account: String,
    /// The session key that signed.
    pub key: String,
    /// The record before this transaction.
    pub record: SessionRecord,
}

/// The stateful checks of a `session_game` signed by `key` for `account` under session `id`,
/// naming module `game`, in a block of time `time_ms` on a chain whose minimum fee is
/// `minimum_fee` (0 without fees), over `state`: `Ok(Ok(use))` when it may be in the block,
/// `Ok(Err(refusal))` with the fixed text otherwise, `Err` when the stored record is corrupt.
pub fn check_session(
    state: &dyn State,
    key: &str,
    account: &str,
    id: u64,
    game: &str,
    time_ms: u64,
    minimum_fee: u128,
) -> Result<Result<SessionUse, SessionRefusal>, TransitionError> {
    let state_key = session_key(account, key);
    let no_session = || SessionRefusal::NoSession {
        account: account.to_string(),
        key: key.to_string(),
        id,
    };
    let Some(bytes) = state.get(&state_key) else {
        return Ok(Err(no_session()));
    };
    let record =
        SessionRecord::from_bytes(&bytes).ok_or_else(|| TransitionError::CorruptState {
            key: state_key.clone(),
        })?;
    if record.id != id {
        return Ok(Err(no_session()));
    }
    if !record.is_active(time_ms) {
        return Ok(Err(SessionRefusal::Expired {
            expires_at_ms: record.expires_at_ms,
            now_ms: time_ms,
        }));
    }
    if record
        .modules
        .binary_search_by(|m| m.as_str().cmp(game))
        .is_err()
    {
        return Ok(Err(SessionRefusal::OutOfScope {
            module: game.to_string(),
            modules: record.modules.clone(),
        }));
    }
    if record.remaining() < minimum_fee {
        return Ok(Err(SessionRefusal::CapUsedUp {
            cap: record.cap.0,
            spent: record.spent.0,
            minimum_fee,
        }));
    }
    Ok(Ok(SessionUse {
        state_key,
        account: account.to_string(),
        key: key.to_string(),
        record,
    }))
}

impl SessionUse {
    /// Step 3 of the module docs: the event on success, then the cap. `fees`: the chain's
    /// schedule (the fee counts against the cap).
    pub(super) fn cap(
        &self,
        mut outcome: ActionOutcome,
        fees: Option<&FeeSchedule>,
    ) -> ActionOutcome {
        if !outcome.receipt.ok {
            return outcome;
        }
        outcome.receipt.events.push(Event {
            kind: "session".to_string(),
            data: json!({
                "account": self.account,
                "key": self.key,
                "session": self.record.id,
            }),
        });
        let fee = fees.map_or(0, |f| fees::estimate(f, &outcome));
        let moved = outcome.debited.saturating_add(fee);
        let remaining = self.record.remaining();
        if moved <= remaining {
            return outcome;
        }
        let error = ActionError::invalid(format!(
            "session cap: this transaction would move {moved} GOLD base units for {} ({} by \
             the op, {fee} in fees); session {} of {} may move {remaining} more of its cap of {}",
            self.account, outcome.debited, self.record.id, self.key, self.record.cap.0
        ));
        ActionOutcome {
            log: outcome.log,
            ..ActionOutcome::failure_with_fuel(error, outcome.receipt.fuel_used)
        }
    }

    /// Step 5 of the module docs: the record after the included transaction whose final
    /// outcome is `outcome` (its fee charged), as the write to make.
    pub(super) fn record(&self, outcome: &ActionOutcome) -> (String, Option<Vec<u8>>) {
        let moved = if outcome.receipt.ok {
            outcome.debited
        } else {
            0
        };
        let mut record = self.record.clone();
        record.spent = gamechain_sdk::Amount(
            record
                .spent
                .0
                .saturating_add(moved)
                .saturating_add(outcome.receipt.fee.0),
        );
        (self.state_key.clone(), Some(record.to_bytes()))
    }
}

/// `authorize_session {key, modules, expires_at_ms, cap}` from `account` (its main key), whose
/// transaction has nonce `id`, in a block of time `now_ms`. Errors (fixed texts): ``invalid:
/// `<key>` is not an address of this chain: …``; `invalid: a session key must not be the
/// account's own key`; `invalid: a session must expire after this block's time (<now> ms) and
/// at most 2592000000 ms (30 days) after it; expires_at_ms is <t>`; `invalid: <account> holds 8
/// live sessions, the limit: revoke one first`. Drops the account's expired sessions first;
/// replaces an earlier session of the same key (a new id, nothing spent). Event
/// `session_authorized {"account", "cap", "expires_at_ms", "key", "modules", "session"}`.
#[allow(clippy::too_many_arguments)]
pub(super) fn authorize(
    network: Network,
    kv: &mut Overlay<'_>,
    account: &str,
    id: u64,
    now_ms: u64,
    key: &str,
    modules: &[String],
    expires_at_ms: u64,
    cap: gamechain_sdk::Amount,
) -> Result<Vec<Event>, ActionError> {
    check_address(key, network).map_err(|e| {
        ActionError::invalid(format!("`{key}` is not an address of this chain: {e}"))
    })?;
    if key == account {
        return Err(ActionError::invalid(
            "a session key must not be the account's own key",
        ));
    }
    let latest = now_ms.saturating_add(MAX_SESSION_HORIZON_MS);
    if expires_at_ms <= now_ms || expires_at_ms > latest {
        return Err(ActionError::invalid(format!(
            "a session must expire after this block's time ({now_ms} ms) and at most \
             {MAX_SESSION_HORIZON_MS} ms (30 days) after it; expires_at_ms is {expires_at_ms}"
        )));
    }
    let prefix = session_prefix(account);
    let mut others = 0usize;
    // At most MAX_SESSIONS_PER_ACCOUNT records exist (this rule keeps it so).
    for (state_key, bytes) in kv.scan(&prefix, None, MAX_SESSIONS_PER_ACCOUNT + 1) {
        let other_key = &state_key[prefix.len()..];
        if other_key == key {
            continue;
        }
        let live = SessionRecord::from_bytes(&bytes).is_some_and(|r| r.is_active(now_ms));
        if live {
            others += 1;
        } else {
            kv.kv_delete(&state_key);
        }
    }
    if others >= MAX_SESSIONS_PER_ACCOUNT {
        return Err(ActionError::invalid(format!(
            "{account} holds {MAX_SESSIONS_PER_ACCOUNT} live sessions, the limit: revoke one first"
        )));
    }
    let record = SessionRecord {
        cap,
        expires_at_ms,
        id,
        modules: modules.to_vec(),
        spent: gamechain_sdk::Amount(0),
    };
    kv.kv_put(&session_key(account, key), record.to_bytes());
    Ok(vec![Event {
        kind: "session_authorized".to_string(),
        data: json!({
            "account": account,
            "cap": cap.0.to_string(),
            "expires_at_ms": expires_at_ms,
            "key": key,
            "modules": modules,
            "session": id,
        }),
    }])
}

/// `revoke_session {key}` from `account`: deletes the record (expired or not). Error: `not found:
/// session of <key> for <account>`. Event `session_revoked {"account", "key", "session"}`.
pub(super) fn revoke(
    kv: &mut Overlay<'_>,
    account: &str,
    key: &str,
) -> Result<Vec<Event>, ActionError> {
    let state_key = session_key(account, key);
    let record = kv
        .kv_get(&state_key)
        .and_then(|b| SessionRecord::from_bytes(&b))
        .ok_or_else(|| ActionError::not_found(format!("session of {key} for {account}")))?;
    kv.kv_delete(&state_key);
    Ok(vec![Event {
        kind: "session_revoked".to_string(),
        data: json!({"account": account, "key": key, "session": record.id}),
    }])
}
