// typed-clients.test.js: the typed clients the pages play through. The node serves, for each
// module a page uses (tictactoe, mnk, channel), /clients/<id>.ts, exactly what
// `gamechain module codegen --ts --module <id>` writes from the schema that node serves, and its
// compiled /clients/<id>.js. /play/tictactoe/ loads it and follows the module's events query (no
// block feed); each of its views (the lobby, the player's games, one game) answered in a way that
// breaks the schema (a node that lies) is refused by the client and shown as its SchemaError,
// where a page reading raw JSON would have drawn it, and the other parts stay drawn. /play/mnk/
// never draws a board larger than the modules allow. A node whose schema differs from the one
// the client was made from is said so on the page.
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

/** A tic-tac-toe game record as the module's views answer it, with `over` laid on top. */
const record = (over = {}) => ({ id: '00000000000000aa', x: 'nobody', o: null, opponent: null, stake: '12', board: '.........', turn: 'x', status: 'open', winner: null, result: null, reason: null, created_height: 1, last_move_height: 1, moves: 0, ...over });

/** A player on `path` whose requests for view `view` (a query key) are answered with `answer`. */
async function lied(path, name, view, answer, setup) {
  const sockets = [];
  const loaded = [];
  const p = await player(browser, `${node.url}${path}`, name, {
    setup: async (page) => {
      page.on('websocket', (ws) => sockets.push(new URL(ws.url())));
      page.on('request', (req) => loaded.push(new URL(req.url()).pathname));
      await page.route((url) => url.pathname.startsWith('/v1/games/') && url.searchParams.has(view), (route) => route.fulfill({
        status: 200, contentType: 'application/json', body: JSON.stringify(answer),
      }));
      if (setup) await setup(page);
    },
  });
  return { ...p, sockets, loaded };
}

test('/play/tictactoe/ reads every view through the generated client, one part at a time, over the events query', async () => {
  // The lobby: a stake as a number is refused; the rest of the page is drawn.
  const a = await lied('/play/tictactoe/', 'carol', 'open', { games: [record({ stake: 12 })] });
  assert.ok(a.loaded.includes('/clients/tictactoe.js'), `the page did not load its client: ${a.loaded.join(' ')}`);
  await waitText(a.page, '#error', /open\.games.*stake.*decimal string/);
  assert.equal(await a.page.$$eval('#open-list li', (l) => l.length), 0, 'a game the client refused was drawn');
  await waitText(a.page, '#balance', /^\d+\.\d\d$/);
  // It follows the module's events, not whole blocks.
  await waitText(a.page, '#live', 'live');
  const paths = a.sockets.map((u) => `${u.pathname}?${u.searchParams}`);
  assert.deepEqual(paths, ['/v1/ws/events?module=tictactoe'], paths.join(' '));
  await a.context.close();

  // The player's games: an enum value the schema does not have.
  const b = await lied('/play/tictactoe/', 'dave', 'player', { games: [record({ status: 'finished', reason: 'agreed' })] });
  await waitText(b.page, '#error', /player\.games.*reason.*expected one of/);
  assert.equal(await b.page.$$eval('#my-list li', (l) => l.length), 0);
  await b.context.close();

  // One game: a stake over 2^53 as a number cannot be a decimal string either.
  const c = await lied('/play/tictactoe/#00000000000000aa', 'erin', 'id', record({ stake: 1e30 }));
  await waitText(c.page, '#error', /game.*stake/);
  assert.equal(await c.page.isVisible('#board button'), false, 'a refused game was drawn');
  await c.context.close();
});

test('/play/mnk/ refuses a board the modules cannot have; a schema the client was not made from is said so', async () => {
  const huge = { id: '00000000000000bb', x: 'nobody', o: null, opponent: null, stake: '0', rows: 100000, cols: 100000, k: 5, board: '.'.repeat(1000), turn: 'x', status: 'open', winner: null, result: null, reason: null, created_height: 1, last_move_height: 1, moves: 0, log_hash: '00'.repeat(32) };
  const m = await lied('/play/mnk/#00000000000000bb', 'frank', 'id', huge);
  // Either the client refuses the record (schema) or the page refuses the board (bounds): never drawn.
  await waitText(m.page, '#error', /00000000000000bb|game/);
  assert.equal(await m.page.$$eval('#board button', (l) => l.length), 0);
  await m.context.close();

  const s = await lied('/play/tictactoe/', 'gina', 'nothing', {}, async (page) => {
    await page.route('**/v1/modules/tictactoe/schema', async (route) => {
      const real = await route.fetch();
      const text = (await real.text()).replace('"ops"', '"ops" ');
      await route.fulfill({ status: 200, contentType: 'application/json', body: text });
    });
  });
  await waitText(s.page, '#notice', /client was made from schema [0-9a-f]{12}…, the node's tictactoe has schema [0-9a-f]{12}…/);
  await s.context.close();
});

test('/play/tictactoe/ pages the lobby: More while the module names a next page, the next page appended', async () => {
  const ids = ['00000000000000a1', '00000000000000a2', '00000000000000a3'];
  const asked = [];
  const p = await player(browser, `${node.url}/play/tictactoe/`, 'hana', {
    setup: async (page) => {
      await page.route((url) => url.pathname === '/v1/games/tictactoe' && url.searchParams.has('open'), (route) => {
        const after = new URL(route.request().url()).searchParams.get('after');
        asked.push(after);
        const answer = after === null
          ? { games: [record({ id: ids[0], created_height: 1 }), record({ id: ids[1], created_height: 2 })], next: ids[1] }
          : after === ids[1] ? { games: [record({ id: ids[2], created_height: 3 })] } : { games: [] };
        return route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify(answer) });
      });
    },
  });
  await p.page.waitForFunction(() => document.querySelectorAll('#open-list li').length === 2);
  assert.equal(await p.page.isVisible('#open-more'), true, 'a full page (next named) shows More');
  assert.equal(await p.page.isVisible('#my-more'), false, "the real node's short list has no next");
  await p.page.click('#open-more');
  await p.page.waitForFunction(() => document.querySelectorAll('#open-list li').length === 3);
  assert.deepEqual(await p.page.$$eval('#open-list li', (l) => l.map((li) => li.dataset.id)), ids);
  await p.page.waitForFunction(() => document.querySelector('#open-more').hidden);
  assert.ok(asked.includes(ids[1]), `the second page was asked for with after=<next>: ${asked.join(',')}`);
  await p.context.close();
});
