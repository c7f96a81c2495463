//! That a transcript shows all of its game's steps, on a chain with state proofs: its `log`
//! ([`LoggedSteps`], the game's log the runtime keeps in state, `gamechain_chain::game_log`)
//! must be proven against a block signed by the chain's signer (and, with validators, final)
//! at or after the last step, and the steps' leaves must hash into exactly that log. A node that
//! cuts the game's end or leaves a step out cannot produce such a log: the chain's own differs.
//! The module's record, proven at the same block, anchors the code the steps ran: it must name
//! the transcript's code hash, in place since before the game's first step.

use gamechain_chain::game_log::{game_log_key, GameLog};
use gamechain_chain::wire::transcript::{LoggedSteps, Step, Transcript};
use gamechain_chain::ScheduledReceipt;
use gamechain_runtime::chain::Genesis;
use gamechain_runtime::layout::{module_record_key, ModuleRecord};

use super::report::GameDivergence;
use crate::proof::finality::FinalityChecker;
use crate::proof::step_finality::check_step_finality;

/// The leaf a step adds to its game's log: a transaction's txid, a call's receipt hash.
fn leaf(step: &Step) -> Option<[u8; 32]> {
    match &step.call {
        Some(c) => Some(
            ScheduledReceipt {
                module: c.module.clone(),
                id: c.id,
                receipt: step.receipt.clone(),
            }
            .hash(),
        ),
        None => gamechain_runtime::chain::hash::parse_hex32(&step.txid),
    }
}

/// Checks `t.log` on a chain that keeps game logs (`genesis.keeps_game_logs()`); nothing on
/// one that does not. Divergences: `log` (absent, another key, a block before the last step,
/// a value that is not a log), `log.header` (not signed by the chain's signer), `log.finality`,
/// `log.proof`, then [`check_code`]'s, then `log.steps` (the chain logged other steps than the
/// transcript shows).
pub fn check_log(
    genesis: &Genesis,
    finality: Option<&FinalityChecker>,
    t: &Transcript,
) -> Result<(), GameDivergence> {
    if !genesis.keeps_game_logs() {
        return Ok(());
    }
    let key = game_log_key(&t.module, &t.game);
    let Some(log) = &t.log else {
        return Err(GameDivergence::whole(
            "log",
            format!("the game's log ({key}) proven against a block's state root"),
            "none",
        ));
    };
    check_block(genesis, finality, log, &key, t)?;
    // Lowercase hex only, as everywhere in the API (one text per value; the SDK agrees).
    let lowercase = log
        .value
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    let bytes = if lowercase {
        hex::decode(&log.value).unwrap_or_default()
    } else {
        Vec::new()
    };
    let Some(chain_log) = GameLog::from_bytes(&bytes) else {
        return Err(GameDivergence::whole(
            "log",
            "a 48-byte game log",
            format!("`{}`", log.value.chars().take(100).collect::<String>()),
        ));
    };
    log.proof
        .verify(&log.header.header.state_root, &key, Some(&bytes))
        .map_err(|e| {
            GameDivergence::whole(
                "log.proof",
                format!(
                    "{key} holding the log in block {}",
                    log.header.header.height
                ),
                e.to_string(),
            )
        })?;
    check_code(log, t)?;
    let mut shown = GameLog::EMPTY;
    for (i, step) in t.steps.iter().enumerate() {
        let Some(leaf) = leaf(step) else {
            return Err(GameDivergence::whole(
                "log.steps",
                "a txid of 64 lowercase hex",
                format!("step {i}: `{}`", step.txid),
            ));
        };
        shown = shown.extend(&leaf, step.height);
    }
    if shown != chain_log {
        let got = if chain_log.steps > shown.steps {
            format!(
                "the chain logged {} steps of the game, the last in block {}: the transcript shows {} (cut, or steps left out)",
                chain_log.steps, chain_log.last_height, shown.steps
            )
        } else {
            format!(
                "the chain logged {} steps (the last in block {}), the transcript's {} hash to another log",
                chain_log.steps, chain_log.last_height, shown.steps
            )
        };
        return Err(GameDivergence::whole(
            "log.steps",
            "the transcript's steps, every one of the game's in order",
            got,
        ));
    }
    Ok(())
}

/// The code anchored: the module's record at the log's block, proven against its state root,
/// must name the transcript's code hash, deployed at or before the first step and not upgraded
/// since. Divergences: `code.record` (absent, a proof that does not check, not a record),
/// `code_hash` (another code), `code.upgraded` (deployed or upgraded after the game began).
fn check_code(log: &LoggedSteps, t: &Transcript) -> Result<(), GameDivergence> {
    let key = module_record_key(&t.module);
    let height = log.header.header.height;
    let Some(rec) = &log.module_record else {
        return Err(GameDivergence::whole(
            "code.record",
            format!("the module's record ({key}) proven at block {height}"),
            "none",
        ));
    };
    rec.proof
        .verify(
            &log.header.header.state_root,
            &key,
            Some(rec.value.as_bytes()),
        )
        .map_err(|e| {
            GameDivergence::whole(
                "code.record",
                format!("{key} holding the record in block {height}"),
                e.to_string(),
            )
        })?;
    let record: ModuleRecord = serde_json::from_str(&rec.value)
        .map_err(|e| GameDivergence::whole("code.record", "a module record", format!("{e}")))?;
    if record.code_hash != t.code_hash {
        return Err(GameDivergence::whole(
            "code_hash",
            format!(
                "{} (the module's record at block {height})",
                record.code_hash
            ),
            t.code_hash.clone(),
        ));
    }
    let first = t.steps.first().map_or(0, |s| s.height);
    let since = record.upgraded_height.unwrap_or(record.deployed_height);
    let late = record.deployed_height > first || record.upgraded_height.is_some_and(|u| u >= first);
    if late {
        return Err(GameDivergence::whole(
            "code.upgraded",
            format!("code in place before the game's first step (block {first})"),
            format!("code deployed or upgraded at block {since}"),
        ));
    }
    Ok(())
}

/// The log's key, block signer, finality and height against the steps.
fn check_block(
    genesis: &Genesis,
    finality: Option<&FinalityChecker>,
    log: &LoggedSteps,
    key: &str,
    t: &Transcript,
) -> Result<(), GameDivergence> {
    if log.key != key {
        return Err(GameDivergence::whole("log", key, log.key.clone()));
    }
    let height = log.header.header.height;
    let last = t.steps.last().map_or(0, |s| s.height);
    if height < last {
        return Err(GameDivergence::whole(
            "log",
            format!("a block at or after the last step's ({last})"),
            format!("block {height}"),
        ));
    }
    genesis.check_block_signer(&log.header).map_err(|e| {
        GameDivergence::whole(
            "log.header",
            "a header signed by the chain's block signer",
            format!("block {height}: {e}"),
        )
    })?;
    if let Some(checker) = finality {
        let Some(record) = &log.finality else {
            return Err(GameDivergence::whole(
                "log.finality",
                format!("a finality certificate of block {height} by a quorum of the genesis validators"),
                "none",
            ));
        };
        check_step_finality(checker, &log.header, None, record).map_err(|e| {
            GameDivergence::whole(
                "log.finality",
                format!("block {height} finalized by a quorum of the genesis validators"),
                e.to_string(),
            )
        })?;
    }
    Ok(())
}
