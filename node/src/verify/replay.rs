//! Replaying one block and comparing it with what the chain recorded: [`verify_block`] (pure:
//! a state, its running hash and the parent header in, the block's writes out or the first
//! [`Divergence`]), [`verify_genesis`] (block 0 against the genesis file), and [`Replayer`],
//! which keeps its own state and chains the two. `gamechain verify` (`verify.rs`) and the
//! follower (`follower.rs`) both verify every block through these, so they apply the same rules.
//!
//! Checks of a block, in this order (the first that fails is the divergence, so the field named
//! is the most specific one):
//! 1. `header.height` is the parent's + 1, `header.prev_hash` the parent's hash,
//!    `header.sequencer` genesis's, `header.time_ms` at least the parent's plus genesis's
//!    `min_block_interval_ms` (the spacing rule; no clock is read);
//! 2. the block re-executed (exactly `execute_block`, split in two so the signature checks of
//!    the next block can run while this one executes: [`check_block`], then
//!    `BlockBuilder::push_checked` and `finish`) with the header's time and checkpoint and the
//!    recorded transactions: every transaction's stateless checks and signature (`tx.body`,
//!    `tx.signature`) and nonce (`tx.nonce`);
//! 3. each transaction receipt, field by field: `receipt.ok`, `receipt.error`,
//!    `receipt.events`, `receipt.fuel_used` (with the transaction's index and txid);
//! 4. the end-of-block receipts: the list of modules (`end_block.modules`), then each
//!    `end_block[<id>].<field>`;
//! 5. the recomputed header: `header.tx_root`, `header.receipt_root`, `header.state_root`
//!    (with the block's replayed net writes, since stored data has no per-block writes);
//! 6. the sequencer's signature of the header (`header.signature`).

use std::collections::BTreeMap;
use std::fmt;

use gamechain_runtime::chain::{
    BlockError, Header, Network, Receipt, ScheduledReceipt, SignedTx, StateHash, TxBody, TxError,
};
use gamechain_runtime::{
    check_txs, genesis_state, BlockBuilder, BlockOutput, ChainContext, MemState, State,
    TransitionError, TxRejection, WriteSet,
};
use serde_json::{json, Value};

use gamechain_chain::wire::Block;

/// One state key whose value differs: `expected` is the chain's (stored or exported), `got` the
/// replay's; `None` is an absent key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyDiff {
    /// The state key.
    pub key: String,
    /// The value the chain recorded.
    pub expected: Option<Vec<u8>>,
    /// The value the replay computed.
    pub got: Option<Vec<u8>>,
}

/// Longest value [`show_value`] shows whole, bytes; longer ones (module code, say) are cut.
pub const SHOW_VALUE_MAX: usize = 256;

/// A value for people and JSON: its UTF-8 text when it is UTF-8, else `0x` and lowercase hex.
/// A value longer than [`SHOW_VALUE_MAX`] bytes shows its first 64 bytes, then `… (<n> bytes,
/// sha256 <hex>)`.
pub fn show_value(value: &[u8]) -> String {
    let text = |v: &[u8]| match std::str::from_utf8(v) {
        Ok(text) => text.to_string(),
        Err(_) => format!("0x{}", hex::encode(v)),
    };
    if value.len() <= SHOW_VALUE_MAX {
        return text(value);
    }
    use sha2::Digest;
    let head = match std::str::from_utf8(value) {
        Ok(t) => t.chars().take(64).collect::<String>(),
        Err(_) => text(&value[..64]),
    };
    format!(
        "{head}… ({} bytes, sha256 {})",
        value.len(),
        hex::encode(sha2::Sha256::digest(value))
    )
}

fn show_opt(value: &Option<Vec<u8>>) -> Value {
    value
        .as_deref()
        .map_or(Value::Null, |v| json!(show_value(v)))
}

