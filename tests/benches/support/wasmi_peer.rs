//! The move bench's peer: the same tic-tac-toe guest run by wasmi, the interpreter that
//! Substrate's contracts and Soroban build on, with wasmi's own fuel metering on, so the bench
//! shows where our runtime stands against a runtime an author might otherwise pick, in one run.
//!
//! It is built only with `--features peers` (wasmi is not a dependency of the tests).
//!
//! What one move costs here: a new `Store` and instance of the module compiled once (wasmi
//! translates lazily, so the first move of the bench pays the translation and the timed ones do
//! not), the guest's `gc_alloc` for the sender and the op, `gc_apply`, and the host calls the
//! move makes. The host implements the imports a move uses as ABI.md specifies them (context,
//! state through an overlay of the committed state, events, output) over a `BTreeMap`, and
//! traps on the others with their name. It is not the chain's host: no gas table, no bounds, no
//! re-encoding of events. So it is a floor for what such a runtime would cost, not a rival
//! implementation.

use std::collections::BTreeMap;
use std::sync::Arc;

use wasmi::{
    Caller, Config, Engine, Error, Extern, ExternType, Linker, Memory, Module, Store, Val,
};

/// Fuel given to one move, as wasmi counts it.
const FUEL: u64 = 10_000_000;

/// What the host of one move holds.
struct Host {
    module_id: String,
    txid: String,
    height: i64,
    time_ms: i64,
    committed: Arc<BTreeMap<String, Vec<u8>>>,
    writes: BTreeMap<String, Option<Vec<u8>>>,
    events: Vec<(String, Vec<u8>)>,
    output: Vec<u8>,
}

impl Host {
    fn read(&self, key: &str) -> Option<&[u8]> {
        match self.writes.get(key) {
            Some(value) => value.as_deref(),
            None => self.committed.get(key).map(Vec::as_slice),
        }
    }
}

/// The tic-tac-toe module loaded into wasmi, and the linker with its imports.
pub struct Peer {
    engine: Engine,
    module: Module,
    linker: Linker<Host>,
}

/// What one move gave: its writes (`None`: deleted), its events (kind, data as the guest
/// encoded it) and wasmi's fuel.
pub struct Moved {
    pub writes: BTreeMap<String, Option<Vec<u8>>>,
    pub events: Vec<(String, Vec<u8>)>,
    pub fuel: u64,
}

fn memory(caller: &Caller<'_, Host>) -> Memory {
    match caller.get_export("memory") {
        Some(Extern::Memory(m)) => m,
        _ => panic!("the guest exports its memory"),
    }
}

fn bytes(caller: &Caller<'_, Host>, ptr: &Val, len: &Val) -> Result<Vec<u8>, Error> {
    let (Val::I32(ptr), Val::I32(len)) = (ptr, len) else {
        return Err(Error::new("bad argument types"));
    };
    let data = memory(caller).data(caller);
    let (start, len) = (*ptr as u32 as usize, *len as u32 as usize);
    data.get(start..start + len)
        .map(<[u8]>::to_vec)
        .ok_or_else(|| Error::new("bad pointer from module"))
}

fn text(caller: &Caller<'_, Host>, ptr: &Val, len: &Val) -> Result<String, Error> {
    String::from_utf8(bytes(caller, ptr, len)?).map_err(|_| Error::new("invalid UTF-8"))
}

/// Writes `value` at `(out_ptr, out_cap)` when it fits; its length either way.
fn give(caller: &mut Caller<'_, Host>, out: &Val, cap: &Val, value: &[u8]) -> Result<i64, Error> {
    let (Val::I32(out), Val::I32(cap)) = (out, cap) else {
        return Err(Error::new("bad argument types"));
    };
    if value.len() <= *cap as u32 as usize {
        let m = memory(caller);
        let start = *out as u32 as usize;
        m.data_mut(&mut *caller)
            .get_mut(start..start + value.len())
            .ok_or_else(|| Error::new("bad pointer from module"))?
            .copy_from_slice(value);
    }
    Ok(value.len() as i64)
}

impl Peer {
    /// Loads `wasm` into a wasmi engine with fuel metering on.
    pub fn new(wasm: &[u8]) -> Peer {
        let mut config = Config::default();
        config.consume_fuel(true);
        let engine = Engine::new(&config);
        let module = Module::new(&engine, wasm).expect("wasmi loads the guest");
        let mut linker = Linker::<Host>::new(&engine);
        for import in module.imports() {
            let ExternType::Func(ty) = import.ty() else {
                panic!("the guest imports only functions");
            };
            let name = import.name().to_string();
            linker
                .func_new(
                    import.module(),
                    import.name(),
                    ty.clone(),
                    move |caller, args, out| host_call(&name, caller, args, out),
                )
                .expect("each import once");
        }
        Peer {
            engine,
            module,
            linker,
        }
    }

