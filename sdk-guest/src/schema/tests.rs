//! The schema format and validator: good and bad values of every type, ops, events and views.

use super::*;
use serde_json::json;

crate::schema! {
    /// A schema with every type.
    const ALL = "all";
    ops {
        "put" "Stores things." {
            s: string "any text",
            b: bool,
            n32: u32,
            n64: u64,
            i: i64,
            a: amount,
            who: address,
            h: hex,
            list: array(u32),
            obj: object { x: u32, y: string [optional] },
            m: map(bool),
            e: enum("x", "o"),
            whatever: any,
            maybe: amount [optional nullable] "absent, null or an amount",
        },
        "ping" {},
    }
    events {
        "all.put" "Something was stored." { by: address, what: array(object { k: string, v: any }) },
    }
    views {
        "one" "By id." { id: hex } => object { id: hex, owner: address [nullable] },
        "list" "Open ones." { open: string [optional] } => object { items: array(hex) },
    }
}

fn schema() -> Schema {
    Schema::parse(ALL).unwrap()
}

fn good_put() -> Value {
    json!({
        "kind": "put", "s": "", "b": true, "n32": 4294967295u64, "n64": 9007199254740991u64,
        "i": -9007199254740991i64, "a": "0", "who": "DAbc", "h": "00ff", "list": [1, 2],
        "obj": {"x": 1}, "m": {"k": false}, "e": "o", "whatever": [null, {}],
    })
}

/// `good_put` with `field` set to `value`.
fn put_with(field: &str, value: Value) -> Value {
    let mut op = good_put();
    op[field] = value;
    op
}

