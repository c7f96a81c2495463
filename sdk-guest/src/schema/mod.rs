//! Module schemas: what a module's ops, events and views look like, declared once in Rust with
//! [`crate::schema!`] (`macros.rs`), embedded in the `.wasm` as the custom section
//! [`SECTION`] by [`crate::export_module!`], and checked here ([`Schema`]).
//!
//! The format (version 1, `docs/modules.md`, "Schema", is the reference a client code
//! generator follows) is one compact JSON object:
//!
//! ```text
//! {"schema_version":1,"module":"<id>",
//!  "ops":[{"kind":"<kind>","doc":"…","fields":{"<name>":<type>,…}},…],
//!  "events":[{"kind":"<kind>","doc":"…","fields":{…}},…],
//!  "views":[{"name":"<name>","doc":"…","query":{"<param>":<type>,…},"answer":<type>},…]}
//! ```
//!
//! A type is `{"type":T,…}`, `T` one of `string`, `bool`, `u32`, `u64` (a JSON integer, at most
//! 2^53−1), `i64` (a JSON integer, magnitude at most 2^53−1), `amount` (a canonical decimal
//! string of base units, never a JSON number), `address` (a non-empty string of at most 128
//! characters without whitespace or control characters: the validator checks no more), `hex`
//! (lowercase hex digits, even length), `array` (`"items":<type>`), `object`
//! (`"fields":{name:<type>}`), `map` (`"values":<type>`, any string keys), `enum`
//! (`"values":["x",…]`, strings), `any`. A type may add `"optional":true` (the field may be
//! absent; only meaningful for a field), `"nullable":true` (may be `null`) and `"doc":"…"`.
//!
//! The validator is **strict**: an op, event, view query or `object` with a field its schema
//! does not list is a mismatch (declare a field `any` or a `map` for open content); a field not
//! marked `optional` must be present; `null` is accepted only where `nullable`. An op is the
//! JSON object `{"kind":"<kind>",…fields}`: `kind` selects the op and is never listed among its
//! fields. A view query is the HTTP query as an object of strings ([`crate::Query`]); a query
//! selects the first view (in declaration order) whose `query` accepts it.
//!
//! [`Schema::parse`] refuses any other shape (unknown keys, unknown types, duplicate kinds or
//! names, a `kind` field in an op) with a [`SchemaError`].

mod macros;

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{Map, Value};

use crate::Amount;

/// The name of the wasm custom section that holds a module's schema (UTF-8 JSON, at most
/// [`MAX_SCHEMA_BYTES`]).
pub const SECTION: &str = "gamechain.schema";

/// Largest schema section the chain accepts, bytes (64 KiB).
pub const MAX_SCHEMA_BYTES: usize = 64 << 10;

/// The schema format version this SDK writes and reads.
pub const SCHEMA_VERSION: u64 = 1;

/// Largest value of a `u64` (and magnitude of an `i64`) field: 2^53 − 1, exact in JavaScript.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Longest `address` value, characters.
pub const MAX_ADDRESS_CHARS: usize = 128;

/// A parsed schema (version 1).
#[derive(Debug, Clone, PartialEq)]
pub struct Schema {
    /// The module id the author intends (`"tictactoe"`).
    pub module: String,
    /// The ops, by kind, in declaration order.
    pub ops: Vec<Message>,
    /// The events, by kind, in declaration order.
    pub events: Vec<Message>,
    /// The views, in declaration order.
    pub views: Vec<View>,
}

/// An op or an event: its kind and fields.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// The op's `kind` or the event's kind (`"tictactoe.created"`).
    pub kind: String,
    /// What it does, for people.
    pub doc: String,
    /// Its fields by name.
    pub fields: BTreeMap<String, Type>,
}

/// A view: the query parameters it takes and the answer it gives.
#[derive(Debug, Clone, PartialEq)]
pub struct View {
    /// Its name (for people and generated code; not on the wire).
    pub name: String,
    /// What it answers, for people.
    pub doc: String,
    /// Its query parameters (their types are `string`-like: a query is text).
    pub query: BTreeMap<String, Type>,
    /// The answer's type.
    pub answer: Type,
}

/// A value's type, with its flags.
#[derive(Debug, Clone, PartialEq)]
pub struct Type {
    /// What the value is.
    pub kind: TypeKind,
    /// The field may be absent.
    pub optional: bool,
    /// The value may be `null`.
    pub nullable: bool,
}

