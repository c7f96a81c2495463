// channel.test.js: Channel, Rules and Rps against a real node (testkit/node.js) running the
// channel, moveboard and rps_rules modules built from this repository and deployed by
// transactions: a whole RPS game through the move board, settled by history and withdrawn with
// the balances checked; every kind of bad move refused with its code (forged, out of turn, out of
// order, illegal, tampered); a position signed already is re-sent, never signed again, also
// after a reload from the store, and every post finds the move (and the salt) in the store
// already; a stalled player challenged and forfeiting; an equivocation found and proved; the rules
// loader's refusals and the lobby list.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startNode } from '../testkit/node.js';
import { buildModule, deploy, CHANNEL_MODULES } from '../testkit/modules.js';
import {
  Chain, Key, Channel, ChannelError, Rules, RulesError, Rps, memoryStore, rpsCommitment, rpsReveal, stateHash,
} from '../src/index.js';

let node;
let chain;
const STAKE = '100';
const WINDOW = 5;

before(async () => {
  node = await startNode({ blockIntervalMs: 200 });
  chain = new Chain(node.url);
  await deploy(chain, CHANNEL_MODULES);
});
after(async () => { await node?.dispose(); });

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function until(what, fn, timeoutMs = 30000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    assert.ok(Date.now() < end, `timed out waiting for ${what}`);
    await sleep(50);
  }
}

async function funded() {
  const k = Key.generate();
  const r = await chain.waitForReceipt(await chain.send(k, { type: 'faucet', token: 'GOLD' }));
  assert.equal(r.ok, true);
  return k;
}

const gold = async (a) => (await chain.account(a)).balances.GOLD ?? '0';

/** Alice offers, Bob joins: both channels loaded (each with its own store) and listening. */
async function openGame(alice, bob) {
  const { id, receipt } = await Channel.offer(chain, alice, { rules: 'rps_rules', stake: STAKE, window: WINDOW });
  assert.match(id, /^[0-9a-f]{16}$/);
  const joined = await Channel.join(chain, bob, id);
  assert.equal(joined.id, id);
  const from = receipt.height;
  const a = await Channel.open(chain, alice, id, { store: memoryStore(), fromHeight: from });
  const b = await Channel.open(chain, bob, id, { store: memoryStore(), fromHeight: from });
  const subs = [await a.listen(), await b.listen()];
  return { id, a, b, close: () => subs.forEach((s) => s.close()) };
}

test('RPS through the move board: commit, reveal, settle by history, withdraw after the window', async () => {
  const alice = await funded();
  const bob = await funded();
  const { id, a, b, close } = await openGame(alice, bob);
  try {
    assert.deepEqual([a.seat, b.seat], [0, 1]);
    assert.deepEqual(a.domain, { chain: (await chain.status()).genesis_hash, module: 'channel' });
    assert.equal(a.stateHash, '70946541b8f05c3fd84f12ed1bbcbc38165cad85157d1a0a2d21ffa0b13b9f37');
    assert.equal(await gold('module:channel'), String(2 * Number(STAKE)));
    const ra = new Rps(a);
    const rb = new Rps(b);
    assert.equal(ra.phase, 'commit');
    await assert.rejects(rb.commit(0), (e) => e instanceof ChannelError && e.code === 'not_your_turn');

    const posted = await ra.commit(1); // paper
    assert.equal(posted.receipt.ok, true);
    assert.equal(posted.resent, false);
    // The salt was kept in alice's store with her choice.
    const kept = a.getData('rps');
    assert.equal(kept.choice, 1);
    assert.equal(posted.move.data, Buffer.from(rpsCommitment(1, Buffer.from(kept.salt, 'hex'))).toString('hex'));
    await until('bob sees the commit', () => b.n === 1);
    await rb.commit(0); // rock
    await until('alice sees both commits', () => a.n === 2);
    assert.equal(ra.phase, 'reveal');
    assert.equal(await rb.step(), false, 'bob reveals after alice');
    assert.equal(await ra.step(), true);
    await until('bob sees alice reveal', () => b.n === 3);
    assert.equal(await rb.step(), true);
    await until('alice sees bob reveal', () => a.n === 4);
    for (const c of [a, b]) {
      assert.equal(c.over, true);
      assert.equal(c.winner, 0);
      assert.equal(c.stateHash, stateHash(c.state));
    }
    assert.deepEqual(ra.result(), { choices: [1, 0], over: true, winner: 0 });
    assert.equal(a.stateHash, b.stateHash);
    await assert.rejects(ra.commit(2), (e) => e.code === 'already_signed');

    const settled = await b.settle(); // anyone may settle; the loser's client does too
    const g = await a.refresh();
    assert.equal(g.status, 'concluding');
    assert.deepEqual([g.outcome.winner, g.outcome.how], [0, 'history']);
    assert.equal(g.outcome.final_at, settled.height + WINDOW);
    await assert.rejects(a.withdraw(), (e) => e.code === 'refused' && /final at height/.test(e.message));
    await until('the window passes', async () => (await chain.status()).height + 1 >= g.outcome.final_at, 30000);
    await a.withdraw();
    assert.equal(await gold(alice.address), String(100000 - 100 + 200 - 0));
    assert.equal(await gold(bob.address), String(100000 - 100));
    assert.equal(await gold('module:channel'), '0');
    await assert.rejects(b.withdraw(), (e) => e.code === 'refused' && /paid out already/.test(e.message));
    assert.equal((await a.refresh()).paid, true);
    assert.equal(id, g.id);
  } finally {
    close();
  }
});

