//! The guest side of the host/guest ABI, version 1 (`ABI.md`), for Rust modules compiled to
//! `wasm32-unknown-unknown`. Compiled on wasm32 only.
//!
//! Owns:
//! - the raw imports from `gamechain_v1` ([`abi`]), exactly as ABI.md lists them;
//! - [`HostCtx`], the [`Ctx`] of `gc_apply`/`gc_end_block`, and [`HostState`], the [`StateRead`]
//!   of `gc_view`, both implemented over those imports (variable-length results use the ABI's
//!   buffer-retry protocol);
//! - the bump global allocator: every call runs in a fresh instance (ABI.md, "Guest exports"),
//!   so nothing is ever freed and `memory.grow` runs only when the current memory is full;
//! - the panic hook that reports a panic's message to the host's `abort`;
//! - the bodies of the entry points ([`abi_version`], [`alloc`], [`apply`], [`view`],
//!   [`end_block`], [`migrate`]) that [`crate::export_module!`] exports under their `gc_*` names.

use core::alloc::{GlobalAlloc, Layout};
use core::cell::{Cell, OnceCell};

use serde_json::Value;

use crate::{ActionError, Checkpoint, Ctx, GameModule, Query, StateRead};

/// The ABI version this SDK implements; `gc_abi_version` returns it.
pub const ABI_VERSION: i32 = 1;

/// The raw host imports of ABI version 1, module `gamechain_v1`. Pointers are offsets into this
/// module's memory; `(out_ptr, out_cap)` pairs follow ABI.md, "Variable-length results". Prefer
/// [`HostCtx`] and [`HostState`], which wrap every one of them.
#[allow(missing_docs)]
pub mod abi {
    #[link(wasm_import_module = "gamechain_v1")]
    extern "C" {
        // Context.
        pub fn height() -> i64;
        pub fn block_time_ms() -> i64;
        pub fn module_id(out_ptr: *mut u8, out_cap: i32) -> i32;
        pub fn txid(out_ptr: *mut u8, out_cap: i32) -> i32;
        pub fn sequencer(out_ptr: *mut u8, out_cap: i32) -> i32;
        pub fn checkpoint(out_ptr: *mut u8, out_cap: i32) -> i32;

        // State.
        pub fn get(key_ptr: *const u8, key_len: i32, out_ptr: *mut u8, out_cap: i32) -> i64;
        pub fn put(key_ptr: *const u8, key_len: i32, val_ptr: *const u8, val_len: i32);
        pub fn delete(key_ptr: *const u8, key_len: i32);
        pub fn scan(
            prefix_ptr: *const u8,
            prefix_len: i32,
            start_ptr: *const u8,
            start_len: i32,
            limit: i32,
            out_ptr: *mut u8,
            out_cap: i32,
        ) -> i64;
        pub fn read_raw(key_ptr: *const u8, key_len: i32, out_ptr: *mut u8, out_cap: i32) -> i64;
        pub fn scan_raw(
            prefix_ptr: *const u8,
            prefix_len: i32,
            start_ptr: *const u8,
            start_len: i32,
            limit: i32,
            out_ptr: *mut u8,
            out_cap: i32,
        ) -> i64;

        // Bank.
        pub fn balance(
            acct_ptr: *const u8,
            acct_len: i32,
            token_ptr: *const u8,
            token_len: i32,
            out_ptr: *mut u8,
        );
        pub fn escrow_in(
            from_ptr: *const u8,
            from_len: i32,
            token_ptr: *const u8,
            token_len: i32,
            lo: i64,
            hi: i64,
        ) -> i32;
        pub fn escrow_out(
            to_ptr: *const u8,
            to_len: i32,
            token_ptr: *const u8,
            token_len: i32,
            lo: i64,
            hi: i64,
        ) -> i32;
        #[allow(clippy::too_many_arguments)]
        pub fn create_token(
            sym_ptr: *const u8,
            sym_len: i32,
            name_ptr: *const u8,
            name_len: i32,
            decimals: i32,
            has_max: i32,
            max_lo: i64,
            max_hi: i64,
        ) -> i32;
        pub fn mint(
            to_ptr: *const u8,
            to_len: i32,
            token_ptr: *const u8,
            token_len: i32,
            lo: i64,
            hi: i64,
        ) -> i32;
        pub fn burn(
            from_ptr: *const u8,
            from_len: i32,
            token_ptr: *const u8,
            token_len: i32,
            lo: i64,
            hi: i64,
        ) -> i32;
        pub fn last_error(out_ptr: *mut u8, out_cap: i32) -> i32;

        // Events, randomness, output.
        pub fn emit(kind_ptr: *const u8, kind_len: i32, data_ptr: *const u8, data_len: i32);
        pub fn public_random(out_ptr: *mut u8);
        pub fn output(ptr: *const u8, len: i32);
        pub fn abort(msg_ptr: *const u8, msg_len: i32);
        pub fn log(msg_ptr: *const u8, msg_len: i32);

        // Signatures and calls into other modules.
        pub fn verify_signed(
            addr_ptr: *const u8,
            addr_len: i32,
            msg_ptr: *const u8,
            msg_len: i32,
            sig_ptr: *const u8,
            sig_len: i32,
        ) -> i32;
        #[allow(clippy::too_many_arguments)]
        pub fn call_pure(
            module_ptr: *const u8,
            module_len: i32,
            entry_ptr: *const u8,
            entry_len: i32,
            input_ptr: *const u8,
            input_len: i32,
            fuel: i64,
            out_ptr: *mut u8,
            out_cap: i32,
        ) -> i64;
        pub fn module_code_hash(module_ptr: *const u8, module_len: i32, out_ptr: *mut u8) -> i32;
        #[allow(clippy::too_many_arguments)]
        pub fn call_code(
            hash_ptr: *const u8,
            entry_ptr: *const u8,
            entry_len: i32,
            input_ptr: *const u8,
            input_len: i32,
            fuel: i64,
            out_ptr: *mut u8,
            out_cap: i32,
        ) -> i64;

        // Scheduled calls and draws.
        pub fn schedule(
            kind: i32,
            at: i64,
            payload_ptr: *const u8,
            payload_len: i32,
            fuel: i64,
        ) -> i64;
        pub fn cancel_scheduled(id: i64) -> i32;
        pub fn draw(out_ptr: *mut u8);

        // Sealed moves (ABI revision 3).
        pub fn schedule_sealed(
            round: i64,
            payload_ptr: *const u8,
            payload_len: i32,
            fuel: i64,
        ) -> i64;
        pub fn seal(
            id: i64,
            sealed_ptr: *const u8,
            sealed_len: i32,
            tag_ptr: *const u8,
            tag_len: i32,
        ) -> i64;
    }
}

