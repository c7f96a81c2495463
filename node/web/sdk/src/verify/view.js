// Views read from a node and checked from the genesis alone: `GET /v1/games/<module>/proof?<query>`
// (node/API.md, "Views with proofs"), a module's view answered with every state entry it read,
// each proven against one block's state root. This file owns the whole check of such an answer
// (`verifyView`: its data as runtime/chain/src/wire/view.rs `ViewProof::check` checks it, the
// header's signer and, on a chain with validators, its finality, then the view re-executed on the
// module's wasm over the proven reads alone, verify_host.js's view step in strict mode) and the
// light client's read (`getViewProven`: the answer, the wasm by its code hash, the check).
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { base64 } from '@scure/base';
import { verifyMessage } from '../keys/message.js';
import { capMemory, MAX_RULES_MEMORY_BYTES } from '../channel/rules.js';
import { headerHash, inWorker, VERIFY_TIMEOUT_MS } from './verify.js';
import { replayGame } from './verify_host.js';
import { stateProofProblem } from './state_proof.js';
import { checkFinal, finalitySet } from './state_entry.js';

/** Most reads an answer may carry, the module's record included (wire/view.rs MAX_VIEW_PROOF_READS). */
export const MAX_VIEW_PROOF_READS = 256;
/** Most bytes of keys and values an answer's reads may hold (wire/view.rs MAX_VIEW_PROOF_BYTES). */
export const MAX_VIEW_PROOF_BYTES = 4 << 20;

const utf8 = new TextEncoder();
const text = new TextDecoder('utf-8', { fatal: true });

/** Byte order of two strings' UTF-8 (Rust's `str` order): negative, 0 or positive. */
function byteOrder(a, b) {
  const x = utf8.encode(a);
  const y = utf8.encode(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
}

/** A query as the node holds it: each value a string (numbers as `String` makes them). */
function queryStrings(query) {
  if (query === null || typeof query !== 'object' || Array.isArray(query)) throw new Error('verifyView: opts.query (the view\'s query, an object) is required');
  return Object.fromEntries(Object.entries(query).map(([k, v]) => [k, String(v)]));
}

/**
 * The query's bytes as the node passes them to `gc_view`: serde_json of a BTreeMap<String,
 * String>, compact with keys in byte order (JSON.stringify escapes strings as serde_json does).
 */
export function viewQueryJson(query) {
  const q = queryStrings(query);
  const keys = Object.keys(q).sort(byteOrder);
  return `{${keys.map((k) => `${JSON.stringify(k)}:${JSON.stringify(q[k])}`).join(',')}}`;
}

/** Whether two parsed JSON values are equal (object members in any order). */
function jsonEqual(a, b) {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === b.length && a.every((x, i) => jsonEqual(x, b[i]));
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && jsonEqual(a[k], b[k]));
}

/**
 * Checks a `GET /v1/games/<module>/proof?<query>` answer from the genesis alone and re-executes
 * the view over what it proves.
 *
 * The answer (runtime/chain/src/wire/view.rs): `{module, query: {<string>: <string>}, header,
 * signature, commitment: 'sparse_merkle', value | error, code_hash, reads: [{key, value:
 * <base64> | null, proof}]}`. Checked: it is `module`'s view of `query` (the same keys and
 * values, numbers compared as their text), it carries exactly one of a value and an error, its
 * reads are at most 256, sorted by key (UTF-8 byte order) without repeats, each proven against
 * `header.state_root` (state_proof.js); the module's record `module/<module>` is among them and
 * names `code_hash`, which is the SHA-256 of `wasm`; the header is signed by one of `signers`
 * (the genesis sequencer's address; on a chain with validators, their addresses, the default when
 * `finality` is given); with `finality` the block is proven final by a quorum of the genesis
 * validators (`checkStepFinality`, finality.js). Then `gc_view` runs on `wasm` with the proven
 * reads as the whole state (a read of another key, or a scan, is refused: the answer does not
 * prove what the view saw), and its value (deep-equal as JSON) or its error's display text
 * (exactly) must be the answer's.
 *
 * @param {object} answer the node's answer
 * @param {{module: string, query: Record<string, string|number>, wasm: Uint8Array,
 *   signers?: string[], finality?: {validators: {set: {address: string, consensus_key: string}[]},
 *   chainId: string, genesisHash: string, record?: object}, timeoutMs?: number,
 *   worker?: 'auto'|'never'}} opts `finality.record`: the block's finality record when not the
 *   answer's own `finality` (`{parent_digest, tx_count, signatures_hash, links?, certificate}`);
 *   `timeoutMs`: the re-execution's bound in
 *   a Worker (default 30 s); `worker: 'never'` runs it in this thread
 * @returns {Promise<{value: any, error: string|null, height: number, blockHash: string,
 *   reads: number, final?: true}>} `value`: the view's JSON value (null when it answered an
 *   error); `final` only with `finality`
 * @throws {Error} naming the first thing that does not check
 */
