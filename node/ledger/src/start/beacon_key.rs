//! The single sequencer's beacon key file, `<data>/beacon.key`: 64 lowercase hex characters
//! (the BLS12-381 secret scalar, `gamechain_chain::beacon`) and a newline, mode 0600, made on the
//! first start of a new chain next to `sequencer.wif`. The genesis names its public key
//! (`"beacon": {"scheme": "bls12381-minsig", …}`); every start checks the two agree, so a node
//! never signs beacons that every other node would refuse.

use std::path::Path;

use gamechain_chain::key_file::write_secret_file;
use gamechain_runtime::chain::{BeaconPublicKey, BeaconSecretKey};

use crate::node_error::NodeError;

/// Longest file read (the key is 65 bytes).
const MAX_FILE_BYTES: u64 = 1024;

/// A new key, written to `path` (which must not exist).
pub fn create_beacon_key(path: &Path) -> Result<BeaconSecretKey, NodeError> {
    let key = BeaconSecretKey::generate();
    write_secret_file(
        path,
        "a beacon key file",
        &format!("{}\n", hex::encode(key.to_bytes())),
    )
    .map_err(NodeError::Io)?;
    tracing::info!(path = %path.display(), "generated the beacon key");
    Ok(key)
}

/// The key in `path`, which must be the secret of `public` (genesis's). Errors name the path,
/// never the content: missing or unreadable, not 64 hex characters of a scalar, or the key of
/// another public key.
pub fn read_beacon_key(
    path: &Path,
    public: &BeaconPublicKey,
) -> Result<BeaconSecretKey, NodeError> {
    let refused = |why: &str| NodeError::Refused(format!("{}: {why}", path.display()));
    let meta = std::fs::metadata(path).map_err(|e| {
        refused(&format!(
            "cannot read the beacon key ({e}); the genesis names a beacon key, which this \
             sequencer must hold to sign blocks"
        ))
    })?;
    if meta.len() > MAX_FILE_BYTES {
        return Err(refused("is not a beacon key file (too long)"));
    }
    let text = std::fs::read_to_string(path).map_err(|e| refused(&format!("cannot read: {e}")))?;
    let bytes = hex::decode(text.trim())
        .map_err(|_| refused("is not 64 hex characters of a beacon key"))?;
    let key = BeaconSecretKey::from_bytes(&bytes)
        .map_err(|_| refused("is not 64 hex characters of a beacon key"))?;
    if &key.public_key() != public {
        return Err(refused(
            "holds the key of another beacon public key than the genesis names",
        ));
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_written_once_and_read_back_against_its_public_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("beacon.key");
        let key = create_beacon_key(&path).unwrap();
        assert!(create_beacon_key(&path).is_err());
        let back = read_beacon_key(&path, &key.public_key()).unwrap();
        assert_eq!(back.sign("c", 3), key.sign("c", 3));
        let other = BeaconSecretKey::from_seed(b"x").public_key();
        let e = read_beacon_key(&path, &other).unwrap_err().to_string();
        assert!(e.contains("another beacon public key"), "{e}");
        std::fs::write(&path, "zz\n").unwrap();
        assert!(read_beacon_key(&path, &key.public_key()).is_err());
        assert!(read_beacon_key(&dir.path().join("none"), &key.public_key()).is_err());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let p2 = dir.path().join("b2.key");
            create_beacon_key(&p2).unwrap();
            let mode = std::fs::metadata(&p2).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
