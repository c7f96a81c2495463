//! A tic-tac-toe chain made in process, for replay benchmarks and determinism tests: waves of
//! concurrent games, each block holding one step of every game of its wave, executed and
//! signed the way the node's sequencer does it (`BlockBuilder::push` per transaction, which
//! checks its signature, then `finish` and the header signature), with the sequencer's own
//! execution time measured.
//!
//! A game's steps (one per block): faucet x, faucet o, create (stake 10), join, then x 0, o 4,
//! x 1, o 8, x 2 (x wins on the top row); every `FAIL_EVERY`-th game also gets a second move by o
//! right after o's first (`not allowed: not your turn`: a failed receipt whose nonce counts).
//!
//! With `chaos`, genesis also deploys [`CHAOS_WAT`] and every block gets one of its writes, every
//! other block one trapping call and one block per wave an out-of-fuel loop; its `end_block`
//! writes every block.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gamechain_chain::wire::{Block, IncludedTx};
use gamechain_runtime::chain::{
    Action, Genesis, GenesisModule, Network, SecretKey, SignedHeader, SignedTx,
};
use gamechain_runtime::{
    genesis_state, sign_tx, Allocation, BlockBuilder, ChainContext, MemState, Modules, Runtime,
};
use gamechain_sdk::{Amount, Checkpoint};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::guest;

/// Chain id of generated chains.
pub const CHAIN_ID: &str = "bench-chain";
/// Every this-many-th game gets one move out of turn.
pub const FAIL_EVERY: usize = 4;
/// Module `chaos`, by hand in the ABI v1: `gc_apply` looks at byte 6 of the op (`{"k":"t"}`):
/// `t` traps (`unreachable`), `l` loops until its fuel runs out, anything else writes the op
/// under key `w`; `gc_end_block` bumps the one-byte counter `n`.
pub const CHAOS_WAT: &str = r#"
(module
  (import "gamechain_v1" "get" (func $get (param i32 i32 i32 i32) (result i64)))
  (import "gamechain_v1" "put" (func $put (param i32 i32 i32 i32)))
  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 4096))
  (data (i32.const 16) "n")
  (data (i32.const 17) "w")
  (func (export "gc_abi_version") (result i32) (i32.const 1))
  (func (export "gc_alloc") (param $len i32) (result i32)
    (local $ptr i32)
    (local.set $ptr (global.get $heap))
    (global.set $heap (i32.add (local.get $ptr) (local.get $len)))
    (local.get $ptr))
  (func (export "gc_apply") (param i32 i32) (param $op i32) (param $len i32) (result i32)
    (local $c i32)
    (local.set $c (i32.load8_u offset=6 (local.get $op)))
    (if (i32.eq (local.get $c) (i32.const 116)) (then unreachable))
    (if (i32.eq (local.get $c) (i32.const 108)) (then (loop $forever (br $forever))))
    (call $put (i32.const 17) (i32.const 1) (local.get $op) (local.get $len))
    (i32.const 0))
  (func (export "gc_view") (param i32 i32) (result i32) (i32.const 1))
  (func (export "gc_end_block") (result i32)
    (if (i64.lt_s (call $get (i32.const 16) (i32.const 1) (i32.const 32) (i32.const 1)) (i64.const 0))
      (then (i32.store8 (i32.const 32) (i32.const 48))))
    (i32.store8 (i32.const 32) (i32.add (i32.load8_u (i32.const 32)) (i32.const 1)))
    (call $put (i32.const 16) (i32.const 1) (i32.const 32) (i32.const 1))
    (i32.const 0)))
"#;

/// Milliseconds between generated blocks.
const BLOCK_MS: u64 = 1_000;

/// A generated chain: blocks 0..=head as the node stores them, and the sequencer's timing.
pub struct GameChain {
    /// The genesis.
    pub genesis: Genesis,
    /// The modules' code by code hash (tic-tac-toe, and `chaos` when asked for).
    pub codes: BTreeMap<String, Vec<u8>>,
    /// Blocks from 0, signed, with their receipts.
    pub blocks: Vec<Block>,
    /// Transactions in all blocks.
    pub txs: usize,
    /// Wall time the sequencer spent making the blocks (push with signature check, finish,
    /// sign).
    pub sequencer_time: Duration,
    /// CPU time of the same ([`thread_cpu`]): what it costs whatever else the machine runs.
    pub sequencer_cpu: Duration,
    /// The state after the head (the sequencer's).
    pub state: MemState,
}

/// CPU time the calling thread has used so far (`CLOCK_THREAD_CPUTIME_ID`).
pub fn thread_cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid, writable timespec; the clock id is a constant Linux supports.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// A deterministic key: the index in the first 8 bytes, the rest 1.
fn key(i: u64) -> SecretKey {
    let mut bytes = [1u8; 32];
    bytes[..8].copy_from_slice(&(i + 1).to_le_bytes());
    SecretKey::from_bytes(Network::Testnet, bytes).expect("a valid scalar")
}

/// The chain context for `genesis` with `codes`, under `allocation`.
pub fn context(
    genesis: &Genesis,
    codes: &BTreeMap<String, Vec<u8>>,
    allocation: Allocation,
) -> Arc<ChainContext> {
    let runtime = Runtime::new(gamechain_runtime::runtime_config(genesis, allocation)).unwrap();
    let modules = Modules::from_genesis(&runtime, genesis, codes).unwrap();
    Arc::new(ChainContext::new(genesis.clone(), runtime, modules).unwrap())
}

