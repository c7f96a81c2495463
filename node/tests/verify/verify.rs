//! `gamechain verify` and `gamechain export` as a user runs them, on the real binary (and
//! `GET /v1/code/<hash>`, which `verify --node` reads module code from):
//!
//! - `a_chain_verifies_from_its_data_the_api_and_an_export`: a node plays concurrent games
//!   (failed moves, transfers, stakes); `verify --node` while it runs, `export --node`, then
//!   after a clean stop `verify --data`, `export --data` and `verify --file` of both exports
//!   all reach the node's head state root, and the text report names it.
//! - `tampering_is_named_by_height_and_field`: copies of the stopped node's data directory,
//!   each with one change (a stored state value, a receipt, a transaction byte, a header
//!   field re-hashed so only its signature gives it away, a beacon of another height signed
//!   with the real beacon key, a header's state root), and an
//!   export with one receipt changed: `verify` exits 4 and names the block, the transaction
//!   and the field (and the state key with its expected and replayed values).

use std::path::{Path, PathBuf};

use crate::common::replay::{run, verify_json, workload};
use crate::common::{copy_dir, NodeProcess};
use gamechain_ledger::rusqlite::types::ValueRef;
use gamechain_ledger::rusqlite::{params, Connection};
use gamechain_ledger::storage::codec;
use gamechain_runtime::chain::Header;
use serde_json::Value;

/// Games played at once by the workload.
const GAMES: usize = 6;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A node that played the workload and was stopped cleanly; returns its process (stopped),
/// and its stored head's state root and height.
async fn played_chain(dir: &Path) -> (NodeProcess, String, u64) {
    let mut node = NodeProcess::new(dir, "block_interval_ms = 200");
    node.start().await;
    let client = node.client();
    workload(&client, GAMES).await;
    assert!(node.terminate(std::time::Duration::from_secs(20)).success());
    let stopped = gamechain_node::Storage::open_reader(&dir.join("data/chain.sqlite"))
        .unwrap()
        .head()
        .unwrap()
        .unwrap();
    (
        node,
        hex::encode(stopped.header.header.state_root),
        stopped.header.header.height,
    )
}

