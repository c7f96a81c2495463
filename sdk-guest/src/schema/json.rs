//! JSON in document order, what [`Schema::parse`](super::Schema::parse) reads a schema text
//! into: serde_json's `Value` sorts object keys (its `preserve_order` feature is never enabled
//! in this workspace), and a schema's field order is part of what it declares (generated
//! clients keep it).
//!
//! It is read by serde_json's own deserializer, so it accepts exactly the texts `Value` accepts
//! (the same numbers, strings, nesting limit and trailing-text check), and a key written twice
//! keeps its first place and its last value, as `Value`'s map keeps the last: a schema text
//! parses to the same schema whichever is used, only in declaration order. (Load rule 9,
//! ABI.md, depends on exactly which texts parse.)

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Number;

/// serde_json's private key of a raw value (`serde_json::raw::TOKEN`).
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// A JSON value whose objects keep their keys in the order written.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Json {
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    /// Parses a JSON text (serde_json's rules; see the module documentation).
    pub(super) fn parse(text: &str) -> Result<Json, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The members of an object.
    pub(super) fn as_object(&self) -> Option<&[(String, Json)]> {
        match self {
            Json::Object(members) => Some(members),
            _ => None,
        }
    }
}

/// The value of `key` among an object's members.
pub(super) fn member<'a>(members: &'a [(String, Json)], key: &str) -> Option<&'a Json> {
    members.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Json;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("JSON")
            }
            fn visit_unit<E>(self) -> Result<Json, E> {
                Ok(Json::Null)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
                Ok(Json::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
                Ok(Json::Number(v.into()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
                Ok(Json::Number(v.into()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Json, E> {
                // serde_json hands over finite numbers only; `Value` makes the same `Number`.
                Ok(Number::from_f64(v).map_or(Json::Null, Json::Number))
            }
            fn visit_str<E>(self, v: &str) -> Result<Json, E> {
                Ok(Json::String(v.to_string()))
            }
            fn visit_string<E>(self, v: String) -> Result<Json, E> {
                Ok(Json::String(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Json::Array(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
                let mut members: Vec<(String, Json)> = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    if members.is_empty() && key == RAW_VALUE_TOKEN {
                        // As `Value` does with serde_json's `raw_value` feature (on in this
                        // workspace): an object whose first key is this token is the JSON text
                        // of its value, a string.
                        let text: String = map.next_value()?;
                        return serde_json::from_str(&text).map_err(de::Error::custom);
                    }
                    let value: Json = map.next_value()?;
                    match members.iter_mut().find(|(k, _)| *k == key) {
                        Some((_, before)) => *before = value,
                        None => members.push((key, value)),
                    }
                }
                Ok(Json::Object(members))
            }
        }
        d.deserialize_any(V)
    }
}
