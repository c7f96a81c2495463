//! Keys and addresses: the [`Network`] and its version bytes, the [`SecretKey`] wrapper (random
//! generation, WIF import/export), base58check P2PKH addresses and their parsing.
//!
//! Divi's parameters (the issue, "Keys, addresses and signatures"):
//!
//! | network | address version | WIF version | addresses start with |
//! |---|---|---|---|
//! | mainnet | 30 | 212 | `D` |
//! | testnet | 139 | 239 | `x` or `y` |
//!
//! An address is `base58check(version ‖ RIPEMD160(SHA256(compressed public key)))`: 1 + 20
//! bytes of payload, then the 4-byte checksum (first 4 bytes of SHA256d of the payload). Only
//! compressed (33-byte) public keys are used anywhere on the chain; a WIF always carries the
//! 0x01 "compressed" suffix: `base58check(wif version ‖ 32-byte secret ‖ 0x01)`.

use core::fmt;
use core::str::FromStr;

use ripemd::Ripemd160;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub use secp256k1::PublicKey;

/// Longest string [`parse_address`] and [`SecretKey::from_wif`] look at; anything longer is
/// refused before decoding (P2PKH addresses are 33–34 characters, compressed WIFs 52).
const MAX_BASE58_LEN: usize = 64;

/// Which Divi network keys and addresses belong to. JSON: `"mainnet"` / `"testnet"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Network {
    /// Divi mainnet: address version 30, WIF version 212.
    Mainnet,
    /// Divi testnet: address version 139, WIF version 239.
    Testnet,
}

impl Network {
    /// Version byte of a P2PKH address: 30 (mainnet) or 139 (testnet).
    pub const fn pubkey_version(self) -> u8 {
        match self {
            Network::Mainnet => 30,
            Network::Testnet => 139,
        }
    }

    /// Version byte of a WIF secret key: 212 (mainnet) or 239 (testnet).
    pub const fn wif_version(self) -> u8 {
        match self {
            Network::Mainnet => 212,
            Network::Testnet => 239,
        }
    }

    /// The network whose address version byte is `version`.
    pub const fn from_pubkey_version(version: u8) -> Option<Network> {
        match version {
            30 => Some(Network::Mainnet),
            139 => Some(Network::Testnet),
            _ => None,
        }
    }

    /// The network whose WIF version byte is `version`.
    pub const fn from_wif_version(version: u8) -> Option<Network> {
        match version {
            212 => Some(Network::Mainnet),
            239 => Some(Network::Testnet),
            _ => None,
        }
    }

    /// `"mainnet"` or `"testnet"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Network::Mainnet => "mainnet",
            Network::Testnet => "testnet",
        }
    }
}

impl fmt::Display for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Network {
    type Err = AddressError;
    /// Parses `"mainnet"` or `"testnet"`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "mainnet" => Ok(Network::Mainnet),
            "testnet" => Ok(Network::Testnet),
            _ => Err(AddressError::UnknownNetwork(s.to_string())),
        }
    }
}

/// Why a string is not an address or a WIF key of the expected kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddressError {
    /// Not base58 (a character outside the alphabet), or longer than any address or key.
    BadBase58,
    /// The base58check checksum does not match the payload.
    BadChecksum,
    /// The decoded payload (version byte included, checksum excluded) has the wrong length.
    BadLength {
        /// Bytes found.
        len: usize,
    },
    /// The version byte is not a Divi address (30/139) or WIF (212/239) version.
    UnknownVersion(u8),
    /// A valid address or key, but of the other network.
    WrongNetwork {
        /// The network the caller required.
        expected: Network,
        /// The network the string belongs to.
        found: Network,
    },
    /// A WIF without the 0x01 suffix: uncompressed keys are not supported.
    UncompressedWif,
    /// 32 bytes that are not a valid secp256k1 secret key (zero, or not below the curve order).
    BadSecretKey,
    /// A network name other than `mainnet` / `testnet`.
    UnknownNetwork(String),
}

impl fmt::Display for AddressError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadBase58 => f.write_str("not base58"),
            Self::BadChecksum => f.write_str("base58check checksum mismatch"),
            Self::BadLength { len } => write!(f, "wrong payload length ({len} bytes)"),
            Self::UnknownVersion(v) => write!(f, "unknown version byte {v}"),
            Self::WrongNetwork { expected, found } => {
                write!(f, "belongs to {found}, expected {expected}")
            }
            Self::UncompressedWif => f.write_str("uncompressed WIF keys are not supported"),
            Self::BadSecretKey => f.write_str("not a valid secp256k1 secret key"),
            Self::UnknownNetwork(s) => write!(f, "unknown network `{s}` (mainnet or testnet)"),
        }
    }
}

impl std::error::Error for AddressError {}

/// RIPEMD160(SHA256(`data`)), Bitcoin's "hash160".
pub fn hash160(data: &[u8]) -> [u8; 20] {
    Ripemd160::digest(Sha256::digest(data)).into()
}

