//! `gamechain demo`: the reference live game (`docs/tictactoe.md`, "Live game")
//! played through the HTTP API with real keys and signatures, printed line by line like the
//! reference transcript, and checked against the reference outcomes as it goes ([`crate::cli::demo_checks`]).
//!
//! [`play`] is the game itself against any node; [`run`] also starts a node in-process on a
//! fresh temporary data directory when no node URL is given ([`crate::cli::local_node`]).

pub mod demo_checks;

use std::fmt;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use gamechain_runtime::chain::{Action, Network, Receipt, SecretKey};
use gamechain_sdk::Amount;
use serde_json::{json, Value};

use crate::cli::demo_checks::{
    self as seed, expect_eq, Balances, ExpectedReceipt, Mismatch, MODULE,
};
use crate::cli::local_node::LocalNode;
use gamechain_chain::key_file::write_key_file;
use gamechain_client::client::{Client, ClientError};

/// How long the demo waits for one transaction's receipt by default (the reference script waited
/// 90 s on the live chain; a local node answers in well under a second).
pub const DEFAULT_RECEIPT_TIMEOUT: Duration = Duration::from_secs(60);

/// Options of [`run`] and [`play`].
#[derive(Debug, Clone)]
pub struct DemoOptions {
    /// The node to play on; `None` starts one in-process.
    pub node: Option<String>,
    /// Where to write `alice.wif` and `bob.wif` (mode 0600); `None` keeps the keys in memory.
    pub keys_dir: Option<PathBuf>,
    /// How long to wait for each receipt.
    pub receipt_timeout: Duration,
}

impl Default for DemoOptions {
    fn default() -> Self {
        Self {
            node: None,
            keys_dir: None,
            receipt_timeout: DEFAULT_RECEIPT_TIMEOUT,
        }
    }
}

/// Why the demo stopped.
#[derive(Debug)]
pub enum DemoError {
    /// An outcome differs from the reference game's (the first one found).
    Mismatch(Mismatch),
    /// A request failed at `step`.
    Client {
        /// The step (the transcript label, or what was being read).
        step: String,
        /// What failed.
        error: ClientError,
    },
    /// The in-process node could not start, a key file could not be written, or the output
    /// could not be written.
    Setup(String),
}

impl fmt::Display for DemoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DemoError::Mismatch(m) => write!(f, "demo: {m}"),
            DemoError::Client { step, error } => write!(f, "demo: {step}: {error}"),
            DemoError::Setup(m) => write!(f, "demo: {m}"),
        }
    }
}

impl std::error::Error for DemoError {}

impl From<Mismatch> for DemoError {
    fn from(m: Mismatch) -> Self {
        DemoError::Mismatch(m)
    }
}

/// One transaction of the game and what the chain made of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The transcript label (`move bob 0 (taken)`).
    pub label: String,
    /// The txid.
    pub txid: String,
    /// The block it is in.
    pub height: u64,
    /// Its receipt.
    pub receipt: Receipt,
}

/// Everything a finished demo observed (all of it already checked against the reference game).
#[derive(Debug, Clone, PartialEq)]
pub struct DemoOutcome {
    /// Alice's address (plays `x`).
    pub alice: String,
    /// Bob's address (plays `o`).
    pub bob: String,
    /// The game id (first 16 hex of the create txid).
    pub game_id: String,
    /// Every transaction, in the order sent.
    pub steps: Vec<Step>,
    /// Balances after both faucet calls.
    pub before: Balances,
    /// Balances after the win.
    pub after: Balances,
    /// `?open=1` between create and join.
    pub open_before_join: Value,
    /// `?open=1` after the join.
    pub open_after_join: Value,
    /// Bob's included-transaction count before and after his move on the taken cell.
    pub bob_nonce: (u64, u64),
    /// `?id=<game id>` at the end.
    pub game: Value,
    /// Game ids of `?player=<alice>` and `?player=<bob>` at the end.
    pub player_games: (Vec<String>, Vec<String>),
}

impl DemoOutcome {
    /// The step labelled `label`, if any.
    pub fn step(&self, label: &str) -> Option<&Step> {
        self.steps.iter().find(|s| s.label == label)
    }
}

