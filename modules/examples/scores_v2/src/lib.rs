//! # scores, version 2: the NEW code of the migration example
//!
//! Version 1 (`../scores_v1`) stored `player/<address>` as `{"total": n}`. Version 2 renames
//! `total` to `points` and records when a record last changed, `{"points": n,
//! "updated_height": h}`; its [`GameModule::migrate`] rewrites every version 1 record when the
//! upgrade takes effect, so no op ever sees the old shape. Module id `scores`.
//!
//! - op **`add`** `{amount}` (a JSON number from 1 to 100; else ``invalid: `amount` must be a
//!   number from 1 to 100``): the sender's points grow by `amount`; emits `scores.added {by,
//!   points}`. An unknown kind is ``invalid: unknown scores op `<kind>` ``.
//! - key `player/<address>`: `{"points": <number>, "updated_height": <block height>}`.
//! - view `?player=<address>`: `{"player", "points", "updated_height"}` (0s when absent).
//! - migration (from version 1): each `player/…` record `{"total": n}` becomes `{"points": n,
//!   "updated_height": <the upgrade's height>}`; emits `scores.migrated {from_code_hash,
//!   records}`. A record of neither shape refuses the upgrade (`internal: …`).

use gamechain_sdk::prelude::*;

/// The module id.
pub const ID: &str = "scores";
/// Records the migration reads per scan.
const PAGE: usize = 256;

/// `player/<address>`: one account's record.
pub fn player_key(address: &str) -> String {
    format!("player/{address}")
}

/// Version 2's record of an account.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    /// The sum of the account's adds (version 1's `total`).
    pub points: u64,
    /// The height of the block that last changed it.
    pub updated_height: u64,
}

/// Version 1's record, read only by the migration.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RecordV1 {
    total: u64,
}

/// The module, version 2.
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
                let points = ctx.get_json::<Record>(&key)?.map_or(0, |r| r.points) + amount;
                let updated_height = ctx.height();
                ctx.put_json(
                    &key,
                    &Record {
                        points,
                        updated_height,
                    },
                );
                ctx.emit("scores.added", json!({ "by": sender, "points": points }));
                Ok(())
            }
            other => Err(ActionError::invalid(format!("unknown {ID} op `{other}`"))),
        }
    }

    fn view(&self, state: &dyn StateRead, query: &Query) -> Result<Value, ActionError> {
        let player = query
            .get("player")
            .ok_or_else(|| ActionError::invalid("give ?player=<address>"))?;
        let r = state.module_json::<Record>(ID, &player_key(player))?;
        let (points, updated_height) = r.map_or((0, 0), |r| (r.points, r.updated_height));
        Ok(json!({ "player": player, "points": points, "updated_height": updated_height }))
    }

    /// Rewrites every version 1 record (see the crate docs), a page of `PAGE` (256) at a
    /// time; records already in version 2's shape are left alone, so running it on version 2
    /// state changes nothing.
    fn migrate(&self, ctx: &mut dyn Ctx, from: &Migration) -> Result<(), ActionError> {
        let mut after: Option<String> = None;
        let mut records = 0u64;
        loop {
            let page = ctx.scan("player/", after.as_deref(), PAGE);
            for (key, bytes) in &page {
                if serde_json::from_slice::<Record>(bytes).is_ok() {
                    continue;
                }
                let old: RecordV1 = serde_json::from_slice(bytes).map_err(|e| {
                    ActionError::internal(format!("`{key}` is neither version's record: {e}"))
                })?;
                let new = Record {
                    points: old.total,
                    updated_height: ctx.height(),
                };
                ctx.put_json(key, &new);
                records += 1;
            }
            match page.last() {
                Some((key, _)) if page.len() == PAGE => after = Some(key.clone()),
                _ => break,
            }
        }
        ctx.emit(
            "scores.migrated",
            json!({ "from_code_hash": from.from_code_hash, "records": records }),
        );
        Ok(())
    }
}

// `migrate`: also export `gc_migrate`, so the chain runs `Scores::migrate` at the upgrade.
gamechain_sdk::export_module!(Scores, migrate);
