// chain.js: Chain, the client of one gamechain node's HTTP API (node/API.md): reads (status,
// accounts, transactions, blocks, module views, modules), signing and posting transactions with
// the sender's next nonce, waiting for receipts over the WebSocket feed (polling as a fallback),
// and block subscriptions. Every answer is bounded in time and bytes; every failure is a ChainError.
// A `429 rate_limited` answer is waited out and asked again (after the node's `retry-after`, with
// backoff and jitter, within a budget of retries and time per call): the node answers it before
// doing anything of the request, so asking again, a `POST /v1/tx` included, is safe.
// The WebSocket is the platform's (browsers, Node 22+) or, in Node.js 20 without one, the `ws`
// package, loaded only then and never by a static import, so the browser bundle has none of it.

import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { ChainError } from './errors.js';
import { Backoff } from './backoff.js';
import { subscribeBlocks } from './feed.js';
import { subscribeGame } from './game_feed.js';
import { Session } from '../keys/session.js';
import { Key } from '../keys/key.js';

const utf8 = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: false });

/** The txid of a body: lowercase hex SHA-256 of its UTF-8 bytes. */
export function txidOf(body) {
  return bytesToHex(sha256(utf8.encode(body)));
}

/** Retries of one call answered `429 rate_limited`, by default. */
/** The longest `retry-after` (seconds) honoured; a larger one counts as this. */
export const MAX_RETRY_AFTER_S = 3600;

export const RATE_LIMIT_RETRIES = 8;
/** Most time one call spends waiting out `429` answers, ms, by default. */
export const RATE_LIMIT_MAX_WAIT_MS = 60000;

/**
 * The `ws` package's WebSocket class, for a Node.js without a global one (Node 20): `{WebSocket}`
 * or `{reason}` saying why there is none. Loaded on first use with the `require` of
 * `process.getBuiltinModule('node:module')` (Node 20.16+), so no bundler sees an import of `ws`
 * and a browser never runs this (it has a global WebSocket).
 */
let wsPackage = null;
function loadWsPackage() {
  if (wsPackage) return wsPackage;
  const nodeModule = globalThis.process?.getBuiltinModule?.('node:module');
  if (!nodeModule || typeof nodeModule.createRequire !== 'function') {
    wsPackage = { reason: 'this platform has no WebSocket (globalThis.WebSocket) and is not Node.js 20.16+, where the SDK would load the ws package' };
    return wsPackage;
  }
  try {
    const WS = nodeModule.createRequire(import.meta.url)('ws');
    wsPackage = typeof WS === 'function' ? { WebSocket: WS } : { reason: 'the ws package has no WebSocket class' };
  } catch (e) {
    wsPackage = { reason: `this Node.js has no global WebSocket and the ws package could not be loaded (${e && e.message ? e.message : e}): npm install ws, or run Node 22+` };
  }
  return wsPackage;
}

/** Waits `ms`; rejects early (with the signal's reason) when `signal` aborts. */
function pause(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) { reject(signal.reason); return; }
    const done = () => { clearTimeout(timer); signal?.removeEventListener('abort', aborted); };
    const aborted = () => { done(); reject(signal.reason); };
    const timer = setTimeout(() => { done(); resolve(); }, ms);
    signal?.addEventListener('abort', aborted, { once: true });
  });
}

/** The receipt as `waitForReceipt` returns it, from a `GET /v1/tx` record or a block's tx. */
function receiptOf(txid, height, index, receipt) {
  return {
    txid,
    height,
    index,
    ok: receipt.ok,
    error: receipt.error ?? null,
    events: receipt.events ?? [],
    fuel_used: receipt.fuel_used,
  };
}

