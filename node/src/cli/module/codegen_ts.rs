//! `gamechain module codegen --ts`: a module schema (the JSON of `schema_version` 1,
//! docs/modules.md, "Typed clients") turned into one TypeScript file, a typed client of the
//! module on top of the JS SDK (`node/web/sdk`).
//!
//! The schema is the SDK's model, read by the SDK (`gamechain_sdk::schema`,
//! [`Schema::parse_relaxed`]: the chain's reader, in declaration order, omitted lists empty).
//! This file owns: what the TypeScript needs of a schema besides ([`parse_schema`]: module id,
//! field names, scalar query parameters), naming what it declares in TypeScript (escaping field
//! names, refusing names that cannot be identifiers and collisions), and the generated text;
//! also [`schema_from_wasm`], the schema embedded in a module's `.wasm` as the custom section
//! `gamechain.schema` (read with wasmparser). Where the schema comes from on the command line
//! (`--schema`, `--wasm`, `--node --module`) and writing the file is `module.rs`.
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
use gamechain_sdk::schema::{Field, Schema, Type, TypeKind, SCHEMA_VERSION, SECTION};
use sha2::{Digest, Sha256};

// ---------------------------------------------------------------------------------------------
// The schema: the SDK's model (`gamechain_sdk::schema`), read as the SDK reads it

/// Parses and checks a schema's JSON bytes with the SDK's reader in its relaxed form
/// ([`Schema::parse_relaxed`]: the chain's format, except that omitted lists are empty), in
/// declaration order, then what the generated TypeScript needs besides: a valid module id,
/// fields with names a JavaScript object can hold, scalar query parameters. Errors say where:
/// `invalid module schema: ops[2].fields.cell: unknown type `u8``, `schema: views[0] (game):
/// query parameter …`.
pub fn parse_schema(bytes: &[u8]) -> Result<Schema, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "schema: not UTF-8".to_string())?;
    // Another format version gets a word on what to do rather than the reader's refusal.
    if let Ok(serde_json::Value::Object(top)) = serde_json::from_str(text) {
        match top.get("schema_version") {
            Some(v) if v.as_u64() != Some(SCHEMA_VERSION) && v.is_number() => {
                return Err(format!(
                    "schema: schema_version {v}: this gamechain writes clients for \
                     schema_version {SCHEMA_VERSION} only (a newer gamechain may read it)"
                ))
            }
            _ => {}
        }
    }
    let schema = Schema::parse_relaxed(text).map_err(|e| e.to_string())?;
    check_module_id(&schema.module).map_err(|e| match e {
        GenesisError::Invalid(m) => format!("schema: {m}"),
        other => format!("schema: {other}"),
    })?;
    for (i, op) in schema.ops.iter().enumerate() {
        check_fields(&op.fields, &format!("schema: ops[{i}] ({})", op.kind))?;
    }
    for (i, event) in schema.events.iter().enumerate() {
        check_fields(
            &event.fields,
            &format!("schema: events[{i}] ({})", event.kind),
        )?;
    }
    for (i, view) in schema.views.iter().enumerate() {
        let at = format!("schema: views[{i}] ({})", view.name);
        check_fields(&view.query, &at)?;
        check_type(&view.answer, &format!("{at}: answer"))?;
        for f in &view.query {
            if matches!(
                f.ty.kind,
                TypeKind::Array(_) | TypeKind::Object(_) | TypeKind::Map(_) | TypeKind::Any
            ) {
                return Err(format!(
                    "{at}: query parameter `{}` has type {}: a query parameter is a string, \
                     bool, u32, u64, i64, amount, address, hex or enum",
                    f.name,
                    f.ty.kind.name()
                ));
            }
        }
    }
    Ok(schema)
}

/// Refuses, at any depth, a field the generated code cannot hold: an empty name, or
/// `__proto__` (a plain JavaScript object's prototype, not a field).
fn check_fields(fields: &[Field], at: &str) -> Result<(), String> {
    for f in fields {
        if f.name.is_empty() {
            return Err(format!("{at}: a field with an empty name"));
        }
        if f.name == "__proto__" {
            return Err(format!(
                "{at}: field `__proto__`: a JavaScript object cannot hold it as a plain field; \
                 rename it"
            ));
        }
        check_type(&f.ty, &format!("{at}: field `{}`", f.name))?;
    }
    Ok(())
}

