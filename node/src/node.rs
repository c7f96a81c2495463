//! Starting and stopping a node: [`NodeHandle::start`] opens the data directory
//! (`genesis_setup.rs`), binds the API, and spawns the HTTP server and the sequencer;
//! [`NodeHandle::shutdown`] stops them cleanly; [`run_node`] does both around a shutdown
//! future (SIGINT/SIGTERM for the CLI).
//!
//! Clean shutdown: the listener stops accepting, in-flight requests finish, WebSocket
//! subscribers get a close frame, the sequencer finishes (and commits) the block it is making
//! and stops, and the database is closed when the last connection is dropped. A block is never
//! half-written: it is one SQLite transaction.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::api::{self, AppState};
use crate::chain::{Chain, Head};
use crate::config::NodeConfig;
use crate::error::NodeError;
use crate::genesis_setup::open_chain;
use crate::sequencer;

/// A running node. Dropping it without [`NodeHandle::shutdown`] leaves the node running in the
/// background until the async runtime ends.
pub struct NodeHandle {
    addr: SocketAddr,
    chain: Arc<Chain>,
    stop: watch::Sender<bool>,
    task: JoinHandle<Result<(), NodeError>>,
}

impl NodeHandle {
    /// Opens (or creates) the chain in `config.data_dir`, binds `config.listen` and starts the
    /// API and the sequencer. Returns once the API accepts connections.
    ///
    /// Errors: [`NodeError::Config`] (invalid configuration), [`NodeError::Io`] (data
    /// directory), [`NodeError::Storage`], [`NodeError::Refused`] (the data directory belongs
    /// to another chain or build), [`NodeError::Runtime`], [`NodeError::Bind`].
    pub async fn start(config: NodeConfig) -> Result<NodeHandle, NodeError> {
        config.validate()?;
        let open_config = config.clone();
        let opened = tokio::task::spawn_blocking(move || open_chain(&open_config))
            .await
            .map_err(|e| NodeError::Runtime(format!("opening the chain panicked: {e}")))??;
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .map_err(|e| NodeError::Bind(format!("cannot listen on {}: {e}", config.listen)))?;
        let addr = listener.local_addr().map_err(|e| NodeError::Bind(format!("cannot read the bound address: {e}")))?;
        let head = Head { state: opened.state, header: opened.head.header, state_hash: opened.head.state_hash };
        let chain = Arc::new(Chain::new(config.clone(), opened.ctx, opened.genesis_hash, head, config.db_path()));
        let (stop, stopped) = watch::channel(false);

        let app = api::router(AppState { chain: chain.clone(), shutdown: stopped.clone() });
        let mut server_stop = stopped.clone();
        let server = async move {
            axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>())
                .with_graceful_shutdown(async move {
                    let _ = server_stop.wait_for(|s| *s).await;
                })
                .await
                .map_err(|e| NodeError::Bind(format!("the API server failed: {e}")))
        };
        let seq = sequencer::run(chain.clone(), opened.storage, opened.key, stopped);
        let stop_on_failure = stop.clone();
        let task = tokio::spawn(async move {
            let server = tokio::spawn(server);
            let result = seq.await;
            if let Err(e) = &result {
                tracing::error!("the sequencer stopped: {e}; shutting the node down");
            }
            // Whatever ended the sequencer, the API goes too.
            let _ = stop_on_failure.send(true);
            let served = server.await.map_err(|e| NodeError::Runtime(format!("the API server panicked: {e}")))?;
            result.and(served)
        });
        tracing::info!(%addr, chain_id = %chain.genesis().chain_id, "node listening");
        Ok(NodeHandle { addr, chain, stop, task })
    }

    /// The address the API listens on (the real port when `listen` had port 0).
    pub fn bound_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://<bound_addr>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The running chain (for in-process inspection).
    pub fn chain(&self) -> &Arc<Chain> {
        &self.chain
    }

    /// Whether the node stopped by itself (a fatal error; [`NodeHandle::shutdown`] returns it).
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }

    /// Stops the node cleanly (see the module docs) and waits until it has. Returns the error
    /// that stopped it earlier, if one did.
    pub async fn shutdown(self) -> Result<(), NodeError> {
        let _ = self.stop.send(true);
        self.task.await.map_err(|e| NodeError::Runtime(format!("the node task panicked: {e}")))?
    }

    /// Waits until the node stops by itself (only after a fatal error, or after another
    /// holder's shutdown).
    async fn stopped(&mut self) -> Result<(), NodeError> {
        (&mut self.task).await.map_err(|e| NodeError::Runtime(format!("the node task panicked: {e}")))?
    }
}

/// Runs a node with `config` until `shutdown` resolves (e.g. on SIGINT/SIGTERM), then stops it
/// cleanly. Errors: those of [`NodeHandle::start`], or the failure that stopped the node early.
pub async fn run_node(config: NodeConfig, shutdown: impl Future<Output = ()>) -> Result<(), NodeError> {
    let mut handle = NodeHandle::start(config).await?;
    let stopped_early = tokio::select! {
        () = shutdown => None,
        result = handle.stopped() => Some(result),
    };
    match stopped_early {
        Some(result) => result,
        None => {
            tracing::info!("shutting down");
            let result = handle.shutdown().await;
            tracing::info!("node stopped");
            result
        }
    }
}
