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
//! names, a `kind` field in an op) with a [`SchemaError`]. It reads the text in document order
//! (`json.rs`), so the model keeps declaration order and every doc: the TypeScript generator
//! (`gamechain module codegen --ts`) uses this model too.
//!
//! **On chain.** [`crate::export_module!`]`(M, schema = S)` makes `gc_apply` enforce the ops of
//! `S` ([`Schema::enforce_op`]), reading only the op's own declaration from the op text the macro
//! computes at compile time (`op_text.rs`, [`Schema::for_op`]); [`crate::MockCtx::submit`]
//! applies the same rule natively.

mod json;
mod macros;
mod op_text;

pub use op_text::{op_text, op_text_len};
#[doc(hidden)]
pub use op_text::{op_text_bytes, op_text_str};

use std::fmt;

use serde_json::{Map, Value};

use crate::{ActionError, Amount};
use json::{member, Json};

/// Which bytes are lowercase hex digits. A table rather than a range test, so that checking a
/// `hex` field costs the same fuel for every valid value of its length (a digit and a letter
/// take one load each): the same op on another game id costs the same.
const LOWER_HEX: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = matches!(b as u8, b'0'..=b'9' | b'a'..=b'f');
        b += 1;
    }
    t
};

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

/// A parsed schema (version 1). Everything is in declaration order.
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
    /// What it does, for people (empty when the schema gives none).
    pub doc: String,
    /// Its fields, in the order declared.
    pub fields: Vec<Field>,
}

/// A view: the query parameters it takes and the answer it gives.
#[derive(Debug, Clone, PartialEq)]
pub struct View {
    /// Its name (for people and generated code; not on the wire).
    pub name: String,
    /// What it answers, for people (empty when the schema gives none).
    pub doc: String,
    /// Its query parameters, in the order declared (their types are `string`-like: a query is
    /// text).
    pub query: Vec<Field>,
    /// The answer's type.
    pub answer: Type,
}

/// A named field of an op, an event, a view's query or an `object`.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// Its name (any string).
    pub name: String,
    /// Its type.
    pub ty: Type,
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
    /// What the value means, for people (empty when the schema gives none).
    pub doc: String,
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
    /// An object with exactly these fields (strict), in the order declared.
    Object(Vec<Field>),
    /// An object with any keys and values of this type.
    Map(Box<Type>),
    /// One of these strings.
    Enum(Vec<String>),
    /// Anything.
    Any,
}

/// The type of field `name` among `fields`.
pub fn field<'a>(fields: &'a [Field], name: &str) -> Option<&'a Type> {
    fields.iter().find(|f| f.name == name).map(|f| &f.ty)
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

/// Where something is in a schema or in a value, written out only for an error (a guest checks
/// ops on chain, where every `format!` costs fuel).
#[derive(Clone, Copy)]
enum At<'a> {
    /// A place named in full: `schema`, `ops[0]`, `view one answer`, `event e:`.
    Text(&'a str),
    /// The fields of op `kind`: `op <kind>:`.
    Op(&'a str),
    /// Field (or map key) `name` of the object at the parent: `<parent>.<name>`, or
    /// `<parent> field <name>` after a `…:`.
    Field(&'a At<'a>, &'a str),
    /// Item `i` of the array at the parent: `<parent>[<i>]`.
    Item(&'a At<'a>, usize),
}

impl At<'_> {
    fn ends_with_colon(&self) -> bool {
        match self {
            At::Text(t) => t.ends_with(':'),
            At::Op(_) => true,
            At::Field(..) | At::Item(..) => false,
        }
    }
}

impl fmt::Display for At<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            At::Text(t) => f.write_str(t),
            At::Op(kind) => write!(f, "op {kind}:"),
            At::Field(parent, name) if parent.ends_with_colon() => {
                write!(f, "{parent} field {name}")
            }
            At::Field(parent, name) => write!(f, "{parent}.{name}"),
            At::Item(parent, i) => write!(f, "{parent}[{i}]"),
        }
    }
}

fn bad(at: &At, what: impl fmt::Display) -> SchemaError {
    SchemaError(format!("{at}: {what}"))
}

/// Refuses keys of `obj` outside `allowed`.
fn only_keys(obj: &[(String, Json)], allowed: &[&str], at: &At) -> Result<(), SchemaError> {
    match obj.iter().find(|(k, _)| !allowed.contains(&k.as_str())) {
        Some((k, _)) => Err(bad(at, format_args!("unknown key `{k}`"))),
        None => Ok(()),
    }
}

