;; Invalid UTF-8 (0xff 0xfe) wherever the ABI expects text; the op (a JSON number) picks the case.
;; Part of the hostile corpus: see README.md in this directory for the expected outcome.
(module
  (import "gamechain_v1" "height" (func $height (result i64)))
  (import "gamechain_v1" "module_id" (func $module_id (param i32 i32) (result i32)))
  (import "gamechain_v1" "txid" (func $txid (param i32 i32) (result i32)))
  (import "gamechain_v1" "sequencer" (func $sequencer (param i32 i32) (result i32)))
  (import "gamechain_v1" "checkpoint" (func $checkpoint (param i32 i32) (result i32)))
  (import "gamechain_v1" "get" (func $get (param i32 i32 i32 i32) (result i64)))
  (import "gamechain_v1" "put" (func $put (param i32 i32 i32 i32)))
  (import "gamechain_v1" "delete" (func $delete (param i32 i32)))
  (import "gamechain_v1" "scan" (func $scan (param i32 i32 i32 i32 i32 i32 i32) (result i64)))
  (import "gamechain_v1" "read_raw" (func $read_raw (param i32 i32 i32 i32) (result i64)))
  (import "gamechain_v1" "scan_raw" (func $scan_raw (param i32 i32 i32 i32 i32 i32 i32) (result i64)))
  (import "gamechain_v1" "balance" (func $balance (param i32 i32 i32 i32 i32)))
  (import "gamechain_v1" "escrow_in" (func $escrow_in (param i32 i32 i32 i32 i64 i64) (result i32)))
  (import "gamechain_v1" "escrow_out" (func $escrow_out (param i32 i32 i32 i32 i64 i64) (result i32)))
  (import "gamechain_v1" "create_token" (func $create_token (param i32 i32 i32 i32 i32 i32 i64 i64) (result i32)))
  (import "gamechain_v1" "mint" (func $mint (param i32 i32 i32 i32 i64 i64) (result i32)))
  (import "gamechain_v1" "burn" (func $burn (param i32 i32 i32 i32 i64 i64) (result i32)))
  (import "gamechain_v1" "last_error" (func $last_error (param i32 i32) (result i32)))
  (import "gamechain_v1" "emit" (func $emit (param i32 i32 i32 i32)))
  (import "gamechain_v1" "public_random" (func $public_random (param i32)))
  (import "gamechain_v1" "output" (func $output (param i32 i32)))
  (import "gamechain_v1" "abort" (func $abort (param i32 i32)))
  (import "gamechain_v1" "log" (func $log (param i32 i32)))
  (memory (export "memory") 1)
  ;; Fixed data: a key, invalid UTF-8, an event, tokens, accounts.
  (data (i32.const 1024) "key")
  (data (i32.const 1030) "\ff\fe")
  (data (i32.const 1040) "{}")
  (data (i32.const 1050) "GOLD")
  (data (i32.const 1060) "GEM")
  (data (i32.const 1070) "m/other/k")
  (data (i32.const 1090) "alice")
  (data (i32.const 1100) "mine")
  (data (i32.const 1110) "m/other/x")
  (global $heap (mut i32) (i32.const 4096))
  (func (export "gc_abi_version") (result i32) (i32.const 1))
  (func (export "gc_alloc") (param $len i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.add (global.get $heap) (local.get $len)))
    (local.get $p))
  (func (export "gc_view") (param i32 i32) (result i32)
    (call $output (i32.const 1040) (i32.const 2))
    (i32.const 0))
  ;; The op is a JSON number: which case to run.
  (func $case (param $p i32) (param $n i32) (result i32)
    (local $v i32)
    (block $done
      (loop $digit
        (br_if $done (i32.eqz (local.get $n)))
        (local.set $v (i32.add (i32.mul (local.get $v) (i32.const 10))
                               (i32.sub (i32.load8_u (local.get $p)) (i32.const 48))))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (local.set $n (i32.sub (local.get $n) (i32.const 1)))
        (br $digit)))
    (local.get $v))
  (func (export "gc_apply") (param $sp i32) (param $sl i32) (param $op i32) (param $ol i32) (result i32)
    ;; A write first: it must not survive the failure.
    (call $put (i32.const 1024) (i32.const 3) (i32.const 1100) (i32.const 4))
    (block $out
    (block $c14 (block $c13 (block $c12 (block $c11 (block $c10 (block $c9 (block $c8 (block $c7 (block $c6 (block $c5 (block $c4 (block $c3 (block $c2 (block $c1 (block $c0 
      (br_table $c0 $c1 $c2 $c3 $c4 $c5 $c6 $c7 $c8 $c9 $c10 $c11 $c12 $c13 $c14 $out (call $case (local.get $op) (local.get $ol))))
    ;; 0: get key
    (drop (call $get (i32.const 1030) (i32.const 2) (i32.const 0) (i32.const 0))) (br $out))
    ;; 1: put key
    (call $put (i32.const 1030) (i32.const 2) (i32.const 0) (i32.const 0)) (br $out))
    ;; 2: delete key
    (call $delete (i32.const 1030) (i32.const 2)) (br $out))
    ;; 3: scan prefix
    (drop (call $scan (i32.const 1030) (i32.const 2) (i32.const 0) (i32.const -1) (i32.const 1) (i32.const 0) (i32.const 0))) (br $out))
    ;; 4: scan start
    (drop (call $scan (i32.const 1024) (i32.const 3) (i32.const 1030) (i32.const 2) (i32.const 1) (i32.const 0) (i32.const 0))) (br $out))
    ;; 5: read_raw key
    (drop (call $read_raw (i32.const 1030) (i32.const 2) (i32.const 0) (i32.const 0))) (br $out))
    ;; 6: scan_raw prefix
    (drop (call $scan_raw (i32.const 1030) (i32.const 2) (i32.const 0) (i32.const -1) (i32.const 1) (i32.const 0) (i32.const 0))) (br $out))
    ;; 7: balance account
    (call $balance (i32.const 1030) (i32.const 2) (i32.const 1050) (i32.const 4) (i32.const 2048)) (br $out))
    ;; 8: balance token
    (call $balance (i32.const 1024) (i32.const 3) (i32.const 1030) (i32.const 2) (i32.const 2048)) (br $out))
    ;; 9: escrow_in account
    (drop (call $escrow_in (i32.const 1030) (i32.const 2) (i32.const 1050) (i32.const 4) (i64.const 1) (i64.const 0))) (br $out))
    ;; 10: escrow_out token
    (drop (call $escrow_out (i32.const 1024) (i32.const 3) (i32.const 1030) (i32.const 2) (i64.const 1) (i64.const 0))) (br $out))
    ;; 11: create_token name
    (drop (call $create_token (i32.const 1060) (i32.const 3) (i32.const 1030) (i32.const 2) (i32.const 0) (i32.const 0) (i64.const 1) (i64.const 0))) (br $out))
    ;; 12: mint account
    (drop (call $mint (i32.const 1030) (i32.const 2) (i32.const 1050) (i32.const 4) (i64.const 1) (i64.const 0))) (br $out))
    ;; 13: burn token
    (drop (call $burn (i32.const 1024) (i32.const 3) (i32.const 1030) (i32.const 2) (i64.const 1) (i64.const 0))) (br $out))
    ;; 14: emit kind
    (call $emit (i32.const 1030) (i32.const 2) (i32.const 1040) (i32.const 2)) (br $out))
    (i32.const 0))
)
