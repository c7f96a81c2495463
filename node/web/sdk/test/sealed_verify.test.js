// sealed_verify.test.js: sealed rock-paper-scissors (modules/sealed_rps, a genesis module) on a
// node this test starts, verified by verifyTranscript: both players seal their moves with
// sealMove (tag `<id>/<x|o>`, the round from the join's `sealed_rps.round` event); a copy of the
// other player's envelope is refused by the chain; the round's block opens both moves. The
// transcript (create, join, the two moves, the two openings and the settling call) verifies in a
// Worker (which imports seal.js for the proof checks and the openings) and in this thread, every
// opening re-done from the envelopes the re-executed moves stored and the call block's beacon; a
// transcript without one player's move is caught at the opening of that seat (the re-execution
// opens it void). A game where one player never seals verifies too (the void seat loses). A
// sealed-bid auction (modules/auction) verifies with a valid bid, a void one (above the deposit:
// its deposit is forfeited to the seller) and an empty seat (the deposits declared as the bidders'
// starting balances by the node's transcript). The re-execution checks every seal under the
// pinned beacon key (`opts.beaconKey`, the genesis's).
// Prints the time of a seal and of the verification.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startNode } from '../testkit/node.js';
import { Chain, Key, verifyTranscript, sealMove, plaintextOf } from '../src/index.js';

let node;
before(async () => { node = await startNode({ blockIntervalMs: 250, minBlockIntervalMs: 100 }); });
after(async () => { await node?.dispose(); });

const MOVES = { rock: 1, paper: 2, scissors: 3 };

async function play(chain, key, op) {
  const r = await chain.waitForReceipt(await chain.send(key, { type: 'game', game: 'sealed_rps', op }), { timeoutMs: 30000 });
  assert.equal(r.ok, true, `${JSON.stringify(op).slice(0, 80)}: ${r.error}`);
  return r;
}

async function finished(chain, id) {
  for (;;) {
    const g = await chain.game('sealed_rps', { id });
    if (g.status === 'finished') return g;
    await new Promise((r) => setTimeout(r, 100));
  }
}

test('sealed rock-paper-scissors: sealed in JS, opened by the chain, verified by re-execution', async () => {
  const chain = new Chain(node.url);
  const genesis = await chain.genesis();
  assert.ok(genesis.beacon, 'the dev chain has a beacon');
  const x = Key.generate();
  const o = Key.generate();
  for (const k of [x, o]) await chain.waitForReceipt(await chain.send(k, { type: 'faucet', token: 'GOLD' }), { timeoutMs: 30000 });
  const seal = (key, id, seat, round, move) => sealMove({
    beaconPublicKey: genesis.beacon.public_key, chainId: genesis.chain_id, module: 'sealed_rps',
    sender: key.address, tag: `${id}/${seat}`, round, plaintext: plaintextOf(Uint8Array.of(MOVES[move])),
  });

  const id = (await play(chain, x, { kind: 'create', stake: '100', seal_blocks: 10 })).events[0].data.id;
  const joined = await play(chain, o, { kind: 'join', id });
  const { round } = joined.events.find((e) => e.kind === 'sealed_rps.round').data;
  assert.equal(round, joined.height + 10);
  const t0 = performance.now();
  const xRock = seal(x, id, 'x', round, 'rock');
  const sealMs = performance.now() - t0;
  await play(chain, x, { kind: 'move', id, sealed: xRock });
  // o hands in x's envelope: bound to x (sender and seat), refused.
  const copied = await chain.waitForReceipt(await chain.send(o, { type: 'game', game: 'sealed_rps', op: { kind: 'move', id, sealed: xRock } }), { timeoutMs: 30000 });
  assert.equal(copied.ok, false);
  assert.equal(copied.error, 'invalid: the sealed move is not bound to this game, seat, round and player');
  await play(chain, o, { kind: 'move', id, sealed: seal(o, id, 'o', round, 'paper') });
  const g = await finished(chain, id);
  assert.deepEqual([g.x_move, g.o_move, g.result, g.winner], ['rock', 'paper', 'o_won', o.address]);

  const t = await chain.transcript('sealed_rps', id);
  const wasm = await chain.code(t.code_hash);
  const opts = { sequencer: genesis.sequencer, chainId: genesis.chain_id, beaconKey: genesis.beacon.public_key, fuelApply: genesis.fuel_apply, module: 'sealed_rps', game: id, complete: true };
  const good = await verifyTranscript(t, wasm, opts);
  assert.equal(good.divergence, null, JSON.stringify(good.divergence));
  assert.equal(good.isolated, true, 'run in a Worker');
  assert.deepEqual(good.steps.map((s) => s.kind ?? s.type), ['create', 'join', 'move', 'move', 'call', 'call', 'call']);
  const opened = good.steps.filter((s) => s.type === 'call').flatMap((s) => s.events).filter((e) => e.kind === 'sealed_rps.opened').map((e) => [e.data.seat, e.data.move]);
  assert.deepEqual(opened.sort(), [['o', 'paper'], ['x', 'rock']]);
  assert.ok(good.steps.filter((s) => s.type === 'call').every((s) => s.height === round && s.beaconVerified));
  assert.equal(good.finished, true);
  const here = await verifyTranscript(t, wasm, { ...opts, worker: 'never' });
  assert.deepEqual([here.divergence, here.isolated], [null, false]);
  console.log(`sealed_rps (${t.steps.length} steps): a seal took ${sealMs.toFixed(1)} ms; verified in ${good.elapsedMs} ms in a Worker, ${here.elapsedMs} ms in this thread`);

  // Without x's move the re-execution opens x's seat void: the receipt said rock.
  const moves = t.steps.map((s, i) => [s, i]).filter(([s]) => s.call == null && JSON.parse(s.body).action.op.kind === 'move').map(([, i]) => i);
  const noX = structuredClone(t);
  noX.steps.splice(moves[0], 1);
  const r = await verifyTranscript(noX, wasm, { ...opts, complete: false });
  assert.equal(r.ok, false);
  assert.equal(r.divergence.field, 'events', JSON.stringify(r.divergence));
  assert.match(r.divergence.got, /"move":"void"/);
  assert.ok(noX.steps[r.divergence.index].call, 'at an opening');
});

