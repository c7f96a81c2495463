//! Tier-up, node policy only: an upload is compiled by Winch when the node loads it (a
//! sequencer or validator admitting it, a follower replaying its deploy) and runs at once; then
//! this node's `tier-up` thread compiles it with Cranelift in a child process (the `gamechain`
//! binary's hidden `internal-tier-up-compile` command) under a time and memory budget, and puts
//! the faster module in its place (`WasmModule::tier_up`, `Modules::install_tiered`). A compile
//! that runs past `tier_up_budget_ms`, or needs more than `tier_up_memory_mib` of address space,
//! is killed with its process, and the module stays on Winch; its code is not tried again
//! (under any id, `Modules::tier_up_abandoned`) until the node restarts, and not after either
//! once two runs of the node abandoned it for a reason that looks like the code's own (out of
//! memory, or [`CPU_SHARE_LASTING`] of the budget spent on a CPU), while the budgets and the
//! runtime stay as they were (`record.rs`). Modules wait in the order they were loaded, the
//! most recently used first at start.
//!
//! Nothing here reaches consensus: the tiered module runs the same instrumented code, so every
//! receipt, fuel figure and state root is the one Winch gives (`runtime/vm/src/tier.rs`).
//!
//! Why a process and not a thread: a thread cannot be stopped, and Cranelift's time and memory
//! grow faster than linearly with some shapes of code (a 10 KB upload took 64 s and 7.8 GB); a
//! child is killed at its deadline, its memory is capped by `RLIMIT_AS`, its CPU by
//! `RLIMIT_CPU`, it compiles on one thread (`RAYON_NUM_THREADS=1`) at a lower priority (nice
//! 10), so block production and verification keep their core, and it dies with the thread
//! that started it (`PR_SET_PDEATHSIG`); a node that stops kills the compile in progress. Its
//! machine code comes back over a pipe only this process holds, at most
//! [`MAX_ARTIFACT_BYTES`], and wasmtime checks the artifact's engine before using it. A compile
//! already in the compiled-module cache needs no process.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Weak};
use std::time::{Duration, Instant};

use gamechain_runtime::{
    code_key, OptLevel, Precompiled, State, TierUpError, WasmModule, MAX_TIER_UP_QUEUE,
};

use crate::chain::Chain;

pub mod record;

/// Most bytes of machine code a tier-up compile may return: 256 MiB (the largest valid module
/// compiles to a few MiB).
pub const MAX_ARTIFACT_BYTES: usize = 256 << 20;

/// Most bytes of instrumented wasm a compile process reads: 64 MiB (instrumentation grows a
/// valid module's code a few times; the largest valid upload is far below this).
pub const MAX_INPUT_BYTES: usize = 64 << 20;

/// How many times a module whose code has not reached the head state goes back in the queue
/// ([`Outcome::Deferred`]) before its tier-up is given up: 20, a minute of [`CODE_WAIT`]s. A
/// module loaded for a block that never becomes final (a validator's proposal that times out,
/// a follower's block that does not verify) would otherwise wait for ever.
pub const MAX_DEFERRALS: u32 = 20;

/// How long a tier-up waits for its module's code to reach the head state (the block that
/// deploys it is being committed) before the module goes back in the queue.
const CODE_WAIT: Duration = Duration::from_secs(3);

/// The share of its time budget an abandoned compile must have spent on a CPU for the
/// abandonment to outlive a restart (`record.rs`): 0.9. Below it the machine was busy (the
/// compile runs at nice 10), and the code gets another try after a restart.
pub const CPU_SHARE_LASTING: f64 = 0.9;

/// The subcommand of the `gamechain` binary that compiles one module for a tier-up: reads the
/// instrumented wasm on stdin, writes the machine code on stdout.
pub const WORKER_COMMAND: &str = "internal-tier-up-compile";

