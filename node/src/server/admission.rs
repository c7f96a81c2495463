//! The admission pool: a fixed set of worker threads that admit transactions for `POST /v1/tx`
//! and `POST /v1/txs` (signature check, the node's policy, the mempool; [`Chain::submit`]),
//! fed through one bounded queue, instead of a blocking-pool thread per request. A batch is one
//! job: its signature checks run on every core at once ([`check_txs`]), then its transactions
//! are admitted in order, so one sender's consecutive nonces in a batch are all accepted.
//!
//! A transaction (or batch) that may be a deploy is admitted on a blocking-pool thread instead:
//! it can wait seconds on the compile gate and must not hold a worker the others need.
//!
//! The queue holds [`QUEUE_JOBS`] jobs; a request that finds it full waits (the API's request
//! timeout bounds the wait), so a flood of posts queues in the kernel's sockets, not in memory.

use std::sync::{Arc, Mutex};

use gamechain_runtime::chain::SignedTx;
use gamechain_runtime::check_txs;
use tokio::sync::{mpsc, oneshot};

use gamechain_ledger::chain::Chain;
use gamechain_ledger::error::ChainError;

/// Jobs waiting for a worker at most.
pub const QUEUE_JOBS: usize = 4096;

/// Most transactions in one `POST /v1/txs`.
pub const MAX_BATCH_TXS: usize = 1000;

enum Job {
    One(SignedTx, oneshot::Sender<Result<String, ChainError>>),
    Batch(
        Vec<SignedTx>,
        oneshot::Sender<Vec<Result<String, ChainError>>>,
    ),
}

/// A handle of the pool (cheap to clone); the workers stop when every handle is dropped.
#[derive(Clone)]
pub struct Admission {
    queue: mpsc::Sender<Job>,
    chain: Arc<Chain>,
    threads: usize,
}

/// Whether `tx` may be a deploy (its body names the action type): those can wait on the compile
/// gate for seconds, so they are admitted on a blocking-pool thread and never hold a worker that
/// every other transaction needs. A false positive only costs that thread.
fn may_deploy(tx: &SignedTx) -> bool {
    tx.body().contains("\"deploy\"")
}

impl Admission {
    /// Starts `workers` threads (at least 1) named `gc-admit` admitting into `chain`.
    pub fn start(chain: Arc<Chain>, workers: usize) -> Admission {
        let (queue, jobs) = mpsc::channel(QUEUE_JOBS);
        let keep = chain.clone();
        let jobs = Arc::new(Mutex::new(jobs));
        let threads = workers.max(1);
        for _ in 0..threads {
            let (chain, jobs) = (chain.clone(), jobs.clone());
            std::thread::Builder::new()
                .name("gc-admit".into())
                .spawn(move || work(&chain, &jobs, threads))
                .expect("a thread can be started");
        }
        Admission {
            queue,
            chain: keep,
            threads,
        }
    }

    /// Admits `tx`: its txid, or why not ([`Chain::submit`]'s errors; `internal` when the pool
    /// has stopped).
    pub async fn submit(&self, tx: SignedTx) -> Result<String, ChainError> {
        if may_deploy(&tx) {
            let chain = self.chain.clone();
            return tokio::task::spawn_blocking(move || chain.submit(tx))
                .await
                .map_err(|_| stopped())?;
        }
        let (answer, result) = oneshot::channel();
        self.queue
            .send(Job::One(tx, answer))
            .await
            .map_err(|_| stopped())?;
        result.await.map_err(|_| stopped())?
    }

    /// Admits `txs` in order (at most [`MAX_BATCH_TXS`]; the caller checks): one result each.
    pub async fn submit_batch(
        &self,
        txs: Vec<SignedTx>,
    ) -> Result<Vec<Result<String, ChainError>>, ChainError> {
        if txs.iter().any(may_deploy) {
            let (chain, threads) = (self.chain.clone(), self.threads);
            return tokio::task::spawn_blocking(move || admit_batch(&chain, txs, threads))
                .await
                .map_err(|_| stopped());
        }
        let (answer, result) = oneshot::channel();
        self.queue
            .send(Job::Batch(txs, answer))
            .await
            .map_err(|_| stopped())?;
        result.await.map_err(|_| stopped())
    }
}

fn stopped() -> ChainError {
    ChainError::Internal("the node is shutting down".into())
}

/// One worker: takes a job at a time until the queue closes.
fn work(chain: &Chain, jobs: &Mutex<mpsc::Receiver<Job>>, threads: usize) {
    loop {
        let job = {
            let Ok(mut jobs) = jobs.lock() else { return };
            jobs.blocking_recv()
        };
        match job {
            None => return,
            Some(Job::One(tx, answer)) => {
                let _ = answer.send(chain.submit(tx));
            }
            Some(Job::Batch(txs, answer)) => {
                let _ = answer.send(admit_batch(chain, txs, threads));
            }
        }
    }
}

/// A batch: its signature checks on `threads` threads, then each admitted in order.
fn admit_batch(
    chain: &Chain,
    txs: Vec<SignedTx>,
    threads: usize,
) -> Vec<Result<String, ChainError>> {
    let genesis = chain.genesis();
    let checks = check_txs(&txs, &genesis.chain_id, genesis.network, threads);
    txs.into_iter()
        .zip(checks)
        .map(|(tx, checked)| chain.submit_checked(tx, checked))
        .collect()
}
