//! The node's SQLite database, one file `<data_dir>/chain.sqlite`: schema and migrations, the
//! one-transaction block commit, and the reads the API and the start-up need.
//!
//! Connections run in WAL mode with `synchronous=FULL`, so a committed block survives a crash
//! or power loss and readers never block the writer. One [`Storage`] opened with
//! [`Storage::open`] writes (the sequencer's); any number opened with [`Storage::open_reader`]
//! only read (the API's).
//!
//! Schema (version 1; `meta.schema_version` counts the [`MIGRATIONS`] applied):
//!
//! | table | columns | what |
//! |---|---|---|
//! | `meta` | `key` TEXT PK, `value` BLOB | `schema_version`, `genesis_hash` (hex), `engine_config_hash` (hex), `lthash` (the running [`StateHash`], 2048 bytes), `lthash_height` |
//! | `blocks` | `height` PK, `hash` (32 bytes, unique), `header` (borsh), `header_json`, `signature`, `tx_count` | one row per block, genesis is height 0 |
//! | `txs` | `txid` TEXT PK, `height`, `idx`, `body`, `signature`, `sender`, `nonce` | every included transaction, exact body bytes |
//! | `receipts` | (`height`, `idx`) PK, `txid`, `ok`, `receipt` (JSON) | one per transaction |
//! | `end_block_receipts` | (`height`, `idx`) PK, `module`, `ok`, `receipt` (JSON) | one per module with `end_block`, id order |
//! | `state` | `key` TEXT PK, `value` BLOB | the committed state after the head block |
//! | `code` | `hash` TEXT PK, `wasm` BLOB | module code by lowercase hex SHA-256 |
//!
//! A block and everything it changes (its rows, its receipts, its state writes, the LtHash) are
//! written by [`Storage::commit_block`] in one SQLite transaction: after a crash the database
//! holds either the whole block or none of it.
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

use gamechain_runtime::chain::{Header, Receipt, SignedHeader, SignedTx, StateHash};
use gamechain_runtime::{MemState, WriteSet};
use rusqlite::{params, Connection, OpenFlags, OptionalExtension, Transaction};

use crate::ledger::head_record::HeadRecord;

use gamechain_chain::wire::{Block, IncludedTx, TxRecord, TxStatus};

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
];

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
    /// The database was written by a newer node (`found` > this node's [`MIGRATIONS`] count).
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

impl From<rusqlite::Error> for StorageError {
    fn from(e: rusqlite::Error) -> Self {
        StorageError::Sqlite(e.to_string())
    }
}

fn corrupt(msg: impl Into<String>) -> StorageError {
    StorageError::Corrupt(msg.into())
}

