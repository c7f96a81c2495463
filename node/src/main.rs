//! The `gamechain` binary: parses the command line (`cli/args.rs`) and runs the command — the node
//! (`cli/node.rs`), the demo (`cli/demo/mod.rs`) or a client command (`cli/commands.rs`). Errors are
//! one line on stderr (`error: <code>: <message>` for the API's) and a non-zero exit code
//! (a closed stdout pipe ends the process quietly with 0, `cli/stdout.rs`):
//! 1 for a failure, 2 for bad arguments (clap), 3 for a transaction included with `ok: false`,
//! 4 for `verify` finding a divergence, 5 for `verify` of a chain with validators whose blocks
//! are not all covered by a finality certificate, 6 for `verify` finding stored evidence that
//! proves no fault.

use std::process::ExitCode;
use std::time::Duration;

use std::io::Write;

use clap::Parser;
use gamechain_node::cli::commands::run_client_command;
use gamechain_node::cli::stdout::PipeStdout;
use gamechain_node::cli::{
    bench, demo, dev, module as cli_module, node as cli_node, testnet, verify as cli_verify,
};
use gamechain_node::cli::{Cli, Command};

/// mimalloc instead of glibc's malloc: under a flat-out load the node spends about a seventh of its
/// CPU in malloc/free across its many threads (tokio workers, admission, the sequencer), and
/// mimalloc's per-thread heaps cut that. Determinism is untouched: no hash, receipt, state value
/// or ordering depends on an address or on the allocator (guests' linear memory is wasmtime's own
/// mapping, not malloc's); a follower or a verifier on another allocator reaches the same roots.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Command::TierUpCompile { opt_level } = &cli.command {
        return tier_up_compile(opt_level);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(&format!("cannot start the async runtime: {e}"), 1),
    };
    runtime.block_on(async {
        match cli.command {
            Command::Node(args) => match cli_node::run(args).await {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => fail(&e, 1),
            },
            Command::Demo(args) => {
                // The in-process node logs only its warnings: the transcript is the output.
                cli_node::init_logging("warn");
                let options = demo::DemoOptions {
                    node: args.node,
                    keys_dir: args.keys_dir,
                    receipt_timeout: Duration::from_secs(args.timeout),
                };
                match demo::run(&options, &mut PipeStdout).await {
                    Ok(_) => {
                        let _ = writeln!(PipeStdout, "demo: every outcome matches the seed");
                        ExitCode::SUCCESS
                    }
                    Err(e) => fail(&e.to_string(), 1),
                }
            }
            Command::Verify(args) => match cli_verify::run_verify(args, &mut PipeStdout).await {
                Ok(code) => ExitCode::from(code),
                Err(e) => fail(&e, 1),
            },
            Command::Export(args) => match cli_verify::run_export(args, &mut PipeStdout).await {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => fail(&e, 1),
            },
            Command::Bench(args) => {
                // The in-process node logs only its warnings: the report is the output.
                cli_node::init_logging("warn");
                match bench::run_cli(args, &mut PipeStdout).await {
                    Ok(()) => ExitCode::SUCCESS,
                    Err(e) => fail(&e, 1),
                }
            }
            Command::Testnet(args) => {
                cli_node::init_logging("warn");
                match testnet::run(args, &mut PipeStdout).await {
                    Ok(()) => ExitCode::SUCCESS,
                    Err(e) => fail(&e, 1),
                }
            }
            Command::Dev(args) => {
                // The in-process node logs only its warnings: the progress lines are the output.
                cli_node::init_logging("warn");
                let code = match dev::run(args, &mut PipeStdout).await {
                    Ok(()) => 0,
                    Err(e) => {
                        eprintln!("error: {e}");
                        1
                    }
                };
                // Now: a build stopped by Ctrl-C may still run on a blocking thread, which
                // dropping the runtime would wait for (the node is already shut down).
                let _ = PipeStdout.flush();
                std::process::exit(code)
            }
            Command::Module(command) => match cli_module::run(command, &mut PipeStdout).await {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => fail(&e.to_string(), e.exit_code()),
            },
            command => match run_client_command(command, &mut PipeStdout).await {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => fail(&e.to_string(), e.exit_code()),
            },
        }
    })
}

fn fail(message: &str, code: u8) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(code)
}

/// `internal-tier-up-compile`: the instrumented wasm on stdin, compiled with Cranelift at
/// `opt_level`, its machine code on stdout (`gamechain_ledger::tier_up` runs this in a child
/// process under its time and memory limits). Exit 1 with the reason on stderr otherwise.
fn tier_up_compile(opt_level: &str) -> ExitCode {
    use std::io::Read;
    let Some(level) = gamechain_runtime::OptLevel::ALL
        .into_iter()
        .find(|l| l.name() == opt_level)
    else {
        return fail(&format!("unknown --opt-level `{opt_level}`"), 2);
    };
    let mut wasm = Vec::new();
    if let Err(e) = std::io::stdin()
        .take(gamechain_ledger::tier_up::MAX_INPUT_BYTES as u64)
        .read_to_end(&mut wasm)
    {
        return fail(&format!("cannot read the module: {e}"), 1);
    }
    match gamechain_runtime::precompile(level, &wasm) {
        Ok(code) => match std::io::stdout().lock().write_all(code.bytes()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail(&format!("cannot write the machine code: {e}"), 1),
        },
        Err(e) => fail(&e, 1),
    }
}
