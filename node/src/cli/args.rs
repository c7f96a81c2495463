//! The `gamechain` command line: its arguments (clap) and the parsing of the values they carry
//! (action JSON, `key=value` view queries). Running the commands is `commands.rs` (client
//! commands), `module/` (the module kit), `node.rs` (`gamechain node`), `verify/`
//! (`verify`, `export`) and `demo/` (`gamechain demo`).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{ArgGroup, Args, Parser, Subcommand};
use gamechain_runtime::chain::{Action, UpgradePolicy};
use gamechain_sdk::Amount;

use gamechain_client::client::{BlockRef, DEFAULT_NODE_URL};

use crate::cli::bench::BenchArgs;
use crate::cli::verify::{ExportArgs, VerifyArgs};

/// gamechain: a chain node whose games run as wasm modules, and its client.
#[derive(Debug, Parser)]
#[command(name = "gamechain", version, about, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a node (sequencer or validator, storage, HTTP/WebSocket API) until SIGINT or SIGTERM.
    Node(NodeArgs),
    /// Play the reference tic-tac-toe game (docs/tictactoe.md) over HTTP and check every outcome (starts a node
    /// in-process unless --node is given).
    Demo(DemoArgs),
    /// Manage key files.
    #[command(subcommand)]
    Key(KeyCommand),
    /// Session keys (docs/session-keys.md): authorize one with the main key, play with it, list,
    /// revoke.
    #[command(subcommand)]
    Session(SessionCommand),
    /// Sign and send one action given as JSON, e.g. '{"type":"faucet","token":"GOLD"}'.
    Send {
        /// The node.
        #[command(flatten)]
        node: NodeUrl,
        /// How to sign and wait.
        #[command(flatten)]
        tx: TxArgs,
        /// The action: {"type":"faucet"|"transfer"|"game"|"deploy"|"activate_upgrade"|
        /// "cancel_upgrade"|"set_policy"|"authorize_session"|"revoke_session", ...}
        /// (node/API.md; `session game` sends a session_game).
        action: String,
    },
    /// Ask the faucet for GOLD.
    Faucet {
        /// The node.
        #[command(flatten)]
        node: NodeUrl,
        /// How to sign and wait.
        #[command(flatten)]
        tx: TxArgs,
    },
    /// Send GOLD to an address (a `module:<id>` escrow account is refused: only its module moves
    /// those funds).
    Transfer {
        /// The node.
        #[command(flatten)]
        node: NodeUrl,
        /// How to sign and wait.
        #[command(flatten)]
        tx: TxArgs,
        /// The receiving account.
        #[arg(long)]
        to: String,
        /// Base units (GOLD has 2 decimals: 100 is 1.00 GOLD).
        #[arg(long)]
        amount: Amount,
    },
    /// Send one op to a game module, e.g. `game tictactoe '{"kind":"create","stake":"100"}'`.
    Game {
        /// The node.
        #[command(flatten)]
        node: NodeUrl,
        /// How to sign and wait.
        #[command(flatten)]
        tx: TxArgs,
        /// The module id.
        module: String,
        /// The op JSON.
        op: String,
        /// Escrow a stake even in a module whose owner can change its code at once (policy
        /// `owner`); without it such an op is refused before anything is sent.
        #[arg(long)]
        allow_mutable: bool,
    },
    /// Seal 32 bytes to a future round of the chain's beacon for a module, as the key's address,
    /// with the module's tag (`docs/sealed-moves.md`), e.g. `seal --key a.wif --module
    /// sealed_rps --tag <game id>/x --round 120 --byte 1`. Prints `{"sealed"}`; with `--op`, puts
    /// it in that op's `sealed` field and sends the op instead.
    Seal {
        /// The node (its genesis names the chain id and the beacon key).
        #[command(flatten)]
        node: NodeUrl,
        /// How to sign and wait (with `--op`); the key's address is the one the seal binds.
        #[command(flatten)]
        tx: TxArgs,
        /// The module that will take it.
        #[arg(long)]
        module: String,
        /// The module's binding tag, as text (sealed rock-paper-scissors: `<game id>/<x|o>`; the
        /// auction: its id).
        #[arg(long)]
        tag: String,
        /// The round: the block height whose beacon opens it (the game's `round`).
        #[arg(long)]
        round: u64,
        /// The plaintext as hex, up to 32 bytes (zero-padded).
        #[arg(long)]
        plaintext: Option<String>,
        /// The plaintext's first byte (sealed rock-paper-scissors: 1 rock, 2 paper, 3 scissors).
        #[arg(long)]
        byte: Option<u8>,
        /// The plaintext's first 8 bytes, big-endian (the auction's bid in base units).
        #[arg(long)]
        u64: Option<u64>,
        /// An op JSON of `--module` to send with the envelope in its `sealed` field.
        #[arg(long)]
        op: Option<String>,
    },
    /// Show an account's balances and nonces (an address or `module:<id>`).
    Account {
        /// The node.
        #[command(flatten)]
        node: NodeUrl,
        /// The account.
        account: String,
    },
    /// Show a transaction and its receipt.
    Tx {
        /// The node.
        #[command(flatten)]
        node: NodeUrl,
        /// The txid (64 hex).
        txid: String,
    },
    /// Show a block.
    Block {
        /// The node.
        #[command(flatten)]
        node: NodeUrl,
        /// A height, or `latest`.
        #[arg(default_value = "latest")]
        which: BlockRef,
    },
    /// Run a module's view, e.g. `view tictactoe open=1` or `view tictactoe id=80566b04265ced78`.
    View {
        /// The node.
        #[command(flatten)]
        node: NodeUrl,
        /// The module id.
        module: String,
        /// Query parameters.
        #[arg(value_name = "KEY[=VALUE]", value_parser = parse_query_pair)]
        query: Vec<(String, String)>,
        /// Ask for the view with a proof of every state entry it read and check it from the
        /// genesis alone: the proofs, the block's signer (and finality on a chain with
        /// validators), the module's code, and the view re-executed over the proven reads.
        #[arg(long)]
        prove: bool,
        /// With `--prove`: the genesis file to trust instead of the node's `GET /v1/genesis`.
        #[arg(long, value_name = "FILE", requires = "prove")]
        genesis: Option<PathBuf>,
    },
    /// Show the node's status (chain id, height, head, state root, mempool size), or with
    /// `--net DIR` every validator's of a `gamechain testnet` folder.
    Status {
        /// The node.
        #[command(flatten)]
        node: NodeUrl,
        /// A folder made by `gamechain testnet`: ask each of its validators (DIR/<i>/node.toml).
        #[arg(long, value_name = "DIR")]
        net: Option<PathBuf>,
        /// With --net: print a JSON array instead of a table.
        #[arg(long, requires = "net")]
        json: bool,
    },
    /// The module author kit and upgrade policies: `module new`, `build`, `deploy`, `show`,
    /// `list`, `activate`, `cancel-upgrade`, `policy`.
    #[command(subcommand)]
    Module(ModuleCommand),
    /// Replay the chain from genesis (--data DIR, --node URL or --file FILE) and check every
    /// signature, receipt and state root; exit 4 naming the first divergence. On a chain with
    /// validators also every finality certificate (exit 5 when a block up to the head is not
    /// covered by one) and the stored evidence (exit 6 when a record proves no fault).
    Verify(VerifyArgs),
    /// Write the chain (genesis, module code, blocks, state) to one file for `verify --file`.
    Export(ExportArgs),
    /// Play a game off-chain through a channel (docs/channels.md, "Playing with the CLI"):
    /// every signed move kept in a local file, every received move checked by the rules run
    /// locally, settlement and disputes on chain.
    #[command(subcommand)]
    Channel(ChannelCommand),
    /// Write a local network of validators to one folder (keys, a shared genesis, one
    /// node.toml each); --start runs them all until Ctrl-C (docs/validators.md).
    Testnet(crate::cli::testnet::TestnetArgs),
    /// Load-test a node: fund N accounts, sign a workload, post it over C connections, report
    /// committed tx/s (from blocks), post -> block latency, node CPU per transaction (starts a
    /// node in-process unless --node is given).
    Bench(BenchArgs),
    /// Run a module crate on an embedded dev node and redeploy it on every save: build, deploy
    /// (policy owner), watch src/, rebuild, upgrade, regenerate the TypeScript client; a page
    /// at /dev/ (docs/modules.md, "The dev loop").
    #[command(long_about = crate::cli::dev::LONG_ABOUT)]
    Dev(crate::cli::dev::DevArgs),
    /// Internal, run by a node for a tier-up (`node/ledger/src/tier_up.rs`): compiles the
    /// instrumented wasm read on stdin with Cranelift and writes the machine code on stdout.
    #[command(name = "internal-tier-up-compile", hide = true)]
    TierUpCompile {
        /// Cranelift's optimisation level: none, speed or speed_and_size.
        #[arg(long, default_value = "speed")]
        opt_level: String,
    },
}

