// backoff.js: how a client that must not give up (the block feed, the move relay, the channel's
// watchtower) waits before asking the node again: which failures may go away by themselves
// (`transient`) and how long to wait (`Backoff`: exponential, capped, with jitter, never less than
// the node's `retry-after`). Client policy only: nothing here reaches the chain, so the jitter may
// come from Math.random. Mirrors node/player/src/backoff.rs.

import { ChainError } from './errors.js';

/** The first wait, ms. */
export const BACKOFF_BASE_MS = 250;
/** The longest wait before the node's `retry-after` (which may ask for more), ms. */
export const BACKOFF_CAP_MS = 30000;

/**
 * Whether `e` may go away by itself: the node rate-limited us (429), failed or was restarting
 * (5xx, an answer that is not the API's), could not be reached or did not answer in time, or a
 * receipt did not come in time. A refusal by the node (4xx), by the chain (a failed transaction,
 * ChannelError `refused`) or by this client is not.
 */
export function transient(e) {
  if (!(e instanceof ChainError)) return false;
  if (e.status === 429 || e.status >= 500) return true;
  return ['network', 'request_timeout', 'receipt_timeout', 'rate_limited', 'bad_answer'].includes(e.code) && !(e.status >= 400 && e.status < 500);
}

/**
 * Exponential backoff with "equal jitter": the n-th wait in a row is half of
 * `min(capMs, baseMs · 2ⁿ)` plus a random part of up to the other half, and at least the
 * `retryAfter` seconds the node asked for.
 */
export class Backoff {
  constructor({ baseMs = BACKOFF_BASE_MS, capMs = BACKOFF_CAP_MS, random = Math.random } = {}) {
    this.baseMs = baseMs;
    this.capMs = capMs;
    this.random = random;
    this.attempt = 0;
  }

  /** The next wait (ms) after a failure; `error.retryAfter` (seconds), when set, is honoured. */
  next(error) {
    const ceiling = Math.min(this.capMs, this.baseMs * 2 ** Math.min(this.attempt, 20));
    this.attempt += 1;
    const wait = ceiling / 2 + Math.floor(this.random() * (ceiling / 2 + 1));
    const asked = error && Number.isFinite(error.retryAfter) ? error.retryAfter * 1000 : 0;
    return Math.max(Math.floor(wait), asked);
  }

  /** After a success: the next failure waits from the base again. */
  reset() {
    this.attempt = 0;
  }

  /** Failures in a row so far. */
  get failures() {
    return this.attempt;
  }
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