// ---------------------------------------------------------------------------------------------
// Small conversions between Rust values and the ABI's (ptr, len) pairs.

/// A length as the ABI's `i32`. Nothing in one wasm32 memory is longer than `i32::MAX`, so this
/// only saturates on a value that could not be passed anyway (the host then refuses the range).
fn len_i32(len: usize) -> i32 {
    i32::try_from(len).unwrap_or(i32::MAX)
}

/// `(ptr, len)` of a text or byte argument.
fn arg(bytes: &[u8]) -> (*const u8, i32) {
    (bytes.as_ptr(), len_i32(bytes.len()))
}

/// A `u128` amount as the ABI's two `i64` halves: `(lo, hi)` = bits 0–63, bits 64–127.
fn split_amount(amount: u128) -> (i64, i64) {
    (amount as u64 as i64, (amount >> 64) as u64 as i64)
}

/// Runs a host call that follows the buffer-retry protocol: `call(out_ptr, out_cap)` returns the
/// full length `n` and writes only when `n <= out_cap`, or `-1` when the value is missing. The
/// first try uses a buffer of `hint` bytes; a longer result is fetched again into a buffer of
/// exactly `n` bytes. The buffer is then shrunk to `n`, which the bump allocator does in place.
fn read_var(hint: usize, mut call: impl FnMut(*mut u8, i32) -> i64) -> Option<Vec<u8>> {
    let mut buf: Vec<u8> = Vec::with_capacity(hint);
    loop {
        let n = call(buf.as_mut_ptr(), len_i32(buf.capacity()));
        if n < 0 {
            return None;
        }
        let n = usize::try_from(n).unwrap_or(usize::MAX);
        if n <= buf.capacity() {
            // SAFETY: the host wrote exactly `n <= capacity` bytes at the buffer's start.
            unsafe { buf.set_len(n) };
            buf.shrink_to_fit();
            return Some(buf);
        }
        // `len` is 0, so this makes the capacity at least `n`.
        buf.reserve_exact(n);
    }
}

/// [`read_var`] for the `i32`-returning calls (`module_id`, `txid`, …), as UTF-8 text.
fn read_text(hint: usize, call: unsafe extern "C" fn(*mut u8, i32) -> i32, what: &str) -> String {
    // SAFETY: `call` writes at most `out_cap` bytes at `out_ptr`, which `read_var` owns.
    let bytes = read_var(hint, |ptr, cap| i64::from(unsafe { call(ptr, cap) })).unwrap_or_default();
    String::from_utf8(bytes).unwrap_or_else(|_| panic!("host returned a {what} that is not UTF-8"))
}

