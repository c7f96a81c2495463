// channel.js: the client of an off-chain game (docs/channels.md): the lobby (offer, join, cancel,
// the open offers; a stake is never escrowed in a module its owner can change at once unless the
// caller allows it), and Channel, one game played by signed moves: the rules `.wasm` of the code
// hash pinned at the offer (`rules_code`, fetched by hash and checked) run here (rules.js) from
// `initial_state(game tag)`, the move text byte-identical to Rust's
// `channel::Domain::move_message`, every signed move kept in a store before it leaves, moves sent
// through the node's move relay first (relay.js: as this seat, a hello signed by the game key;
// the opponent's connections only count) and the move board as the fallback, moves
// received from either checked (number, mover, signature by the seat's game key, rules), the
// channel's ops (settle, challenge, respond, claim_forfeit, prove_equivocation, withdraw) and the
// watchtower (`watch`). Deadlines are block time in ms. Everything from the node and the opponent
// is hostile: sizes and counts are bounded, and a move is applied only when it passes every check.

import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { ChainError } from '../chain/errors.js';
import { verifyMessage } from '../keys/message.js';
import { Rules, MAX_MOVE_BYTES, MAX_STATE_BYTES } from './rules.js';
import { MoveRelay } from './relay.js';
import { Backoff, transient, sleep } from '../chain/backoff.js';

/** Most moves one op carries (the channel's MAX_MOVES_PER_OP). */
export const MAX_MOVES_PER_OP = 64;
/** Most moves a Channel keeps for one game. */
export const MAX_MOVES_PER_GAME = 1024;
/** Largest move board payload (the move board's MAX_PAYLOAD_BYTES). */
export const MAX_PAYLOAD_BYTES = 8192;
/** The move board `type` of a signed move. */
export const MOVE_TYPE = 1;
/** Shortest response window: 5 minutes of block time, ms (the channel's MIN_WINDOW_MS). */
export const MIN_WINDOW_MS = 300000;
/** Longest response window: 3 days of block time, ms (the channel's MAX_WINDOW_MS). */
export const MAX_WINDOW_MS = 259200000;
/** The window `Channel.offer` uses when none is given: 10 minutes, ms. */
export const DEFAULT_WINDOW_MS = 600000;
/** Most moves ahead of the current one kept until their turn comes. */
const MAX_PENDING = 16;
/** Most candidates kept for one early move number. */
const MAX_PENDING_PER_MOVE = 4;
/** Largest transaction body looked into when scanning blocks. */
const MAX_BODY_BYTES = 256 * 1024;
/** Most blocks `listen` catches up on. */
const MAX_CATCH_UP = 10000;
/** Rules modules kept compiled, by code hash. */
const rulesCache = new Map();
const RULES_CACHE_SIZE = 8;

const utf8 = new TextEncoder();

/**
 * A refusal of the channel client: `code` says which check failed (`malformed`, `too_large`,
 * `out_of_order`, `bad_signature`, `wrong_mover`, `illegal`, `game_over`, `not_your_turn`,
 * `not_a_player`, `already_signed`, `too_many_moves`, `refused`, `no_challenge`, `no_evidence`,
 * `not_deployed`, `bad_record`, `bad_window`, `mutable_module`, `unknown_rules`); `receipt` is set
 * for `refused` (the transaction failed in its block), `move` for `already_signed` (the move that
 * was signed and sent again), `module` and `policy` for `mutable_module`, `rulesCode` for
 * `unknown_rules` (the code hash refused).
 */
export class ChannelError extends Error {
  constructor(code, message, extra = {}) {
    super(message);
    this.name = 'ChannelError';
    this.code = code;
    Object.assign(this, extra);
  }

  toString() {
    return `${this.code}: ${this.message}`;
  }
}

/** Lowercase hex SHA-256 of a rules state (what a move's `prev` names). */
export function stateHash(state) {
  return bytesToHex(sha256(state));
}

function dataBytes(data) {
  if (data instanceof Uint8Array) return data;
  if (typeof data === 'string' && data.length % 2 === 0 && /^[0-9a-fA-F]*$/.test(data)) return hexToBytes(data);
  throw new ChannelError('malformed', 'move data must be a Uint8Array or hex');
}

function head(what, domain, game) {
  return `gamechain channel ${what} v1\nchain: ${domain.chain}\nmodule: ${domain.module}\ngame: ${game}`;
}

/**
 * The text signed for move `n` (Rust `Domain::move_message`): `prev` is the state hash before it,
 * `mover` the player's address (not the game key), `data` bytes or hex (written lowercase).
 * @param {{chain: string, module: string}} domain
 */
export function moveMessage(domain, game, n, prev, mover, data) {
  return `${head('move', domain, game)}\nmove: ${n}\nprev: ${prev}\nmover: ${mover}\ndata: ${bytesToHex(dataBytes(data))}`;
}

/**
 * The final agreement's text (Rust `Domain::final_message`, `gamechain channel final v2`):
 * acceptable in blocks whose time is at most `validUntilMs` (ms since the Unix epoch).
 */
export function finalMessage(domain, game, state, validUntilMs) {
  return `gamechain channel final v2\nchain: ${domain.chain}\nmodule: ${domain.module}\ngame: ${game}\nstate: ${state}\nvalid_until_ms: ${validUntilMs}`;
}

/** The text whose SHA-256 is a game's tag (Rust `Domain::game_tag_text`). */
export function gameTagText(domain, game) {
  return head('game', domain, game);
}

/**
 * A game's tag (Rust `Domain::game_tag`): 32 bytes, SHA-256 of {@link gameTagText}, naming the
 * chain, the channel and the game. The rules' `initial_state` gets it.
 */
export function gameTag(domain, game) {
  return sha256(utf8.encode(gameTagText(domain, game)));
}

/** The checkpoint's text (Rust `Domain::checkpoint_message`). */
export function checkpointMessage(domain, game, moves, state) {
  return `${head('checkpoint', domain, game)}\nmoves: ${moves}\nstate: ${state}`;
}

/**
 * A signed move `{n, data, sig}` from its JSON text or object, checked for shape and size: `n` a
 * safe integer, `data` hex of at most 1,024 bytes (returned lowercase), `sig` at most 200
 * characters. Throws ChannelError `malformed` or `too_large`.
 */
export function parseSignedMove(input) {
  let m = input;
  if (typeof input === 'string') {
    if (input.length > MAX_PAYLOAD_BYTES) throw new ChannelError('too_large', `a move of ${input.length} characters, the limit is ${MAX_PAYLOAD_BYTES}`);
    try { m = JSON.parse(input); } catch { throw new ChannelError('malformed', 'a move that is not JSON'); }
  }
  if (!m || typeof m !== 'object' || Array.isArray(m)) throw new ChannelError('malformed', 'a move must be {n, data, sig}');
  const { n, data, sig } = m;
  if (!Number.isSafeInteger(n) || n < 0) throw new ChannelError('malformed', 'a move needs n, a non-negative integer');
  if (typeof data !== 'string' || data.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(data)) throw new ChannelError('malformed', `move ${n}: data must be hex`);
  if (data.length > 2 * MAX_MOVE_BYTES) throw new ChannelError('too_large', `move ${n}: data is over ${MAX_MOVE_BYTES} bytes`);
  if (typeof sig !== 'string' || sig.length === 0 || sig.length > 200) throw new ChannelError('malformed', `move ${n}: sig must be a signature`);
  return { n, data: data.toLowerCase(), sig };
}

