// beacon.js: the chain's randomness beacon checked in JavaScript, and the draws a scheduled call
// makes from it (runtime/chain/src/keys/beacon.rs, sdk-guest/src/native/scheduler.rs,
// docs/randomness.md).
//
// A chain whose genesis has `beacon: {scheme, public_key}` carries in every block header after 0
// a `beacon`: the BLS12-381 signature (Commonware's MinSig variant: signatures in G1, 48 bytes
// compressed; keys in G2, 96 bytes) by that key of `union_unique(namespace, message)` =
// `u8 len(namespace)` ‖ namespace ‖ message, namespace `gamechain.beacon.v1`, message =
// `u8 len(chain id)` ‖ chain id ‖ `u64 BE height`, hashed to G1 under the DST
// `BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_POP_`. A threshold key (`bls12381-minsig-threshold`)
// is checked the same way: its group key signs through the recovered signature.
//
// Draw `n` of scheduled call `id` of module `M` in a block whose beacon is `B` (48 bytes) is
// SHA-256(`gamechain.draw.v1` ‖ B ‖ u32 LE len(M) ‖ M ‖ u64 LE id ‖ u64 LE n); a module's
// `draw_below(k)` takes the first of a draw's four u64 LE words below the largest multiple of k
// (a fresh draw when none is) modulo k.

import { bls12_381 } from '@noble/curves/bls12-381.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { hexToBytes } from '@noble/hashes/utils.js';

/** The namespace every beacon is signed under. */
export const BEACON_NAMESPACE = 'gamechain.beacon.v1';
/** The hash-to-curve domain separation tag of the signature (G1, proof-of-possession suite). */
export const BEACON_DST = 'BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_POP_';
/** Bytes of a beacon (a compressed G1 point) and of a beacon key (a compressed G2 point). */
export const BEACON_BYTES = 48;
export const BEACON_PUBLIC_KEY_BYTES = 96;

const utf8 = new TextEncoder();

function concat(parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) { out.set(p, o); o += p.length; }
  return out;
}

/** Lowercase hex of exactly `bytes` bytes as bytes, else null. */
function hexOf(text, bytes) {
  if (typeof text !== 'string' || text.length !== 2 * bytes || !/^[0-9a-f]*$/.test(text)) return null;
  return hexToBytes(text);
}

/**
 * The bytes the beacon of `height` on chain `chainId` signs, before hashing to the curve:
 * `u8 len(namespace)` ‖ namespace ‖ `u8 len(chain id)` ‖ chain id ‖ `u64 BE height`.
 */
export function beaconMessage(chainId, height) {
  const ns = utf8.encode(BEACON_NAMESPACE);
  const id = utf8.encode(String(chainId));
  const h = new Uint8Array(8);
  new DataView(h.buffer).setBigUint64(0, BigInt(height), false);
  return concat([Uint8Array.of(ns.length), ns, Uint8Array.of(Math.min(id.length, 255)), id, h]);
}

// Parsed keys, by hex: a page checks many beacons under one key.
const keys = new Map();
function publicKeyPoint(hex) {
  let p = keys.get(hex);
  if (p === undefined) {
    const bytes = hexOf(hex, BEACON_PUBLIC_KEY_BYTES);
    p = null;
    if (bytes) {
      try {
        const point = bls12_381.G2.Point.fromBytes(bytes);
        point.assertValidity();
        p = point.is0() ? null : point;
      } catch { p = null; }
    }
    if (keys.size > 16) keys.clear();
    keys.set(hex, p);
  }
  return p;
}

/**
 * Whether `beaconHex` (96 lowercase hex characters) is the beacon of `height` on chain `chainId`
 * under the beacon key `publicKeyHex` (192 lowercase hex characters, the genesis's
 * `beacon.public_key`). Two pairings: a few milliseconds. Never throws: a malformed key or beacon
 * (not a point of the prime-order subgroup, the identity, another length, upper case) is `false`.
 */
export function verifyBeacon(publicKeyHex, chainId, height, beaconHex) {
  try {
    if (!Number.isSafeInteger(height) || height < 0) return false;
    const pk = publicKeyPoint(publicKeyHex);
    const sigBytes = hexOf(beaconHex, BEACON_BYTES);
    if (!pk || !sigBytes) return false;
    const sig = bls12_381.G1.Point.fromBytes(sigBytes);
    sig.assertValidity();
    if (sig.is0()) return false;
    const short = bls12_381.shortSignatures;
    const hm = short.hash(beaconMessage(chainId, height), BEACON_DST);
    return short.verify(sig, hm, pk) === true;
  } catch {
    return false;
  }
}

