//! The validator's ledger: executing proposed blocks on the state they build on, and committing
//! finalized ones. Plain blocking code over the node's [`Chain`], with no consensus types other
//! than the digest; `app.rs` calls it from the engine's tasks.
//!
//! **Speculative blocks.** Consensus asks a validator to build on, or vote for, a block whose
//! parent may not be final yet (simplex builds on the latest notarized block). Every block this
//! validator executed and that is not yet committed is kept ([`Executed`]: its net writes, state
//! hash, receipts), by digest. The state after such a block is the committed head under the
//! merged writes of the blocks between the head and it, oldest first; the walk from a block to
//! the head follows parent digests and is bounded by [`MAX_SPECULATIVE_DEPTH`].
//!
//! **One writer.** Executions hold [`Ledger::gate`] for reading, commits for writing, so the
//! head never moves under an execution: the state a block is executed on is exactly the
//! state after its parent.
//!
//! **Bounded.** At most [`MAX_SPECULATIVE_BLOCKS`] executed blocks and [`MAX_SPECULATIVE_BYTES`]
//! of their transactions and writes are kept; beyond, blocks off the newest one's path to the
//! head go first, the highest first, and the head's children (next to commit) last (`remember`).
//!
//! **Committing** a finalized block ([`Ledger::commit_finalized`]) reuses its execution when
//! there is one (else executes it now on the head and commits that very execution, which no
//! eviction can take away: a validator any number of blocks behind commits what marshal
//! delivers one block after the other), writes it with the node's one commit path
//! (`Chain::commit`: SQLite, head, WebSocket), records its digest and finality certificate
//! (`validator_finality` table), and forgets the speculative blocks at or below its height.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock};

use commonware_consensus::Block as _;
use commonware_cryptography::sha256::Digest;
use commonware_cryptography::Digestible as _;

use gamechain_runtime::chain::{
    Action, Beacon, Header, Receipt, ScheduledReceipt, SecretKey, SignedHeader, StateHash, TxBody,
    ValidatorSet,
};
use gamechain_runtime::{
    BlockBuilder, BlockOutput, Layer, StartWitness, State, TransitionError, TxRejection, WriteSet,
};

use gamechain_ledger::sequencer::HeadState;
use gamechain_sdk::Checkpoint;

use crate::validator::block::ProposedBlock;
use gamechain_chain::wire::{Block, IncludedTx};
use gamechain_ledger::chain::Chain;
use gamechain_ledger::sign_state::SignStateFile;
use gamechain_ledger::storage::Storage;
use gamechain_ledger::NodeError;

/// Most blocks between the committed head and a block a validator executes. Deeper, it
/// abstains (the block is far ahead of what this validator has committed; marshal delivers the
/// finalized ones first).
pub const MAX_SPECULATIVE_DEPTH: usize = 256;

/// Most executed, uncommitted blocks a validator keeps (forks and views included): room for a
/// whole walk of [`MAX_SPECULATIVE_DEPTH`] ancestors and as many again.
pub const MAX_SPECULATIVE_BLOCKS: usize = 2 * MAX_SPECULATIVE_DEPTH;

/// Most bytes of transactions and state writes the kept blocks hold together: 256 MiB.
pub const MAX_SPECULATIVE_BYTES: usize = 256 << 20;

/// A block executed on its parent's state, not yet committed.
#[derive(Debug)]
pub struct Executed {
    /// The block.
    pub block: ProposedBlock,
    /// The scheduled calls' receipts, in the order they ran.
    pub scheduled: Vec<ScheduledReceipt>,
    /// The transaction receipts, in block order.
    pub receipts: Vec<Receipt>,
    /// The `end_block` receipts.
    pub end_block: Vec<(String, Receipt)>,
    /// Each transaction's `(from, nonce)`, in block order.
    pub senders: Vec<(String, u64)>,
    /// The block's net writes.
    pub writes: Arc<WriteSet>,
    /// The running state hash after it.
    pub state_hash: StateHash,
    /// Bytes of its transactions (bodies and signatures) and writes (keys and values): what it
    /// counts against [`MAX_SPECULATIVE_BYTES`].
    pub size: usize,
    /// Its starting balances (`BlockOutput::start_witnesses`), recorded when it commits.
    pub start_witnesses: Vec<StartWitness>,
}

