//! Transaction gossip between validators, so a transaction sent to any validator reaches the
//! proposers. A transaction admitted through a validator's API is sent, once, to every other
//! validator (they are fully connected) on the gossip channel; a validator admits a gossiped
//! transaction into its mempool with exactly the checks of an API submission (signature, chain,
//! nonce, capacity, fees) and never forwards it. A transaction is never included twice: a
//! block that repeats a sender's nonce does not execute, and a commit drops from every mempool
//! the transactions the chain made stale.
//!
//! A send to a peer that is offline is dropped by the transport, so the transactions a
//! validator gossiped are sent again every [`RESEND_EVERY`] while they are still pending there,
//! at most [`MAX_SENDS`] times ([`RESEND_BATCH`] per round); receivers skip what they hold.
//!
//! Bounds: a message is the borsh `(body, signature)` of one transaction, at most
//! [`MAX_GOSSIP_BYTES`]; anything else is dropped and logged. The network's per-peer rate quota
//! bounds how many a peer can send; the mempool's own bounds hold.
//!
//! The receive loop never waits on admission work: it hands each new transaction to a bounded
//! queue ([`ADMIT_QUEUE`]) and reads on. One admission task checks them in order (signature,
//! nonce, fees, on the blocking pool) and admits them, except deploys, whose admission compiles
//! their code (up to the node's `compile_budget_ms`): those go to a second bounded queue
//! ([`DEPLOY_QUEUE`]) served by their own task, so no other transaction ever waits on a compile.
//! A transaction that finds its queue full is dropped and counted
//! (`gamechain_gossip_dropped_total{queue}`); its sender resends it while it is pending there.

use std::sync::Arc;

use commonware_p2p::{Receiver, Recipients, Sender};
use std::collections::VecDeque;

use commonware_runtime::{Clock, Spawner};
use tokio::sync::mpsc;

use gamechain_runtime::chain::{Action, SignedTx, TxBody, MAX_DEPLOY_BODY_BYTES};

use gamechain_ledger::chain::Chain;

/// Largest gossip message: a deploy body at its bound, its signature and the encoding.
pub const MAX_GOSSIP_BYTES: usize = MAX_DEPLOY_BODY_BYTES + 1024;

/// Transactions admitted through the API, waiting to be sent; at most this many (more are
/// not gossiped, and reach the chain when this validator proposes).
pub const GOSSIP_QUEUE: usize = 16_384;

/// Received transactions waiting for their admission, at most (more are dropped and counted).
pub const ADMIT_QUEUE: usize = 4_096;

/// Received deploys waiting for their compile, at most (more are dropped and counted).
pub const DEPLOY_QUEUE: usize = 8;

/// The encoding of one gossiped transaction.
pub fn encode(tx: &SignedTx) -> Vec<u8> {
    borsh::to_vec(&(tx.body(), tx.signature())).expect("writing to a Vec cannot fail")
}

/// The transaction in a gossip message; `None` for anything else.
pub fn decode(bytes: &[u8]) -> Option<SignedTx> {
    if bytes.len() > MAX_GOSSIP_BYTES {
        return None;
    }
    let (body, signature): (String, String) = borsh::from_slice(bytes).ok()?;
    Some(SignedTx::new(body, signature))
}

/// How often the transactions this validator gossiped and still holds pending are sent again
/// (a peer that was unreachable at the first send, or restarted since, gets them then).
pub const RESEND_EVERY: std::time::Duration = std::time::Duration::from_secs(2);

/// How many times one transaction is sent at most.
pub const MAX_SENDS: u32 = 8;

/// Transactions sent again per round, at most.
pub const RESEND_BATCH: usize = 1024;

/// A transaction this validator gossiped.
struct Sent {
    tx: SignedTx,
    txid: String,
    sends: u32,
}

