//! The validator set of a chain run by several validators under BFT consensus: the genesis
//! file's optional `validators` section ([`ValidatorSet`]), its validation and its hashed
//! encoding. A chain without the section has one sequencer (`Genesis::sequencer`) and nothing
//! here applies to it.
//!
//! JSON (inside the genesis file):
//!
//! ```json
//! "validators": {
//!   "engine": "commonware-simplex",
//!   "set": [
//!     {"address": "<address of the chain's network>", "consensus_key": "<64 hex>", "voting_power": 1},
//!     …
//!   ],
//!   "leader_timeout_ms": 1000, "certification_timeout_ms": 2000, "timeout_retry_ms": 10000
//! }
//! ```
//!
//! - `address`: the validator's secp256k1 key, as an address: it signs the headers of the blocks
//!   it proposes (the header's `sequencer` field names it), exactly as a single sequencer does.
//! - `consensus_key`: its ed25519 public key (32 bytes, lowercase hex): it signs consensus votes,
//!   and finality certificates are made of those signatures.
//! - `voting_power`: every validator counts once under simplex (a quorum is 2f+1 of n
//!   validators), so this must be 1; the field is there so that a set with weights is refused
//!   with a clear error rather than read as something it is not.
//! - The three timeouts are the engine's (milliseconds): how long a validator waits for the
//!   leader's proposal, for the certificate after it, and between retries of a timed-out view.
//!
//! Bounds: 1 to [`MAX_VALIDATORS`] validators; addresses and consensus keys unique; each timeout
//! 1 to 600,000 ms, with `certification_timeout_ms > leader_timeout_ms`. A chain with
//! validators also needs `Genesis::sequencer` to be one of their addresses: it names the
//! signer-free block 0 (`docs/validators.md`).
//!
//! Hashed encoding (appended to the genesis encoding after the fee section, only when the
//! section is present, so chains without it keep their hash): the string `"validators"` ‖
//! `engine` String ‖ u32 count ‖ per validator `address` String ‖ the 32 key bytes ‖
//! `voting_power` u64 ‖ the three timeouts (u64 each); strings are u32 LE length ‖ UTF-8. The
//! leading string cannot be mistaken for a fee schedule, which starts with an address (34
//! characters, not 10).

use std::collections::BTreeSet;
use std::io;

use borsh::BorshSerialize;
use serde::{Deserialize, Serialize};

use crate::hash::parse_hex32;
use crate::keys::address::{check_address, Network};

/// The only consensus engine this build runs: Commonware's simplex (`commonware-consensus`).
pub const ENGINE_SIMPLEX: &str = "commonware-simplex";

/// Most validators a set may name (each vote is checked; a certificate holds up to 2f+1
/// signatures).
pub const MAX_VALIDATORS: usize = 64;

/// Longest timeout a set may configure: 10 minutes.
pub const MAX_TIMEOUT_MS: u64 = 600_000;

/// One validator of the set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenesisValidator {
    /// Its block-signing key, as an address of the chain's network.
    pub address: String,
    /// Its ed25519 consensus public key: 64 lowercase hex characters.
    pub consensus_key: String,
    /// Its weight in votes: always 1 under simplex.
    pub voting_power: u64,
}

/// The genesis file's `validators` section (module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValidatorSet {
    /// The consensus engine: [`ENGINE_SIMPLEX`].
    pub engine: String,
    /// The validators, in any order (the engine orders them by consensus key).
    pub set: Vec<GenesisValidator>,
    /// How long a validator waits for the leader's proposal in a view, ms.
    pub leader_timeout_ms: u64,
    /// How long it waits for the view's certificate after the proposal, ms.
    pub certification_timeout_ms: u64,
    /// How long between retries of a view that timed out, ms.
    pub timeout_retry_ms: u64,
}

