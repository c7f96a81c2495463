//! Deploys are compiled when the node admits them, never on the sequencer's thread: the
//! admission of a `deploy` validates and compiles its code ([`Modules::prepare`], Winch for
//! uploads) on a compile thread within the node's `compile_budget_ms`, one upload at a time,
//! and the block that includes it finds the module ready. Node policy: time decides only what
//! is admitted, never what a block does (a module refused here would get the same text in a
//! receipt; one that compiles slowly here compiles the same everywhere).

use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use gamechain_runtime::{ChainContext, LoadError, Origin};

use crate::error::ChainError;

/// The right to compile one upload: at most one at a time (wasmtime compiles a module's
/// functions on every core already).
#[derive(Default)]
pub struct CompileGate {
    busy: Mutex<bool>,
    freed: Condvar,
}

/// Held by the thread compiling; frees the gate when dropped (when the compile ends, even one
/// that ran past its budget, so slow compiles never pile up).
struct Permit(Arc<CompileGate>);

impl Drop for Permit {
    fn drop(&mut self) {
        *self.0.busy.lock().unwrap_or_else(|p| p.into_inner()) = false;
        self.0.freed.notify_one();
    }
}

impl CompileGate {
    /// Waits until no other upload compiles, or until `deadline`.
    fn enter(self: &Arc<Self>, deadline: Instant) -> Option<Permit> {
        let mut busy = self.busy.lock().unwrap_or_else(|p| p.into_inner());
        while *busy {
            let left = deadline.checked_duration_since(Instant::now())?;
            busy = self
                .freed
                .wait_timeout(busy, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        *busy = true;
        Some(Permit(Arc::clone(self)))
    }
}

/// Validates and compiles `code` as module `id` into `ctx`'s registry (staged for the deploy's
/// block), within `budget` of wall-clock time counted from now (waiting for the gate included).
///
/// Errors: [`ChainError::ModuleRefused`] with the load rule's fixed text;
/// [`ChainError::TooCostly`] when the budget runs out (the compile goes on in the background and
/// its result is staged, or dropped); [`ChainError::Internal`] when the engine itself fails.
pub fn prepare_deploy(
    gate: &Arc<CompileGate>,
    ctx: &Arc<ChainContext>,
    id: &str,
    code: &[u8],
    budget: Duration,
) -> Result<(), ChainError> {
    let deadline = Instant::now() + budget;
    let too_costly = || {
        ChainError::TooCostly(format!(
            "the module's code did not compile within this node's budget of {} ms \
             (compile_budget_ms); retry later",
            budget.as_millis()
        ))
    };
    let permit = gate.enter(deadline).ok_or_else(too_costly)?;
    let (tx, rx) = mpsc::channel();
    let (ctx, id_owned, code) = (Arc::clone(ctx), id.to_string(), code.to_vec());
    let spawned = std::thread::Builder::new()
        .name("compile".into())
        .spawn(move || {
            let started = Instant::now();
            let result = ctx
                .modules()
                .prepare(ctx.runtime(), &id_owned, &code, Origin::Upload);
            tracing::info!(
                module = %id_owned,
                bytes = code.len(),
                ms = started.elapsed().as_millis() as u64,
                ok = result.is_ok(),
                "deploy compiled at admission or ahead of its block"
            );
            drop(permit);
            let _ = tx.send(result);
        });
    if let Err(e) = spawned {
        return Err(ChainError::Internal(format!(
            "cannot start a compile thread: {e}"
        )));
    }
    let left = deadline.saturating_duration_since(Instant::now());
    match rx.recv_timeout(left) {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(LoadError::Host(e))) => {
            tracing::error!(module = id, "compiling an upload failed in the engine: {e}");
            Err(ChainError::Internal(
                "the node could not compile the module; see its log".into(),
            ))
        }
        Ok(Err(e)) => Err(ChainError::ModuleRefused(e.to_string())),
        Err(RecvTimeoutError::Timeout) => Err(too_costly()),
        Err(RecvTimeoutError::Disconnected) => Err(ChainError::Internal(
            "the compile thread ended without an answer".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_admits_one_at_a_time_and_times_out() {
        let gate = Arc::new(CompileGate::default());
        let soon = || Instant::now() + Duration::from_millis(50);
        let first = gate.enter(soon()).expect("free");
        assert!(gate.enter(soon()).is_none(), "busy until the permit drops");
        drop(first);
        assert!(gate.enter(soon()).is_some());
    }
}
