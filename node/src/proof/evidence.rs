//! Evidence of a faulty validator, checked outside consensus: two consensus messages one
//! validator signed that an honest validator never signs together. Simplex reports them to
//! the validators that receive both (`validator/observer.rs` stores them, `GET /v1/evidence`
//! serves them); [`EvidenceChecker`] checks one against the genesis validator set, for the
//! node before it stores it and for `gamechain verify` after (a node's records are not proof;
//! what `verify` reports of them is `verify/evidence.rs`).
//!
//! Kinds and their `data` (Commonware simplex's encodings, one message after the other):
//! - `conflicting_notarize`: two notarize votes of one signer in one round for different
//!   proposals;
//! - `conflicting_finalize`: two finalize votes of one signer in one round for different
//!   proposals;
//! - `nullify_finalize`: a nullify vote and a finalize vote of one signer in one round.
//!
//! Both signatures must verify under the chain's namespace (`gamechain/<chain id>/<genesis
//! hash>`) with the signer's consensus key from the genesis set. Bounds: `data` over
//! [`MAX_EVIDENCE_BYTES`] is refused before decoding; nothing may follow the second message.
//! No slashing: the chain has no stake; evidence is recorded and published only.

use commonware_codec::Read;
use commonware_consensus::simplex::scheme::ed25519::Scheme;
use commonware_consensus::simplex::types::{Finalize, Notarize, Nullify};
use commonware_cryptography::sha256::Digest;
use commonware_parallel::Sequential;

use gamechain_runtime::chain::Genesis;

use crate::proof::finality::{namespace, participants};
use gamechain_ledger::storage::StoredEvidence;

/// Largest `data` accepted for checking: two votes are about 250 bytes.
pub const MAX_EVIDENCE_BYTES: usize = 4 * 1024;

/// What one piece of evidence proves, once checked: the kind, the round's view and the signer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proven {
    /// `conflicting_notarize`, `conflicting_finalize` or `nullify_finalize`.
    pub kind: &'static str,
    /// The view.
    pub view: u64,
    /// The signer's index in the genesis set.
    pub signer: u32,
}

/// Checks evidence of one chain.
pub struct EvidenceChecker {
    verifier: Scheme,
    signers: usize,
    /// Each validator's `(address, consensus key hex)`, in participant order.
    validators: Vec<(String, String)>,
}

/// Reads two messages of types `A`, `B` from `data` with nothing after them.
fn two<A, B>(data: &[u8]) -> Result<(A, B), String>
where
    A: Read<Cfg = ()>,
    B: Read<Cfg = ()>,
{
    let mut buf = bytes::Bytes::copy_from_slice(data);
    let a = A::read_cfg(&mut buf, &()).map_err(|e| format!("not a signed vote: {e}"))?;
    let b = B::read_cfg(&mut buf, &()).map_err(|e| format!("no second signed vote: {e}"))?;
    if !buf.is_empty() {
        return Err(format!("{} bytes after the second vote", buf.len()));
    }
    Ok((a, b))
}

impl EvidenceChecker {
    /// The checker of the chain of `genesis` (whose hash, hex, is `genesis_hash`). Errors: the
    /// genesis names no validators, or a bad key.
    pub fn new(genesis: &Genesis, genesis_hash: &str) -> Result<EvidenceChecker, String> {
        let set = genesis
            .validators
            .as_ref()
            .ok_or("the chain's genesis names no validators")?;
        let participants = participants(set)?;
        let validators = participants
            .iter()
            .map(|key| {
                let bytes: [u8; 32] = key.as_ref().try_into().expect("32-byte keys");
                let address = set
                    .by_consensus_key(&bytes)
                    .map(|v| v.address.clone())
                    .unwrap_or_default();
                (address, hex::encode(bytes))
            })
            .collect();
        Ok(EvidenceChecker {
            signers: participants.len(),
            verifier: Scheme::verifier(&namespace(&genesis.chain_id, genesis_hash), participants),
            validators,
        })
    }

    /// The block-signing address and consensus key (hex) of the validator with index `signer`.
    pub fn validator(&self, signer: u32) -> Option<&(String, String)> {
        self.validators.get(signer as usize)
    }