fn check_type(ty: &Type, at: &str) -> Result<(), String> {
    match &ty.kind {
        TypeKind::Array(items) => check_type(items, &format!("{at}: items")),
        TypeKind::Map(values) => check_type(values, &format!("{at}: values")),
        TypeKind::Object(fields) => check_fields(fields, at),
        _ => Ok(()),
    }
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
fn doc_comment(out: &mut String, indent: &str, text: &str) {
    let text = text.trim();
    if text.is_empty() {
        return;
    }
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
        TypeKind::String | TypeKind::Address | TypeKind::Hex => "string".to_string(),
        TypeKind::Bool => "boolean".to_string(),
        TypeKind::U32 | TypeKind::U64 | TypeKind::I64 => "number".to_string(),
        TypeKind::Amount if wire => "string".to_string(),
        TypeKind::Amount => "bigint".to_string(),
        TypeKind::Any => "unknown".to_string(),
        TypeKind::Array(items) => format!("Array<{}>", ts_type(items, wire, indent)),
        TypeKind::Object(fields) => ts_object(fields, wire, indent),
        TypeKind::Map(values) => format!("{{ [key: string]: {} }}", ts_type(values, wire, indent)),
        TypeKind::Enum(values) => values
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
        doc_comment(&mut out, &inner, &f.ty.doc);
        let _ = writeln!(out, "{inner}{}", field(f, Some(&inner)));
    }
    out.push_str(indent);
    out.push('}');
    out
}

/// The runtime descriptor of a type (`_Ty`), one line.
fn descriptor(ty: &Type) -> String {
    let mut out = format!("{{ t: {}", json_string(ty.kind.name()));
    if ty.optional {
        out.push_str(", o: true");
    }
    if ty.nullable {
        out.push_str(", n: true");
    }
    match &ty.kind {
        TypeKind::Array(items) => {
            let _ = write!(out, ", i: {}", descriptor(items));
        }
        TypeKind::Object(fields) => {
            let _ = write!(out, ", f: {}", fields_descriptor(fields));
        }
        TypeKind::Map(values) => {
            let _ = write!(out, ", v: {}", descriptor(values));
        }
        TypeKind::Enum(values) => {
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
        doc_comment(&mut out, "", &op.doc);
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
                    kind: TypeKind::Enum(vec![op.kind.clone()]),
                    optional: false,
                    nullable: false,
                    doc: String::new(),
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
        doc_comment(&mut out, "", &event.doc);
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
        let doc = view.answer.doc.trim();
        if !doc.is_empty() {
            answer_doc.push_str("\n\n");
            answer_doc.push_str(doc);
        }
        doc_comment(&mut out, "", &answer_doc);
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
        let mut doc = view.doc.clone();
        if !doc.is_empty() {
            doc.push_str("\n\n");
        }
        doc.push_str(&format!(
            "`GET /v1/games/{}?…`, the answer checked and converted (SchemaError when it differs from the schema).",
            schema.module
        ));
        doc_comment(&mut out, "", &doc);
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
        doc_comment(&mut out, "  ", &op.doc);
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
        doc_comment(&mut out, "  ", &view.doc);
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
/// [`SECTION`] (`gamechain.schema`), read with wasmparser (the parser the chain's loader uses).
/// Errors: not wasm, a module wasmparser cannot read (where, as the chain's rule 2 says it),
/// or no such section (a module built without a schema).
pub fn schema_from_wasm(wasm: &[u8]) -> Result<Vec<u8>, String> {
    if !wasm.starts_with(b"\0asm") {
        return Err("not a wasm module (no `\\0asm` magic)".into());
    }
    for payload in wasmparser::Parser::new(0).parse_all(wasm) {
        match payload {
            Ok(wasmparser::Payload::CustomSection(r)) if r.name() == SECTION => {
                return Ok(r.data().to_vec())
            }
            Ok(_) => {}
            Err(e) => {
                return Err(format!(
                    "not a valid wasm module (at byte offset {})",
                    e.offset()
                ))
            }
        }
    }
    Err(format!(
        "no `{SECTION}` custom section: a module built without a schema (or by an older \
         gamechain-sdk)"
    ))
}

// A path the build script's `#[path]` include resolves too (rustfmt follows it there).
#[cfg(test)]
#[path = "codegen_ts/tests.rs"]
mod tests;