test('forged, out-of-turn, out-of-order, illegal and tampered moves are refused with their codes', async () => {
  const alice = await funded();
  const bob = await funded();
  const carol = Key.generate();
  const { a, b, close } = await openGame(alice, bob);
  try {
    const salt = new Uint8Array(32).fill(5);
    const commit = rpsCommitment(2, salt);
    const prev = a.stateHash;
    const sign = (k, n, mover, data) => ({ n, data: Buffer.from(data).toString('hex'), sig: k.signMessage(b.moveText(n, prev, mover, data)) });
    const refused = async (move, code) => {
      await assert.rejects(b.receive(move), (e) => {
        assert.ok(e instanceof ChannelError, String(e));
        assert.equal(e.code, code, e.message);
        return true;
      });
      assert.equal(b.n, 0, 'nothing applied');
    };
    await refused(sign(carol, 0, alice.address, commit), 'bad_signature'); // a stranger's key
    await refused(sign(bob, 0, bob.address, commit), 'wrong_mover'); // seat 1 signing move 0
    await refused(sign(alice, 1, alice.address, commit), 'out_of_order');
    await refused(sign(alice, 0, alice.address, commit.slice(0, 31)), 'illegal'); // a 31-byte commit
    const good = sign(alice, 0, alice.address, commit);
    await refused({ ...good, data: Buffer.from(rpsCommitment(1, salt)).toString('hex') }, 'bad_signature');
    await refused('{"n":0}', 'malformed');
    await assert.rejects(b.play(commit), (e) => e.code === 'not_your_turn');
    await refused('x'.repeat(9000), 'too_large');
    // Junk on the move board under this game is read and refused without harm.
    const junk = await chain.send(carol, { type: 'game', game: 'moveboard', op: { kind: 'post', game: b.game, type: 1, payload: JSON.stringify(sign(carol, 0, alice.address, commit)) } });
    await chain.waitForReceipt(junk);
    assert.deepEqual(await b.receive(good), { status: 'applied', move: good });
    assert.deepEqual(await b.receive(good), { status: 'known' });
    assert.equal(b.n, 1);
    // Playing out of turn locally.
    await assert.rejects(b.play(rpsReveal(0, salt)), (e) => e.code === 'illegal');
    const outsider = await Channel.open(chain, carol, b.game, { store: memoryStore() });
    assert.equal(outsider.seat, null);
    await assert.rejects(outsider.play(commit), (e) => e.code === 'not_a_player');
  } finally {
    close();
  }
});

