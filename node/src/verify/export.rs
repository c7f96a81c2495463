//! The export file: one self-contained file holding a chain (genesis, module code, every block
//! with its transactions, signatures and receipts, and the state at the head), written by
//! [`export`] (`gamechain export`) from any [`ChainSource`] and read back by [`FileSource`]
//! (`gamechain verify --file`) on a machine that has nothing else; on a chain with validators,
//! each block's line is followed by its recorded consensus digest and finality certificate. The format is documented in
//! `node/EXPORT.md`: JSON lines, a header line naming the format version and the genesis hash
//! first, an `end` line with the counts last (so a truncated file is refused).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use gamechain_runtime::chain::{Genesis, SignedHeader};
use gamechain_runtime::MemState;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::proof::evidence::MAX_EVIDENCE_BYTES;
use crate::verify::source::{ChainSource, ExpectedState, Finality, SourceError};
use gamechain_chain::wire::Block;
use gamechain_ledger::storage::{StoredEvidence, MAX_EVIDENCE};

/// The `format` of the header line.
pub const EXPORT_FORMAT: &str = "gamechain-export";
/// The format version this build writes. Version 2 added the `finality` lines of chains with
/// validators, version 3 their `evidence` lines; this build also reads versions 1 and 2 (the
/// same file without them).
pub const EXPORT_VERSION: u32 = 3;

/// The oldest format version this build reads.
pub const EXPORT_VERSION_OLDEST: u32 = 1;

/// The first line of an export file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportHeader {
    /// Always [`EXPORT_FORMAT`].
    pub format: String,
    /// [`EXPORT_VERSION`].
    pub version: u32,
    /// Lowercase hex of the genesis hash (the `genesis` line must hash to it).
    pub genesis_hash: String,
    /// The chain id.
    pub chain_id: String,
    /// The last block in the file.
    pub head_height: u64,
    /// That block's hash, lowercase hex.
    pub head_hash: String,
}

/// Every line after the header, tagged by `type`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
enum Line {
    /// The genesis file.
    Genesis { genesis: Box<Genesis> },
    /// One module's code: lowercase hex SHA-256 and base64 wasm bytes.
    Code { hash: String, wasm: String },
    /// One block, as `GET /v1/blocks/<height>` serves it.
    Block { block: Box<Block> },
    /// Chains with validators: the block on the line before's consensus digest and finality
    /// certificate (lowercase hex; `None`: finalized through a descendant's), as the source
    /// recorded them.
    Finality {
        height: u64,
        digest: String,
        certificate: Option<String>,
    },
    /// One state entry after the head: key and base64 value.
    State { key: String, value: String },
    /// Chains with validators: one piece of evidence of a faulty validator the source holds
    /// (after the state lines): its kind, view, signer index, the two signed votes (lowercase
    /// hex), and when the source stored it.
    Evidence {
        id: u64,
        kind: String,
        view: u64,
        signer: u32,
        data: String,
        received_ms: u64,
    },
    /// The last line: how many blocks and state entries the file holds.
    End {
        blocks: u64,
        state_entries: Option<u64>,
    },
}

/// What [`export`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportSummary {
    /// Blocks written (the head height + 1).
    pub blocks: u64,
    /// Transactions in them.
    pub txs: u64,
    /// Module codes written.
    pub codes: usize,
    /// State entries written (`None`: the source has no state, e.g. a node's API).
    pub state_entries: Option<u64>,
    /// The head block's hash.
    pub head_hash: String,
}

fn io(path: &Path, e: std::io::Error) -> SourceError {
    SourceError(format!("{}: {e}", path.display()))
}

fn write_line(w: &mut impl Write, path: &Path, value: &impl Serialize) -> Result<(), SourceError> {
    serde_json::to_writer(&mut *w, value)
        .map_err(|e| SourceError(format!("{}: {e}", path.display())))?;
    w.write_all(b"\n").map_err(|e| io(path, e))
}

