//! `gamechain verify --game <module>:<id>`: fetches the game's transcript
//! (`GET /v1/games/<module>/<id>/transcript`, or `--transcript FILE`), the module's wasm by its
//! code hash (`GET /v1/code/<hash>`, or `--code FILE`) and the genesis (`GET /v1/genesis`, or
//! `--genesis FILE`: the trust anchor), then runs `verify::game` and prints each step or the
//! first divergence. Exit 0 when every step matched, [`EXIT_DIVERGED`] on a divergence (on a
//! chain with validators also a finality certificate that does not prove a step's block final),
//! [`EXIT_NOT_FINAL`] when a step of a chain with validators carries no finality record,
//! [`EXIT_ERROR`] when something could not be read.
//!
//! Everything read is bounded: the transcript at [`MAX_TRANSCRIPT_READ`] bytes, the wasm at the
//! chain's largest module ([`MAX_MODULE_BYTES`]), the genesis at 1 MiB.

use std::io::Write;
use std::path::{Path, PathBuf};

use gamechain_client::client::Client;
use gamechain_runtime::chain::Genesis;
use gamechain_runtime::MAX_MODULE_BYTES;

use crate::cli::verify::exit::{EXIT_DIVERGED, EXIT_ERROR, EXIT_NOT_FINAL};
use crate::verify::game::report::GameReport;
use crate::verify::game::{verify_game, GameCheck};
use crate::verify::source::fetch_genesis;
use gamechain_chain::wire::transcript::Transcript;

/// Most bytes of a transcript read (the node serves at most 16 MiB of steps).
pub const MAX_TRANSCRIPT_READ: usize = 24 << 20;
/// Most bytes of a genesis file read.
const MAX_GENESIS_READ: usize = 1 << 20;

/// The game mode's arguments (beside `verify`'s own `--node` and `--json`).
pub struct GameArgs {
    /// `<module>:<id>`.
    pub game: String,
    /// The node (transcript, code, genesis unless given as files).
    pub node: String,
    /// A transcript file instead of the node's.
    pub transcript: Option<PathBuf>,
    /// A wasm file instead of `GET /v1/code/<hash>`.
    pub code: Option<PathBuf>,
    /// A genesis file instead of `GET /v1/genesis`.
    pub genesis: Option<PathBuf>,
    /// Require the game to have finished.
    pub complete: bool,
    /// JSON output.
    pub json: bool,
}

fn read_file(path: &Path, max: usize) -> Result<Vec<u8>, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if meta.len() > max as u64 {
        return Err(format!("{}: more than {max} bytes", path.display()));
    }
    std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// Longest a request to the node may take, answer included (a node that stalls is an error).
const REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// `GET url`, at most `max` bytes of body within [`REQUEST_TIMEOUT`]; errors name the URL and
/// the status.
async fn get_bounded(url: &str, max: usize) -> Result<Vec<u8>, String> {
    let http = reqwest::Client::builder()
        .timeout(REQUEST_TIMEOUT)
        .build()
        .map_err(|e| format!("{url}: {e}"))?;
    let mut response = http
        .get(url)
        .send()
        .await
        .map_err(|e| format!("{url}: {e}"))?;
    let status = response.status();
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| format!("{url}: {e}"))? {
        if body.len() + chunk.len() > max {
            return Err(format!("{url}: the answer is more than {max} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    if !status.is_success() {
        return Err(format!(
            "{url}: HTTP {status}: {}",
            String::from_utf8_lossy(&body[..body.len().min(500)])
        ));
    }
    Ok(body)
}

async fn inputs(args: &GameArgs) -> Result<(Genesis, Transcript, Vec<u8>), String> {
    let (module, id) = args
        .game
        .split_once(':')
        .ok_or_else(|| format!("--game takes <module>:<id>, not `{}`", args.game))?;
    let client = Client::new(&args.node).map_err(|e| e.to_string())?;
    let genesis = match &args.genesis {
        Some(path) => {
            let text = read_file(path, MAX_GENESIS_READ)?;
            Genesis::from_json(&String::from_utf8_lossy(&text))
                .map_err(|e| format!("{}: {e}", path.display()))?
        }
        None => fetch_genesis(&client).await.map_err(|e| e.to_string())?,
    };
    let transcript_bytes = match &args.transcript {
        Some(path) => read_file(path, MAX_TRANSCRIPT_READ)?,
        None => {
            let url = client.url(&["v1", "games", module, id, "transcript"]);
            get_bounded(url.as_str(), MAX_TRANSCRIPT_READ).await?
        }
    };
    let transcript: Transcript = serde_json::from_slice(&transcript_bytes)
        .map_err(|e| format!("the transcript is not one: {e}"))?;
    let wasm = match &args.code {
        Some(path) => read_file(path, MAX_MODULE_BYTES)?,
        None => {
            let hash = &transcript.code_hash;
            if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(format!(
                    "the transcript's code hash `{hash}` is not 64 hex characters"
                ));
            }
            let url = client.url(&["v1", "code", hash]);
            get_bounded(url.as_str(), MAX_MODULE_BYTES).await?
        }
    };
    Ok((genesis, transcript, wasm))
}

fn print_text(report: &GameReport, out: &mut dyn Write) -> std::io::Result<()> {
    for s in &report.steps {
        match s.call {
            // A call the chain ran by itself: its draws come from the block's beacon, which
            // the step's checks verified against the genesis key.
            Some(id) => writeln!(
                out,
                "✓ step {} block {} scheduled call {id} (beacon checked): {} (fuel {})",
                s.index,
                s.height,
                s.events.join(", "),
                s.fuel_used
            )?,
            None => writeln!(
                out,
                "✓ step {} block {} tx {} {} by {}: {} (fuel {})",
                s.index,
                s.height,
                s.txid,
                s.kind.as_deref().unwrap_or("op"),
                s.sender,
                s.events.join(", "),
                s.fuel_used
            )?,
        }
    }
    if report.divergence.is_none() {
        for (account, why) in &report.start_unproven {
            writeln!(
                out,
                "! the starting balance of {account} is declared by the node, not proven: {why}"
            )?;
        }
        for (step, why) in &report.session_unproven {
            writeln!(
                out,
                "! step {step}'s session authorization is not proven: {why}"
            )?;
        }
    }
    match &report.divergence {
        Some(d) => writeln!(out, "{d}"),
        None => writeln!(
            out,
            "verified: {} game {} ({} steps, code {} ({}), {}{}{}{}) in {} ms",
            report.module,
            report.game,
            report.steps.len(),
            report.code_hash,
            report.code_origin,
            if report.finished {
                "finished"
            } else {
                "not finished"
            },
            match report.final_by_quorum {
                Some(n) => format!(
                    ", every block final by a quorum of the {n} genesis validators' certificates"
                ),
                None => String::new(),
            },
            match (report.complete_as_of, report.start_unproven.is_empty()) {
                (Some(h), true) => format!(
                    ", all of the game's steps up to block {h} (its log proven against that block's state root), every starting balance proven"
                ),
                (Some(h), false) => format!(
                    ", all of the game's steps up to block {h} (its log proven against that block's state root)"
                ),
                (None, _) => String::new(),
            },
            match report.session_unproven.len() {
                0 => String::new(),
                n => format!(", {n} session step(s) whose authorization is not proven (above)"),
            },
            report.elapsed_ms
        ),
    }
}

/// Runs the game mode; returns the exit code.
pub async fn run_verify_game(args: GameArgs, out: &mut dyn Write) -> Result<u8, String> {
    let (genesis, transcript, wasm) = match inputs(&args).await {
        Ok(x) => x,
        Err(e) if args.json => {
            let v = serde_json::json!({"result": "error", "error": e});
            writeln!(out, "{v}").map_err(|e| e.to_string())?;
            return Ok(EXIT_ERROR);
        }
        Err(e) => return Err(e),
    };
    let (module, id) = args.game.split_once(':').expect("checked by inputs");
    let (module, id) = (module.to_string(), id.to_string());
    let complete = args.complete;
    let report = tokio::task::spawn_blocking(move || {
        let check = GameCheck {
            genesis: &genesis,
            module: &module,
            game: &id,
            complete,
        };
        verify_game(&check, &transcript, &wasm)
    })
    .await
    .map_err(|e| format!("the verification panicked: {e}"))?;
    if args.json {
        writeln!(out, "{}", report.to_json()).map_err(|e| e.to_string())?;
    } else {
        print_text(&report, out).map_err(|e| e.to_string())?;
    }
    Ok(match report.result() {
        "verified" => 0,
        "not_final" => EXIT_NOT_FINAL,
        _ => EXIT_DIVERGED,
    })
}
