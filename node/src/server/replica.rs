//! `gamechain node --follow URL` as a process: the follower's data directory opened
//! (`replica/follower.rs`), its read API served with `POST /v1/tx` forwarded to the sequencer,
//! uploads tiered up in the background (`gamechain_ledger::tier_up`, as on a sequencer), and
//! the follow task run until shutdown.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use gamechain_client::Client;

use crate::config::NodeConfig;
use crate::replica::follower::{follow, open_replica, refused};
use crate::server::api;
use crate::server::state::AppState;
use gamechain_ledger::run_marker::mark_stopped;
use gamechain_ledger::tier_up;
use gamechain_ledger::NodeError;

/// Runs a follower of `upstream_url` with `config` until `shutdown` resolves, serving the read
/// API on `config.listen`. Errors: the configuration, the data directory (another chain's, a
/// build that cannot run the chain), an unreachable sequencer at the first start, the database.
pub async fn run_follower(
    config: NodeConfig,
    upstream_url: &str,
    shutdown: impl Future<Output = ()>,
) -> Result<(), NodeError> {
    config.validate()?;
    let upstream = Client::new(upstream_url).map_err(|e| refused(e.to_string()))?;
    let (listener, addr) = api::bind(&config).await?;
    let (open_config, open_upstream, rt) = (
        config.clone(),
        upstream.clone(),
        tokio::runtime::Handle::current(),
    );
    let opened =
        tokio::task::spawn_blocking(move || open_replica(&open_config, &open_upstream, &rt))
            .await
            .map_err(|e| NodeError::Runtime(format!("opening the chain panicked: {e}")))??;
    let (app, stop) = AppState::new(
        &config,
        opened.ctx,
        opened.genesis_hash,
        opened.head,
        Some(upstream.clone()),
    );
    let (chain, stopped) = (app.chain.clone(), app.shutdown.clone());
    // A follower replays every upload too: they tier up to Cranelift in the background as on
    // a sequencer (node policy; `gamechain_ledger::tier_up`), so its replay of a busy module
    // keeps up with the sequencer's pace.
    let tier_stop = Arc::new(AtomicBool::new(false));
    if let Some(tier_up) = config.tier_up_config() {
        tier_up::spawn(&chain, tier_up, tier_stop.clone())
            .map_err(|e| NodeError::Runtime(format!("cannot start the tier-up thread: {e}")))?;
    }
    let server = tokio::spawn(api::serve(listener, app));
    tracing::info!(%addr, upstream = %upstream.base_url(), "follower listening");
    let mut following = tokio::spawn(follow(chain, opened.storage, upstream, stopped));
    let early = tokio::select! {
        () = shutdown => None,
        r = &mut following => Some(r),
    };
    let _ = stop.send(true);
    tier_stop.store(true, Ordering::Relaxed);
    let followed = match early {
        Some(r) => r,
        None => {
            tracing::info!("shutting down");
            // The follow task sees the stop and returns after the block it is committing.
            following.await
        }
    };
    let served = server
        .await
        .map_err(|e| NodeError::Runtime(format!("the API server panicked: {e}")))?;
    let result = followed
        .map_err(|e| NodeError::Runtime(format!("the follow task panicked: {e}")))?
        .and(served);
    if result.is_ok() {
        // The follow task is done and the database closed: a clean stop.
        mark_stopped(&config.data_dir);
    }
    result
}
