//! A transcript step's finality proof (wire: `gamechain_chain::wire::transcript::StepFinality`,
//! chains with validators): built from a node's database by the transcript's server
//! ([`step_finality`]) and checked against the genesis validator set by `gamechain verify
//! --game` ([`check_step_finality`]).
//!
//! The proof recomputes the step's block's consensus digest (`digest.rs`) from its parent's
//! digest, the step's signed header and the hash of the block's transaction signatures, chains
//! it through the descendants up to the first block holding a certificate of its own (at most
//! [`MAX_FINALITY_LINKS`] of them), and checks that certificate ([`FinalityChecker`]). The
//! parent's digest is taken as given: whatever it is, a quorum that finalized a digest chaining
//! this header finalized this block (SHA-256 binds the preimage), and validators finalize a
//! block only on top of its finalized ancestry.

use gamechain_chain::wire::transcript::{
    FinalityLink, StepFinality, MAX_FINALITY_LINKS, MAX_LINK_SIGNATURE_CHARS,
};
use gamechain_chain::wire::Block;
use gamechain_ledger::storage::{Storage, StorageError};
use gamechain_runtime::chain::SignedHeader;

use super::digest::{digest_from_parts, signatures_hash};
use super::finality::{FinalityChecker, MAX_CERTIFICATE_BYTES};

/// The finality proof of `block` from `storage`'s records: `None` for block 0 (fixed by the
/// genesis), when the database lacks the validators' records (a chain without validators), the parent's or a block's record (a follower's data
/// directory from before records were kept), a descendant (not yet committed), or when no
/// block within [`MAX_FINALITY_LINKS`] after it has a certificate of its own. Reads at most
/// that many blocks. Errors: the database's.
pub fn step_finality(
    storage: &Storage,
    block: &Block,
) -> Result<Option<StepFinality>, StorageError> {
    let height = block.header.header.height;
    if height == 0 || !storage.has_validator_tables()? {
        return Ok(None);
    }
    let Some((parent_digest, _)) = storage.validator_finality(height - 1)? else {
        return Ok(None);
    };
    let Some((_, mut certificate)) = storage.validator_finality(height)? else {
        return Ok(None);
    };
    let (sigs, tx_count) = signatures_hash(block.txs.iter().map(|t| t.tx.signature()));
    let mut links = Vec::new();
    let mut at = height;
    while certificate.is_none() {
        if links.len() == MAX_FINALITY_LINKS {
            return Ok(None);
        }
        at += 1;
        let (Some(next), Some((_, cert))) = (storage.block(at)?, storage.validator_finality(at)?)
        else {
            return Ok(None);
        };
        let (next_sigs, next_count) = signatures_hash(next.txs.iter().map(|t| t.tx.signature()));
        links.push(FinalityLink {
            header_hash: next.header.header.hash_hex(),
            header_signature: next.header.signature.clone(),
            tx_count: next_count,
            signatures_hash: hex::encode(next_sigs),
        });
        certificate = cert;
    }
    Ok(Some(StepFinality {
        parent_digest: hex::encode(parent_digest),
        tx_count,
        signatures_hash: hex::encode(sigs),
        links,
        certificate: hex::encode(certificate.expect("the loop ends on a certificate")),
    }))
}

fn hex32(what: &str, text: &str) -> Result<[u8; 32], String> {
    let mut out = [0u8; 32];
    hex::decode_to_slice(text, &mut out).map_err(|_| format!("{what} is not 64 hex characters"))?;
    Ok(out)
}

