//! Opening a data directory: on the first start, the sequencer key, `genesis.json` and the
//! signed genesis block; on every start, the checks that the directory, its database and this
//! binary belong to one chain, and the opening of the head (no state is loaded: it is read from
//! SQLite on demand).
//!
//! First start (each step is skipped when its file already exists, so a start interrupted
//! half-way simply resumes):
//! 1. `<data>/sequencer.wif` (mode 0600): a new key of the configured network;
//! 2. `<data>/beacon.key` (mode 0600): a new BLS key for the chain's randomness beacon
//!    (`beacon_key.rs`), and then
//!    `<data>/genesis.json`: chain id, network, the key's address as sequencer, the beacon's
//!    public key (`"beacon": {"scheme": "bls12381-minsig", …}`), `time_ms` = now,
//!    faucet and fuel/memory limits from the configuration, the embedded modules the
//!    configuration's `genesis_modules` names (default: tic-tac-toe, m,n,k, the channel, the move
//!    board and both rules modules, `genesis_modules.rs`) by code hash, all immutable, no
//!    initial balances, `engine_config_hash` of this build's runtime;
//! 3. `<data>/chain.sqlite`: the module code, the genesis state and block 0 signed by the key,
//!    in one transaction.
//!
//! Block 0, like every block the sequencer signs, is recorded in `<data>/sign-state.json`
//! (`sign_state.rs`) before it is committed. Every start compares the database's head with
//! that file: a head below the signed height (the database lost blocks it had published) is
//! refused, unless `--restore-from URL` is given (`config.restore_from`): then the opened chain
//! says how far it is behind ([`OpenedChain::behind`]) and the caller restores it
//! (`replica/restore.rs`) before anything is signed; another hash at the signed height is
//! refused. A missing file
//! beside a database with blocks is recreated from the head (a warning).
//!
//! Every start refuses ([`NodeError::Refused`]) a directory whose key is not genesis's
//! sequencer, whose `genesis.json` hashes differently from the one the database was created
//! with, whose engine configuration hash differs from this build's runtime, whose module code
//! is missing or does not match its hash, or whose saved running state hash does not hash to the
//! head block's `state_root`; starts that run the integrity check (`integrity_check`: after an
//! unclean stop by default) also rehash the whole stored state against it.
//!
//! Modules compile through the compiled-module cache `<data>/compiled/`
//! (`gamechain_runtime::ModuleCache`), so a restart deserialises instead of recompiling; every
//! module of the state (genesis and deployed) is loaded at start, and the log says for each
//! whether it was compiled or read from the cache, and how long that took. A cache directory
//! that cannot be created only costs compile time (logged).
//!
//! The chain runs the module code stored in its database. When the binary embeds another build
//! of a genesis module than the chain's, a warning says so; the embedded modules only seed new
//! chains.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use gamechain_runtime::chain::beacon::BeaconSecretKey;
use gamechain_runtime::chain::genesis::beacon::SCHEME_SINGLE;
use gamechain_runtime::chain::{BeaconConfig, Genesis, SecretKey, SignedHeader};
use gamechain_runtime::{genesis_state, ChainContext};
use sha2::{Digest, Sha256};

use crate::chain::Head;
use crate::config::{IntegrityCheck, LedgerConfig};
use crate::genesis_modules::{codes_by_hash, genesis_code, genesis_module_list, GENESIS_MODULES};
use crate::head_record::{check_head_record, lost_refusal, HeadRecord, RecordCheck, RecordState};
use crate::node_error::NodeError;
use crate::open::{chain_context, node_runtime_config, open_head};
use crate::run_marker::{mark_running, previous_run_unclean};
use crate::sign_state::{behind_refusal, check_head, HeadCheck, SignState, SignStateFile};
use crate::snapshot::tidy_joins;
use crate::start::beacon_key::{create_beacon_key, read_beacon_key};
use crate::storage::{Storage, StorageError};
use gamechain_chain::key_file::{read_key_file, write_key_file};
use gamechain_chain::wire::Block;

/// The tic-tac-toe guest this binary embeds (built by `build.rs` from `modules/tictactoe`; one of
/// [`GENESIS_MODULES`]).
pub const TICTACTOE_WASM: &[u8] = GENESIS_MODULES[0].wasm;

/// The id the embedded tic-tac-toe is deployed under on a new chain.
pub const TICTACTOE_ID: &str = "tictactoe";

