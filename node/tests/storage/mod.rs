//! Storage: followers, SIGKILLs (the kill suite, a node crashing, the WebSocket across one), the
//! sign state, snapshots, damaged and migrated databases.

mod follower;
mod kill_suite;
mod node_crash;
mod sign_state;
mod snapshot;
mod storage_faults;
mod storage_migration;
mod ws_crash;
