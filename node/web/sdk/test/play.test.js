// play.test.js: the seed's play.mjs (examples/play.mjs; only its import path, node URL and key
// folder changed) run as a user runs it, `node play.mjs`, against a node this test starts; every
// outcome of the transcript is checked (heights differ from the seed's, so their relations are).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startNode } from '../testkit/node.js';
import { Key } from '../src/index.js';

const here = path.dirname(fileURLToPath(import.meta.url));

test('play.mjs plays the seed\'s game and prints its transcript', async () => {
  const node = await startNode({ blockIntervalMs: 60000 });
  const keys = fs.mkdtempSync(path.join(os.tmpdir(), 'gamechain-play-'));
  try {
    const run = spawnSync(process.execPath, [path.join(here, '../examples/play.mjs')], {
      env: { ...process.env, GAMECHAIN_NODE: node.url, GAMECHAIN_KEYS: keys },
      encoding: 'utf8',
      timeout: 120000,
    });
    const out = run.stdout;
    assert.equal(run.status, 0, `play.mjs failed:\n${out}\n${run.stderr}`);
    const lines = out.split('\n');
    const line = (prefix) => {
      const l = lines.find((x) => x.startsWith(prefix));
      assert.ok(l !== undefined, `no line starting with ${JSON.stringify(prefix)} in:\n${out}`);
      return l;
    };
    const after = (prefix) => lines[lines.indexOf(line(prefix)) + 1] ?? '';
    const step = (label) => {
      const m = new RegExp(`^${label.replace(/[()]/g, '\\$&')}: txid ([0-9a-f]{64}) height (\\d+) ok (true|false)(?: error "(.*)")?$`).exec(line(`${label}: `));
      assert.ok(m, `step ${label}: ${line(`${label}: `)}`);
      return { txid: m[1], height: Number(m[2]), ok: m[3] === 'true', error: m[4] };
    };
    const event = (l) => { const m = /^ {3}event (\S+) (.*)$/.exec(l); assert.ok(m, l); return { kind: m[1], data: JSON.parse(m[2]) }; };

    // The keys: two 0600 files whose WIFs give the printed addresses.
    const alice = line('alice ').split(/\s+/)[1];
    const bob = line('bob  ').split(/\s+/)[1];
    for (const [name, addr] of [['alice', alice], ['bob', bob]]) {
      const file = path.join(keys, `${name}.wif`);
      assert.equal(fs.statSync(file).mode & 0o777, 0o600);
      assert.equal(Key.fromWif(fs.readFileSync(file, 'utf8')).address, addr);
      assert.ok(!out.includes(fs.readFileSync(file, 'utf8').trim()), 'a WIF reached the terminal');
    }

    // 1. Faucet
    for (const [who, addr] of [['alice', alice], ['bob', bob]]) {
      assert.equal(step(`faucet ${who}`).ok, true);
      assert.deepEqual(event(after(`faucet ${who}: `)), { kind: 'faucet', data: { amount: '100000', to: addr, token: 'GOLD' } });
    }
    assert.equal(line('before:'), 'before: alice 100000 bob 100000 escrow 0');

    // 2. Create with stake "100"; the id is the txid's first 16 hex; the open list has it.
    const create = step('create');
    assert.equal(create.ok, true);
    const created = event(after('create: '));
    const id = created.data.id;
    assert.deepEqual(created, { kind: 'tictactoe.created', data: { id, opponent: null, stake: '100', x: alice } });
    assert.equal(id, create.txid.slice(0, 16));
    assert.equal(line('game id '), `game id ${id} == first 16 hex of the txid: true`);
    const open = JSON.parse(line('open tables: ').slice('open tables: '.length));
    const table = open.games.find((g) => g.id === id);
    assert.deepEqual(table, {
      board: '.........', created_height: create.height, id, last_move_height: create.height, moves: 0,
      o: null, opponent: null, reason: null, result: null, stake: '100', status: 'open', turn: 'x', winner: null, x: alice,
    });

    // 3. Join, first move, the early claim with its height.
    assert.equal(step('join bob').ok, true);
    assert.deepEqual(event(after('join bob: ')), { kind: 'tictactoe.joined', data: { id, o: bob } });
    const m0 = step('move alice 0');
    assert.equal(m0.ok, true);
    assert.deepEqual(event(after('move alice 0: ')).data, { board: 'x........', by: alice, cell: 0, id, turn: 'o' });
    const claim = step('claim_timeout alice (too early)');
    assert.equal(claim.ok, false);
    assert.equal(claim.error, `invalid: timeout can be claimed from height ${m0.height + 150}`);
    assert.ok(claim.height > m0.height);

    // 4. The taken cell: refused, no events, the nonce used all the same.
    assert.equal(line('bob nonce before'), 'bob nonce before 2');
    const taken = step('move bob 0 (taken)');
    assert.deepEqual([taken.ok, taken.error], [false, 'invalid: cell is taken']);
    assert.match(after('move bob 0 (taken): '), /^bob nonce after/);
    assert.equal(line('bob nonce after'), 'bob nonce after  3');

    // 5. The win for x.
    const boards = { 'move bob 3': 'x..o.....', 'move alice 1': 'xx.o.....', 'move bob 4': 'xx.oo....', 'move alice 2': 'xxxoo....' };
    let height = taken.height;
    for (const [label, board] of Object.entries(boards)) {
      const s = step(label);
      assert.equal(s.ok, true, label);
      assert.ok(s.height > height, `${label} after the previous step`);
      height = s.height;
      assert.equal(event(after(`${label}: `)).data.board, board);
    }
    const fin = lines[lines.indexOf(line('move alice 2: ')) + 2];
    assert.deepEqual(event(fin), { kind: 'tictactoe.finished', data: { id, payout: '200', reason: 'line', result: 'x_won', winner: alice } });

    // 6. Afterwards.
    assert.equal(line('after: '), 'after:  alice 100100 bob 99900 escrow 0');
    const game = JSON.parse(line('game: ').slice('game: '.length));
    assert.deepEqual(game, {
      board: 'xxxoo....', created_height: create.height, id, last_move_height: height, moves: 5, o: bob, opponent: null,
      reason: 'line', result: 'x_won', stake: '100', status: 'finished', turn: 'o', winner: alice, x: alice,
    });
    assert.equal(line('alice games:'), `alice games: [ '${id}' ]`);
    assert.equal(line('bob games:'), `bob games:   [ '${id}' ]`);
  } finally {
    await node.dispose();
    fs.rmSync(keys, { recursive: true, force: true });
  }
});
