//! [`Mempool`]: the transactions accepted by `POST /v1/tx` and not yet in a block, in arrival
//! order, with the admission rules (duplicate, nonce, capacity, and at most
//! [`MAX_PENDING_DEPLOYS`] deploys, whose bodies may be 1.5 MiB each).
//!
//! The nonce rule: a sender's transaction must carry its committed nonce plus the number of its
//! transactions already pending, so each sender's pending transactions have consecutive nonces
//! in arrival order and a block that takes them in arrival order includes them all. The caller
//! (`chain.rs`) holds the mempool lock while it reads the committed nonce and while the
//! sequencer moves a block's transactions from here into the state, so the two never disagree.
//!
//! In flight: the transactions of a block the sequencer made and is still writing (pipelined,
//! `sequencer.rs`) are marked ([`Mempool::mark_in_flight`]): they stay pending (admission's nonce
//! rule and `GET /v1/tx` count them until the block is durable and they are
//! [removed](Mempool::remove)), but [`Mempool::batch`] no longer hands them to the next block.
//! The sequencer takes transactions into the block it is building as they arrive
//! ([`Mempool::take_ready`], which marks them in flight at once) and hands back those the block
//! could not hold ([`Mempool::release`]). The transactions not in flight are kept in their own
//! ordered set, so taking the next ones costs the same however many are in flight.
//!
//! Pure data structure: no clock, no I/O. `HashMap`s here are lookups only; nothing iterates
//! them into a block (blocks are taken from the arrival-ordered `BTreeMap`).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use gamechain_runtime::chain::{Action, SignedTx, TxBody};

/// Most `deploy` transactions pending at once (each up to `MAX_DEPLOY_BODY_BYTES`, 1.5 MiB), so
/// the mempool holds at most ~24 MiB of module code whatever `max_pending` is.
pub const MAX_PENDING_DEPLOYS: usize = 16;

/// A pending transaction: as sent, its parsed body (checks passed) and its txid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingTx {
    /// The transaction as sent.
    pub tx: SignedTx,
    /// Its body, as `SignedTx::check` returned it.
    pub body: TxBody,
    /// Its txid (lowercase hex).
    pub txid: String,
}

/// Why the mempool refused a transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// This txid is pending already, or (as the caller's lookup said) included in a block.
    Duplicate,
    /// The nonce is not the sender's next one.
    BadNonce {
        /// The nonce the sender must sign next.
        expected: u64,
        /// The transaction's nonce.
        found: u64,
    },
    /// `max_pending` transactions are waiting already.
    Full {
        /// The limit.
        max: usize,
    },
    /// The pending transactions hold `max_bytes` already (with this one they would cross it).
    BytesFull {
        /// The limit (`max_pending_bytes`).
        max_bytes: u64,
    },
    /// [`MAX_PENDING_DEPLOYS`] deploy transactions are waiting already.
    DeploysFull {
        /// The limit.
        max: usize,
    },
}

impl Refusal {
    /// The API code: `duplicate`, `bad_nonce` or `mempool_full`.
    pub fn code(&self) -> &'static str {
        match self {
            Refusal::Duplicate => "duplicate",
            Refusal::BadNonce { .. } => "bad_nonce",
            Refusal::Full { .. } | Refusal::BytesFull { .. } | Refusal::DeploysFull { .. } => {
                "mempool_full"
            }
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Duplicate => {
                f.write_str("a transaction with this txid is already pending or included")
            }
            Refusal::BadNonce { expected, found } => write!(
                f,
                "nonce is {found}, expected {expected} (the sender's next nonce)"
            ),
            Refusal::Full { max } => {
                write!(f, "{max} transactions are pending already; retry later")
            }
            Refusal::BytesFull { max_bytes } => write!(
                f,
                "the pending transactions hold {max_bytes} bytes already (max_pending_bytes); retry later"
            ),
            Refusal::DeploysFull { max } => {
                write!(
                    f,
                    "{max} deploy transactions are pending already; retry later"
                )
            }
        }
    }
}

/// The bytes a pending transaction counts for: its body and signature as sent.
pub fn tx_bytes(tx: &SignedTx) -> u64 {
    (tx.body().len() + tx.signature().len()) as u64
}

/// Pending transactions in arrival order.
#[derive(Debug)]
pub struct Mempool {
    max: usize,
    max_bytes: u64,
    /// Bytes of the pending transactions ([`tx_bytes`]).
    bytes: u64,
    next_seq: u64,
    queue: BTreeMap<u64, PendingTx>,
    by_txid: HashMap<String, u64>,
    /// Pending transactions per sender: nonce → arrival sequence number.
    by_sender: HashMap<String, BTreeMap<u64, u64>>,
    /// Pending deploy transactions.
    deploys: usize,
    /// Arrival sequence numbers of the pending transactions not in flight (what the next block
    /// may take), ascending.
    ready: BTreeSet<u64>,
}

