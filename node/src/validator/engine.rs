//! Wiring one validator's consensus: Commonware's simplex engine (votes, certificates), marshal
//! (block dissemination, backfill, finalized blocks in height order) with its inline wrapper
//! around [`App`], and the committer that writes finalized blocks to the node's database. The
//! same code runs over the deterministic simulator in tests and over TCP in `gamechain node
//! --validator` (`run.rs`); the caller registers the network channels ([`Channels`]).
//!
//! The engine reports its activity to marshal's wrapper and to the observer (`observer.rs`:
//! evidence of conflicting votes, consensus metrics); votes leave through `equivocate.rs`'s
//! sender.
//!
//! Channels, each with its own rate quota at the network layer: 0 votes, 1 certificates, 2 the
//! engine's certificate resolver, 3 marshal's block backfill, 4 block broadcast, 5 transaction
//! gossip (`gossip.rs`), 6 beacon shares (`beacon/`: on a chain whose genesis names a
//! threshold beacon, the beacon task runs over it; the observer hands it certified blocks).
//!
//! Start: from block 0 (`Floor::Genesis`, marshal's `Start::Genesis`), or for a data directory
//! that joined from a snapshot from its base's own finality certificate (`Floor::Finalized`,
//! `Start::Floor`; [`EngineStart`]).
//!
//! Storage: the engine's write-ahead log and marshal's archives live in the runtime's storage
//! (a directory under `<data>/consensus/` for a node), in partitions prefixed `gc`. Marshal's two
//! archives (finalized blocks, finalization certificates by height) are prunable archives whose
//! values are zstd-compressed ([`EngineConfig::archive_compression_level`]); the committer
//! prunes them to [`EngineConfig::archive_retention_blocks`] below the head (the node's database
//! keeps every block: these copies only serve peers that catch up). Data directories from before
//! pruning hold unprunable archives in partitions `gc-finalizations-*` and `gc-blocks-*`: they
//! are no longer read, and a start logs that they may be deleted.

use std::num::{NonZeroU16, NonZeroU64, NonZeroUsize};
use std::sync::Arc;
use std::time::Duration;

use commonware_broadcast::buffered;
use commonware_consensus::marshal::core::{Actor as MarshalActor, Mailbox};
use commonware_consensus::marshal::resolver::p2p as marshal_resolver;
use commonware_consensus::marshal::standard::{Inline, Standard};
use commonware_consensus::marshal::{Config as MarshalConfig, Start};
use commonware_consensus::simplex::types::Finalization;
use commonware_consensus::simplex::{
    self, elector::RoundRobin, scheme::ed25519::Scheme, ForwardPolicy, SkipBudget, SkipPolicy,
};
use commonware_consensus::types::{Epoch, FixedEpocher, ViewDelta};
use commonware_consensus::Reporters;
use commonware_cryptography::certificate::ConstantProvider;
use commonware_cryptography::ed25519::{PrivateKey, PublicKey};
use commonware_cryptography::sha256::Digest;
use commonware_cryptography::{Sha256, Signer as _};
use commonware_p2p::{Blocker, Provider, Receiver, Sender};
use commonware_parallel::Sequential;
use commonware_runtime::buffer::paged::CacheRef;
use commonware_runtime::{Clock, Handle, Metrics, Spawner, Storage, Supervisor};
use commonware_storage::archive::prunable;
use commonware_storage::translator::EightCap;
use commonware_utils::ordered::Set;
use commonware_utils::NZDuration;
use rand_core::CryptoRng;
use tokio::sync::watch;

use crate::proof::evidence::EvidenceChecker;
use crate::validator::app::{run_committer, App, Finalizer, ARCHIVE_SECTION};
use crate::validator::beacon::{self, share::BeaconShare, CERTIFIED_QUEUE};
use crate::validator::block::{BlockBound, ProposedBlock};
use crate::validator::equivocate::VoteSender;
use crate::validator::gossip::{self, GOSSIP_QUEUE};
use crate::validator::ledger::{Fault, Ledger};
use crate::validator::observer::{run_evidence, AsConsensus, Observer};

pub use crate::proof::finality::namespace;

/// One network channel: its sender and receiver.
pub type Channel<S, R> = (S, R);

