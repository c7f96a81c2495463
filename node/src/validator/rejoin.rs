//! Rejoining consensus without a consensus journal: how a validator whose key may have voted
//! before (a data directory joined from a snapshot, or one that lost `<data>/consensus/`)
//! finds a point from which voting again cannot conflict with its own earlier votes.
//!
//! Simplex keeps every vote a validator signs in its journal (`<data>/consensus/`, partitions
//! `gc-simplex*`) and replays it after a restart, so a restarted validator never signs a second,
//! different vote in a view. Without the journal it does not know which views its key voted
//! in. Starting consensus from an old certificate (a snapshot's, or the head of a database
//! whose journal was lost) could then vote again in one of those views: a conflicting vote,
//! which the other validators record as evidence against the key.
//!
//! So such a validator first follows the chain as a follower does (over HTTP from the peer
//! given with `--snapshot-from`, every block checked against its certificate), and starts
//! consensus only from a certificate that its key's earlier votes cannot reach
//! ([`FloorSearch`]):
//!
//! 1. `started_ms` is the joining node's clock when the join began; the operator has stopped
//!    the key's old instance before that.
//! 2. Let `w` be the view of the first block it follows that carries its own certificate and a
//!    block time at least `started_ms + 3 × max_clock_drift_ms`. Honest validators notarize a
//!    live proposal only when its time is at most their clock plus the drift window, and each
//!    notarizes only in the view it is in. Three windows cover the three clocks involved (the
//!    proposal's time may be a window past the voter's clock, the voter's clock a window off
//!    true time, the joining node's clock a window off true time), so the block was notarized,
//!    in view `w`, after the join began. Any view `v` the old instance voted in was entered
//!    through a certificate of view `v - 1` by 2f+1 validators, signed before the join began;
//!    that quorum shares an honest validator with the notarization of `w`, and honest views
//!    only go forward: `w ≥ v - 1`. (This holds because a validator votes only in its current
//!    view: one leader per view, no optimistic or early votes, as `engine.rs` configures
//!    simplex.) A block timed ahead of the joining node's clock by more than a window proves
//!    that clock behind, and the node refuses to go on.
//! 3. The floor is the first certified block of view at least `w + 2 > v` once at least
//!    [`MIN_WATCHED`] certified blocks made after the join began were watched: simplex starts
//!    at the view after it, past every view the key voted in.
//!
//! On the way, a certificate made after the join began that carries this validator's own
//! signature proves another instance of the key is still voting: the node refuses to start,
//! records it (`key_seen_at`), and keeps refusing until the operator removes the file (a
//! certificate holds the first 2f+1 votes to arrive, so a slow duplicate may go unseen: this
//! is a safeguard, not a proof of absence).
//!
//! The state of a rejoin is `<data>/rejoin.json` ([`Rejoin`]): `{"started_ms": <ms>}` while it
//! follows, then `{"started_ms", "floor": <height>}` once the floor is found; consensus starts
//! from the floor's certificate on this and every later start (`run.rs`). A node stopped while
//! following resumes following (with the same `started_ms`), watching again the stored blocks
//! made after the join began. `<data>/consensus.started` ([`STARTED_FILE`]) names the key whose
//! journal the directory holds, once it holds something: a journal missing beside it (or beside
//! a chain above its start) was lost; one of another key came from another validator.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use gamechain_client::client::Client;

use crate::proof::finality::FinalityChecker;
use crate::replica::follower::follow_until;
use gamechain_ledger::chain::Chain;
use gamechain_ledger::genesis_setup::now_ms;
pub use gamechain_ledger::rejoin_record::{
    read, set_aside, write, Rejoin, REJOIN_FILE, STARTED_FILE,
};
use gamechain_ledger::storage::Storage;
use gamechain_ledger::NodeError;

/// How many drift windows past the join's start a block's time must be for its certificate to
/// count as made after the join began (one for the joining node's clock, one for the voters',
/// one to spare).
pub const DRIFT_WINDOWS: u64 = 3;

/// Views past the first post-join certificate's view the floor must be (module docs, step 3).
pub const FLOOR_VIEWS: u64 = 2;

/// How many certified blocks made after the join began the node watches (for its own key's
/// signature, [`FloorSearch::observe`]) before it takes a floor.
pub const MIN_WATCHED: u64 = 10;

