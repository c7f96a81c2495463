//! The genesis file: [`Genesis`] (chain id, network, sequencer, modules by code hash, initial
//! balances, fuel and memory limits), its validation, its hash, and [`genesis_writes`], the
//! state entries genesis creates (the GOLD token record and the initial balances).
//!
//! The file is JSON, read by nodes and by replay verifiers alike, e.g.:
//!
//! ```json
//! {
//!   "chain_id": "gamechain-testnet-1",
//!   "network": "testnet",
//!   "sequencer": "xxURsC5wFbNzCrKzzQjeTqkLfEoZT6Y8F7",
//!   "time_ms": 1790000000000,
//!   "faucet": "100000",
//!   "modules": [{"id": "tictactoe", "code_hash": "<64 hex: sha256 of the .wasm>"}],
//!   "balances": [{"account": "xysuzCS9FmeSvPjxZHcZXkK8cwj9iEQBki", "token": "GOLD", "amount": "500000"}],
//!   "fuel_apply": 10000000, "fuel_view": 50000000, "fuel_end_block": 50000000,
//!   "memory_limit_bytes": 16777216,
//!   "engine_config_hash": "<64 hex>"
//! }
//! ```
//!
//! `faucet` is the amount (base units) one faucet call pays, or absent/`null` for a chain
//! without a faucet. The hash ([`Genesis::hash`]) is SHA-256 of the borsh encoding, fields in
//! declaration order: `chain_id` String ‖ `network` u8 (its address version byte, 30 or 139) ‖
//! `sequencer` String ‖ `time_ms` u64 ‖ `faucet` `Option<u128>` ‖ `modules` (u32 count, each `id`
//! String ‖ `code_hash` String) ‖ `balances` (u32 count, each `account` String ‖ `token` String
//! ‖ `amount` u128) ‖ `fuel_apply` ‖ `fuel_view` ‖ `fuel_end_block` ‖ `memory_limit_bytes` (u64
//! each) ‖ `engine_config_hash` String, then, only on a chain with fees, the fee schedule
//! ([`FeeSchedule`]'s encoding: `collector` String ‖ four u128 prices); a chain without fees
//! (`"fees"` absent) appends nothing. Strings are u32 LE length ‖ UTF-8; integers LE.
//!
//! `validators` (optional): the validator set of a chain run by several validators under BFT
//! consensus, appended to the hashed encoding after the fees when present (`validators.rs`).
//!
//! `min_block_interval_ms`, `max_clock_drift_ms` (optional): the block-time rules
//! (`clock.rs`), appended to the hashed encoding after the validators when either is present.
//!
//! `max_block_deploys`, `max_block_code_bytes` (optional): the caps on deploys per block
//! (`block_caps.rs`), appended to the hashed encoding after the clock section when either is
//! present.
//!
//! `beacon` (optional): the randomness beacon's public key (`beacon.rs`), appended to the hashed
//! encoding after the block-caps section when present.
//!
//! `state_commitment` (optional): `"lthash16"` (the same as absent) or `"sparse_merkle"`, the
//! construction of the state root (`state_root/`); when present, appended last as the String
//! `"state_commitment"` ‖ the String of its name.
//!
//! `fees` (optional): `{"collector": "<address>", "tx_micro": "…", "fuel_micro": "…",
//! "write_byte_micro": "…", "event_byte_micro": "…"}`, prices in millionths of a base unit
//! (`fees.rs`).
//!
//! The sections' own rules are the files of this folder: [`validators`], [`clock`],
//! [`block_caps`], [`beacon`] and [`fees`]. The numeric parameters (fuel, memory, block spacing, drift,
//! deploy caps) are read through one type, [`ChainParams`] ([`Genesis::params`]), whose table
//! ([`params::PARAMETERS`]) holds their bounds and the values new chains get.

pub mod beacon;
pub mod block_caps;
pub mod clock;
pub mod fees;
pub mod params;
pub mod validators;

use core::fmt;
use std::collections::BTreeSet;
use std::io;

use borsh::BorshSerialize;
use serde::{Deserialize, Serialize};

use gamechain_sdk::keys::GOLD;
use gamechain_sdk::{ledger, Amount, MockKv};

