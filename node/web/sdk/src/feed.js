// feed.js: the block subscription behind Chain.subscribe: the node's /v1/ws feed when the
// platform has a WebSocket, polling GET /v1/blocks/latest otherwise. Reconnects with backoff and
// resumes from the last height delivered: missing heights are fetched with GET /v1/blocks/<h>,
// repeated ones dropped, so the callback sees every block once, in height order.

import { ChainError } from './errors.js';

/** Reconnect delays, ms: doubled from the first up to the last. */
const BACKOFF_MIN_MS = 250;
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
  let ws = null;
  let timer = null;
  let backoff = BACKOFF_MIN_MS;
  let busy = false;
  let queue = Promise.resolve();
  const WS = chain.WebSocket;
  const mode = WS ? 'websocket' : 'polling';

  const enqueue = (fn) => {
    queue = queue.then(fn).catch((e) => { if (!closed) onError(e); });
    return queue;
  };

  async function deliver(block) {
    last = block.height;
    await onBlock(block);
  }

  /** Delivers every height after `last` up to `block` (fetching the ones in between), then `block`. */
  async function deliverUpTo(block) {
    if (closed) return;
    if (last === null) last = block.height - 1;
    if (block.height <= last) return;
    for (let h = last + 1; h < block.height; h++) {
      const b = await chain.block(h);
      if (closed) return;
      await deliver(b);
    }
    if (!closed) await deliver(block);
  }

  async function catchUp() {
    const latest = await chain.block('latest');
    if (last === null) { last = latest.height; return; }
    await deliverUpTo(latest);
  }

  function scheduleReconnect() {
    if (closed) return;
    timer = setTimeout(connect, backoff);
    backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
  }

  function connect() {
    if (closed) return;
    let socket;
    try {
      socket = new WS(chain.url.replace(/^http/, 'ws') + '/v1/ws');
    } catch (e) {
      onError(e);
      scheduleReconnect();
      return;
    }
    ws = socket;
    socket.onopen = () => {
      backoff = BACKOFF_MIN_MS;
      if (last !== null) enqueue(catchUp);
      if (opts.onOpen) opts.onOpen();
    };
    socket.onmessage = (ev) => {
      const text = typeof ev.data === 'string' ? ev.data : '';
      if (text.length > chain.maxAnswerBytes) {
        onError(new ChainError('too_large', `a WebSocket message over ${chain.maxAnswerBytes} bytes`));
        socket.close();
        return;
      }
      let msg;
      try { msg = JSON.parse(text); } catch { onError(new ChainError('bad_answer', 'a WebSocket message that is not JSON')); return; }
      if (msg && msg.type === 'block' && msg.block && Number.isSafeInteger(msg.block.height)) {
        enqueue(() => deliverUpTo(msg.block));
      }
    };
    socket.onerror = () => {};
    socket.onclose = (ev) => {
      if (ws === socket) ws = null;
      if (closed) return;
      onError(new ChainError('network', `the block feed closed (code ${ev.code}); reconnecting`));
      scheduleReconnect();
    };
  }

  function poll() {
    if (closed) return;
    if (!busy) {
      busy = true;
      enqueue(catchUp).finally(() => { busy = false; });
    }
    timer = setTimeout(poll, pollMs);
  }

  if (WS) {
    if (last !== null) enqueue(catchUp);
    connect();
  } else {
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
      clearTimeout(timer);
      if (ws) { try { ws.close(1000); } catch { /* already closing */ } ws = null; }
    },
  };
}
