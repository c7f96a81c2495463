// channel.test.js: Channel, Rules and Rps against a real node (testkit/node.js, 10 ms blocks and
// the dev clock) running the channel, moveboard and rps_rules modules (from genesis, or built from
// this repository and deployed by transactions when the node lacks them): a whole RPS game through
// the move relay, settled by history and withdrawn once the window passed in block time, with the
// balances checked; the move board as the fallback and the latest move sent again when the
// opponent (re)connects; every kind of bad move refused with its code (forged, out of turn, out of
// order, illegal, tampered); a position signed already is re-sent, never signed again, also
// after a reload from the store; a stalled player challenged and forfeiting after the deadline
// (block time); an equivocation found and proved; the rules loaded by the code hash pinned at the
// offer; genesis rules code played by itself, other code (trap_rules, deployed here) refused at the
// offer and the join unless acceptRulesCode names it; an unstaked game; the escrow policy check;
// the watchtower (answers a challenge through 429s, 503s and a node restart; proves an
// equivocation a challenge reveals).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startNode } from '../testkit/node.js';
import { buildModule, deploy, CHANNEL_MODULES } from '../testkit/modules.js';
import {
  Chain, ChainError, Key, Channel, ChannelError, Rules, RulesError, Rps, MoveRelay, Backoff, memoryStore,
  rpsCommitment, rpsReveal, stateHash, gameTag, relayHelloQuery, rulesCodeRefusal, GENESIS_OWNER,
} from '../src/index.js';
import WebSocket from 'ws';

let node;
let chain;
const STAKE = '100';
const WINDOW_MS = 300000;

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

/** The move board posts of game `id` in blocks `from`..head. */
async function boardPosts(id, from) {
  const posts = [];
  const top = (await chain.status()).height;
  for (let h = from; h <= top; h++) {
    for (const t of (await chain.block(h)).txs ?? []) {
      const action = JSON.parse(t.body).action;
      if (action.type === 'game' && action.game === 'moveboard' && action.op.game === id) posts.push(JSON.parse(action.op.payload));
    }
  }
  return posts;
}

/** Alice offers, Bob joins: both channels loaded (each with its own store) and, unless `listen` is false, listening. */
async function openGame(alice, bob, { stake = STAKE, listen = true } = {}) {
  const { id, receipt } = await Channel.offer(chain, alice, { rules: 'rps_rules', stake, windowMs: WINDOW_MS });
  assert.match(id, /^[0-9a-f]{16}$/);
  const joined = await Channel.join(chain, bob, id);
  assert.equal(joined.id, id);
  const from = receipt.height;
  const a = await Channel.open(chain, alice, id, { store: memoryStore(), fromHeight: from });
  const b = await Channel.open(chain, bob, id, { store: memoryStore(), fromHeight: from });
  const subs = listen ? [await a.listen(), await b.listen()] : [];
  if (listen) await until('both relays connected', () => a.relay?.peers > 0 && b.relay?.peers > 0);
  return { id, a, b, from, close: () => subs.forEach((s) => s.close()) };
}

