// verify.js: verifyTranscript, a game checked in this process from its transcript
// (`GET /v1/games/<module>/<id>/transcript`, node/API.md "Transcripts") and its module's wasm
// (`GET /v1/code/<code_hash>`), as `gamechain verify --game` does in Rust
// (docs/verify-a-match.md):
// - the wasm's SHA-256 is the transcript's code hash (and it is at most the chain's largest
//   module);
// - each transaction step: its txid is its body's SHA-256, its signature is the body's signer's,
//   its action is an op of the module, its txid and its receipt's hash (borsh, as
//   runtime/chain/src/block/receipt.rs) are included under the signed header's `tx_root` and
//   `receipt_root` (RFC 6962 audit paths; the receipt at leaf `receipt_index` when the block ran
//   scheduled calls first);
// - each scheduled call's step (transcript version 2: `call: {module, id}`, a call of the game's
//   module): its receipt bound to the call (`scheduledReceiptHash`) is leaf `index` under the
//   header's `receipt_root`;
// - every step: its header is the expected signer's signature of the header's hash (borsh format
//   1, or 2 with a beacon, as runtime/chain/src/block/mod.rs), its place is after the step before
//   it (a block's calls before its transactions), and its header's beacon is the genesis beacon
//   key's BLS signature of its height (`verifyBeacon`, beacon.js; a chain without a key carries
//   none);
// - every op and call is re-executed (verify_host.js) from an empty module state plus the declared
//   starting balances, and its receipt compared: `ok`, `error`, `events`. Not `fuel_used`: the
//   browser counts no fuel. The calls the ops schedule go into the re-execution's own queue; a
//   call step runs the call from there (it must have been scheduled by an earlier step and be
//   due) with its block's checked beacon as the source of its draws. Sealed moves are re-done as
//   the chain does them (verify_host.js): each `seal` re-checks its envelope's proof under the
//   beacon key the headers' beacons were checked under (a move sealed under another key is
//   refused, as the chain refuses it), and a sealed call's step, in the block of its round,
//   opens its envelope with that block's checked beacon;
// - on a chain with validators (`opts.validators`, the genesis set): every step's `finality`
//   record proves its block final, a quorum of the set's ed25519 signatures over its consensus
//   digest or a descendant's chained to it (`checkStepFinality`, finality.js).
// The trust anchor is `opts.sequencer` (the chain's block signer), `opts.chainId` and
// `opts.beaconKey`; without them the transcript's own are used, which proves only that the answer
// is self-consistent. A caller that pins the signer but not the beacon key of a transcript that
// names one is refused (`beacon_key`): the node's key would let a lying sequencer pick the draws. Re-execution runs in a Worker ended after `opts.timeoutMs` (a module that
// loops forever cannot hang the page), on a module whose memory is capped at the chain's limit.

import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { verifyMessage } from '../keys/message.js';
import { txidOf } from '../chain/chain.js';
import { capMemory, MAX_RULES_BYTES, MAX_RULES_MEMORY_BYTES, WORKER_PORT, workerExecArgv } from '../channel/rules.js';
import { replayGame } from './verify_host.js';
import { verifyBeacon, verifyBeacons } from './beacon.js';
import { checkSealed, openSealed, SEAL_MODULE_URL } from './seal.js';
import { checkStepFinality, finalityNamespace, finalityParticipants, MAX_FINALITY_LINKS } from './finality.js';
import { gameLogProblem } from './game_log.js';
import { checkStart } from './start.js';
import { checkSession } from './session.js';

/** Largest module accepted: the chain's largest (runtime/vm MAX_MODULE_BYTES). */
export const MAX_VERIFY_MODULE_BYTES = MAX_RULES_BYTES;
/** Most steps accepted (the node serves at most 10,000). */
export const MAX_VERIFY_STEPS = 10000;
/** Longest the re-execution may run, ms, by default. */
export const VERIFY_TIMEOUT_MS = 30000;

const utf8 = new TextEncoder();

// ---------------------------------------------------------------------------------------------
// Encodings: borsh of a header and of a receipt, canonical JSON, RFC 6962.

function concat(parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) { out.set(p, o); o += p.length; }
  return out;
}
function u32le(n) { const b = new Uint8Array(4); new DataView(b.buffer).setUint32(0, n, true); return b; }
function u64le(n) { const b = new Uint8Array(8); new DataView(b.buffer).setBigUint64(0, BigInt(n), true); return b; }
function u128le(n) { let v = BigInt(n); const b = new Uint8Array(16); for (let i = 0; i < 16; i++) { b[i] = Number(v & 0xffn); v >>= 8n; } return b; }
function str(s) { const b = utf8.encode(s); return concat([u32le(b.length), b]); }
function hex32(h, what) {
  if (typeof h !== 'string' || !/^[0-9a-f]{64}$/.test(h)) throw new Error(`${what} is not 64 lowercase hex characters`);
  return hexToBytes(h);
}

