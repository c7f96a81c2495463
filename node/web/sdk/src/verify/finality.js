// Finality of a transcript's steps on a chain with validators, checked from the genesis
// validator set alone (the Rust side: node/src/proof/step_finality.rs, finality.rs, digest.rs).
//
// A step's `finality` record ({parent_digest, tx_count, signatures_hash, links, certificate})
// gives the block's consensus digest,
//   SHA-256("gamechain/proposal/v1" ‖ parent_digest ‖ header hash ‖ u32 LE length ‖ header
//   signature text ‖ u32 LE tx_count ‖ signatures_hash),
// the header being the step's own; each link (a descendant: header_hash, header_signature,
// tx_count, signatures_hash) the next digest from the one before; `certificate` must be a
// quorum's finalization of the last digest.
//
// The certificate is Commonware simplex's encoded ed25519 `Finalization`: the proposal (epoch,
// view and parent view as LEB128 varints, then the 32-byte payload = the digest), the signers
// bitmap (u64 big-endian bit count = the set's size, then ceil(n/8) bytes, bit i = byte i/8's
// bit i%8) and the signatures (a varint count, then 64 bytes each, by ascending signer index).
// Each signature is the validator's ed25519 signature (ZIP-215 rules, as Commonware verifies
// them) of varint(len(ns)) ‖ ns ‖ proposal bytes, where ns = "gamechain/<chain id>/<genesis
// hash>_FINALIZE". Signer i is the i-th consensus key of the genesis set sorted by its bytes;
// at least n - floor((n-1)/3) must sign.
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { ed25519 } from '@noble/curves/ed25519.js';

/** Most descendants a step's finality record may chain through (the node's bound). */
export const MAX_FINALITY_LINKS = 64;
/** Largest certificate checked, in bytes. */
export const MAX_CERTIFICATE_BYTES = 16 * 1024;
/** Largest header signature text a link may carry. */
export const MAX_LINK_SIGNATURE_CHARS = 512;

const utf8 = new TextEncoder();
const DIGEST_DOMAIN = utf8.encode('gamechain/proposal/v1');

function concat(parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) { out.set(p, at); at += p.length; }
  return out;
}
function u32le(n) { const b = new Uint8Array(4); new DataView(b.buffer).setUint32(0, n, true); return b; }
function varint(n) {
  const out = [];
  do { let b = n % 128; n = Math.floor(n / 128); if (n > 0) b |= 0x80; out.push(b); } while (n > 0);
  return Uint8Array.from(out);
}
function hex32(h, what) {
  if (typeof h !== 'string' || !/^[0-9a-f]{64}$/.test(h)) throw new Error(`${what} is not 64 lowercase hex characters`);
  return hexToBytes(h);
}

/**
 * A block's consensus digest from its parts (digest.rs `digest_from_parts`).
 * @param {Uint8Array} parent the parent's digest (32 bytes)
 * @param {Uint8Array} headerHash the header's hash (32 bytes)
 * @param {string} headerSignature the header's signature text
 * @param {number} txCount the block's transaction count
 * @param {Uint8Array} signaturesHash SHA-256 of its transactions' (u32 LE length ‖ signature)
 * @returns {Uint8Array} 32 bytes
 */
export function digestFromParts(parent, headerHash, headerSignature, txCount, signaturesHash) {
  const sig = utf8.encode(headerSignature);
  return sha256(concat([DIGEST_DOMAIN, parent, headerHash, u32le(sig.length), sig, u32le(txCount), signaturesHash]));
}

/** The chain's consensus namespace, `gamechain/<chain id>/<genesis hash>`, as bytes. */
export function finalityNamespace(chainId, genesisHash) {
  return utf8.encode(`gamechain/${chainId}/${genesisHash}`);
}

