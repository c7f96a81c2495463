//! `gamechain node --follow URL --snapshot-from PEER`: a new follower's data directory started
//! from the newest state snapshot `PEER` serves (`node/ledger/src/store/snapshot.rs`) instead of replaying the
//! chain from genesis. Then it follows `URL` from that height like any follower.
//!
//! `gamechain node --validator --snapshot-from PEER` does the same for a new validator
//! (`node/ledger/src/start/genesis_setup.rs`, `join_validator`), its genesis from its own `genesis.json`; its
//! consensus then starts from the snapshot block's own finality certificate, the record this
//! join stores (`validator/run.rs`, `validator/engine.rs`, `EngineStart::Floor`).
//!
//! What is trusted: only the genesis (the followed node's, or `<data>/genesis.json` placed
//! beforehand) and what it names. The peer is hostile until checked:
//!
//! 1. `GET /v1/snapshots` (at most [`MAX_LIST_BYTES`]) names the newest snapshot;
//!    `GET /v1/snapshots/<height>` its manifest (at most [`MAX_MANIFEST_BYTES`], checked by
//!    [`Manifest::check`]: this chain, at most [`MAX_CHUNKS`] chunks of at most
//!    [`MAX_CHUNK_BYTES`] each).
//! 2. The block at that height (`GET /v1/blocks/<height>`) must be the manifest's (hash, state
//!    root), signed by the genesis sequencer, or on a chain with validators by a validator of
//!    the set *and* certified: its finality record's certificate must verify against the set,
//!    and its digest must be the block's, chained from the parent digest the peer names (the
//!    digest commits to the header, so no other header passes). Its transactions and receipts
//!    must give its header's `tx_root` and `receipt_root`, and pass their stateless checks.
//!    On a chain without validators (whose header names no chain) the block must also descend
//!    from this genesis's block 0, computed here: the peer's headers below it
//!    (`GET /v1/headers`) must chain to it hash by hash (`header_chain.rs`); they are stored
//!    with the chain so that this node can serve the same proof. When the node follows another
//!    URL than the peer, the followed node's block at that height must be the same block (a
//!    sequencer that signed two is caught).
//! 3. Each chunk (`GET /v1/snapshots/<height>/chunks/<i>`, read up to the manifest's length and
//!    no further) must hash to the manifest's SHA-256. On a chain with proofs (a sparse Merkle
//!    state root) it must also check against the block's state root on its own, before it is
//!    kept ([`ChunkVerifier`]: its last entry's proof leads to the root, and every entry up to
//!    it, with the chunks before, is exactly the state's up to there). A peer serving a false
//!    chunk is caught at that chunk, not after the whole state has been fetched. It is written
//!    to `<data>/snapshots/.join-<height>/` (fsynced, renamed into place).
//! 4. All chunks in hand, one SQLite transaction imports them ([`Storage::import_base`]):
//!    entries must decode, keys ascend strictly across the whole snapshot (by key, or on a
//!    chain with proofs by SHA-256 of the key, so the state is a set), each chunk holds the
//!    entries the manifest says, and the commitment of all entries must be the block's state
//!    root (on an LtHash chain the only check of the entries). Only then are the block, the
//!    chain's identity and the state committed; the directory becomes
//!    `<data>/snapshots/<height>/`, a snapshot this node serves in turn and the base
//!    `gamechain verify --data` starts from.
//!
//! A peer that lies is named with what it lied about (a chunk's hash, an entry, the root) and
//! nothing of its state is committed. A download cut short (the peer gone, the process killed)
//! resumes at the next start: chunks already on disk are checked again (against the root too,
//! in order) and kept; a peer that
//! now offers another snapshot (the old one rotated out) starts the download over. A crash
//! during the import leaves the database without a chain (the transaction is not committed),
//! and the next start imports again from the chunks on disk.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use gamechain_chain::wire::headers::{
    decode_headers, MAX_HEADERS_BODY_BYTES, MAX_HEADERS_PER_REQUEST,
};
use gamechain_chain::wire::Block;
use gamechain_client::client::{BlockRef, Client};
use gamechain_runtime::chain::{
    receipt_root, tx_root, Header, Receipt, StateCommitment, StateHash,
};
use gamechain_runtime::{genesis_state, ChainContext};

