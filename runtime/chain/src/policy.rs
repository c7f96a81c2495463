//! Upgrade policies: who may change the code a module id runs, and how fast
//! ([`UpgradePolicy`]), and an upgrade announced but not yet in effect ([`PendingUpgrade`]).
//!
//! | policy | JSON | an upgrade (`deploy` to the id) |
//! |---|---|---|
//! | immutable | `{"kind":"immutable"}` | refused, from anybody: the code never changes |
//! | timelocked | `{"kind":"timelocked","delay_ms":N}` | by the owner only: announced on chain with the new code hash; anyone may activate it once block time ≥ announce time + `delay_ms`; the owner may cancel it before |
//! | owner | `{"kind":"owner"}` | by the owner only, in effect at once (for development) |
//!
//! A policy can only be tightened ([`UpgradePolicy::may_become`]): owner → timelocked →
//! immutable, and a timelock's delay only lengthened. `delay_ms` is 1 to
//! [`MAX_TIMELOCK_DELAY_MS`] (one year); a transaction naming another delay is not a transaction
//! (`bad_json`).
//!
//! Genesis modules are immutable. A module record without a policy (every record written
//! before policies existed) reads as immutable when its owner is `system` (genesis) and as
//! `owner` otherwise: exactly the rules those chains ran under, so their state hashes the same.

use core::fmt;

use serde::{Deserialize, Serialize};

/// Longest timelock a policy may set: one year (365 days) of block time, in ms.
pub const MAX_TIMELOCK_DELAY_MS: u64 = 365 * 24 * 60 * 60 * 1000;

/// Who may change a module's code, and how fast (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", try_from = "RawPolicy")]
pub enum UpgradePolicy {
    /// Nobody may ever change the code.
    Immutable,
    /// The owner announces an upgrade; it takes effect no earlier than `delay_ms` of block time
    /// after the announcement.
    Timelocked {
        /// Least block time between the announcement and the activation, ms (1 to
        /// [`MAX_TIMELOCK_DELAY_MS`]).
        delay_ms: u64,
    },
    /// The owner upgrades at once.
    Owner,
}

/// A policy as read: `kind` and the fields any kind may carry, checked field by field (so a
/// field the kind does not have is refused, whatever the kind).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicy {
    kind: String,
    delay_ms: Option<u64>,
}

impl TryFrom<RawPolicy> for UpgradePolicy {
    type Error = String;
    fn try_from(raw: RawPolicy) -> Result<Self, String> {
        match (raw.kind.as_str(), raw.delay_ms) {
            ("immutable", None) => Ok(UpgradePolicy::Immutable),
            ("owner", None) => Ok(UpgradePolicy::Owner),
            ("timelocked", Some(delay_ms)) => Ok(UpgradePolicy::Timelocked { delay_ms }),
            ("timelocked", None) => Err("a timelocked policy needs `delay_ms`".into()),
            ("immutable" | "owner", Some(_)) => {
                Err(format!("an {} policy has no `delay_ms`", raw.kind))
            }
            (other, _) => Err(format!(
                "unknown policy kind `{other}` (immutable, timelocked or owner)"
            )),
        }
    }
}

impl UpgradePolicy {
    /// `Ok` when the policy's fields are within bounds (`delay_ms` 1 to
    /// [`MAX_TIMELOCK_DELAY_MS`]); the error is a fixed text.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            UpgradePolicy::Timelocked { delay_ms }
                if !(1..=MAX_TIMELOCK_DELAY_MS).contains(delay_ms) =>
            {
                Err(format!(
                    "a timelock's delay_ms must be 1 to {MAX_TIMELOCK_DELAY_MS}, not {delay_ms}"
                ))
            }
            _ => Ok(()),
        }
    }

    /// How strict the policy is: owner 0, timelocked 1, immutable 2.
    fn rank(&self) -> u8 {
        match self {
            UpgradePolicy::Owner => 0,
            UpgradePolicy::Timelocked { .. } => 1,
            UpgradePolicy::Immutable => 2,
        }
    }

    /// Whether a module under this policy may be put under `next`: only a strictly tighter
    /// policy (owner → timelocked or immutable, timelocked → a longer delay or immutable).
    pub fn may_become(&self, next: &UpgradePolicy) -> bool {
        match (self, next) {
            (
                UpgradePolicy::Timelocked { delay_ms: a },
                UpgradePolicy::Timelocked { delay_ms: b },
            ) => b > a,
            _ => next.rank() > self.rank(),
        }
    }

    /// Whether an owner can change the code at once (the CLI refuses to escrow stakes in such
    /// a module without `--allow-mutable`).
    pub fn is_instant(&self) -> bool {
        matches!(self, UpgradePolicy::Owner)
    }
}

