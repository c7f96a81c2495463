//! Property test: random tic-tac-toe and mnk games through the chain's state transition
//! (`BlockBuilder`, signed transactions, both guests built from the current source and loaded
//! at genesis), each transaction mirrored natively (the module's Rust code on a `KvCtx` over
//! `MockKv`, with the block's txid, height and time).
//!
//! Each case plays a few games one after another, from the same genesis (four players with
//! 1,000 GOLD each): a creation with a random stake (sometimes more than the creator has, so
//! `insufficient` is exercised), then random steps — the player to move marks a random free
//! cell, an out-of-turn or out-of-range move, a join, cancel, resign or timeout claim by anyone,
//! an unknown op, 150 empty blocks and a timeout claim — and finally the game is played out (or cancelled) so it
//! always ends. Properties, checked after every block:
//!
//! - GOLD is conserved: the balances in state (players and both escrows) add up to what genesis
//!   minted;
//! - escrow holds exactly the stakes of the live game (the stake when open, twice when playing)
//!   and is zero after every game ending;
//! - native and wasm agree: each receipt (ok or the error text, events) equals the native
//!   result, and the module state and balances equal the native run's byte for byte.
//!
//! Cases: `GAME_PROPS_CASES` (default 64: about 220 games, 10–30 s in the dev profile on a
//! 2-core machine); a long run, e.g. about 3,500 games:
//! `GAME_PROPS_CASES=1000 cargo test -p gamechain-tests --test tests game_props -- --nocapture`
//! (measured: 3,400+ games in 222 s beside two fuzzers; every 100 games it prints how they
//! ended: line, draw, timeout, resign, cancelled, create refused).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex};

use gamechain_runtime::chain::StateHash;
use gamechain_runtime::chain::{
    Action, Genesis, GenesisBalance, GenesisModule, Header, Network, Receipt, SecretKey,
};
use gamechain_runtime::{
    genesis_state, sign_tx, Allocation, BlockBuilder, ChainContext, MemState, Modules, Runtime,
};
use gamechain_sdk::{ledger, Amount, BlockEnv, Checkpoint, GameModule, KvCtx, MockKv, GOLD};
use gamechain_tests::guest;
use proptest::prelude::*;
use serde_json::{json, Value};

const CHAIN_ID: &str = "props-chain";
/// Players with genesis GOLD.
const PLAYERS: usize = 4;
/// Each player's genesis balance, base units.
const FUNDS: u128 = 1_000;
const BLOCK_MS: u64 = 1_000;
const TIMEOUT_BLOCKS: u64 = 150;

fn key(i: u64) -> SecretKey {
    let mut bytes = [3u8; 32];
    bytes[..8].copy_from_slice(&(i + 1).to_le_bytes());
    SecretKey::from_bytes(Network::Testnet, bytes).expect("a valid scalar")
}

/// The genesis, its context (both guests compiled once) and its state, shared by every case.
struct Fixture {
    ctx: Arc<ChainContext>,
    genesis_state: MemState,
    genesis_hash: StateHash,
    genesis_header: Header,
    players: Vec<SecretKey>,
}

static FIXTURE: LazyLock<Fixture> = LazyLock::new(|| {
    let players: Vec<SecretKey> = (0..PLAYERS as u64).map(key).collect();
    let sequencer = key(1_000);
    let mut codes = BTreeMap::new();
    let mut modules = Vec::new();
    for id in ["mnk", "tictactoe"] {
        let built = guest(id);
        modules.push(GenesisModule {
            id: id.into(),
            code_hash: built.sha256.clone(),
        });
        codes.insert(built.sha256, built.wasm);
    }
    let config = gamechain_runtime::RuntimeConfig::default();
    let genesis = Genesis {
        chain_id: CHAIN_ID.into(),
        network: Network::Testnet,
        sequencer: sequencer.address(),
        time_ms: 1_764_000_000_000,
        faucet: None,
        modules,
        balances: players
            .iter()
            .map(|p| GenesisBalance {
                account: p.address(),
                token: GOLD.into(),
                amount: Amount(FUNDS),
            })
            .collect(),
        fuel_apply: config.fuel_apply,
        fuel_view: config.fuel_view,
        fuel_end_block: config.fuel_end_block,
        memory_limit_bytes: config.memory_limit_bytes as u64,
        engine_config_hash: config.config_hash(),
        fees: None,
        validators: None,
        min_block_interval_ms: Some(BLOCK_MS),
        max_clock_drift_ms: None,
        max_block_deploys: None,
        max_block_code_bytes: None,
        beacon: None,
        state_commitment: None,
    };
    let runtime = Runtime::new(gamechain_runtime::runtime_config(
        &genesis,
        Allocation::OnDemand,
    ))
    .unwrap();
    let modules = Modules::from_genesis(&runtime, &genesis, &codes).unwrap();
    let ctx = Arc::new(ChainContext::new(genesis.clone(), runtime, modules).unwrap());
    let gs = genesis_state(&genesis, &codes).unwrap();
    Fixture {
        ctx,
        genesis_state: MemState {
            map: gs.entries.into_iter().collect(),
        },
        genesis_hash: gs.state_hash,
        genesis_header: gs.header,
        players,
    }
});

