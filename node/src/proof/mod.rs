//! What the validators sign, checked by those who only read: a block's consensus digest
//! ([`digest`]), its finality certificate ([`finality`]) and evidence that a validator signed
//! two conflicting votes ([`evidence`]), all against the genesis validator set. `gamechain
//! verify`, followers, snapshot joins, the API and the validators themselves call these; nothing
//! here runs consensus or touches the network. The engine's messages are decoded here with
//! Commonware's codec, so this folder and `validator/` are the only ones whose files name a
//! consensus crate (`tests/tests/source_tree.rs` keeps it so).
//!
//! | file | owns |
//! |---|---|
//! | [`digest`] | a block's consensus digest from what it carries, and from a database's stored blocks |
//! | [`finality`] | [`finality::FinalityChecker`]: a finalization certificate checked against the genesis set; the participant order |
//! | [`step_finality`] | a transcript step's finality proof: built from a database, checked against the genesis set |
//! | [`evidence`] | [`evidence::EvidenceChecker`]: a pair of conflicting votes proven against the genesis set |

pub mod digest;
pub mod evidence;
pub mod finality;
pub mod step_finality;
