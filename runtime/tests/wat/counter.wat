;; counter.wat: a complete gamechain ABI-v1 module written by hand (see sdk-guest/ABI.md).
;;
;; State: module key `n` holds the count as a JSON number (decimal ASCII), so the Rust sdk's
;; `ctx.get_json::<u64>("n")` reads the same value.
;; gc_apply (any op): n += 1, put `n`, emit `counter.incremented` with data {"n":<n>}.
;; gc_view (any query): outputs {"n":<n>}.
;; gc_alloc: a bump pointer from 4096 that grows the memory only when it is full.
;;
;; Memory layout:
;;   16        "n"                      the key
;;   32        "counter.incremented"    the event kind (19 bytes)
;;   64..96    `get` buffer             the stored decimal
;;   128       {"n":<digits>}           JSON out; digits start at 133
;;   4096..    heap (gc_alloc)
(module
  (import "gamechain_v1" "get" (func $get (param i32 i32 i32 i32) (result i64)))
  (import "gamechain_v1" "put" (func $put (param i32 i32 i32 i32)))
  (import "gamechain_v1" "emit" (func $emit (param i32 i32 i32 i32)))
  (import "gamechain_v1" "output" (func $output (param i32 i32)))

  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 4096))

  (data (i32.const 16) "n")
  (data (i32.const 32) "counter.incremented")
  (data (i32.const 128) "{\"n\":")

  (func (export "gc_abi_version") (result i32)
    (i32.const 1))

  (func (export "gc_alloc") (param $len i32) (result i32)
    (local $ptr i32)
    (local $end i32)
    (local.set $ptr (global.get $heap))
    (local.set $end (i32.add (local.get $ptr) (local.get $len)))
    ;; Grow by the missing pages when the allocation does not fit.
    (if (i32.gt_u (local.get $end) (i32.shl (memory.size) (i32.const 16)))
      (then
        (if (i32.eq
              (memory.grow
                (i32.sub
                  (i32.shr_u (i32.add (local.get $end) (i32.const 65535)) (i32.const 16))
                  (memory.size)))
              (i32.const -1))
          (then (return (i32.const 0))))))
    (global.set $heap (local.get $end))
    (local.get $ptr))

  ;; The stored count, 0 when absent.
  (func $load (result i64)
    (local $len i64)
    (local $i i32)
    (local $n i64)
    (local.set $len (call $get (i32.const 16) (i32.const 1) (i32.const 64) (i32.const 32)))
    (if (i64.lt_s (local.get $len) (i64.const 0))
      (then (return (i64.const 0))))
    (block $done
      (loop $digit
        (br_if $done (i64.ge_u (i64.extend_i32_u (local.get $i)) (local.get $len)))
        (local.set $n
          (i64.add
            (i64.mul (local.get $n) (i64.const 10))
            (i64.extend_i32_u (i32.sub (i32.load8_u offset=64 (local.get $i)) (i32.const 48)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $digit)))
    (local.get $n))

  ;; Writes {"n":<n>} at 128 and returns the number of digits (the JSON is 6 + digits long).
  (func $format (param $n i64) (result i32)
    (local $digits i32)
    (local $t i64)
    (local $pos i32)
    (local.set $digits (i32.const 1))
    (local.set $t (local.get $n))
    (block $counted
      (loop $count
        (br_if $counted (i64.lt_u (local.get $t) (i64.const 10)))
        (local.set $t (i64.div_u (local.get $t) (i64.const 10)))
        (local.set $digits (i32.add (local.get $digits) (i32.const 1)))
        (br $count)))
    (local.set $pos (i32.add (i32.const 132) (local.get $digits)))
    (loop $write
      (i32.store8 (local.get $pos)
        (i32.add (i32.const 48) (i32.wrap_i64 (i64.rem_u (local.get $n) (i64.const 10)))))
      (local.set $n (i64.div_u (local.get $n) (i64.const 10)))
      (local.set $pos (i32.sub (local.get $pos) (i32.const 1)))
      (br_if $write (i32.ge_u (local.get $pos) (i32.const 133))))
    (i32.store8 (i32.add (i32.const 133) (local.get $digits)) (i32.const 125)) ;; '}'
    (local.get $digits))

  (func (export "gc_apply") (param $sender_ptr i32) (param $sender_len i32) (param $op_ptr i32) (param $op_len i32) (result i32)
    (local $digits i32)
    (local.set $digits (call $format (i64.add (call $load) (i64.const 1))))
    (call $put (i32.const 16) (i32.const 1) (i32.const 133) (local.get $digits))
    (call $emit (i32.const 32) (i32.const 19) (i32.const 128) (i32.add (local.get $digits) (i32.const 6)))
    (i32.const 0))

  (func (export "gc_view") (param $query_ptr i32) (param $query_len i32) (result i32)
    (local $digits i32)
    (local.set $digits (call $format (call $load)))
    (call $output (i32.const 128) (i32.add (local.get $digits) (i32.const 6)))
    (i32.const 0))
)
