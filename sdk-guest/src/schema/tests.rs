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

#[test]
fn enforce_op_lets_the_module_answer_first_and_refuses_what_it_accepts_against_the_schema() {
    let s = schema();
    let ran = std::cell::Cell::new(0);
    let accept = || {
        ran.set(ran.get() + 1);
        Ok(())
    };
    let refuse = || {
        ran.set(ran.get() + 1);
        Err(ActionError::invalid("the module's own text"))
    };
    // A matching op runs as it is, whatever it answers.
    s.enforce_op(&good_put(), accept).unwrap();
    assert_eq!(
        s.enforce_op(&good_put(), refuse),
        Err(ActionError::invalid("the module's own text"))
    );
    assert_eq!(ran.get(), 2);
    // Any mismatch (an undeclared field too): the module's refusal stands; its acceptance
    // does not.
    for op in [
        json!({"kind": "ping", "extra": 1}),
        put_with("obj", json!({"x": 1, "z": 2})),
        put_with("n32", json!("1")),
        json!({"kind": "steal"}),
        json!({"s": 1}),
        json!({"kind": "put"}),
    ] {
        assert_eq!(
            s.enforce_op(&op, refuse),
            Err(ActionError::invalid("the module's own text")),
            "{op}"
        );
        assert_eq!(
            s.enforce_op(&op, accept),
            Err(ActionError::invalid(
                s.check_op(&op).unwrap_err().to_string()
            )),
            "{op}"
        );
    }
    assert_eq!(ran.get(), 2 + 2 * 6, "the module ran every time");
    let refused = |op: Value| s.enforce_op(&op, || Ok(())).unwrap_err().to_string();
    assert_eq!(
        refused(json!({"kind": "ping", "extra": 1})),
        "invalid: op ping: field extra: unknown field"
    );
    assert_eq!(
        refused(put_with("obj", json!({"x": 1, "z": 2}))),
        "invalid: op put: field obj.z: unknown field"
    );
    assert_eq!(
        refused(put_with("n32", json!("1"))),
        "invalid: op put: field n32: expected u32, got \"1\""
    );
}

#[test]
fn the_op_text_lists_each_op_s_kind_and_fields_without_docs() {
    let text = op_text(ALL);
    assert_eq!(text.len(), op_text_len(ALL));
    assert_eq!(
        text,
        concat!(
            r#""put"476{"s":{"type":"string"},"b":{"type":"bool"},"n32":{"type":"u32"},"n64":{"type":"u64"},"i":{"type":"i64"},"#,
            r#""a":{"type":"amount"},"who":{"type":"address"},"h":{"type":"hex"},"list":{"type":"array","items":{"type":"u32"}},"#,
            r#""obj":{"type":"object","fields":{"x":{"type":"u32"},"y":{"type":"string","optional":true}}},"m":{"type":"map","values":{"type":"bool"}},"#,
            r#""e":{"type":"enum","values":["x","o"]},"whatever":{"type":"any"},"maybe":{"type":"amount","optional":true,"nullable":true}}"#,
            r#""ping"2{}"#
        )
    );
    // Computed at compile time, as the export glue does.
    const LEN: usize = op_text_len(ALL);
    const BYTES: [u8; LEN] = op_text_bytes::<LEN>(ALL);
    assert_eq!(op_text_str(&BYTES), text);
    // Any JSON layout and key order; a field named `doc` (a type, not a string) stays; a
    // repeated key counts last, as in `Schema::parse`.
    let spaced = "{ \"schema_version\" : 1 ,\n \"module\":\"m\", \"ops\":[], \"ops\" : [ {\"fields\":{ \"doc\" : {\"type\":\"string\",\"doc\":\"d\"}, \"n\":{\"type\":\"enum\",\"values\":[\"p\", \"q\"]} }, \"doc\" : \"x \\\" y\", \"kind\":\"a\\u0062\"},\n {\"kind\":\"c\",\"fields\":{}} ],\n \"events\":[{\"kind\":\"e\",\"fields\":{}}], \"views\":[] }\n";
    let text = op_text(spaced);
    assert_eq!(
        text,
        r#""a\u0062"64{"doc":{"type":"string"},"n":{"type":"enum","values":["p","q"]}}"c"2{}"#
    );
    let schema = Schema::parse(spaced).unwrap();
    let op = json!({"kind": "ab", "doc": "x", "n": "q"});
    schema.check_op(&op).unwrap();
    let one = Schema::for_op(&text, &op).unwrap();
    assert_eq!(
        (
            &one.ops[0].kind,
            &one.ops[0].fields,
            one.ops[0].doc.as_str()
        ),
        (
            &schema.ops[0].kind,
            &undocumented(&schema.ops[0].fields),
            ""
        )
    );
}