/// Lowercase hex SHA-256 of [`TICTACTOE_WASM`].
pub fn tictactoe_code_hash() -> String {
    hex::encode(Sha256::digest(TICTACTOE_WASM))
}

/// Milliseconds since the Unix epoch from the system clock (0 if the clock is before 1970).
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A data directory opened and checked: everything the node runs on.
pub struct OpenedChain {
    /// The chain's genesis (from `genesis.json`).
    pub genesis: Genesis,
    /// Lowercase hex of [`Genesis::hash`].
    pub genesis_hash: String,
    /// The sequencer's key.
    pub key: SecretKey,
    /// The sequencer's beacon key (`<data>/beacon.key`) when the genesis names a single
    /// sequencer's beacon; `None` on a chain without one, or with validators (whose shares are
    /// the validator's business).
    pub beacon_key: Option<BeaconSecretKey>,
    /// The database, open for writing.
    pub storage: Storage,
    /// Genesis, runtime and loaded modules.
    pub ctx: Arc<ChainContext>,
    /// The head block, the committed state after it and its running hash.
    pub head: Head,
    /// `<data>/sign-state.json`: the highest block signed (the head's, once open).
    pub sign_state: SignStateFile,
    /// With `config.restore_from` only: the signed block the head is below. The caller must
    /// restore up to it (`replica::restore::restore_opened`) before the sequencer runs (whose
    /// sign state refuses any height at or below it anyway).
    pub behind: Option<SignState>,
    /// The signed block the sequencer recorded but did not commit before it stopped
    /// ([`HeadCheck::Unfinished`]): `replica::restore::finish_unfinished` commits it before the
    /// sequencer runs.
    pub unfinished: Option<Block>,
}

fn io_err(what: &str, path: &Path, e: impl std::fmt::Display) -> NodeError {
    NodeError::Io(format!("cannot {what} {}: {e}", path.display()))
}

/// What fetches a peer's state snapshot into a new validator's empty database (`--snapshot-from`):
/// the node's `replica::snapshot_join`, which checks it over HTTP against the snapshot block's
/// finality certificate. The ledger only opens files; fetching is the caller's, and so is
/// checking: the ledger trusts what `join` commits. An implementation must commit nothing
/// unless the snapshot's entries hash to the state root of a block header certified by a
/// quorum of the genesis validator set, and must store that block's signed header and
/// finality record with it (`Storage::import_base`).
pub trait SnapshotJoin {
    /// Imports the snapshot `peer` serves into `storage` (the chain's `ctx`, the modules'
    /// `code` by id, the chain's genesis and engine configuration hashes to check it by);
    /// returns the snapshot block's height, the new chain's first. Errors: a refused snapshot
    /// (`NodeError::Refused`), the peer unreachable (`NodeError::Runtime`), the database's.
    #[allow(clippy::too_many_arguments)]
    fn join(
        &self,
        ctx: &ChainContext,
        storage: &mut Storage,
        data_dir: &Path,
        peer: &str,
        code: &BTreeMap<String, Vec<u8>>,
        genesis_hash: &str,
        engine_hash: &str,
    ) -> Result<u64, NodeError>;
}

