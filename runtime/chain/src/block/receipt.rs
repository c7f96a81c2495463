//! Receipts and events: what executing one transaction produced, in the JSON form the API
//! serves and in the canonical binary form (borsh) that `receipt_root` commits to.
//!
//! JSON (`node/API.md`, `docs/tictactoe.md`): `{"ok": false, "error": "invalid: cell is taken",
//! "events": [], "fuel_used": 1234}`; a successful one has `"error": null` and its events, each
//! `{"kind": "tictactoe.moved", "data": {...}}`.
//!
//! Borsh (hashing): `ok` (u8 0/1) ‖ `error` (`Option<String>`: 0, or 1 ‖ u32 LE length ‖ UTF-8) ‖
//! `events` (u32 LE count, then each `kind` as String and `data` as the String of its
//! [canonical JSON](crate::canonical) text) ‖ `fuel_used` (u64 LE), then, only when the
//! transaction paid a fee (a chain with fees, `genesis/fees.rs`), `fee` (u128 LE). A receipt's
//! hash is SHA-256 of those bytes. JSON shows `"fee": "<base units>"` likewise only when it is not 0, so
//! receipts of a chain without fees are exactly as they were before fees existed.

use std::io;

use borsh::{BorshDeserialize, BorshSerialize};
use serde::{Deserialize, Serialize};

use gamechain_sdk::Amount;

use crate::canonical::canonical_json;
use crate::hash::sha256;

/// An event in a receipt: `{"kind": …, "data": …}` (data with sorted object keys), as a module
/// emitted it. Its hashing encoding: `kind` as a borsh String, then the canonical JSON text of
/// `data` as a borsh String.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// Event kind, e.g. `"tictactoe.moved"`.
    pub kind: String,
    /// Event data, any JSON value.
    pub data: serde_json::Value,
}

impl BorshSerialize for Event {
    fn serialize<W: io::Write>(&self, writer: &mut W) -> io::Result<()> {
        BorshSerialize::serialize(&self.kind, writer)?;
        BorshSerialize::serialize(&canonical_json(&self.data), writer)
    }
}

impl BorshDeserialize for Event {
    fn deserialize_reader<R: io::Read>(reader: &mut R) -> io::Result<Self> {
        let kind = String::deserialize_reader(reader)?;
        let text = String::deserialize_reader(reader)?;
        let data = serde_json::from_str(&text)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        Ok(Self { kind, data })
    }
}

/// The outcome of one transaction in a block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Receipt {
    /// Whether the action succeeded. A failed transaction is still in its block: its writes
    /// and events are discarded, its nonce is used.
    pub ok: bool,
    /// The error's display text when `ok` is false (`"invalid: cell is taken"`), else `None`.
    #[serde(default)]
    pub error: Option<String>,
    /// Events in emission order; empty when `ok` is false.
    pub events: Vec<Event>,
    /// Fuel the execution consumed (the runtime's fuel units: operators counted by the module's
    /// instrumentation plus host-call charges, `sdk-guest/ABI.md` "Gas table"; 0 for actions the
    /// node runs itself).
    pub fuel_used: u64,
    /// GOLD base units the sender paid in fees (ok or not), credited to the chain's fee
    /// collector; 0 (and absent from JSON and from the hashing encoding) on a chain without
    /// fees.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fee: Amount,
}

fn is_zero(a: &Amount) -> bool {
    a.0 == 0
}

impl BorshSerialize for Receipt {
    fn serialize<W: io::Write>(&self, w: &mut W) -> io::Result<()> {
        BorshSerialize::serialize(&self.ok, w)?;
        BorshSerialize::serialize(&self.error, w)?;
        BorshSerialize::serialize(&self.events, w)?;
        BorshSerialize::serialize(&self.fuel_used, w)?;
        if self.fee.0 != 0 {
            BorshSerialize::serialize(&self.fee.0, w)?;
        }
        Ok(())
    }
}

impl BorshDeserialize for Receipt {
    /// Reads to the end of `reader`: the trailing `fee` is present only when it is not 0.
    fn deserialize_reader<R: io::Read>(reader: &mut R) -> io::Result<Self> {
        let ok = bool::deserialize_reader(reader)?;
        let error = Option::<String>::deserialize_reader(reader)?;
        let events = Vec::<Event>::deserialize_reader(reader)?;
        let fuel_used = u64::deserialize_reader(reader)?;
        let mut rest = Vec::new();
        reader.read_to_end(&mut rest)?;
        let fee = match rest.len() {
            0 => 0,
            16 => match u128::from_le_bytes(rest.try_into().expect("16 bytes")) {
                0 => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "receipt: an encoded fee of 0 is not canonical (it is left out)",
                    ))
                }
                fee => fee,
            },
            n => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("receipt: {n} trailing bytes, a fee takes 16"),
                ))
            }
        };
        Ok(Self {
            ok,
            error,
            events,
            fuel_used,
            fee: Amount(fee),
        })
    }
}

impl Receipt {
    /// A successful receipt.
    pub fn success(events: Vec<Event>, fuel_used: u64) -> Self {
        Self {
            ok: true,
            error: None,
            events,
            fuel_used,
            fee: Amount(0),
        }
    }

    /// A failed receipt carrying `error`'s display text (an `ActionError` gives
    /// `"invalid: cell is taken"`), no events.
    pub fn failure(error: impl std::fmt::Display, fuel_used: u64) -> Self {
        Self {
            ok: false,
            error: Some(error.to_string()),
            events: Vec::new(),
            fuel_used,
            fee: Amount(0),
        }
    }

    /// The canonical binary encoding (see the module docs).
    pub fn to_borsh(&self) -> Vec<u8> {
        borsh::to_vec(self).expect("writing to a Vec cannot fail")
    }

