// examples.test.js: the README's off-chain example, examples/rps.mjs, run as a reader would
// (`node examples/rps.mjs` against a node running channel, moveboard and rps_rules, with
// GAMECHAIN_DEV_CLOCK=1 so the window passes on the dev clock): the game ends with alice's paper
// over bob's rock, is settled and withdrawn, and the balances add up.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startNode } from '../testkit/node.js';
import { deploy, CHANNEL_MODULES } from '../testkit/modules.js';
import { Chain } from '../src/index.js';

const here = path.dirname(fileURLToPath(import.meta.url));

test('examples/rps.mjs plays, settles and withdraws a whole game', async () => {
  const node = await startNode({ blockIntervalMs: 200 });
  try {
    await deploy(new Chain(node.url), CHANNEL_MODULES);
    const child = spawn(process.execPath, [path.join(here, '../examples/rps.mjs')], { env: { ...process.env, GAMECHAIN_NODE: node.url, GAMECHAIN_DEV_CLOCK: '1' } });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; });
    const code = await new Promise((resolve) => child.on('exit', resolve));
    assert.equal(code, 0, `${out}\n${err}`);
    assert.match(out, /^game [0-9a-f]{16}: alice \S+, bob \S+$/m);
    assert.match(out, /^over: seat 0 won, choices 1,0$/m);
    assert.match(out, /^settled at block \d+: final at block time \d+$/m);
    assert.match(out, /^paid: alice 100100, bob 99900$/m);
  } finally {
    await node.dispose();
  }
});
