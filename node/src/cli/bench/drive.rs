//! Driving a node with signed lanes ([`drive`]): one HTTP connection per lane posting its
//! transactions in order (at a shared fixed rate, or flat out), while one WebSocket subscriber
//! watches the blocks and times each transaction from just before its POST to the arrival of
//! the block that holds it.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gamechain_client::client::{Client, ClientError};
use gamechain_runtime::chain::SignedTx;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// What one drive measured.
#[derive(Debug, Default)]
pub struct Driven {
    /// Posted.
    pub submitted: usize,
    /// Accepted (a txid came back).
    pub accepted: usize,
    /// Refusals by API code (`transport` for connection failures).
    pub refused: BTreeMap<String, usize>,
    /// Accepted and seen in a block.
    pub committed: usize,
    /// Of those, `ok: false`.
    pub failed_receipts: usize,
    /// Accepted, never seen in a block before the wait ran out.
    pub missing: usize,
    /// From the first post to the block holding the last committed transaction.
    pub elapsed: Duration,
    /// From the first post to the last answer to a post.
    pub posting: Duration,
    /// Post → block latency of each committed transaction.
    pub latencies: Vec<Duration>,
    /// The run's transactions in each block that held any, in height order.
    pub block_sizes: Vec<usize>,
}

/// Shared between the lanes and the watcher.
struct Shared {
    /// txid → when its POST started, until it is seen in a block (or refused).
    waiting: Mutex<HashMap<String, Instant>>,
    /// Lanes still posting.
    lanes_left: AtomicUsize,
    /// The next slot of the fixed rate.
    slot: AtomicU64,
}

/// Posts `lanes` to the node at `url` (one connection each) at `rate` tx/s in all (0: flat
/// out), `batch` transactions a request (1: `POST /v1/tx`, more: `POST /v1/txs`), and waits until every accepted transaction is in a block, or `wait` has passed since
/// the last post. `label` names the phase on the progress bar (hidden when `progress` is false).
pub async fn drive(
    url: &str,
    lanes: Vec<Vec<SignedTx>>,
    rate: u64,
    batch: usize,
    wait: Duration,
    label: &str,
    progress: bool,
) -> Result<Driven, String> {
    let client = Client::new(url).map_err(|e| e.to_string())?;
    let mut blocks = client
        .subscribe_blocks()
        .await
        .map_err(|e| format!("cannot subscribe to the node's blocks: {e}"))?;
    let total: usize = lanes.iter().map(Vec::len).sum();
    let bar = if progress {
        let bar = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} committed, {per_sec}")
                .expect("a valid template")
                .progress_chars("=> "),
        );
        bar.set_message(label.to_string());
        bar
    } else {
        ProgressBar::hidden()
    };
    let shared = Arc::new(Shared {
        waiting: Mutex::new(HashMap::with_capacity(total)),
        lanes_left: AtomicUsize::new(lanes.len()),
        slot: AtomicU64::new(0),
    });
    let start = Instant::now();

    let mut tasks = Vec::with_capacity(lanes.len());
    for lane in lanes {
        let shared = shared.clone();
        let url = url.to_string();
        tasks.push(tokio::spawn(async move {
            let result = post_lane(&url, lane, rate, batch, wait, start, &shared).await;
            shared.lanes_left.fetch_sub(1, Ordering::SeqCst);
            result
        }));
    }

    // The watcher: every block's transactions of this run, until none is left waiting.
    let mut out = Driven::default();
    let mut last_commit = start;
    let mut posts_done_at: Option<Instant> = None;
    loop {
        if shared.lanes_left.load(Ordering::SeqCst) == 0 {
            let done_at = *posts_done_at.get_or_insert_with(Instant::now);
            if shared.waiting.lock().expect("not poisoned").is_empty() || done_at.elapsed() > wait {
                break;
            }
        }
        let next = tokio::time::timeout(Duration::from_millis(200), blocks.next()).await;
        let block = match next {
            Err(_) => continue,
            Ok(Ok(Some(block))) => block,
            Ok(Ok(None)) => {
                let (code, reason) = blocks.close_reason().unwrap_or((1006, ""));
                return Err(format!(
                    "the node closed the block subscription ({code} {reason})"
                ));
            }
            Ok(Err(e)) => return Err(format!("the block subscription failed: {e}")),
        };
        let arrived = Instant::now();
        let mut mine = 0;
        {
            let mut waiting = shared.waiting.lock().expect("not poisoned");
            for t in &block.txs {
                if let Some(posted) = waiting.remove(&t.tx.txid()) {
                    mine += 1;
                    out.latencies.push(arrived.duration_since(posted));
                    if !t.receipt.ok {
                        out.failed_receipts += 1;
                    }
                }
            }
        }
        if mine > 0 {
            out.committed += mine;
            out.block_sizes.push(mine);
            last_commit = arrived;
            bar.inc(mine as u64);
        }
    }
    bar.finish_and_clear();
    let mut last_answer = start;
    for task in tasks {
        let lane = task.await.map_err(|e| format!("a lane failed: {e}"))?;
        out.submitted += lane.submitted;
        out.accepted += lane.accepted;
        for (code, n) in lane.refused {
            *out.refused.entry(code).or_default() += n;
        }
        last_answer = last_answer.max(lane.last_answer);
    }
    out.missing = shared.waiting.lock().expect("not poisoned").len();
    out.elapsed = last_commit.duration_since(start);
    out.posting = last_answer.duration_since(start);
    Ok(out)
}

