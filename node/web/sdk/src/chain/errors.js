// errors.js: ChainError, the one error type of the SDK. Owns the mapping of the node's JSON
// error bodies ({"error": {"code", "message"}}) and of transport failures to {code, message, status}.

/**
 * An error from the node or on the way to it.
 *
 * - `code`: the node's machine code (`bad_nonce`, `not_found`, `rate_limited`, ...; node/API.md),
 *   or one of the SDK's own: `network` (no answer: refused, reset, DNS), `request_timeout` (no
 *   answer within the call's `timeoutMs`), `bad_answer` (an answer that is not the JSON
 *   expected), `too_large` (an answer over the SDK's byte limit), `receipt_timeout`
 *   (`waitForReceipt` gave up; `txid` says which transaction, which may still be included later).
 * - `status`: the HTTP status, or 0 when there was no HTTP answer.
 * - `txid`: set by `waitForReceipt` timeouts.
 * - `retryAfter`: seconds from a `retry-after` header (429, 503), when the node sent one.
 * - `retries`, `waitedMs`: on a `rate_limited` error the Chain gave up on, how many times it asked
 *   again and how long it waited in all (`rateLimitRetries`, `rateLimitMaxWaitMs`).
 */
export class ChainError extends Error {
  /**
   * @param {string} code
   * @param {string} message
   * @param {number} [status]
   * @param {{txid?: string, retryAfter?: number, retries?: number, waitedMs?: number}} [extra]
   */
  constructor(code, message, status = 0, extra = {}) {
    super(message);
    this.name = 'ChainError';
    this.code = code;
    this.status = status;
    if (extra.txid !== undefined) this.txid = extra.txid;
    if (extra.retryAfter !== undefined) this.retryAfter = extra.retryAfter;
    if (extra.retries !== undefined) this.retries = extra.retries;
    if (extra.waitedMs !== undefined) this.waitedMs = extra.waitedMs;
  }

  /** `code: message`, the form shown to people (the node's message is already for a person). */
  toString() {
    return `${this.code}: ${this.message}`;
  }
}
