// sealed-rps.test.js: /play/sealed-rps/ in headless Chromium against a node this test starts (its
// genesis holds sealed_rps and a beacon key, as every new chain's). Two players (alice, bob: their
// own browser contexts, so their own keys) take GOLD from the faucet; alice creates a staked game,
// bob finds it in the live list of open games and joins; both pages show the round and a countdown;
// alice picks rock and bob paper: each page seals its move in the browser (sealMove to the round,
// tag `<id>/<x|o>`) and sends it; each page shows its own move as sealed and the other's as hidden;
// the round's block opens both and pays out: both pages show rock and paper and the result, and
// each re-opens both envelopes with that block's beacon (verified under the genesis key). The
// finished game links to /verify/, where a third browser re-executes the match (create, join, the
// two sealed moves, the two openings and the settling call: the proofs re-checked and the envelopes
// re-opened in the page's Worker). Prints the time of a seal in Chromium and of the verification.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startNode } from '../testkit/node.js';
import { launch, player, waitText, act, shot } from '../testkit/browser.js';
import { Chain } from '../src/index.js';

let browser;
let node;
before(async () => {
  browser = await launch();
  node = await startNode({ blockIntervalMs: 400, minBlockIntervalMs: 100 });
});
after(async () => {
  await browser?.close();
  await node?.dispose();
});