/// Opens `config.data_dir`, creating the chain on the first start (see the module docs).
/// Blocking (file and database I/O, compiling the modules): call it off the async executor.
pub fn open_chain(
    config: &LedgerConfig,
    joiner: Option<&dyn SnapshotJoin>,
) -> Result<OpenedChain, NodeError> {
    config.validate()?;
    let dir = &config.data_dir;
    std::fs::create_dir_all(dir).map_err(|e| io_err("create the data directory", dir, e))?;

    let (key_path, genesis_path) = (config.key_path(), config.genesis_path());
    let key = load_or_create_key(config)?;
    let genesis = load_or_create_genesis(config, &key)?;
    let genesis_hash = hex::encode(genesis.hash());
    if let Some(set) = &genesis.validators {
        if set.by_address(&key.address()).is_none() {
            return Err(NodeError::Refused(format!(
                "{} is the key of {}, which is not a validator of the set {} names",
                key_path.display(),
                key.address(),
                genesis_path.display()
            )));
        }
    } else if key.address() != genesis.sequencer {
        return Err(NodeError::Refused(format!(
            "{} is the key of {}, but {} names the sequencer {}",
            key_path.display(),
            key.address(),
            genesis_path.display(),
            genesis.sequencer
        )));
    }
    warn_about_ignored_settings(config, &genesis);
    let beacon_key = match &genesis.beacon {
        Some(b) if b.scheme == SCHEME_SINGLE && genesis.validators.is_none() => {
            Some(read_beacon_key(&config.beacon_key_path(), &b.public_key)?)
        }
        _ => None,
    };

    let runtime_config = node_runtime_config(config, &genesis);
    let engine_hash = runtime_config.config_hash();
    if engine_hash != genesis.engine_config_hash {
        return Err(NodeError::Refused(format!(
            "this build's engine configuration hash is {engine_hash}, the chain's ({}) is {}: the wasm runtime \
             (wasmtime version, gas table, fuel metering or ABI) differs from the one the chain was created with; run the \
             gamechain build that created it",
            genesis_path.display(),
            genesis.engine_config_hash
        )));
    }

    let db_path = config.db_path();
    let mut sign_state = SignStateFile::open(dir)?;
    let mut storage = Storage::open(&db_path).map_err(|e| match e {
        StorageError::Sqlite(m) => StorageError::Sqlite(format!(
            "{}: {m} (a damaged file: restore it from a backup, or move it aside and start with \
             --restore-from <URL of a follower>)",
            db_path.display()
        )),
        e => e,
    })?;
    let check = start_check(config, &storage, &db_path)?;
    match storage.chain_identity()? {
        // No chain in the database, but its head record names committed blocks: the database
        // lost everything (its WAL or main file). Refused before anything is signed, unless a
        // restore will fetch the blocks onto a new block 0, or a validator joins from a
        // snapshot (which starts consensus only after a block finalized after the join).
        None if config.restore_from.is_none()
            && !(config.validator && config.snapshot_from.is_some())
            && matches!(
                storage.head_record().map(HeadRecord::at_open),
                Some(RecordState::Head(r)) if r.height > 0
            ) =>
        {
            if let Some(signed) = sign_state.current().filter(|s| s.height > 0) {
                return Err(behind_refusal(&sign_state, 0, signed, None));
            }
            let record = storage.head_record().expect("matched above");
            let RecordState::Head(lost) = record.at_open() else {
                unreachable!("matched above")
            };
            return Err(lost_refusal(record, 0, lost));
        }
        // A new validator that joins from a snapshot (`replica/snapshot_join.rs`): its chain
        // starts at the snapshot's certified block instead of block 0.
        None if config.validator && config.snapshot_from.is_some() => join_validator(
            config,
            joiner,
            &mut storage,
            &mut sign_state,
            &genesis,
            (&genesis_hash, &engine_hash),
            runtime_config.clone(),
        )?,
        // A validator's join from a snapshot was interrupted before its import: it must not
        // make a chain from block 0 instead.
        None if config.validator
            && crate::rejoin_record::read(dir)?.is_some_and(|r| r.floor.is_none()) =>
        {
            return Err(NodeError::Refused(format!(
                "{} records a join from a snapshot that did not finish: start again with \
                 --snapshot-from URL",
                dir.join(crate::rejoin_record::REJOIN_FILE).display()
            )))
        }
        None => create_genesis_block(
            &mut storage,
            &mut sign_state,
            &genesis,
            &genesis_hash,
            &engine_hash,
            &key,
        )?,
        Some((stored_genesis, stored_engine)) => {
            check_identity(
                config,
                (&genesis_hash, &engine_hash),
                (&stored_genesis, &stored_engine),
            )?;
            // A validator's start decides for itself (`validator/rejoin.rs`: it follows that
            // node when its consensus journal is lost).
            if config.snapshot_from.is_some() && !config.validator {
                tracing::info!(
                    "--snapshot-from ignored: this data directory holds the chain already"
                );
            }
            if genesis.validators.is_some() {
                tidy_joins(dir, storage.oldest_height()?.unwrap_or(0));
            }
        }
    }

    let code = storage.code()?;
    for m in &genesis.modules {
        let Some(embedded) = genesis_code(&m.id).map(|c| c.code_hash()) else {
            continue;
        };
        if m.code_hash != embedded {
            tracing::warn!(
                module = %m.id,
                chain = %m.code_hash,
                embedded = %embedded,
                "this binary embeds another build of this genesis module than the chain's; the chain keeps running its own code"
            );
        }
    }
    let ctx = chain_context(config, &genesis, runtime_config, &code)?;
    let head = open_head(&ctx, &storage, &db_path, check, config.state_cache_bytes())?;
    let head_hash = head.header.header.hash_hex();
    let height = head.header.header.height;
    // The head record (written after each commit) first: it must be read before a missing
    // sign state is recreated from a head that may have lost blocks.
    let mut record = storage
        .take_head_record()
        .expect("a writer has a head record");
    let record_check = check_head_record(&mut record, height, &head_hash, |at| {
        Ok(storage.signed_header(at)?.map(|s| s.header.hash_hex()))
    });
    let lost = match record_check {
        Ok(RecordCheck::Matches) => None,
        Ok(RecordCheck::Lost(lost)) => Some(lost),
        Err(e) => return Err(e),
    };
    let (behind, unfinished) = match lost {
        // The sign state does not reach the lost blocks (missing, or restored from an older
        // copy): the record alone says what the database lost.
        Some(lost) if sign_state.current().is_none_or(|s| s.height < lost.height) => {
            match &config.restore_from {
                None => return Err(lost_refusal(&record, height, &lost)),
                Some(_) => (
                    Some(SignState {
                        height: lost.height,
                        hash: lost.hash,
                        block: None,
                        header: None,
                    }),
                    None,
                ),
            }
        }
        _ => match check_head(&mut sign_state, height, &head_hash)? {
            HeadCheck::Matches => (None, None),
            HeadCheck::Unfinished { block } => (None, Some(block)),
            // A validator: consensus delivers the finalized block again.
            HeadCheck::Announced { header } if genesis.validators.is_some() => {
                tracing::info!(
                    height = header.header.height,
                    "the finalized block recorded in the sign state was not committed before the \
                     node stopped: it is committed when consensus delivers it again"
                );
                (None, None)
            }
            HeadCheck::Announced { .. } => {
                let signed = sign_state
                    .current()
                    .cloned()
                    .expect("a recorded sign state");
                match &config.restore_from {
                    None => return Err(behind_refusal(&sign_state, height, &signed, None)),
                    Some(_) => (Some(signed), None),
                }
            }
            HeadCheck::Behind { head: at, signed } => match &config.restore_from {
                None => return Err(behind_refusal(&sign_state, at, &signed, None)),
                Some(_) => (Some(signed), None),
            },
        },
    };
    storage.put_head_record(record);
    mark_running(dir)?;
    Ok(OpenedChain {
        beacon_key,
        genesis,
        genesis_hash,
        key,
        storage,
        ctx,
        head,
        sign_state,
        behind,
        unfinished,
    })
}

