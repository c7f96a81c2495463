//! `gamechain demo` end to end: the reference live game (`docs/tictactoe.md`, "Live game") played over real HTTP against a node
//! started in-process on a fresh data directory. Every reference outcome is checked by the demo's
//! own checks (`gamechain_node::cli::demo_checks`), which stop the run at the first difference; this
//! test then checks the fresh-chain values (escrow 0 before and after) and the transcript's
//! shape line by line against the reference's.

use std::time::Duration;

use gamechain_node::cli::demo::{self, DemoOptions};
use gamechain_node::cli::local_node::LocalNode;
use gamechain_sdk::Amount;

/// The transcript's lines with the run's values blanked: `<addr>`, `<txid>`, `<h>`, `<id>`.
/// The reference run's lines are the same text with its own values.
const SEED_SHAPE: &[&str] = &[
    "alice <addr>",
    "bob   <addr>",
    "faucet alice: txid <txid> height <h> ok true",
    r#"   event faucet {"amount":"100000","to":"<addr>","token":"GOLD"}"#,
    "faucet bob: txid <txid> height <h> ok true",
    r#"   event faucet {"amount":"100000","to":"<addr>","token":"GOLD"}"#,
    "before: alice 100000 bob 100000 escrow 0",
    "create: txid <txid> height <h> ok true",
    r#"   event tictactoe.created {"id":"<id>","opponent":null,"stake":"100","x":"<addr>"}"#,
    "game id <id> == first 16 hex of the txid: true",
    r#"open tables: {"games":[{"board":".........","created_height":<h>,"id":"<id>","last_move_height":<h>,"moves":0,"o":null,"opponent":null,"reason":null,"result":null,"stake":"100","status":"open","turn":"x","winner":null,"x":"<addr>"}]}"#,
    "join bob: txid <txid> height <h> ok true",
    r#"   event tictactoe.joined {"id":"<id>","o":"<addr>"}"#,
    "move alice 0: txid <txid> height <h> ok true",
    r#"   event tictactoe.moved {"board":"x........","by":"<addr>","cell":0,"id":"<id>","turn":"o"}"#,
    r#"claim_timeout alice (too early): txid <txid> height <h> ok false error "invalid: timeout can be claimed from height <h>""#,
    "bob nonce before 2",
    r#"move bob 0 (taken): txid <txid> height <h> ok false error "invalid: cell is taken""#,
    "bob nonce after  3",
    "move bob 3: txid <txid> height <h> ok true",
    r#"   event tictactoe.moved {"board":"x..o.....","by":"<addr>","cell":3,"id":"<id>","turn":"x"}"#,
    "move alice 1: txid <txid> height <h> ok true",
    r#"   event tictactoe.moved {"board":"xx.o.....","by":"<addr>","cell":1,"id":"<id>","turn":"o"}"#,
    "move bob 4: txid <txid> height <h> ok true",
    r#"   event tictactoe.moved {"board":"xx.oo....","by":"<addr>","cell":4,"id":"<id>","turn":"x"}"#,
    "move alice 2: txid <txid> height <h> ok true",
    r#"   event tictactoe.moved {"board":"xxxoo....","by":"<addr>","cell":2,"id":"<id>","turn":"o"}"#,
    r#"   event tictactoe.finished {"id":"<id>","payout":"200","reason":"line","result":"x_won","winner":"<addr>"}"#,
    "after:  alice 100100 bob 99900 escrow 0",
    r#"game: {"board":"xxxoo....","created_height":<h>,"id":"<id>","last_move_height":<h>,"moves":5,"o":"<addr>","opponent":null,"reason":"line","result":"x_won","stake":"100","status":"finished","turn":"o","winner":"<addr>","x":"<addr>"}"#,
    "alice games: [ '<id>' ]",
    "bob games:   [ '<id>' ]",
];

