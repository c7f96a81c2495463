//! [`NodeConfig`]: everything an operator can set, as a TOML file whose every field has a
//! default ([`NodeConfig::default`] is the embedded configuration), loaded with
//! [`NodeConfig::load`] and checked with [`NodeConfig::validate`].
//!
//! The chain-defining fields (`chain_id`, `network`, `faucet`, `fees`, `state_commitment`, `fuel_apply`, `fuel_end_block`,
//! `memory_limit_bytes`, `min_block_interval_ms`, `max_clock_drift_ms`, `genesis_modules`) are used once, to write `genesis.json` on the first start; afterwards
//! the genesis file is authoritative and a differing value only logs a warning (see
//! `genesis_setup.rs`). Everything else takes effect at every start.
//!
//! ```toml
//! data_dir = "./gamechain-data"
//! compiled_dir = "/var/cache/gamechain"  # default: <data_dir>/compiled; nodes may share one
//! listen = "127.0.0.1:8645"
//! chain_id = "gamechain-dev"
//! network = "testnet"
//! block_interval_ms = 60000
//! min_block_interval_ms = 1000  # new chains: least block time between blocks (consensus)
//! faucet = "100000"          # or "none" (TOML has no null) to start a chain without a faucet
//! state_commitment = "sparse_merkle"  # new chains: the state root, with proofs ("lthash16": none)
//! genesis_modules = ["tictactoe", "mnk", "dice", "sealed_rps", "auction"]  # default: all nine; [] = none
//! log = "info"
//! deploy = "allowlist"        # who may deploy modules: "anyone" (default), "allowlist", "nobody"
//! deploy_allow = ["yJUPnBApYDiCvJHunsbiAj5fBiDpjURXLe"]
//!
//! [fees]                      # absent (the default): transactions are free
//! collector = "yJUPnBApYDiCvJHunsbiAj5fBiDpjURXLe"
//! tx_micro = "1000000"        # 1 base unit per transaction
//! fuel_micro = "10"           # per unit of fuel
//! write_byte_micro = "1000"   # per byte of state written
//! event_byte_micro = "500"    # per byte of events
//! ```
//!
//! `deploy` / `deploy_allow` are this node's admission policy for `deploy` transactions, not a
//! consensus rule: `POST /v1/tx` refuses a deploy from anybody else with `403 deploy_forbidden`
//! before it reaches the mempool, so this sequencer never includes one; a follower or replay
//! verifier never applies the policy and accepts whatever deploys the sequencer's blocks hold.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use gamechain_ledger::tier_up::{record, TierUpConfig, WORKER_COMMAND};
use gamechain_ledger::LedgerConfig;
use gamechain_runtime::chain::{FeeSchedule, Network, StateCommitment};
use gamechain_sdk::Amount;
use serde::{Deserialize, Serialize};

pub mod peer_addr;

use peer_addr::PeerAddr;

pub use gamechain_ledger::config::{ConfigError, DeployPolicy, IntegrityCheck};

