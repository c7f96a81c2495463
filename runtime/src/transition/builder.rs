//! [`BlockBuilder`]: executes transactions one by one into a block (the sequencer pushes them;
//! [`execute_block`](super::execute_block) replays a block's list), then finishes the header.

use super::*;
use crate::chain::game_log::{game_log_key, games_named, GameLog, MAX_LOGGED_GAMES_PER_STEP};
use gamechain_sdk::keys::balance_key;

/// A block under construction, one transaction at a time: what [`execute_block`] runs, and what
/// a sequencer uses to leave out transactions that would make the block invalid. A rejected
/// [`push`](Self::push) changes nothing; after a [`TransitionError::Host`] the builder refuses
/// everything (drop it). Pushing transactions `t` and then [`finish`](Self::finish) gives exactly
/// `execute_block` of `t`.
pub struct BlockBuilder<'a> {
    pub(super) ctx: &'a ChainContext,
    pub(super) state: &'a dyn State,
    pub(super) state_hash: StateHash,
    pub(super) env: BlockEnv,
    pub(super) prev_hash: [u8; 32],
    pub(super) overlay: Overlay<'a>,
    pub(super) txids: Vec<[u8; 32]>,
    pub(super) receipts: Vec<Receipt>,
    pub(super) logs: Vec<ModuleLog>,
    pub(super) failed: Option<TransitionError>,
    /// What the included transactions used of the block's bounds (`block_limits.rs`).
    pub(super) used: BlockUse,
    /// Deploys included so far and the bytes of their code (genesis's caps, `chain::block_caps`).
    pub(super) deploys: (u64, u64),
    /// The block's randomness beacon (checked against genesis in [`BlockBuilder::new`]).
    pub(super) beacon: Option<Beacon>,
    /// The parent's time: calls scheduled at a time are due when it reaches theirs.
    pub(super) parent_time_ms: u64,
    /// Whether the due scheduled calls have run (before the first transaction).
    pub(super) scheduled_ran: bool,
    /// Their receipts, in the order they ran.
    pub(super) scheduled: Vec<ScheduledReceipt>,
    /// The starting balances of the logged games' transaction steps so far ([`StartWitness`]).
    pub(super) start_witnesses: Vec<StartWitness>,
}

/// What one action produced, before it is merged.
pub(super) struct ActionOutcome {
    pub(super) receipt: Receipt,
    pub(super) writes: WriteSet,
    pub(super) log: Vec<String>,
    /// GOLD base units the action took out of its account (counted for `session_game` only;
    /// 0 otherwise and when it failed).
    pub(super) debited: u128,
}

impl ActionOutcome {
    pub(super) fn from_tx(out: TxOutcome) -> Self {
        let receipt = match out.result {
            Ok(()) => Receipt::success(out.events, out.fuel_used),
            Err(e) => Receipt::failure(e, out.fuel_used),
        };
        let writes = if receipt.ok {
            out.writes
        } else {
            WriteSet::new()
        };
        Self {
            receipt,
            writes,
            log: out.log,
            debited: 0,
        }
    }

    pub(super) fn failure(e: ActionError) -> Self {
        Self::failure_with_fuel(e, 0)
    }

    /// A failed action that used `fuel`.
    pub(super) fn failure_with_fuel(e: ActionError, fuel: u64) -> Self {
        Self {
            receipt: Receipt::failure(e, fuel),
            writes: WriteSet::new(),
            log: Vec::new(),
            debited: 0,
        }
    }
}

