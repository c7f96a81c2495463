//! Load-time instrumentation of a guest module, so that one instance can serve many calls while
//! each call still starts from the module's pristine state (ABI.md, "Each call runs in a fresh
//! instance").
//!
//! **Why.** A fresh instance per call costs several times the call itself
//! (measured on the project's 2-core machines: instantiation, and the operating system's page faults and
//! `madvise` when a pooled memory is reset; the tic-tac-toe move bench: ~6x native with a fresh
//! pooled instance). A reused instance only needs back what the call changed. Asking the OS
//! which pages were written costs system calls per call; copying the whole initial memory back
//! costs more than the move (128 KiB for a Rust guest); so the module itself records what it
//! writes, at the price of a few instructions per store.
//!
//! **What is added.**
//! - A mutable `i64` global `dirty`: a bitmask over 64 equal chunks of the module's *initial*
//!   memory (chunk = initial size / 64 rounded up to a power of two, so a chunk's index is
//!   `address >> shift`; 2 KiB for a 128 KiB Rust guest).
//! - Code that ORs into `dirty` the chunk of every byte a `*.store*`, `memory.fill`,
//!   `memory.copy` or `memory.init` may write, placed as cheaply as the function allows
//!   ([`Marks`](marks::Marks), `marks.rs`): a constant address is marked once at function entry;
//!   the stores through a local that cannot change any more (an unassigned parameter, a frame
//!   pointer assigned once) share one range mark; other stores mark their own chunk, saving
//!   their operands to new locals when the address is not simply a local. Marks collect in a
//!   local and reach `dirty` when the function returns. A scalar store may run up to 7 bytes
//!   past its chunk: the host restores those bytes with the chunk ([`Plan::restore_ranges`]).
//! - Exports of `dirty` and of every mutable global (`<prefix>dirty`, `<prefix>global_<index>`;
//!   the prefix is `__gamechain_` plus as many `_` as needed to clash with no export of the
//!   module), so the host can read and reset them.
//! - The stack-height limit (`stack.rs`): a mutable `i32` global after `dirty`, exported as
//!   `<prefix>stack`, and the code that counts it around every call that may reach a wasm
//!   function.
//! - Fuel (`meter.rs`): a mutable `i64` global after the stack height, exported as
//!   `<prefix>fuel`, and a charge at the start of every metered block (the operators between two
//!   control-flow operators) of what its operators cost in our table, plus `ceil(n / 4)` before
//!   every `memory.fill`, `memory.copy` and `memory.init` of `n` bytes. This is all the fuel a
//!   module uses in wasm (wasmtime's own fuel is off), so fuel depends on the module's bytes
//!   only, never on the compiler.
//! - The start section is removed and the start function exported as `<prefix>start`; the host
//!   calls it right after instantiation (`module.rs`), so that when it traps the host can still
//!   read the stack-height global and tell the stack limit from an `unreachable`. Nothing else
//!   can run in between, so the module sees no difference.
//!
//! An address at or past the initial size is only written after a `memory.grow` (otherwise the
//! store traps), and the host never reuses an instance whose memory grew or whose call trapped
//! (`module.rs`); marks of such addresses need no meaning. Marking a chunk nothing wrote only
//! costs an unneeded copy; every written chunk is marked.
//!
//! The rewriting is done on the binary rather than by decoding and re-encoding every
//! instruction: every byte of the module is copied verbatim except in the global, export and
//! code sections, where the new global, exports, locals and instructions are added. So nothing
//! but the instrumentation can differ from the module as uploaded. (Only `wasmparser`, the
//! version wasmtime itself uses, is needed; `wasm-encoder`'s re-encoder would have forced a
//! rebuild of wasmtime with another feature set, for no gain.)
//!
//! **Consensus.** The instrumented module is what every node compiles and runs, in both call
//! paths (fresh instance and reused instance); fuel is counted by the charges `meter.rs` adds,
//! over the module's own operators (nothing the instrumentation adds is charged), so it is the
//! same for both paths and under every compiler by construction (the tic-tac-toe move:
//! `cargo bench -p gamechain-tests --bench move` prints its fuel). Its [`version`] is part of
//! the runtime's configuration hash: a change that changes the output of a revision must be a
//! new revision.
//! The output depends only on the module's bytes.
//!
//! **When an instance may not be reused** ([`Plan::reuse`]): anything whose pristine state the
//! host does not restore — `table.set/grow/fill/copy/init`, `elem.drop`, `data.drop`, more than
//! one table, imported tables, memories or globals, a mutable global of a reference type, more
//! than [`MAX_RESET_GLOBALS`](plan::MAX_RESET_GLOBALS) mutable globals, a start function that
//! can reach a host import or an indirect call (its effect could depend on the call's context;
//! `validate.rs` refuses such a start function anyway). Such a module runs in a fresh instance
//! per call (still instrumented: reuse is decided per node, fuel never depends on it). Bytes
//! that cannot be instrumented at all (not exactly one 32-bit memory of 64 KiB pages, bytes that
//! do not parse, a function too close to wasmparser's locals limit) get no plan, and `module.rs`
//! refuses them; `validate.rs` refuses all of those first, so a valid module is always
//! instrumented.
//!
//! Files: this one runs the [`Rewriter`] (`rewriter.rs`, the walk over the sections), which uses
//! `marks.rs` (the marks of one function), `sections.rs` (the global and export sections) and
//! `plan.rs` (what the host is given: [`Plan`], the chunks); none of them imports this file.

