//! Compile time of hostile module shapes (`runtime/tests/bombs/`), per KB of wasm, under
//! Cranelift (what genesis modules get) and Winch (what uploaded modules get), measured in one
//! run so the ratio holds on a noisy machine. Cranelift is only given the small sizes: its worst
//! shape grows faster than linearly (minutes at 10 KB), which is the point.
//!
//! Run: `cargo bench -p gamechain-runtime --bench compile_bombs` (prints a table; nothing is
//! asserted).

#[path = "../tests/bombs/mod.rs"]
mod bombs;

use std::time::Instant;

use gamechain_runtime::{Allocation, Compiler, Runtime, RuntimeConfig, WasmModule};

fn runtime(compiler: Compiler) -> std::sync::Arc<Runtime> {
    Runtime::new(RuntimeConfig {
        allocation: Allocation::OnDemand,
        upload_compiler: compiler,
        ..RuntimeConfig::default()
    })
    .unwrap()
}

/// Seconds to load (validate, instrument, compile, first instance) `wasm`, and the outcome.
fn time(rt: &std::sync::Arc<Runtime>, wasm: &[u8]) -> (f64, String) {
    let t = Instant::now();
    let r = WasmModule::new(rt, "bomb", wasm);
    let s = t.elapsed().as_secs_f64();
    (
        s,
        r.map(|_| "loads".to_string())
            .unwrap_or_else(|e| e.to_string()),
    )
}

fn main() {
    let cranelift = runtime(Compiler::Cranelift);
    let winch = runtime(Compiler::Winch);
    let cases: Vec<(bombs::Bomb, bool)> = vec![
        (bombs::locals_x_loops(1000, 50), true),
        (bombs::locals_x_loops(1000, 100), true),
        (bombs::locals_x_loops(1000, 200), false),
        (bombs::locals_x_loops(1000, 1000), false),
        (bombs::locals_x_loops(100, 1000), false),
        (bombs::locals_x_loops(1000, 5000), false),
        (bombs::nested_ifs(10_000), true),
        (bombs::nested_ifs(200_000), false),
        (bombs::many_functions(2000, 500), false),
        (bombs::straight_line(100_000), true),
    ];
    println!(
        "{:<28} {:>9} {:>13} {:>11} {:>13} {:>11}  outcome (winch)",
        "shape", "KB", "cranelift s", "ms/KB", "winch s", "ms/KB"
    );
    for (bomb, with_cranelift) in cases {
        let wasm = bomb.wasm();
        let kb = wasm.len() as f64 / 1024.0;
        let (c, c_ms) = if with_cranelift {
            let (s, _) = time(&cranelift, &wasm);
            (format!("{s:.3}"), format!("{:.2}", s * 1e3 / kb))
        } else {
            ("(skipped)".into(), "-".into())
        };
        let (w, outcome) = time(&winch, &wasm);
        println!(
            "{:<28} {:>9.1} {:>13} {:>11} {:>13.3} {:>11.2}  {}",
            bomb.name,
            kb,
            c,
            c_ms,
            w,
            w * 1e3 / kb,
            outcome
        );
    }
}
