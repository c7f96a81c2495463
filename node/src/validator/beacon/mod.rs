//! The threshold randomness beacon of a validator chain: each validator holds a share of a
//! BLS12-381 key dealt to the set (`share.rs`); the beacon of height `h` is the group's
//! signature of `(chain id, h)` (`gamechain_chain::beacon`), recovered from any `t = 2f + 1`
//! partial signatures, and carried in block `h`'s header, where every node checks it against
//! the genesis group key (`BlockBuilder::new`, so replay, followers, `verify` and the votes).
//!
//! **Votes stay ed25519.** Simplex's threshold scheme would give a per-view seed for free, but
//! its votes are not attributable: a double-sign could no longer be proven to outsiders, which
//! `/v1/evidence` and `verify` rely on. So consensus is unchanged, and the beacon is a separate
//! protocol on its own channel (6).
//!
//! **Release rule.** A validator releases its partial signature of height `h`, and of no other
//! height, once block `h - 1` is notarized or finalized, whichever it sees first: the engine's
//! notarization or finalization certificate of a block of height `h - 1` (the observer,
//! `observer.rs`, hands each certified digest here; a block not executed here yet is looked up
//! again every [`RESOLVE_EVERY`], for at most [`PENDING_TRIES`] times), or its commit (and at
//! start, the committed head's next height). Notarization, not only finalization: block `h`
//! needs beacon `h`, and a notarized block that never gets its own finalization (finalized
//! later through a descendant) would otherwise stall the chain. The message signed is the
//! height's, never content a proposer chooses, so a value can be encrypted to a future round.
//! **Except for a sealed round**: when sealed calls wait for round `h` (`docs/sealed-moves.md`;
//! `Ledger::sealed_round_waits`), the share of `h` is released only once block `h - 1` is
//! committed, that is final. Beacon `h` opens every move sealed to `h`, so it must not exist
//! while a block before `h` can still be replaced (see "What is known early"): a replacement
//! could then carry a move sealed by someone who had read the others.
//!
//! **Gossip.** A released share is sent to every peer ([`pool::ShareMessage`], 60 bytes), and
//! sent again every [`REBROADCAST_EVERY`] until the committed head reaches its height, so a
//! peer that restarted or was cut off gets it. A received share counts only when its index is
//! its sender's own position in the set, its height is in the window above the committed head
//! (`pool::WINDOW`), none of that (height, index) is kept, and it verifies against the public
//! polynomial (on the blocking pool); anything else is dropped and counted
//! (`gamechain_beacon_shares_total{result}`). The transport's per-peer quota
//! ([`BEACON_QUOTA`] messages a second) bounds the verification work a peer can cause. With
//! `t` verified shares of a height, the beacon is recovered, checked against the genesis group
//! key, and handed to the ledger (`Ledger::add_beacon`), which wakes a leader waiting for it
//! (`app.rs`: a leader without the beacon of the height it must propose waits within its
//! proposal wait, then gives up its view).
//!
//! **What is known early.** A coalition short of `t` learns nothing of beacon `h` before `t`
//! validators released their shares of it, which they do only once block `h - 1` is notarized.
//! A coalition of `t` or more can compute it whenever it wants: the threshold is the trust
//! assumption. The remaining limit of releasing on notarization: if a notarized block `h - 1`
//! is then abandoned (a view both notarized and nullified, the next leader building on an older
//! parent), beacon `h` was public before the replacement block `h - 1` was fixed: a
//! transaction in the replacement block could be chosen knowing it. (A module drawing in a call
//! scheduled at a later height than the one its request lands in is not exposed, nor is a sealed
//! round, whose share waits for finality.)
//!
//! Nothing here reaches state except the beacon itself, which is unique: whichever shares
//! recover it, and whenever, it is the same 48 bytes.

pub mod pool;
pub mod share;

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use commonware_cryptography::ed25519::PublicKey;
use commonware_cryptography::sha256::Digest;
use commonware_p2p::{Receiver, Recipients, Sender};
use commonware_runtime::{Clock, Spawner, Supervisor};
use commonware_utils::ordered::Set;
use tokio::sync::mpsc;

use crate::validator::beacon::pool::{Offer, Pool, ShareMessage, SHARE_MESSAGE_BYTES};
use crate::validator::beacon::share::BeaconShare;
use crate::validator::ledger::{Fault, Ledger};
use gamechain_ledger::metrics::ConsensusMetrics;

/// Share messages a second a peer may send on the beacon channel. An honest validator sends one
/// per block and repeats at most `pool::WINDOW` every [`REBROADCAST_EVERY`].
pub const BEACON_QUOTA: u32 = 64;

/// How often a validator sends its released shares again while they are above its head.
pub const REBROADCAST_EVERY: Duration = Duration::from_millis(500);

