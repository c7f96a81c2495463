//! `gamechain node --validator`: a validator's consensus over TCP, in place of the sequencer.
//!
//! The node's API, WebSocket and database work as on a sequencer (`server/node.rs`); what
//! makes blocks is this: Commonware's tokio runtime on its own thread (its storage in
//! `<data>/consensus/`), the authenticated p2p transport (`lookup`: every validator's consensus
//! key and address, an IP or a DNS name, are configured; connections are encrypted and
//! authenticated with the consensus keys, and only keys of the genesis set are accepted; its
//! preset and name resolution are `p2p.rs`), and the engine of
//! `engine.rs`. [`run`] returns when the node shuts down (the runtime is stopped and its thread
//! joined) or fails when committing a finalized block failed.
//!
//! Checked at start, each with its own error: the genesis names validators; `[validator]` is
//! configured; `<data>/consensus.key` is a key of the set and belongs to the same validator as
//! the block-signing key; every configured peer is another validator of the set; on a chain
//! whose genesis names a threshold beacon, `<data>/beacon_share.json` is this validator's share
//! of the genesis group key (`beacon/share.rs`).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use commonware_cryptography::ed25519::PublicKey;
use commonware_cryptography::{ChaCha20Poly1305, Signer as _};
use commonware_p2p::authenticated::lookup;
use commonware_p2p::{Address, AddressableManager as _};
use commonware_runtime::{
    tokio as cw_tokio, Clock as _, Metrics as _, Quota, Runner as _, Spawner as _, Supervisor as _,
};
use commonware_stream::{cups, sake};
use commonware_utils::ordered::Map;
use commonware_utils::NZU32;
use tokio::sync::watch;

use gamechain_runtime::chain::SecretKey;

use crate::config::ValidatorConfig;
use crate::validator::engine::{self, Channels, EngineConfig, EngineStart};
use crate::validator::keys;
use crate::validator::ledger::{Fault, Ledger};
use crate::validator::p2p;
use crate::validator::rejoin;
use crate::validator::{genesis_proposal, head_digest, MAX_PROPOSAL_TX_BYTES, PROPOSAL_BOUND};
use gamechain_ledger::chain::Chain;
use gamechain_ledger::sign_state::SignStateFile;
use gamechain_ledger::storage::Storage;
use gamechain_ledger::NodeError;

/// Largest p2p message: a block at [`PROPOSAL_BOUND`] with marshal's framing and a certificate.
pub const MAX_P2P_MESSAGE: u32 = (PROPOSAL_BOUND.max_bytes + (1 << 20)) as u32;

/// Messages per second a peer may send on each consensus channel.
pub const CONSENSUS_QUOTA: u32 = 1_000;

/// Transactions per second a peer may gossip.
pub const GOSSIP_QUOTA: u32 = 2_000;

pub use crate::validator::beacon::BEACON_QUOTA;

/// How long a stopping runtime waits for its tasks.
const STOP_GRACE: Duration = Duration::from_secs(3);

/// A test facility: misbehaviour from the environment (`GAMECHAIN_TEST_FAULT=bad_state_root`:
/// this validator proposes blocks whose header claims a wrong state root; `deploy_flood`: it
/// fills the blocks it proposes with code; `equivocate`: it signs conflicting votes;
/// `withhold_beacon`: it never releases its beacon share; `wrong_beacon`: it proposes blocks
/// with a beacon of another height). Available in every
/// build, so that the process tests hold in release builds too; it only harms the validator
/// that sets it (the others vote against its proposals, none of which becomes final), and it
/// is logged loudly at start. Any other value is refused, so a typo never runs honestly by
/// surprise. Errors: an unknown value ([`NodeError::Refused`]).
fn fault_from_env() -> Result<Option<Fault>, NodeError> {
    let fault = match std::env::var("GAMECHAIN_TEST_FAULT") {
        Err(_) => return Ok(None),
        Ok(v) if v == "bad_state_root" => Fault::BadStateRoot,
        Ok(v) if v == "deploy_flood" => Fault::DeployFlood,
        Ok(v) if v == "equivocate" => Fault::Equivocate,
        Ok(v) if v == "withhold_beacon" => Fault::WithholdBeacon,
        Ok(v) if v == "wrong_beacon" => Fault::WrongBeacon,
        Ok(v) => {
            let known = "bad_state_root, deploy_flood, equivocate, withhold_beacon, wrong_beacon";
            return Err(NodeError::Refused(format!(
                "GAMECHAIN_TEST_FAULT={v}: unknown test fault (known: {known})"
            )));
        }
    };
    tracing::error!(
        ?fault,
        "GAMECHAIN_TEST_FAULT is set: this validator MISBEHAVES ON PURPOSE (a test facility); \
         its proposals will be voted against and it will not make blocks. Unset it to run honestly"
    );
    eprintln!(
        "WARNING: GAMECHAIN_TEST_FAULT={fault:?}: this validator misbehaves on purpose \
         (a test facility)"
    );
    Ok(Some(fault))
}

