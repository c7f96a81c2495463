//! [`Relay`]: the rooms of the move relay, one per game with a connection: who is connected
//! and as which seat, each connection's queue, and the game's frame budget; and the hellos
//! taken lately ([`Hellos`]: each is good once). Shared by the relay's handlers through the
//! API's state; knows nothing of HTTP.
//!
//! Every connection is one seat's (its hello proved it). A seat holds at most [`MAX_PER_SEAT`]
//! connections: its next one takes the place of its oldest, so a player's newest client always
//! gets in and nobody else can take a seat's place. A move goes to the other seat's
//! connections only, and `to` and `peers` count those.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::sync::mpsc;

use crate::server::rate_limit::Bucket;

/// Frames all the connections of one game may send per second (burst: two seconds' worth).
pub const GAME_FRAMES_PER_SEC: f64 = 50.0;
/// Connections one seat may have at once (a player's tabs, devices, `watch` and `move`); its
/// next one replaces its oldest.
pub const MAX_PER_SEAT: usize = 4;
/// Messages waiting to be sent to one connection before it is dropped.
pub const QUEUE: usize = 64;
/// How long a hello taken is remembered, so that it is not taken again: a hello is good while
/// its time is within `HELLO_SKEW_MS` of the node's clock, so at most twice that after it was
/// taken.
pub const HELLO_MEMORY: Duration =
    Duration::from_millis(2 * gamechain_client::relay::HELLO_SKEW_MS);
/// Most hellos remembered at once (the oldest are forgotten first beyond it).
pub const MAX_HELLOS: usize = 65_536;

/// One connection of a game.
struct Member {
    id: u64,
    seat: u8,
    tx: mpsc::Sender<Arc<str>>,
    /// Set when a newer connection of its seat took its place (then its sender is dropped).
    replaced: Arc<AtomicBool>,
}

/// The connections of one game, oldest first, and its frame budget.
struct Room {
    members: Vec<Member>,
    bucket: Bucket,
}

/// A connection added to a game's room.
pub(super) struct Joined {
    /// The connection's id in its room.
    pub id: u64,
    /// What the room sends it; closed when it is removed.
    pub outgoing: mpsc::Receiver<Arc<str>>,
    /// True once a newer connection of its seat replaced it (its `outgoing` is then closed).
    pub replaced: Arc<AtomicBool>,
}

/// The hellos taken in the last [`HELLO_MEMORY`]: a hello (its signature) is taken once.
#[derive(Default)]
pub struct Hellos {
    order: VecDeque<(Instant, String)>,
    seen: HashSet<String>,
}

impl Hellos {
    /// Takes `sig` at `now`: false when it was taken already.
    fn take(&mut self, sig: &str, now: Instant) -> bool {
        while let Some((at, _)) = self.order.front() {
            if now.saturating_duration_since(*at) < HELLO_MEMORY && self.order.len() < MAX_HELLOS {
                break;
            }
            let (_, old) = self.order.pop_front().expect("not empty");
            self.seen.remove(&old);
        }
        if !self.seen.insert(sig.to_string()) {
            return false;
        }
        self.order.push_back((now, sig.to_string()));
        true
    }
}

/// Every game with a connection (shared by the handlers).
#[derive(Default)]
pub struct Relay {
    rooms: Mutex<HashMap<String, Room>>,
    hellos: Mutex<Hellos>,
    next_id: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// `{"type": "peers", "count": n}`.
fn peers_message(count: usize) -> Arc<str> {
    json!({"type": "peers", "count": count}).to_string().into()
}

impl Room {
    /// Connections of `seat`.
    fn count(&self, seat: u8) -> usize {
        self.members.iter().filter(|m| m.seat == seat).count()
    }

    /// Tells every connection of the seat other than `seat` how many `seat` has now. A
    /// connection whose queue is full is not told (it does not read; the next move it is sent
    /// drops it).
    fn announce(&self, seat: u8) {
        let text = peers_message(self.count(seat));
        for m in self.members.iter().filter(|m| m.seat != seat) {
            let _ = m.tx.try_send(text.clone());
        }
    }
}

impl Relay {
    /// Takes a hello's signature: false when it was taken in the last [`HELLO_MEMORY`] (a
    /// replay).
    pub(super) fn take_hello(&self, sig: &str) -> bool {
        lock(&self.hellos).take(sig, Instant::now())
    }