export class Chain {
  /**
   * @param {string} url the node's base URL, e.g. `http://127.0.0.1:8645` (a trailing `/` is dropped)
   * @param {object} [options]
   * @param {typeof fetch} [options.fetch] default `globalThis.fetch`
   * @param {boolean} [options.resignOnBadNonce] default false: `send` signs an action again
   *   after a `bad_nonce` refusal only when this is true (see `send`: trust the node first)
   * @param {typeof WebSocket|null} [options.WebSocket] default `globalThis.WebSocket`, else (Node
   *   20) the `ws` package's; `null` forces polling. Without any, receipts and subscriptions poll
   *   and `onFallback` is told
   * @param {number} [options.timeoutMs] per request, default 30000
   * @param {number} [options.maxAnswerBytes] largest answer read, default 32 MiB
   * @param {number} [options.rateLimitRetries] times one call answered `429` is asked again, default 8 (0: never)
   * @param {number} [options.rateLimitMaxWaitMs] most time one call waits out `429`s, default 60000
   * @param {(info: {method: string, path: string, retry: number, waitMs: number, retryAfter?: number}) => void} [options.onRateLimited]
   *   told before each wait
   * @param {(info: {what: string, reason: string}) => void} [options.onFallback] told whenever a
   *   subscription, receipt wait or move relay runs without a WebSocket although one was wanted;
   *   default: one `console.warn` per Chain
   */
  constructor(url, options = {}) {
    if (typeof url !== 'string' || !/^https?:\/\//.test(url)) throw new Error('Chain(url): url must start with http:// or https://');
    this.url = url.replace(/\/+$/, '');
    this.fetch = options.fetch ?? ((...a) => globalThis.fetch(...a));
    this.timeoutMs = options.timeoutMs ?? 30000;
    this.maxAnswerBytes = options.maxAnswerBytes ?? 32 << 20;
    this.rateLimitRetries = options.rateLimitRetries ?? RATE_LIMIT_RETRIES;
    this.rateLimitMaxWaitMs = options.rateLimitMaxWaitMs ?? RATE_LIMIT_MAX_WAIT_MS;
    this.onRateLimited = options.onRateLimited ?? null;
    this.onFallback = options.onFallback ?? null;
    this.resignOnBadNonce = options.resignOnBadNonce ?? false;
    this._webSocketOption = options.WebSocket;
    this._webSocket = undefined;
    this._warned = false;
    this._chainId = null;
  }

  /**
   * The WebSocket class used (resolved on first use): the `WebSocket` option, else the global
   * one, else the `ws` package's (Node 20); null when there is none or `WebSocket: null` was given.
   */
  get WebSocket() {
    if (this._webSocket === undefined) {
      const given = this._webSocketOption;
      if (given !== undefined) {
        this._webSocket = given || null;
        this._source = given ? 'option' : 'off';
      } else if (typeof globalThis.WebSocket === 'function') {
        this._webSocket = globalThis.WebSocket;
        this._source = 'global';
      } else {
        const pkg = loadWsPackage();
        if (pkg.WebSocket) {
          // Messages past the answer bound close the socket (1009) instead of being buffered.
          const maxPayload = this.maxAnswerBytes;
          this._webSocket = class extends pkg.WebSocket {
            constructor(url, protocols) { super(url, protocols, { maxPayload }); }
          };
          this._source = 'ws';
        } else {
          this._webSocket = null;
          this._source = 'none';
          this._missing = pkg.reason;
        }
      }
    }
    return this._webSocket;
  }

  /**
   * Where the WebSocket class comes from: `'option'`, `'global'`, `'ws'` (the package, in a
   * Node.js without a global one), `'off'` (`WebSocket: null`) or `'none'` (there is none: see
   * `webSocketMissing`; receipts and subscriptions poll).
   */
  get webSocketSource() {
    void this.WebSocket;
    return this._source;
  }

  /** Why there is no WebSocket (`webSocketSource` `'none'`), else undefined. */
  get webSocketMissing() {
    void this.WebSocket;
    return this._missing;
  }

  set WebSocket(value) {
    this._webSocketOption = value;
    this._webSocket = undefined;
  }

  /**
   * Says that `what` runs without a WebSocket although none was refused by the caller (no
   * `WebSocket: null`): `onFallback({what, reason})`, or one console warning per Chain.
   */
  fellBack(what) {
    if (this.WebSocket || this._source === 'off') return;
    const info = { what, reason: this._missing ?? 'no WebSocket' };
    if (this.onFallback) { this.onFallback(info); return; }
    if (this._warned) return;
    this._warned = true;
    globalThis.console?.warn?.(`@gamechain/sdk: ${what} polls over HTTP instead of the WebSocket: ${info.reason} (pass the Chain option WebSocket: null to poll on purpose, or onFallback to be told otherwise)`);
  }

  /**
   * One request; the JSON answer, or a ChainError. A `429` is asked again (see `rateLimited`);
   * `signal` stops the waits between.
   */
  request(method, path, body, { signal } = {}) {
    return this.rateLimited(method, path, () => this.requestOnce(method, path, body), signal);
  }

  /**
   * Runs `once` until it is not answered `429 rate_limited`: each wait is at least the node's
   * `retry-after` (its bucket has a token again then), grows exponentially (capped at 5 s before
   * `retry-after`) with jitter (so clients limited together do not come back together), at most
   * `rateLimitRetries` times and `rateLimitMaxWaitMs` in all; then a ChainError `rate_limited`
   * (status 429, `retries`, `waitedMs`, `retryAfter`) saying so. A 429 is the node's answer
   * before it does anything of the request (node/API.md): nothing was admitted, so this
   * holds for `POST /v1/tx` too; nothing else (no answer, a timeout, 5xx) is retried here.
   */
  async rateLimited(method, path, once, signal) {
    const backoff = new Backoff({ baseMs: 250, capMs: 5000 });
    let waited = 0;
    for (let retry = 0; ; retry++) {
      try {
        return await once();
      } catch (e) {
        if (!(e instanceof ChainError) || e.status !== 429) throw e;
        if (this.rateLimitRetries <= 0) throw e;
        let wait = backoff.next(e);
        wait += Math.floor(Math.random() * Math.min(1000, wait / 4));
        if (retry >= this.rateLimitRetries || waited + wait > this.rateLimitMaxWaitMs) {
          throw new ChainError('rate_limited',
            `${method} ${path}: still rate limited after ${retry} ${retry === 1 ? 'retry' : 'retries'} and ${(waited / 1000).toFixed(1)} s of waiting ` +
            `(the budget: rateLimitRetries ${this.rateLimitRetries}, rateLimitMaxWaitMs ${this.rateLimitMaxWaitMs}); the node says: ${e.message}`,
            429, { retryAfter: e.retryAfter, retries: retry, waitedMs: waited });
        }
        this.onRateLimited?.({ method, path, retry: retry + 1, waitMs: wait, retryAfter: e.retryAfter });
        await pause(wait, signal);
        waited += wait;
      }
    }
  }

  /** One request, asked once; the JSON answer, or a ChainError. */
  async requestOnce(method, path, body) {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.timeoutMs);
    let res;
    let text;
    try {
      res = await this.fetch(this.url + path, {
        method,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: controller.signal,
      });
      text = await this.readBounded(res);
    } catch (e) {
      if (e instanceof ChainError) throw e;
      if (controller.signal.aborted) throw new ChainError('request_timeout', `${method} ${path}: no answer within ${this.timeoutMs} ms`);
      throw new ChainError('network', `${method} ${path}: ${e && e.message ? e.message : e}`);
    } finally {
      clearTimeout(timer);
    }
    let json;
    try { json = JSON.parse(text); } catch { json = undefined; }
    if (!res.ok) {
      const retry = Number(res.headers.get('retry-after'));
      const extra = Number.isFinite(retry) && retry > 0 ? { retryAfter: Math.min(retry, MAX_RETRY_AFTER_S) } : {};
      const err = json && json.error;
      if (err && typeof err.code === 'string') throw new ChainError(err.code, String(err.message ?? ''), res.status, extra);
      throw new ChainError('bad_answer', `${method} ${path}: HTTP ${res.status}: ${text.slice(0, 200)}`, res.status, extra);
    }
    if (json === undefined) throw new ChainError('bad_answer', `${method} ${path}: the answer is not JSON`, res.status);
    return json;
  }

