//! The wasm binary encoders the load-time rewriting needs: LEB128 integers, `*.const`
//! instructions, an instruction with one index immediate, a section with its size prefix, and
//! the bytes of the four number types. LEB128 itself is `wasm-encoder`'s.

use wasm_encoder::Encode as _;

/// The value type bytes of `i32`, `i64`, `f32` and `f64`.
pub(crate) const I32: u8 = 0x7F;
pub(crate) const I64: u8 = 0x7E;
pub(crate) const F32: u8 = 0x7D;
pub(crate) const F64: u8 = 0x7C;

pub(crate) fn section(out: &mut Vec<u8>, id: u8, contents: &[u8]) {
    out.push(id);
    leb_u32(out, contents.len() as u32);
    out.extend_from_slice(contents);
}

pub(crate) fn op_idx(out: &mut Vec<u8>, opcode: u8, index: u32) {
    out.push(opcode);
    leb_u32(out, index);
}

/// `i32.const v` (signed LEB128 immediate).
pub(crate) fn i32_const(out: &mut Vec<u8>, v: i32) {
    out.push(0x41);
    leb_i64(out, i64::from(v));
}

pub(crate) fn i64_const(out: &mut Vec<u8>, v: i64) {
    out.push(0x42);
    leb_i64(out, v);
}

/// Unsigned LEB128 of `v`, as the wasm binary format writes indices and sizes.
pub(crate) fn leb_u32(out: &mut Vec<u8>, v: u32) {
    v.encode(out);
}

/// Signed LEB128 of `v` (the immediates of `i32.const` and `i64.const`).
pub(crate) fn leb_i64(out: &mut Vec<u8>, v: i64) {
    v.encode(out);
}