/**
 * The genesis set's consensus keys in signer order (sorted by their bytes). Throws on a key
 * that is not 64 hex characters, or one listed twice.
 * @param {string[]} consensusKeys hex (`genesis.validators.set[i].consensus_key`)
 * @returns {Uint8Array[]}
 */
export function finalityParticipants(consensusKeys) {
  if (!Array.isArray(consensusKeys) || consensusKeys.length === 0) throw new Error('no validator consensus keys');
  const keys = consensusKeys.map((k, i) => hex32(typeof k === 'string' ? k.toLowerCase() : k, `consensus key ${i}`));
  const hexes = keys.map(bytesToHex);
  const sorted = [...hexes].sort();
  for (let i = 1; i < sorted.length; i++) if (sorted[i] === sorted[i - 1]) throw new Error('a consensus key is listed twice');
  return sorted.map(hexToBytes);
}

/** Reads a canonical LEB128 varint (at most a safe integer) at `r.at`. */
function readVarint(b, r) {
  let value = 0;
  let scale = 1;
  for (let i = 0; i < 8; i++) {
    if (r.at >= b.length) throw new Error('the certificate ends inside a number');
    const byte = b[r.at++];
    value += (byte & 0x7f) * scale;
    if (!Number.isSafeInteger(value)) throw new Error('a number over 2^53');
    if ((byte & 0x80) === 0) {
      if (byte === 0 && i > 0) throw new Error('a number encoded with extra bytes');
      return value;
    }
    scale *= 128;
  }
  throw new Error('a number over 2^53');
}

/**
 * Decodes an encoded ed25519 finalization for a set of `n` validators.
 * @returns {{view: number, payload: Uint8Array, proposal: Uint8Array, signers: number[], signatures: Uint8Array[]}}
 */
export function decodeFinalization(bytes, n) {
  const r = { at: 0 };
  readVarint(bytes, r); // epoch
  const view = readVarint(bytes, r);
  readVarint(bytes, r); // parent view
  if (bytes.length < r.at + 32) throw new Error('the certificate ends inside its payload');
  const payload = bytes.subarray(r.at, r.at + 32);
  r.at += 32;
  const proposal = bytes.subarray(0, r.at);
  if (bytes.length < r.at + 8) throw new Error('the certificate ends inside its signers');
  const bits = new DataView(bytes.buffer, bytes.byteOffset + r.at, 8).getBigUint64(0, false);
  r.at += 8;
  if (bits !== BigInt(n)) throw new Error(`a signer bitmap of ${bits} validators, the set has ${n}`);
  const mapBytes = Math.ceil(n / 8);
  if (bytes.length < r.at + mapBytes) throw new Error('the certificate ends inside its signers');
  const map = bytes.subarray(r.at, r.at + mapBytes);
  r.at += mapBytes;
  const signers = [];
  for (let i = 0; i < mapBytes * 8; i++) {
    if ((map[i >> 3] >> (i & 7)) & 1) {
      if (i >= n) throw new Error('a signer bit past the set');
      signers.push(i);
    }
  }
  const count = readVarint(bytes, r);
  if (count !== signers.length || count > n) throw new Error(`${count} signatures for ${signers.length} signers`);
  if (bytes.length !== r.at + 64 * count) throw new Error('the certificate is not its signatures\' length');
  const signatures = [];
  for (let i = 0; i < count; i++) signatures.push(bytes.subarray(r.at + 64 * i, r.at + 64 * (i + 1)));
  return { view, payload, proposal, signers, signatures };
}

/**
 * Null when `certificate` is a finalization of `digest` by a quorum of `participants` under
 * `namespace`; else why not (a fixed text).
 * @param {Uint8Array[]} participants {@link finalityParticipants}
 * @param {Uint8Array} namespace {@link finalityNamespace}
 * @param {Uint8Array} digest 32 bytes
 * @param {Uint8Array} certificate
 * @returns {string|null}
 */
