//! Fuel metering by instrumentation: what each wasm operator costs ([`cost`], the table
//! [`COST_TABLE`] names), where a function's code is split into metered blocks ([`charges`]),
//! and the code that charges a block ([`charge`]) or a bulk memory write ([`charge_dynamic`]).
//!
//! **Why ours.** wasmtime can count fuel itself (`consume_fuel`), but then a module's fuel is
//! whatever that wasmtime version's compiler counts: Cranelift and Winch differ (Cranelift charges
//! bulk memory operations per byte, Winch does not), and an upgrade could change the count.
//! Counting in the module's own code makes fuel a function of the module's bytes and this table
//! only: the same under every compiler, optimisation level and wasmtime version, so which
//! compiler runs a module is node policy, not consensus.
//!
//! **The counter.** A mutable `i64` global (`fuel`, exported as `<prefix>fuel`) holds the fuel
//! left, as an unsigned number. The host sets it before each call and reads it after; host
//! functions charge it too (`run/fuel.rs`). Under instrumentation revision 2 a function that
//! charges more often than it calls ([`counter_in_local`]) works on a copy in a local of its own
//! ([`Counter::Local`]): loaded from the global at entry and after each call, stored back before
//! each call and each exit, so that the compiler can keep it in a register. The global is exact
//! whenever anything else can read it (a callee, the host); a trap leaves it stale, and a trap
//! is charged the call's whole limit anyway. Running out still sets the global itself.
//!
//! **Metered blocks.** A function's operators are split at every control-flow operator: a block
//! starts at the function's first operator and right after each `block`, `loop`, `if`, `else`,
//! `end`, `br`, `br_if`, `br_table`, `return` and `unreachable`. Nothing can enter a block but at
//! its start, so charging its whole cost there charges every operator that runs (and, when the
//! block traps or calls something that traps midway, some that do not: a trap is charged the
//! call's whole limit anyway). A block whose operators cost nothing gets no code, nor does dead
//! code (after a `br`, `br_table`, `return` or `unreachable`, up to the `else` or `end` closing
//! its construct), which never runs.
//!
//! **A charge** of `c` (an immediate) is, before the block's first operator:
//!
//! ```text
//! global.get $fuel  i64.const c  i64.lt_u
//! if  i64.const -1  global.set $fuel  unreachable  end
//! global.get $fuel  i64.const c  i64.sub  global.set $fuel
//! ```
//!
//! so the counter never wraps: a block the fuel left cannot pay traps before it runs, with the
//! counter set to [`OUT_OF_FUEL`] (`u64::MAX`, never a real amount: limits are below it), which
//! is how the host tells running out of fuel from the module's own `unreachable`. A loop pays
//! at its header on every iteration (the branch back to it costs 1), and a function at its
//! entry, so every loop and every recursion uses fuel.
//!
//! **Bulk memory writes** (`memory.fill`, `memory.copy`, `memory.init` of `n` bytes) charge
//! `ceil(n / 4)` more right before they run ([`charge_dynamic`]), the same check with the amount
//! in a local: their time grows with `n`, the operator's own cost does not.
//!
//! Nothing the instrumentation adds is charged (the dirty-chunk marks, the stack-height counting,
//! these charges): fuel counts the module's own operators, as written.

use std::ops::Range;

use wasmparser::Operator;

use crate::load::encode::*;

/// The name of the cost table in the runtime's canonical configuration (its config hash): a
/// change to [`cost`] must change it.
pub(crate) const COST_TABLE: &str = "ops-v1";

/// The value the counter holds after a charge it could not pay: `u64::MAX` as an `i64`.
pub(crate) const OUT_OF_FUEL: i64 = -1;

/// What one operator costs (table [`COST_TABLE`]): 0 for the operators that only mark structure
/// or leave a function (`nop`, `drop`, `block`, `loop`, `else`, `end`, `unreachable`, `return`:
/// they compile to no work of their own), 1 for every other.
pub(crate) fn cost(op: &Operator<'_>) -> u64 {
    match op {
        Operator::Nop
        | Operator::Drop
        | Operator::Block { .. }
        | Operator::Loop { .. }
        | Operator::Else
        | Operator::End
        | Operator::Unreachable
        | Operator::Return => 0,
        _ => 1,
    }
}