/// Which game, with its board for mnk.
#[derive(Debug, Clone, Copy)]
enum Kind {
    TicTacToe,
    Mnk { rows: u32, cols: u32, k: u32 },
}

/// One random step of a game (see the module docs).
#[derive(Debug, Clone)]
enum Step {
    /// The natural next step: join when open, else the player to move marks free cell `n`
    /// (modulo the free cells).
    Play(u16),
    /// Player `actor` sends op `op` (0 join, 1 move at raw cell `cell`, 2 cancel, 3 resign,
    /// 4 claim_timeout, 5 an unknown op).
    Wild { actor: usize, op: u8, cell: u16 },
    /// 150 empty blocks, then the player not to move claims the timeout (when in play).
    Wait,
}

#[derive(Debug, Clone)]
struct Plan {
    kind: Kind,
    stake: u128,
    x: usize,
    o: usize,
    invite: bool,
    steps: Vec<Step>,
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        Just(Kind::TicTacToe),
        (1u32..=5, 1u32..=5)
            .prop_flat_map(|(rows, cols)| (Just(rows), Just(cols), 1..=rows.max(cols)))
            .prop_map(|(rows, cols, k)| Kind::Mnk { rows, cols, k }),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        24 => any::<u16>().prop_map(Step::Play),
        8 => (0..PLAYERS, 0u8..6, 0u16..30).prop_map(|(actor, op, cell)| Step::Wild { actor, op, cell }),
        1 => Just(Step::Wait),
    ]
}

fn plan() -> impl Strategy<Value = Plan> {
    (
        kind(),
        prop_oneof![2 => Just(0u128), 5 => 1u128..=300, 1 => 900u128..=1_200],
        0..PLAYERS,
        1..PLAYERS,
        any::<bool>(),
        prop::collection::vec(step(), 0..30),
    )
        .prop_map(|(kind, stake, x, d, invite, steps)| Plan {
            kind,
            stake,
            x,
            o: (x + d) % PLAYERS,
            invite,
            steps,
        })
}

/// A chain being played: the sequencer's state and the native mirror.
struct Chain {
    f: &'static Fixture,
    state: MemState,
    hash: StateHash,
    head: Header,
    nonces: Vec<u64>,
    native: MockKv,
    minted: u128,
}

impl Chain {
    fn new() -> Self {
        let f = &*FIXTURE;
        let mut native = MockKv::default();
        for p in &f.players {
            ledger::set_balance(&mut native, &p.address(), GOLD, FUNDS);
        }
        Chain {
            f,
            state: f.genesis_state.clone(),
            hash: f.genesis_hash.clone(),
            head: f.genesis_header.clone(),
            nonces: vec![0; PLAYERS],
            native,
            minted: FUNDS * PLAYERS as u128,
        }
    }

    fn address(&self, player: usize) -> String {
        self.f.players[player].address()
    }

    /// One block with one op of `module` by `player` (none: an empty block, which changes no
    /// balance or module key, so it is not checked); its receipt, checked against the native
    /// run, and the tx's txid.
    fn block(&mut self, tx: Option<(usize, &str, Value)>) -> Option<(Receipt, String)> {
        let time_ms = self.head.time_ms + BLOCK_MS;
        let mut builder = BlockBuilder::new(
            &self.f.ctx,
            &self.state,
            &self.hash,
            &self.head,
            time_ms,
            Checkpoint::default(),
            None,
        )
        .unwrap();
        let height = builder.height();
        let mut result = None;
        let mut mirror = None;
        if let Some((player, module, op)) = tx {
            let signed = sign_tx(
                &self.f.players[player],
                CHAIN_ID,
                self.nonces[player],
                Action::game(module, &op),
            );
            self.nonces[player] += 1;
            let receipt = builder
                .push(&signed)
                .expect("a well-signed tx is included")
                .clone();
            let txid = signed.txid();
            mirror = Some((module, player, op, receipt.clone(), txid.clone()));
            result = Some((receipt, txid));
        }
        let out = builder.finish().unwrap();
        if let Some((module, player, op, receipt, txid)) = mirror {
            let env = BlockEnv {
                height,
                block_time_ms: time_ms,
                checkpoint: Checkpoint::default(),
                sequencer: self.f.ctx.genesis().sequencer.clone(),
                beacon: None,
                beacon_key: None,
            };
            self.native_apply(module, &env, &txid, player, &op, &receipt);
        }
        self.state.apply(out.writes);
        self.hash = out.state_hash;
        self.head = out.header;
        if result.is_some() {
            self.check_mirror();
            self.check_gold();
        }
        result
    }