/// Decodes a scan result: `u32 count`, then per entry `u32 key_len, key, u32 value_len, value`
/// (little-endian, the borsh layout of `Vec<(String, Vec<u8>)>`). Panics on a malformed record,
/// which only a broken host can produce.
fn decode_scan(bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
    fn take<'a>(bytes: &mut &'a [u8], n: usize) -> &'a [u8] {
        assert!(bytes.len() >= n, "host returned a truncated scan result");
        let (head, rest) = bytes.split_at(n);
        *bytes = rest;
        head
    }
    fn take_u32(bytes: &mut &[u8]) -> usize {
        let raw = take(bytes, 4);
        u32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]) as usize
    }
    let mut rest = bytes;
    let count = take_u32(&mut rest);
    let mut entries = Vec::with_capacity(count.min(rest.len() / 8));
    for _ in 0..count {
        let key_len = take_u32(&mut rest);
        let key = take(&mut rest, key_len);
        let key =
            String::from_utf8(key.to_vec()).expect("host returned a scan key that is not UTF-8");
        let value_len = take_u32(&mut rest);
        let value = take(&mut rest, value_len).to_vec();
        entries.push((key, value));
    }
    entries
}

/// Which scan import to call.
#[derive(Clone, Copy)]
enum ScanKind {
    /// `scan`: module-relative keys.
    Module,
    /// `scan_raw`: whole raw keys.
    Raw,
}

/// A `scan` or `scan_raw` call. `limit` is passed saturated to `i32::MAX`; the host caps it at
/// `MAX_SCAN_LIMIT` (1024).
fn scan_call(
    kind: ScanKind,
    prefix: &str,
    start_after: Option<&str>,
    limit: usize,
) -> Vec<(String, Vec<u8>)> {
    let (prefix_ptr, prefix_len) = arg(prefix.as_bytes());
    let (start_ptr, start_len) = match start_after {
        Some(start) => arg(start.as_bytes()),
        None => (core::ptr::null(), -1),
    };
    let limit = len_i32(limit);
    let bytes = read_var(4096, |out, cap| {
        // SAFETY: every (ptr, len) names a live buffer; the host writes at most `cap` at `out`.
        unsafe {
            match kind {
                ScanKind::Module => abi::scan(
                    prefix_ptr, prefix_len, start_ptr, start_len, limit, out, cap,
                ),
                ScanKind::Raw => abi::scan_raw(
                    prefix_ptr, prefix_len, start_ptr, start_len, limit, out, cap,
                ),
            }
        }
    });
    bytes.map(|b| decode_scan(&b)).unwrap_or_default()
}

/// A `get` or `read_raw` call.
fn get_call(raw: bool, key: &str) -> Option<Vec<u8>> {
    let (key_ptr, key_len) = arg(key.as_bytes());
    read_var(1024, |out, cap| {
        // SAFETY: `key` is live; the host writes at most `cap` bytes at `out`.
        unsafe {
            if raw {
                abi::read_raw(key_ptr, key_len, out, cap)
            } else {
                abi::get(key_ptr, key_len, out, cap)
            }
        }
    })
}

/// Turns a bank call's status into a result: `0` is success; `1` fetches `last_error` and parses
/// the error object (ABI.md, "Error objects"). A missing or malformed error object, or any other
/// status, is `internal`.
fn bank_result(status: i32) -> Result<(), ActionError> {
    match status {
        0 => Ok(()),
        1 => {
            // SAFETY: `last_error` writes at most `out_cap` bytes at `out_ptr`.
            let bytes = read_var(256, |out, cap| {
                i64::from(unsafe { abi::last_error(out, cap) })
            })
            .unwrap_or_default();
            let parsed = serde_json::from_slice::<Value>(&bytes)
                .ok()
                .and_then(|v| ActionError::from_json(&v));
            Err(parsed
                .unwrap_or_else(|| ActionError::internal("host returned a malformed bank error")))
        }
        other => Err(ActionError::internal(format!(
            "host returned bank status {other}"
        ))),
    }
}

/// The signature shared by `escrow_in`, `escrow_out`, `mint` and `burn`.
type TransferImport = unsafe extern "C" fn(*const u8, i32, *const u8, i32, i64, i64) -> i32;

/// One of the account/token/amount bank calls.
fn transfer(
    call: TransferImport,
    account: &str,
    token: &str,
    amount: u128,
) -> Result<(), ActionError> {
    let (acct_ptr, acct_len) = arg(account.as_bytes());
    let (token_ptr, token_len) = arg(token.as_bytes());
    let (lo, hi) = split_amount(amount);
    // SAFETY: both ranges are live buffers the host only reads.
    bank_result(unsafe { call(acct_ptr, acct_len, token_ptr, token_len, lo, hi) })
}

// ---------------------------------------------------------------------------------------------
// The contexts.

/// The [`Ctx`] of `gc_apply` and `gc_end_block`: every call crosses the ABI. The text values the
/// trait returns by reference (`module`, `txid`, `sequencer`, `checkpoint`) are fetched on first
/// use and kept for the rest of the call.
#[derive(Default)]
pub struct HostCtx {
    module: OnceCell<String>,
    txid: OnceCell<String>,
    sequencer: OnceCell<String>,
    checkpoint: OnceCell<Checkpoint>,
}