test('a sealed rock-paper-scissors game played in two browsers, opened by the chain, verified in a third', async () => {
  const started = Date.now();
  const chain = new Chain(node.url);
  const url = `${node.url}/play/sealed-rps/`;
  const alice = await player(browser, url, 'alice');
  const bob = await player(browser, url, 'bob');
  for (const p of [alice, bob]) {
    await act(p, '#faucet');
    await waitText(p.page, '#balance', '1000.00');
    // Proven from the genesis alone (the node's answer with its state proof, play-page.js).
    await waitText(p.page, '#balance-proof', /^✓ proven at block \d+$/);
  }
  await alice.page.fill('#stake', '1.5');
  await alice.page.fill('#seal-blocks', '16');
  await act(alice, '#create-btn');
  assert.equal(await alice.page.textContent('#error'), '');
  await alice.page.waitForFunction(() => /^#[0-9a-f]{16}$/.test(location.hash));
  const id = (await alice.page.evaluate(() => location.hash)).slice(1);
  await waitText(alice.page, '#turn', 'Waiting for an opponent to join.');
  await bob.page.waitForSelector(`#open-list li[data-id="${id}"]`, { timeout: 30000 });
  await bob.page.click(`#open-list li[data-id="${id}"] a`);
  await waitText(bob.page, '#turn', 'Open: join to play o.');
  await act(bob, '#join-btn');
  assert.equal(await bob.page.textContent('#error'), '');
  const game = await chain.game('sealed_rps', { id });
  const round = game.round;
  assert.equal(game.status, 'playing');
  for (const p of [alice, bob]) {
    await waitText(p.page, '#round', new RegExp(`^Round ${round}: both moves open in block ${round}, in \\d+ blocks \\(now \\d+\\)\\. A move must land in a block before the round: this page hands one in only while the chain is below block ${round - 2}\\.$`));
    await p.page.waitForSelector('#pick:not([hidden])');
  }

  // Each seals in its browser and sends.
  await act(alice, '#move-rock');
  assert.equal(await alice.page.textContent('#error'), '');
  await waitText(alice.page, '#sealed-info', `Your move (rock): sealed (hidden until round ${round}).`);
  await waitText(alice.page, '#x-state', `your rock: sealed (hidden until round ${round})`);
  // Bob's page: alice's move is sealed, and hidden.
  await waitText(bob.page, '#x-state', `sealed (hidden until round ${round})`);
  assert.equal(await bob.page.textContent('#x-move'), '?');
  await shot(bob.page, 'sealed-rps-sealed.png');
  await act(bob, '#move-paper');
  assert.equal(await bob.page.textContent('#error'), '');
  await waitText(bob.page, '#sealed-info', `Your move (paper): sealed (hidden until round ${round}).`);
  const sealMs = await Promise.all([alice, bob].map((p) => p.page.getAttribute('body', 'data-seal-ms')));
  const onChain = await chain.game('sealed_rps', { id });
  assert.deepEqual([onChain.x_sealed, onChain.o_sealed, onChain.x_move, onChain.o_move], [true, true, null, null]);
  // Not waited for here: from round − 2 the pages close moves, but the chain races to the round at
  // its minimum interval, so that window lasts a few hundred ms.

  // The round opens both; the page re-opens them with the round block's beacon.
  for (const p of [alice, bob]) await p.page.waitForSelector('#opening[data-verified]', { timeout: 60000 });
  const shown = (p) => p.page.evaluate(() => ({
    x: document.getElementById('x-move').dataset.move,
    o: document.getElementById('o-move').dataset.move,
    opening: document.getElementById('opening').textContent,
    verified: document.getElementById('opening').dataset.verified,
    result: document.getElementById('result').textContent,
  }));
  const a = await shown(alice);
  const b = await shown(bob);
  assert.deepEqual([a.x, a.o, b.x, b.o], ['rock', 'paper', 'rock', 'paper']);
  assert.deepEqual([a.verified, b.verified], ['1', '1'], a.opening);
  assert.match(a.opening, new RegExp(`^Both envelopes opened in this browser with the beacon of block ${round} \\([0-9a-f]{8}…[0-9a-f]{4}\\): beacon verified under the genesis key; x rock, o paper, as the chain opened them\\.$`));
  assert.match(a.result, /^You lost \(o_won, reveal\): payout 3\.00 GOLD/);
  assert.match(b.result, /^You won \(o_won, reveal\): payout 3\.00 GOLD to you\./);
  const balances = await Promise.all([alice, bob].map(async (p) => (await chain.account(p.address)).balances.GOLD));
  assert.deepEqual(balances, ['99850', '100150']);
  await shot(bob.page, 'sealed-rps-finished.png');

  // The verify link, in a third browser.
  const href = await bob.page.getAttribute('#verify-link', 'href');
  assert.equal(href, `/verify/?module=sealed_rps&id=${id}`);
  const carol = await player(browser, `${node.url}${href}`, 'carol');
  await carol.page.waitForSelector('body[data-done="1"]', { timeout: 60000 });
  assert.equal(await carol.page.getAttribute('body', 'data-result'), 'verified', `${await carol.page.textContent('#status')} ${await carol.page.textContent('#divergence')}`);
  await waitText(carol.page, '#status', /^✓ Verified: all 7 steps match \(finished; code of the genesis\)\. \d+ block beacons verified under the genesis key\. Complete: proven — the chain's own log of the game at block \d+ holds exactly these 7 steps \(a state proof against that block's signed state root\)\. Starting balances: proven — each player's GOLD against the state root of the block before its step\.$/);
  assert.match(await carol.page.textContent('#facts'), /\(in a Worker\)/);
  const rows = await carol.page.$$eval('#steps tr', (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
  assert.deepEqual(rows.map((r) => [r[0], r[3]]), [['✓', 'tx'], ['✓', 'tx'], ['✓', 'tx'], ['✓', 'tx'], ['✓', 'call'], ['✓', 'call'], ['✓', 'call']]);
  assert.equal(await carol.page.getAttribute('#sealed-view', 'data-verified'), '1');
  await waitText(carol.page, '#sealed-openings', 'x rock');
  await waitText(carol.page, '#sealed-openings', 'o paper');
  const verifyMs = Number(await carol.page.getAttribute('body', 'data-elapsed'));
  await shot(carol.page, 'verify-sealed-rps.png');
  for (const p of [alice, bob, carol]) assert.deepEqual(p.errors, []);
  console.log(`sealed_rps in Chromium: a seal took ${sealMs.join(' and ')} ms (alice, bob); the match (7 steps) verified in the browser in ${verifyMs} ms; the test ran ${((Date.now() - started) / 1000).toFixed(1)} s`);
});
