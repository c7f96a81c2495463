//! `gamechain status --net DIR`: every validator of a network folder made by `gamechain
//! testnet` (`DIR/<i>/node.toml`, i = 0, 1, … while they exist), asked for its status at once,
//! shown one line each (height, head, state root, mempool), unreachable ones with the reason,
//! then which validators agree on which head, then the evidence of faulty validators they hold
//! (`GET /v1/evidence`, first page): who signed conflicting votes, in which views, and which
//! validators recorded it. `--json` prints the same as a JSON array (each entry with its
//! `evidence` page).
//!
//! A node's answer is not taken on trust: each record is checked against the genesis in the
//! folder (`DIR/0/<data_dir>/genesis.json`) as `gamechain verify` checks it, the faulty
//! validator is named from the votes' signer (never from the node's `validator` field) by its
//! address and its place in the genesis file's `validators.set`, and a record that proves
//! nothing is listed as such. Without that genesis file the records are shown as unchecked.

use std::path::Path;
use std::time::Duration;

use gamechain_client::client::{Client, EvidencePage, Status};
use serde_json::{json, Value};

use crate::cli::error::CliError;
use crate::config::NodeConfig;
use crate::proof::evidence::EvidenceChecker;

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
/// The evidence checker of the network's genesis (`DIR/0/<data_dir>/genesis.json`) and the
/// addresses of its `validators.set` in file order; `None` when there is no such file or it
/// names no validators (the records are then shown unchecked).
fn genesis_checker(dir: &Path) -> Option<(EvidenceChecker, Vec<String>)> {
    let folder = dir.join("0");
    let config = NodeConfig::load(&folder.join("node.toml")).ok()?;
    let text = std::fs::read_to_string(folder.join(&config.data_dir).join("genesis.json")).ok()?;
    let genesis = gamechain_runtime::chain::Genesis::from_json(&text).ok()?;
    let checker = EvidenceChecker::new(&genesis, &hex::encode(genesis.hash())).ok()?;
    let order = genesis
        .validators
        .as_ref()?
        .set
        .iter()
        .map(|v| v.address.clone())
        .collect();
    Some((checker, order))
}

pub async fn run(dir: &Path, as_json: bool, out: &mut dyn std::io::Write) -> Result<(), CliError> {
    let urls = validator_urls(dir)?;
    let checker = genesis_checker(dir);
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
        table(&answers, checker.as_ref())
    };
    out.write_all(text.as_bytes())
        .map_err(|e| CliError::Usage(format!("cannot write the output: {e}")))
}

/// The human form: a line per validator, then the heads and who is at each.
fn table(answers: &[Answer], checker: Option<&(EvidenceChecker, Vec<String>)>) -> String {
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
    text + "\n" + &evidence_lines(answers, checker)
}

/// Most views listed per faulty validator.
const VIEWS_SHOWN: usize = 8;

/// One line per validator some answer holds evidence against: `evidence: <address>
/// (validator <its index in the genesis file's validators.set>) signed conflicting votes in
/// views <v>, … (<kinds>); recorded by <validator folder>, …`, from the records that check
/// against `checker`'s genesis; then a line per record that does not (`unproven evidence …:
/// why`). Without a checker, the records as the nodes describe them, marked unchecked.
fn evidence_lines(answers: &[Answer], checker: Option<&(EvidenceChecker, Vec<String>)>) -> String {
    use std::collections::{BTreeMap, BTreeSet};
    // the faulty validator's name → (views, kinds, recorded by)
    type Faulty = (BTreeSet<u64>, BTreeSet<String>, BTreeSet<usize>);
    let mut faulty: BTreeMap<String, Faulty> = BTreeMap::new();
    let mut unproven = Vec::new();
    for a in answers {
        for e in a.evidence.iter().flat_map(|p| &p.evidence) {
            let name = match checker {
                None => format!(
                    "{:?} (signer {}; UNCHECKED: no genesis.json in the folder)",
                    e.validator, e.signer
                ),
                Some((checker, order)) => {
                    let proven = crate::verify::evidence::from_wire(e)
                        .and_then(|stored| checker.check_record(&stored));
                    match proven {
                        Err(why) => {
                            unproven.push(format!(
                                "unproven evidence held by validator {}: record {}: {why:?}\n",
                                a.index, e.id
                            ));
                            continue;
                        }
                        Ok(p) => {
                            let address = checker
                                .validator(p.signer)
                                .map(|v| v.0.clone())
                                .unwrap_or_default();
                            let index = order.iter().position(|x| *x == address);
                            match index {
                                Some(i) => format!("{address} (validator {i})"),
                                None => format!("{address} (signer {})", p.signer),
                            }
                        }
                    }
                }
            };
            let f = faulty.entry(name).or_default();
            f.0.insert(e.view);
            f.1.insert(format!("{:?}", e.kind).trim_matches('"').to_string());
            f.2.insert(a.index);
        }
    }
    let mut text = String::new();
    for (name, (views, kinds, by)) in faulty {
        let mut shown: Vec<String> = views.iter().take(VIEWS_SHOWN).map(u64::to_string).collect();
        if views.len() > VIEWS_SHOWN {
            shown.push(format!("… ({} views)", views.len()));
        }
        let by: Vec<String> = by.iter().map(usize::to_string).collect();
        let kinds: Vec<String> = kinds.into_iter().collect();
        text += &format!(
            "evidence: {name} signed conflicting votes in views {} ({}); recorded by {}\n",
            shown.join(", "),
            kinds.join(", "),
            by.join(", ")
        );
    }
    text + &unproven.concat()
}
