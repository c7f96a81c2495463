//! On a chain with state proofs, that each `session_game` step was authorized: its `session`
//! entry proves the session record it was admitted under (`session/<account>/<key>`) against
//! the state root of the block before the step's, whose header must hash to the step's
//! `prev_hash`; and the record allows the step as the chain's admission does
//! (`runtime/src/transition/session.rs`): the step's session id, live at its block's time, the
//! module in scope, and cap left for what the re-executed op moved plus the receipt's fee (and
//! what this transcript's earlier steps of the session in the same block moved). So a block
//! signer cannot pass off a step signed by a key the account never authorized before the block,
//! or one past its session's expiry or scope, or over its cap as the record stood before the
//! block. What the record before the block cannot show: what the block itself did before the
//! step in other games (their spending, a revocation), which the whole chain's replay checks
//! (`gamechain verify`). A node that has no proof to give says why (`unproven`: the session was
//! authorized within the block, or the node did not execute it); the step is then reported,
//! not refused.

use gamechain_chain::session::{session_key, SessionRecord};
use gamechain_chain::wire::transcript::Step;
use gamechain_runtime::chain::{Action, TxBody};

use super::report::GameDivergence;
use super::start::{printable, MAX_UNPROVEN_REASON_CHARS};

/// Checks step `i`'s `session` (a `session_game` step of `module`, `body` its checked body,
/// `debited` the GOLD the re-executed op moved for the account, as the chain counts it against
/// the cap; `same_block` what the transcript's earlier steps of the same session in the same
/// block moved, fees included: the record before the block does not count them). `Ok(None)`: proven and allowed; `Ok(Some(why))`: the node's reason it cannot prove
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
    same_block: u128,
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
            format!("{:?}", value.chars().take(200).collect::<String>()),
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
    let total = moved.saturating_add(same_block);
    if total > record.remaining() {
        return refuse(
            format!(
                "cap left for the {moved} GOLD base units the step moved (fee included), after \
                 {same_block} by the transcript's earlier steps of the session in its block"
            ),
            format!("{} left of the cap of {}", record.remaining(), record.cap.0),
        );
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gamechain_chain::state_root::SparseMerkleTree;
    use gamechain_chain::wire::transcript::ProvenSession;
    use gamechain_runtime::chain::{Header, Network, Receipt, SecretKey, SignedHeader, TxBody};
    use gamechain_sdk::{Amount, Checkpoint};

    fn header(height: u64, prev_hash: [u8; 32], state_root: [u8; 32], time_ms: u64) -> Header {
        Header {
            height,
            prev_hash,
            time_ms,
            sequencer: String::new(),
            checkpoint: Checkpoint::default(),
            tx_root: [0; 32],
            receipt_root: [0; 32],
            state_root,
            beacon: None,
        }
    }

    /// A session step of `tictactoe` in block 8 (time 1,000) whose record before the block is
    /// `record`, with `fee`.
    fn step(record: &SessionRecord, fee: u128) -> (Step, TxBody) {
        let (account, key) = (
            SecretKey::generate(Network::Testnet),
            SecretKey::generate(Network::Testnet),
        );
        let state_key = session_key(&account.address(), &key.address());
        let value = String::from_utf8(record.to_bytes()).unwrap();
        let tree = SparseMerkleTree::from_entries([(state_key.as_str(), value.as_str())]);
        let parent = header(7, [0; 32], tree.root(), 900);
        let body = TxBody {
            chain_id: "c".into(),
            from: key.address(),
            nonce: 9,
            action: Action::SessionGame {
                account: account.address(),
                session: 4,
                game: "tictactoe".into(),
                op: serde_json::value::to_raw_value(&serde_json::json!({})).unwrap(),
            },
        };
        let mut receipt = Receipt::success(Vec::new(), 1);
        receipt.fee = Amount(fee);
        let step = Step {
            height: 8,
            index: 0,
            call: None,
            txid: "t".into(),
            body: String::new(),
            signature: String::new(),
            receipt,
            header: SignedHeader {
                header: header(8, parent.hash(), [0; 32], 1_000),
                signature: String::new(),
            },
            tx_count: 1,
            receipt_count: 1,
            receipt_index: None,
            tx_proof: Vec::new(),
            receipt_proof: Vec::new(),
            finality: None,
            session: Some(ProvenSession {
                header: Some(parent),
                value: Some(value),
                proof: Some(tree.prove(&state_key)),
                unproven: None,
            }),
        };
        (step, body)
    }

    fn record(cap: u128, spent: u128, expires_at_ms: u64, modules: &[&str]) -> SessionRecord {
        SessionRecord {
            cap: Amount(cap),
            expires_at_ms,
            id: 4,
            modules: modules.iter().map(|m| m.to_string()).collect(),
            spent: Amount(spent),
        }
    }

    #[test]
    fn the_record_before_the_block_must_allow_the_step_as_the_chain_admits_it() {
        let check = |r: &SessionRecord, debited: u128, fee: u128, same_block: u128| {
            let (step, body) = step(r, fee);
            check_session_step("tictactoe", 0, &step, &body, debited, same_block)
        };
        let live = record(100, 60, 2_000, &["mnk", "tictactoe"]);
        assert_eq!(check(&live, 30, 10, 0), Ok(None), "exactly the cap left");
        let field = |r: Result<Option<String>, GameDivergence>| r.unwrap_err().field;
        assert_eq!(
            field(check(&live, 31, 10, 0)),
            "session.record",
            "over the cap"
        );
        assert_eq!(
            field(check(&live, 20, 10, 11)),
            "session.record",
            "over the cap with the block's earlier steps of the session"
        );
        assert_eq!(
            field(check(&record(100, 0, 1_000, &["tictactoe"]), 0, 0, 0)),
            "session.record",
            "expired at the block's time"
        );
        assert_eq!(
            field(check(&record(100, 0, 2_000, &["mnk"]), 0, 0, 0)),
            "session.record",
            "out of scope"
        );
        let mut other = live.clone();
        other.id = 3;
        assert_eq!(
            field(check(&other, 0, 0, 0)),
            "session.record",
            "another session of the key"
        );
        // The proof is of the record shown, in the parent's state.
        let (mut lie, body) = step(&live, 0);
        lie.session.as_mut().unwrap().value =
            Some(String::from_utf8(record(900, 0, 2_000, &["tictactoe"]).to_bytes()).unwrap());
        assert_eq!(
            field(check_session_step("tictactoe", 0, &lie, &body, 0, 0)),
            "session.proof"
        );
        let (mut lie, body) = step(&live, 0);
        lie.header.header.prev_hash = [1; 32];
        assert_eq!(
            field(check_session_step("tictactoe", 0, &lie, &body, 0, 0)),
            "session.header"
        );
    }
}
