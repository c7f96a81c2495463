//! A chain in process for the channel tests (`tests/channels.rs`): genesis with the rules
//! modules, the channel, the move board and the test guards and rules; one signed transaction
//! per block through `execute_block` (signatures, receipts, roots as a node runs them), every
//! accepted op, its events and every view answer checked against the module's schema
//! (`gamechain.schema`, docs/modules.md, "Schema"), each
//! block one second after its parent unless the test chooses the time ([`Net::advance`]: block
//! time is what windows count); and a replay of every block on a second runtime (instance reuse
//! off) that must reach the same state hash. Escrow conservation is checked after every block.
//! Plus [`OffChain`], two players' side of a game: the rules run natively from the game's tag,
//! every move signed over its canonical text ([`channel::Domain`]).

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use channel::{state_hash, Domain};
use gamechain_runtime::chain::{
    sign_message, Action, Genesis, GenesisBalance, GenesisModule, Header, Network, Receipt,
    SecretKey, StateHash,
};
use gamechain_runtime::{
    execute_block, genesis_state, sign_tx, BlockInput, ChainContext, MemState, Modules, Origin,
    Overlay, Runtime, RuntimeConfig, WasmModule,
};
use gamechain_sdk::rules::GameRules;
use gamechain_sdk::{ledger, Amount, Checkpoint, GOLD};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::guest;

/// The chain id of test chains.
pub const CHAIN: &str = "channel-test";
/// GOLD each player starts with.
pub const START: u128 = 1_000;
/// Milliseconds between two blocks unless a test chooses ([`Net::advance`]).
pub const BLOCK_MS: u64 = 1_000;

