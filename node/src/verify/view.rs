//! A view read from a node, checked against the genesis alone and re-executed
//! (`gamechain view --prove`, [`verify_view`]): the answer's data ([`ViewProof::check`]: each
//! read proven against the block's state root, the module's record naming the code), the
//! block's signer and, on a chain with validators, its finality by a quorum of the genesis set,
//! the code's hash, and then the view run again over exactly the proven reads. A read outside
//! them, or a scan, fails the check: the answer then does not prove what the view saw.

use std::cell::RefCell;
use std::collections::BTreeMap;

use gamechain_chain::wire::view::{ProvenReads, ViewProof};
use gamechain_runtime::chain::Genesis;
use gamechain_runtime::{run_view, runtime_config, Allocation, Origin, Runtime, State, WasmModule};
use gamechain_sdk::Query;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::proof::finality::FinalityChecker;
use crate::proof::step_finality::check_step_finality;

/// What a verified view answered, and what proved it.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifiedView {
    /// The view's value, or its error's display text.
    pub answer: Result<Value, String>,
    /// The block whose state it read.
    pub height: u64,
    /// That block's hash (lowercase hex).
    pub block_hash: String,
    /// How many state entries were proven (the module's record included).
    pub reads: usize,
    /// On a chain with validators: the height whose certificate finalized the block.
    pub final_at: Option<u64>,
}

/// The proven reads as a state: any other key read, and any scan, is noted.
struct ProvenState<'a> {
    reads: &'a BTreeMap<String, Option<Vec<u8>>>,
    unproven: RefCell<Option<String>>,
    scanned: RefCell<Option<String>>,
}

impl State for ProvenState<'_> {
    fn get(&self, key: &str) -> Option<Vec<u8>> {
        match self.reads.get(key) {
            Some(value) => value.clone(),
            None => {
                self.unproven
                    .borrow_mut()
                    .get_or_insert_with(|| key.to_string());
                None
            }
        }
    }

    fn scan(&self, prefix: &str, _: Option<&str>, _: usize) -> Vec<(String, Vec<u8>)> {
        self.scanned
            .borrow_mut()
            .get_or_insert_with(|| prefix.to_string());
        Vec::new()
    }
}

/// Checks `proof`, the answer to `module`'s view of `query`, against `genesis` alone and
/// re-executes it with `wasm` (the module's code; the client's [`view_proof`] fetches both).
/// Errors (one line naming what does not check): the answer's data, the block's signer, its
/// finality (chains with validators: absent or not a quorum's), the code (another hash, or it
/// does not load), a read the answer does not prove, a scan, or another answer.
///
/// [`view_proof`]: gamechain_client::Client::view_proof
pub fn verify_view(
    genesis: &Genesis,
    module: &str,
    query: &Query,
    proof: &ViewProof,
    wasm: &[u8],
) -> Result<VerifiedView, String> {
    let reads: ProvenReads = proof.check(module, query)?;
    let header = proof.signed_header();
    let height = header.header.height;
    genesis
        .check_block_signer(&header)
        .map_err(|e| format!("block {height}: {e}"))?;
    let final_at = match &genesis.validators {
        None => None,
        Some(_) => {
            let checker = FinalityChecker::new(genesis, &hex::encode(genesis.hash()))?;
            let record = proof.finality.as_ref().ok_or_else(|| {
                format!("block {height} carries no finality record: it is not proven final")
            })?;
            Some(
                check_step_finality(&checker, &header, None, record)
                    .map_err(|e| format!("block {height} is not proven final: {e}"))?,
            )
        }
    };
    let code_hash = hex::encode(Sha256::digest(wasm));
    if code_hash != reads.code_hash {
        return Err(format!(
            "the code's hash is {code_hash}: the module's record names {}",
            reads.code_hash
        ));
    }
    let runtime = Runtime::new(runtime_config(genesis, Allocation::OnDemand))
        .map_err(|e| format!("no runtime: {e}"))?;
    let origin = if genesis
        .modules
        .iter()
        .any(|m| m.id == module && m.code_hash == code_hash)
    {
        Origin::Genesis
    } else {
        Origin::Upload
    };
    let loaded = WasmModule::load(&runtime, module, wasm, None, origin)
        .map_err(|e| format!("the code does not load: {e}"))?;
    let state = ProvenState {
        reads: &reads.reads,
        unproven: RefCell::new(None),
        scanned: RefCell::new(None),
    };
    let (answer, _fuel) =
        run_view(&loaded, &state, query).map_err(|e| format!("the view could not run: {e}"))?;
    if let Some(key) = state.unproven.into_inner() {
        return Err(format!(
            "the answer does not prove `{key}`, which the view reads"
        ));
    }
    if let Some(prefix) = state.scanned.into_inner() {
        return Err(format!(
            "the view scans keys under `{prefix}`: a scan cannot be proven"
        ));
    }
    let answer = answer.map_err(|e| e.to_string());
    let claimed = proof.answer().cloned().map_err(str::to_string);
    if answer != claimed {
        let show = |a: &Result<Value, String>| match a {
            Ok(v) => v.to_string().chars().take(200).collect::<String>(),
            Err(e) => format!("error `{}`", e.chars().take(200).collect::<String>()),
        };
        return Err(format!(
            "the view re-executed over the proven reads answers {}; the node answered {}",
            show(&answer),
            show(&claimed)
        ));
    }
    Ok(VerifiedView {
        answer,
        height,
        block_hash: header.header.hash_hex(),
        reads: reads.reads.len(),
        final_at,
    })
}