impl Mempool {
    /// An empty mempool that holds at most `max` transactions.
    pub fn new(max: usize) -> Self {
        Self::with_bytes(max, u64::MAX)
    }

    /// An empty mempool that holds at most `max` transactions of at most `max_bytes` bytes
    /// together ([`tx_bytes`]).
    pub fn with_bytes(max: usize, max_bytes: u64) -> Self {
        Mempool {
            max,
            max_bytes,
            bytes: 0,
            next_seq: 0,
            queue: BTreeMap::new(),
            by_txid: HashMap::new(),
            by_sender: HashMap::new(),
            deploys: 0,
            ready: BTreeSet::new(),
        }
    }

    /// Number of pending transactions.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Bytes of the pending transactions ([`tx_bytes`]).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Whether nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Number of pending transactions not in flight: what the next [`Mempool::batch`] can take.
    pub fn ready_len(&self) -> usize {
        self.ready.len()
    }

    /// The pending transaction `txid`.
    pub fn get(&self, txid: &str) -> Option<&PendingTx> {
        self.by_txid.get(txid).and_then(|seq| self.queue.get(seq))
    }

    /// How many transactions of `sender` are pending.
    pub fn pending_of(&self, sender: &str) -> u64 {
        self.by_sender.get(sender).map_or(0, |m| m.len() as u64)
    }

    /// Admits `pending` if its txid is not pending, its nonce is `committed_nonce` (the sender's
    /// nonce in the committed state) plus the sender's pending count, and there is room.
    /// `is_included(txid)` is asked only for a nonce below the expected one, to tell a replay of
    /// an included transaction ([`Refusal::Duplicate`]) from a stale nonce
    /// ([`Refusal::BadNonce`]).
    pub fn admit(
        &mut self,
        pending: PendingTx,
        committed_nonce: u64,
        is_included: impl FnOnce(&str) -> bool,
    ) -> Result<(), Refusal> {
        if self.by_txid.contains_key(&pending.txid) {
            return Err(Refusal::Duplicate);
        }
        let expected = committed_nonce.saturating_add(self.pending_of(pending.body.account()));
        let found = pending.body.nonce;
        if found != expected {
            if found < expected && is_included(&pending.txid) {
                return Err(Refusal::Duplicate);
            }
            return Err(Refusal::BadNonce { expected, found });
        }
        if self.queue.len() >= self.max {
            return Err(Refusal::Full { max: self.max });
        }
        let size = tx_bytes(&pending.tx);
        if self.bytes.saturating_add(size) > self.max_bytes {
            return Err(Refusal::BytesFull {
                max_bytes: self.max_bytes,
            });
        }
        let is_deploy = matches!(pending.body.action, Action::Deploy { .. });
        if is_deploy {
            if self.deploys >= MAX_PENDING_DEPLOYS {
                return Err(Refusal::DeploysFull {
                    max: MAX_PENDING_DEPLOYS,
                });
            }
            self.deploys += 1;
        }
        self.bytes += size;
        let seq = self.next_seq;
        self.next_seq += 1;
        self.by_txid.insert(pending.txid.clone(), seq);
        self.by_sender
            .entry(pending.body.account().to_string())
            .or_default()
            .insert(found, seq);
        self.queue.insert(seq, pending);
        self.ready.insert(seq);
        Ok(())
    }

    /// Copies of the first `max` pending transactions not in flight, in arrival order (they
    /// stay pending until [`Mempool::remove`]).
    pub fn batch(&self, max: usize) -> Vec<PendingTx> {
        self.ready
            .iter()
            .take(max)
            .filter_map(|seq| self.queue.get(seq).cloned())
            .collect()
    }

    /// [`Mempool::batch`] of `max`, marked in flight at once: the sequencer takes these into the
    /// block it is building. What the block cannot hold goes back with [`Mempool::release`].
    pub fn take_ready(&mut self, max: usize) -> Vec<PendingTx> {
        let seqs: Vec<u64> = self.ready.iter().take(max).copied().collect();
        seqs.iter()
            .filter_map(|seq| {
                self.ready.remove(seq);
                self.queue.get(seq).cloned()
            })
            .collect()
    }

