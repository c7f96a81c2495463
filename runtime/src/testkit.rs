//! The author kit's test harness (feature `testkit`, for a module's dev-dependencies): ONE
//! scenario body runs natively against [`MockCtx`] and through this runtime on the module's
//! built `.wasm`, so an author tests the code the chain will run.
//!
//! A scenario is a plain function `fn(&dyn GameModule) -> MockCtx` that sets up a [`MockCtx`],
//! submits ops, asserts, and returns the final context. [`native_and_wasm_tests!`] expands a
//! list of scenarios into two tests each:
//!
//! - `native::<name>`: the scenario against the native module value;
//! - `wasm::<name>`: the crate is built to `.wasm` with the one reproducible recipe
//!   ([`gamechain_sdk::guest_build::build_guest_crate`], once per test process), loaded into a
//!   [`Runtime`] with the default configuration (fuel, limits and instance reuse as on a node),
//!   and the scenario runs against that [`WasmModule`]; then the native run is repeated and
//!   [`assert_same_outcome`] checks both left byte-identical state (balances included), events
//!   and txids.
//!
//! When the module declares a schema ([`GameModule::schema`], `docs/modules.md`, "Schema"),
//! both tests also check, with [`check_schema`], every op the scenario submitted that the module
//! accepted, every event left in the context and every view answered against it; the wasm test
//! first requires the built `.wasm`'s `gamechain.schema` section to equal the native schema. A
//! mismatch fails the test naming the scenario, the op, event or view, and the field.
//!
//! ```
//! // tests/scenarios.rs of a module crate, with
//! // [dev-dependencies] gamechain-runtime = { path = "…/runtime", features = ["testkit"] }
//! use gamechain_sdk::{prelude::*, MockCtx};
//! # mod counter {
//! #     use gamechain_sdk::prelude::*;
//! #     pub struct Counter;
//! #     impl GameModule for Counter {
//! #         fn id(&self) -> &'static str { "counter" }
//! #         fn apply(&self, ctx: &mut dyn Ctx, _: &str, _: &Value) -> Result<(), ActionError> {
//! #             let n: u64 = ctx.get_json("n")?.unwrap_or(0);
//! #             ctx.put_json("n", &(n + 1));
//! #             Ok(())
//! #         }
//! #         fn view(&self, state: &dyn StateRead, _: &Query) -> Result<Value, ActionError> {
//! #             Ok(json!({ "n": state.module_json::<u64>("counter", "n")?.unwrap_or(0) }))
//! #         }
//! #     }
//! # }
//!
//! fn counts_up(m: &dyn GameModule) -> MockCtx {
//!     let mut ctx = MockCtx::new("counter");
//!     ctx.submit(m, "alice", json!({ "kind": "inc" })).unwrap();
//!     assert_eq!(ctx.view(m, &Query::new()).unwrap()["n"], 1);
//!     ctx
//! }
//!
//! gamechain_runtime::native_and_wasm_tests!(counter::Counter; counts_up);
//! # fn main() {
//! #     counts_up(&counter::Counter); // the native half; the wasm half needs a built crate
//! # }
//! ```
//!
//! A crate that shares its scenario list with other crates can keep the names in one
//! `macro_rules!` that hands them to this macro (see `tictactoe::for_each_scenario!` in
//! `modules/tictactoe/src/scenarios/list.rs`).
//!
//! An upgrade is tested the same way: [`migration_tests!`](crate::migration_tests) runs
//! migration scenarios (ops on the old module, the upgrade with its `migrate`, checks on the
//! new) natively and on the old and new `.wasm` through a real upgrade block ([`migration`]).
//!
//! The wasm build runs `cargo build --profile guest --target wasm32-unknown-unknown` in the
//! crate's workspace (target directory `<workspace>/target/guest`), so the first test of a
//! process takes as long as that build; later ones reuse it.

pub mod migration;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};

use gamechain_sdk::guest_build::{build_guest_crate, BuiltGuest};
use gamechain_sdk::schema::Schema;
use gamechain_sdk::{GameModule, MockCtx};

use crate::{Runtime, RuntimeConfig, WasmModule};

