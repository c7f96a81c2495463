//! The node's SQLite database, one file `<data_dir>/chain.sqlite`: schema and migrations, the
//! one-transaction block commit, and the reads the API and the start-up need.
//!
//! Connections run in WAL mode with `synchronous=FULL`, so a committed block survives a crash
//! or power loss and readers never block the writer. One [`Storage`] opened with
//! [`Storage::open`] writes (the sequencer's); any number opened with [`Storage::open_reader`]
//! only read (the API's).
//!
//! Schema (version 4; `meta.schema_version` counts the [`MIGRATIONS`] applied; the column
//! encodings are in `storage/codec.rs`):
//!
//! | table | columns | what |
//! |---|---|---|
//! | `meta` | `key` TEXT PK, `value` BLOB | `schema_version`, `genesis_hash` (hex), `engine_config_hash` (hex), `lthash` (the running [`StateHash`]: 2048 LtHash bytes, or a sparse Merkle chain's 32-byte root), `lthash_height` |
//! | `blocks` | `height` PK, `header` (borsh; the block hash is its SHA-256), `signature`, `end_block` (the end-block receipts, one per module with `end_block`, id order, then the receipts of the scheduled calls the block ran, when any: `codec.rs`) | one row per block, genesis is height 0 |
//! | `txs` | `id` PK (`height << 20 \| index`), `txid` (32 bytes), `sender` (an `accounts.id`), `nonce`, `body`, `signature`, `receipt` | every included transaction with its receipt |
//! | `accounts` | `id` PK, `address` TEXT unique | every sender of an included transaction, numbered |
//! | `state` | `key` TEXT PK, `value` BLOB | the committed state after the head block |
//! | `code` | `hash` BLOB PK (32 bytes), `wasm` BLOB | module code by SHA-256 |
//! | `old_headers` | `height` PK, `header` (borsh) | the header of every block below the oldest in `blocks` (a snapshot join's proven chain of headers down to block 0, and pruned blocks' headers): `GET /v1/headers` serves them, so a node that joined from a snapshot or prunes can still prove its blocks descend from genesis |
//! | `session_steps` | `txid` (PK), `key`, `value` BLOB or NULL, `proof` BLOB (JSON) or NULL | chains that keep game logs: for each logged `session_game` step, the session record (`session/<account>/<key>`) it was admitted under, in the state before its block, with its proof; both NULL when an earlier transaction of the block had written the record ([`SessionWitness`](gamechain_runtime::SessionWitness)). A node's record: a transcript proves each session step's authorization with it |
//! | `game_starts` | `module`, `game`, `account` (PK), `height`, `moves` (0/1), `value` BLOB or NULL, `proof` BLOB (JSON) or NULL | chains that keep game logs: for each account in each game, its GOLD balance in block `height - 1`'s state (`value`, NULL: absent) with its state proof (JSON), at its first step, replaced once by its first step that moves its GOLD itself (`moves`); both NULL when an earlier transaction of the step's block had written the balance ([`StartWitness`]). A node's record, in no hash: a transcript proves players' starting balances with it |
//! | `validator_finality` | `height` PK, `digest` BLOB, `certificate` BLOB or NULL | chains with validators only (made by [`Storage::ensure_validator_tables`]): each block's consensus digest and finality certificate |
//! | `validator_evidence` | `id` PK, `kind` TEXT, `view`, `signer`, `data` BLOB, `received_ms`; unique (`kind`, `view`, `signer`) | chains with validators only (made by [`Storage::ensure_validator_tables`]): proof that a validator signed conflicting votes (`validator/evidence.rs`), at most [`MAX_EVIDENCE_PER_SIGNER`] per validator |
//!
//! Indexes: `txs_by_txid` (unique, `txs.txid`: `GET /v1/tx/<txid>`, duplicate checks) and
//! `txs_by_sender` (`txs.sender, txs.nonce`); no other. A body is stored once, exactly (TEXT, or
//! compressed as a BLOB); a signature as its 65 bytes; a receipt compressed against its body; the
//! API rebuilds the same JSON from them (a receipt decodes only with its body, so a damaged
//! body also makes its receipt unreadable). A transaction's row id orders a block's transactions
//! (`height << 20 | index`: a block holds at most 2^20 transactions; the consensus bound of 32
//! MiB of bodies allows fewer). The commit parses no body: the sender and nonce come from the
//! caller, the txid bytes from the [`SignedTx`] (hashed once when it was made). About 315 bytes
//! a transfer, 340 a tic-tac-toe move, against 920 and 940 in version 1 (`node/API.md`,
//! "Storage layout", has the measurement and its command).
//!
//! Version 1 (the first gamechain) stored hex-text txids, a `receipts` table (JSON), an
//! `end_block_receipts` table (JSON), the header again as JSON, and the block hash with its own
//! index; migration 2 converts such a database in place, in one transaction (rows are checked as
//! they are converted: a txid that is not the hash of its body, a receipt that does not parse,
//! refuse the migration), then runs `VACUUM` once to give the freed pages back.
//!
//! A block and everything it changes (its rows, its receipts, its state writes, the LtHash) are
//! written by [`Storage::commit_block`] in one SQLite transaction: after a crash the database
//! holds either the whole block or none of it. A follower catching up commits a run of
//! consecutive blocks the same way in one transaction ([`Storage::commit_blocks`]: the same
//! rows, one fsync): all of the run or none of it.
//!
//! What SQLite promises here, and where it cannot help: in WAL mode with `synchronous=FULL` a
//! transaction is durable once `COMMIT` returns (the WAL is fsynced at every commit), a crash
//! or power loss leaves the last committed transaction or an earlier one, never half of one,
//! and recovery needs no action. But recovery reads the WAL up to its first frame whose
//! checksum (or salt) does not match and silently ignores the rest, and a missing WAL is just
//! "nothing to recover": a damaged or deleted WAL opens *without an error* at an older commit.
//! So the writer also keeps a head record outside the database (`head_record.rs`, written
//! after each commit), which the start compares with the recovered head. Damage inside the
//! main file is what `PRAGMA quick_check` finds ([`Storage::quick_check`]).

use std::collections::BTreeMap;
use std::fmt;
use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};
use std::time::Duration;

use gamechain_runtime::chain::StateProof;
use gamechain_runtime::chain::{
    Header, LtHash, Receipt, ScheduledReceipt, SignedHeader, SignedTx, StateCommitment, StateHash,
};
use gamechain_runtime::{MemState, StartWitness, WriteSet};
use rusqlite::types::ValueRef;
use rusqlite::{params, Connection, OpenFlags, OptionalExtension, Transaction};

use crate::head_record::HeadRecord;
pub use crate::store::storage_error::{lock_path, StorageError};

use gamechain_chain::wire::{Block, IncludedTx, TxRecord, TxStatus};

/// Bytes of WAL past which the writer checkpoints after a commit ([`Storage::checkpoint`]), and
/// the size a reset WAL is truncated to (`journal_size_limit`).
pub const WAL_CHECKPOINT_BYTES: u64 = 8 << 20;

