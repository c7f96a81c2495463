// sealed_host.test.js: the JS verifier's sealed-move host imports (verify_host.js replayGame:
// `schedule_sealed`, `seal`, and the run of a sealed call) against the chain's rules
// (sdk-guest/ABI.md "Sealed moves", runtime/vm/src/run/imports.rs, sdk-guest/src/native/
// scheduler.rs and kv_ctx.rs, node/src/verify/game/replay.rs): every refusal code in the chain's
// order (-11 for a chain without a beacon key, `input.beaconKey`, in both imports), the bounds (64
// sealed calls or 500,000,000 fuel a round, 1,024 waiting, 224 bytes, tags of 64), the queue
// layout the chain writes (`sched/s/…` records with `"sealed"`, `sched/r/…` "count fuel", the id
// index and the module's count, read back with `read_raw`), the proof check (real envelopes of
// sealMove under a beacon key made here, the replay's `beaconKey`: one sealed under another key is
// -9), and the sealed call: only in the block of
// its round, `gc_scheduled(id | 2^62, payload ‖ 1 ‖ plaintext)`, or `payload ‖ 0 ‖ zeros` when
// void (no move, an envelope that does not open, no beacon). The module is
// test/fixtures/sealed_host.wat (its bytes below: no toolchain needed). No node is started: the
// sealed_rps games on a node are verified in test/verify.test.js's manner in
// test/sealed_verify.test.js.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bls12_381 } from '@noble/curves/bls12-381.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { replayGame } from '../src/verify/verify_host.js';
import { sealMove, checkSealed, openSealed, plaintextOf, beaconMessage, BEACON_DST } from '../src/index.js';

/** test/fixtures/sealed_host.wat, compiled by wat2wasm 1.0. */
const SEALED_HOST_WASM = hexToBytes(
  '0061736d01000000013a0860047f7f7f7f017e60047f7f7f7f0060047e7f7f7e017e60057e7f7f7f7f017e60017e017f60017f017f6004' +
  '7f7f7f7f017f60037e7f7f017f029201060c67616d65636861696e5f76310367657400000c67616d65636861696e5f7631037075740001' +
  '0c67616d65636861696e5f763108726561645f72617700000c67616d65636861696e5f76310f7363686564756c655f7365616c65640002' +
  '0c67616d65636861696e5f7631047365616c00030c67616d65636861696e5f76311063616e63656c5f7363686564756c65640004030403' +
  '0506070503010002072f04066d656d6f727902000867635f616c6c6f6300060867635f6170706c7900070c67635f7363686564756c6564' +
  '00080ab502030600418080040b8b0202017e037f200220034180204180c00110001a418020280200210741b02041a0202802006a210602' +
  '402007450440034041882029030041b02041a02028020041902029030010032104200541016a2105200541a820280200480d000b0c010b' +
  '2007410146044041882029030041b02041a020280200200641a420280200100421040c010b2007410246044041b02041a0202802004180' +
  '80024180800110022104200441a420280200ac520440000b02400340200541a4202802004e0d014180800220056a2d0000200620056a2d' +
  '0000470440000b200541016a21050c000b0b41000f0b200741034604404188202903001005ac21040c010b000b20044198202903005104' +
  '4041000f0b000b1f0041002000370300411041014100410810014111410120012002100141000b0b08010041100b02696e');
const MODULE = new WebAssembly.Module(SEALED_HOST_WASM);
/** The same module with its `gc_scheduled` export renamed (`gc_scheduleD`): not schedulable. */
const UNSCHEDULABLE = (() => {
  const b = Uint8Array.from(SEALED_HOST_WASM);
  const name = new TextEncoder().encode('gc_scheduled');
  const at = bytesToHex(b).indexOf(bytesToHex(name)) / 2;
  assert.ok(Number.isInteger(at) && at > 0);
  b[at + name.length - 1] = 'D'.charCodeAt(0);
  return new WebAssembly.Module(b);
})();

const H = 100;
const T = 1_800_000_000_000;
const FUEL_APPLY = 10_000_000;
const CHAIN = 'gc-sealed-test';
const SEAL = { checkSealed, openSealed };
const te = new TextEncoder();
const short = bls12_381.shortSignatures;
const sk = short.keygen(new Uint8Array(48).fill(9)).secretKey;
const PK = bytesToHex(short.getPublicKey(sk).toBytes());
/** The beacon of height `h` of chain CHAIN under PK (what a header carries). */
const beaconOf = (h, chain = CHAIN) => bytesToHex(short.sign(short.hash(beaconMessage(chain, h), BEACON_DST), sk).toBytes());

