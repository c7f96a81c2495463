// address.js: Divi networks, base58check P2PKH addresses and hash160, as the Rust node has them
// (runtime/chain/src/keys/address.rs): address = base58check(version ‖ RIPEMD160(SHA256(compressed
// public key))); versions 30 (mainnet, `D…`) and 139 (testnet, `x…`/`y…`).

import { sha256 } from '@noble/hashes/sha2.js';
import { ripemd160 } from '@noble/hashes/legacy.js';
import { createBase58check } from '@scure/base';

/** base58check with SHA256d checksums (Bitcoin's). */
export const base58check = createBase58check(sha256);

/** Version bytes per network: `pubkey` for addresses, `wif` for secret keys. */
export const NETWORKS = Object.freeze({
  mainnet: Object.freeze({ pubkey: 30, wif: 212 }),
  testnet: Object.freeze({ pubkey: 139, wif: 239 }),
});

/** Longest base58 text looked at (addresses are 33–34 characters, compressed WIFs 52). */
export const MAX_BASE58_CHARS = 64;

/**
 * The network of a version byte, or undefined.
 * @param {number} version
 * @param {'pubkey'|'wif'} kind
 */
export function networkOfVersion(version, kind) {
  for (const [name, v] of Object.entries(NETWORKS)) if (v[kind] === version) return name;
  return undefined;
}

/** @param {string} network */
export function checkNetwork(network) {
  if (!Object.hasOwn(NETWORKS, network)) throw new Error(`unknown network \`${network}\` (mainnet or testnet)`);
  return NETWORKS[network];
}

/**
 * RIPEMD160(SHA256(data)), Bitcoin's hash160.
 * @param {Uint8Array} data
 * @returns {Uint8Array} 20 bytes
 */
export function hash160(data) {
  return ripemd160(sha256(data));
}

/**
 * base58check decode with a length bound; throws `Error('not base58…')`/checksum errors.
 * @param {string} text
 * @returns {Uint8Array} version byte first, checksum removed
 */
export function decodeCheck(text) {
  if (typeof text !== 'string' || text.length === 0 || text.length > MAX_BASE58_CHARS) {
    throw new Error('not a base58check string of at most 64 characters');
  }
  try {
    return base58check.decode(text);
  } catch (e) {
    throw new Error(`not base58check: ${e.message}`);
  }
}

/**
 * The address of a 33-byte compressed public key on `network`.
 * @param {'mainnet'|'testnet'} network
 * @param {Uint8Array} publicKey
 * @returns {string}
 */
export function addressFromPublicKey(network, publicKey) {
  const payload = new Uint8Array(21);
  payload[0] = checkNetwork(network).pubkey;
  payload.set(hash160(publicKey), 1);
  return base58check.encode(payload);
}

/**
 * Parses a Divi address: its network and 20-byte key hash. Throws on bad base58, a bad checksum,
 * a payload that is not 21 bytes or an unknown version byte.
 * @param {string} address
 * @returns {{network: 'mainnet'|'testnet', hash: Uint8Array}}
 */
export function parseAddress(address) {
  const payload = decodeCheck(address);
  if (payload.length !== 21) throw new Error(`wrong payload length (${payload.length} bytes)`);
  const network = networkOfVersion(payload[0], 'pubkey');
  if (!network) throw new Error(`unknown version byte ${payload[0]}`);
  return { network, hash: payload.slice(1) };
}