/// Runs the demo: on `options.node`, or on a node started in-process on a fresh temporary data
/// directory and a free loopback port (stopped and removed afterwards). Prints the transcript
/// to `out`. Errors: see [`DemoError`].
pub async fn run(options: &DemoOptions, out: &mut dyn Write) -> Result<DemoOutcome, DemoError> {
    match &options.node {
        Some(url) => {
            let client = Client::new(url).map_err(|e| DemoError::Setup(e.to_string()))?;
            play(&client, options, out).await
        }
        None => {
            let node = LocalNode::start()
                .await
                .map_err(|e| DemoError::Setup(format!("cannot start a node: {e}")))?;
            writeln!(
                out,
                "node {} (temporary data directory {}; a local chain whose blocks are at least \
                 {} ms apart, so the demo stays quick: the default chain spaces them {} ms)",
                node.url(),
                node.data_dir().display(),
                crate::cli::local_node::LOCAL_MIN_BLOCK_INTERVAL_MS,
                gamechain_runtime::chain::clock::DEFAULT_MIN_BLOCK_INTERVAL_MS,
            )
            .map_err(output_error)?;
            let result = play(&node.client(), options, out).await;
            if let Err(e) = node.stop().await {
                tracing::warn!("the in-process node stopped with an error: {e}");
            }
            result
        }
    }
}

/// Plays the reference game (`docs/tictactoe.md`, "Live game") on the node `client` talks to, printing each step to `out` and
/// checking each outcome against the reference; stops at the first difference. The node must have
/// the `tictactoe` module and a faucet paying 100000 base units of GOLD.
pub async fn play(
    client: &Client,
    options: &DemoOptions,
    out: &mut dyn Write,
) -> Result<DemoOutcome, DemoError> {
    Demo {
        client,
        timeout: options.receipt_timeout,
        out,
        steps: Vec::new(),
    }
    .play(options)
    .await
}

/// The two players of a run: their keys and addresses (alice plays `x`).
struct Players {
    alice_key: SecretKey,
    bob_key: SecretKey,
    alice: String,
    bob: String,
}

/// The state of one run: the client, the transcript writer and the steps so far.
struct Demo<'a> {
    client: &'a Client,
    timeout: Duration,
    out: &'a mut dyn Write,
    steps: Vec<Step>,
}

fn output_error(e: std::io::Error) -> DemoError {
    DemoError::Setup(format!("cannot write the transcript: {e}"))
}

/// Turns a client error into the demo's, naming the step it happened at.
fn at(step: &str) -> impl Fn(ClientError) -> DemoError + Copy + '_ {
    move |error| DemoError::Client {
        step: step.to_string(),
        error,
    }
}

fn ttt(op: Value) -> Action {
    Action::game(MODULE, &op)
}