export function certificateProblem(participants, namespace, digest, certificate) {
  if (certificate.length > MAX_CERTIFICATE_BYTES) return `a certificate of ${certificate.length} bytes (the limit is ${MAX_CERTIFICATE_BYTES})`;
  const n = participants.length;
  let f;
  try { f = decodeFinalization(certificate, n); } catch (e) { return `not a finality certificate: ${e.message}`; }
  if (bytesToHex(f.payload) !== bytesToHex(digest)) return `the certificate finalizes digest ${bytesToHex(f.payload)}, the block's is ${bytesToHex(digest)}`;
  const quorum = n - Math.floor((n - 1) / 3);
  if (f.signers.length < quorum) return `the certificate's signatures are not a quorum of the validator set (${f.signers.length} of ${n}, ${quorum} needed)`;
  const ns = concat([namespace, utf8.encode('_FINALIZE')]);
  const message = concat([varint(ns.length), ns, f.proposal]);
  for (let i = 0; i < f.signers.length; i++) {
    let ok = false;
    try { ok = ed25519.verify(f.signatures[i], message, participants[f.signers[i]], { zip215: true }); } catch { ok = false; }
    if (!ok) return "the certificate's signatures are not a quorum of the validator set";
  }
  return null;
}

/**
 * Checks a step's finality record against the genesis set (step_finality.rs
 * `check_step_finality`).
 * @param {{participants: Uint8Array[], namespace: Uint8Array}} set
 * @param {object} step the transcript's step (its `header` and `finality`)
 * @param {string} headerHash the step's header hash, hex
 * @returns {{certified: number}|{problem: string}} the height whose certificate finalized it,
 *   or why the record does not prove the block final
 */
export function checkStepFinality(set, step, headerHash) {
  const f = step.finality;
  try {
    if (!f || typeof f !== 'object') return { problem: 'no finality record' };
    if (!Number.isSafeInteger(f.tx_count) || f.tx_count < 0 || f.tx_count > 0xffffffff) return { problem: 'tx_count is not a u32' };
    const isCall = step.call !== undefined && step.call !== null;
    if (!isCall && f.tx_count !== step.tx_count) return { problem: `the finality record counts ${f.tx_count} transactions in the block, the step's tx_count is ${step.tx_count}` };
    const links = f.links ?? [];
    if (!Array.isArray(links) || links.length > MAX_FINALITY_LINKS) return { problem: `more than ${MAX_FINALITY_LINKS} links to a certificate` };
    if (typeof f.certificate !== 'string' || f.certificate.length > 2 * MAX_CERTIFICATE_BYTES || !/^([0-9a-f]{2})*$/.test(f.certificate)) return { problem: 'the certificate is not hex (at most 16 KiB)' };
    let digest = digestFromParts(hex32(f.parent_digest, 'parent_digest'), hex32(headerHash, 'header hash'), step.header.signature, f.tx_count, hex32(f.signatures_hash, 'signatures_hash'));
    for (let k = 0; k < links.length; k++) {
      const l = links[k];
      if (typeof l?.header_signature !== 'string' || l.header_signature.length > MAX_LINK_SIGNATURE_CHARS) return { problem: `link ${k}: a header signature that is not a text of at most ${MAX_LINK_SIGNATURE_CHARS} characters` };
      if (!Number.isSafeInteger(l.tx_count) || l.tx_count < 0 || l.tx_count > 0xffffffff) return { problem: `link ${k}: tx_count is not a u32` };
      digest = digestFromParts(digest, hex32(l.header_hash, `link ${k}: header_hash`), l.header_signature, l.tx_count, hex32(l.signatures_hash, `link ${k}: signatures_hash`));
    }
    const certified = step.header.header.height + links.length;
    const problem = certificateProblem(set.participants, set.namespace, digest, hexToBytes(f.certificate));
    return problem === null ? { certified } : { problem: `block ${certified}'s certificate: ${problem}` };
  } catch (e) {
    return { problem: e.message };
  }
}
