//! Context imports, state scoping under the module's prefix, scans, and the bank.

use super::*;

#[test]
fn context_imports_report_the_block_and_transaction() {
    // Writes each context value under its own key.
    let body = r#"
      (call $put (i32.const 1100) (i32.const 1) (i32.const 2000) (call $txid (i32.const 2000) (i32.const 64)))
      (call $put (i32.const 1101) (i32.const 1) (i32.const 2100) (call $module_id (i32.const 2100) (i32.const 64)))
      (call $put (i32.const 1102) (i32.const 1) (i32.const 2200) (call $sequencer (i32.const 2200) (i32.const 64)))
      (call $put (i32.const 1103) (i32.const 1) (i32.const 2300) (call $checkpoint (i32.const 2300) (i32.const 100)))
      (i64.store (i32.const 2400) (call $height))
      (i64.store (i32.const 2408) (call $block_time_ms))
      (call $put (i32.const 1104) (i32.const 1) (i32.const 2400) (i32.const 16))
      (call $public_random (i32.const 2500))
      (call $public_random (i32.const 2532))
      (call $put (i32.const 1105) (i32.const 1) (i32.const 2500) (i32.const 64))
      ;; A buffer too small: the length comes back, nothing is written.
      (i64.store (i32.const 2600) (i64.extend_i32_s (call $txid (i32.const 2608) (i32.const 10))))
      (call $put (i32.const 1106) (i32.const 1) (i32.const 2600) (i32.const 10))
      (i32.const 0)"#;
    let module = load(
        "ctx",
        &apply_guest(r#"(data (i32.const 1100) "tmsckrx")"#, body),
    );
    let out = apply(&module, &MemState::new());
    assert_eq!(out.result, Ok(()));
    let get = |k: &str| {
        out.writes
            .get(&format!("m/ctx/{k}"))
            .cloned()
            .flatten()
            .unwrap()
    };
    assert_eq!(get("t"), TXID.as_bytes());
    assert_eq!(get("m"), b"ctx");
    assert_eq!(get("s"), b"seq1");
    assert_eq!(get("c"), br#"{"hash":"abcd","height":42}"#);
    let mut hb = 7u64.to_le_bytes().to_vec();
    hb.extend_from_slice(&1_700_000_000_123u64.to_le_bytes());
    assert_eq!(get("k"), hb);
    let mut random = gamechain_sdk::public_random(TXID, 7, 0).to_vec();
    random.extend_from_slice(&gamechain_sdk::public_random(TXID, 7, 1));
    assert_eq!(get("r"), random);
    let mut short = 64i64.to_le_bytes().to_vec();
    short.extend_from_slice(&[0, 0]);
    assert_eq!(get("x"), short);
}

#[test]
fn writes_land_only_under_the_modules_own_prefix() {
    let data = r#"(data (i32.const 1024) "../x")
                  (data (i32.const 1030) "/x")
                  (data (i32.const 1040) "m/other/k")
                  (data (i32.const 1050) "bal/alice/GOLD")"#;
    let body = r#"
      (call $put (i32.const 1024) (i32.const 4) (i32.const 1024) (i32.const 1))
      (call $put (i32.const 1030) (i32.const 2) (i32.const 1024) (i32.const 1))
      ;; Read another module's key (allowed) and write it back: it lands in our own prefix.
      (call $put (i32.const 1040) (i32.const 9) (i32.const 2000)
        (i32.wrap_i64 (call $read_raw (i32.const 1040) (i32.const 9) (i32.const 2000) (i32.const 100))))
      (call $put (i32.const 1050) (i32.const 14) (i32.const 1024) (i32.const 1))
      (call $delete (i32.const 1040) (i32.const 9))
      (i32.const 0)"#;
    let module = load("scoped", &apply_guest(data, body));
    let mut state = MemState::new();
    state.map.insert("m/other/k".into(), b"theirs".to_vec());
    let out = apply(&module, &state);
    assert_eq!(out.result, Ok(()));
    let keys: Vec<&str> = out.writes.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "m/scoped/../x",
            "m/scoped//x",
            "m/scoped/bal/alice/GOLD",
            "m/scoped/m/other/k"
        ]
    );
    assert_eq!(
        out.writes["m/scoped/m/other/k"], None,
        "deleted again, in our own prefix"
    );
    assert!(out.writes.keys().all(|k| k.starts_with("m/scoped/")));
    // The read itself saw the other module's value: run without the delete.
    let module = load(
        "scoped",
        &apply_guest(
            data,
            &body.replace("(call $delete (i32.const 1040) (i32.const 9))", ""),
        ),
    );
    assert_eq!(
        apply(&module, &state).writes["m/scoped/m/other/k"],
        Some(b"theirs".to_vec())
    );
}