/** A store kept in memory: `{get(key), set(key, value)}` of strings (lost with the process). */
export function memoryStore() {
  const map = new Map();
  return { get: (k) => (map.has(k) ? map.get(k) : null), set: (k, v) => { map.set(k, String(v)); } };
}

/** The default store: `localStorage` in a browser, else memory. */
function defaultStore() {
  try {
    if (typeof window !== 'undefined' && window.localStorage) {
      const ls = window.localStorage;
      return { get: (k) => ls.getItem(k), set: (k, v) => ls.setItem(k, v) };
    }
  } catch { /* storage denied */ }
  return memoryStore();
}

const offerId = (i) => i.toString(16).padStart(16, '0');
const isId = (id) => typeof id === 'string' && /^[0-9a-f]{16}$/.test(id);

function checkAmount(a, what) {
  if (typeof a !== 'string' || !/^[0-9]{1,30}$/.test(a)) throw new Error(`${what} must be a decimal string of base units`);
  return a;
}

/** Finds the event `kind` (bare, or `<module>.kind`) in a receipt. */
function eventOf(receipt, kind) {
  return (receipt.events ?? []).find((e) => e && typeof e.kind === 'string' && (e.kind === kind || e.kind.endsWith(`.${kind}`)) && e.data);
}

/** Sends a game op on `module` and waits for its receipt; a failed receipt is ChannelError `refused`. */
async function sendOp(chain, key, module, op, label, { timeoutMs = 90000 } = {}) {
  const txid = await chain.send(key, { type: 'game', game: module, op });
  const receipt = await chain.waitForReceipt(txid, { timeoutMs });
  if (!receipt.ok) throw new ChannelError('refused', `${label} refused: ${receipt.error}`, { receipt });
  return receipt;
}

/** Whether an offer/game id exists on `module` (view `{offer}`): false on `not_found`. */
async function offerExists(chain, module, i) {
  try {
    await chain.game(module, { offer: offerId(i) });
    return true;
  } catch (e) {
    if (e instanceof ChainError && e.code === 'not_found') return false;
    throw e;
  }
}

/**
 * Loads (and caches) the rules code `hash` (64 hex): its bytes from `GET /v1/code/<hash>`, whose
 * SHA-256 must be `hash` (Chain.code checks it), compiled by Rules.load. Never a module id's
 * current code: a game plays by the code pinned at its offer.
 */
async function loadRulesCode(chain, hash, maxBytes) {
  if (typeof hash !== 'string' || !/^[0-9a-f]{64}$/.test(hash)) throw new ChannelError('bad_record', `rules code hash ${String(hash).slice(0, 80)} is not 64 lowercase hex digits`);
  if (!rulesCache.has(hash)) {
    const made = chain.code(hash, { maxBytes }).then((wasm) => Rules.load(wasm, { maxBytes }));
    made.catch(() => rulesCache.delete(hash));
    if (rulesCache.size >= RULES_CACHE_SIZE) rulesCache.delete(rulesCache.keys().next().value);
    rulesCache.set(hash, made);
  }
  try {
    return await rulesCache.get(hash);
  } catch (e) {
    if (e instanceof ChainError && e.code === 'not_found') throw new ChannelError('not_deployed', `no code ${hash} on this node`);
    throw e;
  }
}

/** A module's record (`GET /v1/modules/<id>`); ChannelError `not_deployed` when it is missing. */
async function moduleRecord(chain, id) {
  try {
    return await chain.module(id);
  } catch (e) {
    if (e instanceof ChainError && e.code === 'not_found') throw new ChannelError('not_deployed', `the module ${id} is not deployed on this node`);
    throw e;
  }
}

/** Shortest timelock accepted without `allowMutable`: 7 days (more than twice the longest window). */
export const MIN_SAFE_TIMELOCK_MS = 7 * 24 * 3_600_000;

/**
 * Refuses (ChannelError `mutable_module`) to escrow a stake above 0 in `module` unless
 * `allowMutable` when its owner could replace its code, and with it the escrow, before the game
 * is over: its record says `"policy": {"kind": "owner"}`, or `timelocked` with a `delay_ms`
 * under {@link MIN_SAFE_TIMELOCK_MS} (too short to leave after an announcement), or an upgrade
 * is pending. A record without `policy` (a node from before upgrade policies) is not refused.
 */
export async function checkEscrowPolicy(chain, module, stake, allowMutable = false) {
  if (allowMutable || BigInt(stake) === 0n) return;
  const rec = await moduleRecord(chain, module);
  const policy = rec && rec.policy;
  if (!policy || typeof policy !== 'object') return;
  let why = null;
  if (rec.pending_upgrade) why = `an upgrade to code ${rec.pending_upgrade.code_hash} is pending`;
  else if (policy.kind === 'owner') why = 'it has upgrade policy "owner": its owner can replace its code at once';
  else if (policy.kind === 'timelocked' && !(policy.delay_ms >= MIN_SAFE_TIMELOCK_MS)) {
    why = `it has upgrade policy "timelocked" with a delay of ${policy.delay_ms} ms, less than the ${MIN_SAFE_TIMELOCK_MS} ms a player needs to leave`;
  }
  if (why) {
    throw new ChannelError('mutable_module',
      `module ${module}: ${why}; its owner ${rec.owner ?? '(unknown)'} could replace its code, and with it every stake it holds, before the game is over; pass allowMutable: true to stake anyway`,
      { module, policy });
  }
}

/** The owner `GET /v1/modules` gives every genesis module. */
export const GENESIS_OWNER = 'system';

/**
 * Which rules code a player agrees to play (docs/channels.md, "Rules that trap when their author
 * loses"): rules that trap on a position their author loses make the winner forfeit, and a game
 * pinned to that code cannot be rescued, so {@link Channel.offer} and {@link Channel.join} play,
 * by themselves, only the code of a **genesis** module (one the node's module list, `GET
 * /v1/modules`, shows with `"owner": "system"`; by hash, whatever module id the offer names).
 * Resolves to `null` when `code` is such code or `acceptRulesCode` is that exact hash (case
 * aside), else to the refusal: one line saying what the code is (the module running it, `rules`
 * first when it does, and its owner), that it is no genesis module's, and how to opt in. `offer`:
 * the offer id when joining (the text then says so). `modules`: the module list, when the caller
 * has it (else it is read).
 * @param {import('../chain/chain.js').Chain} chain
 * @param {string} code the rules code hash
 * @param {{offer?: string, rules?: string | null, acceptRulesCode?: string, modules?: Array<{id: string, code_hash: string, owner: string | null}>}} [options]
 * @returns {Promise<string | null>}
 */
