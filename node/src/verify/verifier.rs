//! `gamechain verify`'s engine: [`verify`] replays a whole chain from a [`ChainSource`] on a
//! fresh state with this build's runtime, block by block through `replay.rs`, and returns a
//! [`VerifyReport`]: the summary, and the first [`Divergence`] if there is one.
//!
//! The modules are the chain's own: genesis names them by code hash and their code comes from
//! the source ([`ChainSource::code`]), checked against the hash before it is compiled. A source
//! is read on its own thread, a bounded queue ahead of the replay, which also runs each
//! block's signature checks (on up to `verify_threads` threads), so fetching, decoding and
//! checking signatures overlap execution; it starts before the genesis modules compile, which
//! the checks do not need.
//!
//! State keys: storage keeps only the state at the head, not per-block writes. So the replay
//! compares its whole state with the source's head state ([`ChainSource::expected_state`], a
//! data directory or an export) after the last block, and reports every key that differs
//! (`field` `state`). A `header.state_root` difference below the head names the height and
//! lists the block's replayed net writes (the only keys that block could have got wrong); at the
//! head, the keys that differ from the stored state are listed as well.
//!
//! A source that gives two different blocks at one height (an export file with a second block
//! at a height, [`ChainSource::equivocation`]) is a divergence at that height, field
//! `equivocation`, naming both signed headers ([`equivocation`]).

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gamechain_runtime::chain::{Genesis, SignedHeader};
use gamechain_runtime::{
    default_verify_threads, runtime_config, Allocation, ChainContext, Modules, RegistryError,
    Runtime, WriteSet,
};
use serde_json::{json, Value};

use crate::proof::digest::proposal_digest;
use crate::proof::evidence::EvidenceChecker;
use crate::proof::finality::FinalityChecker;
use crate::verify::evidence::EvidenceReport;
use crate::verify::replay::{
    check_block_for, state_differences, CheckedBlock, Divergence, ReplayError, Replayer,
};
use crate::verify::source::{Base, ChainSource, ExpectedState, Finality, SourceError};
use gamechain_chain::wire::Block;
use gamechain_ledger::storage::StoredEvidence;

/// Blocks the reader thread may be ahead of the replay.
const READ_AHEAD: usize = 64;

/// How to replay. None of it can change a result (none is consensus).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyOptions {
    /// Instance allocation of the replaying runtime.
    pub allocation: Allocation,
    /// Threads for signature checks (`None`: the machine's parallelism, at most 8).
    pub verify_threads: Option<usize>,
    /// Serve calls from reset warm instances (the runtime's default) or fresh ones.
    pub reuse_instances: bool,
}

impl Default for VerifyOptions {
    /// Pooling with 4 instances, default verify threads, instance reuse on.
    fn default() -> Self {
        VerifyOptions {
            allocation: Allocation::Pooling { instances: 4 },
            verify_threads: None,
            reuse_instances: true,
        }
    }
}

/// Where a replay is, for progress displays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// The last verified height.
    pub height: u64,
    /// The head height being replayed to.
    pub head: u64,
    /// Transactions verified so far.
    pub txs: u64,
    /// Since the replay started.
    pub elapsed: Duration,
}

/// Why a replay could not run to a verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerifyError {
    /// The source failed (unreadable, unreachable, malformed).
    Source(String),
    /// This build cannot replay this chain (engine configuration, module that does not load).
    Setup(String),
    /// This machine failed while executing (the wasm engine).
    Host(String),
}

impl std::fmt::Display for VerifyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VerifyError::Source(m) => write!(f, "cannot read the chain: {m}"),
            VerifyError::Setup(m) => write!(f, "cannot replay this chain: {m}"),
            VerifyError::Host(m) => write!(f, "the replay failed on this machine: {m}"),
        }
    }
}

impl std::error::Error for VerifyError {}

impl From<SourceError> for VerifyError {
    fn from(e: SourceError) -> Self {
        VerifyError::Source(e.0)
    }
}