/// The schema steps, applied in order, each in its own transaction together with the new
/// `schema_version` (its 1-based position). Never edit a released step: append a new one.
pub const MIGRATIONS: &[&str] = &[
    // 1: the initial schema.
    "CREATE TABLE blocks (
        height INTEGER PRIMARY KEY,
        hash BLOB NOT NULL UNIQUE,
        header BLOB NOT NULL,
        header_json TEXT NOT NULL,
        signature TEXT NOT NULL,
        tx_count INTEGER NOT NULL
    );
    CREATE TABLE txs (
        txid TEXT PRIMARY KEY,
        height INTEGER NOT NULL REFERENCES blocks(height),
        idx INTEGER NOT NULL,
        body TEXT NOT NULL,
        signature TEXT NOT NULL,
        sender TEXT NOT NULL,
        nonce INTEGER NOT NULL,
        UNIQUE (height, idx)
    );
    CREATE INDEX txs_by_sender ON txs (sender, nonce);
    CREATE TABLE receipts (
        height INTEGER NOT NULL REFERENCES blocks(height),
        idx INTEGER NOT NULL,
        txid TEXT NOT NULL UNIQUE REFERENCES txs(txid),
        ok INTEGER NOT NULL,
        receipt TEXT NOT NULL,
        PRIMARY KEY (height, idx)
    );
    CREATE TABLE end_block_receipts (
        height INTEGER NOT NULL REFERENCES blocks(height),
        idx INTEGER NOT NULL,
        module TEXT NOT NULL,
        ok INTEGER NOT NULL,
        receipt TEXT NOT NULL,
        PRIMARY KEY (height, idx)
    );
    CREATE TABLE state (key TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID;
    CREATE TABLE code (hash TEXT PRIMARY KEY, wasm BLOB NOT NULL);",
    // 2: slim storage. Converts every row of version 1 with the `gc_*` functions that
    // [`register_functions`] defines (each refuses a row it cannot convert), then drops the old
    // tables (referencing ones first: foreign keys are on) and renames the new ones.
    "CREATE TABLE accounts (id INTEGER PRIMARY KEY, address TEXT NOT NULL UNIQUE);
    INSERT INTO accounts (address) SELECT sender FROM txs GROUP BY sender ORDER BY MIN(rowid);
    CREATE TABLE blocks_v2 (
        height INTEGER PRIMARY KEY,
        header BLOB NOT NULL,
        signature BLOB NOT NULL,
        end_block BLOB NOT NULL
    );
    INSERT INTO blocks_v2 (height, header, signature, end_block)
        SELECT b.height, gc_header(b.header, b.hash), gc_signature(b.signature),
            gc_end_block((SELECT json_group_array(json_array(e.module, e.receipt) ORDER BY e.idx)
                FROM end_block_receipts e WHERE e.height = b.height))
        FROM blocks b ORDER BY b.height;
    CREATE TABLE txs_v2 (
        id INTEGER PRIMARY KEY,
        txid BLOB NOT NULL,
        sender INTEGER NOT NULL,
        nonce INTEGER NOT NULL,
        body BLOB NOT NULL,
        signature BLOB NOT NULL,
        receipt BLOB NOT NULL
    );
    INSERT INTO txs_v2 (id, txid, sender, nonce, body, signature, receipt)
        SELECT gc_row_id(t.height, t.idx), gc_txid(t.txid, t.body), a.id, t.nonce,
            gc_body(t.body), gc_signature(t.signature), gc_receipt(r.receipt, t.body)
        FROM txs t
        JOIN accounts a ON a.address = t.sender
        LEFT JOIN receipts r ON r.txid = t.txid AND r.height = t.height AND r.idx = t.idx
        ORDER BY t.height, t.idx;
    SELECT gc_check_count('receipts', (SELECT COUNT(*) FROM receipts), (SELECT COUNT(*) FROM txs_v2));
    CREATE TABLE code_v2 (hash BLOB PRIMARY KEY, wasm BLOB NOT NULL);
    INSERT INTO code_v2 (hash, wasm) SELECT gc_code_hash(hash, wasm), wasm FROM code;
    DROP TABLE receipts;
    DROP TABLE end_block_receipts;
    DROP TABLE txs;
    DROP TABLE blocks;
    DROP TABLE code;
    ALTER TABLE blocks_v2 RENAME TO blocks;
    ALTER TABLE txs_v2 RENAME TO txs;
    ALTER TABLE code_v2 RENAME TO code;
    CREATE UNIQUE INDEX txs_by_txid ON txs (txid);
    CREATE INDEX txs_by_sender ON txs (sender, nonce);",
    // 3: the headers of blocks this node does not keep (below a snapshot join's base, or
    // pruned), so that it can still prove any block's descent from block 0 (`GET /v1/headers`).
    "CREATE TABLE old_headers (height INTEGER PRIMARY KEY, header BLOB NOT NULL);",
    // 4: each account's starting balance in each game, proven against the state root before
    // its first step (`StartWitness`), for transcripts (`server/transcript/`).
    "CREATE TABLE game_starts (
        module TEXT NOT NULL, game TEXT NOT NULL, account TEXT NOT NULL,
        height INTEGER NOT NULL, moves INTEGER NOT NULL, value BLOB, proof BLOB,
        PRIMARY KEY (module, game, account)) WITHOUT ROWID;",
    // 5: the session record each logged `session_game` step was admitted under, proven against
    // the state root before its block (`SessionWitness`), for transcripts.
    "CREATE TABLE session_steps (
        txid TEXT PRIMARY KEY, key TEXT NOT NULL, value BLOB, proof BLOB) WITHOUT ROWID;",
];

/// One account's recorded starting balance in one game ([`Storage::game_starts`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GameStart {
    /// The account.
    pub account: String,
    /// The block of the step witnessed (its first in the game, or its first that moved its
    /// GOLD); the proof is against block `height - 1`'s root.
    pub height: u64,
    /// `bal/<account>/GOLD` in that state (`None`: absent) with its proof; `None` when an
    /// earlier transaction of the block had written the balance.
    pub proven: Option<(Option<Vec<u8>>, StateProof)>,
}

/// A block's end-block receipts: `(module, receipt)` in module id order.
type EndBlock = (Vec<(String, Receipt)>, Vec<ScheduledReceipt>);

/// Bits of a transaction's row id that hold its index in the block (`height << 20 | index`).
const TX_INDEX_BITS: u32 = 20;

/// The row id of transaction `idx` of block `height`; `None` when either does not fit.
fn tx_row_id(height: u64, idx: u64) -> Option<i64> {
    if idx >= 1 << TX_INDEX_BITS || height >= 1 << (63 - TX_INDEX_BITS) {
        return None;
    }
    Some(((height << TX_INDEX_BITS) | idx) as i64)
}

/// `(height, index)` of a transaction's row id.
fn tx_position(id: i64) -> (u64, u32) {
    let id = id as u64;
    (
        id >> TX_INDEX_BITS,
        (id & ((1 << TX_INDEX_BITS) - 1)) as u32,
    )
}

/// The SQL functions migration 2 converts version 1's columns with (`gc_*`), on `conn`.
fn register_functions(conn: &Connection) -> rusqlite::Result<()> {
    use rusqlite::functions::{Context, FunctionFlags};
    use rusqlite::types::Value;
    let flags = FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC;
    fn fail<T>(msg: String) -> rusqlite::Result<T> {
        Err(rusqlite::Error::UserFunctionError(msg.into()))
    }
    fn text(ctx: &Context<'_>, i: usize) -> rusqlite::Result<String> {
        ctx.get::<String>(i)
    }
    // A header whose SHA-256 is the stored block hash.
    conn.create_scalar_function("gc_header", 2, flags, |ctx| {
        let header: Vec<u8> = ctx.get(0)?;
        let hash: Vec<u8> = ctx.get(1)?;
        if borsh::from_slice::<Header>(&header).is_err()
            || gamechain_chain::hash::sha256(&header).as_slice() != hash.as_slice()
        {
            return fail(format!(
                "block {}: the stored header does not hash to the stored block hash",
                hex::encode(&hash)
            ));
        }
        Ok(header)
    })?;
    conn.create_scalar_function("gc_signature", 1, flags, |ctx| {
        Ok(signature_value(&text(ctx, 0)?))
    })?;
    // `[[module, receipt JSON], …]` → the end-block encoding.
    conn.create_scalar_function("gc_end_block", 1, flags, |ctx| {
        let pairs: Vec<(String, String)> = match serde_json::from_str(&text(ctx, 0)?) {
            Ok(p) => p,
            Err(e) => return fail(format!("end-block receipts: {e}")),
        };
        let mut list = Vec::with_capacity(pairs.len());
        for (module, receipt) in pairs {
            match parse_receipt(&receipt) {
                Ok(r) => list.push((module, r)),
                Err(e) => return fail(format!("end-block receipt of {module}: {e}")),
            }
        }
        Ok(codec::encode_end_block(&list))
    })?;
    conn.create_scalar_function("gc_row_id", 2, flags, |ctx| {
        let (height, idx): (i64, i64) = (ctx.get(0)?, ctx.get(1)?);
        match (u64::try_from(height), u64::try_from(idx)) {
            (Ok(h), Ok(i)) => match tx_row_id(h, i) {
                Some(id) => Ok(id),
                None => fail(format!("transaction {idx} of block {height}: out of range")),
            },
            _ => fail(format!("transaction {idx} of block {height}: out of range")),
        }
    })?;
    // The 32 bytes of a hex txid, which must be the hash of the body.
    conn.create_scalar_function("gc_txid", 2, flags, |ctx| {
        let (txid, body) = (text(ctx, 0)?, text(ctx, 1)?);
        let hash = gamechain_chain::hash::sha256(body.as_bytes());
        if hex::encode(hash) != txid {
            return fail(format!(
                "transaction {txid}: its body hashes to another txid"
            ));
        }
        Ok(hash.to_vec())
    })?;
    conn.create_scalar_function("gc_body", 1, flags, |ctx| {
        let body = text(ctx, 0)?;
        Ok(match codec::encode_body(&body) {
            codec::BodyColumn::Text(_) => Value::Text(body),
            codec::BodyColumn::Compressed(bytes) => Value::Blob(bytes),
        })
    })?;
    // A receipt's JSON (NULL: none stored) → its column for the transaction of `body`.
    conn.create_scalar_function("gc_receipt", 2, flags, |ctx| {
        let Some(json) = ctx.get::<Option<String>>(0)? else {
            return fail("a transaction without its receipt".into());
        };
        match parse_receipt(&json) {
            Ok(r) => Ok(codec::pack_receipt(&r, &text(ctx, 1)?)),
            Err(e) => fail(e.to_string()),
        }
    })?;
    conn.create_scalar_function("gc_check_count", 3, flags, |ctx| {
        let (what, want, got): (String, i64, i64) = (ctx.get(0)?, ctx.get(1)?, ctx.get(2)?);
        if want != got {
            return fail(format!("{want} {what} but {got} converted"));
        }
        Ok(got)
    })?;
    // The 32 bytes of a hex code hash, which must be the hash of the code.
    conn.create_scalar_function("gc_code_hash", 2, flags, |ctx| {
        let (hash, wasm): (String, Vec<u8>) = (ctx.get(0)?, ctx.get(1)?);
        let want = gamechain_chain::hash::sha256(&wasm);
        if hex::encode(want) != hash {
            return fail(format!(
                "module code {hash}: the code hashes to another hash"
            ));
        }
        Ok(want.to_vec())
    })?;
    Ok(())
}

/// How a base64 signature is stored: its 65 bytes, or the text when it is not their canonical
/// encoding.
fn signature_value(signature: &str) -> rusqlite::types::Value {
    match codec::signature_bytes(signature) {
        Some(bytes) => rusqlite::types::Value::Blob(bytes),
        None => rusqlite::types::Value::Text(signature.to_string()),
    }
}