    /// Marks the pending transactions `txids` in flight: in a block being committed, so no
    /// further [`Mempool::batch`] returns them; they stay pending until [`Mempool::remove`].
    /// Unknown txids are ignored.
    pub fn mark_in_flight<'a>(&mut self, txids: impl IntoIterator<Item = &'a str>) {
        for txid in txids {
            if let Some(seq) = self.by_txid.get(txid) {
                self.ready.remove(seq);
            }
        }
    }

    /// Undoes [`Mempool::mark_in_flight`] / [`Mempool::take_ready`] for `txids` (a block that
    /// could not hold them, or was never made): the next batch takes them again, in their
    /// arrival order. Unknown txids are ignored.
    pub fn release<'a>(&mut self, txids: impl IntoIterator<Item = &'a str>) {
        for txid in txids {
            if let Some(seq) = self.by_txid.get(txid) {
                self.ready.insert(*seq);
            }
        }
    }

    /// Removes the transactions `txids` (unknown ones are ignored).
    pub fn remove<'a>(&mut self, txids: impl IntoIterator<Item = &'a str>) {
        for txid in txids {
            let Some(seq) = self.by_txid.remove(txid) else {
                continue;
            };
            self.ready.remove(&seq);
            let Some(p) = self.queue.remove(&seq) else {
                continue;
            };
            if matches!(p.body.action, Action::Deploy { .. }) {
                self.deploys -= 1;
            }
            self.bytes -= tx_bytes(&p.tx);
            if let Some(nonces) = self.by_sender.get_mut(p.body.account()) {
                nonces.remove(&p.body.nonce);
                if nonces.is_empty() {
                    self.by_sender.remove(p.body.account());
                }
            }
        }
    }

    /// Removes `sender`'s pending transactions with a nonce below `next` (the chain used those
    /// nonces, in blocks another validator made). Returns how many went.
    pub fn drop_below(&mut self, sender: &str, next: u64) -> usize {
        self.remove_nonces(sender, ..next).len()
    }

    /// Removes `txid` and every later-nonce transaction of the same sender (which can no
    /// longer be included without it). Returns the txids removed, `txid` first; empty if it
    /// was not pending.
    pub fn evict_from(&mut self, txid: &str) -> Vec<String> {
        let Some(p) = self.get(txid) else {
            return Vec::new();
        };
        let (sender, nonce) = (p.body.account().to_string(), p.body.nonce);
        self.remove_nonces(&sender, nonce..)
    }

    /// Removes `sender`'s pending transactions whose nonces are in `nonces`; returns their
    /// txids in nonce order.
    fn remove_nonces(
        &mut self,
        sender: &str,
        nonces: impl std::ops::RangeBounds<u64>,
    ) -> Vec<String> {
        let txids: Vec<String> = self
            .by_sender
            .get(sender)
            .map(|m| {
                m.range(nonces)
                    .filter_map(|(_, s)| self.queue.get(s))
                    .map(|p| p.txid.clone())
                    .collect()
            })
            .unwrap_or_default();
        self.remove(txids.iter().map(String::as_str));
        txids
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gamechain_runtime::chain::{Action, Network, SecretKey};

    fn key(n: u8) -> SecretKey {
        SecretKey::from_bytes(Network::Testnet, [n; 32]).unwrap()
    }

    fn tx(sk: &SecretKey, nonce: u64) -> PendingTx {
        let body = TxBody {
            chain_id: "c".into(),
            from: sk.address(),
            nonce,
            action: Action::Faucet {
                token: "GOLD".into(),
            },
        };
        let tx = body.sign(sk);
        PendingTx {
            txid: tx.txid(),
            tx,
            body,
        }
    }

    /// A `session_game` signed by `session` for `account` with `account`'s `nonce`.
    fn session_tx(session: &SecretKey, account: &SecretKey, nonce: u64) -> PendingTx {
        let body = TxBody {
            chain_id: "c".into(),
            from: session.address(),
            nonce,
            action: Action::SessionGame {
                account: account.address(),
                session: 0,
                game: "tictactoe".into(),
                op: serde_json::value::to_raw_value(&serde_json::json!({})).unwrap(),
            },
        };
        let tx = body.sign(session);
        PendingTx {
            txid: tx.txid(),
            tx,
            body,
        }
    }

    #[test]
    fn a_session_transaction_takes_its_account_s_nonce_not_its_signer_s() {
        let (main, session) = (key(1), key(2));
        let mut m = Mempool::new(10);
        m.admit(tx(&main, 0), 0, |_| false).unwrap();
        m.admit(session_tx(&session, &main, 1), 0, |_| false)
            .unwrap();
        // The session key's own nonce sequence is untouched: its own transaction 0 is fine, and
        // the main key's next one is 2.
        m.admit(tx(&session, 0), 0, |_| false).unwrap();
        assert_eq!(
            m.admit(tx(&main, 1), 0, |_| false),
            Err(Refusal::BadNonce {
                expected: 2,
                found: 1
            })
        );
        assert_eq!(
            (
                m.pending_of(&main.address()),
                m.pending_of(&session.address())
            ),
            (2, 1)
        );
        // Evicting the session transaction evicts the account's later ones, not the signer's.
        m.admit(tx(&main, 2), 0, |_| false).unwrap();
        let gone = m.evict_from(&session_tx(&session, &main, 1).txid);
        assert_eq!(gone.len(), 2);
        assert_eq!(
            (
                m.pending_of(&main.address()),
                m.pending_of(&session.address())
            ),
            (1, 1)
        );
    }

    #[test]
    fn nonces_follow_the_committed_nonce_and_the_pending_count() {
        let (a, b) = (key(1), key(2));
        let mut m = Mempool::new(10);
        m.admit(tx(&a, 3), 3, |_| false).unwrap();
        assert_eq!(m.admit(tx(&a, 3), 3, |_| false), Err(Refusal::Duplicate));
        assert_eq!(
            m.admit(tx(&a, 5), 3, |_| false),
            Err(Refusal::BadNonce {
                expected: 4,
                found: 5
            })
        );
        assert_eq!(
            m.admit(tx(&a, 2), 3, |_| false),
            Err(Refusal::BadNonce {
                expected: 4,
                found: 2
            })
        );
        assert_eq!(
            m.admit(tx(&a, 2), 3, |_| true),
            Err(Refusal::Duplicate),
            "a replay of an included tx"
        );
        m.admit(tx(&b, 0), 0, |_| false).unwrap();
        m.admit(tx(&a, 4), 3, |_| false).unwrap();
        assert_eq!(
            (
                m.len(),
                m.pending_of(&a.address()),
                m.pending_of(&b.address())
            ),
            (3, 2, 1)
        );
        let order: Vec<u64> = m.batch(10).iter().map(|p| p.body.nonce).collect();
        assert_eq!(order, [3, 0, 4], "arrival order");
        assert_eq!(m.batch(2).len(), 2);
        // The block with a:3 and b:0 commits: a's committed nonce is now 4 with one pending.
        m.remove([tx(&a, 3).txid.as_str(), tx(&b, 0).txid.as_str()]);
        assert_eq!(
            (
                m.len(),
                m.pending_of(&a.address()),
                m.pending_of(&b.address())
            ),
            (1, 1, 0)
        );
        m.admit(tx(&a, 5), 4, |_| false).unwrap();
    }

    #[test]
    fn in_flight_transactions_stay_pending_but_leave_the_batch() {
        let (a, b) = (key(1), key(2));
        let mut m = Mempool::new(10);
        for n in 0..3 {
            m.admit(tx(&a, n), 0, |_| false).unwrap();
        }
        m.admit(tx(&b, 0), 0, |_| false).unwrap();
        m.mark_in_flight([tx(&a, 0).txid.as_str(), tx(&a, 1).txid.as_str(), "unknown"]);
        assert_eq!((m.len(), m.ready_len()), (4, 2));
        let next: Vec<String> = m.batch(10).into_iter().map(|p| p.txid).collect();
        assert_eq!(
            next,
            [tx(&a, 2).txid, tx(&b, 0).txid],
            "arrival order, in flight left out"
        );
        assert_eq!(m.batch(1)[0].txid, tx(&a, 2).txid);
        // Still pending: `GET /v1/tx`, duplicates and the nonce rule count them.
        assert!(m.get(&tx(&a, 0).txid).is_some());
        assert_eq!(m.admit(tx(&a, 1), 0, |_| false), Err(Refusal::Duplicate));
        assert_eq!(m.admit(tx(&a, 2), 0, |_| false), Err(Refusal::Duplicate));
        m.admit(tx(&a, 3), 0, |_| false).unwrap();
        // The block is durable: its transactions go, the committed nonce is now 2.
        m.remove([tx(&a, 0).txid.as_str(), tx(&a, 1).txid.as_str()]);
        assert_eq!((m.len(), m.ready_len()), (3, 3));
        assert_eq!(m.pending_of(&a.address()), 2);
        m.admit(tx(&a, 4), 2, |_| false).unwrap();
        // Eviction of an in-flight transaction clears its mark too.
        m.mark_in_flight([tx(&b, 0).txid.as_str()]);
        assert_eq!(m.ready_len(), 3);
        assert_eq!(m.evict_from(&tx(&b, 0).txid), [tx(&b, 0).txid]);
        assert_eq!((m.len(), m.ready_len()), (3, 3));
    }

    #[test]
    fn taken_transactions_leave_the_batch_until_released() {
        let (a, b) = (key(1), key(2));
        let mut m = Mempool::new(10);
        for n in 0..3 {
            m.admit(tx(&a, n), 0, |_| false).unwrap();
        }
        m.admit(tx(&b, 0), 0, |_| false).unwrap();
        let ids = |v: Vec<PendingTx>| v.into_iter().map(|p| p.txid).collect::<Vec<_>>();
        assert_eq!(ids(m.take_ready(2)), [tx(&a, 0).txid, tx(&a, 1).txid]);
        assert_eq!((m.len(), m.ready_len()), (4, 2));
        assert_eq!(ids(m.take_ready(10)), [tx(&a, 2).txid, tx(&b, 0).txid]);
        assert!(m.take_ready(10).is_empty());
        // The block held only the first three: the last goes back, and comes next.
        m.release([tx(&b, 0).txid.as_str(), "unknown"]);
        assert_eq!(ids(m.batch(10)), [tx(&b, 0).txid]);
        // A block never made: all of it goes back, in arrival order.
        m.release([tx(&a, 1).txid.as_str(), tx(&a, 0).txid.as_str()]);
        assert_eq!(
            ids(m.batch(10)),
            [tx(&a, 0).txid, tx(&a, 1).txid, tx(&b, 0).txid]
        );
        // Released after it was removed: nothing comes back.
        m.remove([tx(&a, 2).txid.as_str()]);
        m.release([tx(&a, 2).txid.as_str()]);
        assert_eq!(m.ready_len(), 3);
    }

    #[test]
    fn bytes_have_their_own_cap() {
        let (a, b) = (key(1), key(2));
        let one = tx_bytes(&tx(&a, 0).tx);
        let mut m = Mempool::with_bytes(100, 2 * one + one / 2);
        m.admit(tx(&a, 0), 0, |_| false).unwrap();
        m.admit(tx(&a, 1), 0, |_| false).unwrap();
        assert_eq!(m.bytes(), 2 * one);
        let full = m.admit(tx(&b, 0), 0, |_| false).unwrap_err();
        assert!(matches!(full, Refusal::BytesFull { .. }), "{full:?}");
        assert_eq!(full.code(), "mempool_full");
        let first = m.batch(1)[0].txid.clone();
        m.remove([first.as_str()]);
        assert_eq!(m.bytes(), one);
        m.admit(tx(&b, 0), 0, |_| false).unwrap();
    }

    #[test]
    fn deploys_have_their_own_cap() {
        let mut m = Mempool::new(100);
        let deploy = |sk: &SecretKey| {
            let body = TxBody {
                chain_id: "c".into(),
                from: sk.address(),
                nonce: 0,
                action: Action::deploy("m", vec![0, 97, 115, 109]),
            };
            let tx = body.sign(sk);
            PendingTx {
                txid: tx.txid(),
                tx,
                body,
            }
        };
        let keys: Vec<SecretKey> = (1..=MAX_PENDING_DEPLOYS as u8 + 1).map(key).collect();
        for sk in &keys[..MAX_PENDING_DEPLOYS] {
            m.admit(deploy(sk), 0, |_| false).unwrap();
        }
        let last = &keys[MAX_PENDING_DEPLOYS];
        assert_eq!(
            m.admit(deploy(last), 0, |_| false),
            Err(Refusal::DeploysFull {
                max: MAX_PENDING_DEPLOYS
            })
        );
        m.admit(tx(last, 0), 0, |_| false)
            .expect("other transactions still fit");
        m.remove([deploy(&keys[0]).txid.as_str()]);
        m.admit(tx(&keys[0], 0), 0, |_| false).unwrap();
        let other = key(200);
        m.admit(deploy(&other), 0, |_| false)
            .expect("a deploy left, so one fits again");
    }

    #[test]
    fn full_and_eviction() {
        let a = key(1);
        let mut m = Mempool::new(3);
        for n in 0..3 {
            m.admit(tx(&a, n), 0, |_| false).unwrap();
        }
        assert_eq!(
            m.admit(tx(&a, 3), 0, |_| false),
            Err(Refusal::Full { max: 3 })
        );
        let gone = m.evict_from(&tx(&a, 1).txid);
        assert_eq!(gone, [tx(&a, 1).txid, tx(&a, 2).txid]);
        assert_eq!((m.len(), m.pending_of(&a.address())), (1, 1));
        assert!(m.get(&tx(&a, 0).txid).is_some());
        assert!(m.evict_from("nope").is_empty());
    }
}
