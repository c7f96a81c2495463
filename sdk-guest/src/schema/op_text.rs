//! The text a guest checks its ops against on chain (`docs/modules.md`, "Schema", "On chain"):
//! each op the schema declares, as its `kind` (a JSON string, as written), the length of its
//! `fields` text in decimal and that text (the object minified, without `doc` strings), one
//! after the other:
//!
//! ```text
//! "join"21{"id":{"type":"hex"}}"move"43{"id":{"type":"hex"},"cell":{"type":"u32"}}…
//! ```
//!
//! It is made **at compile time** by `const fn`s, so [`crate::export_module!`] embeds it as a
//! constant next to the full `gamechain.schema` section, and [`Schema::for_op`](super::Schema::for_op) reads from it
//! only the declaration of the op's kind.
//!
//! Why: every call of a module runs in a fresh instance (ABI.md, "Guest exports"), so whatever
//! a guest parses it parses again on every call, and JSON costs fuel by the byte. Tic-tac-toe's
//! schema is about 5 KB, almost all of it docs, events and views that an op check never reads;
//! its op text is 265 bytes, of which a `move` parses 43.
//!
//! The scanner reads any JSON text; one that is not JSON, or whose `ops` are not objects with a
//! string `kind` and an object `fields`, stops the build with a message (the chain would refuse
//! the module at load anyway, ABI.md, "Validation rules", rule 9). Where a key repeats, the last
//! one counts, as in [`Schema::parse`](super::Schema::parse). A member is dropped only when its key is exactly
//! `"doc"` and its value a string, so a field named `doc` (whose value is a type) stays.

/// The length of [`op_text_bytes`]'s result for `schema`.
pub const fn op_text_len(schema: &str) -> usize {
    reduce(schema.as_bytes(), &mut [])
}

/// The op text of `schema` as a byte array (`N` must be [`op_text_len`]`(schema)`; a
/// compile-time error otherwise).
#[doc(hidden)]
pub const fn op_text_bytes<const N: usize>(schema: &str) -> [u8; N] {
    let mut out = [0u8; N];
    assert!(reduce(schema.as_bytes(), &mut out) == N, "op text length");
    out
}

/// [`op_text_bytes`]'s array as text (it is UTF-8: the scanner cuts only at ASCII bytes).
#[doc(hidden)]
pub const fn op_text_str(bytes: &[u8]) -> &str {
    match core::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(_) => panic!("the op text is not UTF-8"),
    }
}

/// The op text of `schema`, as the glue embeds it (for tests and tools).
pub fn op_text(schema: &str) -> String {
    let mut out = vec![0u8; op_text_len(schema)];
    reduce(schema.as_bytes(), &mut out);
    String::from_utf8(out).expect("the scanner cuts only at ASCII bytes")
}

/// Writes the op text of `s` into `out` (as far as it fits; nothing when `out` is empty) and
/// returns its full length.
const fn reduce(s: &[u8], out: &mut [u8]) -> usize {
    let mut o = 0;
    let mut i = skip_ws(s, 0);
    if at(s, i) != b'{' {
        panic!("the schema text is not a JSON object");
    }
    i = skip_ws(s, i + 1);
    if at(s, i) == b'}' {
        i += 1;
    } else {
        loop {
            let (key, key_end, value_at) = member(s, i);
            if is(s, key, key_end, b"\"ops\"") {
                // A repeated `ops` replaces the one before it.
                o = ops(s, value_at, out, 0);
            }
            i = skip_ws(s, value_end(s, value_at));
            match at(s, i) {
                b',' => i = skip_ws(s, i + 1),
                b'}' => {
                    i += 1;
                    break;
                }
                _ => panic!("the schema text is not JSON: expected `,` or `}}`"),
            }
        }
    }
    if skip_ws(s, i) != s.len() {
        panic!("the schema text is not JSON: something follows its object");
    }
    o
}