test('RPS through the move relay: commit, reveal, settle by history, withdraw once the window passed in block time', async () => {
  const alice = await funded();
  const bob = await funded();
  const escrowBefore = BigInt(await gold('module:channel'));
  const { id, a, b, from, close } = await openGame(alice, bob);
  try {
    assert.deepEqual([a.seat, b.seat], [0, 1]);
    assert.deepEqual(a.domain, { chain: (await chain.status()).genesis_hash, module: 'channel' });
    // The game tag is the game's, the initial state rps_rules' for it (99 bytes, tag first).
    assert.equal(Buffer.from(a.tag).toString('hex'), a.record.tag);
    assert.deepEqual(a.tag, gameTag(a.domain, id));
    assert.equal(a.state.length, 99);
    assert.deepEqual(a.state.slice(0, 32), a.tag);
    assert.equal(a.rulesHash, (await chain.module('rps_rules')).code_hash);
    assert.equal(BigInt(await gold('module:channel')) - escrowBefore, 2n * BigInt(STAKE));
    const ra = new Rps(a);
    const rb = new Rps(b);
    assert.equal(ra.phase, 'commit');
    await assert.rejects(rb.commit(0), (e) => e instanceof ChannelError && e.code === 'not_your_turn');

    const posted = await ra.commit(1); // paper
    assert.equal(posted.via, 'relay');
    assert.equal(posted.to, 1);
    assert.equal(posted.resent, false);
    // The salt was kept in alice's store with her choice; the commitment binds the game and seat 0.
    const kept = a.getData('rps');
    assert.equal(kept.choice, 1);
    assert.equal(posted.move.data, Buffer.from(rpsCommitment(a.tag, 0, 1, Buffer.from(kept.salt, 'hex'))).toString('hex'));
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
    // Every move went through the relay: nothing of this game is on the move board.
    assert.deepEqual(await boardPosts(id, from), []);

    const settled = await b.settle(); // anyone may settle; the loser's client does too
    const settledAt = (await chain.block(settled.height)).header.time_ms;
    let g = await a.refresh();
    assert.equal(g.status, 'concluding');
    assert.deepEqual([g.outcome.winner, g.outcome.how], [0, 'history']);
    assert.equal(g.outcome.final_at_ms, settledAt + WINDOW_MS);
    assert.equal(g.final, false);
    assert.equal(g.final_state_hash, null);
    await assert.rejects(a.withdraw(), (e) => e.code === 'refused' && /final at block time \d+/.test(e.message));
    // The window passes in block time: the dev clock moves, no waiting.
    await node.advanceClock(WINDOW_MS);
    await a.withdraw();
    await a.blockTime();
    g = await a.refresh();
    assert.deepEqual([g.final, g.final_state_hash], [true, a.stateHash]);
    assert.equal(await gold(alice.address), String(100000 - 100 + 200 - 0));
    assert.equal(await gold(bob.address), String(100000 - 100));
    assert.equal(BigInt(await gold('module:channel')), escrowBefore);
    await assert.rejects(b.withdraw(), (e) => e.code === 'refused' && /paid out already/.test(e.message));
    assert.equal(g.window_ms, WINDOW_MS);
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
    const commit = rpsCommitment(b.tag, 0, 2, salt);
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
    await refused({ ...good, data: Buffer.from(rpsCommitment(b.tag, 0, 1, salt)).toString('hex') }, 'bad_signature');
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
    await assert.rejects(a.play(rpsCommitment(a.tag, 0, 0, new Uint8Array(32))), (e) => e.code === 'already_signed' && e.move.sig === first.move.sig);
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
    const chAt = (await chain.block(ch.height)).header.time_ms;
    let g = await b.refresh();
    assert.equal(g.status, 'challenged');
    assert.deepEqual([g.challenge.due, g.challenge.moves, g.challenge.deadline_ms], [1, 1, chAt + WINDOW_MS]);
    // Bob answers by a respond op; alice learns his move from the op itself.
    await new Rps(b).commit(0);
    await b.respond();
    await until('alice has bob\'s commit', () => a.n === 2);
    g = await a.refresh();
    assert.equal(g.challenge.due, 0);
    // Now alice stalls: her reveal is due; bob claims after the deadline.
    await assert.rejects(b.claimForfeit(), (e) => e.code === 'refused' && /may answer until block time \d+/.test(e.message));
    // Transactions do not move a deadline: only block time does.
    for (let i = 0; i < 5; i++) await chain.waitForReceipt(await chain.send(Key.generate(), { type: 'faucet', token: 'GOLD' }));
    await assert.rejects(b.claimForfeit(), (e) => e.code === 'refused' && /may answer until block time/.test(e.message));
    await node.advanceClock(WINDOW_MS + 1);
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
      const data = rpsCommitment(c.tag, 0, 0, new Uint8Array(32).fill(salt));
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
  const tag = new Uint8Array(32).fill(3);
  const s0 = await rules.initialState(tag);
  assert.equal(s0.length, 99);
  assert.deepEqual(s0.slice(0, 32), tag);
  await assert.rejects(rules.initialState(new Uint8Array(31)), TypeError);
  assert.deepEqual([await rules.moverAt(0), await rules.moverAt(1), await rules.moverAt(2 ** 40 + 1)], [0, 1, 1]);
  assert.equal(await rules.isOver(s0), false);
  const salt = new Uint8Array(32).fill(3);
  assert.equal(await rules.validateMove(s0, 0, 0, rpsCommitment(tag, 0, 0, salt)), true);
  assert.equal(await rules.validateMove(s0, 0, 1, rpsCommitment(tag, 0, 0, salt)), false);
  assert.equal(await rules.validateMove(s0, 0, 7, rpsCommitment(tag, 0, 0, salt)), false);
  assert.equal(await rules.validateMove(s0, 0, 0, new Uint8Array(5)), false);
  await assert.rejects(rules.applyMove(s0, 0, 0, new Uint8Array(5)), RulesError);
  await assert.rejects(rules.winner(s0), RulesError);
  let s = s0;
  const moves = [rpsCommitment(tag, 0, 2, salt), rpsCommitment(tag, 1, 1, salt), rpsReveal(2, salt), rpsReveal(1, salt)];
  for (const [n, m] of moves.entries()) {
    assert.equal(await rules.validateMove(s, n, n % 2, m), true, `move ${n}`);
    s = await rules.applyMove(s, n, n % 2, m);
  }
  assert.equal(await rules.isOver(s), true);
  assert.equal(await rules.winner(s), 0, 'scissors beat paper');
  // A commitment copied from the other seat cannot be opened by the copier (issue 23).
  let copied = s0;
  const copy = [moves[0], moves[0], rpsReveal(2, salt)];
  for (const [n, m] of copy.entries()) copied = await rules.applyMove(copied, n, n % 2, m);
  assert.equal(await rules.validateMove(copied, 3, 1, rpsReveal(2, salt)), false);
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
  const { id } = await Channel.offer(chain, creator, { rules: 'rps_rules', stake: '7', windowMs: WINDOW_MS });
  const gone = await Channel.offer(chain, creator, { rules: 'rps_rules', stake: '8' });
  assert.equal((await chain.game('channel', { offer: gone.id })).window_ms, 600000, 'the default window: 10 minutes');
  await Channel.cancel(chain, creator, gone.id);
  const { count, offers } = await Channel.offers(chain, { rules: 'rps_rules', status: 'open' });
  assert.equal(count, parseInt(gone.id, 16) + 1);
  assert.equal(await Channel.offerCount(chain, { hint: count - 3 }), count);
  assert.ok(offers.some((o) => o.id === id && o.stake === '7'));
  assert.ok(!offers.some((o) => o.id === gone.id));
  await assert.rejects(Channel.offer(chain, creator, { rules: 'moveboard', stake: '1' }), (e) => e.code === 'refused' && /not usable/.test(e.message));
  for (const windowMs of [299999, 259200001, 600000.5]) {
    await assert.rejects(Channel.offer(chain, creator, { rules: 'rps_rules', stake: '1', windowMs }), (e) => e.code === 'bad_window');
  }
  // Rules named by code hash alone: the offer records that hash.
  const rpsCode = (await chain.module('rps_rules')).code_hash;
  const byHash = await Channel.offer(chain, creator, { rulesCode: rpsCode, stake: '0' });
  const rec = await chain.game('channel', { offer: byHash.id });
  assert.deepEqual([rec.rules, rec.rules_code], [null, rpsCode]);
  // That code is a genesis module's: joined without naming it (docs/channels.md, "Rules that trap
  // when their author loses").
  const joiner = await funded();
  await Channel.join(chain, joiner, byHash.id);
});

test('rules code no genesis module runs: offer and join refuse it in one fixed line, nothing sent, unless acceptRulesCode names it; trap_rules traps where its author loses', async () => {
  // A chain whose sends are recorded: what a refusal must not have sent.
  const sent = [];
  const c = new Chain(node.url);
  c.send = async (k, action) => { sent.push(action); return Chain.prototype.send.call(c, k, action); };
  const author = await funded();
  const joiner = await funded();
  // The author deploys trap_rules (rock-paper-scissors that traps on the move making seat 0 lose).
  const wasm = buildModule('examples/trap_rules');
  const hash = Buffer.from(await crypto.subtle.digest('SHA-256', wasm)).toString('hex');
  const r = await chain.waitForReceipt(await chain.send(author, { type: 'deploy', module: 'trap_rules', code: Buffer.from(wasm).toString('base64') }), { timeoutMs: 120000 });
  assert.equal(r.ok, true, r.error);
  assert.equal((await chain.module('trap_rules')).owner, author.address);
  const what = `the code module trap_rules runs (owner ${author.address})`;
  const tail = `not the code of a genesis module: such rules may trap when their author loses, and you would lose by forfeit; nothing was sent (read that code, then pass acceptRulesCode: '${hash}' to play it anyway)`;
  const unknown = (text) => (e) => {
    assert.ok(e instanceof ChannelError, String(e));
    assert.equal(e.code, 'unknown_rules');
    assert.equal(e.rulesCode, hash);
    assert.equal(e.message, text);
    return true;
  };
  // Offers: by module id or by hash alone, the code is refused until acceptRulesCode names it.
  const offerText = `refusing to offer rules code ${hash}: it is ${what}, ${tail}`;
  await assert.rejects(Channel.offer(c, author, { rules: 'trap_rules', stake: '5', windowMs: WINDOW_MS }), unknown(offerText));
  await assert.rejects(Channel.offer(c, author, { rulesCode: hash, stake: '5', windowMs: WINDOW_MS }), unknown(offerText));
  await assert.rejects(Channel.offer(c, author, { rules: 'trap_rules', stake: '5', acceptRulesCode: 'ab'.repeat(32) }), unknown(offerText));
  await assert.rejects(Channel.offer(c, author, { rules: 'trap_rules', stake: '5', acceptRulesCode: 'ab' }), /acceptRulesCode must be 64 hex digits/);
  assert.deepEqual(sent, [], 'nothing was sent');
  const { id } = await Channel.offer(c, author, { rules: 'trap_rules', stake: '5', windowMs: WINDOW_MS, acceptRulesCode: hash.toUpperCase() });
  assert.equal((await chain.game('channel', { offer: id })).rules_code, hash);
  // Joins: refused, nothing sent (no stake escrowed), unless acceptRulesCode is that exact hash.
  sent.length = 0;
  const before = await gold(joiner.address);
  const joinText = `refusing to join offer ${id}: its rules code ${hash} is ${what}, ${tail}`;
  await assert.rejects(Channel.join(c, joiner, id), unknown(joinText));
  await assert.rejects(Channel.join(c, joiner, id, { acceptRulesCode: 'cd'.repeat(32) }), unknown(joinText));
  assert.deepEqual(sent, []);
  assert.equal(await gold(joiner.address), before);
  assert.equal((await chain.game('channel', { offer: id })).status, 'open');
  await Channel.join(c, joiner, id, { acceptRulesCode: hash });
  assert.equal((await chain.game('channel', { offer: id })).status, 'filled');
  // The refusal's text alone, from a module list: genesis code by hash whatever names it; other
  // code described by the module running it (the offer's first), or by none.
  const g = (await chain.module('rps_rules')).code_hash;
  assert.equal((await chain.module('rps_rules')).owner, GENESIS_OWNER);
  const modules = [
    { id: 'copy', code_hash: g, owner: 'yBob' }, { id: 'rps_rules', code_hash: g, owner: GENESIS_OWNER },
    { id: 't1', code_hash: hash, owner: 'yEve' }, { id: 't2', code_hash: hash, owner: 'yMal' },
  ];
  assert.equal(await rulesCodeRefusal(c, g.toUpperCase(), { offer: id, rules: 'copy', modules }), null);
  assert.equal(await rulesCodeRefusal(c, g), null, 'the node\'s list when none is given');
  assert.equal(await rulesCodeRefusal(c, hash, { acceptRulesCode: hash, modules }), null);
  assert.equal(await rulesCodeRefusal(c, hash, { offer: id, rules: 't2', modules }),
    `refusing to join offer ${id}: its rules code ${hash} is the code module t2 runs (owner yMal) and 1 other module(s), ${tail}`);
  assert.equal(await rulesCodeRefusal(c, 'ef'.repeat(32), { modules: modules.slice(0, 1) }),
    `refusing to offer rules code ${'ef'.repeat(32)}: it is code no module runs now, ${tail.replace(hash, 'ef'.repeat(32))}`);
  // The trap itself, run here: seat 1's winning reveal traps; seat 0's win does not.
  const rules = await Rules.load(wasm);
  const tag = new Uint8Array(32).fill(5);
  const [salt0, salt1] = [new Uint8Array(32).fill(1), new Uint8Array(32).fill(2)];
  const play = async (c0, c1) => {
    let s = await rules.initialState(tag);
    const moves = [rpsCommitment(tag, 0, c0, salt0), rpsCommitment(tag, 1, c1, salt1), rpsReveal(c0, salt0), rpsReveal(c1, salt1)];
    for (const [n, m] of moves.entries()) {
      assert.equal(await rules.validateMove(s, n, n % 2, m), true, `move ${n}`);
      s = await rules.applyMove(s, n, n % 2, m);
    }
    return rules.winner(s);
  };
  assert.equal(await play(1, 0), 0, 'paper beats rock: seat 0 wins');
  await assert.rejects(play(0, 1), RulesError, 'seat 1 would win: the rules trap');
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
    await assert.rejects(tab2.play(rpsCommitment(tab2.tag, 0, 2, new Uint8Array(32))), (e) => e.code === 'already_signed');
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
    const c0 = signFor(g1.b, alice, 0, g1.b.stateHash, alice.address, rpsCommitment(g1.b.tag, 0, 0, salt));
    assert.equal(await code(g2.b, c0), 'bad_signature');
    // A move signed over a state hash of another position.
    assert.equal(await code(g1.b, signFor(g1.b, alice, 0, stateHash(new Uint8Array(99).fill(1)), alice.address, rpsCommitment(g1.b.tag, 0, 0, salt))), 'bad_signature');
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
    const m0 = signFor(g2.a, alice, 0, h0, alice.address, rpsCommitment(g2.a.tag, 0, 2, salt));
    const a2 = await Channel.open(chain, alice, g2.id, { store: memoryStore() });
    await a2.receive(m0);
    const b2 = await Channel.open(chain, bob, g2.id, { store: memoryStore() });
    await b2.receive(m0);
    const m1 = await b2.play(rpsCommitment(b2.tag, 1, 0, salt), { wait: false });
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

test('the move board is the fallback: an opponent not on the relay gets the move from the board; one who connects gets the latest move again through the relay', async () => {
  const alice = await funded();
  const bob = await funded();
  const { id, a, b, from } = await openGame(alice, bob, { listen: false });
  const subA = await a.listen();
  let subB;
  const observers = [];
  try {
    await until('alice on the relay', () => a.relay?.open);
    assert.equal(a.relay.peers, 0);
    // Issue 41: another connection of alice's own seat (her other tab, a bare relay client here)
    // is no peer of hers: she still sees nobody, and her move still goes to the board.
    const aliceTab = new MoveRelay(chain, id, { key: alice, seat: 0, genesis: a.domain.chain });
    observers.push(aliceTab);
    await until('alice\'s other tab on the relay', () => aliceTab.open);
    await sleep(300);
    assert.equal(a.relay.peers, 0);
    // Bob is not connected: the commit goes to the move board.
    const first = await new Rps(a).commit(0);
    assert.equal(first.via, 'board');
    assert.equal(first.receipt.ok, true);
    assert.deepEqual((await boardPosts(id, from)).map((m) => m.sig), [first.move.sig]);
    // Bob comes: he reads the board from the game's start, and alice's relay sees him arrive and
    // sends her latest move to him again.
    const seen = [];
    subB = await b.listen({ onMove: (r) => seen.push(r.via ?? 'board') });
    await until('bob has the commit', () => b.n === 1);
    await until('alice saw bob connect', () => a.relay.peers === 1);
    // Bob's commit: alice is there, so the relay carries it (to both of her connections) and
    // nothing more reaches the board.
    const second = await new Rps(b).commit(1);
    assert.deepEqual([second.via, second.to], ['relay', 2]);
    await until('alice has bob\'s commit', () => a.n === 2);
    assert.equal((await boardPosts(id, from)).length, 1);
    // Another connection of bob's (his other tab, a bare relay client here): alice sees bob's
    // connections rise and sends her latest signed move again, at once, and it is the one she
    // signed (checked by the node).
    const got = [];
    const observer = new MoveRelay(chain, id, { key: bob, seat: 1, genesis: a.domain.chain, onMove: (m, msg) => got.push({ m, msg }) });
    observers.push(observer);
    await until('alice re-sent her move through the relay', () => got.some((g) => g.m.sig === first.move.sig));
    const resent = got.find((g) => g.m.sig === first.move.sig);
    assert.deepEqual([resent.msg.seat, resent.msg.prev], [0, a.hashes[0]]);
    // The node refuses a move the connection's seat's game key did not sign; the relay answers so
    // and forwards nothing.
    const forged = { n: 2, data: '00'.repeat(33), sig: Key.generate().signMessage('nothing') };
    assert.equal((await observer.send(forged, a.stateHash)).error, 'bad_signature');
    // Alice leaves the relay: bob's reveal… is seat 1's after alice's; alice reveals on the board.
    subA.close();
    await until('bob saw alice leave', () => b.relay.peers === 1); // her other tab is still there
    const reveal = await new Rps(a).reveal();
    assert.equal(reveal.via, 'board', 'no relay without listen');
    await until('bob has alice\'s reveal', () => b.n === 3);
    assert.equal(seen.at(-1), 'board', `bob received through ${seen}`);
  } finally {
    subA.close();
    subB?.close();
    observers.forEach((o) => o.close());
  }
});

test('the relay admits the players only: no hello, a stranger\'s, the other seat\'s, a stale or a used one are refused; the players still get in', async () => {
  const alice = await funded();
  const bob = await funded();
  const { id, a, b, close } = await openGame(alice, bob, { listen: false });
  const genesis = a.domain.chain;
  const base = `${node.url.replace(/^http/, 'ws')}/v1/relay/${id}`;
  /** The node's answer to an upgrade: `{status: 101}` (then closed at once) or `{status, code}`. */
  const upgrade = (url) => new Promise((resolve) => {
    const ws = new WebSocket(url);
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c) => { body += c; });
      res.on('end', () => resolve({ status: res.statusCode, code: JSON.parse(body).error.code }));
    });
    ws.on('open', () => { ws.close(); resolve({ status: 101 }); });
    ws.on('error', () => {});
  });
  const stranger = Key.generate();
  const refused = { status: 403, code: 'bad_hello' };
  try {
    assert.deepEqual(await upgrade(base), { status: 401, code: 'hello_required' });
    for (let i = 0; i < 5; i++) {
      for (const seat of [0, 1]) assert.deepEqual(await upgrade(`${base}?${relayHelloQuery(stranger, genesis, id, seat)}`), refused);
    }
    assert.deepEqual(await upgrade(`${base}?${relayHelloQuery(alice, genesis, id, 1)}`), refused);
    assert.deepEqual(await upgrade(`${base}?${relayHelloQuery(alice, genesis, id, 0, Date.now() - 120000)}`), refused);
    const once = relayHelloQuery(alice, genesis, id, 0);
    assert.deepEqual(await upgrade(`${base}?${once}`), { status: 101 });
    assert.deepEqual(await upgrade(`${base}?${once}`), refused);
    // A stranger's MoveRelay never gets in (it keeps trying with backoff).
    const strangers = [0, 1].map((seat) => new MoveRelay(chain, id, { key: stranger, seat, genesis }));
    await sleep(800);
    assert.deepEqual(strangers.map((r) => r.opens), [0, 0]);
    strangers.forEach((r) => r.close());
    // The players get in, and see each other only.
    const subs = [await a.listen(), await b.listen()];
    await until('both relays connected', () => a.relay?.peers === 1 && b.relay?.peers === 1);
    // A seat holds 4 connections: alice's fifth closes her oldest (4002), which leaves the slot
    // to the newer ones instead of taking it back at once; bob's connection is never touched.
    const closes = [];
    const tabs = [];
    for (let i = 0; i < 4; i++) {
      const tab = new MoveRelay(chain, id, { key: alice, seat: 0, genesis, onClose: (code) => closes.push(code) });
      tabs.push(tab);
      await until(`alice's tab ${i + 2} on the relay`, () => tab.open);
    }
    await until('alice\'s page replaced', () => a.relay.opens === 1 && !a.relay.open);
    await until('bob sees four of alice\'s connections', () => b.relay.peers === 4);
    await sleep(800);
    assert.deepEqual([a.relay.open, a.relay.opens, closes], [false, 1, []]);
    assert.ok(b.relay.open && b.relay.opens === 1, 'bob\'s connection stays');
    tabs.forEach((t) => t.close());
    subs.forEach((sub) => sub.close());
    // An onlooker's Channel (a key of neither seat) opens no relay at all.
    const onlooker = await Channel.open(chain, stranger, id, { store: memoryStore() });
    const sub = await onlooker.listen();
    assert.equal(onlooker.relay, null);
    sub.close();
  } finally {
    close();
  }
});

