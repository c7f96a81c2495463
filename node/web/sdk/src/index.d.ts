// index.d.ts: the types of the SDK's public surface (src/index.js). Shapes follow node/API.md.

export type Network = 'mainnet' | 'testnet';

export declare class Key {
  constructor(secret: Uint8Array, network?: Network);
  static generate(network?: Network): Key;
  static fromSecret(secret: Uint8Array, network?: Network): Key;
  static fromWif(wif: string): Key;
  readonly network: Network;
  readonly publicKey: Uint8Array;
  readonly address: string;
  readonly publicKeyHex: string;
  toWif(): string;
  signMessage(text: string | Uint8Array): string;
  toString(): string;
  toJSON(): { network: Network; address: string };
}

export declare const MAGIC: string;
export declare function messageHash(message: string | Uint8Array, magic?: string | Uint8Array): Uint8Array;
export declare function recoverPublicKey(message: string | Uint8Array, signature: string, magic?: string | Uint8Array): Uint8Array;
export declare function recoverAddress(network: Network, message: string | Uint8Array, signature: string): string;
export declare function verifyMessage(address: string, message: string | Uint8Array, signature: string): boolean;
export declare function parseAddress(address: string): { network: Network; hash: Uint8Array };
export declare function addressFromPublicKey(network: Network, publicKey: Uint8Array): string;
export declare function hash160(data: Uint8Array): Uint8Array;
export declare const NETWORKS: Readonly<Record<Network, Readonly<{ pubkey: number; wif: number }>>>;
export declare function txidOf(body: string): string;

export declare class ChainError extends Error {
  constructor(code: string, message: string, status?: number, extra?: { txid?: string; retryAfter?: number; retries?: number; waitedMs?: number });
  /** The node's code (`bad_nonce`, `not_found`, …) or `network`, `request_timeout`, `bad_answer`, `too_large`, `receipt_timeout`. */
  code: string;
  /** HTTP status; 0 when there was no answer. */
  status: number;
  txid?: string;
  retryAfter?: number;
  /** `bad_nonce`: the nonce the node names. */
  expected?: number;
  /** On a `rate_limited` error the Chain gave up on: times it asked again, ms it waited in all. */
  retries?: number;
  waitedMs?: number;
}

export type Action =
  | { type: 'faucet'; token: string }
  | { type: 'transfer'; to: string; token: string; amount: string }
  | { type: 'game'; game: string; op: Record<string, unknown> }
  | { type: 'deploy'; module: string; code: string }
  | { type: 'authorize_session'; key: string; modules: string[]; expires_at_ms: number; cap: string }
  | { type: 'revoke_session'; key: string }
  | { type: 'session_game'; account: string; session: number; game: string; op: Record<string, unknown> };

/** One session of an account (`GET /v1/account/<address>/sessions`). */
export interface SessionInfo { key: string; id: number; modules: string[]; expires_at_ms: number; cap: string; spent: string; active: boolean }
export interface SessionList { account: string; sessions: SessionInfo[] }
/** What `Session#toJSON` keeps: the session key's WIF (private), its account and id. */
export interface KeptSession { account: string; key: string; session: number }

/** Most module ids in one session's scope (16). */
export declare const MAX_SESSION_MODULES: number;
/** Longest a session may live, ms of block time after its authorization (30 days). */
export declare const MAX_SESSION_HORIZON_MS: number;

/**
 * A session key acting for an account (docs/session-keys.md): `send` signs a `session_game` with
 * the session key, for the account, at the account's next nonce. Outside the scope, after the
 * expiry or revocation, or with the cap used up, the node refuses it: ChainError
 * `session_refused` (403) with the fixed text.
 */
export declare class Session {
  constructor(chain: Chain, key: Key, account: string, id: number);
  readonly chain: Chain;
  readonly key: Key;
  /** The main key's address it acts for. */
  readonly account: string;
  /** The session id: the account's nonce of the authorization. */
  readonly id: number;
  /** The session key's address. */
  readonly address: string;
  sign(game: string, op: Record<string, unknown>, options?: { chainId?: string; nonce?: number }): Promise<SignedTx>;
  send(game: string, op: Record<string, unknown>): Promise<string>;
  sendAndWait(game: string, op: Record<string, unknown>, options?: { timeoutMs?: number; pollMs?: number }): Promise<Receipt>;
  toJSON(): KeptSession;
}