impl ValidatorSet {
    /// Checks the section (module docs for the rules); the error names the first bad field.
    pub fn validate(&self, network: Network) -> Result<(), String> {
        if self.engine != ENGINE_SIMPLEX {
            return Err(format!(
                "validators.engine must be `{ENGINE_SIMPLEX}` (this build runs no other), not `{}`",
                self.engine
            ));
        }
        if self.set.is_empty() || self.set.len() > MAX_VALIDATORS {
            return Err(format!(
                "validators.set must name 1 to {MAX_VALIDATORS} validators, not {}",
                self.set.len()
            ));
        }
        let mut addresses = BTreeSet::new();
        let mut keys = BTreeSet::new();
        for (i, v) in self.set.iter().enumerate() {
            check_address(&v.address, network)
                .map_err(|e| format!("validators.set[{i}].address `{}`: {e}", v.address))?;
            if parse_hex32(&v.consensus_key).is_none() {
                return Err(format!(
                    "validators.set[{i}].consensus_key must be 64 lowercase hex characters (an \
                     ed25519 public key)"
                ));
            }
            if v.voting_power != 1 {
                return Err(format!(
                    "validators.set[{i}].voting_power must be 1: under simplex every validator \
                     counts once, not {}",
                    v.voting_power
                ));
            }
            if !addresses.insert(v.address.as_str()) {
                return Err(format!(
                    "validators.set[{i}].address `{}` is listed twice",
                    v.address
                ));
            }
            if !keys.insert(v.consensus_key.as_str()) {
                return Err(format!("validators.set[{i}].consensus_key is listed twice"));
            }
        }
        for (name, ms) in [
            ("leader_timeout_ms", self.leader_timeout_ms),
            ("certification_timeout_ms", self.certification_timeout_ms),
            ("timeout_retry_ms", self.timeout_retry_ms),
        ] {
            if ms == 0 || ms > MAX_TIMEOUT_MS {
                return Err(format!(
                    "validators.{name} must be 1 to {MAX_TIMEOUT_MS} ms, not {ms}"
                ));
            }
        }
        if self.certification_timeout_ms <= self.leader_timeout_ms {
            return Err(format!(
                "validators.certification_timeout_ms ({}) must be more than leader_timeout_ms ({})",
                self.certification_timeout_ms, self.leader_timeout_ms
            ));
        }
        Ok(())
    }

    /// The validator whose block-signing address is `address`.
    pub fn by_address(&self, address: &str) -> Option<&GenesisValidator> {
        self.set.iter().find(|v| v.address == address)
    }

    /// The validator whose consensus key is `key` (32 bytes).
    pub fn by_consensus_key(&self, key: &[u8; 32]) -> Option<&GenesisValidator> {
        self.set
            .iter()
            .find(|v| parse_hex32(&v.consensus_key).as_ref() == Some(key))
    }

    /// The largest number of validators that may fail (stop, or sign anything) while the rest
    /// still finalize blocks: `f` with `n >= 3f + 1`.
    pub fn max_faulty(&self) -> usize {
        self.set.len().saturating_sub(1) / 3
    }

    /// Signatures a finality certificate needs: `n - f` (2f+1 when `n = 3f+1`).
    pub fn quorum(&self) -> usize {
        self.set.len() - self.max_faulty()
    }
}

