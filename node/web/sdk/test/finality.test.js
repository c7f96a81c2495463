// finality.test.js: a transcript step's finality record checked from the genesis validator set
// alone (src/verify/finality.js), against vectors the Rust checker made and checks
// (node/src/proof/step_finality.rs `finality_vectors_for_the_sdk`: four validators, a block
// finalized by its own certificate and one through its child's, a flipped certificate byte, a
// certificate of another digest, another header); against a real 4-validator testnet's records
// (fixtures/finality_testnet.json: a dice duel's steps from node/tests/validators/validators.rs);
// and verifyTranscript refusing a chain with validators whose step has no record, or a forged
// one, before anything runs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { checkStepFinality, decodeFinalization, finalityNamespace, finalityParticipants, headerHash, verifyTranscript } from '../src/index.js';

const vectors = JSON.parse(readFileSync(new URL('./fixtures/finality_vectors.json', import.meta.url), 'utf8'));
const set = { participants: finalityParticipants(vectors.consensus_keys), namespace: finalityNamespace(vectors.chain_id, vectors.genesis_hash) };

test('finality records: the Rust checker\'s verdicts, case by case', () => {
  assert.equal(vectors.cases.length, 6);
  for (const c of vectors.cases) {
    assert.equal(headerHash(c.header.header), c.header_hash, c.name);
    const step = { header: c.header, finality: c.finality, tx_count: c.finality.tx_count };
    const r = checkStepFinality(set, step, c.header_hash);
    if (c.ok) assert.deepEqual(r, { certified: c.certified }, c.name);
    else assert.ok(typeof r.problem === 'string' && r.problem.startsWith(`block ${c.header.header.height + (c.finality.links ?? []).length}'s certificate`), `${c.name}: ${JSON.stringify(r)}`);
  }
});

test('a real testnet\'s steps are final by its genesis set, and only by it', () => {
  const net = JSON.parse(readFileSync(new URL('./fixtures/finality_testnet.json', import.meta.url), 'utf8'));
  const real = { participants: finalityParticipants(net.validators.set.map((v) => v.consensus_key)), namespace: finalityNamespace(net.chain_id, net.genesis_hash) };
  assert.equal(net.steps.length, 3);
  for (const s of net.steps) {
    assert.deepEqual(checkStepFinality(real, s, headerHash(s.header.header)), { certified: s.height + (s.finality.links ?? []).length });
    // Under another chain's namespace, or with a key of the set replaced: not a quorum.
    const elsewhere = { ...real, namespace: finalityNamespace(net.chain_id, '00'.repeat(32)) };
    assert.match(checkStepFinality(elsewhere, s, headerHash(s.header.header)).problem, /not a quorum/);
    const keys = net.validators.set.map((v) => v.consensus_key);
    const [signer] = decodeFinalization(hexToBytes(s.finality.certificate), 4).signers;
    const sorted = [...keys].sort();
    const swapped = { ...real, participants: finalityParticipants(sorted.map((k, i) => (i === signer ? vectors.consensus_keys[0] : k))) };
    assert.ok(checkStepFinality(swapped, s, headerHash(s.header.header)).problem);
  }
  // One step's record under another step's header.
  const [a, b] = net.steps;
  assert.match(checkStepFinality(real, { ...b, finality: { ...a.finality, tx_count: b.finality.tx_count } }, headerHash(b.header.header)).problem, /finalizes digest/);
});

