//! Migration scenarios: ops on the OLD module, an upgrade to the NEW one (running its
//! `migrate`), then checks on the migrated state, run natively and on wasm from ONE scenario
//! body, like [`native_and_wasm_tests!`](crate::native_and_wasm_tests).
//!
//! A migration scenario is `fn(&Upgrade) -> MockCtx`: it takes the modules from the
//! [`Upgrade`] (`up.old()` before, `up.new()` after), submits ops on a [`MockCtx`], calls
//! [`Upgrade::upgrade`] once, asserts, and returns the context. [`migration_tests!`] expands a
//! list of them into two tests each:
//!
//! - `migration_native::<name>`: `old()`/`new()` are the two native Rust types and the upgrade
//!   is [`MockCtx::migrate`] (then `end_block`, as the upgrade's block does);
//! - `migration_wasm::<name>`: `old()` is the OLD `.wasm` (bytes the author kept, e.g. the file
//!   `gamechain module build --out v1.wasm` wrote before the change, read with
//!   `include_bytes!`), `new()` the calling crate built to `.wasm`, and the upgrade is **one real
//!   block** of the state transition ([`execute_block`]) over a chain state holding the
//!   context's state, module `<id>` deployed with the OLD code under the `owner` policy, and one
//!   signed `deploy` of the NEW code by its owner: the upgrade path a chain runs (the record,
//!   `gc_migrate` when exported, the block's `end_block`s). Its module writes and events are
//!   then put back into the context. The native run is then repeated with the chain's code
//!   hashes and txid and both must leave the same state and events
//!   ([`assert_same_outcome`](super::assert_same_outcome)).
//!
//! What the upgrade block is, in both runs: height `ctx.height + 1`, block time
//! `ctx.block_time_ms + 1000`, the context's checkpoint; the owner is [`Upgrade::owner`] (a
//! fixed testnet address), the migration's sender; afterwards `ctx.txid` is empty (the block's
//! `end_block` ran last). On the chain the sequencer is a real address (`ctx.sequencer()` in a
//! migration differs from the mock's `"sequencer"`).
//!
//! A module that overrides `migrate` but is exported without `export_module!(M, migrate)` is
//! never migrated on a chain: its wasm run then differs from the native one and the test fails.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use gamechain_sdk::{ActionError, GameModule, Migration, MockCtx};
use sha2::{Digest, Sha256};

use crate::chain::address::{Network, SecretKey};
use crate::chain::{Action, Genesis, SignedTx, StateCommitment, StateHash};
use crate::layout::{module_record_key, ModuleRecord};
use crate::registry::{code_key, Modules};
use crate::transition::{execute_block, genesis_state, sign_tx, BlockInput, ChainContext};
use crate::{MemState, WasmModule};

/// The chain id of the upgrade block's chain.
const CHAIN_ID: &str = "gamechain-migration-test";
/// Block time the upgrade block adds to the context's, ms.
pub const UPGRADE_BLOCK_MS: u64 = 1_000;

/// The owner's key: fixed, so the upgrade transaction and its txid are the same in every run.
fn owner_key() -> SecretKey {
    SecretKey::from_bytes(Network::Testnet, [0x42; 32]).expect("a valid secret key")
}

/// Lowercase hex SHA-256 of `bytes`: a code hash.
pub fn code_hash(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The owner's signed `deploy` of `new_wasm` as module `id` (nonce 0): the upgrade transaction.
fn upgrade_tx(id: &str, new_wasm: &[u8]) -> SignedTx {
    sign_tx(
        &owner_key(),
        CHAIN_ID,
        0,
        Action::deploy(id, new_wasm.to_vec()),
    )
}

enum How<'a> {
    /// `MockCtx::migrate_in_tx` with these hashes and txid.
    Native {
        from_code_hash: String,
        to_code_hash: String,
        txid: Option<String>,
    },
    /// One block of the state transition.
    Chain {
        old_wasm: &'a [u8],
        new_wasm: &'a [u8],
    },
}

/// The two versions of a module in a migration scenario, and the upgrade between them.
pub struct Upgrade<'a> {
    old: &'a dyn GameModule,
    new: &'a dyn GameModule,
    how: How<'a>,
}

impl<'a> Upgrade<'a> {
    /// Native modules, upgraded by [`MockCtx::migrate`] from code hash `"00…"` to `"11…"` (64
    /// hex each) with a fresh mock txid.
    pub fn native(old: &'a dyn GameModule, new: &'a dyn GameModule) -> Self {
        Self {
            old,
            new,
            how: How::Native {
                from_code_hash: "0".repeat(64),
                to_code_hash: "1".repeat(64),
                txid: None,
            },
        }
    }

