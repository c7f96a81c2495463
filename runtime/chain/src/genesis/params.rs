//! The chain's parameters in one type: [`ChainParams`], every number a genesis file fixes that
//! bounds how modules run and how fast blocks come (fuel of each kind of call, guest memory,
//! block spacing and the drift window, the deploy caps), with [`PARAMETERS`], the one table of
//! their names, units, bounds and defaults for new chains.
//!
//! Who reads it:
//! - genesis: [`Genesis::params`](crate::Genesis::params) gives an existing chain's values (with
//!   the rule for each optional field a chain made before it lacks), and
//!   [`Genesis::validate`](crate::Genesis::validate) checks the bounds of this table;
//! - the runtime: `RuntimeConfig::default` (`runtime/vm/src/config.rs`) takes its fuel and memory
//!   from [`ChainParams::DEFAULT`], and `runtime_config(genesis)` from `Genesis::params`;
//! - the node's ledger: `LedgerConfig::default` and the genesis file a new data directory
//!   writes start from [`ChainParams::DEFAULT`];
//! - the validator and the sequencer: block spacing, the drift window and the deploy caps come
//!   from `Genesis::params` (through `Genesis::clock` and `Genesis::block_caps`);
//! - `docs/limits.md`: its "Chain parameters" table is [`markdown_table`]'s output, and a test
//!   fails when the two differ.
//!
//! Nothing here changes a genesis file's JSON or its hashed encoding: the fields stay where
//! they are in [`Genesis`](crate::Genesis) (`mod.rs`, `clock.rs`, `block_caps.rs` say how each
//! is encoded); this type is how code reads them.

use crate::block::tx::MAX_CODE_BYTES;
use crate::genesis::block_caps::{
    BlockCaps, DEFAULT_MAX_BLOCK_CODE_BYTES, DEFAULT_MAX_BLOCK_DEPLOYS, MAX_BLOCK_CODE_BYTES_LIMIT,
    MAX_BLOCK_DEPLOYS_LIMIT,
};
use crate::genesis::clock::{
    BlockClock, DEFAULT_MAX_CLOCK_DRIFT_MS, DEFAULT_MIN_BLOCK_INTERVAL_MS,
    MAX_CLOCK_DRIFT_LIMIT_MS, MAX_MIN_BLOCK_INTERVAL_MS,
};

/// `fuel_apply` of new chains: 10,000,000. A tic-tac-toe move (JSON parse, a state read, a
/// write, an event) is tens of thousands of fuel, so this leaves room for games a hundred times
/// heavier while bounding a transaction to roughly 10–30 ms of wasm.
pub const DEFAULT_FUEL_APPLY: u64 = 10_000_000;

/// `fuel_view` of new chains: 50,000,000. Views may scan and decode many records (a full
/// 1024-entry scan page with JSON decoding is a few million), they run off the block path, and
/// the bound keeps an HTTP request under about 0.1 s.
pub const DEFAULT_FUEL_VIEW: u64 = 50_000_000;

/// `fuel_end_block` of new chains: 10,000,000 per module per block, like `fuel_apply`.
pub const DEFAULT_FUEL_END_BLOCK: u64 = 10_000_000;

/// `memory_limit_bytes` of new chains: 16 MiB (256 pages). A Rust guest needs its 32 KiB stack,
/// about 150 KB of data and a bump heap never freed within a call; 16 MiB is far above that
/// while a full pool of 64 instances stays within 1 GiB resident.
pub const DEFAULT_MEMORY_LIMIT_BYTES: u64 = 16 << 20;

/// The parameters of one chain, as code reads them (units in each field's name; see
/// [`PARAMETERS`] for bounds). Built from a genesis file by `Genesis::params`, or
/// [`ChainParams::DEFAULT`] for a new chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChainParams {
    /// Fuel limit of one `apply` call (instantiation, allocation and host calls included).
    pub fuel_apply: u64,
    /// Fuel limit of one `view` call.
    pub fuel_view: u64,
    /// Fuel limit of one module's `end_block` call.
    pub fuel_end_block: u64,
    /// Largest linear memory of one guest instance, bytes.
    pub memory_limit_bytes: u64,
    /// Block spacing and the drift window (`clock.rs`).
    pub clock: BlockClock,
    /// Deploys and deploy code per block (`block_caps.rs`).
    pub block_caps: BlockCaps,
}

