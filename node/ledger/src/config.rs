//! [`LedgerConfig`]: what the ledger is configured with: where its data directory is, what a
//! new chain's genesis holds, how blocks are made, how much the mempool and the state cache
//! hold, when the database is checked, and whether the node joins or restores from a peer.
//! The node's TOML file (`gamechain_node::NodeConfig`, which documents each field with its
//! default) makes one; [`LedgerConfig::default`] holds the same defaults. Also the two policies
//! the file names ([`IntegrityCheck`], [`DeployPolicy`]) and [`ConfigError`].

use std::fmt;
use std::path::PathBuf;

use gamechain_runtime::chain::address::check_address;
use gamechain_runtime::chain::params::{parameter, ChainParams};
use gamechain_runtime::chain::{BlockClock, FeeSchedule, Network, StateCommitment};
use gamechain_runtime::{Allocation, RuntimeConfig};
use gamechain_sdk::Amount;
use serde::{Deserialize, Serialize};

/// The database's file name inside the data directory; SQLite keeps its write-ahead log beside
/// it as `chain.sqlite-wal` (and its index as `chain.sqlite-shm`).
pub const DB_FILE: &str = "chain.sqlite";

/// The ledger's settings. The chain-defining ones (`chain_id`, `network`, `faucet`, `fees`,
/// `fuel_apply`, `fuel_end_block`, `memory_limit_bytes`, `min_block_interval_ms`,
/// `max_clock_drift_ms`, `genesis_modules`) are used once, to write `genesis.json` on the first
/// start; afterwards the genesis file is authoritative (`start/genesis_setup.rs`). Units are in
/// the field names; the node's `NodeConfig` documents each.
#[derive(Debug, Clone, PartialEq)]
pub struct LedgerConfig {
    /// Holds `sequencer.wif`, `genesis.json`, `chain.sqlite` and the small state files.
    pub data_dir: PathBuf,
    /// The compiled-module cache's directory; `None`: `<data_dir>/compiled`
    /// ([`LedgerConfig::compiled_dir`]).
    pub compiled_dir: Option<PathBuf>,
    pub chain_id: String,
    pub network: Network,
    pub block_interval_ms: u64,
    pub min_block_interval_ms: u64,
    pub max_clock_drift_ms: u64,
    /// Ids of [`crate::genesis_modules::GENESIS_MODULES`] a new genesis lists.
    pub genesis_modules: Vec<String>,
    pub dev_clock: bool,
    pub block_coalesce_ms: u64,
    pub pipeline: bool,
    pub max_block_txs: usize,
    pub faucet: Option<Amount>,
    pub fees: Option<FeeSchedule>,
    /// The state root's construction a new genesis names (`StateCommitment`).
    pub state_commitment: StateCommitment,
    pub fuel_apply: u64,
    pub fuel_view: u64,
    pub fuel_end_block: u64,
    pub memory_limit_bytes: u64,
    pub wasm_instances: u32,
    pub max_pending: usize,
    pub max_pending_bytes: u64,
    pub compile_budget_ms: u64,
    pub log_summary_secs: u64,
    pub deploy: DeployPolicy,
    pub deploy_allow: Vec<String>,
    pub integrity_check: IntegrityCheck,
    pub state_cache_mb: u64,
    /// `gamechain node --restore-from <URL>`: fetch the blocks this database lost.
    pub restore_from: Option<String>,
    pub snapshot_every_blocks: u64,
    pub snapshot_keep: usize,
    pub retain_blocks: u64,
    /// `gamechain node --snapshot-from <URL>`: join from a peer's state snapshot.
    pub snapshot_from: Option<String>,
    /// Whether this node is a validator (the node's `[validator]` table is present).
    pub validator: bool,
}

