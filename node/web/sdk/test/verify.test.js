// verify.test.js: verifyTranscript against a node it starts. A tic-tac-toe game is played to a
// nine-move draw; its transcript (GET /v1/games/tictactoe/<id>/transcript) and the wasm by its
// code hash verify: every step re-executed in this process's Worker, receipts matching; the
// same tampering `gamechain verify --game` catches (node/tests/verify/verify_game.rs) is caught
// here with the same divergence (step and check); an m,n,k game verifies; two dice duels verify
// (transcript version 2: the roll is a scheduled call's step, re-executed from the verifier's own
// queue with draws from its block's beacon, every beacon checked under the genesis key; the
// second duel's create lands in the first's roll block, so its receipt is leaf 1, after the
// call's) and their tampering is caught (a beacon, a call id, a removed join, a forged chain
// whose beacons differ: the dice then differ). Also the pieces
// against fixed vectors: RFC 6962 inclusion proofs, the raw op of a body, canonical JSON.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { hexToBytes } from '@noble/hashes/utils.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { startNode } from '../testkit/node.js';
import { bls12_381 } from '@noble/curves/bls12-381.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { Chain, Key, verifyTranscript, verifyInclusion, rawMember, canonicalJson, headerHash, verifyBeacon, beaconMessage, BEACON_DST, drawer, blockReceiptRoot } from '../src/index.js';

let node;
before(async () => { node = await startNode({ blockIntervalMs: 200 }); });
after(async () => { await node?.dispose(); });

async function play(chain, key, module, op) {
  const r = await chain.waitForReceipt(await chain.send(key, { type: 'game', game: module, op }), { timeoutMs: 30000 });
  assert.equal(r.ok, true, `${JSON.stringify(op)}: ${r.error}`);
  return r;
}

test('RFC 6962 inclusion proofs, raw ops and canonical JSON', () => {
  const leaves = ['', '00', '10', '2021', '3031', '40414243', '5051525354555657', '606162636465666768696a6b6c6d6e6f'].map((h) => hexToBytes(h));
  const root8 = hexToBytes('5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328');
  const path = ['bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b', 'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0', 'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7'];
  assert.equal(verifyInclusion(leaves[5], 5, 8, path, root8), true);
  assert.equal(verifyInclusion(leaves[5], 4, 8, path, root8), false);
  assert.equal(verifyInclusion(leaves[4], 5, 8, path, root8), false);
  assert.equal(verifyInclusion(leaves[5], 5, 9, path, root8), false);
  assert.equal(verifyInclusion(leaves[5], 5, 8, path.slice(0, 2), root8), false);
  const root3 = hexToBytes('aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77');
  assert.equal(verifyInclusion(leaves[2], 2, 3, ['fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125'], root3), true);
  const one = sha256(Uint8Array.of(0, ...leaves[0]));
  assert.equal(verifyInclusion(leaves[0], 0, 1, [], one), true);

  const body = '{"action":{"game":"x","op": {"kind" : "move","s":"}\\"{"} ,"type":"game"},"chain_id":"c"}';
  assert.equal(rawMember(body, 'action', 'op'), '{"kind" : "move","s":"}\\"{"}');
  assert.equal(rawMember(body, 'action', 'nope'), null);
  assert.equal(canonicalJson({ b: [1, { z: null, a: 'x\n' }], a: true, 'é': 1.5 }), '{"a":true,"b":[1,{"a":"x\\n","z":null}],"é":1.5}');
});

