// index.js: the SDK's public surface (re-exports only). See README.md for every call.
export { Chain, txidOf, RATE_LIMIT_RETRIES, RATE_LIMIT_MAX_WAIT_MS, MAX_RETRY_AFTER_S } from './chain/chain.js';
export { ChainError } from './chain/errors.js';
export { Key } from './keys/key.js';
export { verifyMessage, recoverAddress, recoverPublicKey, messageHash, MAGIC } from './keys/message.js';
export { parseAddress, addressFromPublicKey, hash160, NETWORKS } from './keys/address.js';
export { Rules, RulesError, encodeMove, capMemory, MAX_RULES_BYTES, MAX_RULES_MEMORY_BYTES, RULES_TIMEOUT_MS } from './channel/rules.js';
export { Channel, ChannelError, moveMessage, finalMessage, checkpointMessage, gameTag, gameTagText, stateHash, parseSignedMove, memoryStore, checkEscrowPolicy, MIN_SAFE_TIMELOCK_MS, rulesCodeRefusal, GENESIS_OWNER, MAX_MOVES_PER_OP, MAX_MOVES_PER_GAME, MIN_WINDOW_MS, MAX_WINDOW_MS, DEFAULT_WINDOW_MS } from './channel/channel.js';
export { MoveRelay, relayHelloText, relayHelloQuery } from './channel/relay.js';
export { Backoff, transient } from './chain/backoff.js';
export { eventsOfBlock } from './chain/game_feed.js';
export { Rps, rpsCommitment, rpsReveal, rpsChoices, RPS_CHOICES, RPS_COMMIT_DOMAIN, RPS_STATE_BYTES } from './channel/rps.js';
export { Session, MAX_SESSION_MODULES, MAX_SESSION_HORIZON_MS } from './keys/session.js';
export { verifyTranscript, verifyInclusion, headerHash, headerBytes, receiptHash, scheduledReceiptHash, merkleRoot, blockReceiptRoot, canonicalJson, rawMember, MAX_VERIFY_MODULE_BYTES, MAX_VERIFY_STEPS, VERIFY_TIMEOUT_MS, DEFAULT_FUEL_APPLY } from './verify/verify.js';
export { checkStepFinality, certificateProblem, decodeFinalization, digestFromParts, finalityNamespace, finalityParticipants, MAX_FINALITY_LINKS, MAX_CERTIFICATE_BYTES } from './verify/finality.js';
export { verifyBeacon, verifyBeacons, beaconMessage, drawBytes, drawer, BEACON_NAMESPACE, BEACON_DST, BEACON_BYTES, BEACON_PUBLIC_KEY_BYTES } from './verify/beacon.js';
export { sealMove, checkSealed, openSealed, plaintextOf, SEALED_BYTES, SEAL_PLAINTEXT_BYTES, MAX_SEAL_TAG_BYTES } from './verify/seal.js';
export { verifyStateEntry, stateProofProblem, getStateProven, MAX_PROOF_DEPTH } from './verify/state_proof.js';
