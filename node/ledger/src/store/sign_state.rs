//! [`SignState`]: the highest block the sequencer ever signed, kept in `<data>/sign-state.json`
//! beside the database so the sequencer never signs two different blocks at one height (like a
//! validator's sign-state file).
//!
//! The file is `{"height": <u64>, "hash": "<64 hex: the header hash>"}`, with the whole signed
//! block (`"block"`, a sequencer's record: [`SignStateFile::record_block`]) or only its signed
//! header (`"header"`, a validator's record: [`SignStateFile::record_header`]; the finalized
//! block itself is kept by consensus, which delivers it again after a crash). Files of either
//! kind, and of older nodes, read alike. It is written through
//! a temporary file (`sign-state.json.tmp`), fsynced, renamed over the old one, and the
//! directory fsynced, before the signed block is committed or leaves the process (the
//! sequencer for every block, `genesis_setup.rs` for block 0). It only moves forward: a
//! record at or below the recorded height is refused ([`SignStateFile::record`]).
//!
//! At start (`genesis_setup.rs::open_chain`), [`check_head`] compares the database's head with
//! it: a head below the signed height, or another hash at the signed height, means the
//! database lost blocks after the last signed one, and the node refuses to start (the remedy
//! is `gamechain node --restore-from URL`, `replica/restore.rs`, confirmed by
//! [`confirm_restored`]).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use gamechain_chain::wire::Block;
use gamechain_chain::SignedHeader;

use crate::node_error::NodeError;

/// The file name of the sign state inside the data directory.
pub const SIGN_STATE_FILE: &str = "sign-state.json";

/// The highest block signed: its height and header hash (lowercase hex), and the signed block
/// itself when the sequencer recorded it ([`SignStateFile::record_block`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignState {
    /// The block's height.
    pub height: u64,
    /// Lowercase hex of the block's header hash.
    pub hash: String,
    /// The whole signed block (API JSON), so that a crash between recording it and committing
    /// it is finished by committing this very block ([`HeadCheck::Unfinished`]), never by
    /// signing another one at its height.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<Block>,
    /// Only the block's signed header (a validator's record, [`SignStateFile::record_header`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<SignedHeader>,
}

/// `<data>/sign-state.json` and what it holds now.
#[derive(Debug)]
pub struct SignStateFile {
    path: PathBuf,
    current: Option<SignState>,
}

fn io_err(what: &str, path: &Path, e: impl std::fmt::Display) -> NodeError {
    NodeError::Io(format!("cannot {what} {}: {e}", path.display()))
}

impl SignStateFile {
    /// Reads `<data_dir>/sign-state.json` (`current` is `None` when the file does not exist).
    /// Errors: it cannot be read, or is not a sign state ([`NodeError::Refused`]: the operator
    /// must look; it is never overwritten silently).
    pub fn open(data_dir: &Path) -> Result<SignStateFile, NodeError> {
        let path = data_dir.join(SIGN_STATE_FILE);
        let current = match std::fs::read(&path) {
            Ok(bytes) => Some(serde_json::from_slice::<SignState>(&bytes).map_err(|e| {
                NodeError::Refused(format!(
                    "{} is not a sign state ({{\"height\", \"hash\"}}): {e}. It was damaged: if the \
                     database is intact and at the head this node published (compare it with a \
                     follower's), delete the file and the node recreates it from the head",
                    path.display()
                ))
            })?),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(io_err("read", &path, e)),
        };
        Ok(SignStateFile { path, current })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The highest block signed, if any was recorded.
    pub fn current(&self) -> Option<&SignState> {
        self.current.as_ref()
    }

    /// Records that block `height` with header hash `hash` is about to be signed and
    /// published: durably (temporary file, fsync, rename, directory fsync) before it returns.
    /// Errors: `height` is not above the recorded height ([`NodeError::Refused`]: signing it
    /// could equivocate), or the file cannot be written ([`NodeError::Io`]).
    pub fn record(&mut self, height: u64, hash: &str) -> Result<(), NodeError> {
        self.record_state(height, hash, None, None)
    }

    /// [`SignStateFile::record`] of `block`, keeping the whole block in the file (the
    /// sequencer's record of every block it signs; see [`HeadCheck::Unfinished`]).
    pub fn record_block(&mut self, block: &Block) -> Result<(), NodeError> {
        self.record_state(block.height(), &block.hash_hex(), Some(block.clone()), None)
    }

    /// A validator's record of the finalized block it is about to commit: its signed header
    /// only. The same header as the one recorded is accepted again (a validator that stopped
    /// between the record and the commit commits the same finalized block when consensus
    /// delivers it again; see [`HeadCheck::Announced`]); else as [`SignStateFile::record`].
    pub fn record_header(&mut self, header: &SignedHeader) -> Result<(), NodeError> {
        let (height, hash) = (header.header.height, header.header.hash_hex());
        if self
            .current
            .as_ref()
            .is_some_and(|s| s.height == height && s.hash == hash)
        {
            return Ok(());
        }
        self.record_state(height, &hash, None, Some(header.clone()))
    }

    fn record_state(
        &mut self,
        height: u64,
        hash: &str,
        block: Option<Block>,
        header: Option<SignedHeader>,
    ) -> Result<(), NodeError> {
        if let Some(signed) = &self.current {
            if height <= signed.height {
                return Err(NodeError::Refused(format!(
                    "the sequencer was about to sign block {height} ({hash}), but {} records block {} \
                     ({}) as signed already: signing again at or below it could publish two different \
                     blocks at one height",
                    self.path.display(),
                    signed.height,
                    signed.hash
                )));
            }
        }
        self.write(SignState {
            height,
            hash: hash.to_string(),
            block,
            header,
        })
    }

    /// Writes `state` as the file's content, whatever was recorded before: only for
    /// recreating a missing file from the database's head, or catching the file up with a
    /// head above it (`check_head`).
    fn write(&mut self, state: SignState) -> Result<(), NodeError> {
        let tmp = self.path.with_extension("json.tmp");
        let bytes = serde_json::to_vec(&state).expect("a sign state serialises");
        let mut f = std::fs::File::create(&tmp).map_err(|e| io_err("create", &tmp, e))?;
        f.write_all(&bytes)
            .and_then(|()| f.sync_all())
            .map_err(|e| io_err("write", &tmp, e))?;
        drop(f);
        std::fs::rename(&tmp, &self.path)
            .map_err(|e| io_err("rename into place", &self.path, e))?;
        if let Some(dir) = self.path.parent() {
            std::fs::File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| io_err("sync the directory of", &self.path, e))?;
        }
        self.current = Some(state);
        Ok(())
    }
}

