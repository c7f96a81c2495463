//! [`Slots`]: the node-wide transcript build slots. A build takes one ([`Slots::acquire`]) or
//! waits for one; a freed slot goes to the waiting build of the **highest rank** (the
//! milliseconds of budget its client IP had left, `budget.rs`), the earliest among equals, so an
//! address that builds little is served before addresses that build much, however many builds
//! those queue. A build that waited its time out, or whose request went away, leaves the
//! queue (and gives back a slot it was handed meanwhile).
//!
//! The clock is used only for the wait; nothing of it reaches the chain.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::oneshot;

struct Waiter {
    rank: f64,
    seq: u64,
    handed: oneshot::Sender<()>,
}

struct State {
    free: usize,
    seq: u64,
    waiting: Vec<Waiter>,
}

/// The build slots (see the module docs).
pub struct Slots {
    state: Mutex<State>,
}

/// One slot, given back when dropped.
pub struct Slot(Arc<Slots>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.release(&mut self.0.lock());
    }
}

/// A queued build: leaves the queue when dropped, giving back a slot it was handed unless
/// [`Queued::taken`] says it was used.
struct Queued {
    slots: Arc<Slots>,
    seq: u64,
    taken: bool,
}

impl Queued {
    /// Whether the slot was handed (the waiter gone from the queue); marks it taken.
    fn take(&mut self, state: &State) -> bool {
        self.taken = !state.waiting.iter().any(|w| w.seq == self.seq);
        self.taken
    }
}

impl Drop for Queued {
    fn drop(&mut self) {
        if self.taken {
            return;
        }
        let mut state = self.slots.lock();
        match state.waiting.iter().position(|w| w.seq == self.seq) {
            Some(at) => {
                state.waiting.swap_remove(at);
            }
            // Handed a slot while going away: give it on.
            None => self.slots.release(&mut state),
        }
    }
}

impl Slots {
    /// `n` free slots.
    pub fn new(n: usize) -> Arc<Slots> {
        Arc::new(Slots {
            state: Mutex::new(State {
                free: n,
                seq: 0,
                waiting: Vec::new(),
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A freed slot: to the waiter of the highest rank (earliest among equals), else free.
    fn release(&self, state: &mut State) {
        while !state.waiting.is_empty() {
            let best = (0..state.waiting.len())
                .max_by(|&a, &b| {
                    let (a, b) = (&state.waiting[a], &state.waiting[b]);
                    a.rank.total_cmp(&b.rank).then(b.seq.cmp(&a.seq))
                })
                .expect("not empty");
            let waiter = state.waiting.swap_remove(best);
            if waiter.handed.send(()).is_ok() {
                return;
            }
        }
        state.free += 1;
    }

    /// A slot for a build of rank `rank` (higher first), waiting at most `wait`: `None` when
    /// none came in time. A slot is taken at once only when nobody waits.
    pub async fn acquire(self: &Arc<Self>, rank: f64, wait: Duration) -> Option<Slot> {
        let (handed, rx) = oneshot::channel();
        let mut queued = {
            let mut state = self.lock();
            if state.free > 0 && state.waiting.is_empty() {
                state.free -= 1;
                return Some(Slot(self.clone()));
            }
            state.seq += 1;
            let seq = state.seq;
            state.waiting.push(Waiter { rank, seq, handed });
            Queued {
                slots: self.clone(),
                seq,
                taken: false,
            }
        };
        let _ = tokio::time::timeout(wait, rx).await;
        // Handed a slot (possibly just as the wait ended), or still waiting: leave.
        let handed = queued.take(&self.lock());
        handed.then(|| Slot(self.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LONG: Duration = Duration::from_secs(10);

    #[tokio::test]
    async fn a_freed_slot_goes_to_the_highest_rank_then_the_earliest() {
        let slots = Slots::new(1);
        let first = slots.acquire(0.0, LONG).await.unwrap();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut tasks = Vec::new();
        for (name, rank) in [
            ("low", 1.0),
            ("high", 500.0),
            ("low2", 1.0),
            ("high2", 500.0),
        ] {
            let (slots, tx) = (slots.clone(), tx.clone());
            tasks.push(tokio::spawn(async move {
                let slot = slots.acquire(rank, LONG).await.unwrap();
                tx.send(name).unwrap();
                tokio::time::sleep(Duration::from_millis(5)).await;
                drop(slot);
            }));
            // Queued in this order.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        drop(first);
        for t in tasks {
            t.await.unwrap();
        }
        let mut order = Vec::new();
        while let Ok(n) = rx.try_recv() {
            order.push(n);
        }
        assert_eq!(order, ["high", "high2", "low", "low2"]);
        // All given back.
        assert_eq!(slots.lock().free, 1);
    }

    #[tokio::test]
    async fn a_wait_that_ends_or_is_dropped_leaves_the_queue() {
        let slots = Slots::new(1);
        let held = slots.acquire(0.0, LONG).await.unwrap();
        assert!(slots
            .acquire(9.0, Duration::from_millis(20))
            .await
            .is_none());
        assert!(slots.lock().waiting.is_empty());
        // A wait dropped before its turn.
        let waiting = {
            let slots = slots.clone();
            tokio::spawn(async move { slots.acquire(9.0, LONG).await.map(|_| ()) })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(slots.lock().waiting.len(), 1);
        waiting.abort();
        let _ = waiting.await;
        assert!(slots.lock().waiting.is_empty());
        drop(held);
        assert_eq!(slots.lock().free, 1);
        // Free and nobody waiting: at once.
        let a = slots.acquire(0.0, Duration::ZERO).await;
        assert!(a.is_some());
        assert!(slots.acquire(0.0, Duration::ZERO).await.is_none());
    }
}
