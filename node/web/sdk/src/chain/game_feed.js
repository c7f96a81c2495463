// game_feed.js: Chain.subscribeGame, a live query of one module's events (optionally one game's
// or one player's) over the node's GET /v1/ws/events (node/API.md, "One module's events"):
// each block's matching events delivered once, in height order, across reconnects (it resumes
// from one past the last complete height), and the head after every block. Without a WebSocket
// it falls back to the block feed (feed.js) and applies the node's rule itself (`eventsOfBlock`).

import { ChainError } from './errors.js';
import { subscribeBlocks } from './feed.js';
import { reconnectingSocket } from './socket.js';

/** Close code of a subscription whose replay reached a block the node does not keep. */
const CLOSE_PRUNED = 4001;
/** Most events one block may deliver (a node sending more is not believed). */
const MAX_BLOCK_EVENTS = 100000;

/** The module a transaction body names, and its sender (the node's rule), or null. */
function moduleOf(bodyText) {
  let body;
  try { body = JSON.parse(bodyText); } catch { return null; }
  const a = body && body.action;
  if (!a) return null;
  if (a.type === 'game') return { module: a.game, sender: body.from };
  // Played with a session key: it acts for `account` (docs/session-keys.md).
  if (a.type === 'session_game') return { module: a.game, sender: a.account };
  if (['deploy', 'activate_upgrade', 'cancel_upgrade', 'set_policy'].includes(a.type)) return { module: a.module, sender: body.from };
  return null;
}

/** Whether `event` ({sender, data}) matches `game` and `player` (the node's rule). */
function matches(event, { game, player }) {
  const data = event.data;
  const fields = data && typeof data === 'object' && !Array.isArray(data) ? data : {};
  if (game != null && !(fields.id === game || fields.game === game)) return false;
  if (player != null && event.sender !== player
    && !Object.values(fields).some((v) => v === player || (Array.isArray(v) && v.includes(player)))) return false;
  return true;
}

/**
 * The events of `module` in a block as `GET /v1/ws/events` sends them (`txid`, `tx_index`,
 * `sender`, `index`, `kind`, `data`, and `call` for a scheduled call's), filtered by `game` and
 * `player`: the module's scheduled calls first (they run before the block's transactions), then
 * its transactions', then its end-block receipt's. A failed transaction or call emits nothing.
 * @param {object} block a block as GET /v1/blocks/<height> answers
 */
export function eventsOfBlock(block, module, filter = {}) {
  const out = [];
  for (const s of block.scheduled ?? []) {
    if (s.module !== module || !s.receipt || !s.receipt.ok) continue;
    s.receipt.events.forEach((e, index) => out.push({ txid: null, tx_index: null, sender: null, call: s.id, index, kind: e.kind, data: e.data }));
  }
  (block.txs ?? []).forEach((t, i) => {
    const r = t.receipt;
    if (!r || !r.ok) return;
    const named = moduleOf(t.body);
    if (!named || named.module !== module) return;
    r.events.forEach((e, index) => out.push({ txid: t.txid, tx_index: i, sender: named.sender, index, kind: e.kind, data: e.data }));
  });
  for (const { module: m, receipt } of block.end_block ?? []) {
    if (m !== module) continue;
    receipt.events.forEach((e, index) => out.push({ txid: null, tx_index: null, sender: null, index, kind: e.kind, data: e.data }));
  }
  return out.filter((e) => matches(e, filter));
}

/**
 * @param {import('./chain.js').Chain} chain
 * @param {string} module
 * @param {(batch: {height: number, time_ms: number, events: object[]}) => (void|Promise<void>)} onEvents
 * @param {{game?: string, player?: string, fromHeight?: number, onHead?: (h: {height: number, time_ms: number}) => void,
 *   onError?: (e: Error) => void, onOpen?: () => void}} opts
 */
export function subscribeGame(chain, module, onEvents, opts = {}) {
  const onError = opts.onError ?? (() => {});
  const filter = { game: opts.game ?? null, player: opts.player ?? null };
  let next = opts.fromHeight ?? null; // the first height not yet complete
  let closed = false;
  let pending = null; // the block being received: {height, time_ms, events}
  // Deliveries run one after another, in order, even when a callback is async.
  let chainOfCalls = Promise.resolve();
  const run = (f) => { chainOfCalls = chainOfCalls.then(() => (closed ? undefined : f())).catch((e) => { if (!closed) onError(e); }); };

  function deliverBlock(batch) {
    next = batch.height + 1;
    if (batch.events.length) run(() => onEvents(batch));
  }
  let lastHead = -1; // the last head told
  function deliverHead(head) {
    if (next === null || head.height + 1 > next) next = head.height + 1;
    lastHead = Math.max(lastHead, head.height);
    if (opts.onHead) run(() => opts.onHead(head));
  }

  if (!chain.WebSocket) {
    // The block feed and the node's rule, applied here.
    chain.fellBack?.('subscribeGame');
    const sub = subscribeBlocks(chain, (block) => {
      const events = eventsOfBlock(block, module, filter);
      deliverBlock({ height: block.height, time_ms: block.header?.time_ms ?? 0, events });
      deliverHead({ height: block.height, time_ms: block.header?.time_ms ?? 0 });
    }, { fromHeight: next ?? undefined, onError, onOpen: opts.onOpen });
    return { mode: 'polling', get nextHeight() { return next; }, close() { closed = true; sub.close(); } };
  }

  function url() {
    const q = new URLSearchParams({ module });
    if (filter.game != null) q.set('game', filter.game);
    if (filter.player != null) q.set('player', filter.player);
    if (next !== null) q.set('from', String(next));
    return `${chain.url.replace(/^http/, 'ws')}/v1/ws/events?${q}`;
  }

  const socket = reconnectingSocket(chain, {
    url,
    onOpen: () => {
      pending = null;
      if (opts.onOpen) opts.onOpen();
    },
    onMessage: (m, drop) => {
      if (!m || !Number.isSafeInteger(m.height)) return;
      // Old or repeated; but the head that follows a block's events (same height) is the head,
      // told once.
      if (next !== null && (m.type === 'head' ? m.height + 1 < next || m.height <= lastHead : m.height < next)) return;
      if (m.type === 'events' && Array.isArray(m.events)) {
        if (pending && pending.height !== m.height) pending = null; // a block left unfinished: the node moved on
        pending ??= { height: m.height, time_ms: m.time_ms, events: [] };
        if (pending.events.length + m.events.length > MAX_BLOCK_EVENTS) {
          onError(new ChainError('too_large', `block ${m.height} has over ${MAX_BLOCK_EVENTS} events for this subscription`));
          pending = null;
          drop();
          return;
        }
        pending.events.push(...m.events);
        if (m.last === true) {
          const batch = pending;
          pending = null;
          deliverBlock(batch);
        }
      } else if (m.type === 'head') {
        pending = null;
        deliverHead({ height: m.height, time_ms: m.time_ms });
      }
    },
    onClose: (ev) => {
      if (ev.code === CLOSE_PRUNED) {
        closed = true;
        onError(new ChainError('pruned', `the node does not keep the blocks from ${next}: ${ev.reason || 'pruned'}`));
        return true;
      }
      onError(new ChainError('network', `the events feed closed (code ${ev.code}); reconnecting from ${next ?? 'the head'}`));
      return false;
    },
    onError,
  });

  return {
    mode: 'websocket',
    /** The first height whose events are not delivered yet (null before the first message). */
    get nextHeight() { return next; },
    /** Stops: no callback starts after this returns. */
    close() {
      closed = true;
      socket.close();
    },
  };
}