fn as_object<'a>(v: &'a Json, at: &At) -> Result<&'a [(String, Json)], SchemaError> {
    v.as_object().ok_or_else(|| bad(at, "expected an object"))
}

fn string_at<'a>(obj: &'a [(String, Json)], key: &str, at: &At) -> Result<&'a str, SchemaError> {
    match member(obj, key) {
        Some(Json::String(s)) => Ok(s),
        _ => Err(bad(at, format_args!("`{key}` must be a string"))),
    }
}

fn doc_at(obj: &[(String, Json)], at: &At) -> Result<String, SchemaError> {
    match member(obj, "doc") {
        None => Ok(String::new()),
        Some(Json::String(s)) => Ok(s.clone()),
        Some(_) => Err(bad(at, "`doc` must be a string")),
    }
}

fn flag(obj: &[(String, Json)], key: &str, at: &At) -> Result<bool, SchemaError> {
    match member(obj, key) {
        None => Ok(false),
        Some(Json::Bool(b)) => Ok(*b),
        Some(_) => Err(bad(at, format_args!("`{key}` must be true or false"))),
    }
}

impl Type {
    /// Parses a type object (see the module documentation).
    fn parse(v: &Json, at: &At) -> Result<Self, SchemaError> {
        let obj = as_object(v, at)?;
        let name = string_at(obj, "type", at)?;
        // The keys every type may have, and the one its kind adds (`keys[..n]` are allowed).
        let mut keys = ["type", "optional", "nullable", "doc", ""];
        let mut n = 4;
        let kind = match name {
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
                (keys[4], n) = ("items", 5);
                let items = member(obj, "items").ok_or_else(|| bad(at, "array without `items`"))?;
                TypeKind::Array(Box::new(Type::parse(items, &At::Field(at, "items"))?))
            }
            "map" => {
                (keys[4], n) = ("values", 5);
                let values =
                    member(obj, "values").ok_or_else(|| bad(at, "map without `values`"))?;
                TypeKind::Map(Box::new(Type::parse(values, &At::Field(at, "values"))?))
            }
            "object" => {
                (keys[4], n) = ("fields", 5);
                let fields =
                    member(obj, "fields").ok_or_else(|| bad(at, "object without `fields`"))?;
                TypeKind::Object(parse_fields(fields, &At::Field(at, "fields"))?)
            }
            "enum" => {
                (keys[4], n) = ("values", 5);
                let values = match member(obj, "values") {
                    Some(Json::Array(values)) if !values.is_empty() => values,
                    _ => return Err(bad(at, "enum without a non-empty `values` array")),
                };
                let mut out: Vec<String> = Vec::with_capacity(values.len());
                for v in values {
                    match v {
                        Json::String(s) if !out.contains(s) => out.push(s.clone()),
                        _ => return Err(bad(at, "enum values must be distinct strings")),
                    }
                }
                TypeKind::Enum(out)
            }
            other => return Err(bad(at, format_args!("unknown type `{other}`"))),
        };
        only_keys(obj, &keys[..n], at)?;
        let doc = doc_at(obj, at)?;
        Ok(Type {
            kind,
            optional: flag(obj, "optional", at)?,
            nullable: flag(obj, "nullable", at)?,
            doc,
        })
    }

    /// Checks `value` (present; absence is the caller's business) against this type. `at` is
    /// the path so far, used in the [`Mismatch`].
    pub fn check(&self, value: &Value, at: &str) -> Result<(), Mismatch> {
        self.check_at(value, &At::Text(at))
    }

    fn check_at(&self, value: &Value, at: &At) -> Result<(), Mismatch> {
        let expected = |what: &str| Mismatch {
            at: at.to_string(),
            problem: format!("expected {what}, got {}", short(value)),
        };
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
                Some(s) if s.len() % 2 == 0 && s.bytes().all(|b| LOWER_HEX[usize::from(b)]) => {
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
                    items.check_at(item, &At::Item(at, i))?;
                }
                Ok(())
            }
            TypeKind::Map(values) => {
                let obj = value
                    .as_object()
                    .ok_or_else(|| expected("map (an object)"))?;
                for (k, v) in obj {
                    values.check_at(v, &At::Field(at, k))?;
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

/// Parses an object of `name: <type>` members, in the order written.
fn parse_fields(v: &Json, at: &At) -> Result<Vec<Field>, SchemaError> {
    as_object(v, at)?
        .iter()
        .map(|(name, t)| {
            Ok(Field {
                name: name.clone(),
                ty: Type::parse(t, &At::Field(at, name))?,
            })
        })
        .collect()
}

/// Checks `obj` against `fields`, strictly; keys in `skip` (an op's `kind`) are not fields. The
/// first problem is named: an undeclared or mismatching key in the object's (sorted) key order,
/// else a missing field in declaration order.
fn check_fields(
    fields: &[Field],
    obj: &Map<String, Value>,
    skip: &[&str],
    at: &At,
) -> Result<(), Mismatch> {
    for (name, value) in obj {
        if skip.contains(&name.as_str()) {
            continue;
        }
        match field(fields, name) {
            Some(t) => t.check_at(value, &At::Field(at, name))?,
            None => {
                return Err(Mismatch {
                    at: At::Field(at, name).to_string(),
                    problem: "unknown field".to_string(),
                })
            }
        }
    }
    match fields
        .iter()
        .find(|f| !f.ty.optional && !obj.contains_key(&f.name))
    {
        Some(f) => Err(Mismatch {
            at: At::Field(at, &f.name).to_string(),
            problem: "missing field".to_string(),
        }),
        None => Ok(()),
    }
}

/// The array `v` of a schema's `what` (`ops`, `events`, `views`); omitted is empty when
/// `relaxed`.
fn list<'a>(v: Option<&'a Json>, what: &str, relaxed: bool) -> Result<&'a [Json], SchemaError> {
    match v {
        Some(Json::Array(list)) => Ok(list),
        None if relaxed => Ok(&[]),
        _ => Err(bad(&At::Text(what), "expected an array")),
    }
}

