// every_type.ts: the client of all_types.schema.json (every type of schema_version 1) at run time,
// without a node: ops encode each type to its wire form (amounts as decimal strings, field order
// as written), events and view answers decode (amounts to bigint) and bad values are SchemaErrors
// naming where. Compiled by `tsc --strict` and run by node/tests/web/codegen_ts.rs; prints `ok`.
import type { Chain } from '@gamechain/sdk';
import { SchemaError, parseEvent, putOp, viewV, type OtherThingEvent, type PutArgs } from './all_types.js';

function check(ok: boolean, what: string): asserts ok {
  if (!ok) throw new Error(`check failed: ${what}`);
}
function schemaError(f: () => unknown, path: string): void {
  try {
    f();
  } catch (e) {
    check(e instanceof SchemaError && e.path === path, `SchemaError at ${path} expected, got ${String(e)}`);
    return;
  }
  throw new Error(`no SchemaError at ${path}`);
}

const args: PutArgs = {
  s: 's', b: true, a: 4294967295, c: 9007199254740991, d: -9007199254740991, e: 123456789012345678901234567890n,
  f: 'yAddr', g: '00ff', h: [0n, 1n], i: { x: 5n, y: null }, j: { gold: 10n, 'odd key': 0n }, k: 'two',
  l: { free: ['form', 1] }, 'max-stake': 7, m: [1, null],
};
const wire = JSON.stringify(putOp(args));
check(
  wire === '{"kind":"put","s":"s","b":true,"a":4294967295,"c":9007199254740991,"d":-9007199254740991,'
    + '"e":"123456789012345678901234567890","f":"yAddr","g":"00ff","h":["0","1"],"i":{"x":"5","y":null},'
    + '"j":{"gold":"10","odd key":"0"},"k":"two","l":{"free":["form",1]},"max-stake":7,"m":[1,null]}',
  `put wire ${wire}`,
);
// Optional fields left out; a nullable optional one may be null.
const { 'max-stake': _dropped, m: _m, ...required } = args;
check(!JSON.stringify(putOp(required)).includes('max-stake'), 'optional left out');
check(JSON.stringify(putOp({ ...required, m: null })).endsWith(',"m":null}'), 'nullable optional');

// The checks at run time (what a cast or plain JavaScript could slip past the types).
const bad = (patch: object) => () => putOp({ ...args, ...patch } as PutArgs);
schemaError(bad({ a: 4294967296 }), 'put.a');
schemaError(bad({ a: 1.5 }), 'put.a');
schemaError(bad({ c: 9007199254740992 }), 'put.c');
schemaError(bad({ c: -1 }), 'put.c');
schemaError(bad({ e: -1n }), 'put.e');
schemaError(bad({ e: '100' }), 'put.e');
schemaError(bad({ g: 'xyz' }), 'put.g');
schemaError(bad({ h: [1n, 2] }), 'put.h[1]');
schemaError(bad({ i: { y: 1 } }), 'put.i.y');
schemaError(bad({ i: { x: 1n } }), 'put.i.y');
schemaError(bad({ j: { 'odd key': 1 } }), 'put.j["odd key"]');
schemaError(bad({ k: 'three' }), 'put.k');
schemaError(bad({ 'max-stake': '7' }), 'put["max-stake"]');
schemaError(bad({ s: null }), 'put.s');
schemaError(bad({ s: undefined }), 'put.s');

// An event with a map of objects holding amounts; another module's kind is this module's to declare.
const parsed = parseEvent({ kind: 'other.thing', data: { 'q-r': { a: { z: '18446744073709551616' } }, extra: 1 } });
check(parsed !== null && parsed.kind === 'other.thing', 'parsed');
const thing: OtherThingEvent = parsed;
const z = thing.data['q-r']['a']?.z;
check(z === 18446744073709551616n, `z ${String(z)}`);
check(!('extra' in thing.data), 'fields beyond the schema are left out');
schemaError(() => parseEvent({ kind: 'other.thing', data: { 'q-r': { a: { z: 5 } } } }), 'other.thing["q-r"]["a"].z');
schemaError(() => parseEvent({ kind: 'other.thing', data: [] }), 'other.thing');

// A view through a stand-in for the SDK's Chain: the query as `chain.game` gets it, the answer decoded.
let asked: unknown = null;
const chain = {
  game: async (module: string, query: Record<string, string | number>) => {
    asked = { module, query };
    return { gold: ['1', '20'], none: [] };
  },
} as unknown as Chain;
const answer = await viewV(chain, { q: 5n, e: 'a', b: false });
check(JSON.stringify(asked) === '{"module":"all_types","query":{"q":"5","e":"a","b":"false"}}', `asked ${JSON.stringify(asked)}`);
check(answer['gold']?.[1] === 20n && answer['none']?.length === 0, 'answer');
await viewV(chain, { e: 'a', b: null });
check(JSON.stringify(asked) === '{"module":"all_types","query":{"e":"a"}}', `unset left out ${JSON.stringify(asked)}`);

console.log('ok');
