//! The `gamechain_v1` host functions (ABI.md, "Host imports"), registered once on the
//! `Linker`: context, state, bank, and events/randomness/output, each group in its own function.
//! Every one follows the rules in `host.rs`'s documentation, using its helpers.

use gamechain_sdk::Checkpoint;
use serde_json::Value;
use wasmtime::Linker;

use crate::abi::IMPORT_MODULE;
use crate::gas::{bytes, GAS_V1 as GAS};
use crate::run::host::*;
use crate::run::trap::HostTrap;

/// Registers every import of [`IMPORTS`] on `linker`.
pub(crate) fn register(linker: &mut Linker<HostState>) -> R<()> {
    let m = IMPORT_MODULE;
    register_context(linker, m)?;
    register_state(linker, m)?;
    register_bank(linker, m)?;
    register_output(linker, m)?;
    register_schedule(linker, m)?;
    crate::run::pure::register(linker, m)?;
    Ok(())
}

/// `height`, `block_time_ms`, `module_id`, `txid`, `sequencer`, `checkpoint`.
fn register_context(linker: &mut Linker<HostState>, m: &str) -> R<()> {
    linker.func_wrap(m, "height", |mut cx: Cx<'_>| -> R<i64> {
        charge(&mut cx, GAS.host_call_base)?;
        stateful(&cx)?;
        Ok(cx.data().ctx().map_or(0, |c| c.height()) as i64)
    })?;
    linker.func_wrap(m, "block_time_ms", |mut cx: Cx<'_>| -> R<i64> {
        charge(&mut cx, GAS.host_call_base)?;
        stateful(&cx)?;
        Ok(cx.data().ctx().map_or(0, |c| c.block_time_ms()) as i64)
    })?;
    linker.func_wrap(m, "module_id", |cx: Cx<'_>, p: i32, c: i32| {
        context_text(cx, p, c, |st| st.module().to_string())
    })?;
    linker.func_wrap(m, "txid", |cx: Cx<'_>, p: i32, c: i32| {
        context_text(cx, p, c, |st| {
            st.ctx().map_or(String::new(), |c| c.txid().to_string())
        })
    })?;
    linker.func_wrap(m, "sequencer", |cx: Cx<'_>, p: i32, c: i32| {
        context_text(cx, p, c, |st| {
            st.ctx()
                .map_or(String::new(), |c| c.sequencer().to_string())
        })
    })?;
    linker.func_wrap(m, "checkpoint", |cx: Cx<'_>, p: i32, c: i32| {
        context_text(cx, p, c, |st| {
            let default = Checkpoint::default();
            let cp = st.ctx().map_or(&default, |c| c.checkpoint());
            // `serde_json::Value` maps are sorted: {"hash":…,"height":…}.
            serde_json::json!({ "hash": cp.hash, "height": cp.height }).to_string()
        })
    })?;
    Ok(())
}

