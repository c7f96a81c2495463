// dice.test.js: /play/dice/ in headless Chromium against a node this test starts (its genesis
// holds the dice module and a beacon key, as every new chain's). Two players (alice, bob: their
// own browser contexts, so their own keys) take GOLD from the faucet; alice creates a staked duel,
// bob finds it in the live list of open duels and joins; the chain rolls in the next block (a call
// the join scheduled, drawing from that block's beacon) and both pages show the same dice, the
// block, its beacon verified under the genesis key and the dice recomputed from its draws, and the
// result; the stakes moved as the dice say. The finished duel links to /verify/, where a third
// browser re-executes the match (two transactions and the scheduled roll) with every beacon
// checked; a transcript whose roll was changed in flight is shown as divergent at the call. Prints
// the BLS beacon check's time in Chromium and the verification's.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startNode } from '../testkit/node.js';
import { launch, player, waitText, act, shot } from '../testkit/browser.js';
import { Chain, drawer } from '../src/index.js';

let browser;
let node;
before(async () => {
  browser = await launch();
  node = await startNode({ blockIntervalMs: 1000 });
});
after(async () => {
  await browser?.close();
  await node?.dispose();
});

const total = (d) => d[0] + d[1];

test('a dice duel played in two browsers, rolled from the beacon, verified in a third', async () => {
  const chain = new Chain(node.url);
  const genesis = await chain.genesis();
  assert.ok(genesis.beacon?.public_key, 'the chain has a beacon');
  const url = `${node.url}/play/dice/`;
  const alice = await player(browser, url, 'alice');
  const bob = await player(browser, url, 'bob');
  for (const p of [alice, bob]) {
    await act(p, '#faucet');
    await waitText(p.page, '#balance', '1000.00');
    // Proven from the genesis alone (the node's answer with its state proof, play-page.js).
    await waitText(p.page, '#balance-proof', /^✓ proven at block \d+$/);
  }
  await alice.page.fill('#stake', '2.5');
  await act(alice, '#create-btn');
  assert.equal(await alice.page.textContent('#error'), '');
  await alice.page.waitForFunction(() => /^#[0-9a-f]{16}$/.test(location.hash));
  const id = (await alice.page.evaluate(() => location.hash)).slice(1);
  await waitText(alice.page, '#turn', 'Waiting for an opponent to join.');
  // Bob sees it in the live list (the module's event feed), opens it and joins.
  await bob.page.waitForSelector(`#open-list li[data-id="${id}"]`, { timeout: 30000 });
  await bob.page.click(`#open-list li[data-id="${id}"] a`);
  await waitText(bob.page, '#turn', 'Open: join to play o.');
  await shot(bob.page, 'dice-open.png');
  await act(bob, '#join-btn');
  assert.equal(await bob.page.textContent('#error'), '');

  // The roll lands: both pages show the same dice, block and verified beacon.
  for (const p of [alice, bob]) await p.page.waitForSelector('#roll[data-verified]', { timeout: 60000 });
  const shown = async (p) => p.page.evaluate(() => ({
    x: document.getElementById('dice').dataset.x,
    o: document.getElementById('dice').dataset.o,
    height: Number(document.getElementById('roll').dataset.height),
    beacon: document.getElementById('roll').dataset.beacon,
    verified: document.getElementById('roll').dataset.verified,
    roll: document.getElementById('roll').textContent,
    result: document.getElementById('result').textContent,
    faces: [...document.querySelectorAll('#dice .die')].map((d) => Number(d.dataset.value)),
  }));
  const a = await shown(alice);
  const b = await shown(bob);
  assert.deepEqual(a, { ...b, result: a.result }, 'both players see the same roll');
  assert.equal(a.verified, '1', a.roll);
  assert.match(a.roll, /^Rolled in block \d+ from its beacon [0-9a-f]{8}…[0-9a-f]{4}: beacon verified under the genesis key; the dice are its draws\.$/);
  const game = await chain.game('dice', { id });
  assert.equal(game.status, 'finished');
  assert.equal(a.x, game.x_dice.join(','));
  assert.equal(a.o, game.o_dice.join(','));
  assert.deepEqual(a.faces, [...game.x_dice, ...game.o_dice]);
  assert.equal(a.height, game.roll_height);
  const block = await chain.block(a.height);
  assert.equal(block.header.beacon, a.beacon);
  assert.deepEqual(block.scheduled.map((s) => s.id), [game.roll_call]);
  const d = drawer(a.beacon, 'dice', game.roll_call);
  assert.deepEqual([1 + d.below(6), 1 + d.below(6), 1 + d.below(6), 1 + d.below(6)], a.faces);
  // The result and the stakes, as the dice say.
  const [xt, ot] = [total(game.x_dice), total(game.o_dice)];
  const balances = await Promise.all([alice, bob].map(async (p) => (await chain.account(p.address)).balances.GOLD));
  if (xt === ot) {
    assert.match(a.result, /^Draw: each player gets 2\.50 GOLD back\./);
    assert.deepEqual(balances, ['100000', '100000']);
  } else {
    const aliceWon = xt > ot;
    assert.match(a.result, aliceWon ? /^You won \(x_won\): payout 5\.00 GOLD to you\./ : /^You lost \(o_won\): payout 5\.00 GOLD/);
    assert.match(b.result, aliceWon ? /^You lost \(x_won\)/ : /^You won \(o_won\)/);
    assert.deepEqual(balances, aliceWon ? ['100250', '99750'] : ['99750', '100250']);
  }
  await shot(alice.page, 'dice-rolled.png');
  console.log(`dice: x ${game.x_dice} (${xt}) · o ${game.o_dice} (${ot}), rolled in block ${a.height} (joined at ${game.last_move_height})`);

  // The verify link, in a third browser.
  await alice.page.waitForSelector('#verify-link');
  const href = await alice.page.getAttribute('#verify-link', 'href');
  assert.equal(href, `/verify/?module=dice&id=${id}`);
  const carol = await player(browser, `${node.url}${href}`, 'carol');
  await carol.page.waitForSelector('body[data-done="1"]', { timeout: 120000 });
  assert.equal(await carol.page.getAttribute('body', 'data-result'), 'verified', `${await carol.page.textContent('#status')} ${await carol.page.textContent('#divergence')}`);
  await waitText(carol.page, '#status', 'Verified: all 3 steps match (finished; code of the genesis). 3 block beacons verified under the genesis key.');
  const rows = await carol.page.$$eval('#steps tr', (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
  assert.deepEqual(rows.map((r) => [r[0], r[3], r[6]]), [['✓', 'tx', 'ok'], ['✓', 'tx', 'ok'], ['✓', 'call', 'ok']]);
  assert.equal(rows[2][5], `call #${game.roll_call}`);
  assert.equal(rows[2][4], '— (the chain)');
  assert.match(rows[0][5], /"kind":"create"/);
  assert.match(rows[1][7], /^dice\.joined .*dice\.roll_scheduled /);
  assert.match(rows[2][7], /^dice\.rolled .*dice\.finished /);
  assert.ok(rows.every((r) => r[8].startsWith('✓ ')), JSON.stringify(rows.map((r) => r[8])));
  assert.equal(await carol.page.getAttribute('#dice-view', 'data-verified'), '1');
  await waitText(carol.page, '#roll-beacon', `Rolled by scheduled call #${game.roll_call} in block ${a.height}, from its beacon`);
  await waitText(carol.page, '#roll-beacon', 'beacon verified under the genesis key; the dice are its draws.');
  assert.deepEqual(await carol.page.$$eval('#dice-view .die', (ds) => ds.map((x) => Number(x.dataset.value))), a.faces);
  assert.equal(await carol.page.isVisible('#board'), false, 'no board for dice');
  const verifyMs = Number(await carol.page.getAttribute('body', 'data-elapsed'));
  await shot(carol.page, 'verify-dice.png');

  // The BLS check in this browser: the page's SDK bundle, the roll block's beacon.
  const bls = await carol.page.evaluate(async ([key, chainId, height, beacon]) => {
    const sdk = await import('/sdk/gamechain.js');
    const ok = sdk.verifyBeacon(key, chainId, height, beacon);
    const n = 10;
    const t0 = performance.now();
    for (let i = 0; i < n; i++) sdk.verifyBeacon(key, chainId, height, beacon);
    return { ok, ms: (performance.now() - t0) / n, wrong: sdk.verifyBeacon(key, chainId, height + 1, beacon) };
  }, [genesis.beacon.public_key, genesis.chain_id, a.height, a.beacon]);
  assert.deepEqual([bls.ok, bls.wrong], [true, false]);
  const transcript = await chain.transcript('dice', id);
  console.log(`dice match (3 steps, transcript ${JSON.stringify(transcript).length} bytes): verified in the browser in ${verifyMs} ms; verifyBeacon in Chromium ${bls.ms.toFixed(1)} ms per beacon`);
  assert.deepEqual(carol.errors, []);

  // A node that lies about the roll: the dice in the call's receipt changed in flight.
  const liar = await player(browser, `${node.url}${href}`, 'liar', {
    setup: async (page) => {
      await page.route('**/v1/games/dice/*/transcript', async (route) => {
        const res = await route.fetch();
        const t = await res.json();
        const rolled = t.steps[2].receipt.events.find((e) => e.kind === 'dice.rolled');
        // Other dice than the roll's ([6, 6] would be no change 1 time in 36).
        rolled.data.x_dice = rolled.data.x_dice.map((d) => (d % 6) + 1);
        rolled.data.x_total = rolled.data.x_dice[0] + rolled.data.x_dice[1];
        await route.fulfill({ response: res, body: JSON.stringify(t) });
      });
    },
  });
  await liar.page.waitForSelector('body[data-done="1"]', { timeout: 120000 });
  assert.equal(await liar.page.getAttribute('body', 'data-result'), 'diverged');
  await waitText(liar.page, '#divergence', `Divergence at step 2 (call ${game.roll_call}): receipt_proof.`);
  assert.equal(await liar.page.$$eval('#steps tr', (trs) => trs.map((tr) => tr.dataset.ok).join('')), '110');
  await shot(liar.page, 'verify-dice-tampered.png');
  for (const p of [alice, bob]) assert.deepEqual(p.errors, []);
});
