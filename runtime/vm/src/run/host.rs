//! The host side of ABI version 1: [`HostState`], the data of a call's `Store`, and the helpers
//! every host function of `imports.rs` (ABI.md, "Host imports") is written with.
//!
//! Host functions never implement `Ctx` semantics themselves: they decode guest memory, charge
//! fuel from [`GAS_V1`], and call the `Ctx` (apply, end_block) or `StateRead` (view) the caller of
//! the entry point passed in. That is what makes a module behave the same natively against
//! `MockCtx` and through wasm.
//!
//! Rules every host function follows, in this order:
//! 1. charge `host_call_base` (out of fuel → `internal: out of fuel`);
//! 2. in a view, a write call traps `internal: state is read-only in a view`;
//! 3. validate every `(ptr, len)` against the memory (`internal: bad pointer from module`) —
//!    including the `(out_ptr, out_cap)` buffer, whether or not the result will fit;
//! 4. charge the bytes read (`per_byte_in`, plus `per_byte_stored` / `per_byte_event`);
//! 5. decode text (`internal: invalid UTF-8 from module`) and JSON, do the work, charge
//!    `per_scan_entry` per scan entry;
//! 6. charge `per_byte_out` for the bytes actually written into guest memory, then write.
//!
//! Nothing here panics on guest input; every failure is a [`HostTrap`] inside a
//! `wasmtime::Error`, downcast by [`crate::run::trap::classify`].

use std::ops::Range;

use gamechain_sdk::keys::{balance_key, module_key, module_prefix};
use gamechain_sdk::{ActionError, Ctx, StateRead, MAX_SCAN_LIMIT};
use wasmtime::{Caller, Extern, Memory};

use crate::gas::{bytes, GAS_V1 as GAS};
use crate::run::bounds::CallUse;
use crate::run::fuel::{FuelCounter, HasFuel};
use crate::run::limits::Limits;
use crate::run::nesting::{CodeMemo, Nesting};
use crate::run::trap::HostTrap;

/// Lines of `log`/`abort` text kept per call, and bytes kept per line (the rest is dropped).
pub(crate) const LOG_LINES: usize = 64;
pub(crate) const LOG_LINE_BYTES: usize = 1024;

