//! `gamechain status --net DIR`: every validator of a network folder made by `gamechain
//! testnet` (`DIR/<i>/node.toml`, i = 0, 1, … while they exist), asked for its status at once,
//! shown one line each (height, head, state root, mempool), unreachable ones with the reason,
//! then which validators agree on which head, then the evidence of faulty validators they hold
//! (`GET /v1/evidence`, first page): who signed conflicting votes, in which views, and which
//! validators recorded it. `--json` prints the same as a JSON array (each entry with its
//! `evidence` page).

use std::path::Path;
use std::time::Duration;

use gamechain_client::client::{Client, EvidencePage, Status};
use serde_json::{json, Value};

use crate::cli::error::CliError;
use crate::config::NodeConfig;

/// How long one validator may take to answer.
pub const STATUS_TIMEOUT: Duration = Duration::from_secs(3);

/// One validator's answer: its index, API URL, and status or why there is none.
struct Answer {
    index: usize,
    url: String,
    status: Result<Status, String>,
    /// Its first page of evidence (`None`: not asked, or no answer).
    evidence: Option<EvidencePage>,
}

/// The API URL of each validator folder of `dir`, in order. Errors: no `DIR/0/node.toml`, or
/// one that does not load.
fn validator_urls(dir: &Path) -> Result<Vec<String>, CliError> {
    let mut urls = Vec::new();
    for i in 0.. {
        let path = dir.join(i.to_string()).join("node.toml");
        if !path.exists() {
            break;
        }
        let config = NodeConfig::load(&path)
            .map_err(|e| CliError::Usage(format!("{}: {e}", path.display())))?;
        urls.push(format!("http://{}", config.listen));
    }
    if urls.is_empty() {
        return Err(CliError::Usage(format!(
            "{} holds no validator folders ({}/0/node.toml, as `gamechain testnet` writes)",
            dir.display(),
            dir.display()
        )));
    }
    Ok(urls)
}

async fn ask(index: usize, url: String) -> Answer {
    let status = match Client::new(&url) {
        Err(e) => Err(e.to_string()),
        Ok(client) => match tokio::time::timeout(STATUS_TIMEOUT, client.status()).await {
            Err(_) => Err(format!("no answer within {STATUS_TIMEOUT:?}")),
            Ok(Err(e)) => Err(e.to_string()),
            Ok(Ok(s)) => Ok(s),
        },
    };
    let evidence = match (&status, Client::new(&url)) {
        (Ok(_), Ok(client)) => tokio::time::timeout(STATUS_TIMEOUT, client.evidence(0, 100))
            .await
            .ok()
            .and_then(Result::ok),
        _ => None,
    };
    Answer {
        index,
        url,
        status,
        evidence,
    }
}

/// Runs the command (module docs), writing to `out`. Errors: see [`validator_urls`].
pub async fn run(dir: &Path, as_json: bool, out: &mut dyn std::io::Write) -> Result<(), CliError> {
    let urls = validator_urls(dir)?;
    let answers =
        futures_util::future::join_all(urls.into_iter().enumerate().map(|(i, url)| ask(i, url)))
            .await;
    let text = if as_json {
        let list: Vec<Value> = answers
            .iter()
            .map(|a| match &a.status {
                Ok(s) => json!({
                    "validator": a.index, "api": a.url, "status": s, "evidence": a.evidence
                }),
                Err(e) => json!({"validator": a.index, "api": a.url, "error": e}),
            })
            .collect();
        serde_json::to_string_pretty(&list).expect("JSON values serialise") + "\n"
    } else {
        table(&answers)
    };
    out.write_all(text.as_bytes())
        .map_err(|e| CliError::Usage(format!("cannot write the output: {e}")))
}

/// The human form: a line per validator, then the heads and who is at each.
fn table(answers: &[Answer]) -> String {
    let short = |h: &str| h.chars().take(16).collect::<String>();
    let mut text = format!(
        "{:<9} {:<24} {:>8}  {:<16}  {:<16}  {:>7}  {:>8}\n",
        "validator", "api", "height", "head", "state root", "pending", "evidence"
    );
    let mut heads: Vec<(u64, String, Vec<usize>)> = Vec::new();
    for a in answers {
        match &a.status {
            Ok(s) => {
                text += &format!(
                    "{:<9} {:<24} {:>8}  {:<16}  {:<16}  {:>7}  {:>8}\n",
                    a.index,
                    a.url,
                    s.height,
                    short(&s.head_hash),
                    short(&s.state_root),
                    s.pending,
                    a.evidence
                        .as_ref()
                        .map_or("-".to_string(), |e| e.total.to_string())
                );
                match heads
                    .iter_mut()
                    .find(|(h, hash, _)| *h == s.height && *hash == s.head_hash)
                {
                    Some((_, _, at)) => at.push(a.index),
                    None => heads.push((s.height, s.head_hash.clone(), vec![a.index])),
                }
            }
            Err(e) => text += &format!("{:<9} {:<24} unreachable: {e}\n", a.index, a.url),
        }
    }
    let answered: usize = heads.iter().map(|(_, _, at)| at.len()).sum();
    text += &format!("{answered} of {} validators answered", answers.len());
    heads.sort_by_key(|h| std::cmp::Reverse(h.0));
    for (height, hash, at) in &heads {
        let list: Vec<String> = at.iter().map(usize::to_string).collect();
        text += &format!(
            "; at height {height} (head {}): {}",
            short(hash),
            list.join(", ")
        );
    }
    text + "\n" + &evidence_lines(answers)
}

/// Most views listed per faulty validator.
const VIEWS_SHOWN: usize = 8;

/// One line per validator some answer holds evidence against: `evidence: <address> (signer
/// <index in the genesis set>) signed conflicting votes in views <v>, … (<kinds>); recorded by
/// <validator folder>, …`.
fn evidence_lines(answers: &[Answer]) -> String {
    use std::collections::{BTreeMap, BTreeSet};
    // signer → (address, views, kinds, recorded by)
    type Faulty = (String, BTreeSet<u64>, BTreeSet<String>, BTreeSet<usize>);
    let mut faulty: BTreeMap<u32, Faulty> = BTreeMap::new();
    for a in answers {
        for e in a.evidence.iter().flat_map(|p| &p.evidence) {
            let f = faulty.entry(e.signer).or_default();
            f.0 = e.validator.clone();
            f.1.insert(e.view);
            f.2.insert(e.kind.clone());
            f.3.insert(a.index);
        }
    }
    let mut text = String::new();
    for (signer, (address, views, kinds, by)) in faulty {
        let mut shown: Vec<String> = views.iter().take(VIEWS_SHOWN).map(u64::to_string).collect();
        if views.len() > VIEWS_SHOWN {
            shown.push(format!("… ({} views)", views.len()));
        }
        let by: Vec<String> = by.iter().map(usize::to_string).collect();
        let kinds: Vec<String> = kinds.into_iter().collect();
        text += &format!(
            "evidence: {address} (signer {signer}) signed conflicting votes in views {} ({}); \
             recorded by {}\n",
            shown.join(", "),
            kinds.join(", "),
            by.join(", ")
        );
    }
    text
}