/// `gamechain node`.
#[derive(Debug, Args)]
pub struct NodeArgs {
    /// A TOML configuration file (every field optional; defaults are embedded).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The data directory (overrides the configuration's `data_dir`).
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,
    /// The API's listen address (overrides the configuration's `listen`), e.g. 127.0.0.1:8645.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<SocketAddr>,
    /// Run a read replica of the sequencer at URL: pull, verify and store its blocks, serve the
    /// read API, forward transactions to it (no sequencer key is used).
    #[arg(long, value_name = "URL")]
    pub follow: Option<String>,
    /// A sequencer whose database lost blocks it had signed (its head is below
    /// `<data>/sign-state.json`): fetch them from the node at URL (a follower, or any node of
    /// the chain), verify and commit them, then start. Not with --follow.
    #[arg(long, value_name = "URL", conflicts_with = "follow")]
    pub restore_from: Option<String>,
    /// With --follow or --validator, on an empty data directory: start from the newest state
    /// snapshot the node at URL serves (checked against the signed, on a chain with validators
    /// the certified, header's state root) instead of replaying the chain from genesis. A
    /// validator then follows URL until a block finalized after the join, and a validator
    /// that lost its consensus journal rejoins the same way (docs/validators.md,
    /// "Rejoining"); otherwise ignored when the data directory holds the chain already.
    #[arg(long, value_name = "URL")]
    pub snapshot_from: Option<String>,
    /// Run one of the validators of a chain whose genesis names a validator set (the
    /// configuration's `[validator]` table says how to reach the others; docs/validators.md).
    #[arg(long, conflicts_with_all = ["follow", "restore_from"])]
    pub validator: bool,
}

