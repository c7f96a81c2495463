//! A chain with fees, end to end on the real binary: a node started with a `[fees]` table writes
//! it into `genesis.json`, refuses a sender who cannot pay the minimum (`402 cannot_pay_fee`)
//! but not a faucet call from a new key, charges every included transaction (ok and failed)
//! the fee its receipt shows, credits the collector with their sum, and `gamechain verify`
//! replays the chain to the same state root.

use std::time::Duration;

use crate::common::replay::{verify_json, workload};
use crate::common::NodeProcess;
use gamechain_client::client::{BlockRef, ClientError};
use gamechain_runtime::chain::{Action, Network, SecretKey};
use gamechain_sdk::Amount;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_with_fees_charges_refuses_and_replays() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let collector = SecretKey::generate(Network::Testnet).address();
    let mut node = NodeProcess::new(
        dir,
        &format!(
            "block_interval_ms = 200\n[fees]\ncollector = \"{collector}\"\ntx_micro = \"3000000\"\n\
             fuel_micro = \"50\"\nwrite_byte_micro = \"2000\"\nevent_byte_micro = \"1000\"\n"
        ),
    );
    node.start().await;
    let client = node.client();
    let genesis = client.genesis().await.unwrap();
    assert_eq!(genesis["fees"]["collector"], collector.as_str());
    assert_eq!(genesis["fees"]["tx_micro"], "3000000");

    // A key with no GOLD: refused at admission, naming its balance and the minimum (3).
    let broke = SecretKey::generate(Network::Testnet);
    let pay = |to: &str| Action::Transfer {
        to: to.to_string(),
        token: "GOLD".into(),
        amount: Amount(1),
    };
    match client.send(&broke, pay(&collector)).await {
        Err(ClientError::Api {
            status,
            code,
            message,
        }) => {
            assert_eq!((status, code.as_str()), (402, "cannot_pay_fee"));
            assert!(
                message.contains("holds 0") && message.contains("minimum fee of 3"),
                "{message}"
            );
        }
        other => panic!("expected 402 cannot_pay_fee, got {other:?}"),
    }
    // The faucet is never refused so: it pays first, then its fee is taken.
    let faucet = client
        .send_and_wait(
            &broke,
            Action::Faucet {
                token: "GOLD".into(),
            },
            Duration::from_secs(30),
        )
        .await
        .unwrap();
    assert!(faucet.receipt.ok);
    let faucet_fee = faucet.receipt.fee.0;
    assert!(faucet_fee >= 3, "{:?}", faucet.receipt);
    let account = client.account(&broke.address()).await.unwrap();
    assert_eq!(account.balances["GOLD"].0, 100_000 - faucet_fee);

    // Games (ok, failed and out-of-turn moves, stakes, transfers), then every receipt's fee.
    workload(&client, 3).await;
    let head = client
        .block(BlockRef::Latest)
        .await
        .unwrap()
        .header
        .header
        .height;
    let (mut fees, mut txs, mut failed_paid) = (0u128, 0, 0);
    for h in 1..=head {
        let block = client.block(BlockRef::Height(h)).await.unwrap();
        for t in &block.txs {
            let r = &t.receipt;
            assert!(
                r.fee.0 >= 3,
                "every transaction pays at least the minimum: {r:?}"
            );
            if !r.ok {
                failed_paid += 1;
            }
            fees += r.fee.0;
            txs += 1;
        }
    }
    assert!(
        failed_paid >= 3,
        "failed transactions pay too ({failed_paid})"
    );
    let collected = client.account(&collector).await.unwrap();
    assert_eq!(
        collected.balances["GOLD"].0, fees,
        "the collector holds every fee"
    );
    eprintln!("{txs} transactions paid {fees} base units of fees");

    // Replay from the data directory reaches the node's state root.
    assert!(node.terminate(Duration::from_secs(20)).success());
    let data = dir.join("data");
    let (code, report) = verify_json(dir, &["--data", data.to_str().unwrap()]).await;
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["result"], "verified");
    assert_eq!(report["head_height"], head);
}