test('the rules run here are the code pinned at the offer, fetched by hash and checked: never the module\'s current code', async () => {
  const alice = await funded();
  const bob = await funded();
  const { id } = await openGame(alice, bob, { listen: false });
  const asked = [];
  const record = (await chain.game('channel', { game: id }));
  const spying = new Chain(node.url, { fetch: (url, init) => { asked.push(new URL(url).pathname); return fetch(url, init); } });
  const c = await Channel.open(spying, alice, id, { store: memoryStore(), maxRulesBytes: 4 << 20 });
  assert.equal(c.rulesHash, record.rules_code);
  assert.ok(!asked.some((p) => p.startsWith('/v1/modules')), `asked ${asked}`);
  // A node (or a proxy) answering other bytes for the code hash: refused, nothing runs.
  const tampering = new Chain(node.url, {
    fetch: async (url, init) => {
      const r = await fetch(url, init);
      if (!new URL(url).pathname.startsWith('/v1/code/')) return r;
      const bytes = new Uint8Array(await r.arrayBuffer());
      bytes[bytes.length - 1] ^= 1;
      return new Response(bytes, { status: 200 });
    },
  });
  await assert.rejects(tampering.code(record.rules_code), (e) => e instanceof ChainError && e.code === 'bad_answer' && /do not hash/.test(e.message));
  // The game record's pinned hash is what the rules module ran at the offer.
  assert.equal(record.rules_code, (await chain.module('rps_rules')).code_hash);
  assert.equal(record.rules, 'rps_rules');
});