impl HostCtx {
    /// A context for the current entry-point call.
    pub fn new() -> Self {
        Self::default()
    }
}

/// `verify_signed` through the import.
fn host_verify_signed(address: &str, msg: &[u8], sig: &str) -> bool {
    let ((ap, al), (mp, ml), (sp, sl)) = (arg(address.as_bytes()), arg(msg), arg(sig.as_bytes()));
    // SAFETY: live buffers the host only reads.
    unsafe { abi::verify_signed(ap, al, mp, ml, sp, sl) == 1 }
}

fn host_module_code_hash(module: &str) -> Option<[u8; 32]> {
    let (mp, ml) = arg(module.as_bytes());
    let mut out = [0u8; 32];
    // SAFETY: `module` is a live buffer the host only reads; `out` is 32 writable bytes.
    (unsafe { abi::module_code_hash(mp, ml, out.as_mut_ptr()) } == 0).then_some(out)
}

/// `call_pure` through the import, with the buffer-retry protocol (a result that did not fit
/// runs the callee again, which is deterministic).
fn host_call_pure(
    module: &str,
    entry: &str,
    input: &[u8],
    fuel: u64,
) -> Result<Vec<u8>, crate::PureError> {
    let ((mp, ml), (ep, el), (ip, il)) =
        (arg(module.as_bytes()), arg(entry.as_bytes()), arg(input));
    let fuel = i64::try_from(fuel).unwrap_or(i64::MAX);
    let mut buf: Vec<u8> = Vec::with_capacity(1024);
    loop {
        // SAFETY: live buffers; the host writes at most `out_cap` bytes at `out_ptr`.
        let n = unsafe {
            abi::call_pure(
                mp,
                ml,
                ep,
                el,
                ip,
                il,
                fuel,
                buf.as_mut_ptr(),
                len_i32(buf.capacity()),
            )
        };
        if n < 0 {
            return Err(crate::PureError::from_code(n).unwrap_or(crate::PureError::Trapped));
        }
        let n = n as usize;
        if n <= buf.capacity() {
            // SAFETY: the host wrote exactly `n` bytes.
            unsafe { buf.set_len(n) };
            return Ok(buf);
        }
        buf.reserve_exact(n);
    }
}

/// `call_code` through the import, with the buffer-retry protocol (a result that did not fit
/// runs the callee again, which is deterministic).
fn host_call_code(
    code_hash: &[u8; 32],
    entry: &str,
    input: &[u8],
    fuel: u64,
) -> Result<Vec<u8>, crate::PureError> {
    let ((ep, el), (ip, il)) = (arg(entry.as_bytes()), arg(input));
    let fuel = i64::try_from(fuel).unwrap_or(i64::MAX);
    let mut buf: Vec<u8> = Vec::with_capacity(1024);
    loop {
        // SAFETY: live buffers (`code_hash` is 32 readable bytes); the host writes at most
        // `out_cap` bytes at `out_ptr`.
        let n = unsafe {
            abi::call_code(
                code_hash.as_ptr(),
                ep,
                el,
                ip,
                il,
                fuel,
                buf.as_mut_ptr(),
                len_i32(buf.capacity()),
            )
        };
        if n < 0 {
            return Err(crate::PureError::from_code(n).unwrap_or(crate::PureError::Trapped));
        }
        let n = n as usize;
        if n <= buf.capacity() {
            // SAFETY: the host wrote exactly `n` bytes.
            unsafe { buf.set_len(n) };
            return Ok(buf);
        }
        buf.reserve_exact(n);
    }
}

impl Ctx for HostCtx {
    fn call_code(
        &self,
        code_hash: &[u8; 32],
        entry: &str,
        input: &[u8],
        fuel: u64,
    ) -> Result<Vec<u8>, crate::PureError> {
        host_call_code(code_hash, entry, input, fuel)
    }

    fn verify_signed(&self, address: &str, msg: &[u8], sig: &str) -> bool {
        host_verify_signed(address, msg, sig)
    }

    fn call_pure(
        &self,
        module: &str,
        entry: &str,
        input: &[u8],
        fuel: u64,
    ) -> Result<Vec<u8>, crate::PureError> {
        host_call_pure(module, entry, input, fuel)
    }

    fn module_code_hash(&self, module: &str) -> Option<[u8; 32]> {
        host_module_code_hash(module)
    }

    fn module(&self) -> &str {
        self.module
            .get_or_init(|| read_text(64, abi::module_id, "module id"))
    }

    fn height(&self) -> u64 {
        // SAFETY: no arguments.
        unsafe { abi::height() as u64 }
    }

    fn block_time_ms(&self) -> u64 {
        // SAFETY: no arguments.
        unsafe { abi::block_time_ms() as u64 }
    }

