//! The OpenAPI document against a live in-process node: `GET /v1/openapi.json` serves
//! `node/openapi.json`, the router answers every documented operation (and `405` for the
//! methods a documented path does not take), and `schemathesis` (PyPI, the version pinned in
//! `node/tests/requirements.txt`, installed by `tests/run.sh`) finds no 5xx and no answer that breaks
//! the document.
//!
//! schemathesis is found as `$SCHEMATHESIS`, `schemathesis` on `PATH` or `python3 -m
//! schemathesis.cli`; when none runs, the test installs the pinned version into a virtual
//! environment under cargo's target directory (and fails, saying how to install it, when that
//! fails too).
//! `SCHEMATHESIS_MAX_EXAMPLES` (default 100 per operation) and `SCHEMATHESIS_SEED` (default 1,
//! so a run is reproducible) tune the run.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use gamechain_node::cli::local_node::LocalNode;
use gamechain_runtime::chain::{Action, Network, SecretKey, SignedTx};
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(30);

/// The pinned schemathesis requirement, e.g. `schemathesis==4.32.5`.
const REQUIREMENT: &str = include_str!("../requirements.txt");

/// Longest a schemathesis run may take before the test kills it and fails.
const SCHEMATHESIS_LIMIT: Duration = Duration::from_secs(300);

fn requirement() -> &'static str {
    REQUIREMENT
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("schemathesis=="))
        .expect("node/tests/requirements.txt pins schemathesis")
}

fn document() -> Value {
    serde_json::from_str(gamechain_node::server::openapi::OPENAPI_JSON).unwrap()
}

/// A value for path parameter `name` of `op`: its example, else its first named example,
/// else `x`.
fn path_value(op: &Value, name: &str) -> String {
    let param = op["parameters"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["in"] == "path" && p["name"] == name)
        .unwrap_or_else(|| panic!("path parameter {name} is declared"));
    let example = param
        .get("example")
        .or_else(|| param["examples"].as_object()?.values().next()?.get("value"));
    match example {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => "x".into(),
    }
}

/// The served document is the embedded one; each documented operation reaches its handler
/// (no router fallback: neither `no such endpoint` nor `405`), and every other method on a
/// documented path is `405` with the API's JSON error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_router_answers_every_documented_operation() {
    let node = LocalNode::start().await.expect("the node starts");
    let url = node.url();
    let url = url.trim_end_matches('/');
    let http = reqwest::Client::new();

    let served = http
        .get(format!("{url}/v1/openapi.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(served.status(), 200);
    assert_eq!(served.headers()["content-type"], "application/json");
    let served: Value = served.json().await.unwrap();
    let doc = document();
    assert_eq!(served, doc, "GET /v1/openapi.json serves node/openapi.json");

    let all_methods = ["GET", "POST", "PUT", "DELETE", "PATCH"];
    let mut operations = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        let item = item.as_object().unwrap();
        for method in all_methods {
            let op = item.get(&method.to_ascii_lowercase());
            let mut concrete = path.clone();
            for segment in path.split('/') {
                if let Some(name) = segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                    let any_op = op.or_else(|| item.values().next()).unwrap();
                    concrete = concrete.replace(segment, &path_value(any_op, name));
                }
            }
            let request = http
                .request(method.parse().unwrap(), format!("{url}{concrete}"))
                .header("content-type", "application/json")
                .body("{}");
            let answer = request.send().await.unwrap();
            let status = answer.status().as_u16();
            let body = answer.text().await.unwrap();
            if op.is_some() {
                operations += 1;
                assert_ne!(status, 405, "{method} {concrete}: {body}");
                assert!(
                    !body.contains("no such endpoint"),
                    "{method} {concrete} is documented but not routed: {status} {body}"
                );
            } else {
                assert_eq!(status, 405, "{method} {concrete} is not documented: {body}");
                let error: Value = serde_json::from_str(&body).unwrap();
                assert_eq!(error["error"]["code"], "not_found", "{body}");
            }
        }
    }
    let routed = gamechain_node::server::api::endpoints(&LocalNode::config()).len();
    assert_eq!(operations, routed, "every documented operation was tried");
    node.stop().await.unwrap();
}