/// The member whose key starts at `i` (a `"`): the key's bounds (quotes included) and where its
/// value starts.
const fn member(s: &[u8], i: usize) -> (usize, usize, usize) {
    if at(s, i) != b'"' {
        panic!("the schema text is not JSON: an object key is not a string");
    }
    let key_end = string_end(s, i);
    let j = skip_ws(s, key_end);
    if at(s, j) != b':' {
        panic!("the schema text is not JSON: a key without `:`");
    }
    (i, key_end, skip_ws(s, j + 1))
}

/// Writes the entries of the `ops` array at `i` at `o`; returns the next `o`.
const fn ops(s: &[u8], i: usize, out: &mut [u8], mut o: usize) -> usize {
    if at(s, i) != b'[' {
        panic!("the schema's `ops` is not an array");
    }
    let mut i = skip_ws(s, i + 1);
    if at(s, i) == b']' {
        return o;
    }
    loop {
        if at(s, i) != b'{' {
            panic!("an op of the schema is not an object");
        }
        // The last `kind` and `fields` of the op's object.
        let (mut kind, mut fields) = (0, 0);
        i = skip_ws(s, i + 1);
        if at(s, i) != b'}' {
            loop {
                let (key, key_end, value_at) = member(s, i);
                if is(s, key, key_end, b"\"kind\"") {
                    kind = value_at;
                } else if is(s, key, key_end, b"\"fields\"") {
                    fields = value_at;
                }
                i = skip_ws(s, value_end(s, value_at));
                match at(s, i) {
                    b',' => i = skip_ws(s, i + 1),
                    b'}' => break,
                    _ => panic!("the schema text is not JSON: expected `,` or `}}`"),
                }
            }
        }
        if kind == 0 || at(s, kind) != b'"' || fields == 0 || at(s, fields) != b'{' {
            panic!("an op of the schema has no string `kind` or no object `fields`");
        }
        o = copy(s, kind, string_end(s, kind), out, o);
        let (_, len) = value(s, fields, &mut [], 0);
        o = decimal(out, o, len);
        (_, o) = value(s, fields, out, o);
        i = skip_ws(s, i + 1);
        match at(s, i) {
            b',' => i = skip_ws(s, i + 1),
            b']' => return o,
            _ => panic!("the schema text is not JSON: expected `,` or `]`"),
        }
    }
}

/// Writes `n` in decimal at `o`; returns the next `o`.
const fn decimal(out: &mut [u8], mut o: usize, n: usize) -> usize {
    let mut unit = 1;
    while n / unit >= 10 {
        unit *= 10;
    }
    loop {
        o = put(out, o, b'0' + (n / unit % 10) as u8);
        if unit == 1 {
            return o;
        }
        unit /= 10;
    }
}

/// The `fields` text of op `kind` in an op text ([`op_text`]), if it declares that kind.
pub(super) fn fields_of<'t>(ops: &'t str, kind: &str) -> Option<&'t str> {
    let s = ops.as_bytes();
    let mut i = 0;
    while i < s.len() {
        let kind_end = string_end(s, i);
        let mut fields_at = kind_end;
        let mut len = 0;
        while let Some(digit @ b'0'..=b'9') = s.get(fields_at) {
            len = len * 10 + usize::from(digit - b'0');
            fields_at += 1;
        }
        let fields_end = fields_at + len;
        // The kind as written, quotes off; one with an escape is decoded (rare).
        let raw = &s[i + 1..kind_end - 1];
        let same = raw == kind.as_bytes()
            || (raw.contains(&b'\\')
                && serde_json::from_str::<String>(&ops[i..kind_end]).is_ok_and(|k| k == kind));
        if same {
            return ops.get(fields_at..fields_end);
        }
        i = fields_end;
    }
    None
}

/// The byte at `i`; the end of the text is a malformed schema.
const fn at(s: &[u8], i: usize) -> u8 {
    if i >= s.len() {
        panic!("the schema text is not JSON: it ends too early");
    }
    s[i]
}