/// Where and why a replay disagrees with the chain it replays: the first difference found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Divergence {
    /// The block height.
    pub height: u64,
    /// The transaction's index in the block, when the difference is about one transaction.
    pub tx_index: Option<usize>,
    /// That transaction's txid.
    pub txid: Option<String>,
    /// What differs, e.g. `header.state_root`, `receipt.fuel_used`, `tx.signature`,
    /// `end_block[tictactoe].events`, `state` (see the module docs for the list).
    pub field: String,
    /// The chain's value (hex for hashes, JSON for receipts and events), or what was required.
    pub expected: String,
    /// The replay's value, or why the check failed.
    pub got: String,
    /// State keys whose values differ, expected and got, when the chain's state at this height
    /// is known (the stored or exported state at the head).
    pub state_diff: Vec<KeyDiff>,
    /// The block's net writes in the replay (`None`: deleted), given with a `header.state_root`
    /// difference: the keys among which the chain and the replay disagree.
    pub block_writes: Vec<(String, Option<Vec<u8>>)>,
}

impl Divergence {
    pub(crate) fn new(
        height: u64,
        field: impl Into<String>,
        expected: String,
        got: String,
    ) -> Self {
        Divergence {
            height,
            tx_index: None,
            txid: None,
            field: field.into(),
            expected,
            got,
            state_diff: Vec::new(),
            block_writes: Vec::new(),
        }
    }

    fn at_tx(mut self, index: usize, txid: String) -> Self {
        self.tx_index = Some(index);
        self.txid = Some(txid);
        self
    }

    /// The JSON form (`gamechain verify --json`): `{"height", "tx_index", "txid", "field",
    /// "expected", "got", "state_diff": [{"key", "expected", "got"}], "block_writes": [{"key",
    /// "value"}]}`; values by [`show_value`], `null` for an absent key or a missing index.
    pub fn to_json(&self) -> Value {
        json!({
            "height": self.height,
            "tx_index": self.tx_index,
            "txid": self.txid,
            "field": self.field,
            "expected": self.expected,
            "got": self.got,
            "state_diff": self.state_diff.iter().map(|d| json!({
                "key": d.key, "expected": show_opt(&d.expected), "got": show_opt(&d.got)
            })).collect::<Vec<_>>(),
            "block_writes": self.block_writes.iter().map(|(k, v)| json!({
                "key": k, "value": show_opt(v)
            })).collect::<Vec<_>>(),
        })
    }
}

impl fmt::Display for Divergence {
    /// Several lines: where, which field, expected and got, then the keys.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "divergence at height {}", self.height)?;
        if let (Some(i), Some(txid)) = (self.tx_index, &self.txid) {
            write!(f, ", transaction {i} ({txid})")?;
        }
        writeln!(f, ": {} differs", self.field)?;
        writeln!(f, "  expected: {}", self.expected)?;
        write!(f, "  got:      {}", self.got)?;
        if !self.state_diff.is_empty() {
            write!(f, "\n  state keys that differ (expected -> got):")?;
            for d in &self.state_diff {
                let show = |v: &Option<Vec<u8>>| v.as_deref().map_or("(absent)".into(), show_value);
                write!(
                    f,
                    "\n    {}: {} -> {}",
                    d.key,
                    show(&d.expected),
                    show(&d.got)
                )?;
            }
        }
        if !self.block_writes.is_empty() {
            write!(f, "\n  the block's writes in the replay:")?;
            for (k, v) in &self.block_writes {
                let v = v.as_deref().map_or("(deleted)".into(), show_value);
                write!(f, "\n    {k} = {v}")?;
            }
        }
        Ok(())
    }
}

/// Why a block could not be verified at all: not a divergence of the chain but a failure of
/// this machine (the wasm engine, the instance pool).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplayError {
    /// The chain and the replay disagree.
    Diverged(Box<Divergence>),
    /// The replaying node failed (`TransitionError::Host`); retrying may succeed.
    Host(String),
}

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplayError::Diverged(d) => write!(f, "{d}"),
            ReplayError::Host(m) => write!(f, "the replaying node failed: {m}"),
        }
    }
}

impl std::error::Error for ReplayError {}

impl From<Divergence> for ReplayError {
    fn from(d: Divergence) -> Self {
        ReplayError::Diverged(Box::new(d))
    }
}