use crate::block::{BlockError, SignedHeader};
use crate::genesis::beacon::BeaconConfig;
use crate::genesis::block_caps::BlockCaps;
use crate::genesis::clock::{BlockClock, DEFAULT_MAX_CLOCK_DRIFT_MS};
use crate::genesis::fees::FeeSchedule;
use crate::genesis::params::{ChainParams, PARAMETERS};
use crate::genesis::validators::ValidatorSet;
use crate::hash::{parse_hex32, sha256};
use crate::keys::address::{check_address, Network};
use crate::keys::beacon::Beacon;
use crate::module_id::module_id_error;
pub use crate::module_id::{MAX_MODULE_ID_LEN, RESERVED_MODULE_IDS};
use crate::state_root::StateCommitment;

/// The issuer of GOLD: an account name nobody can sign as.
pub const SYSTEM_ACCOUNT: &str = "system";
/// GOLD's display name.
pub const GOLD_NAME: &str = "Gold";
/// GOLD's decimals: `"100"` base units are 1.00 GOLD.
pub const GOLD_DECIMALS: u8 = 2;
/// Longest chain id, bytes.
pub const MAX_CHAIN_ID_LEN: usize = 64;

/// A module deployed at genesis: its id and the SHA-256 of its `.wasm` bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenesisModule {
    /// The id used in `{"type": "game", "game": "<id>"}` and in `m/<id>/` keys: 1–32 of
    /// `a-z0-9_`, starting with a letter.
    pub id: String,
    /// Lowercase hex SHA-256 of the module's wasm bytes (64 characters).
    pub code_hash: String,
}

/// An initial balance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenesisBalance {
    /// An address of the chain's network, or a `module:<id>` account.
    pub account: String,
    /// The token symbol; only `GOLD` exists at genesis.
    pub token: String,
    /// Base units, a decimal string, more than zero.
    pub amount: Amount,
}

/// The genesis file (see the module docs for its JSON and its hashed encoding).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Genesis {
    /// The chain id every transaction body names: 1–64 of `A-Za-z0-9._-`.
    pub chain_id: String,
    /// The Divi network of the chain's addresses.
    pub network: Network,
    /// The sequencer's address (of `network`): the only key that signs blocks.
    pub sequencer: String,
    /// Genesis block time, ms since the Unix epoch.
    pub time_ms: u64,
    /// Base units one faucet call pays (dev chains: `"100000"` = 1000 GOLD); `None` = no faucet.
    #[serde(default)]
    pub faucet: Option<Amount>,
    /// Modules deployed at genesis, by code hash; ids unique.
    pub modules: Vec<GenesisModule>,
    /// Initial balances; each (account, token) at most once.
    pub balances: Vec<GenesisBalance>,
    /// Fuel limit of one `apply` call.
    pub fuel_apply: u64,
    /// Fuel limit of one `view` call.
    pub fuel_view: u64,
    /// Fuel limit of one module's `end_block` call.
    pub fuel_end_block: u64,
    /// Linear memory limit of one guest instance, bytes.
    pub memory_limit_bytes: u64,
    /// Lowercase hex SHA-256 (64 characters) of the runtime's engine configuration, so a
    /// verifier knows it runs the modules under the same consensus-relevant settings.
    pub engine_config_hash: String,
    /// The fee schedule ([`FeeSchedule`]); `None` (absent from the JSON) = no fees, the dev
    /// default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fees: Option<FeeSchedule>,
    /// The validator set of a chain run by several validators under BFT consensus
    /// ([`ValidatorSet`]); `None` (absent from the JSON) = one sequencer, the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validators: Option<ValidatorSet>,
    /// Least block time between a block and its parent, ms ([`BlockClock`], `clock.rs`): `N`
    /// blocks span at least `N` intervals. `None` (absent from the JSON) only on chains made
    /// before the rule existed, which read it as 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_block_interval_ms: Option<u64>,
    /// How far from a validator's clock a proposal's time may be for its vote, ms, either way
    /// ([`BlockClock`]); `None` = [`crate::genesis::clock::DEFAULT_MAX_CLOCK_DRIFT_MS`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_clock_drift_ms: Option<u64>,
    /// Most `deploy` transactions in one block ([`BlockCaps`], `block_caps.rs`); `None` (absent
    /// from the JSON) = no cap, only on chains made before the rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_block_deploys: Option<u64>,
    /// Most bytes of deploy code in one block ([`BlockCaps`]); `None` = no cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_block_code_bytes: Option<u64>,
    /// The randomness beacon's key ([`BeaconConfig`], `beacon.rs`): every block after 0 carries
    /// a beacon it checks. `None` (absent from the JSON) only on chains made before beacons,
    /// which carry none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beacon: Option<BeaconConfig>,
    /// The state root's construction ([`StateCommitment`], `state_root/`): `"sparse_merkle"`
    /// on chains whose state can be proven key by key. `None` (absent from the JSON) =
    /// `"lthash16"`, the chains made before proofs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_commitment: Option<StateCommitment>,
}