/**
 * Checks many beacons of one key at once: `items` `[{height, beacon}]` → one boolean each, as
 * `verifyBeacon` would answer. All are checked together with two pairings (a random linear
 * combination: e(Σ rᵢ·beaconᵢ, G2) = e(Σ rᵢ·H(messageᵢ), key), with 64-bit random rᵢ: a wrong beacon
 * passes with probability 2⁻⁶⁴), then, only when that fails, one by one to say which. A transcript
 * of 200 blocks is checked in about a tenth of the time of 200 `verifyBeacon` calls.
 */
export function verifyBeacons(publicKeyHex, chainId, items) {
  const out = items.map(() => false);
  const pk = publicKeyPoint(publicKeyHex);
  if (!pk) return out;
  const short = bls12_381.shortSignatures;
  const parsed = [];
  items.forEach((it, i) => {
    try {
      if (!Number.isSafeInteger(it?.height) || it.height < 0) return;
      const bytes = hexOf(it.beacon, BEACON_BYTES);
      if (!bytes) return;
      const sig = bls12_381.G1.Point.fromBytes(bytes);
      sig.assertValidity();
      if (sig.is0()) return;
      parsed.push({ i, sig, hm: short.hash(beaconMessage(chainId, it.height), BEACON_DST) });
    } catch { /* malformed: false */ }
  });
  if (parsed.length === 0) return out;
  let together = false;
  if (parsed.length > 1) {
    try {
      const random = new BigUint64Array(parsed.length);
      globalThis.crypto.getRandomValues(random);
      let S = null;
      let H = null;
      parsed.forEach((p, k) => {
        const r = random[k] | 1n; // never 0
        const s = p.sig.multiply(r);
        const h = p.hm.multiply(r);
        S = S ? S.add(s) : s;
        H = H ? H.add(h) : h;
      });
      together = short.verify(S, H, pk) === true;
    } catch { together = false; }
  }
  for (const p of parsed) {
    if (together) { out[p.i] = true; continue; }
    try { out[p.i] = short.verify(p.sig, p.hm, pk) === true; } catch { out[p.i] = false; }
  }
  return out;
}

/**
 * Draw `n` of scheduled call `callId` of module `module` in a block whose beacon is `beaconHex`:
 * the 32 bytes the call's `n`-th `draw` got (n from 0).
 */
export function drawBytes(beaconHex, module, callId, n) {
  const b = hexOf(beaconHex, BEACON_BYTES);
  if (!b) throw new Error('drawBytes: the beacon is not 96 lowercase hex characters');
  const m = utf8.encode(module);
  const tail = new Uint8Array(4 + m.length + 16);
  const dv = new DataView(tail.buffer);
  dv.setUint32(0, m.length, true);
  tail.set(m, 4);
  dv.setBigUint64(4 + m.length, BigInt(callId), true);
  dv.setBigUint64(12 + m.length, BigInt(n), true);
  return sha256(concat([utf8.encode('gamechain.draw.v1'), b, tail]));
}

/**
 * The draws of one scheduled call, in order, as the module makes them: `draw()` the next 32
 * bytes, `below(k)` a uniform number in 0..k-1 as the guest SDK's `draw_below(k)` computes it
 * (`1 + below(6)` is a die of the `dice` module).
 */
export function drawer(beaconHex, module, callId) {
  let n = 0;
  const draw = () => drawBytes(beaconHex, module, callId, n++);
  return {
    get count() { return n; },
    draw,
    below(k) {
      const bound = BigInt(k);
      if (bound < 1n) throw new Error('below needs k >= 1');
      const max = (1n << 64n) - 1n;
      const zone = max - (max % bound);
      for (;;) {
        const bytes = draw();
        const dv = new DataView(bytes.buffer, bytes.byteOffset, 32);
        for (let i = 0; i < 4; i++) {
          const v = dv.getBigUint64(i * 8, true);
          if (v < zone) return Number(v % bound);
        }
      }
    },
  };
}