use crate::proof::digest::proposal_digest;
use crate::proof::finality::FinalityChecker;
use crate::replica::header_chain::{DescentCheck, HeaderFile, OldHeader};
use crate::verify::replay::check_block;
use crate::verify::source::Finality;
use gamechain_chain::state_root::sparse_merkle::{key_hash, value_hash};
use gamechain_chain::state_root::ChunkVerifier;
use gamechain_ledger::genesis_setup::SnapshotJoin;
use gamechain_ledger::snapshot::{
    chunk_name, decode_chunk_of, earlier_joins, format_of, join_dir, sha256_hex, snapshots_dir,
    write_manifest, KeyOrder, Manifest, SnapshotList, FORMAT_PROVEN, MAX_CHUNKS, MAX_CHUNK_BYTES,
    MAX_LIST_BYTES, MAX_MANIFEST_BYTES,
};
use gamechain_ledger::storage::{BaseFinality, Storage, StorageError};
use gamechain_ledger::NodeError;

/// Attempts for one request that fails on the way (transport error, `429`, `5xx`) before the
/// join gives up (the next start resumes).
pub const ATTEMPTS: u32 = 6;

/// Longest one request may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

fn refused(m: impl Into<String>) -> NodeError {
    NodeError::Refused(m.into())
}

/// What the join did, for the log and the caller.
#[derive(Debug, Clone)]
pub struct Joined {
    /// The snapshot's height: the new node's first block.
    pub height: u64,
    /// State entries imported.
    pub entries: u64,
    /// Chunks fetched now (the others were on disk from an earlier start).
    pub fetched: usize,
}

/// The peer a snapshot comes from.
struct Peer {
    client: Client,
    http: reqwest::Client,
}

impl Peer {
    /// GET `path` (segments) and its body, at most `max` bytes, retrying transport errors,
    /// `429` and `5xx` up to [`ATTEMPTS`] times. Errors: [`Failed::Lied`] for a body over
    /// `max`; [`Failed::Unavailable`] for the last failure, or another status (its text).
    async fn get(&self, path: &[&str], max: usize) -> Result<Vec<u8>, Failed> {
        self.get_url(self.client.url(path), max).await
    }

    /// [`Peer::get`] of a whole URL (one with a query).
    async fn get_url(&self, url: reqwest::Url, max: usize) -> Result<Vec<u8>, Failed> {
        let mut wait = Duration::from_millis(200);
        let mut attempt = 1;
        loop {
            let result = self.get_once(&url, max).await;
            match result {
                Ok(bytes) => return Ok(bytes),
                Err((retry, e)) if retry && attempt < ATTEMPTS => {
                    tracing::warn!(%url, attempt, "snapshot request failed, trying again: {e}");
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(Duration::from_secs(5));
                    attempt += 1;
                }
                Err((_, e)) if e.starts_with(OVER) => {
                    return Err(Failed::Lied(format!("{url}: {e}")))
                }
                Err((_, e)) => return Err(Failed::Unavailable(format!("{url}: {e}"))),
            }
        }
    }

    /// One GET; the error says whether it is worth another try.
    async fn get_once(&self, url: &reqwest::Url, max: usize) -> Result<Vec<u8>, (bool, String)> {
        let mut response = self
            .http
            .get(url.clone())
            .send()
            .await
            .map_err(|e| (true, e.to_string()))?;
        let status = response.status();
        if !status.is_success() {
            let retry =
                status == reqwest::StatusCode::TOO_MANY_REQUESTS || status.is_server_error();
            let mut text = Vec::new();
            while let Ok(Some(c)) = response.chunk().await {
                text.extend_from_slice(&c);
                if text.len() > 4096 {
                    break;
                }
            }
            text.truncate(4096);
            return Err((
                retry,
                format!("HTTP {status}: {}", String::from_utf8_lossy(&text)),
            ));
        }
        if response.content_length().is_some_and(|n| n > max as u64) {
            return Err((false, format!("{OVER} {max} bytes")));
        }
        let mut body = Vec::new();
        while let Some(c) = response.chunk().await.map_err(|e| (true, e.to_string()))? {
            if body.len() + c.len() > max {
                return Err((false, format!("{OVER} {max} bytes")));
            }
            body.extend_from_slice(&c);
        }
        Ok(body)
    }
}

