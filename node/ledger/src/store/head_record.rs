//! [`HeadRecord`]: `<data>/chain.sqlite.head`, the last block the database said it committed,
//! written by the writer [`Storage`](crate::storage::Storage) after every commit, and
//! compared at start with the head SQLite recovers ([`check_head_record`]).
//!
//! Why: in WAL mode SQLite treats a damaged write-ahead log as ending at its first bad frame.
//! A WAL with a flipped byte, a cut tail, a garbage header or no file at all opens *without an
//! error* at an older head; only a witness outside the database can tell. The sign state
//! (`sign_state.rs`) is one such witness (written before a block is signed); this record is a
//! second one, written after the commit, so the node still notices a lost committed block when
//! the sign state is missing or was restored from an older copy.
//!
//! Format: 256 bytes, two slots of 128 bytes; block `h` goes to slot `h % 2`, so a write torn
//! by a crash damages only the slot being written and the other still holds the block before.
//! A slot is one ASCII line padded with spaces:
//! `gamechain-head v1 <height> <64 hex header hash> <16 hex: first 8 bytes of SHA-256 of the text before>`.
//! The record is the valid slot with the highest height. Each write is one `pwrite` of one
//! slot, not fsynced (the commit before it was; after a power loss the record may lag the
//! database, which is harmless: it is a lower bound). Creating the file is fsynced.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::node_error::NodeError;

/// Bytes of one slot.
const SLOT: usize = 128;
/// The first word of every slot.
const MAGIC: &str = "gamechain-head v1";

/// `<db path>.head`: the head record of the database at `db`.
pub fn head_record_path(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(".head");
    PathBuf::from(name)
}

/// A committed block as the record names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedHead {
    /// Its height.
    pub height: u64,
    /// Lowercase hex of its header hash.
    pub hash: String,
}

/// What the file held when it was opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordState {
    /// No file (a new database, or a directory from before head records).
    Missing,
    /// The file exists but neither slot is valid (damaged: the operator must look).
    Unreadable,
    /// The highest valid slot.
    Head(RecordedHead),
}

/// The open head record of one database.
#[derive(Debug)]
pub struct HeadRecord {
    path: PathBuf,
    file: Option<File>,
    at_open: RecordState,
}

fn slot_text(height: u64, hash: &str) -> [u8; SLOT] {
    let body = format!("{MAGIC} {height} {hash}");
    let sum = hex::encode(&Sha256::digest(body.as_bytes())[..8]);
    let line = format!("{body} {sum}");
    let mut slot = [b' '; SLOT];
    slot[..line.len()].copy_from_slice(line.as_bytes());
    slot[SLOT - 1] = b'\n';
    slot
}

fn parse_slot(bytes: &[u8]) -> Option<RecordedHead> {
    let text = std::str::from_utf8(bytes).ok()?.trim_end();
    let (body, sum) = text.rsplit_once(' ')?;
    if hex::encode(&Sha256::digest(body.as_bytes())[..8]) != sum {
        return None;
    }
    let rest = body.strip_prefix(MAGIC)?.strip_prefix(' ')?;
    let (height, hash) = rest.split_once(' ')?;
    if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    Some(RecordedHead {
        height: height.parse().ok()?,
        hash: hash.to_string(),
    })
}

fn io_err(what: &str, path: &Path, e: impl std::fmt::Display) -> NodeError {
    NodeError::Io(format!("cannot {what} {}: {e}", path.display()))
}