/// One runtime with [`RuntimeConfig::default`] (a node's), shared by every test of a process.
pub fn runtime() -> Arc<Runtime> {
    static RUNTIME: LazyLock<Arc<Runtime>> = LazyLock::new(|| {
        Runtime::new(RuntimeConfig::default()).expect("the default runtime configuration is valid")
    });
    RUNTIME.clone()
}

/// The crate in `crate_dir` built to `.wasm` (path, bytes, SHA-256), once per process and
/// directory. Panics with cargo's output when the build fails.
pub fn built_guest(crate_dir: &Path) -> BuiltGuest {
    static BUILT: LazyLock<Mutex<BTreeMap<PathBuf, BuiltGuest>>> = LazyLock::new(Default::default);
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(guest) = built.get(crate_dir) {
        return guest.clone();
    }
    let guest = build_guest_crate(crate_dir)
        .unwrap_or_else(|e| panic!("cannot build {} to wasm: {e}", crate_dir.display()));
    built.insert(crate_dir.to_path_buf(), guest.clone());
    guest
}

/// The crate in `crate_dir` (normally `env!("CARGO_MANIFEST_DIR")`) built to `.wasm` and loaded
/// into [`runtime`] under `native.id()`, once per process and directory. Panics when the build
/// fails or the runtime refuses the module (the [`crate::LoadError`]).
pub fn wasm_module(crate_dir: impl AsRef<Path>, native: &dyn GameModule) -> Arc<WasmModule> {
    /// Loaded modules by (crate directory, module id).
    type Loaded = BTreeMap<(PathBuf, String), Arc<WasmModule>>;
    static LOADED: LazyLock<Mutex<Loaded>> = LazyLock::new(Default::default);
    let crate_dir = crate_dir.as_ref().to_path_buf();
    let key = (crate_dir.clone(), native.id().to_string());
    let mut loaded = LOADED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(module) = loaded.get(&key) {
        return module.clone();
    }
    let guest = built_guest(&crate_dir);
    let module = WasmModule::new(&runtime(), native.id(), &guest.wasm).unwrap_or_else(|e| {
        panic!(
            "the runtime refuses {} as module `{}`: {e}",
            guest.path.display(),
            native.id()
        )
    });
    let module = Arc::new(module);
    loaded.insert(key, module.clone());
    module
}

/// Asserts that scenario `name` left the same raw state (balances included), events and last
/// txid natively and on wasm, and that it wrote something (a scenario that writes nothing
/// proves nothing).
pub fn assert_same_outcome(name: &str, native: &MockCtx, wasm: &MockCtx) {
    assert!(
        !native.kv.state.is_empty(),
        "{name}: the scenario left no state; it proves nothing"
    );
    if native.kv.state != wasm.kv.state {
        let differing: BTreeSet<&String> = native
            .kv
            .state
            .keys()
            .chain(wasm.kv.state.keys())
            .filter(|k| native.kv.state.get(*k) != wasm.kv.state.get(*k))
            .collect();
        panic!("{name}: native and wasm state differ at {differing:?}");
    }
    assert_eq!(
        native.events, wasm.events,
        "{name}: native and wasm events differ"
    );
    assert_eq!(
        native.txid, wasm.txid,
        "{name}: native and wasm txids differ"
    );
}

/// Checks what scenario `name` did in `ctx` against `module`'s schema, when it declares one:
/// every op it submitted that succeeded ([`gamechain_sdk::schema::Schema::check_op`]; since
/// `MockCtx::submit` refuses such ops as the chain does, a backstop), every
/// event left in `ctx.events`, every view answered (the view its query selects). Panics with
/// `<name>: schema mismatch: <op|event|view> …: <problem>` at the first mismatch, and when the
/// schema itself does not parse.
pub fn check_schema(name: &str, module: &dyn GameModule, ctx: &MockCtx) {
    let Some(text) = module.schema() else {
        return;
    };
    let schema = Schema::parse(text)
        .unwrap_or_else(|e| panic!("{name}: the module's schema does not parse: {e}"));
    let fail = |m: gamechain_sdk::schema::Mismatch| -> ! { panic!("{name}: schema mismatch: {m}") };
    for (op, ok) in &ctx.kv.trace.ops {
        if *ok {
            schema.check_op(op).unwrap_or_else(|m| fail(m));
        }
    }
    for (kind, data) in &ctx.events {
        schema.check_event(kind, data).unwrap_or_else(|m| fail(m));
    }
    for (query, answer) in ctx.kv.trace.views() {
        schema
            .check_view(None, &query, &answer)
            .unwrap_or_else(|m| fail(m));
    }
}

