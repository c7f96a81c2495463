//! State snapshots a node takes of its committed state and serves in chunks, so that a new node
//! can start from a recent height instead of replaying the chain from genesis
//! (`replica/snapshot_join.rs`; `docs/validators.md`, "Joining from a snapshot").
//!
//! When. With `snapshot_every_blocks = N` (node policy, default 0: none), the first commit whose
//! head reaches or passes a multiple of `N` takes a snapshot at that head ([`Snapshots::after_commit`]).
//! On a chain with validators, only a head with a finality certificate of its own (stored in
//! `validator_finality` before the block is committed) is taken: a joining node checks the
//! snapshot's block against its own certificate, and a block finalized only through a
//! descendant's certificate has none; the first certified head at or past the multiple is taken
//! instead.
//! The commit path only opens a read transaction on the database (SQLite's WAL snapshot, taken at
//! that moment, before the next commit can start); a thread of its own then reads the whole
//! `state` table in key order from that transaction and writes the files, while the chain goes
//! on committing. One snapshot is written at a time (a multiple reached meanwhile is skipped, and
//! logged). The newest `snapshot_keep` (default 2) are kept; older ones are deleted after a new
//! one is complete.
//!
//! Files, under `<data>/snapshots/<height>/`:
//! * `chunk-<i>` (`i` from 0): entries, each
//!   `u32 LE key length ‖ key (UTF-8) ‖ u32 LE value length ‖ value`. A chunk is closed once its
//!   entries hold [`CHUNK_TARGET_BYTES`] or more; an entry never spans two chunks, so a chunk
//!   holding one large value may exceed the target (never [`MAX_CHUNK_BYTES`]). Two formats,
//!   by the chain's state commitment:
//!   * [`FORMAT_KEYS`] (an LtHash chain, which has no proofs): entries in ascending key order
//!     (byte order). A joining node can check them only all together, against the root.
//!   * [`FORMAT_PROVEN`] (a sparse Merkle chain): entries in ascending order of SHA-256 of the
//!     key (the tree's path order), and each chunk begins with its proof: `u16 LE n ‖ n × 32
//!     bytes`, the sibling hashes of its last entry's path from the root down
//!     ([`SparseMerkleTree::prove`]). A joining node checks each chunk against the signed root
//!     as it arrives ([`gamechain_chain::state_root::ChunkVerifier`]): a lying peer is caught at its first false chunk.
//! * `manifest.json` ([`Manifest`]): the height, block hash and state root the snapshot is of,
//!   the entry count, and each chunk's SHA-256, bytes and entries. Written last, and the
//!   directory renamed from `.tmp-<height>` into place after every file is fsynced: a directory
//!   named by a height is complete. A crash mid-write leaves a `.tmp-*` directory, deleted at
//!   the next start.
//!
//! Nothing here is trusted by a joining node except through the header: the chunks are checked
//! against the manifest's hashes, and their entries against the signed (or certified) header's
//! state root: chunk by chunk on a sparse Merkle chain, all together on an LtHash chain.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use gamechain_chain::state_root::chunk_proof::MAX_CHUNK_PROOF_DEPTH;
use gamechain_chain::state_root::sparse_merkle::{key_hash, Hash};
use gamechain_chain::state_root::{SparseMerkleTree, StateCommitment};

use crate::storage::{Storage, StorageError};

/// A chunk is closed once it holds at least this many bytes (4 MiB).
pub const CHUNK_TARGET_BYTES: usize = 4 << 20;

/// Largest state entry a snapshot carries, key and value with their length prefixes (48 MiB:
/// more than any value a block can write, `MAX_BLOCK_WRITE_BYTES` = 32 MiB).
pub const MAX_ENTRY_BYTES: usize = 48 << 20;

/// Largest proof at the start of a [`FORMAT_PROVEN`] chunk: its count and 256 hashes.
pub const MAX_CHUNK_PROOF_BYTES: usize = 2 + 32 * MAX_CHUNK_PROOF_DEPTH;

/// Largest chunk a node writes or a joining node accepts: the target plus one largest entry
/// plus a proof.
pub const MAX_CHUNK_BYTES: usize = CHUNK_TARGET_BYTES + MAX_ENTRY_BYTES + MAX_CHUNK_PROOF_BYTES;

/// Most entries one chunk may hold: a chunk is also closed once it holds this many, so that a
/// joining node's work on one chunk (its decoded entries, their leaves: under 50 MB) does not
/// grow with how small a lying peer makes the entries of a 52 MiB chunk.
pub const MAX_CHUNK_ENTRIES: u64 = 1 << 18;

/// Most chunks one snapshot may have (every chunk but the last holds at least
/// [`CHUNK_TARGET_BYTES`] or [`MAX_CHUNK_ENTRIES`], so at least 256 GiB of state, or 17
/// billion entries, before this bound is reached).
pub const MAX_CHUNKS: usize = 65_536;

