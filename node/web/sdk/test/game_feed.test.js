// game_feed.test.js: Chain.subscribeGame against a node it starts. A tic-tac-toe game is played;
// its events replayed from height 1 by game id arrive once each, in order, with their senders;
// the same over a WebSocket that drops twice mid-stream (resumed, no gaps or repeats); the same
// from the polling fallback (no WebSocket: the block feed filtered by eventsOfBlock, the node's
// rule); a live player subscription gets a new game as it is included, and heads meanwhile.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startNode } from '../testkit/node.js';
import { Chain, Key } from '../src/index.js';

let node;
before(async () => { node = await startNode({ blockIntervalMs: 100 }); });
after(async () => { await node?.dispose(); });

const until = async (what, ok, ms = 30000) => {
  const end = Date.now() + ms;
  while (!ok()) { assert.ok(Date.now() < end, `timed out: ${what}`); await new Promise((r) => setTimeout(r, 20)); }
};

async function play(chain, key, op) {
  const r = await chain.waitForReceipt(await chain.send(key, { type: 'game', game: 'tictactoe', op }), { timeoutMs: 30000 });
  assert.equal(r.ok, true, `${JSON.stringify(op)}: ${r.error}`);
  return r;
}

/** Subscribes and collects until the subscription is complete past `height`. */
async function collect(chain, options, height) {
  const events = [];
  const sub = chain.subscribeGame('tictactoe', (batch) => {
    for (const e of batch.events) events.push({ height: batch.height, ...e });
  }, options);
  try {
    await until(`events up to ${height}`, () => sub.nextHeight !== null && sub.nextHeight > height);
    return { events, mode: sub.mode };
  } finally {
    sub.close();
  }
}

test('subscribeGame: a game replayed once each, across dropped connections, and the same by polling', async () => {
  const chain = new Chain(node.url);
  const x = Key.generate();
  const o = Key.generate();
  for (const k of [x, o]) await chain.waitForReceipt(await chain.send(k, { type: 'faucet', token: 'GOLD' }), { timeoutMs: 30000 });
  const created = await play(chain, x, { kind: 'create', stake: '2' });
  const id = created.events[0].data.id;
  const other = await play(chain, o, { kind: 'create' }); // another game: not in this one's feed
  await play(chain, o, { kind: 'join', id });
  for (const [i, cell] of [0, 3, 1, 4, 2].entries()) await play(chain, i % 2 ? o : x, { kind: 'move', id, cell });
  const last = (await chain.status()).height;

  const plain = await collect(chain, { game: id, fromHeight: 1 }, last);
  assert.equal(plain.mode, 'websocket');
  assert.deepEqual(plain.events.map((e) => e.kind), ['tictactoe.created', 'tictactoe.joined', ...Array(5).fill('tictactoe.moved'), 'tictactoe.finished']);
  assert.ok(plain.events.every((e) => e.data.id === id));
  assert.deepEqual(plain.events.map((e) => e.sender), [x.address, o.address, x.address, o.address, x.address, o.address, x.address, x.address]);
  assert.equal(plain.events[0].height, created.height);
  assert.notEqual(other.events[0].data.id, id);

  // A WebSocket that closes itself after its second message, twice: resumed from one past the
  // last complete height, nothing missed or repeated.
  const Base = new Chain(node.url).WebSocket;
  let drops = 2;
  let connections = 0;
  class Dropping extends Base {
    constructor(url) {
      super(url);
      connections += 1;
      this.seen = 0;
      this.drop = drops-- > 0;
    }

    // Delivers two messages, then closes and delivers nothing more (what the socket had
    // buffered is lost, as on a real disconnect).
    set onmessage(f) {
      super.onmessage = (ev) => {
        this.seen += 1;
        if (this.drop && this.seen > 2) return;
        f(ev);
        if (this.drop && this.seen === 2) this.close();
      };
    }

    get onmessage() { return super.onmessage; }
  }
  const dropping = await collect(new Chain(node.url, { WebSocket: Dropping }), { game: id, fromHeight: 1, onError: () => {} }, last);
  assert.ok(connections >= 3, `${connections} connections`);
  assert.deepEqual(dropping.events, plain.events);

  // No WebSocket: the block feed, filtered here by the node's rule, gives the same.
  const polled = await collect(new Chain(node.url, { WebSocket: null, onFallback: () => {} }), { game: id, fromHeight: 1 }, last);
  assert.equal(polled.mode, 'polling');
  assert.deepEqual(polled.events, plain.events);
});

test('subscribeGame live: a player\'s new game arrives as it is included, heads in between', async () => {
  const chain = new Chain(node.url);
  const p = Key.generate();
  await chain.waitForReceipt(await chain.send(p, { type: 'faucet', token: 'GOLD' }), { timeoutMs: 30000 });
  const got = [];
  const heads = [];
  let opened = false;
  const sub = chain.subscribeGame('tictactoe', (b) => { got.push(b); }, { player: p.address, onHead: (h) => heads.push(h.height), onOpen: () => { opened = true; } });
  try {
    await until('opened and a head', () => opened && heads.length > 0);
    const r = await play(chain, p, { kind: 'create' });
    await until('the new game', () => got.length === 1);
    assert.equal(got[0].height, r.height);
    assert.equal(got[0].events[0].kind, 'tictactoe.created');
    assert.equal(got[0].events[0].sender, p.address);
    await until('the head past it', () => heads.at(-1) >= r.height);
    for (let i = 1; i < heads.length; i++) assert.ok(heads[i] > heads[i - 1], 'heads rise');
  } finally {
    sub.close();
  }
});

test('subscribeGame: a game played with a session key is sent as the main account\'s', async () => {
  const chain = new Chain(node.url);
  const main = Key.generate();
  await chain.waitForReceipt(await chain.send(main, { type: 'faucet', token: 'GOLD' }), { timeoutMs: 30000 });
  const session = await chain.authorizeSession(main, { modules: ['tictactoe'], cap: '10', expiresInMs: 600000 });
  const from = (await chain.status()).height + 1;
  const r = await session.sendAndWait('tictactoe', { kind: 'create', stake: '3' });
  assert.equal(r.ok, true, r.error);
  for (const c of [chain, new Chain(node.url, { WebSocket: null, onFallback: () => {} })]) {
    const { events } = await collect(c, { player: main.address, fromHeight: from }, r.height);
    assert.deepEqual(events.map((e) => [e.kind, e.sender]), [['tictactoe.created', main.address], ['session', main.address]]);
    assert.equal(events[1].data.key, session.key.address);
  }
});
