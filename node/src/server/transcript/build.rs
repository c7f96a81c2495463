//! Assembling a game's transcript from storage ([`build`]): where the game starts, which of
//! the following blocks' transactions are the game's (the events feed's rule:
//! `game_feed/events.rs`), their proofs, the code hash and the starting balances (declared, or
//! proven: `start.rs`).

use std::collections::BTreeMap;

use gamechain_runtime::chain::merkle::inclusion_proof;
use gamechain_sdk::Amount;
use serde_json::Value;

use super::start::proven_starts;
use crate::proof::step_finality::step_finality;
use crate::server::game_feed::events::{BlockEvents, EventFilter};
use gamechain_chain::game_log::{game_log_key, GameLog};
use gamechain_chain::wire::transcript::{
    CallRef, LoggedSteps, ProvenRecord, Step, StepFinality, Transcript, TRANSCRIPT_VERSION,
    TRANSCRIPT_VERSION_CALLS,
};
use gamechain_chain::wire::{Block, StateEntry};
use gamechain_ledger::chain::Chain;
use gamechain_ledger::error::ChainError;
use gamechain_runtime::layout::module_record_key;

/// Most transactions in one transcript.
pub const MAX_TRANSCRIPT_TXS: usize = 10_000;
/// Most bytes of steps (their JSON) in one transcript.
pub const MAX_TRANSCRIPT_BYTES: usize = 16 << 20;
/// Most blocks read for one transcript, from its first.
pub const MAX_SCAN_BLOCKS: u64 = 20_000;
/// Longest a transcript is read for: blocks after it are not read (the answer is the
/// transcript so far, `finished: false`, `scanned_to` the last block read).
pub const MAX_BUILD_TIME: std::time::Duration = std::time::Duration::from_secs(20);

/// Why a transcript is not served (besides the chain's own errors).
#[derive(Debug)]
pub enum TranscriptError {
    /// The chain's error (`not_found`, `pruned`, …).
    Chain(ChainError),
    /// More than [`MAX_TRANSCRIPT_TXS`] transactions or [`MAX_TRANSCRIPT_BYTES`] bytes.
    TooLarge(String),
    /// The module's code changed during or after the game.
    CodeChanged(String),
}

impl From<ChainError> for TranscriptError {
    fn from(e: ChainError) -> Self {
        TranscriptError::Chain(e)
    }
}

/// Where the game's first transaction is: the transaction whose txid begins with `game` when
/// `game` is 2 to 64 lowercase hex characters of even length (the table games' ids) and there
/// is one (then `from` is not used: nobody can make a hex game's transcript read blocks before
/// its start), else `from`. `None`: neither.
fn start_height(chain: &Chain, game: &str, from: Option<u64>) -> Result<Option<u64>, ChainError> {
    let hex_id = game.len() >= 2
        && game.len() <= 64
        && game.len().is_multiple_of(2)
        && game.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if !hex_id {
        return Ok(from);
    }
    let prefix = hex::decode(game).expect("checked hex");
    Ok(chain
        .read_db(|db| db.tx_with_prefix(&prefix))?
        .map(|(height, _)| height)
        .or(from))
}