/// The start's integrity policy (`config.integrity_check`, the run marker of `data_dir`): when
/// it says so, `PRAGMA quick_check` of the database (an error on damage). Returns whether it
/// ran, which is also whether the start rehashes the whole stored state ([`open_head`]).
/// Shared by a sequencer's start and a follower's.
pub fn start_check(
    config: &LedgerConfig,
    storage: &Storage,
    db_path: &Path,
) -> Result<bool, NodeError> {
    let unclean = previous_run_unclean(&config.data_dir);
    let check = match config.integrity_check {
        IntegrityCheck::Always => true,
        IntegrityCheck::Unclean => unclean,
        IntegrityCheck::Never => false,
    };
    if check {
        integrity_check(storage, db_path, unclean)?;
    }
    Ok(check)
}

/// `PRAGMA quick_check` on the database at `db_path`, after reading the file once in order
/// (so the check's random page reads hit the page cache: 1.7 s instead of 35 s for a cold
/// 1 GB file here), logged with its duration. Errors: [`StorageError::Damaged`].
fn integrity_check(storage: &Storage, db_path: &Path, unclean: bool) -> Result<(), NodeError> {
    let started = std::time::Instant::now();
    let mut bytes = 0u64;
    for path in [db_path.to_path_buf(), db_path.with_extension("sqlite-wal")] {
        if let Ok(mut f) = std::fs::File::open(&path) {
            bytes += std::io::copy(&mut f, &mut std::io::sink()).unwrap_or(0);
        }
    }
    storage.quick_check()?;
    tracing::info!(
        unclean,
        bytes,
        ms = started.elapsed().as_millis() as u64,
        "database quick_check ok"
    );
    Ok(())
}

