//! The watchtower (`gamechain channel watch`): it keeps one player's side of a game safe until
//! the result is final. It reads the chain through the node's block feed (`GET /v1/ws`, one
//! message per block, no request per block), reads each block's moves and channel events into
//! the move store ([`Player::watch_block`]), and acts on what they say ([`Player::watch_act`]):
//! it answers a challenge due on our seat with the moves it holds and sends the equivocation
//! proof when the opponent signed two moves for one position (a challenge whose history
//! contradicts a held move is one).
//!
//! It also holds a connection to the node's move relay (`GET /v1/relay/<game>`) as our seat (a
//! hello signed with the game key each time it connects, [`Player::relay_seat`]): a move the
//! opponent's client sends there reaches the store at once, checked exactly as a board post
//! (the node's check is not trusted), and whenever the opponent's connections rise (its client
//! starting or coming back) it re-sends our latest move, if the opponent has not answered it
//! yet, so a move that found nobody listening is not lost. Our own other connections (a `move`
//! being sent) do not count: the relay tells each seat of the other's only. The relay is a
//! shortcut: when it cannot be reached the watch goes on from the block feed alone and tries the
//! relay again later (a minute later when newer clients of our seat replaced its connection;
//! never when we hold no key of our seat).
//!
//! It never gives up on the node: a `429` (waiting at least its `retry-after`), a `5xx`, an
//! answer that is not the API's, a refused or dropped connection, a feed the node closed (it
//! shut down, or this client fell behind) are all waited out with exponential backoff and
//! jitter ([`Backoff`]), then the feed is opened again and the blocks missed meanwhile are read
//! from where the store's last read stopped (`GET /v1/blocks/<height>`, for the gap only). Only
//! what cannot go away by itself ends it: a game or record that does not exist, a store it
//! cannot write, a node that refuses our requests as malformed.

use std::future::Future;
use std::time::{Duration, Instant};

use gamechain_client::client::{Block, BlockRef, ClientError, ClientResult};
use gamechain_client::relay::{Relay, RelayEvent, RelaySeat};

use crate::backoff::{retry_after, transient, Backoff};
use crate::error::ChannelError;
use crate::player::{Player, SyncReport, WatchState, WatchStep};

/// How the watchtower runs.
#[derive(Debug, Clone)]
pub struct WatchOptions {
    /// How long to wait for a block before acting again on something pending (a challenge we
    /// could not answer yet, an action that failed half-way): the store may have changed.
    pub tick: Duration,
    /// Stop after this long even if the game goes on (`None`: run until the result is final).
    pub stop_after: Option<Duration>,
    /// The retry policy.
    pub backoff: Backoff,
}

/// What the watchtower tells its user.
#[derive(Debug)]
pub enum WatchEvent<'a> {
    /// The block feed is open; blocks from `from` on are read.
    Connected {
        /// The first height read (the store's last read + 1).
        from: u64,
    },
    /// One step: a block read, maybe an action taken.
    Step(&'a WatchStep),
    /// The relay connection opened, or the number of the opponent's connections on it changed
    /// (its client came or went).
    Relay {
        /// The opponent's connections now.
        peers: u64,
    },
    /// The relay is not used by this watch: we hold no key of our seat (or it is no channel the
    /// relay serves). The block feed goes on alone.
    RelayOff {
        /// Why.
        why: &'a ChannelError,
    },
    /// Our latest move went through the relay again (the opponent connected), to `to` of its
    /// connections.
    Resent {
        /// Its move number.
        n: u64,
        /// How many of the opponent's connections got it.
        to: u64,
    },
    /// A request failed in a way that may go away; it is tried again after `wait`.
    Retrying {
        /// What was being done.
        what: &'a str,
        /// The failure.
        error: &'a ChannelError,
        /// How long it waits before trying again.
        wait: Duration,
    },
}

/// Why the watchtower stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchEnd {
    /// The result is final: nothing more can happen but `withdraw`.
    Final,
    /// `stop_after` ran out.
    Stopped,
}

struct Run<'p, On> {
    player: &'p Player,
    game: String,
    options: WatchOptions,
    start: Instant,
    on: On,
    state: WatchState,
    /// The time of the last block read (what deadlines are judged by).
    now_ms: u64,
    /// The relay connection, when open.
    relay: Option<Relay>,
    /// Our seat on the relay, once known; `Err` when we cannot be it (then no relay).
    relay_seat: Option<Result<RelaySeat, ()>>,
    /// The opponent's connections on the relay, as last told.
    peers: u64,
    /// When to try opening the relay again, and the wait after the next failure.
    relay_retry: (Instant, Duration),
}