test('a seat nobody sealed opens void and loses; the game verifies', async () => {
  const chain = new Chain(node.url);
  const genesis = await chain.genesis();
  const x = Key.generate();
  const o = Key.generate();
  for (const k of [x, o]) await chain.waitForReceipt(await chain.send(k, { type: 'faucet', token: 'GOLD' }), { timeoutMs: 30000 });
  const id = (await play(chain, x, { kind: 'create', stake: '50', seal_blocks: 4 })).events[0].data.id;
  const joined = await play(chain, o, { kind: 'join', id });
  const { round } = joined.events.find((e) => e.kind === 'sealed_rps.round').data;
  const sealed = sealMove({ beaconPublicKey: genesis.beacon.public_key, chainId: genesis.chain_id, module: 'sealed_rps', sender: o.address, tag: `${id}/o`, round, plaintext: plaintextOf(Uint8Array.of(3)) });
  await play(chain, o, { kind: 'move', id, sealed });
  const g = await finished(chain, id);
  assert.deepEqual([g.x_move, g.o_move, g.result, g.reason], ['void', 'scissors', 'o_won', 'void']);
  const t = await chain.transcript('sealed_rps', id);
  const v = await verifyTranscript(t, await chain.code(t.code_hash), { sequencer: genesis.sequencer, chainId: genesis.chain_id, beaconKey: genesis.beacon.public_key, fuelApply: genesis.fuel_apply, module: 'sealed_rps', game: id, complete: true });
  assert.equal(v.divergence, null, JSON.stringify(v.divergence));
  assert.deepEqual(v.steps.map((s) => s.kind ?? s.type), ['create', 'join', 'move', 'call', 'call', 'call']);
});

test('a sealed-bid auction: bids sealed in JS, opened together, a void bid\'s deposit to the seller, verified', async () => {
  const chain = new Chain(node.url);
  const genesis = await chain.genesis();
  const [seller, bob, carol] = [Key.generate(), Key.generate(), Key.generate()];
  for (const k of [seller, bob, carol]) await chain.waitForReceipt(await chain.send(k, { type: 'faucet', token: 'GOLD' }), { timeoutMs: 30000 });
  const send = async (key, op) => {
    const r = await chain.waitForReceipt(await chain.send(key, { type: 'game', game: 'auction', op }), { timeoutMs: 30000 });
    assert.equal(r.ok, true, `${op.kind}: ${r.error}`);
    return r;
  };
  const created = (await send(seller, { kind: 'create', lot: 'a lamp', deposit: '1000', reserve: '100', seats: 3, seal_blocks: 8 })).events.find((e) => e.kind === 'auction.created').data;
  const bid = (key, units) => {
    const plaintext = new Uint8Array(32);
    new DataView(plaintext.buffer).setBigUint64(0, BigInt(units), false);
    return send(key, { kind: 'bid', id: created.id, sealed: sealMove({ beaconPublicKey: genesis.beacon.public_key, chainId: genesis.chain_id, module: 'auction', sender: key.address, tag: created.id, round: created.round, plaintext }) });
  };
  const before = await Promise.all([seller, bob, carol].map(async (k) => BigInt((await chain.account(k.address)).balances.GOLD)));
  // bob bids 700, carol 2000 (over the deposit: void); the third seat stays empty.
  await bid(bob, 700);
  await bid(carol, 2000);
  let a;
  for (;;) { a = await chain.game('auction', { id: created.id }); if (a.status === 'closed') break; await new Promise((r) => setTimeout(r, 100)); }
  assert.deepEqual([a.winner, a.price, a.seats.map((s) => s.bid)], [bob.address, '700', ['700', null, null]]);
  // The seller gets bob's 700 and carol's forfeited deposit; bob pays 700; carol loses her deposit.
  const afterwards = await Promise.all([seller, bob, carol].map(async (k) => BigInt((await chain.account(k.address)).balances.GOLD)));
  assert.deepEqual(afterwards.map((b, i) => String(b - before[i])), ['1700', '-700', '-1000']);
  const t = await chain.transcript('auction', created.id);
  // Each account starts from its balance before its first step, proven against the block before
  // it (server/transcript/start.rs), or, where the node cannot prove it, the declared deposit.
  assert.equal(t.start.length, 3, JSON.stringify(t.start));
  for (const s of t.start) assert.equal(t.start_balances[s.account], s.unproven === undefined ? s.value : '1000', JSON.stringify(s));
  const v = await verifyTranscript(t, await chain.code(t.code_hash), { sequencer: genesis.sequencer, chainId: genesis.chain_id, beaconKey: genesis.beacon.public_key, fuelApply: genesis.fuel_apply, module: 'auction', game: created.id });
  assert.equal(v.divergence, null, JSON.stringify(v.divergence));
  assert.deepEqual(v.steps.map((s) => s.kind ?? s.type), ['create', 'bid', 'bid', 'call', 'call', 'call', 'call']);
  const opened = v.steps.flatMap((s) => s.events).filter((e) => e.kind === 'auction.opened').map((e) => [e.data.seat, e.data.bid]);
  assert.deepEqual(opened.sort((x, y) => x[0] - y[0]), [[0, '700'], [1, null], [2, null]]);
});