impl Default for LedgerConfig {
    fn default() -> Self {
        let params = ChainParams::DEFAULT;
        Self {
            data_dir: PathBuf::from("./gamechain-data"),
            compiled_dir: None,
            chain_id: "gamechain-dev".to_string(),
            network: Network::Testnet,
            block_interval_ms: 60_000,
            min_block_interval_ms: params.clock.min_block_interval_ms,
            max_clock_drift_ms: params.clock.max_clock_drift_ms,
            genesis_modules: crate::genesis_modules::default_genesis_ids(),
            dev_clock: false,
            block_coalesce_ms: 5,
            pipeline: true,
            max_block_txs: 50_000,
            faucet: Some(Amount(100_000)),
            fees: None,
            state_commitment: StateCommitment::SparseMerkle,
            fuel_apply: params.fuel_apply,
            fuel_view: params.fuel_view,
            fuel_end_block: params.fuel_end_block,
            memory_limit_bytes: params.memory_limit_bytes,
            wasm_instances: 64,
            max_pending: 100_000,
            max_pending_bytes: 64 << 20,
            compile_budget_ms: 10_000,
            log_summary_secs: 10,
            deploy: DeployPolicy::Anyone,
            deploy_allow: Vec::new(),
            integrity_check: IntegrityCheck::Unclean,
            state_cache_mb: 64,
            restore_from: None,
            snapshot_every_blocks: 0,
            snapshot_keep: 2,
            retain_blocks: 0,
            snapshot_from: None,
            validator: false,
        }
    }
}

/// When the start runs `PRAGMA quick_check` (and rehashes the stored state).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IntegrityCheck {
    /// Only after a run that did not stop cleanly (`<data>/node.running` left behind).
    #[default]
    Unclean,
    /// At every start.
    Always,
    /// Never.
    Never,
}

/// Who may send `deploy` transactions to this node (admission policy, not consensus).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeployPolicy {
    /// Anybody.
    #[default]
    Anyone,
    /// Only the addresses of `deploy_allow`.
    Allowlist,
    /// Nobody.
    Nobody,
}

/// A configuration that cannot be used: the message names the field and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// Most `block_coalesce_ms`, ms.
pub const MAX_BLOCK_COALESCE_MS: u64 = 1_000;

impl LedgerConfig {
    /// Checks every field: each bound is named in the error with the field. Called by
    /// [`crate::genesis_setup::open_chain`] and by the node's configuration check. Errors: the
    /// first field out of range ([`ConfigError`]).
    pub fn validate(&self) -> Result<(), ConfigError> {
        let positive = [
            ("block_interval_ms", self.block_interval_ms),
            ("max_block_txs", self.max_block_txs as u64),
            ("max_pending", self.max_pending as u64),
            ("wasm_instances", u64::from(self.wasm_instances)),
            ("max_pending_bytes", self.max_pending_bytes),
            ("compile_budget_ms", self.compile_budget_ms),
        ];
        for (name, value) in positive {
            if value == 0 {
                return Err(ConfigError(format!("{name} must be more than 0")));
            }
        }
        let params = self.chain_params();
        for name in Self::CONFIGURED_PARAMETERS {
            let p = parameter(name).expect("a name of the parameter table");
            p.check((p.get)(&params)).map_err(ConfigError)?;
        }
        // A validator needs its oldest block (its consensus starts from block 0's digest, or
        // from the certificate of the snapshot base it joined from, at every start) and the
        // blocks its peers may ask for.
        if self.retain_blocks > 0 && self.validator {
            return Err(ConfigError(
                "retain_blocks cannot be set on a validator: a validator keeps every block \
                 (its consensus starts from its oldest block at every start); prune on followers"
                    .into(),
            ));
        }
        if self.dev_clock && self.validator {
            return Err(ConfigError(
                "dev_clock cannot be set on a validator: validators check each other's clocks"
                    .into(),
            ));
        }
        crate::genesis_modules::genesis_module_list(&self.genesis_modules).map_err(ConfigError)?;
        if self.block_coalesce_ms > MAX_BLOCK_COALESCE_MS {
            return Err(ConfigError(format!(
                "block_coalesce_ms must be at most {MAX_BLOCK_COALESCE_MS}"
            )));
        }
        if usize::try_from(self.memory_limit_bytes).is_err() {
            return Err(ConfigError(
                "memory_limit_bytes does not fit this machine's address size".into(),
            ));
        }
        if self.faucet == Some(Amount(0)) {
            return Err(ConfigError(
                "faucet must be more than 0, or \"none\"".into(),
            ));
        }
        if let Some(fees) = &self.fees {
            check_address(&fees.collector, self.network).map_err(|e| {
                ConfigError(format!(
                    "fees.collector: `{}` is not an address of the {} network: {e}",
                    fees.collector,
                    self.network.as_str()
                ))
            })?;
        }
        if self.deploy != DeployPolicy::Allowlist && !self.deploy_allow.is_empty() {
            return Err(ConfigError(
                "deploy_allow is set but deploy is not \"allowlist\": set deploy = \"allowlist\" to use it"
                    .into(),
            ));
        }
        for address in &self.deploy_allow {
            check_address(address, self.network).map_err(|e| {
                ConfigError(format!(
                    "deploy_allow: `{address}` is not an address of the {} network: {e}",
                    self.network.as_str()
                ))
            })?;
        }
        if self.snapshot_keep == 0 {
            return Err(ConfigError("snapshot_keep must be at least 1".into()));
        }
        Ok(())
    }

