//! The author kit end to end, offline: `gamechain module new` writes a crate outside the
//! workspace, the crate builds to `.wasm` with the reproducible recipe from its own directory
//! (`gamechain module build`'s code path), the runtime loads it, and its example module answers
//! ops and views through wasm as its documentation says.

use std::path::Path;

use gamechain_node::cli_module::new_module;
use gamechain_runtime::WasmModule;
use gamechain_sdk::guest_build::build_guest_crate;
use gamechain_sdk::{ActionError, GameModule, MockCtx, Query};
use serde_json::json;

#[test]
fn a_new_module_crate_builds_loads_and_runs() {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let dir = tmp.path().join("kit_probe");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    new_module("kit_probe", &dir, &repo).expect("module new");

    let built = build_guest_crate(&dir).unwrap_or_else(|e| panic!("module build: {e}"));
    assert!(built.path.starts_with(dir.join("target").join("guest")));
    assert_eq!(std::fs::read(&built.path).unwrap(), built.wasm);
    let module = WasmModule::new(&gamechain_tests::runtime(), "kit_probe", &built.wasm)
        .expect("the runtime loads the generated module");
    assert_eq!(module.code_hash(), built.sha256);

    let mut ctx = MockCtx::new("kit_probe");
    ctx.submit(&module, "alice", json!({ "kind": "add", "amount": 5 }))
        .unwrap();
    ctx.submit(&module, "alice", json!({ "kind": "add", "amount": 2 }))
        .unwrap();
    assert_eq!(
        ctx.events.last().unwrap(),
        &(
            "kit_probe.added".to_string(),
            json!({ "by": "alice", "amount": 2, "tally": 7 })
        )
    );
    let query: Query = [("player".to_string(), "alice".to_string())].into();
    assert_eq!(
        module.view(&ctx.kv, &query).unwrap(),
        json!({ "player": "alice", "tally": 7 })
    );
    let err = ctx
        .submit(&module, "bob", json!({ "kind": "reset" }))
        .unwrap_err();
    assert!(matches!(err, ActionError::Invalid(_)));
    assert_eq!(err.to_string(), "invalid: nothing to reset");
}