export interface Event { kind: string; data: Record<string, unknown> }
export interface TxReceipt { ok: boolean; error?: string | null; events: Event[]; fuel_used: number }
export interface Receipt { txid: string; height: number; index: number; ok: boolean; error: string | null; events: Event[]; fuel_used: number }
export interface BlockTx { txid: string; body: string; signature: string; receipt: TxReceipt }
/** A block header: `beacon` (96 hex, a BLS12-381 G1 signature) on every block after 0 of a chain whose genesis names a beacon key; absent otherwise. */
export interface BlockHeader {
  height: number; prev_hash: string; time_ms: number; sequencer: string; checkpoint: { height: number; hash: string };
  tx_root: string; receipt_root: string; state_root: string;
  beacon?: string;
}
/** A scheduled call the block ran at its start, before its transactions, with its receipt. */
export interface ScheduledCallReceipt { module: string; id: number; receipt: TxReceipt }
export interface Block {
  height: number;
  hash: string;
  header: BlockHeader;
  signature: string;
  /** The scheduled calls run at the block's start, in order (absent when none ran). */
  scheduled?: ScheduledCallReceipt[];
  txs: BlockTx[];
  end_block: { module: string; receipt: TxReceipt }[];
}
/** The genesis's beacon: its scheme and public key (192 hex, a compressed G2 point). */
export interface GenesisBeacon { scheme: 'bls12381-minsig' | 'bls12381-minsig-threshold' | string; public_key: string; threshold?: number }
export interface Status {
  chain_id: string; network: Network; height: number; head_hash: string; state_root: string; sequencer: string;
  genesis_hash: string; engine_config_hash: string; pending: number; version: string;
}
export interface Account { account: string; balances: Record<string, string>; nonce: number; next_nonce: number }
/** A state proof against a sparse Merkle state root (node/API.md, "State and proofs"). */
export interface StateProof { siblings: string[]; leaf: { key_hash: string; value_hash: string } | null }
/** `GET /v1/state/<key>[?proof]`: one entry at the head block (`value` base64, null when absent). */
export interface StateEntry {
  key: string; value: string | null; header: BlockHeader; signature: string;
  commitment: 'sparse_merkle' | 'lthash16'; proof: StateProof | null;
  /** With the proof, on a chain with validators: what proves the block final. */
  finality?: StepFinality;
}
/** A state entry checked from the genesis alone (`final` when checked with `finality`). */
export interface ProvenState { value: Uint8Array | null; height: number; blockHash: string; final?: true }
/** One state entry a view read, with its proof (`value` base64, null when proven absent). */
export interface ProvenRead { key: string; value: string | null; proof: StateProof }
/** `GET /v1/games/<module>/proof?<query>`: a view's answer with every entry it read, proven (node/API.md, "Views with proofs"). */
export interface ViewProof {
  module: string; query: Record<string, string>; header: BlockHeader; signature: string;
  commitment: 'sparse_merkle' | 'lthash16';
  /** The view's JSON value; absent when it answered an error. */
  value?: any;
  /** The view's error as its display text (`not found: game abc`); absent with a value. */
  error?: string;
  code_hash: string;
  /** Sorted by key (UTF-8 bytes), each once, at most 256, the module's record `module/<module>` among them. */
  reads: ProvenRead[];
}
/** What verifyView proved: the view's value (null with an error) or error, at which block, from how many reads. */
export interface ProvenView { value: any; error: string | null; height: number; blockHash: string; reads: number; final?: true }
/** A chain with validators: what proves a view's block final (verifyView's `finality`). */
export interface ViewFinality {
  /** The genesis's `validators`. */
  validators: { set: { address: string; consensus_key: string }[] };
  /** The genesis's chain id and hash (the certificates' namespace). */
  chainId: string; genesisHash: string;
  /** The block's finality record in a transcript step's shape, when not the answer's own `finality`. */
  record?: StepFinality;
}
export interface TxRecord {
  txid: string; status: 'pending' | 'included'; body: string; signature: string;
  height: number | null; index: number | null; receipt: TxReceipt | null;
}
/** A module's upgrade policy, on nodes that have them (absent on older nodes). */
export interface ModulePolicy { kind: 'immutable' | 'timelocked' | 'owner' | string; [field: string]: unknown }
export interface ModuleRecord { id: string; abi_version: number; code_hash: string; deployed_height: number; owner: string | null; upgraded_height?: number; policy?: ModulePolicy }
export interface SignedTx { body: string; signature: string; txid: string }
export interface Subscription { readonly mode: 'websocket' | 'polling'; readonly lastHeight: number | null; close(): void }

export interface ChainOptions {
  fetch?: typeof fetch;
  /** Default the global WebSocket, else (Node 20) the `ws` package's; `null` polls on purpose. */
  WebSocket?: typeof WebSocket | null;
  timeoutMs?: number;
  maxAnswerBytes?: number;
  /** Times one call answered `429 rate_limited` is asked again (default 8; 0: never). */
  rateLimitRetries?: number;
  /** Most time one call spends waiting out `429`s, ms (default 60000). */
  rateLimitMaxWaitMs?: number;
  /** Told before each wait after a `429`. */
  /** `send` signs an action again after `bad_nonce` (default false: a lying node could submit both). */
  resignOnBadNonce?: boolean;
  onRateLimited?: (info: { method: string; path: string; retry: number; waitMs: number; retryAfter?: number }) => void;
  /** Told when a subscription, receipt wait or move relay polls for want of a WebSocket (default: one console.warn). */
  onFallback?: (info: { what: string; reason: string }) => void;
}

export declare const RATE_LIMIT_RETRIES: number;
export declare const RATE_LIMIT_MAX_WAIT_MS: number;
/** The longest `retry-after` (seconds) the SDK honours; a larger one counts as this (an hour). */
export declare const MAX_RETRY_AFTER_S: number;

export declare class Chain {
  constructor(url: string, options?: ChainOptions);
  readonly url: string;
  /** The WebSocket class used (resolved on first use), or null: then receipts and subscriptions poll. */
  WebSocket: typeof WebSocket | null;
  /** Where it comes from: the option, the global, the `ws` package, `off` (`WebSocket: null`) or `none`. */
  readonly webSocketSource: 'option' | 'global' | 'ws' | 'off' | 'none';
  /** Why there is none (`webSocketSource` `'none'`). */
  readonly webSocketMissing: string | undefined;
  status(): Promise<Status>;
  genesis(): Promise<Record<string, unknown>>;
  account(account: string): Promise<Account>;
  /** `GET /v1/state/<key>[?proof]`, unchecked: see verifyStateEntry / getStateProven. */
  state(key: string, options?: { proof?: boolean }): Promise<StateEntry>;
  tx(txid: string, options?: { signal?: AbortSignal }): Promise<TxRecord>;
  block(which?: number | 'latest', options?: { signal?: AbortSignal }): Promise<Block>;
  game(module: string, query?: Record<string, string | number>): Promise<any>;
  /** `GET /v1/games/<module>/proof?<query>`, unchecked: see verifyView / getViewProven. A scanning view is ChainError `no_proofs` (409). */
  viewProof(module: string, query?: Record<string, string | number>): Promise<ViewProof>;
  /** `GET /v1/games/<module>/<id>/transcript` (node/API.md, "Transcripts"). */
  transcript(module: string, id: string): Promise<Transcript>;
  modules(): Promise<{ modules: ModuleRecord[] }>;
  module(id: string): Promise<ModuleRecord>;
  /** `GET /v1/code/<hash>`: the wasm bytes, checked to hash (SHA-256) to `hash`; at most `maxBytes` (4 MiB). */
  code(hash: string, options?: { maxBytes?: number }): Promise<Uint8Array>;
  chainId(): Promise<string>;
  sign(key: Key, action: Action, options?: { chainId?: string; nonce?: number }): Promise<SignedTx>;
  post(tx: { body: string; signature: string }): Promise<string>;
  /** Throws ChainError `bad_nonce` (with `expected`) unless `resignOnBadNonce` (see the README: trust the node first). */
  send(key: Key, action: Action, options?: { resignOnBadNonce?: boolean }): Promise<string>;
  /** `GET /v1/account/<address>/sessions`. */
  sessions(account: string): Promise<SessionList>;
  /**
   * One main-key transaction authorizing a session key (new unless `key` is given) over `modules`
   * until `expiresAtMs` (or `expiresInMs`, default 1 h, after the head's block time), moving at
   * most `cap` GOLD base units; waits for its receipt. Throws ChainError (`session_failed`).
   */
  authorizeSession(mainKey: Key, options: { modules: string[]; cap: string | number | bigint; expiresAtMs?: number; expiresInMs?: number; key?: Key; timeoutMs?: number }): Promise<Session>;
  /** A kept session bound to this Chain. */
  session(kept: KeptSession): Session;
  /** One main-key transaction revoking the session at once; the txid. */
  revokeSession(mainKey: Key, session: Session | string): Promise<string>;
  waitForReceipt(txid: string, options?: { timeoutMs?: number; pollMs?: number }): Promise<Receipt>;
  subscribe(
    onBlock: (block: Block) => void | Promise<void>,
    options?: { fromHeight?: number; pollMs?: number; onOpen?: () => void; onError?: (e: Error) => void },
  ): Subscription;
  /**
   * A live query of one module's events (`GET /v1/ws/events`, node/API.md): each block's matching
   * events once, in height order, across reconnects; the head after every block.
   */
  subscribeGame(
    module: string,
    onEvents: (batch: GameEvents) => void | Promise<void>,
    options?: {
      game?: string;
      player?: string;
      fromHeight?: number;
      onHead?: (head: { height: number; time_ms: number }) => void | Promise<void>;
      onOpen?: () => void;
      onError?: (e: Error) => void;
    },
  ): GameSubscription;
  /** One request; `429`s waited out (`rateLimitRetries`, `rateLimitMaxWaitMs`); `signal` stops the waits. */
  request(method: string, path: string, body?: unknown, options?: { signal?: AbortSignal }): Promise<any>;
}