/// Why a genesis file cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GenesisError {
    /// Not JSON of the genesis shape (serde_json's message).
    Json(String),
    /// A field has an invalid value (the message names it).
    Invalid(String),
}

impl fmt::Display for GenesisError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GenesisError::Json(m) => {
                write!(f, "genesis is not valid JSON of the genesis shape: {m}")
            }
            GenesisError::Invalid(m) => write!(f, "invalid genesis: {m}"),
        }
    }
}

impl std::error::Error for GenesisError {}

fn invalid(msg: impl Into<String>) -> GenesisError {
    GenesisError::Invalid(msg.into())
}

/// `Ok` when `id` is a usable module id: 1–32 of `a-z0-9_`, starting with a letter, not in
/// [`RESERVED_MODULE_IDS`]. The one id pattern of genesis modules and deployed ones. Errors
/// (fixed texts, they reach deploy receipts): ``module id `<id>` must be 1 to 32 of a-z, 0-9
/// and _, starting with a letter`` or ``module id `<id>` is reserved`` (`module_id.rs`).
pub fn check_module_id(id: &str) -> Result<(), GenesisError> {
    match module_id_error(id) {
        Some(m) => Err(invalid(m)),
        None => Ok(()),
    }
}

impl Genesis {
    /// Parses and [validates](Genesis::validate) a genesis file.
    pub fn from_json(text: &str) -> Result<Genesis, GenesisError> {
        let genesis: Genesis =
            serde_json::from_str(text).map_err(|e| GenesisError::Json(e.to_string()))?;
        genesis.validate()?;
        Ok(genesis)
    }

