//! The JSON wire types of `node/API.md`: the one serde definition of each object the node
//! serves and every client, follower, verifier and export file reads. The node serialises
//! these types, the client deserialises the same types; nothing writes the JSON by hand.
//!
//! | file | owns |
//! |---|---|
//! | [`block`] | [`Block`], [`IncludedTx`]: `GET /v1/blocks/<height>`, the WebSocket's `block`; [`BlockFinality`]: `GET /v1/blocks/<height>/finality` |
//! | [`tx`] | [`TxRecord`], [`TxStatus`]: `GET /v1/tx/<txid>`; [`TxidAnswer`]: `POST /v1/tx` |
//! | [`batch`] | [`TxBatch`], [`TxBatchAnswer`], [`BatchResult`]: `POST /v1/txs` |
//! | [`events`] | [`GameEvent`]: one module event of `GET /v1/ws/events` |
//! | [`headers`] | `GET /v1/headers`: consecutive block headers in binary, the proof that a block descends from block 0 |
//! | [`evidence`] | [`Evidence`], [`EvidencePage`]: `GET /v1/evidence` |
//! | [`node`] | [`Status`], [`Account`], [`ModuleInfo`], [`ErrorAnswer`]: status, accounts, modules, errors |
//! | [`state`] | [`StateEntry`]: `GET /v1/state/{key}`, one state entry as of a block, with its proof |
//! | [`view`] | [`ViewProof`]: `GET /v1/games/{module}/proof`, a view with every state entry it read, proven |
//! | [`transcript`] | [`transcript::Transcript`]: `GET /v1/games/<module>/<id>/transcript`, read by `gamechain verify --game` and the JS SDK |
//!
//! Deserialising checks what a reader could otherwise take on trust: a block's `height` and
//! `hash` against its header, each transaction's `txid` against its body.

pub mod batch;
pub mod block;
pub mod events;
pub mod evidence;
pub mod headers;
pub mod node;
pub mod query;
pub mod state;
pub mod transcript;
pub mod tx;
pub mod view;

pub use batch::{BatchResult, TxBatch, TxBatchAnswer};
pub use block::{Block, BlockFinality, BlockMessage, IncludedTx};
pub use events::GameEvent;
pub use evidence::{Evidence, EvidencePage, EVIDENCE_KINDS};
pub use node::{Account, ErrorAnswer, ErrorBody, ModuleInfo, ModuleList, Status};
pub use state::StateEntry;
pub use tx::{TxRecord, TxStatus, TxidAnswer};
pub use view::{ProvenRead, ProvenReads, ViewProof, MAX_VIEW_PROOF_BYTES, MAX_VIEW_PROOF_READS};
