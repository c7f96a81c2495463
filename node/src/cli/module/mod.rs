//! `gamechain module …`: the author kit's commands.
//!
//! - `module new <name> [--template counter|table] [--path DIR] [--repo DIR | --sdk-git URL
//!   --sdk-rev COMMIT]`: a new module crate (the files of `node/templates/module/`, with
//!   `table/`'s module, scenarios and README for `--template table`) that builds and tests out
//!   of the box: an example module, its scenarios run natively and on the built `.wasm`, and a standalone
//!   workspace that depends on `gamechain-sdk` (and `gamechain-runtime` for the tests) either
//!   by path in a checkout (`--repo`; the default for a binary built without
//!   `GAMECHAIN_SDK_GIT`) or from git at an exact commit, with the chain's `Cargo.lock` and
//!   `rust-toolchain.toml`, so it builds with the chain's own dependency versions and compiler
//!   ([`SdkSource`]).
//! - `module build [--path DIR] [--out FILE]`: the crate built to `.wasm` with the one
//!   reproducible recipe (`gamechain_sdk::guest_build`); prints its path, size and SHA-256.
//! - `module deploy <FILE> --id <id> --key <FILE> [--policy POLICY] [--node URL]`: uploads a
//!   `.wasm` with a signed `deploy` transaction; a file over `MAX_CODE_BYTES` is refused before
//!   anything is sent. `--policy` is `owner` (the default for a new module), `immutable` or
//!   `timelocked:DURATION`; an upgrade keeps the module's policy.
//! - `module show <id>`, `module list [--pending]`: the module records as the API serves them
//!   (policy, pending upgrade).
//! - `module schema (--wasm FILE | --module ID [--node URL])`: the module's schema
//!   (`docs/modules.md`, "Schema") as pretty JSON, key order as declared; a file without a
//!   `gamechain.schema` section, or a malformed one, is a usage error.
//! - `module activate <id>`, `module cancel-upgrade <id>`, `module policy <id> <POLICY>`: the
//!   upgrade actions (docs/modules.md, "Upgrade policies").
//! - `module codegen --ts OUT (--schema FILE | --wasm FILE | --module ID [--node URL])`: a typed
//!   TypeScript client of a module from its schema (`codegen_ts.rs` writes it; here: reading the
//!   schema from a file, a module's `.wasm` or `GET /v1/modules/<id>/schema`, writing OUT).

pub mod codegen_ts;
pub mod dev;

use std::io::Write;
use std::path::{Path, PathBuf};

use gamechain_client::client::Client;
use gamechain_runtime::chain::genesis::{check_module_id, GenesisError};
use gamechain_runtime::chain::{Action, MAX_CODE_BYTES};
use serde_json::json;

use crate::cli::args::{ModuleCommand, Template};
use crate::cli::error::CliError;
use sha2::{Digest, Sha256};