    /// Adds a connection of `seat` to `game`'s room; when the seat holds [`MAX_PER_SEAT`]
    /// already, its oldest is removed first (marked replaced: its task closes it). The new
    /// connection is told how many connections the other seat has, and the other seat the new
    /// count of this one when it changed.
    pub(super) fn join(&self, game: &str, seat: u8) -> Joined {
        let mut rooms = lock(&self.rooms);
        let room = rooms.entry(game.to_string()).or_insert_with(|| Room {
            members: Vec::new(),
            bucket: Bucket::full(2.0 * GAME_FRAMES_PER_SEC, Instant::now()),
        });
        let before = room.count(seat);
        while room.count(seat) >= MAX_PER_SEAT {
            let oldest = room
                .members
                .iter()
                .position(|m| m.seat == seat)
                .expect("the seat has connections");
            let gone = room.members.remove(oldest);
            gone.replaced.store(true, Ordering::Relaxed);
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, outgoing) = mpsc::channel(QUEUE);
        let _ = tx.try_send(peers_message(room.count(1 - seat)));
        let replaced = Arc::new(AtomicBool::new(false));
        room.members.push(Member {
            id,
            seat,
            tx,
            replaced: replaced.clone(),
        });
        if room.count(seat) != before {
            room.announce(seat);
        }
        Joined {
            id,
            outgoing,
            replaced,
        }
    }

    /// Removes connection `id` of `game` (nothing when it was removed already); the other seat
    /// is told the new count.
    pub(super) fn leave(&self, game: &str, id: u64) {
        let mut rooms = lock(&self.rooms);
        let Some(room) = rooms.get_mut(game) else {
            return;
        };
        let Some(i) = room.members.iter().position(|m| m.id == id) else {
            return;
        };
        let gone = room.members.remove(i);
        if room.members.is_empty() {
            rooms.remove(game);
        } else {
            room.announce(gone.seat);
        }
    }

    /// Takes one frame from `game`'s budget, then queues `text` for every connection of the
    /// seat other than `from` (the sender's seat). Returns how many took it, or `Err(seconds)`
    /// when the game's budget is spent. A connection whose queue is full stopped reading: it
    /// is removed (its sender dropped, so its task closes the connection once it has sent what
    /// was queued), and the sender's seat is told the new count.
    pub(super) fn forward(&self, game: &str, from: u8, text: Arc<str>) -> Result<usize, u64> {
        let mut rooms = lock(&self.rooms);
        let Some(room) = rooms.get_mut(game) else {
            return Ok(0);
        };
        room.bucket.take(
            GAME_FRAMES_PER_SEC,
            2.0 * GAME_FRAMES_PER_SEC,
            Instant::now(),
            1.0,
        )?;
        let (mut sent, mut dropped) = (0, false);
        room.members.retain(|m| {
            if m.seat == from {
                return true;
            }
            match m.tx.try_send(text.clone()) {
                Ok(()) => {
                    sent += 1;
                    true
                }
                Err(mpsc::error::TrySendError::Full(_)) => {
                    dropped = true;
                    false
                }
                Err(mpsc::error::TrySendError::Closed(_)) => true,
            }
        });
        if dropped {
            room.announce(1 - from);
        }
        Ok(sent)
    }

