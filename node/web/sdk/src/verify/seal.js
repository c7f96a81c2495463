// seal.js: sealed moves in JavaScript, byte for byte those of runtime/chain/src/keys/seal.rs.
//
// A sealed move is a 32-byte plaintext locked to a future round (a block height) of the chain's
// randomness beacon (beacon.js): nobody, its author included, can open it before the beacon of
// that round is published, and once it is anyone can. A player seals a move here, the module that
// receives it checks that it is bound to its context, and a page (or the chain, in a scheduled
// call) opens it with the round's beacon. This file owns the three steps and the envelope format:
//
//   envelope (224 bytes) = U (96, compressed G2) ‖ V (32) ‖ W (32) ‖ c (32, BE) ‖ s (32, BE)
//
// - U, V, W: Boneh–Franklin identity-based encryption with the Fujisaki–Okamoto transform
//   (Commonware's `tle`, MinSig), the identity being the message the beacon of the round signs.
//   With σ random: r = H3(σ ‖ M), U = r·G2, V = σ ⊕ SHA-256("h2" ‖ e(H(id), r·P)),
//   W = M ⊕ SHA-256("h4" ‖ σ); P is the genesis beacon key, H the beacon's hash to G1, and the
//   pairing's value is written as 576 bytes in blst's order (`blst_bendian_from_fp12`): its six
//   Fp2 coefficients, named Fp6.Fp2 of f = c0 + c1·w, interleaved as c0.c0, c1.c0, c0.c1, c1.c1,
//   c0.c2, c1.c2, each Fp2 as c0 ‖ c1, each Fp 48 bytes big-endian. That is not noble's own
//   `Fp12.toBytes` order (c0.c0, c0.c1, c0.c2, c1.c0, …).
// - (c, s): a Schnorr proof of knowledge of r bound to the beacon key and (module, sender, tag,
//   round): with t a nonce and T = t·G2, c = H(key ‖ ctx ‖ U ‖ V ‖ W ‖ T) (key: the 96 bytes of
//   the compressed beacon public key the envelope is sealed under) and s = t + c·r. A copy of
//   someone else's envelope into another game, seat, round or transaction has no proof for its
//   new context, and an envelope sealed under another key (a lying node's genesis) has none for
//   the chain's key: it is refused when handed in rather than stored to open void at the round.
// - Opening: σ = V ⊕ SHA-256("h2" ‖ e(beacon, U)), M = W ⊕ SHA-256("h4" ‖ σ), and
//   H3(σ ‖ M)·G2 must be U; otherwise the envelope does not open (another round, chain or key).
//
// Every hash to a scalar is RFC 9380 expand_message_xmd (SHA-256) to 48 bytes, read big-endian and
// reduced modulo the group order (Commonware's `Scalar::map`), under its own domain tag.

import { bls12_381 } from '@noble/curves/bls12-381.js';
import { expand_message_xmd } from '@noble/curves/abstract/hash-to-curve.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { beaconMessage, BEACON_DST, BEACON_BYTES, BEACON_PUBLIC_KEY_BYTES } from './beacon.js';

/**
 * The URL of the module that exports this file's functions: this file, or the bundle that holds it
 * (/sdk/gamechain.js). verify.js's Worker imports checkSealed and openSealed from it.
 */
export const SEAL_MODULE_URL = import.meta.url;

/** Bytes of a sealed envelope (448 hex characters). */
export const SEALED_BYTES = 224;
/** Bytes of a sealed plaintext. */
export const SEAL_PLAINTEXT_BYTES = 32;
/** Most bytes of a seal's tag (the module's binding: game and seat, auction and bidder…). */
export const MAX_SEAL_TAG_BYTES = 64;

const H3_DST = 'TLE_BLS12381_XMD:SHA-256_SSWU_RO_H3_';
const POK_DST = 'gamechain.seal.pok.v1';
const NONCE_DST = 'gamechain.seal.nonce.v1';

const { G1, G2 } = bls12_381;
const { Fp, Fr, Fp12 } = bls12_381.fields;
const ORDER = Fr.ORDER;
const { calcPairingPrecomputes } = bls12_381.utils;
const utf8 = new TextEncoder();
const H2 = utf8.encode('h2');
const H4 = utf8.encode('h4');

function concat(parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) { out.set(p, o); o += p.length; }
  return out;
}

function xor32(a, b) {
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++) out[i] = a[i] ^ b[i];
  return out;
}

