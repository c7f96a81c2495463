// seal.test.js: sealed moves (src/verify/seal.js) against the Rust code's own envelopes
// (test/fixtures/seal_vectors.json, written by runtime/chain/src/keys/seal.rs's ignored test
// `write_vectors`: a beacon key from a fixed seed, three contexts, fixed entropy, each case with
// the beacon of its round and of the next round; the JSON gives each tag as hex: it is passed as
// bytes). Sealing with the same entropy gives the Rust bytes exactly (the pairing's 576 bytes in
// blst's order included, and the proof's challenge over the beacon key's 96 bytes first); the
// checks and the opening answer as `seal::check` and `seal::open` do; an envelope sealed under
// another beacon key is unbound under the chain's, and a missing or invalid key is malformed;
// hostile envelopes are refused, never a throw. A string tag is UTF-8 text, a Uint8Array raw
// bytes. No node is started. Prints the time of a seal, a check and an open.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { bls12_381 } from '@noble/curves/bls12-381.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import {
  sealMove, checkSealed, openSealed, plaintextOf, beaconMessage, verifyBeacon, BEACON_DST,
  SEALED_BYTES, SEAL_PLAINTEXT_BYTES, MAX_SEAL_TAG_BYTES,
} from '../src/index.js';

const vectors = JSON.parse(fs.readFileSync(new URL('./fixtures/seal_vectors.json', import.meta.url), 'utf8'));
const { chain_id: chainId, beacon_public_key: key, cases } = vectors;
/** A vector's context, checked under the vectors' beacon key. */
const ctxOf = (c) => ({ module: c.module, sender: c.sender, tag: hexToBytes(c.tag), round: c.round, beaconPublicKey: key });
const withByte = (bytes, b) => Uint8Array.from([...bytes, b]);
const flipByte = (hex, i, mask = 1) => hex.slice(0, 2 * i) + (parseInt(hex.slice(2 * i, 2 * i + 2), 16) ^ mask).toString(16).padStart(2, '0') + hex.slice(2 * i + 2);
const ORDER = bls12_381.fields.Fr.ORDER;

test('the constants are seal.rs\'s', () => {
  assert.equal(SEALED_BYTES, 224);
  assert.equal(SEAL_PLAINTEXT_BYTES, 32);
  assert.equal(MAX_SEAL_TAG_BYTES, 64);
});

test('every Rust vector: the same entropy seals to the same bytes; it checks, opens with its round\'s beacon and only with it', () => {
  assert.equal(cases.length, 3);
  for (const c of cases) {
    // The vectors' beacons are the key's (so openSealed is given what a header carries).
    assert.equal(verifyBeacon(key, chainId, c.round, c.beacon), true);
    const sealed = sealMove({ beaconPublicKey: key, chainId, ...ctxOf(c), plaintext: c.plaintext, entropy: hexToBytes(c.entropy) });
    assert.equal(sealed, c.sealed, `${c.module}: sealed bytes`);
    assert.equal(sealed.length, 2 * SEALED_BYTES);
    // Bytes in place of hex give the same envelope.
    assert.equal(sealMove({ beaconPublicKey: key, chainId, ...ctxOf(c), plaintext: hexToBytes(c.plaintext), entropy: hexToBytes(c.entropy) }), c.sealed);
    assert.equal(checkSealed(c.sealed, ctxOf(c)), 'ok', c.module);
    assert.equal(checkSealed(hexToBytes(c.sealed), ctxOf(c)), 'ok');
    const opened = openSealed(c.sealed, c.beacon);
    assert.ok(opened instanceof Uint8Array);
    assert.equal(bytesToHex(opened), c.plaintext);
    assert.equal(openSealed(hexToBytes(c.sealed), hexToBytes(c.beacon)) && bytesToHex(openSealed(hexToBytes(c.sealed), hexToBytes(c.beacon))), c.plaintext);
    assert.equal(openSealed(c.sealed, c.wrong_beacon), null, `${c.module}: the next round's beacon`);
  }
});

