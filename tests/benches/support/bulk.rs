//! Module `bulk` of the state benchmarks (`state.rs`, `snapshot.rs`): a hand-written guest that
//! makes many state keys per transaction.

/// Module `bulk`, by hand in the ABI v1: `gc_apply` reads the text of op `{"b":"<n>"}` (bytes 6
/// to the closing quote) and puts `per_tx` keys `s/<n>/<i as 4 hex digits>`, each with the 32
/// bytes at 512 as its value.
pub fn bulk_wat(per_tx: usize) -> String {
    format!(
        r#"
(module
  (import "gamechain_v1" "put" (func $put (param i32 i32 i32 i32)))
  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 4096))
  (data (i32.const 16) "0123456789abcdef")
  (data (i32.const 512) "bulk state value, 32 bytes long.")
  (func (export "gc_abi_version") (result i32) (i32.const 1))
  (func (export "gc_alloc") (param $len i32) (result i32)
    (local $ptr i32)
    (local.set $ptr (global.get $heap))
    (global.set $heap (i32.add (local.get $ptr) (local.get $len)))
    (local.get $ptr))
  (func (export "gc_apply") (param i32 i32) (param $op i32) (param $len i32) (result i32)
    (local $d i32) (local $k i32) (local $p i32) (local $i i32) (local $klen i32)
    (i32.store8 (i32.const 256) (i32.const 115))
    (i32.store8 (i32.const 257) (i32.const 47))
    ;; the text: op bytes 6 .. len - 2
    (local.set $d (i32.sub (local.get $len) (i32.const 8)))
    (block $copied
      (loop $copy
        (br_if $copied (i32.ge_u (local.get $k) (local.get $d)))
        (i32.store8 offset=258 (local.get $k)
          (i32.load8_u offset=6 (i32.add (local.get $op) (local.get $k))))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $copy)))
    (local.set $p (i32.add (i32.const 258) (local.get $d)))
    (i32.store8 (local.get $p) (i32.const 47))
    (local.set $p (i32.add (local.get $p) (i32.const 1)))
    (local.set $klen (i32.sub (i32.add (local.get $p) (i32.const 4)) (i32.const 256)))
    (loop $put_one
      (i32.store8 (local.get $p)
        (i32.load8_u offset=16 (i32.and (i32.shr_u (local.get $i) (i32.const 12)) (i32.const 15))))
      (i32.store8 offset=1 (local.get $p)
        (i32.load8_u offset=16 (i32.and (i32.shr_u (local.get $i) (i32.const 8)) (i32.const 15))))
      (i32.store8 offset=2 (local.get $p)
        (i32.load8_u offset=16 (i32.and (i32.shr_u (local.get $i) (i32.const 4)) (i32.const 15))))
      (i32.store8 offset=3 (local.get $p)
        (i32.load8_u offset=16 (i32.and (local.get $i) (i32.const 15))))
      (call $put (i32.const 256) (local.get $klen) (i32.const 512) (i32.const 32))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $put_one (i32.lt_u (local.get $i) (i32.const {per_tx}))))
    (i32.const 0))
  (func (export "gc_view") (param i32 i32) (result i32) (i32.const 1)))
"#
    )
}