/** Bytes from a Uint8Array (copied) or a hex string (either case), else null. */
function bytesOf(value) {
  if (value instanceof Uint8Array) return Uint8Array.from(value);
  if (typeof value === 'string' && value.length % 2 === 0 && /^[0-9a-fA-F]*$/.test(value)) return hexToBytes(value);
  return null;
}

/** Commonware's `Scalar::map`: expand_message_xmd(SHA-256) to 48 bytes, big-endian, mod the order. */
function hashToScalar(dst, msg) {
  return BigInt(`0x${bytesToHex(expand_message_xmd(msg, dst, 48, sha256))}`) % ORDER;
}

function scalarBytes(n) {
  return hexToBytes(n.toString(16).padStart(64, '0'));
}

/** The 576 bytes of a GT element as blst writes them (`blst_bendian_from_fp12`). */
function gtBytes(f) {
  const out = new Uint8Array(576);
  let o = 0;
  for (const i of ['c0', 'c1', 'c2']) {
    for (const j of ['c0', 'c1']) {
      const e = f[j][i];
      out.set(Fp.toBytes(e.c0), o); o += 48;
      out.set(Fp.toBytes(e.c1), o); o += 48;
    }
  }
  return out;
}

/** e(g1, g2) with `pre` = calcPairingPrecomputes(g2): both points already checked. */
function pairingWith(g1, pre) {
  const { x, y } = g1.toAffine();
  return Fp12.finalExponentiate(bls12_381.millerLoopBatch([[pre, x, y]]));
}

/**
 * A point of `Group` (G1 or G2) from exactly its compressed bytes: on the curve, in the
 * prime-order subgroup, not the identity, and canonical (its encoding is these bytes). Else null.
 */
function pointOf(Group, bytes) {
  try {
    const p = Group.Point.fromBytes(bytes);
    p.assertValidity();
    if (p.is0()) return null;
    const again = p.toBytes(true);
    if (again.length !== bytes.length || again.some((b, i) => b !== bytes[i])) return null;
    return p;
  } catch {
    return null;
  }
}

// Parsed beacon keys by hex (the point, its 96 bytes for the proof's challenge, and its pairing
// precomputes, made on the first seal): a page seals and checks many moves under one key.
const keys = new Map();
function beaconKey(hex) {
  const bytes = bytesOf(hex);
  const id = bytes ? bytesToHex(bytes) : null;
  let k = id === null ? undefined : keys.get(id);
  if (k === undefined) {
    const point = bytes?.length === BEACON_PUBLIC_KEY_BYTES ? pointOf(G2, bytes) : null;
    k = point ? { point, bytes, pre: null } : null;
    if (keys.size > 16) keys.clear();
    if (id !== null) keys.set(id, k);
  }
  return k;
}

/**
 * A tag's bytes: a string is UTF-8 text (tags are texts: `<game id>/x`, an auction's id), a
 * Uint8Array raw bytes (copied); missing (undefined or null) is the empty tag. Else null.
 */
function tagBytesOf(tag) {
  if (tag === undefined || tag === null) return new Uint8Array(0);
  if (tag instanceof Uint8Array) return Uint8Array.from(tag);
  if (typeof tag === 'string') return utf8.encode(tag);
  return null;
}

/** The round as a u64 bigint, else null. */
function roundOf(round) {
  if (typeof round === 'bigint') return round >= 0n && round < (1n << 64n) ? round : null;
  return Number.isSafeInteger(round) && round >= 0 ? BigInt(round) : null;
}

/**
 * The context the proof binds: u8 len(module) ‖ module ‖ u8 len(sender) ‖ sender ‖ u8 len(tag) ‖
 * tag ‖ u64 BE round (SealContext::encode: lengths above 255 are written as 255, as in Rust).
 */
function contextBytes(module, sender, tag, round) {
  const m = utf8.encode(module);
  const s = utf8.encode(sender);
  const r = new Uint8Array(8);
  new DataView(r.buffer).setBigUint64(0, round, false);
  return concat([Uint8Array.of(Math.min(m.length, 255)), m, Uint8Array.of(Math.min(s.length, 255)), s, Uint8Array.of(Math.min(tag.length, 255)), tag, r]);
}

/** The proof's challenge: H(key ‖ ctx ‖ U ‖ V ‖ W ‖ T) (seal.rs `challenge`; `key` its 96 bytes). */
function challenge(key, ctx, uvw, T) {
  return hashToScalar(POK_DST, concat([key, ctx, uvw, T.toBytes(true)]));
}

