// rps.test.js: /play/rps/ in headless Chromium, two players in separate browser contexts (their
// own localStorage: own keys, own signed moves and salts) against a fresh node this test starts
// (10 ms blocks, the dev clock). The games are at genesis on the default chain; on a node without
// them the page first says they are missing, then channel, moveboard and rps_rules (built from
// this repository) are deployed by transactions and the page notices by itself. Alice offers, the
// offer appears in bob's lobby, bob joins; both commit through the node's move relay (nothing on
// the move board), the reveals happen by themselves, both pages show the result the rules .wasm
// computed in the page, alice settles, the pages show the time left to the final result (block
// time), the dev clock passes the window, alice withdraws; balances and the chain's record are
// checked. Then a second game where bob stalls after alice's commit: challenged, the time left
// shown, the clock passes the deadline, the forfeit claimed and withdrawn; a third where bob's
// key signs two commits for one position and alice's page proves it; and an offer of rules code
// no genesis module runs (trap_rules), which bob's page does not join, showing the SDK's refusal.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startNode } from '../testkit/node.js';
import { buildModule, deploy, hasModule, CHANNEL_MODULES } from '../testkit/modules.js';
import { launch, player, waitText, act, idle, shot } from '../testkit/browser.js';
import { Chain, Channel, Key, Rps, memoryStore, rpsCommitment } from '../src/index.js';
import { assemble, answer, i64 } from '../testkit/wasm.js';

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

/** The move board posts of game `id` in blocks `from`..head. */
async function boardPosts(chain, id, from) {
  const posts = [];
  const top = (await chain.status()).height;
  for (let h = from; h <= top; h++) {
    for (const t of (await chain.block(h)).txs ?? []) {
      const action = JSON.parse(t.body).action;
      if (action.type === 'game' && action.game === 'moveboard' && action.op.game === id) posts.push(h);
    }
  }
  return posts;
}