export async function rulesCodeRefusal(chain, code, { offer, rules, acceptRulesCode, modules } = {}) {
  const hash = String(code ?? '').toLowerCase();
  const list = modules ?? (await chain.modules())?.modules;
  if (!Array.isArray(list)) throw new ChannelError('bad_record', 'the node\'s module list is not a list');
  const runs = (m) => typeof m?.code_hash === 'string' && m.code_hash.toLowerCase() === hash;
  if (/^[0-9a-f]{64}$/.test(hash) && list.some((m) => runs(m) && m.owner === GENESIS_OWNER)) return null;
  if (typeof acceptRulesCode === 'string' && acceptRulesCode.toLowerCase() === hash) return null;
  const running = list.filter(runs).sort((a, b) => (b.id === rules) - (a.id === rules));
  const what = running.length === 0 ? 'code no module runs now'
    : `the code module ${running[0].id} runs (owner ${running[0].owner})${running.length > 1 ? ` and ${running.length - 1} other module(s)` : ''}`;
  const head = offer !== undefined
    ? `refusing to join offer ${offer}: its rules code ${hash} is ${what}`
    : `refusing to offer rules code ${hash}: it is ${what}`;
  return `${head}, not the code of a genesis module: such rules may trap when their author loses, and you would lose by forfeit; nothing was sent (read that code, then pass acceptRulesCode: '${hash}' to play it anyway)`;
}

function checkAcceptRulesCode(acceptRulesCode, what) {
  if (acceptRulesCode !== undefined && (typeof acceptRulesCode !== 'string' || !/^[0-9a-fA-F]{64}$/.test(acceptRulesCode))) {
    throw new Error(`${what}: acceptRulesCode must be 64 hex digits`);
  }
}

function checkWindow(windowMs) {
  if (!Number.isSafeInteger(windowMs) || windowMs < MIN_WINDOW_MS || windowMs > MAX_WINDOW_MS) {
    throw new ChannelError('bad_window', `windowMs must be an integer from ${MIN_WINDOW_MS} to ${MAX_WINDOW_MS} (5 minutes to 3 days of block time), not ${windowMs}`);
  }
  return windowMs;
}

export class Channel {
  /**
   * One game of the channel module. Call {@link Channel#load} (or use {@link Channel.open}).
   * @param {import('../chain/chain.js').Chain} chain
   * @param {import('../keys/key.js').Key} key the game key: signs this seat's moves
   * @param {string} game the game id (16 hex digits)
   * @param {object} [options]
   * @param {import('../keys/key.js').Key} [options.account] the player's key, which sends transactions (default `key`)
   * @param {string} [options.module] the channel module id (default `channel`)
   * @param {string} [options.moveboard] the move board module id (default `moveboard`)
   * @param {{get(k: string): (string|null|Promise<string|null>), set(k: string, v: string): (void|Promise<void>)}} [options.store]
   *   where signed moves are kept: default `localStorage` in a browser, memory elsewhere
   * @param {number} [options.fromHeight] the first block `listen` reads when the store has none
   * @param {number} [options.maxRulesBytes] largest rules module loaded (default 4 MiB)
   * @param {boolean} [options.relay] whether `listen` opens the node's move relay (default true)
   */
  constructor(chain, key, game, options = {}) {
    if (!isId(game)) throw new Error('Channel: game must be 16 lowercase hex digits');
    this.chain = chain;
    this.key = key;
    this.account = options.account ?? key;
    this.game = game;
    this.module = options.module ?? 'channel';
    this.moveboard = options.moveboard ?? 'moveboard';
    this.store = options.store ?? defaultStore();
    this.options = options;
    /** The signing domain `{chain, module}` (the channel's view `{}`). */
    this.domain = null;
    /** The game record (the channel's view `{game}`), as of the last {@link Channel#refresh}. */
    this.record = null;
    /** This key's seat (0 or 1), or null when it signs for neither. */
    this.seat = null;
    /** The rules (the code pinned at the offer, `record.rules_code`), running here. */
    this.rules = null;
    /** The game tag (32 bytes), the rules' `initial_state` input. */
    this.tag = null;
    /** The time (ms) of the newest block read, what deadlines are judged by; null before one. */
    this.headTimeMs = null;
    /** The move relay connection while `listen` runs (null without one). */
    this.relay = null;
    this.relayUsers = 0;
    /** Every move applied, from move 0: `{n, data, sig}`. */
    this.moves = [];
    /** `hashes[n]`: the state hash before move n (and after the last move). */
    this.hashes = [];
    /** The current rules state. */
    this.state = null;
    /** Whether the rules say the game is over; `winner` is then a seat or null (a draw). */
    this.over = false;
    this.winner = null;
    /** The seat due to move (null when over). */
    this.due = null;
    /** Proof that a seat signed two moves for one position: `{seat, a, b, prev}`, or null. */
    this.evidence = null;
    this.pending = new Map();
    this.saved = null;
    this.queue = Promise.resolve();
  }

  /** `new Channel(...)` then `load()`. */
  static async open(chain, key, game, options = {}) {
    const c = new Channel(chain, key, game, options);
    await c.load();
    return c;
  }

  /**
   * Reads the domain and the game, loads the rules by the code hash pinned at the offer
   * (`rules_code`: `/v1/code/<hash>`, SHA-256 checked; never the rules module's current code),
   * starts from `initial_state(tag)` and restores the moves kept in the store (each checked
   * again). Throws ChannelError `not_deployed` when the channel or the code is missing,
   * `bad_record` when the game's tag is not this game's, ChainError `not_found` for an unknown game.
   */
  async load() {
    let view;
    try {
      view = await this.chain.game(this.module, {});
    } catch (e) {
      if (e instanceof ChainError && e.code === 'not_found') throw new ChannelError('not_deployed', `the channel module ${this.module} is not deployed on this node`);
      throw e;
    }
    if (!view || typeof view.chain !== 'string' || !/^[0-9a-f]{64}$/.test(view.chain) || view.module !== this.module) {
      throw new ChannelError('bad_record', `the channel's domain view is not {chain, module}: ${JSON.stringify(view).slice(0, 200)}`);
    }
    this.domain = { chain: view.chain, module: view.module };
    await this.refresh();
    const r = this.record;
    const seatOf = r.players.indexOf(this.account.address);
    this.seat = seatOf >= 0 && r.signers[seatOf] === this.key.address ? seatOf : r.signers.indexOf(this.key.address) >= 0 ? r.signers.indexOf(this.key.address) : null;
    const tag = gameTag(this.domain, this.game);
    if (r.tag !== bytesToHex(tag)) throw new ChannelError('bad_record', `game ${this.game}: its tag ${r.tag} is not this game's (${bytesToHex(tag)})`);
    this.tag = tag;
    this.rules = await loadRulesCode(this.chain, r.rules_code, this.options.maxRulesBytes);
    this.rulesHash = r.rules_code;
    this.state = await this.rules.initialState(tag);
    this.hashes = [stateHash(this.state)];
    this.moves = [];
    await this.step();
    const stored = await this.store.get(this.storeKey());
    let saved = null;
    try { saved = stored ? JSON.parse(stored) : null; } catch { saved = null; }
    this.saved = saved && saved.v === 1 ? saved : { v: 1, moves: [], mine: {}, app: {}, evidence: null, fromHeight: null, lastHeight: null };
    if (this.saved.fromHeight == null && Number.isSafeInteger(this.options.fromHeight)) this.saved.fromHeight = this.options.fromHeight;
    const kept = Array.isArray(this.saved.moves) ? this.saved.moves.slice(0, MAX_MOVES_PER_GAME) : [];
    this.saved.moves = [];
    for (const m of kept) {
      try { await this.applyChecked(parseSignedMove(m)); } catch { break; }
    }
    this.saved.moves = this.moves.slice();
    this.evidence = this.saved.evidence ?? null;
    await this.persist();
    return this;
  }

