// rules.js: Rules, a game's rules module (docs/channels.md, "Write the rules") run in this
// process: the same `.wasm` the chain's channel calls, instantiated with an empty import object.
// Each call copies its input into a buffer from `gc_alloc`, calls a `gc_pure_*` export and reads
// `len = r & 0xffffffff` bytes at `ptr = r >> 32` (a negative `r` is a refusal). Byte encodings
// are sdk-guest/src/rules.rs's (`encode_move`). There is no fuel here; the guards instead:
// - every call runs on a fresh instance, as on the chain (no state carries from call to call);
// - the memory's maximum is capped at the chain's memory limit (16 MiB) by rewriting the limits
//   of the module's memory section before it is compiled, so no call can take more;
// - calls run in a Worker (a Web Worker made from a Blob URL in a browser, a worker_threads
//   Worker in Node) and a call that has not answered within `timeoutMs` (default 5 s) is a
//   RulesError: the worker is terminated (a rules module that loops forever cannot hang the page)
//   and the next call starts another;
// - a size cap on the code and on every answer; every trap or malformed answer is a RulesError.

/** Largest rules module loaded: the chain's largest module (runtime/vm MAX_MODULE_BYTES). */
export const MAX_RULES_BYTES = 4 << 20;
/** Largest state accepted from the rules (the channel's MAX_STATE_BYTES). */
export const MAX_STATE_BYTES = 4096;
/** Largest move data (the channel's MAX_MOVE_BYTES). */
export const MAX_MOVE_BYTES = 1024;
/** Largest memory of a rules call: the chain's `memory_limit_bytes` (runtime/vm config.rs). */
export const MAX_RULES_MEMORY_BYTES = 16 << 20;
/** Longest a rules call may run before it is a RulesError (ms). */
export const RULES_TIMEOUT_MS = 5000;

const ENTRIES = ['initial_state', 'mover_at', 'validate_move', 'apply_move', 'is_over', 'winner'];

/** A rules module that cannot be loaded, trapped, or answered something malformed. */
export class RulesError extends Error {
  constructor(message) {
    super(message);
    this.name = 'RulesError';
  }
}

/** `u64 n ‖ u8 mover ‖ u32 state_len ‖ state ‖ data`, little-endian (sdk-guest `encode_move`). */
export function encodeMove(n, mover, state, data) {
  const out = new Uint8Array(13 + state.length + data.length);
  const view = new DataView(out.buffer);
  view.setBigUint64(0, BigInt(n), true);
  out[8] = mover;
  view.setUint32(9, state.length, true);
  out.set(state, 13);
  out.set(data, 13 + state.length);
  return out;
}

function u64le(n) {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, BigInt(n), true);
  return out;
}

function checkN(n) {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`move number ${n} is not a non-negative safe integer`);
}

function bytes(b, what, max) {
  if (!(b instanceof Uint8Array)) throw new TypeError(`${what} must be a Uint8Array`);
  if (b.length > max) throw new RulesError(`${what} is ${b.length} bytes, the limit is ${max}`);
  return b;
}

/** Reads an unsigned LEB128 at `at`: `[value, next offset]`. */
function readUleb(b, at) {
  let v = 0;
  let shift = 0;
  for (;;) {
    if (at >= b.length || shift > 28) throw new RulesError('the rules module is malformed (a LEB128 number)');
    const x = b[at++];
    v += (x & 0x7f) * 2 ** shift;
    if ((x & 0x80) === 0) return [v, at];
    shift += 7;
  }
}

function uleb(n) {
  const out = [];
  do { let x = n % 128; n = Math.floor(n / 128); if (n) x |= 0x80; out.push(x); } while (n);
  return out;
}

/**
 * The module with its one memory's maximum set to at most `maxPages` (64 KiB pages): a
 * `memory.grow` past it then answers -1 here instead of taking the browser's memory. A memory
 * starting above it, a shared or 64-bit memory, or more than one memory is a RulesError (the
 * chain refuses such modules at deploy). Other sections are copied unchanged.
 */