    fn txid(&self) -> &str {
        self.txid.get_or_init(|| read_text(64, abi::txid, "txid"))
    }

    fn checkpoint(&self) -> &Checkpoint {
        self.checkpoint.get_or_init(|| {
            let text = read_text(128, abi::checkpoint, "checkpoint");
            serde_json::from_str(&text).expect("host returned a malformed checkpoint")
        })
    }

    fn sequencer(&self) -> &str {
        self.sequencer
            .get_or_init(|| read_text(64, abi::sequencer, "sequencer"))
    }

    fn get(&self, key: &str) -> Option<Vec<u8>> {
        get_call(false, key)
    }

    fn put(&mut self, key: &str, value: Vec<u8>) {
        let (key_ptr, key_len) = arg(key.as_bytes());
        let (val_ptr, val_len) = arg(&value);
        // SAFETY: both ranges are live buffers the host only reads.
        unsafe { abi::put(key_ptr, key_len, val_ptr, val_len) }
    }

    fn delete(&mut self, key: &str) {
        let (key_ptr, key_len) = arg(key.as_bytes());
        // SAFETY: a live buffer the host only reads.
        unsafe { abi::delete(key_ptr, key_len) }
    }

    fn scan(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> Vec<(String, Vec<u8>)> {
        scan_call(ScanKind::Module, prefix, start_after, limit)
    }

    fn read_raw(&self, key: &str) -> Option<Vec<u8>> {
        get_call(true, key)
    }

    fn scan_raw(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> Vec<(String, Vec<u8>)> {
        scan_call(ScanKind::Raw, prefix, start_after, limit)
    }

    fn balance(&self, account: &str, token: &str) -> u128 {
        let (acct_ptr, acct_len) = arg(account.as_bytes());
        let (token_ptr, token_len) = arg(token.as_bytes());
        let mut out = [0u8; 16];
        // SAFETY: the host reads the two ranges and writes exactly 16 bytes at `out`.
        unsafe { abi::balance(acct_ptr, acct_len, token_ptr, token_len, out.as_mut_ptr()) };
        u128::from_le_bytes(out)
    }

    fn escrow_in(&mut self, from: &str, token: &str, amount: u128) -> Result<(), ActionError> {
        transfer(abi::escrow_in, from, token, amount)
    }

    fn escrow_out(&mut self, to: &str, token: &str, amount: u128) -> Result<(), ActionError> {
        transfer(abi::escrow_out, to, token, amount)
    }

    fn create_token(
        &mut self,
        symbol: &str,
        name: &str,
        decimals: u8,
        max_supply: Option<u128>,
    ) -> Result<(), ActionError> {
        let (sym_ptr, sym_len) = arg(symbol.as_bytes());
        let (name_ptr, name_len) = arg(name.as_bytes());
        let (max_lo, max_hi) = split_amount(max_supply.unwrap_or(0));
        let has_max = i32::from(max_supply.is_some());
        // SAFETY: both ranges are live buffers the host only reads.
        bank_result(unsafe {
            abi::create_token(
                sym_ptr,
                sym_len,
                name_ptr,
                name_len,
                i32::from(decimals),
                has_max,
                max_lo,
                max_hi,
            )
        })
    }

    fn mint(&mut self, to: &str, token: &str, amount: u128) -> Result<(), ActionError> {
        transfer(abi::mint, to, token, amount)
    }

    fn burn(&mut self, from: &str, token: &str, amount: u128) -> Result<(), ActionError> {
        transfer(abi::burn, from, token, amount)
    }

    fn emit(&mut self, kind: &str, data: Value) {
        let data = serde_json::to_vec(&data).expect("serialising a JSON value cannot fail");
        let (kind_ptr, kind_len) = arg(kind.as_bytes());
        let (data_ptr, data_len) = arg(&data);
        // SAFETY: both ranges are live buffers the host only reads.
        unsafe { abi::emit(kind_ptr, kind_len, data_ptr, data_len) }
    }

    fn public_random(&mut self) -> [u8; 32] {
        let mut out = [0u8; 32];
        // SAFETY: the host writes exactly 32 bytes at `out`.
        unsafe { abi::public_random(out.as_mut_ptr()) };
        out
    }

    fn schedule(
        &mut self,
        at: crate::At,
        payload: &[u8],
        fuel: u64,
    ) -> Result<u64, crate::ScheduleError> {
        let (ptr, len) = arg(payload);
        let at_value = i64::try_from(at.value()).unwrap_or(i64::MAX);
        let fuel = i64::try_from(fuel).unwrap_or(i64::MAX);
        // SAFETY: a live buffer the host only reads.
        let r = unsafe { abi::schedule(at.kind(), at_value, ptr, len, fuel) };
        if r >= 0 {
            Ok(r as u64)
        } else {
            Err(crate::ScheduleError::from_code(r).unwrap_or(crate::ScheduleError::NotHere))
        }
    }

    fn schedule_sealed(
        &mut self,
        round: u64,
        payload: &[u8],
        fuel: u64,
    ) -> Result<u64, crate::ScheduleError> {
        let (pp, pl) = arg(payload);
        let round = i64::try_from(round).unwrap_or(i64::MAX);
        let fuel = i64::try_from(fuel).unwrap_or(i64::MAX);
        // SAFETY: a live buffer the host only reads.
        let r = unsafe { abi::schedule_sealed(round, pp, pl, fuel) };
        if r >= 0 {
            Ok(r as u64)
        } else {
            Err(crate::ScheduleError::from_code(r).unwrap_or(crate::ScheduleError::NotHere))
        }
    }

    fn seal(&mut self, id: u64, sealed: &[u8], tag: &[u8]) -> Result<(), crate::ScheduleError> {
        let (sp, sl) = arg(sealed);
        let (tp, tl) = arg(tag);
        let id = i64::try_from(id).unwrap_or(i64::MAX);
        // SAFETY: live buffers the host only reads.
        let r = unsafe { abi::seal(id, sp, sl, tp, tl) };
        if r >= 0 {
            Ok(())
        } else {
            Err(crate::ScheduleError::from_code(r).unwrap_or(crate::ScheduleError::NotHere))
        }
    }

    fn cancel_scheduled(&mut self, id: u64) -> bool {
        // SAFETY: no memory is passed.
        unsafe { abi::cancel_scheduled(i64::try_from(id).unwrap_or(i64::MAX)) == 1 }
    }

    fn draw(&mut self) -> Option<[u8; 32]> {
        let mut out = [0u8; 32];
        // SAFETY: the host writes exactly 32 bytes at `out` (or traps where no draw is allowed).
        unsafe { abi::draw(out.as_mut_ptr()) };
        Some(out)
    }
}

/// The [`StateRead`] of `gc_view`: raw reads and scans over the ABI.
#[derive(Default)]
pub struct HostState;

impl StateRead for HostState {
    fn read_raw(&self, key: &str) -> Option<Vec<u8>> {
        get_call(true, key)
    }

    fn scan_raw(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> Vec<(String, Vec<u8>)> {
        scan_call(ScanKind::Raw, prefix, start_after, limit)
    }
}

/// Sends a debug line to the node's log (the `log` import). It never reaches state, receipts or
/// hashes; the call is charged like any other.
pub fn log(msg: &str) {
    let (ptr, len) = arg(msg.as_bytes());
    // SAFETY: a live buffer the host only reads.
    unsafe { abi::log(ptr, len) }
}

// ---------------------------------------------------------------------------------------------
// The bump allocator.

extern "C" {
    /// Set by the linker: the first byte after the stack and static data, where the heap starts.
    static __heap_base: u8;
}

const PAGE: usize = 65_536;

/// A bump allocator over the module's one memory. Allocation moves a pointer forward from
/// `__heap_base`; `dealloc` does nothing; `realloc` of the most recent allocation grows or shrinks
/// it in place. It calls `memory.grow` only when the current memory cannot hold the allocation,
/// and then by exactly the pages it lacks: a growth past the chain's memory limit fails the call
/// (`internal: memory limit exceeded`), so it never grows speculatively.
///
/// This is sound only because every entry-point call runs in a fresh instance (ABI.md), and
/// because wasm32 guests are single-threaded.
pub struct BumpAlloc {
    /// The next free byte; 0 until the first allocation.
    next: Cell<usize>,
    /// The start of the most recent allocation (`usize::MAX` when there is none).
    last: Cell<usize>,
}

// SAFETY: wasm32-unknown-unknown guests run on one thread; no two calls touch the cells at once.
unsafe impl Sync for BumpAlloc {}

impl BumpAlloc {
    /// An allocator that starts at `__heap_base` on first use.
    pub const fn new() -> Self {
        Self {
            next: Cell::new(0),
            last: Cell::new(usize::MAX),
        }
    }

    /// Makes sure the memory reaches `end` (exclusive), growing it if needed. `false` when
    /// `memory.grow` failed.
    fn ensure(end: usize) -> bool {
        let have = core::arch::wasm32::memory_size::<0>().saturating_mul(PAGE);
        if end <= have {
            return true;
        }
        let pages = (end - have).div_ceil(PAGE);
        core::arch::wasm32::memory_grow::<0>(pages) != usize::MAX
    }

    fn next(&self) -> usize {
        match self.next.get() {
            // Only the address of the linker symbol is taken, never its value.
            0 => core::ptr::addr_of!(__heap_base) as usize,
            next => next,
        }
    }
}

impl Default for BumpAlloc {
    fn default() -> Self {
        Self::new()
    }
}

unsafe impl GlobalAlloc for BumpAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let align = layout.align();
        let Some(start) = self.next().checked_add(align - 1).map(|n| n & !(align - 1)) else {
            return core::ptr::null_mut();
        };
        let Some(end) = start.checked_add(layout.size()) else {
            return core::ptr::null_mut();
        };
        if !Self::ensure(end) {
            return core::ptr::null_mut();
        }
        self.next.set(end);
        self.last.set(start);
        start as *mut u8
    }

    unsafe fn dealloc(&self, _ptr: *mut u8, _layout: Layout) {}

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let start = ptr as usize;
        if start == self.last.get() {
            // The most recent allocation: move its end.
            let Some(end) = start.checked_add(new_size) else {
                return core::ptr::null_mut();
            };
            if !Self::ensure(end) {
                return core::ptr::null_mut();
            }
            self.next.set(end);
            return ptr;
        }
        if new_size <= layout.size() {
            return ptr;
        }
        // SAFETY: `layout.align()` is a power of two and the caller guarantees `new_size`
        // rounded up to it does not overflow `isize`.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: `new_layout` has a non-zero size (it is larger than the old one).
        let new = unsafe { self.alloc(new_layout) };
        if !new.is_null() {
            // SAFETY: distinct allocations; the old one holds `layout.size()` readable bytes.
            unsafe { core::ptr::copy_nonoverlapping(ptr, new, layout.size()) };
        }
        new
    }
}

