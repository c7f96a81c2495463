//! `gamechain verify` and `gamechain export`: their arguments, the progress bar (indicatif, on
//! stderr, only when stderr is a terminal and `--json` is not given), and the summary or
//! divergence report. Beside it: `verify_game.rs` (`verify --game`) and `view_proven.rs`
//! (`view --prove`).
//!
//! Exit codes of `verify`: 0 every block verified (and, on a chain with validators, every block
//! up to the head is covered by a finality certificate and every piece of stored evidence
//! proves a fault), [`EXIT_DIVERGED`] a divergence (reported on stdout), [`EXIT_NOT_FINAL`] a
//! chain with validators whose blocks replay but are not all covered by a finality certificate
//! (its own or a descendant's), [`EXIT_BAD_EVIDENCE`] a source holding evidence that does not
//! prove a fault, [`EXIT_ERROR`] the replay could not run (unreadable source, unreachable node,
//! a build that cannot run this chain; with `--json`, stdout still gets `{"result": "error",
//! "error"}`). When several apply, the first of divergence, not final, bad evidence.

pub mod exit;
pub mod verify_game;
pub mod view_proven;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgGroup, Args, ValueEnum};
use gamechain_runtime::Allocation;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::verify::export::{export, FileSource};
use crate::verify::source::{ChainSource, DataDirSource, NodeSource};
use crate::verify::verifier::{verify, Progress, VerifyOptions};

pub use exit::{EXIT_BAD_EVIDENCE, EXIT_DIVERGED, EXIT_ERROR, EXIT_NOT_FINAL};

/// Where the chain is read from (exactly one; with `--game`, `--node` or nothing).
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("source").required(false).multiple(false)))]
pub struct SourceArgs {
    /// A node's data directory (genesis.json, chain.sqlite); a running node may keep writing it.
    #[arg(long, value_name = "DIR", group = "source")]
    pub data: Option<PathBuf>,
    /// A running node's API, e.g. http://127.0.0.1:8645 (needs GET /v1/code/<hash>).
    #[arg(long, value_name = "URL", group = "source")]
    pub node: Option<String>,
    /// A file written by `gamechain export` (verify only).
    #[arg(long, value_name = "FILE", group = "source")]
    pub file: Option<PathBuf>,
}

/// The instance allocation of the replaying runtime (not consensus: results are identical).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AllocationArg {
    /// Preallocated pool slots.
    Pooling,
    /// An mmap per instance.
    OnDemand,
}

/// `gamechain verify`: a source, or `--game` (a usage error, exit 2, without either).
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("what").required(true).multiple(true).args(["data", "node", "file", "game"])))]
pub struct VerifyArgs {
    /// The chain to replay.
    #[command(flatten)]
    pub source: SourceArgs,
    /// Print one JSON object (summary and divergence) instead of text; no progress bar.
    #[arg(long)]
    pub json: bool,
    /// Instance allocation of the replaying runtime.
    #[arg(long, value_enum, default_value_t = AllocationArg::Pooling)]
    pub allocation: AllocationArg,
    /// Threads for signature checks (default: the machine's, at most 8).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Run every call in a fresh instance instead of a reset warm one.
    #[arg(long)]
    pub no_reuse: bool,
    /// Verify one game instead of the chain: `<module>:<id>` (`docs/verify-a-match.md`): its
    /// transcript's signatures and inclusion proofs checked against the genesis' block signer,
    /// every op re-executed and every receipt compared; exit 4 naming the first divergence.
    /// The node is `--node` (default `GAMECHAIN_NODE`, else http://127.0.0.1:8645).
    #[arg(long, value_name = "MODULE:ID", conflicts_with_all = ["data", "file"])]
    pub game: Option<String>,
    /// With --game: read the transcript from FILE instead of the node.
    #[arg(long, value_name = "FILE", requires = "game")]
    pub transcript: Option<PathBuf>,
    /// With --game: read the module's wasm from FILE instead of `GET /v1/code/<hash>`.
    #[arg(long, value_name = "FILE", requires = "game")]
    pub code: Option<PathBuf>,
    /// With --game: read the genesis (the trust anchor) from FILE instead of the node.
    #[arg(long, value_name = "FILE", requires = "game")]
    pub genesis: Option<PathBuf>,
    /// With --game: also require the game to have finished.
    #[arg(long, requires = "game")]
    pub complete: bool,
}

/// `gamechain export` (a usage error, exit 2, without a source).
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("export_source").required(true).args(["data", "node", "file"])))]
pub struct ExportArgs {
    /// The chain to export (`--data` or `--node`).
    #[command(flatten)]
    pub source: SourceArgs,
    /// The file to write (replaced when it exists).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
}

fn open_source(
    args: &SourceArgs,
    rt: tokio::runtime::Handle,
) -> Result<Box<dyn ChainSource>, String> {
    if let Some(dir) = &args.data {
        return Ok(Box::new(
            DataDirSource::open(dir).map_err(|e| e.to_string())?,
        ));
    }
    if let Some(url) = &args.node {
        return Ok(Box::new(
            NodeSource::new(url, rt).map_err(|e| e.to_string())?,
        ));
    }
    if let Some(file) = &args.file {
        return Ok(Box::new(FileSource::open(file).map_err(|e| e.to_string())?));
    }
    Err("give --data, --node or --file".into())
}

