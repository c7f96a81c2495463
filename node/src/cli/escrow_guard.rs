//! The CLI's refusal to escrow a stake in a module whose owner can change its code at once
//! (policy `owner`): that owner could upgrade the module to code that pays every escrowed stake
//! to itself. `gamechain game <module> <op>` (an op that escrows: `create`/`offer` with a
//! `stake`, `join` of a staked table or offer), `gamechain channel offer` and `channel join`
//! check the escrow module's policy first and send nothing unless the user passes
//! `--allow-mutable`. Immutable modules pass; a timelocked one passes only when its delay is at
//! least [`MIN_SAFE_TIMELOCK_MS`] (longer than a game's windows, so a player has time to leave
//! after an announcement) and no upgrade is pending (pending upgrades are listed at
//! `GET /v1/modules?pending=1`): a timelock of one millisecond is an owner policy in disguise.

use gamechain_client::client::{Client, ClientError};
use gamechain_runtime::chain::UpgradePolicy;
use serde_json::Value;

use crate::cli::error::CliError;

/// Shortest timelock the guard accepts without `--allow-mutable`: 7 days of block time (more
/// than twice the channel's longest window, 3 days).
pub const MIN_SAFE_TIMELOCK_MS: u64 = 7 * 24 * 3_600_000;

/// Why a module's code could change under a stake escrowed now, if it could.
fn changeable(info: &gamechain_runtime::chain::wire::ModuleInfo) -> Option<String> {
    if let Some(p) = &info.pending_upgrade {
        return Some(format!(
            "an upgrade to code {} is pending (it may take effect at block time {})",
            p.code_hash, p.activates_at_ms
        ));
    }
    match info.policy {
        UpgradePolicy::Immutable => None,
        UpgradePolicy::Timelocked { delay_ms } if delay_ms >= MIN_SAFE_TIMELOCK_MS => None,
        UpgradePolicy::Timelocked { delay_ms } => Some(format!(
            "its policy is `timelocked` with a delay of {delay_ms} ms, less than the {MIN_SAFE_TIMELOCK_MS} ms a player needs to see an upgrade coming and leave"
        )),
        UpgradePolicy::Owner => Some("its policy is `owner`".to_string()),
    }
}

/// `Ok` when `stake` base units may be escrowed in `module`: `stake` is `Some(0)`,
/// `allow_mutable` is set, the module is immutable or timelocked for at least
/// [`MIN_SAFE_TIMELOCK_MS`] with no upgrade pending, or the node has no such module (the
/// transaction then fails on its own). `None`: a stake that could not be read, taken as
/// one. Errors: [`CliError::Usage`] naming the module, its policy and its owner; the client's
/// errors reading `GET /v1/modules/<id>`.
pub async fn check_escrow(
    client: &Client,
    module: &str,
    stake: Option<u128>,
    allow_mutable: bool,
) -> Result<(), CliError> {
    if stake == Some(0) || allow_mutable {
        return Ok(());
    }
    let info = match client.module(module).await {
        Ok(info) => info,
        Err(ClientError::Api { status: 404, .. }) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    let Some(why) = changeable(&info) else {
        return Ok(());
    };
    let stake = stake.map_or("a stake that could not be read".to_string(), |s| {
        format!("a stake of {s}")
    });
    Err(CliError::Usage(format!(
        "refusing to escrow {stake} in module {module}: {why}, so its owner {} can replace \
         its code, and with it who gets the stakes, before the game is over; nothing was sent \
         (play where the escrow module is immutable, or pass --allow-mutable if you trust {})",
        info.owner, info.owner
    )))
}

/// The stake a game op would escrow in `module`: its `stake` (a decimal string of base units)
/// when it has one; for a `join` of a table (`id`) or an offer (`offer`), the stake the
/// module's view shows for it. `None` when it cannot be told (a `stake` that is not a decimal,
/// a view that fails or does not say): the caller takes that as a stake. `Some(0)` for an op
/// that escrows nothing (no `stake`, not a `join`). Errors: the client's transport errors.
pub async fn op_stake(client: &Client, module: &str, op: &Value) -> Result<Option<u128>, CliError> {
    let amount = |v: &Value| {
        v.get("stake")
            .and_then(Value::as_str)
            .and_then(|s| s.parse::<u128>().ok())
    };
    if op.get("stake").is_some() {
        return Ok(amount(op));
    }
    if op.get("kind").and_then(Value::as_str) != Some("join") {
        return Ok(Some(0));
    }
    for key in ["id", "offer"] {
        if let Some(id) = op.get(key).and_then(Value::as_str) {
            return match client.view(module, &[(key, id)]).await {
                Ok(view) => Ok(amount(&view)),
                Err(ClientError::Api { .. }) => Ok(None),
                Err(e) => Err(e.into()),
            };
        }
    }
    Ok(None)
}
