//! Hash helpers shared by the chain primitives: SHA-256, double SHA-256, and the lowercase-hex
//! form of a 32-byte hash as the JSON API writes it (a serde `with` module).

use sha2::{Digest, Sha256};

/// SHA-256 of `data`.
pub fn sha256(data: &[u8]) -> [u8; 32] {
    Sha256::digest(data).into()
}

/// SHA-256(SHA-256(`data`)), Bitcoin's "hash256".
pub fn sha256d(data: &[u8]) -> [u8; 32] {
    sha256(&sha256(data))
}

/// Parses exactly 64 lowercase hex characters into 32 bytes; `None` otherwise (uppercase is
/// refused so that one hash has one text).
pub fn parse_hex32(s: &str) -> Option<[u8; 32]> {
    if s.len() != 64
        || !s
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return None;
    }
    let mut out = [0u8; 32];
    hex::decode_to_slice(s, &mut out).ok()?;
    Some(out)
}

/// Serde for `[u8; 32]` as 64 lowercase hex characters: `#[serde(with = "hex32")]`.
pub mod hex32 {
    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes the hash as lowercase hex.
    pub fn serialize<S: Serializer>(bytes: &[u8; 32], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex::encode(bytes))
    }

    /// Reads 64 lowercase hex characters.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[u8; 32], D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        crate::hash::parse_hex32(&s)
            .ok_or_else(|| serde::de::Error::custom("expected 64 lowercase hex characters"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_digests() {
        assert_eq!(
            hex::encode(sha256(b"")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        // Bitcoin's hash256 of the empty string.
        assert_eq!(
            hex::encode(sha256d(b"")),
            "5df6e0e2761359d30a8275058e299fcc0381534545f55cf43e41983f5d4c9456"
        );
    }

    #[test]
    fn hex32_is_strict() {
        let h = sha256(b"x");
        assert_eq!(parse_hex32(&hex::encode(h)), Some(h));
        assert_eq!(parse_hex32(&hex::encode(h).to_uppercase()), None);
        assert_eq!(parse_hex32("00"), None);
    }
}