/// Requests outside the document's shapes that the node used to accept (found while checking
/// the document against the handlers): a signed transaction sent as a JSON array
/// `["<body>", "<signature>"]` (serde reads a struct from a sequence) and a block height with a
/// sign or leading zeros (Rust's integer parsing takes `+1` and `01`). Both are refused now; the
/// same transaction as the documented object is admitted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_outside_the_document_are_refused() {
    let node = LocalNode::start().await.expect("the node starts");
    let url = node.url();
    let url = url.trim_end_matches('/');
    let client = node.client();
    let http = reqwest::Client::new();
    let key = SecretKey::generate(Network::Testnet);
    let faucet = Action::Faucet {
        token: "GOLD".into(),
    };
    let (body, signature) = client
        .next_body(&key, faucet)
        .await
        .unwrap()
        .sign(&key)
        .into_parts();
    let post = |json: Value| {
        http.post(format!("{url}/v1/tx"))
            .header("content-type", "application/json")
            .body(json.to_string())
            .send()
    };
    let answer = post(json!([body, signature])).await.unwrap();
    assert_eq!(answer.status(), 400);
    let error: Value = answer.json().await.unwrap();
    assert_eq!(error["error"]["code"], "bad_json", "{error}");
    let account = client.account(&key.address()).await.unwrap();
    assert_eq!(account.next_nonce, 0, "the array was not admitted");
    let answer = post(json!({"body": body, "signature": signature}))
        .await
        .unwrap();
    assert_eq!(answer.status(), 200, "{}", answer.text().await.unwrap());

    for height in ["+1", "01", "00", "-0"] {
        let answer = http
            .get(format!("{url}/v1/blocks/{height}"))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 400, "/v1/blocks/{height}");
        let error: Value = answer.json().await.unwrap();
        assert_eq!(error["error"]["code"], "invalid", "{error}");
    }
    let answer = http.get(format!("{url}/v1/blocks/0")).send().await.unwrap();
    assert_eq!(answer.status(), 200);
    node.stop().await.unwrap();
}

/// Values of the seeded chain for schemathesis' examples phase.
struct ChainFacts {
    /// A funded address.
    address: String,
    /// The txid of its tic-tac-toe `create`.
    txid: String,
    /// The height of the block that included it.
    height: u64,
    /// The game id (the txid's first 16 hex).
    game: String,
    /// tic-tac-toe's code hash.
    code_hash: String,
    /// A signed faucet transaction of a fresh key, not sent: `{"body", "signature"}`.
    signed: Value,
}

/// Some state for schemathesis to find: a funded account with a tic-tac-toe table, and a
/// valid transaction it may submit.
async fn seed_chain(node: &LocalNode) -> ChainFacts {
    let client = node.client();
    let key = SecretKey::generate(Network::Testnet);
    let faucet = || Action::Faucet {
        token: "GOLD".into(),
    };
    client.send_and_wait(&key, faucet(), WAIT).await.unwrap();
    let create = Action::game("tictactoe", &json!({"kind": "create", "stake": "100"}));
    let included = client.send_and_wait(&key, create, WAIT).await.unwrap();
    assert!(included.receipt.ok, "{:?}", included.receipt);
    let txid = included.txid.clone();
    let fresh = SecretKey::generate(Network::Testnet);
    let (body, signature) = client
        .next_body(&fresh, faucet())
        .await
        .unwrap()
        .sign(&fresh)
        .into_parts();
    ChainFacts {
        address: key.address(),
        height: included.height,
        game: txid[..16].to_string(),
        txid,
        code_hash: client.module("tictactoe").await.unwrap().code_hash,
        signed: json!({"body": body, "signature": signature}),
    }
}

/// `doc` with the examples of its parameters (and of `POST /v1/tx`'s body) extended by values
/// of the seeded chain, so that examples reach found records and an admitted transaction.
fn with_chain_examples(mut doc: Value, facts: &ChainFacts) -> Value {
    let value_of = |name: &str| -> Option<Value> {
        Some(match name {
            "txid" => json!(facts.txid),
            "account" => json!(facts.address),
            "player" => json!(facts.address),
            "id" => json!(facts.game),
            "height" => json!(facts.height),
            "code_hash" => json!(facts.code_hash),
            _ => return None,
        })
    };
    for item in doc["paths"].as_object_mut().unwrap().values_mut() {
        for op in item.as_object_mut().unwrap().values_mut() {
            let params = op.get_mut("parameters").and_then(Value::as_array_mut);
            for param in params.into_iter().flatten() {
                let name = param["name"].as_str().unwrap().to_string();
                let Some(value) = value_of(&name) else {
                    continue;
                };
                let param = param.as_object_mut().unwrap();
                let mut examples = param
                    .remove("examples")
                    .and_then(|e| e.as_object().cloned())
                    .unwrap_or_default();
                if let Some(example) = param.remove("example") {
                    examples.insert("doc".into(), json!({ "value": example }));
                }
                examples.insert("chain".into(), json!({ "value": value }));
                param.insert("examples".into(), Value::Object(examples));
            }
        }
    }
    let body = &mut doc["paths"]["/v1/tx"]["post"]["requestBody"]["content"]["application/json"];
    let body = body.as_object_mut().unwrap();
    let example = body.remove("example").expect("POST /v1/tx has an example");
    body.insert(
        "examples".into(),
        json!({"unsigned": {"value": example}, "signed": {"value": facts.signed}}),
    );
    doc
}

