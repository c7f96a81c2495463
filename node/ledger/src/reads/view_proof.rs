//! `GET /v1/games/<module>/proof?<query>`: a module's view answered with every state entry it
//! read, each proven against the head block's state root ([`ViewProof`], whose docs give the
//! JSON and what a client checks). The view runs once, over the head state through a
//! [`RecordingState`] that notes each key it reads; the node then proves each of them, and
//! the module's record, from the same head.
//!
//! What cannot be proven is refused with `409 no_proofs` ([`ChainError::NoProofs`]): a chain
//! whose state commitment has no proofs, a view that scans a range (a sparse Merkle tree keyed
//! by hashes proves keys, not ranges), a view that calls another module (`call_pure`,
//! `call_code`, `module_code_hash`: their code is not in the proof), and one that read more than
//! [`MAX_VIEW_PROOF_READS`] keys or [`MAX_VIEW_PROOF_BYTES`] bytes of keys and values.

use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::sync::Arc;

use base64::Engine;
use gamechain_chain::state_root::StateCommitment;
use gamechain_chain::wire::view::{
    ProvenRead, ViewProof, MAX_VIEW_PROOF_BYTES, MAX_VIEW_PROOF_READS,
};
use gamechain_runtime::layout::module_record_key;
use gamechain_runtime::{run_view_with, HostError, ModuleResolver, State, WasmModule};
use gamechain_sdk::{Query, StateRead};

use crate::chain::Chain;
use crate::error::ChainError;

/// A state that answers from `inner` and notes every key read and the first prefix scanned,
/// within bounds: past [`MAX_VIEW_PROOF_READS`] keys or [`MAX_VIEW_PROOF_BYTES`] of them it
/// notes only that it overflowed (a view reading more cannot be proven anyway).
pub struct RecordingState<'a> {
    inner: &'a dyn State,
    /// Each key read (`get`), once.
    pub reads: RefCell<BTreeSet<String>>,
    /// The first prefix scanned, if any.
    pub scanned: RefCell<Option<String>>,
    /// Bytes of the keys noted.
    key_bytes: Cell<usize>,
    /// Whether a read was past the bounds.
    pub overflowed: Cell<bool>,
}

impl<'a> RecordingState<'a> {
    /// Records the reads of `inner`.
    pub fn new(inner: &'a dyn State) -> Self {
        RecordingState {
            inner,
            reads: RefCell::new(BTreeSet::new()),
            scanned: RefCell::new(None),
            key_bytes: Cell::new(0),
            overflowed: Cell::new(false),
        }
    }
}

impl State for RecordingState<'_> {
    fn get(&self, key: &str) -> Option<Vec<u8>> {
        let mut reads = self.reads.borrow_mut();
        if !self.overflowed.get() && !reads.contains(key) {
            let bytes = self.key_bytes.get() + key.len();
            if reads.len() >= MAX_VIEW_PROOF_READS || bytes > MAX_VIEW_PROOF_BYTES {
                self.overflowed.set(true);
            } else {
                self.key_bytes.set(bytes);
                reads.insert(key.to_string());
            }
        }
        self.inner.get(key)
    }

    fn scan(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> Vec<(String, Vec<u8>)> {
        self.scanned
            .borrow_mut()
            .get_or_insert_with(|| prefix.to_string());
        self.inner.scan(prefix, start_after, limit)
    }
}

/// The node's module resolver, noting whether the view used it (a call to another module).
struct NotingResolver<'a> {
    inner: &'a dyn ModuleResolver,
    used: Cell<bool>,
}

impl ModuleResolver for NotingResolver<'_> {
    fn resolve(
        &self,
        state: &dyn StateRead,
        id: &str,
    ) -> Result<Option<Arc<WasmModule>>, HostError> {
        self.used.set(true);
        self.inner.resolve(state, id)
    }

    fn resolve_code(
        &self,
        state: &dyn StateRead,
        code_hash: &[u8; 32],
    ) -> Result<Option<(Arc<WasmModule>, usize)>, HostError> {
        self.used.set(true);
        self.inner.resolve_code(state, code_hash)
    }
}

