;; The caller of runtime/tests/code_calls.rs: `gc_apply(sender, op)` takes the op as 32 bytes of
;; code hash followed by an entry name, runs call_code(hash, entry, input = "in", fuel =
;; 1,000,000) and writes the i64 result (little-endian) under key `r` and, when it is a length
;; that fit, the bytes under key `out`. The sender is ignored. With an op of 33 bytes or more
;; whose entry is `twice` it calls the same hash and entry `echo` twice (the second read of the
;; code store is free). It always returns 0: whatever the callee did, the caller carries on.
(module
  (import "gamechain_v1" "call_code"
    (func $call_code (param i32 i32 i32 i32 i32 i64 i32 i32) (result i64)))
  (import "gamechain_v1" "put" (func $put (param i32 i32 i32 i32)))
  (memory (export "memory") 3)
  (global $heap (mut i32) (i32.const 1024))
  (data (i32.const 16) "r")
  (data (i32.const 17) "out")
  (data (i32.const 24) "in")
  (data (i32.const 40) "echo")
  (func (export "gc_abi_version") (result i32) (i32.const 1))
  (func (export "gc_alloc") (param $len i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.add (local.get $p) (local.get $len)))
    (local.get $p))
  (func (export "gc_apply") (param i32 i32) (param $op i32) (param $ol i32) (result i32)
    (local $r i64)
    (if (i32.eq (i32.load (i32.add (local.get $op) (i32.const 32))) (i32.const 0x63697774)) ;; "twic"
      (then
        (drop (call $call_code (local.get $op) (i32.const 40) (i32.const 4)
          (i32.const 24) (i32.const 2) (i64.const 1000000) (i32.const 65536) (i32.const 65536)))
        (local.set $r (call $call_code (local.get $op) (i32.const 40) (i32.const 4)
          (i32.const 24) (i32.const 2) (i64.const 1000000) (i32.const 65536) (i32.const 65536))))
      (else
        (local.set $r (call $call_code (local.get $op)
          (i32.add (local.get $op) (i32.const 32)) (i32.sub (local.get $ol) (i32.const 32))
          (i32.const 24) (i32.const 2) (i64.const 1000000) (i32.const 65536) (i32.const 65536)))))
    (i64.store (i32.const 32) (local.get $r))
    (call $put (i32.const 16) (i32.const 1) (i32.const 32) (i32.const 8))
    (if (i32.and (i64.ge_s (local.get $r) (i64.const 0)) (i64.le_s (local.get $r) (i64.const 65536)))
      (then (call $put (i32.const 17) (i32.const 3) (i32.const 65536) (i32.wrap_i64 (local.get $r)))))
    (i32.const 0))
  (func (export "gc_view") (param i32 i32) (result i32) (i32.const 1)))