/// `gamechain demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Play on this node instead of starting one in-process.
    #[arg(long, value_name = "URL")]
    pub node: Option<String>,
    /// Also write the players' keys to DIR/alice.wif and DIR/bob.wif (mode 0600).
    #[arg(long, value_name = "DIR")]
    pub keys_dir: Option<PathBuf>,
    /// Seconds to wait for each transaction's receipt.
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    pub timeout: u64,
}

/// `gamechain key …`.
#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Make a new testnet key: its WIF goes to a new 0600 file, its address to stdout.
    New {
        /// The key file to create (never overwritten). Default: ./<address>.wif.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Print the address of an existing key file (and, with `--json`, its network and public
    /// key); never its secret.
    Show {
        /// The key file (one WIF line, e.g. from `gamechain key new`).
        #[arg(long, value_name = "FILE")]
        key: PathBuf,
        /// Print `{"address", "network", "public_key"}` instead of the address alone.
        #[arg(long)]
        json: bool,
    },
}

/// `gamechain session …`.
#[derive(Debug, Subcommand)]
pub enum SessionCommand {
    /// Make a new session key, authorize it with the main key (`--key`, one transaction) and
    /// write it to a new 0600 session file; prints `{"key", "account", "session", "modules",
    /// "expires_at_ms", "cap", "file", "txid"}` once the authorization is in a block.
    Authorize {
        /// The node.
        #[command(flatten)]
        node: NodeUrl,
        /// The main key and how to wait.
        #[command(flatten)]
        tx: TxArgs,
        /// The scope: module ids, comma-separated (e.g. tictactoe,mnk).
        #[arg(long, value_delimiter = ',', required = true)]
        modules: Vec<String>,
        /// How long the session lives, in block time after the head (ms, s, m, h, d; at most
        /// 30d).
        #[arg(long, value_name = "DURATION", default_value = "1h",
              value_parser = gamechain_player::time::parse_duration_ms)]
        expires_in: u64,
        /// Most GOLD the session may move out of the account, stakes and fees (GOLD with up to
        /// 2 decimals: 10.00 is 1000 base units).
        #[arg(long, value_name = "GOLD", value_parser = parse_gold)]
        cap: u128,
        /// The session file to write (never overwritten). Default: ./<session key address>.session.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Revoke the main key's session of a session key address (one transaction, at once).
    Revoke {
        /// The node.
        #[command(flatten)]
        node: NodeUrl,
        /// The main key and how to wait.
        #[command(flatten)]
        tx: TxArgs,
        /// The session key's address.
        key_address: String,
    },
    /// List an account's sessions (`GET /v1/account/<address>/sessions`).
    List {
        /// The node.
        #[command(flatten)]
        node: NodeUrl,
        /// The account.
        account: String,
    },
    /// Send one game op with a session file's key for its account, e.g. `session game
    /// tictactoe --session alice.session '{"kind":"create","stake":"100"}'`.
    Game {
        /// The node.
        #[command(flatten)]
        node: NodeUrl,
        /// The session file (from `session authorize`).
        #[arg(long, value_name = "FILE")]
        session: PathBuf,
        /// Print the txid as soon as the node accepts it; do not wait for a block.
        #[arg(long)]
        no_wait: bool,
        /// Seconds to wait for the receipt.
        #[arg(long, value_name = "SECS", default_value_t = 60)]
        timeout: u64,
        /// The module id.
        module: String,
        /// The op JSON.
        op: String,
        /// Escrow a stake even in a module whose owner can change its code at once.
        #[arg(long)]
        allow_mutable: bool,
    },
}

/// GOLD as a person writes it, `10`, `10.5` or `10.00` (at most 2 decimals), in base units.
/// Errors: anything else, or more than u128 holds.
pub fn parse_gold(text: &str) -> Result<u128, String> {
    let bad = || format!("`{text}` is not an amount of GOLD (e.g. 10.00: at most 2 decimals)");
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || (text.contains('.') && !digits(frac)) || frac.len() > 2 {
        return Err(bad());
    }
    let whole: u128 = whole.parse().map_err(|_| bad())?;
    let frac: u128 = format!("{frac:0<2}").parse().map_err(|_| bad())?;
    whole
        .checked_mul(100)
        .and_then(|w| w.checked_add(frac))
        .ok_or_else(bad)
}

/// The node a client command talks to.
#[derive(Debug, Args)]
pub struct NodeUrl {
    /// The node's base URL.
    #[arg(long = "node", value_name = "URL", env = "GAMECHAIN_NODE", default_value = DEFAULT_NODE_URL)]
    pub url: String,
}

/// Signing and waiting options of the commands that send a transaction.
#[derive(Debug, Args)]
pub struct TxArgs {
    /// The sender's key file (one WIF line, e.g. from `gamechain key new`).
    #[arg(long, value_name = "FILE")]
    pub key: PathBuf,
    /// Print the txid as soon as the node accepts the transaction; do not wait for a block.
    #[arg(long)]
    pub no_wait: bool,
    /// Seconds to wait for the receipt.
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    pub timeout: u64,
}

