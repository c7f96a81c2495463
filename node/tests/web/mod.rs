//! The JavaScript and TypeScript suites: the SDK's own tests and the pages in Chromium, and a
//! generated TypeScript client checked by `tsc --strict` and played against a node. Every test here
//! holds [`crate::common::heavy`] while it runs.

mod codegen_ts;
mod web_js;
