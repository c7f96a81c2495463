// seal.test.js: sealed moves in headless Chromium. No node is started: a page at a made-up origin
// loads the SDK's browser bundle ($GAMECHAIN_SDK_BUNDLE, else this checkout's src/index.js bundled
// here by esbuild as scripts/bundle.mjs does), seals the Rust vectors
// (test/fixtures/seal_vectors.json) to their exact bytes, checks them under the vectors' beacon key
// (an envelope sealed under another key is unbound there) and opens them, seals with the browser's
// own randomness and opens that, and times it. Prints the median ms of a seal, a check
// and an open in Chromium.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { build } from 'esbuild';
import { bls12_381 } from '@noble/curves/bls12-381.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { launch } from '../testkit/browser.js';

const ORIGIN = 'http://seal.test';
const RUNS = 10;
const vectors = JSON.parse(fs.readFileSync(new URL('../test/fixtures/seal_vectors.json', import.meta.url), 'utf8'));
/** Another beacon key (a key derived here, from a fixed seed): envelopes sealed under it are unbound under the vectors'. */
const OTHER_KEY = (() => {
  const short = bls12_381.shortSignatures;
  return bytesToHex(short.getPublicKey(short.keygen(new Uint8Array(48).fill(5)).secretKey).toBytes());
})();

async function bundle() {
  if (process.env.GAMECHAIN_SDK_BUNDLE) return fs.readFileSync(process.env.GAMECHAIN_SDK_BUNDLE);
  const r = await build({
    entryPoints: [new URL('../src/index.js', import.meta.url).pathname],
    bundle: true, format: 'esm', platform: 'browser', target: 'es2022', minify: true, write: false, logLevel: 'error',
  });
  return Buffer.from(r.outputFiles[0].contents);
}

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

test('Chromium seals the Rust vectors to their bytes, checks and opens them, and its own random seals', async () => {
  const sdk = await bundle();
  const context = await browser.newContext();
  await context.route(`${ORIGIN}/**`, (route) => {
    const { pathname } = new URL(route.request().url());
    if (pathname === '/sdk/gamechain.js') return route.fulfill({ status: 200, headers: { 'content-type': 'text/javascript; charset=utf-8' }, body: sdk });
    return route.fulfill({ status: 200, headers: { 'content-type': 'text/html; charset=utf-8' }, body: '<!doctype html><title>seal</title><p>seal</p>' });
  });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${ORIGIN}/`);
  const out = await page.evaluate(async ({ v, runs }) => {
    const { sealMove, checkSealed, openSealed, plaintextOf } = await import('/sdk/gamechain.js');
    const hex = (b) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
    const bytes = (h) => Uint8Array.from(h.match(/../g) ?? [], (x) => parseInt(x, 16));
    const otherKey = v.other_key;
    const cases = v.cases.map((c) => {
      const ctx = { module: c.module, sender: c.sender, tag: bytes(c.tag), round: c.round, beaconPublicKey: v.beacon_public_key };
      const sealed = sealMove({ ...ctx, chainId: v.chain_id, plaintext: c.plaintext, entropy: bytes(c.entropy) });
      const opened = openSealed(c.sealed, c.beacon);
      // The same move sealed under another key.
      const faked = sealMove({ ...ctx, beaconPublicKey: otherKey, chainId: v.chain_id, plaintext: c.plaintext, entropy: bytes(c.entropy) });
      return {
        same: sealed === c.sealed,
        check: checkSealed(c.sealed, ctx),
        otherRound: checkSealed(c.sealed, { ...ctx, round: c.round + 1 }),
        otherKey: checkSealed(faked, ctx),
        noKey: checkSealed(c.sealed, { ...ctx, beaconPublicKey: undefined }),
        opened: opened && hex(opened),
        wrong: openSealed(c.sealed, c.wrong_beacon),
      };
    });
    // The browser's randomness: two seals of one move differ, both check and open.
    const c = v.cases[0];
    const ctx = { module: c.module, sender: c.sender, tag: bytes(c.tag), round: c.round, beaconPublicKey: v.beacon_public_key };
    const move = plaintextOf(new TextEncoder().encode('paper'));
    const seal = () => sealMove({ ...ctx, chainId: v.chain_id, plaintext: move });
    const a = seal();
    const b = seal();
    const random = { differ: a !== b, checks: [checkSealed(a, ctx), checkSealed(b, ctx)], opens: [a, b].map((e) => hex(openSealed(e, c.beacon) ?? [])), move: hex(move) };
    const median = (f) => {
      const ts = [];
      for (let i = 0; i < runs; i++) { const t0 = performance.now(); f(); ts.push(performance.now() - t0); }
      ts.sort((x, y) => x - y);
      return ts[Math.floor(runs / 2)];
    };
    const ms = { seal: median(seal), check: median(() => checkSealed(a, ctx)), open: median(() => openSealed(a, c.beacon)) };
    return { cases, random, ms, agent: navigator.userAgent };
  }, { v: { ...vectors, other_key: OTHER_KEY }, runs: RUNS });
  vectors.cases.forEach((c, i) => {
    assert.deepEqual(out.cases[i], { same: true, check: 'ok', otherRound: 'unbound', otherKey: 'unbound', noKey: 'malformed', opened: c.plaintext, wrong: null }, c.module);
  });
  assert.equal(out.random.differ, true);
  assert.deepEqual(out.random.checks, ['ok', 'ok']);
  assert.deepEqual(out.random.opens, [out.random.move, out.random.move]);
  assert.deepEqual(errors, []);
  const chrome = out.agent.match(/Chrom(e|ium)\/[\d.]+/)?.[0] ?? out.agent;
  console.log(`sealed moves in ${chrome} (median of ${RUNS}): seal ${out.ms.seal.toFixed(1)} ms, check ${out.ms.check.toFixed(1)} ms, open ${out.ms.open.toFixed(1)} ms`);
  await context.close();
});