/// `get`, `put`, `delete`, `scan`, `read_raw`, `scan_raw`.
fn register_state(linker: &mut Linker<HostState>, m: &str) -> R<()> {
    linker.func_wrap(
        m,
        "get",
        |cx: Cx<'_>, kp: i32, kl: i32, op: i32, oc: i32| {
            get_like(cx, (kp, kl), (op, oc), HostState::get)
        },
    )?;
    linker.func_wrap(
        m,
        "read_raw",
        |cx: Cx<'_>, kp: i32, kl: i32, op: i32, oc: i32| {
            get_like(cx, (kp, kl), (op, oc), HostState::read_raw)
        },
    )?;
    linker.func_wrap(
        m,
        "put",
        |mut cx: Cx<'_>, kp: i32, kl: i32, vp: i32, vl: i32| -> R<()> {
            charge(&mut cx, GAS.host_call_base)?;
            stateful(&cx)?;
            if !cx.data().is_writable() {
                return Err(fail(HostTrap::ReadOnly));
            }
            let mem = memory(&mut cx)?;
            let [key_r, val_r] = spans(&mut cx, mem, [(kp, kl), (vp, vl)])?;
            cx.data_mut()
                .used
                .write(key_r.len(), val_r.len())
                .map_err(fail)?;
            let n = key_r.len() + val_r.len();
            charge(
                &mut cx,
                bytes(GAS.per_byte_in, n).saturating_add(bytes(GAS.per_byte_stored, n)),
            )?;
            let (data, st) = mem.data_and_store_mut(&mut cx);
            let key = text(data, &key_r).map_err(fail)?;
            let value = data[val_r].to_vec();
            st.ctx_mut().map_err(fail)?.put(key, value);
            Ok(())
        },
    )?;
    linker.func_wrap(m, "delete", |mut cx: Cx<'_>, kp: i32, kl: i32| -> R<()> {
        charge(&mut cx, GAS.host_call_base)?;
        stateful(&cx)?;
        if !cx.data().is_writable() {
            return Err(fail(HostTrap::ReadOnly));
        }
        let mem = memory(&mut cx)?;
        let [key_r] = spans(&mut cx, mem, [(kp, kl)])?;
        cx.data_mut().used.write(key_r.len(), 0).map_err(fail)?;
        charge(&mut cx, bytes(GAS.per_byte_in, key_r.len()))?;
        let (data, st) = mem.data_and_store_mut(&mut cx);
        let key = text(data, &key_r).map_err(fail)?;
        st.ctx_mut().map_err(fail)?.delete(key);
        Ok(())
    })?;
    linker.func_wrap(
        m,
        "scan",
        |cx: Cx<'_>, pp: i32, pl: i32, sp: i32, sl: i32, limit: i32, op: i32, oc: i32| {
            scan_like(cx, (pp, pl), (sp, sl), limit, (op, oc), |st, p, s, l| {
                Ok(st.scan(p, s, l))
            })
        },
    )?;
    linker.func_wrap(
        m,
        "scan_raw",
        |cx: Cx<'_>, pp: i32, pl: i32, sp: i32, sl: i32, limit: i32, op: i32, oc: i32| {
            scan_like(cx, (pp, pl), (sp, sl), limit, (op, oc), HostState::scan_raw)
        },
    )?;
    Ok(())
}

