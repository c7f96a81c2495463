//! The Divi signed message (Bitcoin's `signmessage` with Divi's magic string): the message hash,
//! signing, public-key recovery and verification against an address.
//!
//! Construction (identical to Bitcoin Core's `MessageHash` / `SignCompact`, only the magic and
//! the address versions differ):
//!
//! * hash = SHA256d(varint(len magic) ‖ magic ‖ varint(len msg) ‖ msg), where varint is
//!   Bitcoin's CompactSize (1 byte below 0xfd; else 0xfd + u16 LE, 0xfe + u32 LE, 0xff + u64 LE)
//!   and the magic is [`MAGIC`] = `"DarkNet Signed Message:\n"` (24 bytes);
//! * signature = deterministic (RFC 6979) low-S ECDSA over the hash with libsecp256k1, as 65
//!   bytes: header `27 + 4 + recovery id` (31–34: the "compressed public key" headers), then
//!   `r ‖ s` (32 bytes each, big-endian); written as standard base64 with padding (88 chars).
//!
//! Verification recovers the public key from the signature and compares the hash160 of its
//! compressed form with the address. It is stricter than Bitcoin Core in two ways, so that one
//! message has one valid signature text per key: only headers 31–34 are accepted (all chain
//! addresses are compressed-key P2PKH), and a high-S signature is refused (libsecp256k1 and every
//! mainstream signer produce low-S). Base64 must be canonical (padding, no whitespace).

use core::fmt;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use secp256k1::ecdsa::{RecoverableSignature, RecoveryId};
use secp256k1::Message;

use crate::hash::sha256d;
use crate::keys::address::{
    address_from_pubkey, hash160, parse_address, AddressError, Network, PublicKey, SecretKey,
};

/// The magic string that prefixes every Divi signed message.
pub const MAGIC: &[u8] = b"DarkNet Signed Message:\n";

/// Why a signed message does not verify.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SigError {
    /// The signature is not canonical standard base64 (with `=` padding).
    BadBase64,
    /// The signature does not decode to 65 bytes.
    BadLength(usize),
    /// The first byte is not 31–34 (a compressed-key recoverable signature).
    BadHeader(u8),
    /// `s` is in the upper half of the curve order (a malleated signature).
    HighS,
    /// `r`/`s` out of range, or no public key can be recovered for this message.
    RecoveryFailed,
    /// The address to verify against is not a valid Divi address.
    BadAddress(AddressError),
    /// The signature is valid but made by another key.
    AddressMismatch {
        /// The address the caller expected.
        expected: String,
        /// The address of the key that signed.
        recovered: String,
    },
}

impl fmt::Display for SigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadBase64 => f.write_str("signature is not base64"),
            Self::BadLength(n) => write!(f, "signature is {n} bytes, expected 65"),
            Self::BadHeader(h) => {
                write!(f, "signature header byte {h} is not 31-34 (compressed key)")
            }
            Self::HighS => f.write_str("signature is not canonical (high S)"),
            Self::RecoveryFailed => {
                f.write_str("no public key can be recovered from the signature")
            }
            Self::BadAddress(e) => write!(f, "bad address: {e}"),
            Self::AddressMismatch {
                expected,
                recovered,
            } => {
                write!(f, "signed by {recovered}, not by {expected}")
            }
        }
    }
}

impl std::error::Error for SigError {}

/// Appends Bitcoin's CompactSize encoding of `n`.
fn push_varint(out: &mut Vec<u8>, n: u64) {
    match n {
        0..=0xfc => out.push(n as u8),
        0xfd..=0xffff => {
            out.push(0xfd);
            out.extend_from_slice(&(n as u16).to_le_bytes());
        }
        0x1_0000..=0xffff_ffff => {
            out.push(0xfe);
            out.extend_from_slice(&(n as u32).to_le_bytes());
        }
        _ => {
            out.push(0xff);
            out.extend_from_slice(&n.to_le_bytes());
        }
    }
}

