// session.test.js: session keys through the SDK against a real node (docs/session-keys.md):
// two players each authorize a session key with one main-key transaction
// (`chain.authorizeSession`), play a whole tic-tac-toe game with `session.send` only, the payout
// reaches the winner's main account and GOLD is conserved; a module outside the scope and a
// revoked session (`chain.revokeSession`) are refused with `session_refused` and the fixed text;
// a kept session (`toJSON` → `chain.session`) still plays; `chain.sessions` lists cap and spent;
// the game's transcript proves every session step's authorization, and lies about it are refused.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startNode } from '../testkit/node.js';
import { Chain, ChainError, Key, verifyTranscript } from '../src/index.js';

let node;
let chain;
before(async () => {
  node = await startNode({ blockIntervalMs: 100 });
  chain = new Chain(node.url);
});
after(async () => { await node?.dispose(); });

const gold = (account) => BigInt(account.balances.GOLD ?? '0');

test('two players play tic-tac-toe with session keys; scope and revocation are enforced', async () => {
  const alice = Key.generate();
  const bob = Key.generate();
  for (const k of [alice, bob]) {
    const r = await chain.waitForReceipt(await chain.send(k, { type: 'faucet', token: 'GOLD' }));
    assert.equal(r.ok, true);
  }
  const sa = await chain.authorizeSession(alice, { modules: ['tictactoe'], cap: '100' });
  const sb = await chain.authorizeSession(bob, { modules: ['tictactoe'], cap: 100n, expiresInMs: 600000 });
  assert.equal(sa.account, alice.address);
  assert.equal(sa.id, 1, "Alice's nonce of the authorization");

  const created = await sa.sendAndWait('tictactoe', { kind: 'create', stake: '100' });
  assert.equal(created.ok, true, created.error);
  assert.equal(created.events[0].data.x, alice.address, 'the module sees the main account');
  assert.deepEqual(created.events.at(-1), { kind: 'session', data: { account: alice.address, key: sa.address, session: 1 } });
  const id = created.txid.slice(0, 16);
  // Bob's session, kept and restored (as a page would from storage).
  const kept = chain.session(JSON.parse(JSON.stringify(sb)));
  assert.equal(kept.address, sb.address);
  assert.equal((await kept.sendAndWait('tictactoe', { kind: 'join', id })).ok, true);
  for (const [cell, s] of [[0, sa], [3, kept], [1, sa], [4, kept], [2, sa]]) {
    const r = await s.sendAndWait('tictactoe', { kind: 'move', id, cell });
    assert.equal(r.ok, true, `cell ${cell}: ${r.error}`);
  }
  const [a, b, escrow] = await Promise.all([chain.account(alice.address), chain.account(bob.address), chain.account('module:tictactoe')]);
  assert.equal(gold(a), 100100n, 'the payout reached the main account');
  assert.equal(gold(b), 99900n);
  assert.equal(gold(escrow), 0n);
  assert.equal(gold(a) + gold(b) + gold(escrow), 200000n, 'GOLD conserved');
  assert.equal(gold(await chain.account(sa.address)), 0n, 'the session key holds nothing');

  // The game's transcript proves each session step's authorization (verify/session.js): its
  // record before its block, against that block's root; every lie about it is refused.
  const t = await chain.transcript('tictactoe', id);
  const wasm = await chain.code(t.code_hash);
  const genesis = await chain.genesis();
  const opts = { sequencer: genesis.sequencer, chainId: genesis.chain_id, beaconKey: genesis.beacon?.public_key ?? null, module: 'tictactoe', game: id, stateCommitment: 'sparse_merkle' };
  const good = await verifyTranscript(t, wasm, opts);
  assert.equal(good.divergence, null, JSON.stringify(good.divergence));
  assert.deepEqual(good.sessionUnproven, []);
  assert.ok(t.steps.every((st) => st.session?.proof && JSON.parse(st.session.value).modules[0] === 'tictactoe'));
  const lie = async (edit) => {
    const bad = structuredClone(t);
    edit(bad.steps[2]);
    const r = await verifyTranscript(bad, wasm, opts);
    return [r.divergence?.index, r.divergence?.field];
  };
  assert.deepEqual(await lie((st) => { st.session.value = st.session.value.replace('"cap":"100"', '"cap":"900"'); }), [2, 'session.proof']);
  assert.deepEqual(await lie((st) => { delete st.session; }), [2, 'session']);
  assert.deepEqual(await lie((st) => { st.session = t.steps[0].session; }), [2, 'session.header']);
  assert.deepEqual(await lie((st) => { st.session = { unproven: '\u001b[2Kfine' }; }), [2, 'session']);
  assert.deepEqual(await lie((st) => { st.session = { unproven: 'a\u2028VERIFIED' }; }), [2, 'session']);
  assert.deepEqual(await lie((st) => { st.session = { unproven: 'a\ud800b' }; }), [2, 'session']);
  // A fee spelled otherwise hashes the same in the receipt; the cap check refuses to read it.
  assert.deepEqual(await lie((st) => { st.receipt.fee = '0x0'; }), [2, 'receipt']);
  const withheld = structuredClone(t);
  withheld.steps[2].session = { unproven: 'the node did not execute that block' };
  const reported = await verifyTranscript(withheld, wasm, opts);
  assert.equal(reported.ok, true, JSON.stringify(reported.divergence));
  assert.deepEqual(reported.sessionUnproven, [{ step: 2, why: 'the node did not execute that block' }]);

  const list = await chain.sessions(alice.address);
  assert.deepEqual(list.sessions.map((s) => [s.key, s.id, s.cap, s.spent, s.active]), [[sa.address, 1, '100', '100', true]]);

  // Over the cap: the op fails in its receipt (the nonce is used), nothing moves.
  const over = await sa.sendAndWait('tictactoe', { kind: 'create', stake: '1' });
  assert.equal(over.ok, false);
  assert.match(over.error, /^invalid: session cap: this transaction would move 1 GOLD base units/);

  // Outside the scope: refused at admission with the fixed text.
  await assert.rejects(sb.send('mnk', { kind: 'create', stake: '1' }), (e) => {
    assert.ok(e instanceof ChainError);
    assert.equal(e.code, 'session_refused');
    assert.equal(e.status, 403);
    assert.equal(e.message, "session: module mnk is not in the session's scope (tictactoe)");
    return true;
  });

  // Revoked: refused at once.
  const revoked = await chain.waitForReceipt(await chain.revokeSession(bob, sb));
  assert.equal(revoked.ok, true, revoked.error);
  await assert.rejects(kept.send('tictactoe', { kind: 'create', stake: '1' }), (e) => {
    assert.equal(e.code, 'session_refused');
    assert.equal(e.message, `session: ${sb.address} has no session ${sb.id} for ${bob.address} (never authorized, revoked or replaced)`);
    return true;
  });
  assert.deepEqual((await chain.sessions(bob.address)).sessions, []);
});
