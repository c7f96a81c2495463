// backoff.test.js: the retry policy of the feed, the relay and the watchtower (src/chain/backoff.js, as
// node/player/src/backoff.rs): waits double up to the cap with jitter, never below the node's
// retry-after; which failures are worth retrying.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Backoff, transient, ChainError, ChannelError } from '../src/index.js';

test('backoff doubles to its cap with jitter and honours retry-after', () => {
  let x = 7;
  const random = () => { x = (x * 1103515245 + 12345) % 2 ** 31; return x / 2 ** 31; };
  const b = new Backoff({ baseMs: 100, capMs: 2000, random });
  const waits = Array.from({ length: 8 }, () => b.next());
  for (const [n, w] of waits.entries()) {
    const ceiling = Math.min(100 * 2 ** n, 2000);
    assert.ok(w >= ceiling / 2 && w <= ceiling, `wait ${n}: ${w}`);
  }
  assert.equal(b.failures, 8);
  assert.equal(b.next(new ChainError('rate_limited', 'slow', 429, { retryAfter: 9 })), 9000);
  b.reset();
  assert.ok(b.next() <= 100);
});

test('failures worth retrying are told apart', () => {
  const api = (status, code = 'x') => new ChainError(code, 'y', status);
  assert.equal(transient(api(429, 'rate_limited')), true);
  assert.equal(transient(api(500, 'internal')), true);
  assert.equal(transient(api(503, 'mempool_full')), true);
  assert.equal(transient(new ChainError('network', 'refused')), true);
  assert.equal(transient(new ChainError('request_timeout', 'slow')), true);
  assert.equal(transient(new ChainError('receipt_timeout', 'later')), true);
  assert.equal(transient(api(404, 'not_found')), false);
  assert.equal(transient(api(400, 'bad_json')), false);
  assert.equal(transient(api(404, 'bad_answer')), false);
  assert.equal(transient(new ChannelError('refused', 'conflict: the game is settled')), false);
  assert.equal(transient(new Error('a bug')), false);
});
