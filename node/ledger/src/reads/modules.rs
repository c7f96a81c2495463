//! What a node tells about the modules it runs, from its committed state: `GET /v1/modules`
//! (`?pending=1`: those with a pending upgrade), `GET /v1/modules/<id>` (the `module/<id>`
//! records, with each module's upgrade policy and pending upgrade) and `GET /v1/code/<code_hash>` (the
//! `code/<hash>` wasm bytes), so anyone can check which code runs under an id and hash it
//! themselves; `GET /v1/modules/<id>/schema` (the `gamechain.schema` section of the code the
//! module runs, `docs/modules.md`, "Schema").

use gamechain_chain::genesis::check_module_id;
use gamechain_chain::wire::{ModuleInfo, ModuleList};
use gamechain_runtime::registry::read_record;
use gamechain_runtime::{code_key, ModuleRecord, Modules, State};

use crate::chain::Chain;
use crate::error::ChainError;

/// A record as the API shows it: its fields plus `id`.
fn module_info(id: &str, record: ModuleRecord) -> ModuleInfo {
    let policy = record.policy();
    ModuleInfo {
        id: id.to_string(),
        abi_version: record.abi_version,
        code_hash: record.code_hash,
        deployed_height: record.deployed_height,
        policy,
        owner: record.owner,
        pending_upgrade: record.pending_upgrade,
        upgraded_height: record.upgraded_height,
    }
}

fn corrupt(e: impl std::fmt::Display) -> ChainError {
    tracing::error!("the committed state holds a malformed module record: {e}");
    ChainError::Internal("the node's state is corrupt; see its log".into())
}

impl Chain {
    /// `GET /v1/modules`: every module record (genesis and deployed) in ascending id order;
    /// with `pending_only`, only those with a pending upgrade (`?pending=1`).
    pub fn modules(&self, pending_only: bool) -> Result<ModuleList, ChainError> {
        let records = Modules::records(&self.head().state).map_err(corrupt)?;
        let modules = records
            .into_iter()
            .filter(|(_, record)| !pending_only || record.pending_upgrade.is_some())
            .map(|(id, record)| module_info(&id, record))
            .collect();
        Ok(ModuleList { modules })
    }

    /// `GET /v1/modules/<id>`: the record plus `id`; `not_found` when there is none.
    pub fn module_record(&self, id: &str) -> Result<ModuleInfo, ChainError> {
        let missing = || ChainError::NotFound(format!("no module {id}"));
        if check_module_id(id).is_err() {
            return Err(missing());
        }
        read_record(&self.head().state, id)
            .map_err(corrupt)?
            .map(|record| module_info(id, record))
            .ok_or_else(missing)
    }

    /// `GET /v1/code/<code_hash>`: the wasm bytes stored under `code/<code_hash>`. Errors:
    /// `invalid` when `code_hash` is not 64 hex characters (either case), `not_found` when no
    /// such code is stored.
    pub fn code(&self, code_hash: &str) -> Result<Vec<u8>, ChainError> {
        if code_hash.len() != 64 || !code_hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(ChainError::Invalid(format!(
                "`{code_hash}` is not a code hash (64 hex characters)"
            )));
        }
        let hash = code_hash.to_ascii_lowercase();
        self.head()
            .state
            .get(&code_key(&hash))
            .ok_or_else(|| ChainError::NotFound(format!("no code with hash {hash}")))
    }

    /// `GET /v1/modules/<id>/schema`: the schema text (compact JSON, key order as declared) of
    /// the code module `id` runs now. Errors: `not_found` with `no module <id>`, or with
    /// `module <id> declares no schema` when its code has no `gamechain.schema` section.
    pub fn module_schema(&self, id: &str) -> Result<String, ChainError> {
        let record = self.module_record(id)?;
        let wasm = self.code(&record.code_hash)?;
        match gamechain_runtime::read_schema(&wasm) {
            Ok(Some(text)) => Ok(text),
            Ok(None) => Err(ChainError::NotFound(format!(
                "module {id} declares no schema"
            ))),
            // Validation (rule 9) refused such code at deploy; stored code that fails it is
            // the node's fault.
            Err(e) => Err(corrupt(format!("module {id}: {e}"))),
        }
    }
}