/// Runs scenario `scenario` natively against `module` and checks it against the module's
/// schema ([`check_schema`]). What `native::<name>` tests of [`native_and_wasm_tests!`] call.
pub fn run_native(name: &str, module: &dyn GameModule, scenario: fn(&dyn GameModule) -> MockCtx) {
    let ctx = scenario(module);
    check_schema(name, module, &ctx);
}

/// Runs scenario `scenario` on the wasm build of the crate in `crate_dir` and natively, and
/// checks both outcomes are the same ([`assert_same_outcome`]). What `wasm::<name>` tests of
/// [`native_and_wasm_tests!`] call.
pub fn run_on_wasm(
    name: &str,
    crate_dir: &str,
    native: &dyn GameModule,
    scenario: fn(&dyn GameModule) -> MockCtx,
) {
    let wasm = wasm_module(crate_dir, native);
    assert_eq!(
        wasm.schema(),
        native.schema(),
        "{name}: the .wasm's gamechain.schema section differs from the native GameModule::schema \
         (export_module!(M, schema = SCHEMA) and fn schema must give the same const)"
    );
    let on_wasm = scenario(&*wasm);
    check_schema(name, &*wasm, &on_wasm);
    let on_native = scenario(native);
    assert_same_outcome(name, &on_native, &on_wasm);
}

