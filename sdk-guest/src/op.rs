//! Helpers that read fields out of an op (a JSON object), with the error texts of
//! `docs/tictactoe.md`, "Errors".

use serde_json::Value;

use crate::{ActionError, Amount};

/// The string field `field` of `op`. Error ``invalid: missing string field `<field>` `` when it
/// is missing or not a string.
pub fn op_str<'a>(op: &'a Value, field: &str) -> Result<&'a str, ActionError> {
    op.get(field)
        .and_then(Value::as_str)
        .ok_or_else(|| ActionError::invalid(format!("missing string field `{field}`")))
}

/// A required base-unit amount field (a decimal string, see [`Amount`]). `invalid` when missing,
/// not a string, or not a canonical decimal u128.
pub fn op_amount(op: &Value, field: &str) -> Result<u128, ActionError> {
    op_str(op, field)?
        .parse::<Amount>()
        .map(|a| a.0)
        .map_err(|_| {
            ActionError::invalid(format!("`{field}` must be a decimal string of base units"))
        })
}

/// An optional base-unit amount field: 0 when the field is absent, otherwise as [`op_amount`].
pub fn op_amount_or_zero(op: &Value, field: &str) -> Result<u128, ActionError> {
    if op.get(field).is_none() {
        Ok(0)
    } else {
        op_amount(op, field)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_fields_with_the_documented_errors() {
        let op = json!({ "kind": "create", "stake": "100", "n": 5 });
        assert_eq!(op_str(&op, "kind"), Ok("create"));
        assert_eq!(
            op_str(&op, "n").unwrap_err().to_string(),
            "invalid: missing string field `n`"
        );
        assert_eq!(op_amount(&op, "stake"), Ok(100));
        assert_eq!(op_amount_or_zero(&op, "none"), Ok(0));
        assert_eq!(
            op_amount(&json!({ "stake": "1.5" }), "stake")
                .unwrap_err()
                .to_string(),
            "invalid: `stake` must be a decimal string of base units"
        );
        assert!(op_amount_or_zero(&json!({ "stake": 100 }), "stake").is_err());
    }
}
