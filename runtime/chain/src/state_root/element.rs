//! The lane vector of one state entry, the unit the state hash adds and subtracts:
//! [`element`], `SHAKE128(DOMAIN ‖ borsh((key, value)))` read as [`LANES`] little-endian `u16`s
//! (the construction is described in `state_root/lthash.rs`). [`LtHash`](super::LtHash)
//! sums these vectors and [`ElementCache`](super::element_cache::ElementCache) keeps them.

use sha3::digest::{ExtendableOutput, Update, XofReader};
use sha3::Shake128;

/// Number of `u16` lanes.
pub const LANES: usize = 1024;

/// Domain separation prefix of the per-entry XOF input.
pub const DOMAIN: &[u8] = b"gamechain.state.lthash16.v1";

/// The lane vector of one entry: SHAKE128(DOMAIN ‖ borsh((key, value))), 1024 LE u16s.
pub(crate) fn element(key: &str, value: &[u8]) -> [u16; LANES] {
    let mut xof = Shake128::default();
    xof.update(DOMAIN);
    xof.update(&(key.len() as u32).to_le_bytes());
    xof.update(key.as_bytes());
    xof.update(&(value.len() as u32).to_le_bytes());
    xof.update(value);
    let mut bytes = [0u8; LANES * 2];
    xof.finalize_xof().read(&mut bytes);
    let mut lanes = [0u16; LANES];
    for (lane, pair) in lanes.iter_mut().zip(bytes.chunks_exact(2)) {
        *lane = u16::from_le_bytes([pair[0], pair[1]]);
    }
    lanes
}
