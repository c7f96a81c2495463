//! Validators under Commonware's deterministic runtime and simulated network: real chains (the
//! node's SQLite, the wasm runtime, the embedded tic-tac-toe), real consensus (simplex,
//! marshal), simulated time and links. Each run is reproducible from its seed.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use commonware_codec::Decode as _;
use commonware_consensus::simplex::scheme::ed25519::Scheme;
use commonware_consensus::simplex::types::Finalization;
use commonware_cryptography::ed25519::{PrivateKey, PublicKey};
use commonware_cryptography::sha256::Digest;
use commonware_cryptography::Signer as _;
use commonware_p2p::simulated::{Config as NetConfig, Link, Network};
use commonware_parallel::Sequential;
use commonware_runtime::{deterministic, Clock as _, Quota, Runner as _, Supervisor as _};
use commonware_utils::{probability, NZUsize, NZU32};
use tempfile::TempDir;

use gamechain_runtime::chain::{
    Action, BeaconConfig, GenesisValidator, Network as ChainNetwork, SecretKey, SignedTx, TxBody,
    ValidatorSet, ENGINE_SIMPLEX,
};

use crate::config::NodeConfig;
use crate::validator::beacon::share::{deal, BeaconShare};
use crate::validator::engine::{self, Channels, EngineConfig, EngineStart};
use crate::validator::keys::participants;
use crate::validator::ledger::{Fault, Ledger};
use crate::validator::{genesis_proposal, head_digest, MAX_PROPOSAL_TX_BYTES, PROPOSAL_BOUND};
use gamechain_ledger::chain::{Chain, NoSink};
use gamechain_ledger::genesis_setup::{new_genesis, open_chain};
use gamechain_ledger::storage::StoredEvidence;

const CHAIN: &str = "gamechain-sim";

/// Every run goes on until each validator has committed at least this many blocks, so every
/// validator leads several views.
const MIN_HEIGHT: u64 = 12;

/// The simulated chain's `min_block_interval_ms`.
const INTERVAL_MS: u64 = 200;

/// The simulated chain's `max_clock_drift_ms`: more than a proposal's trip and execution
/// before the votes (links of 20–25 ms), less than the time a proposer whose clock stopped lags
/// after a quiet spell ([`IDLE_MS`] − [`INTERVAL_MS`]), so such a proposer is refused.
const DRIFT_MS: u64 = 150;

/// The simulated validators' `block_interval_ms`: an empty block when the chain has been quiet
/// this long. Shorter than a leader's wait for transactions (half its 1 s timeout), so every
/// leader, whatever its place in the rotation, gets to propose after a quiet spell.
const IDLE_MS: u64 = 500;

fn block_key(i: usize) -> SecretKey {
    SecretKey::from_bytes(ChainNetwork::Testnet, [i as u8 + 1; 32]).unwrap()
}

fn user(i: usize) -> SecretKey {
    SecretKey::from_bytes(ChainNetwork::Testnet, [100 + i as u8; 32]).unwrap()
}

fn faucet(sk: &SecretKey, nonce: u64) -> SignedTx {
    TxBody {
        chain_id: CHAIN.into(),
        from: sk.address(),
        nonce,
        action: Action::Faucet {
            token: "GOLD".into(),
        },
    }
    .sign(sk)
}

fn transfer(sk: &SecretKey, nonce: u64, to: &SecretKey, amount: u128) -> SignedTx {
    TxBody {
        chain_id: CHAIN.into(),
        from: sk.address(),
        nonce,
        action: Action::Transfer {
            to: to.address(),
            token: "GOLD".into(),
            amount: gamechain_sdk::Amount(amount),
        },
    }
    .sign(sk)
}

struct Node {
    _dir: TempDir,
    chain: Arc<Chain>,
    ledger: Arc<Ledger>,
    genesis: crate::validator::block::ProposedBlock,
    /// Its share of the chain's threshold beacon key.
    beacon: BeaconShare,
}

fn config(dir: &std::path::Path) -> NodeConfig {
    NodeConfig {
        data_dir: dir.to_path_buf(),
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        chain_id: CHAIN.into(),
        rate_limit_per_sec: 0,
        wasm_instances: 2,
        // The simulation plays tic-tac-toe only: the other genesis games would only cost compiles.
        genesis_modules: vec!["tictactoe".into()],
        min_block_interval_ms: INTERVAL_MS,
        max_clock_drift_ms: DRIFT_MS,
        compiled_dir: crate::test_compiled_dir(),
        ..NodeConfig::default()
    }
}

