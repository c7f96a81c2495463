//! What a node answers from its committed state beyond a key's value: the module records and
//! code it runs (`modules.rs`) and a view with every state entry it read, proven
//! (`view_proof.rs`). Both are `impl Chain` blocks: they read the head under one hold.

pub mod modules;
pub mod view_proof;