    /// Applies `op` from `sender` over `committed` in a new instance, as `execute_apply` does.
    pub fn apply(
        &self,
        committed: &Arc<BTreeMap<String, Vec<u8>>>,
        (module_id, txid, height, time_ms): (&str, &str, u64, u64),
        sender: &str,
        op: &[u8],
    ) -> Moved {
        let host = Host {
            module_id: module_id.to_string(),
            txid: txid.to_string(),
            height: height as i64,
            time_ms: time_ms as i64,
            committed: committed.clone(),
            writes: BTreeMap::new(),
            events: Vec::new(),
            output: Vec::new(),
        };
        let mut store = Store::new(&self.engine, host);
        store.set_fuel(FUEL).expect("fuel is on");
        let instance = self
            .linker
            .instantiate_and_start(&mut store, &self.module)
            .expect("instantiates");
        let memory = instance.get_memory(&store, "memory").expect("memory");
        let alloc = instance
            .get_typed_func::<i32, i32>(&store, "gc_alloc")
            .expect("gc_alloc");
        let place = |store: &mut Store<Host>, input: &[u8]| {
            let ptr = alloc
                .call(&mut *store, input.len() as i32)
                .expect("allocates");
            memory
                .write(&mut *store, ptr as u32 as usize, input)
                .expect("in memory");
            (ptr, input.len() as i32)
        };
        let (sp, sl) = place(&mut store, sender.as_bytes());
        let (op_ptr, op_len) = place(&mut store, op);
        let apply = instance
            .get_typed_func::<(i32, i32, i32, i32), i32>(&store, "gc_apply")
            .expect("gc_apply");
        let code = apply
            .call(&mut store, (sp, sl, op_ptr, op_len))
            .unwrap_or_else(|e| panic!("wasmi: {e}"));
        let fuel = FUEL - store.get_fuel().expect("fuel is on");
        let host = store.into_data();
        assert_eq!(
            code,
            0,
            "the move is refused: {}",
            String::from_utf8_lossy(&host.output)
        );
        Moved {
            writes: host.writes,
            events: host.events,
            fuel,
        }
    }
}

/// One host import (ABI.md "Host imports"), or a trap naming it when a move does not use it.
fn host_call(
    name: &str,
    mut caller: Caller<'_, Host>,
    a: &[Val],
    out: &mut [Val],
) -> Result<(), Error> {
    match name {
        "height" => out[0] = Val::I64(caller.data().height),
        "block_time_ms" => out[0] = Val::I64(caller.data().time_ms),
        "module_id" | "txid" => {
            let host = caller.data();
            let value = if name == "txid" {
                &host.txid
            } else {
                &host.module_id
            }
            .clone();
            out[0] = Val::I32(give(&mut caller, &a[0], &a[1], value.as_bytes())? as i32);
        }
        "get" | "read_raw" => {
            let key = text(&caller, &a[0], &a[1])?;
            let key = if name == "get" {
                format!("m/{}/{key}", caller.data().module_id)
            } else {
                key
            };
            let value = caller.data().read(&key).map(<[u8]>::to_vec);
            out[0] = Val::I64(match value {
                Some(value) => give(&mut caller, &a[2], &a[3], &value)?,
                None => -1,
            });
        }
        "put" => {
            let key = format!(
                "m/{}/{}",
                caller.data().module_id,
                text(&caller, &a[0], &a[1])?
            );
            let value = bytes(&caller, &a[2], &a[3])?;
            caller.data_mut().writes.insert(key, Some(value));
        }
        "delete" => {
            let key = format!(
                "m/{}/{}",
                caller.data().module_id,
                text(&caller, &a[0], &a[1])?
            );
            caller.data_mut().writes.insert(key, None);
        }
        "emit" => {
            let kind = text(&caller, &a[0], &a[1])?;
            let data = bytes(&caller, &a[2], &a[3])?;
            caller.data_mut().events.push((kind, data));
        }
        "output" => {
            let value = bytes(&caller, &a[0], &a[1])?;
            caller.data_mut().output = value;
        }
        "log" => {}
        "abort" => return Err(Error::new("module panicked")),
        other => return Err(Error::new(format!("the bench's host has no {other}"))),
    }
    Ok(())
}