/// What one lane did.
struct Lane {
    submitted: usize,
    accepted: usize,
    refused: BTreeMap<String, usize>,
    last_answer: Instant,
}

async fn post_lane(
    url: &str,
    lane: Vec<SignedTx>,
    rate: u64,
    batch: usize,
    wait: Duration,
    start: Instant,
    shared: &Shared,
) -> Lane {
    // A node that stops answering must not hold the run forever: a post gets `wait` (at least
    // 10 s) and then counts as refused with `timeout`.
    let limit = wait.max(Duration::from_secs(10));
    let mut out = Lane {
        submitted: 0,
        accepted: 0,
        refused: BTreeMap::new(),
        last_answer: start,
    };
    let client = match Client::new(url) {
        Ok(c) => c,
        Err(e) => {
            out.refused.insert(format!("client: {e}"), lane.len());
            return out;
        }
    };
    let code_of = |e: &ClientError| match e {
        ClientError::Api { code, .. } => code.clone(),
        _ => "transport".to_string(),
    };
    for chunk in lane.chunks(batch.max(1)) {
        if rate > 0 {
            let slot = shared.slot.fetch_add(chunk.len() as u64, Ordering::Relaxed);
            let at = start + Duration::from_secs_f64(slot as f64 / rate as f64);
            tokio::time::sleep_until(at.into()).await;
        }
        let txids: Vec<String> = chunk.iter().map(SignedTx::txid).collect();
        {
            let now = Instant::now();
            let mut waiting = shared.waiting.lock().expect("not poisoned");
            for txid in &txids {
                waiting.insert(txid.clone(), now);
            }
        }
        out.submitted += chunk.len();
        let timeout = || vec![Err("timeout".to_string()); chunk.len()];
        let results: Vec<Result<(), String>> = if chunk.len() == 1 {
            match tokio::time::timeout(limit, client.post_tx(&chunk[0])).await {
                Ok(r) => vec![r.map(drop).map_err(|e| code_of(&e))],
                Err(_) => timeout(),
            }
        } else {
            match tokio::time::timeout(limit, client.post_txs(chunk)).await {
                Ok(Ok(each)) => each
                    .into_iter()
                    .map(|r| r.map(drop).map_err(|e| code_of(&e)))
                    .collect(),
                Ok(Err(e)) => vec![Err(code_of(&e)); chunk.len()],
                Err(_) => timeout(),
            }
        };
        for (txid, result) in txids.iter().zip(results) {
            match result {
                Ok(()) => out.accepted += 1,
                Err(code) => {
                    shared.waiting.lock().expect("not poisoned").remove(txid);
                    *out.refused.entry(code).or_default() += 1;
                }
            }
        }
        out.last_answer = Instant::now();
    }
    out
}