/// Most bytes of chunks one snapshot may have (256 GiB). A joining node also refuses a
/// snapshot whose chunks and import would not fit its free disk space (`replica/snapshot_join.rs`).
pub const MAX_SNAPSHOT_BYTES: u64 = 256 << 30;

/// Fewest bytes one entry takes in a chunk: its two length prefixes.
pub const MIN_ENTRY_BYTES: u64 = 8;

/// Largest `manifest.json` a joining node accepts (about 100 bytes per chunk).
pub const MAX_MANIFEST_BYTES: usize = 8 << 20;

/// Largest `GET /v1/snapshots` answer a joining node accepts.
pub const MAX_LIST_BYTES: usize = 1 << 20;

/// [`Manifest::format`] of an LtHash chain's snapshot: entries in key order, no proofs.
pub const FORMAT_KEYS: u32 = 1;

/// [`Manifest::format`] of a sparse Merkle chain's snapshot: entries in key-hash order, each
/// chunk led by its proof.
pub const FORMAT_PROVEN: u32 = 2;

/// The snapshot format of a chain whose state commitment is `kind`.
pub fn format_of(kind: StateCommitment) -> u32 {
    match kind {
        StateCommitment::LtHash16 => FORMAT_KEYS,
        StateCommitment::SparseMerkle => FORMAT_PROVEN,
    }
}

/// One chunk as the manifest lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChunkInfo {
    /// Lowercase hex SHA-256 of the chunk file.
    pub sha256: String,
    /// Its length in bytes.
    pub bytes: u64,
    /// The entries it holds.
    pub entries: u64,
}

/// `manifest.json` of a snapshot, served as `GET /v1/snapshots/<height>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// [`FORMAT_KEYS`] or [`FORMAT_PROVEN`], by the chain's state commitment.
    pub format: u32,
    /// Lowercase hex genesis hash of the chain.
    pub genesis_hash: String,
    /// The height whose state this is (the state after that block).
    pub height: u64,
    /// Lowercase hex hash of that block's header.
    pub block_hash: String,
    /// Lowercase hex state root in that header.
    pub state_root: String,
    /// State entries, all chunks together.
    pub entries: u64,
    /// Bytes, all chunks together.
    pub bytes: u64,
    /// The chunks in order.
    pub chunks: Vec<ChunkInfo>,
}

impl Manifest {
    /// What `GET /v1/snapshots` says of this snapshot.
    pub fn summary(&self) -> SnapshotSummary {
        SnapshotSummary {
            height: self.height,
            block_hash: self.block_hash.clone(),
            state_root: self.state_root.clone(),
            entries: self.entries,
            bytes: self.bytes,
            chunks: self.chunks.len() as u64,
        }
    }

    /// Checks the shape a joining node relies on: the format of this chain's state commitment
    /// (`format`, [`format_of`]), the genesis, at most [`MAX_CHUNKS`] chunks each of at most
    /// [`MAX_CHUNK_BYTES`], 64-hex hashes, and totals that add up. Errors: what is wrong.
    pub fn check(&self, genesis_hash: &str, format: u32) -> Result<(), String> {
        if self.format != format {
            return Err(format!(
                "format {} (this chain's snapshots are format {format})",
                self.format
            ));
        }
        if self.genesis_hash != genesis_hash {
            return Err(format!(
                "it is of the chain of genesis {}, not {genesis_hash}",
                self.genesis_hash
            ));
        }
        if self.chunks.is_empty() || self.chunks.len() > MAX_CHUNKS {
            return Err(format!("{} chunks (1 to {MAX_CHUNKS})", self.chunks.len()));
        }
        let hex64 =
            |s: &str| s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if !hex64(&self.block_hash) || !hex64(&self.state_root) {
            return Err("block_hash and state_root must be 64 lowercase hex characters".into());
        }
        let (mut bytes, mut entries) = (0u64, 0u64);
        for (i, c) in self.chunks.iter().enumerate() {
            if !hex64(&c.sha256) {
                return Err(format!(
                    "chunk {i}: sha256 is not 64 lowercase hex characters"
                ));
            }
            if c.bytes == 0 || c.bytes > MAX_CHUNK_BYTES as u64 || c.entries == 0 {
                return Err(format!(
                    "chunk {i}: {} bytes, {} entries (1 to {MAX_CHUNK_BYTES} bytes, at least one entry)",
                    c.bytes, c.entries
                ));
            }
            if c.entries > c.bytes / MIN_ENTRY_BYTES {
                return Err(format!(
                    "chunk {i}: {} entries cannot fit in {} bytes ({MIN_ENTRY_BYTES} bytes each at least)",
                    c.entries, c.bytes
                ));
            }
            if c.entries > MAX_CHUNK_ENTRIES {
                return Err(format!(
                    "chunk {i}: {} entries (at most {MAX_CHUNK_ENTRIES})",
                    c.entries
                ));
            }
            // A chunk is closed once it holds the target or the most entries: only the last
            // may be smaller.
            if i + 1 < self.chunks.len()
                && c.bytes < CHUNK_TARGET_BYTES as u64
                && c.entries < MAX_CHUNK_ENTRIES
            {
                return Err(format!(
                    "chunk {i}: {} bytes and {} entries, but every chunk except the last holds at least {CHUNK_TARGET_BYTES} bytes or {MAX_CHUNK_ENTRIES} entries",
                    c.bytes, c.entries
                ));
            }
            bytes += c.bytes;
            entries += c.entries;
        }
        if bytes > MAX_SNAPSHOT_BYTES {
            return Err(format!(
                "{bytes} bytes of chunks (at most {MAX_SNAPSHOT_BYTES})"
            ));
        }
        if bytes != self.bytes || entries != self.entries {
            return Err(format!(
                "the chunks hold {bytes} bytes and {entries} entries, the manifest says {} and {}",
                self.bytes, self.entries
            ));
        }
        Ok(())
    }
}