#[test]
fn an_op_is_checked_by_its_kind_s_declaration_alone_as_by_the_whole_schema() {
    let full = schema();
    let text = op_text(ALL);
    let ops = [
        good_put(),
        put_with("n32", json!("1")),
        put_with("obj", json!({"x": 1, "z": 2})),
        put_with("maybe", json!(null)),
        json!({"kind": "ping"}),
        json!({"kind": "ping", "extra": 1}),
        json!({"kind": "steal"}),
        json!({"kind": 7}),
        json!({"s": 1}),
        json!("put"),
        json!(null),
    ];
    for op in ops {
        let one = Schema::for_op(&text, &op).unwrap();
        assert!(one.ops.len() <= 1 && one.events.is_empty() && one.views.is_empty());
        assert_eq!(one.check_op(&op), full.check_op(&op), "{op}");
    }
    let put = Schema::for_op(&text, &good_put()).unwrap();
    assert_eq!(put.ops[0].fields, undocumented(&full.ops[0].fields));
}

/// `fields` with every doc removed, at any depth.
fn undocumented(fields: &[Field]) -> Vec<Field> {
    fn ty(t: &Type) -> Type {
        let kind = match &t.kind {
            TypeKind::Array(items) => TypeKind::Array(Box::new(ty(items))),
            TypeKind::Map(values) => TypeKind::Map(Box::new(ty(values))),
            TypeKind::Object(fields) => TypeKind::Object(undocumented(fields)),
            other => other.clone(),
        };
        Type {
            kind,
            doc: String::new(),
            ..t.clone()
        }
    }
    fields
        .iter()
        .map(|f| Field {
            name: f.name.clone(),
            ty: ty(&f.ty),
        })
        .collect()
}

/// `Json` as serde_json's `Value` (keys sorted, as `Value` keeps them).
fn to_value(j: &json::Json) -> Value {
    use json::Json;
    match j {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => Value::Number(n.clone()),
        Json::String(s) => Value::String(s.clone()),
        Json::Array(items) => Value::Array(items.iter().map(to_value).collect()),
        Json::Object(members) => Value::Object(
            members
                .iter()
                .map(|(k, v)| (k.clone(), to_value(v)))
                .collect(),
        ),
    }
}