    /// The file as pretty JSON.
    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(self).expect("a Genesis always serialises")
    }

    /// Checks every field; [`GenesisError::Invalid`] names the first bad one.
    pub fn validate(&self) -> Result<(), GenesisError> {
        let id = self.chain_id.as_bytes();
        if id.is_empty()
            || id.len() > MAX_CHAIN_ID_LEN
            || !id
                .iter()
                .all(|c| c.is_ascii_alphanumeric() || b"._-".contains(c))
        {
            return Err(invalid(
                "chain_id must be 1 to 64 of A-Z, a-z, 0-9, `.`, `_` and `-`",
            ));
        }
        check_address(&self.sequencer, self.network)
            .map_err(|e| invalid(format!("sequencer `{}`: {e}", self.sequencer)))?;
        if let Some(set) = &self.validators {
            set.validate(self.network).map_err(invalid)?;
            if set.by_address(&self.sequencer).is_none() {
                return Err(invalid(format!(
                    "sequencer `{}` must be one of validators.set's addresses (it names block 0)",
                    self.sequencer
                )));
            }
        }
        for (p, value) in PARAMETERS.iter().zip(self.parameter_fields()) {
            if let Some(v) = value {
                p.check(v).map_err(invalid)?;
            }
        }
        if let (Some(set), Some(interval)) = (&self.validators, self.min_block_interval_ms) {
            if set.leader_timeout_ms <= interval {
                return Err(invalid(format!(
                    "validators.leader_timeout_ms ({}) must be more than min_block_interval_ms \
                     ({interval}): a leader waits out the interval within its view",
                    set.leader_timeout_ms
                )));
            }
        }
        if let Some(beacon) = &self.beacon {
            beacon.validate(self.validators.as_ref()).map_err(invalid)?;
        }
        if self.faucet == Some(Amount(0)) {
            return Err(invalid(
                "faucet must be more than 0 (or absent for no faucet)",
            ));
        }
        let mut ids = BTreeSet::new();
        for m in &self.modules {
            check_module_id(&m.id)?;
            if !ids.insert(m.id.as_str()) {
                return Err(invalid(format!("module `{}` is listed twice", m.id)));
            }
            if parse_hex32(&m.code_hash).is_none() {
                return Err(invalid(format!(
                    "code_hash of `{}` must be 64 lowercase hex characters",
                    m.id
                )));
            }
        }
        let mut seen = BTreeSet::new();
        let mut supply: u128 = 0;
        for b in &self.balances {
            if b.token != GOLD {
                return Err(invalid(format!(
                    "balance of `{}` in `{}`: only GOLD exists at genesis",
                    b.account, b.token
                )));
            }
            if let Some(module) = b.account.strip_prefix("module:") {
                if !ids.contains(module) {
                    return Err(invalid(format!(
                        "balance of `{}`: no such module at genesis",
                        b.account
                    )));
                }
            } else {
                check_address(&b.account, self.network)
                    .map_err(|e| invalid(format!("balance account `{}`: {e}", b.account)))?;
            }
            if b.amount.0 == 0 {
                return Err(invalid(format!(
                    "balance of `{}` is 0 (leave it out)",
                    b.account
                )));
            }
            if !seen.insert((b.account.as_str(), b.token.as_str())) {
                return Err(invalid(format!(
                    "balance of `{}` in {} is listed twice",
                    b.account, b.token
                )));
            }
            supply = supply
                .checked_add(b.amount.0)
                .ok_or_else(|| invalid("total GOLD supply overflows u128"))?;
        }
        if parse_hex32(&self.engine_config_hash).is_none() {
            return Err(invalid(
                "engine_config_hash must be 64 lowercase hex characters",
            ));
        }
        if let Some(fees) = &self.fees {
            check_address(&fees.collector, self.network)
                .map_err(|e| invalid(format!("fees.collector `{}`: {e}", fees.collector)))?;
            if !fees.is_free() && fees.minimum() == 0 {
                return Err(invalid(
                    "fees.tx_micro must be more than 0 when any price is set: with a minimum fee \
                     of 0 a key holding nothing could run code for free",
                ));
            }
            if let Some(faucet) = self.faucet {
                if fees.minimum() > faucet.0 {
                    return Err(invalid(format!(
                        "the minimum fee ({} base units) is more than a faucet call pays ({}): \
                         no new key could ever send a transaction",
                        fees.minimum(),
                        faucet.0
                    )));
                }
            }
        }
        Ok(())
    }

    /// The canonical binary encoding (borsh, see the module docs).
    pub fn to_borsh(&self) -> Vec<u8> {
        borsh::to_vec(self).expect("writing to a Vec cannot fail")
    }

    /// SHA-256 of [`Genesis::to_borsh`]: identifies the chain's starting point.
    pub fn hash(&self) -> [u8; 32] {
        sha256(&self.to_borsh())
    }

    /// Checks `signed`'s signer under this chain's rules: on a single-sequencer chain every
    /// block is signed by `sequencer`; on a chain with validators block 0 is unsigned (genesis
    /// alone fixes it) and every other block is signed by the validator its header names,
    /// which must be one of the set. Errors: [`BlockError::WrongSequencer`] (another signer,
    /// or a signature on block 0 of a chain with validators), [`BlockError::BadSignature`].
    pub fn check_block_signer(&self, signed: &SignedHeader) -> Result<(), BlockError> {
        let Some(set) = &self.validators else {
            return signed.verify_from(&self.sequencer);
        };
        if signed.header.height == 0 {
            if signed.header.sequencer != self.sequencer || !signed.signature.is_empty() {
                return Err(BlockError::WrongSequencer {
                    expected: format!("{} and no signature", self.sequencer),
                    found: format!("{} with a signature", signed.header.sequencer),
                });
            }
            return Ok(());
        }
        if set.by_address(&signed.header.sequencer).is_none() {
            return Err(BlockError::WrongSequencer {
                expected: "a validator of the genesis set".into(),
                found: signed.header.sequencer.clone(),
            });
        }
        signed.verify()
    }

    /// Checks the beacon of a block at `height` under this chain's rules: a chain without a
    /// beacon key carries none; a chain with one carries, in every block after 0, the key's
    /// signature of that height (`keys/beacon.rs`). The error is a fixed text naming what is
    /// wrong (it reaches a refused block's reason, never a receipt).
    pub fn check_beacon(&self, height: u64, beacon: Option<&Beacon>) -> Result<(), String> {
        match (&self.beacon, beacon) {
            (None, None) => Ok(()),
            (None, Some(_)) => Err("the block carries a beacon; this chain has none".into()),
            (Some(_), None) if height == 0 => Ok(()),
            (Some(_), Some(_)) if height == 0 => Err("block 0 carries no beacon".into()),
            (Some(_), None) => Err(format!("block {height} carries no beacon")),
            (Some(config), Some(b)) => config
                .public_key
                .verify(&self.chain_id, height, b)
                .map_err(|e| format!("block {height}'s beacon does not check: {e}")),
        }
    }

    /// The chain's parameters ([`ChainParams`], `params.rs`): fuel and memory as written, and
    /// for each optional field this chain lacks, what its absence means (no block spacing, the
    /// default drift window, no deploy caps).
    pub fn params(&self) -> ChainParams {
        ChainParams {
            fuel_apply: self.fuel_apply,
            fuel_view: self.fuel_view,
            fuel_end_block: self.fuel_end_block,
            memory_limit_bytes: self.memory_limit_bytes,
            clock: BlockClock {
                min_block_interval_ms: self.min_block_interval_ms.unwrap_or(0),
                max_clock_drift_ms: self
                    .max_clock_drift_ms
                    .unwrap_or(DEFAULT_MAX_CLOCK_DRIFT_MS),
            },
            block_caps: BlockCaps::from_fields(self.max_block_deploys, self.max_block_code_bytes),
        }
    }

    /// The construction of this chain's state root: `state_commitment`, or
    /// [`StateCommitment::LtHash16`] when absent.
    pub fn state_commitment(&self) -> StateCommitment {
        self.state_commitment.unwrap_or_default()
    }

    /// Whether the runtime keeps a log of each game's steps in state (`game_log.rs`): on chains
    /// with state proofs (a sparse Merkle state commitment), where a log can be proven.
    pub fn keeps_game_logs(&self) -> bool {
        self.state_commitment() == StateCommitment::SparseMerkle
    }

    /// The fields of [`PARAMETERS`] as this file holds them, in its order (`None`: absent).
    fn parameter_fields(&self) -> [Option<u64>; PARAMETERS.len()] {
        [
            Some(self.fuel_apply),
            Some(self.fuel_view),
            Some(self.fuel_end_block),
            Some(self.memory_limit_bytes),
            self.min_block_interval_ms,
            self.max_clock_drift_ms,
            self.max_block_deploys,
            self.max_block_code_bytes,
        ]
    }

    /// The chain's block-time rules (`clock.rs`): `self.params().clock`.
    pub fn clock(&self) -> BlockClock {
        self.params().clock
    }

    /// The chain's caps on deploys per block (`block_caps.rs`): `self.params().block_caps`.
    pub fn block_caps(&self) -> BlockCaps {
        self.params().block_caps
    }

    /// Total GOLD at genesis (sum of the balances), base units. Saturates on overflow, which
    /// [`Genesis::validate`] refuses.
    pub fn gold_supply(&self) -> u128 {
        self.balances
            .iter()
            .filter(|b| b.token == GOLD)
            .fold(0u128, |s, b| s.saturating_add(b.amount.0))
    }
}