impl From<Box<Divergence>> for ReplayError {
    fn from(d: Box<Divergence>) -> Self {
        ReplayError::Diverged(d)
    }
}

fn hex32(bytes: &[u8; 32]) -> String {
    hex::encode(bytes)
}

fn to_json_text<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("receipt parts serialise")
}

/// The header fields that differ between `expected` and `got`, in declaration order, as
/// `(field, expected, got)`.
pub(crate) fn header_differences(
    expected: &Header,
    got: &Header,
) -> Vec<(&'static str, String, String)> {
    let mut out = Vec::new();
    let mut check = |name, e: String, g: String| {
        if e != g {
            out.push((name, e, g));
        }
    };
    check(
        "header.height",
        expected.height.to_string(),
        got.height.to_string(),
    );
    check(
        "header.prev_hash",
        hex32(&expected.prev_hash),
        hex32(&got.prev_hash),
    );
    check(
        "header.time_ms",
        expected.time_ms.to_string(),
        got.time_ms.to_string(),
    );
    check(
        "header.sequencer",
        expected.sequencer.clone(),
        got.sequencer.clone(),
    );
    check(
        "header.checkpoint",
        to_json_text(&expected.checkpoint),
        to_json_text(&got.checkpoint),
    );
    check(
        "header.tx_root",
        hex32(&expected.tx_root),
        hex32(&got.tx_root),
    );
    check(
        "header.receipt_root",
        hex32(&expected.receipt_root),
        hex32(&got.receipt_root),
    );
    check(
        "header.state_root",
        hex32(&expected.state_root),
        hex32(&got.state_root),
    );
    out
}

/// The first field of `expected` (the chain's) that differs from `got` (the replay's):
/// `ok`, `error`, `events`, `fuel_used`, as `(field, expected, got)` JSON texts.
fn receipt_difference(expected: &Receipt, got: &Receipt) -> Option<(&'static str, String, String)> {
    if expected == got {
        // Equal receipts hash equally: `Event` data are JSON values, hashed canonically.
        return None;
    }
    let pairs = [
        ("ok", to_json_text(&expected.ok), to_json_text(&got.ok)),
        (
            "error",
            to_json_text(&expected.error),
            to_json_text(&got.error),
        ),
        (
            "events",
            to_json_text(&expected.events),
            to_json_text(&got.events),
        ),
        (
            "fuel_used",
            expected.fuel_used.to_string(),
            got.fuel_used.to_string(),
        ),
    ];
    pairs.into_iter().find(|(_, e, g)| e != g).or_else(|| {
        // Same JSON but different hashes (e.g. event data that only canonicalises equal):
        // the hash is what the chain commits to.
        (expected.hash() != got.hash())
            .then(|| ("hash", hex32(&expected.hash()), hex32(&got.hash())))
    })
}

fn check_signature(block: &Block, sequencer: &str) -> Result<(), Box<Divergence>> {
    let height = block.height();
    block.header.verify_from(sequencer).map_err(|e| {
        let (field, expected) = match &e {
            BlockError::WrongSequencer { expected, .. } => ("header.sequencer", expected.clone()),
            BlockError::BadSignature(_) => (
                "header.signature",
                format!(
                    "a signature by {sequencer} of {}",
                    block.header.header.hash_hex()
                ),
            ),
        };
        Box::new(Divergence::new(height, field, expected, e.to_string()))
    })
}

