;; The caller of runtime/tests/pure_calls.rs: `gc_apply(sender, op)` runs
;; call_pure(module = sender, entry = op, input = "in", fuel = 1,000,000) and writes the i64 result
;; (little-endian) under key `r` and, when it is a length that fit, the bytes under key `out`.
;; It always returns 0: whatever the callee did, the caller carries on.
(module
  (import "gamechain_v1" "call_pure"
    (func $call_pure (param i32 i32 i32 i32 i32 i32 i64 i32 i32) (result i64)))
  (import "gamechain_v1" "put" (func $put (param i32 i32 i32 i32)))
  (memory (export "memory") 3)
  (global $heap (mut i32) (i32.const 1024))
  (data (i32.const 16) "r")
  (data (i32.const 17) "out")
  (data (i32.const 24) "in")
  (func (export "gc_abi_version") (result i32) (i32.const 1))
  (func (export "gc_alloc") (param $len i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.add (local.get $p) (local.get $len)))
    (local.get $p))
  (func (export "gc_apply") (param $sp i32) (param $sl i32) (param $op i32) (param $ol i32) (result i32)
    (local $r i64)
    (local.set $r (call $call_pure (local.get $sp) (local.get $sl) (local.get $op) (local.get $ol)
      (i32.const 24) (i32.const 2) (i64.const 1000000) (i32.const 65536) (i32.const 65536)))
    (i64.store (i32.const 32) (local.get $r))
    (call $put (i32.const 16) (i32.const 1) (i32.const 32) (i32.const 8))
    (if (i32.and (i64.ge_s (local.get $r) (i64.const 0)) (i64.le_s (local.get $r) (i64.const 65536)))
      (then (call $put (i32.const 17) (i32.const 3) (i32.const 65536) (i32.wrap_i64 (local.get $r)))))
    (i32.const 0))
  (func (export "gc_view") (param i32 i32) (result i32) (i32.const 1)))