/// `key=value` → `(key, value)`; the value may itself contain `=`. A bare `key` is `(key, "")`,
/// as the API reads `?open`. An empty key is refused.
pub fn parse_query_pair(s: &str) -> Result<(String, String), String> {
    let (k, v) = s.split_once('=').unwrap_or((s, ""));
    if k.is_empty() {
        return Err(format!("`{s}` is not KEY=VALUE or KEY"));
    }
    Ok((k.to_string(), v.to_string()))
}

/// Parses an action as JSON (`{"type": "faucet" | "transfer" | "game", …}`) with the chain's
/// own rules, so a malformed one is refused before it is signed. Errors: the JSON or shape
/// problem, as text.
pub fn parse_action(text: &str) -> Result<Action, String> {
    serde_json::from_str(text).map_err(|e| format!("not an action: {e}"))
}

/// Parses a game op: any JSON object, kept byte for byte as written. Errors: not JSON, or not an
/// object.
pub fn parse_game_action(module: &str, op: &str) -> Result<Action, String> {
    let raw: Box<serde_json::value::RawValue> =
        serde_json::from_str(op).map_err(|e| format!("op is not JSON: {e}"))?;
    if !raw.get().trim_start().starts_with('{') {
        return Err("op must be a JSON object, e.g. {\"kind\":\"create\"}".to_string());
    }
    Ok(Action::Game {
        game: module.to_string(),
        op: raw,
    })
}

/// `gamechain module …`.
#[derive(Debug, Subcommand)]
pub enum ModuleCommand {
    /// Make a new module crate that builds and tests out of the box.
    New {
        /// The module id and crate name: 1–32 of a-z, 0-9 and _, starting with a letter.
        name: String,
        /// The crate's directory, which must not exist or be empty. Default: ./<name>.
        #[arg(long, value_name = "DIR")]
        path: Option<PathBuf>,
        /// The gamechain checkout whose `sdk-guest/` and `runtime/` the crate depends on by
        /// path (and whose `Cargo.lock` and `rust-toolchain.toml` it copies). Default: the one
        /// this binary was built from, unless it was built with a git source (`--sdk-git`).
        #[arg(long, value_name = "DIR", conflicts_with = "sdk_git")]
        repo: Option<PathBuf>,
        /// Depend on `gamechain-sdk` and `gamechain-runtime` from this git repository instead,
        /// at exactly `--sdk-rev`: a crate that builds anywhere, outside any checkout. Default:
        /// `GAMECHAIN_SDK_GIT` when this binary was built with it set.
        #[arg(long, value_name = "URL", requires = "sdk_rev")]
        sdk_git: Option<String>,
        /// The commit of `--sdk-git` to depend on: 40 hex digits (an exact revision).
        #[arg(long, value_name = "COMMIT", requires = "sdk_git")]
        sdk_rev: Option<String>,
        /// The starting point: `counter` (a per-account tally, the default) or `table` (a
        /// staked two-player table: create, join, cancel, move, claim_timeout by block time,
        /// escrow and payouts).
        #[arg(long, value_enum, value_name = "TEMPLATE", default_value = "counter")]
        template: Template,
    },
    /// Build a module crate to a reproducible .wasm; print its path, size and SHA-256.
    Build {
        /// The crate's directory (holding its Cargo.toml).
        #[arg(long, value_name = "DIR", default_value = ".")]
        path: PathBuf,
        /// Also copy the .wasm to FILE.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Upload a .wasm with a signed `deploy` transaction: a new module under --policy, or an
    /// upgrade of ours (at once under `owner`, announced under `timelocked`).
    Deploy {
        /// The node.
        #[command(flatten)]
        node: NodeUrl,
        /// How to sign and wait.
        #[command(flatten)]
        tx: TxArgs,
        /// The module's .wasm file (e.g. from `gamechain module build`).
        file: PathBuf,
        /// The module id to deploy it under: the id its code uses for itself.
        #[arg(long)]
        id: String,
        /// A new module's upgrade policy: `owner` (we may upgrade it at once; players' CLIs
        /// refuse to stake in it without --allow-mutable), `timelocked:DURATION` (e.g.
        /// `timelocked:7d`: upgrades are announced and take effect that much later) or
        /// `immutable`. Default: `owner` for a new module; an upgrade keeps the module's.
        #[arg(long, value_name = "POLICY", value_parser = parse_policy)]
        policy: Option<UpgradePolicy>,
    },
    /// Show a module: code hash, owner, upgrade policy and pending upgrade.
    Show {
        /// The node.
        #[command(flatten)]
        node: NodeUrl,
        /// The module id.
        id: String,
    },
    /// Print a module's schema (its ops, events and views; docs/modules.md, "Schema") as pretty
    /// JSON, from a .wasm file (--wasm) or from the code a node runs for --module.
    Schema {
        /// The node (with --module).
        #[command(flatten)]
        node: NodeUrl,
        /// A module .wasm file.
        #[arg(
            long,
            value_name = "FILE",
            conflicts_with = "module",
            required_unless_present = "module"
        )]
        wasm: Option<PathBuf>,
        /// A module id on the node.
        #[arg(long, value_name = "ID")]
        module: Option<String>,
    },
    /// List the chain's modules with their policies (--pending: only those with an announced
    /// upgrade).
    List {
        /// The node.
        #[command(flatten)]
        node: NodeUrl,
        /// Only modules with a pending upgrade.
        #[arg(long)]
        pending: bool,
    },
    /// Put a timelocked module's announced upgrade in effect (anyone may, once it is due).
    Activate {
        /// The node.
        #[command(flatten)]
        node: NodeUrl,
        /// How to sign and wait.
        #[command(flatten)]
        tx: TxArgs,
        /// The module id.
        id: String,
    },
    /// Cancel our module's announced upgrade.
    CancelUpgrade {
        /// The node.
        #[command(flatten)]
        node: NodeUrl,
        /// How to sign and wait.
        #[command(flatten)]
        tx: TxArgs,
        /// The module id.
        id: String,
    },
    /// Write a typed client of a module from its schema (docs/modules.md, "Typed clients"):
    /// `--ts OUT` a TypeScript file on top of the JS SDK. The schema comes from `--schema FILE`
    /// (its JSON), `--wasm FILE` (the `gamechain.schema` section of a built module) or
    /// `--module ID` (`GET /v1/modules/<id>/schema` of `--node`).
    #[command(group(ArgGroup::new("source").required(true).args(["schema", "wasm", "module"])))]
    Codegen {
        /// The TypeScript file to write (e.g. tictactoe.ts).
        #[arg(long, value_name = "OUT")]
        ts: PathBuf,
        /// The module's schema, a JSON file.
        #[arg(long, value_name = "FILE")]
        schema: Option<PathBuf>,
        /// A built module (.wasm) whose `gamechain.schema` custom section holds its schema.
        #[arg(long, value_name = "FILE")]
        wasm: Option<PathBuf>,
        /// The module id whose schema the node serves (`--node`).
        #[arg(long, value_name = "ID")]
        module: Option<String>,
        /// The node (only with --module).
        #[command(flatten)]
        node: NodeUrl,
    },
    /// Tighten our module's policy: owner → timelocked:DURATION → immutable (a timelock only
    /// lengthened). There is no way back.
    Policy {
        /// The node.
        #[command(flatten)]
        node: NodeUrl,
        /// How to sign and wait.
        #[command(flatten)]
        tx: TxArgs,
        /// The module id.
        id: String,
        /// The new policy: `timelocked:DURATION` or `immutable`.
        #[arg(value_parser = parse_policy)]
        policy: UpgradePolicy,
    },
}