/// `n` data directories of one chain whose genesis names `n` validators and a threshold
/// beacon dealt to them (deterministically); validator `faulty` misbehaves.
fn make_nodes(n: usize, faulty: Option<(usize, Fault)>) -> (Vec<Node>, Vec<PrivateKey>) {
    let consensus: Vec<PrivateKey> = (0..n as u64).map(PrivateKey::from_seed).collect();
    let template_dir = tempfile::tempdir().unwrap();
    let mut genesis = new_genesis(&config(template_dir.path()).ledger(), &block_key(0)).unwrap();
    // The simulated clock starts at the Unix epoch.
    genesis.time_ms = 0;
    genesis.validators = Some(ValidatorSet {
        engine: ENGINE_SIMPLEX.into(),
        set: (0..n)
            .map(|i| GenesisValidator {
                address: block_key(i).address(),
                consensus_key: hex::encode(consensus[i].public_key().as_ref()),
                voting_power: 1,
            })
            .collect(),
        leader_timeout_ms: 1_000,
        certification_timeout_ms: 2_000,
        timeout_retry_ms: 5_000,
    });
    let participants_set = participants(genesis.validators.as_ref().unwrap()).unwrap();
    let dealt = deal(&participants_set, commonware_utils::TestRng::new(n as u64)).unwrap();
    genesis.beacon = Some(BeaconConfig::threshold(
        dealt.public_key.clone(),
        dealt.threshold,
    ));
    genesis.validate().unwrap();
    let nodes = (0..n)
        .map(|i| {
            let dir = tempfile::tempdir().unwrap();
            let cfg = config(dir.path());
            std::fs::write(cfg.ledger().genesis_path(), genesis.to_json_pretty()).unwrap();
            gamechain_chain::key_file::write_key_file(&cfg.ledger().key_path(), &block_key(i))
                .unwrap();
            let opened = open_chain(&cfg.ledger(), None).unwrap();
            let height = opened.head.header.header.height;
            let digest = head_digest(&opened.storage, height).unwrap();
            let genesis_block = genesis_proposal(&opened.storage).unwrap();
            let chain = Arc::new(Chain::new(
                cfg.ledger(),
                opened.ctx,
                opened.genesis_hash,
                opened.head,
                cfg.ledger().db_path(),
                Arc::new(NoSink),
            ));
            let fault = faulty.filter(|(f, _)| *f == i).map(|(_, f)| f);
            let ledger = Arc::new(
                Ledger::new(
                    chain.clone(),
                    block_key(i),
                    opened.storage,
                    opened.sign_state,
                    digest,
                    MAX_PROPOSAL_TX_BYTES,
                    fault,
                )
                .unwrap(),
            );
            let position = participants_set
                .position(&consensus[i].public_key())
                .unwrap();
            Node {
                _dir: dir,
                chain,
                ledger,
                genesis: genesis_block,
                beacon: dealt.shares[position].clone(),
            }
        })
        .collect();
    (nodes, consensus)
}

/// The nodes of a run but `cut_off`.
fn counted(nodes: &[Node], cut_off: Option<usize>) -> impl Iterator<Item = &Node> {
    nodes
        .iter()
        .enumerate()
        .filter(move |(i, _)| Some(*i) != cut_off)
        .map(|(_, n)| n)
}

/// What a run ends with, per validator: (height, header hash, state root) at each height.
type Heads = Vec<BTreeMap<u64, (String, [u8; 32], String, u64)>>;

/// Node 0's heights, each with the simulated time (ms) it was first seen committed.
type Seen = BTreeMap<u64, u64>;

/// Runs `n` validators (seed `seed`) until every one has committed every transaction
/// submitted, then returns their chains and the certificates they stored (height → bytes).
fn init_tracing() {
    if let Ok(filter) = std::env::var("GC_SIM_TRACE") {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_test_writer()
            .try_init();
    }
}

/// One validator's stored certificates, `(height, encoded certificate)`.
type Certificates = Vec<(u64, Vec<u8>)>;

