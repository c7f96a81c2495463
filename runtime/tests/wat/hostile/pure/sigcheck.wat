;; verify_signed, for runtime/tests/pure_calls.rs: `gc_apply(sender, op)` checks that the op bytes
;; are a signature of "hello gamechain" by the address `sender`, and writes the answer (one byte,
;; 0 or 1) under key `ok`. A bad signature is an answer, never a trap.
(module
  (import "gamechain_v1" "verify_signed" (func $verify (param i32 i32 i32 i32 i32 i32) (result i32)))
  (import "gamechain_v1" "put" (func $put (param i32 i32 i32 i32)))
  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 1024))
  (data (i32.const 16) "ok")
  (data (i32.const 32) "hello gamechain")
  (func (export "gc_abi_version") (result i32) (i32.const 1))
  (func (export "gc_alloc") (param $len i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.add (local.get $p) (local.get $len)))
    (local.get $p))
  (func (export "gc_apply") (param $sp i32) (param $sl i32) (param $op i32) (param $ol i32) (result i32)
    (i32.store8 (i32.const 64)
      (call $verify (local.get $sp) (local.get $sl) (i32.const 32) (i32.const 15) (local.get $op) (local.get $ol)))
    (call $put (i32.const 16) (i32.const 2) (i32.const 64) (i32.const 1))
    (i32.const 0))
  (func (export "gc_view") (param i32 i32) (result i32) (i32.const 1)))