/** The canonical JSON text of `value` (runtime/chain/src/canonical.rs): no whitespace, keys sorted by their UTF-8 bytes. */
export function canonicalJson(value) {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const keys = Object.keys(value).sort((a, b) => {
      const x = utf8.encode(a), y = utf8.encode(b);
      for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
      return x.length - y.length;
    });
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * The borsh encoding of a header (runtime/chain/src/block/mod.rs): format 1, the fields in order;
 * a header with a `beacon` is format 2: 8 bytes `ff` ‖ `02` ‖ the format-1 fields ‖ the 48 beacon
 * bytes.
 */
export function headerBytes(h) {
  const fields = [
    u64le(h.height), hex32(h.prev_hash, 'prev_hash'), u64le(h.time_ms), str(h.sequencer),
    u64le(h.checkpoint.height), str(h.checkpoint.hash),
    hex32(h.tx_root, 'tx_root'), hex32(h.receipt_root, 'receipt_root'), hex32(h.state_root, 'state_root'),
  ];
  if (h.beacon === undefined || h.beacon === null) return concat(fields);
  if (typeof h.beacon !== 'string' || !/^[0-9a-f]{96}$/.test(h.beacon)) throw new Error('beacon is not 96 lowercase hex characters');
  return concat([new Uint8Array(8).fill(0xff), Uint8Array.of(2), ...fields, hexToBytes(h.beacon)]);
}

/** The block hash of a header (SHA-256 of its borsh encoding, format 1 or 2), lowercase hex. */
export function headerHash(h) {
  return bytesToHex(sha256(headerBytes(h)));
}

/** A receipt's borsh encoding (runtime/chain/src/block/receipt.rs). */
function receiptBytes(r) {
  const parts = [Uint8Array.of(r.ok ? 1 : 0)];
  parts.push(r.error == null ? Uint8Array.of(0) : concat([Uint8Array.of(1), str(r.error)]));
  parts.push(u32le(r.events.length));
  for (const e of r.events) parts.push(str(e.kind), str(canonicalJson(e.data)));
  parts.push(u64le(r.fuel_used));
  if (r.fee !== undefined && BigInt(r.fee) !== 0n) parts.push(u128le(r.fee));
  return concat(parts);
}

/** SHA-256 of a receipt's borsh encoding (a transaction's or end-block's leaf under `receipt_root`). */
export function receiptHash(r) {
  return sha256(receiptBytes(r));
}

/**
 * The leaf under `receipt_root` of scheduled call `id` of `module` with receipt `r`:
 * SHA-256(borsh String "scheduled" ‖ borsh String module ‖ u64 LE id ‖ the receipt's borsh).
 */
export function scheduledReceiptHash(module, id, r) {
  return sha256(concat([str('scheduled'), str(module), u64le(id), receiptBytes(r)]));
}

function nodeHash(l, r) { return sha256(concat([Uint8Array.of(1), l, r])); }

/** RFC 6962 Merkle tree hash of `leaves` (each a byte array, hashed as a leaf). */
export function merkleRoot(leaves) {
  const mth = (lo, hi) => {
    if (hi - lo === 0) return sha256(new Uint8Array(0));
    if (hi - lo === 1) return sha256(concat([Uint8Array.of(0), leaves[lo]]));
    let k = 1;
    while (k * 2 < hi - lo) k *= 2;
    return nodeHash(mth(lo, lo + k), mth(lo + k, hi));
  };
  return mth(0, leaves.length);
}

/**
 * A block's `receipt_root` as its JSON (`GET /v1/blocks/<h>`) implies it, lowercase hex: the
 * scheduled calls' receipts ([`scheduledReceiptHash`]), then the transactions', then the
 * end-block receipts'.
 */
export function blockReceiptRoot(block) {
  const leaves = [
    ...(block.scheduled ?? []).map((s) => scheduledReceiptHash(s.module, s.id, s.receipt)),
    ...(block.txs ?? []).map((t) => receiptHash(t.receipt)),
    ...(block.end_block ?? []).map((e) => receiptHash(e.receipt)),
  ];
  return bytesToHex(merkleRoot(leaves));
}

/** RFC 9162 §2.1.3.2: whether `proof` (hex hashes) puts `leaf` (bytes) at `index` of `size` leaves under `root` (bytes). */
export function verifyInclusion(leaf, index, size, proof, root) {
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(size) || index < 0 || index >= size) return false;
  let f = BigInt(index);
  let s = BigInt(size - 1);
  let r = sha256(concat([Uint8Array.of(0), leaf]));
  for (const p of proof) {
    if (s === 0n) return false;
    let ph;
    try { ph = hex32(p, 'a proof hash'); } catch { return false; }
    if ((f & 1n) === 1n || f === s) {
      r = nodeHash(ph, r);
      while ((f & 1n) === 0n && f !== 0n) { f >>= 1n; s >>= 1n; }
    } else {
      r = nodeHash(r, ph);
    }
    f >>= 1n;
    s >>= 1n;
  }
  return s === 0n && r.length === root.length && r.every((b, i) => b === root[i]);
}

/**
 * The raw text of member `name` of the top-level object `text`'s member `outer` (e.g. the `op`
 * of the `action`), exactly as written: the op bytes the chain gave the module. Null when absent.
 */
