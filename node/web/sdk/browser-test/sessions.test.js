// sessions.test.js: the table pages with session keys (docs/session-keys.md), in headless
// Chromium against a node this test starts. On /play/tictactoe/ and /play/mnk/ two players each
// take the faucet and start a session (one signature of their own key: the authorization), then
// create with a stake, join and play to a win with every op signed by the session key kept in the
// browser. The chain then shows, for each player, exactly two transactions signed by the player's
// key (the faucet and the authorization), every game op a session_game for the account, the
// payout on the player's account and the escrow empty. The page shows the cap used; ending the
// session revokes it and the next op is signed by the player's key again.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startNode } from '../testkit/node.js';
import { launch, player, waitText, act } from '../testkit/browser.js';
import { Chain } from '../src/index.js';

let browser;
let node;
before(async () => {
  browser = await launch();
  node = await startNode({ blockIntervalMs: 60000 });
});
after(async () => {
  await browser?.close();
  await node?.dispose();
});

/** Every transaction of the chain so far: [{from, type, account}] (the body's fields). */
async function transactions(chain) {
  const head = (await chain.status()).height;
  const out = [];
  for (let h = 1; h <= head; h++) {
    for (const t of (await chain.block(h)).txs) {
      const body = JSON.parse(t.body);
      out.push({ from: body.from, type: body.action.type, account: body.action.account ?? null, ok: t.receipt.ok });
    }
  }
  return out;
}

async function startSession(p, cap) {
  await act(p, '#faucet');
  await waitText(p.page, '#balance', '1000.00');
  await p.page.fill('#session-cap', cap);
  await act(p, '#session-start');
  assert.equal(await p.page.textContent('#error'), '', `${p.name}: ${await p.page.textContent('#error')}`);
  await waitText(p.page, '#session-status', new RegExp(`^Session key \\w+… plays \\w+ for you: 0\\.00 of ${cap.replace('.', '\\.')} GOLD used`));
}

/** Creates (alice, with `fields` filled), joins (bob) and plays `cells` alternately. */
async function game(alice, bob, fields, cells) {
  for (const [sel, v] of Object.entries(fields)) await alice.page.fill(sel, v);
  await act(alice, '#create-btn');
  assert.equal(await alice.page.textContent('#error'), '');
  await alice.page.waitForFunction(() => /^#[0-9a-f]{16}$/.test(location.hash));
  const id = (await alice.page.evaluate(() => location.hash)).slice(1);
  await bob.page.waitForSelector(`#open-list li[data-id="${id}"]`, { timeout: 30000 });
  await bob.page.click(`#open-list li[data-id="${id}"] a`);
  await act(bob, '#join-btn');
  for (const [i, cell] of cells.entries()) {
    const p = i % 2 === 0 ? alice : bob;
    await waitText(p.page, '#turn', 'Your turn');
    await act(p, `#board button[data-cell="${cell}"]`);
    assert.equal(await p.page.textContent('#error'), '', `${p.name} cell ${cell}`);
  }
  await waitText(alice.page, '#result', /^You won/);
  return id;
}

for (const [module, fields, cells] of [
  ['tictactoe', { '#stake': '1' }, [0, 3, 1, 4, 2]],
  ['mnk', { '#rows': '3', '#cols': '3', '#k': '3', '#stake': '1' }, [0, 3, 1, 4, 2]],
]) {
  test(`/play/${module}/: two players, one signature of their own key each, every move by a session key`, async () => {
    const url = `${node.url}/play/${module}/`;
    const alice = await player(browser, url, `alice-${module}`);
    const bob = await player(browser, url, `bob-${module}`);
    await startSession(alice, '5.00');
    await startSession(bob, '5.00');
    const id = await game(alice, bob, fields, cells);
    await waitText(alice.page, '#balance', '1001.00');
    await waitText(bob.page, '#balance', '999.00');
    await waitText(bob.page, '#session-status', /1\.00 of 5\.00 GOLD used/);

    const chain = new Chain(node.url);
    const txs = await transactions(chain);
    for (const p of [alice, bob]) {
      const own = txs.filter((t) => t.from === p.address).map((t) => t.type);
      assert.deepEqual(own, ['faucet', 'authorize_session'], `${p.name} signed with their own key`);
      const acted = txs.filter((t) => t.account === p.address);
      assert.ok(acted.length >= 3 && acted.every((t) => t.type === 'session_game' && t.ok), `${p.name}: ${JSON.stringify(acted)}`);
    }
    const g = await chain.game(module, { id });
    assert.deepEqual([g.status, g.winner, g.x, g.o], ['finished', alice.address, alice.address, bob.address]);
    assert.equal((await chain.account(`module:${module}`)).balances.GOLD ?? '0', '0', 'escrow empty');

    // Ending the session revokes it; the next op is signed by the player's key.
    await act(alice, '#session-end');
    await waitText(alice.page, '#session-status', 'No session');
    assert.equal((await chain.sessions(alice.address)).sessions.filter((s) => s.active).length, 0);
    await alice.page.fill('#stake', '');
    await act(alice, '#create-btn');
    const last = (await transactions(chain)).at(-1);
    assert.deepEqual([last.from, last.type], [alice.address, 'game']);
    for (const p of [alice, bob]) assert.deepEqual(p.errors, []);
    await alice.context.close();
    await bob.context.close();
  });
}
