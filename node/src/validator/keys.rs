//! A validator's consensus key and the participant set: `<data>/consensus.key` holds the
//! ed25519 private key as 64 lowercase hex characters (mode 0600, like the block-signing key
//! `sequencer.wif`); [`participants`] turns the genesis set into the engine's ordered set of
//! public keys.

use std::path::Path;

use commonware_codec::{DecodeExt as _, Encode as _};
use commonware_cryptography::ed25519::{PrivateKey, PublicKey};
use commonware_cryptography::Signer as _;
use commonware_utils::ordered::Set;

use gamechain_runtime::chain::{Network, SecretKey, ValidatorSet};

use gamechain_ledger::NodeError;

/// The file name of the consensus key in a data directory.
pub const CONSENSUS_KEY_FILE: &str = "consensus.key";

/// A new random consensus key (OS randomness).
pub fn generate() -> PrivateKey {
    // 32 bytes from the OS, through the secp256k1 key generator the node already uses.
    let seed = SecretKey::generate(Network::Testnet)
        .as_secp256k1()
        .to_secret_bytes();
    PrivateKey::decode(bytes::BytesMut::from(&seed[..])).expect("32 bytes are an ed25519 seed")
}

/// The key's 64-hex text (the file's content).
pub fn to_hex(key: &PrivateKey) -> String {
    hex::encode(key.encode())
}

/// The public key as 64 hex characters (the genesis set's `consensus_key`).
pub fn public_hex(key: &PrivateKey) -> String {
    hex::encode(key.public_key().as_ref())
}

/// Parses a key file's content. Errors: not 64 hex characters.
pub fn from_hex(text: &str) -> Result<PrivateKey, String> {
    let bytes = hex::decode(text.trim()).map_err(|_| "not hex".to_string())?;
    if bytes.len() != 32 {
        return Err(format!("{} bytes, not 32", bytes.len()));
    }
    PrivateKey::decode(bytes::BytesMut::from(&bytes[..])).map_err(|e| e.to_string())
}

/// Reads `<dir>/consensus.key`. Errors: missing or malformed (the message names the file).
pub fn read(dir: &Path) -> Result<PrivateKey, NodeError> {
    let path = dir.join(CONSENSUS_KEY_FILE);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| NodeError::Io(format!("cannot read {}: {e}", path.display())))?;
    from_hex(&text).map_err(|e| {
        NodeError::Refused(format!(
            "{} is not an ed25519 key (64 hex characters): {e}",
            path.display()
        ))
    })
}

/// Writes `key` to `<dir>/consensus.key` (mode 0600), refusing to replace an existing file.
pub fn write_new(dir: &Path, key: &PrivateKey) -> Result<(), NodeError> {
    use std::io::Write as _;
    let path = dir.join(CONSENSUS_KEY_FILE);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut f = options
        .open(&path)
        .map_err(|e| NodeError::Io(format!("cannot create {}: {e}", path.display())))?;
    f.write_all(format!("{}\n", to_hex(key)).as_bytes())
        .and_then(|_| f.sync_all())
        .map_err(|e| NodeError::Io(format!("cannot write {}: {e}", path.display())))
}

/// The genesis set's consensus keys as the engine's ordered participant set. Errors: a key
/// that is not an ed25519 public key.
pub fn participants(set: &ValidatorSet) -> Result<Set<PublicKey>, NodeError> {
    crate::proof::finality::participants(set).map_err(NodeError::Refused)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_files_round_trip_and_are_private() {
        let dir = tempfile::tempdir().unwrap();
        let key = generate();
        write_new(dir.path(), &key).unwrap();
        let back = read(dir.path()).unwrap();
        assert_eq!(back.public_key(), key.public_key());
        assert!(write_new(dir.path(), &key).is_err(), "never replaces a key");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(dir.path().join(CONSENSUS_KEY_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert_ne!(
            public_hex(&generate()),
            public_hex(&key),
            "random keys differ"
        );
        assert!(from_hex("zz").is_err());
        assert!(from_hex(&"00".repeat(31)).is_err());
    }
}