/// The head of the stored chain: its signed header and the running state hash after it.
#[derive(Debug, Clone)]
pub struct StoredHead {
    /// The highest block's signed header.
    pub header: SignedHeader,
    /// The LtHash of the state after it (its `root()` is the header's `state_root`).
    pub state_hash: StateHash,
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

/// `<db path>.lock`: the file a writer holds an exclusive lock on, so that two nodes never
/// write (and sign blocks for) one database.
pub fn lock_path(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
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
        storage.migrate()?;
        Ok(storage)
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
        if version as usize != MIGRATIONS.len() {
            return Err(corrupt(format!(
                "reader expects schema version {}, found {version}",
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
        for (i, step) in MIGRATIONS.iter().enumerate().skip(found as usize) {
            let version = i as u32 + 1;
            let tx = self.conn.transaction()?;
            tx.execute_batch(step)
                .map_err(|e| StorageError::Sqlite(format!("migration {version}: {e}")))?;
            set_meta(&tx, "schema_version", version.to_string().as_bytes())?;
            tx.commit()?;
            tracing::info!(path = %self.path.display(), version, "database migrated");
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
            tx.execute(
                "INSERT OR REPLACE INTO code (hash, wasm) VALUES (?1, ?2)",
                params![hash, wasm],
            )?;
        }
        set_meta(&tx, "genesis_hash", genesis_hash.as_bytes())?;
        set_meta(&tx, "engine_config_hash", engine_config_hash.as_bytes())?;
        let writes: WriteSet = entries
            .iter()
            .map(|(k, v)| (k.clone(), Some(v.clone())))
            .collect();
        write_block(&tx, block, &[], &writes, state_hash)?;
        tx.commit()?;
        self.record_head(block)
    }

    /// Stores `block` (the next height after the head), applies its state `writes` (`None`
    /// deletes) and saves `state_hash` (the LtHash after the block), all in one SQLite
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
    ) -> Result<(), StorageError> {
        let tx = self.conn.transaction()?;
        let head: Option<(i64, Vec<u8>)> = tx
            .query_row(
                "SELECT height, hash FROM blocks ORDER BY height DESC LIMIT 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        let h = &block.header.header;
        match head {
            Some((height, hash)) if height as u64 + 1 == h.height && hash == h.prev_hash => {}
            other => {
                return Err(corrupt(format!(
                    "block {} does not extend the stored head {:?}",
                    h.height,
                    other.map(|(height, hash)| (height, hex::encode(hash)))
                )))
            }
        }
        write_block(&tx, block, senders, writes, state_hash)?;
        tx.commit()?;
        self.record_head(block)
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
    /// check it against the head ([`check_head_record`](crate::ledger::head_record::check_head_record));
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
        let state_hash = StateHash::from_bytes(&bytes)
            .ok_or_else(|| corrupt("the saved state hash is not 2048 bytes"))?;
        Ok(Some(StoredHead { header, state_hash }))
    }

    /// The signed header of block `height`, `None` above the head.
    pub fn signed_header(&self, height: u64) -> Result<Option<SignedHeader>, StorageError> {
        let row: Option<(Vec<u8>, Vec<u8>, String)> = self
            .conn
            .query_row(
                "SELECT header, hash, signature FROM blocks WHERE height = ?1",
                [height as i64],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()?;
        let Some((borsh_bytes, hash, signature)) = row else {
            return Ok(None);
        };
        let header: Header = borsh::from_slice(&borsh_bytes)
            .map_err(|e| corrupt(format!("header of block {height}: {e}")))?;
        if header.hash().as_slice() != hash.as_slice() {
            return Err(corrupt(format!(
                "block {height}: stored hash does not match its header"
            )));
        }
        Ok(Some(SignedHeader { header, signature }))
    }

    /// Block `height` with its transactions and receipts, `None` above the head.
    pub fn block(&self, height: u64) -> Result<Option<Block>, StorageError> {
        let Some(header) = self.signed_header(height)? else {
            return Ok(None);
        };
        let mut stmt = self.conn.prepare_cached(
            "SELECT t.body, t.signature, r.receipt FROM txs t JOIN receipts r ON r.txid = t.txid
             WHERE t.height = ?1 ORDER BY t.idx",
        )?;
        let rows = stmt.query_map([height as i64], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
            ))
        })?;
        let mut txs = Vec::new();
        for row in rows {
            let (body, signature, receipt) = row?;
            txs.push(IncludedTx {
                tx: SignedTx::new(body, signature),
                receipt: parse_receipt(&receipt)?,
            });
        }
        let mut stmt = self.conn.prepare_cached(
            "SELECT module, receipt FROM end_block_receipts WHERE height = ?1 ORDER BY idx",
        )?;
        let rows = stmt.query_map([height as i64], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
        })?;
        let mut end_block = Vec::new();
        for row in rows {
            let (module, receipt) = row?;
            end_block.push((module, parse_receipt(&receipt)?));
        }
        Ok(Some(Block {
            header,
            txs,
            end_block,
        }))
    }

    /// The included transaction `txid` with its block position and receipt, `None` if no
    /// block holds it.
    pub fn tx(&self, txid: &str) -> Result<Option<TxRecord>, StorageError> {
        let row: Option<(String, String, i64, i64, String)> = self
            .conn
            .query_row(
                "SELECT t.body, t.signature, t.height, t.idx, r.receipt FROM txs t JOIN receipts r ON r.txid = t.txid
                 WHERE t.txid = ?1",
                [txid],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
            )
            .optional()?;
        let Some((body, signature, height, index, receipt)) = row else {
            return Ok(None);
        };
        Ok(Some(TxRecord {
            tx: SignedTx::new(body, signature),
            status: TxStatus::Included {
                height: height as u64,
                index: index as u32,
                receipt: parse_receipt(&receipt)?,
            },
        }))
    }

    /// Whether a block holds the transaction `txid`.
    pub fn has_tx(&self, txid: &str) -> Result<bool, StorageError> {
        Ok(self.conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM txs WHERE txid = ?1)",
            [txid],
            |r| r.get(0),
        )?)
    }

    /// Every stored module code by hash.
    pub fn code(&self) -> Result<BTreeMap<String, Vec<u8>>, StorageError> {
        let mut stmt = self
            .conn
            .prepare("SELECT hash, wasm FROM code ORDER BY hash")?;
        let rows = stmt.query_map([], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, Vec<u8>>(1)?))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The module code whose lowercase hex SHA-256 is `hash`, `None` when not stored.
    pub fn code_by_hash(&self, hash: &str) -> Result<Option<Vec<u8>>, StorageError> {
        Ok(self
            .conn
            .query_row("SELECT wasm FROM code WHERE hash = ?1", [hash], |r| {
                r.get(0)
            })
            .optional()?)
    }

    /// The height of the highest stored block, `None` when none is stored.
    pub fn head_height(&self) -> Result<Option<u64>, StorageError> {
        let height: Option<i64> =
            self.conn
                .query_row("SELECT MAX(height) FROM blocks", [], |r| r.get(0))?;
        Ok(height.map(|h| h as u64))
    }

    /// The whole committed state, as an in-memory mirror.
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