/// Whether a metered block ends after `op` (module docs).
fn ends_block(op: &Operator<'_>) -> bool {
    matches!(
        op,
        Operator::Block { .. }
            | Operator::Loop { .. }
            | Operator::If { .. }
            | Operator::Else
            | Operator::End
            | Operator::Br { .. }
            | Operator::BrIf { .. }
            | Operator::BrTable { .. }
            | Operator::Return
            | Operator::Unreachable
    )
}

/// For each operator of a function, the charge placed before it: the cost of the metered block
/// that starts there, 0 where none starts (or it costs nothing). Saturating: a block cannot cost
/// more than `u64::MAX` (no function is that long).
///
/// Dead code gets no charge: after `br`, `br_table`, `return` or `unreachable`, nothing runs
/// until the `else` or `end` that closes the construct they are in (structured control flow:
/// no branch can land in between, and a construct opened there is never entered). Its charges
/// would never run, so leaving them out changes no fuel figure; it only keeps a function of
/// `br 0`s from growing tenfold.
pub(super) fn charges(ops: &[(Range<usize>, Operator<'_>)]) -> Vec<u64> {
    let mut out = vec![0u64; ops.len()];
    let mut start = 0;
    // Inside dead code: how many constructs were opened since it began.
    let mut dead: Option<u32> = None;
    for (i, (_, op)) in ops.iter().enumerate() {
        if dead.is_none() {
            out[start] = out[start].saturating_add(cost(op));
        }
        dead = match (dead, op) {
            (None, Operator::Br { .. } | Operator::BrTable { .. })
            | (None, Operator::Return | Operator::Unreachable) => Some(0),
            (None, _) => None,
            (Some(d), Operator::Block { .. } | Operator::Loop { .. } | Operator::If { .. }) => {
                Some(d + 1)
            }
            (Some(0), Operator::Else | Operator::End) => None,
            (Some(d), Operator::End) => Some(d - 1),
            (Some(d), _) => Some(d),
        };
        if ends_block(op) {
            start = i + 1;
            if start == ops.len() {
                break;
            }
        }
    }
    out
}

/// Whether a function keeps its fuel counter in a local ([`Counter::Local`]), given its
/// operators, their [`charges`] and which of them leave the function: when it has more charges
/// than twice its calls plus its exits and entry. A local costs a load at entry, a store and a
/// load around each call and a store before each exit; it saves a load and a store at every
/// charge, and lets the compiler keep the counter in a register.
pub(super) fn counter_in_local(
    ops: &[(Range<usize>, Operator<'_>)],
    charges: &[u64],
    exits: &[bool],
) -> bool {
    let sites = charges.iter().filter(|&&c| c > 0).count();
    let calls = ops.iter().filter(|(_, op)| is_call(op)).count();
    let exits = exits.iter().filter(|&&e| e).count();
    sites > 2 * calls + exits + 1
}

/// Whether `op` calls a function (of the module or the host), which reads and may charge the
/// fuel counter's global.
pub(super) fn is_call(op: &Operator<'_>) -> bool {
    matches!(
        op,
        Operator::Call { .. }
            | Operator::CallIndirect { .. }
            | Operator::CallRef { .. }
            | Operator::ReturnCall { .. }
            | Operator::ReturnCallIndirect { .. }
            | Operator::ReturnCallRef { .. }
    )
}

/// Where one function keeps the fuel counter while it runs (module docs, "The counter").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Counter {
    /// In the global: every charge reads and writes it.
    Global(u32),
    /// In an `i64` local: loaded from the global at entry and after every call, stored back
    /// before every call and every exit.
    Local { global: u32, local: u32 },
}

impl Counter {
    /// The global that holds the counter between functions.
    fn global(self) -> u32 {
        match self {
            Counter::Global(g) | Counter::Local { global: g, .. } => g,
        }
    }

    fn get(self, out: &mut Vec<u8>) {
        match self {
            Counter::Global(g) => op_idx(out, 0x23, g),
            Counter::Local { local, .. } => op_idx(out, 0x20, local),
        }
    }

    fn set(self, out: &mut Vec<u8>) {
        match self {
            Counter::Global(g) => op_idx(out, 0x24, g),
            Counter::Local { local, .. } => op_idx(out, 0x21, local),
        }
    }

    /// At entry and after a call: the local takes the global's value (nothing for a global
    /// counter).
    pub(super) fn load(self, out: &mut Vec<u8>) {
        if let Counter::Local { global, local } = self {
            op_idx(out, 0x23, global);
            op_idx(out, 0x21, local);
        }
    }

    /// Before a call or an exit: the global takes the local's value (nothing for a global
    /// counter).
    pub(super) fn store(self, out: &mut Vec<u8>) {
        if let Counter::Local { global, local } = self {
            op_idx(out, 0x20, local);
            op_idx(out, 0x24, global);
        }
    }
}

/// The charge of a metered block of cost `c > 0` (module docs).
pub(super) fn charge(out: &mut Vec<u8>, fuel: Counter, c: u64) {
    fuel.get(out);
    i64_const(out, c as i64);
    out.push(0x54); // i64.lt_u
    trap_if(out, fuel.global());
    fuel.get(out);
    i64_const(out, c as i64);
    out.push(0x7D); // i64.sub
    fuel.set(out);
}

/// The charge of a bulk memory write of `u32` length in local `len`: `ceil(len / 4)`, computed
/// into the `i64` local `scratch` (module docs).
pub(super) fn charge_dynamic(out: &mut Vec<u8>, fuel: Counter, len: u32, scratch: u32) {
    op_idx(out, 0x20, len); // local.get
    out.push(0xAD); // i64.extend_i32_u
    i64_const(out, 3);
    out.push(0x7C); // i64.add
    i64_const(out, 2);
    out.push(0x88); // i64.shr_u
    op_idx(out, 0x22, scratch); // local.tee
    fuel.get(out);
    out.push(0x56); // i64.gt_u: the amount is more than what is left
    trap_if(out, fuel.global());
    fuel.get(out);
    op_idx(out, 0x20, scratch);
    out.push(0x7D); // i64.sub
    fuel.set(out);
}

/// `if  i64.const -1  global.set $fuel  unreachable  end`.
fn trap_if(out: &mut Vec<u8>, fuel: u32) {
    out.extend_from_slice(&[0x04, 0x40]); // if (empty)
    i64_const(out, OUT_OF_FUEL);
    op_idx(out, 0x24, fuel);
    out.extend_from_slice(&[0x00, 0x0B]); // unreachable, end
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops_of(wat: &str) -> Vec<(Range<usize>, Operator<'static>)> {
        let wasm: &'static [u8] = Box::leak(wat::parse_str(wat).unwrap().into_boxed_slice());
        for payload in wasmparser::Parser::new(0).parse_all(wasm) {
            if let wasmparser::Payload::CodeSectionEntry(body) = payload.unwrap() {
                let mut r = body.get_operators_reader().unwrap();
                let mut ops = Vec::new();
                while !r.eof() {
                    let pos = r.original_position();
                    let op = r.read().unwrap();
                    ops.push((pos..r.original_position(), op));
                }
                return ops;
            }
        }
        unreachable!("no code")
    }

    #[test]
    fn blocks_split_at_control_flow_and_sum_their_operators() {
        // i32.const 1 | if | i32.const 2 drop | else | nop | end | loop | i32.const 0 br_if 0 | end | end
        let ops = ops_of(
            "(module (func (param i32)
               i32.const 1
               if
                 i32.const 2
                 drop
               else
                 nop
               end
               loop
                 i32.const 0
                 br_if 0
               end))",
        );
        let c = charges(&ops);
        // [const, if] = 2 at 0; [const, drop] = 1 at 2; [nop] after else = 0; after end:
        // [loop] = 0; after loop: [const, br_if] = 2; after br_if: [end] = 0; [end] = 0.
        assert_eq!(c, vec![2, 0, 1, 0, 0, 0, 0, 0, 2, 0, 0, 0]);
        assert_eq!(c.iter().sum::<u64>(), 5);
    }

    #[test]
    fn dead_code_is_not_charged_up_to_the_end_of_its_construct() {
        // block | br 0 | i32.const 1 drop | br 0 | block | i32.const 2 | br_if 0 | end | end |
        // i32.const 3 drop | if | return | nop | else | i32.const 4 drop | end
        let ops = ops_of(
            "(module (func (param i32)
               block
                 br 0
                 i32.const 1
                 drop
                 br 0
                 block
                   i32.const 2
                   br_if 0
                 end
               end
               i32.const 3
               drop
               local.get 0
               if
                 return
                 nop
               else
                 i32.const 4
                 drop
               end))",
        );
        let c = charges(&ops);
        // Live: [block] 0; [br] 1; dead until the outer `end` (index 9); after it
        // [const, drop, local.get, if] = 3 at 10; [return] 0 at 14, dead until `else` (16);
        // after `else`: [const, drop] = 1 at 17; [end] 0.
        assert_eq!(
            c,
            vec![0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0]
        );
    }
}
