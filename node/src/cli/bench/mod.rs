//! `gamechain bench`: the load tool shipped with the binary (as `pgbench` is with PostgreSQL).
//! It makes and funds N accounts, signs the whole workload before the clock starts
//! (`workload.rs`), drives a node over HTTP with C connections at a fixed rate or flat out
//! (`drive.rs`), and reports committed tx/s counted from blocks, post → block latency over the
//! WebSocket, the node's CPU per transaction, and refusals by code (`report.rs`, `cpu.rs`).
//!
//! Without `--node` it starts a node in-process on a temporary data directory (the embedded
//! defaults plus [`bench_config`]: no rate limit, 5,000 transactions a block, 400,000 pending,
//! log `warn`), and runs its own client on separate threads ([`cpu::BENCH_THREAD`]) so that the
//! node's CPU can be told apart. Accounts are funded by the faucet, or by `--funder <WIF file>`
//! on a chain without one.

pub mod cpu;
pub mod disk;
pub mod drive;
pub mod report;
pub mod workload;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use gamechain_client::client::Client;
use gamechain_runtime::chain::{Action, Network, SecretKey, SignedTx, TxBody};
use gamechain_sdk::Amount;

use crate::cli::local_node::LocalNode;
use crate::config::NodeConfig;
pub use disk::dir_bytes;
use disk::{bounded_bytes, data_bytes};
use report::{Latency, Report};
use workload::{Kind, Plan};

/// `gamechain bench`.
#[derive(Debug, Args, Clone)]
pub struct BenchArgs {
    /// Drive this node instead of starting one in-process.
    #[arg(long, value_name = "URL")]
    pub node: Option<String>,
    /// The process id of the `--node` when it runs on this machine, to report its CPU per
    /// transaction.
    #[arg(long, value_name = "PID", requires = "node")]
    pub node_pid: Option<u32>,
    /// What the accounts send.
    #[arg(long, value_enum, default_value = "transfer")]
    pub workload: Kind,
    /// Accounts to make and fund.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(2..=1_000_000))]
    pub accounts: u32,
    /// HTTP connections (each posts its share of the accounts' transactions in order).
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub connections: u32,
    /// Transactions to send in all (tic-tac-toe rounds up to whole games of 7).
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u32).range(1..=10_000_000))]
    pub txs: u32,
    /// Transactions per request: 1 posts each to `POST /v1/tx`, more sends them in batches of
    /// this size to `POST /v1/txs` (at most 1,000).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub batch: u16,
    /// Target rate, transactions per second over all connections; 0 = as fast as the node
    /// answers.
    #[arg(long, default_value_t = 0)]
    pub rate: u64,
    /// `--workload module`: the module id to call.
    #[arg(long, value_name = "ID")]
    pub module: Option<String>,
    /// `--workload module`: the op JSON, `{i}` replaced by a running number.
    #[arg(long, value_name = "JSON")]
    pub op: Option<String>,
    /// A funded key file (one WIF line) that pays each account 1,000.00 GOLD, for a chain
    /// without a faucet.
    #[arg(long, value_name = "FILE")]
    pub funder: Option<PathBuf>,
    /// Seconds to wait, after the last post, for accepted transactions to reach a block.
    #[arg(long, default_value_t = 60)]
    pub wait: u64,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// GOLD base units each account gets from `--funder`.
pub const FUNDING: u128 = 100_000;

/// The node configuration of an in-process bench node: the embedded defaults (blocks at least
/// `min_block_interval_ms` = 1,000 ms apart, as a production chain) with no rate limit,
/// 400,000 pending, and 128 MB of blocks that the bench's own subscriber may fall behind
/// (`ws_buffer_bytes`; 16 MB by default). Flat out a tic-tac-toe block is about 10 MB of JSON,
/// and the subscriber shares the 2 cores with the node: at 16 MB a slow moment closed its
/// subscription and failed the run.
pub fn bench_config() -> NodeConfig {
    let defaults = NodeConfig::default();
    NodeConfig {
        max_pending: 400_000,
        ws_buffer_bytes: 128 << 20,
        log: "warn".into(),
        min_block_interval_ms: defaults.min_block_interval_ms,
        max_block_txs: defaults.max_block_txs,
        ..LocalNode::config()
    }
}