  /** The store key of this game and game key. */
  storeKey() {
    return `gamechain.channel:${this.domain.chain}:${this.domain.module}:${this.game}:${this.key.address}`;
  }

  /**
   * Reads what the store holds for this game now (another tab or process on the same store may
   * have written since): `{v: 1, …}` or null.
   */
  async readStored() {
    let stored = null;
    try { stored = JSON.parse((await this.store.get(this.storeKey())) ?? 'null'); } catch { stored = null; }
    return stored && typeof stored === 'object' && stored.v === 1 ? stored : null;
  }

  /**
   * Merges what another writer of the same store kept (moves signed by this seat, helper values
   * such as an RPS salt) into this client: the store is shared by every tab of a browser, and a
   * tab must never sign a position another tab signed, nor drop a salt another tab kept.
   */
  mergeStored(stored) {
    if (!stored) return;
    const obj = (o) => (o && typeof o === 'object' && !Array.isArray(o) ? o : {});
    this.saved.mine = { ...this.saved.mine, ...obj(stored.mine) };
    this.saved.posted = { ...obj(this.saved.posted), ...obj(stored.posted) };
    this.saved.app = { ...obj(stored.app), ...this.saved.app };
    if (!this.evidence && stored.evidence) this.evidence = stored.evidence;
  }

  /**
   * Catches up with the store: merges it (see above) and applies, checked, the moves it holds
   * beyond this client's. {@link Channel#play} and {@link Rps#commit} call it before signing.
   */
  async sync() {
    const stored = await this.readStored();
    if (!stored) return;
    this.mergeStored(stored);
    const more = Array.isArray(stored.moves) ? stored.moves.slice(this.moves.length, MAX_MOVES_PER_GAME) : [];
    for (const m of more) {
      try { await this.applyChecked(parseSignedMove(m)); } catch { break; }
    }
  }

  /** Writes this client's record, merged with what the store holds (never losing another writer's moves or values). */
  async persist() {
    const stored = await this.readStored();
    this.mergeStored(stored);
    const theirs = stored && Array.isArray(stored.moves) ? stored.moves : [];
    this.saved.moves = theirs.length > this.moves.length ? theirs.slice(0, MAX_MOVES_PER_GAME) : this.moves.slice();
    this.saved.evidence = this.evidence;
    await this.store.set(this.storeKey(), JSON.stringify(this.saved));
  }

  /** A value a helper keeps with the game (e.g. an RPS salt), from the store. */
  getData(name) {
    return this.saved.app[name] ?? null;
  }

  /** Keeps `value` (JSON) with the game in the store; resolves once stored. */
  async setData(name, value) {
    this.saved.app[name] = value;
    await this.persist();
  }

  /**
   * Re-reads the game record (view `{game}`), checking its shape. The view is asked at the time of
   * the newest block read (`at_ms` = `headTimeMs`), so its `final` says whether the result
   * stands at that block time; `atMs` overrides it.
   */
  async refresh({ atMs } = {}) {
    const at = atMs ?? this.headTimeMs;
    const r = await this.chain.game(this.module, at != null ? { game: this.game, at_ms: String(at) } : { game: this.game });
    const pair = (a) => Array.isArray(a) && a.length === 2 && a.every((x) => typeof x === 'string' && x.length > 0 && x.length <= 64);
    const hex64 = (x) => typeof x === 'string' && /^[0-9a-f]{64}$/.test(x);
    if (!r || r.id !== this.game || !pair(r.players) || !pair(r.signers) || !hex64(r.rules_code) || !hex64(r.tag) || typeof r.status !== 'string' || !Number.isSafeInteger(r.window_ms)) {
      throw new ChannelError('bad_record', `game ${this.game}: not a game record`);
    }
    if (this.record && (r.rules_code !== this.record.rules_code || r.tag !== this.record.tag)) {
      throw new ChannelError('bad_record', `game ${this.game}: its rules code or tag changed`);
    }
    this.record = r;
    return r;
  }

  /** The time (ms) of the node's newest block (`GET /v1/blocks/latest`), kept as `headTimeMs`. */
  async blockTime() {
    const t = (await this.chain.block('latest')).header?.time_ms;
    if (Number.isSafeInteger(t)) this.headTimeMs = Math.max(this.headTimeMs ?? 0, t);
    return this.headTimeMs;
  }

  /**
   * Block time (ms) left before `deadlineMs` by the newest block read (0 once passed), or null
   * before any block was read.
   */
  timeLeft(deadlineMs) {
    return this.headTimeMs == null ? null : Math.max(0, deadlineMs - this.headTimeMs);
  }

  /** Moves made so far (the number of the next move). */
  get n() {
    return this.moves.length;
  }

  /** The hash of the current state. */
  get stateHash() {
    return this.hashes[this.moves.length];
  }

  /** Whether it is this seat's turn. */
  get myTurn() {
    return this.seat !== null && !this.over && this.due === this.seat;
  }

  /**
   * The text signed for move `n` of this game: byte-identical to Rust's
   * `channel::Domain::move_message(game, n, prev, mover, data)`.
   */
  moveText(n, prev, mover, data) {
    return moveMessage(this.domain, this.game, n, prev, mover, data);
  }

  /** `{over, winner, due}` of `state` after `made` moves, by the rules. */
  async outcome(state, made) {
    const over = await this.rules.isOver(state);
    const winner = over ? await this.rules.winner(state) : null;
    const due = over ? null : await this.rules.moverAt(made);
    return { over, winner, due };
  }

  /**
   * Works out over / winner / due for the current state. The three are computed first and
   * assigned together, so a reader never sees `over` true with the winner not yet set.
   */
  async step() {
    Object.assign(this, await this.outcome(this.state, this.moves.length));
  }

  /** Checks `m` as the next move and applies it (signature, mover, rules). */
  async applyChecked(m) {
    const n = this.moves.length;
    if (m.n !== n) throw new ChannelError('out_of_order', `expected move ${n}, got move ${m.n}`);
    if (n >= MAX_MOVES_PER_GAME) throw new ChannelError('too_many_moves', `the game has ${n} moves, the limit is ${MAX_MOVES_PER_GAME}`);
    if (this.over) throw new ChannelError('game_over', `move ${n} comes after the game is over`);
    const mover = this.due;
    const r = this.record;
    const prev = this.hashes[n];
    const text = this.moveText(n, prev, r.players[mover], m.data);
    if (!verifyMessage(r.signers[mover], text, m.sig)) {
      const other = 1 - mover;
      if (verifyMessage(r.signers[other], this.moveText(n, prev, r.players[other], m.data), m.sig)) {
        throw new ChannelError('wrong_mover', `move ${n} is seat ${mover}'s, but seat ${other} signed it`);
      }
      throw new ChannelError('bad_signature', `move ${n} is not signed by seat ${mover}'s game key over the current state`);
    }
    const data = hexToBytes(m.data);
    if (!(await this.rules.validateMove(this.state, n, mover, data))) throw new ChannelError('illegal', `move ${n} is not a legal move`);
    const next = await this.rules.applyMove(this.state, n, mover, data);
    if (next.length > MAX_STATE_BYTES) throw new ChannelError('too_large', `a state over ${MAX_STATE_BYTES} bytes`);
    // Everything the move changes is assigned at once, after the last rules call: a reader sees
    // the game before the move or after it, never half of each.
    const outcome = await this.outcome(next, n + 1);
    this.state = next;
    this.moves.push(m);
    this.hashes[n + 1] = stateHash(next);
    this.hashes.length = n + 2;
    if (mover === this.seat) this.saved.mine[`${n}:${prev}`] ??= m;
    Object.assign(this, outcome);
  }

