//! Calls between modules and signatures: the host functions `call_pure` (a read-only call of
//! another module's pure entry point), `call_code` (a pure entry point of the code a SHA-256
//! names, with no state at all), `module_code_hash` (the code a module id runs now) and
//! `verify_signed` (a Divi signed message's signer). They find modules and code through the
//! [`ModuleResolver`](crate::ModuleResolver) the node gives a call (`module.rs`; seen here as
//! [`Resolve`](crate::run::nesting::Resolve)), and a caller sees fixed results
//! ([`PureError`]). ABI.md, "Calls into other modules" and "Signatures".
//!
//! A `call_pure` callee runs in its own instance, read-only (as a view: its writes trap), over
//! the caller's current state (its writes so far included). A `call_code` callee runs in its own
//! instance with no state at all: every state, bank, context and module import traps in it
//! (`HostTrap::NoState`), so its answer depends only on its code and its input. Both take their
//! fuel from the caller's budget and share one depth limit, [`MAX_PURE_DEPTH`]. Whatever
//! happens in the callee (a trap, running out of fuel, a write, a refusal, an oversized result)
//! is a negative result code for the caller, never a trap of the caller and never engine text.

use wasmtime::Linker;

use crate::gas::{bytes, GAS_V1 as GAS};
use crate::run::host::*;
use crate::run::nesting::{Nesting, PureError, PureOutcome, Resolve, MAX_PURE_DEPTH};

/// Longest pure entry point name (`gc_pure_<name>`, `name` of `a-z`, `0-9`, `_`).
pub const MAX_PURE_NAME_BYTES: usize = 64;

/// Whether `name` may name a pure entry point: 1–64 bytes of `a-z`, `0-9`, `_`.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_PURE_NAME_BYTES
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// The resolver a nested call to entry point `name` uses, or the fixed code the caller gets
/// instead: [`PureError::TooDeep`] at [`MAX_PURE_DEPTH`], [`PureError::NotFound`] for a name that
/// cannot be a pure entry point or when the node gave no resolver.
fn nested_resolver<'a>(nesting: &'a Nesting, name: &str) -> Result<&'a dyn Resolve, i64> {
    if nesting.depth >= MAX_PURE_DEPTH {
        return Err(PureError::TooDeep.code());
    }
    match nesting.resolver() {
        Some(resolver) if valid_name(name) => Ok(resolver),
        _ => Err(PureError::NotFound.code()),
    }
}

/// The fuel a callee may use: what the caller offers (`fuel`, negative = none), at most what the
/// caller has left.
fn callee_limit(cx: &mut Cx<'_>, fuel: i64) -> u64 {
    u64::try_from(fuel)
        .unwrap_or(0)
        .min(crate::run::fuel::left(&mut *cx))
}

/// The end of a nested call: the callee's log lines join the caller's, the fuel it used is
/// charged to the caller, and its result is written to `out` (or its error's code returned).
fn finish(
    cx: &mut Cx<'_>,
    mem: wasmtime::Memory,
    out: std::ops::Range<usize>,
    outcome: PureOutcome,
) -> R<i64> {
    for line in &outcome.log {
        cx.data_mut().push_log(line.as_bytes());
    }
    charge(cx, outcome.fuel_used)?;
    match outcome.result {
        Ok(result) => write_out(cx, mem, out, &result),
        Err(e) => Ok(e.code()),
    }
}

/// `call_code`: runs `gc_pure_<entry>` of the code whose SHA-256 is the 32 bytes at `hash_ptr`
/// with no state at all (ABI.md `call_code`). Charged the base, the bytes read (hash, entry,
/// input), `pure_call_base`, the first time a hash is found in this chain of calls its code's
/// length at `per_byte_in` (the code store is read once per hash per chain), and the fuel the
/// callee used.
fn call_code(
    mut cx: Cx<'_>,
    hash_ptr: i32,
    entry: (i32, i32),
    input: (i32, i32),
    fuel: i64,
    out: (i32, i32),
) -> R<i64> {
    charge(&mut cx, GAS.host_call_base)?;
    let mem = memory(&mut cx)?;
    let [hash_r, entry_r, input_r, out_r] =
        spans(&mut cx, mem, [(hash_ptr, 32), entry, input, out])?;
    charge(
        &mut cx,
        bytes(
            GAS.per_byte_in,
            hash_r.len() + entry_r.len() + input_r.len(),
        ),
    )?;
    let (hash, name, input) = {
        let data = mem.data(&cx);
        let mut hash = [0u8; 32];
        hash.copy_from_slice(&data[hash_r]);
        (
            hash,
            text(data, &entry_r).map_err(fail)?.to_string(),
            data[input_r].to_vec(),
        )
    };
    charge(&mut cx, GAS.pure_call_base)?;
    let nesting = cx.data().nesting;
    let resolver = match nested_resolver(&nesting, &name) {
        Ok(resolver) => resolver,
        Err(code) => return Ok(code),
    };
    let memo_ptr = cx.data().codes();
    // SAFETY (both derefs): the memo is the top call's `HostState::code_memo` (or this call's
    // own), alive for the whole chain of calls, which is still running; only this thread
    // touches it, through its `RefCell`, and no reference to it outlives the statement.
    let known = unsafe { &*memo_ptr }.borrow().get(&hash).cloned();
    let callee = match known {
        Some(module) => module,
        None => {
            let found = cx
                .data()
                .with_code_reader(|state| resolver.resolve_code(state, &hash))
                .map_err(wasmtime::Error::new)?;
            let Some((module, len)) = found else {
                return Ok(PureError::NotFound.code());
            };
            charge(&mut cx, bytes(GAS.per_byte_in, len))?;
            // SAFETY: as above.
            unsafe { &*memo_ptr }
                .borrow_mut()
                .insert(hash, module.clone());
            module
        }
    };
    let limit = callee_limit(&mut cx, fuel);
    let inner = Nesting {
        depth: nesting.depth + 1,
        resolver: nesting.resolver,
        codes: Some(memo_ptr),
    };
    let outcome = cx
        .data()
        .with_code_reader(|state| callee.call_code_nested(state, &name, &input, limit, inner))
        .map_err(wasmtime::Error::new)?;
    finish(&mut cx, mem, out_r, outcome)
}