mod marks;
pub(crate) mod meter;
mod plan;
mod rewriter;
mod sections;
#[cfg(test)]
mod tests;

pub(crate) use plan::{chunk_mask, Plan};

use crate::load::stack::Costs;
use crate::load::validate::ModuleInfo;
use rewriter::Rewriter;

/// The instrumentation revision this build gives new chains
/// ([`crate::RuntimeConfig::instrumentation_revision`]); every revision from 1 up is still
/// produced, for the chains that run it ([`version`]).
pub const INSTRUMENTATION_REVISION: u32 = 2;

/// The instrumentation's version under `revision`, part of
/// [`crate::RuntimeConfig::canonical_description`]: the dirty-chunk marks (this file), the
/// stack-height limit (`stack.rs`) and the fuel metering (`meter.rs`, whose cost table has its
/// own name, [`meter::COST_TABLE`], in the description).
/// - Revision 1, `fuel-meter-v2`: every charge reads and writes the counter's global; dead code
///   is left uncharged (the same fuel as `v1`, smaller code: the size of the instrumented code
///   decides whether a function fits the engine's limits, so which uploads a chain accepts).
/// - Revision 2, `fuel-meter-v3`: the same charges at the same places, cheaper: a function
///   that charges more often than it calls keeps the counter in a local ([`meter::Counter`]),
///   stored to the global before every call and exit. Everything a module or the host can
///   observe is the same as under revision 1 (the fuel left at every call, every outcome, every
///   trap); only the code differs, and its size decides whether a function fits the engine's
///   limits, so it is a revision of its own.
pub(crate) fn version(revision: u32) -> &'static str {
    if revision >= 2 {
        "dirty-chunks-v1,stack-height-v1,fuel-meter-v3"
    } else {
        "dirty-chunks-v1,stack-height-v1,fuel-meter-v2"
    }
}

/// A module ready to compile, and how to reset its instances.
pub(crate) struct Instrumented {
    /// The bytes to compile: the instrumented module, or the original when `plan` is `None`.
    pub(crate) wasm: Vec<u8>,
    /// `None` when the module could not be instrumented (it is compiled unchanged).
    pub(crate) plan: Option<Plan>,
}

/// Instruments `wasm` (see the module documentation) as instrumentation `revision` does
/// ([`version`]), with the call costs of `info` (from `validate.rs`). Never fails: bytes it
/// cannot handle are returned unchanged with no plan (a validated module always gets one;
/// `module.rs` refuses one that does not).
pub(crate) fn instrument(wasm: &[u8], info: &ModuleInfo, revision: u32) -> Instrumented {
    match Rewriter::run(wasm, Costs::new(info), revision) {
        Ok(Some((bytes, plan))) => Instrumented {
            wasm: bytes,
            plan: Some(plan),
        },
        Ok(None) | Err(_) => Instrumented {
            wasm: wasm.to_vec(),
            plan: None,
        },
    }
}
