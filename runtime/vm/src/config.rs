//! The chain's runtime configuration ([`RuntimeConfig`]) and its consensus hash
//! ([`RuntimeConfig::config_hash`]).
//!
//! Determinism choices (each one is in the config hash):
//! - fuel counted by our own instrumentation (`instrument/meter.rs`: a charge per metered
//!   block from our cost table, `operator_cost=ops-v1`), wasmtime's `consume_fuel` off; no epoch
//!   interruption, no clock, no WASI;
//! - NaN canonicalisation on, so float results have the same bits everywhere;
//! - the wasm feature set is spelled out rather than taken from wasmtime's defaults: exactly
//!   ABI.md's "Wasm features" (no SIMD, relaxed SIMD, threads, memory64, exceptions, GC, tail
//!   calls, multi-memory, component model, …);
//! - one memory, at most `memory_limit_bytes`; one table of at most [`MAX_TABLE_ELEMENTS`]
//!   entries; a fixed native stack budget for wasm ([`MAX_WASM_STACK`]);
//! - every module is validated at load (`validate.rs`, its limits are in the config hash) and
//!   instrumented (`instrument/` and `stack.rs`, their version and the stack limit are in the
//!   config hash); fuel counts the module's own operators, never the inserted ones;
//! - a trap is charged the call's whole fuel limit.
//!
//! Allocation (pooling or on demand) is not consensus: both enforce the same limits through the
//! same [`Limits`]; a module too large for a pool slot runs on the on-demand engine; a caller
//! waits for a free slot ([`Instances`]), and a slot wasmtime still refuses is a [`HostError`],
//! never a receipt. Neither is instance reuse ([`RuntimeConfig::reuse_instances`]): a reused
//! instance is reset to exactly the state of a fresh one and charged the same fuel
//! (`module.rs`). Nor is the Cranelift optimisation level ([`RuntimeConfig::opt_level`]):
//! fuel is counted per wasm operator, before Cranelift sees the code, and NaNs are canonicalised
//! at every level, so only the machine code (and its speed) differs; it is part of the
//! compiled-module cache key (`cache.rs`), not of the config hash. Nor is the compiler
//! ([`Compiler`]): fuel is the instrumentation's, so Cranelift and Winch give the same results,
//! fuel and traps. The determinism matrix (`tests/tests/determinism.rs`) replays a chain under
//! every level and both compilers.

use gamechain_chain::ChainParams;
use sha2::{Digest, Sha256};

use crate::abi::{ABI_VERSION, FEATURE_NAMES, MAX_TABLE_ELEMENTS};
use crate::gas::GAS_V1;

/// The wasmtime release fuel and trap semantics come from. Pinned with `=` in `Cargo.toml`; a
/// test checks `Cargo.lock` agrees.
pub const WASMTIME_VERSION: &str = "48.0.8";

/// Native stack, in bytes, that wasm code may use before `internal: trap: stack overflow`.
/// A backstop only: the deterministic logical limit (`stack.rs`, [`crate::STACK_LIMIT`]) is
/// reached first by every valid module (its worst case needs 590 KB on x86-64). Calls run on
/// the calling thread's stack, so a thread that calls into wasm needs this much plus its own
/// frames: Rust's default 2 MiB for spawned threads (and tokio's blocking threads) is enough.
pub const MAX_WASM_STACK: usize = 1 << 20;

/// Bytes of each pooled linear memory kept resident (reset with `memset`, not `madvise`) between
/// instances: covers a Rust guest's 32 KiB stack, its static data and a typical call's heap
/// (measured: see `runtime/benches/module_load.rs`).
pub(crate) const MEMORY_KEEP_RESIDENT: usize = 1 << 20;

/// Bytes of each pooled table kept resident between instances (8192 entries).
pub(crate) const TABLE_KEEP_RESIDENT: usize = 64 << 10;

/// How instances get their memory and tables. Not consensus: both give identical results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allocation {
    /// Preallocated slots, reused across calls (fast). At most `instances` calls run at once; a
    /// further call waits for a slot.
    Pooling {
        /// Concurrent instances (and memories, and tables) the pool holds.
        instances: u32,
    },
    /// `mmap` per instance (slower, no preallocation); for tools and tests.
    OnDemand,
}

