//! The proof that a snapshot's block belongs to this chain on a chain without validators: the
//! chain of headers from this genesis's block 0 up to it (`snapshot_join.rs`).
//!
//! A sequencer's header names no chain, so a block the same key signed on another chain (a
//! relaunched testnet that kept its key and chain id) passes every check of the block alone.
//! Its descent does not: block 0 is computed here from the genesis and its code, and each
//! header's `prev_hash` is the SHA-256 of the header below it, so only this chain's headers
//! link the block to it (finding others would take a SHA-256 preimage). The headers come from
//! the serving peer (`GET /v1/headers`) and are trusted for nothing: [`DescentCheck`] checks
//! each one as it arrives, in height order, and keeps only the last hash. Those it accepted
//! are written to a file in the join's directory ([`HeaderFile`]) and stored with the chain
//! (`old_headers`), so this node can prove its own blocks' descent to the next joiner.
//!
//! Cost: one request per [`MAX_HEADERS_PER_REQUEST`] blocks (about 260 KB), one SHA-256 of
//! about 250 bytes a block; a chain of a million blocks is about a thousand requests and
//! 260 MB, written to disk as it arrives (memory stays at one answer).
//!
//! [`MAX_HEADERS_PER_REQUEST`]: gamechain_chain::wire::headers::MAX_HEADERS_PER_REQUEST

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use gamechain_chain::wire::headers::{encode_header, MAX_HEADER_BYTES};
use gamechain_runtime::chain::Header;

/// Checks a run of headers from block 0 upward, one answer at a time.
#[derive(Debug)]
pub struct DescentCheck {
    /// The hash block 0 must have (computed from the genesis, never fetched).
    block0: [u8; 32],
    /// The height the next header must have.
    next: u64,
    /// The hash of the last header accepted.
    last: [u8; 32],
}

impl DescentCheck {
    /// A check starting at block 0, whose hash must be `block0`.
    pub fn new(block0: [u8; 32]) -> Self {
        DescentCheck {
            block0,
            next: 0,
            last: [0; 32],
        }
    }

    /// The height of the next header expected.
    pub fn next_height(&self) -> u64 {
        self.next
    }

    /// Accepts `headers`, the next ones in height order. Errors (fixed texts naming the
    /// height): an answer with no header, a header of another height, block 0 that is not this
    /// genesis's, a `prev_hash` that is not the hash of the header below.
    pub fn feed(&mut self, headers: &[(Header, Vec<u8>)]) -> Result<(), String> {
        if headers.is_empty() {
            return Err(format!("it sent no header from height {}", self.next));
        }
        for (header, _) in headers {
            if header.height != self.next {
                return Err(format!(
                    "it sent header {} where header {} belongs",
                    header.height, self.next
                ));
            }
            let hash = header.hash();
            if self.next == 0 {
                if hash != self.block0 {
                    return Err(format!(
                        "its block 0 is {}, this genesis's is {}: another chain",
                        hex::encode(hash),
                        hex::encode(self.block0)
                    ));
                }
            } else if header.prev_hash != self.last {
                return Err(format!(
                    "header {} does not follow header {} (its prev_hash is {}, not {})",
                    self.next,
                    self.next - 1,
                    hex::encode(header.prev_hash),
                    hex::encode(self.last)
                ));
            }
            self.last = hash;
            self.next += 1;
        }
        Ok(())
    }

    /// Whether the headers accepted so far reach `block` (at height `next_height()`): its
    /// `prev_hash` must be the hash of the last one (for block 0, it must be block 0). Errors:
    /// it does not descend from them.
    pub fn finish(&self, block: &Header) -> Result<(), String> {
        if block.height != self.next {
            return Err(format!(
                "the headers end at {}, the block is {}",
                self.next, block.height
            ));
        }
        let linked = if block.height == 0 {
            block.hash() == self.block0
        } else {
            block.prev_hash == self.last
        };
        if !linked {
            return Err(format!(
                "block {} does not descend from this genesis's block 0: another chain",
                block.height
            ));
        }
        Ok(())
    }
}

/// The accepted headers of a join, framed as the wire's (`u32 LE length ‖ borsh`), from block 0
/// up: written while fetching, read once by the import.
pub struct HeaderFile {
    path: PathBuf,
    out: BufWriter<File>,
}

impl HeaderFile {
    /// Creates (or truncates) the file at `path`. Errors: the file system's.
    pub fn create(path: &Path) -> std::io::Result<Self> {
        Ok(HeaderFile {
            path: path.to_path_buf(),
            out: BufWriter::new(File::create(path)?),
        })
    }

    /// Appends the borsh bytes of accepted headers. Errors: the file system's.
    pub fn append(&mut self, headers: &[(Header, Vec<u8>)]) -> std::io::Result<()> {
        let mut buf = Vec::new();
        for (_, bytes) in headers {
            encode_header(&mut buf, bytes);
        }
        self.out.write_all(&buf)
    }

