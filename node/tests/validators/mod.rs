//! Validator processes (four of them, from `gamechain testnet`): crashes, partitions, liars and
//! equivocators, threshold beacons and sealed moves (`validators.rs` with its child `sealed.rs`),
//! catch-up, rejoining from a snapshot, a code flood, network namespaces. Every test here holds
//! [`crate::common::heavy`] while it runs.

mod netns;
mod proposal_flood;
mod validator_catchup;
mod validator_snapshot;
#[allow(clippy::module_inception, reason = "the folder's namesake file")]
mod validators;