fn run(
    seed: u64,
    n: usize,
    faulty: Option<(usize, Fault)>,
    users: usize,
    partition: bool,
) -> (
    Heads,
    Vec<Certificates>,
    Vec<PublicKey>,
    Seen,
    (Vec<Vec<StoredEvidence>>, Vec<Arc<Chain>>),
) {
    init_tracing();
    let (nodes, consensus) = make_nodes(n, faulty);
    // An equivocating validator is cut off by the others (they block it on the evidence):
    // the run waits for, and compares, the others only.
    let cut_off = match faulty {
        Some((i, Fault::Equivocate)) => Some(i),
        _ => None,
    };

    let cfg = deterministic::Config::new()
        .with_seed(seed)
        .with_timeout(Some(Duration::from_secs(600)));
    let executor = deterministic::Runner::new(cfg);
    executor.start(|context| async move {
        let participants_set =
            participants(nodes[0].chain.genesis().validators.as_ref().unwrap()).unwrap();
        let peers: Vec<PublicKey> = consensus.iter().map(|k| k.public_key()).collect();
        let (network, oracle) = Network::new_with_peers(
            context.child("network"),
            NetConfig {
                max_size: 32 << 20,
                max_peers_per_set: NZUsize!(n),
                disconnect_on_block: true,
                tracked_peer_sets: NZUsize!(1),
            },
            peers.clone(),
        )
        .await;
        network.start();
        let link = Link {
            latency: Duration::from_millis(20),
            jitter: Duration::from_millis(5),
            success_rate: probability!(1.0),
        };
        for a in &peers {
            for b in &peers {
                if a != b {
                    oracle
                        .add_link(a.clone(), b.clone(), link.clone())
                        .await
                        .unwrap();
                }
            }
        }
        let namespace = engine::namespace(CHAIN, &nodes[0].chain.genesis_hash);
        let quota = Quota::per_second(NZU32!(10_000));
        let mut running = Vec::new();
        for (i, node) in nodes.iter().enumerate() {
            let me = consensus[i].public_key();
            let control = oracle.control(me.clone());
            let channels = Channels {
                votes: control.register(0, quota).await.unwrap(),
                certificates: control.register(1, quota).await.unwrap(),
                resolver: control.register(2, quota).await.unwrap(),
                backfill: control.register(3, quota).await.unwrap(),
                broadcast: control.register(4, quota).await.unwrap(),
                gossip: control.register(5, quota).await.unwrap(),
                beacon: control.register(6, quota).await.unwrap(),
            };
            let cfg = EngineConfig {
                namespace: namespace.clone(),
                participants: participants_set.clone(),
                key: consensus[i].clone(),
                start: EngineStart::Genesis(node.genesis.clone()),
                bound: PROPOSAL_BOUND,
                leader_timeout: Duration::from_millis(1_000),
                certification_timeout: Duration::from_millis(2_000),
                timeout_retry: Duration::from_millis(5_000),
                partition: format!("gc_v{i}"),
                block_interval_ms: IDLE_MS,
                archive_retention_blocks: 0,
                archive_compression_level: 3,
                beacon: Some(node.beacon.clone()),
            };
            running.push(
                engine::start(
                    context.child("validator").with_attribute("idx", i),
                    node.ledger.clone(),
                    cfg,
                    channels,
                    control.clone(),
                    oracle.manager(),
                )
                .await,
            );
        }

        // Each user's faucet call and a transfer, sent to one validator's mempool each (the
        // user's), so blocks of several proposers carry them.
        let mut txids = Vec::new();
        let targets: Vec<&Node> = counted(&nodes, cut_off).collect();
        for u in 0..users {
            let node = targets[u % targets.len()];
            let f = faucet(&user(u), 0);
            txids.push(node.chain.submit(f).unwrap());
            let t = transfer(&user(u), 1, &user((u + 1) % users), 5);
            txids.push(node.chain.submit(t).unwrap());
        }
        // Until every validator has committed every transaction.
        let mut rounds = 0u64;
        let mut seen = Seen::new();
        let sim_ms = |c: &deterministic::Context| {
            c.current()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_millis() as u64
        };
        loop {
            rounds += 1;
            let h0 = nodes[0].chain.head().header.header.height;
            let now = sim_ms(&context);
            for h in seen.keys().last().map_or(1, |l| l + 1)..=h0 {
                seen.insert(h, now);
            }
            if rounds.is_multiple_of(200) && std::env::var("GC_SIM_DEBUG").is_ok() {
                let heights: Vec<u64> = nodes
                    .iter()
                    .map(|n| n.chain.head().header.header.height)
                    .collect();
                let pending: Vec<usize> = nodes.iter().map(|n| n.chain.mempool().len()).collect();
                eprintln!("t={rounds}: heights {heights:?} pending {pending:?}");
            }
            let done = counted(&nodes, cut_off).all(|node| {
                txids.iter().all(|t| {
                    matches!(
                        node.chain.tx(t).map(|r| r.status),
                        Ok(gamechain_chain::wire::TxStatus::Included { .. })
                    )
                })
            });
            for r in &running {
                assert_eq!(*r.failed.borrow(), None, "a commit failed");
            }
            let tall =
                counted(&nodes, cut_off).all(|n| n.chain.head().header.header.height >= MIN_HEIGHT);
            if done && tall {
                break;
            }
            context.sleep(Duration::from_millis(50)).await;
        }
        if partition {
            // Split the validators in two halves: neither has a quorum (3 of 4), so no block
            // is made on either side, and nothing forks.
            let before: Vec<u64> = nodes
                .iter()
                .map(|n| n.chain.head().header.header.height)
                .collect();
            let half = n / 2;
            for a in 0..n {
                for b in 0..n {
                    if (a < half) != (b < half) {
                        oracle
                            .remove_link(peers[a].clone(), peers[b].clone())
                            .await
                            .unwrap();
                    }
                }
            }
            let late = faucet(&user(users + 1), 0);
            let late_id = nodes[0].chain.submit(late).unwrap();
            context.sleep(Duration::from_secs(20)).await;
            let during: Vec<u64> = nodes
                .iter()
                .map(|n| n.chain.head().header.header.height)
                .collect();
            // A block already certified before the split may still land; nothing after it.
            for (b, d) in before.iter().zip(&during) {
                assert!(
                    d <= &(b + 1),
                    "a block was made without a quorum: {before:?} -> {during:?}"
                );
            }
            assert!(nodes.iter().all(|node| !matches!(
                node.chain.tx(&late_id).map(|r| r.status),
                Ok(gamechain_chain::wire::TxStatus::Included { .. })
            )));
            // Heal: the transaction sent during the split is included everywhere.
            for a in 0..n {
                for b in 0..n {
                    if (a < half) != (b < half) {
                        oracle
                            .add_link(peers[a].clone(), peers[b].clone(), link.clone())
                            .await
                            .unwrap();
                    }
                }
            }
            loop {
                let done = nodes.iter().all(|node| {
                    matches!(
                        node.chain.tx(&late_id).map(|r| r.status),
                        Ok(gamechain_chain::wire::TxStatus::Included { .. })
                    )
                });
                if done {
                    break;
                }
                context.sleep(Duration::from_millis(50)).await;
            }
        }
        // Let the slowest reach the same height as the fastest.
        let top = counted(&nodes, cut_off)
            .map(|n| n.chain.head().header.header.height)
            .min()
            .unwrap();
        let heads: Heads = counted(&nodes, cut_off)
            .map(|node| {
                (1..=top)
                    .map(|h| {
                        let b = node.chain.block(Some(h)).unwrap();
                        (
                            h,
                            (
                                b.hash_hex(),
                                b.header.header.state_root,
                                b.header.header.sequencer.clone(),
                                b.header.header.time_ms,
                            ),
                        )
                    })
                    .collect()
            })
            .collect();
        // Every stored certificate decodes, verifies against the set under the chain's
        // namespace, and names the digest stored for its height; a changed payload fails.
        let verifier = Scheme::verifier(&namespace, participants_set.clone());
        let mut certs = Vec::new();
        for node in counted(&nodes, cut_off) {
            let mut mine = Vec::new();
            for h in 1..=top {
                let (digest, cert) = node
                    .chain
                    .read_db(|db| db.validator_finality(h))
                    .unwrap()
                    .expect("every committed block has its digest recorded");
                let Some(cert) = cert else { continue };
                let f = Finalization::<Scheme, Digest>::decode_cfg(
                    bytes::BytesMut::from(&cert[..]),
                    &n,
                )
                .unwrap();
                assert_eq!(f.proposal.payload.0, digest, "height {h}");
                let mut rng = context.child("verify");
                assert!(f.verify(&mut rng, &verifier, &Sequential), "height {h}");
                // The same check `gamechain verify` makes.
                let checker = crate::proof::finality::FinalityChecker::new(
                    node.chain.genesis(),
                    &node.chain.genesis_hash,
                )
                .unwrap();
                assert!(checker.check(&digest, &cert).is_ok(), "height {h}");
                assert!(checker.check(&[7; 32], &cert).is_err());
                let mut flipped = cert.clone();
                let last = flipped.len() - 1;
                flipped[last] ^= 1;
                assert!(checker.check(&digest, &flipped).is_err());
                let mut forged = f.clone();
                forged.proposal.payload = Digest([0xAB; 32]);
                assert!(!forged.verify(&mut rng, &verifier, &Sequential));
                mine.push((h, cert));
            }
            certs.push(mine);
        }
        check_follower_gate(&nodes[0], top);
        let evidence = nodes
            .iter()
            .map(|n| n.chain.read_db(|db| db.evidence_page(0, 10_000)).unwrap())
            .collect();
        drop(running);
        (
            heads,
            certs,
            peers,
            seen,
            (evidence, nodes.iter().map(|n| n.chain.clone()).collect()),
        )
    })
}