/// The node's configuration. Every field is optional in the TOML file; unknown fields are
/// refused (a typo must not silently fall back to a default).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NodeConfig {
    /// Directory holding `sequencer.wif`, `genesis.json` and `chain.sqlite`; created if absent.
    /// Default `./gamechain-data`.
    pub data_dir: PathBuf,
    /// Directory of the compiled-module cache: the machine code of every module this node has
    /// compiled, one file per code hash and engine configuration (`gamechain_vm::cache`), so a
    /// restart loads modules instead of compiling them. Default `<data_dir>/compiled`. Nodes of
    /// one machine may share one directory (`gamechain testnet` makes its validators share
    /// `DIR/compiled`): an entry is written whole (a temporary file renamed into place) and is
    /// keyed by the code and the whole engine configuration, so each node reads exactly what it
    /// would have compiled. It holds machine code the node runs: as trusted as the binary.
    /// Not consensus. A relative path is relative to the directory the node runs in.
    pub compiled_dir: Option<PathBuf>,
    /// Address the HTTP/WebSocket API listens on. Port 0 picks a free port (see
    /// `NodeHandle::bound_addr`). Default `127.0.0.1:8645`.
    pub listen: SocketAddr,
    /// Chain id written to a new genesis (1–64 of `A-Za-z0-9._-`). Default `gamechain-dev`.
    pub chain_id: String,
    /// Network of the chain's addresses and of the generated sequencer key. Default testnet.
    pub network: Network,
    /// Longest time between two blocks, milliseconds: an empty block is made when no
    /// transaction arrives for this long. Default 60000 (one minute).
    pub block_interval_ms: u64,
    /// Least block time between a block and its parent, ms, written to a new chain's genesis
    /// (consensus, `runtime/chain/src/genesis/clock.rs`): `N` blocks always span at least `N` intervals
    /// whatever anyone sends, so a rule counted in blocks is a clock. What arrives meanwhile
    /// waits for the next block. Bounds and default: the chain parameter table (`ChainParams`,
    /// `docs/limits.md`); the default, 1000, makes the seed's 150-block tic-tac-toe
    /// timeout then lasts at least 2.5 minutes, and a move waits at most one second for its
    /// block (`docs/clock.md`).
    pub min_block_interval_ms: u64,
    /// How far from a validator's clock a proposal's time may be, either way, for its vote,
    /// and how far ahead of its clock a follower lets a head run before it reports it, ms;
    /// written to a new chain's genesis. Bounds and default: the chain parameter table.
    pub max_clock_drift_ms: u64,
    /// The modules a new chain's genesis holds, by id, from the guests this binary embeds
    /// (`node/ledger/src/start/genesis_modules.rs`): `tictactoe`, `mnk`, `dice`, `sealed_rps`,
    /// `auction`, `channel`, `moveboard`, `rps_rules`, `ttt_rules`. All are immutable: nobody owns
    /// or can upgrade them. Default: all nine, so a
    /// new node serves every game page with nothing deployed; `[]`: none (a chain that deploys
    /// its own). Used once, for a new genesis.
    pub genesis_modules: Vec<String>,
    /// Development only: `POST /v1/dev/clock {"advance_ms": N}` moves this sequencer's clock
    /// forward by `N` ms (never back), so tests and local play can let deadlines pass without
    /// waiting. A sequencer is trusted with its own clock anyway (it could set the machine's),
    /// so this adds no power over the chain; validators refuse it (their clocks are checked
    /// by each other's votes), and refused unless `listen` is a loopback address (anyone who
    /// reaches the endpoint can make every deadline pass). Default `false`: the endpoint
    /// answers 404.
    pub dev_clock: bool,
    /// Shortest time from the end of one block's execution to the start of the next while transactions
    /// keep arriving, milliseconds: a steady trickle makes one block per window instead of one
    /// per transaction (a transaction arriving after a quiet spell gets its block at once; a full
    /// mempool, `max_block_txs`, does not wait). 0 = no window; at most 1,000 (never longer
    /// than `block_interval_ms` in effect). Default 5.
    pub block_coalesce_ms: u64,
    /// Whether the sequencer pipelines blocks: the next block executes while the previous
    /// one is signed, recorded in the sign state, written to SQLite and fsynced. The blocks
    /// are the same either way (each is built on the state after the one before, and signed
    /// only once that one is durable); `false` makes and commits one block at a time (to
    /// compare). Default `true`.
    pub pipeline: bool,
    /// Most transactions in one block. Default 50,000: a block takes what arrives during one
    /// `min_block_interval_ms` (at least 30,000 transfers a second fit; the block's byte and
    /// fuel bounds, `runtime/src/transition/block_limits.rs`, apply as well).
    pub max_block_txs: usize,
    /// Base units one faucet call pays on a new chain (`"100000"` = 1000.00 GOLD), or `"none"`
    /// for a chain without a faucet. Default `"100000"`.
    #[serde(with = "faucet_field")]
    pub faucet: Option<Amount>,
    /// The fee schedule of a new chain (consensus; a `[fees]` table with `collector`,
    /// `tx_micro`, `fuel_micro`, `write_byte_micro`, `event_byte_micro`: prices in millionths of
    /// a base unit, `runtime/chain/src/genesis/fees.rs`). Default none: transactions are free.
    pub fees: Option<FeeSchedule>,
    /// The state root's construction a new chain's genesis names (consensus): `"sparse_merkle"`
    /// (the default: any key's value, or its absence, can be proven against a block's state root,
    /// `GET /v1/state/{key}?proof`) or `"lthash16"` (the chains made before proofs: a cheaper
    /// root with no proofs). `runtime/chain/src/state_root/`.
    pub state_commitment: StateCommitment,
    /// Fuel of one transaction's `apply` (new chains; consensus). Default and bounds: the chain
    /// parameter table (`ChainParams`, `docs/limits.md`), as for the three fields below.
    pub fuel_apply: u64,
    /// Fuel of one view (`GET /v1/games/...`); not consensus, applies at every start.
    pub fuel_view: u64,
    /// Fuel of one module's `end_block` (new chains; consensus).
    pub fuel_end_block: u64,
    /// Linear memory limit of one guest instance, bytes (new chains; consensus).
    pub memory_limit_bytes: u64,
    /// Pooled wasm instances (concurrent calls: the block executor plus views). Default 64.
    pub wasm_instances: u32,
    /// Largest HTTP request body, bytes; larger ones get `413 too_large`. Default 65536.
    pub max_body_bytes: usize,
    /// Most transactions waiting in the mempool; more get `503 mempool_full`. Default 100,000
    /// (several intervals' worth at full speed; `max_pending_bytes` bounds their bytes).
    pub max_pending: usize,
    /// Most bytes (bodies and signatures) waiting in the mempool; a transaction that would
    /// cross it gets `503 mempool_full`. Default 64 MiB.
    pub max_pending_bytes: u64,
    /// Requests per second one client IP may make on average; 0 disables the limit.
    /// Default 50.
    pub rate_limit_per_sec: u32,
    /// Requests one client IP may make in a burst above the average. Default 100.
    pub rate_limit_burst: u32,
    /// Seconds a connection may go without the node writing to it before it is closed: a
    /// request head that never completes (a client trickling bytes), or an idle keep-alive
    /// connection; WebSocket subscriptions are exempt. 0: never. Default 120 (more than the
    /// 60 s any request may take).
    pub idle_timeout_secs: u64,
    /// Blocks a WebSocket subscriber may fall behind before it is disconnected. Default 256.
    pub ws_buffer_blocks: usize,
    /// Bytes of block messages a WebSocket subscriber may fall behind before it is
    /// disconnected (close code 4000, or dropped when stuck mid-message). Default 16 MiB.
    pub ws_buffer_bytes: u64,
    /// Milliseconds one fragment (16 KiB) of a block message to a WebSocket subscriber may
    /// take to send (the client must read it) before the subscriber is dropped. Default 10,000.
    pub ws_send_timeout_ms: u64,
    /// WebSocket subscriptions open at once; further upgrades get `503 too_many_subscribers`.
    /// Default 1000.
    pub max_ws_subscribers: usize,
    /// WebSocket subscriptions one client IP may hold at once (of `max_ws_subscribers`), so one
    /// client cannot take every slot; further upgrades from it get `503 too_many_subscribers`.
    /// Behind a proxy every client has the proxy's IP: raise it there. Default 64.
    pub max_ws_per_ip: usize,
    /// Move relay connections (`GET /v1/relay/<game>`, `server/relay/`) open at once; further
    /// upgrades get `503 too_many_subscribers`. Default 1000.
    pub max_relay_connections: usize,
    /// TCP connections the API holds open at once (requests and WebSocket subscriptions);
    /// further connections get a `503 too_many_connections` JSON answer and are closed.
    /// Each takes a file descriptor: keep it below the process's `ulimit -n`. Default 2048.
    pub max_connections: usize,
    /// Milliseconds a deploy's code may take to validate and compile when the node admits it
    /// (node policy, never consensus): past it the deploy is refused with `too_costly` and never
    /// enters a block. Uploaded code is compiled by Winch, linear in its size (about 0.5 ms per
    /// KB here), so only an overloaded node reaches it. Default 10,000.
    pub compile_budget_ms: u64,
    /// Tier-up (node policy, never consensus: `node/ledger/src/tier_up.rs`): once an upload
    /// runs on Winch's code (admitted by a sequencer or validator, or replayed by a follower),
    /// compile it again with Cranelift (faster code) in a child process, one at a time, and
    /// swap it in when done. Default true.
    pub tier_up: bool,
    /// Milliseconds one tier-up compile may take; past it the child process is killed and the
    /// module stays on Winch (Cranelift's time grows faster than linearly with some shapes of
    /// code). 1 to 600,000. Default 10,000. Raising it (or `tier_up_memory_mib`) gives the
    /// compiles abandoned under the smaller budget another try at the next start.
    pub tier_up_budget_ms: u64,
    /// MiB of address space a tier-up compile process may map (`RLIMIT_AS`); a compile that
    /// needs more fails and the module stays on Winch. 256 to 65,536. Default 2048.
    pub tier_up_memory_mib: u64,
    /// The program that compiles for tier-up: the `gamechain` binary, which `gamechain node`
    /// sets to itself. None (an in-process node of a test or tool): no tier-up.
    #[serde(skip)]
    pub tier_up_worker: Option<PathBuf>,
    /// Views (`GET /v1/games/<module>`) run at once; further ones wait their turn (within the
    /// request timeout). Each holds a wasm instance (up to `memory_limit_bytes`) and an output
    /// of up to 1 MiB, so this bounds what views can make the node hold. Default 8.
    pub max_concurrent_views: usize,
    /// `tracing` filter (`RUST_LOG` syntax), e.g. `info` or
    /// `gamechain_node=debug,gamechain_ledger=debug` (the ledger crate logs the sequencer,
    /// storage and start-up); the
    /// `RUST_LOG` environment variable overrides it. Default `info`.
    pub log: String,
    /// Seconds between the sequencer's summary lines at info level (height, blocks and
    /// transactions since the last one, mempool size); 0: none. Empty blocks are logged at
    /// debug level only. Default 10.
    pub log_summary_secs: u64,
    /// Who may send `deploy` transactions (module uploads and upgrades) to this node: `anyone`,
    /// `allowlist` (only the addresses in `deploy_allow`) or `nobody`. Operator policy, checked
    /// at admission (`403 deploy_forbidden`), not consensus. Default `anyone`.
    pub deploy: DeployPolicy,
    /// With `deploy = "allowlist"`: the addresses (of `network`) that may deploy. Must be empty
    /// otherwise. Default empty.
    pub deploy_allow: Vec<String>,
    /// When the node, a sequencer or a follower, runs `PRAGMA quick_check` on its database at
    /// start (a full read of it; it
    /// refuses to start on damage): `unclean` (default: only when the previous run did not
    /// stop cleanly, i.e. it was killed, crashed or lost power; `<data>/node.running` is left
    /// behind), `always`, or `never`. The file is read sequentially first, so a cold check of
    /// a 1 GB database takes about 2 s instead of 35 s of random reads. The same starts also
    /// rehash the whole stored state against the head's state root (another full read of the
    /// `state` table); other starts check the saved running state hash only, and read no state.
    pub integrity_check: IntegrityCheck,
    /// Memory for cached committed state values, MiB (key + value + about 100 bytes each). The
    /// state lives in `chain.sqlite` and is read through this cache, so it may be far larger
    /// than memory; a larger cache saves SQLite reads of keys read again (balances, nonces,
    /// games in play). 0: no cache (every read goes to SQLite). Not consensus. Default 64.
    pub state_cache_mb: u64,
    /// Not a file setting: `gamechain node --restore-from URL`. When the database's head is
    /// below the sign state's height (`<data>/sign-state.json`), fetch, verify and commit the
    /// missing blocks from the node at this URL before starting. Default none.
    #[serde(skip)]
    pub restore_from: Option<String>,
    /// Take a snapshot of the committed state every this many blocks, and serve it
    /// (`GET /v1/snapshots`, `node/ledger/src/store/snapshot.rs`) so that new nodes can join from it instead of
    /// replaying from genesis (`docs/validators.md`, "Joining from a snapshot"). Node policy; a
    /// snapshot costs one read of the `state` table on a thread of its own and about the state's
    /// size on disk per snapshot kept. 0: none (the default).
    pub snapshot_every_blocks: u64,
    /// Snapshots kept under `<data>/snapshots/` (the newest). At least 1. Default 2.
    pub snapshot_keep: usize,
    /// Blocks to keep below the head: older blocks (and their transactions) are deleted, but
    /// never one at or above the oldest snapshot kept, so `gamechain verify --data` can still
    /// start from that snapshot and replay the rest. The API answers `410 pruned` for a deleted
    /// block. 0: keep every block, an archive node (the default).
    pub retain_blocks: u64,
    /// Not a file setting: `gamechain node --follow URL --snapshot-from URL2` (a follower) or
    /// `gamechain node --validator --snapshot-from URL2` (a validator). On an empty data
    /// directory, start from the newest snapshot the node at `URL2` serves (checked against the
    /// signed, or certified, header's state root) instead of replaying from genesis; ignored
    /// (logged) on a directory that holds the chain, except by a validator that must rejoin
    /// (it follows `URL2` first: `validator/rejoin.rs`). Default none.
    #[serde(skip)]
    pub snapshot_from: Option<String>,
    /// Validator mode (`[validator]`, `gamechain node --validator`): this node is one of the
    /// validators the chain's genesis names, and makes blocks with them under consensus
    /// (`docs/validators.md`). Absent (the default): a sequencer, or a node of a chain with
    /// validators that will not start without it.
    pub validator: Option<ValidatorConfig>,
}