export function capMemory(code, maxPages) {
  if (code.length < 8) return code;
  const parts = [code.subarray(0, 8)];
  let at = 8;
  while (at < code.length) {
    const start = at;
    const id = code[at++];
    let size;
    [size, at] = readUleb(code, at);
    const end = at + size;
    if (end > code.length) return code; // WebAssembly.compile says what is wrong
    if (id !== 5) {
      parts.push(code.subarray(start, end));
      at = end;
      continue;
    }
    let p = at;
    let count;
    [count, p] = readUleb(code, p);
    if (count !== 1) throw new RulesError(`the rules module declares ${count} memories: rules have exactly one`);
    const flags = code[p++];
    if (flags !== 0 && flags !== 1) throw new RulesError('the rules module\'s memory is shared or 64-bit: rules have one plain memory');
    let min;
    let max = Infinity;
    [min, p] = readUleb(code, p);
    if (flags === 1) [max, p] = readUleb(code, p);
    if (p !== end) return code;
    if (min > maxPages) throw new RulesError(`the rules module's memory starts at ${min} pages, the limit is ${maxPages}`);
    const body = [1, 1, ...uleb(min), ...uleb(Math.min(max, maxPages))];
    parts.push(Uint8Array.from([5, ...uleb(body.length), ...body]));
    at = end;
  }
  const out = new Uint8Array(parts.reduce((n, x) => n + x.length, 0));
  let o = 0;
  for (const x of parts) { out.set(x, o); o += x.length; }
  return out;
}

/**
 * One rules call on a fresh instance of `module`: `{out}` (the answer's bytes, or null for a
 * refusal) or `{error}`. Self-contained: its source also runs inside the Worker.
 */
async function runCall(module, entry, input, max) {
  let instance;
  try {
    instance = await WebAssembly.instantiate(module, {});
  } catch (e) {
    return { error: `the rules module does not start: ${(e && e.message) || e}` };
  }
  const { memory, gc_alloc: alloc } = instance.exports;
  let r;
  try {
    let ptr = 1;
    if (input.length > 0) {
      ptr = alloc(input.length) >>> 0;
      if (ptr === 0 || ptr + input.length > memory.buffer.byteLength) return { error: `gc_alloc(${input.length}) gave no buffer` };
      new Uint8Array(memory.buffer, ptr, input.length).set(input);
    }
    r = instance.exports[`gc_pure_${entry}`](ptr | 0, input.length);
  } catch (e) {
    return { error: `rules ${entry} trapped: ${(e && e.message) || e}` };
  }
  if (typeof r !== 'bigint') return { error: `rules ${entry} answered no i64` };
  if (r < 0n) return { out: null };
  const len = Number(r & 0xffffffffn);
  const ptr = Number(r >> 32n);
  if (len > max) return { error: `rules ${entry} answered ${len} bytes, the limit is ${max}` };
  if (ptr + len > memory.buffer.byteLength) return { error: `rules ${entry} answered bytes outside its memory` };
  return { out: new Uint8Array(memory.buffer, ptr, len).slice() };
}

/**
 * The start of every SDK Worker's script (classic script in a browser, CommonJS `eval` in Node,
 * also verify.js's): `on(f)` receives each message, `post(m)` answers.
 */
/**
 * The Node.js flags a Worker of WORKER_PORT's scripts runs under: the parent's, without
 * `--input-type` (under `node --input-type=module` an `eval` Worker would be an ES module, where
 * WORKER_PORT's `require` does not exist).
 */
export function workerExecArgv() {
  return (globalThis.process?.execArgv ?? []).filter((a) => !a.startsWith('--input-type'));
}

export const WORKER_PORT = `let on, post;
if (typeof require === 'function') {
  const { parentPort } = require('node:worker_threads');
  on = (f) => parentPort.on('message', f);
  post = (m) => parentPort.postMessage(m);
} else {
  on = (f) => { self.onmessage = (e) => f(e.data); };
  post = (m) => self.postMessage(m);
}`;

/** The Worker's script (classic script in a browser, CommonJS `eval` in Node). */
const WORKER_SOURCE = `"use strict";
const runCall = ${runCall.toString()};
${WORKER_PORT}
let module = null;
on(async (m) => {
  if (m.module) { module = m.module; post({ ready: true }); return; }
  let r;
  try { r = await runCall(module, m.entry, m.input, m.max); } catch (e) { r = { error: String((e && e.message) || e) }; }
  post({ id: m.id, ...r });
});
`;

/** Longest a worker may take to start (ms) before it counts as one that cannot. */
const WORKER_START_MS = 10000;

/**
 * A Worker running WORKER_SOURCE with `module` sent to it, once it said it is ready: `{post,
 * terminate}`, `handlers.onmessage(data)` / `handlers.onerror(text)` called afterwards; null when
 * none can start (no Worker here, a content security policy without `worker-src blob:`, which
 * browsers report only as an error event after the constructor returned).
 */