/** One event of a module as `GET /v1/ws/events` sends it; `txid`, `tx_index`, `sender` are null for end-block events. */
export interface GameEvent {
  txid: string | null;
  tx_index: number | null;
  /** The account the transaction acts for (null for a scheduled call's or end-block event). */
  sender: string | null;
  /** The scheduled call that emitted it (absent for a transaction's or end-block event). */
  call?: number;
  /** Its position in its receipt. */
  index: number;
  kind: string;
  data: unknown;
}

/** One block's matching events. */
export interface GameEvents {
  height: number;
  time_ms: number;
  events: GameEvent[];
}

export interface GameSubscription {
  readonly mode: 'websocket' | 'polling';
  /** The first height whose events are not delivered yet (null before the first message). */
  readonly nextHeight: number | null;
  close(): void;
}

/** The events of `module` in a block (as GET /v1/blocks/<height> answers it), by the node's rule. */
export declare function eventsOfBlock(block: Block, module: string, filter?: { game?: string | null; player?: string | null }): GameEvent[];

// Off-chain games (docs/channels.md).

export declare const MAX_RULES_BYTES: number;
export declare const MAX_MOVES_PER_OP: number;
export declare const MAX_MOVES_PER_GAME: number;
/** Response windows, ms of block time: 300,000 (5 min) to 259,200,000 (3 days); the offer's default 600,000. */
export declare const MIN_WINDOW_MS: number;
export declare const MAX_WINDOW_MS: number;
export declare const DEFAULT_WINDOW_MS: number;

export declare class RulesError extends Error {}

/** `u64 n ‖ u8 mover ‖ u32 state_len ‖ state ‖ data`, little-endian (sdk-guest `encode_move`). */
export declare function encodeMove(n: number, mover: number, state: Uint8Array, data: Uint8Array): Uint8Array;

/** A rules `.wasm` running here (`WebAssembly.instantiate(bytes, {})`), its `gc_pure_*` exports as methods. */
export declare const MAX_RULES_MEMORY_BYTES: number;
export declare const RULES_TIMEOUT_MS: number;
/** The wasm with its one memory's maximum capped at `maxPages` (RulesError for a memory starting above it). */
export declare function capMemory(code: Uint8Array, maxPages: number): Uint8Array;

/**
 * A rules `.wasm` running here: every call on a fresh instance (as on the chain), memory capped at
 * 16 MiB, in a Worker with a timeout (`worker: 'auto'` falls back to this thread where none starts).
 */
export declare class Rules {
  static load(wasm: Uint8Array | ArrayBuffer, options?: { maxBytes?: number; timeoutMs?: number; worker?: 'auto' | 'always' | 'never' }): Promise<Rules>;
  readonly module: WebAssembly.Module;
  /** Longest a call may run (ms, default 5000) before it is a RulesError and its worker is ended. */
  timeoutMs: number;
  /** Whether calls run in a Worker (null before the first call). */
  readonly isolated: boolean | null;
  /** Workers started so far. */
  readonly workers: number;
  /** Ends the worker; a later call starts another. */
  close(): void;
  /** One raw export call: the answer's bytes (at most `max`), null for a refusal. */
  call(entry: string, input: Uint8Array, max?: number): Promise<Uint8Array | null>;
  /** The state before move 0 of the game tagged `tag` (32 bytes). */
  initialState(tag: Uint8Array): Promise<Uint8Array>;
  moverAt(n: number): Promise<0 | 1>;
  validateMove(state: Uint8Array, n: number, mover: number, data: Uint8Array): Promise<boolean>;
  applyMove(state: Uint8Array, n: number, mover: number, data: Uint8Array): Promise<Uint8Array>;
  isOver(state: Uint8Array): Promise<boolean>;
  /** A seat, or null for a draw; RulesError before the end. */
  winner(state: Uint8Array): Promise<0 | 1 | null>;
}

export interface Domain { chain: string; module: string }
export interface SignedMove { n: number; data: string; sig: string }
export interface ChannelStore {
  get(key: string): string | null | Promise<string | null>;
  set(key: string, value: string): void | Promise<void>;
}
export type ChannelErrorCode =
  | 'malformed' | 'too_large' | 'out_of_order' | 'bad_signature' | 'wrong_mover' | 'illegal' | 'game_over'
  | 'not_your_turn' | 'not_a_player' | 'already_signed' | 'too_many_moves' | 'refused' | 'no_challenge'
  | 'no_evidence' | 'no_move' | 'not_over' | 'not_deployed' | 'bad_record' | 'bad_window' | 'mutable_module'
  | 'unknown_rules';

export declare class ChannelError extends Error {
  constructor(code: ChannelErrorCode, message: string, extra?: Record<string, unknown>);
  code: ChannelErrorCode;
  /** Set for `refused`: the failed transaction's receipt. */
  receipt?: Receipt;
  /** Set for `already_signed`: the move signed before, which was sent again. */
  move?: SignedMove;
  /** Set for `mutable_module`: the module that would hold the stake, and its policy. */
  module?: string;
  policy?: ModulePolicy;
  /** Set for `unknown_rules`: the rules code hash refused (no genesis module runs it). */
  rulesCode?: string;
}