/// The node a run drives.
#[derive(Debug, Clone)]
pub struct Target {
    /// Its API's base URL.
    pub url: String,
    /// How the report names it.
    pub label: String,
    /// Whose CPU is the node's: `Some(pid)` another process, `None` with `in_process` this one
    /// minus the bench's threads; neither: not measured.
    pub pid: Option<u32>,
    /// The node runs in this process.
    pub in_process: bool,
    /// Its data directory when local (bytes written per transaction are measured there).
    pub data_dir: Option<PathBuf>,
}

/// Runs `args`: against `--node`, or a node started in-process and stopped afterwards. Errors:
/// a node that cannot be started or reached, funding that fails, bad arguments.
pub async fn run(args: BenchArgs) -> Result<Report, String> {
    match &args.node {
        Some(url) => {
            let target = Target {
                url: url.clone(),
                label: url.clone(),
                pid: args.node_pid,
                in_process: false,
                data_dir: None,
            };
            run_with(&args, &target).await
        }
        None => {
            let node = LocalNode::start_with(bench_config()).await?;
            let result = run_with(&args, &local_target(&node)).await;
            node.stop().await?;
            result
        }
    }
}

/// The [`Target`] of an in-process node.
pub fn local_target(node: &LocalNode) -> Target {
    Target {
        url: node.url(),
        label: "in-process".into(),
        pid: None,
        in_process: true,
        data_dir: Some(node.data_dir().to_path_buf()),
    }
}

/// Runs `args` against `target` (`args.node` is ignored), the bench's client on its own
/// runtime and threads.
pub async fn run_with(args: &BenchArgs, target: &Target) -> Result<Report, String> {
    let client_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name(cpu::BENCH_THREAD)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the bench's runtime: {e}"))?;
    let job = client_rt.spawn(measure(args.clone(), target.clone()));
    let result = job.await.map_err(|e| format!("the bench failed: {e}"));
    client_rt.shutdown_background();
    result?
}

/// Funds, signs and drives; on the bench's runtime.
async fn measure(args: BenchArgs, target: Target) -> Result<Report, String> {
    let url = target.url.clone();
    let client = Client::new(&url).map_err(|e| e.to_string())?;
    let status = client.status().await.map_err(|e| e.to_string())?;
    let network: Network = status
        .network
        .parse()
        .map_err(|e| format!("the node's network `{}`: {e}", status.network))?;
    let genesis = client.genesis().await.map_err(|e| e.to_string())?;
    let has_faucet = !genesis["faucet"].is_null();
    let progress = !args.json && std::io::stderr().is_terminal();
    let wait = Duration::from_secs(args.wait);

    let keys = workload::keys(network, args.accounts as usize);
    let funding = funding_lanes(&args, &client, &keys, &status.chain_id, has_faucet).await?;
    let funded = drive::drive(&url, funding, 0, 1, wait, "funding", progress).await?;
    if funded.committed != keys.len() || funded.failed_receipts > 0 {
        return Err(format!(
            "funding the accounts failed: {} of {} funded, refusals {:?}, {} failed receipts",
            funded.committed - funded.failed_receipts,
            keys.len(),
            funded.refused,
            funded.failed_receipts
        ));
    }
    // A faucet call used each account's nonce 0; a transfer from --funder used none of theirs.
    let nonces = vec![u64::from(args.funder.is_none()); keys.len()];
    let plan = Plan {
        kind: args.workload.clone(),
        accounts: args.accounts as usize,
        txs: args.txs as usize,
        lanes: args.connections as usize,
        module: args.module.clone().zip(args.op.clone()),
    };
    let work = workload::build(&plan, &keys, nonces, &status.chain_id)?;
    let connections = work.lanes.len();

    let cpu_of_node = || {
        if target.in_process || target.pid.is_some() {
            cpu::node(target.pid)
        } else {
            None
        }
    };
    let disk = || target.data_dir.as_deref().and_then(data_bytes);
    let (cpu_before, disk_before) = (cpu_of_node(), disk());
    let batch = usize::from(args.batch);
    let d = drive::drive(&url, work.lanes, args.rate, batch, wait, "bench", progress).await?;
    let cpu_after = cpu_of_node();
    // The last block is committed before it is pushed over the WebSocket; give the commit its
    // moment to finish.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let disk_after = disk();
    let bounded = target.data_dir.as_deref().map(bounded_bytes);

    if d.committed == 0 {
        return Err(format!(
            "no transaction of the run reached a block within --wait {} s: {} submitted, refusals {:?}",
            args.wait, d.submitted, d.refused
        ));
    }
    if d.failed_receipts == d.committed {
        return Err(format!(
            "every one of the {} committed transactions failed (ok: false): check --module and --op",
            d.committed
        ));
    }
    let seconds = d.elapsed.as_secs_f64();
    let node_cpu = cpu_before.zip(cpu_after).map(|(a, b)| b.saturating_sub(a));
    let mut sizes = d.block_sizes.clone();
    sizes.sort_unstable();
    Ok(Report {
        node: target.label.clone(),
        workload: args.workload,
        accounts: args.accounts as usize,
        connections,
        rate: args.rate,
        submitted: d.submitted,
        accepted: d.accepted,
        refused: d.refused,
        committed: d.committed,
        failed_receipts: d.failed_receipts,
        missing: d.missing,
        seconds,
        committed_per_sec: per_sec(d.committed, seconds),
        accepted_per_sec: per_sec(d.accepted, d.posting.as_secs_f64()),
        latency: Latency::of(d.latencies),
        blocks: d.block_sizes.len(),
        median_txs_per_block: sizes.get(sizes.len() / 2).copied().unwrap_or(0),
        node_cpu_us_per_tx: node_cpu
            .filter(|_| d.committed > 0)
            .map(|c| c.as_secs_f64() * 1e6 / d.committed as f64),
        node_cores: node_cpu
            .filter(|_| seconds > 0.0)
            .map(|c| c.as_secs_f64() / seconds),
        disk_bytes_per_tx: disk_before
            .zip(disk_after)
            .filter(|_| d.committed > 0)
            .map(|(a, b)| b.saturating_sub(a) as f64 / d.committed as f64),
        disk_bounded_bytes: bounded,
        load_average: cpu::load_average(),
    })
}

