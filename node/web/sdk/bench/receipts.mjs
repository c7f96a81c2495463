// receipts.mjs: how long waitForReceipt takes per move over the WebSocket: two players play
// tic-tac-toe draws against a node this script starts (testkit/node.js; $GAMECHAIN_BIN or the
// debug build) until MOVES moves (default 100) are in; each move is timed from the moment
// chain.send returned its txid to the receipt. Prints p50, p90, p99, max and mean in ms.
// Run: npm run bench   (or: node bench/receipts.mjs; Node 20 uses the ws package, Node 22+ its own WebSocket)
import { startNode } from '../testkit/node.js';
import { Chain, Key } from '../src/index.js';

const MOVES = Number(process.env.MOVES ?? 100);
const node = await startNode({ blockIntervalMs: 60000 });
try {
  const chain = new Chain(node.url);
  if (!chain.WebSocket) throw new Error(`no WebSocket to measure: ${chain.webSocketMissing}`);
  const x = Key.generate();
  const o = Key.generate();
  const run = async (k, fields) => {
    const txid = await chain.send(k, { type: 'game', game: 'tictactoe', op: fields });
    const t0 = performance.now();
    const r = await chain.waitForReceipt(txid, { timeoutMs: 30000 });
    const ms = performance.now() - t0;
    if (!r.ok) throw new Error(`${JSON.stringify(fields)}: ${r.error}`);
    return { r, ms };
  };
  for (const k of [x, o]) await chain.waitForReceipt(await chain.send(k, { type: 'faucet', token: 'GOLD' }));
  const times = [];
  const draw = [0, 1, 2, 4, 3, 5, 7, 6, 8];
  while (times.length < MOVES) {
    const { r } = await run(x, { kind: 'create', stake: '1' });
    const id = r.events[0].data.id;
    await run(o, { kind: 'join', id });
    for (const [i, cell] of draw.entries()) {
      if (times.length >= MOVES) break;
      times.push((await run(i % 2 === 0 ? x : o, { kind: 'move', id, cell })).ms);
    }
  }
  times.sort((a, b) => a - b);
  const q = (p) => times[Math.min(times.length - 1, Math.ceil((p / 100) * times.length) - 1)].toFixed(1);
  const mean = (times.reduce((a, b) => a + b, 0) / times.length).toFixed(1);
  console.log(`waitForReceipt over the WebSocket, ${times.length} moves: p50 ${q(50)} ms, p90 ${q(90)} ms, p99 ${q(99)} ms, max ${times.at(-1).toFixed(1)} ms, mean ${mean} ms`);
} finally {
  await node.dispose();
}