/** Whether an error may go away by itself (429, 5xx, no answer, a receipt timeout). */
export declare function transient(e: unknown): boolean;
/** Capped exponential backoff with jitter, at least the node's `retry-after`. */
export declare class Backoff {
  constructor(options?: { baseMs?: number; capMs?: number; random?: () => number });
  /** The next wait (ms); `error.retryAfter` (seconds) is honoured. */
  next(error?: { retryAfter?: number }): number;
  reset(): void;
  readonly failures: number;
}

/** A move relay answer: `{to}` (how many of the opponent's connections got the move; 0: none) or `{error}`. */
export type RelayAnswer = { to: number; error?: undefined } | { error: 'not_connected' | 'closed' | 'timeout' | 'bad_json' | 'bad_signature' | 'rate_limited' | string; message?: string; to?: undefined };
/** The text a relay hello signs: `gamechain relay hello v1`, chain, `module: channel`, game, seat, `time_ms` (node/API.md "Move relay"). */
export declare function relayHelloText(chain: string, game: string, seat: 0 | 1, timeMs: number): string;
/** The upgrade query of a relay connection: `seat=…&time=…&sig=…`, `key`'s signature of `relayHelloText` at `timeMs` (default: now, never the same twice). */
export declare function relayHelloQuery(key: Key, chain: string, game: string, seat: 0 | 1, timeMs?: number): string;
/** One seat's connection to the node's move relay of a game (`GET /v1/relay/<game>`, opened with a hello signed by the seat's game key), reconnecting with backoff. */
export declare class MoveRelay {
  constructor(chain: Chain, game: string, options: {
    /** The seat's game key: signs the hello at each connection. */
    key: Key;
    seat: 0 | 1;
    /** The chain's genesis hash (the channel's view `{}`: `chain`; a Channel's `domain.chain`). */
    genesis: string;
    onMove?: (move: SignedMove, msg: { type: 'move'; game: string; seat: 0 | 1; move: SignedMove; prev: string }) => void;
    /** The opponent's connections changed (`count`), and once on connecting. */
    onPeers?: (count: number, before: number) => void;
    onOpen?: () => void;
    onClose?: (code: number) => void;
  });
  readonly available: boolean;
  readonly open: boolean;
  /** The other seat's connections, as the node last said. */
  readonly peers: number;
  readonly opens: number;
  readonly seat: 0 | 1;
  send(move: SignedMove, prev: string, options?: { timeoutMs?: number }): Promise<RelayAnswer>;
  close(): void;
}

/** Shortest timelock (ms) a stake is escrowed under without `allowMutable`: 7 days. */
export declare const MIN_SAFE_TIMELOCK_MS: number;
/** Refuses (ChannelError `mutable_module`) a stake above 0, unless `allowMutable`, in a module whose record has `policy.kind` `owner`, a `timelocked` delay under {@link MIN_SAFE_TIMELOCK_MS}, or a `pending_upgrade`. */
export declare function checkEscrowPolicy(chain: Chain, module: string, stake: string, allowMutable?: boolean): Promise<void>;
/** The owner `GET /v1/modules` gives every genesis module: `'system'`. */
export declare const GENESIS_OWNER: string;
/**
 * Which rules code a player agrees to play (docs/channels.md, "Rules that trap when their author
 * loses"): `null` when `code` is the code of a genesis module (owner {@link GENESIS_OWNER} in
 * `GET /v1/modules`, by hash whatever module the offer names) or `acceptRulesCode` is that exact
 * hash; else the refusal, one line: what the code is (the module running it, `rules` first, and
 * its owner), that it is no genesis module's, and how to opt in (`acceptRulesCode`). `offer`: the
 * offer id when joining. `modules`: the module list if the caller has it (else it is read).
 */
export declare function rulesCodeRefusal(chain: Chain, code: string, options?: { offer?: string; rules?: string | null; acceptRulesCode?: string; modules?: ModuleRecord[] }): Promise<string | null>;

export declare function stateHash(state: Uint8Array): string;
export declare function moveMessage(domain: Domain, game: string, n: number, prev: string, mover: string, data: Uint8Array | string): string;
/** `gamechain channel final v2`, with `valid_until_ms`. */
export declare function finalMessage(domain: Domain, game: string, state: string, validUntilMs: number): string;
export declare function gameTagText(domain: Domain, game: string): string;
/** The game's 32-byte tag: SHA-256 of `gameTagText`. */
export declare function gameTag(domain: Domain, game: string): Uint8Array;
export declare function checkpointMessage(domain: Domain, game: string, moves: number, state: string): string;
export declare function parseSignedMove(input: string | object): SignedMove;
export declare function memoryStore(): ChannelStore;

/** The channel's `{game}` view (docs/channels.md); times are block times in ms. */
export interface GameRecord {
  id: string; rules: string | null; rules_code: string; tag: string; stake: string; window_ms: number;
  players: [string, string]; signers: [string, string];
  status: 'open' | 'challenged' | 'concluding' | 'settled';
  checkpoint: { moves: number; state: string } | null;
  challenge: { due: 0 | 1; moves: number; state: string; deadline_ms: number } | null;
  outcome: { winner: 0 | 1 | null; how: 'history' | 'cooperative' | 'forfeit' | 'equivocation'; final_at_ms: number; state_hash: string | null } | null;
  paid: boolean;
  /** Whether the result stands at the view's `at_ms` (or, without it, is settled). */
  final: boolean;
  final_state_hash: string | null;
}
export interface OfferRecord {
  id: string; creator: string; signer: string; rules: string | null; rules_code: string; stake: string; window_ms: number;
  guard: { module: string; entry: string } | null; status: 'open' | 'filled' | 'cancelled';
}
/** How a move left: `via: 'relay'` (reached `to` connections) or `'board'` (a move board post). */
export type Delivery = { via: 'relay'; to: number; txid?: undefined; receipt?: undefined } | { via: 'board'; txid: string; receipt?: Receipt; to?: undefined };
export type PlayResult = Delivery & { move: SignedMove; resent: boolean };
export type ReceiveResult =
  | { status: 'applied'; move: SignedMove; via?: 'relay' }
  | { status: 'known' }
  | { status: 'equivocation'; seat: 0 | 1; via?: 'relay' };
export interface ChannelOptions {
  account?: Key; module?: string; moveboard?: string; store?: ChannelStore; fromHeight?: number; maxRulesBytes?: number;
  /** Whether `listen` opens the node's move relay (default true). */
  relay?: boolean;
}
export interface ChannelSubscription extends Subscription { readonly relay: MoveRelay | null }
export type WatchAction =
  | { kind: 'respond'; from: number; to: number; receipt: Receipt }
  | { kind: 'prove_equivocation'; move: number; receipt: Receipt }
  | { kind: 'final'; record: GameRecord }
  | { kind: 'missed'; challenge: NonNullable<GameRecord['challenge']> }
  | { kind: 'refused'; op: string; error: ChannelError };
