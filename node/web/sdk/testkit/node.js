// testkit/node.js: starts the real `gamechain` binary for the JS suites: a dev chain in a fresh
// temporary folder on a free loopback port, no rate limit (or the one asked for), a chosen block
// interval, blocks at least `minBlockIntervalMs` apart (default 10 ms, so suites stay quick; the
// default chain's is 1,000 ms) and the dev clock on (`advanceClock(ms)`: POST /v1/dev/clock, so
// block-time deadlines pass without waiting for them); waits until it answers /v1/status; stops
// (SIGTERM) and restarts on the same port and data (the dev clock moved forward as before).
// The binary: $GAMECHAIN_BIN, else target/debug/gamechain under $CARGO_TARGET_DIR or the
// repository's target/ (the Rust test node/tests/web/web_js.rs sets GAMECHAIN_BIN). Every node
// shares one compiled-module cache, `tmp/compiled-modules` under that target folder (the Rust
// tests' own: node/tests/common/mod.rs), so each genesis module is compiled once per run.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../../../..');

/** The gamechain binary to run, or an Error saying how to get one. */
export function gamechainBin() {
  const candidates = process.env.GAMECHAIN_BIN
    ? [process.env.GAMECHAIN_BIN]
    : [path.join(process.env.CARGO_TARGET_DIR ?? path.join(repo, 'target'), 'debug/gamechain')];
  for (const c of candidates) if (fs.existsSync(c)) return c;
  throw new Error(`no gamechain binary at ${candidates.join(', ')}: build it with \`cargo build -p gamechain-node\` or set GAMECHAIN_BIN`);
}

/** The compiled-module cache the suites' nodes share (`compiled_dir`). */
export function sharedCompiledDir() {
  return path.join(process.env.CARGO_TARGET_DIR ?? path.join(repo, 'target'), 'tmp', 'compiled-modules');
}

/** A free loopback port (bound once and released). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Starts a node. `blockIntervalMs`: longest time between blocks (empty blocks at this pace);
 * `minBlockIntervalMs`: the new chain's least time between blocks (consensus).
 * @returns {Promise<{url: string, dir: string, log: () => string, stop: () => Promise<void>, restart: () => Promise<void>}>}
 */
export async function startNode({ blockIntervalMs = 60000, minBlockIntervalMs = 10, rateLimitPerSec = 0, rateLimitBurst = 0, extra = '' } = {}) {
  const bin = gamechainBin();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gamechain-js-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  fs.writeFileSync(path.join(dir, 'node.toml'), [
    `data_dir = "${path.join(dir, 'data')}"`,
    `listen = "127.0.0.1:${port}"`,
    `rate_limit_per_sec = ${rateLimitPerSec}`,
    ...(rateLimitPerSec > 0 ? [`rate_limit_burst = ${rateLimitBurst || rateLimitPerSec}`] : []),
    `block_interval_ms = ${blockIntervalMs}`,
    `min_block_interval_ms = ${minBlockIntervalMs}`,
    'dev_clock = true',
    'log = "warn"',
    'log_summary_secs = 0',
    ...(extra.includes('compiled_dir') ? [] : [`compiled_dir = ${JSON.stringify(sharedCompiledDir())}`]),
    extra,
  ].join('\n'));
  let child = null;
  let starts = 0;
  const logPath = () => path.join(dir, `node-${starts}.log`);

  async function start() {
    starts += 1;
    const out = fs.openSync(logPath(), 'w');
    child = spawn(bin, ['node', '--config', path.join(dir, 'node.toml')], { stdio: ['ignore', out, out] });
    fs.closeSync(out);
    let exited = null;
    child.once('exit', (code, signal) => { exited = `${code ?? signal}`; });
    const deadline = Date.now() + 60000;
    for (;;) {
      if (exited !== null) throw new Error(`gamechain node exited (${exited}) before answering:\n${fs.readFileSync(logPath(), 'utf8')}`);
      try {
        const r = await fetch(`${url}/v1/status`);
        if (r.ok) return;
      } catch { /* not listening yet */ }
      if (Date.now() > deadline) throw new Error(`gamechain node did not answer in 60 s:\n${fs.readFileSync(logPath(), 'utf8')}`);
      await sleep(50);
    }
  }

  async function stop() {
    if (!child || child.exitCode !== null || child.signalCode !== null) { child = null; return; }
    const c = child;
    child = null;
    const gone = new Promise((r) => c.once('exit', r));
    c.kill('SIGTERM');
    const timer = setTimeout(() => c.kill('SIGKILL'), 10000);
    await gone;
    clearTimeout(timer);
  }

  // The dev clock's offset lives in the node's memory: a restart would put its clock behind the
  // chain's last block time (and it makes no block before its clock catches up), so it is moved
  // forward again by what the tests moved it.
  let offsetMs = 0;
  async function advance(ms) {
    const r = await fetch(`${url}/v1/dev/clock`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ advance_ms: ms }) });
    const body = await r.json();
    if (!r.ok) throw new Error(`POST /v1/dev/clock: ${r.status} ${JSON.stringify(body)}`);
    offsetMs = body.offset_ms;
    return body;
  }
  async function startAgain() {
    await start();
    if (offsetMs > 0) await advance(offsetMs);
  }

  await start();
  return {
    url,
    dir,
    log: () => fs.readFileSync(logPath(), 'utf8'),
    stop,
    restart: async () => { await stop(); await startAgain(); },
    /** Stops the node only (`start()` it again later). */
    stop,
    start: startAgain,
    /**
     * Moves the node's clock forward by `ms` (POST /v1/dev/clock): the next block's time is at
     * least that much later. Resolves to the node's answer `{now_ms, offset_ms}`.
     */
    advanceClock: advance,
    /** Stops the node and removes its folder. */
    async dispose() { await stop(); fs.rmSync(dir, { recursive: true, force: true }); },
  };
}