test('verifyTranscript: a tic-tac-toe game verifies; every tampering is caught at its step', async () => {
  const chain = new Chain(node.url);
  const x = Key.generate();
  const o = Key.generate();
  for (const k of [x, o]) await chain.waitForReceipt(await chain.send(k, { type: 'faucet', token: 'GOLD' }), { timeoutMs: 30000 });
  const created = await play(chain, x, 'tictactoe', { kind: 'create', stake: '250' });
  const id = created.events[0].data.id;
  await play(chain, o, 'tictactoe', { kind: 'join', id });
  for (const [i, cell] of [0, 1, 2, 4, 3, 5, 7, 6, 8].entries()) await play(chain, i % 2 ? o : x, 'tictactoe', { kind: 'move', id, cell });

  const transcript = await chain.transcript('tictactoe', id);
  const wasm = await chain.code(transcript.code_hash);
  const genesis = await chain.genesis();
  const { sequencer, chain_id: chainId } = genesis;
  const beaconKey = genesis.beacon?.public_key ?? null;
  const opts = { sequencer, chainId, beaconKey, module: 'tictactoe', game: id };
  assert.equal(headerHash(transcript.steps[0].header.header).length, 64);
  const good = await verifyTranscript(transcript, wasm, { ...opts, complete: true });
  assert.equal(good.divergence, null, JSON.stringify(good.divergence));
  assert.equal(good.ok, true);
  assert.equal(good.isolated, true);
  assert.equal(good.steps.length, 11);
  assert.deepEqual(good.steps.map((s) => s.kind), ['create', 'join', ...Array(9).fill('move')]);
  assert.deepEqual(good.steps[10].events.map((e) => e.kind), ['tictactoe.moved', 'tictactoe.finished']);
  console.log(`tic-tac-toe (11 steps, ${JSON.stringify(transcript).length} bytes): verified in ${good.elapsedMs} ms in Node`);

  const tamper = (edit) => { const t = structuredClone(transcript); edit(t); return t; };
  const caught = async (what, t, index, field, bytes = wasm) => {
    const r = await verifyTranscript(t, bytes, opts);
    assert.equal(r.ok, false, `${what}: not caught`);
    assert.deepEqual([r.divergence.index, r.divergence.field], [index, field], `${what}: ${JSON.stringify(r.divergence)}`);
    assert.equal(r.steps.length, index ?? 0, `${what}: the steps before it matched`);
  };
  await caught('event data', tamper((t) => { t.steps[4].receipt.events[0].data.cell = 8; }), 4, 'receipt_proof');
  await caught('error', tamper((t) => { Object.assign(t.steps[4].receipt, { ok: false, error: 'invalid: cell is taken', events: [] }); }), 4, 'receipt_proof');
  await caught('fuel', tamper((t) => { t.steps[4].receipt.fuel_used += 1; }), 4, 'receipt_proof');
  await caught('two moves swapped', tamper((t) => { [t.steps[5], t.steps[6]] = [t.steps[6], t.steps[5]]; }), 5, 'ok');
  await caught('a move removed', tamper((t) => { t.steps.splice(5, 1); }), 5, 'ok');
  await caught('another code hash', tamper((t) => { t.code_hash = '11'.repeat(32); }), null, 'code_hash');
  const mnkHash = (await chain.module('mnk')).code_hash;
  const mnkWasm = await chain.code(mnkHash);
  await caught('another wasm', transcript, null, 'code_hash', mnkWasm);
  await caught('another wasm under its own hash', tamper((t) => { t.code_hash = mnkHash; }), 0, 'ok', mnkWasm);
  const forger = Key.generate();
  await caught('a forged header signature', tamper((t) => { t.steps[3].header.signature = forger.signMessage(headerHash(t.steps[3].header.header)); }), 3, 'header_signature');
  await caught('a header edited under its signature', tamper((t) => { t.steps[3].header.header.time_ms += 1; }), 3, 'header_signature');
  await caught('a wrong inclusion proof', tamper((t) => { t.steps[2].tx_proof.push('00'.repeat(32)); }), 2, 'tx_proof');
  await caught('a wrong tree size', tamper((t) => { t.steps[2].tx_count = 7; }), 2, 'tx_proof');
  // Numbers as strings would slip past comparisons: refused as a malformed step.
  await caught('a height given as a string', tamper((t) => { t.steps[3].height = String(t.steps[3].height); }), 3, 'transcript');
  // Cut short but still called finished: finished is what the steps show.
  const short = tamper((t) => { t.steps.pop(); });
  const cut = await verifyTranscript(short, wasm, opts);
  assert.deepEqual([cut.divergence?.index, cut.divergence?.field], [null, 'finished'], JSON.stringify(cut.divergence));
  // Honestly labelled unfinished, it is still caught: the chain's own log of the game (proven
  // against a signed state root; every new chain has state proofs) holds one step more.
  short.finished = false;
  assert.equal(genesis.state_commitment, 'sparse_merkle');
  const honest = await verifyTranscript(short, wasm, { ...opts, stateCommitment: genesis.state_commitment });
  assert.deepEqual([honest.ok, honest.divergence?.field], [false, 'log.steps'], JSON.stringify(honest.divergence));
  assert.match(honest.divergence.got, /the chain logged 11 steps of the game/);
  assert.equal(good.finished, true);
  // The log itself: required on such a chain, and its value, proof, key and block checked.
  const logOpts = { ...opts, stateCommitment: 'sparse_merkle' };
  const logCaught = async (what, t, field) => {
    const r = await verifyTranscript(t, wasm, logOpts);
    assert.deepEqual([r.ok, r.divergence?.index, r.divergence?.field], [false, null, field], `${what}: ${JSON.stringify(r.divergence)}`);
  };
  assert.equal((await verifyTranscript(transcript, wasm, logOpts)).ok, true);
  await logCaught('no log', tamper((t) => { delete t.log; }), 'log');
  await logCaught('another key', tamper((t) => { t.log.key = 'log/tictactoe/0000000000000000'; }), 'log');
  await logCaught('another value', tamper((t) => { t.log.value = (t.log.value[0] === '0' ? '1' : '0') + t.log.value.slice(1); }), 'log.proof');
  await logCaught('another root', tamper((t) => { t.log.header.header.state_root = '00'.repeat(32); }), 'log.header');
  await logCaught('a changed module record', tamper((t) => { t.log.module_record.value = t.log.module_record.value.replace('"deployed_height":', '"deployed_height":1'); }), 'code.record');
  await logCaught('no module record', tamper((t) => { delete t.log.module_record; }), 'code.record');
  await logCaught('a changed sibling', tamper((t) => { const s = t.log.proof.siblings; s[0] = (s[0][0] === '0' ? '1' : '0') + s[0].slice(1); }), 'log.proof');
  // The starting balances (a chain with state proofs): each player's GOLD before its first step,
  // proven against the block before it; a changed amount, value or header, or a player left out,
  // is refused.
  assert.deepEqual(transcript.start.map((s) => s.account), [x.address, o.address]);
  assert.deepEqual(transcript.start_balances, { [x.address]: transcript.start[0].value, [o.address]: transcript.start[1].value });
  await logCaught('a changed starting balance', tamper((t) => { t.start_balances[x.address] = `9${t.start_balances[x.address]}`; }), 'start_balances');
  await logCaught('a changed proven balance', tamper((t) => { t.start[0].value = `9${t.start[0].value}`; t.start_balances[x.address] = t.start[0].value; }), 'start.proof');
  await logCaught("another block's header", tamper((t) => { t.start[1].header = t.start[0].header; }), 'start.header');
  await logCaught('a player left out', tamper((t) => { t.start.pop(); }), 'start');
  // Without `stateCommitment` too: a transcript carrying a log is of a chain with proofs, so its
  // starts are required, and a reason a terminal or page would act on is refused.
  const noStart = await verifyTranscript(tamper((t) => { delete t.start; t.start_balances[x.address] = '999999'; }), wasm, opts);
  assert.deepEqual([noStart.ok, noStart.divergence?.field], [false, 'start'], JSON.stringify(noStart.divergence));
  await logCaught('a reason with a control character', tamper((t) => { t.start[1] = { account: o.address, unproven: 'x\u001b[2K' }; }), 'start');
  const withheld = await verifyTranscript(tamper((t) => { t.start[1] = { account: o.address, unproven: 'not shown' }; }), wasm, logOpts);
  assert.deepEqual([withheld.ok, withheld.startUnproven], [true, [{ account: o.address, why: 'not shown' }]]);
  // Another game's real steps shown as this game's: relabelled, or appended.
  const other = await play(chain, x, 'tictactoe', { kind: 'create' });
  const otherT = await chain.transcript('tictactoe', other.events[0].data.id);
  await caught('another game relabelled', { ...otherT, game: id }, 0, 'game');
  // The game asked for is required, and a transcript of another module is refused.
  const unasked = await verifyTranscript(transcript, wasm, { sequencer, chainId, beaconKey, complete: true });
  assert.deepEqual([unasked.ok, unasked.divergence.field], [false, 'game']);
  assert.equal((await verifyTranscript(transcript, wasm, { ...opts, module: 'mnk' })).divergence.field, 'module');
  await caught("another game's step appended", tamper((t) => { t.steps.pop(); t.finished = false; t.steps.push(otherT.steps[0]); }), 10, 'game');
  await caught('one block shown with two sizes', tamper((t) => { Object.assign(t.steps[3], { height: t.steps[2].height, header: t.steps[2].header, index: t.steps[2].index + 1, tx_count: t.steps[2].tx_count + 1 }); }), 3, 'block');
  await caught('an edited op', tamper((t) => { t.steps[5].body = t.steps[5].body.replace('"cell":4', '"cell":6'); }), 5, 'txid');
  const wrongAnchor = await verifyTranscript(transcript, wasm, { ...opts, sequencer: forger.address });
  assert.equal(wrongAnchor.divergence.field, 'sequencer');
});