/// Writes the chain `source` holds, from genesis to the head it reports, to a new file `path`
/// (through `path` + `.tmp` and a rename, so a failed export leaves no file under `path`).
/// `progress` is called with each block height written. Errors: the source's, or I/O.
pub fn export(
    source: &mut dyn ChainSource,
    path: &Path,
    mut progress: impl FnMut(u64, u64),
) -> Result<ExportSummary, SourceError> {
    let genesis = source.genesis()?;
    let validators = genesis.validators.is_some();
    let head = source.head_height()?;
    let mut codes = BTreeMap::new();
    for m in &genesis.modules {
        if !codes.contains_key(&m.code_hash) {
            codes.insert(m.code_hash.clone(), source.code(&m.code_hash)?);
        }
    }
    let tmp = PathBuf::from(format!("{}.tmp", path.display()));
    let file = File::create(&tmp).map_err(|e| io(&tmp, e))?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    // The header names the head hash, known only at the end: the head block is read first.
    let head_block = source.block(head)?;
    let head_hash = head_block.header.header.hash_hex();
    drop(head_block);
    let header = ExportHeader {
        format: EXPORT_FORMAT.into(),
        version: EXPORT_VERSION,
        genesis_hash: hex::encode(genesis.hash()),
        chain_id: genesis.chain_id.clone(),
        head_height: head,
        head_hash: head_hash.clone(),
    };
    write_line(&mut w, &tmp, &header)?;
    write_line(
        &mut w,
        &tmp,
        &Line::Genesis {
            genesis: Box::new(genesis),
        },
    )?;
    for (hash, wasm) in &codes {
        let line = json!({"type": "code", "hash": hash, "wasm": BASE64.encode(wasm)});
        write_line(&mut w, &tmp, &line)?;
    }
    let mut txs = 0u64;
    for height in 0..=head {
        let block = source.block(height)?;
        txs += block.txs.len() as u64;
        if height == head && block.header.header.hash_hex() != head_hash {
            return Err(SourceError(format!(
                "block {head} changed while it was exported"
            )));
        }
        let line = json!({"type": "block", "block": block});
        write_line(&mut w, &tmp, &line)?;
        if validators {
            if let Some(f) = source.finality(height)? {
                let line = Line::Finality {
                    height,
                    digest: hex::encode(f.digest),
                    certificate: f.certificate.map(hex::encode),
                };
                write_line(&mut w, &tmp, &line)?;
            }
        }
        progress(height, head);
    }
    let state_entries = match source.expected_state()? {
        Some(expected) => {
            if expected.height != head {
                return Err(SourceError(format!(
                    "the source's state is at height {}, not the head {head}",
                    expected.height
                )));
            }
            for (key, value) in &expected.state.map {
                let line = json!({"type": "state", "key": key, "value": BASE64.encode(value)});
                write_line(&mut w, &tmp, &line)?;
            }
            Some(expected.state.map.len() as u64)
        }
        None => None,
    };
    if validators {
        for e in source.evidence()? {
            let line = Line::Evidence {
                id: e.id,
                kind: e.kind,
                view: e.view,
                signer: e.signer,
                data: hex::encode(e.data),
                received_ms: e.received_ms,
            };
            write_line(&mut w, &tmp, &line)?;
        }
    }
    write_line(
        &mut w,
        &tmp,
        &Line::End {
            blocks: head + 1,
            state_entries,
        },
    )?;
    let file = w.into_inner().map_err(|e| io(&tmp, e.into_error()))?;
    file.sync_all().map_err(|e| io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| io(path, e))?;
    Ok(ExportSummary {
        blocks: head + 1,
        txs,
        codes: codes.len(),
        state_entries,
        head_hash,
    })
}

/// The lines of an export file after the header, one at a time, with one line of look-ahead.
struct Lines {
    path: PathBuf,
    reader: BufReader<File>,
    line_no: u64,
    pending: Option<Line>,
}

impl Lines {
    fn bad(&self, message: &str) -> SourceError {
        SourceError(format!(
            "{} line {}: {message}",
            self.path.display(),
            self.line_no
        ))
    }

    fn next(&mut self) -> Result<Option<Line>, SourceError> {
        if let Some(line) = self.pending.take() {
            return Ok(Some(line));
        }
        let mut text = String::new();
        let n = self
            .reader
            .read_line(&mut text)
            .map_err(|e| io(&self.path, e))?;
        if n == 0 {
            return Ok(None);
        }
        self.line_no += 1;
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| self.bad(&e.to_string()))
    }
}

