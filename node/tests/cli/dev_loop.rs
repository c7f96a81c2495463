//! `gamechain dev` as an author uses it (issue 25, item 4), with the real binary: `module new`
//! makes a crate in a temporary folder; `gamechain dev --path tally --listen <free port>` runs
//! as a child process; after its `built … deployed tally at block <h>` line the module's `add`
//! op is played over HTTP (signed with the Rust client) and its view answers; the `/dev/` page
//! and the TypeScript client are there. A save with a syntax error prints the compiler's error
//! and `build failed; the previous code keeps running` (the module still answers); a save that
//! adds an op (`double`, in the code and the schema) prints `rebuilt … upgraded at block <h>
//! (none)`: the regenerated TypeScript client has `doubleOp`, type-checks with `tsc --strict`
//! beside a script that plays the new op through it (`TallyClient#double`, compiled and run by
//! Node.js), and that works on the tally kept from before. A save
//! whose `gc_migrate` fails prints `upgrade refused at block <h>: <the receipt's error>` and the
//! old code keeps running; one whose migration works prints `(migration ran)` and its writes are
//! there, read and played on through the same TypeScript client. SIGINT
//! ends it with exit 0 after `stopped`. Prints (stderr) the time from `module new` to the first
//! deploy and to the first op played, and from each save to its line.
//!
//! The first build of the new crate compiles the SDK for wasm (about 30 s on 2 cores; the budget
//! is 10 minutes); only the guest `.wasm` is built, never the crate's native tests.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use crate::common::cli::{run, text};
use crate::common::typescript::{run_tool, ts_work_dir, tsc_command};
use crate::common::{free_port, BIN};
use gamechain_client::client::Client;
use gamechain_runtime::chain::{Action, Network, SecretKey};
use serde_json::json;

/// Kills the child (SIGKILL) unless it was waited for: no `gamechain dev` outlives a failed test.
struct Killer(Option<Child>);

impl Drop for Killer {
    fn drop(&mut self) {
        if let Some(child) = &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The next line of `lines` containing `want`, within `limit`; every line seen is echoed to
/// stderr. Panics on a timeout or the end of the output, with what was seen.
fn wait_for(lines: &Receiver<String>, want: &str, limit: Duration) -> String {
    let deadline = Instant::now() + limit;
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) => {
                eprintln!("dev> {line}");
                if line.contains(want) {
                    return line;
                }
                seen.push(line);
            }
            Err(e) => panic!("no line with {want:?} within {limit:?} ({e}); seen: {seen:#?}"),
        }
    }
}

/// [`wait_for`] each of `wants`, in any order.
fn wait_for_all(lines: &Receiver<String>, wants: &[&str], limit: Duration) {
    let deadline = Instant::now() + limit;
    let mut missing: Vec<&str> = wants.to_vec();
    while !missing.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) => {
                eprintln!("dev> {line}");
                missing.retain(|want| !line.contains(want));
            }
            Err(e) => panic!("no lines with {missing:?} within {limit:?} ({e})"),
        }
    }
}

/// Plays the new op `double` through the generated client: prints `{"before": n, "after": m}`,
/// the sender's tally read through the client's typed view around it.
const DOUBLE_TS: &str = r#"import { Chain, Key } from '@gamechain/sdk';
import { TallyClient } from './tally.js';

declare const process: { env: Record<string, string | undefined> };
const tally = new TallyClient(new Chain(process.env.GAMECHAIN_NODE ?? ''));
const key = Key.fromWif(process.env.WIF ?? '');
const before = await tally.viewTally({ player: key.address });
const done = await tally.double(key);
if (!done.receipt.ok) throw new Error(`double failed: ${done.receipt.error}`);
const after = await tally.viewTally({ player: key.address });
console.log(JSON.stringify({ before: before.tally, after: after.tally }));
"#;

async fn play(client: &Client, key: &SecretKey, op: serde_json::Value) -> (bool, Option<String>) {
    let action = Action::Game {
        game: "tally".into(),
        op: serde_json::value::to_raw_value(&op).unwrap(),
    };
    let included = client
        .send_and_wait(key, action, Duration::from_secs(30))
        .await
        .unwrap();
    (included.receipt.ok, included.receipt.error)
}

async fn tally_of(client: &Client, address: &str) -> serde_json::Value {
    client.view("tally", &[("player", address)]).await.unwrap()["tally"].clone()
}

