// rules-csp.test.js: the SDK's Rules on a page whose content security policy forbids Workers
// from blob: URLs (a third-party site with a strict policy, unlike the node's own pages): the
// browser blocks the Worker only by an error event after the constructor returned. With the
// default `worker: 'auto'` the calls then run in the page's thread (`isolated` false) and still
// answer; with `worker: 'always'` they are a RulesError naming the policy. The node's own pages
// allow `worker-src blob:`, so there the calls are isolated (rps.test.js).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startNode } from '../testkit/node.js';
import { launch, routeBundle } from '../testkit/browser.js';
import { assemble, answer } from '../testkit/wasm.js';

test('Rules under a policy without worker-src blob: answer in the page (auto) or refuse (always)', async () => {
  const node = await startNode({ blockIntervalMs: 1000 });
  const browser = await launch();
  try {
    const context = await browser.newContext();
    await routeBundle(context);
    const page = await context.newPage();
    await page.route(`${node.url}/strict.html`, (route) => route.fulfill({
      status: 200,
      headers: { 'content-type': 'text/html', 'content-security-policy': "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'" },
      body: '<!doctype html><p>strict</p>',
    }));
    await page.goto(`${node.url}/strict.html`);
    const ok = answer(2048, 1);
    const wasm = [...assemble({ initial_state: ok, mover_at: ok, validate_move: ok, apply_move: ok, is_over: ok, winner: ok })];
    const out = await page.evaluate(async (bytes) => {
      const { Rules } = await import('/sdk/gamechain.js');
      const run = async (worker) => {
        const r = await Rules.load(new Uint8Array(bytes), { worker });
        const res = await Promise.all([0, 1, 2].map(() => r.isOver(new Uint8Array(0)).then(String, (e) => `${e.name}: ${e.message}`)));
        return { res, isolated: r.isolated };
      };
      return { auto: await run('auto'), always: await run('always') };
    }, wasm);
    assert.deepEqual(out.auto, { res: ['false', 'false', 'false'], isolated: false });
    for (const r of out.always.res) assert.match(r, /^RulesError: no Worker can start here \(a content security policy without worker-src blob:\?\)/);
  } finally {
    await browser.close();
    await node.dispose();
  }
});