test('an unstaked game (stake 0): played and settled as any other, its result in the standings, nothing to pay', async () => {
  const alice = await funded();
  const bob = await funded();
  const before = [await gold(alice.address), await gold(bob.address)];
  const { a, b, close } = await openGame(alice, bob, { stake: '0' });
  try {
    assert.equal(a.record.stake, '0');
    await new Rps(a).commit(2);
    await until('bob has the commit', () => b.n === 1);
    await new Rps(b).commit(1);
    await until('alice has both', () => a.n === 2);
    await new Rps(a).step();
    await until('bob has the reveal', () => b.n === 3);
    await new Rps(b).step();
    await until('alice has both reveals', () => a.n === 4);
    assert.deepEqual([a.over, a.winner], [true, 0]);
    await a.settle();
    await assert.rejects(a.withdraw(), (e) => e.code === 'refused' && /unstaked: there is nothing to pay/.test(e.message));
    assert.deepEqual(await chain.game('channel', { player: alice.address }), { player: alice.address, wins: 1, losses: 0, draws: 0 });
    assert.deepEqual(await chain.game('channel', { player: bob.address }), { player: bob.address, wins: 0, losses: 1, draws: 0 });
    assert.deepEqual([await gold(alice.address), await gold(bob.address)], before);
  } finally {
    close();
  }
});