/// A follower's finality gate over `node`'s blocks 1..=`top` and their stored records: every
/// block up to the last certified one passes, in order, once its certificate (or a
/// descendant's, the block then fetched again and checked against its kept digest) arrives; a
/// damaged certificate or digest, another block the second time, a header not signed by a
/// validator and a block out of order are refused.
fn check_follower_gate(node: &Node, top: u64) {
    use crate::replica::follower_finality::{check_refetched, FinalityGate, GateError, Proven};
    use crate::verify::replay::check_block;
    use crate::verify::source::Finality;
    let chain = &node.chain;
    let checker = Arc::new(
        crate::proof::finality::FinalityChecker::new(chain.genesis(), &chain.genesis_hash).unwrap(),
    );
    let genesis = Arc::new(chain.genesis().clone());
    let digest_at = |h: u64| {
        chain
            .read_db(|db| Ok(crate::proof::digest::digest_at(db, h)))
            .unwrap()
            .unwrap()
    };
    let record = |h: u64| {
        let (digest, certificate) = chain
            .read_db(|db| db.validator_finality(h))
            .unwrap()
            .unwrap();
        Finality {
            digest,
            certificate,
        }
    };
    let block = |h: u64| chain.block(Some(h)).unwrap();
    let checked = |h: u64| check_block(&chain.ctx, block(h), 1);
    let gate_after =
        |h: u64| FinalityGate::new(checker.clone(), genesis.clone(), h, digest_at(h).0);
    // Heights let through by `proven`, its covered blocks fetched again and checked.
    let through = |proven: Proven| -> Vec<u64> {
        let mut heights = Vec::new();
        for (h, parent, digest) in &proven.refetch {
            check_refetched(parent, digest, &block(*h)).unwrap();
            heights.push(*h);
        }
        heights.push(proven.block.block.height());
        heights
    };
    let mut gate = gate_after(0);
    let (mut passed, mut last_certified) = (Vec::new(), 0);
    for h in 1..=top {
        let f = record(h);
        if f.certificate.is_some() {
            last_certified = h;
        }
        if let Some(proven) = gate.admit(checked(h), Some(f)).unwrap() {
            passed.extend(through(proven));
        }
    }
    assert!(last_certified > 0);
    assert_eq!(passed, (1..=last_certified).collect::<Vec<_>>());
    // The first certified block above 1, damaged in several ways, and out of order.
    let h = (2..=top)
        .find(|&h| record(h).certificate.is_some())
        .expect("a certified block above 1");
    let mut flipped = record(h);
    let cert = flipped.certificate.as_mut().unwrap();
    let last = cert.len() - 1;
    cert[last] ^= 1;
    assert!(matches!(
        gate_after(h - 1).admit(checked(h), Some(flipped)),
        Err(GateError::Diverged(_))
    ));
    let mut wrong = record(h);
    wrong.digest[0] ^= 1;
    assert!(matches!(
        gate_after(h - 1).admit(checked(h), Some(wrong)),
        Err(GateError::Diverged(_))
    ));
    let mut unsigned = checked(h);
    unsigned.block.header.signature = block(h - 1).header.signature;
    assert!(matches!(
        gate_after(h - 1).admit(unsigned, Some(record(h))),
        Err(GateError::Diverged(_))
    ));
    assert!(matches!(
        gate_after(h - 2).admit(checked(h), Some(record(h))),
        Err(GateError::Retry(_))
    ));
    // Without a record (or a certificate), block h - 1 waits, and is let through by block h's
    // certificate: fetched again, it must be the same block.
    let mut gate = gate_after(h - 2);
    assert!(gate.admit(checked(h - 1), None).unwrap().is_none());
    let proven = gate.admit(checked(h), Some(record(h))).unwrap().unwrap();
    let (rh, parent, digest) = proven.refetch[0];
    assert_eq!(rh, h - 1);
    assert!(matches!(
        check_refetched(&parent, &digest, &block(h)),
        Err(GateError::Diverged(_))
    ));
    assert_eq!(through(proven), vec![h - 1, h]);
}

