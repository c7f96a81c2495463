//! The HTTP client of a gamechain node: one typed async method per endpoint of `node/API.md`,
//! plus [`Client::send`] (next nonce, sign, post), [`Client::wait_for_receipt`] (poll until
//! the transaction is in a block) and [`Client::subscribe_blocks`] (the `/v1/ws` block stream).
//! Every failure is a [`ClientError`]; an error the node answered carries the API's `code` and
//! `message`.
//!
//! ```no_run
//! # use std::time::Duration;
//! # use gamechain_client::{Client, ClientError};
//! # use gamechain_chain::{Action, Network, SecretKey};
//! # async fn example() -> Result<(), ClientError> {
//! let client = Client::new("http://127.0.0.1:8645")?;
//! let key = SecretKey::generate(Network::Testnet);
//! let txid = client.send(&key, Action::Faucet { token: "GOLD".into() }).await?;
//! let included = client.wait_for_receipt(&txid, Duration::from_secs(30)).await?;
//! assert!(included.receipt.ok);
//! # Ok(())
//! # }
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use gamechain_chain::wire::view::ViewProof;
/// The answers' types: `gamechain-chain`'s wire types, the ones the node serialises.
pub use gamechain_chain::wire::{
    Account, Block, BlockFinality, Evidence, EvidencePage, IncludedTx, ModuleInfo, StateEntry,
    Status, TxRecord, TxStatus,
};
use gamechain_chain::wire::{
    BatchResult, BlockMessage, ErrorAnswer, ModuleList, TxBatchAnswer, TxidAnswer,
};
use gamechain_chain::{
    Action, Genesis, Receipt, SecretKey, SignedHeader, SignedTx, TxBody, UpgradePolicy,
};
use reqwest::{StatusCode, Url};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The node a client talks to when none is given: the default `listen` address of `gamechain node`.
pub const DEFAULT_NODE_URL: &str = "http://127.0.0.1:8645";

/// How long one HTTP request may take, connection included, before it fails with
/// [`ClientError::Transport`].
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// First and longest pause between two polls of [`Client::wait_for_receipt`].
const POLL_FIRST: Duration = Duration::from_millis(20);
const POLL_MAX: Duration = Duration::from_millis(250);

/// Why a client call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientError {
    /// The node answered with an API error (`{"error": {"code", "message"}}`).
    Api {
        /// The HTTP status (e.g. 409).
        status: u16,
        /// The API's machine code (`bad_nonce`, `not_found`, …).
        code: String,
        /// The API's message for a person.
        message: String,
    },
    /// The node answered with a status or a body that is not the API's (e.g. a proxy page, or
    /// JSON of another shape). Carries the status and what was wrong.
    Protocol {
        /// The HTTP status.
        status: u16,
        /// What did not match the API.
        message: String,
    },
    /// No answer: the node is unreachable, the connection broke or the request timed out.
    Transport(String),
    /// [`Client::wait_for_receipt`] gave up: the transaction was still pending (or unknown)
    /// when its timeout ran out.
    Timeout {
        /// The transaction waited for.
        txid: String,
        /// How long it waited.
        waited: Duration,
    },
    /// A caller-side mistake found before anything was sent (a bad URL, a key of the wrong
    /// network).
    Usage(String),
}

impl ClientError {
    /// The API code of an [`ClientError::Api`] error, else `None`.
    pub fn code(&self) -> Option<&str> {
        match self {
            ClientError::Api { code, .. } => Some(code),
            _ => None,
        }
    }
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::Api { code, message, .. } => write!(f, "{code}: {message}"),
            ClientError::Protocol { status, message } => {
                write!(f, "unexpected answer (HTTP {status}): {message}")
            }
            ClientError::Transport(m) => write!(f, "cannot reach the node: {m}"),
            ClientError::Timeout { txid, waited } => {
                write!(
                    f,
                    "timeout: transaction {txid} is not in a block after {:.1} s",
                    waited.as_secs_f64()
                )
            }
            ClientError::Usage(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ClientError {}

/// `Result` of every client call.
pub type ClientResult<T> = Result<T, ClientError>;

/// A transaction that is in a block: what [`Client::wait_for_receipt`] returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Included {
    /// The txid.
    pub txid: String,
    /// The block height.
    pub height: u64,
    /// The position in the block.
    pub index: u64,
    /// The outcome.
    pub receipt: Receipt,
}

/// Which block [`Client::block`] fetches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockRef {
    /// The head.
    Latest,
    /// The block at this height.
    Height(u64),
}

impl std::str::FromStr for BlockRef {
    type Err = String;
    /// `latest` or a height.
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "latest" {
            return Ok(BlockRef::Latest);
        }
        s.parse()
            .map(BlockRef::Height)
            .map_err(|_| format!("`{s}` is neither a block height nor `latest`"))
    }
}

/// An async client of one node. Cheap to clone (the connection pool is shared).
#[derive(Debug, Clone)]
pub struct Client {
    base: Url,
    http: reqwest::Client,
    /// The node's chain id, fetched once from `/v1/status` by [`Client::send`].
    chain_id: std::sync::Arc<OnceLock<String>>,
    /// The `retry-after` of the last `429` answer, see [`Client::last_retry_after`].
    retry_after: std::sync::Arc<std::sync::Mutex<Option<Duration>>>,
}

