// tictactoe.test.js: /play/tictactoe/ in headless Chromium, two players in separate browser
// contexts (alice, bob) against a node this test starts: faucet, create with a stake, the table
// appearing in bob's lobby without a reload, join, a refused move's error text, play to a win,
// both pages showing the result, the table's view proven (`#view-proof`) and the balances; then,
// on a node with a 100 ms block interval, a draw, a cancel, an invitation and a timeout claim from the height the page announces. Screenshots of the lobby and of
// finished games go to testkit/browser.js's SCREENSHOTS folder.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startNode } from '../testkit/node.js';
import { launch, player, waitText, act, idle, shot } from '../testkit/browser.js';
import { Chain, Key } from '../src/index.js';

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

async function faucet(p) {
  await act(p, '#faucet');
  await waitText(p.page, '#balance', '1000.00');
}

/** Plays `cells` alternately, x (first) then o, each waiting for "Your turn" on the mover's page. */
async function play(x, o, cells) {
  for (const [i, cell] of cells.entries()) {
    const p = i % 2 === 0 ? x : o;
    await waitText(p.page, '#turn', 'Your turn');
    await act(p, `#board button[data-cell="${cell}"]`);
    assert.equal(await p.page.textContent('#error'), '', `${p.name} cell ${cell}`);
    await waitText(p.page, `#board button[data-cell="${cell}"]`, i % 2 === 0 ? 'x' : 'o');
  }
}