/// The outcome of [`verify`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    /// What was read ([`ChainSource::describe`]).
    pub source: String,
    /// The chain id.
    pub chain_id: String,
    /// Lowercase hex genesis hash.
    pub genesis_hash: String,
    /// The head height replayed to.
    pub head_height: u64,
    /// Blocks verified, genesis included (`head_height + 1` when the chain verified).
    pub blocks: u64,
    /// Transactions verified.
    pub txs: u64,
    /// State root after the last verified block, lowercase hex.
    pub state_root: String,
    /// Hash of the last verified block, lowercase hex.
    pub head_hash: String,
    /// State entries compared with the source's head state (`None`: the source has none).
    pub state_entries_checked: Option<usize>,
    /// Wall time of the replay (module compilation included).
    pub elapsed: Duration,
    /// The first divergence; `None` when every block verified.
    pub divergence: Option<Divergence>,
    /// Chains with validators: what the finality check found (`None` on a sequencer chain).
    pub finality: Option<FinalityReport>,
    /// Chains with validators: what the check of the source's evidence of faulty validators
    /// found (`None` on a sequencer chain, or when the replay stopped before it).
    pub evidence: Option<EvidenceReport>,
    /// The height the replay started from when the source lacks the blocks below it (a node
    /// that joined from a snapshot or prunes blocks: [`ChainSource::base`]); `None`: genesis.
    pub base_height: Option<u64>,
}

/// What `verify` found of the finality of a chain with validators: every recorded consensus
/// digest must be the block's, every recorded certificate a valid finalization of it by a
/// quorum of the genesis set (else a divergence, field `finality.digest` or
/// `finality.certificate`), and every block up to the head must be covered by a certificate,
/// its own or a descendant's (a descendant's digest chains its ancestors'), else the chain is
/// not proven final ([`FinalityReport::uncovered`], `gamechain verify` exits
/// `EXIT_NOT_FINAL`, `cli/verify/exit.rs`). Block 0 is fixed by genesis and
/// needs no certificate.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FinalityReport {
    /// Blocks whose recorded digest was checked.
    pub digests: u64,
    /// Certificates checked (all valid when there is no divergence): the blocks certified
    /// directly.
    pub certificates: u64,
    /// The highest certified height (every block at or below it is final).
    pub last_certified: Option<u64>,
    /// The last height whose finality was checked (the replay's last block).
    pub checked_to: u64,
    /// Heights at or below it need no certificate of their own: 0 (block 0 is fixed by
    /// genesis) from genesis; `base − 1` when the replay starts from a base (a snapshot's
    /// block), which is then covered only by a certificate of a block above it. A base's own
    /// certificate is not enough: it certifies a digest that chains the base's parent, which a
    /// source that starts at the base cannot show, so nothing would bind it to the base's
    /// header; a descendant's digest chains the base's header through its `prev_hash`.
    pub floor: u64,
}

impl FinalityReport {
    /// Blocks above 0 and at or below [`last_certified`](Self::last_certified) without a
    /// certificate of their own: final through a descendant's.
    pub fn through_descendant(&self) -> u64 {
        self.last_certified
            .unwrap_or(self.floor)
            .saturating_sub(self.floor)
            .saturating_sub(self.certificates)
    }

    /// The heights `(from, to)` (inclusive) that no certificate covers: above the last
    /// certified height (or 0) up to the last height checked; `None` when every block is
    /// covered.
    pub fn uncovered(&self) -> Option<(u64, u64)> {
        let covered = self.last_certified.unwrap_or(self.floor).max(self.floor);
        (covered < self.checked_to).then_some((covered + 1, self.checked_to))
    }

    /// One line for people: `<n> blocks certified directly, <m> through a descendant's
    /// certificate, last certified height <h>; every block up to the head is covered` (or
    /// `heights a..=b are not covered by any certificate`).
    pub fn summary(&self) -> String {
        let last = match self.last_certified {
            Some(h) => format!("last certified height {h}"),
            None => "no certificate".into(),
        };
        let coverage = match self.uncovered() {
            None => "every block up to the head is covered".to_string(),
            Some((a, b)) if a == b => {
                format!("height {a} is NOT covered by any finality certificate")
            }
            Some((a, b)) => {
                format!("heights {a}..={b} are NOT covered by any finality certificate")
            }
        };
        format!(
            "{} blocks certified directly, {} through a descendant's certificate, {last}; {coverage}",
            self.certificates,
            self.through_descendant()
        )
    }
}

