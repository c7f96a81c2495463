//! A view read from a node, checked against the genesis alone and re-executed
//! (`gamechain view --prove`, [`verify_view`]): the answer's data ([`ViewProof::check`]: each
//! read proven against the block's state root, the module's record naming the code), the
//! block's signer and, on a chain with validators, its finality by a quorum of the genesis set,
//! the code's hash, and then the view run again over exactly the proven reads. A read outside
//! them, or a scan, fails the check: the answer then does not prove what the view saw.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::sync::Arc;

use gamechain_chain::wire::view::{ProvenReads, ViewProof};
use gamechain_runtime::chain::Genesis;
use gamechain_runtime::{
    run_view_with, runtime_config, Allocation, HostError, ModuleResolver, Origin, Runtime, State,
    WasmModule,
};
use gamechain_sdk::{Query, StateRead};
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

/// A resolver that finds no module and notes that it was asked.
struct NoModules(Cell<bool>);

impl ModuleResolver for NoModules {
    fn resolve(&self, _: &dyn StateRead, _: &str) -> Result<Option<Arc<WasmModule>>, HostError> {
        self.0.set(true);
        Ok(None)
    }

    fn resolve_code(
        &self,
        _: &dyn StateRead,
        _: &[u8; 32],
    ) -> Result<Option<(Arc<WasmModule>, usize)>, HostError> {
        self.0.set(true);
        Ok(None)
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
    let resolver = NoModules(Cell::new(false));
    let (answer, _fuel) = run_view_with(&loaded, &state, query, Some(&resolver))
        .map_err(|e| format!("the view could not run: {e}"))?;
    if resolver.0.get() {
        // The node refuses such a view; a re-execution without the other modules would answer
        // something the chain does not (a pure call found nowhere).
        return Err(
            "the view calls another module (call_pure, call_code or module_code_hash): a proof does not carry it"
                .to_string(),
        );
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use gamechain_chain::state_root::{SparseMerkleTree, StateCommitment};
    use gamechain_chain::wire::view::ProvenRead;
    use gamechain_runtime::chain::{Header, SignedHeader};
    use gamechain_sdk::Checkpoint;

    /// A view answering `{"found":1}` when `module_code_hash("tictactoe")` finds it, else
    /// `{"found":0}`: what it answers depends on a module the proof does not carry.
    const ASKS_ANOTHER_MODULE: &str = r#"(module
      (import "gamechain_v1" "module_code_hash" (func $hash (param i32 i32 i32) (result i32)))
      (import "gamechain_v1" "output" (func $out (param i32 i32)))
      (memory (export "memory") 1)
      (data (i32.const 0) "tictactoe")
      (data (i32.const 64) "{\"found\":1}")
      (data (i32.const 96) "{\"found\":0}")
      (func (export "gc_abi_version") (result i32) (i32.const 1))
      (func (export "gc_alloc") (param i32) (result i32) (i32.const 1024))
      (func (export "gc_apply") (param i32 i32 i32 i32) (result i32) (i32.const 1))
      (func (export "gc_view") (param i32 i32) (result i32)
        (if (i32.eqz (call $hash (i32.const 0) (i32.const 9) (i32.const 200)))
          (then (call $out (i32.const 64) (i32.const 11)))
          (else (call $out (i32.const 96) (i32.const 11))))
        (i32.const 0)))"#;

    #[test]
    fn a_view_that_asks_for_another_module_is_not_proven() {
        let wasm = wat::parse_str(ASKS_ANOTHER_MODULE).unwrap();
        let code_hash = hex::encode(Sha256::digest(&wasm));
        let record = format!(
            r#"{{"abi_version":1,"code_hash":"{code_hash}","deployed_height":1,"owner":"x"}}"#
        );
        let tree = SparseMerkleTree::from_entries([("module/asker", record.as_str())]);
        let dir = tempfile::tempdir().unwrap();
        let config = crate::config::NodeConfig {
            data_dir: dir.path().to_path_buf(),
            genesis_modules: vec![],
            ..crate::config::NodeConfig::default()
        };
        let key = gamechain_runtime::chain::SecretKey::generate(config.network);
        let genesis = gamechain_ledger::genesis_setup::new_genesis(&config.ledger(), &key).unwrap();
        let header = Header {
            height: 3,
            prev_hash: [0; 32],
            time_ms: 0,
            sequencer: genesis.sequencer.clone(),
            checkpoint: Checkpoint::default(),
            tx_root: [0; 32],
            receipt_root: [0; 32],
            state_root: tree.root(),
            beacon: None,
        };
        let signed = SignedHeader::sign(header, &key);
        use base64::Engine;
        let proof = ViewProof {
            module: "asker".into(),
            query: Query::new(),
            header: signed.header,
            signature: signed.signature,
            commitment: StateCommitment::SparseMerkle,
            // What a re-execution without the other module gives: a lie on a chain that has it.
            value: Some(serde_json::json!({"found": 0})),
            error: None,
            code_hash,
            reads: vec![ProvenRead {
                key: "module/asker".into(),
                value: Some(base64::engine::general_purpose::STANDARD.encode(&record)),
                proof: tree.prove("module/asker"),
            }],
            finality: None,
        };
        let e = verify_view(&genesis, "asker", &Query::new(), &proof, &wasm).unwrap_err();
        assert!(e.starts_with("the view calls another module"), "{e}");
    }
}
