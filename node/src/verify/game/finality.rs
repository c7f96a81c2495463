//! Each step's finality on a chain with validators: its `finality` record
//! (`proof/step_finality.rs`) must prove its block final against the genesis validator set
//! ([`FinalityChecker`]). Without it a header signed by any one validator of the set would be
//! taken as the chain's. A chain without validators has nothing to check here (its sequencer's
//! signature, checked with the header, is final).

use gamechain_chain::wire::transcript::{Step, MAX_FINALITY_LINKS};
use gamechain_runtime::chain::Genesis;

use super::report::GameDivergence;
use crate::proof::finality::FinalityChecker;
use crate::proof::step_finality::check_step_finality;

/// The checker of `genesis`'s validator set, `None` on a chain without validators. Errors: a
/// genesis whose set has a bad key (divergence `finality`).
pub fn checker(
    genesis: &Genesis,
    genesis_hash: &str,
) -> Result<Option<FinalityChecker>, GameDivergence> {
    if genesis.validators.is_none() {
        return Ok(None);
    }
    FinalityChecker::new(genesis, genesis_hash)
        .map(Some)
        .map_err(|e| GameDivergence::whole("finality", "the genesis validator set", e))
}

/// Checks that step `i`'s block is final: divergence `finality` when the step carries no
/// finality record, `finality.certificate` when its record does not prove the block final (a
/// forged or damaged certificate, one of another block, a changed link). `Ok`: the height whose
/// certificate finalized it.
pub fn check_final(
    checker: &FinalityChecker,
    i: usize,
    step: &Step,
) -> Result<u64, GameDivergence> {
    let name = match &step.call {
        Some(c) => format!("call {}", c.id),
        None => step.txid.clone(),
    };
    let height = step.header.header.height;
    let Some(record) = &step.finality else {
        return Err(GameDivergence::at(
            i,
            &name,
            "finality",
            format!(
                "a finality certificate of block {height} (its own or a descendant's within \
                 {MAX_FINALITY_LINKS} blocks) by a quorum of the genesis validators"
            ),
            format!("step {i} (block {height}) carries no finality record"),
        ));
    };
    let tx_count = step.call.is_none().then_some(step.tx_count);
    check_step_finality(checker, &step.header, tx_count, record).map_err(|e| {
        GameDivergence::at(
            i,
            &name,
            "finality.certificate",
            format!("block {height} finalized by a quorum of the genesis validators"),
            format!("step {i} (block {height}): {e}"),
        )
    })
}