/// The types of format version 1 (see the module documentation for what each accepts).
#[derive(Debug, Clone, PartialEq)]
pub enum TypeKind {
    /// Any string.
    String,
    /// `true` or `false`.
    Bool,
    /// An integer 0..=u32::MAX.
    U32,
    /// An integer 0..=2^53−1.
    U64,
    /// An integer −(2^53−1)..=2^53−1.
    I64,
    /// A canonical decimal string of base units (u128).
    Amount,
    /// A non-empty string without whitespace, at most 128 characters.
    Address,
    /// Lowercase hex digits, even length.
    Hex,
    /// An array of the item type.
    Array(Box<Type>),
    /// An object with exactly these fields (strict).
    Object(BTreeMap<String, Type>),
    /// An object with any keys and values of this type.
    Map(Box<Type>),
    /// One of these strings.
    Enum(Vec<String>),
    /// Anything.
    Any,
}

/// Why a text is not a valid schema: a fixed description and where (`ops[1].fields.cell`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError(pub String);

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid module schema: {}", self.0)
    }
}

impl std::error::Error for SchemaError {}

/// Why a value does not match the schema: `at` names the op, event or view and the field path
/// (`op move: field cell`), `problem` what is wrong (`expected u32, got "1"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// The op, event or view and the field path.
    pub at: String,
    /// What is wrong.
    pub problem: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.at, self.problem)
    }
}

impl std::error::Error for Mismatch {}

fn bad(at: &str, what: impl Into<String>) -> SchemaError {
    SchemaError(format!("{at}: {}", what.into()))
}

/// Refuses keys of `obj` outside `allowed`.
fn only_keys(obj: &Map<String, Value>, allowed: &[&str], at: &str) -> Result<(), SchemaError> {
    match obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(bad(at, format!("unknown key `{k}`"))),
        None => Ok(()),
    }
}

fn as_object<'a>(v: &'a Value, at: &str) -> Result<&'a Map<String, Value>, SchemaError> {
    v.as_object().ok_or_else(|| bad(at, "expected an object"))
}

fn string_at(obj: &Map<String, Value>, key: &str, at: &str) -> Result<String, SchemaError> {
    match obj.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        _ => Err(bad(at, format!("`{key}` must be a string"))),
    }
}

fn doc_at(obj: &Map<String, Value>, at: &str) -> Result<String, SchemaError> {
    match obj.get("doc") {
        None => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(bad(at, "`doc` must be a string")),
    }
}

fn flag(obj: &Map<String, Value>, key: &str, at: &str) -> Result<bool, SchemaError> {
    match obj.get(key) {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(bad(at, format!("`{key}` must be true or false"))),
    }
}

impl Type {
    /// Parses a type object (see the module documentation).
    fn parse(v: &Value, at: &str) -> Result<Self, SchemaError> {
        let obj = as_object(v, at)?;
        let name = string_at(obj, "type", at)?;
        let mut keys = vec!["type", "optional", "nullable", "doc"];
        let kind = match name.as_str() {
            "string" => TypeKind::String,
            "bool" => TypeKind::Bool,
            "u32" => TypeKind::U32,
            "u64" => TypeKind::U64,
            "i64" => TypeKind::I64,
            "amount" => TypeKind::Amount,
            "address" => TypeKind::Address,
            "hex" => TypeKind::Hex,
            "any" => TypeKind::Any,
            "array" => {
                keys.push("items");
                let items = obj
                    .get("items")
                    .ok_or_else(|| bad(at, "array without `items`"))?;
                TypeKind::Array(Box::new(Type::parse(items, &format!("{at}.items"))?))
            }
            "map" => {
                keys.push("values");
                let values = obj
                    .get("values")
                    .ok_or_else(|| bad(at, "map without `values`"))?;
                TypeKind::Map(Box::new(Type::parse(values, &format!("{at}.values"))?))
            }
            "object" => {
                keys.push("fields");
                let fields = obj
                    .get("fields")
                    .ok_or_else(|| bad(at, "object without `fields`"))?;
                TypeKind::Object(parse_fields(fields, &format!("{at}.fields"))?)
            }
            "enum" => {
                keys.push("values");
                let values = match obj.get("values") {
                    Some(Value::Array(values)) if !values.is_empty() => values,
                    _ => return Err(bad(at, "enum without a non-empty `values` array")),
                };
                let mut out: Vec<String> = Vec::new();
                for v in values {
                    match v {
                        Value::String(s) if !out.contains(s) => out.push(s.clone()),
                        _ => return Err(bad(at, "enum values must be distinct strings")),
                    }
                }
                TypeKind::Enum(out)
            }
            other => return Err(bad(at, format!("unknown type `{other}`"))),
        };
        only_keys(obj, &keys, at)?;
        doc_at(obj, at)?;
        Ok(Type {
            kind,
            optional: flag(obj, "optional", at)?,
            nullable: flag(obj, "nullable", at)?,
        })
    }

