// rps.test.js: /play/rps/ in headless Chromium, two players in separate browser contexts (their
// own localStorage: own keys, own signed moves and salts) against a node this test starts. The page
// first says the modules are missing; then channel, moveboard and rps_rules (built from this
// repository) are deployed by transactions and the page notices by itself. Alice offers, the
// offer appears in bob's lobby, bob joins; both commit through the move board, the reveals happen
// by themselves, both pages show the result the rules .wasm computed in the page, alice settles,
// the pages count the window's blocks down, alice withdraws; balances and the chain's record are
// checked. Then a second game where bob stalls after alice's commit: challenged, the deadline
// counted down, the forfeit claimed and withdrawn; and a third where bob's key signs two commits
// for one position and alice's page proves it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startNode } from '../testkit/node.js';
import { deploy, CHANNEL_MODULES } from '../testkit/modules.js';
import { launch, player, waitText, act, idle, shot } from '../testkit/browser.js';
import { Chain, Channel, Key, memoryStore, rpsCommitment } from '../src/index.js';

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

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

test('two browsers play rock-paper-scissors through the move board, settle and withdraw; a staller forfeits; an equivocation is proved', async () => {
  const node = await startNode({ blockIntervalMs: 500 });
  try {
    const url = `${node.url}/play/rps/`;
    const chain = new Chain(node.url);
    const alice = await player(browser, url, 'alice');
    await waitText(alice.page, '#missing', 'This node does not run `channel`, `moveboard`, `rps_rules`');
    assert.equal(await alice.page.isHidden('#create'), true);
    await shot(alice.page, 'rps-not-deployed.png');
    await deploy(chain, CHANNEL_MODULES);
    await alice.page.waitForSelector('#missing', { state: 'hidden', timeout: 30000 });
    const bob = await player(browser, url, 'bob');
    assert.notEqual(alice.address, bob.address);
    for (const p of [alice, bob]) {
      await act(p, '#faucet');
      await waitText(p.page, '#balance', '1000.00');
    }

    const id = await offerAndJoin(alice, bob, '1', 5);
    await waitText(alice.page, '#balance', '999.00');
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
    // Nothing reached the chain's channel but the offer and the join: the moves went through the board.
    assert.equal((await chain.game('channel', { game: id })).status, 'open');
    await idle(alice.page);
    await waitText(alice.page, '#withdraw-info', 'Settle to collect');
    await act(alice, '#settle-btn');
    assert.equal(await alice.page.textContent('#error'), '');
    await waitText(alice.page, '#withdraw-info', /Settled by history: final at height \d+, \d+ blocks left; then withdraw \(2\.00 GOLD to you\)/);
    await waitText(bob.page, '#withdraw-info', /blocks left; then withdraw \(2\.00 GOLD to the opponent\)/);
    await shot(alice.page, 'rps-settled.png');
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
    await waitText(bob.page, '#challenge-info', /You are challenged: move 1 is yours, by height \d+ \(\d+ blocks left\)/);
    await waitText(alice.page, '#challenge-info', /the opponent must answer by height \d+/);
    await shot(bob.page, 'rps-challenged.png');
    await alice.page.waitForSelector('#forfeit-btn:not([disabled])', { timeout: 60000 });
    await act(alice, '#forfeit-btn');
    assert.equal(await alice.page.textContent('#error'), '');
    await waitText(alice.page, '#result', 'You won by forfeit');
    await waitText(bob.page, '#result', 'You lost by forfeit');
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
    const spy = await Channel.open(chain, bobKey, third, { store: memoryStore(), fromHeight: h0 });
    const spySub = await spy.listen();
    try {
      const end = Date.now() + 30000;
      while (spy.n < 2) { assert.ok(Date.now() < end, 'the spy never saw both commits'); await new Promise((r) => setTimeout(r, 50)); }
      const other = rpsCommitment(2, new Uint8Array(32).fill(9));
      const second = { n: 1, data: Buffer.from(other).toString('hex'), sig: bobKey.signMessage(spy.moveText(1, spy.hashes[1], bob.address, other)) };
      const post = await chain.send(bobKey, { type: 'game', game: 'moveboard', op: { kind: 'post', game: third, type: 1, payload: JSON.stringify(second) } });
      assert.equal((await chain.waitForReceipt(post)).ok, true);
    } finally {
      spySub.close();
    }
    await waitText(alice.page, '#challenge-info', 'The opponent signed two different moves for move 1');
    await act(alice, '#equivocation-btn');
    assert.equal(await alice.page.textContent('#error'), '');
    await waitText(alice.page, '#result', 'You won by equivocation');
    await waitText(bob.page, '#result', 'You lost by equivocation');
    await act(alice, '#withdraw-btn');
    await waitText(alice.page, '#balance', '1004.00');
    await waitText(bob.page, '#balance', '996.00');
    await shot(alice.page, 'rps-equivocation.png');
    for (const p of [alice, bob]) {
      assert.equal(await p.page.evaluate(() => window.__noReload), true, `${p.name}'s page was reloaded`);
      assert.deepEqual(p.errors, []);
    }
  } finally {
    await node.dispose();
  }
});
