// feed.js: the block subscription behind Chain.subscribe: the node's /v1/ws feed when the
// chain has a WebSocket (the platform's, or the `ws` package in Node 20: Chain.WebSocket),
// polling GET /v1/blocks/latest otherwise (the chain's `onFallback` is told, unless polling was
// asked for). Reconnects (socket.js) and resumes from the last height delivered: missing
// heights are fetched with GET /v1/blocks/<h> (the gap only), repeated ones dropped, so the
// callback sees every block once, in height order.
// A fetch that fails in a way that may go away (429, honouring its retry-after; 5xx; no answer)
// is tried again with backoff (backoff.js) until it succeeds: the feed never gives up.

import { ChainError } from './errors.js';
import { Backoff, transient } from './backoff.js';
import { reconnectingSocket } from './socket.js';

/** The longest wait between two tries of a failed fetch, ms. */
const BACKOFF_MAX_MS = 5000;

/**
 * @param {import('./chain.js').Chain} chain
 * @param {(block: object) => (void|Promise<void>)} onBlock
 * @param {{fromHeight?: number, pollMs?: number, onError?: (e: Error) => void, onOpen?: () => void}} opts
 */
export function subscribeBlocks(chain, onBlock, opts = {}) {
  const pollMs = opts.pollMs ?? 1000;
  const onError = opts.onError ?? (() => {});
  let last = opts.fromHeight != null ? opts.fromHeight - 1 : null;
  let closed = false;
  let socket = null;
  let timer = null;
  const WS = chain.WebSocket;
  const mode = WS ? 'websocket' : 'polling';

  // What is still to deliver: `target` is the newest block the node announced (delivered with
  // every height before it), or LATEST (ask the node for its head). One pump delivers it, and
  // waits with backoff after a fetch that failed; a block announced meanwhile only moves `target`.
  const LATEST = Symbol('latest');
  let target = null;
  let pumping = false;
  let retryTimer = null;
  const fetchBackoff = new Backoff({ capMs: BACKOFF_MAX_MS });
  // Stops a fetch waiting out a 429 once closed.
  const stop = new AbortController();

  // Blocks the feed announced and not delivered yet, by height (bounded): the pump takes them
  // from here and fetches only heights the feed never sent.
  const announced = new Map();
  const MAX_ANNOUNCED = 512;

  function want(t) {
    if (t !== LATEST && (last === null || t.height > last)) {
      announced.set(t.height, t);
      if (announced.size > MAX_ANNOUNCED) announced.delete(announced.keys().next().value);
    }
    if (t === LATEST) { if (target === null) target = LATEST; } else if (target === null || target === LATEST || t.height > target.height) target = t;
    pump();
  }

  async function deliver(block) {
    last = block.height;
    for (const h of announced.keys()) if (h <= last) announced.delete(h);
    try {
      await onBlock(block);
    } catch (e) {
      // The callback's own failure: told, and the block counts as delivered.
      if (!closed) onError(e);
    }
  }

  /** Fetches a block; a failure is tagged `fetch` so the pump knows to wait and try again. */
  async function fetchBlock(which) {
    if (announced.has(which)) return announced.get(which);
    let b;
    try {
      b = await chain.block(which, { signal: stop.signal });
    } catch (e) {
      throw Object.assign(e instanceof Error ? e : new Error(String(e)), { fetch: true });
    }
    // A block asked for by height must be that height: "every height once, in order" holds
    // only if the node cannot answer another one (it is asked again after a backoff).
    if (typeof which === 'number' && b?.height !== which) {
      throw Object.assign(new ChainError('bad_answer', `asked for block ${which}, the node answered block ${b?.height}`), { fetch: true });
    }
    if (which === 'latest' && !Number.isSafeInteger(b?.height)) {
      throw Object.assign(new ChainError('bad_answer', 'the latest block has no height'), { fetch: true });
    }
    return b;
  }

  /** Delivers every height after `last` up to `block` (fetching the ones in between), then `block`. */
  async function deliverUpTo(block) {
    if (last === null) last = block.height - 1;
    if (block.height <= last) return;
    for (let h = last + 1; h < block.height; h++) {
      const b = await fetchBlock(h);
      if (closed) return;
      await deliver(b);
    }
    if (!closed) await deliver(block);
  }

  async function pump() {
    if (pumping || closed || retryTimer) return;
    pumping = true;
    try {
      while (!closed && target !== null) {
        const t = target;
        try {
          if (t === LATEST) {
            const latest = await fetchBlock('latest');
            if (closed) return;
            if (target === LATEST) target = null;
            if (last === null) last = latest.height;
            else await deliverUpTo(latest);
          } else {
            await deliverUpTo(t);
            if (target === t) target = null;
          }
          fetchBackoff.reset();
        } catch (e) {
          if (closed) return;
          onError(e);
          if (!e.fetch || !transient(e)) {
            if (target === t) target = null;
            continue;
          }
          // Wait, then try again from where it stopped (`last`).
          retryTimer = setTimeout(() => { retryTimer = null; pump(); }, fetchBackoff.next(e));
          return;
        }
      }
    } finally {
      pumping = false;
    }
  }

  function catchUp() {
    want(LATEST);
  }

  function connect() {
    socket = reconnectingSocket(chain, {
      url: () => chain.url.replace(/^http/, 'ws') + '/v1/ws',
      onOpen: () => {
        if (last !== null) catchUp();
        if (opts.onOpen) opts.onOpen();
      },
      onMessage: (msg) => {
        if (msg && msg.type === 'block' && msg.block && Number.isSafeInteger(msg.block.height)) {
          want(msg.block);
        }
      },
      onClose: (ev) => { onError(new ChainError('network', `the block feed closed (code ${ev.code}); reconnecting`)); },
      onError,
    });
  }

  function poll() {
    if (closed) return;
    catchUp();
    timer = setTimeout(poll, pollMs);
  }

  if (WS) {
    if (last !== null) catchUp();
    connect();
  } else {
    chain.fellBack?.('subscribe');
    poll();
    if (opts.onOpen) queueMicrotask(opts.onOpen);
  }

  return {
    /** `'websocket'` or `'polling'`. */
    mode,
    /** The height of the last block delivered (or the one before `fromHeight`), or null. */
    get lastHeight() { return last; },
    /** Stops: no callback runs after this returns (one already running finishes). */
    close() {
      closed = true;
      stop.abort();
      clearTimeout(timer);
      clearTimeout(retryTimer);
      socket?.close();
    },
  };
}