test('an auction seat taken before its bidder had GOLD verifies: the balance is proven at the bid', async () => {
  const chain = new Chain(node.url);
  const genesis = await chain.genesis();
  const [seller, dave] = [Key.generate(), Key.generate()];
  await chain.waitForReceipt(await chain.send(seller, { type: 'faucet', token: 'GOLD' }), { timeoutMs: 30000 });
  const send = async (key, op) => {
    const r = await chain.waitForReceipt(await chain.send(key, { type: 'game', game: 'auction', op }), { timeoutMs: 30000 });
    assert.equal(r.ok, true, `${op.kind}: ${r.error}`);
    return r;
  };
  const created = (await send(seller, { kind: 'create', lot: 'a chair', deposit: '100', seats: 1, seal_blocks: 8 })).events.find((e) => e.kind === 'auction.created').data;
  // Dave adds a seat with no GOLD at all, then takes some from the faucet, then bids: his first
  // step moved none of his GOLD, so the node proves his balance before the bid instead.
  await send(dave, { kind: 'add_seats', id: created.id, n: 1 });
  await chain.waitForReceipt(await chain.send(dave, { type: 'faucet', token: 'GOLD' }), { timeoutMs: 30000 });
  const plaintext = new Uint8Array(32);
  new DataView(plaintext.buffer).setBigUint64(0, 50n, false);
  await send(dave, { kind: 'bid', id: created.id, sealed: sealMove({ beaconPublicKey: genesis.beacon.public_key, chainId: genesis.chain_id, module: 'auction', sender: dave.address, tag: created.id, round: created.round, plaintext }) });
  let a;
  for (;;) { a = await chain.game('auction', { id: created.id }); if (a.status === 'closed') break; await new Promise((r) => setTimeout(r, 100)); }
  const t = await chain.transcript('auction', created.id);
  const entry = t.start.find((s) => s.account === dave.address);
  const bidStep = t.steps.find((s) => s.txid && JSON.parse(s.body).from === dave.address && JSON.parse(s.body).action.op.kind === 'bid');
  assert.equal(entry.header.height + 1, bidStep.height, 'the witness is the bid\'s block, not the seat\'s');
  const v = await verifyTranscript(t, await chain.code(t.code_hash), { sequencer: genesis.sequencer, chainId: genesis.chain_id, beaconKey: genesis.beacon.public_key, fuelApply: genesis.fuel_apply, stateCommitment: genesis.state_commitment, module: 'auction', game: created.id });
  assert.equal(v.divergence, null, JSON.stringify(v.divergence));
  assert.deepEqual(v.startUnproven, []);
  // A changed proven balance is refused.
  const moved = structuredClone(t);
  moved.start.find((s) => s.account === dave.address).value = '0';
  const bad = await verifyTranscript(moved, await chain.code(t.code_hash), { sequencer: genesis.sequencer, chainId: genesis.chain_id, beaconKey: genesis.beacon.public_key, fuelApply: genesis.fuel_apply, stateCommitment: genesis.state_commitment, module: 'auction', game: created.id });
  assert.equal(bad.divergence?.field, 'start.proof', JSON.stringify(bad.divergence));
});