export interface Watch {
  /** `'final'` once the result is final (the watch then stops), `'closed'` after `close()`. */
  readonly done: Promise<'final' | 'closed'>;
  close(): void;
  readonly subscription: ChannelSubscription;
}

export declare class Channel {
  constructor(chain: Chain, key: Key, game: string, options?: ChannelOptions);
  static open(chain: Chain, key: Key, game: string, options?: ChannelOptions): Promise<Channel>;
  load(): Promise<Channel>;
  readonly chain: Chain;
  readonly key: Key;
  readonly account: Key;
  readonly game: string;
  readonly module: string;
  readonly moveboard: string;
  readonly store: ChannelStore;
  readonly domain: Domain;
  readonly record: GameRecord;
  readonly seat: 0 | 1 | null;
  readonly rules: Rules;
  /** The rules code hash pinned at the offer (`record.rules_code`): the code run here. */
  readonly rulesHash: string;
  /** The game tag (32 bytes). */
  readonly tag: Uint8Array;
  /** The newest block's time read (ms), what deadlines are judged by; null before one. */
  readonly headTimeMs: number | null;
  /** The move relay while `listen` runs. */
  readonly relay: MoveRelay | null;
  readonly moves: SignedMove[];
  readonly hashes: string[];
  readonly state: Uint8Array;
  readonly over: boolean;
  readonly winner: 0 | 1 | null;
  readonly due: 0 | 1 | null;
  readonly evidence: { seat: 0 | 1; a: SignedMove; b: SignedMove; prev: string } | null;
  readonly n: number;
  readonly stateHash: string;
  readonly myTurn: boolean;
  storeKey(): string;
  getData(name: string): any;
  setData(name: string, value: unknown): Promise<void>;
  refresh(options?: { atMs?: number }): Promise<GameRecord>;
  /** The head block's time (ms), kept as `headTimeMs`. */
  blockTime(): Promise<number | null>;
  /** Block time left (ms) before `deadlineMs` by `headTimeMs` (0 once passed; null before a block). */
  timeLeft(deadlineMs: number): number | null;
  moveText(n: number, prev: string, mover: string, data: Uint8Array | string): string;
  play(data: Uint8Array | string, options?: { wait?: boolean }): Promise<PlayResult>;
  post(move: SignedMove, options?: { wait?: boolean; board?: boolean }): Promise<Delivery>;
  resend(options?: { wait?: boolean; board?: boolean }): Promise<Delivery>;
  openRelay(handlers?: { onMove?: (r: ReceiveResult) => void; onRefused?: (r: { status: 'refused'; error: Error; via: 'relay' }) => void; onPeers?: (count: number) => void }): MoveRelay | null;
  closeRelay(): void;
  /** This seat's last signed move when no post of it is known to have reached the node, else null. */
  unposted(): SignedMove | null;
  /** Merges what another writer of the same store kept (signed moves, helper values, later moves). */
  sync(): Promise<void>;
  receive(signed: string | SignedMove): Promise<ReceiveResult>;
  scanBlock(block: Block): Promise<Array<ReceiveResult | { status: 'refused'; error: Error }>>;
  listen(options?: {
    fromHeight?: number;
    onMove?: (r: ReceiveResult) => void;
    onRefused?: (r: { status: 'refused'; error: Error }) => void;
    onBlock?: (b: Block) => void | Promise<void>;
    onError?: (e: Error) => void;
    onOpen?: () => void;
    onPeers?: (count: number) => void;
    relay?: boolean;
  }): Promise<ChannelSubscription>;
  /** The watchtower: answers challenges with held moves, proves equivocations, retries forever; stops once final. */
  watch(options?: {
    fromHeight?: number;
    backoff?: Backoff;
    onAction?: (a: WatchAction) => void;
    onRetry?: (r: { what: string; error: Error; waitMs: number }) => void;
    onMove?: (r: ReceiveResult) => void;
    onRefused?: (r: { status: 'refused'; error: Error }) => void;
    onBlock?: (b: Block) => void | Promise<void>;
    onError?: (e: Error) => void;
  }): Promise<Watch>;
  history(from?: number): SignedMove[];
  settle(): Promise<Receipt>;
  challenge(): Promise<Receipt>;
  respond(): Promise<Receipt>;
  claimForfeit(): Promise<Receipt>;
  proveEquivocation(evidence?: { a: SignedMove; b: SignedMove; prev: string }): Promise<Receipt>;
  withdraw(): Promise<Receipt>;
  /**
   * `rules` (a module id, pinned to the code hash its record names) and/or `rulesCode`; `windowMs`
   * 300,000–259,200,000 (default 600,000); `stake` `'0'` is unstaked. A stake above 0 in a module
   * whose record has `policy.kind` `owner` is refused (`mutable_module`) unless `allowMutable`.
   * Code that no genesis module runs is refused (`unknown_rules`, {@link rulesCodeRefusal}'s text)
   * unless `acceptRulesCode` is that exact hash; nothing is sent then.
   */
  static offer(chain: Chain, key: Key, offer: { rules?: string; rulesCode?: string; stake: string; windowMs?: number; signer?: string; guard?: { module: string; entry: string }; module?: string; allowMutable?: boolean; acceptRulesCode?: string }): Promise<{ id: string; receipt: Receipt }>;
  /** Refuses (ChannelError `unknown_rules`, {@link rulesCodeRefusal}'s text; nothing sent) an offer whose pinned `rules_code` no genesis module runs, unless `acceptRulesCode` is that exact hash. */
  static join(chain: Chain, key: Key, offer: string, options?: { signer?: string; module?: string; allowMutable?: boolean; acceptRulesCode?: string }): Promise<{ id: string; receipt: Receipt }>;
  static cancel(chain: Chain, key: Key, offer: string, options?: { module?: string }): Promise<Receipt>;
  static offerCount(chain: Chain, options?: { module?: string; hint?: number }): Promise<number>;
  static offers(chain: Chain, options?: { rules?: string; status?: string; module?: string; scan?: number; count?: number; read?: (id: string) => Promise<any> }): Promise<{ count: number; offers: OfferRecord[] }>;
}