/// An export file read for `verify --file`, front to back: the header, genesis and code lines
/// when opened, then one block per [`ChainSource::block`] call, then the state and the `end`
/// line.
pub struct FileSource {
    lines: Lines,
    header: ExportHeader,
    genesis: Genesis,
    codes: BTreeMap<String, Vec<u8>>,
    /// The signed header of the last block given, and two different ones found at one height.
    last: Option<SignedHeader>,
    equivocation: Option<(SignedHeader, SignedHeader)>,
    /// The `evidence` lines read with the state.
    evidence: Vec<StoredEvidence>,
}

impl FileSource {
    /// Opens `path` and reads its header, genesis and code lines. Errors: not an export file of
    /// this version, a genesis that does not hash to the header's, malformed lines.
    pub fn open(path: &Path) -> Result<FileSource, SourceError> {
        let file = File::open(path).map_err(|e| io(path, e))?;
        let mut reader = BufReader::with_capacity(1 << 20, file);
        let mut first = String::new();
        reader.read_line(&mut first).map_err(|e| io(path, e))?;
        let header: ExportHeader = serde_json::from_str(&first).map_err(|e| {
            SourceError(format!(
                "{}: not a gamechain export file (line 1: {e})",
                path.display()
            ))
        })?;
        if header.format != EXPORT_FORMAT
            || !(EXPORT_VERSION_OLDEST..=EXPORT_VERSION).contains(&header.version)
        {
            return Err(SourceError(format!(
                "{}: format {} version {}, this build reads {EXPORT_FORMAT} versions {EXPORT_VERSION_OLDEST} to {EXPORT_VERSION}",
                path.display(),
                header.format,
                header.version
            )));
        }
        let mut lines = Lines {
            path: path.to_path_buf(),
            reader,
            line_no: 1,
            pending: None,
        };
        let genesis = match lines.next()? {
            Some(Line::Genesis { genesis }) => *genesis,
            _ => return Err(lines.bad("the second line must be the genesis")),
        };
        genesis_matches(&genesis, &header.genesis_hash).map_err(|m| lines.bad(&m))?;
        let mut codes = BTreeMap::new();
        loop {
            match lines.next()? {
                Some(Line::Code { hash, wasm }) => {
                    let bytes = BASE64
                        .decode(wasm)
                        .map_err(|e| lines.bad(&format!("code {hash}: {e}")))?;
                    codes.insert(hash, bytes);
                }
                other => {
                    lines.pending = other;
                    break;
                }
            }
        }
        Ok(FileSource {
            lines,
            header,
            genesis,
            codes,
            last: None,
            equivocation: None,
            evidence: Vec::new(),
        })
    }

    /// The header line.
    pub fn header(&self) -> &ExportHeader {
        &self.header
    }
}

fn genesis_matches(genesis: &Genesis, hash: &str) -> Result<(), String> {
    genesis.validate().map_err(|e| e.to_string())?;
    let found = hex::encode(genesis.hash());
    if found != hash {
        return Err(format!(
            "the genesis hashes to {found}, the header says {hash}"
        ));
    }
    Ok(())
}

impl ChainSource for FileSource {
    fn describe(&self) -> String {
        format!("file {}", self.lines.path.display())
    }

    fn genesis(&mut self) -> Result<Genesis, SourceError> {
        Ok(self.genesis.clone())
    }

    fn code(&mut self, hash: &str) -> Result<Vec<u8>, SourceError> {
        self.codes
            .get(hash)
            .cloned()
            .ok_or_else(|| SourceError(format!("{}: no code {hash}", self.lines.path.display())))
    }

    fn head_height(&mut self) -> Result<u64, SourceError> {
        Ok(self.header.head_height)
    }

