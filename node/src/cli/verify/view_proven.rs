//! `gamechain view <module> <query…> --prove [--genesis FILE]`: a view read with its proof and
//! checked from the genesis alone (`verify/view.rs`): each entry it read proven against the
//! block's state root, the block's signer (and on a chain with validators its finality by a
//! quorum of the genesis set), the code the module's record names, and the view re-executed
//! over the proven reads. Prints `{"proven": {"height", "block_hash", "reads", "final_at"?},
//! "value": …}` (or `"error": "<the view's error>"`, proven as well); anything that does not
//! check is `not proven: <why>` and exit code 1.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use gamechain_client::Client;
use gamechain_runtime::chain::Genesis;
use serde_json::json;

use crate::cli::error::CliError;
use crate::cli::submit::print;
use crate::verify::source::fetch_genesis;
use crate::verify::view::verify_view;

/// Largest genesis file read, bytes.
const MAX_GENESIS_READ: u64 = 1 << 20;

/// Runs `view --prove` against `node` (module docs); `genesis`: a file pinning the chain,
/// else the node's `GET /v1/genesis` (which proves the answer consistent with that node's
/// chain, not that it is the chain you meant).
pub async fn run(
    node: &str,
    module: &str,
    query: &[(String, String)],
    genesis: Option<&Path>,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let client = Client::new(node)?;
    let genesis = match genesis {
        Some(path) => read_genesis(path)?,
        None => fetch_genesis(&client)
            .await
            .map_err(|e| CliError::Usage(e.to_string()))?,
    };
    let pairs: Vec<(&str, &str)> = query
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let (proof, wasm) = client.view_proof(module, &pairs, &genesis).await?;
    let asked: BTreeMap<String, String> = query.iter().cloned().collect();
    let module = module.to_string();
    let verified =
        tokio::task::spawn_blocking(move || verify_view(&genesis, &module, &asked, &proof, &wasm))
            .await
            .map_err(|e| CliError::Usage(format!("the check panicked: {e}")))?
            .map_err(|e| CliError::Usage(format!("not proven: {e}")))?;
    let mut proven = json!({
        "height": verified.height,
        "block_hash": verified.block_hash,
        "reads": verified.reads,
    });
    if let Some(h) = verified.final_at {
        proven["final_at"] = json!(h);
    }
    let answer = match verified.answer {
        Ok(value) => json!({"proven": proven, "value": value}),
        Err(error) => json!({"proven": proven, "error": error}),
    };
    print(out, &answer)
}

fn read_genesis(path: &Path) -> Result<Genesis, CliError> {
    let usage = |e: String| CliError::Usage(format!("{}: {e}", path.display()));
    let meta = std::fs::metadata(path).map_err(|e| usage(e.to_string()))?;
    if meta.len() > MAX_GENESIS_READ {
        return Err(usage(format!("more than {MAX_GENESIS_READ} bytes")));
    }
    let text = std::fs::read_to_string(path).map_err(|e| usage(e.to_string()))?;
    Genesis::from_json(&text).map_err(|e| usage(e.to_string()))
}
