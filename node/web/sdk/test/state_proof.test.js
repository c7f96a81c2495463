// state_proof.test.js: state proofs checked as the Rust side makes them (the vectors are
// runtime/chain/src/state_root/proof.rs `javascript_vectors`), and every lie refused with the
// Rust side's fixed texts; a state entry's header signer checked against the genesis, and with the
// genesis validator set its finality (a record of another block, or none, refused).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { base64 } from '@scure/base';
import { stateProofProblem, verifyStateEntry, Key, headerHash } from '../src/index.js';

const V = JSON.parse(readFileSync(new URL('./fixtures/state_proof_vectors.json', import.meta.url), 'utf8'));
const value = (c) => (c.value === null ? null : base64.decode(c.value));
const flip = (hex) => (hex[0] === '0' ? '1' : '0') + hex.slice(1);

test('every Rust proof checks, present and absent', () => {
  assert.ok(V.cases.length >= 6);
  assert.ok(V.cases.some((c) => c.value === null && c.proof.leaf !== null), 'an absence ending at another leaf');
  assert.ok(V.cases.some((c) => c.value === null && c.proof.leaf === null), 'an absence ending at an empty subtree');
  for (const c of V.cases) assert.equal(stateProofProblem(V.root, c.key, value(c), c.proof), null, c.key);
  assert.equal(stateProofProblem(V.one.root, V.one.key, value(V.one), V.one.proof), null);
  assert.equal(stateProofProblem(V.empty_root, 'anything', null, { siblings: [], leaf: null }), null);
});

test('lies are refused with fixed texts', () => {
  const present = V.cases.find((c) => c.value !== null);
  const absent = V.cases.find((c) => c.value === null);
  assert.equal(stateProofProblem(V.root, present.key, new TextEncoder().encode('999999'), present.proof), 'the proof shows the key with another value');
  assert.equal(stateProofProblem(V.root, present.key, null, present.proof), 'the proof shows the key present');
  assert.equal(stateProofProblem(V.root, absent.key, new Uint8Array([1]), absent.proof), 'the proof shows the key absent');
  const changed = { ...present.proof, siblings: [flip(present.proof.siblings[0]), ...present.proof.siblings.slice(1)] };
  assert.equal(stateProofProblem(V.root, present.key, value(present), changed), 'the proof does not lead to the state root');
  const cut = { ...present.proof, siblings: present.proof.siblings.slice(1) };
  assert.notEqual(stateProofProblem(V.root, present.key, value(present), cut), null);
  assert.equal(stateProofProblem(flip(V.root), present.key, value(present), present.proof), 'the proof does not lead to the state root');
  // Another key's leaf offered as an absence off its path.
  const other = V.cases.find((c) => c.value !== null && c.key !== present.key);
  assert.notEqual(stateProofProblem(V.root, other.key + 'x', null, present.proof), null);
  const deep = { siblings: Array(257).fill('00'.repeat(32)), leaf: null };
  assert.equal(stateProofProblem(V.root, 'k', null, deep), 'the proof has more than 256 siblings');
  assert.match(stateProofProblem(V.root, 'k', null, { siblings: ['AB'], leaf: null }), /not 64 lowercase hex/);
});

test('a state entry is checked against the genesis signers', () => {
  const sequencer = Key.fromSecret(new Uint8Array(32).fill(7), 'testnet');
  const c = V.cases[0];
  const header = {
    height: 9, prev_hash: '00'.repeat(32), time_ms: 1790000000000, sequencer: sequencer.address,
    checkpoint: { height: 0, hash: '' }, tx_root: '11'.repeat(32), receipt_root: '22'.repeat(32), state_root: V.root,
  };
  const signature = sequencer.signMessage(headerHash(header));
  const entry = { key: c.key, value: c.value, header, signature, commitment: 'sparse_merkle', proof: c.proof };
  const got = verifyStateEntry(entry, c.key, { signers: [sequencer.address] });
  assert.deepEqual(got.value, value(c));
  assert.equal(got.height, 9);
  const stranger = Key.fromSecret(new Uint8Array(32).fill(8), 'testnet');
  assert.throws(() => verifyStateEntry(entry, c.key, { signers: [stranger.address] }), /not by/);
  assert.throws(() => verifyStateEntry({ ...entry, header: { ...header, time_ms: 1 } }, c.key, { signers: [sequencer.address] }), /signature does not verify/);
  assert.throws(() => verifyStateEntry({ ...entry, value: base64.encode(new Uint8Array([9])) }, c.key, { signers: [sequencer.address] }), /another value/);
  assert.throws(() => verifyStateEntry(entry, 'bal/other/GOLD', { signers: [sequencer.address] }), /not `bal\/other\/GOLD`/);
  assert.throws(() => verifyStateEntry({ ...entry, proof: null }, c.key, { signers: [sequencer.address] }), /no proof/);
  assert.throws(() => verifyStateEntry({ ...entry, commitment: 'lthash16' }, c.key, { signers: [sequencer.address] }), /no proofs/);
  // With the genesis validator set, the block must be final by its quorum: a record of another
  // block (a real certificate from finality_vectors.json) or none at all is refused.
  const F = JSON.parse(readFileSync(new URL('./fixtures/finality_vectors.json', import.meta.url), 'utf8'));
  const validators = { set: F.consensus_keys.map((k) => ({ address: sequencer.address, consensus_key: k })) };
  const finality = { validators, chainId: F.chain_id, genesisHash: F.genesis_hash };
  assert.throws(() => verifyStateEntry({ ...entry, finality: F.cases[0].finality }, c.key, { finality }), /is not proven final: .*certificate/);
  assert.throws(() => verifyStateEntry(entry, c.key, { finality }), /carries no finality record/);
  assert.throws(() => verifyStateEntry(entry, c.key, { finality: { ...finality, validators: { set: [] } } }), /opts.finality.validators/);
});
