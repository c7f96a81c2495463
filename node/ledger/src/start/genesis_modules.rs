//! The games a new chain starts with: [`GENESIS_MODULES`], the guests this binary embeds (built
//! by `build.rs` from `modules/` with the one reproducible recipe), and which of them a new
//! chain's genesis lists (the configuration's `genesis_modules`, default all of them).
//!
//! | id | crate | what |
//! |---|---|---|
//! | `tictactoe` | `modules/tictactoe` | tic-tac-toe with stakes (`/play/tictactoe/`) |
//! | `mnk` | `modules/mnk` | m,n,k-games up to 19×19 (`/play/mnk/`) |
//! | `dice` | `modules/dice` | a dice duel rolled by the chain from its beacon (`/play/dice/`, `docs/randomness.md`) |
//! | `sealed_rps` | `modules/sealed_rps` | rock-paper-scissors with moves sealed to a round the chain opens itself (`/play/sealed-rps/`, `docs/sealed-moves.md`) |
//! | `auction` | `modules/auction` | a sealed-bid auction whose bids the chain opens together at its close (`/play/auction/`, `docs/sealed-moves.md`) |
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
pub const GENESIS_MODULES: [GenesisCode; 9] = [
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
    GenesisCode {
        id: "sealed_rps",
        package: "sealed_rps",
        wasm: embedded!("sealed_rps"),
    },
    GenesisCode {
        id: "auction",
        package: "auction",
        wasm: embedded!("auction"),
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
                "72c3e50bdb85f2c0252ddf054b202ecfced452afddaf1adf4884cb55c2a9a226",
            ),
            (
                "mnk",
                "e9976a4329279d42a1ba918891cfb7b2f8834529bf6aaf6d5b18cd86e22e72f8",
            ),
            (
                "dice",
                "740408d13f34dcecfb3801f8de6c1325e31c189e7137447ff13559f36f96dcd7",
            ),
            // Rebuilt when its shared definitions moved to `gamechain-channel-protocol`
            // (before: a19d1824445d9ae5488ae25bd4b436b38462a8cc0ab28363ab9c64de0bb9f523), and
            // when the SDK's export glue gained `gc_scheduled` (scheduled calls; every module
            // built with `export_module!` changed then: tic-tac-toe was 2ae6ddcb…, m,n,k
            // 67c6fa58…, the channel f66e57b1…, the move board 36cf0507…), and again when it gained
            // sealed moves (ABI revision 3, the `schedule_sealed` and `seal` imports: tic-tac-toe
            // was 8d4558e0…, m,n,k 674d53a3…, dice 0eaefd19…, the channel 4ff18b6f…, the move
            // board 047de5a0…), and again when `gc_apply` began enforcing the module's schema
            // (docs/modules.md, "Schema", "On chain"; every module with one changed: tic-tac-toe
            // was f7ccc602…, m,n,k f05d325a…, dice ad582a34…, the channel fa89ed6e…, the move
            // board 2975f4d2…, sealed rock-paper-scissors 8601e665…, the auction 259393b6…; the
            // rules modules, which take no ops, did not).
            (
                "channel",
                "c3c327c085daf2ecab08d57745f0c7b1b74ffa930b06776f11ca625be509d4a2",
            ),
            (
                "moveboard",
                "da22f8561a1401af43aa3da10f3f00abbbd7ddf3d30bec5324f1a33726ac932e",
            ),
            (
                "sealed_rps",
                "3f94e4390a1617d4859706c9c3a0a193a894e7be9916bae71cee5ffe77d50d89",
            ),
            (
                "auction",
                "23657ede683178af81427ba4b75171a10fd1cb6d82166bed2b57e68b45f4f9b7",
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
                "dice",
                "sealed_rps",
                "auction"
            ]
        );
        assert_eq!(
            genesis_code("ttt_rules").unwrap().package,
            "tictactoe_rules"
        );
        assert!(genesis_code("chess").is_none());
    }
}