    /// What `data` of kind `kind` proves, when both its messages are signed by one validator
    /// of the set, in one round, and conflict. Errors say which of these fails (`does not
    /// conflict`, `does not verify`, not decodable, an unknown kind or signer).
    pub fn check(&self, kind: &str, data: &[u8]) -> Result<Proven, String> {
        if data.len() > MAX_EVIDENCE_BYTES {
            return Err(format!(
                "{} bytes of evidence (the limit is {MAX_EVIDENCE_BYTES})",
                data.len()
            ));
        }
        let mut rng = rand::rng();
        let (kind, round, signers, conflict, verified) = match kind {
            "conflicting_notarize" => {
                let (a, b) = two::<Notarize<Scheme, Digest>, Notarize<Scheme, Digest>>(data)?;
                (
                    "conflicting_notarize",
                    (a.round(), b.round()),
                    (a.attestation.signer, b.attestation.signer),
                    a.proposal != b.proposal,
                    a.verify(&mut rng, &self.verifier, &Sequential)
                        && b.verify(&mut rng, &self.verifier, &Sequential),
                )
            }
            "conflicting_finalize" => {
                let (a, b) = two::<Finalize<Scheme, Digest>, Finalize<Scheme, Digest>>(data)?;
                (
                    "conflicting_finalize",
                    (a.round(), b.round()),
                    (a.attestation.signer, b.attestation.signer),
                    a.proposal != b.proposal,
                    a.verify(&mut rng, &self.verifier, &Sequential)
                        && b.verify(&mut rng, &self.verifier, &Sequential),
                )
            }
            "nullify_finalize" => {
                let (a, b) = two::<Nullify<Scheme>, Finalize<Scheme, Digest>>(data)?;
                (
                    "nullify_finalize",
                    (a.round, b.round()),
                    (a.attestation.signer, b.attestation.signer),
                    true,
                    a.verify::<_, Digest>(&mut rng, &self.verifier, &Sequential)
                        && b.verify(&mut rng, &self.verifier, &Sequential),
                )
            }
            other => return Err(format!("unknown kind of evidence `{other}`")),
        };
        if signers.0 != signers.1 {
            return Err(format!(
                "does not conflict: the votes are by two validators ({} and {})",
                signers.0.get(),
                signers.1.get()
            ));
        }
        if round.0 != round.1 {
            return Err(format!(
                "does not conflict: the votes are for two views ({} and {})",
                round.0.view().get(),
                round.1.view().get()
            ));
        }
        if !conflict {
            return Err("does not conflict: both votes are for the same proposal".into());
        }
        if signers.0.get() as usize >= self.signers {
            return Err(format!(
                "signer {} is not in the genesis set",
                signers.0.get()
            ));
        }
        if !verified {
            return Err(
                "does not verify: a signature is not the signer's under this chain's namespace"
                    .into(),
            );
        }
        Ok(Proven {
            kind,
            view: round.0.view().get(),
            signer: signers.0.get(),
        })
    }

    /// Checks a stored record: its data ([`check`](Self::check)) and that its `kind`, `view`
    /// and `signer` are what the data proves.
    pub fn check_record(&self, e: &StoredEvidence) -> Result<Proven, String> {
        let proven = self.check(&e.kind, &e.data)?;
        if proven.view != e.view || proven.signer != e.signer {
            return Err(format!(
                "the record says view {} signer {}, its votes are view {} signer {}",
                e.view, e.signer, proven.view, proven.signer
            ));
        }
        Ok(proven)
    }
}

