// play.mjs: one full tic-tac-toe game on the live Divi Games testnet gamechain.
// Run with Node 20+:  node play.mjs
// Needs the SDK next to it: copy web/sdk/ and web/vendor/ from the divi_games repo.
import fs from 'node:fs';
import { Chain, Key } from '@gamechain/sdk';

const chain = new Chain(process.env.GAMECHAIN_NODE ?? 'http://127.0.0.1:8645');
const DIR = process.env.GAMECHAIN_KEYS ?? '.';

// Two fresh testnet keys. The WIFs go to 0600 files, never to the terminal.
function newKey(name) {
  const k = Key.generate('testnet');
  fs.writeFileSync(`${DIR}/${name}.wif`, k.toWif() + '\n', { mode: 0o600 });
  return k;
}
const alice = newKey('alice');
const bob = newKey('bob');
console.log('alice', alice.address);
console.log('bob  ', bob.address);

const gold = async (who) => (await chain.account(who)).balances.GOLD ?? '0';
const nonce = async (k) => (await chain.account(k.address)).nonce;
const balances = async (label) =>
  console.log(`${label} alice ${await gold(alice.address)} bob ${await gold(bob.address)} escrow ${await gold('module:tictactoe')}`);

// Sign and send one action, wait for its receipt, print what matters.
async function send(k, action, label) {
  const txid = await chain.send(k, action);
  const r = await chain.waitForReceipt(txid, { timeoutMs: 90000 });
  console.log(`${label}: txid ${txid} height ${r.height} ok ${r.ok}${r.error ? ` error "${r.error}"` : ''}`);
  for (const ev of r.events) console.log(`   event ${ev.kind} ${JSON.stringify(ev.data)}`);
  return { txid, receipt: r };
}
const ttt = (op) => ({ type: 'game', game: 'tictactoe', op });

// 1. GOLD for both players (1000 GOLD each from the faucet)
await send(alice, { type: 'faucet', token: 'GOLD' }, 'faucet alice');
await send(bob, { type: 'faucet', token: 'GOLD' }, 'faucet bob');
await balances('before:');

// 2. Alice creates a table with a 1.00 GOLD stake ("100" base units)
const { txid: createTxid, receipt: created } = await send(alice, ttt({ kind: 'create', stake: '100' }), 'create');
const id = created.events[0].data.id;
console.log(`game id ${id} == first 16 hex of the txid: ${createTxid.slice(0, 16) === id}`);
console.log('open tables:', JSON.stringify(await chain.game('tictactoe', { open: 1 })));

// 3. Bob joins; Alice (x) moves first
await send(bob, ttt({ kind: 'join', id }), 'join bob');
await send(alice, ttt({ kind: 'move', id, cell: 0 }), 'move alice 0');
await send(alice, ttt({ kind: 'claim_timeout', id }), 'claim_timeout alice (too early)');

// 4. A bad move: Bob tries the cell Alice took. The tx fails but still uses a nonce.
console.log('bob nonce before', await nonce(bob));
await send(bob, ttt({ kind: 'move', id, cell: 0 }), 'move bob 0 (taken)');
console.log('bob nonce after ', await nonce(bob));

// 5. Play on to a win for x: the same moves as the first test in tictactoe.rs
await send(bob, ttt({ kind: 'move', id, cell: 3 }), 'move bob 3');
await send(alice, ttt({ kind: 'move', id, cell: 1 }), 'move alice 1');
await send(bob, ttt({ kind: 'move', id, cell: 4 }), 'move bob 4');
await send(alice, ttt({ kind: 'move', id, cell: 2 }), 'move alice 2');

// 6. What the chain says afterwards
await balances('after: ');
console.log('game:', JSON.stringify(await chain.game('tictactoe', { id })));
console.log('alice games:', (await chain.game('tictactoe', { player: alice.address })).games.map((g) => g.id));
console.log('bob games:  ', (await chain.game('tictactoe', { player: bob.address })).games.map((g) => g.id));