/**
 * A payload of at most 32 bytes (Uint8Array or hex) as a sealed plaintext: right-padded with
 * zeros to exactly SEAL_PLAINTEXT_BYTES. Throws on more than 32 bytes or a non-hex string.
 */
export function plaintextOf(payload) {
  const b = bytesOf(payload);
  if (!b) throw new Error('plaintextOf: expected a Uint8Array or a hex string');
  if (b.length > SEAL_PLAINTEXT_BYTES) throw new Error(`plaintextOf: ${b.length} bytes, at most ${SEAL_PLAINTEXT_BYTES}`);
  const out = new Uint8Array(SEAL_PLAINTEXT_BYTES);
  out.set(b);
  return out;
}

/**
 * Seals a move: `plaintext` (exactly 32 bytes, Uint8Array or hex; `plaintextOf` pads shorter ones)
 * encrypted to round `round` (the block height whose beacon will open it; a non-negative safe
 * integer or a bigint below 2⁶⁴) of chain `chainId` under `beaconPublicKey` (the genesis's
 * `beacon.public_key`, 192 hex characters), with a proof binding it to `module` (the receiving
 * module's id), `sender` (the address whose transaction hands it in) and `tag` (at most 64 bytes:
 * the module's own binding, e.g. `<game id>/x` for a game and seat; a string is its UTF-8 text, a
 * Uint8Array its raw bytes; default empty). The proof also binds the key: the chain refuses an
 * envelope sealed under any key but its own (`checkSealed` says 'unbound').
 *
 * `entropy`: 64 bytes (σ, then the proof's nonce seed); the same entropy gives the same envelope,
 * for tests and vectors only. Default: 64 bytes of `crypto.getRandomValues`.
 *
 * Returns the envelope as 448 lowercase hex characters (SEALED_BYTES bytes). One pairing, two G2
 * and one G1 multiplication. Throws an Error on a malformed key, plaintext, tag, round or entropy.
 */
export function sealMove({ beaconPublicKey, chainId, module, sender, tag, round, plaintext, entropy } = {}) {
  const key = beaconKey(beaconPublicKey);
  if (!key) throw new Error('sealMove: beaconPublicKey is not 192 hex characters of a G2 point (subgroup, not the identity)');
  if (typeof chainId !== 'string' || typeof module !== 'string' || typeof sender !== 'string') {
    throw new Error('sealMove: chainId, module and sender must be strings');
  }
  const tagBytes = tagBytesOf(tag);
  if (!tagBytes || tagBytes.length > MAX_SEAL_TAG_BYTES) throw new Error(`sealMove: tag must be a string (UTF-8) or a Uint8Array of at most ${MAX_SEAL_TAG_BYTES} bytes`);
  const r64 = roundOf(round);
  if (r64 === null) throw new Error('sealMove: round must be a non-negative safe integer or a bigint below 2^64');
  const m = bytesOf(plaintext);
  if (!m || m.length !== SEAL_PLAINTEXT_BYTES) throw new Error(`sealMove: plaintext must be exactly ${SEAL_PLAINTEXT_BYTES} bytes (plaintextOf pads shorter payloads)`);
  let ent;
  if (entropy === undefined) {
    ent = new Uint8Array(64);
    globalThis.crypto.getRandomValues(ent);
  } else {
    if (!(entropy instanceof Uint8Array) || entropy.length !== 64) throw new Error('sealMove: entropy must be a Uint8Array of 64 bytes');
    ent = entropy;
  }

  const sigma = ent.slice(0, 32);
  const r = hashToScalar(H3_DST, concat([sigma, m]));
  if (r === 0n) throw new Error('sealMove: degenerate entropy'); // probability 2⁻²⁵⁵
  const U = G2.Point.BASE.multiply(r);
  // e(H(id), r·P) = e(r·H(id), P): one G1 multiplication instead of a G2 one, P's lines cached.
  const qId = bls12_381.shortSignatures.hash(beaconMessage(chainId, r64), BEACON_DST);
  key.pre ??= calcPairingPrecomputes(key.point);
  const gt = pairingWith(qId.multiply(r), key.pre);
  const V = xor32(sigma, sha256(concat([H2, gtBytes(gt)])));
  const W = xor32(m, sha256(concat([H4, sigma])));
  const uvw = concat([U.toBytes(true), V, W]);

  const ctx = contextBytes(module, sender, tagBytes, r64);
  const t = hashToScalar(NONCE_DST, concat([ent.subarray(32, 64), uvw, ctx]));
  const T = t === 0n ? G2.Point.ZERO : G2.Point.BASE.multiply(t); // t = 0: probability 2⁻²⁵⁵
  const c = challenge(key.bytes, ctx, uvw, T);
  const s = (t + c * r) % ORDER;
  return bytesToHex(concat([uvw, scalarBytes(c), scalarBytes(s)]));
}