export async function verifyView(answer, opts = {}) {
  const { module, wasm, finality } = opts;
  if (typeof module !== 'string' || module === '') throw new Error('verifyView: opts.module is required');
  const query = queryStrings(opts.query);
  if (!(wasm instanceof Uint8Array)) throw new Error('verifyView: opts.wasm (the module\'s code, bytes) is required');
  let set = null;
  if (finality !== undefined && finality !== null) set = finalitySet(finality);
  const signers = opts.signers ?? (set !== null ? finality.validators.set.map((v) => v.address) : undefined);
  if (!Array.isArray(signers) || signers.length === 0) throw new Error('verifyView: opts.signers (the genesis block signers) is required');

  // The answer's data (wire/view.rs `ViewProof::check`, in its order).
  if (answer === null || typeof answer !== 'object') throw new Error('the answer is not a view proof');
  if (answer.module !== module) throw new Error(`the answer is module \`${answer.module}\`'s view, not \`${module}\`'s`);
  const q = answer.query;
  if (q === null || typeof q !== 'object' || Array.isArray(q)) throw new Error('the answer is for another query');
  const keys = Object.keys(query);
  if (Object.keys(q).length !== keys.length || !keys.every((k) => Object.prototype.hasOwnProperty.call(q, k) && q[k] === query[k])) throw new Error('the answer is for another query');
  const hasValue = answer.value !== undefined;
  const hasError = answer.error !== undefined && answer.error !== null;
  if (hasValue === hasError) throw new Error('the answer must carry exactly one of a value and an error');
  if (hasError && typeof answer.error !== 'string') throw new Error('the answer\'s error is not a text');
  if (answer.commitment !== 'sparse_merkle') throw new Error(`the chain's state commitment (${answer.commitment}) has no proofs`);
  if (!Array.isArray(answer.reads)) throw new Error('the answer carries no reads');
  if (answer.reads.length > MAX_VIEW_PROOF_READS) throw new Error(`the answer carries ${answer.reads.length} reads: at most ${MAX_VIEW_PROOF_READS}`);
  const h = answer.header;
  if (h === null || typeof h !== 'object') throw new Error('the answer carries no header');
  const state = [];
  let previous = null;
  let bytes = 0;
  for (const read of answer.reads) {
    if (read === null || typeof read !== 'object' || typeof read.key !== 'string') throw new Error('a read without a key');
    if (previous !== null && byteOrder(previous, read.key) >= 0) throw new Error(`the reads are not sorted by key without repeats (at \`${read.key}\`)`);
    previous = read.key;
    let value = null;
    if (read.value !== null) {
      if (typeof read.value !== 'string') throw new Error(`\`${read.key}\`: the value is not standard base64`);
      try { value = base64.decode(read.value); } catch { throw new Error(`\`${read.key}\`: the value is not standard base64`); }
    }
    bytes += utf8.encode(read.key).length + (value === null ? 0 : value.length);
    if (bytes > MAX_VIEW_PROOF_BYTES) throw new Error(`the reads hold over ${MAX_VIEW_PROOF_BYTES} bytes of keys and values`);
    if (read.proof == null) throw new Error(`\`${read.key}\`: no proof`);
    const problem = stateProofProblem(h.state_root, read.key, value, read.proof);
    if (problem !== null) throw new Error(`\`${read.key}\`: ${problem}`);
    state.push([read.key, value]);
  }
  const recordKey = `module/${module}`;
  const record = state.find(([k]) => k === recordKey);
  if (record === undefined) throw new Error(`the answer does not prove the module's record (${recordKey})`);
  if (record[1] === null) throw new Error(`the module's record (${recordKey}) is proven absent`);
  let named;
  try { named = JSON.parse(text.decode(record[1])).code_hash; } catch { named = undefined; }
  if (typeof named !== 'string') throw new Error(`${recordKey} does not hold a module record`);
  if (named !== answer.code_hash) throw new Error(`the module's record names code ${named}, the answer ${answer.code_hash}`);
  const wasmHash = bytesToHex(sha256(wasm));
  if (wasmHash !== named) throw new Error(`the wasm given hashes to ${wasmHash}, the module's record names code ${named}`);

  // The header: its signer from the genesis, and its finality on a chain with validators.
  let blockHash;
  try { blockHash = headerHash(h); } catch (e) { throw new Error(`the header does not encode: ${e.message}`); }
  if (!signers.includes(h.sequencer)) throw new Error(`block ${h.height} is signed by ${h.sequencer}, not by ${signers.join(' or ')}`);
  if (typeof answer.signature !== 'string' || !verifyMessage(h.sequencer, blockHash, answer.signature)) throw new Error(`block ${h.height}: the signature does not verify`);
  if (set !== null) {
    checkFinal(set, h, answer.signature, blockHash, finality.record ?? answer.finality);
  }

  // The view, re-executed over the proven reads alone.
  let compiled;
  try {
    compiled = await WebAssembly.compile(capMemory(wasm, MAX_RULES_MEMORY_BYTES >> 16));
  } catch (e) {
    throw new Error(`the module's code does not load: ${(e && e.message) || e}`);
  }
  const input = {
    moduleId: module,
    state,
    strict: true,
    steps: [{ type: 'view', query: viewQueryJson(query), height: 0, timeMs: 0, sequencer: '', checkpoint: { hash: '', height: 0 } }],
  };
  let r = opts.worker === 'never' ? null : await inWorker(compiled, input, opts.timeoutMs ?? VERIFY_TIMEOUT_MS);
  if (r === null) {
    try { r = { results: await replayGame(compiled, input) }; } catch (e) { r = { error: String((e && e.message) || e) }; }
  }
  if (r.error !== undefined) throw new Error(r.error);
  const got = r.results[0];
  if (got.ok) {
    const value = JSON.parse(got.value);
    if (!hasValue) throw new Error(`the view answers a value, the answer an error (${answer.error})`);
    if (!jsonEqual(value, answer.value)) throw new Error('the view answers another value than the answer\'s');
  } else {
    if (!hasError) throw new Error(`the view answers an error (${got.error}), the answer a value`);
    if (got.error !== answer.error) throw new Error(`the view answers the error \`${got.error}\`, the answer \`${answer.error}\``);
  }
  // The value as the re-execution gave it (the node's spelling of the same value is not used).
  const out = { value: got.ok ? JSON.parse(got.value) : null, error: hasError ? answer.error : null, height: h.height, blockHash, reads: state.length };
  if (set !== null) out.final = true;
  return out;
}