impl ChainParams {
    /// The parameters of a new chain: what `gamechain` writes into a new genesis file unless its
    /// configuration says otherwise, and the runtime's defaults.
    pub const DEFAULT: ChainParams = ChainParams {
        fuel_apply: DEFAULT_FUEL_APPLY,
        fuel_view: DEFAULT_FUEL_VIEW,
        fuel_end_block: DEFAULT_FUEL_END_BLOCK,
        memory_limit_bytes: DEFAULT_MEMORY_LIMIT_BYTES,
        clock: BlockClock {
            min_block_interval_ms: DEFAULT_MIN_BLOCK_INTERVAL_MS,
            max_clock_drift_ms: DEFAULT_MAX_CLOCK_DRIFT_MS,
        },
        block_caps: BlockCaps {
            max_block_deploys: DEFAULT_MAX_BLOCK_DEPLOYS,
            max_block_code_bytes: DEFAULT_MAX_BLOCK_CODE_BYTES,
        },
    };
}

impl Default for ChainParams {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// One row of [`PARAMETERS`]: a genesis field's name, unit, bounds, value on new chains and
/// meaning when absent.
#[derive(Debug, Clone, Copy)]
pub struct Parameter {
    /// The genesis JSON field (and the node configuration key of the same name).
    pub name: &'static str,
    /// The unit of the value: `fuel`, `bytes`, `ms` or `deploys`.
    pub unit: &'static str,
    /// Least value a genesis may set.
    pub min: u64,
    /// Most value a genesis may set.
    pub max: u64,
    /// What an absent field means (`None`: the field is required).
    pub absent: Option<&'static str>,
    /// What the parameter bounds, one line.
    pub meaning: &'static str,
    /// Reads this parameter from a [`ChainParams`].
    pub get: fn(&ChainParams) -> u64,
}

impl Parameter {
    /// The value new chains get ([`ChainParams::DEFAULT`]).
    pub fn default_value(&self) -> u64 {
        (self.get)(&ChainParams::DEFAULT)
    }

    /// `Ok` when `value` is within this parameter's bounds; the error names the field:
    /// `<name> must be more than 0` for a parameter bounded only below by 1, else
    /// `<name> must be <min> to <max>, not <value>`.
    pub fn check(&self, value: u64) -> Result<(), String> {
        if (self.min..=self.max).contains(&value) {
            return Ok(());
        }
        Err(if self.min == 1 && self.max == u64::MAX {
            format!("{} must be more than 0", self.name)
        } else {
            format!(
                "{} must be {} to {}, not {value}",
                self.name, self.min, self.max
            )
        })
    }
}

/// Every chain parameter, in genesis order.
pub const PARAMETERS: [Parameter; 8] = [
    Parameter {
        name: "fuel_apply",
        unit: "fuel",
        min: 1,
        max: u64::MAX,
        absent: None,
        meaning: "fuel of one transaction's `apply` call; more traps `internal: out of fuel`",
        get: |p| p.fuel_apply,
    },
    Parameter {
        name: "fuel_view",
        unit: "fuel",
        min: 1,
        max: u64::MAX,
        absent: None,
        meaning: "fuel of one `view` call on nodes that do not set their own (views are never in a block, so each node's `fuel_view` setting wins)",
        get: |p| p.fuel_view,
    },
    Parameter {
        name: "fuel_end_block",
        unit: "fuel",
        min: 1,
        max: u64::MAX,
        absent: None,
        meaning: "fuel of one module's `end_block` call in each block",
        get: |p| p.fuel_end_block,
    },
    Parameter {
        name: "memory_limit_bytes",
        unit: "bytes",
        min: 1,
        max: u64::MAX,
        absent: None,
        meaning: "linear memory of one guest instance; growth beyond it fails",
        get: |p| p.memory_limit_bytes,
    },
    Parameter {
        name: "min_block_interval_ms",
        unit: "ms",
        min: 1,
        max: MAX_MIN_BLOCK_INTERVAL_MS,
        absent: Some("0: a chain made before block spacing (blocks only may not go back in time)"),
        meaning: "least block time between a block and its parent",
        get: |p| p.clock.min_block_interval_ms,
    },
    Parameter {
        name: "max_clock_drift_ms",
        unit: "ms",
        min: 1,
        max: MAX_CLOCK_DRIFT_LIMIT_MS,
        absent: Some("the default"),
        meaning: "how far a proposal's time may be from a validator's clock, either way, for its vote",
        get: |p| p.clock.max_clock_drift_ms,
    },
    Parameter {
        name: "max_block_deploys",
        unit: "deploys",
        min: 1,
        max: MAX_BLOCK_DEPLOYS_LIMIT,
        absent: Some("no cap: a chain made before the caps"),
        meaning: "deploys (new modules and upgrades) in one block",
        get: |p| p.block_caps.max_block_deploys,
    },
    Parameter {
        name: "max_block_code_bytes",
        unit: "bytes",
        min: MAX_CODE_BYTES as u64,
        max: MAX_BLOCK_CODE_BYTES_LIMIT,
        absent: Some("no cap: a chain made before the caps"),
        meaning: "decoded code of the deploys in one block together",
        get: |p| p.block_caps.max_block_code_bytes,
    },
];

/// The [`PARAMETERS`] row named `name`.
pub fn parameter(name: &str) -> Option<&'static Parameter> {
    PARAMETERS.iter().find(|p| p.name == name)
}