test('a copy into another module, sender, tag or round is unbound', () => {
  for (const c of cases) {
    const ctx = ctxOf(c);
    const others = [
      { ...ctx, module: `${c.module}2` },
      { ...ctx, module: 'auction' === c.module ? 'rps' : 'auction' },
      { ...ctx, sender: 'DMallory' },
      { ...ctx, sender: c.sender.slice(0, -1) },
      { ...ctx, tag: c.tag.length < 2 * MAX_SEAL_TAG_BYTES ? withByte(ctx.tag, 0) : hexToBytes(flipByte(c.tag, MAX_SEAL_TAG_BYTES - 1)) },
      { ...ctx, tag: c.tag === '' ? Uint8Array.of(1) : ctx.tag.slice(1) },
      // The tag's hex text as a string is another tag (a string is read as UTF-8).
      ...(c.tag === '' || c.tag.length > MAX_SEAL_TAG_BYTES ? [] : [{ ...ctx, tag: c.tag }]),
      { ...ctx, round: c.round + 1 },
      { ...ctx, round: c.round - 1 },
      { ...ctx, round: BigInt(c.round) + (1n << 32n) },
      // Bytes moved between fields of the context are another context (lengths are encoded).
      { ...ctx, module: c.module + c.sender.slice(0, 1), sender: c.sender.slice(1) },
    ];
    for (const o of others) assert.equal(checkSealed(c.sealed, o), 'unbound', `${c.module} as ${JSON.stringify(o, (_, v) => typeof v === 'bigint' ? String(v) : v)}`);
    // The round as a bigint is the same round.
    assert.equal(checkSealed(c.sealed, { ...ctx, round: BigInt(c.round) }), 'ok');
  }
});

test('the proof binds the beacon key: an envelope sealed under another key is unbound under the vectors\' key', () => {
  // A key derived here (a lying node's genesis would name one like it).
  const short = bls12_381.shortSignatures;
  const other = bytesToHex(short.getPublicKey(short.keygen(new Uint8Array(48).fill(5)).secretKey).toBytes());
  assert.notEqual(other, key);
  for (const c of cases) {
    const ctx = ctxOf(c);
    // The same entropy, plaintext and context under the other key: other bytes, bound to that key only.
    const faked = sealMove({ chainId, ...ctx, beaconPublicKey: other, plaintext: c.plaintext, entropy: hexToBytes(c.entropy) });
    assert.notEqual(faked, c.sealed);
    assert.equal(checkSealed(faked, ctx), 'unbound', `${c.module}: sealed under another key`);
    assert.equal(checkSealed(faked, { ...ctx, beaconPublicKey: other }), 'ok');
    assert.equal(checkSealed(hexToBytes(faked), { ...ctx, beaconPublicKey: hexToBytes(other) }), 'ok');
    // And the vectors' envelope is not bound to the other key.
    assert.equal(checkSealed(c.sealed, { ...ctx, beaconPublicKey: other }), 'unbound');
    // It does not open under the chain's beacon either (encrypted to the other key).
    assert.equal(openSealed(faked, c.beacon), null);
  }
  // The key as 96 bytes or as hex in either case is the same key.
  const c = cases[0];
  assert.equal(checkSealed(c.sealed, { ...ctxOf(c), beaconPublicKey: hexToBytes(key) }), 'ok');
  assert.equal(checkSealed(c.sealed, { ...ctxOf(c), beaconPublicKey: key.toUpperCase() }), 'ok');
});

test('a missing or invalid beacon key is malformed', () => {
  const c = cases[0];
  const ctx = ctxOf(c);
  const { beaconPublicKey, ...noKey } = ctx;
  assert.equal(beaconPublicKey, key);
  assert.equal(checkSealed(c.sealed, noKey), 'malformed');
  const flipped = flipByte(key, 95);
  const bad = [
    undefined, null, '', key.slice(2), `${key}00`, 'zz'.repeat(96), '00'.repeat(96), 'ff'.repeat(96),
    `c0${'00'.repeat(95)}`, // the identity
    flipped, // almost surely not a point (else another key: unbound)
    hexToBytes(key).slice(1), new Uint8Array(96), 42, {}, [1, 2],
  ];
  for (const [i, k] of bad.entries()) {
    const answer = checkSealed(c.sealed, { ...ctx, beaconPublicKey: k });
    if (k === flipped) assert.ok(answer === 'malformed' || answer === 'unbound', answer);
    else assert.equal(answer, 'malformed', `key ${i}`);
  }
  // A beacon (a G1 point, 48 bytes) is not a key.
  assert.equal(checkSealed(c.sealed, { ...ctx, beaconPublicKey: c.beacon }), 'malformed');
});

