// socket.js: a WebSocket to the node that comes back: the one reconnect loop of the SDK's live
// feeds (feed.js's block feed, game_feed.js's events query). It opens `url()` (asked again at
// every attempt, so a feed can resume where it stopped), bounds every message to the chain's
// `maxAnswerBytes` (a larger one is a `too_large` error and drops the socket), parses it as JSON
// (a message that is not is a `bad_answer` error, and skipped), and after a close waits and opens
// again: 250 ms, doubled after each failure up to 5 s, back to 250 ms once a socket opens.

import { ChainError } from './errors.js';

/** Reconnect delays, ms: doubled from the first up to the last. */
export const RECONNECT_MIN_MS = 250;
export const RECONNECT_MAX_MS = 5000;

/**
 * @param {import('./chain.js').Chain} chain its `WebSocket`, `url` and `maxAnswerBytes`
 * @param {object} handlers
 * @param {() => string} handlers.url the ws:// URL to open, asked at every attempt
 * @param {(message: any, drop: () => void) => void} handlers.onMessage each message, parsed;
 *   `drop()` closes this socket (a reconnect follows, through `onClose`)
 * @param {(event: {code: number, reason: string}) => boolean | void} handlers.onClose a socket
 *   closed that this side did not close: return true to stop for good, else it reconnects
 * @param {(e: Error) => void} handlers.onError
 * @param {() => void} [handlers.onOpen]
 * @returns {{close(): void}} stops: no handler runs after it returns
 */
export function reconnectingSocket(chain, { url, onMessage, onClose, onError, onOpen }) {
  let closed = false;
  let ws = null;
  let timer = null;
  let wait = RECONNECT_MIN_MS;

  function scheduleReconnect() {
    if (closed) return;
    timer = setTimeout(connect, wait);
    wait = Math.min(wait * 2, RECONNECT_MAX_MS);
  }

  function connect() {
    if (closed) return;
    let socket;
    try {
      socket = new chain.WebSocket(url());
    } catch (e) {
      onError(e);
      scheduleReconnect();
      return;
    }
    ws = socket;
    socket.onopen = () => {
      if (closed || ws !== socket) return;
      wait = RECONNECT_MIN_MS;
      if (onOpen) onOpen();
    };
    socket.onmessage = (ev) => {
      if (closed || ws !== socket) return;
      const text = typeof ev.data === 'string' ? ev.data : '';
      if (text.length > chain.maxAnswerBytes) {
        onError(new ChainError('too_large', `a WebSocket message over ${chain.maxAnswerBytes} bytes`));
        socket.close();
        return;
      }
      let message;
      try { message = JSON.parse(text); } catch { onError(new ChainError('bad_answer', 'a WebSocket message that is not JSON')); return; }
      onMessage(message, () => socket.close());
    };
    socket.onerror = () => {};
    socket.onclose = (ev) => {
      if (ws === socket) ws = null;
      if (closed) return;
      if (onClose({ code: ev.code, reason: ev.reason ?? '' }) === true) {
        closed = true;
        return;
      }
      scheduleReconnect();
    };
  }
  connect();

  return {
    close() {
      closed = true;
      clearTimeout(timer);
      if (ws) { try { ws.close(1000); } catch { /* already closing */ } ws = null; }
    },
  };
}