test('verifyTranscript: an m,n,k game in play verifies, and not as a complete one', async () => {
  const chain = new Chain(node.url);
  const x = Key.generate();
  const o = Key.generate();
  for (const k of [x, o]) await chain.waitForReceipt(await chain.send(k, { type: 'faucet', token: 'GOLD' }), { timeoutMs: 30000 });
  const created = await play(chain, x, 'mnk', { kind: 'create', rows: 6, cols: 7, k: 4, stake: '10' });
  const id = created.events[0].data.id;
  await play(chain, o, 'mnk', { kind: 'join', id });
  for (const [i, [row, col]] of [[0, 0], [5, 6], [1, 1], [4, 5]].entries()) await play(chain, i % 2 ? o : x, 'mnk', { kind: 'move', id, row, col });
  const t = await chain.transcript('mnk', id);
  assert.equal(t.finished, false);
  const wasm = await chain.code(t.code_hash);
  const r = await verifyTranscript(t, wasm, { module: 'mnk', game: id });
  assert.equal(r.divergence, null, JSON.stringify(r.divergence));
  assert.equal(r.steps.length, 6);
  const c = await verifyTranscript(t, wasm, { module: 'mnk', game: id, complete: true });
  assert.equal(c.divergence.field, 'finished');
});

/** A BLS beacon key made here: `sign(chainId, height)` → 96 hex, `publicKey` 192 hex. */
function beaconKey(seed) {
  const short = bls12_381.shortSignatures;
  const { secretKey, publicKey } = short.keygen(Uint8Array.from({ length: 48 }, (_, i) => (seed * 31 + i) & 0xff));
  return {
    publicKey: bytesToHex(publicKey.toBytes()),
    sign: (chainId, height) => bytesToHex(short.sign(short.hash(beaconMessage(chainId, height), BEACON_DST), secretKey).toBytes()),
  };
}

