//! [`shutdown_signal`]: what stops the long-running commands (`node`, `dev`, `testnet --start`):
//! SIGINT (Ctrl-C) or SIGTERM.

use std::future::Future;

/// A future that resolves when the process receives SIGINT (Ctrl-C) or SIGTERM. The handlers
/// are installed when this is called, not when the future is first polled: a node polls it
/// only once it has started, and a SIGTERM that came in between (a supervisor stopping a node
/// right after its API answered) would otherwise kill the process uncleanly, with the signal's
/// default action. Call it inside a tokio runtime.
pub fn shutdown_signal() -> impl Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let term = signal(SignalKind::terminate());
        let int = signal(SignalKind::interrupt());
        async move {
            match (term, int) {
                (Ok(mut term), Ok(mut int)) => {
                    tokio::select! {
                        _ = int.recv() => tracing::info!("SIGINT received, shutting down"),
                        _ = term.recv() => tracing::info!("SIGTERM received, shutting down"),
                    }
                }
                (term, int) => {
                    let e = term.err().or(int.err()).map(|e| e.to_string());
                    tracing::warn!(
                        "cannot listen for SIGTERM or SIGINT ({}); only Ctrl-C stops the node",
                        e.unwrap_or_default()
                    );
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
            tracing::info!("Ctrl-C received, shutting down");
        }
    }
}