    /// Block `height`, the next block line. A line repeating the last block given (same
    /// hash) is skipped; a different block at the last height is an equivocation
    /// ([`ChainSource::equivocation`]).
    fn block(&mut self, height: u64) -> Result<Block, SourceError> {
        loop {
            let line = self.lines.next()?;
            if let (Some(Line::Block { block }), Some(last)) = (&line, &self.last) {
                if block.height() == last.header.height {
                    if block.header.header.hash() == last.header.hash() {
                        continue;
                    }
                    self.equivocation = Some((last.clone(), block.header.clone()));
                    return Err(self.lines.bad(&format!(
                        "a second, different block at height {}",
                        block.height()
                    )));
                }
            }
            return self.block_line(line, height);
        }
    }

    fn equivocation(&mut self) -> Option<(SignedHeader, SignedHeader)> {
        self.equivocation.take()
    }

    /// The `finality` line right after block `height`'s, if there is one.
    fn finality(&mut self, height: u64) -> Result<Option<Finality>, SourceError> {
        match self.lines.next()? {
            Some(Line::Finality {
                height: h,
                digest,
                certificate,
            }) if h == height => Finality::from_hex(&digest, certificate.as_deref())
                .map(Some)
                .map_err(|e| self.lines.bad(&e)),
            Some(Line::Finality { height: h, .. }) => Err(self
                .lines
                .bad(&format!("the finality of block {h} after block {height}"))),
            other => {
                self.lines.pending = other;
                Ok(None)
            }
        }
    }
    fn evidence(&mut self) -> Result<Vec<StoredEvidence>, SourceError> {
        Ok(std::mem::take(&mut self.evidence))
    }

    fn expected_state(&mut self) -> Result<Option<ExpectedState>, SourceError> {
        let mut state = MemState::new();
        loop {
            match self.lines.next()? {
                Some(Line::State { key, value }) => {
                    let bytes = BASE64
                        .decode(value)
                        .map_err(|e| self.lines.bad(&format!("state {key}: {e}")))?;
                    state.map.insert(key, bytes);
                }
                Some(Line::Evidence {
                    id,
                    kind,
                    view,
                    signer,
                    data,
                    received_ms,
                }) => {
                    if self.evidence.len() >= MAX_EVIDENCE || data.len() > 2 * MAX_EVIDENCE_BYTES {
                        return Err(self.lines.bad(&format!(
                            "more than {MAX_EVIDENCE} evidence lines, or one over \
                             {MAX_EVIDENCE_BYTES} bytes"
                        )));
                    }
                    let data = hex::decode(&data)
                        .map_err(|_| self.lines.bad("evidence `data` is not hex"))?;
                    self.evidence.push(StoredEvidence {
                        id,
                        kind,
                        view,
                        signer,
                        data,
                        received_ms,
                    });
                }
                Some(Line::End {
                    blocks,
                    state_entries,
                }) => {
                    if blocks != self.header.head_height + 1
                        || state_entries.unwrap_or(0) != state.map.len() as u64
                    {
                        return Err(self
                            .lines
                            .bad("the end line's counts do not match the file"));
                    }
                    return Ok(state_entries.map(|_| ExpectedState {
                        height: self.header.head_height,
                        state,
                    }));
                }
                Some(Line::Block { block }) if state.map.is_empty() => {
                    // A second block at the head's height, or a repeat of it.
                    if let Some(last) = &self.last {
                        if block.height() == last.header.height
                            && block.header.header.hash() != last.header.hash()
                        {
                            self.equivocation = Some((last.clone(), block.header.clone()));
                        } else if block.height() == last.header.height {
                            continue;
                        }
                    }
                    return Err(self.lines.bad("a state or end line expected"));
                }
                Some(_) => return Err(self.lines.bad("a state or end line expected")),
                None => {
                    return Err(self
                        .lines
                        .bad("the file ends without its end line (truncated?)"))
                }
            }
        }
    }
}

impl FileSource {
    /// `line` as block `height`, remembered as the last block given.
    fn block_line(&mut self, line: Option<Line>, height: u64) -> Result<Block, SourceError> {
        match line {
            Some(Line::Block { block }) if block.height() == height => {
                self.last = Some(block.header.clone());
                Ok(*block)
            }
            Some(Line::Block { block }) => Err(self.lines.bad(&format!(
                "block {} where block {height} was expected",
                block.height()
            ))),
            _ => Err(self.lines.bad(&format!("block {height} expected"))),
        }
    }
}
