// verify_host.js: replayGame, the re-execution half of verifyTranscript (verify.js): a game's
// ops and scheduled calls run on fresh instances of the module's wasm with a JS implementation of
// the host imports (sdk-guest/ABI.md; the semantics of sdk-guest/src/native/kv_ctx.rs, ledger.rs
// and scheduler.rs): module-scoped `get`/`put`/`delete`/`scan`, `read_raw`/`scan_raw`, the context
// (`height`, `block_time_ms`, `module_id`, `txid`, `sequencer`, `checkpoint`), `balance`,
// `escrow_in` (only from the sender) and `escrow_out`, `last_error`, `emit`, `public_random`,
// `schedule`, `cancel_scheduled`, `draw`, `schedule_sealed`, `seal`, `output`, `abort`, `log`,
// each under the chain's
// per-call bounds with its texts (256 KiB written, 256 events / 64 KiB, keys of 1 KiB, 1 MiB of
// output); the game's state is held up to 64 MiB.
//
// Scheduled calls: `schedule` checks what the chain checks, in its order, with its codes (-2 an
// unknown kind or a negative due point, -7 no `gc_scheduled` export, -6 fuel outside 1 to
// `fuel_apply`, -2 not after the current block, -3 over 10,000,000 blocks or 366 days ahead, -4 a
// payload over 4,096 bytes, -5 1,024 calls of the module waiting here) and writes the chain's
// queue layout (`sched/h/…`, `sched/t/…`, `sched/id/…`, `sched/n/<module>`) into the replay's
// state, with the chain's call id (SHA-256 of `gamechain.call.v1`, the module, the origin — the
// txid, or the parent call — and the count of calls scheduled before in this call). A `call` step
// takes its call out of that queue and runs `gc_scheduled(id, payload)` with no sender and an
// empty txid; `draw` answers SHA-256(`gamechain.draw.v1` ‖ the block's beacon ‖ module ‖ id ‖ n)
// there and traps elsewhere (or without a beacon) with the chain's text.
//
// Sealed moves (ABI.md "Sealed moves", runtime/vm/src/run/imports.rs, native/scheduler.rs):
// `schedule_sealed` refuses as the chain does, in its order (-7, -6 fuel, -2 a negative round, -11
// a chain without a beacon key, -2 not after the current height, -3, -4, -5, -10 the round holds 64
// sealed calls or 500,000,000 fuel of them) and writes `sched/s/<16 hex round>/<16 hex id>` (an
// ordinary call's record plus `"sealed":""`), its id index, the module's count and the round's use
// `sched/r/<16 hex round>` ("<count> <fuel>"); `seal` (-12 a negative id, -1 not in a transaction,
// -11 a chain without a beacon key, -12 no waiting sealed call of the module with this id, -13 one
// sealed already, -8 not 224 bytes or a tag over 64 bytes, then the envelope's proof: -8
// malformed, -9 not bound to (the chain's beacon key, module, sender, tag, the call's round))
// stores the envelope's hex in the record. The chain's beacon key is `input.beaconKey` (the
// genesis `beacon.public_key` verify.js checks the headers' beacons under; kv_ctx.rs
// `BlockEnv::beacon_key`): an envelope sealed under another key is -9. A call step of a sealed call
// must be in the block of its round (else `missing`, as the Rust replay); it runs
// `gc_scheduled(id | 2^62, payload ‖ 1 ‖ the 32 opened bytes)` when the envelope opens with the
// step's beacon, `payload ‖ 0 ‖ 32 zeros` (void) when it does not, when none was sealed or the
// block has no beacon; draws and calls it schedules use the plain id. The proof check and the
// opening are seal.js's `checkSealed` and `openSealed`, given as replayGame's third argument (the
// Worker imports them: see verify.js); a module that needs them without it ends the replay with an
// error. Fuel is not counted, so the chain's charges (SCHEDULE_BASE, SEAL_OPEN_BASE,
// SEAL_CHECK_BASE) have no counterpart here.
//
// No fuel is counted (the browser has none): the caller bounds the time
// instead (a Worker it terminates). `create_token`, `mint`, `burn`, `verify_signed`, `call_pure`,
// `call_code` and `module_code_hash` are not implemented: a module calling one traps here with
// `internal: <name> is not supported by the JS verifier` (tic-tac-toe, m,n,k and dice call none).
//
// Views (view.js `verifyView`): a step of `type: 'view'` runs `gc_view(query)` with a view's
// context (height 0, block time 0, empty txid, sequencer and sender, checkpoint `{"hash":"",
// "height":0}`); every write (`put`, `delete`, the bank, `emit`, `schedule`, `seal`, …) traps
// `internal: state is read-only in a view`, as the chain's host does. With `input.strict` the
// keys of `input.state` (a value, or null: proven absent) are all the state there is: a `get`,
// `read_raw` or `balance` of any other key, and any `scan` or `scan_raw`, ends the replay with an
// error naming it (a read the answer does not prove), not a result.
//
// replayGame is self-contained (no imports, no outer names) because its source also runs inside
// a Worker: verify.js sends `replayGame.toString()`.