const fn skip_ws(s: &[u8], mut i: usize) -> usize {
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// Writes `b` at `o` when it fits; returns `o + 1`.
const fn put(out: &mut [u8], o: usize, b: u8) -> usize {
    if o < out.len() {
        out[o] = b;
    }
    o + 1
}

/// Writes `s[from..to]` at `o`; returns the next `o`.
const fn copy(s: &[u8], mut from: usize, to: usize, out: &mut [u8], mut o: usize) -> usize {
    while from < to {
        o = put(out, o, s[from]);
        from += 1;
    }
    o
}

/// Whether `s[from..to]` is `word`.
const fn is(s: &[u8], from: usize, to: usize, word: &[u8]) -> bool {
    if to - from != word.len() {
        return false;
    }
    let mut k = 0;
    while k < word.len() {
        if s[from + k] != word[k] {
            return false;
        }
        k += 1;
    }
    true
}

/// The index after the string that starts at `i` (a `"`).
const fn string_end(s: &[u8], mut i: usize) -> usize {
    i += 1;
    loop {
        match at(s, i) {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
}

/// The index after the value that starts at `i` (no leading whitespace).
const fn value_end(s: &[u8], mut i: usize) -> usize {
    match at(s, i) {
        b'"' => string_end(s, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            loop {
                match at(s, i) {
                    b'"' => i = string_end(s, i),
                    b'{' | b'[' => {
                        depth += 1;
                        i += 1;
                    }
                    b'}' | b']' => {
                        depth -= 1;
                        i += 1;
                        if depth == 0 {
                            return i;
                        }
                    }
                    _ => i += 1,
                }
            }
        }
        _ => {
            let start = i;
            while i < s.len() && !matches!(s[i], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
            {
                i += 1;
            }
            if i == start {
                panic!("the schema text is not JSON: a value is missing");
            }
            i
        }
    }
}

/// Copies the value at `i` (after whitespace) minified to `out` at `o`, dropping `"doc"`
/// string members of objects. Returns the index after the value and the next `o`.
const fn value(s: &[u8], i: usize, out: &mut [u8], o: usize) -> (usize, usize) {
    let mut i = skip_ws(s, i);
    let mut o = o;
    match at(s, i) {
        b'{' => {
            o = put(out, o, b'{');
            i = skip_ws(s, i + 1);
            if at(s, i) == b'}' {
                return (i + 1, put(out, o, b'}'));
            }
            let mut first = true;
            loop {
                let (key, key_end, mut j) = member(s, i);
                if is(s, key, key_end, b"\"doc\"") && at(s, j) == b'"' {
                    j = value_end(s, j);
                } else {
                    if !first {
                        o = put(out, o, b',');
                    }
                    first = false;
                    o = copy(s, key, key_end, out, o);
                    o = put(out, o, b':');
                    (j, o) = value(s, j, out, o);
                }
                i = skip_ws(s, j);
                match at(s, i) {
                    b',' => i = skip_ws(s, i + 1),
                    b'}' => return (i + 1, put(out, o, b'}')),
                    _ => panic!("the schema text is not JSON: expected `,` or `}}`"),
                }
            }
        }
        b'[' => {
            o = put(out, o, b'[');
            i = skip_ws(s, i + 1);
            if at(s, i) == b']' {
                return (i + 1, put(out, o, b']'));
            }
            let mut first = true;
            loop {
                if !first {
                    o = put(out, o, b',');
                }
                first = false;
                (i, o) = value(s, i, out, o);
                i = skip_ws(s, i);
                match at(s, i) {
                    b',' => i += 1,
                    b']' => return (i + 1, put(out, o, b']')),
                    _ => panic!("the schema text is not JSON: expected `,` or `]`"),
                }
            }
        }
        _ => {
            let end = value_end(s, i);
            (end, copy(s, i, end, out, o))
        }
    }
}
