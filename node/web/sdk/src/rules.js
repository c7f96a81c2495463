// rules.js: Rules, a game's rules module (docs/channels.md, "Write the rules") run in this
// process: the same `.wasm` the chain's channel calls, instantiated with an empty import object.
// Each call copies its input into a buffer from `gc_alloc`, calls a `gc_pure_*` export and reads
// `len = r & 0xffffffff` bytes at `ptr = r >> 32` (a negative `r` is a refusal). Byte encodings
// are sdk-guest/src/rules.rs's (`encode_move`). There is no fuel here: the guard is a size cap on
// the code, a size cap on every answer, a fresh instance once memory passes a cap (the guest's
// bump allocator never frees), and every trap or malformed answer is a RulesError. Every call is
// async (a fresh instance is made with `WebAssembly.instantiate`, which browsers allow for any size).

/** Largest rules module loaded: the chain's largest module (runtime/vm MAX_MODULE_BYTES). */
export const MAX_RULES_BYTES = 4 << 20;
/** Largest state accepted from the rules (the channel's MAX_STATE_BYTES). */
export const MAX_STATE_BYTES = 4096;
/** Largest move data (the channel's MAX_MOVE_BYTES). */
export const MAX_MOVE_BYTES = 1024;
/** Memory after which the instance is replaced by a fresh one (bytes). */
const RESET_MEMORY_BYTES = 32 << 20;

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

export class Rules {
  /**
   * Use {@link Rules.load}.
   * @param {WebAssembly.Module} module compiled, imports nothing
   */
  constructor(module) {
    this.module = module;
    this.instance = null;
    /** Memory (bytes) past which the next call gets a fresh instance. */
    this.resetMemoryBytes = RESET_MEMORY_BYTES;
    /** Instances made so far. */
    this.instances = 0;
  }

  /**
   * Compiles a rules `.wasm`: refuses more than `maxBytes` (default 4 MiB), a module with any
   * import, or one missing `memory`, `gc_alloc` or a `gc_pure_*` rules export.
   * @param {Uint8Array|ArrayBuffer} wasm
   * @param {{maxBytes?: number}} [options]
   */
  static async load(wasm, { maxBytes = MAX_RULES_BYTES } = {}) {
    const code = wasm instanceof Uint8Array ? wasm : new Uint8Array(wasm);
    if (code.length > maxBytes) throw new RulesError(`the rules module is ${code.length} bytes, the limit is ${maxBytes}`);
    let made;
    try {
      made = await WebAssembly.instantiate(code, {});
    } catch (e) {
      throw new RulesError(`the rules module does not load: ${e.message ?? e}`);
    }
    const { module, instance } = made;
    const imports = WebAssembly.Module.imports(module);
    if (imports.length) throw new RulesError(`the rules module imports ${imports[0].module}.${imports[0].name}: rules import nothing`);
    const exports = new Map(WebAssembly.Module.exports(module).map((e) => [e.name, e.kind]));
    for (const [name, kind] of [['memory', 'memory'], ['gc_alloc', 'function'], ...ENTRIES.map((e) => [`gc_pure_${e}`, 'function'])]) {
      if (exports.get(name) !== kind) throw new RulesError(`the rules module has no ${kind} export ${name}`);
    }
    const rules = new Rules(module);
    rules.instance = instance;
    rules.instances = 1;
    return rules;
  }

  /** One export call: the answer's bytes (at most `max`), or null for a refusal. */
  async call(entry, input, max = MAX_STATE_BYTES) {
    if (!this.instance || this.instance.exports.memory.buffer.byteLength > this.resetMemoryBytes) {
      // A clean memory: `WebAssembly.instantiate(module, {})` again.
      this.instance = null;
      try {
        this.instance = await WebAssembly.instantiate(this.module, {});
        this.instances += 1;
      } catch (e) {
        throw new RulesError(`the rules module does not start: ${e.message ?? e}`);
      }
    }
    const { memory, gc_alloc: alloc } = this.instance.exports;
    let r;
    try {
      let ptr = 1;
      if (input.length > 0) {
        ptr = alloc(input.length) >>> 0;
        if (ptr === 0 || ptr + input.length > memory.buffer.byteLength) throw new RulesError(`gc_alloc(${input.length}) gave no buffer`);
        new Uint8Array(memory.buffer, ptr, input.length).set(input);
      }
      r = this.instance.exports[`gc_pure_${entry}`](ptr | 0, input.length);
    } catch (e) {
      // A trap may leave the instance in any state: the next call starts afresh.
      this.instance = null;
      if (e instanceof RulesError) throw e;
      throw new RulesError(`rules ${entry} trapped: ${e.message ?? e}`);
    }
    if (typeof r !== 'bigint') throw new RulesError(`rules ${entry} answered no i64`);
    if (r < 0n) return null;
    const len = Number(r & 0xffffffffn);
    const ptr = Number(r >> 32n);
    if (len > max) throw new RulesError(`rules ${entry} answered ${len} bytes, the limit is ${max}`);
    if (ptr + len > memory.buffer.byteLength) throw new RulesError(`rules ${entry} answered bytes outside its memory`);
    return new Uint8Array(memory.buffer, ptr, len).slice();
  }

  /** A 0/1 answer. */
  async flag(entry, input) {
    const out = await this.call(entry, input, 1);
    if (out === null) throw new RulesError(`rules ${entry} refused its input`);
    if (out.length !== 1 || out[0] > 1) throw new RulesError(`rules ${entry}: not a 0/1 answer`);
    return out[0] === 1;
  }

  /** The state before move 0. */
  async initialState() {
    const s = await this.call('initial_state', new Uint8Array(0));
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