impl Executed {
    /// `block`, executed with output `out`; `senders` its transactions' `(from, nonce)`.
    fn of(block: ProposedBlock, out: BlockOutput, senders: Vec<(String, u64)>) -> Executed {
        let size = block
            .txs()
            .iter()
            .map(|t| t.body().len() + t.signature().len())
            .sum::<usize>()
            + out
                .writes
                .iter()
                .map(|(k, v)| k.len() + v.as_ref().map_or(0, Vec::len))
                .sum::<usize>();
        Executed {
            size,
            block,
            scheduled: out.scheduled,
            receipts: out.receipts,
            end_block: out.end_block,
            senders,
            writes: Arc::new(out.writes),
            state_hash: out.state_hash,
            start_witnesses: out.start_witnesses,
        }
    }
}

/// Why a block cannot be executed here (yet, or ever).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecError {
    /// The block is wrong: consensus must not accept it (the text says what).
    Invalid(String),
    /// Its parent is not known here (not executed, not the head): it may become known.
    UnknownParent,
    /// This machine failed (the wasm engine): no verdict.
    Host(String),
}

/// A test-only misbehaviour of a proposer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Proposes blocks whose header claims a wrong state root.
    BadStateRoot,
    /// Its clock is stuck: it stamps every block with the least time the spacing rule allows
    /// (its parent's time plus the interval), however long ago that was.
    FrozenClock,
    /// Its clock runs ahead: it stamps every block ten drift windows in the future.
    FastClock,
    /// Fills every block it proposes with deploys of distinct modules of the largest size, up
    /// to the chain's caps (`flood.rs`), before the mempool's transactions.
    DeployFlood,
    /// It follows each of its notarize and finalize votes with a second one, validly signed,
    /// for another proposal of the same view (`validator/equivocate.rs`).
    Equivocate,
    /// It never releases its share of the beacon (`validator/beacon/`); it still collects the
    /// others' shares and proposes with the beacon they recover.
    WithholdBeacon,
    /// It proposes blocks carrying a beacon of another height: its parent's (a genuine
    /// signature of the group, replayed), or on block 1, whose parent has none, a signature by
    /// a key nobody dealt. The others' execution refuses it (`BadBeacon`).
    WrongBeacon,
}