/// `base58check(version ‖ hash)`: a P2PKH address for any version byte (Bitcoin uses 0).
pub fn encode_address(version: u8, hash: &[u8; 20]) -> String {
    let mut payload = [0u8; 21];
    payload[0] = version;
    payload[1..].copy_from_slice(hash);
    bs58::encode(payload).with_check().into_string()
}

/// The address of `pubkey` on `network`: `base58check(version ‖ hash160(compressed pubkey))`.
pub fn address_from_pubkey(network: Network, pubkey: &PublicKey) -> String {
    encode_address(network.pubkey_version(), &hash160(&pubkey.serialize()))
}

/// `base58check` decode: the payload (version byte first, checksum removed).
fn decode_check(s: &str) -> Result<Vec<u8>, AddressError> {
    if s.len() > MAX_BASE58_LEN {
        return Err(AddressError::BadBase58);
    }
    bs58::decode(s)
        .with_check(None)
        .into_vec()
        .map_err(|e| match e {
            bs58::decode::Error::InvalidChecksum { .. } => AddressError::BadChecksum,
            bs58::decode::Error::NoChecksum => AddressError::BadLength { len: 0 },
            _ => AddressError::BadBase58,
        })
}

/// Parses a Divi P2PKH address: its network and its 20-byte public key hash.
///
/// Errors: [`AddressError::BadBase58`], [`AddressError::BadChecksum`],
/// [`AddressError::BadLength`] (payload not 21 bytes), [`AddressError::UnknownVersion`] (not
/// 30 or 139, e.g. a Bitcoin address or a WIF key).
pub fn parse_address(s: &str) -> Result<(Network, [u8; 20]), AddressError> {
    let payload = decode_check(s)?;
    if payload.len() != 21 {
        return Err(AddressError::BadLength { len: payload.len() });
    }
    let network =
        Network::from_pubkey_version(payload[0]).ok_or(AddressError::UnknownVersion(payload[0]))?;
    let mut hash = [0u8; 20];
    hash.copy_from_slice(&payload[1..]);
    Ok((network, hash))
}

/// [`parse_address`], also requiring `network`: [`AddressError::WrongNetwork`] otherwise.
pub fn check_address(s: &str, network: Network) -> Result<[u8; 20], AddressError> {
    let (found, hash) = parse_address(s)?;
    if found != network {
        return Err(AddressError::WrongNetwork {
            expected: network,
            found,
        });
    }
    Ok(hash)
}

/// A secp256k1 secret key and the network it belongs to (which fixes its WIF and address
/// versions). Its `Debug` shows only the network and the address, never the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretKey {
    key: secp256k1::SecretKey,
    network: Network,
}

impl SecretKey {
    /// A new random key from the operating system's randomness (through `rand`'s thread RNG,
    /// seeded from the OS). The only non-deterministic function of the chain module.
    pub fn generate(network: Network) -> Self {
        Self {
            key: secp256k1::SecretKey::new(&mut secp256k1::rand::rng()),
            network,
        }
    }

    /// The key with these 32 big-endian bytes. [`AddressError::BadSecretKey`] when they are zero
    /// or not below the curve order.
    pub fn from_bytes(network: Network, bytes: [u8; 32]) -> Result<Self, AddressError> {
        let key = secp256k1::SecretKey::from_secret_bytes(bytes)
            .map_err(|_| AddressError::BadSecretKey)?;
        Ok(Self { key, network })
    }

    /// Parses a compressed WIF key: `base58check(wif version ‖ 32 bytes ‖ 0x01)`; the version
    /// (212 or 239) gives the network.
    ///
    /// Errors: base58/checksum errors as [`parse_address`]; [`AddressError::UncompressedWif`] for
    /// a 33-byte payload without the suffix; [`AddressError::BadLength`] otherwise;
    /// [`AddressError::UnknownVersion`]; [`AddressError::BadSecretKey`].
    pub fn from_wif(wif: &str) -> Result<Self, AddressError> {
        let payload = decode_check(wif)?;
        match payload.len() {
            34 if payload[33] == 0x01 => {}
            33 => return Err(AddressError::UncompressedWif),
            len => return Err(AddressError::BadLength { len }),
        }
        let network = Network::from_wif_version(payload[0])
            .ok_or(AddressError::UnknownVersion(payload[0]))?;
        let mut bytes = [0u8; 32];
        bytes.copy_from_slice(&payload[1..33]);
        Self::from_bytes(network, bytes)
    }

    /// The compressed WIF form: `base58check(wif version ‖ 32 bytes ‖ 0x01)` (52 characters).
    pub fn to_wif(&self) -> String {
        let mut payload = [0u8; 34];
        payload[0] = self.network.wif_version();
        payload[1..33].copy_from_slice(&self.key.to_secret_bytes());
        payload[33] = 0x01;
        bs58::encode(payload).with_check().into_string()
    }

    /// The network this key belongs to.
    pub fn network(&self) -> Network {
        self.network
    }

    /// The public key (serialise it compressed with `.serialize()`, 33 bytes).
    pub fn public_key(&self) -> PublicKey {
        self.key.public_key()
    }