/// The base64 signature a signature column holds.
fn signature_of(v: ValueRef<'_>) -> Result<String, StorageError> {
    match v {
        ValueRef::Blob(bytes) if bytes.len() == 65 => Ok(codec::signature_text(bytes)),
        ValueRef::Text(text) => {
            String::from_utf8(text.to_vec()).map_err(|_| corrupt("a stored signature is not UTF-8"))
        }
        _ => Err(corrupt("a stored signature is neither 65 bytes nor text")),
    }
}

/// The body a body column holds.
fn body_of(v: ValueRef<'_>) -> Result<String, StorageError> {
    match v {
        ValueRef::Text(text) => {
            String::from_utf8(text.to_vec()).map_err(|_| corrupt("a stored body is not UTF-8"))
        }
        ValueRef::Blob(packed) => {
            codec::decode_body(packed).ok_or_else(|| corrupt("a stored body does not decode"))
        }
        _ => Err(corrupt("a stored body is neither text nor bytes")),
    }
}

/// The receipt column `packed` of the transaction whose body is `body`.
fn receipt_of(packed: &[u8], body: &str) -> Result<Receipt, StorageError> {
    codec::unpack_receipt(packed, body).ok_or_else(|| corrupt("a stored receipt does not decode"))
}

/// A transaction and its receipt from the columns `body, signature, receipt` of a row.
fn included_tx(row: &rusqlite::Row<'_>, first: usize) -> Result<IncludedTx, StorageError> {
    let body = body_of(row.get_ref(first)?)?;
    let signature = signature_of(row.get_ref(first + 1)?)?;
    let receipt = match row.get_ref(first + 2)? {
        ValueRef::Blob(packed) => receipt_of(packed, &body)?,
        _ => return Err(corrupt("a stored receipt is not bytes")),
    };
    Ok(IncludedTx {
        tx: SignedTx::new(body, signature),
        receipt,
    })
}

/// The 32 bytes of a lowercase hex txid; `None` when it is not one.
fn txid_bytes(txid: &str) -> Option<[u8; 32]> {
    if txid.len() != 64 || !txid.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    let mut out = [0u8; 32];
    hex::decode_to_slice(txid, &mut out).ok()?;
    Some(out)
}

fn corrupt(msg: impl Into<String>) -> StorageError {
    StorageError::Corrupt(msg.into())
}

/// The head of the stored chain: its signed header and the running state hash after it.
#[derive(Debug, Clone)]
pub struct StoredHead {
    /// The highest block's signed header.
    pub header: SignedHeader,
    /// The running state hash after it (its `root()` is the header's `state_root`): the saved
    /// LtHash, or the sparse Merkle tree rebuilt from the stored state.
    pub state_hash: StateHash,
}

/// Most pieces of evidence stored per validator: one proves the fault; more only show it went
/// on. A validator of a set of at most 64 fills at most 64 × 32 rows.
pub const MAX_EVIDENCE_PER_SIGNER: usize = 32;

/// Most pieces of evidence a database holds: [`MAX_EVIDENCE_PER_SIGNER`] for each of at most
/// 64 validators.
pub const MAX_EVIDENCE: usize = 64 * MAX_EVIDENCE_PER_SIGNER;

/// One row of `validator_evidence`: proof that validator `signer` (its index in the genesis
/// set) signed two conflicting messages in consensus view `view` (`validator/evidence.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvidence {
    /// The row's id (ignored by [`Storage::put_evidence`]).
    pub id: u64,
    /// `conflicting_notarize`, `conflicting_finalize` or `nullify_finalize`.
    pub kind: String,
    /// The view.
    pub view: u64,
    /// The signer's index in the genesis set.
    pub signer: u32,
    /// The two messages' engine encodings, one after the other.
    pub data: Vec<u8>,
    /// When it was stored, ms since the Unix epoch (node clock).
    pub received_ms: u64,
}

/// A block's finality record on a chain with validators: its consensus digest and its encoded
/// finality certificate (`None` for a block finalized through a descendant's).
pub type FinalityRecord = ([u8; 32], Option<Vec<u8>>);

/// The finality a snapshot's base block is imported with ([`Storage::import_base`], chains with
/// validators): its own record (digest and certificate) and its parent's consensus digest,
/// stored as the parent's record (no certificate, no block) so that this node can serve the
/// snapshot on: a joining node recomputes the base's digest from its parent's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseFinality {
    /// The base block's own record.
    pub record: FinalityRecord,
    /// Its parent's consensus digest.
    pub parent_digest: [u8; 32],
}

/// One connection to `chain.sqlite`.
pub struct Storage {
    conn: Connection,
    path: PathBuf,
    /// The writer's exclusive lock on `<path>.lock` (`None` for readers); released on drop.
    _lock: Option<File>,
    /// The writer's head record (`<path>.head`), written after every commit; `None` for
    /// readers.
    record: Option<HeadRecord>,
}

impl fmt::Debug for Storage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Storage").field("path", &self.path).finish()
    }
}

