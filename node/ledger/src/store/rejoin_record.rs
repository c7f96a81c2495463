//! [`Rejoin`]: `<data>/rejoin.json`, the state of a validator's join from a snapshot or rejoin
//! of consensus without its journal (why and how: the node's `validator/rejoin.rs`), the
//! marker file [`STARTED_FILE`], and [`set_aside`], which renames what an earlier run left.
//! Kept here because opening a data directory reads and writes them.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::node_error::NodeError;

/// The rejoin state's file name inside the data directory.
pub const REJOIN_FILE: &str = "rejoin.json";

/// `<data>/rejoin.json`: a validator rejoining consensus without a journal (the node's `validator/rejoin.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rejoin {
    /// The joining node's clock (ms since the Unix epoch) when the join began.
    pub started_ms: u64,
    /// The height of the block consensus starts from, once found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub floor: Option<u64>,
    /// Set when a certificate made after the join began carried this validator's signature
    /// (the height of its block): another instance of the key was voting. Every start refuses
    /// until the operator, having stopped that instance, removes this file (the node's `consensus_floor`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_seen_at: Option<u64>,
}

/// The marker of a consensus journal's owner: `<data>/consensus.started`, the consensus public
/// key (64 hex) of the validator whose journal this directory holds, written once the journal
/// holds something (the node's `mark_if_journaled`). A journal missing while the marker exists was lost;
/// a marker of another key means the directory (and its journal) came from another validator.
pub const STARTED_FILE: &str = "consensus.started";

fn io_err(what: &str, path: &Path, e: impl std::fmt::Display) -> NodeError {
    NodeError::Io(format!("cannot {what} {}: {e}", path.display()))
}

/// Reads `<data_dir>/rejoin.json`: `None` when absent. Errors: unreadable, or not a rejoin
/// state (`NodeError::Refused`: the operator must look).
pub fn read(data_dir: &Path) -> Result<Option<Rejoin>, NodeError> {
    let path = data_dir.join(REJOIN_FILE);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            NodeError::Refused(format!(
                "{} is not a rejoin state ({{\"started_ms\", \"floor\"}}): {e}",
                path.display()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_err("read", &path, e)),
    }
}

/// Writes `<data_dir>/rejoin.json` durably (temporary file, fsync, rename, directory fsync).
/// Errors: `NodeError::Io`.
pub fn write(data_dir: &Path, rejoin: &Rejoin) -> Result<(), NodeError> {
    use std::io::Write as _;
    let path = data_dir.join(REJOIN_FILE);
    let tmp = data_dir.join(format!("{REJOIN_FILE}.tmp"));
    let bytes = serde_json::to_vec(rejoin).expect("a rejoin state serialises");
    let mut f = std::fs::File::create(&tmp).map_err(|e| io_err("create", &tmp, e))?;
    f.write_all(&bytes).map_err(|e| io_err("write", &tmp, e))?;
    f.sync_all().map_err(|e| io_err("fsync", &tmp, e))?;
    std::fs::rename(&tmp, &path).map_err(|e| io_err("rename", &tmp, e))?;
    std::fs::File::open(data_dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_err("fsync", data_dir, e))
}

/// Renames `path` (a file or directory) to `<path>.before-<what>-<now_ms>` when it exists,
/// returning the new path. Errors: `NodeError::Io`.
pub fn set_aside(path: &Path, what: &str, now_ms: u64) -> Result<Option<PathBuf>, NodeError> {
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(None);
    }
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".before-{what}-{now_ms}"));
    let to = path.with_file_name(name);
    std::fs::rename(path, &to).map_err(|e| io_err("rename", path, e))?;
    Ok(Some(to))
}
