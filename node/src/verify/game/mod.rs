//! `gamechain verify --game <module>:<id>`: one game checked from its transcript
//! (`GET /v1/games/<module>/<id>/transcript`, `server/transcript/`) and its module's wasm,
//! without replaying the chain. What it proves and what it trusts: `docs/verify-a-match.md`.
//!
//! | file | owns |
//! |---|---|
//! | `checks.rs` | a step's txid, signature, action, header signer, order and inclusion proofs |
//! | `finality.rs` | on a chain with validators, that a quorum of the genesis set finalized each step's block |
//! | `log.rs` | on a chain with state proofs, that the steps are all of the game's (its proven log) |
//! | `replay.rs` | re-executing the ops with the runtime's executor and comparing receipts |
//! | `start.rs` | on a chain with state proofs, that the players' starting balances are proven |
//! | `session.rs` | on a chain with state proofs, that each session step's key was authorized for it (its session record, proven) |
//! | `report.rs` | [`report::GameReport`], [`report::GameDivergence`] |
//!
//! Order of the checks: the transcript against the genesis (hash, chain id, sequencer), the
//! module and game asked for, the wasm against the code hash (and its size); on a chain with
//! state proofs, [`start::check_start`]; then for each
//! step, in order, [`checks::check_step`], on a chain with validators
//! [`finality::check_final`], and the re-execution; then, with `complete`, that
//! the game finished; then, on a chain with state proofs, [`log::check_log`]. The first failure is the report's divergence.

pub mod checks;
pub mod finality;
pub mod log;
pub mod replay;
pub mod report;
pub mod session;
pub mod start;

use std::time::Instant;

use gamechain_runtime::chain::Genesis;
use gamechain_runtime::MAX_MODULE_BYTES;
use sha2::{Digest, Sha256};

use gamechain_chain::wire::transcript::{Transcript, TRANSCRIPT_VERSION, TRANSCRIPT_VERSION_CALLS};
use report::{GameDivergence, GameReport, StepReport};

/// What to verify against.
pub struct GameCheck<'a> {
    /// The chain's genesis (the trust anchor: its hash, chain id and block signer).
    pub genesis: &'a Genesis,
    /// The module asked for.
    pub module: &'a str,
    /// The game asked for.
    pub game: &'a str,
    /// Require the game to have finished.
    pub complete: bool,
}

/// Verifies `transcript` with the module code `wasm`.
pub fn verify_game(check: &GameCheck<'_>, transcript: &Transcript, wasm: &[u8]) -> GameReport {
    let started = Instant::now();
    let mut steps = Vec::new();
    let mut sessions = Vec::new();
    let divergence = run(check, transcript, wasm, &mut steps, &mut sessions).err();
    GameReport {
        module: transcript.module.clone(),
        game: transcript.game.clone(),
        code_hash: transcript.code_hash.clone(),
        finished: divergence.is_none() && shown_finished(transcript),
        code_origin: code_origin(check.genesis, transcript, divergence.is_none()),
        final_by_quorum: check.genesis.validators.as_ref().map(|v| v.set.len()),
        complete_as_of: match (
            &divergence,
            check.genesis.keeps_game_logs(),
            &transcript.log,
        ) {
            (None, true, Some(log)) => Some(log.header.header.height),
            _ => None,
        },
        start_unproven: match &divergence {
            None => start::check_start(check.genesis, transcript)
                .ok()
                .flatten()
                .map(|s| s.unproven)
                .unwrap_or_default(),
            Some(_) => Vec::new(),
        },
        session_unproven: match &divergence {
            None => sessions,
            Some(_) => Vec::new(),
        },
        steps,
        divergence,
        elapsed_ms: started.elapsed().as_millis() as u64,
    }
}

/// Whether the last step shows the game finished (the report says so only for a transcript
/// that verified, whatever the node claims).
fn shown_finished(t: &Transcript) -> bool {
    t.steps
        .last()
        .is_some_and(|s| finished_by(s, &t.module, &t.game))
}

