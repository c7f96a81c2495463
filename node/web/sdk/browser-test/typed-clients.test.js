// typed-clients.test.js: the typed clients the pages play through. The node serves, for each
// module a page uses (tictactoe, mnk, channel), /clients/<id>.ts, exactly what
// `gamechain module codegen --ts --module <id>` writes from the schema that node serves, and its
// compiled /clients/<id>.js; /play/tictactoe/ loads it, and a view answer that breaks the schema
// (a node that lies about a stake's type) is refused by the client and shown as the client's
// SchemaError, where a page reading raw JSON would have drawn it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startNode, gamechainBin } from '../testkit/node.js';
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

test('the node serves the clients codegen writes from its schemas, TypeScript and compiled', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gamechain-clients-'));
  try {
    for (const id of ['tictactoe', 'mnk', 'channel']) {
      const out = path.join(dir, `${id}.ts`);
      const r = spawnSync(gamechainBin(), ['module', 'codegen', '--ts', out, '--module', id, '--node', node.url], { encoding: 'utf8', timeout: 60000 });
      assert.equal(r.status, 0, `codegen ${id}: ${r.stderr}`);
      const served = await fetch(`${node.url}/clients/${id}.ts`);
      assert.equal(served.status, 200, `/clients/${id}.ts`);
      assert.equal(await served.text(), fs.readFileSync(out, 'utf8'), `/clients/${id}.ts is not what codegen writes from the node's schema`);
      const js = await fetch(`${node.url}/clients/${id}.js`);
      assert.equal(js.status, 200);
      assert.match(js.headers.get('content-type'), /^text\/javascript/);
      const text = await js.text();
      // Compiled: the types are gone, the checks and the client class are there.
      assert.doesNotMatch(text, /^import type/m);
      assert.doesNotMatch(text, /: Promise<\w+Answer>/);
      assert.match(text, /class SchemaError extends Error/);
      assert.match(text, new RegExp(`class ${id[0].toUpperCase()}${id.slice(1)}Client`));
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('/play/tictactoe/ reads its views through the generated client', async () => {
  const loaded = [];
  const p = await player(browser, `${node.url}/play/tictactoe/`, 'carol', {
    setup: async (page) => {
      page.on('request', (req) => loaded.push(new URL(req.url()).pathname));
      // A node that answers the lobby view with a stake as a number, not a decimal string.
      await page.route((url) => url.pathname === '/v1/games/tictactoe' && url.searchParams.has('open'), (route) => route.fulfill({
        status: 200,
        contentType: 'application/json',
        body: JSON.stringify({ games: [{ id: '00000000000000aa', x: 'nobody', o: null, opponent: null, stake: 12, board: '.........', turn: 'x', status: 'open', winner: null, result: null, reason: null, created_height: 1, last_move_height: 1, moves: 0 }] }),
      }));
    },
  });
  assert.ok(loaded.includes('/clients/tictactoe.js'), `the page did not load its client: ${loaded.join(' ')}`);
  await waitText(p.page, '#error', /open\.games.*stake.*decimal string/);
  assert.equal(await p.page.$$eval('#open-list li', (l) => l.length), 0, 'a game the client refused was drawn');
  await p.context.close();
});