/// The fields object `key` (`fields`, `query`) of an entry at `at`; omitted is empty when
/// `relaxed`.
fn entry_fields(
    obj: &[(String, Json)],
    key: &str,
    at: &At,
    relaxed: bool,
) -> Result<Vec<Field>, SchemaError> {
    match member(obj, key) {
        Some(f) => parse_fields(f, &At::Field(at, key)),
        None if relaxed => Ok(Vec::new()),
        None => Err(bad(at, format_args!("missing `{key}`"))),
    }
}

fn parse_messages(
    v: Option<&Json>,
    what: &str,
    is_op: bool,
    relaxed: bool,
) -> Result<Vec<Message>, SchemaError> {
    let list = list(v, what, relaxed)?;
    let mut out: Vec<Message> = Vec::with_capacity(list.len());
    for (i, m) in list.iter().enumerate() {
        let at = At::Item(&At::Text(what), i);
        let obj = as_object(m, &at)?;
        only_keys(obj, &["kind", "doc", "fields"], &at)?;
        let kind = string_at(obj, "kind", &at)?;
        if kind.is_empty() || out.iter().any(|m| m.kind == kind) {
            return Err(bad(&at, format_args!("empty or repeated kind `{kind}`")));
        }
        let fields = entry_fields(obj, "fields", &at, relaxed)?;
        if is_op && field(&fields, "kind").is_some() {
            return Err(bad(&at, "an op's `kind` is not one of its fields"));
        }
        out.push(Message {
            kind: kind.to_string(),
            doc: doc_at(obj, &at)?,
            fields,
        });
    }
    Ok(out)
}

impl Schema {
    /// Parses and checks a schema text (format version 1), keeping declaration order.
    ///
    /// Errors ([`SchemaError`]): not JSON; not an object with exactly `schema_version` (1),
    /// `module`, `ops`, `events`, `views`; an entry or type of another shape (unknown keys or
    /// types, a missing `fields`/`items`/`values`, repeated kinds or view names, an op listing
    /// `kind` among its fields). A key written twice in an object counts once, with its last
    /// value (as serde_json reads it).
    pub fn parse(text: &str) -> Result<Self, SchemaError> {
        Self::parse_with(text, false)
    }

    /// [`Schema::parse`], except that an omitted `ops`, `events` or `views`, an op's or event's
    /// omitted `fields` and a view's omitted `query` are empty: what `gamechain module codegen
    /// --ts` reads (`{"schema_version":1,"module":"empty"}` declares nothing). Everything else is
    /// as strict. The chain reads only [`Schema::parse`]'s exact shape (load rule 9).
    pub fn parse_relaxed(text: &str) -> Result<Self, SchemaError> {
        Self::parse_with(text, true)
    }