    /// Native modules, upgraded with exactly the code hashes and txid of the chain's upgrade
    /// from `old_wasm` to `new_wasm` (what the wasm run is compared with).
    pub fn native_as_chain(
        old: &'a dyn GameModule,
        new: &'a dyn GameModule,
        old_wasm: &[u8],
        new_wasm: &[u8],
    ) -> Self {
        Self {
            old,
            new,
            how: How::Native {
                from_code_hash: code_hash(old_wasm),
                to_code_hash: code_hash(new_wasm),
                txid: Some(upgrade_tx(new.id(), new_wasm).txid()),
            },
        }
    }

    /// Loaded wasm modules `old` and `new` (from `old_wasm`, `new_wasm`), upgraded by one
    /// block of the state transition.
    pub fn chain(
        old: &'a WasmModule,
        new: &'a WasmModule,
        old_wasm: &'a [u8],
        new_wasm: &'a [u8],
    ) -> Self {
        Self {
            old,
            new,
            how: How::Chain { old_wasm, new_wasm },
        }
    }

    /// The module before the upgrade.
    pub fn old(&self) -> &dyn GameModule {
        self.old
    }

    /// The module after the upgrade (named as `old`'s pair, not a constructor).
    #[allow(clippy::new_ret_no_self)]
    pub fn new(&self) -> &dyn GameModule {
        self.new
    }

    /// The module's owner: the address the upgrade is signed by and the migration runs as.
    pub fn owner(&self) -> String {
        owner_key().address()
    }

    /// Upgrades module `ctx.module` from the old code to the new in one block (height
    /// `ctx.height + 1`, time `ctx.block_time_ms +` [`UPGRADE_BLOCK_MS`]; the context is left at
    /// that block, `txid` empty): the migration, then `end_block` of the code then in effect.
    /// `Err` is the upgrade's error text (the migration refused, trapped or ran out of fuel):
    /// nothing of the migration is kept and the old code stays, as on a chain.
    ///
    /// Panics when the chain cannot run the block at all (a node failure, not a receipt).
    pub fn upgrade(&self, ctx: &mut MockCtx) -> Result<(), String> {
        match &self.how {
            How::Native {
                from_code_hash,
                to_code_hash,
                txid,
            } => {
                ctx.height += 1;
                ctx.block_time_ms += UPGRADE_BLOCK_MS;
                let migration = Migration::new(&self.owner(), from_code_hash, to_code_hash);
                let result = match txid {
                    Some(txid) => ctx.migrate_in_tx(self.new, txid, &migration),
                    None => ctx.migrate(self.new, &migration.owner, from_code_hash, to_code_hash),
                };
                let running = if result.is_ok() { self.new } else { self.old };
                // A failing end_block is dropped, as the chain drops it.
                let _: Result<(), ActionError> = ctx.end_block(running);
                result.map_err(|e| e.to_string())
            }
            How::Chain { old_wasm, new_wasm } => upgrade_on_chain(ctx, old_wasm, new_wasm),
        }
    }
}

/// Keys of the chain's own records, not put back into the context after the block.
fn chain_key(key: &str) -> bool {
    ["module/", "code/", "nonce/", "chain/"]
        .iter()
        .any(|p| key.starts_with(p))
}

/// [`Upgrade::upgrade`] by one block of [`execute_block`] (see the module docs).
fn upgrade_on_chain(ctx: &mut MockCtx, old_wasm: &[u8], new_wasm: &[u8]) -> Result<(), String> {
    let id = ctx.module.clone();
    let owner = owner_key();
    let runtime = super::runtime();
    let cfg = runtime.config();
    let genesis = Genesis {
        chain_id: CHAIN_ID.into(),
        network: Network::Testnet,
        sequencer: SecretKey::from_bytes(Network::Testnet, [0x43; 32])
            .expect("a valid secret key")
            .address(),
        time_ms: 0,
        faucet: None,
        modules: Vec::new(),
        balances: Vec::new(),
        fuel_apply: cfg.fuel_apply,
        fuel_view: cfg.fuel_view,
        fuel_end_block: cfg.fuel_end_block,
        memory_limit_bytes: cfg.memory_limit_bytes as u64,
        engine_config_hash: cfg.config_hash(),
        fees: None,
        validators: None,
        min_block_interval_ms: Some(UPGRADE_BLOCK_MS),
        max_clock_drift_ms: None,
        max_block_deploys: None,
        max_block_code_bytes: None,
        beacon: None,
        state_commitment: None,
    };
    let g = genesis_state(&genesis, &BTreeMap::new())
        .unwrap_or_else(|e| panic!("the migration test's genesis: {e}"));
    let mut map: BTreeMap<String, Vec<u8>> = g.entries.into_iter().collect();
    map.extend(ctx.kv.state.clone());
    let record = ModuleRecord {
        abi_version: 1,
        code_hash: code_hash(old_wasm),
        deployed_height: 0,
        owner: owner.address(),
        pending_upgrade: None,
        policy: None,
        upgraded_height: None,
    };
    map.insert(module_record_key(&id), record.to_bytes());
    map.insert(code_key(&record.code_hash), old_wasm.to_vec());
    let state_hash = StateHash::from_entries(StateCommitment::LtHash16, &map);
    let mut parent = g.header;
    parent.height = ctx.height;
    parent.time_ms = ctx.block_time_ms;
    parent.state_root = state_hash.root();
    let chain = ChainContext::new(genesis, runtime.clone(), Modules::new())
        .unwrap_or_else(|e| panic!("the migration test's chain: {e}"));
    let input = BlockInput {
        time_ms: ctx.block_time_ms + UPGRADE_BLOCK_MS,
        checkpoint: ctx.checkpoint.clone(),
        txs: vec![upgrade_tx(&id, new_wasm)],
        beacon: None,
    };
    let out = execute_block(&chain, &MemState { map }, &state_hash, &parent, &input)
        .unwrap_or_else(|e| panic!("the upgrade block of module {id} cannot run: {e}"));
    for (key, value) in out.writes {
        if chain_key(&key) {
            continue;
        }
        match value {
            Some(v) => ctx.kv.state.insert(key, v),
            None => ctx.kv.state.remove(&key),
        };
    }
    let receipt = &out.receipts[0];
    if receipt.ok {
        // The first event is the chain's `deploy`; the migration's follow.
        for e in receipt.events.iter().skip(1) {
            ctx.events.push((e.kind.clone(), e.data.clone()));
        }
    }
    for (_, r) in out.end_block.iter().filter(|(_, r)| r.ok) {
        for e in &r.events {
            ctx.events.push((e.kind.clone(), e.data.clone()));
        }
    }
    ctx.height = out.header.height;
    ctx.block_time_ms = out.header.time_ms;
    ctx.txid.clear();
    ctx.sender = None;
    match &receipt.error {
        None => Ok(()),
        Some(e) => Err(e.clone()),
    }
}

