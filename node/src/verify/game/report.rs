//! What `gamechain verify --game` reports: every step checked ([`StepReport`]), or the first
//! divergence ([`GameDivergence`]: which step, which check, expected against got).

use std::fmt;

use serde::Serialize;
use serde_json::{json, Value};

/// The first check that failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GameDivergence {
    /// The step (0-based position in the transcript); `None` for the transcript as a whole
    /// (genesis, code, completeness).
    pub index: Option<usize>,
    /// The step's txid as the transcript gives it.
    pub txid: Option<String>,
    /// What differs: `genesis_hash`, `chain_id`, `sequencer`, `module`, `game`, `code_hash`,
    /// `code_size`, `code`, `txid`, `signature`, `action`, `height`, `order`, `block`,
    /// `header_signature`, `tx_proof`, `receipt_proof`, `ok`, `error`, `events`,
    /// `fuel_used`, `finished`, `steps`, `game` (a step not of this game), `finality` (a chain
    /// with validators: a step without a finality record), `finality.certificate` (a record that
    /// does not prove the block final).
    pub field: String,
    /// What the transcript (or the node) says.
    pub expected: String,
    /// What the verifier found.
    pub got: String,
}

impl GameDivergence {
    /// A divergence of the transcript as a whole.
    pub fn whole(field: &str, expected: impl Into<String>, got: impl Into<String>) -> Self {
        GameDivergence {
            index: None,
            txid: None,
            field: field.into(),
            expected: expected.into(),
            got: got.into(),
        }
    }

    /// A divergence at step `index` (txid `txid`).
    pub fn at(
        index: usize,
        txid: &str,
        field: &str,
        expected: impl Into<String>,
        got: impl Into<String>,
    ) -> Self {
        GameDivergence {
            index: Some(index),
            txid: Some(txid.to_string()),
            field: field.into(),
            expected: expected.into(),
            got: got.into(),
        }
    }
}

impl fmt::Display for GameDivergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.index, &self.txid) {
            // A scheduled call's step is named `call <id>` (it has no txid).
            (Some(i), Some(t)) if t.starts_with("call ") || t.is_empty() => {
                write!(f, "DIVERGED at step {i} (scheduled {t}): {}", self.field)?
            }
            (Some(i), Some(t)) => write!(f, "DIVERGED at step {i} (tx {t}): {}", self.field)?,
            _ => write!(f, "DIVERGED: {}", self.field)?,
        }
        write!(
            f,
            "\n  expected: {}\n  got:      {}",
            self.expected, self.got
        )
    }
}

/// One step that matched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StepReport {
    /// Its position in the transcript.
    pub index: usize,
    /// Its txid (empty for a scheduled call).
    pub txid: String,
    /// The scheduled call it ran, for a call's step (absent from the JSON otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call: Option<u64>,
    /// Its block.
    pub height: u64,
    /// The account it acted for (empty for a scheduled call).
    pub sender: String,
    /// The op's `kind` when it has one.
    pub kind: Option<String>,
    /// Its event kinds.
    pub events: Vec<String>,
    /// Its fuel.
    pub fuel_used: u64,
}

/// The result of verifying one transcript.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GameReport {
    /// The module.
    pub module: String,
    /// The game.
    pub game: String,
    /// The code hash that ran it.
    pub code_hash: String,
    /// Whether the steps show the game finished (its last step's `<module>.finished` event for
    /// this game), whatever the transcript's `finished` says.
    pub finished: bool,
    /// `genesis` (the genesis names this code hash for the module), `module record` (its record
    /// proven at the log's block names it, on a chain with state proofs) or `named by the node`.
    pub code_origin: &'static str,
    /// On a chain with validators, the size of the genesis set whose quorum's certificates
    /// each verified step's block was checked against (`None`: a single sequencer's chain).
    pub final_by_quorum: Option<usize>,
    /// On a chain with state proofs, when verified: the block at which the chain's log of the
    /// game was proven to hold exactly the steps shown (every step up to that block; a later
    /// step, if any, is not covered).
    pub complete_as_of: Option<u64>,
    /// On a chain with state proofs, when verified: the players whose starting balance is the
    /// node's declared one, with the node's reason (it could not prove it: the balance moved
    /// earlier in the block of their first step); every other player's is proven.
    pub start_unproven: Vec<(String, String)>,
    /// On a chain with state proofs, when verified: the session steps (by index) whose
    /// authorization the node could not prove, with its reason; every other session step's
    /// record is proven and allows it.
    pub session_unproven: Vec<(usize, String)>,
    /// Steps that matched, in order (all of them when there is no divergence).
    pub steps: Vec<StepReport>,
    /// The first divergence.
    pub divergence: Option<GameDivergence>,
    /// Milliseconds the checks and the re-execution took.
    pub elapsed_ms: u64,
}

impl GameReport {
    /// `verified`, `not_final` (a step on a chain with validators carries no finality record:
    /// `gamechain verify`'s word for blocks no certificate covers) or `diverged`.
    pub fn result(&self) -> &'static str {
        match &self.divergence {
            None => "verified",
            Some(d) if d.field == "finality" => "not_final",
            Some(_) => "diverged",
        }
    }

    /// The report as one JSON object.
    pub fn to_json(&self) -> Value {
        json!({
            "result": self.result(),
            "module": self.module,
            "game": self.game,
            "code_hash": self.code_hash,
            "finished": self.finished,
            "code_origin": self.code_origin,
            "final_by_quorum_of": self.final_by_quorum,
            "complete_as_of": self.complete_as_of,
            "start_unproven": self.start_unproven.iter()
                .map(|(account, why)| json!({"account": account, "why": why}))
                .collect::<Vec<_>>(),
            "session_unproven": self.session_unproven.iter()
                .map(|(step, why)| json!({"step": step, "why": why}))
                .collect::<Vec<_>>(),
            "steps": self.steps,
            "divergence": self.divergence,
            "elapsed_ms": self.elapsed_ms,
        })
    }
}