impl EvidenceChecker {
    /// Every validator's `(address, consensus key hex)`, in participant (signer index) order.
    pub fn validators(&self) -> &[(String, String)] {
        &self.validators
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use commonware_codec::Encode as _;
    use commonware_consensus::simplex::types::Proposal;
    use commonware_consensus::types::{Epoch, Round, View};
    use commonware_cryptography::ed25519::PrivateKey;
    use commonware_cryptography::Signer as _;
    use commonware_utils::ordered::Set;
    use commonware_utils::TryCollect as _;

    /// Four keys in participant order (a set is sorted by public key, so `keys()[i]` signs as
    /// signer `i`).
    fn keys() -> Vec<PrivateKey> {
        let mut keys: Vec<PrivateKey> = (0..4u64).map(PrivateKey::from_seed).collect();
        keys.sort_by_key(|k| k.public_key());
        keys
    }

    fn checker_and_signers(ns: &[u8]) -> (EvidenceChecker, Vec<Scheme>) {
        let keys = keys();
        let set: Set<_> = keys.iter().map(|k| k.public_key()).try_collect().unwrap();
        let signers: Vec<Scheme> = keys
            .iter()
            .map(|k| Scheme::signer(ns, set.clone(), k.clone()).unwrap())
            .collect();
        let checker = EvidenceChecker {
            verifier: Scheme::verifier(ns, set.clone()),
            signers: 4,
            validators: (0..4).map(|i| (format!("v{i}"), String::new())).collect(),
        };
        (checker, signers)
    }

    fn proposal(view: u64, payload: u8) -> Proposal<Digest> {
        Proposal::new(
            Round::new(Epoch::zero(), View::new(view)),
            View::new(view - 1),
            Digest([payload; 32]),
        )
    }

    fn notarize(s: &Scheme, view: u64, payload: u8) -> Vec<u8> {
        Notarize::<Scheme, Digest>::sign(s, proposal(view, payload))
            .unwrap()
            .encode()
            .to_vec()
    }

    #[test]
    fn two_notarize_votes_for_different_proposals_prove_a_fault() {
        let (checker, s) = checker_and_signers(b"ns");
        let data = [notarize(&s[2], 7, 1), notarize(&s[2], 7, 2)].concat();
        assert_eq!(
            checker.check("conflicting_notarize", &data),
            Ok(Proven {
                kind: "conflicting_notarize",
                view: 7,
                signer: 2
            })
        );
        // The engine's own encoding of the pair is the same bytes.
        let a = Notarize::<Scheme, Digest>::sign(&s[2], proposal(7, 1)).unwrap();
        let b = Notarize::<Scheme, Digest>::sign(&s[2], proposal(7, 2)).unwrap();
        let engine = commonware_consensus::simplex::types::ConflictingNotarize::new(a, b);
        assert_eq!(engine.encode().to_vec(), data);
    }

    #[test]
    fn evidence_that_does_not_conflict_or_verify_proves_nothing() {
        let (checker, s) = checker_and_signers(b"ns");
        let same = [notarize(&s[1], 7, 1), notarize(&s[1], 7, 1)].concat();
        let err = checker.check("conflicting_notarize", &same).unwrap_err();
        assert!(err.starts_with("does not conflict"), "{err}");
        let two_signers = [notarize(&s[1], 7, 1), notarize(&s[2], 7, 2)].concat();
        let err = checker
            .check("conflicting_notarize", &two_signers)
            .unwrap_err();
        assert!(err.contains("two validators"), "{err}");
        let two_views = [notarize(&s[1], 7, 1), notarize(&s[1], 8, 2)].concat();
        let err = checker
            .check("conflicting_notarize", &two_views)
            .unwrap_err();
        assert!(err.contains("two views"), "{err}");
        // Signed under another chain's namespace.
        let (_, other) = checker_and_signers(b"another chain");
        let foreign = [notarize(&other[1], 7, 1), notarize(&other[1], 7, 2)].concat();
        let err = checker.check("conflicting_notarize", &foreign).unwrap_err();
        assert!(err.starts_with("does not verify"), "{err}");
        // A damaged signature byte.
        let mut damaged = [notarize(&s[1], 7, 1), notarize(&s[1], 7, 2)].concat();
        let last = damaged.len() - 1;
        damaged[last] ^= 1;
        assert!(checker
            .check("conflicting_notarize", &damaged)
            .unwrap_err()
            .starts_with("does not verify"));
        // Trailing bytes, truncation, the wrong kind, oversize.
        let mut long = [notarize(&s[1], 7, 1), notarize(&s[1], 7, 2)].concat();
        long.push(0);
        assert!(checker.check("conflicting_notarize", &long).is_err());
        assert!(checker
            .check("conflicting_notarize", &same[..same.len() / 2 + 3])
            .is_err());
        assert!(checker.check("conflicting_finalize", &same).is_err());
        assert!(checker.check("made_up", &same).is_err());
        assert!(checker
            .check("conflicting_notarize", &vec![0; MAX_EVIDENCE_BYTES + 1])
            .unwrap_err()
            .contains("limit"));
    }

    #[test]
    fn a_nullify_and_a_finalize_in_one_view_prove_a_fault() {
        let (checker, s) = checker_and_signers(b"ns");
        let round = Round::new(Epoch::zero(), View::new(9));
        let n = Nullify::<Scheme>::sign::<Digest>(&s[3], round).unwrap();
        let f = Finalize::<Scheme, Digest>::sign(&s[3], proposal(9, 4)).unwrap();
        let data = [n.encode().to_vec(), f.encode().to_vec()].concat();
        let p = checker.check("nullify_finalize", &data).unwrap();
        assert_eq!((p.view, p.signer), (9, 3));
        // A record whose fields lie about its data.
        let record = StoredEvidence {
            id: 1,
            kind: "nullify_finalize".into(),
            view: 10,
            signer: 3,
            data,
            received_ms: 0,
        };
        assert!(checker.check_record(&record).is_err());
    }
}
