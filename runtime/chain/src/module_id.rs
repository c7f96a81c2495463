//! What a module id may be: 1 to [`MAX_MODULE_ID_LEN`] bytes of `a-z`, `0-9` and `_`, starting
//! with a letter, and none of [`RESERVED_MODULE_IDS`]. The one id rule of genesis modules
//! (`genesis::check_module_id`), deployed ones and a session's scope (`block/tx.rs`).

/// Module ids nobody may register, at genesis or by `deploy`: the system's own names, i.e. its
/// accounts (`system`, `node`, `sequencer`), its actions (`faucet`, `transfer`, `game`,
/// `deploy`, `upgrade`, `migrate`), the prefixes of its state keys (`m`, `bal`, `token`,
/// `nonce`, `module`, `code`, `chain`), and names a user could mistake for the chain itself
/// (`gamechain`, `genesis`, `admin`, `root`, `sdk`, `host`, `runtime`, `gold`).
pub const RESERVED_MODULE_IDS: &[&str] = &[
    "system",
    "node",
    "sequencer",
    "faucet",
    "transfer",
    "game",
    "deploy",
    "upgrade",
    "migrate",
    "m",
    "bal",
    "token",
    "nonce",
    "module",
    "code",
    "chain",
    "gamechain",
    "genesis",
    "admin",
    "root",
    "sdk",
    "host",
    "runtime",
    "gold",
];
/// Longest module id, bytes (so `module:<id>` stays a valid account).
pub const MAX_MODULE_ID_LEN: usize = 32;

/// Why `id` is not a usable module id, as the fixed text of
/// [`GenesisError::Invalid`](crate::genesis::GenesisError::Invalid); `None` when it is.
pub(crate) fn module_id_error(id: &str) -> Option<String> {
    let b = id.as_bytes();
    let well_formed = (1..=MAX_MODULE_ID_LEN).contains(&b.len())
        && b[0].is_ascii_lowercase()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'_');
    if !well_formed {
        return Some(format!(
            "module id `{id}` must be 1 to 32 of a-z, 0-9 and _, starting with a letter"
        ));
    }
    if RESERVED_MODULE_IDS.contains(&id) {
        return Some(format!("module id `{id}` is reserved"));
    }
    None
}