test('verifyTranscript: dice duels (scheduled rolls, beacons) verify; tampering is caught', async (t0) => {
  // Blocks at least a second apart: the second duel's create, sent as soon as the first join's
  // receipt is in, lands in the next block, where the first roll runs.
  const quiet = await startNode({ blockIntervalMs: 60000, minBlockIntervalMs: 1000 });
  t0.after(() => quiet.dispose());
  const chain = new Chain(quiet.url);
  const genesis = await chain.genesis();
  assert.ok(genesis.beacon, 'the dev chain has a beacon');
  const x = Key.generate();
  const o = Key.generate();
  for (const k of [x, o]) await chain.waitForReceipt(await chain.send(k, { type: 'faucet', token: 'GOLD' }), { timeoutMs: 30000 });
  const a = (await play(chain, x, 'dice', { kind: 'create', stake: '300' })).events[0].data.id;
  const joined = await play(chain, o, 'dice', { kind: 'join', id: a });
  const scheduled = joined.events.find((e) => e.kind === 'dice.roll_scheduled').data;
  assert.equal(scheduled.height, joined.height + 1);
  // Sent at once: lands in the roll's block, after the call.
  const bCreated = await play(chain, x, 'dice', { kind: 'create', stake: '5' });
  const b = bCreated.events[0].data.id;
  await play(chain, o, 'dice', { kind: 'join', id: b });
  const finished = async (id) => { for (;;) { const g = await chain.game('dice', { id }); if (g.status === 'finished') return g; await new Promise((r) => setTimeout(r, 100)); } };
  const gameA = await finished(a);
  await finished(b);

  const opts = { sequencer: genesis.sequencer, chainId: genesis.chain_id, beaconKey: genesis.beacon.public_key, fuelApply: genesis.fuel_apply, module: 'dice', game: a, complete: true };
  const t = await chain.transcript('dice', a);
  assert.equal(t.version, 2);
  assert.equal(t.beacon_key, genesis.beacon.public_key);
  const wasm = await chain.code(t.code_hash);
  const good = await verifyTranscript(t, wasm, opts);
  assert.equal(good.divergence, null, JSON.stringify(good.divergence));
  assert.deepEqual(good.startUnproven, [], 'every starting balance of the first duel is proven');
  assert.deepEqual(good.steps.map((s) => [s.type, s.kind]), [['tx', 'create'], ['tx', 'join'], ['call', null]]);
  const roll = good.steps[2];
  assert.deepEqual(roll.call, { module: 'dice', id: scheduled.call });
  assert.equal(roll.height, scheduled.height);
  assert.equal(roll.beaconVerified, true);
  assert.equal(good.beaconsVerified, 3);
  assert.equal(good.finished, true);
  const rolled = roll.events.find((e) => e.kind === 'dice.rolled').data;
  assert.deepEqual([rolled.x_dice, rolled.o_dice], [gameA.x_dice, gameA.o_dice]);
  // The dice are the draws of the roll block's beacon.
  const d = drawer(roll.beacon, 'dice', roll.call.id);
  assert.deepEqual([1 + d.below(6), 1 + d.below(6), 1 + d.below(6), 1 + d.below(6)], [...rolled.x_dice, ...rolled.o_dice]);
  console.log(`dice (3 steps, ${JSON.stringify(t).length} bytes): verified in ${good.elapsedMs} ms in Node, 3 beacons checked`);

  // The second duel: its create shares the roll's block, as leaf 1 of the receipts.
  const tb = await chain.transcript('dice', b);
  const rollBlock = await chain.block(scheduled.height);
  assert.equal(blockReceiptRoot(rollBlock), rollBlock.header.receipt_root);
  assert.equal(headerHash(rollBlock.header), rollBlock.hash);
  assert.equal(verifyBeacon(genesis.beacon.public_key, genesis.chain_id, rollBlock.height, rollBlock.header.beacon), true);
  assert.deepEqual(rollBlock.scheduled.map((s) => s.id), [scheduled.call]);
  assert.equal(tb.steps[0].height, scheduled.height, 'the second create shares the roll block');
  assert.equal(tb.steps[0].receipt_index, tb.steps[0].index + 1);
  const goodB = await verifyTranscript(tb, wasm, { ...opts, game: b });
  assert.equal(goodB.divergence, null, JSON.stringify(goodB.divergence));
  // The roll that ran first in that block paid the first duel's winner: whoever of them creates
  // the second duel there has a balance the state root before the block does not show. The node
  // says so, that player starts from the declared stake, and the result names it.
  const moved = tb.start.filter((s) => s.unproven !== undefined);
  assert.deepEqual(goodB.startUnproven.map((u) => u.account), moved.map((s) => s.account));
  for (const s of moved) assert.match(s.unproven, /moved earlier in block \d+/);
  assert.deepEqual(goodB.steps.map((s) => s.type), ['tx', 'tx', 'call']);

  const tamper = (tr, edit) => { const c = structuredClone(tr); edit(c); return c; };
  const caught = async (what, tr, index, field, o = opts) => {
    const r = await verifyTranscript(tr, wasm, o);
    assert.equal(r.ok, false, `${what}: not caught`);
    assert.deepEqual([r.divergence.index, r.divergence.field], [index, field], `${what}: ${JSON.stringify(r.divergence)}`);
    return r;
  };
  await caught('receipt_index', tamper(tb, (c) => { c.steps[0].receipt_index = 0; }), 0, 'receipt_proof', { ...opts, game: b });
  await caught('receipt_index before the index', tamper(tb, (c) => { delete c.steps[0].receipt_index; }), 0, 'receipt_proof', { ...opts, game: b });
  // Other dice than the roll's (each die moved by one: [6, 6] would be no change 1 time in 36).
  await caught('the roll\'s dice', tamper(t, (c) => { c.steps[2].receipt.events[0].data.x_dice = c.steps[2].receipt.events[0].data.x_dice.map((d) => (d % 6) + 1); }), 2, 'receipt_proof');
  await caught('another call id', tamper(t, (c) => { c.steps[2].call.id += 1; }), 2, 'receipt_proof');
  await caught('a call of another module', tamper(t, (c) => { c.steps[2].call.module = 'tictactoe'; }), 2, 'call.module');
  await caught('a call step with a txid', tamper(t, (c) => { c.steps[2].txid = t.steps[1].txid; }), 2, 'call');
  await caught('the beacon of the roll block edited', tamper(t, (c) => { c.steps[2].header.header.beacon = t.steps[1].header.header.beacon; }), 2, 'header_signature');
  // The roll moved before the join: it is not in the queue yet (the join after it is out of order too).
  await caught('the roll before the join', tamper(t, (c) => { [c.steps[1], c.steps[2]] = [c.steps[2], c.steps[1]]; }), 1, 'call');
  await caught('the roll in the join\'s block, before it', tamper(t, (c) => { Object.assign(c.steps[2], { height: t.steps[1].height, header: t.steps[1].header, receipt_count: t.steps[1].receipt_count }); }), 2, 'order');
  const noJoin = await caught('the join removed', tamper(t, (c) => { c.steps.splice(1, 1); }), 1, 'call');
  assert.match(noJoin.divergence.expected, /scheduled by an earlier step/);
  assert.equal(noJoin.divergence.call, scheduled.call);
  // The transcript's beacon key must be the genesis's.
  const other = beaconKey(7);
  const wrongKey = await verifyTranscript(tamper(t, (c) => { c.beacon_key = other.publicKey; }), wasm, opts);
  assert.deepEqual([wrongKey.divergence.index, wrongKey.divergence.field], [null, 'beacon_key']);
  // A caller that pins the signer must pin the beacon key too (else a lying sequencer names its own).
  const { beaconKey: _pk, ...pinnedSignerOnly } = opts;
  const unpinned = await verifyTranscript(t, wasm, pinnedSignerOnly);
  assert.deepEqual([unpinned.ok, unpinned.divergence.field], [false, 'beacon_key']);
  // Without the caller's anchors, a transcript naming another key fails at the first beacon.
  const { beaconKey: _k, sequencer: _s, chainId: _c, ...bare } = opts;
  await caught('another beacon key, no anchor', tamper(t, (c) => { c.beacon_key = other.publicKey; }), 0, 'header.beacon', bare);
  assert.equal((await verifyTranscript(t, wasm, bare)).ok, true);
  // A chain without a beacon key carries no beacon.
  await caught('beacons on a chain without a key', tamper(t, (c) => { delete c.beacon_key; }), 0, 'header.beacon', { ...bare, beaconKey: null });

  // A forged chain, self-consistent: the forger signs every header and beacon with its own keys.
  // Its roll block's beacon is another, so the roll re-executed draws other dice than the
  // receipt shows (a forger key is picked whose draws differ).
  const forger = Key.generate();
  let fk = null;
  for (let seed = 1; seed < 50 && !fk; seed++) {
    const k = beaconKey(seed);
    const dd = drawer(k.sign(t.chain_id, scheduled.height), 'dice', scheduled.call);
    const dice = [1 + dd.below(6), 1 + dd.below(6), 1 + dd.below(6), 1 + dd.below(6)];
    if (canonicalJson(dice) !== canonicalJson([...rolled.x_dice, ...rolled.o_dice])) fk = k;
  }
  const forged = tamper(t, (c) => {
    c.sequencer = forger.address;
    c.beacon_key = fk.publicKey;
    for (const s of c.steps) {
      const h = s.header.header;
      h.sequencer = forger.address;
      h.beacon = fk.sign(c.chain_id, h.height);
      s.header.signature = forger.signMessage(headerHash(h));
    }
  });
  const f = await caught('a forged chain\'s beacons', forged, 2, 'events', { module: 'dice', game: a });
  assert.equal(f.steps.length, 2);
  assert.ok(f.steps.every((s) => s.beaconVerified), 'its beacons verify under its own key');
  // Against the real anchors it fails at once.
  const anchored = await verifyTranscript(forged, wasm, opts);
  assert.equal(anchored.divergence.field, 'sequencer');
  // A forged header without a beacon on a beacon chain.
  await caught('a header without its beacon', tamper(forged, (c) => {
    const s = c.steps[1];
    delete s.header.header.beacon;
    s.header.signature = forger.signMessage(headerHash(s.header.header));
  }), 1, 'header.beacon', { module: 'dice', game: a });
});