export function rawMember(text, outer, name) {
  let i = 0;
  const ws = () => { while (i < text.length && ' \t\n\r'.includes(text[i])) i++; };
  const skipString = () => { i++; while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1; i++; };
  const readString = () => { const s = i; skipString(); return JSON.parse(text.slice(s, i)); };
  const skipValue = () => {
    ws();
    const c = text[i];
    if (c === '"') return skipString();
    if (c === '{' || c === '[') {
      let depth = 0;
      do {
        if (text[i] === '"') { skipString(); continue; }
        if (text[i] === '{' || text[i] === '[') depth++;
        else if (text[i] === '}' || text[i] === ']') depth--;
        i++;
      } while (depth > 0 && i < text.length);
      return;
    }
    while (i < text.length && !',}] \t\n\r'.includes(text[i])) i++;
  };
  const member = (key, inner) => {
    ws();
    if (text[i] !== '{') return null;
    i++;
    for (;;) {
      ws();
      if (text[i] === '}' || i >= text.length) return null;
      const k = readString();
      ws(); i++; ws();
      if (k === key) return inner();
      skipValue();
      ws();
      if (text[i] === ',') i++;
    }
  };
  return member(outer, () => member(name, () => { ws(); const s = i; skipValue(); return text.slice(s, i); }));
}

// ---------------------------------------------------------------------------------------------
// Running the re-execution in a Worker.

// A module that seals moves needs seal.js's checkSealed and openSealed in the Worker: it imports
// them from `m.sealUrl` (seal.js's own URL: this file's sibling, or the browser bundle that holds
// them, /sdk/gamechain.js). A Worker that cannot import them says so (`noSeal`) and the replay
// runs in this thread instead.
const WORKER_SOURCE = `"use strict";
const replayGame = ${replayGame.toString()};
${WORKER_PORT}
on(async (m) => {
  let seal = null;
  if (m.sealUrl) {
    try {
      seal = await import(m.sealUrl);
      if (typeof seal.checkSealed !== 'function' || typeof seal.openSealed !== 'function') throw new Error('no checkSealed and openSealed at ' + m.sealUrl);
    } catch (e) { post({ error: String((e && e.message) || e), noSeal: true }); return; }
  }
  try { post({ results: await replayGame(m.module, m.input, seal) }); } catch (e) { post({ error: String((e && e.message) || e) }); }
});
`;

/** Whether `module` imports the sealed-move host functions (and so needs seal.js in the replay). */
function sealsMoves(module) {
  return WebAssembly.Module.imports(module).some((i) => i.kind === 'function' && (i.name === 'seal' || i.name === 'schedule_sealed'));
}

/**
 * Runs replayGame in a Worker bounded by `timeoutMs`; `{results}` or `{error}`; null when no
 * Worker can start here. Also view.js's (not part of the SDK's surface).
 */
export async function inWorker(module, input, timeoutMs) {
  const sealUrl = sealsMoves(module) ? SEAL_MODULE_URL : null;
  let finish;
  const done = new Promise((resolve) => { finish = resolve; });
  let stop = () => {};
  if (typeof globalThis.Worker === 'function' && typeof globalThis.Blob === 'function' && typeof URL.createObjectURL === 'function') {
    const url = URL.createObjectURL(new Blob([WORKER_SOURCE], { type: 'text/javascript' }));
    let w;
    try { w = new globalThis.Worker(url); } catch { URL.revokeObjectURL(url); return null; }
    w.onmessage = (e) => finish(e.data);
    w.onerror = (e) => { e.preventDefault?.(); finish({ error: e.message || 'the verify worker failed', noWorker: true }); };
    stop = () => { w.terminate(); URL.revokeObjectURL(url); };
    w.postMessage({ module, input, sealUrl });
  } else if (globalThis.process?.versions?.node) {
    const spec = 'node:worker_threads';
    const { Worker } = await import(/* @vite-ignore */ spec);
    const w = new Worker(WORKER_SOURCE, { eval: true, execArgv: workerExecArgv(), resourceLimits: { maxOldGenerationSizeMb: 512 } });
    w.on('message', finish);
    w.on('error', (e) => finish({ error: e?.message ?? String(e) }));
    stop = () => { w.terminate(); };
    w.postMessage({ module, input, sealUrl });
  } else {
    return null;
  }
  const timer = setTimeout(() => finish({ error: `the re-execution ran over ${timeoutMs} ms` }), timeoutMs);
  const r = await done;
  clearTimeout(timer);
  stop();
  if (r.noWorker || r.noSeal) return null;
  return r;
}

// ---------------------------------------------------------------------------------------------
// verifyTranscript.

/** Whether event data names game `game` by its `id` or `game` field (the events feed's rule). */
function namesGame(data, game) {
  return !!data && typeof data === 'object' && (data.id === game || data.game === game);
}
/** Whether `step` finished game `game` of `module`: an event `<module>.finished` naming it. */
function finishedBy(step, module, game) {
  return Array.isArray(step?.receipt?.events) && step.receipt.events.some((e) => e.kind === `${module}.finished` && namesGame(e.data, game));
}

function decimal(s) { return typeof s === 'string' && /^(0|[1-9][0-9]*)$/.test(s); }

/** The chain's `fuel_apply` when neither the caller nor the transcript names it (the default chain's). */
export const DEFAULT_FUEL_APPLY = 10000000;

/** Where a step sorts in the chain: its block, then the block's scheduled calls (they run first), then its transactions, each by index. */
function place(s) {
  const isCall = s.call !== undefined && s.call !== null;
  return [s.height, isCall ? 0 : 1, s.index];
}
function after(a, b) {
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i] > b[i];
  return false;
}

