//! The migration from version 1 to version 2, run natively (the two Rust types) and on wasm (the
//! two `.wasm`, upgraded by a real `deploy` block under the `owner` policy) by
//! `gamechain_runtime::migration_tests!`.
//!
//! The OLD `.wasm` is built here from `../scores_v1` (the example keeps both versions' source).
//! A module outside this repository keeps instead the file its deployed version was built to
//! (`gamechain module build --out tests/v1.wasm`, before the change) and passes
//! `old_wasm: include_bytes!("v1.wasm")`, with the old Rust type copied into the tests.

use std::path::Path;

use gamechain_runtime::testkit::{built_guest, migration::Upgrade};
use gamechain_sdk::prelude::*;
use gamechain_sdk::MockCtx;
use scores_v2::{Scores, ID};

/// The OLD code: `../scores_v1` built with the chain's recipe (once per test process).
fn v1_wasm() -> Vec<u8> {
    built_guest(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../scores_v1")).wasm
}

gamechain_runtime::migration_tests!(
    old: scores_v1::Scores, old_wasm: v1_wasm(), new: Scores;
    totals_become_points,
    a_record_of_neither_shape_refuses_the_upgrade,
);

const ALICE: &str = "alice";
const BOB: &str = "bob";

fn view(ctx: &MockCtx, m: &dyn GameModule, who: &str) -> Value {
    let query: Query = [("player".to_string(), who.to_string())].into();
    ctx.view(m, &query).expect("the player view")
}

/// Version 1's totals are version 2's points after the upgrade, stamped with its height; the
/// migration runs once, as the owner, and new adds build on the migrated records.
fn totals_become_points(up: &Upgrade) -> MockCtx {
    let mut ctx = MockCtx::new(ID);
    ctx.height = 10;
    ctx.submit(up.old(), ALICE, json!({"kind": "add", "amount": 5}))
        .unwrap();
    ctx.submit(up.old(), ALICE, json!({"kind": "add", "amount": 7}))
        .unwrap();
    ctx.submit(up.old(), BOB, json!({"kind": "add", "amount": 1}))
        .unwrap();
    assert_eq!(view(&ctx, up.old(), ALICE)["total"], 12);

    up.upgrade(&mut ctx).unwrap();

    assert_eq!(ctx.height, 11, "the upgrade is a block of its own");
    assert_eq!(
        view(&ctx, up.new(), ALICE),
        json!({"player": ALICE, "points": 12, "updated_height": 11})
    );
    assert_eq!(view(&ctx, up.new(), BOB)["points"], 1);
    let (kind, data) = ctx.events.last().unwrap();
    assert_eq!(kind, "scores.migrated");
    assert_eq!(data["records"], 2);
    assert_eq!(data["from_code_hash"].as_str().unwrap().len(), 64);
    assert_eq!(
        ctx.get("player/alice"),
        Some(br#"{"points":12,"updated_height":11}"#.to_vec())
    );

    ctx.height = 12;
    ctx.submit(up.new(), ALICE, json!({"kind": "add", "amount": 3}))
        .unwrap();
    assert_eq!(
        view(&ctx, up.new(), ALICE),
        json!({"player": ALICE, "points": 15, "updated_height": 12})
    );
    ctx
}

/// A record the migration cannot read refuses the whole upgrade: nothing is rewritten and the
/// old code's records stay as they were.
fn a_record_of_neither_shape_refuses_the_upgrade(up: &Upgrade) -> MockCtx {
    let mut ctx = MockCtx::new(ID);
    ctx.submit(up.old(), ALICE, json!({"kind": "add", "amount": 5}))
        .unwrap();
    ctx.put("player/zed", b"{\"score\":1}".to_vec());
    let before = ctx.kv.state.clone();
    let err = up.upgrade(&mut ctx).unwrap_err();
    assert!(
        err.starts_with("internal: `player/zed` is neither version's record"),
        "{err}"
    );
    assert_eq!(ctx.kv.state, before);
    assert_eq!(view(&ctx, up.old(), ALICE)["total"], 5);
    ctx
}