    /// Whether this node admits a `deploy` transaction from `sender` (see [`DeployPolicy`]).
    pub fn may_deploy(&self, sender: &str) -> bool {
        match self.deploy {
            DeployPolicy::Anyone => true,
            DeployPolicy::Allowlist => self.deploy_allow.iter().any(|a| a == sender),
            DeployPolicy::Nobody => false,
        }
    }

    /// `state_cache_mb` in bytes.
    pub fn state_cache_bytes(&self) -> usize {
        usize::try_from(self.state_cache_mb)
            .unwrap_or(usize::MAX)
            .saturating_mul(1 << 20)
    }

    /// The compiled-module cache's directory (`gamechain_runtime::ModuleCache`): `compiled_dir`
    /// when set (nodes of one machine may share one), else `<data_dir>/compiled/`.
    pub fn compiled_dir(&self) -> PathBuf {
        self.compiled_dir
            .clone()
            .unwrap_or_else(|| self.data_dir.join("compiled"))
    }

    /// The chain parameters this configuration sets, by their genesis names: the others
    /// (`max_block_deploys`, `max_block_code_bytes`) are [`ChainParams::DEFAULT`]'s.
    pub const CONFIGURED_PARAMETERS: [&'static str; 6] = [
        "fuel_apply",
        "fuel_view",
        "fuel_end_block",
        "memory_limit_bytes",
        "min_block_interval_ms",
        "max_clock_drift_ms",
    ];

    /// The parameters a new chain made with this configuration gets
    /// ([`Self::CONFIGURED_PARAMETERS`] from the fields of the same names, the rest
    /// [`ChainParams::DEFAULT`]'s). Bounds: [`Self::validate`] checks them against the table.
    pub fn chain_params(&self) -> ChainParams {
        ChainParams {
            fuel_apply: self.fuel_apply,
            fuel_view: self.fuel_view,
            fuel_end_block: self.fuel_end_block,
            memory_limit_bytes: self.memory_limit_bytes,
            clock: BlockClock {
                min_block_interval_ms: self.min_block_interval_ms,
                max_clock_drift_ms: self.max_clock_drift_ms,
            },
            ..ChainParams::DEFAULT
        }
    }

    /// The runtime configuration these limits give (pooling allocation of `wasm_instances`).
    pub fn runtime_config(&self) -> RuntimeConfig {
        RuntimeConfig {
            fuel_apply: self.fuel_apply,
            fuel_view: self.fuel_view,
            fuel_end_block: self.fuel_end_block,
            memory_limit_bytes: self.memory_limit_bytes as usize,
            allocation: Allocation::Pooling {
                instances: self.wasm_instances,
            },
            ..RuntimeConfig::default()
        }
    }

    /// `<data_dir>/sequencer.wif`.
    pub fn key_path(&self) -> PathBuf {
        self.data_dir.join("sequencer.wif")
    }

    /// `<data_dir>/beacon.key`: a single sequencer's beacon key (`start/beacon_key.rs`).
    pub fn beacon_key_path(&self) -> PathBuf {
        self.data_dir.join("beacon.key")
    }

    /// `<data_dir>/genesis.json`.
    pub fn genesis_path(&self) -> PathBuf {
        self.data_dir.join("genesis.json")
    }

    /// `<data_dir>/chain.sqlite` ([`DB_FILE`]).
    pub fn db_path(&self) -> PathBuf {
        self.data_dir.join(DB_FILE)
    }
}
