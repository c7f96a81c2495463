// testkit/wasm.js: small rules-shaped wasm modules assembled byte by byte for the suites (no
// toolchain): `assemble({entry: body bytes})` exports memory, gc_alloc and gc_pure_<entry>.
export const uleb = (n) => { const out = []; do { let b = n & 0x7f; n >>>= 7; if (n) b |= 0x80; out.push(b); } while (n); return out; };
function sleb64(v) {
  const out = [];
  for (;;) {
    const b = Number(v & 0x7fn);
    v >>= 7n;
    if ((v === 0n && (b & 0x40) === 0) || (v === -1n && (b & 0x40) !== 0)) { out.push(b); return out; }
    out.push(b | 0x80);
  }
}
const str = (s) => [...uleb(s.length), ...new TextEncoder().encode(s)];
const section = (id, body) => [id, ...uleb(body.length), ...body];
const vec = (items) => [...uleb(items.length), ...items.flat()];

/**
 * A module exporting `memory` (1 page), `gc_alloc` (always 1024) and each `gc_pure_<entry>` as the
 * given body instructions (bytes, before `end`). `imports` adds a function import.
 */
export function assemble(bodies, { imports = false, memory = [0x00, 0x01], global = false } = {}) {
  const entries = Object.keys(bodies);
  const types = section(1, vec([[0x60, 1, 0x7f, 1, 0x7f], [0x60, 2, 0x7f, 0x7f, 1, 0x7e]]));
  const imp = imports ? section(2, vec([[...str('env'), ...str('f'), 0x00, 0x00]])) : [];
  const base = imports ? 1 : 0;
  const funcs = section(3, vec([[0x00], ...entries.map(() => [0x01])]));
  const mem = section(5, vec([memory]));
  const glob = global ? section(6, vec([[0x7f, 0x01, 0x41, 0x00, 0x0b]])) : []; // (global (mut i32) (i32.const 0))
  const exports = section(7, vec([
    [...str('memory'), 0x02, 0x00],
    [...str('gc_alloc'), 0x00, ...uleb(base)],
    ...entries.map((e, i) => [...str(`gc_pure_${e}`), 0x00, ...uleb(base + 1 + i)]),
  ]));
  const body = (code) => { const b = [0x00, ...code, 0x0b]; return [...uleb(b.length), ...b]; };
  const code = section(10, vec([body([0x41, ...uleb(1024)]), ...entries.map((e) => body(bodies[e]))]));
  return Uint8Array.from([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, ...types, ...imp, ...funcs, ...mem, ...glob, ...exports, ...code]);
}
export const i64 = (v) => [0x42, ...sleb64(BigInt(v))];
export const answer = (ptr, len) => i64((BigInt(ptr) << 32n) | BigInt(len));
