// State entries read from a node and checked from the genesis alone: `GET /v1/state/<key>?proof`
// (node/API.md, "State and proofs"), its proof against its header's state root (state_proof.js)
// and its header's signer. The Rust side: runtime/chain/src/wire/state.rs and the client's
// `Client::state_proven`.
import { base64 } from '@scure/base';
import { headerHash } from './verify.js';
import { verifyMessage } from '../keys/message.js';
import { stateProofProblem } from './state_proof.js';
import { checkStepFinality, finalityNamespace, finalityParticipants } from './finality.js';

/**
 * Checks a `GET /v1/state/<key>?proof` answer from the genesis alone: its key is `key`, its
 * proof shows its value (or absence) against its header's state root, and its header is signed by
 * one of `signers` (the genesis sequencer's address; on a chain with validators, their
 * addresses, the default with `finality`). With `finality` (`{validators, chainId, genesisHash}`
 * of the genesis, and optionally `record`), the block must also be proven final by a quorum of
 * the genesis validators through the answer's `finality` record (`checkStepFinality`). Returns
 * {value: Uint8Array | null, height, blockHash, final?: true}; throws an Error naming what does
 * not check.
 */
export function verifyStateEntry(entry, key, { signers, finality } = {}) {
  const set = finality === undefined || finality === null ? null : finalitySet(finality);
  if (signers === undefined && set !== null) signers = finality.validators.set.map((v) => v.address);
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
  if (set === null) return { value, height: h.height, blockHash };
  checkFinal(set, h, entry.signature, blockHash, finality.record ?? entry.finality);
  return { value, height: h.height, blockHash, final: true };
}

/**
 * The finality set of `{validators, chainId, genesisHash}` (the genesis's `validators`, chain id
 * and hash: the certificates' namespace), as `checkStepFinality` takes it.
 */
export function finalitySet(finality) {
  const set = finality.validators?.set;
  if (!Array.isArray(set) || set.length === 0) throw new Error('opts.finality.validators (the genesis `validators`) is required');
  if (typeof finality.chainId !== 'string' || typeof finality.genesisHash !== 'string') throw new Error('opts.finality.chainId and opts.finality.genesisHash (the genesis\'s) are required');
  return { participants: finalityParticipants(set.map((v) => v?.consensus_key)), namespace: finalityNamespace(finality.chainId, finality.genesisHash) };
}

/** Throws unless `record` (a transcript step's finality record) proves header `h` final under `set`. */
export function checkFinal(set, h, signature, blockHash, record) {
  if (record === null || record === undefined || typeof record !== 'object') throw new Error(`block ${h.height} carries no finality record: it is not proven final (the node holds no certificate yet: ask again)`);
  const r = checkStepFinality(set, { header: { header: h, signature }, finality: record, tx_count: record.tx_count }, blockHash);
  if (r.problem !== undefined) throw new Error(`block ${h.height} is not proven final: ${r.problem}`);
}

/**
 * Reads `key` from `chain` (a Chain) with its proof and checks it with `verifyStateEntry`
 * against `signers` (and with `finality`, the genesis validator set): what a light client trusts
 * is the genesis, not the node.
 */
export async function getStateProven(chain, key, { signers, finality } = {}) {
  return verifyStateEntry(await chain.state(key, { proof: true }), key, { signers, finality });
}
