//! Where a replay reads the chain from: the [`ChainSource`] trait and two of its sources, a
//! node's data directory ([`DataDirSource`]) and a running node's HTTP API ([`NodeSource`]). The
//! third, an export file, is `export.rs`'s `FileSource`. On a chain with validators the first
//! two also give each block's recorded consensus digest and finality certificate
//! ([`ChainSource::finality`]: the `validator_finality` table, `GET
//! /v1/blocks/<height>/finality`) for the verifier to check.
//!
//! Module code comes from one place per source, [`ChainSource::code`] ("code for hash"): the
//! data directory's `code` table, `GET /v1/code/<hash>`, or the export's code records. Code is
//! always checked against its hash by the registry before it runs.

use std::collections::VecDeque;
use std::fmt;
use std::path::{Path, PathBuf};

use gamechain_runtime::chain::{Genesis, SignedHeader};
use gamechain_runtime::MemState;

use crate::proof::finality::MAX_CERTIFICATE_BYTES;
use gamechain_chain::wire::Block;
use gamechain_client::client::{BlockRef, Client, ClientError};
use gamechain_ledger::storage::{Storage, StoredEvidence, MAX_EVIDENCE};

/// Why a source could not give what the replay asked for (unreadable, missing, malformed,
/// unreachable). Not a divergence: nothing was compared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceError(pub String);

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SourceError {}

fn err(msg: impl Into<String>) -> SourceError {
    SourceError(msg.into())
}

/// The chain's own state at its head, as recorded by the source (stored or exported), to
/// compare with the replay's at the end.
#[derive(Debug, Clone)]
pub struct ExpectedState {
    /// The height it is the state after.
    pub height: u64,
    /// Every key and value.
    pub state: MemState,
}

/// The state a replay starts from when the source does not hold the chain from genesis (a
/// node that joined from a snapshot, or prunes its blocks): the state after block `height`,
/// from a snapshot the data directory keeps (`node/ledger/src/store/snapshot.rs`). The replay checks it
/// against block `height`'s signed state root before anything else.
#[derive(Debug, Clone)]
pub struct Base {
    /// The height it is the state after.
    pub height: u64,
    /// Every key and value.
    pub state: MemState,
}

/// A chain to replay. The replay calls [`genesis`](Self::genesis), then
/// [`code`](Self::code) for each module, [`head_height`](Self::head_height), then
/// [`block`](Self::block) for heights 0, 1, … up to the head in that order, and last
/// [`expected_state`](Self::expected_state). A source is moved to a reader thread, hence `Send`.
pub trait ChainSource: Send {
    /// What it reads, for messages (`data directory ./d`, `node http://…`, `file x.export`).
    fn describe(&self) -> String;
    /// The genesis file.
    fn genesis(&mut self) -> Result<Genesis, SourceError>;
    /// The module code whose lowercase hex SHA-256 is `hash` ("code for hash").
    fn code(&mut self, hash: &str) -> Result<Vec<u8>, SourceError>;
    /// The height of the last block to replay.
    fn head_height(&mut self) -> Result<u64, SourceError>;
    /// Block `height` with its transactions and receipts.
    fn block(&mut self, height: u64) -> Result<Block, SourceError>;
    /// Where the replay starts when the source lacks the blocks below some height ([`Base`]);
    /// `None` (the default): from genesis. Called before [`block`](Self::block), which is then
    /// asked for heights from the base's.
    fn base(&mut self) -> Result<Option<Base>, SourceError> {
        Ok(None)
    }
    /// The chain's state after the head, if the source has it (`None`: the API serves none).
    fn expected_state(&mut self) -> Result<Option<ExpectedState>, SourceError> {
        Ok(None)
    }
    /// Chains with validators: block `height`'s recorded consensus digest and finality
    /// certificate (`None`: the source records none for it; the default).
    fn finality(&mut self, _height: u64) -> Result<Option<Finality>, SourceError> {
        Ok(None)
    }
    /// Chains with validators: the evidence of faulty validators the source holds (at most
    /// [`MAX_EVIDENCE`] records; more is an error), read after
    /// [`expected_state`](Self::expected_state). Default: none.
    fn evidence(&mut self) -> Result<Vec<StoredEvidence>, SourceError> {
        Ok(Vec::new())
    }
    /// After [`block`](Self::block) failed: the two different signed headers the source gave
    /// at one height, when that is why (an export file with a second block at a height). The
    /// verifier reports them as a divergence (`equivocation`), not as an unreadable source.
    fn equivocation(&mut self) -> Option<(SignedHeader, SignedHeader)> {
        None
    }
}

