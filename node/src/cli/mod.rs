//! The `gamechain` command line: the arguments, and running each command.
//!
//! | file | owns |
//! |---|---|
//! | `args.rs` | [`Cli`], [`Command`] and every subcommand's arguments (clap); parsing their values |
//! | `commands.rs` | the client commands (`key`, `send`, `faucet`, `transfer`, `game`, `account`, `tx`, `block`, `view`, `status`) |
//! | `error.rs` | [`error::CliError`]: a command's one-line error and exit code |
//! | `escrow_guard.rs` | the refusal to escrow a stake in a module its owner can change at once (`--allow-mutable`) |
//! | `session.rs` | `gamechain session authorize / revoke / list / game`: session keys (`docs/session-keys.md`) |
//! | `channel.rs` | `gamechain channel …`: a player's channel games, printed as short lines (`gamechain-player` does the work) |
//! | `module/mod.rs` | `gamechain module new / build / deploy / show / list / activate / cancel-upgrade / policy / codegen`: the author kit and upgrade policies |
//! | `module/codegen_ts.rs` | `module codegen --ts`: a module schema → a TypeScript client on the JS SDK (runtime part: `codegen_ts_runtime.ts`) |
//! | `node.rs` | `gamechain node`: configuration, logging, run until a signal |
//! | `verify/mod.rs` | `gamechain verify` and `gamechain export`: progress, summary, divergence report; `verify/verify_game.rs`: `gamechain verify --game` |
//! | `demo/mod.rs` | `gamechain demo`: the reference game played over HTTP, printed as a transcript |
//! | `module/dev.rs` | `gamechain dev`: an embedded dev node, build → deploy → watch → rebuild → upgrade → TypeScript client (the page is `node/web/site/dev/`) |
//! | `demo/demo_checks.rs` | what each step of the demo must produce (`docs/tictactoe.md`) |
//! | `bench/` | `gamechain bench`: the throughput harness (workload, drive, CPU, report) |
//! | `submit.rs` | sending one transaction (sign, post, wait for the receipt) and printing API values as JSON, for every command that sends |
//! | `signal.rs` | [`signal::shutdown_signal`]: SIGINT or SIGTERM, which stops `node`, `dev` and `testnet --start` |
//! | `stdout.rs` | [`stdout::PipeStdout`]: the commands' stdout, quiet when its reader closes the pipe |
//! | `net_status.rs` | `gamechain status --net DIR`: every validator of a testnet folder, side by side |
//! | `testnet.rs` | `gamechain testnet`: a local network of validators in one folder, and running it |
//! | `verify/view_proven.rs` | `gamechain view --prove`: a view checked from the genesis alone and re-executed over its proven reads |
//! | `local_node.rs` | [`local_node::LocalNode`]: an in-process node on a temporary directory |
//!
//! Layers: `args` → (`verify`); `commands`, `module`, `demo` → `args`; nothing imports `mod.rs`
//! but through these re-exports.

pub mod args;
pub mod bench;
pub mod channel;
pub mod commands;
pub mod demo;
pub mod error;
pub mod escrow_guard;
pub mod local_node;
pub mod module;
pub mod net_status;
pub mod node;
pub mod session;
pub mod signal;
pub mod stdout;
pub mod submit;
pub mod testnet;
pub mod verify;

pub use args::*;
pub use demo::demo_checks;
pub use module::{codegen_ts, dev};
pub use verify::verify_game;
