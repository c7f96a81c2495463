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
  constructor(code: string, message: string, status?: number, extra?: { txid?: string; retryAfter?: number });
  /** The node's code (`bad_nonce`, `not_found`, …) or `network`, `request_timeout`, `bad_answer`, `too_large`, `receipt_timeout`. */
  code: string;
  /** HTTP status; 0 when there was no answer. */
  status: number;
  txid?: string;
  retryAfter?: number;
}

export type Action =
  | { type: 'faucet'; token: string }
  | { type: 'transfer'; to: string; token: string; amount: string }
  | { type: 'game'; game: string; op: Record<string, unknown> }
  | { type: 'deploy'; module: string; code: string };

export interface Event { kind: string; data: Record<string, unknown> }
export interface TxReceipt { ok: boolean; error?: string | null; events: Event[]; fuel_used: number }
export interface Receipt { txid: string; height: number; index: number; ok: boolean; error: string | null; events: Event[]; fuel_used: number }
export interface BlockTx { txid: string; body: string; signature: string; receipt: TxReceipt }
export interface Block {
  height: number;
  hash: string;
  header: { height: number; prev_hash: string; time_ms: number; sequencer: string; checkpoint: { height: number; hash: string }; tx_root: string; receipt_root: string; state_root: string };
  signature: string;
  txs: BlockTx[];
  end_block: { module: string; receipt: TxReceipt }[];
}
export interface Status {
  chain_id: string; network: Network; height: number; head_hash: string; state_root: string; sequencer: string;
  genesis_hash: string; engine_config_hash: string; pending: number; version: string;
}
export interface Account { account: string; balances: Record<string, string>; nonce: number; next_nonce: number }
export interface TxRecord {
  txid: string; status: 'pending' | 'included'; body: string; signature: string;
  height: number | null; index: number | null; receipt: TxReceipt | null;
}
export interface ModuleRecord { id: string; abi_version: number; code_hash: string; deployed_height: number; owner: string; upgraded_height?: number }
export interface SignedTx { body: string; signature: string; txid: string }
export interface Subscription { readonly mode: 'websocket' | 'polling'; readonly lastHeight: number | null; close(): void }

export interface ChainOptions {
  fetch?: typeof fetch;
  WebSocket?: typeof WebSocket | null;
  timeoutMs?: number;
  maxAnswerBytes?: number;
}

export declare class Chain {
  constructor(url: string, options?: ChainOptions);
  readonly url: string;
  status(): Promise<Status>;
  genesis(): Promise<Record<string, unknown>>;
  account(account: string): Promise<Account>;
  tx(txid: string): Promise<TxRecord>;
  block(which?: number | 'latest'): Promise<Block>;
  game(module: string, query?: Record<string, string | number>): Promise<any>;
  modules(): Promise<{ modules: ModuleRecord[] }>;
  module(id: string): Promise<ModuleRecord>;
  chainId(): Promise<string>;
  sign(key: Key, action: Action, options?: { chainId?: string; nonce?: number }): Promise<SignedTx>;
  post(tx: { body: string; signature: string }): Promise<string>;
  send(key: Key, action: Action): Promise<string>;
  waitForReceipt(txid: string, options?: { timeoutMs?: number; pollMs?: number }): Promise<Receipt>;
  subscribe(
    onBlock: (block: Block) => void | Promise<void>,
    options?: { fromHeight?: number; pollMs?: number; onOpen?: () => void; onError?: (e: Error) => void },
  ): Subscription;
  request(method: string, path: string, body?: unknown): Promise<any>;
}
