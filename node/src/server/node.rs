//! Starting and stopping a node: [`NodeHandle::start`] opens the data directory
//! (`genesis_setup.rs`), binds the API, and spawns the HTTP server and the sequencer;
//! [`NodeHandle::shutdown`] stops them cleanly; [`run_node`] does both around a shutdown
//! future (SIGINT/SIGTERM for the CLI).
//!
//! Clean shutdown: the listener stops accepting, in-flight requests finish, WebSocket
//! subscribers get a close frame, the sequencer finishes (and commits) the block it is making
//! and stops, and the database is closed when the last connection is dropped. A block is never
//! half-written: it is one SQLite transaction.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::config::NodeConfig;
use crate::replica::restore::{finish_unfinished, restore_opened};
use crate::replica::snapshot_join::SnapshotJoiner;
use crate::server::api;
use crate::server::state::AppState;
use gamechain_ledger::chain::Chain;
use gamechain_ledger::genesis_setup::open_chain;
use gamechain_ledger::open::preload_modules;
use gamechain_ledger::run_marker::mark_stopped;
use gamechain_ledger::sequencer;
use gamechain_ledger::NodeError;

/// How long open HTTP/WebSocket connections get to finish after a shutdown starts (SIGINT,
/// SIGTERM or a sequencer failure) before the node closes them: 5 seconds.
pub const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// A running node. Dropping it without [`NodeHandle::shutdown`] leaves the node running in the
/// background until the async runtime ends.
pub struct NodeHandle {
    addr: SocketAddr,
    chain: Arc<Chain>,
    stop: watch::Sender<bool>,
    task: JoinHandle<Result<(), NodeError>>,
    /// `true` once the modules are loaded and the sequencer runs.
    ready: watch::Receiver<bool>,
}