export declare const RPS_CHOICES: readonly ['rock', 'paper', 'scissors'];
export declare const RPS_COMMIT_DOMAIN: string;
export declare const RPS_STATE_BYTES: number;
/** `sha256("gamechain rps commit v2" ‖ tag ‖ seat ‖ choice ‖ salt)`. */
export declare function rpsCommitment(tag: Uint8Array, seat: 0 | 1, choice: 0 | 1 | 2, salt: Uint8Array): Uint8Array;
export declare function rpsReveal(choice: 0 | 1 | 2, salt: Uint8Array): Uint8Array;
export declare function rpsChoices(state: Uint8Array): [number | null, number | null];

export declare class Rps {
  constructor(channel: Channel);
  readonly channel: Channel;
  readonly phase: 'commit' | 'reveal' | 'over';
  readonly myChoice: 0 | 1 | 2 | null;
  commit(choice: 0 | 1 | 2, options?: { wait?: boolean }): Promise<PlayResult>;
  reveal(options?: { wait?: boolean }): Promise<PlayResult>;
  step(options?: { wait?: boolean }): Promise<boolean>;
  result(): { choices: [number | null, number | null]; over: boolean; winner: 0 | 1 | null };
}

// ---- verify.js: a game checked from its transcript (docs/verify-a-match.md) ----

/**
 * One step of a transcript: a transaction of the game (`txid`, `body`, …) or, in version 2, a
 * scheduled call of its module (`call`; no transaction fields; `index` its place among the
 * block's scheduled calls), its receipt, its block's signed header and proofs.
 */
export interface TranscriptStep {
  height: number;
  index: number;
  /** A scheduled call's step: which call. */
  call?: { module: string; id: number };
  txid?: string;
  body?: string;
  signature?: string;
  receipt: { ok: boolean; error: string | null; events: { kind: string; data: any }[]; fuel_used: number; fee?: string };
  header: { header: BlockHeader; signature: string };
  tx_count?: number;
  receipt_count: number;
  /** A transaction's leaf under `receipt_root` when it is not `index` (its block ran scheduled calls first). */
  receipt_index?: number;
  tx_proof?: string[];
  receipt_proof: string[];
  /** A chain with validators: what proves the block final (checked when `VerifyOptions.validators` is given). */
  finality?: StepFinality;
}

/** A step's finality record: the block's consensus digest from its parent's, its header and its transactions' signatures (hashed), chained through `links` (its descendants, at most 64) to `certificate` (Commonware's encoded ed25519 finalization, hex). */
export interface StepFinality {
  parent_digest: string;
  tx_count: number;
  signatures_hash: string;
  links?: { header_hash: string; header_signature: string; tx_count: number; signatures_hash: string }[];
  certificate: string;
}

/**
 * One player's starting balance (`start` of a transcript on a chain with state proofs): its
 * `bal/<account>/GOLD` (`value`, decimal text; absent: 0) in the block before its first step, whose
 * header hashes to that step's `prev_hash`, with the proof against its `state_root`; or, where the
 * node cannot prove it (the balance moved earlier in that block), `unproven` with the reason.
 */
export interface ProvenStart { account: string; header?: BlockHeader; value?: string; proof?: StateProof; /** Why the node cannot prove it (then it starts from `start_balances`' declared amount). */ unproven?: string }

/**
 * `GET /v1/games/<module>/<id>/transcript`. `start_balances` is declared by the node on a chain
 * without state proofs; on one with them `start` proves each amount and `log` the game's steps.
 */
export interface Transcript {
  /** 2 when a step is a scheduled call, else 1. */
  version: 1 | 2;
  /** The genesis beacon key (192 hex) of a chain with a beacon. */
  beacon_key?: string;
  module: string;
  game: string;
  chain_id: string;
  genesis_hash: string;
  sequencer: string;
  code_hash: string;
  finished: boolean;
  scanned_to: number;
  start_balances: Record<string, string>;
  steps: TranscriptStep[];
  /** The game's log proven at a block at or after the last step (a chain with state proofs). */
  log?: any;
  /** Each player's starting balance proven (a chain with state proofs). */
  start?: ProvenStart[];
}

/** The first check that failed: `index` null for the transcript as a whole. */
export interface VerifyDivergence {
  index: number | null;
  txid: string | null;
  /** The call id of a scheduled call's step (else null). */
  call: number | null;
  field: string;
  expected: string;
  got: string;
}

/** A step that matched: a transaction (`type` 'tx') or a scheduled call (`type` 'call': no txid, sender or op). */
export interface VerifiedStep {
  index: number;
  type: 'tx' | 'call';
  txid: string | null;
  call: { module: string; id: number } | null;
  height: number;
  ok: true;
  sender: string | null;
  op: any;
  /** The op's `kind` (null for a call). */
  kind: string | null;
  /** The receipt's error (null: it succeeded). */
  error: string | null;
  events: { kind: string; data: any }[];
  fuelUsed: number;
  /** The step's block beacon (null on a chain without one), and whether it was checked under the beacon key. */
  beacon: string | null;
  beaconVerified: boolean;
}

export interface VerifyOptions {
  /** The chain's block signer (the trust anchor); default: the transcript's own. */
  sequencer?: string;
  /** The accepted header signers (a chain with validators: the genesis set's addresses; requires `validators`); default `[sequencer]`, or the addresses of `validators`. */
  signers?: string[];
  /** The genesis's `validators` (a chain with validators): every step's `finality` must prove its block final by a quorum of their consensus keys (divergence `finality` without one, `finality.certificate` for one that does not). */
  validators?: { set: { address: string; consensus_key: string }[] } | null;
  /** The chain's genesis hash (`GET /v1/status`'s `genesis_hash`): the transcript must name it, and it is the certificates' namespace; it tells a relaunched chain with the same keys and chain id apart. Default: the transcript's own; required with `validators` (divergence `genesis_hash`). */
  genesisHash?: string;
  /** The chain id; default: the transcript's own. */
  chainId?: string;
  /** The genesis's `beacon.public_key` (null: a chain without a beacon); default: the transcript's `beacon_key`. */
  beaconKey?: string | null;
  /** The genesis's `fuel_apply` (a scheduled call's fuel is at most it); default: the transcript's, else 10,000,000. */
  fuelApply?: number;
  /** The module asked for (required: a transcript of any other game is a divergence). */
  module: string;
  /** The game asked for (required). */
  game: string;
  /** Also require the game to have finished. */
  complete?: boolean;
  /** Longest the re-execution may run, ms (default 30000). */
  timeoutMs?: number;
  worker?: 'auto' | 'always' | 'never';
  /** The genesis's `modules`: `codeOrigin` is `genesis` when the transcript's code hash is its module's there. */
  genesisModules?: { id: string; code_hash: string }[];
  /** The genesis's `state_commitment`: with 'sparse_merkle' the transcript's `log` must prove its steps are all of the game's. */
  stateCommitment?: 'sparse_merkle' | 'lthash16' | null;
}

