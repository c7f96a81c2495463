// testkit/modules.js: guest modules for the suites: built from this repository's source with
// `gamechain module build --path modules/<package> --out <file>` (the reproducible recipe; cargo
// caches it under target/guest) and deployed to a node by a deploy transaction, only when the
// node does not have the module already (`GET /v1/modules/<id>` is not_found): the default
// genesis may ship the games, and then they are used as they are.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import { base64 } from '@scure/base';
import { gamechainBin } from './node.js';
import { ChainError, Key } from '../src/index.js';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../..');
const built = new Map();

/** The `.wasm` bytes of `modules/<pkg>` (e.g. `rps_rules`, `examples/trap_rules`), built once per process. */
export function buildModule(pkg) {
  if (!built.has(pkg)) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gamechain-guest-'));
    const out = path.join(dir, `${path.basename(pkg)}.wasm`);
    const r = spawnSync(gamechainBin(), ['module', 'build', '--path', path.join(repo, 'modules', pkg), '--out', out], { encoding: 'utf8', timeout: 900000 });
    assert.equal(r.status, 0, `gamechain module build ${pkg}: ${r.stderr}`);
    built.set(pkg, fs.readFileSync(out));
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return built.get(pkg);
}

/** Whether the node has module `id` (`GET /v1/modules/<id>`). */
export async function hasModule(chain, id) {
  try {
    await chain.module(id);
    return true;
  } catch (e) {
    if (e instanceof ChainError && e.code === 'not_found') return false;
    throw e;
  }
}

/**
 * Deploys each of `[[module id, package], …]` the node does not have yet, with a fresh key;
 * resolves when every deploy is included, to the ids deployed.
 */
export async function deploy(chain, pairs) {
  const deployer = Key.generate();
  const txids = [];
  const missing = [];
  for (const [id, pkg] of pairs) {
    if (await hasModule(chain, id)) continue;
    missing.push(id);
    txids.push(await chain.send(deployer, { type: 'deploy', module: id, code: base64.encode(buildModule(pkg)) }));
  }
  for (const [i, txid] of txids.entries()) {
    const r = await chain.waitForReceipt(txid, { timeoutMs: 120000 });
    assert.equal(r.ok, true, `deploy ${missing[i]}: ${r.error}`);
  }
  return missing;
}

/** The channel's modules under the ids docs/channels.md uses (the channel names rules by id). */
export const CHANNEL_MODULES = [['channel', 'channel'], ['moveboard', 'moveboard'], ['rps_rules', 'rps_rules']];