/// Marshal's unprunable archives of data directories from before pruning (`engine.rs`): no
/// longer read.
const OLD_ARCHIVE_PARTITIONS: [&str; 10] = [
    "gc-finalizations-metadata",
    "gc-finalizations-freezer-table",
    "gc-finalizations-freezer-key",
    "gc-finalizations-freezer-value",
    "gc-finalizations-ordinal",
    "gc-blocks-metadata",
    "gc-blocks-freezer-table",
    "gc-blocks-freezer-key",
    "gc-blocks-freezer-value",
    "gc-blocks-ordinal",
];

/// Logs the old archives under `storage_dir` that may be deleted, if any.
fn warn_old_archives(storage_dir: &std::path::Path) {
    let old: Vec<&str> = OLD_ARCHIVE_PARTITIONS
        .into_iter()
        .filter(|p| storage_dir.join(p).is_dir())
        .collect();
    if !old.is_empty() {
        tracing::warn!(
            dir = %storage_dir.display(),
            partitions = ?old,
            "consensus archives of an older gamechain (unpruned, uncompressed) are no longer read: \
             they may be deleted while the node is stopped (the database holds every block)"
        );
    }
}

/// Runs this validator until `shutdown` turns true (module docs). Errors: a start check failed,
/// or committing a finalized block failed (the node must stop).
pub async fn run(
    chain: Arc<Chain>,
    storage: Storage,
    sign_state: SignStateFile,
    key: SecretKey,
    validator: Option<ValidatorConfig>,
    mut shutdown: watch::Receiver<bool>,
) -> Result<(), NodeError> {
    let config = chain.config.clone();
    let set = chain.genesis().validators.clone().ok_or_else(|| {
        NodeError::Refused(
            "--validator: this chain's genesis names no validators (a sequencer chain)".into(),
        )
    })?;
    let vc = validator.ok_or_else(|| {
        NodeError::Refused(
            "this chain is run by validators: configure [validator] (p2p_listen, peers) and start \
             with --validator"
                .into(),
        )
    })?;
    let consensus_key = keys::read(&config.data_dir)?;
    let me = consensus_key.public_key();
    let my_bytes: [u8; 32] = me.as_ref().try_into().expect("32-byte key");
    match set.by_consensus_key(&my_bytes) {
        None => {
            return Err(NodeError::Refused(format!(
                "{} holds the consensus key {}, which is not in the genesis set",
                config.data_dir.join(keys::CONSENSUS_KEY_FILE).display(),
                hex::encode(my_bytes)
            )))
        }
        Some(v) if v.address != key.address() => {
            return Err(NodeError::Refused(format!(
                "the consensus key belongs to validator {}, the block-signing key is {}",
                v.address,
                key.address()
            )))
        }
        Some(_) => {}
    }
    let participants = keys::participants(&set)?;
    let mut peers: Vec<(PublicKey, crate::config::peer_addr::PeerAddr)> = Vec::new();
    let mut seen = BTreeSet::from([my_bytes]);
    for (peer, addr) in vc.parsed_peers().map_err(NodeError::Config)? {
        if set.by_consensus_key(&peer).is_none() {
            return Err(NodeError::Refused(format!(
                "validator.peers names {}, which is not a consensus key of the genesis set",
                hex::encode(peer)
            )));
        }
        if !seen.insert(peer) {
            return Err(NodeError::Refused(format!(
                "validator.peers names {} twice (or this validator's own key)",
                hex::encode(peer)
            )));
        }
        let pk = participants
            .iter()
            .find(|p| p.as_ref() == peer.as_slice())
            .expect("in the set")
            .clone();
        peers.push((pk, addr));
    }
    // Names resolved now, for the address their connections must come from (`p2p.rs`).
    let peer_addresses = p2p::resolve_all(&peers).await;
    let mut addresses: Vec<(PublicKey, Address)> = vec![(me.clone(), vc.p2p_listen.into())];
    addresses.extend(peer_addresses.iter().cloned());
    let peer_map: Map<PublicKey, Address> = Map::try_from(addresses)
        .map_err(|_| NodeError::Refused("validator.peers lists a key twice".into()))?;
    let preset = if p2p::is_production(vc.p2p_listen) {
        "production"
    } else {
        "local"
    };
    tracing::info!(
        listen = %vc.p2p_listen,
        preset = %preset,
        peers = %vc.peers.len(),
        "validator p2p transport"
    );

    let me_index = participants
        .position(&me)
        .expect("the key is in the set (checked above)") as u32;
    let beacon = crate::validator::beacon::share::load(
        &config.data_dir,
        chain.genesis(),
        set.set.len(),
        me_index,
    )?;
    let Some((storage, floor)) =
        rejoin::consensus_floor(&chain, storage, (me_index, &my_bytes), &mut shutdown).await?
    else {
        return Ok(());
    };
    let height = chain.head().header.header.height;
    let digest = head_digest(&storage, height)?;
    let start = engine_start(&chain, &storage, floor)?;
    let namespace = engine::namespace(&chain.genesis().chain_id, &chain.genesis_hash);
    let ledger = Arc::new(Ledger::new(
        chain.clone(),
        key,
        storage,
        sign_state,
        digest,
        MAX_PROPOSAL_TX_BYTES,
        fault_from_env()?,
    )?);
    let engine_config = EngineConfig {
        namespace: namespace.clone(),
        participants: participants.clone(),
        key: consensus_key.clone(),
        start,
        bound: PROPOSAL_BOUND,
        leader_timeout: Duration::from_millis(set.leader_timeout_ms),
        certification_timeout: Duration::from_millis(set.certification_timeout_ms),
        timeout_retry: Duration::from_millis(set.timeout_retry_ms),
        partition: "gc".into(),
        block_interval_ms: config.block_interval_ms,
        archive_retention_blocks: vc.archive_retention_blocks,
        archive_compression_level: vc.archive_compression_level,
        beacon,
    };
    let p2p_config = p2p::config(
        cups::Cups::<_, ChaCha20Poly1305>::new(
            sake::Sake {
                signer: consensus_key,
                synchrony_bound: Duration::from_secs(5),
                max_handshake_age: Duration::from_secs(10),
                version: sake::Version::V1,
            },
            cups::Version::V1,
        ),
        &[namespace.as_slice(), b"/p2p"].concat(),
        vc.p2p_listen,
        std::num::NonZeroUsize::new(set.set.len()).expect("a set is not empty"),
        MAX_P2P_MESSAGE,
        vc.allow_private_ips,
    );
    let storage_dir = config.data_dir.join("consensus");
    let data_dir = config.data_dir.clone();
    warn_old_archives(&storage_dir);
    let metrics_chain = chain.clone();
    let (failed_tx, mut failed) = watch::channel::<Option<String>>(None);
    let stop = shutdown.clone();
    let thread =
        std::thread::Builder::new()
            .name("consensus".into())
            .spawn(move || {
                let runner = cw_tokio::Runner::new(
                    cw_tokio::Config::new()
                        .with_storage_directory(storage_dir)
                        .with_worker_threads(2)
                        .with_catch_panics(false),
                );
                runner.start(|context| async move {
                let (mut network, mut oracle) =
                    lookup::Network::new(context.child("network"), p2p_config);
                oracle.track(0, peer_map);
                context.child("dns").spawn({
                    let oracle = oracle.clone();
                    move |ctx| p2p::refresh(ctx, oracle, peers, peer_addresses)
                });
                let consensus = Quota::per_second(NZU32!(CONSENSUS_QUOTA));
                let channels = Channels {
                    votes: network.register(0, consensus),
                    certificates: network.register(1, consensus),
                    resolver: network.register(2, consensus),
                    backfill: network.register(3, consensus),
                    broadcast: network.register(4, consensus),
                    gossip: network.register(5, Quota::per_second(NZU32!(GOSSIP_QUOTA))),
                    beacon: network.register(6, Quota::per_second(NZU32!(BEACON_QUOTA))),
                };
                network.start();
                // Connected peers, from the p2p tracker's metric (one series per connected
                // peer), every second into `gamechain_consensus_peers`.
                let peers_ctx = context.child("peers");
                let peers_chain = metrics_chain;
                context.child("peers_task").spawn(move |_| async move {
                    loop {
                        let n = connected_peers(&peers_ctx.encode());
                        peers_chain.metrics.consensus().peers.set(n as i64);
                        peers_ctx.sleep(Duration::from_secs(1)).await;
                    }
                });
                let running = engine::start(
                    context.child("validator"),
                    ledger,
                    engine_config,
                    channels,
                    oracle.clone(),
                    oracle,
                )
                .await;
                tracing::info!("validator consensus running");
                // The journal's owner is marked once it holds something (`rejoin.rs`).
                let (marker_dir, marker_key) = (data_dir.clone(), hex::encode(my_bytes));
                context.child("journal_marker").spawn(move |ctx| async move {
                    loop {
                        match rejoin::mark_if_journaled(&marker_dir, &marker_key) {
                            Ok(true) => break,
                            Ok(false) => {}
                            Err(e) => tracing::warn!("consensus journal marker: {e}"),
                        }
                        ctx.sleep(Duration::from_secs(1)).await;
                    }
                });
                let mut commit_failed = running.failed.clone();
                let mut stop = stop;
                let failure = tokio::select! {
                    _ = stop.wait_for(|s| *s) => None,
                    f = commit_failed.wait_for(|f| f.is_some()) => f.ok().and_then(|f| f.clone()),
                };
                if let Some(f) = failure {
                    let _ = failed_tx.send(Some(f));
                }
                let _ = context.stop(0, Some(STOP_GRACE)).await;
            });
            })
            .map_err(|e| NodeError::Runtime(format!("cannot start the consensus thread: {e}")))?;
    let stopping = shutdown.clone();
    let failure = tokio::select! {
        _ = shutdown.wait_for(|s| *s) => None,
        f = failed.wait_for(|f| f.is_some()) => match f {
            Ok(f) => Some(f.clone().unwrap_or_default()),
            // The consensus thread ended without reporting a failure: it saw the shutdown
            // first (this task, slow to be polled, finds both ready), or it died.
            Err(_) if *stopping.borrow() => None,
            Err(_) => Some("the consensus thread stopped".into()),
        },
    };
    let result = match failure {
        None => Ok(()),
        Some(f) => Err(NodeError::Refused(format!(
            "committing a finalized block failed: {f}"
        ))),
    };
    // The runtime stops once it sees the shutdown (or has stopped after the failure).
    let _ = tokio::task::spawn_blocking(move || thread.join()).await;
    result
}