// The wasm of each code hash a Chain was asked for: a module's code never changes under its hash.
const codes = new WeakMap();

/**
 * Reads `module`'s view of `query` from `chain` (a Chain) with its proofs and checks it with
 * `verifyView`: what a light client trusts is the genesis (its block signers, and on a chain with
 * validators the set), not the node. `wasm`: the module's code; default fetched by the answer's
 * code hash (`chain.code`, checked to hash to it; kept per Chain and hash). `finality`:
 * `{validators, chainId, genesisHash}` of the genesis: the answer's block must be final. Errors: the node's (ChainError, e.g. `no_proofs`
 * 409 for a scanning view), or verifyView's.
 */
export async function getViewProven(chain, module, query, { signers, wasm, finality, timeoutMs, worker } = {}) {
  const answer = await chain.viewProof(module, query);
  let code = wasm;
  if (code === undefined || code === null) {
    if (typeof answer?.code_hash !== 'string' || !/^[0-9a-f]{64}$/.test(answer.code_hash)) throw new Error('the answer names no code hash');
    let byHash = codes.get(chain);
    if (!byHash) { byHash = new Map(); codes.set(chain, byHash); }
    if (!byHash.has(answer.code_hash)) {
      const fetching = chain.code(answer.code_hash);
      byHash.set(answer.code_hash, fetching);
      fetching.catch(() => byHash.delete(answer.code_hash));
    }
    code = await byHash.get(answer.code_hash);
  }
  return verifyView(answer, { module, query, wasm: code, signers, finality, timeoutMs, worker });
}
