//! Where the dirty-chunk marks go in one function, and the instructions that make them: the
//! added locals, the kind of each store, the per-function plan of marks and its emission.

use super::meter;
use crate::load::stack::{self, Costs};
use wasmparser::Operator;

use crate::load::encode::*;

/// The most locals a function may have (wasmparser's and so wasmtime's limit).
pub(super) const MAX_LOCALS: u64 = 50_000;

/// The locals added to an instrumented function ([`Locals`]): address, two more `i32` operands,
/// one value of each other type, and the accumulator. Always all seven, in this order.
pub(super) const ADDED_LOCALS: [u8; 7] = [I32, I32, I32, I64, F32, F64, I64];
/// The locals added to an instrumented function ([`ADDED_LOCALS`], in that order).
pub(super) struct Locals {
    /// Saved address, and the saved `i32` operands / values.
    pub(super) a: u32,
    pub(super) b: u32,
    pub(super) c: u32,
    pub(super) v64: u32,
    pub(super) vf32: u32,
    pub(super) vf64: u32,
    /// The function's own accumulated marks, OR-ed into `dirty` on return.
    pub(super) acc: u32,
}

impl Locals {
    pub(super) fn at(base: u32) -> Self {
        Self {
            a: base,
            b: base + 1,
            c: base + 2,
            v64: base + 3,
            vf32: base + 4,
            vf64: base + 5,
            acc: base + 6,
        }
    }
}

/// What the operand stack's slot is known to hold.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Slot {
    Unknown,
    /// The current value of this local (it is not assigned since it was pushed).
    Local(u32),
    /// This `i32` constant.
    Const(i32),
}

/// How one store is marked.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum StoreMark {
    /// Address unknown: operands saved to locals, the chunk of `address + offset` marked after it.
    Saved,
    /// The address is the value of this local: its chunk is marked after the store.
    Local(u32),
    /// Covered by a range mark of its address local (see [`Marks`]), or by the entry mask
    /// (a constant address): nothing inserted.
    Covered,
}

/// Where the marks of one function go. In order of cost:
///
/// - a store to a constant address marks its chunk in one mask OR-ed in at function entry;
/// - stores whose address is a local that never changes after a point that dominates them (a
///   parameter never assigned, or a local assigned once at the top level of the body, like the
///   frame pointer of a Rust function) are covered by one range mark of the chunks of
///   `local + min offset` to `local + max offset`, at that point, when there are two or more of
///   them or one is in a loop (a range mark costs what one store's mark does);
/// - a store whose address is a local (not changed since it was pushed) marks the chunk of
///   `local + offset` after it;
/// - any other store saves its operands to locals and marks the chunk of `address + offset`;
/// - `memory.fill/copy/init` save their operands and mark every chunk of the destination.
///
/// The marks go to a local accumulator, OR-ed into `dirty` before every exit of the function
/// (`return`, a branch to the function's label, its final `end`) — unless the function has a
/// single mark site, which then marks `dirty` directly. A trap skips the flush, and that is
/// fine: an instance whose call trapped is never reused. Marking a chunk no store writes only
/// costs an unneeded restore; a written chunk is always marked.
pub(super) struct Marks {
    /// Per op index: how that store is marked.
    pub(super) stores: Vec<Option<StoreMark>>,
    /// Range marks `(local, min offset, max offset)` placed after op `i` (`usize::MAX`: at
    /// function entry).
    pub(super) ranges: Vec<(usize, u32, u64, u64)>,
    /// Chunks of constant-address stores, marked at entry.
    pub(super) entry_mask: u64,
    /// Ops before which the accumulator is flushed.
    pub(super) exits: Vec<bool>,
    /// Number of mark sites (0: the function writes no memory).
    pub(super) sites: usize,
    /// Whether marks go through the accumulator.
    pub(super) acc: bool,
}

/// Arity of operators that need no module information (everything else clears the simulated
/// stack).
pub(super) struct NoModule;

impl wasmparser::ModuleArity for NoModule {
    fn sub_type_at(&self, _: u32) -> Option<&wasmparser::SubType> {
        None
    }
    fn tag_type_arity(&self, _: u32) -> Option<(u32, u32)> {
        None
    }
    fn type_index_of_function(&self, _: u32) -> Option<u32> {
        None
    }
    fn func_type_of_cont_type(&self, _: &wasmparser::ContType) -> Option<&wasmparser::FuncType> {
        None
    }
    fn sub_type_of_ref_type(&self, _: &wasmparser::RefType) -> Option<&wasmparser::SubType> {
        None
    }
    fn control_stack_height(&self) -> u32 {
        0
    }
    fn label_block(&self, _: u32) -> Option<(wasmparser::BlockType, wasmparser::FrameKind)> {
        None
    }
}