impl BorshSerialize for ValidatorSet {
    fn serialize<W: io::Write>(&self, w: &mut W) -> io::Result<()> {
        BorshSerialize::serialize("validators", w)?;
        BorshSerialize::serialize(&self.engine, w)?;
        BorshSerialize::serialize(&(self.set.len() as u32), w)?;
        for v in &self.set {
            BorshSerialize::serialize(&v.address, w)?;
            // Validated sets only reach the hash; an invalid key hashes as 32 zero bytes.
            let key = parse_hex32(&v.consensus_key).unwrap_or([0; 32]);
            w.write_all(&key)?;
            BorshSerialize::serialize(&v.voting_power, w)?;
        }
        BorshSerialize::serialize(&self.leader_timeout_ms, w)?;
        BorshSerialize::serialize(&self.certification_timeout_ms, w)?;
        BorshSerialize::serialize(&self.timeout_retry_ms, w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::address::SecretKey;

    fn set(n: usize) -> ValidatorSet {
        ValidatorSet {
            engine: ENGINE_SIMPLEX.into(),
            set: (0..n)
                .map(|i| GenesisValidator {
                    address: SecretKey::from_bytes(Network::Testnet, [i as u8 + 1; 32])
                        .unwrap()
                        .address(),
                    consensus_key: hex::encode([i as u8 + 1; 32]),
                    voting_power: 1,
                })
                .collect(),
            leader_timeout_ms: 1000,
            certification_timeout_ms: 2000,
            timeout_retry_ms: 10_000,
        }
    }

    #[test]
    fn quorum_and_faults_follow_3f_plus_1() {
        for (n, f, q) in [
            (1, 0, 1),
            (2, 0, 2),
            (3, 0, 3),
            (4, 1, 3),
            (5, 1, 4),
            (7, 2, 5),
        ] {
            let s = set(n);
            assert_eq!((s.max_faulty(), s.quorum()), (f, q), "n = {n}");
        }
    }

    #[test]
    fn every_rule_has_its_error() {
        let net = Network::Testnet;
        assert_eq!(set(4).validate(net), Ok(()));
        let cases: Vec<(Box<dyn Fn(&mut ValidatorSet)>, &str)> = vec![
            (
                Box::new(|s| s.engine = "tendermint".into()),
                "validators.engine",
            ),
            (Box::new(|s| s.set.clear()), "1 to 64 validators, not 0"),
            (
                Box::new(|s| s.set[1].address = "nope".into()),
                "set[1].address",
            ),
            (
                Box::new(|s| s.set[2].consensus_key = "AB".repeat(32)),
                "set[2].consensus_key",
            ),
            (
                Box::new(|s| s.set[0].voting_power = 2),
                "voting_power must be 1",
            ),
            (
                Box::new(|s| s.set[3].address = s.set[0].address.clone()),
                "listed twice",
            ),
            (
                Box::new(|s| s.set[3].consensus_key = s.set[0].consensus_key.clone()),
                "consensus_key is listed twice",
            ),
            (
                Box::new(|s| s.leader_timeout_ms = 0),
                "leader_timeout_ms must be 1 to",
            ),
            (
                Box::new(|s| s.timeout_retry_ms = MAX_TIMEOUT_MS + 1),
                "timeout_retry_ms",
            ),
            (
                Box::new(|s| s.certification_timeout_ms = 1000),
                "must be more than leader_timeout_ms",
            ),
        ];
        for (change, want) in cases {
            let mut s = set(4);
            change(&mut s);
            let err = s.validate(net).unwrap_err();
            assert!(err.contains(want), "{err:?} should contain {want:?}");
        }
        let mut big = set(MAX_VALIDATORS);
        assert_eq!(big.validate(net), Ok(()));
        big.set.push(set(MAX_VALIDATORS + 1).set.pop().unwrap());
        assert!(big.validate(net).unwrap_err().contains("not 65"));
    }

    #[test]
    fn lookups_and_encoding() {
        let s = set(4);
        assert_eq!(s.by_address(&s.set[2].address), Some(&s.set[2]));
        assert_eq!(s.by_consensus_key(&[4; 32]), Some(&s.set[3]));
        assert_eq!(s.by_consensus_key(&[9; 32]), None);
        let bytes = borsh::to_vec(&s).unwrap();
        // "validators" (4 + 10) ‖ engine (4 + 18) ‖ count (4) ‖ 4 × (address 4 + 34, key 32,
        // power 8) ‖ 3 × 8.
        assert_eq!(bytes.len(), 14 + 22 + 4 + 4 * (38 + 32 + 8) + 24);
        assert_eq!(&bytes[4..14], b"validators");
        let mut other = s.clone();
        other.timeout_retry_ms += 1;
        assert_ne!(borsh::to_vec(&other).unwrap(), bytes);
    }
}