impl NodeHandle {
    /// Opens (or creates) the chain in `config.data_dir`, binds `config.listen` and starts the
    /// API and the sequencer. Returns once the API accepts connections; the modules the state
    /// names are then loaded in the background (compiled if the compiled-module cache lacks
    /// them) before the sequencer makes its first block ([`NodeHandle::ready`]).
    ///
    /// Errors: [`NodeError::Config`] (invalid configuration), [`NodeError::Io`] (data
    /// directory), [`NodeError::Storage`], [`NodeError::Refused`] (the data directory belongs
    /// to another chain or build), [`NodeError::Runtime`], [`NodeError::Bind`].
    pub async fn start(config: NodeConfig) -> Result<NodeHandle, NodeError> {
        config.validate()?;
        let (listener, addr) = api::bind(&config).await?;
        let open_config = config.clone();
        let opened = tokio::task::spawn_blocking(move || {
            let mut opened = open_chain(&open_config.ledger(), Some(&SnapshotJoiner))?;
            finish_unfinished(&mut opened)?;
            if let Some(url) = &open_config.restore_from {
                restore_opened(&mut opened, url)?;
            }
            Ok::<_, NodeError>(opened)
        })
        .await
        .map_err(|e| NodeError::Runtime(format!("opening the chain panicked: {e}")))??;
        let (app, stop) =
            AppState::new(&config, opened.ctx, opened.genesis_hash, opened.head, None);
        let (chain, stopped) = (app.chain.clone(), app.shutdown.clone());
        let server = api::serve(listener, app);
        // The API serves at once; the modules the state names are loaded (compiled when the
        // compiled-module cache lacks them) before the sequencer makes its first block.
        let preload = chain.clone();
        // A chain with validators is run by its validators (`validator/run.rs`), never by a
        // sequencer; `run` refuses when this node is not configured as one of them.
        let run: std::pin::Pin<Box<dyn Future<Output = Result<(), NodeError>> + Send>> = if chain
            .genesis()
            .validators
            .is_some()
        {
            Box::pin(crate::validator::run::run(
                chain.clone(),
                opened.storage,
                opened.sign_state,
                opened.key,
                config.validator.clone(),
                stopped,
            ))
        } else if config.validator.is_some() {
            return Err(NodeError::Refused(
                    "[validator] is configured, but this chain's genesis names no validators (it has one sequencer)"
                        .into(),
                ));
        } else {
            Box::pin(sequencer::run(
                chain.clone(),
                opened.storage,
                opened.sign_state,
                opened.key,
                opened.beacon_key,
                stopped,
            ))
        };
        let (ready_tx, ready) = watch::channel(false);
        // Uploads tier up to Cranelift in the background once the modules are loaded (node
        // policy; `gamechain_ledger::tier_up`). Only with a compile program: the binary.
        let tier_up = config.tier_up_config();
        let tier_stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (tier_chain, tier_stopped) = (chain.clone(), tier_stop.clone());
        let seq = async move {
            tokio::task::spawn_blocking(move || {
                // A read lock: nothing writes the head before the sequencer starts.
                let head = preload.head();
                preload_modules(&preload.ctx, &head.state)
            })
            .await
            .map_err(|e| NodeError::Runtime(format!("loading the modules panicked: {e}")))??;
            if let Some(tier_up) = tier_up {
                gamechain_ledger::tier_up::spawn(&tier_chain, tier_up, tier_stop).map_err(|e| {
                    NodeError::Runtime(format!("cannot start the tier-up thread: {e}"))
                })?;
            }
            let _ = ready_tx.send(true);
            run.await
        };
        let stop_on_failure = stop.clone();
        let data_dir = config.data_dir.clone();
        let task = tokio::spawn(async move {
            let server = tokio::spawn(server);
            let result = seq.await;
            tier_stopped.store(true, std::sync::atomic::Ordering::Relaxed);
            if let Err(e) = &result {
                tracing::error!("the sequencer stopped: {e}; shutting the node down");
            }
            // Whatever ended the sequencer, the API goes too. Requests in flight get
            // SHUTDOWN_GRACE to finish; a client holding a half-sent request cannot keep the
            // node from exiting (everything committed is already durable).
            let _ = stop_on_failure.send(true);
            let mut server = server;
            let served = match tokio::time::timeout(SHUTDOWN_GRACE, &mut server).await {
                Ok(joined) => joined
                    .map_err(|e| NodeError::Runtime(format!("the API server panicked: {e}")))?,
                Err(_) => {
                    tracing::warn!(
                        grace_ms = SHUTDOWN_GRACE.as_millis() as u64,
                        "connections still open after the shutdown grace period; closing them"
                    );
                    server.abort();
                    Ok(())
                }
            };
            let result = result.and(served);
            if result.is_ok() {
                // The sequencer is done and the database closed: a clean stop.
                mark_stopped(&data_dir);
            }
            result
        });
        tracing::info!(%addr, chain_id = %chain.genesis().chain_id, "node listening");
        Ok(NodeHandle {
            addr,
            chain,
            stop,
            task,
            ready,
        })
    }

    /// Waits until every module the state names is loaded and the sequencer runs (the API
    /// serves from the start; see [`NodeHandle::start`]). Returns at once if the node stopped
    /// before that.
    pub async fn ready(&self) {
        let mut ready = self.ready.clone();
        let _ = ready.wait_for(|r| *r).await;
    }

    /// The address the API listens on (the real port when `listen` had port 0).
    pub fn bound_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://<bound_addr>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The running chain (for in-process inspection).
    pub fn chain(&self) -> &Arc<Chain> {
        &self.chain
    }

    /// Whether the node stopped by itself (a fatal error; [`NodeHandle::shutdown`] returns it).
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }

    /// Stops the node cleanly (see the module docs) and waits until it has. Returns the error
    /// that stopped it earlier, if one did.
    pub async fn shutdown(self) -> Result<(), NodeError> {
        let _ = self.stop.send(true);
        self.task
            .await
            .map_err(|e| NodeError::Runtime(format!("the node task panicked: {e}")))?
    }

    /// Waits until the node stops by itself (only after a fatal error, or after another
    /// holder's shutdown).
    async fn stopped(&mut self) -> Result<(), NodeError> {
        (&mut self.task)
            .await
            .map_err(|e| NodeError::Runtime(format!("the node task panicked: {e}")))?
    }
}

