//! Key files: a secret key as its WIF on one line, in a file only its owner can read (mode
//! 0600). The CLI writes them (`gamechain key new`) and reads them (`--key FILE`); the WIF never
//! goes to the terminal.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::Path;

use crate::SecretKey;

/// Longest key file read, bytes: a WIF is 52 characters, so anything much longer is not a key
/// file (and is not read into memory whole).
const MAX_KEY_FILE_BYTES: u64 = 1024;

/// Writes `key`'s WIF and a newline to a new file at `path` with mode 0600.
///
/// Errors (as text naming the path): the file already exists (a key file is never
/// overwritten), or it cannot be created or written.
pub fn write_key_file(path: &Path, key: &SecretKey) -> Result<(), String> {
    write_secret_file(path, "a key file", &format!("{}\n", key.to_wif()))
}

/// Writes `text` to a new file at `path`, mode 0600 on Unix, synced: the one way a file holding
/// a secret key is written (key files, session files). Errors (text naming the path, never the
/// content): it exists (`<path> already exists; <what> is never overwritten`), or cannot be
/// created or written.
pub fn write_secret_file(path: &Path, what: &str, text: &str) -> Result<(), String> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => format!(
            "{} already exists; {what} is never overwritten",
            path.display()
        ),
        _ => format!("cannot create {}: {e}", path.display()),
    })?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Reads the key in `path`: one WIF, surrounding whitespace ignored.
///
/// Errors (as text naming the path, never its content): unreadable, too long, or not a WIF
/// (`from_wif`'s reason).
pub fn read_key_file(path: &Path) -> Result<SecretKey, String> {
    let len = fs::metadata(path)
        .map_err(|e| format!("cannot read key file {}: {e}", path.display()))?
        .len();
    if len > MAX_KEY_FILE_BYTES {
        return Err(format!(
            "{} is {len} bytes: not a key file (one WIF line)",
            path.display()
        ));
    }
    let text = fs::read_to_string(path)
        .map_err(|e| format!("cannot read key file {}: {e}", path.display()))?;
    SecretKey::from_wif(text.trim())
        .map_err(|e| format!("{} does not hold a WIF key: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Network;

    #[test]
    fn round_trip_mode_and_no_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("alice.wif");
        let key = SecretKey::generate(Network::Testnet);
        write_key_file(&path, &key).unwrap();
        assert_eq!(read_key_file(&path).unwrap(), key);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(
                fs::metadata(&path).unwrap().permissions().mode() & 0o777,
                0o600
            );
        }
        let other = SecretKey::generate(Network::Testnet);
        let err = write_key_file(&path, &other).unwrap_err();
        assert!(err.contains("already exists"), "{err}");
        assert_eq!(read_key_file(&path).unwrap(), key, "the first key is kept");
    }

    #[test]
    fn bad_files_are_refused_without_echoing_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.wif");
        fs::write(&path, "not-a-wif-secret\n").unwrap();
        let err = read_key_file(&path).unwrap_err();
        assert!(
            err.contains("does not hold a WIF key") && !err.contains("not-a-wif-secret"),
            "{err}"
        );
        fs::write(&path, "x".repeat(2000)).unwrap();
        assert!(read_key_file(&path).unwrap_err().contains("not a key file"));
        assert!(read_key_file(&dir.path().join("missing"))
            .unwrap_err()
            .contains("cannot read key file"));
    }
}
