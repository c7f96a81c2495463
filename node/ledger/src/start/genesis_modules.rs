//! The games a new chain starts with: [`GENESIS_MODULES`], the guests this binary embeds (built
//! by `build.rs` from `modules/` with the one reproducible recipe), and which of them a new
//! chain's genesis lists (the configuration's `genesis_modules`, default all seven).
//!
//! | id | crate | what |
//! |---|---|---|
//! | `tictactoe` | `modules/tictactoe` | tic-tac-toe with stakes (`/play/tictactoe/`) |
//! | `mnk` | `modules/mnk` | m,n,k-games up to 19×19 (`/play/mnk/`) |
//! | `dice` | `modules/dice` | a dice duel rolled by the chain from its beacon (`/play/dice/`, `docs/randomness.md`) |
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

use gamechain_runtime::chain::GenesisModule;
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
pub const GENESIS_MODULES: [GenesisCode; 7] = [
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
    GenesisCode {
        id: "dice",
        package: "dice",
        wasm: embedded!("dice"),
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

/// The genesis modules of a new chain: each id of `ids` (the configuration's `genesis_modules`)
/// with the code hash of the guest this binary embeds for it. Errors: an id this binary embeds
/// no guest for, or an id named twice.
pub fn genesis_module_list(ids: &[String]) -> Result<Vec<GenesisModule>, String> {
    let mut modules: Vec<GenesisModule> = Vec::new();
    for id in ids {
        let code = genesis_code(id).ok_or_else(|| {
            let known: Vec<&str> = GENESIS_MODULES.iter().map(|m| m.id).collect();
            format!(
                "genesis_modules: this binary has no module `{id}` (it embeds {})",
                known.join(", ")
            )
        })?;
        if modules.iter().any(|m| m.id == *id) {
            return Err(format!("genesis_modules: `{id}` is listed twice"));
        }
        modules.push(GenesisModule {
            id: id.clone(),
            code_hash: code.code_hash(),
        });
    }
    Ok(modules)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The code hash of every embedded guest, pinned: a new chain's genesis names these, and a
    /// node refuses to set up a data directory whose genesis names a hash it does not embed. So
    /// a change is a consensus change for new chains and for nodes joining existing ones (even a
    /// refactor: moving code between crates reorders the linked wasm). Update these on purpose,
    /// saying why in the commit. The recipe is reproducible (`gamechain_sdk::guest_build`), so
    /// these hold on any machine with the pinned toolchain.
    #[test]
    fn the_embedded_guests_are_the_builds_new_chains_name() {
        let pinned = [
            (
                "tictactoe",
                "8d4558e0fb26cbb211def56088cca9b13dae15bcb40bf1720bc5e4aedbacfdf8",
            ),
            (
                "mnk",
                "674d53a382ed5831774702396587f6ab75ec744b7f10ca0ad787dde9b74fad55",
            ),
            (
                "dice",
                "0eaefd19e37ef0b5480399379b0c9ef7bbe53f329e212e35ff8e9f3a67b597b4",
            ),
            // Rebuilt when its shared definitions moved to `gamechain-channel-protocol`
            // (before: a19d1824445d9ae5488ae25bd4b436b38462a8cc0ab28363ab9c64de0bb9f523), and
            // when the SDK's export glue gained `gc_scheduled` (scheduled calls; every module
            // built with `export_module!` changed then: tic-tac-toe was 2ae6ddcb…, m,n,k
            // 67c6fa58…, the channel f66e57b1…, the move board 36cf0507…).
            (
                "channel",
                "4ff18b6f7b298f032a88814f88369bf9fb69db9ecfba50ac1c3d6c0ef8af1081",
            ),
            (
                "moveboard",
                "047de5a083a0ae66f782f331f10d938c77a2f27ee727449c082da9680d70a84e",
            ),
            (
                "rps_rules",
                "dd1f923fab3f85a44b2b7c6dbf7dd334c16938099e8399988c4c70b9bd98db89",
            ),
            (
                "ttt_rules",
                "b757ef1882a341a6700682334d2f7dc501ca4d6f3a6280b38ae1b6fb4f06f266",
            ),
        ];
        assert_eq!(pinned.len(), GENESIS_MODULES.len());
        for (id, hash) in pinned {
            assert_eq!(
                genesis_code(id).expect(id).code_hash(),
                hash,
                "the `{id}` guest changed"
            );
        }
    }

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
                "ttt_rules",
                "dice"
            ]
        );
        assert_eq!(
            genesis_code("ttt_rules").unwrap().package,
            "tictactoe_rules"
        );
        assert!(genesis_code("chess").is_none());
    }
}
