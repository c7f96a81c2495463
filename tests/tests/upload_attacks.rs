//! Uploads built to stall a node, deployed to a running node while another client keeps
//! sending transactions and a third polls `/v1/status`: each compile bomb (`runtime/tests/
//! bombs/`: locals live across thousands of nested loops, 200,000 nested `if`s) is admitted,
//! included and played, a module over a validation limit is refused at admission with its
//! fixed text, and meanwhile blocks keep coming and the API keeps answering. Deploys are compiled
//! at admission (Winch for uploads, linear in size), never on the sequencer's thread.
//!
//! The figures (slowest transaction's submit→included time, slowest status answer, blocks
//! made) are printed; the assertions use bounds far above them (ten times or more), so a busy
//! machine does not fail the test but a stalled sequencer (minutes, before this change) does.

#[path = "../../runtime/tests/bombs/mod.rs"]
mod bombs;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use gamechain_client::ClientError;
use gamechain_node::cli::local_node::LocalNode;
use gamechain_runtime::chain::{Action, Network, SecretKey};
use gamechain_tests::send_included as send;
use serde_json::json;

/// A transfer must be included within this while uploads compile (a stalled sequencer took
/// 64 s to minutes).
const MAX_INCLUSION: Duration = Duration::from_secs(5);
/// `/v1/status` must answer within this throughout.
const MAX_STATUS: Duration = Duration::from_secs(1);
/// The test process's peak resident memory, MiB (node, clients and test harness together; a
/// Cranelift compile of the largest bomb alone took 7.8 GB).
const MAX_PEAK_MIB: u64 = 1024;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compile_bombs_never_stall_blocks_or_the_api() {
    let node = LocalNode::start()
        .await
        .expect("the in-process node starts");
    let client = node.client();
    let author = SecretKey::generate(Network::Testnet);
    let sender = SecretKey::generate(Network::Testnet);
    let faucet = Action::Faucet {
        token: "GOLD".into(),
    };
    assert!(send(&client, &sender, faucet).await.receipt.ok);
    let done = Arc::new(AtomicBool::new(false));

    // Another client: one transfer at a time, each waited for.
    let traffic = {
        let (client, done) = (node.client(), done.clone());
        let to = SecretKey::generate(Network::Testnet).address();
        tokio::spawn(async move {
            let (mut slowest, mut sent) = (Duration::ZERO, 0u32);
            while !done.load(Ordering::Relaxed) {
                let t = Instant::now();
                let transfer = Action::Transfer {
                    to: to.clone(),
                    token: "GOLD".into(),
                    amount: gamechain_sdk::Amount(1),
                };
                let included = send(&client, &sender, transfer).await;
                assert!(included.receipt.ok, "{:?}", included.receipt.error);
                slowest = slowest.max(t.elapsed());
                sent += 1;
            }
            (slowest, sent)
        })
    };
    // A third: the status endpoint every 50 ms.
    let poller = {
        let (client, done) = (node.client(), done.clone());
        tokio::spawn(async move {
            let mut slowest = Duration::ZERO;
            let (mut first, mut last) = (None, 0);
            while !done.load(Ordering::Relaxed) {
                let t = Instant::now();
                let status = client.status().await.expect("status answers");
                slowest = slowest.max(t.elapsed());
                first.get_or_insert(status.height);
                last = status.height;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            (slowest, last - first.unwrap_or(last))
        })
    };

    let started = Instant::now();
    let bombs = [
        bombs::locals_x_loops(1000, 200),
        bombs::locals_x_loops(100, 1000),
        bombs::locals_x_loops(1000, 5000),
        bombs::nested_ifs(200_000),
    ];
    for (i, bomb) in bombs.iter().enumerate() {
        let id = format!("bomb{i}");
        let deploy = Action::deploy(id.clone(), bomb.wasm());
        let included = send(&client, &author, deploy).await;
        assert!(
            included.receipt.ok,
            "{}: {:?}",
            bomb.name, included.receipt.error
        );
        let play = send(&client, &author, Action::game(&id, &json!({}))).await;
        assert!(play.receipt.ok, "{}: {:?}", bomb.name, play.receipt.error);
    }
    // Over a validation limit: refused at admission with the rule's text, never in a block.
    let refused = Action::deploy("refused", bombs::locals_x_loops(1100, 2).wasm());
    match client.send(&author, refused).await {
        Err(ClientError::Api { code, message, .. }) => {
            assert_eq!(code, "module_refused");
            assert_eq!(
                message,
                "module code: function 4 has 1100 locals, the limit is 1024"
            );
        }
        other => panic!("a module over a limit must be refused at admission: {other:?}"),
    }
    let elapsed = started.elapsed();
    // The peak resident memory of this process (node and clients), from the kernel.
    let peak_mib = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmHWM:"))?.to_string();
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map(|kib| kib / 1024);
    done.store(true, Ordering::Relaxed);
    let (slowest_tx, sent) = traffic.await.unwrap();
    let (slowest_status, blocks) = poller.await.unwrap();
    println!(
        "uploads: {} bombs deployed and played in {:.2} s; meanwhile {sent} transfers (slowest \
         submit->included {:.0} ms), {blocks} blocks, slowest /v1/status {:.0} ms, peak RSS \
         {peak_mib:?} MiB",
        bombs.len(),
        elapsed.as_secs_f64(),
        slowest_tx.as_secs_f64() * 1e3,
        slowest_status.as_secs_f64() * 1e3
    );
    assert!(sent > 0 && blocks > 0);
    assert!(
        slowest_tx < MAX_INCLUSION,
        "a transfer waited {slowest_tx:?}"
    );
    assert!(
        slowest_status < MAX_STATUS,
        "status took {slowest_status:?}"
    );
    if let Some(peak) = peak_mib {
        assert!(peak < MAX_PEAK_MIB, "peak RSS {peak} MiB");
    }
    node.stop().await.expect("a clean stop");
}