    /// Flushes and fsyncs the file; returns its path. Errors: the file system's.
    pub fn finish(self) -> std::io::Result<PathBuf> {
        let file = self.out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        Ok(self.path)
    }
}

/// One header read back for the import: `(height, borsh)`, or a fixed text naming the damage.
pub type OldHeader = Result<(u64, Vec<u8>), String>;

/// The headers of the file at `path` as `(height, borsh)` from block 0 up, for the import; an
/// item is `Err` (a fixed text) when the file cannot be read or a frame is damaged.
pub fn read_header_file(path: &Path) -> std::io::Result<impl Iterator<Item = OldHeader>> {
    let mut reader = BufReader::new(File::open(path)?);
    let mut height = 0u64;
    let mut failed = false;
    Ok(std::iter::from_fn(move || {
        if failed {
            return None;
        }
        let mut len = [0u8; 4];
        match reader.read_exact(&mut len) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return None,
            Err(e) => {
                failed = true;
                return Some(Err(format!("the join's header file: {e}")));
            }
        }
        let len = u32::from_le_bytes(len) as usize;
        let mut bytes = vec![0; len.min(MAX_HEADER_BYTES + 1)];
        if len > MAX_HEADER_BYTES || reader.read_exact(&mut bytes).is_err() {
            failed = true;
            return Some(Err(format!(
                "the join's header file is damaged at header {height}"
            )));
        }
        height += 1;
        Some(Ok((height - 1, bytes)))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use gamechain_sdk::Checkpoint;

    fn chain(n: u64, salt: u64) -> Vec<Header> {
        let mut out: Vec<Header> = Vec::new();
        for height in 0..n {
            out.push(Header {
                height,
                prev_hash: out.last().map(Header::hash).unwrap_or([0; 32]),
                time_ms: salt,
                sequencer: "seq".into(),
                checkpoint: Checkpoint::default(),
                tx_root: [1; 32],
                receipt_root: [2; 32],
                state_root: [3; 32],
                beacon: None,
            });
        }
        out
    }

    fn framed(h: &[Header]) -> Vec<(Header, Vec<u8>)> {
        h.iter().map(|h| (h.clone(), h.to_borsh())).collect()
    }

    #[test]
    fn only_this_genesis_chain_reaches_the_block() {
        let ours = chain(10, 1);
        let theirs = chain(10, 2);
        let mut check = DescentCheck::new(ours[0].hash());
        check.feed(&framed(&ours[..4])).unwrap();
        check.feed(&framed(&ours[4..9])).unwrap();
        assert_eq!(check.next_height(), 9);
        check.finish(&ours[9]).unwrap();
        // Another chain's block at the same height does not descend from ours.
        assert!(check
            .finish(&theirs[9])
            .unwrap_err()
            .contains("another chain"));

        // Another chain's headers: refused at block 0.
        let mut check = DescentCheck::new(ours[0].hash());
        let e = check.feed(&framed(&theirs[..3])).unwrap_err();
        assert!(
            e.contains("its block 0 is") && e.contains("another chain"),
            "{e}"
        );

        // Our block 0, then theirs: refused where they part.
        let mut mixed = framed(&ours[..1]);
        mixed.extend(framed(&theirs[1..3]));
        let e = DescentCheck::new(ours[0].hash()).feed(&mixed).unwrap_err();
        assert!(e.starts_with("header 1 does not follow header 0"), "{e}");

        // A gap, a repeat, an empty answer.
        let mut check = DescentCheck::new(ours[0].hash());
        let e = check
            .feed(&framed(&[ours[0].clone(), ours[2].clone()]))
            .unwrap_err();
        assert_eq!(e, "it sent header 2 where header 1 belongs");
        let mut check = DescentCheck::new(ours[0].hash());
        assert_eq!(
            check.feed(&[]).unwrap_err(),
            "it sent no header from height 0"
        );
        // A snapshot of block 0 itself.
        DescentCheck::new(ours[0].hash()).finish(&ours[0]).unwrap();
        assert!(DescentCheck::new(ours[0].hash())
            .finish(&theirs[0])
            .is_err());
    }

    #[test]
    fn the_header_file_reads_back_what_was_written_and_names_damage() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("headers");
        let ours = chain(5, 1);
        let mut file = HeaderFile::create(&path).unwrap();
        file.append(&framed(&ours[..2])).unwrap();
        file.append(&framed(&ours[2..])).unwrap();
        let path = file.finish().unwrap();
        let back: Vec<_> = read_header_file(&path).unwrap().collect();
        assert_eq!(back.len(), 5);
        for (i, item) in back.into_iter().enumerate() {
            assert_eq!(item.unwrap(), (i as u64, ours[i].to_borsh()));
        }
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.truncate(bytes.len() - 3);
        std::fs::write(&path, &bytes).unwrap();
        let back: Vec<_> = read_header_file(&path).unwrap().collect();
        assert_eq!(back.len(), 5);
        assert_eq!(
            back[4].clone().unwrap_err(),
            "the join's header file is damaged at header 4"
        );
    }
}