    /// Games with a connection.
    #[cfg(test)]
    fn games(&self) -> usize {
        lock(&self.rooms).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Everything queued for `j` so far.
    fn drain(j: &mut Joined) -> Vec<String> {
        let mut out = Vec::new();
        while let Ok(m) = j.outgoing.try_recv() {
            out.push(m.to_string());
        }
        out
    }

    fn peers(n: usize) -> String {
        peers_message(n).to_string()
    }

    #[test]
    fn moves_go_to_the_other_seat_only_and_count_its_connections() {
        let relay = Relay::default();
        let mut a1 = relay.join("g", 0);
        assert_eq!(drain(&mut a1), [peers(0)]);
        // A second connection of seat 0 (the player's `watch`): not a peer, not told.
        let mut a2 = relay.join("g", 0);
        assert_eq!(drain(&mut a2), [peers(0)]);
        assert!(drain(&mut a1).is_empty());
        assert_eq!(relay.forward("g", 0, "m0".into()), Ok(0));
        assert!(drain(&mut a1).is_empty() && drain(&mut a2).is_empty());
        // The opponent arrives: both of seat 0's connections are told; it is told 2.
        let mut b = relay.join("g", 1);
        assert_eq!(drain(&mut b), [peers(2)]);
        assert_eq!(drain(&mut a1), [peers(1)]);
        assert_eq!(drain(&mut a2), [peers(1)]);
        assert_eq!(relay.forward("g", 0, "m1".into()), Ok(1));
        assert_eq!(drain(&mut b), ["m1"]);
        assert!(drain(&mut a2).is_empty());
        assert_eq!(relay.forward("g", 1, "m2".into()), Ok(2));
        assert_eq!(
            (drain(&mut a1), drain(&mut a2)),
            (vec!["m2".to_string()], vec!["m2".to_string()])
        );
        // Leaving: the other seat is told.
        relay.leave("g", b.id);
        assert_eq!(drain(&mut a1), [peers(0)]);
        relay.leave("g", a1.id);
        relay.leave("g", a1.id);
        relay.leave("g", a2.id);
        assert_eq!(relay.games(), 0);
    }

    #[test]
    fn a_seats_next_connection_past_the_cap_replaces_its_oldest_never_the_other_seats() {
        let relay = Relay::default();
        let mut b = relay.join("g", 1);
        let mut a: Vec<Joined> = (0..MAX_PER_SEAT).map(|_| relay.join("g", 0)).collect();
        assert_eq!(drain(&mut b).last(), Some(&peers(MAX_PER_SEAT)));
        let mut newest = relay.join("g", 0);
        assert_eq!(drain(&mut newest), [peers(1)]);
        // The oldest of seat 0 is out: replaced, its queue closed after what it had.
        assert!(a[0].replaced.load(Ordering::Relaxed));
        drain(&mut a[0]);
        assert!(matches!(
            a[0].outgoing.try_recv(),
            Err(mpsc::error::TryRecvError::Disconnected)
        ));
        assert!(a[1..].iter().all(|j| !j.replaced.load(Ordering::Relaxed)));
        assert!(!b.replaced.load(Ordering::Relaxed));
        // Seat 1 still sees 4 connections of seat 0 (not told again), and a move reaches 4.
        assert!(drain(&mut b).is_empty());
        assert_eq!(relay.forward("g", 1, "m".into()), Ok(MAX_PER_SEAT));
        // Its task leaving afterwards changes nothing.
        relay.leave("g", a[0].id);
        assert!(drain(&mut b).is_empty());
        assert_eq!(relay.forward("g", 1, "m".into()), Ok(MAX_PER_SEAT));
    }

    #[test]
    fn a_connection_that_does_not_read_is_dropped_and_the_sender_told() {
        let relay = Relay::default();
        let mut a = relay.join("g", 0);
        // Seat 1's connection reads nothing: its greeting, then moves, fill its queue.
        let b = relay.join("g", 1);
        drain(&mut a);
        for _ in 0..QUEUE - 1 {
            assert_eq!(relay.forward("g", 0, "m".into()), Ok(1));
        }
        assert_eq!(relay.forward("g", 0, "m".into()), Ok(0));
        assert_eq!(drain(&mut a), [peers(0)]);
        assert!(!b.replaced.load(Ordering::Relaxed));
    }

    #[test]
    fn a_hello_is_taken_once_and_forgotten_after_its_memory() {
        let mut h = Hellos::default();
        let t = Instant::now();
        assert!(h.take("s1", t));
        assert!(!h.take("s1", t + Duration::from_secs(100)));
        assert!(h.take("s2", t + Duration::from_secs(100)));
        // s1 is forgotten once HELLO_MEMORY passed (its time is out of the window by then).
        assert!(h.take("s1", t + HELLO_MEMORY + Duration::from_secs(1)));
        assert!(!h.take("s2", t + HELLO_MEMORY + Duration::from_secs(1)));
    }
}