/// The validator's view of the chain (module docs).
pub struct Ledger {
    /// The node's core: head, mempool, commit path.
    pub chain: Arc<Chain>,
    /// This validator's block-signing key.
    key: SecretKey,
    /// The genesis validator set.
    set: ValidatorSet,
    /// Executions read-lock it, commits write-lock it.
    gate: RwLock<()>,
    /// Executed blocks not committed yet, by digest (lookups only).
    speculative: Mutex<HashMap<Digest, Arc<Executed>>>,
    /// The committed head's digest and height (read without the gate: the engine's async
    /// tasks ask for it, and must never wait behind a commit).
    head_digest: Mutex<(Digest, u64)>,
    /// The database writer and the sign state.
    writer: Mutex<(Storage, SignStateFile)>,
    /// Most transactions a block this validator proposes takes.
    max_block_txs: usize,
    /// Most bytes of transactions (bodies and signatures) a block it proposes takes.
    max_block_tx_bytes: usize,
    /// Test-only misbehaviour.
    fault: Option<Fault>,
    /// Randomness beacons known for heights not committed yet (recovered from the validators'
    /// shares on a chain with a threshold beacon): what a proposal of that height carries.
    beacons: Mutex<BTreeMap<u64, Beacon>>,
    /// Woken (all waiters) when a beacon is added: a leader waiting for one (`app.rs`).
    beacon_added: tokio::sync::Notify,
    /// Woken (one permit) when a block is committed: the beacon task releases the next
    /// height's share (`validator/beacon/`).
    head_moved: tokio::sync::Notify,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Ledger {
    /// The ledger of a validator over `chain`, whose head's digest is `head_digest`, writing
    /// with `storage` and `sign_state`. Errors: `key` is not a validator's.
    pub fn new(
        chain: Arc<Chain>,
        key: SecretKey,
        storage: Storage,
        sign_state: SignStateFile,
        head_digest: Digest,
        max_block_tx_bytes: usize,
        fault: Option<Fault>,
    ) -> Result<Ledger, NodeError> {
        let set =
            chain.genesis().validators.clone().ok_or_else(|| {
                NodeError::Refused("the chain's genesis names no validators".into())
            })?;
        if set.by_address(&key.address()).is_none() {
            return Err(NodeError::Refused(format!(
                "this node's key ({}) is not the key of a validator of the genesis set",
                key.address()
            )));
        }
        // A block over the peers' decoding bound would never be accepted.
        let max_block_txs = chain
            .config
            .max_block_txs
            .min(crate::validator::PROPOSAL_BOUND.max_txs);
        let head_height = chain.head().header.header.height;
        // The modules of blocks above the committed head are kept apart (bounded) until their
        // block is committed, or dropped with it.
        chain.ctx.modules().hold_until_final(head_height);
        let mut storage = storage;
        storage.ensure_validator_tables()?;
        // A directory that joined from a snapshot has no block 0: its base's record was stored
        // by the join.
        if storage.oldest_height()? == Some(0) && storage.validator_digest(0)?.is_none() {
            // Block 0's digest, for marshal's first delivery (genesis).
            let genesis = crate::validator::genesis_proposal(&storage)?;
            storage.put_validator_finality(0, &genesis.digest().0, None)?;
        }
        Ok(Ledger {
            chain,
            key,
            set,
            gate: RwLock::new(()),
            speculative: Mutex::new(HashMap::new()),
            head_digest: Mutex::new((head_digest, head_height)),
            writer: Mutex::new((storage, sign_state)),
            max_block_txs,
            max_block_tx_bytes,
            fault,
            beacons: Mutex::new(BTreeMap::new()),
            beacon_added: tokio::sync::Notify::new(),
            head_moved: tokio::sync::Notify::new(),
        })
    }

    /// The beacon a block at `height` carries: `None` on a chain without a beacon; on a chain
    /// with a threshold beacon, the one recovered for that height so far (`None` until enough
    /// shares arrived: a proposal then fails to start, and the leader declines its view).
    pub fn beacon_for(&self, height: u64) -> Option<Beacon> {
        self.chain.genesis().beacon.as_ref()?;
        lock(&self.beacons).get(&height).copied()
    }

    /// Records the beacon of `height` (already checked against the genesis key by the caller),
    /// forgets those of committed heights, and wakes the leaders waiting for one
    /// ([`Ledger::beacon_added`]).
    pub fn add_beacon(&self, height: u64, beacon: Beacon) {
        let committed = self.head().1;
        {
            let mut beacons = lock(&self.beacons);
            beacons.retain(|h, _| *h > committed);
            if height > committed {
                beacons.insert(height, beacon);
            }
        }
        self.beacon_added.notify_waiters();
    }

    /// Notified (every waiter) each time [`Ledger::add_beacon`] records a beacon. A waiter
    /// enables its `notified()` future before it checks [`Ledger::beacon_for`], so none is
    /// missed.
    pub fn beacon_added(&self) -> &tokio::sync::Notify {
        &self.beacon_added
    }

    /// Notified (one stored permit) after each committed block: the beacon task's cue.
    pub fn head_moved(&self) -> &tokio::sync::Notify {
        &self.head_moved
    }

    /// Whether sealed calls may wait for round `round` (`docs/sealed-moves.md`): one is in the
    /// committed state, or written by a block executed here and not committed yet (any such
    /// block counts, on the head's path or not: a cautious answer). The beacon waits for block
    /// `round - 1` to be final before releasing a share of such a round (`beacon/mod.rs`).
    pub fn sealed_round_waits(&self, round: u64) -> bool {
        let prefix = format!(
            "{}{round:016x}/",
            gamechain_sdk::schedule::SCHED_SEALED_PREFIX
        );
        if !HeadState(&self.chain).scan(&prefix, None, 1).is_empty() {
            return true;
        }
        lock(&self.speculative).values().any(|e| {
            e.writes
                .iter()
                .any(|(k, v)| v.is_some() && k.starts_with(&prefix))
        })
    }

    /// The height of the block `digest`: the head's, or an executed block's; `None` when
    /// neither (not executed here yet, or committed and forgotten).
    pub fn height_of(&self, digest: &Digest) -> Option<u64> {
        let (head, height) = self.head();
        if head == *digest {
            return Some(height);
        }
        self.executed(digest).map(|e| e.block.number())
    }

    /// The validator set.
    pub fn set(&self) -> &ValidatorSet {
        &self.set
    }

    /// Its test-only misbehaviour, if any.
    pub fn fault(&self) -> Option<Fault> {
        self.fault
    }

    /// Stores one piece of evidence the caller checked (`validator_evidence`): `Ok(false)`
    /// when it was not stored (one of the same kind, view and signer is, or the signer's bound
    /// is reached). Errors: SQLite failed.
    pub fn record_evidence(
        &self,
        e: &gamechain_ledger::storage::StoredEvidence,
    ) -> Result<bool, NodeError> {
        let mut writer = lock(&self.writer);
        Ok(writer.0.put_evidence(e)?)
    }

    /// This validator's address.
    pub fn address(&self) -> String {
        self.key.address()
    }

    /// The committed head's digest and height.
    pub fn head(&self) -> (Digest, u64) {
        *lock(&self.head_digest)
    }

    /// Whether `digest` is the head or an executed block.
    pub fn knows(&self, digest: &Digest) -> bool {
        lock(&self.head_digest).0 == *digest || lock(&self.speculative).contains_key(digest)
    }

    /// The executed block `digest`, if any.
    pub fn executed(&self, digest: &Digest) -> Option<Arc<Executed>> {
        lock(&self.speculative).get(digest).cloned()
    }

    /// Keeps `executed` and returns it. While more than [`MAX_SPECULATIVE_BLOCKS`] blocks or
    /// [`MAX_SPECULATIVE_BYTES`] of their transactions and writes are kept, it evicts other
    /// blocks (an evicted block that is needed again is executed again): first those off
    /// `executed`'s path to the head, then those on it, the highest first, and the head's
    /// children (next to commit) last; `executed` itself is never evicted here.
    fn remember(&self, executed: Executed) -> Arc<Executed> {
        let executed = Arc::new(executed);
        let digest = executed.block.digest();
        let (head, head_height) = *lock(&self.head_digest);
        let next = head_height + 1;
        let mut spec = lock(&self.speculative);
        spec.insert(digest, executed.clone());
        let mut total: usize = spec.values().map(|e| e.size).sum();
        if spec.len() <= MAX_SPECULATIVE_BLOCKS && total <= MAX_SPECULATIVE_BYTES {
            return executed;
        }
        // `executed`'s ancestors down to the head (at most the depth a walk may take).
        let mut path = std::collections::HashSet::new();
        let mut at = executed.block.parent();
        while at != head && path.len() < MAX_SPECULATIVE_DEPTH {
            let Some(e) = spec.get(&at) else { break };
            path.insert(at);
            at = e.block.parent();
        }
        let tier = |d: &Digest, e: &Executed| {
            if e.block.number() <= next {
                2
            } else if path.contains(d) {
                1
            } else {
                0
            }
        };
        while spec.len() > MAX_SPECULATIVE_BLOCKS
            || (total > MAX_SPECULATIVE_BYTES && spec.len() > 1)
        {
            let Some(victim) = spec
                .iter()
                .filter(|(d, _)| **d != digest)
                .min_by_key(|(d, e)| (tier(d, e), std::cmp::Reverse((e.block.number(), d.0))))
                .map(|(d, _)| *d)
            else {
                break;
            };
            if let Some(e) = spec.remove(&victim) {
                total = total.saturating_sub(e.size);
            }
        }
        executed
    }

    /// Forgets the executed block `digest` (a proposal this validator built and dropped).
    pub fn forget(&self, digest: &Digest) {
        lock(&self.speculative).remove(digest);
    }

    /// The executed blocks from `parent` down to (not including) the head, newest first;
    /// [`ExecError::UnknownParent`] when the walk does not reach the head within
    /// [`MAX_SPECULATIVE_DEPTH`] blocks. Call with the gate held.
    fn path_to_head(&self, parent: &Digest) -> Result<Vec<Arc<Executed>>, ExecError> {
        let head = lock(&self.head_digest).0;
        let spec = lock(&self.speculative);
        let mut path = Vec::new();
        let mut at = *parent;
        while at != head {
            if path.len() >= MAX_SPECULATIVE_DEPTH {
                return Err(ExecError::UnknownParent);
            }
            let e = spec.get(&at).ok_or(ExecError::UnknownParent)?;
            at = e.block.parent();
            path.push(e.clone());
        }
        Ok(path)
    }

    /// Runs `f` on the state after `parent` (its header and running hash too). Call with the
    /// gate held.
    fn on_parent<T>(
        &self,
        parent: &Digest,
        f: impl FnOnce(&dyn State, &Header, &StateHash) -> T,
    ) -> Result<T, ExecError> {
        let path = self.path_to_head(parent)?;
        let head_state = HeadState(&self.chain);
        match path.first() {
            None => {
                let (header, hash) = {
                    let head = self.chain.head();
                    (head.header.header.clone(), head.state_hash.clone())
                };
                Ok(f(&head_state, &header, &hash))
            }
            Some(newest) => {
                let mut merged = WriteSet::new();
                for e in path.iter().rev() {
                    for (k, v) in e.writes.iter() {
                        merged.insert(k.clone(), v.clone());
                    }
                }
                let layer = Layer {
                    base: &head_state,
                    writes: &merged,
                };
                Ok(f(&layer, &newest.block.header().header, &newest.state_hash))
            }
        }
    }

    /// Builds, signs and records (as executed) a block on `parent` from the mempool, at
    /// `time_ms` (the caller's clock, at least the chain's interval after the parent's time:
    /// else [`ExecError::Host`], as `BlockBuilder::new` refuses it). Transactions already in a block
    /// between the head and `parent`, or otherwise not includable now, are skipped and stay
    /// pending. Errors: [`ExecError::UnknownParent`], [`ExecError::Host`].
    pub fn propose(&self, parent: &Digest, time_ms: u64) -> Result<ProposedBlock, ExecError> {
        let _g = self.gate.read().unwrap_or_else(|p| p.into_inner());
        // The transactions of the blocks between the head and `parent` are still pending here
        // (a commit removes them): skip them, so a block on an uncommitted parent is not empty.
        let taken: std::collections::HashSet<[u8; 32]> = self
            .path_to_head(parent)?
            .iter()
            .flat_map(|e| e.block.txs().iter().map(|t| t.txid_bytes()))
            .collect();
        let batch: Vec<_> = self
            .chain
            .mempool()
            .batch(self.max_block_txs + taken.len())
            .into_iter()
            .filter(|p| !taken.contains(&p.tx.txid_bytes()))
            .take(self.max_block_txs)
            .collect();
        let ctx = self.chain.ctx.clone();
        let built = self.on_parent(parent, |state, parent_header, parent_hash| {
            let clock = ctx.genesis().clock();
            let time_ms = match self.fault {
                Some(Fault::FrozenClock) => clock.earliest_child_time(parent_header.time_ms),
                Some(Fault::FastClock) => {
                    time_ms.saturating_add(clock.max_clock_drift_ms.saturating_mul(10))
                }
                _ => time_ms,
            };
            let mut builder = BlockBuilder::new(
                &ctx,
                state,
                parent_hash,
                parent_header,
                time_ms,
                Checkpoint::default(),
                self.beacon_for(parent_header.height + 1),
            )
            .map_err(|e| ExecError::Host(format!("cannot start a block: {e}")))?;
            builder.set_proposer(&self.key.address());
            let mut txs = Vec::new();
            let mut senders = Vec::new();
            let mut bytes = 0usize;
            if self.fault == Some(Fault::DeployFlood) {
                let genesis = ctx.genesis();
                let key = crate::validator::flood::flood_key(genesis.network);
                let from = key.address();
                let mut nonce = gamechain_runtime::account_nonce(state, &from)
                    .map_err(|e| ExecError::Host(e.to_string()))?;
                for index in 0..64 {
                    let tx = crate::validator::flood::flood_deploy(
                        &key,
                        &genesis.chain_id,
                        nonce,
                        parent_header.height + 1,
                        time_ms,
                        index,
                    );
                    let size = tx.body().len() + tx.signature().len();
                    let Ok(body) = tx.check(&genesis.chain_id, genesis.network) else {
                        break;
                    };
                    if bytes + size > self.max_block_tx_bytes
                        || builder.push_checked(&tx, body).is_err()
                    {
                        break;
                    }
                    bytes += size;
                    txs.push(tx);
                    senders.push((from.clone(), nonce));
                    nonce += 1;
                }
            }
            for p in batch {
                let size = p.tx.body().len() + p.tx.signature().len();
                if bytes + size > self.max_block_tx_bytes {
                    break;
                }
                let sender = (p.body.account().to_string(), p.body.nonce);
                match builder.push_checked(&p.tx, p.body) {
                    Ok(_) => {
                        bytes += size;
                        txs.push(p.tx);
                        senders.push(sender);
                    }
                    Err(TransitionError::InvalidTx {
                        reason: TxRejection::BlockFull { .. },
                        ..
                    }) => break,
                    // Included in a block on the way to `parent`, or not includable after
                    // it: left pending (a commit drops what the chain made stale).
                    Err(TransitionError::InvalidTx { .. }) => {}
                    Err(e) => return Err(ExecError::Host(e.to_string())),
                }
            }
            let out = builder
                .finish()
                .map_err(|e| ExecError::Host(e.to_string()))?;
            Ok((out, txs, senders))
        })??;
        let (out, txs, senders) = built;
        let mut header = out.header.clone();
        if self.fault == Some(Fault::BadStateRoot) {
            header.state_root[0] ^= 0xff;
        }
        if self.fault == Some(Fault::WrongBeacon) && header.beacon.is_some() {
            header.beacon = Some(self.wrong_beacon(parent));
        }
        let signed = SignedHeader::sign(header, &self.key);
        let block = ProposedBlock::new(signed, txs, *parent);
        self.remember(Executed::of(block.clone(), out, senders));
        Ok(block)
    }

    /// The beacon a [`Fault::WrongBeacon`] proposer puts in a block on `parent`: the parent's
    /// own (a beacon of another height), or a signature of a key nobody dealt when the parent
    /// has none (block 0).
    fn wrong_beacon(&self, parent: &Digest) -> Beacon {
        let parent_beacon = match self.executed(parent) {
            Some(e) => e.block.header().header.beacon,
            None => self.chain.head().header.header.beacon,
        };
        parent_beacon.unwrap_or_else(crate::validator::beacon::share::not_a_beacon)
    }

    /// Executes `block` on its parent's state and checks that it is exactly what its header
    /// says (proposer, signature, time, transactions, receipts and state root); records it as
    /// executed. `leader` is the address consensus names as the round's leader when this is a
    /// vote on a live proposal, `None` for an ancestor executed to reach one; `now_ms` is this
    /// validator's clock. The chain's drift window (`Genesis::clock`, `max_clock_drift_ms`)
    /// applies to live proposals in both directions (a time ahead of the clock, or one frozen
    /// in the past), and to ancestors only ahead (they may have been proposed long ago).
    /// Already executed: `Ok` at once (after the drift check of a live proposal).
    pub fn verify(
        &self,
        block: &ProposedBlock,
        leader: Option<&str>,
        now_ms: u64,
    ) -> Result<(), ExecError> {
        self.execute(block, leader, now_ms).map(|_| ())
    }

    /// [`Ledger::verify`], returning the execution (the one kept, or the one just made: the
    /// caller holds it whatever the cache evicts later).
    fn execute(
        &self,
        block: &ProposedBlock,
        leader: Option<&str>,
        now_ms: u64,
    ) -> Result<Arc<Executed>, ExecError> {
        let header = &block.header().header;
        if self.set.by_address(&header.sequencer).is_none() {
            return Err(ExecError::Invalid(format!(
                "the header names {}, not a validator",
                header.sequencer
            )));
        }
        if let Some(leader) = leader {
            if leader != header.sequencer {
                return Err(ExecError::Invalid(format!(
                    "the header names {}, the round's leader is {leader}",
                    header.sequencer
                )));
            }
        }
        block
            .header()
            .verify()
            .map_err(|e| ExecError::Invalid(format!("header signature: {e}")))?;
        if header.checkpoint != Checkpoint::default() {
            return Err(ExecError::Invalid(
                "a validator's block names no parent-chain checkpoint".into(),
            ));
        }
        let clock = self.chain.genesis().clock();
        match (leader, clock.check_drift(header.time_ms, now_ms)) {
            (_, Ok(())) => {}
            // An ancestor: only a time ahead of the clock is refused.
            (None, Err(_)) if header.time_ms <= now_ms => {}
            (_, Err(e)) => return Err(ExecError::Invalid(e)),
        }
        if let Some(executed) = self.executed(&block.digest()) {
            return Ok(executed);
        }
        let genesis = self.chain.genesis();
        let (chain_id, network) = (genesis.chain_id.clone(), genesis.network);
        let checks: Vec<Result<TxBody, _>> = block
            .txs()
            .iter()
            .map(|t| t.check(&chain_id, network))
            .collect();
        // Genesis's caps on deploys, checked before anything compiles (the state transition
        // checks them again, at the same transactions).
        let caps = genesis.block_caps();
        let (mut count, mut code_bytes) = (0u64, 0u64);
        let mut codes = Vec::new();
        for (index, check) in checks.iter().enumerate() {
            if let Ok(TxBody {
                action: Action::Deploy { module, code, .. },
                ..
            }) = check
            {
                let len = code.len() as u64;
                caps.admit(count, code_bytes, len)
                    .map_err(|(what, limit)| {
                        ExecError::Invalid(format!(
                            "transaction {index}: it would take the block over its bound of \
                             {limit} {what}"
                        ))
                    })?;
                count += 1;
                code_bytes += len;
                codes.push((module.as_str(), code.as_slice()));
            }
        }
        // The deploys' code is compiled now, before the gate that commits wait for: the
        // execution finds it compiled. A vote on a live proposal spends at most the node's
        // `compile_budget_ms` on it (past it this validator abstains); a block that must be
        // executed (an ancestor, a finalized block) compiles without a time bound.
        let deadline = leader.map(|_| {
            std::time::Instant::now()
                + std::time::Duration::from_millis(self.chain.config.compile_budget_ms)
        });
        for (module, code) in codes {
            let budget = deadline.map(|d| d.saturating_duration_since(std::time::Instant::now()));
            self.chain
                .precompile(module, code, budget)
                .map_err(|e| ExecError::Host(format!("compiling the block's deploys: {e}")))?;
        }
        let _g = self.gate.read().unwrap_or_else(|p| p.into_inner());
        let ctx = self.chain.ctx.clone();
        let parent_digest = block.parent();
        let out = self.on_parent(&parent_digest, |state, parent, parent_hash| {
            if header.prev_hash != parent.hash() || header.height != parent.height + 1 {
                return Err(ExecError::Invalid(
                    "the header does not follow its parent".into(),
                ));
            }
            clock
                .check_spacing(parent.time_ms, header.time_ms)
                .map_err(ExecError::Invalid)?;
            let mut builder = BlockBuilder::new(
                &ctx,
                state,
                parent_hash,
                parent,
                header.time_ms,
                header.checkpoint.clone(),
                header.beacon,
            )
            .map_err(|e| ExecError::Invalid(e.to_string()))?;
            builder.set_proposer(&header.sequencer);
            let mut senders = Vec::with_capacity(checks.len());
            for (index, (tx, check)) in block.txs().iter().zip(checks).enumerate() {
                let body =
                    check.map_err(|e| ExecError::Invalid(format!("transaction {index}: {e}")))?;
                senders.push((body.account().to_string(), body.nonce));
                match builder.push_checked(tx, body) {
                    Ok(_) => {}
                    Err(TransitionError::Host(e)) => return Err(ExecError::Host(e.to_string())),
                    Err(e) => return Err(ExecError::Invalid(format!("transaction {index}: {e}"))),
                }
            }
            let out = builder.finish().map_err(|e| match e {
                TransitionError::Host(e) => ExecError::Host(e.to_string()),
                e => ExecError::Invalid(e.to_string()),
            })?;
            Ok((out, senders))
        })??;
        let (out, senders) = out;
        if out.header != *header {
            let diff = crate::verify::replay::header_differences(header, &out.header);
            let (field, expected, got) =
                diff.into_iter()
                    .next()
                    .unwrap_or(("header", String::new(), String::new()));
            return Err(ExecError::Invalid(format!(
                "{field}: the block says {expected}, executing it gives {got}"
            )));
        }
        Ok(self.remember(Executed::of(block.clone(), out, senders)))
    }

    /// Commits the finalized `block` (the next height), with its finality certificate when
    /// there is one (the encoded `Finalization`), then forgets the executed blocks at or below
    /// it and drops pending transactions the chain made stale. A block at or below the head is
    /// a redelivery: `Ok` when it is the stored one. Errors: the block does not follow the
    /// head, does not execute to its header (a finalized block that does not: the validator
    /// set broke its fault bound), or the database failed; the node must stop.
    pub fn commit_finalized(
        &self,
        block: &ProposedBlock,
        certificate: Option<Vec<u8>>,
    ) -> Result<(), NodeError> {
        let digest = block.digest();
        let height = block.number();
        if height <= self.head().1 {
            // A redelivery (after a restart, marshal delivers again what it had not seen
            // acknowledged): the block must be the one committed. Its digest row may be missing
            // after a crash between the block's commit and the row's, or a start that
            // committed a recorded block: it is then recomputed from the stored blocks.
            let mut writer = lock(&self.writer);
            let storage = &mut writer.0;
            let recorded = storage.validator_finality(height)?;
            let committed = match &recorded {
                Some((d, _)) => Digest(*d),
                None => crate::proof::digest::digest_at(storage, height)?,
            };
            if committed != digest {
                return Err(NodeError::Refused(format!(
                    "finalized block {height} has digest {}, this node committed {}",
                    hex::encode(digest.0),
                    hex::encode(committed.0)
                )));
            }
            let has_certificate = matches!(&recorded, Some((_, Some(_))));
            if recorded.is_none() || (!has_certificate && certificate.is_some()) {
                storage.put_validator_finality(height, &digest.0, certificate.as_deref())?;
            }
            return Ok(());
        }
        // Its execution: the kept one, else (e.g. fetched while catching up, or evicted) made
        // now on the head and used from here, whatever the cache keeps. A finalized block: no
        // clock applies (the time `now` is never before it).
        let executed = match self.executed(&digest) {
            Some(executed) => executed,
            None => self.execute(block, None, u64::MAX / 2).map_err(|e| {
                NodeError::Refused(format!("finalized block {height} does not execute: {e:?}"))
            })?,
        };
        let block = &executed.block;
        let _g = self.gate.write().unwrap_or_else(|p| p.into_inner());
        if block.parent() != lock(&self.head_digest).0 {
            return Err(NodeError::Refused(format!(
                "finalized block {height} does not follow this node's head"
            )));
        }
        let wire = Block {
            header: block.header().clone(),
            scheduled: executed.scheduled.clone(),
            txs: block
                .txs()
                .iter()
                .cloned()
                .zip(executed.receipts.iter().cloned())
                .map(|(tx, receipt)| IncludedTx { tx, receipt })
                .collect(),
            end_block: executed.end_block.clone(),
        };
        let senders: Vec<(&str, u64)> = executed
            .senders
            .iter()
            .map(|(f, n)| (f.as_str(), *n))
            .collect();
        let writes = (*executed.writes).clone();
        {
            let mut writer = lock(&self.writer);
            let (storage, sign_state) = &mut *writer;
            sign_state.record_header(&wire.header)?;
            // The finality record first: once the block is visible (API, WebSocket) its record
            // is there too. A crash in between leaves a record above the head, which nothing
            // reads (`Chain::finality` answers only for stored blocks) and the redelivery of
            // the same finalized block rewrites.
            storage.put_validator_finality(height, &digest.0, certificate.as_deref())?;
            self.chain.commit(
                storage,
                &wire,
                &senders,
                writes,
                executed.state_hash.clone(),
                &executed.start_witnesses,
            )?;
        }
        *lock(&self.head_digest) = (digest, height);
        self.head_moved.notify_one();
        // Its modules are final now; those of blocks that lost at its height are dropped.
        self.chain.ctx.modules().finalize(height, &executed.writes);
        lock(&self.speculative).retain(|_, e| e.block.number() > height);
        self.drop_stale(&executed.senders);
        Ok(())
    }

    /// Drops the pending transactions of `senders` whose nonces the head has used (included in
    /// another validator's block, or conflicting with one).
    fn drop_stale(&self, senders: &[(String, u64)]) {
        let mut latest: BTreeMap<&str, u64> = BTreeMap::new();
        for (from, nonce) in senders {
            latest.insert(from, *nonce);
        }
        let mut mempool = self.chain.mempool();
        for (from, nonce) in latest {
            mempool.drop_below(from, nonce + 1);
        }
    }
}
