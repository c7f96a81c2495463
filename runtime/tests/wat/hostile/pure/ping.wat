;; Mutual recursion, for runtime/tests/pure_calls.rs: `gc_pure_bounce` calls `pong`'s
;; `gc_pure_bounce` with all the fuel it has, and returns the callee's bytes, or its negative
;; result as 8 little-endian bytes. The depth limit ends the chain.
(module
  (import "gamechain_v1" "call_pure"
    (func $call_pure (param i32 i32 i32 i32 i32 i32 i64 i32 i32) (result i64)))
  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 8192))
  (data (i32.const 16) "pong")
  (data (i32.const 32) "bounce")
  (func (export "gc_abi_version") (result i32) (i32.const 1))
  (func (export "gc_alloc") (param $len i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.add (local.get $p) (local.get $len)))
    (local.get $p))
  (func (export "gc_apply") (param i32 i32 i32 i32) (result i32) (i32.const 0))
  (func (export "gc_view") (param i32 i32) (result i32) (i32.const 1))
  (func (export "gc_pure_bounce") (param i32 i32) (result i64)
    (local $r i64)
    (local.set $r (call $call_pure (i32.const 16) (i32.const 4) (i32.const 32) (i32.const 6)
      (i32.const 0) (i32.const 0) (i64.const 9223372036854775807) (i32.const 1024) (i32.const 64)))
    (if (result i64) (i64.ge_s (local.get $r) (i64.const 0))
      (then (i64.or (i64.shl (i64.const 1024) (i64.const 32)) (local.get $r)))
      (else
        (i64.store (i32.const 2048) (local.get $r))
        (i64.or (i64.shl (i64.const 2048) (i64.const 32)) (i64.const 8))))))