export interface VerifyResult {
  ok: boolean;
  steps: VerifiedStep[];
  divergence: VerifyDivergence | null;
  /** The module and game the transcript names (checked against `opts`). */
  module: string | null;
  game: string | null;
  /** The verified last step finished the game (its `<module>.finished` event names it); never the node's word alone. */
  finished: boolean;
  /** The beacon key the headers were checked against (null: a chain without one). */
  beaconKey: string | null;
  /** Distinct block beacons verified. */
  beaconsVerified: number;
  /** Steps whose block's finality certificate verified against `validators` (null: none given). */
  finalityVerified: number | null;
  /** `genesis` when the code hash is the genesis module's, else the node named it (an upload or an upgrade). */
  codeOrigin: 'genesis' | 'module record' | 'named by the node';
  elapsedMs: number;
  /** Whether the re-execution ran in a Worker (bounded by `timeoutMs`). */
  isolated: boolean | null;
  /** The block at which the game's proven log holds exactly the steps shown (null: no log checked). */
  completeAsOf: number | null;
  /** Players whose starting balance is the node's declared one, with its reason (null: not checked, a chain without state proofs; []: every one proven). */
  startUnproven: { account: string; why: string }[] | null;
  /** The session steps whose authorization the node could not prove, with its reason (null: not checked). */
  sessionUnproven: { step: number; why: string }[] | null;
}

/** Checks a transcript against the module's wasm: signatures, inclusion proofs, order, and every op re-executed (no fuel). */
export function verifyTranscript(transcript: Transcript, wasmBytes: Uint8Array | ArrayBuffer, opts: VerifyOptions): Promise<VerifyResult>;
/** A step's finality record checked against the genesis set (`finalityParticipants`, `finalityNamespace`) and its header hash: the height whose certificate finalized it, or why not. */
export function checkStepFinality(set: { participants: Uint8Array[]; namespace: Uint8Array }, step: TranscriptStep, headerHash: string): { certified: number } | { problem: string };
/** Null when `certificate` is a finalization of `digest` by a quorum of `participants` under `namespace`, else why not. */
export function certificateProblem(participants: Uint8Array[], namespace: Uint8Array, digest: Uint8Array, certificate: Uint8Array): string | null;
/** Decodes an encoded ed25519 finalization for a set of `n` validators. */
export function decodeFinalization(bytes: Uint8Array, n: number): { view: number; payload: Uint8Array; proposal: Uint8Array; signers: number[]; signatures: Uint8Array[] };
/** A block's consensus digest: SHA-256("gamechain/proposal/v1" ‖ parent ‖ header hash ‖ u32 LE len ‖ header signature ‖ u32 LE tx count ‖ signatures hash). */
export function digestFromParts(parent: Uint8Array, headerHash: Uint8Array, headerSignature: string, txCount: number, signaturesHash: Uint8Array): Uint8Array;
/** `gamechain/<chain id>/<genesis hash>` as bytes. */
export function finalityNamespace(chainId: string, genesisHash: string): Uint8Array;
/** The set's consensus keys (hex) in signer order (sorted by their bytes). */
export function finalityParticipants(consensusKeys: string[]): Uint8Array[];
export const MAX_FINALITY_LINKS: number;
export const MAX_CERTIFICATE_BYTES: number;
/** RFC 9162 §2.1.3.2 inclusion check: `leaf` at `index` of `size` leaves under `root`. */
export function verifyInclusion(leaf: Uint8Array, index: number, size: number, proof: string[], root: Uint8Array): boolean;
/** The block hash of a header (SHA-256 of its borsh encoding: format 1, or 2 with a beacon), hex. */
export function headerHash(header: BlockHeader): string;
/** A header's borsh encoding (format 2 with a beacon: 8 × `ff` ‖ `02` ‖ the fields ‖ the 48 beacon bytes). */
export function headerBytes(header: BlockHeader): Uint8Array;
/** SHA-256 of a receipt's borsh encoding (a transaction's or end-block's leaf). */
export function receiptHash(receipt: TranscriptStep['receipt']): Uint8Array;
/** The leaf of a scheduled call's receipt: SHA-256(borsh "scheduled" ‖ borsh module ‖ u64 LE id ‖ the receipt's borsh). */
export function scheduledReceiptHash(module: string, id: number, receipt: TranscriptStep['receipt']): Uint8Array;
/** RFC 6962 Merkle tree hash of leaves. */
export function merkleRoot(leaves: Uint8Array[]): Uint8Array;
/** A block's `receipt_root` from its JSON: scheduled calls', transactions', then end-block receipts, hex. */
export function blockReceiptRoot(block: Block): string;
export const DEFAULT_FUEL_APPLY: number;

// ---- beacon.js: the randomness beacon and the draws of scheduled calls (docs/randomness.md) ----

/** Whether `beaconHex` is the BLS12-381 (MinSig) signature of `height` on `chainId` by `publicKeyHex` (the genesis's beacon key). Never throws. */
export function verifyBeacon(publicKeyHex: string, chainId: string, height: number, beaconHex: string): boolean;
/** Many beacons of one key at once (two pairings when all are right; one by one only when one is not): one boolean per item, as verifyBeacon. */
export function verifyBeacons(publicKeyHex: string, chainId: string, items: { height: number; beacon: string }[]): boolean[];
/** The signed bytes before hashing to G1: `u8 len(ns)` ‖ "gamechain.beacon.v1" ‖ `u8 len(chain id)` ‖ chain id ‖ `u64 BE height`. */
export function beaconMessage(chainId: string, height: number): Uint8Array;
/** Draw `n` of scheduled call `callId` of `module` from a block's beacon: SHA-256("gamechain.draw.v1" ‖ beacon ‖ u32 LE len ‖ module ‖ u64 LE id ‖ u64 LE n). */
export function drawBytes(beaconHex: string, module: string, callId: number, n: number): Uint8Array;
/** A call's draws in order: `draw()`, and `below(k)` as the guest SDK's `draw_below(k)`. */
export function drawer(beaconHex: string, module: string, callId: number): { readonly count: number; draw(): Uint8Array; below(k: number): number };
export const BEACON_NAMESPACE: string;
export const BEACON_DST: string;
export const BEACON_BYTES: number;
export const BEACON_PUBLIC_KEY_BYTES: number;