/**
 * Runs `input.steps` in order over `input.state` (raw key → bytes, as the chain's state) and
 * returns one result per step: `{ok, error, events: [{kind, data}]}` (`error`: the receipt's
 * display text; `data`: the event's JSON text as the module emitted it; a successful step's
 * result also has `debited`, the GOLD base units it moved for its sender as the chain counts
 * them against a session's cap, as decimal text; a view step's has `value`, the view's JSON
 * text, when `ok`), or, for a call step
 * whose call is not in the replay's queue (or not due), `{missing: {expected, got}}` and nothing
 * after it.
 * @param {WebAssembly.Module} module
 * @param {{moduleId: string, state: Array<[string, Uint8Array]>, fuelApply?: number,
 *   steps: Array<{type?: 'tx'|'call'|'view', txid?: string, id?: number, height: number, timeMs: number,
 *   checkpoint: {hash: string, height: number}, sequencer: string, sender?: string, op?: string,
 *   query?: string, beacon?: string|null, setState?: Array<[string, Uint8Array|null]>}>,
 *   beaconKey?: string|null, strict?: boolean}}
 *   input `setState`: raw entries set (null: deleted) before the step runs (a player's proven
 *   balance); `type` 'tx' (default): an op sent by
 *   `sender`; 'view': `gc_view(query)` (`query`: the query's JSON text), read-only, in a view's
 *   context (the step's height, time, sequencer and checkpoint are not used); `strict`: the keys
 *   of `state` (values or null, proven absent) are the whole state: reading another key, or
 *   scanning, rejects the replay naming it; 'call': the scheduled call `id`, drawing from `beacon` (96 hex characters; null on a
 *   chain without one; the block's beacon on every step); `beaconKey`: the chain's beacon public
 *   key (192 hex characters, the genesis `beacon.public_key`; null or absent on a chain without a
 *   beacon, which refuses `schedule_sealed` and `seal` with -11), the key `seal` checks a proof
 *   under
 * @param {{checkSealed: Function, openSealed: Function}|null} [seal] seal.js's check and opening,
 *   for a module that seals moves (`seal`, and a sealed call with an envelope); without them such
 *   a module's replay rejects (an Error, not a divergence)
 */
