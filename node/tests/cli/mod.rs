//! The `gamechain` commands as users type them: `bench`, `channel`, the everyday client commands
//! (`cli.rs`), the module kit, `gamechain dev`, and the Rust HTTP client against a mock node.

mod bench;
mod channel_cli;
#[allow(clippy::module_inception, reason = "the folder's namesake file")]
mod cli;
mod cli_module;
mod client_mock;
mod dev_loop;