/// How this node tiers uploads up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TierUpConfig {
    /// The program and arguments of the compile process (the `gamechain` binary and
    /// [`WORKER_COMMAND`]); `--opt-level <level>` is added.
    pub worker: Vec<OsString>,
    /// Wall-clock time one compile may take, process start included.
    pub budget: Duration,
    /// Address space the compile process may map, bytes (`RLIMIT_AS`).
    pub memory_bytes: u64,
    /// Where abandoned compiles are remembered across restarts (`record.rs`;
    /// `<data>/compiled/tier_up_abandoned`); `None`: in memory only, until the node stops.
    pub record: Option<PathBuf>,
}

/// What one tier-up came to (the label of `gamechain_tier_up_total`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Compiled in a child process and installed.
    Tiered,
    /// Read from the compiled-module cache and installed.
    Cached,
    /// Killed at its time budget, or out of its memory budget: the module stays on Winch.
    /// `lasting`: see [`ChildError::Abandoned`]; only such an abandonment outlives a restart.
    Abandoned { why: String, lasting: bool },
    /// Any other failure (logged): the module stays on Winch.
    Failed(String),
    /// Done, but the module had meanwhile left the final map or changed (nothing installed).
    Stale,
    /// Not started: the module's code had not reached the head state within [`CODE_WAIT`] (a
    /// follower commits the blocks it verifies in batches; a busy sequencer's block may take
    /// that long). The module is queued again, behind the others, at most [`MAX_DEFERRALS`]
    /// times.
    Deferred,
}

impl Outcome {
    /// The metric label: `tiered`, `cached`, `abandoned`, `failed`, `stale` or `deferred`.
    pub fn label(&self) -> &'static str {
        match self {
            Outcome::Tiered => "tiered",
            Outcome::Cached => "cached",
            Outcome::Abandoned { .. } => "abandoned",
            Outcome::Failed(_) => "failed",
            Outcome::Stale => "stale",
            Outcome::Deferred => "deferred",
        }
    }
}