const txid = (n) => bytesToHex(sha256(Uint8Array.of(n)));
const u32le = (n) => { const b = new Uint8Array(4); new DataView(b.buffer).setUint32(0, n, true); return b; };
const u64le = (n) => { const b = new Uint8Array(8); new DataView(b.buffer).setBigUint64(0, BigInt(n), true); return b; };
const cat = (...parts) => Uint8Array.from(parts.flatMap((p) => [...p]));
const hex16 = (n) => BigInt(n).toString(16).padStart(16, '0');
/** The chain's call id (scheduler.rs `call_id`) of the n-th call transaction `t` schedules. */
function callId(t, n, module = 't') {
  const m = te.encode(module);
  const d = sha256(cat(te.encode('gamechain.call.v1'), u32le(m.length), m, [1], hexToBytes(t), u32le(n)));
  return Number(new DataView(d.buffer).getBigUint64(0, false) & ((1n << 53n) - 1n));
}

/** The arguments of one gc_apply (sealed_host.wat's head and buffers). */
function args({ mode = 0, a = 0n, b = 0n, expected = 0n, buf1 = new Uint8Array(0), buf2 = new Uint8Array(0), len2 = buf2.length, repeat = 1 }) {
  const out = new Uint8Array(48 + buf1.length + buf2.length);
  const dv = new DataView(out.buffer);
  dv.setInt32(0, mode, true);
  dv.setBigInt64(8, BigInt(a), true);
  dv.setBigInt64(16, BigInt(b), true);
  dv.setBigInt64(24, BigInt(expected), true);
  dv.setInt32(32, buf1.length, true);
  dv.setInt32(36, len2, true);
  dv.setInt32(40, repeat, true);
  out.set(buf1, 48);
  out.set(buf2, 48 + buf1.length);
  return out;
}
const reserve = (round, expected, { fuel = 300_000, payload = te.encode('p'), repeat = 1 } = {}) => args({ mode: 0, a: round, b: fuel, buf1: payload, expected, repeat });
const sealIn = (id, envelope, tag, expected) => args({ mode: 1, a: id, buf1: typeof envelope === 'string' ? hexToBytes(envelope) : envelope, buf2: typeof tag === 'string' ? te.encode(tag) : tag, expected });
/** read_raw(key) must answer `value` (text or bytes), or absent (null). */
const raw = (key, value) => args({ mode: 2, buf1: te.encode(key), buf2: value === null ? new Uint8Array(0) : typeof value === 'string' ? te.encode(value) : value, len2: value === null ? -1 : undefined });
const cancel = (id, expected) => args({ mode: 3, a: id, expected });

/** A transaction step running the arguments at state key `key` (its op), sent by DAlice. */
const tx = (key, n, extra = {}) => ({ type: 'tx', txid: txid(n), height: H, timeMs: T, checkpoint: { hash: '', height: 0 }, sequencer: 'seq', sender: 'DAlice', op: key, beacon: beaconOf(H), ...extra });
const call = (id, height, extra = {}) => ({ type: 'call', id, height, timeMs: T + 5000, checkpoint: { hash: '', height: 0 }, sequencer: 'seq', beacon: beaconOf(height), ...extra });
const state = (entries, rawEntries = {}) => [
  ...Object.entries(entries).map(([k, v]) => [`m/t/${k}`, v]),
  ...Object.entries(rawEntries).map(([k, v]) => [k, typeof v === 'string' ? te.encode(v) : v]),
];
/** Another beacon key (not the chain's): a move sealed under it is not bound to the chain. */
const OTHER_PK = bytesToHex(short.getPublicKey(short.keygen(new Uint8Array(48).fill(4)).secretKey).toBytes());
/** The replay of `input` on a chain whose beacon key is PK (unless `input.beaconKey` says otherwise). */
const run = (input, { module = MODULE, seal = SEAL } = {}) => replayGame(module, { moduleId: 't', fuelApply: FUEL_APPLY, beaconKey: PK, ...input }, seal);
const errors = (results) => results.map((r) => r.error ?? (r.missing ? 'missing' : null));
/**
 * Runs `cases` ({name: [arguments, step extra]}) as one transaction each (`input`: more of the
 * replay's input, `rawState`: raw keys besides); every one must answer as expected.
 */