impl BorshSerialize for Genesis {
    fn serialize<W: io::Write>(&self, w: &mut W) -> io::Result<()> {
        BorshSerialize::serialize(&self.chain_id, w)?;
        BorshSerialize::serialize(&self.network.pubkey_version(), w)?;
        BorshSerialize::serialize(&self.sequencer, w)?;
        BorshSerialize::serialize(&self.time_ms, w)?;
        BorshSerialize::serialize(&self.faucet.map(|a| a.0), w)?;
        BorshSerialize::serialize(&(self.modules.len() as u32), w)?;
        for m in &self.modules {
            BorshSerialize::serialize(&m.id, w)?;
            BorshSerialize::serialize(&m.code_hash, w)?;
        }
        BorshSerialize::serialize(&(self.balances.len() as u32), w)?;
        for b in &self.balances {
            BorshSerialize::serialize(&b.account, w)?;
            BorshSerialize::serialize(&b.token, w)?;
            BorshSerialize::serialize(&b.amount.0, w)?;
        }
        BorshSerialize::serialize(&self.fuel_apply, w)?;
        BorshSerialize::serialize(&self.fuel_view, w)?;
        BorshSerialize::serialize(&self.fuel_end_block, w)?;
        BorshSerialize::serialize(&self.memory_limit_bytes, w)?;
        BorshSerialize::serialize(&self.engine_config_hash, w)?;
        // A trailing optional section: nothing without fees (so chains made before fees existed
        // keep their hash), else the schedule.
        if let Some(f) = &self.fees {
            BorshSerialize::serialize(f, w)?;
        }
        // Likewise the validator set (`validators.rs` for why it cannot be read as fees).
        if let Some(v) = &self.validators {
            BorshSerialize::serialize(v, w)?;
        }
        // Likewise the block-time rules (`clock.rs`).
        clock::serialize_section(self.min_block_interval_ms, self.max_clock_drift_ms, w)?;
        // Likewise the caps on deploys per block (`block_caps.rs`).
        block_caps::serialize_section(self.max_block_deploys, self.max_block_code_bytes, w)?;
        // Likewise the randomness beacon's key (`beacon.rs`).
        if let Some(b) = &self.beacon {
            BorshSerialize::serialize(b, w)?;
        }
        // Likewise the state commitment, when named: its section name and the construction's.
        if let Some(c) = self.state_commitment {
            BorshSerialize::serialize("state_commitment", w)?;
            BorshSerialize::serialize(c.name(), w)?;
        }
        Ok(())
    }
}

