//! What a reusable instance is made of: its typed export [`Handles`], an idle [`Warm`] instance
//! waiting in the runtime's pool (`pool.rs`), and the [`Pristine`] snapshot it is reset to
//! (`module.rs` takes the snapshot and does the reset).

use wasmtime::{Global, Memory, Store, TypedFunc, Val};

use crate::run::host::HostState;

/// An instance's typed exports, looked up once per instance.
pub(crate) struct Handles {
    pub(crate) memory: Memory,
    pub(crate) abi_version: TypedFunc<(), i32>,
    pub(crate) alloc: TypedFunc<i32, i32>,
    pub(crate) apply: TypedFunc<(i32, i32, i32, i32), i32>,
    pub(crate) view: TypedFunc<(i32, i32), i32>,
    pub(crate) end_block: Option<TypedFunc<(), i32>>,
    pub(crate) migrate: Option<TypedFunc<(i32, i32, i32, i32), i32>>,
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
