//! The node's other answers: [`Status`] (`GET /v1/status`), [`Account`]
//! (`GET /v1/account/<account>`), [`ModuleInfo`] (`GET /v1/modules[/<id>]`) and
//! [`ErrorAnswer`], the body of every error: `{"error": {"code", "message"}}`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use gamechain_sdk::Amount;

use crate::policy::{PendingUpgrade, UpgradePolicy};

/// `GET /v1/status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    /// The chain id transaction bodies must name.
    pub chain_id: String,
    /// `mainnet` or `testnet`.
    pub network: String,
    /// Height of the head block.
    pub height: u64,
    /// Hash of the head block, lowercase hex.
    pub head_hash: String,
    /// State root after the head block, lowercase hex.
    pub state_root: String,
    /// The sequencer's address.
    pub sequencer: String,
    /// Hash of the genesis file, lowercase hex.
    pub genesis_hash: String,
    /// Hash of the runtime's engine configuration, lowercase hex.
    pub engine_config_hash: String,
    /// Transactions in the mempool.
    pub pending: u64,
    /// Their bytes (bodies and signatures; bounded by `max_pending_bytes`).
    #[serde(default)]
    pub pending_bytes: u64,
    /// Open WebSocket subscriptions (bounded by `max_ws_subscribers`).
    #[serde(default)]
    pub ws_subscribers: u64,
    /// Open TCP connections of the API, this request's included (bounded by
    /// `max_connections`).
    #[serde(default)]
    pub connections: u64,
    /// The node's version.
    pub version: String,
}

/// `GET /v1/account/<account>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Account {
    /// The account asked for (an address or `module:<id>`).
    pub account: String,
    /// Base units per token symbol; tokens never received are absent.
    pub balances: BTreeMap<String, Amount>,
    /// The account's included transactions.
    pub nonce: u64,
    /// `nonce` plus the account's pending transactions: the nonce to sign next.
    pub next_nonce: u64,
}

impl Account {
    /// The balance of `token` in base units, zero when absent.
    pub fn balance(&self, token: &str) -> Amount {
        self.balances.get(token).copied().unwrap_or_default()
    }
}

/// A module of the chain: its `module/<id>` record (`GET /v1/modules/<id>`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleInfo {
    /// The module id.
    pub id: String,
    /// The guest ABI version (1).
    pub abi_version: u32,
    /// Lowercase hex SHA-256 of the wasm it runs (`GET /v1/code/<code_hash>` serves it).
    pub code_hash: String,
    /// The height it was first deployed at (0: genesis).
    pub deployed_height: u64,
    /// `system` for genesis modules, else the deployer's address: under the `owner` and
    /// `timelocked` policies the only one who may upgrade it; under `immutable`, nobody.
    pub owner: String,
    /// Who may change its code, and how fast: `{"kind": "immutable"}`, `{"kind": "timelocked",
    /// "delay_ms": N}` or `{"kind": "owner"}` (`policy.rs`). Genesis modules are immutable.
    pub policy: UpgradePolicy,
    /// The announced upgrade that is not in effect yet, or `null`: `{"code_hash",
    /// "announced_at_ms", "activates_at_ms"}`. Anyone may activate it once block time reaches
    /// `activates_at_ms`; until then the module runs `code_hash` above, and a player who does
    /// not want the new code can leave.
    pub pending_upgrade: Option<PendingUpgrade>,
    /// The height of its last upgrade, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgraded_height: Option<u64>,
}

/// `GET /v1/modules`: `{"modules": [ModuleInfo, …]}` in ascending id order (with `?pending=1`,
/// only those with a pending upgrade).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleList {
    /// The modules.
    pub modules: Vec<ModuleInfo>,
}

/// The body of every error answer: `{"error": {"code": "not_found", "message": "…"}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorAnswer {
    /// The error.
    pub error: ErrorBody,
}

/// A machine-readable code (`node/API.md`, "Errors") and a human-readable message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// The code, e.g. `bad_nonce`.
    pub code: String,
    /// The message.
    pub message: String,
}