/// SHA256d(varint(len magic) ‖ magic ‖ varint(len msg) ‖ msg): the 32 bytes that are signed.
pub fn message_hash(magic: &[u8], msg: &[u8]) -> [u8; 32] {
    let mut buf = Vec::with_capacity(magic.len() + msg.len() + 18);
    push_varint(&mut buf, magic.len() as u64);
    buf.extend_from_slice(magic);
    push_varint(&mut buf, msg.len() as u64);
    buf.extend_from_slice(msg);
    sha256d(&buf)
}

/// Signs `msg` under any `magic` (Bitcoin's is `"Bitcoin Signed Message:\n"`): base64 of the 65
/// compact bytes (header 31–34, `r`, `s`). Deterministic: the same key and message always give
/// the same text.
pub fn sign_message_with_magic(magic: &[u8], sk: &secp256k1::SecretKey, msg: &[u8]) -> String {
    let digest = Message::from_digest(message_hash(magic, msg));
    let (recid, rs) = RecoverableSignature::sign_ecdsa_recoverable(digest, sk).serialize_compact();
    let mut out = [0u8; 65];
    out[0] = 27 + 4 + recid.to_u8();
    out[1..].copy_from_slice(&rs);
    BASE64.encode(out)
}

/// Signs `msg` as a Divi signed message ([`MAGIC`]); see [`sign_message_with_magic`].
pub fn sign_message(sk: &SecretKey, msg: impl AsRef<[u8]>) -> String {
    sign_message_with_magic(MAGIC, sk.as_secp256k1(), msg.as_ref())
}

/// The public key that signed `msg` under `magic`, recovered from the base64 signature.
///
/// Errors: [`SigError::BadBase64`], [`SigError::BadLength`], [`SigError::BadHeader`],
/// [`SigError::HighS`], [`SigError::RecoveryFailed`].
pub fn recover_pubkey_with_magic(
    magic: &[u8],
    msg: &[u8],
    sig_b64: &str,
) -> Result<PublicKey, SigError> {
    // 65 bytes are 88 base64 characters; refuse long input before decoding it.
    if sig_b64.len() > 200 {
        return Err(SigError::BadLength(sig_b64.len() / 4 * 3));
    }
    let bytes = BASE64.decode(sig_b64).map_err(|_| SigError::BadBase64)?;
    if bytes.len() != 65 {
        return Err(SigError::BadLength(bytes.len()));
    }
    let header = bytes[0];
    if !(31..=34).contains(&header) {
        return Err(SigError::BadHeader(header));
    }
    let recid = RecoveryId::from_u8_masked(header - 31);
    let sig = RecoverableSignature::from_compact(&bytes[1..], recid)
        .map_err(|_| SigError::RecoveryFailed)?;
    let standard = sig.to_standard();
    let mut normalized = standard;
    normalized.normalize_s();
    if normalized != standard {
        return Err(SigError::HighS);
    }
    sig.recover_ecdsa(Message::from_digest(message_hash(magic, msg)))
        .map_err(|_| SigError::RecoveryFailed)
}

/// The address (on `network`) of the key that signed `msg` as a Divi signed message. Errors as
/// [`recover_pubkey_with_magic`].
pub fn recover_address(
    network: Network,
    msg: impl AsRef<[u8]>,
    sig_b64: &str,
) -> Result<String, SigError> {
    let pubkey = recover_pubkey_with_magic(MAGIC, msg.as_ref(), sig_b64)?;
    Ok(address_from_pubkey(network, &pubkey))
}

