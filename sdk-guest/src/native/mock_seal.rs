//! Stand-in sealed moves for native tests: [`crate::MockCtx`] cannot decrypt (the SDK carries no
//! pairing library), so its sealed moves carry their plaintext in the clear with a hash of what
//! they are bound to. Its check refuses one under another binding as the chain refuses a copied
//! envelope, so a module's copy and replay tests mean the same natively; the chain refuses these
//! outright (they are no ciphertext).

use sha2::{Digest, Sha256};

use crate::schedule::{ScheduleError, SealBinding, Unsealed, SEALED_BYTES, SEAL_PLAINTEXT_BYTES};

const MOCK_SEAL_MAGIC: &[u8; 20] = b"gamechain-mock-seal\0";

/// The beacon key a [`crate::MockCtx`] chain has (96 bytes of 7): bind stand-in envelopes to it.
pub const MOCK_BEACON_KEY: [u8; 96] = [7; 96];

fn mock_binding(b: &SealBinding<'_>) -> [u8; 32] {
    let mut h = Sha256::new();
    for part in [b.module.as_bytes(), b.sender.as_bytes(), b.tag] {
        h.update((part.len() as u32).to_le_bytes());
        h.update(part);
    }
    h.update(b.round.to_le_bytes());
    h.update(b.beacon_key);
    h.finalize().into()
}

/// A stand-in sealed move for native tests ([`crate::MockCtx`]): [`SEALED_BYTES`] bytes that
/// carry `plaintext` in the clear and a hash of `binding`. The mock's check refuses it under
/// another binding as the chain refuses a copied envelope; the chain refuses it outright (it is
/// no ciphertext). Real envelopes come from `gamechain seal`, the JS SDK's `sealMove` or
/// `gamechain_chain::keys::seal::seal`.
pub fn seal(binding: &SealBinding<'_>, plaintext: &[u8; SEAL_PLAINTEXT_BYTES]) -> Vec<u8> {
    let mut out = vec![0u8; SEALED_BYTES];
    out[..20].copy_from_slice(MOCK_SEAL_MAGIC);
    out[20..52].copy_from_slice(&mock_binding(binding));
    out[52..84].copy_from_slice(plaintext);
    out
}

/// [`crate::MockCtx`]'s check of [`seal`]'s envelopes.
pub fn check(sealed: &[u8], binding: &SealBinding<'_>) -> Result<(), ScheduleError> {
    if sealed.len() != SEALED_BYTES || !sealed.starts_with(MOCK_SEAL_MAGIC) {
        return Err(ScheduleError::SealMalformed);
    }
    if sealed[20..52] != mock_binding(binding) {
        return Err(ScheduleError::SealUnbound);
    }
    Ok(())
}

/// [`crate::MockCtx`]'s opening of [`seal`]'s envelopes (anything else is void).
pub fn open(sealed: &[u8]) -> Unsealed {
    if sealed.len() == SEALED_BYTES && sealed.starts_with(MOCK_SEAL_MAGIC) {
        Unsealed::Opened(sealed[52..84].try_into().expect("32 bytes"))
    } else {
        Unsealed::Void
    }
}
