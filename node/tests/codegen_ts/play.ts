// play.ts: a staked tic-tac-toe game between two new keys through the generated typed client
// (tictactoe.ts, written next to this file by `gamechain module codegen --ts`), against the node
// at $GAMECHAIN_NODE. Type-checked with `tsc --strict`, compiled and run by
// node/tests/web/codegen_ts.rs; prints one JSON line at the end. Any failed check throws.
import { Chain, Key } from '@gamechain/sdk';
import {
  MODULE, OpRefused, SchemaError, TictactoeClient, createOp, gameAction, isEventKind, moveOp,
  parseEvent, viewGame,
  type FinishedEvent, type GameAnswer, type OpResult, type TictactoeEvent, type TictactoeOp,
} from './tictactoe.js';

// Only what is used of Node's globals (no @types/node needed).
declare const process: { env: Record<string, string | undefined> };

function check(ok: boolean, what: string): asserts ok {
  if (!ok) throw new Error(`check failed: ${what}`);
}

const chain = new Chain(process.env.GAMECHAIN_NODE ?? 'http://127.0.0.1:8645');
const ttt = new TictactoeClient(chain);
const alice = Key.generate('testnet');
const bob = Key.generate('testnet');
const gold = async (address: string): Promise<bigint> => BigInt((await chain.account(address)).balances.GOLD ?? '0');

// GOLD from the faucet for both players.
for (const key of [alice, bob]) {
  const receipt = await chain.waitForReceipt(await chain.send(key, { type: 'faucet', token: 'GOLD' }), { timeoutMs: 60000 });
  check(receipt.ok, `faucet: ${receipt.error}`);
}

// The wire form: amounts as decimal strings, `kind` first, the SDK's game action.
const stake = 100n;
const op: TictactoeOp = createOp({ stake });
check(JSON.stringify(op) === '{"kind":"create","stake":"100"}', `createOp: ${JSON.stringify(op)}`);
check(JSON.stringify(gameAction(moveOp({ id: 'ab', cell: 4 }))) === '{"type":"game","game":"tictactoe","op":{"kind":"move","id":"ab","cell":4}}', 'gameAction');
check(MODULE === 'tictactoe', 'MODULE');
// Values the schema refuses never reach the node.
for (const bad of [() => moveOp({ id: 'ab', cell: -1 }), () => createOp({ stake: -1n })]) {
  try {
    bad();
    throw new Error('a bad op was built');
  } catch (e) {
    check(e instanceof SchemaError, `SchemaError expected, got ${e}`);
  }
}

const info = await ttt.viewInfo();
check(info.max_stake === 100000n && info.timeout_blocks === 150 && info.game === 'tictactoe', `info ${info.max_stake}`);

const aliceBefore = await gold(alice.address);
const bobBefore = await gold(bob.address);

// Alice opens a staked table.
const created = await ttt.create(alice, { stake });
const first: TictactoeEvent | undefined = created.events[0];
check(first !== undefined && first.kind === 'tictactoe.created', 'a created event');
const id = first.data.id;
check(id === created.txid.slice(0, 16), 'the game id is the txid prefix');
check(first.data.stake === stake && first.data.x === alice.address && first.data.opponent === null, 'created data');
const open = await ttt.viewOpen({ open: '1' });
check(open.games.some((g) => g.id === id && g.status === 'open' && g.stake === stake), 'the game is open');
const mine = await ttt.viewPlayer({ player: alice.address });
check(mine.games.length === 1 && mine.games[0]?.x === alice.address, 'alice\'s games');

// Bob joins; an out-of-turn move is refused in its block (OpRefused carries the receipt).
await ttt.join(bob, { id });
try {
  await ttt.move(bob, { id, cell: 4 });
  throw new Error('bob moved out of turn');
} catch (e) {
  check(e instanceof OpRefused && (e.receipt.error ?? '').includes('not your turn'), `OpRefused expected, got ${e}`);
}

// Alice (x) wins on the top row.
const moves: Array<[Key, number]> = [[alice, 0], [bob, 3], [alice, 1], [bob, 4], [alice, 2]];
let last: OpResult | null = null;
for (const [key, cell] of moves) {
  last = await ttt.move(key, { id, cell });
  const moved = last.events.find((e) => e.kind === 'tictactoe.moved');
  check(moved !== undefined && moved.kind === 'tictactoe.moved' && moved.data.cell === cell && moved.data.by === key.address, `moved ${cell}`);
}
check(last !== null, 'moves were made');
const finished = last.events.find((e): e is FinishedEvent => e.kind === 'tictactoe.finished');
check(finished !== undefined, 'a finished event');
const payout: bigint = finished.data.payout;
check(typeof payout === 'bigint' && payout === 2n * stake, `payout ${payout}`);
check(finished.data.winner === alice.address && finished.data.result === 'x_won' && finished.data.reason === 'line', 'finished data');

// The finished game through the typed view (the function and the client's method agree).
const game: GameAnswer = await viewGame(chain, { id });
check(JSON.stringify(game, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v)) === JSON.stringify(await ttt.viewGame({ id }), (_k, v) => (typeof v === 'bigint' ? `${v}n` : v)), 'view function and method');
check(game.status === 'finished' && game.winner === alice.address && game.o === bob.address, `game ${game.status}`);
check(game.result === 'x_won' && game.reason === 'line' && game.board === 'xxxoo....' && game.moves === 5, `board ${game.board}`);
check(typeof game.stake === 'bigint' && game.stake === stake && typeof game.created_height === 'number', 'game types');

// The balances: the winner is up one stake, the loser down one.
const aliceGain = (await gold(alice.address)) - aliceBefore;
const bobGain = (await gold(bob.address)) - bobBefore;
check(aliceGain === stake && bobGain === -stake, `balances ${aliceGain} ${bobGain}`);

// Events of a block: others' kinds are null; a listed kind with wrong data is a SchemaError.
check(parseEvent({ kind: 'transfer', data: {} }) === null && isEventKind('tictactoe.joined') && !isEventKind('transfer'), 'parseEvent');
try {
  parseEvent({ kind: 'tictactoe.finished', data: { id, result: 'x_won', winner: null, reason: 'line', payout: 200 } });
  throw new Error('a numeric payout was accepted');
} catch (e) {
  check(e instanceof SchemaError && e.path === 'tictactoe.finished.payout', `SchemaError at payout, got ${e}`);
}

console.log(JSON.stringify({ id, winner: finished.data.winner, payout: payout.toString(), status: game.status }));