async function startWorker(module, handlers) {
  let ready;
  const started = new Promise((resolve) => { ready = resolve; });
  const timer = setTimeout(() => ready(false), WORKER_START_MS);
  const message = (d) => { if (d && d.ready === true) ready(true); else handlers.onmessage(d); };
  const error = (text) => { ready(false); handlers.onerror(text); };
  let w = null;
  if (typeof globalThis.Worker === 'function' && typeof globalThis.Blob === 'function' && typeof URL.createObjectURL === 'function') {
    const url = URL.createObjectURL(new Blob([WORKER_SOURCE], { type: 'text/javascript' }));
    let web;
    try {
      web = new globalThis.Worker(url);
    } catch {
      URL.revokeObjectURL(url);
      clearTimeout(timer);
      return null;
    }
    web.onmessage = (e) => message(e.data);
    web.onerror = (e) => { e.preventDefault?.(); error(e.message || 'the rules worker failed'); };
    web.onmessageerror = () => error('the rules worker sent an unreadable message');
    w = { post: (m) => web.postMessage(m), terminate: () => { web.terminate(); URL.revokeObjectURL(url); } };
  } else if (globalThis.process?.versions?.node) {
    const spec = 'node:worker_threads';
    const { Worker } = await import(/* @vite-ignore */ spec);
    const nw = new Worker(WORKER_SOURCE, { eval: true, execArgv: workerExecArgv() });
    nw.on('message', message);
    nw.on('error', (e) => error(e?.message ?? String(e)));
    nw.on('exit', () => error('the rules worker exited'));
    nw.unref(); // after the listeners (attaching one refs it again): an idle worker never holds the process
    w = { post: (m) => nw.postMessage(m), terminate: () => { nw.removeAllListeners('exit'); nw.terminate(); } };
  } else {
    clearTimeout(timer);
    return null;
  }
  w.post({ module });
  const ok = await started;
  clearTimeout(timer);
  if (!ok) {
    w.terminate();
    return null;
  }
  return w;
}

export class Rules {
  /**
   * Use {@link Rules.load}.
   * @param {WebAssembly.Module} module compiled, imports nothing, memory capped
   * @param {{timeoutMs?: number, worker?: 'auto'|'always'|'never'}} [options]
   */
  constructor(module, { timeoutMs = RULES_TIMEOUT_MS, worker = 'auto' } = {}) {
    this.module = module;
    /** Longest a call may run (ms) before it is a RulesError and its worker is terminated. */
    this.timeoutMs = timeoutMs;
    /** `'auto'` (a Worker where one starts, else this thread), `'always'` (a RulesError without one), `'never'`. */
    this.workerMode = worker;
    /** Whether calls run in a Worker (bounded by `timeoutMs`); known after the first call. */
    this.isolated = null;
    /** Workers started so far (a timed-out or crashed one is replaced). */
    this.workers = 0;
    this.worker = null;
    this.calls = new Map();
    this.nextId = 0;
  }

  /**
   * Compiles a rules `.wasm`: refuses more than `maxBytes` (default 4 MiB), a module with any
   * import, one whose memory starts above 16 MiB, or one missing `memory`, `gc_alloc` or a
   * `gc_pure_*` rules export. Its memory's maximum is capped at 16 MiB (`capMemory`).
   * @param {Uint8Array|ArrayBuffer} wasm
   * @param {{maxBytes?: number, timeoutMs?: number, worker?: 'auto'|'always'|'never'}} [options]
   */
  static async load(wasm, { maxBytes = MAX_RULES_BYTES, ...options } = {}) {
    const code = wasm instanceof Uint8Array ? wasm : new Uint8Array(wasm);
    if (code.length > maxBytes) throw new RulesError(`the rules module is ${code.length} bytes, the limit is ${maxBytes}`);
    let module;
    try {
      module = await WebAssembly.compile(capMemory(code, MAX_RULES_MEMORY_BYTES >> 16));
    } catch (e) {
      if (e instanceof RulesError) throw e;
      throw new RulesError(`the rules module does not load: ${e.message ?? e}`);
    }
    const imports = WebAssembly.Module.imports(module);
    if (imports.length) throw new RulesError(`the rules module imports ${imports[0].module}.${imports[0].name}: rules import nothing`);
    const exports = new Map(WebAssembly.Module.exports(module).map((e) => [e.name, e.kind]));
    for (const [name, kind] of [['memory', 'memory'], ['gc_alloc', 'function'], ...ENTRIES.map((e) => [`gc_pure_${e}`, 'function'])]) {
      if (exports.get(name) !== kind) throw new RulesError(`the rules module has no ${kind} export ${name}`);
    }
    return new Rules(module, options);
  }

  /** Ends the worker (a later call starts another). */
  close() {
    this.stopWorker('the rules worker was closed');
  }

  stopWorker(reason) {
    const w = this.worker;
    this.worker = null;
    if (w) w.terminate();
    const calls = [...this.calls.values()];
    this.calls.clear();
    for (const c of calls) c.fail(reason);
  }