/// How the database's head stands against the sign state.
#[derive(Debug, PartialEq, Eq)]
pub enum HeadCheck {
    /// Same height and hash (or the file was missing or behind, and now records the head).
    Matches,
    /// The sequencer recorded the signed block `block` (the head's child) and stopped before
    /// committing it: the block never left the process (it is published only once committed),
    /// or it was the last block and the database lost it. Either way committing this very
    /// block finishes the work without signing anything new.
    Unfinished {
        /// The recorded signed block.
        block: Block,
    },
    /// A validator recorded the header of the head's child (`header`) and stopped before
    /// committing it: consensus delivers that finalized block again, and the validator commits
    /// it then. On a sequencer's chain this is [`HeadCheck::Behind`] (a sequencer records
    /// whole blocks).
    Announced {
        /// The recorded signed header.
        header: SignedHeader,
    },
    /// The head is below the signed height: blocks `head + 1 ..= signed` are missing.
    Behind {
        /// The database's head height.
        head: u64,
        /// The signed height and hash.
        signed: SignState,
    },
}

/// Compares the database head (`height`, `hash`) with `file`. A missing file is recreated from
/// the head (logged as a warning: a data directory from before sign states); a file below the
/// head is moved up to it (warning: it was restored from an older copy). A head below the
/// signed height is [`HeadCheck::Behind`]. Errors: another hash at the signed height
/// ([`NodeError::Refused`], saying what happened and what to do), or the file cannot be
/// written.
pub fn check_head(
    file: &mut SignStateFile,
    height: u64,
    hash: &str,
) -> Result<HeadCheck, NodeError> {
    let head = SignState {
        height,
        hash: hash.to_string(),
        block: None,
        header: None,
    };
    let Some(signed) = file.current.clone() else {
        tracing::warn!(
            path = %file.path.display(),
            height,
            "no sign state beside an existing database: recreating it from the head (a data directory from an older gamechain)"
        );
        file.write(head)?;
        return Ok(HeadCheck::Matches);
    };
    if signed.height < height {
        tracing::warn!(
            path = %file.path.display(),
            signed = signed.height,
            head = height,
            "the sign state is below the database's head (the file was restored from an older copy): moving it up to the head"
        );
        file.write(head)?;
        return Ok(HeadCheck::Matches);
    }
    if signed.height == height + 1 {
        if let Some(block) = &signed.block {
            if block.hash_hex() == signed.hash && hex::encode(block.header.header.prev_hash) == hash
            {
                return Ok(HeadCheck::Unfinished {
                    block: block.clone(),
                });
            }
        }
        if let Some(header) = &signed.header {
            if header.header.hash_hex() == signed.hash
                && hex::encode(header.header.prev_hash) == hash
            {
                return Ok(HeadCheck::Announced {
                    header: header.clone(),
                });
            }
        }
    }
    if signed.height > height {
        return Ok(HeadCheck::Behind {
            head: height,
            signed,
        });
    }
    if signed.hash != hash {
        return Err(NodeError::Refused(format!(
            "{} records block {} as signed with hash {}, but the database's block {} has hash {hash}: \
             the database is not the chain this sequencer published (it was replaced or restored from \
             another copy). Restore this directory's database from the copy that holds block {} {}, or \
             start with --restore-from <URL of a follower> after moving the database aside",
            file.path.display(),
            signed.height,
            signed.hash,
            height,
            signed.height,
            signed.hash,
        )));
    }
    Ok(HeadCheck::Matches)
}