/// Where the code hash comes from: `genesis` when the genesis names it for this module (so it
/// is anchored), else `named by the node` (an upload or an upgrade: the node says this code ran;
/// a node that is not the block signer cannot change the receipts, but a lying block signer
/// could run other code whose receipts a re-execution of the named code also gives).
/// `genesis` (the genesis names this code for the module), `module record` (a verified
/// transcript of a chain with state proofs: the module's record proven at the log's block names
/// it, `log.rs`), else `named by the node`.
fn code_origin(genesis: &Genesis, t: &Transcript, verified: bool) -> &'static str {
    if genesis
        .modules
        .iter()
        .any(|m| m.id == t.module && m.code_hash == t.code_hash)
    {
        "genesis"
    } else if verified
        && genesis.keeps_game_logs()
        && t.log.as_ref().is_some_and(|l| l.module_record.is_some())
    {
        "module record"
    } else {
        "named by the node"
    }
}

fn run(
    check: &GameCheck<'_>,
    t: &Transcript,
    wasm: &[u8],
    steps: &mut Vec<StepReport>,
    sessions: &mut Vec<(usize, String)>,
) -> Result<(), GameDivergence> {
    let genesis = check.genesis;
    if t.version != TRANSCRIPT_VERSION && t.version != TRANSCRIPT_VERSION_CALLS {
        return Err(GameDivergence::whole(
            "version",
            format!("{TRANSCRIPT_VERSION} or {TRANSCRIPT_VERSION_CALLS}"),
            t.version.to_string(),
        ));
    }
    let genesis_hash = hex::encode(genesis.hash());
    if t.genesis_hash != genesis_hash {
        return Err(GameDivergence::whole(
            "genesis_hash",
            genesis_hash,
            t.genesis_hash.clone(),
        ));
    }
    if t.chain_id != genesis.chain_id {
        return Err(GameDivergence::whole(
            "chain_id",
            genesis.chain_id.clone(),
            t.chain_id.clone(),
        ));
    }
    if t.sequencer != genesis.sequencer {
        return Err(GameDivergence::whole(
            "sequencer",
            genesis.sequencer.clone(),
            t.sequencer.clone(),
        ));
    }
    if t.module != check.module {
        return Err(GameDivergence::whole(
            "module",
            check.module,
            t.module.clone(),
        ));
    }
    if t.game != check.game {
        return Err(GameDivergence::whole("game", check.game, t.game.clone()));
    }
    if wasm.len() > MAX_MODULE_BYTES {
        return Err(GameDivergence::whole(
            "code_size",
            format!("at most {MAX_MODULE_BYTES} bytes"),
            format!("{} bytes", wasm.len()),
        ));
    }
    let code_hash = hex::encode(Sha256::digest(wasm));
    if code_hash != t.code_hash {
        return Err(GameDivergence::whole(
            "code_hash",
            t.code_hash.clone(),
            code_hash,
        ));
    }
    if t.steps.is_empty() {
        return Err(GameDivergence::whole(
            "steps",
            "at least one transaction",
            "none",
        ));
    }
    let finality = finality::checker(genesis, &genesis_hash)?;
    let start = start::check_start(genesis, t)?;
    let balances = start.as_ref().map_or(&t.start_balances, |s| &s.balances);
    let mut replay = replay::GameReplay::new(genesis, t, balances, wasm)?;
    let resets = start.as_ref().map_or(&[][..], |s| &s.resets[..]);
    // GOLD moved (fees included) by the session steps shown so far, by session key and block.
    let mut same_block: std::collections::BTreeMap<(String, u64), u128> = Default::default();
    let mut previous = None;
    for (i, step) in t.steps.iter().enumerate() {
        // A player's proven balance before its witnessed step (`start.rs`).
        for (_, account, amount) in resets.iter().filter(|r| r.0 == i) {
            replay.set_balance(account, *amount);
        }
        if step.call.is_some() {
            let call = checks::check_call_step(genesis, &t.module, i, step, previous)?;
            belongs_to_game(i, step, &t.module, &t.game)?;
            if let Some(c) = &finality {
                finality::check_final(c, i, step)?;
            }
            let receipt = replay.run_call(i, step, &call)?;
            previous = Some(step);
            steps.push(StepReport {
                index: i,
                txid: String::new(),
                call: Some(call.id),
                height: step.height,
                sender: String::new(),
                kind: Some("scheduled".into()),
                events: receipt.events.iter().map(|e| e.kind.clone()).collect(),
                fuel_used: receipt.fuel_used,
            });
            continue;
        }
        let checked = checks::check_step(genesis, &t.module, i, step, previous)?;
        let sender = checked.body.account().to_string();
        let session_key = match &checked.body.action {
            gamechain_runtime::chain::Action::SessionGame { .. } => {
                Some(checked.body.from.as_str())
            }
            _ => None,
        };
        belongs_to_game(i, step, &t.module, &t.game)?;
        if let Some(c) = &finality {
            finality::check_final(c, i, step)?;
        }
        let (receipt, debited) = replay.run(i, step, &sender, session_key, &checked.op)?;
        // Its session's authorization (`session.rs`), on a chain with state proofs.
        if let (true, Some(key)) = (genesis.keeps_game_logs(), session_key) {
            let spent = same_block
                .entry((key.to_string(), step.height))
                .or_insert(0);
            let body = &checked.body;
            if let Some(why) =
                session::check_session_step(&t.module, i, step, body, debited, *spent)?
            {
                sessions.push((i, why));
            }
            *spent = spent
                .saturating_add(debited)
                .saturating_add(step.receipt.fee.0);
        }
        previous = Some(step);
        let kind = serde_json::from_slice::<serde_json::Value>(&checked.op)
            .ok()
            .and_then(|v| v.get("kind").and_then(|k| k.as_str()).map(str::to_string));
        steps.push(StepReport {
            index: i,
            txid: step.txid.clone(),
            call: None,
            height: step.height,
            sender,
            kind,
            events: receipt.events.iter().map(|e| e.kind.clone()).collect(),
            fuel_used: receipt.fuel_used,
        });
    }
    // Finished is what the verified steps show, not what the node says: the last step carries
    // the module's `finished` event for this game.
    let shown = finished_by(t.steps.last().expect("not empty"), &t.module, &t.game);
    if t.finished && !shown {
        return Err(GameDivergence::whole(
            "finished",
            format!(
                "the last step emitting {}.finished for game {}, as the transcript says",
                t.module, t.game
            ),
            "a last step without it",
        ));
    }
    if check.complete && !shown {
        return Err(GameDivergence::whole(
            "finished",
            "a finished game (--complete)",
            "a game still in play",
        ));
    }
    log::check_log(genesis, finality.as_ref(), t)
}