/// Checks block 0 against `ctx`'s genesis: its header is exactly [`genesis_state`]'s (field by
/// field), signed by the sequencer, without transactions or end-of-block receipts. `codes` maps
/// code hashes to the genesis modules' wasm (genesis writes it at `code/<hash>`). Returns the
/// genesis state and its running hash.
pub fn verify_genesis(
    ctx: &ChainContext,
    block: &Block,
    codes: &BTreeMap<String, Vec<u8>>,
) -> Result<(MemState, StateHash), Box<Divergence>> {
    let genesis = ctx.genesis();
    let gs = genesis_state(genesis, codes)
        .map_err(|e| Divergence::new(0, "genesis", "a valid genesis".into(), e.to_string()))?;
    if let Some((field, e, g)) = header_differences(&block.header.header, &gs.header)
        .into_iter()
        .next()
    {
        return Err(Box::new(Divergence::new(0, field, e, g)));
    }
    if !block.txs.is_empty() || !block.end_block.is_empty() {
        return Err(Box::new(Divergence::new(
            0,
            "txs",
            "no transactions or receipts in block 0".into(),
            format!(
                "{} transactions, {} end-of-block receipts",
                block.txs.len(),
                block.end_block.len()
            ),
        )));
    }
    // A chain with validators has no signer for block 0: genesis alone fixes it, and every
    // validator makes the same one (`docs/validators.md`).
    if genesis.validators.is_none() {
        check_signature(block, &genesis.sequencer)?;
    } else if !block.header.signature.is_empty() {
        return Err(Box::new(Divergence::new(
            0,
            "header.signature",
            "no signature on block 0 of a chain with validators".into(),
            block.header.signature.clone(),
        )));
    }
    let state = MemState {
        map: gs.entries.into_iter().collect(),
    };
    Ok((state, gs.state_hash))
}

fn rejection_field(reason: &TxRejection) -> &'static str {
    match reason {
        TxRejection::Check(TxError::BadSignature(_)) => "tx.signature",
        TxRejection::Check(_) => "tx.body",
        TxRejection::Nonce { .. } | TxRejection::NonceExhausted => "tx.nonce",
        TxRejection::BlockFull { .. } => "block.bounds",
        TxRejection::CannotPayFee { .. } => "tx.fee",
        TxRejection::Session(_) => "tx.session",
    }
}

/// A block with the stateless checks (size, shape, chain id, address, signature) of each of its
/// transactions done: what [`check_block`] returns, on any thread, ahead of [`verify_block`].
#[derive(Debug, Clone)]
pub struct CheckedBlock {
    /// The block.
    pub block: Block,
    /// [`SignedTx::check`] of each transaction, in block order.
    pub checks: Vec<Result<TxBody, TxError>>,
}

/// Runs the stateless checks of `block`'s transactions on up to `threads` threads
/// ([`check_txs`]). Pure: can run while the previous block executes.
pub fn check_block(ctx: &ChainContext, block: Block, threads: usize) -> CheckedBlock {
    let genesis = ctx.genesis();
    check_block_for(&genesis.chain_id, genesis.network, block, threads)
}

/// [`check_block`] for the chain `chain_id` on `network`, before its context (its compiled
/// modules) exists: the checks need nothing else.
pub fn check_block_for(
    chain_id: &str,
    network: Network,
    block: Block,
    threads: usize,
) -> CheckedBlock {
    let txs: Vec<SignedTx> = block.txs.iter().map(|t| t.tx.clone()).collect();
    let checks = check_txs(&txs, chain_id, network, threads);
    CheckedBlock { block, checks }
}

/// Exactly [`execute_block`] of the block's header time and checkpoint and its transactions,
/// with the stateless checks already done ([`BlockBuilder::push_checked`] then `finish`).
fn execute_checked(
    ctx: &ChainContext,
    state: &dyn State,
    state_hash: &StateHash,
    parent: &Header,
    checked: &CheckedBlock,
) -> Result<BlockOutput, TransitionError> {
    let header = &checked.block.header.header;
    let mut builder = BlockBuilder::new(
        ctx,
        state,
        state_hash,
        parent,
        header.time_ms,
        header.checkpoint.clone(),
        header.beacon,
    )?;
    if ctx.genesis().validators.is_some() {
        // `verify_block` checked that the header names a validator.
        builder.set_proposer(&header.sequencer);
    }
    for (index, (t, check)) in checked.block.txs.iter().zip(&checked.checks).enumerate() {
        let body = check.clone().map_err(|e| TransitionError::InvalidTx {
            index,
            txid: t.tx.txid(),
            reason: TxRejection::Check(e),
        })?;
        builder.push_checked(&t.tx, body)?;
    }
    builder.finish()
}