/// A node's data directory (`genesis.json`, `chain.sqlite`), read-only: a running node may
/// keep writing it; the replay stops at the head it saw when opened, and the state it compares
/// with at the end is the one stored at that head.
pub struct DataDirSource {
    dir: PathBuf,
    genesis: Genesis,
    storage: Storage,
    head: u64,
    state: Option<MemState>,
}

impl DataDirSource {
    /// Opens `dir`: reads `genesis.json`, checks it hashes to the genesis the database was
    /// created with, and reads the head and the state stored after it (retrying while a running
    /// node commits in between). Errors: missing or unreadable files, another chain's genesis.
    pub fn open(dir: &Path) -> Result<DataDirSource, SourceError> {
        let genesis_path = dir.join("genesis.json");
        let text = std::fs::read_to_string(&genesis_path)
            .map_err(|e| err(format!("cannot read {}: {e}", genesis_path.display())))?;
        let genesis = Genesis::from_json(&text)
            .map_err(|e| err(format!("{}: {e}", genesis_path.display())))?;
        let db_path = dir.join("chain.sqlite");
        if !db_path.exists() {
            return Err(err(format!("{} does not exist", db_path.display())));
        }
        let storage = Storage::open_reader(&db_path)
            .map_err(|e| err(format!("{}: {e}", db_path.display())))?;
        let db =
            |e: gamechain_ledger::storage::StorageError| err(format!("{}: {e}", db_path.display()));
        let genesis_hash = hex::encode(genesis.hash());
        match storage.chain_identity().map_err(db)? {
            Some((stored, _)) if stored == genesis_hash => {}
            Some((stored, _)) => {
                return Err(err(format!(
                    "{} hashes to {genesis_hash}, but {} holds the chain of genesis {stored}",
                    genesis_path.display(),
                    db_path.display()
                )))
            }
            None => return Err(err(format!("{} holds no chain", db_path.display()))),
        }
        // The head and the state after it, read without a commit in between.
        for _ in 0..20 {
            let before = storage.head_height().map_err(db)?;
            let state = storage.load_state().map_err(db)?;
            let after = storage.head_height().map_err(db)?;
            if let (Some(h), true) = (before, before == after) {
                return Ok(DataDirSource {
                    dir: dir.to_path_buf(),
                    genesis,
                    storage,
                    head: h,
                    state: Some(state),
                });
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Err(err(format!(
            "{}: no block, or the node commits too fast to read its state at one head",
            db_path.display()
        )))
    }
}

impl ChainSource for DataDirSource {
    fn describe(&self) -> String {
        format!("data directory {}", self.dir.display())
    }

    fn genesis(&mut self) -> Result<Genesis, SourceError> {
        Ok(self.genesis.clone())
    }

    fn code(&mut self, hash: &str) -> Result<Vec<u8>, SourceError> {
        self.storage
            .code_by_hash(hash)
            .map_err(|e| err(e.to_string()))?
            .ok_or_else(|| err(format!("{}: no module code {hash}", self.describe())))
    }

    fn head_height(&mut self) -> Result<u64, SourceError> {
        Ok(self.head)
    }

    fn block(&mut self, height: u64) -> Result<Block, SourceError> {
        self.storage
            .block(height)
            .map_err(|e| err(format!("block {height}: {e}")))?
            .ok_or_else(|| err(format!("block {height} is not stored")))
    }

    /// A data directory whose oldest block is not 0 starts from the oldest snapshot it keeps
    /// at or above that block (`<data>/snapshots/<height>/`), each chunk checked against its
    /// manifest. Errors: no such snapshot (the directory cannot be verified), a damaged one.
    fn base(&mut self) -> Result<Option<Base>, SourceError> {
        let oldest = self
            .storage
            .oldest_height()
            .map_err(|e| err(e.to_string()))?
            .unwrap_or(0);
        if oldest == 0 {
            return Ok(None);
        }
        let snapshots = gamechain_ledger::snapshot::snapshots_dir(&self.dir);
        let Some(height) = gamechain_ledger::snapshot::snapshot_heights(&snapshots)
            .into_iter()
            .filter(|h| *h >= oldest && *h <= self.head)
            .min()
        else {
            return Err(err(format!(
                "{}: its oldest block is {oldest} (it joined from a snapshot or prunes blocks) \
                 and it keeps no snapshot at or above it to start a replay from",
                self.describe()
            )));
        };
        let state = gamechain_ledger::snapshot::load_snapshot(&snapshots.join(height.to_string()))
            .map_err(|e| {
                err(format!(
                    "{}: the snapshot at {height}: {e}",
                    self.describe()
                ))
            })?;
        Ok(Some(Base { height, state }))
    }

    fn expected_state(&mut self) -> Result<Option<ExpectedState>, SourceError> {
        Ok(self.state.take().map(|state| ExpectedState {
            height: self.head,
            state,
        }))
    }

    fn evidence(&mut self) -> Result<Vec<StoredEvidence>, SourceError> {
        let records = self
            .storage
            .evidence_page(0, MAX_EVIDENCE + 1)
            .map_err(|e| err(format!("evidence: {e}")))?;
        if records.len() > MAX_EVIDENCE {
            return Err(err(format!(
                "{}: more than {MAX_EVIDENCE} evidence records",
                self.describe()
            )));
        }
        Ok(records)
    }

    fn finality(&mut self, height: u64) -> Result<Option<Finality>, SourceError> {
        if !self
            .storage
            .has_validator_tables()
            .map_err(|e| err(e.to_string()))?
        {
            return Ok(None);
        }
        Ok(self
            .storage
            .validator_finality(height)
            .map_err(|e| err(format!("finality of block {height}: {e}")))?
            .map(|(digest, certificate)| Finality {
                digest,
                certificate,
            }))
    }
}

/// What a source records of a block's finality (chains with validators).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finality {
    /// The block's consensus digest.
    pub digest: [u8; 32],
    /// Its encoded finality certificate; `None` for a block finalized through a descendant's.
    pub certificate: Option<Vec<u8>>,
}

impl Finality {
    /// From the hex of the API and the export file. Errors: a digest that is not 64 hex
    /// characters, a certificate that is not hex or over [`MAX_CERTIFICATE_BYTES`].
    pub fn from_hex(digest: &str, certificate: Option<&str>) -> Result<Finality, String> {
        let digest: [u8; 32] = hex::decode(digest)
            .ok()
            .and_then(|d| d.try_into().ok())
            .ok_or("`digest` is not 64 hex characters")?;
        let certificate = match certificate {
            None => None,
            Some(c) if c.len() > 2 * MAX_CERTIFICATE_BYTES => {
                return Err(format!(
                    "`certificate` is over {MAX_CERTIFICATE_BYTES} bytes"
                ))
            }
            Some(c) => Some(hex::decode(c).map_err(|_| "`certificate` is not hex")?),
        };
        Ok(Finality {
            digest,
            certificate,
        })
    }
}

/// Blocks fetched at once by [`NodeSource`] (concurrent requests).
pub const NODE_FETCH_AHEAD: usize = 16;

/// A running node's public API: `GET /v1/genesis`, `/v1/status` (the head), `/v1/code/<hash>`
/// and `/v1/blocks/<height>` ([`NODE_FETCH_AHEAD`] at a time). Its methods block: call them off
/// the async executor (the replay's reader thread does).
pub struct NodeSource {
    client: Client,
    http: reqwest::Client,
    rt: tokio::runtime::Handle,
    ahead: VecDeque<Block>,
    head: Option<u64>,
    /// Chains with validators: the finality of the blocks in `ahead`, fetched with them.
    finality_ahead: VecDeque<(u64, Option<Finality>)>,
    validators: bool,
}

impl NodeSource {
    /// A source reading the node at `url` through the async runtime `rt`. Errors: a bad URL.
    pub fn new(url: &str, rt: tokio::runtime::Handle) -> Result<NodeSource, SourceError> {
        let client = Client::new(url).map_err(|e| err(e.to_string()))?;
        Ok(NodeSource {
            client,
            http: reqwest::Client::new(),
            rt,
            ahead: VecDeque::new(),
            head: None,
            finality_ahead: VecDeque::new(),
            validators: false,
        })
    }
}

/// `GET <base>/v1/code/<hash>`: the raw wasm bytes, waiting out `429 rate_limited` as
/// [`block_retrying`] does. Errors: transport, a status other than 200.
pub async fn fetch_code(
    http: &reqwest::Client,
    client: &Client,
    hash: &str,
) -> Result<Vec<u8>, SourceError> {
    let url = client.url(&["v1", "code", hash]);
    let mut wait = std::time::Duration::from_millis(100);
    let mut attempt = 1;
    let (status, bytes) = loop {
        let response = http
            .get(url.clone())
            .send()
            .await
            .map_err(|e| err(format!("{url}: {e}")))?;
        let status = response.status();
        let bytes = response
            .bytes()
            .await
            .map_err(|e| err(format!("{url}: {e}")))?;
        // A genesis of several modules asks for several codes at once: wait out the node's
        // rate limit as block reads do.
        if status == reqwest::StatusCode::TOO_MANY_REQUESTS && attempt < RATE_LIMITED_ATTEMPTS {
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(std::time::Duration::from_secs(2));
            attempt += 1;
            continue;
        }
        break (status, bytes);
    };
    if !status.is_success() {
        return Err(err(format!(
            "{url}: HTTP {status}: {}",
            String::from_utf8_lossy(&bytes)
        )));
    }
    Ok(bytes.to_vec())
}

/// Most attempts [`block_retrying`] makes for one block answered `429 rate_limited`.
pub const RATE_LIMITED_ATTEMPTS: u32 = 20;

/// `GET /v1/blocks/<height>`, waiting and retrying while the node answers `429 rate_limited`
/// (a node's default rate limit is below what a replay asks for): 100 ms, then doubling up to
/// 2 s between attempts, [`RATE_LIMITED_ATTEMPTS`] at most. Other errors are returned at once.
pub(crate) async fn block_retrying(client: &Client, height: u64) -> Result<Block, ClientError> {
    retrying(|| client.block(BlockRef::Height(height))).await
}

/// `call()` again while it fails `429 rate_limited`, as [`block_retrying`] does.
async fn retrying<T, F: std::future::Future<Output = Result<T, ClientError>>>(
    mut call: impl FnMut() -> F,
) -> Result<T, ClientError> {
    let mut wait = std::time::Duration::from_millis(100);
    let mut attempt = 1;
    loop {
        match call().await {
            Err(e) if e.code() == Some("rate_limited") && attempt < RATE_LIMITED_ATTEMPTS => {
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(std::time::Duration::from_secs(2));
                attempt += 1;
            }
            other => return other,
        }
    }
}

/// `GET /v1/blocks/<height>/finality` of a stored block, decoded, retried while rate limited.
/// `Ok(None)`: the node records none for the block (`404 not_found`: a node stores a block's
/// record before the block, so none is coming). Errors: transport, another error, a malformed
/// answer (not hex, a digest that is not 32 bytes, a certificate over its bound, another
/// block's height).
pub(crate) async fn finality_retrying(
    client: &Client,
    height: u64,
) -> Result<Option<Finality>, String> {
    let what = |e: &dyn std::fmt::Display| format!("GET /v1/blocks/{height}/finality: {e}");
    let answer = match retrying(|| client.block_finality(BlockRef::Height(height))).await {
        Err(e) if e.code() == Some("not_found") => return Ok(None),
        Err(e) => return Err(what(&e)),
        Ok(a) => a,
    };
    if answer.height != height {
        return Err(what(&format!("the answer is block {}'s", answer.height)));
    }
    Finality::from_hex(&answer.digest, answer.certificate.as_deref())
        .map(Some)
        .map_err(|e| what(&e))
}

/// `GET /v1/genesis` as a [`Genesis`].
pub async fn fetch_genesis(client: &Client) -> Result<Genesis, SourceError> {
    let value = retrying(|| client.genesis())
        .await
        .map_err(|e| err(e.to_string()))?;
    serde_json::from_value(value).map_err(|e| err(format!("GET /v1/genesis: {e}")))
}

impl ChainSource for NodeSource {
    fn describe(&self) -> String {
        format!("node {}", self.client.base_url())
    }

