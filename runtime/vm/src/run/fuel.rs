//! The fuel counter of one store: the instrumented module's own `fuel` global
//! (`load/instrument/meter.rs`), which the host sets before a call, reads after it, and charges
//! from in host functions. wasmtime's own fuel is off (`engine.rs`).
//!
//! Until an instance exists (a new store, before instantiation) the amount waits in the store
//! data and is written into the global when it is attached, before the start function runs.
//! Values are `u64` (the global is an `i64` read as unsigned); [`OUT_OF_FUEL`] is what a charge
//! the counter could not pay leaves in it.

use wasmtime::{AsContextMut, Global, Store, Val};

/// What the counter holds after the module ran out of fuel (`meter.rs`'s `OUT_OF_FUEL`, read as
/// unsigned): never an amount, since every limit is below it.
pub(crate) const OUT_OF_FUEL: u64 = crate::load::instrument::meter::OUT_OF_FUEL as u64;

/// Store data holding a [`FuelCounter`] (the host's `HostState`).
pub(crate) trait HasFuel {
    fn fuel(&self) -> &FuelCounter;
    fn fuel_mut(&mut self) -> &mut FuelCounter;
}

/// A store's fuel counter: the instance's global once attached, else the amount to give it.
#[derive(Debug, Default)]
pub(crate) struct FuelCounter {
    global: Option<Global>,
    pending: u64,
}

/// The fuel left in `store`'s counter ([`OUT_OF_FUEL`] after the module ran out).
pub(crate) fn left<T: HasFuel + 'static>(mut store: impl AsContextMut<Data = T>) -> u64 {
    let mut cx = store.as_context_mut();
    match cx.data().fuel().global {
        Some(g) => g.get(&mut cx).i64().map_or(0, |v| v as u64),
        None => cx.data().fuel().pending,
    }
}

/// Sets `store`'s counter to `fuel`. Errors: wasmtime's (a global of another store, which
/// cannot happen for an attached one).
pub(crate) fn set<T: HasFuel + 'static>(
    mut store: impl AsContextMut<Data = T>,
    fuel: u64,
) -> wasmtime::Result<()> {
    let mut cx = store.as_context_mut();
    match cx.data().fuel().global {
        Some(g) => g.set(&mut cx, Val::I64(fuel as i64)),
        None => {
            cx.data_mut().fuel_mut().pending = fuel;
            Ok(())
        }
    }
}

/// Attaches a new instance's `fuel` global to `store` and gives it the amount set before.
pub(crate) fn attach<T: HasFuel + 'static>(
    store: &mut Store<T>,
    global: Global,
) -> wasmtime::Result<()> {
    let pending = store.data().fuel().pending;
    store.data_mut().fuel_mut().global = Some(global);
    set(store, pending)
}

/// Whether the module ran out of fuel in wasm code (a charge it could not pay trapped).
pub(crate) fn ran_out<T: HasFuel + 'static>(store: impl AsContextMut<Data = T>) -> bool {
    left(store) == OUT_OF_FUEL
}