/// Runs a node with `config` until `shutdown` resolves (e.g. on SIGINT/SIGTERM), then stops it
/// cleanly. Errors: those of [`NodeHandle::start`], or the failure that stopped the node early.
pub async fn run_node(
    config: NodeConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<(), NodeError> {
    let mut handle = NodeHandle::start(config).await?;
    let stopped_early = tokio::select! {
        () = shutdown => None,
        result = handle.stopped() => Some(result),
    };
    match stopped_early {
        Some(result) => result,
        None => {
            tracing::info!("shutting down");
            let result = handle.shutdown().await;
            tracing::info!("node stopped");
            result
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gamechain_ledger::rusqlite;
    use std::path::Path;
    use std::time::{Duration, Instant};

    use futures_util::StreamExt;
    use gamechain_runtime::chain::{
        sign_message, Action, Network, SecretKey, SignedHeader, SignedTx, TxBody,
    };
    use serde_json::Value;

    use gamechain_ledger::storage::Storage;

    const CHAIN: &str = "gamechain-dev";

    fn config(dir: &Path) -> NodeConfig {
        NodeConfig {
            data_dir: dir.to_path_buf(),
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            rate_limit_per_sec: 0,
            wasm_instances: 4,
            min_block_interval_ms: 5,
            compiled_dir: crate::test_compiled_dir(),
            ..NodeConfig::default()
        }
    }

    fn tx(sk: &SecretKey, chain_id: &str, nonce: u64, action: Action) -> SignedTx {
        TxBody {
            chain_id: chain_id.into(),
            from: sk.address(),
            nonce,
            action,
        }
        .sign(sk)
    }

    fn faucet(sk: &SecretKey, nonce: u64) -> SignedTx {
        tx(
            sk,
            CHAIN,
            nonce,
            Action::Faucet {
                token: "GOLD".into(),
            },
        )
    }

    struct Api {
        base: String,
        http: reqwest::Client,
    }

    impl Api {
        fn new(node: &NodeHandle) -> Api {
            Api {
                base: node.url(),
                http: reqwest::Client::new(),
            }
        }

        async fn get(&self, path: &str) -> (u16, Value) {
            let r = self
                .http
                .get(format!("{}{path}", self.base))
                .send()
                .await
                .unwrap();
            (r.status().as_u16(), r.json().await.unwrap())
        }

        async fn post(&self, body: impl Into<reqwest::Body>) -> (u16, Value) {
            let r = self
                .http
                .post(format!("{}/v1/tx", self.base))
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await
                .unwrap();
            (r.status().as_u16(), r.json().await.unwrap())
        }

        async fn send(&self, t: &SignedTx) -> String {
            let (status, v) = self.post(serde_json::to_vec(t).unwrap()).await;
            assert_eq!(status, 200, "{v}");
            v["txid"].as_str().unwrap().to_string()
        }

        /// Polls `GET /v1/tx/<txid>` until it is included (5 s at most).
        async fn included(&self, txid: &str) -> Value {
            let deadline = Instant::now() + Duration::from_secs(5);
            loop {
                let (status, v) = self.get(&format!("/v1/tx/{txid}")).await;
                assert_eq!(status, 200, "{v}");
                if v["status"] == "included" {
                    return v;
                }
                assert!(Instant::now() < deadline, "{txid} not included: {v}");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }

        async fn error_code(&self, (status, v): (u16, Value)) -> (u16, String) {
            let code = v["error"]["code"]
                .as_str()
                .unwrap_or_else(|| panic!("not an API error: {v}"))
                .to_string();
            assert!(
                v["error"]["message"]
                    .as_str()
                    .is_some_and(|m| !m.is_empty()),
                "{v}"
            );
            (status, code)
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_faucet_tx_is_included_within_a_second_and_served_everywhere() {
        let dir = tempfile::tempdir().unwrap();
        let node = NodeHandle::start(config(dir.path())).await.unwrap();
        let api = Api::new(&node);
        let (mut ws, _) =
            tokio_tungstenite::connect_async(format!("ws://{}/v1/ws", node.bound_addr()))
                .await
                .unwrap();

        let (_, status) = api.get("/v1/status").await;
        assert_eq!(
            (status["height"].as_u64(), status["chain_id"].as_str()),
            (Some(0), Some(CHAIN))
        );
        let alice = SecretKey::generate(Network::Testnet);
        let sent = Instant::now();
        let txid = api.send(&faucet(&alice, 0)).await;
        let got = api.included(&txid).await;
        assert!(
            sent.elapsed() < Duration::from_secs(1),
            "included after {:?}",
            sent.elapsed()
        );
        assert_eq!(
            (got["height"].as_u64(), got["index"].as_u64()),
            (Some(1), Some(0))
        );
        assert_eq!(got["receipt"]["ok"], true);
        assert_eq!(got["receipt"]["events"][0]["kind"], "faucet");
        assert_eq!(got["receipt"]["events"][0]["data"]["amount"], "100000");

        let (status, account) = api.get(&format!("/v1/account/{}", alice.address())).await;
        assert_eq!(status, 200);
        assert_eq!(account["balances"], serde_json::json!({"GOLD": "100000"}));
        assert_eq!(
            (account["nonce"].as_u64(), account["next_nonce"].as_u64()),
            (Some(1), Some(1))
        );
        let (_, escrow) = api.get("/v1/account/module:tictactoe").await;
        assert_eq!(escrow["balances"], serde_json::json!({}));

        // The WebSocket got the block, and it is the block the API serves.
        let message = tokio::time::timeout(Duration::from_secs(5), ws.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        let message: Value = serde_json::from_str(message.to_text().unwrap()).unwrap();
        assert_eq!(message["type"], "block");
        let (_, block) = api.get("/v1/blocks/1").await;
        assert_eq!(message["block"], block);
        assert_eq!(block["txs"][0]["txid"], txid.as_str());
        assert_eq!(api.get("/v1/blocks/latest").await.1, block);
        let header: SignedHeader = serde_json::from_value(serde_json::json!({
            "header": block["header"], "signature": block["signature"]
        }))
        .unwrap();
        let (_, genesis) = api.get("/v1/genesis").await;
        header
            .verify_from(genesis["sequencer"].as_str().unwrap())
            .unwrap();
        assert_eq!(block["hash"], header.header.hash_hex());

        let (status, open) = api.get("/v1/games/tictactoe?open=1").await;
        assert_eq!((status, &open["games"]), (200, &serde_json::json!([])));
        let (status, v) = api.get("/v1/games/tictactoe?id=0000000000000000").await;
        assert_eq!(
            (status, v["error"]["code"].as_str()),
            (404, Some("not_found")),
            "{v}"
        );
        node.shutdown().await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_restart_resumes_at_the_same_head_and_state_root() {
        let dir = tempfile::tempdir().unwrap();
        let alice = SecretKey::generate(Network::Testnet);
        let node = NodeHandle::start(config(dir.path())).await.unwrap();
        let api = Api::new(&node);
        api.included(&api.send(&faucet(&alice, 0)).await).await;
        let (_, before) = api.get("/v1/status").await;
        let (_, genesis_before) = api.get("/v1/genesis").await;
        node.shutdown().await.unwrap();

        let node = NodeHandle::start(config(dir.path())).await.unwrap();
        let api = Api::new(&node);
        let (_, after) = api.get("/v1/status").await;
        for field in [
            "height",
            "head_hash",
            "state_root",
            "genesis_hash",
            "sequencer",
            "engine_config_hash",
        ] {
            assert_eq!(after[field], before[field], "{field}");
        }
        assert_eq!(api.get("/v1/genesis").await.1, genesis_before);
        let (_, account) = api.get(&format!("/v1/account/{}", alice.address())).await;
        assert_eq!(account["nonce"], 1);
        let got = api.included(&api.send(&faucet(&alice, 1)).await).await;
        assert_eq!(
            got["height"].as_u64(),
            before["height"].as_u64().map(|h| h + 1)
        );
        assert_eq!(
            api.get(&format!("/v1/account/{}", alice.address())).await.1["balances"]["GOLD"],
            "200000"
        );
        node.shutdown().await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn refused_requests_get_their_code_and_change_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let node = NodeHandle::start(config(dir.path())).await.unwrap();
        let api = Api::new(&node);
        let alice = SecretKey::generate(Network::Testnet);
        let first = faucet(&alice, 0);
        api.included(&api.send(&first).await).await;
        let (_, status_before) = api.get("/v1/status").await;
        let account_path = format!("/v1/account/{}", alice.address());
        let (_, account_before) = api.get(&account_path).await;

        let other = SecretKey::generate(Network::Testnet);
        let mainnet = SecretKey::generate(Network::Mainnet);
        let forged = {
            let t = faucet(&alice, 1);
            SignedTx::new(t.body().to_string(), sign_message(&other, t.body()))
        };
        let cases: Vec<(&str, Vec<u8>, u16, &str)> = vec![
            ("malformed JSON", b"{\"body\": ".to_vec(), 400, "bad_json"),
            (
                "not a signed tx",
                br#"{"body": 1, "signature": "x"}"#.to_vec(),
                400,
                "bad_json",
            ),
            (
                "oversize body",
                vec![b' '; crate::server::api::MAX_TX_REQUEST_BYTES + 1],
                413,
                "too_large",
            ),
            (
                "bad signature",
                serde_json::to_vec(&forged).unwrap(),
                401,
                "bad_signature",
            ),
            (
                "wrong chain id",
                serde_json::to_vec(&tx(
                    &alice,
                    "other-chain",
                    1,
                    Action::Faucet {
                        token: "GOLD".into(),
                    },
                ))
                .unwrap(),
                400,
                "wrong_chain",
            ),
            (
                "mainnet sender",
                serde_json::to_vec(&faucet(&mainnet, 0)).unwrap(),
                400,
                "bad_address",
            ),
            (
                "replayed tx",
                serde_json::to_vec(&first).unwrap(),
                409,
                "duplicate",
            ),
            (
                "reused nonce",
                serde_json::to_vec(&tx(
                    &alice,
                    CHAIN,
                    0,
                    Action::game("tictactoe", &serde_json::json!({"kind": "x"})),
                ))
                .unwrap(),
                409,
                "bad_nonce",
            ),
            (
                "future nonce",
                serde_json::to_vec(&faucet(&alice, 5)).unwrap(),
                409,
                "bad_nonce",
            ),
        ];
        for (what, body, want_status, want_code) in cases {
            let answer = api.post(body).await;
            let message = answer.1["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            assert_eq!(
                api.error_code(answer).await,
                (want_status, want_code.to_string()),
                "{what}: {message}"
            );
            if want_code == "bad_nonce" {
                assert!(message.contains("expected 1"), "{what}: {message}");
            }
        }
        // Both ways of being too large are 413 too_large in our words, naming the limit.
        let code_over = tx(
            &alice,
            CHAIN,
            1,
            Action::deploy("big", vec![0; gamechain_runtime::chain::MAX_CODE_BYTES + 1]),
        );
        let limit = crate::server::api::MAX_TX_REQUEST_BYTES;
        for (body, want) in [
            (
                serde_json::to_vec(&code_over).unwrap(),
                "a deploy's code is 1048577 bytes, the limit is 1048576 (MAX_CODE_BYTES)"
                    .to_string(),
            ),
            (
                vec![b' '; limit + 1],
                format!("the request body is more than {limit} bytes (the limit for POST /v1/tx)"),
            ),
        ] {
            let (status, answer) = api.post(body).await;
            assert_eq!(status, 413, "{answer}");
            assert_eq!(answer["error"]["code"], "too_large", "{answer}");
            assert_eq!(answer["error"]["message"], want.as_str(), "{answer}");
        }
        let gets: [(&str, u16, &str); 11] = [
            ("/v1/headers?from=999", 404, "not_found"),
            ("/v1/headers?count=0", 400, "invalid"),
            ("/v1/headers?count=1025", 400, "invalid"),
            ("/v1/headers?to=3", 400, "invalid"),
            ("/v1/account/notanaddress", 400, "bad_address"),
            ("/v1/account/module:chess", 404, "not_found"),
            (&format!("/v1/tx/{}", "ab".repeat(32)), 404, "not_found"),
            ("/v1/blocks/999", 404, "not_found"),
            ("/v1/blocks/x", 400, "invalid"),
            ("/v1/games/chess", 404, "not_found"),
            ("/v2/nothing", 404, "not_found"),
        ];
        for (path, want_status, want_code) in gets {
            let answer = api.get(path).await;
            assert_eq!(
                api.error_code(answer).await,
                (want_status, want_code.to_string()),
                "{path}"
            );
        }
        let r = api
            .http
            .delete(format!("{}/v1/status", api.base))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 405);
        assert_eq!(
            r.json::<Value>().await.unwrap()["error"]["code"],
            "not_found"
        );

        let (_, status_after) = api.get("/v1/status").await;
        for field in ["height", "head_hash", "state_root", "pending"] {
            assert_eq!(status_after[field], status_before[field], "{field}");
        }
        assert_eq!(api.get(&account_path).await.1, account_before);
        node.shutdown().await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_pending_tx_that_became_invalid_is_dropped_and_the_block_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let node = NodeHandle::start(config(dir.path())).await.unwrap();
        let api = Api::new(&node);
        let (alice, bob) = (
            SecretKey::generate(Network::Testnet),
            SecretKey::generate(Network::Testnet),
        );
        // Two transactions of alice's that the mempool took for nonces 3 and 4 (as if her
        // committed nonce were 3): the block builder refuses the first (her nonce is 0), and the
        // second cannot follow it.
        let stale: Vec<SignedTx> = vec![faucet(&alice, 3), faucet(&alice, 4)];
        {
            let mut mempool = node.chain().mempool();
            for t in &stale {
                let body = t.check(CHAIN, Network::Testnet).unwrap();
                let pending = gamechain_ledger::mempool::PendingTx {
                    txid: t.txid(),
                    tx: t.clone(),
                    body,
                };
                mempool.admit(pending, 3, |_| false).unwrap();
            }
        }
        let txid = api.send(&faucet(&bob, 0)).await;
        let got = api.included(&txid).await;
        let (_, block) = api.get(&format!("/v1/blocks/{}", got["height"])).await;
        assert_eq!(block["txs"].as_array().unwrap().len(), 1, "{block}");
        for t in &stale {
            let (status, _) = api.get(&format!("/v1/tx/{}", t.txid())).await;
            assert_eq!(status, 404, "a dropped transaction is forgotten");
        }
        let (_, status) = api.get("/v1/status").await;
        assert_eq!(status["pending"], 0);
        let (_, account) = api.get(&format!("/v1/account/{}", alice.address())).await;
        assert_eq!(
            (account["nonce"].as_u64(), account["next_nonce"].as_u64()),
            (Some(0), Some(0))
        );
        node.shutdown().await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_rate_limit_answers_429_with_retry_after() {
        let dir = tempfile::tempdir().unwrap();
        let node = NodeHandle::start(NodeConfig {
            rate_limit_per_sec: 1,
            rate_limit_burst: 2,
            ..config(dir.path())
        })
        .await
        .unwrap();
        let http = reqwest::Client::new();
        let url = format!("{}/v1/status", node.url());
        for _ in 0..2 {
            assert_eq!(http.get(&url).send().await.unwrap().status().as_u16(), 200);
        }
        let r = http.get(&url).send().await.unwrap();
        assert_eq!(r.status().as_u16(), 429);
        assert_eq!(r.headers()["retry-after"], "1");
        assert_eq!(
            r.json::<Value>().await.unwrap()["error"]["code"],
            "rate_limited"
        );
        node.shutdown().await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn empty_blocks_follow_the_interval_and_run_node_stops_on_its_signal() {
        let dir = tempfile::tempdir().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let cfg = NodeConfig {
            block_interval_ms: 100,
            ..config(dir.path())
        };
        let running = tokio::spawn(run_node(cfg, async move {
            let _ = stopped.await;
        }));
        // Wait (20 s at most; starting compiles the module) for three empty blocks.
        let db = dir.path().join("chain.sqlite");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let height = Storage::open_reader(&db)
                .ok()
                .and_then(|s| s.head().ok().flatten())
                .map(|h| h.header.header.height);
            if height.is_some_and(|h| h >= 3) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "no third block: height {height:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        stop.send(()).unwrap();
        running.await.unwrap().unwrap();
        // The database is closed and consistent: it reopens, and the empty blocks are there.
        let storage = Storage::open(&dir.path().join("chain.sqlite")).unwrap();
        let head = storage.head().unwrap().unwrap();
        assert!(
            head.header.header.height >= 3,
            "height {}",
            head.header.header.height
        );
        let times: Vec<u64> = (0..=head.header.header.height)
            .map(|h| storage.block(h).unwrap().unwrap().header.header.time_ms)
            .collect();
        assert!(
            times.windows(2).all(|w| w[1] > w[0]),
            "block times increase: {times:?}"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_client_holding_a_half_sent_request_cannot_keep_the_node_up() {
        use tokio::io::AsyncWriteExt;
        let dir = tempfile::tempdir().unwrap();
        let node = NodeHandle::start(config(dir.path())).await.unwrap();
        // Headers promise a body that never comes; the connection stays open.
        let mut conn = tokio::net::TcpStream::connect(node.bound_addr())
            .await
            .unwrap();
        conn.write_all(b"POST /v1/tx HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\n{")
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let down = tokio::time::timeout(SHUTDOWN_GRACE * 4, node.shutdown()).await;
        assert!(matches!(down, Ok(Ok(()))), "shutdown did not end: {down:?}");
        drop(conn);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_data_dir_of_another_chain_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        NodeHandle::start(config(dir.path()))
            .await
            .unwrap()
            .shutdown()
            .await
            .unwrap();
        let genesis_path = dir.path().join("genesis.json");
        let original = std::fs::read_to_string(&genesis_path).unwrap();

        // An edited genesis.json.
        let mut edited: Value = serde_json::from_str(&original).unwrap();
        edited["time_ms"] = serde_json::json!(edited["time_ms"].as_u64().unwrap() + 1);
        std::fs::write(&genesis_path, edited.to_string()).unwrap();
        let err = NodeHandle::start(config(dir.path()))
            .await
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("refusing to start") && err.contains("genesis"),
            "{err}"
        );
        std::fs::write(&genesis_path, &original).unwrap();

        // Another sequencer key.
        let key_path = dir.path().join("sequencer.wif");
        let key = std::fs::read(&key_path).unwrap();
        std::fs::remove_file(&key_path).unwrap();
        gamechain_chain::key_file::write_key_file(
            &key_path,
            &SecretKey::generate(Network::Testnet),
        )
        .unwrap();
        let err = NodeHandle::start(config(dir.path()))
            .await
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("names the sequencer"), "{err}");
        std::fs::write(&key_path, key).unwrap();

        // A state that does not hash to the head's state root: found at every start on a
        // chain with state proofs (its tree is rebuilt from the stored state), by the starts
        // that run the integrity check (which rehash the whole stored state) on an LtHash one.
        let conn = rusqlite::Connection::open(dir.path().join("chain.sqlite")).unwrap();
        conn.execute(
            "INSERT INTO state (key, value) VALUES ('bal/x/GOLD', CAST('5' AS BLOB))",
            [],
        )
        .unwrap();
        drop(conn);
        let checked = NodeConfig {
            integrity_check: crate::config::IntegrityCheck::Always,
            ..config(dir.path())
        };
        let err = NodeHandle::start(checked).await.err().unwrap().to_string();
        assert!(
            err.contains("the stored state's sparse Merkle root is")
                && err.contains("the saved root is"),
            "{err}"
        );
        // A saved running state hash that does not match the head: found at every start.
        let conn = rusqlite::Connection::open(dir.path().join("chain.sqlite")).unwrap();
        conn.execute(
            "UPDATE meta SET value = zeroblob(2048) WHERE key = 'lthash'",
            [],
        )
        .unwrap();
        drop(conn);
        let err = NodeHandle::start(config(dir.path()))
            .await
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("the saved running state hash") && err.contains("has state root"),
            "{err}"
        );
    }
}