/// How [`Peer::get`] failed.
enum Failed {
    /// The peer sent more than it may (or said it would): it is refused.
    Lied(String),
    /// The peer could not be reached, or answered an error: the next start tries again.
    Unavailable(String),
}

/// The start of the text of an answer over its bound.
const OVER: &str = "the answer is over";

impl Failed {
    /// The join's error: a refusal naming the peer, or a runtime failure.
    fn into_error(self, liar: impl Fn(String) -> NodeError) -> NodeError {
        match self {
            Failed::Lied(e) => liar(e),
            Failed::Unavailable(e) => NodeError::Runtime(format!("the snapshot peer: {e}")),
        }
    }
}

fn io(path: &Path, e: std::io::Error) -> NodeError {
    NodeError::Io(format!("{}: {e}", path.display()))
}

/// Writes `bytes` to `path` through a temporary file, fsynced, renamed into place.
fn write_file(path: &Path, bytes: &[u8]) -> Result<(), NodeError> {
    use std::io::Write;
    let tmp = path.with_extension("part");
    std::fs::File::create(&tmp)
        .and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all()))
        .map_err(|e| io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| io(path, e))
}

/// The ledger's [`SnapshotJoin`] for a new validator's start with `--snapshot-from`:
/// [`join_from_snapshot`] on the async runtime the start runs in, the base bound to the chain
/// by its own finality certificate (no followed node).
pub struct SnapshotJoiner;

impl SnapshotJoin for SnapshotJoiner {
    fn join(
        &self,
        ctx: &ChainContext,
        storage: &mut Storage,
        data_dir: &Path,
        peer: &str,
        code: &BTreeMap<String, Vec<u8>>,
        genesis_hash: &str,
        engine_hash: &str,
    ) -> Result<u64, NodeError> {
        let rt = tokio::runtime::Handle::try_current().map_err(|_| {
            NodeError::Runtime("--snapshot-from: no async runtime to fetch the snapshot on".into())
        })?;
        // A validator chain's base is bound to the chain by its certificate.
        let joined = join_from_snapshot(
            ctx,
            storage,
            data_dir,
            peer,
            code,
            genesis_hash,
            engine_hash,
            None,
            &rt,
        )?;
        Ok(joined.height)
    }
}