/// Registers `call_pure`, `call_code`, `module_code_hash` and `verify_signed`.
pub(crate) fn register(linker: &mut Linker<HostState>, m: &str) -> R<()> {
    linker.func_wrap(
        m,
        "call_pure",
        |mut cx: Cx<'_>,
         mp: i32,
         ml: i32,
         ep: i32,
         el: i32,
         ip: i32,
         il: i32,
         fuel: i64,
         op: i32,
         oc: i32|
         -> R<i64> {
            charge(&mut cx, GAS.host_call_base)?;
            stateful(&cx)?;
            let mem = memory(&mut cx)?;
            let [mod_r, entry_r, input_r, out_r] =
                spans(&mut cx, mem, [(mp, ml), (ep, el), (ip, il), (op, oc)])?;
            charge(
                &mut cx,
                bytes(GAS.per_byte_in, mod_r.len() + entry_r.len() + input_r.len()),
            )?;
            let (id, name, input) = {
                let data = mem.data(&cx);
                (
                    text(data, &mod_r).map_err(fail)?.to_string(),
                    text(data, &entry_r).map_err(fail)?.to_string(),
                    data[input_r].to_vec(),
                )
            };
            charge(&mut cx, GAS.pure_call_base)?;
            let nesting = cx.data().nesting;
            let resolver = match nested_resolver(&nesting, &name) {
                Ok(resolver) => resolver,
                Err(code) => return Ok(code),
            };
            let callee = cx
                .data()
                .with_reader(|state| resolver.resolve(state, &id))
                .map_err(wasmtime::Error::new)?;
            let Some(callee) = callee else {
                return Ok(PureError::NotFound.code());
            };
            let limit = callee_limit(&mut cx, fuel);
            let inner = Nesting {
                depth: nesting.depth + 1,
                resolver: nesting.resolver,
                codes: Some(cx.data().codes()),
            };
            let outcome = cx
                .data()
                .with_reader(|state| callee.call_pure_nested(state, &name, &input, limit, inner))
                .map_err(wasmtime::Error::new)?;
            finish(&mut cx, mem, out_r, outcome)
        },
    )?;
    linker.func_wrap(
        m,
        "call_code",
        |cx: Cx<'_>,
         hp: i32,
         ep: i32,
         el: i32,
         ip: i32,
         il: i32,
         fuel: i64,
         op: i32,
         oc: i32|
         -> R<i64> { call_code(cx, hp, (ep, el), (ip, il), fuel, (op, oc)) },
    )?;
    linker.func_wrap(
        m,
        "module_code_hash",
        |mut cx: Cx<'_>, mp: i32, ml: i32, op: i32| -> R<i32> {
            charge(&mut cx, GAS.host_call_base)?;
            stateful(&cx)?;
            let mem = memory(&mut cx)?;
            let [mod_r, out_r] = spans(&mut cx, mem, [(mp, ml), (op, 32)])?;
            charge(&mut cx, bytes(GAS.per_byte_in, mod_r.len()))?;
            let id = text(mem.data(&cx), &mod_r).map_err(fail)?.to_string();
            let nesting = cx.data().nesting;
            let Some(resolver) = nesting.resolver() else {
                return Ok(1);
            };
            let module = cx
                .data()
                .with_reader(|state| resolver.resolve(state, &id))
                .map_err(wasmtime::Error::new)?;
            let Some(hash) = module.and_then(|m| {
                let mut out = [0u8; 32];
                hex::decode_to_slice(m.code_hash(), &mut out)
                    .ok()
                    .map(|()| out)
            }) else {
                return Ok(1);
            };
            write_fixed(&mut cx, mem, out_r, &hash)?;
            Ok(0)
        },
    )?;
    linker.func_wrap(
        m,
        "verify_signed",
        |mut cx: Cx<'_>, ap: i32, al: i32, mp: i32, ml: i32, sp: i32, sl: i32| -> R<i32> {
            charge(&mut cx, GAS.host_call_base)?;
            let mem = memory(&mut cx)?;
            let [addr_r, msg_r, sig_r] = spans(&mut cx, mem, [(ap, al), (mp, ml), (sp, sl)])?;
            charge(
                &mut cx,
                bytes(GAS.per_byte_in, addr_r.len() + msg_r.len() + sig_r.len()),
            )?;
            charge(&mut cx, GAS.verify_signed)?;
            let data = mem.data(&cx);
            // Address and signature come from other parties: text that is not UTF-8 is a bad
            // signature, not a fault of the module.
            let (Ok(address), Ok(sig)) = (
                std::str::from_utf8(&data[addr_r]),
                std::str::from_utf8(&data[sig_r]),
            ) else {
                return Ok(0);
            };
            let ok = gamechain_chain::signed_message::verify_message(address, &data[msg_r], sig);
            Ok(i32::from(ok.is_ok()))
        },
    )?;
    Ok(())
}
