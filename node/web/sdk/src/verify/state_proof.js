// State proofs: one key's value, or its absence, checked against a block's sparse Merkle state
// root (the Rust side: runtime/chain/src/state_root/sparse_merkle.rs and proof.rs; the answer is
// `GET /v1/state/<key>?proof`, node/API.md "State and proofs").
//
// The tree: a leaf per entry, k = SHA-256(key UTF-8), v = SHA-256(value); k's bits, most
// significant bit of byte 0 first, are its path (0 left, 1 right). A leaf hashes to
// SHA-256(0x00 ‖ k ‖ v), a branch to SHA-256(0x01 ‖ left ‖ right), an empty subtree is 32 zero
// bytes; a subtree of one leaf is that leaf. A proof lists the sibling hashes on k's path from
// the root down and the leaf where the path ends (null: an empty subtree). For a present key that
// leaf is (k, SHA-256(value)); for an absent key it is empty or another key's leaf whose path
// shares the first `siblings.length` bits. Folding the siblings up from the deepest must give
// the root.
import { sha256 } from '@noble/hashes/sha2.js';
import { hexToBytes } from '@noble/hashes/utils.js';

/** Most siblings a proof may carry: one per bit of a path. */
export const MAX_PROOF_DEPTH = 256;

const utf8 = new TextEncoder();
const EMPTY = new Uint8Array(32);

function hash3(tag, a, b) {
  const buf = new Uint8Array(65);
  buf[0] = tag; buf.set(a, 1); buf.set(b, 33);
  return sha256(buf);
}
function bit(path, depth) { return (path[depth >> 3] >> (7 - (depth & 7))) & 1; }
function equal(a, b) { return a.length === b.length && a.every((x, i) => x === b[i]); }
function hex32(s, what) {
  if (typeof s !== 'string' || !/^[0-9a-f]{64}$/.test(s)) throw new Error(`${what} is not 64 lowercase hex characters`);
  return hexToBytes(s);
}

/**
 * Checks that `key` holds `value` (a Uint8Array; null: absent) in the state whose root is
 * `stateRoot` (64 hex), by `proof` ({siblings: [hex…], leaf: null | {key_hash, value_hash}}).
 * Returns null when it does, else the fixed text of what does not check (the Rust texts).
 */
export function stateProofProblem(stateRoot, key, value, proof) {
  let root, siblings, leaf;
  try {
    root = hex32(stateRoot, 'the state root');
    if (proof === null || typeof proof !== 'object' || !Array.isArray(proof.siblings)) return 'the proof is not {siblings, leaf}';
    if (proof.siblings.length > MAX_PROOF_DEPTH) return 'the proof has more than 256 siblings';
    siblings = proof.siblings.map((s, i) => hex32(s, `sibling ${i}`));
    leaf = proof.leaf == null ? null : { k: hex32(proof.leaf.key_hash, 'the leaf key hash'), v: hex32(proof.leaf.value_hash, 'the leaf value hash') };
  } catch (e) {
    return e.message;
  }
  const k = sha256(utf8.encode(key));
  let h;
  if (value !== null && value !== undefined) {
    if (leaf === null || !equal(leaf.k, k)) return 'the proof shows the key absent';
    if (!equal(leaf.v, sha256(value))) return 'the proof shows the key with another value';
    h = hash3(0, leaf.k, leaf.v);
  } else if (leaf !== null) {
    if (equal(leaf.k, k)) return 'the proof shows the key present';
    for (let d = 0; d < siblings.length; d++) if (bit(leaf.k, d) !== bit(k, d)) return "the proof's leaf is not on the key's path";
    h = hash3(0, leaf.k, leaf.v);
  } else {
    h = EMPTY;
  }
  for (let d = siblings.length - 1; d >= 0; d--) {
    h = bit(k, d) ? hash3(1, siblings[d], h) : hash3(1, h, siblings[d]);
  }
  return equal(h, root) ? null : 'the proof does not lead to the state root';
}