/// Checks block `header`'s recorded finality `f` (its digest continues `digest`, which it
/// then becomes) with `checker`, counting into `report`.
fn check_finality(
    checker: &FinalityChecker,
    digest: &mut [u8; 32],
    block: &Block,
    f: Option<Finality>,
    report: &mut FinalityReport,
) -> Result<(), Box<Divergence>> {
    let header = &block.header;
    let height = header.header.height;
    *digest = proposal_digest(digest, header, block.txs.iter().map(|t| t.tx.signature()));
    report.checked_to = height;
    let Some(f) = f else { return Ok(()) };
    report.digests += 1;
    if f.digest != *digest {
        return Err(Box::new(Divergence::new(
            height,
            "finality.digest",
            hex::encode(*digest),
            hex::encode(f.digest),
        )));
    }
    if let Some(cert) = f.certificate {
        checker.check(digest, &cert).map_err(|e| {
            Box::new(Divergence::new(
                height,
                "finality.certificate",
                "a finalization of the block by a quorum of the genesis validators".into(),
                e,
            ))
        })?;
        report.certificates += 1;
        report.last_certified = Some(height);
    }
    Ok(())
}

impl VerifyReport {
    /// `diverged` (a divergence), `not_final` (no divergence, but a chain with validators
    /// whose blocks are not all covered by a finality certificate: [`Self::not_final`]),
    /// `bad_evidence` (stored evidence that does not prove a fault), or `verified`.
    pub fn result(&self) -> &'static str {
        if self.divergence.is_some() {
            "diverged"
        } else if self.not_final().is_some() {
            "not_final"
        } else if self
            .evidence
            .as_ref()
            .is_some_and(|e| !e.invalid.is_empty())
        {
            "bad_evidence"
        } else {
            "verified"
        }
    }

    /// On a chain with validators: the heights `(from, to)` no finality certificate covers,
    /// `None` when every block up to the head is covered (or on a sequencer chain).
    pub fn not_final(&self) -> Option<(u64, u64)> {
        self.finality.as_ref().and_then(FinalityReport::uncovered)
    }

    /// Transactions per second of wall time.
    pub fn txs_per_sec(&self) -> f64 {
        self.txs as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// `gamechain verify --json`'s object: `{"result": "verified" | "diverged", "source",
    /// "chain_id", "genesis_hash", "head_height", "blocks", "txs", "state_root", "head_hash",
    /// "state_entries_checked", "seconds", "txs_per_sec", "divergence": null | {…}, "finality":
    /// null | {…}, "evidence": null | {…}, "base_height": null | <height the replay started
    /// from, a snapshot's>}`; `result` is [`Self::result`] (`verified`, `diverged`, `not_final`,
    /// `bad_evidence`).
    pub fn to_json(&self) -> Value {
        json!({
            "result": self.result(),
            "source": self.source,
            "chain_id": self.chain_id,
            "genesis_hash": self.genesis_hash,
            "head_height": self.head_height,
            "blocks": self.blocks,
            "txs": self.txs,
            "state_root": self.state_root,
            "head_hash": self.head_hash,
            "state_entries_checked": self.state_entries_checked,
            "seconds": self.elapsed.as_secs_f64(),
            "txs_per_sec": self.txs_per_sec(),
            "divergence": self.divergence.as_ref().map(Divergence::to_json),
            "evidence": self.evidence.as_ref().map(EvidenceReport::to_json),
            "base_height": self.base_height,
            "finality": self.finality.as_ref().map(|f| json!({
                "digests_checked": f.digests,
                "certificates_checked": f.certificates,
                "certified_directly": f.certificates,
                "certified_through_descendant": f.through_descendant(),
                "last_certified_height": f.last_certified,
                "uncovered": f.uncovered().map(|(from, to)| json!({"from": from, "to": to})),
            })),
        })
    }
}