test('a signed position is re-sent, never signed again, also after a reload from the store', async () => {
  const alice = await funded();
  const bob = await funded();
  const game = await openGame(alice, bob);
  const { b, close } = game;
  try {
    // Alice's client on a Chain that checks, at every post, that the store holds the move already.
    const store = memoryStore();
    const spy = new Chain(node.url);
    let checked = 0;
    spy.send = async (k, action) => {
      if (action.game === 'moveboard') {
        const { sig } = JSON.parse(action.op.payload);
        const kept = JSON.parse(await store.get(a.storeKey()));
        assert.ok(Object.values(kept.mine).some((m) => m.sig === sig), 'posted before it was kept');
        assert.ok(kept.app.rps && kept.app.rps.salt, 'the salt is kept before the commit leaves');
        checked += 1;
      }
      return Chain.prototype.send.call(spy, k, action);
    };
    const a = await Channel.open(spy, alice, game.id, { store });
    const first = await new Rps(a).commit(2);
    const again = await new Rps(a).commit(2);
    assert.equal(again.resent, true);
    assert.deepEqual(again.move, first.move);
    assert.notEqual(again.txid, first.txid, 'posted once more');
    await assert.rejects(new Rps(a).commit(0), (e) => e.code === 'already_signed' && /scissors already/.test(e.message));
    await assert.rejects(a.play(rpsCommitment(0, new Uint8Array(32))), (e) => e.code === 'already_signed' && e.move.sig === first.move.sig);
    // A reload: a new Channel on the same store restores the move and the salt.
    const reloaded = await Channel.open(spy, alice, a.game, { store });
    assert.equal(reloaded.n, 1);
    assert.deepEqual(reloaded.moves[0], first.move);
    const third = await new Rps(reloaded).commit(2);
    assert.equal(third.resent, true);
    assert.equal(third.move.sig, first.move.sig);
    // The opponent received the one signed commit, however often it came.
    await until('bob has the commit', () => b.n === 1);
    assert.deepEqual(b.moves[0], first.move);
    assert.equal(b.evidence, null);
    assert.equal(checked, 5, 'every post was checked');
  } finally {
    close();
  }
});

test('a staller is challenged, answers once, then forfeits; an equivocation is proved', async () => {
  const alice = await funded();
  const bob = await funded();
  const { a, b, close } = await openGame(alice, bob);
  try {
    await new Rps(a).commit(1);
    await until('bob has the commit', () => b.n === 1);
    await assert.rejects(b.challenge(), (e) => e.code === 'not_your_turn');
    const ch = await a.challenge();
    let g = await b.refresh();
    assert.equal(g.status, 'challenged');
    assert.deepEqual([g.challenge.due, g.challenge.moves, g.challenge.deadline], [1, 1, ch.height + WINDOW]);
    // Bob answers by a respond op; alice learns his move from the op itself.
    await new Rps(b).commit(0);
    await b.respond();
    await until('alice has bob\'s commit', () => a.n === 2);
    g = await a.refresh();
    assert.equal(g.challenge.due, 0);
    // Now alice stalls: her reveal is due; bob claims after the deadline.
    await assert.rejects(b.claimForfeit(), (e) => e.code === 'refused' && /may answer until height/.test(e.message));
    await until('the deadline passes', async () => (await chain.status()).height > g.challenge.deadline);
    await b.claimForfeit();
    g = await b.refresh();
    assert.deepEqual([g.status, g.outcome.winner, g.outcome.how], ['settled', 1, 'forfeit']);
    await b.withdraw();
    assert.equal(await gold(bob.address), String(100000 + 100));
  } finally {
    close();
  }

  // Equivocation: carol signs two commits for move 0; dave's client sees both and proves it.
  const carol = await funded();
  const dave = await funded();
  const game = await openGame(carol, dave);
  try {
    const c = game.a;
    const prev = c.stateHash;
    const move = (salt) => {
      const data = rpsCommitment(0, new Uint8Array(32).fill(salt));
      return { n: 0, data: Buffer.from(data).toString('hex'), sig: carol.signMessage(c.moveText(0, prev, carol.address, data)) };
    };
    assert.equal((await game.b.receive(move(1))).status, 'applied');
    assert.deepEqual(await game.b.receive(move(2)), { status: 'equivocation', seat: 0 });
    await game.b.proveEquivocation();
    const g = await game.b.refresh();
    assert.deepEqual([g.status, g.outcome.winner, g.outcome.how], ['settled', 1, 'equivocation']);
  } finally {
    game.close();
  }
});

