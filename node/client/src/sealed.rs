//! Sealed moves from Rust: [`Client::seal_move`] fetches the chain's id and beacon key from the
//! node's genesis and seals 32 bytes to a round for a module, a sender and a tag
//! (`gamechain_chain::keys::seal`, `docs/sealed-moves.md`); [`plaintext_from`] builds those 32
//! bytes from what a player types.

use gamechain_chain::keys::beacon::BeaconPublicKey;
use gamechain_chain::keys::seal::{self, SealContext, MAX_TAG_BYTES, PLAINTEXT_BYTES};

use crate::client::{Client, ClientError, ClientResult};

impl Client {
    /// The genesis `beacon.public_key` (`GET /v1/genesis`). Errors: [`ClientError::Usage`] when
    /// the chain has no beacon (nothing can be sealed to its rounds) or the key does not parse.
    pub async fn beacon_public_key(&self) -> ClientResult<BeaconPublicKey> {
        let genesis = self.genesis().await?;
        let hex = genesis
            .pointer("/beacon/public_key")
            .and_then(|k| k.as_str())
            .ok_or_else(|| {
                ClientError::Usage(
                    "this chain has no beacon: no round of it opens a sealed move".into(),
                )
            })?;
        BeaconPublicKey::from_hex(hex).map_err(|e| ClientError::Usage(e.to_string()))
    }

    /// `plaintext` sealed to `round` (a block height) of this node's chain, bound to `module`,
    /// `sender` (the address that will hand it in) and `tag` (the module's binding, at most 64
    /// bytes: sealed rock-paper-scissors uses `<game id>/<x|o>`, the auction its id): 448
    /// lowercase hex characters (224 bytes) for the op's `sealed` field. Fresh randomness each
    /// call. Errors: as [`Client::beacon_public_key`]; [`ClientError::Usage`] for a tag over 64
    /// bytes.
    pub async fn seal_move(
        &self,
        module: &str,
        sender: &str,
        tag: &[u8],
        round: u64,
        plaintext: &[u8; PLAINTEXT_BYTES],
    ) -> ClientResult<String> {
        if tag.len() > MAX_TAG_BYTES {
            return Err(ClientError::Usage(format!(
                "a seal tag is at most {MAX_TAG_BYTES} bytes"
            )));
        }
        let key = self.beacon_public_key().await?;
        let chain_id = self.chain_id().await?;
        let ctx = SealContext {
            module,
            sender,
            tag,
            round,
        };
        Ok(hex::encode(seal::seal(&key, &chain_id, &ctx, plaintext)))
    }
}

/// The 32 bytes to seal, from at most one of: `hex` (up to 32 bytes, zero-padded on the right),
/// `byte` (the first byte; sealed rock-paper-scissors: 1 rock, 2 paper, 3 scissors) or `u64`
/// (the first 8 bytes, big-endian; the auction's bid in base units). Errors: none or several
/// given, bad hex, more than 32 bytes.
pub fn plaintext_from(
    hex_text: Option<&str>,
    byte: Option<u8>,
    number: Option<u64>,
) -> Result<[u8; PLAINTEXT_BYTES], String> {
    let mut out = [0u8; PLAINTEXT_BYTES];
    match (hex_text, byte, number) {
        (Some(h), None, None) => {
            let bytes = hex::decode(h).map_err(|e| format!("--plaintext: {e}"))?;
            if bytes.len() > PLAINTEXT_BYTES {
                return Err(format!("--plaintext is at most {PLAINTEXT_BYTES} bytes"));
            }
            out[..bytes.len()].copy_from_slice(&bytes);
        }
        (None, Some(b), None) => out[0] = b,
        (None, None, Some(n)) => out[..8].copy_from_slice(&n.to_be_bytes()),
        _ => return Err("give exactly one of --plaintext, --byte, --u64".into()),
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plaintexts_are_laid_out_as_documented() {
        assert_eq!(plaintext_from(None, Some(2), None).unwrap()[..2], [2, 0]);
        let p = plaintext_from(None, None, Some(258)).unwrap();
        assert_eq!(p[..8], [0, 0, 0, 0, 0, 0, 1, 2]);
        assert_eq!(
            plaintext_from(Some("abcd"), None, None).unwrap()[..3],
            [0xab, 0xcd, 0]
        );
        assert!(plaintext_from(Some(&"00".repeat(33)), None, None).is_err());
        assert!(plaintext_from(None, None, None).is_err());
        assert!(plaintext_from(Some("00"), Some(1), None).is_err());
    }
}
