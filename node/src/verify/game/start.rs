//! On a chain with state proofs, that the players' starting balances are the chain's: each
//! account a step acts for has its GOLD balance in `start` ([`ProvenStart`]), proven against
//! the state root of the block before its first step, whose header that step's `prev_hash`
//! binds (so it is as signed and final as the step); `start_balances` must name those amounts,
//! and the re-execution starts from them alone (entries of accounts that act in no step are not
//! used: they cannot change what the steps do). A player whose entry says the node cannot
//! prove it (`unproven`: its balance moved earlier in the block of its first step) starts from
//! the declared amount, and the report names it ([`StartCheck::unproven`]).

use std::collections::BTreeMap;

use gamechain_chain::wire::transcript::{ProvenStart, Transcript};
use gamechain_runtime::chain::{Genesis, TxBody};
use gamechain_sdk::keys::{balance_key, GOLD};
use gamechain_sdk::ledger::stored_balance;
use gamechain_sdk::Amount;

use super::report::GameDivergence;

/// What [`check_start`] found: the balances the re-execution starts from, and the players whose
/// balance is the node's declared one (their entries say why the node cannot prove it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartCheck {
    /// GOLD base units by player.
    pub balances: BTreeMap<String, Amount>,
    /// Players whose starting balance is declared, not proven, with the node's reason.
    pub unproven: Vec<(String, String)>,
}

/// Checks `t.start` and `t.start_balances` on a chain that keeps game logs (state proofs);
/// `None` on one that does not (then the re-execution starts from `start_balances`, all
/// declared). Divergences: `start` (a player without exactly one entry), `start.header` (not the
/// block before the player's first step), `start.proof`, `start_balances` (a player's amount
/// missing or not the proven one).
pub fn check_start(
    genesis: &Genesis,
    t: &Transcript,
) -> Result<Option<StartCheck>, GameDivergence> {
    if !genesis.keeps_game_logs() {
        return Ok(None);
    }
    // Each account a step acts for, with its first step.
    let mut firsts: Vec<(String, usize)> = Vec::new();
    for (i, s) in t.steps.iter().enumerate() {
        if s.call.is_some() {
            continue;
        }
        // A body that does not parse fails the step's own checks later.
        let Ok(body) = TxBody::parse(&s.body) else {
            continue;
        };
        if !firsts.iter().any(|(a, _)| a == body.account()) {
            firsts.push((body.account().to_string(), i));
        }
    }
    let mut proven: BTreeMap<String, Amount> = BTreeMap::new();
    let mut unproven = Vec::new();
    for (account, first) in &firsts {
        let mut entries = t.start.iter().filter(|s| s.account == *account);
        let (Some(entry), None) = (entries.next(), entries.next()) else {
            return Err(GameDivergence::whole(
                "start",
                format!("one proven starting balance of {account} (its first step: {first})"),
                format!(
                    "{}",
                    t.start.iter().filter(|s| s.account == *account).count()
                ),
            ));
        };
        if let Some(why) = &entry.unproven {
            let Some(declared) = t.start_balances.get(account) else {
                return Err(GameDivergence::whole(
                    "start_balances",
                    format!("a declared starting balance of {account} (unproven: {why})"),
                    "none",
                ));
            };
            proven.insert(account.clone(), *declared);
            unproven.push((account.clone(), why.clone()));
            continue;
        }
        let amount = check_entry(t, entry, *first)?;
        proven.insert(account.clone(), Amount(amount));
    }
    let declared: BTreeMap<String, Amount> = t
        .start_balances
        .iter()
        .filter(|(a, _)| proven.contains_key(*a))
        .map(|(a, v)| (a.clone(), *v))
        .collect();
    if declared != proven {
        let show = |m: &BTreeMap<String, Amount>| {
            m.iter()
                .map(|(a, v)| format!("{a}: {}", v.0))
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(GameDivergence::whole(
            "start_balances",
            format!("the proven balances ({})", show(&proven)),
            show(&declared),
        ));
    }
    Ok(Some(StartCheck {
        balances: proven,
        unproven,
    }))
}

/// One account's entry: the block before step `first`, the proof against its root. Returns the
/// proven amount (base units; absent is 0, as the bank reads it).
fn check_entry(t: &Transcript, entry: &ProvenStart, first: usize) -> Result<u128, GameDivergence> {
    let step = &t.steps[first];
    let account = &entry.account;
    let parent = step.header.header.height.saturating_sub(1);
    let (Some(header), Some(proof)) = (&entry.header, &entry.proof) else {
        return Err(GameDivergence::whole(
            "start.proof",
            format!("{account}'s balance in block {parent} with its proof, or why there is none"),
            "neither",
        ));
    };
    if header.hash() != step.header.header.prev_hash || header.height != parent {
        return Err(GameDivergence::whole(
            "start.header",
            format!(
                "the header of block {parent}, the one before {account}'s first step (step {first})"
            ),
            format!("a header of block {} that is not its parent", header.height),
        ));
    }
    let key = balance_key(account, GOLD);
    proof
        .verify(
            &header.state_root,
            &key,
            entry.value.as_deref().map(str::as_bytes),
        )
        .map_err(|e| {
            GameDivergence::whole(
                "start.proof",
                format!(
                    "{key} holding {} in block {parent}",
                    entry.value.as_deref().unwrap_or("nothing")
                ),
                e.to_string(),
            )
        })?;
    Ok(stored_balance(entry.value.as_deref().map(str::as_bytes)))
}
