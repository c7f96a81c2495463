//! What a node keeps on disk: the SQLite database ([`storage`]), the committed state read
//! through it ([`state_store`]), and the small files of the data directory written beside it
//! ([`sign_state`], [`head_record`], [`run_marker`], [`rejoin_record`], [`snapshot`]).

pub mod head_record;
pub mod rejoin_record;
pub mod run_marker;
pub mod sign_state;
pub mod snapshot;
pub mod state_store;
pub mod storage;
pub mod storage_error;