fn edit(file: &Path, edit: impl FnOnce(String) -> String) {
    let text = std::fs::read_to_string(file).unwrap();
    std::fs::write(file, edit(text)).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_dev_play_edit_upgrade_stop() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    let started = Instant::now();
    let out = run(cwd, &["module", "new", "tally"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));

    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let mut child = Command::new(BIN)
        .args(["dev", "--path", "tally", "--listen", &listen])
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, lines) = channel();
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let tx2 = tx.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx2.send(format!("[stderr] {line}"));
        }
    });
    let mut guard = Killer(Some(child));
    let wait = |want: &str, limit: u64| {
        tokio::task::block_in_place(|| wait_for(&lines, want, Duration::from_secs(limit)))
    };

    let node_line = wait("node http://", 120);
    assert!(
        node_line.starts_with(&format!("node http://{listen} ")),
        "{node_line}"
    );
    let deployed = wait("deployed tally at block", 600);
    eprintln!(
        "dev_loop: module new -> first deploy: {} ms",
        started.elapsed().as_millis()
    );
    let rest = deployed.strip_prefix("built ").expect("built …");
    let (size, rest) = rest.split_once(" B sha256 ").unwrap();
    assert!(size.parse::<usize>().unwrap() > 1000, "{deployed}");
    assert_eq!(rest.split(' ').next().unwrap().len(), 12, "{deployed}");
    let page = wait("page http://", 10);
    assert_eq!(page, format!("page http://{listen}/dev/?module=tally"));
    let client_ts = cwd.join("tally/client/tally.ts");
    wait("client ", 10);
    let ts = std::fs::read_to_string(&client_ts).unwrap();
    assert!(ts.contains("export function addOp"), "{ts}");
    assert!(!ts.contains("doubleOp"));
    wait("watching ", 10);

    // Play: a new key, funded, adds 5; the view answers 5. The page is served.
    let url = format!("http://{listen}");
    let client = Client::new(&url).unwrap();
    let key = SecretKey::generate(Network::Testnet);
    let funded = client
        .send_and_wait(
            &key,
            Action::Faucet {
                token: "GOLD".into(),
            },
            Duration::from_secs(30),
        )
        .await
        .unwrap();
    assert!(funded.receipt.ok);
    assert_eq!(
        play(&client, &key, json!({"kind": "add", "amount": 5})).await,
        (true, None)
    );
    assert_eq!(tally_of(&client, &key.address()).await, 5);
    eprintln!(
        "dev_loop: module new -> an op played and viewed: {} ms",
        started.elapsed().as_millis()
    );
    let (ok, error) = play(&client, &key, json!({"kind": "double"})).await;
    assert!(!ok);
    assert_eq!(error.unwrap(), "invalid: unknown tally op `double`");
    for (path, has) in [("/dev/", "gamechain dev"), ("/dev/dev.js", "loadSdk")] {
        let body = reqwest::get(format!("{url}{path}"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(body.contains(has), "{path}: {body}");
    }

    // A save that does not compile: the compiler's error, the old code keeps running.
    let lib = cwd.join("tally/src/lib.rs");
    edit(&lib, |t| t + "\nfn broken( {\n");
    let saved = Instant::now();
    // stdout and stderr are two pipes: the two lines may arrive in either order.
    tokio::task::block_in_place(|| {
        wait_for_all(
            &lines,
            &[
                "error: this file contains an unclosed delimiter",
                "build failed; the previous code keeps running",
            ],
            Duration::from_secs(120),
        )
    });
    eprintln!(
        "dev_loop: save (broken) -> build failed: {} ms",
        saved.elapsed().as_millis()
    );
    assert_eq!(tally_of(&client, &key.address()).await, 5);

    // A save that adds the op `double` (code and schema): an owner upgrade, the state kept.
    edit(&lib, |t| {
        let t = t.replace("\nfn broken( {\n", "");
        let t = t.replace(
            r#""reset" "Deletes the sender's tally." {},"#,
            r#""reset" "Deletes the sender's tally." {},
        "double" "Doubles the sender's tally." {},"#,
        );
        let t = t.replace(
            r#""reset" => reset(ctx, sender),"#,
            r#""reset" => reset(ctx, sender),
            "double" => double(ctx, sender),"#,
        );
        t + r#"
fn double(ctx: &mut dyn Ctx, sender: &str) -> Result<(), ActionError> {
    let tally = ctx.get_json::<u64>(&tally_key(sender))?.unwrap_or(0) * 2;
    ctx.put_json(&tally_key(sender), &tally);
    Ok(())
}
"#
    });
    let saved = Instant::now();
    let upgraded = wait("upgraded at block", 300);
    eprintln!(
        "dev_loop: save (new op) -> upgraded: {} ms",
        saved.elapsed().as_millis()
    );
    assert!(upgraded.starts_with("rebuilt "), "{upgraded}");
    assert!(upgraded.ends_with("(none)"), "no migration: {upgraded}");
    wait("client ", 10);
    let ts = std::fs::read_to_string(&client_ts).unwrap();
    assert!(ts.contains("export function doubleOp"), "regenerated: {ts}");
    // The new op, played through the regenerated client: type-checked, compiled, run.
    let ts_dir = cwd.join("ts-play");
    ts_work_dir(&ts_dir);
    std::fs::copy(&client_ts, ts_dir.join("tally.ts")).unwrap();
    std::fs::write(ts_dir.join("double.ts"), DOUBLE_TS).unwrap();
    let compile = tsc_command(&ts_dir, &["--outDir", "out"], &["tally.ts", "double.ts"]);
    tokio::task::block_in_place(|| {
        run_tool(
            compile,
            "tsc --strict tally.ts double.ts",
            Duration::from_secs(180),
        )
    });
    let double_ts = || {
        let mut node = Command::new("node");
        node.arg("out/double.js")
            .current_dir(&ts_dir)
            .env("GAMECHAIN_NODE", &url)
            .env("WIF", key.to_wif());
        let out = tokio::task::block_in_place(|| {
            run_tool(node, "node out/double.js", Duration::from_secs(60))
        });
        let said: serde_json::Value = serde_json::from_str(out.trim())
            .unwrap_or_else(|e| panic!("double.js printed {out:?}: {e}"));
        (
            said["before"].as_u64().unwrap(),
            said["after"].as_u64().unwrap(),
        )
    };
    assert_eq!(
        double_ts(),
        (5, 10),
        "state kept, the new op played by the TS client"
    );
    assert_eq!(tally_of(&client, &key.address()).await, 10);
    let schema: serde_json::Value = reqwest::get(format!("{url}/v1/modules/tally/schema"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let kinds: Vec<&str> = schema["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["add", "reset", "double"]);

    // A save whose migration fails: the chain refuses the upgrade, the receipt's error is
    // printed, the code before keeps running.
    let with_migration = |body: &str| {
        let body = body.to_string();
        move |t: String| {
            let t = t.replace(
                "gamechain_sdk::export_module!(Tally, schema = SCHEMA);",
                "gamechain_sdk::export_module!(Tally, schema = SCHEMA, migrate);",
            );
            let start = t.find("\n    fn migrate(").unwrap_or(0);
            let t = if start > 0 {
                let end = t[start..].find("\n    }\n").unwrap() + start + "\n    }\n".len();
                format!("{}\n{}", &t[..start], &t[end..])
            } else {
                t
            };
            t.replace(
                "    fn schema(&self) -> Option<&str> {",
                &format!(
                    "    fn migrate(&self, ctx: &mut dyn Ctx, _from: &Migration) -> Result<(), ActionError> {{\n{body}\n    }}\n\n    fn schema(&self) -> Option<&str> {{"
                ),
            )
        }
    };
    edit(
        &lib,
        with_migration(
            r#"        let _ = ctx;
        Err(ActionError::invalid("the migration says no"))"#,
        ),
    );
    let saved = Instant::now();
    let refused = wait("upgrade refused at block", 300);
    eprintln!(
        "dev_loop: save (failing migration) -> refused: {} ms",
        saved.elapsed().as_millis()
    );
    assert!(refused.contains("the migration says no"), "{refused}");
    assert_eq!(
        play(&client, &key, json!({"kind": "double"})).await,
        (true, None)
    );
    assert_eq!(
        tally_of(&client, &key.address()).await,
        20,
        "old code, state kept"
    );

    // A save whose migration works: it runs in the upgrade (every tally + 1).
    edit(
        &lib,
        with_migration(
            r#"        for (key, _) in ctx.scan("tally/", None, 256) {
            let tally = ctx.get_json::<u64>(&key)?.unwrap_or(0) + 1;
            ctx.put_json(&key, &tally);
        }
        Ok(())"#,
        ),
    );
    let saved = Instant::now();
    let migrated = wait("upgraded at block", 300);
    eprintln!(
        "dev_loop: save (migration) -> upgraded: {} ms",
        saved.elapsed().as_millis()
    );
    assert!(migrated.ends_with("(migration ran)"), "{migrated}");
    assert_eq!(tally_of(&client, &key.address()).await, 21, "migrated");
    wait("client ", 10);
    assert_eq!(
        std::fs::read_to_string(&client_ts).unwrap(),
        std::fs::read_to_string(ts_dir.join("tally.ts")).unwrap(),
        "the schema did not change, nor does the client"
    );
    assert_eq!(double_ts(), (21, 42), "the TS client on the migrated state");

    // Ctrl-C: a clean stop, exit 0.
    let mut child = guard.0.take().unwrap();
    // SAFETY: no memory-safety preconditions; the child is ours and not reaped yet.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    wait("stopped", 30);
    let status = tokio::task::block_in_place(|| {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("gamechain dev did not exit within 30 s of SIGINT");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    assert!(status.success(), "exit status {status}");
}
