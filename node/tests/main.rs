//! The integration tests of `gamechain-node`: one test binary, `node` (`cargo test -p
//! gamechain-node --test node`; a folder or a file by its module path, e.g. `cargo test -p
//! gamechain-node --test node validators::` or `… --test node storage::kill_suite::`). One
//! binary instead of one per file: the tests link the node, wasmtime, Commonware and SQLite
//! once, not forty times. Every test runs in this one process, so process-wide state is shared:
//! the multi-validator tests and the browser suites hold [`common::heavy`] (one of them at a
//! time), and `npm ci` runs one at a time.
//!
//! The folders of `tests/`, one module each, by concept (at most 14 files a folder): `chain/`
//! (chain rules: deploys, fees, session keys, upgrade policies, fair play), `cli/` (the client
//! commands), `server/` (the HTTP/WebSocket API, its limits, metrics and logs), `storage/`
//! (crashes, damaged or migrated databases, followers and snapshots), `validators/`, `verify/`,
//! `web/` (the JavaScript and TypeScript suites). Helpers: `common/` (`crate::common`);
//! fixtures: `tests/codegen_ts/`, `tests/requirements.txt`.

mod common;

mod chain;
mod cli;
mod server;
mod storage;
mod validators;
mod verify;
mod web;
