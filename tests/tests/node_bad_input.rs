//! Bad input over real HTTP against an in-process node: each bad request gets the code and the
//! status `node/API.md` documents, changes nothing (height, head, state root, the sender's
//! nonces and balance, the mempool), and the node keeps serving afterwards.
//!
//! The node makes a block only when a transaction arrives (its empty-block interval is an
//! hour here), so an unchanged height and state root really mean nothing was accepted.

use std::time::Duration;

use gamechain_client::client::{Account, Client, ClientError, Status};
use gamechain_node::cli::local_node::LocalNode;
use gamechain_runtime::chain::{sign_message, Action, Network, SecretKey, SignedTx, TxBody};
use gamechain_sdk::Amount;
use serde_json::json;

const WAIT: Duration = Duration::from_secs(30);

/// What a refused request must leave as it was.
#[derive(Debug, PartialEq)]
struct Snapshot {
    height: u64,
    head_hash: String,
    state_root: String,
    pending: u64,
    sender: Account,
}

async fn snapshot(client: &Client, sender: &str) -> Snapshot {
    let Status {
        height,
        head_hash,
        state_root,
        pending,
        ..
    } = client.status().await.unwrap();
    Snapshot {
        height,
        head_hash,
        state_root,
        pending,
        sender: client.account(sender).await.unwrap(),
    }
}

/// Asserts `result` is the API error `code` with HTTP `status`.
fn assert_refused<T: std::fmt::Debug>(
    what: &str,
    result: Result<T, ClientError>,
    code: &str,
    status: u16,
) {
    match result {
        Err(ClientError::Api {
            status: s,
            code: c,
            message,
        }) => {
            assert_eq!((c.as_str(), s), (code, status), "{what}: {message}");
            assert!(!message.is_empty(), "{what}: empty message");
        }
        other => panic!("{what}: expected {status} {code}, got {other:?}"),
    }
}