export async function replayGame(module, input, seal = null) {
  const enc = new TextEncoder();
  const dec = new TextDecoder('utf-8', { fatal: true });
  // The chain's per-call bounds (runtime/vm/src/run/bounds.rs) and this verifier's own.
  const MAX_KEY_BYTES = 1024;
  const MAX_CALL_WRITE_BYTES = 256 << 10;
  const MAX_CALL_EVENTS = 256;
  const MAX_CALL_EVENT_BYTES = 64 << 10;
  const MAX_OUTPUT_BYTES = 1 << 20;
  const MAX_VERIFIER_STATE_BYTES = 64 << 20;
  const K = [0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2];
  // SHA-256 (FIPS 180-4), for public_random: host imports are synchronous, WebCrypto is not.
  function sha256(data) {
    const l = data.length;
    const padded = new Uint8Array(((l + 9 + 63) >> 6) << 6);
    padded.set(data);
    padded[l] = 0x80;
    const dv = new DataView(padded.buffer);
    dv.setUint32(padded.length - 8, Math.floor((l * 8) / 2 ** 32));
    dv.setUint32(padded.length - 4, (l * 8) >>> 0);
    const h = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];
    const w = new Array(64);
    for (let o = 0; o < padded.length; o += 64) {
      for (let i = 0; i < 16; i++) w[i] = dv.getUint32(o + i * 4);
      for (let i = 16; i < 64; i++) {
        const a = w[i - 15], b = w[i - 2];
        const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
        const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
        w[i] = (w[i - 16] + s0 + w[i - 7] + s1) | 0;
      }
      let [A, B, C, D, E, F, G, H] = h;
      for (let i = 0; i < 64; i++) {
        const S1 = ((E >>> 6) | (E << 26)) ^ ((E >>> 11) | (E << 21)) ^ ((E >>> 25) | (E << 7));
        const t1 = (H + S1 + ((E & F) ^ (~E & G)) + K[i] + w[i]) | 0;
        const S0 = ((A >>> 2) | (A << 30)) ^ ((A >>> 13) | (A << 19)) ^ ((A >>> 22) | (A << 10));
        const t2 = (S0 + ((A & B) ^ (A & C) ^ (B & C))) | 0;
        H = G; G = F; F = E; E = (D + t1) | 0; D = C; C = B; B = A; A = (t1 + t2) | 0;
      }
      h[0] = (h[0] + A) | 0; h[1] = (h[1] + B) | 0; h[2] = (h[2] + C) | 0; h[3] = (h[3] + D) | 0;
      h[4] = (h[4] + E) | 0; h[5] = (h[5] + F) | 0; h[6] = (h[6] + G) | 0; h[7] = (h[7] + H) | 0;
    }
    const out = new Uint8Array(32);
    const ov = new DataView(out.buffer);
    h.forEach((x, i) => ov.setUint32(i * 4, x >>> 0));
    return out;
  }

  // Scheduled calls (sdk-guest/src/schedule.rs, native/scheduler.rs).
  const MAX_SCHEDULED_PAYLOAD_BYTES = 4096;
  const MAX_PENDING_PER_MODULE = 1024;
  const MAX_AHEAD_BLOCKS = 10000000n;
  const MAX_AHEAD_MS = 366n * 24n * 3600000n;
  const MAX_SEALED_PER_ROUND = 64n;
  const MAX_SEALED_ROUND_FUEL = 500000000n;
  const SEALED_BYTES = 224;
  const MAX_SEAL_TAG_BYTES = 64;
  const SEALED_CALL_FLAG = 1n << 62n;
  const NO_DRAW = 'no draw here: randomness is drawn only in a scheduled call, on a chain with a beacon';
  const FUEL_APPLY = BigInt(input.fuelApply ?? 10000000);
  // The chain's beacon key (kv_ctx.rs `beacon_key`): none, no sealed call or move at all.
  const BEACON_KEY = input.beaconKey === undefined || input.beaconKey === null ? null : input.beaconKey;
  const SCHEDULABLE = WebAssembly.Module.exports(module).some((e) => e.name === 'gc_scheduled' && e.kind === 'function');
  const join = (parts) => {
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let o = 0;
    for (const p of parts) { out.set(p, o); o += p.length; }
    return out;
  };
  const le = (n, bytes) => {
    const b = new Uint8Array(bytes);
    const dv = new DataView(b.buffer);
    if (bytes === 4) dv.setUint32(0, Number(n), true); else dv.setBigUint64(0, BigInt(n), true);
    return b;
  };
  const fromHex = (h) => {
    const out = new Uint8Array(h.length >> 1);
    for (let i = 0; i < out.length; i++) out[i] = parseInt(h.slice(2 * i, 2 * i + 2), 16);
    return out;
  };
  const toHex = (b) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  const hex16 = (n) => BigInt(n).toString(16).padStart(16, '0');
  const idKey = (id) => `sched/id/${hex16(id)}`;
  const countKey = (m) => `sched/n/${m}`;
  const roundKey = (r) => `sched/r/${hex16(r)}`;
  /** Whether a queued call's record is a sealed call's (due at a height, with `sealed`). */
  const isSealed = (c) => typeof c.sealed === 'string' && c.at && c.at.height !== undefined;
  /** A round's use by sealed calls: [count, fuel] (bigints) from "<count> <fuel>". */
  const roundUse = (kv, round) => {
    const v = kv.get(roundKey(round));
    const parts = (v ? dec.decode(v) : '').split(' ').map((p) => (/^[0-9]+$/.test(p) ? BigInt(p) : 0n));
    return [parts[0] ?? 0n, parts[1] ?? 0n];
  };
  const writeRoundUse = (kv, round, count, fuel) => {
    if (count <= 0n) kv.delete(roundKey(round));
    else kv.set(roundKey(round), enc.encode(`${count} ${fuel}`));
  };
  /** Without seal.js's functions, a module that needs them cannot be re-executed here. */
  const sealOps = () => {
    if (!seal || typeof seal.checkSealed !== 'function' || typeof seal.openSealed !== 'function') {
      throw new Unsupported('sealed moves cannot be checked here: the verifier was not given checkSealed and openSealed');
    }
    return seal;
  };
  /** The id of the n-th call an entry-point call (`origin` bytes) schedules: 53 bits of SHA-256. */
  const callId = (origin, n) => {
    const m = enc.encode(input.moduleId);
    const d = sha256(join([enc.encode('gamechain.call.v1'), le(m.length, 4), m, origin, le(n, 4)]));
    return Number(new DataView(d.buffer).getBigUint64(0, false) & ((1n << 53n) - 1n));
  };
  const readCount = (kv, m) => {
    const v = kv.get(countKey(m));
    const n = v ? Number(dec.decode(v)) : 0;
    return Number.isSafeInteger(n) ? n : 0;
  };
  const writeCount = (kv, m, n) => { if (n <= 0) kv.delete(countKey(m)); else kv.set(countKey(m), enc.encode(String(n))); };
  /** The waiting call `id` in `kv`: `{key, call}`, or null. */
  const queued = (kv, id) => {
    const k = kv.get(idKey(id));
    if (!k) return null;
    const key = dec.decode(k);
    const v = kv.get(key);
    if (!v) return null;
    try { return { key, call: JSON.parse(dec.decode(v)) }; } catch { return null; }
  };
  const unqueue = (kv, q) => {
    kv.delete(q.key);
    kv.delete(idKey(q.call.id));
    writeCount(kv, q.call.module, readCount(kv, q.call.module) - 1);
    if (isSealed(q.call)) {
      const [count, fuel] = roundUse(kv, q.call.at.height);
      const less = (a, b) => (a > b ? a - b : 0n);
      writeRoundUse(kv, q.call.at.height, less(count, 1n), less(fuel, BigInt(q.call.fuel)));
    }
  };

  class Trap extends Error {}
  /** Not a trap: what this verifier cannot do; it ends the replay (rethrown). */
  class Unsupported extends Error {}
  /** Strict (`input.strict`): a read of state the caller did not give; it ends the replay too. */
  class Unproven extends Unsupported {}
  const READ_ONLY = 'internal: state is read-only in a view';
  const VIEW_TEXT = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
  /**
   * Whether a parsed view answer is one the chain's parser (serde_json) takes: no lone surrogate
   * in a string or key, every number finite. Where this verifier could not tell the two apart
   * (127 levels of nesting or more, near serde_json's limit of 128; an integer beyond 2^53,
   * which JavaScript rounds) the check ends instead (strict) — a value it cannot compare exactly.
   */
  const viewValueLike = (v, depth = 0) => {
    if (typeof v === 'string') return !LONE_SURROGATE.test(v);
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) return false;
      if (known !== null && Number.isInteger(v) && !Number.isSafeInteger(v)) throw new Unproven('the view answers an integer beyond 2^53, which this verifier cannot compare exactly');
      return true;
    }
    if (v === null || typeof v !== 'object') return true;
    if (known !== null && depth + 1 >= 127) throw new Unproven('the view answers JSON nested 127 levels or more, which this verifier cannot compare with the chain\'s parser');
    if (Array.isArray(v)) return v.every((x) => viewValueLike(x, depth + 1));
    return Object.entries(v).every(([k, x]) => !LONE_SURROGATE.test(k) && viewValueLike(x, depth + 1));
  };
  /** The imports that write state or emit: in a view each traps read-only. */
  const WRITES = new Set(['put', 'delete', 'escrow_in', 'escrow_out', 'mint', 'burn', 'create_token', 'emit', 'schedule', 'schedule_sealed', 'seal', 'cancel_scheduled']);
  const VIEW_CONTEXT = { height: 0, timeMs: 0, sequencer: '', sender: '', txid: '', checkpoint: { hash: '', height: 0 } };
  const DISPLAY = { invalid: 'invalid', unauthorized: 'not allowed', not_found: 'not found', conflict: 'conflict', internal: 'internal' };
  function display(text) {
    let e;
    try { e = JSON.parse(text); } catch { return null; }
    if (!e || typeof e !== 'object') return null;
    if (e.code === 'insufficient' && typeof e.token === 'string') return `insufficient ${e.token}: need ${e.need}, have ${e.have}`;
    if (DISPLAY[e.code] && typeof e.message === 'string') return `${DISPLAY[e.code]}: ${e.message}`;
    return null;
  }

  // Strict: the given keys (absent ones with a null value) are all the state that is known.
  const known = input.strict ? new Set(input.state.map(([k]) => k)) : null;
  let state = new Map(known ? input.state.filter(([, v]) => v !== null) : input.state);
  const proven = (key) => {
    if (known !== null && !known.has(key)) throw new Unproven(`the answer does not prove \`${key}\`, which the view reads`);
    return key;
  };
  const unscannable = (prefix) => { if (known !== null) throw new Unproven(`the view scans keys under \`${prefix}\`: a scan cannot be proven`); return prefix; };
  const results = [];
  const prefix = `m/${input.moduleId}/`;
  const escrow = `module:${input.moduleId}`;

  for (const given of input.steps) {
    const isView = given.type === 'view';
    const step = isView ? { ...given, ...VIEW_CONTEXT } : given;
    // Balances proven before this step (verify.js, start.js): set as the chain had them.
    for (const [key, value] of step.setState ?? []) {
      if (value === null) state.delete(key); else state.set(key, value);
    }
    const isCall = step.type === 'call';
    const txid = isCall ? '' : step.txid;
    let call = null; // the queued call a call step runs
    if (isCall) {
      const q = queued(state, step.id);
      if (!q || q.call.module !== input.moduleId) {
        results.push({ missing: { expected: `call ${step.id} scheduled by an earlier step of this game`, got: 'no such call in the replay\'s queue' } });
        break;
      }
      // A sealed call opens in the block of its round, never later (node/src/verify/game/replay.rs).
      if (isSealed(q.call) && q.call.at.height !== step.height) {
        results.push({ missing: { expected: `a sealed call opened at height ${step.height}`, got: `a sealed call of round ${q.call.at.height}` } });
        break;
      }
      if (q.call.at && q.call.at.height !== undefined && q.call.at.height > step.height) {
        results.push({ missing: { expected: `a call due by height ${step.height}`, got: `a call due at height ${q.call.at.height}` } });
        break;
      }
      // Taken out of the queue whatever the call does (the chain takes it before running it).
      unqueue(state, q);
      call = q.call;
    }
    // The block's beacon: the source of a call's draws and of a sealed call's opening.
    const blockBeacon = typeof step.beacon === 'string' && /^[0-9a-f]{96}$/.test(step.beacon) ? fromHex(step.beacon) : null;
    const beacon = isCall ? blockBeacon : null;
    let draws = 0;
    let scheduledCount = 0;
    const origin = isCall ? join([Uint8Array.of(2), le(step.id, 8)]) : join([Uint8Array.of(1), /^[0-9a-f]{64}$/.test(txid) ? fromHex(txid) : enc.encode(txid)]);
    const writes = new Map(state);
    const events = [];
    let output = null;
    let lastError = null;
    let randoms = 0;
    let memory = null;
    // The chain's per-call bounds (runtime/vm/src/run/bounds.rs), with its texts, checked
    // before anything is copied.
    let written = 0;
    let eventBytes = 0;
    const wrote = (key, valueLen) => {
      const keyLen = enc.encode(key).length;
      if (keyLen > MAX_KEY_BYTES) throw new Trap(`internal: key longer than ${MAX_KEY_BYTES} bytes`);
      written += keyLen + valueLen;
      if (written > MAX_CALL_WRITE_BYTES) throw new Trap(`internal: state writes over ${MAX_CALL_WRITE_BYTES} bytes in one call`);
    };
    const bytesAt = (ptr, len) => {
      ptr >>>= 0; len >>>= 0;
      if (len > 0 && ptr + len > memory.buffer.byteLength) throw new Trap('internal: bad pointer from module');
      return new Uint8Array(memory.buffer, ptr, len).slice();
    };
    const text = (ptr, len) => {
      try { return dec.decode(bytesAt(ptr, len)); } catch (e) { if (e instanceof Trap) throw e; throw new Trap('internal: invalid UTF-8 from module'); }
    };
    // A variable-length result: its length; its bytes written only when they fit.
    const answer = (bytes, outPtr, outCap) => {
      outPtr >>>= 0;
      if (outCap < 0 || outPtr + (outCap >>> 0) > memory.buffer.byteLength) throw new Trap('internal: bad pointer from module');
      if (bytes.length <= outCap) new Uint8Array(memory.buffer, outPtr, bytes.length).set(bytes);
      return bytes.length;
    };
    const balanceOf = (acct, token) => {
      const v = writes.get(`bal/${acct}/${token}`);
      return v ? BigInt(dec.decode(v)) : 0n;
    };
    // GOLD the op moves for its sender, as the chain counts it against a session's cap
    // (runtime/src/execute.rs `Metered`): decreases of the sender's balance and increases of any
    // other account's but the module's escrow.
    let moved = 0n;
    const setBalance = (acct, token, amount) => {
      const key = `bal/${acct}/${token}`;
      if (token === 'GOLD') {
        const old = balanceOf(acct, token);
        if (acct === step.sender) moved += old > amount ? old - amount : 0n;
        else if (acct !== escrow) moved += amount > old ? amount - old : 0n;
      }
      if (amount === 0n) writes.delete(key); else writes.set(key, enc.encode(amount.toString()));
    };
    const amountOf = (lo, hi) => (BigInt.asUintN(64, BigInt(hi)) << 64n) | BigInt.asUintN(64, BigInt(lo));
    const transfer = (from, to, token, amount) => {
      const have = balanceOf(from, token);
      if (have < amount) {
        lastError = JSON.stringify({ code: 'insufficient', token, need: amount.toString(), have: have.toString() });
        return 1;
      }
      if (amount === 0n || from === to) return 0;
      setBalance(from, token, have - amount);
      setBalance(to, token, balanceOf(to, token) + amount);
      return 0;
    };
    const scanOf = (fullPrefix, start, limit, strip) => {
      if (limit < 0) throw new Trap('internal: bad pointer from module');
      const keys = [...writes.keys()].filter((k) => k.startsWith(fullPrefix) && (start === null || k > start));
      keys.sort((a, b) => { const x = enc.encode(a), y = enc.encode(b); for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i]; return x.length - y.length; });
      const picked = keys.slice(0, Math.min(limit, 1024));
      const parts = [];
      const u32 = (n) => { const b = new Uint8Array(4); new DataView(b.buffer).setUint32(0, n, true); return b; };
      parts.push(u32(picked.length));
      for (const k of picked) {
        const kb = enc.encode(strip ? k.slice(strip.length) : k);
        const v = writes.get(k);
        parts.push(u32(kb.length), kb, u32(v.length), v);
      }
      const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
      let o = 0;
      for (const p of parts) { out.set(p, o); o += p.length; }
      return out;
    };
    /**
     * Writes a new call's record (fields in QueuedCall's order; `sealed` only for a sealed call),
     * its id index and the module's count (scheduler.rs `store`); its id.
     */
    const store = (prefix, due, at, payload, fuel, sealed, waiting) => {
      let n = scheduledCount;
      let id = callId(origin, n);
      while (writes.has(idKey(id))) { n = (n + 1) >>> 0; id = callId(origin, n); }
      const key = `${prefix}${hex16(due)}/${hex16(id)}`;
      const record = { id, module: input.moduleId, at, fuel: Number(fuel), payload: toHex(payload), scheduled_height: step.height };
      if (sealed !== null) record.sealed = sealed;
      writes.set(key, enc.encode(JSON.stringify(record)));
      writes.set(idKey(id), enc.encode(key));
      writeCount(writes, input.moduleId, waiting + 1);
      scheduledCount += 1;
      return id;
    };
    // Strict (a proven view): what this verifier cannot run ends the check instead of becoming
    // an error answer the chain would not give.
    const unsupported = (name) => () => {
      if (known !== null) throw new Unproven(`the view calls ${name}, which the JS verifier does not implement: its answer cannot be checked here`);
      throw new Trap(`internal: ${name} is not supported by the JS verifier`);
    };
    const host = {
      height: () => BigInt(step.height),
      block_time_ms: () => BigInt(step.timeMs),
      module_id: (p, c) => answer(enc.encode(input.moduleId), p, c),
      txid: (p, c) => answer(enc.encode(txid), p, c),
      sequencer: (p, c) => answer(enc.encode(step.sequencer), p, c),
      checkpoint: (p, c) => answer(enc.encode(`{"hash":${JSON.stringify(step.checkpoint.hash)},"height":${step.checkpoint.height}}`), p, c),
      get: (kp, kl, p, c) => { const v = writes.get(proven(prefix + text(kp, kl))); return BigInt(v ? answer(v, p, c) : -1); },
      put: (kp, kl, vp, vl) => { const k = text(kp, kl); wrote(k, vl >>> 0); writes.set(prefix + k, bytesAt(vp, vl)); },
      delete: (kp, kl) => { const k = text(kp, kl); wrote(k, 0); writes.delete(prefix + k); },
      scan: (pp, pl, sp, sl, limit, p, c) => BigInt(answer(scanOf(unscannable(prefix + text(pp, pl)), sl === -1 ? null : prefix + text(sp, sl), limit, prefix), p, c)),
      read_raw: (kp, kl, p, c) => { const v = writes.get(proven(text(kp, kl))); return BigInt(v ? answer(v, p, c) : -1); },
      scan_raw: (pp, pl, sp, sl, limit, p, c) => BigInt(answer(scanOf(unscannable(text(pp, pl)), sl === -1 ? null : text(sp, sl), limit, null), p, c)),
      balance: (ap, al, tp, tl, out) => {
        const acct = text(ap, al);
        const token = text(tp, tl);
        proven(`bal/${acct}/${token}`);
        let v = balanceOf(acct, token);
        const b = new Uint8Array(16);
        for (let i = 0; i < 16; i++) { b[i] = Number(v & 0xffn); v >>= 8n; }
        answer(b, out, 16);
      },
      escrow_in: (fp, fl, tp, tl, lo, hi) => {
        const from = text(fp, fl);
        const token = text(tp, tl);
        if (from !== step.sender) {
          lastError = JSON.stringify({ code: 'unauthorized', message: 'escrow_in takes funds only from the transaction sender' });
          return 1;
        }
        return transfer(from, escrow, token, amountOf(lo, hi));
      },
      escrow_out: (tp, tl, kp, kl, lo, hi) => transfer(escrow, text(tp, tl), text(kp, kl), amountOf(lo, hi)),
      last_error: (p, c) => answer(enc.encode(lastError ?? ''), p, c),
      emit: (kp, kl, dp, dl) => {
        const kind = text(kp, kl);
        const data = text(dp, dl);
        try { JSON.parse(data); } catch { throw new Trap('internal: event data is not valid JSON'); }
        eventBytes += enc.encode(kind).length + enc.encode(data).length;
        if (events.length >= MAX_CALL_EVENTS || eventBytes > MAX_CALL_EVENT_BYTES) throw new Trap(`internal: more than ${MAX_CALL_EVENTS} events or ${MAX_CALL_EVENT_BYTES} bytes of events in one call`);
        events.push({ kind, data });
      },
      public_random: (out) => {
        const t = enc.encode(txid);
        const m = new Uint8Array(26 + 4 + t.length + 16);
        m.set(enc.encode('gamechain.public_random.v1'));
        const dv = new DataView(m.buffer);
        dv.setUint32(26, t.length, true);
        m.set(t, 30);
        dv.setBigUint64(30 + t.length, BigInt(step.height), true);
        dv.setBigUint64(38 + t.length, BigInt(randoms++), true);
        answer(sha256(m), out, 32);
      },
      schedule: (kind, at, pp, pl, fuel) => {
        const payload = bytesAt(pp, pl);
        at = BigInt(at);
        fuel = BigInt(fuel);
        // imports.rs `schedule`, then scheduler.rs `schedule`, in their order.
        if ((kind !== 0 && kind !== 1) || at < 0n) return -2n;
        if (!SCHEDULABLE) return -7n;
        if (fuel < 1n || fuel > FUEL_APPLY) return -6n;
        const now = BigInt(kind === 0 ? step.height : step.timeMs);
        if (at <= now) return -2n;
        if (at - now > (kind === 0 ? MAX_AHEAD_BLOCKS : MAX_AHEAD_MS)) return -3n;
        if (payload.length > MAX_SCHEDULED_PAYLOAD_BYTES) return -4n;
        const waiting = readCount(writes, input.moduleId);
        if (waiting >= MAX_PENDING_PER_MODULE) return -5n;
        return BigInt(store(kind === 0 ? 'sched/h/' : 'sched/t/', at, kind === 0 ? { height: Number(at) } : { time_ms: Number(at) }, payload, fuel, null, waiting));
      },
      schedule_sealed: (round, pp, pl, fuel) => {
        const payload = bytesAt(pp, pl);
        round = BigInt(round);
        fuel = BigInt(fuel);
        // imports.rs `schedule_sealed`, then scheduler.rs `schedule_sealed`, in their order (-1,
        // from gc_end_block or a view, cannot happen in a transcript's steps).
        if (!SCHEDULABLE) return -7n;
        if (fuel < 1n || fuel > FUEL_APPLY) return -6n;
        if (round < 0n) return -2n;
        if (BEACON_KEY === null) return -11n;
        const now = BigInt(step.height);
        if (round <= now) return -2n;
        if (round - now > MAX_AHEAD_BLOCKS) return -3n;
        if (payload.length > MAX_SCHEDULED_PAYLOAD_BYTES) return -4n;
        const waiting = readCount(writes, input.moduleId);
        if (waiting >= MAX_PENDING_PER_MODULE) return -5n;
        const [count, used] = roundUse(writes, round);
        if (count >= MAX_SEALED_PER_ROUND || used + fuel > MAX_SEALED_ROUND_FUEL) return -10n;
        const id = store('sched/s/', round, { height: Number(round) }, payload, fuel, '', waiting);
        writeRoundUse(writes, round, count + 1n, used + fuel);
        return BigInt(id);
      },
      seal: (id, sp, sl, tp, tl) => {
        const sealed = bytesAt(sp, sl);
        const tag = bytesAt(tp, tl);
        id = BigInt(id);
        // imports.rs `seal`, kv_ctx.rs `seal` (only a transaction: the proof binds its sender; a
        // chain without a beacon key takes no sealed move), then scheduler.rs `seal`, in their
        // order.
        if (id < 0n) return -12n;
        if (isCall) return -1n;
        if (BEACON_KEY === null) return -11n;
        const q = queued(writes, id);
        if (!q || !isSealed(q.call) || q.call.module !== input.moduleId) return -12n;
        if (q.call.sealed !== '') return -13n;
        if (sealed.length !== SEALED_BYTES || tag.length > MAX_SEAL_TAG_BYTES) return -8n;
        const answer = sealOps().checkSealed(sealed, { module: input.moduleId, sender: step.sender, tag, round: q.call.at.height, beaconPublicKey: BEACON_KEY });
        if (answer !== 'ok') return answer === 'unbound' ? -9n : -8n;
        q.call.sealed = toHex(sealed);
        // The record re-written with its fields in their order (serde's: `sealed` last).
        writes.set(q.key, enc.encode(JSON.stringify(q.call)));
        return 0n;
      },
      cancel_scheduled: (id) => {
        id = BigInt(id);
        if (id < 0n) return 0;
        const q = queued(writes, id);
        if (!q || q.call.module !== input.moduleId) return 0;
        unqueue(writes, q);
        return 1;
      },
      draw: (out) => {
        out >>>= 0;
        if (out + 32 > memory.buffer.byteLength) throw new Trap('internal: bad pointer from module');
        if (!isCall || beacon === null) throw new Trap(`internal: ${NO_DRAW}`);
        const m = enc.encode(input.moduleId);
        const bytes = sha256(join([enc.encode('gamechain.draw.v1'), beacon, le(m.length, 4), m, le(step.id, 8), le(draws++, 8)]));
        new Uint8Array(memory.buffer, out, 32).set(bytes);
      },
      output: (p, l) => {
        if ((l >>> 0) > MAX_OUTPUT_BYTES) throw new Trap(`internal: output over ${MAX_OUTPUT_BYTES} bytes`);
        if (isView) {
          // As the chain reads a view's answer (serde_json of the bytes): a byte-order mark is
          // kept (and then not JSON), bytes that are not UTF-8 are no answer.
          try { output = VIEW_TEXT.decode(bytesAt(p, l)); } catch (e) { if (e instanceof Trap) throw e; output = null; }
        } else {
          output = text(p, l);
        }
      },
      abort: () => { throw new Trap('internal: module panicked'); },
      log: () => {},
    };
    const imports = {};
    for (const imp of WebAssembly.Module.imports(module)) {
      if (imp.kind !== 'function') continue;
      imports[imp.module] ??= {};
      imports[imp.module][imp.name] = isView && WRITES.has(imp.name) ? () => { throw new Trap(READ_ONLY); } : host[imp.name] ?? unsupported(imp.name);
    }
    let result;
    try {
      const instance = await WebAssembly.instantiate(module, imports);
      memory = instance.exports.memory;
      const place = (bytes) => {
        if (bytes.length === 0) return 0;
        const ptr = instance.exports.gc_alloc(bytes.length) >>> 0;
        if (ptr === 0 || ptr + bytes.length > memory.buffer.byteLength) throw new Trap('internal: gc_alloc failed');
        new Uint8Array(memory.buffer, ptr, bytes.length).set(bytes);
        return ptr;
      };
      let r;
      if (isView) {
        const query = enc.encode(step.query);
        r = instance.exports.gc_view(place(query), query.length);
      } else if (isCall) {
        if (!SCHEDULABLE) throw new Trap(`not found: gc_scheduled in module ${input.moduleId}`);
        let payload = fromHex(typeof call.payload === 'string' ? call.payload : '');
        let id = BigInt(step.id);
        if (isSealed(call)) {
          // The opening after the payload, the id flagged (schedule.rs `sealed_call_input`).
          const opened = call.sealed !== '' && blockBeacon !== null ? sealOps().openSealed(call.sealed, blockBeacon) : null;
          const tail = new Uint8Array(33);
          if (opened) { tail[0] = 1; tail.set(opened, 1); }
          payload = join([payload, tail]);
          id |= SEALED_CALL_FLAG;
        }
        const pp = place(payload);
        r = instance.exports.gc_scheduled(id, pp, payload.length);
      } else {
        const sender = enc.encode(step.sender);
        const op = enc.encode(step.op);
        const sp = place(sender);
        const opp = place(op);
        r = instance.exports.gc_apply(sp, sender.length, opp, op.length);
      }
      if (isView && r === 0) {
        let parsed;
        try { parsed = output !== null ? { v: JSON.parse(output) } : null; } catch { parsed = null; }
        result = parsed !== null && viewValueLike(parsed.v) ? { ok: true, error: null, events: [], value: output } : { ok: false, error: 'internal: malformed module output', events: [] };
      } else if (r === 0) result = { ok: true, error: null, events, debited: moved.toString() };
      else if (r === 1 && output !== null && display(output) !== null) result = { ok: false, error: display(output), events: [] };
      else result = { ok: false, error: 'internal: malformed module output', events: [] };
    } catch (e) {
      if (e instanceof Unsupported) throw e;
      // The engine's own traps (a division by zero, the stack) have the chain's texts only
      // approximately: a proven view's error cannot be compared with them.
      if (isView && known !== null && !(e instanceof Trap)) throw new Unproven(`the view traps in this engine (${(e && e.message) || e}): the chain's text for that trap cannot be reproduced here`);
      const why = e instanceof Trap ? e.message : `internal: trap: ${(e && e.message) || e}`;
      result = { ok: false, error: why, events: [] };
    }
    if (result.ok) {
      state = writes;
      // Not a chain rule: what this verifier holds (a hostile transcript could make 10,000
      // steps write 256 KiB each). Over it the verification stops with this error.
      let held = 0;
      for (const [k, v] of state) held += k.length + v.length;
      if (held > MAX_VERIFIER_STATE_BYTES) throw new Error(`the game's state grew over ${MAX_VERIFIER_STATE_BYTES} bytes: more than this verifier holds`);
    }
    results.push(result);
  }
  return results;
}