impl fmt::Display for UpgradePolicy {
    /// `immutable`, `timelocked <delay_ms> ms` or `owner`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UpgradePolicy::Immutable => f.write_str("immutable"),
            UpgradePolicy::Timelocked { delay_ms } => write!(f, "timelocked {delay_ms} ms"),
            UpgradePolicy::Owner => f.write_str("owner"),
        }
    }
}

/// An upgrade of a timelocked module announced and not yet activated or cancelled. JSON
/// `{"activates_at_ms": N, "announced_at_ms": N, "code_hash": "<64 hex>"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PendingUpgrade {
    /// Block time from which anyone may activate it, ms (announce time + the module's delay).
    pub activates_at_ms: u64,
    /// Block time of the block that announced it, ms.
    pub announced_at_ms: u64,
    /// Lowercase hex SHA-256 of the new code (stored at `code/<hash>` since the announcement).
    pub code_hash: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    const OWNER: UpgradePolicy = UpgradePolicy::Owner;
    const IMMUTABLE: UpgradePolicy = UpgradePolicy::Immutable;

    fn timelocked(delay_ms: u64) -> UpgradePolicy {
        UpgradePolicy::Timelocked { delay_ms }
    }

    #[test]
    fn json_shapes() {
        for (p, text) in [
            (IMMUTABLE, r#"{"kind":"immutable"}"#),
            (
                timelocked(60_000),
                r#"{"kind":"timelocked","delay_ms":60000}"#,
            ),
            (OWNER, r#"{"kind":"owner"}"#),
        ] {
            assert_eq!(serde_json::to_string(&p).unwrap(), text);
            assert_eq!(serde_json::from_str::<UpgradePolicy>(text).unwrap(), p);
        }
        for bad in [
            r#"{"kind":"timelocked"}"#,
            r#"{"kind":"owner","delay_ms":5}"#,
            r#"{"kind":"immutable","x":1}"#,
            r#"{"kind":"sometimes"}"#,
            r#"{"kind":"timelocked","delay_ms":-1}"#,
        ] {
            assert!(serde_json::from_str::<UpgradePolicy>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn policies_only_tighten() {
        assert!(OWNER.may_become(&timelocked(1)));
        assert!(OWNER.may_become(&IMMUTABLE));
        assert!(timelocked(10).may_become(&timelocked(11)));
        assert!(timelocked(10).may_become(&IMMUTABLE));
        assert!(!timelocked(10).may_become(&timelocked(10)));
        assert!(!timelocked(10).may_become(&timelocked(9)));
        assert!(!timelocked(10).may_become(&OWNER));
        assert!(!OWNER.may_become(&OWNER));
        for p in [OWNER, timelocked(5), IMMUTABLE] {
            assert!(!IMMUTABLE.may_become(&p));
        }
    }

    #[test]
    fn delay_bounds() {
        timelocked(1).validate().unwrap();
        timelocked(MAX_TIMELOCK_DELAY_MS).validate().unwrap();
        assert!(timelocked(0).validate().is_err());
        assert_eq!(
            timelocked(MAX_TIMELOCK_DELAY_MS + 1)
                .validate()
                .unwrap_err(),
            "a timelock's delay_ms must be 1 to 31536000000, not 31536000001"
        );
    }
}