#[test]
fn scans_return_borsh_records_within_the_module() {
    // scan("a/", after "a/1", limit 2) then scan_raw("m/sc/a/", none, 10); outputs go to keys o1, o2.
    let data = r#"(data (i32.const 1024) "a/") (data (i32.const 1030) "a/1") (data (i32.const 1040) "m/sc/a/")
                  (data (i32.const 1050) "o1o2")"#;
    let body = r#"
      (call $put (i32.const 1050) (i32.const 2) (i32.const 2000)
        (i32.wrap_i64 (call $scan (i32.const 1024) (i32.const 2) (i32.const 1030) (i32.const 3) (i32.const 2) (i32.const 2000) (i32.const 1000))))
      (call $put (i32.const 1052) (i32.const 2) (i32.const 3000)
        (i32.wrap_i64 (call $scan_raw (i32.const 1040) (i32.const 7) (i32.const 0) (i32.const -1) (i32.const 10) (i32.const 3000) (i32.const 1000))))
      (i32.const 0)"#;
    let module = load("sc", &apply_guest(data, body));
    let mut state = MemState::new();
    for (k, v) in [
        ("m/sc/a/1", "x"),
        ("m/sc/a/2", "yy"),
        ("m/sc/a/3", "z"),
        ("m/sc/a/4", "w"),
        ("m/sc/b", "-"),
        ("m/sd/a/1", "-"),
    ] {
        state.map.insert(k.into(), v.as_bytes().to_vec());
    }
    let out = apply(&module, &state);
    assert_eq!(out.result, Ok(()));
    let record = |entries: &[(&str, &str)]| {
        let mut b = (entries.len() as u32).to_le_bytes().to_vec();
        for (k, v) in entries {
            b.extend_from_slice(&(k.len() as u32).to_le_bytes());
            b.extend_from_slice(k.as_bytes());
            b.extend_from_slice(&(v.len() as u32).to_le_bytes());
            b.extend_from_slice(v.as_bytes());
        }
        Some(b)
    };
    assert_eq!(
        out.writes["m/sc/o1"],
        record(&[("a/2", "yy"), ("a/3", "z")])
    );
    assert_eq!(
        out.writes["m/sc/o2"],
        record(&[
            ("m/sc/a/1", "x"),
            ("m/sc/a/2", "yy"),
            ("m/sc/a/3", "z"),
            ("m/sc/a/4", "w")
        ])
    );
}

#[test]
fn escrow_out_cannot_spend_more_than_the_modules_escrow() {
    let data = r#"(data (i32.const 1024) "alice") (data (i32.const 1030) "GOLD")"#;
    let body = r#"
      (if (result i32) (call $escrow_out (i32.const 1024) (i32.const 5) (i32.const 1030) (i32.const 4) (i64.const 100) (i64.const 0))
        (then (call $output (i32.const 2000) (call $last_error (i32.const 2000) (i32.const 500))) (i32.const 1))
        (else (i32.const 0)))"#;
    let module = load("esc", &apply_guest(data, body));
    let mut state = MemState::new();
    state
        .map
        .insert("bal/module:esc/GOLD".into(), b"5".to_vec());
    state
        .map
        .insert("bal/module:other/GOLD".into(), b"1000".to_vec());
    let out = apply(&module, &state);
    assert_eq!(err_text(&out), "insufficient GOLD: need 100, have 5");
    assert!(out.writes.is_empty());

    // 5 is fine, and moves from the module's own escrow only.
    let module = load(
        "esc",
        &apply_guest(data, &body.replace("(i64.const 100)", "(i64.const 5)")),
    );
    let out = apply(&module, &state);
    assert_eq!(out.result, Ok(()));
    let keys: Vec<&str> = out.writes.keys().map(String::as_str).collect();
    assert_eq!(keys, ["bal/alice/GOLD", "bal/module:esc/GOLD"]);
    assert_eq!(out.writes["bal/alice/GOLD"], Some(b"5".to_vec()));
    assert_eq!(out.writes["bal/module:esc/GOLD"], None);
}