/// The gamechain checkout this binary was built from: `module new`'s default `--repo`.
pub const BUILT_FROM_REPO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// Runs a `module` subcommand, printing its result to `out`. Errors: [`CliError::Usage`] for a
/// bad name, directory or build (cargo's errors included); the client's errors for `deploy`.
pub async fn run(command: ModuleCommand, out: &mut dyn Write) -> Result<(), CliError> {
    match command {
        ModuleCommand::New {
            name,
            path,
            repo,
            sdk_git,
            sdk_rev,
            template,
        } => {
            let dir = path.unwrap_or_else(|| PathBuf::from(&name));
            let source = match (repo, sdk_git, sdk_rev) {
                (Some(repo), _, _) => SdkSource::Path(repo),
                (None, Some(url), Some(rev)) => SdkSource::Git { url, rev },
                _ => SdkSource::built_in(),
            };
            let files = new_module_with(&name, &dir, &source, template).map_err(CliError::Usage)?;
            for file in &files {
                writeln!(out, "created {}", file.display()).map_err(write_error)?;
            }
            writeln!(
                out,
                "next: cd {} && cargo test && gamechain module build (or gamechain dev: build, deploy and redeploy on every save)",
                dir.display()
            )
            .map_err(write_error)
        }
        ModuleCommand::Build { path, out: copy } => {
            let built =
                gamechain_sdk::guest_build::build_guest_crate(&path).map_err(CliError::Usage)?;
            if let Some(copy) = &copy {
                std::fs::write(copy, &built.wasm).map_err(|e| {
                    CliError::Usage(format!("cannot write {}: {e}", copy.display()))
                })?;
            }
            let printed = json!({
                "path": copy.as_ref().unwrap_or(&built.path),
                "size": built.wasm.len(),
                "sha256": built.sha256,
            });
            let text = serde_json::to_string_pretty(&printed).expect("JSON values serialise");
            writeln!(out, "{text}").map_err(write_error)
        }
        ModuleCommand::Deploy {
            node,
            tx,
            file,
            id,
            policy,
        } => {
            check_id(&id).map_err(CliError::Usage)?;
            let cannot_read =
                |e: std::io::Error| CliError::Usage(format!("cannot read {}: {e}", file.display()));
            // Refused before reading a huge file, and again on what was read.
            let len = std::fs::metadata(&file).map_err(cannot_read)?.len();
            check_code_size(&file, len).map_err(CliError::Usage)?;
            let wasm = std::fs::read(&file).map_err(cannot_read)?;
            check_code_size(&file, wasm.len() as u64).map_err(CliError::Usage)?;
            let action = Action::Deploy {
                module: id,
                code: wasm,
                policy,
            };
            crate::cli::submit::send(&node.url, &tx, action, out).await
        }
        ModuleCommand::Show { node, id } => {
            let info = Client::new(&node.url)?.module(&id).await?;
            print(out, &info)
        }
        ModuleCommand::Schema { node, wasm, module } => {
            let text = match (wasm, module) {
                (Some(file), _) => {
                    let wasm = std::fs::read(&file).map_err(|e| {
                        CliError::Usage(format!("cannot read {}: {e}", file.display()))
                    })?;
                    gamechain_runtime::read_schema(&wasm)
                        .map_err(|e| CliError::Usage(format!("{}: {e}", file.display())))?
                        .ok_or_else(|| {
                            CliError::Usage(format!(
                                "{} declares no schema (no gamechain.schema section)",
                                file.display()
                            ))
                        })?
                }
                (None, Some(id)) => Client::new(&node.url)?.module_schema(&id).await?,
                (None, None) => {
                    return Err(CliError::Usage("give --wasm FILE or --module ID".into()))
                }
            };
            // What a node served is checked as the chain checks a section before it is shown.
            gamechain_sdk::schema::Schema::parse(&text)
                .map_err(|e| CliError::Usage(format!("not a valid module schema: {e}")))?;
            writeln!(out, "{}", gamechain_sdk::schema::pretty(&text)).map_err(write_error)
        }
        ModuleCommand::List { node, pending } => {
            let client = Client::new(&node.url)?;
            let modules = if pending {
                client.pending_upgrades().await?
            } else {
                client.modules().await?
            };
            print(out, &json!({ "modules": modules }))
        }
        ModuleCommand::Activate { node, tx, id } => {
            let action = Action::ActivateUpgrade { module: id };
            crate::cli::submit::send(&node.url, &tx, action, out).await
        }
        ModuleCommand::CancelUpgrade { node, tx, id } => {
            let action = Action::CancelUpgrade { module: id };
            crate::cli::submit::send(&node.url, &tx, action, out).await
        }
        ModuleCommand::Policy {
            node,
            tx,
            id,
            policy,
        } => {
            let action = Action::SetPolicy { module: id, policy };
            crate::cli::submit::send(&node.url, &tx, action, out).await
        }
        ModuleCommand::Codegen {
            ts,
            schema,
            wasm,
            module,
            node,
        } => {
            let bytes = if let Some(file) = &schema {
                std::fs::read(file)
                    .map_err(|e| CliError::Usage(format!("cannot read {}: {e}", file.display())))?
            } else if let Some(file) = &wasm {
                let code = std::fs::read(file)
                    .map_err(|e| CliError::Usage(format!("cannot read {}: {e}", file.display())))?;
                codegen_ts::schema_from_wasm(&code)
                    .map_err(|e| CliError::Usage(format!("{}: {e}", file.display())))?
            } else if let Some(id) = &module {
                fetch_schema(&node.url, id).await.map_err(CliError::Usage)?
            } else {
                return Err(CliError::Usage(
                    "one of --schema FILE, --wasm FILE or --module ID is needed".into(),
                ));
            };
            // With --module, the id the node serves the module under is the one its ops must
            // name: a schema naming another module is refused (a hostile node could otherwise
            // have the client send ops, stakes included, to a module of its choice).
            if let Some(id) = &module {
                let named = codegen_ts::parse_schema(&bytes)
                    .map_err(CliError::Usage)?
                    .module;
                if &named != id {
                    return Err(CliError::Usage(format!(
                        "the node's schema for module `{id}` names module `{named}`: refused (the \
                         client would send its ops to `{named}`). If the module was deployed \
                         under another id than its author's, generate from a schema file with \
                         that id (--schema FILE)"
                    )));
                }
            }
            let text = codegen_ts::generate(&bytes).map_err(CliError::Usage)?;
            // `--ts src/game.ts` in a new project: its folder is made, as `tsc --outDir` would.
            if let Some(parent) = ts.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent).map_err(|e| {
                    CliError::Usage(format!("cannot make {}: {e}", parent.display()))
                })?;
            }
            std::fs::write(&ts, &text)
                .map_err(|e| CliError::Usage(format!("cannot write {}: {e}", ts.display())))?;
            let parsed = codegen_ts::parse_schema(&bytes).map_err(CliError::Usage)?;
            print(
                out,
                &json!({
                    "path": ts,
                    "module": parsed.module,
                    "size": text.len(),
                    "schema_sha256": hex::encode(Sha256::digest(&bytes)),
                }),
            )
        }
    }
}