/// One snapshot in `GET /v1/snapshots`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SnapshotSummary {
    /// Its height.
    pub height: u64,
    /// Lowercase hex hash of the block at that height.
    pub block_hash: String,
    /// Lowercase hex state root of that block.
    pub state_root: String,
    /// State entries.
    pub entries: u64,
    /// Bytes of all chunks.
    pub bytes: u64,
    /// Number of chunks.
    pub chunks: u64,
}

/// `GET /v1/snapshots`: the complete snapshots this node serves, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SnapshotList {
    /// Newest first.
    pub snapshots: Vec<SnapshotSummary>,
}

/// Appends one entry in the chunk encoding.
pub fn encode_entry(out: &mut Vec<u8>, key: &str, value: &[u8]) {
    out.extend_from_slice(&(key.len() as u32).to_le_bytes());
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(&(value.len() as u32).to_le_bytes());
    out.extend_from_slice(value);
}

/// The entries of a chunk, in order, at most `max` of them. Errors: a length that runs past the
/// end, a key that is not UTF-8, more than `max` entries (found before they are all decoded, so a
/// hostile chunk of tiny entries costs no more memory than `max` of them).
pub fn decode_chunk_at_most(data: &[u8], max: u64) -> Result<Vec<(&str, &[u8])>, String> {
    let cap = max.min(data.len() as u64 / MIN_ENTRY_BYTES) as usize;
    let mut out = Vec::with_capacity(cap.min(1 << 16));
    let mut rest = data;
    while !rest.is_empty() {
        if out.len() as u64 >= max {
            return Err(format!("more than {max} entries"));
        }
        let (entry, tail) = decode_entry(rest)?;
        out.push(entry);
        rest = tail;
    }
    Ok(out)
}

/// The first entry of `data` and what follows it.
fn decode_entry(mut data: &[u8]) -> Result<((&str, &[u8]), &[u8]), String> {
    fn take<'a>(data: &mut &'a [u8], n: usize) -> Result<&'a [u8], String> {
        if data.len() < n {
            return Err("an entry runs past the end of the chunk".into());
        }
        let (head, rest) = data.split_at(n);
        *data = rest;
        Ok(head)
    }
    fn len(data: &mut &[u8]) -> Result<usize, String> {
        let b = take(data, 4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    }
    let n = len(&mut data)?;
    let key =
        std::str::from_utf8(take(&mut data, n)?).map_err(|_| "a key is not UTF-8".to_string())?;
    let n = len(&mut data)?;
    let value = take(&mut data, n)?;
    Ok(((key, value), data))
}

/// The entries of a chunk, in order. Errors: a length that runs past the end, a key that is not
/// UTF-8.
pub fn decode_chunk(data: &[u8]) -> Result<Vec<(&str, &[u8])>, String> {
    decode_chunk_at_most(data, u64::MAX)
}

/// A chunk of `format` decoded: the proof's sibling hashes (none in [`FORMAT_KEYS`]) and at
/// most `max` entries, in order. Errors: as [`decode_chunk_at_most`], a proof that runs past
/// the end or has more than 256 hashes, an unknown format.
pub fn decode_chunk_of(
    format: u32,
    data: &[u8],
    max: u64,
) -> Result<(Vec<Hash>, Vec<(&str, &[u8])>), String> {
    let (siblings, entries) = match format {
        FORMAT_KEYS => (Vec::new(), data),
        FORMAT_PROVEN => {
            let n = match data {
                [a, b, ..] => u16::from_le_bytes([*a, *b]) as usize,
                _ => return Err("the chunk ends before its proof".into()),
            };
            if n > MAX_CHUNK_PROOF_DEPTH {
                return Err(format!(
                    "its proof has {n} hashes (at most {MAX_CHUNK_PROOF_DEPTH})"
                ));
            }
            let end = 2 + 32 * n;
            if data.len() < end {
                return Err("the chunk ends inside its proof".into());
            }
            let siblings = data[2..end]
                .chunks_exact(32)
                .map(|h| h.try_into().expect("32 bytes"))
                .collect();
            (siblings, &data[end..])
        }
        other => return Err(format!("unknown snapshot format {other}")),
    };
    Ok((siblings, decode_chunk_at_most(entries, max)?))
}

