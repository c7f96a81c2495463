// rules.test.js: the Rules loader's guard against a hostile rules module, on small wasm modules
// assembled here byte by byte (no node needed): a trap is a RulesError and the next call runs on a
// fresh instance; answers over their cap, outside memory, or not 0/1 are RulesErrors; a refusal
// (negative answer) is reported as one; a module with an import or without the exports is refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Rules, RulesError } from '../src/index.js';

const uleb = (n) => { const out = []; do { let b = n & 0x7f; n >>>= 7; if (n) b |= 0x80; out.push(b); } while (n); return out; };
function sleb64(v) {
  const out = [];
  for (;;) {
    const b = Number(v & 0x7fn);
    v >>= 7n;
    if ((v === 0n && (b & 0x40) === 0) || (v === -1n && (b & 0x40) !== 0)) { out.push(b); return out; }
    out.push(b | 0x80);
  }
}
const str = (s) => [...uleb(s.length), ...new TextEncoder().encode(s)];
const section = (id, body) => [id, ...uleb(body.length), ...body];
const vec = (items) => [...uleb(items.length), ...items.flat()];

/**
 * A module exporting `memory` (1 page), `gc_alloc` (always 1024) and each `gc_pure_<entry>` as the
 * given body instructions (bytes, before `end`). `imports` adds a function import.
 */
function assemble(bodies, { imports = false } = {}) {
  const entries = Object.keys(bodies);
  const types = section(1, vec([[0x60, 1, 0x7f, 1, 0x7f], [0x60, 2, 0x7f, 0x7f, 1, 0x7e]]));
  const imp = imports ? section(2, vec([[...str('env'), ...str('f'), 0x00, 0x00]])) : [];
  const base = imports ? 1 : 0;
  const funcs = section(3, vec([[0x00], ...entries.map(() => [0x01])]));
  const mem = section(5, vec([[0x00, 0x01]]));
  const exports = section(7, vec([
    [...str('memory'), 0x02, 0x00],
    [...str('gc_alloc'), 0x00, ...uleb(base)],
    ...entries.map((e, i) => [...str(`gc_pure_${e}`), 0x00, ...uleb(base + 1 + i)]),
  ]));
  const body = (code) => { const b = [0x00, ...code, 0x0b]; return [...uleb(b.length), ...b]; };
  const code = section(10, vec([body([0x41, ...uleb(1024)]), ...entries.map((e) => body(bodies[e]))]));
  return Uint8Array.from([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, ...types, ...imp, ...funcs, ...mem, ...exports, ...code]);
}
const i64 = (v) => [0x42, ...sleb64(BigInt(v))];
const answer = (ptr, len) => i64((BigInt(ptr) << 32n) | BigInt(len));

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
  assert.deepEqual([...(await rules.initialState())], [0]);
  assert.equal(rules.instances, 1);
  await assert.rejects(rules.moverAt(0), (e) => e instanceof RulesError && /trapped/.test(e.message));
  // The trap dropped the instance: the next call runs on a fresh one.
  assert.deepEqual([...(await rules.initialState())], [0]);
  assert.equal(rules.instances, 2);
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
