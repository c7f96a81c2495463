//! `gamechain module codegen --ts`: a module schema (the JSON of `schema_version` 1,
//! docs/modules.md, "Typed clients") turned into one TypeScript file, a typed client of the
//! module on top of the JS SDK (`node/web/sdk`).
//!
//! This file owns: reading a schema in document order (field order is as written), checking it,
//! naming what it declares in TypeScript (escaping field names, refusing names that cannot be
//! identifiers and collisions), and the generated text; also [`schema_from_wasm`], the schema
//! embedded in a module's `.wasm` as the custom section `gamechain.schema`. Where the schema comes
//! from on the command line (`--schema`, `--wasm`, `--node --module`) and writing the file is
//! `module.rs`.
//!
//! The output depends only on the schema's bytes: same schema, same file, byte for byte (no
//! path, date or version in it). Its header names the module and the SHA-256 of those bytes.
//!
//! Names in the generated file (`Tictactoe` for module `tictactoe`, `my_game` → `MyGame`):
//! - op `claim_timeout`: `ClaimTimeoutArgs` (typed arguments), `claimTimeoutOp(args)` (the wire
//!   op), the client method `claimTimeout(key, args)`; the union of wire ops `TictactoeOp`;
//! - event `tictactoe.created` (the module's prefix dropped): `CreatedData`, `CreatedEvent`; the
//!   union `TictactoeEvent`, `TictactoeEventKind`, `isEventKind`, `parseEvent`, `eventsOf`;
//! - view `game`: `GameQuery`, `GameAnswer`, `viewGame(chain, query)` and the method
//!   `viewGame(query)`;
//! - a field whose name is not a TypeScript identifier is quoted (`"max-stake"?: bigint`); an
//!   op kind, event kind or view name must start with a letter and hold only letters, digits,
//!   `_`, `.` and `-`; two names that would make the same identifier are refused, saying which.
//!
//! Types: `amount` → `bigint` (a decimal string on the wire, both ways); `u32`, `u64`, `i64` →
//! `number` (the schema bounds `u64` to 2^53−1; an `i64` beyond ±(2^53−1) is refused as it is
//! checked); `string`, `address`, `hex` →
//! `string`; `bool` → `boolean`; `array` → `Array<T>`; `object` → `{…}`; `map` →
//! `{ [key: string]: T }`; `enum` → a union of string literals; `any` → `unknown`. Answers and
//! events are checked against the schema when parsed (`SchemaError` says where they differ).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use gamechain_chain::genesis::{check_module_id, GenesisError};
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use sha2::{Digest, Sha256};

/// The only `schema_version` this generator reads.
pub const SCHEMA_VERSION: u64 = 1;

/// The wasm custom section a module's schema is embedded in.
pub const WASM_SECTION: &str = "gamechain.schema";

// ---------------------------------------------------------------------------------------------
// JSON in document order

/// A JSON value whose objects keep their keys in the order written (serde_json's `Value` sorts
/// them). Duplicate keys are refused.
#[derive(Debug, Clone, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    Number(f64),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Json;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("JSON")
            }
            fn visit_unit<E>(self) -> Result<Json, E> {
                Ok(Json::Null)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
                Ok(Json::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
                Ok(Json::Number(v as f64))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
                Ok(Json::Number(v as f64))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Json, E> {
                Ok(Json::Number(v))
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
                let mut entries: Vec<(String, Json)> = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, Json>()? {
                    if entries.iter().any(|(k, _)| *k == key) {
                        return Err(de::Error::custom(format!("duplicate key `{key}`")));
                    }
                    entries.push((key, value));
                }
                Ok(Json::Object(entries))
            }
        }
        d.deserialize_any(V)
    }
}

impl Json {
    fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The schema

/// A module schema, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Schema {
    pub module: String,
    pub ops: Vec<Op>,
    pub events: Vec<EventDecl>,
    pub views: Vec<View>,
}

/// One op: `{"kind": kind, …fields}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Op {
    pub kind: String,
    pub doc: Option<String>,
    pub fields: Vec<Field>,
}

/// One event kind and its `data` fields.
#[derive(Debug, Clone, PartialEq)]
pub struct EventDecl {
    pub kind: String,
    pub doc: Option<String>,
    pub fields: Vec<Field>,
}

/// One view: its query parameters and its answer.
#[derive(Debug, Clone, PartialEq)]
pub struct View {
    pub name: String,
    pub doc: Option<String>,
    pub query: Vec<Field>,
    pub answer: Type,
}

/// A named field of an op, event, query or object.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: String,
    pub ty: Type,
}

/// A type with its flags.
#[derive(Debug, Clone, PartialEq)]
pub struct Type {
    pub kind: Kind,
    pub optional: bool,
    pub nullable: bool,
    pub doc: Option<String>,
}