/// Re-executes `checked`'s block on `state` (the state after `parent`, whose running hash is
/// `state_hash`) and compares everything it recorded (module docs, in that order). Returns the
/// replay's output (net writes, new state hash) when the block is exactly what the chain says;
/// the first [`Divergence`] otherwise; [`ReplayError::Host`] when this machine failed.
/// `state` is not changed: the caller applies `output.writes`.
pub fn verify_block(
    ctx: &ChainContext,
    state: &dyn State,
    state_hash: &StateHash,
    parent: &Header,
    checked: &CheckedBlock,
) -> Result<BlockOutput, ReplayError> {
    let block = &checked.block;
    let header = &block.header.header;
    let height = header.height;
    let genesis = ctx.genesis();
    let expect = |cond: bool, field: &str, e: String, g: String| -> Result<(), Box<Divergence>> {
        if cond {
            Ok(())
        } else {
            Err(Box::new(Divergence::new(height, field, e, g)))
        }
    };
    expect(
        header.height == parent.height + 1,
        "header.height",
        (parent.height + 1).to_string(),
        header.height.to_string(),
    )?;
    expect(
        header.prev_hash == parent.hash(),
        "header.prev_hash",
        parent.hash_hex(),
        hex32(&header.prev_hash),
    )?;
    let proposer_ok = match &genesis.validators {
        None => header.sequencer == genesis.sequencer,
        Some(set) => set.by_address(&header.sequencer).is_some(),
    };
    expect(
        proposer_ok,
        "header.sequencer",
        match &genesis.validators {
            None => genesis.sequencer.clone(),
            Some(_) => "the address of a validator of the genesis set".into(),
        },
        header.sequencer.clone(),
    )?;
    let clock = genesis.clock();
    expect(
        clock.check_spacing(parent.time_ms, header.time_ms).is_ok(),
        "header.time_ms",
        if clock.min_block_interval_ms == 0 {
            format!("at least the parent's {}", parent.time_ms)
        } else {
            format!(
                "at least the parent's {} + min_block_interval_ms {} = {}",
                parent.time_ms,
                clock.min_block_interval_ms,
                clock.earliest_child_time(parent.time_ms)
            )
        },
        header.time_ms.to_string(),
    )?;

    let out = match execute_checked(ctx, state, state_hash, parent, checked) {
        Ok(out) => out,
        Err(TransitionError::InvalidTx {
            index,
            txid,
            reason,
        }) => {
            let field = rejection_field(&reason);
            return Err(Divergence::new(
                height,
                field,
                "a transaction that can be included".into(),
                reason.to_string(),
            )
            .at_tx(index, txid)
            .into());
        }
        Err(TransitionError::Host(e)) => return Err(ReplayError::Host(e.to_string())),
        Err(TransitionError::BadBeacon(why)) => {
            return Err(Divergence::new(
                height,
                "header.beacon",
                "the genesis beacon key's signature of this height".into(),
                why,
            )
            .into())
        }
        Err(e @ (TransitionError::BadParent(_) | TransitionError::CorruptState { .. })) => {
            return Err(Divergence::new(
                height,
                "parent",
                "a block that follows its parent".into(),
                e.to_string(),
            )
            .into())
        }
    };

    let calls = |list: &[ScheduledReceipt]| -> String {
        to_json_text(
            &list
                .iter()
                .map(|s| format!("{}#{}", s.module, s.id))
                .collect::<Vec<_>>(),
        )
    };
    expect(
        calls(&block.scheduled) == calls(&out.scheduled),
        "scheduled.calls",
        calls(&block.scheduled),
        calls(&out.scheduled),
    )?;
    for (recorded, replayed) in block.scheduled.iter().zip(&out.scheduled) {
        if let Some((field, e, g)) = receipt_difference(&recorded.receipt, &replayed.receipt) {
            return Err(Divergence::new(
                height,
                format!("scheduled[{}#{}].{field}", recorded.module, recorded.id),
                e,
                g,
            )
            .into());
        }
    }
    for (index, (recorded, replayed)) in block.txs.iter().zip(&out.receipts).enumerate() {
        if let Some((field, e, g)) = receipt_difference(&recorded.receipt, replayed) {
            return Err(Divergence::new(height, format!("receipt.{field}"), e, g)
                .at_tx(index, recorded.tx.txid())
                .into());
        }
    }
    let modules = |list: &[(String, Receipt)]| -> String {
        to_json_text(&list.iter().map(|(m, _)| m.as_str()).collect::<Vec<_>>())
    };
    expect(
        modules(&block.end_block) == modules(&out.end_block),
        "end_block.modules",
        modules(&block.end_block),
        modules(&out.end_block),
    )?;
    for ((module, recorded), (_, replayed)) in block.end_block.iter().zip(&out.end_block) {
        if let Some((field, e, g)) = receipt_difference(recorded, replayed) {
            return Err(
                Divergence::new(height, format!("end_block[{module}].{field}"), e, g).into(),
            );
        }
    }
    if let Some((field, e, g)) = header_differences(header, &out.header).into_iter().next() {
        let mut d = Divergence::new(height, field, e, g);
        if field == "header.state_root" {
            d.block_writes = out
                .writes
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
        }
        return Err(d.into());
    }
    check_signature(block, &header.sequencer)?;
    Ok(out)
}