/// `balance`, `escrow_in`, `escrow_out`, `create_token`, `mint`, `burn`, `last_error`.
fn register_bank(linker: &mut Linker<HostState>, m: &str) -> R<()> {
    linker.func_wrap(
        m,
        "balance",
        |mut cx: Cx<'_>, ap: i32, al: i32, tp: i32, tl: i32, op: i32| -> R<()> {
            charge(&mut cx, GAS.host_call_base)?;
            stateful(&cx)?;
            let mem = memory(&mut cx)?;
            let [acct_r, token_r, out_r] = spans(&mut cx, mem, [(ap, al), (tp, tl), (op, 16)])?;
            charge(
                &mut cx,
                bytes(GAS.per_byte_in, acct_r.len() + token_r.len()),
            )?;
            let balance = {
                let (data, st) = mem.data_and_store_mut(&mut cx);
                st.balance(
                    text(data, &acct_r).map_err(fail)?,
                    text(data, &token_r).map_err(fail)?,
                )
            };
            write_fixed(&mut cx, mem, out_r, &balance.to_le_bytes())
        },
    )?;
    linker.func_wrap(
        m,
        "escrow_in",
        |cx: Cx<'_>, ap: i32, al: i32, tp: i32, tl: i32, lo: i64, hi: i64| {
            transfer_like(cx, (ap, al), (tp, tl), amount(lo, hi), |c, a, t, n| {
                c.escrow_in(a, t, n)
            })
        },
    )?;
    linker.func_wrap(
        m,
        "escrow_out",
        |cx: Cx<'_>, ap: i32, al: i32, tp: i32, tl: i32, lo: i64, hi: i64| {
            transfer_like(cx, (ap, al), (tp, tl), amount(lo, hi), |c, a, t, n| {
                c.escrow_out(a, t, n)
            })
        },
    )?;
    linker.func_wrap(
        m,
        "mint",
        |cx: Cx<'_>, ap: i32, al: i32, tp: i32, tl: i32, lo: i64, hi: i64| {
            transfer_like(cx, (ap, al), (tp, tl), amount(lo, hi), |c, a, t, n| {
                c.mint(a, t, n)
            })
        },
    )?;
    linker.func_wrap(
        m,
        "burn",
        |cx: Cx<'_>, ap: i32, al: i32, tp: i32, tl: i32, lo: i64, hi: i64| {
            transfer_like(cx, (ap, al), (tp, tl), amount(lo, hi), |c, a, t, n| {
                c.burn(a, t, n)
            })
        },
    )?;
    linker.func_wrap(
        m,
        "create_token",
        |mut cx: Cx<'_>,
         sp: i32,
         sl: i32,
         np: i32,
         nl: i32,
         decimals: i32,
         has_max: i32,
         lo: i64,
         hi: i64|
         -> R<i32> {
            charge(&mut cx, GAS.host_call_base)?;
            stateful(&cx)?;
            if !cx.data().is_writable() {
                return Err(fail(HostTrap::ReadOnly));
            }
            let mem = memory(&mut cx)?;
            let [sym_r, name_r] = spans(&mut cx, mem, [(sp, sl), (np, nl)])?;
            charge(&mut cx, bytes(GAS.per_byte_in, sym_r.len() + name_r.len()))?;
            let (data, st) = mem.data_and_store_mut(&mut cx);
            let (symbol, name) = (
                text(data, &sym_r).map_err(fail)?,
                text(data, &name_r).map_err(fail)?,
            );
            // Out of `u8` range counts as too many decimals: the ledger refuses anything above 18.
            let decimals = u8::try_from(decimals).unwrap_or(u8::MAX);
            let max = (has_max != 0).then(|| amount(lo, hi));
            let result = st
                .ctx_mut()
                .map_err(fail)?
                .create_token(symbol, name, decimals, max);
            Ok(st.bank_status(result))
        },
    )?;
    linker.func_wrap(
        m,
        "last_error",
        |mut cx: Cx<'_>, op: i32, oc: i32| -> R<i32> {
            charge(&mut cx, GAS.host_call_base)?;
            stateful(&cx)?;
            let mem = memory(&mut cx)?;
            let [out] = spans(&mut cx, mem, [(op, oc)])?;
            let err = std::mem::take(&mut cx.data_mut().last_error);
            let n = write_out(&mut cx, mem, out, &err);
            cx.data_mut().last_error = err;
            Ok(n? as i32)
        },
    )?;
    Ok(())
}

