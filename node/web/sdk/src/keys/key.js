// key.js: Key, a secp256k1 secret key with its network: random generation, WIF import/export
// (compressed form, base58check(wif version ‖ 32 bytes ‖ 0x01)), its address and Divi message
// signing. The secret never appears in toString/JSON.

import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { base58check, checkNetwork, decodeCheck, networkOfVersion, addressFromPublicKey } from './address.js';
import { signWithSecret } from './message.js';

const secretOf = new WeakMap();

export class Key {
  /**
   * Prefer {@link Key.generate}, {@link Key.fromWif} or {@link Key.fromSecret}.
   * @param {Uint8Array} secret 32 bytes, 0 < secret < curve order
   * @param {'mainnet'|'testnet'} network
   */
  constructor(secret, network = 'testnet') {
    checkNetwork(network);
    if (!(secret instanceof Uint8Array) || secret.length !== 32 || !secp256k1.utils.isValidSecretKey(secret)) {
      throw new Error('not a valid secp256k1 secret key');
    }
    secretOf.set(this, Uint8Array.from(secret));
    /** @type {'mainnet'|'testnet'} */
    this.network = network;
    /** Compressed public key, 33 bytes. */
    this.publicKey = secp256k1.getPublicKey(secret, true);
    /** The P2PKH address on this key's network. */
    this.address = addressFromPublicKey(network, this.publicKey);
    Object.freeze(this);
  }

  /**
   * A new random key (the platform's CSPRNG: `crypto.getRandomValues`).
   * @param {'mainnet'|'testnet'} [network] default testnet
   */
  static generate(network = 'testnet') {
    return new Key(secp256k1.utils.randomSecretKey(), network);
  }

  /**
   * The key of 32 big-endian bytes.
   * @param {Uint8Array} secret
   * @param {'mainnet'|'testnet'} [network]
   */
  static fromSecret(secret, network = 'testnet') {
    return new Key(secret, network);
  }

  /**
   * Parses a compressed WIF (52 characters); its version byte (212/239) gives the network.
   * Throws on bad base58check, an uncompressed WIF, a wrong length, an unknown version, or a
   * secret that is zero or not below the curve order.
   * @param {string} wif
   */
  static fromWif(wif) {
    const payload = decodeCheck(typeof wif === 'string' ? wif.trim() : wif);
    if (payload.length === 33) throw new Error('uncompressed WIF keys are not supported');
    if (payload.length !== 34 || payload[33] !== 0x01) throw new Error(`wrong WIF payload length (${payload.length} bytes)`);
    const network = networkOfVersion(payload[0], 'wif');
    if (!network) throw new Error(`unknown WIF version byte ${payload[0]}`);
    return new Key(payload.slice(1, 33), network);
  }

  /** The compressed WIF form. */
  toWif() {
    const payload = new Uint8Array(34);
    payload[0] = checkNetwork(this.network).wif;
    payload.set(secretOf.get(this), 1);
    payload[33] = 0x01;
    return base58check.encode(payload);
  }

  /** Compressed public key as 66 hex characters. */
  get publicKeyHex() {
    return bytesToHex(this.publicKey);
  }

  /**
   * The Divi signed message of `text` (UTF-8) or bytes: base64 of 65 bytes, deterministic,
   * byte-identical to the Rust node's `sign_message`.
   * @param {string|Uint8Array} text
   * @returns {string}
   */
  signMessage(text) {
    return signWithSecret(secretOf.get(this), text);
  }

  toString() {
    return `Key(${this.network} ${this.address})`;
  }

  toJSON() {
    return { network: this.network, address: this.address };
  }
}