/// `waves` waves of `games` concurrent games, with the `chaos` module's calls when `chaos` (see
/// the module docs).
pub fn game_chain(games: usize, waves: usize, chaos: bool) -> GameChain {
    let built = guest("tictactoe");
    let mut codes = BTreeMap::from([(built.sha256.clone(), built.wasm)]);
    let mut modules = vec![GenesisModule {
        id: "tictactoe".into(),
        code_hash: built.sha256,
    }];
    if chaos {
        let wasm = wat::parse_str(CHAOS_WAT).expect("CHAOS_WAT parses");
        let hash = hex::encode(Sha256::digest(&wasm));
        codes.insert(hash.clone(), wasm);
        modules.push(GenesisModule {
            id: "chaos".into(),
            code_hash: hash,
        });
    }
    let chaos_key = key(u64::MAX - 2);
    let mut chaos_nonce = 0;
    let sequencer = key(u64::MAX - 1);
    let config = gamechain_runtime::RuntimeConfig::default();
    let genesis = Genesis {
        chain_id: CHAIN_ID.into(),
        network: Network::Testnet,
        sequencer: sequencer.address(),
        time_ms: 1_764_000_000_000,
        faucet: Some(Amount(100_000)),
        modules,
        balances: Vec::new(),
        fuel_apply: config.fuel_apply,
        fuel_view: config.fuel_view,
        fuel_end_block: config.fuel_end_block,
        memory_limit_bytes: config.memory_limit_bytes as u64,
        engine_config_hash: config.config_hash(),
        fees: None,
    };
    let ctx = context(&genesis, &codes, Allocation::Pooling { instances: 4 });
    let gs = genesis_state(&genesis, &codes).unwrap();
    let mut state = MemState {
        map: gs.entries.into_iter().collect(),
    };
    let mut hash = gs.state_hash;
    let mut head = gs.header.clone();
    let mut blocks = vec![Block {
        header: SignedHeader::sign(gs.header, &sequencer),
        txs: Vec::new(),
        end_block: Vec::new(),
    }];
    let mut sequencer_time = Duration::ZERO;
    let mut sequencer_cpu = Duration::ZERO;
    let mut txs = 0;
    let mut next_key = 0u64;
    for _ in 0..waves {
        // (x, o, nonce of x, nonce of o, game id)
        let mut players: Vec<(SecretKey, SecretKey, u64, u64, String)> = (0..games)
            .map(|_| {
                next_key += 2;
                (key(next_key - 2), key(next_key - 1), 0, 0, String::new())
            })
            .collect();
        for step in 0..10 {
            let mut block_txs: Vec<SignedTx> = Vec::with_capacity(games);
            for (g, (x, o, nx, no, id)) in players.iter_mut().enumerate() {
                let mv = |id: &str, cell: u32| {
                    Action::game(
                        "tictactoe",
                        &json!({"kind": "move", "id": id, "cell": cell}),
                    )
                };
                let (who, nonce, action) = match step {
                    0 => (
                        &*x,
                        nx,
                        Action::Faucet {
                            token: "GOLD".into(),
                        },
                    ),
                    1 => (
                        &*o,
                        no,
                        Action::Faucet {
                            token: "GOLD".into(),
                        },
                    ),
                    2 => (
                        &*x,
                        nx,
                        Action::game("tictactoe", &json!({"kind": "create", "stake": "10"})),
                    ),
                    3 => (
                        &*o,
                        no,
                        Action::game("tictactoe", &json!({"kind": "join", "id": id})),
                    ),
                    4 => (&*x, nx, mv(id, 0)),
                    5 => (&*o, no, mv(id, 4)),
                    6 if g % FAIL_EVERY == 0 => (&*o, no, mv(id, 0)),
                    6 => continue,
                    7 => (&*x, nx, mv(id, 1)),
                    8 => (&*o, no, mv(id, 8)),
                    _ => (&*x, nx, mv(id, 2)),
                };
                let tx = sign_tx(who, CHAIN_ID, *nonce, action);
                *nonce += 1;
                if step == 2 {
                    *id = tx.txid()[..16].to_string();
                }
                block_txs.push(tx);
            }
            if chaos {
                let mut ops = vec![format!("w{step}")];
                if step % 2 == 0 {
                    ops.push("t".into());
                }
                if step == 5 {
                    ops.push("l".into());
                }
                for op in ops {
                    let action = Action::game("chaos", &json!({ "k": op }));
                    block_txs.push(sign_tx(&chaos_key, CHAIN_ID, chaos_nonce, action));
                    chaos_nonce += 1;
                }
            }
            let start = Instant::now();
            let cpu = thread_cpu();
            let mut builder = BlockBuilder::new(
                &ctx,
                &state,
                &hash,
                &head,
                head.time_ms + BLOCK_MS,
                Checkpoint::default(),
            )
            .unwrap();
            let mut included = Vec::with_capacity(block_txs.len());
            for tx in block_txs {
                let receipt = builder.push(&tx).unwrap().clone();
                included.push(IncludedTx { tx, receipt });
            }
            let out = builder.finish().unwrap();
            let header = SignedHeader::sign(out.header.clone(), &sequencer);
            sequencer_time += start.elapsed();
            sequencer_cpu += thread_cpu() - cpu;
            txs += included.len();
            state.apply(out.writes);
            hash = out.state_hash;
            head = out.header;
            blocks.push(Block {
                header,
                txs: included,
                end_block: out.end_block,
            });
        }
    }
    GameChain {
        genesis,
        codes,
        blocks,
        txs,
        sequencer_time,
        sequencer_cpu,
        state,
    }
}
