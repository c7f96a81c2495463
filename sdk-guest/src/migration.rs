//! [`Migration`]: what [`GameModule::migrate`](crate::GameModule::migrate) is told when an
//! upgrade puts new code in effect (ABI.md, "Deploys and upgrades": `gc_migrate`).

use serde::{Deserialize, Serialize};

/// One upgrade of a module, as the chain runs its migration: once, in the transaction that puts
/// the new code in effect (the owner's `deploy` under the `owner` policy, or the
/// `activate_upgrade` of a `timelocked` one).
///
/// On the wire (`gc_migrate`'s input) this is the JSON object
/// `{"from_code_hash":"<64 hex>","to_code_hash":"<64 hex>"}`; `owner` is `gc_migrate`'s sender
/// (the module's owner, whoever sent the activation), not part of the input.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Migration {
    /// The module's owner (an address): the sender the migration runs as, so
    /// [`Ctx::escrow_in`](crate::Ctx::escrow_in) may only take the owner's funds.
    #[serde(skip)]
    pub owner: String,
    /// The code the module ran until now: lowercase hex SHA-256 of its `.wasm` (64 chars).
    pub from_code_hash: String,
    /// The code now in effect (the code running this migration), same form.
    pub to_code_hash: String,
}

impl Migration {
    /// A migration by `owner` from code `from_code_hash` to `to_code_hash` (lowercase hex
    /// SHA-256s; natively any text will do).
    pub fn new(owner: &str, from_code_hash: &str, to_code_hash: &str) -> Self {
        Self {
            owner: owner.to_string(),
            from_code_hash: from_code_hash.to_string(),
            to_code_hash: to_code_hash.to_string(),
        }
    }

    /// `gc_migrate`'s input bytes: `{"from_code_hash":…,"to_code_hash":…}` (keys sorted, no
    /// spaces), exactly what the chain passes.
    pub fn input_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("serialising two strings cannot fail")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_is_the_chains_json_and_parses_back_without_the_owner() {
        let m = Migration::new("owner1", "aa", "bb");
        assert_eq!(
            m.input_json(),
            br#"{"from_code_hash":"aa","to_code_hash":"bb"}"#.to_vec()
        );
        let back: Migration = serde_json::from_slice(&m.input_json()).unwrap();
        assert_eq!(back, Migration::new("", "aa", "bb"));
    }
}
