// view_proof.test.js: views with proofs (`GET /v1/games/<module>/proof?<query>`) checked from the
// genesis alone (src/verify/view.js) against a node it starts. A tic-tac-toe game is played a few
// moves; `getViewProven` of `{id}` verifies (every read proven against the signed head's state
// root, the view re-executed on the wasm over those reads alone) and equals the plain view; every
// lie is refused naming it: a changed value, a changed read, a dropped read (the view then reads
// a key the answer does not prove), a proof of another key, unsorted reads, another code hash or
// wasm, a header by someone else or changed, another query or module, a changed not-found error,
// a block not proven final by the genesis validators (a record of another block); a scanning view is the node's `409 no_proofs`. Also the strict view replay (verify_host.js)
// alone: a read outside the given state and a scan are refused, writes trap read-only.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { base64 } from '@scure/base';
import { startNode } from '../testkit/node.js';
import { uleb } from '../testkit/wasm.js';
import { replayGame } from '../src/verify/verify_host.js';
import { Chain, ChainError, Key, headerHash, verifyView, getViewProven, viewQueryJson } from '../src/index.js';

let node;
let chain;
let sequencer;
let id;
before(async () => {
  node = await startNode({ blockIntervalMs: 200 });
  chain = new Chain(node.url);
  sequencer = (await chain.genesis()).sequencer;
  const x = Key.generate();
  const o = Key.generate();
  for (const k of [x, o]) await chain.waitForReceipt(await chain.send(k, { type: 'faucet', token: 'GOLD' }), { timeoutMs: 30000 });
  const play = async (key, op) => {
    const r = await chain.waitForReceipt(await chain.send(key, { type: 'game', game: 'tictactoe', op }), { timeoutMs: 30000 });
    assert.equal(r.ok, true, `${JSON.stringify(op)}: ${r.error}`);
    return r;
  };
  id = (await play(x, { kind: 'create', stake: '100' })).events[0].data.id;
  await play(o, { kind: 'join', id });
  for (const [i, cell] of [4, 0, 8].entries()) await play(i % 2 ? o : x, { kind: 'move', id, cell });
});
after(async () => { await node?.dispose(); });

test('a game\'s view is proven and equals the plain view', async () => {
  const proven = await getViewProven(chain, 'tictactoe', { id }, { signers: [sequencer] });
  assert.equal(proven.error, null);
  assert.deepEqual(proven.value, await chain.game('tictactoe', { id }));
  assert.ok(proven.reads >= 2, `${proven.reads} reads`);
  assert.ok(proven.height > 0);
  assert.equal(proven.blockHash.length, 64);
  // The same in this thread, and with the wasm given.
  const answer = await chain.viewProof('tictactoe', { id });
  const wasm = await chain.code(answer.code_hash);
  const here = await verifyView(answer, { module: 'tictactoe', query: { id }, wasm, signers: [sequencer], worker: 'never' });
  assert.deepEqual(here.value, answer.value);
  assert.equal(here.blockHash, headerHash(answer.header));
  const missing = await getViewProven(chain, 'tictactoe', { id: 'nope' }, { signers: [sequencer], wasm });
  assert.deepEqual([missing.value, missing.error], [null, 'not found: game nope']);
});

