//! The shape of the source tree, checked: no import cycle between files, no source folder over
//! 14 files. Only `std`: the sources are read as text, nothing is compiled.
//!
//! # What is checked
//!
//! Every crate under the folders of [`ROOTS`] (each directory with a `Cargo.toml`, and in it
//! `src/lib.rs`, `src/main.rs`, `src/bin/`, `tests/`, `benches/`, `examples/`, `build.rs` and
//! the `path`s of its `[lib]`/`[[bin]]`/`[[test]]`/`[[bench]]`/`[[example]]` sections). Adding
//! a folder to [`ROOTS`] checks every crate in it; every `.rs` file under a root must be reached
//! from one of those crate roots (so no file escapes the check unseen).
//!
//! # The import graph (test `no_import_cycles`)
//!
//! One node per `.rs` file. The module tree is built as rustc does, from the `mod x;`
//! declarations (`x.rs` or `x/mod.rs`, `#[path]` honoured); an inline `mod x { … }` (tests)
//! belongs to its file. An edge `a.rs → b.rs` is one of, anywhere in `a.rs` outside its
//! `#[cfg(test)]` modules, comments and string literals:
//!
//! - a `use` of a path of this crate (`crate::…`, `super::…`, `self::…`, or a name in scope such
//!   as a child module) that resolves into `b.rs`;
//! - a path in code starting with `crate::`, `super::`, `self::` or a child module's name
//!   (`crate::run::module::WasmModule` in a type) that resolves into `b.rs`.
//!
//! A path resolves to the file of the deepest module it names; a name that module brought in
//! by a `use` (a re-export, `pub use x::Y`) is followed to where it comes from, so
//! `use crate::StateHash` is an edge to `state_root/mod.rs`, not to `lib.rs`. Paths into other
//! crates are not edges.
//!
//! **The facade rule**: a `pub use` (any `pub(…)`) whose target is inside the declaring module's
//! own subtree (a parent re-exporting a child's item: `pub use child::X` in `lib.rs` or a
//! `mod.rs`) is not an edge, and neither is `mod child;`. Otherwise every re-export would close a
//! cycle with the child's own imports from the parent. A parent *using* a child's item (a private
//! `use child::X`, or `child::f()` in its code) is an edge like any other.
//!
//! **Tests**: an inline `#[cfg(test)] mod` is not counted. Tests use their file from above, as a
//! test file of its own (`foo/tests.rs`, which nothing imports, so never in a cycle) would; what
//! they import says nothing about the layering of the code they test.
//!
//! The test fails when a strongly connected component of this graph holds more than one file,
//! naming its files and the lines that make its edges.
//!
//! Not seen: paths inside string literals (`#[serde(with = "crate::hash::hex32")]`), paths
//! built by macros, and method calls (`x.f()` needs no import: only the names a file writes
//! count).
//!
//! # Folder size (test `no_source_folder_over_14_files`)
//!
//! No folder under [`ROOTS`] (`src/`, `tests/`, `benches/` and their subfolders alike) holds
//! more than [`MAX_FILES_PER_FOLDER`] `.rs` files (its subfolders not counted): a bigger one is
//! regrouped into subfolders by concept.
//!
//! # Confined dependencies (test `commonware_is_named_only_by_consensus_files`)
//!
//! The consensus engine's crates (`commonware_*`) are named, in code, only by files under
//! [`CONSENSUS_FOLDERS`]: the validator, and the checks of what validators sign that `verify`,
//! followers and the API call (`node/src/proof/`), and by the few files that use Commonware's
//! primitives only ([`PRIMITIVE_FILES`]: the randomness beacon's BLS signatures and the sealed
//! moves encrypted to it; a peer's host name checked as the transport will), which may name only
//! Commonware's cryptography, codec, algebra and utilities, never the engine. `cargo tree` shows
//! which crates depend on Commonware; this shows where inside them it is used. (SQLite needs no
//! such test: only `gamechain-ledger` depends on `rusqlite`.)
//!
//! # The node's folders are a stack (test `node_src_folders_are_a_strict_stack`)
//!
//! The folders of `node/src` are layers, top to bottom [`NODE_STACK`]; a file imports (an edge
//! of the graph above) only from its own folder and the folders below it. A test file
//! (`*_tests.rs`, `tests.rs`), compiled only for tests, may use any folder, as a test above the
//! code would.
//!
//! # One integration-test binary per crate (test `no_crate_has_two_integration_test_binaries`)
//!
//! Every member of the workspace (`members` of the root `Cargo.toml`) has at most one
//! integration-test target: its `[[test]]` sections, plus, unless its `[package]` says
//! `autotests = false`, the targets cargo finds by itself (`tests/*.rs`, `tests/*/main.rs`). Each
//! such target is a binary of its own that links the crate and all its dependencies (wasmtime,
//! SQLite, Commonware, …); a crate's tests are files of one binary instead (`tests/main.rs` and
//! its modules), which builds and links once.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

/// Folders whose crates are checked, relative to the workspace root. (`node` joins once its
/// split into crates has settled.)
const ROOTS: &[&str] = &["runtime", "sdk-guest", "node"];

/// Most `.rs` files one folder may hold.
const MAX_FILES_PER_FOLDER: usize = 14;

/// The only folders whose files may name any `commonware_*` crate, besides [`PRIMITIVE_FILES`].
const CONSENSUS_FOLDERS: &[&str] = &["node/src/validator/", "node/src/proof/"];

/// The files outside [`CONSENSUS_FOLDERS`] that name Commonware's primitives only (never the
/// consensus engine): the randomness beacon's BLS12-381 signatures, which every verifier checks,
/// the sealed moves encrypted to its rounds, and a validator peer's host name, checked when the
/// configuration is read with the rule the transport dials by.
const PRIMITIVE_FILES: &[&str] = &[
    "runtime/chain/src/keys/beacon.rs",
    "runtime/chain/src/keys/seal.rs",
    "node/src/config/peer_addr.rs",
];