test('a certificate decodes as Commonware encodes it, and every byte counts', () => {
  const own = vectors.cases[0];
  const cert = hexToBytes(own.finality.certificate);
  const f = decodeFinalization(cert, 4);
  assert.deepEqual([f.view, f.signers, f.signatures.length], [5, [0, 1, 2], 3]);
  const step = { header: own.header, finality: own.finality, tx_count: own.finality.tx_count };
  // Each byte of the certificate flipped in turn: never a finalization of this block.
  for (let i = 0; i < cert.length; i++) {
    const bad = Uint8Array.from(cert);
    bad[i] ^= 1;
    const r = checkStepFinality(set, { ...step, finality: { ...own.finality, certificate: bytesToHex(bad) } }, own.header_hash);
    assert.ok(r.problem, `byte ${i} flipped still verifies`);
  }
  // Truncated, extended, a changed count, another set or chain.
  for (const certificate of [own.finality.certificate.slice(0, -2), own.finality.certificate + '00']) {
    assert.ok(checkStepFinality(set, { ...step, finality: { ...own.finality, certificate } }, own.header_hash).problem);
  }
  assert.match(checkStepFinality(set, { ...step, tx_count: 3 }, own.header_hash).problem, /tx_count is 3/);
  const other = { participants: set.participants, namespace: finalityNamespace('another-chain', vectors.genesis_hash) };
  assert.match(checkStepFinality(other, step, own.header_hash).problem, /not a quorum/);
  const three = { participants: finalityParticipants(vectors.consensus_keys.slice(0, 3)), namespace: set.namespace };
  assert.ok(checkStepFinality(three, step, own.header_hash).problem);
  assert.throws(() => finalityParticipants([vectors.consensus_keys[0], vectors.consensus_keys[0]]), /twice/);
});

test('verifyTranscript with the genesis set: a step without a record, or a forged one, is refused', async () => {
  const own = vectors.cases[0];
  const validators = { set: vectors.consensus_keys.map((k) => ({ address: own.header.header.sequencer, consensus_key: k })) };
  const wasm = new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0]);
  const { sha256 } = await import('@noble/hashes/sha2.js');
  const transcript = (finality) => ({
    version: 1, module: 'm', game: 'g', chain_id: vectors.chain_id, genesis_hash: vectors.genesis_hash,
    sequencer: own.header.header.sequencer, code_hash: bytesToHex(sha256(wasm)), finished: false, scanned_to: 3, start_balances: {},
    steps: [{ height: 3, index: 0, call: { module: 'm', id: 1 }, receipt: { ok: true, error: null, events: [], fuel_used: 0 }, header: own.header, receipt_count: 1, tx_proof: [], receipt_proof: [], ...(finality ? { finality } : {}) }],
  });
  const opts = { validators, chainId: vectors.chain_id, genesisHash: vectors.genesis_hash, beaconKey: null, module: 'm', game: 'g', worker: 'never' };
  let r = await verifyTranscript(transcript(null), wasm, opts);
  assert.equal(r.divergence?.field, 'finality', JSON.stringify(r.divergence));
  assert.equal(r.divergence.got, 'step 0 (block 3) carries no finality record');
  const forged = { ...own.finality, certificate: vectors.cases[2].finality.certificate };
  r = await verifyTranscript(transcript(forged), wasm, opts);
  assert.equal(r.divergence?.field, 'finality.certificate', JSON.stringify(r.divergence));
  assert.match(r.divergence.got, /^step 0 \(block 3\): block 3's certificate: /);
  // Another chain with the same keys and chain id (a relaunch, its own genesis): refused on the
  // genesis hash, which the caller must pin beside the set.
  const relaunch = { ...transcript(own.finality), genesis_hash: '11'.repeat(32) };
  r = await verifyTranscript(relaunch, wasm, opts);
  assert.equal(r.divergence?.field, 'genesis_hash', JSON.stringify(r.divergence));
  assert.equal(r.divergence.index, null);
  r = await verifyTranscript(relaunch, wasm, { ...opts, genesisHash: undefined });
  assert.equal(r.divergence?.field, 'genesis_hash', JSON.stringify(r.divergence));
  assert.match(r.divergence.expected, /pinned beside the validator set/);
  // Block signers named without the set: refused, the set must be pinned.
  r = await verifyTranscript(transcript(own.finality), wasm, { ...opts, validators: undefined, signers: [own.header.header.sequencer] });
  assert.equal(r.divergence?.field, 'finality');
  assert.equal(r.divergence.index, null);
});