/// Longest wait between two tries to open the relay.
const RELAY_RETRY_MAX: Duration = Duration::from_secs(30);
/// The relay's close code for a connection a newer one of the same seat replaced (a seat holds
/// at most 4).
const CLOSE_REPLACED: u16 = 4002;
/// How long the watch leaves the relay to our seat's newer clients after one replaced it.
const RELAY_REPLACED_WAIT: Duration = Duration::from_secs(60);

/// The next event of `relay`, or never when there is none.
async fn relay_next(relay: &mut Option<Relay>) -> ClientResult<Option<RelayEvent>> {
    match relay {
        Some(r) => r.next().await,
        None => std::future::pending().await,
    }
}

/// Watches `game` for `player` until its result is final (or `stop_after`), telling `on`
/// everything it reads and does (an error from `on` stops it). Errors: only those that cannot
/// go away by themselves.
pub async fn watch<F>(
    player: &Player,
    game: &str,
    options: WatchOptions,
    on: F,
) -> Result<WatchEnd, ChannelError>
where
    F: FnMut(WatchEvent<'_>) -> Result<(), ChannelError>,
{
    let mut run = Run {
        player,
        game: game.to_string(),
        options,
        start: Instant::now(),
        on,
        state: WatchState::default(),
        now_ms: 0,
        relay: None,
        relay_seat: None,
        peers: 0,
        relay_retry: (Instant::now(), Duration::from_secs(1)),
    };
    run.go().await
}

impl<On> Run<'_, On>
where
    On: FnMut(WatchEvent<'_>) -> Result<(), ChannelError>,
{
    fn stopped(&self) -> bool {
        self.options
            .stop_after
            .is_some_and(|d| self.start.elapsed() >= d)
    }

    /// Waits `wait` (less when `stop_after` comes first); false when it stopped.
    async fn pause(&self, wait: Duration) -> bool {
        let wait = match self.options.stop_after {
            Some(d) => wait.min(d.saturating_sub(self.start.elapsed())),
            None => wait,
        };
        tokio::time::sleep(wait).await;
        !self.stopped()
    }

    /// After the transient failure `error` of `what`: tells, waits the backoff; false when it
    /// stopped meanwhile.
    async fn back_off(&mut self, what: &str, error: &ChannelError) -> Result<bool, ChannelError> {
        let wait = self
            .options
            .backoff
            .next(retry_after(self.player.client(), error));
        (self.on)(WatchEvent::Retrying { what, error, wait })?;
        Ok(self.pause(wait).await)
    }

    /// `call()` until it succeeds or fails for good; `None` when `stop_after` ran out.
    async fn retry<T, F, Fut>(&mut self, what: &str, mut call: F) -> Result<Option<T>, ChannelError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, ChannelError>>,
    {
        loop {
            match call().await {
                Ok(v) => return Ok(Some(v)),
                Err(e) if transient(&e) => {
                    if !self.back_off(what, &e).await? {
                        return Ok(None);
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    async fn go(&mut self) -> Result<WatchEnd, ChannelError> {
        let player = self.player;
        let client = player.client();
        let game = self.game.clone();
        'connect: loop {
            if self.stopped() {
                return Ok(WatchEnd::Stopped);
            }
            // Subscribe first, then read the gap: no block falls between the two.
            let Some(mut feed) = self
                .retry("opening the block feed", || async move {
                    client.subscribe_blocks().await.map_err(ChannelError::from)
                })
                .await?
            else {
                return Ok(WatchEnd::Stopped);
            };
            let Some(from) = self
                .retry("reading the game's record", || player.scanned(&game))
                .await?
            else {
                return Ok(WatchEnd::Stopped);
            };
            (self.on)(WatchEvent::Connected { from: from + 1 })?;
            let Some(head) = self
                .retry("reading the head", || async move {
                    Ok(client.status().await?.height)
                })
                .await?
            else {
                return Ok(WatchEnd::Stopped);
            };
            match self.catch_up(head).await? {
                Some(WatchEnd::Final) => return Ok(WatchEnd::Final),
                Some(WatchEnd::Stopped) => return Ok(WatchEnd::Stopped),
                None => {}
            }
            if self.now_ms == 0 {
                let Some(t) = self
                    .retry("reading the head block", || async move {
                        Ok(client.block(BlockRef::Latest).await?.header.header.time_ms)
                    })
                    .await?
                else {
                    return Ok(WatchEnd::Stopped);
                };
                self.now_ms = t;
            }
            // On every (re)connection: look at the game afresh.
            if self.act(true, SyncReport::default()).await? {
                return Ok(WatchEnd::Final);
            }
            self.options.backoff.reset();
            loop {
                if self.stopped() {
                    return Ok(WatchEnd::Stopped);
                }
                self.open_relay().await?;
                let next = tokio::select! {
                    next = tokio::time::timeout(self.options.tick, feed.next()) => next,
                    event = relay_next(&mut self.relay) => {
                        if self.on_relay(event).await? {
                            return Ok(WatchEnd::Final);
                        }
                        continue;
                    }
                };
                let block = match next {
                    Err(_) => {
                        if self.state.pending() && self.act(true, SyncReport::default()).await? {
                            return Ok(WatchEnd::Final);
                        }
                        continue;
                    }
                    Ok(Ok(Some(block))) => block,
                    Ok(Ok(None)) => {
                        let why = match feed.close_reason() {
                            Some((code, reason)) => format!("closed by the node ({code} {reason})"),
                            None => "closed by the node".to_string(),
                        };
                        let e = ChannelError::Client(ClientError::Transport(why));
                        if !self.back_off("reading the block feed", &e).await? {
                            return Ok(WatchEnd::Stopped);
                        }
                        continue 'connect;
                    }
                    Ok(Err(e)) => {
                        let e = ChannelError::from(e);
                        if !transient(&e) {
                            return Err(e);
                        }
                        if !self.back_off("reading the block feed", &e).await? {
                            return Ok(WatchEnd::Stopped);
                        }
                        continue 'connect;
                    }
                };
                let height = block.height();
                // Blocks the feed skipped (it never should, but a lagging subscriber can miss
                // some before the node closes it) are read by height first.
                if let Some(end) = self.catch_up(height.saturating_sub(1)).await? {
                    return Ok(end);
                }
                if let Some(end) = self.read(&block).await? {
                    return Ok(end);
                }
            }
        }
    }

    /// Opens the relay when it is not open and its retry time has come; a failure only delays
    /// the next try (doubling, up to [`RELAY_RETRY_MAX`]). Without a key of our seat the watch
    /// says so once and never opens it.
    async fn open_relay(&mut self) -> Result<(), ChannelError> {
        if self.relay.is_some() || Instant::now() < self.relay_retry.0 {
            return Ok(());
        }
        let seat = match &self.relay_seat {
            Some(Ok(seat)) => seat.clone(),
            Some(Err(())) => return Ok(()),
            None => match self.player.relay_seat(&self.game).await {
                Ok(seat) => {
                    self.relay_seat = Some(Ok(seat.clone()));
                    seat
                }
                Err(e) if transient(&e) => {
                    self.relay_failed();
                    return Ok(());
                }
                Err(e) => {
                    self.relay_seat = Some(Err(()));
                    return (self.on)(WatchEvent::RelayOff { why: &e });
                }
            },
        };
        match self.player.client().relay(&self.game, &seat).await {
            Ok(r) => {
                self.relay = Some(r);
                self.peers = 0;
                self.relay_retry.1 = Duration::from_secs(1);
            }
            Err(_) => self.relay_failed(),
        }
        Ok(())
    }

    /// The relay is closed or could not be opened: the next try waits (doubling).
    fn relay_failed(&mut self) {
        self.relay = None;
        self.peers = 0;
        let wait = self.relay_retry.1;
        self.relay_retry = (Instant::now() + wait, (wait * 2).min(RELAY_RETRY_MAX));
    }

    /// Acts on one relay event; true when the result is final.
    async fn on_relay(
        &mut self,
        event: ClientResult<Option<RelayEvent>>,
    ) -> Result<bool, ChannelError> {
        let event = match event {
            Ok(Some(e)) => e,
            // Closed or lost: the block feed goes on; the relay is tried again later.
            Ok(None) | Err(_) => {
                let replaced = self
                    .relay
                    .as_ref()
                    .and_then(|r| r.close_reason())
                    .is_some_and(|(code, _)| code == CLOSE_REPLACED);
                self.relay_failed();
                if replaced {
                    // Our seat's newer clients hold its connections: leave them be a while
                    // rather than take one back at once (and be taken back in turn).
                    self.relay_retry.0 = Instant::now() + RELAY_REPLACED_WAIT;
                }
                return Ok(false);
            }
        };
        let player = self.player;
        let game = self.game.clone();
        match event {
            RelayEvent::Move { mv, .. } => {
                let value = serde_json::to_value(&mv).expect("a move serializes");
                let Some(report) = self
                    .retry("storing a relayed move", || {
                        player.receive_relayed(&game, &value)
                    })
                    .await?
                else {
                    return Ok(false);
                };
                let touched = !report.received.is_empty() || !report.equivocations.is_empty();
                if touched || !report.refused.is_empty() {
                    return self.act(touched, report).await;
                }
            }
            RelayEvent::Peers { count } => {
                let more = count > self.peers;
                self.peers = count;
                (self.on)(WatchEvent::Relay { peers: count })?;
                if more {
                    let Some(latest) = self
                        .retry("reading our latest move", || player.latest_own_move(&game))
                        .await?
                    else {
                        return Ok(false);
                    };
                    if let (Some((mv, prev)), Some(relay)) = (latest, self.relay.as_mut()) {
                        if relay.send(&mv, &prev).await.is_err() {
                            self.relay = None;
                        }
                    }
                }
            }
            RelayEvent::Relayed { n, to, .. } => {
                (self.on)(WatchEvent::Resent { n, to })?;
            }
            RelayEvent::Error { .. } | RelayEvent::Pong => {}
        }
        Ok(false)
    }

    /// Reads every block after the store's last read up to `head` (by height), acting on each.
    async fn catch_up(&mut self, head: u64) -> Result<Option<WatchEnd>, ChannelError> {
        let player = self.player;
        let client = player.client();
        let game = self.game.clone();
        loop {
            let Some(scanned) = self
                .retry("reading the game's record", || player.scanned(&game))
                .await?
            else {
                return Ok(Some(WatchEnd::Stopped));
            };
            if scanned >= head {
                return Ok(None);
            }
            let height = scanned + 1;
            let Some(block) = self
                .retry("reading a missed block", || async move {
                    Ok(client.block(BlockRef::Height(height)).await?)
                })
                .await?
            else {
                return Ok(Some(WatchEnd::Stopped));
            };
            if let Some(end) = self.read(&block).await? {
                return Ok(Some(end));
            }
        }
    }

    /// Reads `block` into the store and acts on it; `Some` when the watch ends.
    async fn read(&mut self, block: &Block) -> Result<Option<WatchEnd>, ChannelError> {
        let player = self.player;
        let game = self.game.clone();
        let Some(report) = self
            .retry("reading a block into the store", || {
                player.watch_block(&game, block)
            })
            .await?
        else {
            return Ok(Some(WatchEnd::Stopped));
        };
        self.now_ms = self.now_ms.max(block.header.header.time_ms);
        let touched = !report.events.is_empty()
            || !report.received.is_empty()
            || !report.equivocations.is_empty()
            || !report.refused.is_empty()
            || !report.confirmed.is_empty();
        let refresh = touched || self.state.pending();
        Ok(self.act(refresh, report).await?.then_some(WatchEnd::Final))
    }

    /// One [`Player::watch_act`] at the last block's time; true when the result is final. A
    /// failure that may go away is told and waited out, and the act is tried again on the next
    /// block or tick.
    async fn act(&mut self, refresh: bool, report: SyncReport) -> Result<bool, ChannelError> {
        let result = self
            .player
            .watch_act(&self.game, self.now_ms, &mut self.state, refresh)
            .await;
        match result {
            Ok(mut step) => {
                step.sync = report;
                (self.on)(WatchEvent::Step(&step))?;
                Ok(step.final_result)
            }
            Err(e) if transient(&e) => {
                self.state.set_pending();
                // The block's report is told even when the act after it failed.
                let step = WatchStep {
                    sync: report,
                    now_ms: self.now_ms,
                    ..WatchStep::default()
                };
                (self.on)(WatchEvent::Step(&step))?;
                self.back_off("acting on the game", &e).await?;
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }
}