/// The `[validator]` table: how this validator reaches the others.
///
/// ```toml
/// [validator]
/// p2p_listen = "0.0.0.0:9645"
/// peers = ["<consensus key, 64 hex>@v1.example.org:9645", "…@10.0.0.3:9645"]
/// # optional
/// allow_private_ips = true   # the default
/// archive_retention_blocks = 100000
/// archive_compression_level = 3
/// ```
///
/// The consensus key is `<data_dir>/consensus.key` (ed25519, 64 hex characters, mode 0600);
/// `gamechain testnet` writes it with the rest of a validator's folder. A loopback
/// `p2p_listen` runs the transport with Commonware's local preset (fast redials, for one
/// machine); any other address with its production preset (`validator/p2p.rs`,
/// `docs/validators.md` "Several machines").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValidatorConfig {
    /// Address the authenticated p2p transport listens on (TCP): `0.0.0.0:<port>` for every
    /// interface, or one of the machine's addresses.
    pub p2p_listen: SocketAddr,
    /// Every other validator, as `<consensus key hex>@<host>:<port>`, the host an IP address
    /// (`[…]` for IPv6) or a DNS name; each key must be in the genesis set.
    pub peers: Vec<String>,
    /// Finalized blocks below the head that consensus's own archives (marshal: blocks and
    /// certificates, served to peers that catch up) keep; older ones are pruned, in sections of
    /// 1,024 blocks. `0` keeps everything. The node's database keeps every block whatever this
    /// says. Default [`DEFAULT_ARCHIVE_RETENTION_BLOCKS`].
    #[serde(default = "default_archive_retention_blocks")]
    pub archive_retention_blocks: u64,
    /// zstd level (1..=19) of the values in consensus's archives. Default 3.
    #[serde(default = "default_archive_compression_level")]
    pub archive_compression_level: u8,
    /// Whether peers may be reached at, and connect from, private addresses (10/8, 172.16/12,
    /// 192.168/16, loopback, link-local, …). Default `true`: peers' addresses come only from
    /// this file, so a validator set on one private network (a LAN, a cloud VPC) works as is;
    /// `false` refuses every non-global address, including what a peer's DNS name resolves to.
    #[serde(default = "default_true")]
    pub allow_private_ips: bool,
}