async function eachAnswers(cases, opts, { input = {}, rawState = {} } = {}) {
  const keys = Object.keys(cases);
  const results = await run({ ...input, state: state(Object.fromEntries(keys.map((k) => [k, cases[k][0]])), rawState), steps: keys.map((k, i) => tx(k, i, cases[k][1] ?? {})) }, opts);
  keys.forEach((k, i) => assert.deepEqual([k, results[i].ok, results[i].error], [k, true, null]));
}
const TRAP = /^internal: trap/;
const R = H + 20;
const record = (id, round, { fuel = 300_000, payload = '70', sealed = '', height = H } = {}) =>
  `{"id":${id},"module":"t","at":{"height":${round}},"fuel":${fuel},"payload":"${payload}","scheduled_height":${height},"sealed":"${sealed}"}`;
const envelope = ({ sender = 'DAlice', tag = 'g/x', round = R, move = 2, module = 't', chainId = CHAIN, key = PK } = {}) =>
  sealMove({ beaconPublicKey: key, chainId, module, sender, tag, round, plaintext: plaintextOf(Uint8Array.of(move)) });

test('the module is sealed_host.wat (when wat2wasm is here to say so)', (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sealed-host-'));
  const out = path.join(dir, 'm.wasm');
  const r = spawnSync('wat2wasm', [new URL('./fixtures/sealed_host.wat', import.meta.url).pathname, '-o', out], { encoding: 'utf8' });
  if (r.error) { t.skip('no wat2wasm on PATH'); return; }
  assert.equal(r.status, 0, r.stderr);
  assert.equal(bytesToHex(fs.readFileSync(out)), bytesToHex(SEALED_HOST_WASM));
  fs.rmSync(dir, { recursive: true, force: true });
});

test('schedule_sealed: each refusal code, in the chain\'s order', async () => {
  await eachAnswers({
    'fuel 0': [reserve(R, -6, { fuel: 0 })],
    'fuel over fuel_apply': [reserve(R, -6, { fuel: FUEL_APPLY + 1 })],
    'negative fuel': [reserve(R, -6, { fuel: -1 })],
    // Fuel before the round's sign, both before the beacon key.
    'fuel 0, negative round': [reserve(-1, -6, { fuel: 0 })],
    'negative round': [reserve(-1, -2)],
    'not ahead': [reserve(H, -2)],
    'too far': [reserve(H + 10_000_001, -3)],
    'payload 4097, not ahead': [reserve(H, -2, { payload: new Uint8Array(4097) })],
    'payload 4097, too far': [reserve(H + 10_000_001, -3, { payload: new Uint8Array(4097) })],
    'payload 4097': [reserve(R, -4, { payload: new Uint8Array(4097) })],
    // The limits themselves are allowed: the answer is the id.
    'the limits': [reserve(H + 10_000_000, callId(txid(10), 0), { fuel: FUEL_APPLY, payload: new Uint8Array(4096) })],
    // The chain's key decides (kv_ctx.rs `beacon_key`), not the block's beacon.
    'a block without a beacon': [reserve(R, callId(txid(11), 0)), { beacon: null }],
  });
  // A chain without a beacon key: -11 after the fuel and the round's sign, before its place.
  await eachAnswers({
    'negative round, no key': [reserve(-1, -2)],
    'fuel 0, no key': [reserve(R, -6, { fuel: 0 })],
    'no key': [reserve(R, -11)],
    'not ahead, no key': [reserve(H, -11)],
    'too far, no key': [reserve(H + 10_000_001, -11)],
    'payload 4097, no key': [reserve(R, -11, { payload: new Uint8Array(4097) })],
  }, undefined, { input: { beaconKey: null } });
  // A module without gc_scheduled: -7, before anything else.
  await eachAnswers({ 'not schedulable': [reserve(-1, -7, { fuel: 0 })] }, { module: UNSCHEDULABLE }, { input: { beaconKey: null } });
  // An answer other than the expected one traps (the module works).
  const wrong = await run({ state: state({ a: reserve(H, -3) }), steps: [tx('a', 0)] });
  assert.match(wrong[0].error, TRAP);
});