impl Chain {
    /// `GET /v1/games/<module>/proof?<query>`: the view of `query` at the head block with every
    /// entry it read proven against that block's state root (module docs). Errors: `not_found`
    /// for an unknown module; `no_proofs` for what cannot be proven (module docs); `internal`
    /// when the node failed. `finality` is left to the caller (the server, which holds the
    /// validators' records). The view's own error is not an error here: it is the answer's
    /// `error`, proven like a value.
    pub fn view_proof(&self, module_id: &str, query: &Query) -> Result<ViewProof, ChainError> {
        let head = self.head();
        if head.state_hash.kind() != StateCommitment::SparseMerkle {
            return Err(ChainError::NoProofs(format!(
                "this chain's state commitment ({}) has no proofs",
                head.state_hash.kind().name()
            )));
        }
        let entry = self
            .ctx
            .module(&head.state, module_id)
            .map_err(|e| {
                tracing::error!(module_id, "cannot load the module: {e}");
                ChainError::Internal(format!("the module could not be loaded: {e}"))
            })?
            .ok_or_else(|| ChainError::NotFound(format!("no module {module_id}")))?;
        let recorder = RecordingState::new(&head.state);
        let resolver = NotingResolver {
            inner: &*self.ctx,
            used: Cell::new(false),
        };
        let answer = match run_view_with(&entry.module, &recorder, query, Some(&resolver)) {
            Ok((answer, _fuel)) => answer,
            Err(e) => {
                tracing::error!(module = module_id, "view failed in the node: {e}");
                return Err(ChainError::Internal(format!("the view could not run: {e}")));
            }
        };
        if let Some(prefix) = recorder.scanned.borrow().as_ref() {
            return Err(ChainError::NoProofs(format!(
                "the view scans keys under `{}`: a state proof shows keys, not that a range is \
                 complete, so a scanning view cannot be proven",
                prefix.chars().take(128).collect::<String>()
            )));
        }
        if resolver.used.get() {
            return Err(ChainError::NoProofs(
                "the view calls another module (call_pure or call_code), whose code and reads \
                 the proof does not carry"
                    .to_string(),
            ));
        }
        let overflowed = recorder.overflowed.get();
        let mut keys = recorder.reads.into_inner();
        keys.insert(module_record_key(module_id));
        if overflowed || keys.len() > MAX_VIEW_PROOF_READS {
            return Err(ChainError::NoProofs(format!(
                "the view read more than {MAX_VIEW_PROOF_READS} keys or {MAX_VIEW_PROOF_BYTES} \
                 bytes of keys: more than a proof carries"
            )));
        }
        let mut bytes = 0usize;
        let mut reads = Vec::with_capacity(keys.len());
        for key in keys {
            let value = head.state.get(&key);
            bytes += key.len() + value.as_ref().map_or(0, Vec::len);
            if bytes > MAX_VIEW_PROOF_BYTES {
                return Err(ChainError::NoProofs(format!(
                    "the view read over {MAX_VIEW_PROOF_BYTES} bytes of keys and values: more \
                     than a proof carries"
                )));
            }
            let proof = head.state_hash.prove(&key).ok_or_else(|| {
                ChainError::Internal("the state commitment gave no proof".to_string())
            })?;
            reads.push(ProvenRead {
                value: value.map(|v| base64::engine::general_purpose::STANDARD.encode(v)),
                key,
                proof,
            });
        }
        let (value, error) = match answer {
            Ok(v) => (Some(v), None),
            Err(e) => (None, Some(e.to_string())),
        };
        Ok(ViewProof {
            module: module_id.to_string(),
            query: query.clone(),
            header: head.header.header.clone(),
            signature: head.header.signature.clone(),
            commitment: head.state_hash.kind(),
            value,
            error,
            code_hash: entry.module.code_hash().to_string(),
            reads,
            finality: None,
        })
    }
}