/// Default of `validator.archive_retention_blocks`: 100,000 blocks (about 28 hours at one block
/// a second).
pub const DEFAULT_ARCHIVE_RETENTION_BLOCKS: u64 = 100_000;

fn default_archive_retention_blocks() -> u64 {
    DEFAULT_ARCHIVE_RETENTION_BLOCKS
}

fn default_archive_compression_level() -> u8 {
    3
}

fn default_true() -> bool {
    true
}

impl ValidatorConfig {
    /// The peers as (consensus key bytes, address). Errors: an entry that is not
    /// `<64 hex>@<host>:<port>` ([`PeerAddr::parse`]).
    pub fn parsed_peers(&self) -> Result<Vec<([u8; 32], PeerAddr)>, ConfigError> {
        self.peers
            .iter()
            .map(|p| {
                let bad = |why: String| {
                    ConfigError(format!(
                        "validator.peers: `{p}` is not <consensus key, 64 hex>@<host>:<port>{why}"
                    ))
                };
                let (key, addr) = p.split_once('@').ok_or_else(|| bad(String::new()))?;
                let key = gamechain_runtime::chain::hash::parse_hex32(key)
                    .ok_or_else(|| bad(": the key is not 64 hex characters".into()))?;
                let addr = PeerAddr::parse(addr).map_err(|e| bad(format!(": {e}")))?;
                Ok((key, addr))
            })
            .collect()
    }
}