fn parse_receipt(text: &str) -> Result<Receipt, StorageError> {
    serde_json::from_str(text).map_err(|e| corrupt(format!("stored receipt: {e}")))
}

/// The rows of one block, its state writes and the running hash, inside the caller's
/// transaction.
fn write_block(
    tx: &Transaction<'_>,
    block: &Block,
    senders: &[(&str, u64)],
    writes: &WriteSet,
    state_hash: &StateHash,
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
    let header_json = serde_json::to_string(h).expect("a header serialises");
    tx.execute(
        "INSERT INTO blocks (height, hash, header, header_json, signature, tx_count) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![height, h.hash().as_slice(), h.to_borsh(), header_json, block.header.signature, block.txs.len() as i64],
    )?;
    let mut insert_tx = tx.prepare_cached(
        "INSERT INTO txs (txid, height, idx, body, signature, sender, nonce) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    let mut insert_receipt = tx.prepare_cached(
        "INSERT INTO receipts (height, idx, txid, ok, receipt) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for (idx, (t, (sender, nonce))) in block.txs.iter().zip(senders).enumerate() {
        let txid = t.tx.txid();
        let nonce = i64::try_from(*nonce).map_err(|_| corrupt("nonce above i64"))?;
        insert_tx.execute(params![
            txid,
            height,
            idx as i64,
            t.tx.body(),
            t.tx.signature(),
            sender,
            nonce
        ])?;
        let receipt = serde_json::to_string(&t.receipt).expect("a receipt serialises");
        insert_receipt.execute(params![height, idx as i64, txid, t.receipt.ok, receipt])?;
    }
    let mut insert_end =
        tx.prepare_cached("INSERT INTO end_block_receipts (height, idx, module, ok, receipt) VALUES (?1, ?2, ?3, ?4, ?5)")?;
    for (idx, (module, receipt)) in block.end_block.iter().enumerate() {
        let text = serde_json::to_string(receipt).expect("a receipt serialises");
        insert_end.execute(params![height, idx as i64, module, receipt.ok, text])?;
    }
    let mut put = tx.prepare_cached("INSERT OR REPLACE INTO state (key, value) VALUES (?1, ?2)")?;
    let mut delete = tx.prepare_cached("DELETE FROM state WHERE key = ?1")?;
    for (key, value) in writes {
        match value {
            Some(v) => put.execute(params![key, v])?,
            None => delete.execute([key])?,
        };
    }
    set_meta(tx, "lthash", &state_hash.to_bytes())?;
    set_meta(tx, "lthash_height", h.height.to_string().as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests;