/// The Cranelift optimisation level modules are compiled at (Winch has none). Not consensus (see the module
/// docs): it changes the machine code and its speed, never a result, a fuel figure or a load
/// error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OptLevel {
    /// No optimisation (fastest compile).
    None,
    /// Optimise for speed (the default).
    #[default]
    Speed,
    /// Optimise for speed and code size.
    SpeedAndSize,
}

impl OptLevel {
    /// Every level, for tests that must not see a difference.
    pub const ALL: [OptLevel; 3] = [OptLevel::None, OptLevel::Speed, OptLevel::SpeedAndSize];

    /// The name used in the compiled-module cache key: `none`, `speed` or `speed_and_size`.
    pub fn name(self) -> &'static str {
        match self {
            OptLevel::None => "none",
            OptLevel::Speed => "speed",
            OptLevel::SpeedAndSize => "speed_and_size",
        }
    }

    pub(crate) fn wasmtime(self) -> wasmtime::OptLevel {
        match self {
            OptLevel::None => wasmtime::OptLevel::None,
            OptLevel::Speed => wasmtime::OptLevel::Speed,
            OptLevel::SpeedAndSize => wasmtime::OptLevel::SpeedAndSize,
        }
    }
}

/// The wasmtime compiler that turns a module into machine code. **Not consensus**: fuel is
/// counted by the module's instrumentation (`instrument/meter.rs`), so both compilers run the
/// same code to the same results, fuel and traps; both canonicalise NaNs, and the logical stack
/// limit is reached before either's native stack runs out (`stack.rs`). Which compiler compiles
/// which code ([`RuntimeConfig::genesis_compiler`], [`RuntimeConfig::upload_compiler`]) is node
/// policy, and part of the compiled-module cache key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compiler {
    /// Cranelift, the optimising compiler (at [`RuntimeConfig::opt_level`]): the fastest code,
    /// but its compile time grows faster than linearly with some shapes of code (locals live
    /// across deeply nested loops: 64 s for 10 KB of wasm), so it is for trusted code only.
    Cranelift,
    /// Winch, wasmtime's single-pass baseline compiler (x86-64): compile time and memory linear
    /// in the code's size whatever its shape, slower machine code. For uploaded code.
    Winch,
}

impl Compiler {
    /// Both compilers, for tests that must not see a difference.
    pub const ALL: [Compiler; 2] = [Compiler::Cranelift, Compiler::Winch];

    /// The name in configuration files and in the cache key: `cranelift` or `winch`.
    pub fn name(self) -> &'static str {
        match self {
            Compiler::Cranelift => "cranelift",
            Compiler::Winch => "winch",
        }
    }

    /// The compiler named `name` (see [`Compiler::name`]).
    pub fn from_name(name: &str) -> Option<Self> {
        Compiler::ALL.into_iter().find(|c| c.name() == name)
    }
}

/// Where a module's code comes from, which picks its [`Compiler`]
/// ([`RuntimeConfig::compiler_for`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Named in the chain's genesis: chosen by whoever made the chain, trusted by everyone who
    /// runs it.
    Genesis,
    /// Uploaded by a transaction (a deploy or an upgrade): anyone's code, never reviewed.
    Upload,
}

