//! The integration tests of `gamechain-tests`: one test binary, `tests` (`cargo test -p
//! gamechain-tests --test tests`; one file's tests by module path, e.g. `… --test tests
//! channels::`). Each file of `tests/tests/` is a module of it; the shared harness is the crate's
//! library (`tests/src/`).

mod channels;
mod determinism;
mod game_props;
mod hostile_deploy;
mod mnk_deploy;
mod node_bad_input;
mod node_client;
mod node_demo;
mod source_tree;
mod tictactoe_reuse;
mod upload_attacks;
