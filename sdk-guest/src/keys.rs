//! The chain's state key layout, shared by the mock, the runtime and the node.
//!
//! | key | value |
//! |---|---|
//! | `m/<module>/<key>` | module state, bytes chosen by the module |
//! | `bal/<account>/<TOKEN>` | balance, canonical decimal string of base units; absent = 0 (a zero balance is deleted) |
//! | `token/<TOKEN>` | token record, JSON [`crate::TokenInfo`] |
//!
//! An account is an address or `module:<id>`, the escrow account of a module (a name nobody can
//! sign as). Token symbols never contain `/`, so the last segment of a balance key is the token.

/// The native token, 2 decimals, created at genesis.
pub const GOLD: &str = "GOLD";

/// `m/<module>/`: the prefix of every key a module owns.
pub fn module_prefix(module: &str) -> String {
    format!("m/{module}/")
}

/// `m/<module>/<key>`: where a module's `key` is stored.
pub fn module_key(module: &str, key: &str) -> String {
    format!("m/{module}/{key}")
}

/// `bal/<account>/<token>`: where a balance is stored.
pub fn balance_key(account: &str, token: &str) -> String {
    format!("bal/{account}/{token}")
}

/// `module:<module>`: the escrow account of a module.
pub fn escrow_account(module: &str) -> String {
    format!("module:{module}")
}

/// `token/<token>`: where a token's record is stored.
pub fn token_key(token: &str) -> String {
    format!("token/{token}")
}
