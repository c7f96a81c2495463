//! `gamechain verify`: replaying a chain, tampering named by height and field, games re-executed
//! from their transcripts, views proven and re-executed (`view --prove`).

#[allow(clippy::module_inception, reason = "the folder's namesake file")]
mod verify;
mod verify_game;
mod verify_view;
