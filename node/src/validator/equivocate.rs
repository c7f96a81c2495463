//! The vote channel's sender of a validator, and the test fault that makes it equivocate
//! ([`Fault::Equivocate`](crate::validator::ledger::Fault::Equivocate)): [`VoteSender`] passes
//! every message through unchanged, except that an equivocating validator follows each of its
//! notarize and finalize votes with a second vote, validly signed, for another proposal of the
//! same view (the payload replaced by `SHA-256("gamechain/test-equivocation" ‖ payload)`), sent
//! to the same peers. An honest validator that receives both has evidence of the fault.

use std::sync::Arc;
use std::time::SystemTime;

use commonware_codec::{DecodeExt as _, Encode as _};
use commonware_consensus::simplex::scheme::ed25519::Scheme;
use commonware_consensus::simplex::types::{Finalize, Notarize, Proposal, Vote};
use commonware_cryptography::ed25519::PublicKey;
use commonware_cryptography::sha256::Digest;
use commonware_p2p::{CheckedSender, LimitedSender, Recipients, Sender};
use commonware_runtime::IoBufs;
use sha2::{Digest as _, Sha256};

/// The sender of the vote channel (module docs). `equivocate`: the signing scheme of this
/// validator when it equivocates (a test fault), else `None`.
#[derive(Clone)]
pub struct VoteSender<S> {
    inner: S,
    equivocate: Option<Arc<Scheme>>,
}

impl<S> VoteSender<S> {
    /// Wraps `inner`; equivocates with `equivocate`'s signatures when given.
    pub fn new(inner: S, equivocate: Option<Arc<Scheme>>) -> VoteSender<S> {
        VoteSender { inner, equivocate }
    }
}

/// A checked send of [`VoteSender`].
pub struct CheckedVote<'a, S: LimitedSender + 'a> {
    inner: S::Checked<'a>,
    /// A second sender and the scheme, when equivocating.
    twin: Option<(S, Arc<Scheme>)>,
}

impl<S> LimitedSender for VoteSender<S>
where
    S: LimitedSender<PublicKey = PublicKey>,
{
    type PublicKey = PublicKey;
    type Checked<'a>
        = CheckedVote<'a, S>
    where
        Self: 'a;

    fn check(
        &mut self,
        recipients: Recipients<PublicKey>,
    ) -> Result<Self::Checked<'_>, SystemTime> {
        let twin = self
            .equivocate
            .as_ref()
            .map(|scheme| (self.inner.clone(), scheme.clone()));
        Ok(CheckedVote {
            inner: self.inner.check(recipients)?,
            twin,
        })
    }
}

/// The conflicting twin of `vote`, signed with `scheme`: `None` for a nullify vote.
fn conflicting(scheme: &Scheme, vote: Vote<Scheme, Digest>) -> Option<Vote<Scheme, Digest>> {
    let other = |p: &Proposal<Digest>| {
        let mut h = Sha256::new();
        h.update(b"gamechain/test-equivocation");
        h.update(p.payload.0);
        Proposal::new(p.round, p.parent, Digest(h.finalize().into()))
    };
    match vote {
        Vote::Notarize(n) => Notarize::sign(scheme, other(&n.proposal)).map(Vote::Notarize),
        Vote::Finalize(f) => Finalize::sign(scheme, other(&f.proposal)).map(Vote::Finalize),
        Vote::Nullify(_) => None,
    }
}

impl<'a, S> CheckedSender for CheckedVote<'a, S>
where
    S: LimitedSender<PublicKey = PublicKey> + 'a,
{
    type PublicKey = PublicKey;

    fn recipients(&self) -> Vec<PublicKey> {
        self.inner.recipients()
    }

    fn send(
        self,
        message: impl Into<IoBufs> + Send,
        priority: bool,
    ) -> commonware_actor::Unreliable<commonware_actor::Feedback> {
        let Some((mut twin, scheme)) = self.twin else {
            return self.inner.send(message, priority);
        };
        let message: IoBufs = message.into();
        let recipients = self.inner.recipients();
        let result = self.inner.send(message.clone(), priority);
        let second = Vote::<Scheme, Digest>::decode(message)
            .ok()
            .and_then(|v| conflicting(&scheme, v));
        if let Some(second) = second {
            tracing::warn!("test fault: sending a conflicting vote");
            twin.send(Recipients::Some(recipients), second.encode(), priority);
        }
        result
    }
}