/// The chain's runtime parameters. `fuel_apply`, `fuel_end_block` and `memory_limit_bytes` are
/// consensus rules recorded in genesis through [`RuntimeConfig::config_hash`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeConfig {
    /// Fuel for one `gc_apply` call, including instantiation, `gc_alloc` and host calls.
    pub fuel_apply: u64,
    /// Fuel for one `gc_view` call. Not consensus (views never touch state), so not hashed.
    pub fuel_view: u64,
    /// Fuel for one `gc_end_block` call.
    pub fuel_end_block: u64,
    /// Largest linear memory of an instance, bytes (a multiple of 64 KiB makes sense).
    pub memory_limit_bytes: usize,
    /// Instance allocation strategy (not consensus).
    pub allocation: Allocation,
    /// Serve calls from warm instances reset to the module's pristine state instead of a new
    /// instance each time (not consensus: results, state writes and fuel are identical either
    /// way; a module whose state this host cannot reset runs in fresh instances regardless).
    pub reuse_instances: bool,
    /// Check every reset: after each reset of a reused instance compare its whole memory and
    /// every mutable global with the module's pristine snapshot, and check each new instance of
    /// a reusable module against the snapshot; panic on any difference. For tests and
    /// verifiers (it costs a full memory comparison per call). Not consensus.
    pub verify_reuse: bool,
    /// The Cranelift optimisation level (default [`OptLevel::Speed`]). Not consensus, so not in
    /// [`config_hash`](Self::config_hash): every level gives the same results, state writes,
    /// fuel and load errors (the determinism matrix checks it); it is part of the
    /// compiled-module cache key, since the machine code differs.
    pub opt_level: OptLevel,
    /// The compiler of genesis modules (default [`Compiler::Cranelift`]: the code every node
    /// trusts gets the fastest machine code). Node policy, not in the config hash.
    pub genesis_compiler: Compiler,
    /// The compiler of uploaded modules (default [`Compiler::Winch`], whose compile time is
    /// linear in the code's size: an upload cannot stall a node). Node policy, not in the config hash.
    pub upload_compiler: Compiler,
    /// The revision of ABI v1 modules are validated and run under (`abi.rs`,
    /// [`crate::ABI_REVISION`] for new chains): consensus. Revision 1 (no scheduled calls) adds
    /// nothing to the [canonical description](Self::canonical_description), so a chain made
    /// before revisions existed keeps its hash; revision 2 adds its lines, revision 3 (sealed moves) more.
    pub abi_revision: u32,
    /// The revision of the load-time instrumentation (`load/instrument/mod.rs`, `version`;
    /// [`crate::INSTRUMENTATION_REVISION`] for new chains): consensus, in the
    /// [canonical description](Self::canonical_description). Every revision charges the same
    /// fuel for a call that completes; later ones charge less often.
    pub instrumentation_revision: u32,
}

impl Default for RuntimeConfig {
    /// - `fuel_apply`, `fuel_view`, `fuel_end_block` and `memory_limit_bytes`: a new chain's
    ///   ([`ChainParams::DEFAULT`], whose constants say why each value);
    /// - `allocation`: a pool of 64 instances, far above the concurrency of one block executor
    ///   plus the view threads of a 2-core node.
    fn default() -> Self {
        let params = ChainParams::DEFAULT;
        Self {
            fuel_apply: params.fuel_apply,
            fuel_view: params.fuel_view,
            fuel_end_block: params.fuel_end_block,
            memory_limit_bytes: usize::try_from(params.memory_limit_bytes)
                .expect("16 MiB fits every address size"),
            allocation: Allocation::Pooling { instances: 64 },
            reuse_instances: true,
            verify_reuse: false,
            opt_level: OptLevel::Speed,
            genesis_compiler: Compiler::Cranelift,
            upload_compiler: Compiler::Winch,
            abi_revision: crate::abi::ABI_REVISION,
            instrumentation_revision: crate::load::instrument::INSTRUMENTATION_REVISION,
        }
    }
}

impl RuntimeConfig {
    /// The compiler for code of `origin`.
    pub fn compiler_for(&self, origin: Origin) -> Compiler {
        match origin {
            Origin::Genesis => self.genesis_compiler,
            Origin::Upload => self.upload_compiler,
        }
    }