/// The order of a snapshot's entries, checked one key at a time: strictly ascending key bytes
/// ([`FORMAT_KEYS`]) or SHA-256 of the key ([`FORMAT_PROVEN`]), so each key comes once.
#[derive(Debug, Default)]
pub struct KeyOrder {
    proven: bool,
    last_key: Option<String>,
    last_hash: Option<Hash>,
}

impl KeyOrder {
    /// The order of `format`.
    pub fn new(format: u32) -> Self {
        KeyOrder {
            proven: format == FORMAT_PROVEN,
            ..KeyOrder::default()
        }
    }

    /// Takes the next key. Errors: it does not come after the one before (named).
    pub fn next(&mut self, key: &str) -> Result<(), String> {
        let ascends = if self.proven {
            let h = key_hash(key);
            let ok = self.last_hash.is_none_or(|l| l < h);
            self.last_hash = Some(h);
            ok
        } else {
            self.last_key.as_deref().is_none_or(|l| l < key)
        };
        let before = self.last_key.replace(key.to_string()).unwrap_or_default();
        if ascends {
            Ok(())
        } else if self.proven {
            Err(format!(
                "key `{key}` does not come after `{before}` (keys ascend by SHA-256, each once)"
            ))
        } else {
            Err(format!(
                "key `{key}` does not come after `{before}` (keys must ascend, each once)"
            ))
        }
    }
}

/// Lowercase hex SHA-256 of `data`.
pub fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

/// The snapshots of one data directory: where they live, when to take one, how many to keep.
#[derive(Debug)]
pub struct Snapshots {
    dir: PathBuf,
    every: u64,
    keep: usize,
    genesis_hash: String,
    /// The format this chain's snapshots are written in and served ([`format_of`]).
    format: u32,
    /// A snapshot is being written.
    busy: Arc<AtomicBool>,
    /// The height of the newest snapshot taken (or found at start).
    last: AtomicU64,
}

/// `<data>/snapshots`.
pub fn snapshots_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("snapshots")
}

fn io(what: impl std::fmt::Display, e: std::io::Error) -> StorageError {
    StorageError::Io(format!("{what}: {e}"))
}

