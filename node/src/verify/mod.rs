//! Replaying a chain from genesis with this build and comparing every signature, receipt and
//! state root, offline: `gamechain verify` (a chain or one game's transcript), `gamechain
//! export`, and the block check the replicas (`replica/`) and validators use.
//!
//! | file | owns |
//! |---|---|
//! | `game/` | `gamechain verify --game`: one game's transcript checked (signatures, inclusion proofs, order) and re-executed |
//! | `replay.rs` | verifying one block against its re-execution; [`replay::Divergence`] |
//! | `source.rs` | [`source::ChainSource`]: a data directory or a node's API to replay from |
//! | `verifier.rs` | the whole chain replayed, [`verifier::VerifyReport`] |
//! | `export.rs` | the self-contained export file (`node/EXPORT.md`): writer and reader |
//! | `view.rs` | `gamechain view --prove`: a view's answer checked against the genesis (proofs, signer, finality, code) and re-executed over its proven reads |
//! | `evidence.rs` | what `verify` reports of a source's evidence of faulty validators, and the records' wire form (the check is `proof/`) |

pub mod evidence;
pub mod export;
pub mod game;
pub mod replay;
pub mod source;
pub mod verifier;
pub mod view;