/// The transcript of game `game` of `module`: see `mod.rs` for the rules.
pub fn build(
    chain: &Chain,
    filter: &EventFilter,
    from: Option<u64>,
) -> Result<Transcript, TranscriptError> {
    let module = filter.module.clone();
    let game = filter
        .game
        .clone()
        .expect("a transcript filter names its game");
    let record = chain.module_record(&module)?;
    let not_found = || {
        TranscriptError::Chain(ChainError::NotFound(format!(
            "no game {game} of module {module}"
        )))
    };
    let Some(start) = start_height(chain, &game, from)? else {
        return Err(not_found());
    };
    // On a chain with game logs, the log and its proof are read first, under one hold of the
    // head: the steps are then read up to that head, past the finishing step up to the log's
    // last one (a later step of the same game would otherwise make the log disagree).
    // The module's record is read with it, from the same block: it anchors the code.
    let logged = if chain.genesis().keeps_game_logs() {
        let (log_key, record_key) = (game_log_key(&module, &game), module_record_key(&module));
        let mut entries = chain.state_entries(&[&log_key, &record_key], true)?;
        let record = entries.pop().expect("two entries");
        Some((entries.pop().expect("two entries"), record))
    } else {
        None
    };
    let head = match &logged {
        Some((entry, _)) => entry.header.height,
        None => chain.head().header.header.height,
    };
    let log_end = logged
        .as_ref()
        .and_then(|(e, _)| e.value_bytes().ok().flatten())
        .and_then(|v| GameLog::from_bytes(&v))
        .map(|l| l.last_height);
    let last = head.min(start.saturating_add(MAX_SCAN_BLOCKS - 1));
    let mut steps: Vec<Step> = Vec::new();
    let mut bytes = 0usize;
    let mut finished = false;
    let mut has_calls = false;
    let mut scanned_to = start;
    let finished_kind = format!("{module}.finished");
    let started = std::time::Instant::now();
    for height in start..=last {
        if started.elapsed() > MAX_BUILD_TIME {
            break;
        }
        scanned_to = height;
        let block = chain.block(Some(height))?;
        let events = BlockEvents::of(&block);
        let mut indexes: Vec<u32> = Vec::new();
        let mut calls: Vec<u64> = Vec::new();
        for e in events.events.iter().filter(|e| filter.matches(e)) {
            match (e.event.tx_index, e.event.call) {
                (Some(i), _) if indexes.last() != Some(&i) => indexes.push(i),
                (None, Some(c)) if calls.last() != Some(&c) => calls.push(c),
                _ => {}
            }
            finished |= e.event.kind == finished_kind;
        }
        if indexes.is_empty() && calls.is_empty() {
            continue;
        }
        let finality = block_finality(chain, &block)?;
        let txids: Vec<[u8; 32]> = block.txs.iter().map(|t| t.tx.txid_bytes()).collect();
        let scheduled = block.scheduled.len();
        let receipts: Vec<[u8; 32]> = block
            .scheduled
            .iter()
            .map(|s| s.hash())
            .chain(block.txs.iter().map(|t| t.receipt.hash()))
            .chain(block.end_block.iter().map(|(_, r)| r.hash()))
            .collect();
        let hexes = |p: Vec<[u8; 32]>| p.iter().map(hex::encode).collect::<Vec<_>>();
        // The block's calls first: they ran before its transactions.
        for id in calls {
            let Some(at) = block
                .scheduled
                .iter()
                .position(|s| s.id == id && s.module == module)
            else {
                continue;
            };
            let s = &block.scheduled[at];
            let step = Step {
                height,
                index: at as u32,
                call: Some(CallRef {
                    module: s.module.clone(),
                    id: s.id,
                }),
                txid: String::new(),
                body: String::new(),
                signature: String::new(),
                receipt: s.receipt.clone(),
                header: block.header.clone(),
                tx_count: 0,
                receipt_count: receipts.len() as u64,
                receipt_index: None,
                tx_proof: Vec::new(),
                receipt_proof: hexes(inclusion_proof(&receipts, at).expect("at < len")),
                finality: finality.clone(),
                session: None,
            };
            push_step(&mut steps, &mut bytes, step, &game)?;
            has_calls = true;
        }
        for i in indexes {
            let t = &block.txs[i as usize];
            let leaf = scheduled + i as usize;
            let step = Step {
                height,
                index: i,
                call: None,
                txid: t.tx.txid(),
                body: t.tx.body().to_string(),
                signature: t.tx.signature().to_string(),
                receipt: t.receipt.clone(),
                header: block.header.clone(),
                tx_count: txids.len() as u64,
                receipt_count: receipts.len() as u64,
                receipt_index: (scheduled > 0).then_some(leaf as u64),
                tx_proof: hexes(inclusion_proof(&txids, i as usize).expect("i < len")),
                receipt_proof: hexes(inclusion_proof(&receipts, leaf).expect("leaf < len")),
                finality: finality.clone(),
                session: None,
            };
            push_step(&mut steps, &mut bytes, step, &game)?;
        }
        if finished && log_end.is_none_or(|end| height >= end) {
            break;
        }
    }
    let Some(first) = steps.first() else {
        return Err(not_found());
    };
    // The code that ran: the module's code now, unless an upgrade took effect at or after the
    // game's first block (then the node cannot name one code for every step).
    if let Some(upgraded) = record.upgraded_height {
        if upgraded >= first.height {
            return Err(TranscriptError::CodeChanged(format!(
                "module {module} was upgraded at height {upgraded}, during or after game {game} (from height {}): a transcript names one code hash for the whole game",
                first.height
            )));
        }
    }
    let log = match logged {
        Some((entry, record)) => Some(logged_steps(chain, entry, record)?),
        None => None,
    };
    let genesis = chain.genesis();
    let declared = start_balances(&steps);
    let (start, start_balances) = if log.is_some() {
        super::session::prove_sessions(chain, &mut steps)?;
        proven_starts(chain, &module, &game, &steps, &declared)?
    } else {
        (Vec::new(), declared)
    };
    Ok(Transcript {
        version: if has_calls {
            TRANSCRIPT_VERSION_CALLS
        } else {
            TRANSCRIPT_VERSION
        },
        module,
        game,
        chain_id: genesis.chain_id.clone(),
        genesis_hash: hex::encode(genesis.hash()),
        sequencer: genesis.sequencer.clone(),
        code_hash: record.code_hash,
        beacon_key: genesis.beacon.as_ref().map(|b| b.public_key.to_hex()),
        finished,
        scanned_to,
        start_balances,
        steps,
        log,
        start,
    })
}