    fn genesis(&mut self) -> Result<Genesis, SourceError> {
        let genesis = self.rt.block_on(fetch_genesis(&self.client))?;
        self.validators = genesis.validators.is_some();
        Ok(genesis)
    }

    fn code(&mut self, hash: &str) -> Result<Vec<u8>, SourceError> {
        self.rt.block_on(fetch_code(&self.http, &self.client, hash))
    }

    fn head_height(&mut self) -> Result<u64, SourceError> {
        let status = self
            .rt
            .block_on(retrying(|| self.client.status()))
            .map_err(|e| err(e.to_string()))?;
        self.head = Some(status.height);
        Ok(status.height)
    }

    fn block(&mut self, height: u64) -> Result<Block, SourceError> {
        if let Some(b) = self.ahead.pop_front() {
            if b.height() == height {
                return Ok(b);
            }
            self.ahead.clear();
        }
        let last = self
            .head
            .unwrap_or(height)
            .max(height)
            .min(height + NODE_FETCH_AHEAD as u64 - 1);
        let client = &self.client;
        let fetched = self.rt.block_on(futures_util::future::join_all(
            (height..=last).map(|h| block_retrying(client, h)),
        ));
        for (h, result) in (height..=last).zip(fetched) {
            let block = result.map_err(|e| err(format!("GET /v1/blocks/{h}: {e}")))?;
            self.ahead.push_back(block);
        }
        if self.validators {
            let finality = self.rt.block_on(futures_util::future::join_all(
                (height..=last).map(|h| finality_retrying(client, h)),
            ));
            self.finality_ahead.clear();
            for (h, result) in (height..=last).zip(finality) {
                self.finality_ahead.push_back((h, result.map_err(err)?));
            }
        }
        self.ahead
            .pop_front()
            .ok_or_else(|| err(format!("block {height} was not fetched")))
    }