test('Rules: the rps_rules wasm answers as the Rust rules; the loader refuses what it must', async () => {
  const rules = await Rules.load(buildModule('rps_rules'));
  const s0 = await rules.initialState();
  assert.equal(s0.length, 67);
  assert.deepEqual([await rules.moverAt(0), await rules.moverAt(1), await rules.moverAt(2 ** 40 + 1)], [0, 1, 1]);
  assert.equal(await rules.isOver(s0), false);
  const salt = new Uint8Array(32).fill(3);
  assert.equal(await rules.validateMove(s0, 0, 0, rpsCommitment(0, salt)), true);
  assert.equal(await rules.validateMove(s0, 0, 1, rpsCommitment(0, salt)), false);
  assert.equal(await rules.validateMove(s0, 0, 7, rpsCommitment(0, salt)), false);
  assert.equal(await rules.validateMove(s0, 0, 0, new Uint8Array(5)), false);
  await assert.rejects(rules.applyMove(s0, 0, 0, new Uint8Array(5)), RulesError);
  await assert.rejects(rules.winner(s0), RulesError);
  let s = s0;
  const moves = [rpsCommitment(2, salt), rpsCommitment(1, salt), rpsReveal(2, salt), rpsReveal(1, salt)];
  for (const [n, m] of moves.entries()) s = await rules.applyMove(s, n, n % 2, m);
  assert.equal(await rules.isOver(s), true);
  assert.equal(await rules.winner(s), 0, 'scissors beat paper');
  // Many calls, each on a fresh instance (as on the chain): answers stay the same.
  for (let i = 0; i < 2000; i++) assert.equal(await rules.validateMove(s0, 0, 0, moves[0]), true);
  assert.equal(rules.isolated, true);
  await assert.rejects(Rules.load(buildModule('rps_rules'), { maxBytes: 1000 }), (e) => e instanceof RulesError && /limit is 1000/.test(e.message));
  await assert.rejects(Rules.load(buildModule('channel')), (e) => e instanceof RulesError && /import/i.test(e.message));
  await assert.rejects(Rules.load(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0])), (e) => e instanceof RulesError && /rules module has no/.test(e.message));
  await assert.rejects(Rules.load(new Uint8Array(16)), RulesError);
  // A module that is not deployed.
  const k = Key.generate();
  await assert.rejects(Channel.open(new Chain(node.url), k, 'ffffffffffffffff', { store: memoryStore() }), (e) => e.code === 'not_found');
  // The lobby list: the open offer is listed with its rules; a cancelled one is not.
  const creator = await funded();
  const { id } = await Channel.offer(chain, creator, { rules: 'rps_rules', stake: '7', window: 5 });
  const gone = await Channel.offer(chain, creator, { rules: 'rps_rules', stake: '8', window: 5 });
  await Channel.cancel(chain, creator, gone.id);
  const { count, offers } = await Channel.offers(chain, { rules: 'rps_rules', status: 'open' });
  assert.equal(count, parseInt(gone.id, 16) + 1);
  assert.equal(await Channel.offerCount(chain, { hint: count - 3 }), count);
  assert.ok(offers.some((o) => o.id === id && o.stake === '7'));
  assert.ok(!offers.some((o) => o.id === gone.id));
  await assert.rejects(Channel.offer(chain, creator, { rules: 'moveboard', stake: '1', window: 5 }), (e) => e.code === 'refused' && /not usable/.test(e.message));
});

test('two tabs on one store: the second never signs another commit nor drops the salt the first kept', async () => {
  const alice = await funded();
  const bob = await funded();
  const game = await openGame(alice, bob);
  const { b, close } = game;
  try {
    // Two tabs of alice's browser: one localStorage, both opened before either played.
    const store = memoryStore();
    const tab1 = await Channel.open(chain, alice, game.id, { store });
    const tab2 = await Channel.open(chain, alice, game.id, { store });
    const first = await new Rps(tab1).commit(0); // rock, in tab 1
    // Tab 2 has not seen it: choosing paper there must not sign a second commit.
    await assert.rejects(new Rps(tab2).commit(1), (e) => e.code === 'already_signed' && /rock already/.test(e.message));
    assert.equal(tab2.n, 1);
    assert.deepEqual(tab2.moves[0], first.move);
    await assert.rejects(tab2.play(rpsCommitment(2, new Uint8Array(32))), (e) => e.code === 'already_signed');
    // Tab 2 writing its record (a block read) keeps tab 1's salt.
    await tab2.scanBlock({ height: 1, txs: [] });
    await until('bob has the commit', () => b.n === 1);
    assert.equal(b.evidence, null, 'no second commit was ever signed');
    await new Rps(b).commit(2);
    // A reload after both tabs wrote: the salt is there, the reveal opens the commit.
    const reloaded = await Channel.open(chain, alice, game.id, { store });
    const sub = await reloaded.listen();
    await until('the reload sees bob\'s commit', () => reloaded.n === 2);
    sub.close();
    const r = new Rps(reloaded);
    assert.equal(r.myChoice, 0);
    assert.equal(await r.step(), true);
    assert.equal(reloaded.n, 3);
  } finally {
    close();
  }
});