/** `window`: minutes of block time. */
async function offerAndJoin(alice, bob, stake, window) {
  await alice.page.evaluate(() => { location.hash = ''; });
  await alice.page.fill('#stake', stake);
  await alice.page.fill('#window', String(window));
  await act(alice, '#create-btn');
  assert.equal(await alice.page.textContent('#error'), '');
  await alice.page.waitForFunction(() => /^#[0-9a-f]{16}$/.test(location.hash));
  const id = (await alice.page.evaluate(() => location.hash)).slice(1);
  await waitText(alice.page, '#turn', 'Waiting for an opponent to join.');
  // The offer shows up in bob's lobby by itself (a block on the WebSocket redraws it).
  await bob.page.waitForSelector(`#open-list li[data-id="${id}"]`, { timeout: 30000 });
  await bob.page.click(`#open-list li[data-id="${id}"] a`);
  await waitText(bob.page, '#turn', 'Open: join to play.');
  await act(bob, '#join-btn');
  assert.equal(await bob.page.textContent('#error'), '');
  return id;
}

test('two browsers play rock-paper-scissors through the move relay, settle and withdraw once the window passed in block time; a staller forfeits; an equivocation is proved', async () => {
  const node = await startNode({ blockIntervalMs: 500 });
  try {
    const url = `${node.url}/play/rps/`;
    const chain = new Chain(node.url);
    const alice = await player(browser, url, 'alice');
    if (!(await hasModule(chain, 'channel'))) {
      // A node whose genesis lacks the games: the page says so, and notices the deploys by itself.
      await waitText(alice.page, '#missing', 'This node does not run `channel`, `moveboard`, `rps_rules`');
      assert.equal(await alice.page.isHidden('#create'), true);
      await shot(alice.page, 'rps-not-deployed.png');
      await deploy(chain, CHANNEL_MODULES);
    }
    await alice.page.waitForSelector('#missing', { state: 'hidden', timeout: 30000 });
    const bob = await player(browser, url, 'bob');
    assert.notEqual(alice.address, bob.address);
    for (const p of [alice, bob]) {
      await act(p, '#faucet');
      await waitText(p.page, '#balance', '1000.00');
      await waitText(p.page, '#balance-proof', /^✓ proven at block \d+$/);
    }

    const h1 = (await chain.status()).height;
    const id = await offerAndJoin(alice, bob, '1', 5);
    await waitText(alice.page, '#balance', '999.00');
    await waitText(alice.page, '#players', 'window 5 min 0 s');
    await waitText(alice.page, '#transport', 'Moves go through the node\'s relay: the opponent is connected.');
    await waitText(bob.page, '#transport', 'Moves go through the node\'s relay');
    await waitText(bob.page, '#balance', '999.00');
    await waitText(alice.page, '#turn', 'Your turn: choose rock, paper or scissors.');
    await waitText(bob.page, '#turn', 'Waiting for the opponent\'s choice.');
    assert.equal(await bob.page.isDisabled('#rock'), true);
    await act(alice, '#paper');
    assert.equal(await alice.page.textContent('#error'), '');
    await waitText(alice.page, '#turn', 'You chose paper. Waiting for the opponent\'s choice.');
    // The salt was kept in alice's browser before the commit left it.
    const kept = await alice.page.evaluate((g) => Object.entries(localStorage).find(([k]) => k.includes(`:${g}:`))?.[1], id);
    assert.match(JSON.parse(kept).app.rps.salt, /^[0-9a-f]{64}$/);
    await waitText(bob.page, '#turn', 'Your turn: choose rock, paper or scissors.');
    await shot(bob.page, 'rps-choose.png');
    await act(bob, '#rock');
    // The reveals go by themselves: alice's (move 2), then bob's (move 3).
    await waitText(alice.page, '#result', 'You won: paper beats rock.');
    await waitText(bob.page, '#result', 'You lost: paper beats rock.');
    await waitText(alice.page, '#moves', '4 of 4 signed moves');
    // Nothing reached the chain's channel but the offer and the join, and nothing the move board:
    // the moves went through the relay.
    assert.equal((await chain.game('channel', { game: id })).status, 'open');
    assert.deepEqual(await boardPosts(chain, id, h1), []);
    await idle(alice.page);
    await waitText(alice.page, '#withdraw-info', 'Settle to collect');
    await act(alice, '#settle-btn');
    assert.equal(await alice.page.textContent('#error'), '');
    await waitText(alice.page, '#withdraw-info', /Settled by history: final in [45] min \d+ s of block time; then withdraw \(2\.00 GOLD to you\)/);
    await waitText(bob.page, '#withdraw-info', /of block time; then withdraw \(2\.00 GOLD to the opponent\)/);
    assert.equal(await alice.page.isDisabled('#withdraw-btn'), true);
    await shot(alice.page, 'rps-settled.png');
    await node.advanceClock(5 * 60000);
    await alice.page.waitForSelector('#withdraw-btn:not([disabled])', { timeout: 60000 });
    await waitText(alice.page, '#withdraw-info', 'Final: withdraw now (2.00 GOLD to you).');
    await act(alice, '#withdraw-btn');
    assert.equal(await alice.page.textContent('#error'), '');
    await waitText(alice.page, '#withdraw-info', 'Paid out: 2.00 GOLD to you.');
    await waitText(bob.page, '#withdraw-info', 'Paid out: 2.00 GOLD to the opponent.');
    await waitText(alice.page, '#balance', '1001.00');
    await waitText(bob.page, '#balance', '999.00');
    await waitText(alice.page, '#my-list', id);
    await shot(alice.page, 'rps-paid-winner.png');
    await shot(bob.page, 'rps-paid-loser.png');
    const g = await chain.game('channel', { game: id });
    assert.deepEqual([g.status, g.paid, g.outcome.winner, g.outcome.how, g.players], ['settled', true, 0, 'history', [alice.address, bob.address]]);
    assert.equal((await chain.account('module:channel')).balances.GOLD ?? '0', '0');

    // Bob stalls after alice's commit: challenged, he lets the deadline pass, alice claims.
    const slow = await offerAndJoin(alice, bob, '2', 5);
    assert.notEqual(slow, id);
    await waitText(alice.page, '#turn', 'Your turn');
    await act(alice, '#scissors');
    await waitText(alice.page, '#challenge-info', 'If the opponent stalls, challenge');
    await waitText(bob.page, '#turn', 'Your turn: choose');
    await act(alice, '#challenge-btn');
    assert.equal(await alice.page.textContent('#error'), '');
    await waitText(bob.page, '#challenge-info', /You are challenged: move 1 is yours, within [45] min \d+ s of block time, or you lose by forfeit\./);
    await waitText(alice.page, '#challenge-info', /the opponent must answer within [45] min \d+ s of block time/);
    assert.equal(await alice.page.isDisabled('#forfeit-btn'), true);
    await shot(bob.page, 'rps-challenged.png');
    await node.advanceClock(5 * 60000 + 1);
    await alice.page.waitForSelector('#forfeit-btn:not([disabled])', { timeout: 60000 });
    await waitText(bob.page, '#challenge-info', 'You were challenged and the deadline passed: the opponent can claim the forfeit.');
    await act(alice, '#forfeit-btn');
    assert.equal(await alice.page.textContent('#error'), '');
    await waitText(alice.page, '#result', 'You won by forfeit (the opponent did not answer a challenge in time).');
    await waitText(bob.page, '#result', 'You lost by forfeit (you did not answer a challenge in time).');
    await act(alice, '#withdraw-btn');
    await waitText(alice.page, '#balance', '1003.00');
    await waitText(bob.page, '#balance', '997.00');
    await shot(alice.page, 'rps-forfeit.png');

    // Bob's key signs a second commit for his move 1 (posted from outside his page): alice's page
    // finds the two signatures for one position and proves it; bob loses although paper beat rock.
    const h0 = (await chain.status()).height;
    const third = await offerAndJoin(alice, bob, '1', 5);
    await waitText(alice.page, '#turn', 'Your turn');
    await act(alice, '#rock');
    await waitText(bob.page, '#turn', 'Your turn: choose');
    await act(bob, '#paper');
    await waitText(alice.page, '#result', 'You lost: paper beats rock.');
    await idle(bob.page);
    const bobKey = Key.fromWif(await bob.page.evaluate(() => localStorage.getItem('gamechain.wif')));
    // The moves went through the relay: the spy takes them from bob's browser (its store).
    const spy = await Channel.open(chain, bobKey, third, { store: memoryStore(), fromHeight: h0 });
    const bobMoves = await bob.page.evaluate((g) => JSON.parse(Object.entries(localStorage).find(([k]) => k.includes(`:${g}:`))[1]).moves, third);
    for (const m of bobMoves) await spy.receive(m);
    assert.ok(spy.n >= 2, 'the spy has both commits');
    {
      const other = rpsCommitment(spy.tag, 1, 2, new Uint8Array(32).fill(9));
      const second = { n: 1, data: Buffer.from(other).toString('hex'), sig: bobKey.signMessage(spy.moveText(1, spy.hashes[1], bob.address, other)) };
      const post = await chain.send(bobKey, { type: 'game', game: 'moveboard', op: { kind: 'post', game: third, type: 1, payload: JSON.stringify(second) } });
      assert.equal((await chain.waitForReceipt(post)).ok, true);
    }
    await waitText(alice.page, '#challenge-info', 'The opponent signed two different moves for move 1');
    await act(alice, '#equivocation-btn');
    assert.equal(await alice.page.textContent('#error'), '');
    await waitText(alice.page, '#result', 'You won by equivocation (the opponent\'s key signed two different moves for one position).');
    await waitText(bob.page, '#result', 'You lost by equivocation (your key signed two different moves for one position).');
    await act(alice, '#withdraw-btn');
    await waitText(alice.page, '#balance', '1004.00');
    await waitText(bob.page, '#balance', '996.00');
    await shot(alice.page, 'rps-equivocation.png');

    // Mallory deploys trap_rules (rock-paper-scissors that traps on the move making its author
    // lose) and offers it, naming its code: bob's page opened on that offer does not join it and
    // says why in the SDK's words (docs/channels.md, "Rules that trap when their author loses").
    const mallory = Key.generate();
    await chain.waitForReceipt(await chain.send(mallory, { type: 'faucet', token: 'GOLD' }));
    const trap = buildModule('examples/trap_rules');
    const trapHash = Buffer.from(await crypto.subtle.digest('SHA-256', trap)).toString('hex');
    const deployed = await chain.waitForReceipt(await chain.send(mallory, { type: 'deploy', module: 'trap_rules', code: Buffer.from(trap).toString('base64') }), { timeoutMs: 120000 });
    assert.equal(deployed.ok, true, deployed.error);
    const { id: trapOffer } = await Channel.offer(chain, mallory, { rules: 'trap_rules', stake: '1', windowMs: 300000, acceptRulesCode: trapHash });
    await bob.page.evaluate((g) => { location.hash = g; }, trapOffer);
    await waitText(bob.page, '#turn', `Not joining: refusing to join offer ${trapOffer}: its rules code ${trapHash} is the code module trap_rules runs (owner ${mallory.address}), not the code of a genesis module: such rules may trap when their author loses, and you would lose by forfeit; nothing was sent (read that code, then pass acceptRulesCode: '${trapHash}' to play it anyway)`);
    assert.equal(await bob.page.isHidden('#join-btn'), true);
    await shot(bob.page, 'rps-trap-rules-refused.png');
    assert.equal((await chain.game('channel', { offer: trapOffer })).status, 'open');
    await waitText(bob.page, '#balance', '996.00');
    for (const p of [alice, bob]) {
      assert.equal(await p.page.evaluate(() => window.__noReload), true, `${p.name}'s page was reloaded`);
      assert.deepEqual(p.errors, []);
    }
  } finally {
    await node.dispose();
  }
});

async function until(fn, timeoutMs = 30000) {
  const end = Date.now() + timeoutMs;
  while (!(await fn())) {
    assert.ok(Date.now() < end, `timed out: ${fn}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Opens game `id` on `p`'s page and commits `choice` there. The moment the page switches to
 * another game, nothing of the game shown before stays: no turn text, every choice disabled (a
 * stale "Your turn" with enabled buttons under the new id once let a click do nothing). Unless
 * the test drops the post on purpose, the commit is then sent and included.
 */
async function choose(p, id, choice, { postDropped = false } = {}) {
  const switched = await p.page.evaluate(async (g) => {
    if (location.hash === `#${g}`) return null;
    const seen = new Promise((resolve) => window.addEventListener('hashchange', () => resolve({
      id: document.getElementById('game-id').textContent,
      turn: document.getElementById('turn').textContent,
      enabled: ['rock', 'paper', 'scissors'].filter((c) => !document.getElementById(c).disabled),
    }), { once: true }));
    location.hash = g;
    return seen;
  }, id);
  if (switched) assert.deepEqual(switched, { id, turn: 'Loading the game…', enabled: [] });
  await waitText(p.page, '#game-id', id);
  await waitText(p.page, '#turn', 'Your turn: choose');
  // Every text #info shows from here (an automatic reveal may replace the commit's at once).
  await p.page.evaluate(() => {
    window.__infoShown = [];
    window.__infoWatch?.disconnect();
    // Each text set, from the mutation records (two set in one task are both recorded).
    window.__infoWatch = new MutationObserver((records) => {
      for (const r of records) for (const n of r.addedNodes) window.__infoShown.push(n.textContent);
    });
    window.__infoWatch.observe(document.getElementById('info'), { childList: true, characterData: true, subtree: true });
  });
  await act(p, `#${choice}`);
  if (postDropped) return;
  assert.equal(await p.page.textContent('#error'), '');
  const shown = await p.page.evaluate(() => window.__infoShown);
  assert.ok(shown.some((t) => t.startsWith(`commit ${choice}: done at height`) || t === `commit ${choice}: done (through the relay)`), `the commit was not sent: #info showed ${JSON.stringify(shown)}`);
}

test('the page: a looping rules module is stopped in its worker; with the relay cut, a failed post is sent again through the move board; a reload mid-game restores the game; two games at once; a challenge raced by a reveal ends by forfeit', async () => {
  const node = await startNode({ blockIntervalMs: 500 });
  try {
    const url = `${node.url}/play/rps/`;
    const chain = new Chain(node.url);
    await deploy(chain, CHANNEL_MODULES);
    // Alice's page cannot reach the relay while `relayDown(true)`: its relay connections go to a
    // relay URL the node refuses (400), so they fail as a lost network would, and the move board
    // must carry her moves. (A subclass of the page's own WebSocket, installed before it loads.)
    const alice = await player(browser, url, 'alice', {
      setup: (page) => page.addInitScript(() => {
        const Native = window.WebSocket;
        window.__relayDown = false;
        window.WebSocket = class extends Native {
          constructor(u, protocols) {
            super(window.__relayDown ? String(u).replace(/\/v1\/relay\/.*$/, '/v1/relay/cut') : u, protocols);
          }
        };
      }),
    });
    const relayDown = (down) => alice.page.evaluate((d) => { window.__relayDown = d; }, down);
    const bob = await player(browser, url, 'bob');
    for (const p of [alice, bob]) {
      await act(p, '#faucet');
      await waitText(p.page, '#balance', '1000.00');
    }

    // The SDK in the page (its content security policy) runs rules calls in a Worker: a rules
    // module that never returns is a RulesError after the timeout, and the page goes on.
    const ok = answer(2048, 1);
    const looping = assemble({ initial_state: ok, mover_at: ok, validate_move: [0x03, 0x40, 0x0c, 0x00, 0x0b, ...i64(0)], apply_move: ok, is_over: ok, winner: ok });
    const out = await alice.page.evaluate(async (bytes) => {
      const { Rules } = await import('/sdk/gamechain.js');
      const rules = await Rules.load(new Uint8Array(bytes), { timeoutMs: 300 });
      const t0 = Date.now();
      let text;
      try { await rules.validateMove(new Uint8Array(1), 0, 0, new Uint8Array(1)); text = 'answered'; } catch (e) { text = `${e.name}: ${e.message}`; }
      const after = await rules.isOver(new Uint8Array(0));
      return { text, isolated: rules.isolated, ms: Date.now() - t0, after };
    }, [...looping]);
    assert.match(out.text, /^RulesError: rules validate_move ran over 300 ms/);
    assert.equal(out.isolated, true);
    assert.ok(out.ms < 5000, `${out.ms} ms`);
    assert.equal(out.after, false);

    // Alice commits, then reloads her page: the game, her signed commit and her salt come back
    // from localStorage (nothing signed again), and her reveal goes by itself once bob commits.
    // Her commit's post fails (the network drops it): the page sends it again by itself, and bob
    // gets it.
    await relayDown(true);
    const x = await offerAndJoin(alice, bob, '1', 5);
    let dropped = 0;
    await alice.page.route('**/v1/tx', (route) => (route.request().method() === 'POST' && dropped++ === 0 ? route.abort() : route.continue()));
    await choose(alice, x, 'rock', { postDropped: true });
    await waitText(bob.page, '#turn', 'Your turn: choose');
    await alice.page.unroute('**/v1/tx');
    assert.equal(dropped > 1, true, `the commit was not posted again (${dropped} posts): ${await alice.page.textContent('#transport')} ${await alice.page.evaluate(() => window.__trace.join(' | '))}`);
    const before = await alice.page.evaluate(() => JSON.stringify(localStorage));
    // From the reload on, alice's browser reaches the relay again.
    await relayDown(false);
    await alice.page.reload();
    await alice.page.waitForSelector('body[data-ready="1"]');
    await alice.page.evaluate(() => { window.__noReload = true; });
    await waitText(alice.page, '#turn', 'You chose rock. Waiting for the opponent\'s choice.');
    await waitText(alice.page, '#moves', '1 of 4 signed moves');
    assert.equal(await alice.page.isDisabled('#paper'), true);
    await choose(bob, x, 'paper');
    await waitText(alice.page, '#result', 'You lost: paper beats rock.');
    await waitText(bob.page, '#result', 'You won: paper beats rock.');
    const kept = JSON.parse(await alice.page.evaluate((g) => Object.entries(localStorage).find(([k]) => k.includes(`:${g}:`))[1], x));
    assert.deepEqual(Object.keys(kept.mine).map((k) => k.split(':')[0]).sort(), ['0', '2'], 'one commit and one reveal signed');
    assert.equal(JSON.parse(Object.entries(JSON.parse(before)).find(([k]) => k.includes(`:${x}:`))[1]).app.rps.salt, kept.app.rps.salt);

    // Two games at once: both commit in each, each page looking at one game at a time; a game
    // left catches up (and reveals) when its page comes back to it.
    const y = await offerAndJoin(alice, bob, '1', 5);
    const z = await offerAndJoin(alice, bob, '1', 5);
    await choose(alice, y, 'paper');
    await choose(alice, z, 'rock');
    await choose(bob, y, 'rock');
    await choose(bob, z, 'paper');
    // Switching between games while a redraw is still reading the last one shows no error (the
    // next switch would clear it: every text #error shows meanwhile is recorded).
    await alice.page.evaluate(() => {
      window.__errorsShown = [];
      new MutationObserver(() => {
        const t = document.getElementById('error').textContent;
        if (t) window.__errorsShown.push(t);
      }).observe(document.getElementById('error'), { childList: true, characterData: true, subtree: true });
    });
    for (let i = 0; i < 30; i++) {
      await alice.page.evaluate((g) => { location.hash = g; }, i % 2 ? z : y);
      await alice.page.waitForTimeout(5 + (i % 4) * 10);
    }
    await idle(alice.page);
    assert.deepEqual(await alice.page.evaluate(() => window.__errorsShown), []);
    for (const p of [alice, bob]) assert.equal(await p.page.textContent('#error'), '');
    await waitText(alice.page, '#result', 'You lost: paper beats rock.');
    await waitText(bob.page, '#result', 'You won: paper beats rock.');
    for (const p of [alice, bob]) await idle(p.page);
    await alice.page.evaluate((g) => { location.hash = g; }, y);
    try {
      await waitText(alice.page, '#moves', '3 of 4 signed moves');
    } catch (e) {
      // Where the chain has y's moves (a diagnosis for the failure message).
      const posts = [];
      const top = (await chain.status()).height;
      for (let h = 1; h <= top; h++) {
        for (const t of (await chain.block(h)).txs ?? []) {
          for (const ev of t.receipt?.events ?? []) if (ev.data?.game === y) posts.push(`${h}: ${ev.kind} ${ev.data.payload?.slice(0, 12) ?? ''}`);
        }
      }
      throw new Error(`the chain's events of game ${y}: ${posts.join(', ')}; ${e.message}`);
    }
    await bob.page.evaluate((g) => { location.hash = g; }, y);
    await waitText(alice.page, '#result', 'You won: paper beats rock.');
    await waitText(bob.page, '#result', 'You lost: paper beats rock.');
    for (const g of [x, y, z]) assert.equal((await chain.game('channel', { game: g })).status, 'open');
    // Three stakes each in escrow; nothing else moved.
    const bal = async (a) => BigInt((await chain.account(a)).balances.GOLD ?? '0');
    assert.deepEqual([await bal(alice.address), await bal(bob.address), await bal('module:channel')], [99700n, 99700n, 600n]);
    await waitText(alice.page, '#balance', '997.00');

    // A race: alice challenges while carol (a script) is revealing; carol's reveal reaches the
    // board, not the chain, and she never answers. Alice's page holds a finished game she lost,
    // but once the deadline passes the forfeit stands: no settle offered (the chain refuses it),
    // the forfeit claimed and paid.
    const carol = Key.generate();
    await chain.waitForReceipt(await chain.send(carol, { type: 'faucet', token: 'GOLD' }));
    await alice.page.evaluate(() => { location.hash = ''; });
    await alice.page.fill('#stake', '1');
    await alice.page.fill('#window', '5');
    await act(alice, '#create-btn');
    await alice.page.waitForFunction(() => /^#[0-9a-f]{16}$/.test(location.hash));
    const w = (await alice.page.evaluate(() => location.hash)).slice(1);
    const { receipt: joined } = await Channel.join(chain, carol, w);
    const cc = await Channel.open(chain, carol, w, { store: memoryStore(), fromHeight: joined.height - 3 });
    const ccSub = await cc.listen({ relay: false });
    try {
      await waitText(alice.page, '#turn', 'Your turn: choose');
      await act(alice, '#rock');
      await until(() => cc.n === 1);
      await new Rps(cc).commit(1); // paper
      await until(() => cc.n === 3); // alice revealed by herself
      await idle(alice.page);
      await alice.page.evaluate(() => document.getElementById('challenge-btn').click());
      await new Rps(cc).reveal({ wait: false });
      await idle(alice.page);
      assert.equal(await alice.page.textContent('#error'), '');
      await waitText(alice.page, '#result', 'You lost: paper beats rock.');
      assert.equal((await chain.game('channel', { game: w })).status, 'challenged');
      await node.advanceClock(5 * 60000 + 1);
      await waitText(alice.page, '#challenge-info', 'The deadline passed without an answer: claim the forfeit.');
      assert.equal(await alice.page.isHidden('#settle-btn'), true, 'a settle the chain would refuse');
      assert.doesNotMatch(await alice.page.textContent('#withdraw-info'), /Settle to collect/);
      await act(alice, '#forfeit-btn');
      assert.equal(await alice.page.textContent('#error'), '');
      await waitText(alice.page, '#result', 'You won by forfeit (the opponent did not answer a challenge in time).');
      await act(alice, '#withdraw-btn');
      await waitText(alice.page, '#balance', '998.00');
      assert.deepEqual([await bal(carol.address), await bal('module:channel')], [99900n, 600n]);
    } finally {
      ccSub.close();
    }
    for (const p of [alice, bob]) {
      assert.equal(await p.page.evaluate(() => window.__noReload), true);
      assert.deepEqual(p.errors, []);
    }
  } finally {
    await node.dispose();
  }
});
