//! The games a new chain starts with: [`GENESIS_MODULES`], the guests this binary embeds (built
//! by `build.rs` from `modules/` with the one reproducible recipe), and which of them a new
//! chain's genesis lists (the configuration's `genesis_modules`, default all six).
//!
//! | id | crate | what |
//! |---|---|---|
//! | `tictactoe` | `modules/tictactoe` | tic-tac-toe with stakes (`/play/tictactoe/`) |
//! | `mnk` | `modules/mnk` | m,n,k-games up to 19×19 (`/play/mnk/`) |
//! | `channel` | `modules/channel` | off-chain games settled on chain: lobby, escrow, disputes (`docs/channels.md`) |
//! | `moveboard` | `modules/moveboard` | the move board channel games post signed moves to |
//! | `rps_rules` | `modules/rps_rules` | rock-paper-scissors rules for the channel (`/play/rps/`) |
//! | `ttt_rules` | `modules/tictactoe_rules` | tic-tac-toe rules for the channel |
//!
//! Genesis modules are immutable (`chain::policy`): nobody owns them, nobody can upgrade them,
//! and the channel's escrow can only be moved by the channel's own rules. A channel game names
//! its rules module (`rps_rules`, `ttt_rules`) at the offer and is pinned to the code that id
//! runs then, which on a chain made with these defaults is the code listed here. A chain that
//! wants other modules deploys them; a chain made with `genesis_modules = []` starts with none.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

/// One guest this binary can put in a genesis.
#[derive(Debug, Clone, Copy)]
pub struct GenesisCode {
    /// The module id a new chain gives it.
    pub id: &'static str,
    /// The crate under `modules/` it is built from.
    pub package: &'static str,
    /// The wasm bytes.
    pub wasm: &'static [u8],
}

impl GenesisCode {
    /// Lowercase hex SHA-256 of [`GenesisCode::wasm`].
    pub fn code_hash(&self) -> String {
        hex::encode(Sha256::digest(self.wasm))
    }
}

macro_rules! embedded {
    ($package:literal) => {
        include_bytes!(concat!(env!("OUT_DIR"), "/", $package, ".wasm"))
    };
}

/// Every guest this binary embeds, in the order a default genesis lists them.
pub const GENESIS_MODULES: [GenesisCode; 6] = [
    GenesisCode {
        id: "tictactoe",
        package: "tictactoe",
        wasm: embedded!("tictactoe"),
    },
    GenesisCode {
        id: "mnk",
        package: "mnk",
        wasm: embedded!("mnk"),
    },
    GenesisCode {
        id: "channel",
        package: "channel",
        wasm: embedded!("channel"),
    },
    GenesisCode {
        id: "moveboard",
        package: "moveboard",
        wasm: embedded!("moveboard"),
    },
    GenesisCode {
        id: "rps_rules",
        package: "rps_rules",
        wasm: embedded!("rps_rules"),
    },
    GenesisCode {
        id: "ttt_rules",
        package: "tictactoe_rules",
        wasm: embedded!("tictactoe_rules"),
    },
];

/// The ids of [`GENESIS_MODULES`]: the configuration's default `genesis_modules`.
pub fn default_genesis_ids() -> Vec<String> {
    GENESIS_MODULES.iter().map(|m| m.id.to_string()).collect()
}

/// The embedded guest with id `id`.
pub fn genesis_code(id: &str) -> Option<&'static GenesisCode> {
    GENESIS_MODULES.iter().find(|m| m.id == id)
}

/// Every embedded guest's bytes by code hash (what `genesis_state` reads a genesis's code
/// from).
pub fn codes_by_hash() -> BTreeMap<String, &'static [u8]> {
    GENESIS_MODULES
        .iter()
        .map(|m| (m.code_hash(), m.wasm))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_embedded_guest_is_wasm_with_its_own_code() {
        let mut hashes = std::collections::BTreeSet::new();
        for m in GENESIS_MODULES {
            assert_eq!(&m.wasm[..4], b"\0asm", "{}", m.id);
            assert!(hashes.insert(m.code_hash()), "{} is another's code", m.id);
            gamechain_runtime::chain::genesis::check_module_id(m.id).unwrap();
        }
        assert_eq!(
            default_genesis_ids(),
            [
                "tictactoe",
                "mnk",
                "channel",
                "moveboard",
                "rps_rules",
                "ttt_rules"
            ]
        );
        assert_eq!(
            genesis_code("ttt_rules").unwrap().package,
            "tictactoe_rules"
        );
        assert!(genesis_code("chess").is_none());
    }
}
