//! The binary rewriter: walks every section of a module once, copies it verbatim or with the
//! added global, exports, locals and instructions, and collects the [`Plan`].

use crate::load::stack::Costs;
use wasmparser::{BinaryReader, FunctionBody, Operator, Parser, Payload, TypeRef, ValType};

use super::marks::{Locals, Marks, ADDED_LOCALS, MAX_LOCALS};
use super::meter;
use super::plan::{Plan, CHUNKS, MAX_RESET_GLOBALS};
use super::sections::{exports_with, globals_with, rank, reserved_prefix, split_count, Res};
use crate::load::encode::*;

/// What one defined function does that matters for the plan.
#[derive(Default)]
pub(super) struct FuncSummary {
    /// Functions it calls directly.
    pub(super) calls: Vec<u32>,
    /// It has a `call_indirect` (or another call the analysis cannot follow).
    pub(super) indirect: bool,
}

pub(super) struct Rewriter<'a> {
    pub(super) wasm: &'a [u8],
    /// Parameter count of each type (`None`: not a function type).
    pub(super) type_params: Vec<Option<u32>>,
    pub(super) func_imports: u32,
    pub(super) global_imports: u32,
    pub(super) other_imports: bool,
    /// Type index of each defined function.
    pub(super) func_types: Vec<u32>,
    pub(super) tables: u32,
    pub(super) memories: Vec<wasmparser::MemoryType>,
    /// Defined globals.
    pub(super) globals: Vec<wasmparser::GlobalType>,
    pub(super) exports: Vec<String>,
    pub(super) start: Option<u32>,
    /// Rewritten function bodies (each with its size prefix), in order.
    pub(super) bodies: Vec<u8>,
    pub(super) body_count: u32,
    pub(super) summaries: Vec<FuncSummary>,
    /// First reason found not to reuse instances.
    pub(super) refuse: Option<String>,
    /// What each call costs on the logical stack.
    pub(super) costs: Costs,
    /// Index of the stack-height global.
    pub(super) stack_global: u32,
    /// Index of the fuel counter global (`meter.rs`).
    pub(super) fuel_global: u32,
    /// A function has too many locals to add the instrumentation's own.
    pub(super) unfit: bool,
    /// The instrumentation revision (`mod.rs`, `version`).
    pub(super) revision: u32,
}

impl<'a> Rewriter<'a> {
    pub(super) fn run(wasm: &'a [u8], costs: Costs, revision: u32) -> Res<Option<(Vec<u8>, Plan)>> {
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
            fuel_global: 0,
            unfit: false,
            revision,
        };
        // Pass 1: everything but the code; the memory's size is needed before the code.
        if !r.read_sections()? {
            return Ok(None);
        }
        let Some((initial_bytes, chunk_shift)) = r.memory_geometry() else {
            return Ok(None);
        };

