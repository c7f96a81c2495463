// seal.mjs: how long a sealed move takes in this Node: sealMove, checkSealed and openSealed on the
// Rust vectors' key, context and beacon (test/fixtures/seal_vectors.json), RUNS times each (default
// 20) after one warm-up call each. Prints the median, min and max in ms. No node is started.
// Run: node bench/seal.mjs
import fs from 'node:fs';
import { sealMove, checkSealed, openSealed } from '../src/index.js';

const RUNS = Number(process.env.RUNS ?? 20);
const v = JSON.parse(fs.readFileSync(new URL('../test/fixtures/seal_vectors.json', import.meta.url), 'utf8'));
const c = v.cases[0];
// The JSON's tags are hex: bytes. The check is under the vectors' beacon key (the proof binds it).
const ctx = { module: c.module, sender: c.sender, tag: Buffer.from(c.tag, 'hex'), round: c.round, beaconPublicKey: v.beacon_public_key };

function time(name, f) {
  f();
  const ts = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    f();
    ts.push(performance.now() - t0);
  }
  ts.sort((a, b) => a - b);
  const median = RUNS % 2 ? ts[(RUNS - 1) / 2] : (ts[RUNS / 2 - 1] + ts[RUNS / 2]) / 2;
  console.log(`${name.padEnd(12)} median ${median.toFixed(1)} ms, min ${ts[0].toFixed(1)} ms, max ${ts.at(-1).toFixed(1)} ms (${RUNS} runs)`);
}

console.log(`sealed moves, Node ${process.version}:`);
time('sealMove', () => sealMove({ ...ctx, chainId: v.chain_id, plaintext: c.plaintext }));
time('checkSealed', () => { if (checkSealed(c.sealed, ctx) !== 'ok') throw new Error('the vector does not check'); });
time('openSealed', () => { if (!openSealed(c.sealed, c.beacon)) throw new Error('the vector does not open'); });