/// How often the certified blocks not executed here yet are looked up again.
pub const RESOLVE_EVERY: Duration = Duration::from_millis(50);

/// Times a certified block is looked up before it is given up on (its commit releases the
/// share then).
pub const PENDING_TRIES: u32 = 100;

/// Certified digests waiting for the beacon task (the observer's queue); more are dropped (the
/// commit path still releases).
pub const CERTIFIED_QUEUE: usize = 256;

/// Certified blocks not executed here yet, waiting to be looked up again, at most.
const MAX_PENDING: usize = 64;

/// The beacon task's state (module docs).
struct Beacons<E, S> {
    rt: E,
    ledger: Arc<Ledger>,
    share: Arc<BeaconShare>,
    chain_id: String,
    sender: S,
    pool: Pool,
    /// This validator's released shares above the head, encoded, by height.
    own: BTreeMap<u64, [u8; SHARE_MESSAGE_BYTES]>,
    /// Certified digests not resolved to a height yet, with their lookups so far.
    pending: VecDeque<(Digest, u32)>,
}

fn metrics(ledger: &Ledger) -> &ConsensusMetrics {
    ledger.chain.metrics.consensus()
}

impl<E, S> Beacons<E, S>
where
    E: Spawner + Clock + Supervisor,
    S: Sender<PublicKey = PublicKey>,
{
    fn head(&self) -> u64 {
        self.ledger.head().1
    }

    /// Releases this validator's share of `height` (once; only in the window above the head,
    /// and never under `Fault::WithholdBeacon`): signs it, sends it to every peer, keeps it.
    async fn release(&mut self, height: u64) {
        let head = self.head();
        if self.ledger.fault() == Some(Fault::WithholdBeacon)
            || !Pool::in_window(height, head)
            || self.own.contains_key(&height)
        {
            return;
        }
        let m = ShareMessage {
            height,
            index: self.share.index(),
            partial: self.share.sign(&self.chain_id, height),
        };
        let bytes = m.encode();
        self.sender.send(Recipients::All, bytes.to_vec(), false);
        self.own.insert(height, bytes);
        metrics(&self.ledger).beacon_released.inc();
        tracing::debug!(height, "released this validator's beacon share");
        self.pool.insert(&m, head, self.rt.current());
        self.recover(height).await;
    }

    /// Recovers the beacon of `height` when the pool holds enough shares and the ledger has
    /// none yet; checks it against the genesis key and hands it to the ledger.
    async fn recover(&mut self, height: u64) {
        if self.ledger.beacon_for(height).is_some() {
            self.pool.recovered(height);
            return;
        }
        let Some((partials, first_seen)) = self.pool.ready(height) else {
            return;
        };
        self.pool.recovered(height);
        let (share, ledger) = (self.share.clone(), self.ledger.clone());
        let recovered = self
            .rt
            .child("beacon_recover")
            .shared(true)
            .spawn(move |_| async move {
                let beacon = share.recover(&partials)?;
                ledger
                    .chain
                    .genesis()
                    .check_beacon(height, Some(&beacon))
                    .ok()?;
                ledger.add_beacon(height, beacon);
                Some(beacon)
            })
            .await;
        match recovered {
            Ok(Some(beacon)) => {
                let m = metrics(&self.ledger);
                m.beacon_recovered.inc();
                let took = self
                    .rt
                    .current()
                    .duration_since(first_seen)
                    .unwrap_or(Duration::ZERO);
                m.beacon_recovery_seconds.observe(took.as_secs_f64());
                tracing::debug!(height, beacon = %beacon.to_hex(), "recovered the beacon");
            }
            // Verified shares that recover no valid beacon: a broken share file or dealing.
            _ => tracing::error!(
                height,
                "the beacon shares of this height do not recover the genesis key's signature"
            ),
        }
    }

    /// A share message from `peer` (position `position` in the set, if any).
    async fn received(&mut self, position: Option<usize>, bytes: &[u8]) {
        let m = metrics(&self.ledger);
        let Some(message) = ShareMessage::decode(bytes) else {
            m.beacon_shares.with_label_values(&["invalid"]).inc();
            return;
        };
        if position != Some(message.index as usize) {
            m.beacon_shares.with_label_values(&["invalid"]).inc();
            return;
        }
        let head = self.head();
        match self.pool.offer(message.height, message.index, head) {
            Offer::Stale => {
                m.beacon_shares.with_label_values(&["stale"]).inc();
                return;
            }
            Offer::Duplicate => {
                m.beacon_shares.with_label_values(&["duplicate"]).inc();
                return;
            }
            Offer::Fresh => {}
        }
        let (share, chain_id) = (self.share.clone(), self.chain_id.clone());
        let valid = self
            .rt
            .child("beacon_verify")
            .shared(true)
            .spawn(move |_| async move {
                share.verify(&chain_id, message.height, message.index, &message.partial)
            })
            .await
            .unwrap_or(false);
        let m = metrics(&self.ledger);
        if !valid {
            m.beacon_shares.with_label_values(&["invalid"]).inc();
            tracing::debug!(
                height = message.height,
                index = message.index,
                "dropping a beacon share that does not verify"
            );
            return;
        }
        m.beacon_shares.with_label_values(&["valid"]).inc();
        // The head may have moved during the verification: `insert` checks again.
        if self.pool.insert(&message, self.head(), self.rt.current()) {
            self.recover(message.height).await;
        }
    }

    /// The head moved: forget what is at or below it, release the next height.
    async fn head_moved(&mut self) {
        let head = self.head();
        self.pool.prune(head);
        self.own.retain(|h, _| *h > head);
        self.release(head + 1).await;
    }

    /// A block was notarized or finalized: release the height after it, once its height is
    /// known here, unless it is a sealed round (released at the commit: module docs).
    async fn certified(&mut self, digest: Digest) {
        match self.ledger.height_of(&digest) {
            Some(h) => self.release_certified(h + 1).await,
            None => {
                if self.pending.len() >= MAX_PENDING {
                    self.pending.pop_front();
                }
                self.pending.push_back((digest, 0));
            }
        }
    }

    /// Looks the pending certified digests up again.
    async fn resolve(&mut self) {
        let mut heights = Vec::new();
        let ledger = self.ledger.clone();
        self.pending
            .retain_mut(|(digest, tries)| match ledger.height_of(digest) {
                Some(h) => {
                    heights.push(h);
                    false
                }
                None => {
                    *tries += 1;
                    *tries < PENDING_TRIES
                }
            });
        for h in heights {
            self.release_certified(h + 1).await;
        }
    }

    /// Releases the share of `height` on a certificate of block `height - 1`, unless sealed
    /// calls wait for `height`: then the commit of `height - 1` releases it ([`Self::head_moved`]).
    async fn release_certified(&mut self, height: u64) {
        if self.ledger.sealed_round_waits(height) {
            metrics(&self.ledger).beacon_sealed_waits.inc();
            tracing::debug!(height, "a sealed round: its share waits for finality");
            return;
        }
        self.release(height).await;
    }

    /// Sends this validator's shares above the head again.
    fn rebroadcast(&mut self) {
        let head = self.head();
        self.own.retain(|h, _| *h > head);
        for bytes in self.own.values() {
            self.sender.send(Recipients::All, bytes.to_vec(), false);
        }
    }
}

