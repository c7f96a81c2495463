//! `gamechain module codegen --ts` end to end, with the real binary: the TypeScript client of
//! tic-tac-toe, generated from its real schema (`--module tictactoe` against a `gamechain node`
//! process; the same client from the served JSON with `--schema` and from the module's stored
//! `.wasm` with `--wasm`), is the same bytes twice,
//! type-checks with `tsc --strict` together with `node/tests/codegen_ts/play.ts`, and that
//! script, compiled and run by Node.js, plays a staked game between two new keys against a
//! `gamechain node` process (faucet, create, join, a refused move, moves to a win, the finished
//! game read through the typed view: winner, payout and stake as bigint, balances). The client of
//! a schema using every type (`codegen_ts/all_types.schema.json`) passes tsc's stricter checks
//! too and, run by `codegen_ts/every_type.ts`, encodes, decodes and refuses values as documented.
//! `--module ID` against a node without that schema fails with one line saying what to do;
//! `--wasm` reads the same schema from a custom section; a bad schema writes nothing.
//!
//! The fixtures stay in `node/tests/codegen_ts/` (the CLI's unit tests read the tic-tac-toe
//! schema there too).
//!
//! Needs Node.js 20+ and npm; `typescript` comes from node/web/sdk's lockfile (`npm ci`, run here
//! when node_modules/ lacks it). The SDK is linked into the work folder as `@gamechain/sdk`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::common::cli::{failed, json_ok, run, run_on, text};
use crate::common::typescript::{run_tool, ts_work_dir, tsc_command};
use crate::common::{heavy, NodeProcess};
use sha2::{Digest, Sha256};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/codegen_ts")
        .join(name)
}