/// `emit`, `public_random`, `output`, `abort`, `log`.
fn register_output(linker: &mut Linker<HostState>, m: &str) -> R<()> {
    linker.func_wrap(
        m,
        "emit",
        |mut cx: Cx<'_>, kp: i32, kl: i32, dp: i32, dl: i32| -> R<()> {
            charge(&mut cx, GAS.host_call_base)?;
            stateful(&cx)?;
            let mem = memory(&mut cx)?;
            let [kind_r, data_r] = spans(&mut cx, mem, [(kp, kl), (dp, dl)])?;
            let n = kind_r.len() + data_r.len();
            cx.data_mut().used.event(n).map_err(fail)?;
            charge(
                &mut cx,
                bytes(GAS.per_byte_in, n).saturating_add(bytes(GAS.per_byte_event, n)),
            )?;
            let (data, st) = mem.data_and_store_mut(&mut cx);
            let kind = text(data, &kind_r).map_err(fail)?;
            let value: Value =
                serde_json::from_slice(&data[data_r]).map_err(|_| fail(HostTrap::BadEventJson))?;
            // A view has no receipt: its events are checked and dropped.
            if let Ok(ctx) = st.ctx_mut() {
                ctx.emit(kind, value);
            }
            Ok(())
        },
    )?;
    linker.func_wrap(m, "public_random", |mut cx: Cx<'_>, op: i32| -> R<()> {
        charge(&mut cx, GAS.host_call_base)?;
        stateful(&cx)?;
        let mem = memory(&mut cx)?;
        let [out] = spans(&mut cx, mem, [(op, 32)])?;
        let random = cx.data_mut().public_random();
        write_fixed(&mut cx, mem, out, &random)
    })?;
    linker.func_wrap(m, "output", |mut cx: Cx<'_>, p: i32, l: i32| -> R<()> {
        crate::run::bounds::output(usize::try_from(l).unwrap_or(0)).map_err(fail)?;
        let bytes = read_input(&mut cx, p, l)?;
        cx.data_mut().output = Some(bytes);
        Ok(())
    })?;
    linker.func_wrap(m, "abort", |mut cx: Cx<'_>, p: i32, l: i32| -> R<()> {
        let msg = read_input(&mut cx, p, l)?;
        cx.data_mut().push_log(&msg);
        Err(fail(HostTrap::Panicked))
    })?;
    linker.func_wrap(m, "log", |mut cx: Cx<'_>, p: i32, l: i32| -> R<()> {
        let msg = read_input(&mut cx, p, l)?;
        cx.data_mut().push_log(&msg);
        Ok(())
    })?;
    Ok(())
}