test('allowMutable: a stake is never escrowed in a module its owner can change at once, unless the caller says so', async () => {
  const alice = await funded();
  // The channel's record as a node with upgrade policies answers it (this node's record may
  // have no policy yet: that is never refused).
  const withPolicy = (kind, extra = {}) => {
    const c = new Chain(node.url);
    const policy = kind === 'timelocked' ? { kind, delay_ms: extra.delay_ms } : { kind };
    c.module = async (id) => ({ ...(await Chain.prototype.module.call(c, id)), ...(kind ? { policy } : {}), ...(extra.pending ? { pending_upgrade: extra.pending } : {}) });
    const sent = [];
    c.send = async (k, action) => { sent.push(action); return Chain.prototype.send.call(c, k, action); };
    return { c, sent };
  };
  const owner = withPolicy('owner');
  await assert.rejects(Channel.offer(owner.c, alice, { rules: 'rps_rules', stake: '5' }), (e) => {
    assert.equal(e.code, 'mutable_module');
    assert.equal(e.module, 'channel');
    assert.deepEqual(e.policy, { kind: 'owner' });
    assert.match(e.message, /module channel: it has upgrade policy "owner"/);
    return true;
  });
  assert.deepEqual(owner.sent, [], 'nothing was sent');
  // An unstaked game escrows nothing: allowed; a stake with allowMutable: allowed.
  const free = await Channel.offer(owner.c, alice, { rules: 'rps_rules', stake: '0' });
  const staked = await Channel.offer(owner.c, alice, { rules: 'rps_rules', stake: '5', allowMutable: true });
  const bob = await funded();
  await assert.rejects(Channel.join(owner.c, bob, staked.id), (e) => e.code === 'mutable_module');
  await Channel.join(owner.c, bob, free.id);
  await Channel.join(owner.c, bob, staked.id, { allowMutable: true });
  // A timelock too short to leave in, or a pending upgrade: refused as well.
  for (const [kind, extra, text] of [
    ['timelocked', { delay_ms: 60_000 }, /"timelocked" with a delay of 60000 ms/],
    ['immutable', { pending: { code_hash: 'ab'.repeat(32), announced_at_ms: 1, activates_at_ms: 2 } }, /an upgrade to code (ab)+ is pending/],
  ]) {
    const { c, sent } = withPolicy(kind, extra);
    await assert.rejects(Channel.offer(c, alice, { rules: 'rps_rules', stake: '1' }), (e) => e.code === 'mutable_module' && text.test(e.message));
    assert.deepEqual(sent, []);
  }
  // Immutable, timelocked for a week, or a record from a node without policies: no refusal.
  for (const [kind, extra] of [['immutable', {}], ['timelocked', { delay_ms: 7 * 24 * 3_600_000 }], [null, {}]]) {
    const { c } = withPolicy(kind, extra);
    await Channel.offer(c, alice, { rules: 'rps_rules', stake: '1' });
  }
});

