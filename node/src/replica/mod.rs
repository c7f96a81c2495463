//! A node that does not make blocks but keeps a verified copy of a chain made elsewhere: each
//! block fetched from an upstream node is checked as `gamechain verify` checks it (`verify/`),
//! then committed through the node's one commit path.
//!
//! | file | owns |
//! |---|---|
//! | `follower.rs` | `gamechain node --follow URL`: a read replica that verifies each block, then commits it |
//! | `follower_finality.rs` | a follower of a chain with validators: the gate that lets a block through only once a certificate proves it final |
//! | `restore.rs` | `gamechain node --restore-from URL`: fetching, verifying (as the follower does) and committing the signed blocks a sequencer's database lost |
//! | `header_chain.rs` | the proof a snapshot join checks on a chain without validators: the headers from this genesis's block 0 up to the snapshot's block, each chained to the one below |
//! | `snapshot_join.rs` | `--snapshot-from PEER`: a new follower's (or validator's) state fetched in chunks from a peer's snapshot, checked against the signed (or certified) header's state root |

pub mod follower;
pub mod follower_finality;
pub mod header_chain;
pub mod restore;
pub mod snapshot_join;