    /// The canonical text [`config_hash`](Self::config_hash) hashes: `key=value` lines covering
    /// everything that changes a receipt, the state or the fuel used: ABI version, wasmtime
    /// version, features, NaN canonicalisation, operator costs, stack, table and memory limits,
    /// fuel limits for apply and end_block, the gas table, the scan cap and the load-time
    /// instrumentation.
    pub fn canonical_description(&self) -> String {
        let mut s = String::new();
        s.push_str("gamechain.runtime.config.v1\n");
        s.push_str(&format!("abi_version={ABI_VERSION}\n"));
        s.push_str(&format!("wasmtime={WASMTIME_VERSION}\n"));
        s.push_str(&format!("features={FEATURE_NAMES}\n"));
        s.push_str("nan_canonicalization=true\n");
        s.push_str("fuel=instrumented\n");
        s.push_str(&format!(
            "operator_cost={}\n",
            crate::load::instrument::meter::COST_TABLE
        ));
        s.push_str("trap_fuel=limit\n");
        s.push_str(&format!("max_wasm_stack={MAX_WASM_STACK}\n"));
        s.push_str("max_memories=1\nmax_tables=1\n");
        s.push_str(&format!("max_table_elements={MAX_TABLE_ELEMENTS}\n"));
        s.push_str(&format!("memory_limit_bytes={}\n", self.memory_limit_bytes));
        s.push_str(&format!("fuel_apply={}\n", self.fuel_apply));
        s.push_str(&format!("fuel_end_block={}\n", self.fuel_end_block));
        s.push_str(&format!(
            "max_scan_limit={}\n",
            gamechain_sdk::MAX_SCAN_LIMIT
        ));
        s.push_str(&GAS_V1.canonical());
        s.push_str(&format!(
            "instrumentation={}\n",
            crate::load::instrument::version(self.instrumentation_revision)
        ));
        s.push_str(&format!(
            "stack_limit={}\nstack_frame_overhead={}\n",
            crate::load::stack::STACK_LIMIT,
            crate::load::stack::FRAME_OVERHEAD
        ));
        s.push_str(&crate::load::validate::canonical());
        s.push_str(&crate::run::bounds::canonical());
        if self.abi_revision >= crate::abi::SCHEDULING_REVISION {
            s.push_str(&format!(
                "abi.revision={}\nabi.scheduled_calls=schedule,cancel_scheduled,draw,gc_scheduled\n\
                 gas.schedule_base={}\ngas.cancel_scheduled_base={}\n",
                self.abi_revision,
                crate::gas::SCHEDULE_BASE,
                crate::gas::CANCEL_SCHEDULED_BASE
            ));
        }
        if self.abi_revision >= crate::abi::SEALING_REVISION {
            s.push_str(&format!(
                "abi.sealed_moves=schedule_sealed,seal,{}\ngas.seal_check_base={}\ngas.seal_open_base={}\n",
                gamechain_chain::keys::seal::POK_DST.escape_ascii(),
                crate::gas::SEAL_CHECK_BASE,
                crate::gas::SEAL_OPEN_BASE
            ));
        }
        s
    }

    /// This configuration under the ABI and instrumentation revisions whose configuration hash
    /// is `hash`, when one pair of this build's revisions (1 to [`crate::ABI_REVISION`], 1 to
    /// [`crate::INSTRUMENTATION_REVISION`]) has it: how a chain finds the revisions its genesis
    /// names. `None`: no pair of this build hashes to `hash` (another build's chain).
    pub fn with_revision_of(&self, hash: &str) -> Option<RuntimeConfig> {
        (1..=crate::abi::ABI_REVISION)
            .rev()
            .find_map(|abi_revision| {
                (1..=crate::load::instrument::INSTRUMENTATION_REVISION)
                    .rev()
                    .find_map(|instrumentation_revision| {
                        let c = RuntimeConfig {
                            abi_revision,
                            instrumentation_revision,
                            ..self.clone()
                        };
                        (c.config_hash() == hash).then_some(c)
                    })
            })
    }