/// A policy on the command line: `owner`, `immutable`, or `timelocked:DURATION` (a number and a
/// unit: ms, s, m, h, d; e.g. `timelocked:7d`). Errors: anything else, or a delay outside 1 ms
/// to 365 days.
pub fn parse_policy(text: &str) -> Result<UpgradePolicy, String> {
    let policy = match text {
        "owner" => UpgradePolicy::Owner,
        "immutable" => UpgradePolicy::Immutable,
        other => match other.strip_prefix("timelocked:") {
            Some(d) => UpgradePolicy::Timelocked {
                delay_ms: gamechain_player::time::parse_duration_ms(d)?,
            },
            None => {
                return Err(format!(
                    "`{text}` is not a policy: owner, immutable or timelocked:DURATION (e.g. \
                     timelocked:7d)"
                ))
            }
        },
    };
    policy.validate()?;
    Ok(policy)
}

/// Options every `gamechain channel` command takes.
#[derive(Debug, Args)]
pub struct ChannelArgs {
    /// The node.
    #[command(flatten)]
    pub node: NodeUrl,
    /// The player's key file (sends the transactions; its address is the player).
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// The move store: one JSON file per game.
    #[arg(long, value_name = "DIR", default_value = "gamechain-channels")]
    pub dir: PathBuf,
    /// The channel module's id.
    #[arg(long, value_name = "ID", default_value = "channel")]
    pub channel: String,
    /// The move board module's id.
    #[arg(long, value_name = "ID", default_value = "moveboard")]
    pub board: String,
    /// Seconds to wait for each transaction's receipt.
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    pub timeout: u64,
}

