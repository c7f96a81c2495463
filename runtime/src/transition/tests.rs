//! Tests of the state transition: the real tic-tac-toe guest (built from the current source)
//! and small WAT modules with and without `gc_end_block`.

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use gamechain_sdk::guest_build::build_guest;
use gamechain_sdk::{Amount, Checkpoint};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::*;
use crate::chain::signed_message::sign_message;
use crate::chain::{GenesisBalance, GenesisModule, StateCommitment};
use crate::registry::RegistryError;
use crate::{MemState, WasmModule};

mod deploy;
mod fees;
mod policies;
mod rules;
mod scheduled;
mod sealed;
mod sessions;

const CHAIN: &str = "gamechain-test";
const T0: u64 = 1_790_000_000_000;
const FAUCET: u128 = 100_000;

fn key(n: u8) -> SecretKey {
    SecretKey::from_bytes(Network::Testnet, [n; 32]).unwrap()
}

static SEQ: LazyLock<SecretKey> = LazyLock::new(|| key(1));
static ALICE: LazyLock<SecretKey> = LazyLock::new(|| key(2));
static BOB: LazyLock<SecretKey> = LazyLock::new(|| key(3));
static CAROL: LazyLock<SecretKey> = LazyLock::new(|| key(4));

static RUNTIME: LazyLock<Arc<Runtime>> =
    LazyLock::new(|| Runtime::new(RuntimeConfig::default()).unwrap());

/// A loaded module and the bytes it came from.
struct Loaded {
    module: Arc<WasmModule>,
    wasm: Vec<u8>,
}

impl Loaded {
    fn new(id: &str, wasm: Vec<u8>) -> Self {
        let module =
            Arc::new(WasmModule::new(&RUNTIME, id, &wasm).unwrap_or_else(|e| panic!("{id}: {e}")));
        Self { module, wasm }
    }
    fn hash(&self) -> String {
        hex::encode(Sha256::digest(&self.wasm))
    }
}

static TICTACTOE: LazyLock<Loaded> = LazyLock::new(|| {
    Loaded::new(
        "tictactoe",
        build_guest("tictactoe")
            .unwrap_or_else(|e| panic!("{e}"))
            .wasm,
    )
});

/// `runtime/tests/wat/counter.wat`: `gc_apply` increments `n`; no `gc_end_block`.
static COUNTER: LazyLock<Loaded> = LazyLock::new(|| {
    Loaded::new(
        "counter",
        wat::parse_str(include_str!("../../tests/wat/counter.wat")).unwrap(),
    )
});

