// beacon.test.js: the randomness beacon, the format-2 header and the scheduled calls' receipts
// against a real block the Rust node made (test/fixtures/dice-roll-block.json: `GET
// /v1/blocks/<h>` of a dev chain, the block where a dice duel's roll ran before another duel's
// create, with its genesis's chain id, sequencer and beacon key). No node is started: every
// expected value is the Rust code's own (the block hash, its signature, the BLS beacon, the
// receipt root, the dice the module drew).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { bls12_381 } from '@noble/curves/bls12-381.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import {
  verifyBeacon, verifyBeacons, beaconMessage, drawBytes, drawer, BEACON_DST, headerHash, headerBytes, blockReceiptRoot,
  scheduledReceiptHash, receiptHash, merkleRoot, verifyMessage,
} from '../src/index.js';

const { genesis, block } = JSON.parse(fs.readFileSync(new URL('./fixtures/dice-roll-block.json', import.meta.url), 'utf8'));
const key = genesis.beacon.public_key;
const h = block.header;

test('a real beacon verifies under the genesis key, and only for its chain, height and bytes', () => {
  assert.equal(genesis.beacon.scheme, 'bls12381-minsig');
  assert.equal(verifyBeacon(key, genesis.chain_id, h.height, h.beacon), true);
  assert.equal(verifyBeacon(key, genesis.chain_id, h.height + 1, h.beacon), false);
  assert.equal(verifyBeacon(key, genesis.chain_id, h.height - 1, h.beacon), false);
  assert.equal(verifyBeacon(key, `${genesis.chain_id}x`, h.height, h.beacon), false);
  // Every byte counts; malformed input is false, never a throw.
  const flip = (hex, i) => hex.slice(0, i) + (hex[i] === '0' ? '1' : '0') + hex.slice(i + 1);
  assert.equal(verifyBeacon(key, genesis.chain_id, h.height, flip(h.beacon, 95)), false);
  assert.equal(verifyBeacon(flip(key, 191), genesis.chain_id, h.height, h.beacon), false);
  assert.equal(verifyBeacon(key, genesis.chain_id, h.height, h.beacon.toUpperCase()), false);
  assert.equal(verifyBeacon(key, genesis.chain_id, h.height, h.beacon.slice(2)), false);
  assert.equal(verifyBeacon(key, genesis.chain_id, h.height, `c0${'00'.repeat(47)}`), false); // the identity
  assert.equal(verifyBeacon(key, genesis.chain_id, h.height, 'zz'.repeat(48)), false);
  assert.equal(verifyBeacon('00'.repeat(96), genesis.chain_id, h.height, h.beacon), false);
  assert.equal(verifyBeacon(key, genesis.chain_id, -1, h.beacon), false);
  assert.equal(verifyBeacon(key, genesis.chain_id, '43', h.beacon), false);
  // Another key's signature of the same message (made here) is not this key's.
  const short = bls12_381.shortSignatures;
  const other = short.keygen();
  const forged = bytesToHex(short.sign(short.hash(beaconMessage(genesis.chain_id, h.height), BEACON_DST), other.secretKey).toBytes());
  assert.equal(verifyBeacon(key, genesis.chain_id, h.height, forged), false);
  assert.equal(verifyBeacon(bytesToHex(other.publicKey.toBytes()), genesis.chain_id, h.height, forged), true);
});

test('verifyBeacons: many beacons of one key at once, the wrong ones named', () => {
  const short = bls12_381.shortSignatures;
  const sk = short.keygen(new Uint8Array(48).fill(9)).secretKey;
  const pk = bytesToHex(short.getPublicKey(sk).toBytes());
  const sign = (height) => bytesToHex(short.sign(short.hash(beaconMessage('gc', height), BEACON_DST), sk).toBytes());
  const items = Array.from({ length: 12 }, (_, i) => ({ height: i + 1, beacon: sign(i + 1) }));
  assert.deepEqual(verifyBeacons(pk, 'gc', items), Array(12).fill(true));
  // Two swapped, one malformed, one of another height: exactly those are false.
  const bad = structuredClone(items);
  [bad[2].beacon, bad[3].beacon] = [bad[3].beacon, bad[2].beacon];
  bad[5].beacon = 'zz';
  bad[7].height = 99;
  assert.deepEqual(verifyBeacons(pk, 'gc', bad), items.map((_, i) => ![2, 3, 5, 7].includes(i)));
  // Two wrong ones that cancel in a plain sum do not cancel under random weights.
  const s1 = bls12_381.G1.Point.fromBytes(Buffer.from(items[0].beacon, 'hex'));
  const s2 = bls12_381.G1.Point.fromBytes(Buffer.from(items[1].beacon, 'hex'));
  const d = bls12_381.G1.Point.BASE;
  const shifted = [{ height: 1, beacon: bytesToHex(s1.add(d).toBytes()) }, { height: 2, beacon: bytesToHex(s2.subtract(d).toBytes()) }];
  assert.deepEqual(verifyBeacons(pk, 'gc', shifted), [false, false]);
  assert.deepEqual(verifyBeacons('00'.repeat(96), 'gc', items.slice(0, 2)), [false, false]);
  assert.deepEqual(verifyBeacons(key, genesis.chain_id, [{ height: h.height, beacon: h.beacon }]), [true]);
  assert.deepEqual(verifyBeacons(pk, 'gc', []), []);
  const t0 = performance.now();
  verifyBeacons(pk, 'gc', items);
  console.log(`verifyBeacons: 12 beacons in ${(performance.now() - t0).toFixed(0)} ms`);
});

