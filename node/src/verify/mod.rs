//! Replaying a chain from genesis with this build and comparing every signature, receipt and
//! state root: `gamechain verify`, `gamechain export`, and the block check the follower uses.
//!
//! | file | owns |
//! |---|---|
//! | `game/` | `gamechain verify --game`: one game's transcript checked (signatures, inclusion proofs, order) and re-executed |
//! | `replay.rs` | verifying one block against its re-execution; [`replay::Divergence`] |
//! | `source.rs` | [`source::ChainSource`]: a data directory or a node's API to replay from |
//! | `verifier.rs` | the whole chain replayed, [`verifier::VerifyReport`] |
//! | `follower.rs` | `gamechain node --follow URL`: a read replica that verifies each block as `verify` does, then commits it |
//! | `restore.rs` | `gamechain node --restore-from URL`: fetching, verifying (as the follower does) and committing the signed blocks a sequencer's database lost |
//! | `snapshot_join.rs` | `--snapshot-from PEER`: a new follower's (or validator's) state fetched in chunks from a peer's snapshot, checked against the signed (or certified) header's state root |
//! | `export.rs` | the self-contained export file (`node/EXPORT.md`): writer and reader |
//! | `finality.rs` | chains with validators: a block's consensus digest (the certificate check is `validator/proof/`) |
//! | `evidence.rs` | what `verify` reports of a source's evidence of faulty validators, and the records' wire form (the check is `validator/proof/`) |
//! | `follower_finality.rs` | a follower of a chain with validators: the gate that lets a block through only once a certificate proves it final |

pub mod evidence;
pub mod export;
pub mod finality;
pub mod follower;
pub mod follower_finality;
pub mod game;
pub mod replay;
pub mod restore;
pub mod snapshot_join;
pub mod source;
pub mod verifier;
