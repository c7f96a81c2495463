//! `gamechain node --restore-from URL`: bringing a sequencer's database back up to its sign
//! state (`sign_state.rs`) after it lost blocks it had signed and published (a damaged or
//! deleted write-ahead log, a directory restored from a backup).
//!
//! The blocks above the local head up to the signed height are fetched from `URL` (a follower,
//! or any node of the chain, over `GET /v1/blocks/<height>`), each verified exactly as a
//! follower verifies it ([`verify_block`] on the local head's state, which checks the
//! signature by the genesis sequencer too), and committed with the one commit path
//! ([`Storage::commit_block`], then the in-memory head). The block at the signed height must
//! be the signed block itself (same hash). Any failure commits nothing more; the node then
//! refuses to start ([`restore_opened`], through `sign_state::confirm_restored`).

use gamechain_client::client::{BlockRef, Client};
use gamechain_runtime::ChainContext;

use crate::verify::replay::{check_block, verify_block};
use gamechain_ledger::chain::Head;
use gamechain_ledger::genesis_setup::OpenedChain;
use gamechain_ledger::sign_state::{confirm_restored, SignState};
use gamechain_ledger::storage::Storage;
use gamechain_ledger::NodeError;

/// Runs `fut` to completion from blocking code: on the current runtime's handle when there is
/// one (the caller is on a blocking thread), else on a small runtime of its own.
fn block_on<F: std::future::Future>(fut: F) -> Result<F::Output, String> {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => Ok(handle.block_on(fut)),
        Err(_) => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start an async runtime: {e}"))
            .map(|rt| rt.block_on(fut)),
    }
}

/// Brings `opened` up to its sign state from the node at `url` when it is behind
/// ([`OpenedChain::behind`]; nothing to do otherwise). Blocking. Errors: the
/// [`NodeError::Refused`] of a restore that failed or did not end at the signed block.
pub fn restore_opened(opened: &mut OpenedChain, url: &str) -> Result<(), NodeError> {
    let Some(signed) = opened.behind.take() else {
        return Ok(());
    };
    let failed = restore(
        &opened.ctx,
        &mut opened.storage,
        &mut opened.head,
        url,
        &signed,
    )
    .err();
    let head = &opened.head.header.header;
    confirm_restored(
        &mut opened.sign_state,
        head.height,
        &head.hash_hex(),
        &signed,
        failed,
    )
}

/// Fetches, verifies and commits blocks `head + 1 ..= signed.height` from the node at `url`,
/// moving `head` along (blocking). Errors: the node cannot be reached or lacks a block, a
/// block does not verify, the block at the signed height is not the signed one, or the
/// database refused a block; blocks committed before the failure stay committed (each one
/// verified).
pub fn restore(
    ctx: &ChainContext,
    storage: &mut Storage,
    head: &mut Head,
    url: &str,
    signed: &SignState,
) -> Result<(), String> {
    let client = Client::new(url).map_err(|e| format!("{url}: {e}"))?;
    let from = head.header.header.height + 1;
    tracing::info!(
        url,
        from,
        to = signed.height,
        "restoring the blocks the database lost"
    );
    for height in from..=signed.height {
        let block = block_on(client.block(BlockRef::Height(height)))?
            .map_err(|e| format!("block {height} from {url}: {e}"))?;
        if block.height() != height {
            return Err(format!(
                "{url} answered block {} when asked for block {height}",
                block.height()
            ));
        }
        let hash = commit_verified(ctx, storage, head, block)
            .map_err(|e| format!("block {height} from {url}: {e}"))?;
        if height == signed.height && hash != signed.hash {
            return Err(format!(
                "{url}'s block {height} has hash {hash}, not the signed {}",
                signed.hash
            ));
        }
        tracing::info!(height, %hash, "restored block verified and committed");
    }
    Ok(())
}

/// Verifies `block` on `head` exactly as a follower does ([`verify_block`], which checks the
/// sequencer's signature too) and commits it (storage, then `head`). Returns its hash. Errors:
/// it does not verify, or the database refused it.
fn commit_verified(
    ctx: &ChainContext,
    storage: &mut Storage,
    head: &mut Head,
    block: gamechain_chain::wire::Block,
) -> Result<String, String> {
    let checked = check_block(ctx, block, ctx.verify_threads());
    let out = verify_block(
        ctx,
        &head.state,
        &head.state_hash,
        &head.header.header,
        &checked,
    )
    .map_err(|e| format!("does not verify: {e}"))?;
    let block = &checked.block;
    let senders: Vec<(&str, u64)> = checked
        .checks
        .iter()
        .filter_map(|c| c.as_ref().ok())
        .map(|body| (body.account(), body.nonce))
        .collect();
    storage
        .commit_block(
            block,
            &senders,
            &out.writes,
            &out.state_hash,
            &out.start_witnesses,
        )
        .map_err(|e| format!("committing it: {e}"))?;
    head.state.apply(out.writes);
    head.header = block.header.clone();
    head.state_hash = out.state_hash;
    Ok(block.hash_hex())
}

/// Commits the signed block the sequencer recorded in its sign state but had not committed
/// when it stopped ([`OpenedChain::unfinished`]; nothing to do otherwise): verified on the head
/// like any block, so the chain goes on with that very block and nothing new is signed at its
/// height. Blocking. Errors: the block does not verify or cannot be committed
/// ([`NodeError::Refused`]).
pub fn finish_unfinished(opened: &mut OpenedChain) -> Result<(), NodeError> {
    let Some(block) = opened.unfinished.take() else {
        return Ok(());
    };
    let height = block.height();
    commit_verified(&opened.ctx, &mut opened.storage, &mut opened.head, block).map_err(|e| {
        NodeError::Refused(format!(
            "the signed block {height} recorded in {} but not committed before the node stopped: {e}",
            opened.sign_state.path().display()
        ))
    })?;
    tracing::warn!(
        height,
        "committed the signed block the sequencer had recorded but not committed when it stopped"
    );
    Ok(())
}