/// `line` with this run's addresses, txids, game id and heights replaced by placeholders.
fn blank(line: &str, addresses: &[&str], id: &str) -> String {
    let mut out = line.to_string();
    for a in addresses {
        out = out.replace(a, "<addr>");
    }
    // Txids first (64 hex), then the game id (16 hex), then heights (runs of digits after
    // "height " or "_height\":").
    let words: Vec<String> = out.split(' ').map(str::to_string).collect();
    out = words
        .into_iter()
        .map(|w| {
            if w.len() == 64 && w.bytes().all(|b| b.is_ascii_hexdigit()) {
                "<txid>".to_string()
            } else {
                w
            }
        })
        .collect::<Vec<_>>()
        .join(" ");
    out = out.replace(id, "<id>");
    for marker in ["height ", "_height\":"] {
        let mut rebuilt = String::new();
        let mut rest = out.as_str();
        while let Some(at) = rest.find(marker) {
            let (head, tail) = rest.split_at(at + marker.len());
            rebuilt.push_str(head);
            let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
            if digits > 0 {
                rebuilt.push_str("<h>");
            }
            rest = &tail[digits..];
        }
        rebuilt.push_str(rest);
        out = rebuilt;
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_reproduces_every_seed_outcome_over_http() {
    let node = LocalNode::start()
        .await
        .expect("the in-process node starts");
    let options = DemoOptions {
        receipt_timeout: Duration::from_secs(30),
        ..DemoOptions::default()
    };
    let mut transcript = Vec::new();
    let played = demo::play(&node.client(), &options, &mut transcript).await;
    let text = String::from_utf8(transcript).unwrap();
    let outcome = played.unwrap_or_else(|e| panic!("{e}\ntranscript so far:\n{text}"));

    // A fresh chain: the escrow starts and ends empty (the demo checks it returns to where it
    // started, which on a shared node need not be 0).
    assert_eq!(outcome.before.escrow, Amount(0));
    assert_eq!(outcome.after.escrow, Amount(0));
    assert_eq!(
        outcome.steps.len(),
        11,
        "{:?}",
        outcome.steps.iter().map(|s| &s.label).collect::<Vec<_>>()
    );
    // Each transaction waits for its receipt before the next is sent: strictly rising heights.
    let heights: Vec<u64> = outcome.steps.iter().map(|s| s.height).collect();
    assert!(heights.windows(2).all(|w| w[0] < w[1]), "{heights:?}");

    let lines: Vec<String> = text
        .lines()
        .map(|l| {
            blank(
                l,
                &[outcome.alice.as_str(), outcome.bob.as_str()],
                &outcome.game_id,
            )
        })
        .collect();
    assert_eq!(lines, SEED_SHAPE, "transcript:\n{text}");

    // The claim height printed is the first move's height + 150.
    let moved_at = outcome.step("move alice 0").unwrap().height;
    assert!(
        text.contains(&format!("can be claimed from height {}\"", moved_at + 150)),
        "{text}"
    );
    node.stop().await.expect("the node stops cleanly");
}

#[test]
fn blanking_turns_the_seed_transcript_into_its_shape() {
    // Lines of the reference run's own transcript blank to the same shape.
    let alice = "xxURsC5wFbNzCrKzzQjeTqkLfEoZT6Y8F7";
    let bob = "xysuzCS9FmeSvPjxZHcZXkK8cwj9iEQBki";
    let id = "80566b04265ced78";
    let seed = [
        (
            r#"claim_timeout alice (too early): txid 253f2f7aea1c5d0c5c3f8fcc0509687b95935674f0fd7a1781e3acf1b6fcee17 height 1415 ok false error "invalid: timeout can be claimed from height 1564""#,
            15,
        ),
        (
            r#"game: {"board":"xxxoo....","created_height":1412,"id":"80566b04265ced78","last_move_height":1420,"moves":5,"o":"xysuzCS9FmeSvPjxZHcZXkK8cwj9iEQBki","opponent":null,"reason":"line","result":"x_won","stake":"100","status":"finished","turn":"o","winner":"xxURsC5wFbNzCrKzzQjeTqkLfEoZT6Y8F7","x":"xxURsC5wFbNzCrKzzQjeTqkLfEoZT6Y8F7"}"#,
            29,
        ),
        ("alice games: [ '80566b04265ced78' ]", 30),
    ];
    for (line, index) in seed {
        assert_eq!(blank(line, &[alice, bob], id), SEED_SHAPE[index]);
    }
}
