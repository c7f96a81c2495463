//! [`shutdown_signal`]: what stops the long-running commands (`node`, `dev`, `testnet --start`):
//! SIGINT (Ctrl-C) or SIGTERM.

/// Resolves when the process receives SIGINT (Ctrl-C) or SIGTERM.
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = match signal(SignalKind::terminate()) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("cannot listen for SIGTERM ({e}); only Ctrl-C stops the node");
                let _ = tokio::signal::ctrl_c().await;
                return;
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT received, shutting down"),
            _ = term.recv() => tracing::info!("SIGTERM received, shutting down"),
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
        tracing::info!("Ctrl-C received, shutting down");
    }
}