    /// SHA-256 of [`Receipt::to_borsh`]: the leaf `receipt_root` is built over.
    pub fn hash(&self) -> [u8; 32] {
        sha256(&self.to_borsh())
    }
}

/// The receipt of a scheduled call (a call a module scheduled of itself, run at the start of
/// the block it was due in): which call it was and what it did. JSON: `{"module", "id",
/// "receipt"}`.
///
/// Its hash in `receipt_root` binds the call as well as the outcome: SHA-256 of `"scheduled"`
/// (borsh String) ‖ `module` (String) ‖ `id` (u64 LE) ‖ the receipt's borsh encoding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduledReceipt {
    /// The module called.
    pub module: String,
    /// The call id (`Ctx::schedule`'s answer).
    pub id: u64,
    /// What the call did.
    pub receipt: Receipt,
}

impl ScheduledReceipt {
    /// The hash `receipt_root` commits to (see the type's docs).
    pub fn hash(&self) -> [u8; 32] {
        let mut bytes = borsh::to_vec("scheduled").expect("writing to a Vec cannot fail");
        BorshSerialize::serialize(&self.module, &mut bytes).expect("writing to a Vec cannot fail");
        BorshSerialize::serialize(&self.id, &mut bytes).expect("writing to a Vec cannot fail");
        bytes.extend_from_slice(&self.receipt.to_borsh());
        sha256(&bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gamechain_sdk::ActionError;
    use serde_json::{json, Value};

    fn ev(kind: &str, data: Value) -> Event {
        Event {
            kind: kind.to_string(),
            data,
        }
    }

    #[test]
    fn json_matches_the_seed() {
        let failed = Receipt::failure(ActionError::invalid("cell is taken"), 123);
        assert_eq!(
            serde_json::to_string(&failed).unwrap(),
            r#"{"ok":false,"error":"invalid: cell is taken","events":[],"fuel_used":123}"#
        );
        let ok = Receipt::success(
            vec![ev(
                "faucet",
                json!({"amount": "100000", "to": "xxURsC5wFbNzCrKzzQjeTqkLfEoZT6Y8F7", "token": "GOLD"}),
            )],
            0,
        );
        let text = serde_json::to_string(&ok).unwrap();
        assert_eq!(
            text,
            r#"{"ok":true,"error":null,"events":[{"kind":"faucet","data":{"amount":"100000","to":"xxURsC5wFbNzCrKzzQjeTqkLfEoZT6Y8F7","token":"GOLD"}}],"fuel_used":0}"#
        );
        assert_eq!(serde_json::from_str::<Receipt>(&text).unwrap(), ok);
        let no_error_field: Receipt =
            serde_json::from_str(r#"{"ok":true,"events":[],"fuel_used":5}"#).unwrap();
        assert_eq!(no_error_field, Receipt::success(vec![], 5));
    }

    #[test]
    fn borsh_layout_is_fixed() {
        let r = Receipt {
            ok: true,
            error: None,
            events: vec![ev("k", json!({"b": 1, "a": [true, null]}))],
            fuel_used: 258,
            fee: Amount(0),
        };
        let data = br#"{"a":[true,null],"b":1}"#;
        let mut want = vec![1u8, 0];
        want.extend_from_slice(&1u32.to_le_bytes());
        want.extend_from_slice(&1u32.to_le_bytes());
        want.push(b'k');
        want.extend_from_slice(&(data.len() as u32).to_le_bytes());
        want.extend_from_slice(data);
        want.extend_from_slice(&258u64.to_le_bytes());
        assert_eq!(r.to_borsh(), want);
        assert_eq!(borsh::from_slice::<Receipt>(&want).unwrap(), r);

        let failed = Receipt::failure("invalid: x", 1);
        let mut want = vec![0u8, 1];
        want.extend_from_slice(&10u32.to_le_bytes());
        want.extend_from_slice(b"invalid: x");
        want.extend_from_slice(&0u32.to_le_bytes());
        want.extend_from_slice(&1u64.to_le_bytes());
        assert_eq!(failed.to_borsh(), want);

        // A fee is appended only when it is not 0, and JSON shows it likewise.
        let paid = Receipt {
            fee: Amount(7),
            ..failed.clone()
        };
        want.extend_from_slice(&7u128.to_le_bytes());
        assert_eq!(paid.to_borsh(), want);
        assert_eq!(borsh::from_slice::<Receipt>(&want).unwrap(), paid);
        assert_ne!(paid.hash(), failed.hash());
        assert_eq!(
            serde_json::to_string(&paid).unwrap(),
            r#"{"ok":false,"error":"invalid: x","events":[],"fuel_used":1,"fee":"7"}"#
        );
        let mut zero = failed.to_borsh();
        zero.extend_from_slice(&0u128.to_le_bytes());
        assert!(
            borsh::from_slice::<Receipt>(&zero).is_err(),
            "a 0 fee is never encoded"
        );
        let mut short = failed.to_borsh();
        short.extend_from_slice(&[1, 2, 3]);
        assert!(borsh::from_slice::<Receipt>(&short).is_err());
    }

    #[test]
    fn hash_ignores_json_key_order_but_not_content() {
        let a: Value = serde_json::from_str(r#"{"x": 1, "id": "a"}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"id":"a","x":1}"#).unwrap();
        let ra = Receipt::success(vec![ev("e", a)], 9);
        let rb = Receipt::success(vec![ev("e", b)], 9);
        assert_eq!(ra.hash(), rb.hash());
        let rc = Receipt::success(vec![ev("e", json!({"id": "a", "x": 2}))], 9);
        assert_ne!(ra.hash(), rc.hash());
        assert_ne!(
            ra.hash(),
            Receipt::success(vec![ev("e", json!({"id": "a", "x": 1}))], 10).hash()
        );
    }
}
