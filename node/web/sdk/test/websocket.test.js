// websocket.test.js: the SDK's WebSocket under the Node.js running the suite, with no flags: the
// global one when this Node has it (22+), else the `ws` package (Node 20). A subscription gets
// live blocks, a transaction sent meanwhile among them, over a real WebSocket with no HTTP
// request for blocks (it did not poll); the move relay opens over it too. Without any WebSocket
// (an SDK copy where `ws` cannot be found) the fallback to polling is told: `onFallback`, else one
// console warning; `WebSocket: null` polls on purpose and says nothing.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { startNode } from '../testkit/node.js';
import { Chain, Key } from '../src/index.js';

const here = path.dirname(fileURLToPath(import.meta.url));
let node;
before(async () => { node = await startNode({ blockIntervalMs: 100 }); });
after(async () => { await node?.dispose(); });

const until = async (what, ok, ms = 20000) => {
  const end = Date.now() + ms;
  while (!ok()) { assert.ok(Date.now() < end, `timed out: ${what}`); await new Promise((r) => setTimeout(r, 20)); }
};

test(`a subscription gets live blocks over a real WebSocket under Node ${process.version}, without polling`, async (t) => {
  const asked = [];
  const chain = new Chain(node.url, { fetch: (url, init) => { asked.push(`${init?.method ?? 'GET'} ${new URL(url).pathname}`); return fetch(url, init); } });
  const expected = typeof globalThis.WebSocket === 'function' ? 'global' : 'ws';
  assert.equal(chain.webSocketSource, expected);
  assert.equal(typeof chain.WebSocket, 'function');
  t.diagnostic(`globalThis.WebSocket: ${typeof globalThis.WebSocket}; the SDK's WebSocket: ${expected}`);
  let opened = 0;
  const blocks = [];
  const sub = chain.subscribe((b) => { blocks.push(b); }, { onOpen: () => { opened += 1; } });
  try {
    assert.equal(sub.mode, 'websocket');
    await until('the feed opened', () => opened === 1);
    await until('5 blocks', () => blocks.length >= 5);
    // A transaction sent now shows up in a block of the feed.
    const sender = new Chain(node.url);
    const txid = await sender.send(Key.generate(), { type: 'faucet', token: 'GOLD' });
    await until('the transaction in a block', () => blocks.some((b) => b.txs.some((x) => x.txid === txid)));
  } finally {
    sub.close();
  }
  for (let i = 1; i < blocks.length; i++) assert.equal(blocks[i].height, blocks[i - 1].height + 1);
  // Every block came over the socket: the chain asked nothing over HTTP.
  assert.deepEqual(asked, [], `HTTP requests of the subscription: ${asked.join(', ')}`);
  assert.equal(opened, 1);
});

test('waitForReceipt listens on the WebSocket under this Node', async () => {
  const asked = [];
  const chain = new Chain(node.url, { fetch: (url, init) => { asked.push(new URL(url).pathname); return fetch(url, init); } });
  const txid = await chain.send(Key.generate(), { type: 'faucet', token: 'GOLD' });
  asked.length = 0;
  const r = await chain.waitForReceipt(txid, { timeoutMs: 20000, pollMs: 50 });
  assert.equal(r.ok, true);
  // One check of GET /v1/tx when the socket opened (and one every 2 s), never every pollMs.
  assert.ok(asked.length <= 3 && asked.every((p) => p === `/v1/tx/${txid}`), asked.join(', '));
});

test('without any WebSocket the fallback to polling is told, not silent', async () => {
  // A copy of the SDK whose `ws` cannot be resolved (node_modules with the other dependencies only).
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gamechain-sdk-nows-'));
  try {
    fs.cpSync(path.join(here, '../src'), path.join(dir, 'src'), { recursive: true });
    fs.mkdirSync(path.join(dir, 'node_modules'));
    for (const dep of ['@noble', '@scure']) fs.symlinkSync(path.join(here, '../node_modules', dep), path.join(dir, 'node_modules', dep));
    fs.writeFileSync(path.join(dir, 'package.json'), '{"type": "module"}');
    const sdk = await import(pathToFileURL(path.join(dir, 'src/index.js')).href);
    if (typeof globalThis.WebSocket === 'function') {
      // Node 22+: the global is used; the copy finds it like the SDK does.
      assert.equal(new sdk.Chain(node.url).webSocketSource, 'global');
      return;
    }
    const told = [];
    const chain = new sdk.Chain(node.url, { onFallback: (info) => told.push(info) });
    assert.equal(chain.webSocketSource, 'none');
    assert.equal(chain.WebSocket, null);
    assert.match(chain.webSocketMissing, /ws package could not be loaded/);
    const blocks = [];
    const sub = chain.subscribe((b) => { blocks.push(b.height); }, { pollMs: 50 });
    assert.equal(sub.mode, 'polling');
    await until('blocks by polling', () => blocks.length >= 2);
    sub.close();
    const relay = new sdk.MoveRelay(chain, '0000000000000000', { key: sdk.Key.generate(), seat: 0, genesis: '00'.repeat(32) });
    assert.equal(relay.available, false);
    relay.close();
    assert.deepEqual(told.map((i) => i.what), ['subscribe', 'the move relay']);
    assert.match(told[0].reason, /npm install ws/);
    // The default: one console warning per Chain.
    const warnings = [];
    const warn = console.warn;
    console.warn = (...a) => warnings.push(a.join(' '));
    try {
      const quiet = new sdk.Chain(node.url);
      quiet.subscribe(() => {}, { pollMs: 50 }).close();
      quiet.subscribe(() => {}, { pollMs: 50 }).close();
      const on = new sdk.Chain(node.url, { WebSocket: null });
      on.subscribe(() => {}, { pollMs: 50 }).close();
    } finally {
      console.warn = warn;
    }
    assert.equal(warnings.length, 1, warnings.join('\n'));
    assert.match(warnings[0], /^@gamechain\/sdk: subscribe polls over HTTP instead of the WebSocket: .*ws package/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
