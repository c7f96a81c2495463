// chain.js: Chain, the client of one gamechain node's HTTP API (node/API.md): reads (status,
// accounts, transactions, blocks, module views, modules), signing and posting transactions with
// the sender's next nonce, waiting for receipts over the WebSocket feed (polling as a fallback),
// and block subscriptions. Every answer is bounded in time and bytes; every failure is a ChainError.

import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { ChainError } from './errors.js';
import { subscribeBlocks } from './feed.js';

const utf8 = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: false });

/** The txid of a body: lowercase hex SHA-256 of its UTF-8 bytes. */
export function txidOf(body) {
  return bytesToHex(sha256(utf8.encode(body)));
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
   * @param {typeof WebSocket|null} [options.WebSocket] default `globalThis.WebSocket` (absent in
   *   Node 20 without `--experimental-websocket`: then receipts and subscriptions poll); `null` forces polling
   * @param {number} [options.timeoutMs] per request, default 30000
   * @param {number} [options.maxAnswerBytes] largest answer read, default 32 MiB
   */
  constructor(url, options = {}) {
    if (typeof url !== 'string' || !/^https?:\/\//.test(url)) throw new Error('Chain(url): url must start with http:// or https://');
    this.url = url.replace(/\/+$/, '');
    this.fetch = options.fetch ?? ((...a) => globalThis.fetch(...a));
    this.WebSocket = options.WebSocket === undefined ? globalThis.WebSocket : options.WebSocket;
    this.timeoutMs = options.timeoutMs ?? 30000;
    this.maxAnswerBytes = options.maxAnswerBytes ?? 32 << 20;
    this._chainId = null;
  }

  /** One request; the JSON answer, or a ChainError. */
  async request(method, path, body) {
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
      const extra = Number.isFinite(retry) && retry > 0 ? { retryAfter: retry } : {};
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
   * largest module; else `too_large`).
   * @returns {Promise<Uint8Array>}
   */
  async code(hash, { maxBytes = 4 << 20 } = {}) {
    if (typeof hash !== 'string' || !/^[0-9a-fA-F]{64}$/.test(hash)) throw new Error('code(hash): hash must be 64 hex characters');
    const path = `/v1/code/${hash.toLowerCase()}`;
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
      let err;
      try { err = JSON.parse(decoder.decode(bytes)).error; } catch { err = undefined; }
      if (err && typeof err.code === 'string') throw new ChainError(err.code, String(err.message ?? ''), res.status);
      throw new ChainError('bad_answer', `GET ${path}: HTTP ${res.status}`, res.status);
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

  /** `GET /v1/tx/<txid>`: `{txid, status: 'pending'|'included', body, signature, height, index, receipt}`. */
  tx(txid) { return this.request('GET', `/v1/tx/${encodeURIComponent(txid)}`); }

  /** `GET /v1/blocks/<height|latest>`: `{height, hash, header, signature, txs, end_block}`. */
  block(which = 'latest') {
    if (which !== 'latest' && !Number.isSafeInteger(which)) throw new Error("block(h): h must be an integer or 'latest'");
    return this.request('GET', `/v1/blocks/${which}`);
  }

  /** `GET /v1/games/<module>?<query>`: the module's view; `query` is an object of strings/numbers. */
  game(module, query = {}) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) q.set(k, String(v));
    const qs = q.toString();
    return this.request('GET', `/v1/games/${encodeURIComponent(module)}${qs ? `?${qs}` : ''}`);
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

  /** `POST /v1/tx` of a signed `{body, signature}`; the node's txid. */
  async post(tx) {
    const answer = await this.request('POST', '/v1/tx', { body: tx.body, signature: tx.signature });
    return answer.txid;
  }

  /**
   * Signs `action` with `key` at the account's `next_nonce` and posts it; the txid. A
   * `bad_nonce` refusal is retried once with the nonce the node names. Throws ChainError.
   */
  async send(key, action) {
    const tx = await this.sign(key, action);
    try {
      return await this.post(tx);
    } catch (e) {
      const m = e instanceof ChainError && e.code === 'bad_nonce' ? /expected (\d+)/.exec(e.message) : null;
      if (!m) throw e;
      return this.post(await this.sign(key, action, { nonce: Number(m[1]) }));
    }
  }

  /**
   * Waits until `txid` is in a block: `{txid, height, index, ok, error, events, fuel_used}`.
   * Listens on `/v1/ws` (checking `GET /v1/tx` once connected and every 2 s) or, without a
   * WebSocket, polls `GET /v1/tx` every `pollMs`. After `timeoutMs` (default 60000) it throws
   * ChainError `receipt_timeout` carrying `txid`: the transaction may still be included later.
   */
  waitForReceipt(txid, { timeoutMs = 60000, pollMs = 500 } = {}) {
    return new Promise((resolve, reject) => {
      let done = false;
      let sub = null;
      let pollTimer = null;
      const finish = (err, value) => {
        if (done) return;
        done = true;
        clearTimeout(deadline);
        clearInterval(pollTimer);
        if (sub) sub.close();
        if (err) reject(err); else resolve(value);
      };
      const deadline = setTimeout(() => finish(new ChainError('receipt_timeout',
        `no receipt for ${txid} within ${timeoutMs} ms; the transaction may still be included later (call waitForReceipt again or chain.tx(txid))`,
        0, { txid })), timeoutMs);
      const check = async () => {
        try {
          const rec = await this.tx(txid);
          if (rec.status === 'included' && rec.receipt) finish(null, receiptOf(txid, rec.height, rec.index, rec.receipt));
        } catch (e) {
          // Not known yet (a follower), or the node is briefly unreachable: keep waiting.
          const transient = e instanceof ChainError && (e.code === 'not_found' || e.code === 'network' || e.code === 'request_timeout' || e.code === 'rate_limited' || e.status >= 500);
          if (!transient) finish(e);
        }
      };
      if (this.WebSocket) {
        sub = subscribeBlocks(this, (block) => {
          const i = (block.txs ?? []).findIndex((t) => t.txid === txid);
          if (i >= 0) finish(null, receiptOf(txid, block.height, i, block.txs[i].receipt));
        }, { onOpen: check });
        pollTimer = setInterval(check, Math.max(pollMs, 2000));
      } else {
        pollTimer = setInterval(check, pollMs);
        check();
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
}