#[test]
fn the_macro_writes_compact_json_in_declaration_order() {
    assert!(ALL.starts_with(
        r#"{"schema_version":1,"module":"all","ops":[{"kind":"put","doc":"Stores things.","fields":{"s":{"type":"string","doc":"any text"},"b":{"type":"bool"}"#
    ));
    assert!(ALL.contains(r#""maybe":{"type":"amount","optional":true,"nullable":true,"doc":"absent, null or an amount"}"#));
    assert!(ALL.contains(r#""list":{"type":"array","items":{"type":"u32"}}"#));
    assert!(ALL.contains(r#""e":{"type":"enum","values":["x","o"]}"#));
    assert!(ALL.contains(r#"{"kind":"ping","fields":{}}"#));
    assert!(ALL.ends_with(
        r#"{"name":"list","doc":"Open ones.","query":{"open":{"type":"string","optional":true}},"answer":{"type":"object","fields":{"items":{"type":"array","items":{"type":"hex"}}}}}]}"#
    ));
    assert!(!ALL.contains(' ') || ALL.contains("Stores things."));
    let s = schema();
    assert_eq!(s.module, "all");
    assert_eq!(s.ops.len(), 2);
    assert_eq!(s.events[0].kind, "all.put");
    assert_eq!(s.views[1].name, "list");
}

#[test]
fn good_values_of_every_type_pass() {
    let s = schema();
    s.check_op(&good_put()).unwrap();
    s.check_op(&put_with("maybe", json!(null))).unwrap();
    s.check_op(&put_with("maybe", json!("12"))).unwrap();
    s.check_op(&put_with("obj", json!({"x": 0, "y": "z"})))
        .unwrap();
    s.check_op(&put_with("h", json!(""))).unwrap();
    s.check_op(&put_with("list", json!([]))).unwrap();
    s.check_op(&put_with("whatever", json!(null))).unwrap();
    s.check_op(&put_with("who", json!("module:tictactoe")))
        .unwrap();
    s.check_op(&json!({"kind": "ping"})).unwrap();
}

#[test]
fn bad_values_of_every_type_name_the_field() {
    let s = schema();
    let cases = [
        ("s", json!(1), "expected string"),
        ("b", json!("true"), "expected bool"),
        ("n32", json!(4294967296u64), "expected u32"),
        ("n32", json!(-1), "expected u32"),
        ("n32", json!(1.5), "expected u32"),
        ("n32", json!("1"), "expected u32"),
        ("n64", json!(9007199254740992u64), "expected u64"),
        ("i", json!(-9007199254740992i64), "expected i64"),
        ("a", json!(100), "expected amount"),
        ("a", json!("01"), "expected amount"),
        ("a", json!("-1"), "expected amount"),
        ("a", json!("1.5"), "expected amount"),
        ("who", json!(""), "expected address"),
        ("who", json!("a b"), "expected address"),
        ("who", json!("x".repeat(129)), "expected address"),
        ("h", json!("ABCD"), "expected hex"),
        ("h", json!("abc"), "expected hex"),
        ("list", json!(["1"]), "expected u32"),
        ("list", json!({}), "expected array"),
        ("obj", json!({"x": 1, "z": 2}), "unknown field"),
        ("obj", json!({"y": "q"}), "missing field"),
        ("obj", json!([]), "expected object"),
        ("m", json!({"k": 1}), "expected bool"),
        ("m", json!([]), "expected map"),
        ("e", json!("y"), "expected one of"),
        ("e", json!(null), "expected enum"),
        ("s", json!(null), "expected string"),
    ];
    for (field, value, problem) in cases {
        let err = s.check_op(&put_with(field, value.clone())).unwrap_err();
        assert!(
            err.at.starts_with(&format!("op put: field {field}")),
            "{field} = {value}: {err}"
        );
        assert!(err.problem.contains(problem), "{field} = {value}: {err}");
    }
    let err = s.check_op(&put_with("list", json!([1, "x"]))).unwrap_err();
    assert_eq!(err.at, "op put: field list[1]");
    let err = s
        .check_op(&put_with("obj", json!({"x": true})))
        .unwrap_err();
    assert_eq!(err.at, "op put: field obj.x");
}

#[test]
fn ops_are_strict_about_kinds_and_fields() {
    let s = schema();
    let err = s.check_op(&json!({"kind": "steal"})).unwrap_err();
    assert_eq!(err.to_string(), "op steal: unknown op kind");
    let err = s.check_op(&json!({"s": "x"})).unwrap_err();
    assert_eq!(err.to_string(), "op: missing string field `kind`");
    let err = s.check_op(&json!("put")).unwrap_err();
    assert_eq!(err.at, "op");
    let err = s
        .check_op(&json!({"kind": "ping", "extra": 1}))
        .unwrap_err();
    assert_eq!(err.to_string(), "op ping: field extra: unknown field");
    let mut op = good_put();
    op.as_object_mut().unwrap().remove("who");
    let err = s.check_op(&op).unwrap_err();
    assert_eq!(err.to_string(), "op put: field who: missing field");
    let mut op = good_put();
    op.as_object_mut().unwrap().remove("maybe");
    s.check_op(&op).unwrap();
}

#[test]
fn events_are_checked_by_kind() {
    let s = schema();
    s.check_event(
        "all.put",
        &json!({"by": "bob", "what": [{"k": "a", "v": 3}]}),
    )
    .unwrap();
    let err = s
        .check_event("all.put", &json!({"by": "bob", "what": [{"k": 1, "v": 3}]}))
        .unwrap_err();
    assert_eq!(err.at, "event all.put: field what[0].k");
    let err = s.check_event("all.gone", &json!({})).unwrap_err();
    assert_eq!(err.to_string(), "event all.gone: unknown event kind");
    let err = s.check_event("all.put", &json!({"by": "bob"})).unwrap_err();
    assert_eq!(err.to_string(), "event all.put: field what: missing field");
}

#[test]
fn views_are_selected_by_query_and_their_answers_checked() {
    let s = schema();
    let q = |pairs: &[(&str, &str)]| -> crate::Query {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    assert_eq!(s.view_for(&q(&[("id", "ab")])).unwrap().name, "one");
    assert_eq!(s.view_for(&q(&[])).unwrap().name, "list");
    assert_eq!(s.view_for(&q(&[("open", "1")])).unwrap().name, "list");
    assert!(s.view_for(&q(&[("id", "XYZ")])).is_none());
    assert!(s.view_for(&q(&[("who", "x")])).is_none());
    s.check_view(
        None,
        &q(&[("id", "ab")]),
        &json!({"id": "ab", "owner": null}),
    )
    .unwrap();
    let err = s
        .check_view(None, &q(&[("id", "ab")]), &json!({"id": "ab"}))
        .unwrap_err();
    assert_eq!(err.to_string(), "view one answer.owner: missing field");
    let err = s
        .check_view(None, &q(&[("x", "1")]), &json!({}))
        .unwrap_err();
    assert_eq!(err.at, "view");
    s.check_view(Some("list"), &q(&[]), &json!({"items": ["00"]}))
        .unwrap();
    let err = s.check_view(Some("nope"), &q(&[]), &json!({})).unwrap_err();
    assert_eq!(err.to_string(), "view nope: unknown view");
    let err = s
        .check_view(Some("one"), &q(&[]), &json!({"id": "ab", "owner": null}))
        .unwrap_err();
    assert_eq!(err.to_string(), "view one query: field id: missing field");
}

#[test]
fn malformed_schemas_are_refused() {
    let base = |ops: &str| {
        format!(r#"{{"schema_version":1,"module":"m","ops":[{ops}],"events":[],"views":[]}}"#)
    };
    Schema::parse(&base("")).unwrap();
    let bad = [
        "not json".to_string(),
        "[]".to_string(),
        r#"{"schema_version":2,"module":"m","ops":[],"events":[],"views":[]}"#.to_string(),
        r#"{"schema_version":1,"module":"m","ops":[],"events":[]}"#.to_string(),
        r#"{"schema_version":1,"module":"m","ops":[],"events":[],"views":[],"x":1}"#.to_string(),
        base(r#"{"kind":"a","fields":{"kind":{"type":"string"}}}"#),
        base(r#"{"kind":"a","fields":{}},{"kind":"a","fields":{}}"#),
        base(r#"{"kind":"a"}"#),
        base(r#"{"kind":"a","fields":{"x":{"type":"float"}}}"#),
        base(r#"{"kind":"a","fields":{"x":{"type":"array"}}}"#),
        base(r#"{"kind":"a","fields":{"x":{"type":"enum","values":[]}}}"#),
        base(r#"{"kind":"a","fields":{"x":{"type":"enum","values":["a","a"]}}}"#),
        base(r#"{"kind":"a","fields":{"x":{"type":"u32","optional":"yes"}}}"#),
        base(r#"{"kind":"a","fields":{"x":{"type":"u32","extra":1}}}"#),
        base(r#"{"kind":"a","fields":{"x":"u32"}}"#),
        base(r#"{"kind":"a","doc":1,"fields":{}}"#),
    ];
    for text in bad {
        assert!(Schema::parse(&text).is_err(), "accepted {text}");
    }
    let err = Schema::parse(&base(r#"{"kind":"a","fields":{"x":{"type":"float"}}}"#)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid module schema: ops[0].fields.x: unknown type `float`"
    );
}

#[test]
fn pretty_keeps_key_order() {
    let text = r#"{"b":1,"a":[],"c":{"z":"x,{","y":[1,2]},"d":{}}"#;
    let p = pretty(text);
    assert_eq!(
        p,
        "{\n  \"b\": 1,\n  \"a\": [],\n  \"c\": {\n    \"z\": \"x,{\",\n    \"y\": [\n      1,\n      2\n    ]\n  },\n  \"d\": {}\n}"
    );
    let back: Value = serde_json::from_str(&p).unwrap();
    assert_eq!(back, serde_json::from_str::<Value>(text).unwrap());
}

#[test]
fn section_bytes_copies_the_text() {
    const T: &str = "{\"a\":1}";
    const B: [u8; T.len()] = section_bytes::<{ T.len() }>(T);
    assert_eq!(&B, T.as_bytes());
}