/// Largest schema answer read from a node: the chain's own bound on a `gamechain.schema`
/// section (64 KiB).
const MAX_SCHEMA_BYTES: usize = 64 << 10;

/// The schema a node serves for module `id` (`GET /v1/modules/<id>/schema`), as its bytes.
/// Errors: an unusable id, no answer, a 404 (no such module, a module deployed without a schema,
/// or a node from before module schemas) and any other refusal, each saying what to do.
async fn fetch_schema(node: &str, id: &str) -> Result<Vec<u8>, String> {
    check_id(id)?;
    let url = format!("{}/v1/modules/{id}/schema", node.trim_end_matches('/'));
    let answer = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(30))
        .build()
        .map_err(|e| format!("cannot make an HTTP client: {e}"))?
        .get(&url)
        .send()
        .await
        .map_err(|e| format!("cannot reach {node} for GET /v1/modules/{id}/schema: {e}"))?;
    let status = answer.status();
    // Read up to the bound and no further: a hostile node cannot make this hold more.
    let mut answer = answer;
    let mut body = Vec::new();
    while let Some(chunk) = answer
        .chunk()
        .await
        .map_err(|e| format!("GET {url}: the answer broke off: {e}"))?
    {
        if body.len() + chunk.len() > MAX_SCHEMA_BYTES {
            return Err(format!(
                "GET {url}: the answer is over {MAX_SCHEMA_BYTES} bytes (a schema is at most that)"
            ));
        }
        body.extend_from_slice(&chunk);
    }
    if status.is_success() {
        return Ok(body);
    }
    // The API's error body is `{"error": {"code": …, "message": …}}`.
    let said = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v.pointer("/error/message")?.as_str().map(str::to_string))
        .map(|m| format!(": {m}"))
        .unwrap_or_default();
    if status == reqwest::StatusCode::NOT_FOUND {
        return Err(format!(
            "the node at {node} serves no schema for module `{id}` (GET /v1/modules/{id}/schema \
             answered 404{said}): no such module, a module built without a schema, or a node \
             from before module schemas; pass --schema FILE or --wasm FILE instead"
        ));
    }
    Err(format!("GET {url} answered {status}{said}"))
}

fn print<T: serde::Serialize>(out: &mut dyn Write, value: &T) -> Result<(), CliError> {
    let text = serde_json::to_string_pretty(value).expect("API values always serialise");
    writeln!(out, "{text}").map_err(write_error)
}

/// Refuses module code of `len` bytes read from `file` when it is over what a deploy may carry
/// ([`MAX_CODE_BYTES`]; the node would answer `413 too_large` after the upload).
fn check_code_size(file: &Path, len: u64) -> Result<(), String> {
    if len > MAX_CODE_BYTES as u64 {
        return Err(format!(
            "{} is {len} bytes, more than a deploy may carry: the limit is {MAX_CODE_BYTES} bytes \
             of wasm (MAX_CODE_BYTES); nothing was sent",
            file.display()
        ));
    }
    Ok(())
}

