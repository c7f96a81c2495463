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
//! writes every block. And it deploys the off-chain game modules (`channel`, `moveboard`,
//! `ttt_rules`, docs/channels.md) and plays one channel game per wave beside the others (see
//! [`channel_step`]): offer, join, a signed move on the move board, a challenge, a response, a
//! settlement by history (every signature checked and every rules call made on-chain), in odd
//! waves an equivocation proof that reverses the result, and the previous wave's payout.

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
use channel::{state_hash, Domain};
use gamechain_sdk::rules::GameRules;
use tictactoe_rules::TicTacToeRules;

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
        for (id, pkg) in [
            ("channel", "channel"),
            ("moveboard", "moveboard"),
            ("ttt_rules", "tictactoe_rules"),
        ] {
            let built = guest(pkg);
            codes.insert(built.sha256.clone(), built.wasm);
            modules.push(GenesisModule {
                id: id.into(),
                code_hash: built.sha256,
            });
        }
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
        validators: None,
        min_block_interval_ms: Some(BLOCK_MS),
        max_clock_drift_ms: None,
        max_block_deploys: None,
        max_block_code_bytes: None,
        beacon: None,
        state_commitment: None,
    };
    let ctx = context(&genesis, &codes, Allocation::Pooling { instances: 4 });
    let gs = genesis_state(&genesis, &codes).unwrap();
    let mut state = MemState {
        map: gs.entries.into_iter().collect(),
    };
    let mut hash = gs.state_hash;
    let domain = state.map.get("chain/genesis").map(|g| Domain {
        chain: String::from_utf8(g.clone()).expect("the genesis hash is text"),
        module: "channel".into(),
    });
    // Channel players: (key, nonce) of seat 0 and seat 1, new each wave.
    let mut channel_players: Vec<[(SecretKey, u64); 2]> = Vec::new();
    let mut head = gs.header.clone();
    let mut blocks = vec![Block {
        header: SignedHeader::sign(gs.header, &sequencer),
        scheduled: Vec::new(),
        txs: Vec::new(),
        end_block: Vec::new(),
    }];
    let mut sequencer_time = Duration::ZERO;
    let mut sequencer_cpu = Duration::ZERO;
    let mut txs = 0;
    let mut next_key = 0u64;
    for wave in 0..waves {
        if chaos {
            let k = u64::MAX - 100 - 2 * wave as u64;
            channel_players.push([(key(k), 0), (key(k - 1), 0)]);
        }
        // (x, o, nonce of x, nonce of o, game id)
        let mut players: Vec<(SecretKey, SecretKey, u64, u64, String)> = (0..games)
            .map(|_| {
                next_key += 2;
                (key(next_key - 2), key(next_key - 1), 0, 0, String::new())
            })
            .collect();
        for step in 0..10 {
            let mut block_txs: Vec<SignedTx> = Vec::with_capacity(games);
            let mut channel_tx = None;
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
                let domain = domain.as_ref().expect("genesis records its hash");
                if let Some(tx) = channel_step(domain, &mut channel_players, wave, step) {
                    channel_tx = Some(tx.txid());
                    block_txs.push(tx);
                }
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
                // The last block of a wave comes one channel window later, so the wave's
                // channel game (settled at step 7) is final when the next wave pays it out.
                head.time_ms
                    + if step == 9 {
                        CHANNEL_WINDOW_MS
                    } else {
                        BLOCK_MS
                    },
                Checkpoint::default(),
                None,
            )
            .unwrap();
            let mut included = Vec::with_capacity(block_txs.len());
            for tx in block_txs {
                let receipt = builder.push(&tx).unwrap().clone();
                // The channel game must really run: a refused op would test nothing.
                assert!(
                    channel_tx.as_ref() != Some(&tx.txid()) || receipt.ok,
                    "channel op refused at step {step}: {:?}",
                    receipt.error
                );
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
                scheduled: out.scheduled,
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

/// Moves of a generated channel game: x 0, o 4, x 1, o 8, x 2 (seat 0 wins on the top row).
const CHANNEL_MOVES: [u8; 5] = [0, 4, 1, 8, 2];
/// The channel game's response window, in ms of block time (the channel's minimum).
const CHANNEL_WINDOW_MS: u64 = channel::MIN_WINDOW_MS;

/// Seat `seat`'s signed move `n` (`cell`) of channel game `game` over the state after `moves`.
fn signed_move(
    domain: &Domain,
    players: &[(SecretKey, u64); 2],
    game: &str,
    moves: &[u8],
    cell: u8,
) -> serde_json::Value {
    let rules = TicTacToeRules;
    let mut state = rules.initial_state(&domain.game_tag(game));
    for (n, c) in moves.iter().enumerate() {
        let n = n as u64;
        state = rules.apply_move(&state, n, rules.mover_at(n), &[*c]);
    }
    let n = moves.len() as u64;
    let seat = rules.mover_at(n) as usize;
    assert!(rules.validate_move(&state, n, seat as u8, &[cell]));
    let (key, _) = &players[seat];
    let text = domain.move_message(game, n, &state_hash(&state), &key.address(), &[cell]);
    json!({"n": n, "data": hex::encode([cell]), "sig": gamechain_runtime::chain::sign_message(key, text)})
}

/// The channel transaction of `wave`'s game at `step` (one per block, beside the tic-tac-toe
/// games): 0, 1 faucets; 2 offer (the wave's offer is the channel's `wave`-th); 3 join; 4 the
/// previous wave's payout (its game is final by now) and seat 0's first move posted to the move
/// board; 5 seat 0 challenges with it; 6 seat 1 responds; 7 seat 0 settles with the whole
/// history (the game concludes, final one window later); 8 in odd waves seat 1 proves that seat 0
/// signed two moves for move 2, which reverses the result.
fn channel_step(
    domain: &Domain,
    players: &mut [[(SecretKey, u64); 2]],
    wave: usize,
    step: usize,
) -> Option<SignedTx> {
    let game = format!("{wave:016x}");
    let ps = &players[wave];
    let mv = |moves: &[u8], cell: u8| signed_move(domain, ps, &game, moves, cell);
    let all: Vec<_> = (0..CHANNEL_MOVES.len())
        .map(|i| mv(&CHANNEL_MOVES[..i], CHANNEL_MOVES[i]))
        .collect();
    let ch = |op: serde_json::Value| Action::game("channel", &op);
    let (seat, action) = match step {
        0 | 1 => (
            step,
            Action::Faucet {
                token: "GOLD".into(),
            },
        ),
        2 => (
            0,
            ch(
                json!({"kind": "offer", "rules": "ttt_rules", "stake": "10", "window_ms": CHANNEL_WINDOW_MS}),
            ),
        ),
        3 => (1, ch(json!({"kind": "join", "offer": game}))),
        4 if wave > 0 => {
            // Anyone may pay out: seat 1 of this wave does, for the previous wave's game.
            let prev = format!("{:016x}", wave - 1);
            (1, ch(json!({"kind": "withdraw", "game": prev})))
        }
        4 => (
            0,
            Action::game(
                "moveboard",
                &json!({"kind": "post", "game": game, "type": 1, "payload": all[0].to_string()}),
            ),
        ),
        5 => (
            0,
            ch(
                json!({"kind": "challenge", "game": game, "moves": [all[0]], "from_checkpoint": false}),
            ),
        ),
        6 => (
            1,
            ch(json!({"kind": "respond", "game": game, "moves": [all[1]]})),
        ),
        7 => (
            0,
            ch(json!({"kind": "settle", "game": game, "moves": all, "from_checkpoint": false})),
        ),
        8 if wave % 2 == 1 => {
            // Seat 0 also signed cell 3 for move 2, over the same previous state.
            let other = mv(&CHANNEL_MOVES[..2], 3);
            let prev = {
                let rules = TicTacToeRules;
                let mut s = rules.initial_state(&domain.game_tag(&game));
                for (n, c) in CHANNEL_MOVES[..2].iter().enumerate() {
                    s = rules.apply_move(&s, n as u64, rules.mover_at(n as u64), &[*c]);
                }
                state_hash(&s)
            };
            (
                1,
                ch(
                    json!({"kind": "prove_equivocation", "game": game, "a": all[2], "b": other, "prev_a": prev, "prev_b": prev}),
                ),
            )
        }
        _ => return None,
    };
    let (key, nonce) = &mut players[wave][seat];
    let tx = sign_tx(key, CHAIN_ID, *nonce, action);
    *nonce += 1;
    Some(tx)
}
