//! Load-time instrumentation of a guest module, so that one instance can serve many calls while
//! each call still starts from the module's pristine state (ABI.md, "Each call runs in a fresh
//! instance").
//!
//! **Why.** A fresh instance per call costs several times the call itself
//! (`shared/notes/measured-facts.md`: instantiation, and the operating system's page faults and
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
//!   ([`Marks`]): a constant address is marked once at function entry; the stores through a
//!   local that cannot change any more (an unassigned parameter, a frame pointer assigned once)
//!   share one range mark; other stores mark their own chunk, saving their operands to new
//!   locals when the address is not simply a local. Marks collect in a local and reach `dirty`
//!   when the function returns. A scalar store may run up to 7 bytes past its chunk: the host
//!   restores those bytes with the chunk ([`Plan::restore_ranges`]).
//! - Exports of `dirty` and of every mutable global (`<prefix>dirty`, `<prefix>global_<index>`;
//!   the prefix is `__gamechain_` plus as many `_` as needed to clash with no export of the
//!   module), so the host can read and reset them.
//! - The stack-height limit (`stack.rs`): a mutable `i32` global after `dirty`, exported as
//!   `<prefix>stack`, and the code that counts it around every call that may reach a wasm
//!   function.
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
//! paths (fresh instance and reused instance), so fuel is identical between the two by
//! construction; the inserted instructions cost fuel like any other (the tic-tac-toe move:
//! 53,100 fuel instead of 42,812 with the dirty-chunk marks, 56,040 with the stack-height code
//! of `stack.rs` around calls too). [`VERSION`] is part of the runtime's configuration hash: a
//! change to this file that changes its output must change it. The output depends only on the
//! module's bytes.
//!
//! **When an instance may not be reused** ([`Plan::reuse`]): anything whose pristine state the
//! host does not restore — `table.set/grow/fill/copy/init`, `elem.drop`, `data.drop`, more than
//! one table, imported tables, memories or globals, a mutable global of a reference type, more
//! than [`MAX_RESET_GLOBALS`] mutable globals, a start function that can reach a host import or
//! an indirect call (its effect could depend on the call's context; `validate.rs` refuses such
//! a start function anyway). Such a module runs in a fresh instance per call (still
//! instrumented: reuse is decided per node, fuel never depends on it). Bytes that cannot be
//! instrumented at all (not exactly one 32-bit memory of 64 KiB pages, bytes that do not parse,
//! a function too close to wasmparser's locals limit) get no plan, and `module.rs` refuses them;
//! `validate.rs` refuses all of those first, so a valid module is always instrumented.

use wasmparser::{BinaryReader, FunctionBody, Operator, Parser, Payload, TypeRef, ValType};

use crate::stack::{self, Costs};
use crate::validate::ModuleInfo;

/// The instrumentation's version, part of [`crate::RuntimeConfig::canonical_description`]: the
/// dirty-chunk marks (this file) and the stack-height limit (`stack.rs`).
pub(crate) const VERSION: &str = "dirty-chunks-v1,stack-height-v1";

/// Chunks tracked by the `dirty` mask.
pub(crate) const CHUNKS: u32 = 64;

/// Bytes past a chunk's end that a scalar store starting inside it may write (an 8-byte store
/// at the chunk's last byte).
pub(crate) const STORE_SPILL: usize = 7;

/// The most mutable globals of a module whose instances are reused (each is reset through a
/// host call after every call; a Rust module has one, the stack pointer).
const MAX_RESET_GLOBALS: usize = 256;

/// The most locals a function may have (wasmparser's and so wasmtime's limit).
const MAX_LOCALS: u64 = 50_000;

/// The locals added to an instrumented function ([`Locals`]): address, two more `i32` operands,
/// one value of each other type, and the accumulator. Always all seven, in this order.
const ADDED_LOCALS: [u8; 7] = [I32, I32, I32, I64, F32, F64, I64];
const I32: u8 = 0x7F;
const I64: u8 = 0x7E;
const F32: u8 = 0x7D;
const F64: u8 = 0x7C;

/// A module ready to compile, and how to reset its instances.
pub(crate) struct Instrumented {
    /// The bytes to compile: the instrumented module, or the original when `plan` is `None`.
    pub(crate) wasm: Vec<u8>,
    /// `None` when the module could not be instrumented (it is compiled unchanged).
    pub(crate) plan: Option<Plan>,
}

/// What the host needs to reset an instance of an instrumented module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    /// The export name of the `dirty` global.
    pub(crate) dirty_export: String,
    /// The export name of the stack-height global (`stack.rs`).
    pub(crate) stack_export: String,
    /// The export name of the module's start function, which the host calls right after
    /// instantiation (the start section is removed, so that a trap in it can be told apart
    /// from the stack limit; see `module.rs`). `None` without a start function.
    pub(crate) start_export: Option<String>,
    /// The export names of the module's mutable globals, in index order.
    pub(crate) global_exports: Vec<String>,
    /// The memory's initial size in bytes.
    pub(crate) initial_bytes: usize,
    /// `log2` of the chunk size.
    pub(crate) chunk_shift: u32,
    /// `Ok` when an instance may be reset and reused; otherwise why not.
    pub(crate) reuse: Result<(), String>,
}

impl Plan {
    /// The byte ranges to restore for the chunks in `mask`: each run of consecutive chunks, plus
    /// the spill of a store at its last byte, clipped to the initial memory.
    pub(crate) fn restore_ranges(
        &self,
        mut mask: u64,
    ) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
        std::iter::from_fn(move || {
            if mask == 0 {
                return None;
            }
            let lo = mask.trailing_zeros();
            let end = lo + (mask >> lo).trailing_ones();
            mask = if end >= 64 {
                0
            } else {
                mask & (u64::MAX << end)
            };
            let start = (lo as usize) << self.chunk_shift;
            let stop = ((end as usize) << self.chunk_shift) + STORE_SPILL;
            Some(start.min(self.initial_bytes)..stop.min(self.initial_bytes))
        })
    }
}