fn check_agreement(heads: &Heads) {
    for (i, h) in heads.iter().enumerate().skip(1) {
        assert_eq!(h, &heads[0], "validator {i} disagrees with validator 0");
    }
}

/// Every block of `chain` up to `top` carries a beacon that verifies under the genesis group
/// key for its height (and not for the next), each a different one.
fn check_beacons(chain: &Chain, top: u64) {
    let genesis = chain.genesis();
    assert!(genesis.beacon.as_ref().unwrap().threshold == Some(3));
    let mut seen = std::collections::BTreeSet::new();
    for h in 1..=top {
        let block = chain.block(Some(h)).unwrap();
        let beacon = block
            .header
            .header
            .beacon
            .expect("every block carries a beacon");
        genesis.check_beacon(h, Some(&beacon)).unwrap();
        assert!(genesis.check_beacon(h + 1, Some(&beacon)).is_err());
        assert!(seen.insert(beacon.0), "block {h} repeats a beacon");
    }
}

/// The beacon counters of `chain`'s validator: (released, recovered, valid shares received).
fn beacon_counts(chain: &Chain) -> (u64, u64, u64) {
    let m = chain.metrics.consensus();
    (
        m.beacon_released.get(),
        m.beacon_recovered.get(),
        m.beacon_shares.with_label_values(&["valid"]).get(),
    )
}