/// Starts the `tier-up` thread for `chain`: it tiers up every upload of the final state, one at
/// a time, until `stop` is set or the chain is dropped. Errors: the thread cannot be spawned.
pub fn spawn(
    chain: &Arc<Chain>,
    config: TierUpConfig,
    stop: Arc<AtomicBool>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    chain.ctx.modules().enable_tier_up();
    let runtime = chain.ctx.runtime().config();
    let settings = record::Settings {
        engine: runtime.config_hash(),
        opt_level: runtime.opt_level.name().to_string(),
        budget_ms: u64::try_from(config.budget.as_millis()).unwrap_or(u64::MAX),
        memory_bytes: config.memory_bytes,
    };
    if let Some(path) = &config.record {
        match record::remembered(path, &settings) {
            Ok(hashes) => {
                for hash in &hashes {
                    chain.ctx.modules().tier_up_abandoned(hash);
                }
                if !hashes.is_empty() {
                    tracing::info!(
                        modules = hashes.len(),
                        file = %path.display(),
                        "not tiering up code whose compile was abandoned before under these budgets"
                    );
                }
            }
            Err(e) => tracing::warn!(
                file = %path.display(),
                "cannot read the abandoned tier-ups, trying them all again: {e}"
            ),
        }
    }
    let chain: Weak<Chain> = Arc::downgrade(chain);
    // How often each waiting module was deferred (its code not in the head state yet).
    let mut deferrals: BTreeMap<(String, String), u32> = BTreeMap::new();
    std::thread::Builder::new()
        .name("tier-up".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let Some(c) = chain.upgrade() else { return };
                let Some(module) = c.ctx.modules().next_tier_up(Duration::from_millis(500)) else {
                    continue;
                };
                let started = Instant::now();
                let outcome = tier_up(&c, &module, &config, &stop);
                let key = (module.id().to_string(), module.code_hash().to_string());
                if outcome == Outcome::Deferred {
                    let n = deferrals.entry(key.clone()).or_insert(0);
                    *n += 1;
                    if *n <= MAX_DEFERRALS {
                        c.ctx.modules().requeue_tier_up(&module);
                    } else {
                        deferrals.remove(&key);
                        tracing::info!(
                            module = module.id(),
                            code_hash = module.code_hash(),
                            "tier-up given up: the module's code never reached the head state"
                        );
                    }
                } else {
                    deferrals.remove(&key);
                }
                if deferrals.len() > MAX_TIER_UP_QUEUE {
                    // A module dropped while it waited leaves its count here: bounded by
                    // forgetting them all (each may then be deferred 20 times more).
                    deferrals.clear();
                }
                if let Outcome::Abandoned { lasting, .. } = outcome {
                    c.ctx.modules().tier_up_abandoned(module.code_hash());
                    if let (Some(path), true) = (&config.record, lasting) {
                        if let Err(e) = record::remember(path, module.code_hash(), &settings) {
                            tracing::warn!(
                                file = %path.display(),
                                "cannot remember an abandoned tier-up across restarts: {e}"
                            );
                        }
                    }
                }
                c.metrics
                    .tier_up
                    .with_label_values(&[outcome.label()])
                    .inc();
                let ms = started.elapsed().as_millis() as u64;
                let (id, hash) = (module.id(), module.code_hash());
                match &outcome {
                    Outcome::Tiered | Outcome::Cached => {
                        tracing::info!(
                            module = id,
                            code_hash = hash,
                            ms,
                            outcome = outcome.label(),
                            "module tiered up to Cranelift"
                        )
                    }
                    Outcome::Abandoned { why, .. } => {
                        tracing::warn!(
                            module = id,
                            code_hash = hash,
                            ms,
                            "tier-up abandoned, the module stays on Winch: {why}"
                        )
                    }
                    Outcome::Failed(why) => {
                        tracing::warn!(
                            module = id,
                            code_hash = hash,
                            ms,
                            "tier-up failed, the module stays on Winch: {why}"
                        )
                    }
                    Outcome::Stale => {}
                    Outcome::Deferred => tracing::debug!(
                        module = id,
                        code_hash = hash,
                        "tier-up deferred: the module's code is not in the head state yet"
                    ),
                }
            }
        })
}

/// Tiers `module` up (its code read from the head state) and installs it.
fn tier_up(
    chain: &Chain,
    module: &WasmModule,
    config: &TierUpConfig,
    stop: &AtomicBool,
) -> Outcome {
    // A module deployed by the block being committed (a follower's: by the batch of blocks
    // being committed) is kept before its code reaches the head state: wait for that commit,
    // briefly, then let the other modules go first and try again later (`next_tier_up` drops
    // it once it is no longer kept).
    let key = code_key(module.code_hash());
    let waited = Instant::now();
    let code = loop {
        if let Some(code) = chain.head().state.get(&key) {
            break code;
        }
        if stop.load(Ordering::Relaxed) {
            return Outcome::Stale;
        }
        if waited.elapsed() > CODE_WAIT {
            return Outcome::Deferred;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let opt_level = module.runtime().config().opt_level;
    let cache = chain.ctx.modules().cache().cloned();
    let mut abandoned = None;
    let result = module.tier_up(&code, cache.as_deref(), |bytes| {
        compile_in_child(config, opt_level, bytes, stop).map_err(|e| match e {
            ChildError::Abandoned { why, lasting } => {
                abandoned = Some(lasting);
                why
            }
            ChildError::Failed(why) => why,
        })
    });
    match result {
        Ok(tiered) => {
            let cached = tiered.code_source().is_cached();
            if !chain.ctx.modules().install_tiered(Arc::new(tiered)) {
                Outcome::Stale
            } else if cached {
                Outcome::Cached
            } else {
                Outcome::Tiered
            }
        }
        Err(TierUpError::Compile(why)) if abandoned.is_some() => Outcome::Abandoned {
            why,
            lasting: abandoned == Some(true),
        },
        Err(TierUpError::AlreadyCranelift | TierUpError::WrongCode) => Outcome::Stale,
        Err(e) => Outcome::Failed(e.to_string()),
    }
}

/// CPU time (user and system) the live process `pid` has used, from `/proc/<pid>/stat`; `None`
/// when it cannot be read.
fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count from after it.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    // Fields 14 and 15 of the line (utime, stime) are the 12th and 13th after the name.
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf only reads a system constant.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (per_second > 0).then(|| Duration::from_secs_f64(ticks as f64 / per_second as f64))
}

/// Why a compile process gave no machine code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChildError {
    /// It ran past its time budget or out of its memory budget. `lasting`: the code's fault,
    /// not the machine's load (it ran out of memory, or it spent at least
    /// [`CPU_SHARE_LASTING`] of its time budget on a CPU), so that a restart need not try it
    /// again (`record.rs`); a compile starved by a busy machine is not.
    Abandoned { why: String, lasting: bool },
    /// It could not start, failed, or wrote something unusable.
    Failed(String),
}

