//! The deterministic stack-height limit: how deep a module may call, counted in wasm terms at
//! load time instead of in native bytes (ABI.md, "Stack height").
//!
//! **Why.** wasmtime bounds the *native* stack wasm code uses ([`crate::MAX_WASM_STACK`]); how
//! many calls fit depends on the machine code Cranelift emits for each frame, which changes with
//! the CPU architecture and with every wasmtime release. A recursion that fails on one node and
//! succeeds on another forks the chain. So, as consensus runtimes do, every module is
//! instrumented at load with a *logical* stack counter whose limit is reached long before the
//! native one, for any frame the validator lets through.
//!
//! **What is added** (by `instrument/`, around every `call` of a wasm function that is not a
//! leaf, and every `call_indirect` that may reach a wasm function):
//!
//! ```text
//! global.get $sh  i32.const COST  i32.add  global.set $sh          ;; before the call
//! global.get $sh  i32.const STACK_LIMIT  i32.gt_u  if unreachable end
//! call …
//! global.get $sh  i32.const COST  i32.sub  global.set $sh          ;; after it returns
//! ```
//!
//! `$sh` is a new mutable `i32` global starting at 0 (exported as `<prefix>stack`, see
//! `instrument/`). `COST` is the callee's [`frame_cost`] plus the largest [`frame_cost`] of the
//! *leaves* it calls directly (functions that call no wasm function): a direct call of a leaf is
//! not counted at all, its frame was reserved by its caller (this saves the check on the many
//! small helpers a compiler emits). For `call_indirect`, `COST` is the largest such cost of any
//! function defined with the call's signature (the only functions it can reach without
//! trapping), leaves included. A call to a host import adds nothing: host functions never call
//! back into wasm. The entry point the host calls (and the start function) is not counted, nor
//! a leaf it calls directly: both frames are bounded by the validator's
//! [`MAX_LOCALS`](crate::load::validate::MAX_LOCALS) and
//! [`MAX_OPERAND_STACK`](crate::load::validate::MAX_OPERAND_STACK).
//!
//! When the check fails, `$sh` stays above [`STACK_LIMIT`]: the host reads it after an
//! `unreachable` trap and reports `internal: trap: stack limit exceeded` instead
//! (`module.rs`); no other code path leaves `$sh` above the limit. After a call that returns
//! normally `$sh` is back at 0 (every increment is undone when its call returns); a reused
//! instance's `$sh` is reset anyway, and an instance whose call trapped is never reused.
//!
//! **Sizing.** [`frame_cost`] counts values: parameters and locals, the highest operand stack,
//! and [`FRAME_OVERHEAD`] for what every frame holds besides them (return address, frame
//! pointer, saved registers, the dirty-chunk instrumentation's accumulator). Cranelift keeps a
//! value live across a call in at most 16 bytes of stack (a float register's spill slot; an
//! integer takes 8). Measured with wasmtime 48 on x86-64 (`runtime/tests/hostile.rs`,
//! `the_largest_frames_hit_the_logical_limit_before_the_native_one`): a frame of 1,024 `f64`
//! locals and 1,002 `f64` operands (cost 2,034 before the overhead) takes 32,768 bytes, 16 per
//! value; a small recursive function takes 48 bytes. So a full logical stack needs at most
//! `16 * (STACK_LIMIT + 2 * largest frame)` = `16 * (32,768 + 2 * 2,056)` = 590 KB of native
//! stack (the uncounted entry point and a leaf it calls on top), plus the host's own frames
//! (the same test runs the largest frame under Winch, which compiles uploads: it too reaches the
//! logical limit first): [`crate::MAX_WASM_STACK`] is 1 MiB, so wasmtime's own
//! limit (`internal: trap: stack overflow`) is a backstop that valid modules never reach.
//!
//! The instrumentation's version (`stack-height-v1`, in `instrument/`'s `version`),
//! [`STACK_LIMIT`] and [`FRAME_OVERHEAD`] are in the runtime's configuration hash.

use crate::load::encode::{i32_const, leb_u32};
use crate::load::validate::{Frame, ModuleInfo};

/// The logical stack limit, in values: the sum of the [`frame_cost`]s of the calls in progress
/// may not exceed it. A small recursive function `(param i32) (result i32)` (cost 11) gets
/// 2,978 calls deep; one of the largest frames the validator allows (cost 2,056) gets 15.
/// A direct call of a leaf is reserved by its caller, see [`Costs`].
pub const STACK_LIMIT: u32 = 32_768;

/// The part of every frame's cost that does not depend on the function, in values (8 values =
/// 128 bytes; Cranelift's fixed part of a frame, return address, frame pointer and saved
/// registers, measured 48 bytes on x86-64, plus the dirty-chunk accumulator live across calls).
pub const FRAME_OVERHEAD: u32 = 8;

/// The cost of one call of a function with `frame`: [`FRAME_OVERHEAD`] + parameters + locals +
/// the highest operand stack.
pub(crate) fn frame_cost(frame: Frame) -> u32 {
    FRAME_OVERHEAD + frame.locals + frame.max_stack
}

/// What calls cost, per callee, for one module.
///
/// A *leaf* is a defined function that calls no wasm function (host imports only, or
/// nothing). A direct call of a leaf is not counted: its frame is reserved by its caller, whose
/// cost is [`frame_cost`] plus the largest frame of the leaves it calls directly. Since a leaf
/// calls nothing, it is always the top frame, and the frame below it was counted with that
/// reservation (or is the entry point, see the module documentation).
pub(crate) struct Costs {
    /// Per function index (imports first): the cost of a direct call (0: a host import or a
    /// leaf).
    direct: Vec<u32>,
    /// Per type index: the cost of a `call_indirect` of that type (0: no defined function has
    /// the signature).
    indirect: Vec<u32>,
}