fn assert_verified(what: &str, (code, report): &(i32, Value), root: &str, height: u64) {
    assert_eq!(*code, 0, "{what}: {report}");
    assert_eq!(report["result"], "verified", "{what}: {report}");
    assert_eq!(report["state_root"], root, "{what}");
    assert_eq!(report["head_height"], height, "{what}");
    assert_eq!(report["blocks"], height + 1, "{what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_verifies_from_its_data_the_api_and_an_export() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut node = NodeProcess::new(dir, "block_interval_ms = 200");
    node.start().await;
    let client = node.client();
    workload(&client, GAMES).await;

    // GET /v1/code/<hash>: the raw module code (the hash in either case), 404 unknown, 400
    // malformed.
    let genesis = client.genesis().await.unwrap();
    let hash = genesis["modules"][0]["code_hash"]
        .as_str()
        .unwrap()
        .to_string();
    let http = reqwest::Client::new();
    let code = http
        .get(format!("{}/v1/code/{hash}", node.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(code.status().as_u16(), 200);
    assert_eq!(code.headers()["content-type"], "application/wasm");
    let wasm = code.bytes().await.unwrap();
    use sha2::Digest;
    assert_eq!(hex::encode(sha2::Sha256::digest(&wasm)), hash);
    let upper = http
        .get(format!("{}/v1/code/{}", node.url(), hash.to_uppercase()))
        .send()
        .await
        .unwrap();
    assert_eq!(upper.status().as_u16(), 200);
    assert_eq!(upper.bytes().await.unwrap(), wasm);
    for (path, status) in [("00".repeat(32), 404), ("xyz".to_string(), 400)] {
        let r = http
            .get(format!("{}/v1/code/{path}", node.url()))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), status, "{path}");
        let body: Value = r.json().await.unwrap();
        assert!(body["error"]["code"].is_string(), "{body}");
    }

    // While the node runs (and keeps making empty blocks): from its API, and an export of it.
    let (code, live) = verify_json(dir, &["--node", &node.url()]).await;
    assert_eq!(code, 0, "{live}");
    let live_height = live["head_height"].as_u64().unwrap();
    let at = client
        .block(gamechain_client::client::BlockRef::Height(live_height))
        .await
        .unwrap();
    assert_eq!(live["state_root"], hex::encode(at.header.header.state_root));
    assert!(
        live["txs"].as_u64().unwrap() >= (GAMES * 13) as u64,
        "{live}"
    );
    assert_eq!(live["state_entries_checked"], Value::Null);
    let api_export = dir.join("api.export");
    let out = run(
        dir,
        &["export", "--node", &node.url(), "--out", s(&api_export)],
    )
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A data directory being written verifies too, up to the head it saw.
    let (code, running) = verify_json(dir, &["--data", s(&dir.join("data"))]).await;
    assert_eq!(code, 0, "{running}");

    assert!(node.terminate(std::time::Duration::from_secs(20)).success());
    let head = gamechain_node::Storage::open_reader(&dir.join("data/chain.sqlite"))
        .unwrap()
        .head()
        .unwrap()
        .unwrap()
        .header
        .header;
    let (root, height) = (hex::encode(head.state_root), head.height);

    let data = verify_json(dir, &["--data", s(&dir.join("data"))]).await;
    assert_verified("verify --data", &data, &root, height);
    let entries = data.1["state_entries_checked"].as_u64().unwrap();
    assert!(entries > 20, "{}", data.1);
    let on_demand = verify_json(
        dir,
        &[
            "--data",
            s(&dir.join("data")),
            "--allocation",
            "on-demand",
            "--no-reuse",
            "--threads",
            "1",
        ],
    )
    .await;
    assert_verified(
        "verify --data, on demand, fresh instances",
        &on_demand,
        &root,
        height,
    );

    let data_export = dir.join("data.export");
    let out = run(
        dir,
        &[
            "export",
            "--data",
            s(&dir.join("data")),
            "--out",
            s(&data_export),
        ],
    )
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("exported {} blocks", height + 1)),
        "{text}"
    );
    let file = verify_json(dir, &["--file", s(&data_export)]).await;
    assert_verified("verify --file (data export)", &file, &root, height);
    assert_eq!(file.1["state_entries_checked"].as_u64(), Some(entries));
    let (code, api_file) = verify_json(dir, &["--file", s(&api_export)]).await;
    assert_eq!(code, 0, "{api_file}");
    assert!(api_file["head_height"].as_u64().unwrap() >= live_height);

    // The text report: verdict, counts, root.
    let out = run(dir, &["verify", "--data", s(&dir.join("data"))]).await;
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("verified: chain gamechain-dev"), "{text}");
    assert!(text.contains(&root), "{text}");
    assert!(
        text.contains(&format!("{} verified of {}", height + 1, height + 1)),
        "{text}"
    );

    // No source, two sources, a missing directory: clear errors.
    let out = run(dir, &["verify"]).await;
    assert_eq!(out.status.code(), Some(2));
    let out = run(dir, &["verify", "--data", "x", "--file", "y"]).await;
    assert_eq!(out.status.code(), Some(2));
    let out = run(dir, &["verify", "--data", s(&dir.join("nothing"))]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: "));
}

/// A stored transaction of a game move: `(height, index, txid)`.
fn a_move(db: &Connection) -> (u64, usize, String) {
    let mut stmt = db
        .prepare("SELECT id, txid, body, receipt FROM txs ORDER BY id")
        .unwrap();
    let mut rows = stmt.query([]).unwrap();
    while let Some(row) = rows.next().unwrap() {
        let body = body_of(row.get_ref(2).unwrap());
        let receipt =
            codec::unpack_receipt(row.get_ref(3).unwrap().as_blob().unwrap(), &body).unwrap();
        if receipt.events.iter().any(|e| e.kind == "tictactoe.moved") {
            let id: i64 = row.get(0).unwrap();
            let txid: Vec<u8> = row.get(1).unwrap();
            return (
                (id >> 20) as u64,
                (id & 0xF_FFFF) as usize,
                hex::encode(txid),
            );
        }
    }
    panic!("no move stored")
}

