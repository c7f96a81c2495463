//! Chains of calls between modules (`call_pure`, `call_code`) as the host side sees them: a
//! call's place in its chain ([`Nesting`]: depth, resolver, the chain's [`CodeMemo`]), what a
//! host function may ask of the module or code it reaches ([`Callee`]) and of the resolver that
//! finds it ([`Resolve`]), and what one pure call produces ([`PureOutcome`], [`PureError`]).
//!
//! The host side (`host.rs`, `pure.rs`) holds callees only through these traits: the callee is
//! a [`WasmModule`](crate::WasmModule) (`module.rs`, which implements them, with the node's
//! [`ModuleResolver`](crate::ModuleResolver)), and a `WasmModule` owns the stores whose data
//! is the host side's, so naming it here would make the two sides import each other.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;

use gamechain_sdk::StateRead;

use crate::run::trap::HostError;

pub use gamechain_sdk::PureError;

/// Most nested `call_pure`s: an entry point the node called is at depth 0, its callee at 1, and
/// a call made at depth [`MAX_PURE_DEPTH`] returns [`PureError::TooDeep`] without running.
/// Every level holds one instance and at most ~590 KB of native stack (ABI.md, "Stack height"),
/// so three levels stay within a 2 MiB thread stack and a pool of 64 slots serves 21 concurrent
/// top-level calls.
pub const MAX_PURE_DEPTH: u32 = 2;
/// Most bytes a pure entry point may return.
pub const MAX_PURE_OUTPUT_BYTES: usize = 65_536;

/// What one pure call produced.
#[derive(Debug, Clone, PartialEq)]
pub struct PureOutcome {
    /// The entry point's bytes or why there are none.
    pub result: Result<Vec<u8>, PureError>,
    /// Fuel the callee used (its whole limit when it trapped).
    pub fuel_used: u64,
    /// The callee's `log` lines (node log only).
    pub log: Vec<String>,
}

/// A module or code a host function reached: what `call_pure`, `call_code` and
/// `module_code_hash` do with it. Implemented by [`WasmModule`](crate::WasmModule).
pub(crate) trait Callee: Send + Sync {
    /// The SHA-256 of its code, lowercase hex.
    fn code_hash(&self) -> &str;

    /// Its pure entry point `gc_pure_<name>(input)` over `state`, read-only, with `fuel`, at
    /// `nesting` (depth and resolver of the caller's chain).
    fn call_pure_nested(
        &self,
        state: &dyn StateRead,
        name: &str,
        input: &[u8],
        fuel: u64,
        nesting: Nesting,
    ) -> Result<PureOutcome, HostError>;

    /// Its pure entry point `gc_pure_<name>(input)` with no state at all, with `fuel`, at
    /// `nesting`; `code_state` is read only to find code by hash for its own `call_code`s.
    fn call_code_nested(
        &self,
        code_state: &dyn StateRead,
        name: &str,
        input: &[u8],
        fuel: u64,
        nesting: Nesting,
    ) -> Result<PureOutcome, HostError>;
}

/// Finds the module an id names and the code a hash names, as [`Callee`]s: the node's
/// [`ModuleResolver`](crate::ModuleResolver) as the host functions see it (`module.rs`).
pub(crate) trait Resolve {
    /// As [`ModuleResolver::resolve`](crate::ModuleResolver::resolve).
    fn resolve(
        &self,
        state: &dyn StateRead,
        id: &str,
    ) -> Result<Option<Arc<dyn Callee>>, HostError>;

    /// As [`ModuleResolver::resolve_code`](crate::ModuleResolver::resolve_code).
    fn resolve_code(
        &self,
        state: &dyn StateRead,
        code_hash: &[u8; 32],
    ) -> Result<Option<(Arc<dyn Callee>, usize)>, HostError>;
}

/// The code modules already found by hash in one chain of calls (`call_code`), shared by every
/// call of the chain: the code store is read (and its bytes charged) once per hash per chain.
pub(crate) type CodeMemo = RefCell<BTreeMap<[u8; 32], Arc<dyn Callee>>>;

/// A call's place in a chain of `call_pure`s.
#[derive(Clone, Copy)]
pub(crate) struct Nesting {
    /// 0 for an entry point the node called; a callee runs at its caller's depth + 1.
    pub(crate) depth: u32,
    /// Resolves module ids for `call_pure`; `None`: every id is unknown. Lifetime erased as in
    /// `Target` (`host.rs`): set only for the duration of one entry-point call.
    pub(crate) resolver: Option<*const (dyn Resolve + 'static)>,
    /// The chain's [`CodeMemo`] (the top call's); `None` at the top, which uses its own.
    pub(crate) codes: Option<*const CodeMemo>,
}

impl Nesting {
    /// The resolver of the running entry point's chain of calls, if the node gave one: the one
    /// place its erased lifetime is restored. Callers are host functions, which run only while
    /// the entry point that set it (`Nesting::top`) is running.
    pub(crate) fn resolver(&self) -> Option<&dyn Resolve> {
        // SAFETY: set by the entry point's caller for the duration of that call (`Nesting::top`,
        // detached before it returns); a host function runs inside it, and the reference is
        // not kept past the host function's return.
        self.resolver.map(|ptr| unsafe { &*ptr })
    }

    /// The top of a chain: depth 0, no resolver.
    pub(crate) const TOP: Nesting = Nesting {
        depth: 0,
        resolver: None,
        codes: None,
    };

    /// Depth 0 with `resolver`.
    ///
    /// # Safety
    /// As `Target::apply` (`host.rs`): the value must not be used after `resolver`'s borrow ends
    /// (the call that receives it detaches it before returning).
    pub(crate) unsafe fn top(resolver: Option<&dyn Resolve>) -> Self {
        Nesting {
            depth: 0,
            codes: None,
            resolver:
                resolver.map(|r| {
                    let ptr: *const (dyn Resolve + '_) = r;
                    // SAFETY: only the lifetime bound changes (see `Target::apply`).
                    unsafe {
                        std::mem::transmute::<
                            *const (dyn Resolve + '_),
                            *const (dyn Resolve + 'static),
                        >(ptr)
                    }
                }),
        }
    }
}

// SAFETY: as for `Target`: the pointer is live only inside one call on the thread that made it,
// and `HostState::detach` clears it before the store can move.
unsafe impl Send for Nesting {}