fn write_error(e: std::io::Error) -> CliError {
    CliError::Usage(format!("cannot write the output: {e}"))
}

/// `Ok` when `id` is a usable module id (the chain's rule); else the reason.
pub fn check_id(id: &str) -> Result<(), String> {
    check_module_id(id).map_err(|e| match e {
        GenesisError::Invalid(m) => m,
        other => other.to_string(),
    })
}

/// The template files: (path inside the crate, text with `__NAME__`, `__TYPE__`, `__SDK__` and
/// `__RUNTIME__` placeholders; the last two are the inside of a dependency's inline table:
/// `path = "…"` or `git = "…", rev = "…"`).
const TEMPLATE: [(&str, &str); 5] = [
    (
        "Cargo.toml",
        include_str!("../../../templates/module/Cargo.toml.tmpl"),
    ),
    (
        "src/lib.rs",
        include_str!("../../../templates/module/lib.rs.tmpl"),
    ),
    (
        "tests/scenarios.rs",
        include_str!("../../../templates/module/scenarios.rs.tmpl"),
    ),
    (
        "README.md",
        include_str!("../../../templates/module/README.md.tmpl"),
    ),
    (
        ".gitignore",
        include_str!("../../../templates/module/gitignore.tmpl"),
    ),
];

/// The `table` template's files that replace the counter's (same paths); the others
/// (`Cargo.toml`, `.gitignore`) are shared.
const TABLE_TEMPLATE: [(&str, &str); 3] = [
    (
        "src/lib.rs",
        include_str!("../../../templates/module/table/lib.rs.tmpl"),
    ),
    (
        "tests/scenarios.rs",
        include_str!("../../../templates/module/table/scenarios.rs.tmpl"),
    ),
    (
        "README.md",
        include_str!("../../../templates/module/table/README.md.tmpl"),
    ),
];

/// Files copied from the checkout when it has them: the dependency versions and the compiler
/// the chain's own modules are built with.
const COPIED: [&str; 2] = ["Cargo.lock", "rust-toolchain.toml"];

/// `Cargo.lock` and `rust-toolchain.toml` of the checkout this binary was built from, for a
/// crate whose SDK comes from git (no checkout to copy them from).
const BUILT_WITH: [(&str, &str); 2] = [
    ("Cargo.lock", include_str!("../../../../Cargo.lock")),
    (
        "rust-toolchain.toml",
        include_str!("../../../../rust-toolchain.toml"),
    ),
];

/// Where a new module crate gets `gamechain-sdk` and `gamechain-runtime` from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SdkSource {
    /// A gamechain checkout: both by absolute path (`sdk-guest/`, `runtime/`), its
    /// `Cargo.lock` and `rust-toolchain.toml` copied. For a crate on the machine of the checkout.
    Path(PathBuf),
    /// A git repository at an exact commit (`git = "<url>", rev = "<40 hex>"`), with the
    /// `Cargo.lock` and `rust-toolchain.toml` this binary was built with. Builds anywhere.
    Git {
        /// The repository's URL (anything cargo accepts as `git = …`).
        url: String,
        /// The commit: 40 hex digits.
        rev: String,
    },
}

impl SdkSource {
    /// What `module new` uses without `--repo`/`--sdk-git`: [`SdkSource::Git`] when this
    /// binary was built with `GAMECHAIN_SDK_GIT` and `GAMECHAIN_SDK_REV` set (a release build
    /// names the repository and the commit it was built from), else [`SdkSource::Path`] of the
    /// checkout it was built from.
    pub fn built_in() -> Self {
        match (
            option_env!("GAMECHAIN_SDK_GIT"),
            option_env!("GAMECHAIN_SDK_REV"),
        ) {
            (Some(url), Some(rev)) if !url.is_empty() && !rev.is_empty() => SdkSource::Git {
                url: url.to_string(),
                rev: rev.to_string(),
            },
            _ => SdkSource::Path(PathBuf::from(BUILT_FROM_REPO)),
        }
    }
}

/// Writes the module crate `name` into `dir` (created; must not exist or be empty), depending on
/// `repo`'s `sdk-guest/` and `runtime/` by absolute path: [`new_module_from`] with
/// [`SdkSource::Path`].
pub fn new_module(name: &str, dir: &Path, repo: &Path) -> Result<Vec<PathBuf>, String> {
    new_module_from(name, dir, &SdkSource::Path(repo.to_path_buf()))
}