/// Runs the beacon of a validator holding `share` (module docs): releases its shares as blocks
/// are certified (`certified`: digests of notarized and finalized blocks, from the observer)
/// and committed, gossips them over `channel`, collects and verifies its peers', and recovers
/// the beacons, until the channel closes. `participants` is the engine's ordered set (a
/// share's index is its sender's position).
pub async fn run<E, S, R>(
    rt: E,
    ledger: Arc<Ledger>,
    share: BeaconShare,
    participants: Set<PublicKey>,
    mut certified: mpsc::Receiver<Digest>,
    (sender, mut receiver): (S, R),
) where
    E: Spawner + Clock + Supervisor,
    S: Sender<PublicKey = PublicKey>,
    R: Receiver<PublicKey = PublicKey>,
{
    let chain_id = ledger.chain.genesis().chain_id.clone();
    let mut b = Beacons {
        pool: Pool::new(share.threshold()),
        share: Arc::new(share),
        rt,
        ledger: ledger.clone(),
        chain_id,
        sender,
        own: BTreeMap::new(),
        pending: VecDeque::new(),
    };
    // The committed head is final: the next height's share is due at once.
    b.head_moved().await;
    let mut certified_open = true;
    let mut next_rebroadcast = b.rt.current() + REBROADCAST_EVERY;
    loop {
        let next_tick = if b.pending.is_empty() {
            next_rebroadcast
        } else {
            next_rebroadcast.min(b.rt.current() + RESOLVE_EVERY)
        };
        let tick = b.rt.sleep_until(next_tick);
        tokio::select! {
            biased;
            _ = ledger.head_moved().notified() => b.head_moved().await,
            digest = certified.recv(), if certified_open => match digest {
                Some(digest) => b.certified(digest).await,
                None => certified_open = false,
            },
            message = receiver.recv() => {
                let Ok((peer, bytes)) = message else { return };
                let position = participants.position(&peer);
                b.received(position, bytes.as_ref()).await;
            }
            _ = tick => {
                b.resolve().await;
                if b.rt.current() >= next_rebroadcast {
                    b.rebroadcast();
                    next_rebroadcast = b.rt.current() + REBROADCAST_EVERY;
                }
            }
        }
    }
}