/// A join guard that admits everyone (`gc_pure_admit` answers `true`).
pub const GUARD_YES: &str = r#"
(module
  (memory (export "memory") 1)
  (data (i32.const 16) "true")
  (func (export "gc_abi_version") (result i32) (i32.const 1))
  (func (export "gc_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "gc_apply") (param i32 i32 i32 i32) (result i32) (i32.const 2))
  (func (export "gc_view") (param i32 i32) (result i32) (i32.const 2))
  (func (export "gc_pure_admit") (param i32 i32) (result i64) (i64.const 0x1000000004)))
"#;
/// A join guard that traps (`gc_pure_admit` runs `unreachable`).
pub const GUARD_TRAP: &str = r#"
(module
  (memory (export "memory") 1)
  (func (export "gc_abi_version") (result i32) (i32.const 1))
  (func (export "gc_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "gc_apply") (param i32 i32 i32 i32) (result i32) (i32.const 2))
  (func (export "gc_view") (param i32 i32) (result i32) (i32.const 2))
  (func (export "gc_pure_admit") (param i32 i32) (result i64) unreachable))
"#;

/// A join guard that refuses (`gc_pure_admit` answers `false`).
pub const GUARD_NO: &str = r#"
(module
  (memory (export "memory") 1)
  (data (i32.const 16) "false")
  (func (export "gc_abi_version") (result i32) (i32.const 1))
  (func (export "gc_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "gc_apply") (param i32 i32 i32 i32) (result i32) (i32.const 2))
  (func (export "gc_view") (param i32 i32) (result i32) (i32.const 2))
  (func (export "gc_pure_admit") (param i32 i32) (result i64) (i64.const 0x1000000005)))
"#;
/// A join guard that loops until its fuel runs out.
pub const GUARD_LOOP: &str = r#"
(module
  (memory (export "memory") 1)
  (func (export "gc_abi_version") (result i32) (i32.const 1))
  (func (export "gc_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "gc_apply") (param i32 i32 i32 i32) (result i32) (i32.const 2))
  (func (export "gc_view") (param i32 i32) (result i32) (i32.const 2))
  (func (export "gc_pure_admit") (param i32 i32) (result i64) (loop (br 0)) (i64.const 0)))
"#;
/// A "rules" module whose pure entry points read state: `gc_pure_initial_state` (and
/// `gc_pure_admit`) read the raw key `chain/genesis` (through `read_raw`) and answer `true`
/// when it is there. Called read-only by module id (`call_pure`: a guard) it answers; called by
/// code hash (`call_code`: as rules) it traps, since a call by code has no state.
pub const STATE_RULES: &str = r#"
(module
  (import "gamechain_v1" "read_raw" (func $read_raw (param i32 i32 i32 i32) (result i64)))
  (memory (export "memory") 1)
  (data (i32.const 16) "true")
  (data (i32.const 32) "chain/genesis")
  (func (export "gc_abi_version") (result i32) (i32.const 1))
  (func (export "gc_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "gc_apply") (param i32 i32 i32 i32) (result i32) (i32.const 2))
  (func (export "gc_view") (param i32 i32) (result i32) (i32.const 2))
  (func $answer (result i64)
    (if (i64.lt_s (call $read_raw (i32.const 32) (i32.const 13) (i32.const 2048) (i32.const 128))
                  (i64.const 0))
      (then (return (i64.const -1))))
    (i64.const 0x1000000004))
  (func (export "gc_pure_initial_state") (param i32 i32) (result i64) (call $answer))
  (func (export "gc_pure_admit") (param i32 i32) (result i64) (call $answer))
  (func (export "gc_pure_mover_at") (param i32 i32) (result i64) (i64.const 0x1000000001))
  (func (export "gc_pure_is_over") (param i32 i32) (result i64) (i64.const 0x1100000001)))
"#;

/// Rules whose `mover_at` names seat 5 (the seed's `BadRules`): refused by the usability check.
pub const BAD_RULES: &str = r#"
(module
  (memory (export "memory") 1)
  (data (i32.const 16) "\00\05")
  (func (export "gc_abi_version") (result i32) (i32.const 1))
  (func (export "gc_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "gc_apply") (param i32 i32 i32 i32) (result i32) (i32.const 2))
  (func (export "gc_view") (param i32 i32) (result i32) (i32.const 2))
  (func (export "gc_pure_initial_state") (param i32 i32) (result i64) (i64.const 0x1000000001))
  (func (export "gc_pure_is_over") (param i32 i32) (result i64) (i64.const 0x1000000001))
  (func (export "gc_pure_mover_at") (param i32 i32) (result i64) (i64.const 0x1100000001)))
"#;

/// A test key.
pub fn key(n: u8) -> SecretKey {
    SecretKey::from_bytes(Network::Testnet, [n; 32]).unwrap()
}

/// The modules of a test chain: `(id, wasm)`.
fn codes() -> &'static [(String, Vec<u8>)] {
    static CODES: LazyLock<Vec<(String, Vec<u8>)>> = LazyLock::new(|| {
        vec![
            ("channel".into(), guest("channel").wasm),
            ("moveboard".into(), guest("moveboard").wasm),
            ("ttt_rules".into(), guest("tictactoe_rules").wasm),
            ("rps_rules".into(), guest("rps_rules").wasm),
            ("guard_yes".into(), wat::parse_str(GUARD_YES).unwrap()),
            ("guard_trap".into(), wat::parse_str(GUARD_TRAP).unwrap()),
            ("guard_no".into(), wat::parse_str(GUARD_NO).unwrap()),
            ("guard_loop".into(), wat::parse_str(GUARD_LOOP).unwrap()),
            ("state_rules".into(), wat::parse_str(STATE_RULES).unwrap()),
            ("bad_rules".into(), wat::parse_str(BAD_RULES).unwrap()),
        ]
    });
    &CODES
}

fn hash_hex(wasm: &[u8]) -> String {
    hex::encode(Sha256::digest(wasm))
}

fn genesis(rt: &Runtime, players: &[&SecretKey]) -> Genesis {
    let cfg = rt.config();
    Genesis {
        chain_id: CHAIN.into(),
        network: Network::Testnet,
        sequencer: key(1).address(),
        time_ms: 1_790_000_000_000,
        faucet: None,
        modules: codes()
            .iter()
            .map(|(id, wasm)| GenesisModule {
                id: id.clone(),
                code_hash: hash_hex(wasm),
            })
            .collect(),
        balances: players
            .iter()
            .map(|p| GenesisBalance {
                account: p.address(),
                token: GOLD.into(),
                amount: Amount(START),
            })
            .collect(),
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
        state_commitment: None,
    }
}

/// The shared runtime's compiled modules, loaded once per process.
fn loaded(rt: &Arc<Runtime>) -> Modules {
    static LOADED: LazyLock<Vec<(Arc<WasmModule>, Vec<u8>)>> = LazyLock::new(|| {
        codes()
            .iter()
            .map(|(id, wasm)| {
                let m = WasmModule::load(&crate::runtime(), id, wasm, None, Origin::Genesis)
                    .unwrap_or_else(|e| panic!("{id}: {e}"));
                (Arc::new(m), wasm.clone())
            })
            .collect()
    });
    let modules = Modules::new();
    if Arc::ptr_eq(rt, &crate::runtime()) {
        for (m, wasm) in LOADED.iter() {
            modules.insert(m.clone(), wasm).unwrap();
        }
    }
    modules
}

/// A test chain.
pub struct Net {
    ctx: ChainContext,
    /// The committed state.
    pub state: MemState,
    hash: StateHash,
    head: Header,
    genesis_head: (MemState, StateHash, Header),
    inputs: Vec<BlockInput>,
    nonces: BTreeMap<String, u64>,
}

impl Net {
    /// A chain where each of `players` holds [`START`] GOLD.
    pub fn new(players: &[&SecretKey]) -> Self {
        Self::on(crate::runtime(), players)
    }

    fn on(rt: Arc<Runtime>, players: &[&SecretKey]) -> Self {
        let genesis = genesis(&rt, players);
        let by_hash: BTreeMap<String, Vec<u8>> = codes()
            .iter()
            .map(|(_, w)| (hash_hex(w), w.clone()))
            .collect();
        let g = genesis_state(&genesis, &by_hash).unwrap();
        let modules = loaded(&rt);
        let ctx = ChainContext::new(genesis, rt, modules).unwrap();
        let state = MemState {
            map: g.entries.into_iter().collect(),
        };
        Self {
            ctx,
            genesis_head: (state.clone(), g.state_hash.clone(), g.header.clone()),
            state,
            hash: g.state_hash,
            head: g.header,
            inputs: Vec::new(),
            nonces: BTreeMap::new(),
        }
    }

    /// The height of the last block.
    pub fn height(&self) -> u64 {
        self.head.height
    }

    /// The time of the last block, ms since the Unix epoch.
    pub fn time_ms(&self) -> u64 {
        self.head.time_ms
    }

    fn block(&mut self, txs: Vec<gamechain_runtime::chain::SignedTx>) -> Vec<Receipt> {
        self.block_after(BLOCK_MS, txs)
    }

    /// A block `after_ms` after the last one, holding `txs`.
    fn block_after(
        &mut self,
        after_ms: u64,
        txs: Vec<gamechain_runtime::chain::SignedTx>,
    ) -> Vec<Receipt> {
        let input = BlockInput {
            time_ms: self.head.time_ms + after_ms,
            checkpoint: Checkpoint::default(),
            txs,
            beacon: None,
        };
        let out = execute_block(&self.ctx, &self.state, &self.hash, &self.head, &input)
            .unwrap_or_else(|e| panic!("{e}"));
        self.state.apply(out.writes);
        self.hash = out.state_hash;
        self.head = out.header;
        self.inputs.push(input);
        self.check_escrow();
        out.receipts
    }

    /// Sends `op` to `module` signed by `who` in a block of its own; its receipt.
    pub fn send_to(&mut self, who: &SecretKey, module: &str, op: Value) -> Receipt {
        let nonce = self.nonces.entry(who.address()).or_insert(0);
        let tx = sign_tx(who, CHAIN, *nonce, Action::game(module, &op));
        *nonce += 1;
        let r = self.block(vec![tx]).remove(0);
        self.check_schema(module, &op, &r);
        r
    }

    /// The schema (`gamechain.schema` section, docs/modules.md) of the code `module` runs, if
    /// it declares one.
    fn schema(&self, module: &str) -> Option<gamechain_sdk::schema::Schema> {
        let entry = self.ctx.module(&self.state, module).ok()??;
        let text = entry.module.schema()?;
        Some(gamechain_sdk::schema::Schema::parse(text).expect("a loaded schema parses"))
    }

    /// Panics unless an accepted op and its events match the module's schema, when it has one.
    fn check_schema(&self, module: &str, op: &Value, r: &Receipt) {
        let Some(schema) = self.schema(module).filter(|_| r.ok) else {
            return;
        };
        schema
            .check_op(op)
            .unwrap_or_else(|m| panic!("{module}: schema mismatch: {m}"));
        for e in &r.events {
            schema
                .check_event(&e.kind, &e.data)
                .unwrap_or_else(|m| panic!("{module}: schema mismatch: {m}"));
        }
    }

    /// Deploys (or upgrades, when `who` owns it already) module `module` with `code` by a
    /// signed `deploy` in a block of its own; panics unless it succeeds.
    pub fn deploy(&mut self, who: &SecretKey, module: &str, code: &[u8]) {
        let nonce = self.nonces.entry(who.address()).or_insert(0);
        let action = Action::deploy(module, code.to_vec());
        let tx = sign_tx(who, CHAIN, *nonce, action);
        *nonce += 1;
        let r = self.block(vec![tx]).remove(0);
        assert!(r.ok, "deploy {module}: {:?}", r.error);
    }

    /// Sends a channel op; panics unless it succeeds. The receipt.
    pub fn ok(&mut self, who: &SecretKey, op: Value) -> Receipt {
        let r = self.send_to(who, "channel", op.clone());
        assert!(r.ok, "{op}: {:?}", r.error);
        r
    }

    /// Sends a channel op; panics unless it fails. The receipt's error text.
    pub fn refused(&mut self, who: &SecretKey, op: Value) -> String {
        let r = self.send_to(who, "channel", op.clone());
        assert!(!r.ok, "{op} should fail");
        r.error.unwrap()
    }

    /// `n` empty blocks, [`BLOCK_MS`] apart.
    pub fn idle(&mut self, n: u64) {
        for _ in 0..n {
            self.block(Vec::new());
        }
    }

    /// Sends a channel op in a block `after_ms` after the last one; panics unless it fails. The
    /// receipt's error text.
    pub fn refused_after(&mut self, who: &SecretKey, after_ms: u64, op: Value) -> String {
        let r = self.send_after(who, after_ms, op.clone());
        assert!(!r.ok, "{op} should fail");
        r.error.unwrap()
    }

    /// One empty block `ms` after the last one: block time passes without transactions.
    pub fn advance(&mut self, ms: u64) {
        self.block_after(ms, Vec::new());
    }

    /// Sends `op` to the channel signed by `who` in a block `after_ms` after the last one.
    pub fn send_after(&mut self, who: &SecretKey, after_ms: u64, op: Value) -> Receipt {
        let nonce = self.nonces.entry(who.address()).or_insert(0);
        let tx = sign_tx(who, CHAIN, *nonce, Action::game("channel", &op));
        *nonce += 1;
        let r = self.block_after(after_ms, vec![tx]).remove(0);
        self.check_schema("channel", &op, &r);
        r
    }

    /// The channel's answer to view `query` (e.g. `{"game": id, "at_ms": t}`).
    pub fn view(&self, query: &[(&str, &str)]) -> Result<Value, String> {
        let module = self
            .ctx
            .module(&self.state, "channel")
            .unwrap()
            .expect("the channel is in genesis")
            .module;
        let query: gamechain_sdk::Query = query
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let out = module
            .call_view_with(&Overlay::new(&self.state), &query, Some(&self.ctx))
            .unwrap();
        if let (Ok(answer), Some(schema)) = (&out.result, self.schema("channel")) {
            schema
                .check_view(None, &query, answer)
                .unwrap_or_else(|m| panic!("channel: schema mismatch: {m}"));
        }
        out.result.map_err(|e| e.to_string())
    }

    /// GOLD of `account`.
    pub fn balance(&self, account: &str) -> u128 {
        ledger::balance(&Overlay::new(&self.state), account, GOLD)
    }

    /// The channel's record `game/<id>` (or `offer/<id>`).
    pub fn record(&self, key: &str) -> Value {
        let raw = self
            .state
            .map
            .get(&format!("m/channel/{key}"))
            .unwrap_or_else(|| panic!("no {key}"));
        serde_json::from_slice(raw).unwrap()
    }

    /// The signing domain of this chain's channel.
    pub fn domain(&self) -> Domain {
        Domain {
            chain: String::from_utf8(self.state.map["chain/genesis"].clone()).unwrap(),
            module: "channel".into(),
        }
    }

    /// Escrow conservation: the channel's GOLD is exactly the stakes of its open offers plus
    /// twice the stakes of its unpaid games.
    fn check_escrow(&self) {
        let mut owed = 0u128;
        for (k, v) in self.state.map.range("m/channel/".to_string()..) {
            if !k.starts_with("m/channel/") {
                break;
            }
            let rec: Value = match serde_json::from_slice(v) {
                Ok(v) => v,
                Err(_) => continue,
            };
            let stake: u128 = rec["stake"].as_str().map_or(0, |s| s.parse().unwrap());
            if k.starts_with("m/channel/offer/") && rec["status"] == "open" {
                owed += stake;
            }
            if k.starts_with("m/channel/game/") && rec["paid"] == false {
                owed += 2 * stake;
            }
        }
        assert_eq!(self.balance("module:channel"), owed, "escrow conservation");
    }

    /// Re-executes every block on a second runtime (instance reuse off, nothing precompiled)
    /// and checks it reaches the same state hash and header.
    pub fn assert_replays(&self) {
        let rt = Runtime::new(RuntimeConfig {
            reuse_instances: false,
            ..RuntimeConfig::default()
        })
        .unwrap();
        let genesis = self.ctx.genesis().clone();
        let ctx = ChainContext::new(genesis, rt, Modules::new()).unwrap();
        let (mut state, mut hash, mut head) = self.genesis_head.clone();
        for input in &self.inputs {
            let out = execute_block(&ctx, &state, &hash, &head, input).unwrap();
            state.apply(out.writes);
            hash = out.state_hash;
            head = out.header;
        }
        assert!(hash == self.hash, "replay reaches the same state");
        assert_eq!(head.hash(), self.head.hash(), "and the same header");
    }
}

/// Two players' side of one game: the rules natively, the signed moves kept in order.
pub struct OffChain<'r> {
    rules: &'r dyn GameRules,
    /// The game id.
    pub game: String,
    /// The game's tag (what `initial_state` got).
    pub tag: [u8; 32],
    domain: Domain,
    players: [String; 2],
    keys: [SecretKey; 2],
    /// The state after the moves so far.
    pub state: Vec<u8>,
    /// Moves made.
    pub n: u64,
    /// Every signed move, in order (`{"n","data","sig"}`).
    pub moves: Vec<Value>,
}

impl<'r> OffChain<'r> {
    /// A game `game` of `players` (seat order) whose moves `keys` sign.
    pub fn new(
        rules: &'r dyn GameRules,
        net: &Net,
        game: &str,
        players: [&SecretKey; 2],
        keys: [&SecretKey; 2],
    ) -> Self {
        let domain = net.domain();
        let tag = domain.game_tag(game);
        Self {
            rules,
            game: game.into(),
            tag,
            domain,
            players: [players[0].address(), players[1].address()],
            keys: [keys[0].clone(), keys[1].clone()],
            state: rules.initial_state(&tag),
            n: 0,
            moves: Vec::new(),
        }
    }

    /// The signed move `data` for the current position, by the seat due (not applied).
    pub fn sign(&self, data: &[u8]) -> Value {
        let seat = self.rules.mover_at(self.n) as usize;
        let msg = self.domain.move_message(
            &self.game,
            self.n,
            &state_hash(&self.state),
            &self.players[seat],
            data,
        );
        json!({ "n": self.n, "data": hex::encode(data), "sig": sign_message(&self.keys[seat], msg) })
    }

    /// Makes move `data` (checked by the rules, as a receiving client does); its signed move.
    pub fn play(&mut self, data: &[u8]) -> Value {
        let seat = self.rules.mover_at(self.n);
        assert!(
            self.rules.validate_move(&self.state, self.n, seat, data),
            "illegal test move"
        );
        let signed = self.sign(data);
        self.state = self.rules.apply_move(&self.state, self.n, seat, data);
        self.n += 1;
        self.moves.push(signed.clone());
        signed
    }

    /// Hash of the current state.
    pub fn hash(&self) -> String {
        state_hash(&self.state)
    }

    /// The final/draw agreement over the current state, valid until block time
    /// `valid_until_ms`, signed by seat `seat`.
    pub fn sign_final(&self, seat: usize, valid_until_ms: u64) -> String {
        let msg = self
            .domain
            .final_message(&self.game, &self.hash(), valid_until_ms);
        sign_message(&self.keys[seat], msg)
    }

    /// Seat `seat`'s signature of a checkpoint at the current position.
    pub fn sign_checkpoint(&self, seat: usize) -> String {
        let msg = self
            .domain
            .checkpoint_message(&self.game, self.n, &self.hash());
        sign_message(&self.keys[seat], msg)
    }
}
