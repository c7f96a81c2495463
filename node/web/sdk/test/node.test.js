// node.test.js: the SDK against a real node started by the test (testkit/node.js):
// - property: for random keys and random bodies, every SDK signature is accepted by the node
//   (which verifies it with libsecp256k1) under the txid the SDK computed, and the same body
//   with one byte changed is refused as bad_signature; the node's own block signatures verify in JS;
// - the calls: status, account, tx, block, game, modules; ChainError codes and statuses;
//   send's one bad_nonce retry; waitForReceipt over the WebSocket and by polling, and its timeout;
//   subscribe across a node restart (every height once, in order), over the WebSocket and by polling.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startNode } from '../testkit/node.js';
import { Chain, ChainError, Key, verifyMessage, txidOf } from '../src/index.js';

/** xorshift32: a seeded generator, so a failing case can be replayed with JS_PROP_SEED. */
function rng(seed) {
  let s = seed >>> 0 || 1;
  return () => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s / 2 ** 32; };
}
const SEED = Number(process.env.JS_PROP_SEED ?? Math.floor(Math.random() * 2 ** 31));
const CASES = Number(process.env.JS_PROP_CASES ?? 40);

function randomString(r, maxLen) {
  const pools = [
    () => String.fromCharCode(0x20 + Math.floor(r() * 95)),
    () => '"\\\n\t/'[Math.floor(r() * 5)],
    () => String.fromCodePoint(0xa0 + Math.floor(r() * 0xd000)),
    () => String.fromCodePoint(0x1f300 + Math.floor(r() * 0x300)),
    () => String.fromCharCode(Math.floor(r() * 0x20)),
  ];
  const len = Math.floor(r() ** 3 * maxLen);
  let s = '';
  for (let i = 0; i < len; i++) s += pools[Math.floor(r() * pools.length)]();
  return s;
}

function randomAction(r, other) {
  switch (Math.floor(r() * 4)) {
    case 0: return { type: 'faucet', token: 'GOLD' };
    case 1: return { type: 'transfer', to: other, token: 'GOLD', amount: String(Math.floor(r() * 1e9)) };
    case 2: return { type: 'game', game: 'tictactoe', op: { kind: 'create', stake: String(Math.floor(r() * 200)), note: randomString(r, 300) } };
    default: return { type: 'game', game: 'tictactoe', op: { kind: randomString(r, 40), blob: randomString(r, 20000), n: Math.floor(r() * 1e6) } };
  }
}

let node;
let chain;
before(async () => {
  node = await startNode({ blockIntervalMs: 100 });
  chain = new Chain(node.url);
});
after(async () => { await node?.dispose(); });

test(`property: SDK signatures verify in the node (seed ${SEED}, ${CASES} cases)`, async () => {
  const r = rng(SEED);
  const chainId = (await chain.status()).chain_id;
  for (let i = 0; i < CASES; i++) {
    const secret = new Uint8Array(32).map(() => Math.floor(r() * 256));
    secret[0] = 1 + (secret[0] % 200); // below the curve order, never zero
    const key = Key.fromSecret(secret, 'testnet');
    const other = Key.fromSecret(Uint8Array.from(secret).reverse().map((b, j) => (j === 0 ? 7 : b)), 'testnet').address;
    const action = randomAction(r, other);
    const tx = await chain.sign(key, action, { chainId, nonce: 0 });
    const what = `case ${i} (JS_PROP_SEED=${SEED}): ${tx.body.slice(0, 120)}`;
    // A changed byte of the body: the same signature no longer recovers to `from`.
    const tampered = tx.body.replace('"nonce":0', '"nonce":1');
    await assert.rejects(chain.post({ body: tampered, signature: tx.signature }), (e) => {
      assert.ok(e instanceof ChainError, what);
      assert.equal(e.code, 'bad_signature', `${what}: ${e}`);
      assert.equal(e.status, 401);
      return true;
    });
    assert.equal(await chain.post(tx), tx.txid, what);
    assert.equal(tx.txid, txidOf(tx.body));
    const rec = await chain.tx(tx.txid);
    assert.equal(rec.body, tx.body, what);
    assert.equal(rec.signature, tx.signature, what);
  }
  // The other way: the node's block signatures (libsecp256k1) verify with the SDK.
  const status = await chain.status();
  const head = await chain.block('latest');
  assert.ok(head.height > 0);
  assert.equal(verifyMessage(status.sequencer, head.hash, head.signature), true);
  assert.equal(verifyMessage(status.sequencer, head.header.prev_hash, head.signature), false);
});

