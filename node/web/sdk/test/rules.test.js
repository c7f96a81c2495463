// rules.test.js: the Rules loader's guard against a hostile rules module, on small wasm modules
// assembled here byte by byte (no node needed): a trap is a RulesError and the next call runs on a
// fresh instance; answers over their cap, outside memory, or not 0/1 are RulesErrors; a refusal
// (negative answer) is reported as one; a module with an import or without the exports is refused;
// a module that loops forever is ended by the call's timeout (it runs in a worker), one that grows
// its memory without end stops at the chain's 16 MiB, and no state carries from call to call.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Rules, RulesError } from '../src/index.js';

import { uleb, assemble, i64, answer } from '../testkit/wasm.js';

test('a hostile rules module: traps, oversized and out-of-memory answers, refusals', async () => {
  const wasm = assemble({
    initial_state: answer(2048, 1), // one zero byte
    mover_at: [0x00], // unreachable: a trap
    validate_move: answer(0, 100000), // over the cap
    apply_move: answer(70000, 10), // outside the 64 KiB memory
    is_over: i64(-1), // a refusal
    winner: answer(2048, 2), // two bytes: not a seat
  });
  const rules = await Rules.load(wasm);
  assert.deepEqual([...(await rules.initialState(new Uint8Array(32)))], [0]);
  await assert.rejects(rules.moverAt(0), (e) => e instanceof RulesError && /trapped/.test(e.message));
  // Every call runs on a fresh instance: a trap leaves nothing behind.
  assert.deepEqual([...(await rules.initialState(new Uint8Array(32)))], [0]);
  assert.equal(rules.isolated, true, 'calls run in a worker');
  assert.equal(rules.workers, 1, 'a trap does not cost the worker');
  await assert.rejects(rules.validateMove(new Uint8Array(1), 0, 0, new Uint8Array(1)), (e) => e instanceof RulesError && /limit is 1/.test(e.message));
  await assert.rejects(rules.applyMove(new Uint8Array(1), 0, 0, new Uint8Array(1)), (e) => e instanceof RulesError && /outside its memory/.test(e.message));
  await assert.rejects(rules.isOver(new Uint8Array(1)), (e) => e instanceof RulesError && /refused/.test(e.message));
  await assert.rejects(rules.winner(new Uint8Array(1)), (e) => e instanceof RulesError && /limit is 1/.test(e.message));
  // Inputs are bounded before any call.
  await assert.rejects(rules.isOver(new Uint8Array(4097)), (e) => e instanceof RulesError && /limit is 4096/.test(e.message));
  await assert.rejects(rules.validateMove(new Uint8Array(1), 0, 0, new Uint8Array(1025)), (e) => e instanceof RulesError && /limit is 1024/.test(e.message));
  await assert.rejects(rules.moverAt(-1), RangeError);
  assert.equal(await rules.validateMove(new Uint8Array(1), 0, 5, new Uint8Array(1)), false, 'no seat 5');
});

test('the loader refuses imports, missing exports, bad bytes and size', async () => {
  const ok = { initial_state: answer(2048, 1), mover_at: answer(2048, 1), validate_move: answer(2048, 1), apply_move: answer(2048, 1), is_over: answer(2048, 1), winner: answer(2048, 1) };
  const rules = await Rules.load(assemble(ok));
  assert.equal(await rules.moverAt(3), 0);
  assert.equal(await rules.isOver(new Uint8Array(0)), false);
  assert.equal(await rules.winner(new Uint8Array(0)), 0);
  await assert.rejects(Rules.load(assemble(ok, { imports: true })), (e) => e instanceof RulesError && /does not load|import/.test(e.message));
  const { winner: _, ...noWinner } = ok;
  await assert.rejects(Rules.load(assemble(noWinner)), (e) => e instanceof RulesError && /no function export gc_pure_winner/.test(e.message));
  await assert.rejects(Rules.load(Uint8Array.of(1, 2, 3)), (e) => e instanceof RulesError && /does not load/.test(e.message));
  await assert.rejects(Rules.load(assemble(ok), { maxBytes: 20 }), (e) => e instanceof RulesError && /limit is 20/.test(e.message));
});