/// Writes the module crate `name` into `dir` (created; must not exist or be empty), its SDK
/// from `source`. Returns the files written. Errors: a bad module id, no gamechain checkout at a
/// path source, a git source whose URL is empty or whose rev is not 40 hex digits, a non-empty
/// `dir`, or an I/O failure.
pub fn new_module_from(name: &str, dir: &Path, source: &SdkSource) -> Result<Vec<PathBuf>, String> {
    new_module_with(name, dir, source, Template::Counter)
}

/// [`new_module_from`] with the files of `template`.
pub fn new_module_with(
    name: &str,
    dir: &Path,
    source: &SdkSource,
    template: Template,
) -> Result<Vec<PathBuf>, String> {
    check_id(name)?;
    let (sdk_dep, runtime_dep, copied): (String, String, Vec<(&str, String)>) = match source {
        SdkSource::Path(repo) => {
            let repo = repo
                .canonicalize()
                .map_err(|e| format!("no gamechain checkout at {}: {e}", repo.display()))?;
            let (sdk, runtime) = (repo.join("sdk-guest"), repo.join("runtime"));
            if !sdk.join("Cargo.toml").is_file() || !runtime.join("Cargo.toml").is_file() {
                return Err(format!(
                    "no gamechain checkout at {} (no sdk-guest/ and runtime/; pass --repo DIR)",
                    repo.display()
                ));
            }
            let copied = COPIED
                .iter()
                .filter_map(|f| Some((*f, std::fs::read_to_string(repo.join(f)).ok()?)))
                .collect();
            (
                format!("path = \"{}\"", toml_string(&sdk.display().to_string())),
                format!("path = \"{}\"", toml_string(&runtime.display().to_string())),
                copied,
            )
        }
        SdkSource::Git { url, rev } => {
            if url.trim().is_empty() {
                return Err("--sdk-git needs a repository URL".to_string());
            }
            if rev.len() != 40 || !rev.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(format!(
                    "--sdk-rev `{rev}` is not a commit id (40 hex digits): the dependency must \
                     name an exact revision"
                ));
            }
            let dep = format!(
                "git = \"{}\", rev = \"{}\"",
                toml_string(url),
                rev.to_ascii_lowercase()
            );
            let copied = BUILT_WITH
                .iter()
                .map(|(f, t)| (*f, t.to_string()))
                .collect();
            (dep.clone(), dep, copied)
        }
    };
    if dir.exists()
        && std::fs::read_dir(dir)
            .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
            .next()
            .is_some()
    {
        return Err(format!("{} exists and is not empty", dir.display()));
    }
    let type_name = codegen_ts::type_name(name);
    let mut written = Vec::new();
    let mut write = |path: &str, text: &str| -> Result<(), String> {
        let path = dir.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        written.push(path);
        Ok(())
    };
    for (path, text) in TEMPLATE {
        let text = match template {
            Template::Counter => text,
            Template::Table => TABLE_TEMPLATE
                .iter()
                .find(|(p, _)| *p == path)
                .map_or(text, |(_, t)| *t),
        };
        let text = text
            .replace("__NAME__", name)
            .replace("__TYPE__", &type_name)
            .replace("__SDK__", &sdk_dep)
            .replace("__RUNTIME__", &runtime_dep);
        write(path, &text)?;
    }
    for (file, text) in copied {
        write(file, &text)?;
    }
    Ok(written)
}