    /// Checks `value` (present; absence is the caller's business) against this type. `at` is
    /// the path so far, used in the [`Mismatch`].
    pub fn check(&self, value: &Value, at: &str) -> Result<(), Mismatch> {
        let fail = |problem: String| Mismatch {
            at: at.to_string(),
            problem,
        };
        let expected = |what: &str| fail(format!("expected {what}, got {}", short(value)));
        if value.is_null() {
            return if self.nullable || self.kind == TypeKind::Any {
                Ok(())
            } else {
                Err(expected(self.kind.name()))
            };
        }
        match &self.kind {
            TypeKind::Any => Ok(()),
            TypeKind::String => value.as_str().map(|_| ()).ok_or_else(|| expected("string")),
            TypeKind::Bool => value.as_bool().map(|_| ()).ok_or_else(|| expected("bool")),
            TypeKind::U32 => match value.as_u64() {
                Some(n) if n <= u64::from(u32::MAX) => Ok(()),
                _ => Err(expected("u32")),
            },
            TypeKind::U64 => match value.as_u64() {
                Some(n) if n <= MAX_SAFE_INTEGER => Ok(()),
                _ => Err(expected("u64 (at most 2^53-1)")),
            },
            TypeKind::I64 => match value.as_i64() {
                Some(n) if n.unsigned_abs() <= MAX_SAFE_INTEGER => Ok(()),
                _ => Err(expected("i64 (magnitude at most 2^53-1)")),
            },
            TypeKind::Amount => match value.as_str().map(str::parse::<Amount>) {
                Some(Ok(_)) => Ok(()),
                _ => Err(expected("amount (a decimal string of base units)")),
            },
            TypeKind::Address => match value.as_str() {
                Some(s)
                    if !s.is_empty()
                        && s.chars().count() <= MAX_ADDRESS_CHARS
                        && !s.chars().any(|c| c.is_whitespace() || c.is_control()) =>
                {
                    Ok(())
                }
                _ => Err(expected("address")),
            },
            TypeKind::Hex => match value.as_str() {
                Some(s)
                    if s.len() % 2 == 0
                        && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) =>
                {
                    Ok(())
                }
                _ => Err(expected("hex (lowercase, even length)")),
            },
            TypeKind::Enum(values) => match value.as_str() {
                Some(s) if values.iter().any(|v| v == s) => Ok(()),
                _ => Err(expected(&format!("one of {values:?}"))),
            },
            TypeKind::Array(items) => {
                let array = value.as_array().ok_or_else(|| expected("array"))?;
                for (i, item) in array.iter().enumerate() {
                    items.check(item, &format!("{at}[{i}]"))?;
                }
                Ok(())
            }
            TypeKind::Map(values) => {
                let obj = value
                    .as_object()
                    .ok_or_else(|| expected("map (an object)"))?;
                for (k, v) in obj {
                    values.check(v, &format!("{at}.{k}"))?;
                }
                Ok(())
            }
            TypeKind::Object(fields) => {
                let obj = value.as_object().ok_or_else(|| expected("object"))?;
                check_fields(fields, obj, &[], at)
            }
        }
    }
}

impl TypeKind {
    /// The type's name in the format (`"u32"`, `"array"`, …).
    pub fn name(&self) -> &'static str {
        match self {
            Self::String => "string",
            Self::Bool => "bool",
            Self::U32 => "u32",
            Self::U64 => "u64",
            Self::I64 => "i64",
            Self::Amount => "amount",
            Self::Address => "address",
            Self::Hex => "hex",
            Self::Array(_) => "array",
            Self::Object(_) => "object",
            Self::Map(_) => "map",
            Self::Enum(_) => "enum",
            Self::Any => "any",
        }
    }
}

/// A value in a message, shortened to 40 characters.
fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= 40 {
        text
    } else {
        format!("{}…", text.chars().take(40).collect::<String>())
    }
}