/// The transcript's `log` of a state entry read with its proof: the log as hex, the block,
/// on a chain with validators its finality, and the module's record (`record`, read from the
/// same block) with its proof.
fn logged_steps(
    chain: &Chain,
    entry: StateEntry,
    record: StateEntry,
) -> Result<LoggedSteps, ChainError> {
    let missing = || ChainError::Internal("a state entry asked with its proof has none".into());
    let record_text = record
        .value_bytes()
        .map_err(ChainError::Internal)?
        .map(|v| String::from_utf8_lossy(&v).into_owned())
        .unwrap_or_default();
    let module_record = Some(ProvenRecord {
        value: record_text,
        proof: record.proof.ok_or_else(missing)?,
    });
    let value = entry
        .value_bytes()
        .map_err(ChainError::Internal)?
        .map(hex::encode)
        .unwrap_or_default();
    let header = entry.signed_header();
    let finality = match chain.genesis().validators {
        None => None,
        Some(_) => {
            let block = chain.block(Some(header.header.height))?;
            block_finality(chain, &block)?
        }
    };
    Ok(LoggedSteps {
        key: entry.key,
        value,
        proof: entry.proof.ok_or_else(|| {
            ChainError::Internal("a state entry asked with its proof has none".into())
        })?,
        header,
        finality,
        module_record,
    })
}

/// On a chain with validators, what proves `block` final (`proof/step_finality.rs`; `None`
/// when the node holds no certificate close enough); `None` on a single sequencer's chain.
pub(crate) fn block_finality(
    chain: &Chain,
    block: &Block,
) -> Result<Option<StepFinality>, ChainError> {
    if chain.genesis().validators.is_none() {
        return Ok(None);
    }
    chain.read_db(|db| step_finality(db, block))
}

/// Adds `step`, refusing a transcript over [`MAX_TRANSCRIPT_TXS`] steps or
/// [`MAX_TRANSCRIPT_BYTES`] bytes of steps.
fn push_step(
    steps: &mut Vec<Step>,
    bytes: &mut usize,
    step: Step,
    game: &str,
) -> Result<(), TranscriptError> {
    *bytes += serde_json::to_string(&step).map(|s| s.len()).unwrap_or(0);
    steps.push(step);
    if steps.len() > MAX_TRANSCRIPT_TXS {
        return Err(TranscriptError::TooLarge(format!(
            "game {game} has more than {MAX_TRANSCRIPT_TXS} transactions; a transcript holds at most {MAX_TRANSCRIPT_TXS}"
        )));
    }
    if *bytes > MAX_TRANSCRIPT_BYTES {
        return Err(TranscriptError::TooLarge(format!(
            "the transcript of game {game} is over {MAX_TRANSCRIPT_BYTES} bytes"
        )));
    }
    Ok(())
}

/// The declared starting balances of a chain without state proofs: for each account a step acts
/// for, the sum of the `stake` and `deposit` amounts the game's events name (the table games
/// escrow one stake from each player, the auction one deposit from each bidder). Not proven
/// (see `docs/verify-a-match.md`; a chain with state proofs proves them, `start.rs`).
fn start_balances(steps: &[Step]) -> BTreeMap<String, Amount> {
    let stake_total: u128 = steps
        .iter()
        .flat_map(|s| s.receipt.events.iter())
        .flat_map(|e| ["stake", "deposit"].map(|f| e.data.get(f).and_then(Value::as_str)))
        .flatten()
        .filter_map(|s| s.parse::<u128>().ok())
        .fold(0u128, |a, b| a.saturating_add(b));
    let mut out = BTreeMap::new();
    for s in steps.iter().filter(|s| s.call.is_none()) {
        if let Ok(body) = gamechain_runtime::chain::TxBody::parse(&s.body) {
            out.insert(body.account().to_string(), Amount(stake_total));
        }
    }
    out
}
