//! # gamechain-chain: the data primitives of gamechain
//!
//! Everything a node, a sequencer and a replay verifier must compute identically: keys and
//! addresses, signed messages, transactions, receipts, block headers, the state root and the
//! genesis file. All of it is pure (no I/O, no clock; OS randomness only in
//! [`SecretKey::generate`]), so the same code gives the same bytes everywhere.
//!
//! | file | owns |
//! |---|---|
//! | [`hash`] | SHA-256 / SHA-256d helpers, hex for 32-byte hashes (serde) |
//! | [`canonical`] | canonical JSON text (sorted keys) of a `serde_json::Value` |
//! | `module_id.rs` | what a module id may be: length, characters, reserved ids |
//! | [`keys`]`/`[`address`] | [`Network`], [`SecretKey`], base58check P2PKH addresses and WIF |
//! | [`keys`]`/`[`signed_message`] | the Divi (Bitcoin-style) signed message: hash, sign, recover, verify |
//! | [`keys`]`/`[`beacon`] | the randomness beacon: BLS12-381 keys, the per-height signature, its check |
//! | [`block`]`/`[`tx`] | [`SignedTx`], [`TxBody`], [`Action`], txid, stateless checks |
//! | [`block`]`/`[`receipt`] | [`Receipt`], [`Event`] and their hashing encoding |
//! | [`block`]`/`[`merkle`] | the RFC 6962 binary Merkle root used for `tx_root` and `receipt_root` |
//! | [`block`] (`mod.rs`) | [`Header`], [`SignedHeader`], block hashes |
//! | [`session`] | [`SessionRecord`], [`SessionRefusal`]: session keys' state record, limits, refusal texts |
//! | [`policy`] | [`UpgradePolicy`], [`PendingUpgrade`]: who may change a module's code, and how fast |
//! | [`state_root`] (`mod.rs`) | [`StateHash`]: the running state commitment, of the kind genesis picks ([`StateCommitment`]) |
//! | [`state_root`]`/lthash.rs` | [`LtHash`]: the incremental multiset hash of chains without proofs |
//! | [`state_root`]`/sparse_merkle.rs`, `proof.rs` | [`SparseMerkleTree`] and [`StateProof`]: the state root with membership and non-membership proofs |
//! | [`state_root`]`/element.rs` | the lane vector of one state entry |
//! | [`state_root`]`/`[`element_cache`] | [`ElementCache`]: a bounded memo of the LtHash's per-entry vectors |
//! | [`genesis`] (`mod.rs`) | [`Genesis`]: the genesis file and the state entries it creates |
//! | [`genesis`]`/`[`validators`] | [`ValidatorSet`]: the genesis section of a chain run by several validators |
//! | [`genesis`]`/`[`beacon`](genesis::beacon) | [`BeaconConfig`]: the genesis section naming the beacon's key |
//! | [`genesis`]`/`[`clock`] | [`BlockClock`]: block time as consensus (spacing, drift window) |
//! | [`genesis`]`/`[`block_caps`] | [`BlockCaps`]: deploys and code bytes per block as consensus |
//! | [`genesis`]`/`[`fees`] | [`FeeSchedule`]: a chain's prices and the fee of a transaction |
//! | [`genesis`]`/`[`params`] | [`ChainParams`]: the chain's parameters in one type, and their table |
//! | [`game_log`] | [`game_log::GameLog`]: the per-game hash chain the runtime keeps on chains with state proofs |
//! | [`wire`] | the JSON wire types of the node's API: [`Block`], [`TxRecord`], [`Status`], … |
//!
//! Each folder's modules are also re-exported here under their names from before they were
//! grouped (`gamechain_chain::tx`, `gamechain_chain::clock`, …), so both paths work. Imports run
//! one way: `genesis` uses `state_root` (its commitment's name) and `block`, which uses `keys`, `policy`, `session` and the leaves
//! `hash`, `canonical` and `module_id`; `state_root` uses only `hash`; `wire` uses `block` and
//! `policy`.
//!
//! Every hashed record (header, receipt, state entry, genesis) is hashed over one canonical
//! binary encoding, [borsh](https://borsh.io), never over JSON text.

pub mod block;
pub mod canonical;
pub mod game_log;
pub mod genesis;
pub mod hash;
pub mod keys;
mod module_id;
pub mod policy;
pub mod session;
pub mod state_root;
pub mod wire;

pub use block::{merkle, receipt, tx};
pub use genesis::{block_caps, clock, fees, params, validators};
pub use keys::{address, beacon, key_file, seal, signed_message};
pub use state_root::element_cache;

pub use address::{address_from_pubkey, parse_address, AddressError, Network, SecretKey};
pub use beacon::{Beacon, BeaconError, BeaconPublicKey, BeaconSecretKey};
pub use block::{block_receipt_root, receipt_root, tx_root, BlockError, Header, SignedHeader};
pub use block_caps::BlockCaps;
pub use clock::BlockClock;
pub use element_cache::ElementCache;
pub use fees::{FeeSchedule, FeeUse, MICRO_PER_BASE_UNIT};
pub use genesis::beacon::BeaconConfig;
pub use genesis::{genesis_writes, Genesis, GenesisBalance, GenesisError, GenesisModule};
pub use params::ChainParams;
pub use policy::{PendingUpgrade, UpgradePolicy, MAX_TIMELOCK_DELAY_MS};
pub use receipt::{Event, Receipt, ScheduledReceipt};
pub use session::{SessionInfo, SessionList, SessionRecord, SessionRefusal};
pub use signed_message::{
    message_hash, recover_address, sign_message, verify_message, SigError, MAGIC,
};
pub use state_root::{
    LtHash, ProofError, SparseMerkleTree, StateCommitment, StateHash, StateProof,
};
pub use tx::{
    txid, Action, SignedTx, TxBody, TxError, MAX_BODY_BYTES, MAX_CODE_BYTES, MAX_DEPLOY_BODY_BYTES,
};
pub use validators::{GenesisValidator, ValidatorSet, ENGINE_SIMPLEX};
pub use wire::{
    Account, Block, BlockMessage, ErrorAnswer, ErrorBody, IncludedTx, ModuleInfo, ModuleList,
    Status, TxRecord, TxStatus, TxidAnswer,
};