impl Storage {
    /// Opens (creating it if absent) the database at `path` for writing: WAL mode,
    /// `synchronous=FULL`, foreign keys on, then every pending migration. Errors: SQLite
    /// cannot open or migrate the file; [`StorageError::TooNew`]; [`StorageError::InUse`] when
    /// another writer holds the lock on `<path>.lock` ([`lock_path`]).
    pub fn open(path: &Path) -> Result<Storage, StorageError> {
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(lock_path(path))
            .map_err(|e| {
                StorageError::Sqlite(format!("cannot open {}: {e}", lock_path(path).display()))
            })?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => return Err(StorageError::InUse(path.to_path_buf())),
            Err(TryLockError::Error(e)) => {
                return Err(StorageError::Sqlite(format!(
                    "cannot lock {}: {e}",
                    lock_path(path).display()
                )))
            }
        }
        let record = HeadRecord::open(path).map_err(|e| StorageError::Io(e.to_string()))?;
        let conn = Connection::open(path)?;
        let mut storage = Storage {
            conn,
            path: path.to_path_buf(),
            _lock: Some(lock),
            record: Some(record),
        };
        storage.configure()?;
        let mode: String = storage
            .conn
            .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StorageError::Sqlite(format!(
                "{} cannot use WAL mode (got `{mode}`)",
                path.display()
            )));
        }
        // A WAL reset after a checkpoint truncates the file to this size (see `checkpoint`).
        storage.conn.query_row(
            &format!("PRAGMA journal_size_limit = {WAL_CHECKPOINT_BYTES}"),
            [],
            |_| Ok(()),
        )?;
        storage.migrate()?;
        Ok(storage)
    }

    /// Checkpoints the WAL when it has grown past [`WAL_CHECKPOINT_BYTES`] (a `PASSIVE`
    /// checkpoint: it never waits for readers). The commit path calls it once the head has
    /// moved and no state snapshot is open (`Chain::commit`): SQLite's own checkpoint at each
    /// commit runs while the head's snapshot (`state_store.rs`) still reads the previous state,
    /// so it can never copy the last block back and the WAL would never be reset; this one can,
    /// and the next commit then rewrites the WAL from its start (truncated to the limit).
    /// Errors: SQLite failed.
    pub fn checkpoint(&self) -> Result<(), StorageError> {
        let mut wal = self.path.clone().into_os_string();
        wal.push("-wal");
        let size = std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
        if size > WAL_CHECKPOINT_BYTES {
            self.conn
                .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))?;
        }
        Ok(())
    }

    /// The database's size in bytes as this connection sees it (`page_count` × `page_size`,
    /// free pages included): what the file holds once every committed page in the WAL is
    /// checkpointed into it, whatever the WAL holds now. Errors: SQLite failed.
    pub fn database_bytes(&self) -> Result<u64, StorageError> {
        let pages: u64 = self.conn.query_row("PRAGMA page_count", [], |r| r.get(0))?;
        let page_size: u64 = self.conn.query_row("PRAGMA page_size", [], |r| r.get(0))?;
        Ok(pages * page_size)
    }

    /// Opens the database at `path` (which [`Storage::open`] created) read-only, for the API.
    pub fn open_reader(path: &Path) -> Result<Storage, StorageError> {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI;
        let conn = Connection::open_with_flags(path, flags)?;
        let storage = Storage {
            conn,
            path: path.to_path_buf(),
            _lock: None,
            record: None,
        };
        storage.configure()?;
        let version = storage.schema_version()?;
        if version as usize > MIGRATIONS.len() {
            return Err(StorageError::TooNew {
                found: version,
                known: MIGRATIONS.len() as u32,
            });
        }
        if (version as usize) < MIGRATIONS.len() {
            return Err(corrupt(format!(
                "the database has schema version {version}, this gamechain reads version {}: \
                 start this gamechain's node on the data directory once to migrate it",
                MIGRATIONS.len()
            )));
        }
        Ok(storage)
    }

    fn configure(&self) -> Result<(), StorageError> {
        self.conn.busy_timeout(Duration::from_secs(5))?;
        self.conn
            .execute_batch("PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;")?;
        Ok(())
    }

    /// The number of migrations applied to this database (0 for a new file).
    pub fn schema_version(&self) -> Result<u32, StorageError> {
        let has_meta: bool = self.conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta')",
            [],
            |r| r.get(0),
        )?;
        if !has_meta {
            return Ok(0);
        }
        match self.meta_text("schema_version")? {
            None => Ok(0),
            Some(v) => v
                .parse()
                .map_err(|_| corrupt(format!("meta.schema_version is `{v}`"))),
        }
    }

    fn migrate(&mut self) -> Result<(), StorageError> {
        self.conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value BLOB NOT NULL)",
        )?;
        let known = MIGRATIONS.len() as u32;
        let found = self.schema_version()?;
        if found > known {
            return Err(StorageError::TooNew { found, known });
        }
        if found == known {
            return Ok(());
        }
        register_functions(&self.conn)?;
        // Whether migration 2 converts a stored chain: then it frees pages worth giving back.
        let had_blocks = (1..2).contains(&found)
            && self
                .conn
                .query_row("SELECT EXISTS (SELECT 1 FROM blocks)", [], |r| {
                    r.get::<_, bool>(0)
                })?;
        for (i, step) in MIGRATIONS.iter().enumerate().skip(found as usize) {
            let version = i as u32 + 1;
            let started = std::time::Instant::now();
            let tx = self.conn.transaction()?;
            tx.execute_batch(step)
                .map_err(|e| StorageError::Sqlite(format!("migration {version}: {e}")))?;
            set_meta(&tx, "schema_version", version.to_string().as_bytes())?;
            tx.commit()?;
            tracing::info!(
                path = %self.path.display(),
                version,
                ms = started.elapsed().as_millis() as u64,
                "database migrated"
            );
        }
        if had_blocks {
            // The old tables' pages are free now: give them back to the file system (one
            // rewrite of the file; a crash during it leaves the migrated database as it was).
            let started = std::time::Instant::now();
            self.conn
                .execute_batch("VACUUM; PRAGMA wal_checkpoint(TRUNCATE);")?;
            tracing::info!(
                path = %self.path.display(),
                ms = started.elapsed().as_millis() as u64,
                "database compacted after the migration"
            );
        }
        Ok(())
    }

    fn meta(&self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        Ok(self
            .conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()?)
    }

    fn meta_text(&self, key: &str) -> Result<Option<String>, StorageError> {
        self.meta(key)?
            .map(|v| String::from_utf8(v).map_err(|_| corrupt(format!("meta.{key} is not text"))))
            .transpose()
    }

    /// The genesis hash (lowercase hex) and engine config hash recorded when the chain was
    /// created, `None` before genesis is stored.
    pub fn chain_identity(&self) -> Result<Option<(String, String)>, StorageError> {
        match (
            self.meta_text("genesis_hash")?,
            self.meta_text("engine_config_hash")?,
        ) {
            (Some(g), Some(e)) => Ok(Some((g, e))),
            (None, None) => Ok(None),
            _ => Err(corrupt(
                "meta has only one of genesis_hash and engine_config_hash",
            )),
        }
    }

    /// Stores the genesis block (height 0, no transactions) with the state `entries` it
    /// creates, the running hash of that state, the module `code` by hash and the chain's
    /// identity, in one transaction. Errors if any block is stored already.
    pub fn commit_genesis(
        &mut self,
        block: &Block,
        entries: &[(String, Vec<u8>)],
        state_hash: &StateHash,
        code: &BTreeMap<String, Vec<u8>>,
        genesis_hash: &str,
        engine_config_hash: &str,
    ) -> Result<(), StorageError> {
        if block.height() != 0 || !block.txs.is_empty() {
            return Err(corrupt("a genesis block is height 0 without transactions"));
        }
        let tx = self.conn.transaction()?;
        let existing: i64 = tx.query_row("SELECT COUNT(*) FROM blocks", [], |r| r.get(0))?;
        if existing != 0 {
            return Err(corrupt("genesis is stored already"));
        }
        for (hash, wasm) in code {
            let key = hex_hash(hash).ok_or_else(|| corrupt(format!("code hash `{hash}`")))?;
            tx.execute(
                "INSERT OR REPLACE INTO code (hash, wasm) VALUES (?1, ?2)",
                params![key.as_slice(), wasm],
            )?;
        }
        set_meta(&tx, "genesis_hash", genesis_hash.as_bytes())?;
        set_meta(&tx, "engine_config_hash", engine_config_hash.as_bytes())?;
        let writes: WriteSet = entries
            .iter()
            .map(|(k, v)| (k.clone(), Some(v.clone())))
            .collect();
        write_block_rows(&tx, block, &[])?;
        write_state(&tx, block.height(), &writes, state_hash)?;
        tx.commit()?;
        self.record_head(block)
    }

    /// Stores `block` (the next height after the head), applies its state `writes` (`None`
    /// deletes), saves `state_hash` (the running hash after the block) and records the block's
    /// `witnesses` (the first per game and account is kept, `game_starts`), all in one SQLite
    /// transaction. `senders` is each transaction's `(from, nonce)` in block order (the bodies
    /// were parsed by whoever checked them; they are indexed, not parsed again here). Errors:
    /// SQLite failed (nothing was written), `block` does not extend the head (wrong height or
    /// `prev_hash`), or `senders` does not have one entry per transaction.
    pub fn commit_block(
        &mut self,
        block: &Block,
        senders: &[(&str, u64)],
        writes: &WriteSet,
        state_hash: &StateHash,
        witnesses: &[StartWitness],
    ) -> Result<(), StorageError> {
        self.commit_blocks(&[(block, senders)], writes, state_hash, witnesses)
    }

    /// Stores `blocks` (consecutive heights, the first the next after the head), each with its
    /// transactions' `(from, nonce)` as in [`Storage::commit_block`], applies `writes` (the net
    /// state writes of all of them in order: a key's last write wins) and saves `state_hash`
    /// (the running hash after the last) and records `witnesses` (theirs, in block order), all
    /// in one SQLite transaction, so one fsync: after a crash
    /// the database holds all of them or none. The rows are exactly those that committing the
    /// blocks one by one writes (the `state` table ends the same, each block's rows and account
    /// numbers are written in order). A verifying follower that is catching up commits its
    /// blocks this way (`replica/follower.rs`). Errors: SQLite failed (nothing was written), a
    /// block does not extend the one before it (or the head), a `senders` list does not have
    /// one entry per transaction, or `blocks` is empty.
    pub fn commit_blocks(
        &mut self,
        blocks: &[(&Block, &[(&str, u64)])],
        writes: &WriteSet,
        state_hash: &StateHash,
        witnesses: &[StartWitness],
    ) -> Result<(), StorageError> {
        let Some((last, _)) = blocks.last() else {
            return Err(corrupt("a commit of no block"));
        };
        let tx = self.conn.transaction()?;
        let mut parent: Option<(u64, [u8; 32])> = tx
            .query_row(
                "SELECT height, header FROM blocks ORDER BY height DESC LIMIT 1",
                [],
                |r| {
                    let header: Vec<u8> = r.get(1)?;
                    Ok((
                        r.get::<_, i64>(0)? as u64,
                        gamechain_chain::hash::sha256(&header),
                    ))
                },
            )
            .optional()?;
        for (block, senders) in blocks {
            let h = &block.header.header;
            match parent {
                Some((height, hash)) if height + 1 == h.height && hash == h.prev_hash => {}
                other => {
                    return Err(corrupt(format!(
                        "block {} does not extend the stored head {:?}",
                        h.height,
                        other.map(|(height, hash)| (height, hex::encode(hash)))
                    )))
                }
            }
            write_block_rows(&tx, block, senders)?;
            parent = Some((h.height, h.hash()));
        }
        write_state(&tx, last.height(), writes, state_hash)?;
        write_starts(&tx, witnesses)?;
        tx.commit()?;
        // The block before the last too, so that the record's other slot holds the block
        // before its newest (a torn write of one slot leaves the other).
        if let [.., (before, _), _] = blocks {
            self.record_head(before)?;
        }
        self.record_head(last)
    }

    /// Writes the head record after a commit (writers only).
    fn record_head(&mut self, block: &Block) -> Result<(), StorageError> {
        match &mut self.record {
            Some(record) => record
                .write(block.height(), &block.hash_hex())
                .map_err(|e| StorageError::Io(e.to_string())),
            None => Ok(()),
        }
    }

    /// Takes the writer's head record out (`None` for readers, or when taken already), e.g. to
    /// check it against the head ([`check_head_record`](crate::head_record::check_head_record));
    /// commits write none until [`Storage::put_head_record`] puts it back.
    pub fn take_head_record(&mut self) -> Option<HeadRecord> {
        self.record.take()
    }

    /// The writer's head record (`None` for readers, or while taken out).
    pub fn head_record(&self) -> Option<&HeadRecord> {
        self.record.as_ref()
    }

    /// Puts a head record taken by [`Storage::take_head_record`] back.
    pub fn put_head_record(&mut self, record: HeadRecord) {
        self.record = Some(record);
    }

    /// Runs `PRAGMA quick_check` (every page and b-tree of the file and its WAL, without the
    /// index-content cross-check of `integrity_check`): `Ok` when it answers `ok`. Errors:
    /// [`StorageError::Damaged`] with its first (at most 5) findings, or the SQLite error that
    /// stopped it (a file too damaged to read). Costs a full read of the database: see
    /// `integrity_check` in `config.rs` for when the node runs it.
    pub fn quick_check(&self) -> Result<(), StorageError> {
        let damaged = |e: rusqlite::Error| StorageError::Damaged(e.to_string());
        let mut stmt = self
            .conn
            .prepare("PRAGMA quick_check(5)")
            .map_err(damaged)?;
        let rows: Vec<String> = stmt
            .query_map([], |r| r.get::<_, String>(0))
            .map_err(damaged)?
            .collect::<Result<_, _>>()
            .map_err(damaged)?;
        if rows.len() == 1 && rows[0] == "ok" {
            Ok(())
        } else {
            Err(StorageError::Damaged(rows.join("; ")))
        }
    }

    /// The head block's signed header and the saved running state hash; `None` when no block
    /// is stored. Errors when the saved hash is missing, malformed or saved at another height.
    pub fn head(&self) -> Result<Option<StoredHead>, StorageError> {
        let Some(height) = self
            .conn
            .query_row("SELECT MAX(height) FROM blocks", [], |r| {
                r.get::<_, Option<i64>>(0)
            })?
        else {
            return Ok(None);
        };
        let header = self
            .signed_header(height as u64)?
            .ok_or_else(|| corrupt("head block vanished"))?;
        let saved_at = self.meta_text("lthash_height")?;
        if saved_at.as_deref() != Some(height.to_string().as_str()) {
            return Err(corrupt(format!(
                "the saved state hash is for height {saved_at:?}, the head is {height}"
            )));
        }
        let bytes = self
            .meta("lthash")?
            .ok_or_else(|| corrupt("no saved state hash"))?;
        let state_hash = match bytes.len() {
            // A sparse Merkle chain saves its root; the tree is rebuilt from the stored state.
            32 => {
                let (tree, _) = self.state_hash(StateCommitment::SparseMerkle)?;
                if tree.root()[..] != bytes[..] {
                    return Err(corrupt(format!(
                        "the stored state's sparse Merkle root is {}, the saved root is {}",
                        hex::encode(tree.root()),
                        hex::encode(&bytes)
                    )));
                }
                tree
            }
            _ => StateHash::LtHash(LtHash::from_bytes(&bytes).ok_or_else(|| {
                corrupt("the saved state hash is neither 2048 LtHash bytes nor a 32-byte root")
            })?),
        };
        Ok(Some(StoredHead { header, state_hash }))
    }

    /// The signed header of block `height`, `None` above the head.
    pub fn signed_header(&self, height: u64) -> Result<Option<SignedHeader>, StorageError> {
        Ok(self.block_row(height, false)?.map(|(header, _)| header))
    }

    /// The signed header of block `height` and, with `end_block`, its end-block receipts
    /// (else empty); `None` above the head.
    fn block_row(
        &self,
        height: u64,
        end_block: bool,
    ) -> Result<Option<(SignedHeader, EndBlock)>, StorageError> {
        let Ok(key) = i64::try_from(height) else {
            return Ok(None);
        };
        let mut stmt = self
            .conn
            .prepare_cached("SELECT header, signature, end_block FROM blocks WHERE height = ?1")?;
        let mut rows = stmt.query([key])?;
        let Some(row) = rows.next()? else {
            return Ok(None);
        };
        let header: Header = borsh::from_slice(row.get_ref(0)?.as_blob()?)
            .map_err(|e| corrupt(format!("header of block {height}: {e}")))?;
        let signature = signature_of(row.get_ref(1)?)?;
        let receipts = if end_block {
            codec::decode_block_receipts(row.get_ref(2)?.as_blob()?).ok_or_else(|| {
                corrupt(format!(
                    "block {height}: its end-block receipts do not decode"
                ))
            })?
        } else {
            (Vec::new(), Vec::new())
        };
        Ok(Some((SignedHeader { header, signature }, receipts)))
    }

    /// Block `height` with its transactions and receipts, `None` above the head.
    pub fn block(&self, height: u64) -> Result<Option<Block>, StorageError> {
        let Some((header, (end_block, scheduled))) = self.block_row(height, true)? else {
            return Ok(None);
        };
        let (first, last) = match (
            tx_row_id(height, 0),
            tx_row_id(height, (1 << TX_INDEX_BITS) - 1),
        ) {
            (Some(first), Some(last)) => (first, last),
            _ => return Err(corrupt(format!("block {height}: height out of range"))),
        };
        let mut stmt = self.conn.prepare_cached(
            "SELECT body, signature, receipt FROM txs WHERE id BETWEEN ?1 AND ?2 ORDER BY id",
        )?;
        let mut rows = stmt.query([first, last])?;
        let mut txs = Vec::new();
        while let Some(row) = rows.next()? {
            txs.push(included_tx(row, 0)?);
        }
        Ok(Some(Block {
            header,
            scheduled,
            txs,
            end_block,
        }))
    }

    /// The included transaction `txid` with its block position and receipt, `None` if no
    /// block holds it.
    pub fn tx(&self, txid: &str) -> Result<Option<TxRecord>, StorageError> {
        let Some(key) = txid_bytes(txid) else {
            return Ok(None);
        };
        let mut stmt = self
            .conn
            .prepare_cached("SELECT id, body, signature, receipt FROM txs WHERE txid = ?1")?;
        let mut rows = stmt.query([key.as_slice()])?;
        let Some(row) = rows.next()? else {
            return Ok(None);
        };
        let (height, index) = tx_position(row.get(0)?);
        let IncludedTx { tx, receipt } = included_tx(row, 1)?;
        Ok(Some(TxRecord {
            tx,
            status: TxStatus::Included {
                height,
                index,
                receipt,
            },
        }))
    }

    /// Chains with validators only: creates the `validator_finality` table when missing
    /// (`height` PK, `digest` BLOB: the block's consensus digest, `certificate` BLOB or NULL:
    /// its encoded finality certificate, absent for a block finalized only through a
    /// descendant's). Errors: SQLite failed.
    pub fn ensure_validator_tables(&self) -> Result<(), StorageError> {
        self.conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS validator_finality (
                height INTEGER PRIMARY KEY, digest BLOB NOT NULL, certificate BLOB);
             CREATE TABLE IF NOT EXISTS validator_evidence (
                id INTEGER PRIMARY KEY, kind TEXT NOT NULL, view INTEGER NOT NULL,
                signer INTEGER NOT NULL, data BLOB NOT NULL, received_ms INTEGER NOT NULL,
                UNIQUE (kind, view, signer))",
        )?;
        Ok(())
    }

    /// Whether the `validator_evidence` table exists (a validator's database written by a
    /// build that records evidence).
    pub fn has_evidence_table(&self) -> Result<bool, StorageError> {
        let n: i64 = self.conn.query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'validator_evidence'",
            [],
            |r| r.get(0),
        )?;
        Ok(n > 0)
    }

    /// Stores one piece of evidence (creating the table when missing) unless one of the same
    /// `kind`, `view` and `signer` is stored, or the signer already has
    /// [`MAX_EVIDENCE_PER_SIGNER`]. `Ok(true)` when stored. The caller checked it. Errors:
    /// SQLite failed.
    pub fn put_evidence(&mut self, e: &StoredEvidence) -> Result<bool, StorageError> {
        self.ensure_validator_tables()?;
        let tx = self.conn.transaction()?;
        let held: i64 = tx.query_row(
            "SELECT COUNT(*) FROM validator_evidence WHERE signer = ?1",
            params![e.signer as i64],
            |r| r.get(0),
        )?;
        if held as usize >= MAX_EVIDENCE_PER_SIGNER {
            return Ok(false);
        }
        let n = tx.execute(
            "INSERT OR IGNORE INTO validator_evidence (kind, view, signer, data, received_ms) \
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                e.kind,
                e.view as i64,
                e.signer as i64,
                e.data,
                e.received_ms as i64
            ],
        )?;
        tx.commit()?;
        Ok(n == 1)
    }

    /// The stored evidence with `id > after`, oldest first, at most `limit`; none when the
    /// table is missing. Errors: SQLite failed.
    pub fn evidence_page(
        &self,
        after: u64,
        limit: usize,
    ) -> Result<Vec<StoredEvidence>, StorageError> {
        if !self.has_evidence_table()? {
            return Ok(Vec::new());
        }
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, kind, view, signer, data, received_ms FROM validator_evidence \
             WHERE id > ?1 ORDER BY id LIMIT ?2",
        )?;
        let rows = stmt.query_map(
            params![after.min(i64::MAX as u64) as i64, limit as i64],
            |r| {
                Ok(StoredEvidence {
                    id: r.get::<_, i64>(0)? as u64,
                    kind: r.get(1)?,
                    view: r.get::<_, i64>(2)? as u64,
                    signer: r.get::<_, i64>(3)? as u32,
                    data: r.get(4)?,
                    received_ms: r.get::<_, i64>(5)? as u64,
                })
            },
        )?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }

    /// How many pieces of evidence are stored (0 without the table). Errors: SQLite failed.
    pub fn evidence_count(&self) -> Result<u64, StorageError> {
        if !self.has_evidence_table()? {
            return Ok(0);
        }
        let n: i64 = self
            .conn
            .query_row("SELECT COUNT(*) FROM validator_evidence", [], |r| r.get(0))?;
        Ok(n as u64)
    }

    /// Whether the `validator_finality` table exists (a validator's database).
    pub fn has_validator_tables(&self) -> Result<bool, StorageError> {
        let n: i64 = self.conn.query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'validator_finality'",
            [],
            |r| r.get(0),
        )?;
        Ok(n > 0)
    }

    /// Records block `height`'s consensus digest and finality certificate. Written just before
    /// the block's own commit, so a stored block has its record; a record above the head (a
    /// crash in between) is read by nothing and rewritten when the block is committed.
    /// Databases written before that order may lack records: digests are then recomputed from
    /// the blocks. Errors: SQLite failed.
    pub fn put_validator_finality(
        &mut self,
        height: u64,
        digest: &[u8; 32],
        certificate: Option<&[u8]>,
    ) -> Result<(), StorageError> {
        self.conn.execute(
            "INSERT OR REPLACE INTO validator_finality (height, digest, certificate) VALUES (?1, ?2, ?3)",
            params![height as i64, &digest[..], certificate],
        )?;
        Ok(())
    }

    /// [`put_validator_finality`](Self::put_validator_finality) of each `(height, digest,
    /// certificate)`, in one SQLite transaction (creating the table when missing): a follower
    /// records the finality it checked for a run of blocks just committed. Errors: SQLite
    /// failed (nothing written).
    pub fn put_validator_finalities(
        &mut self,
        rows: &[(u64, FinalityRecord)],
    ) -> Result<(), StorageError> {
        if rows.is_empty() {
            return Ok(());
        }
        self.ensure_validator_tables()?;
        let tx = self.conn.transaction()?;
        {
            let mut put = tx.prepare_cached(
                "INSERT OR REPLACE INTO validator_finality (height, digest, certificate) VALUES (?1, ?2, ?3)",
            )?;
            for (height, (digest, certificate)) in rows {
                put.execute(params![*height as i64, &digest[..], certificate.as_deref()])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Block `height`'s recorded consensus digest, if any. Errors: SQLite failed, or a stored
    /// digest is not 32 bytes.
    pub fn validator_digest(&self, height: u64) -> Result<Option<[u8; 32]>, StorageError> {
        Ok(self.validator_finality(height)?.map(|(d, _)| d))
    }

    /// Block `height`'s recorded consensus digest and finality certificate, if any.
    pub fn validator_finality(&self, height: u64) -> Result<Option<FinalityRecord>, StorageError> {
        let row: Option<(Vec<u8>, Option<Vec<u8>>)> = self
            .conn
            .query_row(
                "SELECT digest, certificate FROM validator_finality WHERE height = ?1",
                params![height as i64],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        match row {
            None => Ok(None),
            Some((d, cert)) => {
                let digest: [u8; 32] = d.try_into().map_err(|_| {
                    corrupt(format!(
                        "validator_finality: digest of {height} is not 32 bytes"
                    ))
                })?;
                Ok(Some((digest, cert)))
            }
        }
    }

    /// The highest height at or below `height` with a recorded consensus digest, and the digest.
    pub fn validator_digest_at_or_below(
        &self,
        height: u64,
    ) -> Result<Option<(u64, [u8; 32])>, StorageError> {
        let row: Option<(i64, Vec<u8>)> = self
            .conn
            .query_row(
                "SELECT height, digest FROM validator_finality WHERE height <= ?1 \
                 ORDER BY height DESC LIMIT 1",
                params![height as i64],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        match row {
            None => Ok(None),
            Some((h, d)) => {
                let digest: [u8; 32] = d
                    .try_into()
                    .map_err(|_| corrupt("validator_finality: a digest is not 32 bytes"))?;
                Ok(Some((h as u64, digest)))
            }
        }
    }

    /// Whether a block holds the transaction `txid`.
    pub fn has_tx(&self, txid: &str) -> Result<bool, StorageError> {
        let Some(key) = txid_bytes(txid) else {
            return Ok(false);
        };
        let mut stmt = self
            .conn
            .prepare_cached("SELECT EXISTS (SELECT 1 FROM txs WHERE txid = ?1)")?;
        Ok(stmt.query_row([key.as_slice()], |r| r.get(0))?)
    }

    /// The block position `(height, index)` of the first transaction (in txid order) whose
    /// txid begins with the bytes `prefix` (1 to 32 bytes), `None` when no stored one does.
    /// One range read of the `txs_by_txid` index (the games of this repository take the first
    /// 16 hex characters of their creating transaction's txid as their id).
    pub fn tx_with_prefix(&self, prefix: &[u8]) -> Result<Option<(u64, u32)>, StorageError> {
        if prefix.is_empty() || prefix.len() > 32 {
            return Ok(None);
        }
        // The smallest blob above every blob starting with `prefix`: the prefix "plus one"
        // (a prefix of only 0xff bytes has none).
        let mut upper = prefix.to_vec();
        while upper.last() == Some(&0xff) {
            upper.pop();
        }
        let row = if let Some(last) = upper.last_mut() {
            *last += 1;
            let mut stmt = self.conn.prepare_cached(
                "SELECT id FROM txs WHERE txid >= ?1 AND txid < ?2 ORDER BY txid LIMIT 1",
            )?;
            stmt.query_row([prefix, upper.as_slice()], |r| r.get::<_, i64>(0))
                .optional()?
        } else {
            let mut stmt = self
                .conn
                .prepare_cached("SELECT id FROM txs WHERE txid >= ?1 ORDER BY txid LIMIT 1")?;
            stmt.query_row([prefix], |r| r.get::<_, i64>(0))
                .optional()?
        };
        Ok(row.map(tx_position))
    }

    /// Every stored module code by hash.
    pub fn code(&self) -> Result<BTreeMap<String, Vec<u8>>, StorageError> {
        let mut stmt = self
            .conn
            .prepare("SELECT hash, wasm FROM code ORDER BY hash")?;
        let rows = stmt.query_map([], |r| {
            Ok((
                hex::encode(r.get::<_, Vec<u8>>(0)?),
                r.get::<_, Vec<u8>>(1)?,
            ))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The module code whose lowercase hex SHA-256 is `hash`, `None` when not stored.
    pub fn code_by_hash(&self, hash: &str) -> Result<Option<Vec<u8>>, StorageError> {
        let Some(key) = hex_hash(&hash.to_ascii_lowercase()) else {
            return Ok(None);
        };
        Ok(self
            .conn
            .query_row(
                "SELECT wasm FROM code WHERE hash = ?1",
                [key.as_slice()],
                |r| r.get(0),
            )
            .optional()?)
    }

    /// The height of the highest stored block, `None` when none is stored.
    pub fn head_height(&self) -> Result<Option<u64>, StorageError> {
        let height: Option<i64> =
            self.conn
                .query_row("SELECT MAX(height) FROM blocks", [], |r| r.get(0))?;
        Ok(height.map(|h| h as u64))
    }

    /// Opens a read transaction and takes its snapshot now: until [`Storage::end_snapshot`],
    /// this connection reads the database as it is at this call, whatever is committed
    /// meanwhile (WAL mode). Errors: SQLite failed.
    pub fn begin_snapshot(&self) -> Result<(), StorageError> {
        self.conn.execute_batch("BEGIN DEFERRED")?;
        // A deferred transaction takes its snapshot at its first read.
        self.conn
            .query_row("SELECT count(*) FROM meta", [], |_| Ok(()))?;
        Ok(())
    }

    /// Ends the read transaction [`Storage::begin_snapshot`] opened. Errors: SQLite failed.
    pub fn end_snapshot(&self) -> Result<(), StorageError> {
        self.conn.execute_batch("ROLLBACK")?;
        Ok(())
    }

    /// The committed value at state key `key`, `None` when absent (one indexed lookup).
    pub fn state_get(&self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT value FROM state WHERE key = ?1")?;
        Ok(stmt.query_row([key], |r| r.get(0)).optional()?)
    }

    /// Committed state entries whose key starts with `prefix`, ascending (byte order: SQLite's
    /// `BINARY` collation of TEXT is the byte order of Rust's `str`), strictly after
    /// `start_after` when given, at most `limit`: exactly [`gamechain_runtime::State::scan`] of
    /// the stored state. Reads at most `limit + 1` rows of the `state` index.
    pub fn state_scan(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Vec<u8>)>, StorageError> {
        let mut out = Vec::new();
        if limit == 0 {
            return Ok(out);
        }
        // SQLite's LIMIT is an i64; a negative one means none.
        let sql_limit = i64::try_from(limit).unwrap_or(-1);
        let mut stmt;
        let mut rows = match start_after {
            Some(after) if after >= prefix => {
                stmt = self.conn.prepare_cached(
                    "SELECT key, value FROM state WHERE key > ?1 ORDER BY key LIMIT ?2",
                )?;
                stmt.query(params![after, sql_limit])?
            }
            _ => {
                stmt = self.conn.prepare_cached(
                    "SELECT key, value FROM state WHERE key >= ?1 ORDER BY key LIMIT ?2",
                )?;
                stmt.query(params![prefix, sql_limit])?
            }
        };
        while let Some(row) = rows.next()? {
            let key = match row.get_ref(0)? {
                ValueRef::Text(k) => k,
                _ => return Err(corrupt("a state key is not text")),
            };
            if !key.starts_with(prefix.as_bytes()) {
                break;
            }
            let key =
                String::from_utf8(key.to_vec()).map_err(|_| corrupt("a state key is not UTF-8"))?;
            out.push((key, row.get::<_, Vec<u8>>(1)?));
            if out.len() == limit {
                break;
            }
        }
        Ok(out)
    }

    /// Sets this connection's SQLite page cache to `kb` KiB.
    pub fn set_page_cache_kb(&self, kb: u32) -> Result<(), StorageError> {
        self.conn
            .execute_batch(&format!("PRAGMA cache_size=-{kb}"))?;
        Ok(())
    }

    /// Replaces the whole stored state with `state` (tests of state readers).
    #[cfg(test)]
    pub(crate) fn replace_state_for_tests(&self, state: &MemState) -> Result<(), StorageError> {
        self.conn.execute("DELETE FROM state", [])?;
        for (k, v) in &state.map {
            self.conn.execute(
                "INSERT INTO state (key, value) VALUES (?1, ?2)",
                params![k, v],
            )?;
        }
        Ok(())
    }

    /// The commitment of kind `kind` to the whole stored state and its number of entries, read
    /// in key order one row at a time (a full read of the `state` table, about 1 s per million
    /// entries; an LtHash's memory does not grow with the state, a tree's holds 64 bytes per
    /// entry while it is built and about 240 after).
    pub fn state_hash(&self, kind: StateCommitment) -> Result<(StateHash, u64), StorageError> {
        let mut stmt = self.conn.prepare("SELECT key, value FROM state")?;
        let mut rows = stmt.query([])?;
        let mut hash = StateHash::builder(kind);
        let mut entries = 0u64;
        while let Some(row) = rows.next()? {
            let key = match row.get_ref(0)? {
                ValueRef::Text(k) => {
                    std::str::from_utf8(k).map_err(|_| corrupt("a state key is not UTF-8"))?
                }
                _ => return Err(corrupt("a state key is not text")),
            };
            hash.insert(key, row.get_ref(1)?.as_blob()?);
            entries += 1;
        }
        Ok((hash.finish(), entries))
    }

    /// Calls `f` on every committed state entry in ascending key order, one row at a time
    /// (memory does not grow with the state): a snapshot's writer (`snapshot.rs`) reads the
    /// state this way inside a read transaction. Errors: SQLite failed, a key that is not UTF-8
    /// text, or `f`'s error (which stops the read).
    pub fn for_each_state_entry(
        &self,
        mut f: impl FnMut(&str, &[u8]) -> Result<(), StorageError>,
    ) -> Result<(), StorageError> {
        let mut stmt = self
            .conn
            .prepare("SELECT key, value FROM state ORDER BY key")?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let key = match row.get_ref(0)? {
                ValueRef::Text(k) => {
                    std::str::from_utf8(k).map_err(|_| corrupt("a state key is not UTF-8"))?
                }
                _ => return Err(corrupt("a state key is not text")),
            };
            f(key, row.get_ref(1)?.as_blob()?)?;
        }
        Ok(())
    }

    /// Calls `f` on every committed state key, in no promised order, one row at a time: a
    /// sparse Merkle chain's snapshot writer (`snapshot.rs`) sorts them by path. Errors: SQLite
    /// failed, a key that is not UTF-8 text, or `f`'s error (which stops the read).
    pub fn for_each_state_key(
        &self,
        mut f: impl FnMut(&str) -> Result<(), StorageError>,
    ) -> Result<(), StorageError> {
        let mut stmt = self.conn.prepare("SELECT key FROM state")?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            match row.get_ref(0)? {
                ValueRef::Text(k) => {
                    f(std::str::from_utf8(k).map_err(|_| corrupt("a state key is not UTF-8"))?)?
                }
                _ => return Err(corrupt("a state key is not text")),
            }
        }
        Ok(())
    }

    /// The lowest stored block's height (0 on an archive node; the snapshot base, or the
    /// retention cutoff, on a node that joined from a snapshot or prunes), `None` when none is
    /// stored.
    pub fn oldest_height(&self) -> Result<Option<u64>, StorageError> {
        let height: Option<i64> =
            self.conn
                .query_row("SELECT MIN(height) FROM blocks", [], |r| r.get(0))?;
        Ok(height.map(|h| h as u64))
    }

    /// Deletes the blocks below `below` with their transactions (and finality records), at
    /// most `max_blocks` of them from the lowest, in one transaction; never the head. Returns
    /// the new lowest height (`retain_blocks`, `snapshot.rs`'s caller in `chain.rs`). Errors:
    /// SQLite failed (nothing deleted).
    pub fn prune_blocks_below(&mut self, below: u64, max_blocks: u64) -> Result<u64, StorageError> {
        let (Some(oldest), Some(head)) = (self.oldest_height()?, self.head_height()?) else {
            return Ok(0);
        };
        let cut = below.min(head).min(oldest.saturating_add(max_blocks));
        if cut <= oldest {
            return Ok(oldest);
        }
        let first_kept_tx = tx_row_id(cut, 0).ok_or_else(|| corrupt("height out of range"))?;
        let finality = self.has_validator_tables()?;
        let tx = self.conn.transaction()?;
        tx.execute("DELETE FROM txs WHERE id < ?1", [first_kept_tx])?;
        // The headers stay: every block's descent from block 0 remains provable.
        tx.execute(
            "INSERT OR REPLACE INTO old_headers (height, header) \
             SELECT height, header FROM blocks WHERE height < ?1",
            [cut as i64],
        )?;
        tx.execute("DELETE FROM blocks WHERE height < ?1", [cut as i64])?;
        if finality {
            tx.execute(
                // The new oldest block's parent keeps its record (its digest): a joining node
                // recomputes a snapshot's base digest from it.
                "DELETE FROM validator_finality WHERE height + 1 < ?1",
                [cut as i64],
            )?;
        }
        tx.commit()?;
        Ok(cut)
    }

    /// The borsh headers of blocks `from` to `from + count - 1` that this node holds, from its
    /// blocks or its old headers, ascending, as `(height, header bytes)`; heights it does not
    /// hold (above the head, or old headers it never had: a joined validator's) are missing
    /// from the answer. Errors: SQLite failed.
    pub fn headers(&self, from: u64, count: u64) -> Result<Vec<(u64, Vec<u8>)>, StorageError> {
        let (Ok(lo), Ok(hi)) = (
            i64::try_from(from),
            i64::try_from(from.saturating_add(count)),
        ) else {
            return Ok(Vec::new());
        };
        let mut stmt = self.conn.prepare_cached(
            "SELECT height, header FROM old_headers WHERE height >= ?1 AND height < ?2 \
             UNION ALL SELECT height, header FROM blocks WHERE height >= ?1 AND height < ?2 \
             ORDER BY height",
        )?;
        let rows = stmt.query_map([lo, hi], |r| {
            Ok((r.get::<_, i64>(0)? as u64, r.get::<_, Vec<u8>>(1)?))
        })?;
        let mut out = Vec::new();
        for row in rows {
            out.push(row?);
        }
        Ok(out)
    }

    /// Makes an empty database the chain of `genesis_hash` starting at `block` (its base, from a
    /// snapshot: `replica/snapshot_join.rs`), in one transaction: `fill` is given a function that
    /// inserts one state entry (keys must be distinct) and returns the state's running hash,
    /// which must hash to `block`'s state root; then the block's rows (`senders` as in
    /// [`Storage::commit_block`]), the genesis module `code`, the chain's identity, the
    /// running hash and, on a chain with validators, the block's checked `finality` record and
    /// its parent's digest (the `validator_finality` table must exist), and the headers below
    /// the block that `old_headers` yields (`(height, borsh header)`, the join's proven chain down
    /// to block 0; none on a chain with validators, whose certificates bind the chain). Nothing
    /// is written unless all of it is. Returns `Ok(Err(refusal))` when `fill` or `old_headers`
    /// refused (its text) or the root does not match; errors: SQLite failed, or the database
    /// holds a block already.
    #[allow(clippy::too_many_arguments)]
    pub fn import_base(
        &mut self,
        block: &Block,
        senders: &[(&str, u64)],
        code: &BTreeMap<String, Vec<u8>>,
        genesis_hash: &str,
        engine_config_hash: &str,
        finality: Option<&BaseFinality>,
        old_headers: &mut dyn Iterator<Item = Result<(u64, Vec<u8>), String>>,
        fill: impl FnOnce(
            &mut dyn FnMut(&str, &[u8]) -> Result<(), StorageError>,
        ) -> Result<Result<StateHash, String>, StorageError>,
    ) -> Result<Result<(), String>, StorageError> {
        let tx = self.conn.transaction()?;
        let existing: i64 = tx.query_row("SELECT COUNT(*) FROM blocks", [], |r| r.get(0))?;
        if existing != 0 {
            return Err(corrupt("a chain is stored already"));
        }
        tx.execute("DELETE FROM state", [])?;
        let state_hash = {
            let mut put = tx.prepare_cached("INSERT INTO state (key, value) VALUES (?1, ?2)")?;
            let mut insert = |k: &str, v: &[u8]| -> Result<(), StorageError> {
                put.execute(params![k, v])?;
                Ok(())
            };
            match fill(&mut insert)? {
                Ok(h) => h,
                Err(refused) => return Ok(Err(refused)),
            }
        };
        if state_hash.root() != block.header.header.state_root {
            return Ok(Err(format!(
                "its entries hash to state root {}, but block {} has state root {}",
                hex::encode(state_hash.root()),
                block.height(),
                hex::encode(block.header.header.state_root)
            )));
        }
        for (hash, wasm) in code {
            let key = hex_hash(hash).ok_or_else(|| corrupt(format!("code hash `{hash}`")))?;
            tx.execute(
                "INSERT OR REPLACE INTO code (hash, wasm) VALUES (?1, ?2)",
                params![key.as_slice(), wasm],
            )?;
        }
        {
            let mut put = tx.prepare_cached(
                "INSERT OR REPLACE INTO old_headers (height, header) VALUES (?1, ?2)",
            )?;
            for item in old_headers {
                match item {
                    Ok((height, header)) => {
                        let height = i64::try_from(height)
                            .map_err(|_| corrupt("a header's height out of range"))?;
                        put.execute(params![height, header])?;
                    }
                    Err(refused) => return Ok(Err(refused)),
                }
            }
        }
        set_meta(&tx, "genesis_hash", genesis_hash.as_bytes())?;
        set_meta(&tx, "engine_config_hash", engine_config_hash.as_bytes())?;
        write_block_rows(&tx, block, senders)?;
        write_state(&tx, block.height(), &WriteSet::new(), &state_hash)?;
        if let Some(BaseFinality {
            record: (digest, certificate),
            parent_digest,
        }) = finality
        {
            tx.execute(
                "INSERT OR REPLACE INTO validator_finality (height, digest, certificate) VALUES (?1, ?2, ?3)",
                params![block.height() as i64, &digest[..], certificate.as_deref()],
            )?;
            if let Some(parent) = block.height().checked_sub(1) {
                tx.execute(
                    "INSERT OR REPLACE INTO validator_finality (height, digest, certificate) VALUES (?1, ?2, NULL)",
                    params![parent as i64, &parent_digest[..]],
                )?;
            }
        }
        tx.commit()?;
        self.record_head(block)?;
        Ok(Ok(()))
    }

    /// The recorded starting balances of `module`'s game `game` (`game_starts`), one per
    /// account, ordered by account; empty for a game this node saw no step of (or on a chain
    /// that keeps no game logs). Errors: SQLite failed, a stored proof does not parse.
    pub fn game_starts(&self, module: &str, game: &str) -> Result<Vec<GameStart>, StorageError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT account, height, value, proof FROM game_starts
             WHERE module = ?1 AND game = ?2 ORDER BY account",
        )?;
        let rows = stmt.query_map(params![module, game], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, Option<Vec<u8>>>(2)?,
                r.get::<_, Option<Vec<u8>>>(3)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (account, height, value, proof) = row?;
            let proven = match proof {
                None => None,
                Some(p) => Some((
                    value,
                    serde_json::from_slice::<StateProof>(&p)
                        .map_err(|e| corrupt(format!("game_starts proof: {e}")))?,
                )),
            };
            out.push(GameStart {
                account,
                height: height as u64,
                proven,
            });
        }
        Ok(out)
    }

    /// The session record step `txid` (lowercase hex) was admitted under
    /// ([`SessionWitness`](gamechain_runtime::SessionWitness)): `None` when none is recorded (not
    /// a logged `session_game` step, or committed before this table); else its key and, when
    /// the parent's root shows it, its value (`None`: absent) with its proof.
    #[allow(clippy::type_complexity, reason = "one row's optional parts")]
    pub fn session_step(
        &self,
        txid: &str,
    ) -> Result<Option<(String, Option<(Option<Vec<u8>>, StateProof)>)>, StorageError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT key, value, proof FROM session_steps WHERE txid = ?1")?;
        let row = stmt
            .query_row(params![txid], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, Option<Vec<u8>>>(1)?,
                    r.get::<_, Option<Vec<u8>>>(2)?,
                ))
            })
            .optional()?;
        let Some((key, value, proof)) = row else {
            return Ok(None);
        };
        let proven = match proof {
            None => None,
            Some(p) => Some((
                value,
                serde_json::from_slice::<StateProof>(&p)
                    .map_err(|e| corrupt(format!("session_steps proof: {e}")))?,
            )),
        };
        Ok(Some((key, proven)))
    }

    /// The whole committed state, in memory (the verifier's start, tests; a node reads its
    /// state through `ledger::state_store::StoredState` instead).
    pub fn load_state(&self) -> Result<MemState, StorageError> {
        let mut stmt = self.conn.prepare("SELECT key, value FROM state")?;
        let rows = stmt.query_map([], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, Vec<u8>>(1)?))
        })?;
        let mut state = MemState::new();
        for row in rows {
            let (k, v) = row?;
            state.map.insert(k, v);
        }
        Ok(state)
    }
}

