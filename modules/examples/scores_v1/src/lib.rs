//! # scores, version 1: the OLD code of the migration example
//!
//! Every account keeps a score. Module id `scores`. Version 2 (`../scores_v2`) renames the stored
//! field and migrates existing records; this crate stays as it was deployed, so the migration
//! test can run it natively and build its `.wasm`.
//!
//! - op **`add`** `{amount}` (a JSON number from 1 to 100; else ``invalid: `amount` must be a
//!   number from 1 to 100``): the sender's total grows by `amount`; emits `scores.added {by,
//!   total}`. An unknown kind is ``invalid: unknown scores op `<kind>` ``.
//! - key `player/<address>`: `{"total": <number>}`.
//! - view `?player=<address>`: `{"player": <address>, "total": <number>}` (0 when absent).

use gamechain_sdk::prelude::*;

/// The module id.
pub const ID: &str = "scores";

/// `player/<address>`: one account's record.
pub fn player_key(address: &str) -> String {
    format!("player/{address}")
}

/// Version 1's record of an account.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// The sum of the account's adds.
    pub total: u64,
}

/// The module, version 1.
#[derive(Debug, Clone, Copy, Default)]
pub struct Scores;

impl GameModule for Scores {
    fn id(&self) -> &'static str {
        ID
    }

    fn apply(&self, ctx: &mut dyn Ctx, sender: &str, op: &Value) -> Result<(), ActionError> {
        match op_str(op, "kind")? {
            "add" => {
                let amount = op
                    .get("amount")
                    .and_then(Value::as_u64)
                    .filter(|n| (1..=100).contains(n))
                    .ok_or_else(|| {
                        ActionError::invalid("`amount` must be a number from 1 to 100")
                    })?;
                let key = player_key(sender);
                let total = ctx.get_json::<Record>(&key)?.map_or(0, |r| r.total) + amount;
                ctx.put_json(&key, &Record { total });
                ctx.emit("scores.added", json!({ "by": sender, "total": total }));
                Ok(())
            }
            other => Err(ActionError::invalid(format!("unknown {ID} op `{other}`"))),
        }
    }

    fn view(&self, state: &dyn StateRead, query: &Query) -> Result<Value, ActionError> {
        let player = query
            .get("player")
            .ok_or_else(|| ActionError::invalid("give ?player=<address>"))?;
        let record = state.module_json::<Record>(ID, &player_key(player))?;
        Ok(json!({ "player": player, "total": record.map_or(0, |r| r.total) }))
    }
}

gamechain_sdk::export_module!(Scores);
