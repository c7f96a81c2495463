//! [`StorageError`]: why the database failed or holds what this node cannot use, and
//! [`lock_path`], the lock file its messages name. A leaf: the storage, the head record and the
//! node's start error all name it, and it names none of them.

use std::fmt;
use std::path::{Path, PathBuf};

/// `<db path>.lock`: the file a writer holds an exclusive lock on, so that two nodes never
/// write (and sign blocks for) one database.
pub fn lock_path(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// A database failure, or a database whose content this node cannot use.
#[derive(Debug)]
pub enum StorageError {
    /// SQLite refused an operation (the text says which and why).
    Sqlite(String),
    /// A file beside the database (the head record) could not be written.
    Io(String),
    /// `PRAGMA quick_check` found damage (its first findings).
    Damaged(String),
    /// The content is not what this node wrote (the text says what is wrong).
    Corrupt(String),
    /// The database was written by a newer node (`found` > this node's `storage::MIGRATIONS` count).
    TooNew {
        /// The database's schema version.
        found: u32,
        /// The newest this node knows.
        known: u32,
    },
    /// Another process (or another writer in this one) has the database open for writing.
    InUse(PathBuf),
}

impl fmt::Display for StorageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StorageError::Sqlite(m) => write!(f, "database error: {m}"),
            StorageError::Io(m) => write!(f, "{m}"),
            StorageError::Damaged(m) => write!(
                f,
                "the database is damaged (PRAGMA quick_check: {m}): restore it from a backup, or \
                 move it aside and start with --restore-from <URL of a follower>"
            ),
            StorageError::Corrupt(m) => write!(f, "database content is not usable: {m}"),
            StorageError::TooNew { found, known } => write!(
                f,
                "the database has schema version {found}, this gamechain knows up to {known}: run a newer gamechain"
            ),
            StorageError::InUse(path) => write!(
                f,
                "{} is in use by another gamechain process (lock {}): stop it first",
                path.display(),
                lock_path(path).display()
            ),
        }
    }
}

impl std::error::Error for StorageError {}

impl From<rusqlite::types::FromSqlError> for StorageError {
    fn from(e: rusqlite::types::FromSqlError) -> Self {
        StorageError::Corrupt(format!("a stored column has the wrong type: {e}"))
    }
}

impl From<rusqlite::Error> for StorageError {
    fn from(e: rusqlite::Error) -> Self {
        StorageError::Sqlite(e.to_string())
    }
}
