//! The move bench's second peer: the same tic-tac-toe logic on `cosmwasm-vm`, the VM of the
//! CosmWasm stack (Wasmer's singlepass compiler, its gas metering), as a chain running CosmWasm
//! would run a contract.
//!
//! It is built only with `--features peers`. CosmWasm runs contracts, not gamechain modules, so
//! the guest is `tests/peers/cosmwasm-tictactoe`: gamechain's `TicTacToe::apply` linked behind
//! CosmWasm's `execute` entry point, with a `Ctx` over the contract's storage that keeps
//! gamechain's key layout (built here with the `guest` profile, as our modules are, then with its
//! bulk-memory copies lowered to loops, `support/bulk_memory_lowering.rs`, as CosmWasm requires).
//!
//! What one move costs here, as in a CosmWasm chain: the module compiled once and pinned in
//! `cosmwasm-vm`'s `Cache` (its in-memory cache of compiled modules), then per move
//! `Cache::get_instance` (a new Wasmer instance with its gas limit) and `call_execute` (the
//! `Env`, `MessageInfo` and op copied into the guest as JSON, the `Response` read back), and the
//! storage calls the move makes. The storage is an overlay of the committed state, as the wasmi
//! peer's; it charges no gas of its own (a chain's store does, outside the VM), so the gas
//! reported is the VM's: its metered wasm and its API calls.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use cosmwasm_std::{ContractResult, Empty, Env, MessageInfo, Order, Record, Response};
use cosmwasm_vm::testing::{mock_env, mock_info, MockApi, MockQuerier};
use cosmwasm_vm::{
    call_execute, capabilities_from_csv, Backend, BackendError, BackendResult, Cache, CacheOptions,
    GasInfo, InstanceOptions, Size, Storage,
};

/// Gas given to one move, in CosmWasm gas (far more than a move uses).
const GAS_LIMIT: u64 = 1_000_000_000_000;

/// The contract's storage for one move: the committed state (shared by every move), the move's
/// writes over it (`None`: deleted) and the iterators the contract opened.
pub struct Overlay {
    committed: Arc<BTreeMap<Vec<u8>, Vec<u8>>>,
    writes: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    iterators: Vec<std::vec::IntoIter<Record>>,
}

impl Storage for Overlay {
    fn get(&self, key: &[u8]) -> BackendResult<Option<Vec<u8>>> {
        let value = match self.writes.get(key) {
            Some(value) => value.clone(),
            None => self.committed.get(key).cloned(),
        };
        (Ok(value), GasInfo::free())
    }

    /// Collects the merged range at once (a move scans little, if at all) and hands it out.
    fn scan(
        &mut self,
        start: Option<&[u8]>,
        end: Option<&[u8]>,
        order: Order,
    ) -> BackendResult<u32> {
        use std::ops::Bound::{Excluded, Included, Unbounded};
        let range = (
            start.map_or(Unbounded, |s| Included(s.to_vec())),
            end.map_or(Unbounded, |e| Excluded(e.to_vec())),
        );
        if matches!((start, end), (Some(s), Some(e)) if s >= e) {
            self.iterators.push(Vec::new().into_iter());
            return (Ok(self.iterators.len() as u32 - 1), GasInfo::free());
        }
        let mut merged: BTreeMap<Vec<u8>, Vec<u8>> = self
            .committed
            .range(range.clone())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (key, value) in self.writes.range(range) {
            match value {
                Some(value) => merged.insert(key.clone(), value.clone()),
                None => merged.remove(key),
            };
        }
        let mut records: Vec<Record> = merged.into_iter().collect();
        if order == Order::Descending {
            records.reverse();
        }
        self.iterators.push(records.into_iter());
        (Ok(self.iterators.len() as u32 - 1), GasInfo::free())
    }

    fn next(&mut self, iterator_id: u32) -> BackendResult<Option<Record>> {
        let result = match self.iterators.get_mut(iterator_id as usize) {
            Some(iterator) => Ok(iterator.next()),
            None => Err(BackendError::iterator_does_not_exist(iterator_id)),
        };
        (result, GasInfo::free())
    }

    fn set(&mut self, key: &[u8], value: &[u8]) -> BackendResult<()> {
        self.writes.insert(key.to_vec(), Some(value.to_vec()));
        (Ok(()), GasInfo::free())
    }

    fn remove(&mut self, key: &[u8]) -> BackendResult<()> {
        self.writes.insert(key.to_vec(), None);
        (Ok(()), GasInfo::free())
    }
}