fn set_meta(tx: &Transaction<'_>, key: &str, value: &[u8]) -> Result<(), StorageError> {
    tx.execute(
        "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)",
        params![key, value],
    )?;
    Ok(())
}

/// The 32 bytes of a lowercase hex SHA-256 (a code hash); `None` when it is not one.
fn hex_hash(hash: &str) -> Option<[u8; 32]> {
    txid_bytes(hash)
}

fn parse_receipt(text: &str) -> Result<Receipt, StorageError> {
    serde_json::from_str(text).map_err(|e| corrupt(format!("stored receipt: {e}")))
}

/// The rows of one block (its header, its transactions with their receipts, new accounts),
/// inside the caller's transaction.
fn write_block_rows(
    tx: &Transaction<'_>,
    block: &Block,
    senders: &[(&str, u64)],
) -> Result<(), StorageError> {
    let h = &block.header.header;
    if senders.len() != block.txs.len() {
        return Err(corrupt(format!(
            "block {}: {} senders for {} transactions",
            h.height,
            senders.len(),
            block.txs.len()
        )));
    }
    let height = i64::try_from(h.height).map_err(|_| corrupt("height above i64"))?;
    tx.prepare_cached(
        "INSERT INTO blocks (height, header, signature, end_block) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![
        height,
        h.to_borsh(),
        signature_value(&block.header.signature),
        codec::encode_block_receipts(&block.end_block, &block.scheduled)
    ])?;
    let mut insert_tx = tx.prepare_cached(
        "INSERT INTO txs (id, txid, sender, nonce, body, signature, receipt) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    let mut find_account = tx.prepare_cached("SELECT id FROM accounts WHERE address = ?1")?;
    let mut add_account = tx.prepare_cached("INSERT INTO accounts (address) VALUES (?1)")?;
    // Each sender's account id, looked up (or added) once per block.
    let mut ids: std::collections::HashMap<&str, i64> = std::collections::HashMap::new();
    for (idx, (t, (sender, nonce))) in block.txs.iter().zip(senders).enumerate() {
        let id = tx_row_id(h.height, idx as u64).ok_or_else(|| {
            corrupt(format!(
                "block {}: more than 2^{TX_INDEX_BITS} transactions",
                h.height
            ))
        })?;
        let nonce = i64::try_from(*nonce).map_err(|_| corrupt("nonce above i64"))?;
        let account = match ids.get(sender) {
            Some(&a) => a,
            None => {
                let a = match find_account
                    .query_row([sender], |r| r.get::<_, i64>(0))
                    .optional()?
                {
                    Some(a) => a,
                    None => {
                        add_account.execute([sender])?;
                        tx.last_insert_rowid()
                    }
                };
                ids.insert(*sender, a);
                a
            }
        };
        let body = t.tx.body();
        let body_value = match codec::encode_body(body) {
            codec::BodyColumn::Text(text) => {
                rusqlite::types::ToSqlOutput::Borrowed(ValueRef::Text(text.as_bytes()))
            }
            codec::BodyColumn::Compressed(bytes) => {
                rusqlite::types::ToSqlOutput::Owned(rusqlite::types::Value::Blob(bytes))
            }
        };
        insert_tx.execute(params![
            id,
            t.tx.txid_bytes().as_slice(),
            account,
            nonce,
            body_value,
            signature_value(t.tx.signature()),
            codec::pack_receipt(&t.receipt, body)
        ])?;
    }
    Ok(())
}