test('the message layout is runtime/chain/src/keys/beacon.rs\'s', () => {
  // `message_layout` there: beacon_message("gc-1", 258) = 4 ‖ "gc-1" ‖ u64 BE 258, signed under
  // union_unique(namespace, message) = 19 ‖ "gamechain.beacon.v1" ‖ message.
  const m = beaconMessage('gc-1', 258);
  assert.deepEqual([...m], [19, ...new TextEncoder().encode('gamechain.beacon.v1'), 4, ...new TextEncoder().encode('gc-1'), 0, 0, 0, 0, 0, 0, 1, 2]);
});

test('a format-2 header hashes to the block hash and its signature is the sequencer\'s', () => {
  assert.equal(headerHash(h), block.hash);
  assert.equal(verifyMessage(genesis.sequencer, block.hash, block.signature), true);
  const bytes = headerBytes(h);
  assert.deepEqual([...bytes.slice(0, 9)], [255, 255, 255, 255, 255, 255, 255, 255, 2]);
  assert.equal(bytesToHex(bytes.slice(-48)), h.beacon);
  // Without the beacon: format 1, exactly the fields between the marker and the beacon.
  const { beacon, ...plain } = h;
  assert.deepEqual(headerBytes(plain), bytes.slice(9, -48));
  assert.equal(headerHash({ ...plain, beacon: null }), headerHash(plain));
  assert.notEqual(headerHash(plain), block.hash);
  assert.throws(() => headerHash({ ...h, beacon: h.beacon.slice(2) }), /beacon/);
  // The beacon is under the signature: another beacon is another hash.
  assert.notEqual(headerHash({ ...h, beacon: `${h.beacon.slice(0, 94)}00` }), block.hash);
});

test('receipt_root: the scheduled call first (bound to its module and id), then the transactions, then end-block', () => {
  assert.equal(block.scheduled.length, 1);
  assert.ok(block.txs.length >= 1);
  assert.equal(blockReceiptRoot(block), h.receipt_root);
  const s = block.scheduled[0];
  // The call's leaf binds the call: the same receipt as another call, or as a transaction, is another leaf.
  assert.notDeepEqual(scheduledReceiptHash(s.module, s.id, s.receipt), scheduledReceiptHash(s.module, s.id + 1, s.receipt));
  assert.notDeepEqual(scheduledReceiptHash(s.module, s.id, s.receipt), receiptHash(s.receipt));
  // In another order the root differs.
  const leaves = [...block.txs.map((t) => receiptHash(t.receipt)), scheduledReceiptHash(s.module, s.id, s.receipt), ...block.end_block.map((e) => receiptHash(e.receipt))];
  assert.notEqual(bytesToHex(merkleRoot(leaves)), h.receipt_root);
});

test('the dice the module drew are the draws of the beacon (draw_below(6) over the call\'s draws)', () => {
  const s = block.scheduled[0];
  const rolled = s.receipt.events.find((e) => e.kind === 'dice.rolled').data;
  const d = drawer(h.beacon, s.module, s.id);
  const dice = [1 + d.below(6), 1 + d.below(6), 1 + d.below(6), 1 + d.below(6)];
  assert.deepEqual(dice, [...rolled.x_dice, ...rolled.o_dice]);
  assert.equal(d.count, 4);
  // drawBytes is the n-th draw; another module, id or beacon draws other bytes.
  assert.equal(drawBytes(h.beacon, 'dice', s.id, 0).length, 32);
  assert.notDeepEqual(drawBytes(h.beacon, 'dice', s.id, 0), drawBytes(h.beacon, 'dice', s.id, 1));
  assert.notDeepEqual(drawBytes(h.beacon, 'dice', s.id, 0), drawBytes(h.beacon, 'dicf', s.id, 0));
  assert.notDeepEqual(drawBytes(h.beacon, 'dice', s.id, 0), drawBytes(h.beacon, 'dice', s.id + 1, 0));
  // below() rejects the words above the largest multiple of k: k = 2^64 - 1 accepts anything
  // under it, k = 1 is always 0.
  assert.equal(drawer(h.beacon, 'dice', s.id).below(1), 0);
  assert.throws(() => drawer(h.beacon, 'dice', s.id).below(0), /k >= 1/);
});

test('BLS verification time in this process', () => {
  const n = 10;
  verifyBeacon(key, genesis.chain_id, h.height, h.beacon);
  const t0 = performance.now();
  for (let i = 0; i < n; i++) assert.equal(verifyBeacon(key, genesis.chain_id, h.height, h.beacon), true);
  const ms = (performance.now() - t0) / n;
  console.log(`verifyBeacon: ${ms.toFixed(1)} ms per beacon (Node ${process.version}, @noble/curves)`);
});
