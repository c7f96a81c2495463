//! `gamechain channel …` as two players type it, against a `gamechain node` process whose default
//! genesis holds the `channel`, `moveboard` and `ttt_rules` modules (immutable; checked to be this
//! source's builds), nothing deployed by hand but the hostile `trap_rules` of one test: moves
//! travel over the move board and are kept in each player's store; a game is settled by history and paid out; a move stored before a crash is re-sent and
//! never replaced; forged, out-of-turn and illegal moves read from the board are refused and not
//! stored; `watch` answers a challenge with the move it holds and the staller forfeits, through
//! 429s, 503s and a node restart (behind a proxy the test controls); `watch` sends the
//! equivocation proof when a challenge contradicts a move it holds; two signed moves for one
//! position make their signer lose (`prove`); moves go through the relay to a watching opponent,
//! and to the board when only the mover's own `watch` is there; `offer` and `join` play genesis
//! rules code (named by module or by hash alone) and refuse other code, nothing sent, unless the
//! player names its hash, and rules that trap when their author loses make the winner forfeit.
//! Windows are block time (5 minutes at least):
//! tests that need one to pass run the node with the dev clock (`dev_clock = true`) and move its
//! sequencer's clock forward (`POST /v1/dev/clock`), never wait for it.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

use crate::common::cli::{run, run_on, text};
use crate::common::{NodeProcess, BIN};
use gamechain_channel_protocol::{state_hash, Domain};
use gamechain_client::client::Client;
use gamechain_client::read_key_file;
use gamechain_player::LocalRules;
use gamechain_runtime::chain::{sign_message, Action, SecretKey, UpgradePolicy};
use gamechain_sdk::guest_build::{build_guest, BuiltGuest};
use serde_json::{json, Value};

const STAKE: u128 = 100;
/// What the faucet pays (the node's default).
const FAUCET: u128 = 100_000;

/// The three guests, built once per test process.
fn guests() -> Vec<(&'static str, BuiltGuest)> {
    static BUILT: LazyLock<Mutex<Vec<(&'static str, BuiltGuest)>>> =
        LazyLock::new(Default::default);
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if built.is_empty() {
        for (id, package) in [
            ("channel", "channel"),
            ("moveboard", "moveboard"),
            ("ttt_rules", "tictactoe_rules"),
        ] {
            built.push((id, build_guest(package).unwrap_or_else(|e| panic!("{e}"))));
        }
    }
    built.clone()
}

/// A node with the channel modules and two funded players, `alice` and `bob`, each with a key
/// file `<name>.wif` and a move store `<name>-moves/` in the test's directory.
struct Table {
    node: NodeProcess,
    url: String,
    cwd: PathBuf,
    alice: String,
    bob: String,
    ttt_wasm: Vec<u8>,
    _dir: tempfile::TempDir,
}

impl Table {
    async fn new() -> Table {
        Table::with_config("block_interval_ms = 250").await
    }

    /// A table whose node runs the dev clock: [`Table::advance_clock`] moves block time.
    async fn with_clock() -> Table {
        Table::with_config("block_interval_ms = 250\ndev_clock = true").await
    }

    async fn with_config(config: &str) -> Table {
        let guests = tokio::task::spawn_blocking(guests).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().to_path_buf();
        let mut node = NodeProcess::new(&cwd, config);
        node.start().await;
        let url = node.url();
        let mut addresses = Vec::new();
        for name in ["alice", "bob", "carol"] {
            let file = format!("{name}.wif");
            let out = run(&cwd, &["key", "new", "--out", &file]).await;
            assert!(out.status.success(), "{}", text(&out.stderr));
            addresses.push(text(&out.stdout).trim().to_string());
            let out = run_on(&cwd, &url, &["faucet", "--key", &file]).await;
            assert!(out.status.success(), "{}", text(&out.stderr));
        }
        // Nothing to deploy: the default genesis holds these modules, immutable, built by the
        // same recipe as the guests here (so with the same code).
        let client = node.client();
        let mut ttt_wasm = Vec::new();
        for (id, guest) in &guests {
            let info = client.module(id).await.unwrap();
            assert_eq!(
                info.code_hash, guest.sha256,
                "genesis {id} is this source's build"
            );
            assert_eq!(info.policy, UpgradePolicy::Immutable, "{id}");
            if *id == "ttt_rules" {
                ttt_wasm = guest.wasm.clone();
            }
        }
        Table {
            node,
            url,
            cwd,
            alice: addresses[0].clone(),
            bob: addresses[1].clone(),
            ttt_wasm,
            _dir: dir,
        }
    }

    fn client(&self) -> Client {
        self.node.client()
    }

    /// `gamechain channel <args> --key <who>.wif --dir <who>-moves --node <url>`.
    async fn ch(&self, who: &str, args: &[&str]) -> Output {
        let (key, dir) = (format!("{who}.wif"), format!("{who}-moves"));
        let mut all = vec!["channel"];
        all.extend_from_slice(args);
        all.extend(["--key", &key, "--dir", &dir]);
        run_on(&self.cwd, &self.url, &all).await
    }

    /// [`Table::ch`], asserting success; its stdout.
    async fn ok(&self, who: &str, args: &[&str]) -> String {
        let out = self.ch(who, args).await;
        assert!(
            out.status.success(),
            "{who} channel {args:?}: {}\nstdout: {}\nstderr: {}",
            out.status,
            text(&out.stdout),
            text(&out.stderr)
        );
        text(&out.stdout)
    }

    /// [`Table::ch`], asserting exit `code` and one stderr line containing `needle`.
    async fn fails(&self, who: &str, args: &[&str], code: i32, needle: &str) -> String {
        let out = self.ch(who, args).await;
        let stderr = text(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(code),
            "{who} channel {args:?}: stdout {} stderr {stderr}",
            text(&out.stdout)
        );
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(needle), "{who} channel {args:?}: {stderr}");
        stderr
    }

    /// Alice offers tic-tac-toe with `window` (a duration, e.g. `5m`), Bob joins: the game id.
    async fn open_game(&self, window: &str) -> String {
        self.open_game_with(window, &[]).await
    }

    /// [`Table::open_game`], Bob joining with `join_args` added (e.g. `--game-key FILE`).
    async fn open_game_with(&self, window: &str, join_args: &[&str]) -> String {
        let stake = STAKE.to_string();
        let out = self
            .ok(
                "alice",
                &[
                    "offer",
                    "--rules",
                    "ttt_rules",
                    "--stake",
                    &stake,
                    "--window",
                    window,
                ],
            )
            .await;
        let game = out
            .split_whitespace()
            .nth(1)
            .unwrap()
            .trim_end_matches(':')
            .to_string();
        assert_eq!(game.len(), 16, "{out}");
        assert!(out.contains("waiting for a join"), "{out}");
        let mut join = vec!["join", game.as_str()];
        join.extend_from_slice(join_args);
        let out = self.ok("bob", &join).await;
        assert!(
            out.contains(&format!(
                "joined game {game} as seat 1 against {}",
                self.alice
            )),
            "{out}"
        );
        game
    }

    /// `who`'s stored record of `game`.
    fn record(&self, who: &str, game: &str) -> Value {
        let path = self.cwd.join(format!("{who}-moves/{game}.json"));
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
    }

    fn held(&self, who: &str, game: &str) -> Vec<Value> {
        self.record(who, game)["moves"].as_array().unwrap().clone()
    }

    /// `(n, data, sig)` of each move `who` holds for `game`.
    fn signed(&self, who: &str, game: &str) -> Vec<(u64, String, String)> {
        self.held(who, game)
            .iter()
            .map(|m| {
                let field = |k: &str| m[k].as_str().unwrap().to_string();
                (m["n"].as_u64().unwrap(), field("data"), field("sig"))
            })
            .collect()
    }

    async fn gold(&self, account: &str) -> u128 {
        self.client()
            .account(account)
            .await
            .unwrap()
            .balance("GOLD")
            .0
    }

    async fn height(&self) -> u64 {
        self.client().status().await.unwrap().height
    }

    /// The head block's time, ms.
    async fn head_time(&self) -> u64 {
        self.client()
            .block(gamechain_client::client::BlockRef::Latest)
            .await
            .unwrap()
            .header
            .header
            .time_ms
    }

    /// Moves the node's sequencer clock `ms` forward (the dev clock) and waits for a block
    /// stamped at least that much later than the head was.
    async fn advance_clock(&self, ms: u64) {
        self.node.advance_clock(ms).await
    }

    async fn game_view(&self, game: &str) -> Value {
        self.client()
            .view("channel", &[("game", game)])
            .await
            .unwrap()
    }

    /// Posts `payload` to the board for `game`, signed by `who`'s key (as anyone may).
    async fn post(&self, who: &str, game: &str, payload: &str) {
        let key = self.key(who);
        let op = json!({"kind":"post","game":game,"type":1,"payload":payload});
        let included = self
            .client()
            .send_and_wait(
                &key,
                Action::game("moveboard", &op),
                Duration::from_secs(60),
            )
            .await
            .unwrap();
        assert!(included.receipt.ok, "{:?}", included.receipt);
    }

    fn key(&self, who: &str) -> SecretKey {
        read_key_file(&self.cwd.join(format!("{who}.wif"))).unwrap()
    }

    /// The tic-tac-toe rules as the clients run them.
    fn rules(&self) -> LocalRules {
        use sha2::Digest;
        let hash = hex::encode(sha2::Sha256::digest(&self.ttt_wasm));
        LocalRules::from_code("ttt_rules", &hash, &self.ttt_wasm).unwrap()
    }

    /// Move `n` = `data` of `game` signed by `signer`'s key as made by `mover` over the state
    /// after `cells` (the moves before it).
    async fn sign(
        &self,
        game: &str,
        cells: &[u8],
        signer: &str,
        mover: &str,
        data: &[u8],
    ) -> String {
        let rules = self.rules();
        let view = self.client().view("channel", &[]).await.unwrap();
        let domain = Domain {
            chain: view["chain"].as_str().unwrap().to_string(),
            module: "channel".into(),
        };
        let mut state = rules.initial_state(&domain.game_tag(game)).unwrap();
        for (n, cell) in cells.iter().enumerate() {
            let seat = rules.mover_at(n as u64).unwrap();
            state = rules.apply_move(&state, n as u64, seat, &[*cell]).unwrap();
        }
        let n = cells.len() as u64;
        let msg = domain.move_message(game, n, &state_hash(&state), mover, data);
        json!({"n": n, "data": hex::encode(data), "sig": sign_message(&self.key(signer), msg)})
            .to_string()
    }
}