/// `schedule`, `cancel_scheduled`, `draw` (ABI.md, "Scheduled calls and draws"). Scheduling and
/// cancelling write state: in a view they trap read-only, like `put`.
fn register_schedule(linker: &mut Linker<HostState>, m: &str) -> R<()> {
    use gamechain_sdk::{At, ScheduleError};
    linker.func_wrap(
        m,
        "schedule",
        |mut cx: Cx<'_>, kind: i32, at: i64, pp: i32, pl: i32, fuel: i64| -> R<i64> {
            charge(&mut cx, GAS.host_call_base)?;
            stateful(&cx)?;
            cx.data_mut().ctx_mut().map_err(fail)?;
            let mem = memory(&mut cx)?;
            let [payload_r] = spans(&mut cx, mem, [(pp, pl)])?;
            let n = payload_r.len();
            // Every refusal from here on is charged the same: the base and the payload's bytes.
            charge(
                &mut cx,
                bytes(GAS.per_byte_in, n).saturating_add(bytes(GAS.per_byte_stored, n)),
            )?;
            let Some(at) = At::from_abi(kind, at) else {
                return Ok(ScheduleError::NotAhead.code());
            };
            let st = cx.data();
            if !st.schedulable {
                return Ok(ScheduleError::NoEntryPoint.code());
            }
            let fuel = match u64::try_from(fuel) {
                Ok(f) if (1..=st.max_scheduled_fuel).contains(&f) => f,
                _ => return Ok(ScheduleError::BadFuel.code()),
            };
            let payload = mem.data(&cx)[payload_r].to_vec();
            let ctx = cx.data_mut().ctx_mut().map_err(fail)?;
            match ctx.schedule(at, &payload, fuel) {
                Ok(id) => {
                    // Paid now, once it is scheduled: the queue's work and the call's whole
                    // fuel. Running out here traps, and the call's writes (this one's too)
                    // are discarded.
                    charge(&mut cx, crate::gas::SCHEDULE_BASE.saturating_add(fuel))?;
                    Ok(i64::try_from(id).unwrap_or(i64::MAX))
                }
                Err(e) => Ok(e.code()),
            }
        },
    )?;
    linker.func_wrap(m, "cancel_scheduled", |mut cx: Cx<'_>, id: i64| -> R<i32> {
        charge(
            &mut cx,
            GAS.host_call_base
                .saturating_add(crate::gas::CANCEL_SCHEDULED_BASE),
        )?;
        stateful(&cx)?;
        let ctx = cx.data_mut().ctx_mut().map_err(fail)?;
        Ok(match u64::try_from(id) {
            Ok(id) => i32::from(ctx.cancel_scheduled(id)),
            Err(_) => 0,
        })
    })?;
    linker.func_wrap(m, "draw", |mut cx: Cx<'_>, op: i32| -> R<()> {
        charge(&mut cx, GAS.host_call_base)?;
        stateful(&cx)?;
        let mem = memory(&mut cx)?;
        let [out] = spans(&mut cx, mem, [(op, 32)])?;
        let drawn = match cx.data_mut().ctx_mut() {
            Ok(ctx) => ctx.draw(),
            Err(_) => None,
        };
        let bytes = drawn.ok_or_else(|| fail(HostTrap::NoDraw))?;
        write_fixed(&mut cx, mem, out, &bytes)
    })?;
    linker.func_wrap(
        m,
        "schedule_sealed",
        |mut cx: Cx<'_>, round: i64, pp: i32, pl: i32, fuel: i64| -> R<i64> {
            use gamechain_sdk::ScheduleError;
            charge(&mut cx, GAS.host_call_base)?;
            stateful(&cx)?;
            cx.data_mut().ctx_mut().map_err(fail)?;
            let mem = memory(&mut cx)?;
            let [payload_r] = spans(&mut cx, mem, [(pp, pl)])?;
            let n = payload_r.len();
            // As `schedule`: every refusal is charged the same.
            charge(
                &mut cx,
                bytes(GAS.per_byte_in, n).saturating_add(bytes(GAS.per_byte_stored, n)),
            )?;
            let st = cx.data();
            if !st.schedulable {
                return Ok(ScheduleError::NoEntryPoint.code());
            }
            let fuel = match u64::try_from(fuel) {
                Ok(f) if (1..=st.max_scheduled_fuel).contains(&f) => f,
                _ => return Ok(ScheduleError::BadFuel.code()),
            };
            let Ok(round) = u64::try_from(round) else {
                return Ok(ScheduleError::NotAhead.code());
            };
            let payload = mem.data(&cx)[payload_r].to_vec();
            let ctx = cx.data_mut().ctx_mut().map_err(fail)?;
            match ctx.schedule_sealed(round, &payload, fuel) {
                Ok(id) => {
                    // The queue's work, the opening in the round's block and the call's fuel.
                    charge(
                        &mut cx,
                        crate::gas::SCHEDULE_BASE
                            .saturating_add(crate::gas::SEAL_OPEN_BASE)
                            .saturating_add(fuel),
                    )?;
                    Ok(i64::try_from(id).unwrap_or(i64::MAX))
                }
                Err(e) => Ok(e.code()),
            }
        },
    )?;
    linker.func_wrap(
        m,
        "seal",
        |mut cx: Cx<'_>, id: i64, sp: i32, sl: i32, tp: i32, tl: i32| -> R<i64> {
            use gamechain_sdk::ScheduleError;
            charge(&mut cx, GAS.host_call_base)?;
            stateful(&cx)?;
            cx.data_mut().ctx_mut().map_err(fail)?;
            let mem = memory(&mut cx)?;
            let [sealed_r, tag_r] = spans(&mut cx, mem, [(sp, sl), (tp, tl)])?;
            let (s, t) = (sealed_r.len(), tag_r.len());
            // Every call, accepted or refused, pays the bytes and the proof check.
            charge(
                &mut cx,
                bytes(GAS.per_byte_in, s + t)
                    .saturating_add(bytes(GAS.per_byte_stored, s))
                    .saturating_add(crate::gas::SEAL_CHECK_BASE),
            )?;
            let Ok(id) = u64::try_from(id) else {
                return Ok(ScheduleError::NotSealable.code());
            };
            let data = mem.data(&cx);
            let (sealed, tag) = (data[sealed_r].to_vec(), data[tag_r].to_vec());
            let ctx = cx.data_mut().ctx_mut().map_err(fail)?;
            Ok(match ctx.seal(id, &sealed, &tag) {
                Ok(()) => 0,
                Err(e) => e.code(),
            })
        },
    )?;
    Ok(())
}