/// Text as the inside of a TOML basic string (`\` and `"` escaped).
fn toml_string(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_over_the_limit_is_refused_before_upload() {
        let file = Path::new("big.wasm");
        assert_eq!(check_code_size(file, MAX_CODE_BYTES as u64), Ok(()));
        let err = check_code_size(file, MAX_CODE_BYTES as u64 + 1).unwrap_err();
        assert!(
            err.starts_with(
                "big.wasm is 1048577 bytes, more than a deploy may carry: the limit is 1048576"
            ),
            "{err}"
        );
    }

    #[test]
    fn a_git_source_writes_an_exact_revision_and_the_built_in_lock_file() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("g");
        let rev = "0123456789abcdef0123456789ABCDEF01234567";
        let source = SdkSource::Git {
            url: "https://example.org/gamechain.git".into(),
            rev: rev.into(),
        };
        new_module_from("g", &dir, &source).unwrap();
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        let dep = "git = \"https://example.org/gamechain.git\", \
                   rev = \"0123456789abcdef0123456789abcdef01234567\"";
        assert!(
            manifest.contains(&format!("gamechain-sdk = {{ {dep} }}")),
            "{manifest}"
        );
        assert!(
            manifest.contains(&format!(
                "gamechain-runtime = {{ {dep}, features = [\"testkit\"] }}"
            )),
            "{manifest}"
        );
        assert!(!manifest.contains("path ="), "{manifest}");
        assert_eq!(
            std::fs::read_to_string(dir.join("Cargo.lock")).unwrap(),
            BUILT_WITH[0].1
        );
        assert!(dir.join("rust-toolchain.toml").is_file());

        for (url, rev, err) in [
            ("", rev, "--sdk-git needs a repository URL"),
            (
                "u",
                "main",
                "--sdk-rev `main` is not a commit id (40 hex digits)",
            ),
        ] {
            let source = SdkSource::Git {
                url: url.into(),
                rev: rev.into(),
            };
            let e = new_module_from("g", &tmp.path().join("h"), &source).unwrap_err();
            assert!(e.starts_with(err), "{e}");
        }
    }

    #[test]
    fn the_table_template_replaces_the_module_its_scenarios_and_readme() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("duel");
        let source = SdkSource::Path(PathBuf::from(BUILT_FROM_REPO));
        let files = new_module_with("duel", &dir, &source, Template::Table).unwrap();
        assert_eq!(files.len(), 7);
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
        let (lib, scenarios, readme) = (
            read("src/lib.rs"),
            read("tests/scenarios.rs"),
            read("README.md"),
        );
        assert!(lib.starts_with("//! # duel: a staked two-player table"));
        assert!(lib.contains("pub struct Duel;") && lib.contains("\"claim_timeout\" =>"));
        assert!(scenarios.contains("use duel::{Duel, ID, TIMEOUT_MS};"));
        assert!(readme.contains("--template table"));
        for text in [&lib, &scenarios, &readme] {
            assert!(!text.contains("__NAME__") && !text.contains("__TYPE__"));
        }
        // The counter's manifest is shared.
        assert!(read("Cargo.toml").contains("name = \"duel\""));
    }

    #[test]
    fn names_become_type_names() {
        assert_eq!(codegen_ts::type_name("mnk"), "Mnk");
        assert_eq!(codegen_ts::type_name("my_game_2"), "MyGame2");
        assert_eq!(codegen_ts::type_name("a__b"), "AB");
    }

    #[test]
    fn new_writes_a_crate_and_refuses_bad_names_and_full_dirs() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("tally_game");
        let files = new_module("tally_game", &dir, Path::new(BUILT_FROM_REPO)).unwrap();
        let names: Vec<String> = files
            .iter()
            .map(|f| f.strip_prefix(&dir).unwrap().display().to_string())
            .collect();
        assert_eq!(
            names,
            [
                "Cargo.toml",
                "src/lib.rs",
                "tests/scenarios.rs",
                "README.md",
                ".gitignore",
                "Cargo.lock",
                "rust-toolchain.toml"
            ]
        );
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        let sdk = Path::new(BUILT_FROM_REPO)
            .canonicalize()
            .unwrap()
            .join("sdk-guest");
        assert!(manifest.contains(&format!(
            "gamechain-sdk = {{ path = \"{}\" }}",
            sdk.display()
        )));
        assert!(manifest.contains("name = \"tally_game\""));
        let lib = std::fs::read_to_string(dir.join("src/lib.rs")).unwrap();
        assert!(lib.contains("pub struct TallyGame;"));
        assert!(lib.contains("pub const ID: &str = \"tally_game\";"));
        assert!(!lib.contains("__"), "every placeholder is replaced");

        let err = new_module("tally_game", &dir, Path::new(BUILT_FROM_REPO)).unwrap_err();
        assert!(err.ends_with("exists and is not empty"), "{err}");
        let err = new_module("Tally", &tmp.path().join("x"), Path::new(BUILT_FROM_REPO));
        assert_eq!(
            err.unwrap_err(),
            "module id `Tally` must be 1 to 32 of a-z, 0-9 and _, starting with a letter"
        );
        let err = new_module("ok", &tmp.path().join("y"), tmp.path()).unwrap_err();
        assert!(err.starts_with("no gamechain checkout at "), "{err}");
    }
}
