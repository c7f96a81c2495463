//! Starting a chain: the guests a new genesis holds ([`genesis_modules`]), the first start and
//! the start-up checks ([`genesis_setup`]), and what opening a data directory shares ([`open`]).

pub mod genesis_modules;
pub mod genesis_setup;
pub mod open;