/// The longest `retry-after` this client honours (a node asking for more is waited on this
/// long, then asked again).
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(300);

impl Client {
    /// A client of the node at `base_url` (e.g. `http://127.0.0.1:8645`; a trailing `/` is
    /// fine). [`ClientError::Usage`] when it is not an `http://` URL (this build has no TLS).
    pub fn new(base_url: &str) -> ClientResult<Client> {
        let mut base = Url::parse(base_url)
            .map_err(|e| ClientError::Usage(format!("bad node URL `{base_url}`: {e}")))?;
        if base.scheme() != "http" {
            return Err(ClientError::Usage(format!(
                "bad node URL `{base_url}`: only http:// is supported"
            )));
        }
        if base.cannot_be_a_base() {
            return Err(ClientError::Usage(format!("bad node URL `{base_url}`")));
        }
        base.path_segments_mut()
            .expect("checked above")
            .pop_if_empty();
        let http = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .connect_timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| ClientError::Transport(e.to_string()))?;
        Ok(Client {
            base,
            http,
            chain_id: Default::default(),
            retry_after: Default::default(),
        })
    }

    /// The `retry-after` (seconds, at most [`MAX_RETRY_AFTER`]) of the last `429` answer this
    /// client (or a clone) received, if it carried one: what a caller that retries waits at
    /// least. A `429` without the header clears it.
    pub fn last_retry_after(&self) -> Option<Duration> {
        *self.retry_after.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Notes the `retry-after` of a `429` answer.
    fn note_status(&self, status: StatusCode, headers: &reqwest::header::HeaderMap) {
        if status != StatusCode::TOO_MANY_REQUESTS {
            return;
        }
        let after = headers
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(|s| Duration::from_secs(s).min(MAX_RETRY_AFTER));
        *self.retry_after.lock().unwrap_or_else(|p| p.into_inner()) = after;
    }

    /// The node's base URL.
    pub fn base_url(&self) -> &Url {
        &self.base
    }

    /// The URL of `segments` under the base, each segment percent-encoded.
    pub fn url(&self, segments: &[&str]) -> Url {
        let mut url = self.base.clone();
        url.path_segments_mut()
            .expect("checked in new")
            .extend(segments);
        url
    }

    /// `GET /v1/status`.
    pub async fn status(&self) -> ClientResult<Status> {
        self.get(&["v1", "status"], &[]).await
    }

    /// `GET /v1/genesis`: the genesis file as JSON.
    pub async fn genesis(&self) -> ClientResult<Value> {
        self.get(&["v1", "genesis"], &[]).await
    }

    /// `GET /v1/account/<account>`: balances and nonces of an address or `module:<id>`.
    /// Errors: `bad_address` (400) for a string that is not an account.
    pub async fn account(&self, account: &str) -> ClientResult<Account> {
        self.get(&["v1", "account", account], &[]).await
    }

    /// `GET /v1/tx/<txid>`. Errors: `not_found` (404) for an unknown txid.
    pub async fn tx(&self, txid: &str) -> ClientResult<TxRecord> {
        self.get(&["v1", "tx", txid], &[]).await
    }

    /// `GET /v1/blocks/<height>` or `/v1/blocks/latest`. Errors: `not_found` (404) above the
    /// head.
    pub async fn block(&self, which: BlockRef) -> ClientResult<Block> {
        match which {
            BlockRef::Latest => self.get(&["v1", "blocks", "latest"], &[]).await,
            BlockRef::Height(h) => self.get(&["v1", "blocks", &h.to_string()], &[]).await,
        }
    }

    /// `GET /v1/blocks/<height>/finality` or `/v1/blocks/latest/finality` (chains with
    /// validators): the block's consensus digest and finality certificate, unchecked (check
    /// them with the genesis validator set). Errors: `not_found` (404) on a chain without
    /// validators, above the head, or for a block the node holds no record of.
    pub async fn block_finality(&self, which: BlockRef) -> ClientResult<BlockFinality> {
        match which {
            BlockRef::Latest => self.get(&["v1", "blocks", "latest", "finality"], &[]).await,
            BlockRef::Height(h) => {
                self.get(&["v1", "blocks", &h.to_string(), "finality"], &[])
                    .await
            }
        }
    }

    /// `GET /v1/evidence?after=<after>&limit=<limit>` (chains with validators): the evidence
    /// records with an id above `after`, oldest first, at most `limit` (the node caps it at
    /// 100), unchecked (check them with the genesis validator set: `gamechain verify`).
    pub async fn evidence(&self, after: u64, limit: u32) -> ClientResult<EvidencePage> {
        self.get(
            &["v1", "evidence"],
            &[("after", &after.to_string()), ("limit", &limit.to_string())],
        )
        .await
    }

    /// `GET /v1/state/<key>`: `key`'s value at the node's head block, with that block's header
    /// and signature, unchecked (`value` base64, `None` when absent). Errors: `invalid` (400) for
    /// a key over 1,100 bytes.
    pub async fn state(&self, key: &str) -> ClientResult<StateEntry> {
        self.get(&["v1", "state", key], &[]).await
    }

    /// `GET /v1/state/<key>?proof`, checked against `genesis` alone: the proof must show the
    /// answer's value (or absence) against its header's state root (`StateEntry::check`), and
    /// the header must be signed by the chain's signer (`Genesis::check_block_signer`: the
    /// sequencer, or on a chain with validators one of the genesis set; that block's finality
    /// is [`Client::block_finality`]'s, checked by `gamechain verify`). Returns the value's
    /// bytes (`None`: proven absent) and the block. Errors: `no_proofs` (409) on a chain whose
    /// state commitment has none; [`ClientError::Protocol`] naming what does not check.
    pub async fn state_proven(
        &self,
        key: &str,
        genesis: &Genesis,
    ) -> ClientResult<(Option<Vec<u8>>, SignedHeader)> {
        let entry: StateEntry = self.get(&["v1", "state", key], &[("proof", "1")]).await?;
        let refuse = |message: String| ClientError::Protocol {
            status: 200,
            message,
        };
        if entry.commitment != genesis.state_commitment() {
            return Err(refuse(format!(
                "the node answers for a {} chain, this genesis's state commitment is {}",
                entry.commitment.name(),
                genesis.state_commitment().name()
            )));
        }
        let value = entry.check(key).map_err(refuse)?;
        let header = entry.signed_header();
        genesis
            .check_block_signer(&header)
            .map_err(|e| refuse(format!("block {}: {e}", header.header.height)))?;
        Ok((value, header))
    }

    /// `GET /v1/games/<module>?<query>`: the module's view of `query` (pairs in order, e.g.
    /// `[("id", "80566b04265ced78")]`). Errors: the view's own (`not_found` 404 for
    /// `not found: game …`, `invalid` 400, …) and `internal` (500) when it traps or runs out
    /// of fuel.
    pub async fn view(&self, module: &str, query: &[(&str, &str)]) -> ClientResult<Value> {
        self.get(&["v1", "games", module], query).await
    }

    /// `GET /v1/games/<module>/proof?<query>`: the view of `query` with every state entry it
    /// read, its data checked against `genesis` alone ([`ViewProof::check`]: each read proven
    /// against the header's state root, the module's record among them naming `code_hash`; the
    /// header signed by the chain's signer), and the module's wasm (`GET /v1/code/<hash>`;
    /// the verifier hashes it). What is left to a verifier with a wasm engine: re-executing
    /// the view over the proven reads and, on a chain with validators, the block's finality
    /// (`gamechain view --prove` does both: `node/src/verify/view.rs`). Errors: `no_proofs`
    /// (409) for a chain without proofs or a view that cannot be proven (it scans, calls
    /// another module, or reads over 256 keys); [`ClientError::Protocol`] naming what does not
    /// check.
    pub async fn view_proof(
        &self,
        module: &str,
        query: &[(&str, &str)],
        genesis: &Genesis,
    ) -> ClientResult<(ViewProof, Vec<u8>)> {
        let proof: ViewProof = self.get(&["v1", "games", module, "proof"], query).await?;
        let refuse = |message: String| ClientError::Protocol {
            status: 200,
            message,
        };
        let asked: BTreeMap<String, String> = query
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        if proof.commitment != genesis.state_commitment() {
            return Err(refuse(format!(
                "the node answers for a {} chain, this genesis's state commitment is {}",
                proof.commitment.name(),
                genesis.state_commitment().name()
            )));
        }
        let reads = proof.check(module, &asked).map_err(refuse)?;
        let header = proof.signed_header();
        genesis
            .check_block_signer(&header)
            .map_err(|e| refuse(format!("block {}: {e}", header.header.height)))?;
        let wasm = self.code(&reads.code_hash).await?;
        Ok((proof, wasm))
    }

    /// `GET /v1/modules`: every module of the chain (genesis and deployed), in id order, each
    /// with its upgrade `policy` and `pending_upgrade`.
    pub async fn modules(&self) -> ClientResult<Vec<ModuleInfo>> {
        let list: ModuleList = self.get(&["v1", "modules"], &[]).await?;
        Ok(list.modules)
    }

    /// `GET /v1/modules?pending=1`: the modules with an announced upgrade not yet in effect
    /// (`pending_upgrade` set), in id order: what a player with stakes in a timelocked module
    /// watches.
    pub async fn pending_upgrades(&self) -> ClientResult<Vec<ModuleInfo>> {
        let list: ModuleList = self.get(&["v1", "modules"], &[("pending", "1")]).await?;
        Ok(list.modules)
    }

    /// `GET /v1/modules/<id>`: the module's record. Errors: `not_found` (404).
    pub async fn module(&self, id: &str) -> ClientResult<ModuleInfo> {
        self.get(&["v1", "modules", id], &[]).await
    }

    /// `GET /v1/modules/<id>/schema`: the module's schema text (compact JSON, key order as
    /// the module declared it; `docs/modules.md`, "Schema"). Errors: `not_found` (404) for no
    /// such module or a module without a schema.
    pub async fn module_schema(&self, id: &str) -> ClientResult<String> {
        let bytes = self.get_bytes(&["v1", "modules", id, "schema"]).await?;
        String::from_utf8(bytes).map_err(|_| ClientError::Protocol {
            status: 200,
            message: "the schema is not UTF-8".into(),
        })
    }

    /// `GET /v1/code/<code_hash>`: the wasm bytes the chain stores under `code_hash` (hash them
    /// to check). Errors: `invalid` (400) for a malformed hash, `not_found` (404).
    pub async fn code(&self, code_hash: &str) -> ClientResult<Vec<u8>> {
        self.get_bytes(&["v1", "code", code_hash]).await
    }

    /// A GET of `path` answering raw bytes on success, the API's error otherwise.
    async fn get_bytes(&self, path: &[&str]) -> ClientResult<Vec<u8>> {
        let response = self
            .http
            .get(self.url(path))
            .send()
            .await
            .map_err(transport)?;
        let status = response.status();
        self.note_status(status, response.headers());
        let bytes = read_bounded(response, MAX_RESPONSE_BYTES).await?;
        if status.is_success() {
            return Ok(bytes);
        }
        decode::<Value>(status, &bytes).and_then(|_| {
            Err(ClientError::Protocol {
                status: status.as_u16(),
                message: "an error status with a success body".into(),
            })
        })
    }

    /// Deploys `code` (a wasm binary) as module `module` without naming a policy (a new module
    /// gets `owner`: [`Action::deploy`]), or upgrades it when `key` owns it (at once under
    /// `owner`, announced under `timelocked`): [`Client::send`] of `{"type": "deploy", …}`;
    /// returns the txid (the receipt says whether the chain accepted the code). Errors: as
    /// [`Client::send`], plus `deploy_forbidden` (403) when the node's operator does not admit
    /// deploys from `key`, `upgrade_refused` (403) when the module is immutable or `key` is not
    /// its owner, `too_large` (413) above 1 MiB of code.
    pub async fn deploy(&self, key: &SecretKey, module: &str, code: &[u8]) -> ClientResult<String> {
        self.send(key, Action::deploy(module, code.to_vec())).await
    }

    /// [`Client::deploy`] naming the new module's upgrade `policy` (on an upgrade it must be
    /// the module's current one).
    pub async fn deploy_with_policy(
        &self,
        key: &SecretKey,
        module: &str,
        code: &[u8],
        policy: UpgradePolicy,
    ) -> ClientResult<String> {
        let action = Action::Deploy {
            module: module.to_string(),
            code: code.to_vec(),
            policy: Some(policy),
        };
        self.send(key, action).await
    }

    /// `POST /v1/tx` of a signed transaction; returns its txid. Errors: the API's refusals
    /// (`bad_json`, `too_large`, `wrong_chain`, `bad_address`, `bad_signature`, `bad_nonce`,
    /// `duplicate`, `mempool_full`, `rate_limited`).
    pub async fn post_tx(&self, tx: &SignedTx) -> ClientResult<String> {
        let body = serde_json::to_vec(tx).expect("a SignedTx always serialises");
        self.post_tx_bytes(body).await
    }

    /// `POST /v1/txs` of up to 1,000 signed transactions, admitted in order: one result each,
    /// a txid or the error `POST /v1/tx` would have given for that transaction alone
    /// ([`ClientError::Api`]). Errors of the whole request: as [`Client::post_tx`]
    /// (`too_large`, `rate_limited`, transport).
    pub async fn post_txs(&self, txs: &[SignedTx]) -> ClientResult<Vec<ClientResult<String>>> {
        let body = serde_json::to_vec(&serde_json::json!({ "txs": txs }))
            .expect("signed transactions always serialise");
        let request = self
            .http
            .post(self.url(&["v1", "txs"]))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body);
        let answer: TxBatchAnswer = self.call(request).await?;
        if answer.results.len() != txs.len() {
            return Err(ClientError::Protocol {
                status: 200,
                message: format!(
                    "{} results for {} transactions",
                    answer.results.len(),
                    txs.len()
                ),
            });
        }
        Ok(answer
            .results
            .into_iter()
            .map(|r| match r {
                BatchResult::Accepted { txid } => Ok(txid),
                BatchResult::Refused { error, status } => Err(ClientError::Api {
                    status,
                    code: error.code,
                    message: error.message,
                }),
            })
            .collect())
    }

    /// `POST /v1/tx` of arbitrary bytes as `application/json` (for tools and tests that send
    /// what a well-behaved client would not); returns the txid the node answered.
    pub async fn post_tx_bytes(&self, body: Vec<u8>) -> ClientResult<String> {
        let request = self
            .http
            .post(self.url(&["v1", "tx"]))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body);
        let answer: TxidAnswer = self.call(request).await?;
        Ok(answer.txid)
    }

    /// The chain id, fetched from `/v1/status` on first use and then remembered.
    pub async fn chain_id(&self) -> ClientResult<String> {
        if let Some(id) = self.chain_id.get() {
            return Ok(id.clone());
        }
        let id = self.status().await?.chain_id;
        Ok(self.chain_id.get_or_init(|| id).clone())
    }

    /// The body `key` would sign next for `action`: this chain's id, `key`'s address and its
    /// `next_nonce` from `/v1/account`.
    pub async fn next_body(&self, key: &SecretKey, action: Action) -> ClientResult<TxBody> {
        let chain_id = self.chain_id().await?;
        let from = key.address();
        let nonce = self.account(&from).await?.next_nonce;
        Ok(TxBody {
            chain_id,
            from,
            nonce,
            action,
        })
    }

    /// Signs `action` with `key` at the account's `next_nonce` and posts it; returns the txid.
    /// Does not wait for a block (see [`Client::wait_for_receipt`]). Errors: as
    /// [`Client::account`] and [`Client::post_tx`]; `bad_nonce` when another transaction of
    /// the same key was accepted between the nonce look-up and the post.
    pub async fn send(&self, key: &SecretKey, action: Action) -> ClientResult<String> {
        let body = self.next_body(key, action).await?;
        self.post_tx(&body.sign(key)).await
    }

    /// Polls `GET /v1/tx/<txid>` until the transaction is `included` and returns where it is
    /// and its receipt. `not_found` (a node may answer before it has recorded a just-accepted
    /// transaction) and `rate_limited` answers are retried too. Errors: [`ClientError::Timeout`]
    /// after `timeout`; any other error of [`Client::tx`] at once.
    pub async fn wait_for_receipt(&self, txid: &str, timeout: Duration) -> ClientResult<Included> {
        let start = Instant::now();
        let mut pause = POLL_FIRST;
        loop {
            match self.tx(txid).await {
                Ok(TxRecord {
                    status:
                        TxStatus::Included {
                            height,
                            index,
                            receipt,
                        },
                    ..
                }) => {
                    return Ok(Included {
                        txid: txid.to_string(),
                        height,
                        index: u64::from(index),
                        receipt,
                    });
                }
                Ok(_) => {}
                Err(e) if matches!(e.code(), Some("not_found" | "rate_limited")) => {}
                Err(e) => return Err(e),
            }
            let waited = start.elapsed();
            if waited >= timeout {
                return Err(ClientError::Timeout {
                    txid: txid.to_string(),
                    waited,
                });
            }
            tokio::time::sleep(pause.min(timeout - waited)).await;
            pause = (pause * 2).min(POLL_MAX);
        }
    }

    /// Opens `GET /v1/ws`: every block committed from now on, in height order. Errors:
    /// [`ClientError::Transport`] when the upgrade fails.
    pub async fn subscribe_blocks(&self) -> ClientResult<BlockSubscription> {
        let ws = self.websocket(&["v1", "ws"], &[]).await?;
        Ok(BlockSubscription::new(ws, KEEPALIVE))
    }

    /// A WebSocket to the node at `segments` with `query`. Errors: [`ClientError::Api`] for a
    /// refused upgrade with the API's error body, else [`ClientError::Transport`].
    pub(crate) async fn websocket(
        &self,
        segments: &[&str],
        query: &[(&str, String)],
    ) -> ClientResult<WsStream> {
        let mut url = self.url(segments);
        url.set_scheme("ws").expect("http URLs can become ws URLs");
        if !query.is_empty() {
            url.query_pairs_mut()
                .extend_pairs(query.iter().map(|(k, v)| (*k, v.as_str())));
        }
        let connect = tokio_tungstenite::connect_async(url.as_str());
        let (ws, _) = tokio::time::timeout(REQUEST_TIMEOUT, connect)
            .await
            .map_err(|_| {
                ClientError::Transport(format!(
                    "{url}: no WebSocket upgrade in {REQUEST_TIMEOUT:?}"
                ))
            })?
            .map_err(|e| self.upgrade_error(&url, e))?;
        Ok(ws)
    }

    /// Why a WebSocket upgrade failed: a refusal with the API's error body (`429
    /// rate_limited` with its `retry-after` noted, `503 too_many_subscribers`, …) is
    /// [`ClientError::Api`], anything else [`ClientError::Transport`].
    fn upgrade_error(&self, url: &Url, e: tokio_tungstenite::tungstenite::Error) -> ClientError {
        if let tokio_tungstenite::tungstenite::Error::Http(response) = &e {
            let status =
                StatusCode::from_u16(response.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
            let mut headers = reqwest::header::HeaderMap::new();
            if let Some(v) = response
                .headers()
                .get("retry-after")
                .and_then(|v| reqwest::header::HeaderValue::from_bytes(v.as_bytes()).ok())
            {
                headers.insert(reqwest::header::RETRY_AFTER, v);
            }
            self.note_status(status, &headers);
            let body = response.body().as_deref().unwrap_or_default();
            return match decode::<Value>(status, body) {
                Err(e @ ClientError::Api { .. }) => e,
                _ => ClientError::Transport(format!("{url}: HTTP {status}")),
            };
        }
        ClientError::Transport(format!("{url}: {e}"))
    }

    /// [`Client::send`], then [`Client::wait_for_receipt`] with `timeout`.
    pub async fn send_and_wait(
        &self,
        key: &SecretKey,
        action: Action,
        timeout: Duration,
    ) -> ClientResult<Included> {
        let txid = self.send(key, action).await?;
        self.wait_for_receipt(&txid, timeout).await
    }

    pub(crate) async fn get<T: DeserializeOwned>(
        &self,
        segments: &[&str],
        query: &[(&str, &str)],
    ) -> ClientResult<T> {
        let mut request = self.http.get(self.url(segments));
        if !query.is_empty() {
            request = request.query(query);
        }
        self.call(request).await
    }

    /// Sends `request`; decodes a 2xx body as `T` and anything else as the API's error.
    async fn call<T: DeserializeOwned>(&self, request: reqwest::RequestBuilder) -> ClientResult<T> {
        let response = request.send().await.map_err(transport)?;
        let status = response.status();
        self.note_status(status, response.headers());
        let bytes = read_bounded(response, MAX_RESPONSE_BYTES).await?;
        decode(status, &bytes)
    }
}

