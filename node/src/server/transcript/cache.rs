//! The transcript answers a node has built ([`Cache`]), and the builds in flight that a request
//! for the same answer waits for instead of building again ([`Flight`]).
//!
//! - **Key**: module, game id and the `from` query ([`Key`]).
//! - **Validity** ([`Validity`]): an unfinished game's transcript, `404 not_found` and
//!   `410 pruned` hold while the head is the block they were built at ([`HeadId`]); a finished
//!   game's transcript (on a chain without validators, where nothing of a step changes after
//!   its block) while the module's `upgraded_height` is the one read before building (an
//!   upgrade turns it into `409 conflict`); `413 too_large` and `409 conflict` forever (the
//!   blocks from a game's start cannot change, and a later upgrade only comes later still).
//! - **Bounds**: at most `max_bytes` of answers and `max_entries` answers; answers that can no
//!   longer be valid (built at an older head) go first, then the least recently used. An
//!   answer over `max_bytes` is not kept.
//! - **In flight**: one build per key and head; requests for it at that head wait for its
//!   answer ([`Cache::join`]). A build abandoned before it answers (its request gone while it
//!   waited for a build slot) wakes its waiters with nothing.
//!
//! The clock is not used here; nothing of this reaches the chain.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::http::header;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use tokio::sync::watch;

use crate::server::api_error::ApiError;
use gamechain_ledger::chain::Chain;

/// What a transcript request names: module, game id, `from` (height; `None` when absent).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Key {
    /// The module id.
    pub module: String,
    /// The game id.
    pub game: String,
    /// The `from` query.
    pub from: Option<u64>,
}

/// A head block: its height and header hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeadId {
    /// Its height.
    pub height: u64,
    /// SHA-256 of its header.
    pub hash: [u8; 32],
}

impl HeadId {
    /// The head of `chain` now.
    pub fn of(chain: &Chain) -> HeadId {
        let head = chain.head();
        HeadId {
            height: head.header.header.height,
            hash: head.header.header.hash(),
        }
    }
}

/// One answer as sent: the transcript's JSON (status 200), or an error.
#[derive(Debug, Clone)]
pub enum Answer {
    /// `200`, the transcript as JSON (keys sorted).
    Json(Bytes),
    /// The error answered.
    Error(ApiError),
}

impl Answer {
    /// Bytes of its body (an error's message for an error).
    pub fn len(&self) -> usize {
        match self {
            Answer::Json(b) => b.len(),
            Answer::Error(e) => e.message.len() + 64,
        }
    }

    /// Whether the body is empty (never, for answers the handler makes).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The HTTP response (the body's bytes are shared, not copied).
    pub fn response(&self) -> Response {
        match self {
            Answer::Json(b) => {
                ([(header::CONTENT_TYPE, "application/json")], b.clone()).into_response()
            }
            Answer::Error(e) => e.clone().into_response(),
        }
    }
}

/// How long an answer stays right (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Validity {
    /// While the head is this block: an unfinished game, `404`, `410`.
    Head(HeadId),
    /// A finished game's transcript: while the module's `upgraded_height` is `upgraded`
    /// (checked again once per new head, `head` the last head it was checked at).
    Code {
        /// The head it was last checked at.
        head: HeadId,
        /// The module's `upgraded_height` read before building.
        upgraded: Option<u64>,
    },
    /// `413 too_large`, `409 conflict`.
    Forever,
}

/// What waiters of a build in flight watch: `None` until its answer.
type Done = watch::Receiver<Option<Arc<Answer>>>;

struct Entry {
    answer: Arc<Answer>,
    valid: Validity,
    used: u64,
}

/// The answers kept, and the builds in flight (see the module docs). Share it behind a mutex
/// ([`Flight`] does).
pub struct Cache {
    max_bytes: usize,
    max_entries: usize,
    entries: HashMap<Key, Entry>,
    bytes: usize,
    tick: u64,
    flying: HashMap<Key, (HeadId, Done)>,
}

impl Cache {
    /// An empty cache keeping at most `max_bytes` bytes of answers ([`Answer::len`]) and
    /// `max_entries` answers.
    pub fn new(max_bytes: usize, max_entries: usize) -> Cache {
        Cache {
            max_bytes,
            max_entries,
            entries: HashMap::new(),
            bytes: 0,
            tick: 0,
            flying: HashMap::new(),
        }
    }

    /// Answers kept, and their bytes.
    pub fn size(&self) -> (usize, usize) {
        (self.entries.len(), self.bytes)
    }