/// The folders of `node/src`, top to bottom: a file may import from its own folder and those
/// below it (`node/src/lib.rs` says what each owns).
const NODE_STACK: &[&str] = &[
    "cli",
    "server",
    "validator",
    "replica",
    "verify",
    "proof",
    "config",
];

/// Directories never searched for sources.
const SKIPPED_DIRS: &[&str] = &["target", "node_modules"];

#[test]
fn no_import_cycles() {
    let graph = Graph::of(&workspace_root(), ROOTS);
    let cycles = graph.cycles();
    assert!(
        cycles.is_empty(),
        "import cycles between files (see tests/tests/source_tree.rs for the rule):\n{}",
        cycles.join("\n")
    );
}

#[test]
fn no_source_folder_over_14_files() {
    let root = workspace_root();
    let mut over = Vec::new();
    for r in ROOTS {
        for dir in dirs_under(&root.join(r)) {
            let files = rs_files_in(&dir);
            if files.len() > MAX_FILES_PER_FOLDER {
                over.push(format!(
                    "{} holds {} .rs files (at most {MAX_FILES_PER_FOLDER})",
                    rel(&root, &dir),
                    files.len()
                ));
            }
        }
    }
    assert!(over.is_empty(), "{}", over.join("\n"));
}

/// A message a user reads never has a run of spaces inside it: the mark of a string literal
/// broken across lines without a `\` (the stake guard's refusal once read "…less than the
/// {n} ms…" with 14 spaces). Counted in non-raw string literals, with `\`-continuations (and the
/// indentation they swallow) removed: six or more spaces between two words (or a word and a
/// placeholder).
#[test]
fn no_message_has_a_run_of_spaces_inside() {
    let root = workspace_root();
    let mut found = Vec::new();
    for r in ROOTS {
        for dir in dirs_under(&root.join(r)) {
            for file in rs_files_in(&dir) {
                // Sources only: benchmarks print aligned tables on purpose.
                if !rel(&root, &file).contains("/src/") {
                    continue;
                }
                let src = fs::read_to_string(&file).unwrap();
                for (tok, line) in lex(&src) {
                    let Tok::Str(text) = tok else { continue };
                    let joined: String = {
                        let mut out = String::new();
                        let mut chars = text.chars().peekable();
                        while let Some(ch) = chars.next() {
                            if ch == '\\' && chars.peek() == Some(&'\n') {
                                while chars.peek().is_some_and(|c| c.is_whitespace()) {
                                    chars.next();
                                }
                            } else {
                                out.push(ch);
                            }
                        }
                        out
                    };
                    let b = joined.as_bytes();
                    let word = |c: u8| c.is_ascii_alphabetic() || b"`(){}".contains(&c);
                    let bad = (0..b.len()).any(|i| {
                        word(b[i])
                            && b[i + 1..].starts_with(b"      ")
                            && b[i + 1..]
                                .iter()
                                .find(|&&c| c != b' ')
                                .is_some_and(|&c| word(c))
                    });
                    if bad {
                        found.push(format!("{}:{line}", rel(&root, &file)));
                    }
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "string literals with a run of spaces inside:\n{}",
        found.join("\n")
    );
}

#[test]
fn commonware_is_named_only_by_consensus_files() {
    let root = workspace_root();
    let mut outside = Vec::new();
    let mut inside = 0;
    for r in ROOTS {
        for dir in dirs_under(&root.join(r)) {
            for file in rs_files_in(&dir) {
                let path = rel(&root, &file);
                let src = fs::read_to_string(&file).unwrap();
                let names = lex(&src)
                    .into_iter()
                    .filter(|(t, _)| matches!(t, Tok::Ident(i) if i.starts_with("commonware_")));
                let lines: Vec<usize> = names.map(|(_, line)| line).collect();
                if lines.is_empty() {
                    continue;
                }
                if CONSENSUS_FOLDERS.iter().any(|f| path.starts_with(f)) {
                    inside += 1;
                } else if PRIMITIVE_FILES.contains(&path.as_str()) {
                    // Only the primitives' paths: `commonware_cryptography`, its codec, its
                    // algebra traits and (in tests) its seeded RNG.
                    let engine = lex(&src).into_iter().any(|(t, _)| {
                        matches!(t, Tok::Ident(i) if i.starts_with("commonware_")
                            && !["commonware_cryptography", "commonware_codec",
                                 "commonware_math", "commonware_utils"].contains(&i.as_str()))
                    });
                    if engine {
                        outside.push(format!(
                            "{path}: names a commonware crate beyond its BLS primitives"
                        ));
                    }
                } else {
                    outside.push(format!("{path}: lines {lines:?}"));
                }
            }
        }
    }
    assert!(
        outside.is_empty(),
        "files outside {CONSENSUS_FOLDERS:?} that name a commonware crate:\n{}",
        outside.join("\n")
    );
    // The check looks at real files: the validator's do name it.
    assert!(
        inside >= 5,
        "only {inside} files under {CONSENSUS_FOLDERS:?} name commonware"
    );
}

#[test]
fn node_src_folders_are_a_strict_stack() {
    let root = workspace_root();
    let src = root.join("node/src");
    let mut folders: Vec<String> = fs::read_dir(&src)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    folders.sort();
    let unlisted: Vec<&String> = folders
        .iter()
        .filter(|f| !NODE_STACK.contains(&f.as_str()))
        .collect();
    assert!(
        unlisted.is_empty(),
        "folders of node/src not placed in NODE_STACK (tests/tests/source_tree.rs): {unlisted:?}"
    );
    let layer = |file: &str| -> Option<usize> {
        let (top, _) = file.strip_prefix("node/src/")?.split_once('/')?;
        NODE_STACK.iter().position(|l| *l == top)
    };
    let is_test = |file: &str| file.ends_with("_tests.rs") || file.ends_with("/tests.rs");
    let graph = Graph::of(&root, &["node"]);
    let (mut up, mut down) = (Vec::new(), 0);
    for e in &graph.edges {
        let (from, to) = (&graph.files[e.from], &graph.files[e.to]);
        let (Some(a), Some(b)) = (layer(from), layer(to)) else {
            continue;
        };
        if a > b && !is_test(from) {
            up.push(format!(
                "{from} ({}) uses {to} ({}): {}",
                NODE_STACK[a], NODE_STACK[b], e.why
            ));
        } else if a < b {
            down += 1;
        }
    }
    assert!(
        up.is_empty(),
        "imports that run up the stack of node/src ({}):\n{}",
        NODE_STACK.join(" → "),
        up.join("\n")
    );
    // The check reads real edges: the folders do use the ones below them.
    assert!(
        down >= 20,
        "only {down} edges between node/src folders were read"
    );
}

#[test]
fn no_crate_has_two_integration_test_binaries() {
    let root = workspace_root();
    let members = workspace_members(&root);
    assert!(
        members.len() > 10 && members.iter().any(|m| m == "node"),
        "the workspace's members were not read: {members:?}"
    );
    let mut over = Vec::new();
    for member in &members {
        let targets = integration_test_targets(&root.join(member));
        if targets.len() > 1 {
            over.push(format!(
                "{member}: {} integration-test targets ({})",
                targets.len(),
                targets.join(", ")
            ));
        }
    }
    assert!(
        over.is_empty(),
        "at most one integration-test binary per crate: make the files modules of one \
         `tests/main.rs` (`autotests = false` and one `[[test]]` in its Cargo.toml):\n{}",
        over.join("\n")
    );
}

/// The test-target count follows cargo: found files unless `autotests = false`, `[[test]]`
/// sections always, a `[[test]]` naming a found file counted once.
#[test]
fn integration_test_targets_are_counted_as_cargo_makes_them() {
    let dir = std::env::temp_dir().join(format!("source_tree_targets_{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    let write = |path: &str, text: &str| {
        let path = dir.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    };
    for krate in ["found", "listed", "off"] {
        write(&format!("{krate}/tests/a.rs"), "");
        write(&format!("{krate}/tests/b/main.rs"), "");
        write(&format!("{krate}/tests/b/helper.rs"), "");
    }
    write("found/Cargo.toml", "[package]\nname = \"found\"\n");
    write(
        "listed/Cargo.toml",
        "[package]\nname = \"listed\"\n\n[[test]]\nname = \"a\"\npath = \"tests/a.rs\"\n\n\
         [[test]]\nname = \"c\"\npath = \"tests/b/helper.rs\"\n",
    );
    write(
        "off/Cargo.toml",
        "[package]\nname = \"off\"\nautotests = false\n\n[dependencies]\nx = \"1\"\n\n\
         [[test]]\nname = \"off\"\npath = \"tests/b/main.rs\"\n",
    );
    let names = |krate: &str| integration_test_targets(&dir.join(krate));
    assert_eq!(names("found"), ["a", "b"]);
    assert_eq!(names("listed"), ["a", "b", "c"]);
    assert_eq!(names("off"), ["off"]);
    fs::remove_dir_all(&dir).unwrap();
}

/// The checker sees what it should: the rules above on small sources.
#[test]
fn the_checker_finds_cycles_and_follows_re_exports() {
    let dir = std::env::temp_dir().join(format!("source_tree_{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    let write = |path: &str, text: &str| {
        let path = dir.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    };
    write("k/Cargo.toml", "[package]\nname = \"k\"\n");
    // The facade: `lib.rs` re-exports children that import through it; `a`, `b` and `d/x` in one
    // loop through re-exports and type paths; `c` only uses `a` (`b`'s tests use `c`).
    write(
        "k/src/lib.rs",
        "mod a;\nmod b;\nmod c;\npub mod d;\npub use a::A;\npub use b::{B, self as bee};\n\
         fn helper() {}\n",
    );
    write(
        "k/src/a.rs",
        "use crate::helper;\n// use crate::c::C; (a comment)\npub struct A(Box<crate::B>);\n\
         const S: &str = \"crate::c::C\";\n",
    );
    write(
        "k/src/b.rs",
        "pub struct B;\npub fn g() -> crate::d::x::X {\n    todo!()\n}\n#[cfg(test)]\n\
         mod tests {\n    use super::*;\n    use crate::c::C;\n}\n",
    );
    write("k/src/c.rs", "use crate::{a::A, A as Again};\n");
    write("k/src/d/mod.rs", "pub mod x;\npub use self::x::X;\n");
    write(
        "k/src/d/x.rs",
        "pub struct X;\nfn f() -> super::super::bee::B { crate::A; todo!() }\n",
    );
    let graph = Graph::of(&dir, &["k"]);
    let edges: BTreeSet<(String, String)> = graph
        .edges
        .iter()
        .map(|e| (graph.files[e.from].clone(), graph.files[e.to].clone()))
        .collect();
    let e = |a: &str, b: &str| (format!("k/src/{a}"), format!("k/src/{b}"));
    let want: BTreeSet<_> = [
        e("a.rs", "lib.rs"),
        e("a.rs", "b.rs"),
        e("b.rs", "d/x.rs"),
        e("c.rs", "a.rs"),
        e("d/x.rs", "b.rs"),
        e("d/x.rs", "a.rs"),
    ]
    .into();
    assert_eq!(edges, want);
    let cycles = graph.cycles();
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    assert!(
        cycles[0].contains("k/src/a.rs")
            && cycles[0].contains("k/src/b.rs")
            && cycles[0].contains("k/src/d/x.rs")
            && !cycles[0].contains("k/src/c.rs"),
        "{}",
        cycles[0]
    );
    fs::remove_dir_all(&dir).unwrap();
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate is in the workspace")
        .to_path_buf()
}

fn rel(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

/// `dir` and every folder under it, skipping build output and hidden folders.
fn dirs_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    let mut i = 0;
    while i < out.len() {
        let mut subs: Vec<PathBuf> = fs::read_dir(&out[i])
            .map(|rd| rd.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        subs.retain(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            p.is_dir() && !name.starts_with('.') && !SKIPPED_DIRS.contains(&&*name)
        });
        subs.sort();
        out.extend(subs);
        i += 1;
    }
    out
}

fn rs_files_in(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.retain(|p| p.is_file() && p.extension().is_some_and(|e| e == "rs"));
    files.sort();
    files
}

// ---------------------------------------------------------------------------------------------
// Tokens: identifiers, string literals (for `#[path]`), `::` and single punctuation; comments,
// char literals, lifetimes and numbers dropped.

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Str(String),
    Sep,
    Punct(char),
}

fn lex(src: &str) -> Vec<(Tok, usize)> {
    let c: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    let ident_start = |ch: char| ch == '_' || ch.is_alphabetic();
    let ident_char = |ch: char| ch == '_' || ch.is_alphanumeric();
    while i < c.len() {
        let ch = c[i];
        let next = c.get(i + 1).copied();
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && next == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(c[i] == '\n');
                    i += 1;
                }
            }
        } else if let Some(hashes_at) = raw_string_start(&c, i) {
            // r"…", r#"…"#, br"…", cr"…"
            let mut j = hashes_at;
            let mut hashes = 0;
            while c[j] == '#' {
                hashes += 1;
                j += 1;
            }
            j += 1; // the opening quote
            let start = j;
            loop {
                if j >= c.len() {
                    break;
                }
                if c[j] == '"' && (0..hashes).all(|k| c.get(j + 1 + k) == Some(&'#')) {
                    break;
                }
                j += 1;
            }
            let text: String = c[start..j.min(c.len())].iter().collect();
            line += text.matches('\n').count();
            out.push((Tok::Str(text), line));
            i = j + 1 + hashes;
        } else if ch == '"' || ((ch == 'b' || ch == 'c') && next == Some('"')) {
            let mut j = if ch == '"' { i + 1 } else { i + 2 };
            let start_line = line;
            let mut text = String::new();
            while j < c.len() && c[j] != '"' {
                if c[j] == '\\' {
                    text.push(c[j]);
                    j += 1;
                }
                if j < c.len() {
                    line += usize::from(c[j] == '\n');
                    text.push(c[j]);
                }
                j += 1;
            }
            out.push((Tok::Str(text), start_line));
            i = j + 1;
        } else if ch == '\'' || (ch == 'b' && next == Some('\'')) {
            let q = if ch == '\'' { i } else { i + 1 };
            if c.get(q + 1) == Some(&'\\') {
                // '\n', '\'', '\u{…}'
                let mut j = q + 3;
                while j < c.len() && c[j] != '\'' {
                    j += 1;
                }
                i = j + 1;
            } else if c.get(q + 2) == Some(&'\'') {
                i = q + 3; // 'x'
            } else {
                // A lifetime or label: skip the quote and its name.
                let mut j = q + 1;
                while j < c.len() && ident_char(c[j]) {
                    j += 1;
                }
                i = j;
            }
        } else if ch == 'r' && next == Some('#') && c.get(i + 2).is_some_and(|&x| ident_start(x)) {
            // A raw identifier, r#type.
            let mut j = i + 2;
            while j < c.len() && ident_char(c[j]) {
                j += 1;
            }
            out.push((Tok::Ident(c[i + 2..j].iter().collect()), line));
            i = j;
        } else if ident_start(ch) {
            let mut j = i;
            while j < c.len() && ident_char(c[j]) {
                j += 1;
            }
            out.push((Tok::Ident(c[i..j].iter().collect()), line));
            i = j;
        } else if ch.is_ascii_digit() {
            while i < c.len() && ident_char(c[i]) {
                i += 1;
            }
        } else if ch == ':' && next == Some(':') {
            out.push((Tok::Sep, line));
            i += 2;
        } else {
            out.push((Tok::Punct(ch), line));
            i += 1;
        }
    }
    out
}

/// Where the `#`s (or the quote) of a raw string starting at `i` are.
fn raw_string_start(c: &[char], i: usize) -> Option<usize> {
    let after_prefix = match (c.get(i), c.get(i + 1)) {
        (Some('r'), _) => i + 1,
        (Some('b' | 'c'), Some('r')) => i + 2,
        _ => return None,
    };
    if i > 0 && (c[i - 1] == '_' || c[i - 1].is_alphanumeric()) {
        return None;
    }
    let mut j = after_prefix;
    while c.get(j) == Some(&'#') {
        j += 1;
    }
    (c.get(j) == Some(&'"')).then_some(after_prefix)
}

// ---------------------------------------------------------------------------------------------
// One file: its module declarations, `use`s, paths in code and item names.

type ModPath = Vec<String>;

/// A `mod x;` (file module) or `mod x { … }` (inline) in a file.
struct ModDecl {
    /// The module it is declared in (the file's or an inline one's).
    scope: ModPath,
    name: String,
    inline: bool,
    path_attr: Option<String>,
}

/// One path of a `use` tree, or one path written in code.
struct PathUse {
    /// Written in a `#[cfg(test)]` module.
    test: bool,
    scope: ModPath,
    segs: Vec<String>,
    /// The name a `use` binds (its last segment or `as` name); `None` for a glob or code path.
    binds: Option<String>,
    glob: bool,
    public: bool,
    is_use: bool,
    line: usize,
}

#[derive(Default)]
struct Parsed {
    mods: Vec<ModDecl>,
    paths: Vec<PathUse>,
    items: Vec<(ModPath, String)>,
}

fn parse(src: &str, module: &ModPath) -> Parsed {
    let toks = lex(src);
    let mut p = Parsed::default();
    // Inline modules open: (their path, the brace depth inside them, whether `#[cfg(test)]`).
    let mut scopes: Vec<(ModPath, usize, bool)> = vec![(module.clone(), 0, false)];
    let mut depth = 0usize;
    let mut path_attr: Option<String> = None;
    let mut cfg_test = false;
    let ident = |i: usize| match toks.get(i) {
        Some((Tok::Ident(s), _)) => Some(s.as_str()),
        _ => None,
    };
    let mut i = 0;
    while i < toks.len() {
        let scope = scopes.last().unwrap().0.clone();
        let test = scopes.last().unwrap().2;
        let line = toks[i].1;
        match &toks[i].0 {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                if scopes.len() > 1 && scopes.last().unwrap().1 == depth {
                    scopes.pop();
                }
                depth = depth.saturating_sub(1);
                path_attr = None;
                cfg_test = false;
            }
            Tok::Punct(';') => {
                path_attr = None;
                cfg_test = false;
            }
            Tok::Punct('#') => {
                // #[cfg(test)]
                let at = |k: usize| toks.get(i + k).map(|t| &t.0);
                if at(1) == Some(&Tok::Punct('['))
                    && ident(i + 2) == Some("cfg")
                    && at(3) == Some(&Tok::Punct('('))
                    && ident(i + 4) == Some("test")
                    && at(5) == Some(&Tok::Punct(')'))
                {
                    cfg_test = true;
                }
                // #[path = "…"]
                if toks.get(i + 1).map(|t| &t.0) == Some(&Tok::Punct('['))
                    && ident(i + 2) == Some("path")
                    && toks.get(i + 3).map(|t| &t.0) == Some(&Tok::Punct('='))
                {
                    if let Some((Tok::Str(s), _)) = toks.get(i + 4) {
                        path_attr = Some(s.clone());
                    }
                }
            }
            Tok::Ident(kw) if kw == "mod" && !prev_is_sep(&toks, i) => {
                if let Some(name) = ident(i + 1) {
                    let inline = toks.get(i + 2).map(|t| &t.0) == Some(&Tok::Punct('{'));
                    p.mods.push(ModDecl {
                        scope: scope.clone(),
                        name: name.to_string(),
                        inline,
                        path_attr: path_attr.take(),
                    });
                    let test = test || std::mem::take(&mut cfg_test);
                    if inline {
                        let mut inner = scope.clone();
                        inner.push(name.to_string());
                        depth += 1;
                        scopes.push((inner, depth, test));
                        i += 3;
                        continue;
                    }
                }
            }
            Tok::Ident(kw) if kw == "use" && !prev_is_sep(&toks, i) => {
                let public = is_pub_before(&toks, i);
                let mut j = i + 1;
                let mut out = Vec::new();
                use_tree(&toks, &mut j, Vec::new(), &mut out);
                for (segs, binds, glob) in out {
                    p.paths.push(PathUse {
                        test,
                        scope: scope.clone(),
                        segs,
                        binds,
                        glob,
                        public,
                        is_use: true,
                        line,
                    });
                }
                i = j;
                continue;
            }
            Tok::Ident(kw)
                if matches!(
                    kw.as_str(),
                    "fn" | "struct" | "enum" | "trait" | "type" | "const" | "static" | "union"
                ) =>
            {
                if let Some(name) = ident(i + 1) {
                    p.items.push((scope.clone(), name.to_string()));
                }
            }
            Tok::Ident(kw)
                if kw == "macro_rules"
                    && toks.get(i + 1).map(|t| &t.0) == Some(&Tok::Punct('!')) =>
            {
                if let Some(name) = ident(i + 2) {
                    p.items.push((scope.clone(), name.to_string()));
                }
            }
            Tok::Ident(first)
                if toks.get(i + 1).map(|t| &t.0) == Some(&Tok::Sep)
                    && !prev_is_sep(&toks, i)
                    && !matches!(
                        i.checked_sub(1).map(|k| &toks[k].0),
                        Some(Tok::Punct('$' | '.'))
                    ) =>
            {
                // A path in code: `first::a::b`, kept when it names this crate (decided later).
                let mut segs = vec![first.clone()];
                let mut j = i + 1;
                while toks.get(j).map(|t| &t.0) == Some(&Tok::Sep) {
                    match ident(j + 1) {
                        Some(s) => {
                            segs.push(s.to_string());
                            j += 2;
                        }
                        None => break,
                    }
                }
                p.paths.push(PathUse {
                    test,
                    scope: scope.clone(),
                    segs,
                    binds: None,
                    glob: false,
                    public: false,
                    is_use: false,
                    line,
                });
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    p
}

fn prev_is_sep(toks: &[(Tok, usize)], i: usize) -> bool {
    i > 0 && toks[i - 1].0 == Tok::Sep
}

/// Whether the `use` at `i` is `pub` or `pub(…)`.
fn is_pub_before(toks: &[(Tok, usize)], i: usize) -> bool {
    let is = |k: usize, t: &Tok| toks.get(k).map(|x| &x.0) == Some(t);
    if i >= 1 && is(i - 1, &Tok::Ident("pub".into())) {
        return true;
    }
    if i >= 1 && is(i - 1, &Tok::Punct(')')) {
        let mut k = i - 1;
        while k > 0 && !is(k, &Tok::Punct('(')) {
            k -= 1;
        }
        return k >= 1 && is(k - 1, &Tok::Ident("pub".into()));
    }
    false
}

/// Parses a use tree at `*j` (after `use`, or inside braces) into `(path, bound name, glob)`s.
fn use_tree(
    toks: &[(Tok, usize)],
    j: &mut usize,
    prefix: Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>, bool)>,
) {
    let mut segs = prefix;
    if toks.get(*j).map(|t| &t.0) == Some(&Tok::Sep) {
        // `use ::ext::…`: another crate.
        segs.push("::".into());
        *j += 1;
    }
    loop {
        match toks.get(*j).map(|t| &t.0) {
            Some(Tok::Ident(s)) => {
                segs.push(s.clone());
                *j += 1;
                if toks.get(*j).map(|t| &t.0) == Some(&Tok::Sep) {
                    *j += 1;
                    continue;
                }
                let mut binds = segs.last().cloned();
                if binds.as_deref() == Some("self") {
                    segs.pop();
                    binds = segs.last().cloned();
                }
                if let Some(Tok::Ident(a)) = toks.get(*j).map(|t| &t.0) {
                    if a == "as" {
                        binds = match toks.get(*j + 1).map(|t| &t.0) {
                            Some(Tok::Ident(n)) if n != "_" => Some(n.clone()),
                            _ => None,
                        };
                        *j += 2;
                    }
                }
                out.push((segs, binds, false));
                break;
            }
            Some(Tok::Punct('*')) => {
                *j += 1;
                out.push((segs, None, true));
                break;
            }
            Some(Tok::Punct('{')) => {
                *j += 1;
                loop {
                    match toks.get(*j).map(|t| &t.0) {
                        Some(Tok::Punct('}')) => {
                            *j += 1;
                            break;
                        }
                        Some(Tok::Punct(',')) => *j += 1,
                        None => break,
                        _ => use_tree(toks, j, segs.clone(), out),
                    }
                }
                break;
            }
            _ => break,
        }
    }
    if toks.get(*j).map(|t| &t.0) == Some(&Tok::Punct(';')) {
        *j += 1;
    }
}

// ---------------------------------------------------------------------------------------------
// Crates: module trees, name resolution.

/// One crate: its modules (path → file index) and what each module declares.
#[derive(Default)]
struct Crate {
    modules: BTreeMap<ModPath, usize>,
    /// Names each module binds with `use`: name → (path as written, scope it is written in).
    aliases: BTreeMap<ModPath, BTreeMap<String, (ModPath, Vec<String>)>>,
    /// Each module's glob imports (path as written, scope).
    globs: BTreeMap<ModPath, Vec<Vec<String>>>,
    items: BTreeMap<ModPath, BTreeSet<String>>,
}

impl Crate {
    /// The absolute module path `segs` (as written in `scope`) starts from; `None`: another crate.
    fn absolute(&self, scope: &ModPath, segs: &[String], depth: usize) -> Option<Vec<String>> {
        let first = segs.first()?;
        let rest = &segs[1..];
        let join = |base: ModPath, rest: &[String]| {
            let mut v = base;
            v.extend(rest.iter().cloned());
            v
        };
        match first.as_str() {
            "crate" => Some(rest.to_vec()),
            "self" => Some(join(scope.clone(), rest)),
            "super" => {
                let mut base = scope.clone();
                base.pop()?;
                let mut rest = rest;
                while rest.first().map(String::as_str) == Some("super") {
                    base.pop()?;
                    rest = &rest[1..];
                }
                Some(join(base, rest))
            }
            "::" | "$crate" => None,
            name => {
                let mut child = scope.clone();
                child.push(name.to_string());
                if self.modules.contains_key(&child) {
                    return Some(join(child, rest));
                }
                if depth < 16 {
                    if let Some((s, p)) = self.aliases.get(scope).and_then(|a| a.get(name)) {
                        if p.len() > 1 || p[0] != *name {
                            let target = self.absolute(s, p, depth + 1)?;
                            return Some(join(target, rest));
                        }
                    }
                }
                if self.items.get(scope).is_some_and(|i| i.contains(name)) {
                    return Some(join(scope.clone(), segs));
                }
                None
            }
        }
    }

    /// The module whose file an absolute path lands in, following `use` bindings (re-exports)
    /// to where a name comes from.
    fn locate(&self, path: &[String], depth: usize) -> ModPath {
        let mut cur: ModPath = Vec::new();
        for (i, seg) in path.iter().enumerate() {
            let mut next = cur.clone();
            next.push(seg.clone());
            if self.modules.contains_key(&next) {
                cur = next;
                continue;
            }
            if depth >= 16 || self.items.get(&cur).is_some_and(|s| s.contains(seg)) {
                return cur;
            }
            if let Some((scope, p)) = self.aliases.get(&cur).and_then(|a| a.get(seg)) {
                return match self.absolute(scope, p, depth + 1) {
                    Some(mut target) => {
                        target.extend(path[i + 1..].iter().cloned());
                        self.locate(&target, depth + 1)
                    }
                    None => cur,
                };
            }
            for g in self.globs.get(&cur).into_iter().flatten() {
                if let Some(base) = self.absolute(&cur, g, depth + 1) {
                    let mut child = base.clone();
                    child.push(seg.clone());
                    let defines = self.modules.contains_key(&child)
                        || self.items.get(&base).is_some_and(|s| s.contains(seg))
                        || self.aliases.get(&base).is_some_and(|a| a.contains_key(seg));
                    if defines {
                        let mut target = base;
                        target.extend(path[i..].iter().cloned());
                        return self.locate(&target, depth + 1);
                    }
                }
            }
            return cur;
        }
        cur
    }
}

struct Edge {
    from: usize,
    to: usize,
    /// `file:line path`, what makes the edge.
    why: String,
}

struct Graph {
    files: Vec<String>,
    edges: Vec<Edge>,
}

impl Graph {
    /// The graph of every crate under `roots` (folders relative to `workspace`).
    fn of(workspace: &Path, roots: &[&str]) -> Graph {
        let mut files: Vec<String> = Vec::new();
        let mut index: BTreeMap<PathBuf, usize> = BTreeMap::new();
        let mut edges = Vec::new();
        let mut file_id = |path: &Path, files: &mut Vec<String>| -> usize {
            *index.entry(path.to_path_buf()).or_insert_with(|| {
                files.push(rel(workspace, path));
                files.len() - 1
            })
        };
        let mut all_rs = BTreeSet::new();
        let mut crate_roots = Vec::new();
        for r in roots {
            for dir in dirs_under(&workspace.join(r)) {
                all_rs.extend(rs_files_in(&dir).into_iter().map(|f| rel(workspace, &f)));
                if dir.join("Cargo.toml").is_file() {
                    crate_roots.extend(crate_roots_of(&dir));
                }
            }
        }
        for root in crate_roots {
            // Parse the crate: follow `mod` declarations from its root file.
            let mut krate = Crate::default();
            let mut parsed: Vec<(usize, Parsed)> = Vec::new();
            let mut queue: Vec<(PathBuf, ModPath)> = vec![(root.clone(), Vec::new())];
            while let Some((file, module)) = queue.pop() {
                let id = file_id(&file, &mut files);
                let src = fs::read_to_string(&file)
                    .unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
                let p = parse(&src, &module);
                krate.modules.insert(module.clone(), id);
                let mod_rs = file == root || file.file_name().is_some_and(|n| n == "mod.rs");
                let base = if mod_rs {
                    file.parent().unwrap().to_path_buf()
                } else {
                    file.with_extension("")
                };
                for m in &p.mods {
                    let mut path = m.scope.clone();
                    path.push(m.name.clone());
                    if m.inline {
                        krate.modules.insert(path, id);
                        continue;
                    }
                    // Inline modules between the file's module and the declaration.
                    let inner = &m.scope[module.len()..];
                    let child = match &m.path_attr {
                        Some(p) if inner.is_empty() => file.parent().unwrap().join(p),
                        Some(p) => inner.iter().fold(base.clone(), |b, s| b.join(s)).join(p),
                        None => {
                            let dir = inner.iter().fold(base.clone(), |b, s| b.join(s));
                            let flat = dir.join(format!("{}.rs", m.name));
                            if flat.is_file() {
                                flat
                            } else {
                                dir.join(&m.name).join("mod.rs")
                            }
                        }
                    };
                    assert!(
                        child.is_file(),
                        "{}: `mod {}` has no file {}",
                        rel(workspace, &file),
                        m.name,
                        rel(workspace, &child)
                    );
                    queue.push((normalize(&child), path));
                }
                parsed.push((id, p));
            }
            for (_, p) in &parsed {
                for (scope, name) in &p.items {
                    krate
                        .items
                        .entry(scope.clone())
                        .or_default()
                        .insert(name.clone());
                }
                for u in p.paths.iter().filter(|u| u.is_use) {
                    match (&u.binds, u.glob) {
                        (_, true) => krate
                            .globs
                            .entry(u.scope.clone())
                            .or_default()
                            .push(u.segs.clone()),
                        (Some(name), false) => {
                            krate
                                .aliases
                                .entry(u.scope.clone())
                                .or_default()
                                .insert(name.clone(), (u.scope.clone(), u.segs.clone()));
                        }
                        (None, false) => {}
                    }
                }
            }
            for (id, p) in &parsed {
                for u in p.paths.iter().filter(|u| !u.test) {
                    if !u.is_use {
                        let first = u.segs[0].as_str();
                        let mut child = u.scope.clone();
                        child.push(first.to_string());
                        let ours = matches!(first, "crate" | "super" | "self")
                            || krate.modules.contains_key(&child);
                        if !ours || u.segs.len() < 2 {
                            continue;
                        }
                    }
                    let Some(abs) = krate.absolute(&u.scope, &u.segs, 0) else {
                        continue;
                    };
                    let target = krate.locate(&abs, 0);
                    let to = krate.modules[&target];
                    let facade = u.is_use
                        && u.public
                        && target.len() > u.scope.len()
                        && target.starts_with(&u.scope);
                    if to != *id && !facade {
                        edges.push(Edge {
                            from: *id,
                            to,
                            why: format!("{}:{} {}", files[*id], u.line, u.segs.join("::")),
                        });
                    }
                }
            }
        }
        let unreached: Vec<&String> = all_rs.iter().filter(|f| !files.contains(f)).collect();
        assert!(
            unreached.is_empty(),
            "files no crate root reaches (add their crate root to `crate_roots_of`): {unreached:?}"
        );
        Graph { files, edges }
    }

    /// Each strongly connected component of more than one file, described (Tarjan's algorithm).
    fn cycles(&self) -> Vec<String> {
        let n = self.files.len();
        let mut adj = vec![BTreeSet::new(); n];
        for e in &self.edges {
            adj[e.from].insert(e.to);
        }
        let adj: Vec<Vec<usize>> = adj.into_iter().map(|s| s.into_iter().collect()).collect();
        let mut index = vec![usize::MAX; n];
        let mut low = vec![0; n];
        let mut on_stack = vec![false; n];
        let mut stack = Vec::new();
        let mut next = 0;
        let mut sccs: Vec<Vec<usize>> = Vec::new();
        for start in 0..n {
            if index[start] != usize::MAX {
                continue;
            }
            // Iterative DFS: (node, next neighbour to visit).
            let mut dfs = vec![(start, 0)];
            index[start] = next;
            low[start] = next;
            next += 1;
            stack.push(start);
            on_stack[start] = true;
            while let Some(&mut (v, ref mut k)) = dfs.last_mut() {
                if *k < adj[v].len() {
                    let w = adj[v][*k];
                    *k += 1;
                    if index[w] == usize::MAX {
                        index[w] = next;
                        low[w] = next;
                        next += 1;
                        stack.push(w);
                        on_stack[w] = true;
                        dfs.push((w, 0));
                    } else if on_stack[w] {
                        low[v] = low[v].min(index[w]);
                    }
                } else {
                    dfs.pop();
                    if let Some(&(u, _)) = dfs.last() {
                        low[u] = low[u].min(low[v]);
                    }
                    if low[v] == index[v] {
                        let mut scc = Vec::new();
                        loop {
                            let w = stack.pop().unwrap();
                            on_stack[w] = false;
                            scc.push(w);
                            if w == v {
                                break;
                            }
                        }
                        if scc.len() > 1 {
                            sccs.push(scc);
                        }
                    }
                }
            }
        }
        let mut out: Vec<String> = sccs
            .into_iter()
            .map(|scc| {
                let members: BTreeSet<usize> = scc.into_iter().collect();
                let mut text = format!(
                    "cycle of {} files: {}\n",
                    members.len(),
                    members
                        .iter()
                        .map(|&f| self.files[f].as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                let mut whys: Vec<String> = self
                    .edges
                    .iter()
                    .filter(|e| members.contains(&e.from) && members.contains(&e.to))
                    .map(|e| format!("  {} -> {}", e.why, self.files[e.to]))
                    .collect();
                whys.sort();
                whys.dedup();
                for w in whys {
                    writeln!(text, "{w}").unwrap();
                }
                text
            })
            .collect();
        out.sort();
        out
    }
}

/// `a/b/../c` → `a/c` (a `#[path]` may climb).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// The crate roots of the package in `dir`: cargo's automatic targets and the `path`s of its
/// target sections.
fn crate_roots_of(dir: &Path) -> Vec<PathBuf> {
    let mut roots = Vec::new();
    for f in ["src/lib.rs", "src/main.rs", "build.rs"] {
        if dir.join(f).is_file() {
            roots.push(dir.join(f));
        }
    }
    let manifest = fs::read_to_string(dir.join("Cargo.toml")).unwrap_or_default();
    for sub in ["src/bin", "tests", "benches", "examples"] {
        if sub == "tests" && !autotests(&manifest) {
            continue;
        }
        let d = dir.join(sub);
        roots.extend(rs_files_in(&d));
        let mut mains: Vec<PathBuf> = fs::read_dir(&d)
            .map(|rd| rd.flatten().map(|e| e.path().join("main.rs")).collect())
            .unwrap_or_default();
        mains.retain(|m| m.is_file());
        mains.sort();
        roots.extend(mains);
    }
    let mut in_target = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_target = matches!(
                line,
                "[lib]" | "[[bin]]" | "[[test]]" | "[[bench]]" | "[[example]]"
            );
        } else if let Some(v) = line.strip_prefix("path") {
            let v = v.trim_start();
            if in_target && v.starts_with('=') {
                let path = dir.join(v[1..].trim().trim_matches('"'));
                if !roots.contains(&path) {
                    roots.push(path);
                }
            }
        }
    }
    roots
}

/// Whether cargo finds the package's integration tests by itself: no `autotests = false` in
/// its `[package]`.
fn autotests(manifest: &str) -> bool {
    let mut in_package = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package {
            let words: Vec<&str> = line.split(['=', ' ']).filter(|w| !w.is_empty()).collect();
            if words == ["autotests", "false"] {
                return false;
            }
        }
    }
    true
}

/// The members of the workspace at `root`: the folders its `Cargo.toml` lists in `members`.
fn workspace_members(root: &Path) -> Vec<String> {
    let manifest = fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let start = manifest
        .find("members = [")
        .expect("the root Cargo.toml lists its members")
        + "members = [".len();
    let end = start + manifest[start..].find(']').unwrap();
    manifest[start..end]
        .split(',')
        .map(|m| m.trim().trim_matches('"').to_string())
        .filter(|m| !m.is_empty())
        .collect()
}

/// The names of the integration-test targets cargo makes for the package in `dir`, sorted: its
/// `[[test]]` sections (their `name`), and unless `autotests = false`, each `tests/*.rs` and
/// `tests/*/main.rs` no section names by its `path` (named after the file or folder).
fn integration_test_targets(dir: &Path) -> Vec<String> {
    let manifest = fs::read_to_string(dir.join("Cargo.toml")).unwrap_or_default();
    let mut names = BTreeSet::new();
    let mut paths = BTreeSet::new();
    let mut in_test = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_test = line == "[[test]]";
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let value = value.trim().trim_matches('"');
        match key.trim() {
            "name" if in_test => {
                names.insert(value.to_string());
            }
            "path" if in_test => {
                paths.insert(normalize(&dir.join(value)));
            }
            _ => {}
        }
    }
    if autotests(&manifest) {
        let tests = dir.join("tests");
        for file in rs_files_in(&tests) {
            if !paths.contains(&normalize(&file)) {
                names.insert(file.file_stem().unwrap().to_string_lossy().into_owned());
            }
        }
        for sub in dirs_under(&tests).into_iter().skip(1) {
            let main = sub.join("main.rs");
            if sub.parent() == Some(tests.as_path())
                && main.is_file()
                && !paths.contains(&normalize(&main))
            {
                names.insert(sub.file_name().unwrap().to_string_lossy().into_owned());
            }
        }
    }
    names.into_iter().collect()
}