test('schedule_sealed: 64 sealed calls or 500,000,000 fuel a round; 1,024 waiting a module, before the round\'s room', async () => {
  const t0 = txid(0);
  // 64 in one round (one transaction: ids n = 0..63), the 65th refused, another round has room.
  await eachAnswers({
    fill: [reserve(R, callId(t0, 63), { repeat: 64 })],
    full: [reserve(R, -10)],
    next: [reserve(R + 1, callId(txid(2), 0))],
  });
  // Fuel: 500,000,000 a round (with a chain whose fuel_apply allows 250,000,000 a call).
  const big = { fuelApply: 300_000_000 };
  const keys = ['two', 'more', 'other'];
  const r = await run({
    ...big,
    state: state({
      two: reserve(R, callId(t0, 1), { fuel: 250_000_000, repeat: 2 }),
      more: reserve(R, -10, { fuel: 1 }),
      other: reserve(R + 1, callId(txid(2), 0), { fuel: 1 }),
    }),
    steps: keys.map((k, i) => tx(k, i)),
  });
  assert.deepEqual(errors(r), [null, null, null]);
  // 1,024 waiting (16 rounds of 64): the module is full before any round is looked at.
  const fill = {};
  for (let i = 0; i < 16; i++) fill[`f${i}`] = [reserve(R + i, callId(txid(i), 63), { repeat: 64 })];
  await eachAnswers({ ...fill, 'module full': [reserve(R + 40, -5)], 'module and round full': [reserve(R, -5)] });
});

test('the queue layout: sched/s record with "sealed", the id index, the module\'s count, the round\'s "count fuel"; cancel and seal keep it', async () => {
  const idA = callId(txid(0), 0);
  const idB = callId(txid(0), 1);
  const sealed = envelope({ tag: 'g/x' });
  const keyA = `sched/s/${hex16(R)}/${hex16(idA)}`;
  const keyB = `sched/s/${hex16(R)}/${hex16(idB)}`;
  const r = await run({
    state: state({
      two: reserve(R, idB, { repeat: 2 }),
      recA: raw(keyA, record(idA, R)),
      recB: raw(keyB, record(idB, R)),
      index: raw(`sched/id/${hex16(idA)}`, keyA),
      count: raw('sched/n/t', '2'),
      round: raw(`sched/r/${hex16(R)}`, '2 600000'),
      seal: sealIn(idA, sealed, 'g/x', 0),
      recSealed: raw(keyA, record(idA, R, { sealed })),
      cancel: cancel(idB, 1),
      cancelAgain: cancel(idB, 0),
      goneB: raw(keyB, null),
      goneIndex: raw(`sched/id/${hex16(idB)}`, null),
      count1: raw('sched/n/t', '1'),
      round1: raw(`sched/r/${hex16(R)}`, '1 300000'),
      cancelA: cancel(idA, 1),
      count0: raw('sched/n/t', null),
      round0: raw(`sched/r/${hex16(R)}`, null),
    }),
    steps: ['two', 'recA', 'recB', 'index', 'count', 'round', 'seal', 'recSealed', 'cancel', 'cancelAgain', 'goneB', 'goneIndex', 'count1', 'round1', 'cancelA', 'count0', 'round0'].map((k, i) => tx(k, i)),
  });
  assert.deepEqual(errors(r), Array(17).fill(null));
  // A failed transaction reserves nothing: the next one's n is 0 again and the round is empty.
  const failed = await run({ state: state({ bad: reserve(R, 12345), none: raw(`sched/r/${hex16(R)}`, null), count: raw('sched/n/t', null) }), steps: [tx('bad', 0), tx('none', 1), tx('count', 2)] });
  assert.match(failed[0].error, TRAP);
  assert.deepEqual(errors(failed).slice(1), [null, null]);
});