    fn parse_with(text: &str, relaxed: bool) -> Result<Self, SchemaError> {
        let v = Json::parse(text).map_err(|_| SchemaError("not JSON".to_string()))?;
        let at = At::Text("schema");
        let obj = as_object(&v, &at)?;
        only_keys(
            obj,
            &["schema_version", "module", "ops", "events", "views"],
            &at,
        )?;
        match member(obj, "schema_version") {
            Some(Json::Number(n)) if n.as_u64() == Some(SCHEMA_VERSION) => {}
            _ => return Err(bad(&at, "`schema_version` must be 1")),
        }
        let module = string_at(obj, "module", &at)?.to_string();
        let ops = parse_messages(member(obj, "ops"), "ops", true, relaxed)?;
        let events = parse_messages(member(obj, "events"), "events", false, relaxed)?;
        let list = list(member(obj, "views"), "views", relaxed)?;
        let mut views: Vec<View> = Vec::with_capacity(list.len());
        for (i, view) in list.iter().enumerate() {
            let at = At::Item(&At::Text("views"), i);
            let o = as_object(view, &at)?;
            only_keys(o, &["name", "doc", "query", "answer"], &at)?;
            let name = string_at(o, "name", &at)?;
            if name.is_empty() || views.iter().any(|v| v.name == name) {
                return Err(bad(&at, format_args!("empty or repeated name `{name}`")));
            }
            let query = entry_fields(o, "query", &at, relaxed)?;
            let answer = match member(o, "answer") {
                Some(a) => Type::parse(a, &At::Field(&at, "answer"))?,
                None => return Err(bad(&at, "missing `answer`")),
            };
            views.push(View {
                name: name.to_string(),
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

    /// The part of a schema that [`Schema::check_op`] of `op` reads: the declaration of `op`'s
    /// kind alone (no ops when the schema declares none of that kind, or `op` has no string
    /// `kind`), read from the schema's op text ([`op_text`]). `check_op` and `enforce_op` of
    /// `op` answer exactly as on the whole schema; `module`, events, views and
    /// docs are empty. What the export glue parses per call, instead of the whole schema.
    ///
    /// Errors: the declaration is not a valid `fields` object ([`SchemaError`]); never for the
    /// op text of a valid schema.
    pub fn for_op(op_text: &str, op: &Value) -> Result<Self, SchemaError> {
        let mut schema = Schema {
            module: String::new(),
            ops: Vec::new(),
            events: Vec::new(),
            views: Vec::new(),
        };
        let kind = op.get("kind").and_then(Value::as_str);
        if let Some((kind, fields)) = kind.and_then(|k| Some((k, op_text::fields_of(op_text, k)?)))
        {
            let fields = Json::parse(fields).map_err(|_| SchemaError("not JSON".to_string()))?;
            schema.ops.push(Message {
                kind: kind.to_string(),
                doc: String::new(),
                fields: parse_fields(&fields, &At::Text("fields"))?,
            });
        }
        Ok(schema)
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
        check_fields(&decl.fields, obj, &["kind"], &At::Op(kind))
    }

    /// Runs `apply` (the module's `apply` of `op`) under the rule the chain enforces for a
    /// module with this schema (`docs/modules.md`, "Schema", "On chain"); the export glue
    /// ([`crate::export_module!`]) and [`MockCtx::submit`](crate::MockCtx::submit) both call it.
    /// `op` is checked ([`Schema::check_op`]) before `apply` runs, and then:
    ///
    /// - `apply`'s refusal stands, whatever the check said: the module answers a bad op with
    ///   its own error and in its own order of checks (tic-tac-toe's texts are the seed's);
    /// - an op `apply` accepts must match the schema, or it is refused with the mismatch,
    ///   `invalid: <mismatch>` (``invalid: op move: field note: unknown field``, ``invalid: op
    ///   create: field opponent: expected address, got "a b"``), and everything `apply` did is
    ///   discarded with the error.
    ///
    /// So what the chain accepts of a module always matches its schema, and no refusal the
    /// module makes changes text. The texts are [`Mismatch`]'s, never an engine's: the same on
    /// every node.
    pub fn enforce_op(
        &self,
        op: &Value,
        apply: impl FnOnce() -> Result<(), ActionError>,
    ) -> Result<(), ActionError> {
        let verdict = self.check_op(op);
        apply()?;
        verdict.map_err(|m| ActionError::invalid(m.to_string()))
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
        check_fields(&decl.fields, obj, &[], &At::Text(&at))
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
            .find(|v| check_fields(&v.query, &obj, &[], &At::Text("query:")).is_ok())
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
                let at = format!("view {name} query:");
                check_fields(&view.query, &obj, &[], &At::Text(&at))?;
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