/// A scalar store: `(value local kind, offset, width)`; the kind indexes [`Locals`].
pub(super) fn store_kind(op: &Operator<'_>) -> Option<(u8, u64)> {
    Some(match op {
        Operator::I32Store { memarg }
        | Operator::I32Store8 { memarg }
        | Operator::I32Store16 { memarg } => (I32, memarg.offset),
        Operator::I64Store { memarg }
        | Operator::I64Store8 { memarg }
        | Operator::I64Store16 { memarg }
        | Operator::I64Store32 { memarg } => (I64, memarg.offset),
        Operator::F32Store { memarg } => (F32, memarg.offset),
        Operator::F64Store { memarg } => (F64, memarg.offset),
        _ => return None,
    })
}

pub(super) fn is_bulk(op: &Operator<'_>) -> bool {
    matches!(
        op,
        Operator::MemoryFill { .. } | Operator::MemoryCopy { .. } | Operator::MemoryInit { .. }
    )
}

impl Marks {
    pub(super) fn plan(
        ops: &[(std::ops::Range<usize>, Operator<'_>)],
        params: u32,
        initial: u64,
        shift: u32,
    ) -> Self {
        let n = ops.len();
        let mut stores: Vec<Option<StoreMark>> = vec![None; n];
        let mut exits = vec![false; n];
        // Per local: (assignments, op index of the first, whether at the body's top level).
        let mut assigned: std::collections::HashMap<u32, (u32, usize, bool)> = Default::default();
        // Stores whose address is a local: (op index, local, offset, in a loop).
        let mut via_local: Vec<(usize, u32, u64, bool)> = Vec::new();
        let mut entry_mask = 0u64;
        let mut sites = 0usize;
        // Open blocks: whether each is a loop.
        let mut blocks: Vec<bool> = Vec::new();
        let mut stack: Vec<Slot> = Vec::new();
        let pop = |stack: &mut Vec<Slot>| stack.pop().unwrap_or(Slot::Unknown);
        for (i, (_, op)) in ops.iter().enumerate() {
            let depth = blocks.len() as u32;
            match op {
                Operator::Return => exits[i] = true,
                Operator::Br { relative_depth } | Operator::BrIf { relative_depth }
                    if *relative_depth == depth =>
                {
                    exits[i] = true
                }
                Operator::BrTable { targets } => {
                    let mut to_function = targets.default() == depth;
                    for t in targets.targets() {
                        to_function |= t.map_or(true, |t| t == depth);
                    }
                    exits[i] = to_function;
                }
                Operator::End if blocks.is_empty() => exits[i] = true,
                _ => {}
            }
            if let Some((_, offset)) = store_kind(op) {
                let addr = stack
                    .len()
                    .checked_sub(2)
                    .map_or(Slot::Unknown, |k| stack[k]);
                let in_loop = blocks.iter().any(|&l| l);
                stores[i] = Some(match addr {
                    Slot::Const(x) => {
                        let at = u64::from(x as u32) + offset;
                        if at < initial {
                            entry_mask |= 1 << (at >> shift);
                        }
                        StoreMark::Covered
                    }
                    Slot::Local(l) => {
                        via_local.push((i, l, offset, in_loop));
                        StoreMark::Local(l)
                    }
                    Slot::Unknown => StoreMark::Saved,
                });
            }
            match op {
                Operator::Block { .. } | Operator::If { .. } => blocks.push(false),
                Operator::Loop { .. } => blocks.push(true),
                Operator::End => {
                    blocks.pop();
                }
                _ => {}
            }
            match op {
                Operator::LocalGet { local_index } => stack.push(Slot::Local(*local_index)),
                Operator::LocalSet { local_index } | Operator::LocalTee { local_index } => {
                    let l = *local_index;
                    pop(&mut stack);
                    for slot in stack.iter_mut().filter(|s| **s == Slot::Local(l)) {
                        *slot = Slot::Unknown;
                    }
                    let e = assigned.entry(l).or_insert((0, i, depth == 0));
                    e.0 += 1;
                    if matches!(op, Operator::LocalTee { .. }) {
                        stack.push(Slot::Local(l));
                    }
                }
                Operator::I32Const { value } => stack.push(Slot::Const(*value)),
                _ => match op.operator_arity(&NoModule) {
                    Some((pops, pushes))
                        if !matches!(op, Operator::Unreachable | Operator::Return) =>
                    {
                        for _ in 0..pops {
                            pop(&mut stack);
                        }
                        stack.extend(std::iter::repeat_n(Slot::Unknown, pushes as usize));
                    }
                    // Control flow and calls: nothing is known past them.
                    _ => stack.clear(),
                },
            }
        }

        // Range marks: per local whose value is fixed from an anchor on.
        let mut ranges = Vec::new();
        let mut by_local: std::collections::BTreeMap<u32, Vec<(usize, u64, bool)>> =
            Default::default();
        for &(i, l, offset, in_loop) in &via_local {
            let fixed = match assigned.get(&l) {
                // A parameter never assigned: fixed from entry.
                None => l < params,
                // A local assigned once, at the top level, before this store: fixed from there.
                Some(&(count, at, top_level)) => l >= params && count == 1 && top_level && at < i,
            };
            if fixed {
                by_local.entry(l).or_default().push((i, offset, in_loop));
            }
        }
        for (l, uses) in by_local {
            let anchor = assigned.get(&l).map_or(usize::MAX, |&(_, at, _)| at);
            let min = uses.iter().map(|u| u.1).min().unwrap_or(0);
            let max = uses.iter().map(|u| u.1).max().unwrap_or(0);
            // A range mark costs what one store's mark does.
            let worth = uses.len() >= 2 || uses.iter().any(|u| u.2);
            if !worth || initial + max > u64::from(u32::MAX) {
                continue;
            }
            for &(i, _, _) in &uses {
                stores[i] = Some(StoreMark::Covered);
            }
            ranges.push((anchor, l, min, max));
        }
        sites += ranges.len() + usize::from(entry_mask != 0);
        sites += stores
            .iter()
            .filter(|s| matches!(s, Some(StoreMark::Saved | StoreMark::Local(_))))
            .count();
        sites += ops.iter().filter(|(_, op)| is_bulk(op)).count();
        Self {
            stores,
            ranges,
            entry_mask,
            exits,
            sites,
            acc: sites >= 2,
        }
    }

    /// Writes the instrumented operators of `ops` (bytes from `wasm`) into `out`, with the
    /// stack-height code (`stack.rs`) around each call that costs something in `stack`'s costs.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn emit(
        &self,
        out: &mut Vec<u8>,
        wasm: &[u8],
        ops: &[(std::ops::Range<usize>, Operator<'_>)],
        locals: &Locals,
        dirty: u32,
        shift: u32,
        (costs, stack_global): (&Costs, u32),
        (charges, fuel): (&[u64], meter::Counter),
    ) {
        let e = Emitter {
            marks: self,
            locals,
            dirty,
            shift,
            fuel,
        };
        fuel.load(out);
        if self.entry_mask != 0 {
            e.get(out);
            i64_const(out, self.entry_mask as i64);
            e.set(out);
        }
        e.ranges_at(out, usize::MAX);
        for (i, (bytes, op)) in ops.iter().enumerate() {
            let original = &wasm[bytes.clone()];
            if charges[i] > 0 {
                meter::charge(out, fuel, charges[i]);
            }
            let call_cost = match op {
                Operator::Call { function_index } => costs.call(*function_index),
                Operator::CallIndirect { type_index, .. } => costs.call_indirect(*type_index),
                _ => 0,
            };
            let call = meter::is_call(op);
            if call || self.exits[i] {
                fuel.store(out);
            }
            if call_cost > 0 {
                stack::before_call(out, stack_global, call_cost);
            }
            if self.exits[i] && self.acc {
                // dirty |= acc
                op_idx(out, 0x23, dirty);
                op_idx(out, 0x20, locals.acc);
                out.push(0x84);
                op_idx(out, 0x24, dirty);
            }
            match (self.stores[i], store_kind(op)) {
                (Some(StoreMark::Saved), Some((kind, offset))) => {
                    e.saved_store(out, original, kind, offset)
                }
                (Some(StoreMark::Local(l)), Some((_, offset))) => {
                    out.extend_from_slice(original);
                    e.get(out);
                    e.bit(out, l, offset);
                    e.set(out);
                }
                _ if is_bulk(op) => e.bulk(out, original),
                _ => out.extend_from_slice(original),
            }
            if call_cost > 0 {
                stack::after_call(out, stack_global, call_cost);
            }
            if call {
                fuel.load(out);
            }
            e.ranges_at(out, i);
        }
    }
}

/// The instructions of one function's marks ([`Marks::emit`]): OR-ing chunk bits into the
/// function's accumulator (or straight into `dirty`).
struct Emitter<'m> {
    marks: &'m Marks,
    locals: &'m Locals,
    /// Index of the `dirty` global.
    dirty: u32,
    /// log2 of the chunk size.
    shift: u32,
    /// Where the fuel counter is kept (`meter.rs`).
    fuel: meter::Counter,
}

impl Emitter<'_> {
    /// `local.get acc` or `global.get dirty`: the first half of `target |= <mask>`.
    fn get(&self, out: &mut Vec<u8>) {
        if self.marks.acc {
            op_idx(out, 0x20, self.locals.acc)
        } else {
            op_idx(out, 0x23, self.dirty)
        }
    }

    /// `i64.or` and `local.set acc` or `global.set dirty`: the second half.
    fn set(&self, out: &mut Vec<u8>) {
        out.push(0x84); // i64.or
        if self.marks.acc {
            op_idx(out, 0x21, self.locals.acc)
        } else {
            op_idx(out, 0x24, self.dirty)
        }
    }

    /// The bit of the chunk of `local.get l + offset`.
    fn bit(&self, out: &mut Vec<u8>, l: u32, offset: u64) {
        i64_const(out, 1);
        op_idx(out, 0x20, l);
        if offset != 0 {
            i32_const(out, offset as u32 as i32);
            out.push(0x6A); // i32.add
        }
        i32_const(out, self.shift as i32);
        out.push(0x76); // i32.shr_u
        out.push(0xAD); // i64.extend_i32_u
        out.push(0x86); // i64.shl
    }

    /// The chunks of `l + min` to `l + max`: `lo = (l + min) >> shift`, and the chunk of
    /// `l + max` is at most `lo + ((max - min) >> shift) + 1`, so a run of that many more ones
    /// shifted left by `lo`. Bits shifted out are chunks past the initial memory, where no store
    /// succeeds without a `memory.grow`; a store's spill past the last chunk is restored with it
    /// (`Plan::restore_ranges`).
    fn range(&self, out: &mut Vec<u8>, l: u32, min: u64, max: u64) {
        let extra = ((max - min) >> self.shift) + 1;
        let run = if extra >= 63 {
            u64::MAX
        } else {
            (1u64 << (extra + 1)) - 1
        };
        i64_const(out, run as i64);
        op_idx(out, 0x20, l);
        if min != 0 {
            i32_const(out, min as u32 as i32);
            out.push(0x6A); // i32.add
        }
        i32_const(out, self.shift as i32);
        out.push(0x76); // i32.shr_u
        out.push(0xAD); // i64.extend_i32_u
        out.push(0x86); // i64.shl
    }

    /// The range marks anchored after operator `at` (`usize::MAX`: at function entry).
    fn ranges_at(&self, out: &mut Vec<u8>, at: usize) {
        for &(anchor, l, min, max) in &self.marks.ranges {
            if anchor == at {
                self.get(out);
                self.range(out, l, min, max);
                self.set(out);
            }
        }
    }

    /// A store whose address is not simply a local: `[addr, value]` → value saved, address
    /// kept, the store as before, then the mark of the saved address.
    fn saved_store(&self, out: &mut Vec<u8>, original: &[u8], kind: u8, offset: u64) {
        let locals = self.locals;
        let value = match kind {
            I32 => locals.b,
            I64 => locals.v64,
            F32 => locals.vf32,
            _ => locals.vf64,
        };
        op_idx(out, 0x21, value); // local.set value
        op_idx(out, 0x22, locals.a); // local.tee a
        op_idx(out, 0x20, value); // local.get value
        out.extend_from_slice(original);
        self.get(out);
        self.bit(out, locals.a, offset);
        self.set(out);
    }

    /// A bulk memory write: `[dst, x, n]` → saved in (a, b, c), its fuel (`ceil(n / 4)`,
    /// `meter.rs`, through `v64`), the operation as before, then the chunks of `dst..dst + n`:
    /// `(-1 << (a >> shift)) & (-1 >>u (63 - ((a + n - 1) >> shift)))`.
    fn bulk(&self, out: &mut Vec<u8>, original: &[u8]) {
        let (locals, shift) = (self.locals, self.shift);
        op_idx(out, 0x21, locals.c);
        op_idx(out, 0x21, locals.b);
        op_idx(out, 0x22, locals.a);
        // The address stays on the stack for the operation.
        meter::charge_dynamic(out, self.fuel, locals.c, locals.v64);
        op_idx(out, 0x20, locals.b);
        op_idx(out, 0x20, locals.c);
        out.extend_from_slice(original);
        self.get(out);
        i64_const(out, -1);
        op_idx(out, 0x20, locals.a);
        i32_const(out, shift as i32);
        out.push(0x76);
        out.push(0xAD);
        out.push(0x86);
        i64_const(out, -1);
        i64_const(out, 63);
        op_idx(out, 0x20, locals.a);
        op_idx(out, 0x20, locals.c);
        out.push(0x6A); // i32.add
        i32_const(out, 1);
        out.push(0x6B); // i32.sub
        i32_const(out, shift as i32);
        out.push(0x76);
        out.push(0xAD);
        out.push(0x7D);
        out.push(0x88);
        out.push(0x83);
        self.set(out);
    }
}
