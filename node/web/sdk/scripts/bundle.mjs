// bundle.mjs: the SDK's browser bundle: src/index.js and its three dependencies (from
// node_modules, i.e. the lockfile) as one minified ES module. Prints its size raw and gzipped.
// Usage: node scripts/bundle.mjs [out file, default dist/gamechain.js] [--clients DIR]
// With --clients, also compiles each generated typed client DIR/<module>.ts (`gamechain module
// codegen --ts`, run by node/build.rs for the pages' modules) to DIR/<module>.js: types erased,
// nothing bundled (a generated client imports only types from the SDK), not minified.
// The `ws` package (the WebSocket of Node.js 20, loaded by src/chain/chain.js at run time only when
// there is no global one) must not be in it: the build fails if any of its files is.
// The node's build (node/build_web.rs) runs it into $OUT_DIR; bundles are never committed.
import { build } from 'esbuild';
import { gzipSync } from 'node:zlib';
import { readFileSync, readdirSync, mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const clientsAt = args.indexOf('--clients');
const clients = clientsAt >= 0 ? resolve(args.splice(clientsAt, 2)[1]) : null;
const out = resolve(args[0] ?? resolve(here, '../dist/gamechain.js'));
mkdirSync(dirname(out), { recursive: true });
const result = await build({
  entryPoints: [resolve(here, '../src/index.js')],
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  minify: true,
  legalComments: 'eof',
  outfile: out,
  logLevel: 'error',
  metafile: true,
});
const nodeOnly = Object.keys(result.metafile.inputs).filter((f) => /(^|\/)node_modules\/ws\//.test(f));
if (nodeOnly.length) {
  console.error(`the browser bundle must not include the ws package, yet it has ${nodeOnly.join(', ')}`);
  process.exit(1);
}
const bytes = readFileSync(out);
console.log(`${out}: ${bytes.length} bytes minified, ${gzipSync(bytes, { level: 9 }).length} bytes minified+gzipped`);

if (clients) {
  const entryPoints = readdirSync(clients).filter((f) => f.endsWith('.ts')).map((f) => resolve(clients, f));
  await build({
    entryPoints,
    bundle: false,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    outdir: clients,
    logLevel: 'error',
  });
  for (const f of entryPoints) console.log(`${f.replace(/\.ts$/, '.js')}: compiled`);
}