/// Largest answer body the client reads (128 MiB: a block at the chain's bounds, 32 MiB of
/// transactions and their receipts, as JSON); a longer one is refused as
/// [`ClientError::Protocol`] before more of it is read, so a hostile or broken node cannot make
/// a client hold more.
pub const MAX_RESPONSE_BYTES: usize = 128 << 20;

/// The body of `response`, at most `max` bytes. Errors: the connection broke
/// ([`ClientError::Transport`]), the body is longer ([`ClientError::Protocol`]).
async fn read_bounded(mut response: reqwest::Response, max: usize) -> ClientResult<Vec<u8>> {
    let status = response.status().as_u16();
    let over = || ClientError::Protocol {
        status,
        message: format!("the answer is over {max} bytes"),
    };
    if response.content_length().is_some_and(|n| n > max as u64) {
        return Err(over());
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(transport)? {
        if body.len() + chunk.len() > max {
            return Err(over());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// How long a block subscription waits without hearing from the node (a block, a pong) before
/// it pings it, and then for an answer to the ping before it gives the connection up as dead
/// (20 s each): a connection dropped silently (a NAT, a proxy, a host gone) is noticed within
/// 40 s instead of never. Client policy only.
pub const KEEPALIVE: Duration = Duration::from_secs(20);

/// The node's block stream (`GET /v1/ws`), from [`Client::subscribe_blocks`].
pub struct BlockSubscription {
    feed: WsFeed,
}

impl BlockSubscription {
    fn new(ws: WsStream, keepalive: Duration) -> BlockSubscription {
        BlockSubscription {
            feed: WsFeed::new(ws, keepalive),
        }
    }

    /// Waits for the next block. `Ok(None)` once the node has closed the subscription (see
    /// [`BlockSubscription::close_reason`]: 1001 when it shuts down, 4000 when this client fell
    /// too far behind and should resume from `GET /v1/blocks/<height>`). After [`KEEPALIVE`]
    /// without a message it pings the node, and gives up [`KEEPALIVE`] later without one
    /// (the time counts across calls, so a caller that wraps `next` in its own shorter timeout
    /// still gets this). Errors: [`ClientError::Transport`] (connection lost, or silent past
    /// the keepalive), [`ClientError::Protocol`] (a message that is not a block).
    pub async fn next(&mut self) -> ClientResult<Option<Block>> {
        let Some(text) = self.feed.next_text("block feed").await? else {
            return Ok(None);
        };
        let parsed: BlockMessage =
            serde_json::from_str(&text).map_err(|e| ClientError::Protocol {
                status: 101,
                message: format!("not a block message: {e}"),
            })?;
        let BlockMessage::Block { block } = parsed;
        Ok(Some(block))
    }

    /// Why the node closed the subscription (close code and reason), once it has.
    pub fn close_reason(&self) -> Option<(u16, &str)> {
        self.feed.close_reason()
    }
}

/// A client WebSocket to the node.
pub(crate) type WsStream =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// The reading side of a node's WebSocket feed (`/v1/ws`, `/v1/ws/events`): text messages, the
/// close frame, and the [`KEEPALIVE`] pings that notice a dead connection.
pub(crate) struct WsFeed {
    ws: WsStream,
    closed: Option<(u16, String)>,
    /// [`KEEPALIVE`], or a test's.
    keepalive: Duration,
    /// When the node was last heard from.
    heard: tokio::time::Instant,
    /// When an unanswered ping was sent.
    pinged: Option<tokio::time::Instant>,
}

impl WsFeed {
    pub(crate) fn new(ws: WsStream, keepalive: Duration) -> WsFeed {
        WsFeed {
            ws,
            closed: None,
            keepalive,
            heard: tokio::time::Instant::now(),
            pinged: None,
        }
    }

    /// The next text message; `Ok(None)` once the node closed the feed (`close_reason`).
    /// Errors: [`ClientError::Transport`] (connection lost, or silent past the keepalive: the
    /// message names `what`).
    pub(crate) async fn next_text(&mut self, what: &str) -> ClientResult<Option<String>> {
        use futures_util::{SinkExt, StreamExt};
        use tokio_tungstenite::tungstenite::Message;
        loop {
            if self.closed.is_some() {
                return Ok(None);
            }
            let deadline = self.pinged.unwrap_or(self.heard) + self.keepalive;
            let message = match tokio::time::timeout_at(deadline, self.ws.next()).await {
                Err(_) if self.pinged.is_some() => {
                    return Err(ClientError::Transport(format!(
                        "the {what} went silent: no answer to a ping in {:?}",
                        self.keepalive
                    )))
                }
                Err(_) => {
                    self.pinged = Some(tokio::time::Instant::now());
                    self.ws
                        .send(Message::Ping(Vec::new().into()))
                        .await
                        .map_err(|e| ClientError::Transport(e.to_string()))?;
                    continue;
                }
                Ok(message) => message,
            };
            (self.heard, self.pinged) = (tokio::time::Instant::now(), None);
            let message = match message {
                None => {
                    self.closed = Some((1006, "connection closed without a close frame".into()));
                    continue;
                }
                Some(message) => message.map_err(|e| ClientError::Transport(e.to_string()))?,
            };
            match message {
                Message::Text(text) => return Ok(Some(text.as_str().to_string())),
                Message::Close(frame) => {
                    let (code, reason) = frame
                        .map(|f| (u16::from(f.code), f.reason.to_string()))
                        .unwrap_or((1005, String::new()));
                    self.closed = Some((code, reason));
                }
                // Pings are answered by the library; nothing else is sent by the node.
                _ => {}
            }
        }
    }

    /// Why the node closed the feed (close code and reason), once it has.
    pub(crate) fn close_reason(&self) -> Option<(u16, &str)> {
        self.closed
            .as_ref()
            .map(|(code, reason)| (*code, reason.as_str()))
    }
}

fn transport(e: reqwest::Error) -> ClientError {
    // reqwest's top-level message is generic ("error sending request"); the cause says why.
    let mut message = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    ClientError::Transport(message)
}

/// Decodes one answer: a 2xx body as `T`, else the API's error object.
fn decode<T: DeserializeOwned>(status: StatusCode, bytes: &[u8]) -> ClientResult<T> {
    if status.is_success() {
        return serde_json::from_slice(bytes).map_err(|e| ClientError::Protocol {
            status: status.as_u16(),
            message: format!("the body is not the JSON expected: {e}"),
        });
    }
    Err(decode_error(status.as_u16(), bytes))
}

/// The error of a non-2xx answer with `status` and body `bytes`: the API's error object, or
/// [`ClientError::Protocol`] for another body.
pub(crate) fn decode_error(status: u16, bytes: &[u8]) -> ClientError {
    match serde_json::from_slice::<ErrorAnswer>(bytes) {
        Ok(ErrorAnswer { error }) => ClientError::Api {
            status,
            code: error.code,
            message: error.message,
        },
        Err(_) => ClientError::Protocol {
            status,
            message: snippet(bytes),
        },
    }
}

/// The start of a body that is not the API's, for an error message.
fn snippet(bytes: &[u8]) -> String {
    const MAX: usize = 200;
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(MAX)]);
    if text.trim().is_empty() {
        "empty body".to_string()
    } else if bytes.len() > MAX {
        format!("{text}…")
    } else {
        text.into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_built_and_escaped() {
        let c = Client::new("http://127.0.0.1:8645/").unwrap();
        assert_eq!(
            c.url(&["v1", "account", "module:tictactoe"]).as_str(),
            "http://127.0.0.1:8645/v1/account/module:tictactoe"
        );
        assert_eq!(
            c.url(&["v1", "tx", "a/b?c"]).as_str(),
            "http://127.0.0.1:8645/v1/tx/a%2Fb%3Fc"
        );
        let prefixed = Client::new("http://example.test/chain").unwrap();
        assert_eq!(
            prefixed.url(&["v1", "status"]).as_str(),
            "http://example.test/chain/v1/status"
        );
        assert!(matches!(
            Client::new("https://x.test"),
            Err(ClientError::Usage(_))
        ));
        assert!(matches!(
            Client::new("127.0.0.1:8645"),
            Err(ClientError::Usage(_))
        ));
    }

    #[test]
    fn errors_decode_to_the_api_code_and_message() {
        let body = br#"{"error":{"code":"bad_nonce","message":"nonce 5, expected 3"}}"#;
        let err = decode::<Value>(StatusCode::CONFLICT, body).unwrap_err();
        assert_eq!(
            err,
            ClientError::Api {
                status: 409,
                code: "bad_nonce".into(),
                message: "nonce 5, expected 3".into()
            }
        );
        assert_eq!(err.to_string(), "bad_nonce: nonce 5, expected 3");
        assert_eq!(err.code(), Some("bad_nonce"));

        let err =
            decode::<Value>(StatusCode::BAD_GATEWAY, b"<html>bad gateway</html>").unwrap_err();
        assert_eq!(
            err,
            ClientError::Protocol {
                status: 502,
                message: "<html>bad gateway</html>".into()
            }
        );
        let err = decode::<Value>(StatusCode::INTERNAL_SERVER_ERROR, b"").unwrap_err();
        assert_eq!(err.to_string(), "unexpected answer (HTTP 500): empty body");
        let err = decode::<Status>(StatusCode::OK, br#"{"height": 1}"#).unwrap_err();
        assert!(
            matches!(err, ClientError::Protocol { status: 200, .. }),
            "{err}"
        );
    }

    #[test]
    fn api_md_examples_decode() {
        // A txid is checked against its body when read: "{}" hashes to this one.
        let txid = gamechain_chain::txid(b"{}");
        let tx: TxRecord = decode(
            StatusCode::OK,
            format!(
                r#"{{"txid":"{txid}","status":"included","body":"{{}}","signature":"s","height":12,"index":0,
                "receipt":{{"ok":false,"error":"invalid: cell is taken","events":[],"fuel_used":41234}}}}"#
            )
            .as_bytes(),
        )
        .unwrap();
        let TxStatus::Included {
            height,
            index,
            receipt,
        } = tx.status
        else {
            panic!("{tx:?}")
        };
        assert_eq!((height, index), (12, 0));
        assert_eq!(receipt.error.as_deref(), Some("invalid: cell is taken"));
        let pending: TxRecord = decode(
            StatusCode::OK,
            format!(
                r#"{{"txid":"{txid}","status":"pending","body":"{{}}","signature":"s","height":null,"index":null,"receipt":null}}"#
            )
            .as_bytes(),
        )
        .unwrap();
        assert_eq!(
            (pending.status, pending.tx.txid()),
            (TxStatus::Pending, txid.clone())
        );
        let forged = format!(
            r#"{{"txid":"{}","status":"pending","body":"{{}}","signature":"s","height":null,"index":null,"receipt":null}}"#,
            "0".repeat(64)
        );
        assert!(decode::<TxRecord>(StatusCode::OK, forged.as_bytes()).is_err());

        let account: Account = decode(
            StatusCode::OK,
            br#"{"account":"module:tictactoe","balances":{"GOLD":"200"},"nonce":2,"next_nonce":3}"#,
        )
        .unwrap();
        assert_eq!(
            (account.balance("GOLD"), account.balance("SILVER")),
            (gamechain_sdk::Amount(200), gamechain_sdk::Amount(0))
        );

        let zero = "0".repeat(64);
        let header = format!(
            r#"{{"height":1,"prev_hash":"{zero}","time_ms":5,"sequencer":"x",
              "checkpoint":{{"height":0,"hash":""}},"tx_root":"{zero}","receipt_root":"{zero}","state_root":"{zero}"}}"#
        );
        let hash = serde_json::from_str::<gamechain_chain::Header>(&header)
            .unwrap()
            .hash_hex();
        let block = format!(
            r#"{{"height":1,"hash":"{hash}","header":{header},
              "signature":"s","txs":[{{"txid":"{txid}","body":"{{}}","signature":"s","receipt":{{"ok":true,"error":null,"events":[],"fuel_used":0}}}}],
              "end_block":[]}}"#
        );
        let block: Block = decode(StatusCode::OK, block.as_bytes()).unwrap();
        assert_eq!((block.height(), block.txs.len()), (1, 1));
        // A block whose hash is not its header's is refused.
        let forged = block_json_with_hash(&block, &zero);
        assert!(decode::<Block>(StatusCode::OK, forged.as_bytes()).is_err());
    }

    fn block_json_with_hash(block: &Block, hash: &str) -> String {
        let mut value = serde_json::to_value(block).unwrap();
        value["hash"] = Value::String(hash.into());
        value.to_string()
    }

    #[test]
    fn block_refs_parse() {
        assert_eq!("latest".parse::<BlockRef>(), Ok(BlockRef::Latest));
        assert_eq!("12".parse::<BlockRef>(), Ok(BlockRef::Height(12)));
        assert!("-1".parse::<BlockRef>().is_err());
    }
}

