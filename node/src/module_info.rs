//! What a node tells about the modules it runs, from its committed state: `GET /v1/modules`,
//! `GET /v1/modules/<id>` (the `module/<id>` records) and `GET /v1/code/<code_hash>` (the
//! `code/<hash>` wasm bytes), so anyone can check which code runs under an id and hash it
//! themselves.

use axum::http::StatusCode;
use gamechain_runtime::chain::genesis::check_module_id;
use gamechain_runtime::registry::read_record;
use gamechain_runtime::transition::ModuleRecord;
use gamechain_runtime::{code_key, Modules, State};
use serde_json::{json, Value};

use crate::api_error::ApiError;
use crate::chain::Chain;

/// A record as the API shows it: its fields plus `id`.
fn record_json(id: &str, record: &ModuleRecord) -> Value {
    let mut value = serde_json::to_value(record).expect("a ModuleRecord serialises");
    value
        .as_object_mut()
        .expect("a record is an object")
        .insert("id".into(), json!(id));
    value
}

fn corrupt(e: impl std::fmt::Display) -> ApiError {
    tracing::error!("the committed state holds a malformed module record: {e}");
    ApiError::internal("the node's state is corrupt; see its log")
}

impl Chain {
    /// `GET /v1/modules`: `{"modules": [{"abi_version", "code_hash", "deployed_height", "id",
    /// "owner", "upgraded_height"?}, …]}` in ascending id order, genesis and deployed modules.
    pub fn modules(&self) -> Result<Value, ApiError> {
        let records = Modules::records(&self.head().state).map_err(corrupt)?;
        let list: Vec<Value> = records
            .iter()
            .map(|(id, record)| record_json(id, record))
            .collect();
        Ok(json!({ "modules": list }))
    }

    /// `GET /v1/modules/<id>`: the record plus `id`; `not_found` when there is none.
    pub fn module_record(&self, id: &str) -> Result<Value, ApiError> {
        let missing = || ApiError::not_found(format!("no module {id}"));
        if check_module_id(id).is_err() {
            return Err(missing());
        }
        read_record(&self.head().state, id)
            .map_err(corrupt)?
            .map(|record| record_json(id, &record))
            .ok_or_else(missing)
    }

    /// `GET /v1/code/<code_hash>`: the wasm bytes stored under `code/<code_hash>`. Errors:
    /// `invalid` (400) when `code_hash` is not 64 hex characters (either case), `not_found`
    /// when no such code is stored.
    pub fn code(&self, code_hash: &str) -> Result<Vec<u8>, ApiError> {
        if code_hash.len() != 64 || !code_hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid",
                format!("`{code_hash}` is not a code hash (64 hex characters)"),
            ));
        }
        let hash = code_hash.to_ascii_lowercase();
        self.head()
            .state
            .get(&code_key(&hash))
            .ok_or_else(|| ApiError::not_found(format!("no code with hash {hash}")))
    }
}
