//! Canonical JSON text of a `serde_json::Value`, the form in which JSON data (event data) enters
//! a hashed record.
//!
//! Rules: no whitespace; object keys sorted by their UTF-8 bytes (explicitly here, so the result
//! does not depend on whether some crate in the build enabled serde_json's `preserve_order`);
//! strings, numbers, `true`/`false`/`null` written exactly as `serde_json` writes them (integers
//! in decimal, floats in shortest round-trip form, strings with serde_json's minimal escaping).

use serde_json::Value;

/// The canonical JSON text of `value` (see the module docs).
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write(value, &mut out);
    out
}

fn write(value: &Value, out: &mut String) {
    match value {
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::to_string(key).expect("a string always serialises"));
                out.push(':');
                write(item, out);
            }
            out.push('}');
        }
        leaf => out.push_str(&serde_json::to_string(leaf).expect("a JSON leaf always serialises")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sorts_keys_and_drops_whitespace() {
        let v: Value =
            serde_json::from_str(r#"{ "b": [1, {"z": null, "a": "x\n"}], "a": true, "é": 1.5 }"#)
                .unwrap();
        assert_eq!(
            canonical_json(&v),
            r#"{"a":true,"b":[1,{"a":"x\n","z":null}],"é":1.5}"#
        );
    }

    #[test]
    fn matches_serde_json_for_sorted_maps() {
        // serde_json's default map is a BTreeMap, so both agree; if this fails someone enabled
        // `preserve_order` somewhere in the build (canonical_json itself stays correct).
        let v = json!({"to": "x", "amount": "100000", "token": "GOLD"});
        assert_eq!(canonical_json(&v), serde_json::to_string(&v).unwrap());
    }
}