test('seal: each refusal code, in the chain\'s order; the proof binds the chain\'s beacon key, module, sender, tag and round', async () => {
  const idA = callId(txid(0), 0);
  const idB = callId(txid(0), 1);
  const good = envelope();
  const ordinary = 424242;
  const foreign = 434343;
  const ordinaryKey = `sched/h/${hex16(R)}/${hex16(ordinary)}`;
  const foreignKey = `sched/s/${hex16(R)}/${hex16(foreign)}`;
  const rawState = {
    [ordinaryKey]: `{"id":${ordinary},"module":"t","at":{"height":${R}},"fuel":1,"payload":"","scheduled_height":1}`,
    [`sched/id/${hex16(ordinary)}`]: ordinaryKey,
    [foreignKey]: `{"id":${foreign},"module":"u","at":{"height":${R}},"fuel":1,"payload":"","scheduled_height":1,"sealed":""}`,
    [`sched/id/${hex16(foreign)}`]: foreignKey,
  };
  const cases = {
    reserve: [reserve(R, idB, { repeat: 2 })],
    'negative id, bad envelope': [sealIn(-1, new Uint8Array(3), 'g/x', -12)],
    'no such call': [sealIn(idA + 1, good, 'g/x', -12)],
    'an ordinary call': [sealIn(ordinary, good, 'g/x', -12)],
    'another module\'s sealed call': [sealIn(foreign, good, 'g/x', -12)],
    '223 bytes': [sealIn(idA, hexToBytes(good).slice(1), 'g/x', -8)],
    '225 bytes': [sealIn(idA, cat(hexToBytes(good), [0]), 'g/x', -8)],
    'a tag of 65 bytes': [sealIn(idA, good, 'x'.repeat(65), -8)],
    'zeros': [sealIn(idA, new Uint8Array(224), 'g/x', -8)],
    'U off the curve': [sealIn(idA, cat(new Uint8Array(96).fill(0xff), hexToBytes(good).slice(96)), 'g/x', -8)],
    'another tag': [sealIn(idA, good, 'g/o', -9)],
    'another sender': [sealIn(idA, good, 'g/x', -9), { sender: 'DBob' }],
    'another round': [sealIn(idA, envelope({ round: R + 1 }), 'g/x', -9)],
    'another module': [sealIn(idA, envelope({ module: 'u' }), 'g/x', -9)],
    // Sealed under a key that is not the chain's (a lying node's genesis): refused, not stored.
    'another beacon key': [sealIn(idA, envelope({ key: OTHER_PK }), 'g/x', -9)],
    'a changed byte': [sealIn(idA, cat(hexToBytes(good).slice(0, 200), [hexToBytes(good)[200] ^ 1], hexToBytes(good).slice(201)), 'g/x', -9)],
    'the tag of 64 bytes allowed': [sealIn(idB, envelope({ tag: 'y'.repeat(64) }), 'y'.repeat(64), 0)],
    sealed: [sealIn(idA, good, 'g/x', 0)],
    // One move a seat: -13 before the envelope is looked at.
    again: [sealIn(idA, envelope(), 'g/x', -13)],
    'again, garbage': [sealIn(idA, new Uint8Array(3), 'x'.repeat(70), -13)],
  };
  const keys = Object.keys(cases);
  const r = await run({
    state: state(Object.fromEntries(keys.map((k) => [k, cases[k][0]])), rawState),
    steps: keys.map((k, i) => tx(k, i, cases[k][1] ?? {})),
  });
  keys.forEach((k, i) => assert.deepEqual([k, r[i].ok, r[i].error], [k, true, null]));
  // The checks are seal.js's own answers.
  assert.equal(checkSealed(good, { module: 't', sender: 'DAlice', tag: 'g/x', round: R, beaconPublicKey: PK }), 'ok');
  assert.equal(checkSealed(envelope({ key: OTHER_PK }), { module: 't', sender: 'DAlice', tag: 'g/x', round: R, beaconPublicKey: PK }), 'unbound');
  // The replay's beacon key is the one checked: under OTHER_PK, the envelope made under it is taken.
  const underOther = await run({ beaconKey: OTHER_PK, state: state({ reserve: reserve(R, idA), seal: sealIn(idA, envelope({ key: OTHER_PK }), 'g/x', 0) }), steps: [tx('reserve', 0), tx('seal', 1)] });
  assert.deepEqual(errors(underOther), [null, null]);
  // A chain without a beacon key (kv_ctx.rs `seal`): -11 after a negative id, before the queue is
  // looked at (a waiting sealed call of the module is in the state here: no reservation could be).
  const waiting = 454545;
  const waitingKey = `sched/s/${hex16(R)}/${hex16(waiting)}`;
  await eachAnswers({
    'negative id, no key': [sealIn(-1, good, 'g/x', -12)],
    'no key': [sealIn(waiting, good, 'g/x', -11)],
    'no key, no such call, garbage': [sealIn(waiting + 1, new Uint8Array(3), 'x'.repeat(70), -11)],
  }, undefined, {
    input: { beaconKey: null },
    rawState: {
      [waitingKey]: `{"id":${waiting},"module":"t","at":{"height":${R}},"fuel":1,"payload":"","scheduled_height":1,"sealed":""}`,
      [`sched/id/${hex16(waiting)}`]: waitingKey,
    },
  });
});