/// The seven channels of one validator (module docs).
pub struct Channels<S, R> {
    /// Votes.
    pub votes: Channel<S, R>,
    /// Certificates.
    pub certificates: Channel<S, R>,
    /// The engine's certificate resolver.
    pub resolver: Channel<S, R>,
    /// Marshal's backfill.
    pub backfill: Channel<S, R>,
    /// Block broadcast.
    pub broadcast: Channel<S, R>,
    /// Transaction gossip.
    pub gossip: Channel<S, R>,
    /// Beacon shares.
    pub beacon: Channel<S, R>,
}

/// Consensus settings of one validator (the set's timeouts come from genesis).
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// The consensus namespace ([`namespace`]).
    pub namespace: Vec<u8>,
    /// The validators' consensus keys.
    pub participants: Set<PublicKey>,
    /// This validator's consensus key.
    pub key: PrivateKey,
    /// Where consensus starts: block 0, or the finalized base of a data directory that joined
    /// from a snapshot.
    pub start: EngineStart,
    /// Bounds on blocks read from peers.
    pub bound: BlockBound,
    /// Wait for the leader's proposal.
    pub leader_timeout: Duration,
    /// Wait for a view's certificate.
    pub certification_timeout: Duration,
    /// Between retries of a timed-out view.
    pub timeout_retry: Duration,
    /// Prefix of the storage partitions (`[A-Za-z0-9_-]`).
    pub partition: String,
    /// Longest time between two blocks when no transaction comes, ms (`block_interval_ms`).
    pub block_interval_ms: u64,
    /// Finalized blocks below the head that marshal's archives keep (`0`: all).
    pub archive_retention_blocks: u64,
    /// zstd level of the archives' values.
    pub archive_compression_level: u8,
    /// This validator's beacon share, on a chain whose genesis names a threshold beacon
    /// (`beacon/share.rs`, checked at start); `None` otherwise.
    pub beacon: Option<BeaconShare>,
}

/// Where a validator's consensus starts ([`EngineConfig::start`]).
#[derive(Debug, Clone)]
pub enum EngineStart {
    /// From block 0 as consensus carries it (a data directory that holds the chain from
    /// genesis).
    Genesis(ProposedBlock),
    /// From a finalized block above 0: the base of a data directory that joined from a
    /// snapshot (`replica/snapshot_join.rs`), its own finality certificate decoded and checked
    /// against the set. Simplex starts at its view (`Floor::Finalized`); marshal takes it as
    /// its floor (`Start::Floor`): it fetches the block itself from its peers by the
    /// certificate's digest, stores it, and delivers it as the first finalized block (the
    /// ledger finds it committed already: a redelivery), then the blocks above it in order.
    /// A restart passes the same base again; simplex's journal and marshal's processed height,
    /// both above it by then, win over it.
    Floor(Finalization<Scheme, Digest>),
}

/// The running parts of a validator's consensus.
pub struct Running {
    /// Marshal's mailbox (finalizations by height, blocks).
    pub marshal: Mailbox<Scheme, Standard<ProposedBlock>>,
    /// Set when committing a finalized block failed: the node must stop.
    pub failed: watch::Receiver<Option<String>>,
    /// The engine's task.
    pub engine: Handle<()>,
}

fn nz(n: usize) -> NonZeroUsize {
    NonZeroUsize::new(n).expect("a nonzero constant")
}

/// One of marshal's prunable archives, in partitions `<prefix>-<name>-*`, its values compressed
/// at zstd `level`.
fn archive_config<C>(
    prefix: &str,
    name: &str,
    page_cache: &CacheRef,
    level: u8,
    codec_config: C,
) -> prunable::Config<EightCap, C> {
    prunable::Config {
        translator: EightCap,
        metadata_partition: format!("{prefix}-{name}-metadata"),
        key_partition: format!("{prefix}-{name}-key"),
        key_page_cache: page_cache.clone(),
        value_partition: format!("{prefix}-{name}-value"),
        compression: Some(level),
        codec_config,
        items_per_section: NonZeroU64::new(ARCHIVE_SECTION).expect("nonzero"),
        key_write_buffer: nz(1 << 20),
        value_write_buffer: nz(1 << 20),
        replay_buffer: nz(1 << 20),
    }
}