/// What the host calls of one entry-point call act on.
pub(crate) enum Target {
    /// No caller context: reads see an empty state, writes are refused (used while loading, and
    /// after a call).
    Detached,
    /// `gc_apply` / `gc_end_block`: the caller's `Ctx`, lifetime erased.
    Apply(*mut (dyn Ctx + 'static)),
    /// `gc_view`: the caller's `StateRead`, lifetime erased.
    View(*const (dyn StateRead + 'static)),
    /// A pure entry point called by code hash (`call_code`): no state at all. Every state,
    /// bank, context and module import traps ([`HostState::stateless`]); the pointer is the
    /// state of the chain's top caller, read only to find code by hash for a nested
    /// `call_code` (the code store is content-addressed: what a hash names never changes).
    Sealed(*const (dyn StateRead + 'static)),
}

// SAFETY: a `Target` other than `Detached` exists only inside one entry-point call, on the thread
// that made it (the caller's borrow outlives it, see `Target::apply`), and the call detaches it
// before returning. Only then may the store holding it (a warm instance waiting for its next
// call) move to another thread, and a detached target points at nothing.
unsafe impl Send for Target {}

impl Target {
    /// Points the host calls at `ctx`.
    ///
    /// # Safety
    /// The returned value (and the `HostState` it is put in) must not be used after `ctx`'s
    /// borrow ends: the caller must detach it (see [`HostState::detach`]) or drop the store before
    /// returning, and must not touch `ctx` while the store can still reach it.
    pub(crate) unsafe fn apply(ctx: &mut dyn Ctx) -> Self {
        let ptr: *mut (dyn Ctx + '_) = ctx;
        // SAFETY: only the trait object's lifetime bound changes; the layout is identical. The
        // caller guarantees the pointer is not used past the borrow (see above).
        Self::Apply(unsafe {
            std::mem::transmute::<*mut (dyn Ctx + '_), *mut (dyn Ctx + 'static)>(ptr)
        })
    }

    /// Points the host calls at `state`, read-only.
    ///
    /// # Safety
    /// As [`Target::apply`].
    pub(crate) unsafe fn view(state: &dyn StateRead) -> Self {
        // SAFETY: as in `Target::apply`.
        Self::View(unsafe { erase(state) })
    }

    /// No state: a call by code hash; `code_state` is read only to find code by hash.
    ///
    /// # Safety
    /// As [`Target::apply`].
    pub(crate) unsafe fn sealed(code_state: &dyn StateRead) -> Self {
        // SAFETY: as in `Target::apply`.
        Self::Sealed(unsafe { erase(code_state) })
    }
}

/// `state` with its lifetime erased.
///
/// # Safety
/// As [`Target::apply`]: the pointer must not be used after the borrow ends.
unsafe fn erase(state: &dyn StateRead) -> *const (dyn StateRead + 'static) {
    let ptr: *const (dyn StateRead + '_) = state;
    // SAFETY: only the trait object's lifetime bound changes; the layout is identical.
    unsafe {
        std::mem::transmute::<*const (dyn StateRead + '_), *const (dyn StateRead + 'static)>(ptr)
    }
}

/// The state nothing was written to.
struct EmptyState;

impl StateRead for EmptyState {
    fn read_raw(&self, _key: &str) -> Option<Vec<u8>> {
        None
    }
    fn scan_raw(
        &self,
        _prefix: &str,
        _start_after: Option<&str>,
        _limit: usize,
    ) -> Vec<(String, Vec<u8>)> {
        Vec::new()
    }
}

/// An apply's `Ctx` read as raw state (what a `call_pure` callee sees).
struct CtxReader<'a>(&'a dyn Ctx);

impl StateRead for CtxReader<'_> {
    fn read_raw(&self, key: &str) -> Option<Vec<u8>> {
        self.0.read_raw(key)
    }
    fn scan_raw(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> Vec<(String, Vec<u8>)> {
        self.0.scan_raw(prefix, start_after, limit)
    }
}

/// The data of one call's `Store`.
pub(crate) struct HostState {
    /// What host calls act on, set for the duration of one entry-point call.
    pub(crate) target: Target,
    /// The module's id (scope of `get`/`put`/`scan` in a view, where there is no `Ctx`).
    pub(crate) module_id: &'static str,
    /// The instance's memory, attached after instantiation (or on first use from a start
    /// function).
    pub(crate) memory: Option<Memory>,
    /// The bytes of the last `output` call.
    pub(crate) output: Option<Vec<u8>>,
    /// The error object (JSON) of the last failed bank call; empty when none.
    pub(crate) last_error: Vec<u8>,
    /// `public_random` calls so far in a view (in apply the `Ctx` counts).
    pub(crate) view_random: u64,
    /// `log` and `abort` lines, for the node's log only.
    pub(crate) log: Vec<String>,
    /// The store's resource limiter.
    pub(crate) limits: Limits,
    /// Chunks of the initial memory (`instrument/`) the host wrote into during this call:
    /// reset with the chunks the module marked in its `dirty` global.
    pub(crate) host_writes: u64,
    /// `log2` of the module's chunk size (see [`crate::load::instrument::Plan`]).
    pub(crate) chunk_shift: u32,
    /// What this call has used of its per-call bounds (`bounds.rs`).
    pub(crate) used: CallUse,
    /// How deep this call is nested in `call_pure`s (0 for an entry point the node called) and
    /// who resolves the modules a `call_pure` names (`pure.rs`).
    pub(crate) nesting: Nesting,
    /// The code found by hash in this chain of calls when this call is its top (`pure.rs`).
    pub(crate) code_memo: CodeMemo,
    /// The fuel counter (`fuel.rs`).
    pub(crate) fuel: FuelCounter,
    /// Whether the module exports `gc_scheduled` (a call can be scheduled only then).
    pub(crate) schedulable: bool,
    /// Most fuel a scheduled call may be given: the chain's `fuel_apply`.
    pub(crate) max_scheduled_fuel: u64,
}

impl HasFuel for HostState {
    fn fuel(&self) -> &FuelCounter {
        &self.fuel
    }
    fn fuel_mut(&mut self) -> &mut FuelCounter {
        &mut self.fuel
    }
}

impl HostState {
    pub(crate) fn new(module_id: &'static str, target: Target, limits: Limits) -> Self {
        Self {
            target,
            module_id,
            memory: None,
            output: None,
            last_error: Vec::new(),
            view_random: 0,
            log: Vec::new(),
            limits,
            host_writes: 0,
            chunk_shift: 0,
            used: CallUse::default(),
            nesting: Nesting::TOP,
            code_memo: CodeMemo::default(),
            fuel: FuelCounter::default(),
            schedulable: false,
            max_scheduled_fuel: 0,
        }
    }

    /// Starts an entry-point call on a reused store: `target` attached, and everything a
    /// previous call left here (output, last error, random counter, log lines) forgotten, as in
    /// a new `HostState`.
    pub(crate) fn begin(&mut self, target: Target, nesting: Nesting) {
        self.target = target;
        self.nesting = nesting;
        self.output = None;
        self.last_error.clear();
        self.view_random = 0;
        self.log.clear();
        self.host_writes = 0;
        self.used = CallUse::default();
        self.code_memo.get_mut().clear();
    }

    /// Records that the host wrote guest bytes `range`.
    pub(crate) fn wrote(&mut self, range: &Range<usize>) {
        self.host_writes |= crate::load::instrument::chunk_mask(range, self.chunk_shift);
    }

    /// Forgets the caller's context: from now on host calls see an empty, read-only state.
    pub(crate) fn detach(&mut self) {
        self.target = Target::Detached;
        self.nesting = Nesting::TOP;
        self.code_memo.get_mut().clear();
    }

    /// `Err(NoState)` inside a call by code hash, where every state, bank, context and module
    /// import traps (ABI.md `call_code`).
    pub(crate) fn stateless(&self) -> Result<(), HostTrap> {
        match self.target {
            Target::Sealed(_) => Err(HostTrap::NoState),
            _ => Ok(()),
        }
    }

    /// The chain of calls' [`CodeMemo`]: the top call's.
    pub(crate) fn codes(&self) -> *const CodeMemo {
        self.nesting.codes.unwrap_or(&self.code_memo)
    }

    /// The state code is found in by hash (`call_code`): the caller's state (as
    /// [`HostState::with_reader`]), or inside a call by code hash its top caller's.
    pub(crate) fn with_code_reader<T>(&self, f: impl FnOnce(&dyn StateRead) -> T) -> T {
        match self.target {
            // SAFETY: as in `ctx`: attached for the duration of this call only.
            Target::Sealed(ptr) => f(unsafe { &*ptr }),
            _ => self.with_reader(f),
        }
    }

    /// The state a `call_pure` callee reads: the caller's current state, its own writes so far
    /// included (an apply's `Ctx`, a view's state, or the empty state when detached).
    pub(crate) fn with_reader<T>(&self, f: impl FnOnce(&dyn StateRead) -> T) -> T {
        match (self.ctx(), self.view_state()) {
            (Some(ctx), _) => f(&CtxReader(ctx)),
            (None, Some(state)) => f(state),
            (None, None) => f(&EmptyState),
        }
    }

    pub(crate) fn attach_memory(&mut self, memory: Memory) {
        self.memory = Some(memory);
    }

    /// The caller's `Ctx` in apply / end_block.
    pub(crate) fn ctx(&self) -> Option<&dyn Ctx> {
        match self.target {
            // SAFETY: the pointer is live while it is attached (`Target::apply`'s contract), and
            // host calls run only inside the entry-point call that attached it.
            Target::Apply(ptr) => Some(unsafe { &*ptr }),
            _ => None,
        }
    }

    /// The caller's `Ctx` for a write; in a view (or detached) the read-only trap.
    pub(crate) fn ctx_mut(&mut self) -> Result<&mut dyn Ctx, HostTrap> {
        match self.target {
            // SAFETY: as in `ctx`; the caller of the entry point gave a unique borrow and does
            // not use it until the call returns.
            Target::Apply(ptr) => Ok(unsafe { &mut *ptr }),
            _ => Err(HostTrap::ReadOnly),
        }
    }

    /// The state a view reads (an empty one when detached). `None` in apply.
    pub(crate) fn view_state(&self) -> Option<&dyn StateRead> {
        match self.target {
            // SAFETY: as in `ctx`.
            Target::View(ptr) => Some(unsafe { &*ptr }),
            Target::Detached | Target::Sealed(_) => Some(&EmptyState),
            Target::Apply(_) => None,
        }
    }

    pub(crate) fn is_writable(&self) -> bool {
        matches!(self.target, Target::Apply(_))
    }

    pub(crate) fn module(&self) -> &str {
        self.ctx().map_or(self.module_id, |c| c.module())
    }

    pub(crate) fn get(&self, key: &str) -> Option<Vec<u8>> {
        match self.ctx() {
            Some(c) => c.get(key),
            None => self
                .view_state()?
                .read_raw(&module_key(self.module_id, key)),
        }
    }

    pub(crate) fn scan(
        &self,
        prefix: &str,
        start: Option<&str>,
        limit: usize,
    ) -> Vec<(String, Vec<u8>)> {
        match self.ctx() {
            Some(c) => c.scan(prefix, start, limit),
            None => {
                let Some(state) = self.view_state() else {
                    return Vec::new();
                };
                let scope = module_prefix(self.module_id);
                let start = start.map(|s| module_key(self.module_id, s));
                let mut entries =
                    state.scan_raw(&module_key(self.module_id, prefix), start.as_deref(), limit);
                for (key, _) in &mut entries {
                    key.replace_range(..scope.len(), "");
                }
                entries
            }
        }
    }

    pub(crate) fn read_raw(&self, key: &str) -> Option<Vec<u8>> {
        match self.ctx() {
            Some(c) => c.read_raw(key),
            None => self.view_state()?.read_raw(key),
        }
    }

    pub(crate) fn scan_raw(
        &self,
        prefix: &str,
        start: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Vec<u8>)>, HostTrap> {
        match self.ctx() {
            Some(c) => Ok(c.scan_raw(prefix, start, limit)),
            None => Ok(self
                .view_state()
                .map(|s| s.scan_raw(prefix, start, limit))
                .unwrap_or_default()),
        }
    }

    pub(crate) fn balance(&self, account: &str, token: &str) -> u128 {
        match self.ctx() {
            Some(c) => c.balance(account, token),
            // As `ledger::balance`: a canonical decimal string, absent (or unreadable) = 0.
            None => self
                .read_raw(&balance_key(account, token))
                .and_then(|b| std::str::from_utf8(&b).ok()?.parse::<u128>().ok())
                .unwrap_or(0),
        }
    }

    pub(crate) fn public_random(&mut self) -> [u8; 32] {
        match self.ctx_mut() {
            Ok(c) => c.public_random(),
            Err(_) => {
                let n = self.view_random;
                self.view_random += 1;
                gamechain_sdk::public_random("", 0, n)
            }
        }
    }

    /// Records a bank call's result: `0` on success, `1` with `last_error` set on failure.
    pub(crate) fn bank_status(&mut self, result: Result<(), ActionError>) -> i32 {
        match result {
            Ok(()) => 0,
            Err(e) => {
                self.last_error =
                    serde_json::to_vec(&e.to_json()).expect("an error object always serialises");
                1
            }
        }
    }

    pub(crate) fn push_log(&mut self, bytes: &[u8]) {
        if self.log.len() < LOG_LINES {
            let line =
                String::from_utf8_lossy(&bytes[..bytes.len().min(LOG_LINE_BYTES)]).into_owned();
            self.log.push(line);
        }
    }
}

pub(crate) type Cx<'a> = Caller<'a, HostState>;
pub(crate) type R<T> = wasmtime::Result<T>;

pub(crate) fn fail(trap: HostTrap) -> wasmtime::Error {
    wasmtime::Error::new(trap)
}

/// Traps `internal: no state in a call by code hash` inside a call by code hash (`call_code`):
/// every state, bank, context and module import calls this right after its base charge.
pub(crate) fn stateful(cx: &Cx<'_>) -> R<()> {
    cx.data().stateless().map_err(fail)
}

/// Takes `fuel` from the store's counter (`fuel.rs`); when it holds less, empties it and traps
/// out of fuel.
pub(crate) fn charge(cx: &mut Cx<'_>, fuel: u64) -> R<()> {
    let left = crate::run::fuel::left(&mut *cx);
    match left.checked_sub(fuel) {
        Some(rest) => crate::run::fuel::set(&mut *cx, rest),
        None => {
            crate::run::fuel::set(&mut *cx, 0)?;
            Err(fail(HostTrap::OutOfFuel))
        }
    }
}

/// The instance's memory: attached after instantiation, or looked up once when a start function
/// calls the host before that. A module is validated to export one, so `None` cannot happen for
/// a loaded module; it is still a guest-visible trap rather than a panic.
pub(crate) fn memory(cx: &mut Cx<'_>) -> R<Memory> {
    if let Some(m) = cx.data().memory {
        return Ok(m);
    }
    let m = cx
        .get_export("memory")
        .and_then(Extern::into_memory)
        .ok_or_else(|| fail(HostTrap::BadPointer))?;
    cx.data_mut().memory = Some(m);
    Ok(m)
}

/// `(ptr, len)` as a byte range of a memory of `size` bytes: `ptr` is an unsigned offset, `len`
/// must be non-negative and the range must end inside the memory.
pub(crate) fn span(ptr: i32, len: i32, size: usize) -> Result<Range<usize>, HostTrap> {
    let len = usize::try_from(len).map_err(|_| HostTrap::BadPointer)?;
    let start = ptr as u32 as usize;
    let end = start.checked_add(len).ok_or(HostTrap::BadPointer)?;
    if end > size {
        return Err(HostTrap::BadPointer);
    }
    Ok(start..end)
}

/// Validates `N` ranges against the current memory.
pub(crate) fn spans<const N: usize>(
    cx: &mut Cx<'_>,
    mem: Memory,
    raw: [(i32, i32); N],
) -> R<[Range<usize>; N]> {
    let size = mem.data_size(&*cx);
    let mut out: [Range<usize>; N] = std::array::from_fn(|_| 0..0);
    for (slot, (ptr, len)) in out.iter_mut().zip(raw) {
        *slot = span(ptr, len, size).map_err(fail)?;
    }
    Ok(out)
}

/// The text at `range`.
pub(crate) fn text<'m>(mem: &'m [u8], range: &Range<usize>) -> Result<&'m str, HostTrap> {
    std::str::from_utf8(&mem[range.clone()]).map_err(|_| HostTrap::InvalidUtf8)
}

/// Writes a variable-length result into the caller buffer `out` when it fits (charging
/// `per_byte_out`), and returns its full length either way.
pub(crate) fn write_out(cx: &mut Cx<'_>, mem: Memory, out: Range<usize>, result: &[u8]) -> R<i64> {
    if result.len() <= out.len() {
        charge(cx, bytes(GAS.per_byte_out, result.len()))?;
        let written = out.start..out.start + result.len();
        cx.data_mut().wrote(&written);
        mem.data_mut(&mut *cx)[written].copy_from_slice(result);
    }
    Ok(result.len() as i64)
}

/// Writes a fixed-size result (balance, public_random) at `out`.
pub(crate) fn write_fixed(cx: &mut Cx<'_>, mem: Memory, out: Range<usize>, result: &[u8]) -> R<()> {
    debug_assert_eq!(out.len(), result.len());
    charge(cx, bytes(GAS.per_byte_out, result.len()))?;
    cx.data_mut().wrote(&out);
    mem.data_mut(&mut *cx)[out].copy_from_slice(result);
    Ok(())
}

/// The borsh encoding of a scan result: `u32 count`, then `u32 key_len, key, u32 value_len,
/// value` per entry, little-endian.
pub(crate) fn encode_scan(entries: &[(String, Vec<u8>)]) -> Vec<u8> {
    let size = 4 + entries
        .iter()
        .map(|(k, v)| 8 + k.len() + v.len())
        .sum::<usize>();
    let mut out = Vec::with_capacity(size);
    out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
    for (k, v) in entries {
        out.extend_from_slice(&(k.len() as u32).to_le_bytes());
        out.extend_from_slice(k.as_bytes());
        out.extend_from_slice(&(v.len() as u32).to_le_bytes());
        out.extend_from_slice(v);
    }
    out
}

/// A `u128` from the ABI's two `i64` halves.
pub(crate) fn amount(lo: i64, hi: i64) -> u128 {
    (u128::from(hi as u64) << 64) | u128::from(lo as u64)
}

/// A context text (`module_id`, `txid`, …) into the caller buffer; returns its length.
pub(crate) fn context_text(
    mut cx: Cx<'_>,
    out_ptr: i32,
    out_cap: i32,
    value: impl FnOnce(&HostState) -> String,
) -> R<i32> {
    charge(&mut cx, GAS.host_call_base)?;
    stateful(&cx)?;
    let mem = memory(&mut cx)?;
    let [out] = spans(&mut cx, mem, [(out_ptr, out_cap)])?;
    let value = value(cx.data());
    let n = write_out(&mut cx, mem, out, value.as_bytes())?;
    Ok(n as i32)
}

/// `get` and `read_raw`: a value into the caller buffer, `-1` when absent.
pub(crate) fn get_like(
    mut cx: Cx<'_>,
    key: (i32, i32),
    out: (i32, i32),
    read: fn(&HostState, &str) -> Option<Vec<u8>>,
) -> R<i64> {
    charge(&mut cx, GAS.host_call_base)?;
    stateful(&cx)?;
    let mem = memory(&mut cx)?;
    let [key_r, out_r] = spans(&mut cx, mem, [key, out])?;
    charge(&mut cx, bytes(GAS.per_byte_in, key_r.len()))?;
    let value = {
        let (data, st) = mem.data_and_store_mut(&mut cx);
        read(st, text(data, &key_r).map_err(fail)?)
    };
    match value {
        None => Ok(-1),
        Some(v) => write_out(&mut cx, mem, out_r, &v),
    }
}

/// A scan of the host state: `(prefix, start_after, limit)` to entries.
pub(crate) type ScanFn =
    fn(&HostState, &str, Option<&str>, usize) -> Result<Vec<(String, Vec<u8>)>, HostTrap>;

/// `scan` and `scan_raw`: the encoded entries into the caller buffer.
pub(crate) fn scan_like(
    mut cx: Cx<'_>,
    prefix: (i32, i32),
    start: (i32, i32),
    limit: i32,
    out: (i32, i32),
    scan: ScanFn,
) -> R<i64> {
    charge(&mut cx, GAS.host_call_base)?;
    stateful(&cx)?;
    let mem = memory(&mut cx)?;
    let has_start = start.1 != -1;
    let [prefix_r, out_r, start_r] = spans(
        &mut cx,
        mem,
        [prefix, out, if has_start { start } else { (0, 0) }],
    )?;
    // A negative limit is refused like a negative length.
    let limit = usize::try_from(limit)
        .map_err(|_| fail(HostTrap::BadPointer))?
        .min(MAX_SCAN_LIMIT);
    charge(
        &mut cx,
        bytes(GAS.per_byte_in, prefix_r.len() + start_r.len()),
    )?;
    let entries = {
        let (data, st) = mem.data_and_store_mut(&mut cx);
        let prefix = text(data, &prefix_r).map_err(fail)?;
        let start = if has_start {
            Some(text(data, &start_r).map_err(fail)?)
        } else {
            None
        };
        scan(st, prefix, start, limit).map_err(fail)?
    };
    charge(&mut cx, bytes(GAS.per_scan_entry, entries.len()))?;
    write_out(&mut cx, mem, out_r, &encode_scan(&entries))
}

/// The account/token/amount bank calls (`escrow_in`, `escrow_out`, `mint`, `burn`).
pub(crate) fn transfer_like(
    mut cx: Cx<'_>,
    account: (i32, i32),
    token: (i32, i32),
    amount: u128,
    op: fn(&mut dyn Ctx, &str, &str, u128) -> Result<(), ActionError>,
) -> R<i32> {
    charge(&mut cx, GAS.host_call_base)?;
    stateful(&cx)?;
    if !cx.data().is_writable() {
        return Err(fail(HostTrap::ReadOnly));
    }
    let mem = memory(&mut cx)?;
    let [acct_r, token_r] = spans(&mut cx, mem, [account, token])?;
    charge(
        &mut cx,
        bytes(GAS.per_byte_in, acct_r.len() + token_r.len()),
    )?;
    let (data, st) = mem.data_and_store_mut(&mut cx);
    let (account, token) = (
        text(data, &acct_r).map_err(fail)?,
        text(data, &token_r).map_err(fail)?,
    );
    let result = op(st.ctx_mut().map_err(fail)?, account, token, amount);
    Ok(st.bank_status(result))
}

/// `output`, `abort` and `log`: the bytes at `(ptr, len)`, charged as read.
pub(crate) fn read_input(cx: &mut Cx<'_>, ptr: i32, len: i32) -> R<Vec<u8>> {
    charge(cx, GAS.host_call_base)?;
    let mem = memory(cx)?;
    let [r] = spans(cx, mem, [(ptr, len)])?;
    charge(cx, bytes(GAS.per_byte_in, r.len()))?;
    Ok(mem.data(&*cx)[r].to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_refuse_negative_overflowing_and_outside_ranges() {
        assert_eq!(span(0, 0, 0), Ok(0..0));
        assert_eq!(span(10, 5, 15), Ok(10..15));
        assert_eq!(span(10, 6, 15), Err(HostTrap::BadPointer));
        assert_eq!(span(0, -1, 100), Err(HostTrap::BadPointer));
        assert_eq!(span(-1, 1, 100), Err(HostTrap::BadPointer));
        assert_eq!(span(-1, 0, usize::MAX), Ok(0xFFFF_FFFF..0xFFFF_FFFF));
        assert_eq!(span(i32::MAX, i32::MAX, 1 << 20), Err(HostTrap::BadPointer));
    }

    #[test]
    fn amounts_and_scan_records_use_the_abi_layout() {
        assert_eq!(amount(-1, 0), u64::MAX as u128);
        assert_eq!(amount(0, 1), 1u128 << 64);
        assert_eq!(amount(-1, -1), u128::MAX);
        let enc = encode_scan(&[("ab".into(), vec![1, 2, 3])]);
        assert_eq!(
            enc,
            [1, 0, 0, 0, 2, 0, 0, 0, b'a', b'b', 3, 0, 0, 0, 1, 2, 3]
        );
        assert_eq!(encode_scan(&[]), [0, 0, 0, 0]);
    }
}
