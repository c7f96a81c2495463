// run-tests.mjs: `npm test`: runs `node --test` on the given *.test.js files or folders, one at a
// time, with no flags: on Node 20 (no global WebSocket) the SDK's WebSocket paths run on the `ws`
// package, as they do for its users. The spec reporter ends with the failing tests and their
// errors, so the tail of a CI log names what failed.
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
const r = spawnSync(process.execPath, ['--test', '--test-concurrency=1', '--test-reporter=spec', ...files], { stdio: 'inherit' });
process.exit(r.status ?? 1);
