//! Views (read-only, JSON or errors) and end of block.

use super::*;

#[test]
fn views_are_read_only() {
    let data = r#"(data (i32.const 1024) "alice") (data (i32.const 1030) "GOLD") (data (i32.const 1040) "{}")"#;
    let writes = [
        "(call $put (i32.const 1024) (i32.const 1) (i32.const 1024) (i32.const 1)) (i32.const 0)",
        "(call $delete (i32.const 1024) (i32.const 1)) (i32.const 0)",
        "(drop (call $escrow_in (i32.const 1024) (i32.const 5) (i32.const 1030) (i32.const 4) (i64.const 1) (i64.const 0))) (i32.const 0)",
        "(drop (call $escrow_out (i32.const 1024) (i32.const 5) (i32.const 1030) (i32.const 4) (i64.const 1) (i64.const 0))) (i32.const 0)",
        "(drop (call $mint (i32.const 1024) (i32.const 5) (i32.const 1030) (i32.const 4) (i64.const 1) (i64.const 0))) (i32.const 0)",
    ];
    for body in writes {
        let module = load("viewer", &guest(data, "(i32.const 0)", body));
        let (result, _) = run_view(&module, &MemState::new(), &Query::new()).unwrap();
        assert_eq!(
            result.unwrap_err().to_string(),
            "internal: state is read-only in a view",
            "{body}"
        );
    }
}

#[test]
fn views_read_state_and_answer_json_or_errors() {
    // The view outputs the query it was given, or `read_raw` of a key, or an error object.
    let data = r#"(data (i32.const 1024) "m/viewer/x") (data (i32.const 1040) "{\"code\":\"not_found\",\"message\":\"game 1\"}")
                  (data (i32.const 1100) "x")"#;
    let echo = "(call $output (local.get $qp) (local.get $ql)) (i32.const 0)";
    let module = load("viewer", &guest(data, "(i32.const 0)", echo));
    let mut query = Query::new();
    query.insert("id".into(), "80566b04265ced78".into());
    assert_eq!(
        run_view(&module, &MemState::new(), &query).unwrap().0,
        Ok(json!({ "id": "80566b04265ced78" }))
    );

    let mut state = MemState::new();
    state.map.insert("m/viewer/x".into(), br#"[1,2]"#.to_vec());
    let raw = "(call $output (i32.const 2000) (i32.wrap_i64 (call $read_raw (i32.const 1024) (i32.const 10) (i32.const 2000) (i32.const 100)))) (i32.const 0)";
    assert_eq!(
        run_view(
            &load("viewer", &guest(data, "(i32.const 0)", raw)),
            &state,
            &query
        )
        .unwrap()
        .0,
        Ok(json!([1, 2]))
    );
    let get = "(call $output (i32.const 2000) (i32.wrap_i64 (call $get (i32.const 1100) (i32.const 1) (i32.const 2000) (i32.const 100)))) (i32.const 0)";
    assert_eq!(
        run_view(
            &load("viewer", &guest(data, "(i32.const 0)", get)),
            &state,
            &query
        )
        .unwrap()
        .0,
        Ok(json!([1, 2]))
    );

    let error = "(call $output (i32.const 1040) (i32.const 39)) (i32.const 1)";
    let (result, _) = run_view(
        &load("viewer", &guest(data, "(i32.const 0)", error)),
        &state,
        &query,
    )
    .unwrap();
    assert_eq!(result.unwrap_err().to_string(), "not found: game 1");

    for bad in [
        "(i32.const 0)",
        "(call $output (i32.const 1100) (i32.const 1)) (i32.const 0)",
        "(i32.const 3)",
    ] {
        let (result, _) = run_view(
            &load("viewer", &guest(data, "(i32.const 0)", bad)),
            &state,
            &query,
        )
        .unwrap();
        assert_eq!(
            result.unwrap_err().to_string(),
            "internal: malformed module output",
            "{bad}"
        );
    }
}

#[test]
fn end_block_keeps_writes_on_ok_and_is_optional() {
    let counter = load("counter", &counter_wat());
    let out = execute_end_block(&counter, &MemState::new(), &env()).unwrap();
    assert_eq!((out.result, out.fuel_used), (Ok(()), 0));

    let ticker = |code: &str| {
        format!(
            r#"(module
                 (import "gamechain_v1" "put" (func $put (param i32 i32 i32 i32)))
                 (import "gamechain_v1" "txid" (func $txid (param i32 i32) (result i32)))
                 (memory (export "memory") 1)
                 (data (i32.const 16) "tick")
                 (func (export "gc_abi_version") (result i32) (i32.const 1))
                 (func (export "gc_alloc") (param i32) (result i32) (i32.const 4096))
                 (func (export "gc_apply") (param i32 i32 i32 i32) (result i32) (i32.const 0))
                 (func (export "gc_view") (param i32 i32) (result i32) (i32.const 0))
                 (func (export "gc_end_block") (result i32)
                   (call $put (i32.const 16) (i32.const 4) (i32.const 100) (call $txid (i32.const 100) (i32.const 64)))
                   (call $put (i32.const 16) (i32.const 1) (i32.const 16) (i32.const 4))
                   ({code})))"#
        )
    };
    let ok = execute_end_block(
        &load("ticker", &ticker("i32.const 0")),
        &MemState::new(),
        &env(),
    )
    .unwrap();
    assert_eq!(ok.result, Ok(()));
    assert_eq!(
        ok.writes["m/ticker/tick"],
        Some(Vec::new()),
        "txid is empty at end of block"
    );
    assert_eq!(ok.writes["m/ticker/t"], Some(b"tick".to_vec()));
    let failed = execute_end_block(
        &load("ticker", &ticker("i32.const 7")),
        &MemState::new(),
        &env(),
    )
    .unwrap();
    assert_eq!(err_text(&failed), "internal: malformed module output");
    assert!(failed.writes.is_empty());
}
