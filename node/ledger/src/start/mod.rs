//! Starting a chain: the guests a new genesis holds ([`genesis_modules`]), the first start and
//! the start-up checks ([`genesis_setup`]), the sequencer's beacon key file ([`beacon_key`]),
//! and what opening a data directory shares ([`open`]).

pub mod beacon_key;
pub mod genesis_modules;
pub mod genesis_setup;
pub mod open;