/// `gc_end_block` increments the one-digit counter `n`; `gc_apply` does nothing.
const TICKER_WAT: &str = r#"
(module
  (import "gamechain_v1" "get" (func $get (param i32 i32 i32 i32) (result i64)))
  (import "gamechain_v1" "put" (func $put (param i32 i32 i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "n")
  (func (export "gc_abi_version") (result i32) (i32.const 1))
  (func (export "gc_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "gc_apply") (param i32 i32 i32 i32) (result i32) (i32.const 0))
  (func (export "gc_view") (param i32 i32) (result i32) (i32.const 1))
  (func (export "gc_end_block") (result i32)
    (if (i64.lt_s (call $get (i32.const 16) (i32.const 1) (i32.const 32) (i32.const 1)) (i64.const 0))
      (then (i32.store8 (i32.const 32) (i32.const 48))))
    (i32.store8 (i32.const 32) (i32.add (i32.load8_u (i32.const 32)) (i32.const 1)))
    (call $put (i32.const 16) (i32.const 1) (i32.const 32) (i32.const 1))
    (i32.const 0)))
"#;
static TICKER: LazyLock<Loaded> =
    LazyLock::new(|| Loaded::new("ticker", wat::parse_str(TICKER_WAT).unwrap()));

/// `gc_end_block` writes `x` and then fails with `invalid: end_block refused`.
const FAILER_WAT: &str = r#"
(module
  (import "gamechain_v1" "put" (func $put (param i32 i32 i32 i32)))
  (import "gamechain_v1" "output" (func $output (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "x")
  (data (i32.const 64) "{\"code\":\"invalid\",\"message\":\"end_block refused\"}")
  (func (export "gc_abi_version") (result i32) (i32.const 1))
  (func (export "gc_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "gc_apply") (param i32 i32 i32 i32) (result i32) (i32.const 0))
  (func (export "gc_view") (param i32 i32) (result i32) (i32.const 1))
  (func (export "gc_end_block") (result i32)
    (call $put (i32.const 16) (i32.const 1) (i32.const 16) (i32.const 1))
    (call $output (i32.const 64) (i32.const 48))
    (i32.const 1)))
"#;
static FAILER: LazyLock<Loaded> =
    LazyLock::new(|| Loaded::new("failer", wat::parse_str(FAILER_WAT).unwrap()));

fn genesis_with(modules: &[&Loaded], faucet: Option<u128>) -> Genesis {
    let cfg = RUNTIME.config();
    Genesis {
        chain_id: CHAIN.into(),
        network: Network::Testnet,
        sequencer: SEQ.address(),
        time_ms: T0,
        faucet: faucet.map(Amount),
        modules: modules
            .iter()
            .map(|l| GenesisModule {
                id: l.module.id().to_string(),
                code_hash: l.hash(),
            })
            .collect(),
        balances: vec![GenesisBalance {
            account: CAROL.address(),
            token: GOLD.into(),
            amount: Amount(5_000),
        }],
        fuel_apply: cfg.fuel_apply,
        fuel_view: cfg.fuel_view,
        fuel_end_block: cfg.fuel_end_block,
        memory_limit_bytes: cfg.memory_limit_bytes as u64,
        engine_config_hash: cfg.config_hash(),
        fees: None,
        validators: None,
        min_block_interval_ms: Some(1_000),
        max_clock_drift_ms: None,
        max_block_deploys: None,
        max_block_code_bytes: None,
        beacon: None,
        // New chains' commitment; the LtHash of older chains is replayed by the migration
        // fixtures (`testkit/migration.rs`).
        state_commitment: Some(StateCommitment::SparseMerkle),
    }
}

fn context(modules: &[&Loaded], faucet: Option<u128>) -> ChainContext {
    context_of(modules, genesis_with(modules, faucet))
}

fn context_of(modules: &[&Loaded], genesis: Genesis) -> ChainContext {
    let registry = Modules::new();
    for l in modules {
        registry.insert(l.module.clone(), &l.wasm).unwrap();
    }
    ChainContext::new(genesis, RUNTIME.clone(), registry).unwrap()
}

/// Code by hash of `modules` (for `genesis_state`).
fn codes(modules: &[&Loaded]) -> BTreeMap<String, Vec<u8>> {
    modules.iter().map(|l| (l.hash(), l.wasm.clone())).collect()
}

/// A chain in memory: the context, the committed state, its running hash and the head header.
struct Chain {
    ctx: ChainContext,
    state: MemState,
    hash: StateHash,
    head: Header,
}

impl Chain {
    fn new(modules: &[&Loaded], faucet: Option<u128>) -> Self {
        Self::of(modules, genesis_with(modules, faucet))
    }

    /// A chain of `genesis`, whose modules are `modules`.
    fn of(modules: &[&Loaded], genesis: Genesis) -> Self {
        let ctx = context_of(modules, genesis);
        let g = genesis_state(ctx.genesis(), &codes(modules)).unwrap();
        let state = MemState {
            map: g.entries.into_iter().collect(),
        };
        Self {
            ctx,
            state,
            hash: g.state_hash,
            head: g.header,
        }
    }

    fn input(&self, txs: Vec<SignedTx>) -> BlockInput {
        BlockInput {
            time_ms: self.head.time_ms + 1_000,
            checkpoint: Checkpoint {
                height: 7,
                hash: "ab".repeat(32),
            },
            beacon: None,
            txs,
        }
    }

    fn try_block(&self, txs: Vec<SignedTx>) -> Result<BlockOutput, TransitionError> {
        execute_block(
            &self.ctx,
            &self.state,
            &self.hash,
            &self.head,
            &self.input(txs),
        )
    }

    /// Executes and commits a block, checking the incremental root against a full recompute.
    fn block(&mut self, txs: Vec<SignedTx>) -> BlockOutput {
        let out = self.try_block(txs).unwrap_or_else(|e| panic!("{e}"));
        self.commit(out)
    }

    /// [`Chain::block`] stamped `time_ms` (at least the parent's plus the interval).
    fn block_at(&mut self, time_ms: u64, txs: Vec<SignedTx>) -> BlockOutput {
        let input = BlockInput {
            time_ms,
            ..self.input(txs)
        };
        let out = execute_block(&self.ctx, &self.state, &self.hash, &self.head, &input)
            .unwrap_or_else(|e| panic!("{e}"));
        self.commit(out)
    }

    /// Commits `out`, checking the incremental root against a full recompute.
    fn commit(&mut self, out: BlockOutput) -> BlockOutput {
        for (k, v) in &out.writes {
            assert_ne!(
                self.state.map.get(k),
                v.as_ref(),
                "{k}: a no-op write is not a net write"
            );
        }
        self.state.apply(out.writes.clone());
        assert_eq!(
            out.state_hash,
            StateHash::from_entries(self.ctx.genesis.state_commitment(), &self.state.map),
            "incremental root = full recompute"
        );
        assert_eq!(out.header.state_root, out.state_hash.root());
        assert_eq!(out.header.height, self.head.height + 1);
        assert_eq!(out.header.prev_hash, self.head.hash());
        self.hash = out.state_hash.clone();
        self.head = out.header.clone();
        out
    }

    fn balance(&self, account: &str) -> u128 {
        let kv = Overlay::new(&self.state);
        ledger::balance(&kv, account, GOLD)
    }

    fn nonce(&self, who: &SecretKey) -> u64 {
        account_nonce(&self.state, &who.address()).unwrap()
    }
}

fn tx(sk: &SecretKey, nonce: u64, action: Action) -> SignedTx {
    sign_tx(sk, CHAIN, nonce, action)
}

fn faucet_action() -> Action {
    Action::Faucet { token: GOLD.into() }
}

fn pay(to: &str, amount: u128) -> Action {
    Action::Transfer {
        to: to.into(),
        token: GOLD.into(),
        amount: Amount(amount),
    }
}

fn ttt(op: Value) -> Action {
    Action::game("tictactoe", &op)
}

fn ev(kind: &str, data: Value) -> Event {
    Event {
        kind: kind.into(),
        data,
    }
}

#[test]
fn genesis_state_and_root_match_a_full_recompute() {
    let genesis = genesis_with(&[&TICKER, &COUNTER], Some(FAUCET));
    let codes = codes(&[&TICKER, &COUNTER]);
    let g = genesis_state(&genesis, &codes).unwrap();
    assert_eq!(
        g.state_hash,
        StateHash::from_entries(
            StateCommitment::SparseMerkle,
            g.entries.iter().map(|(k, v)| (k, v))
        )
    );
    let keys: Vec<&str> = g.entries.iter().map(|(k, _)| k.as_str()).collect();
    let carol_bal = format!("bal/{}/GOLD", CAROL.address());
    let mut code_keys = [code_key(&TICKER.hash()), code_key(&COUNTER.hash())];
    code_keys.sort();
    assert_eq!(
        keys,
        [
            carol_bal.as_str(),
            "chain/genesis",
            &code_keys[0],
            &code_keys[1],
            "module/counter",
            "module/ticker",
            "token/GOLD"
        ]
    );
    let map: BTreeMap<_, _> = g.entries.iter().cloned().collect();
    assert_eq!(
        map["chain/genesis"],
        hex::encode(genesis.hash()).into_bytes()
    );
    assert_eq!(
        String::from_utf8(map["module/ticker"].clone()).unwrap(),
        format!(
            r#"{{"abi_version":1,"code_hash":"{}","deployed_height":0,"owner":"system"}}"#,
            TICKER.hash()
        )
    );
    assert_eq!(map[&carol_bal], b"5000");
    assert_eq!(map[&code_key(&TICKER.hash())], TICKER.wasm);
    // Genesis needs every module's code, and the right code.
    let mut wrong = codes.clone();
    wrong.insert(TICKER.hash(), COUNTER.wasm.clone());
    assert!(
        matches!(genesis_state(&genesis, &wrong), Err(GenesisError::Invalid(m)) if m.contains("does not hash"))
    );
    wrong.remove(&TICKER.hash());
    assert!(
        matches!(genesis_state(&genesis, &wrong), Err(GenesisError::Invalid(m)) if m.contains("no code"))
    );

    let h = &g.header;
    assert_eq!((h.height, h.prev_hash, h.time_ms), (0, [0; 32], T0));
    assert_eq!(h.sequencer, SEQ.address());
    assert_eq!(h.checkpoint, Checkpoint::default());
    assert_eq!(h.tx_root, crate::chain::tx_root(&[]));
    assert_eq!(h.receipt_root, crate::chain::receipt_root(&[]));
    assert_eq!(h.state_root, g.state_hash.root());
    assert_eq!(genesis_header(&genesis, &g.state_hash), g.header);

    // The genesis file is part of the state: another faucet amount is another root.
    let other = genesis_state(&genesis_with(&[&TICKER, &COUNTER], Some(1)), &codes).unwrap();
    assert_ne!(other.header.state_root, g.header.state_root);

    // The modules load from the codes genesis names, by hash.
    let modules = Modules::from_genesis(&RUNTIME, &genesis, &codes).unwrap();
    assert_eq!(
        modules
            .iter()
            .iter()
            .map(|e| (e.module.id(), e.has_end_block))
            .collect::<Vec<_>>(),
        [("counter", false), ("ticker", true)]
    );
    ChainContext::new(genesis.clone(), RUNTIME.clone(), modules).unwrap();
    let mut swapped = codes.clone();
    swapped.insert(TICKER.hash(), COUNTER.wasm.clone());
    assert!(matches!(
        Modules::from_genesis(&RUNTIME, &genesis, &swapped),
        Err(RegistryError::CodeHash { .. })
    ));
    swapped.remove(&TICKER.hash());
    assert!(matches!(
        Modules::from_genesis(&RUNTIME, &genesis, &swapped),
        Err(RegistryError::MissingCode { .. })
    ));
}

#[test]
fn a_block_plays_the_seed_game() {
    let mut chain = Chain::new(&[&TICTACTOE], Some(FAUCET));
    let (a, b, c) = (ALICE.address(), BOB.address(), CAROL.address());
    let create = tx(&ALICE, 2, ttt(json!({"kind": "create", "stake": "100"})));
    let id = create.txid()[..16].to_string();
    let txs = vec![
        tx(&ALICE, 0, faucet_action()),
        tx(&BOB, 0, faucet_action()),
        tx(&ALICE, 1, pay(&c, 500)),
        create.clone(),
        tx(&BOB, 1, ttt(json!({"kind": "join", "id": id}))),
        tx(&ALICE, 3, ttt(json!({"kind": "move", "id": id, "cell": 0}))),
        tx(&BOB, 2, ttt(json!({"kind": "move", "id": id, "cell": 0}))),
        tx(&BOB, 3, ttt(json!({"kind": "move", "id": id, "cell": 3}))),
    ];
    let out = chain.block(txs.clone());
    let r = &out.receipts;
    assert_eq!(r.len(), 8);
    assert_eq!(
        out.txids,
        txs.iter().map(SignedTx::txid).collect::<Vec<_>>()
    );
    assert_eq!(
        r[0],
        Receipt::success(
            vec![ev(
                "faucet",
                json!({"amount": "100000", "to": a, "token": "GOLD"})
            )],
            0
        )
    );
    assert_eq!(
        r[1].events[0].data,
        json!({"amount": "100000", "to": b, "token": "GOLD"})
    );
    assert_eq!(
        r[2],
        Receipt::success(
            vec![ev(
                "transfer",
                json!({"amount": "500", "from": a, "to": c, "token": "GOLD"})
            )],
            0
        )
    );
    assert!(r[3].ok && r[3].fuel_used > 0);
    assert_eq!(
        r[3].events,
        [ev(
            "tictactoe.created",
            json!({"id": id, "opponent": null, "stake": "100", "x": a})
        )]
    );
    assert_eq!(
        r[4].events,
        [ev("tictactoe.joined", json!({"id": id, "o": b}))]
    );
    assert_eq!(
        r[5].events,
        [ev(
            "tictactoe.moved",
            json!({"board": "x........", "by": a, "cell": 0, "id": id, "turn": "o"})
        )]
    );
    // The bad move: included, failed, no events, fuel charged, nonce used.
    assert!(!r[6].ok);
    assert_eq!(r[6].error.as_deref(), Some("invalid: cell is taken"));
    assert!(r[6].events.is_empty());
    assert!(r[6].fuel_used > 0);
    assert!(r[7].ok, "bob's next nonce is 3: the failed move used 2");
    assert_eq!(r[7].events[0].data["board"], "x..o.....");
    // The sdk always exports gc_end_block (GameModule::end_block does nothing by default).
    assert_eq!(out.end_block.len(), 1);
    let (id_end, end) = &out.end_block[0];
    assert!(
        id_end == "tictactoe" && end.ok && end.events.is_empty() && end.fuel_used > 0,
        "{end:?}"
    );
    assert_eq!(out.header.tx_root, crate::chain::tx_root(&txs));
    let mut all = r.clone();
    all.push(end.clone());
    assert_eq!(out.header.receipt_root, crate::chain::receipt_root(&all));

    assert_eq!(
        (chain.balance(&a), chain.balance(&b), chain.balance(&c)),
        (99_400, 99_900, 5_500)
    );
    assert_eq!(chain.balance("module:tictactoe"), 200);
    assert_eq!(
        (chain.nonce(&ALICE), chain.nonce(&BOB), chain.nonce(&CAROL)),
        (4, 4, 0)
    );
    let gold: gamechain_sdk::TokenInfo =
        serde_json::from_slice(&chain.state.map["token/GOLD"]).unwrap();
    assert_eq!(gold.supply, Amount(5_000 + 2 * FAUCET), "the faucet mints");

    // The reference game's failed move (`docs/tictactoe.md`, "Live game") alone in a block: only the nonce changes.
    assert_eq!(chain.nonce(&BOB), 4);
    let before = chain.balance(&b);
    let out = chain.block(vec![tx(
        &BOB,
        4,
        ttt(json!({"kind": "move", "id": id, "cell": 0})),
    )]);
    assert_eq!(
        out.receipts[0].error.as_deref(),
        Some("not allowed: not your turn")
    );
    let out2 = chain.block(vec![tx(
        &ALICE,
        4,
        ttt(json!({"kind": "move", "id": id, "cell": 3})),
    )]);
    assert_eq!(
        out2.receipts[0].error.as_deref(),
        Some("invalid: cell is taken")
    );
    assert_eq!(out.writes.keys().collect::<Vec<_>>(), [&nonce_key(&b)]);
    assert_eq!(out2.writes.keys().collect::<Vec<_>>(), [&nonce_key(&a)]);
    assert_eq!(
        (chain.nonce(&BOB), chain.nonce(&ALICE), chain.balance(&b)),
        (5, 5, before)
    );
}

/// The schema a module declares holds on chain (`docs/modules.md`, "Schema", "On chain"): an op
/// the module accepts with a field its schema does not declare, or a value the schema does not
/// allow, is refused with the schema's fixed text and nothing it did is kept; the module's own
/// texts for the errors it answers itself (the seed's `cell` and unknown-kind texts) are
/// unchanged.
#[test]
fn a_block_refuses_an_op_with_an_undeclared_field() {
    let mut chain = Chain::new(&[&TICTACTOE], Some(FAUCET));
    let create = tx(&ALICE, 1, ttt(json!({"kind": "create", "stake": "100"})));
    let id = create.txid()[..16].to_string();
    chain.block(vec![
        tx(&ALICE, 0, faucet_action()),
        tx(&BOB, 0, faucet_action()),
        create,
        tx(&BOB, 1, ttt(json!({"kind": "join", "id": id}))),
    ]);
    let out = chain.block(vec![
        tx(
            &ALICE,
            2,
            ttt(json!({"kind": "move", "id": id, "cell": 0, "note": "gg"})),
        ),
        tx(
            &ALICE,
            3,
            ttt(json!({"kind": "move", "id": id, "cell": "1"})),
        ),
        tx(&ALICE, 4, ttt(json!({"kind": "steal", "id": id}))),
        tx(&ALICE, 5, ttt(json!({"kind": "move", "id": id, "cell": 0}))),
    ]);
    let r = &out.receipts;
    assert_eq!(
        r[0].error.as_deref(),
        Some("invalid: op move: field note: unknown field")
    );
    assert!(r[0].events.is_empty() && r[0].fuel_used > 0);
    assert_eq!(
        r[1].error.as_deref(),
        Some("invalid: `cell` must be a number from 0 to 8")
    );
    assert_eq!(
        r[2].error.as_deref(),
        Some("invalid: unknown tictactoe op `steal`")
    );
    // The refused move was undone: Alice is still to move, and the same move as declared is
    // taken (the cell `"1"` was refused before the board was read).
    assert!(r[3].ok, "{:?}", r[3]);
    assert_eq!(r[3].events[0].data["board"], "x........");
    // What a checked move costs is printed (`--nocapture`; the same move cost 42,658 fuel
    // before guests checked ops, docs/modules.md "On chain").
    eprintln!(
        "fuel: move {}, refused for an undeclared field {}, bad cell {}, unknown kind {}",
        r[3].fuel_used, r[0].fuel_used, r[1].fuel_used, r[2].fuel_used
    );

    // The module takes any non-empty opponent other than the sender; the schema says an
    // address has no whitespace. The create is refused: no stake moves, no game is written.
    let gold = chain.balance(&ALICE.address());
    let out = chain.block(vec![tx(
        &ALICE,
        6,
        ttt(json!({"kind": "create", "stake": "100", "opponent": "bob smith"})),
    )]);
    assert_eq!(
        out.receipts[0].error.as_deref(),
        Some("invalid: op create: field opponent: expected address, got \"bob smith\"")
    );
    assert!(out.receipts[0].events.is_empty());
    assert_eq!(
        out.writes.keys().collect::<Vec<_>>(),
        [&nonce_key(&ALICE.address())]
    );
    assert_eq!(chain.balance(&ALICE.address()), gold);
}

#[test]
fn incremental_root_follows_a_whole_game_and_end_blocks() {
    let mut chain = Chain::new(&[&TICTACTOE, &TICKER, &COUNTER], Some(FAUCET));
    let (a, c) = (ALICE.address(), CAROL.address());
    chain.block(vec![
        tx(&ALICE, 0, faucet_action()),
        tx(&BOB, 0, faucet_action()),
    ]);
    let create = tx(&ALICE, 1, ttt(json!({"kind": "create", "stake": "100"})));
    let id = create.txid()[..16].to_string();
    chain.block(vec![
        create,
        tx(&BOB, 1, ttt(json!({"kind": "join", "id": id}))),
    ]);
    let mv =
        |sk: &SecretKey, n, cell| tx(sk, n, ttt(json!({"kind": "move", "id": id, "cell": cell})));
    chain.block(vec![mv(&ALICE, 2, 0), mv(&BOB, 2, 3), mv(&ALICE, 3, 1)]);
    chain.block(vec![]);
    let out = chain.block(vec![mv(&BOB, 3, 4), mv(&ALICE, 4, 2), mv(&BOB, 4, 5)]);
    assert_eq!(out.receipts[1].events[1].kind, "tictactoe.finished");
    assert_eq!(
        out.receipts[2].error.as_deref(),
        Some("invalid: game is not in play")
    );
    // Carol sends her whole balance: her balance key is deleted.
    let out = chain.block(vec![
        tx(&CAROL, 0, pay(&a, 5_000)),
        tx(&ALICE, 5, Action::game("counter", &json!({}))),
    ]);
    assert_eq!(out.writes.get(&format!("bal/{c}/GOLD")), Some(&None));
    assert_eq!(
        out.receipts[1].events,
        [ev("counter.incremented", json!({"n": 1}))]
    );
    assert_eq!(
        (chain.balance(&a), chain.balance("module:tictactoe")),
        (100_100 + 5_000, 0)
    );
    assert_eq!(
        chain.state.map["m/ticker/n"], b"6",
        "end_block ran once per block"
    );
    assert_eq!(chain.state.map["m/counter/n"], b"1");
    assert_eq!(chain.head.height, 6);
}