#[test]
fn four_validators_agree_on_every_block_and_certificates_verify() {
    let (heads, certs, peers, seen, (_, chains)) = run(1, 4, None, 12, false);
    check_agreement(&heads);
    check_beacons(&chains[0], heads[0].len() as u64);
    for c in &chains {
        let (released, recovered, valid) = beacon_counts(c);
        assert!(
            released > 0 && recovered > 0 && valid > 0,
            "{:?}",
            (released, recovered, valid)
        );
    }
    check_block_times(&heads[0], &seen);
    let proposers: std::collections::BTreeSet<&String> =
        heads[0].values().map(|(_, _, p, _)| p).collect();
    assert!(
        proposers.len() >= 2,
        "blocks come from several proposers: {proposers:?}"
    );
    assert!(
        certs.iter().all(|c| !c.is_empty()),
        "every validator stored certificates"
    );
    let _ = peers;
}

#[test]
fn a_proposer_lying_about_the_state_root_never_gets_a_block_finalized() {
    let (heads, _, _, _, _) = run(2, 4, Some((3, Fault::BadStateRoot)), 8, false);
    check_agreement(&heads);
    let liar = block_key(3).address();
    assert!(
        heads[0].values().all(|(_, _, p, _)| *p != liar),
        "no block of the lying validator is final"
    );
}

/// Every block keeps the spacing rule, and its time is close to when it was committed: within
/// the drift window behind (a proposal is voted on within it) and never ahead of the clock
/// beyond it.
fn check_block_times(heads: &BTreeMap<u64, (String, [u8; 32], String, u64)>, seen: &Seen) {
    let mut parent_time = None;
    for (h, (_, _, proposer, time)) in heads {
        if let Some(p) = parent_time {
            assert!(
                *time >= p + INTERVAL_MS,
                "block {h} is closer than the interval"
            );
        }
        parent_time = Some(*time);
        let Some(at) = seen.get(h) else { continue };
        // Seen up to one sampling step (50 ms) and a few hops (20–25 ms each) after the votes.
        assert!(
            *time <= at + DRIFT_MS,
            "block {h} by {proposer} is stamped {time}, ahead of its commit at {at}"
        );
        assert!(
            at.saturating_sub(*time) <= DRIFT_MS + 100,
            "block {h} by {proposer} is stamped {time}, {} ms before its commit at {at}",
            at - time
        );
    }
}