const OK = { initial_state: answer(2048, 1), mover_at: answer(2048, 1), validate_move: answer(2048, 1), apply_move: answer(2048, 1), is_over: answer(2048, 1), winner: answer(2048, 1) };

test('a rules module that loops forever is a RulesError after the timeout, and the next call runs', async () => {
  // validate_move: (loop (br 0)), never returning.
  const wasm = assemble({ ...OK, validate_move: [0x03, 0x40, 0x0c, 0x00, 0x0b, ...i64(0)] });
  const rules = await Rules.load(wasm, { timeoutMs: 300 });
  const t0 = Date.now();
  await assert.rejects(rules.validateMove(new Uint8Array(1), 0, 0, new Uint8Array(1)), (e) => e instanceof RulesError && /ran over 300 ms/.test(e.message));
  assert.ok(Date.now() - t0 < 5000, `took ${Date.now() - t0} ms`);
  // Calls queued behind it fail with it; later calls get a fresh worker.
  assert.equal(await rules.isOver(new Uint8Array(0)), false);
  assert.equal(rules.workers, 2);
  const both = await Promise.allSettled([rules.validateMove(new Uint8Array(1), 0, 0, new Uint8Array(1)), rules.isOver(new Uint8Array(0))]);
  assert.deepEqual(both.map((r) => r.status), ['rejected', 'rejected']);
  assert.equal(await rules.moverAt(0), 0);
  rules.close();
  // Without a worker there is no bound: `worker: 'never'` is the caller's choice.
  const inline = await Rules.load(assemble(OK), { worker: 'never' });
  assert.equal(await inline.isOver(new Uint8Array(0)), false);
  assert.equal(inline.isolated, false);
});

test('a rules module keeps no state from call to call (each runs on a fresh instance, as on the chain)', async () => {
  // is_over: the first call on an instance answers false and sets a global; a later one refuses.
  const wasm = assemble({ ...OK, is_over: [0x23, 0x00, 0x04, 0x7e, ...i64(-1), 0x05, 0x41, 0x01, 0x24, 0x00, ...answer(2048, 1), 0x0b] }, { global: true });
  const rules = await Rules.load(wasm);
  for (let i = 0; i < 3; i++) assert.equal(await rules.isOver(new Uint8Array(0)), false, `call ${i}`);
});

test('a rules module\'s memory stops at the chain\'s 16 MiB', async () => {
  // is_over: memory.grow(16) until it fails, then answers memory.size (pages, u32) at address 0.
  const grow = [0x02, 0x40, 0x03, 0x40, 0x41, 0x10, 0x40, 0x00, 0x41, 0x7f, 0x46, 0x0d, 0x01, 0x0c, 0x00, 0x0b, 0x0b,
    0x41, 0x00, 0x3f, 0x00, 0x36, 0x02, 0x00, ...answer(0, 4)];
  for (const memory of [[0x00, 0x01], [0x01, 0x01, ...uleb(1000)]]) {
    const rules = await Rules.load(assemble({ ...OK, is_over: grow }, { memory }));
    const out = await rules.call('is_over', new Uint8Array(0), 4);
    const pages = new DataView(out.buffer).getUint32(0, true);
    assert.ok(pages <= 256, `grew to ${pages} pages`);
    assert.ok(pages > 200, `stopped at ${pages} pages`);
    rules.close();
  }
  // A memory that starts above the limit is refused, as the chain refuses it at deploy.
  await assert.rejects(Rules.load(assemble(OK, { memory: [0x00, ...uleb(257)] })), (e) => e instanceof RulesError && /starts at 257 pages, the limit is 256/.test(e.message));
});
