//! Storage faults on the real binary: a sequencer's data directory is damaged while the node is
//! stopped, in every way an operator's worst day offers, and each restart must end in a clear
//! refusal (non-zero exit, a message naming what was lost and `--restore-from`, nothing signed)
//! or in a documented safe recovery (the very blocks it had published, then new blocks above
//! them): never a second signed block at a published height.
//!
//! Two snapshots of one chain are damaged, each case on its own copy:
//! - after a SIGKILL, with every block still in the write-ahead log (no checkpoint yet): the
//!   WAL's last 64 bytes garbage, cut in half, one byte flipped in its first frame, its header
//!   garbage, deleted; deleted together with the sign state;
//! - after a clean stop (everything in the main file, no WAL): pages of the main file garbage,
//!   the main file cut in half, deleted; the sign state garbage, cut, deleted, rolled back to
//!   an older copy; the head record garbage.

use gamechain_ledger::rusqlite;
use std::path::Path;
use std::time::Duration;

use crate::common::{copy_dir, faucet_blocks, gamechain, NodeProcess};
use gamechain_client::client::{BlockRef, Client};

const WAIT: Duration = Duration::from_secs(30);

/// The database's page size (SQLite's default).
const PAGE: u64 = 4096;

/// How a case must end.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// The start refuses, its stderr holding every one of these texts.
    Refused(&'static [&'static str]),
    /// The start succeeds at the published head (a documented recovery), its log holding this.
    Recovers(&'static str),
}

/// One damage: its name, the snapshot it applies to (`true`: the killed one, WAL full), what
/// it does to the data directory, and how the start must end.
struct Case {
    name: &'static str,
    killed: bool,
    damage: fn(&Path),
    expect: Expect,
}

fn overwrite(path: &Path, offset: u64, bytes: &[u8]) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(bytes, offset).unwrap();
}

fn len(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().len()
}

fn wal(d: &Path) -> std::path::PathBuf {
    d.join("chain.sqlite-wal")
}

/// What every refusal of a database that lost blocks says (through the sign state or the head
/// record, whichever notices first).
const LOST: &[&str] = &["lost", "the database's head is block", "--restore-from"];

/// 64 bytes of garbage that are no checksum, salt or header of SQLite's.
const GARBAGE: [u8; 64] = [0xA5; 64];

