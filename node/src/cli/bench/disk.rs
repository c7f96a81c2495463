//! How much of a node's data directory grows with the chain, for the bench's disk figure:
//! the database as SQLite counts it, every file but those of bounded size, and those apart.

use std::path::Path;

use gamechain_ledger::config::DB_FILE;
use gamechain_ledger::store::sign_state::SIGN_STATE_FILE;
use gamechain_ledger::Storage;

/// Bytes of every file under `dir` (the SQLite file and its WAL, the compiled cache, …).
pub fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// The files of a data directory that are rewritten in place and stay bounded whatever the
/// chain's length: SQLite's WAL (checkpointed once past
/// [`gamechain_ledger::store::storage::WAL_CHECKPOINT_BYTES`], then reused) and its index, and the
/// sign state (the last signed block). Counted as files, they moved the disk figure by several
/// MB from run to run, depending only on where in its cycle the WAL was and how large the last
/// block happened to be.
fn bounded_files() -> [String; 3] {
    [
        format!("{DB_FILE}-wal"),
        format!("{DB_FILE}-shm"),
        SIGN_STATE_FILE.to_string(),
    ]
}

/// What the node's data directory `dir` holds, in bytes, of what grows with the chain: the
/// database at its size as SQLite counts it ([`Storage::database_bytes`]: pages still in the
/// WAL included) plus every other file but the [`bounded_files`]. `None` when the database
/// cannot be read (its file alone would leave out the pages in the WAL).
pub(crate) fn data_bytes(dir: &Path) -> Option<u64> {
    let db = dir.join(DB_FILE);
    let skip = bounded_files();
    let files: u64 = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path() != db && !skip.iter().any(|f| e.file_name() == f.as_str()))
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum();
    let database = Storage::open_reader(&db)
        .and_then(|s| s.database_bytes())
        .ok()?;
    Some(files + database)
}

/// The [`bounded_files`] of data directory `dir` now, in bytes.
pub(crate) fn bounded_bytes(dir: &Path) -> u64 {
    bounded_files()
        .iter()
        .map(|f| std::fs::metadata(dir.join(f)).map_or(0, |m| m.len()))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_growth_counts_the_database_as_sqlite_does_and_leaves_out_the_bounded_files() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join(DB_FILE);
        let storage = Storage::open(&db).unwrap();
        let database = storage.database_bytes().unwrap();
        assert!(database > 0);
        drop(storage);
        std::fs::write(dir.path().join("genesis.json"), [0; 1_000]).unwrap();
        std::fs::create_dir(dir.path().join("compiled")).unwrap();
        std::fs::write(dir.path().join("compiled/a"), [0; 300]).unwrap();
        for (i, name) in bounded_files().iter().enumerate() {
            std::fs::write(dir.path().join(name), vec![0; 10_000 * (i + 1)]).unwrap();
        }
        // (Before `data_bytes`, whose reader rewrites SQLite's index file.)
        assert_eq!(bounded_bytes(dir.path()), 60_000);
        assert_eq!(
            dir_bytes(dir.path()),
            std::fs::metadata(&db).unwrap().len() + 61_300
        );
        assert_eq!(data_bytes(dir.path()), Some(database + 1_300));
        assert_eq!(data_bytes(&dir.path().join("none")), None);
    }
}
