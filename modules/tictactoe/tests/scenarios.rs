//! Tic-tac-toe's 11 scenarios (`docs/tictactoe.md`, "Tests"; bodies in `src/scenarios.rs`, names
//! listed once in `src/scenarios/list.rs`), each run twice by the author kit's harness
//! (`gamechain_runtime::native_and_wasm_tests!`): `native::<name>` against [`TicTacToe`] and
//! `MockCtx`, `wasm::<name>` against the crate's built `tictactoe.wasm` in the runtime, with a
//! check that both runs leave identical state, balances, events and txids.

use tictactoe::scenarios::*;
use tictactoe::TicTacToe;

tictactoe::for_each_scenario!(gamechain_runtime::native_and_wasm_tests!(TicTacToe;));
