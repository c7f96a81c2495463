// mnk-explorer.test.js: /play/mnk/ and the explorer at / in headless Chromium, on a fresh node:
// m,n,k is at genesis on the default chain (on a node without it, the test builds modules/mnk with
// `gamechain module build` and deploys it with the SDK); alice and bob play a 4×5 board (3 in a
// row) that ends by bob's resignation; the explorer lists the module with the SHA-256 of its
// code and its schema's ops and events, shows the blocks live and looks the game up.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { startNode } from '../testkit/node.js';
import { deploy } from '../testkit/modules.js';
import { launch, player, waitText, act, shot } from '../testkit/browser.js';
import { Chain, Key } from '../src/index.js';
let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

test('m,n,k on a deployed module, and the explorer', async () => {
  const node = await startNode({ blockIntervalMs: 60000 });
  try {
    const chain = new Chain(node.url);
    await deploy(chain, [['mnk', 'mnk']]);
    // The code the node runs: its record's hash is the SHA-256 of the bytes it serves.
    const codeHash = (await chain.module('mnk')).code_hash;
    assert.equal(bytesToHex(sha256(await chain.code(codeHash))), codeHash);

    const url = `${node.url}/play/mnk/`;
    const alice = await player(browser, url, 'alice');
    const bob = await player(browser, url, 'bob');
    for (const p of [alice, bob]) { await act(p, '#faucet'); await waitText(p.page, '#balance', '1000.00'); }
    await alice.page.fill('#rows', '4');
    await alice.page.fill('#cols', '5');
    await alice.page.fill('#k', '3');
    await alice.page.fill('#stake', '3');
    await act(alice, '#create-btn');
    await alice.page.waitForFunction(() => /^#[0-9a-f]{16}$/.test(location.hash));
    const id = (await alice.page.evaluate(() => location.hash)).slice(1);
    await bob.page.waitForSelector(`#open-list li[data-id="${id}"]`, { timeout: 30000 });
    assert.match(await bob.page.textContent(`#open-list li[data-id="${id}"]`), /4×5, 3 in a row/);
    await bob.page.click(`#open-list li[data-id="${id}"] a`);
    await act(bob, '#join-btn');
    assert.equal(await alice.page.locator('#board button').count(), 20);
    // Cell index = row * cols + col: (0,0), (1,0), (0,1); then bob resigns.
    for (const [p, cell] of [[alice, 0], [bob, 5], [alice, 1]]) {
      await waitText(p.page, '#turn', 'Your turn');
      await act(p, `#board button[data-cell="${cell}"]`);
      await waitText(p.page, `#board button[data-cell="${cell}"]`, p === alice ? 'x' : 'o');
    }
    await waitText(bob.page, '#turn', 'Your turn (o)');
    await act(bob, '#resign-btn');
    await waitText(alice.page, '#result', 'You won (x_won, resign): payout 6.00 GOLD to you.');
    await waitText(bob.page, '#result', /You lost \(x_won, resign\)/);
    await waitText(alice.page, '#balance', '1003.00');
    const g = await chain.game('mnk', { id });
    assert.deepEqual([g.rows, g.cols, g.k, g.board], [4, 5, 3, 'xx...o..............']);
    await shot(alice.page, 'mnk-finished.png');

    const ex = await player(browser, `${node.url}/`, 'explorer');
    await waitText(ex.page, '#modules', `mnk${codeHash}`);
    // The module's schema, listed from GET /v1/modules/mnk/schema.
    await ex.page.click('#modules tr:has(td:text-is("mnk")) button');
    await waitText(ex.page, '#schema', /Schema of mnk \(module mnk, version 1\)/);
    await waitText(ex.page, '#schema', /move \{id: hex, row: u32, col: u32\}/);
    await waitText(ex.page, '#schema', /mnk\.resigned/);
    await waitText(ex.page, '#status', 'gamechain-dev');
    // A new block appears live: a transfer by alice's key from a page-independent client.
    const someone = Key.generate();
    const t = await chain.send(someone, { type: 'faucet', token: 'GOLD' });
    await chain.waitForReceipt(t);
    await waitText(ex.page, '#blocks', `${t.slice(0, 12)}`);
    await ex.page.fill('#query', `mnk ${id}`);
    await ex.page.click('#lookup');
    await waitText(ex.page, '#found', '"reason": "resign"');
    await ex.page.fill('#query', 'nonsense');
    await ex.page.click('#lookup');
    await waitText(ex.page, '#error', /^bad_address: /);
    await shot(ex.page, 'explorer.png');
    for (const p of [alice, bob, ex]) assert.deepEqual(p.errors, []);
  } finally {
    await node.dispose();
  }
});