    /// The P2PKH address of this key on its network.
    pub fn address(&self) -> String {
        address_from_pubkey(self.network, &self.public_key())
    }

    /// The underlying secp256k1 key, for signing.
    pub fn as_secp256k1(&self) -> &secp256k1::SecretKey {
        &self.key
    }
}

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretKey")
            .field("network", &self.network)
            .field("address", &self.address())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Bitcoin (version 0 / WIF 128) key of the bitcoinjs-message README example
    /// (github.com/bitcoinjs/bitcoinjs-message, README.md, "Sign a Bitcoin message"): WIF
    /// `L4rK1yDtCWekvXuE6oXD9jCYfFNV2cWRpVuPLBcCU2z8TrisoyY1`, address
    /// `1F3sAm6ZtwLAUnj7d38pGFxtP3RVEvtsbV`.
    #[test]
    fn bitcoin_p2pkh_matches_the_published_example() {
        let payload = bs58::decode("L4rK1yDtCWekvXuE6oXD9jCYfFNV2cWRpVuPLBcCU2z8TrisoyY1")
            .with_check(Some(0x80))
            .into_vec()
            .unwrap();
        assert_eq!((payload.len(), payload[33]), (34, 0x01));
        let sk =
            secp256k1::SecretKey::from_secret_bytes(payload[1..33].try_into().unwrap()).unwrap();
        let pk = sk.public_key();
        assert_eq!(
            encode_address(0, &hash160(&pk.serialize())),
            "1F3sAm6ZtwLAUnj7d38pGFxtP3RVEvtsbV"
        );
    }

    #[test]
    fn wif_round_trip_and_prefixes() {
        for network in [Network::Mainnet, Network::Testnet] {
            let key = SecretKey::generate(network);
            let wif = key.to_wif();
            assert_eq!(SecretKey::from_wif(&wif).unwrap(), key);
            let addr = key.address();
            assert_eq!(addr.len(), 34);
            match network {
                Network::Mainnet => assert!(addr.starts_with('D'), "{addr}"),
                Network::Testnet => {
                    assert!(addr.starts_with('x') || addr.starts_with('y'), "{addr}")
                }
            }
            assert_eq!(
                parse_address(&addr).unwrap(),
                (network, hash160(&key.public_key().serialize()))
            );
        }
    }

    #[test]
    fn seed_addresses_parse_as_testnet() {
        // Addresses printed by the reference live testnet game (`docs/tictactoe.md`, "Live game").
        for addr in [
            "xxURsC5wFbNzCrKzzQjeTqkLfEoZT6Y8F7",
            "xysuzCS9FmeSvPjxZHcZXkK8cwj9iEQBki",
        ] {
            let (network, hash) = parse_address(addr).unwrap();
            assert_eq!(network, Network::Testnet);
            assert_eq!(encode_address(139, &hash), addr);
            assert_eq!(
                check_address(addr, Network::Mainnet),
                Err(AddressError::WrongNetwork {
                    expected: Network::Mainnet,
                    found: Network::Testnet
                })
            );
        }
    }

    #[test]
    fn bad_addresses_are_refused_with_the_right_error() {
        let good = "xxURsC5wFbNzCrKzzQjeTqkLfEoZT6Y8F7";
        let mut flipped = good.to_string();
        flipped.replace_range(33..34, "8");
        assert_eq!(parse_address(&flipped), Err(AddressError::BadChecksum));
        assert_eq!(
            parse_address("xxURsC5wFbNzCrKzzQjeTqkLfEoZT6Y8F0"),
            Err(AddressError::BadBase58)
        );
        assert_eq!(parse_address(""), Err(AddressError::BadLength { len: 0 }));
        assert_eq!(parse_address(&"x".repeat(65)), Err(AddressError::BadBase58));
        assert_eq!(
            parse_address("1F3sAm6ZtwLAUnj7d38pGFxtP3RVEvtsbV"),
            Err(AddressError::UnknownVersion(0))
        );
        let key = SecretKey::from_bytes(Network::Testnet, [7; 32]).unwrap();
        assert_eq!(
            parse_address(&key.to_wif()),
            Err(AddressError::BadLength { len: 34 })
        );
        assert_eq!(
            SecretKey::from_wif(&key.address()),
            Err(AddressError::BadLength { len: 21 })
        );
        assert_eq!(
            SecretKey::from_bytes(Network::Testnet, [0; 32]),
            Err(AddressError::BadSecretKey)
        );
        // An uncompressed WIF (no 0x01 suffix).
        let mut payload = vec![239u8];
        payload.extend_from_slice(&[7; 32]);
        let uncompressed = bs58::encode(payload).with_check().into_string();
        assert_eq!(
            SecretKey::from_wif(&uncompressed),
            Err(AddressError::UncompressedWif)
        );
    }

    #[test]
    fn debug_hides_the_secret() {
        let key = SecretKey::from_bytes(Network::Testnet, [7; 32]).unwrap();
        let shown = format!("{key:?}");
        assert!(
            shown.contains(&key.address())
                && !shown.contains(&key.to_wif())
                && !shown.contains("0707")
        );
    }
}