/// The replay's start at a source's [`Base`] (module docs of `source.rs`): the base state's
/// LtHash must be block `block`'s state root, and the block signed by the genesis sequencer (or
/// a validator of the set). On a chain with validators the block's recorded digest (`finality`)
/// is where the digests chain from, returned. Errors: the divergence (field `base.state_root`
/// or `base.signature`).
#[allow(clippy::type_complexity)]
fn start_from_base(
    ctx: &Arc<ChainContext>,
    base: Base,
    block: &Block,
    finality: Option<&Finality>,
) -> Result<(Replayer, Option<[u8; 32]>), Box<Divergence>> {
    let header = &block.header.header;
    if header.height != base.height {
        return Err(Box::new(Divergence::new(
            header.height,
            "base.height",
            base.height.to_string(),
            header.height.to_string(),
        )));
    }
    ctx.genesis()
        .check_block_signer(&block.header)
        .map_err(|e| {
            Box::new(Divergence::new(
                header.height,
                "base.signature",
                "a header signed by the chain's sequencer or a validator".into(),
                e.to_string(),
            ))
        })?;
    let state_hash = gamechain_runtime::chain::StateHash::from_entries(
        ctx.genesis().state_commitment(),
        &base.state.map,
    );
    if state_hash.root() != header.state_root {
        return Err(Box::new(Divergence::new(
            header.height,
            "base.state_root",
            hex::encode(header.state_root),
            hex::encode(state_hash.root()),
        )));
    }
    let digest = finality.map(|f| f.digest);
    Ok((
        Replayer::resume(ctx.clone(), base.state, state_hash, header.clone()),
        digest,
    ))
}

/// What the reader thread sends, in order: blocks 0..=head, then the expected state.
enum Read {
    Block(Box<CheckedBlock>, Option<Finality>),
    State(Option<ExpectedState>),
    /// Two different signed headers at one height (the source's `equivocation`).
    Equivocation(Box<(SignedHeader, SignedHeader)>),
    /// After the state, on a chain with validators: the source's evidence.
    Evidence(Vec<StoredEvidence>),
}

/// The divergence of two different blocks at one height: field `equivocation`, the first
/// signed header as `expected`, the second as `got` (both as JSON). When the second is not
/// signed by `sequencer` it proves nothing about the sequencer, and the field is
/// `header.signature`.
pub fn equivocation(first: &SignedHeader, second: &SignedHeader, sequencer: &str) -> Divergence {
    let show = |h: &SignedHeader| serde_json::to_string(h).expect("a header serialises");
    let signed = second.verify_from(sequencer).is_ok();
    Divergence {
        height: first.header.height,
        tx_index: None,
        txid: None,
        field: if signed {
            "equivocation"
        } else {
            "header.signature"
        }
        .into(),
        expected: format!(
            "one block at height {}: {}",
            first.header.height,
            show(first)
        ),
        got: if signed {
            format!(
                "a second block, also signed by {sequencer}: {}",
                show(second)
            )
        } else {
            format!(
                "a second block whose signature is not {sequencer}'s: {}",
                show(second)
            )
        },
        state_diff: Vec::new(),
        block_writes: Vec::new(),
    }
}

/// The genesis modules' wasm by code hash, as [`chain_context`] read it from the source.
pub type GenesisCodes = BTreeMap<String, Vec<u8>>;

/// Builds the chain context of `source`'s chain: genesis, this build's runtime under genesis's
/// limits, and the modules compiled from the source's code for each genesis code hash (returned
/// too: genesis writes it at `code/<hash>`). Modules deployed later compile from the replayed
/// state. Code that does not hash to its hash is a divergence at height 0
/// (`module_code[<id>]`).
pub fn chain_context(
    source: &mut dyn ChainSource,
    options: &VerifyOptions,
) -> Result<Result<(Arc<ChainContext>, GenesisCodes), Divergence>, VerifyError> {
    let genesis = source.genesis()?;
    let codes = genesis_codes(source, &genesis)?;
    context_from(genesis, codes, options)
}

