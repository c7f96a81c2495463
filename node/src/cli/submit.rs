//! Sending one transaction from the CLI and printing what came back: [`send`] signs an action
//! with a key file's key and posts it, [`report`] waits for its receipt and prints it as JSON,
//! [`print`] writes any API value as pretty JSON, [`client`] makes the node's client. Shared
//! by the client commands, `session` and `module`.

use std::io::Write;
use std::time::Duration;

use gamechain_chain::key_file::read_key_file;
use gamechain_client::client::{Client, Included};
use gamechain_runtime::chain::{Action, Event};
use serde::Serialize;
use serde_json::json;

use crate::cli::error::CliError;
use crate::cli::TxArgs;

/// The client of the node at `url`. Errors: a URL the client refuses ([`CliError`]).
pub(crate) fn client(url: &str) -> Result<Client, CliError> {
    Ok(Client::new(url)?)
}

/// Writes `value` to `out` as pretty JSON and a newline. Errors: `out` refuses the write.
pub(crate) fn print<T: Serialize>(out: &mut dyn Write, value: &T) -> Result<(), CliError> {
    let text = serde_json::to_string_pretty(value).expect("API values always serialise");
    writeln!(out, "{text}").map_err(|e| CliError::Usage(format!("cannot write the output: {e}")))
}

/// Signs `action` with the key file's key at its next nonce, posts it and (unless `--no-wait`)
/// waits for the receipt; prints `{"txid"}` or `{"txid", "height", "index", "ok", "error",
/// "events", "fuel_used"}` (and `"fee"` on a chain with fees). A receipt with `ok: false` is printed, then is a
/// [`CliError::TxFailed`].
pub(crate) async fn send(
    url: &str,
    args: &TxArgs,
    action: Action,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let key = read_key_file(&args.key).map_err(CliError::Usage)?;
    let client = client(url)?;
    let txid = client.send(&key, action).await?;
    report(&client, &txid, args.no_wait, args.timeout, out).await
}

/// Prints `{"txid"}` when `no_wait`, else waits up to `timeout` s for the receipt and prints it
/// as [`send`] does (a failed receipt is then a [`CliError::TxFailed`]).
pub(crate) async fn report(
    client: &Client,
    txid: &str,
    no_wait: bool,
    timeout: u64,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    if no_wait {
        return print(out, &json!({ "txid": txid }));
    }
    let included = client
        .wait_for_receipt(txid, Duration::from_secs(timeout))
        .await?;
    print(out, &receipt_json(&included))?;
    match included.receipt {
        r if r.ok => Ok(()),
        r => Err(CliError::TxFailed(r.error.unwrap_or_default())),
    }
}

/// The printed form of an included transaction (fields in this order).
#[derive(Serialize)]
struct SentTx<'a> {
    txid: &'a str,
    height: u64,
    index: u64,
    ok: bool,
    error: &'a Option<String>,
    events: &'a [Event],
    fuel_used: u64,
    /// Only on a chain with fees (absent when 0, as in the API).
    #[serde(skip_serializing_if = "Option::is_none")]
    fee: Option<String>,
}

fn receipt_json(included: &Included) -> SentTx<'_> {
    let r = &included.receipt;
    SentTx {
        txid: &included.txid,
        height: included.height,
        index: included.index,
        ok: r.ok,
        error: &r.error,
        events: &r.events,
        fuel_used: r.fuel_used,
        fee: (r.fee.0 != 0).then(|| r.fee.0.to_string()),
    }
}