fn progress_bar(enabled: bool, unit: &str) -> ProgressBar {
    if !enabled || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
    let template = format!("{{bar:40}} {{pos}}/{{len}} {unit} {{msg}} ETA {{eta}}");
    bar.set_style(ProgressStyle::with_template(&template).expect("a valid template"));
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// Runs `gamechain verify`: writes the summary or the divergence to `out`; returns the exit
/// code (0, [`EXIT_DIVERGED`], [`EXIT_NOT_FINAL`], [`EXIT_BAD_EVIDENCE`]), or the error that
/// stopped the replay.
pub async fn run_verify(args: VerifyArgs, out: &mut dyn Write) -> Result<u8, String> {
    if let Some(game) = args.game.clone() {
        let node = args
            .source
            .node
            .clone()
            .or_else(|| std::env::var("GAMECHAIN_NODE").ok())
            .unwrap_or_else(|| "http://127.0.0.1:8645".into());
        let game_args = crate::cli::verify_game::GameArgs {
            game,
            node,
            transcript: args.transcript,
            code: args.code,
            genesis: args.genesis,
            complete: args.complete,
            json: args.json,
        };
        return crate::cli::verify_game::run_verify_game(game_args, out).await;
    }
    if args.source.data.is_none() && args.source.node.is_none() && args.source.file.is_none() {
        return Err("give --data, --node or --file (or --game <module>:<id>)".into());
    }
    let rt = tokio::runtime::Handle::current();
    let options = VerifyOptions {
        allocation: match args.allocation {
            AllocationArg::Pooling => Allocation::Pooling { instances: 4 },
            AllocationArg::OnDemand => Allocation::OnDemand,
        },
        verify_threads: args.threads,
        reuse_instances: !args.no_reuse,
    };
    let json = args.json;
    let report = tokio::task::spawn_blocking(move || {
        let source = open_source(&args.source, rt)?;
        let bar = progress_bar(!json, "blocks");
        let mut on_progress = |p: &Progress| {
            bar.set_length(p.head);
            bar.set_position(p.height);
            let secs = p.elapsed.as_secs_f64().max(1e-9);
            bar.set_message(format!("{} txs, {:.0} tx/s", p.txs, p.txs as f64 / secs));
        };
        let report = verify(source, &options, &mut on_progress).map_err(|e| e.to_string());
        bar.finish_and_clear();
        report
    })
    .await
    .map_err(|e| format!("the replay panicked: {e}"))?;

    let write = |out: &mut dyn Write, text: String| {
        writeln!(out, "{text}").map_err(|e| format!("cannot write the report: {e}"))
    };
    let report = match report {
        Ok(report) => report,
        // Machines get JSON whatever happened: {"result": "error", "error": "<why>"}, exit 1.
        Err(e) if json => {
            write(
                out,
                serde_json::json!({"result": "error", "error": e}).to_string(),
            )?;
            return Ok(EXIT_ERROR);
        }
        Err(e) => return Err(e),
    };
    if json {
        write(out, report.to_json().to_string())?;
    } else {
        let verdict = match report.result() {
            "diverged" => "DIVERGED",
            "not_final" => "NOT FINAL",
            "bad_evidence" => "BAD EVIDENCE",
            _ => "verified",
        };
        let first = report.base_height.unwrap_or(0);
        if let Some(base) = report.base_height {
            write(
                out,
                format!(
                    "from the snapshot at height {base}: the source keeps no block below it; the \
                     snapshot's state was checked against block {base}'s signed state root and \
                     the blocks after it replayed"
                ),
            )?;
        }
        write(
            out,
            format!(
                "{verdict}: chain {} (genesis {}) from {}\n\
                 blocks:      {} verified of {} (heights {first}..={})\n\
                 txs:         {}\n\
                 state root:  {} (after block {})\n\
                 head hash:   {}\n\
                 state check: {}\n\
                 time:        {:.2} s ({:.0} tx/s)",
                report.chain_id,
                report.genesis_hash,
                report.source,
                report.blocks,
                report.head_height + 1 - first,
                report.head_height,
                report.txs,
                report.state_root,
                (first + report.blocks).saturating_sub(1),
                report.head_hash,
                match report.state_entries_checked {
                    Some(n) => format!("{n} entries compared with the recorded head state"),
                    None => "the source has no head state to compare".into(),
                },
                report.elapsed.as_secs_f64(),
                report.txs_per_sec()
            ),
        )?;
        if let Some(f) = &report.finality {
            write(out, format!("finality:    {}", f.summary()))?;
        }
        if let Some(e) = &report.evidence {
            write(out, format!("evidence:    {}", e.summary()))?;
        }
        if let Some(d) = &report.divergence {
            write(out, d.to_string())?;
        }
    }
    Ok(match report.result() {
        "diverged" => EXIT_DIVERGED,
        "not_final" => EXIT_NOT_FINAL,
        "bad_evidence" => EXIT_BAD_EVIDENCE,
        _ => 0,
    })
}

/// Runs `gamechain export`: writes the file and a one-line summary to `out`.
pub async fn run_export(args: ExportArgs, out: &mut dyn Write) -> Result<(), String> {
    if args.source.file.is_some() {
        return Err("export reads --data or --node, not --file".into());
    }
    let rt = tokio::runtime::Handle::current();
    let path = args.out.clone();
    let summary = tokio::task::spawn_blocking(move || {
        let mut source = open_source(&args.source, rt)?;
        let bar = progress_bar(true, "blocks");
        let summary = export(source.as_mut(), &args.out, |height, head| {
            bar.set_length(head);
            bar.set_position(height);
        })
        .map_err(|e| e.to_string());
        bar.finish_and_clear();
        summary
    })
    .await
    .map_err(|e| format!("the export panicked: {e}"))??;
    writeln!(
        out,
        "exported {} blocks ({} txs, {} module codes, {}) to {}; head {}",
        summary.blocks,
        summary.txs,
        summary.codes,
        match summary.state_entries {
            Some(n) => format!("{n} state entries"),
            None => "no state".into(),
        },
        path.display(),
        summary.head_hash
    )
    .map_err(|e| e.to_string())
}