#[test]
fn schema_texts_read_in_document_order_parse_exactly_as_serde_json_values_do() {
    // Load rule 9 depends on which texts parse: the ordered reading must accept and refuse
    // exactly what `Value` does, and mean the same.
    let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
    let texts = [
        ALL.to_string(),
        r#"{"b":1,"a":2,"b":3}"#.to_string(),
        r#"{"n":[1,-1,1.0,1e3,18446744073709551615,-9223372036854775808,0.1]}"#.to_string(),
        r#"{"$serde_json::private::RawValue":"{\"z\":1,\"a\":[true]}"}"#.to_string(),
        r#"{"$serde_json::private::RawValue":"{\"z\":1"}"#.to_string(),
        r#"{"$serde_json::private::RawValue":{"z":1}}"#.to_string(),
        r#"{"$serde_json::private::RawValue":"1","b":2}"#.to_string(),
        r#"{"a":1,"$serde_json::private::RawValue":"2"}"#.to_string(),
        r#"{"s":"\ud83d\ude00 \u00e9 \"q\""}"#.to_string(),
        r#"{"s":"\ud800"}"#.to_string(),
        "{\"a\":1} x".to_string(),
        "{\"a\":1,}".to_string(),
        " \n{}\t".to_string(),
        "1e400".to_string(),
        deep,
    ];
    for text in &texts {
        let ordered = json::Json::parse(text);
        let value = serde_json::from_str::<Value>(text);
        match (&ordered, &value) {
            (Ok(o), Ok(v)) => assert_eq!(&to_value(o), v, "{text}"),
            (Err(_), Err(_)) => {}
            _ => panic!("{text}: ordered {ordered:?}, value {value:?}"),
        }
    }
    // A repeated key keeps its first place and its last value.
    assert_eq!(
        json::Json::parse(r#"{"b":1,"a":2,"b":3}"#).unwrap(),
        json::Json::Object(vec![
            ("b".into(), json::Json::Number(3.into())),
            ("a".into(), json::Json::Number(2.into()))
        ])
    );
    // A schema written inside a raw-value object parses, as serde_json reads it.
    let wrapped = serde_json::to_string(&json!({ "$serde_json::private::RawValue": ALL })).unwrap();
    assert_eq!(Schema::parse(&wrapped).unwrap(), schema());
    let version = ALL.replacen(r#""schema_version":1"#, r#""schema_version":1.0"#, 1);
    assert!(Schema::parse(&version).is_err());
}

#[test]
fn declaration_order_is_kept_and_missing_fields_are_named_in_it() {
    let s = Schema::parse(
        r#"{"schema_version":1,"module":"m","ops":[{"kind":"k","fields":{"zeta":{"type":"u32"},"alpha":{"type":"object","fields":{"y":{"type":"u32"},"b":{"type":"u32"}}}}}],"events":[],"views":[{"name":"v","query":{"q":{"type":"string"},"a":{"type":"string","optional":true}},"answer":{"type":"any"}}]}"#,
    )
    .unwrap();
    let names = |fields: &[Field]| fields.iter().map(|f| f.name.clone()).collect::<Vec<_>>();
    assert_eq!(names(&s.ops[0].fields), ["zeta", "alpha"]);
    let TypeKind::Object(inner) = &s.ops[0].fields[1].ty.kind else {
        panic!("alpha is an object")
    };
    assert_eq!(names(inner), ["y", "b"]);
    assert_eq!(names(&s.views[0].query), ["q", "a"]);
    assert_eq!(
        field(&s.ops[0].fields, "alpha").map(|t| t.kind.name()),
        Some("object")
    );
    let err = s.check_op(&json!({"kind": "k"})).unwrap_err();
    assert_eq!(err.to_string(), "op k: field zeta: missing field");
    let err = s
        .check_op(&json!({"kind": "k", "zeta": 1, "alpha": {}}))
        .unwrap_err();
    assert_eq!(err.to_string(), "op k: field alpha.y: missing field");
}

#[test]
fn types_keep_their_docs() {
    let s = schema();
    assert_eq!(s.ops[0].doc, "Stores things.");
    assert_eq!(field(&s.ops[0].fields, "s").unwrap().doc, "any text");
    assert_eq!(
        field(&s.ops[0].fields, "maybe").unwrap().doc,
        "absent, null or an amount"
    );
    assert_eq!(field(&s.ops[0].fields, "b").unwrap().doc, "");
}

#[test]
fn the_relaxed_reading_takes_omitted_lists_as_empty_and_nothing_else() {
    let empty = Schema::parse_relaxed(r#"{"schema_version":1,"module":"empty"}"#).unwrap();
    assert!(empty.ops.is_empty() && empty.events.is_empty() && empty.views.is_empty());
    assert!(Schema::parse(r#"{"schema_version":1,"module":"empty"}"#).is_err());
    let s = Schema::parse_relaxed(
        r#"{"schema_version":1,"module":"m","ops":[{"kind":"k"}],"views":[{"name":"v","answer":{"type":"any"}}]}"#,
    )
    .unwrap();
    assert!(s.ops[0].fields.is_empty() && s.views[0].query.is_empty());
    for strict in [
        r#"{"schema_version":1,"module":"m","ops":{}}"#,
        r#"{"schema_version":1,"module":"m","extra":[]}"#,
        r#"{"schema_version":1,"module":"m","ops":[{"kind":"k","fields":{"c":{"type":"u8"}}}]}"#,
        r#"{"schema_version":1,"module":"m","views":[{"name":"v"}]}"#,
        r#"{"schema_version":2,"module":"m"}"#,
        r#"{"module":"m"}"#,
    ] {
        assert!(Schema::parse_relaxed(strict).is_err(), "{strict}");
    }
}