/** U (a checked G2 point), c and s of an envelope, else null. */
function parse(sealed) {
  if (!sealed || sealed.length !== SEALED_BYTES) return null;
  const U = pointOf(G2, sealed.subarray(0, 96));
  if (!U) return null;
  const c = BigInt(`0x${bytesToHex(sealed.subarray(160, 192))}`);
  const s = BigInt(`0x${bytesToHex(sealed.subarray(192, 224))}`);
  if (c >= ORDER || s >= ORDER) return null;
  return { U, c, s };
}

/**
 * Whether `sealed` (448 hex characters, or a Uint8Array of 224 bytes) is a well-formed envelope
 * whose proof is for this context under the chain's beacon key `beaconPublicKey` (the genesis's
 * `beacon.public_key`: 192 hex characters or 96 bytes), as the chain's `seal::check` answers:
 * - `'ok'`: it is (whether it will open is the beacon's question: `openSealed`);
 * - `'malformed'`: not 224 bytes (or not hex), U not a canonical point of G2's prime-order
 *   subgroup or the identity, c or s not below the group order, a tag over 64 bytes (or neither
 *   a string, read as UTF-8, nor a Uint8Array), a round that is not a u64, module or sender not
 *   strings, a missing `beaconPublicKey` or one that is not a G2 point (canonical, in the
 *   subgroup, not the identity);
 * - `'unbound'`: well formed, but its proof is for another module, sender, tag, round or beacon
 *   key (sealed under a key that is not the chain's), or a byte of it was changed.
 * Two G2 multiplications. Never throws.
 */
export function checkSealed(sealed, { module, sender, tag, round, beaconPublicKey } = {}) {
  try {
    const tagBytes = tagBytesOf(tag);
    const r64 = roundOf(round);
    if (!tagBytes || tagBytes.length > MAX_SEAL_TAG_BYTES || r64 === null) return 'malformed';
    if (typeof module !== 'string' || typeof sender !== 'string') return 'malformed';
    const key = beaconKey(beaconPublicKey);
    if (!key) return 'malformed';
    const bytes = bytesOf(sealed);
    const p = parse(bytes);
    if (!p) return 'malformed';
    // T = s·G2 − c·U (public values: the variable-time double multiplication is fine).
    const T = G2.Point.BASE.multiplyUnsafe(p.s).subtract(p.U.multiplyUnsafe(p.c));
    const ctx = contextBytes(module, sender, tagBytes, r64);
    return challenge(key.bytes, ctx, bytes.subarray(0, 160), T) === p.c ? 'ok' : 'unbound';
  } catch {
    return 'malformed';
  }
}

/**
 * Opens `sealed` (448 hex characters, or 224 bytes) with `beacon` (96 hex characters, or 48
 * bytes: the beacon of the round it was sealed to, from that block's header; check it with
 * `verifyBeacon` first): its 32-byte plaintext as a Uint8Array, or null when it does not open
 * (malformed, or sealed to another round, chain or key, or made wrongly). One pairing and one G2
 * multiplication. Never throws.
 */
export function openSealed(sealed, beacon) {
  try {
    const bytes = bytesOf(sealed);
    const b = bytesOf(beacon);
    if (!bytes || bytes.length !== SEALED_BYTES || !b || b.length !== BEACON_BYTES) return null;
    const sig = pointOf(G1, b);
    const U = sig && pointOf(G2, bytes.subarray(0, 96));
    if (!U) return null;
    const gt = pairingWith(sig, calcPairingPrecomputes(U));
    const sigma = xor32(bytes.subarray(96, 128), sha256(concat([H2, gtBytes(gt)])));
    const m = xor32(bytes.subarray(128, 160), sha256(concat([H4, sigma])));
    const r = hashToScalar(H3_DST, concat([sigma, m]));
    if (r === 0n || !G2.Point.BASE.multiply(r).equals(U)) return null;
    return m;
  } catch {
    return null;
  }
}
