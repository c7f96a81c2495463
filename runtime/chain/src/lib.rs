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
//! | [`address`] | [`Network`], [`SecretKey`], base58check P2PKH addresses and WIF |
//! | [`signed_message`] | the Divi (Bitcoin-style) signed message: hash, sign, recover, verify |
//! | [`tx`] | [`SignedTx`], [`TxBody`], [`Action`], txid, stateless checks |
//! | [`session`] | [`SessionRecord`], [`SessionRefusal`]: session keys' state record, limits, refusal texts |
//! | [`receipt`] | [`Receipt`], [`Event`] and their hashing encoding |
//! | [`merkle`] | the RFC 6962 binary Merkle root used for `tx_root` and `receipt_root` |
//! | [`block`] | [`Header`], [`SignedHeader`], block hashes |
//! | [`block_caps`] | [`BlockCaps`]: deploys and code bytes per block as consensus |
//! | [`clock`] | [`BlockClock`]: block time as consensus (spacing, drift window) |
//! | [`state_root`] | [`StateHash`]: the incremental (LtHash) state commitment |
//! | [`element_cache`] | [`ElementCache`]: a bounded memo of the state hash's per-entry vectors |
//! | [`fees`] | [`FeeSchedule`]: a chain's prices and the fee of a transaction |
//! | [`policy`] | [`UpgradePolicy`], [`PendingUpgrade`]: who may change a module's code, and how fast |
//! | [`genesis`] | [`Genesis`]: the genesis file and the state entries it creates |
//! | [`validators`] | [`ValidatorSet`]: the genesis section of a chain run by several validators |
//! | [`wire`] | the JSON wire types of the node's API: [`Block`], [`TxRecord`], [`Status`], … |
//!
//! Every hashed record (header, receipt, state entry, genesis) is hashed over one canonical
//! binary encoding, [borsh](https://borsh.io), never over JSON text.

pub mod address;
pub mod block;
pub mod block_caps;
pub mod canonical;
pub mod clock;
pub mod element_cache;
pub mod fees;
pub mod genesis;
pub mod hash;
pub mod merkle;
pub mod policy;
pub mod receipt;
pub mod session;
pub mod signed_message;
pub mod state_root;
pub mod tx;
pub mod validators;
pub mod wire;

pub use address::{address_from_pubkey, parse_address, AddressError, Network, SecretKey};
pub use block::{receipt_root, tx_root, BlockError, Header, SignedHeader};
pub use block_caps::BlockCaps;
pub use clock::BlockClock;
pub use element_cache::ElementCache;
pub use fees::{FeeSchedule, FeeUse, MICRO_PER_BASE_UNIT};
pub use genesis::{genesis_writes, Genesis, GenesisBalance, GenesisError, GenesisModule};
pub use policy::{PendingUpgrade, UpgradePolicy, MAX_TIMELOCK_DELAY_MS};
pub use receipt::{Event, Receipt};
pub use session::{SessionInfo, SessionList, SessionRecord, SessionRefusal};
pub use signed_message::{
    message_hash, recover_address, sign_message, verify_message, SigError, MAGIC,
};
pub use state_root::StateHash;
pub use tx::{
    txid, Action, SignedTx, TxBody, TxError, MAX_BODY_BYTES, MAX_CODE_BYTES, MAX_DEPLOY_BODY_BYTES,
};
pub use validators::{GenesisValidator, ValidatorSet, ENGINE_SIMPLEX};
pub use wire::{
    Account, Block, BlockMessage, ErrorAnswer, ErrorBody, IncludedTx, ModuleInfo, ModuleList,
    Status, TxRecord, TxStatus, TxidAnswer,
};
