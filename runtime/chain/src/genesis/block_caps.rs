//! Deploys per block as a consensus rule: [`BlockCaps`], the genesis parameters that bound how
//! many `deploy` transactions one block may include and how many bytes of module code they may
//! carry together. Each deploy costs every validator and verifier a compile; these caps bound
//! that work per block, whoever makes the block (a faulty proposer included).
//!
//! Genesis fields `max_block_deploys` and `max_block_code_bytes` (both optional; JSON numbers):
//! their bounds, the values new genesis files get and what an absent field means are rows of the
//! one parameter table, `PARAMETERS` (`params.rs`); the constants below are its figures.
//! A deploy that would take its block over either cap makes the block invalid (the state
//! transition's `BlockFull` at that transaction, `what` = `deploys` or `bytes of deploy code`);
//! a block maker leaves it for a later block. The lower bound of `max_block_code_bytes` keeps
//! every single deploy includable in a block of its own.
//!
//! Hashed encoding (appended to the genesis encoding after the clock section, only when either
//! field is present, so chains made before these fields existed keep their hash): the string
//! `"block_caps"` ‖ `max_block_deploys` as borsh `Option<u64>` ‖ `max_block_code_bytes` as borsh
//! `Option<u64>`. The leading string cannot be mistaken for the sections before it (a fee
//! collector's address of 34 characters, `"validators"`, `"clock"`).

use std::io;

use borsh::BorshSerialize;

/// `max_block_deploys` written into new genesis files: 8.
pub const DEFAULT_MAX_BLOCK_DEPLOYS: u64 = 8;

/// `max_block_code_bytes` written into new genesis files: 2 MiB (two deploys of the largest
/// code).
pub const DEFAULT_MAX_BLOCK_CODE_BYTES: u64 = 2 << 20;

/// Most `max_block_deploys` a genesis may set.
pub const MAX_BLOCK_DEPLOYS_LIMIT: u64 = 1_024;

/// Most `max_block_code_bytes` a genesis may set: 32 MiB (the bound on a block's transaction
/// bodies).
pub const MAX_BLOCK_CODE_BYTES_LIMIT: u64 = 32 << 20;

/// A chain's caps on deploys per block, read from its genesis (`Genesis::block_caps`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockCaps {
    /// Most deploys in one block (`u64::MAX` on chains made before the rule).
    pub max_block_deploys: u64,
    /// Most bytes of deploy code in one block (`u64::MAX` on chains made before the rule).
    pub max_block_code_bytes: u64,
}

impl BlockCaps {
    /// No caps: a chain whose genesis names neither field.
    pub const NONE: BlockCaps = BlockCaps {
        max_block_deploys: u64::MAX,
        max_block_code_bytes: u64::MAX,
    };

    /// The caps of a genesis with these optional fields.
    pub fn from_fields(max_block_deploys: Option<u64>, max_block_code_bytes: Option<u64>) -> Self {
        BlockCaps {
            max_block_deploys: max_block_deploys.unwrap_or(u64::MAX),
            max_block_code_bytes: max_block_code_bytes.unwrap_or(u64::MAX),
        }
    }

    /// `Ok` when a block whose deploys so far number `deploys` with `code_bytes` bytes of code
    /// may take one more of `code_len` bytes; else the cap it crosses: `(what, limit)`.
    pub fn admit(
        &self,
        deploys: u64,
        code_bytes: u64,
        code_len: u64,
    ) -> Result<(), (&'static str, u64)> {
        if deploys.saturating_add(1) > self.max_block_deploys {
            return Err(("deploys", self.max_block_deploys));
        }
        if code_bytes.saturating_add(code_len) > self.max_block_code_bytes {
            return Err(("bytes of deploy code", self.max_block_code_bytes));
        }
        Ok(())
    }
}

/// Writes the hashed section (module docs) when either field is present; nothing otherwise.
pub fn serialize_section<W: io::Write>(
    max_block_deploys: Option<u64>,
    max_block_code_bytes: Option<u64>,
    w: &mut W,
) -> io::Result<()> {
    if max_block_deploys.is_none() && max_block_code_bytes.is_none() {
        return Ok(());
    }
    BorshSerialize::serialize("block_caps", w)?;
    BorshSerialize::serialize(&max_block_deploys, w)?;
    BorshSerialize::serialize(&max_block_code_bytes, w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_hold_at_their_limit() {
        let caps = BlockCaps::from_fields(Some(2), Some(3 << 20));
        caps.admit(0, 0, 1 << 20).unwrap();
        caps.admit(1, 2 << 20, 1 << 20).unwrap();
        assert_eq!(caps.admit(2, 0, 1), Err(("deploys", 2)));
        assert_eq!(
            caps.admit(1, 2 << 20, (1 << 20) + 1),
            Err(("bytes of deploy code", 3 << 20))
        );
        BlockCaps::NONE
            .admit(u64::MAX - 1, u64::MAX - 5, 5)
            .unwrap();
        assert_eq!(BlockCaps::from_fields(None, None), BlockCaps::NONE);
    }

    #[test]
    fn section() {
        let mut none = Vec::new();
        serialize_section(None, None, &mut none).unwrap();
        assert!(none.is_empty());
        let mut some = Vec::new();
        serialize_section(Some(8), None, &mut some).unwrap();
        let mut other = Vec::new();
        serialize_section(None, Some(8), &mut other).unwrap();
        assert_ne!(some, other);
        assert_eq!(&some[..14], b"\x0a\0\0\0block_caps");
    }
}
