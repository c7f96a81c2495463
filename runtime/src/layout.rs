//! The state key layout the transition writes besides module state ([`nonce_key`],
//! [`module_record_key`], [`GENESIS_HASH_KEY`]) and the module record stored under
//! `module/<id>` ([`ModuleRecord`]). The whole table is in `transition/mod.rs`.

use serde::{Deserialize, Serialize};

use crate::chain::genesis::SYSTEM_ACCOUNT;
use crate::chain::{PendingUpgrade, UpgradePolicy};

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
    /// Who deployed it: `system` for genesis modules, else an address. Under the `owner` and
    /// `timelocked` policies only the owner may upgrade it (and cancel or tighten); under
    /// `immutable` it has no rights left.
    pub owner: String,
    /// An announced upgrade not yet activated (timelocked modules only); absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_upgrade: Option<PendingUpgrade>,
    /// The upgrade policy; absent means `owner`, or `immutable` for a genesis module (owner
    /// `system`): the record every deploy wrote before policies existed, kept byte for byte so
    /// such chains hash the same. Read it with [`ModuleRecord::policy`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<UpgradePolicy>,
    /// The height of its last upgrade; absent (not `null`) when never upgraded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgraded_height: Option<u64>,
}

impl ModuleRecord {
    /// The stored bytes: compact JSON.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a ModuleRecord always serialises")
    }

    /// The module's upgrade policy: the recorded one, else `immutable` for a genesis module
    /// (owner `system`) and `owner` for any other.
    pub fn policy(&self) -> UpgradePolicy {
        match self.policy {
            Some(p) => p,
            None if self.owner == SYSTEM_ACCOUNT => UpgradePolicy::Immutable,
            None => UpgradePolicy::Owner,
        }
    }

    /// Records `policy`: stored as absent when it is what an absent policy reads as (so a
    /// record keeps the bytes it had before policies existed), else explicitly.
    pub fn set_policy(&mut self, policy: UpgradePolicy) {
        self.policy = None;
        if self.policy() != policy {
            self.policy = Some(policy);
        }
    }
}
