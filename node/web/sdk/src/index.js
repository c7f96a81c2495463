// index.js: the SDK's public surface (re-exports only). See README.md for every call.
export { Chain, txidOf } from './chain.js';
export { ChainError } from './errors.js';
export { Key } from './key.js';
export { verifyMessage, recoverAddress, recoverPublicKey, messageHash, MAGIC } from './message.js';
export { parseAddress, addressFromPublicKey, hash160, NETWORKS } from './address.js';
export { Rules, RulesError, encodeMove, capMemory, MAX_RULES_BYTES, MAX_RULES_MEMORY_BYTES, RULES_TIMEOUT_MS } from './rules.js';
export { Channel, ChannelError, moveMessage, finalMessage, checkpointMessage, stateHash, parseSignedMove, memoryStore, MAX_MOVES_PER_OP, MAX_MOVES_PER_GAME } from './channel.js';
export { Rps, rpsCommitment, rpsReveal, rpsChoices, RPS_CHOICES } from './rps.js';
