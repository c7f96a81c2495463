//! The genesis file's optional `beacon` section ([`BeaconConfig`]): the public key every block's
//! randomness beacon is checked against (`keys/beacon.rs`), and who holds its secret.
//!
//! JSON (inside the genesis file):
//!
//! ```json
//! "beacon": {"scheme": "bls12381-minsig", "public_key": "<192 hex>"}
//! "beacon": {"scheme": "bls12381-minsig-threshold", "public_key": "<192 hex>", "threshold": 3}
//! ```
//!
//! - `bls12381-minsig`: one signer, the sequencer (its `<data>/beacon.key`). Only on a chain
//!   without validators.
//! - `bls12381-minsig-threshold`: a group key whose shares the validators hold, one each (share
//!   index = the validator's position in the set ordered by consensus key, as the engine orders
//!   them); any `threshold` shares recover a beacon, fewer reveal nothing. Only on a chain with
//!   validators, with `f + 1 <= threshold <= n` where `n` is the set's size and `f = (n - 1) / 3`.
//!   The shares' public polynomial is not consensus (a recovered beacon is checked against the
//!   group key alone): each validator keeps it in its own key file, so shares can be re-dealt
//!   (resharing keeps the group key) without a new genesis.
//!
//! A chain with the section carries a beacon in every block header after block 0 (block 0 has
//! none: nothing runs in it); a chain without it carries none and replays as before.
//!
//! Hashed encoding (appended to the genesis encoding after the block-caps section, only when
//! present, so chains made before beacons keep their hash): the string `"beacon"` ‖ `scheme`
//! String ‖ the 96 key bytes ‖ `threshold` as borsh `Option<u32>`. The leading string cannot be
//! mistaken for the sections before it (a 34-character address, `"validators"`, `"clock"`,
//! `"block_caps"`).

use std::io;

use borsh::BorshSerialize;
use serde::{Deserialize, Serialize};

use crate::genesis::validators::ValidatorSet;
use crate::keys::beacon::BeaconPublicKey;

/// The scheme of a beacon signed by the sequencer alone.
pub const SCHEME_SINGLE: &str = "bls12381-minsig";

/// The scheme of a beacon recovered from the validators' threshold shares.
pub const SCHEME_THRESHOLD: &str = "bls12381-minsig-threshold";

/// The genesis file's `beacon` section (module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BeaconConfig {
    /// [`SCHEME_SINGLE`] or [`SCHEME_THRESHOLD`].
    pub scheme: String,
    /// The key every beacon is checked against: 192 lowercase hex characters, a G2 point.
    pub public_key: BeaconPublicKey,
    /// Shares that recover a beacon (threshold scheme only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<u32>,
}

impl BeaconConfig {
    /// A single sequencer's beacon under `public_key`.
    pub fn single(public_key: BeaconPublicKey) -> Self {
        BeaconConfig {
            scheme: SCHEME_SINGLE.into(),
            public_key,
            threshold: None,
        }
    }

    /// Validators' threshold beacon under the group key `public_key`.
    pub fn threshold(public_key: BeaconPublicKey, threshold: u32) -> Self {
        BeaconConfig {
            scheme: SCHEME_THRESHOLD.into(),
            public_key,
            threshold: Some(threshold),
        }
    }

    /// The threshold of a validator set of `n`: `2f + 1` with `f = (n - 1) / 3`, the quorum
    /// simplex needs (so the validators that can finalize a block can also make its beacon,
    /// and the `f` a BFT chain tolerates cannot).
    pub fn quorum_threshold(n: usize) -> u32 {
        let f = n.saturating_sub(1) / 3;
        (n - f) as u32
    }

    /// Checks the section against the chain's validators (`None`: one sequencer); the error
    /// names the first bad field.
    pub fn validate(&self, validators: Option<&ValidatorSet>) -> Result<(), String> {
        match (self.scheme.as_str(), validators) {
            (SCHEME_SINGLE, None) => {
                if self.threshold.is_some() {
                    return Err(format!(
                        "beacon.threshold is only for scheme `{SCHEME_THRESHOLD}`"
                    ));
                }
                Ok(())
            }
            (SCHEME_SINGLE, Some(_)) => Err(format!(
                "beacon.scheme `{SCHEME_SINGLE}` is for a single sequencer; a chain with \
                 validators uses `{SCHEME_THRESHOLD}`"
            )),
            (SCHEME_THRESHOLD, None) => Err(format!(
                "beacon.scheme `{SCHEME_THRESHOLD}` needs a validator set"
            )),
            (SCHEME_THRESHOLD, Some(set)) => {
                let n = set.set.len();
                let f = n.saturating_sub(1) / 3;
                match self.threshold {
                    Some(t) if (f + 1..=n).contains(&(t as usize)) => Ok(()),
                    Some(t) => Err(format!(
                        "beacon.threshold must be {} to {n} for {n} validators (more than the f = \
                         {f} faults tolerated, at most the set), not {t}",
                        f + 1
                    )),
                    None => Err("beacon.threshold is required for a threshold beacon".into()),
                }
            }
            (other, _) => Err(format!(
                "beacon.scheme must be `{SCHEME_SINGLE}` or `{SCHEME_THRESHOLD}`, not `{other}`"
            )),
        }
    }
}

impl BorshSerialize for BeaconConfig {
    fn serialize<W: io::Write>(&self, w: &mut W) -> io::Result<()> {
        BorshSerialize::serialize("beacon", w)?;
        BorshSerialize::serialize(&self.scheme, w)?;
        w.write_all(&self.public_key.to_bytes())?;
        BorshSerialize::serialize(&self.threshold, w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::beacon::BeaconSecretKey;

    fn key() -> BeaconPublicKey {
        BeaconSecretKey::from_seed(b"g").public_key()
    }

    #[test]
    fn thresholds_follow_the_set() {
        assert_eq!(BeaconConfig::quorum_threshold(1), 1);
        assert_eq!(BeaconConfig::quorum_threshold(4), 3);
        assert_eq!(BeaconConfig::quorum_threshold(7), 5);
        assert!(BeaconConfig::single(key()).validate(None).is_ok());
        assert!(BeaconConfig::threshold(key(), 3).validate(None).is_err());
        let mut single = BeaconConfig::single(key());
        single.scheme = "rsa".into();
        assert!(single.validate(None).unwrap_err().contains("rsa"));
    }

    #[test]
    fn encoding_starts_with_its_name() {
        let c = BeaconConfig::threshold(key(), 3);
        let bytes = borsh::to_vec(&c).unwrap();
        assert_eq!(
            &bytes[..10],
            &[6, 0, 0, 0, b'b', b'e', b'a', b'c', b'o', b'n']
        );
        assert_eq!(bytes.len(), 10 + 4 + SCHEME_THRESHOLD.len() + 96 + 5);
        let json = serde_json::to_value(&c).unwrap();
        assert_eq!(serde_json::from_value::<BeaconConfig>(json).unwrap(), c);
    }
}
