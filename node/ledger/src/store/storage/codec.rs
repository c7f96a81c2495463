//! The compact column encodings of storage schema 2 (see the table in `storage.rs`). All of
//! them are part of the storage format: never change one in place; a new encoding needs a new
//! migration step (and a new way to tell old values from new ones).
//!
//! - **varint**: unsigned LEB128 (7 bits a byte, low first, high bit = more).
//! - **compressed** ([`compress`], [`decompress`]): the uncompressed length as a varint ‖ an
//!   LZ4 block (the LZ4 block format, without a frame) of those bytes made against a
//!   dictionary, LZ4's "external dictionary": a match may reach back into its last 64 KiB.
//!   Made and read with the `lz4_flex` crate; any LZ4 encoder's block decodes the same, so a
//!   newer `lz4_flex` that compresses differently needs no migration. A reader refuses a length
//!   above the column's bound ([`MAX_COMPRESSED_BODY`] for a body, [`MAX_RECEIPT`] for a
//!   receipt) before allocating, and a block that does not decode to exactly that many bytes.
//! - **body**: a transaction body is stored as the TEXT of its exact bytes, or as a BLOB of
//!   those bytes compressed against [`DICT`] when that is shorter (bodies up to
//!   [`MAX_COMPRESSED_BODY`] bytes).
//! - **signature**: the base64 text of a 65-byte signature is stored as the BLOB of the 65
//!   bytes when encoding them again gives exactly that text, else as the TEXT itself.
//! - **receipt** ([`encode_receipt`]): `flags` (u8: 1 = ok, 2 = an error follows, 4 = a fee
//!   follows) ‖ `fuel_used` varint ‖ [error: varint length ‖ UTF-8] ‖ [fee: varint (u128)] ‖
//!   event count varint ‖ each event: kind (varint length ‖ UTF-8) ‖ the [canonical
//!   JSON](gamechain_chain::canonical) text of its data (varint length ‖ UTF-8). A
//!   transaction's receipt is stored compressed against [`DICT`] ‖ its body bytes (events
//!   mostly repeat what the body says: addresses, amounts, game ids).
//! - **end-block receipts** ([`encode_end_block`]): count varint ‖ each: module id (varint
//!   length ‖ UTF-8) ‖ its receipt (varint length ‖ the receipt encoding, not compressed).
//!   A block that ran scheduled calls appends their receipts to the same column
//!   ([`encode_block_receipts`]): count varint ‖ each: module id (varint length ‖ UTF-8) ‖ call
//!   id varint ‖ its receipt (varint length ‖ encoding). A column without that tail (every
//!   block before scheduled calls existed) has none.

use gamechain_chain::canonical::canonical_json;
use gamechain_chain::{Event, Receipt, ScheduledReceipt};
use gamechain_sdk::Amount;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;

/// The compression dictionary of bodies and receipts: fragments of the JSON a chain's
/// transactions and events repeat. Part of the storage format: never edit (see the module docs).
pub const DICT: &[u8] = br#"{"kind":"create","stake":"1"}}}{"kind":"join","id":"tictactoe.finished{"id":"","payout":"","reason":"line","result":"x_won","winner":"tictactoe.joined{"id":"","o":"tictactoe.created{"id":"","opponent":null,"stake":"","x":"tictactoe.moved{"board":"xo","by":"","cell":0,"id":"","turn":"faucet{"amount":"100000","to":"","token":"GOLD"}}{"type":"deploy","module":"","code":"AGFzbQEAAAA{"type":"faucet","token":"GOLD"}}transfer{"amount":"1","from":"{"chain_id":"gamechain-dev","from":"xx","nonce":1,"action":{"type":"game","game":"tictactoe","op":{"cell":0,"id":"{"chain_id":"gamechain-dev","from":"xx","nonce":1,"action":{"type":"transfer","to":"xx","token":"GOLD","amount":"1"}}"#;

