//! What the validators sign, checked by those who only read: a block's finality certificate
//! ([`finality`]) and evidence that a validator signed two conflicting votes ([`evidence`]),
//! both against the genesis validator set. `gamechain verify`, followers, snapshot joins and the
//! API call these; they are here because they decode the consensus engine's own messages, and
//! every file that names a Commonware type lives under `validator/` (a test,
//! `tests/tests/source_tree.rs`, keeps it so).

pub mod evidence;
pub mod finality;
