//! The compact column encodings of storage schema 2 (see the table in `storage.rs`). All of
//! them are part of the storage format: never change one in place; a new encoding needs a new
//! migration step (and a new way to tell old values from new ones).
//!
//! - **varint**: unsigned LEB128 (7 bits a byte, low first, high bit = more).
//! - **LZ** ([`compress`], [`decompress`]): a byte-oriented LZ77 over a window that starts with
//!   a dictionary. The stream is a sequence of ops: a byte `c < 0x80` is followed by `c + 1`
//!   literal bytes; a byte `c >= 0x80` copies `c - 0x80 + 4` bytes starting `d` bytes back
//!   from the end of (dictionary ‖ output so far), `d` a varint ≥ 1 following `c` (a copy may
//!   overlap what it writes). The output is what follows the dictionary.
//! - **body**: a transaction body is stored as the TEXT of its exact bytes, or as a BLOB of
//!   those bytes LZ-compressed against [`DICT`] when that is shorter (bodies up to
//!   [`MAX_COMPRESSED_BODY`] bytes).
//! - **signature**: the base64 text of a 65-byte signature is stored as the BLOB of the 65
//!   bytes when encoding them again gives exactly that text, else as the TEXT itself.
//! - **receipt** ([`encode_receipt`]): `flags` (u8: 1 = ok, 2 = an error follows, 4 = a fee
//!   follows) ‖ `fuel_used` varint ‖ [error: varint length ‖ UTF-8] ‖ [fee: varint (u128)] ‖
//!   event count varint ‖ each event: kind (varint length ‖ UTF-8) ‖ the [canonical
//!   JSON](gamechain_chain::canonical) text of its data (varint length ‖ UTF-8). A
//!   transaction's receipt is stored LZ-compressed against [`DICT`] ‖ its body bytes (events
//!   mostly repeat what the body says: addresses, amounts, game ids).
//! - **end-block receipts** ([`encode_end_block`]): count varint ‖ each: module id (varint
//!   length ‖ UTF-8) ‖ its receipt (varint length ‖ the receipt encoding, not compressed).

use gamechain_chain::canonical::canonical_json;
use gamechain_chain::{Event, Receipt};
use gamechain_sdk::Amount;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;

/// The LZ dictionary of bodies and receipts: fragments of the JSON a chain's transactions and
/// events repeat. Part of the storage format: never edit (see the module docs).
pub const DICT: &[u8] = br#"{"kind":"create","stake":"1"}}}{"kind":"join","id":"tictactoe.finished{"id":"","payout":"","reason":"line","result":"x_won","winner":"tictactoe.joined{"id":"","o":"tictactoe.created{"id":"","opponent":null,"stake":"","x":"tictactoe.moved{"board":"xo","by":"","cell":0,"id":"","turn":"faucet{"amount":"100000","to":"","token":"GOLD"}}{"type":"deploy","module":"","code":"AGFzbQEAAAA{"type":"faucet","token":"GOLD"}}transfer{"amount":"1","from":"{"chain_id":"gamechain-dev","from":"xx","nonce":1,"action":{"type":"game","game":"tictactoe","op":{"cell":0,"id":"{"chain_id":"gamechain-dev","from":"xx","nonce":1,"action":{"type":"transfer","to":"xx","token":"GOLD","amount":"1"}}"#;

/// Longest body stored compressed; longer ones (deploys) are stored as they are.
pub const MAX_COMPRESSED_BODY: usize = 64 * 1024;

/// Longest output [`decompress`] produces (a bound against damaged input).
const MAX_OUTPUT: usize = 64 << 20;

/// Shortest copy.
const MIN_MATCH: usize = 4;
/// Longest copy one op makes.
const MAX_MATCH: usize = 0x7F + MIN_MATCH;
/// Longest literal run one op carries.
const MAX_LITERALS: usize = 0x80;
/// log2 of the match finder's table size.
const HASH_BITS: u32 = 12;