impl Snapshots {
    /// The snapshots under `<data_dir>/snapshots` of a chain whose state commitment is `kind`,
    /// taken every `every` blocks (0: never), the newest `keep` kept. Deletes unfinished
    /// `.tmp-*` directories left by a crash.
    pub fn new(
        data_dir: &Path,
        every: u64,
        keep: usize,
        genesis_hash: &str,
        kind: StateCommitment,
    ) -> Snapshots {
        let dir = snapshots_dir(data_dir);
        if let Ok(read) = std::fs::read_dir(&dir) {
            for e in read.flatten() {
                if e.file_name().to_string_lossy().starts_with(".tmp-") {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
        let s = Snapshots {
            dir,
            every,
            keep: keep.max(1),
            genesis_hash: genesis_hash.to_string(),
            format: format_of(kind),
            busy: Arc::new(AtomicBool::new(false)),
            last: AtomicU64::new(0),
        };
        if let Some(&newest) = s.heights().first() {
            s.last.store(newest, Ordering::Relaxed);
        }
        s
    }

    /// The heights of the complete snapshots on disk, newest first.
    pub fn heights(&self) -> Vec<u64> {
        snapshot_heights(&self.dir)
    }

    /// The directory of the snapshot at `height`.
    pub fn path(&self, height: u64) -> PathBuf {
        self.dir.join(height.to_string())
    }

    /// The manifest of the snapshot at `height`, `None` when there is none (or it is unreadable).
    pub fn manifest(&self, height: u64) -> Option<Manifest> {
        let bytes = std::fs::read(self.path(height).join("manifest.json")).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// `GET /v1/snapshots`: the complete snapshots in this chain's format. (One written in the
    /// other format, by an earlier build of a chain with proofs, is kept, as the base `verify
    /// --data` may start from, but not listed: a joining node would refuse it.)
    pub fn list(&self) -> SnapshotList {
        SnapshotList {
            snapshots: self
                .heights()
                .into_iter()
                .filter_map(|h| self.manifest(h))
                .filter(|m| m.format == self.format)
                .map(|m| m.summary())
                .collect(),
        }
    }

    /// Chunk `index` of the snapshot at `height`, opened, and its length; `None` when there is
    /// none. (The API streams it from the open file, so a snapshot deleted meanwhile is still
    /// served whole.)
    pub fn open_chunk(&self, height: u64, index: u64) -> Option<(std::fs::File, u64)> {
        let manifest = self.manifest(height)?;
        if index >= manifest.chunks.len() as u64 {
            return None;
        }
        let file = std::fs::File::open(self.path(height).join(chunk_name(index))).ok()?;
        let len = file.metadata().ok()?.len();
        Some((file, len))
    }

    /// Called by the commit path after the commit of a run of blocks ending at `height` (the
    /// database's head now, and until the next commit): when a multiple of `every` was reached
    /// since the last snapshot, `eligible()` says the head may be snapshotted (on a chain with
    /// validators: it carries its own finality certificate, without which no node can join from
    /// it; else the next commit asks again) and none is being written, opens a read transaction
    /// on the database at `db_path` now and writes the snapshot from it on a thread of its own.
    /// `tree()` is the head's sparse Merkle tree on a chain with proofs (a shared copy, one
    /// reference count), `None` on an LtHash chain: it picks the format ([`write_snapshot`]).
    /// Failures are logged, never returned: a snapshot is a service, not part of the commit.
    pub fn after_commit(
        &self,
        db_path: &Path,
        height: u64,
        eligible: impl FnOnce() -> bool,
        tree: impl FnOnce() -> Option<SparseMerkleTree>,
    ) {
        if self.every == 0 {
            return;
        }
        let last = self.last.load(Ordering::Relaxed);
        if height / self.every <= last / self.every {
            return;
        }
        if !eligible() {
            tracing::debug!(
                height,
                "no snapshot at this head: it has no finality certificate of its own (the next \
                 certified head is taken)"
            );
            return;
        }
        if self.busy.swap(true, Ordering::AcqRel) {
            tracing::warn!(
                height,
                "skipping a snapshot: the one before is still being written"
            );
            self.last.store(height, Ordering::Relaxed);
            return;
        }
        self.last.store(height, Ordering::Relaxed);
        let reader = match Storage::open_reader(db_path).and_then(|r| {
            r.begin_snapshot()?;
            Ok(r)
        }) {
            Ok(r) => r,
            Err(e) => {
                tracing::error!(height, "cannot open the database for a snapshot: {e}");
                self.busy.store(false, Ordering::Release);
                return;
            }
        };
        let (dir, keep, genesis_hash, busy, tree) = (
            self.dir.clone(),
            self.keep,
            self.genesis_hash.clone(),
            self.busy.clone(),
            tree(),
        );
        let spawned = std::thread::Builder::new()
            .name("snapshot".into())
            .spawn(move || {
                let started = std::time::Instant::now();
                match write_snapshot(&reader, &dir, height, &genesis_hash, tree.as_ref()) {
                    Ok(m) => {
                        tracing::info!(
                            height,
                            entries = m.entries,
                            bytes = m.bytes,
                            chunks = m.chunks.len(),
                            ms = started.elapsed().as_millis() as u64,
                            "state snapshot written"
                        );
                        prune_snapshots(&dir, keep);
                    }
                    Err(e) => tracing::error!(height, "writing a state snapshot failed: {e}"),
                }
                let _ = reader.end_snapshot();
                drop(reader);
                busy.store(false, Ordering::Release);
            });
        if let Err(e) = spawned {
            tracing::error!(height, "cannot start the snapshot thread: {e}");
            self.busy.store(false, Ordering::Release);
        }
    }

    /// Whether a snapshot is being written now (tests wait on it).
    pub fn busy(&self) -> bool {
        self.busy.load(Ordering::Acquire)
    }
}

/// The heights of the complete snapshots in `dir` (a `<data>/snapshots`), newest first.
pub fn snapshot_heights(dir: &Path) -> Vec<u64> {
    let mut out: Vec<u64> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let h: u64 = name.parse().ok()?;
            (h.to_string() == name && e.path().join("manifest.json").is_file()).then_some(h)
        })
        .collect();
    out.sort_unstable_by(|a, b| b.cmp(a));
    out
}

/// `chunk-<index>`, six digits at least.
pub fn chunk_name(index: u64) -> String {
    format!("chunk-{index:06}")
}

/// Deletes every complete snapshot under `dir` but the newest `keep`.
fn prune_snapshots(dir: &Path, keep: usize) {
    let mut heights: Vec<u64> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok()?.parse().ok())
        .collect();
    heights.sort_unstable_by(|a, b| b.cmp(a));
    for old in heights.into_iter().skip(keep) {
        let path = dir.join(old.to_string());
        match std::fs::remove_dir_all(&path) {
            Ok(()) => tracing::info!(height = old, "old state snapshot deleted"),
            Err(e) => tracing::warn!(path = %path.display(), "cannot delete an old snapshot: {e}"),
        }
    }
}

fn fsync_dir(path: &Path) -> Result<(), StorageError> {
    std::fs::File::open(path)
        .and_then(|d| d.sync_all())
        .map_err(|e| io(path.display(), e))
}

/// The chunk files of a snapshot being written, one at a time.
struct ChunkWriter<'a> {
    tmp: &'a Path,
    /// The state's tree on a sparse Merkle chain: each chunk is led by its last entry's proof.
    tree: Option<&'a SparseMerkleTree>,
    chunks: Vec<ChunkInfo>,
    buf: Vec<u8>,
    entries: u64,
    last_key: String,
}