#[global_allocator]
static ALLOCATOR: BumpAlloc = BumpAlloc::new();

// ---------------------------------------------------------------------------------------------
// Entry points.

/// Reports a panic's message (with its location, paths remapped at build time) to the host's
/// `abort`, which stops the call with `internal: module panicked`.
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let msg = info.to_string();
        let (ptr, len) = arg(msg.as_bytes());
        // SAFETY: a live buffer the host only reads; `abort` does not return.
        unsafe { abi::abort(ptr, len) };
        core::arch::wasm32::unreachable()
    }));
}

/// The `len` bytes at `ptr`, placed by the host in a buffer it got from `gc_alloc`.
///
/// # Safety
/// `(ptr, len)` must be a readable range of this module's memory that lives for the call.
unsafe fn input<'a>(ptr: i32, len: i32) -> &'a [u8] {
    if len <= 0 {
        return &[];
    }
    // SAFETY: the caller's contract; wasm32 addresses are u32 offsets.
    unsafe { core::slice::from_raw_parts(ptr as u32 as usize as *const u8, len as u32 as usize) }
}

/// Sets the call's result bytes.
fn output(bytes: &[u8]) {
    let (ptr, len) = arg(bytes);
    // SAFETY: a live buffer the host only reads.
    unsafe { abi::output(ptr, len) }
}

