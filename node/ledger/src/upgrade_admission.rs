//! Which upgrade-family transactions (`deploy` to an existing module, `cancel_upgrade`,
//! `set_policy`) `POST /v1/tx` refuses with `403 upgrade_refused` instead of admitting them to
//! fail in a block (which would use the sender's nonce): exactly those the state transition will
//! **certainly** refuse for authorization, whatever is included before them.
//!
//! The refusal text is the receipt's ([`upgrade_refusal`], read from the module's record at the
//! head). Why each is safe to decide before inclusion:
//!
//! - **immutable** (a genesis module, or policy `immutable`): final. A policy can only be
//!   tightened (`set_policy`), and `immutable` is the tightest; a record is never deleted.
//! - **not the owner**: final. No action changes a module's owner: the actions are `faucet`,
//!   `transfer`, `game`, `deploy` (which keeps the owner on an upgrade), `activate_upgrade`,
//!   `cancel_upgrade` and `set_policy`; there is no transfer of ownership. A module's record,
//!   once written, is never removed.
//! - **a policy the transaction cannot name** (a `deploy` naming another policy than the
//!   module's; a `set_policy` that is not tighter): depends on the current policy, which only
//!   the owner, i.e. this very sender, can change (`set_policy`). A transaction of the sender
//!   admitted later has a higher nonce and runs after this one, so the policy at inclusion is the
//!   head's unless the sender already has transactions pending (one may be that `set_policy`):
//!   refused early only when the sender has none.
//!
//! Not refused early: an **unknown module** (`record` `None`). A `deploy` of it may be pending
//! and included first (then a `deploy` is an upgrade of it, or `cancel_upgrade`/`set_policy` by
//! its deployer are allowed), so the transition's `not found: module <id>` is not certain. And
//! `activate_upgrade`, which anyone may send and whose timing the transition decides.

use gamechain_runtime::chain::{Action, UpgradePolicy};
use gamechain_runtime::{upgrade_refusal, ModuleRecord};

/// The `upgrade_refused` message for `action` by `sender` on the module whose record at the
/// head is `record`, or `None` to admit it. `sender_has_pending`: whether the mempool holds a
/// transaction of `sender` (which would run before this one). See the module docs for why each
/// refusal is certain.
pub fn admission_refusal(
    action: &Action,
    sender: &str,
    record: Option<&ModuleRecord>,
    sender_has_pending: bool,
) -> Option<String> {
    let record = record?;
    let why = upgrade_refusal(action, sender, Some(record))?;
    let is_final = record.policy() == UpgradePolicy::Immutable || record.owner != sender;
    (is_final || !sender_has_pending).then_some(why)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(owner: &str, policy: Option<UpgradePolicy>) -> ModuleRecord {
        ModuleRecord {
            abi_version: 1,
            code_hash: "aa".repeat(32),
            deployed_height: 1,
            owner: owner.into(),
            pending_upgrade: None,
            policy,
            upgraded_height: None,
        }
    }

    fn deploy(policy: Option<UpgradePolicy>) -> Action {
        Action::Deploy {
            module: "g".into(),
            code: vec![0],
            policy,
        }
    }

    #[test]
    fn a_non_owner_and_an_immutable_module_are_refused_even_with_pending_transactions() {
        let owned = record("alice", None);
        for pending in [false, true] {
            assert_eq!(
                admission_refusal(&deploy(None), "bob", Some(&owned), pending).as_deref(),
                Some("only the owner alice may upgrade module g")
            );
            let cancel = Action::CancelUpgrade { module: "g".into() };
            assert_eq!(
                admission_refusal(&cancel, "bob", Some(&owned), pending).as_deref(),
                Some("only the owner alice may cancel an upgrade of module g")
            );
            let fixed = record("alice", Some(UpgradePolicy::Immutable));
            assert_eq!(
                admission_refusal(&deploy(None), "alice", Some(&fixed), pending).as_deref(),
                Some("module g is immutable and cannot be upgraded")
            );
            let genesis = record("system", None);
            assert_eq!(
                admission_refusal(&deploy(None), "system", Some(&genesis), pending).as_deref(),
                Some("module g is a genesis module and cannot be upgraded")
            );
        }
    }

    #[test]
    fn a_policy_refusal_waits_for_the_owners_pending_transactions() {
        let hour = UpgradePolicy::Timelocked {
            delay_ms: 3_600_000,
        };
        let owned = record("alice", None);
        let named = deploy(Some(hour));
        let text = "module g has policy owner: a deploy cannot change it (send set_policy)";
        assert_eq!(
            admission_refusal(&named, "alice", Some(&owned), false).as_deref(),
            Some(text)
        );
        // A pending `set_policy` of alice's may make the module timelocked first.
        assert_eq!(admission_refusal(&named, "alice", Some(&owned), true), None);
        let timelocked = record("alice", Some(hour));
        let looser = Action::SetPolicy {
            module: "g".into(),
            policy: UpgradePolicy::Owner,
        };
        assert!(admission_refusal(&looser, "alice", Some(&timelocked), false).is_some());
        assert_eq!(
            admission_refusal(&looser, "alice", Some(&timelocked), true),
            None
        );
    }

    #[test]
    fn unknown_modules_allowed_actions_and_other_actions_are_admitted() {
        assert_eq!(admission_refusal(&deploy(None), "bob", None, false), None);
        let cancel = Action::CancelUpgrade { module: "g".into() };
        assert_eq!(admission_refusal(&cancel, "bob", None, false), None);
        let owned = record("alice", None);
        assert_eq!(
            admission_refusal(&deploy(None), "alice", Some(&owned), false),
            None
        );
        let activate = Action::ActivateUpgrade { module: "g".into() };
        assert_eq!(
            admission_refusal(&activate, "bob", Some(&owned), false),
            None
        );
    }
}