/// The sequencer key at `<data>/sequencer.wif`, generated (mode 0600) on the first start.
fn load_or_create_key(config: &LedgerConfig) -> Result<SecretKey, NodeError> {
    let key_path = config.key_path();
    if key_path.exists() {
        return read_key_file(&key_path).map_err(NodeError::Io);
    }
    let key = SecretKey::generate(config.network);
    write_key_file(&key_path, &key).map_err(NodeError::Io)?;
    tracing::info!(path = %key_path.display(), address = %key.address(), "generated the sequencer key");
    Ok(key)
}

/// `<data>/genesis.json`, written for a new chain of `key` on the first start.
fn load_or_create_genesis(config: &LedgerConfig, key: &SecretKey) -> Result<Genesis, NodeError> {
    let genesis_path = config.genesis_path();
    if genesis_path.exists() {
        let text =
            std::fs::read_to_string(&genesis_path).map_err(|e| io_err("read", &genesis_path, e))?;
        return Genesis::from_json(&text)
            .map_err(|e| NodeError::Refused(format!("{}: {e}", genesis_path.display())));
    }
    if config.validator {
        return Err(NodeError::Refused(format!(
            "{} is missing: a validator joins a chain whose genesis names it (`gamechain testnet` writes one per validator)",
            genesis_path.display()
        )));
    }
    let mut genesis = new_genesis(config, key)?;
    // The beacon key is made first: a start interrupted between the two files makes a new
    // key (and genesis) next time, never a genesis whose key is lost.
    let beacon_path = config.beacon_key_path();
    if beacon_path.exists() {
        std::fs::remove_file(&beacon_path).map_err(|e| io_err("remove", &beacon_path, e))?;
    }
    let beacon = create_beacon_key(&beacon_path)?;
    genesis.beacon = Some(BeaconConfig::single(beacon.public_key()));
    write_new_file(&genesis_path, genesis.to_json_pretty().as_bytes())?;
    tracing::info!(path = %genesis_path.display(), chain_id = %genesis.chain_id, "wrote a new genesis");
    Ok(genesis)
}

/// Refuses a database created from another genesis (`stored.0`) or under another engine
/// configuration (`stored.1`) than this directory's genesis and this build (`ours`).
fn check_identity(
    config: &LedgerConfig,
    ours: (&str, &str),
    stored: (&str, &str),
) -> Result<(), NodeError> {
    let ((genesis_hash, engine_hash), (stored_genesis, stored_engine)) = (ours, stored);
    let db_path = config.db_path();
    if stored_genesis != genesis_hash {
        return Err(NodeError::Refused(format!(
            "{} hashes to {genesis_hash}, but {} was created from a genesis hashing to {stored_genesis}: \
             the genesis file was changed or belongs to another chain",
            config.genesis_path().display(),
            db_path.display()
        )));
    }
    if stored_engine != engine_hash {
        return Err(NodeError::Refused(format!(
            "{} was created under engine configuration {stored_engine}, this build's is {engine_hash}",
            db_path.display()
        )));
    }
    Ok(())
}

/// The genesis of a new chain (see the module docs).
pub fn new_genesis(config: &LedgerConfig, key: &SecretKey) -> Result<Genesis, NodeError> {
    if key.network() != config.network {
        return Err(NodeError::Refused(format!(
            "the sequencer key is a {} key, the configuration asks for a {} chain",
            key.network().as_str(),
            config.network.as_str()
        )));
    }
    let runtime = config.runtime_config();
    let params = config.chain_params();
    let genesis = Genesis {
        chain_id: config.chain_id.clone(),
        network: config.network,
        sequencer: key.address(),
        time_ms: now_ms(),
        faucet: config.faucet,
        modules: genesis_module_list(&config.genesis_modules)
            .map_err(|e| NodeError::Config(crate::config::ConfigError(e)))?,
        balances: Vec::new(),
        fuel_apply: params.fuel_apply,
        fuel_view: params.fuel_view,
        fuel_end_block: params.fuel_end_block,
        memory_limit_bytes: params.memory_limit_bytes,
        engine_config_hash: runtime.config_hash(),
        fees: config.fees.clone(),
        validators: None,
        min_block_interval_ms: Some(params.clock.min_block_interval_ms),
        max_clock_drift_ms: Some(params.clock.max_clock_drift_ms),
        max_block_deploys: Some(params.block_caps.max_block_deploys),
        max_block_code_bytes: Some(params.block_caps.max_block_code_bytes),
        beacon: None,
        state_commitment: Some(config.state_commitment),
    };
    genesis
        .validate()
        .map_err(|e| NodeError::Config(crate::config::ConfigError(e.to_string())))?;
    Ok(genesis)
}

