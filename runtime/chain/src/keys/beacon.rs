//! The chain's randomness beacon: a unique BLS12-381 signature over (chain id, height), one per
//! block, carried in the block's header ([`crate::Header::beacon`]) and checked by everyone
//! against the public key the genesis names ([`crate::genesis::beacon`]).
//!
//! **Why a signature.** A BLS signature is *unique*: for one key and one message there is exactly
//! one valid signature, so whoever holds the key cannot choose among several, and nobody without
//! the key can compute it before it is published. The message is fixed in advance (chain id and
//! height, never content the signer chooses), so the signer cannot grind it either. On a single
//! sequencer the key is the sequencer's own; on a validator chain it is a threshold key dealt to
//! the validators, so no coalition short of the threshold knows a beacon before the validators
//! release their shares of it (`docs/randomness.md`).
//!
//! **Scheme** (Commonware's `bls12381` primitives, variant `MinSig`): public keys are G2 points
//! (96 bytes compressed), signatures G1 points (48 bytes compressed). The beacon of height `h` on
//! chain `c` is `sign_message(key, BEACON_NAMESPACE, beacon_message(c, h))`, that is a signature
//! of `union_unique(namespace, message)` = `len(namespace)` (one byte, 19) ‖ namespace ‖ message
//! under the domain separation tag `BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_POP_`, where
//! `beacon_message(c, h)` = `u8 len(c)` ‖ the chain id's bytes ‖ `u64 BE h`. The same message is
//! what a timelock ciphertext to round `h` is encrypted to.
//!
//! Points are decoded with subgroup and infinity checks (a malformed beacon or key is refused,
//! never a panic).

use core::fmt;

use commonware_codec::{Copying, DecodeExt as _, Encode as _};
use commonware_cryptography::bls12381::primitives::group::{Private, Scalar, G1, G2};
use commonware_cryptography::bls12381::primitives::ops;
use commonware_cryptography::bls12381::primitives::variant::MinSig;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The namespace every beacon signature is made under.
pub const BEACON_NAMESPACE: &[u8] = b"gamechain.beacon.v1";

/// Bytes of a beacon (a compressed G1 point).
pub const BEACON_BYTES: usize = 48;

/// Bytes of a beacon public key (a compressed G2 point).
pub const BEACON_PUBLIC_KEY_BYTES: usize = 96;

/// Bytes of a beacon secret key (a scalar, big-endian).
pub const BEACON_SECRET_KEY_BYTES: usize = 32;

/// Domain of [`BeaconSecretKey::from_seed`]'s hash to a scalar.
const SEED_DST: &[u8] = b"gamechain.beacon.key.v1";

/// The message the beacon of `height` on chain `chain_id` signs: `u8 len(chain_id)` ‖ its bytes
/// ‖ `u64 BE height`. Chain ids are at most 64 bytes (`MAX_CHAIN_ID_LEN`), so the length fits.
pub fn beacon_message(chain_id: &str, height: u64) -> Vec<u8> {
    let mut m = Vec::with_capacity(1 + chain_id.len() + 8);
    m.push(chain_id.len().min(255) as u8);
    m.extend_from_slice(chain_id.as_bytes());
    m.extend_from_slice(&height.to_be_bytes());
    m
}

/// Why a beacon, key or signature does not check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BeaconError {
    /// Not the encoding of a point of the right group (length, encoding, subgroup, infinity).
    Malformed(&'static str),
    /// A well-formed signature that is not the key's signature of the height's message.
    Invalid,
}

impl fmt::Display for BeaconError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BeaconError::Malformed(what) => write!(f, "{what} is not a valid BLS12-381 point"),
            BeaconError::Invalid => {
                f.write_str("the beacon is not the genesis key's signature of this height")
            }
        }
    }
}

impl std::error::Error for BeaconError {}

/// One block's beacon: 48 bytes, a compressed G1 point. JSON: 96 lowercase hex characters.
/// Whether it is the right one is [`BeaconPublicKey::verify`]'s question.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Beacon(pub [u8; BEACON_BYTES]);

impl fmt::Debug for Beacon {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Beacon({})", hex::encode(self.0))
    }
}