    /// Runs `op` natively as the chain did, and compares with `receipt`.
    fn native_apply(
        &mut self,
        module: &str,
        env: &BlockEnv,
        txid: &str,
        player: usize,
        op: &Value,
        receipt: &Receipt,
    ) {
        let sender = self.address(player);
        let native: &dyn GameModule = match module {
            "tictactoe" => &tictactoe::TicTacToe,
            _ => &mnk::Mnk,
        };
        let mut ctx = KvCtx::for_call(self.native.clone(), module, env, txid, Some(&sender));
        let result = native.apply(&mut ctx, &sender, op);
        let events: Vec<(String, Value)> = receipt
            .events
            .iter()
            .map(|e| (e.kind.clone(), e.data.clone()))
            .collect();
        match &result {
            Ok(()) => {
                assert!(receipt.ok, "{op}: native ok, chain {:?}", receipt.error);
                assert_eq!(ctx.events, events, "{op}: events differ");
                self.native = ctx.kv;
            }
            Err(e) => {
                assert!(!receipt.ok, "{op}: native {e}, chain ok");
                assert_eq!(receipt.error.as_deref(), Some(&*e.to_string()), "{op}");
                assert!(events.is_empty(), "{op}: a failed receipt with events");
            }
        }
    }

    /// Module state and balances equal the native run's.
    fn check_mirror(&self) {
        let relevant = |k: &&String| k.starts_with("m/") || k.starts_with("bal/");
        let chain: BTreeMap<&String, &Vec<u8>> =
            self.state.map.iter().filter(|(k, _)| relevant(k)).collect();
        let native: BTreeMap<&String, &Vec<u8>> = self
            .native
            .state
            .iter()
            .filter(|(k, _)| relevant(k))
            .collect();
        if chain != native {
            let keys: Vec<&&String> = chain
                .keys()
                .chain(native.keys())
                .filter(|k| chain.get(**k) != native.get(**k))
                .collect();
            panic!("native and wasm state differ at {keys:?}");
        }
    }

    /// Every `bal/<account>/GOLD` adds up to what genesis minted.
    fn check_gold(&self) {
        let mut kv = MockKv::default();
        let mut accounts = Vec::new();
        for (k, v) in self.state.map.range("bal/".to_string()..) {
            if !k.starts_with("bal/") {
                break;
            }
            kv.state.insert(k.clone(), v.clone());
            if let Some(account) = k.strip_prefix("bal/").and_then(|r| r.strip_suffix("/GOLD")) {
                accounts.push(account.to_string());
            }
        }
        let total: u128 = accounts.iter().map(|a| ledger::balance(&kv, a, GOLD)).sum();
        assert_eq!(total, self.minted, "GOLD is not conserved");
    }

    fn escrow(&self, module: &str) -> u128 {
        let mut kv = MockKv::default();
        let k = format!("bal/module:{module}/GOLD");
        if let Some(v) = self.state.map.get(&k) {
            kv.state.insert(k, v.clone());
        }
        ledger::balance(&kv, &format!("module:{module}"), GOLD)
    }

    fn game(&self, module: &str, id: &str) -> Value {
        let raw = &self.state.map[&format!("m/{module}/game/{id}")];
        serde_json::from_slice(raw).expect("a game is JSON")
    }
}

/// A move op of `kind` at flat cell `cell` (row-major).
fn move_op(kind: Kind, id: &str, cell: u32) -> Value {
    match kind {
        Kind::TicTacToe => json!({"kind": "move", "id": id, "cell": cell}),
        Kind::Mnk { cols, .. } => {
            json!({"kind": "move", "id": id, "row": cell / cols, "col": cell % cols})
        }
    }
}

fn is_over(game: &Value) -> bool {
    matches!(game["status"].as_str(), Some("finished" | "cancelled"))
}

/// The escrow the live game should hold.
fn locked(game: &Value) -> u128 {
    let stake: u128 = game["stake"].as_str().unwrap().parse().unwrap();
    match game["status"].as_str().unwrap() {
        "open" => stake,
        "playing" => 2 * stake,
        _ => 0,
    }
}

/// The next natural op of a live game: join, or the player to move marks free cell `n`.
fn natural(chain: &Chain, kind: Kind, plan: &Plan, id: &str, n: u16) -> (usize, Value) {
    let game = chain.game(module_of(kind), id);
    if game["status"] == "open" {
        return (plan.o, json!({"kind": "join", "id": id}));
    }
    let free: Vec<u32> = game["board"]
        .as_str()
        .unwrap()
        .chars()
        .enumerate()
        .filter(|(_, c)| *c == '.')
        .map(|(i, _)| i as u32)
        .collect();
    // Whoever joined plays `o` (a wild join may have seated another player than `plan.o`).
    let seat = game[game["turn"].as_str().unwrap()].as_str().unwrap();
    let mover = (0..PLAYERS).find(|&p| chain.address(p) == seat).unwrap();
    let cell = free[n as usize % free.len()];
    (mover, move_op(kind, id, cell))
}