test('every lie is refused', async () => {
  const answer = await chain.viewProof('tictactoe', { id });
  const wasm = await chain.code(answer.code_hash);
  const opts = { module: 'tictactoe', query: { id }, wasm, signers: [sequencer] };
  const lie = (edit) => { const a = structuredClone(answer); edit(a); return a; };
  const refused = (what, a, re, o = opts) => assert.rejects(verifyView(a, o), re, what);
  const gameKey = `m/tictactoe/game/${id}`;
  const at = (a, key) => a.reads.findIndex((r) => r.key === key);
  assert.ok(at(answer, gameKey) >= 0, JSON.stringify(answer.reads.map((r) => r.key)));
  assert.ok(at(answer, 'module/tictactoe') >= 0);

  await refused('a changed value', lie((a) => { a.value = { ...a.value, turn: a.value.turn === 'x' ? 'o' : 'x' }; }), /the view answers another value/);
  await refused('an error for a value', lie((a) => { delete a.value; a.error = 'not found: game ' + id; }), /the view answers a value, the answer an error/);
  await refused('both', lie((a) => { a.error = 'x'; }), /exactly one of a value and an error/);
  await refused('a changed read', lie((a) => { const r = a.reads[at(a, gameKey)]; r.value = base64.encode(new TextEncoder().encode('{}')); }), /another value/);
  await refused('a read dropped', lie((a) => { a.reads.splice(at(a, gameKey), 1); }), new RegExp(`the answer does not prove \`${gameKey}\`, which the view reads`));
  await refused('the record dropped', lie((a) => { a.reads.splice(at(a, 'module/tictactoe'), 1); }), /does not prove the module's record/);
  await refused('a proof of another key', lie((a) => { a.reads[at(a, gameKey)].proof = structuredClone(a.reads[at(a, 'module/tictactoe')].proof); }), new RegExp(`\`${gameKey}\`: the proof`));
  await refused('unsorted reads', lie((a) => { a.reads.reverse(); }), /not sorted by key/);
  await refused('another state root', lie((a) => { a.header.state_root = '00'.repeat(32); }), /does not lead to the state root|signature/);
  await refused('another code hash', lie((a) => { a.code_hash = 'ab'.repeat(32); }), /the module's record names code/);
  const other = await chain.code((await chain.module('mnk')).code_hash);
  await refused('another wasm', answer, /the wasm given hashes to/, { ...opts, wasm: other });

  const stranger = Key.generate();
  const signed = lie((a) => { a.header.sequencer = stranger.address; a.signature = stranger.signMessage(headerHash(a.header)); });
  await refused('a header signed by someone else', signed, /is signed by .*, not by/);
  await refused('a header changed', lie((a) => { a.header.time_ms += 1; }), /the signature does not verify/);
  await refused('another query asked', answer, /another query/, { ...opts, query: { id: 'other' } });
  await refused('another query answered', lie((a) => { a.query = { id, more: '1' }; }), /another query/);
  await refused('another module', answer, /view, not `mnk`'s/, { ...opts, module: 'mnk' });
  await refused('another commitment', lie((a) => { a.commitment = 'lthash16'; }), /has no proofs/);

  const notFound = await chain.viewProof('tictactoe', { id: 'nope' });
  await verifyView(notFound, { ...opts, query: { id: 'nope' } });
  const changed = structuredClone(notFound);
  changed.error = 'not found: game other';
  await assert.rejects(verifyView(changed, { ...opts, query: { id: 'nope' } }), /the view answers the error `not found: game nope`, the answer `not found: game other`/);
  const asValue = structuredClone(notFound);
  delete asValue.error;
  asValue.value = { id: 'nope' };
  await assert.rejects(verifyView(asValue, { ...opts, query: { id: 'nope' } }), /the view answers an error/);

  await assert.rejects(chain.viewProof('tictactoe', { open: 1 }), (e) => e instanceof ChainError && e.code === 'no_proofs' && e.status === 409);
  await assert.rejects(getViewProven(chain, 'tictactoe', { open: 1 }, { signers: [sequencer] }), (e) => e.code === 'no_proofs');
  await assert.rejects(verifyView(answer, { ...opts, signers: undefined }), /opts.signers/);

  // A chain with validators: the block must be proven final by a quorum of the genesis set.
  const V = JSON.parse(readFileSync(new URL('./fixtures/finality_vectors.json', import.meta.url), 'utf8'));
  const c = V.cases[0];
  const validators = { set: V.consensus_keys.map((k) => ({ address: sequencer, consensus_key: k })) };
  const finality = { validators, chainId: V.chain_id, genesisHash: V.genesis_hash };
  await assert.rejects(verifyView(answer, { ...opts, signers: undefined, finality: { ...finality, record: c.finality } }), /is not proven final: .*certificate/);
  await assert.rejects(verifyView(answer, { ...opts, finality: { ...finality, record: null } }), /no finality record/);
  await assert.rejects(verifyView(answer, { ...opts, finality: { chainId: V.chain_id, genesisHash: V.genesis_hash } }), /opts.finality.validators/);
});

/** A module whose `gc_view` calls `put("", "")` and answers `0`. */
function writingView() {
  const str = (s) => [...uleb(s.length), ...new TextEncoder().encode(s)];
  const section = (n, body) => [n, ...uleb(body.length), ...body];
  const vec = (items) => [...uleb(items.length), ...items.flat()];
  const body = (instrs) => { const b = [0x00, ...instrs, 0x0b]; return [...uleb(b.length), ...b]; };
  const zero = [0x41, 0x00];
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, vec([[0x60, 4, 0x7f, 0x7f, 0x7f, 0x7f, 0], [0x60, 1, 0x7f, 1, 0x7f], [0x60, 2, 0x7f, 0x7f, 1, 0x7f]])),
    ...section(2, vec([[...str('env'), ...str('put'), 0x00, 0x00]])),
    ...section(3, vec([[0x01], [0x02]])),
    ...section(5, vec([[0x00, 0x01]])),
    ...section(7, vec([[...str('memory'), 0x02, 0x00], [...str('gc_alloc'), 0x00, 0x01], [...str('gc_view'), 0x00, 0x02]])),
    ...section(10, vec([body([0x41, 0x80, 0x08]), body([...zero, ...zero, ...zero, ...zero, 0x10, 0x00, ...zero])])),
  ]);
}