async function createAndJoin(alice, bob, stake) {
  await alice.page.fill('#stake', stake);
  await act(alice, '#create-btn');
  await alice.page.waitForFunction(() => /^#[0-9a-f]{16}$/.test(location.hash));
  const id = (await alice.page.evaluate(() => location.hash)).slice(1);
  await waitText(alice.page, '#turn', 'Waiting for an opponent');
  // The table shows up in bob's lobby by itself (a block on the WebSocket redraws it).
  await bob.page.waitForSelector(`#open-list li[data-id="${id}"]`, { timeout: 30000 });
  await bob.page.click(`#open-list li[data-id="${id}"] a`);
  await waitText(bob.page, '#turn', 'Open: join to play o');
  await act(bob, '#join-btn');
  await waitText(alice.page, '#turn', 'Your turn');
  return id;
}

async function noReloadNoErrors(...players) {
  for (const p of players) {
    assert.equal(await p.page.evaluate(() => window.__noReload), true, `${p.name}'s page was reloaded`);
    assert.deepEqual(p.errors, []);
  }
}

test('two players: faucet, stake, live lobby, join, a refused move, a win with payouts', async () => {
  const node = await startNode({ blockIntervalMs: 60000 });
  try {
    const url = `${node.url}/play/tictactoe/`;
    const alice = await player(browser, url, 'alice');
    const bob = await player(browser, url, 'bob');
    assert.notEqual(alice.address, bob.address);
    await faucet(alice);
    await faucet(bob);

    await alice.page.fill('#stake', '1');
    await act(alice, '#create-btn');
    await alice.page.waitForFunction(() => /^#[0-9a-f]{16}$/.test(location.hash));
    const id = (await alice.page.evaluate(() => location.hash)).slice(1);
    await waitText(alice.page, '#balance', '999.00');
    await bob.page.waitForSelector(`#open-list li[data-id="${id}"]`, { timeout: 30000 });
    assert.match(await bob.page.textContent(`#open-list li[data-id="${id}"]`), /open · stake 1\.00 GOLD/);
    await shot(bob.page, 'lobby.png');

    await bob.page.click(`#open-list li[data-id="${id}"] a`);
    await act(bob, '#join-btn');
    await waitText(bob.page, '#balance', '999.00');
    await waitText(alice.page, '#turn', 'Your turn (x)');
    await act(alice, '#board button[data-cell="0"]');
    // bob takes alice's cell: the receipt's error reaches the page, the board is unchanged.
    await waitText(bob.page, '#turn', 'Your turn (o)');
    await act(bob, '#board button[data-cell="0"]');
    await waitText(bob.page, '#error', 'move 0 refused: invalid: cell is taken');
    await waitText(bob.page, '#turn', 'Your turn (o)');
    // Another refused transaction: a stake over the module's limit.
    await bob.page.fill('#stake', '5000');
    await act(bob, '#create-btn');
    await waitText(bob.page, '#error', 'create refused: invalid: stake is at most 100000 base units');
    await bob.page.fill('#stake', '');
    // A key that does not parse is refused in the page.
    await bob.page.fill('#wif-input', 'not a key');
    await bob.page.click('#import');
    await waitText(bob.page, '#error', /^import: /);
    assert.equal(await bob.page.textContent('#address'), bob.address);

    for (const [p, cell] of [[bob, 3], [alice, 1], [bob, 4], [alice, 2]]) {
      await waitText(p.page, '#turn', 'Your turn');
      await act(p, `#board button[data-cell="${cell}"]`);
    }
    await waitText(alice.page, '#result', 'You won (x_won, line): payout 2.00 GOLD to you.');
    await waitText(bob.page, '#result', /You lost \(x_won, line\): payout 2\.00 GOLD/);
    // The table's view proven from the genesis (getViewProven: its reads against the head's
    // state root, the view re-executed on the module's wasm over them), beside the board.
    for (const p of [alice, bob]) {
      await waitText(p.page, '#view-proof', /^✓ proven at block \d+$/);
      assert.equal(await p.page.getAttribute('#view-proof', 'data-proven'), '1');
    }
    await waitText(alice.page, '#balance', '1001.00');
    await waitText(bob.page, '#balance', '999.00');
    assert.equal(await alice.page.$$eval('#board button', (bs) => bs.map((b) => b.textContent || '.').join('')), 'xxxoo....');
    await waitText(alice.page, '#my-list', id);
    await waitText(bob.page, '#my-list', id);
    await shot(alice.page, 'finished-win.png');

    // What the pages showed is what the chain says.
    const chain = new Chain(node.url);
    const g = await chain.game('tictactoe', { id });
    assert.deepEqual([g.status, g.result, g.winner, g.x, g.o], ['finished', 'x_won', alice.address, alice.address, bob.address]);
    assert.equal((await chain.account('module:tictactoe')).balances.GOLD ?? '0', '0');
    await noReloadNoErrors(alice, bob);

    // The key controls (common/player-key.js): export, replace (after a confirmation), import
    // back; a key of another network is refused.
    await bob.page.click('#export');
    const wif = await bob.page.textContent('#wif-shown');
    assert.equal(Key.fromWif(wif).address, bob.address);
    bob.page.once('dialog', (d) => d.accept());
    await bob.page.click('#new-key');
    await bob.page.waitForFunction((a) => document.querySelector('#address').textContent !== a, bob.address);
    const fresh = await bob.page.textContent('#address');
    assert.equal(await bob.page.evaluate(() => localStorage.getItem('gamechain.wif') !== null), true);
    await bob.page.fill('#wif-input', Key.generate('mainnet').toWif());
    await bob.page.click('#import');
    await waitText(bob.page, '#error', 'import: that key is for mainnet, this chain is testnet');
    assert.equal(await bob.page.textContent('#address'), fresh);
    await bob.page.fill('#wif-input', wif);
    await bob.page.click('#import');
    await waitText(bob.page, '#address', bob.address);
    assert.equal(await bob.page.evaluate(() => localStorage.getItem('gamechain.wif')), wif);
    await waitText(bob.page, '#my-list', id);
  } finally {
    await node.dispose();
  }
});

test('a draw, then a timeout claimed from the height the page shows (100 ms blocks)', async () => {
  const node = await startNode({ blockIntervalMs: 100 });
  try {
    const url = `${node.url}/play/tictactoe/`;
    const alice = await player(browser, url, 'alice');
    const bob = await player(browser, url, 'bob');
    await faucet(alice);
    await faucet(bob);

    const draw = await createAndJoin(alice, bob, '2.50');
    await play(alice, bob, [0, 1, 2, 4, 3, 5, 7, 6, 8]);
    await waitText(alice.page, '#result', 'Draw: each player gets 2.50 GOLD back.');
    await waitText(bob.page, '#result', 'Draw: each player gets 2.50 GOLD back.');
    await waitText(alice.page, '#balance', '1000.00');
    await waitText(bob.page, '#balance', '1000.00');
    await shot(bob.page, 'finished-draw.png');

    // An open table its creator cancels: the stake comes back.
    await alice.page.evaluate(() => { location.hash = ''; });
    await alice.page.fill('#stake', '4');
    await act(alice, '#create-btn');
    await waitText(alice.page, '#balance', '996.00');
    await act(alice, '#cancel-btn');
    await waitText(alice.page, '#result', 'Cancelled: 4.00 GOLD back to you.');
    await waitText(alice.page, '#balance', '1000.00');

    // An invitation: not in the open list, but the invited player can open it by its id and join.
    await alice.page.evaluate(() => { location.hash = ''; });
    await alice.page.fill('#stake', '');
    await alice.page.fill('#opponent', bob.address);
    await act(alice, '#create-btn');
    await alice.page.waitForFunction(() => /^#[0-9a-f]{16}$/.test(location.hash));
    const invited = (await alice.page.evaluate(() => location.hash)).slice(1);
    await waitText(alice.page, '#players', `invited ${bob.address.slice(0, 8)}`);
    await bob.page.evaluate((id) => { location.hash = id; }, invited);
    await waitText(bob.page, '#turn', 'Open: join to play o');
    assert.equal(await bob.page.$(`#open-list li[data-id="${invited}"]`), null);
    await act(bob, '#join-btn');
    await waitText(alice.page, '#turn', 'Your turn (x)');
    await alice.page.fill('#opponent', '');

    await alice.page.evaluate(() => { location.hash = ''; });
    const slow = await createAndJoin(alice, bob, '1');
    assert.notEqual(slow, draw);
    await act(alice, '#board button[data-cell="4"]');
    const chain = new Chain(node.url);
    const g = await chain.game('tictactoe', { id: slow });
    const from = g.last_move_height + 150;
    // bob is to move: he cannot claim; alice sees when she can.
    await waitText(bob.page, '#turn', 'Your turn (o)');
    assert.equal(await bob.page.isHidden('#claim-btn'), true);
    await waitText(alice.page, '#claim-info', `The timeout can be claimed from height ${from}`);
    assert.equal(await alice.page.isDisabled('#claim-btn'), true);
    await alice.page.waitForSelector('#claim-btn:not([disabled])', { timeout: 60000 });
    await waitText(alice.page, '#claim-info', 'can be claimed now');
    await act(alice, '#claim-btn');
    await waitText(alice.page, '#result', 'You won (x_won, timeout): payout 2.00 GOLD to you.');
    await waitText(bob.page, '#result', /You lost \(x_won, timeout\)/);
    await waitText(alice.page, '#balance', '1001.00');
    await waitText(bob.page, '#balance', '999.00');
    await shot(alice.page, 'finished-timeout.png');
    await idle(bob.page);
    await noReloadNoErrors(alice, bob);
  } finally {
    await node.dispose();
  }
});