/// The contract compiled and pinned in a `cosmwasm-vm` cache, and what every move sends it.
pub struct Peer {
    cache: Cache<MockApi, Overlay, MockQuerier>,
    checksum: cosmwasm_std::Checksum,
    env: Env,
    info: MessageInfo,
    /// Where the cache keeps its files; removed on drop.
    dir: PathBuf,
    /// The contract's size in bytes.
    pub wasm_len: usize,
}

/// What one move gave: its writes (`None`: deleted), the `Response`'s events and the VM's gas.
pub struct Moved {
    pub writes: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    pub events: Vec<cosmwasm_std::Event>,
    pub gas: u64,
}

impl Peer {
    /// Builds the contract (`tests/peers/cosmwasm-tictactoe`, the `guest` profile), stores it in
    /// a new cache (its static checks run here) and pins it, as a CosmWasm chain does a hot
    /// contract. `context` is `(height, block time in ms, txid hex)`, `sender` the player.
    pub fn new(context: (u64, u64, &str), sender: &str) -> Peer {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("peers/cosmwasm-tictactoe");
        let built = gamechain_sdk::guest_build::build_guest_crate(&dir)
            .unwrap_or_else(|e| panic!("building the CosmWasm peer's contract: {e}"));
        let cache_dir = std::env::temp_dir().join(format!(
            "gamechain-move-bench-cosmwasm-{}",
            std::process::id()
        ));
        let options = CacheOptions::new(
            &cache_dir,
            capabilities_from_csv("iterator,staking,cosmwasm_1_1,cosmwasm_1_2,cosmwasm_1_3,cosmwasm_1_4,cosmwasm_2_0,cosmwasm_2_1,cosmwasm_2_2,cosmwasm_3_0"),
            Size::mebi(64),
            Size::mebi(32),
        );
        // SAFETY: the cache directory is new and only this process writes it.
        let cache = unsafe { Cache::new(options) }.expect("a cosmwasm-vm cache");
        let wasm = crate::bulk_memory_lowering::lower(&built.wasm);
        let checksum = cache
            .store_code(&wasm, true, true)
            .unwrap_or_else(|e| panic!("cosmwasm-vm refuses the contract: {e}"));
        cache.pin(&checksum).expect("pin the contract");
        let (height, time_ms, txid) = context;
        let mut env = mock_env();
        env.block.height = height;
        env.block.time = cosmwasm_std::Timestamp::from_nanos(time_ms * 1_000_000);
        if let Some(tx) = env.transaction.as_mut() {
            tx.hash = cosmwasm_std::Binary::from_hex(txid).expect("txid is hex");
        }
        Peer {
            cache,
            checksum,
            env,
            info: mock_info(sender, &[]),
            dir: cache_dir,
            wasm_len: wasm.len(),
        }
    }

    /// One move: a new instance of the pinned module over a fresh overlay of `committed`, then
    /// `execute` with the op. Panics when the contract refuses the move.
    pub fn apply(&self, committed: &Arc<BTreeMap<Vec<u8>, Vec<u8>>>, op: &[u8]) -> Moved {
        let backend = Backend {
            api: MockApi::default(),
            storage: Overlay {
                committed: Arc::clone(committed),
                writes: BTreeMap::new(),
                iterators: Vec::new(),
            },
            querier: MockQuerier::new(&[]),
        };
        let mut instance = self
            .cache
            .get_instance(
                &self.checksum,
                backend,
                InstanceOptions {
                    gas_limit: GAS_LIMIT,
                },
            )
            .expect("an instance");
        let result: ContractResult<Response<Empty>> =
            call_execute(&mut instance, &self.env, &self.info, op)
                .unwrap_or_else(|e| panic!("cosmwasm-vm: {e}"));
        let response = result
            .into_result()
            .unwrap_or_else(|e| panic!("the move is refused: {e}"));
        let report = instance.create_gas_report();
        let backend = instance.recycle().expect("the backend back");
        Moved {
            writes: backend.storage.writes,
            events: response.events,
            gas: report.limit - report.remaining,
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The committed state with byte keys, as the contract's storage holds it.
pub fn committed(raw: &BTreeMap<String, Vec<u8>>) -> Arc<BTreeMap<Vec<u8>, Vec<u8>>> {
    Arc::new(
        raw.iter()
            .map(|(k, v)| (k.as_bytes().to_vec(), v.clone()))
            .collect(),
    )
}
