;; A WASI import.
;; Part of the hostile corpus: see README.md in this directory for the expected outcome.
(module
  (import "wasi_snapshot_preview1" "fd_write" (func (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "gc_abi_version") (result i32) (i32.const 1))
  (func (export "gc_alloc") (param i32) (result i32) (i32.const 4096))
  (func (export "gc_apply") (param i32 i32 i32 i32) (result i32) (i32.const 0))
  (func (export "gc_view") (param i32 i32) (result i32) (i32.const 0)))