    /// The answer kept for `key` that is still right at `head`, marked used. `upgraded`: the
    /// module's `upgraded_height` now (`None` when the module is gone), asked only for a
    /// finished game's answer last checked at another head. A stale answer is dropped.
    pub fn get(
        &mut self,
        key: &Key,
        head: HeadId,
        upgraded: impl FnOnce() -> Option<Option<u64>>,
    ) -> Option<Arc<Answer>> {
        self.tick += 1;
        let tick = self.tick;
        let entry = self.entries.get_mut(key)?;
        let good = match entry.valid {
            Validity::Forever => true,
            Validity::Head(h) => h == head,
            Validity::Code { head: h, .. } if h == head => true,
            Validity::Code { upgraded: u, .. } => {
                let now = upgraded() == Some(u);
                if now {
                    entry.valid = Validity::Code { head, upgraded: u };
                }
                now
            }
        };
        if good {
            entry.used = tick;
            return Some(entry.answer.clone());
        }
        self.remove(key);
        None
    }

    /// Keeps `answer` for `key` while `valid`, `head` being the head it was built at: first
    /// drops the answers of older heads (they cannot be right any more: the head only moves
    /// on), then the least recently used until it fits.
    pub fn insert(&mut self, key: Key, answer: Arc<Answer>, valid: Validity, head: HeadId) {
        let len = answer.len();
        self.remove(&key);
        let dead: Vec<Key> = self
            .entries
            .iter()
            .filter(|(_, e)| matches!(e.valid, Validity::Head(h) if h.height < head.height))
            .map(|(k, _)| k.clone())
            .collect();
        for k in dead {
            self.remove(&k);
        }
        if len > self.max_bytes || self.max_entries == 0 {
            return;
        }
        while self.entries.len() >= self.max_entries || self.bytes + len > self.max_bytes {
            let Some(oldest) = self
                .entries
                .iter()
                .min_by_key(|(_, e)| e.used)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            self.remove(&oldest);
        }
        self.tick += 1;
        self.bytes += len;
        self.entries.insert(
            key,
            Entry {
                answer,
                valid,
                used: self.tick,
            },
        );
    }

    fn remove(&mut self, key: &Key) {
        if let Some(e) = self.entries.remove(key) {
            self.bytes -= e.answer.len();
        }
    }

    /// A build of `key` in flight at `head`: a receiver that turns `Some(answer)` when it is
    /// done (closed with `None` when it is abandoned).
    pub fn join(&self, key: &Key, head: HeadId) -> Option<Done> {
        self.flying
            .get(key)
            .filter(|(h, _)| *h == head)
            .map(|(_, rx)| rx.clone())
    }
}

/// A build of one key at one head that other requests can wait for ([`Cache::join`]): made by
/// [`Flight::start`], ended by [`Flight::done`] (or by dropping it: abandoned).
pub struct Flight {
    cache: Arc<Mutex<Cache>>,
    key: Key,
    head: HeadId,
    tx: watch::Sender<Option<Arc<Answer>>>,
}

impl Flight {
    /// Registers a build of `key` at `head` in `cache` (replacing one of an older head).
    pub fn start(cache: &Arc<Mutex<Cache>>, key: Key, head: HeadId) -> Flight {
        let (tx, rx) = watch::channel(None);
        lock(cache).flying.insert(key.clone(), (head, rx));
        Flight {
            cache: cache.clone(),
            key,
            head,
            tx,
        }
    }

    /// Ends the build with `answer`: kept in the cache when `valid` is `Some`, sent to every
    /// request waiting for it.
    pub fn done(self, answer: Arc<Answer>, valid: Option<Validity>) {
        if let Some(valid) = valid {
            lock(&self.cache).insert(self.key.clone(), answer.clone(), valid, self.head);
        }
        self.tx.send_replace(Some(answer));
        // `Drop` unregisters.
    }
}

impl Drop for Flight {
    fn drop(&mut self) {
        let mut cache = lock(&self.cache);
        if cache
            .flying
            .get(&self.key)
            .is_some_and(|(_, rx)| rx.same_channel(&self.tx.subscribe()))
        {
            cache.flying.remove(&self.key);
        }
    }
}