/// Where this validator's consensus starts: block 0 when `floor` is 0 (the database holds the
/// chain from genesis and its journal); else the first block at or above `floor` (the base of
/// a directory that joined from a snapshot, or the floor a rejoin found: `rejoin.rs`) and the
/// oldest block kept (pruning may have deleted the floor) that carries a finality certificate
/// of its own, from that certificate, checked again here against the genesis set (the engine
/// would panic on one that does not verify). Errors: the database failed, or no block from
/// there to the head has a certificate of its own (`NodeError::Refused`).
fn engine_start(chain: &Chain, storage: &Storage, floor: u64) -> Result<EngineStart, NodeError> {
    if floor == 0 {
        return Ok(EngineStart::Genesis(genesis_proposal(storage)?));
    }
    let head = chain.head().header.header.height;
    let mut at = floor.max(storage.oldest_height()?.unwrap_or(0));
    let (floor, digest, certificate) = loop {
        match storage.validator_finality(at)? {
            Some((digest, Some(certificate))) => break (at, digest, certificate),
            _ if at < head => at += 1,
            _ => {
                return Err(NodeError::Refused(format!(
                    "consensus starts from block {floor} (a snapshot's base, or a rejoin's \
                     floor), but no block from there to the head {head} has a finality \
                     certificate of its own stored, and consensus cannot start without one"
                )))
            }
        }
    };
    let refused = |what: String| {
        NodeError::Refused(format!(
            "consensus starts from block {floor} (a snapshot's base, or a rejoin's floor): {what}"
        ))
    };
    let checker =
        crate::proof::finality::FinalityChecker::new(chain.genesis(), &chain.genesis_hash)
            .map_err(refused)?;
    let base = checker
        .finalization(&digest, &certificate)
        .map_err(|e| refused(format!("its stored finality certificate: {e}")))?;
    if base.proposal.round.epoch() != commonware_consensus::types::Epoch::zero()
        || base.proposal.round.view().get() == 0
    {
        return Err(refused(format!(
            "its finality certificate is of round {:?}, not of a view of epoch 0",
            base.proposal.round
        )));
    }
    tracing::info!(
        height = floor,
        view = base.proposal.round.view().get(),
        "consensus starts from a finalized block (a snapshot's base, or a rejoin's floor)"
    );
    Ok(EngineStart::Floor(base))
}

/// How many peers the p2p tracker lists as connected in `encoded` (the runtime's metrics):
/// the samples of its `network_tracker_…connected{peer=…}` family (named
/// `network_tracker_directory_connected` by commonware-p2p 2026.10).
fn connected_peers(encoded: &str) -> usize {
    encoded
        .lines()
        .filter(|l| !l.starts_with('#') && l.contains("tracker") && l.contains("_connected{peer="))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connected_peers_are_the_tracker_series() {
        let text = "# HELP network_tracker_directory_connected Unix timestamp\n\
                    # TYPE network_tracker_directory_connected gauge\n\
                    network_tracker_directory_connected{peer=\"aa\"} 1764700000000\n\
                    network_tracker_directory_connected{peer=\"bb\"} 1764700000001\n\
                    network_tracker_directory_limits_total{peer=\"aa\"} 1\n\
                    network_tracker_tracked 3\n";
        assert_eq!(connected_peers(text), 2);
        assert_eq!(connected_peers(""), 0);
    }

    #[test]
    fn the_p2p_message_bound_holds_a_block_at_its_bound() {
        assert!(MAX_P2P_MESSAGE as usize > PROPOSAL_BOUND.max_bytes + 4 + 32);
    }
}