test('reads, errors and ChainError', async () => {
  const st = await chain.status();
  assert.equal(st.chain_id, 'gamechain-dev');
  assert.equal(st.network, 'testnet');
  const mods = await chain.modules();
  assert.ok(mods.modules.some((m) => m.id === 'tictactoe' && /^[0-9a-f]{64}$/.test(m.code_hash)));
  assert.equal((await chain.module('tictactoe')).id, 'tictactoe');
  assert.deepEqual(await chain.game('tictactoe'), { game: 'tictactoe', timeout_blocks: 150, max_stake: '100000' });
  const fresh = Key.generate();
  assert.deepEqual(await chain.account(fresh.address), { account: fresh.address, balances: {}, nonce: 0, next_nonce: 0 });
  const cases = [
    [() => chain.account('not-an-address'), 'bad_address', 400],
    [() => chain.tx('00'.repeat(32)), 'not_found', 404],
    [() => chain.block(10 ** 9), 'not_found', 404],
    [() => chain.game('tictactoe', { id: 'ffffffffffffffff' }), 'not_found', 404],
    [() => chain.game('nosuchmodule', {}), 'not_found', 404],
    [() => chain.post({ body: '{}', signature: 'x' }), 'bad_json', 400],
  ];
  for (const [call, code, status] of cases) {
    await assert.rejects(call(), (e) => e instanceof ChainError && e.code === code && e.status === status && e.message.length > 0);
  }
  const down = new Chain('http://127.0.0.1:9', { timeoutMs: 2000 });
  await assert.rejects(down.status(), (e) => e instanceof ChainError && e.code === 'network' && e.status === 0);
  const small = new Chain(node.url, { maxAnswerBytes: 64 });
  await assert.rejects(small.block('latest'), (e) => e instanceof ChainError && e.code === 'too_large');
});

test("a player's games page through the module: limit, after and next, every game once", async () => {
  const key = Key.generate();
  await chain.waitForReceipt(await chain.send(key, { type: 'faucet', token: 'GOLD' }), { timeoutMs: 20000 });
  const ids = [];
  for (let i = 0; i < 5; i++) {
    const txid = await chain.send(key, { type: 'game', game: 'tictactoe', op: { kind: 'create' } });
    assert.equal((await chain.waitForReceipt(txid, { timeoutMs: 20000 })).ok, true);
    ids.push(txid.slice(0, 16));
  }
  ids.sort();
  // A list shorter than a page is exactly {"games": [...]}.
  const whole = await chain.game('tictactoe', { player: key.address });
  assert.deepEqual(Object.keys(whole), ['games']);
  assert.equal(whole.games.length, 5);
  const seen = [];
  const sizes = [];
  let after;
  for (let pages = 0; pages < 10; pages++) {
    const page = await chain.game('tictactoe', { player: key.address, limit: '2', ...(after ? { after } : {}) });
    sizes.push(page.games.length);
    seen.push(...page.games.map((g) => g.id));
    if (page.next === undefined) break;
    assert.equal(page.next, page.games.map((g) => g.id).sort().at(-1));
    after = page.next;
  }
  assert.deepEqual(sizes, [2, 2, 1]);
  assert.deepEqual(seen.sort(), ids);
  for (const [query, text] of [[{ limit: '51' }, 'limit must be an integer from 1 to 50'], [{ after: 'ZZ' }, 'after must be a game id']]) {
    await assert.rejects(chain.game('tictactoe', { player: key.address, ...query }), (e) => e instanceof ChainError && e.code === 'invalid' && e.status === 400 && e.message.includes(text));
  }
});