test('every flipped byte is refused (malformed or unbound); an altered U, V or W no longer opens', () => {
  const c = cases[0];
  const ctx = ctxOf(c);
  const seen = { malformed: 0, unbound: 0 };
  for (let i = 0; i < SEALED_BYTES; i++) {
    for (const mask of [0x01, 0x80]) {
      const bad = flipByte(c.sealed, i, mask);
      const answer = checkSealed(bad, ctx);
      assert.ok(answer === 'malformed' || answer === 'unbound', `byte ${i} ^ ${mask}: ${answer}`);
      seen[answer]++;
    }
  }
  assert.ok(seen.malformed > 0 && seen.unbound > 0, JSON.stringify(seen));
  // Opening needs U, V and W only (as seal::open): a change there does not open, a change of the
  // proof does not matter to it (checkSealed refuses such an envelope before it is stored).
  for (const i of [0, 1, 47, 48, 95, 96, 110, 127, 128, 140, 159]) {
    assert.equal(openSealed(flipByte(c.sealed, i), c.beacon), null, `byte ${i}`);
  }
  for (const i of [160, 191, 192, 223]) assert.equal(bytesToHex(openSealed(flipByte(c.sealed, i), c.beacon)), c.plaintext);
});

test('malformed envelopes, contexts and beacons: refused, never a throw', () => {
  const c = cases[1];
  const ctx = ctxOf(c);
  const g2 = bls12_381.G2.Point;
  // A G2 x on the curve but outside the prime-order subgroup, compressed by hand (c1 ‖ c0).
  const { Fp2 } = bls12_381.fields;
  let x = Fp2.create({ c0: 5n, c1: 1n });
  while (!Fp2.sqrt(Fp2.add(Fp2.pow(x, 3n), Fp2.create({ c0: 4n, c1: 4n })))) x = Fp2.add(x, Fp2.ONE);
  const offSubgroup = hexToBytes(x.c1.toString(16).padStart(96, '0') + x.c0.toString(16).padStart(96, '0'));
  offSubgroup[0] |= 0x80;
  assert.throws(() => { const p = g2.fromBytes(offSubgroup); p.assertValidity(); });
  // U's c0 plus the field modulus: the same point, a non-canonical encoding (blst refuses it).
  const c0 = BigInt(`0x${c.sealed.slice(96, 192)}`) + bls12_381.fields.Fp.ORDER;
  const nonCanonical = c.sealed.slice(0, 96) + c0.toString(16).padStart(96, '0') + c.sealed.slice(192);
  const identity = `c0${'00'.repeat(95)}`;
  const malformed = [
    '', '00', 'zz'.repeat(SEALED_BYTES), c.sealed.slice(2), `${c.sealed}00`, c.sealed.slice(0, -1),
    '00'.repeat(SEALED_BYTES), 'ff'.repeat(SEALED_BYTES), new Uint8Array(SEALED_BYTES), new Uint8Array(10),
    identity + c.sealed.slice(192),
    bytesToHex(offSubgroup) + c.sealed.slice(192),
    nonCanonical,
    null, undefined, 42, {}, [1, 2, 3],
  ];
  for (const [i, bad] of malformed.entries()) {
    assert.equal(checkSealed(bad, ctx), 'malformed', `case ${i}`);
    assert.equal(openSealed(bad, c.beacon), null, `case ${i}`);
  }
  // Scalars not below the order: malformed to the check; opening reads U, V and W only (as
  // seal::open), so these still open: a module checks an envelope before it stores it.
  const badScalars = [
    c.sealed.slice(0, 320) + ORDER.toString(16).padStart(64, '0') + c.sealed.slice(384), // c = the order
    c.sealed.slice(0, 384) + 'ff'.repeat(32), // s above the order
    c.sealed.slice(0, 384) + ORDER.toString(16).padStart(64, '0'),
  ];
  for (const [i, bad] of badScalars.entries()) {
    assert.equal(checkSealed(bad, ctx), 'malformed', `scalars ${i}`);
    assert.equal(bytesToHex(openSealed(bad, c.beacon)), c.plaintext);
  }
  // Scalars below the order but wrong (zero included: T = the identity) are unbound.
  for (const [cc, ss] of [[0n, 0n], [0n, 1n], [ORDER - 1n, ORDER - 1n], [1n, 0n]]) {
    const bad = c.sealed.slice(0, 320) + cc.toString(16).padStart(64, '0') + ss.toString(16).padStart(64, '0');
    assert.equal(checkSealed(bad, ctx), 'unbound', `c ${cc} s ${ss}`);
  }
  // The context: a tag over 64 bytes (as text: UTF-8 bytes are counted), or one that is neither a
  // string nor bytes; a round that is not a u64.
  assert.equal(checkSealed(c.sealed, { ...ctx, tag: 'a'.repeat(MAX_SEAL_TAG_BYTES + 1) }), 'malformed');
  assert.equal(checkSealed(c.sealed, { ...ctx, tag: 'é'.repeat(MAX_SEAL_TAG_BYTES / 2 + 1) }), 'malformed');
  assert.equal(checkSealed(c.sealed, { ...ctx, tag: new Uint8Array(MAX_SEAL_TAG_BYTES + 1) }), 'malformed');
  assert.equal(checkSealed(c.sealed, { ...ctx, tag: 7 }), 'malformed');
  assert.equal(checkSealed(c.sealed, { ...ctx, tag: [1, 2] }), 'malformed');
  for (const round of [-1, 1.5, '10', NaN, 2 ** 53, -1n, 1n << 64n, undefined]) {
    assert.equal(checkSealed(c.sealed, { ...ctx, round }), 'malformed', String(round));
  }
  assert.equal(checkSealed(c.sealed, { ...ctx, module: undefined }), 'malformed');
  assert.equal(checkSealed(c.sealed), 'malformed');
  // Beacons: another length, not hex, the identity, off the curve, a G2 point's bytes.
  for (const beacon of ['', c.beacon.slice(2), `${c.beacon}00`, 'zz'.repeat(48), `c0${'00'.repeat(47)}`, 'ff'.repeat(48), key, null, 5, new Uint8Array(48)]) {
    assert.equal(openSealed(c.sealed, beacon), null, String(beacon));
  }
});

