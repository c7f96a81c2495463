;; For runtime/tests/pure_calls.rs: calls `<sender>.<op>` 64 times, offering fuel 0, 1, ..., 63,
;; and writes the 64 result codes (one byte each) under key `codes`. Every instrumentation
;; revision must give the same codes: a callee's outcome at a small limit (trap or out of fuel)
;; depends on where its charges are, and the caller sees it.
(module
  (import "gamechain_v1" "call_pure"
    (func $call_pure (param i32 i32 i32 i32 i32 i32 i64 i32 i32) (result i64)))
  (import "gamechain_v1" "put" (func $put (param i32 i32 i32 i32)))
  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 1024))
  (data (i32.const 16) "codes")
  (func (export "gc_abi_version") (result i32) (i32.const 1))
  (func (export "gc_alloc") (param $len i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.add (local.get $p) (local.get $len)))
    (local.get $p))
  (func (export "gc_apply") (param $sp i32) (param $sl i32) (param $op i32) (param $ol i32) (result i32)
    (local $f i32)
    (loop $next
      (i64.store8 (i32.add (i32.const 256) (local.get $f))
        (call $call_pure (local.get $sp) (local.get $sl) (local.get $op) (local.get $ol)
          (i32.const 0) (i32.const 0) (i64.extend_i32_u (local.get $f)) (i32.const 0) (i32.const 0)))
      (local.set $f (i32.add (local.get $f) (i32.const 1)))
      (br_if $next (i32.lt_u (local.get $f) (i32.const 64))))
    (call $put (i32.const 16) (i32.const 5) (i32.const 256) (i32.const 64))
    (i32.const 0))
  (func (export "gc_view") (param i32 i32) (result i32) (i32.const 1)))