/**
 * Checks a transcript: see the file's head. Never throws for a bad transcript: the result's
 * `divergence` names the first failed check (`index` null for the transcript as a whole).
 * @param {object} transcript the node's JSON answer (version 1, or 2 with scheduled calls' steps)
 * @param {Uint8Array|ArrayBuffer} wasmBytes the module's code
 * @param {{sequencer?: string, signers?: string[], chainId?: string, beaconKey?: string|null,
 *   validators?: {set: {address: string, consensus_key: string}[]}|null, genesisHash?: string,
 *   fuelApply?: number, module: string,
 *   game: string, complete?: boolean, timeoutMs?: number, worker?: 'auto'|'always'|'never',
 *   genesisModules?: {id: string, code_hash: string}[]}} opts `module` and `game`: the game
 *   asked for (required: without them the result is a `game` divergence); `genesisModules`: the
 *   genesis's `modules`, to say whether the code hash is the genesis module's (`codeOrigin`);
 *   `beaconKey`: the genesis's `beacon.public_key` (null: a chain without a beacon; default the
 *   transcript's `beacon_key`); `fuelApply`: the genesis's `fuel_apply` (the bound of a scheduled
 *   call's fuel; default the transcript's, else 10,000,000); `validators`: the genesis's
 *   `validators` on a chain with validators (the block signers default to their addresses, and
 *   every step's `finality` must prove its block final by a quorum of their consensus keys:
 *   divergence `finality` without a record, `finality.certificate` for one that does not;
 *   required when `signers` is given); `genesisHash`: the chain's genesis hash, which the
 *   transcript must name (it tells a relaunched chain with the same keys and chain id apart, and
 *   is the certificates' namespace; default the transcript's; required with `validators`);
 *   `stateCommitment`: the genesis's `state_commitment` ('sparse_merkle' on a chain with state
 *   proofs: the transcript's `log` must then prove the steps are all of the game's, divergences
 *   `log`, `log.header`, `log.finality`, `log.proof`, `log.steps`; a transcript carrying a
 *   `log` has it checked whatever this says)
 * @returns {Promise<{ok: boolean, steps: object[], divergence: null|{index: number|null,
 *   txid: string|null, call: number|null, field: string, expected: string, got: string},
 *   module: string|null, game: string|null, finished: boolean, beaconKey: string|null,
 *   beaconsVerified: number, finalityVerified: number|null, completeAsOf: number|null,
 *   startUnproven: {account: string, why: string}[]|null, sessionUnproven: {step: number, why: string}[]|null, codeOrigin: 'genesis'|'module record'|'named by the node', elapsedMs: number, isolated: boolean|null}>}
 *   `finished`: the verified last step finished the game (never the node's word alone);
 *   `finalityVerified`: steps whose block's finality certificate verified (null: no validator
 *   set given); `completeAsOf`: the block at which the game's proven log holds exactly the
 *   steps shown (null: no log checked), so every step up to it is shown; `startUnproven`: the
 *   players whose starting balance is the node's declared one, with its reason (null: the
 *   starting balances were not checked, a chain without state proofs; [] every one proven);
 *   `sessionUnproven`: the session steps whose authorization the node could not prove, with
 *   its reason (null when not checked; [] every session step's record proven: session.js)
 */
