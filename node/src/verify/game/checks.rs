//! The checks of one step that need no execution: the txid, the transaction's signature and
//! action, the header's signer, the step's place in the chain, the two inclusion proofs.

use gamechain_runtime::chain::merkle::verify_inclusion;
use gamechain_runtime::chain::{Action, Genesis, SignedTx, TxBody};

use super::report::GameDivergence;
use crate::server::transcript::wire::Step;

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
    if header.height != step.height {
        return Err(at(
            "height",
            step.height.to_string(),
            format!("a header of height {}", header.height),
        ));
    }
    if let Some(p) = previous {
        let (h, x) = (p.height, p.index);
        if (step.height, step.index) <= (h, x) {
            return Err(at(
                "order",
                format!("after block {h} tx {x}"),
                format!("block {} tx {}", step.height, step.index),
            ));
        }
        let block = |s: &Step| (s.header.clone(), s.tx_count, s.receipt_count);
        if step.height == h && block(step) != block(p) {
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
    if step.receipt_count < step.tx_count
        || !verify_inclusion(
            &leaf,
            index,
            step.receipt_count,
            &receipt_proof,
            &header.receipt_root,
        )
    {
        return Err(bad_proof("receipt_proof"));
    }
    Ok(CheckedStep { body, op })
}