/**
 * A view module: `gc_view` outputs `out` (bytes, from a data segment) and answers 0 ('output'),
 * calls the `verify_signed` import this verifier does not implement ('unsupported'), or runs
 * `unreachable` ('trap').
 */
function viewModule(mode, out = new Uint8Array(0)) {
  const str = (s) => [...uleb(s.length), ...new TextEncoder().encode(s)];
  const section = (n, body) => [n, ...uleb(body.length), ...body];
  const vec = (items) => [...uleb(items.length), ...items.flat()];
  const body = (instrs) => { const b = [0x00, ...instrs, 0x0b]; return [...uleb(b.length), ...b]; };
  const i32 = (n) => [0x41, ...uleb(n)]; // small non-negative constants only
  const view = {
    output: [...i32(0), ...i32(out.length), 0x10, 0x00, ...i32(0)],
    unsupported: [...i32(0), ...i32(0), 0x10, 0x01, ...i32(0)],
    trap: [0x00],
  }[mode];
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, vec([[0x60, 2, 0x7f, 0x7f, 0], [0x60, 1, 0x7f, 1, 0x7f], [0x60, 2, 0x7f, 0x7f, 1, 0x7f]])),
    ...section(2, vec([[...str('env'), ...str('output'), 0x00, 0x00], [...str('env'), ...str('verify_signed'), 0x00, 0x00]])),
    ...section(3, vec([[0x01], [0x02]])),
    ...section(5, vec([[0x00, 0x01]])),
    ...section(7, vec([[...str('memory'), 0x02, 0x00], [...str('gc_alloc'), 0x00, 0x02], [...str('gc_view'), 0x00, 0x03]])),
    ...section(10, vec([body(i32(1024)), body(view)])),
    ...section(11, vec([[0x00, ...i32(0), 0x0b, ...uleb(out.length), ...out]])),
  ]);
}