/// Locks `cache` (a panic while it was held does not stop the node from using it).
pub fn lock(cache: &Mutex<Cache>) -> std::sync::MutexGuard<'_, Cache> {
    cache.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(game: &str) -> Key {
        Key {
            module: "moveboard".into(),
            game: game.into(),
            from: Some(1),
        }
    }

    fn head(height: u64) -> HeadId {
        HeadId {
            height,
            hash: [height as u8; 32],
        }
    }

    fn json(n: usize) -> Arc<Answer> {
        Arc::new(Answer::Json(Bytes::from(vec![b'x'; n])))
    }

    fn never() -> Option<Option<u64>> {
        panic!("not asked for this answer")
    }

    #[test]
    fn an_answer_lasts_as_long_as_its_validity() {
        let mut c = Cache::new(1 << 20, 16);
        c.insert(key("a"), json(10), Validity::Head(head(5)), head(5));
        assert!(c.get(&key("a"), head(5), never).is_some());
        assert!(c.get(&key("a"), head(6), never).is_none());
        assert_eq!(c.size(), (0, 0), "a stale answer is dropped");

        c.insert(key("f"), json(10), Validity::Forever, head(5));
        assert!(c.get(&key("f"), head(900), never).is_some());

        let finished = Validity::Code {
            head: head(5),
            upgraded: None,
        };
        c.insert(key("g"), json(10), finished, head(5));
        assert!(c.get(&key("g"), head(5), never).is_some());
        // Another head: the module is asked about once, then the answer holds at that head.
        assert!(c.get(&key("g"), head(6), || Some(None)).is_some());
        assert!(c.get(&key("g"), head(6), never).is_some());
        // Upgraded since: gone.
        assert!(c.get(&key("g"), head(7), || Some(Some(7))).is_none());
        assert!(c.get(&key("g"), head(7), never).is_none());
    }

    #[test]
    fn bytes_and_entries_are_bounded_least_recently_used_out() {
        let mut c = Cache::new(100, 3);
        for g in ["a", "b", "c"] {
            c.insert(key(g), json(30), Validity::Forever, head(1));
        }
        assert_eq!(c.size(), (3, 90));
        c.get(&key("a"), head(1), never).unwrap();
        // A fourth entry: `b` (least recently used) goes.
        c.insert(key("d"), json(30), Validity::Forever, head(1));
        assert!(c.get(&key("b"), head(1), never).is_none());
        assert_eq!(c.size(), (3, 90));
        // 60 bytes more than fit: two go (`c`, then `a`... the least recently used first).
        c.insert(key("e"), json(60), Validity::Forever, head(1));
        assert!(c.size().1 <= 100);
        assert!(c.get(&key("e"), head(1), never).is_some());
        assert!(c.get(&key("d"), head(1), never).is_some());
        // Too large for the whole cache: not kept.
        c.insert(key("huge"), json(101), Validity::Forever, head(1));
        assert!(c.get(&key("huge"), head(1), never).is_none());
    }

    #[test]
    fn answers_of_an_older_head_go_first() {
        let mut c = Cache::new(1 << 20, 16);
        c.insert(key("a"), json(10), Validity::Head(head(1)), head(1));
        c.insert(key("b"), json(10), Validity::Forever, head(1));
        c.insert(key("c"), json(10), Validity::Head(head(2)), head(2));
        assert_eq!(c.size(), (2, 20), "a's head is gone");
    }

    #[tokio::test]
    async fn requests_wait_for_the_build_in_flight() {
        let cache = Arc::new(Mutex::new(Cache::new(1 << 20, 16)));
        assert!(lock(&cache).join(&key("a"), head(1)).is_none());
        let flight = Flight::start(&cache, key("a"), head(1));
        let mut rx = lock(&cache).join(&key("a"), head(1)).unwrap();
        assert!(
            lock(&cache).join(&key("a"), head(2)).is_none(),
            "not at another head"
        );
        let waiter =
            tokio::spawn(
                async move { rx.wait_for(Option::is_some).await.unwrap().clone().unwrap() },
            );
        flight.done(json(7), Some(Validity::Head(head(1))));
        assert_eq!(waiter.await.unwrap().len(), 7);
        assert!(
            lock(&cache).join(&key("a"), head(1)).is_none(),
            "unregistered"
        );
        assert!(
            lock(&cache).get(&key("a"), head(1), never).is_some(),
            "kept"
        );

        // Abandoned: the waiter hears nothing but the close.
        let flight = Flight::start(&cache, key("b"), head(1));
        let mut rx = lock(&cache).join(&key("b"), head(1)).unwrap();
        drop(flight);
        assert!(rx.wait_for(Option::is_some).await.is_err());
        assert!(lock(&cache).join(&key("b"), head(1)).is_none());
    }
}