/**
 * A fetch in front of the node that answers `mode` (429 with retry-after: 1, or 503) `count` times
 * to requests whose path matches `only`, then passes everything on.
 */
function flakyFetch() {
  const f = {
    mode: null,
    count: 0,
    only: /^\//,
    refused: { 429: 0, 503: 0 },
    blockGets: 0,
    async fetch(url, init) {
      const p = new URL(url).pathname;
      if (/^\/v1\/blocks\/\d+$/.test(p)) f.blockGets += 1;
      if (f.mode && f.count > 0 && f.only.test(p)) {
        f.count -= 1;
        const status = f.mode;
        if (f.count === 0) f.mode = null;
        f.refused[status] += 1;
        const code = status === 429 ? 'rate_limited' : 'unavailable';
        return new Response(JSON.stringify({ error: { code, message: `${status} from the test's proxy` } }), { status, headers: { 'content-type': 'application/json', ...(status === 429 ? { 'retry-after': '1' } : {}) } });
      }
      return fetch(url, init);
    },
  };
  return f;
}

test('the watchtower answers a challenge with the move it holds, through 429s (retry-after honoured), 503s and a node restart, reading blocks over the feed', async () => {
  const alice = await funded();
  const bob = await funded();
  const { id, a } = await openGame(alice, bob, { listen: false });
  const flaky = flakyFetch();
  // rateLimitRetries 0: the 429s reach the watchtower, whose own retries are what is tested here
  // (a Chain waits them out by itself otherwise: ratelimit.test.js).
  const bobChain = new Chain(node.url, { fetch: flaky.fetch, rateLimitRetries: 0 });
  // Bob's move 1 is signed and kept, but its post is lost: alice never sees it.
  const lossy = new Chain(node.url);
  lossy.send = async () => { throw new ChainError('network', 'the network dropped it'); };
  const store = memoryStore();
  const b = await Channel.open(bobChain, bob, id, { store });
  await new Rps(a).commit(2);
  await b.receive(a.moves[0]);
  const bLossy = await Channel.open(lossy, bob, id, { store });
  await assert.rejects(new Rps(bLossy).commit(0), /dropped/);
  await b.sync();
  assert.equal(b.n, 2, 'bob holds his commit');
  assert.equal(a.n, 1, 'alice never got it');
  const actions = [];
  const retries = [];
  const w = await b.watch({
    backoff: new Backoff({ baseMs: 50, capMs: 400 }),
    onAction: (x) => actions.push(x),
    onRetry: (r) => retries.push(r),
  });
  const h0 = (await chain.status()).height;
  try {
    await until('the watch is connected', () => b.headTimeMs != null);
    // The node goes down and comes back (the feed and the relay reconnect); then the watch's reads
    // of the game are rate-limited, then everything it asks fails with 503 for a while.
    await node.restart();
    flaky.only = /^\/v1\/games\//;
    flaky.mode = 429;
    flaky.count = 3;
    await a.challenge();
    setTimeout(() => { flaky.only = /^\//; flaky.mode = 503; flaky.count = 3; }, 1500);
    await until('the watch answered', () => actions.some((x) => x.kind === 'respond'), 60000);
    const g = await a.refresh();
    assert.equal(g.status, 'challenged');
    assert.deepEqual([g.challenge.due, g.challenge.moves], [0, 2], 'the challenge passed to alice');
    assert.ok(flaky.refused[429] >= 1, `429s: ${flaky.refused[429]}`);
    const r429 = retries.filter((r) => r.error.status === 429);
    assert.ok(r429.length >= 1 && r429.every((r) => r.waitMs >= 1000), `retry-after honoured: ${r429.map((r) => r.waitMs)}`);
    // Blocks came over the feed: single blocks were fetched only for the gap of the restart.
    const made = (await chain.status()).height - h0;
    assert.ok(flaky.blockGets < made, `${flaky.blockGets} block GETs for ${made} blocks`);
    // 503s while acting later are waited out too: alice reveals nothing, bob's watch keeps going.
    await until('503s waited out', () => flaky.mode === null && flaky.refused[503] >= 1, 30000);
    assert.ok(retries.some((r) => r.error.status === 503 || r.error.code === 'network'), `retries: ${retries.map((r) => r.error.code)}`);
  } finally {
    w.close();
  }
  assert.equal(await w.done, 'closed');
});

test('the watchtower sends the equivocation proof when a challenge contradicts a move it holds, then stops: the result is final', async () => {
  const carol = await funded();
  const dave = await funded();
  const { id, a: c, b: d } = await openGame(carol, dave, { listen: false });
  const actions = [];
  const w = await d.watch({ backoff: new Backoff({ baseMs: 50, capMs: 400 }), onAction: (x) => actions.push(x) });
  try {
    await new Rps(c).commit(1);
    await until('dave holds carol\'s commit', () => d.n === 1);
    // Carol challenges with another move 0 signed by her key: dave is due "move 1" of a history
    // that contradicts the move he holds.
    const other = rpsCommitment(c.tag, 0, 2, new Uint8Array(32).fill(4));
    const forged = { n: 0, data: Buffer.from(other).toString('hex'), sig: carol.signMessage(c.moveText(0, c.hashes[0], carol.address, other)) };
    const r = await chain.waitForReceipt(await chain.send(carol, { type: 'game', game: 'channel', op: { kind: 'challenge', game: id, moves: [forged], from_checkpoint: false } }));
    assert.equal(r.ok, true, r.error);
    assert.equal(await w.done, 'final');
    assert.ok(actions.some((x) => x.kind === 'prove_equivocation' && x.move === 0), JSON.stringify(actions.map((x) => x.kind)));
    const g = await d.refresh();
    assert.deepEqual([g.status, g.outcome.winner, g.outcome.how, g.final], ['settled', 1, 'equivocation', true]);
  } finally {
    w.close();
  }
});
