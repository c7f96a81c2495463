;; Exception handling.
;; Part of the hostile corpus: see README.md in this directory for the expected outcome.
(module
  (tag $e) (func (throw $e))
  (memory (export "memory") 1)
  (func (export "gc_abi_version") (result i32) (i32.const 1))
  (func (export "gc_alloc") (param i32) (result i32) (i32.const 4096))
  (func (export "gc_apply") (param i32 i32 i32 i32) (result i32) (i32.const 0))
  (func (export "gc_view") (param i32 i32) (result i32) (i32.const 0)))
