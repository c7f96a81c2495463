// relay.js: MoveRelay, one seat's connection to a node's move relay (`GET /v1/relay/<game>`,
// node/API.md "Move relay", node/src/server/relay/; the Rust client is node/client/src/relay.rs):
// signed moves of a channel game sent to the other player at once, off-chain, and theirs
// received. Each connection opens with a seat hello (`relayHelloText`, signed by the seat's game
// key, in the upgrade's query), so only the game's players hold connections, and the node counts
// and serves the other seat's connections only: `peers` is the opponent's, `to` how many of them
// got a move. The node checks each move's signature and seat and stores nothing; a move the
// opponent was not connected to receive (`to: 0`) is lost there, so Channel falls back to the
// move board. The connection is opened again with backoff, with a fresh hello, whenever it drops
// (a node restart), and every message from the node is bounded and checked for shape before it
// is used. Uses the Chain's WebSocket (the platform's, or the `ws` package in Node 20): without
// one there is no relay, Channel uses the move board alone, and the chain's `onFallback` is told.

import { Backoff } from '../chain/backoff.js';

/** Largest relay message read (the node's frames are at most 4,096 bytes plus its envelope). */
const MAX_MESSAGE_CHARS = 16384;
/** How long a send waits for the node's `relayed` (or `error`) answer, ms. */
export const RELAY_ANSWER_MS = 3000;
/** Reconnect delays: from 250 ms doubling up to 5 s. */
const RECONNECT_CAP_MS = 5000;
/** The node's close code for a connection a newer one of the same seat replaced (a seat holds at most 4). */
const CLOSE_REPLACED = 4002;
/** How long a replaced connection leaves the relay to the seat's newer ones before trying again, ms. */
const REPLACED_WAIT_MS = 60000;

/**
 * The text a relay hello signs (lines joined by `\n`): `gamechain relay hello v1`, `chain:
 * <genesis hash>`, `module: channel`, `game: <id>`, `seat: <0|1>`, `time_ms: <ms>`. Byte for byte
 * `gamechain_client::relay::hello_text`.
 * @param {string} chain the chain's genesis hash (hex, the channel's view `{}`: `chain`)
 * @param {string} game 16 hex digits
 * @param {0|1} seat
 * @param {number} timeMs ms since the Unix epoch
 */
export function relayHelloText(chain, game, seat, timeMs) {
  return `gamechain relay hello v1\nchain: ${chain}\nmodule: channel\ngame: ${game}\nseat: ${seat}\ntime_ms: ${timeMs}`;
}

let lastHelloMs = 0;
/** Now, in ms; never the same twice here (the node takes each hello once, and signatures are deterministic). */
function helloTime() {
  lastHelloMs = Math.max(Date.now(), lastHelloMs + 1);
  return lastHelloMs;
}

/**
 * The query of a relay upgrade: `seat=<0|1>&time=<ms>&sig=<base64, percent-encoded>`, `key`'s
 * signature of {@link relayHelloText} now.
 * @param {import('../keys/key.js').Key} key the seat's game key
 */
export function relayHelloQuery(key, chain, game, seat, timeMs = helloTime()) {
  const sig = key.signMessage(relayHelloText(chain, game, seat, timeMs));
  return `seat=${seat}&time=${timeMs}&sig=${encodeURIComponent(sig)}`;
}

export class MoveRelay {
  /**
   * Opens the relay of `game` on `chain`'s node as seat `seat` (a hello signed by `key`, that
   * seat's game key, at each connection) and keeps it open until `close()`.
   * @param {import('../chain/chain.js').Chain} chain
   * @param {string} game 16 hex digits
   * @param {{key: import('../keys/key.js').Key, seat: 0|1, genesis: string,
   *   onMove?: (move: {n: number, data: string, sig: string}, msg: object) => void,
   *   onPeers?: (count: number, before: number) => void, onOpen?: () => void,
   *   onClose?: (code: number) => void}} options `genesis`: the chain's genesis hash (the
   *   channel's view `{}`: `chain`, a Channel's `domain.chain`)
   */
  constructor(chain, game, options = {}) {
    const { key, seat, genesis } = options;
    if (!key || typeof key.signMessage !== 'function' || (seat !== 0 && seat !== 1) || typeof genesis !== 'string') {
      throw new TypeError('MoveRelay: a connection is one seat\'s: pass {key, seat: 0 | 1, genesis} (the seat\'s game key and the chain\'s genesis hash)');
    }
    this.chain = chain;
    this.game = game;
    this.key = key;
    this.seat = seat;
    this.genesis = genesis;
    this.handlers = options;
    /** Whether the connection is open now. */
    this.open = false;
    /** The other seat's connections (the opponent's tabs or devices), as the node last said. */
    this.peers = 0;
    /** Times the connection opened. */
    this.opens = 0;
    this.closed = false;
    this.ws = null;
    this.timer = null;
    this.waiters = [];
    this.backoff = new Backoff({ capMs: RECONNECT_CAP_MS });
    /** False when the platform has no WebSocket: moves then go through the move board only. */
    this.available = typeof chain.WebSocket === 'function';
    if (this.available) this.connect();
    else chain.fellBack?.('the move relay');
  }