/// The source's code of each genesis module, by code hash (not checked yet).
fn genesis_codes(
    source: &mut dyn ChainSource,
    genesis: &Genesis,
) -> Result<GenesisCodes, VerifyError> {
    let mut codes = BTreeMap::new();
    for m in &genesis.modules {
        codes.insert(m.code_hash.clone(), source.code(&m.code_hash)?);
    }
    Ok(codes)
}

/// [`chain_context`] from a genesis and its modules' code: checks and compiles the code.
fn context_from(
    genesis: Genesis,
    codes: GenesisCodes,
    options: &VerifyOptions,
) -> Result<Result<(Arc<ChainContext>, GenesisCodes), Divergence>, VerifyError> {
    let mut config = runtime_config(&genesis, options.allocation);
    config.reuse_instances = options.reuse_instances;
    let runtime = Runtime::new(config).map_err(|e| VerifyError::Setup(e.to_string()))?;
    let modules = match Modules::from_genesis(&runtime, &genesis, &codes) {
        Ok(m) => m,
        Err(RegistryError::CodeHash {
            id,
            expected,
            found,
        }) => {
            return Ok(Err(Divergence {
                height: 0,
                tx_index: None,
                txid: None,
                field: format!("module_code[{id}]"),
                expected,
                got: found,
                state_diff: Vec::new(),
                block_writes: Vec::new(),
            }))
        }
        Err(e) => return Err(VerifyError::Setup(e.to_string())),
    };
    let mut ctx = ChainContext::new(genesis, runtime, modules)
        .map_err(|e| VerifyError::Setup(e.to_string()))?;
    if let Some(threads) = options.verify_threads {
        ctx = ctx.with_verify_threads(threads);
    }
    Ok(Ok((Arc::new(ctx), codes)))
}

/// Replays `source`'s chain from genesis to its head (see the module docs). `progress` is
/// called after every block. Errors: [`VerifyError`]; a divergence is not an error but
/// [`VerifyReport::divergence`].
pub fn verify(
    mut source: Box<dyn ChainSource>,
    options: &VerifyOptions,
    progress: &mut dyn FnMut(&Progress),
) -> Result<VerifyReport, VerifyError> {
    let start = Instant::now();
    let genesis = source.genesis()?;
    let mut report = VerifyReport {
        source: source.describe(),
        chain_id: genesis.chain_id.clone(),
        genesis_hash: hex::encode(genesis.hash()),
        head_height: 0,
        blocks: 0,
        txs: 0,
        state_root: String::new(),
        head_hash: String::new(),
        state_entries_checked: None,
        elapsed: Duration::ZERO,
        divergence: None,
        finality: genesis
            .validators
            .as_ref()
            .map(|_| FinalityReport::default()),
        evidence: None,
        base_height: None,
    };
    let codes = genesis_codes(source.as_mut(), &genesis)?;
    let head = source.head_height()?;
    report.head_height = head;
    let base = source.base()?;
    let from = base.as_ref().map_or(0, |b| b.height);
    report.base_height = base.as_ref().map(|b| b.height);

    // The reader starts before the modules compile: the signature checks need only the chain
    // id and the network, so the first blocks are read and checked meanwhile.
    let (tx, rx) = mpsc::sync_channel::<Result<Read, SourceError>>(READ_AHEAD);
    let (chain_id, network) = (genesis.chain_id.clone(), genesis.network);
    let validators = genesis.validators.is_some();
    let threads = options
        .verify_threads
        .unwrap_or_else(default_verify_threads)
        .max(1);
    let reader = std::thread::spawn(move || {
        for height in from..=head {
            // The signature checks run here, while the replay executes earlier blocks.
            let item = match source.block(height) {
                Ok(b) => {
                    let finality = if validators {
                        match source.finality(height) {
                            Ok(f) => f,
                            Err(e) => {
                                let _ = tx.send(Err(e));
                                return;
                            }
                        }
                    } else {
                        None
                    };
                    Ok(Read::Block(
                        Box::new(check_block_for(&chain_id, network, b, threads)),
                        finality,
                    ))
                }
                Err(e) => match source.equivocation() {
                    Some(pair) => Ok(Read::Equivocation(Box::new(pair))),
                    None => Err(e),
                },
            };
            let failed = item.is_err();
            if tx.send(item).is_err() || failed {
                return;
            }
        }
        let state = match source.expected_state() {
            Ok(state) => Ok(Read::State(state)),
            Err(e) => match source.equivocation() {
                Some(pair) => Ok(Read::Equivocation(Box::new(pair))),
                None => Err(e),
            },
        };
        let failed = state.is_err();
        if tx.send(state).is_err() || failed || !validators {
            return;
        }
        let _ = tx.send(source.evidence().map(Read::Evidence));
    });
    let mut next = move || -> Result<Read, VerifyError> {
        match rx.recv() {
            Ok(item) => Ok(item?),
            Err(_) => Err(VerifyError::Source("the reader stopped".into())),
        }
    };
    let result = match context_from(genesis, codes, options) {
        Ok(Ok((ctx, codes))) => replay_all(
            &ctx,
            &codes,
            base,
            head,
            &mut next,
            &mut report,
            start,
            progress,
        ),
        Ok(Err(d)) => {
            report.divergence = Some(d);
            Ok(())
        }
        Err(e) => Err(e),
    };
    // Dropping the receiver stops a reader still ahead (its next send fails).
    drop(next);
    let _ = reader.join();
    result?;
    report.elapsed = start.elapsed();
    Ok(report)
}

