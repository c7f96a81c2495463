//! On a chain with state proofs, that the players' starting balances are the chain's: each
//! account a step acts for has its GOLD balance in `start` ([`ProvenStart`]), proven against
//! the state root of the block before one of its steps (the *witnessed* step: the node gives its
//! first step, or its first that moved its GOLD), whose header that step's `prev_hash` binds (so
//! it is as signed and final as the step). The re-execution starts each player from that amount
//! and sets the player's balance to it again just before the witnessed step, so GOLD the player
//! received from outside the game between its first step and that one is there as on the chain.
//! `start_balances` must name those amounts (entries of accounts that act in no step are not
//! used: they cannot change what the steps do). A player whose entry says the node cannot prove
//! it (`unproven`: its balance moved earlier in the witnessed step's block) starts from the
//! declared amount, and the report names it ([`StartCheck::unproven`]).

use std::collections::BTreeMap;

use gamechain_chain::wire::transcript::{ProvenStart, Transcript};
use gamechain_runtime::chain::{Genesis, TxBody};
use gamechain_sdk::keys::{balance_key, GOLD};
use gamechain_sdk::ledger::stored_balance;
use gamechain_sdk::Amount;

use super::report::GameDivergence;

/// Longest reason a node may give for a balance it cannot prove, characters (printable only).
pub const MAX_UNPROVEN_REASON_CHARS: usize = 300;

/// What [`check_start`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartCheck {
    /// GOLD base units by player: what the re-execution starts from.
    pub balances: BTreeMap<String, Amount>,
    /// `(step index, player, amount)`: the player's proven balance, set again before that
    /// step (its witnessed step, when it is not its first).
    pub resets: Vec<(usize, String, Amount)>,
    /// Players whose starting balance is declared, not proven, with the node's reason.
    pub unproven: Vec<(String, String)>,
}

/// Checks `t.start` and `t.start_balances` on a chain that keeps game logs (state proofs);
/// `None` on one that does not (then the re-execution starts from `start_balances`, all
/// declared). Divergences: `start` (a player without exactly one entry, or an unprintable or
/// overlong reason), `start.header` (not the block before one of the player's steps),
/// `start.proof`, `start_balances` (a player's amount missing or not the proven one).
pub fn check_start(
    genesis: &Genesis,
    t: &Transcript,
) -> Result<Option<StartCheck>, GameDivergence> {
    if !genesis.keeps_game_logs() {
        return Ok(None);
    }
    // Each account a step acts for, with its steps' indexes.
    let mut players: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, s) in t.steps.iter().enumerate() {
        if s.call.is_some() {
            continue;
        }
        // A body that does not parse fails the step's own checks later.
        let Ok(body) = TxBody::parse(&s.body) else {
            continue;
        };
        match players.iter_mut().find(|(a, _)| a == body.account()) {
            Some((_, steps)) => steps.push(i),
            None => players.push((body.account().to_string(), vec![i])),
        }
    }
    let mut check = StartCheck {
        balances: BTreeMap::new(),
        resets: Vec::new(),
        unproven: Vec::new(),
    };
    for (account, steps) in &players {
        let first = steps[0];
        let mut entries = t.start.iter().filter(|s| s.account == *account);
        let (Some(entry), None) = (entries.next(), entries.next()) else {
            return Err(GameDivergence::whole(
                "start",
                format!("one starting balance of {account} (its first step: {first})"),
                format!(
                    "{}",
                    t.start.iter().filter(|s| s.account == *account).count()
                ),
            ));
        };
        if let Some(why) = &entry.unproven {
            if !printable(why) {
                return Err(GameDivergence::whole(
                    "start",
                    format!(
                        "a reason of 1 to {MAX_UNPROVEN_REASON_CHARS} printable characters why {account}'s balance is not proven"
                    ),
                    format!("{:?}", why.chars().take(80).collect::<String>()),
                ));
            }
            let Some(declared) = t.start_balances.get(account) else {
                return Err(GameDivergence::whole(
                    "start_balances",
                    format!("a declared starting balance of {account} (unproven: {why})"),
                    "none",
                ));
            };
            check.balances.insert(account.clone(), *declared);
            check.unproven.push((account.clone(), why.clone()));
            continue;
        }
        let (at, amount) = check_entry(t, entry, steps)?;
        check.balances.insert(account.clone(), Amount(amount));
        if at != first {
            check.resets.push((at, account.clone(), Amount(amount)));
        }
    }
    let declared: BTreeMap<String, Amount> = t
        .start_balances
        .iter()
        .filter(|(a, _)| check.balances.contains_key(*a))
        .map(|(a, v)| (a.clone(), *v))
        .collect();
    if declared != check.balances {
        let show = |m: &BTreeMap<String, Amount>| {
            m.iter()
                .map(|(a, v)| format!("{a}: {}", v.0))
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(GameDivergence::whole(
            "start_balances",
            format!("the proven balances ({})", show(&check.balances)),
            show(&declared),
        ));
    }
    check.resets.sort_by_key(|r| r.0);
    Ok(Some(check))
}

/// Whether `c` reorders text (the Unicode bidirectional controls), which a terminal or page
/// would apply to what follows it.
/// Whether a node's reason is 1 to [`MAX_UNPROVEN_REASON_CHARS`] characters without control or
/// bidirectional ones (a terminal or page would act on them).
pub(super) fn printable(why: &str) -> bool {
    !why.is_empty()
        && why.chars().count() <= MAX_UNPROVEN_REASON_CHARS
        && !why.chars().any(|c| c.is_control() || is_bidi(c))
}

/// Bidirectional controls, and the invisible or line-breaking characters a terminal or page
/// would lay out as something else (a zero-width space, a byte-order mark, line and paragraph
/// separators).
fn is_bidi(c: char) -> bool {
    matches!(
        c,
        '\u{061c}'
            | '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
            | '\u{feff}'
    )
}

/// One player's entry: its header must be that of the block before one of the player's
/// `steps` (the first such is the witnessed step), its proof checked against its root.
/// Returns the witnessed step's index and the proven amount (base units; absent is 0, as the
/// bank reads it).
fn check_entry(
    t: &Transcript,
    entry: &ProvenStart,
    steps: &[usize],
) -> Result<(usize, u128), GameDivergence> {
    let account = &entry.account;
    let (Some(header), Some(proof)) = (&entry.header, &entry.proof) else {
        return Err(GameDivergence::whole(
            "start.proof",
            format!(
                "{account}'s balance before one of its steps with its proof, or why there is none"
            ),
            "neither",
        ));
    };
    let hash = header.hash();
    let Some(&at) = steps.iter().find(|&&i| {
        let h = &t.steps[i].header.header;
        h.prev_hash == hash && h.height == header.height + 1
    }) else {
        return Err(GameDivergence::whole(
            "start.header",
            format!("the header of the block before one of {account}'s steps"),
            format!(
                "a header of block {} that is the parent of none of them",
                header.height
            ),
        ));
    };
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
                    "{key} holding {} in block {}",
                    entry.value.as_deref().unwrap_or("nothing"),
                    header.height
                ),
                e.to_string(),
            )
        })?;
    Ok((
        at,
        stored_balance(entry.value.as_deref().map(str::as_bytes)),
    ))
}