/// Calls `$then!` with the fields `NodeConfig` shares with `LedgerConfig` (same names, types and
/// defaults; `validator` differs: the table here, whether it is present there), so that
/// [`NodeConfig::default`] and [`NodeConfig::ledger`] name them once.
macro_rules! with_ledger_fields {
    ($then:ident) => {
        $then!(
            data_dir,
            compiled_dir,
            chain_id,
            network,
            block_interval_ms,
            min_block_interval_ms,
            max_clock_drift_ms,
            genesis_modules,
            dev_clock,
            block_coalesce_ms,
            pipeline,
            max_block_txs,
            faucet,
            fees,
            state_commitment,
            fuel_apply,
            fuel_view,
            fuel_end_block,
            memory_limit_bytes,
            wasm_instances,
            max_pending,
            max_pending_bytes,
            compile_budget_ms,
            log_summary_secs,
            deploy,
            deploy_allow,
            integrity_check,
            state_cache_mb,
            restore_from,
            snapshot_every_blocks,
            snapshot_keep,
            retain_blocks,
            snapshot_from,
        )
    };
}

impl Default for NodeConfig {
    /// The embedded configuration: the ledger's defaults ([`LedgerConfig::default`]) and the
    /// API's.
    fn default() -> Self {
        let ledger = LedgerConfig::default();
        macro_rules! from_ledger {
            ($($field:ident,)*) => {
                Self {
                    $($field: ledger.$field,)*
                    validator: None,
                    listen: SocketAddr::from(([127, 0, 0, 1], 8645)),
                    max_body_bytes: 64 * 1024,
                    rate_limit_per_sec: 50,
                    rate_limit_burst: 100,
                    ws_buffer_blocks: 256,
                    ws_buffer_bytes: 16 << 20,
                    ws_send_timeout_ms: 10_000,
                    max_ws_subscribers: 1000,
                    max_ws_per_ip: 64,
                    max_relay_connections: 1000,
                    max_connections: 2048,
                    max_concurrent_views: 8,
                    tier_up: true,
                    tier_up_budget_ms: 10_000,
                    tier_up_memory_mib: 2048,
                    tier_up_worker: None,
                    idle_timeout_secs: 120,
                    log: "info".to_string(),
                }
            };
        }
        with_ledger_fields!(from_ledger)
    }
}