impl HeadRecord {
    /// Opens (without creating) the head record of the database at `db` and reads it.
    /// Errors: the file exists but cannot be read ([`NodeError::Io`]).
    pub fn open(db: &Path) -> Result<HeadRecord, NodeError> {
        let path = head_record_path(db);
        let bytes = match std::fs::read(&path) {
            Ok(b) => Some(b),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(io_err("read", &path, e)),
        };
        let at_open = match bytes {
            None => RecordState::Missing,
            Some(bytes) => bytes
                .chunks(SLOT)
                .take(2)
                .filter(|s| s.len() == SLOT)
                .filter_map(parse_slot)
                .max_by_key(|h| h.height)
                .map_or(RecordState::Unreadable, RecordState::Head),
        };
        Ok(HeadRecord {
            path,
            file: None,
            at_open,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What the file held when it was opened.
    pub fn at_open(&self) -> &RecordState {
        &self.at_open
    }

    /// Records that block `height` with header hash `hash` (lowercase hex) is committed: one
    /// slot written in place (the file is created, with both slots, and fsynced the first
    /// time). Errors: the file cannot be created or written ([`NodeError::Io`]).
    pub fn write(&mut self, height: u64, hash: &str) -> Result<(), NodeError> {
        let slot = slot_text(height, hash);
        if self.file.is_none() {
            let exists = self.path.exists();
            let file = File::options()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&self.path)
                .map_err(|e| io_err("open", &self.path, e))?;
            if !exists || file.metadata().map(|m| m.len()).unwrap_or(0) != 2 * SLOT as u64 {
                // Both slots, so the file never holds only a torn one.
                let mut both = Vec::with_capacity(2 * SLOT);
                both.extend_from_slice(&slot);
                both.extend_from_slice(&slot);
                file.set_len(0)
                    .and_then(|()| file.write_all_at(&both, 0))
                    .and_then(|()| file.sync_all())
                    .map_err(|e| io_err("write", &self.path, e))?;
                if let Some(dir) = self.path.parent() {
                    File::open(dir)
                        .and_then(|d| d.sync_all())
                        .map_err(|e| io_err("sync the directory of", &self.path, e))?;
                }
                self.file = Some(file);
                return Ok(());
            }
            self.file = Some(file);
        }
        let file = self.file.as_ref().expect("opened above");
        let offset = (height % 2) * SLOT as u64;
        file.write_all_at(&slot, offset)
            .map_err(|e| io_err("write", &self.path, e))
    }
}

/// How the database's head stands against its head record ([`check_head_record`]).
#[derive(Debug, PartialEq, Eq)]
pub enum RecordCheck {
    /// The record is at or below the head, with the same hash as the database at its height
    /// (or it was missing and now names the head).
    Matches,
    /// The record names a committed block above the head: the database lost committed blocks
    /// (its write-ahead log was damaged or deleted, or it was replaced by an older copy).
    Lost(RecordedHead),
}

/// Compares `record` with the database head (`height`, `hash`); `hash_at(h)` is the database's
/// header hash at height `h <= height`. A missing record is written from the head (a warning:
/// a directory from before head records). Errors ([`NodeError::Refused`], saying what happened
/// and what the operator can do): the record is unreadable, or names another hash at a height
/// the database has.
pub fn check_head_record(
    record: &mut HeadRecord,
    height: u64,
    hash: &str,
    hash_at: impl Fn(u64) -> Result<Option<String>, NodeError>,
) -> Result<RecordCheck, NodeError> {
    match record.at_open.clone() {
        RecordState::Missing if height == 0 => {
            record.write(height, hash)?;
            Ok(RecordCheck::Matches)
        }
        RecordState::Missing => {
            tracing::warn!(
                path = %record.path.display(),
                height,
                "no head record beside an existing database: writing it from the head (a data directory from an older gamechain)"
            );
            record.write(height, hash)?;
            Ok(RecordCheck::Matches)
        }
        RecordState::Unreadable => Err(NodeError::Refused(format!(
            "{} is damaged (neither of its two slots is valid), so this node cannot tell whether the \
             database lost committed blocks. Check the database (`gamechain verify --data-dir`), compare \
             its head with a follower's, and delete the file to start anyway",
            record.path.display()
        ))),
        RecordState::Head(r) if r.height > height => Ok(RecordCheck::Lost(r)),
        RecordState::Head(r) => match hash_at(r.height)? {
            Some(h) if h == r.hash => Ok(RecordCheck::Matches),
            other => Err(NodeError::Refused(format!(
                "{} records block {} as committed with hash {}, but the database's block {} is {}: the \
                 database was replaced by another chain's or damaged. Put back this directory's own \
                 database, or move it aside and start with --restore-from <URL of a follower>",
                record.path.display(),
                r.height,
                r.hash,
                r.height,
                other.map_or("missing".to_string(), |h| format!("hash {h}")),
            ))),
        },
    }
}

/// The refusal for a database below its head record (no `--restore-from`): what happened and
/// what the operator can do.
pub fn lost_refusal(record: &HeadRecord, head: u64, lost: &RecordedHead) -> NodeError {
    NodeError::Refused(format!(
        "{} records block {} ({}) as committed, but the database's head is block {head}: the database \
         lost committed blocks ({}..={}), e.g. its write-ahead log (chain.sqlite-wal) was damaged or \
         deleted, or it was replaced by an older copy. Signing new blocks now could publish a second, \
         different block at heights others already have. Start the node with --restore-from <URL of a \
         follower or any node of this chain> to fetch, verify and commit the missing blocks",
        record.path.display(),
        lost.height,
        lost.hash,
        head + 1,
        lost.height,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(n: u8) -> String {
        hex::encode([n; 32])
    }

    #[test]
    fn slots_alternate_and_the_highest_valid_one_wins() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("chain.sqlite");
        let mut r = HeadRecord::open(&db).unwrap();
        assert_eq!(r.at_open(), &RecordState::Missing);
        for height in 0..5u8 {
            r.write(u64::from(height), &h(height)).unwrap();
        }
        let bytes = std::fs::read(head_record_path(&db)).unwrap();
        assert_eq!(bytes.len(), 2 * SLOT);
        let again = HeadRecord::open(&db).unwrap();
        assert_eq!(
            again.at_open(),
            &RecordState::Head(RecordedHead {
                height: 4,
                hash: h(4)
            })
        );
        // A torn write of slot 0 (block 4): block 3 in slot 1 is the record.
        let mut torn = bytes.clone();
        torn[40] ^= 1;
        std::fs::write(head_record_path(&db), &torn).unwrap();
        assert_eq!(
            HeadRecord::open(&db).unwrap().at_open(),
            &RecordState::Head(RecordedHead {
                height: 3,
                hash: h(3)
            })
        );
        // Both slots damaged, or garbage: unreadable.
        torn[SLOT + 40] ^= 1;
        std::fs::write(head_record_path(&db), &torn).unwrap();
        assert_eq!(
            HeadRecord::open(&db).unwrap().at_open(),
            &RecordState::Unreadable
        );
        std::fs::write(head_record_path(&db), b"x").unwrap();
        assert_eq!(
            HeadRecord::open(&db).unwrap().at_open(),
            &RecordState::Unreadable
        );
    }

    #[test]
    fn the_head_is_checked_against_the_record() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("chain.sqlite");
        let at = |hashes: Vec<String>| move |height: u64| Ok(hashes.get(height as usize).cloned());
        let chain: Vec<String> = (0..6).map(h).collect();
        // Missing: written from the head.
        let mut r = HeadRecord::open(&db).unwrap();
        assert_eq!(
            check_head_record(&mut r, 5, &h(5), at(chain.clone())).unwrap(),
            RecordCheck::Matches
        );
        let mut r = HeadRecord::open(&db).unwrap();
        assert_eq!(
            check_head_record(&mut r, 5, &h(5), at(chain.clone())).unwrap(),
            RecordCheck::Matches
        );
        // The database lost blocks 3..=5.
        let mut r = HeadRecord::open(&db).unwrap();
        assert_eq!(
            check_head_record(&mut r, 2, &h(2), at(chain[..3].to_vec())).unwrap(),
            RecordCheck::Lost(RecordedHead {
                height: 5,
                hash: h(5)
            })
        );
        // Another chain at the recorded height.
        let mut other = chain.clone();
        other[5] = h(99);
        let e = check_head_record(&mut r, 5, &h(99), at(other)).unwrap_err();
        assert!(e.to_string().contains("chain.sqlite.head"), "{e}");
        // Unreadable: refused.
        std::fs::write(head_record_path(&db), b"garbage").unwrap();
        let mut r = HeadRecord::open(&db).unwrap();
        let e = check_head_record(&mut r, 5, &h(5), at(chain)).unwrap_err();
        assert!(e.to_string().contains("damaged"), "{e}");
    }
}