/// The checks of tsc beyond `--strict` a project may turn on: the generated file passes them too.
const STRICTER: [&str; 13] = [
    "--noEmit",
    "--exactOptionalPropertyTypes",
    "--noUncheckedIndexedAccess",
    "--noImplicitReturns",
    "--noUnusedLocals",
    "--noUnusedParameters",
    "--noPropertyAccessFromIndexSignature",
    "--noFallthroughCasesInSwitch",
    "--noImplicitOverride",
    "--verbatimModuleSyntax",
    "--isolatedModules",
    "--erasableSyntaxOnly",
    "--forceConsistentCasingInFileNames",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_client_type_checks_and_plays_a_staked_game() {
    let _heavy = heavy();
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("client");
    ts_work_dir(&work);
    std::fs::copy(fixture("play.ts"), work.join("play.ts")).unwrap();
    // A node: tic-tac-toe is a genesis module and embeds its schema.
    let node_dir = tmp.path().join("node");
    std::fs::create_dir_all(&node_dir).unwrap();
    let mut node = NodeProcess::new(&node_dir, "");
    node.start().await;
    let url = node.url();
    let served = reqwest::get(format!("{url}/v1/modules/tictactoe/schema"))
        .await
        .unwrap();
    assert!(served.status().is_success(), "{}", served.status());
    let json = served.bytes().await.unwrap().to_vec();
    let schema = work.join("tictactoe.schema.json");
    std::fs::write(&schema, &json).unwrap();
    let schema_arg = schema.to_str().unwrap();

    // The client of the real schema (`--module` against the node), twice: the same bytes; the
    // printed summary names the schema's hash.
    let out = run_on(
        &work,
        &url,
        &[
            "module",
            "codegen",
            "--ts",
            "tictactoe.ts",
            "--module",
            "tictactoe",
        ],
    )
    .await;
    let printed = json_ok("codegen --module", &out);
    let sha = hex::encode(Sha256::digest(&json));
    assert_eq!(printed["module"], "tictactoe");
    assert_eq!(printed["schema_sha256"], sha.as_str());
    let client = std::fs::read_to_string(work.join("tictactoe.ts")).unwrap();
    assert_eq!(printed["size"], client.len());
    assert!(
        client.contains(&format!("SHA-256 of its JSON: {sha}")),
        "{client}"
    );
    let again = run(
        &work,
        &[
            "module",
            "codegen",
            "--ts",
            "new/again.ts",
            "--schema",
            schema_arg,
        ],
    )
    .await;
    json_ok("codegen again (--schema)", &again);
    assert_eq!(
        std::fs::read_to_string(work.join("new/again.ts")).unwrap(),
        client,
        "deterministic, and the same from the served file"
    );
    std::fs::remove_dir_all(work.join("new")).unwrap();

    // The module's own `.wasm` (its code as the node stores it), read with `--wasm`: the schema
    // of its `gamechain.schema` custom section gives the same client.
    let record: serde_json::Value = reqwest::get(format!("{url}/v1/modules/tictactoe"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let hash = record["code_hash"].as_str().expect("a code hash");
    let code = reqwest::get(format!("{url}/v1/code/{hash}"))
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    std::fs::write(work.join("tictactoe.wasm"), &code).unwrap();
    let out = run(
        &work,
        &[
            "module",
            "codegen",
            "--ts",
            "from_wasm.ts",
            "--wasm",
            "tictactoe.wasm",
        ],
    )
    .await;
    json_ok("codegen --wasm", &out);
    assert_eq!(
        std::fs::read_to_string(work.join("from_wasm.ts")).unwrap(),
        client
    );
    std::fs::remove_file(work.join("from_wasm.ts")).unwrap();
    std::fs::write(work.join("plain.wasm"), b"\0asm\x01\0\0\0").unwrap();
    let out = run(
        &work,
        &[
            "module",
            "codegen",
            "--ts",
            "plain.ts",
            "--wasm",
            "plain.wasm",
        ],
    )
    .await;
    failed(
        "a wasm without a schema",
        &out,
        1,
        "plain.wasm: no `gamechain.schema` custom section",
    );

    // A bad schema is refused in one line and writes nothing.
    std::fs::write(
        work.join("bad.json"),
        r#"{"schema_version":1,"module":"tictactoe","ops":[{"kind":"9x"}]}"#,
    )
    .unwrap();
    let out = run(
        &work,
        &[
            "module", "codegen", "--ts", "bad.ts", "--schema", "bad.json",
        ],
    )
    .await;
    failed(
        "a bad schema",
        &out,
        1,
        "schema: op kind `9x` cannot name TypeScript functions",
    );
    assert!(!work.join("bad.ts").exists());
    let out = run(&work, &["module", "codegen", "--ts", "bad.ts"]).await;
    assert_eq!(
        out.status.code(),
        Some(2),
        "no source is a usage error: {}",
        text(&out.stderr)
    );

    // `--module` of a module the node serves no schema for fails saying what to do.
    let out = run_on(
        &work,
        &url,
        &[
            "module",
            "codegen",
            "--ts",
            "x.ts",
            "--module",
            "no_such_module",
        ],
    )
    .await;
    failed(
        "--module without a schema",
        &out,
        1,
        &format!("the node at {url} serves no schema for module `no_such_module` (GET /v1/modules/no_such_module/schema answered 404"),
    );
    assert!(text(&out.stderr).contains("pass --schema FILE or --wasm FILE instead"));
    assert!(!work.join("x.ts").exists());

    // tsc --strict: the client and a script using it type-check, then compile to JS.
    run_tool(
        tsc_command(&work, &["--noEmit"], &["tictactoe.ts", "play.ts"]),
        "tsc --strict --noEmit",
        Duration::from_secs(180),
    );
    run_tool(
        tsc_command(&work, &["--outDir", "out"], &["tictactoe.ts", "play.ts"]),
        "tsc --strict (emit)",
        Duration::from_secs(180),
    );

    // The client alone under every stricter check tsc has, and so are the clients of a schema
    // using every type (quoted field names, another module's event kind, scalar queries) and of
    // a schema declaring nothing.
    for (name, file) in [("all_types", "all_types.schema.json"), ("empty", "")] {
        let path = work.join(format!("{name}.json"));
        if file.is_empty() {
            std::fs::write(&path, r#"{"schema_version":1,"module":"empty"}"#).unwrap();
        } else {
            std::fs::copy(fixture(file), &path).unwrap();
        }
        let ts = format!("{name}.ts");
        let out = run(
            &work,
            &[
                "module",
                "codegen",
                "--ts",
                &ts,
                "--schema",
                path.to_str().unwrap(),
            ],
        )
        .await;
        json_ok(&format!("codegen {name}"), &out);
    }
    run_tool(
        tsc_command(
            &work,
            &STRICTER,
            &["tictactoe.ts", "all_types.ts", "empty.ts"],
        ),
        "tsc --strict and the stricter checks",
        Duration::from_secs(180),
    );

    // Every type at run time (no node): every_type.ts against the every-type client.
    std::fs::copy(fixture("every_type.ts"), work.join("every_type.ts")).unwrap();
    run_tool(
        tsc_command(
            &work,
            &["--outDir", "out"],
            &["all_types.ts", "every_type.ts"],
        ),
        "tsc --strict every_type.ts",
        Duration::from_secs(180),
    );
    let mut every = Command::new("node");
    every.arg("out/every_type.js").current_dir(&work);
    let said = run_tool(every, "node out/every_type.js", Duration::from_secs(60));
    assert_eq!(said.trim(), "ok");

    // The game, played by the compiled script against the node.
    let mut play = Command::new("node");
    play.arg("out/play.js")
        .current_dir(&work)
        .env("GAMECHAIN_NODE", &url);
    let stdout = tokio::task::spawn_blocking(move || {
        run_tool(play, "node out/play.js", Duration::from_secs(240))
    })
    .await
    .unwrap();
    let last = stdout.lines().last().unwrap_or_default();
    let result: serde_json::Value =
        serde_json::from_str(last).unwrap_or_else(|e| panic!("play.js printed {stdout:?}: {e}"));
    assert_eq!(result["payout"], "200", "{result}");
    assert_eq!(result["status"], "finished", "{result}");

    // The chain agrees: the game the script played, as the plain API serves it.
    let id = result["id"].as_str().unwrap();
    let game: serde_json::Value = reqwest::get(format!("{url}/v1/games/tictactoe?id={id}"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(game["winner"], result["winner"], "{game}");
    assert_eq!(game["stake"], "100", "{game}");
    assert_eq!(game["result"], "x_won", "{game}");
}
