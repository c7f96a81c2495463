//! The upgrade family of actions, under each module's upgrade policy (`chain::policy`):
//! `deploy` (a new module, an instant upgrade, or an announced one), `activate_upgrade`,
//! `cancel_upgrade` and `set_policy`; and [`upgrade_refusal`], the refusals read from the
//! module's record alone, which a node also applies at admission (`403 upgrade_refused`) so a
//! refused upgrade costs no nonce. The rules and texts are in the module docs of
//! `transition/mod.rs`, "Deploy and upgrade".

use super::*;
use crate::chain::{PendingUpgrade, UpgradePolicy};

/// Why `sender` may not send `action` (a `deploy` to an existing module, `cancel_upgrade` or
/// `set_policy`) to the module whose record is `record`: the fixed receipt text, or `None` when
/// the record allows it. Only what the record alone decides: the owner, the policy, a tighter
/// policy. `None` for every other action, for `activate_upgrade` (anyone may send one) and for
/// a module that does not exist (`record` `None`).
pub fn upgrade_refusal(
    action: &Action,
    sender: &str,
    record: Option<&ModuleRecord>,
) -> Option<String> {
    let record = record?;
    let policy = record.policy();
    let owner = &record.owner;
    match action {
        Action::Deploy {
            module,
            policy: given,
            ..
        } => {
            if policy == UpgradePolicy::Immutable {
                return Some(if record.policy.is_none() {
                    // The text genesis modules were refused with before policies existed.
                    format!("module {module} is a genesis module and cannot be upgraded")
                } else {
                    format!("module {module} is immutable and cannot be upgraded")
                });
            }
            if owner != sender {
                return Some(format!(
                    "only the owner {owner} may upgrade module {module}"
                ));
            }
            match given {
                Some(p) if *p != policy => Some(format!(
                    "module {module} has policy {policy}: a deploy cannot change it (send \
                     set_policy)"
                )),
                _ => None,
            }
        }
        Action::CancelUpgrade { module } => {
            if policy == UpgradePolicy::Immutable {
                return Some(format!("module {module} is immutable and has no upgrades"));
            }
            (owner != sender)
                .then(|| format!("only the owner {owner} may cancel an upgrade of module {module}"))
        }
        Action::SetPolicy {
            module,
            policy: next,
        } => {
            if policy == UpgradePolicy::Immutable {
                return Some(format!(
                    "module {module} is immutable: its policy cannot change"
                ));
            }
            if owner != sender {
                return Some(format!(
                    "only the owner {owner} may change the policy of module {module}"
                ));
            }
            (!policy.may_become(next)).then(|| {
                format!(
                    "module {module} has policy {policy}: a policy can only be tightened (owner, \
                     then timelocked with a longer delay, then immutable), not changed to {next}"
                )
            })
        }
        _ => None,
    }
}

fn event(kind: &str, data: serde_json::Value) -> Event {
    Event {
        kind: kind.to_string(),
        data,
    }
}

fn refuse(m: String) -> Result<ActionOutcome, TransitionError> {
    Ok(ActionOutcome::failure(ActionError::invalid(m)))
}

fn no_module(id: &str) -> Result<ActionOutcome, TransitionError> {
    Ok(ActionOutcome::failure(ActionError::not_found(format!(
        "module {id}"
    ))))
}