test('hostile posts: a move replayed from another game, over another position, far ahead, a reveal that opens nothing, an early move buried under forgeries', async () => {
  const alice = await funded();
  const bob = await funded();
  const g1 = await openGame(alice, bob);
  const g2 = await openGame(alice, bob);
  try {
    const salt = new Uint8Array(32).fill(7);
    const signFor = (c, k, n, prev, mover, data) => ({ n, data: Buffer.from(data).toString('hex'), sig: k.signMessage(c.moveText(n, prev, mover, data)) });
    const code = async (c, move) => c.receive(move).then(() => 'applied', (e) => e.code);
    // Alice's commit in game 1, sent to game 2: the text names the game.
    const c0 = signFor(g1.b, alice, 0, g1.b.stateHash, alice.address, rpsCommitment(0, salt));
    assert.equal(await code(g2.b, c0), 'bad_signature');
    // A move signed over a state hash of another position.
    assert.equal(await code(g1.b, signFor(g1.b, alice, 0, stateHash(new Uint8Array(67).fill(1)), alice.address, rpsCommitment(0, salt))), 'bad_signature');
    // Far ahead: refused and not kept.
    assert.equal(await code(g1.b, { ...c0, n: 2 ** 40 }), 'out_of_order');
    assert.equal(g1.b.pending.size, 0);
    // Both commits, then alice's reveal of another choice: the rules refuse it.
    assert.equal(await code(g1.b, c0), 'applied');
    await new Rps(g1.b).commit(1);
    const bad = signFor(g1.b, alice, 2, g1.b.stateHash, alice.address, rpsReveal(2, salt));
    assert.equal(await code(g1.b, bad), 'illegal');
    // Alice's real reveal arrives early (before bob's commit reached her opponent's client in
    // game 2 terms: here game 2's bob has not seen move 0 yet), then forgeries for the same
    // number: the real one still applies in its turn.
    const h0 = g2.a.stateHash;
    const m0 = signFor(g2.a, alice, 0, h0, alice.address, rpsCommitment(2, salt));
    const a2 = await Channel.open(chain, alice, g2.id, { store: memoryStore() });
    await a2.receive(m0);
    const b2 = await Channel.open(chain, bob, g2.id, { store: memoryStore() });
    await b2.receive(m0);
    const m1 = await b2.play(rpsCommitment(0, salt), { wait: false });
    await a2.receive(m1.move);
    const m2 = signFor(a2, alice, 2, a2.stateHash, alice.address, rpsReveal(2, salt));
    const fresh = await Channel.open(chain, bob, g2.id, { store: memoryStore() });
    assert.equal(await code(fresh, m2), 'out_of_order');
    const carol = Key.generate();
    for (let i = 0; i < 6; i++) assert.equal(await code(fresh, { ...m2, sig: carol.signMessage(`junk ${i}`) }), 'out_of_order');
    assert.equal(await code(fresh, m0), 'applied');
    assert.equal(await code(fresh, m1.move), 'applied');
    assert.equal(fresh.n, 3, 'the early reveal applied in its turn');
    assert.deepEqual(fresh.moves[2], m2);
  } finally {
    g1.close();
    g2.close();
  }
});

test('a move whose post failed is known as unposted, also after a reload, until it is re-sent', async () => {
  const alice = await funded();
  const bob = await funded();
  const game = await openGame(alice, bob);
  const { b, close } = game;
  try {
    const store = memoryStore();
    const flaky = new Chain(node.url);
    let fail = 1;
    flaky.send = async (k, action) => {
      if (action.game === 'moveboard' && fail > 0) { fail -= 1; throw new Error('network down'); }
      return Chain.prototype.send.call(flaky, k, action);
    };
    const a = await Channel.open(flaky, alice, game.id, { store });
    assert.equal(a.unposted(), null);
    await assert.rejects(new Rps(a).commit(2), /network down/);
    assert.equal(a.n, 1, 'signed and kept');
    assert.deepEqual(a.unposted(), a.moves[0]);
    // A reload still knows it never left.
    const reloaded = await Channel.open(flaky, alice, game.id, { store });
    assert.deepEqual(reloaded.unposted(), a.moves[0]);
    await reloaded.resend();
    assert.equal(reloaded.unposted(), null);
    await until('bob has the commit', () => b.n === 1);
    // Bob's own post is known as sent; seeing it in a block is no news.
    await new Rps(b).commit(0);
    assert.equal(b.unposted(), null);
  } finally {
    close();
  }
});