test('the strict view replay refuses what it cannot compare with the chain, and reads answers as the chain does', async () => {
  const step = { type: 'view', query: '{}', height: 0, timeMs: 0, sequencer: '', checkpoint: { hash: '', height: 0 } };
  const run = async (mode, text, strict = true) => {
    const bytes = typeof text === 'string' ? new TextEncoder().encode(text) : text;
    const m = await WebAssembly.compile(viewModule(mode, bytes));
    return replayGame(m, { moduleId: 'v', state: [], strict, steps: [step] });
  };
  const [fine] = await run('output', '{"a":[1,"b",null]}');
  assert.deepEqual([fine.ok, JSON.parse(fine.value)], [true, { a: [1, 'b', null] }]);
  const [nul] = await run('output', 'null');
  assert.deepEqual([nul.ok, nul.value], [true, 'null']);
  // What serde_json refuses is the chain's `malformed module output`, here too.
  const malformed = ['\ufeff{"bom":1}', '{"x":1e400}', '{"x":"\\ud800"}', '{"\\udc00":1}'];
  for (const text of malformed) {
    const [r] = await run('output', text);
    assert.deepEqual([r.ok, r.error], [false, 'internal: malformed module output'], text);
  }
  const [bytes] = await run('output', Uint8Array.of(0x7b, 0xff, 0x7d));
  assert.deepEqual([bytes.ok, bytes.error], [false, 'internal: malformed module output']);
  // What it cannot compare exactly ends the check.
  await assert.rejects(run('output', '{"n":9007199254740993}'), /integer beyond 2\^53/);
  await assert.rejects(run('output', `${'['.repeat(127)}${']'.repeat(127)}`), /nested 127 levels/);
  const [deep] = await run('output', `${'['.repeat(126)}${']'.repeat(126)}`);
  assert.equal(deep.ok, true);
  await assert.rejects(run('unsupported'), /calls verify_signed, which the JS verifier does not implement/);
  await assert.rejects(run('trap'), /traps in this engine/);
  // Outside a proven view (a transcript's replay) the same module's failures are its errors.
  const [loose] = await run('unsupported', '', false);
  assert.deepEqual([loose.ok, loose.error], [false, 'internal: verify_signed is not supported by the JS verifier']);
});

test('the strict view replay: unproven reads and scans refused, writes read-only', async () => {
  const answer = await chain.viewProof('tictactoe', { id });
  const module = await WebAssembly.compile(await chain.code(answer.code_hash));
  const state = answer.reads.map((r) => [r.key, r.value === null ? null : base64.decode(r.value)]);
  const step = (query) => ({ type: 'view', query: viewQueryJson(query), height: 7, timeMs: 1, sequencer: 'y', checkpoint: { hash: '', height: 0 } });
  const [ok] = await replayGame(module, { moduleId: 'tictactoe', state, strict: true, steps: [step({ id })] });
  assert.equal(ok.ok, true, ok.error);
  assert.deepEqual(JSON.parse(ok.value), answer.value);
  const [absent] = await replayGame(module, { moduleId: 'tictactoe', state: [[`m/tictactoe/game/${id}`, null]], strict: true, steps: [step({ id })] });
  assert.deepEqual([absent.ok, absent.error], [false, `not found: game ${id}`]);
  await assert.rejects(replayGame(module, { moduleId: 'tictactoe', state: [], strict: true, steps: [step({ id })] }), new RegExp(`does not prove \`m/tictactoe/game/${id}\``));
  await assert.rejects(replayGame(module, { moduleId: 'tictactoe', state, strict: true, steps: [step({ open: 1 })] }), /the view scans keys under `m\/tictactoe\/open\/`: a scan cannot be proven/);
  // Not strict, a scan runs over the state given.
  const [open] = await replayGame(module, { moduleId: 'tictactoe', state, steps: [step({ open: 1 })] });
  assert.equal(open.ok, true, open.error);
  const writer = await WebAssembly.compile(writingView());
  const [wrote] = await replayGame(writer, { moduleId: 'w', state: [], strict: true, steps: [step({})] });
  assert.deepEqual([wrote.ok, wrote.error], [false, 'internal: state is read-only in a view']);
  assert.equal(viewQueryJson({ b: 2, a: 'x"', é: '1', z: '' }), '{"a":"x\\"","b":"2","z":"","é":"1"}');
});