export async function verifyTranscript(transcript, wasmBytes, opts) {
  opts = opts ?? {};
  const started = (globalThis.performance ?? Date).now();
  const steps = [];
  let isolated = null;
  let finished = false;
  let beaconKey = null;
  let finalityVerified = null;
  let completeAsOf = null;
  let startUnproven = null;
  let sessionUnproven = null;
  const beaconChecks = new Map(); // `${height} ${beacon}` → verified
  const codeOrigin = () => {
    if (Array.isArray(opts.genesisModules) && opts.genesisModules.some((m) => m && m.id === transcript?.module && m.code_hash === transcript?.code_hash)) return 'genesis';
    return completeAsOf !== null ? 'module record' : 'named by the node';
  };
  const finish = (divergence) => ({
    ok: divergence === null,
    steps,
    divergence,
    module: typeof transcript?.module === 'string' ? transcript.module : null,
    game: typeof transcript?.game === 'string' ? transcript.game : null,
    finished: divergence === null && finished,
    beaconKey,
    beaconsVerified: [...beaconChecks.values()].filter(Boolean).length,
    finalityVerified,
    completeAsOf: divergence === null ? completeAsOf : null,
    startUnproven: divergence === null ? startUnproven : null,
    sessionUnproven: divergence === null ? sessionUnproven : null,
    codeOrigin: codeOrigin(),
    elapsedMs: Math.round((globalThis.performance ?? Date).now() - started),
    isolated,
  });
  const whole = (field, expected, got) => finish({ index: null, txid: null, call: null, field, expected: String(expected), got: String(got) });
  const t = transcript;
  if (!t || typeof t !== 'object' || !Array.isArray(t.steps)) return whole('transcript', 'a transcript object', typeof t);
  if (t.version !== 1 && t.version !== 2) return whole('version', '1 or 2', t.version);
  const chainId = opts.chainId ?? t.chain_id;
  if (t.chain_id !== chainId) return whole('chain_id', chainId, t.chain_id);
  const sequencer = opts.sequencer ?? t.sequencer;
  if (t.sequencer !== sequencer) return whole('sequencer', sequencer, t.sequencer);
  // The genesis hash: what tells two chains with the same keys and chain id apart (a relaunch).
  // A caller pinning the validator set must pin it too: it is the certificates' namespace, and
  // the transcript's own would let another chain's finalized game pass as this one's.
  if (opts.validators !== undefined && opts.validators !== null && opts.genesisHash === undefined) {
    return whole('genesis_hash', 'the genesis hash pinned beside the validator set (opts.genesisHash: GET /v1/status genesis_hash)', 'none given');
  }
  const genesisHash = opts.genesisHash ?? t.genesis_hash;
  if (t.genesis_hash !== genesisHash) return whole('genesis_hash', genesisHash, t.genesis_hash);
  // Finality (a chain with validators): the genesis set pinned by the caller
  // (`opts.validators`: genesis.validators), and every step's block proven final by a quorum
  // of it (finality.js). A caller naming validators as block signers must pin the set: a header
  // signed by one validator alone is not the chain's.
  let finalitySet = null;
  if (opts.validators !== undefined && opts.validators !== null) {
    try {
      const set = opts.validators.set;
      finalitySet = { participants: finalityParticipants(set.map((v) => v?.consensus_key)), namespace: finalityNamespace(chainId, genesisHash) };
    } catch (e) {
      return whole('finality', 'the genesis validator set (opts.validators: genesis.validators)', e?.message ?? e);
    }
  } else if (opts.signers !== undefined) {
    return whole('finality', 'the genesis validator set pinned beside the block signers (opts.validators: genesis.validators)', 'none given');
  }
  if (finalitySet !== null) finalityVerified = 0;
  const signers = opts.signers ?? (finalitySet !== null ? opts.validators.set.map((v) => v.address) : [sequencer]);
  // The beacon key: the caller's (the genesis's) when given, and the transcript must name the
  // same; a chain without one has none and its headers carry no beacon.
  const keyOf = (k) => (k === undefined || k === null ? null : k);
  // A caller that pins the block signer must pin the beacon key too: the transcript's own key
  // is the node's word, and a lying sequencer could name a key of its own and pick the draws.
  if (opts.beaconKey === undefined && (opts.sequencer !== undefined || opts.signers !== undefined) && keyOf(t.beacon_key) !== null) {
    return whole('beacon_key', 'the genesis beacon key pinned beside the block signer (opts.beaconKey: genesis.beacon.public_key)', t.beacon_key);
  }
  beaconKey = opts.beaconKey !== undefined ? keyOf(opts.beaconKey) : keyOf(t.beacon_key);
  if (keyOf(t.beacon_key) !== beaconKey) return whole('beacon_key', beaconKey ?? 'none (a chain without a beacon)', t.beacon_key ?? 'none');
  if (beaconKey !== null && !/^[0-9a-f]{192}$/.test(beaconKey)) return whole('beacon_key', '192 lowercase hex characters', beaconKey);
  const fuelApply = opts.fuelApply ?? t.fuel_apply ?? DEFAULT_FUEL_APPLY;
  if (!Number.isSafeInteger(fuelApply) || fuelApply < 1) return whole('fuel_apply', 'a positive integer', fuelApply);
  // The game asked for is required: a transcript proves only the game it names, so a caller
  // that did not say which one it wanted would accept any game (of any module) as verified.
  if (typeof opts.module !== 'string' || typeof opts.game !== 'string') return whole('game', 'opts.module and opts.game: the game asked for', 'none given');
  if (t.module !== opts.module) return whole('module', opts.module, t.module);
  if (t.game !== opts.game) return whole('game', opts.game, t.game);
  const code = wasmBytes instanceof Uint8Array ? wasmBytes : new Uint8Array(wasmBytes);
  if (code.length > MAX_VERIFY_MODULE_BYTES) return whole('code_size', `at most ${MAX_VERIFY_MODULE_BYTES} bytes`, `${code.length} bytes`);
  const codeHash = bytesToHex(sha256(code));
  if (codeHash !== t.code_hash) return whole('code_hash', t.code_hash, codeHash);
  if (t.steps.length === 0) return whole('steps', 'at least one transaction', 'none');
  if (t.steps.length > MAX_VERIFY_STEPS) return whole('steps', `at most ${MAX_VERIFY_STEPS}`, t.steps.length);

  /** Whether the header's beacon is what the chain requires (genesis.rs `check_beacon`): null when it is, else why not. */
  const beaconProblem = (h) => {
    const b = h.beacon ?? null;
    if (beaconKey === null) return b === null ? null : 'the block carries a beacon; this chain has none';
    if (h.height === 0) return b === null ? null : 'block 0 carries no beacon';
    if (b === null) return `block ${h.height} carries no beacon`;
    const k = `${h.height} ${b}`;
    if (!beaconChecks.has(k)) beaconChecks.set(k, verifyBeacon(beaconKey, chainId, h.height, b));
    return beaconChecks.get(k) ? null : `block ${h.height}'s beacon does not check: the beacon is not the genesis key's signature of this height`;
  };

  // Every beacon the steps' headers carry, checked at once (two pairings when all are right);
  // each step below then finds its answer here.
  if (beaconKey !== null) {
    const items = [];
    const seen = new Set();
    for (const s of t.steps) {
      const h = s?.header?.header;
      const k = `${h?.height} ${h?.beacon}`;
      if (h && typeof h.beacon === 'string' && Number.isSafeInteger(h.height) && h.height > 0 && !seen.has(k)) {
        seen.add(k);
        items.push({ k, height: h.height, beacon: h.beacon });
      }
    }
    verifyBeacons(beaconKey, chainId, items).forEach((ok, i) => beaconChecks.set(items[i].k, ok));
  }

  // The checks that need no execution, step by step; the first failure is kept with its index.
  const checked = [];
  let staticDivergence = null;
  let previous = null;
  for (let i = 0; i < t.steps.length && !staticDivergence; i++) {
    const s = t.steps[i];
    const isCall = !!s && typeof s === 'object' && s.call !== undefined && s.call !== null;
    const callId = isCall && Number.isSafeInteger(s.call?.id) ? s.call.id : null;
    const at = (field, expected, got) => ({ index: i, txid: !isCall && typeof s?.txid === 'string' ? s.txid : null, call: callId, field, expected: String(expected), got: String(got) });
    const fail = (d) => { staticDivergence = d; };
    try {
      const h0 = s?.header?.header;
      const numbers = [s?.height, s?.index, s?.receipt_count, h0?.height, h0?.time_ms, h0?.checkpoint?.height];
      if (!isCall) numbers.push(s?.tx_count, s?.receipt_index ?? 0);
      if (isCall) numbers.push(s.call.id);
      if (!numbers.every((n) => Number.isSafeInteger(n) && n >= 0)) { fail(at('transcript', 'heights, indexes, counts, call ids and times as non-negative integers', 'another value')); break; }
      let body = null;
      let op = null;
      let a = null;
      if (isCall) {
        if (s.call.module !== t.module) { fail(at('call.module', t.module, s.call.module)); break; }
        if ((s.txid ?? '') !== '' || (s.body ?? '') !== '' || (Array.isArray(s.tx_proof) && s.tx_proof.length > 0)) { fail(at('call', 'a call step without transaction fields', 'a step with both')); break; }
      } else {
        const txid = txidOf(s.body);
        if (txid !== s.txid) { fail(at('txid', s.txid, txid)); break; }
        try { body = JSON.parse(s.body); } catch { fail(at('signature', 'a valid signed transaction', 'a body that is not JSON')); break; }
        if (body.chain_id !== chainId) { fail(at('signature', `a transaction of chain ${chainId}`, `chain ${body.chain_id}`)); break; }
        if (!verifyMessage(body.from, s.body, s.signature)) { fail(at('signature', `a signature by ${body.from}`, 'a signature that does not verify')); break; }
        a = body.action ?? {};
        const isGame = (a.type === 'game' || (a.type === 'session_game' && a.account !== body.from)) && a.game === t.module;
        op = isGame ? rawMember(s.body, 'action', 'op') : null;
        if (op === null) { fail(at('action', `a game op of module ${t.module}`, `a \`${a.type}\` action`)); break; }
      }
      // Its place: the header of its height, after the step before it (a block's scheduled
      // calls before its transactions), one block shown the same way by all its steps.
      const h = s.header?.header;
      if (!h || h.height !== s.height) { fail(at('height', s.height, `a header of height ${h?.height}`)); break; }
      if (previous && !after(place(s), place(previous))) {
        fail(at('order', `after block ${previous.height} step ${previous.index}`, `block ${s.height} step ${s.index}`)); break;
      }
      // Two steps of one block show the same block: a proof binds an index only for a given tree
      // size, which the header does not commit to (verify/game/checks.rs in Rust says the same).
      if (previous && s.height === previous.height) {
        const bothTx = !isCall && (previous.call === undefined || previous.call === null);
        if (canonicalJson(s.header) !== canonicalJson(previous.header) || s.receipt_count !== previous.receipt_count || (bothTx && s.tx_count !== previous.tx_count)) {
          fail(at('block', `block ${s.height} as the step before showed it (${previous.receipt_count} receipts)`, `another header or size (${s.receipt_count} receipts)`)); break;
        }
      }
      if (!signers.includes(h.sequencer)) { fail(at('header_signature', `a header signed by ${signers.join(' or ')}`, `one naming ${h.sequencer}`)); break; }
      if (!verifyMessage(h.sequencer, headerHash(h), s.header.signature)) { fail(at('header_signature', 'the block signer\'s signature of the header', 'a signature that does not verify')); break; }
      const problem = beaconProblem(h);
      if (problem !== null) { fail(at('header.beacon', "the genesis beacon key's signature of this height", problem)); break; }
      if (finalitySet !== null) {
        if (s.finality === undefined || s.finality === null) {
          fail(at('finality', `a finality certificate of block ${h.height} (its own or a descendant's within ${MAX_FINALITY_LINKS} blocks) by a quorum of the genesis validators`, `step ${i} (block ${h.height}) carries no finality record`)); break;
        }
        const r = checkStepFinality(finalitySet, s, headerHash(h));
        if (r.problem !== undefined) { fail(at('finality.certificate', `block ${h.height} finalized by a quorum of the genesis validators`, `step ${i} (block ${h.height}): ${r.problem}`)); break; }
        finalityVerified++;
      }
      // Its inclusion under the signed roots.
      const bad = 'a proof that does not lead to the signed root';
      if (isCall) {
        if (!verifyInclusion(scheduledReceiptHash(s.call.module, s.call.id, s.receipt), s.index, s.receipt_count, s.receipt_proof, hex32(h.receipt_root, 'receipt_root'))) {
          fail(at('receipt_proof', 'a valid RFC 6962 inclusion proof', bad)); break;
        }
      } else {
        if (!verifyInclusion(hexToBytes(s.txid), s.index, s.tx_count, s.tx_proof, hex32(h.tx_root, 'tx_root'))) { fail(at('tx_proof', 'a valid RFC 6962 inclusion proof', bad)); break; }
        const leaf = s.receipt_index ?? s.index;
        if (s.receipt_count < s.tx_count || leaf < s.index || !verifyInclusion(receiptHash(s.receipt), leaf, s.receipt_count, s.receipt_proof, hex32(h.receipt_root, 'receipt_root'))) {
          fail(at('receipt_proof', 'a valid RFC 6962 inclusion proof', bad)); break;
        }
      }
      // The step is this game's: it succeeded and an event names the game (the node's rule for
      // picking steps); the first step of a hex id is the transaction that created the game.
      if (s.receipt.ok !== true) { fail(at('game', `a successful ${isCall ? 'call' : 'op'} of game ${t.game}`, `a failed ${isCall ? 'call' : 'transaction'} (${s.receipt.error})`)); break; }
      if (!s.receipt.events.some((e) => namesGame(e.data, t.game))) { fail(at('game', `an event of ${t.module} naming game ${t.game} (its id or game field)`, 'a receipt whose events name another game or none')); break; }
      previous = s;
      const where = { height: s.height, timeMs: h.time_ms, checkpoint: { hash: String(h.checkpoint.hash), height: h.checkpoint.height }, sequencer: t.sequencer, beacon: h.beacon ?? null };
      if (isCall) {
        checked.push({ type: 'call', id: s.call.id, ...where });
      } else {
        const sender = a.type === 'session_game' ? a.account : body.from;
        checked.push({ type: 'tx', txid: s.txid, ...where, sender, op, sessionKey: a.type === 'session_game' ? body.from : null, body });
      }
    } catch (e) {
      fail(at('transcript', 'a well-formed step', (e && e.message) || e));
    }
  }

  // On a chain with state proofs the starting balances are proven (start.js); elsewhere the
  // node declares them.
  // (Also whenever the transcript carries a log or `start`: only a chain with state proofs has
  // either, and a `start` dropped from it must not pass for a chain without them.)
  let balances = Object.entries(t.start_balances ?? {});
  const hasLog = t.log !== undefined && t.log !== null;
  if (staticDivergence === null && (opts.stateCommitment === 'sparse_merkle' || hasLog || (Array.isArray(t.start) && t.start.length > 0))) {
    const r = checkStart(t, headerHash);
    if (r.problem) return whole(r.problem.field, r.problem.expected, r.problem.got);
    balances = [...r.balances].map(([a, v]) => [a, v.toString()]);
    for (const { index, account, amount } of r.resets) {
      const c = checked[index];
      c.setState = [...(c.setState ?? []), [`bal/${account}/GOLD`, amount === 0n ? null : utf8.encode(amount.toString())]];
    }
    startUnproven = r.unproven;
    sessionUnproven = [];
  }
  // Re-execution of the steps that passed, from the starting balances.
  const state = [];
  for (const [account, amount] of balances) {
    if (!decimal(amount)) return whole('start_balances', 'decimal amounts', amount);
    if (amount !== '0') state.push([`bal/${account}/GOLD`, utf8.encode(amount)]);
  }
  let results = [];
  if (checked.length) {
    let module;
    try {
      module = await WebAssembly.compile(capMemory(code, MAX_RULES_MEMORY_BYTES >> 16));
    } catch (e) {
      return whole('code', 'code that loads', (e && e.message) || e);
    }
    // The chain's beacon key: the one the headers' beacons verified under, and the one a sealed
    // move's proof must be made under (verify_host.js `seal`).
    const input = { moduleId: t.module, state, steps: checked.map(({ sessionKey, body, ...rest }) => rest), fuelApply, beaconKey };
    let r = opts.worker === 'never' ? null : await inWorker(module, input, opts.timeoutMs ?? VERIFY_TIMEOUT_MS);
    if (r === null) {
      if (opts.worker === 'always') return whole('execution', 'a Worker to run the module in', 'none could start');
      isolated = false;
      try {
        r = { results: await replayGame(module, input, { checkSealed, openSealed }) };
      } catch (e) {
        r = { error: String((e && e.message) || e) };
      }
    } else {
      isolated = true;
    }
    if (r.error !== undefined) return finish({ index: null, txid: null, call: null, field: 'execution', expected: 'the ops to run to their end', got: r.error });
    results = r.results;
  }
  // GOLD moved (fees included) by the session steps checked so far, by session key and block.
  const sameBlock = new Map();
  for (let i = 0; i < checked.length; i++) {
    const s = t.steps[i];
    const c = checked[i];
    const got = results[i];
    const want = s.receipt;
    const isCall = c.type === 'call';
    const at = (field, expected, gotv) => finish({ index: i, txid: isCall ? null : s.txid, call: isCall ? c.id : null, field, expected: String(expected), got: String(gotv) });
    if (!got) return at('execution', 'a result for every step', 'none');
    if (got.missing) return at('call', got.missing.expected, got.missing.got);
    if (got.ok !== want.ok) return at('ok', want.ok, got.ok);
    if ((got.error ?? null) !== (want.error ?? null)) return at('error', want.error ?? 'no error', got.error ?? 'no error');
    const wantEvents = canonicalJson(want.events.map((e) => ({ kind: e.kind, data: e.data })));
    const gotList = got.events.map((e) => ({ kind: e.kind, data: JSON.parse(e.data) }));
    // A successful session_game gets the chain's `session {account, key, session}` event last
    // (runtime/src/transition/session.rs): account and key must be the step's; the session's id
    // is state (the authorization's nonce), taken from the receipt.
    const key = isCall ? null : c.sessionKey;
    if (key !== null && got.ok) {
      const last = want.events[want.events.length - 1];
      const d = last?.data;
      const fits = last?.kind === 'session' && d && d.account === c.sender && d.key === key && Number.isSafeInteger(d.session) && Object.keys(d).length === 3;
      gotList.push(fits ? last : { kind: 'session', data: { account: c.sender, key, session: '<id>' } });
    }
    const gotEvents = canonicalJson(gotList);
    if (wantEvents !== gotEvents) return at('events', wantEvents, gotEvents);
    // Its session's authorization (session.js), where the starting balances are proven too.
    if (key !== null && sessionUnproven !== null) {
      const block = `${key} ${s.height}`;
      const r = checkSession(s, c.body, t.module, BigInt(got.debited ?? '0'), headerHash, sameBlock.get(block) ?? 0n);
      if (r.problem) return at(r.problem.field, r.problem.expected, r.problem.got);
      if (r.unproven !== undefined) sessionUnproven.push({ step: i, why: r.unproven });
      else sameBlock.set(block, (sameBlock.get(block) ?? 0n) + r.moved);
    }
    const beacon = c.beacon;
    const beaconVerified = beacon !== null && beaconChecks.get(`${c.height} ${beacon}`) === true;
    if (isCall) {
      steps.push({
        index: i, type: 'call', txid: null, call: { module: t.module, id: c.id }, height: s.height, ok: true,
        sender: null, op: null, kind: null, error: want.error ?? null,
        events: want.events, fuelUsed: want.fuel_used, beacon, beaconVerified,
      });
      continue;
    }
    let op = null;
    try { op = JSON.parse(c.op); } catch { /* the module saw the same bytes */ }
    steps.push({
      index: i, type: 'tx', txid: s.txid, call: null, height: s.height, ok: true, sender: c.sender, op,
      kind: op && typeof op.kind === 'string' ? op.kind : null, error: want.error ?? null,
      events: want.events, fuelUsed: want.fuel_used, beacon, beaconVerified,
    });
  }
  if (staticDivergence) return finish(staticDivergence);
  // Finished is what the verified steps show, not what the node says.
  finished = finishedBy(t.steps[t.steps.length - 1], t.module, t.game);
  if (t.finished === true && !finished) return whole('finished', `the last step emitting ${t.module}.finished for game ${t.game}, as the transcript says`, 'a last step without it');
  if (opts.complete && !finished) return whole('finished', 'a finished game', 'a game still in play');
  // The game's log (a chain with state proofs, `opts.stateCommitment` 'sparse_merkle': its
  // genesis's `state_commitment`): the steps are all of the game's, none cut (game_log.js).
  if (opts.stateCommitment === 'sparse_merkle' || (t.log !== undefined && t.log !== null)) {
    let leaves;
    try {
      leaves = t.steps.map((s) => (s.call !== undefined && s.call !== null ? scheduledReceiptHash(s.call.module, s.call.id, s.receipt) : hexToBytes(s.txid)));
    } catch (e) {
      return whole('log.steps', 'steps whose leaves hash', e?.message ?? e);
    }
    const headerProblem = (log) => {
      const lh = log.header?.header;
      const at = `block ${lh?.height}`;
      let signed = false;
      try { signed = signers.includes(lh.sequencer) && verifyMessage(lh.sequencer, headerHash(lh), log.header.signature); } catch { signed = false; }
      if (!signed) return { field: 'log.header', expected: "a header signed by the chain's block signer", got: `${at}: not signed by ${signers.join(' or ')}` };
      if (finalitySet !== null) {
        const r = checkStepFinality(finalitySet, { finality: log.finality, header: log.header, call: {} }, headerHash(lh));
        if (r.problem !== undefined) return { field: 'log.finality', expected: `${at} finalized by a quorum of the genesis validators`, got: r.problem };
      }
      return null;
    };
    const p = gameLogProblem(t, leaves, t.steps.map((s) => s.height), headerProblem);
    if (p !== null) return whole(p.field, p.expected, p.got);
    completeAsOf = t.log.header.header.height;
  }
  return finish(null);
}
