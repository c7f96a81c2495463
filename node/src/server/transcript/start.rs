//! A transcript's starting balances (`"start"`, on chains with state proofs): for each account a
//! step acts for, the `game_starts` record the node made when it committed that account's
//! witnessed step of the game (`StartWitness`: its first step, or its first that moved its GOLD;
//! its GOLD balance in the parent block's state, with the proof against the parent's root), and
//! the parent's header, which that step's `prev_hash` binds. Where there is no proof to give, the entry says why and the account's amount is the
//! declared one (`build.rs`, the sum of the stakes its game names).

use std::collections::BTreeMap;

use gamechain_chain::wire::transcript::{ProvenStart, Step};
use gamechain_ledger::chain::Chain;
use gamechain_ledger::error::ChainError;
use gamechain_sdk::ledger::stored_balance;
use gamechain_sdk::Amount;

/// The starting balance of each account a step of `steps` acts for, in the order of their
/// first steps, with the amounts (`start_balances`): proven from the node's record, or, where
/// there is none to give, `unproven` with the reason and the `declared` amount. Errors: the
/// database failed.
pub fn proven_starts(
    chain: &Chain,
    module: &str,
    game: &str,
    steps: &[Step],
    declared: &BTreeMap<String, Amount>,
) -> Result<(Vec<ProvenStart>, BTreeMap<String, Amount>), ChainError> {
    // Each account a step acts for, in the order of their first steps, with the heights of all
    // of its steps.
    let mut players: Vec<(String, Vec<u64>)> = Vec::new();
    for s in steps.iter().filter(|s| s.call.is_none()) {
        if let Ok(body) = gamechain_runtime::chain::TxBody::parse(&s.body) {
            let account = body.account();
            match players.iter_mut().find(|(a, _)| a == account) {
                Some((_, heights)) => heights.push(s.height),
                None => players.push((account.to_string(), vec![s.height])),
            }
        }
    }
    let records = chain.read_db(|db| db.game_starts(module, game))?;
    let mut starts = Vec::new();
    let mut amounts = BTreeMap::new();
    for (account, heights) in players {
        let proven = match records.iter().find(|r| r.account == account) {
            None => Err("this node holds no record of the balance before it (it did not execute that block)".to_string()),
            Some(r) if !heights.contains(&r.height) => Err(format!(
                "this node's record is of block {}, where the transcript shows no step of the account",
                r.height
            )),
            Some(r) => match &r.proven {
                None => Err(format!(
                    "the balance moved earlier in block {}, before the account's step there: the state root before the block does not show what the step found",
                    r.height
                )),
                Some(p) => Ok((p.clone(), r.height)),
            },
        };
        let parent = match proven {
            Ok((p, at)) if at > 0 => chain
                .read_db(|db| db.signed_header(at - 1))?
                .map(|h| (p, h.header))
                .ok_or_else(|| format!("block {} is not kept here", at - 1)),
            Ok(_) => Err("a step at block 0".to_string()),
            Err(e) => Err(e),
        };
        let text = |v: &Option<Vec<u8>>| match v {
            None => Ok(None),
            Some(b) => String::from_utf8(b.clone())
                .map(Some)
                .map_err(|_| "the stored balance is not text".to_string()),
        };
        match parent.and_then(|((value, proof), header)| Ok((text(&value)?, value, proof, header)))
        {
            Ok((text, value, proof, header)) => {
                // As the bank reads it: absent (or unreadable) is 0.
                amounts.insert(account.clone(), Amount(stored_balance(value.as_deref())));
                starts.push(ProvenStart {
                    account,
                    header: Some(header),
                    value: text,
                    proof: Some(proof),
                    unproven: None,
                });
            }
            Err(why) => {
                amounts.insert(
                    account.clone(),
                    declared.get(&account).copied().unwrap_or(Amount(0)),
                );
                starts.push(ProvenStart {
                    account,
                    header: None,
                    value: None,
                    proof: None,
                    unproven: Some(why),
                });
            }
        }
    }
    Ok((starts, amounts))
}