/// The code `old_wasm` loaded into [`super::runtime`] as module `id`; panics when refused.
fn load(id: &str, wasm: &[u8], what: &str) -> Arc<WasmModule> {
    Arc::new(
        WasmModule::new(&super::runtime(), id, wasm)
            .unwrap_or_else(|e| panic!("the runtime refuses the {what} code of `{id}`: {e}")),
    )
}

/// Runs migration scenario `scenario` on wasm (the OLD code `old_wasm`, the NEW code: the crate
/// in `crate_dir` built to `.wasm`; the upgrade by one real block) and natively with the same
/// hashes and txid, and checks both left the same state and events. What `migration_wasm::<name>`
/// tests of [`migration_tests!`](crate::migration_tests) call.
pub fn run_migration_on_wasm(
    name: &str,
    crate_dir: &str,
    old_native: &dyn GameModule,
    new_native: &dyn GameModule,
    old_wasm: &[u8],
    scenario: fn(&Upgrade) -> MockCtx,
) {
    let id = new_native.id();
    let new_wasm = super::built_guest(Path::new(crate_dir)).wasm;
    let (old, new) = (load(id, old_wasm, "old"), load(id, &new_wasm, "new"));
    let on_wasm = scenario(&Upgrade::chain(&old, &new, old_wasm, &new_wasm));
    let on_native = scenario(&Upgrade::native_as_chain(
        old_native, new_native, old_wasm, &new_wasm,
    ));
    super::assert_same_outcome(name, &on_native, &on_wasm);
}

/// Expands migration scenarios `fn <name>(&Upgrade) -> MockCtx` of the calling module into
/// `migration_native::<name>` and `migration_wasm::<name>` tests (see
/// [`testkit::migration`](crate::testkit::migration)). Arguments: the OLD native module value,
/// the OLD code's bytes (any expression whose `.as_ref()` is `&[u8]`, evaluated per test:
/// `include_bytes!("../v1.wasm")` for a file kept from an earlier `gamechain module build`), the
/// NEW native module value (the calling crate's, built to wasm from `CARGO_MANIFEST_DIR`).
///
/// ```ignore
/// gamechain_runtime::migration_tests!(
///     old: v1::Tally, old_wasm: include_bytes!("v1.wasm"), new: tally::Tally;
///     totals_become_points,
/// );
/// ```
#[macro_export]
macro_rules! migration_tests {
    (old: $old:expr, old_wasm: $old_wasm:expr, new: $new:expr; $($scenario:ident),+ $(,)?) => {
        /// The migration scenarios on the native modules and `MockCtx::migrate`.
        mod migration_native {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[test]
                fn $scenario() {
                    super::$scenario(&$crate::testkit::migration::Upgrade::native(&$old, &$new));
                }
            )+
        }
        /// The migration scenarios on the old and new `.wasm`, upgraded by a real block, compared
        /// with the native run.
        mod migration_wasm {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[test]
                fn $scenario() {
                    let old_wasm = $old_wasm;
                    $crate::testkit::migration::run_migration_on_wasm(
                        stringify!($scenario),
                        env!("CARGO_MANIFEST_DIR"),
                        &$old,
                        &$new,
                        ::core::convert::AsRef::<[u8]>::as_ref(&old_wasm),
                        super::$scenario,
                    );
                }
            )+
        }
    };
}