impl ChunkWriter<'_> {
    /// Adds one entry; closes the chunk once it holds [`CHUNK_TARGET_BYTES`] or
    /// [`MAX_CHUNK_ENTRIES`].
    fn push(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        let size = 8 + key.len() + value.len();
        if size > MAX_ENTRY_BYTES {
            return Err(StorageError::Corrupt(format!(
                "state entry `{key}` is {size} bytes, over {MAX_ENTRY_BYTES}"
            )));
        }
        encode_entry(&mut self.buf, key, value);
        self.entries += 1;
        if self.tree.is_some() {
            self.last_key.clear();
            self.last_key.push_str(key);
        }
        if self.buf.len() >= CHUNK_TARGET_BYTES || self.entries >= MAX_CHUNK_ENTRIES {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes the open chunk (none when empty), fsynced.
    fn flush(&mut self) -> Result<(), StorageError> {
        if self.buf.is_empty() {
            return Ok(());
        }
        if self.chunks.len() >= MAX_CHUNKS {
            return Err(StorageError::Corrupt(format!(
                "the state needs more than {MAX_CHUNKS} chunks"
            )));
        }
        let mut file = Vec::with_capacity(self.buf.len() + MAX_CHUNK_PROOF_BYTES);
        if let Some(tree) = self.tree {
            let siblings = tree.prove(&self.last_key).siblings;
            file.extend_from_slice(&(siblings.len() as u16).to_le_bytes());
            for s in &siblings {
                file.extend_from_slice(s);
            }
        }
        file.extend_from_slice(&self.buf);
        let path = self.tmp.join(chunk_name(self.chunks.len() as u64));
        let mut f = std::fs::File::create(&path).map_err(|e| io(path.display(), e))?;
        f.write_all(&file)
            .and_then(|()| f.sync_all())
            .map_err(|e| io(path.display(), e))?;
        self.chunks.push(ChunkInfo {
            sha256: sha256_hex(&file),
            bytes: file.len() as u64,
            entries: self.entries,
        });
        self.buf.clear();
        self.entries = 0;
        Ok(())
    }
}

/// Writes the state `reader` reads (a connection inside a read transaction whose head is block
/// `height`) as the snapshot `<dir>/<height>/`: [`FORMAT_PROVEN`] when `tree` is the state's
/// sparse Merkle tree (a chain with proofs; its root must be the block's), else [`FORMAT_KEYS`].
/// On a sparse Merkle chain the keys (and their hashes, about 100 bytes per entry) are held
/// in memory to be sorted by path, and each value is then read by key. Errors: the database's
/// head is not `height`, the tree is not of that state, SQLite failed, a file could not be
/// written, an entry over [`MAX_ENTRY_BYTES`].
pub fn write_snapshot(
    reader: &Storage,
    dir: &Path,
    height: u64,
    genesis_hash: &str,
    tree: Option<&SparseMerkleTree>,
) -> Result<Manifest, StorageError> {
    let head = reader
        .head_height()?
        .ok_or_else(|| StorageError::Corrupt("no block stored".into()))?;
    if head != height {
        return Err(StorageError::Corrupt(format!(
            "the database's head is {head}, not the snapshot's height {height}"
        )));
    }
    let header = reader
        .signed_header(height)?
        .ok_or_else(|| StorageError::Corrupt(format!("no block {height}")))?;
    if let Some(tree) = tree {
        if tree.root() != header.header.state_root {
            return Err(StorageError::Corrupt(format!(
                "the state tree given is not block {height}'s state"
            )));
        }
    }
    let tmp = dir.join(format!(".tmp-{height}"));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(|e| io(tmp.display(), e))?;
    let mut chunks = ChunkWriter {
        tmp: &tmp,
        tree,
        chunks: Vec::new(),
        buf: Vec::with_capacity(CHUNK_TARGET_BYTES + 4096),
        entries: 0,
        last_key: String::new(),
    };
    match tree {
        None => reader.for_each_state_entry(|key, value| chunks.push(key, value))?,
        Some(tree) => {
            let mut keys: Vec<(Hash, String)> = Vec::with_capacity(tree.len() as usize);
            reader.for_each_state_key(|key| {
                keys.push((key_hash(key), key.to_string()));
                Ok(())
            })?;
            if keys.len() as u64 != tree.len() {
                return Err(StorageError::Corrupt(format!(
                    "the database holds {} state entries, the state tree {}",
                    keys.len(),
                    tree.len()
                )));
            }
            keys.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            for (_, key) in &keys {
                let value = reader
                    .state_get(key)?
                    .ok_or_else(|| StorageError::Corrupt(format!("state key `{key}` vanished")))?;
                chunks.push(key, &value)?;
            }
        }
    }
    chunks.flush()?;
    let chunks = chunks.chunks;
    let manifest = Manifest {
        format: if tree.is_some() {
            FORMAT_PROVEN
        } else {
            FORMAT_KEYS
        },
        genesis_hash: genesis_hash.to_string(),
        height,
        block_hash: header.header.hash_hex(),
        state_root: hex::encode(header.header.state_root),
        entries: chunks.iter().map(|c| c.entries).sum(),
        bytes: chunks.iter().map(|c| c.bytes).sum(),
        chunks,
    };
    write_manifest(&tmp, &manifest)?;
    let done = dir.join(height.to_string());
    let _ = std::fs::remove_dir_all(&done);
    std::fs::rename(&tmp, &done).map_err(|e| io(done.display(), e))?;
    fsync_dir(dir)?;
    Ok(manifest)
}

/// Writes `<dir>/manifest.json` and fsyncs it and `dir`.
pub fn write_manifest(dir: &Path, manifest: &Manifest) -> Result<(), StorageError> {
    let path = dir.join("manifest.json");
    let json = serde_json::to_vec_pretty(manifest).expect("a manifest serialises");
    std::fs::File::create(&path)
        .and_then(|mut f| f.write_all(&json).and_then(|()| f.sync_all()))
        .map_err(|e| io(path.display(), e))?;
    fsync_dir(dir)
}

/// The whole state a complete snapshot directory holds, in memory, every chunk checked against
/// its manifest (hash, entry count, keys ascending). Errors: what is missing or does not check.
pub fn load_snapshot(dir: &Path) -> Result<gamechain_runtime::MemState, String> {
    let bytes = std::fs::read(dir.join("manifest.json")).map_err(|e| format!("manifest: {e}"))?;
    let manifest: Manifest =
        serde_json::from_slice(&bytes).map_err(|e| format!("manifest: {e}"))?;
    let mut state = gamechain_runtime::MemState::new();
    let mut order = KeyOrder::new(manifest.format);
    for (i, info) in manifest.chunks.iter().enumerate() {
        let bytes =
            std::fs::read(dir.join(chunk_name(i as u64))).map_err(|e| format!("chunk {i}: {e}"))?;
        if sha256_hex(&bytes) != info.sha256 {
            return Err(format!("chunk {i} does not hash to its manifest's SHA-256"));
        }
        let (_, entries) = decode_chunk_of(manifest.format, &bytes, info.entries)
            .map_err(|e| format!("chunk {i}: {e}"))?;
        if entries.len() as u64 != info.entries {
            return Err(format!("chunk {i}: not the manifest's entry count"));
        }
        for (k, v) in entries {
            order.next(k).map_err(|e| format!("chunk {i}: {e}"))?;
            state.map.insert(k.to_string(), v.to_vec());
        }
    }
    Ok(state)
}

/// Tidies `<data>/snapshots` of a directory whose chain is stored, its oldest block at
/// `oldest`: a join that committed but stopped before its chunks were moved into place gets
/// them moved now (the base `verify --data` starts from); any other `.join-*` is deleted.
pub fn tidy_joins(data_dir: &Path, oldest: u64) {
    for earlier in earlier_joins(data_dir) {
        let done = snapshots_dir(data_dir).join(oldest.to_string());
        if earlier == join_dir(data_dir, oldest) && !done.exists() {
            if let Err(e) = std::fs::rename(&earlier, &done) {
                tracing::warn!(dir = %earlier.display(), "cannot move the joined snapshot into place: {e}");
            }
        } else {
            let _ = std::fs::remove_dir_all(&earlier);
        }
    }
}

/// The directory a join in progress keeps its chunks in.
pub fn join_dir(data_dir: &Path, height: u64) -> PathBuf {
    snapshots_dir(data_dir).join(format!(".join-{height}"))
}

/// The `.join-*` directories under `<data>/snapshots` (from an earlier start).
pub fn earlier_joins(data_dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(snapshots_dir(data_dir))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".join-"))
        .map(|e| e.path())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_truncation_is_refused() {
        let mut buf = Vec::new();
        encode_entry(&mut buf, "a", b"1");
        encode_entry(&mut buf, "é/b", b"");
        encode_entry(&mut buf, "", &[0, 255]);
        let got = decode_chunk(&buf).unwrap();
        assert_eq!(
            got,
            vec![("a", &b"1"[..]), ("é/b", &b""[..]), ("", &[0u8, 255][..])]
        );
        for cut in 1..buf.len() {
            if decode_chunk(&buf[..cut]).is_ok() {
                // Only cuts at an entry's end decode.
                assert!([10, 10 + 8 + "é/b".len()].contains(&cut), "cut {cut}");
            }
        }
        let mut bad = Vec::new();
        bad.extend_from_slice(&1u32.to_le_bytes());
        bad.push(0xff);
        bad.extend_from_slice(&0u32.to_le_bytes());
        assert!(decode_chunk(&bad).is_err());
        // A length far past the end.
        assert!(decode_chunk(&u32::MAX.to_le_bytes()).is_err());
    }

    /// A head that may not be snapshotted (on a chain with validators: no certificate of its
    /// own) is skipped without using up its multiple: the next eligible head is taken.
    #[test]
    fn an_ineligible_head_is_skipped_and_the_next_one_asked() {
        let tmp = tempfile::tempdir().unwrap();
        let s = Snapshots::new(tmp.path(), 5, 2, "g", StateCommitment::LtHash16);
        let db = tmp.path().join("none.sqlite");
        s.after_commit(&db, 4, || panic!("not due: not asked"), || None);
        let mut asked = Vec::new();
        for h in [5, 6, 7] {
            s.after_commit(
                &db,
                h,
                || {
                    asked.push(h);
                    false
                },
                || None,
            );
        }
        assert_eq!(asked, [5, 6, 7]);
        assert_eq!(s.last.load(Ordering::Relaxed), 0);
        // Eligible: taken (here the database cannot be opened: logged, and the multiple used).
        s.after_commit(&db, 8, || true, || None);
        assert_eq!(s.last.load(Ordering::Relaxed), 8);
        s.after_commit(&db, 9, || panic!("this multiple is done"), || None);
    }

    fn manifest() -> Manifest {
        Manifest {
            format: FORMAT_KEYS,
            genesis_hash: "g".into(),
            height: 5,
            block_hash: "a".repeat(64),
            state_root: "b".repeat(64),
            entries: 3,
            bytes: CHUNK_TARGET_BYTES as u64 + 10,
            chunks: vec![
                ChunkInfo {
                    sha256: "c".repeat(64),
                    bytes: CHUNK_TARGET_BYTES as u64,
                    entries: 2,
                },
                ChunkInfo {
                    sha256: "d".repeat(64),
                    bytes: 10,
                    entries: 1,
                },
            ],
        }
    }

    #[test]
    fn a_manifest_out_of_bounds_or_not_adding_up_is_refused() {
        assert_eq!(manifest().check("g", FORMAT_KEYS), Ok(()));
        assert!(manifest()
            .check("h", FORMAT_KEYS)
            .unwrap_err()
            .contains("genesis"));
        let mut m = manifest();
        m.entries = 4;
        assert!(m
            .check("g", FORMAT_KEYS)
            .unwrap_err()
            .contains("the manifest says"));
        let mut m = manifest();
        m.chunks[0].bytes = MAX_CHUNK_BYTES as u64 + 1;
        m.bytes = m.chunks.iter().map(|c| c.bytes).sum();
        assert!(m.check("g", FORMAT_KEYS).unwrap_err().contains("chunk 0"));
        let mut m = manifest();
        m.chunks = vec![m.chunks[0].clone(); MAX_CHUNKS + 1];
        assert!(m.check("g", FORMAT_KEYS).unwrap_err().contains("chunks"));
        let mut m = manifest();
        m.chunks[1].sha256 = "D".repeat(64);
        assert!(m.check("g", FORMAT_KEYS).unwrap_err().contains("chunk 1"));
        let mut m = manifest();
        m.format = 2;
        assert!(m.check("g", FORMAT_KEYS).unwrap_err().contains("format"));
        // More entries than the bytes can hold.
        let mut m = manifest();
        m.chunks[1].entries = 2;
        m.entries = 4;
        assert!(m
            .check("g", FORMAT_KEYS)
            .unwrap_err()
            .contains("cannot fit"));
        // More entries than a chunk may hold (a lying peer's tiny entries), and a chunk closed
        // at that count before reaching the byte target (honest).
        let mut m = manifest();
        m.chunks[0].entries = MAX_CHUNK_ENTRIES + 1;
        m.entries = MAX_CHUNK_ENTRIES + 2;
        assert!(m
            .check("g", FORMAT_KEYS)
            .unwrap_err()
            .contains("at most 262144"));
        let mut m = manifest();
        m.chunks[0].bytes = 12 * MAX_CHUNK_ENTRIES;
        m.chunks[0].entries = MAX_CHUNK_ENTRIES;
        m.bytes = m.chunks[0].bytes + 10;
        m.entries = MAX_CHUNK_ENTRIES + 1;
        assert_eq!(m.check("g", FORMAT_KEYS), Ok(()));
        // A small chunk before the last: a peer padding the count of chunks.
        let mut m = manifest();
        m.chunks[0].bytes = 20;
        m.bytes = 30;
        assert!(m
            .check("g", FORMAT_KEYS)
            .unwrap_err()
            .contains("every chunk except the last"));
        // Over the total bound.
        let mut m = manifest();
        let n = (MAX_SNAPSHOT_BYTES / MAX_CHUNK_BYTES as u64) as usize + 1;
        m.chunks = vec![
            ChunkInfo {
                sha256: "c".repeat(64),
                bytes: MAX_CHUNK_BYTES as u64,
                entries: 1,
            };
            n
        ];
        m.bytes = m.chunks.iter().map(|c| c.bytes).sum();
        m.entries = n as u64;
        assert!(m.check("g", FORMAT_KEYS).unwrap_err().contains("at most"));
    }

    #[test]
    fn a_chunk_with_more_entries_than_its_manifest_says_stops_at_the_bound() {
        let mut buf = Vec::new();
        for i in 0..1000 {
            encode_entry(&mut buf, &format!("k{i:04}"), b"");
        }
        assert_eq!(decode_chunk_at_most(&buf, 1000).unwrap().len(), 1000);
        assert_eq!(
            decode_chunk_at_most(&buf, 999).unwrap_err(),
            "more than 999 entries"
        );
    }
}
