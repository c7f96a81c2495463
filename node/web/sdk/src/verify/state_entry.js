// State entries read from a node and checked from the genesis alone: `GET /v1/state/<key>?proof`
// (node/API.md, "State and proofs"), its proof against its header's state root (state_proof.js)
// and its header's signer. The Rust side: runtime/chain/src/wire/state.rs and the client's
// `Client::state_proven`.
import { base64 } from '@scure/base';
import { headerHash } from './verify.js';
import { verifyMessage } from '../keys/message.js';
import { stateProofProblem } from './state_proof.js';

/**
 * Checks a `GET /v1/state/<key>?proof` answer from the genesis alone: its key is `key`, its
 * proof shows its value (or absence) against its header's state root, and its header is signed by
 * one of `signers` (the genesis sequencer's address; on a chain with validators, their
 * addresses: that block's finality is `checkStepFinality`'s). Returns {value: Uint8Array | null,
 * height, blockHash}; throws an Error naming what does not check.
 */
export function verifyStateEntry(entry, key, { signers } = {}) {
  if (!Array.isArray(signers) || signers.length === 0) throw new Error('verifyStateEntry: opts.signers (the genesis block signers) is required');
  if (entry === null || typeof entry !== 'object') throw new Error('the answer is not a state entry');
  if (entry.key !== key) throw new Error(`the answer is for key \`${entry.key}\`, not \`${key}\``);
  if (entry.commitment !== 'sparse_merkle') throw new Error(`the chain's state commitment (${entry.commitment}) has no proofs`);
  if (entry.proof == null) throw new Error('the answer carries no proof');
  let value = null;
  if (entry.value !== null) {
    if (typeof entry.value !== 'string') throw new Error('the value is not base64');
    try { value = base64.decode(entry.value); } catch { throw new Error('the value is not standard base64'); }
  }
  const h = entry.header;
  const blockHash = headerHash(h);
  if (!signers.includes(h.sequencer)) throw new Error(`block ${h.height} is signed by ${h.sequencer}, not by ${signers.join(' or ')}`);
  if (!verifyMessage(h.sequencer, blockHash, entry.signature)) throw new Error(`block ${h.height}: the signature does not verify`);
  const problem = stateProofProblem(h.state_root, key, value, entry.proof);
  if (problem !== null) throw new Error(problem);
  return { value, height: h.height, blockHash };
}

/**
 * Reads `key` from `chain` (a Chain) with its proof and checks it with `verifyStateEntry`
 * against `signers`: what a light client trusts is the genesis (its block signers), not the node.
 */
export async function getStateProven(chain, key, { signers } = {}) {
  return verifyStateEntry(await chain.state(key, { proof: true }), key, { signers });
}