#[allow(clippy::too_many_arguments)]
fn replay_all(
    ctx: &Arc<ChainContext>,
    codes: &GenesisCodes,
    base: Option<Base>,
    head: u64,
    next: &mut dyn FnMut() -> Result<Read, VerifyError>,
    report: &mut VerifyReport,
    start: Instant,
    progress: &mut dyn FnMut(&Progress),
) -> Result<(), VerifyError> {
    let sequencer = ctx.genesis().sequencer.clone();
    let expect_block = |read: Read| match read {
        Read::Block(b, f) => Ok(Ok((b, f))),
        Read::Equivocation(pair) => Ok(Err(Box::new(equivocation(&pair.0, &pair.1, &sequencer)))),
        Read::State(_) | Read::Evidence(_) => {
            Err(VerifyError::Source("the source ended early".into()))
        }
    };
    let (block0, finality0) = match expect_block(next()?)? {
        Ok(b) => b,
        Err(d) => {
            report.divergence = Some(*d);
            return Ok(());
        }
    };
    let from = base.as_ref().map_or(0, |b| b.height);
    let mut base_digest = None;
    let mut replayer = match base {
        None => match Replayer::new(ctx.clone(), &block0.block, codes) {
            Ok(r) => r,
            Err(d) => {
                report.divergence = Some(*d);
                return Ok(());
            }
        },
        Some(base) => match start_from_base(ctx, base, &block0.block, finality0.as_ref()) {
            Ok((r, d)) => {
                base_digest = d;
                r
            }
            Err(d) => {
                report.divergence = Some(*d);
                return Ok(());
            }
        },
    };
    let checker = match &ctx.genesis().validators {
        Some(_) => Some(
            FinalityChecker::new(ctx.genesis(), &report.genesis_hash)
                .map_err(|e| VerifyError::Source(format!("the genesis validator set: {e}")))?,
        ),
        None => None,
    };
    let mut digest = base_digest.unwrap_or([0; 32]);
    let mut finality = report.finality.take().unwrap_or_default();
    if from > 0 && checker.is_some() {
        // The base needs a descendant's certificate (`FinalityReport::floor`).
        finality.floor = from - 1;
        finality.checked_to = from;
        report.finality = Some(finality.clone());
    }
    let mut finality_of = |report: &mut VerifyReport, block: &Block, f: Option<Finality>| -> bool {
        let Some(checker) = &checker else { return true };
        let result = check_finality(checker, &mut digest, block, f, &mut finality);
        report.finality = Some(finality.clone());
        match result {
            Ok(()) => true,
            Err(d) => {
                report.divergence = Some(*d);
                false
            }
        }
    };
    let mark = |report: &mut VerifyReport, replayer: &Replayer| {
        report.blocks += 1;
        report.state_root = hex::encode(replayer.head().state_root);
        report.head_hash = replayer.head().hash_hex();
    };
    mark(report, &replayer);
    if from == 0 && !finality_of(report, &block0.block, finality0) {
        return Ok(());
    }
    progress(&Progress {
        height: from,
        head,
        txs: 0,
        elapsed: start.elapsed(),
    });
    for height in from + 1..=head {
        let (block, block_finality) = match expect_block(next()?)? {
            Ok(b) => b,
            Err(d) => {
                report.divergence = Some(*d);
                return Ok(());
            }
        };
        match replayer.apply_checked(&block) {
            Ok(_) => {}
            Err(ReplayError::Host(m)) => return Err(VerifyError::Host(m)),
            Err(ReplayError::Diverged(mut d)) => {
                if height == head && d.field == "header.state_root" {
                    // The stored head state is the expected state after this very block.
                    let writes: WriteSet = d.block_writes.iter().cloned().collect();
                    if let Read::State(Some(expected)) = next()? {
                        d.state_diff =
                            state_differences(&expected.state, &replayer.state_with(&writes));
                    }
                }
                report.divergence = Some(*d);
                return Ok(());
            }
        }
        report.txs += block.block.txs.len() as u64;
        mark(report, &replayer);
        if !finality_of(report, &block.block, block_finality) {
            return Ok(());
        }
        progress(&Progress {
            height,
            head,
            txs: report.txs,
            elapsed: start.elapsed(),
        });
    }
    let expected = match next()? {
        Read::State(expected) => expected,
        Read::Equivocation(pair) => {
            report.divergence = Some(equivocation(&pair.0, &pair.1, &sequencer));
            return Ok(());
        }
        Read::Block(..) | Read::Evidence(_) => {
            return Err(VerifyError::Source(
                "the source gave more blocks than its head".into(),
            ))
        }
    };
    if let Some(expected) = expected {
        let diff = state_differences(&expected.state, replayer.state());
        report.state_entries_checked = Some(expected.state.map.len());
        if !diff.is_empty() {
            report.divergence = Some(Divergence {
                height: head,
                tx_index: None,
                txid: None,
                field: "state".into(),
                expected: format!(
                    "the recorded state after block {head} ({} entries)",
                    expected.state.map.len()
                ),
                got: format!(
                    "{} keys differ in the replayed state ({} entries)",
                    diff.len(),
                    replayer.state().map.len()
                ),
                state_diff: diff,
                block_writes: Vec::new(),
            });
            return Ok(());
        }
    }
    if ctx.genesis().validators.is_some() {
        let records = match next()? {
            Read::Evidence(records) => records,
            _ => {
                return Err(VerifyError::Source(
                    "the source gave something else than its evidence".into(),
                ))
            }
        };
        let checker = EvidenceChecker::new(ctx.genesis(), &report.genesis_hash)
            .map_err(|e| VerifyError::Source(format!("the genesis validator set: {e}")))?;
        report.evidence = Some(EvidenceReport::check(&checker, &records));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::FinalityReport;

    #[test]
    fn a_base_is_covered_only_by_a_certificate_above_it() {
        // From genesis: block 0 needs none; 1..=5 uncovered without a certificate.
        let mut f = FinalityReport {
            checked_to: 5,
            ..FinalityReport::default()
        };
        assert_eq!(f.uncovered(), Some((1, 5)));
        f.last_certified = Some(5);
        f.certificates = 2;
        assert_eq!((f.uncovered(), f.through_descendant()), (None, 3));
        // From a base at 40 whose head is the base: the base itself is uncovered.
        let mut f = FinalityReport {
            floor: 39,
            checked_to: 40,
            ..FinalityReport::default()
        };
        assert_eq!(f.uncovered(), Some((40, 40)));
        assert_eq!(f.through_descendant(), 0);
        // A certificate at 43 covers 40..=43; one block certified directly.
        f.checked_to = 45;
        f.last_certified = Some(43);
        f.certificates = 1;
        assert_eq!((f.uncovered(), f.through_descendant()), (Some((44, 45)), 3));
    }
}