    /// `GET /v1/evidence`, page by page (100 records each). A node that does not serve it
    /// (404: a build before evidence) has none.
    fn evidence(&mut self) -> Result<Vec<StoredEvidence>, SourceError> {
        if !self.validators {
            return Ok(Vec::new());
        }
        let mut records = Vec::new();
        let mut after = 0;
        loop {
            let page = match self
                .rt
                .block_on(retrying(|| self.client.evidence(after, 100)))
            {
                Ok(p) => p,
                Err(e) if e.code() == Some("not_found") => return Ok(records),
                Err(e) => return Err(err(format!("GET /v1/evidence: {e}"))),
            };
            for e in &page.evidence {
                if e.id <= after {
                    return Err(err("GET /v1/evidence: ids do not increase".to_string()));
                }
                after = e.id;
                records.push(crate::verify::evidence::from_wire(e).map_err(err)?);
            }
            if records.len() > MAX_EVIDENCE {
                return Err(err(format!(
                    "{}: more than {MAX_EVIDENCE} evidence records",
                    self.describe()
                )));
            }
            match page.next {
                Some(n) if !page.evidence.is_empty() && n == after => {}
                _ => return Ok(records),
            }
        }
    }

    fn finality(&mut self, height: u64) -> Result<Option<Finality>, SourceError> {
        while let Some((h, f)) = self.finality_ahead.pop_front() {
            if h == height {
                return Ok(f);
            }
        }
        self.rt
            .block_on(finality_retrying(&self.client, height))
            .map_err(err)
    }
}
