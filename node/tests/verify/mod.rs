//! `gamechain verify`: replaying a chain, tampering named by height and field, games re-executed
//! from their transcripts.

#[allow(clippy::module_inception, reason = "the folder's namesake file")]
mod verify;
mod verify_game;