/// The refusal for a head below the signed height (no `--restore-from`, or a restore that
/// could not reach the signed block): what happened and what the operator can do.
pub fn behind_refusal(
    file: &SignStateFile,
    head: u64,
    signed: &SignState,
    why: Option<&str>,
) -> NodeError {
    let mut text = format!(
        "{} records block {} ({}) as signed, but the database's head is block {head}: the database \
         lost the blocks after the last one it kept ({}..={}), e.g. its write-ahead log \
         (chain.sqlite-wal) was damaged or deleted, or the directory was restored from a backup. \
         Signing new blocks now would publish a second, different block at heights others already \
         have. Start the node with --restore-from <URL of a follower or any node of this chain> to \
         fetch, verify and commit the missing blocks",
        file.path.display(),
        signed.height,
        signed.hash,
        head + 1,
        signed.height,
    );
    if let Some(why) = why {
        text.push_str(&format!("; the restore failed: {why}"));
    }
    NodeError::Refused(text)
}

/// After a restore towards `signed` (`replica/restore.rs`; `failed`: why it stopped, if it
/// did): `Ok` when the head (`height`, `hash`) is now the signed block itself, else the
/// refusal naming the sign state, the head and the failure.
pub fn confirm_restored(
    file: &mut SignStateFile,
    height: u64,
    hash: &str,
    signed: &SignState,
    failed: Option<String>,
) -> Result<(), NodeError> {
    if let Some(why) = failed {
        return Err(behind_refusal(file, height, signed, Some(&why)));
    }
    match check_head(file, height, hash)? {
        HeadCheck::Matches if height == signed.height => {
            tracing::info!(height, %hash, "restored up to the signed block");
            Ok(())
        }
        HeadCheck::Matches => Err(behind_refusal(
            file,
            height,
            signed,
            Some("the head moved past the signed block"),
        )),
        HeadCheck::Behind { head, signed } => Err(behind_refusal(file, head, &signed, None)),
        HeadCheck::Unfinished { block } => Err(behind_refusal(
            file,
            height,
            signed,
            Some(&format!(
                "block {} is still to be committed",
                block.height()
            )),
        )),
        HeadCheck::Announced { header } => Err(behind_refusal(
            file,
            height,
            signed,
            Some(&format!(
                "block {} is still to be committed",
                header.header.height
            )),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_move_forward_durably_and_never_back() {
        let dir = tempfile::tempdir().unwrap();
        let mut file = SignStateFile::open(dir.path()).unwrap();
        assert_eq!(file.current(), None);
        file.record(0, "aa").unwrap();
        file.record(1, "bb").unwrap();
        // Read back from disk: the last record, no temporary file left.
        let again = SignStateFile::open(dir.path()).unwrap();
        assert_eq!(
            again.current(),
            Some(&SignState {
                block: None,
                header: None,
                height: 1,
                hash: "bb".into()
            })
        );
        assert!(!dir.path().join("sign-state.json.tmp").exists());
        let text = std::fs::read_to_string(dir.path().join(SIGN_STATE_FILE)).unwrap();
        assert_eq!(text, r#"{"height":1,"hash":"bb"}"#);
        // Not the same height again (another hash or the same), not below.
        for (height, hash) in [(1, "cc"), (1, "bb"), (0, "aa")] {
            let e = file.record(height, hash).unwrap_err();
            assert!(matches!(e, NodeError::Refused(_)), "{e}");
        }
        assert_eq!(
            SignStateFile::open(dir.path())
                .unwrap()
                .current()
                .unwrap()
                .height,
            1
        );
        file.record(2, "dd").unwrap();
    }

    #[test]
    fn the_head_is_checked_against_the_sign_state() {
        let dir = tempfile::tempdir().unwrap();
        let mut file = SignStateFile::open(dir.path()).unwrap();
        // Missing: recreated from the head.
        assert_eq!(check_head(&mut file, 5, "h5").unwrap(), HeadCheck::Matches);
        assert_eq!(
            SignStateFile::open(dir.path())
                .unwrap()
                .current()
                .unwrap()
                .height,
            5
        );
        assert_eq!(check_head(&mut file, 5, "h5").unwrap(), HeadCheck::Matches);
        // Another hash at the signed height.
        let e = check_head(&mut file, 5, "other").unwrap_err().to_string();
        assert!(
            e.contains("sign-state.json") && e.contains("h5") && e.contains("other"),
            "{e}"
        );
        // Behind.
        match check_head(&mut file, 3, "h3").unwrap() {
            HeadCheck::Behind { head, signed } => assert_eq!((head, signed.height), (3, 5)),
            other => panic!("{other:?}"),
        }
        // A head above the file: the file moves up.
        assert_eq!(check_head(&mut file, 7, "h7").unwrap(), HeadCheck::Matches);
        assert_eq!(file.current().unwrap().height, 7);
        // Not a sign state: refused, not overwritten.
        std::fs::write(dir.path().join(SIGN_STATE_FILE), "{").unwrap();
        assert!(matches!(
            SignStateFile::open(dir.path()),
            Err(NodeError::Refused(_))
        ));
    }

    #[test]
    fn a_recorded_but_uncommitted_block_is_unfinished_not_behind() {
        let dir = tempfile::tempdir().unwrap();
        let mut file = SignStateFile::open(dir.path()).unwrap();
        let parent = "07".repeat(32);
        let zero = "0".repeat(64);
        let header: gamechain_chain::Header = serde_json::from_str(&format!(
            r#"{{"height":6,"prev_hash":"{parent}","time_ms":5,"sequencer":"x",
              "checkpoint":{{"height":0,"hash":""}},"tx_root":"{zero}","receipt_root":"{zero}","state_root":"{zero}"}}"#
        ))
        .unwrap();
        let block = Block {
            header: gamechain_chain::SignedHeader {
                header,
                signature: "s".into(),
            },
            scheduled: Vec::new(),
            txs: Vec::new(),
            end_block: Vec::new(),
        };
        file.record(5, &parent).unwrap();
        file.record_block(&block).unwrap();
        // Read back from disk, the block included.
        let mut file = SignStateFile::open(dir.path()).unwrap();
        assert_eq!(file.current().unwrap().block.as_ref(), Some(&block));
        // Its parent is the head: the block is to be committed, nothing new signed.
        assert_eq!(
            check_head(&mut file, 5, &parent).unwrap(),
            HeadCheck::Unfinished {
                block: block.clone()
            }
        );
        // Another head at 5, or a head further behind: blocks were lost, as before.
        assert!(matches!(
            check_head(&mut file, 5, &zero).unwrap(),
            HeadCheck::Behind { head: 5, .. }
        ));
        assert!(matches!(
            check_head(&mut file, 4, &parent).unwrap(),
            HeadCheck::Behind { head: 4, .. }
        ));
    }

    #[test]
    fn a_validator_records_only_the_header_and_may_record_it_again() {
        let dir = tempfile::tempdir().unwrap();
        let mut file = SignStateFile::open(dir.path()).unwrap();
        let parent = "07".repeat(32);
        let zero = "0".repeat(64);
        let header = |time_ms: u64| -> SignedHeader {
            SignedHeader {
                header: serde_json::from_str(&format!(
                    r#"{{"height":6,"prev_hash":"{parent}","time_ms":{time_ms},"sequencer":"x",
                      "checkpoint":{{"height":0,"hash":""}},"tx_root":"{zero}","receipt_root":"{zero}","state_root":"{zero}"}}"#
                ))
                .unwrap(),
                signature: "s".into(),
            }
        };
        file.record(5, &parent).unwrap();
        file.record_header(&header(5)).unwrap();
        let text = std::fs::read_to_string(dir.path().join(SIGN_STATE_FILE)).unwrap();
        assert!(
            text.contains("\"header\"") && !text.contains("\"block\""),
            "{text}"
        );
        // Read back: the header, and the head's child is announced, not lost.
        let mut file = SignStateFile::open(dir.path()).unwrap();
        assert_eq!(file.current().unwrap().header.as_ref(), Some(&header(5)));
        assert_eq!(
            check_head(&mut file, 5, &parent).unwrap(),
            HeadCheck::Announced { header: header(5) }
        );
        // The same header again (the finalized block delivered again): accepted; another
        // header at its height: refused.
        file.record_header(&header(5)).unwrap();
        let e = file.record_header(&header(6)).unwrap_err();
        assert!(matches!(e, NodeError::Refused(_)), "{e}");
        // Another head at 5: blocks were lost, as before.
        assert!(matches!(
            check_head(&mut file, 5, &zero).unwrap(),
            HeadCheck::Behind { head: 5, .. }
        ));
    }
}