#[cfg(test)]
mod keepalive_tests {
    use super::*;
    use futures_util::StreamExt;

    /// A WebSocket server on loopback that accepts one connection and hands it to `serve`.
    async fn server<F, Fut>(serve: F) -> std::net::SocketAddr
    where
        F: FnOnce(tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>) -> Fut
            + Send
            + 'static,
        Fut: std::future::Future<Output = ()> + Send,
    {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (tcp, _) = listener.accept().await.unwrap();
            let ws = tokio_tungstenite::accept_async(tcp).await.unwrap();
            serve(ws).await;
        });
        addr
    }

    async fn subscribe(addr: std::net::SocketAddr, keepalive: Duration) -> BlockSubscription {
        let (ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/v1/ws"))
            .await
            .unwrap();
        BlockSubscription::new(ws, keepalive)
    }

    #[tokio::test]
    async fn a_feed_that_goes_silent_is_given_up_after_a_ping() {
        // Holds the connection open and never reads it: no pong ever comes back.
        let addr = server(|ws| async move {
            tokio::time::sleep(Duration::from_secs(30)).await;
            drop(ws);
        })
        .await;
        let mut feed = subscribe(addr, Duration::from_millis(200)).await;
        let start = Instant::now();
        // A caller's own shorter timeouts do not reset the keepalive.
        let err = loop {
            match tokio::time::timeout(Duration::from_millis(50), feed.next()).await {
                Err(_) => continue,
                Ok(result) => break result.unwrap_err(),
            }
        };
        assert!(err.to_string().contains("went silent"), "{err}");
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
    }

    #[tokio::test]
    async fn a_quiet_feed_that_answers_pings_stays_open() {
        // Reads (so the library answers pings) but sends no block.
        let addr = server(|mut ws| async move { while let Some(Ok(_)) = ws.next().await {} }).await;
        let mut feed = subscribe(addr, Duration::from_millis(100)).await;
        let waited = tokio::time::timeout(Duration::from_millis(1_000), feed.next()).await;
        assert!(
            waited.is_err(),
            "the feed ended: {:?}",
            waited.map(|r| r.is_ok())
        );
    }
}