/// Checks `finality`, the proof that the block of `header` is final, with `checker` (the
/// genesis validator set). `tx_count`: the step's transaction tree size when it is a
/// transaction's step (the proof's count must equal it), `None` for a scheduled call's.
/// `Ok`: the height of the block whose certificate finalized it (the header's own height when
/// it has one). Errors: a fixed text saying what does not hold (a malformed field, more than
/// [`MAX_FINALITY_LINKS`] links, a certificate that does not decode, is not a quorum's, or
/// finalizes another digest).
pub fn check_step_finality(
    checker: &FinalityChecker,
    header: &SignedHeader,
    tx_count: Option<u64>,
    finality: &StepFinality,
) -> Result<u64, String> {
    if let Some(n) = tx_count {
        if u64::from(finality.tx_count) != n {
            return Err(format!(
                "the finality record counts {} transactions in the block, the step's tx_count is {n}",
                finality.tx_count
            ));
        }
    }
    if finality.links.len() > MAX_FINALITY_LINKS {
        return Err(format!(
            "{} links to a certificate (at most {MAX_FINALITY_LINKS})",
            finality.links.len()
        ));
    }
    if finality.certificate.len() > 2 * MAX_CERTIFICATE_BYTES {
        return Err(format!(
            "a certificate of more than {MAX_CERTIFICATE_BYTES} bytes"
        ));
    }
    let certificate =
        hex::decode(&finality.certificate).map_err(|_| "the certificate is not hex".to_string())?;
    let mut digest = digest_from_parts(
        &hex32("parent_digest", &finality.parent_digest)?,
        &header.header.hash(),
        &header.signature,
        finality.tx_count,
        &hex32("signatures_hash", &finality.signatures_hash)?,
    );
    for (k, link) in finality.links.iter().enumerate() {
        if link.header_signature.len() > MAX_LINK_SIGNATURE_CHARS {
            return Err(format!(
                "link {k}: a header signature over {MAX_LINK_SIGNATURE_CHARS} characters"
            ));
        }
        digest = digest_from_parts(
            &digest,
            &hex32(&format!("link {k}: header_hash"), &link.header_hash)?,
            &link.header_signature,
            link.tx_count,
            &hex32(&format!("link {k}: signatures_hash"), &link.signatures_hash)?,
        );
    }
    let certified = header.header.height + finality.links.len() as u64;
    checker
        .check(&digest, &certificate)
        .map_err(|e| format!("block {certified}'s certificate: {e}"))?;
    Ok(certified)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proof::digest::proposal_digest;
    use commonware_codec::Encode as _;
    use commonware_consensus::simplex::scheme::ed25519::Scheme;
    use commonware_consensus::simplex::types::{Finalization, Finalize, Proposal};
    use commonware_consensus::types::{Epoch, Round, View};
    use commonware_cryptography::ed25519::PrivateKey;
    use commonware_cryptography::sha256::Digest;
    use commonware_cryptography::Signer as _;
    use commonware_parallel::Sequential;
    use commonware_utils::ordered::Set;
    use commonware_utils::TryCollect as _;
    use gamechain_runtime::chain::Header;

    const NS: &[u8] = b"gamechain/test/00";

    /// Four validators' signing schemes and the checker of their set.
    fn set() -> (FinalityChecker, Vec<Scheme>) {
        let mut keys: Vec<PrivateKey> = (0..4u64).map(PrivateKey::from_seed).collect();
        keys.sort_by_key(|k| k.public_key());
        let set: Set<_> = keys.iter().map(|k| k.public_key()).try_collect().unwrap();
        let signers = keys
            .iter()
            .map(|k| Scheme::signer(NS, set.clone(), k.clone()).unwrap())
            .collect();
        (FinalityChecker::from_set(NS, set), signers)
    }

    /// A finalization of `digest` by the first `quorum` signers.
    fn certificate(signers: &[Scheme], digest: [u8; 32], quorum: usize) -> Vec<u8> {
        let proposal = Proposal::new(
            Round::new(Epoch::zero(), View::new(5)),
            View::new(4),
            Digest(digest),
        );
        let votes: Vec<Finalize<Scheme, Digest>> = signers[..quorum]
            .iter()
            .map(|s| Finalize::sign(s, proposal.clone()).unwrap())
            .collect();
        let nonempty = commonware_utils::iter::NonEmpty::try_new(votes.into_iter()).unwrap();
        Finalization::from_owned_finalizes(&signers[0], nonempty, &Sequential)
            .unwrap()
            .encode()
            .to_vec()
    }

    fn header(height: u64) -> SignedHeader {
        SignedHeader {
            header: Header {
                height,
                prev_hash: [1; 32],
                time_ms: 0,
                sequencer: "x".into(),
                checkpoint: gamechain_sdk::Checkpoint {
                    height: 0,
                    hash: String::new(),
                },
                tx_root: [2; 32],
                receipt_root: [3; 32],
                state_root: [4; 32],
                beacon: None,
            },
            signature: format!("signature of {height}"),
        }
    }

    #[test]
    fn digest_from_parts_is_the_proposal_digest() {
        let h = header(3);
        let sigs = ["a", "bb", "ccc"];
        let (hash, count) = signatures_hash(sigs);
        assert_eq!(
            digest_from_parts(&[7; 32], &h.header.hash(), &h.signature, count, &hash),
            proposal_digest(&[7; 32], &h, sigs)
        );
    }

    /// Block 3 (two transactions) finalized through block 4's certificate.
    fn chained(signers: &[Scheme]) -> (SignedHeader, StepFinality) {
        let (h3, h4) = (header(3), header(4));
        let d3 = proposal_digest(&[9; 32], &h3, ["s1", "s2"]);
        let d4 = proposal_digest(&d3, &h4, ["s3"]);
        let (sig3, _) = signatures_hash(["s1", "s2"]);
        let (sig4, _) = signatures_hash(["s3"]);
        let f = StepFinality {
            parent_digest: hex::encode([9; 32]),
            tx_count: 2,
            signatures_hash: hex::encode(sig3),
            links: vec![FinalityLink {
                header_hash: h4.header.hash_hex(),
                header_signature: h4.signature.clone(),
                tx_count: 1,
                signatures_hash: hex::encode(sig4),
            }],
            certificate: hex::encode(certificate(signers, d4, 3)),
        };
        (h3, f)
    }

    #[test]
    fn a_certificate_of_the_block_or_a_descendant_proves_it_final() {
        let (checker, s) = set();
        let h = header(3);
        let d = proposal_digest(&[9; 32], &h, ["s1"]);
        let own = StepFinality {
            parent_digest: hex::encode([9; 32]),
            tx_count: 1,
            signatures_hash: hex::encode(signatures_hash(["s1"]).0),
            links: vec![],
            certificate: hex::encode(certificate(&s, d, 3)),
        };
        assert_eq!(check_step_finality(&checker, &h, Some(1), &own), Ok(3));
        let (h3, f) = chained(&s);
        assert_eq!(check_step_finality(&checker, &h3, Some(2), &f), Ok(4));
        assert_eq!(check_step_finality(&checker, &h3, None, &f), Ok(4));
    }

    #[test]
    fn a_forged_or_misplaced_certificate_is_refused() {
        let (checker, s) = set();
        let (h3, good) = chained(&s);
        let err = |f: &StepFinality, h: &SignedHeader| {
            check_step_finality(&checker, h, Some(2), f).unwrap_err()
        };
        // A flipped byte in the last signature.
        let mut f = good.clone();
        let mut bytes = hex::decode(&f.certificate).unwrap();
        *bytes.last_mut().unwrap() ^= 1;
        f.certificate = hex::encode(bytes);
        assert!(err(&f, &h3).contains("not a quorum"), "{}", err(&f, &h3));
        // A real quorum's certificate of another block (the parent).
        let d4 = {
            let d3 = proposal_digest(&[9; 32], &h3, ["s1", "s2"]);
            proposal_digest(&d3, &header(4), ["s3"])
        };
        let mut f = good.clone();
        f.certificate = hex::encode(certificate(&s, [9; 32], 4));
        assert!(
            err(&f, &h3).starts_with("block 4's certificate: the certificate finalizes digest"),
            "{}",
            err(&f, &h3)
        );
        // Another header (a block the quorum never saw): the certificate is another digest's.
        let mut other = h3.clone();
        other.header.time_ms = 1;
        assert!(
            err(&good, &other).contains("finalizes digest"),
            "{}",
            err(&good, &other)
        );
        // A changed link, parent digest, signature hash or count.
        let mut f = good.clone();
        f.links[0].tx_count = 2;
        assert!(err(&f, &h3).contains("finalizes digest"));
        let mut f = good.clone();
        f.parent_digest = hex::encode([8; 32]);
        assert!(err(&f, &h3).contains("finalizes digest"));
        let mut f = good.clone();
        f.links.clear();
        assert!(err(&f, &h3).contains("finalizes digest"));
        assert!(check_step_finality(&checker, &h3, Some(3), &good)
            .unwrap_err()
            .contains("tx_count is 3"));
        // Signed under another chain's namespace, or not a certificate at all.
        let mut keys: Vec<PrivateKey> = (0..4u64).map(PrivateKey::from_seed).collect();
        keys.sort_by_key(|k| k.public_key());
        let other_set: Set<_> = keys.iter().map(|k| k.public_key()).try_collect().unwrap();
        let foreign: Vec<Scheme> = keys
            .iter()
            .map(|k| Scheme::signer(b"gamechain/other/00", other_set.clone(), k.clone()).unwrap())
            .collect();
        let mut f = good.clone();
        f.certificate = hex::encode(certificate(&foreign, d4, 4));
        assert!(err(&f, &h3).contains("not a quorum"));
        let mut f = good.clone();
        f.certificate = "00".into();
        assert!(err(&f, &h3).contains("not a finality certificate"));
        let mut f = good;
        f.links = vec![f.links[0].clone(); MAX_FINALITY_LINKS + 1];
        assert!(err(&f, &h3).contains("links"));
    }

    /// The vectors the JS SDK's finality check is tested on
    /// (`node/web/sdk/test/fixtures/finality_vectors.json`, `test/finality.test.js`): four
    /// validators of seeds 0 to 3, a block finalized by its own certificate and one through its
    /// child's, each with a flipped certificate byte and a certificate of another digest. The
    /// file must be what this code makes (`GAMECHAIN_WRITE_FIXTURES=1` rewrites it).
    #[test]
    fn finality_vectors_for_the_sdk() {
        let chain_id = "fixture-chain";
        let genesis_hash = "ab".repeat(32);
        let ns = crate::proof::finality::namespace(chain_id, &genesis_hash);
        let mut keys: Vec<PrivateKey> = (0..4u64).map(PrivateKey::from_seed).collect();
        keys.sort_by_key(|k| k.public_key());
        let set: Set<_> = keys.iter().map(|k| k.public_key()).try_collect().unwrap();
        let signers: Vec<Scheme> = keys
            .iter()
            .map(|k| Scheme::signer(&ns, set.clone(), k.clone()).unwrap())
            .collect();
        let checker = FinalityChecker::from_set(&ns, set.clone());
        // Signed by a real key: the SDK checks the header's signature before its finality.
        let sequencer = gamechain_runtime::chain::SecretKey::from_bytes(
            gamechain_runtime::chain::Network::Testnet,
            [5; 32],
        )
        .unwrap();
        let mut unsigned = header(3).header;
        unsigned.sequencer = sequencer.address();
        let h3 = SignedHeader::sign(unsigned, &sequencer);
        let d3 = proposal_digest(&[9; 32], &h3, ["s1", "s2"]);
        let (_, own) = {
            let f = StepFinality {
                parent_digest: hex::encode([9; 32]),
                tx_count: 2,
                signatures_hash: hex::encode(signatures_hash(["s1", "s2"]).0),
                links: vec![],
                certificate: hex::encode(certificate(&signers, d3, 3)),
            };
            (d3, f)
        };
        let (h3c, chained) = chained(&signers);
        let flip = |f: &StepFinality| {
            let mut f = f.clone();
            let mut b = hex::decode(&f.certificate).unwrap();
            let at = b.len() - 40;
            b[at] ^= 1;
            f.certificate = hex::encode(b);
            f
        };
        let other = |f: &StepFinality| {
            let mut f = f.clone();
            f.certificate = hex::encode(certificate(&signers, [7; 32], 4));
            f
        };
        let case = |name: &str, h: &SignedHeader, f: &StepFinality| {
            let result = check_step_finality(&checker, h, Some(u64::from(f.tx_count)), f);
            serde_json::json!({
                "name": name,
                "header": h,
                "header_hash": h.header.hash_hex(),
                "finality": f,
                "ok": result.is_ok(),
                "certified": result.ok(),
            })
        };
        let out = serde_json::json!({
            "chain_id": chain_id,
            "genesis_hash": genesis_hash,
            "consensus_keys": keys.iter().rev().map(|k| hex::encode(k.public_key().as_ref())).collect::<Vec<_>>(),
            "cases": [
                case("own certificate", &h3, &own),
                case("a child's certificate", &h3c, &chained),
                case("own certificate, a flipped byte", &h3, &flip(&own)),
                case("a child's certificate, a flipped byte", &h3c, &flip(&chained)),
                case("another digest's certificate", &h3, &other(&own)),
                case("another header", &h3c, &own),
            ],
        });
        let cases = out["cases"].as_array().unwrap();
        assert_eq!(
            cases
                .iter()
                .map(|c| c["ok"].as_bool().unwrap())
                .collect::<Vec<_>>(),
            [true, true, false, false, false, false]
        );
        let text = serde_json::to_string_pretty(&out).unwrap() + "\n";
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/web/sdk/test/fixtures/finality_vectors.json"
        );
        if std::env::var_os("GAMECHAIN_WRITE_FIXTURES").is_some() {
            std::fs::write(path, &text).unwrap();
        }
        assert_eq!(
            std::fs::read_to_string(path).unwrap_or_default(),
            text,
            "{path} is not these vectors: GAMECHAIN_WRITE_FIXTURES=1 rewrites it"
        );
    }

    /// Blocks 0 to 4 committed to a database, each with its finality record: blocks 2 and 3
    /// without a certificate of their own, block 4 with one (a finalization of its digest by
    /// three of the four test validators).
    fn stored_chain(dir: &std::path::Path, signers: &[Scheme]) -> (Storage, Vec<Block>) {
        use gamechain_chain::wire::IncludedTx;
        use gamechain_runtime::chain::{
            receipt_root, tx_root, Action, Network, Receipt, SecretKey, StateCommitment, StateHash,
            TxBody,
        };
        let seq = SecretKey::from_bytes(Network::Testnet, [9; 32]).unwrap();
        let alice = SecretKey::from_bytes(Network::Testnet, [1; 32]).unwrap();
        let hash = StateHash::from_entries(
            StateCommitment::LtHash16,
            std::iter::empty::<(&str, &[u8])>(),
        );
        let mut blocks: Vec<Block> = Vec::new();
        for height in 0..5u64 {
            let txs: Vec<IncludedTx> = (0..height.min(2))
                .map(|n| IncludedTx {
                    tx: TxBody {
                        chain_id: "c".into(),
                        from: alice.address(),
                        nonce: height * 2 + n,
                        action: Action::Faucet {
                            token: "GOLD".into(),
                        },
                    }
                    .sign(&alice),
                    receipt: Receipt::success(vec![], 0),
                })
                .collect();
            let signed: Vec<_> = txs.iter().map(|t| t.tx.clone()).collect();
            let receipts: Vec<_> = txs.iter().map(|t| t.receipt.clone()).collect();
            let header = Header {
                height,
                prev_hash: blocks.last().map_or([0; 32], |b| b.header.header.hash()),
                time_ms: 1_000 + height,
                sequencer: seq.address(),
                checkpoint: gamechain_sdk::Checkpoint::default(),
                tx_root: tx_root(&signed),
                receipt_root: receipt_root(&receipts),
                state_root: hash.root(),
                beacon: None,
            };
            blocks.push(Block {
                header: SignedHeader::sign(header, &seq),
                scheduled: Vec::new(),
                txs,
                end_block: Vec::new(),
            });
        }
        let mut s = Storage::open(&dir.join("chain.sqlite")).unwrap();
        s.commit_genesis(&blocks[0], &[], &hash, &Default::default(), "g", "e")
            .unwrap();
        let from = alice.address();
        for b in &blocks[1..] {
            let senders: Vec<(&str, u64)> = b
                .txs
                .iter()
                .enumerate()
                .map(|(n, _)| (from.as_str(), b.height() * 2 + n as u64))
                .collect();
            s.commit_block(b, &senders, &Default::default(), &hash, &[])
                .unwrap();
        }
        s.ensure_validator_tables().unwrap();
        let mut digest = [0u8; 32];
        for b in &blocks {
            digest = proposal_digest(&digest, &b.header, b.txs.iter().map(|t| t.tx.signature()));
            let cert = match b.height() {
                2 | 3 => None,
                _ => Some(certificate(signers, digest, 3)),
            };
            s.put_validator_finality(b.height(), &digest, cert.as_deref())
                .unwrap();
        }
        (s, blocks)
    }

    #[test]
    fn a_database_gives_each_block_a_record_that_checks() {
        let (checker, signers) = set();
        let dir = tempfile::tempdir().unwrap();
        let (s, blocks) = stored_chain(dir.path(), &signers);
        assert_eq!(step_finality(&s, &blocks[0]).unwrap(), None, "block 0");
        // Its own certificate; then two blocks finalized through block 4's.
        let own = step_finality(&s, &blocks[1]).unwrap().unwrap();
        assert!(own.links.is_empty());
        assert_eq!(
            check_step_finality(&checker, &blocks[1].header, Some(1), &own),
            Ok(1)
        );
        let through = step_finality(&s, &blocks[2]).unwrap().unwrap();
        assert_eq!((through.links.len(), through.tx_count), (2, 2));
        assert_eq!(
            check_step_finality(&checker, &blocks[2].header, Some(2), &through),
            Ok(4)
        );
        let through = step_finality(&s, &blocks[3]).unwrap().unwrap();
        assert_eq!(through.links.len(), 1);
        assert_eq!(
            check_step_finality(&checker, &blocks[3].header, None, &through),
            Ok(4)
        );
        // A record claimed for another block's header does not check.
        assert!(check_step_finality(&checker, &blocks[2].header, Some(2), &own).is_err());
    }
}
