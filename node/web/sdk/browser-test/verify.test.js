// verify.test.js: /verify/ in headless Chromium against a node this test starts. Two players
// (alice, bob: their own browser contexts) play tic-tac-toe to the end on /play/tictactoe/ with
// session keys (one signature of their own key each; nine moves, a draw); the finished table links to /verify/; a third browser opens it and sees every
// step match (✓ on each of the 11 steps, the board drawn); the same page with the node's
// transcript answer changed in flight (playwright page.route: one receipt's event data) shows
// the divergence at that step, and a tampered transcript file (two moves swapped) loaded through
// the page's file input shows it at the step that moves out of turn. A 200-move m,n,k game
// (15×15, k = 15: no line can fill) played through the SDK verifies too. Prints the transcript
// sizes and the ms the browser took to verify each (the closing note of issue 26 quotes them).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startNode } from '../testkit/node.js';
import { launch, player, waitText, act, shot } from '../testkit/browser.js';
import { Chain, Key } from '../src/index.js';

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

/** A fresh browser context at `url`, waiting for the verification to end. */
async function verifier(url, name, setup) {
  const v = await player(browser, url, name, { setup });
  await v.page.waitForSelector('body[data-done="1"]', { timeout: 120000 });
  return v;
}

test('a third browser verifies a finished tic-tac-toe match; tampered transcripts are shown as divergent', async () => {
  const url = `${node.url}/play/tictactoe/`;
  const alice = await player(browser, url, 'alice');
  const bob = await player(browser, url, 'bob');
  // Each player signs once with their own key (the session's authorization, docs/session-keys.md):
  // every game op is then a session_game signed by the key kept in the browser.
  for (const p of [alice, bob]) {
    await act(p, '#faucet');
    await waitText(p.page, '#balance', '1000.00');
    // The balance is proven from the genesis alone: the node's answer with its proof against
    // the head block's signed state root (getStateProven).
    await waitText(p.page, '#balance-proof', /^✓ proven at block \d+$/);
    await p.page.fill('#session-cap', '10.00');
    await act(p, '#session-start');
    assert.equal(await p.page.textContent('#error'), '', `${p.name}: ${await p.page.textContent('#error')}`);
    await waitText(p.page, '#session-status', /^Session key \w+… plays tictactoe for you/);
  }
  await alice.page.fill('#stake', '2.5');
  await act(alice, '#create-btn');
  await alice.page.waitForFunction(() => /^#[0-9a-f]{16}$/.test(location.hash));
  const id = (await alice.page.evaluate(() => location.hash)).slice(1);
  await bob.page.waitForSelector(`#open-list li[data-id="${id}"]`, { timeout: 30000 });
  await bob.page.click(`#open-list li[data-id="${id}"] a`);
  await act(bob, '#join-btn');
  for (const [i, cell] of [0, 1, 2, 4, 3, 5, 7, 6, 8].entries()) {
    const p = i % 2 === 0 ? alice : bob;
    await waitText(p.page, '#turn', 'Your turn');
    await act(p, `#board button[data-cell="${cell}"]`);
    assert.equal(await p.page.textContent('#error'), '', `${p.name} cell ${cell}`);
  }
  await waitText(alice.page, '#result', 'Draw');
  await alice.page.waitForSelector('#verify-link');
  const href = await alice.page.getAttribute('#verify-link', 'href');
  assert.equal(href, `/verify/?module=tictactoe&id=${id}`);

  // The third browser.
  const carol = await verifier(`${node.url}${href}`, 'carol');
  assert.equal(await carol.page.getAttribute('body', 'data-result'), 'verified', `${await carol.page.textContent('#status')} ${await carol.page.textContent('#divergence')}`);
  await waitText(carol.page, '#status', 'Verified: all 11 steps match (finished; code of the genesis)');
  const marks = await carol.page.$$eval('#steps tr', (rows) => rows.map((l) => `${l.dataset.ok}${l.textContent.slice(0, 1)}`));
  assert.deepEqual(marks, Array(11).fill('1✓'));
  assert.equal(await carol.page.$$eval('#board button', (bs) => bs.map((b) => b.textContent || '.').join('')), 'xoxxoooxx');
  assert.equal(await carol.page.textContent('#divergence'), '');
  const tttMs = Number(await carol.page.getAttribute('body', 'data-elapsed'));
  const chain = new Chain(node.url);
  const transcript = await chain.transcript('tictactoe', id);
  const tttBytes = JSON.stringify(transcript).length;
  // Every step was signed by a session key for its player's account.
  const actions = transcript.steps.map((st) => JSON.parse(st.body).action);
  assert.ok(actions.every((a) => a.type === 'session_game'), JSON.stringify(actions.map((a) => a.type)));
  assert.deepEqual([...new Set(actions.map((a) => a.account))].sort(), [alice.address, bob.address].sort());
  await shot(carol.page, 'verify-tictactoe.png');
  assert.deepEqual(carol.errors, []);

  // A test node that lies: the transcript answer changed in flight (step 4's event data).
  const liar = await verifier(`${node.url}${href}`, 'liar', async (page) => {
    await page.route('**/v1/games/tictactoe/*/transcript', async (route) => {
      const res = await route.fetch();
      const t = await res.json();
      t.steps[4].receipt.events[0].data.cell = 8;
      await route.fulfill({ response: res, body: JSON.stringify(t) });
    });
  });
  assert.equal(await liar.page.getAttribute('body', 'data-result'), 'diverged');
  await waitText(liar.page, '#divergence', `Divergence at step 4 (tx ${transcript.steps[4].txid}): receipt_proof.`);
  const liarMarks = await liar.page.$$eval('#steps tr', (rows) => rows.map((l) => l.dataset.ok).join(''));
  assert.equal(liarMarks, '11110');
  assert.equal(await liar.page.$eval('#steps tr:last-child', (l) => getComputedStyle(l).color), 'rgb(160, 24, 24)');
  await shot(liar.page, 'verify-tampered.png');

  // A tampered transcript file through the page's input: two moves swapped.
  const swapped = structuredClone(transcript);
  [swapped.steps[5], swapped.steps[6]] = [swapped.steps[6], swapped.steps[5]];
  await carol.page.setInputFiles('#file', { name: 'swapped.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(swapped)) });
  await carol.page.waitForSelector('body[data-done="1"]', { timeout: 60000 });
  await waitText(carol.page, '#divergence', `Divergence at step 5 (tx ${swapped.steps[5].txid}): ok. Expected true; got false.`);
  assert.equal(await carol.page.getAttribute('body', 'data-result'), 'diverged');
  // The untouched file verifies again.
  await carol.page.setInputFiles('#file', { name: 'good.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(transcript)) });
  await carol.page.waitForSelector('body[data-done="1"]', { timeout: 60000 });
  assert.equal(await carol.page.getAttribute('body', 'data-result'), 'verified');
  console.log(`tic-tac-toe, 9 moves (11 steps): transcript ${tttBytes} bytes, verified in the browser in ${tttMs} ms`);
});

test('a 200-move m,n,k game verifies in the browser', async () => {
  const chain = new Chain(node.url);
  const x = Key.generate();
  const o = Key.generate();
  for (const k of [x, o]) await chain.waitForReceipt(await chain.send(k, { type: 'faucet', token: 'GOLD' }), { timeoutMs: 30000 });
  const play = async (key, op) => {
    const r = await chain.waitForReceipt(await chain.send(key, { type: 'game', game: 'mnk', op }), { timeoutMs: 30000 });
    assert.equal(r.ok, true, `${JSON.stringify(op)}: ${r.error}`);
    return r;
  };
  const created = await play(x, { kind: 'create', rows: 15, cols: 15, k: 15, stake: '10' });
  const id = created.events[0].data.id;
  await play(o, { kind: 'join', id });
  // Row-major cells 0..199 alternately: rows and columns alternate marks (15 is odd) and no
  // diagonal of 15 cells is filled, so nobody wins before move 200.
  const started = Date.now();
  for (let i = 0; i < 200; i++) await play(i % 2 ? o : x, { kind: 'move', id, row: Math.floor(i / 15), col: i % 15 });
  console.log(`m,n,k: 200 moves played in ${Date.now() - started} ms`);
  const transcript = await chain.transcript('mnk', id);
  assert.equal(transcript.steps.length, 202);
  const bytes = JSON.stringify(transcript).length;
  const v = await verifier(`${node.url}/verify/?module=mnk&id=${id}`, 'mnk-verifier');
  assert.equal(await v.page.getAttribute('body', 'data-result'), 'verified', await v.page.textContent('#status'));
  await waitText(v.page, '#status', 'Verified: all 202 steps match (not shown to have finished; code of the genesis)');
  // Every proof: the steps' inclusion proofs and signed headers, and the game's log proven
  // against a signed state root, so none of the 202 steps was left out.
  await waitText(v.page, '#status', /Complete: proven — the chain's own log of the game at block \d+ holds exactly these 202 steps/);
  const ms = Number(await v.page.getAttribute('body', 'data-elapsed'));
  assert.equal(await v.page.$$eval('#board button', (bs) => bs.filter((b) => b.textContent).length), 200);
  await shot(v.page, 'verify-mnk-200.png');
  assert.deepEqual(v.errors, []);
  console.log(`m,n,k, 200 moves (202 steps): transcript ${bytes} bytes, verified in the browser in ${ms} ms`);
});