/// Joins: makes the empty database `storage` the chain of `ctx`'s genesis at the newest
/// snapshot the node at `url` serves (module docs). `code` is the genesis modules' code (stored
/// with the chain), `genesis_hash` and `engine_config_hash` its identity; `rt` runs the HTTP
/// requests. Blocking. Errors: [`NodeError::Refused`] naming the peer and what it served that
/// does not check (nothing committed), the peer unreachable after [`ATTEMPTS`] (the chunks
/// fetched so far are kept for the next start), the disk or the database.
#[allow(clippy::too_many_arguments)]
pub fn join_from_snapshot(
    ctx: &ChainContext,
    storage: &mut Storage,
    data_dir: &Path,
    url: &str,
    code: &BTreeMap<String, Vec<u8>>,
    genesis_hash: &str,
    engine_config_hash: &str,
    followed: Option<&Client>,
    rt: &tokio::runtime::Handle,
) -> Result<Joined, NodeError> {
    let started = Instant::now();
    let peer = Peer {
        client: Client::new(url).map_err(|e| refused(format!("--snapshot-from {url}: {e}")))?,
        http: reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .build()
            .map_err(|e| NodeError::Runtime(format!("an HTTP client: {e}")))?,
    };
    let liar = |what: String| refused(format!("the snapshot served by {url} is refused: {what}"));

    // 1. The newest snapshot and its manifest.
    let list = rt
        .block_on(peer.get(&["v1", "snapshots"], MAX_LIST_BYTES))
        .map_err(|e| e.into_error(liar))?;
    let list: SnapshotList = serde_json::from_slice(&list)
        .map_err(|e| liar(format!("GET /v1/snapshots is not a snapshot list: {e}")))?;
    let Some(newest) = list.snapshots.iter().map(|s| s.height).max() else {
        return Err(refused(format!(
            "{url} serves no snapshot (its operator sets snapshot_every_blocks)"
        )));
    };
    let height_text = newest.to_string();
    let manifest_bytes = rt
        .block_on(peer.get(&["v1", "snapshots", &height_text], MAX_MANIFEST_BYTES))
        .map_err(|e| e.into_error(liar))?;
    let manifest: Manifest = serde_json::from_slice(&manifest_bytes)
        .map_err(|e| liar(format!("its manifest does not parse: {e}")))?;
    manifest
        .check(genesis_hash, format_of(ctx.genesis().state_commitment()))
        .map_err(|e| liar(format!("its manifest: {e}")))?;
    if manifest.height != newest {
        return Err(liar(format!(
            "asked for the manifest of {newest}, it answered {}'s",
            manifest.height
        )));
    }
    let height = manifest.height;
    // The headers below it travel too on a chain without validators (about 260 bytes each,
    // written to a file and then into the database: counted twice, as the chunks are).
    let header_bytes = if ctx.genesis().validators.is_none() {
        manifest.height.saturating_mul(300)
    } else {
        0
    };
    check_free_space(data_dir, manifest.bytes.saturating_add(header_bytes))?;

    // A download from an earlier start: kept when it is this very snapshot, else started over.
    let dir = join_dir(data_dir, height);
    for earlier in earlier_joins(data_dir) {
        let same = earlier == dir
            && std::fs::read(earlier.join("manifest.json"))
                .ok()
                .and_then(|b| serde_json::from_slice::<Manifest>(&b).ok())
                .is_some_and(|m| m == manifest);
        if !same {
            tracing::info!(dir = %earlier.display(), "the peer offers another snapshot now: starting the download over");
            std::fs::remove_dir_all(&earlier).map_err(|e| io(&earlier, e))?;
        }
    }
    std::fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
    write_manifest(&dir, &manifest).map_err(NodeError::from)?;
    tracing::info!(
        peer = url,
        height,
        entries = manifest.entries,
        bytes = manifest.bytes,
        chunks = manifest.chunks.len(),
        "joining from a state snapshot"
    );

    // 2. The block it is the state of: signed (or certified), and whole.
    let block = rt
        .block_on(peer.client.block(BlockRef::Height(height)))
        .map_err(|e| NodeError::Runtime(format!("{url}: block {height}: {e}")))?;
    let finality = check_base_block(ctx, &peer, &block, &manifest, genesis_hash, rt)
        .map_err(|e| liar(format!("block {height}: {e}")))?;
    // On a sequencer chain the header names no chain: a block the same sequencer key signed on
    // another chain (a relaunched testnet that kept its key) would pass the signature check.
    // Its descent from this genesis's block 0 binds it (`header_chain.rs`), whatever URLs were
    // given. (A certificate binds a validator chain's block: its namespace holds the chain id
    // and genesis hash.)
    let header_file = dir.join("headers");
    let old_headers = if ctx.genesis().validators.is_none() {
        let block0 = genesis_state(ctx.genesis(), code)
            .map_err(|e| refused(format!("this chain's block 0: {e}")))?
            .header
            .hash();
        let proven = prove_descent(&peer, block0, &block.header.header, &header_file, rt)
            .map_err(|e| e.into_error(|t| liar(format!("block {height}: {t}"))))?;
        tracing::info!(
            peer = url,
            headers = proven,
            "the snapshot's block descends from this genesis's block 0"
        );
        Some(header_file.clone())
    } else {
        None
    };
    // The followed node's block at that height, when it is another node: a sequencer that
    // signed two blocks at one height (a fork) is caught here.
    if let (None, Some(followed)) = (&ctx.genesis().validators, followed) {
        if followed.base_url() != peer.client.base_url() {
            let theirs = rt
                .block_on(followed.block(BlockRef::Height(height)))
                .map_err(|e| {
                    NodeError::Runtime(format!(
                        "the followed node's block {height}, to check the snapshot's against: {e}"
                    ))
                })?;
            if theirs.header.header.hash() != block.header.header.hash() {
                return Err(liar(format!(
                    "its block {height} is {}, the followed node's is {}: another chain, or a fork",
                    block.header.header.hash_hex(),
                    theirs.header.header.hash_hex()
                )));
            }
        }
    }
    let checked = check_block(ctx, block, ctx.verify_threads());
    let mut senders = Vec::with_capacity(checked.checks.len());
    for (i, c) in checked.checks.iter().enumerate() {
        match c {
            Ok(body) => senders.push((body.account(), body.nonce)),
            Err(e) => {
                return Err(liar(format!(
                    "block {height}: transaction {i} fails its checks: {e}"
                )))
            }
        }
    }

    // 3. The chunks: each checked against the manifest as it arrives, and on a sparse Merkle
    //    chain against the block's state root too; those on disk kept (and checked again, in
    //    order, so the root check runs over every chunk).
    let mut proven = (manifest.format == FORMAT_PROVEN)
        .then(|| ChunkVerifier::new(checked.block.header.header.state_root));
    let mut fetched = 0;
    for (i, info) in manifest.chunks.iter().enumerate() {
        let path = dir.join(chunk_name(i as u64));
        let on_disk = std::fs::read(&path)
            .ok()
            .filter(|bytes| sha256_hex(bytes) == info.sha256);
        let bytes = match on_disk {
            Some(bytes) => bytes,
            None => {
                let index = i.to_string();
                let bytes = rt
                    .block_on(peer.get(
                        &["v1", "snapshots", &height_text, "chunks", &index],
                        info.bytes as usize,
                    ))
                    .map_err(|e| e.into_error(|t| liar(format!("chunk {i}: {t}"))))?;
                let got = sha256_hex(&bytes);
                if got != info.sha256 {
                    return Err(liar(format!(
                        "chunk {i} hashes to {got}, its manifest says {}",
                        info.sha256
                    )));
                }
                if let Some(verifier) = &mut proven {
                    // Checked before it is kept: a false chunk is never written.
                    if let Err(e) = check_proven_chunk(verifier, &bytes, info.entries) {
                        return Err(liar(format!("chunk {i}: {e}")));
                    }
                }
                write_file(&path, &bytes)?;
                fetched += 1;
                if fetched % 16 == 0 {
                    tracing::info!(
                        chunk = i,
                        of = manifest.chunks.len(),
                        "snapshot chunks fetched"
                    );
                }
                continue;
            }
        };
        if let Some(verifier) = &mut proven {
            if let Err(e) = check_proven_chunk(verifier, &bytes, info.entries) {
                // It matched the manifest: the manifest itself is false. Nothing of it is kept.
                let _ = std::fs::remove_dir_all(&dir);
                return Err(liar(format!("chunk {i}: {e}")));
            }
        }
    }
    if let Some(verifier) = &proven {
        if let Err(e) = verifier.finish() {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(liar(format!("its last chunk: {e}")));
        }
    }

    // 4. The import: one transaction, checked against the block's state root.
    let mut headers: Box<dyn Iterator<Item = OldHeader>> = match &old_headers {
        Some(path) => {
            Box::new(crate::replica::header_chain::read_header_file(path).map_err(|e| io(path, e))?)
        }
        None => Box::new(std::iter::empty()),
    };
    let imported = storage.import_base(
        &checked.block,
        &senders,
        code,
        genesis_hash,
        engine_config_hash,
        finality.as_ref(),
        &mut headers,
        |insert| import_chunks(&dir, &manifest, ctx.genesis().state_commitment(), insert),
    )?;
    drop(headers);
    let _ = std::fs::remove_file(&header_file);
    if let Err(e) = imported {
        // Nothing of it is kept: the next start fetches the snapshot again (from whoever).
        let _ = std::fs::remove_dir_all(&dir);
        return Err(liar(e));
    }
    let done = snapshots_dir(data_dir).join(height.to_string());
    let _ = std::fs::remove_dir_all(&done);
    std::fs::rename(&dir, &done).map_err(|e| io(&done, e))?;
    tracing::info!(
        peer = url,
        height,
        entries = manifest.entries,
        fetched,
        block_time_ms = checked.block.header.header.time_ms,
        ms = started.elapsed().as_millis() as u64,
        "joined from a state snapshot: the chain continues from its height (block_time_ms: \
         the base block's time, Unix ms)"
    );
    Ok(Joined {
        height,
        entries: manifest.entries,
        fetched,
    })
}