fn per_sec(n: usize, seconds: f64) -> f64 {
    if seconds > 0.0 {
        n as f64 / seconds
    } else {
        0.0
    }
}

/// One faucet call per account (one lane per connection), or one lane of transfers from
/// `--funder`.
async fn funding_lanes(
    args: &BenchArgs,
    client: &Client,
    keys: &[SecretKey],
    chain_id: &str,
    has_faucet: bool,
) -> Result<Vec<Vec<SignedTx>>, String> {
    let sign = |key: &SecretKey, nonce: u64, action: Action| {
        TxBody {
            chain_id: chain_id.to_string(),
            from: key.address(),
            nonce,
            action,
        }
        .sign(key)
    };
    match (&args.funder, has_faucet) {
        (Some(path), _) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read the funder key {}: {e}", path.display()))?;
            let funder = SecretKey::from_wif(text.trim())
                .map_err(|e| format!("the funder key {}: {e}", path.display()))?;
            let first = client
                .account(&funder.address())
                .await
                .map_err(|e| e.to_string())?
                .next_nonce;
            let lane = keys
                .iter()
                .enumerate()
                .map(|(i, k)| {
                    let pay = Action::Transfer {
                        to: k.address(),
                        token: "GOLD".into(),
                        amount: Amount(FUNDING),
                    };
                    sign(&funder, first + i as u64, pay)
                })
                .collect();
            Ok(vec![lane])
        }
        (None, true) => {
            let lanes = (args.connections as usize).max(1).min(keys.len());
            let mut out = vec![Vec::new(); lanes];
            for (i, k) in keys.iter().enumerate() {
                let faucet = Action::Faucet {
                    token: "GOLD".into(),
                };
                out[i % lanes].push(sign(k, 0, faucet));
            }
            Ok(out)
        }
        (None, false) => Err(
            "this chain has no faucet: give --funder <key file> of an account holding GOLD".into(),
        ),
    }
}

/// `gamechain bench` from the command line: runs and prints the report (text or `--json`).
pub async fn run_cli(args: BenchArgs, out: &mut impl Write) -> Result<(), String> {
    let json = args.json;
    let report = run(args).await?;
    let text = if json {
        serde_json::to_string_pretty(&report).expect("a report serialises")
    } else {
        report.text()
    };
    writeln!(out, "{}", text.trim_end()).map_err(|e| e.to_string())
}