/// Asserts `result` is an API error whose message is exactly `message`.
fn assert_message<T: std::fmt::Debug>(result: &Result<T, ClientError>, message: &str) {
    match result {
        Err(ClientError::Api { message: m, .. }) => assert_eq!(m, message),
        other => panic!("expected an API error saying {message:?}, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_their_code_and_change_nothing() {
    let config = gamechain_node::NodeConfig {
        block_interval_ms: 3_600_000,
        ..LocalNode::config()
    };
    let node = LocalNode::start_with(config)
        .await
        .expect("the in-process node starts");
    let client = node.client();
    let chain_id = client.chain_id().await.unwrap();
    let key = SecretKey::generate(Network::Testnet);
    let other = SecretKey::generate(Network::Testnet);
    let faucet = client
        .send_and_wait(
            &key,
            Action::Faucet {
                token: "GOLD".into(),
            },
            WAIT,
        )
        .await
        .unwrap();
    assert!(faucet.receipt.ok, "{:?}", faucet.receipt);
    let included_faucet = client.tx(&faucet.txid).await.unwrap();
    let body = |nonce: u64, action: Action| TxBody {
        chain_id: chain_id.clone(),
        from: key.address(),
        nonce,
        action,
    };
    let transfer = |amount: u128| Action::Transfer {
        to: other.address(),
        token: "GOLD".into(),
        amount: Amount(amount),
    };

    let before = snapshot(&client, &key.address()).await;
    assert_eq!(
        (
            before.sender.nonce,
            before.sender.next_nonce,
            before.pending
        ),
        (1, 1, 0)
    );
    assert_eq!(before.sender.balance("GOLD"), Amount(100_000));

    // A signature by another key.
    let forged = body(1, transfer(5)).sign(&key);
    let forged = SignedTx::new(
        forged.body().to_string(),
        sign_message(&other, forged.body()),
    );
    assert_refused(
        "bad signature",
        client.post_tx(&forged).await,
        "bad_signature",
        401,
    );
    let garbage = SignedTx::new(
        body(1, transfer(5)).sign(&key).body().to_string(),
        "AAAA".into(),
    );
    assert_refused(
        "garbage signature",
        client.post_tx(&garbage).await,
        "bad_signature",
        401,
    );

    // Another chain's id, correctly signed.
    let foreign = TxBody {
        chain_id: format!("{chain_id}-other"),
        ..body(1, transfer(5))
    };
    assert_refused(
        "wrong chain",
        client.post_tx(&foreign.sign(&key)).await,
        "wrong_chain",
        400,
    );

    // A mainnet sender on this testnet chain.
    let mainnet = SecretKey::generate(Network::Mainnet);
    let wrong_network = TxBody {
        from: mainnet.address(),
        ..body(1, transfer(5))
    };
    assert_refused(
        "mainnet sender",
        client.post_tx(&wrong_network.sign(&mainnet)).await,
        "bad_address",
        400,
    );

    // Replays: the included faucet transaction byte for byte, and a new body at the used nonce.
    let replay = included_faucet.tx.clone();
    assert_refused(
        "replayed transaction",
        client.post_tx(&replay).await,
        "duplicate",
        409,
    );
    assert_refused(
        "replayed nonce",
        client.post_tx(&body(0, transfer(5)).sign(&key)).await,
        "bad_nonce",
        409,
    );

    // A nonce from the future; the message names the expected one.
    let future = client.post_tx(&body(6, transfer(5)).sign(&key)).await;
    match &future {
        Err(ClientError::Api { message, .. }) => {
            assert!(message.contains("expected 1"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    assert_refused("future nonce", future, "bad_nonce", 409);

    // Malformed JSON: the request, and a well-formed request whose body is not a body.
    for (what, bytes) in [
        ("not JSON", b"{\"body\": ".to_vec()),
        ("empty", Vec::new()),
        (
            "unknown field",
            serde_json::to_vec(&json!({"body": "{}", "signature": "x", "txid": "y"})).unwrap(),
        ),
        ("a JSON array", b"[1, 2]".to_vec()),
    ] {
        assert_refused(what, client.post_tx_bytes(bytes).await, "bad_json", 400);
    }
    let text = format!(
        r#"{{"chain_id":"{chain_id}","from":"{}","nonce":"one","action":{{"type":"faucet","token":"GOLD"}}}}"#,
        key.address()
    );
    let signature = sign_message(&key, &text);
    let bad_body = SignedTx::new(text, signature);
    assert_refused(
        "a body of the wrong shape",
        client.post_tx(&bad_body).await,
        "bad_json",
        400,
    );

    // Over the request limit of POST /v1/tx (room for a deploy's 1.5 MiB body).
    let mut huge = serde_json::to_vec(&body(1, transfer(5)).sign(&key)).unwrap();
    huge.extend(std::iter::repeat_n(
        b' ',
        gamechain_node::server::api::MAX_TX_REQUEST_BYTES,
    ));
    let oversize = client.post_tx_bytes(huge).await;
    assert_message(
        &oversize,
        &format!(
            "the request body is more than {} bytes (the limit for POST /v1/tx)",
            gamechain_node::server::api::MAX_TX_REQUEST_BYTES
        ),
    );
    assert_refused("oversize request", oversize, "too_large", 413);
    // A deploy whose code is one byte over MAX_CODE_BYTES (its body is under the body limit):
    // too_large too, in our words, without serde's line and column.
    let code_over = body(
        1,
        Action::deploy("big", vec![0; gamechain_runtime::chain::MAX_CODE_BYTES + 1]),
    )
    .sign(&key);
    let code_over = client.post_tx(&code_over).await;
    assert_message(
        &code_over,
        "a deploy's code is 1048577 bytes, the limit is 1048576 (MAX_CODE_BYTES)",
    );
    assert_refused("oversize code", code_over, "too_large", 413);

    // Unknown transactions, blocks and paths.
    assert_refused(
        "unknown txid",
        client.tx(&"0f".repeat(32)).await,
        "not_found",
        404,
    );
    assert_refused("not a txid", client.tx("nope").await, "not_found", 404);
    assert_refused(
        "block above the head",
        client
            .block(gamechain_client::client::BlockRef::Height(
                before.height + 100,
            ))
            .await,
        "not_found",
        404,
    );
    assert_refused(
        "bad account",
        client.account("not-an-address").await,
        "bad_address",
        400,
    );

    assert_eq!(
        snapshot(&client, &key.address()).await,
        before,
        "a refused request changed something"
    );

    // The node still serves: a good transaction at the expected nonce goes through.
    let sent = client
        .send_and_wait(&key, transfer(250), WAIT)
        .await
        .unwrap();
    assert!(sent.receipt.ok, "{:?}", sent.receipt);
    let after = snapshot(&client, &key.address()).await;
    assert_eq!((after.height, after.sender.nonce), (before.height + 1, 2));
    assert_eq!(after.sender.balance("GOLD"), Amount(100_000 - 250));
    assert_eq!(
        client
            .account(&other.address())
            .await
            .unwrap()
            .balance("GOLD"),
        Amount(250)
    );
    node.stop().await.expect("the node stops cleanly");
}

/// Sends `request` as raw bytes to `addr` on a new connection (a blocking TCP client, so
/// oversized and malformed requests reach the node exactly as written) and returns the status
/// and the body parsed as JSON. Write errors are ignored: the node may answer and close before
/// it has read an oversized request.
async fn raw(addr: std::net::SocketAddr, request: Vec<u8>) -> (u16, serde_json::Value) {
    tokio::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(WAIT)).unwrap();
        let mut reader = stream.try_clone().unwrap();
        let writer = std::thread::spawn(move || {
            let _ = stream.write_all(&request);
        });
        let mut answer = Vec::new();
        let mut chunk = [0u8; 8192];
        // Read up to the end of the answer's body (content-length), or the connection's end.
        loop {
            match reader.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => answer.extend_from_slice(&chunk[..n]),
            }
            let text = String::from_utf8_lossy(&answer).to_string();
            if let Some((head, body)) = text.split_once("\r\n\r\n") {
                let length = head
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length: ")
                            .map(|v| v.trim().parse::<usize>().unwrap())
                    })
                    .unwrap_or(usize::MAX);
                if body.len() >= length {
                    break;
                }
            }
        }
        let _ = writer.join();
        let text = String::from_utf8_lossy(&answer).to_string();
        let (head, body) = text
            .split_once("\r\n\r\n")
            .unwrap_or_else(|| panic!("no HTTP answer: {text:?}"));
        let status = head
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no status: {head}"));
        let json = serde_json::from_str(body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {head}\r\n\r\n{body:?}"));
        (status, json)
    })
    .await
    .unwrap()
}

/// Asserts an answer is `{"error": {"code": code, "message": <not empty>}}` with `status`.
fn assert_json_error(what: &str, (status, body): &(u16, serde_json::Value), code: &str, want: u16) {
    assert_eq!(
        (*status, body["error"]["code"].as_str()),
        (want, Some(code)),
        "{what}: {body}"
    );
    let message = body["error"]["message"].as_str().unwrap_or("");
    assert!(!message.is_empty(), "{what}: no message in {body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_answer_is_the_apis_json() {
    let config = gamechain_node::NodeConfig {
        block_interval_ms: 3_600_000,
        ..LocalNode::config()
    };
    let node = LocalNode::start_with(config)
        .await
        .expect("the in-process node starts");
    let addr = node.addr();
    let client = node.client();
    let get = |target: &str, headers: &str| {
        format!("GET {target} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n{headers}\r\n")
            .into_bytes()
    };

    // hyper's own answers: a URI over 64 KiB, a header section over its buffer, too many
    // headers, a request line it cannot parse.
    let long_query = format!("/v1/games/tictactoe?open=1&x={}", "a".repeat(100 << 10));
    let answer = raw(addr, get(&long_query, "")).await;
    assert_json_error("100 KB query", &answer, "too_large", 414);
    let big_header = format!("x-big: {}\r\n", "b".repeat(1 << 20));
    let answer = raw(addr, get("/v1/status", &big_header)).await;
    assert_json_error("1 MB header", &answer, "too_large", 431);
    let many: String = (0..200).map(|i| format!("x-h{i}: 1\r\n")).collect();
    let answer = raw(addr, get("/v1/status", &many)).await;
    assert_json_error("200 headers", &answer, "too_large", 431);
    let answer = raw(addr, b"GET\x01 / HTTP/1.1\r\n\r\n".to_vec()).await;
    assert_json_error("garbage request line", &answer, "invalid", 400);

    // Ours: a wrong method, a body over the limit of another endpoint, an unknown path.
    let answer = raw(
        addr,
        b"DELETE /v1/status HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n".to_vec(),
    )
    .await;
    assert_json_error("DELETE", &answer, "not_found", 405);
    let answer = raw(addr, get("/nope", "")).await;
    assert_json_error("unknown path", &answer, "not_found", 404);

    // A query that is not UTF-8 once decoded is refused, not read as U+FFFD.
    let answer = raw(addr, get("/v1/games/tictactoe?id=%ff", "")).await;
    assert_json_error("%ff", &answer, "invalid", 400);
    assert!(
        answer.1["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not UTF-8"),
        "{}",
        answer.1
    );
    // A bare key (`?open`) is a key with an empty value, as before.
    let open = raw(addr, get("/v1/games/tictactoe?open", "")).await;
    assert_eq!(open.0, 200, "{}", open.1);

    // POST /v1/tx wants `content-type: application/json`; without it nothing is admitted.
    let chain_id = client.chain_id().await.unwrap();
    let key = SecretKey::generate(Network::Testnet);
    let tx = TxBody {
        chain_id: chain_id.clone(),
        from: key.address(),
        nonce: 0,
        action: Action::Faucet {
            token: "GOLD".into(),
        },
    }
    .sign(&key);
    let json = serde_json::to_string(&tx).unwrap();
    let post = |content_type: &str| {
        format!(
            "POST /v1/tx HTTP/1.1\r\nhost: x\r\nconnection: close\r\n{content_type}content-length: {}\r\n\r\n{json}",
            json.len()
        )
        .into_bytes()
    };
    let before = snapshot(&client, &key.address()).await;
    let answer = raw(addr, post("")).await;
    assert_json_error("no content-type", &answer, "bad_content_type", 415);
    let answer = raw(addr, post("content-type: text/plain\r\n")).await;
    assert_json_error("text/plain", &answer, "bad_content_type", 415);
    assert_eq!(snapshot(&client, &key.address()).await, before);
    let answer = raw(
        addr,
        post("content-type: Application/JSON; charset=utf-8\r\n"),
    )
    .await;
    assert_eq!(answer.0, 200, "{}", answer.1);
    client.wait_for_receipt(&tx.txid(), WAIT).await.unwrap();

    // A transfer to a module's escrow account is refused at admission, its nonce unused.
    let before = snapshot(&client, &key.address()).await;
    let to_escrow = TxBody {
        chain_id,
        from: key.address(),
        nonce: 1,
        action: Action::Transfer {
            to: "module:tictactoe".into(),
            token: "GOLD".into(),
            amount: Amount(5),
        },
    }
    .sign(&key);
    let refused = client.post_tx(&to_escrow).await;
    assert_message(
        &refused,
        "`module:tictactoe` is a module's escrow account; escrow accounts cannot receive \
         transfers (a module moves stakes into its escrow itself)",
    );
    assert_refused("to escrow", refused, "escrow_recipient", 400);
    assert_eq!(snapshot(&client, &key.address()).await, before);

    // The node still serves.
    assert_eq!(client.status().await.unwrap().height, before.height);
    node.stop().await.expect("the node stops cleanly");
}

/// A client that never finishes its request head (trickling a header line every 300 ms) is
/// cut off after `idle_timeout_secs`; a WebSocket subscriber that only listens is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_head_that_never_ends_is_cut_off_but_subscribers_stay() {
    let config = gamechain_node::NodeConfig {
        block_interval_ms: 3_600_000,
        idle_timeout_secs: 1,
        ..LocalNode::config()
    };
    let node = LocalNode::start_with(config)
        .await
        .expect("the in-process node starts");
    let addr = node.addr();
    let client = node.client();
    let mut blocks = client.subscribe_blocks().await.unwrap();

    let cut_after = tokio::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        let start = std::time::Instant::now();
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        stream
            .write_all(b"GET /v1/status HTTP/1.1\r\nhost: x\r\n")
            .unwrap();
        stream
            .set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        let mut byte = [0u8; 1];
        for i in 0..100 {
            // Closed by the node: a failed write, the end of the stream, or a reset.
            if stream
                .write_all(format!("x-{i}: 1\r\n").as_bytes())
                .is_err()
            {
                return start.elapsed();
            }
            match stream.read(&mut byte) {
                Ok(0) => return start.elapsed(),
                Ok(_) => panic!("the node answered an unfinished request head"),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => return start.elapsed(),
            }
        }
        panic!("the connection was still open after 30 s");
    })
    .await
    .unwrap();
    assert!(cut_after < Duration::from_secs(5), "{cut_after:?}");

    // The subscription has been idle for more than a second, and still gets the next block.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let key = SecretKey::generate(Network::Testnet);
    let sent = client
        .send_and_wait(
            &key,
            Action::Faucet {
                token: "GOLD".into(),
            },
            WAIT,
        )
        .await
        .unwrap();
    let block = tokio::time::timeout(WAIT, blocks.next())
        .await
        .expect("the subscriber gets the block")
        .unwrap()
        .expect("the subscription is open");
    assert_eq!(block.height(), sent.height);
    node.stop().await.expect("the node stops cleanly");
}