#[test]
fn a_proposer_whose_clock_stopped_is_refused_and_the_chain_goes_on() {
    // Its blocks would carry the least time the spacing allows, however long ago: after each
    // quiet spell that is far behind every other clock. The views it leads pass; every
    // transaction is still included, and every final block is close to real time.
    let (heads, _, _, seen, _) = run(4, 4, Some((3, Fault::FrozenClock)), 8, false);
    check_agreement(&heads);
    check_block_times(&heads[0], &seen);
}

#[test]
fn a_proposer_whose_clock_runs_ahead_never_gets_a_block_finalized() {
    let (heads, _, _, seen, _) = run(5, 4, Some((3, Fault::FastClock)), 8, false);
    check_agreement(&heads);
    check_block_times(&heads[0], &seen);
    let fast = block_key(3).address();
    assert!(
        heads[0].values().all(|(_, _, p, _)| *p != fast),
        "no block stamped ahead of the others' clocks is final"
    );
}

#[test]
fn many_schedules_one_chain() {
    // Other seeds: other message timings and leaders; each run must still agree everywhere.
    for seed in 10..14 {
        let (heads, _, _, seen, _) = run(seed, 4, None, 6, false);
        check_block_times(&heads[0], &seen);
        check_agreement(&heads);
    }
}

#[test]
fn a_partition_halts_the_chain_without_a_fork_and_healing_resumes_it() {
    let (heads, _, _, _, _) = run(3, 4, None, 4, true);
    check_agreement(&heads);
}

#[test]
fn an_equivocating_validator_is_recorded_by_the_others_and_the_evidence_verifies() {
    // Validator 3 follows each of its notarize and finalize votes with a conflicting one. The
    // others detect it, check and store the evidence, cut it off, and go on as three.
    let (heads, _, _, _, (evidence, chains)) = run(6, 4, Some((3, Fault::Equivocate)), 6, false);
    check_agreement(&heads);
    let chain = &chains[0];
    let checker =
        crate::proof::evidence::EvidenceChecker::new(chain.genesis(), &chain.genesis_hash).unwrap();
    let faulty = participants(chain.genesis().validators.as_ref().unwrap())
        .unwrap()
        .position(&PrivateKey::from_seed(3).public_key())
        .unwrap() as u32;
    let mut recorded = 0;
    for (i, records) in evidence.iter().enumerate().take(3) {
        assert!(!records.is_empty(), "validator {i} stored no evidence");
        for e in records {
            let proven = checker.check_record(e).unwrap();
            assert_eq!(proven.signer, faulty, "validator {i}: {e:?}");
            assert!(
                e.kind == "conflicting_notarize" || e.kind == "conflicting_finalize",
                "{e:?}"
            );
            // A stored record with a byte of a signature changed proves nothing.
            let mut damaged = e.clone();
            let last = damaged.data.len() - 1;
            damaged.data[last] ^= 1;
            assert!(checker.check_record(&damaged).is_err());
            recorded += 1;
        }
        assert!(records.len() <= gamechain_ledger::storage::MAX_EVIDENCE_PER_SIGNER);
    }
    assert!(recorded >= 3);
}

#[test]
fn a_validator_withholding_its_beacon_share_does_not_stop_the_beacon() {
    // Three shares of four recover every beacon: validator 3 never releases its own, and still
    // proposes with the beacons the others recover.
    let (heads, _, _, _, (_, chains)) = run(7, 4, Some((3, Fault::WithholdBeacon)), 8, false);
    check_agreement(&heads);
    check_beacons(&chains[0], heads[0].len() as u64);
    let (released, recovered, _) = beacon_counts(&chains[3]);
    assert_eq!(released, 0, "validator 3 released no share");
    assert!(
        recovered > 0,
        "validator 3 recovered beacons from the others' shares"
    );
    for c in &chains[..3] {
        assert!(beacon_counts(c).0 > 0);
    }
}

#[test]
fn a_proposer_with_a_wrong_beacon_never_gets_a_block_finalized() {
    // Validator 3 replays its parent's beacon (a genuine group signature, of another height):
    // the others' execution refuses its proposals, and the chain goes on with theirs.
    let (heads, _, _, _, (_, chains)) = run(8, 4, Some((3, Fault::WrongBeacon)), 8, false);
    check_agreement(&heads);
    check_beacons(&chains[0], heads[0].len() as u64);
    let liar = block_key(3).address();
    assert!(
        heads[0].values().all(|(_, _, p, _)| *p != liar),
        "no block with a wrong beacon is final"
    );
}