impl BlockBuilder<'_> {
    /// The `deploy` action.
    pub(super) fn deploy(
        &self,
        txid: &str,
        sender: &str,
        id: &str,
        code: &[u8],
        policy: Option<UpgradePolicy>,
    ) -> Result<ActionOutcome, TransitionError> {
        if let Err(GenesisError::Invalid(m) | GenesisError::Json(m)) = check_module_id(id) {
            return refuse(m);
        }
        let base: &dyn State = &self.overlay;
        let code_hash = hex::encode(sha2::Sha256::digest(code));
        let previous = read_record(base, id)?;
        let action = Action::Deploy {
            module: id.to_string(),
            code: Vec::new(),
            policy,
        };
        if let Some(m) = upgrade_refusal(&action, sender, previous.as_ref()) {
            return refuse(m);
        }
        if let Some(old) = &previous {
            if old.code_hash == code_hash {
                return refuse(format!("module {id} already runs code {code_hash}"));
            }
            if let Some(p) = &old.pending_upgrade {
                return refuse(format!(
                    "module {id} has a pending upgrade to code {} already: cancel it first",
                    p.code_hash
                ));
            }
        }
        let entry = match self.ctx.modules.load_at(
            &self.ctx.runtime,
            id,
            code,
            Origin::Upload,
            self.env.height,
        ) {
            Ok(entry) => entry,
            Err(LoadError::Host(e)) => return Err(TransitionError::Host(e)),
            Err(e) => return refuse(format!("module code: {e}")),
        };
        let height = self.env.height;
        let now = self.env.block_time_ms;
        let mut overlay = Overlay::new(base);
        let code_key = code_key(&code_hash);
        if base.get(&code_key).is_none() {
            overlay.writes.insert(code_key, Some(code.to_vec()));
        }
        let Some(old) = previous else {
            let mut record = ModuleRecord {
                abi_version: ABI_VERSION,
                code_hash: code_hash.clone(),
                deployed_height: height,
                owner: sender.to_string(),
                pending_upgrade: None,
                policy: None,
                upgraded_height: None,
            };
            record.set_policy(policy.unwrap_or(UpgradePolicy::Owner));
            let mut data = json!({
                "code_hash": code_hash, "module": id, "owner": sender, "upgrade": false,
            });
            if let Some(p) = policy {
                data["policy"] = json!(p);
            }
            overlay
                .writes
                .insert(module_record_key(id), Some(record.to_bytes()));
            return Ok(ActionOutcome {
                receipt: Receipt::success(vec![event("deploy", data)], 0),
                writes: overlay.into_writes(),
                log: Vec::new(),
                debited: 0,
            });
        };
        if let UpgradePolicy::Timelocked { delay_ms } = old.policy() {
            // Announced: the code is stored (and was checked to load), the module keeps running
            // its current code until someone activates this once the delay has passed.
            let pending = PendingUpgrade {
                activates_at_ms: now.saturating_add(delay_ms),
                announced_at_ms: now,
                code_hash: code_hash.clone(),
            };
            let data = json!({
                "activates_at_ms": pending.activates_at_ms,
                "announced_at_ms": now,
                "code_hash": code_hash,
                "from_code_hash": old.code_hash,
                "module": id,
            });
            let record = ModuleRecord {
                pending_upgrade: Some(pending),
                ..old
            };
            overlay
                .writes
                .insert(module_record_key(id), Some(record.to_bytes()));
            return Ok(ActionOutcome {
                receipt: Receipt::success(vec![event("upgrade_announced", data)], 0),
                writes: overlay.into_writes(),
                log: Vec::new(),
                debited: 0,
            });
        }
        // `owner`: in effect at once.
        let event = event(
            "deploy",
            json!({"code_hash": code_hash, "module": id, "owner": old.owner, "upgrade": true}),
        );
        self.install(txid, id, old, &code_hash, &entry, overlay, event)
    }

    /// Makes `code_hash` (loaded as `entry`) the code of module `id` (whose record was `old`)
    /// over `overlay`: the record, then `gc_migrate` when the new code exports it (sender the
    /// owner). The receipt has `event` then the migration's events; a failed migration fails
    /// the whole action and writes nothing.
    #[allow(clippy::too_many_arguments)]
    fn install(
        &self,
        txid: &str,
        id: &str,
        old: ModuleRecord,
        code_hash: &str,
        entry: &ModuleEntry,
        mut overlay: Overlay<'_>,
        event: Event,
    ) -> Result<ActionOutcome, TransitionError> {
        let from_code_hash = old.code_hash.clone();
        let owner = old.owner.clone();
        let record = ModuleRecord {
            code_hash: code_hash.to_string(),
            pending_upgrade: None,
            upgraded_height: Some(self.env.height),
            ..old
        };
        overlay
            .writes
            .insert(module_record_key(id), Some(record.to_bytes()));
        let mut events = vec![event];
        let (mut fuel_used, mut log) = (0, Vec::new());
        if entry.has_migrate {
            let input = json!({"from_code_hash": from_code_hash, "to_code_hash": code_hash});
            let out = execute_migrate(
                &entry.module,
                &overlay,
                &self.env,
                txid,
                &owner,
                input.to_string().as_bytes(),
            )?;
            (fuel_used, log) = (out.fuel_used, out.log);
            if let Err(e) = out.result {
                return Ok(ActionOutcome {
                    receipt: Receipt::failure(e, fuel_used),
                    writes: WriteSet::new(),
                    log,
                    debited: 0,
                });
            }
            overlay.writes.extend(out.writes);
            events.extend(out.events);
        }
        Ok(ActionOutcome {
            receipt: Receipt::success(events, fuel_used),
            writes: overlay.into_writes(),
            log,
            debited: 0,
        })
    }

    /// The `activate_upgrade` action: anyone, once block time has reached the pending
    /// upgrade's `activates_at_ms`.
    pub(super) fn activate_upgrade(
        &self,
        txid: &str,
        id: &str,
    ) -> Result<ActionOutcome, TransitionError> {
        let base: &dyn State = &self.overlay;
        let Some(old) = read_record(base, id)? else {
            return no_module(id);
        };
        let Some(pending) = old.pending_upgrade.clone() else {
            return refuse(format!("module {id} has no pending upgrade"));
        };
        let now = self.env.block_time_ms;
        if now < pending.activates_at_ms {
            return refuse(format!(
                "the upgrade of module {id} to code {} may be activated from block time {} ms; \
                 this block's is {now} ms",
                pending.code_hash, pending.activates_at_ms
            ));
        }
        let next = ModuleRecord {
            code_hash: pending.code_hash.clone(),
            ..old.clone()
        };
        let entry = self
            .ctx
            .modules
            .resolve_record(&self.ctx.runtime, base, id, &next)?;
        let event = event(
            "upgrade_activated",
            json!({"code_hash": pending.code_hash, "from_code_hash": old.code_hash, "module": id}),
        );
        self.install(
            txid,
            id,
            old,
            &pending.code_hash,
            &entry,
            Overlay::new(base),
            event,
        )
    }

    /// The `cancel_upgrade` action: the owner drops the pending upgrade (its code stays in the
    /// code store, which is content-addressed).
    pub(super) fn cancel_upgrade(
        &self,
        sender: &str,
        id: &str,
    ) -> Result<ActionOutcome, TransitionError> {
        let base: &dyn State = &self.overlay;
        let Some(mut record) = read_record(base, id)? else {
            return no_module(id);
        };
        let action = Action::CancelUpgrade {
            module: id.to_string(),
        };
        if let Some(m) = upgrade_refusal(&action, sender, Some(&record)) {
            return refuse(m);
        }
        let Some(pending) = record.pending_upgrade.take() else {
            return refuse(format!("module {id} has no pending upgrade"));
        };
        let events = vec![event(
            "upgrade_cancelled",
            json!({"code_hash": pending.code_hash, "module": id}),
        )];
        Ok(native(base, |kv| {
            kv.writes
                .insert(module_record_key(id), Some(record.to_bytes()));
            Ok(events)
        }))
    }

    /// The `set_policy` action: the owner tightens the policy. Made immutable, a module's
    /// pending upgrade is cancelled; given a longer delay, it activates that much later.
    pub(super) fn set_policy(
        &self,
        sender: &str,
        id: &str,
        policy: UpgradePolicy,
    ) -> Result<ActionOutcome, TransitionError> {
        let base: &dyn State = &self.overlay;
        let Some(mut record) = read_record(base, id)? else {
            return no_module(id);
        };
        let action = Action::SetPolicy {
            module: id.to_string(),
            policy,
        };
        if let Some(m) = upgrade_refusal(&action, sender, Some(&record)) {
            return refuse(m);
        }
        let previous = record.policy();
        record.set_policy(policy);
        let mut events = vec![event(
            "policy_set",
            json!({"module": id, "policy": policy, "previous": previous}),
        )];
        if let UpgradePolicy::Immutable = policy {
            if let Some(pending) = record.pending_upgrade.take() {
                events.push(event(
                    "upgrade_cancelled",
                    json!({"code_hash": pending.code_hash, "module": id}),
                ));
            }
        }
        if let (UpgradePolicy::Timelocked { delay_ms }, Some(pending)) =
            (policy, record.pending_upgrade.as_mut())
        {
            pending.activates_at_ms = pending.announced_at_ms.saturating_add(delay_ms);
            events.push(event(
                "upgrade_rescheduled",
                json!({
                    "activates_at_ms": pending.activates_at_ms,
                    "code_hash": pending.code_hash,
                    "module": id,
                }),
            ));
        }
        Ok(native(base, |kv| {
            kv.writes
                .insert(module_record_key(id), Some(record.to_bytes()));
            Ok(events)
        }))
    }
}