/// Starts marshal, the simplex engine and the committer for `ledger` on `rt`, over
/// `channels`; `blocker` and `peers` come from the network.
pub async fn start<E, S, R, B, P>(
    rt: E,
    ledger: Arc<Ledger>,
    config: EngineConfig,
    channels: Channels<S, R>,
    blocker: B,
    peers: P,
) -> Running
where
    E: Spawner + Clock + Metrics + Storage + CryptoRng + Supervisor + Send + Sync + 'static,
    S: Sender<PublicKey = PublicKey>,
    R: Receiver<PublicKey = PublicKey>,
    B: Blocker<PublicKey = PublicKey> + Clone,
    P: Provider<PublicKey = PublicKey> + Clone,
{
    let me = config.key.public_key();
    let scheme = Scheme::signer(
        &config.namespace,
        config.participants.clone(),
        config.key.clone(),
    )
    .expect("this validator's key is in the set (checked at start)");
    let page_cache = CacheRef::new(NonZeroU16::new(4096).expect("nonzero"), nz(64));
    let prefix = &config.partition;

    // Marshal: two archives, the buffered broadcast and the backfill resolver.
    let level = config.archive_compression_level;
    let finalizations = prunable::Archive::init(
        rt.child("finalizations"),
        archive_config(
            prefix,
            "finalizations-by-height",
            &page_cache,
            level,
            <Scheme as commonware_cryptography::certificate::Verifier>::certificate_codec_config_unbounded(),
        ),
    )
    .await
    .expect("the finalizations archive opens");
    let blocks = prunable::Archive::init(
        rt.child("blocks"),
        archive_config(prefix, "finalized-blocks", &page_cache, level, config.bound),
    )
    .await
    .expect("the blocks archive opens");

    let provider = ConstantProvider::<Scheme, Epoch>::new(Scheme::verifier(
        &config.namespace,
        config.participants.clone(),
    ));
    let marshal_config = MarshalConfig {
        provider,
        epocher: FixedEpocher::new(NonZeroU64::new(u64::MAX).expect("nonzero")),
        start: match &config.start {
            EngineStart::Genesis(genesis) => {
                Start::Genesis(commonware_cryptography::Digested::precomputed(
                    genesis.clone(),
                    genesis.digest_of(),
                ))
            }
            EngineStart::Floor(base) => Start::Floor(base.clone()),
        },
        partition_prefix: format!("{prefix}-marshal"),
        mailbox_size: nz(1024),
        view_retention: ViewDelta::new(10),
        prunable_items_per_section: NonZeroU64::new(1024).expect("nonzero"),
        page_cache: page_cache.clone(),
        replay_buffer: nz(1 << 20),
        key_write_buffer: nz(1 << 20),
        value_write_buffer: nz(1 << 20),
        block_codec_config: config.bound,
        max_repair: nz(16),
        max_pending_acks: nz(16),
        strategy: Sequential,
    };
    let (resolver_rx, resolver) = marshal_resolver::init(
        rt.child("backfill"),
        marshal_resolver::Config {
            public_key: me.clone(),
            peer_provider: peers.clone(),
            blocker: blocker.clone(),
            mailbox_size: nz(1024),
            fetch_timeout: NZDuration!(Duration::from_secs(2)),
            fetch_retry_delay: Duration::from_millis(100),
            priority_requests: false,
            priority_responses: false,
        },
        channels.backfill,
    );
    let (broadcast, buffer) = buffered::Engine::new(
        rt.child("broadcast"),
        buffered::Config {
            public_key: me.clone(),
            mailbox_size: nz(1024),
            deque_size: 10,
            priority: false,
            codec_config: config.bound,
            peer_provider: peers.clone(),
            strategy: Sequential,
        },
    );
    broadcast.start(channels.broadcast);
    let (actor, marshal, _floor) =
        MarshalActor::init(rt.child("marshal"), finalizations, blocks, marshal_config).await;
    let (finalizer, queue) = Finalizer::new(ledger.chain.clone() as Arc<dyn AsConsensus>);
    actor.start(finalizer, buffer, (resolver_rx, resolver));

    // The committer.
    let (failed_tx, failed) = watch::channel(None);
    let committer_rt = rt.child("committer");
    let committer_marshal = marshal.clone();
    let committer_ledger = ledger.clone();
    rt.child("committer_task").spawn(move |_| async move {
        run_committer(
            committer_rt,
            committer_ledger,
            committer_marshal,
            queue,
            failed_tx,
            config.archive_retention_blocks,
        )
        .await
    });

    // Transaction gossip.
    let (gossip_tx, gossip_rx) = tokio::sync::mpsc::channel(GOSSIP_QUEUE);
    ledger.chain.set_gossip(gossip_tx);
    let gossip_chain = ledger.chain.clone();
    let gossip_channel = channels.gossip;
    rt.child("gossip")
        .spawn(move |ctx| gossip::run(ctx, gossip_chain, gossip_rx, gossip_channel));

    // Evidence and consensus metrics: the engine's second reporter.
    let my_index = config
        .participants
        .position(&me)
        .expect("this validator's key is in the set (checked at start)") as u32;
    let (mut observer, evidence_queue) = Observer::new(
        rt.child("observer"),
        my_index,
        ledger.chain.clone() as Arc<dyn AsConsensus>,
    );
    // The beacon: shares released as blocks are certified and committed, gossiped on their
    // channel, recovered into the ledger.
    let (beacon_sender, beacon_receiver) = channels.beacon;
    match (
        ledger.chain.genesis().beacon.is_some(),
        config.beacon.clone(),
    ) {
        (true, Some(share)) => {
            let (certified_tx, certified_rx) = tokio::sync::mpsc::channel(CERTIFIED_QUEUE);
            observer = observer.with_beacon(certified_tx);
            let (beacon_ledger, participants) = (ledger.clone(), config.participants.clone());
            rt.child("beacon").spawn(move |ctx| {
                beacon::run(
                    ctx,
                    beacon_ledger,
                    share,
                    participants,
                    certified_rx,
                    (beacon_sender, beacon_receiver),
                )
            });
        }
        (true, None) => tracing::error!(
            "this chain's genesis names a threshold beacon and this validator holds no share: \
             it cannot propose blocks"
        ),
        (false, _) => {}
    }
    let checker = Arc::new(
        EvidenceChecker::new(ledger.chain.genesis(), &ledger.chain.genesis_hash)
            .expect("the genesis set was checked at start"),
    );
    let evidence_rt = rt.child("evidence");
    let evidence_ledger = ledger.clone();
    rt.child("evidence_task").spawn(move |_| async move {
        run_evidence(evidence_rt, evidence_ledger, checker, evidence_queue).await
    });
    let equivocate = (ledger.fault() == Some(Fault::Equivocate)).then(|| {
        Arc::new(
            Scheme::signer(
                &config.namespace,
                config.participants.clone(),
                config.key.clone(),
            )
            .expect("this validator's key is in the set"),
        )
    });
    let (votes_sender, votes_receiver) = channels.votes;
    let votes = (VoteSender::new(votes_sender, equivocate), votes_receiver);

    // Simplex, with the inline wrapper as automaton, relay and reporter (and the observer).
    let block_interval_ms = config.block_interval_ms;
    let wrapper = Inline::new(
        rt.child("inline"),
        App::new(ledger, config.leader_timeout / 2, block_interval_ms),
        marshal.clone(),
        FixedEpocher::new(NonZeroU64::new(u64::MAX).expect("nonzero")),
    );
    let engine = simplex::Engine::new(
        rt.child("simplex"),
        simplex::Config {
            scheme,
            elector: RoundRobin::<Sha256>::default(),
            blocker,
            automaton: wrapper.clone(),
            relay: wrapper.clone(),
            reporter: Reporters::from((wrapper, observer)),
            partition: format!("{prefix}-simplex"),
            mailbox_size: nz(1024),
            epoch: Epoch::zero(),
            floor: match &config.start {
                EngineStart::Genesis(genesis) => {
                    simplex::Floor::Genesis(commonware_cryptography::Digestible::digest(genesis))
                }
                EngineStart::Floor(base) => simplex::Floor::Finalized(base.clone()),
            },
            replay_buffer: nz(1 << 20),
            write_buffer: nz(1 << 20),
            page_cache,
            leader_timeout: config.leader_timeout,
            certification_timeout: config.certification_timeout,
            timeout_retry: config.timeout_retry,
            fetch_timeout: NZDuration!(Duration::from_secs(1)),
            fetch_retry_delay: Duration::from_millis(100),
            view_retention: ViewDelta::new(10),
            skip: SkipPolicy::Enabled {
                timeout: config.certification_timeout + config.timeout_retry,
                budget: SkipBudget::Participants,
            },
            strategy: Sequential,
            forward: ForwardPolicy::Disabled,
            // Keep every vote until its round is pruned (`view_retention`), so conflicting
            // votes are reported as evidence after a certificate too, not best effort.
            track_historical_votes: true,
        },
    );
    let engine = engine.start(votes, channels.certificates, channels.resolver);
    Running {
        marshal,
        failed,
        engine,
    }
}