impl Beacon {
    /// The beacon as 96 lowercase hex characters.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// Parses 96 lowercase hex characters (the shape only: not whether it is a point).
    pub fn from_hex(s: &str) -> Option<Beacon> {
        if s.len() != 2 * BEACON_BYTES || s.bytes().any(|b| b.is_ascii_uppercase()) {
            return None;
        }
        let bytes = hex::decode(s).ok()?;
        Some(Beacon(bytes.try_into().ok()?))
    }

    fn point(&self) -> Result<G1, BeaconError> {
        G1::decode(Copying(self.0.as_slice())).map_err(|_| BeaconError::Malformed("the beacon"))
    }
}

impl Serialize for Beacon {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_hex())
    }
}

impl<'de> Deserialize<'de> for Beacon {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Beacon::from_hex(&s)
            .ok_or_else(|| serde::de::Error::custom("expected 96 lowercase hex characters"))
    }
}

/// A beacon public key (a single signer's, or a threshold group's): a G2 point, checked when
/// parsed. JSON and genesis: 192 lowercase hex characters.
#[derive(Clone, PartialEq, Eq)]
pub struct BeaconPublicKey {
    point: G2,
    bytes: [u8; BEACON_PUBLIC_KEY_BYTES],
}

impl fmt::Debug for BeaconPublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BeaconPublicKey({})", hex::encode(self.bytes))
    }
}

impl BeaconPublicKey {
    /// Parses the 96 compressed bytes. [`BeaconError::Malformed`] when they are not a point of
    /// G2's prime-order subgroup (or are the identity).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, BeaconError> {
        let bytes: [u8; BEACON_PUBLIC_KEY_BYTES] = bytes
            .try_into()
            .map_err(|_| BeaconError::Malformed("the beacon public key"))?;
        let point = G2::decode(Copying(bytes.as_slice()))
            .map_err(|_| BeaconError::Malformed("the beacon public key"))?;
        Ok(Self { point, bytes })
    }

    /// Parses 192 lowercase hex characters.
    pub fn from_hex(s: &str) -> Result<Self, BeaconError> {
        if s.len() != 2 * BEACON_PUBLIC_KEY_BYTES || s.bytes().any(|b| b.is_ascii_uppercase()) {
            return Err(BeaconError::Malformed("the beacon public key"));
        }
        let bytes = hex::decode(s).map_err(|_| BeaconError::Malformed("the beacon public key"))?;
        Self::from_bytes(&bytes)
    }

    /// From a point computed by a dealer or a DKG (Commonware's `G2`).
    pub fn from_point(point: G2) -> Self {
        let bytes = point
            .encode()
            .as_ref()
            .try_into()
            .expect("a G2 point encodes to 96 bytes");
        Self { point, bytes }
    }

    /// The 96 compressed bytes.
    pub fn to_bytes(&self) -> [u8; BEACON_PUBLIC_KEY_BYTES] {
        self.bytes
    }

    /// 192 lowercase hex characters.
    pub fn to_hex(&self) -> String {
        hex::encode(self.bytes)
    }

    /// The point.
    pub fn point(&self) -> &G2 {
        &self.point
    }

    /// `Ok` when `beacon` is this key's signature of height `height` of chain `chain_id` (about
    /// 1 ms: two pairings). Errors: [`BeaconError::Malformed`], [`BeaconError::Invalid`].
    pub fn verify(&self, chain_id: &str, height: u64, beacon: &Beacon) -> Result<(), BeaconError> {
        let sig = beacon.point()?;
        ops::verify_message::<MinSig>(
            &self.point,
            BEACON_NAMESPACE,
            &beacon_message(chain_id, height),
            &sig,
        )
        .map_err(|_| BeaconError::Invalid)
    }
}

impl Serialize for BeaconPublicKey {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_hex())
    }
}

impl<'de> Deserialize<'de> for BeaconPublicKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        BeaconPublicKey::from_hex(&s).map_err(serde::de::Error::custom)
    }
}

/// A beacon secret key: a single sequencer's (`<data>/beacon.key`), never a threshold share.
#[derive(Clone)]
pub struct BeaconSecretKey(Private);

impl fmt::Debug for BeaconSecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BeaconSecretKey(…)")
    }
}

impl BeaconSecretKey {
    /// A new key from the operating system's randomness (32 bytes of `rand`'s thread RNG, hashed
    /// to a scalar).
    pub fn generate() -> Self {
        use secp256k1::rand::RngCore as _;
        let mut seed = [0u8; 32];
        secp256k1::rand::rng().fill_bytes(&mut seed);
        Self::from_seed(&seed)
    }

