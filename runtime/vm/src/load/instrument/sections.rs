//! The module-level pieces of the rewriting: the reserved export prefix, section order, and the
//! global and export sections with the added entries.

use wasmparser::BinaryReader;

use crate::load::encode::*;

/// What reading a module's bytes gives: a value or wasmparser's error.
pub(super) type Res<T> = Result<T, wasmparser::BinaryReaderError>;

/// `__gamechain_`, with `_` added until no export of the module starts with it.
pub(super) fn reserved_prefix(exports: &[String]) -> String {
    let mut prefix = String::from("__gamechain_");
    while exports.iter().any(|e| e.starts_with(&prefix)) {
        prefix.push('_');
    }
    prefix
}

/// The order of non-custom sections in a module (the spec's, with tags and data count).
pub(super) fn rank(id: u8) -> u8 {
    match id {
        1..=5 => id,
        13 => 6,
        6..=9 => id + 1,
        12 => 11,
        10 => 12,
        11 => 13,
        _ => u8::MAX,
    }
}

/// The globals added, in order: `dirty` = `(global (mut i64) (i64.const 0))`, the stack
/// height = `(global (mut i32) (i32.const 0))`, then the fuel counter =
/// `(global (mut i64) (i64.const 0))` (`meter.rs`; the host sets it before every call).
pub(super) const ADDED_GLOBALS: [u8; 15] = [
    I64, 0x01, 0x42, 0x00, 0x0B, I32, 0x01, 0x41, 0x00, 0x0B, I64, 0x01, 0x42, 0x00, 0x0B,
];

/// A vector section's item count and the bytes of its items.
pub(super) fn split_count(contents: &[u8], offset: usize) -> Res<(u32, &[u8])> {
    let mut r = BinaryReader::new(contents, offset);
    let count = r.read_var_u32()?;
    Ok((count, &contents[r.original_position() - offset..]))
}

pub(super) fn globals_with(items: &[u8], count: u32) -> Vec<u8> {
    let mut s = Vec::with_capacity(items.len() + 15);
    leb_u32(&mut s, count + 3);
    s.extend_from_slice(items);
    s.extend_from_slice(&ADDED_GLOBALS);
    s
}

/// The export section: the module's `count` exports (`items`), then `added` as
/// `(name, kind byte, index)`.
pub(super) fn exports_with(items: &[u8], count: u32, added: &[(String, u8, u32)]) -> Vec<u8> {
    let mut s = Vec::with_capacity(items.len() + 32 * added.len());
    leb_u32(&mut s, count + added.len() as u32);
    s.extend_from_slice(items);
    for (name, kind, index) in added {
        leb_u32(&mut s, name.len() as u32);
        s.extend_from_slice(name.as_bytes());
        s.push(*kind);
        leb_u32(&mut s, *index);
    }
    s
}
