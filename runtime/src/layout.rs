//! The state key layout the transition writes besides module state ([`nonce_key`],
//! [`module_record_key`], [`GENESIS_HASH_KEY`]) and the module record stored under
//! `module/<id>` ([`ModuleRecord`]). The whole table is in `transition/mod.rs`.

use serde::{Deserialize, Serialize};

/// Prefix of the nonce keys: `nonce/<address>`.
pub const NONCE_PREFIX: &str = "nonce/";
/// Prefix of the module records: `module/<id>`.
pub const MODULE_RECORD_PREFIX: &str = "module/";
/// The key holding the genesis hash (lowercase hex).
pub const GENESIS_HASH_KEY: &str = "chain/genesis";
/// `nonce/<address>`.
pub fn nonce_key(address: &str) -> String {
    format!("{NONCE_PREFIX}{address}")
}

/// `module/<id>`.
pub fn module_record_key(id: &str) -> String {
    format!("{MODULE_RECORD_PREFIX}{id}")
}

/// A deployed module's record at `module/<id>`. JSON with the fields in this (sorted) order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModuleRecord {
    /// The guest ABI version it was deployed for (1).
    pub abi_version: u32,
    /// Lowercase hex SHA-256 of its wasm bytes.
    pub code_hash: String,
    /// The height it was deployed at (0 for genesis modules).
    pub deployed_height: u64,
    /// Who deployed it: `system` for genesis modules, else an address. Only the owner may
    /// upgrade it; genesis modules cannot be upgraded.
    pub owner: String,
    /// The height of its last upgrade; absent (not `null`) when never upgraded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgraded_height: Option<u64>,
}

impl ModuleRecord {
    /// The stored bytes: compact JSON.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a ModuleRecord always serialises")
    }
}