fn io_err(what: &str, path: &Path, e: impl std::fmt::Display) -> NodeError {
    NodeError::Io(format!("cannot {what} {}: {e}", path.display()))
}

/// Whether the consensus storage directory `dir` holds no simplex journal: no non-empty
/// partition directory `gc-simplex*` (a validator that never voted from this directory, or
/// one that lost its journal).
pub fn journal_is_empty(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return true;
    };
    !entries.flatten().any(|e| {
        e.file_name().to_string_lossy().starts_with("gc-simplex")
            && std::fs::read_dir(e.path()).is_ok_and(|mut blobs| blobs.next().is_some())
    })
}

/// Looks for the floor among the certified blocks a rejoining validator follows, in height
/// order (module docs).
#[derive(Debug, Clone)]
pub struct FloorSearch {
    /// Blocks at or after this time (ms) were notarized after the join began.
    after_ms: u64,
    /// The view of the first such certified block.
    first_view: Option<u64>,
    /// How many such certified blocks were watched.
    watched: u64,
}

/// What one certified block tells a [`FloorSearch`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// Not the floor yet.
    NotYet,
    /// This block is the floor.
    Floor,
}

impl FloorSearch {
    /// A search for a join that began at `started_ms` on a chain whose drift window is
    /// `max_clock_drift_ms`.
    pub fn new(started_ms: u64, max_clock_drift_ms: u64) -> FloorSearch {
        FloorSearch {
            after_ms: started_ms.saturating_add(max_clock_drift_ms.saturating_mul(DRIFT_WINDOWS)),
            first_view: None,
            watched: 0,
        }
    }

    /// The block time from which certificates count as made after the join began.
    pub fn after_ms(&self) -> u64 {
        self.after_ms
    }

    /// The view the floor must reach, once known.
    pub fn floor_view(&self) -> Option<u64> {
        self.first_view.map(|w| w + FLOOR_VIEWS)
    }

    /// Takes the next block carrying its own certificate: its block time (ms), its
    /// certificate's view, and whether this validator's key is among the certificate's
    /// signers. The floor is the first such block of view at least [`FLOOR_VIEWS`] past the
    /// first one made after the join began, once at least [`MIN_WATCHED`] of those were
    /// watched. Errors: the key signed a certificate made after the join began (another
    /// instance of it is voting).
    pub fn observe(
        &mut self,
        height: u64,
        time_ms: u64,
        view: u64,
        signed_by_me: bool,
    ) -> Result<Found, String> {
        if time_ms < self.after_ms {
            return Ok(Found::NotYet);
        }
        if signed_by_me {
            return Err(format!(
                "this validator's consensus key signed the finality certificate of block {height} \
                 (view {view}, block time {time_ms} ms), made after this join began: another \
                 instance of the key is still voting. Stop it, then start this node again"
            ));
        }
        self.watched += 1;
        match self.first_view {
            None => {
                self.first_view = Some(view);
                Ok(Found::NotYet)
            }
            Some(w) if view >= w + FLOOR_VIEWS && self.watched >= MIN_WATCHED => Ok(Found::Floor),
            Some(_) => Ok(Found::NotYet),
        }
    }
}

/// Once the journal under `<data_dir>/consensus/` holds something (the first vote, or a
/// floor's certificate), writes [`STARTED_FILE`] (durably) naming `key_hex` as its owner, unless
/// it does already; `Ok(true)` when the marker is in place. A validator stopped before it ever
/// voted leaves no marker and may start from genesis again. Called at start and every second
/// while consensus runs (`run.rs`) until it returns `true`. Errors: `NodeError::Io`.
pub fn mark_if_journaled(data_dir: &Path, key_hex: &str) -> Result<bool, NodeError> {
    let path = data_dir.join(STARTED_FILE);
    if std::fs::read_to_string(&path).is_ok_and(|k| k.trim() == key_hex) {
        return Ok(true);
    }
    if journal_is_empty(&data_dir.join("consensus")) {
        return Ok(false);
    }
    std::fs::write(&path, key_hex)
        .and_then(|_| std::fs::File::open(&path)?.sync_all())
        .and_then(|_| std::fs::File::open(data_dir)?.sync_all())
        .map_err(|e| io_err("write", &path, e))?;
    Ok(true)
}