/// The keys whose values differ between `expected` (the chain's state) and `got` (the
/// replay's), in key order.
pub fn state_differences(expected: &MemState, got: &MemState) -> Vec<KeyDiff> {
    let mut keys: std::collections::BTreeSet<&String> = expected.map.keys().collect();
    keys.extend(got.map.keys());
    keys.into_iter()
        .filter_map(|k| {
            let (e, g) = (expected.map.get(k), got.map.get(k));
            (e != g).then(|| KeyDiff {
                key: k.clone(),
                expected: e.cloned(),
                got: g.cloned(),
            })
        })
        .collect()
}

/// A replay in progress: its own state, running hash and last verified header.
pub struct Replayer {
    ctx: std::sync::Arc<ChainContext>,
    state: MemState,
    state_hash: StateHash,
    head: Header,
}

impl Replayer {
    /// Starts at block 0, checked by [`verify_genesis`] (`codes`: the genesis modules' wasm
    /// by code hash).
    pub fn new(
        ctx: std::sync::Arc<ChainContext>,
        block0: &Block,
        codes: &BTreeMap<String, Vec<u8>>,
    ) -> Result<Self, Box<Divergence>> {
        let (state, state_hash) = verify_genesis(&ctx, block0, codes)?;
        Ok(Replayer {
            ctx,
            state,
            state_hash,
            head: block0.header.header.clone(),
        })
    }

    /// Continues a replay from `head` with `state` (the state after it) and its running hash,
    /// e.g. the stored state of a restarted node. Trusted as given: nothing before `head` is
    /// checked again, and a `state_hash` that does not hash `state` shows as a divergence at the
    /// next block.
    pub fn resume(
        ctx: std::sync::Arc<ChainContext>,
        state: MemState,
        state_hash: StateHash,
        head: Header,
    ) -> Self {
        Replayer {
            ctx,
            state,
            state_hash,
            head,
        }
    }

    /// Verifies `checked` ([`verify_block`]) on top of the replay's head and, when it matches,
    /// applies its writes. Returns the replay's output for the block. On an error nothing
    /// changes.
    pub fn apply_checked(&mut self, checked: &CheckedBlock) -> Result<BlockOutput, ReplayError> {
        let out = verify_block(
            &self.ctx,
            &self.state,
            &self.state_hash,
            &self.head,
            checked,
        )?;
        self.state.apply(out.writes.clone());
        self.state_hash = out.state_hash.clone();
        self.head = checked.block.header.header.clone();
        Ok(out)
    }

    /// [`check_block`] (on the context's verify threads) then [`Replayer::apply_checked`].
    pub fn apply(&mut self, block: &Block) -> Result<BlockOutput, ReplayError> {
        let checked = check_block(&self.ctx, block.clone(), self.ctx.verify_threads());
        self.apply_checked(&checked)
    }

