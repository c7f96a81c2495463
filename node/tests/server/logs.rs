//! The sequencer's log at info level on the real binary, with 100 ms blocks: an empty block
//! is not a line of its own (debug level), a block with transactions is, and a summary line
//! (height, blocks and transactions since the last one, mempool size) comes every
//! `log_summary_secs`.

use std::time::Duration;

use crate::common::NodeProcess;
use gamechain_runtime::chain::{Action, Network, SecretKey};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_blocks_are_summed_up_not_logged_one_by_one() {
    let tmp = tempfile::tempdir().unwrap();
    let mut node = NodeProcess::new(tmp.path(), "block_interval_ms = 100\nlog_summary_secs = 1");
    node.start().await;
    let client = node.client();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let key = SecretKey::generate(Network::Testnet);
    let included = client
        .send_and_wait(
            &key,
            Action::Faucet {
                token: "GOLD".into(),
            },
            Duration::from_secs(30),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert!(node.terminate(Duration::from_secs(20)).success());
    let log = node.log();
    assert!(included.height >= 10, "{log}");
    let committed: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("block committed"))
        .collect();
    // Only the block with the transaction, out of more than ten.
    assert_eq!(committed.len(), 1, "{log}");
    assert!(
        committed[0].contains(&format!("height={}", included.height))
            && committed[0].contains("txs=1"),
        "{log}"
    );
    let summaries: Vec<&str> = log.lines().filter(|l| l.contains("summary:")).collect();
    assert!(summaries.len() >= 2, "{log}");
    assert!(
        summaries.iter().all(|l| l.contains(" INFO ")
            && l.contains("height=")
            && l.contains("blocks=")
            && l.contains("txs=")
            && l.contains("mempool=")),
        "{log}"
    );
    // The transaction is counted in the summary after it.
    assert!(summaries.iter().any(|l| l.contains("txs=1")), "{log}");
}