/// The command that runs schemathesis: `$SCHEMATHESIS`, else `schemathesis` on `PATH`, else
/// `python3 -m schemathesis.cli`, whichever answers `--version` first; its version line is
/// printed, with a note when it is not the pinned one. Panics, saying how to install it, when
/// none answers.
fn schemathesis_command() -> Vec<String> {
    let candidates: Vec<Vec<String>> = match std::env::var("SCHEMATHESIS") {
        Ok(program) => vec![vec![program]],
        Err(_) => vec![
            vec!["schemathesis".into()],
            vec!["python3".into(), "-m".into(), "schemathesis.cli".into()],
        ],
    };
    for command in &candidates {
        let Ok(out) = Command::new(&command[0])
            .args(&command[1..])
            .arg("--version")
            .stdin(Stdio::null())
            .output()
        else {
            continue;
        };
        if !out.status.success() {
            continue;
        }
        let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let pinned = requirement().trim_start_matches("schemathesis==");
        if !version.ends_with(&format!("version {pinned}")) {
            println!("note: {version}, while node/tests/requirements.txt pins {pinned}");
        }
        return command.clone();
    }
    // Not installed: the test sets itself up, as the README's test command promises, in a
    // virtual environment under cargo's target directory (once per test binary).
    static INSTALLED: std::sync::OnceLock<Result<Vec<String>, String>> = std::sync::OnceLock::new();
    INSTALLED
        .get_or_init(install_in_venv)
        .clone()
        .unwrap_or_else(|why| {
            panic!(
                "schemathesis is not installed (tried {candidates:?}) and installing it failed: \
                 {why}; install it with `python3 -m pip install -r node/tests/requirements.txt` \
                 ({}), as tests/run.sh does, or point $SCHEMATHESIS at its executable",
                requirement()
            )
        })
}

/// `python3 -m venv <target>/schemathesis-venv` and `pip install -r node/tests/requirements.txt`
/// in it; the command that runs its schemathesis.
fn install_in_venv() -> Result<Vec<String>, String> {
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("schemathesis-venv");
    let python = venv.join("bin").join("python3");
    let requirements = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/requirements.txt");
    let run = |program: &Path, args: &[&str]| -> Result<(), String> {
        let out = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("{}: {e}", program.display()))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{} {args:?}: {}",
                program.display(),
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    };
    if !python.exists() {
        println!("installing schemathesis into {}", venv.display());
        run(
            Path::new("python3"),
            &["-m", "venv", venv.to_str().ok_or("a UTF-8 path")?],
        )?;
    }
    run(
        &python,
        &[
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
            requirements.to_str().ok_or("a UTF-8 path")?,
        ],
    )?;
    let command = vec![
        python.display().to_string(),
        "-m".into(),
        "schemathesis.cli".into(),
    ];
    let answers = Command::new(&command[0])
        .args(&command[1..])
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if answers {
        Ok(command)
    } else {
        Err("the installed schemathesis does not answer --version".into())
    }
}

/// Runs `program args`, killing it after `limit`; returns (exit success, stdout + stderr).
fn run_bounded(program: &str, args: &[String], cwd: &Path, limit: Duration) -> (bool, String) {
    let mut child = match Command::new(program)
        .args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .env("PYTHONUNBUFFERED", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(e) => panic!("cannot run `{program}`: {e}"),
    };
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let text = format!("{}{}", out.join().unwrap(), err.join().unwrap());
    match status {
        Some(s) => (s.success(), text),
        None => panic!(
            "schemathesis ran over {} s and was stopped:\n{text}",
            limit.as_secs()
        ),
    }
}

