// dev-page.test.js: /dev/?module=<id>, the page `gamechain dev` opens, in headless Chromium
// against a node this test starts (tictactoe at genesis): one form per op and per view of the
// module's schema; the faucet funds the page's dev key; a create sent from its form is included
// and its event appears in the live list (the node's events query); the `game` view answers for
// that id; an op the module
// refuses shows the receipt's error text; a module without a schema, or none, says so.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startNode } from '../testkit/node.js';
import { launch, player, waitText } from '../testkit/browser.js';

let browser;
let node;
before(async () => {
  browser = await launch();
  node = await startNode({ blockIntervalMs: 60000 });
});
after(async () => {
  await browser?.close();
  await node?.stop();
});

test('ops and views as forms from the schema, sent and answered, events live', async () => {
  const schema = await (await fetch(`${node.url}/v1/modules/tictactoe/schema`)).json();
  const p = await player(browser, `${node.url}/dev/?module=tictactoe`, 'dev');
  const { page } = p;
  await waitText(page, '#title', /^tictactoe \(schema version 1, code [0-9a-f]{12}\)/);
  assert.deepEqual(await page.$$eval('form.op', (f) => f.map((x) => x.getAttribute('id'))), schema.ops.map((o) => `op-${o.kind}`));
  assert.deepEqual(await page.$$eval('form.view', (f) => f.map((x) => x.getAttribute('id'))), schema.views.map((v) => `view-${v.name}`));
  await waitText(page, '#live', 'live');

  await page.click('#faucet');
  await waitText(page, '#balance', '1000.00 GOLD');
  // The faucet's own result stays beside it (the balance line is redrawn).
  await waitText(page, '#faucet-result', /^ok at block \d+/);

  await page.fill('#op-create input[name="stake"]', '250');
  await page.click('#op-create button');
  await waitText(page, '#op-create .note', /^ok at block \d+/);
  await waitText(page, '#events', /tictactoe\.created \{"id":"[0-9a-f]{16}"/);
  const id = /"id":"([0-9a-f]{16})"/.exec(await page.textContent('#events'))[1];
  await waitText(page, '#balance', '997.50 GOLD');

  await page.fill('#view-game input[name="id"]', id);
  await page.click('#view-game button');
  await waitText(page, '#view-game pre', '"status": "open"');
  const answer = JSON.parse(await page.textContent('#view-game pre'));
  assert.equal(answer.id, id);
  assert.equal(answer.stake, '250');
  assert.equal(answer.x, p.address ?? await page.textContent('#address'));

  // A move on a game nobody joined: the module's own error text, from the failed receipt.
  await page.fill('#op-move input[name="id"]', id);
  await page.fill('#op-move input[name="cell"]', '4');
  await page.click('#op-move button');
  await waitText(page, '#op-move .note', /^failed: /);
  assert.deepEqual(p.errors, []);
  await p.context.close();
});

test('a module the node does not have is named, with the node answer', async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${node.url}/dev/?module=nosuch`);
  await waitText(page, '#ops', /^nosuch: .*not_found/);
  await context.close();
});