test('sealMove refuses what it cannot seal; plaintextOf pads', () => {
  const c = cases[0];
  const base = { beaconPublicKey: key, chainId, ...ctxOf(c), plaintext: c.plaintext };
  assert.throws(() => sealMove({ ...base, beaconPublicKey: '00'.repeat(96) }), /beaconPublicKey/);
  assert.throws(() => sealMove({ ...base, beaconPublicKey: key.slice(2) }), /beaconPublicKey/);
  assert.throws(() => sealMove({ ...base, beaconPublicKey: `c0${'00'.repeat(95)}` }), /beaconPublicKey/);
  assert.throws(() => sealMove({ ...base, plaintext: '00'.repeat(31) }), /plaintext/);
  assert.throws(() => sealMove({ ...base, plaintext: new Uint8Array(33) }), /plaintext/);
  assert.throws(() => sealMove({ ...base, tag: 'x'.repeat(65) }), /tag/);
  assert.throws(() => sealMove({ ...base, tag: new Uint8Array(65) }), /tag/);
  assert.throws(() => sealMove({ ...base, tag: 7 }), /tag/);
  assert.throws(() => sealMove({ ...base, round: -1 }), /round/);
  assert.throws(() => sealMove({ ...base, chainId: 5 }), /strings/);
  assert.throws(() => sealMove({ ...base, entropy: new Uint8Array(32) }), /entropy/);
  assert.throws(() => sealMove(), /beaconPublicKey/);
  assert.deepEqual([...plaintextOf('0102')], [1, 2, ...Array(30).fill(0)]);
  assert.deepEqual([...plaintextOf(new Uint8Array(32).fill(7))], Array(32).fill(7));
  assert.deepEqual([...plaintextOf(new Uint8Array(0))], Array(32).fill(0));
  assert.throws(() => plaintextOf(new Uint8Array(33)), /at most 32/);
  assert.throws(() => plaintextOf('xyz'), /hex/);
  // A missing tag is the empty tag (the auction vector's).
  const auction = cases[1];
  assert.equal(auction.tag, '');
  const { tag, ...noTag } = ctxOf(auction);
  assert.equal(checkSealed(auction.sealed, noTag), 'ok');
  assert.equal(sealMove({ beaconPublicKey: key, chainId, ...noTag, plaintext: auction.plaintext, entropy: hexToBytes(auction.entropy) }), auction.sealed);
});

