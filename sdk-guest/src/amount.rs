//! `Amount`: a token quantity in base units, written on the wire as a decimal string.
//!
//! GOLD has 2 decimals, so `Amount(100)` is 1.00 GOLD and serialises as `"100"` (`docs/tictactoe.md`,
//! "Amounts"). Strings keep u128 exact in JavaScript clients.

use core::fmt;
use core::str::FromStr;

use serde::{Deserialize, Serialize};

/// A quantity of a token in base units (u128). Serialises as a decimal string (`"200"`), parses
/// from one: ASCII digits only, no sign, no leading `+`, no whitespace, no leading zeros except
/// `"0"` itself, at most u128::MAX.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Amount(pub u128);

/// Why a string is not an [`Amount`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AmountParseError;

impl fmt::Display for AmountParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not a decimal string of base units")
    }
}

impl std::error::Error for AmountParseError {}

impl FromStr for Amount {
    type Err = AmountParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let canonical = !s.is_empty()
            && s.bytes().all(|b| b.is_ascii_digit())
            && (s == "0" || !s.starts_with('0'));
        if !canonical {
            return Err(AmountParseError);
        }
        s.parse::<u128>().map(Amount).map_err(|_| AmountParseError)
    }
}

impl fmt::Display for Amount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl Serialize for Amount {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Amount {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialises_as_a_decimal_string() {
        assert_eq!(serde_json::to_string(&Amount(200)).unwrap(), "\"200\"");
        assert_eq!(
            serde_json::from_str::<Amount>("\"100000\"").unwrap(),
            Amount(100_000)
        );
        assert_eq!(
            serde_json::from_str::<Amount>(&format!("\"{}\"", u128::MAX)).unwrap(),
            Amount(u128::MAX)
        );
    }

    #[test]
    fn refuses_non_canonical_text() {
        for bad in [
            "",
            "-1",
            "+1",
            "01",
            " 1",
            "1.0",
            "1e3",
            "340282366920938463463374607431768211456",
            "abc",
        ] {
            assert!(bad.parse::<Amount>().is_err(), "{bad:?} was accepted");
        }
        assert!(
            serde_json::from_str::<Amount>("100").is_err(),
            "a JSON number is not an amount"
        );
    }
}
