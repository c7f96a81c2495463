//! `<data>/node.running`: present while a node runs on the data directory, removed when it
//! stops cleanly. Found at start, it means the previous run ended without a clean stop
//! (SIGKILL, a crash, a power loss): the start then checks the database with `PRAGMA
//! quick_check` (the `integrity_check = "unclean"` policy, `config.rs`), and so does every
//! start until one stops cleanly.

use std::path::{Path, PathBuf};

use crate::node_error::NodeError;

/// The marker's file name inside the data directory.
pub const RUN_MARKER_FILE: &str = "node.running";

/// `<data_dir>/node.running`.
pub fn run_marker_path(data_dir: &Path) -> PathBuf {
    data_dir.join(RUN_MARKER_FILE)
}

/// Whether the previous run on `data_dir` did not stop cleanly (the marker is there).
pub fn previous_run_unclean(data_dir: &Path) -> bool {
    run_marker_path(data_dir).exists()
}

/// Creates the marker (the node is about to run). Errors: it cannot be written
/// ([`NodeError::Io`]).
pub fn mark_running(data_dir: &Path) -> Result<(), NodeError> {
    let path = run_marker_path(data_dir);
    std::fs::write(
        &path,
        b"a gamechain node runs on this directory, or did not stop cleanly\n",
    )
    .map_err(|e| NodeError::Io(format!("cannot write {}: {e}", path.display())))
}

/// Removes the marker after a clean stop (the database is closed). A failure is logged: the
/// next start only checks the database once more.
pub fn mark_stopped(data_dir: &Path) {
    let path = run_marker_path(data_dir);
    if let Err(e) = std::fs::remove_file(&path) {
        if e.kind() != std::io::ErrorKind::NotFound {
            tracing::warn!(path = %path.display(), "cannot remove the run marker: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marker_says_whether_the_last_run_stopped_cleanly() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!previous_run_unclean(dir.path()));
        mark_running(dir.path()).unwrap();
        assert!(previous_run_unclean(dir.path()));
        mark_stopped(dir.path());
        assert!(!previous_run_unclean(dir.path()));
        mark_stopped(dir.path());
    }
}