test('a string tag is its UTF-8 text: the rps vector\'s tag as text checks, seals to its bytes; a Uint8Array is raw bytes', () => {
  const c = cases[0];
  assert.equal(new TextDecoder().decode(hexToBytes(c.tag)), 'g1/0');
  const text = { ...ctxOf(c), tag: 'g1/0' };
  assert.equal(checkSealed(c.sealed, text), 'ok');
  assert.equal(sealMove({ beaconPublicKey: key, chainId, ...text, plaintext: c.plaintext, entropy: hexToBytes(c.entropy) }), c.sealed);
  // Hex of a tag as a string is not the tag: '67312f30' is 8 bytes of text.
  assert.equal(checkSealed(c.sealed, { ...text, tag: c.tag }), 'unbound');
  // Text beyond ASCII: its UTF-8 bytes; 64 bytes of it are allowed, 66 are not.
  const ctx = { module: 'auction', sender: 'DDave', round: 77, beaconPublicKey: key };
  for (const tag of ['été/x', 'é'.repeat(MAX_SEAL_TAG_BYTES / 2), '']) {
    const env = sealMove({ beaconPublicKey: key, chainId, ...ctx, tag, plaintext: plaintextOf('01') });
    assert.equal(checkSealed(env, { ...ctx, tag }), 'ok', tag);
    assert.equal(checkSealed(env, { ...ctx, tag: new TextEncoder().encode(tag) }), 'ok', tag);
    assert.equal(checkSealed(env, { ...ctx, tag: tag.length < MAX_SEAL_TAG_BYTES / 2 ? `${tag}.` : tag.slice(1) }), 'unbound', tag);
  }
  // The empty string, undefined and null are the empty tag.
  const env = sealMove({ beaconPublicKey: key, chainId, ...ctx, plaintext: plaintextOf('01') });
  for (const tag of ['', undefined, null, new Uint8Array(0)]) assert.equal(checkSealed(env, { ...ctx, tag }), 'ok', String(tag));
});

test('random entropy: a fresh envelope each time, checked and opened; under a key made here too', () => {
  const c = cases[2];
  const ctx = ctxOf(c);
  const move = plaintextOf(new TextEncoder().encode('rock'));
  const a = sealMove({ beaconPublicKey: key, chainId, ...ctx, plaintext: move });
  const b = sealMove({ beaconPublicKey: key, chainId, ...ctx, plaintext: move });
  assert.notEqual(a, b);
  for (const env of [a, b]) {
    assert.match(env, /^[0-9a-f]{448}$/);
    assert.equal(checkSealed(env, ctx), 'ok');
    assert.deepEqual(openSealed(env, c.beacon), move);
    assert.equal(openSealed(env, c.wrong_beacon), null);
  }
  // A key made here, a round beyond 2⁵³ as a bigint, the beacons signed here.
  const short = bls12_381.shortSignatures;
  const sk = short.keygen(new Uint8Array(48).fill(3)).secretKey;
  const pk = bytesToHex(short.getPublicKey(sk).toBytes());
  const sign = (chain, round) => bytesToHex(short.sign(short.hash(beaconMessage(chain, round), BEACON_DST), sk).toBytes());
  const round = (1n << 64n) - 1n;
  const mine = { module: 'poker', sender: 'DDave', tag: new Uint8Array(MAX_SEAL_TAG_BYTES).fill(1), round, beaconPublicKey: pk };
  const env = sealMove({ beaconPublicKey: pk, chainId: 'gc', ...mine, plaintext: move });
  assert.equal(checkSealed(env, mine), 'ok');
  assert.equal(checkSealed(env, { ...mine, round: round - 1n }), 'unbound');
  assert.deepEqual(openSealed(env, sign('gc', round)), move);
  assert.equal(openSealed(env, sign('gd', round)), null);
  assert.equal(openSealed(env, sign('gc', round - 1n)), null);
  // The vectors' beacon of the same round (another key) does not open it either.
  assert.equal(openSealed(sealMove({ chainId, ...ctx, beaconPublicKey: pk, plaintext: move }), c.beacon), null);
});

test('timings: seal, check, open (median of 5)', () => {
  const c = cases[0];
  const median = (f) => {
    const ts = [];
    for (let i = 0; i < 5; i++) { const t0 = performance.now(); f(); ts.push(performance.now() - t0); }
    return ts.sort((x, y) => x - y)[2].toFixed(1);
  };
  const seal = median(() => sealMove({ beaconPublicKey: key, chainId, ...ctxOf(c), plaintext: c.plaintext }));
  const check = median(() => assert.equal(checkSealed(c.sealed, ctxOf(c)), 'ok'));
  const open = median(() => assert.ok(openSealed(c.sealed, c.beacon)));
  console.log(`sealed moves in Node ${process.version}: seal ${seal} ms, check ${check} ms, open ${open} ms`);
});