fn module_of(kind: Kind) -> &'static str {
    match kind {
        Kind::TicTacToe => "tictactoe",
        Kind::Mnk { .. } => "mnk",
    }
}

/// Games played so far by this process (printed every 100 with `--nocapture`).
static GAMES: AtomicUsize = AtomicUsize::new(0);

/// How the games of this process ended (`reason` of the game, or `create refused`), printed
/// with the count.
static ENDINGS: Mutex<BTreeMap<String, usize>> = Mutex::new(BTreeMap::new());

fn ended(how: &str) {
    *ENDINGS.lock().unwrap().entry(how.to_string()).or_default() += 1;
}

/// Plays `plan` to its end on `chain`, checking the escrow after every block.
fn play(chain: &mut Chain, plan: &Plan) {
    let n = GAMES.fetch_add(1, Ordering::Relaxed) + 1;
    if n.is_multiple_of(100) {
        eprintln!(
            "game_props: {n} games, endings {:?}",
            ENDINGS.lock().unwrap()
        );
    }
    let module = module_of(plan.kind);
    let mut create = json!({"kind": "create", "stake": plan.stake.to_string()});
    if plan.invite {
        create["opponent"] = json!(chain.address(plan.o));
    }
    if let Kind::Mnk { rows, cols, k } = plan.kind {
        create["rows"] = json!(rows);
        create["cols"] = json!(cols);
        create["k"] = json!(k);
    }
    let (receipt, txid) = chain.block(Some((plan.x, module, create))).unwrap();
    if !receipt.ok {
        assert_eq!(chain.escrow(module), 0, "a failed create moved GOLD");
        ended("create refused");
        return;
    }
    let id = txid[..16].to_string();
    let check_escrow = |chain: &Chain| {
        let game = chain.game(module, &id);
        assert_eq!(chain.escrow(module), locked(&game), "escrow of {game}");
        if is_over(&game) {
            assert_eq!(chain.escrow(module), 0, "escrow after the ending of {game}");
            ended(game["reason"].as_str().unwrap_or("?"));
        }
        is_over(&game)
    };
    check_escrow(chain);
    for step in &plan.steps {
        match *step {
            Step::Play(n) => {
                let (who, op) = natural(chain, plan.kind, plan, &id, n);
                chain.block(Some((who, module, op)));
            }
            Step::Wild { actor, op, cell } => {
                let op = match op {
                    0 => json!({"kind": "join", "id": id}),
                    1 => move_op(plan.kind, &id, u32::from(cell)),
                    2 => json!({"kind": "cancel", "id": id}),
                    3 => json!({"kind": "resign", "id": id}),
                    4 => json!({"kind": "claim_timeout", "id": id}),
                    _ => json!({"kind": "nope", "id": id}),
                };
                chain.block(Some((actor, module, op)));
            }
            Step::Wait => {
                for _ in 0..TIMEOUT_BLOCKS {
                    chain.block(None);
                }
                // The player not to move claims the game.
                let game = chain.game(module, &id);
                if game["status"] == "playing" {
                    let other = if game["turn"] == "x" { "o" } else { "x" };
                    let seat = game[other].as_str().unwrap();
                    let who = (0..PLAYERS).find(|&p| chain.address(p) == seat).unwrap();
                    let claim = json!({"kind": "claim_timeout", "id": id});
                    chain.block(Some((who, module, claim)));
                }
            }
        }
        if check_escrow(chain) {
            return;
        }
    }
    // Play it out: an open game is cancelled, a game in play is filled cell by cell.
    loop {
        let game = chain.game(module, &id);
        let (who, op) = if game["status"] == "open" {
            (plan.x, json!({"kind": "cancel", "id": id}))
        } else {
            natural(chain, plan.kind, plan, &id, 0)
        };
        let (receipt, _) = chain.block(Some((who, module, op))).unwrap();
        assert!(receipt.ok, "playing out: {:?}", receipt.error);
        if check_escrow(chain) {
            return;
        }
    }
}

fn cases() -> u32 {
    std::env::var("GAME_PROPS_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn games_conserve_gold_empty_escrow_and_agree_with_native(
        plans in prop::collection::vec(plan(), 1..=6)
    ) {
        let mut chain = Chain::new();
        for plan in &plans {
            play(&mut chain, plan);
        }
        prop_assert_eq!(chain.escrow("tictactoe"), 0);
        prop_assert_eq!(chain.escrow("mnk"), 0);
    }
}