/// The chain of every case: blocks only when transactions arrive, and one genesis module, so the
/// whole chain stays in the write-ahead log below SQLite's automatic checkpoint (1,000 pages;
/// the default genesis's nine modules alone come near it, and a checkpoint would move the last
/// commit out of the frames the WAL cases damage).
const SMALL_CHAIN: &str = "block_interval_ms = 3600000\ngenesis_modules = [\"tictactoe\"]";

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "WAL: last 64 bytes garbage",
            killed: true,
            damage: |d| overwrite(&wal(d), len(&wal(d)) - 64, &GARBAGE),
            // The last commit's frame fails its checksum: SQLite drops exactly the last block,
            // which the sign state holds (signed, recorded before it was committed), so the
            // start commits that very block again.
            expect: Expect::Recovers("committed the signed block the sequencer had recorded"),
        },
        Case {
            name: "WAL: cut in half",
            killed: true,
            damage: |d| {
                let f = std::fs::OpenOptions::new()
                    .write(true)
                    .open(wal(d))
                    .unwrap();
                f.set_len(len(&wal(d)) / 2).unwrap();
            },
            expect: Expect::Refused(LOST),
        },
        Case {
            name: "WAL: one byte flipped in the first frame",
            killed: true,
            damage: |d| {
                // 32-byte WAL header, 24-byte frame header, then the page.
                let at = 32 + 24 + 100;
                let mut b = [0u8; 1];
                {
                    use std::os::unix::fs::FileExt;
                    std::fs::File::open(wal(d))
                        .unwrap()
                        .read_exact_at(&mut b, at)
                        .unwrap();
                }
                overwrite(&wal(d), at, &[b[0] ^ 0x01]);
            },
            expect: Expect::Refused(LOST),
        },
        Case {
            name: "WAL: header garbage",
            killed: true,
            damage: |d| overwrite(&wal(d), 0, &GARBAGE[..32]),
            expect: Expect::Refused(LOST),
        },
        Case {
            name: "WAL: deleted",
            killed: true,
            damage: |d| {
                std::fs::remove_file(wal(d)).unwrap();
                let _ = std::fs::remove_file(d.join("chain.sqlite-shm"));
            },
            expect: Expect::Refused(LOST),
        },
        Case {
            name: "WAL and sign state deleted",
            killed: true,
            damage: |d| {
                for f in ["chain.sqlite-wal", "chain.sqlite-shm", "sign-state.json"] {
                    let _ = std::fs::remove_file(d.join(f));
                }
            },
            // The head record (written after each commit) still names the lost blocks.
            expect: Expect::Refused(&[
                "chain.sqlite.head",
                "lost committed blocks",
                "--restore-from",
            ]),
        },
        Case {
            name: "main file: three pages garbage",
            killed: false,
            damage: |d| {
                let db = d.join("chain.sqlite");
                let pages = len(&db) / PAGE;
                assert!(pages > 8, "{pages} pages");
                overwrite(&db, pages / 2 * PAGE, &[0xA5; 3 * PAGE as usize]);
            },
            expect: Expect::Refused(&["damaged", "--restore-from"]),
        },
        Case {
            name: "main file: cut in half",
            killed: false,
            damage: |d| {
                let db = d.join("chain.sqlite");
                let f = std::fs::OpenOptions::new().write(true).open(&db).unwrap();
                f.set_len(len(&db) / PAGE / 2 * PAGE).unwrap();
            },
            expect: Expect::Refused(&["--restore-from"]),
        },
        Case {
            name: "main file: deleted",
            killed: false,
            damage: |d| std::fs::remove_file(d.join("chain.sqlite")).unwrap(),
            expect: Expect::Refused(LOST),
        },
        Case {
            name: "sign state: garbage",
            killed: false,
            damage: |d| overwrite(&d.join("sign-state.json"), 0, &GARBAGE[..8]),
            expect: Expect::Refused(&["sign-state.json", "is not a sign state"]),
        },
        Case {
            name: "sign state: cut in half",
            killed: false,
            damage: |d| {
                let p = d.join("sign-state.json");
                let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
                f.set_len(len(&p) / 2).unwrap();
            },
            expect: Expect::Refused(&["sign-state.json", "is not a sign state"]),
        },
        Case {
            name: "sign state: deleted",
            killed: false,
            damage: |d| std::fs::remove_file(d.join("sign-state.json")).unwrap(),
            // The database and its head record agree: the file is recreated from the head.
            expect: Expect::Recovers("recreating it from the head"),
        },
        Case {
            name: "sign state: an older copy",
            killed: false,
            damage: |d| {
                std::fs::copy(d.join("sign-state.old"), d.join("sign-state.json")).unwrap();
            },
            expect: Expect::Recovers("moving it up to the head"),
        },
        Case {
            name: "head record: garbage",
            killed: false,
            damage: |d| overwrite(&d.join("chain.sqlite.head"), 0, &[0xA5; 256]),
            expect: Expect::Refused(&["chain.sqlite.head", "damaged"]),
        },
    ]
}

/// The header hashes of blocks `0..=head`.
async fn hashes(client: &Client) -> Vec<String> {
    let head = client.status().await.unwrap().height;
    let mut out = Vec::new();
    for h in 0..=head {
        out.push(
            client
                .block(BlockRef::Height(h))
                .await
                .unwrap()
                .header
                .header
                .hash_hex(),
        );
    }
    out
}

