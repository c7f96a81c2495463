//! [`AppState`]: what every HTTP and WebSocket handler of the API gets.

use std::sync::Arc;

use tokio::sync::watch;

use gamechain_runtime::ChainContext;

use crate::config::NodeConfig;
use crate::server::admission::Admission;
use crate::server::feed::BlockFeed;
use crate::server::relay::rooms::Relay;
use gamechain_ledger::chain::{Chain, Head};

/// What every handler gets: the chain, and the shutdown signal (for WebSocket subscribers); its
/// fields ([`Shared`]) are reached through `Deref` (`app.chain`, `app.config`).
///
/// axum clones the state for every request (`State` extraction), so a clone is one refcount
/// bump: cloning the config (its strings and lists) and a dozen `Arc`s per request, then
/// dropping them, was about 2% of the node's CPU under a flat-out load of transfers.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// The parts of [`AppState`], one allocation shared by every handler.
pub struct Shared {
    /// The node's configuration (the API's bounds; its ledger part is `chain.config`).
    pub config: NodeConfig,
    /// The running chain.
    pub chain: Arc<Chain>,
    /// The committed blocks, for WebSocket subscribers (the chain's [`BlockSink`](gamechain_ledger::chain::BlockSink)).
    pub feed: Arc<BlockFeed>,
    /// Turns true when the node shuts down.
    pub shutdown: watch::Receiver<bool>,
    /// A follower's sequencer: `POST /v1/tx` is forwarded there (`follower.rs`). `None` on
    /// the sequencer itself.
    pub upstream: Option<gamechain_client::client::Client>,
    /// Views running at once (`max_concurrent_views`): each holds a wasm instance of up to the
    /// memory limit, so this bounds the memory views take; further view requests wait.
    pub views: Arc<tokio::sync::Semaphore>,
    /// The admission pool `POST /v1/tx` and `POST /v1/txs` submit through (`admission.rs`).
    pub admission: Admission,
    /// WebSocket subscriptions open at once (`max_ws_subscribers`): a subscriber holds a
    /// permit; an upgrade finding none left is refused (`ws.rs`).
    pub ws_slots: Arc<tokio::sync::Semaphore>,
    /// WebSocket subscriptions held per client IP (`max_ws_per_ip`; `ws::take_slot`).
    pub ws_per_ip: Arc<std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, usize>>>,
    /// Open TCP connections of the API (`http_io.rs` counts them; at most `max_connections`).
    pub connections: Arc<std::sync::atomic::AtomicUsize>,
    /// The move relay's games and connections (`relay.rs`).
    pub relay: Arc<Relay>,
    /// Relay connections open at once (`max_relay_connections`).
    pub relay_slots: Arc<tokio::sync::Semaphore>,
    /// Transcript answers kept, builds in flight and each client IP's budget of transcript
    /// work (`transcript/`).
    pub transcripts: Arc<crate::server::transcript::work::Transcripts>,
}

impl AppState {
    /// The shared core of an opened chain (`ctx`, its genesis hash and `head`) with a WebSocket
    /// feed of `config.ws_buffer_blocks`, and the sender that shuts the API down (send `true`).
    /// `upstream`: a follower's sequencer, `None` on the sequencer.
    pub fn new(
        config: &NodeConfig,
        ctx: Arc<ChainContext>,
        genesis_hash: String,
        head: Head,
        upstream: Option<gamechain_client::Client>,
    ) -> (AppState, watch::Sender<bool>) {
        let feed = Arc::new(BlockFeed::new(config.ws_buffer_blocks));
        let chain = Arc::new(Chain::new(
            config.ledger(),
            ctx,
            genesis_hash,
            head,
            config.ledger().db_path(),
            feed.clone(),
        ));
        let (stop, shutdown) = watch::channel(false);
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let admission = Admission::start(chain.clone(), cores);
        let app = AppState(Arc::new(Shared {
            config: config.clone(),
            chain,
            feed,
            shutdown,
            upstream,
            views: Arc::new(tokio::sync::Semaphore::new(config.max_concurrent_views)),
            admission,
            ws_slots: Arc::new(tokio::sync::Semaphore::new(config.max_ws_subscribers)),
            ws_per_ip: Arc::default(),
            connections: Arc::new(std::sync::atomic::AtomicUsize::new(0)),
            relay: Arc::new(Relay::default()),
            relay_slots: Arc::new(tokio::sync::Semaphore::new(config.max_relay_connections)),
            transcripts: Arc::default(),
        }));
        (app, stop)
    }
}