impl Demo<'_> {
    fn line(&mut self, text: impl AsRef<str>) -> Result<(), DemoError> {
        writeln!(self.out, "{}", text.as_ref()).map_err(output_error)
    }

    /// Signs and sends `action`, waits for its receipt, prints it like `play.mjs` and checks it.
    async fn send(
        &mut self,
        key: &SecretKey,
        action: Action,
        label: &str,
        expected: impl FnOnce(&str) -> ExpectedReceipt,
    ) -> Result<Step, DemoError> {
        let failed = at(label);
        let txid = self.client.send(key, action).await.map_err(failed)?;
        let included = self
            .client
            .wait_for_receipt(&txid, self.timeout)
            .await
            .map_err(failed)?;
        let r = &included.receipt;
        let error = r
            .error
            .as_ref()
            .map(|e| format!(" error \"{e}\""))
            .unwrap_or_default();
        self.line(format!(
            "{label}: txid {txid} height {} ok {}{error}",
            included.height, r.ok
        ))?;
        for ev in &r.events {
            self.line(format!(
                "   event {} {}",
                ev.kind,
                serde_json::to_string(&ev.data).expect("JSON")
            ))?;
        }
        seed::check_receipt(label, &expected(&txid), r)?;
        let step = Step {
            label: label.to_string(),
            txid,
            height: included.height,
            receipt: included.receipt,
        };
        self.steps.push(step.clone());
        Ok(step)
    }

    async fn gold(&self, account: &str) -> Result<gamechain_sdk::Amount, DemoError> {
        let step = format!("account {account}");
        Ok(self
            .client
            .account(account)
            .await
            .map_err(at(&step))?
            .balance("GOLD"))
    }

    async fn balances(
        &mut self,
        label: &str,
        alice: &str,
        bob: &str,
    ) -> Result<Balances, DemoError> {
        let escrow_account = format!("module:{MODULE}");
        let b = Balances {
            alice: self.gold(alice).await?,
            bob: self.gold(bob).await?,
            escrow: self.gold(&escrow_account).await?,
        };
        self.line(format!(
            "{label} alice {} bob {} escrow {}",
            b.alice, b.bob, b.escrow
        ))?;
        Ok(b)
    }

    async fn view(&self, query: &[(&str, &str)]) -> Result<Value, DemoError> {
        let step = format!("view {MODULE} {query:?}");
        self.client.view(MODULE, query).await.map_err(at(&step))
    }

    async fn nonce(&self, address: &str) -> Result<u64, DemoError> {
        let step = format!("account {address}");
        Ok(self.client.account(address).await.map_err(at(&step))?.nonce)
    }

    async fn play(mut self, options: &DemoOptions) -> Result<DemoOutcome, DemoError> {
        let p = self.players(options)?;
        let (escrow_at_start, before) = self.fund(&p).await?;
        let (create, id, open_before_join) = self.create_table(&p).await?;
        let open_after_join = self.join_and_open(&p, &id).await?;
        let bob_nonce = self.move_on_taken_cell(&p, &id).await?;
        let last = self.play_to_a_win(&p, &id).await?;
        let (after, game, player_games) = self
            .final_state(&p, &id, escrow_at_start, create.height, last.height)
            .await?;
        Ok(DemoOutcome {
            alice: p.alice,
            bob: p.bob,
            game_id: id,
            steps: self.steps,
            before,
            after,
            open_before_join,
            open_after_join,
            bob_nonce,
            game,
            player_games,
        })
    }

    /// Two fresh testnet keys; the WIFs go to 0600 files (when asked), never to the terminal.
    fn players(&mut self, options: &DemoOptions) -> Result<Players, DemoError> {
        let alice_key = SecretKey::generate(Network::Testnet);
        let bob_key = SecretKey::generate(Network::Testnet);
        if let Some(dir) = &options.keys_dir {
            for (name, key) in [("alice", &alice_key), ("bob", &bob_key)] {
                write_key_file(&dir.join(format!("{name}.wif")), key).map_err(DemoError::Setup)?;
            }
        }
        let (alice, bob) = (alice_key.address(), bob_key.address());
        self.line(format!("alice {alice}"))?;
        self.line(format!("bob   {bob}"))?;
        Ok(Players {
            alice_key,
            bob_key,
            alice,
            bob,
        })
    }

    /// 1. GOLD for both players (1000 GOLD each from the faucet). Returns the escrow's GOLD at
    ///    the start and the balances before the game.
    async fn fund(&mut self, p: &Players) -> Result<(Amount, Balances), DemoError> {
        let faucet = || Action::Faucet {
            token: "GOLD".into(),
        };
        let (alice, bob) = (&p.alice, &p.bob);
        self.send(&p.alice_key, faucet(), "faucet alice", |_| {
            seed::faucet(alice)
        })
        .await?;
        self.send(&p.bob_key, faucet(), "faucet bob", |_| seed::faucet(bob))
            .await?;
        let escrow_at_start = self.gold(&format!("module:{MODULE}")).await?;
        let before = self.balances("before:", alice, bob).await?;
        expect_eq(
            "balances before the game",
            &seed::balances_before(escrow_at_start),
            &before,
        )?;
        Ok((escrow_at_start, before))
    }

    /// 2. Alice creates a table with a 1.00 GOLD stake ("100" base units). Returns the create
    ///    step, the game id and `?open=1` before anyone joins.
    async fn create_table(&mut self, p: &Players) -> Result<(Step, String, Value), DemoError> {
        let alice = &p.alice;
        let create_op = json!({"kind": "create", "stake": seed::STAKE});
        let create = self
            .send(&p.alice_key, ttt(create_op), "create", |txid| {
                seed::created(seed::game_id_of(txid), alice)
            })
            .await?;
        let id = create.receipt.events[0].data["id"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let same = create.txid.starts_with(&id) && id.len() == 16;
        self.line(format!("game id {id} == first 16 hex of the txid: {same}"))?;
        expect_eq("game id == first 16 hex of the create txid", &true, &same)?;
        let open_before_join = self.view(&[("open", "1")]).await?;
        self.line(format!("open tables: {open_before_join}"))?;
        seed::check_open_before_join(&open_before_join, &id, alice, create.height)?;
        Ok((create, id, open_before_join))
    }

    /// 3. Bob joins; Alice (x) moves first, then claims the timeout too early. Returns
    ///    `?open=1` after the join.
    async fn join_and_open(&mut self, p: &Players, id: &str) -> Result<Value, DemoError> {
        let (alice, bob) = (&p.alice, &p.bob);
        self.send(
            &p.bob_key,
            ttt(json!({"kind": "join", "id": id})),
            "join bob",
            |_| seed::joined(id, bob),
        )
        .await?;
        let open_after_join = self.view(&[("open", "1")]).await?;
        seed::check_open_after_join(&open_after_join, id)?;
        let first_move = self
            .send(
                &p.alice_key,
                ttt(json!({"kind": "move", "id": id, "cell": 0})),
                "move alice 0",
                |_| seed::moved(id, alice, 0, "x........", "o"),
            )
            .await?;
        let claim = ttt(json!({"kind": "claim_timeout", "id": id}));
        let height = first_move.height;
        self.send(
            &p.alice_key,
            claim,
            "claim_timeout alice (too early)",
            |_| seed::claim_too_early(height),
        )
        .await?;
        Ok(open_after_join)
    }

    /// 4. A bad move: Bob tries the cell Alice took. The tx fails but still uses a nonce, and
    ///    moves no GOLD. Returns Bob's nonce before and after.
    async fn move_on_taken_cell(&mut self, p: &Players, id: &str) -> Result<(u64, u64), DemoError> {
        let bob = &p.bob;
        let nonce_before = self.nonce(bob).await?;
        self.line(format!("bob nonce before {nonce_before}"))?;
        let bob_gold_before = self.gold(bob).await?;
        let taken = ttt(json!({"kind": "move", "id": id, "cell": 0}));
        self.send(&p.bob_key, taken, "move bob 0 (taken)", |_| {
            seed::cell_taken()
        })
        .await?;
        let nonce_after = self.nonce(bob).await?;
        self.line(format!("bob nonce after  {nonce_after}"))?;
        expect_eq(
            "bob nonce before the move on the taken cell",
            &2,
            &nonce_before,
        )?;
        expect_eq(
            "bob nonce after the move on the taken cell",
            &(nonce_before + 1),
            &nonce_after,
        )?;
        let bob_gold_after = self.gold(bob).await?;
        expect_eq(
            "bob's GOLD after the move on the taken cell",
            &bob_gold_before,
            &bob_gold_after,
        )?;
        Ok((nonce_before, nonce_after))
    }

    /// 5. Play on to a win for x: the same moves as the first test in tictactoe.rs. Returns the
    ///    winning move.
    async fn play_to_a_win(&mut self, p: &Players, id: &str) -> Result<Step, DemoError> {
        let (alice, bob) = (&p.alice, &p.bob);
        let moves = [
            (&p.bob_key, bob, 3, "x..o.....", "x"),
            (&p.alice_key, alice, 1, "xx.o.....", "o"),
            (&p.bob_key, bob, 4, "xx.oo....", "x"),
        ];
        for (key, who, cell, board, turn) in moves {
            let name = if *who == *alice { "alice" } else { "bob" };
            let op = ttt(json!({"kind": "move", "id": id, "cell": cell}));
            self.send(key, op, &format!("move {name} {cell}"), |_| {
                seed::moved(id, who, cell, board, turn)
            })
            .await?;
        }
        let win = ttt(json!({"kind": "move", "id": id, "cell": 2}));
        self.send(&p.alice_key, win, "move alice 2", |_| {
            seed::winning_move(id, alice)
        })
        .await
    }

    /// 6. What the chain says afterwards: balances, the finished game, each player's games.
    async fn final_state(
        &mut self,
        p: &Players,
        id: &str,
        escrow_at_start: Amount,
        created: u64,
        last: u64,
    ) -> Result<(Balances, Value, (Vec<String>, Vec<String>)), DemoError> {
        let (alice, bob) = (&p.alice, &p.bob);
        let after = self.balances("after: ", alice, bob).await?;
        expect_eq(
            "balances after the game",
            &seed::balances_after(escrow_at_start),
            &after,
        )?;
        let game = self.view(&[("id", id)]).await?;
        self.line(format!("game: {game}"))?;
        expect_eq(
            "game",
            &seed::finished_game(id, alice, bob, created, last),
            &game,
        )?;
        let alice_games = seed::game_ids(&self.view(&[("player", alice)]).await?);
        self.line(format!("alice games: {}", js_array(&alice_games)))?;
        let bob_games = seed::game_ids(&self.view(&[("player", bob)]).await?);
        self.line(format!("bob games:   {}", js_array(&bob_games)))?;
        expect_eq("alice games", &vec![id.to_string()], &alice_games)?;
        expect_eq("bob games", &vec![id.to_string()], &bob_games)?;
        Ok((after, game, (alice_games, bob_games)))
    }
}

/// A list of strings as Node's `console.log` prints an array: `[ 'a', 'b' ]`, or `[]`.
fn js_array(items: &[String]) -> String {
    if items.is_empty() {
        return "[]".to_string();
    }
    let quoted: Vec<String> = items.iter().map(|s| format!("'{s}'")).collect();
    format!("[ {} ]", quoted.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_print_like_node() {
        assert_eq!(
            js_array(&["80566b04265ced78".to_string()]),
            "[ '80566b04265ced78' ]"
        );
        assert_eq!(
            js_array(&["a".to_string(), "b".to_string()]),
            "[ 'a', 'b' ]"
        );
        assert_eq!(js_array(&[]), "[]");
    }
}