/// The body a stored body column holds (schema 2: the text, or compressed bytes).
fn body_of(v: ValueRef<'_>) -> String {
    match v {
        ValueRef::Text(t) => String::from_utf8(t.to_vec()).unwrap(),
        ValueRef::Blob(b) => codec::decode_body(b).unwrap(),
        other => panic!("a body column holds {other:?}"),
    }
}

/// A copy of `data` with `tamper` applied to its database.
fn tampered(data: &Path, to: PathBuf, tamper: impl FnOnce(&Connection)) -> PathBuf {
    copy_dir(data, &to);
    let db = Connection::open(to.join("chain.sqlite")).unwrap();
    tamper(&db);
    drop(db);
    to
}

fn rewrite_header(db: &Connection, height: u64, edit: impl FnOnce(&mut Header)) {
    let blob: Vec<u8> = db
        .query_row(
            "SELECT header FROM blocks WHERE height = ?1",
            [height as i64],
            |r| r.get(0),
        )
        .unwrap();
    let mut header: Header = borsh::from_slice(&blob).unwrap();
    edit(&mut header);
    db.execute(
        "UPDATE blocks SET header = ?1 WHERE height = ?2",
        params![header.to_borsh(), height as i64],
    )
    .unwrap();
}

fn assert_diverged(what: &str, (code, report): &(i32, Value), height: u64, field: &str) {
    assert_eq!(*code, 4, "{what}: {report}");
    assert_eq!(report["result"], "diverged", "{what}: {report}");
    let d = &report["divergence"];
    assert_eq!(d["height"], height, "{what}: {d}");
    assert_eq!(d["field"], field, "{what}: {d}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tampering_is_named_by_height_and_field() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (_node, root, head) = played_chain(dir).await;
    let data = dir.join("data");
    let (move_height, move_index, move_txid) =
        a_move(&Connection::open(data.join("chain.sqlite")).unwrap());
    assert_verified(
        "untouched",
        &verify_json(dir, &["--data", s(&data)]).await,
        &root,
        head,
    );

    // One stored state value.
    let key: String = Connection::open(data.join("chain.sqlite"))
        .unwrap()
        .query_row(
            "SELECT key FROM state WHERE key LIKE 'bal/%' LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let copy = tampered(&data, dir.join("t-state"), |db| {
        let n = db
            .execute(
                "UPDATE state SET value = CAST('999' AS BLOB) WHERE key = ?1",
                [&key],
            )
            .unwrap();
        assert_eq!(n, 1);
    });
    let report = verify_json(dir, &["--data", s(&copy)]).await;
    assert_diverged("state value", &report, head, "state");
    let diff = report.1["divergence"]["state_diff"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(diff.len(), 1, "{diff:?}");
    assert_eq!(diff[0]["key"].as_str(), Some(key.as_str()));
    assert_eq!(diff[0]["expected"], "999");
    assert_ne!(diff[0]["got"], "999");
    let out = run(dir, &["verify", "--data", s(&copy)]).await;
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("divergence at height {head}: state differs")),
        "{text}"
    );
    assert!(text.contains(&format!("{key}: 999 -> ")), "{text}");

    // One receipt: the fuel of a move.
    let move_key = hex::decode(&move_txid).unwrap();
    let copy = tampered(&data, dir.join("t-receipt"), |db| {
        let (body, packed): (String, Vec<u8>) = db
            .query_row(
                "SELECT body, receipt FROM txs WHERE txid = ?1",
                [&move_key],
                |r| Ok((body_of(r.get_ref(0)?), r.get(1)?)),
            )
            .unwrap();
        let mut receipt = codec::unpack_receipt(&packed, &body).unwrap();
        receipt.fuel_used += 1;
        db.execute(
            "UPDATE txs SET receipt = ?1 WHERE txid = ?2",
            params![codec::pack_receipt(&receipt, &body), move_key],
        )
        .unwrap();
    });
    let report = verify_json(dir, &["--data", s(&copy)]).await;
    assert_diverged("receipt", &report, move_height, "receipt.fuel_used");
    let d = &report.1["divergence"];
    assert_eq!(
        (d["tx_index"].as_u64(), d["txid"].as_str()),
        (Some(move_index as u64), Some(move_txid.as_str()))
    );
    assert_eq!(
        d["expected"].as_str().unwrap().parse::<u64>().unwrap(),
        d["got"].as_str().unwrap().parse::<u64>().unwrap() + 1
    );

    // One transaction byte: the move's nonce in its signed body.
    let copy = tampered(&data, dir.join("t-tx"), |db| {
        let (body, packed): (String, Vec<u8>) = db
            .query_row(
                "SELECT body, receipt FROM txs WHERE txid = ?1",
                [&move_key],
                |r| Ok((body_of(r.get_ref(0)?), r.get(1)?)),
            )
            .unwrap();
        // The receipt is stored compressed against its body: keep it readable.
        let receipt = codec::unpack_receipt(&packed, &body).unwrap();
        let at = body.find("\"nonce\":").unwrap() + "\"nonce\":".len();
        let mut bytes = body.into_bytes();
        bytes[at] = if bytes[at] == b'9' {
            b'8'
        } else {
            bytes[at] + 1
        };
        let body = String::from_utf8(bytes).unwrap();
        db.execute(
            "UPDATE txs SET body = ?1, receipt = ?2 WHERE txid = ?3",
            params![body, codec::pack_receipt(&receipt, &body), move_key],
        )
        .unwrap();
    });
    let report = verify_json(dir, &["--data", s(&copy)]).await;
    assert_diverged("tx byte", &report, move_height, "tx.signature");
    assert_eq!(
        report.1["divergence"]["tx_index"].as_u64(),
        Some(move_index as u64)
    );

    // One header field, re-hashed: only the sequencer's signature can tell.
    let copy = tampered(&data, dir.join("t-time"), |db| {
        rewrite_header(db, head, |h| h.time_ms += 1);
    });
    assert_diverged(
        "header time",
        &verify_json(dir, &["--data", s(&copy)]).await,
        head,
        "header.signature",
    );

    // A beacon of another height, signed with the chain's real beacon key: refused before the
    // header's signature is even checked (a sequencer cannot pick among its beacons).
    let beacon_key = gamechain_runtime::chain::BeaconSecretKey::from_bytes(
        &hex::decode(
            std::fs::read_to_string(data.join("beacon.key"))
                .unwrap()
                .trim(),
        )
        .unwrap(),
    )
    .unwrap();
    let chain_id = gamechain_runtime::chain::Genesis::from_json(
        &std::fs::read_to_string(data.join("genesis.json")).unwrap(),
    )
    .unwrap()
    .chain_id;
    let copy = tampered(&data, dir.join("t-beacon"), |db| {
        rewrite_header(db, move_height, |h| {
            h.beacon = Some(beacon_key.sign(&chain_id, move_height + 1))
        });
    });
    assert_diverged(
        "beacon of another height",
        &verify_json(dir, &["--data", s(&copy)]).await,
        move_height,
        "header.beacon",
    );

    // A header's state root below the head: named, with the block's replayed writes.
    let copy = tampered(&data, dir.join("t-root"), |db| {
        rewrite_header(db, move_height, |h| h.state_root[0] ^= 1);
    });
    let report = verify_json(dir, &["--data", s(&copy)]).await;
    assert_diverged(
        "header state root",
        &report,
        move_height,
        "header.state_root",
    );
    let writes = report.1["divergence"]["block_writes"].as_array().unwrap();
    assert!(
        writes
            .iter()
            .any(|w| w["key"].as_str().unwrap().starts_with("m/tictactoe/")),
        "{writes:?}"
    );

    // An export with one receipt changed in transit.
    let export = dir.join("chain.export");
    let out = run(dir, &["export", "--data", s(&data), "--out", s(&export)]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&export).unwrap();
    let edited: Vec<String> = text
        .lines()
        .map(|line| {
            let mut v: Value = serde_json::from_str(line).unwrap();
            if v["type"] == "block" && v["block"]["height"] == move_height {
                let r = &mut v["block"]["txs"][move_index]["receipt"];
                r["ok"] = Value::Bool(false);
                return v.to_string();
            }
            line.to_string()
        })
        .collect();
    let bad_export = dir.join("edited.export");
    std::fs::write(&bad_export, edited.join("\n") + "\n").unwrap();
    let report = verify_json(dir, &["--file", s(&bad_export)]).await;
    assert_diverged("export receipt", &report, move_height, "receipt.ok");
    // A truncated export is refused (exit 1), not verified.
    let lines: Vec<&str> = text.lines().collect();
    std::fs::write(&bad_export, lines[..lines.len() - 1].join("\n") + "\n").unwrap();
    let out = run(dir, &["verify", "--file", s(&bad_export), "--json"]).await;
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // With --json the error is a JSON object on stdout.
    let error: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(error["result"], "error", "{error}");
    assert!(
        error["error"].as_str().unwrap().contains("truncated"),
        "{error}"
    );

    // A second block at height 1, signed by the sequencer's own key (an equivocation): a
    // divergence at height 1 naming both signed headers. A repeated identical line is not.
    let key = gamechain_client::read_key_file(&data.join("sequencer.wif")).unwrap();
    let mut first_time = 0;
    let mut second = String::new();
    let mut repeated = Vec::new();
    let mut at = 0;
    for line in text.lines() {
        repeated.push(line.to_string());
        let v: Value = serde_json::from_str(line).unwrap();
        if v["type"] == "block" && v["block"]["height"] == 1 {
            repeated.push(line.to_string());
            at = repeated.len() - 1;
            let mut header: Header = serde_json::from_value(v["block"]["header"].clone()).unwrap();
            first_time = header.time_ms;
            header.time_ms += 1;
            let signed = gamechain_runtime::chain::SignedHeader::sign(header, &key);
            let mut w = v.clone();
            w["block"]["header"] = serde_json::to_value(&signed.header).unwrap();
            w["block"]["signature"] = Value::String(signed.signature.clone());
            w["block"]["hash"] = Value::String(signed.header.hash_hex());
            second = w.to_string();
        }
    }
    std::fs::write(&bad_export, repeated.join("\n") + "\n").unwrap();
    assert_verified(
        "a repeated block line",
        &verify_json(dir, &["--file", s(&bad_export)]).await,
        &root,
        head,
    );
    repeated[at] = second;
    std::fs::write(&bad_export, repeated.join("\n") + "\n").unwrap();
    let report = verify_json(dir, &["--file", s(&bad_export)]).await;
    assert_diverged("two blocks at height 1", &report, 1, "equivocation");
    let d = &report.1["divergence"];
    let (expected, got) = (d["expected"].as_str().unwrap(), d["got"].as_str().unwrap());
    assert!(
        expected.contains(&format!("\"time_ms\":{first_time},")),
        "{expected}"
    );
    assert!(
        got.contains(&format!("\"time_ms\":{},", first_time + 1)),
        "{got}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_over_the_api_waits_out_the_nodes_rate_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // Far below what a replay asks for (16 blocks at once).
    let mut node = NodeProcess::new(
        dir,
        "block_interval_ms = 50\nrate_limit_per_sec = 8\nrate_limit_burst = 8",
    );
    node.start().await;
    let client = node.client();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while client.status().await.map_or(0, |s| s.height) < 40 {
        assert!(std::time::Instant::now() < deadline, "no 40 blocks");
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    let (code, report) = verify_json(dir, &["--node", &node.url()]).await;
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["result"], "verified", "{report}");
    assert!(report["blocks"].as_u64().unwrap() > 40, "{report}");
    assert!(node.terminate(std::time::Duration::from_secs(20)).success());
}
