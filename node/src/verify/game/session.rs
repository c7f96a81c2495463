//! On a chain with state proofs, that each `session_game` step was authorized: its `session`
//! entry proves the session record it was admitted under (`session/<account>/<key>`) against
//! the state root of the block before the step's, whose header must hash to the step's
//! `prev_hash`; and the record allows the step as the chain's admission does
//! (`runtime/src/transition/session.rs`): the step's session id, live at its block's time, the
//! module in scope, and cap left for what the re-executed op moved plus the receipt's fee. So a
//! block signer cannot pass off a step signed by a key the account never authorized, or one
//! past its session's expiry, scope or cap. A node that has no proof to give says why
//! (`unproven`); the step is then reported, not refused.

use gamechain_chain::session::{session_key, SessionRecord};
use gamechain_chain::wire::transcript::Step;
use gamechain_runtime::chain::{Action, TxBody};

use super::report::GameDivergence;
use super::start::{printable, MAX_UNPROVEN_REASON_CHARS};

/// Checks step `i`'s `session` (a `session_game` step of `module`, `body` its checked body,
/// `debited` the GOLD the re-executed op moved for the account, as the chain counts it against
/// the cap). `Ok(None)`: proven and allowed; `Ok(Some(why))`: the node's reason it cannot prove
/// it. Divergences: `session` (no entry, an unprintable reason, no record: the key was never
/// authorized or was revoked), `session.header` (not the parent of the step's block),
/// `session.proof` (a value or proof that does not check), `session.record` (a record that does
/// not allow the step: another session, expired, out of scope, cap exceeded).
pub fn check_session_step(
    module: &str,
    i: usize,
    step: &Step,
    body: &TxBody,
    debited: u128,
) -> Result<Option<String>, GameDivergence> {
    let Action::SessionGame {
        account, session, ..
    } = &body.action
    else {
        return Ok(None);
    };
    let at = |field: &str, expected: String, got: String| {
        GameDivergence::at(i, &step.txid, field, expected, got)
    };
    let key = session_key(account, &body.from);
    let Some(entry) = &step.session else {
        return Err(at(
            "session",
            format!("a proof of {key}, the session the step was admitted under"),
            "none".into(),
        ));
    };
    if let Some(why) = &entry.unproven {
        if !printable(why) {
            return Err(at(
                "session",
                format!(
                    "a reason of 1 to {MAX_UNPROVEN_REASON_CHARS} printable characters why the session is not proven"
                ),
                format!("{:?}", why.chars().take(80).collect::<String>()),
            ));
        }
        return Ok(Some(why.clone()));
    }
    let header = step.header.header.clone();
    let Some(parent) = &entry.header else {
        return Err(at(
            "session.header",
            format!("the header of block {}", header.height.saturating_sub(1)),
            "none".into(),
        ));
    };
    if parent.hash() != header.prev_hash {
        return Err(at(
            "session.header",
            format!(
                "the header of block {}, the parent of the step's",
                header.height.saturating_sub(1)
            ),
            format!("a header of block {} that is not it", parent.height),
        ));
    }
    let Some(proof) = &entry.proof else {
        return Err(at(
            "session.proof",
            format!("a proof of {key}"),
            "none".into(),
        ));
    };
    proof
        .verify(
            &parent.state_root,
            &key,
            entry.value.as_deref().map(str::as_bytes),
        )
        .map_err(|e| {
            at(
                "session.proof",
                format!("{key} as block {}'s state root holds it", parent.height),
                e.to_string(),
            )
        })?;
    let Some(value) = &entry.value else {
        return Err(at(
            "session",
            format!("a session of {} authorized by {account}", body.from),
            format!(
                "no record at {key} before block {}: the key was not authorized",
                header.height
            ),
        ));
    };
    let record = SessionRecord::from_bytes(value.as_bytes()).ok_or_else(|| {
        at(
            "session.record",
            "a session record".into(),
            value.chars().take(200).collect(),
        )
    })?;
    let refuse = |expected: String, got: String| Err(at("session.record", expected, got));
    if record.id != *session {
        return refuse(
            format!("session {session}"),
            format!("session {}", record.id),
        );
    }
    if !record.is_active(header.time_ms) {
        return refuse(
            format!("a session live at block time {} ms", header.time_ms),
            format!("a session that expired at {} ms", record.expires_at_ms),
        );
    }
    if record
        .modules
        .binary_search_by(|m| m.as_str().cmp(module))
        .is_err()
    {
        return refuse(
            format!("a session whose scope holds {module}"),
            format!("scope {:?}", record.modules),
        );
    }
    let moved = debited.saturating_add(step.receipt.fee.0);
    if moved > record.remaining() {
        return refuse(
            format!("cap left for the {moved} GOLD base units the step moved (fee included)"),
            format!("{} left of the cap of {}", record.remaining(), record.cap.0),
        );
    }
    Ok(None)
}