/// Runs schemathesis on the document `schema_file` against the node at `url` with every check
/// but `positive_data_acceptance`, over `phases`, at most `max_examples` per operation; fails
/// the test with its output when it finds anything, else prints its summary and duration and
/// returns its output.
async fn run_schemathesis(
    url: &str,
    schema_file: &Path,
    phases: &str,
    max_examples: &str,
) -> String {
    let command = schemathesis_command();
    let seed = std::env::var("SCHEMATHESIS_SEED").unwrap_or_else(|_| "1".into());
    let args: Vec<String> = command[1..]
        .iter()
        .map(String::as_str)
        .chain([
            "run",
            &schema_file.display().to_string(),
            "--url",
            url,
            "--checks",
            "all",
            "--exclude-checks",
            "positive_data_acceptance",
            "--phases",
            phases,
            "--max-examples",
            max_examples,
            "--seed",
            &seed,
            // One worker: with several, schemathesis parses hypothesis strategies' source on
            // several threads at once, and CPython 3.11's `ast` keeps one recursion counter per
            // interpreter, so runs failed at random with "SystemError: AST constructor recursion
            // depth mismatch" (a runtime error of the tool, not a finding).
            "--workers",
            "1",
            "--request-timeout",
            "30",
            "--no-shrink",
            "--suppress-health-check",
            "all",
        ])
        .map(str::to_string)
        .collect();
    let program = command[0].clone();
    let cwd = schema_file.parent().unwrap().to_path_buf();
    let start = Instant::now();
    let (ok, output) =
        tokio::task::spawn_blocking(move || run_bounded(&program, &args, &cwd, SCHEMATHESIS_LIMIT))
            .await
            .unwrap();
    let took = start.elapsed();
    assert!(
        ok,
        "schemathesis found responses that break node/openapi.json (or 5xx):\n{output}"
    );
    let summary: Vec<&str> = output
        .lines()
        .skip_while(|l| !l.contains(" SUMMARY "))
        .filter(|l| !l.trim().is_empty())
        .collect();
    println!(
        "schemathesis: {:.1} s, phases {phases}, at most {max_examples} examples per operation, \
         seed {seed}\n{}",
        took.as_secs_f64(),
        summary.join("\n")
    );
    output
}

/// The served document as a file in `dir`, passed through `edit`.
async fn document_file(url: &str, dir: &Path, edit: impl FnOnce(Value) -> Value) -> PathBuf {
    let served: Value = reqwest::get(format!("{url}/v1/openapi.json"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let file = dir.join("openapi.json");
    std::fs::write(&file, serde_json::to_vec_pretty(&edit(served)).unwrap()).unwrap();
    file
}

/// schemathesis against a live node with a dev chain: every check but
/// `positive_data_acceptance` (a schema-valid transaction is still unsigned, a schema-valid
/// txid is still unknown: those are refused, as documented), over the examples (with the
/// seeded chain's values), coverage, fuzzing and stateful (`POST /v1/tx` → `GET /v1/tx/{txid}`)
/// phases. Fails on any 5xx, status, content type, header or body that breaks the
/// document, a schema-violating request accepted, or a wrong answer to an undocumented method.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemathesis_finds_no_breakage() {
    let max_examples = std::env::var("SCHEMATHESIS_MAX_EXAMPLES").unwrap_or_else(|_| "100".into());
    let node = LocalNode::start().await.expect("the node starts");
    let facts = seed_chain(&node).await;
    let url = node.url();
    let url = url.trim_end_matches('/');
    let work = tempfile::tempdir().unwrap();
    // The served document (the test above checks it is node/openapi.json) with the seeded
    // chain's values as extra examples.
    let file = document_file(url, work.path(), |doc| with_chain_examples(doc, &facts)).await;
    run_schemathesis(
        url,
        &file,
        "examples,coverage,fuzzing,stateful",
        &max_examples,
    )
    .await;
    // The examples phase reached the chain: the signed example transaction was admitted.
    let signed = SignedTx::new(
        facts.signed["body"].as_str().unwrap().to_string(),
        facts.signed["signature"].as_str().unwrap().to_string(),
    );
    node.client()
        .tx(&signed.txid())
        .await
        .expect("schemathesis submitted the signed example transaction");
    node.stop().await.unwrap();
}

/// schemathesis against a node with a tight per-IP rate limit (20 requests a second, bursts of
/// 10): most answers are `429 rate_limited`, and they too must match the document (status,
/// JSON body, the required `retry-after` header).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemathesis_finds_rate_limited_answers_documented() {
    let config = gamechain_node::NodeConfig {
        rate_limit_per_sec: 20,
        rate_limit_burst: 10,
        ..LocalNode::config()
    };
    let node = LocalNode::start_with(config)
        .await
        .expect("the node starts");
    let url = node.url();
    let url = url.trim_end_matches('/');
    let work = tempfile::tempdir().unwrap();
    let file = document_file(url, work.path(), |doc| doc).await;
    let output = run_schemathesis(url, &file, "examples,coverage,fuzzing", "30").await;
    assert!(
        output.contains("429"),
        "the run met the rate limit (schemathesis reports 429 answers):\n{output}"
    );
    node.stop().await.unwrap();
}