/// Whether event data names game `game`: its `id` or `game` field (the events feed's rule,
/// `server/game_feed/events.rs`, by which the node picks a transcript's steps).
fn names_game(data: &serde_json::Value, game: &str) -> bool {
    ["id", "game"]
        .iter()
        .any(|f| data.get(*f).and_then(|v| v.as_str()) == Some(game))
}

/// A step is part of game `game` of `module` only when it succeeded and its receipt carries an
/// event naming the game. Without it a node could show another game's transactions, or a
/// failed transaction of somebody else's, as this game's. (A transcript that starts after the
/// game's creation re-executes from an empty state, so its first op finds no game.)
fn belongs_to_game(
    i: usize,
    step: &gamechain_chain::wire::transcript::Step,
    module: &str,
    game: &str,
) -> Result<(), GameDivergence> {
    let name = match &step.call {
        Some(c) => format!("call {}", c.id),
        None => step.txid.clone(),
    };
    let at = |expected: String, got: String| GameDivergence::at(i, &name, "game", expected, got);
    if !step.receipt.ok {
        return Err(at(
            format!("a successful op of game {game}"),
            format!(
                "a failed transaction ({})",
                step.receipt.error.as_deref().unwrap_or("")
            ),
        ));
    }
    if !step
        .receipt
        .events
        .iter()
        .any(|e| names_game(&e.data, game))
    {
        return Err(at(
            format!("an event of {module} naming game {game} (its id or game field)"),
            "a receipt whose events name another game or none".into(),
        ));
    }
    Ok(())
}

/// Whether `step` finished game `game`: an event `<module>.finished` naming it.
fn finished_by(step: &gamechain_chain::wire::transcript::Step, module: &str, game: &str) -> bool {
    let kind = format!("{module}.finished");
    step.receipt
        .events
        .iter()
        .any(|e| e.kind == kind && names_game(&e.data, game))
}
