;; Pure entry points that misbehave, for runtime/tests/pure_calls.rs. Each `gc_pure_<name>` is
;; `(input_ptr, input_len) -> i64` returning `(ptr << 32) | len` of its result, or negative.
(module
  (import "gamechain_v1" "put" (func $put (param i32 i32 i32 i32)))
  (memory (export "memory") 2)
  (global $heap (mut i32) (i32.const 4096))
  (data (i32.const 16) "echo:")
  (func (export "gc_abi_version") (result i32) (i32.const 1))
  (func (export "gc_alloc") (param $len i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.add (local.get $p) (local.get $len)))
    (local.get $p))
  (func (export "gc_apply") (param i32 i32 i32 i32) (result i32) (i32.const 0))
  (func (export "gc_view") (param i32 i32) (result i32) (i32.const 1))
  ;; "echo:" followed by the input (copied after the prefix).
  (func (export "gc_pure_echo") (param $p i32) (param $l i32) (result i64)
    (memory.copy (i32.const 21) (local.get $p) (local.get $l))
    (i64.or (i64.shl (i64.const 16) (i64.const 32)) (i64.extend_i32_u (i32.add (local.get $l) (i32.const 5)))))
  ;; Never returns: the caller's fuel cap ends it.
  (func (export "gc_pure_spin") (param i32 i32) (result i64)
    (loop $l (br $l))
    (i64.const 0))
  (func (export "gc_pure_boom") (param i32 i32) (result i64) unreachable)
  ;; A division by zero, then ten units in blocks: whether a small fuel limit ends it as a trap
  ;; (-3) or as running out (-4) depends on where the charges are (`pure/ladder.wat`).
  (func (export "gc_pure_divz") (param i32 i32) (result i64)
    (drop (i32.div_u (i32.const 1) (i32.const 0)))
    (block (drop (i32.const 0)) (drop (i32.const 0)) (drop (i32.const 0)) (drop (i32.const 0))
      (drop (i32.const 0)) (drop (i32.const 0)) (drop (i32.const 0)) (drop (i32.const 0))
      (drop (i32.const 0)) (drop (i32.const 0)))
    (i64.const 0))
  ;; A write: callees are read-only.
  (func (export "gc_pure_write") (param i32 i32) (result i64)
    (call $put (i32.const 16) (i32.const 1) (i32.const 16) (i32.const 1))
    (i64.const 0))
  (func (export "gc_pure_no") (param i32 i32) (result i64) (i64.const -1))
  ;; 65,537 bytes from offset 0: one over the bound.
  (func (export "gc_pure_huge") (param i32 i32) (result i64) (i64.const 65537))
  ;; Exactly 65,536 bytes: the bound itself.
  (func (export "gc_pure_max") (param i32 i32) (result i64) (i64.const 65536))
  ;; A range ending past the memory (2 pages).
  (func (export "gc_pure_outside") (param i32 i32) (result i64)
    (i64.or (i64.shl (i64.const 131000) (i64.const 32)) (i64.const 1000)))
  ;; The wrong type for a pure entry point: not callable as one.
  (func (export "gc_pure_typed") (param i32) (result i32) (i32.const 0)))
