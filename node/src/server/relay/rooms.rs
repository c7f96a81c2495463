//! [`Relay`]: the rooms of the move relay, one per game with a connection: who is connected,
//! each connection's queue, and the game's frame budget. Shared by the relay's handlers through
//! the API's state; knows nothing of HTTP.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::json;
use tokio::sync::mpsc;

use crate::server::rate_limit::Bucket;

/// Frames all the connections of one game may send per second (burst: two seconds' worth).
pub const GAME_FRAMES_PER_SEC: f64 = 50.0;
/// Connections one game may have at once (two players, each with a few tabs or devices).
pub const MAX_PER_GAME: usize = 8;
/// Messages waiting to be sent to one connection before it is dropped.
pub const QUEUE: usize = 64;
/// One connection of a game.
struct Member {
    id: u64,
    tx: mpsc::Sender<Arc<str>>,
}

/// The connections of one game and its frame budget.
struct Room {
    members: Vec<Member>,
    bucket: Bucket,
}

/// Every game with a connection (shared by the handlers).
#[derive(Default)]
pub struct Relay {
    rooms: Mutex<HashMap<String, Room>>,
    next_id: AtomicU64,
}

fn lock(m: &Mutex<HashMap<String, Room>>) -> std::sync::MutexGuard<'_, HashMap<String, Room>> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Relay {
    /// Adds a connection to `game`'s room: its id and receiver, or `None` when the room is
    /// full. Everyone else in the room is told the new count.
    pub(super) fn join(&self, game: &str) -> Option<(u64, mpsc::Receiver<Arc<str>>)> {
        let mut rooms = lock(&self.rooms);
        let room = rooms.entry(game.to_string()).or_insert_with(|| Room {
            members: Vec::new(),
            bucket: Bucket::full(2.0 * GAME_FRAMES_PER_SEC, Instant::now()),
        });
        if room.members.len() >= MAX_PER_GAME {
            return None;
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel(QUEUE);
        room.members.push(Member { id, tx });
        Self::tell_peers(room);
        Some((id, rx))
    }

    /// Removes connection `id` of `game`; the others are told the new count.
    pub(super) fn leave(&self, game: &str, id: u64) {
        let mut rooms = lock(&self.rooms);
        let Some(room) = rooms.get_mut(game) else {
            return;
        };
        room.members.retain(|m| m.id != id);
        if room.members.is_empty() {
            rooms.remove(game);
        } else {
            Self::tell_peers(room);
        }
    }

    /// Sends each member the number of other connections in its room.
    fn tell_peers(room: &mut Room) {
        let count = room.members.len().saturating_sub(1);
        let text: Arc<str> = json!({"type": "peers", "count": count}).to_string().into();
        Self::send_all(room, None, &text);
    }

    /// Queues `text` for every member but `except`; returns how many took it. A member whose
    /// queue is full stopped reading: it is removed (its sender dropped, so its task closes the
    /// connection once it has sent what was queued).
    fn send_all(room: &mut Room, except: Option<u64>, text: &Arc<str>) -> usize {
        let mut sent = 0;
        room.members.retain(|m| {
            if Some(m.id) == except {
                return true;
            }
            match m.tx.try_send(text.clone()) {
                Ok(()) => {
                    sent += 1;
                    true
                }
                Err(mpsc::error::TrySendError::Full(_)) => false,
                Err(mpsc::error::TrySendError::Closed(_)) => true,
            }
        });
        sent
    }

    /// Takes one frame from `game`'s budget, then sends `text` to every connection of it but
    /// `from`. Returns how many it went to, or `Err(seconds)` when the game's budget is spent.
    pub(super) fn forward(&self, game: &str, from: u64, text: Arc<str>) -> Result<usize, u64> {
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
        Ok(Self::send_all(room, Some(from), &text))
    }

    /// Games with a connection (metrics, tests).
    pub fn games(&self) -> usize {
        lock(&self.rooms).len()
    }
}
