//! The client's block subscription (`GET /v1/ws`) against an in-process node: every committed
//! block arrives once, in height order, equal to `GET /v1/blocks/<height>`, and a node shutdown
//! ends the stream with close code 1001.

use std::time::Duration;

use gamechain_client::client::BlockRef;
use gamechain_node::cli::local_node::LocalNode;
use gamechain_runtime::chain::{Action, Network, SecretKey};

const WAIT: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_block_stream_follows_the_chain_and_ends_at_shutdown() {
    // No empty blocks: only the transactions below make blocks.
    let config = gamechain_node::NodeConfig {
        block_interval_ms: 3_600_000,
        ..LocalNode::config()
    };
    let node = LocalNode::start_with(config)
        .await
        .expect("the in-process node starts");
    let client = node.client();
    let mut blocks = client.subscribe_blocks().await.unwrap();
    let start_height = client.status().await.unwrap().height;

    let mut sent = Vec::new();
    for _ in 0..3 {
        let key = SecretKey::generate(Network::Testnet);
        sent.push(
            client
                .send_and_wait(
                    &key,
                    Action::Faucet {
                        token: "GOLD".into(),
                    },
                    WAIT,
                )
                .await
                .unwrap(),
        );
    }
    for (n, included) in sent.iter().enumerate() {
        let block = tokio::time::timeout(WAIT, blocks.next())
            .await
            .expect("a block in time")
            .unwrap()
            .expect("open");
        assert_eq!(block.height(), start_height + 1 + n as u64);
        assert_eq!(block.height(), included.height);
        assert_eq!(
            block.txs.iter().map(|t| t.tx.txid()).collect::<Vec<_>>(),
            [included.txid.clone()]
        );
        assert_eq!(
            block,
            client
                .block(BlockRef::Height(block.height()))
                .await
                .unwrap()
        );
    }

    node.stop().await.expect("the node stops cleanly");
    let end = tokio::time::timeout(WAIT, blocks.next())
        .await
        .expect("the stream ends in time");
    assert!(matches!(end, Ok(None)), "{end:?}");
    assert_eq!(blocks.close_reason().map(|(code, _)| code), Some(1001));
}