    /// The key a seed derives (hash to a scalar, RFC 9380's `hash_to_field`): for tests and
    /// reproducible dev keys.
    pub fn from_seed(seed: &[u8]) -> Self {
        Self(Private::new(Scalar::map(SEED_DST, seed)))
    }

    /// The key of 32 big-endian scalar bytes ([`BeaconSecretKey::to_bytes`]).
    /// [`BeaconError::Malformed`] when they are zero or not below the group order.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, BeaconError> {
        Private::decode(Copying(bytes))
            .map(Self)
            .map_err(|_| BeaconError::Malformed("the beacon secret key"))
    }

    /// The 32 scalar bytes (keep them secret).
    pub fn to_bytes(&self) -> [u8; BEACON_SECRET_KEY_BYTES] {
        self.0
            .encode()
            .as_ref()
            .try_into()
            .expect("a scalar encodes to 32 bytes")
    }

    /// The public key.
    pub fn public_key(&self) -> BeaconPublicKey {
        BeaconPublicKey::from_point(ops::compute_public::<MinSig>(&self.0))
    }

    /// The beacon of height `height` on chain `chain_id`.
    pub fn sign(&self, chain_id: &str, height: u64) -> Beacon {
        let sig = ops::sign_message::<MinSig>(
            &self.0,
            BEACON_NAMESPACE,
            &beacon_message(chain_id, height),
        );
        Beacon(
            sig.encode()
                .as_ref()
                .try_into()
                .expect("a G1 point encodes to 48 bytes"),
        )
    }
}

/// A beacon from a point (a recovered threshold signature).
impl From<G1> for Beacon {
    fn from(point: G1) -> Self {
        Beacon(
            point
                .encode()
                .as_ref()
                .try_into()
                .expect("a G1 point encodes to 48 bytes"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_layout() {
        let m = beacon_message("gc-1", 258);
        assert_eq!(m, [&[4u8][..], b"gc-1", &[0, 0, 0, 0, 0, 0, 1, 2]].concat());
    }

    #[test]
    fn a_beacon_verifies_only_for_its_key_chain_and_height() {
        let sk = BeaconSecretKey::from_seed(b"one");
        let pk = sk.public_key();
        let b = sk.sign("gc", 7);
        pk.verify("gc", 7, &b).unwrap();
        assert_eq!(pk.verify("gc", 8, &b), Err(BeaconError::Invalid));
        assert_eq!(pk.verify("gd", 7, &b), Err(BeaconError::Invalid));
        let other = BeaconSecretKey::from_seed(b"two").public_key();
        assert_eq!(other.verify("gc", 7, &b), Err(BeaconError::Invalid));
        // Unique: signing again gives the same bytes.
        assert_eq!(sk.sign("gc", 7), b);
        let mut bad = b;
        bad.0[47] ^= 1;
        assert!(pk.verify("gc", 7, &bad).is_err());
        assert_eq!(
            pk.verify("gc", 7, &Beacon([0; 48])),
            Err(BeaconError::Malformed("the beacon"))
        );
    }

    #[test]
    fn keys_round_trip_and_refuse_garbage() {
        let sk = BeaconSecretKey::from_seed(b"k");
        let again = BeaconSecretKey::from_bytes(&sk.to_bytes()).unwrap();
        assert_eq!(again.public_key(), sk.public_key());
        let pk = sk.public_key();
        assert_eq!(BeaconPublicKey::from_hex(&pk.to_hex()).unwrap(), pk);
        assert!(BeaconPublicKey::from_hex(&"00".repeat(96)).is_err());
        assert!(BeaconPublicKey::from_hex(&pk.to_hex().to_uppercase()).is_err());
        assert!(BeaconSecretKey::from_bytes(&[0; 32]).is_err());
        assert!(BeaconSecretKey::from_bytes(&[0xff; 32]).is_err());
        let json = serde_json::to_string(&sk.sign("c", 1)).unwrap();
        assert_eq!(json.len(), 98);
        let back: Beacon = serde_json::from_str(&json).unwrap();
        assert_eq!(back, sk.sign("c", 1));
    }
}