    /// The state after the head, with `writes` applied (what the state would be had a
    /// diverging block been accepted).
    pub fn state_with(&self, writes: &WriteSet) -> MemState {
        let mut state = self.state.clone();
        state.apply(writes.clone());
        state
    }

    /// The replayed state after the head.
    pub fn state(&self) -> &MemState {
        &self.state
    }

    /// The running hash of [`Replayer::state`].
    pub fn state_hash(&self) -> &StateHash {
        &self.state_hash
    }

    /// The last verified header.
    pub fn head(&self) -> &Header {
        &self.head
    }

    /// The chain context it replays under.
    pub fn ctx(&self) -> &std::sync::Arc<ChainContext> {
        &self.ctx
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_values_are_cut_and_named_by_their_hash() {
        assert_eq!(show_value(b"42"), "42");
        assert_eq!(show_value(&[0, 255]), "0x00ff");
        let code = vec![0xffu8; 700_000];
        let shown = show_value(&code);
        assert!(shown.len() < 300, "{}", shown.len());
        assert!(
            shown.starts_with(&format!("0x{}", "ff".repeat(64))),
            "{shown}"
        );
        use sha2::Digest;
        let hash = hex::encode(sha2::Sha256::digest(&code));
        assert!(
            shown.ends_with(&format!("… (700000 bytes, sha256 {hash})")),
            "{shown}"
        );
        let text = "é".repeat(200);
        assert_eq!(
            show_value(text.as_bytes())
                .chars()
                .take(64)
                .collect::<String>(),
            "é".repeat(64)
        );
    }

    fn state(pairs: &[(&str, &str)]) -> MemState {
        MemState {
            map: pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
                .collect(),
        }
    }

    #[test]
    fn state_differences_list_changed_added_and_removed_keys_in_order() {
        let expected = state(&[("a", "1"), ("b", "2"), ("c", "3")]);
        let got = state(&[("a", "1"), ("b", "20"), ("d", "4")]);
        let diff = state_differences(&expected, &got);
        let keys: Vec<&str> = diff.iter().map(|d| d.key.as_str()).collect();
        assert_eq!(keys, ["b", "c", "d"]);
        assert_eq!(diff[0].expected.as_deref(), Some(&b"2"[..]));
        assert_eq!(diff[0].got.as_deref(), Some(&b"20"[..]));
        assert_eq!(
            (diff[1].got.is_none(), diff[2].expected.is_none()),
            (true, true)
        );
        assert!(state_differences(&expected, &expected).is_empty());
    }

    #[test]
    fn values_show_as_text_or_hex_and_divergences_name_everything() {
        assert_eq!(show_value(b"12"), "12");
        assert_eq!(show_value(&[0xff, 0x00]), "0xff00");
        let mut d = Divergence::new(7, "receipt.fuel_used", "10".into(), "11".into())
            .at_tx(2, "ab".repeat(32));
        d.state_diff = vec![KeyDiff {
            key: "bal/x/GOLD".into(),
            expected: Some(b"5".to_vec()),
            got: None,
        }];
        let text = d.to_string();
        assert!(text.starts_with(&format!(
            "divergence at height 7, transaction 2 ({}): receipt.fuel_used differs",
            "ab".repeat(32)
        )));
        assert!(text.contains("expected: 10") && text.contains("got:      11"));
        assert!(text.contains("bal/x/GOLD: 5 -> (absent)"), "{text}");
        let json = d.to_json();
        assert_eq!(json["tx_index"], 2);
        assert_eq!(json["state_diff"][0]["got"], Value::Null);
        assert_eq!(json["state_diff"][0]["expected"], "5");
    }

    #[test]
    fn receipts_differ_by_their_first_field() {
        let a = Receipt::success(Vec::new(), 10);
        assert_eq!(receipt_difference(&a, &a.clone()), None);
        let b = Receipt::success(Vec::new(), 11);
        assert_eq!(
            receipt_difference(&a, &b),
            Some(("fuel_used", "10".into(), "11".into()))
        );
        let c = Receipt::failure("invalid: no", 10);
        assert_eq!(receipt_difference(&a, &c).unwrap().0, "ok");
    }
}