/// The first start of a validator with `--snapshot-from PEER` on an empty data directory: the
/// chain of `genesis` (from the local `genesis.json`) imported from the newest snapshot `PEER`
/// serves, checked as a follower's join is (`replica/snapshot_join.rs`: on a chain with
/// validators, the snapshot's block must carry its own finality certificate by a quorum of the
/// genesis set; the record is stored beside it, and consensus starts from it,
/// `validator/run.rs`), and the base recorded in the sign state. `ids` are the genesis hash and
/// the engine configuration hash. The join's start is recorded first (`<data>/rejoin.json`):
/// consensus starts only once the node has followed the chain to a block finalized after it
/// (`validator/rejoin.rs`), so a key that voted before cannot vote again in a view it voted
/// in; a sign state and consensus storage an earlier run left are set aside
/// (`<name>.before-join-<ms>`). Errors: the join's (a refused snapshot, the peer unreachable),
/// writing the files.
fn join_validator(
    config: &LedgerConfig,
    joiner: Option<&dyn SnapshotJoin>,
    storage: &mut Storage,
    sign_state: &mut SignStateFile,
    genesis: &Genesis,
    ids: (&str, &str),
    runtime_config: gamechain_runtime::RuntimeConfig,
) -> Result<(), NodeError> {
    let (genesis_hash, engine_hash) = ids;
    let peer = config
        .snapshot_from
        .as_deref()
        .expect("called with --snapshot-from");
    // The key may have voted before (this directory ran, or another did with the same key):
    // consensus starts only from a floor its old votes cannot reach, found by following the
    // chain after the import (`validator/rejoin.rs`), from this moment on. What an earlier run
    // left is kept aside, not used: its sign state names blocks of a database that is gone,
    // and its consensus storage belongs to another start.
    let started_ms = now_ms();
    crate::rejoin_record::write(
        &config.data_dir,
        &crate::rejoin_record::Rejoin {
            started_ms,
            floor: None,
            key_seen_at: None,
        },
    )?;
    let _ = std::fs::remove_file(config.data_dir.join(crate::rejoin_record::STARTED_FILE));
    if let Some(signed) = sign_state.current().filter(|s| s.height > 0) {
        let height = signed.height;
        let moved = crate::rejoin_record::set_aside(sign_state.path(), "join", started_ms)?;
        tracing::warn!(
            height,
            to = ?moved,
            "this data directory ran a validator before and lost its database: its sign state is \
             set aside, and consensus starts only from a block finalized after this join began"
        );
        *sign_state = SignStateFile::open(&config.data_dir)?;
    }
    if let Some(moved) =
        crate::rejoin_record::set_aside(&config.data_dir.join("consensus"), "join", started_ms)?
    {
        tracing::warn!(to = %moved.display(), "an earlier run's consensus storage set aside");
    }
    storage.ensure_validator_tables()?;
    let code = embedded_code(genesis)?;
    let ctx = chain_context(config, genesis, runtime_config, &code)?;
    let joiner = joiner.ok_or_else(|| {
        NodeError::Runtime("--snapshot-from: this start cannot fetch a snapshot".into())
    })?;
    let joined = joiner.join(
        &ctx,
        storage,
        &config.data_dir,
        peer,
        &code,
        genesis_hash,
        engine_hash,
    )?;
    let base = storage
        .signed_header(joined)?
        .ok_or_else(|| NodeError::Refused(format!("the joined block {} is not stored", joined)))?;
    sign_state.record(joined, &base.header.hash_hex())?;
    // The head record the import wrote, read again: the start's check compares the head with
    // it as it is now (not as it was before the import: missing).
    if storage.take_head_record().is_some() {
        storage.put_head_record(HeadRecord::open(&config.db_path())?);
    }
    Ok(())
}