/// Runs one case on a copy of `snapshot` (whose published blocks have `published` hashes),
/// with `extra` configuration lines.
async fn run_case(
    root: &Path,
    i: usize,
    case: &Case,
    snapshot: &Path,
    published: &[String],
    extra: &str,
) {
    let dir = root.join(format!("case-{i}"));
    std::fs::create_dir_all(&dir).unwrap();
    let mut node = NodeProcess::new(&dir, &format!("{SMALL_CHAIN}\n{extra}"));
    let data = dir.join("data");
    copy_dir(snapshot, &data);
    (case.damage)(&data);
    let sign_state_before = std::fs::read(data.join("sign-state.json")).ok();
    let what = case.name;
    match case.expect {
        Expect::Refused(texts) => {
            let config = dir.join("node.toml");
            let cwd = dir.clone();
            let out = tokio::task::spawn_blocking(move || {
                gamechain(&cwd, None, &["node", "--config", config.to_str().unwrap()])
            })
            .await
            .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            assert_ne!(
                out.status.code(),
                Some(0),
                "{what}: the node started:\n{stderr}"
            );
            for t in texts {
                assert!(stderr.contains(t), "{what}: no `{t}` in:\n{stderr}");
            }
            assert_eq!(
                std::fs::read(data.join("sign-state.json")).ok(),
                sign_state_before,
                "{what}: the refusal changed the sign state"
            );
            eprintln!("{what}: refused: {}", stderr.lines().last().unwrap_or(""));
        }
        Expect::Recovers(text) => {
            node.start().await;
            let client = node.client();
            // The very blocks it had published, then a new one above them.
            let now = hashes(&client).await;
            assert_eq!(now, published, "{what}: the published blocks changed");
            let next = faucet_blocks(&client, 1).await;
            assert_eq!(
                next,
                published.len() as u64,
                "{what}: the next block's height"
            );
            assert!(
                node.log().contains(text),
                "{what}: no `{text}` in:\n{}",
                node.log()
            );
            assert!(node.terminate(WAIT).success(), "{what}");
            eprintln!("{what}: recovered ({text})");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_damage_is_refused_or_safely_recovered_never_signed_twice() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let seq_dir = root.join("seq");
    std::fs::create_dir_all(&seq_dir).unwrap();
    // Blocks only when transactions arrive, so every signed block is published and known here.
    let mut node = NodeProcess::new(&seq_dir, SMALL_CHAIN);
    let data = seq_dir.join("data");

    // Snapshot 1: SIGKILL with the whole chain in the write-ahead log.
    node.start().await;
    let client = node.client();
    faucet_blocks(&client, 3).await;
    let old_sign_state = std::fs::read(data.join("sign-state.json")).unwrap();
    faucet_blocks(&client, 9).await;
    let killed_hashes = hashes(&client).await;
    node.kill();
    assert!(len(&wal(&data)) > 8 * PAGE, "the WAL holds the chain");
    let killed = root.join("snap-killed");
    copy_dir(&data, &killed);

    // The undamaged control: the start after the kill checks the database (quick_check).
    node.start().await;
    assert!(
        node.log().contains("database quick_check ok"),
        "{}",
        node.log()
    );
    let client = node.client();
    assert_eq!(hashes(&client).await, killed_hashes);
    // Snapshot 2: a clean stop, everything in the main file.
    faucet_blocks(&client, 30).await;
    let clean_hashes = hashes(&client).await;
    assert!(node.terminate(WAIT).success());
    // Everything into the main file (the node's readers may leave the WAL in place).
    let conn = rusqlite::Connection::open(data.join("chain.sqlite")).unwrap();
    let busy: i64 = conn
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))
        .unwrap();
    assert_eq!(busy, 0, "the checkpoint ran");
    drop(conn);
    assert!(!wal(&data).exists() || len(&wal(&data)) == 0);
    assert!(
        !data.join("node.running").exists(),
        "a clean stop removes the marker"
    );
    let clean = root.join("snap-clean");
    copy_dir(&data, &clean);
    std::fs::write(clean.join("sign-state.old"), &old_sign_state).unwrap();
    // Main-file damage is found by quick_check, which a clean stop skips by default.
    let always = "integrity_check = \"always\"\n";

    for (i, case) in cases().iter().enumerate() {
        let (snapshot, published) = if case.killed {
            (&killed, &killed_hashes)
        } else {
            (&clean, &clean_hashes)
        };
        let extra = if case.name.starts_with("main file") {
            always
        } else {
            ""
        };
        run_case(root, i, case, snapshot, published, extra).await;
    }
}
