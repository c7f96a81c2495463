//! The part of opening a data directory that a sequencer (`genesis_setup.rs`) and a follower
//! (`follower.rs`) share, once the genesis is known and block 0 is stored: this node's runtime
//! for the genesis, the genesis modules loaded through the compiled-module cache
//! (`<data>/compiled/`), and the head checked (its signature, the saved running state hash and,
//! when asked, a rehash of the whole stored state) before anything runs. Opening reads no state:
//! the head's state is read from SQLite on demand ([`StoredState`]).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use gamechain_chain::{Genesis, StateHash};
use gamechain_runtime::{
    runtime_config, Allocation, ChainContext, ModuleCache, Modules, Runtime, RuntimeConfig, State,
};

use crate::chain::Head;
use crate::config::LedgerConfig;
use crate::node_error::NodeError;
use crate::state_store::StoredState;
use crate::storage::Storage;

/// The runtime configuration of this node for `genesis`: the chain's consensus limits, this
/// node's view fuel (`fuel_view`) and pool size (`wasm_instances`).
pub fn node_runtime_config(config: &LedgerConfig, genesis: &Genesis) -> RuntimeConfig {
    RuntimeConfig {
        fuel_view: config.fuel_view,
        ..runtime_config(
            genesis,
            Allocation::Pooling {
                instances: config.wasm_instances,
            },
        )
    }
}

/// The chain context of `genesis`: a runtime built from `runtime`, and the genesis modules
/// (their wasm in `code`, by hash) loaded through the data directory's compiled-module cache.
/// Errors: [`NodeError::Runtime`] (the engine), [`NodeError::Refused`] (code missing or not
/// matching its hash; a runtime that cannot run this genesis).
pub fn chain_context(
    config: &LedgerConfig,
    genesis: &Genesis,
    runtime: RuntimeConfig,
    code: &BTreeMap<String, Vec<u8>>,
) -> Result<Arc<ChainContext>, NodeError> {
    let runtime = Runtime::new(runtime).map_err(|e| NodeError::Runtime(e.to_string()))?;
    let modules = cached_modules(config);
    modules
        .load_genesis(&runtime, genesis, code)
        .map_err(|e| NodeError::Refused(format!("module code: {e}")))?;
    let ctx = ChainContext::new(genesis.clone(), runtime, modules).map_err(|e| {
        NodeError::Refused(format!("this build cannot run the chain's genesis: {e}"))
    })?;
    Ok(Arc::new(ctx))
}

/// The stored head, checked: signed by the genesis sequencer, and the saved running state hash
/// hashes to its `state_root`; with `rehash`, the whole stored state is read and hashed too (a
/// full read of the `state` table: the integrity check's starts; on a sparse Merkle chain every
/// start, since `Storage::head` rebuilds the tree from it, so it is not read twice). Its state is the database's,
/// read through a cache of `cache_bytes` ([`StoredState`]); none of it is read here otherwise.
/// The modules the state names are not loaded here: see [`preload_modules`]. Errors:
/// [`NodeError::Refused`] naming what does not match, [`NodeError::Storage`].
pub fn open_head(
    ctx: &ChainContext,
    storage: &Storage,
    db_path: &Path,
    rehash: bool,
    cache_bytes: usize,
) -> Result<Head, NodeError> {
    let genesis = ctx.genesis();
    let head = storage
        .head()?
        .ok_or_else(|| NodeError::Refused(format!("{} holds no block", db_path.display())))?;
    genesis.check_block_signer(&head.header).map_err(|e| {
        NodeError::Refused(format!("head block {}: {e}", head.header.header.height))
    })?;
    let want = head.header.header.state_root;
    let mut checks = vec![("the saved running state hash", head.state_hash.root())];
    let mut entries = None;
    if let StateHash::SparseMerkle(tree) = &head.state_hash {
        // `Storage::head` rebuilt this tree from the whole stored state and checked it against
        // the saved root: the integrity check's full read is already done.
        entries = Some(tree.len());
    } else if rehash {
        let started = std::time::Instant::now();
        let (recomputed, count) = storage.state_hash(genesis.state_commitment())?;
        tracing::info!(
            entries = count,
            ms = started.elapsed().as_millis() as u64,
            "stored state rehashed"
        );
        checks.insert(0, ("the stored state", recomputed.root()));
        entries = Some(count);
    }
    for (what, root) in checks {
        if root != want {
            return Err(NodeError::Refused(format!(
                "{what} in {} hashes to state root {}, but head block {} has state root {}",
                db_path.display(),
                hex::encode(root),
                head.header.header.height,
                hex::encode(want)
            )));
        }
    }
    let state = StoredState::open(db_path, cache_bytes)?;
    tracing::info!(
        chain_id = %genesis.chain_id,
        height = head.header.header.height,
        head = %head.header.header.hash_hex(),
        state_root = %hex::encode(want),
        entries,
        schema_version = storage.schema_version()?,
        "chain opened"
    );
    Ok(Head {
        state,
        header: head.header,
        state_hash: head.state_hash,
    })
}

/// An empty module registry compiling through the data directory's compiled-module cache
/// (`<data>/compiled/`); without a cache (logged: every start recompiles) when the directory
/// cannot be created.
fn cached_modules(config: &LedgerConfig) -> Modules {
    match ModuleCache::open(config.compiled_dir()) {
        Ok(cache) => Modules::new().with_cache(Arc::new(cache)),
        Err(e) => {
            tracing::warn!(dir = %config.compiled_dir().display(), "no compiled-module cache (every start recompiles): {e}");
            Modules::new()
        }
    }
}

/// Loads every module the state names (compiled, or read from the cache; the state is read for
/// the `module/` records and their code only), so the first
/// transaction or view of each does not wait for it, and logs for each whether it was compiled
/// or read from the cache and how long that took. A module the state names but this build
/// cannot load is logged: blocks touching it will fail as node failures, so the operator must
/// look, but the node still serves everything else. A node runs this after its API is up and
/// before its sequencer starts (`server/node.rs`); a follower before it follows.
pub fn preload_modules(ctx: &ChainContext, state: &dyn State) -> Result<(), NodeError> {
    let records = Modules::records(state)
        .map_err(|e| NodeError::Refused(format!("the stored state: {e}")))?;
    for (id, record) in records {
        match ctx
            .modules()
            .resolve_record(ctx.runtime(), state, &id, &record)
        {
            Ok(entry) => {
                let source = entry.module.code_source();
                tracing::info!(
                    module = %id,
                    code_hash = %record.code_hash,
                    from_cache = source.is_cached(),
                    ms = source.duration().as_secs_f64() * 1e3,
                    "module ready"
                );
            }
            Err(e) => tracing::error!(module = %id, "cannot load the module the chain runs: {e}"),
        }
    }
    Ok(())
}
