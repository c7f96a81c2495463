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
//! bounds how many a peer can send; admission work runs on the blocking pool, one message at a
//! time per validator, and the mempool's own bounds hold.

use std::sync::Arc;

use commonware_p2p::{Receiver, Recipients, Sender};
use std::collections::VecDeque;

use commonware_runtime::{Clock, Spawner};
use tokio::sync::mpsc;

use gamechain_runtime::chain::{SignedTx, MAX_DEPLOY_BODY_BYTES};

use crate::ledger::chain::Chain;

/// Largest gossip message: a deploy body at its bound, its signature and the encoding.
pub const MAX_GOSSIP_BYTES: usize = MAX_DEPLOY_BODY_BYTES + 1024;

/// Transactions admitted through the API, waiting to be sent; at most this many (more are
/// not gossiped, and reach the chain when this validator proposes).
pub const GOSSIP_QUEUE: usize = 16_384;

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
                let chain = chain.clone();
                let admitted = rt
                    .child("admit")
                    .shared(true)
                    .spawn(move |_| async move { chain.submit_from_peer(tx) })
                    .await;
                if let Ok(Err(e)) = admitted {
                    tracing::debug!(%peer, "a gossiped transaction was not admitted: {e}");
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