/// The state entries genesis creates, sorted by key, with no module code involved: the GOLD
/// token record at `token/GOLD` (JSON `TokenInfo`: symbol `GOLD`, name `Gold`, decimals 2,
/// issuer `system`, no max supply, supply = sum of the balances) and each balance at
/// `bal/<account>/GOLD`, both written through the sdk ledger so the encoding is the one the
/// ledger reads. No nonces (absent = 0). Module registration entries are the caller's.
///
/// Validates `genesis` first; [`GenesisError::Invalid`] if it is not valid.
pub fn genesis_writes(genesis: &Genesis) -> Result<Vec<(String, Vec<u8>)>, GenesisError> {
    genesis.validate()?;
    let mut kv = MockKv::default();
    ledger::create_token(
        &mut kv,
        SYSTEM_ACCOUNT,
        GOLD,
        GOLD_NAME,
        GOLD_DECIMALS,
        None,
    )
    .map_err(|e| invalid(format!("creating GOLD: {e}")))?;
    for b in &genesis.balances {
        ledger::mint(&mut kv, SYSTEM_ACCOUNT, &b.account, &b.token, b.amount.0)
            .map_err(|e| invalid(format!("balance of `{}`: {e}", b.account)))?;
    }
    Ok(kv.state.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fee_schedule_must_charge_every_transaction_and_leave_the_faucet_usable() {
        use crate::genesis::fees::FeeSchedule;
        let mut g = sample();
        let schedule = |tx: u128, fuel: u128| FeeSchedule {
            collector: g.sequencer.clone(),
            tx_micro: Amount(tx),
            fuel_micro: Amount(fuel),
            write_byte_micro: Amount(0),
            event_byte_micro: Amount(0),
        };
        let (free_fuel, zero, ok, too_dear) = (
            schedule(0, 100),
            schedule(0, 0),
            schedule(1_000_000, 100),
            schedule(100_001_000_000, 0),
        );
        g.fees = Some(free_fuel);
        assert!(matches!(g.validate(), Err(GenesisError::Invalid(m)) if m.contains("tx_micro")));
        for fine in [zero, ok] {
            g.fees = Some(fine);
            g.validate().unwrap();
        }
        g.fees = Some(too_dear);
        assert!(matches!(g.validate(), Err(GenesisError::Invalid(m)) if m.contains("faucet")));
    }
    use crate::keys::address::SecretKey;
    use gamechain_sdk::TokenInfo;

    type Change = Box<dyn Fn(&mut Genesis)>;

    fn sample() -> Genesis {
        let seq = SecretKey::from_bytes(Network::Testnet, [1; 32]).unwrap();
        let alice = SecretKey::from_bytes(Network::Testnet, [2; 32]).unwrap();
        Genesis {
            chain_id: "gamechain-dev".into(),
            network: Network::Testnet,
            sequencer: seq.address(),
            time_ms: 1_790_000_000_000,
            faucet: Some(Amount(100_000)),
            modules: vec![GenesisModule {
                id: "tictactoe".into(),
                code_hash: "ab".repeat(32),
            }],
            balances: vec![
                GenesisBalance {
                    account: alice.address(),
                    token: GOLD.into(),
                    amount: Amount(500_000),
                },
                GenesisBalance {
                    account: "module:tictactoe".into(),
                    token: GOLD.into(),
                    amount: Amount(7),
                },
            ],
            fuel_apply: 10_000_000,
            fuel_view: 50_000_000,
            fuel_end_block: 50_000_000,
            memory_limit_bytes: 16 << 20,
            engine_config_hash: "cd".repeat(32),
            fees: None,
            validators: None,
            min_block_interval_ms: Some(1_000),
            max_clock_drift_ms: None,
            max_block_deploys: None,
            max_block_code_bytes: None,
            beacon: None,
            state_commitment: None,
        }
    }

    #[test]
    fn params_reads_each_field_of_the_table() {
        let mut g = sample();
        g.max_clock_drift_ms = Some(3_000);
        g.max_block_deploys = Some(5);
        g.max_block_code_bytes = Some(3 << 20);
        let params = g.params();
        for (p, field) in PARAMETERS.iter().zip(g.parameter_fields()) {
            assert_eq!(Some((p.get)(&params)), field, "{}", p.name);
        }
        // Absent optional fields: no spacing, the default drift window, no caps.
        let old = Genesis {
            min_block_interval_ms: None,
            ..sample()
        };
        assert_eq!(old.params().clock.min_block_interval_ms, 0);
        assert_eq!(
            old.params().clock.max_clock_drift_ms,
            DEFAULT_MAX_CLOCK_DRIFT_MS
        );
        assert_eq!(old.params().block_caps, BlockCaps::NONE);
        assert_eq!(
            (old.clock(), old.block_caps()),
            (old.params().clock, old.params().block_caps)
        );
    }

    #[test]
    fn json_round_trip() {
        let g = sample();
        let text = g.to_json_pretty();
        assert_eq!(Genesis::from_json(&text).unwrap(), g);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["network"], "testnet");
        assert_eq!(v["faucet"], "100000");
        assert_eq!(v["balances"][0]["amount"], "500000");
        // No faucet: the field may be absent.
        let mut no_faucet = v.clone();
        no_faucet.as_object_mut().unwrap().remove("faucet");
        assert_eq!(
            Genesis::from_json(&no_faucet.to_string()).unwrap().faucet,
            None
        );
        let mut extra = v;
        extra["bogus"] = serde_json::json!(1);
        assert!(matches!(
            Genesis::from_json(&extra.to_string()),
            Err(GenesisError::Json(_))
        ));
    }

    #[test]
    fn hash_covers_every_field() {
        let g = sample();
        let base = g.hash();
        let changes: Vec<Change> = vec![
            Box::new(|g| g.chain_id.push('x')),
            Box::new(|g| g.network = Network::Mainnet),
            Box::new(|g| g.time_ms += 1),
            Box::new(|g| g.faucet = None),
            Box::new(|g| g.modules[0].code_hash = "ef".repeat(32)),
            Box::new(|g| g.balances[0].amount = Amount(1)),
            Box::new(|g| g.state_commitment = Some(StateCommitment::SparseMerkle)),
            Box::new(|g| g.state_commitment = Some(StateCommitment::LtHash16)),
            Box::new(|g| g.balances.swap(0, 1)),
            Box::new(|g| g.fuel_apply += 1),
            Box::new(|g| g.fuel_view += 1),
            Box::new(|g| g.fuel_end_block += 1),
            Box::new(|g| g.memory_limit_bytes += 1),
            Box::new(|g| g.engine_config_hash = "00".repeat(32)),
            Box::new(|g| g.min_block_interval_ms = Some(1_001)),
            Box::new(|g| g.min_block_interval_ms = None),
            Box::new(|g| g.max_clock_drift_ms = Some(2_000)),
            Box::new(|g| g.max_block_deploys = Some(8)),
            Box::new(|g| g.max_block_code_bytes = Some(2 << 20)),
        ];
        for (i, change) in changes.iter().enumerate() {
            let mut h = g.clone();
            change(&mut h);
            assert_ne!(h.hash(), base, "change {i}");
        }
        // Fixed prefix of the encoding: chain id, then the network's version byte.
        let bytes = g.to_borsh();
        assert_eq!(&bytes[..4], &13u32.to_le_bytes());
        assert_eq!(&bytes[4..17], b"gamechain-dev");
        assert_eq!(bytes[17], 139);
    }

    #[test]
    fn writes_create_gold_and_balances() {
        let g = sample();
        let writes = genesis_writes(&g).unwrap();
        let keys: Vec<&str> = writes.iter().map(|(k, _)| k.as_str()).collect();
        let alice = &g.balances[0].account;
        // Sorted by key: `m` (module:) sorts before `y` (a testnet address).
        assert_eq!(
            keys,
            [
                "bal/module:tictactoe/GOLD",
                format!("bal/{alice}/GOLD").as_str(),
                "token/GOLD"
            ]
        );
        assert_eq!(
            (writes[0].1.as_slice(), writes[1].1.as_slice()),
            (&b"7"[..], &b"500000"[..])
        );
        let info: TokenInfo = serde_json::from_slice(&writes[2].1).unwrap();
        assert_eq!(
            info,
            TokenInfo {
                symbol: "GOLD".into(),
                name: "Gold".into(),
                decimals: 2,
                issuer: "system".into(),
                max_supply: None,
                supply: Amount(500_007),
            }
        );
        assert_eq!(g.gold_supply(), 500_007);
        // The ledger reads what genesis wrote.
        let mut kv = MockKv::default();
        kv.state.extend(writes);
        assert_eq!(ledger::balance(&kv, alice, GOLD), 500_000);
    }

    #[test]
    fn validation_names_the_bad_field() {
        let bad: Vec<(&str, Change)> = vec![
            ("chain_id", Box::new(|g| g.chain_id = "has space".into())),
            ("sequencer", Box::new(|g| g.network = Network::Mainnet)),
            ("faucet", Box::new(|g| g.faucet = Some(Amount(0)))),
            (
                "module id",
                Box::new(|g| g.modules[0].id = "TicTacToe".into()),
            ),
            ("reserved", Box::new(|g| g.modules[0].id = "system".into())),
            (
                "listed twice",
                Box::new(|g| g.modules.push(g.modules[0].clone())),
            ),
            (
                "code_hash",
                Box::new(|g| g.modules[0].code_hash = "AB".repeat(32)),
            ),
            (
                "only GOLD",
                Box::new(|g| g.balances[0].token = "GEM".into()),
            ),
            (
                "no such module",
                Box::new(|g| g.balances[1].account = "module:chess".into()),
            ),
            ("is 0", Box::new(|g| g.balances[0].amount = Amount(0))),
            (
                "listed twice",
                Box::new(|g| g.balances.push(g.balances[0].clone())),
            ),
            (
                "overflows",
                Box::new(|g| g.balances[1].amount = Amount(u128::MAX)),
            ),
            ("fuel_view", Box::new(|g| g.fuel_view = 0)),
            (
                "max_block_deploys",
                Box::new(|g| g.max_block_deploys = Some(0)),
            ),
            (
                "max_block_code_bytes",
                Box::new(|g| g.max_block_code_bytes = Some(1)),
            ),
            (
                "engine_config_hash",
                Box::new(|g| g.engine_config_hash = "x".into()),
            ),
        ];
        for (needle, change) in bad {
            let mut g = sample();
            change(&mut g);
            let err = g.validate().unwrap_err().to_string();
            assert!(err.contains(needle), "{needle}: {err}");
            assert!(genesis_writes(&g).is_err());
        }
        sample().validate().unwrap();
    }
}