// ---- seal.js: sealed moves, timelock-encrypted to a future round of the beacon (runtime/chain/src/keys/seal.rs) ----

/** What a sealed move is bound to: the receiving module's id, the address whose transaction hands it in, the module's tag (at most 64 bytes; a string is its UTF-8 text, e.g. `<game id>/x`, a Uint8Array raw bytes; default empty) and the round (the block height whose beacon opens it; a u64). */
export interface SealContext {
  module: string;
  sender: string;
  tag?: Uint8Array | string;
  round: number | bigint;
}
export interface SealMoveOptions extends SealContext {
  /** The genesis's `beacon.public_key`: 192 hex characters or 96 bytes (a compressed G2 point). The proof binds it: the chain refuses an envelope sealed under another key. */
  beaconPublicKey: string | Uint8Array;
  chainId: string;
  /** Exactly 32 bytes (Uint8Array or hex): `plaintextOf` pads shorter payloads. */
  plaintext: Uint8Array | string;
  /** 64 bytes (σ, then the proof's nonce seed); the same entropy gives the same envelope: for tests only. Default: crypto.getRandomValues. */
  entropy?: Uint8Array;
}
/** A context checked under the chain's beacon key. */
export interface SealCheckContext extends SealContext {
  /** The chain's beacon key, the genesis's `beacon.public_key`: 192 hex characters or 96 bytes. Required: missing or not a G2 point (canonical, in the subgroup, not the identity) → `'malformed'`. */
  beaconPublicKey: string | Uint8Array;
}
/** `'ok'`; `'malformed'` (length, U not a canonical G2 subgroup point or the identity, c or s not below the order, tag over 64 bytes or neither a string nor a Uint8Array, round not a u64, a missing or invalid beacon key); `'unbound'` (its proof is for another module, sender, tag, round or beacon key, or a byte changed). */
export type SealCheck = 'ok' | 'malformed' | 'unbound';
/** Seals a 32-byte plaintext to `round` of `chainId` under the beacon key, with a proof bound to the context: the envelope as 448 lowercase hex characters (224 bytes: U ‖ V ‖ W ‖ c ‖ s). Throws an Error on a malformed key, plaintext, tag, round or entropy. */
export function sealMove(options: SealMoveOptions): string;
/** Whether the envelope (448 hex or 224 bytes) is well formed and its proof is for this context under the chain's beacon key, as the chain's `seal::check(sealed, ctx, key)`. Never throws. */
export function checkSealed(sealed: string | Uint8Array, context: SealCheckContext): SealCheck;
/** The envelope's 32-byte plaintext under the beacon of its round (96 hex or 48 bytes), or null when it does not open (malformed; another round, chain or key). Never throws. */
export function openSealed(sealed: string | Uint8Array, beacon: string | Uint8Array): Uint8Array | null;
/** A payload of at most 32 bytes (Uint8Array or hex) right-padded with zeros to 32. Throws when longer or not hex. */
export function plaintextOf(payload: Uint8Array | string): Uint8Array;
/** 224. */
export const SEALED_BYTES: number;
/** 32. */
export const SEAL_PLAINTEXT_BYTES: number;
/** 64. */
export const MAX_SEAL_TAG_BYTES: number;
/** Canonical JSON (keys sorted by UTF-8 bytes, no whitespace). */
export function canonicalJson(value: any): string;
/** The raw text of `text`'s member `outer`.`name` (the op bytes of a transaction body). */
export function rawMember(text: string, outer: string, name: string): string | null;
export const MAX_VERIFY_MODULE_BYTES: number;
export const MAX_VERIFY_STEPS: number;
export const VERIFY_TIMEOUT_MS: number;

/** Most siblings a state proof may carry. */
export const MAX_PROOF_DEPTH: number;
/** null when `proof` shows `key` holding `value` (null: absent) under `stateRoot`, else the fixed text of what does not check. */
export function stateProofProblem(stateRoot: string, key: string, value: Uint8Array | null, proof: StateProof): string | null;
/** Checks a `GET /v1/state/<key>?proof` answer: the proof against its header's state root, the header's signer among `signers`. Throws naming what does not check. */
export function verifyStateEntry(entry: StateEntry, key: string, opts: { signers?: string[]; finality?: ViewFinality | null }): ProvenState;
/** Reads `key` with its proof from `chain` and checks it with verifyStateEntry. */
export function getStateProven(chain: Chain, key: string, opts: { signers?: string[]; finality?: ViewFinality | null }): Promise<ProvenState>;
/** Most reads a view proof carries, the module's record included. */
export const MAX_VIEW_PROOF_READS: number;
/** Most bytes of keys and values a view proof's reads may hold (4 MiB). */
export const MAX_VIEW_PROOF_BYTES: number;
/** A view's query as the node passes it to `gc_view`: compact JSON, string values, keys in byte order. */
export function viewQueryJson(query: Record<string, string | number>): string;
/**
 * Checks a view proof from the genesis alone (module, query, reads sorted and proven against the
 * header's state root, the module's record naming `code_hash` = SHA-256 of `wasm`, the header's
 * signer among `signers`, with `finality` the block final) and re-executes `gc_view` on `wasm`
 * over the proven reads alone, comparing its value or error with the answer's. Throws naming the
 * first thing that does not check.
 */
export function verifyView(answer: ViewProof, opts: {
  module: string; query: Record<string, string | number>; wasm: Uint8Array;
  /** Default with `finality`: the validators' addresses. */
  signers?: string[];
  finality?: ViewFinality | null;
  timeoutMs?: number; worker?: 'auto' | 'never';
}): Promise<ProvenView>;
/** Reads a view with its proofs from `chain`, fetches the wasm by its code hash (once per hash) when not given, and checks it with verifyView. */
export function getViewProven(chain: Chain, module: string, query: Record<string, string | number>, opts: {
  signers?: string[]; wasm?: Uint8Array; finality?: ViewFinality | null; timeoutMs?: number; worker?: 'auto' | 'never';
}): Promise<ProvenView>;
/** The domain of a game log's hash chain. */
export const GAME_LOG_DOMAIN: Uint8Array;
/** A game log after one more step. */
export function extendGameLog(log: { head: Uint8Array; steps: bigint; lastHeight: bigint }, leaf: Uint8Array, height: number): { head: Uint8Array; steps: bigint; lastHeight: bigint };
/** null when a transcript's `log` proves its steps are all of the game's, else the divergence's field, expected and got. */
export function gameLogProblem(transcript: object, leaves: Uint8Array[], heights: number[], headerProblem?: (log: object) => { field: string; expected: string; got: string } | null): { field: string; expected: string; got: string } | null;