/// Ends an entry point: `Ok` returns 0; `Err` outputs the error object and returns 1.
fn finish(result: Result<(), ActionError>) -> i32 {
    match result {
        Ok(()) => 0,
        Err(err) => {
            output(
                &serde_json::to_vec(&err.to_json()).expect("serialising a JSON value cannot fail"),
            );
            1
        }
    }
}

/// Body of `gc_abi_version`: [`ABI_VERSION`].
pub fn abi_version() -> i32 {
    ABI_VERSION
}

/// Body of `gc_alloc(len) -> ptr`: `len` writable bytes (alignment 1) from the bump allocator, or
/// 0 when memory cannot grow. `len` is read as unsigned; a zero length gets a non-null pointer
/// to no bytes.
pub fn alloc(len: i32) -> i32 {
    let len = len as u32 as usize;
    if len == 0 {
        return core::ptr::NonNull::<u8>::dangling().as_ptr() as usize as i32;
    }
    // SAFETY: `len` is non-zero and alignment 1 is always valid.
    let ptr = unsafe { ALLOCATOR.alloc(Layout::from_size_align_unchecked(len, 1)) };
    ptr as usize as i32
}

/// Body of `gc_apply(sender_ptr, sender_len, op_ptr, op_len) -> 0 | 1`: decodes the sender (UTF-8)
/// and the op (JSON), runs [`GameModule::apply`] on a [`HostCtx`] and reports the outcome. A
/// sender that is not UTF-8 is `internal`; op bytes that are not JSON are `invalid`.
///
/// `ops` is the module's op text (`crate::schema::op_text`, made at compile time by
/// [`crate::export_module!`]`(M, schema = S)`), `None` without a schema. With one, the op is
/// checked and `apply` runs under [`crate::schema::Schema::enforce_op`]. Only the declaration
/// of the op's kind is parsed ([`crate::schema::Schema::for_op`]), once in the instance, here
/// (every call runs in a fresh instance, ABI.md).
///
/// # Safety
/// Both ranges must be readable memory of this module, as the host guarantees for buffers it got
/// from `gc_alloc`.
pub unsafe fn apply(
    module: &dyn GameModule,
    ops: Option<&'static str>,
    sender_ptr: i32,
    sender_len: i32,
    op_ptr: i32,
    op_len: i32,
) -> i32 {
    install_panic_hook();
    // SAFETY: the caller's contract.
    let (sender, op) = unsafe { (input(sender_ptr, sender_len), input(op_ptr, op_len)) };
    finish((|| {
        let sender = core::str::from_utf8(sender)
            .map_err(|_| ActionError::internal("sender is not UTF-8"))?;
        let op: Value = serde_json::from_slice(op)
            .map_err(|e| ActionError::invalid(format!("op is not JSON: {e}")))?;
        let Some(ops) = ops else {
            return module.apply(&mut HostCtx::new(), sender, &op);
        };
        let schema = crate::schema::Schema::for_op(ops, &op)
            .map_err(|_| ActionError::internal("the module's schema does not parse"))?;
        schema.enforce_op(&op, || module.apply(&mut HostCtx::new(), sender, &op))
    })())
}

