// session.js: Session, a session key acting for an account (docs/session-keys.md). The main key
// signs one `authorize_session` (Chain#authorizeSession); every later game op of the modules in
// the session's scope is signed by the session key as a `session_game` for the account, with the
// account's nonce, and the module sees the account as the sender. The chain refuses anything
// outside the scope, after the expiry, over the cap or after revocation with ChainError
// `session_refused` (403) and the fixed text, or a failed receipt for an op that would go over
// the cap.

/** Most module ids in one session's scope. */
export const MAX_SESSION_MODULES = 16;
/** Longest a session may live, ms of block time after the block that authorizes it (30 days). */
export const MAX_SESSION_HORIZON_MS = 30 * 24 * 60 * 60 * 1000;

export class Session {
  /**
   * Made by `Chain#authorizeSession` (or from a kept session: `new Session(chain, key, account, id)`).
   * @param chain the Chain to send through
   * @param key the session key (a Key)
   * @param {string} account the main key's address it acts for
   * @param {number} id the session id: the account's nonce of the authorization
   */
  constructor(chain, key, account, id) {
    this.chain = chain;
    this.key = key;
    this.account = account;
    this.id = id;
  }

  /** The session key's address (what receipts name in their `session` event). */
  get address() { return this.key.address; }

  /**
   * Signs `op` of module `game` with the session key as a `session_game` for the account:
   * the body `{chain_id, from: <session key>, nonce: <account's next nonce>, action}`.
   * Makes no request when `chainId` and `nonce` are given.
   * @returns {Promise<{body: string, signature: string, txid: string}>}
   */
  async sign(game, op, { chainId, nonce } = {}) {
    const action = { type: 'session_game', account: this.account, session: this.id, game, op };
    const n = nonce ?? (await this.chain.account(this.account)).next_nonce;
    return this.chain.sign(this.key, action, { chainId, nonce: n });
  }

  /** Signs and posts `op` of module `game` for the account; the txid. Throws ChainError. */
  async send(game, op) {
    return this.chain.post(await this.sign(game, op));
  }

  /** `send`, then `Chain#waitForReceipt`. */
  async sendAndWait(game, op, options) {
    return this.chain.waitForReceipt(await this.send(game, op), options);
  }

  /** What to keep to use the session later (it holds the session key's WIF: keep it private). */
  toJSON() {
    return { account: this.account, key: this.key.toWif(), session: this.id };
  }
}
