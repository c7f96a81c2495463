//! What a reusable instance is made of: its typed export [`Handles`], an idle [`Warm`] instance
//! waiting in the runtime's pool (`pool.rs`), the [`Pristine`] snapshot it is reset to
//! (`module.rs` takes it at load), and the reset itself ([`reset`], checked against
//! the whole snapshot by [`verify`] when `verify_reuse` is on).

use wasmtime::{Global, Memory, Store, TypedFunc, Val};

use crate::config::RuntimeConfig;
use crate::load::instrument::Plan;
use crate::run::host::HostState;

/// What [`verify`] calls an instance just created.
pub(crate) const NEW_INSTANCE: &str = "a new instance";

/// An instance's typed exports, looked up once per instance.
pub(crate) struct Handles {
    /// The instance (pure entry points are looked up by name on it).
    pub(crate) instance: wasmtime::Instance,
    pub(crate) memory: Memory,
    pub(crate) abi_version: TypedFunc<(), i32>,
    pub(crate) alloc: TypedFunc<i32, i32>,
    pub(crate) apply: TypedFunc<(i32, i32, i32, i32), i32>,
    pub(crate) view: TypedFunc<(i32, i32), i32>,
    pub(crate) end_block: Option<TypedFunc<(), i32>>,
    pub(crate) migrate: Option<TypedFunc<(i32, i32, i32, i32), i32>>,
    pub(crate) scheduled: Option<TypedFunc<(i64, i32, i32), i32>>,
    /// `dirty` and the mutable globals, for an instance that will be reset.
    pub(crate) dirty: Option<Global>,
    pub(crate) globals: Vec<Global>,
    /// The stack-height global.
    pub(crate) stack: Global,
}

/// An idle instance of a reusable module, reset to pristine (see the module documentation).
pub(crate) struct Warm {
    /// The module it belongs to ([`WasmModule`]'s `uid`).
    pub(crate) uid: u64,
    /// Whether it holds a pool slot (`engine.rs`).
    pub(crate) holds_slot: bool,
    pub(crate) store: Store<HostState>,
    pub(crate) handles: Handles,
}

/// A reusable module's state right after instantiation.
pub(crate) struct Pristine {
    /// The whole initial memory.
    pub(crate) memory: Vec<u8>,
    /// The mutable globals, in `Exports::globals` order.
    pub(crate) globals: Vec<Val>,
    /// Fuel the instantiation (the start function) uses.
    pub(crate) start_fuel: u64,
}

/// Resets a warm instance of the module `id` (instrumented by `plan`) after a call that
/// returned normally: the chunks written (by the module or the host), the mutable globals and
/// `dirty`. `false` when it cannot be reset (its memory grew): drop it.
pub(crate) fn reset(
    plan: &Plan,
    id: &str,
    config: &RuntimeConfig,
    store: &mut Store<HostState>,
    h: &Handles,
    pristine: &Pristine,
) -> bool {
    let Some(dirty) = h.dirty else {
        return false;
    };
    if h.memory.data_size(&*store) != plan.initial_bytes {
        return false;
    }
    let Some(marked) = dirty.get(&mut *store).i64() else {
        return false;
    };
    let written = marked as u64 | store.data().host_writes;
    let memory = h.memory.data_mut(&mut *store);
    for range in plan.restore_ranges(written) {
        memory[range.clone()].copy_from_slice(&pristine.memory[range]);
    }
    for (global, value) in h.globals.iter().zip(&pristine.globals) {
        if global.set(&mut *store, *value).is_err() {
            return false;
        }
    }
    if dirty.set(&mut *store, Val::I64(0)).is_err() {
        return false;
    }
    // Back at 0 after any call that returned; set anyway, it is one store.
    if h.stack.set(&mut *store, Val::I32(0)).is_err() {
        return false;
    }
    store.data_mut().host_writes = 0;
    if config.verify_reuse {
        verify(id, store, h, pristine, "a reset instance");
    }
    true
}

/// Panics unless the instance's memory, mutable globals and `dirty` equal the snapshot.
pub(crate) fn verify(
    id: &str,
    store: &mut Store<HostState>,
    h: &Handles,
    pristine: &Pristine,
    what: &str,
) {
    let memory = h.memory.data(&*store);
    assert_eq!(
        memory.len(),
        pristine.memory.len(),
        "module {id}: {what} has another memory size"
    );
    // One `memcmp` first; the byte loop only names the first difference. (Under a fuzzer's
    // compare tracing the byte loop alone was two thirds of `host_calls`' time.)
    if memory != &pristine.memory[..] {
        let at = memory
            .iter()
            .zip(&pristine.memory)
            .position(|(a, b)| a != b)
            .expect("two unequal slices of one length differ at some byte");
        panic!(
            "module {id}: {what} differs from the pristine memory at byte {at} ({} != {})",
            memory[at], pristine.memory[at]
        );
    }
    for (i, (global, value)) in h.globals.iter().zip(&pristine.globals).enumerate() {
        let now = global.get(&mut *store);
        assert_eq!(
            bits(&now),
            bits(value),
            "module {id}: {what} differs in mutable global #{i}"
        );
    }
    // A new instance's `dirty` may hold its start function's marks (restored with the rest
    // after its first call); a reset one's must be clear.
    if let Some(dirty) = h.dirty.filter(|_| what != NEW_INSTANCE) {
        assert_eq!(
            dirty.get(&mut *store).i64(),
            Some(0),
            "module {id}: {what} has dirty marks"
        );
    }
    assert_eq!(
        store.data().host_writes,
        0,
        "module {id}: {what} has host write marks"
    );
    assert_eq!(
        h.stack.get(&mut *store).i32(),
        Some(0),
        "module {id}: {what} has a stack height"
    );
}

/// The bits of a numeric global's value (`None` for references), for comparisons.
fn bits(v: &Val) -> Option<u64> {
    match *v {
        Val::I32(x) => Some(x as u32 as u64),
        Val::I64(x) => Some(x as u64),
        Val::F32(x) => Some(u64::from(x)),
        Val::F64(x) => Some(x),
        _ => None,
    }
}