/// Body of `gc_view(query_ptr, query_len) -> 0 | 1`: decodes the query (a JSON object of strings;
/// `invalid` otherwise), runs [`GameModule::view`] on [`HostState`] and outputs the JSON value or
/// the error object.
///
/// # Safety
/// The range must be readable memory of this module, as the host guarantees for buffers it got
/// from `gc_alloc`.
pub unsafe fn view(module: &dyn GameModule, query_ptr: i32, query_len: i32) -> i32 {
    install_panic_hook();
    // SAFETY: the caller's contract.
    let query = unsafe { input(query_ptr, query_len) };
    let result = serde_json::from_slice::<Query>(query)
        .map_err(|_| ActionError::invalid("query must be a JSON object of strings"))
        .and_then(|query| module.view(&HostState, &query));
    match result {
        Ok(value) => {
            output(&serde_json::to_vec(&value).expect("serialising a JSON value cannot fail"));
            0
        }
        Err(err) => finish(Err(err)),
    }
}

/// Body of `gc_end_block() -> 0 | 1`: runs [`GameModule::end_block`] on a [`HostCtx`].
pub fn end_block(module: &dyn GameModule) -> i32 {
    install_panic_hook();
    finish(module.end_block(&mut HostCtx::new()))
}

/// Body of `gc_migrate(sender_ptr, sender_len, input_ptr, input_len) -> 0 | 1`: decodes the
/// sender (the module's owner, UTF-8) and the input (`{"from_code_hash","to_code_hash"}`, ABI.md
/// "Deploys and upgrades"), runs [`GameModule::migrate`] on a [`HostCtx`] and reports the
/// outcome. A sender that is not UTF-8 or an input that is not that object is `internal` (the
/// host always sends both well formed).
///
/// # Safety
/// Both ranges must be readable memory of this module, as the host guarantees for buffers it got
/// from `gc_alloc`.
pub unsafe fn migrate(
    module: &dyn GameModule,
    sender_ptr: i32,
    sender_len: i32,
    input_ptr: i32,
    input_len: i32,
) -> i32 {
    install_panic_hook();
    // SAFETY: the caller's contract.
    let (sender, input) = unsafe { (input(sender_ptr, sender_len), input(input_ptr, input_len)) };
    finish((|| {
        let owner = core::str::from_utf8(sender)
            .map_err(|_| ActionError::internal("sender is not UTF-8"))?;
        let mut migration: crate::Migration = serde_json::from_slice(input)
            .map_err(|e| ActionError::internal(format!("migration input is not valid: {e}")))?;
        migration.owner = owner.to_string();
        module.migrate(&mut HostCtx::new(), &migration)
    })())
}

/// Body of `gc_scheduled(id, payload_ptr, payload_len) -> 0 | 1`: runs
/// [`GameModule::scheduled`] for call `id` with its payload on a [`HostCtx`] and reports the
/// outcome.
///
/// # Safety
/// The range must be readable memory of this module, as the host guarantees for buffers it got
/// from `gc_alloc`.
pub unsafe fn scheduled(
    module: &dyn GameModule,
    id: i64,
    payload_ptr: i32,
    payload_len: i32,
) -> i32 {
    install_panic_hook();
    // SAFETY: the caller's contract.
    let input = unsafe { input(payload_ptr, payload_len) };
    let id = id as u64;
    // A sealed call's input is its payload followed by the opening (`schedule.rs`).
    let call = match (id & crate::schedule::SEALED_CALL_FLAG != 0)
        .then(|| crate::schedule::split_sealed_call_input(input))
        .flatten()
    {
        Some((payload, opened)) => crate::ScheduledCall {
            id: id & !crate::schedule::SEALED_CALL_FLAG,
            payload: payload.to_vec(),
            sealed: Some(opened),
        },
        None => crate::ScheduledCall {
            id,
            payload: input.to_vec(),
            sealed: None,
        },
    };
    finish(module.scheduled(&mut HostCtx::new(), &call))
}
