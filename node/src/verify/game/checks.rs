//! The checks of one step that need no execution: the txid, the transaction's signature and
//! action, the header's signer and beacon, the step's place in the chain, the inclusion proofs
//! (a scheduled call's step: [`check_call_step`], the same without the transaction).

use gamechain_runtime::chain::merkle::verify_inclusion;
use gamechain_runtime::chain::{Action, Genesis, ScheduledReceipt, SignedTx, TxBody};

use super::report::GameDivergence;
use gamechain_chain::wire::transcript::{CallRef, Step};

fn proof_hashes(proof: &[String]) -> Option<Vec<[u8; 32]>> {
    proof
        .iter()
        .map(|h| {
            let mut out = [0u8; 32];
            hex::decode_to_slice(h, &mut out).ok()?;
            Some(out)
        })
        .collect()
}

/// The op bytes and the account a checked step acts for.
pub struct CheckedStep {
    /// The parsed body.
    pub body: TxBody,
    /// The op's JSON bytes exactly as signed.
    pub op: Vec<u8>,
}

/// Checks step `i` of a transcript of `module` on the chain of `genesis`; `previous` is the
/// step before it. Two steps of one block must show the same block (header, signature and tree
/// sizes): an RFC 6962 proof binds a leaf's index only for a given tree size, which the header
/// does not commit to, so a size that changes between steps could reorder them.
pub fn check_step(
    genesis: &Genesis,
    module: &str,
    i: usize,
    step: &Step,
    previous: Option<&Step>,
) -> Result<CheckedStep, GameDivergence> {
    let at = |field: &str, expected: String, got: String| {
        GameDivergence::at(i, &step.txid, field, expected, got)
    };
    let tx = SignedTx::new(step.body.clone(), step.signature.clone());
    if tx.txid() != step.txid {
        return Err(at("txid", step.txid.clone(), tx.txid()));
    }
    let body = tx.check(&genesis.chain_id, genesis.network).map_err(|e| {
        at(
            "signature",
            "a valid signed transaction".into(),
            e.to_string(),
        )
    })?;
    let op = match &body.action {
        Action::Game { game, op } | Action::SessionGame { game, op, .. } if game == module => {
            op.get().as_bytes().to_vec()
        }
        other => {
            return Err(at(
                "action",
                format!("a game op of module {module}"),
                format!("a `{}` action", other.kind()),
            ))
        }
    };
    let header = &step.header.header;
    check_place(genesis, i, step, previous)?;
    let bad_proof = |field: &str| {
        at(
            field,
            "a valid RFC 6962 inclusion proof".into(),
            "a proof that does not lead to the signed root".into(),
        )
    };
    let tx_proof = proof_hashes(&step.tx_proof).ok_or_else(|| bad_proof("tx_proof"))?;
    let index = u64::from(step.index);
    if !verify_inclusion(
        &tx.txid_bytes(),
        index,
        step.tx_count,
        &tx_proof,
        &header.tx_root,
    ) {
        return Err(bad_proof("tx_proof"));
    }
    let receipt_proof =
        proof_hashes(&step.receipt_proof).ok_or_else(|| bad_proof("receipt_proof"))?;
    let leaf = step.receipt.hash();
    let receipt_index = step.receipt_index.unwrap_or(index);
    if step.receipt_count < step.tx_count
        || receipt_index < index
        || !verify_inclusion(
            &leaf,
            receipt_index,
            step.receipt_count,
            &receipt_proof,
            &header.receipt_root,
        )
    {
        return Err(bad_proof("receipt_proof"));
    }
    Ok(CheckedStep { body, op })
}

/// Where a step sorts in the chain: its block, then its block's scheduled calls (which run
/// first) before its transactions, each by index.
fn place(s: &Step) -> (u64, u8, u32) {
    (s.height, u8::from(s.call.is_none()), s.index)
}

/// The checks every step shares: the header is of the step's height, signed by the chain's
/// block signer and carrying the beacon the genesis requires; the step comes after `previous`;
/// two steps of one block show the same block.
fn check_place(
    genesis: &Genesis,
    i: usize,
    step: &Step,
    previous: Option<&Step>,
) -> Result<(), GameDivergence> {
    let at = |field: &str, expected: String, got: String| {
        GameDivergence::at(i, &step.txid, field, expected, got)
    };
    let header = &step.header.header;
    if header.height != step.height {
        return Err(at(
            "height",
            step.height.to_string(),
            format!("a header of height {}", header.height),
        ));
    }
    if let Some(p) = previous {
        let (h, x) = (p.height, p.index);
        if place(step) <= place(p) {
            return Err(at(
                "order",
                format!("after block {h} step {x}"),
                format!("block {} step {}", step.height, step.index),
            ));
        }
        if step.height == h
            && (step.header != p.header
                || step.receipt_count != p.receipt_count
                || (step.call.is_none() && p.call.is_none() && step.tx_count != p.tx_count))
        {
            return Err(at(
                "block",
                format!(
                    "block {h} as the step before showed it ({} txs, {} receipts)",
                    p.tx_count, p.receipt_count
                ),
                format!(
                    "another header or size ({} txs, {} receipts)",
                    step.tx_count, step.receipt_count
                ),
            ));
        }
    }
    genesis.check_block_signer(&step.header).map_err(|e| {
        at(
            "header_signature",
            "the chain's block signer".into(),
            e.to_string(),
        )
    })?;
    genesis
        .check_beacon(header.height, header.beacon.as_ref())
        .map_err(|e| {
            at(
                "header.beacon",
                "the genesis beacon key's signature of this height".into(),
                e,
            )
        })?;
    Ok(())
}

/// Checks step `i`, a scheduled call of `module` (`step.call`), as [`check_step`] checks a
/// transaction's: its place, header and beacon, and that its receipt (bound to the call:
/// `ScheduledReceipt::hash`) is leaf `index` under the header's `receipt_root`.
pub fn check_call_step(
    genesis: &Genesis,
    module: &str,
    i: usize,
    step: &Step,
    previous: Option<&Step>,
) -> Result<CallRef, GameDivergence> {
    let call = step.call.clone().expect("a call step");
    let at = |field: &str, expected: String, got: String| {
        GameDivergence::at(i, &format!("call {}", call.id), field, expected, got)
    };
    if call.module != module {
        return Err(at("call.module", module.to_string(), call.module.clone()));
    }
    if !step.txid.is_empty() || !step.body.is_empty() || !step.tx_proof.is_empty() {
        return Err(at(
            "call",
            "a call step without transaction fields".into(),
            "a step with both".into(),
        ));
    }
    check_place(genesis, i, step, previous)?;
    let proof = proof_hashes(&step.receipt_proof).ok_or_else(|| {
        at(
            "receipt_proof",
            "a valid RFC 6962 inclusion proof".into(),
            "malformed hashes".into(),
        )
    })?;
    let leaf = ScheduledReceipt {
        module: call.module.clone(),
        id: call.id,
        receipt: step.receipt.clone(),
    }
    .hash();
    if !verify_inclusion(
        &leaf,
        u64::from(step.index),
        step.receipt_count,
        &proof,
        &step.header.header.receipt_root,
    ) {
        return Err(at(
            "receipt_proof",
            "a valid RFC 6962 inclusion proof".into(),
            "a proof that does not lead to the signed root".into(),
        ));
    }
    Ok(call)
}
