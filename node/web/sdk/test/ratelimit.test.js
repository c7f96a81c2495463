// ratelimit.test.js: `429 rate_limited` waited out by the SDK (Chain's rateLimitRetries,
// rateLimitMaxWaitMs): against a real node limited to 5 requests a second (burst 5), a script
// that sends much faster than that completes every transaction, each admitted once with its own
// nonce (a POST /v1/tx answered 429 was not admitted, and is asked again); receipts are waited
// for over the WebSocket and by polling under the same limit; once the budget is spent the error
// says so (`rate_limited`, `retries`, `waitedMs`).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startNode } from '../testkit/node.js';
import { Chain, ChainError, Key, txidOf } from '../src/index.js';
import { MAX_RETRY_AFTER_S } from '../src/index.js';

let node;
before(async () => {
  node = await startNode({ blockIntervalMs: 100, rateLimitPerSec: 5, rateLimitBurst: 5 });
});
after(async () => { await node?.dispose(); });

/** A fetch that counts what it asked and which answers were 429, by `METHOD path`. */
function countingFetch() {
  const f = {
    asked: 0,
    limited: {},
    async fetch(url, init) {
      f.asked += 1;
      const res = await fetch(url, init);
      if (res.status === 429) {
        const what = `${init?.method ?? 'GET'} ${new URL(url).pathname.replace(/[0-9a-f]{64}$|[A-Za-z0-9]{34}$/, '…')}`;
        f.limited[what] = (f.limited[what] ?? 0) + 1;
      }
      return res;
    },
  };
  return f;
}

const sum = (o) => Object.values(o).reduce((a, b) => a + b, 0);

test('a script sending far faster than the rate limit completes all its transactions, each admitted once', async (t) => {
  const counter = countingFetch();
  const waits = [];
  const options = { fetch: counter.fetch, onRateLimited: (i) => waits.push(i) };
  const chains = [new Chain(node.url, options), new Chain(node.url, { ...options, WebSocket: null })];
  const keys = [Key.generate(), Key.generate(), Key.generate()];
  const to = Key.generate().address;
  const PER_KEY = 6;
  const started = Date.now();
  // Every key at once, each sending its transactions back to back without waiting for blocks:
  // 18 transactions (36 requests and more) against 5 requests a second.
  const sent = await Promise.all(keys.map(async (key, k) => {
    const chain = chains[k % 2];
    const txids = [await chain.send(key, { type: 'faucet', token: 'GOLD' })];
    for (let i = 1; i < PER_KEY; i++) txids.push(await chain.send(key, { type: 'transfer', to, token: 'GOLD', amount: String(i) }));
    return txids;
  }));
  // Receipts over the WebSocket (chains[0]) and by polling (chains[1]), under the same limit.
  const receipts = await Promise.all(sent.flat().map((txid, i) => chains[i % 2].waitForReceipt(txid, { timeoutMs: 120000, pollMs: 300 })));
  const seconds = (Date.now() - started) / 1000;
  t.diagnostic(`${receipts.length} transactions in ${seconds} s, ${counter.asked} requests, 429s: ${JSON.stringify(counter.limited)}, ${waits.length} waits`);
  assert.equal(receipts.length, keys.length * PER_KEY);
  for (const r of receipts) assert.equal(r.ok, true, `${r.txid}: ${r.error}`);
  assert.ok(sum(counter.limited) >= 5, `the node limited the script (${JSON.stringify(counter.limited)}, ${counter.asked} requests in ${seconds} s)`);
  assert.ok(waits.length >= 5 && waits.every((w) => w.waitMs >= 1000 * (w.retryAfter ?? 1)), `every wait at least retry-after: ${waits.map((w) => w.waitMs)}`);
  // Each transaction was admitted once: nonces 0..5 per sender, each once, and nothing more.
  const reader = new Chain(node.url);
  for (const [k, key] of keys.entries()) {
    const nonces = await Promise.all(sent[k].map(async (txid) => JSON.parse((await reader.tx(txid)).body).nonce));
    assert.deepEqual(nonces, [0, 1, 2, 3, 4, 5], `sender ${k}`);
    const account = await reader.account(key.address);
    assert.equal(account.next_nonce, PER_KEY, `sender ${k}: ${JSON.stringify(account)}`);
  }
  assert.equal((await reader.account(to)).balances.GOLD, String(keys.length * (1 + 2 + 3 + 4 + 5)));
});