  /** Runs `fn` after every earlier call of it: moves are applied one at a time. */
  serial(fn) {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => {});
    return run;
  }

  /**
   * Checks a move received from the opponent (JSON text or `{n, data, sig}`) and applies it.
   * Resolves to `{status: 'applied', move}`, `{status: 'known'}` (a copy of a move applied
   * already) or `{status: 'equivocation', seat}` (another move signed by that seat for a position
   * already played: kept as `evidence` for {@link Channel#proveEquivocation}). Throws ChannelError:
   * `malformed`/`too_large`, `out_of_order` (a later move is kept, bounded, until its turn),
   * `game_over`, `bad_signature`, `wrong_mover`, `illegal`.
   */
  receive(signed) {
    return this.serial(async () => {
      const m = parseSignedMove(signed);
      const n = this.moves.length;
      if (m.n < n) return this.known(m);
      if (m.n > n) {
        // Kept unchecked until its turn (its signature needs the state before it): anyone can
        // post under this game, so a few candidates are kept per number, first come first kept,
        // and a forged one can never displace the opponent's real move.
        if (m.n < n + MAX_PENDING) {
          const list = this.pending.get(m.n) ?? [];
          if (list.length < MAX_PENDING_PER_MOVE && !list.some((x) => x.sig === m.sig && x.data === m.data)) list.push(m);
          this.pending.set(m.n, list);
        }
        throw new ChannelError('out_of_order', `expected move ${n}, got move ${m.n}`);
      }
      await this.applyChecked(m);
      // A move of this seat coming back (another tab's, seen on the board) is out there already.
      if (this.saved.mine[`${m.n}:${this.hashes[m.n]}`]) (this.saved.posted ??= {})[m.sig] = true;
      await this.persist();
      const out = { status: 'applied', move: m };
      // Moves that arrived early, now in turn: the first candidate that passes every check.
      for (let list = this.pending.get(this.moves.length); list; list = this.pending.get(this.moves.length)) {
        this.pending.delete(this.moves.length);
        let applied = false;
        for (const next of list) {
          try { await this.applyChecked(next); applied = true; break; } catch { /* a forgery: the next one */ }
        }
        if (!applied) break;
        await this.persist();
      }
      for (const k of [...this.pending.keys()]) if (k < this.moves.length) this.pending.delete(k);
      return out;
    });
  }

  /** A move for a position already played: a copy, or a second signature by one seat (evidence). */
  async known(m) {
    const have = this.moves[m.n];
    if (have.data === m.data) {
      if (have.sig === m.sig && this.saved.mine[`${m.n}:${this.hashes[m.n]}`]) await this.markPosted(have);
      return { status: 'known' };
    }
    const prev = this.hashes[m.n];
    const seat = await this.rules.moverAt(m.n);
    const r = this.record;
    if (!verifyMessage(r.signers[seat], this.moveText(m.n, prev, r.players[seat], m.data), m.sig)) {
      throw new ChannelError('bad_signature', `move ${m.n} (already played) is not signed by seat ${seat}'s game key`);
    }
    this.evidence = { seat, a: have, b: m, prev };
    await this.persist();
    return { status: 'equivocation', seat };
  }

  /**
   * Plays `data` (bytes or hex) as this seat's next move: checked by the rules here, signed, kept
   * in the store, applied, and only then sent ({@link Channel#post}: the relay when the opponent
   * is connected to it, else the move board). A position signed already is never signed again:
   * its move is re-sent instead (with other `data` that is ChannelError `already_signed`, after
   * the re-send). Resolves to `{move, resent, via, to?, txid?, receipt?}`. Throws ChannelError
   * `not_a_player`, `game_over`, `not_your_turn`, `too_large`, `illegal`, `already_signed`,
   * `refused` (the board post failed in its block).
   */
  async play(data, { wait = true } = {}) {
    const move = await this.serial(async () => {
      const bytes = dataBytes(data);
      // Another tab on the same store may have signed here already.
      await this.sync();
      if (this.seat === null) throw new ChannelError('not_a_player', `${this.key.address} signs for no seat of game ${this.game}`);
      if (bytes.length > MAX_MOVE_BYTES) throw new ChannelError('too_large', `move data is ${bytes.length} bytes, the limit is ${MAX_MOVE_BYTES}`);
      const n = this.moves.length;
      const hex = bytesToHex(bytes);
      // The last move may be ours already (played before a reload): send it again.
      const last = this.moves[n - 1];
      if (last && (await this.rules.moverAt(n - 1)) === this.seat && this.saved.mine[`${n - 1}:${this.hashes[n - 1]}`] && (this.over || this.due !== this.seat)) {
        const err = last.data === hex ? null : new ChannelError('already_signed', `move ${n - 1} was signed already; it is sent again (signing another would be equivocation)`, { move: last });
        return { move: last, resent: true, err };
      }
      if (this.over) throw new ChannelError('game_over', 'the game is over');
      if (this.due !== this.seat) throw new ChannelError('not_your_turn', `move ${n} is seat ${this.due}'s`);
      const prev = this.hashes[n];
      const signedBefore = this.saved.mine[`${n}:${prev}`];
      if (signedBefore) {
        const err = signedBefore.data === hex ? null : new ChannelError('already_signed', `move ${n} was signed already; it is sent again (signing another would be equivocation)`, { move: signedBefore });
        return { move: signedBefore, resent: true, err };
      }
      if (!(await this.rules.validateMove(this.state, n, this.seat, bytes))) throw new ChannelError('illegal', `move ${n} is not a legal move`);
      const m = { n, data: hex, sig: this.key.signMessage(this.moveText(n, prev, this.record.players[this.seat], bytes)) };
      // Kept before anything else happens, so a crash can only ever re-send it.
      this.saved.mine[`${n}:${prev}`] = m;
      await this.persist();
      await this.applyChecked(m);
      await this.persist();
      return { move: m, resent: false, err: null };
    });
    const out = await this.post(move.move, { wait });
    if (move.err) throw Object.assign(move.err, out);
    return { ...out, move: move.move, resent: move.resent };
  }

  /**
   * Sends a signed move to the opponent: through the node's move relay first, when it is open and
   * the opponent is connected to it (resolves to `{via: 'relay', to}` once the node says it
   * reached `to` > 0 connections); otherwise, or when the relay refused it, nobody received it,
   * or no answer came, through the move board (`{via: 'board', txid, receipt?}`; `receipt` when
   * `wait`, the default). `board: true` skips the relay.
   */
  async post(move, { wait = true, board = false } = {}) {
    const relay = this.relay;
    if (!board && relay && relay.open && relay.peers > 0) {
      const r = await relay.send(move, this.hashes[move.n]);
      if (r.to > 0) {
        await this.markPosted(move);
        return { via: 'relay', to: r.to };
      }
    }
    const payload = JSON.stringify({ n: move.n, data: move.data, sig: move.sig });
    const op = { kind: 'post', game: this.game, type: MOVE_TYPE, payload };
    let out;
    if (!wait) out = { via: 'board', txid: await this.chain.send(this.account, { type: 'game', game: this.moveboard, op }) };
    else {
      const receipt = await sendOp(this.chain, this.account, this.moveboard, op, `move ${move.n}`);
      out = { via: 'board', txid: receipt.txid, receipt };
    }
    await this.markPosted(move);
    return out;
  }

  /**
   * Opens the node's move relay for this game (once; `listen` does) as this seat, its hello
   * signed by the game key: moves received there go through {@link Channel#receive} and to
   * `onMove`/`onRefused`, and whenever the opponent's connections rise (they connect or
   * reconnect) this seat's latest signed move is sent again through it. Only for the channel
   * module `channel` (the relay serves no other) and a key that is a seat's (the relay admits
   * the players only: an onlooker reads the blocks).
   */
  openRelay({ onMove, onRefused, onPeers } = {}) {
    this.relayUsers += 1;
    if (this.relay || this.module !== 'channel' || this.options.relay === false || this.seat === null) return this.relay;
    const relay = new MoveRelay(this.chain, this.game, {
      key: this.key,
      seat: this.seat,
      genesis: this.domain.chain,
      onMove: async (move) => {
        let r;
        try {
          r = await this.receive(move);
        } catch (error) {
          if (onRefused) onRefused({ status: 'refused', error, via: 'relay' });
          return;
        }
        if ((r.status === 'applied' || r.status === 'equivocation') && onMove) onMove({ ...r, via: 'relay' });
      },
      onPeers: (count, before) => {
        if (onPeers) onPeers(count);
        if (count > before) {
          const mine = this.lastMine();
          if (mine) relay.send(mine, this.hashes[mine.n]).then((a) => { if (a.to > 0) this.markPosted(mine); });
        }
      },
    });
    if (!relay.available) return null;
    this.relay = relay;
    return relay;
  }

  /** Closes the relay once every `listen` that opened it has closed. */
  closeRelay() {
    this.relayUsers = Math.max(0, this.relayUsers - 1);
    if (this.relayUsers === 0 && this.relay) {
      this.relay.close();
      this.relay = null;
    }
  }

  /** Notes that `move` reached the node (sent, or seen in a block). */
  async markPosted(move) {
    this.saved.posted ??= {};
    if (this.saved.posted[move.sig]) return;
    this.saved.posted[move.sig] = true;
    await this.persist();
  }

  /**
   * This seat's last signed move when no post of it is known to have reached the node (the post
   * failed, or the page closed between signing and sending), else null: {@link Channel#resend} it,
   * or the opponent never sees it.
   */
  unposted() {
    const mine = this.lastMine();
    return mine && !(this.saved.posted ?? {})[mine.sig] ? mine : null;
  }

  lastMine() {
    return [...this.moves].reverse().find((m) => this.saved.mine[`${m.n}:${this.hashes[m.n]}`]) ?? null;
  }

  /** Re-posts this seat's last signed move (after a reload, or when the opponent missed it). */
  async resend(options) {
    const mine = this.lastMine();
    if (!mine) throw new ChannelError('no_move', 'this seat has signed no move yet');
    return this.post(mine, options);
  }

  /**
   * Reads one block for this game: signed moves posted to the move board (its `posted` events of
   * type 1 for this game, in transactions to the board) and
   * moves carried by the channel's ops (`challenge`, `respond`, `settle`), each through
   * {@link Channel#receive}. Resolves to the list of `{status, move?, error?}`; never throws for
   * a bad move (its `error` is set).
   */
  async scanBlock(block) {
    const results = [];
    const t = block.header?.time_ms;
    if (Number.isSafeInteger(t)) this.headTimeMs = Math.max(this.headTimeMs ?? 0, t);
    for (const tx of block.txs ?? []) {
      if (!tx.receipt || !tx.receipt.ok || typeof tx.body !== 'string' || tx.body.length > MAX_BODY_BYTES) continue;
      let action;
      try { action = JSON.parse(tx.body).action; } catch { continue; }
      if (!action || action.type !== 'game' || !action.op) continue;
      const op = action.op;
      let moves = [];
      if (action.game === this.moveboard) {
        // The move board's `posted` events (a transaction to the board: no other module's event).
        for (const ev of (tx.receipt.events ?? []).slice(0, 16)) {
          const d = ev && ev.data;
          if (ev && (ev.kind === 'posted' || ev.kind === `${this.moveboard}.posted`) && d && d.game === this.game && d.type === MOVE_TYPE && typeof d.payload === 'string') moves.push(d.payload);
        }
      } else if (action.game === this.module && (op.game === this.game || op.offer === this.game)) {
        this.changed = true;
        if (Array.isArray(op.moves)) moves = op.moves.slice(0, MAX_MOVES_PER_OP);
        if (op.kind === 'prove_equivocation') moves = [op.a, op.b];
      } else continue;
      for (const m of moves) {
        try {
          results.push(await this.receive(m));
        } catch (error) {
          results.push({ status: 'refused', error });
        }
      }
    }
    if (Number.isSafeInteger(block.height)) {
      this.saved.lastHeight = block.height;
      await this.persist();
    }
    return results;
  }

  /**
   * Follows the game: the chain's blocks over the WebSocket feed from `fromHeight` (default: after
   * the last block read for this game, else the `fromHeight` given when opening, else the next
   * block; at most 10,000 blocks back; the feed reconnects and retries with backoff, never giving
   * up), and the node's move relay as this seat (unless `relay: false`, the Channel was opened
   * with `relay: false`, or its key is no seat's). Calls `onMove(result)` for each move applied or equivocation found (`via`:
   * `'relay'`, or absent for moves read from blocks), `onRefused(result)` for each move refused,
   * `onBlock(block)` after each block, `onPeers(count)` when the opponent's relay connections
   * change. Resolves to the subscription: `{mode, lastHeight, relay, close()}`.
   */
  async listen({ fromHeight, onMove, onRefused, onBlock, onError, onOpen, onPeers, relay = true } = {}) {
    let from = fromHeight ?? (this.saved.lastHeight != null ? this.saved.lastHeight + 1 : this.saved.fromHeight ?? undefined);
    if (from != null) {
      const headHeight = (await this.chain.status()).height;
      from = Math.max(from, headHeight - MAX_CATCH_UP, 0);
    }
    const sub = this.chain.subscribe(async (block) => {
      const results = await this.scanBlock(block);
      for (const r of results) {
        if ((r.status === 'applied' || r.status === 'equivocation') && onMove) onMove(r);
        if (r.status === 'refused' && onRefused) onRefused(r);
      }
      if (onBlock) await onBlock(block);
    }, { fromHeight: from, onError, onOpen });
    const useRelay = relay && this.options.relay !== false;
    if (useRelay) this.openRelay({ onMove, onRefused, onPeers });
    const channel = this;
    let closed = false;
    return {
      get mode() { return sub.mode; },
      get lastHeight() { return sub.lastHeight; },
      get relay() { return useRelay ? channel.relay : null; },
      close() {
        if (closed) return;
        closed = true;
        sub.close();
        if (useRelay) channel.closeRelay();
      },
    };
  }

  /**
   * The watchtower: keeps this seat safe until the result is final. It follows the game as
   * {@link Channel#listen} does (block feed and relay, both reconnecting with backoff, so it
   * survives a node restart) and, on (re)connecting and after every block that touched the game,
   * reads the game record at the newest block's time and acts:
   * - a challenge due on this seat, before its deadline, is answered with the moves held
   *   (`respond`), at once; a challenge owed a move not held yet is answered as soon as it is;
   * - when the opponent's game key signed two moves for one position (seen on the board, the
   *   relay, or in a challenge whose history contradicts a move held), the equivocation proof is
   *   sent;
   * - every request or op that fails in a way that may go away (429, honouring `retry-after`;
   *   5xx; no answer) is tried again with capped, jittered exponential backoff, forever.
   * `onAction({kind: 'respond'|'prove_equivocation'|'final'|'missed'|'refused', …})` tells what
   * it did, `onRetry({what, error, waitMs})` each wait. Resolves to `{done, close()}`: `done`
   * resolves to `'final'` once the result is final (then it stops) or `'closed'`.
   */
  async watch({ onAction, onRetry, onMove, onRefused, onBlock, onError, fromHeight, backoff } = {}) {
    const b = backoff ?? new Backoff();
    let closed = false;
    let finish;
    const done = new Promise((r) => { finish = r; });
    const state = { tried: new Set(), proved: new Set(), missed: new Set(), pending: true };
    let running = false;
    let again = false;
    const tell = (a) => { try { onAction?.(a); } catch { /* the caller's */ } };
    const retry = async (what, fn) => {
      for (;;) {
        if (closed) throw Object.assign(new Error('the watch was closed'), { closedWatch: true });
        try {
          const v = await fn();
          b.reset();
          return v;
        } catch (e) {
          if (!transient(e)) throw e;
          const waitMs = b.next(e);
          try { onRetry?.({ what, error: e, waitMs }); } catch { /* the caller's */ }
          await sleep(waitMs);
        }
      }
    };
    const step = async () => {
      if (this.headTimeMs == null) await retry('reading the head block', () => this.blockTime());
      const rec = await retry('reading the game', () => this.refresh());
      state.pending = false;
      if (rec.final) {
        tell({ kind: 'final', record: rec });
        return true;
      }
      const playing = rec.status === 'open' || rec.status === 'challenged' || rec.status === 'concluding';
      const ev = this.evidence;
      if (playing && ev && ev.seat !== this.seat && this.seat !== null && !state.proved.has(ev.a.n)) {
        state.proved.add(ev.a.n);
        try {
          const receipt = await retry('sending the equivocation proof', () => this.proveEquivocation());
          tell({ kind: 'prove_equivocation', move: ev.a.n, receipt });
          return false; // the next pass reads the result
        } catch (e) {
          if (e.closedWatch) throw e;
          if (!(e instanceof ChannelError && e.code === 'refused')) { state.proved.delete(ev.a.n); throw e; }
          tell({ kind: 'refused', op: 'prove_equivocation', error: e });
        }
      }
      const c = rec.challenge;
      if (rec.status !== 'challenged' || !c || c.due !== this.seat) return false;
      const key = `${c.moves}:${c.deadline_ms}`;
      if (this.headTimeMs > c.deadline_ms) {
        if (!state.missed.has(key)) { state.missed.add(key); tell({ kind: 'missed', challenge: c }); }
        return false;
      }
      if (state.tried.has(key)) return false;
      if (this.moves.length <= c.moves) { state.pending = true; return false; }
      state.tried.add(key);
      try {
        const receipt = await retry('answering the challenge', () => this.respond());
        tell({ kind: 'respond', from: c.moves, to: this.moves.length - 1, receipt });
      } catch (e) {
        if (e.closedWatch) throw e;
        if (!(e instanceof ChannelError && (e.code === 'refused' || e.code === 'no_challenge'))) { state.tried.delete(key); throw e; }
        tell({ kind: 'refused', op: 'respond', error: e });
      }
      state.pending = true;
      return false;
    };
    const run = async () => {
      if (running) { again = true; return; }
      running = true;
      try {
        do {
          again = false;
          let isFinal = false;
          try {
            isFinal = await step();
          } catch (e) {
            if (e.closedWatch || closed) return;
            state.pending = true;
            try { onError?.(e); } catch { /* the caller's */ }
          }
          if (isFinal) { stop('final'); return; }
        } while (again && !closed);
      } finally {
        running = false;
      }
    };
    let sub = null;
    const stop = (why) => {
      if (closed) return;
      closed = true;
      if (sub) sub.close();
      finish(why);
    };
    sub = await retry('opening the game feed', () => this.listen({
      fromHeight,
      onMove: (r) => { onMove?.(r); if (r.status === 'equivocation' || state.pending) run(); },
      onRefused,
      onError,
      onOpen: () => run(),
      onBlock: async (block) => {
        if (onBlock) await onBlock(block);
        const r = this.record;
        const ripe = r && r.status === 'concluding' && r.outcome && this.headTimeMs >= r.outcome.final_at_ms;
        if (this.changed || state.pending || ripe) { this.changed = false; run(); }
      },
    }));
    if (closed) sub.close();
    run();
    return { done, close: () => stop('closed'), get subscription() { return sub; } };
  }

  async send(op, label) {
    return sendOp(this.chain, this.account, this.module, { ...op, game: this.game }, label);
  }

  /** Every move from move `from`, at most 64 (an op's limit). */
  history(from = 0) {
    const moves = this.moves.slice(from);
    if (moves.length > MAX_MOVES_PER_OP) throw new ChannelError('too_many_moves', `${moves.length} moves, an op carries at most ${MAX_MOVES_PER_OP}: checkpoint longer games`);
    return moves;
  }

  /**
   * `settle`: the whole history, which must end the game (ChannelError `not_over` otherwise).
   * The result is final one window later (then {@link Channel#withdraw}). Resolves to the receipt;
   * a refusal in the block is ChannelError `refused` (as for every op below).
   */
  async settle() {
    if (!this.over) throw new ChannelError('not_over', 'the moves do not end the game: settle needs a finished history');
    return this.send({ kind: 'settle', moves: this.history(), from_checkpoint: false }, 'settle');
  }

  /** `challenge`: posts the history; the seat due next must answer within the window. */
  async challenge() {
    if (this.myTurn) throw new ChannelError('not_your_turn', 'it is your own turn: make your move (a challenge needs the other seat due)');
    return this.send({ kind: 'challenge', moves: this.history(), from_checkpoint: false }, 'challenge');
  }

  /** `respond`: the moves after the challenged one (read from the game record). */
  async respond() {
    const r = await this.refresh();
    if (r.status !== 'challenged' || !r.challenge) throw new ChannelError('no_challenge', `the game is ${r.status}, not challenged`);
    const from = r.challenge.moves;
    if (!Number.isSafeInteger(from) || from >= this.moves.length) throw new ChannelError('no_move', `no move after move ${from - 1} to answer with: play first`);
    return this.send({ kind: 'respond', moves: this.history(from) }, 'respond');
  }

  /** `claim_forfeit`: after the challenge deadline, the seat that was due loses. */
  async claimForfeit() {
    return this.send({ kind: 'claim_forfeit' }, 'claim_forfeit');
  }

  /** `prove_equivocation` with the evidence `receive` found (or `{a, b, prev}` given). */
  async proveEquivocation(evidence = this.evidence) {
    if (!evidence) throw new ChannelError('no_evidence', 'no two moves signed by one seat for one position are known');
    const { a, b, prev } = evidence;
    return this.send({ kind: 'prove_equivocation', a, b, prev_a: prev, prev_b: prev }, 'prove_equivocation');
  }

  /** `withdraw`: pays out a final result (anyone may send it; the money goes to the players). */
  async withdraw() {
    return this.send({ kind: 'withdraw' }, 'withdraw');
  }

  // The lobby.

  /**
   * `offer`: escrows `stake` (base units, a string; `'0'`: an unstaked game, a result without
   * payout) for a game of the rules `rules` (a module id) and/or `rulesCode` (a code hash), with a
   * response window of `windowMs` milliseconds of block time (300,000–259,200,000, default
   * 600,000). The rules are pinned: a module id is resolved here to the code hash its record
   * names, and the offer carries both, so the chain refuses it if that module runs other code by
   * then. A stake above 0 is refused (ChannelError `mutable_module`) when the channel module's
   * record says its owner can change it at once (`policy.kind` `owner`), unless `allowMutable`.
   * Code that no genesis module runs is refused (ChannelError `unknown_rules`, the text of
   * {@link rulesCodeRefusal}) unless `acceptRulesCode` is that exact hash (naming the rules by
   * `rulesCode` is not enough). Nothing is sent before these checks. Resolves to `{id, receipt}`.
   * Throws ChannelError `bad_window`, `not_deployed`, `mutable_module`, `unknown_rules`,
   * `refused`.
   * @param {import('../chain/chain.js').Chain} chain
   * @param {import('../keys/key.js').Key} key the creator (seat 0)
   * @param {{rules?: string, rulesCode?: string, stake: string, windowMs?: number, signer?: string, guard?: {module: string, entry: string}, module?: string, allowMutable?: boolean, acceptRulesCode?: string}} offer
   */
  static async offer(chain, key, { rules, rulesCode, stake, windowMs = DEFAULT_WINDOW_MS, signer, guard, module = 'channel', allowMutable = false, acceptRulesCode }) {
    checkAmount(stake, 'stake');
    checkWindow(windowMs);
    if (!rules && !rulesCode) throw new Error('offer: name the rules: rules (a module id) or rulesCode (a code hash)');
    if (rulesCode !== undefined && (typeof rulesCode !== 'string' || !/^[0-9a-fA-F]{64}$/.test(rulesCode))) throw new Error('offer: rulesCode must be 64 hex digits');
    checkAcceptRulesCode(acceptRulesCode, 'offer');
    await checkEscrowPolicy(chain, module, stake, allowMutable);
    let code = rulesCode?.toLowerCase();
    if (rules) {
      const runs = String((await moduleRecord(chain, rules)).code_hash ?? '').toLowerCase();
      if (!/^[0-9a-f]{64}$/.test(runs)) throw new ChannelError('bad_record', `module ${rules} has no code hash`);
      if (code && code !== runs) throw new ChannelError('bad_record', `rules module ${rules} runs code ${runs}, not the rulesCode given (${code})`);
      code = runs;
    }
    const refusal = await rulesCodeRefusal(chain, code, { rules, acceptRulesCode });
    if (refusal) throw new ChannelError('unknown_rules', refusal, { rulesCode: code });
    const op = { kind: 'offer', rules_code: code, stake, window_ms: windowMs };
    if (rules) op.rules = rules;
    if (signer) op.signer = signer;
    if (guard) op.guard = guard;
    const receipt = await sendOp(chain, key, module, op, 'offer');
    const ev = eventOf(receipt, 'offer_created');
    if (!ev || !isId(ev.data.offer)) throw new ChannelError('bad_record', 'the offer receipt has no offer_created event');
    return { id: ev.data.offer, receipt };
  }

  /**
   * `join`: escrows the offer's stake and opens the game (same id). The game runs the code the
   * offer pinned, whatever it is: code that no genesis module runs is refused (ChannelError
   * `unknown_rules`, the text of {@link rulesCodeRefusal}) unless `acceptRulesCode` is that exact
   * hash. A stake above 0 is refused (ChannelError `mutable_module`) as for {@link Channel.offer}
   * unless `allowMutable`. Nothing is sent before these checks. Resolves to `{id, receipt}`.
   */
  static async join(chain, key, offer, { signer, module = 'channel', allowMutable = false, acceptRulesCode } = {}) {
    if (!isId(offer)) throw new Error('join: the offer id must be 16 hex digits');
    checkAcceptRulesCode(acceptRulesCode, 'join');
    const rec = await chain.game(module, { offer });
    if (!rec || typeof rec.rules_code !== 'string') throw new ChannelError('bad_record', `offer ${offer}: the record names no rules code`);
    const refusal = await rulesCodeRefusal(chain, rec.rules_code, { offer, rules: rec.rules, acceptRulesCode });
    if (refusal) throw new ChannelError('unknown_rules', refusal, { rulesCode: rec.rules_code });
    if (!allowMutable) {
      await checkEscrowPolicy(chain, module, checkAmount(String(rec?.stake ?? ''), 'the offer\'s stake'), false);
    }
    const op = { kind: 'join', offer };
    if (signer) op.signer = signer;
    const receipt = await sendOp(chain, key, module, op, 'join');
    return { id: offer, receipt };
  }

  /** `cancel`: the creator takes an open offer back (stake refunded). Resolves to the receipt. */
  static async cancel(chain, key, offer, { module = 'channel' } = {}) {
    if (!isId(offer)) throw new Error('cancel: the offer id must be 16 hex digits');
    return sendOp(chain, key, module, { kind: 'cancel', offer }, 'cancel');
  }

  /**
   * How many offers the channel has made (ids are a counter from 0): probes `{offer}` views,
   * upwards from `hint` (a count known before) or by doubling then halving.
   */
  static async offerCount(chain, { module = 'channel', hint = 0 } = {}) {
    let lo = 0;
    if (hint > 0 && (await offerExists(chain, module, hint - 1))) lo = hint;
    for (let i = 0; i < 8; i++, lo++) if (!(await offerExists(chain, module, lo))) return lo;
    let hi = Math.max(lo * 2, 16);
    while (await offerExists(chain, module, hi - 1)) { lo = hi; hi *= 2; if (hi > 2 ** 40) throw new ChannelError('bad_record', 'too many offers'); }
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      if (await offerExists(chain, module, mid)) lo = mid + 1; else hi = mid;
    }
    return lo;
  }

  /**
   * The latest offers (newest first, among the last `scan`, default 30, at most 200), optionally only those of
   * the rules module `rules` and with `status` (e.g. `'open'`). Resolves to `{count, offers}`.
   * `read(id)` reads one offer record (default `chain.game(module, {offer: id})`; a page passes
   * its typed client's `viewOffer`); a record it cannot read is left out.
   */
  static async offers(chain, { rules, status, module = 'channel', scan = 30, count, read } = {}) {
    const total = count ?? (await Channel.offerCount(chain, { module }));
    const ids = [];
    for (let i = total - 1; i >= 0 && ids.length < Math.min(scan, 200); i--) ids.push(offerId(i));
    const readOne = read ?? ((id) => chain.game(module, { offer: id }));
    const records = await Promise.all(ids.map((id) => readOne(id).catch(() => null)));
    const offers = records.filter((o) => o && isId(o.id) && (!rules || o.rules === rules) && (!status || o.status === status));
    return { count: total, offers };
  }
}
