//! The CLI's refusal to escrow a stake in a module whose owner can change its code at once
//! (policy `owner`): that owner could upgrade the module to code that pays every escrowed stake
//! to itself. `gamechain game <module> <op>` (an op that escrows: `create`/`offer` with a
//! `stake`, `join` of a staked table or offer), `gamechain channel offer` and `channel join`
//! check the escrow module's policy first and send nothing unless the user passes
//! `--allow-mutable`. Immutable and timelocked modules pass (a timelocked module's pending
//! upgrades are listed at `GET /v1/modules?pending=1`, in time to leave).

use gamechain_client::client::{Client, ClientError};
use gamechain_runtime::chain::UpgradePolicy;
use serde_json::Value;

use crate::cli::error::CliError;

/// `Ok` when `stake` base units may be escrowed in `module`: `stake` is `Some(0)`,
/// `allow_mutable` is set, the module's policy is not `owner`, or the node has no such module
/// (the transaction then fails on its own). `None`: a stake that could not be read, taken as
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
    if info.policy != UpgradePolicy::Owner {
        return Ok(());
    }
    let stake = stake.map_or("a stake that could not be read".to_string(), |s| {
        format!("a stake of {s}")
    });
    Err(CliError::Usage(format!(
        "refusing to escrow {stake} in module {module}: its policy is `owner`, so its \
         owner {} can replace its code at once, and with it who gets the stakes; nothing was \
         sent (play where the escrow module is immutable or timelocked, or pass --allow-mutable \
         if you trust {})",
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
