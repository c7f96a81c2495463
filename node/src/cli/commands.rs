//! Runs the client commands of the `gamechain` CLI (`key`, `send`, `faucet`, `transfer`,
//! `game`, `seal`, `account`, `tx`, `block`, `view`, `status`): data goes to stdout as pretty JSON,
//! failures come back as a [`CliError`] whose one line `main` prints to stderr.

use std::io::Write;
use std::path::PathBuf;

use gamechain_runtime::chain::{Action, Network, SecretKey};
use serde_json::json;

pub use crate::cli::error::{CliError, EXIT_TX_FAILED};
use crate::cli::escrow_guard::{check_escrow, op_stake};
use crate::cli::submit::{client, print, send};
use crate::cli::{parse_action, parse_game_action, Command, KeyCommand};
use gamechain_chain::key_file::{read_key_file, write_key_file};

/// Runs one client command (every [`Command`] but `node`, `demo`, `verify`, `export` and
/// `module`), printing its data to
/// `out`. Errors: see [`CliError`].
pub async fn run_client_command(command: Command, out: &mut dyn Write) -> Result<(), CliError> {
    match command {
        Command::Key(KeyCommand::New { out: path }) => key_new(path, out),
        Command::Key(KeyCommand::Show { key, json }) => key_show(&key, json, out),
        Command::Session(command) => crate::cli::session::run(command, out).await,
        Command::Send { node, tx, action } => {
            send(
                &node.url,
                &tx,
                parse_action(&action).map_err(CliError::Usage)?,
                out,
            )
            .await
        }
        Command::Faucet { node, tx } => {
            send(
                &node.url,
                &tx,
                Action::Faucet {
                    token: "GOLD".into(),
                },
                out,
            )
            .await
        }
        Command::Transfer {
            node,
            tx,
            to,
            amount,
        } => {
            send(
                &node.url,
                &tx,
                Action::Transfer {
                    to,
                    token: "GOLD".into(),
                    amount,
                },
                out,
            )
            .await
        }
        Command::Game {
            node,
            tx,
            module,
            op,
            allow_mutable,
        } => {
            let action = parse_game_action(&module, &op).map_err(CliError::Usage)?;
            if !allow_mutable {
                let value: serde_json::Value =
                    serde_json::from_str(&op).map_err(|e| CliError::Usage(e.to_string()))?;
                let client = client(&node.url)?;
                let stake = op_stake(&client, &module, &value).await?;
                check_escrow(&client, &module, stake, allow_mutable).await?;
            }
            send(&node.url, &tx, action, out).await
        }
        Command::Seal {
            node,
            tx,
            module,
            tag,
            round,
            plaintext,
            byte,
            u64,
            op,
        } => {
            let plaintext = gamechain_client::plaintext_from(plaintext.as_deref(), byte, u64)
                .map_err(CliError::Usage)?;
            let key = read_key_file(&tx.key).map_err(CliError::Usage)?;
            let client = client(&node.url)?;
            // A move must land in a block before its round (the round's block opens and settles
            // first): refuse what would arrive too late rather than send a move that is void.
            let head = client.status().await?.height;
            if round < head + 2 {
                return Err(CliError::Usage(format!(
                    "round {round} is too close: the chain is at height {head}, and a sealed move must land in a block before its round (seal at least two blocks ahead)"
                )));
            }
            let sealed = client
                .seal_move(&module, &key.address(), tag.as_bytes(), round, &plaintext)
                .await?;
            let Some(op) = op else {
                return print(out, &json!({ "sealed": sealed }));
            };
            let mut value: serde_json::Value =
                serde_json::from_str(&op).map_err(|e| CliError::Usage(format!("--op: {e}")))?;
            let Some(fields) = value.as_object_mut() else {
                return Err(CliError::Usage("--op must be a JSON object".into()));
            };
            fields.insert("sealed".into(), json!(sealed));
            let action = parse_game_action(&module, &value.to_string()).map_err(CliError::Usage)?;
            send(&node.url, &tx, action, out).await
        }
        Command::Account { node, account } => {
            print(out, &client(&node.url)?.account(&account).await?)
        }
        Command::Tx { node, txid } => print(out, &client(&node.url)?.tx(&txid).await?),
        Command::Block { node, which } => print(out, &client(&node.url)?.block(which).await?),
        Command::View {
            node,
            module,
            query,
            prove: true,
            genesis,
        } => {
            crate::cli::verify::view_proven::run(
                &node.url,
                &module,
                &query,
                genesis.as_deref(),
                out,
            )
            .await
        }
        Command::View {
            node,
            module,
            query,
            ..
        } => {
            let pairs: Vec<(&str, &str)> = query
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            print(out, &client(&node.url)?.view(&module, &pairs).await?)
        }
        Command::Status {
            net: Some(dir),
            json,
            ..
        } => crate::cli::net_status::run(&dir, json, out).await,
        Command::Status { node, .. } => print(out, &client(&node.url)?.status().await?),
        Command::Channel(command) => crate::cli::channel::run(command, out).await,
        Command::Node(_)
        | Command::Demo(_)
        | Command::Verify(_)
        | Command::Export(_)
        | Command::Bench(_)
        | Command::Testnet(_)
        | Command::Dev(_)
        | Command::TierUpCompile { .. }
        | Command::Module(_) => Err(CliError::Usage("not a client command".into())),
    }
}

/// `key new`: a testnet key to a new 0600 file (default `./<address>.wif`); prints the address.
fn key_new(path: Option<PathBuf>, out: &mut dyn Write) -> Result<(), CliError> {
    let key = SecretKey::generate(Network::Testnet);
    let address = key.address();
    let path = path.unwrap_or_else(|| PathBuf::from(format!("{address}.wif")));
    write_key_file(&path, &key).map_err(CliError::Usage)?;
    eprintln!("key written to {} (mode 0600)", path.display());
    writeln!(out, "{address}").map_err(|e| CliError::Usage(format!("cannot write the output: {e}")))
}

/// `key show`: the address of the key in `path` (a WIF line, as `key new` writes it), alone on a
/// line, or with `json` the object `{"address", "network": "testnet" | "mainnet", "public_key":
/// <66 lowercase hex: the compressed secp256k1 key>}`. The secret is never printed. Errors: the
/// file's (missing, unreadable, not a WIF), as [`CliError::Usage`] (exit 1).
fn key_show(path: &std::path::Path, json: bool, out: &mut dyn Write) -> Result<(), CliError> {
    let key = read_key_file(path).map_err(CliError::Usage)?;
    let address = key.address();
    if !json {
        return writeln!(out, "{address}")
            .map_err(|e| CliError::Usage(format!("cannot write the output: {e}")));
    }
    let network = match key.network() {
        Network::Mainnet => "mainnet",
        Network::Testnet => "testnet",
    };
    print(
        out,
        &json!({
            "address": address,
            "network": network,
            "public_key": hex::encode(key.public_key().serialize()),
        }),
    )
}