test('a POST /v1/tx answered 429 is asked again after retry-after and admitted once', async () => {
  const counter = countingFetch();
  const chain = new Chain(node.url, { fetch: counter.fetch });
  const key = Key.generate();
  const tx = await chain.sign(key, { type: 'faucet', token: 'GOLD' });
  // Empty this client's bucket (the node limits by IP), then post.
  for (let i = 0; i < 50; i++) if ((await fetch(`${node.url}/v1/status`)).status === 429) break;
  assert.equal(await chain.post(tx), tx.txid);
  assert.ok(counter.limited['POST /v1/tx'] >= 1, JSON.stringify(counter.limited));
  const r = await chain.waitForReceipt(tx.txid, { timeoutMs: 60000 });
  assert.equal(r.ok, true);
  assert.equal((await chain.account(key.address)).next_nonce, 1);
});

/** A fetch that answers every request 429 with `retry-after: <seconds>`. */
const alwaysLimited = (seconds, calls) => async () => {
  calls.n += 1;
  return new Response(JSON.stringify({ error: { code: 'rate_limited', message: `too many requests from this address; retry in ${seconds} s` } }),
    { status: 429, headers: { 'content-type': 'application/json', 'retry-after': String(seconds) } });
};

test('once the retry budget is spent the error says so', async () => {
  const calls = { n: 0 };
  const chain = new Chain(node.url, { fetch: alwaysLimited(1, calls), rateLimitRetries: 2, rateLimitMaxWaitMs: 30000 });
  const t0 = Date.now();
  await assert.rejects(chain.status(), (e) => {
    assert.ok(e instanceof ChainError);
    assert.equal(e.code, 'rate_limited');
    assert.equal(e.status, 429);
    assert.equal(e.retries, 2);
    assert.equal(e.retryAfter, 1);
    assert.ok(e.waitedMs >= 2000, `${e.waitedMs}`);
    assert.match(e.message, /^GET \/v1\/status: still rate limited after 2 retries and \d+\.\d s of waiting \(the budget: rateLimitRetries 2, rateLimitMaxWaitMs 30000\); the node says: too many requests/);
    return true;
  });
  assert.equal(calls.n, 3);
  assert.ok(Date.now() - t0 >= 2000);
  // A retry-after longer than the time budget: given up at once, without waiting.
  calls.n = 0;
  const impatient = new Chain(node.url, { fetch: alwaysLimited(5, calls), rateLimitMaxWaitMs: 3000 });
  const t1 = Date.now();
  await assert.rejects(impatient.code('00'.repeat(32)), (e) => e.code === 'rate_limited' && e.retries === 0 && e.retryAfter === 5 && /still rate limited after 0 retries/.test(e.message));
  assert.ok(Date.now() - t1 < 1000);
  assert.equal(calls.n, 1);
  // rateLimitRetries 0: the node's own error, as it came.
  calls.n = 0;
  const never = new Chain(node.url, { fetch: alwaysLimited(1, calls), rateLimitRetries: 0 });
  await assert.rejects(never.post({ body: '{}', signature: 'x' }), (e) => e.code === 'rate_limited' && e.retries === undefined && /^too many requests/.test(e.message));
  assert.equal(calls.n, 1);
  // waitForReceipt keeps waiting through 429s until its own timeout.
  calls.n = 0;
  const waiting = new Chain(node.url, { fetch: alwaysLimited(1, calls), WebSocket: null, rateLimitRetries: 1 });
  await assert.rejects(waiting.waitForReceipt('ab'.repeat(32), { timeoutMs: 2500, pollMs: 100 }), (e) => e.code === 'receipt_timeout');
  assert.ok(calls.n >= 2 && calls.n <= 6, `checks never overlap, each waits out retry-after: ${calls.n}`);
});

test('a huge retry-after is capped at an hour; a duplicate after a retried post is the txid', async () => {
  // A node asking for ~35 days: the wait and the error's retryAfter count it as MAX_RETRY_AFTER_S.
  const huge = new Chain('http://127.0.0.1:9', {
    rateLimitRetries: 1,
    rateLimitMaxWaitMs: 10,
    fetch: async () => new Response('{"error":{"code":"rate_limited","message":"slow down"}}', {
      status: 429, headers: { 'retry-after': '3000000', 'content-type': 'application/json' },
    }),
  });
  await assert.rejects(huge.status(), (e) => e instanceof ChainError && e.code === 'rate_limited' && e.retryAfter === MAX_RETRY_AFTER_S);
  // The first post is refused with 429, the second finds the transaction already admitted.
  let posts = 0;
  const tx = { body: '{"x":1}', signature: 's' };
  const racing = new Chain('http://127.0.0.1:9', {
    fetch: async () => {
      posts += 1;
      return posts === 1
        ? new Response('{"error":{"code":"rate_limited","message":"slow down"}}', { status: 429, headers: { 'retry-after': '1' } })
        : new Response('{"error":{"code":"duplicate","message":"already in the mempool"}}', { status: 409 });
    },
  });
  assert.equal(await racing.post(tx), txidOf(tx.body));
  // Asked once, a duplicate is the caller's error as before.
  posts = 1;
  await assert.rejects(racing.post(tx), (e) => e.code === 'duplicate');
});