/// Expands scenarios `fn <name>(&dyn GameModule) -> MockCtx` of the calling module into
/// `native::<name>` and `wasm::<name>` tests (see the [module docs](crate::testkit)). The first
/// argument is the native module value (any expression whose `&` is a `&dyn GameModule`); the
/// crate built to wasm is the calling crate (`CARGO_MANIFEST_DIR`).
///
/// ```ignore
/// gamechain_runtime::native_and_wasm_tests!(mnk::Mnk; x_wins_a_row, draw_refunds, resign);
/// ```
#[macro_export]
macro_rules! native_and_wasm_tests {
    ($module:expr; $($scenario:ident),+ $(,)?) => {
        /// The scenarios against the native module and `MockCtx`.
        mod native {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[test]
                fn $scenario() {
                    $crate::testkit::run_native(stringify!($scenario), &$module, super::$scenario);
                }
            )+
        }
        /// The scenarios against the built `.wasm` in the runtime, compared with the native run.
        mod wasm {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[test]
                fn $scenario() {
                    $crate::testkit::run_on_wasm(
                        stringify!($scenario),
                        env!("CARGO_MANIFEST_DIR"),
                        &$module,
                        super::$scenario,
                    );
                }
            )+
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use gamechain_sdk::Ctx;
    use serde_json::json;

    fn wrote(value: &[u8]) -> MockCtx {
        let mut ctx = MockCtx::new("probe");
        ctx.put("k", value.to_vec());
        ctx
    }

    #[test]
    fn equal_outcomes_pass() {
        assert_same_outcome("same", &wrote(b"1"), &wrote(b"1"));
    }

    #[test]
    #[should_panic(expected = "same_key: native and wasm state differ at {\"m/probe/k\"}")]
    fn a_differing_value_is_named() {
        assert_same_outcome("same_key", &wrote(b"1"), &wrote(b"2"));
    }

    #[test]
    #[should_panic(expected = "native and wasm events differ")]
    fn differing_events_fail() {
        let mut wasm = wrote(b"1");
        wasm.emit("probe.extra", json!({}));
        assert_same_outcome("events", &wrote(b"1"), &wasm);
    }

    #[test]
    #[should_panic(expected = "the scenario left no state; it proves nothing")]
    fn a_scenario_that_writes_nothing_fails() {
        assert_same_outcome("empty", &MockCtx::new("probe"), &MockCtx::new("probe"));
    }

    gamechain_sdk::schema! {
        const PROBE_SCHEMA = "probe";
        ops { "put" { n: u32 } }
        events { "probe.put" { n: u32 } }
        views { "n" {} => object { n: u32 } }
    }

    /// Stores `n`, emits it as given (so a scenario can make it break the schema) and views it.
    struct Probe;
    impl GameModule for Probe {
        fn id(&self) -> &'static str {
            "probe"
        }
        fn apply(
            &self,
            ctx: &mut dyn gamechain_sdk::Ctx,
            _: &str,
            op: &serde_json::Value,
        ) -> Result<(), gamechain_sdk::ActionError> {
            ctx.put("n", op["n"].to_string().into_bytes());
            ctx.emit("probe.put", json!({ "n": op["n"] }));
            Ok(())
        }
        fn view(
            &self,
            state: &dyn gamechain_sdk::StateRead,
            _: &gamechain_sdk::Query,
        ) -> Result<serde_json::Value, gamechain_sdk::ActionError> {
            let n = state.read_raw("m/probe/n").unwrap_or_default();
            Ok(json!({ "n": serde_json::from_slice::<serde_json::Value>(&n).unwrap_or_default() }))
        }
        fn schema(&self) -> Option<&str> {
            Some(PROBE_SCHEMA)
        }
    }

    fn submits(n: serde_json::Value) -> MockCtx {
        let mut ctx = MockCtx::new("probe");
        ctx.submit(&Probe, "alice", json!({ "kind": "put", "n": n }))
            .unwrap();
        ctx.view(&Probe, &Default::default()).unwrap();
        ctx
    }

    #[test]
    fn ops_events_and_views_that_match_the_schema_pass() {
        check_schema("good", &Probe, &submits(json!(3)));
    }

    /// `MockCtx::submit` refuses what the chain refuses: an op the module accepted that breaks
    /// the schema (a value of another type, an undeclared field), undone.
    #[test]
    fn a_submitted_op_that_breaks_the_schema_is_refused_as_on_chain() {
        let mut ctx = MockCtx::new("probe");
        let err = ctx
            .submit(&Probe, "alice", json!({ "kind": "put", "n": "3" }))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid: op put: field n: expected u32, got \"3\""
        );
        let err = ctx
            .submit(&Probe, "alice", json!({ "kind": "put", "n": 3, "m": 4 }))
            .unwrap_err();
        assert_eq!(err.to_string(), "invalid: op put: field m: unknown field");
        assert!(
            ctx.kv.state.is_empty() && ctx.events.is_empty(),
            "rolled back"
        );
    }

    #[test]
    #[should_panic(expected = "bad_op: schema mismatch: op put: field n: expected u32, got \"3\"")]
    fn a_mismatching_op_is_named() {
        // `submit` refuses such an op now; the check still names one in a trace.
        let mut ctx = submits(json!(3));
        ctx.kv
            .trace
            .ops
            .push((json!({ "kind": "put", "n": "3" }), true));
        check_schema("bad_op", &Probe, &ctx);
    }

    #[test]
    #[should_panic(expected = "bad_event: schema mismatch: event probe.put: field n: expected u32")]
    fn a_mismatching_event_is_named() {
        let mut ctx = submits(json!(3));
        ctx.kv.trace.ops.clear();
        ctx.emit("probe.put", json!({ "n": -1 }));
        check_schema("bad_event", &Probe, &ctx);
    }

    #[test]
    #[should_panic(expected = "bad_view: schema mismatch: view n answer.n: expected u32")]
    fn a_mismatching_view_answer_is_named() {
        let mut ctx = submits(json!(3));
        ctx.kv.trace.ops.clear();
        ctx.events.clear();
        ctx.kv.state.insert("m/probe/n".into(), b"true".to_vec());
        ctx.view(&Probe, &Default::default()).unwrap();
        check_schema("bad_view", &Probe, &ctx);
    }
}
