// run-tests.mjs: `npm test`: runs `node --test` on the given *.test.js files or folders, adding
// --experimental-websocket on a Node without a global WebSocket (Node 20) so the WebSocket paths
// of the SDK are the ones tested. The spec reporter ends with the failing tests and their errors,
// so the tail of a CI log names what failed.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const args = process.argv.slice(2);
const files = [];
for (const a of args.length ? args : ['test']) {
  if (fs.statSync(a).isDirectory()) {
    for (const f of fs.readdirSync(a).sort()) if (f.endsWith('.test.js')) files.push(path.join(a, f));
  } else files.push(a);
}
const flags = typeof globalThis.WebSocket === 'function' ? [] : ['--experimental-websocket'];
const r = spawnSync(process.execPath, [...flags, '--test', '--test-concurrency=1', '--test-reporter=spec', ...files], { stdio: 'inherit' });
process.exit(r.status ?? 1);