/// Longest body stored compressed; longer ones (deploys) are stored as they are. Also the
/// bound on the length a compressed body column may claim.
pub const MAX_COMPRESSED_BODY: usize = 64 * 1024;

/// Longest receipt encoding a receipt column may claim (64 MiB, eight times the consensus bound
/// of a whole block's event bytes, `MAX_BLOCK_EVENT_BYTES`): a damaged column claiming more is
/// refused before anything is allocated.
pub const MAX_RECEIPT: usize = 64 << 20;

/// How far back LZ4 reaches (64 KiB): the part of a dictionary that matters.
const WINDOW: usize = 64 * 1024;

/// Appends `v` as a varint (unsigned LEB128, `leb128fmt`).
pub fn put_varint(out: &mut Vec<u8>, v: u128) {
    let mut buf = [0u8; leb128fmt::max_len::<128>()];
    let mut len = 0;
    leb128fmt::encode_uint_slice::<u128, 128>(v, &mut buf, &mut len)
        .expect("a u128 fits the buffer of its longest encoding");
    out.extend_from_slice(&buf[..len]);
}

/// Reads a varint at `*at`, advancing it. `None`: truncated, or above `u128`.
pub fn get_varint(data: &[u8], at: &mut usize) -> Option<u128> {
    leb128fmt::decode_uint_slice::<u128, 128>(data, at).ok()
}

/// `input` compressed against `dict` (see **compressed** in the module docs): its length as a
/// varint ‖ the LZ4 block.
pub fn compress(dict: &[u8], input: &[u8]) -> Vec<u8> {
    let block = lz4_flex::block::compress_with_dict(input, dict);
    let mut out = Vec::with_capacity(block.len() + 4);
    put_varint(&mut out, input.len() as u128);
    out.extend_from_slice(&block);
    out
}

/// The bytes `data` ([`compress`]ed against `dict`) stand for. `None`: a length above `max`
/// (refused before allocating), or not an LZ4 block of exactly that length against `dict`.
pub fn decompress(dict: &[u8], data: &[u8], max: usize) -> Option<Vec<u8>> {
    let mut at = 0;
    let len = usize::try_from(get_varint(data, &mut at)?).ok()?;
    if len > max {
        return None;
    }
    let out = lz4_flex::block::decompress_with_dict(&data[at..], len, dict).ok()?;
    (out.len() == len).then_some(out)
}

/// The last [`WINDOW`] bytes of `DICT ‖ body`: the dictionary a receipt is compressed against
/// (LZ4 reaches back at most 64 KiB, so the rest would change nothing).
fn receipt_dict(body: &str) -> Vec<u8> {
    let body = body.as_bytes();
    let body = &body[body.len().saturating_sub(WINDOW)..];
    let dict = &DICT[DICT.len().saturating_sub(WINDOW - body.len())..];
    let mut out = Vec::with_capacity(dict.len() + body.len());
    out.extend_from_slice(dict);
    out.extend_from_slice(body);
    out
}

/// A stored body column: the body text, or its compressed bytes when shorter.
pub enum BodyColumn<'a> {
    /// TEXT: the exact body.
    Text(&'a str),
    /// BLOB: the body compressed against [`DICT`].
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
    String::from_utf8(decompress(DICT, packed, MAX_COMPRESSED_BODY)?).ok()
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
    compress(&receipt_dict(body), &encode_receipt(r))
}

