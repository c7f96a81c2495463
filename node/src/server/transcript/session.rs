//! Each `session_game` step's authorization in a transcript (`"session"` of a step, chains with
//! state proofs): the `session_steps` record the node made when it committed the step's block
//! (`SessionWitness`: the session record `session/<account>/<key>` the step was admitted under,
//! in the parent block's state, with its proof against the parent's root), and the parent's
//! header, which the step's `prev_hash` binds. Where there is no proof to give (the session was
//! authorized within the step's block, so the state before it does not hold it; the node did not
//! execute the block), the entry says why (`unproven`), and verifiers name the step.

use gamechain_chain::session::{session_key, SessionRecord};
use gamechain_chain::wire::transcript::{ProvenSession, Step};
use gamechain_ledger::chain::Chain;
use gamechain_ledger::error::ChainError;
use gamechain_runtime::chain::{Action, TxBody};

/// Fills `session` of each step of `steps` that is a `session_game`, from the node's records.
/// Errors: the database failed.
pub fn prove_sessions(chain: &Chain, steps: &mut [Step]) -> Result<(), ChainError> {
    for step in steps.iter_mut().filter(|s| s.call.is_none()) {
        let Ok(body) = TxBody::parse(&step.body) else {
            continue;
        };
        let Action::SessionGame {
            account, session, ..
        } = &body.action
        else {
            continue;
        };
        let key = session_key(account, &body.from);
        let txid = step.txid.clone();
        let height = step.height;
        let record = chain.read_db(|db| db.session_step(&txid))?;
        let proven = match record {
            None => Err(
                "this node holds no record of the session before this step (it did not execute \
                 its block)"
                    .to_string(),
            ),
            Some((stored, _)) if stored != key => Err(format!(
                "this node's record is of `{}`, not the step's session",
                stored.chars().take(200).collect::<String>()
            )),
            Some((_, None)) => Err(format!(
                "this node's record of block {height} holds no proof of the session"
            )),
            // Authorized within the step's block: the state before it holds no record of the
            // session (or one of an earlier session of the key).
            Some((_, Some((value, _))))
                if value
                    .as_deref()
                    .and_then(SessionRecord::from_bytes)
                    .is_none_or(|r| r.id != *session) =>
            {
                Err(format!(
                    "session {session} was authorized within block {height}: the state before \
                     the block holds no record of it"
                ))
            }
            Some((_, Some(p))) if height > 0 => chain
                .read_db(|db| db.signed_header(height - 1))?
                .map(|h| (p, h.header))
                .ok_or_else(|| format!("block {} is not kept here", height - 1)),
            Some(_) => Err("a step at block 0".to_string()),
        };
        let proven = proven.and_then(|((value, proof), header)| {
            let text = value
                .map(String::from_utf8)
                .transpose()
                .map_err(|_| "the stored session record is not text".to_string())?;
            Ok((text, proof, header))
        });
        step.session = Some(match proven {
            Ok((value, proof, header)) => ProvenSession {
                header: Some(header),
                value,
                proof: Some(proof),
                unproven: None,
            },
            Err(why) => ProvenSession {
                header: None,
                value: None,
                proof: None,
                unproven: Some(why),
            },
        });
    }
    Ok(())
}