/// What a type is.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    String,
    Bool,
    U32,
    U64,
    I64,
    Amount,
    Address,
    Hex,
    Any,
    Array(Box<Type>),
    Object(Vec<Field>),
    Map(Box<Type>),
    Enum(Vec<String>),
}

impl Kind {
    fn tag(&self) -> &'static str {
        match self {
            Kind::String => "string",
            Kind::Bool => "bool",
            Kind::U32 => "u32",
            Kind::U64 => "u64",
            Kind::I64 => "i64",
            Kind::Amount => "amount",
            Kind::Address => "address",
            Kind::Hex => "hex",
            Kind::Any => "any",
            Kind::Array(_) => "array",
            Kind::Object(_) => "object",
            Kind::Map(_) => "map",
            Kind::Enum(_) => "enum",
        }
    }
}

/// Parses and checks a schema's JSON bytes. Errors say where: `schema: ops[2] (move): field
/// `cell`: unknown type `u8``.
pub fn parse_schema(bytes: &[u8]) -> Result<Schema, String> {
    let json: Json = serde_json::from_slice(bytes).map_err(|e| format!("schema: not JSON: {e}"))?;
    if !matches!(json, Json::Object(_)) {
        return Err("schema: not a JSON object".into());
    }
    match json.get("schema_version") {
        Some(Json::Number(v)) if *v == SCHEMA_VERSION as f64 => {}
        Some(Json::Number(v)) => {
            return Err(format!(
                "schema: schema_version {v}: this gamechain writes clients for schema_version \
                 {SCHEMA_VERSION} only (a newer gamechain may read it)"
            ))
        }
        _ => return Err("schema: missing number field `schema_version`".into()),
    }
    let module = match json.get("module") {
        Some(Json::String(m)) => m.clone(),
        _ => return Err("schema: missing string field `module`".into()),
    };
    check_module_id(&module).map_err(|e| match e {
        GenesisError::Invalid(m) => format!("schema: {m}"),
        other => format!("schema: {other}"),
    })?;
    let list = |name: &str| -> Result<Vec<Json>, String> {
        match json.get(name) {
            None => Ok(Vec::new()),
            Some(Json::Array(items)) => Ok(items.clone()),
            Some(_) => Err(format!("schema: `{name}` must be an array")),
        }
    };
    let mut ops = Vec::new();
    for (i, item) in list("ops")?.iter().enumerate() {
        let kind = str_field(item, "kind").map_err(|e| format!("schema: ops[{i}]: {e}"))?;
        let at = format!("schema: ops[{i}] ({kind})");
        let doc = doc_field(item).map_err(|e| format!("{at}: {e}"))?;
        let fields = fields_of(item.get("fields"), &at, "fields")?;
        if let Some(f) = fields.iter().find(|f| f.name == "kind") {
            return Err(format!(
                "{at}: field `{}`: `kind` names the op and cannot be one of its fields",
                f.name
            ));
        }
        if ops.iter().any(|o: &Op| o.kind == kind) {
            return Err(format!("{at}: op `{kind}` is declared twice"));
        }
        ops.push(Op { kind, doc, fields });
    }
    let mut events = Vec::new();
    for (i, item) in list("events")?.iter().enumerate() {
        let kind = str_field(item, "kind").map_err(|e| format!("schema: events[{i}]: {e}"))?;
        let at = format!("schema: events[{i}] ({kind})");
        let doc = doc_field(item).map_err(|e| format!("{at}: {e}"))?;
        let fields = fields_of(item.get("fields"), &at, "fields")?;
        if events.iter().any(|e: &EventDecl| e.kind == kind) {
            return Err(format!("{at}: event `{kind}` is declared twice"));
        }
        events.push(EventDecl { kind, doc, fields });
    }
    let mut views = Vec::new();
    for (i, item) in list("views")?.iter().enumerate() {
        let name = str_field(item, "name").map_err(|e| format!("schema: views[{i}]: {e}"))?;
        let at = format!("schema: views[{i}] ({name})");
        let doc = doc_field(item).map_err(|e| format!("{at}: {e}"))?;
        let query = fields_of(item.get("query"), &at, "query")?;
        for f in &query {
            match f.ty.kind {
                Kind::Array(_) | Kind::Object(_) | Kind::Map(_) | Kind::Any => {
                    return Err(format!(
                        "{at}: query parameter `{}` has type {}: a query parameter is a string, \
                         bool, u32, u64, i64, amount, address, hex or enum",
                        f.name,
                        f.ty.kind.tag()
                    ))
                }
                _ => {}
            }
        }
        let answer = match item.get("answer") {
            Some(t) => parse_type(t, &format!("{at}: answer"))?,
            None => return Err(format!("{at}: missing field `answer`")),
        };
        if views.iter().any(|v: &View| v.name == name) {
            return Err(format!("{at}: view `{name}` is declared twice"));
        }
        views.push(View {
            name,
            doc,
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

fn str_field(item: &Json, name: &str) -> Result<String, String> {
    match item.get(name) {
        Some(Json::String(s)) => Ok(s.clone()),
        _ => Err(format!("missing string field `{name}`")),
    }
}

fn doc_field(item: &Json) -> Result<Option<String>, String> {
    match item.get("doc") {
        None | Some(Json::Null) => Ok(None),
        Some(Json::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err("`doc` must be a string".into()),
    }
}

/// The fields of an object of `{name: type}` (absent: none), in the order written.
fn fields_of(value: Option<&Json>, at: &str, what: &str) -> Result<Vec<Field>, String> {
    match value {
        None => Ok(Vec::new()),
        Some(Json::Object(entries)) => entries
            .iter()
            .map(|(name, t)| {
                if name.is_empty() {
                    return Err(format!("{at}: `{what}` has a field with an empty name"));
                }
                if name == "__proto__" {
                    return Err(format!(
                        "{at}: field `__proto__`: a JavaScript object cannot hold it as a plain \
                         field; rename it"
                    ));
                }
                let ty = parse_type(t, &format!("{at}: field `{name}`"))?;
                Ok(Field {
                    name: name.clone(),
                    ty,
                })
            })
            .collect(),
        Some(_) => Err(format!("{at}: `{what}` must be an object of name: type")),
    }
}

fn flag(t: &Json, name: &str, at: &str) -> Result<bool, String> {
    match t.get(name) {
        None => Ok(false),
        Some(Json::Bool(b)) => Ok(*b),
        Some(_) => Err(format!("{at}: `{name}` must be true or false")),
    }
}

fn parse_type(t: &Json, at: &str) -> Result<Type, String> {
    if !matches!(t, Json::Object(_)) {
        return Err(format!("{at}: a type is an object {{\"type\": …}}"));
    }
    let tag = match t.get("type") {
        Some(Json::String(s)) => s.as_str(),
        _ => return Err(format!("{at}: missing string field `type`")),
    };
    let kind = match tag {
        "string" => Kind::String,
        "bool" => Kind::Bool,
        "u32" => Kind::U32,
        "u64" => Kind::U64,
        "i64" => Kind::I64,
        "amount" => Kind::Amount,
        "address" => Kind::Address,
        "hex" => Kind::Hex,
        "any" => Kind::Any,
        "array" => match t.get("items") {
            Some(items) => Kind::Array(Box::new(parse_type(items, &format!("{at}: items"))?)),
            None => return Err(format!("{at}: an array needs `items`")),
        },
        "object" => Kind::Object(fields_of(t.get("fields"), at, "fields")?),
        "map" => match t.get("values") {
            Some(values) => Kind::Map(Box::new(parse_type(values, &format!("{at}: values"))?)),
            None => return Err(format!("{at}: a map needs `values` (a type)")),
        },
        "enum" => match t.get("values") {
            Some(Json::Array(values)) => {
                let mut out: Vec<String> = Vec::new();
                for v in values {
                    match v {
                        Json::String(s) if !out.contains(s) => out.push(s.clone()),
                        Json::String(s) => {
                            return Err(format!("{at}: enum value `{s}` is listed twice"))
                        }
                        _ => return Err(format!("{at}: enum values must be strings")),
                    }
                }
                if out.is_empty() {
                    return Err(format!("{at}: an enum needs at least one value"));
                }
                Kind::Enum(out)
            }
            _ => {
                return Err(format!(
                    "{at}: an enum needs `values` (an array of strings)"
                ))
            }
        },
        other => {
            return Err(format!(
                "{at}: unknown type `{other}` (string, bool, u32, u64, i64, amount, address, \
                 hex, array, object, map, enum or any)"
            ))
        }
    };
    Ok(Type {
        kind,
        optional: flag(t, "optional", at)?,
        nullable: flag(t, "nullable", at)?,
        doc: doc_field(t).map_err(|e| format!("{at}: {e}"))?,
    })
}

// ---------------------------------------------------------------------------------------------
// Names

/// Whether `name` can be written bare as a TypeScript identifier or property name.
fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// A property name: bare when an identifier, else a quoted string.
fn property(name: &str) -> String {
    if is_identifier(name) {
        name.to_string()
    } else {
        json_string(name)
    }
}

/// A JSON (and TypeScript) double-quoted string literal.
fn json_string(text: &str) -> String {
    // serde_json escapes control characters; bidi format characters are escaped too, so the
    // file reads as it runs.
    serde_json::to_string(text)
        .expect("strings serialise")
        .chars()
        .map(|c| {
            if is_bidi_format(c) {
                format!("\\u{:04x}", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// `claim_timeout` → `ClaimTimeout`, `tictactoe.created` → `TictactoeCreated`; refuses a name
/// that does not start with a letter or holds other than letters, digits, `_`, `.`, `-`.
fn pascal(name: &str, what: &str) -> Result<String, String> {
    let ok = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if !ok {
        return Err(format!(
            "schema: {what} `{name}` cannot name TypeScript functions and types: it must start \
             with a letter and hold only letters, digits, `_`, `.` and `-`"
        ));
    }
    Ok(name
        .split(['_', '.', '-'])
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            let first = chars.next().map(|c| c.to_ascii_uppercase());
            first.into_iter().chain(chars).collect::<String>()
        })
        .collect())
}

fn camel(pascal: &str) -> String {
    let mut chars = pascal.chars();
    let first = chars.next().map(|c| c.to_ascii_lowercase());
    first.into_iter().chain(chars).collect()
}

/// Every top-level identifier of the generated file, with what it names; a second use is
/// refused.
struct Names(BTreeMap<String, String>);

impl Names {
    fn take(&mut self, name: &str, what: &str) -> Result<(), String> {
        if let Some(before) = self.0.get(name) {
            return Err(format!(
                "schema: the TypeScript name `{name}` would stand for both {before} and {what}: \
                 rename one of them in the module's schema"
            ));
        }
        self.0.insert(name.to_string(), what.to_string());
        Ok(())
    }
}

/// The names of the generated file, one per declaration of the schema.
struct Naming {
    prefix: String,
    ops: Vec<(String, String)>,
    events: Vec<String>,
    views: Vec<String>,
}

/// Members of the client class besides the ops' and views' methods.
const CLASS_MEMBERS: [&str; 11] = [
    "chain",
    // A `then` method would make the client "thenable": `await client` would call it.
    "then",
    "sendOp",
    "constructor",
    "toString",
    "toLocaleString",
    "valueOf",
    "hasOwnProperty",
    "isPrototypeOf",
    "propertyIsEnumerable",
    "__proto__",
];

/// A module id as a TypeScript (and Rust) type name: `mnk` → `Mnk`, `my_game_2` → `MyGame2`
/// (each `_`-separated part capitalised, the underscores dropped).
pub fn type_name(name: &str) -> String {
    name.split('_')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            let first = chars.next().map(|c| c.to_ascii_uppercase());
            first.into_iter().chain(chars).collect::<String>()
        })
        .collect()
}

fn naming(schema: &Schema) -> Result<Naming, String> {
    let prefix = type_name(&schema.module);
    let mut names = Names(BTreeMap::new());
    for fixed in [
        "MODULE",
        "SCHEMA_SHA256",
        "SchemaError",
        "OpRefused",
        "SendOptions",
        "OpResult",
        "gameAction",
        "isEventKind",
        "parseEvent",
        "eventsOf",
    ] {
        names.take(fixed, "a helper of the generated file")?;
    }
    for suffix in ["Op", "Event", "EventKind", "Client"] {
        names.take(
            &format!("{prefix}{suffix}"),
            "a helper of the generated file",
        )?;
    }
    let mut members = Names(BTreeMap::new());
    for m in CLASS_MEMBERS {
        members.take(m, "a member of the client class")?;
    }
    let mut ops = Vec::new();
    for op in &schema.ops {
        let p = pascal(&op.kind, "op kind")?;
        let what = format!("op `{}`", op.kind);
        names.take(&format!("{p}Args"), &what)?;
        names.take(&format!("{}Op", camel(&p)), &what)?;
        members.take(&camel(&p), &what)?;
        ops.push((p.clone(), camel(&p)));
    }
    let mut events = Vec::new();
    let module_prefix = format!("{}.", schema.module);
    for event in &schema.events {
        let short = event
            .kind
            .strip_prefix(&module_prefix)
            .filter(|s| !s.is_empty())
            .unwrap_or(&event.kind);
        let p = pascal(short, "event kind")?;
        let what = format!("event `{}`", event.kind);
        names.take(&format!("{p}Data"), &what)?;
        names.take(&format!("{p}Event"), &what)?;
        events.push(p);
    }
    let mut views = Vec::new();
    for view in &schema.views {
        let p = pascal(&view.name, "view name")?;
        let what = format!("view `{}`", view.name);
        names.take(&format!("{p}Query"), &what)?;
        names.take(&format!("{p}Answer"), &what)?;
        names.take(&format!("view{p}"), &what)?;
        members.take(&format!("view{p}"), &what)?;
        views.push(p);
    }
    Ok(Naming {
        prefix,
        ops,
        events,
        views,
    })
}

// ---------------------------------------------------------------------------------------------
// Writing TypeScript

/// Unicode's bidirectional formatting characters (embeddings, overrides, isolates, marks).
fn is_bidi_format(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// A doc comment at `indent`, or nothing. `*/` inside is broken up; control and bidi format
/// characters are written as `\u{…}`.
fn doc_comment(out: &mut String, indent: &str, text: Option<&str>) {
    let Some(text) = text.map(str::trim).filter(|t| !t.is_empty()) else {
        return;
    };
    // Control and bidirectional-format characters are written as escapes, so a schema's text
    // can neither move a terminal's cursor nor reorder what a reader of the file sees.
    let text: String = text
        .replace("*/", "*\\/")
        .chars()
        .map(|c| {
            if (c.is_control() && c != '\n') || is_bidi_format(c) {
                format!("\\u{{{:04x}}}", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect();
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    if lines.len() == 1 {
        let _ = writeln!(out, "{indent}/** {} */", lines[0]);
    } else {
        let _ = writeln!(out, "{indent}/**");
        for line in lines {
            if line.is_empty() {
                let _ = writeln!(out, "{indent} *");
            } else {
                let _ = writeln!(out, "{indent} * {line}");
            }
        }
        let _ = writeln!(out, "{indent} */");
    }
}

/// The TypeScript type of `ty`: as the program sees it (`wire` false: amounts are `bigint`) or
/// as the JSON carries it (`wire` true: amounts are decimal strings). Nullable adds `| null`.
/// Objects span lines at `indent` (with their fields' docs), or one line when `indent` is None.
fn ts_type(ty: &Type, wire: bool, indent: Option<&str>) -> String {
    let base = match &ty.kind {
        Kind::String | Kind::Address | Kind::Hex => "string".to_string(),
        Kind::Bool => "boolean".to_string(),
        Kind::U32 | Kind::U64 | Kind::I64 => "number".to_string(),
        Kind::Amount if wire => "string".to_string(),
        Kind::Amount => "bigint".to_string(),
        Kind::Any => "unknown".to_string(),
        Kind::Array(items) => format!("Array<{}>", ts_type(items, wire, indent)),
        Kind::Object(fields) => ts_object(fields, wire, indent),
        Kind::Map(values) => format!("{{ [key: string]: {} }}", ts_type(values, wire, indent)),
        Kind::Enum(values) => values
            .iter()
            .map(|v| json_string(v))
            .collect::<Vec<_>>()
            .join(" | "),
    };
    if ty.nullable {
        format!("{base} | null")
    } else {
        base
    }
}

/// `{ … }`: over several lines at `indent`, each field with its doc; on one line without docs
/// when `indent` is None; `{}` without fields.
fn ts_object(fields: &[Field], wire: bool, indent: Option<&str>) -> String {
    if fields.is_empty() {
        return "{}".to_string();
    }
    let field = |f: &Field, inner: Option<&str>| {
        format!(
            "{}{}: {};",
            property(&f.name),
            if f.ty.optional { "?" } else { "" },
            ts_type(&f.ty, wire, inner)
        )
    };
    let Some(indent) = indent else {
        let items: Vec<String> = fields.iter().map(|f| field(f, None)).collect();
        let line = items.join(" ");
        return format!("{{ {} }}", line.trim_end_matches(';'));
    };
    let inner = format!("{indent}  ");
    let mut out = String::from("{\n");
    for f in fields {
        doc_comment(&mut out, &inner, f.ty.doc.as_deref());
        let _ = writeln!(out, "{inner}{}", field(f, Some(&inner)));
    }
    out.push_str(indent);
    out.push('}');
    out
}

/// The runtime descriptor of a type (`_Ty`), one line.
fn descriptor(ty: &Type) -> String {
    let mut out = format!("{{ t: {}", json_string(ty.kind.tag()));
    if ty.optional {
        out.push_str(", o: true");
    }
    if ty.nullable {
        out.push_str(", n: true");
    }
    match &ty.kind {
        Kind::Array(items) => {
            let _ = write!(out, ", i: {}", descriptor(items));
        }
        Kind::Object(fields) => {
            let _ = write!(out, ", f: {}", fields_descriptor(fields));
        }
        Kind::Map(values) => {
            let _ = write!(out, ", v: {}", descriptor(values));
        }
        Kind::Enum(values) => {
            let list: Vec<String> = values.iter().map(|v| json_string(v)).collect();
            let _ = write!(out, ", e: [{}]", list.join(", "));
        }
        _ => {}
    }
    out.push_str(" }");
    out
}

fn fields_descriptor(fields: &[Field]) -> String {
    let items: Vec<String> = fields
        .iter()
        .map(|f| format!("[{}, {}]", json_string(&f.name), descriptor(&f.ty)))
        .collect();
    format!("[{}]", items.join(", "))
}

/// Whether every field may be left out (so an argument may default to `{}`).
fn all_optional(fields: &[Field]) -> bool {
    fields.iter().all(|f| f.ty.optional)
}

/// The fixed part of every generated file: errors, the descriptors' type, decoding and encoding.
const RUNTIME: &str = include_str!("codegen_ts_runtime.ts");

/// The runtime part a schema needs: the encoders only with ops or views, `_op` only with ops,
/// `_query` only with views (an unused function would fail `tsc --noUnusedLocals`).
fn runtime(ops: bool, views: bool) -> String {
    let (base, rest) = RUNTIME
        .split_once("//@encode\n")
        .expect("the runtime has //@encode");
    let (encode, rest) = rest.split_once("//@op\n").expect("the runtime has //@op");
    let (op, query) = rest
        .split_once("//@query\n")
        .expect("the runtime has //@query");
    let mut out = base.to_string();
    if ops || views {
        out.push_str(encode);
    }
    if ops {
        out.push_str(op);
    }
    if views {
        out.push_str(query);
    }
    out.truncate(out.trim_end().len());
    out.push('\n');
    out
}

/// The TypeScript client of the schema in `bytes` (see the top of this file). Errors: what is
/// wrong with the schema, or a name that cannot be written.
pub fn generate(bytes: &[u8]) -> Result<String, String> {
    let schema = parse_schema(bytes)?;
    let names = naming(&schema)?;
    let sha = hex::encode(Sha256::digest(bytes));
    let prefix = &names.prefix;
    let op_union = format!("{prefix}Op");
    let event_union = format!("{prefix}Event");
    let mut out = String::new();

    // Header.
    let _ = writeln!(
        out,
        "// Generated by `gamechain module codegen --ts` from the schema of module `{}`",
        schema.module
    );
    let _ = writeln!(
        out,
        "// (schema_version {SCHEMA_VERSION}; SHA-256 of its JSON: {sha}).\n// Do not edit: generate it again."
    );
    out.push_str(
        "//
// A typed client of the module on top of the gamechain JS SDK (@gamechain/sdk, type imports
// only): op builders and a client class that sends them (`chain.send`, then the receipt),
// typed views (`chain.game`) and typed events. Base-unit amounts are `bigint` (decimal strings
// on the wire, converted both ways); u32/u64/i64 fields are `number` (the schema bounds u64 to
// 2^53-1, so a number holds it exactly; an i64 beyond +-(2^53-1) is refused). Answers and events are checked
// against the schema as they are parsed: a mismatch is a SchemaError naming where.
// Needs TypeScript with `target` ES2020 or later (bigint).
",
    );
    out.push('\n');
    out.push_str("import type { Action, Chain, Key, Receipt } from '@gamechain/sdk';\n\n");
    let _ = writeln!(out, "/** The module id. */");
    let _ = writeln!(
        out,
        "export const MODULE = {};",
        json_string(&schema.module)
    );
    let _ = writeln!(
        out,
        "/** SHA-256 of the schema this file was generated from. */"
    );
    let _ = writeln!(out, "export const SCHEMA_SHA256 = {};", json_string(&sha));
    out.push('\n');
    out.push_str(&runtime(!schema.ops.is_empty(), !schema.views.is_empty()));

    // Ops.
    out.push_str("\n// ---- Ops\n\n");
    for (i, op) in schema.ops.iter().enumerate() {
        let (p, c) = &names.ops[i];
        let _ = writeln!(
            out,
            "const _OP_{i}: _Fields = {};",
            fields_descriptor(&op.fields)
        );
        let _ = writeln!(
            out,
            "/** The arguments of op `{}` (amounts as bigint). */",
            op.kind
        );
        let _ = writeln!(
            out,
            "export type {p}Args = {};",
            ts_object(&op.fields, false, Some(""))
        );
        let default = if all_optional(&op.fields) {
            " = {}"
        } else {
            ""
        };
        doc_comment(&mut out, "", op.doc.as_deref());
        let _ = writeln!(
            out,
            "export function {c}Op(args: {p}Args{default}): {op_union} {{\n  return _op<{op_union}>({}, _OP_{i}, args);\n}}\n",
            json_string(&op.kind)
        );
    }
    let _ = writeln!(
        out,
        "/** An op as sent: the `op` of `{{\"type\": \"game\", \"game\": {}, \"op\": …}}` (amounts as decimal strings). */",
        json_string(&schema.module)
    );
    if schema.ops.is_empty() {
        let _ = writeln!(out, "export type {op_union} = never;");
    } else {
        let _ = writeln!(out, "export type {op_union} =");
        for op in &schema.ops {
            let mut fields = vec![Field {
                name: "kind".into(),
                ty: Type {
                    kind: Kind::Enum(vec![op.kind.clone()]),
                    optional: false,
                    nullable: false,
                    doc: None,
                },
            }];
            fields.extend(op.fields.iter().cloned());
            let _ = writeln!(out, "  | {}", ts_object(&fields, true, None));
        }
        out.truncate(out.trim_end().len());
        out.push_str(";\n");
    }
    let _ = writeln!(
        out,
        "\n/** The SDK action of `op`, for `chain.send(key, gameAction(op))` or `chain.sign`. */\nexport function gameAction(op: {op_union}): Action {{\n  return {{ type: 'game', game: MODULE, op }};\n}}"
    );

    // Events.
    out.push_str("\n// ---- Events\n\n");
    for (i, event) in schema.events.iter().enumerate() {
        let p = &names.events[i];
        let _ = writeln!(
            out,
            "const _EV_{i}: _Fields = {};",
            fields_descriptor(&event.fields)
        );
        let _ = writeln!(out, "/** The `data` of event `{}`. */", event.kind);
        let _ = writeln!(
            out,
            "export type {p}Data = {};",
            ts_object(&event.fields, false, Some(""))
        );
        doc_comment(&mut out, "", event.doc.as_deref());
        let _ = writeln!(
            out,
            "export type {p}Event = {{ kind: {}; data: {p}Data }};\n",
            json_string(&event.kind)
        );
    }
    let _ = writeln!(
        out,
        "/** An event of this module, parsed: `kind` tells which (a discriminated union). */"
    );
    if schema.events.is_empty() {
        let _ = writeln!(out, "export type {event_union} = never;");
    } else {
        let variants: Vec<String> = names.events.iter().map(|p| format!("{p}Event")).collect();
        let _ = writeln!(
            out,
            "export type {event_union} =\n  | {};",
            variants.join("\n  | ")
        );
    }
    let _ = writeln!(
        out,
        "export type {event_union}Kind = {event_union}['kind'];"
    );
    let table: Vec<String> = schema
        .events
        .iter()
        .enumerate()
        .map(|(i, e)| format!("  [{}, _EV_{i}],\n", json_string(&e.kind)))
        .collect();
    let _ = write!(
        out,
        "const _EVENTS: ReadonlyArray<readonly [string, _Fields]> = [\n{}];\n",
        table.concat()
    );
    let _ = write!(
        out,
        "
/** Whether `kind` is one of this module's event kinds. */
export function isEventKind(kind: string): kind is {event_union}Kind {{
  return _EVENTS.some(([k]) => k === kind);
}}

/**
 * An event of a receipt or block, parsed (amounts as bigint); null for another module's kind
 * (or one the schema does not list). A listed kind whose data does not match is a SchemaError.
 */
export function parseEvent(event: {{ kind: string; data: unknown }}): {event_union} | null {{
  const found = _EVENTS.find(([k]) => k === event.kind);
  if (found === undefined) return null;
  return {{ kind: event.kind, data: _decodeFields(found[1], event.data, event.kind) }} as unknown as {event_union};
}}

/** This module's events of a receipt, parsed, in order (others left out). */
export function eventsOf(receipt: {{ events: ReadonlyArray<{{ kind: string; data: unknown }}> }}): {event_union}[] {{
  const out: {event_union}[] = [];
  for (const e of receipt.events) {{
    const parsed = parseEvent(e);
    if (parsed !== null) out.push(parsed);
  }}
  return out;
}}
"
    );

    // Views.
    out.push_str("\n// ---- Views\n\n");
    for (i, view) in schema.views.iter().enumerate() {
        let p = &names.views[i];
        let _ = writeln!(
            out,
            "const _VIEW_{i}_Q: _Fields = {};",
            fields_descriptor(&view.query)
        );
        let _ = writeln!(
            out,
            "const _VIEW_{i}_A: _Ty = {};",
            descriptor(&view.answer)
        );
        let _ = writeln!(out, "/** The query of view `{}`. */", view.name);
        let _ = writeln!(
            out,
            "export type {p}Query = {};",
            ts_object(&view.query, false, Some(""))
        );
        let mut answer_doc = format!("The answer of view `{}` (amounts as bigint).", view.name);
        if let Some(doc) = view
            .answer
            .doc
            .as_deref()
            .map(str::trim)
            .filter(|d| !d.is_empty())
        {
            answer_doc.push_str("\n\n");
            answer_doc.push_str(doc);
        }
        doc_comment(&mut out, "", Some(&answer_doc));
        let _ = writeln!(
            out,
            "export type {p}Answer = {};",
            ts_type(&view.answer, false, Some(""))
        );
        let default = if all_optional(&view.query) {
            " = {}"
        } else {
            ""
        };
        let mut doc = view.doc.clone().unwrap_or_default();
        if !doc.is_empty() {
            doc.push_str("\n\n");
        }
        doc.push_str(&format!(
            "`GET /v1/games/{}?…`, the answer checked and converted (SchemaError when it differs from the schema).",
            schema.module
        ));
        doc_comment(&mut out, "", Some(&doc));
        let _ = writeln!(
            out,
            "export async function view{p}(chain: Chain, query: {p}Query{default}): Promise<{p}Answer> {{
  const answer: unknown = await chain.game(MODULE, _query(_VIEW_{i}_Q, query, {name}));
  return _decode(_VIEW_{i}_A, answer, {name}) as {p}Answer;
}}
",
            name = json_string(&view.name)
        );
    }

    // The client.
    let _ = write!(
        out,
        "// ---- Client

/** How long `sendOp` and the op methods wait for the receipt (`chain.waitForReceipt`). */
export type SendOptions = {{ timeoutMs?: number; pollMs?: number }};
/** A sent op: its txid, its receipt (ok) and this module's events of it, parsed. */
export type OpResult = {{ txid: string; receipt: Receipt; events: {event_union}[] }};

/** The module's client over an SDK `Chain`: one method per op (signs, sends, waits), one per view. */
export class {prefix}Client {{
  readonly chain: Chain;

  constructor(chain: Chain) {{
    this.chain = chain;
  }}

  /**
   * Signs `op` with `key` (`chain.send`), waits for its receipt and parses its events. An op that
   * failed in its block is an OpRefused (with the receipt); no answer in time is the SDK's
   * `receipt_timeout` (the transaction may still be included).
   */
  async sendOp(key: Key, op: {op_union}, options: SendOptions = {{}}): Promise<OpResult> {{
    const txid = await this.chain.send(key, gameAction(op));
    const receipt = await this.chain.waitForReceipt(txid, options);
    if (!receipt.ok) throw new OpRefused(txid, receipt);
    return {{ txid, receipt, events: eventsOf(receipt) }};
  }}
"
    );
    for (i, op) in schema.ops.iter().enumerate() {
        let (p, c) = &names.ops[i];
        let default = if all_optional(&op.fields) {
            " = {}"
        } else {
            ""
        };
        out.push('\n');
        doc_comment(&mut out, "  ", op.doc.as_deref());
        let _ = writeln!(
            out,
            "  {c}(key: Key, args: {p}Args{default}, options?: SendOptions): Promise<OpResult> {{\n    return this.sendOp(key, {c}Op(args), options);\n  }}"
        );
    }
    for (i, view) in schema.views.iter().enumerate() {
        let p = &names.views[i];
        let default = if all_optional(&view.query) {
            " = {}"
        } else {
            ""
        };
        out.push('\n');
        doc_comment(&mut out, "  ", view.doc.as_deref());
        let _ = writeln!(
            out,
            "  view{p}(query: {p}Query{default}): Promise<{p}Answer> {{\n    return view{p}(this.chain, query);\n  }}"
        );
    }
    out.push_str("}\n");
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Where a schema comes from

/// The schema embedded in a module's `.wasm`: the payload of its custom section
/// [`WASM_SECTION`]. Errors: not wasm, a truncated section, or no such section (a module built
/// without a schema).
pub fn schema_from_wasm(wasm: &[u8]) -> Result<Vec<u8>, String> {
    if wasm.len() < 8 || &wasm[..4] != b"\0asm" {
        return Err("not a wasm module (no `\\0asm` magic)".into());
    }
    let mut at = 8;
    while at < wasm.len() {
        let id = wasm[at];
        at += 1;
        let (size, n) = leb_u32(&wasm[at..]).ok_or("a truncated section header")?;
        at += n;
        let end = at
            .checked_add(size as usize)
            .filter(|e| *e <= wasm.len())
            .ok_or("a section runs past the end of the file")?;
        if id == 0 {
            let (len, n) = leb_u32(&wasm[at..end]).ok_or("a truncated custom section name")?;
            let name_end = (at + n)
                .checked_add(len as usize)
                .filter(|e| *e <= end)
                .ok_or("a custom section name runs past its section")?;
            if &wasm[at + n..name_end] == WASM_SECTION.as_bytes() {
                return Ok(wasm[name_end..end].to_vec());
            }
        }
        at = end;
    }
    Err(format!(
        "no `{WASM_SECTION}` custom section: a module built without a schema (or by an older \
         gamechain-sdk)"
    ))
}

/// An unsigned LEB128 u32 and its length in bytes.
fn leb_u32(bytes: &[u8]) -> Option<(u32, usize)> {
    let mut value: u64 = 0;
    for (i, b) in bytes.iter().enumerate().take(5) {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return u32::try_from(value).ok().map(|v| (v, i + 1));
        }
    }
    None
}

// A path the build script's `#[path]` include resolves too (rustfmt follows it there).
#[cfg(test)]
#[path = "codegen_ts/tests.rs"]
mod tests;