/// The chunks (of `1 << shift` bytes) holding bytes `range`, as a `dirty` mask; bytes at or past
/// chunk 63 count as chunk 63. An empty range is no chunk.
pub(crate) fn chunk_mask(range: &std::ops::Range<usize>, shift: u32) -> u64 {
    if range.is_empty() {
        return 0;
    }
    let lo = (range.start >> shift).min(63) as u32;
    let hi = ((range.end - 1) >> shift).min(63) as u32;
    let upper = if hi == 63 {
        u64::MAX
    } else {
        (1u64 << (hi + 1)) - 1
    };
    upper & !((1u64 << lo) - 1)
}

/// Instruments `wasm` (see the module documentation), with the call costs of `info` (from
/// `validate.rs`). Never fails: bytes it cannot handle are returned unchanged with no plan (a
/// validated module always gets one; `module.rs` refuses one that does not).
pub(crate) fn instrument(wasm: &[u8], info: &ModuleInfo) -> Instrumented {
    match Rewriter::run(wasm, Costs::new(info)) {
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

/// What one defined function does that matters for the plan.
#[derive(Default)]
struct FuncSummary {
    /// Functions it calls directly.
    calls: Vec<u32>,
    /// It has a `call_indirect` (or another call the analysis cannot follow).
    indirect: bool,
}

struct Rewriter<'a> {
    wasm: &'a [u8],
    /// Parameter count of each type (`None`: not a function type).
    type_params: Vec<Option<u32>>,
    func_imports: u32,
    global_imports: u32,
    other_imports: bool,
    /// Type index of each defined function.
    func_types: Vec<u32>,
    tables: u32,
    memories: Vec<wasmparser::MemoryType>,
    /// Defined globals.
    globals: Vec<wasmparser::GlobalType>,
    exports: Vec<String>,
    start: Option<u32>,
    /// Rewritten function bodies (each with its size prefix), in order.
    bodies: Vec<u8>,
    body_count: u32,
    summaries: Vec<FuncSummary>,
    /// First reason found not to reuse instances.
    refuse: Option<String>,
    /// What each call costs on the logical stack.
    costs: Costs,
    /// Index of the stack-height global.
    stack_global: u32,
    /// A function has too many locals to add the instrumentation's own.
    unfit: bool,
}

type Res<T> = Result<T, wasmparser::BinaryReaderError>;

impl<'a> Rewriter<'a> {
    fn run(wasm: &'a [u8], costs: Costs) -> Res<Option<(Vec<u8>, Plan)>> {
        let mut r = Rewriter {
            wasm,
            type_params: Vec::new(),
            func_imports: 0,
            global_imports: 0,
            other_imports: false,
            func_types: Vec::new(),
            tables: 0,
            memories: Vec::new(),
            globals: Vec::new(),
            exports: Vec::new(),
            start: None,
            bodies: Vec::new(),
            body_count: 0,
            summaries: Vec::new(),
            refuse: None,
            costs,
            stack_global: 0,
            unfit: false,
        };
        // Pass 1: everything but the code; the memory's size is needed before the code.
        for payload in Parser::new(0).parse_all(wasm) {
            match payload? {
                Payload::Version {
                    encoding: wasmparser::Encoding::Module,
                    ..
                } => {}
                Payload::Version { .. } => return Ok(None),
                Payload::TypeSection(s) => {
                    for group in s {
                        for sub in group?.into_types() {
                            r.type_params.push(match &sub.composite_type.inner {
                                wasmparser::CompositeInnerType::Func(f) => {
                                    Some(f.params().len() as u32)
                                }
                                _ => None,
                            });
                        }
                    }
                }
                Payload::ImportSection(s) => {
                    for import in s.into_imports() {
                        match import?.ty {
                            TypeRef::Func(_) | TypeRef::FuncExact(_) => r.func_imports += 1,
                            TypeRef::Global(_) => {
                                r.global_imports += 1;
                                r.other_imports = true;
                            }
                            _ => r.other_imports = true,
                        }
                    }
                }
                Payload::FunctionSection(s) => {
                    for t in s {
                        r.func_types.push(t?);
                    }
                }
                Payload::TableSection(s) => r.tables += s.count(),
                Payload::MemorySection(s) => {
                    for m in s {
                        r.memories.push(m?);
                    }
                }
                Payload::GlobalSection(s) => {
                    for g in s {
                        r.globals.push(g?.ty);
                    }
                }
                Payload::ExportSection(s) => {
                    for e in s {
                        r.exports.push(e?.name.to_string());
                    }
                }
                Payload::StartSection { func, .. } => r.start = Some(func),
                _ => {}
            }
        }
        let [memory] = r.memories[..] else {
            return Ok(None);
        };
        if memory.memory64 || memory.shared || memory.page_size_log2.is_some_and(|p| p != 16) {
            return Ok(None);
        }
        let initial_bytes =
            usize::try_from(memory.initial.saturating_mul(1 << 16)).unwrap_or(usize::MAX);
        if initial_bytes > 1 << 32 {
            return Ok(None);
        }
        let chunk = (initial_bytes.div_ceil(CHUNKS as usize))
            .max(1)
            .next_power_of_two();
        let chunk_shift = chunk.trailing_zeros();

        let prefix = reserved_prefix(&r.exports);
        let dirty_index = r.global_imports + r.globals.len() as u32;
        let dirty_export = format!("{prefix}dirty");
        r.stack_global = dirty_index + 1;
        let stack_export = format!("{prefix}stack");
        let start_export = r.start.map(|_| format!("{prefix}start"));
        let mutable: Vec<u32> = r
            .globals
            .iter()
            .enumerate()
            .filter(|(_, g)| g.mutable)
            .map(|(i, _)| r.global_imports + i as u32)
            .collect();
        let global_exports: Vec<String> = mutable
            .iter()
            .map(|i| format!("{prefix}global_{i}"))
            .collect();
        // The exports added: `dirty`, the stack height, the mutable globals, the start function.
        let mut added: Vec<(String, u8, u32)> = vec![
            (dirty_export.clone(), 0x03, dirty_index),
            (stack_export.clone(), 0x03, r.stack_global),
        ];
        added.extend(
            global_exports
                .iter()
                .zip(&mutable)
                .map(|(name, &i)| (name.clone(), 0x03, i)),
        );
        if let (Some(name), Some(f)) = (&start_export, r.start) {
            added.push((name.clone(), 0x00, f));
        }

        // Pass 2: the code.
        for payload in Parser::new(0).parse_all(wasm) {
            if let Payload::CodeSectionEntry(body) = payload? {
                r.rewrite_body(body, dirty_index, chunk_shift, initial_bytes)?;
            }
        }
        if r.unfit {
            return Ok(None);
        }

        // The plan's verdict on reuse.
        if r.tables > 1 {
            r.refuse("more than one table");
        }
        if r.other_imports {
            r.refuse("imports something other than functions");
        }
        if r.globals.iter().any(|g| {
            g.mutable
                && !matches!(
                    g.content_type,
                    ValType::I32 | ValType::I64 | ValType::F32 | ValType::F64
                )
        }) {
            r.refuse("a mutable global of a reference type");
        }
        if mutable.len() > MAX_RESET_GLOBALS {
            r.refuse("too many mutable globals to reset cheaply");
        }
        if let Some(start) = r.start {
            if r.may_call_out(start) {
                r.refuse("the start function may call the host");
            }
        }

        // Assemble: every section verbatim, except globals, exports and code.
        let mut out = Vec::with_capacity(wasm.len() + wasm.len() / 4);
        out.extend_from_slice(&wasm[..8]);
        let mut reader = BinaryReader::new(&wasm[8..], 8);
        let (mut globals_done, mut exports_done) = (false, false);
        while !reader.eof() {
            let id = reader.read_u8()?;
            let len = reader.read_var_u32()? as usize;
            let start = reader.original_position();
            let contents = reader.read_bytes(len)?;
            if id != 0 {
                if !globals_done && rank(id) > rank(6) {
                    section(&mut out, 6, &globals_with(&[], 0));
                    globals_done = true;
                }
                if !exports_done && rank(id) > rank(7) {
                    section(&mut out, 7, &exports_with(&[], 0, &added));
                    exports_done = true;
                }
            }
            match id {
                6 => {
                    let (count, rest) = split_count(contents, start)?;
                    section(&mut out, 6, &globals_with(rest, count));
                    globals_done = true;
                }
                7 => {
                    let (count, rest) = split_count(contents, start)?;
                    section(&mut out, 7, &exports_with(rest, count, &added));
                    exports_done = true;
                }
                10 => {
                    let mut code = Vec::with_capacity(r.bodies.len() + 5);
                    leb_u32(&mut code, r.body_count);
                    code.extend_from_slice(&r.bodies);
                    section(&mut out, 10, &code);
                }
                // The start function becomes an export the host calls (see `Plan`).
                8 => {}
                _ => section(&mut out, id, contents),
            }
        }
        if !globals_done {
            section(&mut out, 6, &globals_with(&[], 0));
        }
        if !exports_done {
            section(&mut out, 7, &exports_with(&[], 0, &added));
        }
        let plan = Plan {
            dirty_export,
            stack_export,
            start_export,
            global_exports,
            initial_bytes,
            chunk_shift,
            reuse: match r.refuse {
                None => Ok(()),
                Some(why) => Err(why),
            },
        };
        Ok(Some((out, plan)))
    }

    fn refuse(&mut self, why: &str) {
        if self.refuse.is_none() {
            self.refuse = Some(why.to_string());
        }
    }

    /// Whether function `f` can reach a host import or an indirect call.
    fn may_call_out(&self, f: u32) -> bool {
        let mut seen = vec![false; self.summaries.len()];
        let mut todo = vec![f];
        while let Some(f) = todo.pop() {
            let Some(i) = f.checked_sub(self.func_imports) else {
                return true;
            };
            let Some(summary) = self.summaries.get(i as usize) else {
                return true;
            };
            if std::mem::replace(&mut seen[i as usize], true) {
                continue;
            }
            if summary.indirect {
                return true;
            }
            todo.extend(&summary.calls);
        }
        false
    }

    /// What `op` costs on the logical stack (`stack.rs`): 0 for anything but a call that may
    /// reach a wasm function.
    fn call_cost(&self, op: &Operator<'_>) -> u32 {
        match op {
            Operator::Call { function_index } => self.costs.call(*function_index),
            Operator::CallIndirect { type_index, .. } => self.costs.call_indirect(*type_index),
            _ => 0,
        }
    }

    /// Rewrites one function body into `self.bodies` (see [`Marks`] for what is inserted, and
    /// `stack.rs` for the code around calls).
    fn rewrite_body(
        &mut self,
        body: FunctionBody<'_>,
        dirty: u32,
        shift: u32,
        initial: usize,
    ) -> Res<()> {
        let index = self.summaries.len();
        let params = self
            .func_types
            .get(index)
            .and_then(|&t| self.type_params.get(t as usize).copied().flatten())
            .unwrap_or(0);
        let range = body.range();
        let mut locals_reader = body.get_locals_reader()?;
        let mut declared: u64 = 0;
        let groups = locals_reader.get_count();
        for _ in 0..groups {
            declared += u64::from(locals_reader.read()?.0);
        }
        let locals_end = locals_reader.original_position();
        // Bytes of the local groups, after the group count.
        let groups_start = {
            let mut r = BinaryReader::new(&self.wasm[range.start..range.end], range.start);
            r.read_var_u32()?;
            r.original_position()
        };
        let base = u64::from(params) + declared;

        let mut reader = body.get_operators_reader()?;
        let mut ops = Vec::new();
        while !reader.eof() {
            let pos = reader.original_position();
            let op = reader.read()?;
            ops.push((pos..reader.original_position(), op));
        }
        let mut summary = FuncSummary::default();
        for (_, op) in &ops {
            match op {
                Operator::Call { function_index } | Operator::ReturnCall { function_index } => {
                    summary.calls.push(*function_index)
                }
                Operator::CallIndirect { .. }
                | Operator::CallRef { .. }
                | Operator::ReturnCallIndirect { .. }
                | Operator::ReturnCallRef { .. } => summary.indirect = true,
                Operator::TableSet { .. } => self.refuse("uses table.set"),
                Operator::TableGrow { .. } => self.refuse("uses table.grow"),
                Operator::TableFill { .. } => self.refuse("uses table.fill"),
                Operator::TableCopy { .. } => self.refuse("uses table.copy"),
                Operator::TableInit { .. } => self.refuse("uses table.init"),
                Operator::ElemDrop { .. } => self.refuse("uses elem.drop"),
                Operator::DataDrop { .. } => self.refuse("uses data.drop"),
                _ => {}
            }
        }
        self.summaries.push(summary);

        let marks = Marks::plan(&ops, params, initial as u64, shift);
        let calls = ops.iter().any(|(_, op)| self.call_cost(op) > 0);
        let func = if marks.sites == 0 && !calls {
            // Nothing written, no counted call: the body as it was.
            self.wasm[range.clone()].to_vec()
        } else {
            let mut func = Vec::with_capacity(range.len() * 2);
            if marks.sites == 0 {
                // Only calls to count: the locals as they were.
                func.extend_from_slice(&self.wasm[range.start..locals_end]);
            } else {
                if base + ADDED_LOCALS.len() as u64 > MAX_LOCALS {
                    // Cannot be instrumented (the validator's locals limit prevents it).
                    self.unfit = true;
                }
                leb_u32(&mut func, groups + ADDED_LOCALS.len() as u32);
                func.extend_from_slice(&self.wasm[groups_start..locals_end]);
                for ty in ADDED_LOCALS {
                    leb_u32(&mut func, 1);
                    func.push(ty);
                }
            }
            let locals = Locals::at(base as u32);
            let stack = (&self.costs, self.stack_global);
            marks.emit(&mut func, self.wasm, &ops, &locals, dirty, shift, stack);
            func
        };
        leb_u32(&mut self.bodies, func.len() as u32);
        self.bodies.extend_from_slice(&func);
        self.body_count += 1;
        Ok(())
    }
}

/// The locals added to an instrumented function ([`ADDED_LOCALS`], in that order).
struct Locals {
    /// Saved address, and the saved `i32` operands / values.
    a: u32,
    b: u32,
    c: u32,
    v64: u32,
    vf32: u32,
    vf64: u32,
    /// The function's own accumulated marks, OR-ed into `dirty` on return.
    acc: u32,
}

impl Locals {
    fn at(base: u32) -> Self {
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
enum Slot {
    Unknown,
    /// The current value of this local (it is not assigned since it was pushed).
    Local(u32),
    /// This `i32` constant.
    Const(i32),
}

/// How one store is marked.
#[derive(Clone, Copy, PartialEq, Eq)]
enum StoreMark {
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
struct Marks {
    /// Per op index: how that store is marked.
    stores: Vec<Option<StoreMark>>,
    /// Range marks `(local, min offset, max offset)` placed after op `i` (`usize::MAX`: at
    /// function entry).
    ranges: Vec<(usize, u32, u64, u64)>,
    /// Chunks of constant-address stores, marked at entry.
    entry_mask: u64,
    /// Ops before which the accumulator is flushed.
    exits: Vec<bool>,
    /// Number of mark sites (0: the function writes no memory).
    sites: usize,
    /// Whether marks go through the accumulator.
    acc: bool,
}

/// Arity of operators that need no module information (everything else clears the simulated
/// stack).
struct NoModule;

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
fn store_kind(op: &Operator<'_>) -> Option<(u8, u64)> {
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

fn is_bulk(op: &Operator<'_>) -> bool {
    matches!(
        op,
        Operator::MemoryFill { .. } | Operator::MemoryCopy { .. } | Operator::MemoryInit { .. }
    )
}

impl Marks {
    fn plan(
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
    fn emit(
        &self,
        out: &mut Vec<u8>,
        wasm: &[u8],
        ops: &[(std::ops::Range<usize>, Operator<'_>)],
        locals: &Locals,
        dirty: u32,
        shift: u32,
        (costs, stack_global): (&Costs, u32),
    ) {
        // `get; <mask on the stack>; i64.or; set` into the accumulator or `dirty`.
        let get = |out: &mut Vec<u8>| {
            if self.acc {
                op_idx(out, 0x20, locals.acc)
            } else {
                op_idx(out, 0x23, dirty)
            }
        };
        let set = |out: &mut Vec<u8>| {
            out.push(0x84); // i64.or
            if self.acc {
                op_idx(out, 0x21, locals.acc)
            } else {
                op_idx(out, 0x24, dirty)
            }
        };
        // The bit of the chunk of `local.get l + offset`.
        let bit = |out: &mut Vec<u8>, l: u32, offset: u64| {
            i64_const(out, 1);
            op_idx(out, 0x20, l);
            if offset != 0 {
                i32_const(out, offset as u32 as i32);
                out.push(0x6A); // i32.add
            }
            i32_const(out, shift as i32);
            out.push(0x76); // i32.shr_u
            out.push(0xAD); // i64.extend_i32_u
            out.push(0x86); // i64.shl
        };
        // The chunks of `l + min` to `l + max`: `lo = (l + min) >> shift`, and the chunk of
        // `l + max` is at most `lo + ((max - min) >> shift) + 1`, so a run of that many more
        // ones shifted left by `lo`. Bits shifted out are chunks past the initial memory, where
        // no store succeeds without a `memory.grow`; a store's spill past the last chunk is
        // restored with it (`Plan::restore_ranges`).
        let range = |out: &mut Vec<u8>, l: u32, min: u64, max: u64| {
            let extra = ((max - min) >> shift) + 1;
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
            i32_const(out, shift as i32);
            out.push(0x76); // i32.shr_u
            out.push(0xAD); // i64.extend_i32_u
            out.push(0x86); // i64.shl
        };
        let ranges_at = |out: &mut Vec<u8>, at: usize| {
            for &(anchor, l, min, max) in &self.ranges {
                if anchor == at {
                    get(out);
                    range(out, l, min, max);
                    set(out);
                }
            }
        };

        if self.entry_mask != 0 {
            get(out);
            i64_const(out, self.entry_mask as i64);
            set(out);
        }
        ranges_at(out, usize::MAX);
        for (i, (bytes, op)) in ops.iter().enumerate() {
            let original = &wasm[bytes.clone()];
            let call_cost = match op {
                Operator::Call { function_index } => costs.call(*function_index),
                Operator::CallIndirect { type_index, .. } => costs.call_indirect(*type_index),
                _ => 0,
            };
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
                    let value = match kind {
                        I32 => locals.b,
                        I64 => locals.v64,
                        F32 => locals.vf32,
                        _ => locals.vf64,
                    };
                    // [addr, value] -> value saved, address kept, store as before.
                    op_idx(out, 0x21, value); // local.set value
                    op_idx(out, 0x22, locals.a); // local.tee a
                    op_idx(out, 0x20, value); // local.get value
                    out.extend_from_slice(original);
                    get(out);
                    bit(out, locals.a, offset);
                    set(out);
                }
                (Some(StoreMark::Local(l)), Some((_, offset))) => {
                    out.extend_from_slice(original);
                    get(out);
                    bit(out, l, offset);
                    set(out);
                }
                _ if is_bulk(op) => {
                    // [dst, x, n] -> saved in (a, b, c), operation as before.
                    op_idx(out, 0x21, locals.c);
                    op_idx(out, 0x21, locals.b);
                    op_idx(out, 0x22, locals.a);
                    op_idx(out, 0x20, locals.b);
                    op_idx(out, 0x20, locals.c);
                    out.extend_from_slice(original);
                    // (-1 << (a >> shift)) & (-1 >>u (63 - ((a + n - 1) >> shift)))
                    get(out);
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
                    set(out);
                }
                _ => out.extend_from_slice(original),
            }
            if call_cost > 0 {
                stack::after_call(out, stack_global, call_cost);
            }
            ranges_at(out, i);
        }
    }
}

/// `__gamechain_`, with `_` added until no export of the module starts with it.
fn reserved_prefix(exports: &[String]) -> String {
    let mut prefix = String::from("__gamechain_");
    while exports.iter().any(|e| e.starts_with(&prefix)) {
        prefix.push('_');
    }
    prefix
}

/// The order of non-custom sections in a module (the spec's, with tags and data count).
fn rank(id: u8) -> u8 {
    match id {
        1..=5 => id,
        13 => 6,
        6..=9 => id + 1,
        12 => 11,
        10 => 12,
        11 => 13,
        _ => u8::MAX,
    }
}

/// The globals added, in order: `dirty` = `(global (mut i64) (i64.const 0))`, then the stack
/// height = `(global (mut i32) (i32.const 0))`.
const ADDED_GLOBALS: [u8; 10] = [I64, 0x01, 0x42, 0x00, 0x0B, I32, 0x01, 0x41, 0x00, 0x0B];

/// A vector section's item count and the bytes of its items.
fn split_count(contents: &[u8], offset: usize) -> Res<(u32, &[u8])> {
    let mut r = BinaryReader::new(contents, offset);
    let count = r.read_var_u32()?;
    Ok((count, &contents[r.original_position() - offset..]))
}

fn globals_with(items: &[u8], count: u32) -> Vec<u8> {
    let mut s = Vec::with_capacity(items.len() + 15);
    leb_u32(&mut s, count + 2);
    s.extend_from_slice(items);
    s.extend_from_slice(&ADDED_GLOBALS);
    s
}

/// The export section: the module's `count` exports (`items`), then `added` as
/// `(name, kind byte, index)`.
fn exports_with(items: &[u8], count: u32, added: &[(String, u8, u32)]) -> Vec<u8> {
    let mut s = Vec::with_capacity(items.len() + 32 * added.len());
    leb_u32(&mut s, count + added.len() as u32);
    s.extend_from_slice(items);
    for (name, kind, index) in added {
        leb_u32(&mut s, name.len() as u32);
        s.extend_from_slice(name.as_bytes());
        s.push(*kind);
        leb_u32(&mut s, *index);
    }
    s
}

fn section(out: &mut Vec<u8>, id: u8, contents: &[u8]) {
    out.push(id);
    leb_u32(out, contents.len() as u32);
    out.extend_from_slice(contents);
}

fn op_idx(out: &mut Vec<u8>, opcode: u8, index: u32) {
    out.push(opcode);
    leb_u32(out, index);
}

/// `i32.const v` (signed LEB128 immediate).
pub(crate) fn i32_const(out: &mut Vec<u8>, v: i32) {
    out.push(0x41);
    leb_i64(out, i64::from(v));
}

fn i64_const(out: &mut Vec<u8>, v: i64) {
    out.push(0x42);
    leb_i64(out, v);
}

/// Unsigned LEB128 of `v`, as the wasm binary format writes indices and sizes.
pub(crate) fn leb_u32(out: &mut Vec<u8>, mut v: u32) {
    loop {
        let byte = (v & 0x7F) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn leb_i64(out: &mut Vec<u8>, mut v: i64) {
    loop {
        let byte = (v & 0x7F) as u8;
        v >>= 7;
        let done = (v == 0 && byte & 0x40 == 0) || (v == -1 && byte & 0x40 != 0);
        if done {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

#[cfg(test)]
mod tests {
    use wasmtime::{Config, Engine, Instance, Module, Store, Val, WasmFeatures};

    use super::*;

    /// An engine with exactly the chain's wasm features (no fuel: semantics only).
    fn engine() -> Engine {
        let mut c = Config::new();
        c.wasm_features(WasmFeatures::all(), false)
            .wasm_features(crate::engine::allowed_features(), true);
        Engine::new(&c).unwrap()
    }

    /// [`instrument`] with the call costs of `wasm` (none when it does not parse).
    fn instr(wasm: &[u8]) -> Instrumented {
        let info = crate::validate::analyze(wasm).unwrap_or_default();
        instrument(wasm, &info)
    }

    fn wat(text: &str) -> Vec<u8> {
        wat::parse_str(text).unwrap_or_else(|e| panic!("bad test WAT: {e}"))
    }

    /// An instance of `wasm` (no imports) and its memory.
    fn instance(engine: &Engine, wasm: &[u8]) -> (Store<()>, Instance) {
        let module =
            Module::from_binary(engine, wasm).unwrap_or_else(|e| panic!("does not compile: {e:#}"));
        let mut store = Store::new(engine, ());
        let instance = Instance::new(&mut store, &module, &[]).unwrap();
        (store, instance)
    }

    fn memory(store: &mut Store<()>, instance: &Instance) -> Vec<u8> {
        instance
            .get_memory(&mut *store, "memory")
            .unwrap()
            .data(&*store)
            .to_vec()
    }

    fn globals(store: &mut Store<()>, instance: &Instance, names: &[&str]) -> Vec<Option<u64>> {
        names
            .iter()
            .map(|n| {
                let v = instance
                    .get_global(&mut *store, n)
                    .unwrap()
                    .get(&mut *store);
                match v {
                    Val::I32(x) => Some(x as u32 as u64),
                    Val::I64(x) => Some(x as u64),
                    Val::F32(x) => Some(u64::from(x)),
                    Val::F64(x) => Some(x),
                    _ => None,
                }
            })
            .collect()
    }

    /// Calls `func(args)` on a fresh instance of the original and of the instrumented module and
    /// checks: same outcome, same memory, same exported globals; every byte that differs from
    /// the pristine memory lies in a range the `dirty` mask restores.
    fn check(original: &[u8], func: &str, args: &[Val], exported_globals: &[&str]) -> u64 {
        let engine = engine();
        let out = instr(original);
        let plan = out.plan.expect("instrumentable");
        let (mut s0, i0) = instance(&engine, original);
        let (mut s1, i1) = instance(&engine, &out.wasm);
        let pristine = memory(&mut s1, &i1);
        assert_eq!(pristine, memory(&mut s0, &i0));
        let f0 = i0.get_func(&mut s0, func).unwrap();
        let f1 = i1.get_func(&mut s1, func).unwrap();
        let r0 = f0
            .call(&mut s0, args, &mut [])
            .map_err(|e| format!("{e:#}"));
        let r1 = f1
            .call(&mut s1, args, &mut [])
            .map_err(|e| format!("{e:#}"));
        assert_eq!(r0.is_ok(), r1.is_ok(), "{r0:?} vs {r1:?}");
        let after = memory(&mut s1, &i1);
        assert!(
            memory(&mut s0, &i0) == after,
            "memory differs after {func}{args:?}"
        );
        assert_eq!(
            globals(&mut s0, &i0, exported_globals),
            globals(&mut s1, &i1, exported_globals)
        );
        let dirty = i1
            .get_global(&mut s1, &plan.dirty_export)
            .unwrap()
            .get(&mut s1)
            .i64()
            .unwrap() as u64;
        if r1.is_ok() && after.len() == plan.initial_bytes {
            let mut restored = after.clone();
            for r in plan.restore_ranges(dirty) {
                restored[r.clone()].copy_from_slice(&pristine[r]);
            }
            if let Some(at) = restored.iter().zip(&pristine).position(|(a, b)| a != b) {
                panic!("{func}{args:?}: byte {at} written but its chunk not marked (dirty {dirty:016x})");
            }
        }
        dirty
    }

    /// Stores of every width through every kind of address the instrumentation distinguishes
    /// (constant, a parameter, a local assigned once at the top level, a local reassigned in a
    /// loop, a computed address), bulk operations, calls, and every way out of a function.
    const SCRIBBLER: &str = r#"(module
      (memory (export "memory") 2 3)
      (global $g (export "g") (mut i32) (i32.const 7))
      (global $h (export "h") (mut i64) (i64.const -1))
      (global $seed (mut i32) (i32.const 0))
      (data (i32.const 100) "pristine data")
      (data $seg "passive bytes, copied by memory.init")
      (func $rand (result i32)
        (global.set $seed (i32.add (i32.mul (global.get $seed) (i32.const 1103515245)) (i32.const 12345)))
        (i32.shr_u (global.get $seed) (i32.const 8)))
      (func $addr (param $limit i32) (result i32) (i32.rem_u (call $rand) (local.get $limit)))
      ;; One store through a parameter: marks `dirty` directly.
      (func $poke (param $p i32) (param $v i32) (i32.store16 offset=3 (local.get $p) (local.get $v)))
      ;; Several stores through a parameter (one range mark at entry), an early return.
      (func $frame (param $p i32) (param $x i64)
        (i64.store (local.get $p) (local.get $x))
        (if (i32.eqz (i32.and (local.get $p) (i32.const 1))) (then (return)))
        (i32.store8 offset=9 (local.get $p) (i32.const 0xAB))
        (f64.store offset=16 (local.get $p) (f64.const 1.5))
        (f32.store offset=30 (local.get $p) (f32.const 2.5)))
      ;; Exits through br_if and br_table to the function's label.
      (func $exits (param $p i32) (param $k i32)
        (i32.store offset=2 (local.get $p) (local.get $k))
        (i32.store (i32.rem_u (i32.add (local.get $p) (i32.const 60000)) (i32.const 131000)) (local.get $k))
        (br_if 0 (i32.eq (local.get $k) (i32.const 1)))
        (i64.store16 offset=6 (local.get $p) (i64.const 77))
        (block $a (br_table $a 1 (i32.and (local.get $k) (i32.const 1))))
        (i32.store offset=12 (local.get $p) (i32.const 5)))
      (func (export "run") (param $s i32) (param $n i32)
        (local $fp i32) (local $i i32) (local $q i32)
        (global.set $seed (local.get $s))
        (i32.store (local.get $fp) (i32.const 3))
        (local.set $fp (call $addr (i32.const 130000)))
        (i32.store offset=4 (local.get $fp) (i32.const -1))
        (i64.store32 offset=40 (local.get $fp) (i64.const 0x1234))
        (block $out
          (loop $l
            (br_if $out (i32.ge_u (local.get $i) (local.get $n)))
            (local.set $q (call $addr (i32.const 131000)))
            (i64.store8 offset=1 (local.get $q) (i64.const 5))
            (i32.store offset=4 (local.tee $q (call $addr (i32.const 131000))) (i32.const 9))
            (local.set $q (call $addr (i32.const 131000)))
            (i32.store (local.get $q) (local.tee $q (i32.add (i32.mul (local.get $i) (i32.const 7777)) (i32.const 5000))))
            (i32.store (i32.and (call $rand) (i32.const 0x1FFF0)) (local.tee $q (i32.const 5)))
            (i32.store16 (local.get $q) (local.get $q))
            (i32.store offset=1000 (local.get $fp) (local.get $i))
            (i64.store (i32.and (call $rand) (i32.const 0x1FFF8)) (i64.const -7))
            (f32.store (i32.and (call $rand) (i32.const 0x1FFFC)) (f32.const -0.5))
            (f64.store offset=8 (i32.and (call $rand) (i32.const 0x1FFF0)) (f64.const 3.25))
            (i64.store16 (call $addr (i32.const 131070)) (i64.const 0x7777))
            (i32.store16 (call $addr (i32.const 131070)) (i32.const 0x6666))
            (i32.store (i32.const 65536) (local.get $i))
            (i64.store offset=2044 (i32.const 0) (i64.const -1))
            (call $poke (call $addr (i32.const 131000)) (local.get $i))
            (call $frame (call $addr (i32.const 131000)) (i64.extend_i32_u (local.get $i)))
            (call $exits (call $addr (i32.const 131000)) (call $rand))
            (memory.fill (call $addr (i32.const 120000)) (i32.const 0x5A) (i32.rem_u (call $rand) (i32.const 9000)))
            (memory.copy (call $addr (i32.const 120000)) (call $addr (i32.const 120000)) (i32.rem_u (call $rand) (i32.const 9000)))
            (memory.init $seg (call $addr (i32.const 130000)) (i32.const 0) (i32.const 20))
            (global.set $g (i32.add (global.get $g) (i32.const 1)))
            (global.set $h (i64.xor (global.get $h) (i64.extend_i32_u (call $rand))))
            (local.set $i (i32.add (local.get $i) (i32.const 1)))
            (br $l)))
        (i64.store offset=8 (local.get $fp) (i64.const 99)))
      (func (export "oob") (param $a i32)
        (i32.store (i32.const 500) (i32.const 1))
        (i64.store (local.get $a) (i64.const 1)))
      (func (export "grow")
        (drop (memory.grow (i32.const 1)))
        (i64.store (i32.const 131070) (i64.const -1)))
    )"#;

    #[test]
    fn instrumented_code_computes_the_same_and_marks_every_written_chunk() {
        let wasm = wat(SCRIBBLER);
        let mut marked = 0u64;
        for seed in 0..200 {
            let args = [Val::I32(seed * 7919 + 1), Val::I32(seed % 5)];
            marked |= check(&wasm, "run", &args, &["g", "h"]);
        }
        // Writes land all over the memory: nearly every chunk was marked by some run.
        assert!(marked.count_ones() > 60, "{marked:016x}");
        // A trapping store and a growth behave as before (the instance is then never reused).
        check(&wasm, "oob", &[Val::I32(131068)], &["g"]);
        check(&wasm, "grow", &[], &["g"]);
    }

    #[test]
    fn a_call_that_writes_little_marks_little() {
        let wasm = wat(SCRIBBLER);
        // No loop iterations: the frame pointer's two stores, and the constant-address marks at entry.
        let dirty = check(&wasm, "run", &[Val::I32(5), Val::I32(0)], &["g", "h"]);
        assert!(dirty.count_ones() <= 6, "{dirty:016x}");
    }

    #[test]
    fn the_plan_names_the_exports_and_the_chunk_size() {
        let out = instr(&wat(SCRIBBLER));
        let plan = out.plan.unwrap();
        assert_eq!(plan.reuse, Ok(()));
        assert_eq!(plan.initial_bytes, 2 << 16);
        assert_eq!(plan.chunk_shift, 11);
        assert_eq!(plan.dirty_export, "__gamechain_dirty");
        assert_eq!(
            plan.global_exports,
            [
                "__gamechain_global_0",
                "__gamechain_global_1",
                "__gamechain_global_2"
            ]
        );
        // Instrumenting is deterministic.
        assert_eq!(instr(&wat(SCRIBBLER)).wasm, out.wasm);
        // Without stores, the code is untouched; the new global and export are still added.
        let quiet = wat(
            r#"(module (memory (export "memory") 1) (func (export "f") (result i32) (i32.const 1)))"#,
        );
        let out = instr(&quiet);
        let plan = out.plan.unwrap();
        let (mut store, inst) = instance(&engine(), &out.wasm);
        assert!(inst.get_global(&mut store, &plan.dirty_export).is_some());
        assert_eq!(plan.chunk_shift, 10);
    }

    #[test]
    fn reserved_names_never_clash_with_the_modules_exports() {
        let out = instr(&wat(
            r#"(module (memory (export "memory") 1) (global (export "__gamechain_dirty") (mut i32) (i32.const 0)))"#,
        ));
        let plan = out.plan.unwrap();
        assert_eq!(plan.dirty_export, "__gamechain__dirty");
        assert_eq!(plan.global_exports, ["__gamechain__global_0"]);
        let (mut store, inst) = instance(&engine(), &out.wasm);
        assert!(inst.get_global(&mut store, "__gamechain_dirty").is_some());
        assert!(inst
            .get_global(&mut store, "__gamechain__global_0")
            .is_some());
    }

    #[test]
    fn modules_whose_state_cannot_be_reset_are_not_reused() {
        let reuse = |body: &str| {
            instr(&wat(&format!(
                r#"(module {body} (memory (export "memory") 1))"#
            )))
            .plan
            .unwrap()
            .reuse
        };
        let table = "(table 2 funcref) (func $f) (elem declare func $f)";
        assert_eq!(
            reuse(&format!(
                "{table} (func (table.set (i32.const 0) (ref.func $f)))"
            )),
            Err("uses table.set".into())
        );
        assert_eq!(
            reuse(&format!(
                "{table} (func (drop (table.grow (ref.null func) (i32.const 1))))"
            )),
            Err("uses table.grow".into())
        );
        assert_eq!(
            reuse(r#"(data $d "x") (func (data.drop $d))"#),
            Err("uses data.drop".into())
        );
        assert_eq!(
            reuse("(global (mut funcref) (ref.null func))"),
            Err("a mutable global of a reference type".into())
        );
        assert_eq!(
            reuse(
                r#"(import "gamechain_v1" "height" (func $h (result i64))) (func $s (drop (call $h))) (start $s)"#
            ),
            Err("the start function may call the host".into())
        );
        assert_eq!(
            reuse(
                r#"(import "gamechain_v1" "height" (func $h (result i64))) (func $t (drop (call $h))) (func $s (call $t)) (start $s)"#
            ),
            Err("the start function may call the host".into())
        );
        assert_eq!(
            reuse("(type $v (func)) (table 1 funcref) (func $s (call_indirect (type $v) (i32.const 0))) (start $s)"),
            Err("the start function may call the host".into())
        );
        let globals: String = (0..=MAX_RESET_GLOBALS)
            .map(|i| format!("(global (mut i32) (i32.const {i}))"))
            .collect();
        assert_eq!(
            reuse(&globals),
            Err("too many mutable globals to reset cheaply".into())
        );
        // A start function that only computes is fine, and so are memory.init and a host import
        // the start function cannot reach.
        assert_eq!(
            reuse(
                r#"(import "gamechain_v1" "height" (func $h (result i64))) (global $g (mut i32) (i32.const 0))
                     (func $s (global.set $g (i32.const 5)) (i32.store (i32.const 8) (i32.const 1))) (start $s)
                     (func (drop (call $h))) (data $d "x") (func (memory.init $d (i32.const 0) (i32.const 0) (i32.const 1)))"#
            ),
            Ok(())
        );
        // Not instrumentable at all: no memory, or a 64-bit one (refused by the engine anyway).
        assert!(instr(&wat("(module (func))")).plan.is_none());
        assert!(instr(b"not wasm").plan.is_none());
        assert_eq!(instr(b"not wasm").wasm, b"not wasm");
    }

    #[test]
    fn restore_ranges_cover_runs_of_chunks_and_the_spill() {
        let plan = Plan {
            dirty_export: String::new(),
            stack_export: String::new(),
            start_export: None,
            global_exports: Vec::new(),
            initial_bytes: 128 << 10,
            chunk_shift: 11,
            reuse: Ok(()),
        };
        let ranges: Vec<_> = plan.restore_ranges(0b1011 | 1 << 63).collect();
        assert_eq!(ranges, [0..4096 + 7, 6144..8192 + 7, 63 * 2048..128 << 10]);
        assert_eq!(
            plan.restore_ranges(u64::MAX).collect::<Vec<_>>(),
            vec![0..128 << 10]
        );
        assert_eq!(plan.restore_ranges(0).count(), 0);
        assert_eq!(chunk_mask(&(0..0), 11), 0);
        assert_eq!(chunk_mask(&(2047..2049), 11), 0b11);
        assert_eq!(chunk_mask(&(4096..6144), 11), 0b100);
        assert_eq!(chunk_mask(&(0..usize::MAX), 11), u64::MAX);
        assert_eq!(chunk_mask(&(1 << 30..(1 << 30) + 1), 11), 1 << 63);
    }

    #[test]
    fn leb_encodings_match_the_parser() {
        for v in [
            0i64,
            1,
            -1,
            63,
            64,
            -64,
            -65,
            i32::MAX as i64,
            i32::MIN as i64,
            i64::MAX,
            i64::MIN,
        ] {
            let mut out = Vec::new();
            leb_i64(&mut out, v);
            assert_eq!(BinaryReader::new(&out, 0).read_var_i64().unwrap(), v);
        }
        for v in [0u32, 127, 128, 16_384, u32::MAX] {
            let mut out = Vec::new();
            leb_u32(&mut out, v);
            assert_eq!(BinaryReader::new(&out, 0).read_var_u32().unwrap(), v);
        }
    }
}
