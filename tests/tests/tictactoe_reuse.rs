//! The tic-tac-toe guest with instance reuse (`RuntimeConfig::reuse_instances`): calls served by
//! reset warm instances must give exactly what fresh instances give — results, fuel, writes,
//! events — while every reset is checked against the module's pristine snapshot
//! (`verify_reuse`, which panics on any difference in memory or globals).

use gamechain_runtime::{
    execute_apply, run_view, Allocation, MemState, Runtime, RuntimeConfig, TxOutcome, WasmModule,
    WriteSet,
};
use gamechain_sdk::{BlockEnv, MockCtx, Query, GOLD};
use gamechain_tests::guest;
use tictactoe::scenarios::SCENARIOS;

/// The guest in a runtime of its own: reuse and verification on, or reuse off.
fn module(reuse: bool) -> WasmModule {
    let config = RuntimeConfig {
        allocation: Allocation::Pooling { instances: 4 },
        reuse_instances: reuse,
        verify_reuse: reuse,
        ..RuntimeConfig::default()
    };
    let runtime = Runtime::new(config).unwrap();
    WasmModule::new(&runtime, tictactoe::ID, &guest("tictactoe").wasm).unwrap()
}

#[test]
fn the_seed_scenarios_end_identically_with_and_without_instance_reuse() {
    let (fresh, reuse) = (module(false), module(true));
    assert_eq!(reuse.reusable(), Ok(()));
    for (name, scenario) in SCENARIOS {
        let a = scenario(&fresh);
        let b = scenario(&reuse);
        assert_eq!(
            a.kv.state, b.kv.state,
            "{name}: state (incl. balances) differs"
        );
        assert_eq!(a.events, b.events, "{name}: events differ");
        assert_eq!(a.txid, b.txid, "{name}: txids differ");
    }
    // Instances really were reused (the scenarios' failing calls return error objects, they do
    // not trap, so hardly any instance is dropped).
    assert!(
        reuse.instantiations() * 10 < fresh.instantiations(),
        "{} instances with reuse, {} without",
        reuse.instantiations(),
        fresh.instantiations()
    );
}

const ALICE: &str = "alice";
const BOB: &str = "bob";

/// Alice and Bob with GOLD, as committed state.
fn funded() -> MemState {
    let mut mock = MockCtx::new(tictactoe::ID);
    mock.set_balance(ALICE, GOLD, 100_000);
    mock.set_balance(BOB, GOLD, 100_000);
    let mut state = MemState::new();
    state.apply(
        mock.kv
            .state
            .into_iter()
            .map(|(k, v)| (k, Some(v)))
            .collect::<WriteSet>(),
    );
    state
}

#[test]
fn games_through_the_executor_have_identical_receipts_and_fuel_with_and_without_reuse() {
    let (fresh, reuse) = (module(false), module(true));
    let mut states = (funded(), funded());
    let mut tx = 0u64;
    // One transaction on both: identical outcomes, writes committed on success; returns the
    // outcome and the txid.
    let mut step =
        |sender: &str, op: &str, states: &mut (MemState, MemState)| -> (TxOutcome, String) {
            tx += 1;
            let txid = format!("{:016x}{tx:048x}", tx.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let env = BlockEnv {
                height: 100 + tx,
                block_time_ms: 1_764_000_000_000 + tx,
                ..BlockEnv::default()
            };
            let a = execute_apply(&fresh, &states.0, &env, &txid, sender, op.as_bytes()).unwrap();
            let b = execute_apply(&reuse, &states.1, &env, &txid, sender, op.as_bytes()).unwrap();
            assert_eq!(a, b, "tx {tx} {sender} {op}");
            assert!(a.fuel_used > 0);
            if a.result.is_ok() {
                states.0.apply(a.writes.clone());
                states.1.apply(b.writes);
            }
            (a, txid)
        };
    let mut ok = 0;
    for game in 0..4 {
        let (created, txid) = step(
            ALICE,
            &format!(r#"{{"kind":"create","stake":"{}"}}"#, 10 * game + 1),
            &mut states,
        );
        assert_eq!(created.result, Ok(()));
        let id = txid[..16].to_string();
        let moves: &[(&str, &str)] = &[
            (BOB, r#"{"kind":"join","id":"ID"}"#),
            (ALICE, r#"{"kind":"move","id":"ID","cell":0}"#),
            (ALICE, r#"{"kind":"move","id":"ID","cell":1}"#), // not Alice's turn
            (BOB, r#"{"kind":"move","id":"ID","cell":0}"#),   // taken
            (BOB, r#"{"kind":"move","id":"ID","cell":9}"#),   // no such cell
            (BOB, r#"{"kind":"move","id":"ID","cell":3}"#),
            (BOB, r#"{"kind":"fly","id":"ID"}"#), // unknown op
            (BOB, "{"),                           // not JSON
            (BOB, ""),                            // empty op
            (ALICE, r#"{"kind":"move","id":"ID","cell":1}"#),
            (BOB, r#"{"kind":"move","id":"ID","cell":4}"#),
            (ALICE, r#"{"kind":"move","id":"ID","cell":2}"#), // x wins the top row
            (BOB, r#"{"kind":"move","id":"ID","cell":5}"#),   // game over
        ];
        for (sender, op) in moves {
            let (out, _) = step(sender, &op.replace("ID", &id), &mut states);
            ok += usize::from(out.result.is_ok());
        }
        for query in [
            vec![("id", id.as_str())],
            vec![("open", "1")],
            vec![("player", ALICE)],
            vec![],
        ] {
            let query: Query = query
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            // Twice each: the second runs in the instance the first left.
            for _ in 0..2 {
                let a = run_view(&fresh, &states.0, &query).unwrap();
                let b = run_view(&reuse, &states.1, &query).unwrap();
                assert_eq!(a, b, "view {query:?}");
            }
        }
    }
    assert_eq!(ok, 4 * 6, "join and five moves per game succeed");
    assert!(
        reuse.instantiations() < 10,
        "{} instances",
        reuse.instantiations()
    );
}