    /// SHA-256 of [`canonical_description`](Self::canonical_description), lowercase hex (64
    /// chars). Genesis carries it; a node whose runtime hashes differently must not join.
    pub fn config_hash(&self) -> String {
        hex::encode(Sha256::digest(self.canonical_description().as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_hash_is_stable_and_covers_consensus_fields() {
        let base = RuntimeConfig::default();
        let h = base.config_hash();
        assert_eq!(h.len(), 64);
        assert_eq!(h, RuntimeConfig::default().config_hash());
        let changed = [
            RuntimeConfig {
                fuel_apply: 1,
                ..base.clone()
            },
            RuntimeConfig {
                fuel_end_block: 1,
                ..base.clone()
            },
            RuntimeConfig {
                memory_limit_bytes: 1 << 20,
                ..base.clone()
            },
        ];
        for c in changed {
            assert_ne!(c.config_hash(), h, "{c:?}");
        }
        // Revision 1 is the configuration before revisions: its text has no `abi.` lines, and
        // a hash finds its revision back.
        let r1 = RuntimeConfig {
            abi_revision: 1,
            ..base.clone()
        };
        assert_ne!(r1.config_hash(), h);
        assert!(!r1.canonical_description().contains("abi.revision"));
        assert!(base.canonical_description().contains("abi.revision=3\n"));
        assert!(base
            .canonical_description()
            .contains("abi.sealed_moves=schedule_sealed,seal"));
        assert_eq!(
            base.with_revision_of(&r1.config_hash())
                .unwrap()
                .abi_revision,
            1
        );
        assert_eq!(r1.with_revision_of(&h).unwrap().abi_revision, 3);
        // Revision 2 (scheduled calls, no sealed moves) keeps its own hash and is found back.
        let r2 = RuntimeConfig {
            abi_revision: 2,
            ..base.clone()
        };
        assert!(!r2.canonical_description().contains("sealed"));
        assert_ne!(r2.config_hash(), h);
        assert_eq!(
            base.with_revision_of(&r2.config_hash())
                .unwrap()
                .abi_revision,
            2
        );
        assert!(base.with_revision_of(&"00".repeat(32)).is_none());
        // Not consensus: views, the allocation strategy, instance reuse, the opt level and the
        // compilers (fuel is the instrumentation's, the same under both).
        let not_consensus = RuntimeConfig {
            fuel_view: 1,
            allocation: Allocation::OnDemand,
            reuse_instances: !base.reuse_instances,
            verify_reuse: !base.verify_reuse,
            opt_level: OptLevel::None,
            genesis_compiler: Compiler::Winch,
            upload_compiler: Compiler::Cranelift,
            ..base.clone()
        };
        assert_eq!(not_consensus.config_hash(), h);
        let text = base.canonical_description();
        for needle in [
            "wasmtime=48.0.8",
            "abi_version=1",
            "gas.host_call_base=200",
            "fuel_apply=10000000",
            "fuel=instrumented\noperator_cost=ops-v1\ntrap_fuel=limit\n",
            "instrumentation=dirty-chunks-v1,stack-height-v1,fuel-meter-v3\n",
            "stack_limit=32768\n",
            "max_wasm_stack=1048576\n",
            "validation.max_code_bytes=1048576\n",
            "validation.refused_features=relaxed_simd,simd,",
        ] {
            assert!(text.contains(needle), "{needle} missing from\n{text}");
        }
    }

    #[test]
    fn a_chain_of_instrumentation_revision_one_keeps_its_hash_and_finds_its_revision() {
        let base = RuntimeConfig::default();
        assert_eq!(
            base.instrumentation_revision,
            crate::load::instrument::INSTRUMENTATION_REVISION
        );
        for abi_revision in 1..=crate::abi::ABI_REVISION {
            let old = RuntimeConfig {
                abi_revision,
                instrumentation_revision: 1,
                ..base.clone()
            };
            assert!(old
                .canonical_description()
                .contains("instrumentation=dirty-chunks-v1,stack-height-v1,fuel-meter-v2\n"));
            assert_ne!(
                old.config_hash(),
                RuntimeConfig {
                    abi_revision,
                    ..base.clone()
                }
                .config_hash()
            );
            let found = base.with_revision_of(&old.config_hash()).unwrap();
            assert_eq!(
                (found.abi_revision, found.instrumentation_revision),
                (abi_revision, 1)
            );
        }
    }

    #[test]
    fn wasmtime_version_matches_the_lock_file() {
        let lock =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.lock"))
                .unwrap();
        let expected = format!("name = \"wasmtime\"\nversion = \"{WASMTIME_VERSION}\"");
        assert!(
            lock.contains(&expected),
            "Cargo.lock has another wasmtime than {WASMTIME_VERSION}"
        );
    }
}
