// message.js: the Divi signed message, byte for byte the Rust node's
// (runtime/chain/src/keys/signed_message.rs): SHA256d(varint(len magic) ‖ magic ‖ varint(len msg) ‖ msg)
// signed with secp256k1 (RFC 6979, low S), encoded as base64 of 65 bytes: header 31 + recovery id
// (compressed key), r, s. Verification recovers the key and compares its hash160 with the address.

import { secp256k1 } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { base64 } from '@scure/base';
import { hash160, parseAddress, addressFromPublicKey } from './address.js';

/** The Divi message magic, `"DarkNet Signed Message:\n"`. */
export const MAGIC = 'DarkNet Signed Message:\n';

const utf8 = new TextEncoder();
/** 65 bytes are 88 base64 characters; anything much longer is refused before decoding. */
const MAX_SIGNATURE_CHARS = 200;

/** Bitcoin's CompactSize encoding of `n` (a safe integer). */
function varint(n) {
  if (n < 0xfd) return Uint8Array.of(n);
  if (n <= 0xffff) return Uint8Array.of(0xfd, n & 0xff, n >>> 8);
  if (n <= 0xffffffff) return Uint8Array.of(0xfe, n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, n >>> 24);
  const out = new Uint8Array(9);
  out[0] = 0xff;
  let v = BigInt(n);
  for (let i = 1; i < 9; i++) { out[i] = Number(v & 0xffn); v >>= 8n; }
  return out;
}

function bytesOf(text) {
  return typeof text === 'string' ? utf8.encode(text) : Uint8Array.from(text);
}

/**
 * The 32 bytes that are signed: SHA256d(varint(len magic) ‖ magic ‖ varint(len msg) ‖ msg).
 * @param {string|Uint8Array} message text (UTF-8) or bytes
 * @param {string|Uint8Array} [magic] default {@link MAGIC}
 * @returns {Uint8Array}
 */
export function messageHash(message, magic = MAGIC) {
  const m = bytesOf(magic);
  const msg = bytesOf(message);
  const parts = [varint(m.length), m, varint(msg.length), msg];
  const buf = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) { buf.set(p, at); at += p.length; }
  return sha256(sha256(buf));
}

/**
 * Signs `message` with a 32-byte secret key: base64 of header (31 + recovery id), r, s.
 * Deterministic (RFC 6979): the same key and message always give the same text.
 * @param {Uint8Array} secretKey
 * @param {string|Uint8Array} message
 * @param {string|Uint8Array} [magic]
 * @returns {string}
 */
export function signWithSecret(secretKey, message, magic = MAGIC) {
  const sig = secp256k1.sign(messageHash(message, magic), secretKey, {
    prehash: false,
    lowS: true,
    format: 'recovered',
  });
  const out = new Uint8Array(65);
  out[0] = 31 + sig[0];
  out.set(sig.subarray(1), 1);
  return base64.encode(out);
}

/**
 * The compressed public key (33 bytes) that signed `message`, or an Error saying why not:
 * not base64, not 65 bytes, header not 31–34, high S, or no key recoverable.
 * @param {string|Uint8Array} message
 * @param {string} signature base64
 * @param {string|Uint8Array} [magic]
 * @returns {Uint8Array}
 */
export function recoverPublicKey(message, signature, magic = MAGIC) {
  if (typeof signature !== 'string' || signature.length > MAX_SIGNATURE_CHARS) {
    throw new Error('signature is not a base64 string of 65 bytes');
  }
  let raw;
  try { raw = base64.decode(signature); } catch { throw new Error('signature is not base64'); }
  if (raw.length !== 65) throw new Error(`signature is ${raw.length} bytes, expected 65`);
  const header = raw[0];
  if (header < 31 || header > 34) throw new Error(`signature header byte ${header} is not 31-34 (compressed key)`);
  const rec = new Uint8Array(65);
  rec[0] = header - 31;
  rec.set(raw.subarray(1), 1);
  let sig;
  try { sig = secp256k1.Signature.fromBytes(rec, 'recovered'); } catch { throw new Error('no public key can be recovered from the signature'); }
  if (sig.hasHighS()) throw new Error('signature is not canonical (high S)');
  try {
    return sig.recoverPublicKey(messageHash(message, magic)).toBytes(true);
  } catch {
    throw new Error('no public key can be recovered from the signature');
  }
}

/**
 * The address (on `network`) of the key that signed `message` as a Divi signed message.
 * Throws as {@link recoverPublicKey}.
 * @param {'mainnet'|'testnet'} network
 * @param {string|Uint8Array} message
 * @param {string} signature
 * @returns {string}
 */
export function recoverAddress(network, message, signature) {
  return addressFromPublicKey(network, recoverPublicKey(message, signature));
}

/**
 * `true` when `signature` is a Divi signed message of `message` by the key of `address`
 * (mainnet or testnet, read from the address); `false` otherwise (another signer, a malformed
 * address or signature, a high-S twin). Never throws.
 * @param {string} address
 * @param {string|Uint8Array} message
 * @param {string} signature
 * @returns {boolean}
 */
export function verifyMessage(address, message, signature) {
  try {
    const { hash } = parseAddress(address);
    const got = hash160(recoverPublicKey(message, signature));
    return got.length === hash.length && got.every((b, i) => b === hash[i]);
  } catch {
    return false;
  }
}
