// schedule_host.test.js: the JS verifier's `schedule`, `cancel_scheduled` and `draw` host
// imports (verify_host.js replayGame) against the chain's rules (sdk-guest/src/schedule.rs,
// native/scheduler.rs, runtime/vm/src/run/imports.rs `register_schedule`): every refusal code in
// the chain's order, the bounds (4,096 payload bytes, 10,000,000 blocks or 366 days ahead, 1,024
// waiting per module, fuel 1 to fuel_apply), the call id derived from what scheduled it, the queue
// layout, cancelling, the due check of a call step, and draws only in a scheduled call with a
// beacon. The module is assembled here byte by byte: its `gc_apply` reads its arguments from the
// state key named by the op (so any binary value can be given), calls the import, and traps
// unless the answer is the one expected; its `gc_scheduled` draws once and traps unless the
// draw is the 32 bytes stored under the key named by its payload.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { replayGame } from '../src/verify/verify_host.js';
import { drawBytes } from '../src/index.js';
import { uleb } from '../testkit/wasm.js';

function sleb(v) {
  v = BigInt(v);
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
const I32 = 0x7f;
const I64 = 0x7e;
const fn = (params, results) => [0x60, ...uleb(params.length), ...params, ...uleb(results.length), ...results];
const i32c = (v) => [0x41, ...sleb(v)];
const load32 = (addr) => [...i32c(addr), 0x28, 0x00, 0x00];
const load64 = (addr, off = 0) => [...i32c(addr), 0x29, 0x00, ...uleb(off)];

/** The test module; `scheduled: false` leaves out the `gc_scheduled` export. */
function testModule({ scheduled = true } = {}) {
  const types = section(1, vec([
    fn([I32, I32, I32, I32], [I64]), // 0 get
    fn([I32, I64, I32, I32, I64], [I64]), // 1 schedule
    fn([I64], [I32]), // 2 cancel_scheduled
    fn([I32], []), // 3 draw
    fn([I32], [I32]), // 4 gc_alloc
    fn([I32, I32, I32, I32], [I32]), // 5 gc_apply
    fn([I64, I32, I32], [I32]), // 6 gc_scheduled
  ]));
  const imports = section(2, vec([
    [...str('gamechain_v1'), ...str('get'), 0x00, 0x00],
    [...str('gamechain_v1'), ...str('schedule'), 0x00, 0x01],
    [...str('gamechain_v1'), ...str('cancel_scheduled'), 0x00, 0x02],
    [...str('gamechain_v1'), ...str('draw'), 0x00, 0x03],
  ]));
  const funcs = section(3, vec([[0x04], [0x05], [0x06]]));
  const memory = section(5, vec([[0x00, 0x01]]));
  const exports = section(7, vec([
    [...str('memory'), 0x02, 0x00],
    [...str('gc_alloc'), 0x00, 4],
    [...str('gc_apply'), 0x00, 5],
    ...(scheduled ? [[...str('gc_scheduled'), 0x00, 6]] : []),
  ]));
  // The arguments at 2048: kind i32, at i64 (2052), fuel i64 (2060), expected i64 (2068),
  // payload length i32 (2076), repeat i32 (2080), mode i32 (2084: 0 schedule, 1 cancel `at`, 2 draw).
  const apply = [
    0x02, 0x01, I64, 0x01, I32, // locals: r i64, i i32
    0x20, 2, 0x20, 3, ...i32c(2048), ...i32c(64), 0x10, 0, 0x1a, // get(op) → 2048
    0x02, 0x40,
    ...load32(2084), ...i32c(1), 0x46, 0x04, 0x40,
    ...load64(2052), 0x10, 2, 0xac, 0x21, 4, 0x0c, 1,
    0x0b,
    ...load32(2084), ...i32c(2), 0x46, 0x04, 0x40,
    ...i32c(3000), 0x10, 3, ...i32c(0), 0x0f,
    0x0b,
    0x03, 0x40,
    ...load32(2048), ...load64(2052), ...i32c(4096), ...load32(2076), ...load64(2060), 0x10, 1, 0x21, 4,
    0x20, 5, ...i32c(1), 0x6a, 0x22, 5, ...load32(2080), 0x48, 0x0d, 0,
    0x0b,
    0x0b,
    0x20, 4, ...load64(2068), 0x51, 0x04, 0x40, ...i32c(0), 0x0f, 0x0b,
    0x00,
  ];
  const cmp = (off) => [...load64(3000, off), ...load64(2048, off), 0x52, 0x04, 0x40, 0x00, 0x0b];
  const onCall = [
    0x00,
    0x20, 1, 0x20, 2, ...i32c(2048), ...i32c(64), 0x10, 0, 0x1a, // get(payload) → 2048
    ...i32c(3000), 0x10, 3, // draw → 3000
    ...cmp(0), ...cmp(8), ...cmp(16), ...cmp(24),
    ...i32c(0),
  ];
  const body = (code) => { const b = [...code, 0x0b]; return [...uleb(b.length), ...b]; };
  const code = section(10, vec([body([0x00, ...i32c(1024)]), body(apply), body(onCall)]));
  const bytes = Uint8Array.from([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, ...types, ...imports, ...funcs, ...memory, ...exports, ...code]);
  return new WebAssembly.Module(bytes);
}

function args({ kind = 0, at = 0n, fuel = 1000n, expected = 0n, payloadLen = 0, repeat = 1, mode = 0 }) {
  const b = new Uint8Array(40);
  const dv = new DataView(b.buffer);
  dv.setInt32(0, kind, true);
  dv.setBigInt64(4, BigInt(at), true);
  dv.setBigInt64(12, BigInt(fuel), true);
  dv.setBigInt64(20, BigInt(expected), true);
  dv.setInt32(28, payloadLen, true);
  dv.setInt32(32, repeat, true);
  dv.setInt32(36, mode, true);
  return b;
}

const H = 100;
const T = 1_800_000_000_000;
const FUEL_APPLY = 10_000_000;
const txid = (n) => bytesToHex(sha256(Uint8Array.of(n)));
const u32le = (n) => { const b = new Uint8Array(4); new DataView(b.buffer).setUint32(0, n, true); return b; };
const u64le = (n) => { const b = new Uint8Array(8); new DataView(b.buffer).setBigUint64(0, BigInt(n), true); return b; };
const cat = (...parts) => Uint8Array.from(parts.flatMap((p) => [...p]));
/** The chain's call id (scheduler.rs `call_id`), computed here from its formula. */
function callId(module, origin, n) {
  const m = new TextEncoder().encode(module);
  const d = sha256(cat(new TextEncoder().encode('gamechain.call.v1'), u32le(m.length), m, origin, u32le(n)));
  return Number(new DataView(d.buffer).getBigUint64(0, false) & ((1n << 53n) - 1n));
}
const fromTx = (t) => cat([1], Buffer.from(t, 'hex'));
const fromCall = (id) => cat([2], u64le(id));

/** One tx step of the test module: `key` names its arguments in the state. */
const tx = (key, n, extra = {}) => ({ type: 'tx', txid: txid(n), height: H, timeMs: T, checkpoint: { hash: '', height: 0 }, sequencer: 'seq', sender: 'alice', op: key, ...extra });
const call = (id, height, beacon, extra = {}) => ({ type: 'call', id, height, timeMs: T + 5000, checkpoint: { hash: '', height: 0 }, sequencer: 'seq', beacon, ...extra });
const state = (entries) => Object.entries(entries).map(([k, v]) => [`m/t/${k}`, v]);
const run = (input, module = testModule()) => replayGame(module, { moduleId: 't', fuelApply: FUEL_APPLY, ...input });
const TRAP = /^internal: trap/;

test('schedule: each refusal code, in the chain\'s order', async () => {
  const cases = {
    'unknown kind': [{ kind: 2, at: H + 1 }, -2],
    'negative at': [{ kind: 0, at: -1 }, -2],
    'fuel 0': [{ at: H + 1, fuel: 0 }, -6],
    'fuel over fuel_apply': [{ at: H + 1, fuel: FUEL_APPLY + 1 }, -6],
    'negative fuel': [{ at: H + 1, fuel: -5 }, -6],
    // The due point is checked before the payload's size (scheduler.rs `schedule`: not ahead,
    // too far, then the payload).
    'payload 4097, not ahead': [{ at: H, payloadLen: 4097 }, -2],
    'payload 4097, too far': [{ at: H + 10_000_001, payloadLen: 4097 }, -3],
    'payload 4097': [{ at: H + 1, payloadLen: 4097 }, -4],
    'not ahead: the current height': [{ at: H }, -2],
    'not ahead: the current time': [{ kind: 1, at: T }, -2],
    'too far: blocks': [{ at: H + 10_000_001 }, -3],
    'too far: time': [{ kind: 1, at: T + 366 * 24 * 3_600_000 + 1 }, -3],
    // Fuel is checked before the due point too.
    'fuel 0, not ahead': [{ at: H, fuel: 0 }, -6],
  };
  const keys = Object.keys(cases);
  const results = await run({
    state: state(Object.fromEntries(keys.map((k) => [k, args({ ...cases[k][0], expected: cases[k][1] })]))),
    steps: keys.map((k, i) => tx(k, i)),
  });
  keys.forEach((k, i) => assert.deepEqual([k, results[i].ok, results[i].error], [k, true, null]));
  // A module without gc_scheduled: -7, before the fuel is looked at.
  const none = await run({ state: state({ a: args({ at: H + 1, fuel: 0, expected: -7 }) }), steps: [tx('a', 0)] }, testModule({ scheduled: false }));
  assert.deepEqual([none[0].ok, none[0].error], [true, null]);
  // An answer other than expected traps (the test module works).
  const wrong = await run({ state: state({ a: args({ at: H, expected: -3 }) }), steps: [tx('a', 0)] });
  assert.match(wrong[0].error, TRAP);
});

test('schedule: the limits themselves are allowed; ids follow the chain\'s formula (origin, n; a refusal does not count)', async () => {
  const t0 = txid(0);
  const first = callId('t', fromTx(t0), 0);
  const second = callId('t', fromTx(t0), 1);
  const third = callId('t', fromTx(t0), 2);
  // One step schedules three calls (repeat 3: at the height limit, fuel_apply, 4096 bytes): the
  // last answer is the third id.
  const results = await run({
    state: state({
      a: args({ at: H + 10_000_000, fuel: FUEL_APPLY, payloadLen: 4096, repeat: 3, expected: third }),
      b: args({ kind: 1, at: T + 366 * 24 * 3_600_000, expected: callId('t', fromTx(txid(1)), 0) }),
      // A refusal does not count: the next success is still n = 0 of its call.
      c: args({ at: H, expected: -2 }),
    }),
    steps: [tx('a', 0), tx('b', 1)],
  });
  assert.deepEqual(results.map((r) => r.error), [null, null]);
  assert.ok(first !== second && second !== third && third < 2 ** 53);
});

test('schedule: 1,024 calls of a module wait at most; cancel frees one, and answers 0 for a call not waiting', async () => {
  const t0 = txid(0);
  const ids = Array.from({ length: 1024 }, (_, n) => callId('t', fromTx(t0), n));
  const results = await run({
    state: state({
      fill: args({ at: H + 1, repeat: 1024, expected: ids[1023] }),
      full: args({ at: H + 1, expected: -5 }),
      cancel: args({ mode: 1, at: ids[7], expected: 1 }),
      again: args({ mode: 1, at: ids[7], expected: 0 }),
      negative: args({ mode: 1, at: -1, expected: 0 }),
      unknown: args({ mode: 1, at: 12345, expected: 0 }),
      room: args({ at: H + 1, expected: callId('t', fromTx(txid(6)), 0) }),
      fullAgain: args({ at: H + 1, expected: -5 }),
    }),
    steps: [tx('fill', 0), tx('full', 1), tx('cancel', 2), tx('again', 3), tx('negative', 4), tx('unknown', 5), tx('room', 6), tx('fullAgain', 7)],
  });
  assert.deepEqual(results.map((r) => r.error), Array(8).fill(null));
});

test('a failed transaction schedules nothing; a call step runs only a queued, due call, with draws from its beacon', async () => {
  const beacon = 'ab'.repeat(48);
  const idA = callId('t', fromTx(txid(0)), 0);
  const idB = callId('t', fromTx(txid(1)), 0);
  const draw0 = drawBytes(beacon, 't', idA, 0);
  const s = state({
    a: args({ at: H + 1, payloadLen: 2, expected: idA }),
    b: args({ at: H + 5, payloadLen: 2, expected: idB }),
    bad: args({ at: H + 1, expected: 999 }), // traps: its schedule is rolled back
    draw: args({ mode: 2 }),
  });
  // The payload (at 4096, 2 bytes: zeros here) names the expected draw's key: "\0\0".
  s.push(['m/t/\u0000\u0000', draw0]);
  const steps = [tx('a', 0), tx('b', 1), tx('bad', 2), tx('draw', 3), call(idA, H + 1, beacon)];
  const r = await run({ state: s, steps });
  assert.deepEqual(r.slice(0, 2).map((x) => x.error), [null, null]);
  assert.match(r[2].error, TRAP);
  assert.equal(r[3].error, 'internal: no draw here: randomness is drawn only in a scheduled call, on a chain with a beacon');
  assert.deepEqual([r[4].ok, r[4].error], [true, null]);
  // The call was taken out: running it again finds nothing.
  const twice = await run({ state: s, steps: [tx('a', 0), call(idA, H + 1, beacon), call(idA, H + 2, beacon)] });
  assert.deepEqual(twice[2].missing, { expected: `call ${idA} scheduled by an earlier step of this game`, got: 'no such call in the replay\'s queue' });
  // Not due yet (a height call), never scheduled, or scheduled by a step that failed.
  const early = await run({ state: s, steps: [tx('b', 1), call(idB, H + 4, beacon)] });
  assert.deepEqual(early[1].missing, { expected: `a call due by height ${H + 4}`, got: `a call due at height ${H + 5}` });
  const never = await run({ state: s, steps: [call(idA, H + 1, beacon)] });
  assert.equal(never.length, 1);
  assert.match(never[0].missing.expected, /scheduled by an earlier step/);
  const rolledBack = await run({ state: s, steps: [tx('bad', 2), call(callId('t', fromTx(txid(2)), 0), H + 1, beacon)] });
  assert.ok(rolledBack[1].missing);
  // Another beacon draws other bytes: the module's check of its draw fails.
  const other = await run({ state: s, steps: [tx('a', 0), call(idA, H + 1, 'cd'.repeat(48))] });
  assert.match(other[1].error, TRAP);
  // No beacon (a chain without one): the draw traps with the chain's text.
  const none = await run({ state: s, steps: [tx('a', 0), call(idA, H + 1, null)] });
  assert.equal(none[1].error, 'internal: no draw here: randomness is drawn only in a scheduled call, on a chain with a beacon');
});

test('a call scheduled from a scheduled call has its parent as origin; time calls are not checked for due-ness', async () => {
  const beacon = '11'.repeat(48);
  const idA = callId('t', fromTx(txid(0)), 0);
  const s = state({ a: args({ kind: 1, at: T + 60_000, payloadLen: 2, expected: idA }) });
  s.push(['m/t/\u0000\u0000', drawBytes(beacon, 't', idA, 0)]);
  // Due at a time the step's block has not reached: run anyway (the chain's parent-time rule is
  // not checkable from a transcript).
  const r = await run({ state: s, steps: [tx('a', 0), call(idA, H + 1, beacon)] });
  assert.deepEqual(r.map((x) => x.error), [null, null]);
  assert.notEqual(callId('t', fromCall(idA), 0), callId('t', fromTx(txid(0)), 0));
});