test('a sealed call runs only in the block of its round: gc_scheduled(id | 2^62, payload ‖ 1 ‖ plaintext), or ‖ 0 ‖ zeros when void', async () => {
  // One transaction reserves three seats (payload 'p'); x seals paper; o an envelope bound right
  // but sealed under another chain id (it checks, it does not open); z nothing.
  const [x, o, z] = [0, 1, 2].map((n) => callId(txid(0), n));
  const flagged = (id) => u64le(BigInt(id) | (1n << 62n));
  const input = (opened) => (opened === null ? cat(te.encode('p'), new Uint8Array(33)) : cat(te.encode('p'), [1], opened));
  const paper = plaintextOf(Uint8Array.of(2));
  const s = state({
    reserve: reserve(R, z, { repeat: 3 }),
    sx: sealIn(x, envelope({ tag: 'x' }), 'x', 0),
    so: sealIn(o, envelope({ tag: 'o', chainId: 'another-chain' }), 'o', 0),
    idX: raw('m/t/i', flagged(x)),
    inX: raw('m/t/n', input(paper)),
    idO: raw('m/t/i', flagged(o)),
    inO: raw('m/t/n', input(null)),
    idZ: raw('m/t/i', flagged(z)),
    inZ: raw('m/t/n', input(null)),
    round3: raw(`sched/r/${hex16(R)}`, '3 900000'),
    round2: raw(`sched/r/${hex16(R)}`, '2 600000'),
    round0: raw(`sched/r/${hex16(R)}`, null),
    count0: raw('sched/n/t', null),
  });
  const setup = [tx('reserve', 0), tx('sx', 1), tx('so', 2), tx('round3', 3)];
  const at = (key, n) => tx(key, n, { height: R });
  const r = await run({
    state: s,
    steps: [...setup,
      call(x, R), at('idX', 10), at('inX', 11), at('round2', 12),
      call(o, R), at('idO', 13), at('inO', 14),
      call(z, R), at('idZ', 15), at('inZ', 16), at('round0', 17), at('count0', 18),
    ],
  });
  assert.deepEqual(errors(r), Array(16).fill(null), JSON.stringify(errors(r)));
  // The opening is the step's beacon's: the beacon of another height opens nothing (void); a
  // block without a beacon opens nothing.
  for (const beacon of [beaconOf(R + 1), null]) {
    const v = await run({ state: s, steps: [...setup, call(x, R, { beacon }), at('inO', 10)] });
    assert.deepEqual(errors(v), [null, null, null, null, null, null], String(beacon));
  }
  // Before or after its round: not this block's call (the Rust replay's divergence).
  for (const h of [R - 1, R + 1]) {
    const m = await run({ state: s, steps: [...setup, call(x, h)] });
    assert.equal(m.length, 5);
    assert.deepEqual(m[4].missing, { expected: `a sealed call opened at height ${h}`, got: `a sealed call of round ${R}` });
  }
  // Taken out of the queue when it runs: a second run finds nothing.
  const twice = await run({ state: s, steps: [...setup, call(z, R), call(z, R)] });
  assert.match(twice[5].missing.expected, /scheduled by an earlier step/);
  // Draws in a sealed call use the plain id (the module here draws none; the id it gets is flagged).
});

test('without checkSealed and openSealed: a seal or an opening ends the replay with an error; an empty seat needs neither', async () => {
  const [x, o] = [0, 1].map((n) => callId(txid(0), n));
  const s = state({
    reserve: reserve(R, o, { repeat: 2 }),
    sx: sealIn(x, envelope({ tag: 'x' }), 'x', 0),
    inO: raw('m/t/n', cat(te.encode('p'), new Uint8Array(33))),
  });
  await assert.rejects(run({ state: s, steps: [tx('reserve', 0), tx('sx', 1)] }, { seal: null }), /sealed moves cannot be checked here/);
  const sealedFirst = await run({ state: s, steps: [tx('reserve', 0), tx('sx', 1)] });
  assert.deepEqual(errors(sealedFirst), [null, null]);
  // Reserving and an empty seat's (void) run need no cryptography.
  const empty = await run({ state: s, steps: [tx('reserve', 0), call(o, R), tx('inO', 2, { height: R })] }, { seal: null });
  assert.deepEqual(errors(empty), [null, null, null]);
});