/// How often a rejoining validator logs its progress.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// The height consensus starts from on this start of a validator whose chain is `chain`
/// (`storage` its writer; `me` its index in the ordered participant set): 0 for a directory
/// that holds the chain from genesis and its consensus journal; the recorded floor of a
/// finished rejoin, else the oldest block (a directory that joined before rejoins were
/// recorded). A directory that joined from a snapshot and has not found its floor yet, or one
/// whose journal is lost while its head is above its start, rejoins first (module docs): it
/// follows the peer of `--snapshot-from` until the floor, records it, and returns it. `None`:
/// shut down while following. Errors: a journal lost and no `--snapshot-from` to follow
/// (`NodeError::Refused`, saying what to do), a rejoin whose peer is not given, the key
/// signing elsewhere, the followed node diverging, storage.
pub async fn consensus_floor(
    chain: &Arc<Chain>,
    storage: Storage,
    (me, me_key): (u32, &[u8; 32]),
    shutdown: &mut watch::Receiver<bool>,
) -> Result<Option<(Storage, u64)>, NodeError> {
    let config = &chain.config;
    let data = &config.data_dir;
    let consensus_dir = data.join("consensus");
    let head = chain.head().header.header.height;
    let mut state = read(data)?;
    if let Some(Rejoin {
        key_seen_at: Some(h),
        ..
    }) = state
    {
        return Err(NodeError::Refused(format!(
            "another instance of this validator's consensus key signed the finality certificate \
             of block {h} while this node was rejoining: it may still be voting. Stop it, then \
             remove {} and start again with --snapshot-from URL (the rejoin starts over)",
            data.join(REJOIN_FILE).display()
        )));
    }
    let start = match state.and_then(|r| r.floor) {
        Some(floor) => floor,
        None => storage.oldest_height()?.unwrap_or(0),
    };
    let marker = data.join(STARTED_FILE);
    let me_hex = hex::encode(me_key);
    let owner = std::fs::read_to_string(&marker).ok();
    if let Some(owner) = owner.as_deref().map(str::trim).filter(|o| *o != me_hex) {
        return Err(NodeError::Refused(format!(
            "{} says this directory's consensus journal was written by the consensus key {owner}, \
             not this validator's ({me_hex}): a directory copied from another validator. Move \
             {} aside and start again with --snapshot-from URL (docs/validators.md, \
             \"Rejoining\")",
            marker.display(),
            consensus_dir.display()
        )));
    }
    let pending = state.is_some_and(|r| r.floor.is_none());
    if !pending {
        // Without a journal, consensus may start only from genesis on a directory that never
        // ran it: anything else (a floor above 0, blocks committed, or the marker of an earlier
        // start) means the key may have voted in views this node no longer knows.
        let lost = journal_is_empty(&consensus_dir) && (start > 0 || head > 0 || owner.is_some());
        if !lost {
            if config.snapshot_from.is_some() {
                tracing::info!(
                    "--snapshot-from ignored: this data directory holds the chain and its \
                     consensus journal already"
                );
            }
            mark_if_journaled(data, &me_hex)?;
            return Ok(Some((storage, start)));
        }
        if config.snapshot_from.is_none() {
            let why = if state.is_some_and(|r| r.floor.is_some()) {
                "consensus stopped before it wrote its journal, or the journal was lost"
            } else {
                "the journal was lost"
            };
            return Err(NodeError::Refused(format!(
                "{} holds no consensus journal, but this validator's consensus ran here before \
                 (its chain is at block {head}, its consensus started from block {start}): {why}, \
                 and this key may have voted in views it no longer records. Starting consensus \
                 now could sign conflicting votes. Start again with --snapshot-from URL (the \
                 HTTP API of another node of this chain): the node follows the chain from URL \
                 until a block finalized after this start, and starts consensus from it \
                 (docs/validators.md, \"Rejoining\")",
                consensus_dir.display()
            )));
        }
        let now = now_ms();
        if let Some(moved) = set_aside(&consensus_dir, "rejoin", now)? {
            tracing::warn!(to = %moved.display(), "the consensus storage without a journal set aside");
        }
        let r = Rejoin {
            started_ms: now,
            floor: None,
            key_seen_at: None,
        };
        write(data, &r)?;
        state = Some(r);
    }
    let started_ms = state.expect("pending or just written").started_ms;
    let Some(peer) = config.snapshot_from.as_deref() else {
        return Err(NodeError::Refused(format!(
            "{} records a rejoin under way (begun at {started_ms} ms): start again with \
             --snapshot-from URL (the HTTP API of another node of this chain) for the node to \
             follow until it can start consensus safely (docs/validators.md, \"Rejoining\")",
            data.join(REJOIN_FILE).display()
        )));
    };
    let upstream = Client::new(peer)
        .map_err(|e| NodeError::Refused(format!("--snapshot-from {peer}: {e}")))?;
    let checker = FinalityChecker::new(chain.genesis(), &chain.genesis_hash)
        .map_err(|e| NodeError::Refused(format!("the genesis validator set: {e}")))?;
    let mut search = FloorSearch::new(started_ms, chain.genesis().clock().max_clock_drift_ms);
    tracing::info!(
        peer,
        head,
        after_ms = search.after_ms(),
        "rejoining consensus: following the chain until a block finalized after this join began \
         (block time at or after after_ms), then {FLOOR_VIEWS} views more"
    );
    // The followed node must still hold the blocks after our head.
    if let Err(e) = upstream
        .block(gamechain_client::client::BlockRef::Height(head + 1))
        .await
    {
        if e.code() == Some("pruned") {
            return Err(NodeError::Refused(format!(
                "{peer} no longer holds block {} (it deleted it: 410 pruned), so this node cannot \
                 follow it from its head {head}: move this data directory aside (keeping \
                 genesis.json, sequencer.wif and consensus.key) and join from a snapshot with \
                 --snapshot-from",
                head + 1
            )));
        }
    }
    // Resuming: the blocks made after the join began that are already stored are watched
    // again (their certificates are rechecked for this key's signature).
    let oldest = storage.oldest_height()?.unwrap_or(0);
    let mut next = head + 1;
    while next > oldest + 1 {
        match storage.signed_header(next - 1)? {
            Some(h) if h.header.time_ms >= search.after_ms() => next -= 1,
            _ => break,
        }
    }
    let drift = chain.genesis().clock().max_clock_drift_ms;
    let mut logged = Instant::now();
    let mut floor_view = 0;
    let found = follow_until(chain, storage, &upstream, shutdown, |chain| {
        let to = chain.head().header.header.height;
        while next <= to {
            let h = next;
            let (record, header) = chain
                .read_db(|db| Ok((db.validator_finality(h)?, db.signed_header(h)?)))
                .map_err(|e| NodeError::Runtime(e.to_string()))?;
            next += 1;
            let (Some((digest, Some(certificate))), Some(header)) = (record, header) else {
                continue;
            };
            let f = checker
                .finalization(&digest, &certificate)
                .map_err(|e| NodeError::Refused(format!("block {h}'s stored certificate: {e}")))?;
            let view = f.proposal.round.view().get();
            let time_ms = header.header.time_ms;
            let now = now_ms();
            if time_ms > now.saturating_add(drift) {
                return Err(NodeError::Refused(format!(
                    "block {h} is timed {time_ms} ms, {} ms ahead of this node's clock (the \
                     chain's drift window is {drift} ms): this node's clock is behind, and a \
                     rejoin measures time with it. Set the clock right (NTP), then start again",
                    time_ms - now
                )));
            }
            let mine = f.certificate.signers.iter().any(|p| p.get() == me);
            let seen = search.observe(h, time_ms, view, mine);
            if seen.is_err() {
                write(
                    data,
                    &Rejoin {
                        started_ms,
                        floor: None,
                        key_seen_at: Some(h),
                    },
                )?;
            }
            match seen.map_err(NodeError::Refused)? {
                Found::Floor => {
                    floor_view = view;
                    return Ok(Some(h));
                }
                Found::NotYet => {}
            }
        }
        if logged.elapsed() >= PROGRESS_EVERY {
            logged = Instant::now();
            tracing::info!(
                head = to,
                after_ms = search.after_ms(),
                floor_view = ?search.floor_view(),
                "rejoining consensus: still following"
            );
        }
        Ok(None)
    })
    .await?;
    let Some((storage, floor)) = found else {
        return Ok(None);
    };
    write(
        data,
        &Rejoin {
            started_ms,
            floor: Some(floor),
            key_seen_at: None,
        },
    )?;
    tracing::info!(
        floor,
        view = floor_view,
        "rejoined: consensus starts from block {floor}, finalized after this join began"
    );
    Ok(Some((storage, floor)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_floor_is_two_views_past_the_first_certificate_made_after_the_join() {
        // Joined at 10,000 ms, drift 2,000 ms: certificates of blocks timed 16,000 ms or later.
        let mut s = FloorSearch::new(10_000, 2_000);
        assert_eq!(s.after_ms(), 16_000);
        // Older blocks never count, whoever signed them (the key's own old votes included).
        assert_eq!(s.observe(5, 15_999, 40, true), Ok(Found::NotYet));
        assert_eq!(s.observe(6, 16_000, 41, false), Ok(Found::NotYet));
        assert_eq!(s.floor_view(), Some(43));
        assert_eq!(s.observe(7, 16_100, 42, false), Ok(Found::NotYet));
        // Two views past, but fewer than MIN_WATCHED certificates watched.
        assert_eq!(s.observe(8, 16_200, 43, false), Ok(Found::NotYet));
        for i in 0..MIN_WATCHED - 4 {
            assert_eq!(s.observe(9 + i, 16_300, 44 + i, false), Ok(Found::NotYet));
        }
        assert_eq!(s.observe(20, 16_400, 60, false), Ok(Found::Floor));
        // Views skipped by nullifications count as views.
        let mut s = FloorSearch::new(0, 0);
        assert_eq!(s.observe(1, 0, 7, false), Ok(Found::NotYet));
        for i in 0..MIN_WATCHED - 2 {
            assert_eq!(s.observe(2 + i, 1, 8, false), Ok(Found::NotYet));
        }
        assert_eq!(s.observe(20, 1, 30, false), Ok(Found::Floor));
    }

    #[test]
    fn a_certificate_after_the_join_signed_by_this_key_refuses() {
        let mut s = FloorSearch::new(10_000, 2_000);
        let e = s.observe(9, 20_000, 50, true).unwrap_err();
        assert!(e.contains("another instance of the key"), "{e}");
        assert!(e.contains("block 9"), "{e}");
    }

    #[test]
    fn the_state_file_round_trips_and_refuses_other_shapes() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path()).unwrap(), None);
        let r = Rejoin {
            started_ms: 5,
            floor: None,
            key_seen_at: None,
        };
        write(dir.path(), &r).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join(REJOIN_FILE)).unwrap(),
            r#"{"started_ms":5}"#
        );
        assert_eq!(read(dir.path()).unwrap(), Some(r));
        let r = Rejoin {
            started_ms: 5,
            floor: Some(12),
            key_seen_at: Some(14),
        };
        write(dir.path(), &r).unwrap();
        assert_eq!(read(dir.path()).unwrap(), Some(r));
        std::fs::write(dir.path().join(REJOIN_FILE), b"{\"started\":1}").unwrap();
        assert!(matches!(read(dir.path()), Err(NodeError::Refused(_))));
    }

    #[test]
    fn a_journal_is_a_simplex_partition_and_set_aside_renames() {
        let dir = tempfile::tempdir().unwrap();
        let consensus = dir.path().join("consensus");
        assert!(journal_is_empty(&consensus));
        std::fs::create_dir(&consensus).unwrap();
        std::fs::create_dir(consensus.join("gc-marshal-blocks")).unwrap();
        assert!(journal_is_empty(&consensus));
        std::fs::create_dir(consensus.join("gc-simplex")).unwrap();
        assert!(journal_is_empty(&consensus), "a partition without blobs");
        std::fs::write(consensus.join("gc-simplex").join("0000"), b"votes").unwrap();
        assert!(!journal_is_empty(&consensus));
        let moved = set_aside(&consensus, "join", 77).unwrap().unwrap();
        assert_eq!(moved, dir.path().join("consensus.before-join-77"));
        assert!(moved.join("gc-simplex").is_dir() && !consensus.exists());
        assert_eq!(set_aside(&consensus, "join", 78).unwrap(), None);
    }
}
