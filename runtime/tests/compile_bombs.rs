//! Compile bombs (`bombs/`) under the upload compiler: every shape that stalls an optimising
//! compiler (locals live across thousands of nested loops, 200,000 nested `if`s, wide straight
//! code, many large functions) loads as an upload (Winch) and runs to the same outcome twice,
//! or is refused by a validation rule with its fixed text. The time each takes is measured by
//! `runtime/benches/compile_bombs.rs` (tests assert outcomes, never durations).

use crate::bombs;

use gamechain_runtime::{
    execute_apply, Allocation, Compiler, MemState, Runtime, RuntimeConfig, WasmModule,
};
use gamechain_sdk::{BlockEnv, Checkpoint};

fn env() -> BlockEnv {
    BlockEnv {
        height: 1,
        block_time_ms: 1_700_000_000_000,
        checkpoint: Checkpoint {
            height: 0,
            hash: "00".into(),
        },
        sequencer: "seq".into(),
        beacon: None,
        beacon_key: None,
    }
}

#[test]
fn compile_bombs_load_as_uploads_and_run_deterministically() {
    let rt = Runtime::new(RuntimeConfig {
        allocation: Allocation::OnDemand,
        ..RuntimeConfig::default()
    })
    .unwrap();
    assert_eq!(rt.config().upload_compiler, Compiler::Winch);
    let cases = [
        (bombs::locals_x_loops(1000, 200), "ok"),
        (bombs::locals_x_loops(100, 1000), "ok"),
        (bombs::locals_x_loops(1000, 5000), "ok"),
        (bombs::nested_ifs(200_000), "ok"),
        (bombs::straight_line(100_000), "ok"),
        (bombs::many_functions(1000, 100), "ok"),
        (
            bombs::many_functions(2000, 500),
            "code is 3769904 bytes, the limit is 1048576",
        ),
        (
            bombs::locals_x_loops(1100, 2),
            "function 4 has 1100 locals, the limit is 1024",
        ),
    ];
    for (bomb, expected) in cases {
        let wasm = bomb.wasm();
        let module = match WasmModule::new(&rt, "bomb", &wasm) {
            Ok(m) => m,
            Err(e) => {
                assert_eq!(e.to_string(), expected, "{}", bomb.name);
                continue;
            }
        };
        assert_eq!(module.compiler(), Compiler::Winch, "{}", bomb.name);
        let run = || {
            let out = execute_apply(&module, &MemState::new(), &env(), "tx", "alice", b"{}")
                .unwrap_or_else(|e| panic!("{}: {e}", bomb.name));
            (out.result.map_err(|e| e.to_string()), out.fuel_used)
        };
        let first = run();
        assert_eq!(first, run(), "{}: two runs differ", bomb.name);
        let got = match &first.0 {
            Ok(()) => "ok".to_string(),
            Err(e) => e.clone(),
        };
        assert_eq!(got, expected, "{}", bomb.name);
    }
}