/// `Ok` when `sig_b64` is a Divi signed message of `msg` by the key of `address` (mainnet or
/// testnet, taken from the address). Errors: [`SigError::BadAddress`], the errors of
/// [`recover_pubkey_with_magic`], and [`SigError::AddressMismatch`] when another key signed.
pub fn verify_message(address: &str, msg: impl AsRef<[u8]>, sig_b64: &str) -> Result<(), SigError> {
    let (network, hash) = parse_address(address).map_err(SigError::BadAddress)?;
    let pubkey = recover_pubkey_with_magic(MAGIC, msg.as_ref(), sig_b64)?;
    if hash160(&pubkey.serialize()) != hash {
        return Err(SigError::AddressMismatch {
            expected: address.to_string(),
            recovered: address_from_pubkey(network, &pubkey),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::address::encode_address;

    const BITCOIN_MAGIC: &[u8] = b"Bitcoin Signed Message:\n";

    fn bitcoin_key(wif: &str) -> secp256k1::SecretKey {
        let payload = bs58::decode(wif).with_check(Some(0x80)).into_vec().unwrap();
        secp256k1::SecretKey::from_secret_bytes(payload[1..33].try_into().unwrap()).unwrap()
    }

    fn bitcoin_address(pubkey: &PublicKey) -> String {
        encode_address(0, &hash160(&pubkey.serialize()))
    }

    /// External vectors: bitcoinjs-message (github.com/bitcoinjs/bitcoinjs-message),
    /// `test/fixtures.json` "valid.magicHash" (Bitcoin's magic).
    #[test]
    fn message_hash_matches_bitcoinjs_message() {
        assert_eq!(
            hex::encode(message_hash(BITCOIN_MAGIC, b"")),
            "80e795d4a4caadd7047af389d9f7f220562feb6196032e2131e10563352c4bcc"
        );
        assert_eq!(
            hex::encode(message_hash(BITCOIN_MAGIC, b"Vires is Numeris")),
            "f8a5affbef4a3241b19067aa694562f64f513310817297089a8929a930f4f933"
        );
    }

    /// External vector: the bitcoinjs-message README's compressed-key example ("Sign a Bitcoin
    /// message", also used by BlueWallet's tests): our algorithm with Bitcoin's magic and version
    /// byte 0 reproduces the published signature byte for byte (RFC 6979 is deterministic).
    #[test]
    fn sign_reproduces_the_bitcoinjs_message_readme_example() {
        let sk = bitcoin_key("L4rK1yDtCWekvXuE6oXD9jCYfFNV2cWRpVuPLBcCU2z8TrisoyY1");
        let msg = b"This is an example of a signed message.";
        let sig = sign_message_with_magic(BITCOIN_MAGIC, &sk, msg);
        assert_eq!(sig, "H9L5yLFjti0QTHhPyFrZCT1V/MMnBtXKmoiKDZ78NDBjERki6ZTQZdSMCtkgoNmp17By9ItJr8o7ChX0XxY91nk=");
        let pubkey = recover_pubkey_with_magic(BITCOIN_MAGIC, msg, &sig).unwrap();
        assert_eq!(
            bitcoin_address(&pubkey),
            "1F3sAm6ZtwLAUnj7d38pGFxtP3RVEvtsbV"
        );
    }

    /// External vectors: bitcoinjs-message `test/fixtures.json`: "valid.sign" (private key d = 1,
    /// compressed) and "valid.verify" (compressed address and signature).
    #[test]
    fn sign_and_recover_match_bitcoinjs_message_fixtures() {
        let mut one = [0u8; 32];
        one[31] = 1;
        let sk = secp256k1::SecretKey::from_secret_bytes(one).unwrap();
        assert_eq!(
            sign_message_with_magic(BITCOIN_MAGIC, &sk, b"vires is numeris"),
            "IF8nHqFr3K2UKYahhX3soVeoW8W1ECNbr0wfck7lzyXjCS5Q16Ek45zyBuy1Fiy9sTPKVgsqqOuPvbycuVSSVl8="
        );
        let sig = "H8JawPtQOrybrSP1WHQnQPr67B9S3qrxBrl1mlzoTJOSHEpmnF7D3+t+LX0Xei9J20B5AIdPbeL3AaTBZ4N3bY0=";
        let pubkey = recover_pubkey_with_magic(BITCOIN_MAGIC, b"vires is numeris", sig).unwrap();
        assert_eq!(
            bitcoin_address(&pubkey),
            "1PMycacnJaSqwwJqjawXBErnLsZ7RkXUAs"
        );
        let other = recover_pubkey_with_magic(BITCOIN_MAGIC, b"foobar", sig).unwrap();
        assert_ne!(
            bitcoin_address(&other),
            "1PMycacnJaSqwwJqjawXBErnLsZ7RkXUAs"
        );
        // The uncompressed-key form of the same signature (header 27-30) is refused.
        let uncompressed = "G8JawPtQOrybrSP1WHQnQPr67B9S3qrxBrl1mlzoTJOSHEpmnF7D3+t+LX0Xei9J20B5AIdPbeL3AaTBZ4N3bY0=";
        assert_eq!(
            recover_pubkey_with_magic(BITCOIN_MAGIC, b"vires is numeris", uncompressed),
            Err(SigError::BadHeader(27))
        );
    }

    /// Fixed Divi testnet vector: secret key = SHA-256("gamechain divi test vector"), message =
    /// a faucet transaction body. Made by this code and reproduced exactly by an independent
    /// pure-Python secp256k1 / RFC 6979 implementation (which itself reproduces the bitcoinjs
    /// README vector above). Catches any future change of the magic, the hash, the version bytes
    /// or the signature encoding.
    const DIVI_WIF: &str = "cPyzSehsdPeYU2aqFJ7jhvGmJBiciscQKdVMWkxhhK9pTLQVf7pU";
    const DIVI_ADDRESS: &str = "y115R6b1mLc8CCZCi7iqZZvQMsjArEYWgC";
    const DIVI_MSG: &str = r#"{"chain_id":"gamechain-dev","from":"y115R6b1mLc8CCZCi7iqZZvQMsjArEYWgC","nonce":0,"action":{"type":"faucet","token":"GOLD"}}"#;
    const DIVI_SIG: &str =
        "H5mfcBmoLm8QvbOKB0s58Y1rryFKLuoU5NR5xfFVHNdeJmRH4CsPdZEbDlGxp5RhuF8/Nov/Adp5W8NxKi8I6LQ=";
    /// The same secret on mainnet (WIF version 212, address version 30).
    const DIVI_MAINNET_WIF: &str = "YQKy1HyauEuqA4E6KFTdDDicaTJ1BaHmvhfqQVc9SPobrQ5161Nb";
    const DIVI_MAINNET_ADDRESS: &str = "D9AL6G6cNg6d3xMm3PR6huFekteMLYd7Xp";

    #[test]
    fn fixed_divi_testnet_vector() {
        let sk = SecretKey::from_wif(DIVI_WIF).unwrap();
        assert_eq!(sk.network(), Network::Testnet);
        assert_eq!(sk.address(), DIVI_ADDRESS);
        assert_eq!(sign_message(&sk, DIVI_MSG), DIVI_SIG);
        assert_eq!(
            recover_address(Network::Testnet, DIVI_MSG, DIVI_SIG).unwrap(),
            DIVI_ADDRESS
        );
        verify_message(DIVI_ADDRESS, DIVI_MSG, DIVI_SIG).unwrap();
        assert_eq!(
            crate::hash::sha256(b"gamechain divi test vector"),
            sk.as_secp256k1().to_secret_bytes()
        );

        let main = SecretKey::from_wif(DIVI_MAINNET_WIF).unwrap();
        assert_eq!(
            (main.network(), main.as_secp256k1()),
            (Network::Mainnet, sk.as_secp256k1())
        );
        assert_eq!(main.address(), DIVI_MAINNET_ADDRESS);
        // The signature is network-independent: it verifies against the mainnet address too.
        verify_message(DIVI_MAINNET_ADDRESS, DIVI_MSG, DIVI_SIG).unwrap();
    }

    #[test]
    fn verify_reports_each_failure() {
        let sk = SecretKey::from_bytes(Network::Testnet, [9; 32]).unwrap();
        let addr = sk.address();
        let sig = sign_message(&sk, "hello");
        assert_eq!(sig.len(), 88);
        verify_message(&addr, "hello", &sig).unwrap();

        let other = SecretKey::from_bytes(Network::Testnet, [8; 32])
            .unwrap()
            .address();
        assert_eq!(
            verify_message(&other, "hello", &sig),
            Err(SigError::AddressMismatch {
                expected: other.clone(),
                recovered: addr.clone()
            })
        );
        assert!(matches!(
            verify_message(&addr, "hello!", &sig),
            Err(SigError::AddressMismatch { .. })
        ));
        assert_eq!(
            verify_message(&addr, "hello", "not base64!"),
            Err(SigError::BadBase64)
        );
        assert_eq!(
            verify_message(&addr, "hello", &sig[..86]),
            Err(SigError::BadBase64),
            "missing padding"
        );
        assert_eq!(
            verify_message(&addr, "hello", &BASE64.encode([31u8; 64])),
            Err(SigError::BadLength(64))
        );
        assert_eq!(
            verify_message("n0pe", "hello", &sig),
            Err(SigError::BadAddress(AddressError::BadBase58))
        );

        let mut raw = BASE64.decode(&sig).unwrap();
        raw[0] = 27;
        assert_eq!(
            verify_message(&addr, "hello", &BASE64.encode(&raw)),
            Err(SigError::BadHeader(27))
        );
        // r = 0 is out of range.
        let mut zero = [0u8; 65];
        zero[0] = 31;
        assert_eq!(
            verify_message(&addr, "hello", &BASE64.encode(zero)),
            Err(SigError::RecoveryFailed)
        );
    }

    #[test]
    fn high_s_twin_is_refused() {
        // (r, n - s) with the other recovery id recovers the same key: the malleated twin.
        let sk = SecretKey::from_bytes(Network::Testnet, [9; 32]).unwrap();
        let raw = BASE64.decode(sign_message(&sk, "hello")).unwrap();
        let sig =
            RecoverableSignature::from_compact(&raw[1..], RecoveryId::from_u8_masked(raw[0] - 31))
                .unwrap();
        let n = hex::decode("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141")
            .unwrap();
        let (_, rs) = sig.serialize_compact();
        let mut high_s = [0u8; 32];
        let mut borrow = 0i16;
        for i in (0..32).rev() {
            let d = n[i] as i16 - rs[32 + i] as i16 - borrow;
            high_s[i] = d.rem_euclid(256) as u8;
            borrow = i16::from(d < 0);
        }
        let mut twin = raw.clone();
        twin[0] = 31 + ((raw[0] - 31) ^ 1);
        twin[33..].copy_from_slice(&high_s);
        assert_eq!(
            verify_message(&sk.address(), "hello", &BASE64.encode(&twin)),
            Err(SigError::HighS)
        );
    }

    #[test]
    fn varint_lengths() {
        let mut v = Vec::new();
        for n in [
            0u64,
            0xfc,
            0xfd,
            0xffff,
            0x1_0000,
            0xffff_ffff,
            0x1_0000_0000,
        ] {
            push_varint(&mut v, n);
        }
        assert_eq!(
            hex::encode(v),
            "00fcfdfd00fdfffffe00000100feffffffffff0000000001000000"
        );
        // A message longer than 252 bytes uses the 3-byte form: sign/verify still agree.
        let sk = SecretKey::from_bytes(Network::Testnet, [9; 32]).unwrap();
        let long = "x".repeat(70_000);
        verify_message(&sk.address(), &long, &sign_message(&sk, &long)).unwrap();
    }
}