impl Costs {
    /// The costs of the functions and types in `info`.
    pub(crate) fn new(info: &ModuleInfo) -> Self {
        let imports = info.func_imports;
        let own: Vec<u32> = info.frames.iter().map(|&f| frame_cost(f)).collect();
        let is_leaf = |i: usize| {
            let calls = &info.calls[i];
            !calls.indirect && calls.direct.iter().all(|&g| g < imports)
        };
        // What a counted call of each defined function adds: its frame and its largest leaf's.
        let reserved: Vec<u32> = (0..own.len())
            .map(|i| {
                let leaves = info.calls[i]
                    .direct
                    .iter()
                    .filter_map(|&g| g.checked_sub(imports).map(|j| j as usize))
                    .filter(|&j| is_leaf(j))
                    .map(|j| own[j])
                    .max()
                    .unwrap_or(0);
                own[i] + leaves
            })
            .collect();
        let direct: Vec<u32> = (0..info.func_types.len())
            .map(|f| match f.checked_sub(imports as usize) {
                Some(i) if !is_leaf(i) => reserved[i],
                _ => 0,
            })
            .collect();
        // Each type's first equal type (signatures compare structurally), then the largest
        // reservation of the functions of each signature: the callee of an indirect call is
        // unknown, so even a leaf is counted there.
        let canonical: Vec<usize> = info
            .types
            .iter()
            .enumerate()
            .map(|(i, ty)| info.types[..i].iter().position(|t| t == ty).unwrap_or(i))
            .collect();
        let mut largest = vec![0u32; info.types.len()];
        let defined = info.func_types.iter().skip(imports as usize);
        for (&t, &cost) in defined.zip(&reserved) {
            if let Some(&c) = canonical.get(t as usize) {
                largest[c] = largest[c].max(cost);
            }
        }
        let indirect = info
            .types
            .iter()
            .zip(&canonical)
            .map(|(ty, &c)| if ty.is_some() { largest[c] } else { 0 })
            .collect();
        Self { direct, indirect }
    }

    /// Cost of `call f` (0 for a host import, a leaf or an unknown index).
    pub(crate) fn call(&self, f: u32) -> u32 {
        self.direct.get(f as usize).copied().unwrap_or(0)
    }

    /// Cost of `call_indirect` of type `t`.
    pub(crate) fn call_indirect(&self, t: u32) -> u32 {
        self.indirect.get(t as usize).copied().unwrap_or(0)
    }
}

/// The code placed before a call of cost `cost`: count it, trap when over the limit.
pub(crate) fn before_call(out: &mut Vec<u8>, global: u32, cost: u32) {
    adjust(out, global, cost, 0x6A); // i32.add
    out.push(0x23); // global.get
    leb_u32(out, global);
    i32_const(out, STACK_LIMIT as i32);
    out.push(0x4B); // i32.gt_u
    out.extend_from_slice(&[0x04, 0x40, 0x00, 0x0B]); // if (empty) unreachable end
}

/// The code placed after a call of cost `cost`: uncount it.
pub(crate) fn after_call(out: &mut Vec<u8>, global: u32, cost: u32) {
    adjust(out, global, cost, 0x6B); // i32.sub
}

/// `global.get g; i32.const cost; <op>; global.set g`.
fn adjust(out: &mut Vec<u8>, global: u32, cost: u32, op: u8) {
    out.push(0x23);
    leb_u32(out, global);
    i32_const(out, cost as i32);
    out.push(op);
    out.push(0x24);
    leb_u32(out, global);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_count_frames_and_leaves_are_reserved_by_their_callers() {
        let wasm = wat::parse_str(
            r#"(module
                 (type $v (func))
                 (import "m" "f" (func $host))
                 (func $leaf (call $host))
                 (func $big_leaf (local i64 i64 i64) (drop (i32.add (i32.const 1) (i32.const 2))))
                 (func $caller (param i32) (call $leaf) (call $big_leaf) (call $caller (i32.const 0)))
                 (func $indirect (call_indirect (type $v) (i32.const 0)))
                 (table 1 funcref)
                 (memory 1))"#,
        )
        .unwrap();
        let info = crate::load::validate::analyze(&wasm).unwrap();
        let costs = Costs::new(&info);
        assert_eq!(costs.call(0), 0, "host import");
        assert_eq!(costs.call(1), 0, "leaf");
        assert_eq!(costs.call(2), 0, "leaf");
        // Its own frame (1 parameter, operand stack 1) and its largest leaf's (3 locals, 2).
        let big_leaf = FRAME_OVERHEAD + 3 + 2;
        assert_eq!(costs.call(3), FRAME_OVERHEAD + 2 + big_leaf);
        assert_eq!(
            costs.call(4),
            FRAME_OVERHEAD + 1,
            "calls indirectly: not a leaf"
        );
        // `call_indirect (type $v)` may reach any `() -> ()` function, leaves included.
        assert_eq!(costs.call_indirect(0), big_leaf.max(FRAME_OVERHEAD + 1));
        assert_eq!(costs.call_indirect(1), FRAME_OVERHEAD + 2 + big_leaf);
    }
}