test('send signs again after bad_nonce only when asked to; waitForReceipt both ways', async () => {
  const key = Key.generate();
  const first = await chain.send(key, { type: 'faucet', token: 'GOLD' });
  // A Chain whose account() lags behind (as when another tab sent a transaction).
  const lagging = new Chain(node.url);
  lagging.account = async (a) => ({ account: a, balances: {}, nonce: 0, next_nonce: 0 });
  // By default the refusal is the caller's to handle: a node that lied about the nonce while
  // keeping the first signed transaction could otherwise submit the action twice.
  await assert.rejects(
    lagging.send(key, { type: 'transfer', to: Key.generate().address, token: 'GOLD', amount: '5' }),
    (e) => e instanceof ChainError && e.code === 'bad_nonce' && e.expected === 1,
  );
  const stale = new Chain(node.url, { resignOnBadNonce: true });
  stale.account = lagging.account;
  const second = await stale.send(key, { type: 'transfer', to: Key.generate().address, token: 'GOLD', amount: '5' });
  assert.equal(JSON.parse((await chain.tx(second)).body).nonce, 1);
  const viaWs = await chain.waitForReceipt(first, { timeoutMs: 20000 });
  assert.equal(viaWs.ok, true);
  assert.deepEqual(viaWs.events.map((e) => e.kind), ['faucet']);
  const polling = new Chain(node.url, { WebSocket: null });
  const viaPoll = await polling.waitForReceipt(second, { timeoutMs: 20000 });
  assert.equal(viaPoll.ok, true);
  assert.ok(viaPoll.height >= viaWs.height);
  // Two senders with the same stale view: one is accepted as is, the other after the retry.
  const to = Key.generate().address;
  const a = await stale.send(key, { type: 'transfer', to, token: 'GOLD', amount: '6' });
  const b = await stale.send(key, { type: 'transfer', to, token: 'GOLD', amount: '7' });
  assert.deepEqual(await Promise.all([a, b].map(async (t) => JSON.parse((await chain.tx(t)).body).nonce)), [2, 3]);
  // A timeout keeps the txid and says the transaction may still come.
  const unknown = 'ab'.repeat(32);
  await assert.rejects(chain.waitForReceipt(unknown, { timeoutMs: 400 }), (e) => {
    assert.equal(e.code, 'receipt_timeout');
    assert.equal(e.txid, unknown);
    assert.match(e.message, /may still be included/);
    return true;
  });
});

for (const mode of ['websocket', 'polling']) {
  test(`subscribe (${mode}) resumes across a node restart: every height once, in order`, async () => {
    const c = new Chain(node.url, mode === 'polling' ? { WebSocket: null, } : {});
    const heights = [];
    const sub = c.subscribe((b) => { heights.push(b.height); }, { pollMs: 50 });
    assert.equal(sub.mode, mode);
    const waitFor = async (n) => { const end = Date.now() + 20000; while (heights.length < n) { assert.ok(Date.now() < end, `only ${heights.length} blocks`); await new Promise((r) => setTimeout(r, 20)); } };
    await waitFor(5);
    await node.restart();
    const mark = heights.length;
    await waitFor(mark + 10);
    sub.close();
    for (let i = 1; i < heights.length; i++) assert.equal(heights[i], heights[i - 1] + 1, `heights ${heights.join(',')}`);
    const fromTwo = [];
    const sub2 = c.subscribe((b) => { fromTwo.push(b.height); }, { fromHeight: 2, pollMs: 50 });
    const end = Date.now() + 20000;
    while (fromTwo.length < 4) { assert.ok(Date.now() < end); await new Promise((r) => setTimeout(r, 20)); }
    sub2.close();
    assert.deepEqual(fromTwo.slice(0, 4), [2, 3, 4, 5]);
  });
}

test('subscribe refuses a block answered for another height than asked', async () => {
  // Blocks to fetch by height: a few transactions, each in its own block.
  for (let i = 0; i < 3; i++) await chain.waitForReceipt(await chain.send(Key.generate(), { type: 'faucet', token: 'GOLD' }), { timeoutMs: 20000 });
  // A node that answers every block by height with the next one's number.
  const c = new Chain(node.url, { WebSocket: null });
  const real = c.block.bind(c);
  c.block = async (which, o) => {
    const b = await real(which, o);
    return typeof which === 'number' ? { ...b, height: b.height + 1 } : b;
  };
  const heights = [];
  const errors = [];
  const sub = c.subscribe((b) => { heights.push(b.height); }, { fromHeight: 1, pollMs: 50, onError: (e) => errors.push(e) });
  const end = Date.now() + 10000;
  while (!errors.some((e) => e.code === 'bad_answer')) { assert.ok(Date.now() < end, 'no bad_answer'); await new Promise((r) => setTimeout(r, 20)); }
  sub.close();
  assert.deepEqual(heights, []);
  assert.match(errors.find((e) => e.code === 'bad_answer').message, /asked for block 1, the node answered block 2/);
});