/// Appends `v` as a varint.
pub fn put_varint(out: &mut Vec<u8>, mut v: u128) {
    loop {
        let byte = (v & 0x7F) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// Reads a varint at `*at`, advancing it. `None`: truncated, or above `u128`.
pub fn get_varint(data: &[u8], at: &mut usize) -> Option<u128> {
    let mut v: u128 = 0;
    let mut shift = 0u32;
    loop {
        let byte = *data.get(*at)?;
        *at += 1;
        if shift >= 128 || (shift == 126 && byte > 0x03) {
            return None;
        }
        v |= u128::from(byte & 0x7F) << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
        shift += 7;
    }
}

/// The match finder's table after every position of [`DICT`].
static DICT_TABLE: std::sync::LazyLock<Vec<u32>> = std::sync::LazyLock::new(|| {
    let mut table = vec![u32::MAX; 1 << HASH_BITS];
    for p in 0..DICT.len() - (MIN_MATCH - 1) {
        table[hash4(&DICT[p..])] = p as u32;
    }
    table
});

fn hash4(b: &[u8]) -> usize {
    let v = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    (v.wrapping_mul(2_654_435_761) >> (32 - HASH_BITS)) as usize
}

fn flush_literals(out: &mut Vec<u8>, literals: &[u8]) {
    for chunk in literals.chunks(MAX_LITERALS) {
        out.push((chunk.len() - 1) as u8);
        out.extend_from_slice(chunk);
    }
}

/// `input` LZ-compressed against `dict` (see the module docs). Deterministic; one candidate
/// per 4-byte hash, so linear in `dict.len() + input.len()`.
pub fn compress(dict: &[u8], input: &[u8]) -> Vec<u8> {
    let mut window = Vec::with_capacity(dict.len() + input.len());
    window.extend_from_slice(dict);
    window.extend_from_slice(input);
    // A dictionary that starts with [`DICT`] starts from its table made once (the same table
    // as hashing those positions here: the output does not depend on it).
    let (mut table, first) = if dict.len() >= DICT.len() && dict.starts_with(DICT) {
        (DICT_TABLE.clone(), DICT.len() - (MIN_MATCH - 1))
    } else {
        (vec![u32::MAX; 1 << HASH_BITS], 0)
    };
    for p in first..dict.len().saturating_sub(MIN_MATCH - 1) {
        table[hash4(&window[p..])] = p as u32;
    }
    let mut out = Vec::with_capacity(input.len() / 2 + 8);
    let mut literal_start = dict.len();
    let mut p = dict.len();
    while p < window.len() {
        let mut len = 0;
        let mut from = 0;
        if p + MIN_MATCH <= window.len() {
            let h = hash4(&window[p..]);
            let candidate = table[h];
            table[h] = p as u32;
            if candidate != u32::MAX {
                let c = candidate as usize;
                let max = MAX_MATCH.min(window.len() - p);
                while len < max && window[c + len] == window[p + len] {
                    len += 1;
                }
                from = c;
            }
        }
        if len >= MIN_MATCH {
            flush_literals(&mut out, &window[literal_start..p]);
            out.push(0x80 | (len - MIN_MATCH) as u8);
            put_varint(&mut out, (p - from) as u128);
            for q in p + 1..(p + len).min(window.len().saturating_sub(MIN_MATCH - 1)) {
                table[hash4(&window[q..])] = q as u32;
            }
            p += len;
            literal_start = p;
        } else {
            p += 1;
        }
    }
    flush_literals(&mut out, &window[literal_start..]);
    out
}

/// The bytes `data` ([`compress`]ed against `dict`) stand for. `None`: not such a stream (a
/// copy reaching before the dictionary, a truncated op, more than 64 MiB).
pub fn decompress(dict: &[u8], data: &[u8]) -> Option<Vec<u8>> {
    let mut window = Vec::with_capacity(dict.len() + data.len() * 3);
    window.extend_from_slice(dict);
    let mut at = 0;
    while at < data.len() {
        let c = data[at];
        at += 1;
        if c < 0x80 {
            let n = usize::from(c) + 1;
            window.extend_from_slice(data.get(at..at + n)?);
            at += n;
        } else {
            let len = usize::from(c - 0x80) + MIN_MATCH;
            let distance = usize::try_from(get_varint(data, &mut at)?).ok()?;
            if distance == 0 || distance > window.len() {
                return None;
            }
            let start = window.len() - distance;
            for i in 0..len {
                let b = window[start + i];
                window.push(b);
            }
        }
        if window.len() - dict.len() > MAX_OUTPUT {
            return None;
        }
    }
    Some(window.split_off(dict.len()))
}

/// A stored body column: the body text, or its compressed bytes when shorter.
pub enum BodyColumn<'a> {
    /// TEXT: the exact body.
    Text(&'a str),
    /// BLOB: the body LZ-compressed against [`DICT`].
    Compressed(Vec<u8>),
}

/// How `body` is stored.
pub fn encode_body(body: &str) -> BodyColumn<'_> {
    if body.len() <= MAX_COMPRESSED_BODY {
        let packed = compress(DICT, body.as_bytes());
        if packed.len() < body.len() {
            return BodyColumn::Compressed(packed);
        }
    }
    BodyColumn::Text(body)
}

/// The body a compressed body column holds. `None`: not a compressed body of UTF-8 text.
pub fn decode_body(packed: &[u8]) -> Option<String> {
    String::from_utf8(decompress(DICT, packed)?).ok()
}

/// The 65 bytes of `signature` when they encode back to exactly that base64 text.
pub fn signature_bytes(signature: &str) -> Option<Vec<u8>> {
    let bytes = BASE64.decode(signature).ok()?;
    (bytes.len() == 65 && BASE64.encode(&bytes) == signature).then_some(bytes)
}

/// The base64 text of a signature stored as bytes.
pub fn signature_text(bytes: &[u8]) -> String {
    BASE64.encode(bytes)
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_varint(out, s.len() as u128);
    out.extend_from_slice(s.as_bytes());
}

fn get_str(data: &[u8], at: &mut usize) -> Option<String> {
    let len = usize::try_from(get_varint(data, at)?).ok()?;
    let bytes = data.get(*at..at.checked_add(len)?)?;
    *at += len;
    String::from_utf8(bytes.to_vec()).ok()
}

/// The receipt encoding of `r` (uncompressed; see the module docs).
pub fn encode_receipt(r: &Receipt) -> Vec<u8> {
    let mut out = Vec::with_capacity(16);
    let flags = u8::from(r.ok) | (u8::from(r.error.is_some()) << 1) | (u8::from(r.fee.0 != 0) << 2);
    out.push(flags);
    put_varint(&mut out, u128::from(r.fuel_used));
    if let Some(error) = &r.error {
        put_str(&mut out, error);
    }
    if r.fee.0 != 0 {
        put_varint(&mut out, r.fee.0);
    }
    put_varint(&mut out, r.events.len() as u128);
    for e in &r.events {
        put_str(&mut out, &e.kind);
        put_str(&mut out, &canonical_json(&e.data));
    }
    out
}

/// Reads one receipt encoding at `*at`.
fn read_receipt(data: &[u8], at: &mut usize) -> Option<Receipt> {
    let flags = *data.get(*at)?;
    *at += 1;
    if flags & !7 != 0 {
        return None;
    }
    let fuel_used = u64::try_from(get_varint(data, at)?).ok()?;
    let error = if flags & 2 != 0 {
        Some(get_str(data, at)?)
    } else {
        None
    };
    let fee = if flags & 4 != 0 {
        match get_varint(data, at)? {
            0 => return None,
            fee => fee,
        }
    } else {
        0
    };
    let count = usize::try_from(get_varint(data, at)?).ok()?;
    let mut events = Vec::with_capacity(count.min(1024));
    for _ in 0..count {
        let kind = get_str(data, at)?;
        let data = serde_json::from_str(&get_str(data, at)?).ok()?;
        events.push(Event { kind, data });
    }
    Some(Receipt {
        ok: flags & 1 != 0,
        error,
        events,
        fuel_used,
        fee: Amount(fee),
    })
}

/// The receipt an (uncompressed) receipt encoding holds, all of `data`.
pub fn decode_receipt(data: &[u8]) -> Option<Receipt> {
    let mut at = 0;
    let r = read_receipt(data, &mut at)?;
    (at == data.len()).then_some(r)
}

/// The stored receipt column of a transaction with body `body`.
pub fn pack_receipt(r: &Receipt, body: &str) -> Vec<u8> {
    let mut dict = Vec::with_capacity(DICT.len() + body.len());
    dict.extend_from_slice(DICT);
    dict.extend_from_slice(body.as_bytes());
    compress(&dict, &encode_receipt(r))
}

/// The receipt a stored receipt column of a transaction with body `body` holds.
pub fn unpack_receipt(packed: &[u8], body: &str) -> Option<Receipt> {
    let mut dict = Vec::with_capacity(DICT.len() + body.len());
    dict.extend_from_slice(DICT);
    dict.extend_from_slice(body.as_bytes());
    decode_receipt(&decompress(&dict, packed)?)
}

/// The end-block receipts encoding of a block's `(module, receipt)` list.
pub fn encode_end_block(end_block: &[(String, Receipt)]) -> Vec<u8> {
    let mut out = Vec::new();
    put_varint(&mut out, end_block.len() as u128);
    for (module, receipt) in end_block {
        put_str(&mut out, module);
        let r = encode_receipt(receipt);
        put_varint(&mut out, r.len() as u128);
        out.extend_from_slice(&r);
    }
    out
}

/// The `(module, receipt)` list an end-block receipts encoding holds.
pub fn decode_end_block(data: &[u8]) -> Option<Vec<(String, Receipt)>> {
    let mut at = 0;
    let count = usize::try_from(get_varint(data, &mut at)?).ok()?;
    let mut out = Vec::with_capacity(count.min(1024));
    for _ in 0..count {
        let module = get_str(data, &mut at)?;
        let len = usize::try_from(get_varint(data, &mut at)?).ok()?;
        let end = at.checked_add(len)?;
        let receipt = decode_receipt(data.get(at..end)?)?;
        at = end;
        out.push((module, receipt));
    }
    (at == data.len()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lz_round_trips_and_uses_the_dictionary() {
        let dict = b"hello world, the dictionary";
        for input in [
            &b""[..],
            b"a",
            b"hello world",
            b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            b"the dictionary says hello world, the dictionary says hello",
        ] {
            let packed = compress(dict, input);
            assert_eq!(decompress(dict, &packed).unwrap(), input);
        }
        let long: Vec<u8> = (0..5000u32).map(|i| (i * 7919 % 251) as u8).collect();
        assert_eq!(decompress(&[], &compress(&[], &long)).unwrap(), long);
        assert!(compress(dict, b"hello world").len() < 5);
        // The table made once for DICT gives what hashing DICT each time gives.
        let body = br#"{"chain_id":"gamechain-dev","from":"xxURsC5wFbNzCrKzzQjeTqkLfEoZT6Y8F7","nonce":12,"action":{"type":"transfer","to":"xysuzCS9FmeSvPjxZHcZXkK8cwj9iEQBki","token":"GOLD","amount":"1"}}"#;
        let mut dict_body = DICT.to_vec();
        dict_body.extend_from_slice(body);
        for dict in [DICT, &dict_body[..]] {
            let seeded = compress(dict, body);
            let mut padded = vec![0u8; 3];
            padded.extend_from_slice(dict);
            // Same dictionary bytes behind a 3-byte prefix: not seeded, same matches.
            let plain = compress(&padded, body);
            assert_eq!(seeded, plain);
            assert_eq!(decompress(dict, &seeded).unwrap(), body);
        }
        assert!(compress(DICT, body).len() < body.len() / 2);
        // A copy reaching before the window, a truncated literal run: refused.
        assert!(decompress(b"ab", &[0x80, 3]).is_none());
        assert!(decompress(b"", &[5, b'a']).is_none());
    }

    #[test]
    fn receipts_and_signatures_round_trip() {
        let body = r#"{"chain_id":"c","from":"xxA","nonce":3,"action":{"type":"transfer","to":"xxB","token":"GOLD","amount":"7"}}"#;
        let receipts = [
            Receipt::success(
                vec![Event {
                    kind: "transfer".into(),
                    data: json!({"amount": "7", "from": "xxA", "to": "xxB", "token": "GOLD", "f": 1.5e300, "n": [null, true, -3]}),
                }],
                0,
            ),
            Receipt::failure("invalid: cell is taken", 123_456),
            Receipt {
                fee: Amount(u128::MAX),
                ..Receipt::failure("x", u64::MAX)
            },
        ];
        for r in &receipts {
            assert_eq!(decode_receipt(&encode_receipt(r)).as_ref(), Some(r));
            let packed = pack_receipt(r, body);
            assert_eq!(unpack_receipt(&packed, body).as_ref(), Some(r));
            assert_eq!(
                serde_json::to_string(&unpack_receipt(&packed, body).unwrap()).unwrap(),
                serde_json::to_string(r).unwrap()
            );
        }
        let end: Vec<(String, Receipt)> = receipts
            .iter()
            .map(|r| ("tictactoe".to_string(), r.clone()))
            .collect();
        assert_eq!(decode_end_block(&encode_end_block(&end)).unwrap(), end);
        assert_eq!(decode_end_block(&encode_end_block(&[])).unwrap(), vec![]);
        let BodyColumn::Compressed(packed) = encode_body(body) else {
            panic!("a transfer body compresses")
        };
        assert_eq!(decode_body(&packed).unwrap(), body);

        let sig = BASE64.encode([7u8; 65]);
        assert_eq!(signature_text(&signature_bytes(&sig).unwrap()), sig);
        assert!(signature_bytes("not base64").is_none());
        assert!(signature_bytes(&BASE64.encode([7u8; 64])).is_none());
    }
}