/// Fetches the headers below `block` from the peer (`GET /v1/headers`, [`MAX_HEADERS_PER_REQUEST`]
/// at a time) and checks that they chain from `block0` (the hash of this genesis's block 0) up
/// to `block` ([`DescentCheck`]), writing those accepted to `path`. Returns how many it fetched.
/// Errors: [`Failed::Lied`] for headers that do not chain or an answer that is not headers,
/// [`Failed::Unavailable`] when the peer cannot be reached or keeps none.
fn prove_descent(
    peer: &Peer,
    block0: [u8; 32],
    block: &Header,
    path: &Path,
    rt: &tokio::runtime::Handle,
) -> Result<u64, Failed> {
    let unavailable = |e: std::io::Error| Failed::Unavailable(format!("{}: {e}", path.display()));
    let mut check = DescentCheck::new(block0);
    let mut file = HeaderFile::create(path).map_err(unavailable)?;
    while check.next_height() < block.height {
        let count = (block.height - check.next_height()).min(MAX_HEADERS_PER_REQUEST);
        let mut url = peer.client.url(&["v1", "headers"]);
        url.query_pairs_mut()
            .append_pair("from", &check.next_height().to_string())
            .append_pair("count", &count.to_string());
        let body = rt.block_on(peer.get_url(url, MAX_HEADERS_BODY_BYTES))?;
        let headers =
            decode_headers(&body).map_err(|e| Failed::Lied(format!("GET /v1/headers: {e}")))?;
        if headers.len() as u64 > count {
            return Err(Failed::Lied(format!(
                "GET /v1/headers sent {} headers, {count} were asked for",
                headers.len()
            )));
        }
        check.feed(&headers).map_err(Failed::Lied)?;
        file.append(&headers).map_err(unavailable)?;
    }
    check.finish(block).map_err(Failed::Lied)?;
    file.finish().map_err(unavailable)?;
    Ok(block.height)
}

