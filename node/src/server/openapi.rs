//! `GET /v1/openapi.json`: the OpenAPI 3.1 document of the API (`node/openapi.json`, embedded
//! in the binary), and the test that holds it in step with the router's endpoint table
//! ([`crate::server::api::endpoints`]) and with the error codes of `node/API.md`.

use axum::http::header;
use axum::response::{IntoResponse, Response};

/// The OpenAPI 3.1 document, JSON text, exactly as `node/openapi.json` holds it.
pub const OPENAPI_JSON: &str = include_str!("../../openapi.json");

/// `GET /v1/openapi.json`: [`OPENAPI_JSON`], `content-type: application/json`.
pub async fn get_openapi() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI_JSON).into_response()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use serde_json::Value;

    use super::OPENAPI_JSON;
    use crate::config::NodeConfig;
    use crate::server::api::endpoints;

    fn document() -> Value {
        serde_json::from_str(OPENAPI_JSON).expect("node/openapi.json is JSON")
    }

    /// `(METHOD, path)` of every operation of the document.
    fn documented(doc: &Value) -> BTreeSet<(String, String)> {
        let methods = [
            "get", "put", "post", "delete", "options", "head", "patch", "trace",
        ];
        let mut ops = BTreeSet::new();
        for (path, item) in doc["paths"].as_object().expect("`paths` is an object") {
            for (key, _) in item.as_object().expect("a path item is an object") {
                if methods.contains(&key.as_str()) {
                    ops.insert((key.to_ascii_uppercase(), path.clone()));
                }
            }
        }
        ops
    }

    /// The document describes exactly the endpoints the router is built from: no route
    /// without its operation, no operation without its route.
    #[test]
    fn document_and_router_have_the_same_endpoints() {
        let doc = document();
        assert_eq!(doc["openapi"], "3.1.0");
        let routed: BTreeSet<(String, String)> = endpoints(&NodeConfig::default())
            .iter()
            .map(|e| (e.method.to_string(), e.path.to_string()))
            .collect();
        let documented = documented(&doc);
        let undocumented: Vec<_> = routed.difference(&documented).collect();
        let unrouted: Vec<_> = documented.difference(&routed).collect();
        assert!(
            undocumented.is_empty() && unrouted.is_empty(),
            "routes missing from node/openapi.json: {undocumented:?}; \
             operations of node/openapi.json the router does not have: {unrouted:?}"
        );
    }

    /// Every endpoint `node/API.md` names (`` `GET /v1/tx/<txid>` ``, `` `POST /v1/tx` ``, …) is
    /// an operation of the document, and every operation is named there.
    #[test]
    fn api_md_names_exactly_the_documented_endpoints() {
        let doc = document();
        let documented = documented(&doc);
        let matches = |method: &str, path: &str| -> Option<(String, String)> {
            let segments: Vec<&str> = path.split('/').collect();
            documented
                .iter()
                .find(|(m, p)| {
                    let ps: Vec<&str> = p.split('/').collect();
                    m == method
                        && ps.len() == segments.len()
                        && ps.iter().zip(&segments).all(|(d, s)| {
                            d == s
                                || (d.starts_with('{')
                                    && (s.starts_with('<') || s.starts_with('{') || !s.is_empty()))
                        })
                })
                .cloned()
        };
        let api_md = include_str!("../../API.md");
        let mut named = BTreeSet::new();
        for mention in api_md.split('`').skip(1).step_by(2) {
            let Some((method, path)) = mention.split_once(' ') else {
                continue;
            };
            if !["GET", "POST", "PUT", "DELETE", "PATCH"].contains(&method)
                || !path.starts_with('/')
            {
                continue;
            }
            let path = path.split('?').next().unwrap();
            let op = matches(method, path).unwrap_or_else(|| {
                panic!("API.md names `{method} {path}`, node/openapi.json does not")
            });
            named.insert(op);
        }
        let unnamed: Vec<_> = documented.difference(&named).collect();
        assert!(
            unnamed.is_empty(),
            "operations API.md does not name: {unnamed:?}"
        );
    }

    /// Every `$ref` of the document points at something it defines, and every path parameter
    /// `{name}` is declared by its operation.
    #[test]
    fn references_and_path_parameters_resolve() {
        let doc = document();
        fn refs(v: &Value, out: &mut Vec<String>) {
            match v {
                Value::Object(m) => {
                    if let Some(Value::String(r)) = m.get("$ref") {
                        out.push(r.clone());
                    }
                    m.values().for_each(|v| refs(v, out));
                }
                Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
                _ => {}
            }
        }
        let mut all = Vec::new();
        refs(&doc, &mut all);
        assert!(!all.is_empty());
        for r in all {
            let pointer = r
                .strip_prefix('#')
                .unwrap_or_else(|| panic!("`{r}` is not a local reference"));
            assert!(doc.pointer(pointer).is_some(), "`{r}` resolves to nothing");
        }
        for (path, item) in doc["paths"].as_object().unwrap() {
            let names: BTreeSet<&str> = path
                .split('/')
                .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
                .collect();
            for (method, op) in item.as_object().unwrap() {
                let declared: BTreeSet<&str> = op["parameters"]
                    .as_array()
                    .map(|ps| {
                        ps.iter()
                            .filter(|p| p["in"] == "path")
                            .map(|p| p["name"].as_str().unwrap())
                            .collect()
                    })
                    .unwrap_or_default();
                assert_eq!(declared, names, "{method} {path}: path parameters");
            }
        }
    }

    /// Every error code of `node/API.md`'s error table is in the document's `ErrorCode`, and
    /// the document names no code the table lacks; each code is answered by some operation.
    #[test]
    fn error_codes_match_api_md() {
        let api_md = include_str!("../../API.md");
        let mut table = BTreeSet::new();
        for line in api_md.lines().skip_while(|l| !l.starts_with("| code |")) {
            if !line.starts_with('|') {
                break;
            }
            let first = line.split('|').nth(1).unwrap_or("");
            for code in first.split('`').skip(1).step_by(2) {
                table.insert(code.to_string());
            }
        }
        assert!(
            table.len() > 10,
            "API.md's error table was not found: {table:?}"
        );
        let doc = document();
        let codes: BTreeSet<String> = doc["components"]["schemas"]["ErrorCode"]["enum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap().to_string())
            .collect();
        assert_eq!(
            codes, table,
            "ErrorCode of node/openapi.json vs API.md's table"
        );
        // Each code appears in an operation's error answer (as `const` or in an `enum` of a
        // `Code…` schema).
        let schemas = doc["components"]["schemas"].as_object().unwrap();
        let mut answered = BTreeSet::new();
        for (name, schema) in schemas {
            if !name.starts_with("Code") {
                continue;
            }
            let code = &schema["properties"]["error"]["properties"]["code"];
            if let Some(c) = code["const"].as_str() {
                answered.insert(c.to_string());
            }
            for c in code["enum"].as_array().into_iter().flatten() {
                answered.insert(c.as_str().unwrap().to_string());
            }
        }
        let text = OPENAPI_JSON;
        for name in schemas.keys().filter(|n| n.starts_with("Code")) {
            assert!(
                text.contains(&format!("\"#/components/schemas/{name}\"")),
                "{name} is used by no answer"
            );
        }
        assert_eq!(
            answered, table,
            "codes some operation answers vs API.md's table"
        );
    }
}