/// State `writes` (`None` deletes) and the running hash after block `height`, inside the
/// caller's transaction.
fn write_state(
    tx: &Transaction<'_>,
    height: u64,
    writes: &WriteSet,
    state_hash: &StateHash,
) -> Result<(), StorageError> {
    let mut put = tx.prepare_cached("INSERT OR REPLACE INTO state (key, value) VALUES (?1, ?2)")?;
    let mut delete = tx.prepare_cached("DELETE FROM state WHERE key = ?1")?;
    for (key, value) in writes {
        match value {
            Some(v) => put.execute(params![key, v])?,
            None => delete.execute([key])?,
        };
    }
    set_meta(tx, "lthash", &state_hash.to_bytes())?;
    set_meta(tx, "lthash_height", height.to_string().as_bytes())?;
    Ok(())
}

/// Records `witnesses` in `game_starts`, inside the caller's transaction: each game and account
/// keeps its first step's, replaced once by its first step that moves its GOLD.
fn write_starts(tx: &Transaction<'_>, witnesses: &[StartWitness]) -> Result<(), StorageError> {
    if witnesses.is_empty() {
        return Ok(());
    }
    let mut put = tx.prepare_cached(
        "INSERT INTO game_starts (module, game, account, height, moves, value, proof)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT (module, game, account) DO UPDATE SET
           height = excluded.height, moves = 1, value = excluded.value, proof = excluded.proof
         WHERE game_starts.moves = 0 AND excluded.moves = 1",
    )?;
    for w in witnesses {
        let height = i64::try_from(w.height).map_err(|_| corrupt("height above i64"))?;
        let (value, proof) = match &w.proven {
            Some((value, proof)) => (
                value.as_deref(),
                Some(serde_json::to_vec(proof).map_err(|e| corrupt(e.to_string()))?),
            ),
            None => (None, None),
        };
        put.execute(params![
            w.module,
            w.game,
            w.account,
            height,
            w.moves_balance,
            value,
            proof
        ])?;
        if let Some(session) = &w.session {
            let (value, proof) = match &session.proven {
                Some((value, proof)) => (
                    value.as_deref(),
                    Some(serde_json::to_vec(proof).map_err(|e| corrupt(e.to_string()))?),
                ),
                None => (None, None),
            };
            // One row per step (a step naming two games has two witnesses, one session).
            tx.prepare_cached(
                "INSERT OR IGNORE INTO session_steps (txid, key, value, proof)
                 VALUES (?1, ?2, ?3, ?4)",
            )?
            .execute(params![w.txid, session.key, value, proof])?;
        }
    }
    Ok(())
}

pub mod codec;
#[cfg(test)]
mod tests;