/// Space a join needs beyond the chunks themselves: the import writes about as much again into
/// the database (and its write-ahead log), plus this margin.
const SPACE_MARGIN: u64 = 256 << 20;

/// Refuses a snapshot of `bytes` whose chunks and import would not fit the free space of the
/// file system holding `data_dir` (about twice its size, plus [`SPACE_MARGIN`]). Errors:
/// [`NodeError::Refused`] saying how much is needed and free.
fn check_free_space(data_dir: &Path, bytes: u64) -> Result<(), NodeError> {
    let Some(free) = free_bytes(data_dir) else {
        return Ok(());
    };
    let needed = bytes.saturating_mul(2).saturating_add(SPACE_MARGIN);
    if needed > free {
        return Err(refused(format!(
            "the snapshot has {bytes} bytes of state (and headers): joining from it needs about \
             {needed} bytes free on {}, which has {free}",
            data_dir.display()
        )));
    }
    Ok(())
}

/// Bytes free to this process on the file system holding `path` (`statvfs`), if it can tell.
fn free_bytes(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt as _;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path and `st` a valid, writable statvfs.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

/// Checks one [`FORMAT_PROVEN`] chunk against the state root through `verifier` (the chunks
/// before it already pushed): its proof, and its entries (exactly `entries` of them) as leaves.
/// Errors: what does not check.
fn check_proven_chunk(
    verifier: &mut ChunkVerifier,
    bytes: &[u8],
    entries: u64,
) -> Result<(), String> {
    let (siblings, decoded) = decode_chunk_of(FORMAT_PROVEN, bytes, entries)?;
    if decoded.len() as u64 != entries {
        return Err(format!(
            "it holds {} entries, its manifest says {entries}",
            decoded.len()
        ));
    }
    let leaves: Vec<_> = decoded
        .iter()
        .map(|(k, v)| (key_hash(k), value_hash(v)))
        .collect();
    verifier
        .push(&leaves, &siblings)
        .map_err(|e| format!("against the block's state root: {e}"))
}

/// Reads the chunks of `dir` in order, checking each (hash, decoding, strictly ascending keys,
/// entry count), inserts every entry and returns their commitment of kind `kind`.
/// `Ok(Err(text))`: the snapshot is refused.
fn import_chunks(
    dir: &Path,
    manifest: &Manifest,
    kind: StateCommitment,
    insert: &mut dyn FnMut(&str, &[u8]) -> Result<(), StorageError>,
) -> Result<Result<StateHash, String>, StorageError> {
    let mut hash = StateHash::builder(kind);
    let mut order = KeyOrder::new(manifest.format);
    for (i, info) in manifest.chunks.iter().enumerate().take(MAX_CHUNKS) {
        let path = dir.join(chunk_name(i as u64));
        let bytes = std::fs::read(&path)
            .map_err(|e| StorageError::Io(format!("{}: {e}", path.display())))?;
        if bytes.len() > MAX_CHUNK_BYTES || sha256_hex(&bytes) != info.sha256 {
            return Ok(Err(format!(
                "chunk {i} on disk ({}) no longer matches its manifest",
                path.display()
            )));
        }
        let entries = match decode_chunk_of(manifest.format, &bytes, info.entries) {
            Ok((_, e)) => e,
            Err(e) => return Ok(Err(format!("chunk {i}: {e}"))),
        };
        if entries.len() as u64 != info.entries {
            return Ok(Err(format!(
                "chunk {i} holds {} entries, its manifest says {}",
                entries.len(),
                info.entries
            )));
        }
        for (key, value) in entries {
            if let Err(e) = order.next(key) {
                return Ok(Err(format!("chunk {i}: {e}")));
            }
            hash.insert(key, value);
            insert(key, value)?;
        }
    }
    Ok(Ok(hash.finish()))
}

/// Checks the snapshot's block: the manifest's hash and root, its signer (and on a chain with
/// validators its certificate, returned to be stored), its transactions and receipts against
/// its header's roots. Errors: what does not check.
fn check_base_block(
    ctx: &ChainContext,
    peer: &Peer,
    block: &Block,
    manifest: &Manifest,
    genesis_hash: &str,
    rt: &tokio::runtime::Handle,
) -> Result<Option<BaseFinality>, String> {
    let header = &block.header.header;
    if header.height != manifest.height {
        return Err(format!("the peer answered block {}", header.height));
    }
    if header.hash_hex() != manifest.block_hash {
        return Err(format!(
            "its hash is {}, the manifest says {}",
            header.hash_hex(),
            manifest.block_hash
        ));
    }
    if hex::encode(header.state_root) != manifest.state_root {
        return Err(format!(
            "its state root is {}, the manifest says {}",
            hex::encode(header.state_root),
            manifest.state_root
        ));
    }
    let genesis = ctx.genesis();
    genesis
        .check_block_signer(&block.header)
        .map_err(|e| format!("its signature: {e}"))?;
    let txs: Vec<_> = block.txs.iter().map(|t| t.tx.clone()).collect();
    if tx_root(&txs) != header.tx_root {
        return Err("its transactions do not give its header's tx_root".into());
    }
    let receipts: Vec<Receipt> = block
        .txs
        .iter()
        .map(|t| t.receipt.clone())
        .chain(block.end_block.iter().map(|(_, r)| r.clone()))
        .collect();
    if receipt_root(&receipts) != header.receipt_root {
        return Err("its receipts do not give its header's receipt_root".into());
    }
    if genesis.validators.is_none() {
        return Ok(None);
    }
    // Certified: the block's own certificate, on a digest that is this block's.
    let checker = FinalityChecker::new(genesis, genesis_hash)?;
    let height = header.height;
    if height == 0 {
        return Err("a snapshot of block 0: replay from genesis instead".into());
    }
    let own = rt
        .block_on(crate::verify::source::finality_retrying(
            &peer.client,
            height,
        ))?
        .ok_or("the peer has no finality record of it")?;
    let parent = rt
        .block_on(crate::verify::source::finality_retrying(
            &peer.client,
            height - 1,
        ))?
        .ok_or("the peer has no finality record of its parent")?;
    let Finality {
        digest,
        certificate,
    } = own;
    let Some(certificate) = certificate else {
        return Err(
            "it has no finality certificate of its own (a node snapshots certified blocks only)"
                .into(),
        );
    };
    let signatures = block.txs.iter().map(|t| t.tx.signature());
    let computed = proposal_digest(&parent.digest, &block.header, signatures);
    if computed != digest {
        return Err(format!(
            "its finality record's digest {} is not the block's",
            hex::encode(digest)
        ));
    }
    checker
        .check(&digest, &certificate)
        .map_err(|e| format!("its finality certificate: {e}"))?;
    Ok(Some(BaseFinality {
        record: (digest, Some(certificate)),
        parent_digest: parent.digest,
    }))
}
