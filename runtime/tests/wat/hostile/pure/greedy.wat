;; A caller that offers its callee all the fuel it has (`call_pure`'s fuel = i64::MAX, so the
;; callee's limit is the fuel left at the call), then ends in a `block` of its own. For
;; runtime/tests/pure_calls.rs: the fuel left at a call is the same under every instrumentation
;; revision, so with a looping callee the caller runs out in the block under each of them.
(module
  (import "gamechain_v1" "call_pure"
    (func $call_pure (param i32 i32 i32 i32 i32 i32 i64 i32 i32) (result i64)))
  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 1024))
  (func (export "gc_abi_version") (result i32) (i32.const 1))
  (func (export "gc_alloc") (param $len i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.add (local.get $p) (local.get $len)))
    (local.get $p))
  (func (export "gc_apply") (param $sp i32) (param $sl i32) (param $op i32) (param $ol i32) (result i32)
    (drop (call $call_pure (local.get $sp) (local.get $sl) (local.get $op) (local.get $ol)
      (i32.const 0) (i32.const 0) (i64.const 0x7fffffffffffffff) (i32.const 0) (i32.const 0)))
    (block (result i32) (i32.const 0)))
  (func (export "gc_view") (param i32 i32) (result i32) (i32.const 1)))