  /**
   * `GET /v1/code/<hash>`: the wasm bytes stored under `hash` (64 hex), checked: their SHA-256
   * must be `hash` (else ChainError `bad_answer`), at most `maxBytes` (default 4 MiB, the chain's
   * largest module; else `too_large`). A `429` is asked again as by `request`.
   * @returns {Promise<Uint8Array>}
   */
  async code(hash, { maxBytes = 4 << 20 } = {}) {
    if (typeof hash !== 'string' || !/^[0-9a-fA-F]{64}$/.test(hash)) throw new Error('code(hash): hash must be 64 hex characters');
    const path = `/v1/code/${hash.toLowerCase()}`;
    return this.rateLimited('GET', path, () => this.codeOnce(hash, path, maxBytes));
  }

  async codeOnce(hash, path, maxBytes) {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.timeoutMs);
    let res;
    let bytes;
    try {
      res = await this.fetch(this.url + path, { method: 'GET', signal: controller.signal });
      bytes = await this.readBounded(res, Math.min(maxBytes, this.maxAnswerBytes), true);
    } catch (e) {
      if (e instanceof ChainError) throw e;
      if (controller.signal.aborted) throw new ChainError('request_timeout', `GET ${path}: no answer within ${this.timeoutMs} ms`);
      throw new ChainError('network', `GET ${path}: ${e && e.message ? e.message : e}`);
    } finally {
      clearTimeout(timer);
    }
    if (!res.ok) {
      const retry = Number(res.headers.get('retry-after'));
      const extra = Number.isFinite(retry) && retry > 0 ? { retryAfter: Math.min(retry, MAX_RETRY_AFTER_S) } : {};
      let err;
      try { err = JSON.parse(decoder.decode(bytes)).error; } catch { err = undefined; }
      if (err && typeof err.code === 'string') throw new ChainError(err.code, String(err.message ?? ''), res.status, extra);
      throw new ChainError('bad_answer', `GET ${path}: HTTP ${res.status}`, res.status, extra);
    }
    if (bytesToHex(sha256(bytes)) !== hash.toLowerCase()) {
      throw new ChainError('bad_answer', `GET ${path}: the bytes do not hash to ${hash}`, res.status);
    }
    return bytes;
  }

  /** The answer's text (or bytes when `raw`), refusing more than `limit` (default `maxAnswerBytes`). */
  async readBounded(res, limit = this.maxAnswerBytes, raw = false) {
    const declared = Number(res.headers.get('content-length'));
    if (declared > limit) throw new ChainError('too_large', `an answer of ${declared} bytes, over the SDK's limit of ${limit}`, res.status);
    if (!res.body || !res.body.getReader) {
      const buf = new Uint8Array(await res.arrayBuffer());
      if (buf.length > limit) throw new ChainError('too_large', `an answer over the SDK's limit of ${limit} bytes`, res.status);
      return raw ? buf : decoder.decode(buf);
    }
    const reader = res.body.getReader();
    const chunks = [];
    let size = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.length;
      if (size > limit) {
        reader.cancel().catch(() => {});
        throw new ChainError('too_large', `an answer over the SDK's limit of ${limit} bytes`, res.status);
      }
      chunks.push(value);
    }
    const all = new Uint8Array(size);
    let at = 0;
    for (const c of chunks) { all.set(c, at); at += c.length; }
    return raw ? all : decoder.decode(all);
  }

  /** `GET /v1/status`: `{chain_id, network, height, head_hash, state_root, sequencer, genesis_hash, engine_config_hash, pending, version}`. */
  status() { return this.request('GET', '/v1/status'); }

  /** `GET /v1/genesis`. */
  genesis() { return this.request('GET', '/v1/genesis'); }

  /** `GET /v1/account/<account>`: `{account, balances: {GOLD: "<base units>"}, nonce, next_nonce}`; `module:<id>` is a module's escrow. */
  account(account) { return this.request('GET', `/v1/account/${encodeURIComponent(account)}`); }

  /**
   * `GET /v1/state/<key>[?proof]`: the key's value at the node's head block with that block's
   * header, unchecked (check it with `verifyStateEntry`, or ask `getStateProven`).
   */
  state(key, { proof = false } = {}) {
    return this.request('GET', `/v1/state/${encodeURIComponent(key)}${proof ? '?proof' : ''}`);
  }

  /** `GET /v1/tx/<txid>`: `{txid, status: 'pending'|'included', body, signature, height, index, receipt}`. */
  tx(txid, options) { return this.request('GET', `/v1/tx/${encodeURIComponent(txid)}`, undefined, options); }

  /** `GET /v1/blocks/<height|latest>`: `{height, hash, header, signature, txs, end_block}`. */
  block(which = 'latest', options) {
    if (which !== 'latest' && !Number.isSafeInteger(which)) throw new Error("block(h): h must be an integer or 'latest'");
    return this.request('GET', `/v1/blocks/${which}`, undefined, options);
  }

  /** `GET /v1/games/<module>?<query>`: the module's view; `query` is an object of strings/numbers. */
  game(module, query = {}) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) q.set(k, String(v));
    const qs = q.toString();
    return this.request('GET', `/v1/games/${encodeURIComponent(module)}${qs ? `?${qs}` : ''}`);
  }

  /**
   * `GET /v1/games/<module>/proof?<query>`: the module's view at the node's head block with every
   * state entry it read, each with its proof (node/API.md, "Views with proofs"), unchecked (check
   * it with `verifyView`, or ask `getViewProven`). A view that scans or calls another module is
   * ChainError `no_proofs` (409).
   */
  viewProof(module, query = {}) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) q.set(k, String(v));
    const qs = q.toString();
    return this.request('GET', `/v1/games/${encodeURIComponent(module)}/proof${qs ? `?${qs}` : ''}`);
  }

  /**
   * `GET /v1/games/<module>/<id>/transcript`: the game's transactions, receipts, signed headers
   * and inclusion proofs (node/API.md, "Transcripts"); check it with `verifyTranscript`.
   */
  transcript(module, id) {
    return this.request('GET', `/v1/games/${encodeURIComponent(module)}/${encodeURIComponent(id)}/transcript`);
  }

  /** `GET /v1/modules`: `{modules: [{id, abi_version, code_hash, deployed_height, owner, upgraded_height?}]}`. */
  modules() { return this.request('GET', '/v1/modules'); }

  /** `GET /v1/modules/<id>`: one record. */
  module(id) { return this.request('GET', `/v1/modules/${encodeURIComponent(id)}`); }

  /** The chain id (from `/v1/status`, asked once). */
  async chainId() {
    if (this._chainId === null) this._chainId = (await this.status()).chain_id;
    return this._chainId;
  }

  /**
   * Signs `action` as the body `{chain_id, from, nonce, action}` (that key order, compact JSON).
   * Makes no request when `chainId` and `nonce` are given.
   * @returns {Promise<{body: string, signature: string, txid: string}>}
   */
  async sign(key, action, { chainId, nonce } = {}) {
    const chain_id = chainId ?? (await this.chainId());
    const n = nonce ?? (await this.account(key.address)).next_nonce;
    const body = JSON.stringify({ chain_id, from: key.address, nonce: n, action });
    return { body, signature: key.signMessage(body), txid: txidOf(body) };
  }

  /**
   * `POST /v1/tx` of a signed `{body, signature}`; the node's txid. Asked again only after a `429`
   * (nothing was admitted); a transaction's txid is its body's hash, so the node could never
   * admit one twice anyway (`409 duplicate`).
   */
  async post(tx) {
    let retried = false;
    const path = '/v1/tx';
    const answer = await this.rateLimited('POST', path, () => {
      const first = !retried;
      retried = true;
      return this.requestOnce('POST', path, { body: tx.body, signature: tx.signature }).catch((e) => {
        // A 429'd post was not admitted; a duplicate after one is this very transaction,
        // admitted meanwhile (by another path): the same txid, not a failure.
        if (!first && e instanceof ChainError && e.code === 'duplicate') return { txid: txidOf(tx.body) };
        throw e;
      });
    });
    return answer.txid;
  }

  /**
   * Signs `action` with `key` at the account's `next_nonce` and posts it; the txid. `429`s are
   * waited out (every request, see `request`). A `bad_nonce` refusal is thrown (ChainError
   * `bad_nonce` with `expected`, the nonce the node names) unless `options.resignOnBadNonce` (or
   * the Chain's option of that name) is true: then the same action is signed once more at the
   * nonce the node names and posted. That is safe only with a node you trust: a node that kept
   * the first signed transaction and lied about the nonce could submit both (the action would
   * run twice), so it is off by default. Throws ChainError.
   * @param {{resignOnBadNonce?: boolean}} [options]
   */
  async send(key, action, options = {}) {
    const tx = await this.sign(key, action);
    try {
      return await this.post(tx);
    } catch (e) {
      const m = e instanceof ChainError && e.code === 'bad_nonce' ? /expected (\d+)/.exec(e.message) : null;
      if (!m) throw e;
      e.expected = Number(m[1]);
      if (!(options.resignOnBadNonce ?? this.resignOnBadNonce)) throw e;
      return this.post(await this.sign(key, action, { nonce: e.expected }));
    }
  }

  /** `GET /v1/account/<address>/sessions`: `{account, sessions: [{key, id, modules, expires_at_ms, cap, spent, active}]}`. */
  sessions(account) { return this.request('GET', `/v1/account/${encodeURIComponent(account)}/sessions`); }

  /**
   * Authorizes a session key for `mainKey`'s account with one transaction signed by the main key
   * (docs/session-keys.md), waits for its receipt and returns the Session, whose `send` signs
   * with the session key and acts for the account. `modules`: the scope (module ids; sorted and
   * deduplicated here, as the chain requires). Expiry in block time: `expiresAtMs`, or
   * `expiresInMs` after the head block's time (default one hour; at most 30 days). `cap`: most
   * GOLD base units (a decimal string or bigint/number) the session may move out of the account,
   * stakes and fees. `key`: the session key (default a new one, on the main key's network).
   * Throws ChainError (a failed receipt: `session_failed` with the receipt's error).
   * @returns {Promise<Session>}
   */
  async authorizeSession(mainKey, { modules, expiresAtMs, expiresInMs = 3600000, cap, key, timeoutMs } = {}) {
    if (!Array.isArray(modules) || modules.length === 0) throw new TypeError('authorizeSession: modules must be a non-empty array of module ids');
    if (cap === undefined || cap === null) throw new TypeError('authorizeSession: cap (GOLD base units) is required');
    const scope = [...new Set(modules)].sort();
    const sessionKey = key ?? Key.generate(mainKey.network);
    const expires = expiresAtMs ?? (await this.block('latest')).header.time_ms + expiresInMs;
    const action = { type: 'authorize_session', key: sessionKey.address, modules: scope, expires_at_ms: expires, cap: String(cap) };
    const tx = await this.sign(mainKey, action);
    const id = JSON.parse(tx.body).nonce;
    const receipt = await this.waitForReceipt(await this.post(tx), { timeoutMs });
    if (!receipt.ok) throw new ChainError('session_failed', `authorize_session failed: ${receipt.error}`, 0, { txid: receipt.txid });
    return new Session(this, sessionKey, mainKey.address, id);
  }

  /** A kept session (`Session#toJSON`'s `{account, key: <WIF>, session}`) bound to this Chain. */
  session({ account, key, session }) {
    return new Session(this, Key.fromWif(key), account, session);
  }

  /**
   * Revokes `mainKey`'s session of `session` (a Session or a session key address) at once, with
   * one transaction signed by the main key; the txid (wait for it with `waitForReceipt`).
   */
  async revokeSession(mainKey, session) {
    const key = typeof session === 'string' ? session : session.address;
    return this.send(mainKey, { type: 'revoke_session', key });
  }

  /**
   * Waits until `txid` is in a block: `{txid, height, index, ok, error, events, fuel_used}`.
   * Listens on `/v1/ws` (checking `GET /v1/tx` once connected and every 2 s) or, without a
   * WebSocket, polls `GET /v1/tx` every `pollMs`; checks never overlap, and a `429` waits out
   * the node's `retry-after` before the next. After `timeoutMs` (default 60000) it throws
   * ChainError `receipt_timeout` carrying `txid`: the transaction may still be included later.
   */
  waitForReceipt(txid, { timeoutMs = 60000, pollMs = 500 } = {}) {
    return new Promise((resolve, reject) => {
      let done = false;
      let sub = null;
      let pollTimer = null;
      let checking = false;
      const stop = new AbortController();
      const finish = (err, value) => {
        if (done) return;
        done = true;
        clearTimeout(deadline);
        clearTimeout(pollTimer);
        stop.abort();
        if (sub) sub.close();
        if (err) reject(err); else resolve(value);
      };
      const deadline = setTimeout(() => finish(new ChainError('receipt_timeout',
        `no receipt for ${txid} within ${timeoutMs} ms; the transaction may still be included later (call waitForReceipt again or chain.tx(txid))`,
        0, { txid })), timeoutMs);
      const check = async () => {
        if (checking || done) return;
        checking = true;
        try {
          const rec = await this.tx(txid, { signal: stop.signal });
          if (rec.status === 'included' && rec.receipt) finish(null, receiptOf(txid, rec.height, rec.index, rec.receipt));
        } catch (e) {
          // Not known yet (a follower), or the node is briefly unreachable or limiting us: keep waiting.
          const transient = e instanceof ChainError && (e.code === 'not_found' || e.code === 'network' || e.code === 'request_timeout' || e.code === 'rate_limited' || e.status >= 500);
          if (!transient) finish(e);
        } finally {
          checking = false;
        }
      };
      const every = this.WebSocket ? Math.max(pollMs, 2000) : pollMs;
      const loop = async () => {
        await check();
        if (!done) pollTimer = setTimeout(loop, every);
      };
      if (this.WebSocket) {
        sub = subscribeBlocks(this, (block) => {
          const i = (block.txs ?? []).findIndex((t) => t.txid === txid);
          if (i >= 0) finish(null, receiptOf(txid, block.height, i, block.txs[i].receipt));
        }, { onOpen: check });
        pollTimer = setTimeout(loop, every);
      } else {
        this.fellBack('waitForReceipt');
        loop();
      }
    });
  }

  /**
   * Calls `onBlock(block)` for every new block, in height order, each once, across reconnects
   * (missing heights are fetched). From `fromHeight` when given, else from the next block.
   * @returns {{mode: 'websocket'|'polling', lastHeight: number|null, close(): void}}
   */
  subscribe(onBlock, options = {}) {
    return subscribeBlocks(this, onBlock, options);
  }

  /**
   * A live query of one module's events (`GET /v1/ws/events`): `onEvents({height, time_ms,
   * events})` once per block with matching events, in height order, each block once across
   * reconnects; `onHead({height, time_ms})` after every block (every matching event up to it was
   * delivered). `game`: only events whose data `id` or `game` is it; `player`: only events the
   * address sent or is named in. From `fromHeight` (at most 100,000 blocks back) when given, else
   * from the next block. Without a WebSocket, the block feed filtered here by the same rule.
   * @returns {{mode: 'websocket'|'polling', nextHeight: number|null, close(): void}}
   */
  subscribeGame(module, onEvents, options = {}) {
    return subscribeGame(this, module, onEvents, options);
  }
}
