// run-node.mjs: runs a script with Node, adding --experimental-websocket on a Node without a
// global WebSocket (Node 20), e.g. `npm run bench`.
import { spawnSync } from 'node:child_process';

const flags = typeof globalThis.WebSocket === 'function' ? [] : ['--experimental-websocket'];
const r = spawnSync(process.execPath, [...flags, ...process.argv.slice(2)], { stdio: 'inherit' });
process.exit(r.status ?? 1);