/// Compiles `instrumented` with Cranelift at `opt_level` in a child process run as `config`
/// says (see the module docs); the child is killed as soon as `stop` is set. Errors:
/// [`ChildError`] (a stop is [`ChildError::Failed`]).
pub fn compile_in_child(
    config: &TierUpConfig,
    opt_level: OptLevel,
    instrumented: &[u8],
    stop: &AtomicBool,
) -> Result<Precompiled, ChildError> {
    let deadline = Instant::now() + config.budget;
    let (program, args) = config
        .worker
        .split_first()
        .ok_or_else(|| ChildError::Failed("no compile program is configured".into()))?;
    let mut command = Command::new(program);
    command
        .args(args)
        .args(["--opt-level", opt_level.name()])
        .env("RAYON_NUM_THREADS", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let memory = config.memory_bytes as libc::rlim_t;
    let cpu_seconds = config.budget.as_secs() as libc::rlim_t + 1;
    // SAFETY: only async-signal-safe calls (setrlimit, setpriority, prctl) run between fork and
    // exec.
    unsafe {
        use std::os::unix::process::CommandExt;
        command.pre_exec(move || {
            let limit = |resource, soft: libc::rlim_t, hard: libc::rlim_t| {
                let rl = libc::rlimit {
                    rlim_cur: soft,
                    rlim_max: hard,
                };
                if libc::setrlimit(resource, &rl) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            };
            limit(libc::RLIMIT_AS, memory, memory)?;
            // Past the soft limit SIGXCPU, past the hard one SIGKILL: both are "over time".
            limit(libc::RLIMIT_CPU, cpu_seconds, cpu_seconds + 1)?;
            libc::setpriority(libc::PRIO_PROCESS, 0, 10);
            // Killed when the thread that started it goes (the node stopped or crashed).
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = command
        .spawn()
        .map_err(|e| ChildError::Failed(format!("cannot start {program:?}: {e}")))?;
    let (mut stdin, mut stdout, mut stderr) = (
        child.stdin.take().expect("piped"),
        child.stdout.take().expect("piped"),
        child.stderr.take().expect("piped"),
    );
    let input = instrumented.to_vec();
    // The pipes are served by threads, so a child that stops reading or writing cannot block
    // this one past the deadline; they end when the child does (or is killed).
    std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut out = Vec::new();
        let read = (&mut stdout)
            .take(MAX_ARTIFACT_BYTES as u64 + 1)
            .read_to_end(&mut out);
        let _ = tx.send(read.map(|_| out));
    });
    let errors = std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = (&mut stderr).take(4096).read_to_end(&mut text);
        String::from_utf8_lossy(&text).trim().to_string()
    });
    let kill = |child: &mut std::process::Child| {
        let _ = child.kill();
        let _ = child.wait();
    };
    // Called before the child is reaped: its CPU time is read from /proc while it exists.
    let over_time = |child: &std::process::Child| {
        let cpu = cpu_time(child.id());
        let lasting = cpu.is_some_and(|cpu| {
            cpu.as_secs_f64() >= CPU_SHARE_LASTING * config.budget.as_secs_f64()
        });
        ChildError::Abandoned {
            why: format!(
                "the Cranelift compile ran past its budget of {} ms (tier_up_budget_ms), {} ms of \
                 it on a CPU",
                config.budget.as_millis(),
                cpu.map_or("?".to_string(), |c| c.as_millis().to_string())
            ),
            lasting,
        }
    };
    let stopped = || ChildError::Failed("the node is stopping".into());
    let out = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left.min(Duration::from_millis(100))) {
            Ok(Ok(out)) => break out,
            Ok(Err(e)) => {
                kill(&mut child);
                return Err(ChildError::Failed(format!(
                    "reading the compile's output: {e}"
                )));
            }
            Err(_) if stop.load(Ordering::Relaxed) => {
                kill(&mut child);
                return Err(stopped());
            }
            Err(_) if Instant::now() >= deadline => {
                let abandoned = over_time(&child);
                kill(&mut child);
                return Err(abandoned);
            }
            Err(_) => {}
        }
    };
    if out.len() > MAX_ARTIFACT_BYTES {
        kill(&mut child);
        return Err(ChildError::Failed(format!(
            "the compile wrote more than {MAX_ARTIFACT_BYTES} bytes"
        )));
    }
    // Its output is complete; it exits at once (or is killed at the deadline).
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            Ok(None) => {
                let abandoned = over_time(&child);
                kill(&mut child);
                return Err(abandoned);
            }
            Err(e) => {
                kill(&mut child);
                return Err(ChildError::Failed(format!("waiting for the compile: {e}")));
            }
        }
    };
    let stderr = errors.join().unwrap_or_default();
    if status.success() {
        // SAFETY: the bytes are what our own binary (`config.worker`, the node's executable)
        // wrote on a pipe only this process reads, from `gamechain_runtime::precompile`;
        // wasmtime checks the artifact's header and engine before using it.
        return Ok(unsafe { Precompiled::from_trusted(out) });
    }
    use std::os::unix::process::ExitStatusExt;
    // Rust aborts (or exits with its text) when an allocation fails: out of `RLIMIT_AS`.
    if stderr.contains("memory allocation") && matches!(status.signal(), None | Some(libc::SIGABRT))
    {
        return Err(ChildError::Abandoned {
            why: format!(
                "the Cranelift compile needed more than its {} MiB (tier_up_memory_mib)",
                config.memory_bytes >> 20
            ),
            lasting: true,
        });
    }
    match status.signal() {
        // Its CPU limit (`RLIMIT_CPU`, above the time budget): it computed all that time.
        Some(libc::SIGXCPU) => Err(ChildError::Abandoned {
            why: format!(
                "the Cranelift compile used more than its CPU limit of {cpu_seconds} s \
                 (tier_up_budget_ms)"
            ),
            lasting: true,
        }),
        // Killed by someone else (the out-of-memory killer, an operator).
        Some(libc::SIGKILL) => Err(ChildError::Failed(format!(
            "the compile process was killed: {stderr}"
        ))),
        Some(signal) => Err(ChildError::Failed(format!(
            "the compile process died of signal {signal}: {stderr}"
        ))),
        None => Err(ChildError::Failed(format!(
            "the compile process failed ({status}): {stderr}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_cpu_time_is_read_and_grows_with_work() {
        let before = cpu_time(std::process::id()).expect("this process's CPU time");
        // Work until the count moves by 100 ms (a busy machine gives it less than the wall
        // clock), within a minute.
        let start = Instant::now();
        let mut x = 0u64;
        loop {
            for _ in 0..1_000_000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
            let now = cpu_time(std::process::id()).unwrap();
            if now >= before + Duration::from_millis(100) {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "{before:?} -> {now:?}"
            );
        }
        assert_eq!(cpu_time(u32::MAX), None);
    }
}
