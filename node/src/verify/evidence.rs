//! What `gamechain verify` reports of a source's evidence of faulty validators
//! ([`EvidenceReport`]), and the records' wire form (`GET /v1/evidence`, export files): each
//! record is checked by the validator's [`EvidenceChecker`] (`proof/evidence.rs`,
//! which says what evidence is).

use serde_json::{json, Value};

use crate::proof::evidence::{EvidenceChecker, MAX_EVIDENCE_BYTES};
use crate::proof::finality::participant_keys;
use gamechain_ledger::storage::StoredEvidence;

/// Most invalid records an [`EvidenceReport`] lists (the rest are counted).
pub const MAX_LISTED: usize = 16;

/// What `verify` found of a source's evidence.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EvidenceReport {
    /// Records checked.
    pub checked: u64,
    /// Records that prove a fault.
    pub valid: u64,
    /// Each faulty validator proven (index, address) and its valid records, by index.
    pub faulty: Vec<(u32, String, u64)>,
    /// The first [`MAX_LISTED`] records that prove nothing: `(id, why)`.
    pub invalid: Vec<(u64, String)>,
    /// Records that prove nothing, in all.
    pub invalid_count: u64,
}

impl EvidenceReport {
    /// Checks every record of `records` with `checker`.
    pub fn check(checker: &EvidenceChecker, records: &[StoredEvidence]) -> EvidenceReport {
        let mut report = EvidenceReport::default();
        for e in records {
            report.checked += 1;
            match checker.check_record(e) {
                Ok(p) => {
                    report.valid += 1;
                    match report.faulty.iter_mut().find(|f| f.0 == p.signer) {
                        Some(f) => f.2 += 1,
                        None => {
                            let address = checker
                                .validator(p.signer)
                                .map(|v| v.0.clone())
                                .unwrap_or_default();
                            report.faulty.push((p.signer, address, 1));
                        }
                    }
                }
                Err(why) => {
                    report.invalid_count += 1;
                    if report.invalid.len() < MAX_LISTED {
                        report.invalid.push((e.id, why));
                    }
                }
            }
        }
        report.faulty.sort();
        report
    }

    /// `{"checked", "valid", "faulty": [{"signer", "validator", "records"}], "invalid":
    /// [{"id", "error"}], "invalid_count"}`.
    pub fn to_json(&self) -> Value {
        json!({
            "checked": self.checked,
            "valid": self.valid,
            "faulty": self.faulty.iter().map(|(s, a, n)| json!({
                "signer": s, "validator": a, "records": n
            })).collect::<Vec<_>>(),
            "invalid": self.invalid.iter().map(|(id, e)| json!({"id": id, "error": e}))
                .collect::<Vec<_>>(),
            "invalid_count": self.invalid_count,
        })
    }

    /// One line for people.
    pub fn summary(&self) -> String {
        let mut text = if self.checked == 0 {
            "none recorded".to_string()
        } else {
            format!(
                "{} records checked, {} prove a fault",
                self.checked, self.valid
            )
        };
        for (s, a, n) in &self.faulty {
            text += &format!("; validator {s} ({a}) equivocated ({n} records)");
        }
        if self.invalid_count > 0 {
            text += &format!("; {} prove NOTHING", self.invalid_count);
            for (id, why) in &self.invalid {
                text += &format!("\n    record {id}: {why}");
            }
        }
        text
    }
}

/// A record served by `GET /v1/evidence` or written to an export file, as stored. Errors:
/// `data` not hex.
pub fn from_wire(e: &gamechain_chain::wire::Evidence) -> Result<StoredEvidence, String> {
    if e.data.len() > 2 * MAX_EVIDENCE_BYTES {
        return Err(format!(
            "evidence {}: over {MAX_EVIDENCE_BYTES} bytes",
            e.id
        ));
    }
    Ok(StoredEvidence {
        id: e.id,
        kind: e.kind.clone(),
        view: e.view,
        signer: e.signer,
        data: hex::decode(&e.data).map_err(|_| format!("evidence {}: `data` is not hex", e.id))?,
        received_ms: e.received_ms,
    })
}

/// A stored record as `GET /v1/evidence` serves it (`validator` and `consensus_key` from the
/// genesis set by its signer index; empty for an index outside it).
pub fn to_wire(
    checker_set: &[(String, String)],
    e: &StoredEvidence,
) -> gamechain_chain::wire::Evidence {
    let (validator, consensus_key) = checker_set
        .get(e.signer as usize)
        .cloned()
        .unwrap_or_default();
    gamechain_chain::wire::Evidence {
        id: e.id,
        kind: e.kind.clone(),
        view: e.view,
        signer: e.signer,
        validator,
        consensus_key,
        received_ms: e.received_ms,
        data: hex::encode(&e.data),
    }
}

/// `GET /v1/evidence`: the stored evidence with `id > after`, oldest first, at most `limit`
/// (capped at `MAX_EVIDENCE_PAGE`), each with its signer's address and consensus key from the
/// genesis set. Errors: `NotFound` on a chain without validators; the database's.
pub fn page(
    chain: &gamechain_ledger::chain::Chain,
    after: u64,
    limit: usize,
) -> Result<gamechain_chain::wire::EvidencePage, gamechain_ledger::error::ChainError> {
    let (rows, more, total) = chain.evidence_rows(after, limit)?;
    let set = chain
        .genesis()
        .validators
        .as_ref()
        .expect("evidence_rows refuses a chain without validators");
    let signers: Vec<(String, String)> = participant_keys(set)
        .map(|keys| {
            keys.into_iter()
                .map(|bytes| {
                    let address = set
                        .by_consensus_key(&bytes)
                        .map(|v| v.address.clone())
                        .unwrap_or_default();
                    (address, hex::encode(bytes))
                })
                .collect()
        })
        .unwrap_or_default();
    let evidence: Vec<_> = rows.iter().map(|e| to_wire(&signers, e)).collect();
    Ok(gamechain_chain::wire::EvidencePage {
        next: if more {
            evidence.last().map(|e| e.id)
        } else {
            None
        },
        evidence,
        total,
    })
}