/// The code of `genesis`'s modules, from the modules this binary embeds, by code hash. Errors:
/// a module whose code this binary does not embed.
fn embedded_code(genesis: &Genesis) -> Result<BTreeMap<String, Vec<u8>>, NodeError> {
    let embedded = codes_by_hash();
    let mut code = BTreeMap::new();
    for m in &genesis.modules {
        let wasm = embedded.get(&m.code_hash).ok_or_else(|| {
            NodeError::Refused(format!(
                "genesis module `{}` has code hash {}, which this binary does not embed (it \
                 embeds {})",
                m.id,
                m.code_hash,
                GENESIS_MODULES
                    .iter()
                    .map(|c| format!("{} {}", c.id, c.code_hash()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
        code.insert(m.code_hash.clone(), wasm.to_vec());
    }
    Ok(code)
}

/// Stores block 0: the genesis state, signed by the sequencer (and recorded in the sign state
/// first), with the module code.
fn create_genesis_block(
    storage: &mut Storage,
    sign_state: &mut SignStateFile,
    genesis: &Genesis,
    genesis_hash: &str,
    engine_hash: &str,
    key: &SecretKey,
) -> Result<(), NodeError> {
    let code = embedded_code(genesis)?;
    let gs = genesis_state(genesis, &code).map_err(|e| NodeError::Refused(e.to_string()))?;
    // A chain with validators has no signer for block 0: genesis alone fixes it, and every
    // validator stores the same one.
    let header = match genesis.validators {
        None => SignedHeader::sign(gs.header, key),
        Some(_) => SignedHeader {
            header: gs.header,
            signature: String::new(),
        },
    };
    let block = Block {
        header,
        scheduled: Vec::new(),
        txs: Vec::new(),
        end_block: Vec::new(),
    };
    let hash = block.header.header.hash_hex();
    // Block 0 is a function of genesis.json: signing it again gives the same header hash, so
    // it is no second block. A sign state already here means either a first start interrupted
    // between this record and the commit, or a database that lost every block (then the head
    // check after opening refuses, or restores, the blocks above 0). Another block 0 recorded
    // is refused by `record`.
    match sign_state.current() {
        None => sign_state.record(0, &hash)?,
        Some(s) if s.height == 0 && s.hash != hash => sign_state.record(0, &hash)?,
        Some(_) => {}
    }
    storage.commit_genesis(
        &block,
        &gs.entries,
        &gs.state_hash,
        &code,
        genesis_hash,
        engine_hash,
    )?;
    tracing::info!(hash = %block.header.header.hash_hex(), "stored the genesis block");
    Ok(())
}

/// Writes `bytes` to a new file `path` through a temporary file and a rename, so a crash
/// never leaves a half-written file under the final name.
fn write_new_file(path: &Path, bytes: &[u8]) -> Result<(), NodeError> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp).map_err(|e| io_err("create", &tmp, e))?;
    f.write_all(bytes)
        .and_then(|()| f.sync_all())
        .map_err(|e| io_err("write", &tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| io_err("rename into place", path, e))?;
    if let Some(dir) = path.parent() {
        // Persist the rename itself.
        let _ = std::fs::File::open(dir).and_then(|d| d.sync_all());
    }
    Ok(())
}

/// Logs each chain-defining configuration value that differs from the existing genesis (which
/// wins).
fn warn_about_ignored_settings(config: &LedgerConfig, genesis: &Genesis) {
    let (ours, theirs) = (config.chain_params(), genesis.params());
    // `fuel_view` is left out: the node's own setting bounds its views (`node_runtime_config`).
    let params = LedgerConfig::CONFIGURED_PARAMETERS
        .into_iter()
        .filter(|name| *name != "fuel_view")
        .map(|name| {
            let p = gamechain_runtime::chain::params::parameter(name).expect("a table name");
            (name, (p.get)(&ours) != (p.get)(&theirs))
        });
    let differ = [
        ("chain_id", config.chain_id != genesis.chain_id),
        ("network", config.network != genesis.network),
        ("faucet", config.faucet != genesis.faucet),
        ("fees", config.fees != genesis.fees),
        (
            "state_commitment",
            config.state_commitment != genesis.state_commitment(),
        ),
        (
            "genesis_modules",
            !config
                .genesis_modules
                .iter()
                .eq(genesis.modules.iter().map(|m| &m.id)),
        ),
    ]
    .into_iter()
    .chain(params);
    for (field, _) in differ.filter(|(_, d)| *d) {
        tracing::warn!(
            field,
            "the configuration's {field} differs from genesis.json, which is used"
        );
    }
}
