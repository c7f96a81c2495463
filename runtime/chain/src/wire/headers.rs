//! `GET /v1/headers?from=<height>&count=<n>`: a run of consecutive block headers in their
//! binary form, the proof that a block descends from block 0 (`node/API.md`, "Headers").
//!
//! Body (`application/octet-stream`): for each height from `from` upward, `u32 LE length ‖ the
//! header's borsh bytes` (its SHA-256 is the block hash). A reader checks what it needs from
//! the headers themselves: each header's `height`, and each `prev_hash` against the hash of the
//! header before it; nothing in the framing is trusted.

use crate::Header;

/// Headers a node sends for one request at most (`count` above it is refused).
pub const MAX_HEADERS_PER_REQUEST: u64 = 1024;

/// The longest borsh header a reader accepts (a header is about 250 bytes: its sequencer
/// address, checkpoint and beacon are its only variable parts).
pub const MAX_HEADER_BYTES: usize = 2048;

/// The largest body of one answer: [`MAX_HEADERS_PER_REQUEST`] headers of at most
/// [`MAX_HEADER_BYTES`] with their length prefixes.
pub const MAX_HEADERS_BODY_BYTES: usize = MAX_HEADERS_PER_REQUEST as usize * (4 + MAX_HEADER_BYTES);

/// Appends one header's framing (`u32 LE length ‖ bytes`) to `out`.
pub fn encode_header(out: &mut Vec<u8>, borsh: &[u8]) {
    out.extend_from_slice(&(borsh.len() as u32).to_le_bytes());
    out.extend_from_slice(borsh);
}

/// Splits a body into its headers, decoded, each with its borsh bytes as sent. Errors (fixed
/// texts): a cut frame, a header longer than [`MAX_HEADER_BYTES`], bytes that are not one
/// whole borsh header, or more than [`MAX_HEADERS_PER_REQUEST`] headers.
pub fn decode_headers(mut body: &[u8]) -> Result<Vec<(Header, Vec<u8>)>, String> {
    let mut out = Vec::new();
    while !body.is_empty() {
        if out.len() as u64 >= MAX_HEADERS_PER_REQUEST {
            return Err(format!(
                "more than {MAX_HEADERS_PER_REQUEST} headers in one answer"
            ));
        }
        let Some((len, rest)) = body.split_first_chunk::<4>() else {
            return Err("a header's length is cut short".into());
        };
        let len = u32::from_le_bytes(*len) as usize;
        if len > MAX_HEADER_BYTES {
            return Err(format!(
                "a header of {len} bytes (at most {MAX_HEADER_BYTES})"
            ));
        }
        if rest.len() < len {
            return Err("a header is cut short".into());
        }
        let (bytes, rest) = rest.split_at(len);
        let header: Header =
            borsh::from_slice(bytes).map_err(|_| "bytes that are not a header".to_string())?;
        out.push((header, bytes.to_vec()));
        body = rest;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gamechain_sdk::Checkpoint;

    fn header(height: u64) -> Header {
        Header {
            height,
            prev_hash: [height as u8; 32],
            time_ms: 5,
            sequencer: "seq".into(),
            checkpoint: Checkpoint::default(),
            tx_root: [1; 32],
            receipt_root: [2; 32],
            state_root: [3; 32],
            beacon: None,
        }
    }

    #[test]
    fn headers_round_trip_and_damage_is_refused() {
        let mut body = Vec::new();
        for h in 0..3 {
            encode_header(&mut body, &header(h).to_borsh());
        }
        let got = decode_headers(&body).unwrap();
        assert_eq!(got.len(), 3);
        assert_eq!(got[2].0, header(2));
        assert_eq!(got[2].1, header(2).to_borsh());
        assert!(decode_headers(&[]).unwrap().is_empty());
        assert_eq!(
            decode_headers(&body[..body.len() - 1]).unwrap_err(),
            "a header is cut short"
        );
        assert_eq!(
            decode_headers(&body[..2]).unwrap_err(),
            "a header's length is cut short"
        );
        let mut long = Vec::new();
        encode_header(&mut long, &vec![0; MAX_HEADER_BYTES + 1]);
        assert!(decode_headers(&long)
            .unwrap_err()
            .contains("bytes (at most"));
        // A frame whose bytes hold a header and more is not one header.
        let mut extra = header(1).to_borsh();
        extra.push(0);
        let mut bad = Vec::new();
        encode_header(&mut bad, &extra);
        assert_eq!(
            decode_headers(&bad).unwrap_err(),
            "bytes that are not a header"
        );
        let mut many = Vec::new();
        for _ in 0..=MAX_HEADERS_PER_REQUEST {
            encode_header(&mut many, &header(0).to_borsh());
        }
        assert!(decode_headers(&many).unwrap_err().starts_with("more than"));
    }
}