/// A number with `,` between thousands (`16777216` → `16,777,216`), or `u64::MAX` for the top.
fn grouped(v: u64) -> String {
    if v == u64::MAX {
        return "2^64 − 1".into();
    }
    let digits = v.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// [`PARAMETERS`] as the Markdown table `docs/limits.md` holds ("Chain parameters"): one row
/// per parameter with its unit, value on new chains, bounds, meaning when absent and meaning.
pub fn markdown_table() -> String {
    let mut s = String::from(
        "| genesis field | unit | new chains | bounds | absent | bounds what |\n|---|---|---|---|---|---|\n",
    );
    for p in &PARAMETERS {
        s.push_str(&format!(
            "| `{}` | {} | {} | {} to {} | {} | {} |\n",
            p.name,
            p.unit,
            grouped(p.default_value()),
            grouped(p.min),
            grouped(p.max),
            p.absent.unwrap_or("required"),
            p.meaning
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_within_their_own_bounds() {
        for p in &PARAMETERS {
            p.check(p.default_value())
                .unwrap_or_else(|e| panic!("{}: {e}", p.name));
            assert!(p.check(p.min.saturating_sub(1)).is_err() || p.min == 0);
        }
        assert_eq!(
            PARAMETERS[0].check(0).unwrap_err(),
            "fuel_apply must be more than 0"
        );
        assert_eq!(
            parameter("max_block_deploys")
                .unwrap()
                .check(2_000)
                .unwrap_err(),
            "max_block_deploys must be 1 to 1024, not 2000"
        );
    }

    #[test]
    fn grouping() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1_000), "1,000");
        assert_eq!(grouped(16 << 20), "16,777,216");
        assert_eq!(grouped(u64::MAX), "2^64 − 1");
    }

    /// `docs/limits.md` holds [`markdown_table`]'s output between its two markers: the doc is
    /// checked against the type, so neither can change alone.
    #[test]
    fn docs_limits_md_holds_the_table() {
        let doc = include_str!("../../../../docs/limits.md");
        let begin = "<!-- chain-params:begin -->\n";
        let end = "<!-- chain-params:end -->";
        let start = doc
            .find(begin)
            .expect("docs/limits.md lacks the begin marker")
            + begin.len();
        let stop = doc[start..]
            .find(end)
            .expect("docs/limits.md lacks the end marker")
            + start;
        let table = markdown_table();
        assert_eq!(
            &doc[start..stop],
            table,
            "docs/limits.md's chain parameter table differs from ChainParams; put this between \
             the markers:\n{table}"
        );
    }
}