fn count(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_game_over_the_board_settles_by_history_and_pays_the_winner() {
    let t = Table::with_clock().await;
    let started = Instant::now();
    let game = t.open_game("5m").await;
    let escrow = "module:channel";
    assert_eq!(t.gold(escrow).await, 2 * STAKE);

    // X (Alice) takes the top row: 0 4 1 8 2. Each `move` reads the board first.
    t.ok("alice", &["move", &game, "00"]).await;
    t.fails(
        "bob",
        &["challenge", &game],
        1,
        "it is your own turn (move 1)",
    )
    .await;
    let out = t.ok("bob", &["move", &game, "04"]).await;
    assert!(
        out.contains("move 1 (04) signed and stored, posted at block"),
        "{out}"
    );
    let out = t
        .fails("bob", &["move", &game, "08"], 1, "move 1 is signed already")
        .await;
    assert!(out.contains("equivocation"), "{out}");
    t.ok("alice", &["move", &game, "01"]).await;
    t.fails(
        "alice",
        &["move", &game, "02"],
        1,
        "move 2 is signed already for this position (data 01)",
    )
    .await;
    t.ok("bob", &["move", &game, "08"]).await;
    t.fails(
        "alice",
        &["move", &game, "04"],
        1,
        "move 4: 04 is not a legal move",
    )
    .await;
    t.fails(
        "alice",
        &["settle", &game],
        1,
        "the history does not end the game: 4 moves held",
    )
    .await;
    let out = t.ok("alice", &["move", &game, "02"]).await;
    assert!(out.contains("the game is over: settle it"), "{out}");

    let out = t.ok("bob", &["sync", &game]).await;
    assert!(out.contains("received move 4: checked and stored"), "{out}");
    assert!(out.contains("5 moves held"), "{out}");
    let out = t.ok("bob", &["show", &game]).await;
    assert!(
        out.contains(&format!("over: seat 0 {} wins", t.alice)),
        "{out}"
    );
    assert!(out.contains("on chain at height"), "{out}");
    // Both stores hold the same five signed moves, all carried by the board.
    let (a, b) = (t.held("alice", &game), t.held("bob", &game));
    assert_eq!(a.len(), 5);
    assert_eq!(a, b);
    for (n, (m, cell)) in a.iter().zip(["00", "04", "01", "08", "02"]).enumerate() {
        assert_eq!(
            (m["n"].as_u64(), m["data"].as_str()),
            (Some(n as u64), Some(cell))
        );
        assert_eq!(m["posted"], true);
        assert_eq!(m["sig"].as_str().unwrap().len(), 88);
    }

    // The loser settles (anyone may): concluding, final one window later.
    let out = t.ok("bob", &["settle", &game]).await;
    assert!(
        out.contains(&format!("settled by history (5 moves): {} wins", t.alice)),
        "{out}"
    );
    let final_at: u64 = out
        .split("(block time ")
        .nth(1)
        .unwrap()
        .split(')')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    t.fails(
        "alice",
        &["withdraw", &game],
        3,
        &format!("the result is final at block time {final_at}"),
    )
    .await;
    t.advance_clock(final_at - t.head_time().await).await;
    let out = t.ok("alice", &["withdraw", &game]).await;
    assert!(
        out.contains(&format!("{} gets both stakes", t.alice)),
        "{out}"
    );
    t.fails("alice", &["withdraw", &game], 3, "paid out already")
        .await;
    assert_eq!(t.gold(&t.alice).await, FAUCET + STAKE);
    assert_eq!(t.gold(&t.bob).await, FAUCET - STAKE);
    assert_eq!(t.gold(escrow).await, 0);
    let view = t.game_view(&game).await;
    assert_eq!(
        (view["status"].as_str(), view["paid"].as_bool()),
        (Some("settled"), Some(true))
    );

    // An offer nobody joins is cancelled and refunded.
    let out = t
        .ok(
            "bob",
            &[
                "offer",
                "--rules",
                "ttt_rules",
                "--stake",
                "7",
                "--window-ms",
                "300000",
            ],
        )
        .await;
    let offer = out
        .split_whitespace()
        .nth(1)
        .unwrap()
        .trim_end_matches(':')
        .to_string();
    assert_eq!(t.gold(&t.bob).await, FAUCET - STAKE - 7);
    t.fails("alice", &["cancel", &offer], 3, "only the creator")
        .await;
    let out = t.ok("bob", &["cancel", &offer]).await;
    assert!(out.contains("cancelled"), "{out}");
    assert_eq!(t.gold(&t.bob).await, FAUCET - STAKE);
    eprintln!(
        "full game: {:.1} s after setup",
        started.elapsed().as_secs_f64()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_stored_but_not_posted_is_resent_and_never_replaced() {
    let t = Table::new().await;
    let game = t.open_game("5m").await;

    // The crash: move 0 is signed and saved, never posted.
    let out = t.ok("alice", &["move", &game, "04", "--no-post"]).await;
    assert!(
        out.contains("move 0 (04) signed and stored, not posted"),
        "{out}"
    );
    let held = t.held("alice", &game);
    assert_eq!((held.len(), held[0]["posted"].as_bool()), (1, Some(false)));
    let out = t.ok("alice", &["show", &game]).await;
    assert!(out.contains("not posted yet: move 0 (04)"), "{out}");
    let out = t.ok("bob", &["sync", &game]).await;
    assert!(out.contains("0 moves held"), "{out}");

    // Another move for the same position is refused and nothing is posted.
    let before = t.height().await;
    t.fails(
        "alice",
        &["move", &game, "00"],
        1,
        "move 0 is signed already for this position (data 04); signing 00 too would be equivocation",
    )
    .await;
    assert_eq!(t.held("alice", &game), held, "the store is unchanged");
    let out = t
        .ok("bob", &["sync", &game, "--from", &before.to_string()])
        .await;
    assert!(
        out.contains("0 moves held") && !out.contains("refused"),
        "{out}"
    );

    // The same move again re-sends the stored one (same signature).
    let out = t.ok("alice", &["move", &game, "04"]).await;
    assert!(
        out.contains("move 0 (04) was signed already: re-sent at block"),
        "{out}"
    );
    let resent = t.held("alice", &game);
    assert_eq!(resent[0]["sig"], held[0]["sig"]);
    assert_eq!(resent[0]["posted"], true);
    let out = t.ok("bob", &["sync", &game]).await;
    assert!(out.contains("received move 0: checked and stored"), "{out}");
    assert_eq!(t.held("bob", &game)[0]["sig"], held[0]["sig"]);
    let out = t.ok("bob", &["show", &game]).await;
    assert!(
        out.contains(&format!("turn: seat 1 {} (you) (move 1)", t.bob)),
        "{out}"
    );

    // Challenged, a player's next `move` also answers on chain; `respond` needs a held move.
    let out = t.ok("alice", &["challenge", &game]).await;
    assert!(
        out.contains(&format!("challenged: {} owes move 1 by ", t.bob)),
        "{out}"
    );
    let out = t.ok("bob", &["move", &game, "00"]).await;
    assert!(
        out.contains("answered the challenge on move 1 at block"),
        "{out}"
    );
    t.fails(
        "alice",
        &["respond", &game],
        1,
        "we hold no move 2 continuing the challenged state",
    )
    .await;
    let out = t.ok("alice", &["move", &game, "08"]).await;
    assert!(
        out.contains("answered the challenge on move 2 at block"),
        "{out}"
    );
    let view = t.game_view(&game).await;
    assert_eq!(
        (view["status"].as_str(), view["challenge"]["moves"].as_u64()),
        (Some("challenged"), Some(3))
    );
    assert_eq!(view["challenge"]["due"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_out_of_turn_and_illegal_moves_from_the_board_are_refused_and_not_stored() {
    let t = Table::new().await;
    // Bob's moves are signed by a separate game key: only its signatures count for his seat.
    let out = run(&t.cwd, &["key", "new", "--out", "bobgame.wif"]).await;
    let bob_game_key = text(&out.stdout).trim().to_string();
    let game = t.open_game_with("5m", &["--game-key", "bobgame.wif"]).await;
    assert_eq!(
        t.game_view(&game).await["signers"][1],
        bob_game_key.as_str()
    );
    let record = t.record("bob", &game);
    assert!(
        record["game_key_file"]
            .as_str()
            .unwrap()
            .ends_with("/bobgame.wif"),
        "{record}"
    );
    t.ok("alice", &["move", &game, "04"]).await;
    let (alice, bob) = (t.alice.clone(), t.bob.clone());

    // Move 1 is Bob's. Carol posts what Alice's client must refuse.
    let forged = t.sign(&game, &[4], "carol", &bob, &[0]).await;
    let player_key = t.sign(&game, &[4], "bob", &bob, &[0]).await;
    let out_of_turn = t.sign(&game, &[4], "alice", &alice, &[0]).await;
    let illegal = t.sign(&game, &[4], "bobgame", &bob, &[4]).await;
    let other_state = t.sign(&game, &[0], "bobgame", &bob, &[1]).await;
    let ahead = t.sign(&game, &[4, 0], "alice", &alice, &[1]).await;
    for payload in [
        &forged,
        &player_key,
        &out_of_turn,
        &illegal,
        &other_state,
        &ahead,
    ] {
        t.post("carol", &game, payload).await;
    }
    t.post("carol", &game, "hello").await;
    let out = t.ok("alice", &["sync", &game]).await;
    let carol = t.key("carol").address();
    assert_eq!(
        count(&out, &format!("refused a post by {carol}")),
        7,
        "{out}"
    );
    for why in [
        format!("move 1 is not signed by {bob}'s game key"),
        format!("move 1 is out of turn: it is {bob}'s move, signed by {alice}'s game key"),
        "move 1 is not a legal move".to_string(),
        "move 2 does not continue our state".to_string(),
        "not a signed move: not JSON".to_string(),
    ] {
        assert!(out.contains(&why), "{why}: {out}");
    }
    assert_eq!(
        count(&out, &format!("move 1 is not signed by {bob}'s game key")),
        3,
        "{out}"
    );
    assert!(out.contains("1 moves held"), "{out}");
    let record = t.record("alice", &game);
    assert_eq!(
        record["moves"].as_array().unwrap().len(),
        1,
        "nothing stored"
    );
    assert_eq!(record["conflicts"], json!([]), "no proof from forgeries");

    // Bob's client refuses them too; his player key cannot sign his moves; his game key (kept
    // in his record since the join) does.
    t.fails(
        "bob",
        &["move", &game, "00", "--game-key", "bob.wif"],
        1,
        &format!("seat 1's game key is {bob_game_key}, but bob.wif holds {bob}"),
    )
    .await;
    let out = t.ok("bob", &["move", &game, "00"]).await;
    assert!(
        out.contains("move 1 (00) signed and stored, posted"),
        "{out}"
    );
    assert_eq!(t.held("bob", &game).len(), 2);
    let out = t.ok("alice", &["sync", &game]).await;
    assert!(out.contains("received move 1: checked and stored"), "{out}");
    assert!(!out.contains("refused"), "read once: {out}");
    assert_eq!(t.signed("alice", &game), t.signed("bob", &game));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_answers_a_challenge_with_the_held_move_and_the_staller_forfeits() {
    let t = Table::with_clock().await;
    let game = t.open_game("10m").await;
    t.ok("alice", &["move", &game, "00"]).await;
    t.ok("bob", &["move", &game, "04"]).await;
    // Alice's move 2 never reaches Bob.
    t.ok("alice", &["move", &game, "01", "--no-post"]).await;

    let log = t.cwd.join("alice-watch.log");
    let mut watch = Command::new(BIN)
        .args([
            "channel",
            "watch",
            &game,
            "--key",
            "alice.wif",
            "--dir",
            "alice-moves",
            "--poll-ms",
            "100",
            "--stop-after",
            "90",
            "--node",
            &t.url,
        ])
        .current_dir(&t.cwd)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();

    let out = t.ok("bob", &["challenge", &game]).await;
    assert!(
        out.contains(&format!("challenged: {} owes move 2 by ", t.alice)),
        "{out}"
    );

    // Alice's watch answers with move 2: the challenge passes to Bob, for move 3.
    let start = Instant::now();
    let view = loop {
        let view = t.game_view(&game).await;
        if view["challenge"]["moves"] == 3 {
            break view;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no answer: {view}\n{}",
            std::fs::read_to_string(&log).unwrap()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(
        (view["status"].as_str(), view["challenge"]["due"].as_u64()),
        (Some("challenged"), Some(1))
    );
    let deadline = view["challenge"]["deadline_ms"].as_u64().unwrap();
    // Bob learns move 2 from Alice's answer on chain.
    let out = t.ok("bob", &["sync", &game]).await;
    assert!(out.contains("received move 2: checked and stored"), "{out}");
    assert_eq!(t.signed("bob", &game), t.signed("alice", &game));

    // Bob stalls. Too early, the forfeit is refused locally; after the deadline it stands.
    t.fails("alice", &["forfeit", &game], 1, "may answer until")
        .await;
    t.advance_clock(deadline + 1 - t.head_time().await).await;
    let out = t.ok("alice", &["forfeit", &game]).await;
    assert!(
        out.contains(&format!("forfeit claimed: {} wins", t.alice)),
        "{out}"
    );

    // The watch saw the result final and stopped by itself.
    let start = Instant::now();
    let status = loop {
        if let Some(status) = watch.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(30) {
            watch.kill().unwrap();
            panic!(
                "watch did not stop: {}",
                std::fs::read_to_string(&log).unwrap()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let printed = std::fs::read_to_string(&log).unwrap();
    assert!(status.success(), "{printed}");
    assert!(
        printed.contains("answered the challenge with moves 2..2 at block"),
        "{printed}"
    );
    assert!(
        printed.contains(&format!(
            "challenge passes: {} owes move 3 by {}",
            t.bob,
            gamechain_player::time::format_time_ms(deadline)
        )),
        "{printed}"
    );
    assert!(printed.contains("the result is final"), "{printed}");

    t.ok("alice", &["withdraw", &game]).await;
    assert_eq!(t.gold(&t.alice).await, FAUCET + STAKE);
    assert_eq!(t.gold(&t.bob).await, FAUCET - STAKE);
    assert_eq!(t.gold("module:channel").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prove_from_two_signed_moves_for_one_position_makes_the_equivocator_lose() {
    let t = Table::new().await;
    let game = t.open_game("5m").await;
    t.ok("alice", &["move", &game, "00"]).await;
    t.ok("bob", &["move", &game, "04"]).await;
    t.fails("alice", &["prove", &game], 1, "no equivocation held")
        .await;

    // Bob signs a second move 1 over the same state and posts it.
    let second = t.sign(&game, &[0], "bob", &t.bob, &[8]).await;
    t.post("bob", &game, &second).await;
    let out = t.ok("alice", &["sync", &game]).await;
    assert!(
        out.contains("equivocation: a second signed move 1 by the opponent, kept"),
        "{out}"
    );
    let record = t.record("alice", &game);
    assert_eq!(
        record["moves"].as_array().unwrap().len(),
        2,
        "the first move stays"
    );
    assert_eq!(record["conflicts"][0]["data"], "08");
    let out = t.ok("alice", &["show", &game]).await;
    assert!(out.contains("equivocation proof held: move 1"), "{out}");

    let out = t.ok("alice", &["prove", &game]).await;
    assert!(
        out.contains(&format!("equivocation on move 1 proven: {} wins", t.alice)),
        "{out}"
    );
    let view = t.game_view(&game).await;
    assert_eq!(view["outcome"]["how"], "equivocation");
    t.ok("alice", &["withdraw", &game]).await;
    assert_eq!(t.gold(&t.alice).await, FAUCET + STAKE);
    assert_eq!(t.gold(&t.bob).await, FAUCET - STAKE);
    assert_eq!(t.gold("module:channel").await, 0);
}

/// What [`Proxy`] does with a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Forward bytes both ways to the node.
    Forward,
    /// Answer every request `429 rate_limited` with `retry-after: 1`.
    TooMany,
    /// Answer every request `503`.
    Unavailable,
}

/// An HTTP proxy in front of the node that the test switches between forwarding and refusing
/// (every switch drops the open connections, so a WebSocket through it breaks too); it counts
/// what it refused and the `GET /v1/blocks/<height>` and `GET /v1/ws` requests it forwarded.
struct Proxy {
    port: u16,
    state: std::sync::Arc<Mutex<ProxyState>>,
}

#[derive(Default)]
struct ProxyState {
    mode: Option<Mode>,
    open: Vec<std::net::TcpStream>,
    refused_429: u64,
    refused_503: u64,
    block_gets: u64,
    ws_upgrades: u64,
}

impl Proxy {
    fn start(target: std::net::SocketAddr) -> Proxy {
        use std::io::{Read, Write};
        use std::net::{Shutdown, TcpListener, TcpStream};
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let state: std::sync::Arc<Mutex<ProxyState>> = Default::default();
        state.lock().unwrap().mode = Some(Mode::Forward);
        let shared = state.clone();
        std::thread::spawn(move || {
            for inbound in listener.incoming() {
                let Ok(mut inbound) = inbound else { continue };
                let mode = shared.lock().unwrap().mode.unwrap();
                if mode != Mode::Forward {
                    // Read the request head, answer, close.
                    let shared = shared.clone();
                    std::thread::spawn(move || {
                        let mut head = Vec::new();
                        let mut buf = [0u8; 1024];
                        let _ = inbound.set_read_timeout(Some(Duration::from_secs(5)));
                        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 65536 {
                            match inbound.read(&mut buf) {
                                Ok(0) | Err(_) => break,
                                Ok(n) => head.extend_from_slice(&buf[..n]),
                            }
                        }
                        let (status, code, extra) = match mode {
                            Mode::TooMany => (
                                "429 Too Many Requests",
                                "rate_limited",
                                "retry-after: 1\r\n",
                            ),
                            _ => ("503 Service Unavailable", "unavailable", ""),
                        };
                        {
                            let mut s = shared.lock().unwrap();
                            if mode == Mode::TooMany {
                                s.refused_429 += 1;
                            } else {
                                s.refused_503 += 1;
                            }
                        }
                        let body = format!(
                            r#"{{"error":{{"code":"{code}","message":"the proxy says no"}}}}"#
                        );
                        let answer = format!(
                            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\n{extra}content-length: {}\r\nconnection: close\r\n\r\n{body}",
                            body.len()
                        );
                        let _ = inbound.write_all(answer.as_bytes());
                        let _ = inbound.shutdown(Shutdown::Both);
                    });
                    continue;
                }
                let Ok(outbound) = TcpStream::connect(target) else {
                    let _ = inbound.shutdown(Shutdown::Both);
                    continue;
                };
                {
                    let mut s = shared.lock().unwrap();
                    s.open.push(inbound.try_clone().unwrap());
                    s.open.push(outbound.try_clone().unwrap());
                }
                // Client to node, counting request lines.
                let (mut from, mut to) =
                    (inbound.try_clone().unwrap(), outbound.try_clone().unwrap());
                let counter = shared.clone();
                std::thread::spawn(move || {
                    let mut buf = [0u8; 16384];
                    let mut tail: Vec<u8> = Vec::new();
                    loop {
                        let n = match from.read(&mut buf) {
                            Ok(0) | Err(_) => break,
                            Ok(n) => n,
                        };
                        let mut seen = tail.clone();
                        seen.extend_from_slice(&buf[..n]);
                        let count = |needle: &[u8]| {
                            seen.windows(needle.len()).filter(|w| *w == needle).count() as u64
                        };
                        {
                            let mut s = counter.lock().unwrap();
                            s.block_gets += count(b"GET /v1/blocks/");
                            s.ws_upgrades += count(b"GET /v1/ws ");
                        }
                        tail = seen[seen.len().saturating_sub(15)..].to_vec();
                        if to.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    let _ = from.shutdown(Shutdown::Both);
                    let _ = to.shutdown(Shutdown::Both);
                });
                let (mut from, mut to) = (outbound, inbound);
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from, &mut to);
                    let _ = from.shutdown(Shutdown::Both);
                    let _ = to.shutdown(Shutdown::Both);
                });
            }
        });
        Proxy { port, state }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Switches the mode; open connections are dropped.
    fn set(&self, mode: Mode) {
        let mut s = self.state.lock().unwrap();
        s.mode = Some(mode);
        for socket in s.open.drain(..) {
            let _ = socket.shutdown(std::net::Shutdown::Both);
        }
    }

    /// `(429s, 503s, GET /v1/blocks/…, GET /v1/ws)` so far.
    fn counts(&self) -> (u64, u64, u64, u64) {
        let s = self.state.lock().unwrap();
        (s.refused_429, s.refused_503, s.block_gets, s.ws_upgrades)
    }
}

/// Starts `gamechain channel watch <game>` for `who` against `url`, stdout and stderr to files.
fn start_watch(
    t: &Table,
    who: &str,
    game: &str,
    url: &str,
) -> (std::process::Child, PathBuf, PathBuf) {
    let (log, err) = (
        t.cwd.join(format!("{who}-watch.log")),
        t.cwd.join(format!("{who}-watch.err")),
    );
    let child = Command::new(BIN)
        .args([
            "channel",
            "watch",
            game,
            "--key",
            &format!("{who}.wif"),
            "--dir",
            &format!("{who}-moves"),
            "--poll-ms",
            "200",
            "--stop-after",
            "240",
            "--node",
            url,
        ])
        .current_dir(&t.cwd)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    (child, log, err)
}

fn read(path: &PathBuf) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Waits (60 s at most) until the file at `path` contains `needle`.
async fn wait_for(path: PathBuf, needle: String) {
    let start = Instant::now();
    while !read(&path).contains(&needle) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no `{needle}` in:\n{}",
            read(&path)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Every thread's stack of process `pid` (gdb, when installed), to tell where a silent watch
/// waits.
fn backtraces(pid: u32) -> String {
    std::process::Command::new("gdb")
        .args([
            "-p",
            &pid.to_string(),
            "-batch",
            "-ex",
            "thread apply all bt 30",
        ])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_else(|e| format!("(no gdb: {e})"))
}

/// Issue 23's watchtower attack: `watch` used to exit on the first 429, and then the honest
/// player forfeited. Behind a proxy that answers 429 (with `retry-after`), then 503, and across
/// a SIGKILL and restart of the node, the watch keeps going, reads blocks over the block feed
/// (by height only for the blocks it missed), and still answers the challenge made after the
/// restart with the move it holds; the staller then forfeits and the watch stops by itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_survives_429s_and_a_node_restart_and_still_answers() {
    let mut t = Table::with_clock().await;
    let game = t.open_game("10m").await;
    t.ok("alice", &["move", &game, "00"]).await;
    t.ok("bob", &["move", &game, "04"]).await;
    // Alice's move 2 never reaches Bob: only her watch can answer a challenge for it.
    t.ok("alice", &["move", &game, "01", "--no-post"]).await;

    let proxy = Proxy::start(t.node.addr);
    let (mut watch, log, err) = start_watch(&t, "alice", &game, &proxy.url());
    wait_for(log.clone(), "reading blocks from".into()).await;

    // The node rate-limits the watch, then fails; the watch waits it out.
    proxy.set(Mode::TooMany);
    tokio::time::sleep(Duration::from_secs(3)).await;
    proxy.set(Mode::Unavailable);
    tokio::time::sleep(Duration::from_secs(2)).await;
    proxy.set(Mode::Forward);
    let (n429, n503, _, _) = proxy.counts();
    assert!(n429 >= 1 && n503 >= 1, "refused {n429} × 429, {n503} × 503");
    assert!(
        watch.try_wait().unwrap().is_none(),
        "the watch is still running:\n{}",
        read(&err)
    );
    let stderr = read(&err);
    assert!(stderr.contains("rate_limited"), "{stderr}");

    // The node dies and comes back on the same data and port. The feed openings are counted
    // while it is down: a watch that reconnects to the restarted node before `start` returns
    // (it polls the status every 50 ms) has already made the opening this test waits for
    // (counting after `start`, as this test once did, missed it and waited forever).
    let connected = |log: &str| log.matches("(block feed open)").count();
    t.node.kill();
    let before = connected(&read(&log));
    tokio::time::sleep(Duration::from_secs(2)).await;
    t.node.start().await;
    assert!(
        watch.try_wait().unwrap().is_none(),
        "the watch survived:\n{}",
        read(&err)
    );

    // Once the feed is open again, blocks come over it: none is asked for by height.
    let start = Instant::now();
    // Up to 150 s: with the other tests of this file running beside it on 2 cores, the
    // reconnection took over 60 s in two runs of one sitting. Why: the restarted node binds its
    // port before it has opened the chain (an unclean start runs quick_check and rehashes the
    // state), so a request in that window waits up to the client's 30 s timeout, and each
    // failure doubles the watch's backoff (up to 30 s); alone it takes a few seconds.
    while connected(&read(&log)) == before {
        assert!(
            start.elapsed() < Duration::from_secs(150),
            "no reconnection:\n{}\nthe watch's output:\n{}\nthe watch's threads:\n{}",
            read(&err),
            read(&log),
            backtraces(watch.id())
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (h0, (_, _, gets0, _)) = (t.height().await, proxy.counts());
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (h1, (_, _, gets1, _)) = (t.height().await, proxy.counts());
    assert!(h1 >= h0 + 5, "blocks were made meanwhile: {h0} → {h1}");
    assert!(
        gets1 - gets0 <= 1,
        "{} GET /v1/blocks/… while {} blocks came over the feed",
        gets1 - gets0,
        h1 - h0
    );

    // After the restart Bob challenges Alice for move 2; her watch answers with it.
    let out = t.ok("bob", &["challenge", &game]).await;
    assert!(
        out.contains(&format!("challenged: {} owes move 2 by ", t.alice)),
        "{out}"
    );
    let start = Instant::now();
    let view = loop {
        let view = t.game_view(&game).await;
        if view["challenge"]["moves"] == 3 {
            break view;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no answer: {view}\n{}\n{}",
            read(&log),
            read(&err)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(view["challenge"]["due"], 1);
    // The watch prints its answer once it has the receipt, which may be a moment after the view.
    let start = Instant::now();
    while !read(&log).contains("answered the challenge with moves 2..2 at block") {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the watch did not say it answered:\n{}\n{}",
            read(&log),
            read(&err)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Bob stalls past his deadline; the forfeit stands; the watch sees the result final.
    let deadline = view["challenge"]["deadline_ms"].as_u64().unwrap();
    t.advance_clock(deadline + 1 - t.head_time().await).await;
    let out = t.ok("alice", &["forfeit", &game]).await;
    assert!(
        out.contains(&format!("forfeit claimed: {} wins", t.alice)),
        "{out}"
    );
    let start = Instant::now();
    let status = loop {
        if let Some(status) = watch.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(60) {
            watch.kill().unwrap();
            panic!("watch did not stop:\n{}\n{}", read(&log), read(&err));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(status.success(), "{}\n{}", read(&log), read(&err));
    assert!(read(&log).contains("the result is final"), "{}", read(&log));
    let (_, _, block_gets, ws_upgrades) = proxy.counts();
    let head = t.height().await;
    assert!(
        ws_upgrades >= 2,
        "the feed was opened again after the outages: {ws_upgrades}"
    );
    eprintln!("watch: {n429} × 429, {n503} × 503, {ws_upgrades} feed openings, {block_gets} blocks by height, head {head}");
    t.ok("alice", &["withdraw", &game]).await;
    assert_eq!(t.gold(&t.alice).await, FAUCET + STAKE);
}

/// Issue 23: the watcher kept an equivocation proof but never sent it. Bob signs a second move
/// 1 and challenges Alice with a history holding it, contradicting the move 1 Alice holds: her
/// watch reads the challenge, keeps the contradicting move as the proof and sends it; Bob loses
/// at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_sends_the_equivocation_proof_when_a_challenge_contradicts_a_held_move() {
    let t = Table::new().await;
    let game = t.open_game("5m").await;
    t.ok("alice", &["move", &game, "00"]).await;
    t.ok("bob", &["move", &game, "04"]).await;
    t.ok("alice", &["sync", &game]).await;
    assert_eq!(t.held("alice", &game).len(), 2);
    let (mut watch, log, err) = start_watch(&t, "alice", &game, &t.url);
    let start = Instant::now();
    while !read(&log).contains("reading blocks from") {
        assert!(start.elapsed() < Duration::from_secs(60), "{}", read(&err));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Bob's other move 1 (cell 8) over the same state, in a challenge of his own.
    let m0 = t.held("alice", &game)[0].clone();
    let other: Value =
        serde_json::from_str(&t.sign(&game, &[0], "bob", &t.bob, &[8]).await).unwrap();
    let op = json!({"kind":"challenge","game":game,
                    "moves":[{"n":0,"data":m0["data"],"sig":m0["sig"]}, other]});
    let included = t
        .client()
        .send_and_wait(
            &t.key("bob"),
            Action::game("channel", &op),
            Duration::from_secs(60),
        )
        .await
        .unwrap();
    assert!(included.receipt.ok, "{:?}", included.receipt);

    let start = Instant::now();
    let view = loop {
        let view = t.game_view(&game).await;
        if view["status"] == "settled" {
            break view;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no proof: {view}\n{}\n{}",
            read(&log),
            read(&err)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(
        (
            view["outcome"]["how"].as_str(),
            view["outcome"]["winner"].as_u64()
        ),
        (Some("equivocation"), Some(0))
    );
    let start = Instant::now();
    let status = loop {
        if let Some(status) = watch.try_wait().unwrap() {
            break status;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "watch did not stop: {}",
            read(&log)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(status.success(), "{}", read(&err));
    let printed = read(&log);
    assert!(
        printed.contains("equivocation: a second signed move 1 by the opponent, kept"),
        "{printed}"
    );
    assert!(
        printed.contains(&format!("equivocation on move 1 proven: {} wins", t.alice)),
        "{printed}"
    );
    t.ok("alice", &["withdraw", &game]).await;
    assert_eq!(t.gold(&t.alice).await, FAUCET + STAKE);
    assert_eq!(t.gold(&t.bob).await, FAUCET - STAKE);
}

/// Issue 22: moves travel peer to peer. With Bob's watch connected to the node's relay, Alice's
/// `move` goes through the relay straight into Bob's store and is not posted to the board; a
/// move Bob made while nobody listened (`--no-post`) is re-sent by his watch as soon as Alice's
/// client connects; `--no-relay` posts to the board as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moves_go_through_the_relay_to_a_watching_opponent_and_a_missed_one_is_resent() {
    let t = Table::new().await;
    let game = t.open_game("5m").await;
    let (mut bob_watch, bob_log, _) = start_watch(&t, "bob", &game, &t.url);
    wait_for(
        bob_log.clone(),
        "relay: the other player has 0 connection(s)".into(),
    )
    .await;

    let nonce = t.client().account(&t.alice).await.unwrap().next_nonce;
    let out = t.ok("alice", &["move", &game, "04"]).await;
    assert!(
        out.contains(
            "move 0 (04) signed and stored, sent through the relay to the other player (1 connection)"
        ),
        "{out}"
    );
    wait_for(
        bob_log.clone(),
        "received move 0: checked and stored".into(),
    )
    .await;
    assert_eq!(t.signed("bob", &game), t.signed("alice", &game));
    let held = t.held("alice", &game);
    assert_eq!(
        (held[0]["posted"].as_bool(), held[0]["relayed"].as_bool()),
        (Some(false), Some(true))
    );
    let out = t.ok("alice", &["show", &game]).await;
    assert!(
        out.contains("sent through the relay, not on the board: move 0 (04)"),
        "{out}"
    );
    // Nothing went to the board: Alice sent no transaction.
    let account = t.client().account(&t.alice).await.unwrap();
    assert_eq!((account.nonce, account.next_nonce), (nonce, nonce));

    // Bob signs move 1 with nobody to send it to; his watch re-sends it when Alice's watch
    // connects.
    let out = t.ok("bob", &["move", &game, "00", "--no-post"]).await;
    assert!(out.contains("not posted"), "{out}");
    let (mut alice_watch, alice_log, _) = start_watch(&t, "alice", &game, &t.url);
    wait_for(
        bob_log.clone(),
        "move 1 re-sent through the relay to the other player (1 connection(s))".into(),
    )
    .await;
    wait_for(
        alice_log.clone(),
        "received move 1: checked and stored".into(),
    )
    .await;
    assert_eq!(t.signed("alice", &game), t.signed("bob", &game));
    assert_eq!(t.held("alice", &game).len(), 2);

    // Without the relay, the board carries the move as before.
    bob_watch.kill().unwrap();
    alice_watch.kill().unwrap();
    let out = t.ok("alice", &["move", &game, "08", "--no-relay"]).await;
    assert!(
        out.contains("move 2 (08) signed and stored, posted at block"),
        "{out}"
    );
    let out = t.ok("bob", &["sync", &game]).await;
    assert!(out.contains("received move 2: checked and stored"), "{out}");
    let _ = bob_watch.wait();
    let _ = alice_watch.wait();
}

/// Issue 41: with a player's own `watch` on the relay (as the docs tell every player to keep
/// it), its `move` used to count that watch as a receiver ("sent through the relay to 1
/// connection") and skip the board, so the opponent, not connected, never saw the move. The
/// relay counts the opponent's connections only: the move is posted, and the opponent's `sync`
/// reads it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_reaches_the_board_when_only_the_movers_own_watch_is_on_the_relay() {
    let t = Table::new().await;
    let game = t.open_game("5m").await;
    let (mut alice_watch, alice_log, _) = start_watch(&t, "alice", &game, &t.url);
    wait_for(
        alice_log.clone(),
        "relay: the other player has 0 connection(s)".into(),
    )
    .await;
    let out = t.ok("alice", &["move", &game, "04"]).await;
    assert!(
        out.contains("move 0 (04) signed and stored, posted at block")
            && out.contains("(relay: the other player is not connected to the relay)"),
        "{out}"
    );
    let held = t.held("alice", &game);
    assert_eq!(
        (held[0]["posted"].as_bool(), held[0]["relayed"].as_bool()),
        (Some(true), None)
    );
    let out = t.ok("bob", &["sync", &game]).await;
    assert!(out.contains("received move 0: checked and stored"), "{out}");
    assert_eq!(t.signed("bob", &game), t.signed("alice", &game));
    // Alice's watch never took her own `move` for the opponent's client.
    assert!(
        !read(&alice_log).contains("re-sent"),
        "{}",
        read(&alice_log)
    );
    alice_watch.kill().unwrap();
    let _ = alice_watch.wait();
}

/// Genesis code is played by its hash: an offer naming `ttt_rules`' code by `rules_code` alone
/// (no module id) is joined without `--rules-code` (docs/channels.md, "Rules that trap when their
/// author loses").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn genesis_rules_code_named_by_hash_alone_is_joined_without_naming_it() {
    let t = Table::new().await;
    let hash = {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(&t.ttt_wasm))
    };
    let stake = STAKE.to_string();
    let out = t
        .ok(
            "alice",
            &[
                "offer",
                "--rules-code",
                &hash,
                "--stake",
                &stake,
                "--window",
                "5m",
            ],
        )
        .await;
    let offer = out
        .split_whitespace()
        .nth(1)
        .unwrap()
        .trim_end_matches(':')
        .to_string();
    let view = t
        .client()
        .view("channel", &[("offer", &offer)])
        .await
        .unwrap();
    assert_eq!(
        (&view["rules"], view["rules_code"].as_str()),
        (&Value::Null, Some(hash.as_str()))
    );
    let before = t.gold(&t.bob).await;
    let out = t.ok("bob", &["join", &offer]).await;
    assert!(
        out.contains(&format!("joined game {offer} as seat 1")),
        "{out}"
    );
    assert_eq!(t.gold(&t.bob).await, before - STAKE);
}

/// `sha256("gamechain rps commit v2" ‖ tag ‖ seat ‖ choice ‖ salt)`: an RPS commitment (as
/// `rps_rules::commitment`, which `trap_rules` copies).
fn rps_commitment(tag: &[u8; 32], seat: u8, choice: u8, salt: &[u8; 32]) -> String {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    h.update(b"gamechain rps commit v2");
    h.update(tag);
    h.update([seat, choice]);
    h.update(salt);
    hex::encode(h.finalize())
}

/// Rules that trap when their author loses (docs/channels.md, section 2): Alice deploys
/// `trap_rules` (rock-paper-scissors that traps on the move making seat 0 lose). Her own client
/// offers it only once she names its code; Bob's `join` refuses it with one fixed line and sends
/// nothing, and joins with `--rules-code <hash>`. Then the trap bites: Bob wins (paper beats
/// rock), but every op carrying his winning reveal fails on chain (`the callee trapped`), a
/// settlement and an answer to Alice's challenge alike, so he loses by forfeit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rules_module_that_traps_when_its_author_loses_is_refused_at_join() {
    let t = Table::with_clock().await;
    let trap =
        tokio::task::spawn_blocking(|| build_guest("trap_rules").unwrap_or_else(|e| panic!("{e}")))
            .await
            .unwrap();
    let hash = trap.sha256.clone();
    let deployed = t
        .client()
        .send_and_wait(
            &t.key("alice"),
            Action::deploy("trap_rules", trap.wasm.clone()),
            Duration::from_secs(60),
        )
        .await
        .unwrap();
    assert!(deployed.receipt.ok, "{:?}", deployed.receipt);
    let info = t.client().module("trap_rules").await.unwrap();
    assert_eq!(
        (info.code_hash.as_str(), info.owner.as_str()),
        (hash.as_str(), t.alice.as_str())
    );
    let alice_gold = t.gold(&t.alice).await;

    // Alice's own client refuses to offer code no genesis module runs, nothing sent...
    let stake = STAKE.to_string();
    let offer_args = [
        "offer",
        "--rules",
        "trap_rules",
        "--stake",
        &stake,
        "--window",
        "5m",
    ];
    let alice_nonce = t.client().account(&t.alice).await.unwrap().next_nonce;
    let what = format!("the code module trap_rules runs (owner {})", t.alice);
    let tail = format!(
        "not the code of a genesis module: such rules may trap when their author loses, and you \
         would lose by forfeit; nothing was sent (read that code, then pass --rules-code {hash} \
         to play it anyway)"
    );
    let stderr = t.fails("alice", &offer_args, 1, "refusing to offer").await;
    assert_eq!(
        stderr.trim_end(),
        format!("error: refusing to offer rules code {hash}: it is {what}, {tail}")
    );
    assert_eq!(
        t.client().account(&t.alice).await.unwrap().next_nonce,
        alice_nonce
    );
    // ... nor with a hash the module does not run ...
    let wrong = "00".repeat(32);
    let mut misnamed = offer_args.to_vec();
    misnamed.extend(["--rules-code", &wrong]);
    t.fails(
        "alice",
        &misnamed,
        1,
        &format!("rules module trap_rules runs code {hash}, not the --rules-code given ({wrong}); nothing was sent"),
    )
    .await;
    // ... and offers it once she names its code.
    let mut named = offer_args.to_vec();
    named.extend(["--rules-code", &hash]);
    let out = t.ok("alice", &named).await;
    let game = out
        .split_whitespace()
        .nth(1)
        .unwrap()
        .trim_end_matches(':')
        .to_string();
    assert!(out.contains(&format!("trap_rules (code {hash})")), "{out}");

    // Bob's join is refused with one fixed line, nothing sent; a wrong hash is no opt-in either.
    let refusal = format!("refusing to join offer {game}: its rules code {hash} is {what}, {tail}");
    let bob_nonce = t.client().account(&t.bob).await.unwrap().next_nonce;
    for extra in [&[][..], &["--rules-code", wrong.as_str()][..]] {
        let mut join = vec!["join", game.as_str()];
        join.extend_from_slice(extra);
        let stderr = t.fails("bob", &join, 1, "refusing to join").await;
        assert_eq!(stderr.trim_end(), format!("error: {refusal}"));
    }
    assert_eq!(
        t.client().account(&t.bob).await.unwrap().next_nonce,
        bob_nonce
    );
    assert_eq!(t.gold(&t.bob).await, FAUCET);
    assert!(!t.cwd.join(format!("bob-moves/{game}.json")).exists());
    let view = t
        .client()
        .view("channel", &[("offer", &game)])
        .await
        .unwrap();
    assert_eq!(view["status"], "open");
    // Naming the exact code joins.
    let out = t.ok("bob", &["join", &game, "--rules-code", &hash]).await;
    assert!(
        out.contains(&format!(
            "joined game {game} as seat 1 against {}: stake {STAKE}, window 5 min 0 s, rules code {hash}",
            t.alice
        )),
        "{out}"
    );

    // Alice commits rock, Bob paper; Alice reveals (her client plays the rules fine so far).
    let view = t.client().view("channel", &[]).await.unwrap();
    let domain = Domain {
        chain: view["chain"].as_str().unwrap().to_string(),
        module: "channel".into(),
    };
    let tag = domain.game_tag(&game);
    let (salt0, salt1) = ([1u8; 32], [2u8; 32]);
    let (rock, paper) = (0u8, 1u8);
    t.ok(
        "alice",
        &["move", &game, &rps_commitment(&tag, 0, rock, &salt0)],
    )
    .await;
    t.ok(
        "bob",
        &["move", &game, &rps_commitment(&tag, 1, paper, &salt1)],
    )
    .await;
    let reveal = |choice: u8, salt: &[u8; 32]| {
        let mut v = vec![choice];
        v.extend_from_slice(salt);
        v
    };
    t.ok(
        "alice",
        &["move", &game, &hex::encode(reveal(rock, &salt0))],
    )
    .await;
    let out = t.ok("bob", &["sync", &game]).await;
    assert!(out.contains("3 moves held"), "{out}");

    // Bob's winning reveal, signed over the state after the three moves.
    let rules = LocalRules::from_code("trap_rules", &hash, &trap.wasm).unwrap();
    let mut state = rules.initial_state(&tag).unwrap();
    let mut moves: Vec<Value> = Vec::new();
    for (n, data, sig) in t.signed("bob", &game) {
        let bytes = hex::decode(&data).unwrap();
        state = rules
            .apply_move(&state, n, rules.mover_at(n).unwrap(), &bytes)
            .unwrap();
        moves.push(json!({"n": n, "data": data, "sig": sig}));
    }
    let winning = reveal(paper, &salt1);
    let msg = domain.move_message(&game, 3, &state_hash(&state), &t.bob, &winning);
    let last =
        json!({"n": 3, "data": hex::encode(&winning), "sig": sign_message(&t.key("bob"), msg)});
    // The rules trap on it here too (the local client cannot even compute the result).
    let local = rules
        .apply_move(&state, 3, 1, &winning)
        .unwrap_err()
        .to_string();
    assert!(local.contains("apply_move"), "{local}");

    // On chain: the history proving Bob's win cannot settle.
    let bob_sends = |op: Value| {
        let (client, key) = (t.client(), t.key("bob"));
        async move {
            client
                .send_and_wait(&key, Action::game("channel", &op), Duration::from_secs(60))
                .await
                .unwrap()
                .receipt
        }
    };
    let trapped = "rules module trap_rules apply_move: the callee trapped";
    let mut history = moves.clone();
    history.push(last.clone());
    let receipt =
        bob_sends(json!({"kind":"settle","game":game,"moves":history,"from_checkpoint":false}))
            .await;
    assert!(!receipt.ok);
    assert!(
        receipt.error.as_deref().unwrap_or("").contains(trapped),
        "{receipt:?}"
    );
    // Alice challenges Bob for move 3; his answer carries the winning move and fails the same way.
    let out = t.ok("alice", &["challenge", &game]).await;
    assert!(
        out.contains(&format!("challenged: {} owes move 3 by ", t.bob)),
        "{out}"
    );
    let receipt = bob_sends(json!({"kind":"respond","game":game,"moves":[last]})).await;
    assert!(!receipt.ok);
    assert!(
        receipt.error.as_deref().unwrap_or("").contains(trapped),
        "{receipt:?}"
    );
    // So the window passes and Bob, who won, loses by forfeit.
    let deadline = t.game_view(&game).await["challenge"]["deadline_ms"]
        .as_u64()
        .unwrap();
    t.advance_clock(deadline + 1 - t.head_time().await).await;
    let out = t.ok("alice", &["forfeit", &game]).await;
    assert!(
        out.contains(&format!("forfeit claimed: {} wins", t.alice)),
        "{out}"
    );
    t.ok("alice", &["withdraw", &game]).await;
    assert_eq!(t.gold(&t.alice).await, alice_gold + STAKE);
    assert_eq!(t.gold(&t.bob).await, FAUCET - STAKE);
}