/// Runs an action of the node itself (fuel 0) in an overlay over `base`.
pub(super) fn native(
    base: &dyn State,
    f: impl FnOnce(&mut Overlay<'_>) -> Result<Vec<Event>, ActionError>,
) -> ActionOutcome {
    let mut overlay = Overlay::new(base);
    match f(&mut overlay) {
        Ok(events) => ActionOutcome {
            receipt: Receipt::success(events, 0),
            writes: overlay.into_writes(),
            log: Vec::new(),
            debited: 0,
        },
        Err(e) => ActionOutcome::failure(e),
    }
}

pub(super) fn faucet(
    genesis: &Genesis,
    kv: &mut Overlay<'_>,
    to: &str,
    token: &str,
) -> Result<Vec<Event>, ActionError> {
    let amount = genesis
        .faucet
        .ok_or_else(|| ActionError::invalid("this chain has no faucet"))?;
    if token != GOLD {
        return Err(ActionError::invalid(format!("the faucet pays only {GOLD}")));
    }
    ledger::mint(kv, SYSTEM_ACCOUNT, to, GOLD, amount.0)?;
    let data = json!({"amount": amount.0.to_string(), "to": to, "token": GOLD});
    Ok(vec![Event {
        kind: "faucet".to_string(),
        data,
    }])
}

pub(super) fn transfer(
    network: Network,
    kv: &mut Overlay<'_>,
    from: &str,
    to: &str,
    token: &str,
    amount: u128,
) -> Result<Vec<Event>, ActionError> {
    check_address(to, network).map_err(|e| {
        ActionError::invalid(format!("`{to}` is not an address of this chain: {e}"))
    })?;
    if amount == 0 {
        return Err(ActionError::invalid("amount must be more than 0"));
    }
    ledger::transfer(kv, from, to, token, amount)?;
    let data = json!({"amount": amount.to_string(), "from": from, "to": to, "token": token});
    Ok(vec![Event {
        kind: "transfer".to_string(),
        data,
    }])
}

impl<'a> BlockBuilder<'a> {
    /// Starts block `parent.height + 1` at `time_ms` with `checkpoint` and `beacon` over
    /// `state`, the state after `parent`, whose running hash is `state_hash`.
    /// [`TransitionError::BadParent`] when `state_hash` does not have `parent.state_root` or
    /// `time_ms` is less than the chain's `min_block_interval_ms` after `parent.time_ms`
    /// (`Genesis::clock`; on a chain made before that rule, when it is before `parent.time_ms`);
    /// [`TransitionError::BadBeacon`] when `beacon` is not what genesis requires of this height
    /// (`Genesis::check_beacon`: none on a chain without a beacon key, else that key's signature
    /// of the height).
    pub fn new(
        ctx: &'a ChainContext,
        state: &'a dyn State,
        state_hash: &StateHash,
        parent: &Header,
        time_ms: u64,
        checkpoint: Checkpoint,
        beacon: Option<Beacon>,
    ) -> Result<Self, TransitionError> {
        if state_hash.kind() != ctx.genesis.state_commitment() {
            return Err(TransitionError::BadParent(format!(
                "the state hash is a {}, this chain's commitment is {}",
                state_hash.kind().name(),
                ctx.genesis.state_commitment().name()
            )));
        }
        if state_hash.root() != parent.state_root {
            return Err(TransitionError::BadParent(format!(
                "the state hash has root {}, the parent's state root is {}",
                hex::encode(state_hash.root()),
                hex::encode(parent.state_root)
            )));
        }
        ctx.genesis
            .clock()
            .check_spacing(parent.time_ms, time_ms)
            .map_err(TransitionError::BadParent)?;
        let height = parent
            .height
            .checked_add(1)
            .ok_or_else(|| TransitionError::BadParent("height overflows".into()))?;
        ctx.genesis
            .check_beacon(height, beacon.as_ref())
            .map_err(TransitionError::BadBeacon)?;
        let env = BlockEnv {
            height,
            block_time_ms: time_ms,
            checkpoint,
            sequencer: ctx.genesis.sequencer.clone(),
            beacon: beacon.map(|b| b.0),
            beacon_key: ctx.genesis.beacon.as_ref().map(|b| b.public_key.to_bytes()),
        };
        Ok(Self {
            ctx,
            state,
            state_hash: state_hash.clone(),
            env,
            prev_hash: parent.hash(),
            overlay: Overlay::new(state),
            txids: Vec::new(),
            receipts: Vec::new(),
            logs: Vec::new(),
            failed: None,
            used: BlockUse::default(),
            deploys: (0, 0),
            beacon,
            parent_time_ms: parent.time_ms,
            scheduled_ran: false,
            scheduled: Vec::new(),
            start_witnesses: Vec::new(),
        })
    }

    /// Runs the scheduled calls due in this block, once, before its first transaction (ABI.md,
    /// "Scheduled calls and draws"; `sdk::schedule`): calls due at a height up to this one, then
    /// calls due at a time up to the parent's, in queue order, at most
    /// `MAX_SCHEDULED_PER_BLOCK` and [`MAX_SCHEDULED_BLOCK_FUEL`] of fuel (the rest stay due).
    /// Each is taken off the queue whatever it does, runs over the block overlay with the fuel
    /// it was given and the block's beacon for its draws, and gets a receipt; its writes are
    /// kept when it succeeds. They count toward the block's use, and are never a reason to
    /// refuse the block.
    pub(super) fn run_scheduled(&mut self) -> Result<(), TransitionError> {
        if self.scheduled_ran {
            return Ok(());
        }
        self.scheduled_ran = true;
        // Sealed calls of this round first, all of them (bounded per round when they were
        // handed in), then the due ordinary calls.
        let mut due = scheduler::take_sealed(&mut self.overlay, self.env.height);
        due.extend(scheduler::take_due(
            &mut self.overlay,
            self.env.height,
            self.parent_time_ms,
            MAX_SCHEDULED_PER_BLOCK,
        ));
        let beacon = self.beacon.map(|b| b.0);
        let mut fuel_given: u64 = 0;
        let mut deferred = Vec::new();
        for call in due {
            if call.sealed.is_none()
                && (!deferred.is_empty()
                    || (fuel_given > 0
                        && fuel_given.saturating_add(call.fuel) > MAX_SCHEDULED_BLOCK_FUEL))
            {
                deferred.push(call);
                continue;
            }
            fuel_given = fuel_given.saturating_add(call.fuel);
            let sealed = call
                .sealed
                .as_deref()
                .map(|env| crate::sealed::open_sealed(env, self.beacon.as_ref()));
            let payload = hex::decode(&call.payload).unwrap_or_default();
            let outcome = match self.ctx.module(&self.overlay, &call.module) {
                Err(e) => {
                    let e = TransitionError::from(e);
                    self.failed = Some(e.clone());
                    return Err(e);
                }
                Ok(None) => ActionOutcome::failure(ActionError::not_found(format!(
                    "module {}",
                    call.module
                ))),
                Ok(Some(entry)) => {
                    let run = ScheduledRun {
                        id: call.id,
                        payload: &payload,
                        fuel: call.fuel,
                        beacon,
                        sealed,
                    };
                    match execute_scheduled(
                        &entry.module,
                        &self.overlay,
                        &self.env,
                        &run,
                        Some(self.ctx),
                    ) {
                        Ok(out) => ActionOutcome::from_tx(out),
                        Err(e) => {
                            let e = TransitionError::Host(e);
                            self.failed = Some(e.clone());
                            return Err(e);
                        }
                    }
                }
            };
            let leaf = ScheduledReceipt {
                module: call.module.clone(),
                id: call.id,
                receipt: outcome.receipt.clone(),
            }
            .hash();
            let (outcome, _) = self.with_game_logs(&call.module, outcome, leaf);
            self.used =
                self.used
                    .saturating_add(BlockUse::of(&outcome.receipt, &outcome.writes, 0));
            self.overlay.writes.extend(outcome.writes);
            if !outcome.log.is_empty() {
                self.logs.push(ModuleLog {
                    module: call.module.clone(),
                    tx_index: None,
                    lines: outcome.log,
                });
            }
            self.scheduled.push(ScheduledReceipt {
                module: call.module,
                id: call.id,
                receipt: outcome.receipt,
            });
        }
        // Calls over the fuel bound go back to the queue as they were: due, in order.
        for call in deferred {
            scheduler::requeue(&mut self.overlay, &call);
        }
        Ok(())
    }

    /// `outcome` with the log of each game its receipt's events name (at most
    /// [`MAX_LOGGED_GAMES_PER_STEP`]), of `module`, extended by the step's `leaf` among its
    /// writes (`chain::game_log`), on chains that keep game logs; unchanged elsewhere. Also
    /// returns the games whose logs it extended.
    fn with_game_logs(
        &self,
        module: &str,
        mut outcome: ActionOutcome,
        leaf: [u8; 32],
    ) -> (ActionOutcome, Vec<String>) {
        if !self.ctx.genesis.keeps_game_logs() {
            return (outcome, Vec::new());
        }
        let games: Vec<String> = games_named(&outcome.receipt.events)
            .into_iter()
            .take(MAX_LOGGED_GAMES_PER_STEP)
            .map(str::to_string)
            .collect();
        for game in &games {
            let key = game_log_key(module, game);
            let log = self
                .overlay
                .get(&key)
                .and_then(|v| GameLog::from_bytes(&v))
                .unwrap_or(GameLog::EMPTY);
            let next = log.extend(&leaf, self.env.height).to_bytes();
            outcome.writes.insert(key, Some(next));
        }
        (outcome, games)
    }

    /// Records the [`StartWitness`] of `account`'s step `txid` in each of `module`'s `games`
    /// (`step` is `(module, account, txid)`): proven against the parent's root when `clean` (no
    /// earlier transaction of the block wrote the balance); `moves` whether the step itself
    /// changed it; `session`, for a `session_game`, its record's key (proven in the parent's
    /// state whatever the block wrote before: a verifier reads it as the session before the
    /// block).
    fn witness_start(
        &mut self,
        step: (&str, &str, &str),
        games: Vec<String>,
        (clean, moves): (bool, bool),
        session: Option<String>,
    ) {
        let (module, account, txid) = step;
        if games.is_empty() {
            return;
        }
        let parent = |key: &str| {
            self.state_hash
                .prove(key)
                .map(|proof| (self.state.get(key), proof))
        };
        let proven = clean.then(|| parent(&balance_key(account, GOLD))).flatten();
        let session = session.map(|key| SessionWitness {
            proven: parent(&key),
            key,
        });
        for game in games {
            self.start_witnesses.push(StartWitness {
                module: module.to_string(),
                game,
                account: account.to_string(),
                height: self.env.height,
                moves_balance: moves,
                proven: proven.clone(),
                txid: txid.to_string(),
                session: session.clone(),
            });
        }
    }

    /// Names `address` as the block's proposer: the header's `sequencer` field, and the block
    /// sequencer the modules read (`Ctx::sequencer`). A chain with validators names the
    /// validator that proposes each block; without a call the proposer is genesis's
    /// sequencer, the only one a single-sequencer chain has. Call it before the first
    /// transaction: it is the same for the whole block.
    pub fn set_proposer(&mut self, address: &str) {
        debug_assert!(
            self.is_empty() && !self.scheduled_ran,
            "the proposer is set before any transaction"
        );
        self.env.sequencer = address.to_string();
    }

    /// The block's height.
    pub fn height(&self) -> u64 {
        self.env.height
    }

    /// Transactions included so far.
    pub fn len(&self) -> usize {
        self.receipts.len()
    }

    /// Whether none is included yet.
    pub fn is_empty(&self) -> bool {
        self.receipts.is_empty()
    }

    /// The current nonce of `address` in the block so far.
    pub fn nonce(&self, address: &str) -> Result<u64, TransitionError> {
        account_nonce(&self.overlay, address)
    }

    /// Checks `tx` ([`SignedTx::check`]) and includes it: see [`push_checked`](Self::push_checked).
    pub fn push(&mut self, tx: &SignedTx) -> Result<&Receipt, TransitionError> {
        let genesis = &self.ctx.genesis;
        match tx.check(&genesis.chain_id, genesis.network) {
            Ok(body) => self.push_checked(tx, body),
            Err(e) => Err(TransitionError::InvalidTx {
                index: self.receipts.len(),
                txid: tx.txid(),
                reason: TxRejection::Check(e),
            }),
        }
    }

    /// Includes `tx`, whose stateless checks passed with `body` (`body` must be what
    /// `tx.check(chain_id, network)` returned). Returns its receipt, or
    /// [`TransitionError::InvalidTx`] with a wrong nonce (nothing changed, the builder is still
    /// usable), or [`TransitionError::Host`] (the block is lost).
    pub fn push_checked(
        &mut self,
        tx: &SignedTx,
        body: TxBody,
    ) -> Result<&Receipt, TransitionError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        self.run_scheduled()?;
        let index = self.receipts.len();
        let txid = tx.txid_bytes();
        let txid_hex = hex::encode(txid);
        let account = body.account().to_string();
        let key = nonce_key(&account);
        let current = read_nonce(&self.overlay, &key)?;
        let invalid = |reason| TransitionError::InvalidTx {
            index,
            txid: txid_hex.clone(),
            reason,
        };
        if body.nonce != current {
            return Err(invalid(TxRejection::Nonce {
                expected: current,
                found: body.nonce,
            }));
        }
        let next = current
            .checked_add(1)
            .ok_or_else(|| invalid(TxRejection::NonceExhausted))?;
        // A session transaction its session does not allow cannot be in the block
        // (`session.rs`).
        let session = match &body.action {
            Action::SessionGame {
                account,
                session,
                game,
                ..
            } => {
                let minimum_fee = self.ctx.genesis.fees.as_ref().map_or(0, |f| f.minimum());
                let checked = check_session(
                    &self.overlay,
                    &body.from,
                    account,
                    *session,
                    game,
                    self.env.block_time_ms,
                    minimum_fee,
                )?;
                Some(checked.map_err(|r| invalid(TxRejection::Session(r)))?)
            }
            _ => None,
        };
        let full = |(what, limit)| invalid(TxRejection::BlockFull { what, limit });
        let body_only = BlockUse {
            body_bytes: tx.body().len() as u64,
            ..BlockUse::default()
        };
        self.used.add(body_only).map_err(full)?;
        // Genesis's caps on deploys, checked before the code is compiled.
        let deploys = match &body.action {
            Action::Deploy { code, .. } => {
                let (count, bytes) = self.deploys;
                let len = code.len() as u64;
                self.ctx
                    .genesis
                    .block_caps()
                    .admit(count, bytes, len)
                    .map_err(full)?;
                (count + 1, bytes + len)
            }
            _ => self.deploys,
        };
        // Whether the account's balance is still the parent's (`StartWitness`): asked only of
        // game steps on a chain that keeps logs, so a transfer pays nothing for it.
        let witnessed = self.ctx.genesis.keeps_game_logs()
            && matches!(
                body.action,
                Action::Game { .. } | Action::SessionGame { .. }
            );
        let balance_clean = witnessed
            && !self
                .overlay
                .writes
                .contains_key(&balance_key(&account, GOLD));
        // And the key of its session record (`SessionWitness`).
        let session_witness = session
            .as_ref()
            .filter(|_| witnessed)
            .map(|s| s.state_key.clone());
        let nonce_write = (key.clone(), Some(next.to_string().into_bytes()));
        let before = self.overlay.writes.insert(nonce_write.0, nonce_write.1);

        let outcome = match self.run_action(&txid_hex, &body) {
            Ok(outcome) => outcome,
            Err(e) => {
                self.failed = Some(e.clone());
                return Err(e);
            }
        };
        let outcome = match &session {
            Some(s) => s.cap(outcome, self.ctx.genesis.fees.as_ref()),
            None => outcome,
        };
        // The game log's writes are the step's own: charged as its writes and counted in the
        // block's bounds (`chain::game_log`).
        let (outcome, logged) = match &body.action {
            Action::Game { game, .. } | Action::SessionGame { game, .. } => {
                self.with_game_logs(game, outcome, txid)
            }
            _ => (outcome, Vec::new()),
        };
        let moves_balance =
            !logged.is_empty() && outcome.writes.contains_key(&balance_key(&account, GOLD));
        let charged = match &self.ctx.genesis.fees {
            None => Ok(outcome),
            Some(fees) => fees::charge(fees, &self.overlay, &account, outcome),
        };
        let included = charged.and_then(|outcome| {
            let tx_use = BlockUse::of(&outcome.receipt, &outcome.writes, tx.body().len());
            let used = self
                .used
                .add(tx_use)
                .map_err(|(what, limit)| TxRejection::BlockFull { what, limit })?;
            Ok((outcome, used))
        });
        let outcome = match included {
            Ok((outcome, used)) => {
                self.used = used;
                self.deploys = deploys;
                if let Action::Game { game, .. } | Action::SessionGame { game, .. } = &body.action {
                    let at = (balance_clean, moves_balance);
                    let step = (game.as_str(), account.as_str(), txid_hex.as_str());
                    self.witness_start(step, logged, at, session_witness);
                }
                outcome
            }
            Err(rejection) => {
                // Left out: the nonce write undone, nothing else was merged.
                match before {
                    Some(v) => self.overlay.writes.insert(key, v),
                    None => self.overlay.writes.remove(&key),
                };
                return Err(invalid(rejection));
            }
        };
        if let Some(s) = &session {
            let (k, v) = s.record(&outcome);
            self.overlay.writes.insert(k, v);
        }
        self.overlay.writes.extend(outcome.writes);
        if !outcome.log.is_empty() {
            let module = match &body.action {
                Action::Game { game, .. } | Action::SessionGame { game, .. } => Some(game.as_str()),
                other => other.upgrade_module(),
            };
            if let Some(module) = module {
                self.logs.push(ModuleLog {
                    module: module.to_string(),
                    tx_index: Some(index),
                    lines: outcome.log,
                });
            }
        }
        self.txids.push(txid);
        self.receipts.push(outcome.receipt);
        Ok(self.receipts.last().expect("just pushed"))
    }

    pub(super) fn run_action(
        &self,
        txid: &str,
        body: &TxBody,
    ) -> Result<ActionOutcome, TransitionError> {
        let genesis = &self.ctx.genesis;
        let base: &dyn State = &self.overlay;
        Ok(match &body.action {
            Action::Faucet { token } => native(base, |kv| faucet(genesis, kv, &body.from, token)),
            Action::Transfer { to, token, amount } => native(base, |kv| {
                transfer(genesis.network, kv, &body.from, to, token, amount.0)
            }),
            Action::AuthorizeSession {
                key,
                modules,
                expires_at_ms,
                cap,
            } => native(base, |kv| {
                session::authorize(
                    genesis.network,
                    kv,
                    &body.from,
                    body.nonce,
                    self.env.block_time_ms,
                    key,
                    modules,
                    *expires_at_ms,
                    *cap,
                )
            }),
            Action::RevokeSession { key } => {
                native(base, |kv| session::revoke(kv, &body.from, key))
            }
            Action::SessionGame {
                account, game, op, ..
            } => match self.ctx.module(base, game)? {
                None => ActionOutcome::failure(ActionError::not_found(format!("module {game}"))),
                Some(entry) => {
                    let (out, debited) = execute_apply_metered(
                        &entry.module,
                        base,
                        &self.env,
                        txid,
                        account,
                        op.get().as_bytes(),
                        Some(self.ctx),
                    )?;
                    ActionOutcome {
                        debited,
                        ..ActionOutcome::from_tx(out)
                    }
                }
            },
            Action::Game { game, op } => match self.ctx.module(base, game)? {
                None => ActionOutcome::failure(ActionError::not_found(format!("module {game}"))),
                Some(entry) => ActionOutcome::from_tx(execute_apply_with(
                    &entry.module,
                    base,
                    &self.env,
                    txid,
                    &body.from,
                    op.get().as_bytes(),
                    Some(self.ctx),
                )?),
            },
            Action::Deploy {
                module,
                code,
                policy,
            } => self.deploy(txid, &body.from, module, code, *policy)?,
            Action::ActivateUpgrade { module } => self.activate_upgrade(txid, module)?,
            Action::CancelUpgrade { module } => self.cancel_upgrade(&body.from, module)?,
            Action::SetPolicy { module, policy } => self.set_policy(&body.from, module, *policy)?,
        })
    }

    /// Runs every module's `end_block`, computes the net writes and the state root, and returns
    /// the block.
    pub fn finish(mut self) -> Result<BlockOutput, TransitionError> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        self.run_scheduled()?;
        let mut end_block = Vec::new();
        for (id, record) in Modules::records(&self.overlay)? {
            let entry =
                self.ctx
                    .modules
                    .resolve_record(&self.ctx.runtime, &self.overlay, &id, &record)?;
            if !entry.has_end_block {
                continue;
            }
            let module = &entry.module;
            let outcome = ActionOutcome::from_tx(execute_end_block_with(
                module,
                &self.overlay,
                &self.env,
                Some(self.ctx),
            )?);
            self.overlay.writes.extend(outcome.writes);
            if !outcome.log.is_empty() {
                self.logs.push(ModuleLog {
                    module: module.id().to_string(),
                    tx_index: None,
                    lines: outcome.log,
                });
            }
            end_block.push((module.id().to_string(), outcome.receipt));
        }

        let mut writes = WriteSet::new();
        let mut changed = Vec::new();
        for (key, new) in std::mem::take(&mut self.overlay.writes) {
            let old = self.state.get(&key);
            if old != new {
                changed.push((key.clone(), old));
                writes.insert(key, new);
            }
        }
        let mut state_hash = self.state_hash;
        let changes: Vec<(&str, Option<&[u8]>, Option<&[u8]>)> = changed
            .iter()
            .map(|(key, old)| {
                let new = writes.get(key).and_then(|v| v.as_deref());
                (key.as_str(), old.as_deref(), new)
            })
            .collect();
        state_hash.apply_changes(&changes, self.ctx.verify_threads, &self.ctx.element_cache);

        let receipt_root = block_receipt_root(
            &self.scheduled,
            &self.receipts,
            end_block.iter().map(|(_, r)| r),
        );
        let header = Header {
            height: self.env.height,
            prev_hash: self.prev_hash,
            time_ms: self.env.block_time_ms,
            sequencer: self.env.sequencer,
            checkpoint: self.env.checkpoint,
            tx_root: merkle_root(&self.txids),
            receipt_root,
            state_root: state_hash.root(),
            beacon: self.beacon,
        };
        Ok(BlockOutput {
            header,
            txids: self.txids.iter().map(hex::encode).collect(),
            scheduled: self.scheduled,
            receipts: self.receipts,
            end_block,
            writes,
            state_hash,
            logs: self.logs,
            start_witnesses: self.start_witnesses,
        })
    }
}