#[test]
fn bank_calls_follow_the_ledger() {
    // escrow_in from the sender, then balance of the escrow as 16 LE bytes under key "b".
    let data = r#"(data (i32.const 1024) "alice") (data (i32.const 1030) "GOLD") (data (i32.const 1040) "module:bank")
                  (data (i32.const 1060) "b") (data (i32.const 1070) "TOK") (data (i32.const 1080) "Token")"#;
    let body = r#"
      (if (call $escrow_in (i32.const 1024) (i32.const 5) (i32.const 1030) (i32.const 4) (i64.const 30) (i64.const 0))
        (then (return (i32.const 9))))
      (call $balance (i32.const 1040) (i32.const 11) (i32.const 1030) (i32.const 4) (i32.const 2000))
      (call $put (i32.const 1060) (i32.const 1) (i32.const 2000) (i32.const 16))
      (if (call $create_token (i32.const 1070) (i32.const 3) (i32.const 1080) (i32.const 5) (i32.const 2) (i32.const 1) (i64.const 1000) (i64.const 0))
        (then (return (i32.const 9))))
      (if (call $mint (i32.const 1024) (i32.const 5) (i32.const 1070) (i32.const 3) (i64.const 700) (i64.const 0))
        (then (return (i32.const 9))))
      (if (call $burn (i32.const 1024) (i32.const 5) (i32.const 1070) (i32.const 3) (i64.const 200) (i64.const 0))
        (then (return (i32.const 9))))
      ;; Past the max supply of 1000: fails with the ledger's error.
      (if (result i32) (call $mint (i32.const 1024) (i32.const 5) (i32.const 1070) (i32.const 3) (i64.const 501) (i64.const 0))
        (then (call $output (i32.const 3000) (call $last_error (i32.const 3000) (i32.const 500))) (i32.const 1))
        (else (i32.const 0)))"#;
    let module = load("bank", &apply_guest(data, body));
    let mut state = MemState::new();
    state.map.insert("bal/alice/GOLD".into(), b"100".to_vec());
    let out = apply(&module, &state);
    assert_eq!(
        err_text(&out),
        "invalid: minting 501 would exceed the max supply of TOK"
    );

    let module = load(
        "bank",
        &apply_guest(data, &body.replace("(i64.const 501)", "(i64.const 500)")),
    );
    let out = apply(&module, &state);
    assert_eq!(out.result, Ok(()));
    assert_eq!(out.writes["m/bank/b"], Some(30u128.to_le_bytes().to_vec()));
    assert_eq!(out.writes["bal/alice/GOLD"], Some(b"70".to_vec()));
    assert_eq!(out.writes["bal/alice/TOK"], Some(b"1000".to_vec()));

    // escrow_in from someone other than the sender is refused.
    let other = apply_guest(
        data,
        r#"(if (result i32) (call $escrow_in (i32.const 1040) (i32.const 11) (i32.const 1030) (i32.const 4) (i64.const 1) (i64.const 0))
             (then (call $output (i32.const 3000) (call $last_error (i32.const 3000) (i32.const 500))) (i32.const 1))
             (else (i32.const 0)))"#,
    );
    let out = apply(&load("bank", &other), &state);
    assert_eq!(out.result.unwrap_err().code(), "unauthorized");
}