  ensureWorker() {
    if (this.worker || this.workerMode === 'never') return Promise.resolve(this.worker);
    // One start at a time: calls made meanwhile wait for the same worker.
    this.starting ??= this.startOne().finally(() => { this.starting = null; });
    return this.starting;
  }

  async startOne() {
    let w = null;
    try {
      w = await startWorker(this.module, {
        onmessage: (d) => {
          const c = d && this.calls.get(d.id);
          if (!c) return;
          this.calls.delete(d.id);
          c.done(d);
        },
        onerror: (text) => { if (this.worker === w) this.stopWorker(`the rules worker failed: ${text}`); },
      });
    } catch {
      w = null;
    }
    if (!w) {
      if (this.workerMode === 'always') throw new RulesError('no Worker can start here (a content security policy without worker-src blob:?): rules calls would be unbounded');
      this.workerMode = 'never';
      this.isolated = false;
      return null;
    }
    this.worker = w;
    this.workers += 1;
    this.isolated = true;
    return w;
  }

  /** One export call: the answer's bytes (at most `max`), or null for a refusal. */
  async call(entry, input, max = MAX_STATE_BYTES) {
    const w = await this.ensureWorker();
    let r;
    if (!w) {
      this.isolated = false;
      r = await runCall(this.module, entry, input, max);
    } else {
      r = await new Promise((resolve) => {
        const id = this.nextId++;
        const timer = setTimeout(() => {
          if (!this.calls.has(id)) return;
          // The worker may be running forever: end it; the calls it held fail with this one.
          this.stopWorker(`rules ${entry} ran over ${this.timeoutMs} ms (a rules module that never ends?)`);
        }, this.timeoutMs);
        this.calls.set(id, {
          done: (d) => { clearTimeout(timer); resolve(d); },
          fail: (error) => { clearTimeout(timer); resolve({ error }); },
        });
        w.post({ id, entry, input, max });
      });
    }
    if (r.error !== undefined) throw new RulesError(r.error);
    return r.out instanceof Uint8Array ? r.out : r.out == null ? null : new Uint8Array(r.out);
  }

  /** A 0/1 answer. */
  async flag(entry, input) {
    const out = await this.call(entry, input, 1);
    if (out === null) throw new RulesError(`rules ${entry} refused its input`);
    if (out.length !== 1 || out[0] > 1) throw new RulesError(`rules ${entry}: not a 0/1 answer`);
    return out[0] === 1;
  }

  /**
   * The state before move 0 of the game tagged `tag` (32 bytes: the game tag, docs/channels.md
   * section 1, `gameTag` in channel.js; the channel passes the same). Another length is a
   * TypeError (the rules refuse it too).
   */
  async initialState(tag) {
    if (!(tag instanceof Uint8Array) || tag.length !== 32) throw new TypeError('initialState(tag): tag must be the 32-byte game tag');
    const s = await this.call('initial_state', tag);
    if (s === null) throw new RulesError('rules initial_state refused');
    return s;
  }

  /** The seat (0 or 1) that makes move `n`; a RulesError when the rules name no seat. */
  async moverAt(n) {
    checkN(n);
    const out = await this.call('mover_at', u64le(n), 1);
    if (out === null || out.length !== 1 || out[0] > 1) throw new RulesError(`rules named no seat for move ${n}`);
    return out[0];
  }

  /** Whether `mover` may make `data` as move `n` in `state`. */
  async validateMove(state, n, mover, data) {
    checkN(n);
    bytes(state, 'state', MAX_STATE_BYTES);
    bytes(data, 'move data', MAX_MOVE_BYTES);
    if (mover !== 0 && mover !== 1) return false;
    return this.flag('validate_move', encodeMove(n, mover, state, data));
  }

  /** The state after a valid move; a RulesError when the rules refuse it. */
  async applyMove(state, n, mover, data) {
    checkN(n);
    bytes(state, 'state', MAX_STATE_BYTES);
    bytes(data, 'move data', MAX_MOVE_BYTES);
    const out = await this.call('apply_move', encodeMove(n, mover, state, data));
    if (out === null) throw new RulesError(`rules refused move ${n}`);
    return out;
  }

  /** Whether `state` is final. */
  async isOver(state) {
    bytes(state, 'state', MAX_STATE_BYTES);
    return this.flag('is_over', state);
  }

  /** The winning seat of a final state, or null for a draw; a RulesError before the end. */
  async winner(state) {
    bytes(state, 'state', MAX_STATE_BYTES);
    const out = await this.call('winner', state, 1);
    if (out === null) throw new RulesError('rules winner refused: the game is not over');
    if (out.length !== 1 || out[0] > 2) throw new RulesError('rules named no winner');
    return out[0] === 2 ? null : out[0];
  }
}