fn parse_fields(v: &Value, at: &str) -> Result<BTreeMap<String, Type>, SchemaError> {
    as_object(v, at)?
        .iter()
        .map(|(name, t)| Ok((name.clone(), Type::parse(t, &format!("{at}.{name}"))?)))
        .collect()
}

/// Checks `obj` against `fields`, strictly; keys in `skip` (an op's `kind`) are not fields.
fn check_fields(
    fields: &BTreeMap<String, Type>,
    obj: &Map<String, Value>,
    skip: &[&str],
    at: &str,
) -> Result<(), Mismatch> {
    let sep = if at.ends_with(':') { " " } else { "." };
    let path = |name: &str| {
        if at.ends_with(':') {
            format!("{at} field {name}")
        } else {
            format!("{at}{sep}{name}")
        }
    };
    for (name, value) in obj {
        if skip.contains(&name.as_str()) {
            continue;
        }
        match fields.get(name) {
            Some(t) => t.check(value, &path(name))?,
            None => {
                return Err(Mismatch {
                    at: path(name),
                    problem: "unknown field".to_string(),
                })
            }
        }
    }
    for (name, t) in fields {
        if !t.optional && !obj.contains_key(name) {
            return Err(Mismatch {
                at: path(name),
                problem: "missing field".to_string(),
            });
        }
    }
    Ok(())
}

fn parse_messages(v: Option<&Value>, what: &str, is_op: bool) -> Result<Vec<Message>, SchemaError> {
    let list = match v {
        Some(Value::Array(list)) => list,
        _ => return Err(bad(what, "expected an array")),
    };
    let mut out: Vec<Message> = Vec::new();
    for (i, m) in list.iter().enumerate() {
        let at = format!("{what}[{i}]");
        let obj = as_object(m, &at)?;
        only_keys(obj, &["kind", "doc", "fields"], &at)?;
        let kind = string_at(obj, "kind", &at)?;
        if kind.is_empty() || out.iter().any(|m| m.kind == kind) {
            return Err(bad(&at, format!("empty or repeated kind `{kind}`")));
        }
        let fields = match obj.get("fields") {
            Some(f) => parse_fields(f, &format!("{at}.fields"))?,
            None => return Err(bad(&at, "missing `fields`")),
        };
        if is_op && fields.contains_key("kind") {
            return Err(bad(&at, "an op's `kind` is not one of its fields"));
        }
        out.push(Message {
            kind,
            doc: doc_at(obj, &at)?,
            fields,
        });
    }
    Ok(out)
}

impl Schema {
    /// Parses and checks a schema text (format version 1).
    ///
    /// Errors ([`SchemaError`]): not JSON; not an object with exactly `schema_version` (1),
    /// `module`, `ops`, `events`, `views`; an entry or type of another shape (unknown keys or
    /// types, a missing `fields`/`items`/`values`, repeated kinds or view names, an op listing
    /// `kind` among its fields).
    pub fn parse(text: &str) -> Result<Self, SchemaError> {
        let v: Value =
            serde_json::from_str(text).map_err(|_| SchemaError("not JSON".to_string()))?;
        let obj = as_object(&v, "schema")?;
        only_keys(
            obj,
            &["schema_version", "module", "ops", "events", "views"],
            "schema",
        )?;
        if obj.get("schema_version").and_then(Value::as_u64) != Some(SCHEMA_VERSION) {
            return Err(bad("schema", "`schema_version` must be 1"));
        }
        let module = string_at(obj, "module", "schema")?;
        let ops = parse_messages(obj.get("ops"), "ops", true)?;
        let events = parse_messages(obj.get("events"), "events", false)?;
        let list = match obj.get("views") {
            Some(Value::Array(list)) => list,
            _ => return Err(bad("views", "expected an array")),
        };
        let mut views: Vec<View> = Vec::new();
        for (i, view) in list.iter().enumerate() {
            let at = format!("views[{i}]");
            let o = as_object(view, &at)?;
            only_keys(o, &["name", "doc", "query", "answer"], &at)?;
            let name = string_at(o, "name", &at)?;
            if name.is_empty() || views.iter().any(|v| v.name == name) {
                return Err(bad(&at, format!("empty or repeated name `{name}`")));
            }
            let query = match o.get("query") {
                Some(q) => parse_fields(q, &format!("{at}.query"))?,
                None => return Err(bad(&at, "missing `query`")),
            };
            let answer = match o.get("answer") {
                Some(a) => Type::parse(a, &format!("{at}.answer"))?,
                None => return Err(bad(&at, "missing `answer`")),
            };
            views.push(View {
                name,
                doc: doc_at(o, &at)?,
                query,
                answer,
            });
        }
        Ok(Schema {
            module,
            ops,
            events,
            views,
        })
    }

