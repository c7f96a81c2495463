//! `gamechain session …`: session keys from the command line (`docs/session-keys.md`).
//! `authorize` makes a new session key, authorizes it with the main key file in one transaction
//! and writes a session file (`gamechain_client::Session`, JSON, mode 0600); `game` plays one op
//! with a session file; `list` and `revoke` do what they say. Output is JSON on stdout, as every
//! client command.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use gamechain_chain::key_file::read_key_file;
use gamechain_client::client::BlockRef;
use gamechain_client::Session;
use gamechain_runtime::chain::SecretKey;
use serde_json::json;

use crate::cli::error::CliError;
use crate::cli::escrow_guard::{check_escrow, op_stake};
use crate::cli::submit::{client, print, report};
use crate::cli::SessionCommand;

/// Runs one `session` subcommand, printing to `out`.
pub async fn run(command: SessionCommand, out: &mut dyn Write) -> Result<(), CliError> {
    match command {
        SessionCommand::Authorize {
            node,
            tx,
            mut modules,
            expires_in,
            cap,
            out: path,
        } => {
            modules.sort();
            modules.dedup();
            let main = read_key_file(&tx.key).map_err(CliError::Usage)?;
            let client = client(&node.url)?;
            let head = client.block(BlockRef::Latest).await?;
            let expires_at_ms = head.header.header.time_ms.saturating_add(expires_in);
            let key = SecretKey::generate(main.network());
            let address = key.address();
            let path = path.unwrap_or_else(|| PathBuf::from(format!("{address}.session")));
            // The file is made with create_new after posting: refuse a path in use before
            // signing anything, so a session is never authorized with its key unsaved.
            if path.exists() {
                return Err(CliError::Usage(format!(
                    "{} already exists: the session file is never overwritten; choose another --out",
                    path.display()
                )));
            }
            let (txid, session) = client
                .authorize_session(&main, key, &modules, expires_at_ms, cap)
                .await?;
            // Written before waiting: the key must not be lost if the wait is interrupted.
            session.write_file(&path).map_err(CliError::Usage)?;
            eprintln!("session written to {} (mode 0600)", path.display());
            if !tx.no_wait {
                let included = client
                    .wait_for_receipt(&txid, Duration::from_secs(tx.timeout))
                    .await?;
                if !included.receipt.ok {
                    return Err(CliError::TxFailed(
                        included.receipt.error.unwrap_or_default(),
                    ));
                }
            }
            print(
                out,
                &json!({
                    "key": address,
                    "account": session.account,
                    "session": session.id,
                    "modules": modules,
                    "expires_at_ms": expires_at_ms,
                    "cap": cap.to_string(),
                    "file": path.display().to_string(),
                    "txid": txid,
                }),
            )
        }
        SessionCommand::Revoke {
            node,
            tx,
            key_address,
        } => {
            let main = read_key_file(&tx.key).map_err(CliError::Usage)?;
            let client = client(&node.url)?;
            let txid = client.revoke_session(&main, &key_address).await?;
            report(&client, &txid, tx.no_wait, tx.timeout, out).await
        }
        SessionCommand::List { node, account } => {
            print(out, &client(&node.url)?.sessions(&account).await?)
        }
        SessionCommand::Game {
            node,
            session,
            no_wait,
            timeout,
            module,
            op,
            allow_mutable,
        } => {
            let session = Session::read_file(&session).map_err(CliError::Usage)?;
            let value: serde_json::Value = serde_json::from_str(&op)
                .map_err(|e| CliError::Usage(format!("op is not JSON: {e}")))?;
            if !value.is_object() {
                return Err(CliError::Usage(
                    "op must be a JSON object, e.g. {\"kind\":\"create\"}".into(),
                ));
            }
            let client = client(&node.url)?;
            if !allow_mutable {
                let stake = op_stake(&client, &module, &value).await?;
                check_escrow(&client, &module, stake, allow_mutable).await?;
            }
            let txid = client.send_session(&session, &module, &value).await?;
            report(&client, &txid, no_wait, timeout, out).await
        }
    }
}