/// Largest `tier_up_memory_mib`: 64 GiB.
pub const MAX_TIER_UP_MEMORY_MIB: u64 = 64 << 10;

/// Largest `tier_up_budget_ms`: 10 minutes.
pub const MAX_TIER_UP_BUDGET_MS: u64 = 600_000;

/// Largest `block_coalesce_ms`: a window longer than this would only add latency.
pub use gamechain_ledger::config::MAX_BLOCK_COALESCE_MS;

impl NodeConfig {
    /// The ledger's part of this configuration (`gamechain_ledger::LedgerConfig`).
    pub fn ledger(&self) -> LedgerConfig {
        macro_rules! to_ledger {
            ($($field:ident,)*) => {
                LedgerConfig {
                    $($field: self.$field.clone(),)*
                    validator: self.validator.is_some(),
                }
            };
        }
        with_ledger_fields!(to_ledger)
    }

    /// How this node tiers uploads up (`gamechain_ledger::tier_up`; sequencers, validators and
    /// followers alike): the compile program, `tier_up_budget_ms` and `tier_up_memory_mib`.
    /// `None` when `tier_up` is off or no compile program is set (an in-process node of a test
    /// or tool): uploads then stay on Winch.
    pub fn tier_up_config(&self) -> Option<TierUpConfig> {
        match (&self.tier_up_worker, self.tier_up) {
            (Some(program), true) => Some(TierUpConfig {
                worker: vec![program.clone().into(), WORKER_COMMAND.into()],
                budget: std::time::Duration::from_millis(self.tier_up_budget_ms),
                memory_bytes: self.tier_up_memory_mib << 20,
                // This node's own, wherever the cache is (a shared cache is not one node's to
                // record in).
                record: Some(self.data_dir.join("compiled").join(record::FILE_NAME)),
            }),
            _ => None,
        }
    }

    /// Reads and [validates](Self::validate) the TOML file at `path`; absent fields take their
    /// defaults. Errors: the file cannot be read, is not TOML of this shape (unknown field,
    /// wrong type; the message has the line), or a value is out of range.
    pub fn load(path: &Path) -> Result<NodeConfig, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError(format!("cannot read config file {}: {e}", path.display())))?;
        Self::from_toml(&text)
            .map_err(|e| ConfigError(format!("config file {}: {e}", path.display())))
    }

    /// Parses and validates TOML text (see [`Self::load`]).
    pub fn from_toml(text: &str) -> Result<NodeConfig, ConfigError> {
        let config: NodeConfig = toml::from_str(text).map_err(|e| ConfigError(e.to_string()))?;
        config.validate()?;
        Ok(config)
    }

    /// The configuration as TOML text (every field, e.g. to write a starting config file).
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).expect("a NodeConfig always serialises")
    }

    /// Checks the ranges: positive block interval, block size, mempool size, body limit, fuel
    /// and memory limits and instance count; a rate-limit burst of at least 1 when limiting.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let positive = [
            ("max_body_bytes", self.max_body_bytes as u64),
            ("ws_buffer_blocks", self.ws_buffer_blocks as u64),
            ("ws_send_timeout_ms", self.ws_send_timeout_ms),
            ("ws_buffer_bytes", self.ws_buffer_bytes),
            ("max_ws_subscribers", self.max_ws_subscribers as u64),
            ("max_ws_per_ip", self.max_ws_per_ip as u64),
            ("max_relay_connections", self.max_relay_connections as u64),
            ("max_connections", self.max_connections as u64),
            ("max_concurrent_views", self.max_concurrent_views as u64),
            ("tier_up_budget_ms", self.tier_up_budget_ms),
        ];
        for (name, value) in positive {
            if value == 0 {
                return Err(ConfigError(format!("{name} must be more than 0")));
            }
        }
        if !(256..=MAX_TIER_UP_MEMORY_MIB).contains(&self.tier_up_memory_mib) {
            return Err(ConfigError(format!(
                "tier_up_memory_mib must be 256 to {MAX_TIER_UP_MEMORY_MIB}, not {}",
                self.tier_up_memory_mib
            )));
        }
        if self.tier_up_budget_ms > MAX_TIER_UP_BUDGET_MS {
            return Err(ConfigError(format!(
                "tier_up_budget_ms must be at most {MAX_TIER_UP_BUDGET_MS} (10 minutes), not {}",
                self.tier_up_budget_ms
            )));
        }
        // The ledger's fields (block making, genesis, mempool, storage, deploy policy).
        self.ledger().validate()?;
        // Anyone who reaches `POST /v1/dev/clock` can make every deadline pass: only this
        // machine may.
        if self.dev_clock && !self.listen.ip().is_loopback() {
            return Err(ConfigError(format!(
                "dev_clock needs a loopback listen address (127.0.0.1 or ::1), not {}: whoever \
                 can reach POST /v1/dev/clock can move every deadline",
                self.listen
            )));
        }
        if self.rate_limit_per_sec > 0 && self.rate_limit_burst == 0 {
            return Err(ConfigError(
                "rate_limit_burst must be at least 1 when rate_limit_per_sec is set".into(),
            ));
        }
        tracing_subscriber::EnvFilter::try_new(&self.log)
            .map_err(|e| ConfigError(format!("log filter `{}`: {e}", self.log)))?;
        if let Some(v) = &self.validator {
            let peers = v.parsed_peers()?;
            if peers.len() > gamechain_runtime::chain::validators::MAX_VALIDATORS {
                return Err(ConfigError(format!(
                    "validator.peers: at most {} peers",
                    gamechain_runtime::chain::validators::MAX_VALIDATORS
                )));
            }
            if !(1..=19).contains(&v.archive_compression_level) {
                return Err(ConfigError(format!(
                    "validator.archive_compression_level: {} is not a zstd level in 1..=19",
                    v.archive_compression_level
                )));
            }
        }
        Ok(())
    }
}