/// `gamechain channel …`.
#[derive(Debug, Subcommand)]
pub enum ChannelCommand {
    /// Offer a game: escrow the stake and wait for a join; prints the offer (= game) id.
    Offer {
        /// Common options.
        #[command(flatten)]
        common: ChannelArgs,
        /// The rules module id (e.g. ttt_rules): the code it runs now is fetched, checked
        /// locally and pinned for the game. Code that no genesis module runs is refused unless
        /// --rules-code names it too.
        #[arg(long, value_name = "ID", required_unless_present = "rules_code")]
        rules: Option<String>,
        /// The rules by code hash (64 hex): that code is fetched, checked and pinned. Naming
        /// the hash accepts code that no genesis module runs (rules outside the genesis may
        /// trap when their author loses: read them first); with --rules, the module must run
        /// that code.
        #[arg(long, value_name = "HASH")]
        rules_code: Option<String>,
        /// Stake per player, GOLD base units (0: an unstaked game, a result without payout).
        #[arg(long)]
        stake: Amount,
        /// Response window in block time: a number and a unit (ms, s, m, h, d), 5m to 3d.
        #[arg(long, value_name = "DURATION", default_value = "1h",
              value_parser = gamechain_player::time::parse_duration_ms,
              conflicts_with = "window_ms")]
        window: u64,
        /// Response window in milliseconds of block time (300000-259200000).
        #[arg(long, value_name = "MS")]
        window_ms: Option<u64>,
        /// A separate key file whose signatures count for our moves (default: --key).
        #[arg(long, value_name = "FILE")]
        game_key: Option<PathBuf>,
        /// Escrow the stake even when the channel module's owner can change its code at once
        /// (policy `owner`); without it such an offer is refused before anything is sent.
        #[arg(long)]
        allow_mutable: bool,
    },
    /// Join an open offer: escrow the same stake; the game opens.
    Join {
        /// Common options.
        #[command(flatten)]
        common: ChannelArgs,
        /// The offer id.
        offer: String,
        /// A separate key file whose signatures count for our moves (default: --key).
        #[arg(long, value_name = "FILE")]
        game_key: Option<PathBuf>,
        /// Escrow the stake even when the channel module's owner can change its code at once
        /// (policy `owner`); without it such a join is refused before anything is sent.
        #[arg(long)]
        allow_mutable: bool,
        /// Accept rules code the offer pins that no genesis module runs: this exact code hash,
        /// 64 hex (rules outside the genesis may trap when their author loses: read them
        /// first). Without it such a join is refused before anything is sent.
        #[arg(long, value_name = "HASH")]
        rules_code: Option<String>,
    },
    /// Make a move: sign it over the current state, store it, post it to the board. A move
    /// already signed for this position is re-sent; a different one is refused.
    Move {
        /// Common options.
        #[command(flatten)]
        common: ChannelArgs,
        /// The game id.
        game: String,
        /// The move data, hex (tic-tac-toe: the cell, 00-08).
        data: String,
        /// Sign and store only (send it later with the same `move`, or by other means).
        #[arg(long)]
        no_post: bool,
        /// Post it to the move board without trying the node's relay first (by default the
        /// move goes through the relay, straight to the opponent's client when it is
        /// connected, e.g. running `channel watch`, and to the board only when it is not).
        #[arg(long)]
        no_relay: bool,
        /// The game key file, when not the one given at offer/join.
        #[arg(long, value_name = "FILE")]
        game_key: Option<PathBuf>,
    },
    /// Read the board: check and store the moves received; print what was refused.
    Sync {
        /// Common options.
        #[command(flatten)]
        common: ChannelArgs,
        /// The game id.
        game: String,
        /// Read from this block height (default: where the last read stopped).
        #[arg(long, value_name = "HEIGHT")]
        from: Option<u64>,
    },
    /// The watchtower: follow the chain's block feed, answer a challenge due on our seat with
    /// the held moves, prove the opponent's equivocation, retry through rate limits and node
    /// restarts; stop when the result is final. Keep it running from the join until then.
    Watch {
        /// Common options.
        #[command(flatten)]
        common: ChannelArgs,
        /// The game id.
        game: String,
        /// Milliseconds without a block after which something pending (a challenge we could
        /// not answer yet, an action that failed) is tried again. Blocks come over the node's
        /// block feed as they are made.
        #[arg(long, value_name = "MS", default_value_t = 1000)]
        poll_ms: u64,
        /// Stop after this many seconds even if the game goes on (0: never).
        #[arg(long, value_name = "SECS", default_value_t = 0)]
        stop_after: u64,
    },
    /// Settle by history: the held moves, which must end the game.
    Settle {
        /// Common options.
        #[command(flatten)]
        common: ChannelArgs,
        /// The game id.
        game: String,
    },
    /// Challenge the opponent to make the move they owe (the held moves as history).
    Challenge {
        /// Common options.
        #[command(flatten)]
        common: ChannelArgs,
        /// The game id.
        game: String,
    },
    /// Answer the open challenge with the held moves.
    Respond {
        /// Common options.
        #[command(flatten)]
        common: ChannelArgs,
        /// The game id.
        game: String,
    },
    /// Claim the forfeit of a player who did not answer a challenge in time.
    Forfeit {
        /// Common options.
        #[command(flatten)]
        common: ChannelArgs,
        /// The game id.
        game: String,
    },
    /// Prove the opponent signed two moves for one position (from the store): they lose.
    Prove {
        /// Common options.
        #[command(flatten)]
        common: ChannelArgs,
        /// The game id.
        game: String,
    },
    /// Pay out a final game's stakes.
    Withdraw {
        /// Common options.
        #[command(flatten)]
        common: ChannelArgs,
        /// The game id.
        game: String,
    },
    /// Cancel our open offer (the stake comes back at once).
    Cancel {
        /// Common options.
        #[command(flatten)]
        common: ChannelArgs,
        /// The offer id.
        offer: String,
    },
    /// Show a game: moves held, state, whose turn, and its status on chain.
    Show {
        /// Common options.
        #[command(flatten)]
        common: ChannelArgs,
        /// The game id.
        game: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn client_commands_parse() {
        let cli = Cli::try_parse_from([
            "gamechain",
            "view",
            "tictactoe",
            "open=1",
            "--node",
            "http://127.0.0.1:1",
        ])
        .unwrap();
        match cli.command {
            Command::View {
                node,
                module,
                query,
                prove,
                genesis,
            } => {
                assert_eq!(
                    (node.url.as_str(), module.as_str()),
                    ("http://127.0.0.1:1", "tictactoe")
                );
                assert_eq!(query, [("open".to_string(), "1".to_string())]);
                assert!(!prove && genesis.is_none());
            }
            other => panic!("{other:?}"),
        }
        // `--genesis` pins the chain of a proven view, and only of one.
        let cli = Cli::try_parse_from([
            "gamechain",
            "view",
            "tictactoe",
            "id=7",
            "--prove",
            "--genesis",
            "g.json",
        ])
        .unwrap();
        assert!(matches!(
            cli.command,
            Command::View { prove: true, genesis: Some(g), .. } if g == std::path::Path::new("g.json")
        ));
        assert!(
            Cli::try_parse_from(["gamechain", "view", "tictactoe", "--genesis", "g.json"]).is_err()
        );
        let cli = Cli::try_parse_from([
            "gamechain",
            "transfer",
            "--key",
            "a.wif",
            "--to",
            "xyz",
            "--amount",
            "250",
        ])
        .unwrap();
        assert!(matches!(
            cli.command,
            Command::Transfer {
                amount: Amount(250),
                ..
            }
        ));
        assert!(Cli::try_parse_from([
            "gamechain",
            "transfer",
            "--key",
            "a",
            "--to",
            "x",
            "--amount",
            "1.5"
        ])
        .is_err());
        let cli = Cli::try_parse_from(["gamechain", "block"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Block {
                which: BlockRef::Latest,
                ..
            }
        ));
        let cli = Cli::try_parse_from(["gamechain", "block", "7"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Block {
                which: BlockRef::Height(7),
                ..
            }
        ));
        // A bare key is the API's bare `?open`: the key with an empty value.
        match Cli::try_parse_from(["gamechain", "view", "tictactoe", "open"])
            .unwrap()
            .command
        {
            Command::View { query, .. } => assert_eq!(query, [("open".to_string(), String::new())]),
            other => panic!("{other:?}"),
        }
        assert!(Cli::try_parse_from(["gamechain", "view", "tictactoe", "=1"]).is_err());
    }

    #[test]
    fn session_commands_parse_gold_and_durations() {
        let cli = Cli::try_parse_from([
            "gamechain",
            "session",
            "authorize",
            "--key",
            "a.wif",
            "--modules",
            "tictactoe,mnk",
            "--expires-in",
            "1h",
            "--cap",
            "10.00",
        ])
        .unwrap();
        match cli.command {
            Command::Session(SessionCommand::Authorize {
                modules,
                expires_in,
                cap,
                out,
                ..
            }) => {
                assert_eq!(modules, ["tictactoe", "mnk"]);
                assert_eq!((expires_in, cap, out), (3_600_000, 1000, None));
            }
            other => panic!("{other:?}"),
        }
        for (text, want) in [("10", 1000), ("10.5", 1050), ("0.01", 1), ("0", 0)] {
            assert_eq!(parse_gold(text), Ok(want), "{text}");
        }
        for bad in ["", ".5", "1.", "1.234", "-1", "1e3", "ten"] {
            assert!(parse_gold(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn actions_are_checked_before_signing() {
        assert!(matches!(
            parse_action(r#"{"type":"faucet","token":"GOLD"}"#),
            Ok(Action::Faucet { .. })
        ));
        assert!(parse_action(r#"{"type":"mint"}"#)
            .unwrap_err()
            .contains("unknown action type"));
        assert!(parse_action("nope").is_err());
        match parse_game_action("tictactoe", r#"{"kind": "move", "cell": 0}"#).unwrap() {
            Action::Game { game, op } => assert_eq!(
                (game.as_str(), op.get()),
                ("tictactoe", r#"{"kind": "move", "cell": 0}"#)
            ),
            other => panic!("{other:?}"),
        }
        assert!(parse_game_action("tictactoe", "[1]").is_err());
        assert!(parse_game_action("tictactoe", "{").is_err());
        assert_eq!(
            parse_query_pair("id=a=b").unwrap(),
            ("id".to_string(), "a=b".to_string())
        );
        assert!(parse_query_pair("=1").is_err());
        assert!(parse_query_pair("").is_err());
        assert_eq!(
            parse_query_pair("open").unwrap(),
            ("open".to_string(), String::new())
        );
    }

    #[test]
    fn channel_commands_parse_with_their_defaults() {
        let cli = Cli::try_parse_from([
            "gamechain",
            "channel",
            "move",
            "0000000000000001",
            "04",
            "--key",
            "a.wif",
            "--no-post",
        ])
        .unwrap();
        match cli.command {
            Command::Channel(ChannelCommand::Move {
                common,
                game,
                data,
                no_post,
                no_relay,
                game_key,
            }) => {
                assert!(!no_relay);
                assert_eq!(
                    (game.as_str(), data.as_str(), no_post),
                    ("0000000000000001", "04", true)
                );
                assert_eq!(game_key, None);
                assert_eq!(common.key, Some(PathBuf::from("a.wif")));
                assert_eq!(common.dir, PathBuf::from("gamechain-channels"));
                assert_eq!(
                    (common.channel.as_str(), common.board.as_str()),
                    ("channel", "moveboard")
                );
            }
            other => panic!("{other:?}"),
        }
        let cli = Cli::try_parse_from([
            "gamechain",
            "channel",
            "offer",
            "--rules",
            "ttt_rules",
            "--stake",
            "100",
        ])
        .unwrap();
        assert!(matches!(
            cli.command,
            Command::Channel(ChannelCommand::Offer {
                window: 3_600_000,
                window_ms: None,
                stake: Amount(100),
                ..
            })
        ));
        assert!(Cli::try_parse_from(["gamechain", "channel", "offer", "--stake", "1"]).is_err());
        let offer = |extra: &[&str]| {
            let mut args = vec!["gamechain", "channel", "offer", "--stake", "0"];
            args.extend_from_slice(extra);
            Cli::try_parse_from(args)
        };
        let by_hash = offer(&["--rules-code", "ab", "--window", "10m"]).unwrap();
        assert!(matches!(
            by_hash.command,
            Command::Channel(ChannelCommand::Offer {
                window: 600_000,
                rules: None,
                rules_code: Some(_),
                ..
            })
        ));
        let in_ms = offer(&["--rules", "r", "--window-ms", "300000"]).unwrap();
        assert!(matches!(
            in_ms.command,
            Command::Channel(ChannelCommand::Offer {
                window_ms: Some(300_000),
                ..
            })
        ));
        // A window without a unit (it used to be blocks), both windows: refused. A module and
        // the code hash it must run: taken.
        assert!(offer(&["--rules", "r", "--window", "20"]).is_err());
        assert!(offer(&["--rules", "r", "--window", "5m", "--window-ms", "1"]).is_err());
        let both = offer(&["--rules", "r", "--rules-code", "ab"]).unwrap();
        assert!(matches!(
            both.command,
            Command::Channel(ChannelCommand::Offer {
                rules: Some(_),
                rules_code: Some(_),
                ..
            })
        ));
    }

    #[test]
    fn policies_parse_from_the_command_line() {
        assert_eq!(parse_policy("owner"), Ok(UpgradePolicy::Owner));
        assert_eq!(parse_policy("immutable"), Ok(UpgradePolicy::Immutable));
        assert_eq!(
            parse_policy("timelocked:7d"),
            Ok(UpgradePolicy::Timelocked {
                delay_ms: 604_800_000
            })
        );
        assert!(parse_policy("timelocked:0ms")
            .unwrap_err()
            .contains("delay_ms"));
        assert!(parse_policy("timelocked:366d").is_err());
        assert!(parse_policy("timelocked")
            .unwrap_err()
            .contains("not a policy"));
        let cli = Cli::try_parse_from([
            "gamechain",
            "module",
            "deploy",
            "x.wasm",
            "--id",
            "x",
            "--key",
            "k",
            "--policy",
            "timelocked:1h",
        ])
        .unwrap();
        assert!(matches!(
            cli.command,
            Command::Module(ModuleCommand::Deploy {
                policy: Some(UpgradePolicy::Timelocked {
                    delay_ms: 3_600_000
                }),
                ..
            })
        ));
        let cli = Cli::try_parse_from(["gamechain", "game", "t", "{}", "--key", "k"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Game {
                allow_mutable: false,
                ..
            }
        ));
    }

    #[test]
    fn codegen_takes_exactly_one_schema_source() {
        let parse = |args: &[&str]| {
            let mut all = vec!["gamechain", "module", "codegen", "--ts", "out.ts"];
            all.extend(args);
            Cli::try_parse_from(all)
        };
        let cli = parse(&["--schema", "s.json"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Module(ModuleCommand::Codegen {
                schema: Some(_),
                wasm: None,
                module: None,
                ..
            })
        ));
        assert!(parse(&["--module", "tictactoe", "--node", "http://x"]).is_ok());
        assert!(parse(&["--wasm", "m.wasm"]).is_ok());
        assert!(parse(&[]).is_err(), "a source is required");
        assert!(
            parse(&["--schema", "s.json", "--wasm", "m.wasm"]).is_err(),
            "only one"
        );
    }

    /// `--node` has a default (and `GAMECHAIN_NODE`): no usage line may show it as required.
    #[test]
    fn no_usage_line_shows_node_as_required() {
        use clap::CommandFactory;
        fn check(command: &mut clap::Command, path: &str) {
            let usage = command.render_usage().to_string();
            assert!(!usage.contains(" --node <URL>"), "{path}: {usage}");
            for sub in command.get_subcommands_mut() {
                let path = format!("{path} {}", sub.get_name());
                check(sub, &path);
            }
        }
        let mut cli = Cli::command();
        cli.build();
        check(&mut cli, "gamechain");
    }
}

/// What `module new --template` starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Template {
    /// A per-account tally (ops `add`, `reset`): the smallest complete module.
    #[default]
    Counter,
    /// A staked two-player table: `create`, `join`, `cancel`, a placeholder `move`,
    /// `claim_timeout` by block time, GOLD escrow and payouts.
    Table,
}