    /// Checks an op `{"kind":…,…}`: its kind must be declared and its other keys must match
    /// that op's fields (strict). Mismatches name `op <kind>` and the field.
    pub fn check_op(&self, op: &Value) -> Result<(), Mismatch> {
        let obj = op.as_object().ok_or_else(|| Mismatch {
            at: "op".to_string(),
            problem: format!("expected an object, got {}", short(op)),
        })?;
        let kind = obj
            .get("kind")
            .and_then(Value::as_str)
            .ok_or_else(|| Mismatch {
                at: "op".to_string(),
                problem: "missing string field `kind`".to_string(),
            })?;
        let decl = self
            .ops
            .iter()
            .find(|o| o.kind == kind)
            .ok_or_else(|| Mismatch {
                at: format!("op {kind}"),
                problem: "unknown op kind".to_string(),
            })?;
        check_fields(&decl.fields, obj, &["kind"], &format!("op {kind}:"))
    }

    /// Checks event `kind`'s `data` (an object) against its declaration (strict).
    pub fn check_event(&self, kind: &str, data: &Value) -> Result<(), Mismatch> {
        let at = format!("event {kind}:");
        let decl = self
            .events
            .iter()
            .find(|e| e.kind == kind)
            .ok_or_else(|| Mismatch {
                at: format!("event {kind}"),
                problem: "unknown event kind".to_string(),
            })?;
        let obj = data.as_object().ok_or_else(|| Mismatch {
            at: at.clone(),
            problem: format!("expected an object, got {}", short(data)),
        })?;
        check_fields(&decl.fields, obj, &[], &at)
    }

    /// The view a query selects: the first, in declaration order, whose `query` fields accept
    /// it (every key declared, every non-optional one present, each value of its type).
    pub fn view_for(&self, query: &crate::Query) -> Option<&View> {
        let obj: Map<String, Value> = query
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        self.views
            .iter()
            .find(|v| check_fields(&v.query, &obj, &[], "query:").is_ok())
    }

    /// Checks a view's answer: against view `name` when given (its query must match too),
    /// else against the view [`Schema::view_for`] selects. Mismatches name `view <name>`.
    pub fn check_view(
        &self,
        name: Option<&str>,
        query: &crate::Query,
        answer: &Value,
    ) -> Result<(), Mismatch> {
        let view = match name {
            Some(name) => {
                let view = self
                    .views
                    .iter()
                    .find(|v| v.name == name)
                    .ok_or_else(|| Mismatch {
                        at: format!("view {name}"),
                        problem: "unknown view".to_string(),
                    })?;
                let obj: Map<String, Value> = query
                    .iter()
                    .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                    .collect();
                check_fields(&view.query, &obj, &[], &format!("view {name} query:"))?;
                view
            }
            None => self.view_for(query).ok_or_else(|| Mismatch {
                at: "view".to_string(),
                problem: format!(
                    "no view takes the query {:?}",
                    query.keys().collect::<Vec<_>>()
                ),
            })?,
        };
        view.answer
            .check(answer, &format!("view {} answer", view.name))
    }
}

/// `text` (valid JSON) re-indented with two spaces, keeping its key order (which a round trip
/// through `serde_json::Value` would sort). For `gamechain module schema`. Invalid JSON comes
/// back re-indented as far as it goes; nothing is checked.
pub fn pretty(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let mut chars = text.chars().peekable();
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        out.push_str(&"  ".repeat(depth));
    };
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            '{' | '[' => {
                out.push(c);
                let close = if c == '{' { '}' } else { ']' };
                if chars.peek() == Some(&close) {
                    out.push(chars.next().unwrap_or(close));
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c);
            }
            ',' => {
                out.push(c);
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            c if c.is_whitespace() => {}
            c => out.push(c),
        }
    }
    out
}

/// `text` as a fixed-size byte array, for the `#[link_section]` static [`crate::export_module!`]
/// emits (`N` must be `text.len()`; a compile-time error otherwise).
#[doc(hidden)]
pub const fn section_bytes<const N: usize>(text: &str) -> [u8; N] {
    let bytes = text.as_bytes();
    assert!(bytes.len() == N, "section length");
    let mut out = [0u8; N];
    let mut i = 0;
    while i < N {
        out[i] = bytes[i];
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests;