/// `faucet` in TOML: a decimal string of base units, or `"none"` / `"off"` / `false` (TOML has
/// no null; JSON `null` is accepted too) for no faucet.
mod faucet_field {
    use gamechain_sdk::Amount;
    use serde::{de, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &Option<Amount>, s: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(a) => s.serialize_str(&a.0.to_string()),
            None => s.serialize_str("none"),
        }
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Text(String),
        Flag(bool),
        Number(u64),
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Amount>, D::Error> {
        match Option::<Raw>::deserialize(d)? {
            None | Some(Raw::Flag(false)) => Ok(None),
            Some(Raw::Flag(true)) => Err(de::Error::custom(
                "faucet = true: give the amount, e.g. \"100000\"",
            )),
            Some(Raw::Number(n)) => Ok(Some(Amount(u128::from(n)))),
            Some(Raw::Text(t)) if matches!(t.as_str(), "none" | "off" | "") => Ok(None),
            Some(Raw::Text(t)) => t.parse::<Amount>().map(Some).map_err(|e| {
                de::Error::custom(format!("faucet `{t}`: {e} (base units, or \"none\")"))
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_are_ip_or_dns_names_and_anything_else_is_refused() {
        let key = "ab".repeat(32);
        let config = |peers: &[&str], extra: &str| {
            let list: Vec<String> = peers.iter().map(|p| format!("\"{key}@{p}\"")).collect();
            NodeConfig::from_toml(&format!(
                "[validator]\np2p_listen = \"0.0.0.0:9645\"\npeers = [{}]\n{extra}",
                list.join(", ")
            ))
        };
        let c = config(
            &[
                "10.0.0.2:9645",
                "[2001:db8::1]:9646",
                "v3.example.org:9647",
                "localhost:1",
            ],
            "",
        )
        .unwrap();
        let v = c.validator.unwrap();
        assert!(v.allow_private_ips, "the default");
        let addrs: Vec<PeerAddr> = v.parsed_peers().unwrap().into_iter().map(|p| p.1).collect();
        assert_eq!(
            addrs,
            vec![
                PeerAddr::Socket("10.0.0.2:9645".parse().unwrap()),
                PeerAddr::Socket("[2001:db8::1]:9646".parse().unwrap()),
                PeerAddr::Dns {
                    host: "v3.example.org".into(),
                    port: 9647
                },
                PeerAddr::Dns {
                    host: "localhost".into(),
                    port: 1
                },
            ]
        );
        assert_eq!(addrs[2].to_string(), "v3.example.org:9647");
        assert!(
            !config(&["10.0.0.2:9645"], "allow_private_ips = false")
                .unwrap()
                .validator
                .unwrap()
                .allow_private_ips
        );
        for bad in [
            "v3.example.org",
            "v3.example.org:",
            "v3.example.org:70000",
            "under_score.org:1",
            "-dash.org:1",
            "a..b:1",
            "2001:db8::1:9646",
            "[2001:db8::1:9646",
            ":9646",
        ] {
            let err = config(&[bad], "").unwrap_err().to_string();
            assert!(err.contains("validator.peers"), "{bad}: {err}");
        }
        let no_key = NodeConfig::from_toml(
            "[validator]\np2p_listen = \"0.0.0.0:9645\"\npeers = [\"v3.example.org:9647\"]",
        );
        assert!(no_key.is_err());
    }

    #[test]
    fn empty_file_is_the_default_and_the_default_round_trips() {
        assert_eq!(NodeConfig::from_toml("").unwrap(), NodeConfig::default());
        let d = NodeConfig::default();
        assert_eq!(NodeConfig::from_toml(&d.to_toml()).unwrap(), d);
        assert_eq!(
            d.ledger().runtime_config().config_hash(),
            gamechain_runtime::RuntimeConfig::default().config_hash()
        );
        assert_eq!(d.listen.to_string(), "127.0.0.1:8645");
    }

    #[test]
    fn a_validator_keeps_every_block() {
        let v = "[validator]\np2p_listen = \"127.0.0.1:9645\"\npeers = []\n";
        assert!(NodeConfig::from_toml(v).is_ok());
        let e = NodeConfig::from_toml(&format!("retain_blocks = 1000\n{v}")).unwrap_err();
        assert!(
            e.to_string()
                .contains("retain_blocks cannot be set on a validator"),
            "{e}"
        );
        assert!(NodeConfig::from_toml("retain_blocks = 1000").is_ok());
    }

    #[test]
    fn the_dev_clock_is_refused_off_loopback() {
        assert!(NodeConfig::from_toml("dev_clock = true").is_ok());
        let e = NodeConfig::from_toml("dev_clock = true\nlisten = \"0.0.0.0:9000\"").unwrap_err();
        assert!(
            e.to_string()
                .contains("dev_clock needs a loopback listen address"),
            "{e}"
        );
    }

    #[test]
    fn fields_parse_and_faucet_can_be_disabled() {
        let c = NodeConfig::from_toml(
            "listen = \"0.0.0.0:9000\"\nchain_id = \"x\"\nnetwork = \"mainnet\"\nfaucet = \"none\"\nblock_interval_ms = 5",
        )
        .unwrap();
        assert_eq!(
            (c.listen.port(), c.chain_id.as_str(), c.network),
            (9000, "x", Network::Mainnet)
        );
        assert_eq!((c.faucet, c.block_interval_ms), (None, 5));
        assert_eq!(
            NodeConfig::from_toml("faucet = false").unwrap().faucet,
            None
        );
        assert_eq!(
            NodeConfig::from_toml("faucet = \"250\"").unwrap().faucet,
            Some(Amount(250))
        );
    }

    #[test]
    fn the_deploy_policy_names_who_may_deploy() {
        let sk = |n| gamechain_runtime::chain::SecretKey::from_bytes(Network::Testnet, [n; 32]);
        let (a, b) = (sk(1).unwrap().address(), sk(2).unwrap().address());
        let anyone = NodeConfig::default();
        assert!(anyone.ledger().may_deploy(&a) && anyone.ledger().may_deploy(&b));
        let listed =
            NodeConfig::from_toml(&format!("deploy = \"allowlist\"\ndeploy_allow = [\"{a}\"]"))
                .unwrap();
        assert!(listed.ledger().may_deploy(&a) && !listed.ledger().may_deploy(&b));
        let nobody = NodeConfig::from_toml("deploy = \"nobody\"").unwrap();
        assert!(!nobody.ledger().may_deploy(&a));
        let empty = NodeConfig::from_toml("deploy = \"allowlist\"").unwrap();
        assert!(
            !empty.ledger().may_deploy(&a),
            "an empty allowlist admits nobody"
        );
        assert_eq!(NodeConfig::from_toml(&listed.to_toml()).unwrap(), listed);
    }

    #[test]
    fn bad_values_are_refused_with_the_field_name() {
        for (text, needle) in [
            ("bogus = 1", "bogus"),
            ("block_interval_ms = 0", "block_interval_ms"),
            ("block_coalesce_ms = 1001", "block_coalesce_ms"),
            ("faucet = \"1.5\"", "faucet"),
            ("faucet = \"0\"", "faucet"),
            ("listen = \"nowhere\"", "listen"),
            ("network = \"regtest\"", "network"),
            ("log = \"a=b=c\"", "log"),
            ("deploy = \"some\"", "deploy"),
            ("deploy_allow = [\"x\"]", "deploy_allow"),
            (
                "deploy = \"allowlist\"\ndeploy_allow = [\"not-an-address\"]",
                "deploy_allow",
            ),
        ] {
            let err = NodeConfig::from_toml(text).unwrap_err().to_string();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }
}