/// The receipt a stored receipt column of a transaction with body `body` holds.
pub fn unpack_receipt(packed: &[u8], body: &str) -> Option<Receipt> {
    decode_receipt(&decompress(&receipt_dict(body), packed, MAX_RECEIPT)?)
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

/// The end-block receipts column of a block: [`encode_end_block`], then the scheduled calls'
/// receipts when there are any (module docs).
pub fn encode_block_receipts(
    end_block: &[(String, Receipt)],
    scheduled: &[ScheduledReceipt],
) -> Vec<u8> {
    let mut out = encode_end_block(end_block);
    if !scheduled.is_empty() {
        put_varint(&mut out, scheduled.len() as u128);
        for s in scheduled {
            put_str(&mut out, &s.module);
            put_varint(&mut out, u128::from(s.id));
            let r = encode_receipt(&s.receipt);
            put_varint(&mut out, r.len() as u128);
            out.extend_from_slice(&r);
        }
    }
    out
}

/// What [`encode_block_receipts`] wrote: the end-block receipts and the scheduled calls'.
pub fn decode_block_receipts(
    data: &[u8],
) -> Option<(Vec<(String, Receipt)>, Vec<ScheduledReceipt>)> {
    let mut at = 0;
    let end_block = decode_end_block_at(data, &mut at)?;
    let mut scheduled = Vec::new();
    if at < data.len() {
        let count = usize::try_from(get_varint(data, &mut at)?).ok()?;
        scheduled.reserve(count.min(1024));
        for _ in 0..count {
            let module = get_str(data, &mut at)?;
            let id = u64::try_from(get_varint(data, &mut at)?).ok()?;
            let len = usize::try_from(get_varint(data, &mut at)?).ok()?;
            let end = at.checked_add(len)?;
            let receipt = decode_receipt(data.get(at..end)?)?;
            at = end;
            scheduled.push(ScheduledReceipt {
                module,
                id,
                receipt,
            });
        }
    }
    (at == data.len()).then_some((end_block, scheduled))
}

/// The `(module, receipt)` list an end-block receipts encoding holds.
pub fn decode_end_block(data: &[u8]) -> Option<Vec<(String, Receipt)>> {
    let mut at = 0;
    let out = decode_end_block_at(data, &mut at)?;
    (at == data.len()).then_some(out)
}

/// The end-block list starting at `*at`, leaving `*at` after it.
fn decode_end_block_at(data: &[u8], at: &mut usize) -> Option<Vec<(String, Receipt)>> {
    let count = usize::try_from(get_varint(data, at)?).ok()?;
    let mut out = Vec::with_capacity(count.min(1024));
    for _ in 0..count {
        let module = get_str(data, at)?;
        let len = usize::try_from(get_varint(data, at)?).ok()?;
        let end = at.checked_add(len)?;
        let receipt = decode_receipt(data.get(*at..end)?)?;
        *at = end;
        out.push((module, receipt));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn compression_round_trips_and_uses_the_dictionary() {
        let dict = b"hello world, the dictionary";
        for input in [
            &b""[..],
            b"a",
            b"hello world",
            &[b'a'; 300],
            b"the dictionary says hello world, the dictionary says hello",
        ] {
            let packed = compress(dict, input);
            assert_eq!(decompress(dict, &packed, input.len()).unwrap(), input);
            // The length is bounded: one byte less refuses it.
            if !input.is_empty() {
                assert!(decompress(dict, &packed, input.len() - 1).is_none());
            }
        }
        let long: Vec<u8> = (0..5000u32).map(|i| (i * 7919 % 251) as u8).collect();
        assert_eq!(decompress(&[], &compress(&[], &long), 5000).unwrap(), long);
        let body = br#"{"chain_id":"gamechain-dev","from":"xxURsC5wFbNzCrKzzQjeTqkLfEoZT6Y8F7","nonce":12,"action":{"type":"transfer","to":"xysuzCS9FmeSvPjxZHcZXkK8cwj9iEQBki","token":"GOLD","amount":"1"}}"#;
        // About half (92 of 182 bytes), where it would hardly shrink without the dictionary.
        assert!(compress(DICT, body).len() < body.len() * 11 / 20);
        assert!(compress(DICT, body).len() < compress(&[], body).len() * 2 / 3);
        // A receipt's dictionary is the last 64 KiB of DICT ‖ body: a long body's receipt still
        // round-trips, and its matches reach into the body.
        let long_body = format!(
            "{}{}",
            "x".repeat(WINDOW + 10),
            std::str::from_utf8(body).unwrap()
        );
        assert_eq!(receipt_dict(&long_body).len(), WINDOW);
        assert!(receipt_dict(&long_body).ends_with(body));
        let mut dict_body = DICT.to_vec();
        dict_body.extend_from_slice(body);
        assert_eq!(receipt_dict(std::str::from_utf8(body).unwrap()), dict_body);
    }

    #[test]
    fn damaged_compressed_values_are_refused() {
        let body = r#"{"chain_id":"c","from":"xxA","nonce":3,"action":{"type":"transfer","to":"xxB","token":"GOLD","amount":"7"}}"#;
        // A length above the bound is refused before allocating (here: 2^60 bytes).
        let mut huge = Vec::new();
        put_varint(&mut huge, 1 << 60);
        huge.extend_from_slice(&[0x10, b'a']);
        assert!(decompress(DICT, &huge, MAX_RECEIPT).is_none());
        assert!(decode_body(&huge).is_none());
        assert!(unpack_receipt(&huge, body).is_none());
        let mut too_long = Vec::new();
        put_varint(&mut too_long, (MAX_COMPRESSED_BODY + 1) as u128);
        assert!(decode_body(&too_long).is_none());
        // A length the block does not fill, a match reaching before the dictionary, a truncated
        // literal run, no length at all: refused.
        assert!(decompress(b"", &[5, 0x10, b'a'], 100).is_none());
        assert!(decompress(b"ab", &[8, 0x00, 0x03, 0x00], 100).is_none());
        assert!(decompress(b"", &[5, 0x50, b'a'], 100).is_none());
        assert!(decompress(b"", &[], 100).is_none());
        assert!(decompress(b"", &[0x80], 100).is_none());
        // Pseudo-random bytes, and every cut and one-byte change of real columns: never a
        // panic (the result is whatever they decode to, or None).
        let packed_body = match encode_body(body) {
            BodyColumn::Compressed(packed) => packed,
            BodyColumn::Text(_) => panic!("a transfer body compresses"),
        };
        let packed_receipt = pack_receipt(
            &Receipt::success(
                vec![Event {
                    kind: "transfer".into(),
                    data: json!({"amount": "7", "from": "xxA", "to": "xxB", "token": "GOLD"}),
                }],
                9,
            ),
            body,
        );
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..20_000 {
            let len = (next() % 64) as usize;
            let mut data: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if next() % 2 == 0 && !data.is_empty() {
                // A plausible length in front, so the block itself is read.
                data[0] = (next() % 0x80) as u8;
            }
            let _ = decode_body(&data);
            let _ = unpack_receipt(&data, body);
        }
        for packed in [&packed_body, &packed_receipt] {
            for cut in 0..packed.len() {
                let _ = decode_body(&packed[..cut]);
                let _ = unpack_receipt(&packed[..cut], body);
            }
            for at in 0..packed.len() {
                for bit in 0..8 {
                    let mut damaged = packed.clone();
                    damaged[at] ^= 1 << bit;
                    let _ = decode_body(&damaged);
                    let _ = unpack_receipt(&damaged, body);
                }
            }
        }
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
        // Without scheduled calls the column is exactly the end-block list.
        assert_eq!(encode_block_receipts(&end, &[]), encode_end_block(&end));
        let scheduled = vec![ScheduledReceipt {
            module: "dice".into(),
            id: 300,
            receipt: Receipt::failure("invalid: x", 9),
        }];
        let both = encode_block_receipts(&end, &scheduled);
        assert_eq!(
            decode_block_receipts(&both).unwrap(),
            (end.clone(), scheduled)
        );
        assert_eq!(
            decode_block_receipts(&encode_end_block(&end)).unwrap(),
            (end.clone(), vec![])
        );
        assert!(decode_end_block(&both).is_none());
        assert!(decode_block_receipts(&both[..both.len() - 1]).is_none());
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