        let prefix = reserved_prefix(&r.exports);
        let dirty_index = r.global_imports + r.globals.len() as u32;
        let dirty_export = format!("{prefix}dirty");
        r.stack_global = dirty_index + 1;
        let stack_export = format!("{prefix}stack");
        r.fuel_global = dirty_index + 2;
        let fuel_export = format!("{prefix}fuel");
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
        // The exports added: `dirty`, the stack height, the fuel counter, the mutable globals,
        // the start function.
        let mut added: Vec<(String, u8, u32)> = vec![
            (dirty_export.clone(), 0x03, dirty_index),
            (stack_export.clone(), 0x03, r.stack_global),
            (fuel_export.clone(), 0x03, r.fuel_global),
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

        r.judge_reuse(mutable.len());

        let out = r.assemble(&added)?;
        let plan = Plan {
            dirty_export,
            stack_export,
            fuel_export,
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

    /// Pass 1: the types, imports, functions, tables, memories, globals, exports and start
    /// function, everything but the code. `false` when the bytes are not a core module.
    fn read_sections(&mut self) -> Res<bool> {
        for payload in Parser::new(0).parse_all(self.wasm) {
            match payload? {
                Payload::Version {
                    encoding: wasmparser::Encoding::Module,
                    ..
                } => {}
                Payload::Version { .. } => return Ok(false),
                Payload::TypeSection(s) => {
                    for group in s {
                        for sub in group?.into_types() {
                            self.type_params.push(match &sub.composite_type.inner {
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
                            TypeRef::Func(_) | TypeRef::FuncExact(_) => self.func_imports += 1,
                            TypeRef::Global(_) => {
                                self.global_imports += 1;
                                self.other_imports = true;
                            }
                            _ => self.other_imports = true,
                        }
                    }
                }
                Payload::FunctionSection(s) => {
                    for t in s {
                        self.func_types.push(t?);
                    }
                }
                Payload::TableSection(s) => self.tables += s.count(),
                Payload::MemorySection(s) => {
                    for m in s {
                        self.memories.push(m?);
                    }
                }
                Payload::GlobalSection(s) => {
                    for g in s {
                        self.globals.push(g?.ty);
                    }
                }
                Payload::ExportSection(s) => {
                    for e in s {
                        self.exports.push(e?.name.to_string());
                    }
                }
                Payload::StartSection { func, .. } => self.start = Some(func),
                _ => {}
            }
        }
        Ok(true)
    }

    /// The memory's initial size in bytes and the dirty-chunk shift (chunk = initial size / 64,
    /// rounded up to a power of two). `None` unless there is exactly one 32-bit memory of
    /// 64 KiB pages of at most 4 GiB.
    fn memory_geometry(&self) -> Option<(usize, u32)> {
        let [memory] = self.memories[..] else {
            return None;
        };
        if memory.memory64 || memory.shared || memory.page_size_log2.is_some_and(|p| p != 16) {
            return None;
        }
        let initial_bytes =
            usize::try_from(memory.initial.saturating_mul(1 << 16)).unwrap_or(usize::MAX);
        if initial_bytes > 1 << 32 {
            return None;
        }
        let chunk = (initial_bytes.div_ceil(CHUNKS as usize))
            .max(1)
            .next_power_of_two();
        let chunk_shift = chunk.trailing_zeros();
        Some((initial_bytes, chunk_shift))
    }

    /// The plan's verdict on reuse (see [`Plan::reuse`]): what the host could not restore.
    fn judge_reuse(&mut self, mutable_globals: usize) {
        if self.tables > 1 {
            self.refuse("more than one table");
        }
        if self.other_imports {
            self.refuse("imports something other than functions");
        }
        if self.globals.iter().any(|g| {
            g.mutable
                && !matches!(
                    g.content_type,
                    ValType::I32 | ValType::I64 | ValType::F32 | ValType::F64
                )
        }) {
            self.refuse("a mutable global of a reference type");
        }
        if mutable_globals > MAX_RESET_GLOBALS {
            self.refuse("too many mutable globals to reset cheaply");
        }
        if let Some(start) = self.start {
            if self.may_call_out(start) {
                self.refuse("the start function may call the host");
            }
        }
    }

    /// The instrumented module: every section verbatim, except globals, exports (plus `added`)
    /// and code (the rewritten bodies); the start section is dropped (its function is exported).
    fn assemble(&self, added: &[(String, u8, u32)]) -> Res<Vec<u8>> {
        let mut out = Vec::with_capacity(self.wasm.len() + self.wasm.len() / 4);
        out.extend_from_slice(&self.wasm[..8]);
        let mut reader = BinaryReader::new(&self.wasm[8..], 8);
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
                    section(&mut out, 7, &exports_with(&[], 0, added));
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
                    section(&mut out, 7, &exports_with(rest, count, added));
                    exports_done = true;
                }
                10 => {
                    let mut code = Vec::with_capacity(self.bodies.len() + 5);
                    leb_u32(&mut code, self.body_count);
                    code.extend_from_slice(&self.bodies);
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
            section(&mut out, 7, &exports_with(&[], 0, added));
        }
        Ok(out)
    }

    pub(super) fn refuse(&mut self, why: &str) {
        if self.refuse.is_none() {
            self.refuse = Some(why.to_string());
        }
    }

    /// Whether function `f` can reach a host import or an indirect call.
    pub(super) fn may_call_out(&self, f: u32) -> bool {
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
    pub(super) fn call_cost(&self, op: &Operator<'_>) -> u32 {
        match op {
            Operator::Call { function_index } => self.costs.call(*function_index),
            Operator::CallIndirect { type_index, .. } => self.costs.call_indirect(*type_index),
            _ => 0,
        }
    }

    /// Rewrites one function body into `self.bodies` (see [`Marks`] for what is inserted, and
    /// `stack.rs` for the code around calls).
    pub(super) fn rewrite_body(
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
        let v3 = self.revision >= 2;
        let charges = meter::charges(&ops);
        let metered = charges.iter().any(|&c| c > 0);
        let in_local = v3 && metered && meter::counter_in_local(&ops, &charges, &marks.exits);
        let func = if marks.sites == 0 && !calls && !metered {
            // Nothing written, no counted call, nothing to charge: the body as it was.
            self.wasm[range.clone()].to_vec()
        } else {
            let mut func = Vec::with_capacity(range.len() * 2);
            let added: &[u8] = if marks.sites == 0 { &[] } else { &ADDED_LOCALS };
            let fuel_local = base as u32 + added.len() as u32;
            if added.is_empty() && !in_local {
                // Only calls to count and blocks to charge: the locals as they were.
                func.extend_from_slice(&self.wasm[range.start..locals_end]);
            } else {
                let count = added.len() as u64 + u64::from(in_local);
                if base + count > MAX_LOCALS {
                    // Cannot be instrumented (the validator's locals limit prevents it).
                    self.unfit = true;
                }
                leb_u32(&mut func, groups + count as u32);
                func.extend_from_slice(&self.wasm[groups_start..locals_end]);
                for &ty in added.iter().chain(in_local.then_some(&I64)) {
                    leb_u32(&mut func, 1);
                    func.push(ty);
                }
            }
            let locals = Locals::at(base as u32);
            let stack = (&self.costs, self.stack_global);
            let counter = if in_local {
                meter::Counter::Local {
                    global: self.fuel_global,
                    local: fuel_local,
                }
            } else {
                meter::Counter::Global(self.fuel_global)
            };
            let meter = (&charges[..], counter);
            marks.emit(
                &mut func, self.wasm, &ops, &locals, dirty, shift, stack, meter,
            );
            func
        };
        leb_u32(&mut self.bodies, func.len() as u32);
        self.bodies.extend_from_slice(&func);
        self.body_count += 1;
        Ok(())
    }
}