  connect() {
    if (this.closed) return;
    let socket;
    try {
      const hello = relayHelloQuery(this.key, this.genesis, this.game, this.seat);
      socket = new this.chain.WebSocket(`${this.chain.url.replace(/^http/, 'ws')}/v1/relay/${this.game}?${hello}`);
    } catch {
      this.reconnectLater();
      return;
    }
    this.ws = socket;
    socket.onopen = () => {
      if (this.ws !== socket) return;
      this.open = true;
      this.opens += 1;
      this.backoff.reset();
      this.handlers.onOpen?.();
    };
    socket.onmessage = (ev) => {
      if (this.ws !== socket) return;
      const text = typeof ev.data === 'string' ? ev.data : '';
      if (text.length > MAX_MESSAGE_CHARS) return;
      let msg;
      try { msg = JSON.parse(text); } catch { return; }
      if (msg && typeof msg === 'object') this.message(msg);
    };
    socket.onerror = () => {};
    socket.onclose = (ev) => {
      if (this.ws !== socket) return;
      this.ws = null;
      this.open = false;
      this.peers = 0;
      this.failWaiters('closed');
      this.handlers.onClose?.(ev?.code ?? 0);
      // Replaced by a newer tab of this seat: leave it the slot a while rather than take one
      // back at once (and be taken back in turn).
      this.reconnectLater(ev?.code === CLOSE_REPLACED ? REPLACED_WAIT_MS : undefined);
    };
  }

  reconnectLater(waitMs = this.backoff.next()) {
    if (this.closed) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.connect(), waitMs);
  }

  message(msg) {
    switch (msg.type) {
      case 'move':
        if (msg.game === this.game && msg.move && typeof msg.move === 'object') this.handlers.onMove?.(msg.move, msg);
        break;
      case 'relayed': {
        const i = this.waiters.findIndex((w) => w.n === msg.n);
        if (i >= 0) this.settle(i, { to: Number.isSafeInteger(msg.to) ? msg.to : 0 });
        break;
      }
      case 'error':
        // Refusals come in the order the moves were sent: the oldest one waiting.
        if (this.waiters.length) this.settle(0, { error: String(msg.error ?? 'error'), message: String(msg.message ?? '').slice(0, 500) });
        break;
      case 'peers': {
        if (!Number.isSafeInteger(msg.count) || msg.count < 0) break;
        const before = this.peers;
        this.peers = msg.count;
        this.handlers.onPeers?.(msg.count, before);
        break;
      }
      default:
    }
  }

  settle(i, answer) {
    const [w] = this.waiters.splice(i, 1);
    clearTimeout(w.timer);
    w.resolve(answer);
  }

  failWaiters(error) {
    for (const w of this.waiters.splice(0)) { clearTimeout(w.timer); w.resolve({ error }); }
  }

  /**
   * Sends the signed move `move` (`{n, data, sig}`, this seat's) whose previous state hashes to
   * `prev`. Resolves (never rejects) to `{to}` (how many of the other seat's connections got it;
   * 0: the opponent did not) or
   * `{error}`: `not_connected`, `closed`, `timeout` (no answer within `timeoutMs`), or the
   * node's `bad_json`, `bad_signature`, `rate_limited`.
   */
  send(move, prev, { timeoutMs = RELAY_ANSWER_MS } = {}) {
    const ws = this.ws;
    if (!this.open || !ws) return Promise.resolve({ error: 'not_connected' });
    return new Promise((resolve) => {
      const w = { n: move.n, resolve };
      w.timer = setTimeout(() => {
        const i = this.waiters.indexOf(w);
        if (i >= 0) this.settle(i, { error: 'timeout' });
      }, timeoutMs);
      this.waiters.push(w);
      try {
        ws.send(JSON.stringify({ move: { n: move.n, data: move.data, sig: move.sig }, prev }));
      } catch {
        const i = this.waiters.indexOf(w);
        if (i >= 0) this.settle(i, { error: 'closed' });
      }
    });
  }

  /** Closes the connection for good. */
  close() {
    this.closed = true;
    clearTimeout(this.timer);
    this.failWaiters('closed');
    const ws = this.ws;
    this.ws = null;
    this.open = false;
    if (ws) { try { ws.close(1000); } catch { /* closing already */ } }
  }
}