/// Sends the transactions of `outgoing` to every other validator (again every
/// [`RESEND_EVERY`] while still pending here, at most [`MAX_SENDS`] times: a send to a peer that
/// is offline is dropped) and admits the ones peers send, until both ends close.
pub async fn run<E, S, R>(
    rt: E,
    chain: Arc<Chain>,
    mut outgoing: mpsc::Receiver<SignedTx>,
    (mut sender, mut receiver): (S, R),
) where
    E: Spawner + Clock + commonware_runtime::Supervisor,
    S: Sender,
    R: Receiver,
{
    let (admit, admit_rx) = mpsc::channel::<SignedTx>(ADMIT_QUEUE);
    let (deploys, deploys_rx) = mpsc::channel::<SignedTx>(DEPLOY_QUEUE);
    {
        let chain = chain.clone();
        rt.child("gossip_admit")
            .spawn(move |rt| admit_loop(rt, chain, admit_rx, deploys));
    }
    {
        let chain = chain.clone();
        rt.child("gossip_deploys")
            .spawn(move |rt| deploy_loop(rt, chain, deploys_rx));
    }
    let mut sent: VecDeque<Sent> = VecDeque::new();
    let mut next_resend = rt.current() + RESEND_EVERY;
    loop {
        tokio::select! {
            biased;
            tx = outgoing.recv() => {
                let Some(tx) = tx else { return };
                sender.send(Recipients::All, encode(&tx), false);
                let txid = tx.txid();
                sent.push_back(Sent { tx, txid, sends: 1 });
                if sent.len() > GOSSIP_QUEUE {
                    sent.pop_front();
                }
            }
            message = receiver.recv() => {
                let Ok((peer, bytes)) = message else { return };
                let Some(tx) = decode(bytes.as_ref()) else {
                    tracing::warn!(%peer, len = bytes.len(), "dropping a gossip message that is not a transaction");
                    continue;
                };
                if chain.mempool().get(&tx.txid()).is_some() {
                    continue;
                }
                if admit.try_send(tx).is_err() {
                    chain.metrics.gossip_dropped.with_label_values(&["all"]).inc();
                    tracing::debug!(%peer, "the gossip admission queue is full: a transaction is dropped");
                }
            }
            _ = rt.sleep_until(next_resend) => {
                next_resend = rt.current() + RESEND_EVERY;
                {
                    let mempool = chain.mempool();
                    sent.retain(|s| s.sends < MAX_SENDS && mempool.get(&s.txid).is_some());
                }
                for s in sent.iter_mut().take(RESEND_BATCH) {
                    sender.send(Recipients::All, encode(&s.tx), false);
                    s.sends += 1;
                }
            }
        }
    }
}

/// Admits the received transactions of `queue` in order, on the blocking pool, handing deploys
/// to `deploys` (dropped and counted when it is full), until `queue` closes.
async fn admit_loop<E>(
    rt: E,
    chain: Arc<Chain>,
    mut queue: mpsc::Receiver<SignedTx>,
    deploys: mpsc::Sender<SignedTx>,
) where
    E: Spawner + commonware_runtime::Supervisor,
{
    while let Some(tx) = queue.recv().await {
        let chain2 = chain.clone();
        let admitted = rt
            .child("admit")
            .shared(true)
            .spawn(move |_| async move {
                let genesis = chain2.genesis();
                let checked = tx.check(&genesis.chain_id, genesis.network);
                if let Ok(TxBody {
                    action: Action::Deploy { .. },
                    ..
                }) = &checked
                {
                    return Err(tx);
                }
                Ok(chain2.submit_checked_from_peer(tx, checked))
            })
            .await;
        match admitted {
            Ok(Ok(Err(e))) => tracing::debug!("a gossiped transaction was not admitted: {e}"),
            Ok(Err(deploy)) => {
                if deploys.try_send(deploy).is_err() {
                    chain
                        .metrics
                        .gossip_dropped
                        .with_label_values(&["deploy"])
                        .inc();
                    tracing::debug!("the gossip deploy queue is full: a deploy is dropped");
                }
            }
            _ => {}
        }
    }
}

/// Admits the received deploys of `queue` (each compiles, within the node's budget) one at a
/// time, on the blocking pool, until `queue` closes.
async fn deploy_loop<E>(rt: E, chain: Arc<Chain>, mut queue: mpsc::Receiver<SignedTx>)
where
    E: Spawner + commonware_runtime::Supervisor,
{
    while let Some(tx) = queue.recv().await {
        let chain = chain.clone();
        let admitted = rt
            .child("admit_deploy")
            .shared(true)
            .spawn(move |_| async move { chain.submit_from_peer(tx) })
            .await;
        if let Ok(Err(e)) = admitted {
            tracing::debug!("a gossiped deploy was not admitted: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_round_trips_and_bounds_hold() {
        let tx = SignedTx::new("{\"a\":1}".into(), "sig".into());
        assert_eq!(decode(&encode(&tx)), Some(tx));
        assert_eq!(decode(b"\x01\x02"), None);
        assert_eq!(decode(&vec![0; MAX_GOSSIP_BYTES + 1]), None);
        // A length prefix claiming 4 GiB.
        assert_eq!(decode(&[0xff, 0xff, 0xff, 0xff, b'a']), None);
    }
}
