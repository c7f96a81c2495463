//! The instance pool of a [`Runtime`](crate::Runtime): pool slots and idle warm instances under
//! one lock ([`Instances`]), and the [`Lease`] one call runs in.

use std::sync::{Condvar, Mutex, MutexGuard};

use crate::run::warm::Warm;

/// Idle warm instances kept per module, and in all.
const IDLE_PER_MODULE: usize = 8;
const IDLE_TOTAL: usize = 64;

/// The pool's slots and the idle warm instances, under one lock.
///
/// Every live `Store` of a pooled module holds one slot, whether its call is running or it
/// waits idle for the next call, so the pool can never be exhausted by this runtime's own
/// instances: a call that finds no free slot takes one from an idle instance (of any module,
/// oldest first, dropping it), and only when every slot is held by a running call does it wait,
/// for a call to end. (Calls nest only through `call_pure`, at most `MAX_PURE_DEPTH` deep, so
/// each top-level call holds at most 3 slots: waiting cannot deadlock while the slots outnumber
/// 3 × the calls that run at once: 64 slots against one block executor and at most 8 views.) Instances of on-demand modules hold no slot; only the idle caps bound them.
pub(crate) struct Instances {
    state: Mutex<Slots>,
    freed: Condvar,
}

pub(crate) struct Slots {
    /// Pool slots not held by any instance.
    pub(crate) free: usize,
    /// Idle warm instances, oldest first.
    idle: Vec<Warm>,
    /// Callers waiting in [`Instances::lease`] (a `Condvar` notification is a system call, so it
    /// is made only when someone waits).
    waiting: usize,
}

impl Instances {
    pub(crate) fn new(slots: usize) -> Self {
        Self {
            state: Mutex::new(Slots {
                free: slots,
                idle: Vec::new(),
                waiting: 0,
            }),
            freed: Condvar::new(),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Slots> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn lease(&self, uid: u64, pooled: bool, reuse: bool) -> Lease<'_> {
        let mut lease = Lease {
            instances: self,
            slot: false,
            warm: None,
        };
        let mut state = self.lock();
        let evicted = loop {
            if reuse {
                if let Some(i) = state.idle.iter().rposition(|w| w.uid == uid) {
                    let warm = state.idle.remove(i);
                    lease.slot = warm.holds_slot;
                    lease.warm = Some(warm);
                    return lease;
                }
            }
            if !pooled {
                return lease;
            }
            if state.free > 0 {
                state.free -= 1;
                lease.slot = true;
                return lease;
            }
            if let Some(i) = state.idle.iter().position(|w| w.holds_slot) {
                // Its slot becomes this call's.
                lease.slot = true;
                break state.idle.remove(i);
            }
            state.waiting += 1;
            state = self.freed.wait(state).unwrap_or_else(|p| p.into_inner());
            state.waiting -= 1;
        };
        drop(state);
        // The evicted instance's slot returns to wasmtime's pool before the caller instantiates.
        drop(evicted);
        lease
    }

    /// Puts `warm` (reset, pristine) on the idle list; drops the oldest idle instance beyond the
    /// caps.
    fn keep(&self, warm: Warm) {
        let mut state = self.lock();
        let uid = warm.uid;
        state.idle.push(warm);
        let mut dropped = Vec::new();
        if state.idle.iter().filter(|w| w.uid == uid).count() > IDLE_PER_MODULE {
            let i = state
                .idle
                .iter()
                .position(|w| w.uid == uid)
                .expect("counted above");
            dropped.push(state.idle.remove(i));
        }
        if state.idle.len() > IDLE_TOTAL {
            dropped.push(state.idle.remove(0));
        }
        let waiting = state.waiting > 0;
        drop(state);
        self.release(dropped);
        if waiting {
            // A waiter may take this instance's slot.
            self.freed.notify_one();
        }
    }

    pub(crate) fn forget(&self, uid: u64) {
        let mut state = self.lock();
        let (gone, kept): (Vec<Warm>, Vec<Warm>) = std::mem::take(&mut state.idle)
            .into_iter()
            .partition(|w| w.uid == uid);
        state.idle = kept;
        drop(state);
        self.release(gone);
    }

    /// Drops `instances` (their stores first), then frees the slots they held.
    fn release(&self, instances: Vec<Warm>) {
        let slots = instances.iter().filter(|w| w.holds_slot).count();
        drop(instances);
        self.free_slots(slots);
    }

    fn free_slots(&self, n: usize) {
        if n > 0 {
            let mut state = self.lock();
            state.free += n;
            let waiting = state.waiting.min(n);
            drop(state);
            for _ in 0..waiting {
                self.freed.notify_one();
            }
        }
    }
}

/// What one call runs in (see [`Runtime::lease`]). Dropping it frees the slot it holds (drop the
/// call's `Store` first); [`Lease::keep`] instead hands the slot to an idle warm instance.
pub(crate) struct Lease<'a> {
    instances: &'a Instances,
    /// Whether this call holds a pool slot.
    slot: bool,
    /// The idle warm instance this call was given.
    warm: Option<Warm>,
}

impl Lease<'_> {
    /// The warm instance to run in, if one was idle.
    pub(crate) fn take_warm(&mut self) -> Option<Warm> {
        self.warm.take()
    }

    /// Whether this call holds a pool slot (its new instance then holds it while idle).
    #[cfg(test)]
    pub(crate) fn holds_slot(&self) -> bool {
        self.slot
    }

    /// Returns `warm` (this call's instance, reset) to the idle list, with this call's slot.
    pub(crate) fn keep(mut self, mut warm: Warm) {
        warm.holds_slot = std::mem::replace(&mut self.slot, false);
        self.instances.keep(warm);
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        drop(self.warm.take());
        if self.slot {
            self.instances.free_slots(1);
        }
    }
}
